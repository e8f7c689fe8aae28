//! Message traces: each rank records its MPI events into a bounded buffer of
//! its own in the world memory, which the host decodes after the launch
//! (`gpu_mpi::Trace`, docs/tracing.md).
//!
//! Tracing is chosen per launch: [`WorldConfig::trace_events`] events per
//! rank, 0 for none (then the world has no trace region and every hook
//! below is one test of a header word the rank reads anyway, cached). A rank's
//! buffer is a [`TraceHeader`] followed by `trace_events` [`TraceEvent`]s;
//! only its rank writes it (plain stores, like its request records), the
//! host reads it after the ranks stopped. When the buffer is full, further
//! events are counted in [`TraceHeader::dropped`] and not written: a full
//! buffer never overwrites what it holds.
//!
//! Every event names the communicator it concerns by its context word
//! ([`TraceEvent::context`]): a message's envelope word (`2 × id` for
//! point-to-point traffic of communicator context `id`, 0 the world;
//! `2 × id + 1` for the messages a sub-communicator's collective exchanges),
//! a collective's or a creation's `2 × id + 1`, or [`NO_CONTEXT`] where
//! none applies. Peers are world ranks (the tracks of the exports); a
//! collective's root is recorded both in its communicator's numbering and
//! as a world rank.
//!
//! Timestamps come from [`shim::clock_ns`] (`%globaltimer` on the GPU, the
//! emulator's monotonic clock on the host, 0 under loom) and the SM from
//! [`shim::sm_id`] (`%smid`; the emulator's worker thread).
//!
//! The hooks are called once per event site of the engine and of the
//! blocking calls; each tests the config inline and does its work in a
//! non-inlined function with scalar arguments, so a kernel that does not
//! trace keeps its registers (docs/performance.md, "Tracing").
//!
//! [`WorldConfig::trace_events`]: crate::layout::WorldConfig::trace_events

use crate::error::Error;
use crate::layout::{Layout, TRACE_EVENT_BYTES, TRACE_HEADER_BYTES};
use crate::records::{CommWord, Core, RequestRecord, SlotWord, CONTEXT_SHIFT};
use crate::shim::{self, Ordering};
use bytemuck::{Pod, Zeroable};

/// What a [`TraceEvent`] records. The meaning of the event's `peer`, `tag`,
/// `bytes`, `call`, `context` and `arg` fields depends on it (see each
/// variant). Peers are world ranks.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceKind {
    /// A send was posted (a blocking send's record or an immediate send's
    /// request): `peer` the destination, `tag`, `bytes` the message's
    /// length, `context` its context word, `arg` the request record's index.
    SendPosted = 1,
    /// A receive was posted: `peer` the source filter (-1 any), `tag` the
    /// tag filter (-1 any), `bytes` the buffer's capacity, `context` the
    /// context word it matches, `arg` the record index.
    ReceivePosted = 2,
    /// A send's message was published in a slot and pushed on the
    /// destination's inbox: `peer` the destination, `tag`, `bytes`,
    /// `context` its context word, `arg` the message's sequence number (its
    /// sender's count of messages sent before it, over every context).
    /// `(this rank, arg)` names the message.
    Sent = 3,
    /// A receive (or a matched probe) took a message out of matching: `peer`
    /// its sender, `tag`, `bytes` its length, `context` its context word,
    /// `arg` its sequence number: `(peer, arg)` is the message of the
    /// sender's [`TraceKind::Sent`], with the same context word.
    Matched = 4,
    /// A send's record completed: `peer` the destination, `tag`, `bytes`,
    /// `context`, `arg` the record index.
    SendCompleted = 5,
    /// A receive's record completed: `peer` the message's source, `tag`,
    /// `bytes` the message's length, `context`, `arg` the record index.
    ReceiveCompleted = 6,
    /// A probe found a message: `peer` its source, `tag`, `bytes` its
    /// length, `context` its context word, `call` the probe's `polling::Call`
    /// code (probe or immediate probe).
    Probe = 7,
    /// The rank entered a collective: `call` its `polling::Call` code,
    /// `context` its communicator's collective word (`2 × id + 1`; 1 for
    /// the world), `peer` its root in the communicator's numbering (-2 for
    /// none), `tag` the root's world rank (-2 none, -1 a root out of
    /// range), `bytes` the communicator's size, `arg` the rank's own rank
    /// in it (high 32 bits) and the communicator's first table entry (low).
    CollectiveEnter = 8,
    /// The rank returned from the collective it entered last: `call` and
    /// `context` as entered, `arg` the `ErrorClass` code of its result (0
    /// for success). A world collective that fails before it enters its
    /// algorithm records the enter event and this one; only a rank that
    /// stops inside (a deadlock, a panic) leaves a span open
    /// (docs/tracing.md).
    CollectiveLeave = 9,
    /// A wait that blocked (its first poll failed) ended with its
    /// operation done (a wait given up on an abort or a timeout records
    /// none; the deadlock report says where it stood): `call` the
    /// operation, `peer` and `tag` as in the deadlock report, `arg` how long
    /// it blocked in nanoseconds (it began `arg` before `time_ns`).
    Blocked = 10,
    /// The rank entered a communicator creation: `call` its [`Creation`]
    /// code, `context` the parent's collective word, `peer` the colour it
    /// passed (-1 for `MPI_UNDEFINED`), `tag` the key, `bytes` the
    /// parent's size, `arg` its rank in the parent.
    CreationEnter = 11,
    /// The rank returned from the creation it entered last: `call` as
    /// entered, `context` the new communicator's collective word
    /// ([`NO_CONTEXT`] when the rank got none: `MPI_UNDEFINED`, or an
    /// error), `peer` its rank there (-1 none), `tag` the communicator's
    /// first table entry (-1 none), `bytes` its size, `arg` the
    /// `ErrorClass` code of the result (0 for success).
    CreationLeave = 12,
    /// A one-sided operation was carried out by this rank, the origin
    /// (MPI 4.1 §12.3; one that failed or went to `PROC_NULL` records
    /// none): `call` its [`RmaOp`] code, `context` the window's
    /// communicator's collective word (`2 × id + 1`), `peer` the target's
    /// world rank, `tag` the window id, `bytes` the bytes of the origin
    /// buffer, `arg` the byte offset at the target (displacement ×
    /// displacement unit; on a dynamic window the displacement, an
    /// address) in the low 48 bits and, for [`RmaOp::PutNotify`]
    /// and [`RmaOp::AccumulateNotify`], the notification counter in the
    /// high 16. The request-based forms record the operation they carry
    /// out.
    RmaOperation = 13,
    /// This rank opened an access or exposure epoch of a window (MPI 4.1
    /// §12.5): `call` its [`RmaEpoch`] code, `context` the window's
    /// communicator's collective word, `peer` a lock's target as a world
    /// rank (-2 for the other epochs), `tag` the window id, `bytes` the
    /// ranks it reaches (a lock 1; `lock_all` and a fence the
    /// communicator's size; `start` and `post` their group's size), `arg` 0.
    RmaEpochOpen = 14,
    /// This rank closed the epoch it opened with the same `call`, `tag`
    /// and `peer` (a fence's by the next fence or by `free`, a lock's by
    /// `unlock`, `lock_all`'s by `unlock_all`, `start`'s by `complete`,
    /// `post`'s by `wait` or a `test` that said done): the other fields
    /// as opened.
    RmaEpochClose = 15,
    /// A notification wait (`Window::wait_notifications`) returned with
    /// its notifications taken: `context` the window's communicator's
    /// collective word, `peer` -2, `tag` the window id, `bytes` the count
    /// it waited for, `arg` the counter.
    RmaNotified = 16,
}

