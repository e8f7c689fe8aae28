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

pub(crate) mod general;
pub(crate) mod hardware;
mod prefix;
mod world;

pub use api::{CommunicatorCollectives, Root};
pub use exchange::{Partition, PartitionMut};
pub use operation::{Elements, ElementsMut, Operation, SystemOperation, UserOperation};
pub use prefix::reduce_local_into;

use crate::communicator::CommView;
use crate::communicator::{Communicator, Process, World};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::trace;
use crate::wait::{Call as WaitCall, WaitFor};

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
