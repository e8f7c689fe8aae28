//! Reduce-scatter and scans (MPI 4.1 §6.10, §6.11), and `reduce_local_into`
//! (§6.9.7).
//!
//! Both work in rounds of `(collective_bytes - 8) / size_of::<T>()`
//! elements: combined inside each block, block results staged in the block
//! cells, one world barrier per round, and the block results folded in
//! block order (`combine_blocks`). Operands are always combined with lower
//! ranks on the left, so a non-commutative operation gets rank order
//! (MPI 6.9.1), scans included.
//!
//! - Reduce-scatter: when every rank's send buffer is plain global memory
//!   (and in place, every rank's result fits a cell), every rank publishes
//!   its send buffer in the agreement and folds its own block of the result
//!   straight out of all of them (`World::pull_fold`; in place into its
//!   next staging cell, copied after), one world barrier at the end; otherwise a
//!   round covers a window of the `sum(counts)` elements; only the blocks
//!   holding ranks whose block of the result meets the window combine the
//!   block results, and each rank copies its own elements.
//! - Scan: inside a block, shuffle scans in every warp and one over the
//!   warps' totals (`World::block_prefix`: four block barriers, the totals
//!   in the block's shared scratch, or in rank cells when a long round's
//!   do not fit); each rank keeps its in-block prefix in its receive
//!   buffer and warp 0 stages the block total; after the world barrier,
//!   the ranks of block `b > 0` fold the totals of blocks `0..b` (shared
//!   between them, as in all-reduce) and combine that prefix with their
//!   own.

use super::agreement::CELL_HEADER;
use super::agreement::{checksum, Agreement, CHECK, COUNT, ROOT, TYPE};
use super::hardware::{self, STAGE_BYTES};
use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::Side;
use crate::communicator::World;
use crate::datatype::Equivalence;
use crate::error::{saturating_u32, Error};
use crate::polling::{Call as WaitCall, WaitFor};
use crate::shim;

/// Where a scan round's stage begins in the block's shared scratch: after
/// the bytes a block communicator's opening writes (`hardware`'s header).
const STAGE_HEADER: usize = shim::SHARED_BLOCK_BYTES - STAGE_BYTES;

/// Combines `inbuf` into `inoutbuf` element by element: `inoutbuf[i] =
/// inbuf[i] op inoutbuf[i]` (`MPI_Reduce_local`; `inbuf` is the left
/// operand). No communication. `MPI_ERR_COUNT` when the lengths differ,
/// `MPI_ERR_OP` when `op` is not defined for `T`.
///
/// Standard section: MPI 4.1 §6.9.7.
pub fn reduce_local_into<T, S, R, O>(inbuf: &S, inoutbuf: &mut R, op: O) -> Result<(), Error>
where
    T: Equivalence,
    S: Elements<T> + ?Sized,
    R: ElementsMut<T> + ?Sized,
    O: Operation<T>,
{
    op.check()?;
    let (a, b) = (inbuf.elements(), inoutbuf.elements_mut());
    if a.len() != b.len() {
        return Err(Error::CountMismatch {
            count: saturating_u32(b.len()),
            expected: saturating_u32(a.len()),
        });
    }
    for (x, y) in a.iter().zip(b.iter_mut()) {
        *y = op.apply(x, y);
    }
    Ok(())
}

impl World {
    /// Elements of `T` per reduction round, or `MPI_ERR_BUFFER` (the same
    /// answer on every rank) when one element does not fit a cell.
    fn elements_per_round<T>(&self) -> Result<usize, Error> {
        let size = core::mem::size_of::<T>();
        let per_round = (self.collective_bytes() - CELL_HEADER) / size.max(1);
        if per_round == 0 || core::mem::align_of::<T>() > CELL_HEADER {
            return Err(Error::BufferTooLarge {
                bytes: saturating_u32(size),
                limit: (self.collective_bytes() - CELL_HEADER) as u32,
            });
        }
        Ok(per_round)
    }

