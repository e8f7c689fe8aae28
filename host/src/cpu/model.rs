//! The timing model (docs/model.md): a virtual clock per rank that every
//! access the rank makes through the shim advances by its cost in a
//! [`Profile`], and the memory effects that couple the clocks.
//!
//! - **Order.** The scheduler (`scheduler.rs`, "Timing mode") resumes the
//!   rank whose clock is the smallest, and a rank about to access shared
//!   memory while another runnable rank's clock is behind its own gives way
//!   first ([`Clock::must_wait`]). So the accesses of all ranks happen in
//!   the order of their virtual times, and a value a rank reads was written
//!   at a virtual time no later than the read.
//! - **Visibility.** A store or read-modify-write stamps its word with the
//!   time its value becomes visible to other SMs; a load of another rank's
//!   value that is not visible yet waits until it is (waiting).
//! - **Serialisation.** Read-modify-writes of one word queue behind each
//!   other at `rmw_interval_ns` each; all copies share the device's copy
//!   bandwidth, which bounds when each can end.
//! - **Independent loads.** Inside `shim::independent` loads are issued
//!   back to back and the batch waits once, for its last value: one
//!   latency plus `batch_load_ns` per load after the first
//!   (`shared_batch_load_ns` for a load of the block's shared memory; a
//!   vector load is one load, and so is a read-modify-write that does not
//!   acquire);
//!   outside, every load waits for its value before the next
//!   access (a chain of dependent loads costs its full length), except
//!   that a few volatile loads in a row overlap in the same way (an
//!   unrolled loop of `GlobalSlice::read`s).
//! - **L1.** Plain loads of a 128-byte line the rank loaded before hit L1
//!   (a few lines per rank); an acquire or a fence invalidates them, as on
//!   sm_70 and later. Atomic and volatile loads always go to L2.
//! - **Coalescing.** The lanes of a warp that make their n-th data access
//!   (a plain or volatile load or store, a copy's two ends) since they last
//!   met at a block barrier or warp collective are taken to make it
//!   together, as one instruction: every 128-byte line it touches beyond
//!   the first costs each of them `line_ns` ([`Model::coalesce`]).
//!
//! All times are integer picoseconds, so a run is a function of the
//! program, the world and the profile.

use crate::cpu::place::place;
use crate::model::{AccessLog, LoggedAccess, Profile, RankTime, TimeCategory};
use gpu_mpi_device::abi::layout::Layout;
use gpu_mpi_device::abi::shim::runtime::Access;
use gpu_mpi_device::abi::shim::Ordering;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// L1 lines remembered per rank.
const LINES: usize = 4;
/// Volatile loads that overlap when no other access comes between them:
/// what the compiler issues back to back in a loop it unrolled (LLVM
/// unrolls `native_pi_p2p_2`'s sum of `GlobalSlice::read`s by 8, and
/// ptxas issues an unrolled body's loads before its adds).
const VOLATILE_RUN: u32 = 8;
/// Bytes of an L1 line.
const LINE_SHIFT: u32 = 7;
/// Lanes of a warp.
const LANES: usize = 32;
/// A warp's data accesses the model keeps for its lanes to meet at: the
/// lanes that run behind are rarely more than one or two accesses behind
/// (the scheduler runs the rank whose clock is smallest).
const WARP_ACCESSES: usize = 8;

/// A category's index in [`RankTime::spent_ps`].
const fn index(c: TimeCategory) -> usize {
    match c {
        TimeCategory::Loads => 0,
        TimeCategory::Stores => 1,
        TimeCategory::Atomics => 2,
        TimeCategory::Fences => 3,
        TimeCategory::Waiting => 4,
        TimeCategory::Barriers => 5,
        TimeCategory::Copying => 6,
        TimeCategory::Sleeping => 7,
        TimeCategory::Issue => 8,
    }
}

/// Nanoseconds to picoseconds.
fn ps(ns: f64) -> u64 {
    (ns * 1e3).round() as u64
}

/// A profile's costs in picoseconds.
struct Costs {
    load_hit: u64,
    load: u64,
    batch_load: u64,
    shared_batch_load: u64,
    acquire: u64,
    store: u64,
    visible: u64,
    release: u64,
    fence: u64,
    rmw: u64,
    rmw_interval: u64,
    sleep_min: u64,
    block_barrier: u64,
    warp_op: u64,
    /// Picoseconds per byte copied by one thread (`copy_bytes`).
    thread_ps_per_byte: f64,
    /// The same with `copy_wide`.
    wide_ps_per_byte: f64,
    /// Picoseconds per byte moved (read or written) by the device.
    device_ps_per_byte: f64,
    launch: u64,
    issue: u64,
    library: u64,
    shared: u64,
    line: u64,
    cta_fence: u64,
}

/// What the ranks of a timed run share: the costs and the state of memory
/// that couples their clocks. Used by one worker thread only.
pub(crate) struct Model {
    name: String,
    costs: Costs,
    /// Per word written: when its value becomes visible to other SMs, and
    /// the rank that wrote it (which sees it at once).
    visible: RefCell<HashMap<usize, (u64, u32)>>,
    /// Per word: when its read-modify-write unit is free again.
    rmw_free: RefCell<HashMap<usize, u64>>,
    /// When the device's copy bandwidth is free again.
    copy_free: Cell<u64>,
    /// The access log asked for, and the world it names places in.
    log: Option<(LogOf, RefCell<AccessLog>)>,
    /// Threads per block: which ranks are lanes of one warp.
    block_dim: u32,
    /// Per warp (block-major index): what its lanes' recent data accesses
    /// touched. Allocated once, off the ranks' stacks (empty when
    /// `line_ns` is 0).
    warps: RefCell<Vec<Warp>>,
}

/// One data access of a warp's lanes, as far as they have made it.
#[derive(Clone, Copy)]
struct WarpAccess {
    /// The lanes' meeting count ([`Warp::met`]) and access number.
    key: (u32, u32),
    /// The lanes that made it.
    lanes: u32,
    /// The lines it touched (line address + 1), `touched` of them.
    lines: [usize; LANES],
    touched: usize,
}

/// What the model knows of one warp's lanes for [`Model::coalesce`].
#[derive(Clone)]
struct Warp {
    /// Per lane: block barriers and warp collectives it left.
    met: [u32; LANES],
    /// Per lane: data accesses since then.
    accesses: [u32; LANES],
    /// Per lane: line time it owes, for loads and for stores, paid at its
    /// next access ([`Model::settle`]).
    owed: [(u64, u64); LANES],
    /// The recent accesses, by access number modulo their count.
    recent: [WarpAccess; WARP_ACCESSES],
}

/// Which rank's accesses a [`Model`] logs, and the world memory whose
/// places the log names.
pub(crate) struct LogOf {
    /// The rank.
    pub(crate) rank: u32,
    /// The address of the world memory's first byte.
    pub(crate) world: usize,
    /// Its layout.
    pub(crate) layout: Layout,
}

