//! The ping-pong example's kernel: rank 0 and a peer bounce a message.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Arguments of [`ping_pong`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PingPongArgs {
    /// The rank that answers rank 0.
    pub peer: u32,
    /// Message size in bytes.
    pub bytes: u32,
    /// Round trips.
    pub iterations: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Message buffers in global memory: rank 0 uses the first `bytes`, the
    /// peer the next `bytes`.
    pub buffers: GlobalSlice<u8>,
    /// Rank 0 writes the number of round trips whose reply was right.
    pub result: GlobalSlice<u64>,
}

fn pattern(iteration: u32, i: usize) -> u8 {
    (iteration as usize)
        .wrapping_mul(31)
        .wrapping_add(i.wrapping_mul(7)) as u8
}

gpu_mpi_device::kernel! {
    /// Rank 0 sends a patterned message to `peer`, which adds 1 to every byte
    /// and sends it back; rank 0 checks the reply. Other ranks do nothing.
    pub static PING_PONG = fn ping_pong(world: &World, args: &PingPongArgs) -> Result<(), Error> {
        let bytes = args.bytes as usize;
        let rank = world.rank() as u32;
        if args.peer == 0 || args.peer as i32 >= world.size() {
            return Err(Error::InvalidRank { rank: args.peer as i32, size: world.size() });
        }
        if rank == 0 {
            // SAFETY: only rank 0 touches the first half of the buffers.
            let buf = unsafe { args.buffers.slice_mut(0, bytes)? };
            let peer = world.process_at_rank(args.peer as i32);
            let mut good = 0u64;
            for it in 0..args.iterations {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = pattern(it, i);
                }
                peer.send_with_tag(&buf[..], it as i32)?;
                let status = peer.receive_into_with_tag(&mut buf[..], it as i32)?;
                let ok = status.bytes() as usize == bytes
                    && buf.iter().enumerate().all(|(i, b)| *b == pattern(it, i).wrapping_add(1));
                good += ok as u64;
            }
            args.result.write(0, good)?;
        } else if rank == args.peer {
            // SAFETY: only the peer touches the second half of the buffers.
            let buf = unsafe { args.buffers.slice_mut(bytes, bytes)? };
            let zero = world.process_at_rank(0);
            for it in 0..args.iterations {
                zero.receive_into_with_tag(&mut buf[..], it as i32)?;
                for b in buf.iter_mut() {
                    *b = b.wrapping_add(1);
                }
                zero.send_with_tag(&buf[..], it as i32)?;
            }
        }
        Ok(())
    }
}
