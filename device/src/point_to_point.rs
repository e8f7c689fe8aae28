//! Point-to-point communication (MPI standard chapter 3).
//!
//! The calls of this module and of [`crate::request`] are thin layers over
//! one engine (`engine.rs`, described there): every send and receive,
//! blocking or not, is a request record of the rank, advanced in posting
//! order by the same progress function; a blocking call posts a record and
//! waits on it. The model is the thesis "MPI within a GPU" (B. D. Young,
//! 2009, section 5.3): a sender buffers a message in a slot of its own
//! outbox in global memory (so one receiver receiving from every other rank
//! never runs out of room), and the receiver finds it. Beyond the thesis:
//! - a full outbox makes the sender wait (the thesis returned `MPI_ERR_NO_SPACE`);
//! - the sender pushes each slot on the receiver's inbox, so a receive from
//!   `ANY_SOURCE` costs O(messages pending for the receiver), not a scan of
//!   every sender;
//! - `ANY_TAG`, zero-length messages, any `Pod` datatype, arrays and slices;
//! - a message larger than a slot goes by rendezvous: the receiver copies
//!   straight from the sender's buffer with 16-byte loads (shared memory:
//!   always on the emulator, global memory on the GPU), or the message
//!   streams through the slot chunk by chunk;
//! - synchronous sends, matched probes, send-receive-replace of any size.
//!
//! A synchronous send (`MPI_Ssend`, MPI 3.4) of a message that fits a slot
//! waits until the receiver frees the slot (which it does after its copy:
//! the receive has started); a larger one waits for DONE, as every
//! rendezvous does. A matched probe (CLAIMED) is not a started receive.

use crate::communicator::wait_for;
use crate::communicator::{AnyProcess, CommInfo, Process, World, ANY_SOURCE, PROC_NULL};
use crate::datatype::{Buffer, BufferMut, Datatype, Equivalence, TypedBuffer};
use crate::engine::{self, BlockingRecord, Post, Signature};
use crate::error::Error;
use crate::polling::{Call, WaitFor};
use crate::records::{RecordState, SendMode};
use crate::trace;

pub use crate::status::{ANY_TAG, TAG_UB};

pub use crate::status::Status;

/// A process that messages can be sent to.
pub trait Destination {
    /// Blocking standard-mode send with tag 0 (`MPI_Send`).
    fn send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<(), Error> {
        self.send_with_tag(buf, 0)
    }
    /// Blocking standard-mode send (`MPI_Send`). Returns once the data is
    /// buffered (small messages) or the receiver has taken it (rendezvous).
    fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<(), Error>;
    /// Blocking synchronous send with tag 0 (`MPI_Ssend`, MPI 3.4).
    fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<(), Error> {
        self.synchronous_send_with_tag(buf, 0)
    }
    /// Blocking synchronous send (`MPI_Ssend`, MPI 3.4): returns once the
    /// matching receive has started (taken the message out of its slot).
    fn synchronous_send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<(), Error>;
}

/// A process (or any process) that messages can be received from.
pub trait Source {
    /// Blocking receive of a message with any tag (`MPI_Recv`, `MPI_ANY_TAG`).
    fn receive_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<Status, Error> {
        self.receive_into_with_tag(buf, ANY_TAG)
    }
    /// Blocking receive (`MPI_Recv`). On truncation the message is consumed,
    /// the buffer holds its first bytes, and the error carries the status.
    fn receive_into_with_tag<B: BufferMut + ?Sized>(&self, buf: &mut B, tag: i32) -> Result<Status, Error>;
    /// Receives one value of `T` with any tag.
    fn receive<T: Equivalence>(&self) -> Result<(T, Status), Error> {
        let w = self.source_world();
        let source = unchecked_peer(w, self.source_comm(), self.source_filter(), ANY_TAG, false)?;
        receive_value(w, self.source_comm().context(), source, ANY_TAG)
    }
    /// Blocking probe with any tag (`MPI_Probe`).
    fn probe(&self) -> Result<Status, Error> {
        self.probe_with_tag(ANY_TAG)
    }
    /// Blocking probe (`MPI_Probe`): the envelope of the message a receive
    /// with the same source and tag would get next.
    fn probe_with_tag(&self, tag: i32) -> Result<Status, Error>;
    /// Non-blocking probe with any tag (`MPI_Iprobe`).
    fn immediate_probe(&self) -> Result<Option<Status>, Error> {
        self.immediate_probe_with_tag(ANY_TAG)
    }
    /// Non-blocking probe (`MPI_Iprobe`).
    fn immediate_probe_with_tag(&self, tag: i32) -> Result<Option<Status>, Error>;
    /// The source rank for matching, in its communicator (`ANY_SOURCE`
    /// for any).
    #[doc(hidden)]
    fn source_filter(&self) -> i32;
    /// The world.
    #[doc(hidden)]
    fn source_world(&self) -> &World;
    /// The communicator of the source.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn source_comm(&self) -> CommInfo;
}

fn check_send_tag(tag: i32) -> Result<(), Error> {
    if (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        Err(Error::InvalidTag { tag })
    }
}

fn check_receive_tag(tag: i32) -> Result<(), Error> {
    if tag == ANY_TAG {
        Ok(())
    } else {
        check_send_tag(tag)
    }
}

fn null_status(datatype: Datatype) -> Status {
    Status {
        source: PROC_NULL,
        tag: ANY_TAG,
        bytes: 0,
        datatype: datatype.id,
    }
}

/// A send buffer as the engine takes it: its address, its length in bytes
/// and 0; or, for a view of a non-contiguous derived datatype, the address
/// of its [`TypedBuffer`], its packed length and [`engine::TYPED_MODE`].
#[inline(always)]
pub(crate) fn send_bytes<B: Buffer + ?Sized>(buf: &B) -> (*const u8, usize, u32) {
    match buf.typed() {
        Some(t) => (t as *const TypedBuffer as *const u8, t.packed, engine::TYPED_MODE),
        None => {
            let b = buf.as_bytes();
            (b.as_ptr(), b.len(), 0)
        }
    }
}

