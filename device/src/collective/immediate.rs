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
//! children at one node, and at most one node per level. A check loads
//! its children's argument headers four at a time (one 16-byte vector
//! load each, the four in one batch) and the child nodes' verdicts eight
//! at a time: 12 round trips for 32 children, not 160 one after another. A test is one
//! acquire load of `done`; completion copies the result out (broadcast,
//! reduce's root, all-reduce) and climbs the tree again on its
//! consumption counters, the top's last consumer adding one to the slot's.
//!
//! # Sub-communicators: one level
//! On a [`SimpleCommunicator`](crate::SimpleCommunicator) (a world launched with
//! [`FLAG_IMMEDIATE_COMMUNICATORS`](crate::layout::FLAG_IMMEDIATE_COMMUNICATORS),
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
//!   `MPI_ERR_REQUEST` ([`Error::ImmediateLimit`]) on that rank, which then
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
//!   ([`WorldConfig::immediate_bytes`](crate::layout::WorldConfig::immediate_bytes),
//!   48 by default); more fails with `MPI_ERR_BUFFER` on every rank that
//!   passes it (and with the verdict's class on the others).
//! - The bound of [`IMMEDIATE_SLOTS`] outstanding is per communicator:
//!   a rank may have two on the world and two on each communicator.
//! - A sub-communicator of a world launched without their state
//!   ([`FLAG_IMMEDIATE_COMMUNICATORS`](crate::layout::FLAG_IMMEDIATE_COMMUNICATORS)
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

use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::Side;
use crate::communicator::{wait_for, CommInfo, Communicator, Process, World};
use crate::datatype::{BufferMut, Equivalence, ID_BYTE};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::layout::IMMEDIATE_SLOTS;
use crate::polling::{Call, WaitFor};
use crate::request::{Request, Scope};
use crate::shim::{self, Ordering};
use core::marker::PhantomData;

pub use crate::codes::{kind_name, Kind};
pub use crate::nonblocking::{
    Args, CommImmediateLocal, ImmediateLocal, NodeRecord, OutKind, PendingRecord, SlotRecord, ARGS_BYTES,
};
use crate::nonblocking::{Space, Tree, KIND_MISMATCH};

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

/// The first nonzero verdict of the members `member(c)` for `c` in
/// `items`, in order, against `reference` ([`judge`]), 0 when all agree.
/// Four members' arguments are one batch of vector loads, so a check of
/// 32 costs 8 round trips rather than 128 in a row.
fn judge_members(
    w: &World,
    sp: Space,
    slot: u32,
    items: core::ops::Range<u32>,
    member: impl Fn(u32) -> u32,
    reference: &Args,
) -> u32 {
    let mut c = items.start;
    while c < items.end {
        let at = |k: u32| member((c + k).min(items.end - 1));
        let four = w.read_args_x4(sp, slot, [at(0), at(1), at(2), at(3)]);
        for args in four.iter().take((items.end - c).min(4) as usize) {
            let v = judge(args, reference);
            if v != 0 {
                return v;
            }
        }
        c += 4;
    }
    0
}

