//! The typed layer over the world memory: the `#[repr(C)]` records of the
//! point-to-point engine, their state enums, and the one accessor that does
//! address arithmetic on them.
//!
//! The host lays the regions out ([`crate::layout::Layout`]); this module says
//! what lies inside a region's element, and the host's report decodes the
//! same structs from a copy of the memory (they are `Pod`).
//!
//! Access discipline, per field:
//! - *shared* words (a slot's header, a rank's inbox) are read and written
//!   only through the shim's atomics (`Core::slot_word`, `Core::inbox`);
//! - *private* words (a rank's [`RankHeader`] past its inbox, its
//!   [`RequestRecord`]s) belong to one rank: only that rank touches them while
//!   the kernel runs (plain loads and stores through `Core::rank_header`
//!   and `Core::record`), and the host reads them after it.

use crate::layout::{
    Layout, WorldConfig, CONFIG_OFFSET, LAYOUT_OFFSET, RANK_HEADER_BYTES, RECORD_BYTES, SLOT_HEADER_BYTES,
    SLOT_STATE_BYTES,
};
use bytemuck::{Pod, Zeroable};
use core::marker::PhantomData;

/// Bits of a slot's state word that hold the [`SlotState`]; the destination
/// rank sits above them.
pub const STATE_BITS: u32 = 3;
const STATE_MASK: u32 = (1 << STATE_BITS) - 1;

/// A link to no slot (end of a list).
pub const LINK_NONE: u32 = 0;
/// A slot's push link while its sender has swapped it into an inbox and not
/// yet stored the link to the slot pushed before it.
pub const LINK_PENDING: u32 = u32::MAX;

/// The state of an outbox slot (its state word's low [`STATE_BITS`] bits).
///
/// | from | to | by | meaning |
/// |---|---|---|---|
/// | Free | Queued | sender | envelope (and payload or first chunk) written, slot pushed on the destination's inbox |
/// | Queued | Arrived | receiver | taken from the inbox into the receiver's unexpected queue |
/// | Arrived | Claimed | receiver | a matched probe took it out of matching |
/// | Arrived, Claimed | Free | receiver | eager message copied out |
/// | Arrived, Claimed, Chunk | ClearToSend | receiver | streaming: send the next chunk |
/// | ClearToSend | Chunk | sender | streaming: next chunk in the payload |
/// | Arrived, Claimed, Chunk | Done | receiver | rendezvous finished (or cut short by an error) |
/// | Done | Free | sender | the sender returns the slot to itself |
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Unused: its owner may take it.
    Free = 0,
    /// Published and pushed on the destination's inbox, not yet seen by it.
    Queued = 1,
    /// In the destination's unexpected queue, waiting for a receive.
    Arrived = 2,
    /// Taken out of matching by a matched probe, not yet received.
    Claimed = 3,
    /// Streaming: the receiver asks for the next chunk.
    ClearToSend = 4,
    /// Streaming: a later chunk is in the payload.
    Chunk = 5,
    /// Rendezvous finished: the sender frees the slot.
    Done = 6,
    /// Eager message received; the receiver hands the slot back (FREE) with
    /// its next batch (`slot_return::defer_free`).
    Returning = 7,
}

impl SlotState {
    /// The state in a state word, `None` for a code this version never writes.
    pub fn of_word(word: u32) -> Option<SlotState> {
        Some(match word & STATE_MASK {
            0 => SlotState::Free,
            1 => SlotState::Queued,
            2 => SlotState::Arrived,
            3 => SlotState::Claimed,
            4 => SlotState::ClearToSend,
            5 => SlotState::Chunk,
            6 => SlotState::Done,
            7 => SlotState::Returning,
            _ => return None,
        })
    }

    /// The state word of a slot in this state for destination `dest`.
    pub const fn word(self, dest: u32) -> u32 {
        (dest << STATE_BITS) | self as u32
    }
}

/// The header of one slot ([`Core::slot_header`]).
#[derive(Clone, Copy)]
pub(crate) struct SlotAt<'w>(*mut u8, PhantomData<&'w Core>);

impl<'w> SlotAt<'w> {
    /// One of its shared words.
    #[inline(always)]
    pub(crate) fn word(self, word: SlotWord) -> &'w crate::shim::AtomicU32 {
        // SAFETY: a slot header inside the world memory of the `Core` it
        // borrows (only `Core::slot_header` makes a `SlotAt`); the word is
        // 4-byte aligned and shared words are only accessed atomically.
        unsafe { crate::shim::atomic_u32_at(self.0, word.offset()) }
    }

    /// The four words of one of its rows, for a vector access
    /// ([`crate::shim::load_relaxed_x4`], [`crate::shim::store_relaxed_x4`];
    /// 16-byte aligned: every slot is, `slot_bytes` being a multiple of 64).
    #[inline(always)]
    pub(crate) fn row(self, row: SlotRow) -> &'w [crate::shim::AtomicU32; 4] {
        // SAFETY: as in `word`, for the four words of the row.
        unsafe { crate::shim::atomic_u32x4_at(self.0, row.offset()) }
    }

    /// The start of its payload (16-byte aligned, at least 64 bytes).
    #[inline(always)]
    pub(crate) fn payload(self) -> *mut u8 {
        // SAFETY: the payload follows the header inside the slot.
        unsafe { self.0.add(SLOT_HEADER_BYTES) }
    }
}

/// Addresses of this rank's header, its records and the world's slots,
/// worked out from one read of the layout ([`Core::places`]): for a
/// straight run of accesses. The model counts one read per run; on the GPU
/// each field is a constant-bank operand where it is used
/// ([`crate::shim::descriptors`]).
#[derive(Clone, Copy)]
pub(crate) struct Places<'w> {
    base: *mut u8,
    rank: u32,
    layout: &'w Layout,
}

/// This rank's header located once ([`Places::header`]): `mine!` takes it
/// as it takes a [`Core`].
#[derive(Clone, Copy)]
pub(crate) struct HeaderAt(*mut RankHeader);

impl HeaderAt {
    /// The header.
    #[inline(always)]
    pub(crate) fn rank_header(&self) -> *mut RankHeader {
        self.0
    }
}

impl<'w> Places<'w> {
    /// This rank's header, its address held.
    #[inline(always)]
    pub(crate) fn header(&self) -> HeaderAt {
        HeaderAt(self.rank_header())
    }

    /// This rank's header (only its private fields through the pointer).
    #[inline(always)]
    pub(crate) fn rank_header(&self) -> *mut RankHeader {
        // SAFETY: inside the world memory, 64-byte aligned.
        unsafe { self.base.add(self.layout.rank_header(self.rank)) as *mut RankHeader }
    }

