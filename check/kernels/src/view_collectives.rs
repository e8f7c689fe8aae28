//! Collectives with derived datatypes (views) on either side: all-gather
//! (fixed, in place, varcount, varcount in place), gather and scatter
//! (fixed and varcount, in place at the root), all-to-all (fixed, in place,
//! varcount, varcount in place), on the world or on a duplicate of it, a
//! view, a plain `[u32]` or (one rank) a `[f32]` on each side. Rank `r`
//! runs the collective from its region of `src` into its region of `dst`
//! and records the class; check/tests/view_collectives.rs computes every
//! rank's buffer by the host's reference model.

use super::{prefix, prefix_mut};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Partition, PartitionMut};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Buffer, BufferMut, Error, GlobalSlice, MutView, TypeRef, View, World};

/// `all_gather_into`.
pub const ALL_GATHER: u32 = 0;
/// `all_gather_in_place`.
pub const ALL_GATHER_IN_PLACE: u32 = 1;
/// `all_gather_varcount_into`.
pub const ALL_GATHER_VARCOUNT: u32 = 2;
/// `gather_varcount_into` (the root: `gather_varcount_into_root`).
pub const GATHER_VARCOUNT: u32 = 3;
/// `scatter_varcount_into` (the root: `scatter_varcount_into_root`).
pub const SCATTER_VARCOUNT: u32 = 4;
/// `all_to_all_into`.
pub const ALL_TO_ALL: u32 = 5;
/// `all_to_all_in_place`.
pub const ALL_TO_ALL_IN_PLACE: u32 = 6;
/// `all_to_all_varcount_into`.
pub const ALL_TO_ALL_VARCOUNT: u32 = 7;
/// `gather_into` (the root: `gather_into_root`).
pub const GATHER: u32 = 8;
/// `scatter_into` (the root: `scatter_into_root`).
pub const SCATTER: u32 = 9;
/// `gather_varcount_into` (the root: `gather_varcount_into_root_in_place`).
pub const GATHER_VARCOUNT_IN_PLACE: u32 = 10;
/// `scatter_varcount_into` (the root: `scatter_varcount_into_root_in_place`).
pub const SCATTER_VARCOUNT_IN_PLACE: u32 = 11;
/// Every rank calls the root's in-place scatterv.
pub const SCATTER_VARCOUNT_IN_PLACE_EVERYWHERE: u32 = 12;
/// `all_gather_varcount_in_place`.
pub const ALL_GATHER_VARCOUNT_IN_PLACE: u32 = 13;
/// `all_to_all_varcount_in_place`.
pub const ALL_TO_ALL_VARCOUNT_IN_PLACE: u32 = 14;

/// Bytes of each rank's send and receive region.
pub const REGION: usize = 8192;

#[repr(C)]
/// The arguments of [`SEMANTICS_VIEW_COLLECTIVES`].
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CollArgs {
    /// The send type's encoding.
    pub send_ty: GlobalSlice<u64>,
    /// The receive type's encoding.
    pub recv_ty: GlobalSlice<u64>,
    /// `size` regions of `REGION` bytes: rank r's send buffer.
    pub src: GlobalSlice<u8>,
    /// `size` regions: rank r's receive buffer.
    pub dst: GlobalSlice<u8>,
    /// Per rank: the count of its send (instances of a view, `u32`s of a
    /// plain slice).
    pub scount: GlobalSlice<u32>,
    /// Per rank: the count of its receive.
    pub rcount: GlobalSlice<u32>,
    /// `size x size`, row r for rank r: partitions (in elements): the
    /// send counts.
    pub scounts: GlobalSlice<i32>,
    /// The send displacements, as `scounts`.
    pub sdispls: GlobalSlice<i32>,
    /// The receive counts, as `scounts`.
    pub rcounts: GlobalSlice<i32>,
    /// The receive displacements, as `scounts`.
    pub rdispls: GlobalSlice<i32>,
    /// Per rank: the collective's error class (0: success).
    pub out: GlobalSlice<u32>,
    /// The collective (the constants above).
    pub op: u32,
    /// The root of a rooted collective.
    pub root: u32,
    /// 1: the send side is a view of `send_ty`, 0: a `[u32]`.
    pub send_view: u32,
    /// 1: the receive side is a view of `recv_ty`, 0: a `[u32]`.
    pub recv_view: u32,
    /// The rank that receives into a `[f32]` instead (`u32::MAX`: none).
    pub bad: u32,
    /// 1: run on a duplicate of the world (a sub-communicator), 0: on the
    /// world.
    pub dup: u32,
    /// Zero (alignment).
    pub _pad: [u32; 2],
}

