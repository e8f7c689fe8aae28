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
//! Timestamps come from [`shim::clock_ns`] (`%globaltimer` on the GPU, the
//! emulator's monotonic clock on the host, 0 under loom) and the SM from
//! [`shim::sm_id`] (`%smid`; the emulator's worker thread).
//!
//! The hooks are called once per event site of the engine and of the
//! blocking calls; each tests the config inline and does its work in a
//! non-inlined function with scalar arguments, so a kernel that does not
//! trace keeps its registers (docs/performance.md, "Tracing").
//!
//! [`WorldConfig::trace_events`]: crate::state::WorldConfig::trace_events

use crate::error::Error;
use crate::memory::{Core, RequestRecord, SlotWord};
use crate::shim::{self, Ordering};
use crate::state::{Layout, TRACE_EVENT_BYTES, TRACE_HEADER_BYTES};
use bytemuck::{Pod, Zeroable};

/// What a [`TraceEvent`] records. The meaning of the event's `peer`, `tag`,
/// `bytes`, `call` and `arg` fields depends on it (see each variant).
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceKind {
    /// A send was posted (a blocking send's record or an immediate send's
    /// request): `peer` the destination, `tag`, `bytes` the message's
    /// length, `arg` the request record's index.
    SendPosted = 1,
    /// A receive was posted: `peer` the source filter (-1 any), `tag` the
    /// tag filter (-1 any), `bytes` the buffer's capacity, `arg` the record
    /// index.
    ReceivePosted = 2,
    /// A send's message was published in a slot and pushed on the
    /// destination's inbox: `peer` the destination, `tag`, `bytes`, `arg`
    /// the message's sequence number (its sender's count of messages sent
    /// before it). `(this rank, arg)` names the message.
    Sent = 3,
    /// A receive (or a matched probe) took a message out of matching: `peer`
    /// its sender, `tag`, `bytes` its length, `arg` its sequence number:
    /// `(peer, arg)` is the message of the sender's [`TraceKind::Sent`].
    Matched = 4,
    /// A send's record completed: `peer` the destination, `tag`, `bytes`,
    /// `arg` the record index.
    SendCompleted = 5,
    /// A receive's record completed: `peer` the message's source, `tag`,
    /// `bytes` the message's length, `arg` the record index.
    ReceiveCompleted = 6,
    /// A probe found a message: `peer` its source, `tag`, `bytes` its
    /// length, `call` the probe's `wait::Call` code (probe or immediate probe).
    Probe = 7,
    /// The rank entered a collective: `call` its `wait::Call` code, `peer`
    /// its root (-2 for none).
    CollectiveEnter = 8,
    /// The rank returned successfully from the collective it entered last:
    /// `call` its code. A collective that returns an error records no leave
    /// event (docs/tracing.md).
    CollectiveLeave = 9,
    /// A wait that blocked (its first poll failed) ended with its
    /// operation done (a wait given up on an abort or a timeout records
    /// none; the deadlock report says where it stood): `call` the
    /// operation, `peer` and `tag` as in the deadlock report, `arg` how long
    /// it blocked in nanoseconds (it began `arg` before `time_ns`).
    Blocked = 10,
}

impl TraceKind {
    /// Every kind, in code order.
    pub const ALL: [TraceKind; 10] = [
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
    ];

