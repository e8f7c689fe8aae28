//! Semantic kernels of the chapter 6 collectives beyond barrier, broadcast
//! and reduce: gather, scatter, all-gather, all-to-all (fixed, varcount,
//! in place), reduce-scatter, scans, in-place reductions, and their
//! argument errors (MPI 4.1 §6.5–§6.11).
//!
//! The buffers live in `cells` (global memory): rank `r` owns a region of
//! [`exchange_region`] (or [`prefix_region`]) words there; the host
//! downloads the regions and checks every word. The `out` records hold the
//! classes.

use super::collectives::user_operand;
use super::p2p::Mat2;
use super::{CaseArgs, Recorder};
use gpu_mpi_device::collective::{
    reduce_local_into, Operation, Partition, PartitionMut, SystemOperation, UserOperation,
};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Equivalence, Error, World};

/// What receive buffers are pre-filled with.
pub const FILL: u32 = 0xDEAD_BEEF;
/// Words each rank records in [`SEMANTICS_EXCHANGE`] and [`SEMANTICS_PREFIX`]:
/// the collective's class, a barrier's class, an all-reduce's class and its
/// sum of ones (the world still works after an error).
pub const CH6_STRIDE: u32 = 4;

/// `exchange` case: `MPI_Gather` of `param` words to root `param2`.
pub const X_GATHER: u32 = 0;
/// `exchange` case: `MPI_Gather` with `MPI_IN_PLACE` at the root.
pub const X_GATHER_IN_PLACE: u32 = 1;
/// `exchange` case: `MPI_Gatherv`: rank `q` sends [`vc`]`(q)` words, the
/// root puts them at [`displ`]`(q, k, 0)`.
pub const X_GATHERV: u32 = 2;
/// `exchange` case: `MPI_Scatter`.
pub const X_SCATTER: u32 = 3;
/// `exchange` case: `MPI_Scatter` with `MPI_IN_PLACE` at the root.
pub const X_SCATTER_IN_PLACE: u32 = 4;
/// `exchange` case: `MPI_Scatterv` (parts at [`displ`]`(q, k, 1)`).
pub const X_SCATTERV: u32 = 5;
/// `exchange` case: `MPI_Allgather`.
pub const X_ALLGATHER: u32 = 6;
/// `exchange` case: `MPI_Allgather` with `MPI_IN_PLACE`.
pub const X_ALLGATHER_IN_PLACE: u32 = 7;
/// `exchange` case: `MPI_Allgatherv`; rank `r` places part `q` at
/// [`displ`]`(q, k, r)` (displacements differ between ranks).
pub const X_ALLGATHERV: u32 = 8;
/// `exchange` case: `MPI_Alltoall`.
pub const X_ALLTOALL: u32 = 9;
/// `exchange` case: `MPI_Alltoall` with `MPI_IN_PLACE`.
pub const X_ALLTOALL_IN_PLACE: u32 = 10;
/// `exchange` case: `MPI_Alltoallv`: `s` sends [`vcc`]`(s, d)` words to
/// `d`, from [`displ`]`(d, k, 0)`, into [`displ`]`(s, k, 1)`.
pub const X_ALLTOALLV: u32 = 11;
/// `exchange` case: `MPI_Gatherv` with `MPI_IN_PLACE` at root `param2`:
/// as [`X_GATHERV`], the root's own part already at its place.
pub const X_GATHERV_IN_PLACE: u32 = 12;
/// `exchange` case: `MPI_Scatterv` with `MPI_IN_PLACE` at root `param2`:
/// as [`X_SCATTERV`], the root receiving nothing.
pub const X_SCATTERV_IN_PLACE: u32 = 13;
/// `exchange` case: `MPI_Alltoallv` with `MPI_IN_PLACE`: rank `r` swaps
/// [`vcs`]`(r, q)` words with `q`, its part for `q` at [`displ`]`(q, k, r)`.
pub const X_ALLTOALLV_IN_PLACE: u32 = 14;
/// Every data case of [`SEMANTICS_EXCHANGE`].
pub const X_CASES: [u32; 15] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];

