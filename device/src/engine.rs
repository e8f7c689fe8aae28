//! The point-to-point engine: inboxes, the unexpected queue, request records
//! and their progress. Every send and receive of the library, blocking or
//! not, is a [`RequestRecord`] in the rank's active list, advanced by
//! [`progress`]; a blocking call posts a record and waits on it.
//!
//! # One message
//! A sender takes a free slot of its own outbox (its `used_slots` mask; when
//! empty, one relaxed scan of the slots' states, in batches, and one
//! acquire fence for all it found), writes the header (two 16-byte vector
//! stores and two words) and the payload with plain and relaxed stores,
//! and pushes the slot on the destination's inbox with one atomic swap
//! (Release): its only synchronising operation for an eager message. The
//! swap returns the slot pushed before, which it then links (relaxed). A
//! lone send of at most 8 bytes loads them in the batch of its slot mask
//! and sequence number and stores them as its header's `head` word. Every
//! message of 1 to 8 bytes has them there (a direct message its buffer's
//! address), a relaxed atomic that a receive loads with the envelope.
//!
//! The receiver takes its whole inbox with one relaxed swap, only when a
//! load (the look) saw it non-empty, and after an acquire: the look's own
//! where a waiting receive polls (an Acquire load), else an Acquire fence
//! after a relaxed look. The swap goes in one batch with the loads of the
//! slot the look saw on top, where the walk starts. It walks the chain
//! (newest first) turning it around, and appends it to its unexpected
//! queue: a doubly linked list of arrived slots in arrival order, kept in
//! the slots' `link`/`back` words and the rank's private header. A
//! receive from any source walks that queue
//! (O(messages pending for this rank)); a receive from one source scans
//! that sender's slots for the arrived one with the lowest sequence number
//! (O(slots per rank)), then unlinks it in O(1) with the links it loaded
//! while matching. A blocking receive alone in the active list looks at
//! the inbox in the same batch as its scan and takes it only when the scan
//! found nothing, matching each message as the walk takes it: a message's
//! link and the words it matches on are one batch, so the walk is no
//! longer (`drain_matching`); a lone message that matches is not
//! queued at all. Its first try (`receive_alone`, a call of its own)
//! loads the newest message's whole envelope (two vector loads) and its
//! `head` in that batch too, so that its match starts
//! without another load; if it found nothing, it waits in a loop of its
//! own (`receive_waiting`, the record's words in registers) whose polls
//! (`receive_polled`) only look at the inbox, in one batch with the
//! rank's deferred count, and take it the same way. The receiver reads the
//! envelope with the `head` (a small message is copied from registers)
//! and gives the slot back (`slot_return::SlotReturn`).
//! A lone receive that found its message already queued (taken from the
//! inbox by an earlier call) returns it at once, with one Release store of
//! FREE: the rank is working through messages that wait for it, and a
//! batch would be flushed on its own critical path. Any other (its own
//! call took the message from the inbox, or it was one of several
//! requests in a pass) returns it later, in a batch: one Release fence and a
//! relaxed store of FREE per slot, when half a rank's slots are waiting to
//! go back, and before the receiver waits, fails a non-blocking poll or
//! exits (`defer_free`), which a rank that waited for its message does
//! while it waits for the next. A sender whose eager message fits never
//! waits for either. In the common case an eager message thus costs the
//! sender one Release swap and the receiver its share of one acquire (an
//! Acquire load or fence; one fence more when a push landed between the
//! look and the swap) and one relaxed swap, and of one Release store, or of
//! one fence per batch.
//!
//! # Ordering (MPI 3.5)
//! One sender's pushes on one inbox follow its program order, and the
//! receiver appends each chain it takes in push order, so the unexpected
//! queue holds every sender's messages in the order they were sent, and
//! the messages of one sender that have arrived are a prefix of what it
//! sent: the first match in the queue (any source) or the lowest arrived
//! number (one source) is the message MPI says comes next. Records are
//! polled in posting order: a send takes a slot only after every earlier
//! posted send did, and a receive gets the first message that no earlier
//! posted receive took: receives match in the order they were posted, and a
//! blocking call, posted last, leaves messages to earlier requests.
//!
//! # Why the swaps synchronise everything
//! Every write to an inbox is an atomic read-modify-write (senders' swaps,
//! the receiver's swap to empty), so each sender's Release swap heads a
//! release sequence that contains every later write to that inbox (C++
//! [intro.races], carried over to PTX by the proven mapping of Lustig et
//! al., ASPLOS 2019). The look reads some push's value; an Acquire look,
//! or the Acquire fence after a relaxed one, makes that push, and through
//! the release sequences every push before it, synchronise with the
//! receiver ([atomics.order], [atomics.fences]: a load that reads a value
//! of a release sequence and is, or is sequenced before, an acquire).
//! Only the receiver empties its inbox, so the chain the look
//! saw is still there when the swap takes it; if the swap returns a newer
//! top, pushed after the look, a second Acquire fence does the same for
//! the value the swap read. Every slot the receiver then finds through the
//! links, however late it reads a link, had its header and payload written
//! before.

#[cfg(feature = "views")]
use crate::datatype::SIGNATURE_BIT;
use crate::datatype::{TypedBuffer, ID_BYTE};
use crate::error::{saturating_u32, Error};
use crate::layout::{BLOCKING_RECORDS, FLAG_FORCE_STREAMING};
use crate::polling::{Call, WaitFor};
use crate::records::SendMode;
use crate::records::CONTEXT_SHIFT;
use crate::records::{kind_of, kind_sequence, order_of};
use crate::records::{Core, HeaderAt, Known};
use crate::records::{
    MessageKind, Outcome, RankHeader, RecordState, RequestRecord, SlotState, SlotWord, LINK_NONE,
    LINK_PENDING,
};
use crate::shim::{self, Backoff, Ordering};
use crate::slot_return::{defer_free, give_back, SlotReturn};
use crate::status::Status;
use crate::status::ANY_SOURCE;
use crate::status::ANY_TAG;
use crate::status::TAG_UB;
use crate::trace;
use core::cell::Cell;

use crate::records::{load_private_row, mine, rec, store_private_row, PrivateRow, SlotAt, SlotRow};

fn load(w: &Core, id: u32, word: SlotWord) -> u32 {
    // Relaxed: every use below is ordered by an Acquire operation named there.
    w.slot_word(id, word).load(Ordering::Relaxed)
}

/// [`load`] of a slot header located once ([`Core::slot_header`]): for
/// the loads of one batch.
fn load_at(at: SlotAt<'_>, word: SlotWord) -> u32 {
    // Relaxed: as in `load`.
    at.word(word).load(Ordering::Relaxed)
}

fn store(w: &Core, id: u32, word: SlotWord, v: u32) {
    // Relaxed: published by a later Release operation named at the call.
    w.slot_word(id, word).store(v, Ordering::Relaxed)
}