impl Model {
    /// The model of `profile` for a world of `blocks` blocks of
    /// `block_dim` threads.
    pub(crate) fn new(profile: &Profile, log: Option<LogOf>, blocks: u32, block_dim: u32) -> Model {
        let p = profile;
        let block_dim = block_dim.max(1);
        let warps = if p.line_ns > 0.0 {
            let empty = Warp {
                met: [0; LANES],
                accesses: [0; LANES],
                owed: [(0, 0); LANES],
                recent: [WarpAccess {
                    key: (u32::MAX, 0),
                    lanes: 0,
                    lines: [0; LANES],
                    touched: 0,
                }; WARP_ACCESSES],
            };
            vec![empty; blocks as usize * block_dim.div_ceil(LANES as u32) as usize]
        } else {
            Vec::new()
        };
        Model {
            name: p.name.clone(),
            costs: Costs {
                load_hit: ps(p.load_hit_ns),
                load: ps(p.load_ns),
                batch_load: ps(p.batch_load_ns),
                shared_batch_load: ps(p.shared_batch_load_ns),
                acquire: ps(p.acquire_ns),
                store: ps(p.store_ns),
                visible: ps(p.visible_ns),
                release: ps(p.release_ns),
                fence: ps(p.fence_ns),
                rmw: ps(p.rmw_ns),
                rmw_interval: ps(p.rmw_interval_ns),
                sleep_min: ps(p.sleep_min_ns),
                block_barrier: ps(p.block_barrier_ns),
                warp_op: ps(p.warp_op_ns),
                thread_ps_per_byte: 1e3 / p.copy_thread_gbps,
                wide_ps_per_byte: 1e3 / p.copy_wide_gbps,
                device_ps_per_byte: 1e3 / p.copy_device_gbps,
                launch: ps(p.launch_ns),
                issue: ps(p.issue_ns),
                library: ps(p.library_ns),
                shared: ps(p.shared_ns),
                line: ps(p.line_ns),
                cta_fence: ps(p.cta_fence_ns),
            },
            visible: RefCell::new(HashMap::new()),
            rmw_free: RefCell::new(HashMap::new()),
            copy_free: Cell::new(0),
            block_dim,
            warps: RefCell::new(warps),
            log: log.map(|of| {
                let rank = of.rank;
                (
                    of,
                    RefCell::new(AccessLog {
                        rank,
                        accesses: Vec::new(),
                        dropped: 0,
                    }),
                )
            }),
        }
    }

    /// The access log, if one was asked for (once).
    pub(crate) fn take_log(&self) -> Option<AccessLog> {
        let (of, log) = self.log.as_ref()?;
        Some(log.replace(AccessLog {
            rank: of.rank,
            accesses: Vec::new(),
            dropped: 0,
        }))
    }

    /// The profile's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The modelled kernel time in picoseconds when the last rank returned
    /// at `last_end`.
    pub(crate) fn kernel_ps(&self, last_end: u64) -> u64 {
        self.costs.launch + last_end
    }

    /// What a block barrier costs once its last rank arrived.
    pub(crate) fn block_barrier(&self) -> u64 {
        self.costs.block_barrier
    }

    /// What a warp collective costs once its last lane arrived.
    pub(crate) fn warp_op(&self) -> u64 {
        self.costs.warp_op
    }

    /// When a value written to `addr` is visible to `rank` (0: always).
    fn visible_at(&self, addr: usize, rank: u32) -> u64 {
        match self.visible.borrow().get(&addr) {
            Some(&(t, writer)) if writer != rank => t,
            _ => 0,
        }
    }

    fn written(&self, addr: usize, at: u64, rank: u32) {
        self.visible.borrow_mut().insert(addr, (at, rank));
    }

    /// Charges `access` by `rank` to its `clock` (whose turn it is: see
    /// [`Clock::must_wait`]).
    pub(crate) fn charge(&self, rank: u32, clock: &Clock, access: Access) {
        match &self.log {
            Some((of, log)) if of.rank == rank => {
                let at = clock.now();
                self.charge_access(rank, clock, access);
                let mut log = log.borrow_mut();
                if log.accesses.len() < AccessLog::MAX_ACCESSES {
                    let (what, place) = describe(of, clock, &access);
                    log.accesses.push(LoggedAccess {
                        at_ps: at,
                        cost_ps: clock.now() - at,
                        what,
                        place,
                    });
                } else {
                    log.dropped += 1;
                }
            }
            _ => self.charge_access(rank, clock, access),
        }
    }