/// Error case: the root's gather buffer is one word short (root 0).
pub const E_GATHER_SHORT_RECV: u32 = 20;
/// Error case: the last rank sends one word more to a gather (root 0).
pub const E_GATHER_COUNT: u32 = 21;
/// Error case: a gather to root `size`.
pub const E_GATHER_BAD_ROOT: u32 = 22;
/// Error case: a scatter from root -1.
pub const E_SCATTER_BAD_ROOT: u32 = 23;
/// Error case: in a gatherv to root 0 the last rank sends one word more
/// than the root's count for it.
pub const E_GATHERV_COUNTS: u32 = 24;
/// Error case: a scatterv from root 0 whose last part lies outside the
/// root's buffer (`MPI_ERR_ARG` at the root).
pub const E_SCATTERV_BOUNDS: u32 = 25;
/// Error case: an allgatherv where rank `min(1, size - 1)` passes a
/// different counts array.
pub const E_ALLGATHERV_COUNTS: u32 = 26;
/// Error case: an alltoall where the last rank's receive buffer is one word
/// longer.
pub const E_ALLTOALL_COUNT: u32 = 27;
/// Error case: an alltoallv where rank 0 expects another count from the
/// last rank than it sends.
pub const E_ALLTOALLV_COUNTS: u32 = 28;
/// Error case: a scatterv from root 0 where the last rank receives one
/// word more than the root sends it.
pub const E_SCATTERV_COUNT: u32 = 29;
/// Error case: an allgather where the last rank sends `f32` into `u32`.
pub const E_ALLGATHER_TYPE: u32 = 30;
/// Error case: a scatterv from root 0 whose last count is -1
/// (`MPI_ERR_COUNT` at the root, as at every other rank).
pub const E_SCATTERV_NEGATIVE: u32 = 31;
/// Error case: an in-place alltoallv where rank 0's count for the last
/// rank differs from the last rank's for rank 0 (on more than one rank; on
/// one, the case is [`X_ALLTOALLV_IN_PLACE`], which succeeds).
pub const E_ALLTOALLV_IN_PLACE_COUNTS: u32 = 32;
/// Error case: an alltoallv where rank 0's receive displacement for the
/// last rank is -1 (`MPI_ERR_ARG` on every rank: the last rank's push
/// finds it, rank 0 names it).
pub const E_ALLTOALLV_RECV_BOUNDS: u32 = 33;
/// Error case: an alltoallv where the last rank's send displacement for
/// rank 0 is -1 (`MPI_ERR_ARG` on every rank: its own push finds it).
pub const E_ALLTOALLV_SEND_BOUNDS: u32 = 34;
/// Error case: an in-place alltoallv where rank 0's displacement for the
/// last rank is -1 (`MPI_ERR_ARG` on every rank: rank 0 swaps that pair and
/// finds it in its own entry; on one rank it is the part that stays).
pub const E_ALLTOALLV_IN_PLACE_BOUNDS: u32 = 35;
/// Error case: an in-place alltoallv where the last rank's displacement for
/// rank 0 is -1 (`MPI_ERR_ARG` on every rank: rank 0 swaps that pair and
/// finds it in its partner's entry).
pub const E_ALLTOALLV_IN_PLACE_PARTNER_BOUNDS: u32 = 36;
/// Every error case of [`SEMANTICS_EXCHANGE`].
pub const E_CASES: [u32; 17] = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36];

/// Word `i` that rank `src` sends to rank `dst`.
pub fn xval(src: u32, dst: u32, i: u32) -> u32 {
    src.wrapping_mul(1_000_000)
        .wrapping_add(dst.wrapping_mul(1000))
        .wrapping_add(i)
        .wrapping_add(1)
}

/// The varcount count of rank `r` (0 to `k + 1`; some ranks send nothing).
pub fn vc(r: u32, k: u32) -> u32 {
    (r * 7 + 3) % (k + 2)
}

/// The all-to-all varcount count from `s` to `d` (0 to `k + 1`).
pub fn vcc(s: u32, d: u32, k: u32) -> u32 {
    (s * 3 + d * 5 + 1) % (k + 2)
}

/// The in-place all-to-allv count between `a` and `b`, the same both ways
/// (0 to `k + 1`).
pub fn vcs(a: u32, b: u32, k: u32) -> u32 {
    vcc(a.min(b), a.max(b), k)
}

