//! osu_gather, osu_scatter, osu_allgather, osu_alltoall (also with
//! `MPI_IN_PLACE`), osu_reduce_scatter and osu_scan inside a kernel, MPI
//! and native, the varcount forms of the first four (parts of two lengths:
//! [`varcount_weight`]), and the non-blocking barrier and all-reduce
//! (osu_ibarrier, osu_iallreduce).
//!
//! Every kernel runs [`exchange_loop`]: each round every rank fills its send
//! region with [`reduce_value`] of (rank, element, round), all meet in a
//! barrier, the collective alone is timed, then every rank that received
//! something checks every element against the closed form (untimed) and
//! all meet in a barrier again.
//! Data movement (gather, scatter, all-gather, all-to-all) checks that each
//! element came from the right rank and place; reduce-scatter and scan
//! check sums with [`reduce_expected`].
//!
//! The native kernels move the same data the way a CUDA programmer would:
//! direct stores into the destination where it is global memory, one
//! release per block (after a block barrier) to announce arrival, warp
//! shuffles and the block's shared memory for the scan
//! ([`crate::native::block_sum`], [`warp_scan`]).

use crate::mpi::{reduce_expected, reduce_value, CollArgs};
use crate::native::{
    atomic_at, barrier_loop, block_sum, coll_results, reached, reduce_loop, shfl_reduce_round, spin_until,
    GridBarrier, COUNTER_ARRIVALS, COUNTER_BARRIER, COUNTER_BCAST, COUNTER_LAST_FLAGS, COUNTER_RESULT,
};
use gpu_mpi_device::abi::shim;
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::intrinsics::{self, Ordering};
use gpu_mpi_device::request;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// The collective an exchange benchmark measures.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// `MPI_Gather` to the root: `count` elements from every rank.
    Gather,
    /// `MPI_Scatter` from the root: `count` elements to every rank.
    Scatter,
    /// `MPI_Allgather`: `count` elements from every rank to every rank.
    AllGather,
    /// `MPI_Alltoall`: `count` elements from every rank to every rank, a
    /// different part to each.
    AllToAll,
    /// `MPI_Reduce_scatter_block` (sum of `f64`): `count` elements of the
    /// sum to every rank.
    ReduceScatter,
    /// `MPI_Scan` (inclusive sum of `f64`): `count` elements.
    Scan,
    /// `MPI_Gatherv` to the root: rank `r`'s part is
    /// [`varcount_weight`]`(r) × count` elements, at
    /// [`varcount_displ`]`(r) × count` in the root's buffer.
    GatherVarcount,
    /// `MPI_Scatterv` from the root: rank `r`'s part as in
    /// [`Exchange::GatherVarcount`].
    ScatterVarcount,
    /// `MPI_Allgatherv`: rank `r`'s part as in [`Exchange::GatherVarcount`],
    /// to every rank.
    AllGatherVarcount,
    /// `MPI_Alltoallv`: every rank sends rank `d` [`varcount_weight`]`(d) ×
    /// count` elements, from [`varcount_displ`]`(d) × count` of its send
    /// buffer; rank `d` receives them from rank `s` at `s ×
    /// varcount_weight(d) × count`.
    AllToAllVarcount,
    /// `MPI_Alltoall` with `MPI_IN_PLACE`: [`Exchange::AllToAll`]'s parts,
    /// each rank's receive region filled with its send region's values
    /// before the round (untimed) and exchanged in place.
    AllToAllInPlace,
    /// `MPI_Alltoallv` with `MPI_IN_PLACE`: the part rank `p` and rank `q`
    /// trade is [`in_place_units`]`(p, q) × count` elements (1 unit where
    /// the two ranks' parities agree, 2 where they differ: the same for
    /// both, as an in-place exchange needs), at [`in_place_displ`]`(p, q) ×
    /// count` of rank `p`'s buffer; each rank's buffer filled as
    /// [`Exchange::AllToAllInPlace`]'s before the round. A rank moves as
    /// many elements as in [`Exchange::AllToAllVarcount`].
    AllToAllVarcountInPlace,
}

/// A varcount exchange's part of rank `r` in units of `count` elements: 1
/// for an even rank, 2 for an odd one (parts of two lengths, so that every
/// rank's counts array is not one number).
pub const fn varcount_weight(r: usize) -> usize {
    1 + (r & 1)
}

/// Where rank `r`'s part starts in a varcount exchange's packed buffer, in
/// units of `count` elements: the weights of the ranks below `r`.
pub const fn varcount_displ(r: usize) -> usize {
    r + r / 2
}

/// The rank and element of element `i` of a varcount buffer packed by
/// [`varcount_displ`] (`count` elements per unit of weight): each pair of
/// ranks holds three units, one of the even rank then two of the odd one.
const fn varcount_owner(i: usize, count: usize) -> (usize, usize) {
    let unit = i / count;
    let pair = unit / 3;
    if unit.is_multiple_of(3) {
        (2 * pair, i - 3 * pair * count)
    } else {
        (2 * pair + 1, i - (3 * pair + 1) * count)
    }
}

/// The units of the part ranks `p` and `q` trade in an in-place
/// all-to-allv ([`Exchange::AllToAllVarcountInPlace`]): 1 when their
/// parities agree, 2 when they differ.
pub const fn in_place_units(p: usize, q: usize) -> usize {
    1 + ((p ^ q) & 1)
}

/// Where part `q` starts in rank `p`'s buffer of an in-place all-to-allv,
/// in units: the units of its parts below `q` (for an even `p` the packed
/// displacement [`varcount_displ`]).
pub const fn in_place_displ(p: usize, q: usize) -> usize {
    if p.is_multiple_of(2) {
        varcount_displ(q)
    } else {
        q + q.div_ceil(2)
    }
}

/// Entries of the varcount exchanges' counts and displacements
/// ([`CollArgs::parts`]) for `ranks` ranks.
pub const fn varcount_entries(ranks: usize) -> usize {
    8 * ranks
}

/// Entry `i` of the varcount exchanges' counts and displacements, which the
/// host writes into [`CollArgs::parts`]: eight arrays of `ranks` entries, the
/// packed parts' counts and displacements ([`varcount_weight`],
/// [`varcount_displ`]), then an all-to-all receiver's counts and
/// displacements when its parts are one unit each, then when they are two,
/// then an odd rank's partition of an in-place all-to-allv
/// ([`in_place_units`], [`in_place_displ`]; an even rank's is the packed
/// one).
pub const fn varcount_entry(ranks: usize, count: usize, i: usize) -> i32 {
    let (array, r) = (i / ranks, i % ranks);
    let units = match array {
        0 => varcount_weight(r),
        1 => varcount_displ(r),
        2 => 1,
        3 => r,
        4 => 2,
        5 => 2 * r,
        6 => in_place_units(1, r),
        _ => in_place_displ(1, r),
    };
    (units * count) as i32
}

