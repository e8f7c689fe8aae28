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
//! operand (a broadcast's root: its data) into its own cell of the slot; a
//! reduction of elements of at most 8 bytes on the world writes its
//! operand's first 8 bytes into its small word instead, beside the other
//! ranks' (`Fold::SMALL`, `Layout::immediate_word`), and the cell only
//! if more is left. It then climbs the slot's arrival tree: nodes of `IMMEDIATE_FANOUT`
//! (32) children, ranks `32 i .. 32 i + 32` under level-0 node `i`, 32
//! nodes of the level below under each node above, up to one top node
//! (three levels for 1,100 ranks, four for a full H100); in a world in
//! one process whose blocks are a multiple of 32 ranks, level 1 has
//! instead one node per block over the block's level-0 nodes, where that
//! leaves fewer levels above the first two
//! (`layout::immediate_block_level`: 1,025 ranks and more in blocks of
//! 256, up to 32 blocks; a world of one block; blocks of 1,024), and for
//! a reduction of small elements (`Fold::SMALL`) also where the tree of 32
//! would leave its top more children than one batch of small words loads
//! (`layout::immediate_fold_block_level`: 513 to 1,024 ranks in blocks of
//! 256). The slot's node records are the latter tree's; the other
//! collectives' tree, a level shorter there, uses the first of them, and
//! every use's top counts its rounds in one record ("Rounds"). At each node it
//! arrives with its `Tally`: it first ORs its root, datatype and byte
//! count into three of the node's words (`red.or`, relaxed, each as
//! `v << 32 | !v`, whose OR has a bit set in both halves where two ranks
//! differ; a barrier has none to OR), then adds to the node's arrival
//! word, acquire-release, one arrival, one for its kind and, if it found
//! an error in its own arguments, its own bit among the node's children.
//! At level 0, where the node's ranks all lie in the rank's block and the
//! kernel's entry zeroed the block's library words
//! ([`shim::block_words`], behind a block barrier: `RankState`'s block
//! words), the node's tally words (the arrival word and the three ORed
//! ones) are its words there, in the block's shared memory, and so are its
//! ranks' small words (in the block's launch-sized shared memory, which
//! every launch of the host's gives it: `layout::block_small_word`); the
//! add has block scope (`fetch_add_block`): the arrivers are the block's
//! ranks alone, and the release the last arriver makes next at device
//! scope (its add to the parent, `handed` or `done`) is cumulative, so it
//! carries their writes on to whoever acquires it. The node's record and
//! cell keep the rest (its verdict, its partial result), which ranks of
//! other blocks read. A block's level-1 node does the same one level up:
//! its tally words in the block's words (`block_node_tally`), its
//! children's partial small words in the block's launch-sized shared
//! memory, block-scope adds from its children (the block's level-0 nodes'
//! last arrivers), and its last arriver's device-scope add to its parent
//! (or, in a world of one block, its `done`) carries the block's writes on.
//! The add that completes the count makes it the node's last arriver:
//! the add's result tells it the kinds and the children with an error
//! of the whole subtree, and one batch of three loads the rest (none for
//! barriers; for a reduction of elements of at most 8 bytes, in the batch
//! of the fold's first loads, `Fold::tally_and_fold`), instead of each
//! child's arguments one after another. It
//! folds its children's operands
//! (level 0) or partial results in rank order into the node's cell when
//! the subtree agrees (each element of 16 children loaded in one batch,
//! eight for elements over 8 bytes, and combined in registers:
//! `Fold::fold_parts`; what fits in the small words, 16 children's in one
//! batch of eight 16-byte loads, into the node's small word:
//! `Fold::tally_and_fold`), zeroes the tally's words for the next use
//! (two 16-byte stores, one when only the arrival word was used), stores
//! the subtree's first error (when it has one:
//! the lowest child's, one load) as the node's verdict and
//! goes on to the parent with the node's tally as its own; the other
//! arrivers are done. The top node's last arriver judges the whole world
//! from the top's tally, folds into the result cell (a broadcast: copies
//! the root's cell there), writes the verdict and the reference
//! arguments when the verdict is not clean, and publishes `u` in the
//! slot's `done` word (release), with a bit that says whether the verdict
//! was clean (`nonblocking::done_word`): a clean verdict is that bit
//! alone, and no completion reads the verdict's words then. No rank folds more than 32
//! children, and at most one node per level. A test is one acquire load
//! of `done`; completion copies the result out (broadcast, reduce's root,
//! all-reduce). A wait reads the rank's own words it needs (the use, its
//! private record, its arguments) once, in one batch before its first
//! poll (a world barrier's reads the use alone: "Rounds"), so that its
//! polls are the acquire load alone and a clean completion loads nothing
//! but the result; a test, or a verdict that is not clean, loads the
//! verdict's words and the rank's arguments in one batch after the
//! acquire.
//!
//! # Reuse
//! The next use of a slot needs nobody's progress either. A rank starts
//! use `u + 1` of slot `s` only after it completed use `u` there (else
//! `MPI_ERR_REQUEST`, below), and use `u` was done: every node's last
//! arriver had read its children's cells and tally and zeroed the tally
//! (a level-0 node's arrival word in the block's words among them)
//! before it climbed, and those climbs happen before `done` (release),
//! which the rank acquired. What use `u + 1` writes that others read in
//! use `u` (the result cell, the verdict, the reference, the nodes' cells
//! and verdicts) is written by last arrivers, after every rank below them
//! arrived in use `u + 1`, so after each of those ranks completed use
//! `u`: its reads of them come before its arrival (acquire-release) in
//! program order.
//!
//! # Rounds: the top's arrival word, read by the waiting ranks
//! In a world in one process whose top node's arrival word is in global
//! memory (any world but one of at most 32 ranks in one block, whose
//! top is a level-0 node in the block's words), the top counts each use
//! in a word of its own, one of `nonblocking::TOP_ROUNDS` by the
//! use modulo 4 (`World::top_round`), in the record of a barrier's top
//! (`Layout::immediate_top`) whatever the use's tree: a reduction's tree
//! with a level more counts there too, so that the rotation below holds
//! across every use of the slot. Its last arriver leaves that word
//! as its add left it and zeroes the previous use's instead. A waiting
//! rank of a barrier polls its use's word, acquire, and completes when
//! it reads every child's clean barrier (each child's add is
//! `Tally::CLEAN_BARRIER` then): the top's children's adds are the ends
//! of chains of acquire-release adds from every rank, so the read
//! acquires every rank's arrival, as the native grid barrier's block
//! leaders see theirs in the counter they add to. It then needs neither
//! `done` nor the top's release of it, which lie on the critical path of
//! a barrier otherwise. A word that reads every child but not a clean
//! barrier (a kind mismatch, an error) sends the wait to `done` for the
//! verdict; the other kinds wait for `done` as before (their result
//! cells are written after the top's add). The barrier's request says it
//! is a world barrier's, so its wait reads none of the rank's own words
//! but the use before it polls (the arguments only if it comes to record
//! its wait), and polls twice before the first record and sleep: a
//! block's last arriver waits straight after its add at the top, its
//! first poll often meets the other blocks' adds in flight, and the
//! round's next start waits for this rank's sight of it.
//!
//! Why the words suffice: use `u`'s word holds `u`'s adds alone from
//! before any rank counts into it until after every rank has read it.
//! Its last use was `u - 4`, and use `u - 3`'s last arriver zeroed it
//! before arriving in use `u - 2`; a rank counts into it in use `u` after
//! completing use `u - 1`, which acquired every rank's arrival in `u - 1`,
//! each made after completing `u - 2`, which acquired that arrival
//! (through the word of `u - 2` or `done`): the zeroing comes first. It
//! is zeroed again only by use `u + 1`'s last arriver, after every rank
//! arrived in `u + 1`, each after completing `u`. Two words would not do:
//! a rank that completed `u + 1` from its word may count into `u + 2`'s
//! before `u + 1`'s last arriver, whose add it saw, has zeroed that word
//! (`immediate_barriers_overlapped_in_rounds` in the loom tests hangs
//! then). Three would; four keep the rotation in step where the use
//! count wraps (at a power of two). The last arriver itself knows the collective complete
//! when its verdict is clean: its start hands back a request that its
//! wait or test collects without polling, when it has nothing to copy.
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
//! arrives on the group's counter; the group's last arriver reads every
//! member's arguments (four per batch) into one `Tally`, judges it as
//! the world's top does, folds the operands in member order into the
//! result cell (a broadcast: copies the root's), and publishes `done`.
//! The cost is serial: one rank reads and folds `size` members. Block and warp
//! communicators take this path too (it needs no rank's progress, so
//! neither the block barrier nor a shuffle).
//!
//! Operands are combined strictly in rank order (`x0 op x1 op ... op
//! x(n-1)`, bracketed by the tree's nodes), as MPI §6.9.1 asks of a
//! non-commutative operation (associativity is assumed, as for every
//! reduction); the cost per level is one node's 32 children of `count`
//! elements (four batches of loads per element), the levels one after
//! another (`ceil(log32(ranks))`).
//!
//! # Across processes
//! In a world across processes (docs/distributed.md; the device's
//! `distributed` feature) each process's ranks climb a tree of their own
//! (`Tree::first`: its first rank is item 0), in this process's copy of
//! the slot. Its top's last arriver folds them as the world's top would,
//! then stores the reduction's predefined operation code and the use in
//! the slot's `handed` word (Release) instead of publishing. The host's
//! relay sends that part (the process's ranks' arguments, and its fold or
//! a broadcast root's data) to the other processes; once every process's
//! part of the use came, it judges every rank's arguments ([`judge`]),
//! joins the parts in process order, which is rank order (a process runs
//! consecutive ranks), with the same operation ([`fold_system`]) and
//! publishes `done` as the top arriver does. Nothing waits at a start: a
//! rank blocked elsewhere does not hold a collective back, since the relay
//! completes it.
//!
//! A communicator's group whose members span processes keeps its one
//! level, counted per process: each member counts the members its process
//! runs (`local_members`: the context's table, read once per rank and
//! context), arrives on the group's counter in its process's copy, and
//! the last of them (the counter at `use × local`, never `use × size`)
//! stores the group's size, the operation code and the use in the group's
//! record (`handed`, Release) and sets the context's `relayed` flag
//! (`hand_group`). The relay sends those members' arguments and operands
//! to the other processes with members; once it has every member's, it
//! judges them in member order ([`judge`]), folds the operands in member
//! order ([`fold_system`]) or copies the root's data, and publishes `done`
//! in its process's copy as the group's last arriver would. A group inside
//! one process (a block's, `split_shared`'s) runs as in one process.
//!
//! A reduction with an operation of the program's own on the world, or on
//! a group that spans processes, cannot be folded by the relay (it runs on
//! the host and applies predefined operations alone), so its ranks join
//! the parts themselves: each rank's start moves its operation and the
//! `JoinFn` made for its type (`join_with`) into the last
//! [`JOIN_KEEP_BYTES`] of its own cell (`start_reduction`); the relay
//! puts the parts where the ranks here read them (the world: each other
//! process's fold of its ranks into its first rank's cell, a shadow's,
//! beside this process's in the result cell; a group: every member's
//! operand, in member order, in a buffer of its own whose address it
//! writes into the group's result cell) and publishes [`VERDICT_JOIN`]; each
//! rank's completion then combines the parts in rank (member) order into
//! its result buffer, element by element, and drops the operation
//! (`nonblocking::join`); an error verdict drops it unused. The keep
//! bounds such a reduction: an operation of at most 8 bytes (a closure
//! that captures at most one word) and an operand of at most
//! `immediate_bytes` − 32 bytes (32 of the default 64); beyond them every
//! rank fails (`Error::AcrossProcesses`, `MPI_ERR_BUFFER`), as a local
//! error that the verdict carries to all.
//!
//! # Bounds
//! - At most [`IMMEDIATE_SLOTS`] (2) non-blocking collectives per rank are
//!   outstanding (started and not yet completed by a wait or test, or by
//!   the end of their scope). Starting one more fails at once with
//!   `MPI_ERR_REQUEST` ([`Error::ImmediateLimit`]) on that rank, which then
//!   does not take part (the program is erroneous: the others' collective
//!   will wait for it).
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
//! arrives, with its error class in its arguments; the verdict reaches
//! every rank when the collective completes: the first local error class
//! in rank order, else the first disagreement in the order kind, root,
//! datatype, count (`MPI_ERR_ROOT`, `MPI_ERR_TYPE`, `MPI_ERR_COUNT`; ranks
//! that started different collectives in the same position get
//! [`Error::CollectiveMismatch`], class `MPI_ERR_COUNT`, as the blocking
//! collectives' disagreements, naming their own and another kind). A rank
//! returns its own local error, or else the verdict's class
//! (`MPI_ERR_BUFFER` and `MPI_ERR_OP` come from other ranks' local
//! errors). Receive buffers are then untouched.

