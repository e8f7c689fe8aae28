//! My kernels: plain Rust functions in message-passing style, one rank per
//! GPU thread. This crate is compiled twice: for nvptx64 by the host's
//! build.rs (no nightly attribute needed here: the builder passes it), and
//! for the host as an ordinary crate, which the CPU emulator runs.
#![no_std]

use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

gpu_mpi_device::kernel! {
    /// Every rank adds its rank number into an all-reduce; rank 0 writes the
    /// sum, `size * (size - 1) / 2`.
    pub static SUM_OF_RANKS = fn sum_of_ranks(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let mine = world.rank() as u64;
        let mut total = 0u64;
        world.all_reduce_into(&mine, &mut total, SystemOperation::sum())?;
        if world.rank() == 0 {
            out.write(0, total)?;
        }
        Ok(())
    }
}
