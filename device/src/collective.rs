//! Collective communication (MPI standard chapter 6).
//!
//! - [`CommunicatorCollectives::barrier`] is block-wise like the thesis's
//!   (B. D. Young, "MPI within a GPU", 2009, fig. 5.11): the ranks of a block
//!   meet at the block barrier, then one rank per block adds the block's
//!   arrival to the world's one arrival count, the arrival that completes
//!   the barrier releases it through one word, and each block's rank waits
//!   for that word; the block barrier again. Counts only grow (generation
//!   numbers are never reset). The thesis's single-writer counters, one per
//!   block read by every block, cost `blocks²` reads per barrier (5.9x a
//!   CUDA grid barrier on an H100); this is what a grid barrier does.
//! - [`Root::broadcast_into`]: the root stages rounds of the buffer in the
//!   world's broadcast area, a barrier publishes each round.
//! - [`Root::reduce_into_root`], [`CommunicatorCollectives::all_reduce_into`]:
//!   hierarchical: warp, block, grid. Each rank stages a round of its
//!   operand in its scratch cell; each warp folds its lanes with shuffles
//!   (lower lanes always on the left), the warps' partials meet in the
//!   block's shared memory and warp 0 folds them with shuffles (three block
//!   barriers whatever the block size; `World::block_tree`); the block's
//!   leader stages the block's partial result; after a world barrier the
//!   root's block (reduce) or every block (all-reduce) combines the block
//!   results: each rank folds a contiguous run of blocks, then the same
//!   warp/shared-memory fold over those ranks. The result is therefore `x0 op x1 op ... op
//!   x(n-1)` grouped as a balanced tree, which is what MPI 6.9.1 asks of an
//!   associative, possibly non-commutative operation.
//!
//! - The other collectives of the chapter — gather, scatter, all-gather,
//!   all-to-all and their varcount and in-place forms (`exchange`),
//!   reduce-scatter, scans and `reduce_local_into` (`prefix`) — start with
//!   an argument agreement (`agreement`: one all-reduce round), then stage
//!   their data in rounds of `collective_bytes` per rank through the same
//!   cells; docs/architecture.md and docs/limits.md describe them and their
//!   costs.
//!
//! Errors (a bad root, mismatched counts) are detected without leaving the
//! collective early wherever other ranks could still wait for this one: an
//! erroneous rank still takes part in every barrier and returns the error at
//! the end, so a bad argument never turns into a hang.

mod agreement;
mod api;
mod exchange;
pub mod immediate;
mod operation;

pub(crate) use crate::buffers::Side;

pub(crate) mod general;
pub(crate) mod hardware;
mod prefix;

use agreement::CELL_HEADER;
pub use api::{CommunicatorCollectives, Root};
pub use exchange::{Partition, PartitionMut};
pub use operation::{Elements, ElementsMut, Operation, SystemOperation, UserOperation};
pub use prefix::reduce_local_into;

use crate::communicator::wait_for;
use crate::communicator::CommView;
use crate::communicator::{Communicator, Process, World};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{Error, ErrorClass};
use crate::shim::{self, AtomicU32, Ordering};
use crate::trace;
use crate::wait::{Call as WaitCall, WaitFor, STATE_RUNNING};

/// Count word of a staged operand or partial result: the counts of the
/// combined ranks disagreed.
const COUNT_MISMATCH: u32 = u32::MAX;

/// The block's shared scratch during the block phase of a world reduction
/// ([`World::block_tree`]).
#[repr(C)]
struct BlockStage {
    /// Each warp's count word: the count its cells agreed on, or
    /// `COUNT_MISMATCH`.
    counts: [u32; 32],
    /// The warps' partial results, `k` elements per warp, when they fit.
    partials: [u8; PARTIAL_BYTES],
}

/// Bytes of [`BlockStage::partials`].
const PARTIAL_BYTES: usize = shim::SHARED_BLOCK_BYTES - 128;

impl World {
    /// The world barrier's arrival count and release word.
    fn grid_barrier(&self) -> (&AtomicU32, &AtomicU32) {
        use crate::memory::GridBarrier;
        let at = |field: usize| {
            // SAFETY: inside the world barrier's record at the start of the
            // barrier region, 4-byte aligned, accessed only atomically.
            unsafe { shim::atomic_u32_at(self.base, self.layout.barrier + field) }
        };
        (
            at(core::mem::offset_of!(GridBarrier, arrivals)),
            at(core::mem::offset_of!(GridBarrier, released)),
        )
    }

    /// Starts a staging round: the next half of the staging regions.
    ///
    /// Each round writes its half before the round's world barrier and reads
    /// it after; a half is written again two rounds later, after the next
    /// round's barrier, which no rank passes before every rank has finished
    /// reading. So a round needs no closing barrier.
    fn begin_staging_round(&self) {
        self.staging_round.set(self.staging_round.get().wrapping_add(1));
    }

    /// The half of the staging regions the current round uses.
    fn staging_half(&self) -> usize {
        (self.staging_round.get() & 1) as usize
    }

    fn rank_cell(&self, rank: u32) -> *mut u8 {
        let l = &self.layout;
        let half = self.staging_half() * l.ranks as usize * l.collective_bytes;
        // SAFETY: inside the rank scratch region (two halves of `ranks` cells).
        unsafe {
            self.base
                .add(l.rank_scratch + half + rank as usize * l.collective_bytes)
        }
    }

    /// Rank `rank`'s cell in the staging round that begins next: written
    /// before that round only by `rank` itself, to publish something its
    /// first world barrier orders (the other half's readers finished before
    /// the current round's barrier, which a rank between collectives has
    /// passed).
    fn next_rank_cell(&self, rank: u32) -> *mut u8 {
        let l = &self.layout;
        let half = (1 - self.staging_half()) * l.ranks as usize * l.collective_bytes;
        // SAFETY: inside the rank scratch region (two halves of `ranks` cells).
        unsafe {
            self.base
                .add(l.rank_scratch + half + rank as usize * l.collective_bytes)
        }
    }

    fn block_cell(&self, block: u32) -> *mut u8 {
        let l = &self.layout;
        let half = self.staging_half() * l.blocks as usize * l.collective_bytes;
        // SAFETY: inside the block scratch region (two halves of `blocks` cells).
        unsafe {
            self.base
                .add(l.block_scratch + half + block as usize * l.collective_bytes)
        }
    }

    fn collective_bytes(&self) -> usize {
        self.layout.collective_bytes
    }