use super::operation::{Elements, ElementsMut, Operation};
use crate::buffers::Side;
use crate::communicator::{CommInfo, Communicator, Process, World};
use crate::datatype::{BufferMut, Equivalence, ID_BYTE};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::layout::{
    IMMEDIATE_BLOCK_NODES, IMMEDIATE_BLOCK_NODE_WORDS, IMMEDIATE_FANOUT, IMMEDIATE_SLOTS,
    IMMEDIATE_SMALL_BATCH,
};
use crate::request::{Request, Scope};
use crate::shim::{self, AtomicU64, Ordering};
use core::marker::PhantomData;

pub use crate::codes::{kind_name, Kind};
use crate::nonblocking::{block_level, packed_agree, JoinFn, JoinParts, Space, Tally, Tree};
pub use crate::nonblocking::{
    done_word, Args, CommImmediateLocal, ImmediateLocal, NodeRecord, OutKind, PendingRecord, SlotRecord,
    ARGS_BYTES, JOIN_KEEP_BYTES, VERDICT_JOIN,
};

/// The [`Tally`] of the members `items` of `sp`, read four arguments per
/// batch of vector loads, with the first local error class among them in
/// member order (0 if none).
fn tally_members(w: &World, sp: Space, slot: u32, items: core::ops::Range<u32>) -> (Tally, u32) {
    let mut tally = Tally::default();
    let mut first_error = 0;
    let mut c = items.start;
    while c < items.end {
        let at = |k: u32| (c + k).min(items.end - 1);
        let four = w.read_args_x4(sp, slot, [at(0), at(1), at(2), at(3)]);
        for args in four.iter().take((items.end - c).min(4) as usize) {
            tally.merge(&Tally::of(args, 0));
            if first_error == 0 {
                first_error = args.kind_class >> 8;
            }
        }
        c += 4;
    }
    tally.errors = 0;
    (tally, first_error)
}

/// The verdict on a world whose ranks' arguments are `args` (in rank
/// order) and the reference arguments, as the world's top arriver judges
/// them: for the host's relay, which joins the processes' parts of a
/// non-blocking collective across processes (docs/distributed.md).
#[doc(hidden)]
pub fn judge(args: impl IntoIterator<Item = Args>) -> (u32, Args) {
    let mut tally = Tally::default();
    let mut first_error = 0;
    let mut first = None;
    for a in args {
        tally.merge(&Tally::of(&a, 0));
        if first_error == 0 {
            first_error = a.kind_class >> 8;
        }
        first.get_or_insert(a);
    }
    tally.errors = 0;
    let verdict = tally.verdict(first_error);
    let reference = if verdict == 0 {
        tally.agreed()
    } else {
        first.unwrap_or(Args {
            kind_class: 0,
            root: 0,
            bytes: 0,
            datatype: 0,
        })
    };
    (verdict, reference)
}