/// [`TraceEvent::context`] of an event that concerns no communicator (a
/// blocked wait: the wait record does not say which).
pub const NO_CONTEXT: u16 = u16::MAX;

/// Which creation call a [`TraceKind::CreationEnter`] event records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Creation {
    /// `split_by_color` or `split_by_color_with_key` (`MPI_Comm_split`).
    Split = 1,
    /// `split_shared` (`MPI_Comm_split_type`, shared).
    SplitShared = 2,
    /// `split_by_warp`.
    SplitByWarp = 3,
    /// `duplicate` (`MPI_Comm_dup`).
    Duplicate = 4,
    /// `split_by_subgroup_collective` (`MPI_Comm_create`).
    Subgroup = 5,
}

impl Creation {
    /// Every creation call, in code order.
    pub const ALL: [Creation; 5] = [
        Creation::Split,
        Creation::SplitShared,
        Creation::SplitByWarp,
        Creation::Duplicate,
        Creation::Subgroup,
    ];

    /// The call of a stored code.
    pub fn from_code(code: u8) -> Option<Creation> {
        Creation::ALL.iter().copied().find(|c| *c as u8 == code)
    }

    /// The method's name ("split", "duplicate", ...).
    pub const fn name(self) -> &'static str {
        match self {
            Creation::Split => "split",
            Creation::SplitShared => "split_shared",
            Creation::SplitByWarp => "split_by_warp",
            Creation::Duplicate => "duplicate",
            Creation::Subgroup => "split_by_subgroup_collective",
        }
    }
}

/// Which one-sided operation a [`TraceKind::RmaOperation`] event records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmaOp {
    /// `put` or `rput` (`MPI_Put`).
    Put = 1,
    /// `get` or `rget` (`MPI_Get`).
    Get = 2,
    /// `accumulate` or `raccumulate` (`MPI_Accumulate`).
    Accumulate = 3,
    /// `get_accumulate` or `rget_accumulate` (`MPI_Get_accumulate`).
    GetAccumulate = 4,
    /// `fetch_and_op` (`MPI_Fetch_and_op`).
    FetchAndOp = 5,
    /// `compare_and_swap` (`MPI_Compare_and_swap`).
    CompareAndSwap = 6,
    /// `put_notify`: a put and one notification on the target's counter.
    PutNotify = 7,
    /// `accumulate_notify`: an accumulate and one notification.
    AccumulateNotify = 8,
}

impl RmaOp {
    /// Every operation, in code order.
    pub const ALL: [RmaOp; 8] = [
        RmaOp::Put,
        RmaOp::Get,
        RmaOp::Accumulate,
        RmaOp::GetAccumulate,
        RmaOp::FetchAndOp,
        RmaOp::CompareAndSwap,
        RmaOp::PutNotify,
        RmaOp::AccumulateNotify,
    ];

    /// The operation of a stored code.
    pub fn from_code(code: u8) -> Option<RmaOp> {
        RmaOp::ALL.iter().copied().find(|o| *o as u8 == code)
    }