/// [`send_bytes`] of a receive buffer, typed as a point-to-point receive
/// records it ([`BufferMut::typed_receive`]).
#[inline(always)]
pub(crate) fn receive_bytes<B: BufferMut + ?Sized>(buf: &mut B) -> (*mut u8, usize, u32) {
    match buf.typed_receive() {
        Some(t) => (t as *const TypedBuffer as *mut u8, t.packed, engine::TYPED_MODE),
        None => {
            let b = buf.as_bytes_mut();
            (b.as_mut_ptr(), b.len(), 0)
        }
    }
}

/// The record of a send of `len` bytes at `data` to rank `dest` of `comm`
/// with `tag`, after the argument checks; `None` for the null process.
/// `typed`: 0, or [`engine::TYPED_MODE`] when `data` is a [`TypedBuffer`];
/// `signature`: the buffer's `message_signature`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_post(
    world: &World,
    comm: CommInfo,
    dest: i32,
    tag: i32,
    datatype: Datatype,
    data: *const u8,
    len: usize,
    mode: SendMode,
    typed: u32,
    signature: u32,
) -> Result<Option<Post>, Error> {
    check_send_tag(tag)?;
    if dest == PROC_NULL {
        return Ok(None);
    }
    let dest = comm.world_rank(world, dest)?;
    check_send(world, dest, len)?;
    Ok(Some(Post {
        state: RecordState::SendClaim,
        peer: dest,
        tag,
        datatype: datatype.id,
        buffer: data,
        len,
        mode: mode as u32 | typed,
        slot: 0,
        context: comm.context(),
        inline: false,
        data: 0,
        signature: Signature::of(signature),
    }))
}

/// The record of a receive into `capacity` bytes at `buf` from rank
/// `source` of `comm` with `tag`, after the argument checks; `Err(status)`
/// of the null process. `typed` as for [`send_post`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn receive_post(
    world: &World,
    comm: CommInfo,
    source: i32,
    tag: i32,
    datatype: Datatype,
    buf: *mut u8,
    capacity: usize,
    typed: u32,
) -> Result<Result<Post, Status>, Error> {
    check_receive_tag(tag)?;
    let source = comm.world_rank(world, source)?;
    if source == PROC_NULL {
        return Ok(Err(null_status(datatype)));
    }
    Ok(Ok(Post {
        state: RecordState::RecvMatch,
        peer: source,
        tag,
        datatype: datatype.id,
        buffer: buf,
        len: capacity,
        mode: typed,
        slot: 0,
        context: comm.context(),
        inline: false,
        data: 0,
        signature: Signature::NONE,
    }))
}

/// Posts `p` as a blocking call's record and waits for it.
#[inline(always)]
fn run(world: &World, p: &Post) -> Result<Status, Error> {
    let core = world.core();
    let i = engine::run_blocking(core, p, world.known())?;
    engine::collect(&core, i)
}

/// Waits until records `a` and `b` (`u32::MAX`: none) are complete,
/// progressing the engine. On an abort or timeout both are cancelled.
pub(crate) fn wait_records(world: &World, what: WaitFor, a: u32, b: u32) -> Result<(), Error> {
    let done = |i: u32| i == u32::MAX || engine::is_complete(&world.core(), i);
    let r = wait_for(world, what, |backoff| {
        if engine::progress(world.core()) {
            backoff.progressed();
        }
        (done(a) && done(b)).then_some(Ok(()))
    });
    if r.is_err() {
        for i in [a, b] {
            if i != u32::MAX {
                engine::cancel(&world.core(), i);
            }
        }
    }
    r
}

/// The message a receive from `source` (a world rank) with `tag` on
/// context word `ctx` would get now, after progressing the rank's requests
/// (an earlier posted receive takes its message first); `id1` 0: none.
fn look(world: &World, ctx: u32, source: i32, tag: i32) -> engine::Candidate {
    engine::progress(world.core());
    engine::find(&world.core(), source, tag, ctx)
}

fn probe_once(world: &World, ctx: u32, source: i32, tag: i32) -> Option<Status> {
    if source == PROC_NULL {
        return Some(null_status(u8::DATATYPE));
    }
    match look(world, ctx, source, tag) {
        a if a.id1 == 0 => None,
        a => {
            trace::probed(&world.core(), a.id1 - 1, Call::ImmediateProbe as u32);
            Some(a.status(&world.core()))
        }
    }
}

/// Checks the tag and source of a receive or probe (`PROC_NULL` and
/// `ANY_SOURCE` are valid sources).
fn check_receive(world: &World, source: i32, tag: i32) -> Result<(), Error> {
    check_receive_tag(tag)?;
    if source != ANY_SOURCE && source != PROC_NULL {
        world.check_rank(source)?;
    }
    Ok(())
}