/// `acc = acc op part`, element by element, for the predefined operation
/// `code` on elements of datatype `datatype` (the device's own
/// `SystemOperation`); false for a code or datatype it does not take. For
/// the host's relay (docs/distributed.md).
#[doc(hidden)]
pub fn fold_system(code: u32, datatype: u32, acc: &mut [u8], part: &[u8]) -> bool {
    use super::operation::SystemOperation;
    fn each<T: bytemuck::Pod>(op: &impl Operation<T>, acc: &mut [u8], part: &[u8]) -> bool {
        let size = core::mem::size_of::<T>();
        if acc.len() != part.len() || !acc.len().is_multiple_of(size) {
            return false;
        }
        for (a, b) in acc.chunks_exact_mut(size).zip(part.chunks_exact(size)) {
            let x: T = bytemuck::pod_read_unaligned(a);
            let y: T = bytemuck::pod_read_unaligned(b);
            a.copy_from_slice(bytemuck::bytes_of(&op.apply(&x, &y)));
        }
        true
    }
    let op = SystemOperation::from_code(code);
    use crate::datatype::*;
    match datatype {
        ID_BYTE => each::<u8>(&op, acc, part),
        ID_I8 => each::<i8>(&op, acc, part),
        ID_U16 => each::<u16>(&op, acc, part),
        ID_I16 => each::<i16>(&op, acc, part),
        ID_U32 => each::<u32>(&op, acc, part),
        ID_I32 => each::<i32>(&op, acc, part),
        ID_U64 => each::<u64>(&op, acc, part),
        ID_I64 => each::<i64>(&op, acc, part),
        ID_F32 => each::<f32>(&op, acc, part),
        ID_F64 => each::<f64>(&op, acc, part),
        _ => false,
    }
}

/// How the last arrivers combine operands.
trait Fold {
    /// `cell = part 0 op part 1 op ... op part (parts - 1)`, part `j` at
    /// `first + j × stride`, over `bytes` bytes of elements, element by
    /// element, strictly in that order: each element of the parts is
    /// loaded a batch of parts at a time ([`FOLD_BATCH`], or
    /// [`WIDE_FOLD_BATCH`] for small elements) in one batch of independent
    /// loads (`shim::load_plain_batch`) and combined in
    /// registers; the cell is written once per element.
    ///
    /// # Safety
    /// `parts >= 1`; every part and the cell hold `bytes` bytes of
    /// elements of the fold's type, aligned for it; nobody writes the parts
    /// meanwhile and nobody else accesses the cell.
    unsafe fn fold_parts(&self, cell: *mut u8, first: *const u8, stride: usize, parts: u32, bytes: usize);

    /// Bytes of a world reduction's operand that its ranks and the tree's
    /// nodes keep in their small words
    /// ([`Layout::immediate_word`](crate::layout::Layout::immediate_word)):
    /// the elements that fit in 8 bytes; 0 for elements over 8 bytes and
    /// for nothing to combine (the whole operand stays in the cells).
    const SMALL: usize;

    /// A node's last arriver's packed words and the start of its fold in
    /// one (with [`Fold::SMALL`] not 0): loads `words` (the node's packed
    /// words, [`Tally::packed`]) in one batch with the small words of its
    /// first 16 children (at `small`, 8 bytes apart; two children's
    /// with one 16-byte load when `small` is 16-aligned), and when the
    /// packed words agree ([`packed_agree`]) on at least one element,
    /// folds the children's elements in the small words, in child order,
    /// into `out` (the node's small word, or the result cell at the top);
    /// the caller folds the rest from the cells, from [`Fold::SMALL`]
    /// bytes on. Returns the packed words. Without it the fold would wait
    /// for the packed words' round trip and load each child's element on
    /// its own: per level of the tree, one round trip and half the loads
    /// less on the critical path.
    ///
    /// # Safety
    /// `parts` (1 to 32) children's small words at `small`, released to
    /// the caller like the packed words and written by nobody meanwhile,
    /// hold [`Fold::SMALL`] bytes of their operands whatever the packed
    /// words say (a world slot's words exist for every rank and node);
    /// nobody else accesses `out`'s [`Fold::SMALL`] bytes.
    unsafe fn tally_and_fold(
        &self,
        words: &[AtomicU64; 4],
        out: *mut u8,
        small: *const u8,
        parts: u32,
    ) -> [u64; 3];

    /// The predefined operation's code, 0 for none or another
    /// ([`Operation::system_code`]).
    fn operation(&self) -> u32;
}

/// The node's packed words, relaxed (acquired through the node's add).
#[inline(always)]
fn load_packed(words: &[AtomicU64; 4]) -> [u64; 3] {
    [&words[1], &words[2], &words[3]].map(|x| x.load(Ordering::Relaxed))
}

/// `tally` with the node's packed words.
#[inline(always)]
fn with_packed(mut tally: Tally, [root, datatype, bytes]: [u64; 3]) -> Tally {
    (tally.root, tally.datatype, tally.bytes) = (root, datatype, bytes);
    tally
}

/// Parts whose element a last arriver loads in one batch, for elements
/// larger than [`WIDE_FOLD_BYTES`]: the 32 children of a node in four
/// round trips instead of 32 (each child's element was loaded after the
/// previous one was combined, a chain of loads).
const FOLD_BATCH: usize = 8;

/// Elements of at most this many bytes (`f64`, `u64` and smaller) are
/// loaded [`WIDE_FOLD_BATCH`] parts at a time when there are more than
/// [`FOLD_BATCH`]: a node's 32 children in two round trips, the batch's
/// values in 32 registers at most (32 at a time, ptxas spills them:
/// docs/performance.md).
const WIDE_FOLD_BYTES: usize = 8;

/// Parts per batch for elements of at most [`WIDE_FOLD_BYTES`]: half a
/// node of the world's arrival tree.
const WIDE_FOLD_BATCH: usize = 16;

/// Barrier and broadcast: nothing to combine.
struct NoFold;

impl Fold for NoFold {
    unsafe fn fold_parts(&self, _: *mut u8, _: *const u8, _: usize, _: u32, _: usize) {}

    const SMALL: usize = 0;

    unsafe fn tally_and_fold(&self, words: &[AtomicU64; 4], _: *mut u8, _: *const u8, _: u32) -> [u64; 3] {
        // Relaxed: as `load_packed` says.
        shim::independent(|| load_packed(words))
    }

    fn operation(&self) -> u32 {
        0
    }
}

/// A reduction's operation on `T`.
struct OpFold<'o, T, O>(&'o O, PhantomData<T>);

