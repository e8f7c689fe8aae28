//! The collectives of a sub-communicator (MPI 4.1 chapter 6 on the
//! communicators of chapter 7), over the point-to-point engine on the
//! communicator's collective context (`2 × id + 1`), so that they never
//! match its point-to-point messages nor another communicator's.
//!
//! A sub-communicator's ranks are any subset of the world, so the world's
//! staging areas and block barriers do not apply; these algorithms use
//! messages only (every step names its peer, so consecutive collectives
//! cannot mix: one sender's messages arrive in order, MPI 3.5).
//!
//! Every collective opens with an *agreement* ([`CommView::open`]): a
//! dissemination all-reduce of a 48-byte record ([`Opened`]: the lowest
//! and highest over the members of the call, root, count, datatype and a
//! checksum of a counts array every member passes alike, and the worst
//! class of a member's own argument error), ceil(log2 n) rounds of one
//! eager message each way. Every member then holds the same record and
//! returns the same verdict: either all move data, or all fail before any
//! data message, with the class of the first disagreement (another
//! collective: [`Error::CollectiveMismatch`], `MPI_ERR_COUNT`; then
//! `MPI_ERR_ROOT`, `MPI_ERR_COUNT`, `MPI_ERR_TYPE`), the erroneous rank with
//! its own error (MPI 4.1 §6.1; the hardware paths' opening gives the same
//! classes). Since every member hears, through others, from every member,
//! a rank that never enters leaves every member that did waiting in the
//! opening (`MPI_ERR_TIMEOUT`/`MPI_ERR_ABORTED` under a wait bound, §6.14).
//! The barrier is the opening alone.
//!
//! | collective | algorithm after the opening | rounds (messages on the longest path) |
//! |---|---|---|
//! | barrier | – | ceil(log2 n) |
//! | broadcast | binomial tree from the root | 2 ceil(log2 n) |
//! | reduce, all-reduce | binomial tree to rank 0 in rank order (lower ranks on the left), then to the root / a broadcast; per chunk of [`CHUNK_BYTES`] | ceil(log2 n) + (ceil(log2 n) + 1) × chunks (all-reduce: + ceil(log2 n) × chunks) |
//! | scan, exclusive scan | recursive doubling (Hillis–Steele), lower ranks on the left; per chunk | ceil(log2 n) × (chunks + 1) |
//! | gather, scatter | linear: the root receives (sends) each part | n − 1 at the root, + ceil(log2 n) |
//! | gatherv, scatterv | as gather, scatter, then a second opening | n − 1 at the root, + 2 ceil(log2 n) |
//! | all-gather(v) | ring | n − 1 + ceil(log2 n) |
//! | all-to-all | pairwise exchange (in place: pairs `p`, `(j − p) mod n`) | n − 1 (in place: n) + ceil(log2 n) |
//! | all-to-allv | as all-to-all, then a second opening | n − 1 (in place: n) + 2 ceil(log2 n) |
//! | reduce-scatter(-block) | one reduce per rank's block | n × the reduce + ceil(log2 n) |
//!
//! The counts of gatherv, scatterv and all-to-allv differ between members
//! by design (only the root, or only the pair, knows both sides), so the
//! opening cannot compare them: a part of another length than its
//! receiver expects is taken (consumed) with `MPI_ERR_COUNT`, the other
//! parts still move (no message is left to pair with the next
//! collective), and a second opening carries that failure to every
//! member. The parts that matched may then have been written. A part
//! moves in pieces of at most `max_message_bytes`; the receiver follows
//! the sender's pieces (each piece's tag says whether more follow:
//! [`piece_tag`]), so parts whose lengths differ by whole pieces are
//! taken the same way, with no piece waited for in vain or left over.
//!
//! Every message names its buffer by [`Place`]: plain bytes, or packed
//! bytes of a view of a derived datatype, which travel as a typed record
//! (the engine packs at the sender and unpacks at the receiver, MPI 4.1
//! §5.1.11), so views cost no staging buffer here either.
//!
//! Reductions combine operands chunk by chunk in two stack buffers of
//! [`CHUNK_BYTES`] (no heap, bounded local memory), so an element larger
//! than a chunk fails with `MPI_ERR_BUFFER` (on every member: the opening).

