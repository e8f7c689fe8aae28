//! Reduce-scatter and scans (MPI 4.1 §6.10, §6.11), and `reduce_local_into`
//! (§6.9.7).
//!
//! Both use the reduction machinery of `reduce_impl`: rounds of
//! `(collective_bytes - 8) / size_of::<T>()` elements staged in the rank
//! cells, combined inside each block, block results staged in the block
//! cells, one world barrier per round, and the block results folded in
//! block order (`combine_blocks`). Operands are always combined with lower
//! ranks on the left, so a non-commutative operation gets rank order
//! (MPI 6.9.1), scans included.
//!
//! - Reduce-scatter: when every rank's send buffer is plain global memory
//!   and no rank is in place, every rank publishes its send buffer in the
//!   agreement and folds its own block of the result straight out of all
//!   of them (`World::pull_fold`), one world barrier at the end; otherwise a
//!   round covers a window of the `sum(counts)` elements; only the blocks
//!   holding ranks whose block of the result meets the window combine the
//!   block results, and each rank copies its own elements.
//! - Scan: inside a block an in-place work-efficient scan over the rank
//!   cells (Brent–Kung: an up-sweep and a down-sweep of `2 log2(block_dim)`
//!   block barriers); each rank keeps its in-block prefix in its receive
//!   buffer; the block's last rank stages the block total; after the world
//!   barrier, the ranks of block `b > 0` fold the totals of blocks `0..b`
//!   (shared between them, as in all-reduce) and combine that prefix with
//!   their own.

use super::agreement::CELL_HEADER;
use super::agreement::{checksum, Agreement, CHECK, COUNT, ROOT, TYPE};
use super::movement::reachable;
use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::Side;
use crate::communicator::World;
use crate::datatype::Equivalence;
use crate::error::{saturating_u32, Error};
use crate::polling::{Call as WaitCall, WaitFor};
use crate::shim;

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
        // others' send buffers when they all can (global memory, and not in
        // place: an in-place result would overwrite operands that other
        // ranks still read).
        let size = core::mem::size_of::<T>();
        let apart = (recv as usize).saturating_add(recv_len * size) <= send as usize
            || (send as usize).saturating_add(n * size) <= recv as usize;
        let published = if apart {
            reachable(Some(Side::Plain(send as *mut u8)))
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
            // SAFETY: every rank published its send buffer of `n` elements
            // (agreed), and `first + recv_len <= n` (the counts were checked
            // and agreed); `recv` is apart from our send buffer (checked),
            // and a receive buffer that is another rank's send buffer is
            // the caller's data race, as in the all-to-all that writes into
            // the ranks' buffers.
            return unsafe { self.pull_fold(first, recv, recv_len, op, what) };
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
            if let Err(expected) = self.reduce_round(part, k, count, 0, op, what)? {
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
    /// In place (`recv == send`), a round stages its elements before it
    /// writes any of them.
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
        let size = core::mem::size_of::<T>();
        // Below `u32::MAX`: a larger count failed the agreement (`set_count`).
        let count = n as u32;
        let bd = self.block_dim();
        let t = self.thread;
        let rounds = n.div_ceil(per_round);
        for round in 0..rounds {
            let lo = round * per_round;
            let hi = (lo + per_round).min(n);
            let k = hi - lo;
            self.begin_staging_round();
            let cell = self.rank_cell(self.rank);
            // SAFETY: our own cell (count word, then `per_round >= k`
            // elements), untouched by others before the block barrier;
            // `lo + k <= n` elements of `send`.
            unsafe {
                core::ptr::write(cell as *mut u32, count);
                core::ptr::write(cell.add(4) as *mut u32, count);
                shim::copy_bytes(cell.add(CELL_HEADER), send.add(lo) as *const u8, k * size);
            }
            self.record_wait(what);
            self.block_scan(k, op);
            // Every cell of the block now holds its rank's in-block
            // inclusive prefix (published by the scan's closing barrier).
            if t == bd - 1 {
                // SAFETY: the block's cell is written only by its last rank;
                // this half was last read two rounds ago, before the last
                // world barrier.
                unsafe { shim::copy_bytes(self.block_cell(self.block), cell, CELL_HEADER + k * size) };
            }
            let own = if !exclusive {
                Some(cell)
            } else if t > 0 {
                Some(self.rank_cell(self.rank - 1))
            } else {
                None
            };
            if let Some(src) = own {
                // SAFETY: `k` elements of a cell of this block, final after the
                // scan; `recv` holds `n >= hi` elements. In place, these
                // elements were staged above.
                unsafe { shim::copy_bytes(recv.add(lo) as *mut u8, src.add(CELL_HEADER), k * size) };
            }
            self.world_barrier(what)?;
            if self.block > 0 {
                // Fold the totals of the blocks before ours into our leader's
                // cell (the rank cells are free: their values are in the
                // receive buffers, and the world barrier ordered every read).
                self.combine_blocks(self.block, k, count, op);
                let prefix = self.rank_cell(self.block * bd);
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

    /// Inclusive scan of the `k` staged elements of this block's rank cells,
    /// in place (Brent–Kung): an up-sweep that leaves in cell `t` the
    /// combination of the `2^j` cells ending at `t` where `t + 1` is a
    /// multiple of `2^j`, then a down-sweep that completes the others, with
    /// a block barrier before each step and after the last. Lower ranks are
    /// always the left operand. Every rank of the block calls it.
    fn block_scan<T: Equivalence, O: Operation<T>>(&self, k: usize, op: &O) {
        let bd = self.block_dim();
        let t = self.thread;
        let first = self.block * bd;
        let combine = |left: u32, right: u32| {
            let l = self.rank_cell(first + left);
            let r = self.rank_cell(first + right);
            // SAFETY: both cells were staged (or updated) before the block
            // barrier that precedes this step; in a step no cell is both
            // written (each rank writes only its own) and read; the data
            // areas are 8-aligned and hold `k` elements.
            unsafe {
                let l = l.add(CELL_HEADER) as *const T;
                let r = r.add(CELL_HEADER) as *mut T;
                for i in 0..k {
                    shim::note_global(l.add(i).cast(), core::mem::size_of::<T>(), false);
                    shim::note_global(r.add(i).cast(), core::mem::size_of::<T>(), false);
                    let v = op.apply(&core::ptr::read(l.add(i)), &core::ptr::read(r.add(i)));
                    core::ptr::write(r.add(i), v);
                }
            }
        };
        let mut d = 1;
        while d < bd {
            shim::block_barrier();
            // Reads cell t - d, which no rank writes in this step
            // ((t - d + 1) is not a multiple of 2d).
            if (t + 1).is_multiple_of(2 * d) {
                combine(t - d, t);
            }
            d *= 2;
        }
        d /= 4;
        while d >= 1 {
            shim::block_barrier();
            // Cell t - d holds a complete prefix ((t - d + 1) is a multiple
            // of 2d) and is not written in this step.
            if t + 1 >= 3 * d && (t + 1) % (2 * d) == d {
                combine(t - d, t);
            }
            d /= 2;
        }
        shim::block_barrier();
    }
}
