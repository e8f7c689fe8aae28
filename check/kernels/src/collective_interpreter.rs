//! An interpreter of encoded collective programs, for property tests of
//! the collectives on random communicators (tests/proptest_collectives.rs).
//!
//! # Encoding (`CollectiveProgramArgs::program`, words)
//! - word 0: the number of communicators `c` (at most [`MAX_COMMS`]);
//!   word 1: the number of steps `s`;
//! - then `c` communicator descriptors of [`COMM_WORDS`] words, `[kind,
//!   parent, table]`: `kind` one of the `COMM_*` constants, `parent` 0 for
//!   the world or `k` for the program's communicator `k - 1` (itself made
//!   from the world); for [`COMM_SPLIT`], `table` is the offset of two words
//!   per world rank, its colour (`u32::MAX`: `Color::undefined()`) and its
//!   key (an `i32`);
//! - then `s` steps of [`STEP_WORDS`] words, `[communicator, kind, root,
//!   count, type, seed, in_place]`: `communicator` 0 for the world, `k` for
//!   the program's communicator `k - 1` (ranks that are not members skip
//!   the step); `kind` one of the `K_*` constants; `root` a rank of the
//!   communicator (or not: then every member must fail with
//!   `MPI_ERR_ROOT`); `count` elements per rank (at most [`MAX_COUNT`]);
//!   `type` one of the `T_*` constants (the element type, and the
//!   reductions' operation: sum for the integers, the matrix product for
//!   [`Mat2`], non-commutative); `seed` the inputs' seed; `in_place` 1 for
//!   the `MPI_IN_PLACE` form where there is one.
//!
//! Communicators from the world are created first, in program order, then
//! those from a communicator, in program order: every rank makes the same
//! creations in the same order (a rank outside a parent skips its
//! creations).
//!
//! # Inputs
//! Element `i` of the operand of communicator rank `q` is
//! [`Element::make`]`(seed, q, i)`: word `w` of it is
//! [`value_word`]`(seed, q, i, w)`. A buffer with `size` parts (scatter's
//! root, all-to-all, reduce-scatter) numbers its elements `0..size ×
//! count`. Receive buffers start as [`Element::make`]`(FILL_SEED,
//! FILL_RANK, i)`, so an element left untouched shows.
//!
//! # Record (`CollectiveProgramArgs::out`)
//! Rank `r` writes from `r * stride`: per communicator [`COMM_RECORD_WORDS`]
//! words (creation class, rank, size; `0, NONE, NONE` for an undefined
//! colour; three [`NONE`] when the rank is not in the parent), then per
//! step [`STEP_RECORD_WORDS`] words: the class of the call and the
//! [`hash`] fold of its result buffer's words (0 when the rank has none:
//! barrier, a reduce's or gather's non-root; [`NONE`] after an error); two
//! [`NONE`] for a step the rank is not a member of.

use super::comm::hash;
use super::p2p::Mat2;
use super::NONE;
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::request::{self, Request};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Color, Error, GlobalSlice, SimpleCommunicator, World};

/// Communicator kind: `duplicate()` of the parent.
pub const COMM_DUPLICATE: u32 = 0;
/// Communicator kind: `split_by_color_with_key` with the program's table.
pub const COMM_SPLIT: u32 = 1;
/// Communicator kind: `split_shared()` (one per block).
pub const COMM_SHARED: u32 = 2;
/// Communicator kind: `split_by_warp()` (one per warp).
pub const COMM_WARP: u32 = 3;
/// Words per communicator descriptor.
pub const COMM_WORDS: usize = 3;
/// Most communicators of a program.
pub const MAX_COMMS: usize = 6;