impl<T: Equivalence, O: Operation<T>> Fold for OpFold<'_, T, O> {
    fn operation(&self) -> u32 {
        self.0.system_code()
    }

    // Out of line: its batch of values stays out of `arrive`'s registers.
    #[inline(never)]
    unsafe fn fold_parts(&self, cell: *mut u8, first: *const u8, stride: usize, parts: u32, bytes: usize) {
        // The wide batch for a small type (known at compile time) and more
        // parts than a narrow batch holds: on the GPU a batch loads its
        // last part again in place of each missing one.
        if core::mem::size_of::<T>() <= WIDE_FOLD_BYTES && parts as usize > FOLD_BATCH {
            // SAFETY: the caller's contract.
            unsafe { fold_in_batches::<T, O, WIDE_FOLD_BATCH>(self.0, cell, first, stride, parts, bytes) }
        } else {
            // SAFETY: the caller's contract.
            unsafe { fold_in_batches::<T, O, FOLD_BATCH>(self.0, cell, first, stride, parts, bytes) }
        }
    }

    const SMALL: usize = match core::mem::size_of::<T>() {
        0 => 0,
        size if size <= WORD_BYTES => WORD_BYTES / size * size,
        _ => 0,
    };

    // Out of line, as `fold_parts`.
    #[inline(never)]
    unsafe fn tally_and_fold(
        &self,
        words: &[AtomicU64; 4],
        out: *mut u8,
        small: *const u8,
        parts: u32,
    ) -> [u64; 3] {
        let size = core::mem::size_of::<T>();
        let parts = parts as usize;
        let pairs = small.addr().is_multiple_of(16);
        // Relaxed (the packed words): as `load_packed` says. The children's
        // words are loaded before the packed words say whether they are
        // wanted: they are there whatever the ranks passed (the caller's
        // contract), released to us by the node's add like the words.
        let (packed, head) = shim::independent(|| {
            // SAFETY: the first children's words (the caller's contract).
            (load_packed(words), unsafe { load_small(small, pairs, parts) })
        });
        let bytes = (packed[2] >> 32) as usize;
        if !packed_agree(packed) || bytes < size {
            return packed;
        }
        if size > WORD_BYTES / 2 {
            // One element per word: one accumulator, in a register (an
            // array of them is local memory).
            let mut acc = element_of::<T>(head[0], 0);
            // SAFETY: the children's words (the caller's contract).
            unsafe {
                each_small_batch(head, small, pairs, parts, |batch, n, first| {
                    let values: [T; SMALL_BATCH] = core::array::from_fn(|j| element_of(batch[j], 0));
                    acc = self.0.fold_batch(acc, &values, first as usize, n);
                })
            };
            // SAFETY: element 0 of `out`'s first `SMALL` bytes (the
            // caller's contract).
            unsafe {
                shim::note_global(out, size, true);
                core::ptr::write(out as *mut T, acc);
            }
            return packed;
        }
        // Elements of the operand in its small word: at least one.
        let elements = bytes.min(Self::SMALL) / size;
        let mut acc = [core::mem::MaybeUninit::<T>::uninit(); WORD_BYTES];
        // SAFETY: the children's words (the caller's contract).
        unsafe {
            each_small_batch(head, small, pairs, parts, |batch, n, first| {
                fold_small(self.0, &mut acc, batch, n, elements, first)
            })
        };
        for (e, a) in acc.iter().enumerate().take(WORD_BYTES / size) {
            if e < elements {
                // SAFETY: element `e` of `out`'s first `SMALL` bytes (the
                // caller's contract), folded above (`e < elements`).
                unsafe {
                    shim::note_global(out.add(e * size), size, true);
                    core::ptr::write(out.add(e * size) as *mut T, a.assume_init());
                }
            }
        }
        packed
    }
}

/// Bytes of a small word of the world's tree
/// ([`Layout::immediate_word`](crate::layout::Layout::immediate_word)).
const WORD_BYTES: usize = 8;

/// Children whose small words [`Fold::tally_and_fold`] loads in one
/// batch: half a node (eight 16-byte loads; a node's 32 words at once
/// would be 64 registers of values).
const SMALL_BATCH: usize = IMMEDIATE_SMALL_BATCH as usize;

/// Calls `fold(batch, n, first)` on the small words of `parts` (1 or
/// more) children at `small`, [`SMALL_BATCH`] at a time: `head` holds the
/// first batch (loaded by the caller with the node's words), and each
/// next batch is loaded after the previous one was folded. `n` is the
/// batch's count of children, `first` whether it is the first batch.
///
/// # Safety
/// As [`load_small`]'s, for the `parts` children's words at `small`.
// One batch array for both accumulators of `tally_and_fold`: one fold
// call, its values in one place.
#[inline(always)]
unsafe fn each_small_batch(
    head: [u64; SMALL_BATCH],
    small: *const u8,
    pairs: bool,
    parts: usize,
    mut fold: impl FnMut(&[u64; SMALL_BATCH], usize, bool),
) {
    let mut batch = head;
    let mut done = 0;
    loop {
        fold(&batch, (parts - done).min(SMALL_BATCH), done == 0);
        done += SMALL_BATCH;
        if done >= parts {
            return;
        }
        let at = small.wrapping_add(done * WORD_BYTES);
        // SAFETY: children `done..` (the caller's contract).
        batch = shim::independent(|| unsafe { load_small(at, pairs, parts - done) });
    }
}

/// Two neighbours' small words: one 16-byte load on the GPU.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Pair([u64; 2]);

/// The small words of the first `n` (1 or more; at most [`SMALL_BATCH`]
/// count) children at `at`, 8 bytes apart, as plain loads of one batch:
/// two children's per 16-byte load with `pairs` (`at` 16-aligned) and the
/// last one alone when `n` is odd (its neighbour's word is another
/// node's, which may be being written), else one per child. Past `n` the
/// values are 0.
///
/// # Safety
/// The first `n` words at `at` may be read as plain memory (released to
/// the caller, written by nobody meanwhile); `at` is 16-aligned with
/// `pairs`.
#[inline(always)]
unsafe fn load_small(at: *const u8, pairs: bool, n: usize) -> [u64; SMALL_BATCH] {
    let n = n.min(SMALL_BATCH);
    if !pairs {
        // SAFETY: words `0..n` of the caller's contract.
        let v: [u64; SMALL_BATCH] = unsafe { shim::load_plain_batch(at, WORD_BYTES, n) };
        return core::array::from_fn(|j| if j < n { v[j] } else { 0 });
    }
    let mut v = [0u64; SMALL_BATCH];
    let whole = n / 2;
    if whole > 0 {
        // SAFETY: words `0..2 whole` of the caller's contract, in pairs of
        // 16 aligned bytes.
        let p: [Pair; SMALL_BATCH / 2] = unsafe { shim::load_plain_batch(at, 16, whole) };
        for (i, pair) in p.iter().enumerate() {
            if i < whole {
                v[2 * i] = pair.0[0];
                v[2 * i + 1] = pair.0[1];
            }
        }
    }
    if n % 2 == 1 {
        // SAFETY: word `n - 1` of the caller's contract.
        let [last]: [u64; 1] = unsafe { shim::load_plain_batch(at.wrapping_add((n - 1) * WORD_BYTES), 8, 1) };
        // Constant indices keep `v` in registers (`v[n - 1]` would index
        // it at run time, from local memory on the GPU).
        for (j, x) in v.iter_mut().enumerate() {
            if j == n - 1 {
                *x = last;
            }
        }
    }
    v
}

/// Folds element `e < elements` of the small words of `n` children
/// (`words`) into `acc[e]`, in child order; `first`: the first of them is
/// the fold's first part.
#[inline(always)]
fn fold_small<T: Equivalence, O: Operation<T>>(
    op: &O,
    acc: &mut [core::mem::MaybeUninit<T>; WORD_BYTES],
    words: &[u64; SMALL_BATCH],
    n: usize,
    elements: usize,
    first: bool,
) {
    let size = core::mem::size_of::<T>();
    for (e, a) in acc.iter_mut().enumerate().take(WORD_BYTES / size) {
        if e < elements {
            // Constant indices keep `words` in registers.
            let values: [T; SMALL_BATCH] = core::array::from_fn(|j| element_of(words[j], e));
            let x = if first {
                values[0]
            } else {
                // SAFETY: written by the previous batch's fold.
                unsafe { a.assume_init() }
            };
            a.write(op.fold_batch(x, &values, first as usize, n));
        }
    }
}

/// Element `e` of a small word: bytes `e × size ..` of `word`
/// (little-endian: the low bits after the shift), `(e + 1) × size <= 8`.
#[inline(always)]
fn element_of<T: Equivalence>(word: u64, e: usize) -> T {
    let bits = if e == 0 {
        word
    } else {
        word >> (8 * e * core::mem::size_of::<T>())
    };
    // SAFETY: `size_of::<T>() <= 8` bytes of `bits` (the caller's bound,
    // `Fold::SMALL` not 0); every bit pattern is a value of an
    // `Equivalence` type.
    unsafe { core::mem::transmute_copy::<u64, T>(&bits) }
}

