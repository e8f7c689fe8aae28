//! The collectives of a sub-communicator (MPI 4.1 chapter 6 on the
//! communicators of chapter 7), over the point-to-point engine on the
//! communicator's collective context (`2 × id + 1`), so that they never
//! match its point-to-point messages nor another communicator's.
//!
//! A sub-communicator's ranks are any subset of the world, so the world's
//! staging areas and block barriers do not apply; these algorithms use
//! messages only (every step names its peer, so consecutive collectives
//! cannot mix: one sender's messages arrive in order, MPI 3.5):
//!
//! | collective | algorithm | rounds (messages on the longest path) |
//! |---|---|---|
//! | barrier | dissemination (Hensgen, Finkel, Manber) | ceil(log2 n) |
//! | broadcast | binomial tree from the root, then the completion barrier | 2 ceil(log2 n) |
//! | reduce, all-reduce | binomial tree to rank 0 in rank order (lower ranks on the left), then to the root (reduce: and the completion barrier) / a broadcast; per chunk of [`CHUNK_BYTES`] | (ceil(log2 n) + 1) × chunks (reduce: + ceil(log2 n); all-reduce: twice) |
//! | scan, exclusive scan | recursive doubling (Hillis–Steele), lower ranks on the left; per chunk; then the completion barrier | ceil(log2 n) × (chunks + 1) |
//! | gather(v), scatter(v) | linear: the root receives (sends) each part, then the completion barrier | n − 1 at the root, + ceil(log2 n) |
//! | all-gather(v) | ring | n − 1 |
//! | all-to-all(v) | pairwise exchange (in place: pairs `p`, `(j − p) mod n`) | n − 1 (in place: n) |
//! | reduce-scatter(-block) | one reduce per rank's block | n × the reduce |
//!
//! The completion barrier (`CommView::complete`, a dissemination barrier) ends
//! the collectives in which some rank would otherwise finish without
//! having heard, even through others, from every rank: when a rank never
//! enters one, every rank that did then fails (`MPI_ERR_TIMEOUT` or
//! `MPI_ERR_ABORTED` under a wait bound), as on the world. The others
//! (barrier, all-reduce, all-gather, all-to-all, reduce-scatter) already
//! make every rank wait on every other.
//!
//! Every message names its buffer by [`Place`]: plain bytes, or packed
//! bytes of a view of a derived datatype, which travel as a typed record
//! (the engine packs at the sender and unpacks at the receiver, MPI 4.1
//! §5.1.11), so views cost no staging buffer here either.
//!
//! Reductions combine operands chunk by chunk in two stack buffers of
//! [`CHUNK_BYTES`] (no heap, bounded local memory), so an element larger
//! than a chunk fails with `MPI_ERR_BUFFER`. Argument checks that every rank
//! makes alike (the root, the operation, partitions) fail on every rank
//! before any message; a count that differs between ranks is detected by
//! the receiver of the short or long message (`MPI_ERR_COUNT`), but is not
//! agreed on beforehand as on the world: the other ranks may then wait for
//! messages that never come (a deadlock report, or a timeout on the GPU).

use super::movement::{check_partition, Parts};
use super::movement::{Partition, PartitionMut};
use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::{Place, Side};
use crate::communicator::CommView;
use crate::communicator::PROC_NULL;
use crate::datatype::{Buffer, BufferMut, Datatype, Equivalence, TypedBuffer};
use crate::engine::{self, Post};
use crate::error::Error;
use crate::records::{RecordState, SendMode};
use crate::status::Status;

/// Bytes of each of the two stack buffers a reduction combines in.
pub const CHUNK_BYTES: usize = 128;

/// Tags of the collectives' messages (their context keeps them apart from
/// point-to-point traffic; the tags name the collective in reports).
#[derive(Clone, Copy)]
#[repr(i32)]
pub(crate) enum Tag {
    Barrier = 1,
    Broadcast = 2,
    Reduce = 3,
    Scan = 4,
    Gather = 5,
    Scatter = 6,
    AllGather = 7,
    AllToAll = 8,
}

#[repr(C, align(16))]
struct Chunk([core::mem::MaybeUninit<u8>; CHUNK_BYTES]);

impl Chunk {
    fn new() -> Self {
        Chunk([core::mem::MaybeUninit::uninit(); CHUNK_BYTES])
    }
    fn ptr<T>(&mut self) -> *mut T {
        self.0.as_mut_ptr() as *mut T
    }
}

