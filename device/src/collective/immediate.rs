//! Non-blocking collectives of the world and of sub-communicators:
//! barrier, broadcast, reduce and all-reduce (MPI 4.1 §6.12: `MPI_Ibarrier`, `MPI_Ibcast`, `MPI_Ireduce`,
//! `MPI_Iallreduce`; rsmpi's `immediate_barrier`,
//! `immediate_broadcast_into`, `immediate_reduce_into_root`,
//! `immediate_all_reduce_into`).
//!
//! ```ignore
//! request::scope(|scope| -> Result<(), Error> {
//!     let mut sum = 0u32;
//!     let r = world.immediate_all_reduce_into(scope, &x, &mut sum, SystemOperation::sum())?;
//!     // ... point-to-point work, other requests ...
//!     r.wait()?;
//!     Ok(())
//! })?;
//! ```
//!
//! # Protocol: nobody's progress needed
//! The ranks of a block may be anywhere in their programs, so nothing here
//! uses the block barrier or a warp collective, and a started collective
//! completes without any rank calling a test or a wait for another (MPI
//! 4.1 §6.12 progress): all the work is done by the ranks as they *start*
//! the collective.
//!
//! A rank's `n`-th non-blocking collective uses staging slot `n mod
//! IMMEDIATE_SLOTS` (every rank starts the same collectives in the same
//! order, §6.12, so they agree on it) in its `u`-th use, `u = n /
//! IMMEDIATE_SLOTS + 1`. Starting, a rank writes its arguments (kind, root,
//! byte count, datatype, its local error class) and, for a reduction, its
//! operand (a broadcast's root: its data) into its own cell of the slot.
//! It then climbs the slot's arrival tree: nodes of `IMMEDIATE_FANOUT`
//! (32) children, ranks `32 i .. 32 i + 32` under level-0 node `i`, 32
//! nodes of the level below under each node above, up to one top node
//! (three levels for 1,100 ranks, four for a full H100). At each node it
//! arrives with an acquire-release add; the add that brings the node's
//! counter to `u × children` makes it the node's last arriver, which
//! checks its children's arguments (their first ranks') against the
//! node's first rank and their verdicts, folds their operands (level 0) or
//! partial results in rank order into the node's cell, stores the node's
//! verdict and goes on to the parent; the other arrivers are done. The
//! top node's last arriver folds into the result cell (a broadcast: copies
//! the root's cell there), writes the verdict and publishes `u` in the
//! slot's `done` word (release). No rank checks or folds more than 32
//! children at one node, and at most one node per level. A test is one
//! acquire load of `done`; completion copies the result out (broadcast,
//! reduce's root, all-reduce) and climbs the tree again on its
//! consumption counters, the top's last consumer adding one to the slot's.
//!
//! # Sub-communicators: one level
//! On a [`SimpleCommunicator`] (a world launched with
//! [`FLAG_IMMEDIATE_COMMUNICATORS`](crate::state::FLAG_IMMEDIATE_COMMUNICATORS),
//! `WorldSpec::immediate_on_communicators` on the host), the same protocol
//! runs on the communicator's context with one level: each context has,
//! per rank, its own [`CommImmediateLocal`] (its own count of started
//! collectives, so that the communicator's `n`-th collective takes slot
//! `n mod IMMEDIATE_SLOTS` on every member whatever the member does
//! elsewhere), and per slot and entry of the context's table a record, a
//! result cell and a member cell. A group's record and result are at its
//! first member's entry, each member's cell at its own (the groups of one
//! split are disjoint runs of entries). A member writes its cell and
//! arrives on the group's counter; the group's last arriver checks every
//! member's arguments against member 0's, folds the operands in member
//! order into the result cell (a broadcast: copies the root's), and
//! publishes `done`; completion consumes on the group's counter. The cost
//! is serial: one rank folds `size` operands. Block and warp
//! communicators take this path too (it needs no rank's progress, so
//! neither the block barrier nor a shuffle).
//!
//! Operands are combined strictly in rank order (`x0 op x1 op ... op
//! x(n-1)`, bracketed by the tree's nodes), as MPI §6.9.1 asks of a
//! non-commutative operation (associativity is assumed, as for every
//! reduction); the cost per level is one node's 32 children of `count`
//! elements, the levels one after another (`ceil(log32(ranks))`).
//!
//! # Bounds
//! - At most [`IMMEDIATE_SLOTS`] (2) non-blocking collectives per rank are
//!   outstanding (started and not yet completed by a wait or test, or by
//!   the end of their scope). Starting one more fails at once with
//!   `MPI_ERR_REQUEST` ([`Error::RequestLimit`]) on that rank, which then
//!   does not take part (the program is erroneous: the others' collective
//!   will wait for it).
//! - The one rule that needs other ranks' progress: a rank starting its
//!   `n`-th collective waits until every rank has *completed* (waited,
//!   tested or ended the scope of) its `(n - IMMEDIATE_SLOTS)`-th, whose
//!   slot it reuses; it progresses its point-to-point requests meanwhile.
//!   A rank that never completes it leaves the others waiting: on the
//!   emulator a deadlock report naming `immediate_collective_slot`, on the
//!   GPU the world's timeout.
//! - Payload: at most `immediate_bytes - 16` bytes
//!   ([`WorldConfig::immediate_bytes`](crate::state::WorldConfig::immediate_bytes),
//!   48 by default); more fails with `MPI_ERR_BUFFER` on every rank that
//!   passes it (and with the verdict's class on the others).
//! - The bound of [`IMMEDIATE_SLOTS`] outstanding is per communicator:
//!   a rank may have two on the world and two on each communicator.
//! - A sub-communicator of a world launched without their state
//!   ([`FLAG_IMMEDIATE_COMMUNICATORS`](crate::state::FLAG_IMMEDIATE_COMMUNICATORS)
//!   unset, the default: it costs `communicators × ranks × (128 + 2 ×
//!   (64 + 2 × immediate_bytes))` bytes, 512 per rank per context by
//!   default) gives [`Error::ImmediateOnSubCommunicator`] (`MPI_ERR_COMM`)
//!   at once, on its communicator calls and its `Process` alike.
//!
//! # Errors
//! Wrong arguments never hang a rank: a rank with a local error (bad root,
//! too large, bad operation, receive count not the send count) still
//! arrives, with its error class in its arguments; the verdict (the first
//! error class in rank order, or a mismatch of kind, root, count or
//! datatype with rank 0's) reaches every rank when the collective
//! completes: a rank returns its own local error, or else the verdict's
//! class (`MPI_ERR_COUNT`, `MPI_ERR_ROOT`, `MPI_ERR_TYPE`, `MPI_ERR_BUFFER`,
//! `MPI_ERR_OP`; ranks that started different collectives in the same
//! position get [`Error::CollectiveMismatch`], class `MPI_ERR_COUNT`, as
//! the blocking collectives' disagreements). Receive buffers are then untouched.

