//! The emulator's scheduler: ranks as coroutines on a few worker threads,
//! with exact deadlock detection.
//!
//! # Execution model
//! Every rank is a stackful coroutine running the kernel's entry. The blocks
//! of the world are split into contiguous ranges, one per worker thread; all
//! ranks of a block live on one worker, so the block barrier is a scheduler
//! event of that worker. A worker runs *passes*: it resumes each of its
//! runnable ranks once, in order. A resumption ends when the rank
//! - suspends with `Poll { fresh }`: it failed a poll and gives way; it stays
//!   runnable;
//! - suspends with `BlockBarrier`: it is parked until every rank of its block
//!   that has not returned has arrived (a returned rank does not hold a
//!   block barrier: PTX `exit` releases the barriers that only exited
//!   threads hold up), then all of them become runnable again, each with
//!   the count of the ranks that arrived with their predicate true
//!   (`barrier.red.popc`);
//! - suspends with `Warp`: it arrived at a warp collective (a shuffle, vote,
//!   match or `bar.warp.sync`; the call, with its mask and value, is in its
//!   context). A warp is 32 consecutive ranks of a block (the last warp of a
//!   block may be partial). The rank is parked in its warp's slot until
//!   every lane named in the call's mask has arrived; then the scheduler
//!   computes every lane's result (`shim::resolve_warp`), stores it in the
//!   lane's context and makes the lanes runnable again. A call that no warp
//!   can complete (a mask without the caller, or naming lanes that do not
//!   exist; lanes of one mask, or whose masks name each other, with
//!   different masks or operations) ends the run with
//!   `Outcome::WarpMismatch` (`HostError::WarpMismatch`), a typed error,
//!   at the arrival that reveals it;
//! - returns: the rank finished.
//!
//! # Progress
//! A resumption *made progress* unless it ended in `Poll { fresh: false }`.
//! The shim reports `fresh: false` only when the rank, since it was last
//! resumed, did nothing but poll the same wait again and fail (see
//! `gpu_mpi_device::abi::shim::Backoff`): it read shared memory and wrote nothing
//! that another rank can see. Everything else (a fresh poll, a barrier or
//! warp-collective arrival or release, a rank that returned) is progress. A
//! barrier or warp collective that can never complete (a rank of its block
//! waits elsewhere forever, or a lane of its mask returned or waits
//! elsewhere forever) simply never releases its ranks: they are not runnable, and the ranks they wait for
//! report no progress either.
//!
//! A worker whose pass made progress increments the global `epoch` (SeqCst)
//! once at the end of the pass, before anything else.
//!
//! # Sleeping and the deadlock rule
//! A worker whose pass made no progress and that read the same epoch `e` at
//! the start and at the end of the pass goes to sleep, recording "quiet at
//! `e`". Under the coordination mutex it increments `sleepers`, then re-reads
//! the epoch (both SeqCst) and waits on the condvar while the epoch is still
//! `e`. A worker that made progress increments the epoch, then reads
//! `sleepers`, and if it is non-zero locks the mutex and notifies. This is
//! Dekker's pattern: in the single SeqCst order either the sleeper's epoch
//! read sees the increment (it does not wait), or the progressing worker's
//! read of `sleepers` sees the sleeper, and then its lock-and-notify happens
//! after the sleeper released the mutex in `wait` (no lost wake-up).
//!
//! **Deadlock** is declared, under the mutex, when every worker that still
//! has live ranks is asleep and quiet at the current epoch `E`.
//!
//! # Why the rule is exact
//! *Sound (no false deadlock).* When the rule fires, no worker is inside a
//! pass (all active ones wait on the condvar, the others have no ranks left),
//! so every pass that made progress has already incremented the epoch; there
//! were `E` increments in all, and each sleeping worker read `E` at the start
//! of its last pass, so every increment, and every write that any progress
//! resumption made before it, happened before each of those last passes
//! began. In its last pass each worker resumed every runnable rank once and
//! every one of them failed its poll and wrote nothing. So the shared memory
//! those polls read is exactly the memory that now exists, and no write can
//! come: every rank able to write is one of those pollers (which would fail
//! the same poll again, forever) or parked in a block barrier or a warp
//! collective (which needs an arrival from a rank of its block that has
//! not returned, or from a lane of its mask, all of which poll forever,
//! have returned, or are parked; a return releases a block barrier at once,
//! and is progress; a
//! parked rank leaves only when its own barrier or collective completes,
//! which needs an arrival in turn, and an arrival is progress, of which
//! there was none). Nothing can ever progress: a deadlock.
//!
//! *Complete (a deadlock is always reported).* If no rank can progress, the
//! next pass of each worker after the last progress makes no progress and
//! starts and ends at the final epoch, so each worker goes to sleep quiet at
//! it; the last one to do so finds all active workers asleep at the current
//! epoch and declares. A worker that finishes its last rank leaves the active
//! set and wakes the sleepers, so they re-check without it.
//!
//! The rule rests on the shim's contract that `fresh: false` means "read
//! only, and the same read would fail again". A poll that depends on the
//! clock breaks it: that is the world timeout (below).
//!
//! # Seeded schedules
//! With a seeded [`Schedule`] (`Random` or `Pct`) one worker runs every
//! rank, and instead of passes it picks, after every resumption, the next
//! rank to resume with the schedule's chooser. The worker keeps its own epoch (a count of the
//! resumptions that made progress, with "progress" as above) and, per rank
//! whose last resumption ended in a failed poll, the epoch at the end of
//! that resumption and whether the poll was fresh. A rank is *waiting*
//! while that epoch is still current (no rank progressed since it polled;
//! a fresh poll counts its own progress first), and *stale* if it is
//! waiting after a poll that was not fresh. The chooser picks among the
//! runnable ranks (not parked in a block barrier or a warp collective, not returned) that are
//! not waiting, or, when all of them wait, among those that are not stale.
//! (The worker keeps the runnable ranks in three lists, ready, waiting and
//! stale; a resumption that made progress moves the last two back to
//! ready.) Parking and releasing at block barriers and warp collectives is
//! as in the passes (released ranks go to ready).
//!
//! **Deadlock** is declared when every runnable rank is stale (or none is
//! runnable). *Sound:* a stale rank's last resumption ended with the epoch
//! at `E`, the current one, and made no progress itself, so the epoch was
//! `E` when it began: it began after every write any rank made, failed its
//! poll and wrote nothing, and no resumption wrote since. So every runnable
//! rank would fail the same poll again on the same memory, forever, and
//! the parked ranks need an arrival from their block, whose ranks are
//! stale, parked or returned (a rank parked in a warp collective likewise
//! needs an arrival from a lane of its mask): nothing can progress. *Complete:* once
//! nothing can progress, every resumption ends in a poll that is not fresh
//! (the shim's contract), which makes its rank stale; the epoch no longer
//! moves, so no rank stops being stale, and the chooser only picks ranks
//! that are not stale: after at most one resumption per runnable rank all
//! are stale and the worker declares. The choice among the candidates
//! (random, PCT priorities) plays no part in either argument. One worker
//! and no clock in the decisions make the run a function of the program,
//! the world and the seed; the deadlock report, built from the world
//! memory at that point, is too.
//!
//! With a world timeout a quiet world is not final (below): when every
//! runnable rank is stale the worker sleeps a tick and makes every runnable
//! rank eligible once more, and declares the deadlock itself only after the
//! timeout plus the grace period and `LATE_PASSES` more such rounds. Which
//! timed wait expires first then depends on the clock, so a seeded run with
//! a world timeout is reproducible only up to it.
//!
//! # Timing mode
//! With a GPU profile (docs/model.md) one worker runs every rank and always
//! resumes the runnable rank with the smallest virtual clock (ties: the
//! lower rank). A rank about to touch shared memory while its clock is past
//! the *horizon* (the smallest clock of the other runnable ranks when it was
//! resumed; they do not run meanwhile) suspends with `Suspend::Time`, which
//! is no progress and leaves it runnable. So every access happens in the
//! order of virtual time. A block barrier or warp collective releases its
//! ranks together at the latest arrival plus its cost.
//!
//! The deadlock rule is the seeded one's, with one change: a rank is stale
//! after a poll that was not fresh only if no resumption progressed since
//! the resumption in which that poll began (suspensions for time may split
//! a poll over several resumptions, and a poll that read memory before and
//! after another rank's write proves nothing). *Sound* as for the seeded
//! schedules: a stale rank's whole last poll read the memory as it is now.
//! *Complete:* once nothing can progress, every rank's next poll runs to its
//! end (suspensions for time do not stop it) and makes it stale. Picking by
//! clock instead of by the chooser plays no part in either argument; every
//! poll costs virtual time, so a polling rank cannot starve the others.
//! With a world timeout, a quiet world sleeps past it in virtual time and
//! polls on (`LATE_PASSES` resumptions per rank) before the deadlock is
//! final.
//!
//! # Aborts
//! A wait reads the world's abort word only every `RARE_READS_EVERY`
//! (16) polls, so a quiet poll that skipped it does not prove the next
//! one fails. Once a rank has aborted the world, a quiet world is final
//! only after every quiet rank polled that many more times on the same
//! memory (every mode: the parallel workers' late passes, the seeded
//! worker's re-poll rounds, timing mode's late polls); until then each
//! waiting rank reads the word and gives up with `Aborted`.
//!
//! # Timeouts
//! With a world timeout the device bounds its own waits by the clock, so a
//! quiet world is not final: a wait may still time out, mark its record and
//! abort the world. The scheduler then keeps resuming quiet ranks every
//! millisecond (so their clocks are read) and declares a deadlock only when
//! the world stayed quiet at one epoch for the timeout plus a grace period
//! and every worker re-polled its ranks `LATE_PASSES` times after that (so
//! every timed wait read the clock past its deadline, however slowly the
//! workers ran). That catches deadlocks whose waits have no timeout (ranks
//! parked in block barriers or warp collectives, ranks polling outside the library). Usually the device's timeout fires
//! first, every rank returns, and the host reads the timed-out record
//! (`report::check_world`), exactly as on the GPU.

