//! Point-to-point communication (MPI standard chapter 3).
//!
//! # Protocol
//! The model of the thesis "MPI within a GPU" (B. D. Young, 2009, section
//! 5.3): a sender buffers its message in a slot of its own outbox in global
//! memory, and the receiver searches the sender's outbox for a matching
//! envelope; sequence numbers give non-overtaking. Limits removed:
//! - a full outbox makes the sender wait for a receiver to free a slot (the
//!   thesis returned `MPI_ERR_NO_SPACE`); because slots belong to the sender,
//!   one receiver receiving from many senders in any order (the thesis's
//!   point-to-point pi) never runs out of room;
//! - `ANY_SOURCE` (absent from the thesis): every rank has a count of the
//!   messages published to it and not yet received; while it is non-zero a
//!   receive from any source scans the senders' outboxes;
//! - `ANY_TAG`, zero-length messages, any `Pod` datatype;
//! - a message larger than a slot goes by rendezvous: the slot carries the
//!   envelope, then either the receiver copies straight from the sender's
//!   buffer (when it is shared memory: always on the emulator, global memory
//!   on the GPU) or the rest streams through the same slot, chunk by chunk.
//!
//! A slot's state word (64 bits) holds the state in its low 3 bits, once
//! published the destination rank above them, and in its high half the low
//! 32 bits of the message's sequence number; a receiver that reads `FULL`
//! for itself owns the message: no other rank may change that slot until it
//! answers.
//!
//! Non-overtaking (MPI 3.5): a sender numbers its messages and, after
//! publishing each one, stores how many it has published (release). A
//! receive loads that count (acquire), then every slot's state and tag in
//! one batch of loads, and takes the matching message with the lowest
//! number among those the count covers: all of them are visible, so none
//! that matches can be missed, also under `ANY_TAG`/`ANY_SOURCE`. The thesis
//! rescanned until the lowest match was stable, at a memory round trip per
//! slot and pass; here the count, the batch and the matched envelope are
//! three dependent loads before the payload.
//!
//! | from | to | by | meaning |
//! |---|---|---|---|
//! | FREE | FULL(dest) | sender | envelope (and first chunk) published |
//! | FULL | FREE | receiver | eager message consumed |
//! | FULL | CTS | receiver | streaming: send the next chunk |
//! | CTS | FULL | sender | streaming: next chunk published |
//! | FULL | DONE | receiver | rendezvous finished (or cut short by an error) |
//! | DONE | FREE | sender | sender returns |
//! | FULL | CLAIMED | receiver | matched probe (`Message`): out of matching; relaxed, as only this receiver acts on it and the envelope was acquired by the scan |
//! | CLAIMED | FREE, CTS, DONE | receiver | the matched receive, as from FULL (same release stores, same pairings) |
//!
//! A synchronous send (`MPI_Ssend`) of a message that fits a slot waits,
//! after FREE -> FULL, until the slot is FREE again (acquire, pairing with
//! the receiver's release of FREE after its copy): the receive has started.
//! A larger one waits for DONE, as every rendezvous does. CLAIMED is not a
//! started receive: a matched probe does not complete a synchronous send.
//!
//! # Requests
//! The state machines below (`SendOp`, `RecvOp`) are the one engine:
//! blocking calls poll one through `wait::wait_for`; requests
//! ([`crate::request`]) keep theirs in their scope's table, polled by every
//! request call of the rank. Ordering among one rank's posted requests
//! (MPI 3.5): a send claims a slot (and so its number) only after every
//! earlier posted send did; a receive takes a message only if no earlier
//! posted, still unmatched receive accepts it. Blocking calls neither poll
//! nor defer to pending requests (registers; see `request`).

use crate::datatype::{Buffer, BufferMut, Datatype, Equivalence, ID_BYTE};
use crate::error::Error;
use crate::shim::{self, AtomicU32, AtomicU64, Backoff, Ordering};
use crate::state::FLAG_FORCE_STREAMING;
use crate::topology::{AnyProcess, Process, World, ANY_SOURCE, PROC_NULL};
use crate::wait::{wait_for, Operation, WaitFor};

/// `MPI_ANY_TAG`.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB`: the largest tag (the standard asks for at least 32767; here `i32::MAX`).
pub const TAG_UB: i32 = i32::MAX;

pub(crate) const FREE: u32 = 0;
pub(crate) const FULL: u32 = 2;
pub(crate) const CTS: u32 = 3;
pub(crate) const DONE: u32 = 4;
pub(crate) const CLAIMED: u32 = 5;
pub(crate) const STATE_BITS: u32 = 3;
pub(crate) const STATE_MASK: u32 = (1 << STATE_BITS) - 1;

/// The state word of a slot in `state` addressed to `dest` (low half).
const fn state_for(dest: u32, state: u32) -> u64 {
    ((dest << STATE_BITS) | state) as u64
}

/// The state word of a published message: FULL for `dest`, with the low 32
/// bits of the message's sequence number in the high half, so that one
/// atomic load gives a state and the number of the message it belongs to.
const fn full_word(dest: u32, sequence: u64) -> u64 {
    (sequence << 32) | state_for(dest, FULL)
}

/// The state bits of a state word.
const fn state_of(word: u64) -> u32 {
    word as u32 & STATE_MASK
}