/// Displacement of part `q` in a buffer of `size` parts of `k + 2` words:
/// `q (k + 2)`, plus one word when `q + salt` is odd (gaps, and
/// displacements that differ between ranks).
pub fn displ(q: u32, k: u32, salt: u32) -> u32 {
    q * (k + 2) + (q + salt) % 2
}

/// Words of one rank's region in [`SEMANTICS_EXCHANGE`]: send and receive
/// buffers of `size (k + 2)` words, then send counts, send displacements,
/// receive counts and receive displacements (`size` words each).
pub fn exchange_region(size: u32, k: u32) -> usize {
    let (n, p) = (size as usize, k as usize + 2);
    2 * n * p + 4 * n
}

/// Offset of the receive buffer in a rank's exchange region.
pub fn exchange_recv_offset(size: u32, k: u32) -> usize {
    size as usize * (k as usize + 2)
}

fn as_i32(w: &[u32]) -> &[i32] {
    bytemuck::cast_slice(w)
}

gpu_mpi_device::kernel! {
    /// Gather, scatter, all-gather and all-to-all (MPI 4.1 §6.5–§6.8): the
    /// `X_*` and `E_*` cases with `param` words per part and root `param2`.
    /// Buffers in `cells` ([`exchange_region`] words per rank; receive
    /// buffers pre-filled with [`FILL`]). Records [`CH6_STRIDE`] words.
    pub static SEMANTICS_EXCHANGE = fn semantics_exchange(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank() as u32, world.size() as u32);
        let mut rec = Recorder::new(args, rank as i32);
        let r = exchange(world, args, rank, size);
        rec.class(&r)?;
        rec.class(&world.barrier())?;
        let mut total = 0u32;
        rec.class(&world.all_reduce_into(&1u32, &mut total, SystemOperation::sum()))?;
        rec.push(total)
    }
}