use crate::collective::{Elements, ElementsMut, Operation, Side};
use crate::communicator::SimpleCommunicator;
use crate::communicator::{wait_for, CommInfo, Process, World};
use crate::datatype::{BufferMut, Equivalence, TypedBuffer, ID_BYTE};
use crate::error::{Error, ErrorClass};
use crate::request::{Request, Scope};
use crate::shim::{self, AtomicU32, Ordering};
use crate::state::{
    COMM_IMMEDIATE_LOCAL_BYTES, IMMEDIATE_FANOUT, IMMEDIATE_LOCAL_BYTES, IMMEDIATE_RECORD_BYTES,
    IMMEDIATE_SLOTS,
};
use crate::status::{Status, PROC_NULL};
use crate::wait::{Call, WaitFor};
use core::marker::PhantomData;

pub use crate::codes::{kind_name, Kind};

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
    /// result is in the result cell). Stored (Release) by the world's last
    /// arriver; loaded (Acquire) by every test.
    pub done: u32,
    /// Blocks whose ranks have all arrived, over all uses (`u × blocks`
    /// once use `u` is complete).
    pub arrived: u32,
    /// Uses every rank has completed (collected): the world's top node
    /// adds one per use; a group's members add one each.
    pub consumed: u32,
    /// The verdict of the last completed use: an [`ErrorClass`] code, 0
    /// when the arguments agreed.
    pub verdict: u32,
    /// Rank 0's arguments of the last completed use (what a mismatch
    /// error reports as expected).
    pub reference: Args,
    /// Unused.
    pub reserved: [u32; 8],
}

/// A node's record in a slot of the world ([`IMMEDIATE_RECORD_BYTES`],
/// its cell of partial results follows): a node of the arrival tree
/// (`IMMEDIATE_FANOUT` ranks, or nodes of the level below, per node).
#[repr(C)]
pub struct NodeRecord {
    /// Its children that have arrived, over all uses.
    pub arrived: u32,
    /// Its children that have completed their request, over all uses.
    pub consumed: u32,
    /// Its verdict of its last use (an [`ErrorClass`] code or 0).
    pub verdict: u32,
    /// Unused.
    pub reserved: [u32; 13],
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
    /// The owning scope's id; 0: the slot is free for this rank.
    pub scope: u32,
    /// Bytes of one element.
    pub size: u32,
    /// Where the result goes: an [`OutKind`] code.
    pub out_kind: u32,
    /// The address of the result buffer (plain bytes or a typed buffer),
    /// low word then high word.
    pub out: [u32; 2],
    /// The two detail words of this rank's own argument error
    /// ([`Error::to_words`]; its class is in the rank's [`Args`]).
    pub details: [u32; 2],
}

/// A rank's private record of its non-blocking collectives in the world
/// memory ([`IMMEDIATE_LOCAL_BYTES`], at
/// [`Layout::immediate_local_of`](crate::state::Layout::immediate_local_of)).
/// Kept there rather than in [`World`], so that a kernel that passes
/// `&World` to out-of-line calls keeps the `World` in registers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImmediateLocal {
    /// Non-blocking collectives this rank started so far; the use of slot
    /// `s` outstanding is the number of those that took slot `s`.
    pub started: u32,
    /// Unused.
    pub reserved: u32,
    /// Per slot, the collective outstanding there.
    pub slots: [PendingRecord; IMMEDIATE_SLOTS as usize],
}

const _: () = assert!(core::mem::size_of::<ImmediateLocal>() == IMMEDIATE_LOCAL_BYTES);

/// A rank's private record of its non-blocking collectives on one
/// communicator context ([`COMM_IMMEDIATE_LOCAL_BYTES`], at
/// [`Layout::immediate_comm_local`](crate::state::Layout::immediate_comm_local)):
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
    /// Unused.
    pub reserved: [u32; 13],
    /// Its collectives on the context.
    pub local: ImmediateLocal,
}

const _: () = assert!(core::mem::size_of::<CommImmediateLocal>() == COMM_IMMEDIATE_LOCAL_BYTES);

/// Where a rank's non-blocking collective lives: the world's slots
/// (context 0: the arrival tree of the world's ranks), or a communicator
/// context's (one level: the group's record, at its first member's entry
/// of the context's table, and its members' cells at theirs).
#[derive(Clone, Copy)]
struct Space {
    /// The context id (0: the world).
    id: u32,
    /// The group's first entry in the context's table (0 for the world).
    start: u32,
    /// The group's size (the world's ranks for the world).
    size: u32,
    /// This rank's rank in the group.
    member: u32,
}

impl Space {
    fn world(w: &World) -> Space {
        Space {
            id: 0,
            start: 0,
            size: w.layout.ranks,
            member: w.rank,
        }
    }

    /// The request index of slot `slot` of this space.
    fn index(&self, slot: u32) -> u32 {
        IMMEDIATE_INDEX + self.id * IMMEDIATE_SLOTS + slot
    }
}

