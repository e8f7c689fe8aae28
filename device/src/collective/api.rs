//! The blocking collective API: [`CommunicatorCollectives`] (every rank)
//! and [`Root`] (a root's process handle), implemented for the world in
//! `collective` and for sub-communicators in `collective::general`.

use super::exchange::{Partition, PartitionMut};
use super::operation::{Elements, ElementsMut, Operation};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;

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
pub trait CommunicatorCollectives {
    /// Blocks until every rank has called it (`MPI_Barrier`).
    ///
    /// Standard section: MPI 4.1 §6.3.
    fn barrier(&self) -> Result<(), Error>;
    /// Reduces every rank's `send` with `op` and gives every rank the result
    /// (`MPI_Allreduce`).
    ///
    /// Standard section: MPI 4.1 §6.9.6.
    fn all_reduce_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
    /// `MPI_Allreduce` with `MPI_IN_PLACE`: `buf` is this rank's operand and
    /// receives the result.
    ///
    /// Standard section: MPI 4.1 §6.9.6.
    fn all_reduce_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
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
        R: BufferMut + ?Sized;
    /// `MPI_Allgather` with `MPI_IN_PLACE`: rank `r`'s contribution is part
    /// `r` of `buf` (`size` equal parts), and the other parts are filled.
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized;
    /// Every rank's `send` into part `r` of every rank's `recv`, the parts
    /// given by counts and displacements that must be the same on every rank,
    /// `counts[r]` equal to rank `r`'s send count (`MPI_Allgatherv`).
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_varcount_into<S, R>(&self, send: &S, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized;
    /// `MPI_Allgatherv` with `MPI_IN_PLACE`: rank `r`'s contribution is
    /// already its part `r` of `recv` (`counts[r]` elements at
    /// `displs[r]`), and the other parts are filled.
    ///
    /// Standard section: MPI 4.1 §6.7.
    fn all_gather_varcount_in_place<R>(&self, recv: &mut PartitionMut<'_, R>) -> Result<(), Error>
    where
        R: BufferMut + ?Sized;
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
        R: BufferMut + ?Sized;
    /// `MPI_Alltoall` with `MPI_IN_PLACE`: part `d` of `buf` goes to rank
    /// `d` and is replaced by what rank `d` sent. Goes pairwise (rank `p`
    /// with rank `(j - p) mod size` in step `j`): `size` × ceil(part bytes /
    /// collective_bytes) world barriers.
    ///
    /// Standard section: MPI 4.1 §6.8.
    fn all_to_all_in_place<R>(&self, buf: &mut R) -> Result<(), Error>
    where
        R: BufferMut + ?Sized;
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
        R: BufferMut + ?Sized;
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
        R: BufferMut + ?Sized;
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
        O: Operation<T>;
    /// `MPI_Reduce_scatter_block` with `MPI_IN_PLACE`: `buf` holds the
    /// `size × count` operands; its first `count` elements receive this
    /// rank's block of the result (the rest is left as it was).
    ///
    /// Standard section: MPI 4.1 §6.10.1.
    fn reduce_scatter_block_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
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
        O: Operation<T>;
    /// `MPI_Reduce_scatter` with `MPI_IN_PLACE`: `buf` holds this rank's
    /// `sum(counts)` operands; its first `counts[rank]` elements receive
    /// this rank's block of the result (the rest is left as it was).
    ///
    /// Standard section: MPI 4.1 §6.10.2.
    fn reduce_scatter_in_place<T, R, O>(&self, buf: &mut R, counts: &[i32], op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
    /// Inclusive prefix reduction: rank `r` gets `x0 op x1 op ... op xr`
    /// (`MPI_Scan`), in rank order for any operation.
    ///
    /// Standard section: MPI 4.1 §6.11.1.
    fn scan_into<T, S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
    /// `MPI_Scan` with `MPI_IN_PLACE`.
    ///
    /// Standard section: MPI 4.1 §6.11.1.
    fn scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
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
        O: Operation<T>;
    /// `MPI_Exscan` with `MPI_IN_PLACE` (rank 0's `buf` is left untouched).
    ///
    /// Standard section: MPI 4.1 §6.11.2.
    fn exclusive_scan_in_place<T, R, O>(&self, buf: &mut R, op: O) -> Result<(), Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
}

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