impl Exchange {
    /// The exchange of [`Exchange::ALL`] or [`Exchange::VARCOUNT`] whose
    /// code (`Exchange::X as u32`) is `code`: a kernel's constant
    /// ([`mpi_kernel`]), so an unknown code fails the build.
    const fn of_code(code: u32) -> Exchange {
        const fn find(list: &[Exchange], code: u32) -> Option<Exchange> {
            let mut i = 0;
            while i < list.len() {
                if list[i] as u32 == code {
                    return Some(list[i]);
                }
                i += 1;
            }
            None
        }
        match find(&Exchange::ALL, code) {
            Some(e) => e,
            None => match find(&Exchange::VARCOUNT, code) {
                Some(e) => e,
                None => panic!("not an exchange benchmark's code"),
            },
        }
    }

    /// The fixed forms' exchange benchmarks, a suite each, in the order the
    /// bench runs them (the `alltoall` suite also runs
    /// [`Exchange::AllToAllInPlace`]).
    pub const ALL: [Exchange; 6] = [
        Exchange::Gather,
        Exchange::Scatter,
        Exchange::AllGather,
        Exchange::AllToAll,
        Exchange::ReduceScatter,
        Exchange::Scan,
    ];

    /// The varcount exchange benchmarks, in the order the bench runs them.
    pub const VARCOUNT: [Exchange; 4] = [
        Exchange::GatherVarcount,
        Exchange::ScatterVarcount,
        Exchange::AllGatherVarcount,
        Exchange::AllToAllVarcount,
    ];

    /// Whether every rank's receive region holds `ranks × count` elements
    /// (or its send region does): memory grows with the square of the world.
    pub const fn is_quadratic(self) -> bool {
        matches!(
            self,
            Exchange::AllGather
                | Exchange::AllToAll
                | Exchange::AllToAllInPlace
                | Exchange::ReduceScatter
                | Exchange::AllGatherVarcount
                | Exchange::AllToAllVarcount
                | Exchange::AllToAllVarcountInPlace
        )
    }

    /// Whether this is a varcount form (its counts and displacements in
    /// [`CollArgs::parts`]).
    pub const fn is_varcount(self) -> bool {
        matches!(
            self,
            Exchange::GatherVarcount
                | Exchange::ScatterVarcount
                | Exchange::AllGatherVarcount
                | Exchange::AllToAllVarcount
                | Exchange::AllToAllVarcountInPlace
        )
    }

    /// The fixed form this exchange moves data like.
    pub const fn fixed(self) -> Exchange {
        match self {
            Exchange::GatherVarcount => Exchange::Gather,
            Exchange::ScatterVarcount => Exchange::Scatter,
            Exchange::AllGatherVarcount => Exchange::AllGather,
            Exchange::AllToAllVarcount | Exchange::AllToAllInPlace | Exchange::AllToAllVarcountInPlace => {
                Exchange::AllToAll
            }
            x => x,
        }
    }
}

/// Rank `r`'s part of a gather's, scatter's or all-gather's packed buffer,
/// of the varcount form (`var`) or the fixed one: its first element and
/// its length. The kernels pass `var` as a constant, so that a fixed
/// form's kernel holds no varcount arithmetic.
const fn part(var: bool, r: usize, count: usize) -> (usize, usize) {
    if var {
        (varcount_displ(r) * count, varcount_weight(r) * count)
    } else {
        (r * count, count)
    }
}

/// An all-to-all's part from rank `s` to rank `d`, as [`part`]: its first
/// element in `s`'s send region, its first element in `d`'s receive
/// region, and its length.
const fn pair(var: bool, s: usize, d: usize, count: usize) -> (usize, usize, usize) {
    if var {
        let len = varcount_weight(d) * count;
        (varcount_displ(d) * count, s * len, len)
    } else {
        (d * count, s * count, count)
    }
}

/// Where the calling rank's regions lie in [`CollArgs::values`] (element
/// offsets and lengths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regions {
    /// First element of the send region.
    pub send: usize,
    /// Its length.
    pub send_len: usize,
    /// First element of the receive region.
    pub recv: usize,
    /// Its length.
    pub recv_len: usize,
    /// First element of the native staging area (all-gather: one part per
    /// rank; scan: one total per block).
    pub stage: usize,
}

/// The send and receive regions of `op` on `rank`: each one's stride from
/// rank to rank and this rank's length, then whether the send region
/// (`.4`) or the receive region (`.5`) is the root's alone (its stride is
/// then the whole region). A varcount part of weight 1 or 2 gets a stride
/// of two units. `var`: `op` is a varcount form ([`part`] says why it is
/// a parameter).
const fn lengths(
    op: Exchange,
    var: bool,
    rank: usize,
    ranks: usize,
    count: usize,
) -> (usize, usize, usize, usize, bool, bool) {
    let all = ranks * count;
    if var {
        let packed = varcount_displ(ranks) * count;
        let (mine, two) = (varcount_weight(rank) * count, 2 * count);
        return match op {
            Exchange::GatherVarcount => (two, mine, packed, packed, false, true),
            Exchange::ScatterVarcount => (packed, packed, two, mine, true, false),
            Exchange::AllGatherVarcount => (two, mine, packed, packed, false, false),
            // The in-place all-to-allv: the all-to-allv's strides (its
            // native runs in them), its buffer the receive region.
            Exchange::AllToAllVarcountInPlace => (
                packed,
                packed,
                2 * all,
                in_place_displ(rank, ranks) * count,
                false,
                false,
            ),
            // The all-to-allv.
            _ => (packed, packed, 2 * all, mine * ranks, false, false),
        };
    }
    match op {
        Exchange::Gather => (count, count, all, all, false, true),
        Exchange::Scatter => (all, all, count, count, true, false),
        Exchange::AllGather => (count, count, all, all, false, false),
        Exchange::AllToAll | Exchange::AllToAllInPlace => (all, all, all, all, false, false),
        Exchange::ReduceScatter => (all, all, count, count, false, false),
        // The scan.
        _ => (count, count, count, count, false, false),
    }
}

/// The regions of `rank` (the root's region is the only one where a region
/// is the root's alone; other ranks get it empty).
pub const fn exchange_regions(op: Exchange, rank: usize, root: usize, ranks: usize, count: usize) -> Regions {
    regions_in(op, op.is_varcount(), rank, root, ranks, count)
}

/// [`exchange_regions`], `var` as in [`lengths`].
const fn regions_in(
    op: Exchange,
    var: bool,
    rank: usize,
    root: usize,
    ranks: usize,
    count: usize,
) -> Regions {
    let (send_stride, s, recv_stride, r, send_root, recv_root) = lengths(op, var, rank, ranks, count);
    let send_area = if send_root {
        send_stride
    } else {
        ranks * send_stride
    };
    let recv_area = if recv_root {
        recv_stride
    } else {
        ranks * recv_stride
    };
    let (send, send_len) = if send_root {
        (0, if rank == root { s } else { 0 })
    } else {
        (rank * send_stride, s)
    };
    let (recv, recv_len) = if recv_root {
        (send_area, if rank == root { r } else { 0 })
    } else {
        (send_area + rank * recv_stride, r)
    };
    Regions {
        send,
        send_len,
        recv,
        recv_len,
        stage: send_area + recv_area,
    }
}