/// The space of request index `i` (as the rank recorded it when it started
/// a collective there).
fn space_of(w: &World, i: u32) -> Space {
    let id = (i - IMMEDIATE_INDEX) / IMMEDIATE_SLOTS;
    if id == 0 {
        return Space::world(w);
    }
    // SAFETY: the rank's own record (`immediate_comm_local`), plain reads
    // of words only it writes.
    let l = unsafe { *w.comm_local(id) };
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
struct Pending {
    /// The owning scope's id; 0: the slot is free for this rank.
    scope: u32,
    /// The slot's use this collective is.
    use_: u32,
    kind: Kind,
    root: i32,
    /// Where the result goes at completion (none: nothing to copy).
    out: Option<Side>,
    /// Bytes, element size and datatype id this rank passed.
    bytes: u32,
    size: u32,
    datatype: u32,
    /// This rank's own argument error, returned at completion.
    error: Option<Error>,
}

fn slot_of(index: u32) -> u32 {
    (index - IMMEDIATE_INDEX) % IMMEDIATE_SLOTS
}

/// The kind of a [`Kind`] code (the barrier for an unknown one).
fn kind_of(code: u32) -> Kind {
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
    fn comm_local(&self, id: u32) -> *mut CommImmediateLocal {
        // SAFETY: inside the world memory (`Layout::immediate_comm_local`:
        // the caller's `id` names a context, and the world has their state),
        // 64-aligned.
        unsafe { self.base.add(self.layout.immediate_comm_local(id, self.rank)) as *mut CommImmediateLocal }
    }

    /// This rank's private record of its non-blocking collectives in `sp`.
    fn immediate_local(&self, sp: Space) -> *mut ImmediateLocal {
        if sp.id != 0 {
            // SAFETY: the record is inside the rank's `CommImmediateLocal`.
            return unsafe { core::ptr::addr_of_mut!((*self.comm_local(sp.id)).local) };
        }
        // SAFETY: inside the world memory (`Layout::immediate_local_of`),
        // 8-aligned (the region is 64-aligned, records 64 bytes).
        unsafe { self.base.add(self.layout.immediate_local_of(self.rank)) as *mut ImmediateLocal }
    }

    /// Non-blocking collectives this rank started in `sp`.
    fn started(&self, sp: Space) -> u32 {
        // SAFETY: the record is this rank's alone; a plain read of an
        // initialised (zeroed by the host) word.
        unsafe { (*self.immediate_local(sp)).started }
    }

    fn set_started(&self, sp: Space, n: u32) {
        // SAFETY: as `started`, a plain write.
        unsafe { (*self.immediate_local(sp)).started = n }
    }

    /// The record of this rank's slot `slot` in `sp` (`slot < IMMEDIATE_SLOTS`).
    fn pending_record(&self, sp: Space, slot: u32) -> *mut PendingRecord {
        // SAFETY: `slot` is a slot index, so the record is inside this
        // rank's `ImmediateLocal`.
        unsafe { core::ptr::addr_of_mut!((*self.immediate_local(sp)).slots[slot as usize]) }
    }

    /// The scope owning slot `slot` of this rank in `sp` (0: free).
    fn pending_scope(&self, sp: Space, slot: u32) -> u32 {
        // SAFETY: as `started`, of the slot's record.
        unsafe { (*self.pending_record(sp, slot)).scope }
    }

    /// What this rank keeps of its collective in slot `slot` of `sp`.
    fn pending(&self, sp: Space, slot: u32) -> Pending {
        // SAFETY: as `started`, a plain read of the slot's record.
        let r = unsafe { *self.pending_record(sp, slot) };
        let args = self.read_args(sp, slot, sp.member);
        let address = (r.out[0] as u64 | (r.out[1] as u64) << 32) as usize;
        let out = match r.out_kind {
            k if k == OutKind::Plain as u32 => Some(Side::Plain(address as *mut u8)),
            k if k == OutKind::Typed as u32 => Some(Side::Typed(address as *const TypedBuffer)),
            _ => None,
        };
        let n = self.started(sp);
        Pending {
            scope: r.scope,
            use_: n.wrapping_sub(slot).wrapping_add(1) / IMMEDIATE_SLOTS,
            kind: kind_of(args.kind_class),
            root: args.root,
            out,
            bytes: args.bytes,
            size: r.size,
            datatype: args.datatype,
            error: Error::from_words([args.kind_class >> 8, r.details[0], r.details[1], 0, 0]),
        }
    }

    /// Keeps what this rank needs of its collective in slot `slot` (the
    /// rest is in its [`Args`]).
    fn set_pending(
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
        // SAFETY: as `started`, a plain write of the slot's record.
        unsafe { *self.pending_record(sp, slot) = r }
    }

    /// Frees slot `slot` of this rank in `sp`.
    fn free_pending(&self, sp: Space, slot: u32) {
        // SAFETY: as `started`, a plain write.
        unsafe { (*self.pending_record(sp, slot)).scope = 0 }
    }
}

fn pending(w: &World, index: u32) -> Pending {
    w.pending(space_of(w, index), slot_of(index))
}

impl World {
    /// Offset of the record of slot `slot` of `sp`: the world's slot
    /// record, or the group's, at its first entry (the result cell follows
    /// either).
    fn slot_offset(&self, sp: Space, slot: u32) -> usize {
        if sp.id == 0 {
            self.layout.immediate_slot(slot)
        } else {
            self.layout.immediate_comm_entry(sp.id, slot, sp.start)
        }
    }

    fn slot_word(&self, sp: Space, slot: u32, offset: usize) -> &AtomicU32 {
        // SAFETY: a word of the slot's record, 4-aligned (the regions are
        // 64-aligned, the records 64 bytes), accessed only atomically.
        unsafe { shim::atomic_u32_at(self.base, self.slot_offset(sp, slot) + offset) }
    }

    /// Offset of member `member`'s cell (arguments, then operand) in slot
    /// `slot` of `sp`.
    fn cell_offset(&self, sp: Space, slot: u32, member: u32) -> usize {
        if sp.id == 0 {
            self.layout.immediate_rank(slot, member)
        } else {
            self.layout.immediate_comm_entry(sp.id, slot, sp.start + member)
                + IMMEDIATE_RECORD_BYTES
                + self.layout.immediate_bytes
        }
    }

    fn node_word(&self, slot: u32, node: u32, offset: usize) -> &AtomicU32 {
        // SAFETY: as `slot_word`, in node `node`'s record (`node` below
        // the tree's nodes: `Tree` derives it from the layout).
        unsafe { shim::atomic_u32_at(self.base, self.layout.immediate_node(slot, node) + offset) }
    }

    fn rank_word(&self, sp: Space, slot: u32, member: u32, offset: usize) -> &AtomicU32 {
        // SAFETY: as `slot_word`, in member `member`'s argument header.
        unsafe { shim::atomic_u32_at(self.base, self.cell_offset(sp, slot, member) + offset) }
    }

    /// The result cell of a slot of `sp`.
    fn result_cell(&self, sp: Space, slot: u32) -> *mut u8 {
        // SAFETY: the cell follows the slot's record, inside the region.
        unsafe { self.base.add(self.slot_offset(sp, slot) + IMMEDIATE_RECORD_BYTES) }
    }

    /// The partial-result cell of a node in a slot.
    fn partial_cell(&self, slot: u32, node: u32) -> *mut u8 {
        // SAFETY: the cell follows the node's record, inside the region.
        unsafe {
            self.base
                .add(self.layout.immediate_node(slot, node) + IMMEDIATE_RECORD_BYTES)
        }
    }

    /// The operand of a member in a slot of `sp` (after its argument header).
    fn operand(&self, sp: Space, slot: u32, member: u32) -> *mut u8 {
        // SAFETY: inside the member's cell of `immediate_bytes >= 64` bytes.
        unsafe { self.base.add(self.cell_offset(sp, slot, member) + ARGS_BYTES) }
    }

    fn read_args(&self, sp: Space, slot: u32, member: u32) -> Args {
        // Relaxed: published by the arrival counters (see `arrive`).
        let word = |o| self.rank_word(sp, slot, member, o).load(Ordering::Relaxed);
        Args {
            kind_class: word(0),
            root: word(4) as i32,
            bytes: word(8),
            datatype: word(12),
        }
    }

    fn write_args(&self, sp: Space, slot: u32, a: &Args) {
        // Relaxed: released by this rank's arrival (see `arrive`).
        let r = sp.member;
        self.rank_word(sp, slot, r, 0)
            .store(a.kind_class, Ordering::Relaxed);
        self.rank_word(sp, slot, r, 4)
            .store(a.root as u32, Ordering::Relaxed);
        self.rank_word(sp, slot, r, 8).store(a.bytes, Ordering::Relaxed);
        self.rank_word(sp, slot, r, 12)
            .store(a.datatype, Ordering::Relaxed);
    }
}

/// The verdict of ranks that started different collectives in the same
/// position, with the two [`Kind`] codes that differ in bits 16..24 and
/// 24..32: not an [`ErrorClass`] code (those are small), so that it is
/// told apart from a count mismatch; it becomes
/// [`Error::CollectiveMismatch`].
const KIND_MISMATCH: u32 = 0x100;

/// The verdict of `a` against `reference`: its local error class, else a
/// mismatch class, else 0.
fn judge(a: &Args, reference: &Args) -> u32 {
    let class = a.kind_class >> 8;
    if class != 0 {
        class
    } else if a.kind_class != reference.kind_class & 0xff {
        if reference.kind_class >> 8 != 0 {
            // The reference's own error decides.
            reference.kind_class >> 8
        } else {
            KIND_MISMATCH | (a.kind_class & 0xff) << 16 | (reference.kind_class & 0xff) << 24
        }
    } else if a.root != reference.root {
        ErrorClass::Root as u32
    } else if a.datatype != reference.datatype {
        ErrorClass::Type as u32
    } else if a.bytes != reference.bytes {
        ErrorClass::Count as u32
    } else {
        0
    }
}

/// How the last arrivers combine operands.
trait Fold {
    /// `acc = acc op next` over `bytes` bytes of elements.
    ///
    /// # Safety
    /// Both cells hold `bytes` bytes of elements of the fold's type,
    /// 16-aligned, and nobody else accesses them meanwhile.
    unsafe fn fold(&self, acc: *mut u8, next: *const u8, bytes: usize);
}

/// Barrier and broadcast: nothing to combine.
struct NoFold;

impl Fold for NoFold {
    unsafe fn fold(&self, _: *mut u8, _: *const u8, _: usize) {}
}

/// A reduction's operation on `T`.
struct OpFold<'o, T, O>(&'o O, PhantomData<T>);