    /// The header of slot `id` (see [`Core::slot_header`]).
    #[inline(always)]
    pub(crate) fn slot(&self, id: u32) -> SlotAt<'w> {
        // SAFETY: inside the world memory (see `Core::slot_word`).
        SlotAt(unsafe { self.base.add(self.layout.slot_of_id(id)) }, PhantomData)
    }

    /// Slots per outbox.
    #[inline(always)]
    pub(crate) fn slots_per_rank(&self) -> u32 {
        self.layout.slots_per_rank
    }

    /// The id of `owner`'s slot `slot`.
    #[inline(always)]
    pub(crate) fn slot_id(&self, owner: u32, slot: u32) -> u32 {
        owner * self.layout.slots_per_rank + slot
    }

    /// Payload bytes per slot.
    #[inline(always)]
    pub(crate) fn slot_bytes(&self) -> u32 {
        self.layout.slot_bytes
    }

    /// The inbox word of `rank` (see [`Core::inbox`]).
    #[inline(always)]
    pub(crate) fn inbox(&self, rank: u32) -> &'w crate::shim::AtomicU32 {
        // SAFETY: `rank < ranks`; the inbox is the first word of the rank's
        // header, 4-byte aligned, accessed only atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.layout.rank_header(rank)) }
    }

    /// The state word of slot `id` (see [`Core::slot_state`]).
    #[inline(always)]
    pub(crate) fn state(&self, id: u32) -> &'w crate::shim::AtomicU32 {
        // SAFETY: `id < ranks * slots_per_rank` (see `Core::slot_word`): its
        // state word lies inside the slot states region, 4-byte aligned,
        // accessed only atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.layout.slot_state_of_id(id)) }
    }

    /// `owner`'s slots' state words as a span: the address of its slot 0's,
    /// the others following `SLOT_STATE_BYTES` apart (side by side, so that
    /// a scan of them loads one line). `owner` 0's span is every slot of
    /// the world's, by slot id.
    #[inline(always)]
    pub(crate) fn states(&self, owner: u32) -> *mut u8 {
        // SAFETY: `owner < ranks`: its slots' states are inside the region.
        unsafe {
            self.base
                .add(self.layout.slot_state_of_id(self.slot_id(owner, 0)))
        }
    }

    /// `owner`'s slots as a span: the address of word `word` of its slot 0
    /// and the bytes from one slot to the next, so that a scan of its slots
    /// computes each address with an add (no division, no reload of the
    /// layout between its loads).
    #[inline(always)]
    pub(crate) fn outbox_words(&self, owner: u32, word: SlotWord) -> (*mut u8, usize) {
        // SAFETY: `owner < ranks`: its outbox is inside the world memory.
        let first = unsafe { self.base.add(self.layout.slot(owner, 0) + word.offset()) };
        (first, self.layout.slot_stride)
    }
}

/// Reads a private field of this rank's header.
macro_rules! mine {
    ($w:expr, $f:ident) => {{
        // SAFETY: the header is this rank's, inside the world memory.
        let p = unsafe { core::ptr::addr_of!((*$w.rank_header()).$f) };
        $crate::records::private(p, false);
        // SAFETY: private fields are touched only by this rank; a plain
        // read of an initialised u32.
        unsafe { *p }
    }};
    ($w:expr, $f:ident = $v:expr) => {{
        let v = $v;
        // SAFETY: as above.
        let p = unsafe { core::ptr::addr_of_mut!((*$w.rank_header()).$f) };
        $crate::records::private(p, true);
        // SAFETY: as above, a plain write.
        unsafe { *p = v }
    }};
}

/// Reads or writes a field of one of this rank's records.
macro_rules! rec {
    ($w:expr, $i:expr, $f:ident) => {{
        // SAFETY: `$i < records_per_rank`: inside the world memory.
        let p = unsafe { core::ptr::addr_of!((*$w.record($i)).$f) };
        $crate::records::private(p, false);
        // SAFETY: records are private to their rank.
        unsafe { *p }
    }};
    ($w:expr, $i:expr, $f:ident = $v:expr) => {{
        let v = $v;
        // SAFETY: as above.
        let p = unsafe { core::ptr::addr_of_mut!((*$w.record($i)).$f) };
        $crate::records::private(p, true);
        // SAFETY: as above.
        unsafe { *p = v }
    }};
}

/// Tells the timing model (docs/model.md) about a plain access of this
/// rank's header or records at `p`.
#[inline(always)]
pub(crate) fn private<T>(p: *const T, write: bool) {
    crate::shim::note_private(p.cast(), core::mem::size_of::<T>(), write)
}

pub(crate) use {mine, rec};

/// The destination rank in a state word.
pub const fn dest_of_word(word: u32) -> u32 {
    word >> STATE_BITS
}

/// How a slot carries its message.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// The whole message is in the payload.
    Eager = 0,
    /// Rendezvous: the payload holds the address of the sender's buffer,
    /// which the receiver copies from.
    Direct = 1,
    /// Rendezvous: the message streams through the payload, chunk by chunk.
    Stream = 2,
}

impl MessageKind {
    /// The kind for a stored code.
    pub fn from_code(code: u32) -> Option<MessageKind> {
        Some(match code {
            0 => MessageKind::Eager,
            1 => MessageKind::Direct,
            2 => MessageKind::Stream,
            _ => return None,
        })
    }
}

/// The envelope of one outbox slot, before its payload
/// ([`SLOT_HEADER_BYTES`], one 64-byte line). Every field is a shared
/// word. Its first three 16-byte rows (`SlotRow`) group the words so that
/// a receive loads what it takes and a send stores it with vector
/// accesses: the words that move the slot between ranks and lists first,
/// then the envelope a receive matches and takes, then the message's
/// kind and number, signature and first bytes; the last two rows are
/// written by the sender alone. The fourth row holds what only a stream
/// needs, stored and loaded on its own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SlotHeader {
    /// While queued: the slot pushed on the same inbox before this one
    /// (slot id + 1, [`LINK_PENDING`] for a moment after the push); once
    /// arrived: the next slot of the receiver's unexpected queue.
    pub link: u32,
    /// Once arrived: the previous slot of the unexpected queue.
    pub back: u32,
    /// Private to the slot's owner, whatever the slot holds: entry `k` of
    /// the owner's list of received slots whose return it deferred (slot
    /// id + 1, in its slot `k`; see `slot_return::defer_free`), so that a
    /// flush loads the list in one batch instead of walking a chain.
    pub deferred: u32,
    /// Unused: keeps the links a 16-byte row. The slot's state word
    /// ([`SlotState`] and, above it, the destination rank) lies apart, in
    /// the slot states region ([`Layout::slot_state_of_id`]), beside its
    /// outbox's other slots' states.
    pub spare: u32,
    /// The message's tag.
    pub tag: i32,
    /// The message's context word (MPI 3.5, 7.1.2): `2 × id` for
    /// point-to-point traffic of communicator context `id` (0: the world),
    /// `2 × id + 1` for its collectives' traffic. A receive or probe
    /// matches only messages of its own context word.
    pub context: u32,
    /// The datatype id it was sent with.
    pub datatype: u32,
    /// Length of the whole message in bytes.
    pub bytes: u32,
    /// The [`MessageKind`] code in its low [`KIND_BITS`] bits, and above
    /// them the sender's number for this message (its count of messages
    /// sent before it, modulo 2^30), which orders one sender's messages:
    /// one word, so that the message row has room for the signature and
    /// the head ([`SlotHeader::kind`], [`SlotHeader::sequence`]).
    pub kind_sequence: u32,
    /// With the device crate's `views` feature: the hash of the message's
    /// primitive sequence with bit 31 set (a view of a heterogeneous
    /// type's), or 0, written with every message; a receive of another
    /// datatype id compares it with the hash of its own signature's
    /// prefix (MPI 4.1 §3.3.1; `typemap/prefix.rs`). Without the feature,
    /// unused (written 0).
    pub signature: u32,
    /// With `head_high`, a 64-bit word (little-endian): an eager message
    /// of 1 to 8 bytes has them here, in memory order; a direct message,
    /// the address of the sender's buffer; any other, nothing that counts.
    /// Stored with the kind and the number, so that every word a receive
    /// takes from an arrived slot is in the header's first three rows, all
    /// atomic: a receive from one source loads the header of the sender's
    /// first slot in the batch of its scan of the states, before it knows
    /// what the slot holds (`engine::find_in`), which a plain read of the
    /// payload (racing with a sender still writing it) could not.
    pub head_low: u32,
    /// The high half of the word `head_low` begins.
    pub head_high: u32,
    /// A stream's bytes in the payload now (this chunk); written for
    /// streams only.
    pub chunk: u32,
    /// Unused: keeps the header a 64-byte line.
    pub spare_row: [u32; 3],
}

