//! The collectives of a communicator that is one whole block or one whole
//! warp, on the hardware's own tools (MPI 4.1 chapter 6 on the
//! communicators of `split_shared` and `split_by_warp`).
//!
//! A creation stores each rank's [`CommKind`] in its warp's [`WarpWord`]
//! after the communicator table ([`store_kind`]): [`CommKind::Block`] when the communicator holds every
//! rank of one block with communicator rank = thread index,
//! [`CommKind::Warp`] when it holds every lane of one warp (32, or the
//! lanes of a block's partial last warp) with communicator rank = lane.
//! Every member decides from the same published member entries, so all
//! agree. Barrier, broadcast, reduce, all-reduce, scan and exclusive scan
//! (MPI 4.1 §6.11), gather, all-gather and scatter (§6.5, §6.6, §6.7: the
//! fixed-count forms, in place or not), and on a warp communicator
//! all-to-all (§6.8, fixed counts, in place or not), take the paths below;
//! everything else (and these where the note says so) keeps the message
//! algorithms of `collective/general.rs`.
//!
//! Every call first records the rank's wait, which hands back the eager
//! slots it deferred (their senders may be ranks of this block or warp
//! that cannot come before they get them), then opens with an
//! *agreement* on a [`Descriptor`] (the call, its
//! root, its count, its datatype): each rank compares its own with rank
//! 0's, and either every rank goes on or every rank returns the same class
//! of error ([`Error::CollectiveMismatch`] for another collective, then
//! `MPI_ERR_ROOT`, `MPI_ERR_COUNT`, `MPI_ERR_TYPE`), so neither a wrong
//! argument nor a rank in another collective of this module silently pairs
//! with the others' steps.
//!
//! | kind | opening | barrier | broadcast of `b` bytes | (all-)reduce of `c` elements of `s` bytes | (exclusive) scan of `c` elements of `s` bytes | (all-)gather, scatter of `b` bytes per rank |
//! |---|---|---|---|---|---|---|
//! | block | 2 block barriers (rank 0 writes the descriptor to the shared scratch; the first barrier counts the ranks present, the second those that disagree) | the opening | `2 × ceil(b / 4080) − 1` block barriers, 4080 bytes staged per round | per round of `k = floor(4080 / ((warps + 1) × s))` elements: a shuffle tree per warp, the warps' partials in the scratch, a shuffle tree in warp 0, the result in the scratch; 2 block barriers per round | per round of `k = floor(4080 / (2 × (warps − 1) × s))` elements: a shuffle-up scan per warp (into the receive buffer), the totals of warps `0..warps − 1` in the scratch, a shuffle-up scan of them in warp 0 into a second region, each rank of warps `1..` combines its prefix on the left; 2 block barriers per round | per round `c = floor(4080 / n)` bytes of every rank's part in the scratch (rank `j`'s at `j × c`), each receiving rank copies the `n` chunks out (a scatter: the root stages every part's chunk, each rank copies its own); 2 block barriers per round |
//! | warp | an arrival on the warp's [`WarpWord`] (an atomic add, a poll until the last lane came), 4 shuffles and a ballot | the opening and `bar.warp.sync` | `ceil(b / 4)` shuffles from the root | per element: `ceil(s / 4) × ceil(log2 lanes)` shuffles down, then `ceil(s / 4)` from lane 0 (not for a reduce to root 0) | per element: `ceil(s / 4) × ceil(log2 lanes)` shuffles up (the lower lanes' run on the left), then `ceil(s / 4)` up by one for an exclusive scan | per lane `j` in turn, `ceil(b / 4)` shuffles from `j` (a scatter: from the root, lane `j` keeps them; every lane takes part); all-to-all of `b` bytes per pair: `next_power_of_two(lanes)` rounds of `ceil(b / 4)` shuffles, lane `i` trading with lane `i ^ k` |
//!
//! A block (all-)reduce whose `(warps + 1) × s` exceeds the 4080 bytes (an
//! element larger than 123 bytes in a block of 1024 threads), or whose
//! element needs more than 16-byte alignment, takes the general algorithm
//! instead (decided from the type and the block alike on every rank); a
//! block scan likewise when `2 × (warps − 1) × s` exceeds them (more
//! than 65 bytes in a block of 1024 threads). An exclusive scan leaves
//! rank 0's receive buffer untouched, as the general algorithm does; its
//! descriptor's call word carries a bit that tells it from an inclusive
//! scan, so the two disagree in the opening.
//!
//! Failures: a rank of the block that returned from the kernel does not
//! hold a block barrier (PTX `exit`; the emulator does the same), so the
//! opening barrier counts fewer ranks than the block has; every rank that
//! came then waits, bounded, for nothing, and gets the deadlock report on
//! the emulator or `MPI_ERR_TIMEOUT`/`MPI_ERR_ABORTED` on the GPU (as the
//! world barrier does). A warp's lanes run no warp instruction before
//! every lane has arrived on the warp's [`WarpWord`] ([`warp_arrive`]):
//! `shfl.sync` or `vote.sync` with an exited lane in its mask is undefined
//! in PTX, so a lane that returned (or waits elsewhere) leaves the others
//! in that bounded wait, with the same outcomes as the block's.

use super::agreement::kind_code;
use super::operation::Operation;
use crate::communicator::{CommInfo, World};
use crate::datatype::{Datatype, Equivalence};
use crate::error::{saturating_u32, Error};
use crate::polling::{Call, WaitFor, STATE_RUNNING};
use crate::records::{CommKind, WarpWord};
use crate::shim::{self, Ordering, SHARED_BLOCK_BYTES};
use core::mem::{align_of, size_of, MaybeUninit};

use crate::buffers::Place;
use crate::buffers::Side;
use crate::communicator::CommView;
use crate::datatype::BufferMut;

/// What every rank of a block or warp communicator must pass alike to one
/// collective (the head of the block's shared scratch during the opening).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Descriptor {
    /// The collective ([`Call`] code).
    call: u32,
    /// Its root (`u32::MAX` for none).
    root: u32,
    /// Its count (bytes of a broadcast, elements of a reduction).
    count: u32,
    /// Its datatype id.
    datatype: u32,
}

/// Bytes at the head of the shared scratch that hold rank 0's descriptor.
const HEADER_BYTES: usize = 16;
const _: () = assert!(size_of::<Descriptor>() == HEADER_BYTES);
/// Bytes of the shared scratch after the header, where data is staged.
pub const STAGE_BYTES: usize = SHARED_BLOCK_BYTES - HEADER_BYTES;