impl<T: Equivalence, O: Operation<T>> Fold for OpFold<'_, T, O> {
    unsafe fn fold(&self, acc: *mut u8, next: *const u8, bytes: usize) {
        let n = bytes / core::mem::size_of::<T>().max(1);
        let (acc, next) = (acc as *mut T, next as *const T);
        for i in 0..n {
            // SAFETY: the caller's contract; `i < n` elements of each cell.
            unsafe {
                let v = self
                    .0
                    .apply(&core::ptr::read(acc.add(i)), &core::ptr::read(next.add(i)));
                core::ptr::write(acc.add(i), v);
            }
        }
    }
}

/// Arrives in use `use_` of `slot` of `sp` (this rank's cell is written),
/// and, as the last arriver, checks and folds.
#[inline(never)]
fn arrive<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, fold: &F) {
    if sp.id == 0 {
        arrive_world(w, sp, slot, use_, fold)
    } else {
        arrive_group(w, sp, slot, use_, fold)
    }
}

/// One step of a rank's climb of the world's arrival tree: the node it
/// reaches at some level and where that node's children are.
#[derive(Clone, Copy)]
struct Tree {
    /// Items of the level below (ranks at level 0, nodes above).
    count: u32,
    /// The climbing rank's item there.
    item: u32,
    /// Index of this level's first node.
    base: u32,
    /// Index of the level below's first node (level 1 and up).
    below: u32,
    /// Ranks per item of the level below (1 at level 0).
    span: u64,
}

impl Tree {
    fn start(w: &World) -> Tree {
        Tree {
            count: w.layout.ranks,
            item: w.rank,
            base: 0,
            below: 0,
            span: 1,
        }
    }

    /// Nodes of this level.
    fn nodes(&self) -> u32 {
        self.count.div_ceil(IMMEDIATE_FANOUT)
    }

    /// The node reached at this level.
    fn node(&self) -> u32 {
        self.item / IMMEDIATE_FANOUT
    }

    /// The node's children (items of the level below).
    fn children(&self) -> core::ops::Range<u32> {
        let first = self.node() * IMMEDIATE_FANOUT;
        first..self.count.min(first + IMMEDIATE_FANOUT)
    }

    /// The first rank under item `c` of the level below.
    fn first_rank(&self, c: u32) -> u32 {
        (c as u64 * self.span) as u32
    }

    /// The next level up.
    fn up(self) -> Tree {
        let nodes = self.nodes();
        Tree {
            count: nodes,
            item: self.node(),
            base: self.base + nodes,
            below: self.base,
            span: self.span * IMMEDIATE_FANOUT as u64,
        }
    }
}

