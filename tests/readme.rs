//! The README's kernel example, compiled and run on the emulator.

use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

gpu_mpi_device::kernel! {
    /// The README's example.
    pub static SUM_OF_RANKS = fn sum_of_ranks(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let mine = world.rank() as u64;
        let mut total = 0u64;
        world.all_reduce_into(&mine, &mut total, SystemOperation::sum())?;
        if world.rank() == 0 { out.write(0, total)?; }
        Ok(())
    }
}

#[test]
fn readme_example_sums_ranks_on_the_cpu_backend() -> Result<(), Box<dyn std::error::Error>> {
    let device = gpu_mpi::Device::cpu();
    let out = device.alloc_zeroed::<u64>(1)?;
    device.launch(&SUM_OF_RANKS, &out.slice(), &gpu_mpi::WorldSpec::ranks(4096))?;
    assert_eq!(device.download(&out)?[0], 4096 * 4095 / 2);
    Ok(())
}