#[inline(always)]
fn receive_from<B: BufferMut + ?Sized>(
    world: &World,
    ctx: u32,
    source: i32,
    buf: &mut B,
    tag: i32,
) -> Result<Status, Error> {
    let datatype = buf.datatype();
    if source == PROC_NULL {
        check_receive_tag(tag)?;
        return Ok(null_status(datatype));
    }
    let (ptr, len, typed) = receive_bytes(buf);
    // A buffer of at most 8 bytes is received into the record and copied
    // here: the caller's address must not reach the engine, or its value
    // would have to live in (local) memory.
    let inline = typed == 0 && matches!(B::FIXED_BYTES, Some(n) if n <= engine::INLINE_BYTES);
    let post = Post {
        state: RecordState::RecvMatch,
        peer: source,
        tag,
        datatype: datatype.id,
        buffer: if inline { core::ptr::null_mut() } else { ptr },
        len,
        mode: typed,
        slot: 0,
        context: ctx,
        inline,
        data: 0,
        signature: Signature::NONE,
    };
    let core = world.core();
    let i = engine::run_blocking(core, &post, world.known().unchecked())?;
    if inline {
        // The first `n` bytes come from the record, the rest stay: merged in
        // a word and stored whole, so the caller's value keeps to registers.
        let n = engine::inline_received(&core, i);
        // SAFETY: the record's inline area holds 8 bytes, 8-aligned; read
        // before the record is freed.
        let raw = unsafe { (engine::inline_area(&core, i) as *const u64).read() };
        let keep = if n >= 8 { 0 } else { u64::MAX << (8 * n) };
        let bytes = buf.as_bytes_mut();
        store_small(bytes, (small_value(bytes) & keep) | (raw & !keep));
    }
    engine::collect(&core, i)
}

fn probe_from(world: &World, ctx: u32, source: i32, tag: i32) -> Result<Status, Error> {
    check_receive(world, source, tag)?;
    let what = WaitFor {
        operation: Call::Probe,
        peer: source,
        tag,
    };
    if source == PROC_NULL {
        return Ok(null_status(u8::DATATYPE));
    }
    wait_for(world, what, |b| {
        if engine::progress(world.core()) {
            b.progressed();
        }
        match engine::find(&world.core(), source, tag, ctx) {
            a if a.id1 == 0 => None,
            a => {
                trace::probed(&world.core(), a.id1 - 1, Call::Probe as u32);
                Some(Ok(a.status(&world.core())))
            }
        }
    })
}

/// `MPI_Iprobe`: one look; a failed look is a poll (the emulator lets other
/// ranks run, and a rank that only spins on it is part of a livelock report).
fn immediate_probe_from(world: &World, ctx: u32, source: i32, tag: i32) -> Result<Option<Status>, Error> {
    check_receive(world, source, tag)?;
    match probe_once(world, ctx, source, tag) {
        Some(s) => {
            world.note_progress();
            Ok(Some(s))
        }
        None => {
            let what = WaitFor {
                operation: Call::ImmediateProbe,
                peer: source,
                tag,
            };
            world.failed_poll(what, 0);
            Ok(None)
        }
    }
}

/// The world rank of `peer` of `comm` for a blocking send or receive that
/// leaves its argument checks to the engine (`Known::unchecked`: the tag,
/// then the world rank, then a send's size, the order they had here): the
/// world's rank as it is; a sub-communicator's checked against the
/// communicator after the tag, and translated. In the caller, a check of
/// a loop-invariant peer kept its error's words live across the user's
/// loop (docs/gpu.md, "What costs registers").
#[inline(always)]
fn unchecked_peer(world: &World, comm: CommInfo, peer: i32, tag: i32, send: bool) -> Result<i32, Error> {
    if comm.id == 0 {
        return Ok(peer);
    }
    if send {
        check_send_tag(tag)?;
    } else {
        check_receive_tag(tag)?;
    }
    comm.world_rank(world, peer)
}

/// Checks a send's arguments to a rank that is not the null process. (Kept
/// apart from building the record, and returning no value beside the
/// error: a `Result<Option<Post>, _>` or a `Result<bool, _>` returned by
/// value stays in local memory on nvptx.)
fn check_send(world: &World, dest: i32, len: usize) -> Result<(), Error> {
    world.check_rank(dest)?;
    if len > world.max_message_bytes() as usize {
        return Err(Error::BufferTooLarge {
            bytes: crate::error::saturating_u32(len),
            limit: world.max_message_bytes(),
        });
    }
    Ok(())
}

#[inline(always)]
fn send_to<B: Buffer + ?Sized>(p: &Process<'_>, buf: &B, tag: i32, mode: SendMode) -> Result<(), Error> {
    let w = p.world;
    let (ptr, len, typed) = send_bytes(buf);
    if p.rank == PROC_NULL {
        return check_send_tag(tag);
    }
    let dest = unchecked_peer(w, p.comm, p.rank, tag, true)?;
    // A small message travels in the record: its bytes are read here, so
    // the caller's value need not live in (local) memory.
    let inline = typed == 0 && matches!(B::FIXED_BYTES, Some(n) if n <= engine::INLINE_BYTES);
    let data = if inline { small_value(buf.as_bytes()) } else { 0 };
    let post = Post {
        state: RecordState::SendClaim,
        peer: dest,
        tag,
        datatype: buf.datatype().id,
        // Inline: the record is the buffer (the caller's address must not
        // escape, or its value would have to live in local memory).
        buffer: if inline { core::ptr::null() } else { ptr },
        len,
        mode: mode as u32 | typed,
        slot: 0,
        context: p.comm.context(),
        inline,
        data,
        signature: Signature::of(buf.message_signature()),
    };
    engine::run(w.core(), &post, w.known().unchecked()).sent(&post)
}

/// The bytes of a message of at most 8 bytes as a little-endian word (the
/// targets are little-endian: stored back as a `u64`, its bytes come out in
/// their order).
#[inline(always)]
fn small_value(bytes: &[u8]) -> u64 {
    let p = bytes.as_ptr();
    if bytes.len() == 8 && (p as usize).is_multiple_of(8) {
        // SAFETY: 8 readable bytes, 8-aligned (an aligned load keeps a
        // caller's local value in registers; nvptx splits unaligned ones).
        return u64::from_le(unsafe { (p as *const u64).read() });
    }
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(engine::INLINE_BYTES) {
        v |= (*b as u64) << (8 * i);
    }
    v
}

