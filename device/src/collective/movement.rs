//! Gather, scatter, all-gather and all-to-all (MPI 4.1 §6.5–§6.8), fixed
//! and varcount, staged through the rank scratch cells of the world memory.
//!
//! Each collective starts with the argument [agreement](super::agreement)
//! (varcount forms first check their counts in one extra staging round:
//! the root, or every rank for all-to-all, compares the counts it was given
//! with what the other ranks pass), then moves the data in rounds of
//! `collective_bytes` per rank: in a round, the ranks that send write their
//! next chunk into their own cell (a scatter's root into every rank's
//! cell), one world barrier publishes the cells, and every rank that
//! receives copies what it needs out of the cells. Rounds alternate between
//! the two halves of the staging regions like every collective round, so a
//! round needs no closing barrier.
//!
//! A world gather or scatter whose root buffer is plain bytes in global
//! memory stages no data: the root publishes the buffer (and a varcount
//! root its partition), every rank copies its own part straight into or out
//! of it, and one world barrier, at which only the root's block waits,
//! ends the call ([`World::publish_buffer`],
//! [`CountStage`]). A root buffer no other thread can reach (a stack array
//! on the GPU, a typed view) goes through the cells, the root copying all
//! `size × count` elements itself. An all-gather with fixed counts and an
//! all-to-all not in place do the same when every rank's receive buffer
//! is reachable (the agreement tells: [`Agreement::direct`]): every rank
//! publishes its buffer and copies its parts into the others'
//! ([`World::push_parts`]); otherwise, and for the varcount and in-place
//! all-to-all, every rank copies its own result from the cells. A
//! reduce-scatter whose send buffers are all reachable (`scan.rs`) reads
//! them the other way round: every rank folds its block out of every
//! rank's buffer ([`World::pull_fold`]).

use super::agreement::{checksum, Agreement, AGREEMENT_END, CHECK, COUNT, LEN, ROOT, TYPE, VARCOUNT_CALL};
use super::operation::Operation;
use crate::buffers::Side;
use crate::communicator::{Communicator, World};
use crate::datatype::{Buffer, BufferMut, Datatype, Equivalence, TypedBuffer};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::polling::{Call as WaitCall, WaitFor};
use core::cell::Cell;

/// A buffer split into one part per rank by counts and displacements (in
/// elements), as a send buffer (rsmpi's `Partition`).
///
/// Standard section: MPI 4.1 §6.5 (`MPI_Gatherv`'s `displs`), §6.6, §6.7, §6.8.
pub struct Partition<'a, B: ?Sized> {
    pub(crate) buf: &'a B,
    pub(crate) counts: &'a [i32],
    pub(crate) displs: &'a [i32],
}

impl<'a, B: ?Sized> Partition<'a, B> {
    /// Part `r` is `counts[r]` elements of `buf` from element `displs[r]`.
    /// Both arrays need one entry per rank; a negative count makes the
    /// collective fail with `MPI_ERR_COUNT`, a part outside `buf` or a
    /// negative displacement with `MPI_ERR_ARG`.
    pub fn new(buf: &'a B, counts: &'a [i32], displs: &'a [i32]) -> Self {
        Partition { buf, counts, displs }
    }
    /// The counts.
    pub fn counts(&self) -> &[i32] {
        self.counts
    }
    /// The displacements.
    pub fn displs(&self) -> &[i32] {
        self.displs
    }
}

/// A buffer split into one part per rank by counts and displacements (in
/// elements), as a receive buffer (rsmpi's `PartitionMut`).
///
/// Standard section: MPI 4.1 §6.5 (`MPI_Gatherv`'s `displs`), §6.6, §6.7, §6.8.
pub struct PartitionMut<'a, B: ?Sized> {
    pub(crate) buf: &'a mut B,
    pub(crate) counts: &'a [i32],
    pub(crate) displs: &'a [i32],
}

impl<'a, B: ?Sized> PartitionMut<'a, B> {
    /// Part `r` is `counts[r]` elements of `buf` from element `displs[r]`.
    /// Both arrays need one entry per rank; a negative count makes the
    /// collective fail with `MPI_ERR_COUNT`, a part outside `buf` or a
    /// negative displacement with `MPI_ERR_ARG`.
    pub fn new(buf: &'a mut B, counts: &'a [i32], displs: &'a [i32]) -> Self {
        PartitionMut { buf, counts, displs }
    }
    /// The counts.
    pub fn counts(&self) -> &[i32] {
        self.counts
    }
    /// The displacements.
    pub fn displs(&self) -> &[i32] {
        self.displs
    }
}

/// A receive buffer seen as a send buffer of its datatype (a view keeps
/// its typed layout).
pub(crate) struct Typed<'a> {
    bytes: &'a [u8],
    dtype: Datatype,
    count: usize,
    typed: Option<TypedBuffer>,
}

impl<'a> Typed<'a> {
    /// `buf` as a send buffer.
    pub(crate) fn of<B: BufferMut + ?Sized>(buf: &'a mut B) -> Self {
        let (dtype, count) = (buf.datatype(), buf.count());
        let typed = buf.typed_mut().copied();
        Typed {
            bytes: buf.as_bytes_mut(),
            dtype,
            count,
            typed,
        }
    }
}

impl Buffer for Typed<'_> {
    fn datatype(&self) -> Datatype {
        self.dtype
    }
    fn as_bytes(&self) -> &[u8] {
        self.bytes
    }
    fn count(&self) -> usize {
        self.count
    }
    fn typed(&self) -> Option<&TypedBuffer> {
        self.typed.as_ref()
    }
}

/// Where each rank's part lies in a buffer, in bytes.
#[derive(Clone, Copy)]
pub(crate) enum Parts<'a> {
    /// Parts of this many bytes, back to back in rank order.
    Even(usize),
    /// Counts and displacements in elements of `size` bytes (checked by
    /// [`check_partition`] first).
    Var {
        counts: &'a [i32],
        displs: &'a [i32],
        size: usize,
    },
}

impl Parts<'_> {
    /// Byte offset and byte length of part `q`.
    pub(crate) fn get(&self, q: usize) -> (usize, usize) {
        match *self {
            Parts::Even(b) => (q * b, b),
            Parts::Var { counts, displs, size } => {
                let c = counts.get(q).copied().unwrap_or(0).max(0) as usize;
                let d = displs.get(q).copied().unwrap_or(0).max(0) as usize;
                (d * size, c * size)
            }
        }
    }
}

/// Checks that `counts` and `displs` have one entry per rank, that no count
/// is negative (`MPI_ERR_COUNT`) and that every part lies inside a buffer
/// of `len` elements (`MPI_ERR_ARG`); returns the largest count.
pub(crate) fn check_partition(
    counts: &[i32],
    displs: &[i32],
    len: usize,
    ranks: usize,
) -> Result<usize, Error> {
    partition_lengths(counts, displs, ranks)?;
    let mut largest = 0;
    for (rank, (c, d)) in counts.iter().zip(displs).enumerate() {
        // Each entry's two loads, which the branches on them wait for: the
        // check's cost on a GPU, `2 × ranks` loads by one thread.
        crate::shim::independent(|| {
            crate::shim::note_global(c as *const i32 as *const u8, 4, false);
            crate::shim::note_global(d as *const i32 as *const u8, 4, false);
        });
        let (c, d) = (*c, *d);
        if c < 0 {
            return Err(Error::NegativeCount {
                rank: rank as u32,
                count: c,
            });
        }
        let end = d as i64 + c as i64;
        if d < 0 || end > len as i64 {
            return Err(Error::OutOfBounds {
                index: end.clamp(0, u32::MAX as i64) as u32,
                len: saturating_u32(len),
            });
        }
        largest = largest.max(c as usize);
    }
    Ok(largest)
}

/// A varcount root's check of its partition (`counts` and `displs` over
/// `len` elements) before the counts round. Where it publishes them
/// (`published`: its buffer and both arrays in every rank's reach), only
/// the arrays' lengths: each rank then checks its own entry
/// ([`World::counts_round`]), and a root that the agreement finds failed
/// checks every entry for its own error ([`World::agree_varcount`]).
/// Otherwise every entry ([`check_partition`]), and the longest part for
/// the staging rounds (0 where published: only those rounds read it).
fn root_partition(
    published: bool,
    counts: &[i32],
    displs: &[i32],
    len: usize,
    ranks: usize,
) -> Result<usize, Error> {
    if !published {
        return check_partition(counts, displs, len, ranks);
    }
    partition_lengths(counts, displs, ranks).map(|()| 0)
}

/// A partition's arrays hold one entry per rank.
fn partition_lengths(counts: &[i32], displs: &[i32], ranks: usize) -> Result<(), Error> {
    if counts.len() != ranks || displs.len() != ranks {
        return Err(Error::CountMismatch {
            count: saturating_u32(counts.len().min(displs.len())),
            expected: saturating_u32(ranks),
        });
    }
    Ok(())
}

/// A part of at most 16 plain bytes at `p` as two little-endian words (the
/// second 0 for a part of at most 8): the varcount paths carry such a part
/// in registers from the batch that loads it to its stores.
///
/// # Safety
/// `p` readable for `len <= 16` bytes.
#[inline(always)]
unsafe fn load_small_part(p: *const u8, len: usize) -> [u64; 2] {
    // SAFETY: the caller's; each call reads at most the bytes it names.
    unsafe {
        [
            crate::shim::load_head_bytes(p, len.min(8)),
            crate::shim::load_head_bytes(p.wrapping_add(8), len.saturating_sub(8)),
        ]
    }
}

/// Stores the first `len <= 16` bytes of a [`load_small_part`] at `dst`.
///
/// # Safety
/// `dst` writable for `len` bytes, ordered as the part's copy would be.
#[inline(always)]
unsafe fn store_small_part(dst: *mut u8, part: [u64; 2], len: usize) {
    // SAFETY: the caller's; each call writes at most the bytes it names.
    unsafe {
        crate::shim::store_head_bytes(dst, part[0], len.min(8));
        crate::shim::store_head_bytes(dst.wrapping_add(8), part[1], len.saturating_sub(8));
    }
}

/// The class of the fault [`check_partition`] would find in one entry of a
/// partition: `count` elements of `size` bytes at element `displ` of a
/// buffer of `len` elements. A negative count, or a part of `u32::MAX`
/// bytes or more (which fails as a longest part does in an agreement's
/// 32-bit `LEN` slot: docs/limits.md), is `MPI_ERR_COUNT`; a part outside
/// the buffer `MPI_ERR_ARG`. For the paths that check each entry where
/// they load it (a varcount rank's own entry of its root's partition,
/// every entry of an all-to-allv's partitions as its part moves); a rank
/// whose call fails then checks its own partitions whole for its error.
fn entry_fault(count: i32, displ: i32, len: u64, size: usize) -> Option<ErrorClass> {
    let end = i64::from(displ) + i64::from(count);
    if count < 0 || count as u64 * size as u64 >= u64::from(u32::MAX) {
        Some(ErrorClass::Count)
    } else if displ < 0 || end > len.min(i64::MAX as u64) as i64 {
        Some(ErrorClass::Arg)
    } else {
        None
    }
}

/// The in-place root's own count in its partition's `counts` (0 where
/// the entry is missing or negative: `check_partition` fails those).
fn own_count(counts: &[i32], root: i32) -> u32 {
    counts.get(root as usize).copied().unwrap_or(0).max(0) as u32
}

/// A rank's own count as the counts round stages it (a 32-bit word,
/// compared with a partition's `i32` entry as an `i32`): a count above
/// `i32::MAX`, which no entry can equal, is staged as 2^31 (`i32::MIN`
/// when read back), so that it equals no entry instead of one its low
/// bits might.
fn staged_count(n: usize) -> u32 {
    n.min(1 << 31) as u32
}

fn type_error(root: i32, got: Datatype, expected: Datatype) -> Error {
    Error::TypeMismatch {
        status: crate::status::Status {
            source: root,
            tag: -1,
            bytes: 0,
            datatype: got.id,
        },
        expected: expected.id,
    }
}

