//! The slots of the non-blocking collectives as a rank's requests see them
//! (MPI 4.1 §6.12): the records in the world memory, what a rank keeps of
//! each collective it started, the arrival tree's levels, and completion
//! (`is_complete`, `collect`). A request index at or above
//! [`IMMEDIATE_INDEX`] names one of these slots; `request` completes it
//! here, and `collective::immediate` starts it. The protocol is described
//! in `collective::immediate`.

use crate::buffers::Side;
use crate::codes::Kind;
use crate::communicator::{RankState, World};
use crate::datatype::TypedBuffer;
use crate::error::{Error, ErrorClass};
use crate::layout::{
    immediate_block_level, immediate_fold_block_level, immediate_top_children, COMM_IMMEDIATE_LOCAL_BYTES,
    IMMEDIATE_FANOUT, IMMEDIATE_LOCAL_BYTES, IMMEDIATE_RECORD_BYTES, IMMEDIATE_SLOTS,
};
use crate::polling::{Call, WaitFor};
use crate::shim::{self, AtomicU32, AtomicU64, Ordering};
use crate::status::{Status, PROC_NULL};

/// Request indices at or above this name a non-blocking collective's slot
/// (`index - IMMEDIATE_INDEX`), not a request record.
pub(crate) const IMMEDIATE_INDEX: u32 = 1 << 31;

/// Bytes of the argument header at the start of a rank's cell.
pub const ARGS_BYTES: usize = 16;

/// A rank's arguments, at the start of its cell in a slot: written by the
/// rank before it arrives, read by its level-0 node's last arriver (and,
/// for a node's first rank, by the last arrivers above; in a
/// communicator, by the group's). Every word is accessed atomically
/// (relaxed; published by the arrival counters).
#[repr(C)]
pub struct Args {
    /// [`Kind`] code, plus the rank's local error class (an
    /// [`ErrorClass`] code, 0: none) shifted left by 8.
    pub kind_class: u32,
    /// The root (-1 for the barrier and the all-reduce).
    pub root: i32,
    /// Bytes of the operand or broadcast data.
    pub bytes: u32,
    /// The datatype id of the elements.
    pub datatype: u32,
}

/// A slot's world record ([`IMMEDIATE_RECORD_BYTES`], its result cell of
/// `immediate_bytes` follows).
#[repr(C)]
pub struct SlotRecord {
    /// The last use of the slot that completed (every rank arrived and the
    /// result is in the result cell), with whether its verdict was clean
    /// ([`done_word`]). Stored (Release) by the world's last arriver;
    /// loaded (Acquire) by every test.
    pub done: u32,
    /// Blocks whose ranks have all arrived, over all uses (`u × blocks`
    /// once use `u` is complete).
    pub arrived: u32,
    /// In a world across processes (docs/distributed.md): the last use
    /// whose process part (its ranks' fold in the result cell) the
    /// process's top arriver handed to the host's relay (Release), which
    /// then publishes `done` once every process's part came.
    pub handed: u32,
    /// The verdict of the last completed use whose verdict was not clean:
    /// an [`ErrorClass`] code. A clean verdict (the arguments agreed) is
    /// `done`'s bit alone, and this word is then an earlier use's.
    pub verdict: u32,
    /// Rank 0's arguments of the last completed use whose verdict was not
    /// clean (what a mismatch error reports as expected).
    pub reference: Args,
    /// With `handed`: the reduction's predefined operation code (0: none),
    /// which the relay applies to the processes' parts.
    pub operation: u32,
    /// With `handed`, in a communicator's group that spans processes: the
    /// group's size (the relay reads its members from the context's table).
    pub group_size: u32,
    /// At a communicator context's first entry, in slot 0 only: set (1,
    /// Release) in this process's memory once any group of the context
    /// that spans processes handed a use to the relay, which then reads the
    /// context's table for the groups with members here and looks at their
    /// records (docs/distributed.md). Never cleared.
    pub relayed: u32,
    /// Unused.
    pub reserved: [u32; 5],
}

/// The verdict the host's relay publishes for a reduction with an
/// operation of the program's own whose members span processes, when
/// their arguments agree (docs/distributed.md): the parts are in this
/// process's memory (the other processes' in their shadow ranks' or
/// members' cells), and each rank joins them itself at its completion
/// with the operation it kept (`JoinFn`). Not an error class.
pub const VERDICT_JOIN: u32 = 0xffff_0000;

/// Bytes at the end of a rank's cell in which a rank that starts such a
/// reduction keeps its `JoinFn` (8 bytes) and its operation (at most 8
/// bytes, aligned to at most 8: a closure that captures nothing, or one
/// word), moved there, until its completion; its operand may then fill
/// the rest of the cell but these (32 bytes of the smallest,
/// 64-byte cell).
pub const JOIN_KEEP_BYTES: usize = 16;

/// Where the parts of a join lie: part `i` at `first + i × stride`, but
/// part `own` (if any) at `own_at`.
pub(crate) struct JoinParts {
    pub(crate) first: *const u8,
    pub(crate) stride: usize,
    pub(crate) count: u32,
    pub(crate) own: u32,
    pub(crate) own_at: *const u8,
}

impl JoinParts {
    /// The address of part `i`.
    pub(crate) fn at(&self, i: u32) -> *const u8 {
        if i == self.own {
            self.own_at
        } else {
            self.first.wrapping_add(i as usize * self.stride)
        }
    }
}

/// What a rank keeps for a join ([`VERDICT_JOIN`]): with `out` not null,
/// writes `parts` (each `bytes` of elements) combined element by element
/// in part order with the operation kept at `keep + 8` into `out`; then,
/// either way, drops that operation.
///
/// # Safety
/// `keep + 8` holds the operation this function was made for, moved
/// there and not dropped since; `out` (unless null) is valid for `bytes`
/// of its elements, and every part for `bytes`, published to the caller.
pub(crate) type JoinFn = unsafe fn(keep: *mut u8, out: *mut u8, parts: &JoinParts, bytes: usize);

/// 32-bit words of a [`SlotRecord`].
pub(crate) const SLOT_RECORD_WORDS: usize = core::mem::size_of::<SlotRecord>() / 4;

/// The [`SlotRecord::done`] word that publishes use `use_` of a slot with
/// verdict `verdict`: the use (modulo 2^31) above a bit set when the
/// verdict is 0, so that a wait that sees its use complete knows from the
/// same load whether it needs the verdict's words at all (a wait's
/// completion).
pub const fn done_word(use_: u32, verdict: u32) -> u32 {
    use_ << 1 | (verdict == 0) as u32
}

/// Whether `done`, a [`SlotRecord::done`] word, says that use `use_`
/// completed.
const fn done_is(done: u32, use_: u32) -> bool {
    done >> 1 == use_ & (u32::MAX >> 1)
}

/// The use a start gives the collective it numbers `n` (counted modulo
/// some power of two that is a multiple of [`IMMEDIATE_SLOTS`]): the
/// `n / IMMEDIATE_SLOTS + 1`-th of slot `n mod IMMEDIATE_SLOTS`, never 0
/// (a slot's words start at 0).
pub(crate) const fn use_number(n: u32) -> u32 {
    n / IMMEDIATE_SLOTS + 1
}

/// The use of slot `slot` that the last of `started` collectives started
/// there got ([`use_number`]), `started` counted modulo `modulus` (a
/// power of two, a multiple of [`IMMEDIATE_SLOTS`]; 0 for 2^32), as the
/// start that numbered it saw its count: across the modulus too, where
/// the count starts again at 0 while the last one in the slot was
/// numbered just below the modulus.
pub(crate) const fn last_use(started: u32, slot: u32, modulus: u32) -> u32 {
    // The slot's last is `slot + k × IMMEDIATE_SLOTS` for the largest `k`
    // below the count, whose use is `k + 1`; `started - 1 - slot` is that
    // plus less than `IMMEDIATE_SLOTS`, and taken modulo `modulus` it stays
    // below it where the count has wrapped and the slot's last has not.
    use_number(started.wrapping_sub(1).wrapping_sub(slot) & modulus.wrapping_sub(1))
}