    fn charge_access(&self, rank: u32, clock: &Clock, access: Access) {
        let c = &self.costs;
        let volatile_read = matches!(access, Access::Volatile { write: false, .. });
        if !volatile_read {
            self.end_volatile_run(clock);
        }
        self.settle(rank, clock);
        match access {
            // Batches nest (a batch of vector loads, each a batch of its
            // words on the emulator): the outermost one decides when the
            // rank waits, and a vector is one load of it.
            Access::BatchBegin { vector } => {
                let depth = clock.batch_depth.replace(clock.batch_depth.get() + 1);
                if depth == 0 {
                    clock.batch.set(Some(clock.now()));
                    clock.batch_loaded.set(false);
                }
                if vector {
                    clock.vector.set(Some(depth + 1));
                    clock.vector_loaded.set(false);
                }
                return;
            }
            Access::BatchEnd => {
                let depth = clock.batch_depth.get().saturating_sub(1);
                clock.batch_depth.set(depth);
                if clock.vector.get().is_some_and(|v| v > depth) {
                    clock.vector.set(None);
                }
                if depth == 0 {
                    if let Some(done) = clock.batch.take() {
                        clock.until(TimeCategory::Loads, done);
                    }
                }
                return;
            }
            Access::Sleep { ns } => {
                clock.spend(TimeCategory::Sleeping, ps(f64::from(ns)).max(c.sleep_min));
                return;
            }
            _ => {}
        }
        // A vector access is one instruction on the GPU (`ld.v4`, `st.v4`):
        // its words after the first cost no issue of their own.
        if clock.vector.get().is_none() || !clock.vector_loaded.get() {
            clock.spend(TimeCategory::Issue, c.issue);
        }
        if clock.in_block_shared(&access) {
            self.charge_block_shared(rank, clock, access);
            return;
        }
        match access {
            Access::Load { order, addr } => {
                let acquire = matches!(order, Ordering::Acquire | Ordering::AcqRel);
                let ready = self.visible_at(addr, rank);
                self.load(clock, ready, c.load, c.batch_load);
                if acquire {
                    clock.spend(TimeCategory::Fences, c.acquire);
                    clock.invalidate_l1();
                }
            }
            // Operands from the constant bank (`shim::descriptors`): an
            // instruction each (the first's is above), and no load: ptxas
            // folds the fixed offset into the instruction that uses the
            // value, or loads it from the constant cache, which an acquire
            // does not empty.
            Access::Descriptor { reads, .. } => {
                clock.spend(TimeCategory::Issue, c.issue * u64::from(reads.saturating_sub(1)));
            }
            Access::Plain { addr, bytes, write } | Access::Private { addr, bytes, write } => {
                if matches!(access, Access::Private { .. }) {
                    clock.spend(TimeCategory::Issue, c.library);
                } else {
                    self.coalesce(rank, clock, addr, write);
                }
                if write {
                    clock.spend(TimeCategory::Stores, c.store);
                } else {
                    self.plain_load(clock, addr, bytes);
                }
            }
            // `prefetch.L1` of the rank's own memory: an instruction (above),
            // and the line arrives as a load's would (inside a batch the batch's end
            // waits for it, as it would for a load of the line), after which
            // plain loads of it hit L1.
            Access::Prefetch { addr, bytes } => self.plain_load(clock, addr, bytes),
            // `ld.volatile` is a strong system-scope load, which L1 never
            // serves on sm_70 and later: a round trip to L2 whatever the
            // rank loaded before. Volatile loads with nothing between them
            // overlap, up to `VOLATILE_RUN` (an unrolled loop's loads, issued
            // before their uses); any other access waits for them first: a
            // store of the loaded value (an element copy) makes each load
            // wait alone.
            Access::Volatile { addr, write, .. } => {
                self.coalesce(rank, clock, addr, write);
                if write {
                    clock.spend(TimeCategory::Stores, c.store);
                } else {
                    if clock.batch_depth.get() == 0 {
                        if clock.volatile_run.get() == VOLATILE_RUN {
                            self.end_volatile_run(clock);
                        }
                        if clock.volatile_run.replace(clock.volatile_run.get() + 1) == 0 {
                            clock.batch.set(Some(clock.now()));
                            clock.batch_loaded.set(false);
                        }
                    }
                    self.load(clock, 0, c.load, c.batch_load);
                }
            }
            Access::Store { order, addr } => {
                if matches!(order, Ordering::Release | Ordering::AcqRel) {
                    clock.spend(TimeCategory::Fences, c.release);
                }
                // A vector store's words after its first are the same store.
                let same_store = clock.vector.get().is_some() && clock.vector_loaded.replace(true);
                if !same_store {
                    clock.spend(TimeCategory::Stores, c.store);
                }
                self.written(addr, clock.now() + c.visible, rank);
            }
            // Performed at L2, where the word's latest value is: it waits
            // for the word's earlier read-modify-writes only.
            Access::Rmw { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, Some(c.rmw), c.visible, false)
            }
            // A block-scope one in global memory: as `Rmw`, with the
            // block's fences.
            Access::BlockRmw { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, Some(c.rmw), c.visible, true)
            }
            // As `Rmw`, but the rank issues it as a store and goes on.
            Access::Reduce { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, None, c.visible, false)
            }
            Access::Fence { .. } => {
                clock.spend(TimeCategory::Fences, c.fence);
                clock.invalidate_l1();
            }
            Access::Copy {
                bytes,
                wide,
                src,
                dst,
            } => {
                if bytes == 0 {
                    return;
                }
                self.coalesce(rank, clock, src, false);
                self.coalesce(rank, clock, dst, true);
                let now = clock.now();
                let per_byte = if wide {
                    c.wide_ps_per_byte
                } else {
                    c.thread_ps_per_byte
                };
                let own = c.load + (bytes as f64 * per_byte).round() as u64;
                let start = now.max(self.copy_free.get());
                let device_end = start + (2.0 * bytes as f64 * c.device_ps_per_byte).round() as u64;
                self.copy_free.set(device_end);
                clock.spend(TimeCategory::Copying, own);
                clock.until(TimeCategory::Waiting, device_end);
            }
            Access::BatchBegin { .. } | Access::BatchEnd | Access::Sleep { .. } => {}
        }
    }

    /// Charges an access of the block's shared memory: each load, store or
    /// atomic takes `shared_ns` and a store is seen by the block's other
    /// ranks that much later; a batch's loads follow each other at
    /// `shared_batch_load_ns`; no L2, no device bandwidth. Atomics on one
    /// word queue behind each other as at L2 (`rmw_interval_ns`: no figure
    /// of shared memory's own rate backs another value). Device-scope
    /// orderings still cost their fences; a block-scope atomic's cost
    /// `cta_fence_ns`. A copy to or from it is priced
    /// as if its other end were in registers or L1 (an origin buffer the
    /// rank just wrote): the model does not look at that end.
    fn charge_block_shared(&self, rank: u32, clock: &Clock, access: Access) {
        let c = &self.costs;
        let releases = |order: Ordering| matches!(order, Ordering::Release | Ordering::AcqRel);
        let acquires = |order: Ordering| matches!(order, Ordering::Acquire | Ordering::AcqRel);
        match access {
            Access::Load { order, addr } => {
                let ready = self.visible_at(addr, rank);
                self.load(clock, ready, c.shared, c.shared_batch_load);
                if acquires(order) {
                    clock.spend(TimeCategory::Fences, c.acquire);
                    clock.invalidate_l1();
                }
            }
            Access::Plain { addr, write, .. } | Access::Volatile { addr, write, .. } => {
                if write {
                    clock.spend(TimeCategory::Stores, c.store);
                    self.written(addr, clock.now() + c.shared, rank);
                } else {
                    self.load(clock, self.visible_at(addr, rank), c.shared, c.shared_batch_load);
                }
            }
            Access::Store { order, addr } => {
                if releases(order) {
                    clock.spend(TimeCategory::Fences, c.release);
                }
                clock.spend(TimeCategory::Stores, c.store);
                self.written(addr, clock.now() + c.shared, rank);
            }
            Access::Reduce { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, None, c.shared, false)
            }
            Access::Rmw { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, Some(c.shared), c.shared, false)
            }
            Access::BlockRmw { order, addr } => {
                self.read_modify_write(rank, clock, order, addr, Some(c.shared), c.shared, true)
            }
            Access::Copy { bytes, wide, src, .. } => {
                if bytes == 0 {
                    return;
                }
                let per_byte = if wide {
                    c.wide_ps_per_byte
                } else {
                    c.thread_ps_per_byte
                };
                let ready = self.visible_at(src, rank);
                clock.until(TimeCategory::Waiting, ready);
                clock.spend(
                    TimeCategory::Copying,
                    c.shared + (bytes as f64 * per_byte).round() as u64,
                );
            }
            Access::Private { .. }
            | Access::Prefetch { .. }
            | Access::Descriptor { .. }
            | Access::Fence { .. }
            | Access::Sleep { .. }
            | Access::BatchBegin { .. }
            | Access::BatchEnd => {}
        }
    }

    /// A read-modify-write of the word at `addr` by `rank`: it queues
    /// behind the word's earlier ones (`rmw_interval` apart), its value is
    /// seen by other ranks `seen` after it is performed, and the rank
    /// waits `latency` for its old value (`None`: a `red`, which the rank
    /// issues as a store and does not wait for; inside a batch, one that
    /// does not acquire waits with the batch's loads). With `block` its
    /// orderings have block scope: each half costs `cta_fence`, and its
    /// acquire leaves L1 alone (the block's ranks share their SM's L1).
    #[allow(clippy::too_many_arguments)] // one access's fields and its costs
    fn read_modify_write(
        &self,
        rank: u32,
        clock: &Clock,
        order: Ordering,
        addr: usize,
        latency: Option<u64>,
        seen: u64,
        block: bool,
    ) {
        let c = &self.costs;
        if matches!(order, Ordering::Release | Ordering::AcqRel) {
            clock.spend(TimeCategory::Fences, if block { c.cta_fence } else { c.release });
        }
        let free = self.rmw_free.borrow().get(&addr).copied().unwrap_or(0);
        let start = clock.now().max(free);
        self.rmw_free.borrow_mut().insert(addr, start + c.rmw_interval);
        self.written(addr, start + seen, rank);
        let acquires = matches!(order, Ordering::Acquire | Ordering::AcqRel);
        match latency {
            // In a batch, one that does not acquire is one of its loads:
            // the rank issues the batch's later loads without waiting for
            // its old value (an `atom` whose result is used after them).
            Some(latency) if !acquires && clock.batch.get().is_some() => {
                self.load(clock, start, latency, c.batch_load);
            }
            Some(latency) => {
                clock.until(TimeCategory::Waiting, start);
                clock.spend(TimeCategory::Atomics, latency);
                if acquires && block {
                    clock.spend(TimeCategory::Fences, c.cta_fence);
                } else if acquires {
                    clock.spend(TimeCategory::Fences, c.acquire);
                    clock.invalidate_l1();
                }
            }
            None => clock.spend(TimeCategory::Stores, c.store),
        }
    }

    /// A load whose value is visible at `ready` and takes `latency`: inside
    /// a batch it only moves the batch's end, to its value's arrival and,
    /// after the batch's first load, to `batch_load` past the end so far
    /// (the GPU does not overlap a batch's loads fully: docs/model.md);
    /// outside, the rank waits.
    /// A plain load of `bytes` at `addr`: an L1 hit if its line is one the
    /// rank holds, else a trip to L2.
    /// Waits for the values of the rank's run of volatile loads, if one
    /// is open: before any other access, a clock read, a suspension other
    /// than giving way, and the rank's return.
    pub(crate) fn end_volatile_run(&self, clock: &Clock) {
        if clock.volatile_run.replace(0) != 0 {
            if let Some(done) = clock.batch.take() {
                clock.until(TimeCategory::Loads, done);
            }
        }
    }

    /// The warp and lane of `rank`.
    fn lane_of(&self, rank: u32) -> (u32, usize) {
        let (block, thread) = (rank / self.block_dim, rank % self.block_dim);
        let warp = block * self.block_dim.div_ceil(LANES as u32) + thread / LANES as u32;
        (warp, (thread % LANES as u32) as usize)
    }

    /// A data access of `rank` to the line of `addr` (`write`: a store),
    /// taken to be made by its warp's lanes together: the lanes' n-th data
    /// access since they last met at a block barrier or a warp collective
    /// ([`Model::synchronised`]) is one instruction of the warp. Each line
    /// the instruction touches beyond its first costs every lane that made
    /// it `line_ns`, owed until its next access ([`Model::settle`]): a lane
    /// that makes it later owes for the lines before it at once, and a new
    /// line adds to what every lane in it owes. Lanes in step therefore pay
    /// what the GPU's lockstep warp pays for an access split into several
    /// transactions, whichever lane the scheduler ran first. Lanes that are
    /// not in step (different paths) meet at accesses that are not the same
    /// instruction: the model charges such a pair as one access of two
    /// lines, where the GPU runs the two paths in turn (divergence, which
    /// the model does not see either).
    fn coalesce(&self, rank: u32, clock: &Clock, addr: usize, write: bool) {
        let line = self.costs.line;
        if line == 0 || clock.unlined(addr) {
            return;
        }
        let (w, lane) = self.lane_of(rank);
        let mut warps = self.warps.borrow_mut();
        let Some(warp) = warps.get_mut(w as usize) else {
            return;
        };
        let key = (warp.met[lane], warp.accesses[lane]);
        warp.accesses[lane] += 1;
        let at = &mut warp.recent[key.1 as usize % WARP_ACCESSES];
        if at.key != key || at.lanes & (1 << lane) != 0 {
            at.key = key;
            at.lanes = 0;
            at.touched = 0;
        }
        let owe = |owed: &mut (u64, u64), ps: u64| {
            if write {
                owed.1 += ps;
            } else {
                owed.0 += ps;
            }
        };
        if at.touched > 1 {
            owe(&mut warp.owed[lane], (at.touched as u64 - 1) * line);
        }
        at.lanes |= 1 << lane;
        let tag = (addr >> LINE_SHIFT) + 1;
        if !at.lines[..at.touched].contains(&tag) {
            at.lines[at.touched] = tag;
            at.touched += 1;
            if at.touched > 1 {
                for l in 0..LANES {
                    if at.lanes & (1 << l) != 0 {
                        owe(&mut warp.owed[l], line);
                    }
                }
            }
        }
    }

    /// Pays what `rank` owes for its warp's accesses' further lines
    /// ([`Model::coalesce`]): before its next access, a clock read, a wait
    /// for another rank and its return.
    pub(crate) fn settle(&self, rank: u32, clock: &Clock) {
        if self.costs.line == 0 {
            return;
        }
        let (w, lane) = self.lane_of(rank);
        let mut warps = self.warps.borrow_mut();
        if let Some(warp) = warps.get_mut(w as usize) {
            let (loads, stores) = core::mem::take(&mut warp.owed[lane]);
            clock.spend(TimeCategory::Loads, loads);
            clock.spend(TimeCategory::Stores, stores);
        }
    }

    /// `rank` left a block barrier or warp collective with the other lanes
    /// of its warp there: their data accesses count from there, and what
    /// they owed is paid (the barrier waited for the lane that made the
    /// last access, which owed as much).
    pub(crate) fn synchronised(&self, rank: u32) {
        if self.costs.line == 0 {
            return;
        }
        let (w, lane) = self.lane_of(rank);
        if let Some(warp) = self.warps.borrow_mut().get_mut(w as usize) {
            warp.met[lane] += 1;
            warp.accesses[lane] = 0;
            warp.owed[lane] = (0, 0);
        }
    }

    fn plain_load(&self, clock: &Clock, addr: usize, bytes: usize) {
        let hit = clock.touch_line(addr, bytes);
        let c = &self.costs;
        self.load(clock, 0, if hit { c.load_hit } else { c.load }, c.batch_load);
    }

    /// A load whose value is `ready` to be read at that time and arrives
    /// `latency` after its issue; in a batch, no earlier than `step` after
    /// the batch's end so far (`batch_load` at L2, `shared_batch_load` in
    /// the block's shared memory).
    fn load(&self, clock: &Clock, ready: u64, latency: u64, step: u64) {
        let issue = clock.now();
        match clock.batch.get() {
            Some(done) => {
                let arrives = issue.max(ready) + latency;
                // A vector's words after its first are the same load.
                let same_load = clock.vector.get().is_some() && clock.vector_loaded.replace(true);
                let end = if clock.batch_loaded.replace(true) && !same_load {
                    (done + step).max(arrives)
                } else {
                    done.max(arrives)
                };
                clock.batch.set(Some(end));
            }
            None => {
                clock.until(TimeCategory::Waiting, ready);
                clock.spend(TimeCategory::Loads, latency);
            }
        }
    }
}