fn exchange(world: &World, args: &CaseArgs, rank: u32, size: u32) -> Result<(), Error> {
    let k = args.param;
    let (n, p, ku) = (size as usize, k as usize + 2, k as usize);
    let e = exchange_region(size, k);
    // SAFETY: every rank touches only its own region of `cells`.
    let region = unsafe { args.cells.slice_mut(rank as usize * e, e)? };
    let (send, rest) = region.split_at_mut(n * p);
    let (recv, rest) = rest.split_at_mut(n * p);
    let (sc, rest) = rest.split_at_mut(n);
    let (sd, rest) = rest.split_at_mut(n);
    let (rc, rd) = rest.split_at_mut(n);
    recv.fill(FILL);
    send.fill(0);
    let root_rank = args.param2;
    let root = world.process_at_rank(root_rank as i32);
    let is_root = rank == root_rank;
    let last = rank == size - 1;
    match args.case {
        X_GATHER => {
            for i in 0..k {
                send[i as usize] = xval(rank, root_rank, i);
            }
            if is_root {
                root.gather_into_root(&send[..ku], &mut recv[..n * ku])
            } else {
                root.gather_into(&send[..ku])
            }
        }
        X_GATHER_IN_PLACE => {
            if is_root {
                for i in 0..k {
                    recv[rank as usize * ku + i as usize] = xval(rank, root_rank, i);
                }
                root.gather_into_root_in_place(&mut recv[..n * ku])
            } else {
                for i in 0..k {
                    send[i as usize] = xval(rank, root_rank, i);
                }
                root.gather_into(&send[..ku])
            }
        }
        X_GATHERV | E_GATHERV_COUNTS => {
            let root = world.process_at_rank(0);
            let mine = vc(rank, k) as usize + usize::from(args.case == E_GATHERV_COUNTS && last);
            for (i, w) in send.iter_mut().enumerate().take(mine) {
                *w = xval(rank, 0, i as u32);
            }
            if rank == 0 {
                for q in 0..size {
                    rc[q as usize] = vc(q, k);
                    rd[q as usize] = displ(q, k, 0);
                }
                let (rc, rd) = (as_i32(rc), as_i32(rd));
                root.gather_varcount_into_root(&send[..mine], &mut PartitionMut::new(&mut recv[..], rc, rd))
            } else {
                root.gather_varcount_into(&send[..mine])
            }
        }
        X_GATHERV_IN_PLACE => {
            let mine = vc(rank, k) as usize;
            if is_root {
                for q in 0..size {
                    rc[q as usize] = vc(q, k);
                    rd[q as usize] = displ(q, k, 0);
                }
                for i in 0..vc(rank, k) {
                    recv[(displ(rank, k, 0) + i) as usize] = xval(rank, root_rank, i);
                }
                let (rc, rd) = (as_i32(rc), as_i32(rd));
                root.gather_varcount_into_root_in_place(&mut PartitionMut::new(&mut recv[..], rc, rd))
            } else {
                for (i, w) in send.iter_mut().enumerate().take(mine) {
                    *w = xval(rank, root_rank, i as u32);
                }
                root.gather_varcount_into(&send[..mine])
            }
        }
        X_SCATTERV_IN_PLACE => {
            if is_root {
                for q in 0..size {
                    sc[q as usize] = vc(q, k);
                    sd[q as usize] = displ(q, k, 1);
                    for i in 0..vc(q, k) {
                        send[(displ(q, k, 1) + i) as usize] = xval(root_rank, q, i);
                    }
                }
                let part = Partition::new(&send[..], as_i32(sc), as_i32(sd));
                root.scatter_varcount_into_root_in_place(&part)
            } else {
                root.scatter_varcount_into(&mut recv[..vc(rank, k) as usize])
            }
        }
        X_SCATTER => {
            if is_root {
                for q in 0..size {
                    for i in 0..k {
                        send[(q * k + i) as usize] = xval(root_rank, q, i);
                    }
                }
                root.scatter_into_root(&send[..n * ku], &mut recv[..ku])
            } else {
                root.scatter_into(&mut recv[..ku])
            }
        }
        X_SCATTER_IN_PLACE => {
            if is_root {
                for q in 0..size {
                    for i in 0..k {
                        send[(q * k + i) as usize] = xval(root_rank, q, i);
                    }
                }
                root.scatter_into_root_in_place(&send[..n * ku])
            } else {
                root.scatter_into(&mut recv[..ku])
            }
        }
        X_SCATTERV | E_SCATTERV_BOUNDS | E_SCATTERV_COUNT | E_SCATTERV_NEGATIVE => {
            let root = world.process_at_rank(0);
            let mine = vc(rank, k) as usize + usize::from(args.case == E_SCATTERV_COUNT && last);
            if rank == 0 {
                for q in 0..size {
                    sc[q as usize] = vc(q, k);
                    sd[q as usize] = displ(q, k, 1);
                    for i in 0..vc(q, k) {
                        send[(displ(q, k, 1) + i) as usize] = xval(0, q, i);
                    }
                }
                if args.case == E_SCATTERV_BOUNDS {
                    sd[n - 1] = (n * p + 1) as u32;
                }
                if args.case == E_SCATTERV_NEGATIVE {
                    sc[n - 1] = u32::MAX;
                }
                let part = Partition::new(&send[..], as_i32(sc), as_i32(sd));
                root.scatter_varcount_into_root(&part, &mut recv[..mine])
            } else {
                root.scatter_varcount_into(&mut recv[..mine])
            }
        }
        X_ALLGATHER => {
            for i in 0..k {
                send[i as usize] = xval(rank, 0, i);
            }
            world.all_gather_into(&send[..ku], &mut recv[..n * ku])
        }
        X_ALLGATHER_IN_PLACE => {
            for i in 0..k {
                recv[rank as usize * ku + i as usize] = xval(rank, 0, i);
            }
            world.all_gather_in_place(&mut recv[..n * ku])
        }
        X_ALLGATHERV | E_ALLGATHERV_COUNTS => {
            let mine = vc(rank, k) as usize;
            for (i, w) in send.iter_mut().enumerate().take(mine) {
                *w = xval(rank, 0, i as u32);
            }
            for q in 0..size {
                rc[q as usize] = vc(q, k);
                rd[q as usize] = displ(q, k, rank);
            }
            if args.case == E_ALLGATHERV_COUNTS && rank == 1.min(size - 1) {
                rc[0] = if rc[0] == 0 { 1 } else { rc[0] - 1 };
            }
            let (rc, rd) = (as_i32(rc), as_i32(rd));
            world.all_gather_varcount_into(&send[..mine], &mut PartitionMut::new(&mut recv[..], rc, rd))
        }
        X_ALLTOALL | E_ALLTOALL_COUNT => {
            for d in 0..size {
                for i in 0..k {
                    send[(d * k + i) as usize] = xval(rank, d, i);
                }
            }
            let extra = usize::from(args.case == E_ALLTOALL_COUNT && last);
            world.all_to_all_into(&send[..n * ku], &mut recv[..n * ku + extra])
        }
        X_ALLTOALL_IN_PLACE => {
            for d in 0..size {
                for i in 0..k {
                    recv[(d * k + i) as usize] = xval(rank, d, i);
                }
            }
            world.all_to_all_in_place(&mut recv[..n * ku])
        }
        X_ALLTOALLV | E_ALLTOALLV_COUNTS | E_ALLTOALLV_RECV_BOUNDS | E_ALLTOALLV_SEND_BOUNDS => {
            for d in 0..size {
                sc[d as usize] = vcc(rank, d, k);
                sd[d as usize] = displ(d, k, 0);
                for i in 0..vcc(rank, d, k) {
                    send[(displ(d, k, 0) + i) as usize] = xval(rank, d, i);
                }
            }
            for q in 0..size {
                rc[q as usize] = vcc(q, rank, k);
                rd[q as usize] = displ(q, k, 1);
            }
            if args.case == E_ALLTOALLV_COUNTS && rank == 0 {
                let c = &mut rc[n - 1];
                *c = if *c == 0 { 1 } else { *c - 1 };
            }
            if args.case == E_ALLTOALLV_RECV_BOUNDS && rank == 0 {
                rd[n - 1] = u32::MAX;
            }
            if args.case == E_ALLTOALLV_SEND_BOUNDS && last {
                sd[0] = u32::MAX;
            }
            let s = Partition::new(&send[..], as_i32(sc), as_i32(sd));
            world.all_to_all_varcount_into(&s, &mut PartitionMut::new(&mut recv[..], as_i32(rc), as_i32(rd)))
        }
        X_ALLTOALLV_IN_PLACE
        | E_ALLTOALLV_IN_PLACE_COUNTS
        | E_ALLTOALLV_IN_PLACE_BOUNDS
        | E_ALLTOALLV_IN_PLACE_PARTNER_BOUNDS => {
            for q in 0..size {
                rc[q as usize] = vcs(rank, q, k);
                rd[q as usize] = displ(q, k, rank);
                for i in 0..vcs(rank, q, k) {
                    recv[(displ(q, k, rank) + i) as usize] = xval(rank, q, i);
                }
            }
            if args.case == E_ALLTOALLV_IN_PLACE_COUNTS && rank == 0 && size > 1 {
                let c = &mut rc[n - 1];
                *c = if *c == 0 { 1 } else { *c - 1 };
            }
            if args.case == E_ALLTOALLV_IN_PLACE_BOUNDS && rank == 0 {
                rd[n - 1] = u32::MAX;
            }
            if args.case == E_ALLTOALLV_IN_PLACE_PARTNER_BOUNDS && last {
                rd[0] = u32::MAX;
            }
            let (rc, rd) = (as_i32(rc), as_i32(rd));
            world.all_to_all_varcount_in_place(&mut PartitionMut::new(&mut recv[..], rc, rd))
        }
        E_GATHER_SHORT_RECV => {
            let root = world.process_at_rank(0);
            if rank == 0 {
                root.gather_into_root(&send[..ku], &mut recv[..n * ku - 1])
            } else {
                root.gather_into(&send[..ku])
            }
        }
        E_GATHER_COUNT => {
            let root = world.process_at_rank(0);
            let mine = ku + usize::from(last);
            if rank == 0 {
                root.gather_into_root(&send[..mine], &mut recv[..n * ku])
            } else {
                root.gather_into(&send[..mine])
            }
        }
        E_GATHER_BAD_ROOT => world.process_at_rank(size as i32).gather_into(&send[..ku]),
        E_SCATTER_BAD_ROOT => world.process_at_rank(-1).scatter_into(&mut recv[..ku]),
        _ => {
            // E_ALLGATHER_TYPE
            if last {
                let f = [1.5f32; 4];
                world.all_gather_into(&f[..ku.min(4)], &mut recv[..n * ku.min(4)])
            } else {
                world.all_gather_into(&send[..ku.min(4)], &mut recv[..n * ku.min(4)])
            }
        }
    }
}