/// Elements of `T` per chunk, or `MPI_ERR_BUFFER` for an element that does
/// not fit a chunk (or needs more than its 16-byte alignment).
fn chunk_elements<T>() -> Result<usize, Error> {
    let size = core::mem::size_of::<T>();
    if size > CHUNK_BYTES || core::mem::align_of::<T>() > 16 {
        return Err(Error::BufferTooLarge {
            bytes: size as u32,
            limit: CHUNK_BYTES as u32,
        });
    }
    Ok(CHUNK_BYTES / size.max(1))
}

/// A stand-in for a part that [`Place::post_buffer`] overwrites when it
/// is used (a plain place leaves it alone).
fn no_part() -> TypedBuffer {
    TypedBuffer {
        words: core::ptr::null(),
        words_len: 0,
        base: core::ptr::null_mut(),
        len: 0,
        origin: 0,
        count: 0,
        packed: 0,
        skip: 0,
        mover: unreachable_mover,
    }
}

/// The mover of [`no_part`], never called: a plain record is never typed.
///
/// # Safety
/// None needed; it touches nothing.
unsafe fn unreachable_mover(_: &TypedBuffer, _: bool, _: u64, _: *mut u8, _: u64) -> bool {
    false
}

/// What the message algorithms do with a [`Place`].
impl Place {
    /// The record's buffer word and typed-mode bit for `n` bytes here;
    /// a view's part is written to `part`, which must outlive the record.
    fn post_buffer(self, n: usize, part: &mut TypedBuffer) -> (*const u8, u32) {
        match self.side {
            // SAFETY: the caller keeps `at + n` inside the buffer.
            Side::Plain(p) => (unsafe { p.add(self.at) } as *const u8, 0),
            Side::Typed(t) => {
                // SAFETY: a typed side points at the TypedBuffer of a view
                // borrowed for the collective.
                *part = unsafe { (*t).part(self.at, n) };
                (part as *const TypedBuffer as *const u8, engine::TYPED_MODE)
            }
        }
    }

    /// Copies `n` packed bytes from `src` to `dst` (a rank's own part),
    /// through a stack chunk when either is a view; `MPI_ERR_INTERN` when a
    /// walk failed (the encoding changed under its view).
    ///
    /// # Safety
    /// Both hold `n` packed bytes from their `at`; `dst` is written by
    /// nobody else during the call.
    pub(super) unsafe fn copy(src: Place, dst: Place, n: usize) -> Result<(), Error> {
        if let (Side::Plain(s), Side::Plain(d)) = (src.side, dst.side) {
            // SAFETY: the caller's contract; `copy` allows the overlap of
            // an in-place part with itself.
            unsafe { core::ptr::copy(s.add(src.at), d.add(dst.at), n) };
            return Ok(());
        }
        let mut c = Chunk::new();
        let mut off = 0;
        while off < n {
            let k = (n - off).min(CHUNK_BYTES);
            // SAFETY: `off + k <= n` bytes of each side; `k` fit the chunk.
            let ok = unsafe {
                src.side.read(src.at + off, c.ptr(), k) && dst.side.write(dst.at + off, c.ptr(), k)
            };
            if !ok {
                return Err(Error::Intern);
            }
            off += k;
        }
        Ok(())
    }
}

impl<'a> CommView<'a> {
    /// The world rank of member `r`.
    fn member(&self, r: u32) -> i32 {
        self.comm.member(self.world, r) as i32
    }

    fn check_root(&self, root: i32) -> Result<u32, Error> {
        if root < 0 || root >= self.size as i32 {
            return Err(Error::InvalidRoot {
                root,
                size: self.size as i32,
            });
        }
        Ok(root as u32)
    }

    fn send_post(&self, to: u32, tag: Tag, dt: Datatype, (ptr, typed): (*const u8, u32), len: usize) -> Post {
        Post {
            state: RecordState::SendClaim,
            peer: self.member(to),
            tag: tag as i32,
            datatype: dt.id,
            buffer: ptr,
            len,
            mode: SendMode::Standard as u32 | typed,
            slot: 0,
            context: self.comm.collective_context(),
            inline: false,
            data: 0,
        }
    }

    fn receive_post(
        &self,
        from: u32,
        tag: Tag,
        dt: Datatype,
        (ptr, typed): (*const u8, u32),
        len: usize,
    ) -> Post {
        Post {
            state: RecordState::RecvMatch,
            peer: self.member(from),
            tag: tag as i32,
            datatype: dt.id,
            buffer: ptr,
            len,
            mode: typed,
            slot: 0,
            context: self.comm.collective_context(),
            inline: false,
            data: 0,
        }
    }

    /// The largest piece one message carries.
    fn piece(&self) -> usize {
        (self.world.max_message_bytes() as usize).max(1)
    }