/// Disagreements, in the order of their precedence.
#[derive(Clone, Copy)]
#[repr(u32)]
enum Mismatch {
    Call = 1,
    Root = 2,
    Count = 4,
    Type = 8,
}

/// The calling rank's warp, block-major (the index of its
/// [`WarpWord`] in a communicator table).
#[inline(always)]
fn warp_index(world: &World) -> u32 {
    world.block * world.block_dim().div_ceil(32) + world.thread / 32
}

/// The kind of the calling rank's communicator `comm` (the world: general).
#[inline(always)]
fn kind(world: &World, comm: CommInfo) -> CommKind {
    if comm.id == 0 {
        return CommKind::General;
    }
    // Relaxed: the kind bits were set by this rank itself (among its
    // lanes, all with the same bits) at the end of the creation.
    let word = world
        .core_settled()
        .comm_warp_word(comm.id, warp_index(world))
        .load(Ordering::Relaxed);
    WarpWord(word).kind()
}

/// Decides and stores the kind of the communicator `comm` that the calling
/// rank just joined (after the creation's closing barrier, which published
/// the member entries it reads: every member reads the same ones).
pub(crate) fn store_kind(world: &World, comm: CommInfo) {
    let bd = world.block_dim();
    let thread = world.thread;
    let warp_first = thread - thread % 32;
    let lanes = (bd - warp_first).min(32);
    let block_base = world.rank - thread;
    let runs = |first: u32, n: u32| (0..n).all(|i| comm.member(world, i) == first + i);
    let kind = if comm.size == lanes && runs(block_base + warp_first, lanes) {
        CommKind::Warp
    } else if comm.size == bd && runs(block_base, bd) {
        CommKind::Block
    } else {
        CommKind::General
    };
    if kind != CommKind::General {
        // Relaxed: read by this rank (`kind`); every lane of the warp ORs
        // the same bits, and the arrival counter in the same word is left
        // as it is.
        world
            .core_settled()
            .comm_warp_word(comm.id, warp_index(world))
            .or(kind as u32, Ordering::Relaxed);
    }
}

/// The disagreements of `mine` with rank 0's `first`.
fn compare(mine: &Descriptor, first: &Descriptor) -> u32 {
    let mut bits = 0;
    if mine.call != first.call {
        bits |= Mismatch::Call as u32;
    }
    if mine.root != first.root {
        bits |= Mismatch::Root as u32;
    }
    if mine.count != first.count {
        bits |= Mismatch::Count as u32;
    }
    if mine.datatype != first.datatype {
        bits |= Mismatch::Type as u32;
    }
    bits
}

/// The error every rank returns when some rank found the disagreement
/// `worst` (the one of highest precedence found anywhere); a rank with an
/// error of its own of that class (`local`) keeps it. `expected`: the
/// count of the root (of member 0 without one), which a count mismatch
/// names.
#[cold]
#[inline(never)]
fn verdict(
    worst: u32,
    mine: &Descriptor,
    first: &Descriptor,
    expected: u32,
    size: u32,
    local: Option<Error>,
) -> Error {
    let e = if worst == Mismatch::Call as u32 {
        Error::CollectiveMismatch {
            kind: kind_code(mine.call),
            other: kind_code(first.call),
        }
    } else if worst == Mismatch::Root as u32 {
        Error::InvalidRoot {
            root: mine.root as i32,
            size: size as i32,
        }
    } else if worst == Mismatch::Count as u32 {
        Error::CountMismatch {
            count: mine.count,
            expected,
        }
    } else {
        Error::TypeMismatch {
            status: crate::status::Status {
                source: 0,
                tag: -1,
                bytes: 0,
                datatype: first.datatype,
            },
            expected: mine.datatype,
        }
    };
    match local {
        Some(l) if l.class() == e.class() => l,
        _ => e,
    }
}

/// The member that a count mismatch names: the root, member 0 without
/// one. Every member agrees on it when the worst disagreement is a count
/// (a root's takes precedence), so it is `first`'s root; a block's or a
/// warp's communicator numbers its members as their threads or lanes. A
/// root that all name but that is not a member (`check_root` fails it
/// after the opening) counts as none.
fn reference_member(first: &Descriptor, size: u32) -> u32 {
    if first.root < size {
        first.root
    } else {
        0
    }
}

/// The count of the block's [`reference_member`], passed through the
/// shared scratch's stage between two block barriers (every rank of the
/// block calls it: the opening's verdict is the same on all).
#[cold]
#[inline(never)]
fn block_reference_count(world: &World, mine: &Descriptor, first: &Descriptor, size: u32) -> u32 {
    // SAFETY: the stage follows the scratch's header inside the scratch;
    // nobody else touches it between the opening's barriers and the two
    // here, and the second keeps the next collective's writes after the
    // reads.
    let word = unsafe { shim::shared_block::<SHARED_BLOCK_BYTES>().add(HEADER_BYTES) } as *mut u32;
    if world.thread == reference_member(first, size) {
        // SAFETY: 16-byte aligned, inside the scratch (above).
        unsafe { word.write(mine.count) };
    }
    shim::block_barrier();
    // SAFETY: written before the barrier above.
    let count = unsafe { word.read() };
    shim::block_barrier();
    count
}

/// The disagreement of highest precedence among the ranks' `bits`, given
/// a test `any(mask)` that says whether some rank's bits meet `mask` (the
/// same answer on every rank).
fn worst(mut any: impl FnMut(u32) -> bool) -> u32 {
    for m in [Mismatch::Call, Mismatch::Root, Mismatch::Count] {
        if any(m as u32) {
            return m as u32;
        }
    }
    Mismatch::Type as u32
}

// ---------------------------------------------------------------------------
// Values through shuffles

/// `value` of lane `lane + delta` (lanes past the warp: their own), word
/// by word.
fn shfl_down_value<T: Equivalence>(mask: u32, value: &T, delta: u32) -> T {
    shuffle_value(value, |w| shim::shfl_down_sync(mask, w, delta))
}

/// `value` of lane `src`, word by word.
pub(crate) fn shfl_value<T: Equivalence>(mask: u32, value: &T, src: u32) -> T {
    shuffle_value(value, |w| shim::shfl_sync(mask, w, src))
}