/// A node's last arriver's check of its children, in order: a child
/// node's own verdict (above level 0) before its first rank's arguments
/// against `reference`. The verdicts of 8 children are one batch of loads,
/// their arguments batches of four children (`judge_members`): 12 round
/// trips for 32 children instead of 160 in a row.
fn judge_children(
    w: &World,
    sp: Space,
    slot: u32,
    t: &Tree,
    children: core::ops::Range<u32>,
    reference: &Args,
) -> u32 {
    let mut c = children.start;
    while c < children.end {
        let n = (children.end - c).min(8);
        if t.span > 1 {
            let word = |k: u32| {
                w.node_word(
                    slot,
                    t.below + c + k.min(n - 1),
                    core::mem::offset_of!(NodeRecord, verdict),
                )
            };
            // Relaxed: acquired through the node's arrival add.
            let verdicts = shim::load_relaxed_batch(
                [
                    word(0),
                    word(1),
                    word(2),
                    word(3),
                    word(4),
                    word(5),
                    word(6),
                    word(7),
                ],
                n as usize,
            );
            for k in 0..n {
                if verdicts[k as usize] != 0 {
                    // The children before `k` agreed: their arguments first.
                    let v = judge_members(w, sp, slot, c..c + k, |x| t.first_rank(x), reference);
                    return if v != 0 { v } else { verdicts[k as usize] };
                }
            }
        }
        let v = judge_members(w, sp, slot, c..c + n, |x| t.first_rank(x), reference);
        if v != 0 {
            return v;
        }
        c += n;
    }
    0
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
        let verdict = judge_children(w, sp, slot, &t, children.clone(), &reference);
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
    let verdict = judge_members(w, sp, slot, 0..sp.size, |m| m, &reference);
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
        return Err(Error::ImmediateLimit {
            limit: IMMEDIATE_SLOTS,
        });
    }
    w.set_started(sp, n.wrapping_add(1));
    let use_ = n / IMMEDIATE_SLOTS + 1;
    let capacity = w.layout.immediate_bytes - ARGS_BYTES;
    if s.error.is_none() && s.bytes > capacity {
        s.error = Some(Error::BufferTooLarge {
            bytes: saturating_u32(s.bytes),
            // Exact: `immediate_bytes` is a `u32` of the configuration.
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
            // Exact where it is compared (`judge`): a start without an
            // error has `bytes <= capacity`, a `u32` (checked above); one
            // with an error is judged by its class, not this word.
            bytes: saturating_u32(s.bytes),
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
            bytes: saturating_u32(core::mem::size_of::<T>()),
            limit: 0,
        });
    }
    match recv_len {
        Some(n) if n != send.len() => Some(Error::CountMismatch {
            count: saturating_u32(n),
            expected: saturating_u32(send.len()),
        }),
        _ => None,
    }
}

fn plain<T>(s: &[T]) -> (Side, usize) {
    (Side::Plain(s.as_ptr() as *mut u8), core::mem::size_of_val(s))
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

/// The non-blocking barrier and all-reduce of a communicator (MPI 4.1
/// §6.12), on the world and on a [`SimpleCommunicator`](crate::SimpleCommunicator) alike; the rooted
/// ones are on the root's [`Process`]. On a [`SimpleCommunicator`](crate::SimpleCommunicator) they need
/// the world's state for non-blocking collectives on communicators
/// ([`FLAG_IMMEDIATE_COMMUNICATORS`](crate::layout::FLAG_IMMEDIATE_COMMUNICATORS));
/// without it, `MPI_ERR_COMM` ([`Error::ImmediateOnSubCommunicator`]) at
/// once.
pub trait ImmediateCollectives: Communicator {
    /// Starts a barrier (`MPI_Ibarrier`): the request completes once every
    /// rank has started it.
    ///
    /// Standard section: MPI 4.1 §6.12.1.
    fn immediate_barrier<'a, 's>(&'a self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>, Error> {
        let v = self.view();
        barrier(v.world, space(v.world, v.comm)?, scope)
    }

    /// Starts an all-reduce (`MPI_Iallreduce`): every rank's `recv` gets
    /// `send[0] op send[1] op ...` in the communicator's rank order when its
    /// request completes. `send` is copied as the call starts (it may be
    /// reused at once).
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
        O: Operation<T>,
    {
        let v = self.view();
        let sp = space(v.world, v.comm)?;
        let send = send.elements();
        let recv = recv.elements_mut();
        let error = reduction(&op, send, Some(recv.len()));
        let out = Side::Plain(recv.as_mut_ptr() as *mut u8);
        all_reduce(v.world, sp, scope, send, out, error, &op)
    }

    /// `MPI_Iallreduce` with `MPI_IN_PLACE`: `buf` is this rank's operand
    /// (copied as the call starts) and receives the result.
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
        O: Operation<T>,
    {
        let v = self.view();
        let sp = space(v.world, v.comm)?;
        let buf = buf.elements_mut();
        let error = reduction(&op, buf, None);
        let out = Side::Plain(buf.as_mut_ptr() as *mut u8);
        all_reduce(v.world, sp, scope, buf, out, error, &op)
    }
}

/// Every communicator has them (a reference to one too).
impl<C: Communicator + ?Sized> ImmediateCollectives for C {}

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