/// `prefix` case: `MPI_Scan` of `param` elements.
pub const P_SCAN: u32 = 0;
/// `prefix` case: `MPI_Scan` in place.
pub const P_SCAN_IN_PLACE: u32 = 1;
/// `prefix` case: `MPI_Exscan`.
pub const P_EXSCAN: u32 = 2;
/// `prefix` case: `MPI_Exscan` in place.
pub const P_EXSCAN_IN_PLACE: u32 = 3;
/// `prefix` case: `MPI_Reduce_scatter_block` of `size × param` elements.
pub const P_RSB: u32 = 4;
/// `prefix` case: `MPI_Reduce_scatter_block` in place.
pub const P_RSB_IN_PLACE: u32 = 5;
/// `prefix` case: `MPI_Reduce_scatter` with counts [`rs_count`].
pub const P_RS: u32 = 6;
/// `prefix` case: `MPI_Allreduce` in place.
pub const P_ALL_REDUCE_IN_PLACE: u32 = 7;
/// `prefix` case: `MPI_Reduce` in place at root `size / 2`.
pub const P_REDUCE_IN_PLACE: u32 = 8;
/// `prefix` case: `MPI_Reduce_scatter` in place, counts [`rs_count`].
pub const P_RS_IN_PLACE: u32 = 9;
/// `prefix` case: `MPI_Reduce_local` of elements `0..param` (the left
/// operands) into a copy of elements `1..param + 1` in the receive buffer.
pub const P_REDUCE_LOCAL: u32 = 10;
/// Every data case of [`SEMANTICS_PREFIX`].
pub const P_CASES: [u32; 11] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/// Error case: a scan where the last rank passes one element more.
pub const PE_SCAN_COUNT: u32 = 20;
/// Error case: a reduce-scatter where rank `min(1, size - 1)` passes other
/// counts.
pub const PE_RS_COUNTS: u32 = 21;
/// Error case: a reduce-scatter-block where rank 0's receive buffer is one
/// element longer.
pub const PE_RSB_RECV: u32 = 22;
/// Error case: `MPI_Reduce_local` with an inout buffer one element longer
/// than the input, on every rank.
pub const PE_REDUCE_LOCAL_COUNT: u32 = 23;
/// Every error case of [`SEMANTICS_PREFIX`].
pub const PE_CASES: [u32; 4] = [20, 21, 22, 23];

