//! The benchmarks' kernels that send and receive views of derived
//! datatypes ([`DDT_P2P`]): a crate of their own because they need the
//! device crate's `views` feature, which raises the registers of every
//! kernel that can reach the engine's sends and receives (device/Cargo.toml);
//! `gpu-mpi-bench` embeds its PTX as a second image
//! (`gpu_mpi::include_kernels!("views")`), so the other benchmark kernels
//! keep theirs.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::derived;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, MutView, TypeRef, View, World};

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
    /// return at once).
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