/// A node's record in a slot of the world ([`IMMEDIATE_RECORD_BYTES`],
/// its cell of partial results follows): a node of the arrival tree
/// (`IMMEDIATE_FANOUT` ranks, or nodes of the level below, per node).
#[repr(C)]
pub struct NodeRecord {
    /// Unused.
    pub unused: u32,
    /// The first local error class of its subtree in rank order, stored
    /// by its last arriver in a use whose subtree had one (read by the
    /// parent's last arriver only then: the child's bit in the parent's
    /// `Tally`).
    pub verdict: u32,
    /// At the world's top node, when it counts in rounds
    /// (`World::top_round`): the arrival word of the uses `u` with
    /// `u mod 4 = 0`. Unused elsewhere.
    pub round: u64,
    /// The `Tally` of the children that have arrived in the current use:
    /// the arrival word (`Tally::arrival`: how many, the kinds, the
    /// children with an error), to which each child adds its own as it
    /// arrives, then root, datatype and count (`Tally::packed`), into
    /// which it ORs its own before. The last arriver learns the first
    /// from its add, reads the others when some child's kind is not the
    /// barrier, and zeroes them all for the next use. At the world's top
    /// node with rounds the first word is the arrival word of the uses
    /// with `u mod 4 = 1`, which its last arriver does not zero.
    pub tally: [u64; 4],
    /// At the world's top node with rounds: the arrival words of the uses
    /// with `u mod 4 = 2` and `3`. Unused elsewhere.
    pub rounds: [u64; 2],
}

/// How many arrival words the world's top node keeps, one per use modulo
/// this ([`World::top_round`]): at least three, since use `u`'s word is
/// zeroed by use `u + 1`'s last arriver after its add, which ranks of use
/// `u + 2` need not have seen ordered before theirs; four, so that the
/// rotation stays in step where the use count wraps (at
/// `RankState::STARTED_MODULUS / IMMEDIATE_SLOTS`, a power of two).
pub(crate) const TOP_ROUNDS: u32 = 4;

/// Offset in the top node's record of the arrival word of use `use_`
/// ([`TOP_ROUNDS`]): `round`, `tally[0]`, `rounds[0]`, `rounds[1]`, in
/// arithmetic (a table would be a load).
const fn round_offset(use_: u32) -> usize {
    let i = (use_ % TOP_ROUNDS) as usize;
    8 + 8 * i + 24 * (i >> 1)
}

const _: () = assert!(round_offset(0) == core::mem::offset_of!(NodeRecord, round));
const _: () = assert!(round_offset(1) == core::mem::offset_of!(NodeRecord, tally));
const _: () = assert!(round_offset(2) == core::mem::offset_of!(NodeRecord, rounds));
const _: () = assert!(round_offset(3) == core::mem::offset_of!(NodeRecord, rounds) + 8);
const _: () = assert!(core::mem::size_of::<NodeRecord>() == IMMEDIATE_RECORD_BYTES);

/// What a set of ranks passed to a non-blocking collective, in a form the
/// ranks fold into a node's words as they arrive, in any order (the kinds
/// and errors with the arrival's add, the rest with `red.or`), so that its
/// last arriver can judge the whole set from the add's result and at most
/// one batch of loads (instead of each child's arguments one after
/// another).
///
/// A value `v` that must be equal on every rank is kept as
/// `pack(v) = v << 32 | !v`: ORed over the ranks, a bit set in both
/// halves is a bit on which two ranks differ. The kinds are a set of
/// bits (`1 << kind`); ranks with a local error are a set of children
/// (one bit per child of the node, [`IMMEDIATE_FANOUT`] at most 32).
/// A barrier's root, count and datatype are fixed by its kind, so a
/// barrier leaves them out (zero): a rank that started something else
/// differs in the kinds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// `1 << kind` of every rank's [`Kind`].
    pub(crate) kinds: u32,
    /// The children (bit `c` for the node's `c`-th child) under which some
    /// rank found an error in its own arguments.
    pub(crate) errors: u32,
    /// The roots, packed.
    pub(crate) root: u64,
    /// The datatype ids, packed.
    pub(crate) datatype: u64,
    /// The byte counts, packed.
    pub(crate) bytes: u64,
}

/// Bits of each field of an arrival word ([`Tally::arrival`]).
const ARRIVAL_FIELD: u32 = 6;
/// The largest [`Kind`] code.
const MAX_KIND: u32 = Kind::AllReduce as u32;

// An arrival word's fields: the count and a count per kind below bit 32,
// each up to `IMMEDIATE_FANOUT`; a bit per child from bit 32.
const _: () = assert!(IMMEDIATE_FANOUT < 1 << ARRIVAL_FIELD);
const _: () = assert!(ARRIVAL_FIELD * (MAX_KIND + 1) <= 32);
const _: () = assert!(IMMEDIATE_FANOUT <= 32);

/// `v` as a [`Tally`] keeps a value that must be equal everywhere.
const fn pack(v: u32) -> u64 {
    (v as u64) << 32 | !v as u64
}

/// Whether the ranks behind an ORed [`pack`] agree on the value.
const fn agrees(packed: u64) -> bool {
    (packed >> 32) as u32 & packed as u32 == 0
}

/// Whether the ranks behind a node's packed words ([`Tally::packed`])
/// agree on root, datatype and count.
pub(crate) const fn packed_agree([root, datatype, bytes]: [u64; 3]) -> bool {
    agrees(root) && agrees(datatype) && agrees(bytes)
}

impl Tally {
    /// One rank's arguments, its error (if any) as bit `child`.
    pub(crate) fn of(a: &Args, child: u32) -> Tally {
        let kind = a.kind_class & 0xff;
        let errors = if a.kind_class >> 8 != 0 { 1 << child } else { 0 };
        if kind == Kind::Barrier as u32 {
            return Tally {
                kinds: 1 << kind,
                errors,
                ..Tally::default()
            };
        }
        Tally {
            kinds: 1 << kind,
            errors,
            root: pack(a.root as u32),
            datatype: pack(a.datatype),
            bytes: pack(a.bytes),
        }
    }

    /// Both sets' ranks together.
    pub(crate) fn merge(&mut self, o: &Tally) {
        self.kinds |= o.kinds;
        self.errors |= o.errors;
        self.root |= o.root;
        self.datatype |= o.datatype;
        self.bytes |= o.bytes;
    }

    /// What a child adds to its node's arrival word, the child being the
    /// node's `child`-th: one arrival (bits 0..6), one for each of its
    /// kinds (bits `6 k .. 6 k + 6` for kind `k`), and bit `32 + child`
    /// if its subtree has an error. Each field counts at most
    /// [`IMMEDIATE_FANOUT`] children, so no field carries into the next,
    /// and the error bits are distinct, so their sum is their OR.
    pub(crate) fn arrival(&self, child: u32) -> u64 {
        let mut word = 1u64;
        let mut kinds = self.kinds;
        while kinds != 0 {
            word += 1 << (ARRIVAL_FIELD * kinds.trailing_zeros());
            kinds &= kinds - 1;
        }
        if self.errors != 0 {
            word += 1 << (32 + child);
        }
        word
    }

    /// What each child of a node adds to its arrival word when every rank
    /// under it started a barrier and none found an error in its own
    /// arguments ([`Tally::arrival`]): a node whose word reads `children`
    /// times this has all its children, and they agree.
    pub(crate) const CLEAN_BARRIER: u64 = 1 + (1 << (ARRIVAL_FIELD * Kind::Barrier as u32));

    /// The arrivals counted in an arrival word.
    pub(crate) fn arrivals(word: u64) -> u32 {
        (word & ((1 << ARRIVAL_FIELD) - 1)) as u32
    }

    /// The kinds and the children with an error of a complete arrival
    /// word, with the other fields zero.
    pub(crate) fn of_arrival(word: u64) -> Tally {
        let mut kinds = 0;
        for k in 1..=MAX_KIND {
            if (word >> (ARRIVAL_FIELD * k)) & ((1 << ARRIVAL_FIELD) - 1) != 0 {
                kinds |= 1 << k;
            }
        }
        Tally {
            kinds,
            errors: (word >> 32) as u32,
            ..Tally::default()
        }
    }

    /// Whether some rank of the set started something else than a
    /// barrier (then its root, datatype and count are in the packed words).
    pub(crate) fn has_packed(&self) -> bool {
        self.kinds & !(1 << Kind::Barrier as u32) != 0
    }