/// [`Fold::fold_parts`] of `op`, `N` parts per batch.
///
/// # Safety
/// As [`Fold::fold_parts`].
#[inline(always)]
unsafe fn fold_in_batches<T: Equivalence, O: Operation<T>, const N: usize>(
    op: &O,
    cell: *mut u8,
    first: *const u8,
    stride: usize,
    parts: u32,
    bytes: usize,
) {
    let size = core::mem::size_of::<T>().max(1);
    let parts = parts as usize;
    let mut at = 0;
    while at + size <= bytes {
        let mut acc = core::mem::MaybeUninit::<T>::uninit();
        let mut done = 0;
        while done < parts {
            let k = (parts - done).min(N);
            // SAFETY: element `at / size` of parts `done..done + k` (the
            // caller's contract).
            let batch: [T; N] =
                unsafe { shim::load_plain_batch(first.wrapping_add(done * stride + at), stride, k) };
            let x = if done == 0 {
                batch[0]
            } else {
                // SAFETY: written by the previous batch's fold.
                unsafe { acc.assume_init() }
            };
            acc.write(op.fold_batch(x, &batch, (done == 0) as usize, k));
            done += k;
        }
        // SAFETY: element `at / size` of the cell (the caller's contract);
        // `acc` holds the fold of `parts >= 1` parts.
        unsafe {
            shim::note_global(cell.add(at), size, true);
            core::ptr::write(cell.add(at) as *mut T, acc.assume_init());
        }
        at += size;
    }
}

/// Arrives in use `use_` of `slot` of `sp` with arguments `args` (already
/// in this rank's cell), and, as the last arriver, judges and folds. True
/// when this rank completed the collective itself with a clean verdict
/// (the world's top's last arriver in one process: it published `done`),
/// so that its own completion needs no poll.
#[inline(never)]
fn arrive<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, args: &Args, fold: &F) -> bool {
    if sp.id == 0 {
        arrive_world(w, sp, slot, use_, args, fold)
    } else {
        arrive_group(w, sp, slot, use_, fold);
        false
    }
}

/// The world's arrival: up a tree of nodes of `IMMEDIATE_FANOUT` children
/// (ranks at level 0, nodes above; a block's level-0 nodes under its
/// level-1 node where `Tree` says so). A child ORs its [`Tally`]'s packed
/// words into the node's and adds its arrival; the node's last arriver
/// has the kinds and errors from its add, reads the packed words when
/// some child is not a barrier (and zeroes them for the next use), folds
/// its children's operands (partial results) in rank order into the
/// node's cell when they agree, and arrives at the node's parent with the
/// node's tally as its own. The top node's last arriver judges the whole
/// world and publishes. No fold is longer than 32 children. True for the
/// top's last arriver that published a clean verdict.
fn arrive_world<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, args: &Args, fold: &F) -> bool {
    // A reduction of small words climbs a tree of its own shape
    // (`layout::immediate_fold_block_level`).
    let fold_shape = F::SMALL != 0;
    let mut t = Tree::start(w, fold_shape);
    // Level 0's tally words in the block's words, where they are there.
    let mut in_block = block_tally(w, slot, &t);
    let mut mine = Tally::of(args, 0);
    loop {
        let node = t.base + t.node();
        let children = t.children();
        let words = match in_block {
            Some(words) => words,
            None => w.node_tally(slot, node),
        };
        let top = t.nodes() == 1;
        // Whether the top counts this use in a round's word ("Rounds" in
        // the module docs, `World::top_round`): not a top in the block's
        // words, nor in a world across processes (the relay publishes).
        let rounds = top && in_block.is_none() && !(cfg!(feature = "distributed") && w.across_processes());
        // The record of its round words, once: the add and the zeroing below.
        let round_at = if rounds {
            round_node(w, node, fold_shape)
        } else {
            node
        };
        if mine.has_packed() {
            for (word, v) in words[1..].iter().zip(mine.packed()) {
                // Relaxed: released by the add below.
                word.or(v, Ordering::Relaxed);
            }
        }
        let add = mine.arrival(t.item - children.start);
        // AcqRel: releases this rank's cell (arguments and operand or
        // broadcast data) and its packed words, or as a node's last
        // arriver its node's verdict and cell, to this node's last
        // arriver, which acquires every earlier arriver's through this
        // word's release sequence. In the block's words the add has block
        // scope: every arriver is a rank of the block, and what the last
        // arriver then releases at device scope (its add to the parent,
        // `handed` or `done`) is cumulative, so it carries their writes on.
        let now = if in_block.is_some() {
            words[0].fetch_add_block(add, Ordering::AcqRel)
        } else if rounds {
            w.round_word(slot, round_at, use_)
                .fetch_add(add, Ordering::AcqRel)
        } else {
            words[0].fetch_add(add, Ordering::AcqRel)
        }
        .wrapping_add(add);
        if Tally::arrivals(now) != children.len() as u32 {
            return false;
        }
        let mut tally = Tally::of_arrival(now);
        // This node's cell (the result cell at the top) and its children's
        // operands or partial results, evenly spaced (ranks' cells, or the
        // nodes' records with their cells).
        let cell = || {
            if top {
                w.result_cell(sp, slot)
            } else {
                w.partial_cell(slot, node)
            }
        };
        let part = |c: u32| -> *const u8 {
            if t.span == 1 {
                w.operand(sp, slot, t.first + c)
            } else {
                w.partial_cell(slot, t.below + c)
            }
        };
        let spread = || {
            let first = part(children.start);
            (first, part(children.start + 1).addr().wrapping_sub(first.addr()))
        };
        if tally.has_packed() {
            if F::SMALL != 0
                && tally.errors == 0
                && tally.kinds.is_power_of_two()
                && Kind::folds(tally.kinds.trailing_zeros())
            {
                // This node's small word (the result cell at the top) and
                // its children's, side by side.
                // A level-0 node whose parent is its block's level-1 node
                // in the block's words leaves its partial result in the
                // block's shared memory, where the launch gave it room.
                let block_nodes = w.block * (w.block_dim() / IMMEDIATE_FANOUT);
                let out = if top {
                    w.result_cell(sp, slot)
                } else if t.span == 1 && in_block.is_some() && block_level(w, fold_shape) {
                    w.block_small(slot, w.block_dim() + t.node() - block_nodes)
                        .unwrap_or_else(|| w.node_small(slot, node))
                } else {
                    w.node_small(slot, node)
                };
                // A node in the block's words has its children's small
                // words in the block's shared memory too, where the launch
                // gave it room (`World::block_small`): its ranks' at level
                // 0, its level-0 nodes' partial results at level 1.
                let in_shared = match in_block {
                    Some(_) if t.span == 1 => {
                        w.block_small(slot, t.first + children.start - w.block * w.block_dim())
                    }
                    Some(_) => w.block_small(slot, w.block_dim() + children.start - block_nodes),
                    None => None,
                };
                let small = match in_shared {
                    Some(words) => words,
                    None if t.span == 1 => w.rank_small(slot, t.first + children.start),
                    None => w.node_small(slot, t.below + children.start),
                };
                // SAFETY: the children's small words were released to us by
                // the add above (each rank writes its operand's first
                // bytes there at its start, each node's last arriver its
                // partial result's, `F::SMALL` of them whatever the
                // count); this node's word (the result cell at the top) is
                // written only by its last arriver and read as a cell is
                // (below).
                let packed = unsafe { fold.tally_and_fold(words, out, small, children.len() as u32) };
                tally = with_packed(tally, packed);
            } else {
                // Relaxed: acquired through the add above.
                tally = with_packed(tally, shim::independent(|| load_packed(words)));
            }
        }
        // The words zeroed for the next use, in as few stores as they take
        // (the packed words were read above). Relaxed: the next use's adds
        // and ORs come after every rank completed this use, which this
        // rank's own completion (after these stores, and after a release of
        // its own: the add to the parent, `handed` or `done`) is part of.
        // A round's word stays as the last add left it, for the waiting
        // ranks to see; the previous use's is zeroed instead, which no
        // rank reads any more (every rank has arrived in this use, after
        // completing that one) and none counts in again before it has
        // arrived in the slot's next use, after these stores ("Rounds").
        if rounds {
            w.round_word(slot, round_at, use_.wrapping_sub(1))
                .store(0, Ordering::Relaxed);
            if tally.has_packed() {
                let [_, high] = node_tally_halves(words);
                words[1].store(0, Ordering::Relaxed);
                shim::store_relaxed_x2_u64(high, [0; 2]);
            }
        } else if tally.has_packed() {
            let [low, high] = node_tally_halves(words);
            shim::store_relaxed_x2_u64(low, [0; 2]);
            shim::store_relaxed_x2_u64(high, [0; 2]);
        } else {
            words[0].store(0, Ordering::Relaxed);
        }
        // The first error in rank order is under the lowest child with one:
        // a rank's own class, or the child node's verdict.
        let first_error = if tally.errors == 0 {
            0
        } else {
            let c = children.start + tally.errors.trailing_zeros();
            // Relaxed: acquired through the add above.
            if t.span == 1 {
                w.rank_word(sp, slot, t.first + c, 0).load(Ordering::Relaxed) >> 8
            } else {
                w.node_word(slot, t.below + c, core::mem::offset_of!(NodeRecord, verdict))
                    .load(Ordering::Relaxed)
            }
        };
        let verdict = tally.verdict(first_error);
        let agreed = tally.agreed();
        // With `F::SMALL` not 0, a verdict of 0 on a reduction means a
        // tally with no error and one kind: `tally_and_fold` folded the
        // operands' first `F::SMALL` bytes; the cells hold the rest.
        let from = (agreed.bytes as usize).min(F::SMALL);
        if verdict == 0 && Kind::folds(agreed.kind_class) && agreed.bytes as usize > from {
            let (first, stride) = spread();
            let bytes = agreed.bytes as usize - from;
            // SAFETY: the children's operands or partial results were
            // released to us by the add above; this node's cell (the
            // result cell at the top) is written only by its last arriver,
            // and its readers of the previous use (the parent's last
            // arriver, before that use was done; the ranks' completions,
            // each before its rank arrived in this use, which we acquired)
            // are finished ("Reuse" in the module docs).
            unsafe {
                fold.fold_parts(
                    cell().wrapping_add(from),
                    first.wrapping_add(from),
                    stride,
                    children.len() as u32,
                    bytes,
                )
            };
        }
        if top && cfg!(feature = "distributed") && w.across_processes() {
            // This process's part is ready (its ranks' fold, when they
            // agree, in the result cell): the relay joins the processes'
            // parts and publishes `done` (docs/distributed.md).
            hand(w, sp, slot, use_, fold.operation());
            return false;
        }
        if top {
            let reference = if verdict == 0 {
                agreed
            } else {
                w.read_args(sp, slot, 0)
            };
            copy_root(w, sp, slot, verdict, &reference);
            publish(w, sp, slot, use_, verdict, &reference);
            return verdict == 0;
        }
        if first_error != 0 {
            // Relaxed: released by the parent's add.
            w.node_word(slot, node, core::mem::offset_of!(NodeRecord, verdict))
                .store(first_error, Ordering::Relaxed);
        }
        mine = tally;
        mine.errors = (first_error != 0) as u32;
        // Level 1's node is its block's, in the block's words, where level
        // 1 has a node per block.
        in_block = if t.span == 1 && block_level(w, fold_shape) {
            block_node_tally(w, slot)
        } else {
            None
        };
        t = t.up();
    }
}