/// `barrier`.
pub const K_BARRIER: u32 = 0;
/// `broadcast_into` from the root.
pub const K_BROADCAST: u32 = 1;
/// `reduce_into_root` (in place: `reduce_into_root_in_place`) at the root,
/// `reduce_into` elsewhere.
pub const K_REDUCE: u32 = 2;
/// `all_reduce_into` (in place: `all_reduce_in_place`).
pub const K_ALL_REDUCE: u32 = 3;
/// `gather_into_root` (in place: `gather_into_root_in_place`) at the root,
/// `gather_into` elsewhere.
pub const K_GATHER: u32 = 4;
/// `scatter_into_root` (in place: `scatter_into_root_in_place`) at the
/// root, `scatter_into` elsewhere.
pub const K_SCATTER: u32 = 5;
/// `all_gather_into` (in place: `all_gather_in_place`).
pub const K_ALL_GATHER: u32 = 6;
/// `all_to_all_into` (in place: `all_to_all_in_place`).
pub const K_ALL_TO_ALL: u32 = 7;
/// `scan_into` (in place: `scan_in_place`).
pub const K_SCAN: u32 = 8;
/// `exclusive_scan_into` (in place: `exclusive_scan_in_place`).
pub const K_EXCLUSIVE_SCAN: u32 = 9;
/// `reduce_scatter_block_into` (in place: `reduce_scatter_block_in_place`).
pub const K_REDUCE_SCATTER_BLOCK: u32 = 10;
/// `immediate_barrier`, waited at once.
pub const K_IBARRIER: u32 = 11;
/// `immediate_broadcast_into` from the root, waited at once.
pub const K_IBROADCAST: u32 = 12;
/// `immediate_reduce_into_root` (in place: `_in_place`) at the root,
/// `immediate_reduce_into` elsewhere, waited at once.
pub const K_IREDUCE: u32 = 13;
/// `immediate_all_reduce_into` (in place: `_in_place`), waited at once.
pub const K_IALL_REDUCE: u32 = 14;
/// `gather_varcount_into_root` (in place: `_in_place`) at the root,
/// `gather_varcount_into` elsewhere: rank `q` sends [`var_count`] elements,
/// which land at [`var_displ`] in part `q`'s slot of `count` elements.
pub const K_GATHERV: u32 = 15;
/// `scatter_varcount_into_root` (in place: `_in_place`) at the root,
/// `scatter_varcount_into` elsewhere: part `q` is [`var_count`] elements
/// of the root's send buffer at [`var_displ`].
pub const K_SCATTERV: u32 = 16;
/// `all_gather_varcount_into` (in place: `_in_place`), parts as
/// [`K_GATHERV`].
pub const K_ALL_GATHERV: u32 = 17;
/// `all_to_all_varcount_into`: rank `s` sends [`var_pair`]`(s, d)` elements
/// from its slot `d` to rank `d`, which puts them at [`var_displ`] of its
/// slot `s`; in place (`all_to_all_varcount_in_place`) the count between
/// `a` and `b` is [`var_pair`]`(min, max)`, the same both ways.
pub const K_ALL_TO_ALLV: u32 = 18;
/// `reduce_scatter_into` (in place: `reduce_scatter_in_place`) with counts
/// [`var_count`]: rank `r` gets its block of the reduction, in rank order.
pub const K_REDUCE_SCATTER: u32 = 19;
/// Number of step kinds.
pub const KINDS: u32 = 20;
/// Words per step.
pub const STEP_WORDS: usize = 7;

/// Element type `u32` (reductions: sum).
pub const T_U32: u32 = 0;
/// Element type `u64` (reductions: sum).
pub const T_U64: u32 = 1;
/// Element type [`Mat2`] (reductions: the matrix product, in rank order).
pub const T_MAT2: u32 = 2;

/// Most elements per rank of a step.
pub const MAX_COUNT: usize = 3;
/// Largest communicator a step may run on.
pub const MAX_RANKS: usize = 96;
const MAX_ELEMS: usize = MAX_RANKS * MAX_COUNT;

/// Words recorded per communicator.
pub const COMM_RECORD_WORDS: usize = 3;
/// Words recorded per step.
pub const STEP_RECORD_WORDS: usize = 2;
/// Seed of the receive buffers' initial contents.
pub const FILL_SEED: u32 = 0xF111_0000;
/// Rank of the receive buffers' initial contents.
pub const FILL_RANK: u32 = u32::MAX;

/// Arguments of [`SEMANTICS_COLLECTIVE_INTERPRETER`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CollectiveProgramArgs {
    /// Words of `out` per rank.
    pub stride: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// The encoded program.
    pub program: GlobalSlice<u32>,
    /// The records.
    pub out: GlobalSlice<u32>,
}

/// A varcount step's count of rank `q` (0 to `count`).
pub fn var_count(seed: u32, q: u32, count: u32) -> u32 {
    (seed >> 8).wrapping_add(q.wrapping_mul(7)) % (count + 1)
}