    /// Sends `len` bytes at `at` to member `to`, in pieces of at most
    /// `max_message_bytes`.
    fn send(&self, to: u32, tag: Tag, dt: Datatype, at: Place, len: usize) -> Result<(), Error> {
        let piece = self.piece();
        let mut off = 0;
        let mut part = no_part();
        loop {
            let n = (len - off).min(piece);
            // `off + n <= len`, inside the caller's buffer.
            let p = self.send_post(to, tag, dt, at.add(off).post_buffer(n, &mut part), n);
            let core = self.world.core();
            let i = engine::run_blocking(core, &p)?;
            engine::collect(&core, i)?;
            off += n;
            if off >= len {
                return Ok(());
            }
        }
    }

    /// Receives `len` bytes from member `from` into `at` (pieces as
    /// [`CommView::send`]); a message of another length is `MPI_ERR_COUNT` (in
    /// elements of `dt`).
    fn receive(&self, from: u32, tag: Tag, dt: Datatype, at: Place, len: usize) -> Result<(), Error> {
        let piece = self.piece();
        let mut off = 0;
        let mut part = no_part();
        loop {
            let n = (len - off).min(piece);
            // `off + n <= len`, inside the caller's buffer.
            let p = self.receive_post(from, tag, dt, at.add(off).post_buffer(n, &mut part), n);
            let core = self.world.core();
            let i = engine::run_blocking(core, &p)?;
            let status = engine::collect(&core, i).map_err(|e| count_error(e, dt, n))?;
            check_length(&status, dt, n)?;
            off += n;
            if off >= len {
                return Ok(());
            }
        }
    }

    /// Sends `slen` bytes at `sptr` to `to` and receives `rlen` bytes from
    /// `from` into `rptr`, progressing both (either may be absent), in
    /// pieces of at most `max_message_bytes`.
    #[allow(clippy::too_many_arguments)]
    fn send_receive(
        &self,
        to: Option<u32>,
        sptr: Place,
        slen: usize,
        from: Option<u32>,
        rptr: Place,
        rlen: usize,
        tag: Tag,
        dt: Datatype,
    ) -> Result<(), Error> {
        let piece = self.piece();
        let (mut so, mut ro) = (0usize, 0usize);
        let (mut spart, mut rpart) = (no_part(), no_part());
        let mut first = true;
        loop {
            let send_more = to.is_some() && (first || so < slen);
            let receive_more = from.is_some() && (first || ro < rlen);
            if !send_more && !receive_more {
                return Ok(());
            }
            first = false;
            let sn = (slen - so).min(piece);
            let rn = (rlen - ro).min(piece);
            let send = match to {
                // `so + sn <= slen`, inside the send buffer.
                Some(t) if send_more => {
                    Some(self.send_post(t, tag, dt, sptr.add(so).post_buffer(sn, &mut spart), sn))
                }
                _ => None,
            };
            let recv = match from {
                // `ro + rn <= rlen`, inside the receive buffer.
                Some(f) if receive_more => {
                    Ok(self.receive_post(f, tag, dt, rptr.add(ro).post_buffer(rn, &mut rpart), rn))
                }
                _ => Err(Status {
                    source: PROC_NULL,
                    tag: -1,
                    bytes: 0,
                    datatype: dt.id,
                }),
            };
            let got = recv.is_ok();
            let status = crate::point_to_point::exchange(self.world, send, recv, false)
                .map_err(|e| count_error(e, dt, rn))?;
            if got {
                check_length(&status, dt, rn)?;
                ro += rn;
            }
            if send_more {
                so += sn;
            }
            if (to.is_none() || so >= slen) && (from.is_none() || ro >= rlen) {
                return Ok(());
            }
        }
    }

    // -----------------------------------------------------------------
    // Barrier, broadcast