    /// A block's flag word: set to the current barrier generation by a rank
    /// of the block that found a count mismatch after a reduction round.
    fn block_flag(&self, block: u32) -> &AtomicU32 {
        let off = self.layout.barrier
            + crate::state::GRID_BARRIER_BYTES
            + block as usize * crate::state::BARRIER_STRIDE
            + core::mem::offset_of!(crate::memory::BarrierRecord, flag);
        // SAFETY: inside the block's barrier record (64 bytes), aligned, atomic-only.
        unsafe { shim::atomic_u32_at(self.base, off) }
    }

    /// The world barrier, recorded as `what` in the wait record.
    ///
    /// Block barrier; the block's first rank adds the block's arrival to
    /// the one arrival count of the world ([`GridBarrier`](crate::memory::GridBarrier)),
    /// and the arrival that completes the generation (the number of world
    /// barriers so far, the same on every rank: generation `g` is complete
    /// at `g × blocks` arrivals) stores `g` in the release word; each
    /// block's first rank waits for the release word to reach `g`; block
    /// barrier. One read-modify-write and one polled word per block, what
    /// a CUDA grid barrier does: the thesis's single-writer counters (one
    /// per block, every block reading every counter) put `blocks²` polls on
    /// the memory system each round, 11.3 µs on an H100 against the native
    /// 1.9 (docs/performance.md). The other ranks of a block wait in the
    /// block barrier, which costs no memory traffic.
    ///
    /// It fails alike on every rank of a block. The opening block barrier
    /// counts the ranks that came: a rank that returned from the kernel does
    /// not hold a block barrier (PTX `exit`; the emulator does the same), so
    /// a count short of the block means a rank that will never enter. Such a
    /// block does not arrive (so the generation is never released and every
    /// other block's barrier fails too) and waits, bounded, for nothing
    /// ([`crate::wait::barrier_wait_forever`]).
    /// The closing block barrier counts the ranks whose waits succeeded:
    /// when the first rank's failed, its block-mates return `Aborted` as
    /// well ([`crate::wait::barrier_failed`]), so no rank of the block goes
    /// on into a collective's next step alone.
    #[inline(always)]
    fn world_barrier(&self, what: WaitFor) -> Result<(), Error> {
        self.record_wait(what);
        let generation = self.barrier_generation.get().wrapping_add(1);
        self.barrier_generation.set(generation);
        let present = shim::block_barrier_count(true);
        // This rank's failure as a `wait::barrier_word` (0: none), not a
        // `Result`: it is held across the closing block barrier.
        let mut failure: u64 = 0;
        let blocks = self.layout.blocks;
        if present != self.layout.block_dim {
            failure = crate::wait::barrier_wait_forever(
                self.base as u64,
                self.rank,
                what.operation,
                what.peer,
                what.tag,
            );
        } else if blocks > 1 && self.thread == 0 {
            let (arrivals, released) = self.grid_barrier();
            // The block's ranks' writes are ordered before this point by
            // the block barrier; the fence makes them visible device-wide
            // before we arrive.
            shim::fence(Ordering::AcqRel);
            // AcqRel: the release carries this block's writes to the arrival
            // that completes the generation; the acquire takes every earlier
            // arrival's (the arrivals are one release sequence).
            let before = arrivals.fetch_add(1, Ordering::AcqRel);
            if before.wrapping_add(1) == generation.wrapping_mul(blocks) {
                // Release pairs with the Acquire loads below: it passes on
                // every block's writes, which the arrival above acquired.
                released.store(generation, Ordering::Release);
            }
            let r = wait_for(self, what, |_| {
                // Acquire pairs with the Release store of the arrival that
                // completed the generation.
                let v = released.load(Ordering::Acquire);
                (v.wrapping_sub(generation) as i32 >= 0).then_some(Ok(()))
            });
            match r {
                Ok(()) => {
                    // Orders what this rank acquired before its arrival at
                    // the closing block barrier, through which the rest of
                    // the block sees it.
                    shim::fence(Ordering::AcqRel);
                    // A finished wait marks the rank running; it still
                    // waits for its block.
                    self.record_wait(what);
                }
                Err(e) => failure = crate::wait::barrier_word(e),
            }
        }
        let passed = shim::block_barrier_count(failure == 0);
        self.record_state(STATE_RUNNING);
        if failure != 0 || passed != present {
            let word = crate::wait::barrier_failed(self.base as u64, self.rank, failure);
            return Err(crate::wait::barrier_error(word, what));
        }
        Ok(())
    }