/// Whether a message numbered `sequence` (low 32 bits) is counted by a
/// published count of `published` (low 32 bits): `sequence < published`,
/// modulo 2^32. Numbers in flight from one sender are far closer than 2^31.
const fn counted(sequence: u32, published: u32) -> bool {
    let age = published.wrapping_sub(sequence);
    age != 0 && age <= i32::MAX as u32
}

pub(crate) const KIND_EAGER: u32 = 0;
pub(crate) const KIND_DIRECT: u32 = 1;
pub(crate) const KIND_STREAM: u32 = 2;
pub(crate) const KIND_CHUNK: u32 = 3;

// Envelope words (byte offsets) inside a slot, each one atomic access.
/// u64: state in the low half (see `state_for`), sequence in the high half.
pub(crate) const W_STATE: usize = 0;
/// u64: tag in the low half, kind in the high half.
pub(crate) const W_HEAD: usize = 8;
/// u64: datatype id in the low half, message bytes in the high half.
pub(crate) const W_TYPE_BYTES: usize = 16;
/// u32: bytes of payload in the slot (first or current chunk).
const W_CHUNK: usize = 24;
/// u64: address of the sender's buffer (rendezvous).
const W_POINTER: usize = 32;
/// Slots whose words one pass of a scan loads before looking at any, so
/// that the loads overlap instead of costing a memory round trip each.
const SCAN_BATCH: usize = 8;

const fn head_word(tag: i32, kind: u32) -> u64 {
    ((kind as u64) << 32) | tag as u32 as u64
}

/// The envelope of a received or probed message (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub(crate) source: i32,
    pub(crate) tag: i32,
    pub(crate) bytes: u32,
    pub(crate) datatype: u32,
}

impl Status {
    /// The empty status (MPI 3.7.3): source `ANY_SOURCE`, tag `ANY_TAG`,
    /// count 0; what a wait on a null request returns.
    pub const fn empty() -> Status {
        Status {
            source: ANY_SOURCE,
            tag: ANY_TAG,
            bytes: 0,
            datatype: ID_BYTE,
        }
    }
    /// The sender's rank (`MPI_SOURCE`); `PROC_NULL` for a receive from the null process.
    pub fn source_rank(&self) -> i32 {
        self.source
    }
    /// The message's tag (`MPI_TAG`); `ANY_TAG` for a receive from the null process.
    pub fn tag(&self) -> i32 {
        self.tag
    }
    /// Length of the message in bytes (the whole message, also when truncated).
    pub fn bytes(&self) -> u32 {
        self.bytes
    }
    /// The datatype id the message was sent with.
    pub fn datatype_id(&self) -> u32 {
        self.datatype
    }
    /// Number of `T` elements in the message (`MPI_Get_count`); `None`
    /// (`MPI_UNDEFINED`) when the length is not a whole number of `T`.
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        let size = T::DATATYPE.size;
        if size == 0 || !self.bytes.is_multiple_of(size) {
            None
        } else {
            Some((self.bytes / size) as usize)
        }
    }
}

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
        let mut v = T::zeroed();
        let s = self.receive_into(&mut v)?;
        Ok((v, s))
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
    /// The source rank for matching (`ANY_SOURCE` for any).
    #[doc(hidden)]
    fn source_filter(&self) -> i32;
    /// The world.
    #[doc(hidden)]
    fn source_world(&self) -> &World;
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

impl World {
    fn slot_u32(&self, owner: u32, slot: u32, word: usize) -> &AtomicU32 {
        // SAFETY: `layout.slot` is inside the world memory; envelope words are
        // 4-byte aligned and only ever accessed atomically.
        unsafe { shim::atomic_u32_at(self.base, self.layout.slot(owner, slot) + word) }
    }

    fn slot_u64(&self, owner: u32, slot: u32, word: usize) -> &AtomicU64 {
        // SAFETY: as in `slot_u32`; the 64-bit words are 8-byte aligned.
        unsafe { shim::atomic_u64_at(self.base, self.layout.slot(owner, slot) + word) }
    }

    /// How many messages the owner has published: every message numbered
    /// below it is in a slot (or already received). Only the owner writes it.
    fn published(&self, owner: u32) -> &AtomicU64 {
        // SAFETY: the outbox header's first word, 8-byte aligned, atomic-only.
        unsafe { shim::atomic_u64_at(self.base, self.layout.outbox(owner)) }
    }

    /// Messages published to `rank` and not yet matched.
    fn incoming(&self, rank: u32) -> &AtomicU32 {
        // SAFETY: the outbox header's third word, 4-byte aligned, atomic-only.
        unsafe { shim::atomic_u32_at(self.base, self.layout.outbox(rank) + 8) }
    }

    fn payload(&self, owner: u32, slot: u32) -> *mut u8 {
        // SAFETY: the payload follows the envelope inside the slot.
        unsafe {
            self.base
                .add(self.layout.slot(owner, slot) + crate::state::ENVELOPE_BYTES)
        }
    }

    pub(crate) fn max_message_bytes(&self) -> u32 {
        self.max_message_bytes
    }
}

/// How a send completes (MPI 3.4 modes, and the staging of a replace).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendMode {
    /// Standard mode: done once buffered (eager) or taken (rendezvous).
    Standard,
    /// Synchronous mode (`MPI_Ssend`): done once the receiver has taken the
    /// message out of its slot, i.e. the matching receive has started.
    Synchronous,
    /// A `send_receive_replace`: a large message always streams through the
    /// slot (never read from the buffer by the receiver), so that the bytes
    /// already copied out ([`SendOp::copied`]) may be overwritten.
    Replace,
}