/// An all-to-allv step's count from `s` to `d` (0 to `count`).
pub fn var_pair(seed: u32, s: u32, d: u32, count: u32) -> u32 {
    (seed >> 8)
        .wrapping_add(s.wrapping_mul(3))
        .wrapping_add(d.wrapping_mul(5))
        % (count + 1)
}

/// Where a part of `c` elements starts in slot `q` of `count` elements: at
/// the slot's end, so that the slots' first elements are gaps.
pub fn var_displ(q: u32, c: u32, count: u32) -> u32 {
    q * count + (count - c)
}

/// Word `w` of element `i` of communicator rank `rank`'s input under `seed`.
pub fn value_word(seed: u32, rank: u32, i: u32, w: u32) -> u32 {
    let mut z = seed
        ^ rank.wrapping_mul(0x9E37_79B9)
        ^ i.wrapping_mul(0x85EB_CA6B)
        ^ w.wrapping_mul(0xC2B2_AE35).wrapping_add(0x27D4_EB2F);
    z ^= z >> 16;
    z = z.wrapping_mul(0x7FEB_352D);
    z ^= z >> 15;
    z = z.wrapping_mul(0x846C_A68B);
    z ^ (z >> 16)
}

/// An element type of the programs.
pub trait Element: Equivalence + Copy + Default {
    /// The reductions' operation.
    type Op: Operation<Self> + Copy;
    /// The reductions' operation.
    fn op() -> Self::Op;
    /// Element `i` of `rank`'s input under `seed` (from [`value_word`]).
    fn make(seed: u32, rank: u32, i: u32) -> Self;
    /// `h` folded with the element's words ([`hash`], low word first).
    fn fold(h: u32, e: &Self) -> u32;
}

impl Element for u32 {
    type Op = SystemOperation;
    fn op() -> SystemOperation {
        SystemOperation::sum()
    }
    fn make(seed: u32, rank: u32, i: u32) -> u32 {
        value_word(seed, rank, i, 0)
    }
    fn fold(h: u32, e: &u32) -> u32 {
        hash(h, *e)
    }
}

impl Element for u64 {
    type Op = SystemOperation;
    fn op() -> SystemOperation {
        SystemOperation::sum()
    }
    fn make(seed: u32, rank: u32, i: u32) -> u64 {
        value_word(seed, rank, i, 0) as u64 | (value_word(seed, rank, i, 1) as u64) << 32
    }
    fn fold(h: u32, e: &u64) -> u32 {
        hash(hash(h, *e as u32), (*e >> 32) as u32)
    }
}

/// The product of 2 × 2 matrices (wrapping): associative, not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatProduct;

impl Operation<Mat2> for MatProduct {
    fn check(&self) -> Result<(), Error> {
        Ok(())
    }
    fn apply(&self, left: &Mat2, right: &Mat2) -> Mat2 {
        left.mul(right)
    }
}

impl Element for Mat2 {
    type Op = MatProduct;
    fn op() -> MatProduct {
        MatProduct
    }
    fn make(seed: u32, rank: u32, i: u32) -> Mat2 {
        Mat2 {
            a: value_word(seed, rank, i, 0),
            b: value_word(seed, rank, i, 1),
            c: value_word(seed, rank, i, 2),
            d: value_word(seed, rank, i, 3),
        }
    }
    fn fold(h: u32, e: &Mat2) -> u32 {
        super::comm::hash_mat(h, e)
    }
}

/// A started non-blocking collective, waited: its start's or its
/// completion's error.
fn waited(r: Result<Request<'_, '_>, Error>) -> Result<(), Error> {
    r?.wait().map(|_| ())
}

/// One step, decoded.
#[derive(Clone, Copy)]
struct Step {
    kind: u32,
    root: u32,
    count: usize,
    ty: u32,
    seed: u32,
    in_place: bool,
}

/// Where a step's result lies in its buffers.
enum Shown {
    /// No result buffer at this rank.
    Nothing,
    /// The first `n` elements of the receive buffer.
    Recv(usize),
    /// The first `n` elements of the send buffer (an in-place scatter's root).
    Send(usize),
}