use crate::cpu::explore::Chooser;
use crate::cpu::model::{self, Clock, Model};
use crate::cpu::stack::{AltStack, PoolStack, StackPool};
use crate::model::{ModelledTime, Profile};
use crate::report::{BlockedState, DeadlockReport};
use crate::schedule::Schedule;
use corosensei::stack::Stack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use gpu_mpi_device::abi::layout::{Layout, ABORT_OFFSET, CONFIG_OFFSET, LAYOUT_OFFSET};
use gpu_mpi_device::abi::polling::RARE_READS_EVERY;
use gpu_mpi_device::abi::shim::runtime::{self, Access, RankRuntime, Suspend, SyncCounts};
use gpu_mpi_device::abi::shim::{
    resolve_warp, Coordinates, WarpCall, WarpOp, BLOCK_WORDS_BYTES, SHARED_BLOCK_BYTES,
};
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a quiet worker re-polls its ranks in timeout mode.
const TIMEOUT_TICK: Duration = Duration::from_millis(1);
/// How long past the world timeout a quiet world may stay quiet in timeout
/// mode before the scheduler declares the deadlock itself.
const TIMEOUT_GRACE: Duration = Duration::from_millis(250);
/// Quiet passes every worker makes after that deadline before the scheduler
/// declares the deadlock itself (the device reads the clock every 16 polls).
const LATE_PASSES: u32 = 48;

/// [`Shared::parked`]: in the block barrier.
const PARKED_BARRIER: u64 = 1 << 32;

/// [`Shared::parked`]: in a warp collective (mask in the low 32 bits).
fn parked_warp(call: &WarpCall) -> u64 {
    ((2 + u64::from(call.op.code())) << 32) | u64::from(call.mask)
}

/// The report state of a [`Shared::parked`] code.
fn parked_state(code: u64) -> Option<BlockedState> {
    match code >> 32 {
        0 => None,
        1 => Some(BlockedState::BlockBarrier),
        k => WarpOp::from_code((k - 2) as u32).map(|operation| BlockedState::Warp {
            operation,
            mask: code as u32,
        }),
    }
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Every rank returned.
    Finished {
        /// Per rank, the synchronising operations it issued.
        sync: Vec<SyncCounts>,
        /// In timing mode, the modelled time.
        model: Option<ModelledTime>,
    },
    /// No rank could ever progress again.
    Deadlock(DeadlockReport),
    /// A rank's code panicked.
    Panicked {
        /// The rank.
        rank: u32,
        /// The panic message.
        message: String,
    },
    /// Lanes of a warp called warp collectives that cannot complete
    /// together (different operations or masks, or a bad mask).
    WarpMismatch {
        /// The rank whose call revealed it.
        rank: u32,
        /// What the lanes called.
        message: String,
    },
    /// A rank's stack canary was overwritten.
    StackOverflow {
        /// The rank.
        rank: u32,
    },
    /// A worker thread could not be started.
    NoThread(std::io::Error),
    /// Another process of the world ended its run early (its relay said
    /// so); the outcome is that process's.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    Remote,
}

/// What carries messages between this process's world memory and the other
/// processes' in a world spread over processes (`crate::distributed`): it
/// serves for the whole run, on a thread of its own, and ends it.
pub(crate) trait Relay: Sync {
    /// Moves messages until the whole world (every process) has finished
    /// or can never progress again, then returns; a run whose ranks can no
    /// longer progress is ended with [`LocalRun::end_deadlocked`] first.
    fn serve(&self, local: &LocalRun<'_, '_>);
}

/// A relay's view of the local run ([`Relay::serve`]).
pub(crate) struct LocalRun<'s, 'a> {
    shared: &'s Shared<'a>,
    blocks: Range<u32>,
}

/// Where the local run stands ([`LocalRun::state`]).
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LocalState {
    /// A rank may still progress on its own.
    Busy,
    /// No local rank can progress until the world memory changes: every
    /// worker with live ranks sleeps quiet at this epoch (a rank lives).
    Quiet(u64),
    /// Every local rank returned.
    Finished,
    /// The run ended early (a panic, a stack overflow, a warp mismatch).
    Ended,
}

#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
impl LocalRun<'_, '_> {
    /// The world memory.
    pub(crate) fn world(&self) -> *mut u8 {
        self.shared.world.0 as *mut u8
    }

    /// Its layout.
    pub(crate) fn layout(&self) -> &Layout {
        self.shared.layout
    }

    /// The ranks this process runs.
    pub(crate) fn ranks(&self) -> Range<u32> {
        let d = self.shared.layout.block_dim;
        self.blocks.start * d..self.blocks.end * d
    }

    /// The epoch now (SeqCst): read before the relay looks at the world, so
    /// that [`LocalState::Quiet`] at the same epoch after says no rank
    /// wrote since.
    pub(crate) fn epoch(&self) -> u64 {
        self.shared.epoch.load(SeqCst)
    }

    /// The relay wrote world memory that a rank may read: progress. The
    /// epoch moves (SeqCst, after the writes) and sleeping workers wake,
    /// as after a worker's progressing pass.
    pub(crate) fn progressed(&self) {
        let s = self.shared;
        s.epoch.fetch_add(1, SeqCst);
        if s.sleepers.load(SeqCst) > 0 {
            let _g = lock(&s.coord);
            s.wake.notify_all();
        }
    }

    /// Where the local run stands now.
    pub(crate) fn state(&self) -> LocalState {
        let s = self.shared;
        let g = lock(&s.coord);
        if g.outcome.is_some() || s.stop.load(SeqCst) {
            return LocalState::Ended;
        }
        if g.active.iter().all(|&a| !a) {
            return LocalState::Finished;
        }
        let e = s.epoch.load(SeqCst);
        // The same rule as a worker's deadlock rule (module documentation),
        // without its declaration: every worker with live ranks is asleep
        // quiet at the current epoch, and, with a timeout or after an
        // abort, has made its late passes past the deadline.
        let mut quiet = (0..g.active.len()).all(|w| !g.active[w] || g.asleep_at[w] == Some(e));
        let aborted = world_aborted(s);
        if quiet && (s.timeout.is_some() || aborted) {
            let needed = if s.timeout.is_some() {
                LATE_PASSES
            } else {
                RARE_READS_EVERY
            };
            let past = g.deadline.is_some_and(|(de, d)| de == e && Instant::now() >= d);
            quiet = past && (0..g.active.len()).all(|w| !g.active[w] || g.late_passes[w] >= needed);
        }
        if quiet {
            LocalState::Quiet(e)
        } else {
            LocalState::Busy
        }
    }