/// [`store`] to a slot header located once ([`Core::slot_header`]).
fn store_at(at: SlotAt<'_>, word: SlotWord, v: u32) {
    // Relaxed: as in `store`.
    at.word(word).store(v, Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Posting

/// What a new record does.
pub(crate) struct Post {
    pub(crate) state: RecordState,
    pub(crate) peer: i32,
    pub(crate) tag: i32,
    pub(crate) datatype: u32,
    pub(crate) buffer: *const u8,
    /// Bytes: a send's, at most `max_message_bytes` (checked before it is
    /// posted, `point_to_point::check_send`); a receive's capacity, any
    /// size. The record keeps 32 bits of it, saturated: a capacity of
    /// `u32::MAX` bytes or more takes every message whole, as the larger
    /// capacity would (MPI 4.1 §3.2.4: only a message longer than the
    /// buffer truncates).
    pub(crate) len: usize,
    /// Send: the mode; receive: the bounding send record + 1 (replace), or 0;
    /// claimed receive: the slot id + 1 (in `slot`).
    pub(crate) mode: u32,
    pub(crate) slot: u32,
    /// The context word of the message (`SlotHeader::context`): a send's,
    /// or the one a receive matches (0: the world's point-to-point).
    pub(crate) context: u32,
    /// A blocking call of at most 8 bytes whose data travels in the record
    /// itself (see [`INLINE_BYTES`]): the buffer is the record's inline
    /// area, which starts out holding `data` (a send's bytes).
    pub(crate) inline: bool,
    pub(crate) data: u64,
    /// A send's signature word (its slot header's; see [`Signature`]).
    pub(crate) signature: Signature,
}

/// The word a send puts in its slot header's `signature` field so that a
/// receive of a longer signature can take the message (MPI 4.1 §3.3.1;
/// [`Buffer::message_signature`](crate::datatype::Buffer::message_signature)):
/// kept in the send record's `wanted` word, which a send does not use. Only
/// with the `views` feature (without it nothing is hashed, and this is
/// empty: the records and the slots are written as before).
#[derive(Clone, Copy)]
pub(crate) struct Signature(#[cfg(feature = "views")] u32);

impl Signature {
    /// No hash: every receive, and every send of a buffer without one.
    #[cfg(feature = "views")]
    pub(crate) const NONE: Signature = Signature(0);
    /// No hash (nothing is hashed without the feature).
    #[cfg(not(feature = "views"))]
    pub(crate) const NONE: Signature = Signature();

    /// A send's word, `word` from its buffer's `message_signature`.
    #[cfg(feature = "views")]
    #[inline(always)]
    pub(crate) fn of(word: u32) -> Signature {
        Signature(word)
    }
    /// Nothing without the feature.
    #[cfg(not(feature = "views"))]
    #[inline(always)]
    pub(crate) fn of(_: u32) -> Signature {
        Signature()
    }

    /// The word.
    #[cfg(feature = "views")]
    #[inline(always)]
    pub(crate) fn get(self) -> u32 {
        self.0
    }
    /// 0 without the feature.
    #[cfg(not(feature = "views"))]
    #[inline(always)]
    pub(crate) fn get(self) -> u32 {
        0
    }
}

/// The most bytes a blocking call carries in its record instead of a
/// buffer of the caller: the record's `slot` and `offset` words (8-aligned),
/// unused by such a call until its send has copied the bytes out (`claim`
/// copies before it stores `slot`) or until its receive copies them in
/// (`start_receive` reads `slot` before its copy). A value on the caller's
/// stack whose address reaches a record would have to live in local
/// memory; carried by value it stays in registers.
pub(crate) const INLINE_BYTES: usize = 8;

/// Address of record `i`'s inline area.
#[inline(always)]
pub(crate) fn inline_area(w: &Core, i: u32) -> *mut u8 {
    // SAFETY: inside this rank's record `i`.
    unsafe { (w.record(i) as *mut u8).add(core::mem::offset_of!(RequestRecord, slot)) }
}

/// Bit of a record's `mode`: its `buffer` is a [`TypedBuffer`] whose packed
/// form is the message (see [`typed_move`]). Only with the `views` feature:
/// without it no view makes a typed record, and the engine never calls the
/// walker (a kernel's register count includes every function it can call).
/// Below the context word ([`CONTEXT_SHIFT`]); the modes themselves (a
/// `SendMode` code, a record index + 1) stay far below it.
pub(crate) const TYPED_MODE: u32 = 1 << 15;
const _: () = assert!(TYPED_MODE < 1 << CONTEXT_SHIFT);

/// Moves packed bytes `at..at + n` of record `i`'s typed buffer (at address
/// `typed`): packs them to `other` (a send), or unpacks them from `other` (a
/// receive). A walk that fails (the encoding changed under the view) marks
/// the record `Outcome::Intern`. Out of line and cold, so that the engine's
/// contiguous paths keep their registers; scalar arguments (an aggregate
/// passed to a call goes through local memory on nvptx).
#[inline(never)]
#[cold]
#[allow(clippy::too_many_arguments)]
fn typed_move(base: u64, rank: u32, i: u32, typed: u64, pack: bool, at: u32, other: u64, n: u32) {
    let w = Core {
        base: base as *mut u8,
        rank,
    };
    // SAFETY: a record with TYPED_MODE holds the address of the
    // `TypedBuffer` of a view borrowed until the record is collected (a
    // blocking call's frame, or a request's scope); the caller names `n`
    // bytes at `other` inside a slot payload, or a rendezvous sender's
    // buffer, that it may read or write.
    let ok = unsafe {
        let t = &*(typed as *const TypedBuffer);
        crate::typemap::move_typed(t, pack, at as u64, other as *mut u8, n as u64)
    };
    if !ok {
        rec!(&w, i, outcome = Outcome::Intern as u32);
    }
}

/// Copies `n` bytes from `src` to `dst` for record `i`: plain bytes, or
/// (TYPED_MODE) a pack (`pack`: `src` is the typed buffer, from packed
/// byte `at`) or an unpack (`dst` is the typed buffer).
///
/// # Safety
/// As for `shim::copy_bytes`, of the packed side; the typed side as in
/// [`typed_move`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn move_bytes(
    w: &Core,
    i: u32,
    typed: bool,
    pack: bool,
    at: u32,
    dst: *mut u8,
    src: *const u8,
    n: u32,
) {
    if cfg!(feature = "views") && typed {
        if pack {
            typed_move(w.base as u64, w.rank, i, src as u64, true, at, dst as u64, n);
        } else {
            typed_move(w.base as u64, w.rank, i, dst as u64, false, at, src as u64, n);
        }
    } else {
        // SAFETY: forwarded from the caller (the plain buffer's bytes start
        // at its address; `at` is already added by the caller).
        unsafe { shim::copy_bytes(dst, src, n as usize) }
    }
}

/// Takes a free record of request scope `scope` (at least 1), fills it
/// from `p` and returns its index and whether it was tried.
///
/// A request posted while the active list is empty (no other request of
/// this rank in flight, so none that MPI 3.5 orders before it) is tried
/// at once with the words held here, as a lone blocking call is
/// (`run_words`): an eager send or a receive whose message has arrived
/// completes without entering the list, which saves the four accesses of
/// the list's ends that appending it and taking it out again cost, and the
/// pass of [`progress`] that would load its words back. The try is the
/// post's round of progress (the caller runs none after it). Anything else
/// (a request posted behind others, one that did not complete, any while
/// the world traces: the trace's events come from the passes) is appended
/// to the active list, in posting order. `untraced`: the world is known
/// not to trace (`World::known`), else the config is read.
#[inline]
pub(crate) fn post(
    w: &Core,
    records: &Cell<u32>,
    scope: u32,
    p: &Post,
    known: Known,
) -> Result<(u32, Posted), Error> {
    let i = take_record(w, records)?;
    let buffer = fill(w, i, scope, p);
    let tail = if known.list_empty {
        0
    } else {
        mine!(w, active_tail)
    };
    let mode = p.mode | (p.context << CONTEXT_SHIFT);
    let tried = tail == 0 && may_try_alone(p.state, mode) && (known.untraced || !trace::on(w));
    if tried {
        let (base, rank) = (w.base as u64, w.rank);
        let step = if p.state.is_send() {
            send_alone(
                base,
                rank,
                i,
                p.peer,
                p.tag,
                p.datatype,
                saturating_u32(p.len),
                buffer,
                mode,
                p.signature.get(),
            )
        } else {
            receive_alone(
                base,
                rank,
                i,
                p.peer,
                p.tag,
                p.datatype,
                saturating_u32(p.len),
                buffer,
                mode,
            )
        };
        if matches!(step, Step::Complete) {
            // A lone try leaves a completed record's state alone (its
            // blocking call returns); a request's wait or test reads it
            // unless its handle knows (`Posted::Complete`).
            rec!(w, i, state = RecordState::Complete as u32);
            return Ok((i, Posted::Complete));
        }
    }
    append(w, i, tail);
    Ok((i, if tried { Posted::Tried } else { Posted::Queued }))
}

/// What a request's [`post`] did besides filling its record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Posted {
    /// Its try completed it: it is not in the active list, its record's
    /// state says complete.
    Complete,
    /// Its try made what progress it could; it waits in the active list.
    Tried,
    /// It waits in the active list, untried: a round of progress is due.
    Queued,
}

/// Whether a call in state `state` with mode word `mode` may try once
/// alone, before its record enters the active list (`run_words`, [`post`]):
/// a send's claim, or a receive not bounded by a send (`MODE_MASK`: a
/// send-receive's receive waits for its send's copy, which a try would
/// leave matched but unstarted).
#[inline(always)]
fn may_try_alone(state: RecordState, mode: u32) -> bool {
    match state {
        RecordState::SendClaim => true,
        RecordState::RecvMatch => mode & MODE_MASK == 0,
        _ => false,
    }
}

/// [`post`] in blocking record `i` (below [`BLOCKING_RECORDS`]): a
/// send-receive's two halves.
#[inline]
pub(crate) fn post_blocking(w: &Core, i: BlockingRecord, p: &Post) {
    let _ = fill(w, i as u32, 0, p);
    append(w, i as u32, mine!(w, active_tail));
}

/// The records kept for blocking calls. A blocking record is in use only
/// inside the call that filled it: a blocking call, or a send-receive's
/// wait for its two, collects or cancels them before it returns, and none
/// runs inside another (a wait progresses requests, it makes no call). So
/// each call takes its records by name, and the rank's mask of records in
/// use (`records_used`, the request scopes' records) has no bits for them:
/// a blocking call reads and writes no mask.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum BlockingRecord {
    /// A blocking call's, or a send-receive's send.
    First = 0,
    /// A send-receive's receive.
    Second = 1,
}

const _: () = assert!(BLOCKING_RECORDS == 2);

/// A free record of the request scopes, marked used in `records` (the
/// rank's mask of them, `World::records`).
#[inline(always)]
fn take_record(w: &Core, records: &Cell<u32>) -> Result<u32, Error> {
    let used = records.get();
    let (first, end) = (BLOCKING_RECORDS, w.records_per_rank());
    let free = !used & (mask_below(end) & !mask_below(first));
    if free == 0 {
        return Err(Error::RequestLimit { limit: end - first });
    }
    let i = free.trailing_zeros();
    records.set(used | (1 << i));
    Ok(i)
}

/// Marks request record `i` free in `records` (collected or cancelled; a
/// blocking record, below [`BLOCKING_RECORDS`], has no bit). Its words
/// stay as they were: nothing reads a record that is not in use, and its
/// next post fills it whole.
#[inline(always)]
pub(crate) fn release(records: &Cell<u32>, i: u32) {
    records.set(records.get() & !(1u32 << i) & !mask_below(BLOCKING_RECORDS));
}

/// Fills record `i`, of scope `scope` (0: a [`BlockingRecord`]), from `p`;
/// returns its `buffer` word (the inline area's address for an inline call).
#[inline(always)]
fn fill(w: &Core, i: u32, scope: u32, p: &Post) -> u64 {
    // One address for the record and its inline area: plain writes, the
    // layout is read once.
    let record = w.record(i);
    // SAFETY: inside this rank's record `i`.
    let inline = unsafe { (record as *mut u8).add(core::mem::offset_of!(RequestRecord, slot)) };
    let buffer = if p.inline { inline as u64 } else { p.buffer as u64 };
    let r = RequestRecord {
        state: p.state as u32,
        next: 0,
        peer: p.peer,
        tag: p.tag,
        datatype: p.datatype,
        len: saturating_u32(p.len),
        buffer,
        slot: p.slot,
        offset: 0,
        wanted: p.signature.get(),
        mode: p.mode | (p.context << CONTEXT_SHIFT),
        scope,
        outcome: Outcome::Success as u32,
        // A send's status is its own envelope; a receive's is set at its match.
        message_bytes: saturating_u32(p.len),
        message_datatype: p.datatype,
    };
    // SAFETY: record `i` is this rank's, and no other call uses it: a
    // request's is marked used, a blocking record is its call's.
    unsafe { record.write(r) };
    if p.inline {
        // SAFETY: the inline area is 8 bytes of this rank's record, 8-aligned.
        unsafe { (inline as *mut u64).write(p.data) };
    }
    buffer
}

/// Appends record `i` to the active list, whose tail is `tail` (the
/// record + 1; 0: empty).
#[inline(always)]
fn append(w: &Core, i: u32, tail: u32) {
    if tail == 0 {
        mine!(w, active_head = i + 1);
    } else {
        rec!(w, tail - 1, next = i + 1);
    }
    mine!(w, active_tail = i + 1);
    trace::posted(w);
}

/// The bits of a record's `mode` word below its context word: the mode and
/// [`TYPED_MODE`].
const MODE_BITS: u32 = (1 << CONTEXT_SHIFT) - 1;
/// The mode alone (a `SendMode` code, or a receive's bounding send record
/// + 1).
const MODE_MASK: u32 = MODE_BITS & !TYPED_MODE;

const fn mask_below(n: u32) -> u32 {
    if n >= 32 {
        u32::MAX
    } else {
        (1 << n) - 1
    }
}

/// Whether record `i` finished.
#[inline]
pub(crate) fn is_complete(w: &Core, i: u32) -> bool {
    rec!(w, i, state) == RecordState::Complete as u32
}

/// Bytes a finished inline receive `i` wrote into its inline area: the
/// message's (MPI 3.2.4: nothing beyond them changes), the buffer's
/// capacity on truncation, none on a type mismatch.
#[inline(always)]
pub(crate) fn inline_received(w: &Core, i: u32) -> usize {
    if rec!(w, i, outcome) == Outcome::TypeMismatch as u32 {
        0
    } else {
        rec!(w, i, message_bytes).min(rec!(w, i, len)) as usize
    }
}

/// The outcome of finished record `i` (a request's record goes back to
/// its scope with [`release`]).
#[inline]
pub(crate) fn collect(w: &Core, i: u32) -> Result<Status, Error> {
    // SAFETY: this rank's record.
    let r = unsafe { w.record(i).read() };
    let status = Status {
        source: r.peer,
        tag: r.tag,
        bytes: r.message_bytes,
        datatype: r.message_datatype,
    };
    if r.outcome != Outcome::Success as u32 {
        core::hint::cold_path();
    }
    match r.outcome {
        o if o == Outcome::TypeMismatch as u32 => Err(Error::TypeMismatch {
            status,
            expected: r.datatype,
        }),
        o if o == Outcome::Truncate as u32 => Err(Error::Truncate {
            status,
            capacity_bytes: r.len,
        }),
        // Set only by a typed walk (the `views` feature); one more arm here
        // costs the ring example 10 registers.
        o if cfg!(feature = "views") && o == Outcome::Intern as u32 => Err(Error::Intern),
        _ => Ok(status),
    }
}

/// Takes record `i` out of the active list (if it is there): a wait given
/// up on an abort or a timeout (a request's record then goes back to its
/// scope with [`release`]). A slot the record holds stays held (the world
/// is being torn down).
#[inline]
pub(crate) fn cancel(w: &Core, i: u32) {
    let mut prev = 0u32;
    let mut r = mine!(w, active_head);
    while r != 0 {
        let next = rec!(w, r - 1, next);
        if r == i + 1 {
            if prev == 0 {
                mine!(w, active_head = next);
            } else {
                rec!(w, prev - 1, next = next);
            }
            if next == 0 {
                mine!(w, active_tail = prev);
            }
            break;
        }
        prev = r;
        r = next;
    }
}

/// What a wait on record `i` records.
#[inline]
pub(crate) fn what(w: &Core, i: u32) -> WaitFor {
    let state = RecordState::from_code(rec!(w, i, state));
    WaitFor {
        operation: if state.is_some_and(RecordState::is_send) {
            Call::Send
        } else {
            Call::Receive
        },
        peer: rec!(w, i, peer),
        tag: rec!(w, i, tag),
    }
}

/// Bytes of a send record's buffer that no rank reads any more.
fn send_copied(w: &Core, i: u32) -> u32 {
    match RecordState::from_code(rec!(w, i, state)) {
        Some(RecordState::SendStream) => rec!(w, i, offset),
        Some(RecordState::SendClaim) | Some(RecordState::SendAwaitDone) => 0,
        _ => u32::MAX,
    }
}