/// Receive buffers whose addresses [`World::push_parts`] loads in one batch.
const PUSH_BATCH: usize = 8;

/// Pairs whose parts of up to 16 bytes an in-place all-to-allv's swapper
/// loads in one batch (both sides: four words a pair in flight).
const SMALL_SWAPS: usize = 4;

/// Lanes of a warp: the group of ranks an in-place all-to-all's swaps keep
/// together ([`SwapOrder`]).
const WARP: usize = 32;

/// Which pairs of ranks' parts rank `p` swaps in an in-place all-to-all
/// whose buffers every rank reaches ([`World::swap_parts`],
/// [`World::swap_varcount_parts`]), and in which order. The ranks form
/// groups of [`WARP`] (a warp's lanes, where the block's size is a multiple
/// of 32); of two groups `d` apart (of `g`) the one with `2 d < g` (at `2 d
/// = g`, the lower) swaps all their pairs, and inside a group the lower
/// rank: every pair once, about `n / 2` pairs a rank. The ranks of a group
/// go through the partners in the same order, from the next group's first
/// rank on, their own group last, so that the lanes of a warp that swap
/// with `q` at once touch consecutive parts of `q`'s buffer (coalesced),
/// and the swaps inside the group, whose number differs from lane to lane,
/// come after all the others.
#[derive(Clone, Copy)]
struct SwapOrder {
    p: usize,
    n: usize,
    group: usize,
    groups: usize,
}

impl SwapOrder {
    fn of(p: usize, n: usize) -> Self {
        SwapOrder {
            p,
            n,
            group: p / WARP,
            groups: n.div_ceil(WARP),
        }
    }

    /// The partner in place `j` (below `n`) of the order.
    fn partner(self, j: usize) -> usize {
        ((self.group + 1) % self.groups * WARP + j) % self.n
    }

    /// Whether this rank swaps its pair with rank `q`.
    fn swaps(self, q: usize) -> bool {
        let gq = q / WARP;
        let d = (gq + self.groups - self.group) % self.groups;
        if d == 0 {
            self.p < q
        } else {
            2 * d < self.groups || (2 * d == self.groups && self.group < gq)
        }
    }
}

/// Swaps `len` bytes at `ours` and `theirs` (apart) through `tmp` (`cb`
/// bytes, the caller's own), a copy in and two out per run of `cb`: the
/// swappers' parts too long for their registers (the in-place all-to-all's
/// above 8 bytes, the all-to-allv's above 16).
///
/// # Safety
/// Both ranges valid for `len` bytes, touched by nobody else for the call;
/// `tmp` valid for `cb > 0` bytes apart from both.
unsafe fn swap_bytes(ours: *mut u8, theirs: *mut u8, len: usize, tmp: *mut u8, cb: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        let mut at = 0;
        while at < len {
            let m = (len - at).min(cb);
            let (a, b) = (ours.add(at), theirs.add(at));
            crate::shim::copy_bytes(tmp, a, m);
            crate::shim::copy_bytes(a, b, m);
            crate::shim::copy_bytes(b, tmp, m);
            at += cb;
        }
    }
}

/// The end of an all-to-allv's published receive buffer, counts,
/// displacements and buffer length in a rank's cell ([`World::publish_partition`]): a world
/// whose cells are smaller stages the parts.
const PARTITION_END: usize = AGREEMENT_END + 32;

/// Ranks whose send buffers [`World::pull_fold`] reads in one batch.
const FOLD_BATCH: usize = 16;

/// The rooted collectives of this module, as the agreement's `CHECK` slot
/// and a published buffer name them: ranks that call different ones never
/// agree, so never copy into or out of a buffer another collective
/// published.
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rooted {
    Gather = 1,
    GatherVarcount = 2,
    Scatter = 3,
    ScatterVarcount = 4,
}

impl World {
    /// [`World::reachable`] for a buffer with its counts and displacements:
    /// the buffer's address when every rank can reach all three, else
    /// `None`.
    fn reachable_partition(&self, buf: Side, counts: &[i32], displs: &[i32]) -> Option<*mut u8> {
        let base = self.reachable(Some(buf));
        let shared = |p: *const i32| crate::shim::is_shared_address(p as *const u8);
        (!base.is_null() && shared(counts.as_ptr()) && shared(displs.as_ptr())).then_some(base)
    }

    /// The address a root publishes for its buffer: plain bytes in global
    /// memory, which every rank can reach, or null (a buffer in the root's
    /// local memory, a stack array on the GPU; a typed view; any buffer in
    /// a world across processes, whose other processes' ranks cannot reach
    /// it: docs/distributed.md): the parts are then staged through the
    /// cells and the root copies them alone.
    pub(super) fn reachable(&self, side: Option<Side>) -> *mut u8 {
        match side {
            _ if cfg!(feature = "distributed") && self.across_processes() => core::ptr::null_mut(),
            Some(Side::Plain(p)) if crate::shim::is_shared_address(p) => p,
            _ => core::ptr::null_mut(),
        }
    }
}

/// What a rank stages in the counts round of a varcount gather or scatter:
/// its count, and at the root its buffer and partition when every rank can
/// reach them, for each rank to check its own count and copy its own part.
#[repr(C)]
#[derive(Clone, Copy)]
struct CountStage {
    /// The staging rank's count.
    count: u32,
    /// The collective of a root that published ([`Rooted`]), else 0.
    call: u32,
    /// The staging round the root published in.
    round: u32,
    _pad: u32,
    /// The root's buffer, or null.
    base: *mut u8,
    /// The root's counts (`ranks` entries).
    counts: *const i32,
    /// The root's displacements (`ranks` entries).
    displs: *const i32,
    /// The root's buffer's length in elements, for each rank's check of
    /// its own entry.
    len: u64,
}

const _: () =
    assert!(core::mem::size_of::<CountStage>() == 48 && core::mem::offset_of!(CountStage, base) == 16);

/// A root's buffer, published for every rank to copy its part, and where
/// this rank's part lies in it.
#[derive(Clone, Copy)]
struct Direct {
    base: *mut u8,
    /// This rank's part: its byte offset in the root's buffer, from the
    /// root's displacements (loaded once, with the count the counts round
    /// compares).
    own: usize,
    /// A gatherv's part of up to 16 plain bytes, loaded with the root's
    /// entries when the counts round was given it (its `send`).
    head: [u64; 2],
}

/// What a rank found in a varcount gather's or scatter's counts round
/// ([`World::counts_round`]).
struct CountsRound {
    /// The root's published buffer, and where this rank's part lies in it.
    direct: Option<Direct>,
    /// A count mismatch this rank found (its own error).
    wrong: Option<Error>,
    /// The class of a fault of the root's entry for this rank (the
    /// root's error: `check_partition`'s for that entry).
    fault: Option<ErrorClass>,
}

/// What a varcount collective's ranks agree on besides their errors
/// ([`World::agree_varcount`]).
#[derive(Clone, Copy)]
struct VarcountCall {
    /// The root (-1: none).
    root: i32,
    /// The collective ([`Rooted`], or [`VARCOUNT_CALL`] for an all-to-allv).
    check: u32,
    /// The datatype's id.
    datatype: u32,
    /// This rank's longest part, in bytes.
    longest: usize,
    /// Whether this rank's buffers are out of the other ranks' reach.
    staged: bool,
    /// The class of a fault this rank found in the root's arguments (its
    /// entry of the root's partition: [`World::counts_round`]).
    fault: Option<ErrorClass>,
}

impl CountStage {
    fn new(count: u32) -> Self {
        CountStage {
            count,
            call: 0,
            round: 0,
            _pad: 0,
            base: core::ptr::null_mut(),
            counts: core::ptr::null(),
            displs: core::ptr::null(),
            len: 0,
        }
    }

    /// The stage as the 64-bit words of its layout (`repr(C)`, little
    /// endian), as a cell holds it.
    fn words(&self) -> [u64; 6] {
        [
            u64::from(self.count) | u64::from(self.call) << 32,
            u64::from(self.round) | u64::from(self._pad) << 32,
            self.base as u64,
            self.counts as u64,
            self.displs as u64,
            self.len,
        ]
    }

    /// The root's stage: its buffer (`base`, reachable with `counts` and
    /// `displs`: [`World::reachable_partition`]) of `len` elements, for
    /// the staging round that begins next.
    fn publish(
        &mut self,
        world: &World,
        call: Rooted,
        base: *mut u8,
        counts: &[i32],
        displs: &[i32],
        len: usize,
    ) {
        self.call = call as u32;
        self.round = world.staging_round.get().wrapping_add(1);
        self.base = base;
        self.counts = counts.as_ptr();
        self.displs = displs.as_ptr();
        self.len = len as u64;
    }
}

impl World {
    /// Staging rounds of a gather or all-gather: each round, every rank with
    /// a `send` (side, first packed byte, bytes) stages its next
    /// `collective_bytes`, a world barrier publishes the cells, and `take(q,
    /// offset, cell, round_bytes)` (the root's, or every rank's) copies from
    /// rank `q`'s cell the part of its data from `offset` on. `max_bytes`
    /// (the largest part, agreed) sets the number of rounds.
    ///
    /// # Safety
    /// `send` readable for its length during the call; `take` copies at most
    /// `round_bytes` bytes from the cell. A typed `send` whose walk fails
    /// (its encoding changed) stages what it could and the call returns
    /// `MPI_ERR_INTERN` after the last round.
    unsafe fn gather_rounds<F>(
        &self,
        send: Option<(Side, usize, usize)>,
        max_bytes: usize,
        mut take: Option<F>,
        what: WaitFor,
    ) -> Result<(), Error>
    where
        F: FnMut(u32, usize, *const u8, usize),
    {
        let cb = self.collective_bytes();
        let rounds = max_bytes.div_ceil(cb);
        let mut walked = true;
        for round in 0..rounds {
            let lo = round * cb;
            self.begin_staging_round();
            if let Some((side, at, len)) = send {
                let m = len.saturating_sub(lo).min(cb);
                if m > 0 {
                    // SAFETY: our own cell holds `collective_bytes`; nobody
                    // else touches it before the barrier; `lo + m <= len`
                    // packed bytes from `at`.
                    walked &= unsafe { side.read(at + lo, self.rank_cell(self.rank), m) };
                }
            }
            self.world_barrier(what)?;
            if let Some(t) = take.as_mut() {
                for q in 0..self.ranks() {
                    t(q, lo, self.rank_cell(q) as *const u8, cb);
                }
            }
        }
        if walked {
            Ok(())
        } else {
            Err(Error::Intern)
        }
    }

    /// The root's side of a fixed-count gather or scatter, and every
    /// rank's of an all-gather or all-to-all, before the agreement: writes
    /// the address of its buffer (or null: see [`World::reachable`]) after the
    /// agreement's data in its cell of the round that begins next, the
    /// agreement's, whose world barriers publish it.
    pub(super) fn publish_buffer(&self, buf: *mut u8) {
        // SAFETY: our own cell of the next round, `AGREEMENT_END + 8 <= 64
        // <= collective_bytes` bytes, 8-byte aligned (cells are 64-byte
        // aligned, `AGREEMENT_END` a multiple of 8); no other rank reads or
        // writes it before that round's barrier (`next_rank_cell`), and the
        // agreement round writes only the bytes before `AGREEMENT_END`.
        unsafe {
            crate::shim::store_payload_u64(self.next_rank_cell(self.rank).add(AGREEMENT_END), buf as u64)
        };
    }

    /// After an agreement that found every rank naming the valid `root` in
    /// the same collective: the address the root published
    /// ([`publish_buffer`](Self::publish_buffer)), or null.
    fn published_buffer(&self, root: u32) -> *mut u8 {
        // SAFETY: the root's cell of the agreement round (the current one),
        // written before the round's world barrier and not again before the
        // next round's; the agreement does not touch these bytes.
        unsafe { crate::shim::load_payload_u64(self.published_at(root)) as *mut u8 }
    }

    /// The root's buffer after a gather's or scatter's agreement
    /// ([`World::agree_fetching`]): the address that came with its keys,
    /// or else the one `root` published, loaded now.
    fn root_buffer(&self, fetched: Option<u64>, root: u32) -> *mut u8 {
        match fetched {
            Some(address) => address as *mut u8,
            None => self.published_buffer(root),
        }
    }