/// Elements of [`CollArgs::values`] an exchange benchmark needs.
pub const fn exchange_values(op: Exchange, ranks: u32, blocks: u32, count: u32) -> usize {
    let (ranks, count) = (ranks as usize, count as usize);
    let stage = match op {
        Exchange::AllGather => ranks * count,
        Exchange::AllGatherVarcount => varcount_displ(ranks) * count,
        Exchange::Scan => blocks as usize * count,
        _ => 0,
    };
    exchange_regions(op, 0, 0, ranks, count).stage + stage
}

/// Whether `recv`'s element `i` is right for `op` on `rank` in round `it`.
#[cfg(test)]
fn expected(op: Exchange, rank: u32, ranks: u32, root: u32, count: usize, i: usize, it: u32) -> f64 {
    if op.is_varcount() {
        expected_varcount(op, rank, root, count, i, it)
    } else {
        expected_fixed(op, rank, ranks, root, count, i, it)
    }
}

/// [`expected`] of a fixed form.
fn expected_fixed(op: Exchange, rank: u32, ranks: u32, root: u32, count: usize, i: usize, it: u32) -> f64 {
    let (part, e) = ((i / count.max(1)) as u32, (i % count.max(1)) as u32);
    let offset = rank * count as u32;
    match op {
        Exchange::Gather | Exchange::AllGather => reduce_value(part, e, it),
        Exchange::Scatter => reduce_value(root, offset + i as u32, it),
        Exchange::AllToAll | Exchange::AllToAllInPlace => reduce_value(part, offset + e, it),
        Exchange::ReduceScatter => reduce_expected(ranks, offset + i as u32, it),
        // The scan.
        _ => reduce_expected(rank + 1, i as u32, it),
    }
}

/// [`expected`] of a varcount form.
fn expected_varcount(op: Exchange, rank: u32, root: u32, count: usize, i: usize, it: u32) -> f64 {
    let varcount = (varcount_displ(rank as usize) * count) as u32;
    match op {
        Exchange::GatherVarcount | Exchange::AllGatherVarcount => {
            let (q, e) = varcount_owner(i, count.max(1));
            reduce_value(q as u32, e as u32, it)
        }
        Exchange::ScatterVarcount => reduce_value(root, varcount + i as u32, it),
        Exchange::AllToAllVarcountInPlace => {
            let (p, count) = (rank as usize, count.max(1));
            // The part `i` lies in: three units per pair of ranks (q even,
            // then odd), one of each parity's for an even `p`, two of the
            // other's for an odd one.
            let (pair, unit) = (i / count / 3, i / count % 3);
            let q = 2 * pair + usize::from(if p.is_multiple_of(2) { unit >= 1 } else { unit >= 2 });
            let e = i - in_place_displ(p, q) * count;
            reduce_value(q as u32, (in_place_displ(q, p) * count + e) as u32, it)
        }
        // The all-to-allv.
        _ => {
            let len = varcount_weight(rank as usize) * count.max(1);
            reduce_value((i / len) as u32, varcount + (i % len) as u32, it)
        }
    }
}

/// Elements of `recv`, elements `first..` of a receive region, that differ
/// from what `op` should have delivered (`VAR`: `op` is a varcount form).
/// Out of line: the check takes no registers from the timed loop; and one
/// copy per form, as ptxas gives a kernel the registers of the callees it
/// may reach (the varcount check's divisions took a fixed form's native
/// kernels above 128).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn wrong_elements<const VAR: bool>(
    op: Exchange,
    recv: &[f64],
    first: usize,
    rank: u32,
    ranks: u32,
    root: u32,
    count: usize,
    it: u32,
) -> u64 {
    let mut errors = 0;
    for (i, v) in recv.iter().enumerate() {
        note_plain(v, false);
        if *v
            != if VAR {
                expected_varcount(op, rank, root, count, first + i, it)
            } else {
                expected_fixed(op, rank, ranks, root, count, first + i, it)
            }
        {
            errors += 1;
        }
    }
    errors
}

/// Fills the calling rank's send region for round `it` (a scatter's root:
/// `ranks × count` elements).
#[inline(never)]
fn fill(send: &mut [f64], rank: u32, it: u32) {
    for (e, v) in send.iter_mut().enumerate() {
        note_plain(v, true);
        *v = reduce_value(rank, e as u32, it);
    }
}

/// Reports a plain access of an element of a benchmark's region to the
/// emulator's timing model, which does not see accesses through Rust
/// slices (nothing on the GPU).
#[inline(always)]
fn note_plain(element: &f64, write: bool) {
    shim::note_global((element as *const f64).cast(), core::mem::size_of::<f64>(), write)
}

/// The loop shared by the MPI and the native exchange benchmarks: per
/// round, fill the send region, meet in `barrier`, time
/// `run(send, recv, round)` alone, check
/// the receive region (before the barrier: a native may write it again as
/// soon as the barrier lets it), meet in `barrier`. A gather's root does
/// not check the `ranks × count` elements alone (a serial walk that kept
/// the full-size suite from finishing): after the barrier every rank
/// checks its own part of the root's region, complete then and not
/// rewritten before the rank enters the next gather (by the rank itself,
/// or by the MPI root after that gather's first world barrier). `VAR`:
/// `op` is a varcount form; `IN_PLACE`: it is an in-place all-to-all
/// (fixed or varcount), whose receive region is filled with the send
/// region's values too (each a constant, so that each kernel holds only
/// its form's code). Returns the timed nanoseconds and the errors.
pub fn exchange_loop<const VAR: bool, const IN_PLACE: bool>(
    world: &World,
    args: &CollArgs,
    op: Exchange,
    mut run: impl FnMut(&mut [f64], &mut [f64], u32) -> Result<(), Error>,
    mut barrier: impl FnMut() -> Result<(), Error>,
) -> Result<(u64, u64), Error> {
    let (rank, ranks) = (world.rank() as u32, world.size() as u32);
    let count = args.size as usize;
    let blocks = intrinsics::coordinates().grid_dim;
    let needed = exchange_values(op, ranks, blocks, args.size);
    if args.values.len() < needed {
        return Err(Error::OutOfBounds {
            index: needed as u32,
            len: args.values.len() as u32,
        });
    }
    let r = regions_in(op, VAR, rank as usize, args.root as usize, ranks as usize, count);
    // SAFETY: the two regions are disjoint and the calling rank's own; other
    // ranks touch them only inside the collective (MPI, or the native
    // protocol's release/acquire ordering).
    let (send, recv) = unsafe {
        (
            args.values.slice_mut(r.send, r.send_len)?,
            args.values.slice_mut(r.recv, r.recv_len)?,
        )
    };
    let total = args.warmup + args.iterations;
    let (mut elapsed, mut errors) = (0u64, 0u64);
    for it in 0..total {
        fill(send, rank, it);
        if IN_PLACE {
            fill(recv, rank, it);
        }
        // Every rank starts its timed round after every fill: a scatter's
        // root fills `ranks × count` elements, which the other ranks'
        // rounds would otherwise time.
        barrier()?;
        let start = intrinsics::clock_ns();
        run(send, recv, it)?;
        let t = intrinsics::clock_ns().wrapping_sub(start);
        if it >= args.warmup {
            elapsed += t;
        }
        let gather = op.fixed() == Exchange::Gather;
        if !gather {
            errors += wrong_elements::<VAR>(op, recv, 0, rank, ranks, args.root, count, it);
        }
        barrier()?;
        if gather {
            errors += gathered_part_errors::<VAR>(args, op, rank, ranks, it);
        }
    }
    Ok((elapsed, errors))
}