/// `param2` of [`SEMANTICS_PREFIX`]: `u32` sum.
pub const PREFIX_SUM: u32 = 0;
/// `param2` of [`SEMANTICS_PREFIX`]: the product of 2x2 matrices
/// ([`Mat2`], [`user_operand`]), a non-commutative user operation.
pub const PREFIX_MATRIX: u32 = 1;

/// The `u32` operand `j` of rank `r`.
pub fn sum_operand(r: u32, j: u32) -> u32 {
    r.wrapping_mul(1000)
        .wrapping_add(j.wrapping_mul(7))
        .wrapping_add(1)
}

/// Rank `q`'s count in [`P_RS`] (0 to `k + 1`).
pub fn rs_count(q: u32, k: u32) -> u32 {
    (q * 5 + 1) % (k + 2)
}

/// Words of one rank's region in [`SEMANTICS_PREFIX`]: a send buffer and a
/// receive buffer of `size (k + 2)` elements of 4 words each (room for a
/// [`Mat2`]).
pub fn prefix_region(size: u32, k: u32) -> usize {
    2 * size as usize * (k as usize + 2) * 4
}

gpu_mpi_device::kernel! {
    /// Reduce-scatter, scans and in-place reductions (MPI 4.1 §6.9–§6.11):
    /// the `P_*` and `PE_*` cases with `param` elements per rank (per block
    /// of a reduce-scatter), as `u32` sums or matrix products (`param2`).
    /// Rank `r`'s send buffer holds its operands from element 0 of its
    /// region, its receive buffer ([`FILL`] words) follows at element
    /// `size (k + 2)`; in-place cases work in the send buffer. Records
    /// [`CH6_STRIDE`] words.
    pub static SEMANTICS_PREFIX = fn semantics_prefix(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank() as u32, world.size() as u32);
        let mut rec = Recorder::new(args, rank as i32);
        let r = if args.param2 == PREFIX_MATRIX {
            prefix::<Mat2, _>(world, args, rank, size, user_operand, UserOperation::associative(mat_mul))
        } else {
            prefix::<u32, _>(world, args, rank, size, sum_operand, SystemOperation::sum())
        };
        rec.class(&r)?;
        rec.class(&world.barrier())?;
        let mut total = 0u32;
        rec.class(&world.all_reduce_into(&1u32, &mut total, SystemOperation::sum()))?;
        rec.push(total)
    }
}