/// Bits of [`SlotHeader::kind_sequence`] below the sequence number.
pub const KIND_BITS: u32 = 2;

impl SlotHeader {
    /// The [`MessageKind`] code.
    pub fn kind(&self) -> u32 {
        kind_of(self.kind_sequence)
    }

    /// The sender's number for the message, modulo 2^30.
    pub fn sequence(&self) -> u32 {
        self.kind_sequence >> KIND_BITS
    }

    /// The number in the word's top bits, the kind's cleared: one
    /// sender's messages in flight compare by their wrapping distance on
    /// it (modulo 2^32), as `engine::find_in` compares them.
    pub fn order(&self) -> u32 {
        order_of(self.kind_sequence)
    }
}

/// The [`MessageKind`] code of a [`SlotHeader::kind_sequence`] word.
pub const fn kind_of(kind_sequence: u32) -> u32 {
    kind_sequence & ((1 << KIND_BITS) - 1)
}

/// The sequence number of a [`SlotHeader::kind_sequence`] word in place,
/// the kind's bits cleared (see [`SlotHeader::order`]).
pub const fn order_of(kind_sequence: u32) -> u32 {
    kind_sequence & !kind_of(u32::MAX)
}

/// The [`SlotHeader::kind_sequence`] word of a message of `kind` that its
/// sender numbered `sequence` (modulo 2^30).
pub const fn kind_sequence(kind: MessageKind, sequence: u32) -> u32 {
    sequence << KIND_BITS | kind as u32
}

/// A 16-byte row of a [`SlotHeader`], four words accessed together.
#[derive(Clone, Copy)]
pub(crate) enum SlotRow {
    /// `link`, `back`, `deferred`, `spare`.
    Links,
    /// `tag`, `context`, `datatype`, `bytes`.
    Envelope,
    /// `kind_sequence`, `signature`, `head_low`, `head_high`.
    Message,
}

impl SlotRow {
    const fn offset(self) -> usize {
        match self {
            SlotRow::Links => core::mem::offset_of!(SlotHeader, link),
            SlotRow::Envelope => core::mem::offset_of!(SlotHeader, tag),
            SlotRow::Message => core::mem::offset_of!(SlotHeader, kind_sequence),
        }
    }
}

const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(SlotHeader, link) == 0);
    assert!(offset_of!(SlotHeader, back) == 4);
    assert!(offset_of!(SlotHeader, deferred) == 8);
    assert!(offset_of!(SlotHeader, spare) == 12);
    assert!(offset_of!(SlotHeader, tag) == 16);
    assert!(offset_of!(SlotHeader, context) == 20);
    assert!(offset_of!(SlotHeader, datatype) == 24);
    assert!(offset_of!(SlotHeader, bytes) == 28);
    assert!(offset_of!(SlotHeader, kind_sequence) == 32);
    assert!(offset_of!(SlotHeader, signature) == 36);
    assert!(offset_of!(SlotHeader, head_low) == 40);
    assert!(offset_of!(SlotHeader, head_high) == 44);
    assert!(offset_of!(SlotHeader, chunk) == 48);
};

/// One rank's header in the world memory ([`RANK_HEADER_BYTES`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RankHeader {
    /// Shared: the inbox, a stack of slots pushed by senders (slot id + 1,
    /// [`LINK_NONE`] when empty); the rank takes it whole.
    pub inbox: u32,
    /// Private: how many times in a row the non-blocking poll `idle_key`
    /// failed (see `World::failed_poll`).
    pub idle_count: u32,
    /// Private: key of the non-blocking poll that last failed with nothing
    /// done since; 0 when the rank progressed since.
    pub idle_key: u64,
    /// Private: first slot of the unexpected queue (messages arrived and
    /// not yet received, in arrival order).
    pub queue_head: u32,
    /// Private: last slot of the unexpected queue.
    pub queue_tail: u32,
    /// Private: first record of the active list (requests in posting
    /// order; record index + 1).
    pub active_head: u32,
    /// Private: last record of the active list.
    pub active_tail: u32,
    /// Private: bit `s` set once own slot `s` was used and not yet seen
    /// free again (zero at the start: every slot free). With
    /// `next_sequence` and `spare`, the send's 16-byte row: a send that
    /// takes a slot reads and writes the three as one vector access
    /// (`engine::take_slot`).
    pub used_slots: u64,
    /// Private: number of this rank's next message.
    pub next_sequence: u32,
    /// Zero: the rest of the send's row, written with it.
    pub spare: u32,
    /// Private: bit `s` set when own slot `s` belongs to a send still in
    /// progress (a reclaim scan leaves it alone).
    pub held_slots: u64,
    /// Private: how many received eager slots wait for their return to
    /// their senders, listed in this rank's own slots'
    /// [`SlotHeader::deferred`] words (see `slot_return::defer_free`).
    pub free_count: u32,
    /// Unused (the id of the rank's last request scope is its `World`'s,
    /// in a register: `World::last_scope`).
    pub spare_scope: u32,
    /// Private: the clock ([`crate::shim::clock_ns`]) when this rank's
    /// current wait began, against the world's timeout (written when a
    /// wait with a timeout starts, read every 16th poll: kept here, not in
    /// two registers across the wait's loop).
    pub wait_since: u64,
    /// Unused: keeps the header a multiple of 16 bytes, so that every
    /// rank's header and records start 16-byte aligned.
    pub spare_tail: u64,
}

// The send's row: 16-byte aligned in every rank's header (which starts
// 16-byte aligned: `Layout::rank_header`), its words in this order.
const _: () = assert!(core::mem::offset_of!(RankHeader, used_slots) == 32);
const _: () = assert!(core::mem::offset_of!(RankHeader, next_sequence) == 40);
const _: () = assert!(core::mem::offset_of!(RankHeader, spare) == 44);
const _: () = assert!(RANK_HEADER_BYTES.is_multiple_of(16) && RECORD_BYTES.is_multiple_of(16));