/// Passes each 4-byte word of `value` (the last one zero-padded) through
/// `shuffle` and rebuilds a `T` from the results.
#[inline(always)]
fn shuffle_value<T: Equivalence>(value: &T, mut shuffle: impl FnMut(u32) -> u32) -> T {
    let mut out = MaybeUninit::<T>::zeroed();
    let src = value as *const T as *const u8;
    let dst = out.as_mut_ptr() as *mut u8;
    let n = size_of::<T>();
    // Whole words as words: no byte buffer on the stack (`n` is a constant,
    // so the tail below vanishes for sizes that are multiples of 4).
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n` bytes of `value` and of `out`.
        unsafe {
            let w = (src.add(i) as *const u32).read_unaligned();
            (dst.add(i) as *mut u32).write_unaligned(shuffle(w));
        }
        i += 4;
    }
    if i < n {
        let k = n - i;
        let mut w = [0u8; 4];
        // SAFETY: `i + k <= n` bytes of `value`, a `Pod` without padding.
        unsafe { core::ptr::copy_nonoverlapping(src.add(i), w.as_mut_ptr(), k) };
        let r = shuffle(u32::from_le_bytes(w)).to_le_bytes();
        // SAFETY: `i + k <= n` bytes of `out`.
        unsafe { core::ptr::copy_nonoverlapping(r.as_ptr(), dst.add(i), k) };
    }
    // SAFETY: every byte written (or zero), and any bytes are a valid `Pod`.
    unsafe { out.assume_init() }
}

/// Shuffle-tree reduction over the first `n` lanes of `mask` in lane
/// order (lane `l` folds its run `[l, l + d)` on the left of `[l + d, l +
/// 2d)`, so non-commutative operations see rank order, MPI 6.9.1); the
/// result at lane 0. Every lane of `mask` calls it with the same `n`.
pub(crate) fn warp_fold<T: Equivalence, O: Operation<T>>(
    mask: u32,
    lane: u32,
    n: u32,
    mut x: T,
    op: &O,
) -> T {
    let mut d = 1u32;
    while d < n {
        let other = shfl_down_value(mask, &x, d);
        if lane.is_multiple_of(2 * d) && lane + d < n {
            x = op.apply(&x, &other);
        }
        d <<= 1;
    }
    x
}

// ---------------------------------------------------------------------------
// Openings

/// The block opening: agreement on `mine` with rank 0's descriptor, and
/// the count of the ranks present; `local` is this rank's own argument
/// error, whose disagreement bits are `local_bits`.
fn block_open(
    v: &CommView<'_>,
    mine: Descriptor,
    local_bits: u32,
    local: Option<Error>,
) -> Result<(), Error> {
    let world = v.world;
    let scratch = shim::shared_block::<SHARED_BLOCK_BYTES>();
    let head = scratch as *mut Descriptor;
    if world.thread == 0 {
        // SAFETY: the scratch's head, 16-byte aligned; nobody reads it
        // before the block barrier below, and the previous call's readers
        // passed that call's second barrier, which rank 0 passed too.
        unsafe { head.write(mine) };
    }
    let present = shim::block_barrier_count(true);
    if present != world.block_dim() {
        return Err(missing_rank(world, mine));
    }
    // SAFETY: written by rank 0 before the barrier above.
    let first = unsafe { head.read() };
    let bits = compare(&mine, &first) | local_bits;
    if shim::block_barrier_count(bits != 0) != 0 {
        let w = worst(|m| shim::block_barrier_count(bits & m != 0) != 0);
        let expected = if w == Mismatch::Count as u32 {
            block_reference_count(world, &mine, &first, v.size)
        } else {
            first.count
        };
        return Err(verdict(w, &mine, &first, expected, v.size, local));
    }
    Ok(())
}

/// A rank of the block returned from the kernel: wait, bounded, for it
/// (the deadlock report names the collective), then fail.
#[cold]
#[inline(never)]
fn missing_rank(world: &World, mine: Descriptor) -> Error {
    let what = wait_of(&mine);
    let word = crate::polling::barrier_wait_forever(
        world.base as u64,
        world.rank,
        what.operation,
        what.peer,
        what.tag,
    );
    crate::polling::barrier_error(word, what)
}

/// The wait record of a collective described by `d` (peer: its root, or
/// -2 for none, as the general collectives record).
fn wait_of(d: &Descriptor) -> WaitFor {
    WaitFor {
        operation: Call::from_code(d.call & 0xff).unwrap_or(Call::Barrier),
        peer: if d.root == u32::MAX { -2 } else { d.root as i32 },
        tag: -1,
    }
}

/// Waits, bounded, until every lane of the caller's warp has arrived at a
/// collective of the warp communicator `v` (`what`: the caller's). Until
/// then no lane takes part in a warp collective instruction, whose mask
/// names every lane: `shfl.sync` or `vote.sync` with a lane that exited in
/// its mask is undefined in PTX, and with a lane waiting elsewhere it
/// never completes. A lane that returned or waits elsewhere leaves the
/// others here: the deadlock report on the emulator, `MPI_ERR_TIMEOUT`
/// (then `MPI_ERR_ABORTED` on the rest) on the GPU.
///
/// A lane whose wait gives up (its timeout, or the world's abort) takes
/// its arrival back ([`withdraw`]) before it returns the error, so that
/// its next warp collective is not counted as a second arrival at this
/// one (which made a lane "last" with another lane missing: it went into
/// the shuffles alone, and the generations of the word fell out of step
/// with the lanes' collectives). Where the last lane arrived meanwhile,
/// the collective can complete and the lane takes part after all.
#[inline(never)]
fn warp_arrive(v: &CommView<'_>, what: WaitFor) -> Result<(), Error> {
    let world = v.world;
    let core = world.core();
    let word = core.comm_warp_word(v.comm.id, warp_index(world));
    // Relaxed, here and below: the protocol lives in this one word, whose
    // modification order alone decides who arrived; the collective's data
    // moves by the warp instructions after it, which order the lanes'
    // accesses themselves.
    let old = WarpWord(word.fetch_add(WarpWord::ARRIVAL, Ordering::Relaxed));
    let generation = old.generation();
    if old.arrived() + 1 == v.size {
        // The last lane: clear the count and step the generation (no lane
        // arrives again before it sees the new generation).
        word.fetch_add(
            WarpWord::GENERATION - v.size * WarpWord::ARRIVAL,
            Ordering::Relaxed,
        );
        return Ok(());
    }
    let waited = crate::communicator::wait_for(world, what, |_| {
        (WarpWord(word.load(Ordering::Relaxed)).generation() != generation).then_some(Ok(()))
    });
    match waited {
        Err(e) if withdraw(word, generation, v.size) => Err(e),
        _ => Ok(()),
    }
}

/// Takes back the arrival of a lane that gave up waiting in generation
/// `generation` of a warp of `lanes` lanes: `true` when it did, `false`
/// when every lane has arrived (the generation stepped, or the last lane's
/// arrival is in and the step follows): then the collective completes and
/// the lane must take part in its warp instructions.
///
/// The last lane's arrival and its step are two adds; a withdrawal
/// between them would leave the step's `- lanes × ARRIVAL` to wrap the
/// count, so a lane withdraws only from a count below `lanes`, by a
/// compare-and-swap on the same word (Relaxed: as in [`warp_arrive`], the
/// word's modification order alone decides; this RMW and the arrivals'
/// are ordered by it).
#[cold]
#[inline(never)]
fn withdraw(word: &shim::AtomicU32, generation: u32, lanes: u32) -> bool {
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let w = WarpWord(current);
        if w.generation() != generation || w.arrived() >= lanes {
            return false;
        }
        match word.compare_exchange(current, current - WarpWord::ARRIVAL, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => current = now,
        }
    }
}

/// The warp opening: every lane present ([`warp_arrive`]), then agreement
/// on `mine` with lane 0's descriptor.
fn warp_open(v: &CommView<'_>, mine: Descriptor, local_bits: u32, local: Option<Error>) -> Result<(), Error> {
    warp_arrive(v, wait_of(&mine))?;
    let mask = shim::warp_mask();
    let first = Descriptor {
        call: shim::shfl_sync(mask, mine.call, 0),
        root: shim::shfl_sync(mask, mine.root, 0),
        count: shim::shfl_sync(mask, mine.count, 0),
        datatype: shim::shfl_sync(mask, mine.datatype, 0),
    };
    let bits = compare(&mine, &first) | local_bits;
    if shim::vote_ballot_sync(mask, bits != 0) != 0 {
        let w = worst(|m| shim::vote_any_sync(mask, bits & m != 0));
        let expected = if w == Mismatch::Count as u32 {
            shim::shfl_sync(mask, mine.count, reference_member(&first, v.size))
        } else {
            first.count
        };
        return Err(verdict(w, &mine, &first, expected, v.size, local));
    }
    Ok(())
}

/// The opening of every collective here. The rank records its wait
/// first, which also hands back the eager slots it deferred
/// (`Core::record_wait`): their senders may be ranks of this block or
/// warp that cannot reach this collective before they get them. No
/// message is received between the opening and the end of the
/// collective, so its later block barriers and warp instructions find
/// nothing deferred.
fn open(
    v: &CommView<'_>,
    kind: CommKind,
    mine: Descriptor,
    local_bits: u32,
    local: Option<Error>,
) -> Result<(), Error> {
    v.world.record_wait(wait_of(&mine));
    // The descriptor's count word is 32 bits, filled with `saturating_u32`:
    // a count of `u32::MAX` or more is this rank's own count disagreement,
    // so every rank fails with `MPI_ERR_COUNT` instead of comparing counts
    // cut to their low bits.
    let local_bits = if mine.count == u32::MAX {
        local_bits | Mismatch::Count as u32
    } else {
        local_bits
    };
    if kind == CommKind::Block {
        block_open(v, mine, local_bits, local)
    } else {
        warp_open(v, mine, local_bits, local)
    }
}

/// `root` checked against the size (after the agreement: alike everywhere).
fn check_root(v: &CommView<'_>, root: u32) -> Result<(), Error> {
    if root >= v.size {
        return Err(Error::InvalidRoot {
            root: root as i32,
            size: v.size as i32,
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The collectives; `None`: not a block or warp communicator, take the
// general algorithm.

/// `MPI_Barrier` on a block or warp communicator.
pub(crate) fn barrier(v: &CommView<'_>) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    let mine = Descriptor {
        call: Call::Barrier as u32,
        root: u32::MAX,
        count: 0,
        datatype: 0,
    };
    let r = open(v, kind, mine, 0, None);
    if kind == CommKind::Warp && r.is_ok() {
        // Orders the lanes' memory accesses around the barrier, as the
        // block barriers of the block opening do (every lane is present:
        // the opening's agreement).
        shim::warp_sync(shim::warp_mask());
    }
    Some(finished(v, r))
}

/// `MPI_Bcast` of `buf` from `root` on a block or warp communicator; a
/// view of a non-contiguous derived datatype moves by packed position
/// (the root packs into the stage or the shuffle word, the others unpack
/// from it).
// Not inlined: a root and its warp-mates reach this through different
// API calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
pub(crate) fn broadcast_buffer<B: BufferMut + ?Sized>(
    v: &CommView<'_>,
    root: i32,
    buf: &mut B,
) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    let dt = buf.datatype();
    let (side, len) = Side::of_mut(buf);
    Some(finished(v, broadcast_on(v, kind, root as u32, dt, side, len)))
}

fn broadcast_on(
    v: &CommView<'_>,
    kind: CommKind,
    root: u32,
    dt: Datatype,
    side: Side,
    len: usize,
) -> Result<(), Error> {
    let mine = Descriptor {
        call: Call::Broadcast as u32,
        root,
        count: saturating_u32(len),
        datatype: dt.id,
    };
    open(v, kind, mine, 0, None)?;
    check_root(v, root)?;
    let me = v.rank;
    // False once a view's walk failed (its encoding changed under it): the
    // rank goes on taking part, so that nobody waits for it, then fails.
    let mut walked = true;
    if kind == CommKind::Warp {
        let mask = shim::warp_mask();
        let mut i = 0;
        while i < len {
            let k = (len - i).min(4);
            let mut w = [0u8; 4];
            if me == root {
                // SAFETY: `i + k <= len` packed bytes of the caller's
                // buffer, `k <= 4` of the word.
                walked &= unsafe { side.read(i, w.as_mut_ptr(), k) };
            }
            let r = shim::shfl_sync(mask, u32::from_le_bytes(w), root).to_le_bytes();
            if me != root {
                // SAFETY: as above.
                walked &= unsafe { side.write(i, r.as_ptr(), k) };
            }
            i += 4;
        }
        return if walked { Ok(()) } else { Err(Error::Intern) };
    }
    // SAFETY: the scratch after its header, `STAGE_BYTES` long.
    let stage = unsafe { shim::shared_block::<SHARED_BLOCK_BYTES>().add(HEADER_BYTES) };
    let mut off = 0;
    while off < len {
        if off > 0 {
            // Every rank has copied the previous round out.
            shim::block_barrier();
        }
        let n = (len - off).min(STAGE_BYTES);
        if me == root {
            // SAFETY: `off + n <= len` packed bytes of the buffer, `n` of
            // the stage.
            walked &= unsafe { side.read(off, stage, n) };
        }
        shim::block_barrier();
        if me != root {
            // SAFETY: as above.
            walked &= unsafe { side.write(off, stage, n) };
        }
        off += n;
    }
    if walked {
        Ok(())
    } else {
        Err(Error::Intern)
    }
}

/// Elements of `T` per round of a block reduction over `warps` warps
/// (0: the stage cannot hold one per warp and the result, or `T` needs
/// more than the scratch's 16-byte alignment).
fn block_round<T>(warps: u32) -> usize {
    if align_of::<T>() > 16 {
        return 0;
    }
    STAGE_BYTES / ((warps as usize + 1) * size_of::<T>().max(1))
}

/// `MPI_Reduce` (`root` given: `out` at the root, `None` there for the
/// non-root form) or `MPI_Allreduce` (`root` `None`: `out` everywhere)
/// of the `count` elements at `send` on a block or warp communicator.
///
/// # Safety
/// `send` readable for `count` elements; `out` (where given) writable for
/// `len` elements; they may be the same buffer.
// Not inlined: a root and its warp-mates reach this through different
// API calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
pub(crate) unsafe fn reduce<T: Equivalence, O: Operation<T>>(
    v: &CommView<'_>,
    send: *const T,
    count: usize,
    out: Option<(*mut T, usize)>,
    root: Option<i32>,
    op: &O,
) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    let warps = v.world.block_dim().div_ceil(32);
    if kind == CommKind::Block && block_round::<T>(warps) == 0 {
        return None;
    }
    // SAFETY: the caller's contract.
    let r = unsafe { reduce_on(v, kind, send, count, out, root, op) };
    Some(finished(v, r))
}

/// The end of a collective here: the rank runs again (its wait record,
/// written by the opening), and `r` is its result.
#[inline(always)]
fn finished(v: &CommView<'_>, r: Result<(), Error>) -> Result<(), Error> {
    v.world.record_state(STATE_RUNNING);
    r
}

unsafe fn reduce_on<T: Equivalence, O: Operation<T>>(
    v: &CommView<'_>,
    kind: CommKind,
    send: *const T,
    count: usize,
    out: Option<(*mut T, usize)>,
    root: Option<i32>,
    op: &O,
) -> Result<(), Error> {
    let me = v.rank;
    let receives = root.is_none_or(|r| r == me as i32);
    // This rank's own argument errors, agreed on in the opening so that
    // every rank fails: an operation its type does not take, the root's
    // result buffer.
    let (mut local_bits, mut local) = (0u32, None);
    let mut dst = None;
    let op_error = op.check().err();
    if op_error.is_some() {
        // The others fail with `MPI_ERR_TYPE`, this rank with its own.
        local_bits = Mismatch::Type as u32;
    } else if receives {
        match out {
            Some((p, len)) if len == count => dst = Some(p),
            Some((_, len)) => {
                local_bits = Mismatch::Count as u32;
                local = Some(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: saturating_u32(count),
                });
            }
            None => {
                local_bits = Mismatch::Root as u32;
                local = Some(Error::InvalidRoot {
                    root: me as i32,
                    size: v.size as i32,
                });
            }
        }
    }
    let (call, root_word) = match root {
        Some(r) => (Call::Reduce, r as u32),
        None => (Call::AllReduce, u32::MAX),
    };
    let mine = Descriptor {
        call: call as u32,
        root: root_word,
        count: saturating_u32(count),
        datatype: T::DATATYPE.id,
    };
    open(v, kind, mine, local_bits, local).map_err(|e| op_error.unwrap_or(e))?;
    if let Some(r) = root {
        check_root(v, r as u32)?;
    }
    let lane = v.world.thread % 32;
    let mask = shim::warp_mask();
    if kind == CommKind::Warp {
        let n = v.size;
        let from_lane0 = root.is_none_or(|r| r != 0);
        for i in 0..count {
            // SAFETY: `i < count` elements of `send`.
            let x = unsafe { send.add(i).read_unaligned() };
            let mut x = warp_fold(mask, lane, n, x, op);
            if from_lane0 {
                x = shfl_value(mask, &x, 0);
            }
            if let Some(d) = dst {
                // SAFETY: `i < count` elements of `out` (checked above);
                // element `i` of `send` was read before.
                unsafe { d.add(i).write_unaligned(x) };
            }
        }
        return Ok(());
    }
    let warps = v.world.block_dim().div_ceil(32);
    let warp = v.world.thread / 32;
    let lanes = mask.count_ones();
    let k = block_round::<T>(warps);
    // SAFETY: the scratch after its header: `warps × k` partials, then `k`
    // results, `(warps + 1) × k × unit <= STAGE_BYTES` (`block_round`).
    let partials = unsafe { shim::shared_block::<SHARED_BLOCK_BYTES>().add(HEADER_BYTES) } as *mut T;
    // SAFETY: as above.
    let results = unsafe { partials.add(warps as usize * k) };
    let mut c0 = 0;
    while c0 < count {
        let kk = k.min(count - c0);
        for i in 0..kk {
            // SAFETY: `c0 + i < count` elements of `send`.
            let x = unsafe { send.add(c0 + i).read_unaligned() };
            let x = warp_fold(mask, lane, lanes, x, op);
            if lane == 0 {
                // SAFETY: partial `i` of this warp, inside the stage; the
                // previous round's were read before its second barrier.
                unsafe { partials.add(warp as usize * k + i).write(x) };
            }
        }
        shim::block_barrier();
        if warp == 0 {
            for i in 0..kk {
                let from = if lane < warps { lane } else { 0 };
                // SAFETY: written by lane 0 of warp `from` before the barrier.
                let y = unsafe { partials.add(from as usize * k + i).read() };
                let y = warp_fold(mask, lane, warps, y, op);
                if lane == 0 {
                    // SAFETY: result `i`, inside the stage; the previous
                    // round's were read before this round's first barrier.
                    unsafe { results.add(i).write(y) };
                }
            }
        }
        shim::block_barrier();
        if let Some(d) = dst {
            // SAFETY: `c0 + kk <= count` elements of `out`; the results
            // written before the barrier above; `send`'s elements of this
            // round were read before it.
            unsafe { core::ptr::copy_nonoverlapping(results, d.add(c0), kk) };
        }
        c0 += kk;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Gathers

/// `MPI_Gather` (`root` given) or `MPI_Allgather` (`root` `None`) of
/// `part` packed bytes per rank on a block or warp communicator. `send`:
/// this rank's part (`None`: in place, already part `rank` of `recv`);
/// `recv`: the receive buffer and its packed length at the ranks that
/// receive (every rank of an all-gather, a gather's root; `None` at the
/// others, and at a root that called the non-root form).
///
/// # Safety
/// The places are borrowed for the call: `send` holds `part` packed bytes,
/// `recv` its length, exclusively.
// Not inlined: a root and its warp-mates reach this through different
// API calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
pub(crate) unsafe fn gather(
    v: &CommView<'_>,
    root: Option<i32>,
    send: Option<Place>,
    part: usize,
    recv: Option<(Place, usize)>,
    dt: Datatype,
) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(finished(v, unsafe {
        gather_on(v, kind, root, send, part, recv, dt)
    }))
}

unsafe fn gather_on(
    v: &CommView<'_>,
    kind: CommKind,
    root: Option<i32>,
    send: Option<Place>,
    part: usize,
    recv: Option<(Place, usize)>,
    dt: Datatype,
) -> Result<(), Error> {
    let me = v.rank;
    let n = v.size as usize;
    let receives = root.is_none_or(|r| r == me as i32);
    // A receiving rank's own argument errors, agreed on in the opening so
    // that every rank fails: its buffer's length, a root's missing buffer.
    let (mut local_bits, mut local, mut out) = (0u32, None, None);
    if receives {
        match recv {
            Some((p, len)) if len == part * n => out = Some(p),
            Some((_, len)) => {
                local_bits = Mismatch::Count as u32;
                local = Some(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: saturating_u32(part * n),
                });
            }
            None => {
                local_bits = Mismatch::Root as u32;
                local = Some(Error::InvalidRoot {
                    root: me as i32,
                    size: n as i32,
                });
            }
        }
    }
    let (call, root_word) = match root {
        Some(r) => (Call::Gather, r as u32),
        None => (Call::AllGather, u32::MAX),
    };
    let mine = Descriptor {
        call: call as u32,
        root: root_word,
        count: saturating_u32(part),
        datatype: dt.id,
    };
    open(v, kind, mine, local_bits, local)?;
    if let Some(r) = root {
        check_root(v, r as u32)?;
    }
    // This rank's part: its send buffer, or (in place) its part of `recv`
    // (in place only where it receives, and its buffer passed the opening).
    let Some(src) = send.or_else(|| out.map(|o| o.add(me as usize * part))) else {
        return Err(Error::Intern);
    };
    // Part `j` lands in `out` unless it is this rank's own, in place.
    let lands = |j: usize| out.filter(|_| j != me as usize || send.is_some());
    // SAFETY: `src` holds this rank's `part` bytes, `out` (where given)
    // `n × part` (checked in the opening).
    unsafe {
        move_parts(
            kind,
            n,
            part,
            |j| j as u32,
            |j| (j == me as usize).then_some(src),
            |j| lands(j).map(|o| o.add(j * part)),
        )
    }
}

/// Moves `n` parts of `part` packed bytes on a block or warp communicator
/// whose opening passed: part `j` comes from the rank `source(j)`, which
/// reads it from `from(j)` (`None` at every other rank), and goes to
/// `to(j)` at the ranks where that is given. Warp: one shuffle per 4 bytes
/// of each part from its source lane, every lane taking part. Block:
/// rounds of `c = floor(STAGE_BYTES / n)` bytes of every part (part `j`'s
/// chunk at `j × c` of the stage), 2 block barriers a round. A view's walk
/// that failed (its encoding changed under it) gives `MPI_ERR_INTERN` at
/// the end, the rank taking part to the end so that nobody waits for it.
///
/// # Safety
/// Every place given holds `part` packed bytes, borrowed for the call
/// (those of `to` exclusively).
unsafe fn move_parts(
    kind: CommKind,
    n: usize,
    part: usize,
    source: impl Fn(usize) -> u32,
    from: impl Fn(usize) -> Option<Place>,
    to: impl Fn(usize) -> Option<Place>,
) -> Result<(), Error> {
    let mut walked = true;
    if kind == CommKind::Warp {
        let mask = shim::warp_mask();
        for j in 0..n {
            let mut off = 0;
            while off < part {
                let k = (part - off).min(4);
                let mut w = [0u8; 4];
                if let Some(f) = from(j) {
                    // SAFETY: `off + k <= part` packed bytes of the part,
                    // `k <= 4` of the word.
                    walked &= unsafe { f.side.read(f.at + off, w.as_mut_ptr(), k) };
                }
                let r = shim::shfl_sync(mask, u32::from_le_bytes(w), source(j)).to_le_bytes();
                if let Some(t) = to(j) {
                    // SAFETY: as above, of the part's destination.
                    walked &= unsafe { t.side.write(t.at + off, r.as_ptr(), k) };
                }
                off += 4;
            }
        }
    } else {
        let c = STAGE_BYTES / n;
        // SAFETY: the scratch after its header, `STAGE_BYTES >= n × c` long.
        let stage = unsafe { shim::shared_block::<SHARED_BLOCK_BYTES>().add(HEADER_BYTES) };
        let mut off = 0;
        while off < part {
            if off > 0 {
                // Every rank has copied the previous round out.
                shim::block_barrier();
            }
            let k = (part - off).min(c);
            for j in 0..n {
                if let Some(f) = from(j) {
                    // SAFETY: `off + k <= part` packed bytes of the part;
                    // `k <= c` bytes of its chunk of the stage, which nobody
                    // reads before the barrier below.
                    walked &= unsafe { f.side.read(f.at + off, stage.add(j * c), k) };
                }
            }
            shim::block_barrier();
            for j in 0..n {
                if let Some(t) = to(j) {
                    // SAFETY: part `j`'s `k` bytes of the stage, written
                    // before the barrier; `off + k <= part` bytes of its
                    // destination.
                    walked &= unsafe { t.side.write(t.at + off, stage.add(j * c), k) };
                }
            }
            off += k;
        }
    }
    if walked {
        Ok(())
    } else {
        Err(Error::Intern)
    }
}

/// `MPI_Scatter` from `root` on a block or warp communicator. The root
/// passes `send` (its `size` parts) and `recv` (`None`: in place, its
/// part stays in `send`); the others `recv` (`None`: they called the
/// root's in-place form, an error).
///
/// # Safety
/// The places are borrowed for the call: `send` for reads of its length,
/// `recv` exclusively for its length.
// Not inlined: a root and its warp-mates reach this through different
// API calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
pub(crate) unsafe fn scatter(
    v: &CommView<'_>,
    root: i32,
    send: Option<(Place, usize)>,
    recv: Option<(Place, usize)>,
    dt: Datatype,
) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(finished(v, unsafe { scatter_on(v, kind, root, send, recv, dt) }))
}