// ---------------------------------------------------------------------------
// Progress

/// Advances every record of this rank once, in posting order, after taking
/// the inbox. True when anything changed that another rank can see or that
/// the rank's own waits look at.
#[inline(always)]
pub(crate) fn progress(core: Core) -> bool {
    progress_words(core.base as u64, core.rank)
}

/// [`progress`] with the `Core` in scalar arguments: an aggregate passed by
/// value (or a reference to one) to a call that is not inlined goes through
/// local memory on nvptx.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn progress_words(base: u64, rank: u32) -> bool {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    progress_in::<false>(&core).0
}

/// A blocking call: posts `p` in the first record kept for blocking
/// calls ([`BlockingRecord`]), waits until it is complete (progressing the
/// engine, with the bounds of `polling::wait_for`) and returns its index:
/// the record keeps its fields (the status, the inline data) until this
/// rank's next blocking call. All of it in [`run_words`], whose scalar
/// arguments keep the caller's values out of local memory; the errors are
/// built here, on a cold path, from the few words it returns.
#[inline(always)]
pub(crate) fn run_blocking(core: Core, p: &Post, known: Known) -> Result<u32, Error> {
    run(core, p, known).result(p)
}

/// How a blocking call ended: [`run_words`]'s result.
#[derive(Clone, Copy)]
pub(crate) struct Finished(u64);

/// [`run_blocking`] up to the wait's end, for callers that look at the
/// record before the outcome becomes a `Result`.
#[inline(always)]
pub(crate) fn run(core: Core, p: &Post, known: Known) -> Finished {
    // Few argument words: each is a register of the call. The inline data
    // and the buffer address share one (a record has one or the other),
    // the state, the inline flag and what is known another.
    Finished(run_words(
        core.base as u64,
        core.rank,
        p.state as u32
            | (p.inline as u32) << 4
            | (known.spinning as u32) << 5
            | (known.list_empty as u32) << 6
            | (known.untraced as u32) << 7
            | (known.unchecked as u32) << 8,
        // The context rides in the mode's high bits, as in the record.
        p.mode | (p.context << CONTEXT_SHIFT),
        p.peer,
        p.tag,
        p.datatype,
        if p.inline { p.data } else { p.buffer as u64 },
        saturating_u32(p.len),
        p.slot,
        #[cfg(feature = "views")]
        p.signature.get(),
    ))
}

impl Finished {
    /// A send's outcome: sends finish complete, aborted or timed out. A
    /// send has no outcome but success, and its blocking record needs no
    /// freeing: nothing to collect.
    #[inline(always)]
    pub(crate) fn sent(self, p: &Post) -> Result<(), Error> {
        let low = self.0 as u32;
        let kind = (self.0 >> 32) as u32;
        if kind == Failure::None as u32 {
            return Ok(());
        }
        core::hint::cold_path();
        Err(if kind == Failure::Aborted as u32 {
            Error::Aborted { by_rank: low }
        } else if let Some(e) = argument_error(kind, low, p) {
            e
        } else {
            Error::Timeout {
                operation: Call::Send as u32,
                peer: p.peer,
                tag: p.tag,
            }
        })
    }

    /// The finished record (to [`collect`]), or the call's error.
    #[inline(always)]
    pub(crate) fn result(self, p: &Post) -> Result<u32, Error> {
        let low = self.0 as u32;
        let kind = (self.0 >> 32) as u32;
        if kind == Failure::None as u32 {
            return Ok(low);
        }
        core::hint::cold_path();
        Err(if kind == Failure::Aborted as u32 {
            Error::Aborted { by_rank: low }
        } else if let Some(e) = argument_error(kind, low, p) {
            e
        } else {
            Error::Timeout {
                operation: if p.state.is_send() {
                    Call::Send
                } else {
                    Call::Receive
                } as u32,
                peer: p.peer,
                tag: p.tag,
            }
        })
    }
}

/// How a blocking call failed: the high half of [`run_words`]'s result.
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Complete; the low half is the record.
    None = 0,
    /// Another rank aborted the world (the low half is that rank).
    Aborted = 1,
    /// The wait timed out.
    Timeout = 2,
    /// The peer is not a rank of the world (the low half: the world's size).
    InvalidRank = 3,
    /// A send's message is over the world's limit (the low half: the limit).
    TooLarge = 4,
    /// The tag is not a tag of a message.
    InvalidTag = 5,
}

/// The error of a failure of the call's arguments.
#[inline(always)]
fn argument_error(kind: u32, low: u32, p: &Post) -> Option<Error> {
    if kind == Failure::InvalidRank as u32 {
        Some(Error::InvalidRank {
            rank: p.peer,
            size: low as i32,
        })
    } else if kind == Failure::InvalidTag as u32 {
        Some(Error::InvalidTag { tag: p.tag })
    } else if kind == Failure::TooLarge as u32 {
        Some(Error::BufferTooLarge {
            bytes: saturating_u32(p.len),
            limit: low,
        })
    } else {
        None
    }
}

/// The failure code of a send's or receive's arguments, judged in the
/// order the wrappers had them: the tag (`ANY_TAG` for a receive only),
/// the world rank (`ANY_SOURCE` for a receive only; a negative rank wraps
/// above the size) and a send's size.
#[inline(always)]
fn argument_failure(w: &Core, send: bool, peer: i32, tag: i32, len: u32) -> Option<u64> {
    if !((0..=TAG_UB).contains(&tag) || !send && tag == ANY_TAG) {
        return Some(failed(Failure::InvalidTag, 0));
    }
    // The world's size as `World::ranks` reads it: the launch's threads,
    // no read of the layout.
    let c = crate::shim::coordinates();
    let ranks = c.block_dim * c.grid_dim;
    if !((peer as u32) < ranks || !send && peer == ANY_SOURCE) {
        return Some(failed(Failure::InvalidRank, ranks));
    }
    if send {
        let limit = w.max_message_bytes();
        if len > limit {
            return Some(failed(Failure::TooLarge, limit));
        }
    }
    None
}

const fn failed(kind: Failure, low: u32) -> u64 {
    ((kind as u64) << 32) | low as u64
}

/// The [`failed`] code of a blocking wait's error (an abort, or else its
/// timeout: the only errors a wait returns).
#[inline(always)]
fn failure_code(e: Error) -> u64 {
    match e {
        Error::Aborted { by_rank } => failed(Failure::Aborted, by_rank),
        _ => failed(Failure::Timeout, 0),
    }
}

/// [`run_blocking`] in scalar arguments (`kind`: the record state, the
/// inline flag at bit 4, [`Known`]'s `spinning` at bit 5, `list_empty`
/// at bit 6, `untraced` at bit 7 and `unchecked` at bit 8; `word`: the
/// inline data or the buffer's address): the record index, or a
/// [`Failure`] in the high half.
///
/// Scalar arguments, because an aggregate (or a reference to one) reaching
/// a call that is not inlined goes through local memory on nvptx. Called, or
/// with the feature `inline-engine` inlined into each blocking call site: a
/// call keeps the caller's live values in the ABI's callee-saved registers
/// across it, which cost `pi_p2p` 8 registers (72 with the call, 64
/// inlined, sm_90), while inlining copies the engine into every call site
/// (docs/gpu.md).
#[cfg_attr(feature = "inline-engine", inline(always))]
#[cfg_attr(not(feature = "inline-engine"), inline(never))]
#[allow(clippy::too_many_arguments)]
fn run_words(
    base: u64,
    rank: u32,
    kind: u32,
    mode: u32,
    peer: i32,
    tag: i32,
    datatype: u32,
    word: u64,
    len: u32,
    slot: u32,
    #[cfg(feature = "views")] signature: u32,
) -> u64 {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let w = &core;
    let state = RecordState::from_code(kind & 0xf).unwrap_or(RecordState::RecvMatch);
    // A send's or receive's checks of its tag, its world rank and a
    // send's size: here, not in the caller, whose check of a
    // loop-invariant peer kept its error's words live across the user's
    // loop (`ring` 126 -> 114 registers, docs/gpu.md). The caller took the
    // rank's spinning bit for this call (`World::known`), so a failed call
    // notes its progress as a completed one does: entering a blocking call
    // is progress for the emulator's livelock rule (`World::failed_poll`).
    if kind & 0x100 != 0 {
        if let Some(code) = argument_failure(&core, state.is_send(), peer, tag, len) {
            core::hint::cold_path();
            if kind & 0x20 != 0 {
                w.note_progress();
            }
            return code;
        }
    }
    let inline = kind & 0x10 != 0;
    let spinning = kind & 0x20 != 0;
    let p = Post {
        state,
        peer,
        tag,
        datatype,
        buffer: if inline {
            core::ptr::null()
        } else {
            word as *const u8
        },
        len: len as usize,
        mode: mode & MODE_BITS,
        slot,
        context: mode >> CONTEXT_SHIFT,
        inline,
        data: if inline { word } else { 0 },
        #[cfg(feature = "views")]
        signature: Signature::of(signature),
        #[cfg(not(feature = "views"))]
        signature: Signature::NONE,
    };
    let i = BlockingRecord::First as u32;
    let buffer = fill(w, i, 0, &p);
    let tail = if kind & 0x40 != 0 {
        0
    } else {
        mine!(w, active_tail)
    };
    let what = WaitFor {
        operation: if state.is_send() {
            Call::Send
        } else {
            Call::Receive
        },
        peer,
        tag,
    };
    // A call alone (no request of this rank in flight: the active list is
    // empty) first tries once with its own words, held here, instead of
    // loading them back from its record: a send claims its slot, a receive
    // looks for its message without a walk of the list. An eager message
    // or a direct rendezvous that completes so never enters the wait, nor
    // the list; anything else (no slot, no message yet, a synchronous
    // send, a stream) is appended then and goes on in the wait's passes:
    // appending it and taking it out again would cost a lone call that
    // completes at once four accesses of its own header. Only once:
    // inside the wait's poll these words would be the poll's captures, in
    // local memory. Not while tracing: the trace's events come from those
    // passes. A receive bounded by a send (`MODE_MASK`) is never alone;
    // excluding it means `start_receive` never waits (`allowed`), so a
    // matched message is never left unstarted. The try is a call with
    // scalar arguments, one per direction: inlined here beside the
    // passes' own copies of the claim and the search, it costs the
    // kernels registers and stack.
    let direct = tail == 0 && (kind & 0x80 != 0 || !trace::on(w)) && may_try_alone(state, mode);
    let mut polled = false;
    if !direct {
        append(w, i, tail);
    } else {
        let step = if state.is_send() {
            send_alone(
                base,
                rank,
                i,
                peer,
                tag,
                datatype,
                len,
                buffer,
                mode,
                p.signature.get(),
            )
        } else {
            receive_alone(base, rank, i, peer, tag, datatype, len, buffer, mode)
        };
        if matches!(step, Step::Complete) {
            // What the wait would have done: this rank progressed.
            if spinning {
                w.note_progress();
            }
            return i as u64;
        }
        // The try was the wait's first poll: the wait gives way before its
        // next (what follows a move waits for the peer, a synchronous
        // send's slot or a rendezvous's copy, which cannot have come yet).
        polled = true;
        // A lone receive whose try matched nothing waits for its message
        // in a loop of its own (`receive_waiting`), with its words held in
        // registers there; a try that moved started a stream, which the
        // passes go on with.
        if !state.is_send() && matches!(step, Step::Idle) {
            match receive_waiting(base, rank, i, spinning, peer, tag, datatype, len, buffer, mode) {
                WAITED_COMPLETE => return i as u64,
                // A poll started a stream: the passes go on at once.
                WAITED_STARTED => polled = false,
                code => {
                    cancel(w, i);
                    return code;
                }
            }
        }
    }
    let r = crate::polling::wait_core_polled(w, what, polled, spinning, |b| {
        // A pass that moved nothing completed nothing.
        let (moved, done) = progress_in::<true>(w);
        if moved {
            b.progressed();
        }
        done.then_some(Ok(()))
    });
    match r {
        Ok(()) => i as u64,
        Err(e) => {
            cancel(w, i);
            failure_code(e)
        }
    }
}