    /// The method's name ("put", "fetch_and_op", ...).
    pub const fn name(self) -> &'static str {
        match self {
            RmaOp::Put => "put",
            RmaOp::Get => "get",
            RmaOp::Accumulate => "accumulate",
            RmaOp::GetAccumulate => "get_accumulate",
            RmaOp::FetchAndOp => "fetch_and_op",
            RmaOp::CompareAndSwap => "compare_and_swap",
            RmaOp::PutNotify => "put_notify",
            RmaOp::AccumulateNotify => "accumulate_notify",
        }
    }

    /// Whether it notifies (its event's `arg` holds the counter).
    pub const fn notifies(self) -> bool {
        matches!(self, RmaOp::PutNotify | RmaOp::AccumulateNotify)
    }
}

/// The bits of a [`TraceKind::RmaOperation`] event's `arg` that hold the
/// byte offset at the target; the counter of a notifying one is above them.
pub const RMA_OFFSET_BITS: u32 = 48;

/// Which epoch a [`TraceKind::RmaEpochOpen`] or
/// [`TraceKind::RmaEpochClose`] event records (MPI 4.1 §12.5).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmaEpoch {
    /// The access and exposure epoch between two fences (§12.5.1).
    Fence = 1,
    /// A shared lock of one target (§12.5.3).
    LockShared = 2,
    /// An exclusive lock of one target.
    LockExclusive = 3,
    /// `lock_all`: a shared lock of every target.
    LockAll = 4,
    /// An access epoch of `start`, ended by `complete` (§12.5.2).
    Access = 5,
    /// An exposure epoch of `post`, ended by `wait` or `test`.
    Exposure = 6,
}

impl RmaEpoch {
    /// Every epoch, in code order.
    pub const ALL: [RmaEpoch; 6] = [
        RmaEpoch::Fence,
        RmaEpoch::LockShared,
        RmaEpoch::LockExclusive,
        RmaEpoch::LockAll,
        RmaEpoch::Access,
        RmaEpoch::Exposure,
    ];

    /// The epoch of a stored code.
    pub fn from_code(code: u8) -> Option<RmaEpoch> {
        RmaEpoch::ALL.iter().copied().find(|e| *e as u8 == code)
    }

    /// A short name ("fence epoch", "exclusive lock", ...).
    pub const fn name(self) -> &'static str {
        match self {
            RmaEpoch::Fence => "fence epoch",
            RmaEpoch::LockShared => "shared lock",
            RmaEpoch::LockExclusive => "exclusive lock",
            RmaEpoch::LockAll => "lock_all",
            RmaEpoch::Access => "access epoch (start)",
            RmaEpoch::Exposure => "exposure epoch (post)",
        }
    }
}

impl TraceKind {
    /// Every kind, in code order.
    pub const ALL: [TraceKind; 16] = [
        TraceKind::SendPosted,
        TraceKind::ReceivePosted,
        TraceKind::Sent,
        TraceKind::Matched,
        TraceKind::SendCompleted,
        TraceKind::ReceiveCompleted,
        TraceKind::Probe,
        TraceKind::CollectiveEnter,
        TraceKind::CollectiveLeave,
        TraceKind::Blocked,
        TraceKind::CreationEnter,
        TraceKind::CreationLeave,
        TraceKind::RmaOperation,
        TraceKind::RmaEpochOpen,
        TraceKind::RmaEpochClose,
        TraceKind::RmaNotified,
    ];

    /// The kind of a stored code, `None` for a code this version never writes.
    pub fn from_code(code: u8) -> Option<TraceKind> {
        TraceKind::ALL.iter().copied().find(|k| *k as u8 == code)
    }

    /// A short lower-case name ("send posted", "matched", ...).
    pub const fn name(self) -> &'static str {
        match self {
            TraceKind::SendPosted => "send posted",
            TraceKind::ReceivePosted => "receive posted",
            TraceKind::Sent => "sent",
            TraceKind::Matched => "matched",
            TraceKind::SendCompleted => "send completed",
            TraceKind::ReceiveCompleted => "receive completed",
            TraceKind::Probe => "probe",
            TraceKind::CollectiveEnter => "collective entered",
            TraceKind::CollectiveLeave => "collective left",
            TraceKind::Blocked => "blocked",
            TraceKind::CreationEnter => "communicator creation entered",
            TraceKind::CreationLeave => "communicator creation left",
            TraceKind::RmaOperation => "one-sided operation",
            TraceKind::RmaEpochOpen => "epoch opened",
            TraceKind::RmaEpochClose => "epoch closed",
            TraceKind::RmaNotified => "notifications waited",
        }
    }
}

/// One recorded event ([`TRACE_EVENT_BYTES`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TraceEvent {
    /// When, in nanoseconds of [`shim::clock_ns`].
    pub time_ns: u64,
    /// [`TraceKind`] code.
    pub kind: u8,
    /// A `polling::Call` code (probes, collectives, blocked waits), a
    /// [`Creation`] code (creations), an [`RmaOp`] or [`RmaEpoch`] code
    /// (one-sided events), else 0.
    pub call: u8,
    /// The context word of the communicator the event concerns (see the
    /// module docs; [`NO_CONTEXT`] for none).
    pub context: u16,
    /// The peer rank (see [`TraceKind`]).
    pub peer: i32,
    /// The tag.
    pub tag: i32,
    /// Bytes of the message or buffer.
    pub bytes: u32,
    /// Kind-specific: a record index, a message's sequence number, a duration.
    pub arg: u64,
}