    /// Root, datatype and count, packed, as ORed into a node.
    pub(crate) fn packed(&self) -> [u64; 3] {
        [self.root, self.datatype, self.bytes]
    }

    /// The verdict on the whole set: `first_error` (the first local error
    /// class in rank order, 0 if none), else the first disagreement in
    /// the order kind ([`KIND_MISMATCH`] with the two lowest kinds), root
    /// (`MPI_ERR_ROOT`), datatype (`MPI_ERR_TYPE`), count
    /// (`MPI_ERR_COUNT`), else 0.
    pub(crate) fn verdict(&self, first_error: u32) -> u32 {
        if first_error != 0 {
            first_error
        } else if !self.kinds.is_power_of_two() {
            let one = self.kinds.trailing_zeros();
            let two = (self.kinds & (self.kinds - 1)).trailing_zeros();
            KIND_MISMATCH | one << 16 | two << 24
        } else if !agrees(self.root) {
            ErrorClass::Root as u32
        } else if !agrees(self.datatype) {
            ErrorClass::Type as u32
        } else if !agrees(self.bytes) {
            ErrorClass::Count as u32
        } else {
            0
        }
    }

    /// The arguments every rank passed, when they agree ([`Tally::verdict`]
    /// 0; a barrier's root, count and datatype read 0).
    pub(crate) fn agreed(&self) -> Args {
        Args {
            kind_class: self.kinds.trailing_zeros(),
            root: (self.root >> 32) as i32,
            bytes: (self.bytes >> 32) as u32,
            datatype: (self.datatype >> 32) as u32,
        }
    }
}

impl Args {
    /// The header from its four words, in field order.
    fn from_words([kind_class, root, bytes, datatype]: [u32; 4]) -> Args {
        Args {
            kind_class,
            root: root as i32,
            bytes,
            datatype,
        }
    }
}

const _: () = assert!(core::mem::size_of::<Args>() == ARGS_BYTES);
const _: () = assert!(core::mem::size_of::<SlotRecord>() == IMMEDIATE_RECORD_BYTES);
const _: () = assert!(core::mem::size_of::<NodeRecord>() == IMMEDIATE_RECORD_BYTES);

/// Where a started collective's result goes ([`PendingRecord::out_kind`]).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutKind {
    /// Nothing to copy out.
    None = 0,
    /// Plain bytes at [`PendingRecord::out`].
    Plain = 1,
    /// A view's typed buffer at [`PendingRecord::out`].
    Typed = 2,
}

/// What a rank keeps of the collective it has outstanding in one slot,
/// beside the [`Args`] in its own cell of the slot (kind, root, bytes,
/// datatype, its local error class: the cell is the rank's until it starts
/// the slot's next use): a record of its [`ImmediateLocal`], private to
/// the rank (plain loads and stores). Zeroed memory is a free slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRecord {
    /// The owning scope's id; 0: the slot is free for this rank. In the
    /// world's record, only while the `World` says the slot in use
    /// (`RankState::pending`): a world slot's completion clears that bit
    /// alone (`World::free_pending`).
    pub scope: u32,
    /// Bytes of one element.
    pub size: u32,
    /// Where the result goes: an [`OutKind`] code, with `OUT_KEPT` set
    /// when the rank kept a `JoinFn` in its cell.
    pub out_kind: u32,
    /// The address of the result buffer (plain bytes or a typed buffer),
    /// low word then high word.
    pub out: [u32; 2],
    /// The two detail words of this rank's own argument error
    /// ([`Error::to_words`]; its class is in the rank's [`Args`]).
    pub details: [u32; 2],
}

/// [`PendingRecord::out_kind`] bit: the rank kept a `JoinFn` and its
/// operation at the end of its cell (`kept_at`), which its completion
/// runs or drops.
pub const OUT_KEPT: u32 = 1 << 8;

impl PendingRecord {
    /// Where the result goes (none: nothing to copy).
    pub(crate) fn destination(&self) -> Option<Side> {
        let address = (self.out[0] as u64 | (self.out[1] as u64) << 32) as usize;
        // Without the `distributed` feature the bit is never set.
        let kind = if cfg!(feature = "distributed") {
            self.out_kind & !OUT_KEPT
        } else {
            self.out_kind
        };
        match kind {
            k if k == OutKind::Plain as u32 => Some(Side::Plain(address as *mut u8)),
            k if k == OutKind::Typed as u32 => Some(Side::Typed(address as *const TypedBuffer)),
            _ => None,
        }
    }
}

/// A rank's private record of its non-blocking collectives in the world
/// memory ([`IMMEDIATE_LOCAL_BYTES`], at
/// [`Layout::immediate_local_of`](crate::layout::Layout::immediate_local_of)).
/// Kept there rather than in [`World`], so that a kernel that passes
/// `&World` to out-of-line calls keeps the `World` in registers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImmediateLocal {
    /// Non-blocking collectives this rank started so far; the use of slot
    /// `s` outstanding is the number of those that took slot `s`. Kept
    /// for a communicator context; the world's count lives in the rank's
    /// `World` (this word stays 0 there).
    pub started: u32,
    /// Unused.
    pub reserved: u32,
    /// Per slot, the collective outstanding there.
    pub slots: [PendingRecord; IMMEDIATE_SLOTS as usize],
}

const _: () = assert!(core::mem::size_of::<ImmediateLocal>() == IMMEDIATE_LOCAL_BYTES);

/// A rank's private record of its non-blocking collectives on one
/// communicator context ([`COMM_IMMEDIATE_LOCAL_BYTES`], at
/// [`Layout::immediate_comm_local`](crate::layout::Layout::immediate_comm_local)):
/// which group of the context it is in (written as each collective
/// starts; a rank is in one group of a context at most, so it never
/// changes), then its [`ImmediateLocal`] there.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommImmediateLocal {
    /// The group's first entry in the context's table.
    pub start: u32,
    /// The group's size.
    pub size: u32,
    /// This rank's rank in the group.
    pub member: u32,
    /// In a world across processes: how many of the group's members this
    /// process runs, counted from the context's table at this rank's first
    /// non-blocking collective on the context (0: not yet counted).
    pub local_members: u32,
    /// Unused.
    pub reserved: [u32; 12],
    /// Its collectives on the context.
    pub local: ImmediateLocal,
}

const _: () = assert!(core::mem::size_of::<CommImmediateLocal>() == COMM_IMMEDIATE_LOCAL_BYTES);

/// Where a rank's non-blocking collective lives: the world's slots
/// (context 0: the arrival tree of the world's ranks), or a communicator
/// context's (one level: the group's record, at its first member's entry
/// of the context's table, and its members' cells at theirs).
#[derive(Clone, Copy)]
pub(crate) struct Space {
    /// The context id (0: the world).
    pub(crate) id: u32,
    /// The group's first entry in the context's table (0 for the world).
    pub(crate) start: u32,
    /// The group's size (the world's ranks for the world).
    pub(crate) size: u32,
    /// This rank's rank in the group.
    pub(crate) member: u32,
}

impl Space {
    pub(crate) fn world(w: &World) -> Space {
        Space {
            id: 0,
            start: 0,
            size: w.ranks(),
            member: w.rank,
        }
    }

    /// The request index of slot `slot` of this space.
    pub(crate) fn index(&self, slot: u32) -> u32 {
        IMMEDIATE_INDEX + self.id * IMMEDIATE_SLOTS + slot
    }
}

/// The space of request index `i` (as the rank recorded it when it started
/// a collective there).
pub(crate) fn space_of(w: &World, i: u32) -> Space {
    let id = (i - IMMEDIATE_INDEX) / IMMEDIATE_SLOTS;
    if id == 0 {
        return Space::world(w);
    }
    let p = w.comm_local(id);
    crate::records::private(p, false);
    // SAFETY: the rank's own record (`immediate_comm_local`), plain reads
    // of words only it writes.
    let l = unsafe { *p };
    Space {
        id,
        start: l.start,
        size: l.size,
        member: l.member,
    }
}