/// What `access` is and where it went, for an [`AccessLog`].
fn describe(of: &LogOf, clock: &Clock, access: &Access) -> (String, String) {
    let order = |o: &Ordering| match o {
        Ordering::Relaxed => "relaxed",
        Ordering::Release => "release",
        Ordering::Acquire => "acquire",
        Ordering::AcqRel => "acq_rel",
    };
    // Where `addr` lies: in the world, the block's shared memory (its
    // window memory or the library's block words), or elsewhere.
    let at = |addr: usize| {
        addr.checked_sub(of.world)
            .and_then(|offset| place(&of.layout, offset))
            .unwrap_or_else(|| {
                if clock.is_block_shared(addr) {
                    "the block's shared memory".to_string()
                } else {
                    "outside the world".to_string()
                }
            })
    };
    let rw = |write: bool| if write { "write" } else { "read" };
    match access {
        Access::Load { order: o, addr } => (format!("load {}", order(o)), at(*addr)),
        Access::Store { order: o, addr } => (format!("store {}", order(o)), at(*addr)),
        Access::Rmw { order: o, addr } => (format!("rmw {}", order(o)), at(*addr)),
        Access::BlockRmw { order: o, addr } => (format!("rmw.cta {}", order(o)), at(*addr)),
        Access::Reduce { order: o, addr } => (format!("red {}", order(o)), at(*addr)),
        Access::Fence { order: o } => (format!("fence {}", order(o)), String::new()),
        Access::Plain { addr, bytes, write } => (format!("plain {} {bytes} B", rw(*write)), at(*addr)),
        Access::Volatile { addr, bytes, write } => (format!("volatile {} {bytes} B", rw(*write)), at(*addr)),
        Access::Private { addr, bytes, write } => (format!("private {} {bytes} B", rw(*write)), at(*addr)),
        Access::Prefetch { addr, bytes } => (format!("prefetch {bytes} B"), at(*addr)),
        Access::Copy { bytes, src, dst, .. } => {
            (format!("copy {bytes} B"), format!("{} -> {}", at(*src), at(*dst)))
        }
        Access::Sleep { ns } => (format!("sleep {ns} ns"), String::new()),
        Access::Descriptor { addr, reads } => (format!("{reads} descriptor reads"), at(*addr)),
        Access::BatchBegin { vector: false } => ("batch begin".to_string(), String::new()),
        Access::BatchBegin { vector: true } => ("vector begin".to_string(), String::new()),
        Access::BatchEnd => ("batch end".to_string(), String::new()),
    }
}

