//! The ring example's kernel: a token goes around every rank.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Arguments of [`ring`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RingArgs {
    /// Times the token goes around.
    pub laps: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Rank 0 writes the final token here (one element).
    pub result: GlobalSlice<u64>,
}

gpu_mpi_device::kernel! {
    /// A token starts at rank 0 with value 0 and goes around all ranks `laps`
    /// times; each rank adds its rank. Rank 0 writes the final value:
    /// `laps * size * (size - 1) / 2`.
    pub static RING = fn ring(world: &World, args: &RingArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let right = world.process_at_rank((rank + 1) % size);
        let left = world.process_at_rank((rank + size - 1) % size);
        let mut token = 0u64;
        for lap in 0..args.laps as i32 {
            if rank == 0 {
                right.send_with_tag(&token, lap)?;
                left.receive_into_with_tag(&mut token, lap)?;
            } else {
                left.receive_into_with_tag(&mut token, lap)?;
                token += rank as u64;
                right.send_with_tag(&token, lap)?;
            }
        }
        if rank == 0 {
            args.result.write(0, token)?;
        }
        Ok(())
    }
}