/// What a rank keeps of one started collective, decoded from its
/// [`PendingRecord`] and its [`Args`].
#[derive(Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) kind: Kind,
    pub(crate) root: i32,
    /// Where the result goes at completion (none: nothing to copy).
    pub(crate) out: Option<Side>,
    /// Bytes, element size and datatype id this rank passed.
    pub(crate) bytes: u32,
    pub(crate) size: u32,
    pub(crate) datatype: u32,
    /// This rank's own argument error, returned at completion.
    pub(crate) error: Option<Error>,
}

pub(crate) fn slot_of(index: u32) -> u32 {
    (index - IMMEDIATE_INDEX) % IMMEDIATE_SLOTS
}

/// The kind of a [`Kind`] code (the barrier for an unknown one).
pub(crate) fn kind_of(code: u32) -> Kind {
    match code & 0xff {
        k if k == Kind::Broadcast as u32 => Kind::Broadcast,
        k if k == Kind::Reduce as u32 => Kind::Reduce,
        k if k == Kind::AllReduce as u32 => Kind::AllReduce,
        _ => Kind::Barrier,
    }
}

impl World {
    /// This rank's private record of its non-blocking collectives on
    /// communicator context `id` (`1..=communicators`, the world with
    /// their state).
    pub(crate) fn comm_local(&self, id: u32) -> *mut CommImmediateLocal {
        // SAFETY: inside the world memory (`Layout::immediate_comm_local`:
        // the caller's `id` names a context, and the world has their state),
        // 64-aligned.
        unsafe { self.base.add(self.layout.immediate_comm_local(id, self.rank)) as *mut CommImmediateLocal }
    }

    /// This rank's private record of its non-blocking collectives in `sp`.
    pub(crate) fn immediate_local(&self, sp: Space) -> *mut ImmediateLocal {
        if sp.id != 0 {
            // SAFETY: the record is inside the rank's `CommImmediateLocal`.
            return unsafe { core::ptr::addr_of_mut!((*self.comm_local(sp.id)).local) };
        }
        // SAFETY: inside the world memory (`Layout::immediate_local_of`),
        // 8-aligned (the region is 64-aligned, records 64 bytes).
        unsafe { self.base.add(self.layout.immediate_local_of(self.rank)) as *mut ImmediateLocal }
    }

    /// Non-blocking collectives this rank started in `sp`, modulo
    /// [`World::started_modulus`]: the world's count is kept by the
    /// `World` ([`RankState::started`]), a communicator context's in its
    /// record.
    pub(crate) fn started(&self, sp: Space) -> u32 {
        if sp.id == 0 {
            return self.known.started();
        }
        // SAFETY: the record is this rank's alone; only an address.
        let p = unsafe { core::ptr::addr_of!((*self.immediate_local(sp)).started) };
        crate::records::private(p, false);
        // SAFETY: a plain read of an initialised (zeroed by the host) word.
        unsafe { *p }
    }

    pub(crate) fn set_started(&self, sp: Space, n: u32) {
        if sp.id == 0 {
            return self.known.set_started(n);
        }
        // SAFETY: as `started`.
        let p = unsafe { core::ptr::addr_of_mut!((*self.immediate_local(sp)).started) };
        crate::records::private(p, true);
        // SAFETY: as `started`, a plain write.
        unsafe { *p = n }
    }

    /// Whether slot `slot` of `sp` holds a collective this rank started
    /// and has not collected (a start's check): for the world, a bit the
    /// `World` keeps ([`RankState::pending`]), else the record's scope
    /// word.
    pub(crate) fn slot_in_use(&self, sp: Space, slot: u32) -> bool {
        if sp.id == 0 {
            self.known.pending(slot)
        } else {
            self.pending_scope(sp, slot) != 0
        }
    }

    /// The record of this rank's slot `slot` in `sp` (`slot < IMMEDIATE_SLOTS`).
    pub(crate) fn pending_record(&self, sp: Space, slot: u32) -> *mut PendingRecord {
        // SAFETY: `slot` is a slot index, so the record is inside this
        // rank's `ImmediateLocal`.
        unsafe { core::ptr::addr_of_mut!((*self.immediate_local(sp)).slots[slot as usize]) }
    }

    /// The scope owning slot `slot` of this rank in `sp` (0: free).
    pub(crate) fn pending_scope(&self, sp: Space, slot: u32) -> u32 {
        // A world slot's record may still name the scope it was collected
        // in ([`World::free_pending`]).
        if sp.id == 0 && !self.known.pending(slot) {
            return 0;
        }
        // SAFETY: as `started`, of the slot's record.
        let p = unsafe { core::ptr::addr_of!((*self.pending_record(sp, slot)).scope) };
        crate::records::private(p, false);
        // SAFETY: as `started`.
        unsafe { *p }
    }

    /// What [`World::started`] counts modulo in `sp` (0: 2^32).
    pub(crate) fn started_modulus(&self, sp: Space) -> u32 {
        if sp.id == 0 {
            RankState::STARTED_MODULUS
        } else {
            0
        }
    }

    /// The use of slot `slot` of `sp` that this rank started last.
    pub(crate) fn use_of(&self, sp: Space, slot: u32) -> u32 {
        last_use(self.started(sp), slot, self.started_modulus(sp))
    }

    /// What this rank keeps of its collective in slot `slot` of `sp`.
    pub(crate) fn pending(&self, sp: Space, slot: u32) -> Pending {
        self.pending_of(sp, slot, &self.read_args(sp, slot, sp.member))
    }

    /// [`World::pending`] with this rank's arguments `args` already read.
    pub(crate) fn pending_of(&self, sp: Space, slot: u32, args: &Args) -> Pending {
        let r = self.pending_record_of(sp, slot);
        let out = r.destination();
        Pending {
            kind: kind_of(args.kind_class),
            root: args.root,
            out,
            bytes: args.bytes,
            size: r.size,
            datatype: args.datatype,
            error: Error::from_words([args.kind_class >> 8, r.details[0], r.details[1], 0, 0]),
        }
    }

    /// Notes in this rank's record of slot `slot` of `sp` that it kept a
    /// `JoinFn` in its cell (`OUT_KEPT`).
    pub(crate) fn set_kept(&self, sp: Space, slot: u32) {
        let p = self.pending_record(sp, slot);
        // SAFETY: the rank's own record; only an address.
        let kind = unsafe { core::ptr::addr_of_mut!((*p).out_kind) };
        crate::records::private(kind, true);
        // SAFETY: as `started`, plain accesses of a word only it accesses.
        unsafe { *kind |= OUT_KEPT };
    }

    /// A copy of this rank's record of slot `slot` in `sp`.
    pub(crate) fn pending_record_of(&self, sp: Space, slot: u32) -> PendingRecord {
        let p = self.pending_record(sp, slot);
        crate::records::private(p, false);
        // SAFETY: as `started`, a plain read of the slot's record.
        unsafe { *p }
    }

    /// Keeps what this rank needs of its collective in slot `slot` (the
    /// rest is in its [`Args`]).
    pub(crate) fn set_pending(
        &self,
        sp: Space,
        slot: u32,
        scope: u32,
        size: u32,
        out: Option<Side>,
        error: Option<Error>,
    ) {
        let (out_kind, address) = match out {
            None => (OutKind::None, 0),
            Some(Side::Plain(p)) => (OutKind::Plain, p as usize as u64),
            Some(Side::Typed(t)) => (OutKind::Typed, t as usize as u64),
        };
        let words = error.map_or([0; 5], |e| e.to_words());
        let r = PendingRecord {
            scope,
            size,
            out_kind: out_kind as u32,
            out: [address as u32, (address >> 32) as u32],
            details: [words[1], words[2]],
        };
        let p = self.pending_record(sp, slot);
        crate::records::private(p, true);
        // SAFETY: as `started`, a plain write of the slot's record.
        unsafe { *p = r }
        if sp.id == 0 {
            self.known.set_pending(slot, true);
        }
    }

    /// Frees slot `slot` of this rank in `sp`: in the world, the bit the
    /// `World` keeps alone (its record is read only while the bit is set:
    /// [`World::pending_scope`]), which saves a write on the path from a
    /// barrier's completion to the rank's next start.
    pub(crate) fn free_pending(&self, sp: Space, slot: u32) {
        if sp.id != 0 {
            free_record(self.pending_record(sp, slot));
        }
        self.slot_collected(sp, slot);
    }