/// A send in progress: a state machine polled by the blocking calls and by
/// requests. The buffer is a raw range: the caller (a blocking call holding
/// the borrow, or a request tied to its scope's lifetime) keeps it alive and
/// unwritten until the send is done.
pub(crate) struct SendOp {
    dest: u32,
    tag: i32,
    datatype: Datatype,
    data: *const u8,
    len: usize,
    mode: SendMode,
    /// Posting order among this rank's operations (see `request`).
    pub(crate) post: u32,
    phase: SendPhase,
}

#[derive(Clone, Copy)]
enum SendPhase {
    Claim,
    AwaitReceiver {
        slot: u32,
    },
    /// Synchronous eager send: published, waiting for the receiver to free it.
    AwaitMatch {
        slot: u32,
    },
    Stream {
        slot: u32,
        offset: usize,
        full: u64,
    },
    Done,
}

impl SendOp {
    pub(crate) fn new(
        world: &World,
        dest: i32,
        tag: i32,
        datatype: Datatype,
        data: *const u8,
        len: usize,
        mode: SendMode,
    ) -> Result<Option<Self>, Error> {
        check_send_tag(tag)?;
        if dest == PROC_NULL {
            return Ok(None);
        }
        world.check_rank(dest)?;
        if len > world.max_message_bytes() as usize {
            return Err(Error::BufferTooLarge {
                bytes: len as u32,
                limit: world.max_message_bytes(),
            });
        }
        Ok(Some(SendOp {
            dest: dest as u32,
            tag,
            datatype,
            data,
            len,
            mode,
            post: world.posted.get(),
            phase: SendPhase::Claim,
        }))
    }

    /// The send's own envelope: what a completed send request reports.
    pub(crate) fn status(&self) -> Status {
        Status {
            source: self.dest as i32,
            tag: self.tag,
            bytes: self.len as u32,
            datatype: self.datatype.id,
        }
    }

    /// What a wait for this send records.
    pub(crate) fn what(&self) -> WaitFor {
        WaitFor {
            operation: Operation::Send,
            peer: self.dest as i32,
            tag: self.tag,
        }
    }

    /// Whether the send still waits to be numbered (no slot yet): later
    /// sends must not claim a slot before it (non-overtaking, MPI 3.5).
    pub(crate) fn unclaimed(&self) -> bool {
        matches!(self.phase, SendPhase::Claim)
    }

    /// Bytes of the buffer that no rank reads any more (all of them once
    /// the send is done or the message sits in a slot).
    pub(crate) fn copied(&self) -> usize {
        match self.phase {
            SendPhase::Claim | SendPhase::AwaitReceiver { .. } => 0,
            SendPhase::Stream { offset, .. } => offset,
            SendPhase::AwaitMatch { .. } | SendPhase::Done => usize::MAX,
        }
    }