    /// Reduce (`root` given) or all-reduce of the `n` elements at `send`
    /// into the `recv` elements (pointer and length) of the ranks that get
    /// the result.
    ///
    /// `send` and `recv` may be the same buffer (in place): each round reads
    /// its elements `lo..hi` of `send` when it stages them and writes the
    /// same elements of `recv` after the round's combination, so no element
    /// is read after it was written.
    ///
    /// Inlined into each call: the operands are copied here, and every
    /// barrier and shuffle of a round is in [`reduce_step`], one copy that a
    /// root and its warp-mates share. Passing `send` or `recv` to an
    /// out-of-line function would put a scalar operand in local memory.
    ///
    /// # Safety
    /// `send` valid for reads of `n` elements and `recv` for writes of its
    /// length for the whole call; nothing else accesses them meanwhile.
    #[inline(always)]
    unsafe fn reduce_impl<T, O>(
        &self,
        send: *const T,
        n: usize,
        mut recv: Option<(*mut T, usize)>,
        root: Option<i32>,
        op: &O,
    ) -> Result<(), Error>
    where
        T: Equivalence,
        O: Operation<T>,
    {
        // Same datatype and operation on every rank: every rank returns here
        // alike, before any barrier.
        op.check()?;
        let size = core::mem::size_of::<T>();
        let per_round = (self.collective_bytes() - CELL_HEADER) / size.max(1);
        if per_round == 0 || core::mem::align_of::<T>() > CELL_HEADER {
            return Err(Error::BufferTooLarge {
                bytes: size as u32,
                limit: (self.collective_bytes() - CELL_HEADER) as u32,
            });
        }
        let what = match root {
            Some(r) => WaitFor {
                operation: WaitCall::Reduce,
                peer: r,
                tag: -1,
            },
            None => WaitFor {
                operation: WaitCall::AllReduce,
                peer: -2,
                tag: -1,
            },
        };
        let mut local_error = None;
        if let Some(r) = root {
            if self.check_rank(r).is_err() {
                // Every rank sees the same bad root: return alike.
                return Err(Error::InvalidRoot {
                    root: r,
                    size: self.size(),
                });
            }
        }
        if let Some((_, len)) = recv {
            if len != n {
                local_error = Some(Error::CountMismatch {
                    count: len as u32,
                    expected: n as u32,
                });
                recv = None;
            }
        }
        let is_root = root.is_none_or(|r| r == self.rank());
        let rounds = n.div_ceil(per_round).max(1);
        let mut round = 0;
        while round < rounds {
            let lo = round * per_round;
            let hi = (lo + per_round).min(n);
            let reference = root.unwrap_or(0) as u32;
            let k = hi - lo;
            // SAFETY: `lo <= hi <= n` elements of `send` (the caller's contract).
            self.stage_operands(unsafe { send.add(lo) }, k, n as u32);
            // Reduce: the root's block combines the block results; all-reduce:
            // every block does.
            let combines = root.is_none_or(|r| r as u32 / self.layout.block_dim == self.block);
            let generation = self.barrier_generation.get();
            let word = reduce_step::<T, O>(
                self.base,
                self.rank,
                self.thread,
                self.block,
                generation,
                self.staging_round.get(),
                k,
                n as u32,
                reference,
                combines,
                op,
                what.operation,
                what.peer,
            );
            // A step passes exactly one world barrier, failed or not.
            self.barrier_generation.set(generation.wrapping_add(1));
            if word != 0 {
                return Err(step_error(word, n as u32, what));
            }
            // A rank that gets the result is in a block that combined.
            if let Some((out, _)) = recv.filter(|_| is_root) {
                let leader = self.block * self.layout.block_dim;
                let cell = self.rank_cell(leader);
                // SAFETY: the leader's cell holds k combined elements,
                // published by the block tree's closing barrier; `out`
                // holds `n >= hi` elements (checked above).
                unsafe { shim::copy_bytes(out.add(lo) as *mut u8, cell.add(CELL_HEADER), k * size) };
            }
            round += 1;
        }
        if root.is_some() && recv.is_none() && is_root && local_error.is_none() {
            local_error = Some(Error::InvalidRoot {
                root: self.rank(),
                size: self.size(),
            });
        }
        match local_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One round: stage `part`, combine inside the block, stage the block's
    /// result, meet at the barrier. `Ok(Err(expected))` when the ranks passed
    /// different counts (every rank reads the same answer), with the count
    /// that rank `reference` (the root, or rank 0) passed.
    #[inline(always)]
    fn reduce_round<T: Equivalence, O: Operation<T>>(
        &self,
        part: *const T,
        k: usize,
        count: u32,
        reference: u32,
        op: &O,
        what: WaitFor,
    ) -> Result<Result<(), u32>, Error> {
        self.stage_operands(part, k, count);
        self.reduce_staged::<T, O>(k, count, reference, op, what)
    }

    /// Opens a staging round and copies the `k` elements at `part` into this
    /// rank's cell, with `count` in both count words.
    #[inline(always)]
    fn stage_operands<T: Equivalence>(&self, part: *const T, k: usize, count: u32) {
        let bytes = k * core::mem::size_of::<T>();
        self.begin_staging_round();
        let cell = self.rank_cell(self.rank);
        // SAFETY: our own cell: combined-count word, own-count word, then
        // `per_round >= k` elements (checked by the caller); no other rank
        // touches it before the block barrier of the round. `part` holds `k`
        // readable elements (the caller's contract).
        unsafe {
            core::ptr::write(cell as *mut u32, count);
            core::ptr::write(cell.add(4) as *mut u32, count);
            shim::copy_bytes(cell.add(CELL_HEADER), part as *const u8, bytes);
        }
    }

    /// The rest of [`World::reduce_round`], once the operands are staged.
    #[inline(always)]
    fn reduce_staged<T: Equivalence, O: Operation<T>>(
        &self,
        k: usize,
        count: u32,
        reference: u32,
        op: &O,
        what: WaitFor,
    ) -> Result<Result<(), u32>, Error> {
        let bytes = k * core::mem::size_of::<T>();
        let cell = self.rank_cell(self.rank);
        self.record_wait(what);
        self.block_tree(self.layout.block_dim, k, op);
        if self.thread == 0 {
            // SAFETY: the leader's cell holds the block's result (published by
            // the block tree's closing barrier); the block's cell is written
            // only by its leader.
            unsafe { shim::copy_bytes(self.block_cell(self.block), cell, CELL_HEADER + bytes) };
        }
        self.world_barrier(what)?;
        // The block's ranks share the check of the block results' count words.
        let mut mismatch = false;
        let mut block = self.thread;
        while block < self.layout.blocks {
            // SAFETY: block cells were written before the barrier; this half is
            // written again only after the next round's barrier
            // (`begin_staging_round`).
            if unsafe { core::ptr::read(self.block_cell(block) as *const u32) } != count {
                mismatch = true;
                break;
            }
            block += self.layout.block_dim;
        }
        let flag = self.block_flag(self.block);
        // The generation of the barrier just passed names this round; no
        // reset is needed between rounds.
        let generation = self.barrier_generation.get();
        if mismatch {
            // Relaxed: read only by this block's ranks, after the block barrier
            // below, which orders memory among them.
            flag.store(generation, Ordering::Relaxed);
        }
        shim::block_barrier();
        // Relaxed: see the store above.
        if flag.load(Ordering::Relaxed) == generation {
            // SAFETY: the reference rank's own-count word was written before
            // the barrier; this half is restaged only after the next round's
            // barrier.
            let expected = unsafe { core::ptr::read(self.rank_cell(reference).add(4) as *const u32) };
            return Ok(Err(expected));
        }
        Ok(Ok(()))
    }

    /// Combines the data of the cells of this block's first `active` ranks
    /// (`k` elements each) into the cell of the block's first rank, in rank
    /// order, with the block's hardware: a shuffle tree per warp
    /// ([`hardware::warp_fold`]: lower lanes on the left), the warps'
    /// partials in the block's shared scratch ([`BlockStage`]; when `warps ×
    /// k` elements do not fit there, in the cell of each warp's first rank),
    /// and a shuffle tree of the partials in warp 0. Three block barriers
    /// whatever the block size; the thesis's tree of neighbours in global
    /// memory took `log2(active) + 1`, a memory round trip after each. A
    /// cell whose count word differs from the first cell's (inside a warp,
    /// or between warps) makes the result's count word `COUNT_MISMATCH`.
    /// Every rank of the block calls it.
    ///
    /// The barriers and shuffles are in one out-of-line copy
    /// ([`block_tree_at`]), called with this world's scalars.
    #[inline(always)]
    fn block_tree<T: Equivalence, O: Operation<T>>(&self, active: u32, k: usize, op: &O) {
        block_tree_at::<T, O>(
            self.base,
            self.rank,
            self.thread,
            self.block,
            self.staging_round.get(),
            active,
            k,
            op,
        );
    }

    /// The body of [`World::block_tree`].
    #[inline(always)]
    fn block_tree_body<T: Equivalence, O: Operation<T>>(&self, active: u32, k: usize, op: &O) {
        // Also orders the shared scratch: the ranks' previous collective (a
        // block communicator's) may read it until every rank has come here.
        // A block short of a rank that returned (no shuffle may name it) skips
        // the combination; the world barrier that follows fails it.
        let whole = shim::block_barrier_count(true) == self.layout.block_dim;
        let lane = self.thread % 32;
        let warp = self.thread / 32;
        let warps = active.div_ceil(32);
        let size = core::mem::size_of::<T>();
        let stage = shim::shared_block::<{ core::mem::size_of::<BlockStage>() }>() as *mut BlockStage;
        // SAFETY: the stage's fields, inside the shared scratch.
        let (counts, shared) = unsafe {
            (
                core::ptr::addr_of_mut!((*stage).counts) as *mut u32,
                core::ptr::addr_of_mut!((*stage).partials) as *mut u8,
            )
        };
        // Where warp `w`'s partial `i` lives: `base + w × stride + i × size`.
        let (base, stride) = if warps as usize * k * size <= PARTIAL_BYTES {
            (shared, k * size)
        } else {
            // SAFETY: the data area of the block's first cell; cells of the
            // warps' first ranks are `32 × collective_bytes` apart.
            let first = unsafe {
                self.rank_cell(self.block * self.layout.block_dim)
                    .add(CELL_HEADER)
            };
            (first, 32 * self.collective_bytes())
        };
        let mask = shim::warp_mask();
        if whole && warp < warps {
            let n = (active - 32 * warp).min(32);
            let cell = self.rank_cell(self.rank);
            // SAFETY: our own cell, staged by this rank (a lane past `n`
            // reads its stale cell, which no lane combines).
            let c = unsafe { core::ptr::read(cell as *const u32) };
            let first = shim::shfl_sync(mask, c, 0);
            let differs = shim::vote_any_sync(mask, lane < n && c != first);
            if lane == 0 {
                // SAFETY: this warp's count word of the stage.
                unsafe {
                    counts
                        .add(warp as usize)
                        .write(if differs { COUNT_MISMATCH } else { c })
                };
            }
            if !differs {
                // Equal count words: the same `k` on every lane of the warp.
                for i in 0..k {
                    // SAFETY: element `i < k <= per_round` of our own cell.
                    let x = unsafe { core::ptr::read((cell.add(CELL_HEADER) as *const T).add(i)) };
                    let x = hardware::warp_fold(mask, lane, n, x, op);
                    if lane == 0 {
                        // SAFETY: partial `i` of this warp, inside the stage
                        // (`warps × k` elements fit) or in this rank's own cell,
                        // whose element `i` it read above.
                        unsafe { core::ptr::write(base.add(warp as usize * stride + i * size) as *mut T, x) };
                    }
                }
            }
        }
        shim::block_barrier();
        if whole && warp == 0 {
            let result = self.rank_cell(self.rank);
            // SAFETY: the warps' count words, written before the barrier.
            let (c0, c) = unsafe { (counts.read(), counts.add(lane.min(warps - 1) as usize).read()) };
            if shim::vote_any_sync(mask, c != c0) || c0 == COUNT_MISMATCH {
                if lane == 0 {
                    // SAFETY: the block's first cell is this rank's own.
                    unsafe { core::ptr::write(result as *mut u32, COUNT_MISMATCH) };
                }
            } else {
                for i in 0..k {
                    let from = lane.min(warps - 1) as usize;
                    // SAFETY: partial `i` of warp `from`, written before the
                    // barrier.
                    let y = unsafe { core::ptr::read(base.add(from * stride + i * size) as *const T) };
                    let y = hardware::warp_fold(mask, lane, warps, y, op);
                    if lane == 0 {
                        // SAFETY: element `i` of the block's first cell (our
                        // own); where the partials live there, every lane read
                        // element `i` before the shuffles that produced `y`.
                        unsafe { core::ptr::write((result.add(CELL_HEADER) as *mut T).add(i), y) };
                    }
                }
                if lane == 0 {
                    // SAFETY: as above.
                    unsafe { core::ptr::write(result as *mut u32, c0) };
                }
            }
        }
        shim::block_barrier();
    }

    /// Combines the staged results of blocks `0..blocks` (`k` elements
    /// each, counts already checked equal to `count`; `blocks >= 1`) in block
    /// order into the cell of this block's first rank. Every rank of the block calls it: rank `t` folds a
    /// contiguous run of blocks into its own cell, then a block tree combines
    /// the runs, so the order is block order and the critical path is a few
    /// memory round trips instead of one per block.
    fn combine_blocks<T: Equivalence, O: Operation<T>>(&self, blocks: u32, k: usize, count: u32, op: &O) {
        let per_rank = blocks.div_ceil(self.layout.block_dim);
        let active = blocks.div_ceil(per_rank);
        if self.thread < active {
            let first = self.thread * per_rank;
            let end = (first + per_rank).min(blocks);
            let cell = self.rank_cell(self.rank);
            let data = |b: u32| -> *const T {
                // SAFETY: the data area of a block cell, inside the block scratch.
                unsafe { self.block_cell(b).add(CELL_HEADER) as *const T }
            };
            // SAFETY: the block cells hold `k` staged elements each (counts
            // checked), published by the round's barrier and not written again
            // before the next round's; our own cell is free after the block
            // tree (its result went to the block cell) and holds
            // `per_round >= k` elements.
            unsafe {
                core::ptr::write(cell as *mut u32, count);
                let out = cell.add(CELL_HEADER) as *mut T;
                for i in 0..k {
                    let mut acc = core::ptr::read(data(first).add(i));
                    for b in first + 1..end {
                        acc = op.apply(&acc, &core::ptr::read(data(b).add(i)));
                    }
                    core::ptr::write(out.add(i), acc);
                }
            }
        }
        self.block_tree(active, k, op);
    }

    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    fn broadcast_impl<B: BufferMut + ?Sized>(&self, root: i32, buf: &mut B) -> Result<(), Error> {
        if self.check_rank(root).is_err() {
            return Err(Error::InvalidRoot {
                root,
                size: self.size(),
            });
        }
        let datatype = buf.datatype();
        let (side, len) = Side::of_mut(buf);
        let mut walked = true;
        let what = WaitFor {
            operation: WaitCall::Broadcast,
            peer: root,
            tag: -1,
        };
        let capacity = self.collective_bytes() - CELL_HEADER;
        let is_root = root == self.rank();
        let mut offset = 0usize;
        let mut local_error = None;
        loop {
            self.begin_staging_round();
            let area = self.broadcast_area();
            if is_root {
                let n = len.saturating_sub(offset).min(capacity);
                // SAFETY: only the root writes the area; this half was last
                // read in the round before the last one, which every rank
                // finished before passing the last round's barrier.
                unsafe {
                    core::ptr::write(area as *mut u32, len as u32);
                    core::ptr::write(area.add(4) as *mut u32, datatype.id);
                    walked &= side.read(offset, area.add(CELL_HEADER), n);
                }
            }
            self.world_barrier(what)?;
            // SAFETY: published by the barrier; nobody writes this half until
            // after the next round's barrier.
            let (total, id) = unsafe {
                (
                    core::ptr::read(area as *const u32) as usize,
                    core::ptr::read(area.add(4) as *const u32),
                )
            };
            if !is_root && local_error.is_none() {
                let status = crate::status::Status {
                    source: root,
                    tag: -1,
                    bytes: total as u32,
                    datatype: id,
                };
                if id != datatype.id && datatype.id != crate::datatype::ID_BYTE {
                    local_error = Some(Error::TypeMismatch {
                        status,
                        expected: datatype.id,
                    });
                } else if total != len {
                    local_error = Some(Error::CountMismatch {
                        count: (len / datatype.size.max(1) as usize) as u32,
                        expected: (total / datatype.size.max(1) as usize) as u32,
                    });
                }
            }
            if !is_root && !matches!(local_error, Some(Error::TypeMismatch { .. })) {
                let n = total.min(len).saturating_sub(offset).min(capacity);
                // SAFETY: as above; `offset + n <= len`.
                walked &= unsafe { side.write(offset, area.add(CELL_HEADER), n) };
            }
            offset += capacity;
            if offset >= total {
                break;
            }
        }
        match local_error {
            Some(e) => Err(e),
            None if !walked => Err(Error::Intern),
            None => Ok(()),
        }
    }

    fn broadcast_area(&self) -> *mut u8 {
        let half = self.staging_half() * self.layout.collective_bytes;
        // SAFETY: the broadcast region (two halves) lies inside the world memory.
        unsafe { self.base.add(self.layout.broadcast + half) }
    }
}

impl CommunicatorCollectives for World {
    fn barrier(&self) -> Result<(), Error> {
        let span = trace::Span::enter(&self.core(), WaitCall::Barrier as u32, -2);
        span.leave(self.world_barrier(WaitFor {
            operation: WaitCall::Barrier,
            peer: -2,
            tag: -1,
        }))
    }