    /// Ends a local run that can never progress (the whole world is
    /// quiet: the relay knows no message will come): its outcome is a
    /// deadlock, reported from the local memory (the relay's caller
    /// replaces it with the whole world's report).
    pub(crate) fn end_deadlocked(&self) {
        let s = self.shared;
        let mut g = lock(&s.coord);
        if g.outcome.is_none() {
            let e = s.epoch.load(SeqCst);
            let quiet = (0..g.active.len()).all(|w| !g.active[w] || g.asleep_at[w] == Some(e));
            // A relay ends only a quiet run; were it not, the report would
            // read memory that ranks write.
            assert!(quiet, "the relay ended a run that is not quiet");
            // SAFETY: as in `Worker::report`: every worker with live ranks
            // waits on the condvar, under the lock held here.
            let memory = unsafe { std::slice::from_raw_parts(s.world.0, s.layout.total) };
            let report = DeadlockReport::from_world_parked(memory, s.layout, |r| {
                parked_state(s.parked[r as usize].load(Relaxed))
            });
            g.outcome = Some(Outcome::Deadlock(report));
        }
        s.stop.store(true, SeqCst);
        s.wake.notify_all();
    }

    /// Ends the local run because another process's failed (its outcome
    /// comes from there).
    pub(crate) fn end_aborted(&self) {
        let s = self.shared;
        let mut g = lock(&s.coord);
        if g.outcome.is_none() {
            g.outcome = Some(Outcome::Remote);
        }
        s.stop.store(true, SeqCst);
        s.wake.notify_all();
    }

    /// The relay itself failed: the run ends with that.
    fn fail(&self, message: String) {
        let s = self.shared;
        let mut g = lock(&s.coord);
        g.outcome = Some(Outcome::Panicked {
            rank: self.ranks().start,
            message,
        });
        s.stop.store(true, SeqCst);
        s.wake.notify_all();
    }
}

/// Whether a rank aborted the world (its abort word): then a quiet world
/// is final only after every quiet rank polled [`RARE_READS_EVERY`] more
/// times, since a wait reads the word only that often.
fn world_aborted(s: &Shared<'_>) -> bool {
    // SAFETY: the abort word, 4-byte aligned in the world's header, accessed
    // only atomically.
    let word = unsafe { AtomicU32::from_ptr(s.world.0.add(ABORT_OFFSET) as *mut u32) };
    // Relaxed: a flag, as the ranks read it.
    word.load(Relaxed) != 0
}

/// The deadlock report of a world memory, with `parked` the scheduler's
/// codes for its ranks ([`LocalRun::parked_codes`], whole world).
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
pub(crate) fn report_parked(memory: &[u8], layout: &Layout, parked: &[u64]) -> DeadlockReport {
    DeadlockReport::from_world_parked(memory, layout, |r| parked_state(parked[r as usize]))
}

/// A pointer that may cross to the worker threads.
struct SendPtr<T>(*const T);
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: the pointees (world memory, kernel arguments of a `Sync` type)
// outlive the scoped workers and are accessed only as the kernel does:
// atomically or under the protocol's ordering.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}

/// What the workers share.
struct Shared<'a> {
    epoch: AtomicU64,
    sleepers: AtomicUsize,
    stop: AtomicBool,
    /// Per rank, where the scheduler parks it (for the deadlock report):
    /// 0 nowhere, [`PARKED_BARRIER`], or [`parked_warp`] of its call.
    parked: Vec<AtomicU64>,
    coord: Mutex<Coord>,
    wake: Condvar,
    world: SendPtr<u8>,
    layout: &'a Layout,
    timeout: Option<Duration>,
    stacks: &'a StackPool,
    /// Whether a rank's stack is local memory.
    local_stacks: bool,
    /// Per rank, the synchronising operations it issued; each worker
    /// writes its ranks' totals once, when it ends.
    sync: Mutex<Vec<SyncCounts>>,
    /// Timing mode: the profile.
    profile: Option<&'a Profile>,
    /// Timing mode: the rank whose accesses are logged.
    model_log: Option<u32>,
    /// Timing mode: the modelled time, written by the worker when every
    /// rank returned.
    modelled: Mutex<Option<ModelledTime>>,
    /// Whether a relay shares the world: then a quiet process is not a
    /// deadlock (a message may still come); the relay declares it.
    relayed: bool,
}

/// Coordination state, under `Shared::coord`.
struct Coord {
    /// Per worker: whether it still has live ranks.
    active: Vec<bool>,
    /// Per worker: `Some(e)` while it sleeps quiet at epoch `e`.
    asleep_at: Vec<Option<u64>>,
    /// Set once, by the first worker that ends the run early.
    outcome: Option<Outcome>,
    /// Timeout mode: the epoch the world went quiet at and when to give up.
    deadline: Option<(u64, Instant)>,
    /// Timeout mode: per worker, quiet passes it made past the deadline.
    late_passes: Vec<u32>,
}

fn lock(m: &Mutex<Coord>) -> MutexGuard<'_, Coord> {
    // A worker panics only outside the lock (kernel panics are caught).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The rank runtime the shim calls: coordinates and suspension.
struct RankCtx {
    coords: Coordinates,
    yielder: Cell<*const Yielder<(), Suspend>>,
    /// The warp collective the rank is parked in, until it completes.
    warp_call: Cell<Option<WarpCall>>,
    /// The result of its last warp collective.
    warp_result: Cell<u32>,
    /// Its predicate at the block barrier it is parked in.
    barrier_vote: Cell<bool>,
    /// What its last block barrier counted (ranks that arrived with their
    /// predicate true).
    barrier_count: Cell<u32>,
    /// Its block's shared scratch (owned by the worker).
    shared: *mut u8,
    /// Its block's launch-sized shared memory (owned by the worker).
    launch_shared: *mut u8,
    /// Bytes of `launch_shared` (`WorldConfig::launch_shared_bytes`).
    launch_shared_bytes: usize,
    /// Its worker's index.
    worker: u32,
    /// Its stack's addresses (`limit..base`) when stacks are local memory,
    /// as on the GPU; empty otherwise.
    stack: Cell<(usize, usize)>,
    /// Timing mode: its virtual clock.
    clock: Option<Box<Clock>>,
    /// Timing mode: the worker's model (null otherwise), which outlives
    /// the contexts.
    model: *const Model,
    /// The world memory's first byte, where its descriptors lie.
    world: usize,
}

impl RankCtx {
    fn rank(&self) -> u32 {
        self.coords.block * self.coords.block_dim + self.coords.thread
    }

    /// Its clock; only in timing mode.
    fn clock(&self) -> &Clock {
        self.clock.as_deref().expect("a timed rank has a clock")
    }

    /// Timing mode: charges the world descriptor reads the rank made since
    /// its previous access (`shim::note_descriptor` counts them on the OS
    /// thread) before anything else moves its clock or another rank runs
    /// on this thread.
    fn charge_descriptor_reads(&self) {
        let Some(clock) = self.clock.as_deref() else {
            return;
        };
        let reads = runtime::take_descriptor_reads();
        // SAFETY: `model` is set with `clock` and points to the worker's
        // model, which outlives every context.
        let model = unsafe { &*self.model };
        for (offset, reads) in [(LAYOUT_OFFSET, reads[0]), (CONFIG_OFFSET, reads[1])] {
            if reads != 0 {
                let addr = self.world + offset;
                model.charge(self.rank(), clock, Access::Descriptor { addr, reads });
            }
        }
    }

    /// Timing mode: the rank waits for its open run of volatile loads
    /// (`Model::end_volatile_run`) and pays for its warp's accesses' further
    /// lines (`Model::settle`) before its clock is read, it waits for
    /// another rank, or it returns.
    fn end_volatile_run(&self) {
        if let Some(clock) = self.clock.as_deref() {
            // SAFETY: as in `charge_descriptor_reads`.
            let model = unsafe { &*self.model };
            model.end_volatile_run(clock);
            model.settle(self.rank(), clock);
        }
    }
}

/// One block's shared scratch ([`SHARED_BLOCK_BYTES`], 16-byte aligned),
/// then its library words ([`BLOCK_WORDS_BYTES`]), zeroed at launch.
#[repr(C, align(16))]
struct Scratch(std::cell::UnsafeCell<[u8; SHARED_BLOCK_BYTES + BLOCK_WORDS_BYTES]>);

/// One warp's collective in progress: the lanes parked in it and their calls.
#[derive(Clone, Copy)]
struct WarpSlot {
    arrived: u32,
    calls: [Option<WarpCall>; 32],
}