    /// Advances the send; `Some` when it finished. Calls `progressed` on the
    /// backoff whenever it changed shared state without finishing.
    pub(crate) fn poll(&mut self, w: &World, backoff: &mut Backoff) -> Option<Result<(), Error>> {
        let slot_bytes = w.layout.slot_bytes as usize;
        match self.phase {
            SendPhase::Done => Some(Ok(())),
            SendPhase::Claim => {
                // An earlier send still without a slot is numbered first.
                if crate::request::earlier_unclaimed_send(w, self.post) {
                    return None;
                }
                let me = w.rank;
                let slot = (0..w.layout.slots_per_rank).find(|&s| {
                    // Acquire pairs with the receiver's Release store of FREE:
                    // its last reads of this slot happen before our writes
                    // below. Only the owner moves a slot out of FREE.
                    state_of(w.slot_u64(me, s, W_STATE).load(Ordering::Acquire)) == FREE
                })?;
                let sequence = w.next_sequence.get();
                w.next_sequence.set(sequence + 1);
                let total = self.len;
                let kind = if total <= slot_bytes {
                    KIND_EAGER
                } else if self.mode != SendMode::Replace
                    && w.flags & FLAG_FORCE_STREAMING == 0
                    && shim::is_shared_address(self.data)
                {
                    KIND_DIRECT
                } else {
                    KIND_STREAM
                };
                let first = if kind == KIND_DIRECT {
                    0
                } else {
                    total.min(slot_bytes)
                };
                w.slot_u64(me, slot, W_HEAD)
                    .store(head_word(self.tag, kind), Ordering::Relaxed);
                w.slot_u64(me, slot, W_TYPE_BYTES).store(
                    ((total as u64) << 32) | self.datatype.id as u64,
                    Ordering::Relaxed,
                );
                w.slot_u32(me, slot, W_CHUNK)
                    .store(first as u32, Ordering::Relaxed);
                w.slot_u64(me, slot, W_POINTER)
                    .store(self.data as u64, Ordering::Relaxed);
                // SAFETY: the slot is FREE and ours; its payload holds
                // `slot_bytes >= first` bytes; the buffer holds `len >= first`.
                unsafe { shim::copy_bytes(w.payload(me, slot), self.data, first) };
                let full = full_word(self.dest, sequence);
                // Release pairs with the Acquire loads of the state by the
                // receiver's rendezvous steps.
                w.slot_u64(me, slot, W_STATE).store(full, Ordering::Release);
                // Release pairs with the receiver's Acquire load of our
                // published count in `scan_sender`: a receiver that counts
                // this message sees its state, envelope and payload.
                w.published(me).store(sequence + 1, Ordering::Release);
                // Release pairs with the receiver's Acquire load of its count
                // in `find_match`: a receive from any source that counts this
                // message finds it published, so its scan never spins on a
                // count that runs ahead of what it can see.
                w.incoming(self.dest).fetch_add(1, Ordering::Release);
                self.phase = match kind {
                    KIND_EAGER if self.mode == SendMode::Synchronous => SendPhase::AwaitMatch { slot },
                    KIND_EAGER => SendPhase::Done,
                    KIND_DIRECT => SendPhase::AwaitReceiver { slot },
                    _ => SendPhase::Stream {
                        slot,
                        offset: first,
                        full,
                    },
                };
                if let SendPhase::Done = self.phase {
                    Some(Ok(()))
                } else {
                    backoff.progressed();
                    None
                }
            }
            SendPhase::AwaitMatch { slot } => {
                // Acquire pairs with the receiver's Release store of FREE
                // after it copied the payload: the receive has started (and
                // taken the message). CLAIMED (a matched probe) is not yet a
                // receive: keep waiting. Only this rank moves the slot out of
                // FREE again, so FREE stays until we see it.
                if state_of(w.slot_u64(w.rank, slot, W_STATE).load(Ordering::Acquire)) != FREE {
                    return None;
                }
                self.phase = SendPhase::Done;
                Some(Ok(()))
            }
            SendPhase::AwaitReceiver { slot } => {
                let st = w.slot_u64(w.rank, slot, W_STATE);
                // Acquire pairs with the receiver's Release store of DONE: its
                // copy out of our buffer is finished before we return it.
                if state_of(st.load(Ordering::Acquire)) != DONE {
                    return None;
                }
                // Relaxed: only this rank claims its slots again, after this store.
                st.store(FREE as u64, Ordering::Relaxed);
                self.phase = SendPhase::Done;
                Some(Ok(()))
            }
            SendPhase::Stream { slot, offset, full } => {
                let me = w.rank;
                let st = w.slot_u64(me, slot, W_STATE);
                // Acquire pairs with the receiver's Release store of CTS or DONE:
                // it finished reading the slot's previous chunk.
                match state_of(st.load(Ordering::Acquire)) {
                    DONE => {
                        // Relaxed: only this rank claims its slots again.
                        st.store(FREE as u64, Ordering::Relaxed);
                        self.phase = SendPhase::Done;
                        Some(Ok(()))
                    }
                    CTS if offset < self.len => {
                        let n = (self.len - offset).min(slot_bytes);
                        // SAFETY: the receiver asked for this chunk (CTS) and does
                        // not touch the payload until FULL; `offset + n <= len`.
                        unsafe { shim::copy_bytes(w.payload(me, slot), self.data.add(offset), n) };
                        w.slot_u32(me, slot, W_CHUNK).store(n as u32, Ordering::Relaxed);
                        w.slot_u64(me, slot, W_HEAD)
                            .store(head_word(self.tag, KIND_CHUNK), Ordering::Relaxed);
                        // Release pairs with the receiver's Acquire wait for FULL.
                        st.store(full, Ordering::Release);
                        self.phase = SendPhase::Stream {
                            slot,
                            offset: offset + n,
                            full,
                        };
                        backoff.progressed();
                        None
                    }
                    _ => None,
                }
            }
        }
    }
}

/// A receive in progress. Like [`SendOp`], its buffer is a raw range kept
/// alive and untouched by the caller until the receive is done.
pub(crate) struct RecvOp {
    source: i32,
    tag: i32,
    datatype: Datatype,
    buf: *mut u8,
    capacity: usize,
    /// Posting order among this rank's operations (see `request`).
    pub(crate) post: u32,
    phase: RecvPhase,
}

#[derive(Clone, Copy)]
enum RecvPhase {
    Match,
    /// A matched probe claimed this message (`Message`); no matching left.
    Claimed {
        env: Envelope,
    },
    Stream {
        slot: u32,
        received: usize,
        wanted: usize,
        outcome: Outcome,
    },
    Done {
        outcome: Outcome,
    },
}

#[derive(Clone, Copy)]
struct Outcome {
    status: Status,
    error: Option<Error>,
}

impl Outcome {
    fn result(self) -> Result<Status, Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.status),
        }
    }
}

#[derive(Clone, Copy)]
struct Envelope {
    slot: u32,
    status: Status,
    kind: u32,
    chunk: u32,
}

impl World {
    /// The next message for this rank from `source` (or any source) with
    /// `tag` (or any tag), by the rules in the module docs.
    fn find_match(&self, source: i32, tag: i32) -> Option<Envelope> {
        if source != ANY_SOURCE {
            return self.scan_sender(source as u32, tag);
        }
        // Acquire pairs with the senders' Release increments: a counted
        // message is published (see `scan_sender`).
        if self.incoming(self.rank).load(Ordering::Acquire) == 0 {
            return None;
        }
        let ranks = self.layout.ranks;
        (1..=ranks).map(|i| (self.rank + i) % ranks).find_map(|s| {
            if self.has_full_slot(s) {
                self.scan_sender(s, tag)
            } else {
                None
            }
        })
    }