    /// The buffers that ranks `rank(0) .. rank(N - 1)` published
    /// ([`publish_buffer`](Self::publish_buffer)) in the agreement round
    /// (the current one), loaded as one batch of independent loads, because
    /// a chain of `size` dependent loads is what would bound a loop over
    /// the ranks on a GPU.
    #[inline(always)]
    fn published_buffers<const N: usize>(&self, rank: impl Fn(usize) -> usize) -> [*mut u8; N] {
        let mut at = [core::ptr::null_mut::<u8>(); N];
        crate::shim::independent(|| {
            for (i, at) in at.iter_mut().enumerate() {
                *at = self.published_buffer(rank(i) as u32);
            }
        });
        at
    }

    /// Where `root` (in range) publishes its buffer for the current
    /// staging round ([`publish_buffer`](Self::publish_buffer) writes it
    /// one round ahead): 8 bytes of its cell, 8-byte aligned.
    #[inline(always)]
    pub(super) fn published_at(&self, root: u32) -> *const u8 {
        // SAFETY: `AGREEMENT_END + 8 <= 64 <= collective_bytes`: inside the
        // root's cell.
        unsafe { self.rank_cell(root).add(AGREEMENT_END) }
    }

    /// The data movement of an all-gather or all-to-all whose ranks all
    /// published their receive buffers (the agreement found them
    /// [`direct`](Agreement::direct)): for each rank `d`, `put(d, buffer,
    /// head)` copies this rank's data for `d` into `buffer`, rank `d`'s
    /// receive buffer; then one world barrier tells every rank that its
    /// buffer is complete. The published addresses are loaded
    /// [`PUSH_BATCH`] at a time as one batch of independent loads, each with
    /// the word at `head(d)` (`head`: the part for `d` when it is one aligned
    /// word, so that `put` stores it from a register), because a chain of
    /// `size` dependent loads is what would bound this loop on a GPU.
    ///
    /// # Safety
    /// After an agreement round in which every rank published a receive
    /// buffer ([`publish_buffer`](Self::publish_buffer)); `head(d)`, when
    /// it is `Some`, is valid for 8 bytes and 8-byte aligned; `put` writes
    /// only this rank's part of `buffer`, which no other rank writes.
    unsafe fn push_parts(
        &self,
        head: impl Fn(usize) -> Option<*const u8>,
        mut put: impl FnMut(usize, *mut u8, u64) -> bool,
        what: WaitFor,
    ) -> Result<(), Error> {
        let n = self.ranks() as usize;
        let mut walked = true;
        let mut d0 = 0;
        while d0 < n {
            let mut to = [core::ptr::null_mut::<u8>(); PUSH_BATCH];
            let mut heads = [0u64; PUSH_BATCH];
            crate::shim::independent(|| {
                // Past the last rank the batch repeats it: every load is
                // issued, with no branch between them.
                for i in 0..PUSH_BATCH {
                    let d = (d0 + i).min(n - 1);
                    to[i] = self.published_buffer(d as u32);
                    if let Some(h) = head(d) {
                        // SAFETY: the caller's contract on `head`.
                        heads[i] = unsafe { crate::shim::load_payload_u64(h) };
                    }
                }
            });
            for i in 0..PUSH_BATCH.min(n - d0) {
                walked &= put(d0 + i, to[i], heads[i]);
            }
            d0 += PUSH_BATCH;
        }
        self.world_barrier(what)?;
        if walked {
            Ok(())
        } else {
            Err(Error::Intern)
        }
    }

    /// The data movement and fold of a reduce-scatter whose ranks all
    /// published their send buffers (the agreement found them
    /// [`direct`](Agreement::direct)): this rank reads elements `first ..
    /// first + len` of every rank's send buffer, folds them in rank order
    /// (rank 0's element the leftmost operand, MPI 4.1 §6.9.1) into the `len`
    /// elements at `recv`, and one world barrier then tells every rank that
    /// no rank reads its send buffer any more. Ranks are taken
    /// [`FOLD_BATCH`] at a time: their published addresses as one batch of
    /// independent loads, then for each element the batch's operands as
    /// another, so that a rank pays two round trips per batch, not two per
    /// rank; `recv` holds the running result between batches.
    ///
    /// # Safety
    /// After an agreement round in which every rank published a send buffer
    /// ([`publish_buffer`](Self::publish_buffer)) of `T`s holding at least
    /// `first + len` elements, unchanged until the closing barrier; `recv`
    /// writable for `len` elements, apart from every published buffer.
    pub(super) unsafe fn pull_fold<T: Equivalence, O: Operation<T>>(
        &self,
        first: usize,
        recv: *mut T,
        len: usize,
        op: &O,
        what: WaitFor,
    ) -> Result<(), Error> {
        let n = self.ranks() as usize;
        let size = core::mem::size_of::<T>();
        let mut q0 = 0;
        while q0 < n {
            // Past the last rank the batch repeats it: every load is
            // issued, with no branch between them.
            let from = self
                .published_buffers::<FOLD_BATCH>(|i| (q0 + i).min(n - 1))
                .map(|f| f as *const T);
            let m = FOLD_BATCH.min(n - q0);
            for e in 0..len {
                let mut v = [T::zeroed(); FOLD_BATCH];
                crate::shim::independent(|| {
                    for (x, f) in v.iter_mut().zip(from.iter()) {
                        // SAFETY: the caller's contract: `first + e` is an
                        // element of every published buffer.
                        *x = unsafe { crate::shim::load_element(f.add(first + e)) };
                    }
                });
                // SAFETY: `e < len` elements of `recv` (the caller's
                // contract); it holds the fold of ranks `0..q0` when `q0 > 0`.
                unsafe {
                    let out = recv.add(e);
                    let acc = if q0 == 0 {
                        v[0]
                    } else {
                        crate::shim::note_global(out.cast(), size, false);
                        op.apply(&core::ptr::read(out), &v[0])
                    };
                    // A batch past the last rank stops at it.
                    let acc = op.fold_batch(acc, &v, 1, m);
                    crate::shim::note_global(out.cast(), size, true);
                    core::ptr::write(out, acc);
                }
            }
            q0 += FOLD_BATCH;
        }
        self.world_barrier(what)
    }

    /// The counts round of a varcount gather or scatter: every rank stages
    /// `stage` (its count; at the root, what it publishes). Returns the
    /// buffer the root published in this round for `call`, with where this
    /// rank's part lies in it (None also when `root` is not a rank: the
    /// agreement then fails), a count mismatch this rank found, and a
    /// fault of the root's entry for this rank: with a publication each
    /// rank checks its own entry of the root's partition (a count of its
    /// own, non-negative, and a part inside the root's buffer, which the
    /// root did not check: [`root_partition`]) and compares it with its own
    /// count, else the root compares every rank's count with `root_counts`
    /// (its counts, given when it did not publish, all checked). `send`: a
    /// gatherv's part of at most 16 bytes of plain memory, loaded into
    /// [`Direct::head`] in the batch of the root's entries, where its copy
    /// after the agreement would wait for its load; read only with `HEAD`.
    // One argument past clippy's bound: `send` is the gatherv's alone, and
    // `HEAD` keeps the scatterv's copy of this function free of it
    // (rsmpi's `scatter_varcount` 100 registers and 608 B of stack with one
    // copy for both, 88 and 440 with two).
    #[allow(clippy::too_many_arguments)]
    fn counts_round<const HEAD: bool>(
        &self,
        root: i32,
        call: Rooted,
        stage: &CountStage,
        root_counts: Option<&[i32]>,
        size: usize,
        send: Option<(*const u8, usize)>,
        what: WaitFor,
    ) -> Result<CountsRound, Error> {
        let mut wrong = None;
        let check = root_counts.map(|counts| {
            |q: u32, _lo: usize, cell: *const u8, _cb: usize| {
                // SAFETY: rank q staged its 4-byte count in its cell.
                let theirs = unsafe { core::ptr::read(cell as *const u32) };
                crate::shim::note_global(cell, 4, false);
                let want = counts.get(q as usize).copied().unwrap_or(-1);
                if want != theirs as i32 && wrong.is_none() {
                    wrong = Some(Error::CountMismatch {
                        count: want as u32,
                        expected: theirs,
                    });
                }
            }
        });
        // Our stage straight into our cell of the round that begins next,
        // the counts round's, in 64-bit stores: the whole stage where the
        // root published, else the word of its count (the other words of
        // a cell whose `call` is 0 are read by nobody). Staged as a send,
        // it was a copy out of local memory, word by word, each load
        // waiting for the store before it (472 ns of the H200 profile's
        // 40 bytes, against 5 stores of 18).
        let cell = self.next_rank_cell(self.rank);
        let words = stage.words();
        let n = if stage.call == 0 { 1 } else { words.len() };
        for (i, &w) in words[..n].iter().enumerate() {
            // SAFETY: our own cell of the next round, `size_of::<CountStage>()
            // = 48 <= 64 <= collective_bytes` bytes, 64-byte aligned; no other
            // rank reads or writes it before that round's barrier
            // (`next_rank_cell`), which `gather_rounds` passes next.
            unsafe { crate::shim::store_payload_u64(cell.add(8 * i), w) };
        }
        let len = core::mem::size_of::<CountStage>();
        // SAFETY: no send; `check` reads a cell's count.
        unsafe { self.gather_rounds(None, len, check, what)? };
        if self.check_root(root).is_some() {
            return Ok(CountsRound {
                direct: None,
                wrong,
                fault: None,
            });
        }
        // SAFETY: the root's cell of the round just passed holds its stage
        // (the cell is 64-byte aligned and at least 64 bytes), published by
        // the barrier and not written again before the next round's.
        let theirs = unsafe { core::ptr::read(self.rank_cell(root as u32) as *const CountStage) };
        crate::shim::note_global(
            self.rank_cell(root as u32),
            core::mem::size_of::<CountStage>(),
            false,
        );
        // A stage from this round for this collective: the root published
        // it (a stale cell, or a rank in another call, would not match).
        let fresh = theirs.call == call as u32 && theirs.round == self.staging_round.get();
        if !fresh || theirs.base.is_null() {
            return Ok(CountsRound {
                direct: None,
                wrong,
                fault: None,
            });
        }
        let me = self.rank as usize;
        let (head_at, head_len) = send.unwrap_or((core::ptr::null(), 0));
        // SAFETY: our entries of the root's counts and displacements, which
        // the root checked have one entry per rank (`root_partition`) and
        // does not change during the call, and our part of `send` (the
        // caller's `len <= 16` bytes); one batch of independent loads.
        let (want, displ, head) = crate::shim::independent(|| unsafe {
            (
                crate::shim::load_element(theirs.counts.add(me)),
                crate::shim::load_element(theirs.displs.add(me)),
                if HEAD {
                    load_small_part(head_at, head_len)
                } else {
                    [0; 2]
                },
            )
        });
        // Our entry as `check_partition` would have judged it at the root:
        // its fault's class fails every rank (the agreement), and the
        // root, which then checks every entry, names the first fault.
        let fault = entry_fault(want, displ, theirs.len, size);
        if fault.is_none() && want != stage.count as i32 {
            wrong = wrong.or(Some(Error::CountMismatch {
                count: stage.count,
                expected: want as u32,
            }));
        }
        let direct = Direct {
            base: theirs.base,
            own: displ.max(0) as usize * size,
            head,
        };
        Ok(CountsRound {
            direct: Some(direct),
            wrong,
            fault,
        })
    }

