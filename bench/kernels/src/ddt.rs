//! The `ddt` suite's kernels: the whole-GPU pack engine's entry point
//! ([`gpu_mpi_device::pack_kernels!`]) and a copy of 16 bytes per rank and
//! step, the baseline beside [`crate::native::NATIVE_COPY`]. The two-rank
//! send/receive of a derived type is in `gpu-mpi-bench-views-kernels`
//! (its typed views need the device crate's `views` feature).

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::intrinsics;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

gpu_mpi_device::pack_kernels!();

/// Bytes each rank copies per step of [`ddt_copy16`].
pub const COPY_CHUNK: usize = 16;

/// Arguments of [`ddt_copy16`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Copy16Args {
    /// Source bytes.
    pub src: GlobalSlice<u8>,
    /// Destination bytes (at least as many).
    pub dst: GlobalSlice<u8>,
}

gpu_mpi_device::kernel! {
    /// A grid-stride copy of 16-byte chunks: rank `r` of `n` copies chunks
    /// `r, r + n, ...` (the pack engine's access pattern on a contiguous type).
    pub static DDT_COPY16 = fn ddt_copy16(world: &World, args: &Copy16Args) -> Result<(), Error> {
        let n = args.src.len().min(args.dst.len());
        let step = world.size() as usize * COPY_CHUNK;
        let mut at = world.rank() as usize * COPY_CHUNK;
        while at < n {
            let len = COPY_CHUNK.min(n - at);
            // SAFETY: the source is not written during the launch and each
            // rank writes only its own chunks of the destination.
            let (s, d) = unsafe { (args.src.slice(at, len)?, args.dst.slice_mut(at, len)?) };
            // SAFETY: both are `len` bytes long, valid, in different buffers.
            unsafe { intrinsics::copy_bytes(d.as_mut_ptr(), s.as_ptr(), len) };
            at += step;
        }
        Ok(())
    }
}