unsafe fn scatter_on(
    v: &CommView<'_>,
    kind: CommKind,
    root: i32,
    send: Option<(Place, usize)>,
    recv: Option<(Place, usize)>,
    dt: Datatype,
) -> Result<(), Error> {
    let me = v.rank;
    let n = v.size as usize;
    let is_root = root == me as i32;
    // The part's length: the root's send buffer split in `size`, the
    // others' receive buffer; a wrong form or a root's receive buffer of
    // another length fails every rank through the opening.
    let (mut local_bits, mut local) = (0u32, None);
    let wrong_form = Error::InvalidRoot {
        root: me as i32,
        size: n as i32,
    };
    let part = match (is_root, send, recv) {
        (true, Some((_, len)), r) => {
            let part = len / n;
            if let Some((_, got)) = r.filter(|&(_, got)| got != part) {
                local_bits = Mismatch::Count as u32;
                local = Some(Error::CountMismatch {
                    count: saturating_u32(got),
                    expected: saturating_u32(part),
                });
            }
            part
        }
        (false, _, Some((_, len))) => len,
        (_, _, r) => {
            local_bits = Mismatch::Root as u32;
            local = Some(wrong_form);
            r.map_or(0, |(_, len)| len)
        }
    };
    let mine = Descriptor {
        call: Call::Scatter as u32,
        root: root as u32,
        count: saturating_u32(part),
        datatype: dt.id,
    };
    open(v, kind, mine, local_bits, local)?;
    check_root(v, root as u32)?;
    let root = root as usize;
    // The root's parts (only read at the root), and where this rank's part
    // lands (none at an in-place root).
    let src = send.map(|(p, _)| p).filter(|_| me as usize == root);
    let dst = recv.map(|(p, _)| p);
    // SAFETY: the root's `send` holds `n × part` bytes (the opening agreed
    // on `part`), `recv` this rank's `part`.
    unsafe {
        move_parts(
            kind,
            n,
            part,
            |_| root as u32,
            |j| src.map(|s| s.add(j * part)),
            |j| dst.filter(|_| j == me as usize),
        )
    }
}