/// Sixteen bytes of this rank's header or records, 16-byte aligned, read
/// or written as one access (`ld.v4`/`st.v4` on the GPU, one private access
/// of the timing model).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub(crate) struct PrivateRow(pub(crate) [u32; 4]);

/// Reads the private row at `p`.
///
/// # Safety
/// `p` is a 16-byte aligned row of this rank's header or records.
#[inline(always)]
pub(crate) unsafe fn load_private_row(p: *const PrivateRow) -> [u32; 4] {
    private(p, false);
    // SAFETY: the caller's; private words are touched only by this rank.
    unsafe { p.read().0 }
}

/// Writes the private row at `p`.
///
/// # Safety
/// As [`load_private_row`].
#[inline(always)]
pub(crate) unsafe fn store_private_row(p: *mut PrivateRow, v: [u32; 4]) {
    private(p, true);
    // SAFETY: as in `load_private_row`.
    unsafe { p.write(PrivateRow(v)) }
}

/// Bits of [`RequestRecord::mode`] below its context word.
pub const CONTEXT_SHIFT: u32 = 16;

/// One entry of a communicator table (MPI 4.1 chapter 7): a table holds
/// `ranks` of them, one context's membership. The communicators a creation
/// makes (one per colour of a split) share its context and its table: the
/// members of each are a run of `member` words, ordered by (colour, key,
/// parent rank). Written by the ranks of the parent during the creation
/// (each its own entries, relaxed), published by the creation's closing
/// barrier (its messages' Release and Acquire), then only read.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CommEntry {
    /// Entry `i`: the world rank at position `i` of the creation's order.
    pub member: u32,
    /// Entry `w`: the rank, in its new communicator, of world rank `w`.
    pub inverse: u32,
    /// Entry `p`: the colour parent rank `p` passed (a split's exchange).
    pub color: i32,
    /// Entry `p`: the key parent rank `p` passed.
    pub key: i32,
}

/// Which collective paths a communicator takes (the kind bits of its
/// members' warps' [`WarpWord`]s). A creation sets it from the members'
/// table, which every member reads alike, so all members agree; it is the
/// same for every lane of a warp (a warp or block communicator holds every
/// lane of the warp, so no lane of it is in a general one of the same
/// context).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommKind {
    /// Any set of ranks: the message algorithms of `collective/general.rs`.
    General = 0,
    /// Every rank of one block, communicator rank = thread index: the
    /// block barrier and the block's shared scratch.
    Block = 1,
    /// Every lane of one warp (32, or the lanes of a block's partial last
    /// warp), communicator rank = lane: warp shuffles and votes.
    Warp = 2,
}

impl CommKind {
    /// The kind stored as `code`; [`CommKind::General`] for any other word.
    pub const fn from_code(code: u32) -> CommKind {
        match code {
            1 => CommKind::Block,
            2 => CommKind::Warp,
            _ => CommKind::General,
        }
    }
}

/// One word per warp of the world after each communicator table: bits 0
/// and 1 its lanes' [`CommKind`] in that context (set by each lane with an
/// OR at the end of the creation, never changed), bits 2 to 7 how many
/// lanes arrived at the current warp collective of its warp communicator,
/// bits 8 to 31 the generation of that collective (counting modulo
/// 2^24). Zero at launch, like all of the world's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpWord(pub u32);

impl WarpWord {
    /// Mask of the kind bits.
    pub const KIND_MASK: u32 = 0b11;
    /// One arrival (added to the word by each lane that arrives).
    pub const ARRIVAL: u32 = 1 << 2;
    /// One generation (the arrival count's carry: a full warp's last
    /// arriver adds `GENERATION - lanes × ARRIVAL`, which clears the count
    /// and steps the generation).
    pub const GENERATION: u32 = 1 << 8;

    /// The communicator kind it holds.
    pub const fn kind(self) -> CommKind {
        CommKind::from_code(self.0 & Self::KIND_MASK)
    }

    /// Lanes arrived at the current collective.
    pub const fn arrived(self) -> u32 {
        (self.0 / Self::ARRIVAL) % (Self::GENERATION / Self::ARRIVAL)
    }

    /// The current collective's generation.
    pub const fn generation(self) -> u32 {
        self.0 / Self::GENERATION
    }
}

/// A word of a [`CommEntry`].
#[derive(Clone, Copy)]
pub(crate) enum CommWord {
    Member,
    Inverse,
    Color,
    Key,
}

impl CommWord {
    const fn offset(self) -> usize {
        use core::mem::offset_of;
        match self {
            CommWord::Member => offset_of!(CommEntry, member),
            CommWord::Inverse => offset_of!(CommEntry, inverse),
            CommWord::Color => offset_of!(CommEntry, color),
            CommWord::Key => offset_of!(CommEntry, key),
        }
    }
}

/// The state of a request record.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordState {
    /// Not in use.
    Free = 0,
    /// A send waiting for a slot (the outbox is full or an earlier send waits).
    SendClaim = 1,
    /// A synchronous eager send waiting for the receiver to free its slot.
    SendAwaitFree = 2,
    /// A direct rendezvous waiting for the receiver's copy (DONE).
    SendAwaitDone = 3,
    /// A streamed rendezvous: sends a chunk at each CTS.
    SendStream = 4,
    /// A receive looking for its message.
    RecvMatch = 5,
    /// A receive of a message a matched probe claimed (slot in `slot`).
    RecvClaimed = 6,
    /// A receive streaming its message's chunks.
    RecvStream = 7,
    /// Finished; the outcome is in the record until a wait or test takes it.
    Complete = 8,
}

impl RecordState {
    /// The state for a stored code.
    pub fn from_code(code: u32) -> Option<RecordState> {
        Some(match code {
            0 => RecordState::Free,
            1 => RecordState::SendClaim,
            2 => RecordState::SendAwaitFree,
            3 => RecordState::SendAwaitDone,
            4 => RecordState::SendStream,
            5 => RecordState::RecvMatch,
            6 => RecordState::RecvClaimed,
            7 => RecordState::RecvStream,
            8 => RecordState::Complete,
            _ => return None,
        })
    }

    /// Whether a record in this state is a send.
    pub fn is_send(self) -> bool {
        matches!(
            self,
            RecordState::SendClaim
                | RecordState::SendAwaitFree
                | RecordState::SendAwaitDone
                | RecordState::SendStream
        )
    }
}

/// How a send completes (MPI 3.4 modes, and the staging of a replace).
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendMode {
    /// Standard mode: done once buffered (eager) or taken (rendezvous).
    Standard = 0,
    /// Synchronous mode (`MPI_Ssend`): done once the receiver has taken the
    /// message out of its slot, i.e. the matching receive has started.
    Synchronous = 1,
    /// A `send_receive_replace`: a large message always streams through the
    /// slot (never read from the buffer by the receiver), so that the bytes
    /// already copied out may be overwritten by the receive.
    Replace = 2,
}

/// How a finished record ended ([`RequestRecord::outcome`]).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Completed.
    Success = 0,
    /// A receive got a message of another datatype (`MPI_ERR_TYPE`).
    TypeMismatch = 1,
    /// A receive got a message longer than its buffer (`MPI_ERR_TRUNCATE`).
    Truncate = 2,
    /// The walk of a derived datatype's encoding failed (`MPI_ERR_INTERN`:
    /// its words changed after the view checked them).
    Intern = 3,
}