    /// Notes that the collective in slot `slot` of `sp` was collected (its
    /// record freed): see [`World::slot_in_use`]. Clearing twice is
    /// harmless (a wait's poll may collect through [`collect`], which
    /// frees the slot itself).
    fn slot_collected(&self, sp: Space, slot: u32) {
        if sp.id == 0 {
            self.known.set_pending(slot, false);
        }
    }
}

pub(crate) fn pending(w: &World, index: u32) -> Pending {
    w.pending(space_of(w, index), slot_of(index))
}

impl World {
    /// Offset of the record of slot `slot` of `sp`: the world's slot
    /// record, or the group's, at its first entry (the result cell follows
    /// either).
    pub(crate) fn slot_offset(&self, sp: Space, slot: u32) -> usize {
        if sp.id == 0 {
            self.layout.immediate_slot(slot)
        } else {
            self.layout.immediate_comm_entry(sp.id, slot, sp.start)
        }
    }

    pub(crate) fn slot_word(&self, sp: Space, slot: u32, offset: usize) -> &AtomicU32 {
        &self.slot_record(sp, slot)[offset / 4]
    }

    /// The words of the slot's record, located with one read of the
    /// layout: a run of accesses to several of them computes no address
    /// after its first atomic (the GPU would load the layout again).
    pub(crate) fn slot_record(&self, sp: Space, slot: u32) -> &[AtomicU32; SLOT_RECORD_WORDS] {
        // SAFETY: the slot's record, 64-aligned (the regions are 64-aligned,
        // the records 64 bytes), inside the region, accessed only
        // atomically; an array of `repr(transparent)` cells is the words in
        // a row.
        unsafe { &*(self.base.add(self.slot_offset(sp, slot)) as *const [AtomicU32; SLOT_RECORD_WORDS]) }
    }

    /// Offset of member `member`'s cell (arguments, then operand) in slot
    /// `slot` of `sp`.
    pub(crate) fn cell_offset(&self, sp: Space, slot: u32, member: u32) -> usize {
        if sp.id == 0 {
            self.layout.immediate_rank(slot, member)
        } else {
            self.layout.immediate_comm_entry(sp.id, slot, sp.start + member)
                + IMMEDIATE_RECORD_BYTES
                + self.layout.immediate_bytes
        }
    }

    pub(crate) fn node_word(&self, slot: u32, node: u32, offset: usize) -> &AtomicU32 {
        // SAFETY: as `slot_word`, in node `node`'s record (`node` below
        // the tree's nodes: `Tree` derives it from the layout).
        unsafe { shim::atomic_u32_at(self.base, self.layout.immediate_node(slot, node) + offset) }
    }

    /// The arrival word of use `use_` of slot `slot` at the world's top
    /// node and how many children a barrier's top has, when the top counts
    /// its arrivals in rounds ([`TOP_ROUNDS`]): a world in one process whose
    /// top's arrival word is in global memory (not a node in the block's
    /// words, `collective::immediate`'s `block_tally`: a world of one
    /// block whose entry zeroed the block's words, and whose top is a
    /// level-0 node of at most `IMMEDIATE_FANOUT` ranks or the block's
    /// level-1 node). A waiting rank of a barrier sees its round
    /// complete in that word, which nobody zeroes until every rank has
    /// started the slot's next use (`collective::immediate`, "Rounds").
    #[inline(always)]
    pub(crate) fn top_round(&self, slot: u32, use_: u32) -> Option<(&AtomicU64, u32)> {
        let (ranks, bd) = (self.ranks(), self.block_dim());
        // A top in the block's words: a level-0 node or a block's level-1
        // node in a world of one block (`collective::immediate`).
        let in_block = self.known.block_words()
            && ranks <= bd
            && (ranks <= IMMEDIATE_FANOUT || immediate_block_level(ranks, bd));
        if (cfg!(feature = "distributed") && self.across_processes()) || in_block {
            return None;
        }
        Some((
            self.round_word(slot, self.layout.immediate_top, use_),
            immediate_top_children(ranks, bd),
        ))
    }

    /// The arrival word of use `use_` of slot `slot` in node `node`'s
    /// record, the world's top's words ([`TOP_ROUNDS`]): node
    /// [`Layout::immediate_top`](crate::layout::Layout::immediate_top),
    /// the top of a barrier's tree, also for a use whose tree has a level
    /// more (a reduction of small words), so that the rounds of every use
    /// of the slot rotate in the same words.
    #[inline(always)]
    pub(crate) fn round_word(&self, slot: u32, node: u32, use_: u32) -> &AtomicU64 {
        let at = self.layout.immediate_node(slot, node) + round_offset(use_);
        // SAFETY: an 8-aligned word of the node's record (the records are
        // 64-aligned, `round_offset` one of its u64 fields), accessed only
        // atomically.
        unsafe { shim::atomic_u64_at(self.base, at) }
    }

    /// The [`Tally`] words of node `node` in slot `slot`.
    pub(crate) fn node_tally(&self, slot: u32, node: u32) -> &[AtomicU64; 4] {
        let at = self.layout.immediate_node(slot, node) + core::mem::offset_of!(NodeRecord, tally);
        // SAFETY: four 8-aligned words of the node's record (the records
        // are 64-aligned, the words at offset 16), accessed only
        // atomically; an array of `repr(transparent)` cells is the words
        // in a row.
        unsafe { &*(self.base.add(at) as *const [AtomicU64; 4]) }
    }

    pub(crate) fn rank_word(&self, sp: Space, slot: u32, member: u32, offset: usize) -> &AtomicU32 {
        // SAFETY: as `slot_word`, in member `member`'s argument header.
        unsafe { shim::atomic_u32_at(self.base, self.cell_offset(sp, slot, member) + offset) }
    }

    /// The result cell of a slot of `sp`.
    pub(crate) fn result_cell(&self, sp: Space, slot: u32) -> *mut u8 {
        // SAFETY: the cell follows the slot's record, inside the region.
        unsafe { self.base.add(self.slot_offset(sp, slot) + IMMEDIATE_RECORD_BYTES) }
    }

    /// The partial-result cell of a node in a slot.
    pub(crate) fn partial_cell(&self, slot: u32, node: u32) -> *mut u8 {
        // SAFETY: the cell follows the node's record, inside the region.
        unsafe {
            self.base
                .add(self.layout.immediate_node(slot, node) + IMMEDIATE_RECORD_BYTES)
        }
    }

    /// The small word of this block's rank `thread` in world slot `slot`
    /// in the block's launch-sized shared memory, where a level-0 node
    /// whose tally words lie in the block's words keeps its ranks' small
    /// words (`collective::immediate`); None where the launch gave too
    /// little of it ([`block_small_word`](crate::layout::block_small_word)).
    /// The launch's size and the block's are special registers on the GPU:
    /// no word of the world is read.
    pub(crate) fn block_small(&self, slot: u32, thread: u32) -> Option<*mut u8> {
        let at =
            crate::layout::block_small_word(shim::launch_shared_bytes(), self.block_dim(), slot, thread)?;
        Some(shim::launch_shared().wrapping_add(at))
    }

    /// World rank `rank`'s small word in world slot `slot`
    /// ([`Layout::immediate_word`](crate::layout::Layout::immediate_word)).
    pub(crate) fn rank_small(&self, slot: u32, rank: u32) -> *mut u8 {
        // SAFETY: a word of the slot's small words, inside the region.
        unsafe { self.base.add(self.layout.immediate_word(slot, rank)) }
    }

    /// Node `node`'s small word in world slot `slot`.
    pub(crate) fn node_small(&self, slot: u32, node: u32) -> *mut u8 {
        let index = self.layout.immediate_node_word(node);
        // SAFETY: as `rank_small`.
        unsafe { self.base.add(self.layout.immediate_word(slot, index)) }
    }

    /// The operand of a member in a slot of `sp` (after its argument header).
    pub(crate) fn operand(&self, sp: Space, slot: u32, member: u32) -> *mut u8 {
        // SAFETY: inside the member's cell of `immediate_bytes >= 64` bytes.
        unsafe { self.base.add(self.cell_offset(sp, slot, member) + ARGS_BYTES) }
    }

    pub(crate) fn read_args(&self, sp: Space, slot: u32, member: u32) -> Args {
        // Relaxed: published by the arrival counters (see `arrive`).
        Args::from_words(shim::load_relaxed_x4(self.args_words(sp, slot, member)))
    }

