//! The collectives with a root ([`Root`]), called on the root's
//! [`Process`]: one implementation, which takes the world's algorithms
//! for a world process and a sub-communicator's (hardware or general)
//! otherwise.

use super::general;
use super::hardware;
use super::movement::{self, Partition, PartitionMut, Parts};
use super::operation::{Elements, ElementsMut, Operation};
use crate::communicator::CommView;
use crate::communicator::{Communicator, Process};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::polling::Call as WaitCall;

/// Collectives with a root process (rsmpi's `Root`), called on the root's
/// [`Process`](crate::communicator::Process) by every rank. A `_root` method is the root's call; a rank
/// that is not the root calling one takes part as if it had called the
/// non-root form (its receive or send arguments of the root are ignored).
/// The root calling a non-root form still takes part, then gets
/// `MPI_ERR_ROOT` (and so do the others, for the collectives that agree on
/// their arguments first).
pub trait Root {
    /// Copies the root's `buf` to every rank's `buf` (`MPI_Bcast`).
    ///
    /// Standard section: MPI 4.1 §6.4.
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error>;
    /// Called by the root: reduces every rank's `send` with `op` into `recv`
    /// (`MPI_Reduce`). On a rank that is not the root `recv` is ignored.
    ///
    /// Standard section: MPI 4.1 §6.9.1.
    fn reduce_into_root<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
    /// Called by the root: `MPI_Reduce` with `MPI_IN_PLACE`; `buf` is the
    /// root's operand and receives the result.
    ///
    /// Standard section: MPI 4.1 §6.9.1.
    fn reduce_into_root_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
    /// Called by every rank but the root: contributes `send` (`MPI_Reduce`).
    /// The root calling it still takes part, then gets `MPI_ERR_ROOT`.
    ///
    /// Standard section: MPI 4.1 §6.9.1.
    fn reduce_into<T, S, O>(&self, send: &S, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        O: Operation<T>;
    /// Called by every rank but the root: contributes `send` to a gather
    /// (`MPI_Gather`).
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;
    /// Called by the root: every rank's `send` (the same count everywhere)
    /// into part `r` of `recv` (`size × count` elements; `MPI_Gather`). The
    /// root copies every part out of the staging cells itself (its buffer
    /// may be in its local memory): O(size × count) at the root.
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized;
    /// Called by the root: `MPI_Gather` with `MPI_IN_PLACE`; the root's own
    /// contribution is already in its part of `buf` (`size` equal parts).
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_into_root_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized;
    /// Called by every rank but the root: contributes `send` to a
    /// varcount gather (`MPI_Gatherv`).
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;
    /// Called by the root: rank `r`'s `send` into part `r` of `recv`
    /// (counts and displacements; `counts[r]` must equal rank `r`'s count;
    /// `MPI_Gatherv`).
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_varcount_into_root<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized;
    /// Called by the root: `MPI_Gatherv` with `MPI_IN_PLACE`; the root's own
    /// contribution is already in its part of `recv` (`counts[root]`
    /// elements at `displs[root]`), which stays as it is. Another rank that
    /// calls it contributes all of `recv.buf`, as in
    /// [`Root::gather_into_root_in_place`].
    ///
    /// Standard section: MPI 4.1 §6.5.
    fn gather_varcount_into_root_in_place<R: BufferMut + ?Sized>(
        &self,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error>;
    /// Called by every rank but the root: receives its part of the root's
    /// buffer (`MPI_Scatter`).
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error>;
    /// Called by the root: part `r` of `send` (`size` equal parts) to rank
    /// `r`'s `recv` (`MPI_Scatter`). The root stages every part itself (its
    /// buffer may be in its local memory): O(size × count) at the root.
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized;
    /// Called by the root: `MPI_Scatter` with `MPI_IN_PLACE`; the root's own
    /// part stays where it is in `send`.
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;
    /// Called by every rank but the root: receives its part of a varcount
    /// scatter (`MPI_Scatterv`); its count must equal the root's count for it.
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error>;
    /// Called by the root: part `r` of `send` (counts and displacements) to
    /// rank `r` (`MPI_Scatterv`).
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_varcount_into_root<S, R>(&self, send: &Partition<'_, S>, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized;
    /// Called by the root: `MPI_Scatterv` with `MPI_IN_PLACE`; the root's
    /// own part stays where it is in `send`. Another rank that calls it
    /// fails with `MPI_ERR_ROOT` (on the world every rank does; on a
    /// sub-communicator the root, whose sends went out, returns).
    ///
    /// Standard section: MPI 4.1 §6.6.
    fn scatter_varcount_into_root_in_place<S: Buffer + ?Sized>(
        &self,
        send: &Partition<'_, S>,
    ) -> Result<(), Error>;
}

impl Process<'_> {
    /// The general algorithms' view of this process's communicator, when
    /// it is not the world ([`Communicator::route`]: a world across
    /// processes keeps its own algorithms, docs/distributed.md).
    #[inline(always)]
    fn sub(&self) -> Option<CommView<'_>> {
        (self.comm.id != 0).then(|| CommView::of(self.world, self.comm))
    }

    /// `f` on this process's sub-communicator, traced as `call` and out of
    /// line ([`traced_sub`]); `None` for a world process. Each collective
    /// below but the reductions (whose world path is inlined itself: the
    /// pi example's `pi_reduce` took 2 registers more) is inlined into its
    /// caller around this, so that on the world, whose communicator id is
    /// a constant there, the sub-communicator's path (the general
    /// algorithms, and through them the point-to-point engine) folds away
    /// instead of sharing the kernel's registers and frame (rsmpi's
    /// `gather`, three world gathers: 128 registers, 2,976 bytes of stack
    /// and 2,560 of spills, from that path's spills alone; docs/gpu.md,
    /// "What costs registers").
    ///
    /// `f` takes the process's rank as an argument rather than through
    /// `self`: a closure that borrowed the process would keep it in memory
    /// and its communicator id unknown after the first call.
    #[inline(always)]
    fn on_sub<F>(&self, call: WaitCall, f: F) -> Option<Result<(), Error>>
    where
        F: FnOnce(&CommView<'_>, i32) -> Result<(), Error>,
    {
        let v = self.sub()?;
        Some(traced_sub(&v, call, self.rank, f))
    }
}

/// A sub-communicator's collective `f` on `v`, traced as `call` with root
/// `root` ([`Process::on_sub`]). Not inlined: the world's collectives
/// inline their dispatch and leave this path out of a world kernel.
#[inline(never)]
fn traced_sub<F>(v: &CommView<'_>, call: WaitCall, root: i32, f: F) -> Result<(), Error>
where
    F: FnOnce(&CommView<'_>, i32) -> Result<(), Error>,
{
    v.traced(call, root, || f(v, root))
}

impl Root for Process<'_> {
    #[inline(always)]
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Broadcast, |v, rank| {
            hardware::broadcast_buffer(v, rank, buf).unwrap_or_else(|| v.broadcast(rank, buf))
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Broadcast as u32, self.rank);
        span.leave(self.world.broadcast_impl(self.rank, buf))
    }

    fn reduce_into_root<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        if let Some(r) = self.on_sub(WaitCall::Reduce, |v, rank| {
            let (s, n) = general::elements(send);
            let r = general::elements_mut(recv);
            // SAFETY: two borrowed slices, valid for the call.
            unsafe { hardware::reduce(v, s, n, Some(r), Some(rank), &op) }
                // SAFETY: as above.
                .unwrap_or_else(|| unsafe { v.reduce(s, n, Some(r), rank, &op) })
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Reduce as u32, self.rank);
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
        if let Some(r) = self.on_sub(WaitCall::Reduce, |v, rank| {
            let (p, n) = general::elements_mut(buf);
            // SAFETY: one slice, each element read before it is written.
            unsafe { hardware::reduce(v, p as *const T, n, Some((p, n)), Some(rank), &op) }
                // SAFETY: one slice, each chunk read before it is written.
                .unwrap_or_else(|| unsafe { v.reduce(p as *const T, n, Some((p, n)), rank, &op) })
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Reduce as u32, self.rank);
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
        if let Some(r) = self.on_sub(WaitCall::Reduce, |v, rank| {
            let (s, n) = general::elements(send);
            // SAFETY: a borrowed slice, valid for the call.
            unsafe { hardware::reduce(v, s, n, None, Some(rank), &op) }
                // SAFETY: as above.
                .unwrap_or_else(|| unsafe { v.reduce(s, n, None, rank, &op) })
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Reduce as u32, self.rank);
        let s = send.elements();
        // SAFETY: a borrowed slice, valid for the call.
        span.leave(unsafe {
            self.world
                .reduce_impl(s.as_ptr(), s.len(), None, Some(self.rank), &op)
        })
    }

    #[inline(always)]
    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            let (sp, sn) = general::place_of(send);
            // SAFETY: the send buffer borrowed for the call.
            let hw = unsafe { hardware::gather(v, Some(rank), Some(sp), sn, None, send.datatype()) };
            if let Some(r) = hw {
                return r;
            }
            v.gather(rank, Some(general::place_of(send)), None, None, send.datatype())
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        span.leave(self.world.gather_impl::<S, [u8]>(self.rank, Some(send), None))
    }

    #[inline(always)]
    fn gather_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            let dt = send.datatype();
            let (sp, sn) = general::place_of(send);
            // The receive buffer counts at the root only (MPI 6.5).
            let mine = v.rank as i32 == rank;
            let hw_recv = mine.then(|| general::place_of_mut(recv));
            // SAFETY: both buffers borrowed for the call, distinct.
            let hw = unsafe { hardware::gather(v, Some(rank), Some(sp), sn, hw_recv, dt) };
            if let Some(r) = hw {
                return r;
            }
            v.gather(
                rank,
                Some(general::place_of(send)),
                Some(general::place_of_mut(recv)),
                None,
                dt,
            )
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        let recv = (self.rank == self.world.rank()).then_some(recv);
        span.leave(self.world.gather_impl(self.rank, Some(send), recv))
    }

    #[inline(always)]
    fn gather_into_root_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            let dt = buf.datatype();
            let (p, n) = general::place_of_mut(buf);
            let hw = if v.rank as i32 == rank {
                let part = n / v.size as usize;
                // SAFETY: the buffer borrowed for the call; its first
                // `size × part` bytes are the parts.
                unsafe { hardware::gather(v, Some(rank), None, part, Some((p, part * v.size as usize)), dt) }
            } else {
                // SAFETY: as above, this rank's part.
                unsafe { hardware::gather(v, Some(rank), Some(p), n, None, dt) }
            };
            if let Some(r) = hw {
                return r;
            }
            if v.rank as i32 == rank {
                v.gather(rank, None, Some((p, n)), None, dt)
            } else {
                // Not the root: `buf` is this rank's contribution.
                v.gather(rank, Some((p, n)), None, None, dt)
            }
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        if self.rank != self.world.rank() {
            // Not the root: `buf` is this rank's contribution.
            let send = movement::Typed::of(buf);
            return span.leave(self.world.gather_impl::<_, [u8]>(self.rank, Some(&send), None));
        }
        span.leave(self.world.gather_impl::<[u8], R>(self.rank, None, Some(buf)))
    }

    #[inline(always)]
    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            v.gather(
                rank,
                Some(general::place_of(send)),
                None,
                Some(Ok(Parts::Even(0))),
                send.datatype(),
            )
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        span.leave(
            self.world
                .gather_varcount_impl::<S, [u8]>(self.rank, Some(send), None),
        )
    }