gpu_mpi_device::kernel! {
    /// Creates the program's communicators, then runs this rank's steps in order.
    pub static SEMANTICS_COLLECTIVE_INTERPRETER = fn semantics_collective_interpreter(world: &World, args: &CollectiveProgramArgs) -> Result<(), Error> {
        let p = &args.program;
        let comms = p.read(0)? as usize;
        if comms > MAX_COMMS {
            return Err(Error::OutOfBounds { index: comms as u32, len: MAX_COMMS as u32 });
        }
        let steps = p.read(1)? as usize;
        let out = Out::new(args, world.rank());
        let mut first: [Option<SimpleCommunicator<'_>>; MAX_COMMS] = [None; MAX_COMMS];
        for (k, slot) in first.iter_mut().enumerate().take(comms) {
            if p.read(2 + k * COMM_WORDS + 1)? == 0 {
                *slot = create(world, p, k, &out)?;
            }
        }
        let mut second: [Option<SimpleCommunicator<'_>>; MAX_COMMS] = [None; MAX_COMMS];
        for (k, slot) in second.iter_mut().enumerate().take(comms) {
            let parent = p.read(2 + k * COMM_WORDS + 1)? as usize;
            if parent == 0 {
                continue;
            }
            match first.get(parent - 1) {
                Some(Some(c)) => *slot = create(c, p, k, &out)?,
                _ => out.put(k * COMM_RECORD_WORDS, &[NONE; COMM_RECORD_WORDS])?,
            }
        }
        let base = 2 + comms * COMM_WORDS;
        for s in 0..steps {
            let at = base + s * STEP_WORDS;
            let sel = p.read(at)? as usize;
            let step = Step {
                kind: p.read(at + 1)?,
                root: p.read(at + 2)?,
                count: p.read(at + 3)? as usize,
                ty: p.read(at + 4)?,
                seed: p.read(at + 5)?,
                in_place: p.read(at + 6)? != 0,
            };
            let words = if sel == 0 {
                on_communicator(world, &step)
            } else {
                let k = sel - 1;
                match (first.get(k).copied().flatten(), second.get(k).copied().flatten()) {
                    (Some(c), _) | (None, Some(c)) => on_communicator(&c, &step),
                    (None, None) => [NONE; STEP_RECORD_WORDS],
                }
            };
            out.put(comms * COMM_RECORD_WORDS + s * STEP_RECORD_WORDS, &words)?;
        }
        Ok(())
    }
}

/// One rank's region of the records, written at offsets.
struct Out {
    out: GlobalSlice<u32>,
    /// The world rank.
    rank: usize,
    start: usize,
    stride: usize,
}

impl Out {
    fn new(args: &CollectiveProgramArgs, rank: i32) -> Out {
        Out {
            out: args.out,
            rank: rank as usize,
            start: rank as usize * args.stride as usize,
            stride: args.stride as usize,
        }
    }

    /// Writes `words` at offset `at` of the region; `OutOfBounds` past it.
    fn put(&self, at: usize, words: &[u32]) -> Result<(), Error> {
        if at + words.len() > self.stride {
            return Err(Error::OutOfBounds {
                index: (at + words.len()) as u32,
                len: self.stride as u32,
            });
        }
        for (j, &w) in words.iter().enumerate() {
            self.out.write(self.start + at + j, w)?;
        }
        Ok(())
    }
}

/// Makes the program's communicator `k` from `parent` and records it.
#[inline(never)]
fn create<'c, C: Communicator>(
    parent: &'c C,
    p: &GlobalSlice<u32>,
    k: usize,
    out: &Out,
) -> Result<Option<SimpleCommunicator<'c>>, Error> {
    let d = 2 + k * COMM_WORDS;
    let made = match p.read(d)? {
        COMM_DUPLICATE => parent.duplicate().map(Some),
        COMM_SPLIT => {
            let table = p.read(d + 2)? as usize;
            let color = p.read(table + 2 * out.rank)?;
            let key = p.read(table + 2 * out.rank + 1)? as i32;
            let color = if color == u32::MAX {
                Color::undefined()
            } else {
                Color::with_value(color)
            };
            parent.split_by_color_with_key(color, key)
        }
        COMM_SHARED => parent.split_shared().map(Some),
        COMM_WARP => parent.split_by_warp().map(Some),
        other => {
            return Err(Error::OutOfBounds {
                index: other,
                len: COMM_WARP + 1,
            })
        }
    };
    let words = match &made {
        Ok(Some(c)) => [0, c.rank() as u32, c.size() as u32],
        Ok(None) => [0, NONE, NONE],
        Err(e) => [e.class() as u32, NONE, NONE],
    };
    out.put(k * COMM_RECORD_WORDS, &words)?;
    Ok(made.ok().flatten())
}