/// The node whose record holds the round words of `node`, the top
/// ("Rounds"): a barrier's top itself (`Layout::immediate_top`); for a
/// reduction of small words (`fold_shape`), whose tree may have a level
/// more, the barrier's top too, read from the layout, so that every use of
/// a slot counts its rounds in the same words.
#[inline(always)]
fn round_node(w: &World, node: u32, fold_shape: bool) -> u32 {
    if fold_shape {
        w.layout.immediate_top
    } else {
        node
    }
}

// Every slot's block nodes have their tally words in the block's words.
const _: () = assert!(
    (IMMEDIATE_SLOTS * IMMEDIATE_BLOCK_NODES * IMMEDIATE_BLOCK_NODE_WORDS) as usize * 8
        <= shim::BLOCK_WORDS_BYTES
);

/// The tally words (arrival word and packed words, as a node record's
/// `tally`) of the node that `t` (the tree at level 0) reaches in `slot`,
/// when they lie in the block's words ([`shim::block_words`]): where the
/// block's kernel entry zeroed them (`RankState`'s block words) and the
/// node's ranks all lie in this rank's block, the words of node `node -
/// floor(s / IMMEDIATE_FANOUT)` of the slot's [`IMMEDIATE_BLOCK_NODES`]
/// for the block's first item `s` (`layout::immediate_block_words`, which
/// the entry zeroed). Its arrivals then cost the block's shared memory and
/// a block-scope fence, not a device-scope add to L2 queued behind up to
/// 31 others (docs/performance.md, "A non-blocking collective's first
/// level in the block's shared memory"), and its children's ORs and its
/// last arriver's loads of them the block's shared memory too, not L2's
/// queue of 32 ORs on each word ("A non-blocking collective's first level
/// keeps its words in the block's shared memory").
#[inline(always)]
fn block_tally<'w>(w: &'w World, slot: u32, t: &Tree) -> Option<&'w [AtomicU64; 4]> {
    let bd = w.block_dim();
    let node = t.node();
    let first = t.first + node * IMMEDIATE_FANOUT;
    let last = t.first + t.children().end - 1;
    let index = node.wrapping_sub((w.block * bd).saturating_sub(t.first) / IMMEDIATE_FANOUT);
    if !w.known.block_words() || first / bd != last / bd || index >= IMMEDIATE_BLOCK_NODES {
        return None;
    }
    // SAFETY: `index` is below `immediate_block_words(bd)` (a node inside
    // the block is), and the block's words were zeroed for this launch
    // (the block-words bit).
    Some(unsafe { block_place(slot, index) })
}

/// The tally words of the block's level-1 node in `slot`, where level 1
/// has a node per block ([`block_level`]) and the kernel's entry zeroed
/// the block's words: place `block_dim / IMMEDIATE_FANOUT` of the slot's
/// [`IMMEDIATE_BLOCK_NODES`], after the block's level-0 nodes. Its
/// children, the block's level-0 nodes' last arrivers, are ranks of the
/// block: their adds have block scope too, and its last arriver's add to
/// the top carries the block's writes on.
#[inline(always)]
fn block_node_tally(w: &World, slot: u32) -> Option<&[AtomicU64; 4]> {
    if !w.known.block_words() {
        return None;
    }
    // SAFETY: the place is `block_dim / IMMEDIATE_FANOUT <= 32`, below
    // `immediate_block_words(block_dim)` for a block of a multiple of the
    // fanout (`block_level`), and the block's words were zeroed for this
    // launch (the block-words bit).
    Some(unsafe { block_place(slot, w.block_dim() / IMMEDIATE_FANOUT) })
}

/// The four tally words of place `place` of `slot` in the block's words.
///
/// # Safety
/// `place` is below `immediate_block_words(block_dim)`, whose words the
/// kernel's entry zeroed for this launch.
#[inline(always)]
unsafe fn block_place<'w>(slot: u32, place: u32) -> &'w [AtomicU64; 4] {
    let word = ((slot * IMMEDIATE_BLOCK_NODES + place) * IMMEDIATE_BLOCK_NODE_WORDS) as usize;
    // SAFETY: words `word..word + 4` of the block's words (below
    // `BLOCK_WORDS_BYTES`, asserted above: `place` is below
    // `IMMEDIATE_BLOCK_NODES`), at a multiple of 32 bytes of the 16-aligned
    // words (the vector stores of `node_tally_halves` want 16), only
    // accessed atomically, zeroed for this launch (the caller's contract);
    // the launch's ranks of this block alone reach them, each through the
    // node whose words they are. An array of `repr(transparent)` cells is
    // the words in a row.
    unsafe { &*(shim::block_words().add(8 * word) as *const [AtomicU64; 4]) }
}

/// A node's four tally words as two pairs (each one vector store).
fn node_tally_halves(words: &[AtomicU64; 4]) -> [&[AtomicU64; 2]; 2] {
    let first = words.as_ptr() as *const [AtomicU64; 2];
    // SAFETY: words 0 and 1, and 2 and 3, of four in a row (an array of
    // `repr(transparent)` cells), borrowed as `words` is.
    unsafe { [&*first, &*first.add(1)] }
}