/// One pass of [`progress`]. `BLOCKING`: the pass of a blocking call's
/// wait (`run_words`), where the eager receive path is inlined (with
/// `inline-engine` the whole engine sits in the kernel, and a call there
/// keeps the kernel's values in callee-saved registers); elsewhere
/// (`progress_words`, already a call) it stays a call, which keeps the
/// request kernels' register count down.
/// Returns whether the pass moved anything and, for `BLOCKING`, whether
/// it completed the blocking call's record (only this rank's passes
/// complete its records), which the wait then need not read back.
#[inline(always)]
fn progress_in<const BLOCKING: bool>(w: &Core) -> (bool, bool) {
    let mut prev = 0u32;
    let mut done = false;
    // A blocking call's wait whose list is empty waits for its record
    // alone, which is not in the list (`run_words`).
    let head = mine!(w, active_head);
    let alone = BLOCKING && head == 0;
    let mut r = if alone {
        BlockingRecord::First as u32 + 1
    } else {
        head
    };
    // A blocking call alone in the active list takes the inbox only if its
    // receive found nothing among what was taken before, and then looks
    // at the inbox in the first batch of its search (`find_in`): a receive
    // whose message is already queued waits for memory once less. Every
    // other pass takes the inbox first, so that all its receives see the
    // same messages and match them in the order they were posted.
    // The first record's `next`, loaded once for `lazy` and the walk.
    let mut next_of_r = if alone {
        0
    } else if BLOCKING && r != 0 {
        rec!(w, r - 1, next)
    } else {
        u32::MAX
    };
    let lazy = BLOCKING && r != 0 && next_of_r == 0;
    let mut moved = !lazy && drain(w);
    let mut send_blocked = false;
    while r != 0 {
        let i = r - 1;
        let next = if next_of_r != u32::MAX {
            next_of_r
        } else {
            rec!(w, i, next)
        };
        next_of_r = u32::MAX;
        let state = rec!(w, i, state);
        let step = if state == RecordState::SendClaim as u32 {
            if send_blocked {
                Step::Idle
            } else {
                let s = claim_record(w, i);
                send_blocked = matches!(s, Step::Idle);
                s
            }
        } else if state == RecordState::RecvMatch as u32 || state == RecordState::RecvClaimed as u32 {
            // One call site of `start_receive` (it is inlined once): a
            // receive that matches now starts at once, from the slot and
            // the mode the match found and loaded (stored in the record
            // only if it cannot start).
            let matched = state == RecordState::RecvMatch as u32;
            let mode = rec!(w, i, mode);
            let mut drained = false;
            let id1 = if matched {
                let (peer, tag) = (rec!(w, i, peer), rec!(w, i, tag));
                let c = find_taking::<false>(w, peer, tag, mode >> CONTEXT_SHIFT, lazy, &mut drained);
                moved |= drained;
                if c.id1 != 0 {
                    unlink(w, &c);
                    trace::matched(w, c.id1 - 1);
                }
                c.id1
            } else {
                rec!(w, i, slot)
            };
            if id1 == 0 {
                Step::Idle
            } else {
                let s = if BLOCKING {
                    // A lone blocking call's pass searches as its try does
                    // (`receive_alone`), and returns the slot the same way.
                    let back = if lazy && matched {
                        SlotReturn::after(drained)
                    } else {
                        SlotReturn::Later(None)
                    };
                    start_receive_words(w, i, id1 - 1, mode, back)
                } else {
                    start_receive_outlined(w.base as u64, w.rank, i, id1 - 1, mode)
                };
                if matched && matches!(s, Step::Idle) {
                    // Claimed, not started (its bounding send has not
                    // copied enough out yet): the next pass starts it.
                    rec!(w, i, slot = id1);
                    rec!(w, i, state = RecordState::RecvClaimed as u32);
                    Step::Moved
                } else {
                    s
                }
            }
        } else if state == RecordState::RecvStream as u32 {
            receive_chunk(w, i)
        } else {
            send_step(w, i, state)
        };
        moved |= !matches!(step, Step::Idle);
        // A step that changed nothing left the record as it was, not
        // complete (a complete record leaves the list in the pass that
        // completed it); one that completed it says so.
        let complete = match step {
            Step::Idle => false,
            Step::Complete => true,
            Step::Moved => rec!(w, i, state) == RecordState::Complete as u32,
        };
        done |= BLOCKING && complete && i == BlockingRecord::First as u32;
        if complete && !alone {
            trace::completed(w, i);
            // Out of the active list; the record waits for its collection.
            if prev == 0 {
                mine!(w, active_head = next);
            } else {
                rec!(w, prev - 1, next = next);
            }
            if next == 0 {
                mine!(w, active_tail = prev);
            }
        } else {
            prev = r;
        }
        r = next;
    }
    (moved, done)
}

/// [`find_in`]; with `look`, if that found nothing and the inbox held
/// anything, the drain that takes it and matches as it walks
/// ([`drain_matching`], setting `moved`). One call site of `find_in`,
/// which is inlined.
#[inline(always)]
fn find_taking<const FULL: bool>(
    w: &Core,
    peer: i32,
    tag: i32,
    context: u32,
    look: bool,
    moved: &mut bool,
) -> Candidate {
    let (c, seen) = find_in::<FULL>(w, peer, tag, context, look);
    if c.id1 != 0 || seen == LINK_NONE {
        return c;
    }
    // Nothing taken before matches: the message, if any, is among those
    // the inbox holds, which the drain's walk matches as it takes them.
    let (_, c) = drain_matching::<true, FULL>(w, Look::Relaxed(seen), peer, tag, context);
    *moved = true;
    c
}

#[derive(Clone, Copy)]
enum Step {
    /// Nothing changed.
    Idle,
    /// Something changed.
    Moved,
    /// The record completed (something changed).
    Complete,
}

/// Takes this rank's inbox into its unexpected queue; true if it held
/// anything.
fn drain(w: &Core) -> bool {
    drain_matching::<false, false>(w, Look::Here, 0, 0, 0).0
}

/// What a receiver knows of its inbox before it takes it
/// ([`drain_matching`]).
#[derive(Clone, Copy)]
enum Look {
    /// Nothing yet: the take looks first (relaxed).
    Here,
    /// A relaxed load saw this top ([`LINK_NONE`]: empty).
    Relaxed(u32),
    /// An Acquire load saw this top, not [`LINK_NONE`].
    Acquired(u32),
}

/// [`drain`]; with `MATCH`, also the message among those it takes that a
/// receive from `source` (a world rank, or `ANY_SOURCE`) with `tag` on
/// context word `context` gets, when none already in the queue matches
/// (`Candidate::NONE` if none): the oldest that matches, which is the one
/// [`find`] would give after the drain (one sender's messages are pushed,
/// and so walked newest first, in the order it sent them). The tag and
/// context of each message from `source` are loaded with its link, in one
/// batch, and nothing but the link of any other's: the walk's chain of
/// loads is as long as without the match. With `FULL` the match
/// comes with its whole envelope ([`Candidate`]): the newest message's is
/// in its batch, any other's is loaded after the walk.
///
/// The take: after the look that saw `seen` on top, an Acquire fence
/// (none when the look acquired), and the swap (relaxed) in one batch with
/// the loads of `seen`'s slot that the walk starts with: when nothing was
/// pushed since the look (the swap returns `seen`), the chain's first node
/// costs no round trip of its own.
#[inline(always)]
fn drain_matching<const MATCH: bool, const FULL: bool>(
    w: &Core,
    look: Look,
    source: i32,
    tag: i32,
    context: u32,
) -> (bool, Candidate) {
    let me = w.rank;
    let inbox = w.inbox(me);
    let mut best = Candidate::NONE;
    let (seen, acquired) = match look {
        // Relaxed: a look before the swap, so that an idle pass writes
        // nothing and acquires nothing; the fence below makes it the
        // take's acquire.
        Look::Here => (inbox.load(Ordering::Relaxed), false),
        Look::Relaxed(top) => (top, false),
        Look::Acquired(top) => (top, true),
    };
    if seen == LINK_NONE {
        return (false, best);
    }
    let (first, slots) = if MATCH && source != ANY_SOURCE {
        (w.slot_id(source as u32, 0), w.slots_per_rank())
    } else {
        (0, u32::MAX)
    };
    // The words the walk loads of node `node` when `top` is the chain's
    // newest: its link, and with `MATCH` the envelope of a message this
    // receive may take (from its source, any for `ANY_SOURCE`). The
    // others' envelopes are not loaded: a long chain from many senders
    // (pi's rank 0 walks thousands) loads a link per message and nothing
    // else. With `FULL`, the newest message's whole envelope: an inbox that
    // held one message costs one batch; a longer chain's batches stay
    // short, and its match, if not the newest, loads its envelope after
    // the walk.
    let node_words = |at: SlotAt<'_>, node: u32, top: u32| -> (u32, Arrived) {
        let id = node - 1;
        let candidate = MATCH && id.wrapping_sub(first) < slots;
        if MATCH {
            (
                load_at(at, SlotWord::Link),
                if FULL && node == top {
                    Arrived::load(at, id)
                } else if candidate {
                    Arrived::load_with::<false>(at, id)
                } else {
                    Arrived::NONE
                },
            )
        } else {
            (load_at(at, SlotWord::Link), Arrived::NONE)
        }
    };
    if !acquired {
        // Acquire: the look read `seen`, pushed by a sender's Release swap
        // in `publish`; this fence makes that read synchronise with the
        // swap and, through its release sequence, with every push before
        // it (module docs): every slot of the chain from `seen` on is
        // visible below.
        shim::fence(Ordering::Acquire);
    }
    // The swap last: the loads before it are what the walk waits for
    // first, and nothing waits for its old value until they are back.
    // Relaxed: ordered by the acquire before it (the look's, or the fence
    // above) and, when it reads a newer push, the fence after it.
    let at_seen = w.slot_header(seen - 1);
    let (words_of_seen, top) = shim::independent(|| {
        if acquired {
            // A waiting receive is often answered by a send (a ping-pong,
            // a ring): the acquire emptied L1, and the send's first read,
            // its row, would be a round trip to L2 on that critical path.
            // Fetched with this batch, it is an L1 hit there.
            shim::prefetch_private(send_row(w) as *const u8, core::mem::size_of::<PrivateRow>());
        }
        (
            node_words(at_seen, seen, seen),
            inbox.swap(LINK_NONE, Ordering::Relaxed),
        )
    });
    // The header and words of the node the walk takes next, loaded in
    // the iteration before it (one live set, as if loaded where they are
    // used).
    let (mut at, mut words) = if top == seen {
        (at_seen, words_of_seen)
    } else {
        // Acquire: pairs with the Release swaps of the pushes after the
        // look, the last of which the swap read.
        shim::fence(Ordering::Acquire);
        let at = w.slot_header(top - 1);
        (at, shim::independent(|| node_words(at, top, top)))
    };
    // The best match's older neighbour is the next node walked.
    let mut best_is_last = false;
    let mut newer = LINK_NONE;
    let mut node = top;
    let arrived = SlotState::Arrived.word(me);
    while node != LINK_NONE {
        let id = node - 1;
        let candidate = MATCH && id.wrapping_sub(first) < slots;
        let (mut older, envelope) = words;
        let found = Candidate {
            id1: node,
            link: newer,
            back: LINK_NONE,
            arrived: envelope,
        };
        if MATCH {
            if best_is_last {
                best.back = node;
            }
            best_is_last = candidate && found.matches(tag, context);
            if best_is_last {
                best = found;
            }
        }
        if older == LINK_PENDING {
            // The sender swapped this slot in and is about to store its link.
            let mut b = Backoff::new();
            while older == LINK_PENDING {
                b.snooze();
                older = load_at(at, SlotWord::Link);
            }
        }
        if MATCH && best_is_last && node == top && older == LINK_NONE {
            // The inbox held this one message, and the receive takes it:
            // it never enters the unexpected queue, which is not touched
            // (`unlink` has nothing to undo), nor are its link and state:
            // the receive's start writes the state next (only this rank
            // acts on the slot meanwhile, and no scan for `ARRIVED` runs
            // before it).
            best.link = LINK_PENDING;
            return (true, best);
        }
        // The node's place in the queue (its newer and older neighbours;
        // the oldest's older is the queue's old tail, stored after the
        // walk) and its state: stored in the batch of the next node's
        // loads, after them, so that the walk's chain of dependent loads
        // does not wait for its stores. Their address is computed again
        // there from the node's id, which is live anyway (`newer`): the
        // node's link is the one value held for them.
        let link = newer;
        let queue_node = |node: u32| {
            let at = w.slot_header(node - 1);
            store_at(at, SlotWord::Link, link);
            if older != LINK_NONE {
                store_at(at, SlotWord::Back, older);
            }
            // Relaxed: only this rank acts on ARRIVED (the sender waits for
            // FREE, CTS or DONE).
            w.slot_state(node - 1).store(arrived, Ordering::Relaxed);
        };
        newer = node;
        node = older;
        // A node pushed since the look (the swap returned a newer top)
        // reaches `seen`, whose words the walk loads again: held from the
        // swap's batch, they would be live all the walk for that rare case.
        if node != LINK_NONE {
            at = w.slot_header(node - 1);
            words = shim::independent(|| {
                let next = node_words(at, node, top);
                queue_node(newer);
                next
            });
        } else {
            queue_node(newer);
        }
    }
    if FULL && best.id1 != 0 && best.id1 != top {
        let id = best.id1 - 1;
        best.arrived = Arrived::load(w.slot_header(id), id);
    }
    let tail = mine!(w, queue_tail);
    if best_is_last {
        best.back = tail;
    }
    if newer != LINK_NONE {
        store(w, newer - 1, SlotWord::Back, tail);
        if tail == LINK_NONE {
            mine!(w, queue_head = newer);
        } else {
            store(w, tail - 1, SlotWord::Link, newer);
        }
        mine!(w, queue_tail = top);
    }
    (true, best)
}