/// One request of a rank (a posted send or receive, or the operation of a
/// blocking call), [`RECORD_BYTES`]. Private to its rank.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RequestRecord {
    /// [`RecordState`] code.
    pub state: u32,
    /// Next record of the active list (index + 1).
    pub next: u32,
    /// Send: the destination. Receive: the source filter; once matched, the
    /// message's source.
    pub peer: i32,
    /// Send: the tag. Receive: the tag filter; once matched, the message's tag.
    pub tag: i32,
    /// The datatype id of the buffer.
    pub datatype: u32,
    /// Bytes of the buffer (send: the message; receive: the capacity).
    pub len: u32,
    /// Address of the buffer.
    pub buffer: u64,
    /// Send: own slot index. Receive: the matched slot's id + 1.
    pub slot: u32,
    /// Bytes copied so far (streaming).
    pub offset: u32,
    /// Receive: bytes it will copy (the message, cut to the buffer).
    /// Send: the word its slot header's `signature` gets.
    pub wanted: u32,
    /// Low [`CONTEXT_SHIFT`] bits: send: the `SendMode` code; receive: the
    /// record (index + 1) of a send sharing its buffer
    /// (send-receive-replace) whose progress bounds the bytes it may
    /// write, or 0; either: bit 15 set when `buffer` is the address of a
    /// `datatype::TypedBuffer` (a view of a non-contiguous derived
    /// datatype) whose packed form is the message. High bits: the context
    /// word of the message ([`SlotHeader::context`]): a send's, or the one a
    /// receive matches.
    pub mode: u32,
    /// The scope that owns it (0: a blocking call).
    pub scope: u32,
    /// [`Outcome`] code.
    pub outcome: u32,
    /// Receive, once matched: the message's length in bytes.
    pub message_bytes: u32,
    /// Receive, once matched: the message's datatype id.
    pub message_datatype: u32,
}

const _: () = assert!(core::mem::size_of::<SlotHeader>() == SLOT_HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<RankHeader>() == RANK_HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<RequestRecord>() == RECORD_BYTES);
const _: () = assert!(core::mem::size_of::<CommEntry>() == crate::layout::COMM_TABLE_ENTRY_BYTES);

/// The shared words of a slot header, by field.
#[derive(Clone, Copy)]
pub(crate) enum SlotWord {
    Link,
    Back,
    Tag,
    Bytes,
    Chunk,
    KindSequence,
    Context,
    Deferred,
}

impl SlotWord {
    const fn offset(self) -> usize {
        use core::mem::offset_of;
        match self {
            SlotWord::Link => offset_of!(SlotHeader, link),
            SlotWord::Back => offset_of!(SlotHeader, back),
            SlotWord::Tag => offset_of!(SlotHeader, tag),
            SlotWord::Bytes => offset_of!(SlotHeader, bytes),
            SlotWord::Chunk => offset_of!(SlotHeader, chunk),
            SlotWord::KindSequence => offset_of!(SlotHeader, kind_sequence),
            SlotWord::Context => offset_of!(SlotHeader, context),
            SlotWord::Deferred => offset_of!(SlotHeader, deferred),
        }
    }
}

impl Layout {
    /// Offset of the slot with global id `id` (`owner * slots_per_rank + slot`).
    pub fn slot_by_id(&self, id: u32) -> usize {
        let (owner, slot) = (id / self.slots_per_rank, id % self.slots_per_rank);
        self.slot(owner, slot)
    }
}

/// What the engine needs of a rank's `World`: the world's base address and
/// the rank. Everything else (the layout, the config) is read from the
/// world's header where it is used, not held in registers: a field read
/// there is a cached load, a field held costs a register in every loop of
/// the engine. Passed to the engine's non-inlined functions as its two
/// scalars (an aggregate passed by value goes through local memory on nvptx).
#[derive(Clone, Copy)]
pub(crate) struct Core {
    pub(crate) base: *mut u8,
    pub(crate) rank: u32,
}

impl Core {
    /// The world's layout, for one field's read. The library makes dozens
    /// per message; on the GPU each is a read of the module's constant bank
    /// (`shim::descriptors`), an operand of the instruction that uses it.
    /// They were loads of the world's header in global memory, reloaded
    /// after every `asm!` atomic (which may write any memory for all the
    /// compiler knows), from L2 after an acquire. The timing model counts
    /// each read (`shim::note_descriptor`, docs/model.md).
    #[inline(always)]
    fn layout(&self) -> &Layout {
        crate::shim::note_descriptor(crate::shim::Descriptor::Layout);
        // SAFETY: the host wrote the layout into the header of every world
        // (`WorldConfig::write_header`); it is never written during a launch.
        unsafe { &*(crate::shim::descriptors(self.base).add(LAYOUT_OFFSET) as *const Layout) }
    }

