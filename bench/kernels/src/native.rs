//! Native baselines: the same work as the MPI kernels, written the way a
//! CUDA programmer would without MPI.
//!
//! They use the same [`kernel!`](gpu_mpi_device::kernel!) macro and launch
//! through the same `device.launch`, so they run on the GPU and on the
//! emulator alike; they simply make no MPI call. Ranks find themselves with
//! [`intrinsics::coordinates`] (`threadIdx`/`blockIdx`), synchronise their block
//! with [`intrinsics::block_barrier`] (`__syncthreads`) and other blocks through
//! atomics in global memory ([`GlobalSlice`] arguments).
//!
//! The first baselines were written before the shim offered shared memory
//! and warp shuffles: their block trees (`block_tree`) run in a global
//! scratch array, one element (or row) per rank, a block barrier per step.
//! They stay as a second column (`native_global`) of the reduce and
//! all-reduce suites. The baselines the ratios are taken against now use
//! the same tools as hand-written CUDA, through the shim: [`warp_sum`]
//! (`__shfl_down_sync`), [`block_sum`] (warp sums in the block's
//! [`intrinsics::shared_block`], `__shared__` memory), and the shuffle scan of
//! [`crate::exchange`].
//!
//! # The kernels
//! | kernel | what | thesis |
//! |---|---|---|
//! | [`native_pi_p2p_1`] + [`native_pi_p2p_2`] | partial sums to global memory, then one thread adds them | figures 5.7, 5.8 |
//! | [`native_pi_tree_1`] + [`native_pi_tree_2`] | block tree reduction, one partial per block, then one block reduces those | figures 5.18, 5.19 |
//! | [`native_pi_single_pass`] | block tree, one slot per block, the last block to arrive (atomic counter) finishes | — (CUDA's "threadFenceReduction" pattern) |
//! | [`native_empty`] | nothing: a relaunch is the other native way to synchronise the grid | — |
//! | [`native_latency`], [`native_bw`] | two ranks pass messages through global memory with release/acquire flags | — |
//! | [`native_barrier`], [`native_bcast`], [`native_reduce`], [`native_allreduce`] | the collectives against [`GridBarrier`] and the single-pass reduction | — |
//! | [`crate::exchange::NATIVE_REDUCE_SHFL`], [`crate::exchange::NATIVE_ALLREDUCE_SHFL`] | the single-pass reduction with [`block_sum`] ([`shfl_reduce_round`]) | — |
//! | the natives of [`crate::exchange`] | gather, scatter, all-gather, all-to-all, reduce-scatter, scan | — |
//! | [`native_copy`], [`native_chunk_copy`], [`native_atomic_ping_pong`], [`native_atomic_rmw`], [`native_atomic_load_chain`], [`native_atomic_load_batch`], [`native_atomic_contention`], [`native_block_rmw`], [`native_shared_load_batch`] | physical limits: copy bandwidth (coalesced, and of concurrent byte copies), atomic flag round trip, dependent atomic latency, dependent load latency, a batch of independent loads, read-modify-writes of one word, a block-scope atomic and a batch of loads of the block's shared memory | — |

use crate::mpi::{
    check_full, check_stamp, fill_pattern, reduce_value, stamp, CollArgs, P2pArgs, LIMIT_RESULTS,
    P2P_FLAG_STRIDE, P2P_RESULTS,
};
use crate::pi::partial_sum;
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::intrinsics::{self, AtomicU32, Backoff, Ordering};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Polls a native wait makes before it backs off: on the GPU a native spin
/// stays on the flag (the library's waits sleep after every failed poll);
/// on the emulator a rank must give way sooner or later, and the snooze
/// after the polls does (read-only polls: the deadlock detection stays exact).
const SPIN_POLLS: u32 = 64;

/// A native wait gives up after this long (a broken baseline must not hang
/// the GPU): the caller counts it as an error, so the benchmark fails.
pub const SPIN_TIMEOUT_NS: u64 = 30_000_000_000;

/// Spins until `done()` holds; false when it gave up after
/// [`SPIN_TIMEOUT_NS`]. `done` must only read shared memory.
#[must_use]
pub fn spin_until(mut done: impl FnMut() -> bool) -> bool {
    let mut backoff = Backoff::new();
    let mut start = None;
    loop {
        for _ in 0..SPIN_POLLS {
            if done() {
                return true;
            }
        }
        let now = intrinsics::clock_ns();
        if now.wrapping_sub(*start.get_or_insert(now)) > SPIN_TIMEOUT_NS {
            return false;
        }
        backoff.snooze();
    }
}

/// The 32-bit atomic at element `i` of `slice`.
pub fn atomic_at(slice: &GlobalSlice<u32>, i: usize) -> Result<&AtomicU32, Error> {
    if i >= slice.len() {
        return Err(Error::OutOfBounds {
            index: i as u32,
            len: slice.len() as u32,
        });
    }
    // SAFETY: in bounds, 4-byte aligned (the slice's contract), valid for the
    // launch; the benchmark kernels access these words only atomically (the
    // host zeroes them between launches).
    Ok(unsafe { gpu_mpi_device::abi::shim::atomic_u32_at(slice.addr() as *mut u8, 4 * i) })
}

/// `a >= b` for counters that may wrap.
pub fn reached(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

/// A grid-wide barrier like cooperative groups' `grid.sync()`: a block
/// barrier; thread 0 of each block makes the block's writes visible, adds 1
/// to one counter (a release atomic) and spins (acquire loads) until every
/// block of this round has arrived; a block barrier.
///
/// The counter only grows: round `k` completes at `k * blocks`, so no reset
/// is needed between rounds (the host zeroes it before a launch). It needs
/// every block co-resident, as every world is.
pub struct GridBarrier<'a> {
    counter: &'a AtomicU32,
    blocks: u32,
    leader: bool,
    round: u32,
    timeouts: u64,
}

impl<'a> GridBarrier<'a> {
    /// A barrier on `counter` (zero at launch) for the calling rank's grid.
    pub fn new(counter: &'a AtomicU32) -> Self {
        let c = intrinsics::coordinates();
        GridBarrier {
            counter,
            blocks: c.grid_dim,
            leader: c.thread == 0,
            round: 0,
            timeouts: 0,
        }
    }

    /// Waits of this rank that gave up ([`spin_until`]): errors.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Waits until every rank of the grid has called it as often.
    pub fn sync(&mut self) {
        self.sync_arriving(false);
    }

    /// [`GridBarrier::sync`]; with `returning`, the leader arrives as the
    /// world barrier does: one acquire-release add whose value it uses (the
    /// last arrival does not spin).
    pub fn sync_arriving(&mut self, returning: bool) {
        self.round = self.round.wrapping_add(1);
        intrinsics::block_barrier();
        if self.leader {
            let target = self.round.wrapping_mul(self.blocks);
            let last = if returning {
                // AcqRel: the release half as the fence below, the acquire
                // half pairs with the earlier leaders' arrivals.
                reached(
                    self.counter.fetch_add(1, Ordering::AcqRel).wrapping_add(1),
                    target,
                )
            } else {
                // The block barrier ordered the block's writes before this
                // thread's; the fence makes them visible device-wide (CUDA's
                // `__threadfence()` before the arrival).
                intrinsics::fence(Ordering::AcqRel);
                self.counter.fetch_add(1, Ordering::Release);
                false
            };
            // Acquire pairs with the other leaders' Release arrivals.
            if !last && !spin_until(|| reached(self.counter.load(Ordering::Acquire), target)) {
                self.timeouts += 1;
            }
        }
        intrinsics::block_barrier();
    }
}