impl RankRuntime for RankCtx {
    fn coordinates(&self) -> Coordinates {
        self.coords
    }

    fn suspend(&self, why: Suspend) {
        self.charge_descriptor_reads();
        if why != Suspend::Time {
            self.end_volatile_run();
        }
        let y = self.yielder.get();
        assert!(!y.is_null(), "suspend outside of the rank's coroutine");
        // SAFETY: the runtime is installed only while its worker resumes this
        // rank's coroutine, so this call runs on that coroutine's stack, where
        // the yielder (set when the coroutine started) lives until it ends.
        unsafe { (*y).suspend(why) };
    }

    fn warp(&self, call: WarpCall) -> u32 {
        self.warp_call.set(Some(call));
        // The scheduler parks the rank until every lane of the mask has
        // arrived, then stores the result and clears the call.
        self.suspend(Suspend::Warp);
        self.warp_result.get()
    }

    fn block_barrier(&self, predicate: bool) -> u32 {
        self.barrier_vote.set(predicate);
        // The scheduler parks the rank until its block's barrier completes,
        // then stores the count.
        self.suspend(Suspend::BlockBarrier);
        self.barrier_count.get()
    }

    fn shared_block(&self) -> *mut u8 {
        self.shared
    }

    fn launch_shared(&self) -> *mut u8 {
        self.launch_shared
    }

    fn launch_shared_bytes(&self) -> usize {
        self.launch_shared_bytes
    }

    fn sm_id(&self) -> u32 {
        self.worker
    }

    fn is_local(&self, addr: usize) -> bool {
        let (limit, base) = self.stack.get();
        (limit..base).contains(&addr)
    }

    fn access(&self, access: Access) {
        let Some(clock) = self.clock.as_deref() else {
            return;
        };
        self.charge_descriptor_reads();
        if model::ordered(&access) {
            // Ranks whose clocks are behind access memory first.
            while clock.must_wait() {
                self.suspend(Suspend::Time);
            }
        }
        // SAFETY: `model` is set with `clock` and points to the worker's
        // model, which outlives every context.
        let model = unsafe { &*self.model };
        model.charge(self.rank(), clock, access);
    }

    fn model_ns(&self) -> u64 {
        self.charge_descriptor_reads();
        self.end_volatile_run();
        self.clock.as_deref().map_or(0, |c| c.now() / 1000)
    }
}

type RankCoroutine = Coroutine<(), Suspend, (), PoolStack>;

/// Runs every rank of a world to its end, or until it deadlocks.
pub(crate) struct Run<'a, A> {
    /// The kernel entry.
    pub entry: unsafe fn(*mut u8, *const A),
    /// The world memory (laid out, header written).
    pub world: *mut u8,
    /// Its layout.
    pub layout: &'a Layout,
    /// The kernel arguments.
    pub args: &'a A,
    /// One stack per rank.
    pub stacks: &'a StackPool,
    /// Worker threads (at most one per block).
    pub workers: usize,
    /// The world's timeout, if any.
    pub timeout: Option<Duration>,
    /// The order of the ranks: [`Schedule::Parallel`] uses `workers`
    /// workers, a seeded schedule one.
    pub schedule: Schedule,
    /// Whether a rank's stack is local memory ([`CpuOptions::local_stacks`](super::CpuOptions::local_stacks)).
    pub local_stacks: bool,
    /// Timing mode: the profile of the modelled GPU (one worker, the ranks
    /// in the order of their virtual clocks; `schedule` is not used).
    pub model: Option<&'a Profile>,
    /// Timing mode: the rank whose accesses the model logs
    /// ([`WorldSpec::model_log`](crate::WorldSpec::model_log)).
    pub model_log: Option<u32>,
    /// The blocks this process runs: all of them, or in a world spread
    /// over processes its share (the others' ranks are its shadows).
    pub blocks: Range<u32>,
    /// In a world spread over processes, what carries messages to and from
    /// the other processes (see "Relays" in the module documentation); it
    /// runs on a thread of its own for the whole run.
    pub relay: Option<&'a dyn Relay>,
}

impl<A: Sync + 'static> Run<'_, A> {
    /// Runs the world; returns how it ended and the scheduler's codes of
    /// where it parked each rank of `blocks` at the end (for
    /// [`report_parked`]).
    ///
    /// # Safety
    /// The kernel entry's contract (`gpu_mpi_device::kernel::rank_main`):
    /// `world` points to `layout.total` bytes of a world laid out by
    /// `layout` with its header written, used by nothing else during the run
    /// (but the relay).
    pub unsafe fn run_parked(self) -> (Outcome, Vec<u64>) {
        let first_block = self.blocks.start as usize;
        let blocks = self.blocks.len();
        let chooser = if self.model.is_some() {
            None
        } else {
            Chooser::new(self.schedule, self.layout.ranks as usize)
        };
        let workers = if chooser.is_some() || self.model.is_some() {
            1
        } else {
            self.workers.clamp(1, blocks.max(1))
        };
        let mut chooser = chooser;
        let shared = Shared {
            epoch: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            parked: (0..self.layout.ranks).map(|_| AtomicU64::new(0)).collect(),
            coord: Mutex::new(Coord {
                active: vec![true; workers],
                asleep_at: vec![None; workers],
                outcome: None,
                deadline: None,
                late_passes: vec![0; workers],
            }),
            wake: Condvar::new(),
            world: SendPtr(self.world),
            layout: self.layout,
            timeout: self.timeout,
            stacks: self.stacks,
            local_stacks: self.local_stacks,
            sync: Mutex::new(vec![SyncCounts::default(); self.layout.ranks as usize]),
            profile: self.model,
            model_log: self.model_log,
            modelled: Mutex::new(None),
            relayed: self.relay.is_some(),
        };
        let args = SendPtr(self.args as *const A);
        let entry = self.entry;
        std::thread::scope(|s| {
            if let Some(relay) = self.relay {
                let local = LocalRun {
                    shared: &shared,
                    blocks: self.blocks.clone(),
                };
                let spawned = std::thread::Builder::new()
                    .name("gpu-mpi-relay".into())
                    .spawn_scoped(s, move || {
                        let r = panic::catch_unwind(AssertUnwindSafe(|| relay.serve(&local)));
                        if let Err(p) = r {
                            local.fail(format!("relay failed: {}", panic_message(p.as_ref())));
                        }
                    });
                if let Err(e) = spawned {
                    let mut g = lock(&shared.coord);
                    g.outcome = Some(Outcome::NoThread(e));
                    shared.stop.store(true, SeqCst);
                    return;
                }
            }
            for w in 0..workers {
                let first = (first_block + blocks * w / workers) as u32;
                let end = (first_block + blocks * (w + 1) / workers) as u32;
                let shared = &shared;
                let chooser = chooser.take();
                let spawned = std::thread::Builder::new()
                    .name(format!("gpu-mpi-cpu-{w}"))
                    .spawn_scoped(s, move || {
                        let args = args;
                        // The overflow reporter runs on it (guard pages only).
                        let _alt = (shared.stacks.guarded() > 0).then(AltStack::ensure);
                        let r = panic::catch_unwind(AssertUnwindSafe(|| {
                            let worker = Worker::new(w, first, end, shared, entry, args.0);
                            match chooser {
                                Some(c) => worker.run_seeded(c),
                                None if shared.profile.is_some() => worker.run_timed(),
                                None => worker.run(),
                            }
                        }));
                        if let Err(p) = r {
                            // A bug of the scheduler itself: end the run rather
                            // than leave the other workers asleep forever.
                            let mut g = lock(&shared.coord);
                            g.outcome = Some(Outcome::Panicked {
                                rank: first * shared.layout.block_dim,
                                message: format!("emulator worker {w} failed: {}", panic_message(p.as_ref())),
                            });
                            shared.stop.store(true, SeqCst);
                            shared.wake.notify_all();
                        }
                    });
                if let Err(e) = spawned {
                    // The workers already started would wait for this one.
                    let mut g = lock(&shared.coord);
                    g.outcome = Some(Outcome::NoThread(e));
                    shared.stop.store(true, SeqCst);
                    shared.wake.notify_all();
                    break;
                }
            }
        });
        let d = self.layout.block_dim;
        let parked = (self.blocks.start * d..self.blocks.end * d)
            .map(|r| shared.parked[r as usize].load(Relaxed))
            .collect();
        let sync = shared.sync.into_inner().unwrap_or_else(|e| e.into_inner());
        let model = shared.modelled.into_inner().unwrap_or_else(|e| e.into_inner());
        let outcome = shared
            .coord
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .outcome
            .unwrap_or(Outcome::Finished { sync, model });
        (outcome, parked)
    }
}