/// The bytes of a payload that [`Arrived::load`] loads with the envelope:
/// an eager message of at most this many is received from registers.
pub(crate) const HEAD_BYTES: usize = 8;

/// Slots whose states one batch of [`find`] loads together
/// ([`Core::state_batch`]'s eight).
const SCAN: u32 = 8;

/// What matching reads of an arrived slot: the words it matches on and
/// its links in the unexpected queue, loaded in one batch with its
/// sequence number ([`Candidate::load`]), so that [`unlink`] waits for
/// nothing. A search with `FULL` loads the whole envelope and first bytes
/// in that batch too (`arrived`), so that the receive that takes the
/// message starts without another round trip; without it, only
/// `arrived`'s tag and context are set. `FULL` costs registers: the
/// batch's loads are in flight together, each in its own register; the
/// searches inlined into a kernel (a blocking call's passes with
/// `inline-engine`) go without.
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    /// Slot id + 1; 0: no message.
    pub(crate) id1: u32,
    /// Its neighbours in the unexpected queue, as slot id + 1: the next
    /// (newer) and the one before; `link` is [`LINK_PENDING`] for a message
    /// that was never queued (see [`unlink`]).
    link: u32,
    back: u32,
    arrived: Arrived,
}

impl Candidate {
    const NONE: Candidate = Candidate {
        id1: 0,
        link: 0,
        back: 0,
        arrived: Arrived::NONE,
    };

    /// Loads arrived slot `id`'s words in one batch, with its sequence
    /// number.
    #[inline(always)]
    fn load<const FULL: bool>(w: &Core, id: u32) -> (Candidate, u32) {
        Candidate::load_at::<FULL>(w.slot_header(id), id)
    }

    /// [`Candidate::load`] of the slot whose header is `at`.
    #[inline(always)]
    fn load_at<const FULL: bool>(at: SlotAt<'_>, id: u32) -> (Candidate, u32) {
        let ([link, back, sequence], arrived) = shim::independent(|| {
            if FULL {
                // Three vector loads: what a receive takes of the header.
                let (arrived, sequence, [link, back]) = Arrived::load_header::<true>(at, id);
                ([link, back, sequence], arrived)
            } else {
                (
                    [
                        load_at(at, SlotWord::Link),
                        load_at(at, SlotWord::Back),
                        order_of(load_at(at, SlotWord::KindSequence)),
                    ],
                    Arrived::load_with::<false>(at, id),
                )
            }
        });
        let c = Candidate {
            id1: id + 1,
            link,
            back,
            arrived,
        };
        (c, sequence)
    }

    /// Whether a receive with `tag` on context word `context` takes it.
    #[inline(always)]
    fn matches(&self, tag: i32, context: u32) -> bool {
        (tag == ANY_TAG || self.arrived.tag as i32 == tag) && self.arrived.context == context
    }

    /// Its envelope (loaded with `FULL`), the source a rank of the
    /// communicator of its context.
    #[inline(always)]
    pub(crate) fn status(&self, w: &Core) -> Status {
        self.arrived.status(w)
    }
}

/// What a receive reads of its matched slot to start: the envelope, the
/// kind and the header's `head` word (all of an eager message of at most
/// [`HEAD_BYTES`]; a direct message's source address), in one batch.
#[derive(Clone, Copy)]
pub(crate) struct Arrived {
    id: u32,
    context: u32,
    tag: u32,
    bytes: u32,
    datatype: u32,
    kind: u32,
    head: u64,
    /// The sender's signature word ([`Signature`]).
    #[cfg(feature = "views")]
    signature: u32,
}

impl Arrived {
    const NONE: Arrived = Arrived {
        id: 0,
        context: 0,
        tag: 0,
        bytes: 0,
        datatype: 0,
        kind: 0,
        head: 0,
        #[cfg(feature = "views")]
        signature: 0,
    };

    /// [`Arrived::load`] with `FULL`; without, only the tag and the
    /// context (in one batch).
    #[inline(always)]
    fn load_with<const FULL: bool>(at: SlotAt<'_>, id: u32) -> Arrived {
        if FULL {
            return Arrived::load(at, id);
        }
        let [tag, context] =
            shim::independent(|| [load_at(at, SlotWord::Tag), load_at(at, SlotWord::Context)]);
        Arrived {
            id,
            tag,
            context,
            ..Arrived::NONE
        }
    }

    /// Loads the words of claimed slot `id` (its header `at`) in one
    /// batch. The slot arrived for this rank (`drain` made its header and
    /// payload visible) and its sender touches neither until it is
    /// returned or told CTS, so its header is stable whatever the kind.
    /// With the `views` feature the batch also holds the signature word,
    /// which only a receive of another datatype id reads: no round trip
    /// more.
    #[inline(always)]
    fn load(at: SlotAt<'_>, id: u32) -> Arrived {
        Arrived::load_rows(at, id).0
    }

    /// [`Arrived::load`], with the message's sequence number (shifted as
    /// in its header's word: compared with `wrapping_sub`, as a whole).
    #[inline(always)]
    fn load_rows(at: SlotAt<'_>, id: u32) -> (Arrived, u32) {
        let (a, sequence, _) = Arrived::load_header::<false>(at, id);
        (a, sequence)
    }

    /// The header's envelope and message rows as two vector loads, and
    /// with `LINKS` its links row: with the message's sequence number
    /// (shifted, as in [`Arrived::load_rows`]) and, with `LINKS`, its
    /// `link` and `back` (else zeros).
    #[inline(always)]
    fn load_header<const LINKS: bool>(at: SlotAt<'_>, id: u32) -> (Arrived, u32, [u32; 2]) {
        shim::independent(|| {
            let [link, back, _, _] = if LINKS {
                shim::load_relaxed_x4(at.row(SlotRow::Links))
            } else {
                [0; 4]
            };
            let [tag, context, datatype, bytes] = shim::load_relaxed_x4(at.row(SlotRow::Envelope));
            let [kind_sequence, signature, head_low, head_high] =
                shim::load_relaxed_x4(at.row(SlotRow::Message));
            #[cfg(not(feature = "views"))]
            let _ = signature;
            let a = Arrived {
                id,
                context,
                tag,
                bytes,
                datatype,
                kind: kind_of(kind_sequence),
                head: u64::from(head_low) | u64::from(head_high) << 32,
                #[cfg(feature = "views")]
                signature,
            };
            (a, order_of(kind_sequence), [link, back])
        })
    }

    /// Its envelope, the source a rank of the communicator of its context.
    #[inline(always)]
    fn status(&self, w: &Core) -> Status {
        self.status_from(w, self.id / w.slots_per_rank())
    }

    /// [`Arrived::status`] of a message known to come from world rank
    /// `sender` (no read of the layout to find the slot's owner).
    #[inline(always)]
    fn status_from(&self, w: &Core, sender: u32) -> Status {
        Status {
            source: w.comm_rank_of(self.context, sender),
            tag: self.tag as i32,
            bytes: self.bytes,
            datatype: self.datatype,
        }
    }
}

/// The arrived message a receive from `source` (a world rank) with `tag`
/// on context word `context` gets now (its [`Candidate`]; `id1` 0: none;
/// only what `drain` has taken from the inbox counts). Messages of other
/// contexts are passed over (MPI 3.5: a context separates communicators).
/// `look`: also look at the inbox, in the first batch; the second result
/// is what the look loaded ([`LINK_NONE`]: empty, or no look), the top of
/// its chain.
///
/// A receive from one source loads the states of the sender's slots
/// [`SCAN`] at a time, in one batch (`shim::independent`: in flight
/// together on the GPU), and then each arrived one's words in one batch
/// ([`Candidate::load`], with `FULL` its envelope too): two round trips to
/// L2 with up to [`SCAN`] slots per rank, where a load per word would be a
/// chain of one per slot.
///
/// Why a message found here is the one MPI says comes next even if the
/// inbox holds more: the messages of one sender that `drain` took are a
/// prefix of the ones it pushed (module docs), so any still in the inbox
/// come after them; and a receive from any source may take any matching
/// message (MPI 3.5 orders only one sender's messages).
#[inline]
fn find_in<const FULL: bool>(w: &Core, source: i32, tag: i32, context: u32, look: bool) -> (Candidate, u32) {
    if source == ANY_SOURCE {
        let inbox = w.inbox(w.rank);
        // Relaxed: a look, as in `drain`.
        let looked = if look {
            inbox.load(Ordering::Relaxed)
        } else {
            LINK_NONE
        };
        let mut node = mine!(w, queue_head);
        while node != LINK_NONE {
            let (c, _) = Candidate::load::<FULL>(w, node - 1);
            if c.matches(tag, context) {
                return (c, looked);
            }
            node = c.link;
        }
        return (Candidate::NONE, looked);
    }
    let arrived = SlotState::Arrived.word(w.rank);
    // The scan's addresses, from one read of the layout.
    let at = w.places();
    let inbox = at.inbox(w.rank);
    let slots = at.slots_per_rank();
    let base = at.slot_id(source as u32, 0);
    let states_at = at.states(source as u32);
    let mut best = Candidate::NONE;
    let mut best_sequence = 0u32;
    let mut looked = LINK_NONE;
    let mut first = 0;
    while first < slots {
        // Relaxed (the batch's loads): ARRIVED for this rank was written by
        // this rank (`drain`), after its take's Acquire fence made the
        // header visible. Past the last slot the batch repeats the last slot,
        // whose bit is masked off. The first batch also looks at the
        // inbox (relaxed, a look as in `drain`).
        //
        // With `FULL` and `look` (a receive's try, not a probe), the first
        // batch also loads the header of the sender's first slot, the one a
        // sender whose slots come back between its messages always takes,
        // before the states say what it holds (a guess): every word of it
        // is an atomic (the payload is not read), and it is used only if
        // its state, loaded in the same batch, is ARRIVED for this rank.
        // That value is this rank's own latest write to the state
        // (`drain`, after the Acquire that made the sender's header stores
        // visible, all before this batch), so the loads read those stores
        // or later ones; and the sender writes the header again only after
        // this rank's Release store of FREE, which comes after this batch.
        // The guessed header is then exactly what `Candidate::load` would
        // load after the batch, one round trip later.
        let n = (slots - first).min(SCAN);
        let (seen, states, guessed) = shim::independent(|| {
            let seen = if look {
                inbox.load(Ordering::Relaxed)
            } else {
                LINK_NONE
            };
            // SAFETY: a span of `source`'s outbox, `first + n <= slots`.
            let states = unsafe { Core::state_batch(states_at, first, n, slots.is_multiple_of(4)) };
            let guessed = (FULL && look && first == 0 && shim::guess_headers())
                .then(|| Candidate::load_at::<true>(at.slot(base), base));
            (seen, states, guessed)
        });
        if seen != LINK_NONE {
            looked = seen;
        }
        let mut candidates = 0u32;
        for (k, &state) in states.iter().enumerate() {
            candidates |= u32::from(state == arrived) << k;
        }
        candidates &= (1u32 << n) - 1;
        // The guess is the first batch's bit 0, the first candidate: taken
        // here, so that its words are dead before the loop.
        if let Some((g, sequence)) = guessed {
            if candidates & 1 != 0 {
                candidates &= !1;
                if g.matches(tag, context) {
                    best = g;
                    best_sequence = sequence;
                }
            }
        }
        while candidates != 0 {
            let id = base + first + candidates.trailing_zeros();
            candidates &= candidates - 1;
            let (c, sequence) = Candidate::load::<FULL>(w, id);
            if !c.matches(tag, context) {
                continue;
            }
            if best.id1 == 0 || (sequence.wrapping_sub(best_sequence) as i32) < 0 {
                best = c;
                best_sequence = sequence;
            }
        }
        first += SCAN;
    }
    (best, looked)
}