/// Stores the first `bytes.len()` (at most 8) bytes of the little-endian
/// word `v` into `bytes`: the inverse of [`small_value`].
#[inline(always)]
fn store_small(bytes: &mut [u8], v: u64) {
    let p = bytes.as_mut_ptr();
    if bytes.len() == 8 && (p as usize).is_multiple_of(8) {
        // SAFETY: 8 writable bytes, 8-aligned.
        unsafe { (p as *mut u64).write(v.to_le()) };
        return;
    }
    for (i, b) in bytes.iter_mut().enumerate().take(engine::INLINE_BYTES) {
        *b = (v >> (8 * i)) as u8;
    }
}

/// A blocking receive of one value of `T` (`Source::receive`): a value of at
/// most 8 bytes travels in the record, so it never needs a buffer in memory.
#[inline(always)]
fn receive_value<T: Equivalence>(
    world: &World,
    ctx: u32,
    source: i32,
    tag: i32,
) -> Result<(T, Status), Error> {
    let size = core::mem::size_of::<T>();
    if size > engine::INLINE_BYTES {
        let mut v = T::zeroed();
        let s = receive_from(world, ctx, source, &mut v, tag)?;
        return Ok((v, s));
    }
    if source == PROC_NULL {
        check_receive_tag(tag)?;
        return Ok((T::zeroed(), null_status(T::DATATYPE)));
    }
    let post = Post {
        state: RecordState::RecvMatch,
        peer: source,
        tag,
        datatype: T::DATATYPE.id,
        buffer: core::ptr::null(),
        len: size,
        mode: 0,
        slot: 0,
        context: ctx,
        inline: true,
        data: 0,
        signature: Signature::NONE,
    };
    let core = world.core();
    let i = engine::run_blocking(core, &post, world.known().unchecked())?;
    // SAFETY: the record's inline area holds the 8 bytes the receive wrote
    // (`size` of them are the value); read before the record is freed.
    let raw = unsafe { (engine::inline_area(&core, i) as *const u64).read() };
    let status = engine::collect(&core, i)?;
    let mut v = T::zeroed();
    // SAFETY: `size <= 8` bytes of `raw` into the value (`T: Pod`).
    unsafe {
        core::ptr::copy_nonoverlapping(&raw as *const u64 as *const u8, &mut v as *mut T as *mut u8, size)
    };
    Ok((v, status))
}

impl Destination for Process<'_> {
    #[inline(always)]
    fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<(), Error> {
        send_to(self, buf, tag, SendMode::Standard)
    }
    #[inline(always)]
    fn synchronous_send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<(), Error> {
        send_to(self, buf, tag, SendMode::Synchronous)
    }
}

macro_rules! impl_source {
    ($t:ty) => {
        impl Source for $t {
            fn receive_into_with_tag<B: BufferMut + ?Sized>(
                &self,
                buf: &mut B,
                tag: i32,
            ) -> Result<Status, Error> {
                let source = unchecked_peer(self.world, self.comm, self.source_filter(), tag, false)?;
                receive_from(self.world, self.comm.context(), source, buf, tag)
            }
            fn probe_with_tag(&self, tag: i32) -> Result<Status, Error> {
                check_receive_tag(tag)?;
                let source = self.comm.world_rank(self.world, self.source_filter())?;
                probe_from(self.world, self.comm.context(), source, tag)
            }
            fn immediate_probe_with_tag(&self, tag: i32) -> Result<Option<Status>, Error> {
                check_receive_tag(tag)?;
                let source = self.comm.world_rank(self.world, self.source_filter())?;
                immediate_probe_from(self.world, self.comm.context(), source, tag)
            }
            fn source_filter(&self) -> i32 {
                source_rank_of(self)
            }
            fn source_world(&self) -> &World {
                self.world
            }
            #[allow(private_interfaces)]
            fn source_comm(&self) -> CommInfo {
                self.comm
            }
        }
    };
}

fn source_rank_of<T: SourceRank>(s: &T) -> i32 {
    s.filter_rank()
}

trait SourceRank {
    fn filter_rank(&self) -> i32;
}
impl SourceRank for Process<'_> {
    fn filter_rank(&self) -> i32 {
        self.rank
    }
}
impl SourceRank for AnyProcess<'_> {
    fn filter_rank(&self) -> i32 {
        ANY_SOURCE
    }
}

impl_source!(Process<'_>);
impl_source!(AnyProcess<'_>);

// ---------------------------------------------------------------------------
// Matched probe and receive (MPI 3.8.2)

/// A message taken out of matching by a matched probe (`MPI_Message`).
///
/// No receive other than [`Message::matched_receive_into`] can get it. A
/// `Message` dropped without being received is discarded: its sender is
/// released as if a receive of zero bytes had taken it (MPI leaves an
/// unreceived matched message erroneous; a discard is the safe reading).
#[must_use = "a matched message is received with `matched_receive_into`; dropping it discards it"]
pub struct Message<'w> {
    /// `None`: the message of the null process (`MPI_MESSAGE_NO_PROC`).
    world: Option<&'w World>,
    /// The claimed slot's id.
    slot: u32,
}

impl<'w> Message<'w> {
    /// The message a matched probe of the null process returns
    /// (`MPI_MESSAGE_NO_PROC`): receiving it returns at once with source
    /// `PROC_NULL`, tag `ANY_TAG` and count 0.
    pub fn no_proc() -> Message<'w> {
        Message { world: None, slot: 0 }
    }

    /// Whether this is [`Message::no_proc`].
    pub fn is_no_proc(&self) -> bool {
        self.world.is_none()
    }

    /// Receives the matched message into `buf` (`MPI_Mrecv`), with the
    /// rules of a receive: `MPI_ERR_TRUNCATE` and `MPI_ERR_TYPE` as there.
    pub fn matched_receive_into<B: BufferMut + ?Sized>(self, buf: &mut B) -> Result<Status, Error> {
        let this = core::mem::ManuallyDrop::new(self);
        let datatype = buf.datatype();
        let Some(w) = this.world else {
            return Ok(null_status(datatype));
        };
        let (ptr, len, typed) = receive_bytes(buf);
        let post = Post {
            state: RecordState::RecvClaimed,
            peer: ANY_SOURCE,
            tag: ANY_TAG,
            datatype: datatype.id,
            buffer: ptr,
            len,
            mode: typed,
            slot: this.slot + 1,
            // A claimed receive matches nothing: its slot is given.
            context: 0,
            inline: false,
            data: 0,
            signature: Signature::NONE,
        };
        match run(w, &post) {
            Err(Error::RequestLimit { .. }) => {
                engine::discard(&w.core(), this.slot);
                Err(Error::RequestLimit {
                    limit: crate::layout::BLOCKING_RECORDS,
                })
            }
            r => r,
        }
    }

    /// Receives the matched message as one value of `T`.
    pub fn matched_receive<T: Equivalence>(self) -> Result<(T, Status), Error> {
        let mut v = T::zeroed();
        let s = self.matched_receive_into(&mut v)?;
        Ok((v, s))
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.world {
            engine::discard(&w.core(), self.slot);
        }
    }
}