use super::agreement::{checksum, Opened, Opening, EXCLUSIVE_CALL, VARCOUNT_CALL};
use super::movement::{check_partition, Parts};
use super::movement::{Partition, PartitionMut};
use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::{Place, Side};
use crate::codes::Call;
use crate::communicator::CommView;
use crate::communicator::PROC_NULL;
use crate::datatype::{Buffer, BufferMut, Datatype, Equivalence, TypedBuffer};
use crate::engine::{self, Post, Signature};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::records::{RecordState, SendMode};
use crate::status::Status;

/// Bytes of each of the two stack buffers a reduction combines in.
pub const CHUNK_BYTES: usize = 128;

/// Tags of the collectives' messages (their context keeps them apart from
/// point-to-point traffic; the tags name the collective in reports).
#[derive(Clone, Copy)]
#[repr(i32)]
pub(crate) enum Tag {
    /// Every collective's opening, which is also the barrier.
    Opening = 1,
    Broadcast = 2,
    Reduce = 3,
    Scan = 4,
    Gather = 5,
    Scatter = 6,
    AllGather = 7,
    AllToAll = 8,
    /// The entries of a communicator's creation across processes
    /// (`creation`).
    Creation = 9,
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
            bytes: saturating_u32(size),
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
        run: false,
    }
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

    /// A send of a piece of `len` bytes to member `to`, tagged `tag` (a
    /// [`piece_tag`]).
    fn send_post(&self, to: u32, tag: i32, dt: Datatype, (ptr, typed): (*const u8, u32), len: usize) -> Post {
        Post {
            state: RecordState::SendClaim,
            peer: self.member(to),
            tag,
            datatype: dt.id,
            buffer: ptr,
            len,
            mode: SendMode::Standard as u32 | typed,
            slot: 0,
            context: self.comm.collective_context(),
            inline: false,
            data: 0,
            signature: Signature::NONE,
        }
    }

    /// A receive of the next piece from member `from` into a room of `len`
    /// bytes, of any tag: the piece's tag says whether more pieces of the
    /// part follow ([`piece_tag`]). Safe with any tag because each pair's
    /// messages on the collective context come in order (MPI 3.5) and
    /// every step of an algorithm receives exactly the pieces its sender
    /// sends in that step: the opening's message, or a part's pieces up
    /// to the one without [`MORE`] (whatever length either side passed).
    fn receive_post(&self, from: u32, dt: Datatype, (ptr, typed): (*const u8, u32), len: usize) -> Post {
        Post {
            state: RecordState::RecvMatch,
            peer: self.member(from),
            tag: crate::status::ANY_TAG,
            datatype: dt.id,
            buffer: ptr,
            len,
            mode: typed,
            slot: 0,
            context: self.comm.collective_context(),
            inline: false,
            data: 0,
            signature: Signature::NONE,
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
            let tag = piece_tag(tag, off + n < len);
            let p = self.send_post(to, tag, dt, at.add(off).post_buffer(n, &mut part), n);
            let core = self.world.core();
            let i = engine::run_blocking(core, &p, self.world.known())?;
            engine::collect(&core, i)?;
            off += n;
            if off >= len {
                return Ok(());
            }
        }
    }

    /// Receives the part member `from` sends (in pieces, as
    /// [`CommView::send`]) into the `len` bytes at `at`. The pieces follow
    /// the sender's length, not this rank's: each is received into what is
    /// left of `len` (none once it is full: the piece is consumed as
    /// truncated), until the one without [`MORE`], so that a part of
    /// another length (even by many pieces) leaves no piece behind and no
    /// rank waits for a piece that never comes; its length against `len`
    /// is `MPI_ERR_COUNT` (in elements of `dt`).
    fn receive(&self, from: u32, tag: Tag, dt: Datatype, at: Place, len: usize) -> Result<(), Error> {
        let piece = self.piece();
        let mut got = 0usize;
        let mut part = no_part();
        loop {
            let off = got.min(len);
            let room = (len - off).min(piece);
            // `off + room <= len`, inside the caller's buffer.
            let p = self.receive_post(from, dt, at.add(off).post_buffer(room, &mut part), room);
            let core = self.world.core();
            let i = engine::run_blocking(core, &p, self.world.known())?;
            let (n, more) = piece_of(engine::collect(&core, i), tag)?;
            got += n;
            if !more {
                return part_length(got, len, dt);
            }
        }
    }

    /// Sends `slen` bytes at `sptr` to `to` and receives what `from`
    /// sends into the `rlen` bytes at `rptr`, progressing both (either may
    /// be absent), in pieces of at most `max_message_bytes`; the receive
    /// follows the sender's pieces as [`CommView::receive`] does.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_receive(
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
        let (mut so, mut got) = (0usize, 0usize);
        let (mut spart, mut rpart) = (no_part(), no_part());
        let (mut sending, mut receiving) = (to.is_some(), from.is_some());
        while sending || receiving {
            let sn = (slen - so).min(piece);
            let send = match to {
                // `so + sn <= slen`, inside the send buffer.
                Some(t) if sending => {
                    let tag = piece_tag(tag, so + sn < slen);
                    Some(self.send_post(t, tag, dt, sptr.add(so).post_buffer(sn, &mut spart), sn))
                }
                _ => None,
            };
            let off = got.min(rlen);
            let room = (rlen - off).min(piece);
            let recv = match from {
                // `off + room <= rlen`, inside the receive buffer.
                Some(f) if receiving => {
                    Ok(self.receive_post(f, dt, rptr.add(off).post_buffer(room, &mut rpart), room))
                }
                _ => Err(Status {
                    source: PROC_NULL,
                    tag: -1,
                    bytes: 0,
                    datatype: dt.id,
                }),
            };
            let took = recv.is_ok();
            let r = crate::point_to_point::exchange(self.world, send, recv, false);
            if sending {
                so += sn;
                sending = so < slen;
            }
            if took {
                let (n, more) = piece_of(r, tag)?;
                got += n;
                receiving = more;
            } else {
                r?;
            }
        }
        match from {
            Some(_) => part_length(got, rlen, dt),
            None => Ok(()),
        }
    }

    // -----------------------------------------------------------------
    // Barrier, broadcast

    /// The opening of every collective here: a dissemination all-reduce
    /// of an [`Opened`] record (in round `k` every rank sends what it
    /// heard to rank `r + 2^k` and takes in what rank `r - 2^k` heard, mod
    /// n; the lowest and highest of each word and the worst class are
    /// idempotent, so hearing of a rank twice changes nothing). After
    /// ceil(log2 n) rounds every member holds the same record, heard from
    /// every member, and returns the same verdict: either every member goes
    /// on to move data, or every member returns an error (`local`, this
    /// rank's own argument error, on this rank) and no data moves. A rank
    /// that never comes leaves every member waiting in some round (a
    /// deadlock report, or `MPI_ERR_TIMEOUT`/`MPI_ERR_ABORTED` with a wait
    /// bound). It is also the barrier.
    pub(crate) fn open(&self, mine: Opening, local: Result<(), Error>) -> Result<(), Error> {
        let local = local.err();
        let (r, n) = (self.rank, self.size);
        let reference = r == if mine.root == u32::MAX { 0 } else { mine.root };
        let mut heard = Opened::of(&mine, local.as_ref(), reference);
        let bytes = core::mem::size_of::<Opened>();
        let mut k = 1u32;
        while k < n {
            let mut got = Opened::of(&mine, None, false);
            let send = Place::plain(&heard as *const Opened as *const u8);
            let recv = Place::plain(&mut got as *mut Opened as *const u8);
            self.send_receive(
                Some((r + k) % n),
                send,
                bytes,
                Some((r + n - k) % n),
                recv,
                bytes,
                Tag::Opening,
                Opened::DATATYPE,
            )?;
            heard.combine(&got);
            k <<= 1;
        }
        heard.verdict(&mine, local, n)
    }

    /// `MPI_Barrier`: the [`open`](Self::open)ing alone.
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        self.open(opening(Call::Barrier, None, 0, 0), Ok(()))
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

    /// `MPI_Bcast` of a buffer from `root`, after the opening (root,
    /// length and datatype alike everywhere).
    pub(crate) fn broadcast<B: BufferMut + ?Sized>(&self, root: i32, buf: &mut B) -> Result<(), Error> {
        let dt = buf.datatype();
        let (at, len) = place_of_mut(buf);
        let checked = self.check_root(root);
        let mine = opening(Call::Broadcast, Some(root as u32), len, dt.id);
        self.open(mine, checked.map(|_| ()))?;
        self.broadcast_bytes(root as u32, dt, at, len)
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

    /// `MPI_Reduce`: `out` only at the root (its length checked there),
    /// after the opening.
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
        let mine = opening(Call::Reduce, Some(root as u32), count, T::DATATYPE.id);
        let checked = (|| {
            op.check()?;
            chunk_elements::<T>()?;
            let root = self.check_root(root)?;
            if self.rank != root {
                return Ok(None);
            }
            match out {
                Some((p, len)) if len == count => Ok(Some(p)),
                Some((_, len)) => Err(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: saturating_u32(count),
                }),
                // The root called the non-root form.
                None => Err(Error::InvalidRoot {
                    root: root as i32,
                    size: self.size as i32,
                }),
            }
        })();
        let out = checked.as_ref().ok().copied().flatten();
        self.open(mine, checked.map(|_| ()))?;
        // SAFETY: the caller's contract.
        unsafe { self.reduce_raw(send, count, out, root as u32, op) }
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
        let checked = (|| {
            op.check()?;
            chunk_elements::<T>()?;
            if len != count {
                return Err(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: saturating_u32(count),
                });
            }
            Ok(())
        })();
        self.open(opening(Call::AllReduce, None, count, T::DATATYPE.id), checked)?;
        // SAFETY: the caller's contract.
        unsafe { self.reduce_raw(send, count, Some(out), 0, op)? };
        let bytes = count * core::mem::size_of::<T>();
        self.broadcast_bytes(0, T::DATATYPE, Place::plain(out as *const u8), bytes)
    }

    /// `MPI_Scan` (`exclusive`: `MPI_Exscan`, rank 0's `out` untouched):
    /// recursive doubling per chunk, after the opening; the exclusive
    /// prefix is kept in `out` itself.
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
        let checked = (|| {
            op.check()?;
            if len != count {
                return Err(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: saturating_u32(count),
                });
            }
            chunk_elements::<T>()
        })();
        let mut mine = opening(Call::Scan, None, count, T::DATATYPE.id);
        if exclusive {
            mine.call |= EXCLUSIVE_CALL;
        }
        let e = *checked.as_ref().unwrap_or(&1);
        self.open(mine, checked.map(|_| ()))?;
        {
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
        }
    }

    /// `MPI_Reduce_scatter_block`: after the opening (`local`: this
    /// rank's own argument error), the block of rank `q` (`count` elements
    /// at `q × count` of every rank's `send`) reduced into `q`'s `out`.
    ///
    /// # Safety
    /// `send` readable for `size × count` elements; `out` writable for
    /// `count` (it may be `send`, as the in-place form: each block is read
    /// before any later block is written).
    pub(crate) unsafe fn reduce_scatter<T: Equivalence, O: Operation<T>>(
        &self,
        send: *const T,
        count: usize,
        out: *mut T,
        op: &O,
        local: Result<(), Error>,
    ) -> Result<(), Error> {
        let checked = local
            .and_then(|()| op.check())
            .and_then(|()| chunk_elements::<T>().map(|_| ()));
        self.open(opening(Call::ReduceScatter, None, count, T::DATATYPE.id), checked)?;
        let parts = Parts::Even(count * core::mem::size_of::<T>());
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
        let checked = (|| {
            if counts.len() != self.size as usize || counts.iter().any(|&c| c < 0) {
                return Err(Error::CountMismatch {
                    count: saturating_u32(counts.len()),
                    expected: self.size,
                });
            }
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            let mine = counts[self.rank as usize] as usize;
            if n != total || out_len < mine {
                return Err(Error::CountMismatch {
                    count: saturating_u32(n),
                    expected: saturating_u32(total),
                });
            }
            op.check()?;
            chunk_elements::<T>().map(|_| ())
        })();
        let mut mine = opening(Call::ReduceScatter, None, 0, T::DATATYPE.id);
        mine.call |= VARCOUNT_CALL;
        mine.check = checksum(counts);
        self.open(mine, checked)?;
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
    /// `recv`; `send: None` at the root: in place. `parts`: `None` for
    /// the fixed form (equal parts), else the varcount form's partition
    /// (at the root; `Some(Ok(Parts::Even(0)))` elsewhere, unused), or
    /// this rank's error in it. After the opening; the varcount form,
    /// whose counts only the root knows, ends with a second opening that
    /// carries the root's verdict on the parts it received, so every rank
    /// fails when one part had another length.
    pub(crate) fn gather(
        &self,
        root: i32,
        send: Option<(Place, usize)>,
        recv: Option<(Place, usize)>,
        parts: Option<Result<Parts<'_>, Error>>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let varcount = parts.is_some();
        let is_root = root == self.rank as i32;
        let checked = (|| {
            self.check_root(root)?;
            if !is_root {
                return Ok(None);
            }
            let Some((_, rlen)) = recv else {
                // The root called the non-root form.
                return Err(Error::InvalidRoot {
                    root,
                    size: self.size as i32,
                });
            };
            // In place (no `send`): `recv` holds `size` equal parts.
            let own = send.map_or(rlen / self.size as usize, |s| s.1);
            let parts = parts.unwrap_or(Ok(Parts::Even(own)))?;
            let (end, last) = parts.get(self.size as usize - 1);
            if end + last > rlen {
                return Err(Error::CountMismatch {
                    count: saturating_u32(rlen),
                    expected: saturating_u32(end + last),
                });
            }
            if let Some((_, sn)) = send {
                let (_, bytes) = parts.get(self.rank as usize);
                own_length(sn, bytes)?;
            }
            Ok(Some((parts, rlen)))
        })();
        let count = match (varcount, is_root, send, recv) {
            (true, ..) => 0,
            (false, _, Some((_, sn)), _) => sn,
            (false, true, None, Some((_, rlen))) => rlen / self.size as usize,
            _ => 0,
        };
        let mut mine = opening(Call::Gather, Some(root as u32), count, dt.id);
        if varcount {
            mine.call |= VARCOUNT_CALL;
        }
        let at_root = checked.as_ref().ok().copied().flatten();
        self.open(mine, checked.map(|_| ()))?;
        let root = root as u32;
        let Some((parts, _)) = at_root else {
            let (p, n) = send.unwrap_or((Place::plain(empty()), 0));
            let sent = self.send(root, Tag::Gather, dt, p, n);
            return if varcount { self.open(mine, sent) } else { sent };
        };
        let rp = recv.map_or(Place::plain(empty()), |r| r.0);
        let mut first = Ok(());
        for q in 0..self.size {
            let (off, bytes) = parts.get(q as usize);
            // Part `q` lies inside `recv` (checked above for even parts, by
            // `check_partition` for varcount ones).
            let dst = rp.add(off);
            let got = match send {
                // SAFETY: `sn == bytes` packed bytes at `sp` (checked), part
                // `q` at `dst`; distinct buffers (not in place).
                Some((sp, sn)) if q == root => unsafe { Place::copy(sp, dst, sn) },
                _ if q == root => Ok(()),
                _ => self.receive(q, Tag::Gather, dt, dst, bytes),
            };
            match got {
                // A part of another length is consumed; take the others
                // too, so that none is left for the next collective.
                Err(e) if varcount && e.class() == ErrorClass::Count => first = first.and(Err(e)),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        }
        if varcount {
            self.open(mine, first)
        } else {
            first
        }
    }

    /// Linear scatter: part `q` of the root's `send` to member `q`'s
    /// `recv`; `recv: None` at the root: in place. `parts` as
    /// [`gather`](Self::gather)'s (the root's partition of `send`), and
    /// so is the varcount form's second opening (a rank whose part had
    /// another length than its receive buffer fails every rank).
    pub(crate) fn scatter(
        &self,
        root: i32,
        send: Option<(Place, usize)>,
        recv: Option<(Place, usize)>,
        parts: Option<Result<Parts<'_>, Error>>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let varcount = parts.is_some();
        let is_root = root == self.rank as i32;
        let no_root = Error::InvalidRoot {
            root,
            size: self.size as i32,
        };
        let checked = (|| {
            self.check_root(root)?;
            if !is_root {
                // No receive buffer: the root's in-place form.
                return recv.map(|_| None).ok_or(no_root);
            }
            // The root called the non-root form.
            let Some((_, slen)) = send else {
                return Err(no_root);
            };
            let parts = parts.unwrap_or(Ok(Parts::Even(slen / self.size as usize)))?;
            if let Some((_, rn)) = recv {
                let (_, bytes) = parts.get(self.rank as usize);
                own_length(rn, bytes)?;
            }
            Ok(Some(parts))
        })();
        let count = match (varcount, is_root, send, recv) {
            (true, ..) => 0,
            (false, false, _, Some((_, rn))) => rn,
            (false, true, Some((_, slen)), _) => slen / self.size as usize,
            _ => 0,
        };
        let mut mine = opening(Call::Scatter, Some(root as u32), count, dt.id);
        if varcount {
            mine.call |= VARCOUNT_CALL;
        }
        let at_root = checked.as_ref().ok().copied().flatten();
        self.open(mine, checked.map(|_| ()))?;
        let root = root as u32;
        let (Some(parts), Some((sp, _))) = (at_root, send) else {
            let (p, n) = recv.unwrap_or((Place::plain(empty()), 0));
            let got = self.receive(root, Tag::Scatter, dt, p, n);
            return if varcount { self.open(mine, got) } else { got };
        };
        for q in 0..self.size {
            let (off, bytes) = parts.get(q as usize);
            // Part `q` lies inside `send`.
            let src = sp.add(off);
            if q != root {
                self.send(q, Tag::Scatter, dt, src, bytes)?;
            } else if let Some((rp, rn)) = recv {
                // SAFETY: part `q` at `src`, `rn == bytes` packed bytes at
                // `rp` (checked); distinct buffers (not in place).
                unsafe { Place::copy(src, rp, rn)? };
            }
        }
        if varcount {
            self.open(mine, Ok(()))
        } else {
            Ok(())
        }
    }

    /// `MPI_Allgather(v)`: `send` (none: in place) is this rank's part of
    /// `recv`, whose `parts` (or this rank's error in them) are the same
    /// on every rank: `count` bytes each (fixed), or the varcount form's
    /// counts, whose checksum `varcount` the opening compares. Then the
    /// ring.
    pub(crate) fn all_gather(
        &self,
        send: Option<(Place, usize)>,
        recv: Place,
        parts: Result<Parts<'_>, Error>,
        count: usize,
        varcount: Option<u32>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let checked = parts.and_then(|p| {
            if let Some((_, sn)) = send {
                let unit = (dt.size as usize).max(1);
                let (_, bytes) = p.get(self.rank as usize);
                if bytes != sn {
                    return Err(Error::CountMismatch {
                        count: saturating_u32(sn / unit),
                        expected: saturating_u32(bytes / unit),
                    });
                }
            }
            Ok(p)
        });
        let mut mine = opening(Call::AllGather, None, count, dt.id);
        if let Some(c) = varcount {
            mine.call |= VARCOUNT_CALL;
            mine.check = c;
        }
        let parts = checked.as_ref().ok().copied();
        self.open(mine, checked.map(|_| ()))?;
        let Some(parts) = parts else {
            return Err(Error::Intern);
        };
        if let Some((sp, sn)) = send {
            let (off, _) = parts.get(self.rank as usize);
            // SAFETY: this rank's part lies inside `recv` (checked
            // partition, or `size` parts of `sn`); distinct buffers.
            unsafe { Place::copy(sp, recv.add(off), sn)? };
        }
        self.all_gather_ring(recv, parts, dt)
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

    /// Pairwise all-to-all, after the opening: in step `j`, part `rank +
    /// j` of `send` to rank `rank + j`, and part `rank - j` of `recv` from
    /// rank `rank - j`. `count`: the bytes of every part (fixed form), or
    /// `None` for the varcount form, whose pairs' counts only the pair
    /// knows: a part of another length is consumed, the other steps still
    /// run (no message is left for the next collective), and a second
    /// opening carries the failure to every rank.
    pub(crate) fn all_to_all_pairwise(
        &self,
        send: Place,
        sparts: Result<Parts<'_>, Error>,
        recv: Place,
        rparts: Result<Parts<'_>, Error>,
        count: Option<usize>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        let checked = sparts.and_then(|s| {
            let r_parts = rparts?;
            let (_, sb) = s.get(r as usize);
            let (_, rb) = r_parts.get(r as usize);
            if sb != rb {
                return Err(Error::CountMismatch {
                    count: saturating_u32(rb),
                    expected: saturating_u32(sb),
                });
            }
            Ok((s, r_parts))
        });
        let mine = all_to_all_opening(count, dt);
        let parts = checked.as_ref().ok().copied();
        self.open(mine, checked.map(|_| ()))?;
        let Some((sparts, rparts)) = parts else {
            return Err(Error::Intern);
        };
        let (so, sb) = sparts.get(r as usize);
        let (ro, _) = rparts.get(r as usize);
        // SAFETY: own parts inside the buffers, which are distinct.
        unsafe { Place::copy(send.add(so), recv.add(ro), sb)? };
        let mut first = Ok(());
        for j in 1..n {
            let to = (r + j) % n;
            let from = (r + n - j) % n;
            let (so, sb) = sparts.get(to as usize);
            let (ro, rb) = rparts.get(from as usize);
            // Parts inside their buffers.
            let (sp, rp) = (send.add(so), recv.add(ro));
            let step = self.send_receive(Some(to), sp, sb, Some(from), rp, rb, Tag::AllToAll, dt);
            first = varcount_step(first, step, count.is_none())?;
        }
        self.close(mine, count, first)
    }

    /// In-place all-to-all, after the opening (`count` as
    /// [`all_to_all_pairwise`](Self::all_to_all_pairwise)'s): in step `j`,
    /// rank `p` swaps part `q = (j - p) mod n` (`parts`) with rank `q`
    /// (whose partner in that step is `p`).
    pub(crate) fn all_to_all_in_place(
        &self,
        buf: Place,
        parts: Result<Parts<'_>, Error>,
        count: Option<usize>,
        dt: Datatype,
    ) -> Result<(), Error> {
        let (r, n) = (self.rank, self.size);
        let mine = all_to_all_opening(count, dt);
        let ok = parts.as_ref().ok().copied();
        self.open(mine, parts.map(|_| ()))?;
        let Some(parts) = ok else {
            return Err(Error::Intern);
        };
        let mut first = Ok(());
        for j in 0..n {
            let q = (j + n - r) % n;
            if q == r {
                continue;
            }
            let (off, len) = parts.get(q as usize);
            // Part `q` lies inside `buf` (checked partition, or n equal
            // parts).
            let step = self.exchange_replace(q, buf.add(off), len, dt);
            first = varcount_step(first, step, count.is_none())?;
        }
        self.close(mine, count, first)
    }

    /// The end of an all-to-all: the varcount form (`count: None`) agrees
    /// once more, on `result`, so a pair's mismatch fails every rank.
    fn close(&self, mine: Opening, count: Option<usize>, result: Result<(), Error>) -> Result<(), Error> {
        match count {
            Some(_) => result,
            None => self.open(mine, result),
        }
    }

    /// Sends the `len` bytes at `p` to member `q` and replaces them with
    /// what `q` sends back (`MPI_Sendrecv_replace` on the collective
    /// context), piece by piece. While both sides have pieces left, every
    /// earlier piece of both was a whole one, so the send and the receive
    /// name the same bytes (a replace); after the shorter side's last
    /// piece the other side's go alone: the rest of this rank's part is
    /// sent as it is, or the rest of `q`'s is received into what is left
    /// of `len` (and consumed as truncated beyond it), so that parts of
    /// different lengths leave no piece behind ([`CommView::receive`]).
    fn exchange_replace(&self, q: u32, p: Place, len: usize, dt: Datatype) -> Result<(), Error> {
        let piece = self.piece();
        let (mut so, mut got) = (0usize, 0usize);
        let (mut sending, mut receiving) = (true, true);
        let mut part = no_part();
        while sending || receiving {
            let sn = (len - so).min(piece);
            let tag = piece_tag(Tag::AllToAll, so + sn < len);
            if sending && receiving {
                // `so == got` (above); `so + sn <= len`: the same piece both ways.
                let at = p.add(so).post_buffer(sn, &mut part);
                let mut send = self.send_post(q, tag, dt, at, sn);
                send.mode = SendMode::Replace as u32 | at.1;
                let recv = self.receive_post(q, dt, at, sn);
                let r = crate::point_to_point::exchange(self.world, Some(send), Ok(recv), true);
                so += sn;
                sending = so < len;
                let (n, more) = piece_of(r, Tag::AllToAll)?;
                got += n;
                receiving = more;
            } else if sending {
                // `so + sn <= len`: the rest of this rank's part, untouched.
                let p = self.send_post(q, tag, dt, p.add(so).post_buffer(sn, &mut part), sn);
                let core = self.world.core();
                let i = engine::run_blocking(core, &p, self.world.known())?;
                engine::collect(&core, i)?;
                so += sn;
                sending = so < len;
            } else {
                let off = got.min(len);
                let room = (len - off).min(piece);
                // `off + room <= len`, inside the part.
                let p = self.receive_post(q, dt, p.add(off).post_buffer(room, &mut part), room);
                let core = self.world.core();
                let i = engine::run_blocking(core, &p, self.world.known())?;
                let (n, more) = piece_of(engine::collect(&core, i), Tag::AllToAll)?;
                got += n;
                receiving = more;
            }
        }
        part_length(got, len, dt)
    }
}

/// An [`Opening`] of `call` with `root` (`None`: none), `count` and
/// `datatype`. The count word is 32 bits: a count of `u32::MAX` or more is
/// saturated, which [`Opened::of`] turns into this member's own
/// `MPI_ERR_COUNT` (as the hardware paths' opening does), so that every
/// member fails instead of comparing counts cut to their low bits.
fn opening(call: Call, root: Option<u32>, count: usize, datatype: u32) -> Opening {
    Opening {
        call: call as u32,
        root: root.unwrap_or(u32::MAX),
        count: saturating_u32(count),
        datatype,
        check: 0,
    }
}

/// The opening of an all-to-all of `count` bytes per part, or of the
/// varcount form (`None`).
fn all_to_all_opening(count: Option<usize>, dt: Datatype) -> Opening {
    let mut mine = opening(Call::AllToAll, None, count.unwrap_or(0), dt.id);
    if count.is_none() {
        mine.call |= VARCOUNT_CALL;
    }
    mine
}

/// One step of a varcount exchange: a part of another length
/// (`MPI_ERR_COUNT`, the message consumed) is kept as the first failure
/// and the steps go on; any other failure (a failed wait) ends the call.
fn varcount_step(
    first: Result<(), Error>,
    step: Result<(), Error>,
    varcount: bool,
) -> Result<Result<(), Error>, Error> {
    match step {
        Ok(()) => Ok(first),
        Err(e) if varcount && e.class() == ErrorClass::Count => Ok(first.and(Err(e))),
        Err(e) => Err(e),
    }
}

/// A root's own part: the `len` bytes of its own buffer must be the
/// part's `bytes` (`MPI_ERR_COUNT` otherwise).
fn own_length(len: usize, bytes: usize) -> Result<(), Error> {
    if len != bytes {
        return Err(Error::CountMismatch {
            count: saturating_u32(len),
            expected: saturating_u32(bytes),
        });
    }
    Ok(())
}

/// The buffer of a zero-length message: dangling but non-null and
/// aligned, as a copy of zero bytes still requires.
fn empty() -> *mut u8 {
    core::ptr::NonNull::<u8>::dangling().as_ptr()
}

/// Bit of a collective message's tag: more pieces of the same part
/// follow this one (the tags of [`Tag`] are below it).
const MORE: i32 = 1 << 4;

/// The tag word of a piece of a part sent with `tag`: with [`MORE`]
/// unless it is the part's last.
fn piece_tag(tag: Tag, more: bool) -> i32 {
    tag as i32 | if more { MORE } else { 0 }
}

/// A received piece's length and whether more pieces of its part follow,
/// from its receive's result: a piece longer than its room is consumed as
/// truncated (its status tells its length), which the part's length check
/// reports ([`part_length`]). A piece of another step than `tag` cannot
/// come (the opening agreed on the collective; see
/// [`CommView::receive_post`]): `MPI_ERR_INTERN` if it did.
fn piece_of(received: Result<Status, Error>, tag: Tag) -> Result<(usize, bool), Error> {
    match received {
        Ok(status) | Err(Error::Truncate { status, .. }) if status.tag & !MORE == tag as i32 => {
            Ok((status.bytes as usize, status.tag & MORE != 0))
        }
        Ok(_) | Err(Error::Truncate { .. }) => Err(Error::Intern),
        Err(e) => Err(e),
    }
}

/// A received part of `got` bytes against the `len` bytes this rank
/// expects: `MPI_ERR_COUNT` (in elements of `dt`) when they differ.
fn part_length(got: usize, len: usize, dt: Datatype) -> Result<(), Error> {
    if got != len {
        let unit = (dt.size as usize).max(1);
        return Err(Error::CountMismatch {
            count: saturating_u32(len / unit),
            expected: saturating_u32(got / unit),
        });
    }
    Ok(())
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

/// A partition's parts (or its error) and its buffer's place and packed
/// bytes.
pub(crate) fn partition_parts<'p, S: Buffer + ?Sized>(
    p: &'p Partition<'p, S>,
    n: u32,
) -> (Result<Parts<'p>, Error>, Place, usize) {
    let (at, len) = place_of(p.buf);
    (var_parts(p.counts, p.displs, len, p.buf.datatype(), n), at, len)
}

/// A receive partition's parts (or its error) and its buffer's place,
/// packed bytes and datatype.
pub(crate) fn partition_parts_mut<'p, R: BufferMut + ?Sized>(
    p: &'p mut PartitionMut<'_, R>,
    n: u32,
) -> (Result<Parts<'p>, Error>, Place, usize, Datatype) {
    let dt = p.buf.datatype();
    let (at, len) = place_of_mut(p.buf);
    (var_parts(p.counts, p.displs, len, dt, n), at, len, dt)
}

// ---------------------------------------------------------------------------
// The collective traits on a sub-communicator