    /// Staging rounds of a scatter: each round the root's `give(q, offset,
    /// cell, round_bytes)` writes the part of rank `q`'s data from `offset`
    /// into `q`'s cell, a world barrier publishes them, and every rank with
    /// a `recv` (pointer, bytes) copies its next chunk out of its own cell.
    ///
    /// # Safety
    /// `recv` writable for its length during the call; `give` writes at most
    /// `round_bytes` bytes into a cell.
    unsafe fn scatter_rounds<F>(
        &self,
        max_bytes: usize,
        mut give: Option<F>,
        recv: Option<(Side, usize)>,
        what: WaitFor,
    ) -> Result<(), Error>
    where
        F: FnMut(u32, usize, *mut u8, usize),
    {
        let cb = self.collective_bytes();
        let rounds = max_bytes.div_ceil(cb);
        let mut walked = true;
        for round in 0..rounds {
            let lo = round * cb;
            self.begin_staging_round();
            if let Some(g) = give.as_mut() {
                for q in 0..self.ranks() {
                    g(q, lo, self.rank_cell(q), cb);
                }
            }
            self.world_barrier_scattered(what)?;
            if let Some((side, len)) = recv {
                let m = len.saturating_sub(lo).min(cb);
                if m > 0 {
                    // SAFETY: our cell, published by the barrier, is not
                    // written again before the next round's barrier;
                    // `lo + m <= len`.
                    walked &= unsafe { side.write(lo, self.rank_cell(self.rank), m) };
                }
            }
        }
        if walked {
            Ok(())
        } else {
            Err(Error::Intern)
        }
    }

    /// Staging rounds of an all-to-all in which every rank sends part `d`
    /// (at most `m` bytes; `send_parts` gives the lengths) to rank `d`.
    ///
    /// The ranks' send data is laid out virtually as `size` slots of `m`
    /// bytes (slot `d` for rank `d`); round `r` moves the virtual bytes
    /// `r × collective_bytes ..` of every rank: each rank's `give(d, offset,
    /// cell_ptr, len)` stages the bytes of its part `d` that fall in the
    /// window, and after the barrier a rank whose slot meets the window
    /// copies, through `take(q, offset, cell_ptr, len)`, the bytes of its
    /// slot out of every rank `q`'s cell (`recv_parts` gives the lengths it
    /// expects, checked equal to the senders' beforehand).
    /// ceil(size × m / collective_bytes) world barriers.
    #[allow(clippy::too_many_arguments)]
    fn all_to_all_rounds<G, T>(
        &self,
        m: usize,
        send_parts: Parts<'_>,
        recv_parts: Parts<'_>,
        mut give: G,
        mut take: T,
        what: WaitFor,
    ) -> Result<(), Error>
    where
        G: FnMut(u32, usize, *mut u8, usize),
        T: FnMut(u32, usize, *const u8, usize),
    {
        if m == 0 {
            return Ok(());
        }
        let n = self.ranks() as usize;
        let cb = self.collective_bytes();
        let rounds = (n * m).div_ceil(cb);
        let p = self.rank as usize;
        for round in 0..rounds {
            let lo = round * cb;
            let hi = lo + cb;
            self.begin_staging_round();
            let cell = self.rank_cell(self.rank);
            let last = ((hi - 1) / m).min(n - 1);
            for d in lo / m..=last {
                let start = d * m;
                let (_, len) = send_parts.get(d);
                let (a, b) = (lo.max(start), hi.min(start + len.min(m)));
                if a < b {
                    // SAFETY: `a - lo + (b - a) <= collective_bytes`: inside
                    // our own cell.
                    give(d as u32, a - start, unsafe { cell.add(a - lo) }, b - a);
                }
            }
            self.world_barrier(what)?;
            let start = p * m;
            if start < hi && start + m > lo {
                for q in 0..n {
                    let (_, len) = recv_parts.get(q);
                    let (a, b) = (lo.max(start), hi.min(start + len.min(m)));
                    if a < b {
                        // SAFETY: inside rank q's cell, as above.
                        let src = unsafe { self.rank_cell(q as u32).add(a - lo) };
                        take(q as u32, a - start, src, b - a);
                    }
                }
            }
        }
        Ok(())
    }