/// The header of a rank's trace buffer ([`TRACE_HEADER_BYTES`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TraceHeader {
    /// Events written (at most the buffer's capacity).
    pub recorded: u32,
    /// Events not written because the buffer was full.
    pub dropped: u32,
    /// The SM the rank ran on at its first event (`%smid`).
    pub sm_first: u32,
    /// The SM at its last event.
    pub sm_last: u32,
    /// When the rank's current blocked wait began (private scratch of the
    /// [`TraceKind::Blocked`] event).
    pub wait_start_ns: u64,
    /// Bit `i` set while request record `i` holds a send (private scratch:
    /// tells a completion's kind without the engine passing it).
    pub send_records: u32,
    /// Unused.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<TraceEvent>() == TRACE_EVENT_BYTES);
const _: () = assert!(core::mem::size_of::<TraceHeader>() == TRACE_HEADER_BYTES);

impl TraceHeader {
    /// Decodes `rank`'s trace header from a copy of a world's memory;
    /// `None` when the world was not traced.
    ///
    /// # Panics
    /// If the header lies outside `memory`.
    pub fn read(memory: &[u8], layout: &Layout, rank: u32) -> Option<TraceHeader> {
        if layout.trace_stride == 0 {
            return None;
        }
        let at = layout.trace_of(rank);
        Some(bytemuck::pod_read_unaligned(&memory[at..at + TRACE_HEADER_BYTES]))
    }
}

impl TraceEvent {
    /// Decodes event `index` of `rank`'s trace buffer from a copy of a
    /// world's memory (`index` below the header's `recorded`).
    ///
    /// # Panics
    /// If the event lies outside `memory`.
    pub fn read(memory: &[u8], layout: &Layout, rank: u32, index: u32) -> TraceEvent {
        let at = layout.trace_of(rank) + TRACE_HEADER_BYTES + index as usize * TRACE_EVENT_BYTES;
        bytemuck::pod_read_unaligned(&memory[at..at + TRACE_EVENT_BYTES])
    }

    /// The event's kind (`None`: a code this version never writes).
    pub fn kind(&self) -> Option<TraceKind> {
        TraceKind::from_code(self.kind)
    }

    /// The context id of the communicator the event concerns (0 the
    /// world; the communicators one split makes share theirs), `None` for
    /// [`NO_CONTEXT`].
    pub fn communicator(&self) -> Option<u32> {
        (self.context != NO_CONTEXT).then_some(self.context as u32 >> 1)
    }

    /// Whether a message event belongs to a collective's own traffic (its
    /// context word is odd: a sub-communicator's collective, or a
    /// creation, exchanging messages).
    pub fn is_collective_traffic(&self) -> bool {
        self.context != NO_CONTEXT && self.context & 1 == 1
    }
}

// ---------------------------------------------------------------------------
// Recording

/// The first word of an event after its time: `kind`, `call` and `context`
/// as [`TraceEvent`] lays them out (little-endian), so that the recorders
/// pass one scalar for the three.
#[inline(always)]
const fn head(kind: TraceKind, call: u32, context: u32) -> u32 {
    kind as u32 | (call & 0xff) << 8 | (context & 0xffff) << 16
}

/// Appends one event to the rank's buffer, or counts it dropped when the
/// buffer is full. `head` is [`head`]'s word. Scalar arguments: see
/// `engine::progress_words`.
#[inline(never)]
#[cold]
pub(crate) fn record_words(base: u64, rank: u32, head: u32, peer: i32, tag: i32, bytes: u32, arg: u64) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let capacity = core.trace_events();
    let header = core.trace_buffer() as *mut TraceHeader;
    // SAFETY: tracing is on (the callers test it), so the buffer lies inside
    // the world memory; it is this rank's and only this rank touches it
    // during the launch: plain reads and writes.
    unsafe {
        let h = &mut *header;
        if h.recorded >= capacity {
            h.dropped = h.dropped.saturating_add(1);
            return;
        }
        let sm = shim::sm_id();
        if h.recorded == 0 && h.dropped == 0 {
            h.sm_first = sm;
        }
        h.sm_last = sm;
        let events = (header as *mut u8).add(TRACE_HEADER_BYTES) as *mut TraceEvent;
        events.add(h.recorded as usize).write(TraceEvent {
            time_ns: shim::clock_ns(),
            kind: head as u8,
            call: (head >> 8) as u8,
            context: (head >> 16) as u16,
            peer,
            tag,
            bytes,
            arg,
        });
        h.recorded += 1;
    }
}

/// Whether this rank traces.
#[inline(always)]
pub(crate) fn on(w: &Core) -> bool {
    w.trace_events() != 0
}

/// The record just posted (the last of the active list) was posted: a
/// send or a receive, by its state.
#[inline(always)]
pub(crate) fn posted(w: &Core) {
    if on(w) {
        posted_words(w.base as u64, w.rank);
    }
}

#[inline(never)]
#[cold]
fn posted_words(base: u64, rank: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let last = crate::records::mine!(&core, active_tail);
    record_words_of(base, rank, last - 1, 0);
}