    fn all_reduce_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllReduce as u32, -2);
        let (s, r) = (send.elements(), recv.elements_mut());
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe {
            self.reduce_impl(s.as_ptr(), s.len(), Some((r.as_mut_ptr(), r.len())), None, &op)
        })
    }

    fn all_reduce_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllReduce as u32, -2);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        // SAFETY: one exclusively borrowed slice, read and written only
        // through `p` (reduce_impl's in-place order).
        span.leave(unsafe { self.reduce_impl(p as *const T, n, Some((p, n)), None, &op) })
    }

    fn all_gather_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllGather as u32, -2);
        span.leave(self.all_gather_impl(Some(send), recv, None))
    }

    fn all_gather_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllGather as u32, -2);
        span.leave(self.all_gather_impl::<u8, R>(None, buf, None))
    }

    fn all_gather_varcount_into<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllGather as u32, -2);
        let (counts, displs) = (recv.counts, recv.displs);
        span.leave(self.all_gather_impl(Some(send), &mut *recv.buf, Some((counts, displs))))
    }

    fn all_gather_varcount_in_place<R>(&self, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllGather as u32, -2);
        let (counts, displs) = (recv.counts, recv.displs);
        span.leave(self.all_gather_impl::<u8, R>(None, &mut *recv.buf, Some((counts, displs))))
    }

    fn all_to_all_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllToAll as u32, -2);
        span.leave(self.all_to_all_impl(send, recv))
    }

    fn all_to_all_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllToAll as u32, -2);
        span.leave(self.all_to_all_in_place_impl(buf))
    }

    fn all_to_all_varcount_into<S, R>(
        &self,
        send: &Partition<'_, S>,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllToAll as u32, -2);
        span.leave(self.all_to_all_varcount_impl(send, recv))
    }

    fn all_to_all_varcount_in_place<R>(&self, buf: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::AllToAll as u32, -2);
        span.leave(self.all_to_all_varcount_in_place_impl(buf))
    }

    fn reduce_scatter_block_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::ReduceScatter as u32, -2);
        let (s, r) = (send.elements(), recv.elements_mut());
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe {
            self.reduce_scatter_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), None, &op)
        })
    }

    fn reduce_scatter_block_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::ReduceScatter as u32, -2);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        let k = n / (self.layout.ranks as usize);
        // SAFETY: one exclusively borrowed slice used only through `p`; the
        // result (the first `k` elements) is written in reduce_scatter_impl's
        // in-place order.
        span.leave(unsafe { self.reduce_scatter_impl(p as *const T, n, p, k, None, &op) })
    }

    fn reduce_scatter_into<T, S, R, O>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[i32],
        op: O,
    ) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::ReduceScatter as u32, -2);
        let (s, r) = (send.elements(), recv.elements_mut());
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe {
            self.reduce_scatter_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), Some(counts), &op)
        })
    }

    fn reduce_scatter_in_place<T, R, O>(&self, buf: &mut R, counts: &[i32], op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::ReduceScatter as u32, -2);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        // The result's length is this rank's count (a missing or negative
        // one fails in the counts' checks).
        let k = counts.get(self.rank as usize).copied().unwrap_or(0).max(0) as usize;
        // SAFETY: one exclusively borrowed slice used only through `p`; the
        // result (the first `k <= n` elements, else the counts' checks fail
        // before any write) is written in reduce_scatter_impl's in-place
        // order.
        span.leave(unsafe { self.reduce_scatter_impl(p as *const T, n, p, k, Some(counts), &op) })
    }

    fn scan_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::Scan as u32, -2);
        let (s, r) = (send.elements(), recv.elements_mut());
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe { self.scan_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), false, &op) })
    }

    fn scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::Scan as u32, -2);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        // SAFETY: one exclusively borrowed slice used only through `p`, in
        // scan_impl's in-place order.
        span.leave(unsafe { self.scan_impl(p as *const T, n, p, n, false, &op) })
    }

    fn exclusive_scan_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::Scan as u32, -2);
        let (s, r) = (send.elements(), recv.elements_mut());
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe { self.scan_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), true, &op) })
    }

    fn exclusive_scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let span = trace::Span::enter(&self.core(), WaitCall::Scan as u32, -2);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        // SAFETY: as in `scan_in_place`.
        span.leave(unsafe { self.scan_impl(p as *const T, n, p, n, true, &op) })
    }
}