    /// Dissemination barrier: in round `k` every rank signals rank
    /// `r + 2^k` and waits for rank `r - 2^k` (mod n).
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        let mut k = 1u32;
        while k < n {
            let to = (r + k) % n;
            let from = (r + n - k) % n;
            let none = Place::plain(empty());
            self.send_receive(Some(to), none, 0, Some(from), none, 0, Tag::Barrier, u8::DATATYPE)?;
            k <<= 1;
        }
        Ok(())
    }

    /// Runs the `steps` of a collective in which a rank need not hear, even
    /// through others, from every other rank (broadcast, reduce, gather,
    /// scatter, scans), then a [`barrier`](Self::barrier), entered whatever
    /// the steps gave, so that when a rank never enters the collective
    /// every rank that did fails (`MPI_ERR_TIMEOUT` or `MPI_ERR_ABORTED`)
    /// instead of some returning `Ok` (the rule of docs/semantics.md, "A
    /// collective that cannot complete"). Costs ceil(log2 n) message
    /// rounds. The steps' error comes first.
    fn complete(&self, steps: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
        let data = steps();
        let done = self.barrier();
        data.and(done)
    }

    /// Binomial-tree broadcast of `len` bytes at `ptr` from `root`.
    pub(crate) fn broadcast_bytes(
        &self,
        root: u32,
        dt: Datatype,
        ptr: Place,
        len: usize,
    ) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        let vr = (r + n - root) % n;
        let mut mask = 1u32;
        while mask < n {
            if vr & mask != 0 {
                let src = (vr - mask + root) % n;
                self.receive(src, Tag::Broadcast, dt, ptr, len)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if vr + mask < n {
                let dst = (vr + mask + root) % n;
                self.send(dst, Tag::Broadcast, dt, ptr, len)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// `MPI_Bcast` of a buffer from `root`, then [`complete`](Self::complete).
    pub(crate) fn broadcast<B: BufferMut + ?Sized>(&self, root: i32, buf: &mut B) -> Result<(), Error> {
        self.complete(|| {
            let root = self.check_root(root)?;
            let dt = buf.datatype();
            let (at, len) = place_of_mut(buf);
            self.broadcast_bytes(root, dt, at, len)
        })
    }

    // -----------------------------------------------------------------
    // Reductions

    /// Reduces the `count` elements at `send` of every rank with `op`, in
    /// rank order, into `out` at member `root` (`out` is only written
    /// there, chunk `c` after chunk `c` of `send` was read, so they may be
    /// the same buffer).
    ///
    /// # Safety
    /// `send` readable for `count` elements; `out` (at the root) writable
    /// for `count` elements.
    pub(crate) unsafe fn reduce_raw<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        count: usize,
        out: Option<*mut T>,
        root: u32,
        op: &O,
    ) -> Result<(), Error> {
        let e = chunk_elements::<T>()?;
        let (r, n) = (self.rank, self.size);
        let unit = core::mem::size_of::<T>();
        let (mut acc, mut tmp) = (Chunk::new(), Chunk::new());
        let (a, t) = (acc.ptr::<T>(), tmp.ptr::<T>());
        let mut c0 = 0;
        while c0 < count {
            let k = e.min(count - c0);
            // SAFETY: `c0 + k <= count` elements of `send`; `k <= e` fit a chunk.
            unsafe { core::ptr::copy_nonoverlapping(send.add(c0), a, k) };
            let mut mask = 1u32;
            while mask < n {
                if r & mask != 0 {
                    self.send(
                        r - mask,
                        Tag::Reduce,
                        T::DATATYPE,
                        Place::plain(a as *const u8),
                        k * unit,
                    )?;
                    break;
                }
                if r + mask < n {
                    self.receive(
                        r + mask,
                        Tag::Reduce,
                        T::DATATYPE,
                        Place::plain(t as *const u8),
                        k * unit,
                    )?;
                    for i in 0..k {
                        // SAFETY: `i < k`: initialised elements of both chunks.
                        unsafe { a.add(i).write(op.apply(&*a.add(i), &*t.add(i))) };
                    }
                }
                mask <<= 1;
            }
            if r == 0 && root == 0 {
                if let Some(o) = out {
                    // SAFETY: `out` holds `count >= c0 + k` elements.
                    unsafe { core::ptr::copy_nonoverlapping(a, o.add(c0), k) };
                }
            } else if r == 0 {
                self.send(
                    root,
                    Tag::Reduce,
                    T::DATATYPE,
                    Place::plain(a as *const u8),
                    k * unit,
                )?;
            } else if r == root {
                if let Some(o) = out {
                    // SAFETY: `out` holds `count >= c0 + k` elements.
                    let at = unsafe { o.add(c0) } as *const u8;
                    self.receive(0, Tag::Reduce, T::DATATYPE, Place::plain(at), k * unit)?;
                }
            }
            c0 += k;
        }
        Ok(())
    }

    /// `MPI_Reduce`: `out` only at the root; then
    /// [`complete`](Self::complete).
    ///
    /// # Safety
    /// As [`CommView::reduce_raw`].
    pub(crate) unsafe fn reduce<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        count: usize,
        out: Option<(*mut T, usize)>,
        root: i32,
        op: &O,
    ) -> Result<(), Error> {
        self.complete(|| {
            op.check()?;
            let root = self.check_root(root)?;
            if let Some((_, len)) = out {
                if len != count {
                    return Err(Error::CountMismatch {
                        count: len as u32,
                        expected: count as u32,
                    });
                }
            }
            let out = if self.rank == root {
                out.map(|(p, _)| p)
            } else {
                None
            };
            // SAFETY: the caller's contract.
            unsafe { self.reduce_raw(send, count, out, root, op)? };
            if self.rank == root && out.is_none() {
                // The root called the non-root form: it took part, its result
                // is dropped.
                return Err(Error::InvalidRoot {
                    root: root as i32,
                    size: self.size as i32,
                });
            }
            Ok(())
        })
    }

    /// `MPI_Allreduce`: a reduce to rank 0, then a broadcast from it.
    ///
    /// # Safety
    /// `send` readable for `count` elements, `out` writable for `len`.
    pub(crate) unsafe fn all_reduce<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        count: usize,
        out: *mut T,
        len: usize,
        op: &O,
    ) -> Result<(), Error> {
        op.check()?;
        if len != count {
            return Err(Error::CountMismatch {
                count: len as u32,
                expected: count as u32,
            });
        }
        // SAFETY: the caller's contract.
        unsafe { self.reduce_raw(send, count, Some(out), 0, op)? };
        let bytes = count * core::mem::size_of::<T>();
        self.broadcast_bytes(0, T::DATATYPE, Place::plain(out as *const u8), bytes)
    }

    /// `MPI_Scan` (`exclusive`: `MPI_Exscan`, rank 0's `out` untouched):
    /// recursive doubling per chunk; the exclusive prefix is kept in `out`
    /// itself. Then [`complete`](Self::complete).
    ///
    /// # Safety
    /// `send` readable for `count` elements, `out` writable for `len`
    /// (they may be the same buffer).
    pub(crate) unsafe fn scan<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        count: usize,
        out: *mut T,
        len: usize,
        exclusive: bool,
        op: &O,
    ) -> Result<(), Error> {
        self.complete(|| {
            op.check()?;
            if len != count {
                return Err(Error::CountMismatch {
                    count: len as u32,
                    expected: count as u32,
                });
            }
            let e = chunk_elements::<T>()?;
            let (r, n) = (self.rank, self.size);
            let unit = core::mem::size_of::<T>();
            let (mut acc, mut tmp) = (Chunk::new(), Chunk::new());
            let (x, t) = (acc.ptr::<T>(), tmp.ptr::<T>());
            let mut c0 = 0;
            while c0 < count {
                let k = e.min(count - c0);
                // SAFETY: `c0 + k <= count`; `k` elements fit a chunk.
                unsafe { core::ptr::copy_nonoverlapping(send.add(c0), x, k) };
                // SAFETY: `out` holds `count` elements.
                let o = unsafe { out.add(c0) };
                let mut have_prefix = false;
                let mut d = 1u32;
                while d < n {
                    let to = (r + d < n).then_some(r + d);
                    let from = (r >= d).then_some(r.wrapping_sub(d));
                    self.send_receive(
                        to,
                        Place::plain(x as *const u8),
                        k * unit,
                        from,
                        Place::plain(t as *const u8),
                        k * unit,
                        Tag::Scan,
                        T::DATATYPE,
                    )?;
                    if from.is_some() {
                        for i in 0..k {
                            // SAFETY: `i < k`: initialised elements; `o` holds `k`
                            // more elements, initialised once `have_prefix`.
                            unsafe {
                                let y = &*t.add(i);
                                if exclusive {
                                    let p = if have_prefix { op.apply(y, &*o.add(i)) } else { *y };
                                    o.add(i).write(p);
                                }
                                x.add(i).write(op.apply(y, &*x.add(i)));
                            }
                        }
                        have_prefix = true;
                    }
                    d <<= 1;
                }
                if !exclusive {
                    // SAFETY: `o` holds `k` more elements.
                    unsafe { core::ptr::copy_nonoverlapping(x, o, k) };
                }
                c0 += k;
            }
            Ok(())
        })
    }

    /// `MPI_Reduce_scatter(_block)`: the block of rank `q` (elements
    /// `parts.get(q)` of every rank's `send`) reduced into `q`'s `out`.
    ///
    /// # Safety
    /// `send` readable for its parts; `out` writable for this rank's part
    /// (it may overlap `send` only at this rank's part 0 position, as the
    /// in-place form: each block is read before any later block is written).
    pub(crate) unsafe fn reduce_scatter<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        parts: Parts<'_>,
        out: *mut T,
        op: &O,
    ) -> Result<(), Error> {
        op.check()?;
        let unit = core::mem::size_of::<T>();
        for q in 0..self.size {
            let (off, bytes) = parts.get(q as usize);
            // SAFETY: the caller's contract: part `q` lies inside `send`.
            let s = unsafe { send.add(off / unit) };
            let o = (q == self.rank).then_some(out);
            // SAFETY: as above; `out` holds this rank's part.
            unsafe { self.reduce_raw(s, bytes / unit, o, q, op)? };
        }
        Ok(())
    }

    /// `MPI_Reduce_scatter`: block `q` (`counts[q]` elements, in rank
    /// order) of the `n` elements at `send` reduced into the first
    /// `counts[q]` of member `q`'s `out_len` elements at `out`, block by
    /// block, each a reduce of its own. `out` may be `send` (in place):
    /// this rank's result goes to elements `0..counts[rank]`, at or below
    /// its own block, which the chunked reduce reads before it writes each
    /// chunk's result, and the blocks after it are never written.
    ///
    /// # Safety
    /// `send` readable for `n` elements and `out` writable for `out_len`
    /// for the call.
    pub(crate) unsafe fn reduce_scatter_counts<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        n: usize,
        out: *mut T,
        out_len: usize,
        counts: &[i32],
        op: &O,
    ) -> Result<(), Error> {
        if counts.len() != self.size as usize || counts.iter().any(|&c| c < 0) {
            return Err(Error::CountMismatch {
                count: counts.len() as u32,
                expected: self.size,
            });
        }
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mine = counts[self.rank as usize] as usize;
        if n != total || out_len < mine {
            return Err(Error::CountMismatch {
                count: n as u32,
                expected: total as u32,
            });
        }
        op.check()?;
        let mut off = 0usize;
        for (q, &c) in counts.iter().enumerate() {
            let o = (q == self.rank as usize).then_some(out);
            // SAFETY: block `q` (elements `off..off + c`) lies inside `send`
            // (`n == total`); `out` holds at least `mine` elements (in
            // place, the order above).
            unsafe { self.reduce_raw(send.add(off), c as usize, o, q as u32, op)? };
            off += c as usize;
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // Gather, scatter, all-gather, all-to-all

    /// Linear gather: member `q`'s `send` into part `q` of the root's
    /// `recv`; `send: None` at the root: in place. Then
    /// [`complete`](Self::complete).
    pub(crate) fn gather(
        &self,
        root: i32,
        send: Option<(Place, usize)>,
        recv: Option<(Place, usize)>,
        parts: Option<Parts<'_>>,
        dt: Datatype,
    ) -> Result<(), Error> {
        self.complete(|| {
            let root = self.check_root(root)?;
            if self.rank != root {
                let (p, n) = send.unwrap_or((Place::plain(empty()), 0));
                return self.send(root, Tag::Gather, dt, p, n);
            }
            let Some((rp, rlen)) = recv else {
                // The root called the non-root form: it takes every part (as
                // zero bytes: a truncation consumes the message), then fails.
                for q in (0..self.size).filter(|&q| q != root) {
                    match self.receive(q, Tag::Gather, dt, Place::plain(empty()), 0) {
                        Ok(()) | Err(Error::CountMismatch { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                return Err(Error::InvalidRoot {
                    root: root as i32,
                    size: self.size as i32,
                });
            };
            // In place (no `send`): `recv` holds `size` equal parts.
            let own = send.map_or(rlen / self.size as usize, |s| s.1);
            let parts = parts.unwrap_or(Parts::Even(own));
            let (_, last) = parts.get(self.size as usize - 1);
            let (end, _) = parts.get(self.size as usize - 1);
            if end + last > rlen {
                return Err(Error::CountMismatch {
                    count: rlen as u32,
                    expected: (end + last) as u32,
                });
            }
            for q in 0..self.size {
                let (off, bytes) = parts.get(q as usize);
                // Part `q` lies inside `recv` (checked above for even parts, by
                // `check_partition` for varcount ones).
                let dst = rp.add(off);
                if q == root {
                    if let Some((sp, sn)) = send {
                        // SAFETY: `sn` packed bytes at `sp`, part `q` at
                        // `dst`; distinct buffers (not in place).
                        unsafe { own_part(sp, dst, sn, bytes)? };
                    }
                } else {
                    self.receive(q, Tag::Gather, dt, dst, bytes)?;
                }
            }
            Ok(())
        })
    }

    /// Linear scatter: part `q` of the root's `send` to member `q`'s
    /// `recv`; `recv: None` at the root: in place. Then
    /// [`complete`](Self::complete).
    pub(crate) fn scatter(
        &self,
        root: i32,
        send: Option<(Place, usize)>,
        recv: Option<(Place, usize)>,
        parts: Option<Parts<'_>>,
        dt: Datatype,
    ) -> Result<(), Error> {
        self.complete(|| {
            let root = self.check_root(root)?;
            if self.rank != root {
                let Some((p, n)) = recv else {
                    // Not the root, and no receive buffer (the root's in-place
                    // form): take the part as zero bytes, then fail.
                    return match self.receive(root, Tag::Scatter, dt, Place::plain(empty()), 0) {
                        Ok(()) | Err(Error::CountMismatch { .. }) => Err(Error::InvalidRoot {
                            root: root as i32,
                            size: self.size as i32,
                        }),
                        Err(e) => Err(e),
                    };
                };
                return self.receive(root, Tag::Scatter, dt, p, n);
            }
            let Some((sp, slen)) = send else {
                // The root called the non-root form: every rank gets an empty
                // part (a count error where it expected more), the root fails.
                for q in (0..self.size).filter(|&q| q != root) {
                    self.send(q, Tag::Scatter, dt, Place::plain(empty()), 0)?;
                }
                return Err(Error::InvalidRoot {
                    root: root as i32,
                    size: self.size as i32,
                });
            };
            let parts = match parts {
                Some(p) => p,
                None => Parts::Even(slen / self.size as usize),
            };
            for q in 0..self.size {
                let (off, bytes) = parts.get(q as usize);
                // Part `q` lies inside `send`.
                let src = sp.add(off);
                if q == root {
                    if let Some((rp, rn)) = recv {
                        // SAFETY: part `q` at `src`, `rn` packed bytes at
                        // `rp`; distinct buffers (not in place).
                        unsafe { own_part(src, rp, rn, bytes)? };
                    }
                } else {
                    self.send(q, Tag::Scatter, dt, src, bytes)?;
                }
            }
            Ok(())
        })
    }

    /// Ring all-gather: this rank's part is already in `buf` (part
    /// `rank`); in step `j` it passes part `rank - j` on to `rank + 1` and
    /// takes part `rank - j - 1` from `rank - 1`.
    pub(crate) fn all_gather_ring(&self, buf: Place, parts: Parts<'_>, dt: Datatype) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        for j in 0..n.saturating_sub(1) {
            let s = (r + n - j) % n;
            let q = (r + 2 * n - j - 1) % n;
            let (so, sb) = parts.get(s as usize);
            let (qo, qb) = parts.get(q as usize);
            // Both parts lie inside `buf` and are distinct (s != q).
            let (sp, qp) = (buf.add(so), buf.add(qo));
            self.send_receive(
                Some((r + 1) % n),
                sp,
                sb,
                Some((r + n - 1) % n),
                qp,
                qb,
                Tag::AllGather,
                dt,
            )?;
        }
        Ok(())
    }

    /// Pairwise all-to-all: in step `j`, part `rank + j` of `send` to rank
    /// `rank + j`, and part `rank - j` of `recv` from rank `rank - j`.
    pub(crate) fn all_to_all_pairwise(
        &self,
        send: Place,
        sparts: Parts<'_>,
        recv: Place,
        rparts: Parts<'_>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        let (so, sb) = sparts.get(r as usize);
        let (ro, rb) = rparts.get(r as usize);
        if sb != rb {
            return Err(Error::CountMismatch {
                count: rb as u32,
                expected: sb as u32,
            });
        }
        // SAFETY: own parts inside the buffers, which are distinct.
        unsafe { Place::copy(send.add(so), recv.add(ro), sb)? };
        for j in 1..n {
            let to = (r + j) % n;
            let from = (r + n - j) % n;
            let (so, sb) = sparts.get(to as usize);
            let (ro, rb) = rparts.get(from as usize);
            // Parts inside their buffers.
            let (sp, rp) = (send.add(so), recv.add(ro));
            self.send_receive(Some(to), sp, sb, Some(from), rp, rb, Tag::AllToAll, dt)?;
        }
        Ok(())
    }

    /// In-place all-to-all: in step `j`, rank `p` swaps part `q = (j - p)
    /// mod n` (`parts`) with rank `q` (whose partner in that step is `p`).
    pub(crate) fn all_to_all_in_place(
        &self,
        buf: Place,
        parts: Parts<'_>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        for j in 0..n {
            let q = (j + n - r) % n;
            if q == r {
                continue;
            }
            let (off, len) = parts.get(q as usize);
            // Part `q` lies inside `buf` (checked partition, or n equal
            // parts).
            self.exchange_replace(q, buf.add(off), len, dt)?;
        }
        Ok(())
    }

    /// Sends the `len` bytes at `p` to member `q` and replaces them with
    /// what `q` sends back (`MPI_Sendrecv_replace` on the collective
    /// context).
    fn exchange_replace(&self, q: u32, p: Place, len: usize, dt: Datatype) -> Result<(), Error> {
        let piece = self.piece();
        let mut off = 0;
        let mut part = no_part();
        loop {
            let n = (len - off).min(piece);
            // `off + n <= len`; the send and the receive name the same part.
            let at = p.add(off).post_buffer(n, &mut part);
            let mut send = self.send_post(q, Tag::AllToAll, dt, at, n);
            send.mode = SendMode::Replace as u32 | at.1;
            let recv = self.receive_post(q, Tag::AllToAll, dt, at, n);
            let status = crate::point_to_point::exchange(self.world, Some(send), Ok(recv), true)
                .map_err(|e| count_error(e, dt, n))?;
            check_length(&status, dt, n)?;
            off += n;
            if off >= len {
                return Ok(());
            }
        }
    }
}

/// A gather's or scatter's root copying its own part between its two
/// buffers: the `len` bytes its own buffer holds must be the part's
/// `bytes` (`MPI_ERR_COUNT` otherwise).
///
/// # Safety
/// `from` readable and `to` writable for `min(len, bytes)` packed bytes,
/// distinct buffers.
unsafe fn own_part(from: Place, to: Place, len: usize, bytes: usize) -> Result<(), Error> {
    if len != bytes {
        return Err(Error::CountMismatch {
            count: len as u32,
            expected: bytes as u32,
        });
    }
    // SAFETY: the caller's contract, `len == bytes`.
    unsafe { Place::copy(from, to, len) }
}

/// The buffer of a zero-length message: dangling but non-null and
/// aligned, as a copy of zero bytes still requires.
fn empty() -> *mut u8 {
    core::ptr::NonNull::<u8>::dangling().as_ptr()
}

/// A received message's length against the expected `len` bytes.
fn check_length(status: &Status, dt: Datatype, len: usize) -> Result<(), Error> {
    if status.bytes as usize != len {
        let unit = (dt.size as usize).max(1);
        return Err(Error::CountMismatch {
            count: (len / unit) as u32,
            expected: status.bytes / unit as u32,
        });
    }
    Ok(())
}

/// A truncated collective message is a count mismatch.
fn count_error(e: Error, dt: Datatype, len: usize) -> Error {
    match e {
        Error::Truncate { status, .. } => {
            let unit = (dt.size as usize).max(1);
            Error::CountMismatch {
                count: (len / unit) as u32,
                expected: status.bytes / unit as u32,
            }
        }
        e => e,
    }
}

/// The parts of a varcount partition over `n` ranks, checked against a
/// buffer of `len` elements of `dt`.
pub(crate) fn var_parts<'p>(
    counts: &'p [i32],
    displs: &'p [i32],
    len_bytes: usize,
    dt: Datatype,
    n: u32,
) -> Result<Parts<'p>, Error> {
    let size = (dt.size as usize).max(1);
    check_partition(counts, displs, len_bytes / size, n as usize)?;
    Ok(Parts::Var { counts, displs, size })
}

/// The place and packed bytes of a send buffer, a view's included.
pub(crate) fn place_of<B: Buffer + ?Sized>(b: &B) -> (Place, usize) {
    let (side, len) = Side::of(b);
    (Place { side, at: 0 }, len)
}

/// The place and packed bytes of a receive buffer, a view's included.
pub(crate) fn place_of_mut<B: BufferMut + ?Sized>(b: &mut B) -> (Place, usize) {
    let (side, len) = Side::of_mut(b);
    (Place { side, at: 0 }, len)
}

/// The elements of an operand.
pub(crate) fn elements<T, S: Elements<T> + ?Sized>(s: &S) -> (*const T, usize) {
    let e = s.elements();
    (e.as_ptr(), e.len())
}

/// The elements of a result.
pub(crate) fn elements_mut<T, R: ElementsMut<T> + ?Sized>(r: &mut R) -> (*mut T, usize) {
    let e = r.elements_mut();
    (e.as_mut_ptr(), e.len())
}

/// A partition's parts and its buffer's place and packed bytes.
pub(crate) fn partition_parts<'p, S: Buffer + ?Sized>(
    p: &'p Partition<'p, S>,
    n: u32,
) -> Result<(Parts<'p>, Place, usize), Error> {
    let (at, len) = place_of(p.buf);
    Ok((var_parts(p.counts, p.displs, len, p.buf.datatype(), n)?, at, len))
}

/// A receive partition's parts and its buffer's place and packed bytes.
pub(crate) fn partition_parts_mut<'p, R: BufferMut + ?Sized>(
    p: &'p mut PartitionMut<'_, R>,
    n: u32,
) -> Result<(Parts<'p>, Place, usize, Datatype), Error> {
    let dt = p.buf.datatype();
    let (at, len) = place_of_mut(p.buf);
    Ok((var_parts(p.counts, p.displs, len, dt, n)?, at, len, dt))
}

// ---------------------------------------------------------------------------
// The collective traits on a sub-communicator