/// Errors in the calling rank's part of a gather's root region after round
/// `it` ([`exchange_loop`] says when it may be read); out of line, like
/// [`wrong_elements`].
#[inline(never)]
fn gathered_part_errors<const VAR: bool>(
    args: &CollArgs,
    op: Exchange,
    rank: u32,
    ranks: u32,
    it: u32,
) -> u64 {
    let count = args.size as usize;
    let root = args.root as usize;
    let root_recv = regions_in(op, VAR, root, root, ranks as usize, count).recv;
    let (first, len) = part(VAR, rank as usize, count);
    // SAFETY: our part of the root's receive region, complete after the
    // round's barrier and not written again before we enter the next
    // gather (`exchange_loop`). The loop checked that the values hold
    // every region.
    match unsafe { args.values.slice(root_recv + first, len) } {
        Ok(part) => wrong_elements::<VAR>(op, part, first, rank, ranks, args.root, count, it),
        Err(_) => len as u64,
    }
}

/// The varcount exchanges' counts and displacements, written by the host
/// ([`varcount_entry`]): those of the packed parts, and those of the
/// calling rank's all-to-all receive buffer. Empty for the fixed forms.
#[derive(Clone, Copy)]
struct VarParts<'a> {
    counts: &'a [i32],
    displs: &'a [i32],
    recv_counts: &'a [i32],
    recv_displs: &'a [i32],
}

impl<'a> VarParts<'a> {
    /// A fixed form's: none.
    const NONE: VarParts<'static> = VarParts {
        counts: &[],
        displs: &[],
        recv_counts: &[],
        recv_displs: &[],
    };

    /// The arrays of `op` on the calling rank.
    fn of(args: &'a CollArgs, op: Exchange, rank: usize, ranks: usize) -> Result<VarParts<'a>, Error> {
        if !op.is_varcount() {
            return Ok(VarParts::NONE);
        }
        // SAFETY: the host wrote the arrays before the launch; nothing
        // writes them during it.
        let all = unsafe { args.parts.slice(0, varcount_entries(ranks))? };
        let array = |k: usize| all.get(k * ranks..(k + 1) * ranks).unwrap_or(&[]);
        let own = 2 * varcount_weight(rank);
        // An odd rank's in-place partition is its own pair of arrays.
        let packed = if op == Exchange::AllToAllVarcountInPlace && rank % 2 == 1 {
            6
        } else {
            0
        };
        Ok(VarParts {
            counts: array(packed),
            displs: array(packed + 1),
            recv_counts: array(own),
            recv_displs: array(own + 1),
        })
    }
}

/// Runs the fixed form `op` through the MPI library on the calling rank.
fn mpi_exchange(
    world: &World,
    op: Exchange,
    root: u32,
    send: &mut [f64],
    recv: &mut [f64],
) -> Result<(), Error> {
    let root_process = world.process_at_rank(root as i32);
    let is_root = world.rank() as u32 == root;
    match op {
        Exchange::Gather if is_root => root_process.gather_into_root(&send[..], &mut recv[..]),
        Exchange::Gather => root_process.gather_into(&send[..]),
        Exchange::Scatter if is_root => root_process.scatter_into_root(&send[..], &mut recv[..]),
        Exchange::Scatter => root_process.scatter_into(&mut recv[..]),
        Exchange::AllGather => world.all_gather_into(&send[..], &mut recv[..]),
        Exchange::AllToAll => world.all_to_all_into(&send[..], &mut recv[..]),
        Exchange::ReduceScatter => {
            world.reduce_scatter_block_into(&send[..], &mut recv[..], SystemOperation::sum())
        }
        Exchange::Scan => world.scan_into(&send[..], &mut recv[..], SystemOperation::sum()),
        // `mpi_varcount`'s and `mpi_in_place`'s.
        Exchange::AllToAllInPlace
        | Exchange::GatherVarcount
        | Exchange::ScatterVarcount
        | Exchange::AllGatherVarcount
        | Exchange::AllToAllVarcount
        | Exchange::AllToAllVarcountInPlace => Err(Error::Intern),
    }
}

/// Runs the varcount form `op` through the MPI library on the calling rank.
fn mpi_varcount(
    world: &World,
    op: Exchange,
    root: u32,
    parts: VarParts<'_>,
    send: &mut [f64],
    recv: &mut [f64],
) -> Result<(), Error> {
    let root_process = world.process_at_rank(root as i32);
    let is_root = world.rank() as u32 == root;
    let VarParts {
        counts,
        displs,
        recv_counts,
        recv_displs,
    } = parts;
    match op {
        Exchange::GatherVarcount if is_root => root_process
            .gather_varcount_into_root(&send[..], &mut PartitionMut::new(&mut recv[..], counts, displs)),
        Exchange::GatherVarcount => root_process.gather_varcount_into(&send[..]),
        Exchange::ScatterVarcount if is_root => {
            root_process.scatter_varcount_into_root(&Partition::new(&send[..], counts, displs), &mut recv[..])
        }
        Exchange::ScatterVarcount => root_process.scatter_varcount_into(&mut recv[..]),
        Exchange::AllGatherVarcount => {
            world.all_gather_varcount_into(&send[..], &mut PartitionMut::new(&mut recv[..], counts, displs))
        }
        Exchange::AllToAllVarcount => world.all_to_all_varcount_into(
            &Partition::new(&send[..], counts, displs),
            &mut PartitionMut::new(&mut recv[..], recv_counts, recv_displs),
        ),
        // `mpi_exchange`'s.
        _ => Err(Error::Intern),
    }
}