    /// The argument header of `member` in `slot` of `sp`.
    pub(crate) fn args_words(&self, sp: Space, slot: u32, member: u32) -> &[AtomicU32; 4] {
        // SAFETY: the header is the first 16 bytes of the member's cell
        // (64-byte aligned), inside the region, only accessed atomically.
        unsafe { shim::atomic_u32x4_at(self.base, self.cell_offset(sp, slot, member)) }
    }

    /// The arguments of the four `members` as one batch of vector loads
    /// (one round trip instead of 16 in a row; members may repeat).
    pub(crate) fn read_args_x4(&self, sp: Space, slot: u32, members: [u32; 4]) -> [Args; 4] {
        let words = members.map(|m| self.args_words(sp, slot, m));
        // Relaxed: published by the arrival counters (see `arrive`).
        shim::independent(|| words.map(|w| Args::from_words(shim::load_relaxed_x4(w))))
    }

    pub(crate) fn write_args(&self, sp: Space, slot: u32, a: &Args) {
        // One vector store (`st.v4`; `read_args` loads them as one):
        // relaxed, released by this rank's arrival (see `arrive`).
        shim::store_relaxed_x4(
            self.args_words(sp, slot, sp.member),
            [a.kind_class, a.root as u32, a.bytes, a.datatype],
        );
    }
}

/// The verdict of ranks that started different collectives in the same
/// position, with the two [`Kind`] codes that differ in bits 16..24 and
/// 24..32: not an [`ErrorClass`] code (those are small), so that it is
/// told apart from a count mismatch; it becomes
/// [`Error::CollectiveMismatch`].
pub(crate) const KIND_MISMATCH: u32 = 0x100;

/// Whether level 1 of the rank's arrival tree has one node per block,
/// inside it: a world in one process whose shape gains by it
/// ([`immediate_block_level`], or for a collective that folds small
/// words, `fold`, [`immediate_fold_block_level`]).
#[inline(always)]
pub(crate) fn block_level(w: &World, fold: bool) -> bool {
    let (ranks, bd) = (w.ranks(), w.block_dim());
    !(cfg!(feature = "distributed") && w.across_processes())
        && if fold {
            immediate_fold_block_level(ranks, bd)
        } else {
            immediate_block_level(ranks, bd)
        }
}

/// One step of a rank's climb of the world's arrival tree: the node it
/// reaches at some level and where that node's children are.
#[derive(Clone, Copy)]
pub(crate) struct Tree {
    /// Items of the level below (ranks at level 0, nodes above).
    pub(crate) count: u32,
    /// The climbing rank's item there.
    pub(crate) item: u32,
    /// Index of this level's first node.
    pub(crate) base: u32,
    /// Index of the level below's first node (level 1 and up).
    pub(crate) below: u32,
    /// Ranks per item of the level below (1 at level 0).
    pub(crate) span: u64,
    /// The world rank of item 0 at level 0: 0, or in a world across
    /// processes the first rank of this process, whose ranks alone the
    /// tree spans (the relay joins the processes' parts).
    pub(crate) first: u32,
    /// Children of a node at this level.
    pub(crate) fanout: u32,
    /// Children of a node at the next level up.
    next: u32,
}

impl Tree {
    /// Level 0 of the rank's climb: nodes of [`IMMEDIATE_FANOUT`] ranks;
    /// level 1 of the block's level-0 nodes in a world in one process
    /// where [`block_level`] says so for a collective that folds small
    /// words or not (`fold`), of `IMMEDIATE_FANOUT` otherwise and in a
    /// process's tree of a world across processes; `IMMEDIATE_FANOUT`
    /// above (`layout::immediate_tree_nodes`'s shape, or the first of its
    /// records).
    pub(crate) fn start(w: &World, fold: bool) -> Tree {
        let (first, count, next) = if block_level(w, fold) {
            (0, w.ranks(), w.block_dim() / IMMEDIATE_FANOUT)
        } else if cfg!(feature = "distributed") && w.across_processes() {
            let (first, count) = w.core_settled().process_ranks();
            (first, count, IMMEDIATE_FANOUT)
        } else {
            (0, w.ranks(), IMMEDIATE_FANOUT)
        };
        Tree {
            count,
            item: w.rank - first,
            base: 0,
            below: 0,
            span: 1,
            first,
            fanout: IMMEDIATE_FANOUT,
            next,
        }
    }

    /// Nodes of this level.
    pub(crate) fn nodes(&self) -> u32 {
        self.count.div_ceil(self.fanout)
    }

    /// The node reached at this level.
    pub(crate) fn node(&self) -> u32 {
        self.item / self.fanout
    }

    /// The node's children (items of the level below).
    pub(crate) fn children(&self) -> core::ops::Range<u32> {
        let first = self.node() * self.fanout;
        first..self.count.min(first + self.fanout)
    }

    /// The next level up.
    pub(crate) fn up(self) -> Tree {
        let nodes = self.nodes();
        Tree {
            count: nodes,
            item: self.node(),
            base: self.base + nodes,
            below: self.base,
            span: self.span * self.fanout as u64,
            first: self.first,
            fanout: self.next,
            next: IMMEDIATE_FANOUT,
        }
    }
}

/// One round of the engine's progress for a wait or test on requests:
/// none while the rank holds no request record (`World::records` 0),
/// whose active list is then empty (a blocking call's records leave it
/// before the call returns), so that a wait or test on non-blocking
/// collectives alone, which complete without any pass, reads neither the
/// list nor the inbox at every poll. Messages that arrive meanwhile wait
/// in the inbox for the next receive, which looks there first; no send
/// of another rank needs this rank's pass before it posts a receive.
#[inline(always)]
pub(crate) fn progress_requests(w: &World) -> bool {
    w.records.get() != 0 && crate::engine::progress(w.core())
}

/// Whether request index `i` names a non-blocking collective.
pub(crate) fn is_immediate(i: u32) -> bool {
    i >= IMMEDIATE_INDEX
}

/// Whether the collective of request index `i` has completed.
pub(crate) fn is_complete(w: &World, i: u32) -> bool {
    let (sp, slot) = (space_of(w, i), slot_of(i));
    // Only the rank's private words: its arguments stay in its cell.
    w.pending_scope(sp, slot) != 0
        // Acquire: pairs with the Release store of the world's last
        // arriver (`arrive`): the result cell and the verdict are visible.
        && done_is(
            w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, done))
                .load(Ordering::Acquire),
            w.use_of(sp, slot),
        )
}

/// Whether request index `i` is an uncollected collective of scope `id`.
pub(crate) fn owned(w: &World, id: u32, i: u32) -> bool {
    w.pending_scope(space_of(w, i), slot_of(i)) == id
}

/// The request indices of the rank's collective slots: the world's, then,
/// where the world has their state, every communicator context's.
pub(crate) fn indices(w: &World) -> core::ops::Range<u32> {
    let spaces = if w.layout.immediate_comm_stride != 0 {
        1 + w.layout.communicators
    } else {
        1
    };
    IMMEDIATE_INDEX..IMMEDIATE_INDEX + spaces * IMMEDIATE_SLOTS
}