/// Finds the message a receive from `source` with `tag` on context word
/// `ctx` would get now and takes it out of matching (out of the unexpected
/// queue, CLAIMED).
fn claim_match(world: &World, ctx: u32, source: i32, tag: i32) -> Option<(Message<'_>, Status)> {
    match look(world, ctx, source, tag) {
        a if a.id1 == 0 => None,
        a => {
            let slot = a.id1 - 1;
            engine::unlink(&world.core(), &a);
            trace::probed(&world.core(), slot, Call::Probe as u32);
            trace::matched(&world.core(), slot);
            engine::mark_claimed(&world.core(), slot);
            Some((
                Message {
                    world: Some(world),
                    slot,
                },
                a.status(&world.core()),
            ))
        }
    }
}

fn matched_probe_from(
    world: &World,
    ctx: u32,
    source: i32,
    tag: i32,
) -> Result<(Message<'_>, Status), Error> {
    check_receive(world, source, tag)?;
    if source == PROC_NULL {
        return Ok((Message::no_proc(), null_status(u8::DATATYPE)));
    }
    let what = WaitFor {
        operation: Call::Probe,
        peer: source,
        tag,
    };
    wait_for(world, what, |b| {
        if engine::progress(world.core()) {
            b.progressed();
        }
        match engine::find(&world.core(), source, tag, ctx) {
            a if a.id1 == 0 => None,
            _ => claim_match(world, ctx, source, tag).map(Ok),
        }
    })
}

fn immediate_matched_probe_from(
    world: &World,
    ctx: u32,
    source: i32,
    tag: i32,
) -> Result<Option<(Message<'_>, Status)>, Error> {
    check_receive(world, source, tag)?;
    if source == PROC_NULL {
        return Ok(Some((Message::no_proc(), null_status(u8::DATATYPE))));
    }
    match claim_match(world, ctx, source, tag) {
        Some(m) => {
            world.note_progress();
            Ok(Some(m))
        }
        None => {
            let what = WaitFor {
                operation: Call::ImmediateProbe,
                peer: source,
                tag,
            };
            world.failed_poll(what, 1);
            Ok(None)
        }
    }
}

macro_rules! impl_matched_probe {
    ($t:ident) => {
        impl<'w> $t<'w> {
            /// Blocking matched probe with any tag (`MPI_Mprobe`, MPI 3.8.2).
            pub fn matched_probe(&self) -> Result<(Message<'w>, Status), Error> {
                self.matched_probe_with_tag(ANY_TAG)
            }
            /// Blocking matched probe (`MPI_Mprobe`): waits for the message
            /// a receive with this source and tag would get, and takes it out
            /// of matching for [`Message::matched_receive_into`].
            pub fn matched_probe_with_tag(&self, tag: i32) -> Result<(Message<'w>, Status), Error> {
                check_receive_tag(tag)?;
                let source = self.comm.world_rank(self.world, source_rank_of(self))?;
                matched_probe_from(self.world, self.comm.context(), source, tag)
            }
            /// Non-blocking matched probe with any tag (`MPI_Improbe`).
            pub fn immediate_matched_probe(&self) -> Result<Option<(Message<'w>, Status)>, Error> {
                self.immediate_matched_probe_with_tag(ANY_TAG)
            }
            /// Non-blocking matched probe (`MPI_Improbe`); a failed one is a
            /// poll, as for `immediate_probe`.
            pub fn immediate_matched_probe_with_tag(
                &self,
                tag: i32,
            ) -> Result<Option<(Message<'w>, Status)>, Error> {
                check_receive_tag(tag)?;
                let source = self.comm.world_rank(self.world, source_rank_of(self))?;
                immediate_matched_probe_from(self.world, self.comm.context(), source, tag)
            }
        }
    };
}

impl_matched_probe!(Process);
impl_matched_probe!(AnyProcess);

// ---------------------------------------------------------------------------
// Send-receive (MPI 3.10)