/// [`find_in`] without the look at the inbox: the message a receive or
/// probe gets now among those taken from the inbox, with its envelope.
#[inline]
pub(crate) fn find(w: &Core, source: i32, tag: i32, context: u32) -> Candidate {
    find_in::<true>(w, source, tag, context, false).0
}

/// Takes arrived slot `c` out of the unexpected queue (its links as
/// [`find`] loaded them: only this rank writes them while it is queued).
#[inline]
pub(crate) fn unlink(w: &Core, c: &Candidate) {
    let (next, back) = (c.link, c.back);
    if next == LINK_PENDING {
        // Taken as the inbox's only message, never queued (`drain_matching`).
        return;
    }
    if back == LINK_NONE {
        mine!(w, queue_head = next);
    } else {
        store(w, back - 1, SlotWord::Link, next);
    }
    if next == LINK_NONE {
        mine!(w, queue_tail = back);
    } else {
        store(w, next - 1, SlotWord::Back, back);
    }
}

/// Marks unlinked slot `id` claimed by a matched probe (for the reports).
#[inline]
pub(crate) fn mark_claimed(w: &Core, id: u32) {
    // Relaxed: only this rank acts on the slot until it answers.
    w.slot_state(id)
        .store(SlotState::Claimed.word(w.rank), Ordering::Relaxed);
}

// ---------------------------------------------------------------------------
// Receives

/// The bytes receive record `i` may write so far (a send-receive-replace
/// writes only what its send has copied out of the shared buffer).
fn allowed(w: &Core, mode: u32) -> u32 {
    match mode & MODE_MASK {
        0 => u32::MAX,
        send => send_copied(w, send - 1),
    }
}

/// [`start_receive`] as a call, with scalar arguments (see
/// [`progress_words`]).
#[inline(never)]
fn start_receive_outlined(base: u64, rank: u32, i: u32, id: u32, mode: u32) -> Step {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    start_receive_words(&core, i, id, mode, SlotReturn::Later(None))
}

/// The first try of a lone send ([`run_words`], a request's [`post`]),
/// record `i` (not in the active list) with the words given here: [`claim`]. A call with scalar
/// arguments, apart from [`receive_alone`]: the two in one function
/// raised `pi_p2p` from 64 to 72 registers.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn send_alone(
    base: u64,
    rank: u32,
    i: u32,
    peer: i32,
    tag: i32,
    datatype: u32,
    len: u32,
    buffer: u64,
    mode: u32,
    signature: u32,
) -> Step {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    // Stored with the envelope only with views.
    #[cfg(not(feature = "views"))]
    let _ = signature;
    let words = Held {
        peer,
        tag,
        datatype,
        len,
        buffer,
        mode,
        #[cfg(feature = "views")]
        wanted: signature,
    };
    claim(&core, i, Some(&words))
}

/// The first try of a lone receive ([`run_words`], a request's [`post`]),
/// record `i` (not in the active list) with the words given here: the search of a pass over the
/// list (taking the inbox if the first search found nothing), and on a
/// match its start; [`Step::Idle`] when nothing matched.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn receive_alone(
    base: u64,
    rank: u32,
    i: u32,
    peer: i32,
    tag: i32,
    datatype: u32,
    len: u32,
    buffer: u64,
    mode: u32,
) -> Step {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let w = &core;
    let mut drained = false;
    let c = find_taking::<true>(w, peer, tag, mode >> CONTEXT_SHIFT, true, &mut drained);
    if c.id1 == 0 {
        return Step::Idle;
    }
    unlink(w, &c);
    // No `trace::matched`: a lone try runs only while the rank does not
    // trace (`run_words`).
    start_receive(
        w,
        i,
        &c.arrived,
        len,
        datatype,
        buffer,
        mode,
        Some((peer, tag)),
        SlotReturn::after(drained),
    )
}

/// [`receive_waiting`]: the receive completed.
const WAITED_COMPLETE: u64 = failed(Failure::None, 0);
/// [`receive_waiting`]: a poll started a stream, which the wait's passes go
/// on with (the record is not complete).
const WAITED_STARTED: u64 = failed(Failure::None, 1);

/// The wait of a lone blocking receive, record `i` filled with these
/// words, whose try ([`receive_alone`]) matched nothing: it polls as it
/// tried ([`receive_polled`]), a look at the inbox and nothing of the
/// record, whose words stay in registers here. A poll loads the inbox's
/// top and the deferred count; a message that arrives is matched with its
/// whole envelope and first bytes in the batch of its link, and the
/// receive starts from them, where a pass of the list would load the
/// envelope again and the record's words one by one after the inbox's
/// acquire emptied L1. A loop of its own, out of line, so that the words
/// are not live across the passes of `run_words`'s wait, which a stream
/// needs (inlined there, they cost the kernels registers and spills);
/// inlined with `inline-engine`, like the rest of the engine there (as a
/// call it kept the caller's values in callee-saved registers: `pi_p2p`
/// 92 registers without its budget, 80 inlined).
/// Returns [`WAITED_COMPLETE`], [`WAITED_STARTED`] or a failure code of
/// `run_words` (the caller cancels the record).
#[cfg_attr(feature = "inline-engine", inline(always))]
#[cfg_attr(not(feature = "inline-engine"), inline(never))]
#[allow(clippy::too_many_arguments)]
fn receive_waiting(
    base: u64,
    rank: u32,
    i: u32,
    spinning: bool,
    peer: i32,
    tag: i32,
    datatype: u32,
    len: u32,
    buffer: u64,
    mode: u32,
) -> u64 {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let what = WaitFor {
        operation: Call::Receive,
        peer,
        tag,
    };
    // The try was the wait's first poll (`polled`).
    let r = crate::polling::wait_core_polled(&core, what, true, spinning, |b| {
        let polled = receive_polled(base, rank, i, peer, tag, datatype, len, buffer, mode);
        // Any poll but an empty look wrote (a stream's start: its
        // clear-to-send).
        if !matches!(polled, Polled::Nothing) {
            b.progressed();
        }
        match polled {
            Polled::Nothing | Polled::Taken => None,
            Polled::Complete => Some(Ok(true)),
            Polled::Started => Some(Ok(false)),
        }
    });
    match r {
        Ok(true) => WAITED_COMPLETE,
        Ok(false) => WAITED_STARTED,
        Err(e) => failure_code(e),
    }
}

/// What a poll of a lone receive did ([`receive_polled`]).
enum Polled {
    /// Nothing: its inbox was empty.
    Nothing,
    /// It took messages from its inbox and matched none.
    Taken,
    /// It completed.
    Complete,
    /// It goes on in the wait's passes: the poll started a stream.
    Started,
}

/// A poll of the wait of a lone receive, record `i` with the words its
/// call filled it with, after its first try ([`receive_alone`]) matched
/// nothing: a look at the inbox in one batch with the rank's deferred
/// count, and if it holds anything, the drain that matches as it takes
/// ([`drain_matching`]), and the start of the receive that matched.
/// Nothing else is searched: the try searched what had arrived before, and
/// since then only these polls took messages from the inbox, each matching
/// all it took, so no message that this receive takes can have been queued
/// without it. The record's words are the call's, held in registers
/// across the wait: until a poll matches, nothing writes them (a receive
/// stores its status at its start), and a poll that starts a stream ends
/// the polls (`Polled::Started`).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn receive_polled(
    base: u64,
    rank: u32,
    i: u32,
    peer: i32,
    tag: i32,
    datatype: u32,
    len: u32,
    buffer: u64,
    mode: u32,
) -> Polled {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let w = &core;
    let inbox = w.inbox(rank);
    let (deferred, seen) = shim::independent(|| {
        (
            // Read after the look's acquire, it would come from L2.
            mine!(w, free_count),
            // Acquire, unlike the other looks: every poll of a waiting
            // receive is on its critical path only when it finds the
            // message, and then this acquire is the take's (`drain_matching`
            // needs no fence of its own); an idle poll pays it and no
            // write. Pairs with the senders' Release swaps in `publish`
            // (the module docs' release sequence). Last in its batch: the
            // loads after an acquire wait for it.
            inbox.load(Ordering::Acquire),
        )
    });
    if seen == LINK_NONE {
        return Polled::Nothing;
    }
    let (_, c) = drain_matching::<true, true>(w, Look::Acquired(seen), peer, tag, mode >> CONTEXT_SHIFT);
    if c.id1 == 0 {
        return Polled::Taken;
    }
    unlink(w, &c);
    match start_receive(
        w,
        i,
        &c.arrived,
        len,
        datatype,
        buffer,
        mode,
        Some((peer, tag)),
        SlotReturn::Later(Some(deferred)),
    ) {
        Step::Complete => Polled::Complete,
        _ => Polled::Started,
    }
}

/// [`start_receive`] of record `i`'s message in slot `id`, with the
/// record's `mode` word given and its other fields loaded from the record,
/// and the message's envelope from its slot.
#[inline(always)]
fn start_receive_words(w: &Core, i: u32, id: u32, mode: u32, back: SlotReturn) -> Step {
    let (datatype, len) = load_pair(w, i, PairAt::DatatypeLen);
    start_receive(
        w,
        i,
        &Arrived::load(w.slot_header(id), id),
        len,
        datatype,
        rec!(w, i, buffer),
        mode,
        None,
        back,
    )
}

/// Whether receive record `i`, of datatype id `expected`, takes message
/// `a` of another id because the message's type signature is a prefix of
/// the receive's (MPI 4.1 §3.3.1). Only a heterogeneous receive signature
/// can extend another, and only a typed receive (a view of a heterogeneous
/// type, contiguous or not) holds its encoding; any other receive keeps
/// the strict id check.
#[cfg(feature = "views")]
#[inline(always)]
fn receive_extends(mode: u32, buffer: u64, expected: u32, a: &Arrived) -> bool {
    expected & SIGNATURE_BIT != 0
        && mode & TYPED_MODE != 0
        && receive_extends_outlined(buffer, a.datatype, a.bytes, a.signature)
}

/// Without the `views` feature no receive is typed: ids match exactly.
#[cfg(not(feature = "views"))]
#[inline(always)]
fn receive_extends(_: u32, _: u64, _: u32, _: &Arrived) -> bool {
    false
}