/// The world's arrival: up a tree of nodes of `IMMEDIATE_FANOUT` children
/// (ranks at level 0, nodes above): the last arriver of a node checks its
/// children's arguments and verdicts and folds their operands (partial
/// results) in rank order into the node's cell, then arrives at the
/// node's parent; the top node's last arriver folds into the result cell
/// and publishes. No fold or check is longer than 32 children.
fn arrive_world<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, fold: &F) {
    let mut t = Tree::start(w);
    loop {
        let node = t.base + t.node();
        let children = t.children();
        // AcqRel: releases this rank's cell (arguments and operand or
        // broadcast data), or as a node's last arriver its node's verdict
        // and cell, to this node's last arriver, which acquires every
        // earlier arriver's through this counter's release sequence.
        let old = w
            .node_word(slot, node, core::mem::offset_of!(NodeRecord, arrived))
            .fetch_add(1, Ordering::AcqRel);
        if old.wrapping_add(1) != use_.wrapping_mul(children.len() as u32) {
            return;
        }
        let reference = w.read_args(sp, slot, t.first_rank(children.start));
        let mut verdict = 0;
        for c in children.clone() {
            if verdict == 0 && t.span > 1 {
                // Relaxed: acquired through the add above.
                verdict = w
                    .node_word(slot, t.below + c, core::mem::offset_of!(NodeRecord, verdict))
                    .load(Ordering::Relaxed);
            }
            if verdict == 0 {
                verdict = judge(&w.read_args(sp, slot, t.first_rank(c)), &reference);
            }
        }
        let top = t.nodes() == 1;
        if verdict == 0 && Kind::folds(reference.kind_class) {
            let cell = if top {
                w.result_cell(sp, slot)
            } else {
                w.partial_cell(slot, node)
            };
            let part = |c: u32| {
                if t.span == 1 {
                    w.operand(sp, slot, c)
                } else {
                    w.partial_cell(slot, t.below + c)
                }
            };
            let bytes = reference.bytes as usize;
            // SAFETY: the children's operands or partial results were
            // released to us by the add above; this node's cell (the
            // result cell at the top) is written only by its last arriver,
            // and its readers of the previous use (the parent's last
            // arriver; the ranks' completions) finished before that use
            // completed, which every rank collected before this use
            // started (`start`).
            unsafe {
                shim::copy_bytes(cell, part(children.start), bytes);
                for c in children.start + 1..children.end {
                    fold.fold(cell, part(c), bytes);
                }
            }
        }
        if top {
            copy_root(w, sp, slot, verdict, &reference);
            publish(w, sp, slot, use_, verdict, &reference);
            return;
        }
        // Relaxed: released by the parent's add.
        w.node_word(slot, node, core::mem::offset_of!(NodeRecord, verdict))
            .store(verdict, Ordering::Relaxed);
        t = t.up();
    }
}

/// A communicator's arrival (one level): as the group's last arriver,
/// checks every member's arguments against its first member's, folds the
/// operands in member order into the result cell (a broadcast: copies the
/// root's cell there) and publishes. The cost is serial, `size` operands
/// folded by one rank (docs/limits.md).
fn arrive_group<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, fold: &F) {
    // AcqRel: releases this rank's cell (arguments and operand or broadcast
    // data) to the group's last arriver, which acquires every earlier
    // arriver's cell through this counter's release sequence.
    let old = w
        .slot_word(sp, slot, core::mem::offset_of!(SlotRecord, arrived))
        .fetch_add(1, Ordering::AcqRel);
    if old.wrapping_add(1) != use_.wrapping_mul(sp.size) {
        return;
    }
    let reference = w.read_args(sp, slot, 0);
    let mut verdict = 0;
    for m in 0..sp.size {
        if verdict == 0 {
            verdict = judge(&w.read_args(sp, slot, m), &reference);
        }
    }
    copy_root(w, sp, slot, verdict, &reference);
    if verdict == 0 && Kind::folds(reference.kind_class) {
        let out = w.result_cell(sp, slot);
        let bytes = reference.bytes as usize;
        // SAFETY: every member's operand was released to us by the add
        // above; the result cell's readers of the previous use finished
        // before this use started (`start`).
        unsafe {
            shim::copy_bytes(out, w.operand(sp, slot, 0), bytes);
            for m in 1..sp.size {
                fold.fold(out, w.operand(sp, slot, m), bytes);
            }
        }
    }
    publish(w, sp, slot, use_, verdict, &reference);
}

/// A broadcast's last arriver: copies the root's data into the result cell
/// when the arguments agree.
fn copy_root(w: &World, sp: Space, slot: u32, verdict: u32, reference: &Args) {
    if verdict == 0 && reference.kind_class == Kind::Broadcast as u32 {
        // SAFETY: the root's cell (`root` checked in range by its own
        // rank, equal on every rank by the verdict) was released to us
        // (through the last arrivers of the tree's nodes in the world); the result
        // cell's readers of the previous use finished before this use
        // started (`start`).
        unsafe {
            shim::copy_bytes(
                w.result_cell(sp, slot),
                w.operand(sp, slot, reference.root as u32),
                reference.bytes as usize,
            )
        };
    }
}

/// The last arriver's end: the verdict and the reference arguments, then
/// `done` (Release).
fn publish(w: &World, sp: Space, slot: u32, use_: u32, verdict: u32, reference: &Args) {
    // Relaxed: released by the store of `done` below.
    let put = |o: usize, v: u32| w.slot_word(sp, slot, o).store(v, Ordering::Relaxed);
    put(core::mem::offset_of!(SlotRecord, verdict), verdict);
    let r = core::mem::offset_of!(SlotRecord, reference);
    put(r, reference.kind_class);
    put(r + 4, reference.root as u32);
    put(r + 8, reference.bytes);
    put(r + 12, reference.datatype);
    // Release: pairs with the Acquire load of every rank's test
    // (`is_complete`): publishes the result cell and the verdict.
    w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, done))
        .store(use_, Ordering::Release);
}

/// What one rank brings to a collective.
struct Start {
    kind: Kind,
    root: i32,
    /// Its operand (a reduction) or data (a broadcast's root): side and bytes.
    data: Option<(Side, usize)>,
    /// Where the result goes.
    out: Option<Side>,
    bytes: usize,
    size: u32,
    datatype: u32,
    error: Option<Error>,
}

