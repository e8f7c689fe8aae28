//! The blocking collectives of every rank ([`CommunicatorCollectives`],
//! the rooted ones are in `root.rs`): written once, as provided methods
//! with one blanket implementation for every [`Communicator`]. Each method
//! matches once on the handle's [`Route`]: the world takes its own
//! algorithms (`world.rs`, `movement.rs`, `scan.rs`); a communicator
//! made from it the hardware path of a whole block or warp where the call
//! has one (`hardware.rs`), else the message algorithms (`general.rs`).
//! A world across processes keeps its own algorithms (their world
//! barriers carry what they read, docs/distributed.md).

use super::agreement::checksum;
use super::general::{elements, elements_mut, partition_parts, partition_parts_mut, place_of, place_of_mut};
use super::movement::{Partition, PartitionMut, Parts};
use super::operation::{Elements, ElementsMut, Operation};
use crate::communicator::{Communicator, Route};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::polling::{Call, WaitFor};

/// Collectives over the whole communicator (MPI 4.1 chapter 6; rsmpi's
/// `CommunicatorCollectives`).
///
/// Every rank of the world must call the same collectives in the same
/// order. Bad arguments (buffers whose lengths disagree, a bad root or
/// partition) never hang or panic: the ranks first agree on their
/// arguments (one small all-reduce), and when any rank's are wrong every
/// rank returns an error — that rank its own, the others the class of the
/// failure (`MPI_ERR_COUNT`, `MPI_ERR_ROOT`, `MPI_ERR_TYPE`); their receive
/// buffers are then left untouched. docs/limits.md gives the cost of each.
pub trait CommunicatorCollectives: Communicator {
    /// Blocks until every rank has called it (`MPI_Barrier`).
    ///
    /// Standard section: MPI 4.1 §6.3.
    fn barrier(&self) -> Result<(), Error> {
        let world_barrier = |w: &crate::World| {
            w.traced(Call::Barrier, -2, || {
                w.world_barrier(WaitFor {
                    operation: Call::Barrier,
                    peer: -2,
                    tag: -1,
                })
            })
        };
        match self.route() {
            Route::World(w) => world_barrier(w),
            Route::Sub(v) => v.traced(Call::Barrier, -2, || {
                super::hardware::barrier(&v).unwrap_or_else(|| v.barrier())
            }),
        }
    }
    /// Reduces every rank's `send` with `op` and gives every rank the result
    /// (`MPI_Allreduce`).
    ///
    /// Standard section: MPI 4.1 §6.9.6.
    fn all_reduce_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllReduce, -2, || {
                let (s, r) = (send.elements(), recv.elements_mut());
                // SAFETY: two distinct borrowed slices, valid for the call.
                unsafe { w.reduce_impl(s.as_ptr(), s.len(), Some((r.as_mut_ptr(), r.len())), None, &op) }
            }),
            Route::Sub(v) => v.traced(Call::AllReduce, -2, || {
                let (s, n) = elements(send);
                let (r, m) = elements_mut(recv);
                // SAFETY: two borrowed slices, valid for the call.
                unsafe { super::hardware::reduce(&v, s, n, Some((r, m)), None, &op) }
                    // SAFETY: as above.
                    .unwrap_or_else(|| unsafe { v.all_reduce(s, n, r, m, &op) })
            }),
        }
    }
    /// `MPI_Allreduce` with `MPI_IN_PLACE`: `buf` is this rank's operand and
    /// receives the result.
    ///
    /// Standard section: MPI 4.1 §6.9.6.
    fn all_reduce_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllReduce, -2, || {
                let b = buf.elements_mut();
                let (p, n) = (b.as_mut_ptr(), b.len());
                // SAFETY: one exclusively borrowed slice, read and written only
                // through `p` (reduce_impl's in-place order).
                unsafe { w.reduce_impl(p as *const T, n, Some((p, n)), None, &op) }
            }),
            Route::Sub(v) => v.traced(Call::AllReduce, -2, || {
                let (p, n) = elements_mut(buf);
                // SAFETY: one borrowed slice, each element read before it is written.
                unsafe { super::hardware::reduce(&v, p as *const T, n, Some((p, n)), None, &op) }
                    // SAFETY: one borrowed slice, each chunk read before it is written.
                    .unwrap_or_else(|| unsafe { v.all_reduce(p as *const T, n, p, n, &op) })
            }),
        }
    }
    /// Every rank's `send` (the same count everywhere), concatenated in rank
    /// order into every rank's `recv` (`size × count` elements;
    /// `MPI_Allgather`). Each rank copies its own `size × count` elements
    /// out of the staging cells: O(size × count) per rank, the size of its
    /// result.
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllGather, -2, || w.all_gather_impl(Some(send), recv, None)),
            Route::Sub(v) => v.traced(Call::AllGather, -2, || {
                let (sp, sn) = place_of(send);
                let dt = recv.datatype();
                let (rp, rn) = place_of_mut(recv);
                // SAFETY: both buffers borrowed for the call, distinct.
                let hw = unsafe { super::hardware::gather(&v, None, Some(sp), sn, Some((rp, rn)), dt) };
                if let Some(r) = hw {
                    return r;
                }
                let parts = if rn != sn * v.size as usize {
                    Err(Error::CountMismatch {
                        count: rn as u32,
                        expected: (sn * v.size as usize) as u32,
                    })
                } else {
                    Ok(Parts::Even(sn))
                };
                v.all_gather(Some((sp, sn)), rp, parts, sn, None, dt)
            }),
        }
    }
    /// `MPI_Allgather` with `MPI_IN_PLACE`: rank `r`'s contribution is part
    /// `r` of `buf` (`size` equal parts), and the other parts are filled.
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllGather, -2, || {
                w.all_gather_impl::<u8, R>(None, buf, None)
            }),
            Route::Sub(v) => v.traced(Call::AllGather, -2, || {
                let dt = buf.datatype();
                let (p, n) = place_of_mut(buf);
                let part = n / v.size as usize;
                // SAFETY: the buffer borrowed for the call; its first `size ×
                // part` bytes are the parts (a remainder stays untouched, as
                // in the ring below).
                if let Some(r) = unsafe {
                    super::hardware::gather(&v, None, None, part, Some((p, part * v.size as usize)), dt)
                } {
                    return r;
                }
                v.all_gather(None, p, Ok(Parts::Even(part)), part, None, dt)
            }),
        }
    }
    /// Every rank's `send` into part `r` of every rank's `recv`, the parts
    /// given by counts and displacements that must be the same on every rank,
    /// `counts[r]` equal to rank `r`'s send count (`MPI_Allgatherv`).
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_varcount_into<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllGather, -2, || {
                let (counts, displs) = (recv.counts, recv.displs);
                w.all_gather_impl(Some(send), &mut *recv.buf, Some((counts, displs)))
            }),
            Route::Sub(v) => v.traced(Call::AllGather, -2, || {
                let s = place_of(send);
                let check = checksum(recv.counts);
                let (parts, rp, _, dt) = partition_parts_mut(recv, v.size);
                v.all_gather(Some(s), rp, parts, 0, Some(check), dt)
            }),
        }
    }
    /// `MPI_Allgatherv` with `MPI_IN_PLACE`: rank `r`'s contribution is
    /// already its part `r` of `recv` (`counts[r]` elements at
    /// `displs[r]`), and the other parts are filled.
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_varcount_in_place<R>(&self, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllGather, -2, || {
                let (counts, displs) = (recv.counts, recv.displs);
                w.all_gather_impl::<u8, R>(None, &mut *recv.buf, Some((counts, displs)))
            }),
            Route::Sub(v) => v.traced(Call::AllGather, -2, || {
                // This rank's part is already in `recv`: the ring's start.
                let check = checksum(recv.counts);
                let (parts, rp, _, dt) = partition_parts_mut(recv, v.size);
                v.all_gather(None, rp, parts, 0, Some(check), dt)
            }),
        }
    }
    /// Part `d` of every rank's `send` (`size` equal parts) to rank `d`,
    /// where it lands in part `s` (the sender's rank) of `recv`
    /// (`MPI_Alltoall`). Costs ceil(size × part bytes / collective_bytes)
    /// world barriers (the staging area moves `collective_bytes` per rank per
    /// round) and O(size × part) copying per rank.
    ///
    /// Standard section: MPI 4.1 §6.8.
    fn all_to_all_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllToAll, -2, || w.all_to_all_impl(send, recv)),
            Route::Sub(v) => v.traced(Call::AllToAll, -2, || {
                let (sp, sn) = place_of(send);
                let dt = recv.datatype();
                let (rp, rn) = place_of_mut(recv);
                // SAFETY: both buffers borrowed for the call, distinct.
                if let Some(r) = unsafe { super::hardware::all_to_all(&v, Some((sp, sn)), (rp, rn), dt) } {
                    return r;
                }
                let part = Parts::Even(sn / v.size as usize);
                let sparts = if rn != sn {
                    Err(Error::CountMismatch {
                        count: rn as u32,
                        expected: sn as u32,
                    })
                } else {
                    Ok(part)
                };
                v.all_to_all_pairwise(sp, sparts, rp, Ok(part), Some(sn), dt)
            }),
        }
    }
    /// `MPI_Alltoall` with `MPI_IN_PLACE`: part `d` of `buf` goes to rank
    /// `d` and is replaced by what rank `d` sent. Goes pairwise (rank `p`
    /// with rank `(j - p) mod size` in step `j`): `size` × ceil(part bytes /
    /// collective_bytes) world barriers.
    ///
    /// Standard section: MPI 4.1 §6.8.
    fn all_to_all_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllToAll, -2, || w.all_to_all_in_place_impl(buf)),
            Route::Sub(v) => v.traced(Call::AllToAll, -2, || {
                let dt = buf.datatype();
                let (p, n) = place_of_mut(buf);
                // SAFETY: the buffer borrowed for the call.
                if let Some(r) = unsafe { super::hardware::all_to_all(&v, None, (p, n), dt) } {
                    return r;
                }
                v.all_to_all_in_place(p, Ok(Parts::Even(n / v.size as usize)), Some(n), dt)
            }),
        }
    }
    /// `MPI_Alltoallv`: part `d` of `send` to rank `d`, into part `s` of its
    /// `recv`; rank `d`'s receive count for `s` must equal rank `s`'s send
    /// count for `d` (checked by exchanging the counts first). Costs like
    /// [`all_to_all_into`](Self::all_to_all_into) with the largest part.
    ///
    /// Standard section: MPI 4.1 §6.8.
    fn all_to_all_varcount_into<S, R>(
        &self,
        send: &Partition<'_, S>,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllToAll, -2, || w.all_to_all_varcount_impl(send, recv)),
            Route::Sub(v) => v.traced(Call::AllToAll, -2, || {
                let (sparts, sp, _) = partition_parts(send, v.size);
                let (rparts, rp, _, dt) = partition_parts_mut(recv, v.size);
                v.all_to_all_pairwise(sp, sparts, rp, rparts, None, dt)
            }),
        }
    }
    /// `MPI_Alltoallv` with `MPI_IN_PLACE`: part `d` of `buf` (`counts[d]`
    /// elements at `displs[d]`) goes to rank `d` and is replaced by what rank
    /// `d` sent, so rank `d`'s `counts[s]` must equal rank `s`'s `counts[d]`
    /// (checked by exchanging the counts first: `MPI_ERR_COUNT` on every
    /// rank). Goes pairwise like [`all_to_all_in_place`](Self::all_to_all_in_place),
    /// every step as long as the longest part: `size` × ceil(largest part
    /// bytes / collective_bytes) world barriers.
    ///
    /// Standard section: MPI 4.1 §6.8.
    fn all_to_all_varcount_in_place<R>(&self, buf: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::AllToAll, -2, || w.all_to_all_varcount_in_place_impl(buf)),
            Route::Sub(v) => v.traced(Call::AllToAll, -2, || {
                let (parts, p, _, dt) = partition_parts_mut(buf, v.size);
                v.all_to_all_in_place(p, parts, None, dt)
            }),
        }
    }
    /// Reduces the `size × count` elements of every rank's `send` with `op`
    /// (in rank order) and gives block `r` of the result to rank `r`'s `recv`
    /// (`count` elements; `MPI_Reduce_scatter_block`).
    ///
    /// Standard section: MPI 4.1 §6.10.1.
    fn reduce_scatter_block_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::ReduceScatter, -2, || {
                let (s, r) = (send.elements(), recv.elements_mut());
                // SAFETY: two distinct borrowed slices, valid for the call.
                unsafe { w.reduce_scatter_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), None, &op) }
            }),
            Route::Sub(v) => v.traced(Call::ReduceScatter, -2, || {
                let (s, n) = elements(send);
                let (r, m) = elements_mut(recv);
                let local = if n != m * v.size as usize {
                    Err(Error::CountMismatch {
                        count: n as u32,
                        expected: (m * v.size as usize) as u32,
                    })
                } else {
                    Ok(())
                };
                // SAFETY: `send` holds `size` blocks of `m` elements, `recv`
                // one (else `local` fails every rank before any is read).
                unsafe { v.reduce_scatter(s, m, r, &op, local) }
            }),
        }
    }
    /// `MPI_Reduce_scatter_block` with `MPI_IN_PLACE`: `buf` holds the
    /// `size × count` operands; its first `count` elements receive this
    /// rank's block of the result (the rest is left as it was).
    ///
    /// Standard section: MPI 4.1 §6.10.1.
    fn reduce_scatter_block_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::ReduceScatter, -2, || {
                let b = buf.elements_mut();
                let (p, n) = (b.as_mut_ptr(), b.len());
                let k = n / (w.ranks() as usize);
                // SAFETY: one exclusively borrowed slice used only through `p`; the
                // result (the first `k` elements) is written in reduce_scatter_impl's
                // in-place order.
                unsafe { w.reduce_scatter_impl(p as *const T, n, p, k, None, &op) }
            }),
            Route::Sub(v) => v.traced(Call::ReduceScatter, -2, || {
                let (p, n) = elements_mut(buf);
                let m = n / v.size as usize;
                // SAFETY: one slice of `size` blocks of `m` elements; block `q`'s
                // result goes to elements `0..m` of rank `q`, which no later block
                // reads (block 0 is reduced first, each chunk read before written).
                unsafe { v.reduce_scatter(p as *const T, m, p, &op, Ok(())) }
            }),
        }
    }
    /// Reduces the `sum(counts)` elements of every rank's `send` with `op`
    /// (in rank order) and gives rank `r` the `counts[r]` elements after the
    /// first `counts[0] + ... + counts[r-1]` (`MPI_Reduce_scatter`); `counts`
    /// must be the same on every rank.
    ///
    /// Standard section: MPI 4.1 §6.10.2.
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
        match self.route() {
            Route::World(w) => w.traced(Call::ReduceScatter, -2, || {
                let (s, r) = (send.elements(), recv.elements_mut());
                // SAFETY: two distinct borrowed slices, valid for the call.
                unsafe {
                    w.reduce_scatter_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), Some(counts), &op)
                }
            }),
            Route::Sub(v) => v.traced(Call::ReduceScatter, -2, || {
                let (s, n) = elements(send);
                let (r, m) = elements_mut(recv);
                // SAFETY: two borrowed slices, valid for the call.
                unsafe { v.reduce_scatter_counts(s, n, r, m, counts, &op) }
            }),
        }
    }
    /// `MPI_Reduce_scatter` with `MPI_IN_PLACE`: `buf` holds this rank's
    /// `sum(counts)` operands; its first `counts[rank]` elements receive
    /// this rank's block of the result (the rest is left as it was).
    ///
    /// Standard section: MPI 4.1 §6.10.2.
    fn reduce_scatter_in_place<T, R, O>(&self, buf: &mut R, counts: &[i32], op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::ReduceScatter, -2, || {
                let b = buf.elements_mut();
                let (p, n) = (b.as_mut_ptr(), b.len());
                // The result's length is this rank's count (a missing or negative
                // one fails in the counts' checks).
                let k = counts.get(w.rank as usize).copied().unwrap_or(0).max(0) as usize;
                // SAFETY: one exclusively borrowed slice used only through `p`; the
                // result (the first `k <= n` elements, else the counts' checks fail
                // before any write) is written in reduce_scatter_impl's in-place
                // order.
                unsafe { w.reduce_scatter_impl(p as *const T, n, p, k, Some(counts), &op) }
            }),
            Route::Sub(v) => v.traced(Call::ReduceScatter, -2, || {
                let (p, n) = elements_mut(buf);
                // SAFETY: one borrowed slice, the operands and the result's place
                // (`reduce_scatter_counts`' in-place order).
                unsafe { v.reduce_scatter_counts(p, n, p, n, counts, &op) }
            }),
        }
    }
    /// Inclusive prefix reduction: rank `r` gets `x0 op x1 op ... op xr`
    /// (`MPI_Scan`), in rank order for any operation.
    ///
    /// Standard section: MPI 4.1 §6.11.1.
    fn scan_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::Scan, -2, || {
                let (s, r) = (send.elements(), recv.elements_mut());
                // SAFETY: two distinct borrowed slices, valid for the call.
                unsafe { w.scan_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), false, &op) }
            }),
            Route::Sub(v) => v.traced(Call::Scan, -2, || {
                let (s, n) = elements(send);
                let (r, m) = elements_mut(recv);
                // SAFETY: two borrowed slices.
                unsafe { super::hardware::scan(&v, s, n, r, m, false, &op) }
                    // SAFETY: as above.
                    .unwrap_or_else(|| unsafe { v.scan(s, n, r, m, false, &op) })
            }),
        }
    }
    /// `MPI_Scan` with `MPI_IN_PLACE`.
    ///
    /// Standard section: MPI 4.1 §6.11.1.
    fn scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::Scan, -2, || {
                let b = buf.elements_mut();
                let (p, n) = (b.as_mut_ptr(), b.len());
                // SAFETY: one exclusively borrowed slice used only through `p`, in
                // scan_impl's in-place order.
                unsafe { w.scan_impl(p as *const T, n, p, n, false, &op) }
            }),
            Route::Sub(v) => v.traced(Call::Scan, -2, || {
                let (p, n) = elements_mut(buf);
                // SAFETY: one slice, each element read before it is written.
                unsafe { super::hardware::scan(&v, p as *const T, n, p, n, false, &op) }
                    // SAFETY: one slice, each chunk read before it is written.
                    .unwrap_or_else(|| unsafe { v.scan(p as *const T, n, p, n, false, &op) })
            }),
        }
    }
    /// Exclusive prefix reduction: rank `r > 0` gets `x0 op ... op x(r-1)`
    /// (`MPI_Exscan`); rank 0's `recv` is left untouched (the standard leaves
    /// it undefined).
    ///
    /// Standard section: MPI 4.1 §6.11.2.
    fn exclusive_scan_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::Scan, -2, || {
                let (s, r) = (send.elements(), recv.elements_mut());
                // SAFETY: two distinct borrowed slices, valid for the call.
                unsafe { w.scan_impl(s.as_ptr(), s.len(), r.as_mut_ptr(), r.len(), true, &op) }
            }),
            Route::Sub(v) => v.traced(Call::Scan, -2, || {
                let (s, n) = elements(send);
                let (r, m) = elements_mut(recv);
                // SAFETY: two borrowed slices.
                unsafe { super::hardware::scan(&v, s, n, r, m, true, &op) }
                    // SAFETY: as above.
                    .unwrap_or_else(|| unsafe { v.scan(s, n, r, m, true, &op) })
            }),
        }
    }
    /// `MPI_Exscan` with `MPI_IN_PLACE` (rank 0's `buf` is left untouched).
    ///
    /// Standard section: MPI 4.1 §6.11.2.
    fn exclusive_scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        match self.route() {
            Route::World(w) => w.traced(Call::Scan, -2, || {
                let b = buf.elements_mut();
                let (p, n) = (b.as_mut_ptr(), b.len());
                // SAFETY: as in `scan_in_place`.
                unsafe { w.scan_impl(p as *const T, n, p, n, true, &op) }
            }),
            Route::Sub(v) => v.traced(Call::Scan, -2, || {
                let (p, n) = elements_mut(buf);
                // SAFETY: one slice, each element read before it is written.
                unsafe { super::hardware::scan(&v, p as *const T, n, p, n, true, &op) }
                    // SAFETY: one slice, each chunk read before it is written.
                    .unwrap_or_else(|| unsafe { v.scan(p as *const T, n, p, n, true, &op) })
            }),
        }
    }
}