/// Runs `step` on `c` with its element type: the class and the fold.
#[inline(never)]
fn on_communicator<C: Communicator + CommunicatorCollectives + ImmediateCollectives>(
    c: &C,
    step: &Step,
) -> [u32; STEP_RECORD_WORDS] {
    if matches!(
        step.kind,
        K_GATHERV | K_SCATTERV | K_ALL_GATHERV | K_ALL_TO_ALLV | K_REDUCE_SCATTER
    ) {
        return varcount(c, step);
    }
    match step.ty {
        T_U64 => typed::<C, u64>(c, step),
        T_MAT2 => typed::<C, Mat2>(c, step),
        _ => typed::<C, u32>(c, step),
    }
}

#[inline(never)]
fn typed<C: Communicator + CommunicatorCollectives + ImmediateCollectives, T: Element>(
    c: &C,
    step: &Step,
) -> [u32; STEP_RECORD_WORDS] {
    let (n, r) = (c.size() as usize, c.rank() as usize);
    let count = step.count;
    if n > MAX_RANKS || count > MAX_COUNT {
        let e = Error::OutOfBounds {
            index: (n * count) as u32,
            len: MAX_ELEMS as u32,
        };
        return [e.class() as u32, NONE];
    }
    let me = r as u32;
    let seed = step.seed;
    let mut send = [T::default(); MAX_ELEMS];
    let mut recv = [T::default(); MAX_ELEMS];
    for (i, v) in recv.iter_mut().enumerate().take(n * count) {
        *v = T::make(FILL_SEED, FILL_RANK, i as u32);
    }
    let whole = n * count;
    for (i, v) in send.iter_mut().enumerate().take(whole) {
        *v = T::make(seed, me, i as u32);
    }
    let root = c.process_at_rank(step.root as i32);
    let is_root = step.root as usize == r;
    let op = T::op();
    let place = step.in_place;
    let (result, shown) = match step.kind {
        K_BARRIER => (c.barrier(), Shown::Nothing),
        K_BROADCAST => {
            if is_root {
                recv[..count].copy_from_slice(&send[..count]);
            }
            (root.broadcast_into(&mut recv[..count]), Shown::Recv(count))
        }
        K_REDUCE if is_root && place => {
            recv[..count].copy_from_slice(&send[..count]);
            (
                root.reduce_into_root_in_place(&mut recv[..count], op),
                Shown::Recv(count),
            )
        }
        K_REDUCE if is_root => (
            root.reduce_into_root(&send[..count], &mut recv[..count], op),
            Shown::Recv(count),
        ),
        K_REDUCE => (root.reduce_into(&send[..count], op), Shown::Nothing),
        K_ALL_REDUCE if place => {
            recv[..count].copy_from_slice(&send[..count]);
            (c.all_reduce_in_place(&mut recv[..count], op), Shown::Recv(count))
        }
        K_ALL_REDUCE => (
            c.all_reduce_into(&send[..count], &mut recv[..count], op),
            Shown::Recv(count),
        ),
        K_GATHER if is_root && place => {
            recv[r * count..(r + 1) * count].copy_from_slice(&send[..count]);
            (
                root.gather_into_root_in_place(&mut recv[..whole]),
                Shown::Recv(whole),
            )
        }
        K_GATHER if is_root => (
            root.gather_into_root(&send[..count], &mut recv[..whole]),
            Shown::Recv(whole),
        ),
        K_GATHER => (root.gather_into(&send[..count]), Shown::Nothing),
        K_SCATTER if is_root && place => (
            root.scatter_into_root_in_place(&send[..whole]),
            Shown::Send(whole),
        ),
        K_SCATTER if is_root => (
            root.scatter_into_root(&send[..whole], &mut recv[..count]),
            Shown::Recv(count),
        ),
        K_SCATTER => (root.scatter_into(&mut recv[..count]), Shown::Recv(count)),
        K_ALL_GATHER if place => {
            recv[r * count..(r + 1) * count].copy_from_slice(&send[..count]);
            (c.all_gather_in_place(&mut recv[..whole]), Shown::Recv(whole))
        }
        K_ALL_GATHER => (
            c.all_gather_into(&send[..count], &mut recv[..whole]),
            Shown::Recv(whole),
        ),
        K_ALL_TO_ALL if place => {
            recv[..whole].copy_from_slice(&send[..whole]);
            (c.all_to_all_in_place(&mut recv[..whole]), Shown::Recv(whole))
        }
        K_ALL_TO_ALL => (
            c.all_to_all_into(&send[..whole], &mut recv[..whole]),
            Shown::Recv(whole),
        ),
        K_SCAN if place => {
            recv[..count].copy_from_slice(&send[..count]);
            (c.scan_in_place(&mut recv[..count], op), Shown::Recv(count))
        }
        K_SCAN => (
            c.scan_into(&send[..count], &mut recv[..count], op),
            Shown::Recv(count),
        ),
        K_EXCLUSIVE_SCAN if place => {
            recv[..count].copy_from_slice(&send[..count]);
            (
                c.exclusive_scan_in_place(&mut recv[..count], op),
                Shown::Recv(count),
            )
        }
        K_EXCLUSIVE_SCAN => (
            c.exclusive_scan_into(&send[..count], &mut recv[..count], op),
            Shown::Recv(count),
        ),
        K_REDUCE_SCATTER_BLOCK if place => {
            recv[..whole].copy_from_slice(&send[..whole]);
            (
                c.reduce_scatter_block_in_place(&mut recv[..whole], op),
                Shown::Recv(count),
            )
        }
        K_REDUCE_SCATTER_BLOCK => (
            c.reduce_scatter_block_into(&send[..whole], &mut recv[..count], op),
            Shown::Recv(count),
        ),
        K_IBARRIER => (request::scope(|s| waited(c.immediate_barrier(s))), Shown::Nothing),
        K_IBROADCAST => {
            if is_root {
                recv[..count].copy_from_slice(&send[..count]);
            }
            let r = request::scope(|s| waited(root.immediate_broadcast_into(s, &mut recv[..count])));
            (r, Shown::Recv(count))
        }
        K_IREDUCE if is_root && place => {
            recv[..count].copy_from_slice(&send[..count]);
            let r = request::scope(|s| {
                waited(root.immediate_reduce_into_root_in_place(s, &mut recv[..count], op))
            });
            (r, Shown::Recv(count))
        }
        K_IREDUCE if is_root => {
            let r = request::scope(|s| {
                waited(root.immediate_reduce_into_root(s, &send[..count], &mut recv[..count], op))
            });
            (r, Shown::Recv(count))
        }
        K_IREDUCE => (
            request::scope(|s| waited(root.immediate_reduce_into(s, &send[..count], op))),
            Shown::Nothing,
        ),
        K_IALL_REDUCE if place => {
            recv[..count].copy_from_slice(&send[..count]);
            let r = request::scope(|s| waited(c.immediate_all_reduce_in_place(s, &mut recv[..count], op)));
            (r, Shown::Recv(count))
        }
        K_IALL_REDUCE => {
            let r = request::scope(|s| {
                waited(c.immediate_all_reduce_into(s, &send[..count], &mut recv[..count], op))
            });
            (r, Shown::Recv(count))
        }
        other => (
            Err(Error::OutOfBounds {
                index: other,
                len: KINDS,
            }),
            Shown::Nothing,
        ),
    };
    record(result, shown, &send, &recv)
}