/// Tree-reduces (sums) the rows of `count` elements that the `n` ranks of
/// the calling block wrote at `scratch[(base + t) * count ..]`, `t` the
/// thread index: on return row `base` holds the block's sum, visible to the
/// whole block. Every rank of the block must call it; `log2(n)` block
/// barriers, none before (the caller puts one after writing its row).
///
/// The caller checks that the rows lie inside `scratch`.
fn block_tree(scratch: &GlobalSlice<f64>, base: usize, thread: usize, n: usize, count: usize) {
    let mut width = n;
    while width > 1 {
        let half = width.div_ceil(2);
        if thread < width - half {
            let (mine, other) = ((base + thread) * count, (base + thread + half) * count);
            for e in 0..count {
                let v = scratch.read(mine + e).unwrap_or(0.0) + scratch.read(other + e).unwrap_or(0.0);
                let _ = scratch.write(mine + e, v);
            }
        }
        intrinsics::block_barrier();
        width = half;
    }
}

fn check_len<T: Pod>(slice: &GlobalSlice<T>, needed: usize) -> Result<(), Error> {
    if slice.len() < needed {
        return Err(Error::OutOfBounds {
            index: needed as u32,
            len: slice.len() as u32,
        });
    }
    Ok(())
}

/// Arguments of the native pi kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct NativePiArgs {
    /// Intervals each rank of the first kernel sums.
    pub intervals_per_rank: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Point-to-point: one partial sum per rank. Tree and single pass: one per
    /// block of the first kernel.
    pub partials: GlobalSlice<f64>,
    /// The stand-in for shared memory: one element per rank of the launch.
    pub scratch: GlobalSlice<f64>,
    /// Single pass: `[0]` the arrival counter (zero at launch, zero again
    /// after), `[1 + b]` whether block `b` arrived last.
    pub counters: GlobalSlice<u32>,
    /// The estimate (one element).
    pub result: GlobalSlice<f64>,
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.7: every rank writes its partial sum to global memory.
    /// Rank 0 writes its own too (the thesis's second kernel read element 0,
    /// which its first kernel never wrote).
    pub static NATIVE_PI_P2P_1 = fn native_pi_p2p_1(world: &World, args: &NativePiArgs) -> Result<(), Error> {
        let part = partial_sum(world.rank() as u32, world.size() as u32, args.intervals_per_rank);
        args.partials.write(world.rank() as usize, part)
    }
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.8, launched as one thread: adds the partial sums in
    /// rank order (the same order as the MPI kernel's receives).
    pub static NATIVE_PI_P2P_2 = fn native_pi_p2p_2(world: &World, args: &NativePiArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return Ok(());
        }
        let mut sum = 0.0;
        for i in 0..args.partials.len() {
            sum += args.partials.read(i)?;
        }
        args.result.write(0, sum)
    }
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.18: each block tree-reduces its ranks' partial sums
    /// and thread 0 writes the block's sum to `partials[block]`.
    pub static NATIVE_PI_TREE_1 = fn native_pi_tree_1(world: &World, args: &NativePiArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        check_len(&args.scratch, world.size() as usize)?;
        check_len(&args.partials, c.grid_dim as usize)?;
        let part = partial_sum(world.rank() as u32, world.size() as u32, args.intervals_per_rank);
        let base = (c.block * c.block_dim) as usize;
        args.scratch.write(base + c.thread as usize, part)?;
        intrinsics::block_barrier();
        block_tree(&args.scratch, base, c.thread as usize, c.block_dim as usize, 1);
        if c.thread == 0 {
            args.partials.write(c.block as usize, args.scratch.read(base)?)?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.19, launched as one block: each thread adds a strided
    /// share of the block sums (the thesis had exactly 32 blocks, one per
    /// thread), then the block tree-reduces them and thread 0 writes the estimate.
    pub static NATIVE_PI_TREE_2 = fn native_pi_tree_2(_world: &World, args: &NativePiArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        let n = c.block_dim as usize;
        check_len(&args.scratch, n)?;
        let mut sum = 0.0;
        let mut i = c.thread as usize;
        while i < args.partials.len() {
            sum += args.partials.read(i)?;
            i += n;
        }
        args.scratch.write(c.thread as usize, sum)?;
        intrinsics::block_barrier();
        block_tree(&args.scratch, 0, c.thread as usize, n, 1);
        if c.thread == 0 {
            args.result.write(0, args.scratch.read(0)?)?;
        }
        Ok(())
    }
}

/// The single-pass reduction of `count` elements per rank: each block
/// tree-reduces the rows its ranks wrote at `scratch[rank * count ..]`,
/// thread 0 stores the block's row in `partials[block * count ..]` and
/// arrives on `arrivals` (acquire-release); the block that arrives last
/// reduces the block rows (strided, then a tree) into `result`, and resets
/// `arrivals` to zero. Returns whether the calling rank's block was last.
///
/// `last_flags[block]` carries "this block was last" from thread 0 to its
/// block (where CUDA would use a `__shared__` flag).
#[allow(clippy::too_many_arguments)]
fn single_pass_reduce(
    scratch: &GlobalSlice<f64>,
    partials: &GlobalSlice<f64>,
    result: &GlobalSlice<f64>,
    arrivals: &AtomicU32,
    last_flags: &GlobalSlice<u32>,
    flag_base: usize,
    count: usize,
) -> Result<bool, Error> {
    let c = intrinsics::coordinates();
    let (thread, block, n) = (c.thread as usize, c.block as usize, c.block_dim as usize);
    let base = block * n;
    block_tree(scratch, base, thread, n, count);
    let flag = atomic_at(last_flags, flag_base + block)?;
    if thread == 0 {
        for e in 0..count {
            partials.write(block * count + e, scratch.read(base * count + e)?)?;
        }
        // Release: the block's row is visible to whoever acquires the
        // counter's later value; Acquire: the last arrival sees every row.
        let before = arrivals.fetch_add(1, Ordering::AcqRel);
        flag.store((before == c.grid_dim - 1) as u32, Ordering::Relaxed);
    }
    intrinsics::block_barrier();
    let last = flag.load(Ordering::Relaxed) == 1;
    if last {
        // Thread 0's acquire covers the block through the barrier; the fence
        // makes each thread's own reads of other blocks' rows safe as well.
        intrinsics::fence(Ordering::AcqRel);
        let row = (base + thread) * count;
        for e in 0..count {
            let mut sum = 0.0;
            let mut b = thread;
            while b < c.grid_dim as usize {
                sum += partials.read(b * count + e)?;
                b += n;
            }
            scratch.write(row + e, sum)?;
        }
        intrinsics::block_barrier();
        block_tree(scratch, base, thread, n, count);
        if thread == 0 {
            for e in 0..count {
                result.write(e, scratch.read(base * count + e)?)?;
            }
            arrivals.store(0, Ordering::Relaxed);
        }
    }
    Ok(last)
}

gpu_mpi_device::kernel! {
    /// The modern one-kernel reduction: block trees, one slot per block, and
    /// the last block to arrive on an atomic counter adds the slots up.
    pub static NATIVE_PI_SINGLE_PASS = fn native_pi_single_pass(world: &World, args: &NativePiArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        check_len(&args.scratch, world.size() as usize)?;
        check_len(&args.partials, c.grid_dim as usize)?;
        check_len(&args.counters, 1 + c.grid_dim as usize)?;
        let part = partial_sum(world.rank() as u32, world.size() as u32, args.intervals_per_rank);
        args.scratch.write(world.rank() as usize, part)?;
        intrinsics::block_barrier();
        let arrivals = atomic_at(&args.counters, 0)?;
        single_pass_reduce(&args.scratch, &args.partials, &args.result, arrivals, &args.counters, 1, 1)?;
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// An empty kernel: relaunching is the other native grid barrier.
    pub static NATIVE_EMPTY = fn native_empty(_world: &World, _args: &u32) -> Result<(), Error> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Point-to-point baselines.

/// Offsets (bytes) of a pair's buffers in [`P2pArgs::buffers`]: the
/// sender's send buffer, the sender's receive buffer, the receiver's buffer,
/// then the native ring's slots.
pub fn pair_buffers(args: &P2pArgs, pair: usize) -> [usize; 4] {
    let b = args.bytes as usize;
    let base = pair * (3 + args.slots as usize) * b;
    [base, base + b, base + 2 * b, base + 3 * b]
}

/// The pair the calling rank belongs to and whether it sends, or `None`.
pub fn pair_of(world: &World, args: &P2pArgs) -> Option<(usize, bool)> {
    let r = world.rank() as u32;
    if r < args.pairs {
        Some((r as usize, true))
    } else if r >= args.offset && r - args.offset < args.pairs {
        Some(((r - args.offset) as usize, false))
    } else {
        None
    }
}

/// `len` bytes of `args.buffers` at byte `at`, as a slice.
///
/// # Safety
/// Only the calling rank may use these bytes while the slice lives, except
/// as the protocol of the calling kernel orders (release/acquire flags).
pub unsafe fn bytes_at<'a>(buffers: &GlobalSlice<u8>, at: usize, len: usize) -> Result<&'a mut [u8], Error> {
    // SAFETY: forwarded from the caller.
    unsafe { buffers.slice_mut(at, len) }
}

fn copy(dst: &mut [u8], src: &[u8]) {
    // SAFETY: both slices are valid for `len` bytes and do not overlap (they
    // are distinct regions of the pair's buffers); the protocol orders the
    // copy against the peer's accesses with release/acquire flags.
    unsafe { intrinsics::copy_bytes(dst.as_mut_ptr(), src.as_ptr(), dst.len().min(src.len())) }
}

fn write_results(out: &GlobalSlice<u64>, pair: usize, words: &[(usize, u64)]) -> Result<(), Error> {
    for &(i, v) in words {
        out.write(pair * P2P_RESULTS + i, v)?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// Native ping-pong: the sender copies its message straight into the
    /// receiver's buffer and raises a flag (release); the receiver waits for
    /// it (acquire), checks the message, copies it straight back into the
    /// sender's receive buffer and raises the answer flag. One copy per
    /// direction, the least a message can cost.
    pub static NATIVE_LATENCY = fn native_latency(world: &World, args: &P2pArgs) -> Result<(), Error> {
        let Some((pair, sender)) = pair_of(world, args) else { return Ok(()) };
        let n = args.bytes as usize;
        let [send_at, recv_at, peer_at, _] = pair_buffers(args, pair);
        let ping = atomic_at(&args.flags, pair * P2P_FLAG_STRIDE)?;
        let pong = atomic_at(&args.flags, pair * P2P_FLAG_STRIDE + P2P_FLAG_STRIDE / 2)?;
        let total = args.warmup + args.iterations;
        let seed = pair as u32 + 1;
        let (mut errors, mut verified) = (0u64, 0u64);
        if sender {
            // SAFETY: the sender alone writes its send buffer; it writes the
            // peer buffer only between the receiver's pong (acquire) and its
            // own ping (release); it reads its receive buffer only after a pong.
            let (send, recv, peer) = unsafe {
                (
                    bytes_at(&args.buffers, send_at, n)?,
                    bytes_at(&args.buffers, recv_at, n)?,
                    bytes_at(&args.buffers, peer_at, n)?,
                )
            };
            fill_pattern(send, seed);
            let mut start = intrinsics::clock_ns();
            for it in 0..total {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                stamp(send, seed, it);
                copy(peer, send);
                ping.store(it + 1, Ordering::Release);
                let answered = spin_until(|| pong.load(Ordering::Acquire) == it + 1);
                if !answered || !check_stamp(recv, seed, it) {
                    errors += 1;
                }
                verified += 1;
            }
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            if total > 0 && !check_full(recv, seed, total - 1) {
                errors += 1;
            }
            write_results(&args.out, pair, &[(0, elapsed), (1, errors), (3, verified)])?;
        } else {
            // SAFETY: see the sender: the receiver reads the peer buffer
            // after a ping and writes the sender's receive buffer before a pong.
            let (recv, peer) = unsafe { (bytes_at(&args.buffers, recv_at, n)?, bytes_at(&args.buffers, peer_at, n)?) };
            for it in 0..total {
                let arrived = spin_until(|| ping.load(Ordering::Acquire) == it + 1);
                if !arrived || !check_stamp(peer, seed, it) {
                    errors += 1;
                }
                verified += 1;
                copy(recv, peer);
                pong.store(it + 1, Ordering::Release);
            }
            if total > 0 && !check_full(peer, seed, total - 1) {
                errors += 1;
            }
            write_results(&args.out, pair, &[(2, errors), (4, verified)])?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// Native streaming between pairs: a ring of `slots` message buffers
    /// per pair with a head counter (sender, release) and a tail counter
    /// (receiver, release). The sender copies each message into a free
    /// slot; the receiver copies it out into its buffer and checks it. At
    /// the end of each window the sender waits until the receiver has taken
    /// every message (osu_bw's acknowledgement).
    pub static NATIVE_BW = fn native_bw(world: &World, args: &P2pArgs) -> Result<(), Error> {
        let Some((pair, sender)) = pair_of(world, args) else { return Ok(()) };
        let n = args.bytes as usize;
        let slots = args.slots.max(1);
        let [send_at, _, peer_at, ring_at] = pair_buffers(args, pair);
        let head = atomic_at(&args.flags, pair * P2P_FLAG_STRIDE)?;
        let tail = atomic_at(&args.flags, pair * P2P_FLAG_STRIDE + P2P_FLAG_STRIDE / 2)?;
        let total = args.warmup + args.iterations;
        let seed = pair as u32 + 1;
        let (mut errors, mut verified) = (0u64, 0u64);
        let mut seq = 0u32;
        if sender {
            // SAFETY: the sender alone writes its send buffer, and writes a
            // ring slot only after the receiver released it (tail, acquire).
            let send = unsafe { bytes_at(&args.buffers, send_at, n)? };
            fill_pattern(send, seed);
            let mut start = intrinsics::clock_ns();
            for it in 0..total {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                for w in 0..args.window {
                    if !spin_until(|| seq.wrapping_sub(tail.load(Ordering::Acquire)) < slots) {
                        errors += 1;
                    }
                    // SAFETY: slot `seq % slots` is free (see above).
                    let slot = unsafe { bytes_at(&args.buffers, ring_at + (seq % slots) as usize * n, n)? };
                    stamp(send, seed, it * args.window + w);
                    copy(slot, send);
                    seq = seq.wrapping_add(1);
                    head.store(seq, Ordering::Release);
                }
                if !spin_until(|| tail.load(Ordering::Acquire) == seq) {
                    errors += 1;
                }
                verified += 1;
            }
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            write_results(&args.out, pair, &[(0, elapsed), (1, errors), (3, verified)])?;
        } else {
            // SAFETY: the receiver alone writes its buffer, and reads a ring
            // slot only after the sender published it (head, acquire).
            let recv = unsafe { bytes_at(&args.buffers, peer_at, n)? };
            let mut last = 0;
            for it in 0..total {
                for w in 0..args.window {
                    if !spin_until(|| head.load(Ordering::Acquire) != seq) {
                        errors += 1;
                    }
                    // SAFETY: slot `seq % slots` is published (see above).
                    let slot = unsafe { bytes_at(&args.buffers, ring_at + (seq % slots) as usize * n, n)? };
                    copy(recv, slot);
                    last = it * args.window + w;
                    if !check_stamp(recv, seed, last) {
                        errors += 1;
                    }
                    verified += 1;
                    seq = seq.wrapping_add(1);
                    tail.store(seq, Ordering::Release);
                }
            }
            if total > 0 && args.window > 0 && !check_full(recv, seed, last) {
                errors += 1;
            }
            write_results(&args.out, pair, &[(2, errors), (4, verified)])?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Collective baselines. Counter words of `CollArgs::counters`, one 64-byte
// line each; per-block "last" flags after them.

/// `counters` index of the grid barrier's counter.
pub const COUNTER_BARRIER: usize = 0;
/// `counters` index of the single-pass reduction's arrival counter.
pub const COUNTER_ARRIVALS: usize = 16;
/// `counters` index of the all-reduce's "result published" round.
pub const COUNTER_RESULT: usize = 32;
/// `counters` index of the broadcast's "data published" round.
pub const COUNTER_BCAST: usize = 48;
/// `counters` index of block 0's "arrived last" flag.
pub const COUNTER_LAST_FLAGS: usize = 64;

/// Words of `CollArgs::counters` a native collective needs for `blocks` blocks.
pub const fn coll_counter_words(blocks: u32) -> usize {
    COUNTER_LAST_FLAGS + blocks as usize
}

/// Bytes of `CollArgs::bytes` the broadcasts need: a buffer per rank, then
/// the native broadcast's staging area.
pub const fn bcast_bytes(ranks: u32, size: u32) -> usize {
    (ranks as usize + 1) * size as usize
}

/// Elements of `CollArgs::values` the reductions need: per rank a send row
/// and a receive row; then (natives) a scratch row per rank, a row per
/// block and the result row.
pub const fn reduce_values(ranks: u32, blocks: u32, count: u32) -> usize {
    (3 * ranks as usize + blocks as usize + 1) * count as usize
}

/// Where the rows of the reductions lie in `CollArgs::values`.
pub struct ReduceRows {
    /// Elements per row.
    pub count: usize,
    /// First element of the calling rank's send row.
    pub send: usize,
    /// First element of the calling rank's receive row.
    pub recv: usize,
    /// The scratch region (one row per rank), as a slice.
    pub scratch: GlobalSlice<f64>,
    /// The block rows.
    pub partials: GlobalSlice<f64>,
    /// The result row.
    pub result: GlobalSlice<f64>,
}

fn sub_slice(s: &GlobalSlice<f64>, start: usize, len: usize) -> Result<GlobalSlice<f64>, Error> {
    check_len(s, start + len)?;
    // SAFETY: inside `s`, whose contract covers these elements; the element
    // size keeps the alignment.
    Ok(unsafe { GlobalSlice::from_raw(s.addr() + 8 * start as u64, len as u64) })
}

/// The calling rank's rows (checks that `values` is large enough).
pub fn reduce_rows(world: &World, args: &CollArgs) -> Result<ReduceRows, Error> {
    let c = intrinsics::coordinates();
    let (ranks, blocks, count) = (world.size() as usize, c.grid_dim as usize, args.size as usize);
    check_len(
        &args.values,
        reduce_values(ranks as u32, blocks as u32, count as u32),
    )?;
    let rank = world.rank() as usize;
    Ok(ReduceRows {
        count,
        send: 2 * rank * count,
        recv: (2 * rank + 1) * count,
        scratch: sub_slice(&args.values, 2 * ranks * count, ranks * count)?,
        partials: sub_slice(&args.values, 3 * ranks * count, blocks * count)?,
        result: sub_slice(&args.values, (3 * ranks + blocks) * count, count)?,
    })
}

/// Elements of the calling rank's receive row that differ from the closed
/// form of round `it`. Out of line (as is [`fill_send_row`]): the check's
/// arithmetic then takes no registers from the loop around the timed call.
#[inline(never)]
fn wrong_results(args: &CollArgs, rows: &ReduceRows, ranks: u32, it: u32) -> Result<u64, Error> {
    let mut errors = 0;
    for e in 0..rows.count {
        let want = crate::mpi::reduce_expected(ranks, e as u32, it);
        if args.values.read(rows.recv + e)? != want {
            errors += 1;
        }
    }
    Ok(errors)
}

/// Fills the calling rank's send row for iteration `it`.
#[inline(never)]
pub fn fill_send_row(args: &CollArgs, rows: &ReduceRows, rank: u32, it: u32) -> Result<(), Error> {
    for e in 0..rows.count {
        args.values
            .write(rows.send + e, reduce_value(rank, e as u32, it))?;
    }
    Ok(())
}

/// Writes a rank's timed nanoseconds and error count.
pub fn coll_results(args: &CollArgs, rank: usize, elapsed: u64, errors: u64) -> Result<(), Error> {
    args.out.write(2 * rank, elapsed)?;
    args.out.write(2 * rank + 1, errors)
}

/// Marks this rank's arrival at round `round` and, after the barrier that
/// follows, checks that a rank of another block arrived too.
fn barrier_mark(args: &CollArgs, rank: usize, round: u32) -> Result<(), Error> {
    atomic_at(&args.marks, rank)?.store(round, Ordering::Relaxed);
    Ok(())
}

fn barrier_check(args: &CollArgs, world: &World, round: u32) -> Result<bool, Error> {
    let peer = crate::mpi::barrier_peer(world.rank() as u32, world.size() as u32);
    Ok(reached(
        atomic_at(&args.marks, peer as usize)?.load(Ordering::Relaxed),
        round,
    ))
}

/// The barrier loop shared by the MPI and the native barrier benchmark:
/// `warmup` checked rounds, `iterations` timed rounds, one checked round.
/// Returns the timed nanoseconds and the errors.
pub fn barrier_loop(
    world: &World,
    args: &CollArgs,
    mut barrier: impl FnMut() -> Result<(), Error>,
) -> Result<(u64, u64), Error> {
    let rank = world.rank() as usize;
    let mut errors = 0u64;
    let mut round = 0u32;
    let mut checked =
        |barrier: &mut dyn FnMut() -> Result<(), Error>, errors: &mut u64| -> Result<(), Error> {
            round += 1;
            barrier_mark(args, rank, round)?;
            barrier()?;
            if !barrier_check(args, world, round)? {
                *errors += 1;
            }
            Ok(())
        };
    for _ in 0..args.warmup {
        checked(&mut barrier, &mut errors)?;
    }
    let start = intrinsics::clock_ns();
    for _ in 0..args.iterations {
        barrier()?;
    }
    let elapsed = intrinsics::clock_ns().wrapping_sub(start);
    checked(&mut barrier, &mut errors)?;
    Ok((elapsed, errors))
}

gpu_mpi_device::kernel! {
    /// The native grid barrier in the barrier benchmark's loop.
    pub static NATIVE_BARRIER = fn native_barrier(world: &World, args: &CollArgs) -> Result<(), Error> {
        let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
        let (elapsed, errors) = barrier_loop(world, args, || {
            grid.sync();
            Ok(())
        })?;
        coll_results(args, world.rank() as usize, elapsed, errors + grid.timeouts())
    }
}

/// [`NATIVE_BARRIER_VARIANT`]'s `args.size` bit: the leader arrives with an
/// acquire-release add whose value it uses ([`GridBarrier::sync_arriving`]).
pub const VARIANT_RETURNING_ADD: u32 = 1;
/// [`NATIVE_BARRIER_VARIANT`]'s `args.size` bit: every rank first stores 4
/// relaxed words of its own, as the world barrier writes a wait record.
pub const VARIANT_RECORD_STORES: u32 = 2;

gpu_mpi_device::kernel! {
    /// The native grid barrier with one or both of what the world barrier
    /// does besides (`args.size`: [`VARIANT_RETURNING_ADD`],
    /// [`VARIANT_RECORD_STORES`]), to tell on a GPU which of them costs
    /// the world barrier its step between blocks (docs/model.md). The 4
    /// words are the rank's two result words, which it writes last.
    pub static NATIVE_BARRIER_VARIANT = fn native_barrier_variant(world: &World, args: &CollArgs) -> Result<(), Error> {
        let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
        let rank = world.rank() as usize;
        check_len(&args.out, 2 * rank + 2)?;
        let returning = args.size & VARIANT_RETURNING_ADD != 0;
        let stores = args.size & VARIANT_RECORD_STORES != 0;
        let base = args.out.addr() as *mut u8;
        let mut round = 0u32;
        let (elapsed, errors) = barrier_loop(world, args, || {
            if stores {
                round = round.wrapping_add(1);
                for k in 0..4 {
                    // SAFETY: the rank's own 16 bytes of `out` (checked
                    // above), 4-byte aligned; no other rank touches them.
                    let w = unsafe { gpu_mpi_device::abi::shim::atomic_u32_at(base, 16 * rank + 4 * k) };
                    w.store(round, Ordering::Relaxed);
                }
            }
            grid.sync_arriving(returning);
            Ok(())
        })?;
        coll_results(args, rank, elapsed, errors + grid.timeouts())
    }
}

/// The broadcast loop shared by the MPI and the native benchmark: before
/// each round the root stamps its buffer; the broadcast alone is timed;
/// then every rank checks the stamp (and, after the last round, every
/// byte) and all meet in `barrier`. Returns the timed nanoseconds and the
/// errors.
pub fn bcast_loop(
    world: &World,
    args: &CollArgs,
    mut bcast: impl FnMut(&mut [u8], u32) -> Result<(), Error>,
    mut barrier: impl FnMut() -> Result<(), Error>,
) -> Result<(u64, u64), Error> {
    let rank = world.rank() as u32;
    let n = args.size as usize;
    check_len(&args.bytes, bcast_bytes(world.size() as u32, args.size))?;
    // SAFETY: each rank's buffer is its own; the broadcast writes it only
    // through `bcast`, between the rank's barriers.
    let buf = unsafe { args.bytes.slice_mut(rank as usize * n, n)? };
    let root = args.root;
    let seed = root + 1;
    if rank == root {
        fill_pattern(buf, seed);
    }
    let total = args.warmup + args.iterations;
    let (mut elapsed, mut errors) = (0u64, 0u64);
    for it in 0..total {
        if rank == root {
            stamp(buf, seed, it);
        }
        let start = intrinsics::clock_ns();
        bcast(buf, it)?;
        let t = intrinsics::clock_ns().wrapping_sub(start);
        if it >= args.warmup {
            elapsed += t;
        }
        if !check_stamp(buf, seed, it) || (it + 1 == total && !check_full(buf, seed, it)) {
            errors += 1;
        }
        barrier()?;
    }
    Ok((elapsed, errors))
}

gpu_mpi_device::kernel! {
    /// Native broadcast: the root copies its buffer to a staging area and
    /// publishes the round (release); each block's thread 0 waits for it
    /// (acquire), a block barrier, and every rank copies the data out.
    pub static NATIVE_BCAST = fn native_bcast(world: &World, args: &CollArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
        let published = atomic_at(&args.counters, COUNTER_BCAST)?;
        let n = args.size as usize;
        let rank = world.rank() as u32;
        let area_at = world.size() as usize * n;
        let mut timeouts = 0u64;
        let (elapsed, errors) = bcast_loop(
            world,
            args,
            |buf, it| {
                // SAFETY: the root writes the staging area only between the
                // grid barrier that ended the previous round (everyone had
                // read it) and its release of this round; the others read it
                // after acquiring this round.
                let area = unsafe { args.bytes.slice_mut(area_at, n)? };
                if rank == args.root {
                    copy(area, buf);
                    published.store(it + 1, Ordering::Release);
                }
                if c.thread == 0 && !spin_until(|| reached(published.load(Ordering::Acquire), it + 1)) {
                    timeouts += 1;
                }
                intrinsics::block_barrier();
                if rank != args.root {
                    intrinsics::fence(Ordering::AcqRel);
                    copy(buf, area);
                }
                Ok(())
            },
            || {
                grid.sync();
                Ok(())
            },
        )?;
        coll_results(args, rank as usize, elapsed, errors + timeouts + grid.timeouts())
    }
}

/// The reduction loop shared by the MPI and the native benchmarks: before
/// each round every rank fills its send row; the reduction alone is timed;
/// then the ranks that got the result check every element against the
/// closed form and all meet in `barrier`. `reduce` returns whether the
/// calling rank holds the result in its receive row. Returns the timed
/// nanoseconds and the errors. Inlined into each kernel, whatever the
/// size of the reduction inside: kept out of line, its closures reach it
/// through the kernel's stack (1,408 bytes of frame in `bench_reduce`).
#[inline(always)]
pub fn reduce_loop(
    world: &World,
    args: &CollArgs,
    mut reduce: impl FnMut(&ReduceRows, u32) -> Result<bool, Error>,
    mut barrier: impl FnMut() -> Result<(), Error>,
) -> Result<(u64, u64), Error> {
    let rows = reduce_rows(world, args)?;
    let rank = world.rank() as u32;
    let ranks = world.size() as u32;
    let total = args.warmup + args.iterations;
    let (mut elapsed, mut errors) = (0u64, 0u64);
    for it in 0..total {
        fill_send_row(args, &rows, rank, it)?;
        let start = intrinsics::clock_ns();
        let has_result = reduce(&rows, it)?;
        let t = intrinsics::clock_ns().wrapping_sub(start);
        if it >= args.warmup {
            elapsed += t;
        }
        if has_result {
            errors += wrong_results(args, &rows, ranks, it)?;
        }
        barrier()?;
    }
    Ok((elapsed, errors))
}

fn native_reduce_round(
    world: &World,
    args: &CollArgs,
    rows: &ReduceRows,
    all: bool,
    round: u32,
    timeouts: &mut u64,
) -> Result<bool, Error> {
    let rank = world.rank() as usize;
    let count = rows.count;
    for e in 0..count {
        rows.scratch
            .write(rank * count + e, args.values.read(rows.send + e)?)?;
    }
    intrinsics::block_barrier();
    let arrivals = atomic_at(&args.counters, COUNTER_ARRIVALS)?;
    let last = single_pass_reduce(
        &rows.scratch,
        &rows.partials,
        &rows.result,
        arrivals,
        &args.counters,
        COUNTER_LAST_FLAGS,
        count,
    )?;
    publish_result(world, args, rows, all, last, round, timeouts)
}

/// The end of a native reduction round: the last block published the
/// result row; it announces the round (release). Reduce: the root,
/// wherever its block is, waits for it and copies the row. All-reduce:
/// every block's thread 0 waits, a block barrier, and every rank copies the
/// row. Returns whether the calling rank got the result.
fn publish_result(
    world: &World,
    args: &CollArgs,
    rows: &ReduceRows,
    all: bool,
    last: bool,
    round: u32,
    timeouts: &mut u64,
) -> Result<bool, Error> {
    let c = intrinsics::coordinates();
    let rank = world.rank() as usize;
    let count = rows.count;
    let published = atomic_at(&args.counters, COUNTER_RESULT)?;
    if last && c.thread == 0 {
        published.store(round, Ordering::Release);
    }
    let gets_result = all || rank == args.root as usize;
    if ((all && c.thread == 0) || (!all && gets_result))
        && !spin_until(|| reached(published.load(Ordering::Acquire), round))
    {
        *timeouts += 1;
    }
    if all {
        intrinsics::block_barrier();
        intrinsics::fence(Ordering::AcqRel);
    }
    if gets_result {
        for e in 0..count {
            args.values.write(rows.recv + e, rows.result.read(e)?)?;
        }
    }
    Ok(gets_result)
}

/// Sum of `v` over the lanes of the caller's warp, valid in lane 0
/// (`__shfl_down_sync`, log2(32) steps; a lane whose source lies beyond the
/// warp's last lane keeps its value). Every lane of the warp calls it.
pub fn warp_sum(v: f64) -> f64 {
    let mask = intrinsics::warp_mask();
    let (lane, lanes) = (intrinsics::coordinates().thread % 32, mask.count_ones());
    let mut x = v;
    let mut delta = 16;
    while delta > 0 {
        let y = f64::from_bits(intrinsics::shfl_down_sync_u64(mask, x.to_bits(), delta));
        if lane + delta < lanes {
            x += y;
        }
        delta /= 2;
    }
    x
}

/// Bytes of the block's shared scratch [`block_sum`] uses: one `f64` per
/// warp (at most 32).
pub const BLOCK_SUM_SHARED_BYTES: usize = 32 * 8;

/// Sum of `v` over the ranks of the calling block, valid in thread 0: a
/// warp shuffle sum, the warps' sums in the block's shared memory, a warp
/// shuffle sum of those by warp 0. Two block barriers (the second lets the
/// caller reuse the shared scratch); every rank of the block calls it.
/// This is what a CUDA programmer writes with `__shfl_down_sync` and
/// `__shared__` memory.
pub fn block_sum(v: f64) -> f64 {
    let c = intrinsics::coordinates();
    let (lane, warp) = (c.thread % 32, c.thread / 32);
    let warps = c.block_dim.div_ceil(32);
    let shared = intrinsics::shared_block::<BLOCK_SUM_SHARED_BYTES>() as *mut f64;
    let s = warp_sum(v);
    if lane == 0 {
        // SAFETY: `warp < 32` (blocks have at most 1024 threads): inside the
        // shared scratch; one writer per element, read after the barrier.
        unsafe { shared.add(warp as usize).write(s) };
    }
    intrinsics::block_barrier();
    let mut total = 0.0;
    if warp == 0 {
        let x = if lane < warps {
            // SAFETY: as above, written before the barrier.
            unsafe { shared.add(lane as usize).read() }
        } else {
            0.0
        };
        total = warp_sum(x);
    }
    intrinsics::block_barrier();
    total
}

/// One round of the single-pass reduction with warp shuffles and shared
/// memory ([`block_sum`] per element): thread 0 stores the block's row and
/// arrives (acquire-release); the "last" flag goes to the block through
/// shared memory; the last block sums the block rows (a strided share per
/// rank, then [`block_sum`]), publishes the result row and announces the
/// round; the result goes out as in the global-memory version. Returns
/// whether the calling rank holds the result in its receive row.
pub fn shfl_reduce_round(
    world: &World,
    args: &CollArgs,
    rows: &ReduceRows,
    all: bool,
    round: u32,
    timeouts: &mut u64,
) -> Result<bool, Error> {
    let c = intrinsics::coordinates();
    let (thread, block, n) = (c.thread as usize, c.block as usize, c.block_dim as usize);
    let count = rows.count;
    for e in 0..count {
        let s = block_sum(args.values.read(rows.send + e)?);
        if thread == 0 {
            rows.partials.write(block * count + e, s)?;
        }
    }
    let arrivals = atomic_at(&args.counters, COUNTER_ARRIVALS)?;
    // The "last" flag lives after block_sum's words in the shared scratch.
    let flag = intrinsics::shared_block::<{ BLOCK_SUM_SHARED_BYTES + 4 }>()
        .wrapping_add(BLOCK_SUM_SHARED_BYTES) as *mut u32;
    if thread == 0 {
        // Release: the block's row is visible to whoever acquires the
        // counter's later value; Acquire: the last arrival sees every row.
        let before = arrivals.fetch_add(1, Ordering::AcqRel);
        // SAFETY: inside the shared scratch, written by thread 0 alone and
        // read by the block after the barrier.
        unsafe { flag.write((before == c.grid_dim - 1) as u32) };
    }
    intrinsics::block_barrier();
    // SAFETY: written before the barrier; rewritten only in the next round,
    // after the block barriers of block_sum and of the round's end.
    let last = unsafe { flag.read() } == 1;
    if last {
        // Thread 0's acquire covers the block through the barrier; the fence
        // makes each thread's own reads of other blocks' rows safe as well.
        intrinsics::fence(Ordering::AcqRel);
        for e in 0..count {
            let mut part = 0.0;
            let mut b = thread;
            while b < c.grid_dim as usize {
                part += rows.partials.read(b * count + e)?;
                b += n;
            }
            let s = block_sum(part);
            if thread == 0 {
                rows.result.write(e, s)?;
            }
        }
        if thread == 0 {
            arrivals.store(0, Ordering::Relaxed);
        }
    }
    publish_result(world, args, rows, all, last, round, timeouts)
}

gpu_mpi_device::kernel! {
    /// Native reduce to the root: the single-pass reduction of
    /// [`native_pi_single_pass`] on rows of `size` elements; the root picks
    /// the result up once the last block announced it.
    pub static NATIVE_REDUCE = fn native_reduce(world: &World, args: &CollArgs) -> Result<(), Error> {
        let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
        let mut timeouts = 0u64;
        let (elapsed, errors) = reduce_loop(
            world,
            args,
            |rows, it| native_reduce_round(world, args, rows, false, it + 1, &mut timeouts),
            || {
                grid.sync();
                Ok(())
            },
        )?;
        coll_results(args, world.rank() as usize, elapsed, errors + timeouts + grid.timeouts())
    }
}

gpu_mpi_device::kernel! {
    /// Native all-reduce: the single-pass reduction, then every block waits
    /// for the last block's announcement and reads the result row.
    pub static NATIVE_ALLREDUCE = fn native_allreduce(world: &World, args: &CollArgs) -> Result<(), Error> {
        let mut grid = GridBarrier::new(atomic_at(&args.counters, COUNTER_BARRIER)?);
        let mut timeouts = 0u64;
        let (elapsed, errors) = reduce_loop(
            world,
            args,
            |rows, it| native_reduce_round(world, args, rows, true, it + 1, &mut timeouts),
            || {
                grid.sync();
                Ok(())
            },
        )?;
        coll_results(args, world.rank() as usize, elapsed, errors + timeouts + grid.timeouts())
    }
}

// ---------------------------------------------------------------------------
// Physical limits.

/// Arguments of [`native_copy`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CopyArgs {
    /// Source words.
    pub src: GlobalSlice<u64>,
    /// Destination words (as many).
    pub dst: GlobalSlice<u64>,
}

gpu_mpi_device::kernel! {
    /// Device-to-device copy bandwidth: a grid-stride loop of 8-byte words
    /// (adjacent ranks touch adjacent words: coalesced on the GPU).
    pub static NATIVE_COPY = fn native_copy(world: &World, args: &CopyArgs) -> Result<(), Error> {
        let n = args.src.len().min(args.dst.len());
        let step = world.size() as usize;
        let mut i = world.rank() as usize;
        while i < n {
            args.dst.write(i, args.src.read(i)?)?;
            i += step;
        }
        Ok(())
    }
}

/// Arguments of [`native_atomic_ping_pong`], [`native_atomic_rmw`],
/// [`native_atomic_load_chain`] and [`native_atomic_contention`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AtomicArgs {
    /// The rank that answers rank 0.
    pub peer: u32,
    /// Untimed rounds first.
    pub warmup: u32,
    /// Timed rounds.
    pub iterations: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// `[0]` the flag (zero at launch); the load chain's links.
    pub flags: GlobalSlice<u32>,
    /// `LIMIT_RESULTS` words: `[0]` timed nanoseconds, `[1]` errors, `[2]`
    /// rounds seen; the load chain's last index in `[3]`.
    pub out: GlobalSlice<u64>,
}

gpu_mpi_device::kernel! {
    /// Two ranks ping-pong through one atomic flag: rank 0 stores `2i+1`
    /// (release) and waits for `2i+2`; the peer waits for `2i+1` and stores
    /// `2i+2`. A round trip is two stores and two acquire loads that see them.
    pub static NATIVE_ATOMIC_PING_PONG = fn native_atomic_ping_pong(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        let rank = world.rank() as u32;
        if rank != 0 && rank != args.peer {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let flag = atomic_at(&args.flags, 0)?;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        let mut seen = 0u64;
        for it in 0..total {
            if rank == 0 {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                flag.store(2 * it + 1, Ordering::Release);
                seen += spin_until(|| flag.load(Ordering::Acquire) == 2 * it + 2) as u64;
            } else {
                seen += spin_until(|| flag.load(Ordering::Acquire) == 2 * it + 1) as u64;
                flag.store(2 * it + 2, Ordering::Release);
            }
        }
        if rank == 0 {
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            let errors = (flag.load(Ordering::Relaxed) != 2 * total) as u64;
            args.out.write(0, elapsed)?;
            args.out.write(1, errors)?;
            args.out.write(2, seen)?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// One rank issues `iterations` dependent atomic adds on one word (each
    /// add's operand depends on the previous result): the latency of one
    /// atomic round trip to the memory system.
    pub static NATIVE_ATOMIC_RMW = fn native_atomic_rmw(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let word = atomic_at(&args.flags, 0)?;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        let mut v = 0u32;
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            // `v >> 31` is 0 (the word stays far below 2^31) but the
            // hardware cannot know: each add waits for the previous result.
            v = word.fetch_add(1 + (v >> 31), Ordering::Relaxed);
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        let errors = (word.load(Ordering::Relaxed) != total || (total > 0 && v != total - 1)) as u64;
        args.out.write(0, elapsed)?;
        args.out.write(1, errors)?;
        args.out.write(2, total as u64)
    }
}

gpu_mpi_device::kernel! {
    /// One rank follows a chain of dependent relaxed atomic loads through
    /// `flags` (each word holds the index of the next; the host links words
    /// 128 bytes apart): the latency of one load served by L2, which
    /// device-scope loads (`ld.relaxed.gpu`) always go to.
    pub static NATIVE_ATOMIC_LOAD_CHAIN = fn native_atomic_load_chain(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        // A copy in registers: each atomic load may write memory as far as
        // the compiler knows, so `args.flags` would be loaded again per link.
        let flags = args.flags;
        let mut i = 0usize;
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            i = atomic_at(&flags, i)?.load(Ordering::Relaxed) as usize;
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        args.out.write(0, elapsed)?;
        args.out.write(1, 0)?;
        args.out.write(2, total as u64)?;
        args.out.write(3, i as u64)
    }
}

/// Words of a link of the load chain (128 bytes apart, as the host lays
/// them out: `bench/src/limits.rs`).
pub const CHAIN_STRIDE: usize = 32;

/// Where the batch's load `k` is from its link's word: word `k` of the
/// `k`-th line after it.
#[inline(always)]
const fn k_offset(k: usize) -> usize {
    k * (CHAIN_STRIDE + 1)
}

gpu_mpi_device::kernel! {
    /// One rank follows the chain of [`native_atomic_load_chain`] a batch at
    /// a time: each step loads the link and 7 zero words of 7 other lines as
    /// one batch of relaxed loads (`load_relaxed_batch`, the engine's way of
    /// scanning slots), then goes to the sum of the 8 values, so each batch
    /// waits for the previous one but its loads do not wait for each other.
    /// Its time per batch less the chain's time per load, over the 7 loads
    /// after the first, is the timing model's `batch_load_ns`
    /// (docs/model.md).
    pub static NATIVE_ATOMIC_LOAD_BATCH = fn native_atomic_load_batch(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        check_len(&args.flags, 8 * CHAIN_STRIDE)?;
        let total = args.warmup + args.iterations;
        // In registers, as in `native_atomic_load_chain`: else each word's
        // address starts with a load of `args.flags`.
        let flags = args.flags;
        let mut start = intrinsics::clock_ns();
        let mut i = 0usize;
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            // Word k of the line k links on: zero for k > 0 (the host
            // stores links at word 0 of a line only, and 7 lines of zeros
            // after the last link, so no index wraps: a run-time modulo
            // per load, 64-bit division in software, cost more than the
            // loads).
            let word = |k: usize| atomic_at(&flags, i + k_offset(k));
            let words = [word(0)?, word(1)?, word(2)?, word(3)?, word(4)?, word(5)?, word(6)?, word(7)?];
            let v = gpu_mpi_device::abi::shim::load_relaxed_batch(words, 8);
            i = v.iter().map(|&x| x as usize).sum();
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        args.out.write(0, elapsed)?;
        args.out.write(1, 0)?;
        args.out.write(2, total as u64)?;
        args.out.write(3, i as u64)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank issues `iterations` dependent atomic adds on one word.
    /// They queue where the word lives, so the kernel's time less an empty
    /// kernel's, over the adds, is the interval between two
    /// read-modify-writes of one word. The host checks the word's count.
    pub static NATIVE_ATOMIC_CONTENTION = fn native_atomic_contention(_world: &World, args: &AtomicArgs) -> Result<(), Error> {
        let word = atomic_at(&args.flags, 0)?;
        let mut v = 0u32;
        for _ in 0..args.iterations {
            // As in `native_atomic_rmw`: the operand depends on the result
            // (`v >> 31` is 0), so each add returns its value (`ATOM`, not
            // a fire-and-forget `RED`).
            v = word.fetch_add(1 + (v >> 31), Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Block 0's first warp runs `warmup + iterations` dependent `step`s (the
/// warp's mask, a lane's value: its next value) from `first` (a lane's
/// index: its first value) and times the last `iterations`. Lane 0 writes
/// the time, whether its value ended at `expect` (the step count: lane 0's
/// last value), and the step count.
fn warp_chain(
    args: &AtomicArgs,
    first: impl Fn(u32) -> u32,
    step: impl Fn(u32, u32) -> u32,
    expect: impl Fn(u32) -> u32,
) -> Result<(), Error> {
    let c = intrinsics::coordinates();
    if c.block != 0 || c.thread >= 32 {
        return Ok(());
    }
    check_len(&args.out, LIMIT_RESULTS)?;
    let mask = intrinsics::warp_mask();
    let total = args.warmup + args.iterations;
    let mut start = intrinsics::clock_ns();
    let mut v = first(c.thread);
    for it in 0..total {
        if it == args.warmup {
            start = intrinsics::clock_ns();
        }
        v = step(mask, v);
    }
    let elapsed = intrinsics::clock_ns().wrapping_sub(start);
    if c.thread == 0 {
        args.out.write(0, elapsed)?;
        args.out.write(1, (v != expect(total)) as u64)?;
        args.out.write(2, total as u64)?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// The lanes of block 0's first warp pass values around with
    /// `iterations` dependent shuffles (each lane's next value is its
    /// neighbour's plus one): the latency of one warp shuffle, the timing
    /// model's `warp_op_ns`. Lane 0 checks where its value ended.
    pub static NATIVE_SHUFFLE_CHAIN = fn native_shuffle_chain(_world: &World, args: &AtomicArgs) -> Result<(), Error> {
        warp_chain(
            args,
            |lane| lane,
            |mask, v| intrinsics::shfl_xor_sync(mask, v, 1).wrapping_add(1),
            // Lane 0 holds lane (total mod 2)'s start plus one per step.
            |total| total % 2 + total,
        )
    }
}

gpu_mpi_device::kernel! {
    /// The lanes of block 0's first warp run `iterations` dependent
    /// `match.all.sync.b64`s on a value they hold alike (each step's value
    /// is the last one plus 1 when they matched, plus 2 when not): the
    /// latency of one match, which the timing model prices as a shuffle
    /// (`warp_op_ns`); the keyed world barrier compares a warp's keys with
    /// it. Lane 0 checks where its value ended.
    pub static NATIVE_MATCH_CHAIN = fn native_match_chain(_world: &World, args: &AtomicArgs) -> Result<(), Error> {
        warp_chain(
            args,
            |_| 0,
            |mask, v| {
                let same = intrinsics::match_all_sync_u64(mask, u64::from(v) << 32 | 1);
                v.wrapping_add(2 - u32::from(same))
            },
            // Every step matched: one per step.
            |total| total,
        )
    }
}

gpu_mpi_device::kernel! {
    /// Block 0 meets in `iterations` block barriers, every thread arriving
    /// at once: the cost of one barrier after its last arrival, the timing
    /// model's `block_barrier_ns`. The last round counts its arrivals.
    pub static NATIVE_BLOCK_BARRIER = fn native_block_barrier(_world: &World, args: &AtomicArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        if c.block != 0 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            intrinsics::block_barrier();
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        let arrived = intrinsics::block_barrier_count(true);
        if c.thread == 0 {
            args.out.write(0, elapsed)?;
            args.out.write(1, (arrived != c.block_dim) as u64)?;
            args.out.write(2, total as u64)?;
        }
        Ok(())
    }
}

/// One rank issues `total` dependent block-scope adds with ordering `o`
/// on the last of its block's library words (which this kernel's
/// non-blocking collectives, none, would use, and which its entry in a
/// block of 32 leaves as it found it): the latency of one atomic
/// of the block's shared memory, with two block-scope fences when `o`
/// is `AcqRel`.
fn block_rmw_chain(world: &World, args: &AtomicArgs, o: Ordering) -> Result<(), Error> {
    if world.rank() != 0 {
        return Ok(());
    }
    check_len(&args.out, LIMIT_RESULTS)?;
    // SAFETY: the last 8-aligned word of the block's words, touched by
    // this rank alone and only atomically.
    let word =
        unsafe { intrinsics::atomic_u64_at(intrinsics::block_words(), intrinsics::BLOCK_WORDS_BYTES - 8) };
    // The entry zeroes only the words the block's nodes can use (on the
    // GPU the others hold what the last kernel left).
    word.store(0, Ordering::Relaxed);
    let total = args.warmup + args.iterations;
    let mut start = intrinsics::clock_ns();
    let mut v = 0u64;
    for it in 0..total {
        if it == args.warmup {
            start = intrinsics::clock_ns();
        }
        // As in `native_atomic_rmw`: each add waits for the previous one.
        v = word.fetch_add_block(1 + (v >> 63), o);
    }
    let elapsed = intrinsics::clock_ns().wrapping_sub(start);
    let errors =
        (word.load(Ordering::Relaxed) != u64::from(total) || (total > 0 && v != u64::from(total) - 1)) as u64;
    args.out.write(0, elapsed)?;
    args.out.write(1, errors)?;
    args.out.write(2, u64::from(total))
}

gpu_mpi_device::kernel! {
    /// [`block_rmw_chain`] with relaxed adds: the timing model's
    /// `shared_ns` (with the issue of each).
    pub static NATIVE_BLOCK_RMW = fn native_block_rmw(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        block_rmw_chain(world, args, Ordering::Relaxed)
    }
}

gpu_mpi_device::kernel! {
    /// [`block_rmw_chain`] with acquire-release adds: less the relaxed
    /// chain, two block-scope fences an add (the model's `cta_fence_ns`).
    pub static NATIVE_BLOCK_RMW_ACQ_REL = fn native_block_rmw_acq_rel(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        block_rmw_chain(world, args, Ordering::AcqRel)
    }
}

/// 16 bytes of shared memory, 16-aligned: what one load of a
/// non-blocking collective's batch of small words reads (a pair of words).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct SharedPair([u64; 2]);

/// Pairs [`native_shared_load_batch`] keeps in the block's library words:
/// a batch of 8 from any of the first 8.
const SHARED_PAIRS: usize = 16;

gpu_mpi_device::kernel! {
    /// One rank loads 8 independent 16-byte pairs of its block's shared
    /// memory as one batch (`load_plain_batch`, the way a non-blocking
    /// collective's level-0 node reads its ranks' small words), then starts
    /// the next batch at a pair its values pick (always the first: the pairs
    /// hold zeros), so each batch waits for the previous one but its loads
    /// do not wait for each other. Its time per batch less the block-scope
    /// atomic chain's per add ([`native_block_rmw`], the model's
    /// `shared_ns` and one issue), over the 7 loads after the first, is
    /// the model's `shared_batch_load_ns`. The pairs are the block's
    /// library words before the last (which [`block_rmw_chain`] uses):
    /// this kernel starts no non-blocking collective.
    pub static NATIVE_SHARED_LOAD_BATCH = fn native_shared_load_batch(world: &World, args: &AtomicArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let first = (intrinsics::BLOCK_WORDS_BYTES - 8 - SHARED_PAIRS * 16) & !15;
        for w in 0..2 * SHARED_PAIRS {
            // SAFETY: inside the block's words (`first` + 256 <= 2,104),
            // 8-aligned; this rank alone touches them.
            unsafe { intrinsics::atomic_u64_at(intrinsics::block_words(), first + 8 * w) }.store(0, Ordering::Relaxed);
        }
        let base = intrinsics::block_words().wrapping_add(first) as *const u8;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        let mut i = 0usize;
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            // SAFETY: pairs `i..i + 8` with `i < 8`: inside the 16 pairs
            // zeroed above, 16-aligned (the block's words are), written by
            // nobody meanwhile.
            let v: [SharedPair; 8] =
                unsafe { gpu_mpi_device::abi::shim::load_plain_batch(base.wrapping_add(16 * i), 16, 8) };
            // The next batch waits for all 8 values through a tree four
            // instructions deep (32-bit maxima: LLVM would turn a tree of
            // ORs or adds into a chain of 15, about 40 ns on a batch that
            // costs 80).
            let o = |k: usize| (v[k].0[0] as u32) | (v[k].0[1] as u32);
            let m = |a: u32, b: u32| a.max(b);
            let any = m(m(m(o(0), o(1)), m(o(2), o(3))), m(m(o(4), o(5)), m(o(6), o(7))));
            i = (any & 7) as usize;
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        args.out.write(0, elapsed)?;
        args.out.write(1, (i != 0) as u64)?;
        args.out.write(2, u64::from(total))?;
        args.out.write(3, i as u64)
    }
}

/// Arguments of [`native_element_copy`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ElementCopyArgs {
    /// Elements each lane copies.
    pub elements: u32,
    /// Whether the lanes' elements lie `elements` apart (each warp access
    /// touches 32 lines) rather than side by side (one line or two).
    pub apart: u32,
    /// Source words, `32 × elements`.
    pub src: GlobalSlice<u64>,
    /// Destination words, as many.
    pub dst: GlobalSlice<u64>,
    /// `LIMIT_RESULTS` words, as [`AtomicArgs::out`].
    pub out: GlobalSlice<u64>,
}

gpu_mpi_device::kernel! {
    /// Block 0's first warp copies `elements` words per lane, each a
    /// volatile load and the store of its value (`write(i, read(i))`, the
    /// native collectives' element loops), with the lanes' words side by
    /// side or `elements` apart: one dependent load per element, coalesced
    /// or not. The timing model prices both alike (docs/model.md, "What
    /// the model cannot see").
    pub static NATIVE_ELEMENT_COPY = fn native_element_copy(_world: &World, args: &ElementCopyArgs) -> Result<(), Error> {
        let c = intrinsics::coordinates();
        if c.block != 0 || c.thread >= 32 {
            return Ok(());
        }
        check_len(&args.out, LIMIT_RESULTS)?;
        let n = args.elements as usize;
        check_len(&args.src, 32 * n)?;
        check_len(&args.dst, 32 * n)?;
        let lane = c.thread as usize;
        let at = |i: usize| if args.apart != 0 { lane * n + i } else { i * 32 + lane };
        let start = intrinsics::clock_ns();
        for i in 0..n {
            args.dst.write(at(i), args.src.read(at(i))?)?;
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        if lane == 0 {
            args.out.write(0, elapsed)?;
            args.out.write(1, 0)?;
            args.out.write(2, n as u64)?;
        }
        Ok(())
    }
}

/// Arguments of [`native_chunk_copy`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ChunkCopyArgs {
    /// Bytes each rank copies.
    pub chunk: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Source bytes, `chunk` per rank.
    pub src: GlobalSlice<u8>,
    /// Destination bytes, as many.
    pub dst: GlobalSlice<u8>,
}

gpu_mpi_device::kernel! {
    /// Every rank copies a chunk of its own with one byte copy (as a
    /// message's payload is copied), all ranks at once: their combined rate
    /// is the device bandwidth that byte copies share, once enough ranks
    /// copy that each one's own rate is not the bound.
    pub static NATIVE_CHUNK_COPY = fn native_chunk_copy(world: &World, args: &ChunkCopyArgs) -> Result<(), Error> {
        let n = args.chunk as usize;
        let at = world.rank() as usize * n;
        // SAFETY: each rank writes its own chunk of `dst`, and `src` is
        // only read, in this launch.
        let (dst, src) = unsafe { (args.dst.slice_mut(at, n)?, args.src.slice(at, n)?) };
        copy(dst, src);
        Ok(())
    }
}