/// Every communicator has them: the world, and every communicator made from
/// it (a reference to one too).
impl<C: Communicator + ?Sized> CommunicatorCollectives for C {}

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread; multi-rank collectives are
    //! tested through the emulator and under loom.
    extern crate std;
    use super::*;
    use crate::collective::operation::SystemOperation;
    use crate::collective::root::Root;
    use crate::collective::scan::reduce_local_into;
    use crate::communicator::World;
    use crate::layout::WorldConfig;
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

    /// Lengths past the collectives' 32-bit words fail instead of being cut
    /// to their low bits: a broadcast root buffer of 2^32 + 16 bytes (the
    /// header said 16, and the broadcast returned `Ok`) gives
    /// `MPI_ERR_BUFFER`; an all-reduce of 2^32 + 16 elements `MPI_ERR_COUNT`
    /// in its first round (its count word said 16). The buffers' pages past
    /// the first round are never touched.
    #[test]
    fn collective_lengths_past_four_gib_fail_with_a_class() {
        with_world(|w| {
            let len = (1usize << 32) + 16;
            let mut big = vec![0u8; len];
            assert_eq!(
                w.process_at_rank(0).broadcast_into(&mut big[..]),
                Err(Error::BufferTooLarge {
                    bytes: u32::MAX,
                    limit: u32::MAX
                })
            );
            let mut out = vec![0u8; len];
            assert_eq!(
                w.all_reduce_into(&big[..], &mut out[..], SystemOperation::sum())
                    .map_err(|e| e.class()),
                Err(crate::error::ErrorClass::Count)
            );
            // The world still works.
            let mut x = 5u32;
            w.process_at_rank(0).broadcast_into(&mut x).unwrap();
            assert_eq!(x, 5);
        });
    }

    /// The 32-bit count and length words of the other collectives fail
    /// with a class too (docs/limits.md, "Lengths in 32-bit words"): a
    /// world scan of 2^32 + 16 elements (its agreement's `COUNT` slot),
    /// an in-place gather-varcount at the root whose part is 2^31 - 1
    /// `u32`s (8 GiB: its `LEN` slot, which was saturated and would have
    /// cut the staged rounds to 4 GiB), a broadcast and a reduce-scatter of
    /// 2^32 + 16 bytes on a warp communicator (the hardware descriptor; the
    /// general algorithm's opening): `MPI_ERR_COUNT`. A non-blocking
    /// broadcast of that buffer reports its length saturated (it said 16).
    /// Several blocks of ranks are tested on the emulator (host/tests/lengths.rs).
    #[test]
    fn chapter_6_and_sub_communicator_lengths_past_four_gib_fail_with_a_class() {
        use crate::collective::movement::PartitionMut;
        use crate::creation::CommunicatorCreation;
        let count = Err(crate::error::ErrorClass::Count);
        with_world(|w| {
            let len = (1usize << 32) + 16;
            // First the calls that returned `Ok` at once before (in a world
            // of one rank nobody disagrees), then those that ran 17 million
            // rounds.
            let part = (1usize << 31) - 1;
            let mut words = vec![0u32; part];
            let counts = [part as i32];
            let mut p = PartitionMut::new(&mut words[..], &counts, &[0]);
            let r = w.process_at_rank(0).gather_varcount_into_root_in_place(&mut p);
            assert_eq!(r.map_err(|e| e.class()), count, "world gatherv, 8 GiB part");
            let c = w.split_by_warp().unwrap();
            let mut buf = vec![0u8; len];
            let r = c.process_at_rank(0).broadcast_into(&mut buf[..]);
            assert_eq!(r.map_err(|e| e.class()), count, "warp broadcast");
            let big = vec![0u8; len];
            let mut out = vec![0u8; len];
            let r = w.scan_into(&big[..], &mut out[..], SystemOperation::sum());
            assert_eq!(r.map_err(|e| e.class()), count, "world scan");
            let r = c.reduce_scatter_block_into(&big[..], &mut out[..], SystemOperation::sum());
            assert_eq!(r.map_err(|e| e.class()), count, "general reduce-scatter-block");
            let r = crate::request::scope(|scope| {
                w.process_at_rank(0)
                    .immediate_broadcast_into(scope, &mut buf[..])?
                    .wait()
                    .map(|_| ())
            });
            assert!(
                matches!(r, Err(Error::BufferTooLarge { bytes: u32::MAX, .. })),
                "non-blocking broadcast: {r:?}"
            );
            // The world still works.
            let mut x = 5u32;
            w.process_at_rank(0).broadcast_into(&mut x).unwrap();
            c.barrier().unwrap();
            assert_eq!(x, 5);
        });
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