// ---------------------------------------------------------------------------
// All-to-all

/// `MPI_Alltoall` on a warp communicator: `send` with its packed length
/// (`None`: in place, the parts are in `recv`), `recv` with its length,
/// `size` equal parts each. A block communicator keeps the general
/// algorithm (`None`): its `size²` parts do not fit the shared scratch in
/// useful rounds, and a rank's buffers may be in its local memory, which
/// no other rank can read.
///
/// Round `k` of `next_power_of_two(size)`: lane `i` trades part `i ^ k`
/// with lane `i ^ k` (when that lane exists), one shuffle per 4 bytes;
/// each part is read and then overwritten in the same round, so the in
/// place form needs no copy. A send length other than the receive
/// length fails every lane through the opening.
///
/// # Safety
/// The places are borrowed for the call: `send` for reads of its length,
/// `recv` exclusively for its length.
pub(crate) unsafe fn all_to_all(
    v: &CommView<'_>,
    send: Option<(Place, usize)>,
    recv: (Place, usize),
    dt: Datatype,
) -> Option<Result<(), Error>> {
    if kind(v.world, v.comm) != CommKind::Warp {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(finished(v, unsafe { all_to_all_on(v, send, recv, dt) }))
}

unsafe fn all_to_all_on(
    v: &CommView<'_>,
    send: Option<(Place, usize)>,
    recv: (Place, usize),
    dt: Datatype,
) -> Result<(), Error> {
    let n = v.size as usize;
    let (out, len) = recv;
    let part = len / n;
    let (mut local_bits, mut local) = (0u32, None);
    if let Some((_, sent)) = send.filter(|&(_, sent)| sent != len) {
        local_bits = Mismatch::Count as u32;
        local = Some(Error::CountMismatch {
            count: saturating_u32(len),
            expected: saturating_u32(sent),
        });
    }
    let mine = Descriptor {
        call: Call::AllToAll as u32,
        root: u32::MAX,
        count: saturating_u32(part),
        datatype: dt.id,
    };
    open(v, CommKind::Warp, mine, local_bits, local)?;
    let mask = shim::warp_mask();
    let me = v.rank as usize;
    let from = send.map_or(out, |(p, _)| p);
    let mut walked = true;
    for k in 0..n.next_power_of_two() {
        let partner = me ^ k;
        let trades = partner < n;
        // A lane without a partner this round reads its own word back.
        let src = if trades { partner } else { me } as u32;
        let mut off = 0;
        while off < part {
            let b = (part - off).min(4);
            let mut w = [0u8; 4];
            if trades {
                // SAFETY: `partner × part + off + b <= n × part <= len`
                // packed bytes of the send (or receive) buffer.
                walked &= unsafe { from.side.read(from.at + partner * part + off, w.as_mut_ptr(), b) };
            }
            let r = shim::shfl_sync(mask, u32::from_le_bytes(w), src).to_le_bytes();
            if trades {
                // SAFETY: as above, of the receive buffer; the word read
                // from it (in place) was read above.
                walked &= unsafe { out.side.write(out.at + partner * part + off, r.as_ptr(), b) };
            }
            off += 4;
        }
    }
    if walked {
        Ok(())
    } else {
        Err(Error::Intern)
    }
}

// ---------------------------------------------------------------------------
// Scans

/// The descriptor's call word of an exclusive scan: [`Call::Scan`] with
/// this bit, so that an inclusive and an exclusive scan disagree on the
/// call in the opening (the low byte stays the [`Call`] code).
const EXCLUSIVE_BIT: u32 = 0x100;

/// `value` of lane `lane - delta` (lanes below `delta`: their own), word
/// by word.
pub(super) fn shfl_up_value<T: Equivalence>(mask: u32, value: &T, delta: u32) -> T {
    shuffle_value(value, |w| shim::shfl_up_sync(mask, w, delta))
}

/// Inclusive shuffle-up scan over the first `n` lanes of `mask` (lane `l`
/// gets `x_0 ∘ … ∘ x_l`, operands combined in lane order: the lower
/// lanes' run on the left, MPI 6.9.1); lanes at or past `n` get values of
/// no meaning. Every lane of `mask` calls it with the same `n`.
pub(super) fn warp_scan<T: Equivalence, O: Operation<T>>(
    mask: u32,
    lane: u32,
    n: u32,
    mut x: T,
    op: &O,
) -> T {
    let mut d = 1u32;
    while d < n {
        let lower = shfl_up_value(mask, &x, d);
        if lane >= d {
            x = op.apply(&lower, &x);
        }
        d <<= 1;
    }
    x
}

/// Elements of `T` per round of a block scan over `warps` warps (0: the
/// stage cannot hold two entries per warp but the last, or `T` needs more
/// than the scratch's 16-byte alignment).
fn scan_round<T>(warps: u32) -> usize {
    if align_of::<T>() > 16 {
        return 0;
    }
    STAGE_BYTES / (2 * (warps.max(2) as usize - 1) * size_of::<T>().max(1))
}

/// `MPI_Scan` (`exclusive`: `MPI_Exscan`, rank 0's `out` left untouched,
/// as the general algorithm leaves it) of the `count` elements at `send`
/// into `out` (`len` elements) on a block or warp communicator.
///
/// # Safety
/// `send` readable for `count` elements, `out` writable for `len`
/// elements; they may be the same buffer.
pub(crate) unsafe fn scan<T: Equivalence, O: Operation<T>>(
    v: &CommView<'_>,
    send: *const T,
    count: usize,
    out: *mut T,
    len: usize,
    exclusive: bool,
    op: &O,
) -> Option<Result<(), Error>> {
    let kind = kind(v.world, v.comm);
    if kind == CommKind::General {
        return None;
    }
    let warps = v.world.block_dim().div_ceil(32);
    if kind == CommKind::Block && scan_round::<T>(warps) == 0 {
        return None;
    }
    // SAFETY: the caller's contract.
    let r = unsafe { scan_on(v, kind, send, count, out, len, exclusive, op) };
    Some(finished(v, r))
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_on<T: Equivalence, O: Operation<T>>(
    v: &CommView<'_>,
    kind: CommKind,
    send: *const T,
    count: usize,
    out: *mut T,
    len: usize,
    exclusive: bool,
    op: &O,
) -> Result<(), Error> {
    // This rank's own argument errors, agreed on in the opening so that
    // every rank fails: an operation its type does not take, a receive
    // buffer of another length.
    let (mut local_bits, mut local) = (0u32, None);
    let op_error = op.check().err();
    if op_error.is_some() {
        local_bits = Mismatch::Type as u32;
    } else if len != count {
        local_bits = Mismatch::Count as u32;
        local = Some(Error::CountMismatch {
            count: saturating_u32(len),
            expected: saturating_u32(count),
        });
    }
    let mine = Descriptor {
        call: Call::Scan as u32 | if exclusive { EXCLUSIVE_BIT } else { 0 },
        root: u32::MAX,
        count: saturating_u32(count),
        datatype: T::DATATYPE.id,
    };
    open(v, kind, mine, local_bits, local).map_err(|e| op_error.unwrap_or(e))?;
    let lane = v.world.thread % 32;
    let mask = shim::warp_mask();
    if kind == CommKind::Warp {
        for i in 0..count {
            // SAFETY: `i < count` elements of `send`.
            let x = unsafe { send.add(i).read_unaligned() };
            let mut x = warp_scan(mask, lane, v.size, x, op);
            if exclusive {
                x = shfl_up_value(mask, &x, 1);
            }
            if !exclusive || lane > 0 {
                // SAFETY: `i < count == len` elements of `out`; element
                // `i` of `send` was read before.
                unsafe { out.add(i).write_unaligned(x) };
            }
        }
        return Ok(());
    }
    // SAFETY: the block path's stage is `scan_round`'s layout.
    unsafe { block_scan(v, send, count, out, exclusive, op) };
    Ok(())
}

/// The block scan: per round of `k` elements, a shuffle scan in every
/// warp (its result in `out`), the totals of warps `0..warps - 1` in the
/// stage, a shuffle scan of them in warp 0 into a second region of the
/// stage (the prefix of the warps before each warp), and every rank of
/// warps `1..` combines that prefix on the left of its warp's result.
///
/// # Safety
/// As [`scan`], `len == count`, after a successful block opening.
unsafe fn block_scan<T: Equivalence, O: Operation<T>>(
    v: &CommView<'_>,
    send: *const T,
    count: usize,
    out: *mut T,
    exclusive: bool,
    op: &O,
) {
    let warps = v.world.block_dim().div_ceil(32);
    let warp = v.world.thread / 32;
    let lane = v.world.thread % 32;
    let mask = shim::warp_mask();
    let lanes = mask.count_ones();
    let k = scan_round::<T>(warps);
    let inner = warps as usize - 1;
    // SAFETY: the scratch after its header: `inner × k` totals, then
    // `inner × k` prefixes, `2 × inner × k × unit <= STAGE_BYTES`
    // (`scan_round`), 16-byte aligned (`T`'s alignment is at most 16).
    let totals = unsafe { shim::shared_block::<SHARED_BLOCK_BYTES>().add(HEADER_BYTES) } as *mut T;
    // SAFETY: as above.
    let prefixes = unsafe { totals.add(inner * k) };
    let mut c0 = 0;
    while c0 < count {
        let kk = k.min(count - c0);
        for i in 0..kk {
            // SAFETY: `c0 + i < count` elements of `send`.
            let x = unsafe { send.add(c0 + i).read_unaligned() };
            let x = warp_scan(mask, lane, lanes, x, op);
            if (warp as usize) < inner && lane == lanes - 1 {
                // SAFETY: total `i` of this warp, inside the stage; the
                // previous round's were read by warp 0 before that
                // round's second barrier.
                unsafe { totals.add(warp as usize * k + i).write(x) };
            }
            let x = if exclusive { shfl_up_value(mask, &x, 1) } else { x };
            if !exclusive || lane > 0 {
                // SAFETY: `c0 + i < count` elements of `out`; element
                // `c0 + i` of `send` was read before.
                unsafe { out.add(c0 + i).write_unaligned(x) };
            }
        }
        shim::block_barrier();
        if warp == 0 {
            for i in 0..kk {
                let from = if (lane as usize) < inner { lane as usize } else { 0 };
                // SAFETY: written by the last lane of warp `from` before
                // the barrier above.
                let y = unsafe { totals.add(from * k + i).read() };
                let y = warp_scan(mask, lane, inner as u32, y, op);
                if (lane as usize) < inner {
                    // SAFETY: prefix `i` of warp `lane + 1`, inside the
                    // stage; the previous round's were read before this
                    // round's first barrier.
                    unsafe { prefixes.add(lane as usize * k + i).write(y) };
                }
            }
        }
        shim::block_barrier();
        if warp > 0 {
            for i in 0..kk {
                // SAFETY: written by warp 0 before the barrier above.
                let p = unsafe { prefixes.add((warp as usize - 1) * k + i).read() };
                // SAFETY: `c0 + i < count` elements of `out`, written
                // above by this rank (but lane 0's of an exclusive scan).
                unsafe {
                    let o = out.add(c0 + i);
                    let x = if exclusive && lane == 0 {
                        p
                    } else {
                        op.apply(&p, &o.read_unaligned())
                    };
                    o.write_unaligned(x);
                }
            }
        }
        c0 += kk;
    }
}