/// Waits for the collective of request index `i` and completes it
/// (`Request::wait`). A collective completes without this rank's
/// progress: each poll looks at `done` first, so that the poll that finds
/// it complete returns without a pass of the engine, and what the wait is
/// for is worked out only once a poll has failed. Out of line: a kernel
/// that waits for point-to-point requests only carries a call, not a
/// second wait loop.
/// `closed` runs once the slot is collected (not when the wait itself
/// fails: a timeout, an abort).
///
/// What the completion and the wait's record need of the rank's own
/// words (the use it waits for, where the result goes, its arguments) is
/// read once, in one batch, before the first poll: each poll's acquire
/// empties L1, after which each of those reads would be a trip to L2 of
/// its own. A poll is
/// then one acquire load of `done`; when it says the verdict was clean
/// ([`done_word`]) the rank had no error of its own (the verdict is the
/// first rank's), and the completion copies the result, if any, and loads
/// nothing else ([`collect_clean`]).
///
/// `done`: the rank's own start completed it, with a clean verdict and
/// nothing to copy (`collective::immediate`, "Rounds"): the wait frees
/// the slot and polls nothing. `round`: a world barrier, whose wait may
/// poll its round's word at the top ([`wait_round`]) before it reads any
/// other word of its own (those reads are on the round's path when the
/// rank is its block's last arriver).
#[inline(never)]
pub(crate) fn wait(
    w: &World,
    i: u32,
    done: bool,
    round: bool,
    closed: impl FnOnce(),
) -> Result<Status, Error> {
    let (sp, slot) = (space_of(w, i), slot_of(i));
    if done {
        closed();
        w.note_progress();
        w.free_pending(sp, slot);
        return Ok(Status::empty());
    }
    // A world barrier whose top counts in rounds waits on its round's
    // word, before it reads any word of its own but the use: the wait of
    // the block's last arriver, just back from the top's add, is on the
    // round's path. Not a rank holding request records, whose polls run
    // the engine (below): a second loop with the engine in it cost every
    // kernel with requests registers and stack.
    if round && w.records.get() == 0 {
        if let Some((word, children)) = w.top_round(slot, w.use_of(sp, slot)) {
            w.note_progress();
            if wait_round(w, slot, word, children)? {
                closed();
                w.free_pending(sp, slot);
                return Ok(Status::empty());
            }
        }
    }
    let (use_, kept, args) = shim::independent(|| {
        (
            w.use_of(sp, slot),
            w.pending_record_of(sp, slot),
            // Relaxed: this rank's own stores, at its start.
            w.read_args(sp, slot, sp.member),
        )
    });
    // Few values held across the polls (each a register or a word of the
    // wait's frame): the completion's, and what the wait records.
    let (out, bytes, what) = (kept.destination(), args.bytes, what_of(&args));
    // A world slot's record is left as it is (`World::free_pending`).
    let record = if sp.id == 0 {
        core::ptr::null_mut()
    } else {
        w.pending_record(sp, slot)
    };
    let cell = w.result_cell(sp, slot);
    let done = w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, done));
    // What the rank knows of itself: the idle key read only when a failed
    // poll may have set it; a settled rank's wait record written alone,
    // and no slot handed back after a poll (a poll that runs the engine
    // unsettles it).
    w.note_progress();
    let mut closed = Some(closed);
    let r = crate::polling::wait_core_lazy(
        &w.core_settled(),
        |_, what| w.record_wait(what),
        || !w.known.settled(),
        || what,
        |b| {
            // Acquire: pairs with the Release store of the world's last
            // arriver (`publish`): the result cell and the verdict are
            // visible.
            let word = done.load(Ordering::Acquire);
            if done_is(word, use_) {
                if let Some(f) = closed.take() {
                    f();
                }
                return Some(if word & 1 != 0 {
                    collect_clean(out, bytes, cell, record)
                } else {
                    collect(w, i, false)
                });
            }
            if progress_requests(w) {
                b.progressed();
            }
            None
        },
    );
    // The poll that saw the collective done collected it: the slot is the
    // rank's to start again. Here rather than in the poll, whose values
    // are held across the wait.
    if closed.is_none() {
        w.slot_collected(sp, slot);
    }
    r
}

/// The wait of a world barrier whose top counts in rounds
/// (`collective::immediate`, "Rounds") on its use's arrival `word` at the
/// top, of `children` children: true once every child arrived with a
/// clean barrier, false once every child arrived otherwise (the verdict
/// is then `done`'s). For a rank holding no request records: its polls
/// run no pass of the engine ([`progress_requests`] would find nothing).
/// Out of line, with a loop of its own: the general wait's loop keeps its
/// registers.
#[inline(never)]
fn wait_round(w: &World, slot: u32, word: &AtomicU64, children: u32) -> Result<bool, Error> {
    let poll = || {
        // Acquire: pairs with the top's children's AcqRel adds, each the
        // end of a chain of adds that acquired every rank below it:
        // every rank's arrival is visible. The word holds this use's
        // adds alone while this rank waits ("Rounds").
        let now = word.load(Ordering::Acquire);
        if now == u64::from(children) * Tally::CLEAN_BARRIER {
            return Some(true);
        }
        (Tally::arrivals(now) == children).then_some(false)
    };
    // Once more before the loop, whose first failed poll records the wait
    // and sleeps: the first poll of a block's last arriver, just back from
    // the top's add, often meets the other blocks' adds still in flight,
    // and the poll issued at once after it sees the round complete.
    if let Some(clean) = poll() {
        return Ok(clean);
    }
    crate::polling::wait_core_lazy(
        &w.core_settled(),
        |_, what| w.record_wait(what),
        || !w.known.settled(),
        // Relaxed: the rank's own stores, at its start.
        || what_of(&w.read_args(Space::world(w), slot, w.rank)),
        |_| poll().map(Ok),
    )
}

/// What a wait on a collective whose rank passed `args` records.
fn what_of(args: &Args) -> WaitFor {
    WaitFor {
        operation: kind_of(args.kind_class).call(),
        peer: if args.root < 0 { -2 } else { args.root },
        tag: -1,
    }
}

/// What a failed test of request index `i` records.
pub(crate) fn test_what(w: &World, i: u32) -> WaitFor {
    let p = pending(w, i);
    WaitFor {
        operation: Call::TestCollective,
        peer: if p.root < 0 { -2 } else { p.root },
        tag: p.kind as i32,
    }
}

/// Completes the collective of request index `i` (complete): its outcome,
/// the result copied out, the slot free for the rank's next use.
/// Out of line: called once per completion, and inlined it takes the
/// registers of the wait loop it ends.
///
/// `done`: as [`wait`]'s: the slot freed, nothing loaded.
#[inline(never)]
pub(crate) fn collect(w: &World, i: u32, done: bool) -> Result<Status, Error> {
    let slot = slot_of(i);
    let sp = space_of(w, i);
    if done {
        w.free_pending(sp, slot);
        return Ok(Status::empty());
    }
    let record = w.slot_record(sp, slot);
    let word = |o: usize| record[o / 4].load(Ordering::Relaxed);
    // Relaxed: acquired with `done` (`is_complete`); `done` is still this
    // use's (the slot's next use needs this rank's start). One batch: this
    // rank's arguments and `done`, whose bit says whether the verdict was
    // clean (then the verdict's words are not this use's: `publish`).
    let (args, done) = shim::independent(|| {
        (
            w.read_args(sp, slot, sp.member),
            word(core::mem::offset_of!(SlotRecord, done)),
        )
    });
    let p = w.pending_of(sp, slot, &args);
    let result = match p.error {
        Some(e) => Err(e),
        None if done & 1 != 0 => copy_result(p.out, w.result_cell(sp, slot), p.bytes),
        None => {
            let r = core::mem::offset_of!(SlotRecord, reference);
            // Relaxed: as above; a verdict that is not clean (its words
            // are this use's), in one batch.
            let [verdict, ref_bytes, ref_datatype] =
                shim::independent(|| [core::mem::offset_of!(SlotRecord, verdict), r + 8, r + 12].map(word));
            // Whether this rank kept a `JoinFn` (`OUT_KEPT`): only with the
            // `distributed` feature, on the cold path of a verdict that is
            // not clean.
            let kept =
                cfg!(feature = "distributed") && w.pending_record_of(sp, slot).out_kind & OUT_KEPT != 0;
            if kept && verdict == VERDICT_JOIN {
                join(w, sp, slot, &p)
            } else {
                if kept {
                    // A join's operation kept for nothing: dropped.
                    run_kept(w, sp, slot, None);
                }
                Err(verdict_error(w, sp, &p, verdict, ref_bytes, ref_datatype))
            }
        }
    };
    // The slot is this rank's to start again: nobody waits for that (see
    // `collective::immediate`, "Reuse").
    w.free_pending(sp, slot);
    result
}