/// Rank `r` calls `args.op` on `world` from `send` into `recv`.
fn run<C: Communicator + CommunicatorCollectives, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
    world: &C,
    args: &CollArgs,
    send: &S,
    recv: &mut R,
) -> Result<(), Error> {
    let n = world.size() as usize;
    let r = world.rank() as usize;
    // SAFETY: the host writes none of these during the launch.
    let row = |s: &GlobalSlice<i32>| unsafe { s.slice(r * n, n) };
    let (sc, sd, rc, rd) = (
        row(&args.scounts)?,
        row(&args.sdispls)?,
        row(&args.rcounts)?,
        row(&args.rdispls)?,
    );
    let root = world.process_at_rank(args.root as i32);
    let at_root = args.root as usize == r;
    match args.op {
        ALL_GATHER => world.all_gather_into(send, recv),
        ALL_GATHER_IN_PLACE => world.all_gather_in_place(recv),
        ALL_GATHER_VARCOUNT => world.all_gather_varcount_into(send, &mut PartitionMut::new(recv, rc, rd)),
        ALL_GATHER_VARCOUNT_IN_PLACE => {
            world.all_gather_varcount_in_place(&mut PartitionMut::new(recv, rc, rd))
        }
        GATHER_VARCOUNT if at_root => {
            root.gather_varcount_into_root(send, &mut PartitionMut::new(recv, rc, rd))
        }
        GATHER_VARCOUNT => root.gather_varcount_into(send),
        SCATTER_VARCOUNT if at_root => root.scatter_varcount_into_root(&Partition::new(send, sc, sd), recv),
        SCATTER_VARCOUNT => root.scatter_varcount_into(recv),
        GATHER_VARCOUNT_IN_PLACE if at_root => {
            root.gather_varcount_into_root_in_place(&mut PartitionMut::new(recv, rc, rd))
        }
        GATHER_VARCOUNT_IN_PLACE => root.gather_varcount_into(send),
        SCATTER_VARCOUNT_IN_PLACE if at_root => {
            root.scatter_varcount_into_root_in_place(&Partition::new(send, sc, sd))
        }
        SCATTER_VARCOUNT_IN_PLACE => root.scatter_varcount_into(recv),
        SCATTER_VARCOUNT_IN_PLACE_EVERYWHERE => {
            root.scatter_varcount_into_root_in_place(&Partition::new(send, sc, sd))
        }
        ALL_TO_ALL => world.all_to_all_into(send, recv),
        ALL_TO_ALL_IN_PLACE => world.all_to_all_in_place(recv),
        ALL_TO_ALL_VARCOUNT => world.all_to_all_varcount_into(
            &Partition::new(send, sc, sd),
            &mut PartitionMut::new(recv, rc, rd),
        ),
        ALL_TO_ALL_VARCOUNT_IN_PLACE => {
            world.all_to_all_varcount_in_place(&mut PartitionMut::new(recv, rc, rd))
        }
        GATHER if at_root => root.gather_into_root(send, recv),
        GATHER => root.gather_into(send),
        SCATTER if at_root => root.scatter_into_root(send, recv),
        SCATTER => root.scatter_into(recv),
        _ => Err(Error::OutOfBounds {
            index: args.op,
            len: ALL_TO_ALL_VARCOUNT_IN_PLACE + 1,
        }),
    }
}

/// [`run`] with rank `r`'s receive side: a view, `u32`s, or (rank
/// `args.bad`) `f32`s.
fn with_recv<C: Communicator + CommunicatorCollectives, S: Buffer + ?Sized>(
    world: &C,
    args: &CollArgs,
    send: &S,
    dst: &mut [u8],
    rty: &TypeRef<'_>,
) -> Result<(), Error> {
    let r = world.rank() as usize;
    let count = args.rcount.read(r)? as usize;
    if args.bad as usize == r {
        let f: &mut [f32] = bytemuck::cast_slice_mut(dst);
        return run(world, args, send, prefix_mut(f, count)?);
    }
    if args.recv_view == 1 {
        let mut v = MutView::with_count_and_datatype(dst, count, rty)?;
        run(world, args, send, &mut v)
    } else {
        let u: &mut [u32] = bytemuck::cast_slice_mut(dst);
        run(world, args, send, prefix_mut(u, count)?)
    }
}

gpu_mpi_device::kernel! {
    /// Rank r runs `args.op` from its send region into its receive region
    /// and records the class.
    pub static SEMANTICS_VIEW_COLLECTIVES = fn semantics_view_collectives(world: &World, args: &CollArgs) -> Result<(), Error> {
        let r = world.rank() as usize;
        // SAFETY: the host writes no encoding during the launch.
        let sty = unsafe { TypeRef::from_global(&args.send_ty)? };
        // SAFETY: as above.
        let rty = unsafe { TypeRef::from_global(&args.recv_ty)? };
        // SAFETY: rank r alone touches its regions.
        let src = unsafe { args.src.slice(r * REGION, REGION)? };
        // SAFETY: as above.
        let dst = unsafe { args.dst.slice_mut(r * REGION, REGION)? };
        let count = args.scount.read(r)? as usize;
        let result = if args.dup == 1 {
            let dup = world.duplicate()?;
            if args.send_view == 1 {
                let v = View::with_count_and_datatype(src, count, &sty)?;
                with_recv(&dup, args, &v, dst, &rty)
            } else {
                let u: &[u32] = bytemuck::cast_slice(src);
                with_recv(&dup, args, prefix(u, count)?, dst, &rty)
            }
        } else if args.send_view == 1 {
            let v = View::with_count_and_datatype(src, count, &sty)?;
            with_recv(world, args, &v, dst, &rty)
        } else {
            let u: &[u32] = bytemuck::cast_slice(src);
            with_recv(world, args, prefix(u, count)?, dst, &rty)
        };
        args.out.write(r, result.err().map_or(0, |e| e.class() as u32))
    }
}
