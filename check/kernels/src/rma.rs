//! One-sided communication (`gpu_mpi_device::window`, MPI 4.1 chapter 12):
//! kernels for check/tests/rma.rs.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::{LockType, Window};
use gpu_mpi_device::{Error, GlobalSlice, World};

/// The arguments of the one-sided kernels: what each rank saw.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RmaArgs {
    /// Per rank: what it records (`slots` words each).
    pub out: GlobalSlice<u32>,
    /// Words each rank records.
    pub slots: u32,
    /// A parameter of the kernel.
    pub param: u32,
}

gpu_mpi_device::kernel! {
    /// Every rank puts its rank into the next rank's allocated window
    /// between two fences, reads it back, and records it.
    pub static RMA_RING_PUT = fn rma_ring_put(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let win = Window::<u32>::allocate(world, 1)?;
        let next = (world.rank() + 1) % world.size();
        win.fence()?;
        win.put(&[world.rank() as u32 + 100], next, 0)?;
        win.fence()?;
        let mut mine = [0u32];
        win.get(&mut mine, world.rank(), 0)?;
        win.free()?;
        args.out.write(world.rank() as usize * args.slots as usize, mine[0])
    }
}

gpu_mpi_device::kernel! {
    /// Every rank adds one to a counter of rank 0's window, `param` times,
    /// with `fetch_and_op` under a shared lock of rank 0; after a barrier
    /// rank 0 records the counter and each rank the largest value it
    /// fetched.
    pub static RMA_COUNTER = fn rma_counter(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let win = Window::<u64>::allocate(world, 1)?;
        win.fence()?;
        win.fence_with(gpu_mpi_device::window::Mode::NO_SUCCEED)?;
        let mut last = 0u64;
        win.lock(LockType::Shared, 0)?;
        for _ in 0..args.param {
            let mut old = 0u64;
            win.fetch_and_op(&1, &mut old, 0, 0, SystemOperation::sum())?;
            last = last.max(old);
        }
        win.unlock(0)?;
        world.barrier()?;
        let base = world.rank() as usize * args.slots as usize;
        if world.rank() == 0 {
            win.lock(LockType::Exclusive, 0)?;
            let mut total = [0u64];
            win.get(&mut total, 0, 0)?;
            win.unlock(0)?;
            args.out.write(base + 1, total[0] as u32)?;
        }
        win.free()?;
        args.out.write(base, last as u32)
    }
}