    /// The addresses of a straight run of accesses, from one read of the
    /// layout ([`Places`]).
    #[inline(always)]
    pub(crate) fn places(&self) -> Places<'_> {
        Places {
            base: self.base,
            rank: self.rank,
            layout: self.layout(),
        }
    }

    /// The world's configuration, for one field's read (see [`Core::layout`]).
    #[inline(always)]
    fn config(&self) -> &WorldConfig {
        crate::shim::note_descriptor(crate::shim::Descriptor::Config);
        // SAFETY: as in `layout`; the config is 8-byte aligned at CONFIG_OFFSET.
        unsafe { &*(crate::shim::descriptors(self.base).add(CONFIG_OFFSET) as *const WorldConfig) }
    }

    /// Slots per outbox.
    #[inline(always)]
    pub(crate) fn slots_per_rank(&self) -> u32 {
        self.layout().slots_per_rank
    }

    /// Payload bytes per slot.
    #[inline(always)]
    pub(crate) fn slot_bytes(&self) -> u32 {
        self.layout().slot_bytes
    }

    /// Request records per rank.
    #[inline(always)]
    pub(crate) fn records_per_rank(&self) -> u32 {
        self.layout().records_per_rank
    }

    /// The config's `FLAG_*` bits.
    #[inline(always)]
    pub(crate) fn flags(&self) -> u32 {
        self.config().flags
    }

    /// The largest message a send may carry.
    #[inline(always)]
    pub(crate) fn max_message_bytes(&self) -> u32 {
        self.config().max_message_bytes
    }

    /// A wait gives up after this many nanoseconds (0: never).
    #[inline(always)]
    pub(crate) fn timeout_ns(&self) -> u64 {
        self.config().timeout_ns
    }

    /// Longest sleep between two polls (never 0).
    #[inline(always)]
    pub(crate) fn backoff_max_ns(&self) -> u32 {
        self.config().effective_backoff_max_ns()
    }

    /// Ranks of the world.
    #[inline(always)]
    pub(crate) fn ranks(&self) -> u32 {
        self.layout().ranks
    }

    /// Events this rank may record in its trace buffer (0: tracing off).
    /// One cached load of the world's header: the test on every trace site.
    #[inline(always)]
    pub(crate) fn trace_events(&self) -> u32 {
        self.config().trace_events
    }

    /// This rank's trace buffer: its header, its events after it. Only
    /// meaningful when [`Core::trace_events`] is not 0.
    #[inline(always)]
    pub(crate) fn trace_buffer(&self) -> *mut u8 {
        // SAFETY: inside the world memory when tracing is on (the layout
        // holds `ranks` trace buffers); 32-byte aligned.
        unsafe { self.base.add(self.layout().trace_of(self.rank)) }
    }

    /// Offset of this rank's wait record: fixed by the rank, no read of
    /// the layout.
    #[inline(always)]
    pub(crate) fn wait_record(&self) -> usize {
        crate::layout::wait_record_of(self.rank)
    }

    /// Offset of slot `id` (`owner * slots_per_rank + slot`).
    #[inline(always)]
    fn slot_offset(&self, id: u32) -> usize {
        self.layout().slot_of_id(id)
    }

    /// The id of `owner`'s slot `slot`.
    #[inline(always)]
    pub(crate) fn slot_id(&self, owner: u32, slot: u32) -> u32 {
        self.places().slot_id(owner, slot)
    }

    /// The state word of slot `id` ([`SlotState`] and the destination),
    /// in the slot states region.
    #[inline(always)]
    pub(crate) fn slot_state(&self, id: u32) -> &crate::shim::AtomicU32 {
        // SAFETY: `id < ranks * slots_per_rank`, as for `slot_word`; the
        // word is 4-byte aligned inside the world memory and accessed only
        // atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.layout().slot_state_of_id(id)) }
    }

    /// A shared word of the header of slot `id`.
    #[inline(always)]
    pub(crate) fn slot_word(&self, id: u32, word: SlotWord) -> &crate::shim::AtomicU32 {
        // SAFETY: `id < ranks * slots_per_rank` (callers derive it from a
        // rank and a slot index, or from a link the engine wrote); the word
        // is 4-byte aligned inside the world memory and shared words are
        // only accessed atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.slot_offset(id) + word.offset()) }
    }

    /// The header of slot `id`, for several of its words read in a row:
    /// one address computation for all of them.
    #[inline(always)]
    pub(crate) fn slot_header(&self, id: u32) -> SlotAt<'_> {
        self.places().slot(id)
    }

    /// Relaxed loads of words `first .. first + n` (`1 <= n <= N`) of a span
    /// from [`Places::outbox_words`], as one batch
    /// ([`crate::shim::load_relaxed_batch`]); past the `n`th the batch
    /// repeats it, and so does the result.
    ///
    /// # Safety
    /// As for [`Core::outbox_word`], for slots `first .. first + n`.
    #[inline(always)]
    pub(crate) unsafe fn outbox_batch<const N: usize>(
        first_word: *mut u8,
        stride: usize,
        first: u32,
        n: u32,
    ) -> [u32; N] {
        crate::shim::load_relaxed_batch::<N>(
            core::array::from_fn(|k| {
                // SAFETY: `first + min(k, n - 1) < first + n` (caller).
                unsafe { Core::outbox_word(first_word, stride, first + (k as u32).min(n - 1)) }
            }),
            n as usize,
        )
    }

    /// Relaxed loads of the state words of slots `first .. first + n`
    /// (`1 <= n <= 8`) of a span from [`Places::states`], as one batch:
    /// with `quads` (the slots per rank a multiple of 4, so that every
    /// outbox's states start 16-byte aligned and `n` is 4 or 8) as one or
    /// two vector loads ([`crate::shim::load_relaxed_x4`]), else as
    /// [`Core::outbox_batch`]. Past the `n`th the result is unspecified.
    ///
    /// # Safety
    /// As for [`Core::outbox_word`], for slots `first .. first + n`.
    #[inline(always)]
    pub(crate) unsafe fn state_batch(first_word: *mut u8, first: u32, n: u32, quads: bool) -> [u32; 8] {
        if !quads {
            // SAFETY: the caller's promise.
            return unsafe { Core::outbox_batch::<8>(first_word, SLOT_STATE_BYTES, first, n) };
        }
        let quad = |k: u32| {
            // SAFETY: slots `k .. k + 4` lie in the span (`n` is 4 or 8),
            // 16-byte aligned (`quads`).
            let words = unsafe { crate::shim::atomic_u32x4_at(first_word, k as usize * SLOT_STATE_BYTES) };
            crate::shim::load_relaxed_x4(words)
        };
        crate::shim::independent(|| {
            let lo = quad(first);
            let hi = if n > 4 { quad(first + 4) } else { lo };
            [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
        })
    }

    /// Word `word` of slot `slot` of a span from [`Places::outbox_words`] or
    /// [`Places::states`] (of owner 0's: the world's slot `slot`).
    ///
    /// # Safety
    /// `(first, stride)` came from `outbox_words(owner, word)`, or `first`
    /// from `states(owner)` with `stride` `SLOT_STATE_BYTES`, and `slot <
    /// slots_per_rank`; or `first` from `states(0)` and `slot` is a slot id.
    #[inline(always)]
    pub(crate) unsafe fn outbox_word<'a>(
        first: *mut u8,
        stride: usize,
        slot: u32,
    ) -> &'a crate::shim::AtomicU32 {
        // SAFETY: inside `owner`'s outbox (the caller's promise); shared
        // slot words are 4-byte aligned and only accessed atomically.
        unsafe { crate::shim::atomic_u32_at(first, slot as usize * stride) }
    }

    /// The payload of slot `id` (`slot_bytes`, 16-byte aligned).
    #[inline(always)]
    pub(crate) fn slot_payload(&self, id: u32) -> *mut u8 {
        // SAFETY: inside the world memory (see `slot_word`).
        unsafe { self.base.add(self.slot_offset(id) + SLOT_HEADER_BYTES) }
    }

    /// The inbox word of `rank`.
    #[inline(always)]
    pub(crate) fn inbox(&self, rank: u32) -> &crate::shim::AtomicU32 {
        self.places().inbox(rank)
    }

    /// This rank's header. Only its private fields may be used through the
    /// pointer (the inbox goes through `Core::inbox`).
    #[inline(always)]
    pub(crate) fn rank_header(&self) -> *mut RankHeader {
        self.places().rank_header()
    }

    /// Communicator tables the world holds.
    #[inline(always)]
    pub(crate) fn communicators(&self) -> u32 {
        self.layout().communicators
    }

    /// The world's counter of communicator contexts handed out.
    #[inline(always)]
    pub(crate) fn comm_counter(&self) -> &crate::shim::AtomicU32 {
        // SAFETY: the first word of the communicator area, 64-byte aligned,
        // accessed only atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.layout().comms) }
    }

    /// The last context id this process may hand out and how many its
    /// range holds (`Layout::write_context_range`): `(communicators,
    /// communicators)` when the host gave no range.
    #[inline(always)]
    pub(crate) fn context_range(&self) -> (u32, u32) {
        let end = self.process_word(crate::layout::COMM_RANGE_END_OFFSET);
        if end == 0 {
            let all = self.communicators();
            return (all, all);
        }
        (end - 1, self.process_word(crate::layout::COMM_RANGE_COUNT_OFFSET))
    }

    /// The word at `offset` of the communicator area's header line, which
    /// the host writes for this process before the launch.
    #[inline(always)]
    fn process_word(&self, offset: usize) -> u32 {
        // SAFETY: a word of the communicator area's header line, 4-byte
        // aligned, accessed only atomically.
        let word = unsafe { crate::shim::atomic_u32_at(self.base, self.layout().comms + offset) };
        // Relaxed: written by the host before the launch.
        word.load(crate::shim::Ordering::Relaxed)
    }

    /// The world ranks this process runs, as `(first, count)`: the whole
    /// world unless the host gave a range (`Layout::write_process_ranks`,
    /// a world across processes).
    #[inline(always)]
    pub(crate) fn process_ranks(&self) -> (u32, u32) {
        let ranks = self.process_word(crate::layout::PROCESS_RANKS_OFFSET);
        if ranks == 0 {
            return (0, self.layout().ranks);
        }
        (self.process_word(crate::layout::PROCESS_FIRST_OFFSET), ranks)
    }

    /// Word `word` of entry `index` of the table of context `id`.
    #[inline(always)]
    pub(crate) fn comm_word(&self, id: u32, index: u32, word: CommWord) -> &crate::shim::AtomicU32 {
        // SAFETY: `1 <= id <= communicators` and `index < ranks` (the
        // communicator code derives both from a context it was handed and
        // ranks it checked); 4-byte aligned, accessed only atomically.
        unsafe {
            crate::shim::atomic_u32_at(
                self.base,
                self.layout().comm_table(id)
                    + index as usize * core::mem::size_of::<CommEntry>()
                    + word.offset(),
            )
        }
    }

    /// The [`WarpWord`] of warp `warp` (block-major) in the table of
    /// context `id`.
    #[inline(always)]
    pub(crate) fn comm_warp_word(&self, id: u32, warp: u32) -> &crate::shim::AtomicU32 {
        // SAFETY: `1 <= id <= communicators` and `warp` below the world's
        // warps (the caller derives it from its own coordinates); 4-byte
        // aligned, accessed only atomically.
        unsafe { crate::shim::atomic_u32_at(self.base, self.layout().comm_warp_word(id, warp)) }
    }

    /// The rank in its communicator of world rank `world_rank` for a
    /// message of context word `context` (the world's ranks as they are).
    #[inline(always)]
    pub(crate) fn comm_rank_of(&self, context: u32, world_rank: u32) -> i32 {
        let id = context >> 1;
        if id == 0 {
            return world_rank as i32;
        }
        // Relaxed: the table was published by the creation's closing barrier.
        self.comm_word(id, world_rank, CommWord::Inverse)
            .load(crate::shim::Ordering::Relaxed) as i32
    }

    /// This rank's request record `index` (`index < records_per_rank`).
    #[inline(always)]
    pub(crate) fn record(&self, index: u32) -> *mut RequestRecord {
        // SAFETY: inside the world memory, 16-byte aligned (the rank headers
        // start 64-byte aligned, and a header and a record are multiples of
        // 16 bytes: `Layout::record_of`).
        unsafe { self.base.add(self.layout().record_of(self.rank, index)) as *mut RequestRecord }
    }
}