    /// `MPI_Reduce_scatter_block` (`counts` None: every rank gets `n /
    /// size` elements) and `MPI_Reduce_scatter` (`counts`): reduces the `n`
    /// elements at `send` and writes this rank's block of the result to the
    /// `recv_len` elements at `recv`.
    ///
    /// In place (`recv == send`), a round reads its window `lo..hi` when it
    /// stages it and then writes result elements at `a - first <= a < hi`
    /// (`first`: this rank's first element), all already staged.
    ///
    /// # Safety
    /// `send` readable for `n` elements and `recv` writable for `recv_len`
    /// for the whole call; nothing else accesses them meanwhile.
    pub(crate) unsafe fn reduce_scatter_impl<T, O>(
        &self,
        send: *const T,
        n: usize,
        recv: *mut T,
        recv_len: usize,
        counts: Option<&[i32]>,
        op: &O,
    ) -> Result<(), Error>
    where
        T: Equivalence,
        O: Operation<T>,
    {
        let what = WaitFor {
            operation: WaitCall::ReduceScatter,
            peer: -2,
            tag: -1,
        };
        op.check()?;
        let per_round = self.elements_per_round::<T>()?;
        let ranks = self.ranks() as usize;
        let bd = self.block_dim() as usize;
        let (rank, block) = (self.rank as usize, self.block as usize);
        let mut local = None;
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set(TYPE, T::DATATYPE.id);
        mine.set_count(COUNT, n);
        // This rank's first element and the range of its block's ranks'.
        let (first, block_lo, block_hi) = match counts {
            None => {
                let k = n / ranks;
                if !n.is_multiple_of(ranks) || recv_len != k {
                    local = Some(Error::CountMismatch {
                        count: saturating_u32(recv_len),
                        expected: saturating_u32(k),
                    });
                }
                (rank * k, block * bd * k, (block + 1) * bd * k)
            }
            Some(c) => {
                mine.set(CHECK, checksum(c));
                let (mut first, mut block_lo, mut block_hi, mut sum) = (0, 0, 0, 0usize);
                for (q, &count) in c.iter().enumerate() {
                    if q == rank {
                        first = sum;
                    }
                    if q == block * bd {
                        block_lo = sum;
                    }
                    sum += count.max(0) as usize;
                    if q + 1 == (block + 1) * bd {
                        block_hi = sum;
                    }
                }
                if c.len() != ranks || c.iter().any(|&x| x < 0) || sum != n {
                    local = Some(Error::CountMismatch {
                        count: saturating_u32(n),
                        expected: saturating_u32(sum),
                    });
                } else if c.get(rank).copied() != Some(recv_len as i32) {
                    local = Some(Error::CountMismatch {
                        count: saturating_u32(recv_len),
                        expected: c.get(rank).copied().unwrap_or(0) as u32,
                    });
                }
                (first, block_lo, block_hi)
            }
        };
        if let Some(e) = &local {
            mine.fail(e);
        }
        // Every rank reads its block of the result straight out of the
        // others' send buffers when they all can (global memory). In place
        // the result would overwrite operands that other ranks still read:
        // it goes to this rank's cell of the next staging round (free until
        // that round: its readers finished before the agreement's barrier),
        // and into the buffer after the closing barrier, when it fits.
        let size = core::mem::size_of::<T>();
        let apart = (recv as usize).saturating_add(recv_len * size) <= send as usize
            || (send as usize).saturating_add(n * size) <= recv as usize;
        let via_cell = !apart && core::ptr::eq(recv, send) && recv_len * size <= self.collective_bytes();
        let published = if apart || via_cell {
            self.reachable(Some(Side::Plain(send as *mut u8)))
        } else {
            core::ptr::null_mut()
        };
        self.publish_buffer(published);
        if published.is_null() {
            mine.stage();
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, -1, saturating_u32(n), T::DATATYPE.id)));
        }
        if agreed.direct() && n > 0 {
            // One call site of `pull_fold` (two would keep it out of line,
            // with the world on the stack).
            let into = if via_cell {
                self.next_rank_cell(self.rank) as *mut T
            } else {
                recv
            };
            // SAFETY: every rank published its send buffer of `n` elements
            // (agreed), and `first + recv_len <= n` (the counts were checked
            // and agreed). `into` is `recv`, apart from our send buffer
            // (checked; a receive buffer that is another rank's send buffer
            // is the caller's data race, as in the all-to-all that writes
            // into the ranks' buffers), or our next staging cell (64-byte
            // aligned, `recv_len` elements: checked), in the world's memory,
            // which no rank touches before the next staging round.
            unsafe { self.pull_fold(first, into, recv_len, op, what)? };
            if via_cell {
                // SAFETY: our own buffer (`recv_len <= n` elements, agreed),
                // which no rank reads after the closing barrier.
                unsafe { shim::copy_bytes(recv as *mut u8, into as *const u8, recv_len * size) };
            }
            return Ok(());
        }
        // Below `u32::MAX`: a larger count failed the agreement (`set_count`).
        let count = n as u32;
        let rounds = n.div_ceil(per_round);
        for round in 0..rounds {
            let lo = round * per_round;
            let hi = (lo + per_round).min(n);
            let k = hi - lo;
            // SAFETY: `lo < n`: inside `send`.
            let part = unsafe { send.add(lo) };
            self.stage_operands(part, k, count);
            if let Err(expected) = self.reduce_cell(k, count, 0, op, what)? {
                return Err(Error::CountMismatch {
                    count: saturating_u32(n),
                    expected,
                });
            }
            if block_lo < hi && lo < block_hi {
                self.combine_blocks(self.blocks(), k, count, op);
                let (a, b) = (lo.max(first), hi.min(first + recv_len));
                if a < b {
                    let leader = self.rank_cell(self.block_leader());
                    // SAFETY: the leader's cell holds the window's `k`
                    // combined elements (published by the block tree's
                    // closing barrier); `a - first + (b - a) <= recv_len`.
                    unsafe {
                        shim::copy_bytes(
                            recv.add(a - first) as *mut u8,
                            leader.add(CELL_HEADER + (a - lo) * size),
                            (b - a) * size,
                        )
                    };
                }
            }
        }
        Ok(())
    }

    /// `MPI_Scan` (`exclusive` false) and `MPI_Exscan` of the `n` elements
    /// at `send` into the `recv_len` (= `n`) elements at `recv`.
    ///
    /// In place (`recv == send`), a rank loads each element before it
    /// writes it.
    ///
    /// # Safety
    /// As for [`World::reduce_scatter_impl`].
    pub(crate) unsafe fn scan_impl<T, O>(
        &self,
        send: *const T,
        n: usize,
        recv: *mut T,
        recv_len: usize,
        exclusive: bool,
        op: &O,
    ) -> Result<(), Error>
    where
        T: Equivalence,
        O: Operation<T>,
    {
        let what = WaitFor {
            operation: WaitCall::Scan,
            peer: -2,
            tag: -1,
        };
        op.check()?;
        let per_round = self.elements_per_round::<T>()?;
        let mut local = None;
        if recv_len != n {
            local = Some(Error::CountMismatch {
                count: saturating_u32(recv_len),
                expected: saturating_u32(n),
            });
        }
        let mut mine = Agreement::new();
        mine.set(ROOT, u32::MAX);
        mine.set(TYPE, T::DATATYPE.id);
        mine.set_count(COUNT, n);
        if let Some(e) = &local {
            mine.fail(e);
        }
        let agreed = self.agree(mine, what)?;
        if !agreed.ok() {
            return Err(local.unwrap_or_else(|| agreed.error(self, -1, saturating_u32(n), T::DATATYPE.id)));
        }
        // Below `u32::MAX`: a larger count failed the agreement (`set_count`).
        let count = n as u32;
        let t = self.thread;
        let rounds = n.div_ceil(per_round);
        for round in 0..rounds {
            let lo = round * per_round;
            let hi = (lo + per_round).min(n);
            let k = hi - lo;
            self.begin_staging_round();
            self.record_wait(what);
            // SAFETY: `lo + k <= n` elements of `send` and `recv`.
            unsafe { self.block_prefix(send.add(lo), recv.add(lo), k, count, exclusive, op) };
            self.world_barrier(what)?;
            if self.block > 0 {
                // Fold the totals of the blocks before ours into our leader's
                // cell (the rank cells are free: their values are in the
                // receive buffers, and the world barrier ordered every read).
                self.combine_blocks(self.block, k, count, op);
                let prefix = self.rank_cell(self.block_leader());
                for i in 0..k {
                    // SAFETY: the leader's cell holds `k` combined elements
                    // (published by the block tree's closing barrier);
                    // `recv` holds `n >= lo + k` elements.
                    unsafe {
                        let p = (prefix.add(CELL_HEADER) as *const T).add(i);
                        shim::note_global(p.cast(), core::mem::size_of::<T>(), false);
                        let p = core::ptr::read(p);
                        let out = recv.add(lo + i);
                        let v = if exclusive && t == 0 {
                            p
                        } else {
                            op.apply(&p, &core::ptr::read(out))
                        };
                        core::ptr::write(out, v);
                    }
                }
            }
        }
        Ok(())
    }

    /// The in-block part of a scan round: this rank's prefix over its
    /// block of the `k` elements at `send` (inclusive, or exclusive: the
    /// block's first rank writes nothing) into `recv`, and the block's total
    /// into its block cell (count words, then `k` elements) for the later
    /// blocks. Every warp scans with shuffles; the warps' totals go to the
    /// block's shared scratch (to the cells of the warps' first ranks when
    /// they and the prefixes, `(2 warps - 1) × k` elements, do not fit),
    /// warp 0 scans them with shuffles into the prefixes of warps `1..`
    /// (then in the cells of the block's ranks `1..warps`) and the block's
    /// total, and every rank of warps `1..` combines its warp's prefix on
    /// the left. Four
    /// block barriers: the first counts the block (a block short of a rank
    /// that returned names no lane in a shuffle: it skips the scan, and the
    /// world barrier after it fails), the last lets the block's next use of
    /// the shared scratch (the world barrier's) begin. Lower ranks are
    /// always the left operand (MPI 4.1 §6.9.1). Every rank of the block
    /// calls it.
    ///
    /// # Safety
    /// `send` readable and `recv` writable for `k <= per_round` elements
    /// (they may be the same); the round's staging half begun.
    unsafe fn block_prefix<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        recv: *mut T,
        k: usize,
        count: u32,
        exclusive: bool,
        op: &O,
    ) {
        let bd = self.block_dim();
        let (lane, warp) = (self.thread % 32, self.thread / 32);
        let warps = bd.div_ceil(32);
        let mask = shim::warp_mask();
        let lanes = mask.count_ones();
        let size = core::mem::size_of::<T>();
        // Warp `w`'s total of element `i` at `totals.0 + w × totals.1 + i ×
        // size`, warp `w + 1`'s prefix at `prefixes.0 + w × prefixes.1 + i ×
        // size`. In the cells, a warp's total is in its first rank's cell
        // (ranks `32 w`) and the prefixes in the cells of ranks `1..warps`
        // (at most 31): no cell holds both, and each is written by one
        // rank (a warp's last lane, warp 0's lane `w`).
        let shared = (2 * warps as usize - 1) * k * size <= STAGE_BYTES;
        let (totals, prefixes) = if shared {
            // SAFETY: the stage after the scratch's header, `STAGE_BYTES`
            // long, 16-byte aligned (`T`'s alignment is at most 8:
            // `elements_per_round`).
            let stage = unsafe { shim::shared_block::<{ shim::SHARED_BLOCK_BYTES }>().add(STAGE_HEADER) };
            // SAFETY: `warps × k` totals, then `(warps - 1) × k` prefixes.
            (
                (stage, k * size),
                (unsafe { stage.add(warps as usize * k * size) }, k * size),
            )
        } else {
            let (leader, cb) = (self.block_leader(), self.collective_bytes());
            // SAFETY: data areas of this block's cells: warp `w`'s first
            // rank's, and ranks `1..warps` (prefixes are only written and
            // read when a second warp exists, so these ranks do).
            unsafe {
                (
                    (self.rank_cell(leader).add(CELL_HEADER), 32 * cb),
                    (self.rank_cell(leader + 1.min(bd - 1)).add(CELL_HEADER), cb),
                )
            }
        };
        let at = |(base, stride): (*mut u8, usize), w: u32, i: usize| -> *mut T {
            // SAFETY: inside the stage or the block's cells (above).
            unsafe { base.add(w as usize * stride + i * size) as *mut T }
        };
        let whole = shim::block_barrier_count(true) == bd;
        if whole {
            for i in 0..k {
                // SAFETY: `i < k` elements of `send` and `recv` (the caller's
                // contract); element `i` of `send` is read before `recv`'s
                // is written (in place they are one).
                unsafe {
                    let x = shim::load_element(send.add(i));
                    let y = hardware::warp_scan(mask, lane, lanes, x, op);
                    if lane == lanes - 1 {
                        shim::note_global(at(totals, warp, i) as *const u8, size, true);
                        core::ptr::write(at(totals, warp, i), y);
                    }
                    let y = if exclusive {
                        hardware::shfl_up_value(mask, &y, 1)
                    } else {
                        y
                    };
                    if !exclusive || lane > 0 {
                        shim::note_global(recv.add(i) as *const u8, size, true);
                        core::ptr::write(recv.add(i), y);
                    }
                }
            }
        }
        shim::block_barrier();
        if whole && warp == 0 {
            let from = lane.min(warps - 1);
            for i in 0..k {
                // SAFETY: warp `from`'s total, written before the barrier;
                // the prefix and the block cell are written by one lane
                // each (the block cell by no other rank), after every lane
                // has read its total.
                unsafe {
                    shim::note_global(at(totals, from, i) as *const u8, size, false);
                    let z = core::ptr::read(at(totals, from, i));
                    let z = hardware::warp_scan(mask, lane, warps, z, op);
                    if lane + 1 < warps {
                        shim::note_global(at(prefixes, lane, i) as *const u8, size, true);
                        core::ptr::write(at(prefixes, lane, i), z);
                    } else if lane + 1 == warps {
                        let total = (self.block_cell(self.block).add(CELL_HEADER) as *mut T).add(i);
                        shim::note_global(total as *const u8, size, true);
                        core::ptr::write(total, z);
                    }
                }
            }
            if lane + 1 == warps {
                // SAFETY: the block cell's count words (`CELL_HEADER` bytes).
                unsafe {
                    let cell = self.block_cell(self.block) as *mut u32;
                    core::ptr::write(cell, count);
                    core::ptr::write(cell.add(1), count);
                }
            }
        }
        shim::block_barrier();
        if whole && warp > 0 {
            for i in 0..k {
                // SAFETY: warp `warp - 1`'s prefix from warp 0, written
                // before the barrier; element `i < k` of `recv`, written
                // above by this rank (but lane 0's of an exclusive scan).
                unsafe {
                    let p = at(prefixes, warp - 1, i);
                    shim::note_global(p as *const u8, size, false);
                    let p = core::ptr::read(p);
                    let out = recv.add(i);
                    let v = if exclusive && lane == 0 {
                        p
                    } else {
                        op.apply(&p, &core::ptr::read(out))
                    };
                    shim::note_global(out as *const u8, size, true);
                    core::ptr::write(out, v);
                }
            }
        }
        shim::block_barrier();
    }
}