    /// The kind of a stored code, `None` for a code this version never writes.
    pub fn from_code(code: u16) -> Option<TraceKind> {
        TraceKind::ALL.iter().copied().find(|k| *k as u16 == code)
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
    pub kind: u16,
    /// A `wait::Call` code (probes, collectives, blocked waits), else 0.
    pub call: u16,
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
}

// ---------------------------------------------------------------------------
// Recording

/// Appends one event to the rank's buffer, or counts it dropped when the
/// buffer is full. Scalar arguments: see `engine::progress_words`.
#[inline(never)]
#[cold]
#[allow(clippy::too_many_arguments)]
fn record_words(base: u64, rank: u32, kind: u32, call: u32, peer: i32, tag: i32, bytes: u32, arg: u64) {
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
            kind: kind as u16,
            call: call as u16,
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

/// Records an event of `kind` with the given fields, if the rank traces.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn event(w: &Core, kind: TraceKind, call: u32, peer: i32, tag: i32, bytes: u32, arg: u64) {
    if on(w) {
        record_words(w.base as u64, w.rank, kind as u32, call, peer, tag, bytes, arg);
    }
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
    let last = crate::memory::mine!(&core, active_tail);
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
        if crate::memory::RecordState::from_code(r.state).is_some_and(|s| s.is_send()) {
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
    record_words(base, rank, kind as u32, 0, r.peer, r.tag, bytes, i as u64);
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
    slot_words(base, rank, id, TraceKind::Matched as u32, 0);
}

/// A probe (`call`) found arrived slot `id`.
#[inline(always)]
pub(crate) fn probed(w: &Core, id: u32, call: u32) {
    if on(w) {
        slot_words(w.base as u64, w.rank, id, TraceKind::Probe as u32, call);
    }
}

/// An event about slot `id`: its envelope and sequence number.
#[inline(never)]
#[cold]
fn slot_words(base: u64, rank: u32, id: u32, kind: u32, call: u32) {
    let core = Core {
        base: base as *mut u8,
        rank,
    };
    let w = &core;
    // Relaxed: the slot's header was acquired when the rank took it from its
    // inbox (`engine::drain`), and only this rank acts on it now.
    let word = |f| w.slot_word(id, f).load(Ordering::Relaxed);
    let source = (id / w.slots_per_rank()) as i32;
    record_words(
        base,
        rank,
        kind,
        call,
        source,
        word(SlotWord::Tag) as i32,
        word(SlotWord::Bytes),
        word(SlotWord::Sequence) as u64,
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
    use crate::memory::WaitRecord;
    use core::mem::offset_of;
    record_words(
        base,
        rank,
        TraceKind::Blocked as u32,
        word(offset_of!(WaitRecord, operation)),
        word(offset_of!(WaitRecord, peer)) as i32,
        word(offset_of!(WaitRecord, tag)) as i32,
        0,
        waited,
    );
}

/// The span of one collective call: [`TraceKind::CollectiveEnter`] when
/// made, [`TraceKind::CollectiveLeave`] when [`Span::leave`] passes the
/// call's result on, if it is a success. A call that returns an error
/// early has no leave event (the host ends its span at the rank's next
/// event): a leave on every path (a `Drop`) keeps the error's words in
/// local memory across the hook, which costs every collective stack space
/// whether or not the rank traces.
pub(crate) struct Span {
    base: *mut u8,
    rank: u32,
    call: u32,
}

impl Span {
    /// Enters collective `call` (a `wait::Call` code) with root `root` (-2: none).
    #[inline(always)]
    pub(crate) fn enter(w: &Core, call: u32, root: i32) -> Span {
        event(w, TraceKind::CollectiveEnter, call, root, -1, 0, 0);
        Span {
            base: w.base,
            rank: w.rank,
            call,
        }
    }

    /// Leaves the collective with result `r`, which it returns.
    #[inline(always)]
    pub(crate) fn leave(self, r: Result<(), Error>) -> Result<(), Error> {
        if r.is_ok() {
            let w = Core {
                base: self.base,
                rank: self.rank,
            };
            event(&w, TraceKind::CollectiveLeave, self.call, -2, -1, 0, 0);
        }
        r
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! A one-rank world on a plain host thread: the events of a self-send
    //! and its receive, and a full buffer. The emulator tests every kind
    //! across ranks (host/tests/trace.rs).
    extern crate std;
    use super::*;
    use crate::state::WorldConfig;
    use crate::topology::{Communicator, World};
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
        // Nothing written past the buffer: the world ends with it.
        assert_eq!(layout.trace_of(0) + layout.trace_stride, layout.total);
    }

    #[test]
    fn an_untraced_world_has_no_trace_region() {
        let (mem, layout) = run(0, self_send);
        assert_eq!(layout.trace_stride, 0);
        assert_eq!(layout.trace, layout.total);
        assert!(TraceHeader::read(&mem, &layout, 0).is_none());
    }
}