impl Process<'_> {
    /// The general algorithms' view of this process's communicator, when
    /// it is not the world.
    #[inline(always)]
    fn sub(&self) -> Option<CommView<'_>> {
        (self.comm.id != 0).then(|| CommView::of(self.world, self.comm))
    }
}

impl Root for Process<'_> {
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Broadcast, self.rank, || {
                hardware::broadcast_buffer(&v, self.rank, buf).unwrap_or_else(|| v.broadcast(self.rank, buf))
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Broadcast as u32, self.rank);
        span.leave(self.world.broadcast_impl(self.rank, buf))
    }

    fn reduce_into_root<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Reduce, self.rank, || {
                let (s, n) = general::elements(send);
                let r = general::elements_mut(recv);
                // SAFETY: two borrowed slices, valid for the call.
                unsafe { hardware::reduce(&v, s, n, Some(r), Some(self.rank), &op) }
                    // SAFETY: as above.
                    .unwrap_or_else(|| unsafe { v.reduce(s, n, Some(r), self.rank, &op) })
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Reduce as u32, self.rank);
        let s = send.elements();
        let recv = if self.rank == self.world.rank() {
            let r = recv.elements_mut();
            Some((r.as_mut_ptr(), r.len()))
        } else {
            None
        };
        // SAFETY: two distinct borrowed slices, valid for the call.
        span.leave(unsafe {
            self.world
                .reduce_impl(s.as_ptr(), s.len(), recv, Some(self.rank), &op)
        })
    }

    fn reduce_into_root_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Reduce, self.rank, || {
                let (p, n) = general::elements_mut(buf);
                // SAFETY: one slice, each element read before it is written.
                unsafe { hardware::reduce(&v, p as *const T, n, Some((p, n)), Some(self.rank), &op) }
                    // SAFETY: one slice, each chunk read before it is written.
                    .unwrap_or_else(|| unsafe { v.reduce(p as *const T, n, Some((p, n)), self.rank, &op) })
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Reduce as u32, self.rank);
        let b = buf.elements_mut();
        let (p, n) = (b.as_mut_ptr(), b.len());
        let recv = (self.rank == self.world.rank()).then_some((p, n));
        // SAFETY: one exclusively borrowed slice used only through `p`, in
        // reduce_impl's in-place order.
        span.leave(unsafe {
            self.world
                .reduce_impl(p as *const T, n, recv, Some(self.rank), &op)
        })
    }

    fn reduce_into<T, S, O>(&self, send: &S, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        O: Operation<T>,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Reduce, self.rank, || {
                let (s, n) = general::elements(send);
                // SAFETY: a borrowed slice, valid for the call.
                unsafe { hardware::reduce(&v, s, n, None, Some(self.rank), &op) }
                    // SAFETY: as above.
                    .unwrap_or_else(|| unsafe { v.reduce(s, n, None, self.rank, &op) })
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Reduce as u32, self.rank);
        let s = send.elements();
        // SAFETY: a borrowed slice, valid for the call.
        span.leave(unsafe {
            self.world
                .reduce_impl(s.as_ptr(), s.len(), None, Some(self.rank), &op)
        })
    }

    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                let (sp, sn) = general::place_of(send);
                // SAFETY: the send buffer borrowed for the call.
                let hw =
                    unsafe { hardware::gather(&v, Some(self.rank), Some(sp), sn, None, send.datatype()) };
                if let Some(r) = hw {
                    return r;
                }
                v.gather(
                    self.rank,
                    Some(general::place_of(send)),
                    None,
                    None,
                    send.datatype(),
                )
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        span.leave(self.world.gather_impl::<S, [u8]>(self.rank, Some(send), None))
    }

    fn gather_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                let dt = send.datatype();
                let (sp, sn) = general::place_of(send);
                // The receive buffer counts at the root only (MPI 6.5).
                let mine = v.rank as i32 == self.rank;
                let hw_recv = mine.then(|| general::place_of_mut(recv));
                // SAFETY: both buffers borrowed for the call, distinct.
                let hw = unsafe { hardware::gather(&v, Some(self.rank), Some(sp), sn, hw_recv, dt) };
                if let Some(r) = hw {
                    return r;
                }
                v.gather(
                    self.rank,
                    Some(general::place_of(send)),
                    Some(general::place_of_mut(recv)),
                    None,
                    dt,
                )
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        let recv = (self.rank == self.world.rank()).then_some(recv);
        span.leave(self.world.gather_impl(self.rank, Some(send), recv))
    }

    fn gather_into_root_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                let dt = buf.datatype();
                let (p, n) = general::place_of_mut(buf);
                let hw = if v.rank as i32 == self.rank {
                    let part = n / v.size as usize;
                    // SAFETY: the buffer borrowed for the call; its first
                    // `size × part` bytes are the parts.
                    unsafe {
                        hardware::gather(
                            &v,
                            Some(self.rank),
                            None,
                            part,
                            Some((p, part * v.size as usize)),
                            dt,
                        )
                    }
                } else {
                    // SAFETY: as above, this rank's part.
                    unsafe { hardware::gather(&v, Some(self.rank), Some(p), n, None, dt) }
                };
                if let Some(r) = hw {
                    return r;
                }
                if v.rank as i32 == self.rank {
                    v.gather(self.rank, None, Some((p, n)), None, dt)
                } else {
                    // Not the root: `buf` is this rank's contribution.
                    v.gather(self.rank, Some((p, n)), None, None, dt)
                }
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        if self.rank != self.world.rank() {
            // Not the root: `buf` is this rank's contribution.
            let send = exchange::Typed::of(buf);
            return span.leave(self.world.gather_impl::<_, [u8]>(self.rank, Some(&send), None));
        }
        span.leave(self.world.gather_impl::<[u8], R>(self.rank, None, Some(buf)))
    }

    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                v.gather(
                    self.rank,
                    Some(general::place_of(send)),
                    None,
                    None,
                    send.datatype(),
                )
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        span.leave(
            self.world
                .gather_varcount_impl::<S, [u8]>(self.rank, Some(send), None),
        )
    }

    fn gather_varcount_into_root<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                let s = general::place_of(send);
                if v.rank as i32 != self.rank {
                    return v.gather(self.rank, Some(s), None, None, send.datatype());
                }
                let (parts, rp, rn, dt) = general::partition_parts_mut(recv, v.size)?;
                v.gather(self.rank, Some(s), Some((rp, rn)), Some(parts), dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        let recv = (self.rank == self.world.rank()).then_some(recv);
        span.leave(self.world.gather_varcount_impl(self.rank, Some(send), recv))
    }

    fn gather_varcount_into_root_in_place<R: BufferMut + ?Sized>(
        &self,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Gather, self.rank, || {
                if v.rank as i32 != self.rank {
                    // Not the root: `recv.buf` is this rank's contribution.
                    let dt = recv.buf.datatype();
                    let s = general::place_of_mut(&mut *recv.buf);
                    return v.gather(self.rank, Some(s), None, None, dt);
                }
                let (parts, rp, rn, dt) = general::partition_parts_mut(recv, v.size)?;
                v.gather(self.rank, None, Some((rp, rn)), Some(parts), dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Gather as u32, self.rank);
        if self.rank != self.world.rank() {
            // Not the root: `recv.buf` is this rank's contribution.
            let send = exchange::Typed::of(&mut *recv.buf);
            return span.leave(
                self.world
                    .gather_varcount_impl::<_, [u8]>(self.rank, Some(&send), None),
            );
        }
        span.leave(
            self.world
                .gather_varcount_impl::<[u8], R>(self.rank, None, Some(recv)),
        )
    }

    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let dt = recv.datatype();
                let r = general::place_of_mut(recv);
                // SAFETY: the receive buffer borrowed for the call.
                let hw = unsafe { hardware::scatter(&v, self.rank, None, Some(r), dt) };
                if let Some(res) = hw {
                    return res;
                }
                v.scatter(self.rank, None, Some(r), None, dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        span.leave(self.world.scatter_impl::<[u8], R>(self.rank, None, Some(recv)))
    }

    fn scatter_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let dt = recv.datatype();
                let s = (v.rank as i32 == self.rank).then(|| general::place_of(send));
                let r = general::place_of_mut(recv);
                // SAFETY: both buffers borrowed for the call, distinct.
                let hw = unsafe { hardware::scatter(&v, self.rank, s, Some(r), dt) };
                if let Some(res) = hw {
                    return res;
                }
                v.scatter(self.rank, s, Some(r), None, dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        let send = (self.rank == self.world.rank()).then_some(send);
        span.leave(self.world.scatter_impl(self.rank, send, Some(recv)))
    }

    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let s = general::place_of(send);
                // SAFETY: the send buffer borrowed for the call.
                let hw = unsafe { hardware::scatter(&v, self.rank, Some(s), None, send.datatype()) };
                if let Some(res) = hw {
                    return res;
                }
                v.scatter(self.rank, Some(s), None, None, send.datatype())
            });
        }
        // Not the root: no receive buffer, so `MPI_ERR_ROOT` (after taking part).
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        span.leave(self.world.scatter_impl::<S, [u8]>(self.rank, Some(send), None))
    }

    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let dt = recv.datatype();
                v.scatter(self.rank, None, Some(general::place_of_mut(recv)), None, dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        span.leave(
            self.world
                .scatter_varcount_impl::<[u8], R>(self.rank, None, Some(recv)),
        )
    }

    fn scatter_varcount_into_root<S, R>(&self, send: &Partition<'_, S>, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let dt = recv.datatype();
                let r = Some(general::place_of_mut(recv));
                if v.rank as i32 != self.rank {
                    return v.scatter(self.rank, None, r, None, dt);
                }
                let (parts, sp, sn) = general::partition_parts(send, v.size)?;
                v.scatter(self.rank, Some((sp, sn)), r, Some(parts), dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        let send = (self.rank == self.world.rank()).then_some(send);
        span.leave(self.world.scatter_varcount_impl(self.rank, send, Some(recv)))
    }

    fn scatter_varcount_into_root_in_place<S: Buffer + ?Sized>(
        &self,
        send: &Partition<'_, S>,
    ) -> Result<(), Error> {
        if let Some(v) = self.sub() {
            return v.traced(WaitCall::Scatter, self.rank, || {
                let dt = send.buf.datatype();
                if v.rank as i32 != self.rank {
                    // Not the root, and no receive buffer: `MPI_ERR_ROOT`
                    // once its part is taken (general.rs's `scatter`).
                    return v.scatter(self.rank, None, None, None, dt);
                }
                let (parts, sp, sn) = general::partition_parts(send, v.size)?;
                v.scatter(self.rank, Some((sp, sn)), None, Some(parts), dt)
            });
        }
        let span = trace::Span::enter(&self.world.core(), WaitCall::Scatter as u32, self.rank);
        let root = self.rank == self.world.rank();
        span.leave(
            self.world
                .scatter_varcount_impl::<S, [u8]>(self.rank, root.then_some(send), None),
        )
    }
}