    /// A quick look, without ordering, whether `owner` has a slot FULL for
    /// this rank: lets a receive from any source pass over silent senders
    /// with one batch of loads each.
    fn has_full_slot(&self, owner: u32) -> bool {
        let full = state_for(self.rank, FULL) as u32;
        let slots = self.layout.slots_per_rank as usize;
        let mut first = 0;
        while first < slots {
            let mut states = [0u64; SCAN_BATCH];
            for (i, state) in states.iter_mut().enumerate() {
                if first + i < slots {
                    // Relaxed: a hint; `scan_sender` reads again with ordering.
                    *state = self
                        .slot_u64(owner, (first + i) as u32, W_STATE)
                        .load(Ordering::Relaxed);
                }
            }
            if states[..(slots - first).min(SCAN_BATCH)]
                .iter()
                .any(|&w| w as u32 == full)
            {
                return true;
            }
            first += SCAN_BATCH;
        }
        false
    }

    /// The lowest-numbered matching message for this rank in `owner`'s
    /// outbox among the messages `owner` had published when the scan began.
    fn scan_sender(&self, owner: u32, tag: i32) -> Option<Envelope> {
        let full = state_for(self.rank, FULL) as u32;
        // Acquire pairs with the owner's Release store of its published
        // count: every message numbered below it has its state, envelope and
        // payload visible to the loads below, so the matching messages among
        // them are all seen and the lowest is the next one (MPI 3.5). A
        // message published after this load may be seen FULL too, but its
        // envelope may not be visible yet: it is left for a later scan.
        let published = self.published(owner).load(Ordering::Acquire) as u32;
        let slots = self.layout.slots_per_rank as usize;
        // (age of the message, slot, tag, kind): the oldest match so far.
        let mut best: Option<(u32, u32, i32, u32)> = None;
        let mut first = 0;
        while first < slots {
            let mut states = [0u64; SCAN_BATCH];
            let mut heads = [0u64; SCAN_BATCH];
            for i in 0..SCAN_BATCH {
                if first + i < slots {
                    let slot = (first + i) as u32;
                    // Relaxed: ordered after the Acquire load above; a state
                    // and the sequence it carries come from one atomic load.
                    states[i] = self.slot_u64(owner, slot, W_STATE).load(Ordering::Relaxed);
                    heads[i] = self.slot_u64(owner, slot, W_HEAD).load(Ordering::Relaxed);
                }
            }
            for i in 0..SCAN_BATCH.min(slots - first) {
                let sequence = (states[i] >> 32) as u32;
                if states[i] as u32 != full || !counted(sequence, published) {
                    continue;
                }
                let (t, kind) = (heads[i] as u32 as i32, (heads[i] >> 32) as u32);
                if kind == KIND_CHUNK || (tag != ANY_TAG && t != tag) {
                    continue;
                }
                let age = published.wrapping_sub(sequence);
                if best.is_none_or(|(oldest, ..)| age > oldest) {
                    best = Some((age, (first + i) as u32, t, kind));
                }
            }
            first += SCAN_BATCH;
        }
        let (_, slot, t, kind) = best?;
        // Relaxed: a counted message's envelope is visible (see above), and
        // stays as it is until this rank answers (only the destination moves
        // a slot out of FULL).
        let type_bytes = self.slot_u64(owner, slot, W_TYPE_BYTES).load(Ordering::Relaxed);
        let chunk = self.slot_u32(owner, slot, W_CHUNK).load(Ordering::Relaxed);
        Some(Envelope {
            slot,
            status: Status {
                source: owner as i32,
                tag: t,
                bytes: (type_bytes >> 32) as u32,
                datatype: type_bytes as u32,
            },
            kind,
            chunk,
        })
    }
}

impl RecvOp {
    pub(crate) fn new(
        world: &World,
        source: i32,
        tag: i32,
        datatype: Datatype,
        buf: *mut u8,
        capacity: usize,
    ) -> Result<Self, Error> {
        check_receive_tag(tag)?;
        let phase = if source == PROC_NULL {
            RecvPhase::Done {
                outcome: Outcome {
                    status: null_status(datatype),
                    error: None,
                },
            }
        } else {
            if source != ANY_SOURCE {
                world.check_rank(source)?;
            }
            RecvPhase::Match
        };
        Ok(RecvOp {
            source,
            tag,
            datatype,
            buf,
            capacity,
            post: world.posted.get(),
            phase,
        })
    }

    /// What a wait for this receive records.
    pub(crate) fn what(&self) -> WaitFor {
        WaitFor {
            operation: Operation::Receive,
            peer: self.source,
            tag: self.tag,
        }
    }

    /// Whether this receive still matches and would accept a message with
    /// `status`'s envelope (MPI 3.5: an earlier posted receive gets it first).
    pub(crate) fn would_accept(&self, status: &Status) -> bool {
        matches!(self.phase, RecvPhase::Match)
            && (self.source == ANY_SOURCE || self.source == status.source)
            && (self.tag == ANY_TAG || self.tag == status.tag)
    }

    pub(crate) fn poll(&mut self, w: &World, backoff: &mut Backoff) -> Option<Result<Status, Error>> {
        self.poll_limited(w, backoff, usize::MAX)
    }