/// A communicator's arrival (one level): as the group's last arriver,
/// judges every member's arguments (their [`Tally`], read four per batch),
/// folds the operands in member order into the result cell (a broadcast:
/// copies the root's cell there) and publishes. The cost is serial, `size`
/// operands folded by one rank (docs/limits.md).
fn arrive_group<F: Fold>(w: &World, sp: Space, slot: u32, use_: u32, fold: &F) {
    // AcqRel: releases this rank's cell (arguments and operand or broadcast
    // data) to the group's last arriver, which acquires every earlier
    // arriver's cell through this counter's release sequence.
    let old = w
        .slot_word(sp, slot, core::mem::offset_of!(SlotRecord, arrived))
        .fetch_add(1, Ordering::AcqRel);
    let local = local_members(w, sp);
    if local < sp.size {
        // The group spans processes: the counter counts this process's
        // members alone (`use_ × local` once they all started use
        // `use_`, never `use_ × size`), and its last arriver hands their
        // cells to the relay, which publishes once every member's came.
        if old.wrapping_add(1) == use_.wrapping_mul(local) {
            hand_group(w, sp, slot, use_, fold.operation());
        }
        return;
    }
    if old.wrapping_add(1) != use_.wrapping_mul(sp.size) {
        return;
    }
    let (tally, first_error) = tally_members(w, sp, slot, 0..sp.size);
    let verdict = tally.verdict(first_error);
    let reference = if verdict == 0 {
        tally.agreed()
    } else {
        w.read_args(sp, slot, 0)
    };
    copy_root(w, sp, slot, verdict, &reference);
    if verdict == 0 && Kind::folds(reference.kind_class) {
        let out = w.result_cell(sp, slot);
        let bytes = reference.bytes as usize;
        // SAFETY: every member's operand was released to us by the add
        // above; the result cell's readers of the previous use (the
        // members' completions) each finished before its member arrived
        // in this use, which we acquired.
        unsafe {
            let first = w.operand(sp, slot, 0);
            // The members' cells are evenly spaced (entries of the
            // context's table).
            let stride = w.operand(sp, slot, 1).addr().wrapping_sub(first.addr());
            fold.fold_parts(out, first, stride, sp.size, bytes)
        };
    }
    publish(w, sp, slot, use_, verdict, &reference);
}

/// How many of the members of `sp` (a communicator's group) this process
/// runs: all of them but in a world across processes (the `distributed`
/// feature), where they are counted in the context's table at this rank's
/// first non-blocking collective on the context (`size` loads, once) and
/// kept in its record. Every member counts the same: the table and the
/// process's ranks are the same for all.
fn local_members(w: &World, sp: Space) -> u32 {
    if sp.id == 0 || !cfg!(feature = "distributed") || !w.across_processes() {
        return sp.size;
    }
    // SAFETY: the rank's own record (`World::comm_local`); only an address.
    let p = unsafe { core::ptr::addr_of_mut!((*w.comm_local(sp.id)).local_members) };
    crate::records::private(p, false);
    // SAFETY: a plain read of a word only this rank accesses (zeroed by
    // the host).
    let kept = unsafe { *p };
    if kept != 0 {
        return kept;
    }
    let core = w.core();
    let (first, ranks) = core.process_ranks();
    let mut n = 0;
    for m in 0..sp.size {
        // Relaxed: the table was published by the creation's closing
        // exchange, which this rank passed.
        let r = core
            .comm_word(sp.id, sp.start + m, crate::records::CommWord::Member)
            .load(Ordering::Relaxed);
        n += u32::from(r.wrapping_sub(first) < ranks);
    }
    crate::records::private(p, true);
    // SAFETY: as above, a plain write; `n >= 1` (this rank is a member).
    unsafe { *p = n };
    n
}

/// The last of this process's members of a group that spans processes to
/// arrive in use `use_`: hands their cells (acquired through the group's
/// counter) to the host's relay, which sends them to the other processes
/// with members, and once it has every member's, judges, folds in member
/// order with the predefined operation `operation` and publishes `done`
/// here as a last arriver would (docs/distributed.md).
fn hand_group(w: &World, sp: Space, slot: u32, use_: u32, operation: u32) {
    // Relaxed: released by the store of `handed` (`hand`).
    w.slot_word(sp, slot, core::mem::offset_of!(SlotRecord, group_size))
        .store(sp.size, Ordering::Relaxed);
    // Release: pairs with the relay's Acquire load of the flag, after which
    // it reads the context's table (written by the creation, which this
    // rank passed) to find the groups with members here; it may see the
    // flag a pass late. Each use's words are published by `handed`.
    let first = Space { start: 0, ..sp };
    w.slot_word(first, 0, core::mem::offset_of!(SlotRecord, relayed))
        .store(1, Ordering::Release);
    hand(w, sp, slot, use_, operation);
}

/// A process's part of use `use_` of a slot of `sp` handed to the host's
/// relay: the operation code, then the use in `handed`. What the part's
/// ranks wrote (their arguments and operands, the world's fold in the
/// result cell) was acquired by the caller's arrival.
fn hand(w: &World, sp: Space, slot: u32, use_: u32, operation: u32) {
    let record = w.slot_record(sp, slot);
    // Relaxed: released by the store of `handed` below.
    record[core::mem::offset_of!(SlotRecord, operation) / 4].store(operation, Ordering::Relaxed);
    // Release: pairs with the relay's Acquire load of `handed`: the part
    // and the words stored before are visible to it.
    record[core::mem::offset_of!(SlotRecord, handed) / 4].store(use_, Ordering::Release);
}

/// A broadcast's last arriver: copies the root's data into the result cell
/// when the arguments agree.
fn copy_root(w: &World, sp: Space, slot: u32, verdict: u32, reference: &Args) {
    if verdict == 0 && reference.kind_class == Kind::Broadcast as u32 {
        // SAFETY: the root's cell (`root` checked in range by its own
        // rank, equal on every rank by the verdict) was released to us
        // (through the last arrivers of the tree's nodes in the world);
        // the result cell's readers of the previous use each finished
        // before its rank arrived in this use, which we acquired.
        unsafe {
            shim::copy_bytes(
                w.result_cell(sp, slot),
                w.operand(sp, slot, reference.root as u32),
                reference.bytes as usize,
            )
        };
    }
}