/// Starts a collective in `sp`: checks the rank's own bound, waits for the
/// slot's previous use to be collected by every rank, writes the cell,
/// arrives.
fn start<'a, 's, F: Fold>(
    w: &'a World,
    sp: Space,
    scope: &'s Scope<'a>,
    mut s: Start,
    fold: &F,
) -> Result<Request<'a, 's>, Error> {
    let id = scope.attach(w)?;
    if sp.id != 0 {
        // SAFETY: the rank's own record; plain writes of words only it
        // accesses (`space_of` reads them back).
        unsafe {
            let l = w.comm_local(sp.id);
            (*l).start = sp.start;
            (*l).size = sp.size;
            (*l).member = sp.member;
        }
    }
    let n = w.started(sp);
    let slot = n % IMMEDIATE_SLOTS;
    if w.pending_scope(sp, slot) != 0 {
        return Err(Error::RequestLimit {
            limit: IMMEDIATE_SLOTS,
        });
    }
    w.set_started(sp, n.wrapping_add(1));
    let use_ = n / IMMEDIATE_SLOTS + 1;
    let capacity = w.layout.immediate_bytes - ARGS_BYTES;
    if s.error.is_none() && s.bytes > capacity {
        s.error = Some(Error::BufferTooLarge {
            bytes: s.bytes as u32,
            limit: capacity as u32,
        });
    }
    let consumed = w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, consumed));
    // The world's top node adds one per use, a group's members one each.
    let per_use = if sp.id == 0 { 1 } else { sp.size };
    let previous = (use_ - 1).wrapping_mul(per_use);
    // Acquire: pairs with the Release adds of `collect`: every rank's reads
    // of the slot's previous use happen before we write it again.
    if consumed.load(Ordering::Acquire) != previous {
        let what = WaitFor {
            operation: Call::CollectiveSlot,
            peer: -2,
            tag: slot as i32,
        };
        wait_for(w, what, |b| {
            if crate::engine::progress(w.core()) {
                b.progressed();
            }
            // Acquire: as above.
            (consumed.load(Ordering::Acquire) == previous).then_some(Ok(()))
        })?;
    }
    let class = s.error.map_or(0, |e| e.class() as u32);
    w.write_args(
        sp,
        slot,
        &Args {
            kind_class: s.kind as u32 | class << 8,
            root: s.root,
            bytes: s.bytes as u32,
            datatype: s.datatype,
        },
    );
    if class == 0 {
        if let Some((side, bytes)) = s.data {
            let dst = w.operand(sp, slot, sp.member);
            // SAFETY: `bytes <= capacity` (checked above) fits the cell; the
            // cell's readers of the previous use are done (the wait above);
            // `side` is the caller's borrowed buffer of `bytes` packed bytes.
            if !unsafe { side.read(0, dst, bytes) } {
                s.error = Some(Error::Intern);
                w.rank_word(sp, slot, sp.member, 0).store(
                    s.kind as u32 | (ErrorClass::Intern as u32) << 8,
                    Ordering::Relaxed,
                );
            }
        }
    }
    arrive(w, sp, slot, use_, fold);
    w.set_pending(sp, slot, id, s.size, s.out, s.error);
    w.note_progress();
    Ok(Request::collective(scope, sp.index(slot)))
}

/// Whether request index `i` names a non-blocking collective.
pub(crate) fn is_immediate(i: u32) -> bool {
    i >= IMMEDIATE_INDEX
}

/// Whether the collective of request index `i` has completed.
pub(crate) fn is_complete(w: &World, i: u32) -> bool {
    let p = pending(w, i);
    // Acquire: pairs with the Release store of the world's last arriver
    // (`arrive`): the result cell and the verdict are visible.
    p.scope != 0
        && w.slot_word(
            space_of(w, i),
            slot_of(i),
            core::mem::offset_of!(SlotRecord, done),
        )
        .load(Ordering::Acquire)
            == p.use_
}

/// Whether request index `i` is an uncollected collective of scope `id`.
pub(crate) fn owned(w: &World, id: u32, i: u32) -> bool {
    pending(w, i).scope == id
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

/// What a wait on request index `i` records.
pub(crate) fn what(w: &World, i: u32) -> WaitFor {
    let p = pending(w, i);
    WaitFor {
        operation: p.kind.call(),
        peer: if p.root < 0 { -2 } else { p.root },
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
/// the result copied out, the slot consumed.
pub(crate) fn collect(w: &World, i: u32) -> Result<Status, Error> {
    let slot = slot_of(i);
    let sp = space_of(w, i);
    let p = pending(w, i);
    let word = |o: usize| w.slot_word(sp, slot, o).load(Ordering::Relaxed);
    // Relaxed: acquired with `done` (`is_complete`).
    let verdict = word(core::mem::offset_of!(SlotRecord, verdict));
    let r = core::mem::offset_of!(SlotRecord, reference);
    let (ref_bytes, ref_datatype) = (word(r + 8), word(r + 12));
    let result = match (p.error, verdict) {
        (Some(e), _) => Err(e),
        (None, 0) => {
            let mut result = Ok(Status::empty());
            if let Some(out) = p.out {
                // SAFETY: the result cell holds `p.bytes` bytes (the verdict
                // says every rank passed the same count), published by
                // `done`; `out` is the buffer borrowed by the request for
                // its scope, of `p.bytes` packed bytes.
                if !unsafe { out.write(0, w.result_cell(sp, slot), p.bytes as usize) } {
                    result = Err(Error::Intern);
                }
            }
            result
        }
        (None, class) => Err(verdict_error(w, sp, &p, class, ref_bytes, ref_datatype)),
    };
    if sp.id != 0 {
        // Release: pairs with the Acquire loads of `start` on every member
        // that reuses the slot (through this counter's release sequence).
        w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, consumed))
            .fetch_add(1, Ordering::Release);
        w.free_pending(sp, slot);
        return result;
    }
    // Up the arrival tree again: a node's last consumer goes on to its
    // parent, the top's adds one to the slot's counter.
    let mut t = Tree::start(w);
    loop {
        // AcqRel: releases this rank's reads of the slot (as a node's last
        // consumer, its children's too) to the node's last consumer, which
        // acquires every earlier one's.
        let old = w
            .node_word(
                slot,
                t.base + t.node(),
                core::mem::offset_of!(NodeRecord, consumed),
            )
            .fetch_add(1, Ordering::AcqRel);
        if old.wrapping_add(1) != p.use_.wrapping_mul(t.children().len() as u32) {
            break;
        }
        if t.nodes() == 1 {
            // Release: pairs with the Acquire loads of `start` on every
            // rank that reuses the slot.
            w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, consumed))
                .fetch_add(1, Ordering::Release);
            break;
        }
        t = t.up();
    }
    w.free_pending(sp, slot);
    result
}