fn mat_mul(x: &Mat2, y: &Mat2) -> Mat2 {
    x.mul(y)
}

fn prefix<T, O>(
    world: &World,
    args: &CaseArgs,
    rank: u32,
    size: u32,
    elem: fn(u32, u32) -> T,
    op: O,
) -> Result<(), Error>
where
    T: Equivalence,
    O: Operation<T>,
{
    let k = args.param;
    let (n, ku) = (size as usize, k as usize);
    let e = prefix_region(size, k);
    // SAFETY: every rank touches only its own region of `cells`.
    let region = unsafe { args.cells.slice_mut(rank as usize * e, e)? };
    let (send, recv) = region.split_at_mut(e / 2);
    recv.fill(FILL);
    let words = core::mem::size_of::<T>() / 4;
    let send: &mut [T] = bytemuck::cast_slice_mut(&mut send[..n * (ku + 2) * words]);
    let recv: &mut [T] = bytemuck::cast_slice_mut(&mut recv[..n * (ku + 2) * words]);
    for (j, v) in send.iter_mut().enumerate() {
        *v = elem(rank, j as u32);
    }
    let last = rank == size - 1;
    match args.case {
        P_SCAN => world.scan_into(&send[..ku], &mut recv[..ku], op),
        P_SCAN_IN_PLACE => world.scan_in_place(&mut send[..ku], op),
        P_EXSCAN => world.exclusive_scan_into(&send[..ku], &mut recv[..ku], op),
        P_EXSCAN_IN_PLACE => world.exclusive_scan_in_place(&mut send[..ku], op),
        P_RSB => world.reduce_scatter_block_into(&send[..n * ku], &mut recv[..ku], op),
        P_RSB_IN_PLACE => world.reduce_scatter_block_in_place(&mut send[..n * ku], op),
        P_RS | PE_RS_COUNTS | P_RS_IN_PLACE => {
            let mut counts = [0i32; 512];
            let counts = counts.get_mut(..n).ok_or(Error::OutOfBounds {
                index: n as u32,
                len: 512,
            })?;
            let mut total = 0;
            for (q, c) in counts.iter_mut().enumerate() {
                *c = rs_count(q as u32, k) as i32;
                total += *c as usize;
            }
            let mine = counts[rank as usize] as usize;
            if args.case == PE_RS_COUNTS && rank == 1.min(size - 1) {
                counts[0] += 1;
            }
            if args.case == P_RS_IN_PLACE {
                return world.reduce_scatter_in_place(&mut send[..total], counts, op);
            }
            world.reduce_scatter_into(&send[..total], &mut recv[..mine], counts, op)
        }
        P_ALL_REDUCE_IN_PLACE => world.all_reduce_in_place(&mut send[..ku], op),
        P_REDUCE_IN_PLACE => {
            let root = world.process_at_rank(size as i32 / 2);
            if rank == size / 2 {
                root.reduce_into_root_in_place(&mut send[..ku], op)
            } else {
                root.reduce_into(&send[..ku], op)
            }
        }
        PE_SCAN_COUNT => {
            let m = ku + usize::from(last);
            world.scan_into(&send[..m], &mut recv[..m], op)
        }
        P_REDUCE_LOCAL | PE_REDUCE_LOCAL_COUNT => {
            let m = ku + usize::from(args.case == PE_REDUCE_LOCAL_COUNT);
            recv[..m].copy_from_slice(&send[1..m + 1]);
            reduce_local_into(&send[..ku], &mut recv[..m], op)
        }
        _ => {
            // PE_RSB_RECV
            let m = ku + usize::from(rank == 0);
            world.reduce_scatter_block_into(&send[..n * ku], &mut recv[..m], op)
        }
    }
}