/// One round of [`World::reduce_impl`] after this rank staged its
/// operands ([`World::stage_operands`]): the block tree, the world barrier,
/// the count check and, where `combines`, the combination of the block
/// results into the cell of the block's first rank. Returns 0, or the
/// failure as a word for [`step_error`]. The world is passed as
/// [`World::from_parts`]' scalars and the result as a word, so that the
/// caller keeps nothing in local memory for the call.
// Not inlined: a root and its warp-mates reach this through different API
// calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
#[allow(clippy::too_many_arguments)] // scalars, to stay in registers (above)
fn reduce_step<T: Equivalence, O: Operation<T>>(
    base: *mut u8,
    rank: u32,
    thread: u32,
    block: u32,
    generation: u32,
    staging: u32,
    k: usize,
    count: u32,
    reference: u32,
    combines: bool,
    op: &O,
    operation: WaitCall,
    peer: i32,
) -> u64 {
    // SAFETY: the scalars of the caller's attached world.
    let w = unsafe { World::from_parts(base, rank, thread, block, generation, staging) };
    let what = WaitFor {
        operation,
        peer,
        tag: -1,
    };
    match w.reduce_staged::<T, O>(k, count, reference, op, what) {
        Err(e) => crate::wait::barrier_word(e),
        Ok(Err(expected)) => (u64::from(expected) << 32) | ErrorClass::Count as u64,
        Ok(Ok(())) => {
            if combines {
                w.combine_blocks(w.layout.blocks, k, count, op);
            }
            0
        }
    }
}