/// The MPI side of an exchange benchmark: the collective `OP`
/// ([`Exchange::of_code`]), each round timed alone, a world barrier between
/// rounds. `VAR`: `OP` is a varcount form. Both constants, so that each
/// kernel holds only its own collective's calls (with `op` an argument the
/// four varcount kernels shared one copy of every varcount path, and each
/// kernel's frame was the largest path's).
#[inline(never)]
fn mpi_kernel<const VAR: bool, const OP: u32>(world: &World, args: &CollArgs) -> Result<(), Error> {
    let op = const { Exchange::of_code(OP) };
    if op.is_varcount() != VAR {
        return Err(Error::Intern);
    }
    let parts = if VAR {
        VarParts::of(args, op, world.rank() as usize, world.size() as usize)?
    } else {
        VarParts::NONE
    };
    let (elapsed, errors) = exchange_loop::<VAR, false>(
        world,
        args,
        op,
        |send, recv, _| {
            if VAR {
                mpi_varcount(world, op, args.root, parts, send, recv)
            } else {
                mpi_exchange(world, op, args.root, send, recv)
            }
        },
        || world.barrier(),
    )?;
    coll_results(args, world.rank() as usize, elapsed, errors)
}

gpu_mpi_device::kernel! {
    /// osu_gather inside a kernel: `MPI_Gather` of `size` `f64` per rank to the root.
    pub static BENCH_GATHER = fn bench_gather(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::Gather as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_scatter inside a kernel: `MPI_Scatter` of `size` `f64` per rank from the root.
    pub static BENCH_SCATTER = fn bench_scatter(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::Scatter as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_allgather inside a kernel: `MPI_Allgather` of `size` `f64` per rank.
    pub static BENCH_ALLGATHER = fn bench_allgather(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::AllGather as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_alltoall inside a kernel: `MPI_Alltoall` of `size` `f64` per pair.
    pub static BENCH_ALLTOALL = fn bench_alltoall(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::AllToAll as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_alltoall with `MPI_IN_PLACE` inside a kernel: `MPI_Alltoall` of
    /// `size` `f64` per pair, each rank's buffer both sides.
    pub static BENCH_ALLTOALL_IN_PLACE = fn bench_alltoall_in_place(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_in_place::<false>(world, args)
    }
}

/// [`mpi_kernel`] of the in-place all-to-all (`VAR`: the all-to-allv, its
/// partition from [`VarParts`]): a function of its own, so that the
/// in-place call is not in the frame of every fixed form's kernel (in
/// `mpi_exchange` it took their stacks from 344 to 1,072 bytes and made
/// `bench_gather` spill).
#[inline(never)]
fn mpi_in_place<const VAR: bool>(world: &World, args: &CollArgs) -> Result<(), Error> {
    let op = if VAR {
        Exchange::AllToAllVarcountInPlace
    } else {
        Exchange::AllToAllInPlace
    };
    let parts = VarParts::of(args, op, world.rank() as usize, world.size() as usize)?;
    let (elapsed, errors) = exchange_loop::<VAR, true>(
        world,
        args,
        op,
        |_, recv, _| {
            if VAR {
                world.all_to_all_varcount_in_place(&mut PartitionMut::new(
                    &mut recv[..],
                    parts.counts,
                    parts.displs,
                ))
            } else {
                world.all_to_all_in_place(&mut recv[..])
            }
        },
        || world.barrier(),
    )?;
    coll_results(args, world.rank() as usize, elapsed, errors)
}

gpu_mpi_device::kernel! {
    /// osu_reduce_scatter inside a kernel: `MPI_Reduce_scatter_block` (sum)
    /// of `size` `f64` per rank.
    pub static BENCH_REDUCE_SCATTER = fn bench_reduce_scatter(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::ReduceScatter as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_scan inside a kernel: `MPI_Scan` (sum) of `size` `f64`.
    pub static BENCH_SCAN = fn bench_scan(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<false, { Exchange::Scan as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Gatherv` of [`Exchange::GatherVarcount`]'s parts to the root.
    pub static BENCH_GATHER_VARCOUNT = fn bench_gather_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<true, { Exchange::GatherVarcount as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Scatterv` of [`Exchange::ScatterVarcount`]'s parts from the root.
    pub static BENCH_SCATTER_VARCOUNT = fn bench_scatter_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<true, { Exchange::ScatterVarcount as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Allgatherv` of [`Exchange::AllGatherVarcount`]'s parts.
    pub static BENCH_ALLGATHER_VARCOUNT = fn bench_allgather_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<true, { Exchange::AllGatherVarcount as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Alltoallv` of [`Exchange::AllToAllVarcount`]'s parts.
    pub static BENCH_ALLTOALL_VARCOUNT = fn bench_alltoall_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_kernel::<true, { Exchange::AllToAllVarcount as u32 }>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Alltoallv` with `MPI_IN_PLACE` of
    /// [`Exchange::AllToAllVarcountInPlace`]'s parts.
    pub static BENCH_ALLTOALL_VARCOUNT_IN_PLACE = fn bench_alltoall_varcount_in_place(world: &World, args: &CollArgs) -> Result<(), Error> {
        mpi_in_place::<true>(world, args)
    }
}

gpu_mpi_device::kernel! {
    /// osu_ibarrier inside a kernel: `MPI_Ibarrier` then `MPI_Wait`, in the
    /// barrier benchmark's timed loop.
    pub static BENCH_IBARRIER = fn bench_ibarrier(world: &World, args: &CollArgs) -> Result<(), Error> {
        let (elapsed, errors) = barrier_loop(world, args, || {
            request::scope(|scope| world.immediate_barrier(scope)?.wait().map(|_| ()))
        })?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

gpu_mpi_device::kernel! {
    /// osu_iallreduce inside a kernel: `MPI_Iallreduce` (sum) of `size`
    /// `f64` then `MPI_Wait`, each round timed alone, a barrier between rounds.
    pub static BENCH_IALLREDUCE = fn bench_iallreduce(world: &World, args: &CollArgs) -> Result<(), Error> {
        let (elapsed, errors) = reduce_loop(
            world,
            args,
            |rows, _| {
                // SAFETY: the rows are this rank's own; nothing else touches
                // them until the request completes.
                let (send, recv) = unsafe {
                    (args.values.slice_mut(rows.send, rows.count)?, args.values.slice_mut(rows.recv, rows.count)?)
                };
                request::scope(|scope| {
                    world
                        .immediate_all_reduce_into(scope, &send[..], &mut recv[..], SystemOperation::sum())?
                        .wait()
                })?;
                Ok(true)
            },
            || world.barrier(),
        )?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

// ---------------------------------------------------------------------------
// Native baselines.

/// Inclusive prefix sum of `v` over the lanes `0..=lane` of the caller's
/// warp (`__shfl_up_sync`, log2(32) steps). Every lane of the warp calls it.
pub fn warp_scan(v: f64, lane: u32) -> f64 {
    let mask = intrinsics::warp_mask();
    let mut x = v;
    let mut delta = 1;
    while delta < 32 {
        let y = f64::from_bits(intrinsics::shfl_up_sync_u64(mask, x.to_bits(), delta));
        if lane >= delta {
            x += y;
        }
        delta *= 2;
    }
    x
}

/// Bytes of the block's shared scratch the native scan uses: one `f64` per
/// warp (at most 32), then the block's offset.
const SCAN_SHARED_BYTES: usize = 33 * 8;

/// Inclusive prefix sum of `v` over the ranks `0..=thread` of the calling
/// block: a warp scan, the warps' totals in shared memory scanned by warp
/// 0, added back. Two block barriers; every rank of the block calls it.
fn block_scan(v: f64) -> f64 {
    let c = intrinsics::coordinates();
    let (lane, warp) = (c.thread % 32, (c.thread / 32) as usize);
    let warps = c.block_dim.div_ceil(32);
    let shared = intrinsics::shared_block::<SCAN_SHARED_BYTES>() as *mut f64;
    let x = warp_scan(v, lane);
    if lane == 31 || c.thread + 1 == c.block_dim {
        // SAFETY: `warp < 32`: inside the shared scratch (33 f64); one
        // writer per element; read after the block barrier.
        unsafe { shared.add(warp).write(x) };
    }
    intrinsics::block_barrier();
    if warp == 0 {
        // Lanes below `warps` read the totals written before the barrier,
        // and each writes back only its own element, read by the others
        // after the next barrier.
        let total = if lane < warps {
            // SAFETY: as above.
            unsafe { shared.add(lane as usize).read() }
        } else {
            0.0
        };
        let before = warp_scan(total, lane) - total;
        if lane < warps {
            // SAFETY: as above.
            unsafe { shared.add(lane as usize).write(before) };
        }
    }
    intrinsics::block_barrier();
    // SAFETY: written by warp 0 before the barrier.
    let offset = unsafe { shared.add(warp).read() };
    x + offset
}

/// One native exchange on the calling rank (the regions as
/// [`exchange_loop`] gives them; `grid` is the collective's own grid
/// barrier; `round` counts from 1; `VAR`: `op` is a varcount form).
/// Returns the waits that gave up.
fn native_exchange<const VAR: bool>(
    world: &World,
    args: &CollArgs,
    op: Exchange,
    send: &[f64],
    recv: &mut [f64],
    grid: &mut GridBarrier<'_>,
    round: u32,
) -> Result<u64, Error> {
    let c = intrinsics::coordinates();
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    let (count, root) = (args.size as usize, args.root as usize);
    let values = &args.values;
    let regions = |r: usize| regions_in(op, VAR, r, root, ranks, count);
    let mut timeouts = 0u64;
    match op {
        Exchange::Gather | Exchange::GatherVarcount => {
            // Every rank stores its part into the root's buffer; a block
            // barrier, one release per block; the root waits for them all.
            let (off, len) = part(VAR, rank, count);
            let (at, from) = (regions(root).recv + off, regions(rank).send);
            for e in 0..len {
                values.write(at + e, values.read(from + e)?)?;
            }
            let arrivals = atomic_at(&args.counters, COUNTER_ARRIVALS)?;
            intrinsics::block_barrier();
            if c.thread == 0 {
                // The block barrier ordered the block's stores before this
                // thread's; the fence makes them visible device-wide.
                intrinsics::fence(Ordering::AcqRel);
                // Release: pairs with the root's acquire below.
                arrivals.fetch_add(1, Ordering::Release);
            }
            if rank == root {
                let target = round.wrapping_mul(c.grid_dim);
                // Acquire: pairs with every block's release arrival.
                if !spin_until(|| reached(arrivals.load(Ordering::Acquire), target)) {
                    timeouts += 1;
                }
            }
        }
        Exchange::Scatter | Exchange::ScatterVarcount => {
            // The root's buffer is global memory: it publishes the round
            // (release), each block's thread 0 waits (acquire), a block
            // barrier, and every rank loads its part.
            let published = atomic_at(&args.counters, COUNTER_BCAST)?;
            if rank == root {
                published.store(round, Ordering::Release);
            }
            if c.thread == 0 && !spin_until(|| reached(published.load(Ordering::Acquire), round)) {
                timeouts += 1;
            }
            intrinsics::block_barrier();
            intrinsics::fence(Ordering::AcqRel);
            let (off, len) = part(VAR, rank, count);
            let (at, to) = (regions(root).send + off, regions(rank).recv);
            for e in 0..len {
                values.write(to + e, values.read(at + e)?)?;
            }
        }
        Exchange::AllGather | Exchange::AllGatherVarcount => {
            // Each rank stores its part once into a staging area, a grid
            // barrier, each rank loads all parts (adjacent ranks load
            // adjacent elements).
            let (stage, mine) = (regions(rank).stage, regions(rank));
            let (off, len) = part(VAR, rank, count);
            for e in 0..len {
                values.write(stage + off + e, values.read(mine.send + e)?)?;
            }
            grid.sync();
            for i in 0..mine.recv_len {
                values.write(mine.recv + i, values.read(stage + i)?)?;
            }
        }
        Exchange::AllToAll
        | Exchange::AllToAllVarcount
        | Exchange::AllToAllInPlace
        | Exchange::AllToAllVarcountInPlace => {
            // Each rank stores part d straight into rank d's buffer, then a
            // grid barrier (the in-place row's native is this one, from a
            // send buffer apart).
            let from = regions(rank).send;
            for d in 0..ranks {
                let (off, at, len) = pair(VAR, rank, d, count);
                let at = regions(d).recv + at;
                for e in 0..len {
                    values.write(at + e, values.read(from + off + e)?)?;
                }
            }
            grid.sync();
        }
        Exchange::ReduceScatter => {
            // A grid barrier publishes the send buffers (filled before the
            // round); rank r sums element r × count + e of every rank's.
            grid.sync();
            let to = regions(rank).recv;
            for e in 0..count {
                let mut sum = 0.0;
                for q in 0..ranks {
                    sum += values.read(regions(q).send + rank * count + e)?;
                }
                values.write(to + e, sum)?;
            }
        }
        Exchange::Scan => timeouts += native_scan(args, send, recv, regions(rank).stage, round)?,
    }
    Ok(timeouts)
}

/// The native scan: a block scan (shuffles, shared memory) per element; the
/// last rank of each block stores the block's totals and its thread 0
/// publishes them (release flag per block); warp 0 of every block sums the
/// totals of the blocks before it (acquire, a strided share per lane, a
/// shuffle sum) and every rank adds that.
fn native_scan(
    args: &CollArgs,
    send: &[f64],
    recv: &mut [f64],
    stage: usize,
    round: u32,
) -> Result<u64, Error> {
    let c = intrinsics::coordinates();
    let count = args.size as usize;
    let block = c.block as usize;
    for e in 0..count {
        let x = block_scan(send[e]);
        recv[e] = x;
        if c.thread + 1 == c.block_dim {
            args.values.write(stage + block * count + e, x)?;
        }
    }
    intrinsics::block_barrier();
    let flag = atomic_at(&args.counters, COUNTER_LAST_FLAGS + block)?;
    if c.thread == 0 {
        // The block barrier ordered the totals' stores before this thread;
        // the fence makes them visible device-wide.
        intrinsics::fence(Ordering::AcqRel);
        // Release: pairs with the acquire loads of later blocks below.
        flag.store(round, Ordering::Release);
    }
    let mut timeouts = 0u64;
    let lane = c.thread % 32;
    if c.thread < 32 {
        let mut b = lane as usize;
        while b < block {
            let other = atomic_at(&args.counters, COUNTER_LAST_FLAGS + b)?;
            // Acquire: pairs with block b's release of its totals.
            if !spin_until(|| reached(other.load(Ordering::Acquire), round)) {
                timeouts += 1;
            }
            b += 32;
        }
    }
    let shared = intrinsics::shared_block::<SCAN_SHARED_BYTES>() as *mut f64;
    for (e, v) in recv.iter_mut().enumerate() {
        let mut part = 0.0;
        if c.thread < 32 {
            let mut b = lane as usize;
            while b < block {
                part += args.values.read(stage + b * count + e)?;
                b += 32;
            }
        }
        let before = block_sum(if c.thread < 32 { part } else { 0.0 });
        if c.thread == 0 {
            // SAFETY: element 32 of the shared scratch, written by thread 0
            // alone, read by the block after the barrier.
            unsafe { shared.add(32).write(before) };
        }
        intrinsics::block_barrier();
        // SAFETY: written before the barrier.
        *v += unsafe { shared.add(32).read() };
        intrinsics::block_barrier();
    }
    Ok(timeouts)
}

/// The native side of an exchange benchmark: [`native_exchange`] in
/// [`exchange_loop`], a grid barrier between rounds.
#[inline(never)]
fn native_kernel<const VAR: bool>(world: &World, args: &CollArgs, op: Exchange) -> Result<(), Error> {
    if op.is_varcount() != VAR {
        return Err(Error::Intern);
    }
    let mut between = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
    let mut inside = GridBarrier::new(atomic_at(&args.counters, COUNTER_RESULT)?);
    let mut timeouts = 0u64;
    let (elapsed, errors) = exchange_loop::<VAR, false>(
        world,
        args,
        op,
        |send, recv, it| {
            timeouts += native_exchange::<VAR>(world, args, op, send, recv, &mut inside, it + 1)?;
            Ok(())
        },
        || {
            between.sync();
            Ok(())
        },
    )?;
    let waits = timeouts + between.timeouts() + inside.timeouts();
    coll_results(args, world.rank() as usize, elapsed, errors + waits)
}

gpu_mpi_device::kernel! {
    /// Native gather: direct stores into the root's buffer, one release per block.
    pub static NATIVE_GATHER = fn native_gather(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::Gather)
    }
}

gpu_mpi_device::kernel! {
    /// Native scatter: the root publishes its buffer; every rank loads its part.
    pub static NATIVE_SCATTER = fn native_scatter(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::Scatter)
    }
}

gpu_mpi_device::kernel! {
    /// Native all-gather: stores to a staging area, a grid barrier, loads.
    pub static NATIVE_ALLGATHER = fn native_allgather(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::AllGather)
    }
}

gpu_mpi_device::kernel! {
    /// Native all-to-all: direct stores into every destination, a grid barrier.
    pub static NATIVE_ALLTOALL = fn native_alltoall(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::AllToAll)
    }
}

gpu_mpi_device::kernel! {
    /// Native gatherv: the gather's, each part at its displacement.
    pub static NATIVE_GATHER_VARCOUNT = fn native_gather_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<true>(world, args, Exchange::GatherVarcount)
    }
}

gpu_mpi_device::kernel! {
    /// Native scatterv: the scatter's, each part at its displacement.
    pub static NATIVE_SCATTER_VARCOUNT = fn native_scatter_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<true>(world, args, Exchange::ScatterVarcount)
    }
}

gpu_mpi_device::kernel! {
    /// Native all-gatherv: the all-gather's, each part at its displacement.
    pub static NATIVE_ALLGATHER_VARCOUNT = fn native_allgather_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<true>(world, args, Exchange::AllGatherVarcount)
    }
}

gpu_mpi_device::kernel! {
    /// Native all-to-allv: the all-to-all's, each part at its displacements.
    pub static NATIVE_ALLTOALL_VARCOUNT = fn native_alltoall_varcount(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<true>(world, args, Exchange::AllToAllVarcount)
    }
}

gpu_mpi_device::kernel! {
    /// Native reduce-scatter: a grid barrier, each rank sums its column of
    /// every rank's send buffer.
    pub static NATIVE_REDUCE_SCATTER = fn native_reduce_scatter(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::ReduceScatter)
    }
}

gpu_mpi_device::kernel! {
    /// Native scan: warp-shuffle block scan, block totals with release flags.
    pub static NATIVE_SCAN = fn native_scan_kernel(world: &World, args: &CollArgs) -> Result<(), Error> {
        native_kernel::<false>(world, args, Exchange::Scan)
    }
}

gpu_mpi_device::kernel! {
    /// Native all-reduce with warp shuffles and shared memory (the baseline
    /// of osu_iallreduce, and of osu_allreduce beside the global-memory tree).
    pub static NATIVE_ALLREDUCE_SHFL = fn native_allreduce_shfl(world: &World, args: &CollArgs) -> Result<(), Error> {
        shfl_reduce_kernel(world, args, true)
    }
}

gpu_mpi_device::kernel! {
    /// Native reduce with warp shuffles and shared memory.
    pub static NATIVE_REDUCE_SHFL = fn native_reduce_shfl(world: &World, args: &CollArgs) -> Result<(), Error> {
        shfl_reduce_kernel(world, args, false)
    }
}

#[inline(never)]
fn shfl_reduce_kernel(world: &World, args: &CollArgs, all: bool) -> Result<(), Error> {
    let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
    let mut timeouts = 0u64;
    let (elapsed, errors) = reduce_loop(
        world,
        args,
        |rows, it| shfl_reduce_round(world, args, rows, all, it + 1, &mut timeouts),
        || {
            grid.sync();
            Ok(())
        },
    )?;
    coll_results(
        args,
        world.rank() as usize,
        elapsed,
        errors + timeouts + grid.timeouts(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec;

    #[test]
    fn regions_are_disjoint_and_inside_the_values() {
        let in_place = [Exchange::AllToAllInPlace, Exchange::AllToAllVarcountInPlace];
        for op in Exchange::ALL
            .into_iter()
            .chain(Exchange::VARCOUNT)
            .chain(in_place)
        {
            for (ranks, count) in [(1usize, 1usize), (5, 3), (64, 2)] {
                let total = exchange_values(op, ranks as u32, 2, count as u32);
                let mut owner = vec![None; total];
                for rank in 0..ranks {
                    let r = exchange_regions(op, rank, 2 % ranks, ranks, count);
                    for i in (r.send..r.send + r.send_len).chain(r.recv..r.recv + r.recv_len) {
                        assert!(i < r.stage && i < total, "{op:?} rank {rank}: {i}");
                        assert_eq!(owner[i], None, "{op:?}: element {i} twice");
                        owner[i] = Some(rank);
                    }
                }
                let used = owner.iter().filter(|o| o.is_some()).count();
                let stage = exchange_regions(op, 0, 0, ranks, count).stage;
                if op.is_varcount() {
                    // A rank of weight 1 leaves half of its stride unused.
                    assert!(used <= stage, "{op:?}");
                } else {
                    assert_eq!(used, stage, "{op:?}");
                }
            }
        }
    }

    #[test]
    fn the_varcount_values_are_what_a_reference_exchange_gives() {
        use std::vec::Vec;
        let (ranks, count, root, it) = (7usize, 3usize, 2u32, 5u32);
        let entry = |array: usize, r: usize| varcount_entry(ranks, count, array * ranks + r) as usize;
        // The packed counts and displacements, then an all-to-all
        // receiver's of one unit and of two.
        let mut at = 0;
        for r in 0..ranks {
            assert_eq!(entry(0, r), varcount_weight(r) * count);
            assert_eq!(entry(1, r), at);
            at += entry(0, r);
            for w in 1..=2 {
                assert_eq!((entry(2 * w, r), entry(2 * w + 1, r)), (w * count, r * w * count));
            }
        }
        assert_eq!(at, varcount_displ(ranks) * count);
        let packed: Vec<f64> = (0..ranks)
            .flat_map(|r| (0..varcount_weight(r) * count).map(move |e| reduce_value(r as u32, e as u32, it)))
            .collect();
        for (i, v) in packed.iter().enumerate() {
            for op in [Exchange::GatherVarcount, Exchange::AllGatherVarcount] {
                assert_eq!(
                    expected(op, 0, ranks as u32, root, count, i, it),
                    *v,
                    "{op:?} {i}"
                );
            }
        }
        for r in 0..ranks {
            let first = varcount_displ(r) * count;
            for i in 0..varcount_weight(r) * count {
                assert_eq!(
                    expected(
                        Exchange::ScatterVarcount,
                        r as u32,
                        ranks as u32,
                        root,
                        count,
                        i,
                        it
                    ),
                    reduce_value(root, (first + i) as u32, it)
                );
            }
            // Rank r's all-to-all receive buffer: from each sender its part
            // for r, which starts at r's displacement in the sender's buffer.
            let len = varcount_weight(r) * count;
            for q in 0..ranks {
                for e in 0..len {
                    assert_eq!(
                        expected(
                            Exchange::AllToAllVarcount,
                            r as u32,
                            ranks as u32,
                            root,
                            count,
                            q * len + e,
                            it
                        ),
                        reduce_value(q as u32, (first + e) as u32, it)
                    );
                }
            }
        }
    }

    #[test]
    fn the_in_place_all_to_allv_is_what_a_reference_swap_gives() {
        use std::vec::Vec;
        let it = 3u32;
        for (ranks, count) in [(7usize, 3usize), (8, 1), (1, 2)] {
            let entry = |array: usize, r: usize| varcount_entry(ranks, count, array * ranks + r) as usize;
            // Rank p's partition: the packed arrays for an even p, arrays 6
            // and 7 for an odd one; parts packed in rank order, the part p
            // and q trade as long on both.
            let partition = |p: usize| {
                let first = if p % 2 == 1 { 6 } else { 0 };
                (0..ranks)
                    .map(|q| (entry(first, q), entry(first + 1, q)))
                    .collect::<Vec<_>>()
            };
            let buffers: Vec<Vec<f64>> = (0..ranks)
                .map(|p| {
                    let len =
                        exchange_regions(Exchange::AllToAllVarcountInPlace, p, 0, ranks, count).recv_len;
                    let mut at = 0;
                    for (q, &(c, d)) in partition(p).iter().enumerate() {
                        assert_eq!((c, d), (in_place_units(p, q) * count, at), "rank {p} part {q}");
                        assert_eq!(c, partition(q)[p].0, "parts {p} and {q}");
                        at += c;
                    }
                    assert_eq!(at, len, "rank {p}");
                    (0..len).map(|i| reduce_value(p as u32, i as u32, it)).collect()
                })
                .collect();
            // The swap: part q of rank p's buffer becomes rank q's part p.
            for p in 0..ranks {
                let mine = partition(p);
                for (q, &(c, d)) in mine.iter().enumerate() {
                    let theirs = partition(q)[p].1;
                    for e in 0..c {
                        assert_eq!(
                            expected(
                                Exchange::AllToAllVarcountInPlace,
                                p as u32,
                                ranks as u32,
                                0,
                                count,
                                d + e,
                                it
                            ),
                            buffers[q][theirs + e],
                            "rank {p}, part {q}, element {e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_expected_values_are_what_a_reference_exchange_gives() {
        let (ranks, count, root, it) = (6u32, 3usize, 2u32, 7u32);
        let send = |r: u32, i: usize| reduce_value(r, i as u32, it);
        for rank in 0..ranks {
            let c = count as u32;
            let rank_c = (rank * c) as usize;
            for i in 0..count * ranks as usize {
                let (q, e) = ((i / count) as u32, i % count);
                assert_eq!(
                    expected(Exchange::Gather, rank, ranks, root, count, i, it),
                    send(q, e)
                );
                assert_eq!(
                    expected(Exchange::AllToAll, rank, ranks, root, count, i, it),
                    send(q, rank_c + e)
                );
            }
            for i in 0..count {
                assert_eq!(
                    expected(Exchange::Scatter, rank, ranks, root, count, i, it),
                    send(root, rank_c + i)
                );
                let column: f64 = (0..ranks).map(|q| send(q, rank_c + i)).sum();
                assert_eq!(
                    expected(Exchange::ReduceScatter, rank, ranks, root, count, i, it),
                    column
                );
                let prefix: f64 = (0..=rank).map(|q| send(q, i)).sum();
                assert_eq!(expected(Exchange::Scan, rank, ranks, root, count, i, it), prefix);
            }
        }
        let wrong = [0.5, send(0, 1), send(0, 2)];
        assert_eq!(
            wrong_elements::<false>(Exchange::Scan, &wrong, 0, 0, ranks, root, count, it),
            1
        );
        // A gather's part checked by its own rank: elements `first..` of the
        // root's region.
        let part = [send(2, 0), send(2, 1), send(2, 2)];
        assert_eq!(
            wrong_elements::<false>(Exchange::Gather, &part, 2 * count, 2, ranks, root, count, it),
            0
        );
        assert_eq!(
            wrong_elements::<false>(Exchange::Gather, &part, count, 1, ranks, root, count, it),
            count as u64
        );
    }
}