/// The error a rank without a local error returns for a verdict.
fn verdict_error(w: &World, sp: Space, p: &Pending, class: u32, ref_bytes: u32, ref_datatype: u32) -> Error {
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

/// A reduction's operand: its pointer, elements and checks.
fn reduction<T, O>(op: &O, send: &[T], recv_len: Option<usize>) -> Option<Error>
where
    T: Equivalence,
    O: Operation<T>,
{
    if let Err(e) = op.check() {
        return Some(e);
    }
    if core::mem::align_of::<T>() > ARGS_BYTES {
        return Some(Error::BufferTooLarge {
            bytes: core::mem::size_of::<T>() as u32,
            limit: 0,
        });
    }
    match recv_len {
        Some(n) if n != send.len() => Some(Error::CountMismatch {
            count: n as u32,
            expected: send.len() as u32,
        }),
        _ => None,
    }
}

fn plain<T>(s: &[T]) -> (Side, usize) {
    (Side::Plain(s.as_ptr() as *mut u8), core::mem::size_of_val(s))
}

impl World {
    /// Starts a barrier (`MPI_Ibarrier`): the request completes once every
    /// rank has started it.
    ///
    /// Standard section: MPI 4.1 §6.12.1.
    pub fn immediate_barrier<'a, 's>(&'a self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error> {
        barrier(self, Space::world(self), scope)
    }

    /// Starts an all-reduce (`MPI_Iallreduce`): every rank's `recv` gets
    /// `send[0] op send[1] op ...` in rank order when its request completes.
    /// `send` is copied as the call starts (it may be reused at once).
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    pub fn immediate_all_reduce_into<'a, 's, T, S, R, O>(
        &'a self,
        scope: &'s Scope<'a>,
        send: &S,
        recv: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let send = send.elements();
        let recv = recv.elements_mut();
        let error = reduction(&op, send, Some(recv.len()));
        let out = Side::Plain(recv.as_mut_ptr() as *mut u8);
        all_reduce(self, Space::world(self), scope, send, out, error, &op)
    }

    /// `MPI_Iallreduce` with `MPI_IN_PLACE`: `buf` is this rank's operand
    /// (copied as the call starts) and receives the result.
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    pub fn immediate_all_reduce_in_place<'a, 's, T, R, O>(
        &'a self,
        scope: &'s Scope<'a>,
        buf: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let buf = buf.elements_mut();
        let error = reduction(&op, buf, None);
        let out = Side::Plain(buf.as_mut_ptr() as *mut u8);
        all_reduce(self, Space::world(self), scope, buf, out, error, &op)
    }
}

fn barrier<'a, 's>(w: &'a World, sp: Space, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error> {
    start(
        w,
        sp,
        scope,
        Start {
            kind: Kind::Barrier,
            root: -1,
            data: None,
            out: None,
            bytes: 0,
            size: 1,
            datatype: ID_BYTE,
            error: None,
        },
        &NoFold,
    )
}

fn all_reduce<'a, 's, T: Equivalence, O: Operation<T>>(
    w: &'a World,
    sp: Space,
    scope: &'s Scope<'a>,
    send: &[T],
    out: Side,
    error: Option<Error>,
    op: &O,
) -> Result<Request<'a, 's>, Error> {
    let (side, bytes) = plain(send);
    start(
        w,
        sp,
        scope,
        Start {
            kind: Kind::AllReduce,
            root: -1,
            data: Some((side, bytes)),
            out: Some(out),
            bytes,
            size: core::mem::size_of::<T>() as u32,
            datatype: T::DATATYPE.id,
            error,
        },
        &OpFold(op, PhantomData::<T>),
    )
}

/// The space of this rank's non-blocking collectives on `comm`, or
/// `MPI_ERR_COMM` where the world has no state for them on communicators.
fn space(w: &World, comm: CommInfo) -> Result<Space, Error> {
    if comm.id == 0 {
        return Ok(Space::world(w));
    }
    if w.layout.immediate_comm_stride == 0 {
        return Err(Error::ImmediateOnSubCommunicator { context: comm.id });
    }
    Ok(Space {
        id: comm.id,
        start: comm.start,
        size: comm.size,
        member: w.core().comm_rank_of(comm.context(), w.rank) as u32,
    })
}

impl<'w> SimpleCommunicator<'w> {
    /// Starts a barrier of this communicator (`MPI_Ibarrier`), as
    /// [`World::immediate_barrier`]. Needs the world's state for
    /// non-blocking collectives on communicators
    /// ([`FLAG_IMMEDIATE_COMMUNICATORS`](crate::state::FLAG_IMMEDIATE_COMMUNICATORS));
    /// without it, `MPI_ERR_COMM` ([`Error::ImmediateOnSubCommunicator`])
    /// at once.
    ///
    /// Standard section: MPI 4.1 §6.12.1.
    pub fn immediate_barrier<'a, 's>(&self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        barrier(self.world, space(self.world, self.info)?, scope)
    }

    /// Starts an all-reduce of this communicator (`MPI_Iallreduce`), as
    /// [`World::immediate_all_reduce_into`]: operands combined in the
    /// communicator's rank order.
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    pub fn immediate_all_reduce_into<'a, 's, T, S, R, O>(
        &self,
        scope: &'s Scope<'a>,
        send: &S,
        recv: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let sp = space(self.world, self.info)?;
        let send = send.elements();
        let recv = recv.elements_mut();
        let error = reduction(&op, send, Some(recv.len()));
        let out = Side::Plain(recv.as_mut_ptr() as *mut u8);
        all_reduce(self.world, sp, scope, send, out, error, &op)
    }

    /// `MPI_Iallreduce` with `MPI_IN_PLACE` on this communicator, as
    /// [`World::immediate_all_reduce_in_place`].
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    pub fn immediate_all_reduce_in_place<'a, 's, T, R, O>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let sp = space(self.world, self.info)?;
        let buf = buf.elements_mut();
        let error = reduction(&op, buf, None);
        let out = Side::Plain(buf.as_mut_ptr() as *mut u8);
        all_reduce(self.world, sp, scope, buf, out, error, &op)
    }
}