/// [`receive_extends`]'s walk of the receive's signature: out of line and
/// cold (the slow path of a type mismatch), scalar arguments. The view's
/// `extends` compares the message's hash (its slot's `signature`) with
/// the hash of the receive's signature cut to `bytes`, or, for a message
/// of one primitive without a hash, checks the receive's first `bytes`
/// bytes exactly.
#[cfg(feature = "views")]
#[inline(never)]
#[cold]
fn receive_extends_outlined(typed: u64, datatype: u32, bytes: u32, signature: u32) -> bool {
    // SAFETY: a record with TYPED_MODE holds the address of the
    // `TypedBuffer` of a view borrowed until the record is collected, and
    // the view borrows its encoding's words for as long (see `typed_move`).
    let t = unsafe { &*(typed as *const TypedBuffer) };
    // A part of a view (a collective's piece) starts inside the packed
    // form: its prefix is not the type's; such receives match by id only.
    // SAFETY: as above: the encoding is alive and unwritten.
    t.skip == 0 && unsafe { crate::typemap::extends(t, datatype, bytes as u64, signature) }
}

/// Two adjacent words of a request record that the engine loads or
/// stores together ([`load_pair`], [`store_pair`]).
#[derive(Clone, Copy)]
enum PairAt {
    /// `peer`, then `tag`: a receive's status's source and tag.
    PeerTag,
    /// `datatype`, then `len`: what a receive takes.
    DatatypeLen,
    /// `message_bytes`, then `message_datatype`: the message's size and type.
    Message,
}

const _: () = {
    use core::mem::offset_of;
    // Records start 16-aligned (`Core::record`; asserted in records.rs).
    assert!(offset_of!(RequestRecord, peer).is_multiple_of(8));
    assert!(offset_of!(RequestRecord, tag) == offset_of!(RequestRecord, peer) + 4);
    assert!(offset_of!(RequestRecord, datatype).is_multiple_of(8));
    assert!(offset_of!(RequestRecord, len) == offset_of!(RequestRecord, datatype) + 4);
    assert!(offset_of!(RequestRecord, message_bytes).is_multiple_of(8));
    assert!(offset_of!(RequestRecord, message_datatype) == offset_of!(RequestRecord, message_bytes) + 4);
};

/// The pair of words `at` of this rank's record `i`, as one 8-byte word.
#[inline(always)]
fn pair_at(w: &Core, i: u32, at: PairAt) -> *mut u64 {
    let r = w.record(i);
    // SAFETY: record `i` is this rank's (`i < records_per_rank`); only
    // addresses are formed. Each pair is 8-aligned (its offset, asserted
    // above, and the record's start, `Core::record`).
    unsafe {
        match at {
            PairAt::PeerTag => core::ptr::addr_of_mut!((*r).peer).cast::<u64>(),
            PairAt::DatatypeLen => core::ptr::addr_of_mut!((*r).datatype).cast::<u64>(),
            PairAt::Message => core::ptr::addr_of_mut!((*r).message_bytes).cast::<u64>(),
        }
    }
}

/// The first word at the lower address: the low half on a little-endian
/// target.
#[inline(always)]
fn pair_word(v: u64) -> u64 {
    if cfg!(target_endian = "little") {
        v
    } else {
        v.rotate_left(32)
    }
}

/// Stores `first` and `second` into the pair of words `at` of this rank's
/// record `i`: one 8-byte store, not two.
#[inline(always)]
fn store_pair(w: &Core, i: u32, at: PairAt, first: u32, second: u32) {
    let p = pair_at(w, i, at);
    crate::records::private(p, true);
    // SAFETY: an 8-aligned pair of this rank's record; records are private
    // to their rank.
    unsafe { p.write(pair_word(u64::from(first) | u64::from(second) << 32)) }
}

/// The pair of words `at` of this rank's record `i` (first, second): one
/// 8-byte load, not two.
#[inline(always)]
fn load_pair(w: &Core, i: u32, at: PairAt) -> (u32, u32) {
    let p = pair_at(w, i, at);
    crate::records::private(p, false);
    // SAFETY: as in `store_pair`.
    let v = pair_word(unsafe { p.read() });
    (v as u32, (v >> 32) as u32)
}

/// Starts receiving, for record `i`, the message in slot `id` that it
/// claimed; `capacity`, `expected`, `buffer` and `mode` are the record's
/// `len`, `datatype`, `buffer` and `mode` words, passed in so that a
/// blocking receive gives them from registers ([`run_words`]); `lone`: a
/// lone try's ([`receive_alone`]) source and tag filters, as its record
/// holds them; its completion the record need not show; `back`: when an
/// eager message's slot goes back to its sender ([`SlotReturn`]).
/// [`Step::Complete`] when the record completed.
#[cfg_attr(feature = "inline-engine", inline(always))]
#[allow(clippy::too_many_arguments)]
fn start_receive(
    w: &Core,
    i: u32,
    a: &Arrived,
    capacity: u32,
    expected: u32,
    buffer: u64,
    mode: u32,
    lone: Option<(i32, i32)>,
    back: SlotReturn,
) -> Step {
    // A lone receive from one source matched only that rank's messages.
    let status = match lone {
        Some((source, _)) if source != ANY_SOURCE => a.status_from(w, source as u32),
        _ => a.status(w),
    };
    let (id, kind) = (a.id, a.kind);
    let (outcome, wanted) = if expected != ID_BYTE
        && expected != status.datatype
        && !receive_extends(mode, buffer, expected, a)
    {
        (Outcome::TypeMismatch, 0)
    } else if status.bytes > capacity {
        (Outcome::Truncate, capacity)
    } else {
        (Outcome::Success, status.bytes)
    };
    let first = if kind == MessageKind::Stream as u32 {
        load(w, id, SlotWord::Chunk).min(wanted)
    } else {
        wanted
    };
    if first > allowed(w, mode) {
        return Step::Idle;
    }
    // `fill` left the filters in the status's source and tag words, the
    // capacity and the expected datatype in its length and datatype words
    // and `Success` in the outcome, and nothing wrote them since (a record
    // starts one receive per fill): a message from the source and with the
    // tag named, of exactly the buffer's size and type, received whole,
    // changes none of them. (A pass does not hold the filters: it stores.)
    if lone != Some((status.source, status.tag)) {
        store_pair(w, i, PairAt::PeerTag, status.source as u32, status.tag as u32);
    }
    if (status.bytes, status.datatype) != (capacity, expected) {
        store_pair(w, i, PairAt::Message, status.bytes, status.datatype);
    }
    if outcome != Outcome::Success {
        rec!(w, i, outcome = outcome as u32);
    }
    let buf = buffer as *mut u8;
    let typed = cfg!(feature = "views") && mode & TYPED_MODE != 0;
    let me = w.rank;
    // Not on the eager path, which returns the slot later (`defer_free`).
    let state = || w.slot_state(id);
    if kind == MessageKind::Eager as u32 {
        if !typed && status.bytes as usize <= HEAD_BYTES {
            // SAFETY: the buffer holds `capacity >= wanted` bytes; the
            // message's bytes (at most `HEAD_BYTES`) are the first of
            // `head`, `wanted` of them taken.
            unsafe { shim::store_head_bytes(buf, a.head, wanted as usize) };
        } else {
            // SAFETY: the slot is ours until we free it (arrived for us, its
            // header and payload acquired in `drain`); `wanted <= bytes <=
            // slot_bytes` and the buffer holds `capacity >= wanted`.
            unsafe { move_bytes(w, i, typed, false, 0, buf, w.slot_payload(id), wanted) };
        }
        give_back(w, id, back);
    } else if kind == MessageKind::Direct as u32 {
        // A direct message's `head` is the address of the sender's
        // buffer (written before its push).
        let src = a.head as *const u8;
        if cfg!(feature = "views") && typed {
            // SAFETY: as below; the unpack reads `wanted` bytes at `src`.
            unsafe { move_bytes(w, i, true, false, 0, buf, src, wanted) };
        } else {
            // SAFETY: the sender keeps its buffer alive and unwritten until it
            // sees DONE; `wanted` is within both buffers.
            unsafe { shim::copy_wide(buf, src, wanted as usize) };
        }
        // Release pairs with the sender's Acquire wait for DONE.
        state().store(SlotState::Done.word(me), Ordering::Release);
    } else {
        // SAFETY: first chunk of `chunk >= first` bytes in the payload.
        unsafe { move_bytes(w, i, typed, false, 0, buf, w.slot_payload(id), first) };
        if first < wanted {
            // The slot again: a blocking receive did not store it at its match.
            rec!(w, i, slot = id + 1);
            rec!(w, i, offset = first);
            rec!(w, i, wanted = wanted);
            rec!(w, i, state = RecordState::RecvStream as u32);
            // Release pairs with the sender's Acquire wait for CTS.
            state().store(SlotState::ClearToSend.word(me), Ordering::Release);
            return Step::Moved;
        }
        // Release pairs with the sender's Acquire wait for DONE.
        state().store(SlotState::Done.word(me), Ordering::Release);
    }
    if lone.is_none() {
        // A lone try's record is not in the active list: nothing looks at
        // its state (the blocking call returns on `Step::Complete`; a
        // request's `post` sets it for the wait or test that collects it).
        rec!(w, i, state = RecordState::Complete as u32);
    }
    Step::Complete
}

/// Takes the next chunk of a streamed message, if it is there.
fn receive_chunk(w: &Core, i: u32) -> Step {
    let id = rec!(w, i, slot) - 1;
    let me = w.rank;
    let state = w.slot_state(id);
    // Acquire pairs with the sender's Release store of CHUNK.
    if state.load(Ordering::Acquire) != SlotState::Chunk.word(me) {
        return Step::Idle;
    }
    let (offset, wanted) = (rec!(w, i, offset), rec!(w, i, wanted));
    let n = load(w, id, SlotWord::Chunk).min(wanted - offset);
    if offset + n > allowed(w, rec!(w, i, mode)) {
        return Step::Idle;
    }
    let buf = rec!(w, i, buffer) as *mut u8;
    let typed = cfg!(feature = "views") && rec!(w, i, mode) & TYPED_MODE != 0;
    let dst = if typed {
        buf
    } else {
        buf.wrapping_add(offset as usize)
    };
    // SAFETY: a CHUNK slot holds `chunk >= n` bytes; `offset + n <= wanted <= len`.
    unsafe { move_bytes(w, i, typed, false, offset, dst, w.slot_payload(id), n) };
    let offset = offset + n;
    rec!(w, i, offset = offset);
    if offset < wanted {
        // Release pairs with the sender's Acquire wait for CTS.
        state.store(SlotState::ClearToSend.word(me), Ordering::Release);
    } else {
        // Release pairs with the sender's Acquire wait for DONE.
        state.store(SlotState::Done.word(me), Ordering::Release);
        rec!(w, i, state = RecordState::Complete as u32);
    }
    Step::Moved
}

/// Discards claimed slot `id` (a dropped `Message`): received as zero bytes.
#[inline]
pub(crate) fn discard(w: &Core, id: u32) {
    let kind = kind_of(load(w, id, SlotWord::KindSequence));
    let state = w.slot_state(id);
    if kind == MessageKind::Eager as u32 {
        defer_free(w, id, None);
    } else {
        // Release pairs with the sender's Acquire wait for DONE.
        state.store(SlotState::Done.word(w.rank), Ordering::Release);
    }
}

// ---------------------------------------------------------------------------
// Sends