    /// Advances the receive, writing only the first `allowed` bytes of the
    /// buffer (the rest still being sent by a `send_receive_replace`).
    pub(crate) fn poll_limited(
        &mut self,
        w: &World,
        backoff: &mut Backoff,
        allowed: usize,
    ) -> Option<Result<Status, Error>> {
        let me = w.rank;
        match self.phase {
            RecvPhase::Done { outcome } => Some(outcome.result()),
            RecvPhase::Match => {
                let env = w.find_match(self.source, self.tag)?;
                // An earlier posted receive that accepts this message takes
                // it first (its next poll does).
                if crate::request::earlier_receive_accepts(w, self.post, &env.status) {
                    return None;
                }
                self.start(w, backoff, env, true, allowed)
            }
            RecvPhase::Claimed { env } => self.start(w, backoff, env, false, allowed),
            RecvPhase::Stream {
                slot,
                received,
                wanted,
                outcome,
            } => {
                let owner = outcome.status.source as u32;
                let st = w.slot_u64(owner, slot, W_STATE);
                // Acquire pairs with the sender's Release store of FULL for this chunk.
                if st.load(Ordering::Acquire) as u32 != state_for(me, FULL) as u32 {
                    return None;
                }
                let chunk = w.slot_u32(owner, slot, W_CHUNK).load(Ordering::Relaxed) as usize;
                let n = chunk.min(wanted - received);
                if received + n > allowed {
                    return None;
                }
                // SAFETY: FULL slot; `received + n <= wanted <= capacity`.
                unsafe { shim::copy_bytes(self.buf.add(received), w.payload(owner, slot), n) };
                let received = received + n;
                if received < wanted {
                    // Release pairs with the sender's Acquire wait for CTS.
                    st.store(state_for(me, CTS), Ordering::Release);
                    self.phase = RecvPhase::Stream {
                        slot,
                        received,
                        wanted,
                        outcome,
                    };
                    backoff.progressed();
                    return None;
                }
                // Release pairs with the sender's Acquire wait for DONE.
                st.store(state_for(me, DONE), Ordering::Release);
                self.phase = RecvPhase::Done { outcome };
                Some(outcome.result())
            }
        }
    }

    /// Receives the matched message `env` (FULL or CLAIMED for this rank,
    /// so owned by it). `uncounted`: the message still counts in this rank's
    /// incoming count (a matched probe already took it out).
    fn start(
        &mut self,
        w: &World,
        backoff: &mut Backoff,
        env: Envelope,
        uncounted: bool,
        allowed: usize,
    ) -> Option<Result<Status, Error>> {
        let me = w.rank;
        let status = env.status;
        let capacity = self.capacity;
        let error = if self.datatype.id != ID_BYTE && self.datatype.id != status.datatype {
            Some(Error::TypeMismatch {
                status,
                expected: self.datatype.id,
            })
        } else if status.bytes as usize > capacity {
            Some(Error::Truncate {
                status,
                capacity_bytes: capacity as u32,
            })
        } else {
            None
        };
        let wanted = match error {
            Some(Error::TypeMismatch { .. }) => 0,
            _ => (status.bytes as usize).min(capacity),
        };
        let first = match env.kind {
            KIND_EAGER | KIND_DIRECT => wanted,
            _ => (env.chunk as usize).min(wanted),
        };
        if first > allowed {
            return None;
        }
        let outcome = Outcome { status, error };
        let owner = status.source as u32;
        if uncounted {
            // Relaxed: the count is a hint for ANY_SOURCE scans; the message
            // itself is owned through its slot's state word.
            w.incoming(me).fetch_add(u32::MAX, Ordering::Relaxed);
        }
        let st = w.slot_u64(owner, env.slot, W_STATE);
        match env.kind {
            KIND_EAGER => {
                // SAFETY: the slot is FULL (or CLAIMED) for us (acquired in
                // scan_sender) and unchanged until we free it; `wanted <= chunk`.
                unsafe { shim::copy_bytes(self.buf, w.payload(owner, env.slot), wanted) };
                // Release pairs with the owner's Acquire claim: our reads
                // of the payload happen before its next writes; and with a
                // synchronous sender's Acquire wait for FREE.
                st.store(FREE as u64, Ordering::Release);
            }
            KIND_DIRECT => {
                let src = w.slot_u64(owner, env.slot, W_POINTER).load(Ordering::Relaxed) as *const u8;
                // SAFETY: the sender published its buffer's address and
                // stays blocked, buffer untouched, until we store DONE.
                unsafe { shim::copy_bytes(self.buf, src, wanted) };
                // Release pairs with the sender's Acquire wait for DONE.
                st.store(state_for(me, DONE), Ordering::Release);
            }
            _ => {
                let n = first;
                // SAFETY: FULL slot, first chunk of `chunk >= n` bytes.
                unsafe { shim::copy_bytes(self.buf, w.payload(owner, env.slot), n) };
                if n < wanted {
                    // Release pairs with the sender's Acquire wait for CTS.
                    st.store(state_for(me, CTS), Ordering::Release);
                    self.phase = RecvPhase::Stream {
                        slot: env.slot,
                        received: n,
                        wanted,
                        outcome,
                    };
                    backoff.progressed();
                    return None;
                }
                // Release pairs with the sender's Acquire wait for DONE.
                st.store(state_for(me, DONE), Ordering::Release);
            }
        }
        self.phase = RecvPhase::Done { outcome };
        Some(outcome.result())
    }
}

fn probe_once(world: &World, source: i32, tag: i32) -> Option<Status> {
    if source == PROC_NULL {
        return Some(null_status(u8::DATATYPE));
    }
    let env = world.find_match(source, tag)?;
    // A message that an earlier posted receive request takes is not the
    // one a receive posted now would get.
    if crate::request::earlier_receive_accepts(world, world.posted.get(), &env.status) {
        return None;
    }
    Some(env.status)
}