/// Record `i` just completed.
#[inline(always)]
pub(crate) fn completed(w: &Core, i: u32) {
    if on(w) {
        record_words_of(w.base as u64, w.rank, i, 1);
    }
}

/// The record events: `what` 0 posted, 1 completed. Reads the record out
/// of line.
#[inline(never)]
#[cold]
fn record_words_of(base: u64, rank: u32, i: u32, what: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    // SAFETY: this rank's record `i` (private to it).
    let r: RequestRecord = unsafe { core.record(i).read() };
    // SAFETY: tracing is on; the header is this rank's (see `record_words`).
    let h = unsafe { &mut *(core.trace_buffer() as *mut TraceHeader) };
    let bit = 1u32 << (i % 32);
    let (kind, bytes) = if what == 0 {
        if crate::records::RecordState::from_code(r.state).is_some_and(|s| s.is_send()) {
            h.send_records |= bit;
            (TraceKind::SendPosted, r.len)
        } else {
            h.send_records &= !bit;
            (TraceKind::ReceivePosted, r.len)
        }
    } else if h.send_records & bit != 0 {
        (TraceKind::SendCompleted, r.len)
    } else {
        (TraceKind::ReceiveCompleted, r.message_bytes)
    };
    let context = r.mode >> CONTEXT_SHIFT;
    record_words(base, rank, head(kind, 0, context), r.peer, r.tag, bytes, i as u64);
}

/// Own slot `id` was just published and pushed on `dest`'s inbox: records
/// [`TraceKind::Sent`] with the envelope the slot holds.
#[inline(always)]
pub(crate) fn sent(w: &Core, id: u32, dest: u32) {
    if on(w) {
        slot_words(w.base as u64, w.rank, id, TraceKind::Sent as u32, dest as i32);
    }
}

/// Arrived slot `id` was just taken out of matching by this rank.
#[inline(always)]
pub(crate) fn matched(w: &Core, id: u32) {
    if on(w) {
        matched_words(w.base as u64, w.rank, id);
    }
}

#[inline(never)]
#[cold]
fn matched_words(base: u64, rank: u32, id: u32) {
    slot_words(base, rank, id, TraceKind::Matched as u32, -1);
}

/// A probe (`call`) found arrived slot `id`.
#[inline(always)]
pub(crate) fn probed(w: &Core, id: u32, call: u32) {
    if on(w) {
        slot_words(w.base as u64, w.rank, id, TraceKind::Probe as u32 | call << 8, -1);
    }
}

/// An event about slot `id`: its envelope and sequence number. `kind_call`
/// holds the kind (low byte) and the call; `dest` is the peer of a
/// [`TraceKind::Sent`] (-1: the peer is the slot's owner, its sender).
#[inline(never)]
#[cold]
fn slot_words(base: u64, rank: u32, id: u32, kind_call: u32, dest: i32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let w = &core;
    // Relaxed: a received slot's header was acquired when the rank took it
    // from its inbox (`engine::drain`), and only this rank acts on it now;
    // a sent slot's envelope words were written by this rank, and no other
    // rank writes them.
    let word = |f| w.slot_word(id, f).load(Ordering::Relaxed);
    let peer = if dest >= 0 {
        dest
    } else {
        (id / w.slots_per_rank()) as i32
    };
    record_words(
        base,
        rank,
        kind_call | word(SlotWord::Context) << 16,
        peer,
        word(SlotWord::Tag) as i32,
        word(SlotWord::Bytes),
        (word(SlotWord::KindSequence) >> crate::records::KIND_BITS) as u64,
    );
}

/// A wait's first poll failed: it blocks from now (the time is kept in the
/// trace header, so that the wait holds no extra value while it polls).
#[inline(always)]
pub(crate) fn wait_began(w: &Core) {
    if on(w) {
        // Inline, not a call: a call in the wait loop would cost the loop
        // registers whether or not the rank traces.
        let header = w.trace_buffer() as *mut TraceHeader;
        // SAFETY: tracing is on; the header is this rank's (see `record_words`).
        unsafe { (*header).wait_start_ns = shim::clock_ns() };
    }
}

/// A wait that blocked ended: records [`TraceKind::Blocked`] with what the
/// rank's wait record says it waited in.
#[inline(always)]
pub(crate) fn wait_ended(w: &Core) {
    if on(w) {
        wait_words(w.base as u64, w.rank);
    }
}

/// Records the end of a blocked wait (its start is in the header).
#[inline(never)]
#[cold]
fn wait_words(base: u64, rank: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let header = core.trace_buffer() as *mut TraceHeader;
    let now = shim::clock_ns();
    // SAFETY: tracing is on; the header is this rank's (see `record_words`).
    let h = unsafe { &mut *header };
    let waited = now.saturating_sub(h.wait_start_ns);
    let at = core.wait_record();
    // Relaxed: the rank's own wait record, written by it (`record_wait`).
    let word = |off: usize| {
        // SAFETY: a word of this rank's wait record, inside the world memory.
        unsafe { shim::atomic_u32_at(core.base, at + off) }.load(Ordering::Relaxed)
    };
    use crate::records::WaitRecord;
    use core::mem::offset_of;
    record_words(
        base,
        rank,
        head(
            TraceKind::Blocked,
            word(offset_of!(WaitRecord, operation)),
            NO_CONTEXT as u32,
        ),
        word(offset_of!(WaitRecord, peer)) as i32,
        word(offset_of!(WaitRecord, tag)) as i32,
        0,
        waited,
    );
}