    #[inline(always)]
    fn gather_varcount_into_root<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            let s = general::place_of(send);
            if v.rank as i32 != rank {
                return v.gather(rank, Some(s), None, Some(Ok(Parts::Even(0))), send.datatype());
            }
            let (parts, rp, rn, dt) = general::partition_parts_mut(recv, v.size);
            v.gather(rank, Some(s), Some((rp, rn)), Some(parts), dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        let recv = (self.rank == self.world.rank()).then_some(recv);
        span.leave(self.world.gather_varcount_impl(self.rank, Some(send), recv))
    }

    #[inline(always)]
    fn gather_varcount_into_root_in_place<R: BufferMut + ?Sized>(
        &self,
        recv: &mut PartitionMut<'_, R>,
    ) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Gather, |v, rank| {
            if v.rank as i32 != rank {
                // Not the root: `recv.buf` is this rank's contribution.
                let dt = recv.buf.datatype();
                let s = general::place_of_mut(&mut *recv.buf);
                return v.gather(rank, Some(s), None, Some(Ok(Parts::Even(0))), dt);
            }
            let (parts, rp, rn, dt) = general::partition_parts_mut(recv, v.size);
            v.gather(rank, None, Some((rp, rn)), Some(parts), dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Gather as u32, self.rank);
        if self.rank != self.world.rank() {
            // Not the root: `recv.buf` is this rank's contribution.
            let send = movement::Typed::of(&mut *recv.buf);
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

    #[inline(always)]
    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let dt = recv.datatype();
            let r = general::place_of_mut(recv);
            // SAFETY: the receive buffer borrowed for the call.
            let hw = unsafe { hardware::scatter(v, rank, None, Some(r), dt) };
            if let Some(res) = hw {
                return res;
            }
            v.scatter(rank, None, Some(r), None, dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        span.leave(self.world.scatter_impl::<[u8], R>(self.rank, None, Some(recv)))
    }

    #[inline(always)]
    fn scatter_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let dt = recv.datatype();
            let s = (v.rank as i32 == rank).then(|| general::place_of(send));
            let r = general::place_of_mut(recv);
            // SAFETY: both buffers borrowed for the call, distinct.
            let hw = unsafe { hardware::scatter(v, rank, s, Some(r), dt) };
            if let Some(res) = hw {
                return res;
            }
            v.scatter(rank, s, Some(r), None, dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        let send = (self.rank == self.world.rank()).then_some(send);
        span.leave(self.world.scatter_impl(self.rank, send, Some(recv)))
    }

    #[inline(always)]
    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let s = general::place_of(send);
            // SAFETY: the send buffer borrowed for the call.
            let hw = unsafe { hardware::scatter(v, rank, Some(s), None, send.datatype()) };
            if let Some(res) = hw {
                return res;
            }
            v.scatter(rank, Some(s), None, None, send.datatype())
        }) {
            return r;
        }
        // Not the root: no receive buffer, so `MPI_ERR_ROOT` (after taking part).
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        span.leave(self.world.scatter_impl::<S, [u8]>(self.rank, Some(send), None))
    }

    #[inline(always)]
    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let dt = recv.datatype();
            let r = Some(general::place_of_mut(recv));
            v.scatter(rank, None, r, Some(Ok(Parts::Even(0))), dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        span.leave(
            self.world
                .scatter_varcount_impl::<[u8], R>(self.rank, None, Some(recv)),
        )
    }

    #[inline(always)]
    fn scatter_varcount_into_root<S, R>(&self, send: &Partition<'_, S>, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let dt = recv.datatype();
            let r = Some(general::place_of_mut(recv));
            if v.rank as i32 != rank {
                return v.scatter(rank, None, r, Some(Ok(Parts::Even(0))), dt);
            }
            let (parts, sp, sn) = general::partition_parts(send, v.size);
            v.scatter(rank, Some((sp, sn)), r, Some(parts), dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        let send = (self.rank == self.world.rank()).then_some(send);
        span.leave(self.world.scatter_varcount_impl(self.rank, send, Some(recv)))
    }

    #[inline(always)]
    fn scatter_varcount_into_root_in_place<S: Buffer + ?Sized>(
        &self,
        send: &Partition<'_, S>,
    ) -> Result<(), Error> {
        if let Some(r) = self.on_sub(WaitCall::Scatter, |v, rank| {
            let dt = send.buf.datatype();
            if v.rank as i32 != rank {
                // Not the root, and no receive buffer: `MPI_ERR_ROOT`
                // once its part is taken (general.rs's `scatter`).
                return v.scatter(rank, None, None, Some(Ok(Parts::Even(0))), dt);
            }
            let (parts, sp, sn) = general::partition_parts(send, v.size);
            v.scatter(rank, Some((sp, sn)), None, Some(parts), dt)
        }) {
            return r;
        }
        let span = self.world.span(WaitCall::Scatter as u32, self.rank);
        let root = self.rank == self.world.rank();
        span.leave(
            self.world
                .scatter_varcount_impl::<S, [u8]>(self.rank, root.then_some(send), None),
        )
    }
}