/// Sends `msg` to `destination` with `send_tag` and receives into `buf` from
/// `source` with `receive_tag`, both progressing together so that exchanges
/// (a ring shift, a send to self) cannot deadlock (`MPI_Sendrecv`, MPI 3.10).
pub fn send_receive_into_with_tags<M, B, S>(
    msg: &M,
    destination: &Process<'_>,
    send_tag: i32,
    buf: &mut B,
    source: &S,
    receive_tag: i32,
) -> Result<Status, Error>
where
    M: Buffer + ?Sized,
    B: BufferMut + ?Sized,
    S: Source,
{
    let w = destination.world;
    let (out, out_len, out_typed) = send_bytes(msg);
    let send = send_post(
        w,
        destination.comm,
        destination.rank,
        send_tag,
        msg.datatype(),
        out,
        out_len,
        SendMode::Standard,
        out_typed,
        msg.message_signature(),
    )?;
    let datatype = buf.datatype();
    let (ptr, len, typed) = receive_bytes(buf);
    let recv = receive_post(
        w,
        source.source_comm(),
        source.source_filter(),
        receive_tag,
        datatype,
        ptr,
        len,
        typed,
    )?;
    exchange(w, send, recv, false)
}

/// Posts a send and a receive and waits for both; `replace`: the receive
/// writes only bytes the send has copied out (they share a buffer).
pub(crate) fn exchange(
    w: &World,
    send: Option<Post>,
    recv: Result<Post, Status>,
    replace: bool,
) -> Result<Status, Error> {
    let s = match &send {
        Some(p) => {
            engine::post_blocking(&w.core(), BlockingRecord::First, p);
            BlockingRecord::First as u32
        }
        None => u32::MAX,
    };
    let (r, what) = match recv {
        Ok(mut p) => {
            if replace && s != u32::MAX {
                p.mode = (p.mode & engine::TYPED_MODE) | (s + 1);
            }
            let what = WaitFor {
                operation: Call::SendReceive,
                peer: p.peer,
                tag: p.tag,
            };
            engine::post_blocking(&w.core(), BlockingRecord::Second, &p);
            (Ok(BlockingRecord::Second as u32), what)
        }
        Err(null) => (
            Err(null),
            WaitFor {
                operation: Call::Send,
                peer: send.as_ref().map_or(PROC_NULL, |p| p.peer),
                tag: send.as_ref().map_or(ANY_TAG, |p| p.tag),
            },
        ),
    };
    let ri = *r.as_ref().unwrap_or(&u32::MAX);
    wait_records(w, what, s, ri)?;
    let sent = if s != u32::MAX {
        engine::collect(&w.core(), s).map(|_| ())
    } else {
        Ok(())
    };
    let received = match r {
        Ok(i) => engine::collect(&w.core(), i),
        Err(null) => Ok(null),
    };
    sent.and(received)
}

/// [`send_receive_into_with_tags`] with tag 0 for the send and any tag for
/// the receive.
pub fn send_receive_into<M, B, S>(
    msg: &M,
    destination: &Process<'_>,
    buf: &mut B,
    source: &S,
) -> Result<Status, Error>
where
    M: Buffer + ?Sized,
    B: BufferMut + ?Sized,
    S: Source,
{
    send_receive_into_with_tags(msg, destination, 0, buf, source, ANY_TAG)
}

/// Sends the contents of `buf` to `destination` with `send_tag` and
/// replaces them with the message received from `source` with
/// `receive_tag` (`MPI_Sendrecv_replace`, MPI 3.10), of any size up to
/// `max_message_bytes`, without a staging copy.
///
/// Algorithm: the send and the receive are two records of the engine,
/// progressed together. A message that fits a slot is copied into the slot
/// when the send starts, so the buffer is free at once. A larger one always
/// streams through the slot, chunk by chunk, never read by the receiver
/// from the buffer; the receive writes a byte of the buffer only once the
/// send has copied that byte out (chunk `k` in needs chunk `k` out). Each
/// chunk out waits for the destination's request of it, and that
/// destination writes its own chunk `k` only after sending it, so a ring
/// shift of any size completes (no cycle: chunk `k` never waits for chunk
/// `k + 1`). A large message costs a slot round trip per `slot_bytes`.
pub fn send_receive_replace_into_with_tags<B, S>(
    buf: &mut B,
    destination: &Process<'_>,
    send_tag: i32,
    source: &S,
    receive_tag: i32,
) -> Result<Status, Error>
where
    B: BufferMut + ?Sized,
    S: Source,
{
    let w = destination.world;
    let datatype = buf.datatype();
    let (ptr, len, typed) = receive_bytes(buf);
    // Both records use the one pointer: the send reads a byte only before
    // the receive may write it (the receive is bounded by the send; a view
    // walks the same packed positions both ways).
    let send = send_post(
        w,
        destination.comm,
        destination.rank,
        send_tag,
        datatype,
        ptr,
        len,
        SendMode::Replace,
        typed,
        buf.message_signature(),
    )?;
    let recv = receive_post(
        w,
        source.source_comm(),
        source.source_filter(),
        receive_tag,
        datatype,
        ptr,
        len,
        typed,
    )?;
    exchange(w, send, recv, true)
}