    /// `MPI_Gather`: `send` None is the root's in-place form (its part is
    /// already in `recv`); `recv` is the root's buffer (None at the other
    /// ranks, and at a root that called the non-root form: `MPI_ERR_ROOT`).
    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    pub(crate) fn gather_impl<S, R>(
        &self,
        root: i32,
        send: Option<&S>,
        recv: Option<&mut R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::Gather,
            peer: root,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let is_root = root == self.rank();
        let mut local = self.check_root(root);
        let (k, dtype) = match (send, &recv) {
            (Some(s), _) => (s.count(), s.datatype()),
            (None, Some(r)) => {
                if !r.count().is_multiple_of(n) {
                    local = local.or(Some(Error::CountMismatch {
                        count: saturating_u32(r.count()),
                        expected: saturating_u32(r.count() / n * n),
                    }));
                }
                (r.count() / n, r.datatype())
            }
            (None, None) => (0, <u8 as crate::Equivalence>::DATATYPE),
        };
        if is_root {
            local = local.or(match &recv {
                None => Some(Error::InvalidRoot {
                    root,
                    size: self.size(),
                }),
                Some(r) if r.datatype() != dtype => Some(type_error(root, dtype, r.datatype())),
                Some(r) if r.count() != n * k => Some(Error::CountMismatch {
                    count: saturating_u32(r.count()),
                    expected: saturating_u32(n * k),
                }),
                Some(_) => None,
            });
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, root as u32);
        mine.set_count(COUNT, k);
        mine.set(TYPE, dtype.id);
        mine.set(CHECK, Rooted::Gather as u32);
        if let Some(e) = &local {
            mine.fail(e);
        }
        let base = recv.map(|r| Side::of_mut(r).0);
        if is_root {
            self.publish_buffer(self.reachable(base.filter(|_| local.is_none())));
        }
        // The root's address comes with the agreement's keys (a root out
        // of range has `local` set, and no address).
        let (agreed, fetched) = self.agree_fetching(mine, what, local.is_none().then_some(root as u32))?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, root, saturating_u32(k), dtype.id)));
        }
        let bytes = k * dtype.size as usize;
        let in_place = send.is_none();
        let send = send.map(|s| {
            let (side, len) = Side::of(s);
            (side, 0, len)
        });
        let me = self.rank;
        let direct = self.root_buffer(fetched, root as u32);
        if !direct.is_null() && bytes > 0 {
            // Every rank copies its own part into the root's buffer; one
            // world barrier tells the root they are there (only the root's
            // block waits at it).
            let mut walked = true;
            if let Some((side, _, _)) = send {
                // SAFETY: part `me` of the root's buffer (`n × bytes` plain
                // bytes in global memory, checked by the root before it
                // published), which no other rank writes; our send holds
                // `bytes` packed bytes (count and datatype agreed). The
                // root's in-place part (no send) stays where it is.
                walked = unsafe { side.read(0, direct.add(me as usize * bytes), bytes) };
            }
            self.world_barrier_for_root(what, root)?;
            return if walked { Ok(()) } else { Err(Error::Intern) };
        }
        let mut walked = true;
        let take = base.map(|base| {
            let walked = &mut walked;
            move |q: u32, lo: usize, cell: *const u8, cb: usize| {
                let m = bytes.saturating_sub(lo).min(cb);
                if m > 0 && !(in_place && q == me) {
                    // SAFETY: part q of the root's buffer (`n × bytes`
                    // packed bytes, checked); the cell holds `m` bytes of
                    // rank q's data.
                    *walked &= unsafe { base.write(q as usize * bytes + lo, cell, m) };
                }
            }
        });
        // SAFETY: `send` is a borrowed buffer; `take` copies at most `cb`.
        let r = unsafe { self.gather_rounds(send, bytes, take, what) };
        r.and(if walked { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Gatherv`: `recv` is the root's partitioned buffer (None at the
    /// other ranks, and at a root that called the non-root form); `send`
    /// None is the root's in-place form (its part already in `recv`).
    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    pub(crate) fn gather_varcount_impl<S, R>(
        &self,
        root: i32,
        send: Option<&S>,
        mut recv: Option<&mut PartitionMut<'_, R>>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::Gather,
            peer: root,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let is_root = root == self.rank();
        let in_place = send.is_none();
        let dtype = match (send, &recv) {
            (Some(s), _) => s.datatype(),
            (None, Some(p)) => p.buf.datatype(),
            (None, None) => <u8 as crate::Equivalence>::DATATYPE,
        };
        let size = dtype.size as usize;
        let mut local = self.check_root(root);
        let mut largest = send.map_or(0, |s| s.count());
        // The root's buffer, when it and the partition are in every rank's
        // reach (then published, unless the root finds an error).
        let reach = match recv.as_mut() {
            Some(p) if is_root => self.reachable_partition(Side::of_mut(&mut *p.buf).0, p.counts, p.displs),
            _ => None,
        };
        if is_root {
            local = local.or(match &recv {
                None => Some(Error::InvalidRoot {
                    root,
                    size: self.size(),
                }),
                Some(p) if p.buf.datatype() != dtype => Some(type_error(root, dtype, p.buf.datatype())),
                Some(p) => match root_partition(reach.is_some(), p.counts, p.displs, p.buf.count(), n) {
                    Ok(l) => {
                        largest = largest.max(l);
                        None
                    }
                    Err(e) => Some(e),
                },
            });
        }
        // The counts round: every rank stages its count; the root also its
        // buffer and partition when every rank can reach them, and then each
        // rank compares its count with the root's (else the root compares
        // every rank's). The in-place root's count is its own entry.
        let count = match (send, &recv) {
            (Some(s), _) => staged_count(s.count()),
            (None, Some(p)) => own_count(p.counts, root),
            (None, None) => 0,
        };
        let mut stage = CountStage::new(count);
        if let (true, None, Some(p), Some(base)) = (is_root, &local, recv.as_ref(), reach) {
            stage.publish(
                self,
                Rooted::GatherVarcount,
                base,
                p.counts,
                p.displs,
                p.buf.count(),
            );
        }
        let root_counts = recv.as_ref().map(|p| p.counts).filter(|_| stage.base.is_null());
        // A part of up to 16 plain bytes travels in registers, loaded in
        // the counts round.
        let head = send.and_then(|s| match Side::of(s) {
            (Side::Plain(p), len) if len > 0 && len <= 16 => Some((p as *const u8, len)),
            _ => None,
        });
        let CountsRound { direct, wrong, fault } = self.counts_round::<true>(
            root,
            Rooted::GatherVarcount,
            &stage,
            root_counts,
            size,
            head,
            what,
        )?;
        local = local.or(wrong);
        // Only the staging rounds read the agreed longest part: with the
        // root's buffer published (every rank read the same stage) the
        // ranks agree on the rest in one keyed barrier, whatever their
        // counts.
        let call = VarcountCall {
            root,
            check: Rooted::GatherVarcount as u32,
            datatype: dtype.id,
            longest: largest * size,
            staged: direct.is_none(),
            fault,
        };
        let agreed = self.agree_varcount(call, local, || self.stage_fault(&stage), count, what)?;
        let send = send.map(|s| {
            let (side, len) = Side::of(s);
            (side, 0, len)
        });
        let me = self.rank;
        if let Some(d) = direct {
            // Every rank copies its own part into the root's buffer; one
            // world barrier tells the root they are there (only the root's
            // block waits at it). The in-place root's part stays where it is.
            let mut walked = true;
            if let Some((side, _, len)) = send.filter(|s| s.2 > 0) {
                // SAFETY: we are a rank; our part of the root's buffer
                // (inside it: our entry checked in the counts round; our
                // count equals the root's, checked there and agreed),
                // written by no other rank; our send holds `len` packed
                // bytes, the first 16 of them in `d.head` when loaded.
                unsafe {
                    let to = d.base.add(d.own);
                    if head.is_some() {
                        store_small_part(to, d.head, len);
                    } else {
                        walked = side.read(0, to, len);
                    }
                }
            }
            self.world_barrier_for_root(what, root)?;
            return if walked { Ok(()) } else { Err(Error::Intern) };
        }
        let mut walked = true;
        let take = recv.map(|p| {
            let parts = Parts::Var {
                counts: p.counts,
                displs: p.displs,
                size,
            };
            let base = Side::of_mut(&mut *p.buf).0;
            let walked = &mut walked;
            move |q: u32, lo: usize, cell: *const u8, cb: usize| {
                let (off, len) = parts.get(q as usize);
                let m = len.saturating_sub(lo).min(cb);
                if m > 0 && !(in_place && q == me) {
                    // SAFETY: inside part q of the root's buffer (packed
                    // positions, checked by `check_partition`); rank q
                    // staged `m` bytes (its count equals the root's, checked).
                    *walked &= unsafe { base.write(off + lo, cell, m) };
                }
            }
        });
        // SAFETY: `send` is a borrowed buffer; `take` copies at most `cb`.
        let r = unsafe { self.gather_rounds(send, agreed.max(LEN) as usize, take, what) };
        r.and(if walked { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Scatter`: `send` is the root's buffer (None at the other ranks);
    /// `recv` None is the root's in-place form (and, at another rank, a call
    /// of the root's in-place form: `MPI_ERR_ROOT`).
    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    pub(crate) fn scatter_impl<S, R>(
        &self,
        root: i32,
        send: Option<&S>,
        recv: Option<&mut R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::Scatter,
            peer: root,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let is_root = root == self.rank();
        let mut local = self.check_root(root);
        let (k, dtype) = match (&recv, send) {
            (Some(r), _) => (r.count(), r.datatype()),
            (None, Some(s)) => (s.count() / n, s.datatype()),
            (None, None) => (0, <u8 as crate::Equivalence>::DATATYPE),
        };
        if is_root {
            local = local.or(match send {
                None => Some(Error::InvalidRoot {
                    root,
                    size: self.size(),
                }),
                Some(s) if s.datatype() != dtype => Some(type_error(root, s.datatype(), dtype)),
                Some(s) if s.count() != n * k => Some(Error::CountMismatch {
                    count: saturating_u32(s.count()),
                    expected: saturating_u32(n * k),
                }),
                Some(_) => None,
            });
        } else if recv.is_none() {
            local = local.or(Some(Error::InvalidRoot {
                root: self.rank(),
                size: self.size(),
            }));
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, root as u32);
        mine.set_count(COUNT, k);
        mine.set(TYPE, dtype.id);
        mine.set(CHECK, Rooted::Scatter as u32);
        if let Some(e) = &local {
            mine.fail(e);
        }
        if is_root {
            let base = send.map(|s| Side::of(s).0);
            self.publish_buffer(self.reachable(base.filter(|_| local.is_none())));
        }
        // As the gather's: the root's address with the keys.
        let (agreed, fetched) = self.agree_fetching(mine, what, local.is_none().then_some(root as u32))?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, root, saturating_u32(k), dtype.id)));
        }
        let bytes = k * dtype.size as usize;
        let in_place = recv.is_none();
        let me = self.rank;
        let direct = self.root_buffer(fetched, root as u32);
        if !direct.is_null() && bytes > 0 {
            // Every rank copies its own part out of the root's buffer; one
            // world barrier tells the root that its buffer is free again
            // (only the root's block waits at it).
            let mut walked = true;
            if let Some(r) = recv {
                // SAFETY: part `me` of the root's buffer (`n × bytes` plain
                // bytes in global memory, checked by the root before it
                // published), which the root does not change before the
                // barrier; `r` holds `bytes` packed bytes (agreed). The
                // root's in-place part (no recv) stays where it is.
                walked = unsafe { Side::of_mut(r).0.write(0, direct.add(me as usize * bytes), bytes) };
            }
            self.world_barrier_for_root(what, root)?;
            return if walked { Ok(()) } else { Err(Error::Intern) };
        }
        let mut walked = true;
        let give = send.filter(|_| is_root).map(|s| {
            let base = Side::of(s).0;
            let walked = &mut walked;
            move |q: u32, lo: usize, cell: *mut u8, cb: usize| {
                let m = bytes.saturating_sub(lo).min(cb);
                if m > 0 && !(in_place && q == me) {
                    // SAFETY: part q of the root's buffer (`n × bytes`
                    // packed bytes, checked); rank q's cell holds `cb >= m`
                    // bytes and only the root writes it this round.
                    *walked &= unsafe { base.read(q as usize * bytes + lo, cell, m) };
                }
            }
        });
        let recv = recv.map(|r| Side::of_mut(r));
        // SAFETY: `recv` is a borrowed buffer; `give` writes at most `cb`.
        let r = unsafe { self.scatter_rounds(bytes, give, recv, what) };
        r.and(if walked { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Scatterv`: `send` is the root's partitioned buffer (None at the
    /// other ranks, and at a root that called the non-root form); `recv`
    /// None is the root's in-place form (and, at another rank, a call of
    /// it: `MPI_ERR_ROOT`).
    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    pub(crate) fn scatter_varcount_impl<S, R>(
        &self,
        root: i32,
        send: Option<&Partition<'_, S>>,
        mut recv: Option<&mut R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::Scatter,
            peer: root,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let is_root = root == self.rank();
        let in_place = recv.is_none();
        let dtype = match (&recv, send) {
            (Some(r), _) => r.datatype(),
            (None, Some(p)) => p.buf.datatype(),
            (None, None) => <u8 as crate::Equivalence>::DATATYPE,
        };
        let size = dtype.size as usize;
        let mut local = self.check_root(root);
        let mut largest = recv.as_ref().map_or(0, |r| r.count());
        let mut valid = None;
        // The root's buffer, when it and the partition are in every rank's
        // reach (then published, unless the root finds an error).
        let reach = match send {
            Some(p) if is_root => self.reachable_partition(Side::of(p.buf).0, p.counts, p.displs),
            _ => None,
        };
        if is_root {
            local = local.or(match send {
                None => Some(Error::InvalidRoot {
                    root,
                    size: self.size(),
                }),
                Some(p) if p.buf.datatype() != dtype => Some(type_error(root, p.buf.datatype(), dtype)),
                Some(p) => match root_partition(reach.is_some(), p.counts, p.displs, p.buf.count(), n) {
                    Ok(l) => {
                        largest = largest.max(l);
                        valid = Some(p);
                        None
                    }
                    Err(e) => Some(e),
                },
            });
        } else if in_place {
            // The root's in-place form at another rank.
            local = local.or(Some(Error::InvalidRoot {
                root: self.rank(),
                size: self.size(),
            }));
        }
        // The counts round: every rank stages its count; the root also its
        // buffer and partition when every rank can reach them, and then each
        // rank compares its count with the root's (else the root compares
        // every rank's). The in-place root's count is its own entry.
        let count = match (&recv, send) {
            (Some(r), _) => staged_count(r.count()),
            (None, Some(p)) => own_count(p.counts, root),
            (None, None) => 0,
        };
        let mut stage = CountStage::new(count);
        if let (None, Some(p), Some(base)) = (&local, valid, reach) {
            stage.publish(
                self,
                Rooted::ScatterVarcount,
                base,
                p.counts,
                p.displs,
                p.buf.count(),
            );
        }
        let root_counts = valid.map(|p| p.counts).filter(|_| stage.base.is_null());
        let CountsRound { direct, wrong, fault } = self.counts_round::<false>(
            root,
            Rooted::ScatterVarcount,
            &stage,
            root_counts,
            size,
            None,
            what,
        )?;
        local = local.or(wrong);
        // Only the staging rounds read the agreed longest part: with the
        // root's buffer published (every rank read the same stage) the
        // ranks agree on the rest in one keyed barrier, whatever their
        // counts.
        let call = VarcountCall {
            root,
            check: Rooted::ScatterVarcount as u32,
            datatype: dtype.id,
            longest: largest * size,
            staged: direct.is_none(),
            fault,
        };
        let agreed = self.agree_varcount(call, local, || self.stage_fault(&stage), count, what)?;
        if let Some(d) = direct {
            // Every rank copies its own part out of the root's buffer; one
            // world barrier tells the root that its buffer is free again
            // (only the root's block waits at it).
            // The in-place root's part stays where it is.
            let mut walked = true;
            if let Some((side, len)) = recv.as_mut().map(|r| Side::of_mut(&mut **r)).filter(|r| r.1 > 0) {
                // SAFETY: we are a rank; our part of the root's buffer
                // (inside it: the root checked its partition; our count
                // equals the root's, checked above and agreed), which the
                // root does not change before the barrier; `recv` holds
                // `len` packed bytes.
                walked = unsafe { side.write(0, d.base.add(d.own), len) };
            }
            self.world_barrier_for_root(what, root)?;
            return if walked { Ok(()) } else { Err(Error::Intern) };
        }
        let mut walked = true;
        let give = valid.map(|p| {
            let parts = Parts::Var {
                counts: p.counts,
                displs: p.displs,
                size,
            };
            let base = Side::of(p.buf).0;
            let walked = &mut walked;
            let me = self.rank;
            move |q: u32, lo: usize, cell: *mut u8, cb: usize| {
                let (off, len) = parts.get(q as usize);
                let m = len.saturating_sub(lo).min(cb);
                if m > 0 && !(in_place && q == me) {
                    // SAFETY: inside part q of the root's buffer (packed
                    // positions, checked); rank q's cell holds `cb >= m`
                    // bytes.
                    *walked &= unsafe { base.read(off + lo, cell, m) };
                }
            }
        });
        let recv = recv.map(|r| Side::of_mut(r));
        // SAFETY: `recv` is a borrowed buffer; `give` writes at most `cb`.
        let r = unsafe { self.scatter_rounds(agreed.max(LEN) as usize, give, recv, what) };
        r.and(if walked { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Allgather` (`var` None) and `MPI_Allgatherv` (`var`: counts
    /// and displacements of `recv`); `send` None: in place.
    pub(crate) fn all_gather_impl<S, R>(
        &self,
        send: Option<&S>,
        recv: &mut R,
        var: Option<(&[i32], &[i32])>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::AllGather,
            peer: -2,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let dtype = recv.datatype();
        let size = dtype.size as usize;
        let mut local = None;
        let k = match (send, var) {
            (Some(s), _) => s.count(),
            // In place: our own part of `recv`.
            (None, Some((counts, _))) => own_count(counts, self.rank as i32) as usize,
            (None, None) => recv.count() / n,
        };
        if let Some(s) = send {
            if s.datatype() != dtype {
                local = local.or(Some(type_error(-1, s.datatype(), dtype)));
            }
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set(TYPE, dtype.id);
        let parts = match var {
            None => {
                if recv.count() != n * k {
                    local = local.or(Some(Error::CountMismatch {
                        count: saturating_u32(recv.count()),
                        expected: saturating_u32(n * k),
                    }));
                }
                mine.set_count(COUNT, k);
                mine.set_count(LEN, k * size);
                Parts::Even(k * size)
            }
            Some((counts, displs)) => {
                match check_partition(counts, displs, recv.count(), n) {
                    Ok(largest) => {
                        mine.set_count(LEN, largest * size);
                        let expected = counts.get(self.rank as usize).copied().unwrap_or(-1);
                        if expected != k as i32 {
                            local = local.or(Some(Error::CountMismatch {
                                count: saturating_u32(k),
                                expected: expected as u32,
                            }));
                        }
                    }
                    Err(e) => local = local.or(Some(e)),
                }
                mine.set(CHECK, checksum(counts));
                Parts::Var { counts, displs, size }
            }
        };
        if let Some(e) = &local {
            mine.fail(e);
        }
        let base = Side::of_mut(recv).0;
        // The fixed form may copy straight into the other ranks' buffers
        // (a varcount part's place is in each receiver's own displacements).
        let published = self.reachable(Some(base).filter(|_| var.is_none()));
        self.publish_buffer(published);
        if published.is_null() {
            mine.stage();
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, -1, saturating_u32(k), dtype.id)));
        }
        let me = self.rank;
        let (own_off, own_len) = parts.get(me as usize);
        let staged = match send {
            Some(s) => {
                let (side, len) = Side::of(s);
                (side, 0, len)
            }
            // In place: our own part of `recv` (packed positions, checked
            // to fit).
            None => (base, own_off, own_len),
        };
        let in_place = send.is_none();
        if agreed.direct() && own_len > 0 {
            // Every rank copies its part straight into every rank's buffer
            // (in place, not into its own); a part of one aligned word is
            // loaded once and stored from a register.
            let (side, at, m) = staged;
            let word = match side {
                Side::Plain(s) if m == 8 && (s as usize + at).is_multiple_of(8) => {
                    // SAFETY: our part: `m` (8) readable bytes at `at`, aligned.
                    Some(unsafe { crate::shim::load_payload_u64(s.add(at)) })
                }
                _ => None,
            };
            // SAFETY: every rank published its buffer (agreed direct), `n ×
            // m` bytes on every rank (count and datatype agreed); we write
            // our part `me × m..`, which only we write; `staged` is
            // readable for `m` bytes and, in place, is our own part of our
            // own buffer, which no other rank writes.
            return unsafe {
                self.push_parts(
                    |_| None,
                    |d, to, _| {
                        let dst = to.add(me as usize * m);
                        match word {
                            _ if in_place && d == me as usize => true,
                            Some(v) => {
                                crate::shim::store_head_bytes(dst, v, 8);
                                true
                            }
                            None => side.read(at, dst, m),
                        }
                    },
                    what,
                )
            };
        }
        let mut walked = true;
        let walked_take = &mut walked;
        let take = move |q: u32, lo: usize, cell: *const u8, cb: usize| {
            let (off, len) = parts.get(q as usize);
            let m = len.saturating_sub(lo).min(cb);
            if m > 0 && !(in_place && q == me) {
                // SAFETY: inside part q of `recv` (checked); rank q staged
                // `m` bytes (counts agreed). In place, our own part (the
                // staged one) is never written.
                *walked_take &= unsafe { base.write(off + lo, cell, m) };
            }
        };
        // SAFETY: `staged` is readable (a borrowed buffer or our own part of
        // `recv`, which `take` leaves alone); `take` copies at most `cb`.
        let r = unsafe { self.gather_rounds(Some(staged), agreed.max(LEN) as usize, Some(take), what) };
        r.and(if walked { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Alltoall`.
    pub(crate) fn all_to_all_impl<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::AllToAll,
            peer: -2,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let dtype = recv.datatype();
        let total = send.count();
        let mut local = None;
        if send.datatype() != dtype {
            local = local.or(Some(type_error(-1, send.datatype(), dtype)));
        }
        if !total.is_multiple_of(n) || recv.count() != total {
            local = local.or(Some(Error::CountMismatch {
                count: saturating_u32(recv.count()),
                expected: saturating_u32(total),
            }));
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set_count(COUNT, total);
        mine.set(TYPE, dtype.id);
        if let Some(e) = &local {
            mine.fail(e);
        }
        let src = Side::of(send).0;
        let dst = Side::of_mut(recv).0;
        let published = self.reachable(Some(dst));
        self.publish_buffer(published);
        if published.is_null() {
            mine.stage();
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, -1, saturating_u32(total), dtype.id)));
        }
        let m = total / n * dtype.size as usize;
        if agreed.direct() && m > 0 {
            // Every rank copies its part `d` straight into rank `d`'s
            // buffer; a part of one aligned word travels in a register.
            let p = self.rank as usize;
            let word = match src {
                Side::Plain(s) if m == 8 && (s as usize).is_multiple_of(8) => Some(s as *const u8),
                _ => None,
            };
            // SAFETY: every rank published its buffer (agreed direct);
            // part `d` of `send` is `m` packed bytes at `d × m` (`n × m`
            // of them, checked and agreed), and with `word` one aligned
            // word; we write part `p` of rank `d`'s buffer (`n × m` bytes,
            // the same count on every rank), which only we write.
            return unsafe {
                self.push_parts(
                    |d| word.map(|s| s.add(d * 8)),
                    |d, to, head| {
                        let at = to.add(p * m);
                        if word.is_some() {
                            crate::shim::store_head_bytes(at, head, 8);
                            true
                        } else {
                            src.read(d * m, at, m)
                        }
                    },
                    what,
                )
            };
        }
        let walked = Cell::new(true);
        let r = self.all_to_all_rounds(
            m,
            Parts::Even(m),
            Parts::Even(m),
            |d, at, cell, len| {
                // SAFETY: part d of `send` (`n × m` packed bytes), `at + len
                // <= m`; the cell range is inside our own cell.
                let ok = unsafe { src.read(d as usize * m + at, cell, len) };
                walked.set(walked.get() & ok)
            },
            |q, at, cell, len| {
                // SAFETY: part q of `recv` (`n × m` packed bytes, checked),
                // `at + len <= m`.
                let ok = unsafe { dst.write(q as usize * m + at, cell, len) };
                walked.set(walked.get() & ok)
            },
            what,
        );
        r.and(if walked.get() { Ok(()) } else { Err(Error::Intern) })
    }

    /// `MPI_Alltoall` with `MPI_IN_PLACE`. Where every rank's buffer is
    /// plain global memory (the agreement found them all published), each
    /// pair of ranks swaps its two parts straight between the buffers, one
    /// rank of the pair doing it ([`swap_parts`](Self::swap_parts)): two
    /// world barriers in all. Otherwise pairwise: in step `j` rank `p`
    /// exchanges part `q = (j - p) mod size` with rank `q` (whose partner in
    /// that step is `p`), staging its part before overwriting it (`size`
    /// world barriers at least).
    pub(crate) fn all_to_all_in_place_impl<R: BufferMut + ?Sized>(&self, buf: &mut R) -> Result<(), Error> {
        let what = WaitFor {
            operation: WaitCall::AllToAll,
            peer: -2,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let dtype = buf.datatype();
        let total = buf.count();
        let mut local = None;
        if !total.is_multiple_of(n) {
            local = Some(Error::CountMismatch {
                count: saturating_u32(total),
                expected: saturating_u32(total / n * n),
            });
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set_count(COUNT, total);
        mine.set(TYPE, dtype.id);
        if let Some(e) = &local {
            mine.fail(e);
        }
        let base = Side::of_mut(buf).0;
        let published = self.reachable(Some(base));
        self.publish_buffer(published);
        if published.is_null() {
            mine.stage();
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, -1, saturating_u32(total), dtype.id)));
        }
        let m = total / n * dtype.size as usize;
        if agreed.direct() && m > 0 {
            // SAFETY: every rank published its buffer (agreed direct), `n ×
            // m` packed bytes on every rank (the count agreed), ours at
            // `published`.
            return unsafe { self.swap_parts(published, m, what) };
        }
        // SAFETY: `buf` holds `n × m` packed bytes, borrowed for the call.
        unsafe { self.pairwise_in_place(base, Parts::Even(m), m, what) }
    }

    /// The data movement of an in-place all-to-all whose ranks all
    /// published their buffers: part `q` of rank `p`'s buffer and part `p`
    /// of rank `q`'s trade places, swapped by one rank of the pair (the
    /// pairs and their order: [`SwapOrder`]), then one world barrier tells
    /// every rank that its buffer is complete. Each location is touched by
    /// its pair's swapper alone between the agreement's barrier and the
    /// closing one, so the swaps need no ordering of their own.
    /// [`PUSH_BATCH`] partners at a time: their published addresses as one
    /// batch of independent loads, then, for parts of up to 8 bytes, both
    /// sides' words of the pairs this rank swaps as another (two round trips
    /// per batch of partners, not two per partner); longer parts go through
    /// this rank's cell of the next staging round, three copies per pair.
    ///
    /// # Safety
    /// After an agreement round in which every rank published its buffer
    /// ([`publish_buffer`](Self::publish_buffer)), ours `base`, each of `n
    /// × m` bytes, writable for the call.
    unsafe fn swap_parts(&self, base: *mut u8, m: usize, what: WaitFor) -> Result<(), Error> {
        let n = self.ranks() as usize;
        let p = self.rank as usize;
        let order = SwapOrder::of(p, n);
        // Our cell of the next round: nobody reads it before that round's
        // barrier.
        let (tmp, cb) = (self.next_rank_cell(self.rank), self.collective_bytes());
        let mut j0 = 0;
        while j0 < n {
            // Past the last partner the batch repeats it: every load is
            // issued, with no branch between them.
            let to = self.published_buffers::<PUSH_BATCH>(|i| order.partner((j0 + i).min(n - 1)));
            let k = PUSH_BATCH.min(n - j0);
            if m <= 8 {
                // Both sides' words of the batch's pairs as one batch.
                let (mut ours, mut theirs) = ([0u64; PUSH_BATCH], [0u64; PUSH_BATCH]);
                crate::shim::independent(|| {
                    for i in 0..k {
                        let q = order.partner(j0 + i);
                        if order.swaps(q) {
                            // SAFETY: part `q` of our buffer and part `p` of
                            // rank `q`'s, `m` bytes each (the caller's
                            // contract), which only this rank touches in the
                            // call.
                            unsafe {
                                ours[i] = crate::shim::load_head_bytes(base.add(q * m), m);
                                theirs[i] = crate::shim::load_head_bytes(to[i].add(p * m), m);
                            }
                        }
                    }
                });
                for i in 0..k {
                    let q = order.partner(j0 + i);
                    if order.swaps(q) {
                        // SAFETY: as for the loads.
                        unsafe {
                            crate::shim::store_head_bytes(base.add(q * m), theirs[i], m);
                            crate::shim::store_head_bytes(to[i].add(p * m), ours[i], m);
                        }
                    }
                }
            } else {
                for (i, &to) in to.iter().enumerate().take(k) {
                    let q = order.partner(j0 + i);
                    if order.swaps(q) {
                        // SAFETY: as above, and `tmp` our own next cell of
                        // `cb` bytes.
                        unsafe { swap_bytes(base.add(q * m), to.add(p * m), m, tmp, cb) };
                    }
                }
            }
            j0 += PUSH_BATCH;
        }
        self.world_barrier(what)
    }

    /// The pairwise in-place exchange: in step `j` rank `p` swaps part `q =
    /// (j - p) mod size` (`parts`) with rank `q`, whose part `p` has the
    /// same length (checked beforehand), in rounds of `collective_bytes`:
    /// each rank stages its part before the barrier and overwrites it from
    /// its partner's cell after. Every step takes ceil(`largest` /
    /// collective_bytes) rounds on every rank (`largest`: the agreed
    /// longest part in bytes), so the world barriers line up even where the
    /// pairs' parts differ.
    ///
    /// # Safety
    /// `parts` lie inside `base`'s buffer, writable for the call.
    unsafe fn pairwise_in_place(
        &self,
        base: Side,
        parts: Parts<'_>,
        largest: usize,
        what: WaitFor,
    ) -> Result<(), Error> {
        let n = self.ranks() as usize;
        let cb = self.collective_bytes();
        let p = self.rank as usize;
        let mut walked = true;
        for j in 0..n {
            let q = (j + n - p) % n;
            let (off, len) = parts.get(q);
            let mut lo = 0;
            while lo < largest {
                let m = len.saturating_sub(lo).min(cb);
                self.begin_staging_round();
                if q != p && m > 0 {
                    // SAFETY: inside part q of the buffer (`lo + m <=
                    // len`), into our own cell (`m <= collective_bytes`).
                    walked &= unsafe { base.read(off + lo, self.rank_cell(self.rank), m) };
                }
                self.world_barrier(what)?;
                if q != p && m > 0 {
                    // SAFETY: rank q staged the same bytes of its part p
                    // (equal lengths, checked) in its cell this round; we
                    // overwrite our part q, staged above.
                    walked &= unsafe { base.write(off + lo, self.rank_cell(q as u32), m) };
                }
                lo += cb;
            }
        }
        if walked {
            Ok(())
        } else {
            Err(Error::Intern)
        }
    }

    /// `MPI_Alltoallv`: the counts are exchanged first (an all-to-all of one
    /// word per pair), each rank comparing what it will receive with what
    /// it expects.
    pub(crate) fn all_to_all_varcount_impl<S, R>(
        &self,
        send: &Partition<'_, S>,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::AllToAll,
            peer: -2,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let dtype = recv.buf.datatype();
        let size = dtype.size as usize;
        let mut local = None;
        if send.buf.datatype() != dtype {
            local = local.or(Some(type_error(-1, send.buf.datatype(), dtype)));
        }
        // Before the agreement only the arrays' lengths: on the direct path
        // each entry is checked where a push loads it (every entry of
        // `2 × ranks` checked here by one thread cost an all-to-allv of
        // 1,024 ranks a fifth of its time), on the staged path after it.
        let (slen, rlen) = (send.buf.count(), recv.buf.count());
        local = local.or(partition_lengths(send.counts, send.displs, n).err());
        local = local.or(partition_lengths(recv.counts, recv.displs, n).err());
        // A failed call's own error: the first fault of its partitions,
        // checked whole, as before any data moved.
        let recheck = || {
            check_partition(send.counts, send.displs, slen, n)
                .and(check_partition(recv.counts, recv.displs, rlen, n))
                .err()
        };
        let sparts = Parts::Var {
            counts: send.counts,
            displs: send.displs,
            size,
        };
        let rparts = Parts::Var {
            counts: recv.counts,
            displs: recv.displs,
            size,
        };
        let src = Side::of(send.buf).0;
        let dst = Side::of_mut(&mut *recv.buf).0;
        // A rank whose arguments are fine publishes its receive buffer and
        // partition where every rank can reach them; when all did, each
        // rank stores its parts straight into the receivers' buffers.
        let published = match local {
            None => self
                .publish_partition(dst, recv.counts, recv.displs, rlen)
                .is_some(),
            Some(_) => false,
        };
        let call = VarcountCall {
            root: -1,
            check: VARCOUNT_CALL,
            datatype: dtype.id,
            longest: 0,
            staged: !published,
            fault: None,
        };
        let agreed = self.agree_varcount(call, local, recheck, 0, what)?;
        if agreed.direct() {
            // SAFETY: every rank published its receive buffer and a
            // partition of one entry per rank (agreed direct); our
            // partition of `send` has one entry per rank (checked).
            let (wrong, fault, walked) =
                unsafe { self.push_varcount_parts(src, send.counts, send.displs, slen, size) };
            // The verdict, and the barrier after which every receive
            // buffer is complete: a sender that found a count mismatch or
            // a faulty entry makes every rank fail.
            self.agree_parts(wrong, fault, 0, dtype, what, recheck)?;
            return if walked { Ok(()) } else { Err(Error::Intern) };
        }
        // Staged: every entry checked, the counts round, one verdict on
        // both, then the data rounds.
        let (mut local, mut largest) = (None, 0);
        match check_partition(send.counts, send.displs, slen, n) {
            Ok(l) => largest = l,
            Err(e) => local = Some(e),
        }
        match check_partition(recv.counts, recv.displs, rlen, n) {
            Ok(l) => largest = largest.max(l),
            Err(e) => local = local.or(Some(e)),
        }
        let wrong = self.exchange_counts(send.counts, recv.counts, what)?;
        let longest = self.agree_parts(local.or(wrong), None, largest * size, dtype, what, || None)?;
        let walked = Cell::new(true);
        let r = self.all_to_all_rounds(
            longest,
            sparts,
            rparts,
            |d, at, cell, len| {
                let off = sparts.get(d as usize).0 + at;
                // SAFETY: inside part d of `send` (packed positions,
                // checked), `at + len` within it.
                let ok = unsafe { src.read(off, cell, len) };
                walked.set(walked.get() & ok)
            },
            |q, at, cell, len| {
                let off = rparts.get(q as usize).0 + at;
                // SAFETY: inside part q of `recv` (packed positions,
                // checked), `at + len` within it.
                let ok = unsafe { dst.write(off, cell, len) };
                walked.set(walked.get() & ok)
            },
            what,
        );
        r.and(if walked.get() { Ok(()) } else { Err(Error::Intern) })
    }

    /// The argument agreement of a varcount collective (`MPI_Gatherv`,
    /// `MPI_Scatterv`, `MPI_Alltoallv` and its in-place form) in one
    /// [`World::agree_len_if_staged`], with `local`, the error this rank
    /// found in its own arguments, and `call.fault`, one it found in the
    /// root's (which fails the call as `local` does, but is the root's to
    /// return). A disagreement returns `local`, else `recheck`'s error (the
    /// first fault of the partitions this rank checked only in part: a
    /// publishing root's, [`World::stage_fault`]; an all-to-allv's, whose
    /// entries its pushes check), else the agreement's error for `count`
    /// (this rank's count, where the error names one).
    #[inline(always)]
    fn agree_varcount(
        &self,
        call: VarcountCall,
        local: Option<Error>,
        recheck: impl FnOnce() -> Option<Error>,
        count: u32,
        what: WaitFor,
    ) -> Result<Agreement, Error> {
        let mut mine = Agreement::new();
        mine.set(ROOT, call.root as u32);
        mine.set(TYPE, call.datatype);
        mine.set(CHECK, call.check);
        mine.set_count(LEN, call.longest);
        if call.staged {
            mine.stage();
        }
        if let Some(e) = &local {
            mine.fail(e);
        } else if let Some(class) = call.fault {
            mine.fail_with(class);
        }
        let agreed = self.agree_len_if_staged(mine, what)?;
        if !agreed.ok() {
            core::hint::cold_path();
            return Err(local
                .or_else(recheck)
                .unwrap_or_else(|| agreed.error(self, call.root, count, call.datatype)));
        }
        Ok(agreed)
    }

    /// The first fault of the partition a varcount root published in
    /// `stage` (having checked only its arrays' lengths: [`root_partition`]),
    /// if it published one.
    fn stage_fault(&self, stage: &CountStage) -> Option<Error> {
        if stage.base.is_null() {
            return None;
        }
        let n = self.ranks() as usize;
        // SAFETY: this rank's own counts and displacements, of `ranks`
        // entries each (checked: `root_partition`), borrowed for the call.
        let (counts, displs) = unsafe {
            (
                core::slice::from_raw_parts(stage.counts, n),
                core::slice::from_raw_parts(stage.displs, n),
            )
        };
        check_partition(counts, displs, stage.len as usize, n).err()
    }

    /// An all-to-allv's receiving side (in place: its buffer), before its
    /// agreement: publishes `buf`, `counts`, `displs` (one entry per rank,
    /// checked; the entries are checked by the ranks that load them) and
    /// `len` (the buffer's elements) after the agreement's data in this
    /// rank's cell of the round that begins next, when every rank can reach
    /// all three and the cell holds them; the buffer's address if it did.
    fn publish_partition(&self, buf: Side, counts: &[i32], displs: &[i32], len: usize) -> Option<*mut u8> {
        let base = self
            .reachable_partition(buf, counts, displs)
            .filter(|_| self.collective_bytes() >= PARTITION_END)?;
        let cell = self.next_rank_cell(self.rank);
        // SAFETY: our own cell of the next round, `PARTITION_END <=
        // collective_bytes` bytes, 8-byte aligned; no other rank reads or
        // writes it before that round's barrier, and the agreement round
        // writes only the bytes before `AGREEMENT_END`.
        unsafe {
            let words = [
                base as u64,
                counts.as_ptr() as u64,
                displs.as_ptr() as u64,
                len as u64,
            ];
            for (i, w) in words.into_iter().enumerate() {
                crate::shim::store_payload_u64(cell.add(AGREEMENT_END + 8 * i), w);
            }
        }
        Some(base)
    }

    /// An all-to-allv's data movement when every rank published its receive
    /// buffer and partition ([`World::publish_partition`]): for each rank
    /// `d`, the count and displacement rank `d` expects from us, and our
    /// part for it stored straight into its buffer when the counts agree
    /// and both entries are sound ([`entry_fault`]: ours in `send`, of
    /// `slen` elements, theirs in the buffer whose length rank `d`
    /// published). Receivers are taken [`PUSH_BATCH`] at a time: their four
    /// published words as one batch of independent loads, then their entries
    /// for us with ours as another. Returns the first count mismatch found
    /// and the class of the first faulty entry (those parts are not sent),
    /// and whether every typed walk succeeded.
    ///
    /// # Safety
    /// After an agreement that found every rank direct, whose round's cells
    /// hold the published words; `counts` and `displs` of one entry per
    /// rank, a partition of `src` (elements of `size` bytes) if sound.
    unsafe fn push_varcount_parts(
        &self,
        src: Side,
        counts: &[i32],
        displs: &[i32],
        slen: usize,
        size: usize,
    ) -> (Option<Error>, Option<ErrorClass>, bool) {
        let n = self.ranks() as usize;
        let me = self.rank as usize;
        let plain = match src {
            Side::Plain(s) => Some(s as *const u8),
            Side::Typed(_) => None,
        };
        let (mut wrong, mut fault, mut walked) = (None, None, true);
        let mut d0 = 0;
        while d0 < n {
            let mut to = [[0u64; 4]; PUSH_BATCH];
            let mut ours = [(0i32, 0i32); PUSH_BATCH];
            crate::shim::independent(|| {
                // Past the last rank the batch repeats it: every load is
                // issued, with no branch between them.
                for (i, (words, o)) in to.iter_mut().zip(ours.iter_mut()).enumerate() {
                    let e = (d0 + i).min(n - 1);
                    let at = self.published_at(e as u32);
                    for (k, w) in words.iter_mut().enumerate() {
                        // SAFETY: the four words rank d published in the
                        // agreement round's cell (the caller's contract).
                        *w = unsafe { crate::shim::load_payload_u64(at.add(8 * k)) };
                    }
                    // SAFETY: entry `e` of our arrays (the caller's contract).
                    *o = unsafe {
                        (
                            crate::shim::load_element(counts.as_ptr().add(e)),
                            crate::shim::load_element(displs.as_ptr().add(e)),
                        )
                    };
                }
            });
            // Their entries for us, and our sound parts of up to 16 plain
            // bytes, which then travel in registers: one batch, where a copy
            // per part would wait for each part's load in turn.
            let mut theirs = [(0i32, 0i32); PUSH_BATCH];
            let mut heads = [[0u64; 2]; PUSH_BATCH];
            crate::shim::independent(|| {
                for (i, ((t, h), [_, c, d, _])) in
                    theirs.iter_mut().zip(heads.iter_mut()).zip(to.iter()).enumerate()
                {
                    // SAFETY: entry `me` of rank d's counts and
                    // displacements, of one entry per rank (checked by rank
                    // d), unchanged until the call's verdict.
                    *t = unsafe {
                        (
                            crate::shim::load_element((*c as *const i32).add(me)),
                            crate::shim::load_element((*d as *const i32).add(me)),
                        )
                    };
                    let (c, at) = ours[i];
                    let len = c.max(0) as usize * size;
                    if let Some(s) =
                        plain.filter(|_| len <= 16 && entry_fault(c, at, slen as u64, size).is_none())
                    {
                        // SAFETY: our part d, `len` bytes inside `src`
                        // (checked just above).
                        *h = unsafe { load_small_part(s.add(at as usize * size), len) };
                    }
                }
            });
            for i in 0..PUSH_BATCH.min(n - d0) {
                let (count, displ) = theirs[i];
                let (c, at) = ours[i];
                if count != c {
                    wrong = wrong.or(Some(Error::CountMismatch {
                        count: c as u32,
                        expected: count as u32,
                    }));
                    continue;
                }
                let f = entry_fault(c, at, slen as u64, size)
                    .or_else(|| entry_fault(count, displ, to[i][3], size));
                if f.is_some() {
                    fault = fault.or(f);
                    continue;
                }
                let len = c as usize * size;
                // SAFETY: rank d's part for us, `c` of its elements (the same
                // type, agreed) at a displacement inside its buffer
                // (checked), which only we write; our part d, inside `src`
                // (checked), in `heads[i]` when plain and of at most 16
                // bytes.
                unsafe {
                    let dst = (to[i][0] as *mut u8).add(displ as usize * size);
                    if plain.is_some() && len <= 16 {
                        store_small_part(dst, heads[i], len);
                    } else if len > 0 {
                        walked &= src.read(at as usize * size, dst, len);
                    }
                }
            }
            d0 += PUSH_BATCH;
        }
        (wrong, fault, walked)
    }

    /// The agreement of the all-to-allv forms after their counts check
    /// (the staged counts round, or the direct path's pushes): no root, the
    /// datatype, and the largest part (`largest` bytes at this rank);
    /// `local` is this rank's own error, `fault` the class of one its pushes
    /// found in an entry (its own or a receiver's). The agreed longest part
    /// in bytes, or the error every rank returns: `recheck`'s (this rank's
    /// own partitions, checked whole), else `local`, else the agreement's.
    fn agree_parts(
        &self,
        local: Option<Error>,
        fault: Option<ErrorClass>,
        largest: usize,
        dtype: Datatype,
        what: WaitFor,
        recheck: impl FnOnce() -> Option<Error>,
    ) -> Result<usize, Error> {
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set(TYPE, dtype.id);
        mine.set_count(LEN, largest);
        if let Some(e) = &local {
            mine.fail(e);
        }
        if let Some(class) = fault {
            mine.fail_with(class);
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            core::hint::cold_path();
            return Err(recheck()
                .or(local)
                .unwrap_or_else(|| agreed.error(self, -1, 0, dtype.id)));
        }
        Ok(agreed.max(LEN) as usize)
    }

    /// The counts round of `MPI_Alltoallv`: an all-to-all of one word per
    /// pair (`scounts[d]` to rank `d`); returns the mismatch this rank
    /// found between what rank `q` will send it and `rcounts[q]`.
    fn exchange_counts(
        &self,
        scounts: &[i32],
        rcounts: &[i32],
        what: WaitFor,
    ) -> Result<Option<Error>, Error> {
        let mut wrong = None;
        self.all_to_all_rounds(
            4,
            Parts::Even(4),
            Parts::Even(4),
            |d, _at, cell, _len| {
                let c = scounts.get(d as usize).copied().unwrap_or(-1);
                // SAFETY: 4 bytes inside our own cell (`len` is 4: windows
                // are multiples of 4 bytes).
                unsafe { core::ptr::write_unaligned(cell as *mut i32, c) };
            },
            |q, _at, cell, _len| {
                // SAFETY: rank q staged its count for us there.
                let theirs = unsafe { core::ptr::read_unaligned(cell as *const i32) };
                crate::shim::note_global(cell, 4, false);
                let want = rcounts.get(q as usize).copied().unwrap_or(-1);
                if theirs != want && wrong.is_none() {
                    wrong = Some(Error::CountMismatch {
                        count: want as u32,
                        expected: theirs as u32,
                    });
                }
            },
            what,
        )?;
        Ok(wrong)
    }

    /// `MPI_Alltoallv` with `MPI_IN_PLACE`: part `q` of `buf` (`counts[q]`
    /// elements at `displs[q]`) goes to rank `q` and is replaced by what
    /// rank `q` sent, so rank `q`'s `counts[p]` must equal rank `p`'s
    /// `counts[q]`. When every rank's buffer and partition are plain global
    /// memory, each pair's parts are swapped straight between the two
    /// buffers by one rank of the pair, which checks the pair's counts
    /// ([`swap_varcount_parts`](Self::swap_varcount_parts)), and a second
    /// agreement carries the verdict. Otherwise the counts round checks them
    /// (as for the `into` form), then pairwise like
    /// [`all_to_all_in_place_impl`](Self::all_to_all_in_place_impl), every
    /// step as long as the longest part of any rank.
    pub(crate) fn all_to_all_varcount_in_place_impl<R>(
        &self,
        buf: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        let what = WaitFor {
            operation: WaitCall::AllToAll,
            peer: -2,
            tag: -1,
        };
        let n = self.ranks() as usize;
        let dtype = buf.buf.datatype();
        let size = dtype.size as usize;
        let len = buf.buf.count();
        // As the `into` form's: the arrays' lengths now, each entry where
        // it is loaded (direct) or after the agreement (staged).
        let local = partition_lengths(buf.counts, buf.displs, n).err();
        let recheck = || check_partition(buf.counts, buf.displs, len, n).err();
        let base = Side::of_mut(&mut *buf.buf).0;
        let published = match local {
            None => self.publish_partition(base, buf.counts, buf.displs, len),
            Some(_) => None,
        };
        let call = VarcountCall {
            root: -1,
            check: VARCOUNT_CALL,
            datatype: dtype.id,
            longest: 0,
            staged: published.is_none(),
            fault: None,
        };
        let agreed = self.agree_varcount(call, local, recheck, 0, what)?;
        if let (true, Some(ours)) = (agreed.direct(), published) {
            // SAFETY: every rank published its buffer and a partition of one
            // entry per rank (agreed direct), ours at `ours`.
            let (wrong, fault) = unsafe { self.swap_varcount_parts(ours, buf.counts, buf.displs, len, size) };
            // The verdict, and the barrier after which every buffer is
            // complete: a swapper that found a count mismatch or a faulty
            // entry makes every rank fail.
            self.agree_parts(wrong, fault, 0, dtype, what, recheck)?;
            return Ok(());
        }
        // Staged: every entry checked, the counts round, one verdict on
        // both, then pairwise.
        let (local, largest) = match check_partition(buf.counts, buf.displs, len, n) {
            Ok(l) => (None, l),
            Err(e) => (Some(e), 0),
        };
        let wrong = self.exchange_counts(buf.counts, buf.counts, what)?;
        let longest = self.agree_parts(local.or(wrong), None, largest * size, dtype, what, || None)?;
        let parts = Parts::Var {
            counts: buf.counts,
            displs: buf.displs,
            size,
        };
        // SAFETY: the parts lie inside `buf` (checked, and agreed on by
        // every rank), borrowed for the call.
        unsafe { self.pairwise_in_place(base, parts, longest, what) }
    }

    /// The data movement of an in-place all-to-allv whose ranks all
    /// published their buffers and partitions
    /// ([`World::publish_partition`]): as in
    /// [`swap_parts`](Self::swap_parts), each pair once by one rank of it
    /// ([`SwapOrder`]): part `q` of our buffer (`counts[q]` elements at
    /// `displs[q]`, of `len`) and part `p` of rank `q`'s (its entries `p`),
    /// swapped when the two counts agree and both entries are sound
    /// ([`entry_fault`]; our own part `p`, which stays, is checked first).
    /// [`PUSH_BATCH`] partners at a time: their four published words as one
    /// batch of independent loads, their entries for us with ours as
    /// another, then the swapped pairs' parts of up to 16 bytes, both
    /// sides', [`SMALL_SWAPS`] pairs per batch (longer parts three copies
    /// per pair, as [`swap_bytes`] does). Returns the first count mismatch
    /// found and the class of the first faulty entry (those pairs are not
    /// swapped); the caller's verdict closes the call.
    ///
    /// # Safety
    /// After an agreement that found every rank direct, whose round's cells
    /// hold the published words; `counts` and `displs` of one entry per
    /// rank, a partition of our buffer at `base` (elements of `size` bytes)
    /// if sound.
    unsafe fn swap_varcount_parts(
        &self,
        base: *mut u8,
        counts: &[i32],
        displs: &[i32],
        len: usize,
        size: usize,
    ) -> (Option<Error>, Option<ErrorClass>) {
        let n = self.ranks() as usize;
        let p = self.rank as usize;
        let order = SwapOrder::of(p, n);
        let (tmp, cb) = (self.next_rank_cell(self.rank), self.collective_bytes());
        let mut wrong = None;
        // SAFETY: entry `p` of our arrays (the caller's contract).
        let own = crate::shim::independent(|| unsafe {
            (
                crate::shim::load_element(counts.as_ptr().add(p)),
                crate::shim::load_element(displs.as_ptr().add(p)),
            )
        });
        let mut fault = entry_fault(own.0, own.1, len as u64, size);
        let mut j0 = 0;
        while j0 < n {
            let mut to = [[0u64; 4]; PUSH_BATCH];
            crate::shim::independent(|| {
                // Past the last partner the batch repeats it: every load
                // is issued, with no branch between them.
                for (i, words) in to.iter_mut().enumerate() {
                    let at = self.published_at(order.partner((j0 + i).min(n - 1)) as u32);
                    for (k, w) in words.iter_mut().enumerate() {
                        // SAFETY: the four words the partner published in
                        // the agreement round's cell (the caller's contract).
                        *w = unsafe { crate::shim::load_payload_u64(at.add(8 * k)) };
                    }
                }
            });
            let k = PUSH_BATCH.min(n - j0);
            let mut theirs = [(0i32, 0i32); PUSH_BATCH];
            let mut ours = [(0i32, 0i32); PUSH_BATCH];
            crate::shim::independent(|| {
                for (i, ((t, o), [_, c, d, _])) in theirs
                    .iter_mut()
                    .zip(ours.iter_mut())
                    .zip(to.iter())
                    .enumerate()
                    .take(k)
                {
                    let q = order.partner(j0 + i);
                    if order.swaps(q) {
                        // SAFETY: entry `p` of the partner's counts and
                        // displacements, of one entry per rank (checked by
                        // it), unchanged until the call's verdict; entry `q`
                        // of ours (the caller's contract).
                        unsafe {
                            *t = (
                                crate::shim::load_element((*c as *const i32).add(p)),
                                crate::shim::load_element((*d as *const i32).add(p)),
                            );
                            *o = (
                                crate::shim::load_element(counts.as_ptr().add(q)),
                                crate::shim::load_element(displs.as_ptr().add(q)),
                            );
                        }
                    }
                }
            });
            // The checks; then the swapped pairs' parts of up to 16 bytes,
            // both sides' words of `SMALL_SWAPS` pairs as one batch, where
            // a swap per pair waited for its own two loads.
            let mut swap = [false; PUSH_BATCH];
            for (i, ([_, _, _, their_len], ((count, displ), (c, at)))) in
                to.iter().zip(theirs.into_iter().zip(ours)).enumerate().take(k)
            {
                if !order.swaps(order.partner(j0 + i)) {
                    continue;
                }
                if count != c {
                    wrong = wrong.or(Some(Error::CountMismatch {
                        count: c as u32,
                        expected: count as u32,
                    }));
                    continue;
                }
                let f = entry_fault(c, at, len as u64, size)
                    .or_else(|| entry_fault(count, displ, *their_len, size));
                if f.is_some() {
                    fault = fault.or(f);
                    continue;
                }
                swap[i] = true;
            }
            // Our part q and the partner's part p of pair `i`, `c` elements
            // of `size` bytes each at displacements inside the two buffers
            // (checked where `swap[i]`), which only this rank touches in the
            // call.
            let sides = |i: usize| {
                let (c, at) = ours[i];
                let ours_at = base.wrapping_add(at as usize * size);
                let theirs_at = (to[i][0] as *mut u8).wrapping_add(theirs[i].1 as usize * size);
                (ours_at, theirs_at, c as usize * size)
            };
            let mut h = 0;
            while h < k {
                let mut parts = [([0u64; 2], [0u64; 2]); SMALL_SWAPS];
                crate::shim::independent(|| {
                    for (j, (a, b)) in parts.iter_mut().enumerate() {
                        let i = h + j;
                        if i < k && swap[i] {
                            let (a_at, b_at, n) = sides(i);
                            if n <= 16 {
                                // SAFETY: the pair's two parts (`sides`).
                                unsafe { (*a, *b) = (load_small_part(a_at, n), load_small_part(b_at, n)) };
                            }
                        }
                    }
                });
                for (j, (a, b)) in parts.into_iter().enumerate() {
                    let i = h + j;
                    if i < k && swap[i] {
                        let (a_at, b_at, n) = sides(i);
                        // SAFETY: the pair's two parts (`sides`); `tmp` our
                        // own next cell of `cb` bytes.
                        unsafe {
                            if n <= 16 {
                                store_small_part(a_at, b, n);
                                store_small_part(b_at, a, n);
                            } else {
                                swap_bytes(a_at, b_at, n, tmp, cb);
                            }
                        }
                    }
                }
                h += SMALL_SWAPS;
            }
            j0 += PUSH_BATCH;
        }
        (wrong, fault)
    }

    /// `None`, or `MPI_ERR_ROOT` for a root outside the world.
    pub(crate) fn check_root(&self, root: i32) -> Option<Error> {
        self.check_rank(root).err().map(|_| Error::InvalidRoot {
            root,
            size: self.size(),
        })
    }
}