/// Decoded slot, as the host's report reads it from a copy of the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotView {
    /// The owner (sender).
    pub owner: u32,
    /// Its state word ([`SlotState`] and the destination), from the slot
    /// states region.
    pub state_word: u32,
    /// Its header.
    pub header: SlotHeader,
}

impl SlotView {
    /// Decodes slot `slot` of `owner`'s outbox from `memory`, a copy of a
    /// world laid out by `layout`.
    ///
    /// # Panics
    /// If the slot lies outside `memory`.
    pub fn read(memory: &[u8], layout: &Layout, owner: u32, slot: u32) -> SlotView {
        let at = layout.slot(owner, slot);
        let state = layout.slot_state_of_id(owner * layout.slots_per_rank + slot);
        SlotView {
            owner,
            state_word: u32::from_le_bytes(
                memory[state..state + SLOT_STATE_BYTES]
                    .try_into()
                    .expect("a state word is 4 bytes"),
            ),
            header: bytemuck::pod_read_unaligned(&memory[at..at + SLOT_HEADER_BYTES]),
        }
    }

    /// The slot's state (`None`: a code this version never writes).
    pub fn state(&self) -> Option<SlotState> {
        SlotState::of_word(self.state_word)
    }

    /// The destination rank.
    pub fn dest(&self) -> u32 {
        dest_of_word(self.state_word)
    }

    /// Whether the slot holds a message published and not yet received.
    pub fn is_unreceived(&self) -> bool {
        matches!(
            self.state(),
            Some(SlotState::Queued | SlotState::Arrived | SlotState::Claimed)
        )
    }

    /// Whether the message goes by rendezvous (its sender waits for the receiver).
    pub fn is_rendezvous(&self) -> bool {
        self.header.kind() != MessageKind::Eager as u32
    }
}

/// Decodes `rank`'s request record `index` from a copy of the memory.
///
/// # Panics
/// If the record lies outside `memory`.
pub fn read_record(memory: &[u8], layout: &Layout, rank: u32, index: u32) -> RequestRecord {
    let at = layout.record_of(rank, index);
    bytemuck::pod_read_unaligned(&memory[at..at + RECORD_BYTES])
}

/// One rank's wait record ([`RECORD_STRIDE`](crate::layout::RECORD_STRIDE)
/// bytes): what the deadlock report prints. Written by its rank with
/// relaxed atomics, read by the host after the ranks stopped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct WaitRecord {
    /// `polling::STATE_*`: running, waiting, exited, timed out.
    pub state: u32,
    /// The `polling::Call` code the rank waits in.
    pub operation: u32,
    /// The peer (destination, source or root; -1 any, -2 none).
    pub peer: i32,
    /// The tag (-1 any), or the number of requests of a wait over several.
    pub tag: i32,
}

/// The words of a [`WaitRecord`] accessed alone (the others are written
/// with it, as one row: `Core::write_wait_record`).
#[derive(Clone, Copy)]
pub(crate) enum WaitWord {
    State,
}

impl WaitWord {
    pub(crate) const fn offset(self) -> usize {
        use core::mem::offset_of;
        match self {
            WaitWord::State => offset_of!(WaitRecord, state),
        }
    }
}

// `Core::write_wait_record` stores the record as one row of four words.
const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(WaitRecord, state) == 0);
    assert!(offset_of!(WaitRecord, operation) == 4);
    assert!(offset_of!(WaitRecord, peer) == 8);
    assert!(offset_of!(WaitRecord, tag) == 12);
    assert!(crate::layout::WAIT_RECORDS_OFFSET.is_multiple_of(16));
    assert!(crate::layout::RECORD_STRIDE.is_multiple_of(16));
};

/// One rank's result record ([`RESULT_STRIDE`](crate::layout::RESULT_STRIDE)
/// bytes): its kernel's return value, written once at its end.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ResultRecord {
    /// `Error::to_words`: the [`ErrorClass`](crate::ErrorClass) (0: success)
    /// and four detail words.
    pub words: [u32; 5],
    /// Unused.
    pub reserved: [u32; 3],
}

