//! `GPU_MPI_STACK_BYTES`: the emulator's stack size from the environment,
//! for programs that open it with `Device::open`, which takes no
//! `CpuOptions`. A test binary of its own: it sets the variable, which
//! every other test of a shared binary would see.

use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BackendKind, Device, HostError, KernelImages, WorldSpec};

/// A rank's stack frame of 96 KiB: beyond the default 64 KiB stack.
const FRAME: usize = 96 * 1024;

gpu_mpi_device::kernel! {
    /// Every rank fills a 96 KiB table on its stack and writes its rank's
    /// entry of it.
    pub static BIG_FRAME = fn big_frame(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        let mut table = [0u8; FRAME];
        for (i, t) in table.iter_mut().enumerate() {
            *t = (i % 251) as u8;
        }
        let table = core::hint::black_box(&table);
        let r = world.rank() as usize;
        out.write(r, u32::from(table[r * 997 % FRAME]))
    }
}

#[test]
fn the_stack_size_comes_from_the_environment_when_opened_with_defaults() {
    let images = KernelImages::from_parts((&[], &[], "", Some("the emulator needs no images")));
    // SAFETY: the only test of this binary; nothing else reads the
    // environment while it is set.
    unsafe { std::env::set_var("GPU_MPI_STACK_BYTES", "256K") };
    let device = Device::open(BackendKind::Cpu, &images).unwrap();
    assert_eq!(device.as_cpu().unwrap().options().stack_bytes, 256 * 1024);
    let out = device.alloc_zeroed::<u32>(8).unwrap();
    device
        .launch(&BIG_FRAME, &out.slice(), &WorldSpec::ranks(8))
        .unwrap();
    let want: Vec<u32> = (0..8).map(|r| (r * 997 % FRAME % 251) as u32).collect();
    assert_eq!(device.download(&out).unwrap(), want);

    // SAFETY: as above.
    unsafe { std::env::set_var("GPU_MPI_STACK_BYTES", "1K") };
    match Device::open(BackendKind::Cpu, &images) {
        Err(HostError::Environment(e)) => {
            assert_eq!((e.variable, e.value.as_str()), ("GPU_MPI_STACK_BYTES", "1K"));
        }
        other => panic!("{other:?}"),
    }
}