/// [`send_receive_replace_into_with_tags`] with tag 0 for the send and any
/// tag for the receive (rsmpi's `send_receive_replace_into`).
pub fn send_receive_replace_into<B, S>(
    buf: &mut B,
    destination: &Process<'_>,
    source: &S,
) -> Result<Status, Error>
where
    B: BufferMut + ?Sized,
    S: Source,
{
    send_receive_replace_into_with_tags(buf, destination, 0, source, ANY_TAG)
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread (rank 0 of 1): self-sends and
    //! argument checks. Multi-rank behaviour is tested through the emulator
    //! (check/tests/semantics.rs, check/tests/errors.rs, host/tests/) and under
    //! loom (device/tests/loom.rs).
    extern crate std;
    use super::*;
    use crate::communicator::Communicator;
    use crate::layout::{WorldConfig, FLAG_FORCE_STREAMING};
    use std::vec;
    use std::vec::Vec;

    fn with_world(config: WorldConfig, f: impl FnOnce(&World)) {
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        f(&world);
    }

    #[test]
    fn self_send_then_receive_small() {
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            me.send_with_tag(&[1.5f64, 2.5][..], 7).unwrap();
            let mut got = [0.0f64; 2];
            let s = me.receive_into_with_tag(&mut got[..], 7).unwrap();
            assert_eq!(got, [1.5, 2.5]);
            assert_eq!((s.source_rank(), s.tag(), s.count::<f64>()), (0, 7, Some(2)));
        });
    }

    #[test]
    fn a_sent_message_decodes_from_its_slot_until_received() {
        use crate::records::{MessageKind, SlotState, SlotView};
        let config = WorldConfig::new(1, 1);
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        let base = bytes.as_mut_ptr();
        let read = |slot| {
            // SAFETY: the world memory outlives this view; no rank runs while it is read.
            let memory = unsafe { std::slice::from_raw_parts(base as *const u8, layout.total) };
            SlotView::read(memory, &layout, 0, slot)
        };
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(base) }.unwrap();
        let me = world.process_at_rank(0);
        me.send_with_tag(&[1u32, 2, 3][..], 9).unwrap();
        let v = read(0);
        assert_eq!(
            (
                v.state(),
                v.dest(),
                v.header.tag,
                v.header.kind(),
                v.header.bytes,
                v.header.sequence()
            ),
            (Some(SlotState::Queued), 0, 9, MessageKind::Eager as u32, 12, 0)
        );
        assert!(v.is_unreceived() && !v.is_rendezvous());
        assert_eq!(read(1).state(), Some(SlotState::Free));
        let mut got = [0u32; 3];
        me.receive_into_with_tag(&mut got[..], 9).unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert!(!read(0).is_unreceived());
    }

    #[test]
    fn send_receive_to_self_large_direct_and_streamed() {
        for flags in [0, FLAG_FORCE_STREAMING] {
            let mut c = WorldConfig::new(1, 1);
            c.flags = flags;
            with_world(c, |w| {
                let data: Vec<u32> = (0..10_000u32).map(|i| i.wrapping_mul(2654435761)).collect();
                let mut got = vec![0u32; 10_000];
                let me = w.process_at_rank(0);
                let s = send_receive_into(&data[..], &me, &mut got[..], &me).unwrap();
                assert_eq!(got, data);
                assert_eq!(s.count::<u32>(), Some(10_000));
            });
        }
    }

    #[test]
    fn truncation_consumes_and_keeps_first_bytes() {
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            me.send(&[1u8, 2, 3, 4, 5][..]).unwrap();
            me.send(&[9u8][..]).unwrap();
            let mut small = [0u8; 3];
            match me.receive_into(&mut small[..]) {
                Err(Error::Truncate {
                    status,
                    capacity_bytes,
                }) => {
                    assert_eq!((status.bytes(), capacity_bytes), (5, 3));
                }
                other => panic!("expected truncation, got {other:?}"),
            }
            assert_eq!(small, [1, 2, 3]);
            let mut next = [0u8; 4];
            let s = me.receive_into(&mut next[..]).unwrap();
            assert_eq!((s.bytes(), next[0]), (1, 9));
        });
    }

    /// A receive buffer of 2^32 bytes or more takes a message whole (its
    /// capacity was cut to its low 32 bits: 16 bytes for 2^32 + 16, and 0
    /// for 2^32, truncating the message), blocking and immediate alike.
    /// The buffer's pages past the message are never touched.
    #[test]
    fn receive_buffers_past_four_gib_take_the_whole_message() {
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            let message: Vec<u8> = (0..100u8).collect();
            for len in [(1usize << 32) + 16, 1 << 32] {
                let mut big = vec![0u8; len];
                me.send_with_tag(&message[..], 1).unwrap();
                let s = me.receive_into_with_tag(&mut big[..], 1).unwrap();
                assert_eq!((s.bytes(), &big[..100], big[100]), (100, &message[..], 0));
                big[..100].fill(0);
                me.send_with_tag(&message[..], 2).unwrap();
                let s = crate::request::scope(|scope| {
                    me.immediate_receive_into_with_tag(scope, &mut big[..], 2)?.wait()
                })
                .unwrap();
                assert_eq!((s.bytes(), &big[..100]), (100, &message[..]));
            }
        });
    }

    #[test]
    fn null_process_and_argument_errors() {
        with_world(WorldConfig::new(1, 1), |w| {
            let null = w.null_process();
            null.send(&5u32).unwrap();
            let mut v = 77u32;
            let s = null.receive_into(&mut v).unwrap();
            assert_eq!(
                (s.source_rank(), s.tag(), s.count::<u32>(), v),
                (PROC_NULL, ANY_TAG, Some(0), 77)
            );
            assert_eq!(
                w.process_at_rank(1).send(&1u8),
                Err(Error::InvalidRank { rank: 1, size: 1 })
            );
            assert_eq!(
                w.process_at_rank(0).send_with_tag(&1u8, -5),
                Err(Error::InvalidTag { tag: -5 })
            );
            assert_eq!(
                w.process_at_rank(0).send_with_tag(&1u8, ANY_TAG),
                Err(Error::InvalidTag { tag: ANY_TAG })
            );
            let big = vec![0u8; (1 << 20) + 1];
            assert_eq!(
                w.process_at_rank(0).send(&big[..]),
                Err(Error::BufferTooLarge {
                    bytes: (1 << 20) + 1,
                    limit: 1 << 20
                })
            );
            assert_eq!(w.any_process().immediate_probe().unwrap(), None);
        });
    }

    #[test]
    fn type_mismatch_consumes_and_bytes_accept_anything() {
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            me.send(&3.0f64).unwrap();
            me.send(&4.0f64).unwrap();
            let mut i = 0i32;
            assert!(matches!(me.receive_into(&mut i), Err(Error::TypeMismatch { .. })));
            let mut raw = [0u8; 8];
            me.receive_into(&mut raw[..]).unwrap();
            assert_eq!(f64::from_le_bytes(raw), 4.0);
        });
    }

    #[test]
    fn requests_to_self_complete_with_wait_all_and_arrays_are_buffers() {
        use crate::request::{scope, wait_all};
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            let out = [1u32, 2, 3];
            let big: Vec<u32> = (0..5000u32).collect();
            let mut a = [0u32; 3];
            let mut b = vec![0u32; 5000];
            let mut statuses = [Status::empty(); 4];
            scope(|s| {
                let mut reqs = [
                    w.any_process()
                        .immediate_receive_into_with_tag(s, &mut a, 0)
                        .unwrap(),
                    me.immediate_receive_into_with_tag(s, &mut b[..], 8).unwrap(),
                    me.immediate_send_with_tag(s, &big[..], 8).unwrap(),
                    me.immediate_synchronous_send(s, &out).unwrap(),
                ];
                wait_all(&mut reqs, &mut statuses).unwrap();
                assert!(reqs.iter().all(|r| r.is_null()));
            });
            assert_eq!(a, [1, 2, 3]);
            assert_eq!(b, big);
            assert_eq!((statuses[0].tag(), statuses[0].count::<u32>()), (0, Some(3)));
            assert_eq!(statuses[1].count::<u32>(), Some(5000));
            me.send(&[4i32, 5]).unwrap();
            let mut c = [0i32; 2];
            me.receive_into(&mut c).unwrap();
            assert_eq!(c, [4, 5]);
        });
    }

    #[test]
    fn null_sets_limits_and_posting_order() {
        use crate::request::{scope, test_any, wait_any, wait_some, AnyCompletion, Request, MAX_REQUESTS};
        with_world(WorldConfig::new(1, 1), |w| {
            let mut none: [Request; 0] = [];
            assert_eq!(wait_any(&mut none), Ok(AnyCompletion::AllNull));
            let mut nulls = [Request::null(), Request::null()];
            assert_eq!(test_any(&mut nulls), Some(AnyCompletion::AllNull));
            assert_eq!(wait_some(&mut nulls, &mut [None; 2]), Ok(None));
            assert_eq!(Request::null().wait(), Ok(Status::empty()));
            let me = w.process_at_rank(0);
            let mut bufs = [[0u32; 1]; MAX_REQUESTS + 1];
            scope(|s| {
                let (last, first) = bufs.split_last_mut().unwrap();
                for b in first.iter_mut() {
                    let _ = me.immediate_receive_into(s, b).unwrap();
                }
                assert!(matches!(
                    me.immediate_receive_into(s, last),
                    Err(Error::RequestLimit { .. })
                ));
                // The unwaited receives complete at the scope's end.
                for i in 0..MAX_REQUESTS as u32 {
                    me.send_with_tag(&[i], i as i32).unwrap();
                }
            });
            // Posted in order: receive k got message k.
            for (i, b) in bufs[..MAX_REQUESTS].iter().enumerate() {
                assert_eq!(b[0], i as u32);
            }
            // An earlier any-tag receive takes a message a later tag-5 one also accepts.
            let (mut x, mut y) = (0u32, 0u32);
            scope(|s| {
                let mut rx = me.immediate_receive_into(s, &mut x).unwrap();
                let mut ry = me.immediate_receive_into_with_tag(s, &mut y, 5).unwrap();
                assert_eq!(ry.test(), None);
                me.send_with_tag(&7u32, 5).unwrap();
                assert_eq!(ry.test(), None);
                assert_eq!(rx.test().unwrap().unwrap().tag(), 5);
                me.send_with_tag(&9u32, 5).unwrap();
                assert_eq!(ry.wait().unwrap().tag(), 5);
            });
            assert_eq!((x, y), (7, 9));
        });
    }

    #[test]
    fn matched_probe_hides_the_message_from_receives() {
        with_world(WorldConfig::new(1, 1), |w| {
            let me = w.process_at_rank(0);
            me.send_with_tag(&1u32, 3).unwrap();
            me.send_with_tag(&2u32, 3).unwrap();
            let (m, s) = w.any_process().matched_probe().unwrap();
            assert_eq!((s.source_rank(), s.tag()), (0, 3));
            let mut v = 0u32;
            me.receive_into(&mut v).unwrap();
            assert_eq!(v, 2);
            assert_eq!(w.any_process().immediate_probe().unwrap(), None);
            assert!(w.any_process().immediate_matched_probe().unwrap().is_none());
            let (got, _) = m.matched_receive::<u32>().unwrap();
            assert_eq!(got, 1);
            let (m, s) = w.null_process().matched_probe().unwrap();
            assert!(m.is_no_proc());
            assert_eq!((s.source_rank(), s.tag(), s.bytes()), (PROC_NULL, ANY_TAG, 0));
            assert_eq!(m.matched_receive_into(&mut v).unwrap().source_rank(), PROC_NULL);
            // A dropped message is discarded: its slot is free again.
            for i in 0..20u32 {
                me.send(&i).unwrap();
                let (m, _) = w.any_process().matched_probe().unwrap();
                drop(m);
            }
            assert_eq!(w.any_process().immediate_probe().unwrap(), None);
        });
    }

    #[test]
    fn replace_to_self_of_any_size() {
        for flags in [0, FLAG_FORCE_STREAMING] {
            let mut c = WorldConfig::new(1, 1);
            c.flags = flags;
            with_world(c, |w| {
                let me = w.process_at_rank(0);
                for n in [3usize, 64, 65, 1000, 10_000] {
                    let mut buf: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
                    let want = buf.clone();
                    let s = send_receive_replace_into(&mut buf[..], &me, &me).unwrap();
                    assert_eq!(buf, want);
                    assert_eq!(s.count::<u32>(), Some(n));
                }
            });
        }
    }
}