fn check_probe(world: &World, source: i32, tag: i32) -> Result<(), Error> {
    check_receive_tag(tag)?;
    if source != ANY_SOURCE && source != PROC_NULL {
        world.check_rank(source)?;
    }
    Ok(())
}

fn receive_from<B: BufferMut + ?Sized>(
    world: &World,
    source: i32,
    buf: &mut B,
    tag: i32,
) -> Result<Status, Error> {
    let datatype = buf.datatype();
    let bytes = buf.as_bytes_mut();
    let mut op = RecvOp::new(world, source, tag, datatype, bytes.as_mut_ptr(), bytes.len())?;
    wait_for(world, op.what(), |b| op.poll(world, b))
}

fn probe_from(world: &World, source: i32, tag: i32) -> Result<Status, Error> {
    check_probe(world, source, tag)?;
    let what = WaitFor {
        operation: Operation::Probe,
        peer: source,
        tag,
    };
    wait_for(world, what, |_| probe_once(world, source, tag).map(Ok))
}

/// `MPI_Iprobe`: one look; a failed look is a poll (the emulator lets other
/// ranks run, and a rank that only spins on it is part of a livelock report).
fn immediate_probe_from(world: &World, source: i32, tag: i32) -> Result<Option<Status>, Error> {
    check_probe(world, source, tag)?;
    match probe_once(world, source, tag) {
        Some(s) => {
            world.note_progress();
            Ok(Some(s))
        }
        None => {
            let what = WaitFor {
                operation: Operation::ImmediateProbe,
                peer: source,
                tag,
            };
            world.failed_poll(what, 0);
            Ok(None)
        }
    }
}

fn send_to<B: Buffer + ?Sized>(p: &Process<'_>, buf: &B, tag: i32, mode: SendMode) -> Result<(), Error> {
    let w = p.world;
    let bytes = buf.as_bytes();
    let Some(mut op) = SendOp::new(w, p.rank, tag, buf.datatype(), bytes.as_ptr(), bytes.len(), mode)? else {
        return Ok(());
    };
    wait_for(w, op.what(), |b| op.poll(w, b))
}

impl Destination for Process<'_> {
    fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<(), Error> {
        send_to(self, buf, tag, SendMode::Standard)
    }
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
                receive_from(self.world, self.source_filter(), buf, tag)
            }
            fn probe_with_tag(&self, tag: i32) -> Result<Status, Error> {
                probe_from(self.world, self.source_filter(), tag)
            }
            fn immediate_probe_with_tag(&self, tag: i32) -> Result<Option<Status>, Error> {
                immediate_probe_from(self.world, self.source_filter(), tag)
            }
            fn source_filter(&self) -> i32 {
                source_rank_of(self)
            }
            fn source_world(&self) -> &World {
                self.world
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
    env: Envelope,
}

impl<'w> Message<'w> {
    /// The message a matched probe of the null process returns
    /// (`MPI_MESSAGE_NO_PROC`): receiving it returns at once with source
    /// `PROC_NULL`, tag `ANY_TAG` and count 0.
    pub fn no_proc() -> Message<'w> {
        Message {
            world: None,
            env: Envelope {
                slot: 0,
                status: null_status(u8::DATATYPE),
                kind: KIND_EAGER,
                chunk: 0,
            },
        }
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
        let bytes = buf.as_bytes_mut();
        let mut op = RecvOp::claimed(w, this.env, datatype, bytes.as_mut_ptr(), bytes.len());
        wait_for(w, op.what(), |b| op.poll(w, b))
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
            // A receive of zero bytes finishes at its first poll (eager:
            // FREE, rendezvous: DONE, nothing copied), so no wait.
            let mut op = RecvOp::claimed(w, self.env, u8::DATATYPE, core::ptr::null_mut(), 0);
            let _ = op.poll(w, &mut Backoff::new());
        }
    }
}

impl RecvOp {
    /// A receive of the message `env` that a matched probe claimed.
    fn claimed(world: &World, env: Envelope, datatype: Datatype, buf: *mut u8, capacity: usize) -> RecvOp {
        RecvOp {
            source: env.status.source,
            tag: env.status.tag,
            datatype,
            buf,
            capacity,
            post: world.posted.get(),
            phase: RecvPhase::Claimed { env },
        }
    }
}

impl World {
    /// Finds the message a receive from `source` with `tag` would get now
    /// and takes it out of matching: FULL -> CLAIMED (the state word's
    /// sequence half kept), and out of this rank's incoming count.
    fn claim_match(&self, source: i32, tag: i32) -> Option<Envelope> {
        let env = self.find_match(source, tag)?;
        if crate::request::earlier_receive_accepts(self, self.posted.get(), &env.status) {
            return None;
        }
        let st = self.slot_u64(env.status.source as u32, env.slot, W_STATE);
        // Relaxed: the slot is FULL for this rank, so only this rank changes
        // it; nobody acts on CLAIMED (the sender waits for FREE, CTS or DONE,
        // other receivers look only for FULL for themselves), and the
        // envelope and payload were acquired by `scan_sender`.
        let word = st.load(Ordering::Relaxed);
        st.store((word & !(STATE_MASK as u64)) | CLAIMED as u64, Ordering::Relaxed);
        // Relaxed: a hint for ANY_SOURCE scans (see `RecvOp::start`).
        self.incoming(self.rank).fetch_add(u32::MAX, Ordering::Relaxed);
        Some(env)
    }
}