/// The world barrier's words ([`GRID_BARRIER_BYTES`](crate::layout::GRID_BARRIER_BYTES)),
/// five lines: per generation `g` of the barrier, word `g % 4` of the
/// arrival counts and line `g % 4` of the keys. Its arrival count, which
/// the blocks also poll (as CUDA's grid synchronisation polls its counter),
/// is complete at `blocks`.
///
/// The arrival that completes generation `g` zeroes count `(g + 3) % 4` and
/// the keys of that generation; at a barrier where only the root waits
/// (`World::world_barrier_for_root`: the other blocks arrive with a release
/// add and go on, not knowing whether theirs completed the count) the root,
/// which makes its block's arrival and waits, zeroes them once it has seen
/// the count complete. Their last readers (generation `g - 1`, the blocks
/// that waited there) read them before they arrived at `g`, which the
/// zeroing rank's acquire takes (its own add's, or its poll's, which reads
/// the end of every arrival's release sequence). Their next writers
/// (generation `g + 3`) wait at `g + 1` or `g + 2` first, which the zeroing
/// block's next arrivals, releases after the zeroing, complete: a block may
/// go on from a barrier without waiting, but never from two in a row, so it
/// waits at one of those two. Four generations, a power of two, so that `g
/// % 4` stays in step when the 32-bit generation wraps. A count of its own
/// per generation, not one count that grows (complete at `g × blocks`), so
/// that a poll can only see the arrivals at its own generation: loom then
/// explores far fewer values per poll.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GridBarrier {
    /// Block arrivals at generation `g`, in word `g % 4`: the count in the
    /// low half; in the high half, at a keyed barrier of a key of at most
    /// two words (a window's fence, a broadcast's root, a reduce's root
    /// and count), how many of the arriving blocks passed a key not all 0,
    /// which alone OR theirs into `keys` (so a barrier whose keys are all
    /// 0, a correct program's fence, is judged from the count that its
    /// poll loads anyway).
    pub arrivals: [u64; 4],
    /// Across processes only (docs/distributed.md): what the staging
    /// regions hold at generation `g` that the other processes' ranks read
    /// after it, in word `g % 4`: the OR of the arriving blocks'
    /// [`BarrierPayload`]s, which the host's relay reads once its
    /// process's blocks all arrived and ships with their arrival. Zeroed
    /// by the relay with the count (in one process nobody writes it).
    pub payloads: [u64; 4],
    /// The key of a keyed world barrier (a broadcast's root, a
    /// collective's argument agreement) at generation `g`, in line `g %
    /// 4`, one word per word of the key: the OR of `k << 32 | !k` over the
    /// blocks' arrivals, so that every block passed the same word `k`
    /// exactly when the two halves share no bit. The words past
    /// [`BARRIER_KEY_WORDS`](crate::layout::BARRIER_KEY_WORDS) are unused.
    pub keys: [[u64; 8]; 4],
}

/// What one block's arrival at a world barrier across processes asks the
/// relay to carry to the other processes ([`GridBarrier::payloads`]): the
/// staging regions' bytes that its process's ranks wrote for the ranks
/// of every process to read after the barrier, in the current staging
/// half. The regions lie at the same offsets in every process's copy of
/// the world memory (docs/distributed.md, "Collectives and communicators").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BarrierPayload(pub u64);

impl BarrierPayload {
    /// The process's blocks' cells (a reduction round's block results).
    pub const BLOCK_CELLS: u64 = 1;
    /// The broadcast area (a broadcast's root's chunk).
    pub const BROADCAST_AREA: u64 = 2;
    /// The header of the reference rank's cell (the count a reduction's
    /// count mismatch reports), that rank in the high half.
    pub const REFERENCE: u64 = 4;
    /// Set: staging half 1; clear: half 0.
    pub const HALF: u64 = 8;
    /// The process's ranks' cells (what a gather, all-gather, all-to-all,
    /// scan or reduce-scatter round stages, an agreement's published
    /// words).
    pub const RANK_CELLS: u64 = 16;
    /// Every rank's cell (a scatter's round, from the root's block: the
    /// root wrote them all).
    pub const ALL_RANK_CELLS: u64 = 32;

    /// Whether any of `bits` is set.
    pub const fn has(self, bits: u64) -> bool {
        self.0 & bits != 0
    }

    /// The staging half the bytes are in (0 or 1).
    pub const fn half(self) -> usize {
        self.has(Self::HALF) as usize
    }

    /// The reference rank (with [`BarrierPayload::REFERENCE`]).
    pub const fn reference(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

const _: () = assert!(core::mem::size_of::<WaitRecord>() == crate::layout::RECORD_STRIDE);
const _: () = assert!(core::mem::size_of::<ResultRecord>() == crate::layout::RESULT_STRIDE);
const _: () = assert!(core::mem::size_of::<GridBarrier>() == crate::layout::GRID_BARRIER_BYTES);

/// Decodes `rank`'s wait record from a copy of the memory.
///
/// # Panics
/// If the record lies outside `memory`.
pub fn read_wait_record(memory: &[u8], layout: &Layout, rank: u32) -> WaitRecord {
    let at = layout.record(rank);
    bytemuck::pod_read_unaligned(&memory[at..at + core::mem::size_of::<WaitRecord>()])
}

/// Decodes `rank`'s request record `index` from a copy of the memory.
///
/// # Panics
/// If the record lies outside `memory`.
pub fn read_request_record(memory: &[u8], layout: &Layout, rank: u32, index: u32) -> RequestRecord {
    let at = layout.record_of(rank, index);
    bytemuck::pod_read_unaligned(&memory[at..at + core::mem::size_of::<RequestRecord>()])
}

/// Decodes `rank`'s result record from a copy of the memory.
///
/// # Panics
/// If the record lies outside `memory`.
pub fn read_result_record(memory: &[u8], layout: &Layout, rank: u32) -> ResultRecord {
    let at = layout.result(rank);
    bytemuck::pod_read_unaligned(&memory[at..at + core::mem::size_of::<ResultRecord>()])
}

/// What the caller of a blocking call knows of its rank's state, so that
/// the call need not read it (`World::known`; used by `engine::run`).
#[derive(Clone, Copy)]
pub(crate) struct Known {
    /// The rank's idle key may be set: only then does the call note its
    /// progress (`Core::note_progress`, a load of the key).
    pub(crate) spinning: bool,
    /// The active list is empty: the call does not read its tail.
    pub(crate) list_empty: bool,
    /// The world does not trace: the call does not read the config to
    /// know whether it may try alone.
    pub(crate) untraced: bool,
    /// The call's tag, its peer (a world rank) and a send's size are not
    /// checked yet: the engine checks them at its entry.
    pub(crate) unchecked: bool,
}

impl Known {
    /// For a blocking send or receive that leaves its argument checks to
    /// the engine (`point_to_point::unchecked_peer`).
    #[inline(always)]
    pub(crate) fn unchecked(self) -> Known {
        Known {
            unchecked: true,
            ..self
        }
    }
}