/// The record of a step: its class, and the fold of what `shown` names.
fn record<T: Element>(
    result: Result<(), Error>,
    shown: Shown,
    send: &[T],
    recv: &[T],
) -> [u32; STEP_RECORD_WORDS] {
    match result {
        Err(e) => [e.class() as u32, NONE],
        Ok(()) => {
            let h = match shown {
                Shown::Nothing => 0,
                Shown::Recv(k) => recv[..k].iter().fold(0, T::fold),
                Shown::Send(k) => send[..k].iter().fold(0, T::fold),
            };
            [0, h]
        }
    }
}

/// The varcount steps ([`K_GATHERV`] to [`K_REDUCE_SCATTER`]), on `u32`
/// elements whatever the step's type (one instance per communicator type:
/// three more would triple this function's share of ptxas's time, for
/// rank order that the chapter 6 cases check with matrices).
#[inline(never)]
fn varcount<C: Communicator + CommunicatorCollectives>(c: &C, step: &Step) -> [u32; STEP_RECORD_WORDS] {
    type T = u32;
    let (n, r) = (c.size() as usize, c.rank() as usize);
    let (count, seed, place) = (step.count, step.seed, step.in_place);
    if n > MAX_RANKS || count > MAX_COUNT {
        let e = Error::OutOfBounds {
            index: (n * count) as u32,
            len: MAX_ELEMS as u32,
        };
        return [e.class() as u32, NONE];
    }
    let whole = n * count;
    let mut send = [0u32; MAX_ELEMS];
    let mut recv = [0u32; MAX_ELEMS];
    for (i, v) in recv.iter_mut().enumerate().take(whole) {
        *v = T::make(FILL_SEED, FILL_RANK, i as u32);
    }
    for (i, v) in send.iter_mut().enumerate().take(whole) {
        *v = T::make(seed, r as u32, i as u32);
    }
    let me = r as u32;
    let root = c.process_at_rank(step.root as i32);
    let is_root = step.root as usize == r;
    let mut counts = [0i32; MAX_RANKS];
    let mut displs = [0i32; MAX_RANKS];
    let mut scounts = [0i32; MAX_RANKS];
    let mut sdispls = [0i32; MAX_RANKS];
    let k = count as u32;
    for q in 0..n {
        let qq = q as u32;
        let (cq, sq) = match step.kind {
            K_ALL_TO_ALLV if place => (var_pair(seed, me.min(qq), me.max(qq), k), 0),
            K_ALL_TO_ALLV => (var_pair(seed, qq, me, k), var_pair(seed, me, qq, k)),
            _ => (var_count(seed, qq, k), 0),
        };
        counts[q] = cq as i32;
        displs[q] = var_displ(qq, cq, k) as i32;
        scounts[q] = sq as i32;
        sdispls[q] = (qq * k) as i32;
    }
    let (counts, displs) = (&counts[..n], &displs[..n]);
    let mine = counts[r] as usize;
    let at = displs[r] as usize;
    let op = T::op();
    let (result, shown) = match step.kind {
        K_GATHERV if is_root && place => {
            recv[at..at + mine].copy_from_slice(&send[..mine]);
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (
                root.gather_varcount_into_root_in_place(&mut part),
                Shown::Recv(whole),
            )
        }
        K_GATHERV if is_root => {
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (
                root.gather_varcount_into_root(&send[..mine], &mut part),
                Shown::Recv(whole),
            )
        }
        K_GATHERV => (root.gather_varcount_into(&send[..mine]), Shown::Nothing),
        K_SCATTERV if is_root && place => {
            let part = Partition::new(&send[..whole], counts, displs);
            (
                root.scatter_varcount_into_root_in_place(&part),
                Shown::Send(whole),
            )
        }
        K_SCATTERV if is_root => {
            let part = Partition::new(&send[..whole], counts, displs);
            (
                root.scatter_varcount_into_root(&part, &mut recv[..mine]),
                Shown::Recv(mine),
            )
        }
        K_SCATTERV => (root.scatter_varcount_into(&mut recv[..mine]), Shown::Recv(mine)),
        K_ALL_GATHERV if place => {
            recv[at..at + mine].copy_from_slice(&send[..mine]);
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (c.all_gather_varcount_in_place(&mut part), Shown::Recv(whole))
        }
        K_ALL_GATHERV => {
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (
                c.all_gather_varcount_into(&send[..mine], &mut part),
                Shown::Recv(whole),
            )
        }
        K_ALL_TO_ALLV if place => {
            for q in 0..n {
                let (d, len) = (displs[q] as usize, counts[q] as usize);
                recv[d..d + len].copy_from_slice(&send[q * count..q * count + len]);
            }
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (c.all_to_all_varcount_in_place(&mut part), Shown::Recv(whole))
        }
        K_ALL_TO_ALLV => {
            let out = Partition::new(&send[..whole], &scounts[..n], &sdispls[..n]);
            let mut part = PartitionMut::new(&mut recv[..whole], counts, displs);
            (c.all_to_all_varcount_into(&out, &mut part), Shown::Recv(whole))
        }
        _ => {
            let total = counts.iter().map(|&x| x as usize).sum::<usize>();
            if place {
                recv[..total].copy_from_slice(&send[..total]);
                (
                    c.reduce_scatter_in_place(&mut recv[..total], counts, op),
                    Shown::Recv(mine),
                )
            } else {
                (
                    c.reduce_scatter_into(&send[..total], &mut recv[..mine], counts, op),
                    Shown::Recv(mine),
                )
            }
        }
    };
    record(result, shown, &send, &recv)
}