/// The span of one collective call: [`TraceKind::CollectiveEnter`] when
/// made, [`TraceKind::CollectiveLeave`] when [`Span::leave`] passes the
/// call's result on, with its error class if it failed. Not a `Drop`
/// guard: a leave on every path by `Drop` keeps the error's words in local
/// memory across the hook, which costs every collective stack space
/// whether or not the rank traces; so every return of a traced collective
/// goes through [`Span::leave`] instead.
pub(crate) struct Span {
    base: *mut u8,
    rank: u32,
    /// The `polling::Call` code (low 8 bits), [`SPAN_TRACED`], and the
    /// context word (high 16 bits).
    call_context: u32,
}

/// The bit of [`Span::call_context`] that says the rank traces: read once
/// as the span opens. After the collective the world's configuration is
/// out of L1 (its acquires emptied it), so a second read would be a round
/// trip to L2 on every collective's way out.
const SPAN_TRACED: u32 = 1 << 15;

impl Span {
    /// Enters collective `call` (a `polling::Call` code) with root `root`
    /// (in the communicator's numbering; -2: none) on the communicator of
    /// context `id` (0: the world), first table entry `start` and size
    /// `size` (ignored for the world). `untraced`: the caller knows that
    /// the world does not trace (`World::span`), so the configuration is
    /// not read: on the GPU that read is a round trip to L2 on every
    /// collective's way in, the previous collective's acquires having
    /// emptied L1.
    #[inline(always)]
    pub(crate) fn enter_in(
        w: &Core,
        untraced: bool,
        call: u32,
        root: i32,
        id: u32,
        start: u32,
        size: u32,
    ) -> Span {
        let traced = !untraced && on(w);
        if traced {
            enter_words(w.base as u64, w.rank, call, root, id, start, size);
        }
        Span {
            base: w.base,
            rank: w.rank,
            call_context: (call & 0xff) | if traced { SPAN_TRACED } else { 0 } | ((id << 1) | 1) << 16,
        }
    }

    /// Leaves the collective with result `r`, which it returns.
    #[inline(always)]
    pub(crate) fn leave(self, r: Result<(), Error>) -> Result<(), Error> {
        if self.call_context & SPAN_TRACED != 0 {
            let class = match &r {
                Ok(()) => 0,
                Err(e) => e.class() as u32,
            };
            leave_words(self.base as u64, self.rank, self.call_context, class);
        }
        r
    }
}

/// Records [`TraceKind::CollectiveEnter`] (see [`Span::enter_in`]).
#[inline(never)]
#[cold]
fn enter_words(base: u64, rank: u32, call: u32, root: i32, id: u32, start: u32, size: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let (size, mine, root_world) = if id == 0 {
        let n = core.ranks();
        let w = if root == -2 {
            -2
        } else if root >= 0 && (root as u32) < n {
            root
        } else {
            -1
        };
        (n, rank, w)
    } else {
        let mine = core.comm_rank_of(id << 1, rank) as u32;
        let w = if root == -2 {
            -2
        } else if root >= 0 && (root as u32) < size {
            // Relaxed: the table was published by the creation's closing
            // barrier, which this rank passed.
            core.comm_word(id, start + root as u32, CommWord::Member)
                .load(Ordering::Relaxed) as i32
        } else {
            -1
        };
        (size, mine, w)
    };
    record_words(
        base,
        rank,
        head(TraceKind::CollectiveEnter, call, (id << 1) | 1),
        root,
        root_world,
        size,
        (mine as u64) << 32 | start as u64,
    );
}

/// Records [`TraceKind::CollectiveLeave`] with error class `class`.
#[inline(never)]
#[cold]
fn leave_words(base: u64, rank: u32, call_context: u32, class: u32) {
    record_words(
        base,
        rank,
        head(
            TraceKind::CollectiveLeave,
            call_context & 0xff,
            call_context >> 16,
        ),
        -2,
        -1,
        0,
        class as u64,
    );
}

/// The span of a communicator creation on the communicator of context `id`
/// (0: the world): [`TraceKind::CreationEnter`] with the colour and key the
/// rank passed and its rank and size in the parent.
#[inline(always)]
pub(crate) fn creation_entered(
    w: &Core,
    how: Creation,
    id: u32,
    color: u32,
    key: i32,
    parent_rank: u32,
    parent_size: u32,
) {
    if on(w) {
        record_words(
            w.base as u64,
            w.rank,
            head(TraceKind::CreationEnter, how as u32, (id << 1) | 1),
            color as i32,
            key,
            parent_size,
            parent_rank as u64,
        );
    }
}

/// The end of a creation span: [`TraceKind::CreationLeave`] with the new
/// communicator (`made`: its context id, first table entry, size and the
/// rank's rank there; `None` when the rank got none) and the result's class.
#[inline(always)]
pub(crate) fn creation_left(
    w: &Core,
    how: Creation,
    made: Option<(u32, u32, u32, u32)>,
    r: Result<(), &Error>,
) {
    if on(w) {
        let class = match r {
            Ok(()) => 0,
            Err(e) => e.class() as u32,
        };
        let (context, start, size, rank) = match made {
            Some((id, start, size, rank)) => ((id << 1) | 1, start as i32, size, rank as i32),
            None => (NO_CONTEXT as u32, -1, 0, -1),
        };
        record_words(
            w.base as u64,
            w.rank,
            head(TraceKind::CreationLeave, how as u32, context),
            rank,
            start,
            size,
            class as u64,
        );
    }
}