/// A free slot of this rank's outbox, with what `also` loads in one batch
/// with the slot mask (loads independent of the slot, which the send needs
/// once it has one); `None` when every slot is in use.
///
/// The rank's `used_slots` mask has bit `s` set once slot `s` was used and
/// not yet seen free again, so a zeroed world starts with every slot known
/// free: the first `slots_per_rank` sends pay no fence.
fn take_slot<R>(w: &Core, also: impl FnOnce() -> R) -> Option<(u32, u32, R)> {
    // One read of the layout for the mask's words and the slot count.
    let places = w.places();
    let header = places.header();
    let per_rank = places.slots_per_rank();
    let row = send_row_of(&header);
    // SAFETY: the send's row is 16-byte aligned (asserted in records.rs).
    let ([low, high, sequence, _], loaded) = shim::independent(|| (unsafe { load_private_row(row) }, also()));
    let used = u64::from(low) | u64::from(high) << 32;
    let all = if per_rank >= 64 {
        u64::MAX
    } else {
        (1u64 << per_rank) - 1
    };
    let mut free = !used & all;
    if free == 0 {
        let held = mine!(header, held_slots);
        let states_at = places.states(w.rank);
        // The states of [`SCAN`] slots in each batch (a load per slot
        // would be a chain of round trips to L2 every `slots_per_rank`
        // sends). Relaxed: a FREE seen here is acquired by the fence
        // below. Past the last slot the batch repeats it.
        let mut first = 0;
        while first < per_rank {
            let n = (per_rank - first).min(SCAN);
            // SAFETY: a span of this rank's outbox, `first + n <= per_rank`.
            let states = unsafe { Core::state_batch(states_at, first, n, per_rank.is_multiple_of(4)) };
            for (k, &state) in states.iter().enumerate() {
                let s = first + k as u32;
                if (k as u32) < n && held & (1u64 << s) == 0 && state == SlotState::Free as u32 {
                    free |= 1u64 << s;
                }
            }
            first += SCAN;
        }
        if free == 0 {
            return None;
        }
        // Acquire pairs with the receivers' Release stores of FREE: their
        // last reads of these slots happen before our writes to them. One
        // fence for every slot the scan found.
        shim::fence(Ordering::Acquire);
    }
    let s = free.trailing_zeros();
    let taken = (all & !free) | (1u64 << s);
    // A slot taken is a message sent: its sequence number is used.
    let next = [taken as u32, (taken >> 32) as u32, sequence.wrapping_add(1), 0];
    // SAFETY: as the load above.
    unsafe { store_private_row(row, next) };
    Some((s, sequence, loaded))
}

/// The send's row of this rank's header: the slot mask and the next
/// sequence number, one vector access each way ([`take_slot`]).
#[inline(always)]
fn send_row(w: &Core) -> *mut PrivateRow {
    send_row_of(&w.places().header())
}

#[inline(always)]
fn send_row_of(header: &HeaderAt) -> *mut PrivateRow {
    // SAFETY: only an address is formed, inside this rank's header.
    unsafe { core::ptr::addr_of_mut!((*header.rank_header()).used_slots) }.cast::<PrivateRow>()
}

/// Gives own slot `s` back (its last reader is known done).
fn return_slot(w: &Core, s: u32) {
    mine!(w, held_slots = mine!(w, held_slots) & !(1u64 << s));
    mine!(w, used_slots = mine!(w, used_slots) & !(1u64 << s));
}

/// A send's words as its record holds them, held by the call that posted
/// it ([`run_words`]); `wanted` is the signature (`views` only).
#[derive(Clone, Copy)]
struct Held {
    peer: i32,
    tag: i32,
    datatype: u32,
    len: u32,
    buffer: u64,
    mode: u32,
    #[cfg(feature = "views")]
    wanted: u32,
}

/// Word `$f` of a send: from `$held` if the call holds its words, else
/// loaded from record `$i`, where the word is used.
macro_rules! send_word {
    ($held:expr, $w:expr, $i:expr, $f:ident) => {
        match $held {
            Some(h) => h.$f,
            None => rec!($w, $i, $f),
        }
    };
}

/// Claims a slot for send record `i` and publishes its message.
#[inline(never)]
fn claim_record(w: &Core, i: u32) -> Step {
    claim(w, i, None)
}

/// [`claim_record`], with the send's words from `held` if given (a
/// constant at each call site: inlined, the choice folds away).
/// [`Step::Complete`] when the record completed.
#[inline(always)]
fn claim(w: &Core, i: u32, held: Option<&Held>) -> Step {
    // A lone send (`held`) of at most `HEAD_BYTES`, not a typed view's,
    // loads its bytes in the batch of the slot mask and the sequence
    // number, and stores them as its header's `head` (which the receiver
    // loads with the envelope, `Arrived::head`), instead of copying them
    // after.
    let small = held
        .filter(|h| !(cfg!(feature = "views") && h.mode & TYPED_MODE != 0) && h.len as usize <= HEAD_BYTES);
    let Some((s, sequence, head)) = take_slot(w, || match small {
        // SAFETY: a send's buffer holds its `len` bytes.
        Some(h) => unsafe { shim::load_head_bytes(h.buffer as *const u8, h.len as usize) },
        None => 0,
    }) else {
        return Step::Idle;
    };
    let me = w.rank;
    // The slot's id, its payload and the payload's size from one read of
    // the layout ([`Places`]); the header's and the inbox's addresses
    // from another before the header's stores (located here, they would
    // stay in registers through the copy: spills in the kernels at their
    // register cap).
    let places = w.places();
    let id = places.slot_id(me, s);
    let slot_bytes = places.slot_bytes();
    let payload = places.slot(id).payload();
    let dest = send_word!(held, w, i, peer) as u32;
    let len = send_word!(held, w, i, len);
    let data = send_word!(held, w, i, buffer) as *const u8;
    let mode_word = send_word!(held, w, i, mode);
    let typed = cfg!(feature = "views") && mode_word & TYPED_MODE != 0;
    let mode = mode_word & MODE_MASK;
    let kind = if len <= slot_bytes {
        MessageKind::Eager
    } else if !typed
        && mode != SendMode::Replace as u32
        && w.flags() & FLAG_FORCE_STREAMING == 0
        && shim::is_shared_address(data)
    {
        MessageKind::Direct
    } else {
        MessageKind::Stream
    };
    // The header's `head` word, where a receive (and the relay) takes a
    // direct message's address and the bytes of one of at most
    // `HEAD_BYTES` from (`Arrived::head`); none for an empty message.
    // With views, a typed receive unpacks from the payload, which holds
    // the bytes too.
    let (first, head) = match kind {
        MessageKind::Direct => (0, data as u64),
        _ => {
            let n = len.min(slot_bytes);
            if small.is_some() {
                if cfg!(feature = "views") {
                    // SAFETY: the slot is ours and free; its payload holds
                    // >= 64 bytes, 16-byte aligned.
                    unsafe { shim::store_payload_u64(payload, head) };
                }
                (n, head)
            } else {
                // SAFETY: the slot is ours and free; `n <= slot_bytes` and
                // the buffer holds `len >= n` bytes.
                unsafe { move_bytes(w, i, typed, true, 0, payload, data, n) };
                let head = if n != 0 && n as usize <= HEAD_BYTES {
                    // SAFETY: as above; the payload's first word, just
                    // written (packed, for a typed view) by this rank.
                    unsafe { shim::load_payload_u64(payload) }
                } else {
                    0
                };
                (n, head)
            }
        }
    };
    // The header's address and the inbox's before the first store.
    let (at, inbox) = {
        let places = w.places();
        (places.slot(id), places.inbox(dest))
    };
    // Two vector stores (the rows only the sender writes). The signature
    // with every message, hashed or not: no old hash survives the slot's
    // reuse. A stream's first chunk's size in the fourth row.
    shim::store_relaxed_x4(
        at.row(SlotRow::Envelope),
        [
            send_word!(held, w, i, tag) as u32,
            mode_word >> CONTEXT_SHIFT,
            send_word!(held, w, i, datatype),
            len,
        ],
    );
    #[cfg(feature = "views")]
    let signature = send_word!(held, w, i, wanted);
    #[cfg(not(feature = "views"))]
    let signature = 0;
    shim::store_relaxed_x4(
        at.row(SlotRow::Message),
        [
            kind_sequence(kind, sequence),
            signature,
            head as u32,
            (head >> 32) as u32,
        ],
    );
    if kind == MessageKind::Stream {
        store_at(at, SlotWord::Chunk, first);
    }
    store_at(at, SlotWord::Link, LINK_PENDING);
    places
        .state(id)
        .store(SlotState::Queued.word(dest), Ordering::Relaxed);
    // Release pairs with the Acquire fence after the receiver's look or
    // take in `drain_matching` (the relay's Acquire swap): the header
    // and payload above are visible to it (and, through the release
    // sequence, to every later taker of this inbox).
    let before = inbox.swap(id + 1, Ordering::Release);
    // Relaxed: the receiver reads it after acquiring our push, and waits
    // while it still reads LINK_PENDING.
    store_at(at, SlotWord::Link, before);
    // A lone try (`held`) runs only while the rank does not trace.
    if held.is_none() {
        trace::sent(w, id, dest);
    }
    let next = match kind {
        MessageKind::Eager if mode == SendMode::Synchronous as u32 => RecordState::SendAwaitFree,
        MessageKind::Eager => RecordState::Complete,
        MessageKind::Direct => RecordState::SendAwaitDone,
        MessageKind::Stream => {
            rec!(w, i, offset = first);
            RecordState::SendStream
        }
    };
    if held.is_some() && matches!(next, RecordState::Complete) {
        // A lone try that completes: its record is read no more (the
        // blocking call returns; a send has no status to collect), but for
        // its state, which a request's `post` sets.
        return Step::Complete;
    }
    rec!(w, i, slot = s);
    if !matches!(next, RecordState::Complete) {
        mine!(w, held_slots = mine!(w, held_slots) | (1u64 << s));
    }
    rec!(w, i, state = next as u32);
    if matches!(next, RecordState::Complete) {
        Step::Complete
    } else {
        Step::Moved
    }
}

/// Advances a send record that holds a slot.
fn send_step(w: &Core, i: u32, state: u32) -> Step {
    let s = rec!(w, i, slot);
    let id = w.slot_id(w.rank, s);
    let word = w.slot_state(id);
    if state == RecordState::SendAwaitFree as u32 {
        // Acquire pairs with the receiver's Release store of FREE after its
        // copy: the receive has started. CLAIMED (a matched probe) is not.
        if word.load(Ordering::Acquire) != SlotState::Free as u32 {
            return Step::Idle;
        }
        return_slot(w, s);
        rec!(w, i, state = RecordState::Complete as u32);
        return Step::Moved;
    }
    if state != RecordState::SendAwaitDone as u32 && state != RecordState::SendStream as u32 {
        return Step::Idle;
    }
    let dest = rec!(w, i, peer) as u32;
    // Acquire pairs with the receiver's Release store of DONE (its copy out
    // of our buffer or slot is finished) or of CTS (it read the last chunk).
    let now = word.load(Ordering::Acquire);
    if now == SlotState::Done.word(dest) {
        // Relaxed: only this rank takes its slots.
        word.store(SlotState::Free as u32, Ordering::Relaxed);
        return_slot(w, s);
        rec!(w, i, state = RecordState::Complete as u32);
        return Step::Moved;
    }
    let (offset, len) = (rec!(w, i, offset), rec!(w, i, len));
    if now != SlotState::ClearToSend.word(dest) || offset >= len {
        return Step::Idle;
    }
    let n = (len - offset).min(w.slot_bytes());
    let data = rec!(w, i, buffer) as *const u8;
    let typed = cfg!(feature = "views") && rec!(w, i, mode) & TYPED_MODE != 0;
    let src = if typed {
        data
    } else {
        data.wrapping_add(offset as usize)
    };
    // SAFETY: the receiver asked for this chunk (CTS) and reads the payload
    // only after CHUNK; `offset + n <= len`.
    unsafe { move_bytes(w, i, typed, true, offset, w.slot_payload(id), src, n) };
    store(w, id, SlotWord::Chunk, n);
    rec!(w, i, offset = offset + n);
    // Release pairs with the receiver's Acquire wait for CHUNK.
    word.store(SlotState::Chunk.word(dest), Ordering::Release);
    Step::Moved
}

/// This rank's header, for tests and reports inside the crate.
#[allow(dead_code)]
pub(crate) fn header(w: &Core) -> RankHeader {
    // SAFETY: this rank's header.
    unsafe { w.rank_header().read() }
}