/// Whether `access` touches shared memory, so that it must wait for the
/// ranks whose clocks are behind.
pub(crate) fn ordered(access: &Access) -> bool {
    !matches!(
        access,
        Access::BatchBegin { .. }
            | Access::BatchEnd
            | Access::Sleep { .. }
            | Access::Fence { .. }
            | Access::Private { .. }
            | Access::Prefetch { .. }
            | Access::Descriptor { .. }
    )
}

/// One rank's virtual clock.
pub(crate) struct Clock {
    now: Cell<u64>,
    /// The smallest clock of the other runnable ranks when this rank was
    /// resumed (they do not run meanwhile).
    horizon: Cell<u64>,
    spent: [Cell<u64>; 9],
    /// Inside `shim::independent`: when the batch's last value arrives.
    batch: Cell<Option<u64>>,
    /// How many `shim::independent` calls are open (they nest).
    batch_depth: Cell<u32>,
    /// Whether the outermost batch has had a load.
    batch_loaded: Cell<bool>,
    /// The depth of the open vector load's batch, if one is open.
    vector: Cell<Option<u32>>,
    /// Whether the open vector load has had a word.
    vector_loaded: Cell<bool>,
    /// Volatile loads in the open run (`Model::end_volatile_run`), which
    /// uses `batch` when no `shim::independent` batch is open.
    volatile_run: Cell<u32>,
    /// L1 lines (address >> 7, plus 1; 0 is empty), replaced in turn.
    lines: [Cell<usize>; LINES],
    next_line: Cell<usize>,
    /// The rank's block's shared window memory: its first byte and the
    /// byte after it (empty: none).
    block_shared: Cell<(usize, usize)>,
    /// The block's library words, as `block_shared`.
    block_words: Cell<(usize, usize)>,
    /// Memory whose accesses [`Model::coalesce`] leaves alone, as ranges
    /// like `block_shared`: the rank's stack (local memory, which the GPU
    /// interleaves across a warp's lanes, so that their accesses at one
    /// offset share lines; the emulator gives each rank a stack of its own)
    /// and its block's shared scratch (`.shared`: banks, not lines). Both
    /// lie where the host's allocator put them, so their lines would not
    /// be the same from one run to the next either.
    unlined: [Cell<(usize, usize)>; 2],
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            now: Cell::new(0),
            horizon: Cell::new(u64::MAX),
            spent: Default::default(),
            batch: Cell::new(None),
            batch_depth: Cell::new(0),
            batch_loaded: Cell::new(false),
            vector: Cell::new(None),
            vector_loaded: Cell::new(false),
            volatile_run: Cell::new(0),
            lines: Default::default(),
            next_line: Cell::new(0),
            block_shared: Cell::new((0, 0)),
            block_words: Cell::new((0, 0)),
            unlined: Default::default(),
        }
    }

    /// Tells the clock where its rank's stack and its block's shared
    /// scratch are (`Clock::unlined`).
    pub(crate) fn set_unlined(&self, stack: (usize, usize), scratch: (usize, usize)) {
        self.unlined[0].set(stack);
        self.unlined[1].set(scratch);
    }

    /// Whether `addr` lies in the rank's stack or its block's scratch.
    fn unlined(&self, addr: usize) -> bool {
        self.unlined.iter().any(|r| {
            let (start, end) = r.get();
            (start..end).contains(&addr)
        })
    }

    /// Tells the clock where its rank's block's shared window memory is
    /// (`bytes` from `start`), which [`Model::charge`] prices apart.
    pub(crate) fn set_block_shared(&self, start: usize, bytes: usize) {
        self.block_shared.set((start, start + bytes));
    }

    /// Tells the clock where its rank's block's library words are
    /// (`bytes` from `start`: `shim::block_words`), priced as the shared
    /// window memory is.
    pub(crate) fn set_block_words(&self, start: usize, bytes: usize) {
        self.block_words.set((start, start + bytes));
    }

    /// Whether `access` is one of the block's shared memory (its window
    /// memory or its library words): its address (a copy's source or
    /// destination) lies in it.
    fn in_block_shared(&self, access: &Access) -> bool {
        let inside = |a: usize| self.is_block_shared(a);
        match *access {
            Access::Load { addr, .. }
            | Access::Store { addr, .. }
            | Access::Rmw { addr, .. }
            | Access::BlockRmw { addr, .. }
            | Access::Reduce { addr, .. }
            | Access::Plain { addr, .. }
            | Access::Volatile { addr, .. } => inside(addr),
            Access::Copy { src, dst, .. } => inside(src) || inside(dst),
            _ => false,
        }
    }

    /// Whether `addr` lies in the block's shared memory (its window memory
    /// or its library words).
    fn is_block_shared(&self, addr: usize) -> bool {
        let (start, end) = self.block_shared.get();
        let (words, words_end) = self.block_words.get();
        (start..end).contains(&addr) || (words..words_end).contains(&addr)
    }

    /// The clock, in picoseconds.
    pub(crate) fn now(&self) -> u64 {
        self.now.get()
    }

    /// Sets the horizon for the next resumption.
    pub(crate) fn set_horizon(&self, horizon: u64) {
        self.horizon.set(horizon);
    }

    /// Whether the rank must let another rank run before its next access to
    /// shared memory: its clock passed the horizon.
    pub(crate) fn must_wait(&self) -> bool {
        self.now.get() > self.horizon.get()
    }

    /// Spends `ps` on `category`.
    pub(crate) fn spend(&self, category: TimeCategory, ps: u64) {
        let s = &self.spent[index(category)];
        s.set(s.get() + ps);
        self.now.set(self.now.get() + ps);
    }

    /// Spends on `category` until `t`, if `t` is ahead.
    pub(crate) fn until(&self, category: TimeCategory, t: u64) {
        if let Some(d) = t.checked_sub(self.now.get()) {
            self.spend(category, d);
        }
    }

    fn invalidate_l1(&self) {
        for l in &self.lines {
            l.set(0);
        }
    }

    /// Whether `bytes` at `addr` lie in a remembered line; remembers it.
    fn touch_line(&self, addr: usize, bytes: usize) -> bool {
        let first = (addr >> LINE_SHIFT) + 1;
        let last = ((addr + bytes.max(1) - 1) >> LINE_SHIFT) + 1;
        let hit = first == last && self.lines.iter().any(|l| l.get() == first);
        if !hit {
            let n = self.next_line.get();
            self.lines[n].set(first);
            self.next_line.set((n + 1) % LINES);
        }
        hit
    }

    /// The rank's time when it returned.
    pub(crate) fn time(&self) -> RankTime {
        RankTime {
            end_ps: self.now.get(),
            spent_ps: std::array::from_fn(|i| self.spent[i].get()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::new(Profile::h100(), None, 2, 32)
    }

    fn relaxed_load(addr: usize) -> Access {
        Access::Load {
            order: Ordering::Relaxed,
            addr,
        }
    }

    /// A plain 8-byte load or store.
    fn plain(addr: usize, write: bool) -> Access {
        Access::Plain {
            addr,
            bytes: 8,
            write,
        }
    }

    /// A volatile 8-byte load or store (a `GlobalSlice` element).
    fn volatile(addr: usize, write: bool) -> Access {
        Access::Volatile {
            addr,
            bytes: 8,
            write,
        }
    }

    #[test]
    fn a_chain_of_loads_costs_its_length_and_a_batch_one_latency_and_a_step_per_later_load() {
        let m = model();
        let p = Profile::h100();
        let chain = Clock::new();
        for i in 0..8 {
            m.charge(
                0,
                &chain,
                Access::Load {
                    order: Ordering::Relaxed,
                    addr: 64 * i,
                },
            );
        }
        let batch = Clock::new();
        m.charge(0, &batch, Access::BatchBegin { vector: false });
        for i in 0..8 {
            m.charge(
                0,
                &batch,
                Access::Load {
                    order: Ordering::Relaxed,
                    addr: 64 * i,
                },
            );
        }
        m.charge(0, &batch, Access::BatchEnd);
        assert_eq!(chain.now(), 8 * ps(p.load_ns + p.issue_ns));
        assert_eq!(chain.now(), 1_984_000);
        // The first value arrives at issue + load; each later load's value
        // batch_load_ns after the one before (27.6 ns > issue_ns: its issue
        // is not what holds it back).
        assert_eq!(batch.now(), ps(p.issue_ns + p.load_ns) + 7 * ps(p.batch_load_ns));
        assert_eq!(batch.now(), 441_200);
        assert_eq!(
            batch.time().spent_ps[index(TimeCategory::Issue)],
            8 * ps(p.issue_ns)
        );
        assert_eq!(chain.time().spent_ps.iter().sum::<u64>(), chain.now());
        assert_eq!(batch.time().spent_ps.iter().sum::<u64>(), batch.now());
    }

    #[test]
    fn a_relaxed_rmw_in_a_batch_waits_with_its_loads_and_an_acquiring_one_alone() {
        let p = Profile::h100();
        let run = |order: Ordering| {
            let m = model();
            let clock = Clock::new();
            m.charge(0, &clock, Access::BatchBegin { vector: false });
            m.charge(0, &clock, Access::Rmw { order, addr: 1 << 20 });
            m.charge(
                0,
                &clock,
                Access::Load {
                    order: Ordering::Relaxed,
                    addr: 64,
                },
            );
            m.charge(0, &clock, Access::BatchEnd);
            assert_eq!(clock.time().spent_ps.iter().sum::<u64>(), clock.now());
            clock.now()
        };
        // Relaxed: the load is issued behind the rmw and arrives
        // batch_load_ns after its value (rmw_ns = load_ns on the H100).
        assert_eq!(
            run(Ordering::Relaxed),
            ps(p.issue_ns + p.rmw_ns) + ps(p.batch_load_ns)
        );
        // Acquire: the load waits for the rmw and its acquire.
        assert_eq!(
            run(Ordering::Acquire),
            ps(p.issue_ns + p.rmw_ns + p.acquire_ns) + ps(p.issue_ns + p.load_ns)
        );
    }

    #[test]
    fn a_vector_load_is_one_load_of_its_batch() {
        // No issue time: each load's value would arrive one latency after
        // the batch began, so only batch_load_ns separates them.
        let mut p = Profile::h100().clone();
        p.issue_ns = 0.0;
        let m = Model::new(&p, None, 2, 32);
        let vector = |c: &Clock, at: usize| {
            m.charge(0, c, Access::BatchBegin { vector: true });
            for k in 0..4 {
                m.charge(0, c, relaxed_load(at + 4 * k));
            }
            m.charge(0, c, Access::BatchEnd);
        };
        // Alone: one latency.
        let alone = Clock::new();
        vector(&alone, 64);
        assert_eq!(alone.now(), ps(p.load_ns));
        // A load, a vector and a load in one batch: three loads.
        let mixed = Clock::new();
        m.charge(0, &mixed, Access::BatchBegin { vector: false });
        m.charge(0, &mixed, relaxed_load(0));
        vector(&mixed, 64);
        m.charge(0, &mixed, relaxed_load(128));
        m.charge(0, &mixed, Access::BatchEnd);
        assert_eq!(mixed.now(), ps(p.load_ns) + 2 * ps(p.batch_load_ns));
        assert_eq!(mixed.now(), 295_200);
        // A batch of four loads nested in it instead is four loads.
        let nested = Clock::new();
        m.charge(0, &nested, Access::BatchBegin { vector: false });
        m.charge(0, &nested, relaxed_load(0));
        m.charge(0, &nested, Access::BatchBegin { vector: false });
        for k in 0..4 {
            m.charge(0, &nested, relaxed_load(64 + 4 * k));
        }
        m.charge(0, &nested, Access::BatchEnd);
        m.charge(0, &nested, relaxed_load(128));
        m.charge(0, &nested, Access::BatchEnd);
        assert_eq!(nested.now(), ps(p.load_ns) + 5 * ps(p.batch_load_ns));
        assert_eq!(nested.now(), 378_000);
    }

    #[test]
    fn a_vector_store_is_one_store_and_publishes_every_word() {
        let mut p = Profile::h100().clone();
        p.issue_ns = 0.0;
        let m = Model::new(&p, None, 2, 32);
        let store = |addr| Access::Store {
            order: Ordering::Relaxed,
            addr,
        };
        let vector = Clock::new();
        m.charge(0, &vector, Access::BatchBegin { vector: true });
        for k in 0..4 {
            m.charge(0, &vector, store(256 + 4 * k));
        }
        m.charge(0, &vector, Access::BatchEnd);
        assert_eq!(vector.now(), ps(p.store_ns));
        for k in 0..4 {
            assert_eq!(m.visible_at(256 + 4 * k, 1), ps(p.store_ns) + ps(p.visible_ns));
        }
        let apart = Clock::new();
        for k in 0..4 {
            m.charge(0, &apart, store(512 + 4 * k));
        }
        assert_eq!(apart.now(), 4 * ps(p.store_ns));
    }

    #[test]
    fn a_vector_access_is_one_instruction() {
        // With issue time: a vector load or store of four words pays
        // `issue_ns` once, as its first word; four scalar accesses pay it
        // four times.
        let p = Profile::h100();
        let m = Model::new(p, None, 2, 32);
        let vector = |c: &Clock, access: fn(usize) -> Access, at: usize| {
            m.charge(0, c, Access::BatchBegin { vector: true });
            for k in 0..4 {
                m.charge(0, c, access(at + 4 * k));
            }
            m.charge(0, c, Access::BatchEnd);
        };
        let load = Clock::new();
        vector(&load, relaxed_load, 64);
        assert_eq!(load.now(), ps(p.issue_ns + p.load_ns));
        assert_eq!(load.time().spent_ps[index(TimeCategory::Issue)], ps(p.issue_ns));
        let store = Clock::new();
        let relaxed_store = |addr| Access::Store {
            order: Ordering::Relaxed,
            addr,
        };
        vector(&store, relaxed_store, 256);
        assert_eq!(store.now(), ps(p.issue_ns + p.store_ns));
        let scalar = Clock::new();
        for k in 0..4 {
            m.charge(0, &scalar, relaxed_store(512 + 4 * k));
        }
        assert_eq!(scalar.now(), 4 * ps(p.issue_ns + p.store_ns));
    }

    #[test]
    fn a_value_is_read_no_earlier_than_it_is_visible() {
        let m = model();
        let p = Profile::h100();
        let writer = Clock::new();
        m.charge(
            1,
            &writer,
            Access::Store {
                order: Ordering::Release,
                addr: 8,
            },
        );
        let written = writer.now();
        let reader = Clock::new();
        m.charge(
            2,
            &reader,
            Access::Load {
                order: Ordering::Acquire,
                addr: 8,
            },
        );
        let visible = written + ps(p.visible_ns);
        assert_eq!(reader.now(), visible + ps(p.load_ns + p.acquire_ns));
        assert_eq!(
            reader.time().spent_ps[index(TimeCategory::Waiting)],
            visible - ps(p.issue_ns)
        );
        // The writer reads its own value at once.
        let before = writer.now();
        m.charge(
            1,
            &writer,
            Access::Load {
                order: Ordering::Relaxed,
                addr: 8,
            },
        );
        assert_eq!(writer.now(), before + ps(p.issue_ns + p.load_ns));
    }

    #[test]
    fn read_modify_writes_of_one_word_queue() {
        let m = model();
        let p = Profile::h100();
        let clocks: Vec<Clock> = (0..4).map(|_| Clock::new()).collect();
        for (r, c) in clocks.iter().enumerate() {
            m.charge(
                r as u32,
                c,
                Access::Rmw {
                    order: Ordering::Relaxed,
                    addr: 4,
                },
            );
        }
        // Each starts when the one before is done with the word.
        let step = ps(p.rmw_interval_ns);
        for (r, c) in clocks.iter().enumerate() {
            let start = ps(p.issue_ns) + r as u64 * step;
            assert_eq!(c.now(), start + ps(p.rmw_ns), "rank {r}");
        }
    }

    #[test]
    fn a_reduction_is_issued_like_a_store_and_queues_at_its_word() {
        let m = model();
        let p = Profile::h100();
        let (a, b) = (Clock::new(), Clock::new());
        let red = Access::Reduce {
            order: Ordering::Release,
            addr: 8,
        };
        m.charge(0, &a, red);
        m.charge(1, &b, red);
        // Neither waits for the word: a release fence and a store's issue.
        let issued = ps(p.issue_ns + p.release_ns + p.store_ns);
        assert_eq!(a.now(), issued);
        assert_eq!(b.now(), issued);
        // The second is performed after the first, and seen that much later.
        let first = ps(p.issue_ns + p.release_ns);
        assert_eq!(
            m.visible_at(8, 2),
            first + ps(p.rmw_interval_ns) + ps(p.visible_ns)
        );
        // The old value is never waited for: no time in atomics or waiting.
        for c in [&a, &b] {
            assert_eq!(c.time().spent_ps[index(TimeCategory::Atomics)], 0);
            assert_eq!(c.time().spent_ps[index(TimeCategory::Waiting)], 0);
        }
    }

    #[test]
    fn plain_loads_hit_l1_until_an_acquire() {
        let m = model();
        let p = Profile::h100();
        let c = Clock::new();
        m.charge(0, &c, plain(1024, false));
        let t1 = c.now();
        m.charge(0, &c, plain(1032, false));
        assert_eq!(c.now() - t1, ps(p.issue_ns + p.load_hit_ns));
        m.charge(
            0,
            &c,
            Access::Fence {
                order: Ordering::AcqRel,
            },
        );
        let t2 = c.now();
        m.charge(0, &c, plain(1040, false));
        assert_eq!(c.now() - t2, ps(p.issue_ns + p.load_ns));
    }

    #[test]
    fn a_prefetch_in_a_batch_is_one_of_its_loads_and_its_line_then_hits_l1() {
        let m = model();
        let p = Profile::h100();
        let c = Clock::new();
        m.charge(
            0,
            &c,
            Access::Fence {
                order: Ordering::AcqRel,
            },
        );
        let t0 = c.now();
        m.charge(0, &c, Access::BatchBegin { vector: false });
        m.charge(
            0,
            &c,
            Access::Load {
                order: Ordering::Relaxed,
                addr: 1 << 20,
            },
        );
        m.charge(
            0,
            &c,
            Access::Prefetch {
                addr: 1024,
                bytes: 16,
            },
        );
        m.charge(0, &c, Access::BatchEnd);
        // Two loads' batch: the prefetch's line is the later arrival.
        assert_eq!(c.now() - t0, ps(p.issue_ns + p.load_ns) + ps(p.batch_load_ns));
        let t1 = c.now();
        m.charge(
            0,
            &c,
            Access::Private {
                addr: 1040,
                bytes: 16,
                write: false,
            },
        );
        assert_eq!(c.now() - t1, ps(p.issue_ns + p.library_ns + p.load_hit_ns));
        // An acquire empties L1 of it as of any line.
        m.charge(
            0,
            &c,
            Access::Fence {
                order: Ordering::AcqRel,
            },
        );
        let t2 = c.now();
        m.charge(0, &c, plain(1024, false));
        assert_eq!(c.now() - t2, ps(p.issue_ns + p.load_ns));
    }

    #[test]
    fn volatile_loads_never_hit_l1() {
        let m = model();
        let p = Profile::h100();
        let c = Clock::new();
        let read = |addr| volatile(addr, false);
        m.charge(0, &c, read(1024));
        m.end_volatile_run(&c);
        let t1 = c.now();
        m.charge(0, &c, read(1032));
        m.end_volatile_run(&c);
        assert_eq!(c.now() - t1, ps(p.issue_ns + p.load_ns));
        let t2 = c.now();
        m.charge(0, &c, plain(1040, false));
        assert_eq!(
            c.now() - t2,
            ps(p.issue_ns + p.load_ns),
            "a volatile load brings no line into L1"
        );
        let t3 = c.now();
        m.charge(0, &c, volatile(1024, true));
        assert_eq!(c.now() - t3, ps(p.issue_ns + p.store_ns));
    }

    #[test]
    fn volatile_loads_in_a_row_overlap_until_another_access() {
        let m = model();
        let p = Profile::h100();
        let c = Clock::new();
        let read = |addr| volatile(addr, false);
        for k in 0..VOLATILE_RUN as usize {
            m.charge(0, &c, read(1024 + 8 * k));
        }
        assert_eq!(
            c.now(),
            VOLATILE_RUN as u64 * ps(p.issue_ns),
            "issued, not yet waited for"
        );
        m.charge(0, &c, volatile(4096, true));
        let run = ps(p.issue_ns) + ps(p.load_ns) + (VOLATILE_RUN as u64 - 1) * ps(p.batch_load_ns);
        assert_eq!(
            c.now(),
            run + ps(p.issue_ns + p.store_ns),
            "the store waits for the run"
        );
        let t = c.now();
        for k in 0..=VOLATILE_RUN as usize {
            m.charge(0, &c, read(1024 + 8 * k));
        }
        m.end_volatile_run(&c);
        assert_eq!(
            c.now() - t,
            run + ps(p.load_ns),
            "one more load than a run: a second run"
        );
    }

    #[test]
    fn the_blocks_shared_memory_costs_its_own_latency() {
        let m = model();
        let p = Profile::h100();
        let c = Clock::new();
        c.set_block_shared(1 << 16, 256);
        let load = Access::Load {
            order: Ordering::Relaxed,
            addr: (1 << 16) + 8,
        };
        m.charge(0, &c, load);
        assert_eq!(c.now(), ps(p.issue_ns + p.shared_ns));
        // Past its end: global memory again.
        let t = c.now();
        m.charge(
            0,
            &c,
            Access::Load {
                order: Ordering::Relaxed,
                addr: (1 << 16) + 256,
            },
        );
        assert_eq!(c.now() - t, ps(p.issue_ns + p.load_ns));
        // A copy into it: the thread's bytes and one latency, no device floor.
        let t = c.now();
        let bytes = 1 << 12;
        m.charge(
            0,
            &c,
            Access::Copy {
                bytes,
                wide: false,
                src: 1 << 24,
                dst: 1 << 16,
            },
        );
        assert_eq!(
            c.now() - t,
            ps(p.issue_ns + p.shared_ns) + (bytes as f64 * 1e3 / p.copy_thread_gbps).round() as u64
        );
        // Another rank sees a store to it after `shared_ns`.
        let (a, b) = (Clock::new(), Clock::new());
        a.set_block_shared(1 << 16, 256);
        b.set_block_shared(1 << 16, 256);
        let addr = (1 << 16) + 64;
        m.charge(
            0,
            &a,
            Access::Store {
                order: Ordering::Relaxed,
                addr,
            },
        );
        m.charge(
            1,
            &b,
            Access::Load {
                order: Ordering::Relaxed,
                addr,
            },
        );
        assert_eq!(b.now(), a.now() + ps(p.shared_ns) + ps(p.shared_ns));
    }

    #[test]
    fn a_batch_of_shared_loads_follows_the_shared_rate() {
        let run = |shared_batch: f64, base: usize| {
            let mut p = Profile::h100().clone();
            p.shared_batch_load_ns = shared_batch;
            let m = Model::new(p.clone().leak(), None, 2, 32);
            let c = Clock::new();
            c.set_block_shared(1 << 16, 256);
            m.charge(0, &c, Access::BatchBegin { vector: false });
            for i in 0..8 {
                m.charge(0, &c, plain(base + 16 * i, false));
            }
            m.charge(0, &c, Access::BatchEnd);
            (p, c.now())
        };
        // Above issue_ns the shared rate spaces the values; below it the
        // loads' issue does; in global memory batch_load_ns does, whatever
        // the shared rate.
        let (p, slow) = run(12.0, 1 << 16);
        assert_eq!(slow, ps(p.issue_ns + p.shared_ns) + 7 * ps(12.0));
        let (p, fast) = run(2.3, 1 << 16);
        assert_eq!(fast, 8 * ps(p.issue_ns) + ps(p.shared_ns));
        let (p, global) = run(2.3, 1 << 20);
        assert_eq!(global, ps(p.issue_ns + p.load_ns) + 7 * ps(p.batch_load_ns));
    }

    #[test]
    fn a_warps_access_costs_each_lane_its_further_lines() {
        let m = model();
        let p = Profile::h100();
        // One load by each of 32 lanes, lanes 8 bytes apart (two lines)
        // or a line apart (32 lines), each lane settling at its next
        // access, after every lane made this one (as the scheduler runs
        // them: smallest clock first).
        let warp = |stride: usize, base: usize| -> Vec<u64> {
            let clocks: Vec<Clock> = (0..32).map(|_| Clock::new()).collect();
            for (lane, c) in clocks.iter().enumerate() {
                m.charge(lane as u32, c, plain(base + lane * stride, false));
            }
            for (lane, c) in clocks.iter().enumerate() {
                m.settle(lane as u32, c);
            }
            clocks.iter().map(Clock::now).collect()
        };
        let access = ps(p.issue_ns + p.load_ns);
        assert!(warp(8, 1 << 20).iter().all(|&t| t == access + ps(p.line_ns)));
        // The lanes met no barrier since: their second access is another
        // instruction, which costs its own lines.
        assert!(warp(128, 1 << 24)
            .iter()
            .all(|&t| t == access + 31 * ps(p.line_ns)));
        let spent = Clock::new();
        m.synchronised(0);
        m.charge(0, &spent, plain(0, true));
        m.settle(0, &spent);
        assert_eq!(
            spent.now(),
            ps(p.issue_ns + p.store_ns),
            "after a barrier, a lane alone touches one line"
        );
        // A lane of another warp (block of 32) never shares a line with these.
        let other = Clock::new();
        m.charge(32, &other, plain((1 << 24) + 4096, false));
        m.settle(32, &other);
        assert_eq!(other.now(), access);
    }

    #[test]
    fn copies_share_the_device_bandwidth() {
        let m = model();
        let p = Profile::h100();
        let bytes = 1 << 20;
        let a = Clock::new();
        let b = Clock::new();
        let copy = Access::Copy {
            bytes,
            wide: false,
            src: 1 << 20,
            dst: 1 << 24,
        };
        m.charge(0, &a, copy);
        m.charge(1, &b, copy);
        let own = ps(p.issue_ns + p.load_ns) + (bytes as f64 * 1e3 / p.copy_thread_gbps).round() as u64;
        assert_eq!(
            a.now(),
            own.max(ps(p.issue_ns) + (2.0 * bytes as f64 * 1e3 / p.copy_device_gbps).round() as u64)
        );
        assert!(b.now() >= a.now(), "the second copy cannot end before the first");
    }
}