/// The error of a non-zero [`reduce_step`] word of a reduction of `count`
/// elements per rank that waited as `what`: a count mismatch (every rank
/// read the same block counts, so all stop here) with the reference rank's
/// count in the high half, or the world barrier's failure.
#[inline(always)]
fn step_error(word: u64, count: u32, what: WaitFor) -> Error {
    if word as u32 == ErrorClass::Count as u32 {
        Error::CountMismatch {
            count,
            expected: (word >> 32) as u32,
        }
    } else {
        crate::wait::barrier_error(word, what)
    }
}

/// [`World::block_tree`] out of line, on the world rebuilt from its scalars
/// ([`World::from_parts`]; the tree passes no world barrier, so the
/// generation does not matter here).
// Not inlined: a root and its warp-mates reach this through different API
// calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
#[allow(clippy::too_many_arguments)] // scalars, to stay in registers (above)
fn block_tree_at<T: Equivalence, O: Operation<T>>(
    base: *mut u8,
    rank: u32,
    thread: u32,
    block: u32,
    staging: u32,
    active: u32,
    k: usize,
    op: &O,
) {
    // SAFETY: the scalars of the caller's attached world.
    let w = unsafe { World::from_parts(base, rank, thread, block, 0, staging) };
    w.block_tree_body::<T, O>(active, k, op);
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread; multi-rank collectives are
    //! tested through the emulator and under loom.
    extern crate std;
    use super::*;
    use crate::state::WorldConfig;
    use std::vec;
    use std::vec::Vec;

    fn with_world(f: impl FnOnce(&World)) {
        let config = WorldConfig::new(1, 1);
        let mut mem: Vec<u64> = vec![0; config.layout().unwrap().total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        f(&world);
    }

    #[test]
    fn one_rank_collectives_return_own_values() {
        with_world(|w| {
            w.barrier().unwrap();
            let send: Vec<i64> = (0..100).collect();
            let mut recv = vec![0i64; 100];
            w.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum())
                .unwrap();
            assert_eq!(recv, send);
            let mut buf: Vec<u16> = (0..1000).collect();
            w.process_at_rank(0).broadcast_into(&mut buf[..]).unwrap();
            assert_eq!(buf[999], 999);
            let mut m = 0.0f64;
            w.process_at_rank(0)
                .reduce_into_root(&2.5f64, &mut m, SystemOperation::max())
                .unwrap();
            assert_eq!(m, 2.5);
        });
    }

    #[test]
    fn invalid_operations_roots_and_counts_are_errors() {
        with_world(|w| {
            let mut out = 0.0f64;
            assert_eq!(
                w.all_reduce_into(&1.0f64, &mut out, SystemOperation::bitwise_and()),
                Err(Error::InvalidOperation {
                    op: 5,
                    datatype: crate::datatype::ID_F64
                })
            );
            assert_eq!(
                w.process_at_rank(3).reduce_into(&1u32, SystemOperation::sum()),
                Err(Error::InvalidRoot { root: 3, size: 1 })
            );
            let mut two = [0u32; 2];
            assert_eq!(
                w.all_reduce_into(&1u32, &mut two[..], SystemOperation::sum()),
                Err(Error::CountMismatch {
                    count: 2,
                    expected: 1
                })
            );
            assert_eq!(
                w.process_at_rank(0).reduce_into(&1u32, SystemOperation::sum()),
                Err(Error::InvalidRoot { root: 0, size: 1 })
            );
        });
    }

    #[test]
    fn one_rank_chapter_6_collectives() {
        with_world(|w| {
            let root = w.process_at_rank(0);
            let send = [1u32, 2, 3];
            let mut recv = [0u32; 3];
            root.gather_into_root(&send[..], &mut recv[..]).unwrap();
            assert_eq!(recv, send);
            let mut recv = [0u32; 3];
            root.scatter_into_root(&send[..], &mut recv[..]).unwrap();
            assert_eq!(recv, send);
            let mut recv = [0u32; 3];
            w.all_gather_into(&send[..], &mut recv[..]).unwrap();
            assert_eq!(recv, send);
            let mut recv = [0u32; 3];
            w.all_to_all_into(&send[..], &mut recv[..]).unwrap();
            assert_eq!(recv, send);
            let mut buf = [4u32, 5, 6];
            w.all_to_all_in_place(&mut buf[..]).unwrap();
            assert_eq!(buf, [4, 5, 6]);
            let mut recv = [0u32; 3];
            w.scan_into(&send[..], &mut recv[..], SystemOperation::sum())
                .unwrap();
            assert_eq!(recv, send);
            let mut recv = [9u32; 3];
            w.exclusive_scan_into(&send[..], &mut recv[..], SystemOperation::sum())
                .unwrap();
            assert_eq!(recv, [9, 9, 9]);
            let mut recv = [0u32; 3];
            w.reduce_scatter_block_into(&send[..], &mut recv[..], SystemOperation::sum())
                .unwrap();
            assert_eq!(recv, send);
            let mut recv = [0u32; 3];
            w.reduce_scatter_into(&send[..], &mut recv[..], &[3], SystemOperation::sum())
                .unwrap();
            assert_eq!(recv, send);
            let mut big = [0u8; 1000];
            let mut part = [0i32; 1];
            let counts = [1];
            let displs = [7];
            let mut p = PartitionMut::new(&mut part[..], &counts, &[0]);
            w.all_gather_varcount_into(&5i32, &mut p).unwrap();
            assert_eq!(part, [5]);
            let src: [u8; 1000] = core::array::from_fn(|i| i as u8);
            w.all_to_all_varcount_into(
                &Partition::new(&src[..], &[900], &[50]),
                &mut PartitionMut::new(&mut big[..], &[900], &[3]),
            )
            .unwrap();
            assert_eq!(big[3..903], src[50..950]);
            let mut x = [0u8; 2];
            root.gather_varcount_into_root(&[8u8][..], &mut PartitionMut::new(&mut x[..], &counts, &[1]))
                .unwrap();
            assert_eq!(x, [0, 8]);
            assert_eq!(
                root.gather_varcount_into_root(
                    &[8u8][..],
                    &mut PartitionMut::new(&mut x[..], &counts, &displs)
                ),
                Err(Error::OutOfBounds { index: 8, len: 2 })
            );
            assert_eq!(
                w.all_gather_into(&send[..], &mut recv[..2]),
                Err(Error::CountMismatch {
                    count: 2,
                    expected: 3
                })
            );
            assert_eq!(
                w.process_at_rank(1).gather_into(&send[..]),
                Err(Error::InvalidRoot { root: 1, size: 1 })
            );
            let mut acc = [1u32, 1];
            reduce_local_into(&[2u32, 3][..], &mut acc[..], SystemOperation::sum()).unwrap();
            assert_eq!(acc, [3, 4]);
            let mut m = [1u32, 2];
            w.all_reduce_in_place(&mut m[..], SystemOperation::max()).unwrap();
            assert_eq!(m, [1, 2]);
        });
    }

    #[test]
    fn system_operations_follow_mpi_definitions() {
        let op = |o: SystemOperation, a: i32, b: i32| Operation::<i32>::apply(&o, &a, &b);
        assert_eq!(op(SystemOperation::logical_and(), 5, 0), 0);
        assert_eq!(op(SystemOperation::logical_or(), 5, 0), 1);
        assert_eq!(op(SystemOperation::bitwise_xor(), 6, 3), 5);
        assert_eq!(op(SystemOperation::sum(), i32::MAX, 1), i32::MIN);
        assert_eq!(
            Operation::<f32>::apply(&SystemOperation::min(), &1.5, &-2.0),
            -2.0
        );
        assert!(Operation::<f32>::check(&SystemOperation::logical_or()).is_err());
    }
}