/// The non-blocking barrier and all-reduce of a communicator (MPI 4.1
/// §6.12), on the world and on a [`SimpleCommunicator`] alike, for code
/// generic over both (the calls are also inherent methods of each; the
/// rooted ones are on [`Process`]).
pub trait ImmediateCollectives {
    /// Starts a barrier (`MPI_Ibarrier`).
    ///
    /// Standard section: MPI 4.1 §6.12.1.
    fn immediate_barrier<'a, 's>(&'a self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error>;

    /// Starts an all-reduce (`MPI_Iallreduce`) into `recv`.
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    fn immediate_all_reduce_into<'a, 's, T, S, R, O>(
        &'a self,
        scope: &'s Scope<'a>,
        send: &S,
        recv: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;

    /// Starts an all-reduce (`MPI_Iallreduce`) with `MPI_IN_PLACE`.
    ///
    /// Standard section: MPI 4.1 §6.12.8.
    fn immediate_all_reduce_in_place<'a, 's, T, R, O>(
        &'a self,
        scope: &'s Scope<'a>,
        buf: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>;
}

/// Implements [`ImmediateCollectives`] for a type by its inherent methods
/// of the same names (inherent methods come first in `<$ty>::` paths).
macro_rules! immediate_collectives_by_inherent {
    ($ty:ty $(, $lt:lifetime)?) => {
        impl$(<$lt>)? ImmediateCollectives for $ty {
            fn immediate_barrier<'a, 's>(&'a self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error> {
                <$ty>::immediate_barrier(self, scope)
            }

            fn immediate_all_reduce_into<'a, 's, T, S, R, O>(
                &'a self,
                scope: &'s Scope<'a>,
                send: &S,
                recv: &'a mut R,
                op: O,
            ) -> Result<Request<'a, 's>, Error>
            where
                T: Equivalence,
                S: Elements<T> + ?Sized,
                R: ElementsMut<T> + ?Sized,
                O: Operation<T>,
            {
                <$ty>::immediate_all_reduce_into(self, scope, send, recv, op)
            }

            fn immediate_all_reduce_in_place<'a, 's, T, R, O>(
                &'a self,
                scope: &'s Scope<'a>,
                buf: &'a mut R,
                op: O,
            ) -> Result<Request<'a, 's>, Error>
            where
                T: Equivalence,
                R: ElementsMut<T> + ?Sized,
                O: Operation<T>,
            {
                <$ty>::immediate_all_reduce_in_place(self, scope, buf, op)
            }
        }
    };
}

immediate_collectives_by_inherent!(World);
immediate_collectives_by_inherent!(SimpleCommunicator<'w>, 'w);

impl<'w> Process<'w> {
    /// The space of the collective, the root's rank and its error (out of
    /// range), or `MPI_ERR_COMM` (a sub-communicator of a world without
    /// their state).
    fn immediate_root(&self) -> Result<(Space, i32, Option<Error>), Error> {
        let sp = space(self.world, self.comm)?;
        let error = (self.rank < 0 || self.rank >= sp.size as i32).then_some(Error::InvalidRoot {
            root: self.rank,
            size: sp.size as i32,
        });
        Ok((sp, self.rank, error))
    }

    /// Starts a broadcast from this process (`MPI_Ibcast`): on the root,
    /// `buf` is read as the call starts; on the others it receives the
    /// root's data when the request completes (same length and datatype
    /// on every rank; a view of a derived datatype is accepted).
    ///
    /// Standard section: MPI 4.1 §6.12.2.
    pub fn immediate_broadcast_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        let (sp, root, error) = self.immediate_root()?;
        let datatype = buf.datatype();
        let (side, len) = Side::of_mut(buf);
        let is_root = root == sp.member as i32;
        start(
            self.world,
            sp,
            scope,
            Start {
                kind: Kind::Broadcast,
                root,
                data: is_root.then_some((side, len)),
                out: (!is_root).then_some(side),
                bytes: len,
                size: datatype.size.max(1),
                datatype: datatype.id,
                error,
            },
            &NoFold,
        )
    }

    /// Starts a reduce to this process, called by the root
    /// (`MPI_Ireduce`): `recv` gets the rank-ordered reduction when the
    /// request completes. Called on another rank it still takes part, and
    /// every rank's request completes with `MPI_ERR_ROOT`.
    ///
    /// Standard section: MPI 4.1 §6.12.7.
    pub fn immediate_reduce_into_root<'a, 's, T, S, R, O>(
        &self,
        scope: &'s Scope<'a>,
        send: &S,
        recv: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let recv = recv.elements_mut();
        let out = Side::Plain(recv.as_mut_ptr() as *mut u8);
        let len = recv.len();
        self.reduce(scope, send.elements(), Some((out, len)), true, &op)
    }

    /// `MPI_Ireduce` with `MPI_IN_PLACE`, called by the root: `buf` is its
    /// operand (copied as the call starts) and receives the result.
    ///
    /// Standard section: MPI 4.1 §6.12.7.
    pub fn immediate_reduce_into_root_in_place<'a, 's, T, R, O>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut R,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
        T: Equivalence,
        R: ElementsMut<T> + ?Sized,
        O: Operation<T>,
    {
        let buf = buf.elements_mut();
        let out = Side::Plain(buf.as_mut_ptr() as *mut u8);
        let len = buf.len();
        self.reduce(scope, buf, Some((out, len)), true, &op)
    }

    /// Starts a reduce to this process, called by every rank but the root
    /// (`MPI_Ireduce`): contributes `send`, copied as the call starts. The
    /// request completes when the reduction is done (so that argument
    /// errors reach every rank). Called on the root it still takes part,
    /// and every rank's request completes with `MPI_ERR_ROOT`.
    ///
    /// Standard section: MPI 4.1 §6.12.7.
    pub fn immediate_reduce_into<'a, 's, T, S, O>(
        &self,
        scope: &'s Scope<'a>,
        send: &S,
        op: O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        O: Operation<T>,
    {
        self.reduce(scope, send.elements(), None, false, &op)
    }

    fn reduce<'a, 's, T: Equivalence, O: Operation<T>>(
        &self,
        scope: &'s Scope<'a>,
        send: &[T],
        recv: Option<(Side, usize)>,
        as_root: bool,
        op: &O,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        let (sp, root, mut error) = self.immediate_root()?;
        let is_root = root == sp.member as i32;
        if error.is_none() && is_root != as_root {
            error = Some(Error::InvalidRoot {
                root,
                size: sp.size as i32,
            });
        }
        if error.is_none() {
            error = reduction(op, send, recv.map(|(_, n)| n));
        }
        let (side, bytes) = plain(send);
        start(
            self.world,
            sp,
            scope,
            Start {
                kind: Kind::Reduce,
                root,
                data: Some((side, bytes)),
                out: recv.map(|(s, _)| s),
                bytes,
                size: core::mem::size_of::<T>() as u32,
                datatype: T::DATATYPE.id,
                error,
            },
            &OpFold(op, PhantomData::<T>),
        )
    }
}
