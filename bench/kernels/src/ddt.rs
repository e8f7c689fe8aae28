//! The `ddt` suite's kernels: the whole-GPU pack engine's entry point
//! ([`gpu_mpi_device::pack_kernels!`]), a copy of 16 bytes per rank and
//! step, the baseline beside [`crate::native::NATIVE_COPY`], and a two-rank
//! send/receive of a derived type, typed or packed by hand ([`DDT_P2P`]).

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::derived;
use gpu_mpi_device::shim;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, MutView, TypeRef, View, World};

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
            unsafe { shim::copy_bytes(d.as_mut_ptr(), s.as_ptr(), len) };
            at += step;
        }
        Ok(())
    }
}

/// [`TypedP2pArgs::mode`]: rank 0 sends a [`View`] of its typed buffer,
/// rank 1 receives into a [`MutView`] of its own (the engine walks the type).
pub const P2P_TYPED: u32 = 0;
/// [`TypedP2pArgs::mode`]: rank 0 packs into its staging bytes
/// ([`derived::pack_into_at`]) and sends them, rank 1 receives bytes into
/// its staging and unpacks them ([`derived::unpack_from_at`]).
pub const P2P_MANUAL: u32 = 1;

/// Arguments of [`ddt_p2p`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TypedP2pArgs {
    /// The committed type's encoding.
    pub ty: GlobalSlice<u64>,
    /// Rank 0's typed buffer (read).
    pub src: GlobalSlice<u8>,
    /// Rank 1's typed buffer (written).
    pub dst: GlobalSlice<u8>,
    /// Rank 0's staging bytes (the packed size) in [`P2P_MANUAL`].
    pub send_staging: GlobalSlice<u8>,
    /// Rank 1's staging bytes (the packed size) in [`P2P_MANUAL`].
    pub recv_staging: GlobalSlice<u8>,
    /// Instances of the type.
    pub count: u64,
    /// Index of the buffer address in `src` and `dst`.
    pub origin: u64,
    /// [`P2P_TYPED`] or [`P2P_MANUAL`].
    pub mode: u32,
    /// Messages, one after the other.
    pub reps: u32,
}

gpu_mpi_device::kernel! {
    /// Send/receive with a derived type against manual pack + send +
    /// unpack, between ranks 0 and 1 (`args.reps` messages; other ranks
    /// return at once). A typed view needs the device crate's `views`
    /// feature in the PTX; without it the view is refused (`MPI_ERR_TYPE`).
    pub static DDT_P2P = fn ddt_p2p(world: &World, args: &TypedP2pArgs) -> Result<(), Error> {
        let rank = world.rank();
        if rank > 1 {
            return Ok(());
        }
        // SAFETY: the host does not write the encoding during the launch.
        let ty = unsafe { TypeRef::from_global(&args.ty) }?;
        let (count, origin) = (args.count as usize, args.origin as usize);
        let n = derived::pack_size(count, &ty)?;
        for _ in 0..args.reps {
            if rank == 0 {
                // SAFETY: only rank 0 touches `src` and `send_staging`.
                let src = unsafe { args.src.slice(0, args.src.len()) }?;
                if args.mode == P2P_TYPED {
                    let v = View::with_origin(src, origin, count, &ty)?;
                    world.process_at_rank(1).send(&v)?;
                } else {
                    // SAFETY: as above.
                    let st = unsafe { args.send_staging.slice_mut(0, n) }?;
                    derived::pack_into_at(src, origin, count, &ty, st)?;
                    world.process_at_rank(1).send(&st[..])?;
                }
            } else {
                // SAFETY: only rank 1 touches `dst` and `recv_staging`.
                let dst = unsafe { args.dst.slice_mut(0, args.dst.len()) }?;
                if args.mode == P2P_TYPED {
                    let mut v = MutView::with_origin(dst, origin, count, &ty)?;
                    world.process_at_rank(0).receive_into(&mut v)?;
                } else {
                    // SAFETY: as above.
                    let st = unsafe { args.recv_staging.slice_mut(0, n) }?;
                    world.process_at_rank(0).receive_into(&mut st[..])?;
                    derived::unpack_from_at(st, count, &ty, dst, origin)?;
                }
            }
        }
        Ok(())
    }
}