/// The last arriver's end: a verdict that is not clean and the reference
/// arguments, then `done` (Release). A clean verdict is `done`'s bit
/// alone ([`done_word`]): nobody reads the record's other words then
/// (`nonblocking::collect`).
fn publish(w: &World, sp: Space, slot: u32, use_: u32, verdict: u32, reference: &Args) {
    // One address for the record's stores (`World::slot_record`).
    let record = w.slot_record(sp, slot);
    if verdict != 0 {
        // Relaxed: released by the store of `done` below.
        record[core::mem::offset_of!(SlotRecord, verdict) / 4].store(verdict, Ordering::Relaxed);
        if let Some(words) = record[core::mem::offset_of!(SlotRecord, reference) / 4..].first_chunk::<4>() {
            // Relaxed: as the verdict's; one vector store.
            shim::store_relaxed_x4(
                words,
                [
                    reference.kind_class,
                    reference.root as u32,
                    reference.bytes,
                    reference.datatype,
                ],
            );
        }
    }
    // Release: pairs with the Acquire load of every rank's test
    // (`is_complete`): publishes the result cell and the verdict.
    record[core::mem::offset_of!(SlotRecord, done) / 4].store(done_word(use_, verdict), Ordering::Release);
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
    if !cfg!(feature = "distributed") && w.across_processes() {
        // Every rank reads the same flag: all fail, none starts (the
        // relays' part needs the device's `distributed` feature).
        return Err(Error::AcrossProcesses {
            operation: s.kind.call() as u32,
        });
    }
    let id = scope.attach(w)?;
    if sp.id != 0 {
        let l = w.comm_local(sp.id);
        // Three words of one line: one store to the timing model.
        crate::records::private(l, true);
        // SAFETY: the rank's own record; plain writes of words only it
        // accesses (`space_of` reads them back).
        unsafe {
            (*l).start = sp.start;
            (*l).size = sp.size;
            (*l).member = sp.member;
        }
    }
    let n = w.started(sp);
    let slot = n % IMMEDIATE_SLOTS;
    if w.slot_in_use(sp, slot) {
        return Err(Error::ImmediateLimit {
            limit: IMMEDIATE_SLOTS,
        });
    }
    w.set_started(sp, n.wrapping_add(1));
    let use_ = crate::nonblocking::use_number(n);
    let capacity = w.layout.immediate_bytes - ARGS_BYTES;
    if s.error.is_none() && s.bytes > capacity {
        s.error = Some(Error::BufferTooLarge {
            bytes: saturating_u32(s.bytes),
            // Exact: `immediate_bytes` is a `u32` of the configuration.
            limit: capacity as u32,
        });
    }
    let class = s.error.map_or(0, |e| e.class() as u32);
    let mut args = Args {
        kind_class: s.kind as u32 | class << 8,
        root: s.root,
        // Exact where it is compared (`Tally`): a start without an error
        // has `bytes <= capacity`, a `u32` (checked above); one with an
        // error is judged by its class, not this word.
        bytes: saturating_u32(s.bytes),
        datatype: s.datatype,
    };
    w.write_args(sp, slot, &args);
    if class == 0 {
        if let Some((side, bytes)) = s.data {
            let dst = w.operand(sp, slot, sp.member);
            // A world reduction of small elements: the operand's first
            // bytes in the rank's small word, the cell only for the rest
            // (`Fold::SMALL`).
            let small = sp.id == 0 && F::SMALL != 0;
            // SAFETY: `bytes <= capacity` (checked above) fits the cell, and
            // at most 8 bytes the small word; their readers of the previous
            // use are done (the wait above); `side` is the caller's
            // borrowed buffer of `bytes` packed bytes.
            let read = unsafe {
                if small {
                    // Where its level-0 node's last arriver will look.
                    let word = block_tally(w, slot, &Tree::start(w, true))
                        .and_then(|_| w.block_small(slot, w.thread))
                        .unwrap_or_else(|| w.rank_small(slot, sp.member));
                    side.read(0, word, bytes.min(8)) && (bytes <= F::SMALL || side.read(0, dst, bytes))
                } else {
                    side.read(0, dst, bytes)
                }
            };
            if !read {
                s.error = Some(Error::Intern);
                args.kind_class = s.kind as u32 | (ErrorClass::Intern as u32) << 8;
                w.rank_word(sp, slot, sp.member, 0)
                    .store(args.kind_class, Ordering::Relaxed);
            }
        }
    }
    // Completed here, with nothing to copy: its wait or test polls nothing.
    let done = arrive(w, sp, slot, use_, &args, fold) && s.error.is_none() && s.out.is_none();
    w.set_pending(sp, slot, id, s.size, s.out, s.error);
    w.note_progress();
    // A world barrier's wait may take its round from the top's word.
    let round = sp.id == 0 && s.kind == Kind::Barrier;
    Ok(Request::collective(scope, sp.index(slot), done, round))
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

#[inline(always)]
fn all_reduce<'a, 's, T: Equivalence, O: Operation<T>>(
    w: &'a World,
    sp: Space,
    scope: &'s Scope<'a>,
    send: &[T],
    out: Side,
    error: Option<Error>,
    op: O,
) -> Result<Request<'a, 's>, Error> {
    let (side, bytes) = plain(send);
    start_reduction(
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
        op,
    )
}

/// Starts a reduction with `op` as [`start`] does; where its parts are
/// joined at each rank's completion ([`VERDICT_JOIN`]: an operation of the
/// program's own on the world or a group whose members span processes,
/// which the host's relay cannot apply), this rank's start moves `op` and
/// its `JoinFn` into the end of its cell, where its completion runs and
/// drops it (docs/distributed.md).
#[inline(always)]
fn start_reduction<'a, 's, T: Equivalence, O: Operation<T>>(
    w: &'a World,
    sp: Space,
    scope: &'s Scope<'a>,
    mut s: Start,
    op: O,
) -> Result<Request<'a, 's>, Error> {
    if !cfg!(feature = "distributed") {
        return start(w, sp, scope, s, &OpFold(&op, PhantomData::<T>));
    }
    let joins =
        op.system_code() == 0 && w.across_processes() && (sp.id == 0 || local_members(w, sp) < sp.size);
    if joins && s.error.is_none() {
        // The same on every rank but where the counts differ (an error
        // anyway): the operation's type is the program's.
        let capacity = w.layout.immediate_bytes - ARGS_BYTES - JOIN_KEEP_BYTES;
        if core::mem::size_of::<O>() + 8 > JOIN_KEEP_BYTES || core::mem::align_of::<O>() > 8 {
            s.error = Some(Error::AcrossProcesses {
                operation: s.kind.call() as u32,
            });
        } else if s.bytes > capacity {
            s.error = Some(Error::BufferTooLarge {
                bytes: saturating_u32(s.bytes),
                // Exact: `immediate_bytes` is a `u32` of the configuration.
                limit: capacity as u32,
            });
        }
    }
    let request = start(w, sp, scope, s, &OpFold(&op, PhantomData::<T>))?;
    let slot = crate::nonblocking::slot_of(request.index());
    // A start with an error of its own (its class in its arguments, which
    // it wrote) completes with that error: nothing to keep.
    if joins && w.read_args(sp, slot, sp.member).kind_class >> 8 == 0 {
        let keep = crate::nonblocking::kept_at(w, sp, slot);
        // SAFETY: the last `JOIN_KEEP_BYTES` of this rank's cell, 8-aligned
        // (cells are, `immediate_bytes` a multiple of 64), which only this
        // rank accesses (its operand ends before them: the capacity above)
        // until its completion runs and zeroes the function (`run_kept`);
        // `O` fits after the function word with its alignment (checked
        // above). `op` is moved there: dropped by the function.
        unsafe {
            keep.add(8).cast::<O>().write(op);
            (keep as *mut usize).write(join_with::<T, O> as JoinFn as usize);
        }
        w.set_kept(sp, slot);
    }
    Ok(request)
}

/// The `JoinFn` of a reduction of `T` with `O`: each element of the
/// parts loaded in part order and combined in registers, written once.
///
/// # Safety
/// As `JoinFn`.
unsafe fn join_with<T: Equivalence, O: Operation<T>>(
    keep: *mut u8,
    out: *mut u8,
    parts: &JoinParts,
    bytes: usize,
) {
    let op = keep.wrapping_add(8).cast::<O>();
    if !out.is_null() {
        let size = core::mem::size_of::<T>();
        for e in 0..bytes / size {
            // SAFETY: every part holds `bytes` of `T` elements (the
            // caller's contract), read unaligned: a part's cell need not be
            // aligned for `T`.
            let part = |i: u32| unsafe { parts.at(i).add(e * size).cast::<T>().read_unaligned() };
            let mut acc = part(0);
            for i in 1..parts.count {
                // SAFETY: the operation at `keep + 8` (the caller's
                // contract), not dropped before the end.
                acc = unsafe { &*op }.apply(&acc, &part(i));
            }
            // SAFETY: `out` holds `bytes` of `T` elements (the caller's).
            unsafe { out.cast::<T>().add(e).write_unaligned(acc) };
        }
    }
    // SAFETY: the operation moved there by the start, dropped once: the
    // caller zeroes the function after this call.
    unsafe { core::ptr::drop_in_place(op) };
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
        all_reduce(v.world, sp, scope, send, out, error, op)
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
        all_reduce(v.world, sp, scope, buf, out, error, op)
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
        self.reduce(scope, send.elements(), Some((out, len)), true, op)
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
        self.reduce(scope, buf, Some((out, len)), true, op)
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
        self.reduce(scope, send.elements(), None, false, op)
    }

    fn reduce<'a, 's, T: Equivalence, O: Operation<T>>(
        &self,
        scope: &'s Scope<'a>,
        send: &[T],
        recv: Option<(Side, usize)>,
        as_root: bool,
        op: O,
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
            error = reduction(&op, send, recv.map(|(_, n)| n));
        }
        let (side, bytes) = plain(send);
        start_reduction(
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
            op,
        )
    }
}