/// The end of a reduction whose parts the relay left to join
/// ([`VERDICT_JOIN`]): its parts combined in rank (member) order into
/// `p`'s result buffer with the operation the rank kept, which is then
/// dropped (docs/distributed.md). The world's parts are the processes':
/// this process's ranks' fold in the result cell, each other process's in
/// its first rank's cell (a shadow's); a group's are its members'
/// operands, side by side in a buffer of the relay's whose address is in
/// the group's result cell (not the members' cells: a member here may
/// start the slot's next use, and write its cell, before another has
/// joined this one).
fn join(w: &World, sp: Space, slot: u32, p: &Pending) -> Result<Status, Error> {
    let parts = if sp.id == 0 {
        let (first, n) = w.core().process_ranks();
        JoinParts {
            first: w.operand(sp, slot, 0),
            stride: n as usize * w.layout.immediate_bytes,
            count: sp.size / n.max(1),
            own: first / n.max(1),
            own_at: w.result_cell(sp, slot),
        }
    } else {
        // SAFETY: the first 8 bytes of the group's result cell, written by
        // the relay before `done`, which the caller acquired; the next use
        // writes them only after this rank started it.
        let address = unsafe { (w.result_cell(sp, slot) as *const u64).read_unaligned() };
        JoinParts {
            first: address as usize as *const u8,
            stride: p.bytes as usize,
            count: sp.size,
            own: u32::MAX,
            own_at: core::ptr::null(),
        }
    };
    let out = match p.out {
        Some(Side::Plain(out)) => Some(out),
        _ => None,
    };
    if run_kept(w, sp, slot, out.map(|o| (o, &parts, p.bytes as usize))) {
        Ok(Status::empty())
    } else {
        Err(Error::Intern)
    }
}

/// Runs the `JoinFn` this rank kept in its cell of slot `slot` of `sp`
/// (if any): with `join`, into its buffer; then the operation is dropped
/// and the function forgotten. False if there was none.
fn run_kept(w: &World, sp: Space, slot: u32, join: Option<(*mut u8, &JoinParts, usize)>) -> bool {
    let keep = kept_at(w, sp, slot);
    // SAFETY: the word at the start of this rank's keep (8-aligned: the
    // cells are, and `immediate_bytes` is a multiple of 64), which only
    // this rank accesses, with plain reads and writes.
    let f = unsafe { (keep as *mut usize).read() };
    if f == 0 {
        return false;
    }
    // SAFETY: written by this rank's start from a `JoinFn` of this
    // program (`collective::immediate`'s `start_reduction`), not run since
    // (it is zeroed below).
    let f: JoinFn = unsafe { core::mem::transmute::<usize, JoinFn>(f) };
    // No parts: the function only drops its operation.
    let none = JoinParts {
        first: core::ptr::null(),
        stride: 0,
        count: 0,
        own: u32::MAX,
        own_at: core::ptr::null(),
    };
    let (out, parts, bytes) = join.unwrap_or((core::ptr::null_mut(), &none, 0));
    // SAFETY: the operation `f` was made for is at `keep + 8`, moved there
    // by the same start; `out` is the buffer the request borrowed for
    // `bytes` of its elements (the verdict says every rank passed the
    // same count) and the parts were published by `done`, which the
    // caller acquired.
    unsafe { f(keep, out, parts, bytes) };
    // SAFETY: as the read above.
    unsafe { (keep as *mut usize).write(0) };
    true
}

/// Where this rank keeps a join's function and operation in slot `slot`
/// of `sp`: the last [`JOIN_KEEP_BYTES`] of its cell.
pub(crate) fn kept_at(w: &World, sp: Space, slot: u32) -> *mut u8 {
    // SAFETY: inside the rank's cell of `immediate_bytes >= 64` bytes.
    unsafe {
        w.base
            .add(w.cell_offset(sp, slot, sp.member) + w.layout.immediate_bytes - JOIN_KEEP_BYTES)
    }
}

/// [`collect`] of a collective whose verdict was clean (`done`'s bit,
/// [`done_word`]): the rank had no error of its own, and where its result
/// goes (`out`, `bytes` of it) was read before the wait's acquires; only
/// the result cell (`cell`) is loaded, by its copy. `record`: the rank's
/// record of the slot, freed (null: a world slot's, which
/// [`World::free_pending`] leaves as it is).
fn collect_clean(
    out: Option<Side>,
    bytes: u32,
    cell: *mut u8,
    record: *mut PendingRecord,
) -> Result<Status, Error> {
    let result = copy_result(out, cell, bytes);
    if !record.is_null() {
        free_record(record);
    }
    result
}

/// Frees the rank's record `record` of a slot ([`World::pending_record`]).
fn free_record(record: *mut PendingRecord) {
    // SAFETY: the rank's own record, inside the world memory; only an
    // address.
    let scope = unsafe { core::ptr::addr_of_mut!((*record).scope) };
    crate::records::private(scope, true);
    // SAFETY: as above, a plain write of a word only this rank accesses.
    unsafe { *scope = 0 }
}

/// A completed collective's result copied from the slot's result `cell`
/// (`bytes` of it, published by `done`) to where the rank asked (`out`,
/// none for a barrier): its success, or `Error::Intern` when the copy
/// failed.
fn copy_result(out: Option<Side>, cell: *mut u8, bytes: u32) -> Result<Status, Error> {
    if let Some(out) = out {
        // SAFETY: the result cell holds `bytes` bytes (the verdict says
        // every rank passed the same count), published by `done`; `out` is
        // the buffer borrowed by the request for its scope, of `bytes`
        // packed bytes.
        if !unsafe { out.write(0, cell, bytes as usize) } {
            return Err(Error::Intern);
        }
    }
    Ok(Status::empty())
}

/// The error a rank without a local error returns for a verdict.
pub(crate) fn verdict_error(
    w: &World,
    sp: Space,
    p: &Pending,
    class: u32,
    ref_bytes: u32,
    ref_datatype: u32,
) -> Error {
    let size = p.size.max(1);
    match ErrorClass::from_code(class) {
        Some(ErrorClass::Count) => Error::CountMismatch {
            count: p.bytes / size,
            expected: ref_bytes / size,
        },
        Some(ErrorClass::Root) | Some(ErrorClass::Rank) => Error::InvalidRoot {
            root: p.root,
            size: sp.size as i32,
        },
        Some(ErrorClass::Type) => Error::TypeMismatch {
            status: Status {
                source: PROC_NULL,
                tag: -1,
                bytes: ref_bytes,
                datatype: ref_datatype,
            },
            expected: p.datatype,
        },
        Some(ErrorClass::Buffer) => Error::BufferTooLarge {
            bytes: ref_bytes.max(p.bytes),
            limit: (w.layout.immediate_bytes - ARGS_BYTES) as u32,
        },
        Some(ErrorClass::Op) => Error::InvalidOperation {
            op: 0,
            datatype: p.datatype,
        },
        _ if class & 0xffff == KIND_MISMATCH => {
            let (one, two) = ((class >> 16) & 0xff, class >> 24);
            let kind = p.kind as u32;
            Error::CollectiveMismatch {
                kind,
                other: if kind == one { two } else { one },
            }
        }
        _ => Error::Intern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start numbers its collective from the count it read, and a wait
    /// or test works the slot's last use out from the count after it: the
    /// two agree for every slot at every count, across the count's
    /// modulus too, and a slot's next use always differs from its last
    /// and from 0 (a slot's words start at 0).
    #[test]
    fn a_slots_last_use_is_the_one_its_start_gave_across_the_modulus() {
        for modulus in [RankState::STARTED_MODULUS, 0, 16] {
            let mask = modulus.wrapping_sub(1);
            let mut last: [Option<u32>; IMMEDIATE_SLOTS as usize] = [None; IMMEDIATE_SLOTS as usize];
            // From a little before the count wraps to a little after.
            let mut n = mask.wrapping_sub(9);
            for _ in 0..40 {
                let slot = (n % IMMEDIATE_SLOTS) as usize;
                let use_ = use_number(n);
                assert_ne!(use_, 0, "modulus {modulus}, count {n}");
                if let Some(before) = last[slot] {
                    assert_ne!(
                        use_ & (u32::MAX >> 1),
                        before & (u32::MAX >> 1),
                        "modulus {modulus}, count {n}"
                    );
                }
                last[slot] = Some(use_);
                n = n.wrapping_add(1) & mask;
                for (s, u) in last.iter().enumerate() {
                    if let Some(u) = *u {
                        assert_eq!(
                            last_use(n, s as u32, modulus),
                            u,
                            "modulus {modulus}, count {n}, slot {s}"
                        );
                    }
                }
            }
        }
    }
}