/// The head word of a one-sided event of `kind` with `code` (an [`RmaOp`]
/// or [`RmaEpoch`] code, else 0) on a window of the communicator of
/// context `comm_id`, for [`record_words`]: the window's hooks
/// (`Window::trace_*`) test [`on`] inline and pass scalars.
#[inline(always)]
pub(crate) const fn rma_head(kind: TraceKind, code: u32, comm_id: u32) -> u32 {
    head(kind, code, (comm_id << 1) | 1)
}

/// The put or accumulate just recorded was a notifying one: its event
/// becomes [`RmaOp`] code `op` with `counter` in its `arg`. It is the
/// rank's last event (the notification follows the operation with no
/// event between), unless the buffer was full: then it was dropped, and
/// so is this.
#[inline(never)]
#[cold]
pub(crate) fn rma_notify_words(base: u64, rank: u32, op: u32, counter: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let header = core.trace_buffer() as *mut TraceHeader;
    // SAFETY: tracing is on (the caller tests it); the buffer is this
    // rank's (see `record_words`).
    unsafe {
        let h = &mut *header;
        if h.dropped != 0 || h.recorded == 0 {
            return;
        }
        let events = (header as *mut u8).add(TRACE_HEADER_BYTES) as *mut TraceEvent;
        let last = &mut *events.add(h.recorded as usize - 1);
        if last.kind == TraceKind::RmaOperation as u8 {
            last.call = op as u8;
            last.arg |= (counter as u64) << RMA_OFFSET_BITS;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! A one-rank world on a plain host thread: the events of a self-send
    //! and its receive, and a full buffer. check/tests/trace.rs tests every
    //! kind across ranks, on each backend.
    extern crate std;
    use super::*;
    use crate::communicator::{Communicator, World};
    use crate::layout::WorldConfig;
    use crate::traits::*;
    use std::vec;
    use std::vec::Vec;

    /// Runs `f` on a one-rank world with `events` trace events; returns the
    /// world's memory.
    fn run(events: u32, f: impl FnOnce(&World)) -> (Vec<u8>, Layout) {
        let mut config = WorldConfig::new(1, 1);
        config.trace_events = events;
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        f(&world);
        (bytes.to_vec(), layout)
    }

    fn self_send(w: &World) {
        let me = w.process_at_rank(0);
        me.send_with_tag(&7u32, 5).unwrap();
        let mut v = 0u32;
        me.receive_into_with_tag(&mut v, 5).unwrap();
        assert_eq!(v, 7);
    }

    #[test]
    fn a_self_send_and_its_receive_record_six_events_in_order() {
        let (mem, layout) = run(16, self_send);
        let h = TraceHeader::read(&mem, &layout, 0).unwrap();
        assert_eq!((h.recorded, h.dropped), (6, 0));
        let events: Vec<TraceEvent> = (0..6).map(|i| TraceEvent::read(&mem, &layout, 0, i)).collect();
        let kinds: Vec<_> = events.iter().map(|e| e.kind().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                TraceKind::SendPosted,
                TraceKind::Sent,
                TraceKind::SendCompleted,
                TraceKind::ReceivePosted,
                TraceKind::Matched,
                TraceKind::ReceiveCompleted,
            ]
        );
        for e in &events {
            assert_eq!((e.peer, e.tag, e.bytes), (0, 5, 4), "{e:?}");
        }
        // The match names the message the send published: sender 0, number 0.
        assert_eq!(events[1].arg, 0);
        assert_eq!(events[4].arg, 0);
        assert!(events.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
    }

    #[test]
    fn a_full_buffer_counts_the_rest_and_keeps_its_events() {
        let (mem, layout) = run(4, |w| {
            self_send(w);
            self_send(w);
        });
        let h = TraceHeader::read(&mem, &layout, 0).unwrap();
        assert_eq!((h.recorded, h.dropped), (4, 8));
        assert_eq!(
            TraceEvent::read(&mem, &layout, 0, 3).kind(),
            Some(TraceKind::ReceivePosted)
        );
        // Nothing written past the buffer: an event past its end would
        // land first in the padding before the outboxes, still zero.
        let end = layout.trace_of(0) + layout.trace_stride;
        assert_eq!(layout.outboxes - end, 96);
        assert!(mem[end..layout.outboxes].iter().all(|&b| b == 0));
    }

    fn events_of(mem: &[u8], layout: &Layout) -> Vec<TraceEvent> {
        let h = TraceHeader::read(mem, layout, 0).unwrap();
        assert_eq!(h.dropped, 0);
        (0..h.recorded)
            .map(|i| TraceEvent::read(mem, layout, 0, i))
            .collect()
    }

    #[test]
    fn a_duplicate_its_collectives_and_its_messages_name_its_context() {
        use crate::collective::{CommunicatorCollectives, Root};
        use crate::error::ErrorClass;
        use crate::polling::Call;
        let (mem, layout) = run(64, |w| {
            let d = w.duplicate().unwrap();
            assert_eq!(d.context_id(), 1);
            d.barrier().unwrap();
            let me = d.process_at_rank(0);
            me.send_with_tag(&3u8, 2).unwrap();
            me.receive_into_with_tag(&mut 0u8, 2).unwrap();
            let e = d.process_at_rank(1).broadcast_into(&mut 0u8).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Root);
            w.barrier().unwrap();
        });
        let events = events_of(&mem, &layout);
        let spans: Vec<_> = events
            .iter()
            .filter(
                |e| !matches!(e.kind(), Some(k) if k < TraceKind::CollectiveEnter || k == TraceKind::Blocked),
            )
            .map(|e| (e.kind().unwrap(), e.call, e.context, e.peer, e.tag, e.arg))
            .collect();
        let (barrier, bcast) = (Call::Barrier as u8, Call::Broadcast as u8);
        let dup = Creation::Duplicate as u8;
        assert_eq!(
            spans,
            [
                // The creation on the world: colour 0, key 0, rank 0 of 1;
                // out: context 1, rank 0, first entry 0.
                (TraceKind::CreationEnter, dup, 1, 0, 0, 0),
                (TraceKind::CreationLeave, dup, 3, 0, 0, 0),
                // The duplicate's barrier: no root; rank 0, first entry 0.
                (TraceKind::CollectiveEnter, barrier, 3, -2, -2, 0),
                (TraceKind::CollectiveLeave, barrier, 3, -2, -1, 0),
                // A broadcast from a root out of range: its leave says
                // MPI_ERR_ROOT.
                (TraceKind::CollectiveEnter, bcast, 3, 1, -1, 0),
                (
                    TraceKind::CollectiveLeave,
                    bcast,
                    3,
                    -2,
                    -1,
                    ErrorClass::Root as u64
                ),
                // The world's barrier.
                (TraceKind::CollectiveEnter, barrier, 1, -2, -2, 0),
                (TraceKind::CollectiveLeave, barrier, 1, -2, -1, 0),
            ]
        );
        // The self-send on the duplicate: its point-to-point context word 2
        // on all six events (one rank: the collectives send no messages).
        let p2p: Vec<_> = events
            .iter()
            .filter(|e| e.kind() < Some(TraceKind::Probe))
            .collect();
        assert_eq!(p2p.len(), 6);
        assert!(
            p2p.iter()
                .all(|e| (e.context, e.peer, e.tag, e.bytes) == (2, 0, 2, 1)),
            "{p2p:?}"
        );
        assert!(p2p
            .iter()
            .all(|e| e.communicator() == Some(1) && !e.is_collective_traffic()));
    }

    #[test]
    fn every_collective_of_a_sub_communicator_is_a_span_left_with_its_result() {
        use crate::collective::{CommunicatorCollectives, Root, SystemOperation};
        use crate::error::ErrorClass;
        use crate::polling::Call;
        let (mem, layout) = run(128, |w| {
            let d = w.duplicate().unwrap();
            let root = d.process_at_rank(0);
            let sum = SystemOperation::sum;
            let (x, mut y) = ([4u32], [0u32]);
            d.all_reduce_into(&x[..], &mut y[..], sum()).unwrap();
            d.all_gather_into(&x[..], &mut y[..]).unwrap();
            d.all_to_all_into(&x[..], &mut y[..]).unwrap();
            d.reduce_scatter_block_into(&x[..], &mut y[..], sum()).unwrap();
            d.scan_into(&x[..], &mut y[..], sum()).unwrap();
            d.exclusive_scan_into(&x[..], &mut y[..], sum()).unwrap();
            root.reduce_into_root(&x[..], &mut y[..], sum()).unwrap();
            root.gather_into_root(&x[..], &mut y[..]).unwrap();
            root.scatter_into_root(&x[..], &mut y[..]).unwrap();
            // An argument error found before any message: still left.
            let e = d.all_gather_into(&x[..], &mut [0u32; 2][..]).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Count);
        });
        let events = events_of(&mem, &layout);
        let mut spans = Vec::new();
        let mut open = None;
        for e in &events {
            match e.kind() {
                Some(TraceKind::CollectiveEnter) => {
                    assert_eq!((e.context, e.bytes), (3, 1), "{e:?}");
                    assert!(open.replace(e.call).is_none(), "two spans open");
                }
                Some(TraceKind::CollectiveLeave) => {
                    assert_eq!(open.take(), Some(e.call), "left what was entered");
                    spans.push((e.call, e.arg));
                }
                _ => {}
            }
        }
        let code = |c: Call| c as u8;
        assert_eq!(
            spans,
            [
                (code(Call::AllReduce), 0),
                (code(Call::AllGather), 0),
                (code(Call::AllToAll), 0),
                (code(Call::ReduceScatter), 0),
                (code(Call::Scan), 0),
                (code(Call::Scan), 0),
                (code(Call::Reduce), 0),
                (code(Call::Gather), 0),
                (code(Call::Scatter), 0),
                (code(Call::AllGather), ErrorClass::Count as u64),
            ]
        );
    }

    #[test]
    fn an_untraced_world_has_no_trace_region() {
        let (mem, layout) = run(0, self_send);
        assert_eq!(layout.trace_stride, 0);
        assert_eq!(layout.trace, layout.outboxes);
        assert!(TraceHeader::read(&mem, &layout, 0).is_none());
    }
}