struct Worker<'s, 'a> {
    index: usize,
    shared: &'s Shared<'a>,
    first_rank: u32,
    block_dim: u32,
    ctxs: Box<[RankCtx]>,
    coros: Vec<Option<RankCoroutine>>,
    /// Per local rank, the synchronising operations of its resumptions so far.
    sync: Vec<SyncCounts>,
    /// Per local block, its shared scratch (the ranks' contexts point into
    /// it; the vector is never resized, so its elements never move).
    _scratch: Vec<Scratch>,
    /// Per local block, its launch-sized shared memory
    /// (`WorldConfig::launch_shared_bytes`, in 16-byte units).
    _launch_shared: Vec<Vec<u128>>,
    /// Per local warp (block-major), its collective in progress.
    warps: Vec<WarpSlot>,
    /// Timing mode: the model the ranks' contexts point to (boxed, so it
    /// never moves).
    model: Option<Box<Model>>,
}

impl<'s, 'a> Worker<'s, 'a> {
    fn new<A: Sync + 'static>(
        index: usize,
        first_block: u32,
        end_block: u32,
        shared: &'s Shared<'a>,
        entry: unsafe fn(*mut u8, *const A),
        args: *const A,
    ) -> Self {
        let layout = shared.layout;
        let block_dim = layout.block_dim;
        let first_rank = first_block * block_dim;
        let n = ((end_block - first_block) * block_dim) as usize;
        let scratch: Vec<Scratch> = (first_block..end_block)
            .map(|_| {
                Scratch(std::cell::UnsafeCell::new(
                    [0; SHARED_BLOCK_BYTES + BLOCK_WORDS_BYTES],
                ))
            })
            .collect();
        let launch_shared_bytes = layout.launch_shared_bytes() as usize;
        let mut launch_shared: Vec<Vec<u128>> = (first_block..end_block)
            .map(|_| vec![0u128; launch_shared_bytes.div_ceil(16)])
            .collect();
        let warps_per_block = block_dim.div_ceil(32) as usize;
        let model = shared.profile.map(|p| {
            let log = shared.model_log.map(|rank| model::LogOf {
                rank,
                world: shared.world.0 as usize,
                layout: *layout,
            });
            Box::new(Model::new(p, log, layout.blocks, block_dim))
        });
        let model_ptr: *const Model = model.as_deref().map_or(std::ptr::null(), |m| m as *const Model);
        let ctxs: Box<[RankCtx]> = (0..n as u32)
            .map(|i| {
                let rank = first_rank + i;
                let block_shared = launch_shared[(i / block_dim) as usize].as_mut_ptr() as *mut u8;
                RankCtx {
                    warp_call: Cell::new(None),
                    warp_result: Cell::new(0),
                    barrier_vote: Cell::new(false),
                    barrier_count: Cell::new(0),
                    shared: scratch[(i / block_dim) as usize].0.get() as *mut u8,
                    launch_shared: block_shared,
                    launch_shared_bytes,
                    worker: index as u32,
                    coords: Coordinates {
                        thread: rank % block_dim,
                        block: rank / block_dim,
                        block_dim,
                        grid_dim: layout.blocks,
                    },
                    yielder: Cell::new(std::ptr::null()),
                    stack: Cell::new((0, 0)),
                    clock: model.as_ref().map(|_| {
                        let clock = Box::new(Clock::new());
                        clock.set_block_shared(block_shared as usize, launch_shared_bytes);
                        clock
                    }),
                    model: model_ptr,
                    world: shared.world.0 as usize,
                }
            })
            .collect();
        let world = SendPtr(shared.world.0);
        let args = SendPtr(args);
        let coros = (0..n)
            .map(|i| {
                let ctx: *const RankCtx = &ctxs[i];
                let ctx = SendPtr(ctx);
                // SAFETY: stack `rank` is used by this coroutine only, and every
                // coroutine is gone before the pool drops (the pool outlives
                // the scoped workers).
                let stack = unsafe { shared.stacks.stack((first_rank as usize) + i) };
                if let Some(clock) = ctxs[i].clock.as_deref() {
                    let scratch = ctxs[i].shared as usize;
                    clock.set_unlined(
                        (Stack::limit(&stack).get(), Stack::base(&stack).get()),
                        (scratch, scratch + SHARED_BLOCK_BYTES + BLOCK_WORDS_BYTES),
                    );
                    clock.set_block_words(scratch + SHARED_BLOCK_BYTES, BLOCK_WORDS_BYTES);
                }
                if shared.local_stacks {
                    ctxs[i]
                        .stack
                        .set((Stack::limit(&stack).get(), Stack::base(&stack).get()));
                }
                Some(Coroutine::with_stack(
                    stack,
                    move |y: &Yielder<(), Suspend>, ()| {
                        let (ctx, world, args) = (ctx, world, args);
                        // SAFETY: the contexts outlive the coroutines (the worker
                        // drops its coroutines first); the yielder lives on this
                        // coroutine's stack until it ends.
                        unsafe { (*ctx.0).yielder.set(y) };
                        // SAFETY: `Run::run`'s caller upholds the entry's contract;
                        // `args` points to the caller's `A`, alive for the run.
                        unsafe { entry(world.0 as *mut u8, args.0) };
                        // Its last reads end before it returns.
                        // SAFETY: as above.
                        unsafe {
                            (*ctx.0).charge_descriptor_reads();
                            (*ctx.0).end_volatile_run();
                        }
                    },
                ))
            })
            .collect();
        // This thread's counters start at zero for the first resumption.
        let _ = runtime::take_sync_counts();
        Worker {
            index,
            shared,
            first_rank,
            block_dim,
            ctxs,
            coros,
            sync: vec![SyncCounts::default(); n],
            warps: vec![
                WarpSlot {
                    arrived: 0,
                    calls: [None; 32],
                };
                (end_block - first_block) as usize * warps_per_block
            ],
            _scratch: scratch,
            _launch_shared: launch_shared,
            model,
        }
    }

    /// Local rank `i` arrived at a warp collective (its call is in its
    /// context). Parks it; when every lane of the call's mask has arrived,
    /// stores each lane's result, clears the slot and pushes the lanes'
    /// local ranks to `released`. An `Err` says why no warp can complete the
    /// call (the run ends with [`Outcome::WarpMismatch`]).
    fn warp_arrive(&mut self, i: usize, released: &mut Vec<usize>) -> Result<(), String> {
        let block_dim = self.block_dim as usize;
        let (b, t) = (i / block_dim, i % block_dim);
        let (w, lane) = (t / 32, (t % 32) as u32);
        let first = b * block_dim + w * 32;
        let n = (block_dim - w * 32).min(32);
        let exists = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let slot_index = b * block_dim.div_ceil(32) + w;
        let Some(call) = self.ctxs[i].warp_call.get() else {
            return Err("a warp suspension without a call".to_string());
        };
        let bit = 1u32 << lane;
        let rank = self.first_rank as usize + i;
        let whose = format!("lane {lane} of warp {w} of block {}", self.ctxs[i].coords.block);
        if call.mask & bit == 0 {
            return Err(format!(
                "{whose} called {} with mask {:#010x}, which does not name it",
                call.op, call.mask
            ));
        }
        if call.mask & !exists != 0 {
            return Err(format!(
                "{whose} called {} with mask {:#010x}, which names lanes that do not exist (the warp has {n})",
                call.op, call.mask
            ));
        }
        let slot = &mut self.warps[slot_index];
        for k in 0..32u32 {
            let Some(other) = slot.calls[k as usize] else {
                continue;
            };
            if (call.mask & (1 << k) != 0 || other.mask & bit != 0)
                && (other.mask != call.mask || other.op != call.op)
            {
                return Err(format!(
                    "{whose} called {} with mask {:#010x} while lane {k} waits in {} with mask {:#010x}",
                    call.op, call.mask, other.op, other.mask
                ));
            }
        }
        slot.arrived |= bit;
        slot.calls[lane as usize] = Some(call);
        self.shared.parked[rank].store(parked_warp(&call), Relaxed);
        if slot.arrived & call.mask != call.mask {
            return Ok(());
        }
        let calls: [WarpCall; 32] = std::array::from_fn(|l| slot.calls[l].unwrap_or(call));
        let results = resolve_warp(call.mask, &calls);
        slot.arrived &= !call.mask;
        for (l, &result) in results.iter().enumerate() {
            if call.mask & (1 << l) == 0 {
                continue;
            }
            slot.calls[l] = None;
            let j = first + l;
            self.ctxs[j].warp_call.set(None);
            self.ctxs[j].warp_result.set(result);
            self.shared.parked[self.first_rank as usize + j].store(0, Relaxed);
            released.push(j);
        }
        Ok(())
    }

    /// The block barrier of local block `b`, with `parked` ranks parked in
    /// it and `returned` of its ranks returned from the kernel: when every
    /// rank that has not returned has arrived (a returned rank does not hold
    /// a block barrier, as PTX `exit` releases one), gives each parked rank
    /// the count of true predicates, unparks them and pushes them to
    /// `released`.
    fn release_barrier_if_complete(
        &self,
        parked: &mut Vec<usize>,
        returned: usize,
        released: &mut Vec<usize>,
    ) {
        if parked.is_empty() || parked.len() + returned < self.block_dim as usize {
            return;
        }
        let count = parked
            .iter()
            .filter(|&&j| self.ctxs[j].barrier_vote.get())
            .count() as u32;
        for j in parked.drain(..) {
            self.ctxs[j].barrier_count.set(count);
            self.shared.parked[self.first_rank as usize + j].store(0, Relaxed);
            released.push(j);
        }
    }

    /// Resumes local rank `i` once with its runtime installed.
    fn resume(&mut self, i: usize) -> std::thread::Result<CoroutineResult<Suspend, ()>> {
        let ctx: *const RankCtx = &self.ctxs[i];
        // SAFETY: the context outlives the resumption; it is cleared below
        // before anything else runs on this thread.
        unsafe { runtime::set_current(Some(ctx as *const dyn RankRuntime)) };
        let coro = self.coros[i].as_mut().expect("resuming a finished rank");
        // Descriptor reads counted on this thread belong to the rank that
        // made them, which charged them before it yielded: any left were
        // made by the scheduler's own work between resumptions.
        let _ = runtime::take_descriptor_reads();
        let r = panic::catch_unwind(AssertUnwindSafe(|| coro.resume(())));
        // SAFETY: clearing needs no guarantee.
        unsafe { runtime::set_current(None) };
        // Only this rank ran on this thread since the last take.
        self.sync[i] += runtime::take_sync_counts();
        r
    }

    /// Ends the run early with `outcome`, unless it already ended (a stack
    /// overflow replaces any other outcome: it decides that no coroutine may
    /// be unwound).
    fn finish_with(&self, outcome: Outcome) {
        let mut g = lock(&self.shared.coord);
        if g.outcome.is_none() || matches!(outcome, Outcome::StackOverflow { .. }) {
            g.outcome = Some(outcome);
        }
        self.shared.stop.store(true, SeqCst);
        self.shared.wake.notify_all();
    }

    fn run(mut self) {
        let n = self.coros.len();
        let block_dim = self.block_dim as usize;
        let mut run: Vec<usize> = (0..n).collect();
        let mut next: Vec<usize> = Vec::with_capacity(n);
        let mut parked: Vec<Vec<usize>> = vec![Vec::new(); n / block_dim.max(1)];
        let mut returned: Vec<usize> = vec![0; n / block_dim.max(1)];
        let mut live = n;
        'passes: while live > 0 {
            let e0 = self.shared.epoch.load(SeqCst);
            let mut progress = false;
            for &i in &run {
                if self.shared.stop.load(Relaxed) {
                    break 'passes;
                }
                let rank = self.first_rank + i as u32;
                let r = self.resume(i);
                // The red zone is checked after resumptions that did
                // something; one that only failed a poll again ran the code
                // of an earlier, checked one (and is checked at the end).
                let checked = match r {
                    Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false })) => true,
                    Ok(CoroutineResult::Return(())) => self.shared.stacks.intact_full(rank as usize),
                    _ => self.shared.stacks.intact(rank as usize),
                };
                if !checked {
                    self.finish_with(Outcome::StackOverflow { rank });
                    break 'passes;
                }
                match r {
                    Ok(CoroutineResult::Yield(Suspend::Poll { fresh })) => {
                        progress |= fresh;
                        next.push(i);
                    }
                    Ok(CoroutineResult::Yield(Suspend::Time)) => {
                        // Only timing mode suspends for time; count it as
                        // progress, which can never make a deadlock false.
                        progress = true;
                        next.push(i);
                    }
                    Ok(CoroutineResult::Yield(Suspend::BlockBarrier)) => {
                        progress = true;
                        let b = i / block_dim;
                        self.shared.parked[rank as usize].store(PARKED_BARRIER, Relaxed);
                        parked[b].push(i);
                        self.release_barrier_if_complete(&mut parked[b], returned[b], &mut next);
                    }
                    Ok(CoroutineResult::Yield(Suspend::Warp)) => {
                        progress = true;
                        if let Err(message) = self.warp_arrive(i, &mut next) {
                            self.finish_with(Outcome::WarpMismatch { rank, message });
                            break 'passes;
                        }
                    }
                    Ok(CoroutineResult::Return(())) => {
                        progress = true;
                        live -= 1;
                        self.coros[i] = None;
                        let b = i / block_dim;
                        returned[b] += 1;
                        self.release_barrier_if_complete(&mut parked[b], returned[b], &mut next);
                    }
                    Err(payload) => {
                        self.coros[i] = None;
                        let message = panic_message(payload.as_ref());
                        self.finish_with(Outcome::Panicked { rank, message });
                        break 'passes;
                    }
                }
            }
            std::mem::swap(&mut run, &mut next);
            next.clear();
            if progress {
                self.shared.epoch.fetch_add(1, SeqCst);
                if self.shared.sleepers.load(SeqCst) > 0 {
                    let _g = lock(&self.shared.coord);
                    self.shared.wake.notify_all();
                }
            } else if live > 0 && self.shared.epoch.load(SeqCst) == e0 && !self.sleep(e0) {
                break;
            }
        }
        if live == 0 {
            let mut g = lock(&self.shared.coord);
            g.active[self.index] = false;
            self.shared.wake.notify_all();
        }
        self.finish_ranks();
    }

    /// After the run: checks the whole red zones of the ranks that did not
    /// return, then drops their coroutines.
    fn finish_ranks(&mut self) {
        let overflowed = (0..self.coros.len())
            .filter(|&i| self.coros[i].is_some())
            .map(|i| self.first_rank + i as u32)
            .find(|&r| !self.shared.stacks.intact_full(r as usize));
        if let Some(rank) = overflowed {
            self.finish_with(Outcome::StackOverflow { rank });
        }
        let first = self.first_rank as usize;
        let mut sync = self.shared.sync.lock().unwrap_or_else(|e| e.into_inner());
        sync[first..first + self.sync.len()].copy_from_slice(&self.sync);
        drop(sync);
        self.drop_ranks();
    }

    /// Runs every rank of the world on this, the only, worker, choosing the
    /// rank to resume at every scheduling point with `chooser` (a seeded
    /// schedule; see "Seeded schedules" in the module documentation).
    fn run_seeded(mut self, mut chooser: Chooser) {
        let n = self.coros.len();
        let block_dim = self.block_dim.max(1) as usize;
        let timeout = self.shared.timeout;
        // The runnable ranks (neither parked nor returned) in three lists:
        // `ready` have not failed a poll since the last progress, `waiting`
        // failed a fresh poll since, `stale` failed a poll that was not
        // fresh since (see "Seeded schedules" in the module documentation).
        // Any progress moves `waiting` and `stale` back to `ready`.
        let mut ready: Vec<usize> = (0..n).collect();
        let mut waiting: Vec<usize> = Vec::with_capacity(n);
        let mut stale: Vec<usize> = Vec::with_capacity(n);
        let mut parked: Vec<Vec<usize>> = vec![Vec::new(); n / block_dim];
        let mut returned: Vec<usize> = vec![0; n / block_dim];
        let mut live = n;
        let mut last: Option<usize> = None;
        // Progress events so far (this worker's own epoch: it is alone).
        let mut epoch: u64 = 0;
        // Timeout mode: the epoch the world went quiet at, when to give up,
        // and the quiet rounds made past that.
        let mut quiet: Option<(u64, Instant, u32)> = None;
        // After an abort: the epoch of the quiet world and its re-poll rounds.
        let mut abort_rounds: (u64, u32) = (u64::MAX, 0);
        while live > 0 {
            // Prefer ranks that are not waiting (a waiting rank would fail
            // the same poll again), then ranks that are not stale.
            let list = if !ready.is_empty() {
                &mut ready
            } else if !waiting.is_empty() {
                &mut waiting
            } else {
                // Every runnable rank failed its poll and wrote nothing since
                // the last progress: final, unless a timed wait may still
                // read the clock past its deadline.
                let Some(t) = timeout else {
                    // After an abort, every stale rank polls
                    // RARE_READS_EVERY more times first (a wait reads the
                    // abort word only that often).
                    if self.aborted() {
                        if abort_rounds.0 != epoch {
                            abort_rounds = (epoch, 0);
                        }
                        if abort_rounds.1 < RARE_READS_EVERY {
                            abort_rounds.1 += 1;
                            waiting.append(&mut stale);
                            continue;
                        }
                    }
                    self.finish_with(Outcome::Deadlock(self.report()));
                    break;
                };
                let now = Instant::now();
                let q = quiet.get_or_insert((epoch, now + t + TIMEOUT_GRACE, 0));
                if q.0 != epoch {
                    *q = (epoch, now + t + TIMEOUT_GRACE, 0);
                }
                if now >= q.1 {
                    q.2 += 1;
                    if q.2 > LATE_PASSES {
                        self.finish_with(Outcome::Deadlock(self.report()));
                        break;
                    }
                }
                std::thread::sleep(TIMEOUT_TICK);
                // Re-poll every runnable rank once, so that its clock advances.
                waiting.append(&mut stale);
                continue;
            };
            let i = list.swap_remove(chooser.pick(list, last));
            last = Some(i);
            let rank = self.first_rank + i as u32;
            let r = self.resume(i);
            let checked = match r {
                Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false })) => true,
                Ok(CoroutineResult::Return(())) => self.shared.stacks.intact_full(rank as usize),
                _ => self.shared.stacks.intact(rank as usize),
            };
            if !checked {
                self.finish_with(Outcome::StackOverflow { rank });
                break;
            }
            // Whether the resumption made progress, and so ends every wait.
            let progress = !matches!(r, Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false })));
            if progress {
                epoch += 1;
                ready.append(&mut waiting);
                ready.append(&mut stale);
            }
            match r {
                Ok(CoroutineResult::Yield(Suspend::Poll { fresh: true })) => waiting.push(i),
                Ok(CoroutineResult::Yield(Suspend::Time)) => ready.push(i),
                Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false })) => stale.push(i),
                Ok(CoroutineResult::Yield(Suspend::BlockBarrier)) => {
                    let b = i / block_dim;
                    self.shared.parked[rank as usize].store(PARKED_BARRIER, Relaxed);
                    parked[b].push(i);
                    self.release_barrier_if_complete(&mut parked[b], returned[b], &mut ready);
                }
                Ok(CoroutineResult::Yield(Suspend::Warp)) => {
                    if let Err(message) = self.warp_arrive(i, &mut ready) {
                        self.finish_with(Outcome::WarpMismatch { rank, message });
                        break;
                    }
                }
                Ok(CoroutineResult::Return(())) => {
                    live -= 1;
                    self.coros[i] = None;
                    let b = i / block_dim;
                    returned[b] += 1;
                    self.release_barrier_if_complete(&mut parked[b], returned[b], &mut ready);
                }
                Err(payload) => {
                    self.coros[i] = None;
                    let message = panic_message(payload.as_ref());
                    self.finish_with(Outcome::Panicked { rank, message });
                    break;
                }
            }
        }
        self.finish_ranks();
    }

    /// Timing mode: runs every rank of the world on this, the only, worker,
    /// always resuming the rank whose virtual clock is the smallest (ties:
    /// the lower rank), until every rank returned or nothing can progress.
    /// See "Timing mode" in the module documentation.
    fn run_timed(mut self) {
        let n = self.coros.len();
        let block_dim = self.block_dim.max(1) as usize;
        let blocks = n / block_dim;
        let model: *const Model = self.model.as_deref().expect("a timed run has a model");
        // SAFETY: the worker owns the model and does not drop it before this
        // function returns.
        let model = unsafe { &*model };
        let timeout_ps = self
            .shared
            .timeout
            .map(|t| t.as_nanos().min(u64::MAX as u128 / 2) as u64 * 1000);
        // The runnable ranks by (clock, rank).
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..n).map(|i| Reverse((0, i))).collect();
        let mut parked: Vec<Vec<usize>> = vec![Vec::new(); blocks];
        let mut returned: Vec<usize> = vec![0; blocks];
        let mut live = n;
        // Progress events so far, and per rank the epoch at which its last
        // resumption ended in a poll that was not fresh (it is stale while
        // that epoch is current); `stale` counts the stale ranks in `heap`.
        let mut epoch: u64 = 0;
        let mut stale_at: Vec<u64> = vec![u64::MAX; n];
        let mut stale = 0usize;
        // Per rank, the epoch when the resumption that its last suspension
        // for time interrupted began: a poll split by such suspensions read
        // memory over all of them, so it proves nothing unless no rank
        // progressed since the first began.
        let mut began: Vec<Option<u64>> = vec![None; n];
        // With a world timeout: the epoch at which the quiet ranks' clocks
        // were moved past it.
        let mut jumped_at: Option<u64> = None;
        // After that, quiet resumptions left before the deadlock is final.
        let mut late_polls = 0usize;
        // After an abort: the epoch at which the quiet ranks were re-polled.
        let mut repolled_at: Option<u64> = None;
        let mut released: Vec<usize> = Vec::new();
        runtime::set_model(true);
        while live > 0 {
            if heap.is_empty() || stale == heap.len() {
                // Every runnable rank failed its poll and wrote nothing since
                // the last progress. Final, unless a timed wait may still
                // expire: then the quiet ranks sleep past the timeout once
                // and poll on (a wait reads the clock every 16th poll).
                if late_polls > 0 && !heap.is_empty() {
                    late_polls -= 1;
                } else {
                    match timeout_ps {
                        Some(t) if !heap.is_empty() && jumped_at != Some(epoch) => {
                            jumped_at = Some(epoch);
                            late_polls = LATE_PASSES as usize * heap.len();
                            let latest = heap.iter().map(|r| r.0 .0).max().unwrap_or(0);
                            let wake = latest + t + 1_000_000;
                            let quiet: Vec<usize> = heap.drain().map(|r| r.0 .1).collect();
                            for i in quiet {
                                self.ctxs[i]
                                    .clock()
                                    .until(crate::model::TimeCategory::Sleeping, wake);
                                heap.push(Reverse((wake, i)));
                            }
                        }
                        // After an abort, every quiet rank polls
                        // RARE_READS_EVERY more times first (a wait reads
                        // the abort word only that often).
                        _ if !heap.is_empty() && self.aborted() && repolled_at != Some(epoch) => {
                            repolled_at = Some(epoch);
                            late_polls = RARE_READS_EVERY as usize * heap.len();
                        }
                        _ => {
                            self.finish_with(Outcome::Deadlock(self.report()));
                            break;
                        }
                    }
                }
            }
            let Some(Reverse((_, i))) = heap.pop() else {
                break;
            };
            if stale_at[i] == epoch {
                stale -= 1;
            }
            stale_at[i] = u64::MAX;
            let horizon = heap.peek().map_or(u64::MAX, |r| r.0 .0);
            self.ctxs[i].clock().set_horizon(horizon);
            let before = self.ctxs[i].clock().now();
            let began_at = *began[i].get_or_insert(epoch);
            let rank = self.first_rank + i as u32;
            let r = self.resume(i);
            let checked = match r {
                Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false } | Suspend::Time)) => true,
                Ok(CoroutineResult::Return(())) => self.shared.stacks.intact_full(rank as usize),
                _ => self.shared.stacks.intact(rank as usize),
            };
            if !checked {
                self.finish_with(Outcome::StackOverflow { rank });
                break;
            }
            // An interruption for time is not progress: the rank resumes
            // where it stopped, and its wait, if any, ends in a poll.
            let progress = !matches!(
                r,
                Ok(CoroutineResult::Yield(
                    Suspend::Poll { fresh: false } | Suspend::Time
                ))
            );
            if progress {
                epoch += 1;
                stale = 0;
            }
            if !matches!(r, Ok(CoroutineResult::Yield(Suspend::Time))) {
                began[i] = None;
            }
            if matches!(r, Ok(CoroutineResult::Yield(Suspend::Poll { .. })))
                && self.ctxs[i].clock().now() == before
            {
                // A poll that cost nothing (a profile of zeroes) would be
                // chosen again and again, starving the ranks it waits for.
                self.ctxs[i]
                    .clock()
                    .spend(crate::model::TimeCategory::Sleeping, 1000);
            }
            let now = self.ctxs[i].clock().now();
            match r {
                Ok(CoroutineResult::Yield(Suspend::Time | Suspend::Poll { fresh: true })) => {
                    heap.push(Reverse((now, i)));
                }
                Ok(CoroutineResult::Yield(Suspend::Poll { fresh: false })) => {
                    // Stale only if the whole poll saw one state of memory.
                    if began_at == epoch {
                        stale_at[i] = epoch;
                        stale += 1;
                    }
                    heap.push(Reverse((now, i)));
                }
                Ok(CoroutineResult::Yield(Suspend::BlockBarrier)) => {
                    let b = i / block_dim;
                    self.shared.parked[rank as usize].store(PARKED_BARRIER, Relaxed);
                    parked[b].push(i);
                    self.release_barrier_if_complete(&mut parked[b], returned[b], &mut released);
                    self.release_at(&mut released, now, model.block_barrier(), &mut heap);
                }
                Ok(CoroutineResult::Yield(Suspend::Warp)) => {
                    if let Err(message) = self.warp_arrive(i, &mut released) {
                        self.finish_with(Outcome::WarpMismatch { rank, message });
                        break;
                    }
                    self.release_at(&mut released, now, model.warp_op(), &mut heap);
                }
                Ok(CoroutineResult::Return(())) => {
                    live -= 1;
                    self.coros[i] = None;
                    let b = i / block_dim;
                    returned[b] += 1;
                    self.release_barrier_if_complete(&mut parked[b], returned[b], &mut released);
                    self.release_at(&mut released, now, model.block_barrier(), &mut heap);
                }
                Err(payload) => {
                    self.coros[i] = None;
                    let message = panic_message(payload.as_ref());
                    self.finish_with(Outcome::Panicked { rank, message });
                    break;
                }
            }
        }
        runtime::set_model(false);
        if live == 0 {
            let ranks: Vec<_> = self.ctxs.iter().map(|c| c.clock().time()).collect();
            let last = ranks.iter().map(|t| t.end_ps).max().unwrap_or(0);
            *self.shared.modelled.lock().unwrap_or_else(|e| e.into_inner()) = Some(ModelledTime {
                profile: model.name().to_string(),
                kernel_ps: model.kernel_ps(last),
                ranks,
                log: model.take_log(),
            });
        }
        self.finish_ranks();
    }

    /// Timing mode: the ranks in `released` (a block barrier or a warp
    /// collective completed) leave together, `cost` after the latest of
    /// their arrivals and `trigger` (the time of the event that completed
    /// it); they become runnable again.
    fn release_at(
        &self,
        released: &mut Vec<usize>,
        trigger: u64,
        cost: u64,
        heap: &mut BinaryHeap<Reverse<(u64, usize)>>,
    ) {
        if released.is_empty() {
            return;
        }
        let last = released
            .iter()
            .map(|&j| self.ctxs[j].clock().now())
            .fold(trigger, u64::max);
        let model = self.model.as_deref().expect("timing mode has a model");
        for j in released.drain(..) {
            let c = self.ctxs[j].clock();
            c.until(crate::model::TimeCategory::Barriers, last + cost);
            model.synchronised(self.ctxs[j].rank());
            heap.push(Reverse((c.now(), j)));
        }
    }

    /// Whether a rank aborted the world ([`world_aborted`]).
    fn aborted(&self) -> bool {
        world_aborted(self.shared)
    }

    /// Sleeps while the world stays quiet at `e0`. Returns false when the run
    /// ended (a deadlock, possibly declared here, or another worker's error).
    fn sleep(&self, e0: u64) -> bool {
        let s = self.shared;
        let mut g = lock(&s.coord);
        g.asleep_at[self.index] = Some(e0);
        s.sleepers.fetch_add(1, SeqCst);
        // This call follows a quiet pass (not yet counted as a late one).
        let mut after_pass = true;
        let keep_running = loop {
            if g.outcome.is_some() {
                break false;
            }
            let e = s.epoch.load(SeqCst);
            if e != e0 {
                break true;
            }
            // Without a timeout a quiet world is final. With one, it is final
            // once it stayed quiet past the deadline and every worker has
            // re-polled its ranks LATE_PASSES times since: enough for each
            // device wait to read the clock again, however slowly the
            // workers were scheduled.
            // After an abort, every worker re-polls its ranks
            // RARE_READS_EVERY times before the quiet is final (the same
            // late passes, with no deadline).
            let aborted = self.aborted();
            let (settled, my_part_done) = match (s.timeout, aborted) {
                (None, false) => (true, true),
                (t, _) => {
                    let now = Instant::now();
                    let grace = t.map_or(Duration::ZERO, |t| t + TIMEOUT_GRACE);
                    if !matches!(g.deadline, Some((de, _)) if de == e) {
                        g.deadline = Some((e, now + grace));
                        g.late_passes.fill(0);
                    }
                    let past = g.deadline.is_some_and(|(_, d)| now >= d);
                    if past && after_pass {
                        g.late_passes[self.index] += 1;
                    }
                    after_pass = false;
                    let needed = if t.is_some() {
                        LATE_PASSES
                    } else {
                        RARE_READS_EVERY
                    };
                    let done = |w: usize| !g.active[w] || g.late_passes[w] >= needed;
                    let all_done = (0..g.active.len()).all(done);
                    (past && all_done, done(self.index))
                }
            };
            let all_quiet = (0..g.active.len()).all(|w| !g.active[w] || g.asleep_at[w] == Some(e));
            if settled && all_quiet && !s.relayed {
                g.outcome = Some(Outcome::Deadlock(self.report()));
                s.stop.store(true, SeqCst);
                s.wake.notify_all();
                break false;
            }
            if s.timeout.is_none() && !aborted {
                g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
            } else {
                let (g2, w) = s
                    .wake
                    .wait_timeout(g, TIMEOUT_TICK)
                    .unwrap_or_else(|e| e.into_inner());
                g = g2;
                if w.timed_out() && g.outcome.is_none() && !my_part_done {
                    // Re-poll the ranks so that their clocks advance.
                    break true;
                }
            }
        };
        g.asleep_at[self.index] = None;
        s.sleepers.fetch_sub(1, SeqCst);
        keep_running
    }

    /// The deadlock report, built while every active worker sleeps (so no
    /// rank runs) under the coordination lock.
    fn report(&self) -> DeadlockReport {
        let s = self.shared;
        // SAFETY: the world memory is `layout.total` bytes, and no rank runs:
        // every worker with live ranks waits on the condvar (its last accesses
        // happen before it released the lock we now hold), the others have
        // no ranks left.
        let memory = unsafe { std::slice::from_raw_parts(s.world.0, s.layout.total) };
        DeadlockReport::from_world_parked(memory, s.layout, |r| {
            parked_state(s.parked[r as usize].load(Relaxed))
        })
    }

    /// Drops the coroutines of ranks that did not finish: unwinds their
    /// stacks (running the destructors of their frames) with their runtime
    /// installed; after a stack overflow, leaks them instead, since a
    /// corrupted stack cannot be unwound safely.
    fn drop_ranks(&mut self) {
        let leak = matches!(
            lock(&self.shared.coord).outcome,
            Some(Outcome::StackOverflow { .. })
        );
        for i in 0..self.coros.len() {
            let Some(coro) = self.coros[i].take() else {
                continue;
            };
            if leak {
                std::mem::forget(coro);
                continue;
            }
            let ctx: *const RankCtx = &self.ctxs[i];
            // SAFETY: as in `resume`.
            unsafe { runtime::set_current(Some(ctx as *const dyn RankRuntime)) };
            // A destructor that panics while the rank unwinds is dropped with it.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(coro)));
            // SAFETY: clearing needs no guarantee.
            unsafe { runtime::set_current(None) };
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}