fn matched_probe_from(world: &World, source: i32, tag: i32) -> Result<(Message<'_>, Status), Error> {
    check_probe(world, source, tag)?;
    if source == PROC_NULL {
        return Ok((Message::no_proc(), null_status(u8::DATATYPE)));
    }
    let what = WaitFor {
        operation: Operation::Probe,
        peer: source,
        tag,
    };
    let env = wait_for(world, what, |_| world.claim_match(source, tag).map(Ok))?;
    Ok((
        Message {
            world: Some(world),
            env,
        },
        env.status,
    ))
}

fn immediate_matched_probe_from(
    world: &World,
    source: i32,
    tag: i32,
) -> Result<Option<(Message<'_>, Status)>, Error> {
    check_probe(world, source, tag)?;
    if source == PROC_NULL {
        return Ok(Some((Message::no_proc(), null_status(u8::DATATYPE))));
    }
    match world.claim_match(source, tag) {
        Some(env) => {
            world.note_progress();
            Ok(Some((
                Message {
                    world: Some(world),
                    env,
                },
                env.status,
            )))
        }
        None => {
            let what = WaitFor {
                operation: Operation::ImmediateProbe,
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
                matched_probe_from(self.world, source_rank_of(self), tag)
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
                immediate_matched_probe_from(self.world, source_rank_of(self), tag)
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
    let out = msg.as_bytes();
    let send = SendOp::new(
        w,
        destination.rank,
        send_tag,
        msg.datatype(),
        out.as_ptr(),
        out.len(),
        SendMode::Standard,
    )?;
    let datatype = buf.datatype();
    let bytes = buf.as_bytes_mut();
    let recv = RecvOp::new(
        w,
        source.source_filter(),
        receive_tag,
        datatype,
        bytes.as_mut_ptr(),
        bytes.len(),
    )?;
    exchange(w, send, recv, false)
}

/// Polls a send and a receive together until both are done; `replace`: the
/// receive writes only bytes the send has copied out (they share a buffer).
fn exchange(w: &World, mut send: Option<SendOp>, mut recv: RecvOp, replace: bool) -> Result<Status, Error> {
    let mut sent: Option<Result<(), Error>> = if send.is_none() { Some(Ok(())) } else { None };
    let mut received: Option<Result<Status, Error>> = None;
    let what = WaitFor {
        operation: Operation::SendReceive,
        peer: recv.source,
        tag: recv.tag,
    };
    wait_for(w, what, |b| {
        if sent.is_none() {
            if let Some(op) = send.as_mut() {
                sent = op.poll(w, b);
                if sent.is_some() {
                    b.progressed();
                }
            }
        }
        if received.is_none() {
            let allowed = match (&sent, &send) {
                (None, Some(op)) if replace => op.copied(),
                _ => usize::MAX,
            };
            received = recv.poll_limited(w, b, allowed);
            if received.is_some() {
                b.progressed();
            }
        }
        match (sent, received) {
            (Some(Err(e)), _) => Some(Err(e)),
            (Some(Ok(())), Some(r)) => Some(r),
            _ => None,
        }
    })
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
/// Algorithm: the send and the receive progress together, as in
/// [`send_receive_into_with_tags`]. A message that fits a slot is copied
/// into the slot when the send starts, so the buffer is free at once. A
/// larger one always streams through the slot, chunk by chunk, never read
/// by the receiver from the buffer; the receive writes a byte of the buffer
/// only once the send has copied that byte out (chunk `k` in needs chunk
/// `k` out). Each chunk out waits for the destination's request of it,
/// and that destination writes its own chunk `k` only after sending it, so
/// a ring shift of any size completes (no cycle: chunk `k` never waits for
/// chunk `k + 1`). A large message costs a slot round trip per `slot_bytes`.
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
    let bytes = buf.as_bytes_mut();
    let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
    // Both operations use the one pointer: the send reads a byte only before
    // the receive may write it (`exchange` with `replace`).
    let send = SendOp::new(
        w,
        destination.rank,
        send_tag,
        datatype,
        ptr,
        len,
        SendMode::Replace,
    )?;
    let recv = RecvOp::new(w, source.source_filter(), receive_tag, datatype, ptr, len)?;
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
    //! (tests/ of the root crate) and under loom (device/tests/loom.rs).
    extern crate std;
    use super::*;
    use crate::state::WorldConfig;
    use crate::topology::Communicator;
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
        use crate::state::{MessageKind, SlotEnvelope, SlotState};
        let config = WorldConfig::new(1, 1);
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        let base = bytes.as_mut_ptr();
        let read = |slot| {
            // SAFETY: the world memory outlives this view; no rank runs while it is read.
            let memory = unsafe { std::slice::from_raw_parts(base as *const u8, layout.total) };
            SlotEnvelope::read(memory, &layout, 0, slot)
        };
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(base) }.unwrap();
        let me = world.process_at_rank(0);
        me.send_with_tag(&[1u32, 2, 3][..], 9).unwrap();
        let env = read(0);
        assert_eq!(
            (env.state, env.dest, env.tag, env.kind, env.bytes, env.sequence),
            (SlotState::Full, 0, 9, MessageKind::Eager, 12, 0)
        );
        assert!(env.is_unreceived() && !env.is_rendezvous());
        assert_eq!(read(1).state, SlotState::Free);
        let mut got = [0u32; 3];
        me.receive_into_with_tag(&mut got[..], 9).unwrap();
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
