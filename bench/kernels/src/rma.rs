//! One-sided communication benchmarks (`gpu-mpi-bench rma`): the MPI
//! window kernels and their native twins, OSU one-sided style.
//!
//! - [`BENCH_RMA_LATENCY`]: an 8-byte put, get or accumulate from rank 0
//!   to a rank of another block, in one of the synchronisation modes
//!   ([`SYNC_LOCK`] ..= [`SYNC_NOTIFY`]), on a window over the pair's
//!   communicator; [`NATIVE_RMA_HANDOFF`], the same hand-off as a plain
//!   store and a flag.
//! - [`BENCH_RMA_PUT_BW`]: every rank puts a block into its right
//!   neighbour's window; [`NATIVE_RMA_PUT_BW`] copies the same bytes.
//! - [`BENCH_RMA_HALO`]: a 1-D ring halo exchange with `put_notify` or
//!   with `send_receive`; [`NATIVE_RMA_HALO`], with stores and flags.
//! - [`BENCH_RMA_FENCE`]: `MPI_Win_fence` in the barrier benchmark's loop.
//! - [`BENCH_RMA_BLOCK`]: every rank of a block adds to its own counter
//!   in a shared-memory window over its block (`fetch_and_op`, each add
//!   waiting for the last), the window in the world memory or in the
//!   block's shared memory as the launch gives it; [`NATIVE_RMA_BLOCK`],
//!   the same adds as atomics on words of the block's shared memory.
//!
//! Every kernel checks what it moved and writes an error count (per rank
//! [`RMA_RESULTS`] words of [`RmaArgs::out`]: `[0]` timed nanoseconds,
//! `[1]` errors, `[2]` values checked), which the host turns into a
//! failure naming the kernel.

use crate::mpi::{barrier_peer, check_full, check_stamp, fill_pattern, stamp, CollArgs};
use crate::native::{atomic_at, barrier_loop, coll_results, reached, spin_until, GridBarrier};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::communicator::Color;
use gpu_mpi_device::intrinsics::{self, Ordering};
use gpu_mpi_device::point_to_point::send_receive_into_with_tags;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::{LockType, Mode, Window};
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Words of [`RmaArgs::out`] per rank.
pub const RMA_RESULTS: usize = 4;
/// Words of [`RmaArgs::flags`] per rank (one 64-byte line each).
pub const RMA_FLAG_STRIDE: usize = 16;

/// Latency mode: `lock` (shared) and `unlock` around every operation.
pub const SYNC_LOCK: u32 = 0;
/// Latency mode: `lock_all` once, then every operation and a `flush`.
pub const SYNC_FLUSH: u32 = 1;
/// Latency mode: every operation and a `fence` on both ranks.
pub const SYNC_FENCE: u32 = 2;
/// Latency mode: post/start/complete/wait around every operation.
pub const SYNC_PSCW: u32 = 3;
/// Latency mode: a ping-pong of notified operations (`put_notify` or
/// `accumulate_notify`, then `wait_notifications`) under `lock_all`.
pub const SYNC_NOTIFY: u32 = 4;

/// Operation: `put` of one `u64`.
pub const OP_PUT: u32 = 0;
/// Operation: `get` of one `u64` (no notified form).
pub const OP_GET: u32 = 1;
/// Operation: `accumulate` (sum) of one `u64`.
pub const OP_ACC: u32 = 2;

/// Halo mode: `put_notify` into both neighbours' windows.
pub const HALO_NOTIFY: u32 = 0;
/// Halo mode: two `send_receive`s, one per direction.
pub const HALO_SENDRECV: u32 = 1;

/// Arguments of the one-sided benchmarks, MPI and native.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RmaArgs {
    /// Latency: a `SYNC_*` mode; halo: a `HALO_*` mode.
    pub mode: u32,
    /// Latency: an `OP_*` operation.
    pub op: u32,
    /// Latency: the target's world rank (rank 0 is the origin).
    pub peer: u32,
    /// Bytes per operation (bandwidth: per put; halo: per side), a
    /// multiple of 8.
    pub bytes: u32,
    /// Untimed rounds first.
    pub warmup: u32,
    /// Timed rounds.
    pub iterations: u32,
    /// Words of [`data`](Self::data) per rank ([`latency_words`],
    /// [`put_bw_words`], [`halo_words`]).
    pub part: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Per rank `part` words: its window memory and its origin buffers.
    pub data: GlobalSlice<u64>,
    /// Per rank [`RMA_FLAG_STRIDE`] words (native kernels), zero at launch.
    pub flags: GlobalSlice<u32>,
    /// Per rank [`RMA_RESULTS`] words.
    pub out: GlobalSlice<u64>,
}

/// Words per rank of the latency kernels: the window's two elements,
/// round `it` on element `it % 2` (the next round's operation may reach
/// the target before it has read this round's: with a fence, the epoch
/// after the one it reads in).
pub const fn latency_words() -> usize {
    2
}

/// Words per rank of the bandwidth kernels for `bytes`: the window, then
/// the origin block.
pub const fn put_bw_words(bytes: u32) -> usize {
    2 * (bytes as usize / 8)
}

/// Words per rank of the halo kernels for `bytes` per side: the window
/// (two parities of the two halos: `(2 * parity + side) * words`, side 0
/// from the left neighbour, 1 from the right), then the boundaries sent
/// left and right.
pub const fn halo_words(bytes: u32) -> usize {
    6 * (bytes as usize / 8)
}

/// The value rank 0 puts in round `it` (never zero).
pub const fn put_value(it: u32) -> u64 {
    0x9e37_79b9_0000_0000 | (it as u64 + 1)
}

/// The value the target's window holds for `get`.
pub const GET_VALUE: u64 = 0x5eed_5eed_0000_0001;

/// What the accumulates of `j + 1` in rounds `j = it, it - 2, ..` leave
/// in element `it % 2`.
pub const fn acc_sum(it: u32) -> u64 {
    let (k, m) = ((it % 2) as u64, (it / 2) as u64 + 1);
    m * (k + 1) + m * (m - 1)
}

fn results(
    out: &GlobalSlice<u64>,
    rank: usize,
    elapsed: u64,
    errors: u64,
    checked: u64,
) -> Result<(), Error> {
    let at = rank * RMA_RESULTS;
    out.write(at, elapsed)?;
    out.write(at + 1, errors)?;
    out.write(at + 2, checked)
}

/// What `op` leaves in element `it % 2` after rounds `0..=it`.
fn expected(op: u32, it: u32) -> u64 {
    match op {
        OP_GET => GET_VALUE,
        OP_ACC => acc_sum(it),
        _ => put_value(it),
    }
}

/// Rank 0's operation of round `it` on element `it % 2` of `target`'s
/// window; a get checks what it read (returns whether it was right).
fn origin_op(win: &Window<'_, u64>, op: u32, it: u32, target: i32) -> Result<bool, Error> {
    let at = (it % 2) as usize;
    match op {
        OP_GET => {
            let mut got = [0u64];
            win.get(&mut got, target, at)?;
            Ok(got[0] == GET_VALUE)
        }
        OP_ACC => {
            win.accumulate(&[it as u64 + 1], target, at, SystemOperation::sum())?;
            Ok(true)
        }
        _ => {
            win.put(&[put_value(it)], target, at)?;
            Ok(true)
        }
    }
}

gpu_mpi_device::kernel! {
    /// osu_put_latency, osu_get_latency and osu_acc_latency inside a
    /// kernel: rank 0 (origin) and rank `peer` (target) split off a
    /// communicator of their own and make a window of two `u64` each
    /// (round `it` on element `it % 2`);
    /// rank 0 times `iterations` rounds of one 8-byte operation with the
    /// synchronisation of `mode`. The target checks its element after
    /// every round where the mode synchronises it (fence, PSCW, notify),
    /// else after the last; a get checks every value; the notified
    /// ping-pong checks both ways.
    pub static BENCH_RMA_LATENCY = fn bench_rma_latency(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let colour = if r == 0 || r == args.peer { Color::with_value(0) } else { Color::undefined() };
        let Some(pair) = world.split_by_color(colour)? else { return Ok(()) };
        let me = pair.rank();
        let other = 1 - me;
        let cell = r as usize * args.part as usize;
        // The target's element is read through the slice (a load the
        // timing model prices, as the native's) after the synchronisation
        // that makes the origin's operation visible.
        let local = |it: u32| args.data.read(cell + (it % 2) as usize);
        // SAFETY: this rank's own elements, reached by others only through
        // the window, whose synchronisation orders their accesses.
        let memory = unsafe { args.data.slice_mut(cell, latency_words())? };
        memory.fill(if me == 1 && args.op == OP_GET { GET_VALUE } else { 0 });
        let win = Window::<u64>::create(&pair, memory)?;
        let (op, mode) = (args.op, args.mode);
        let total = args.warmup + args.iterations;
        let (mut errors, mut checked) = (0u64, 0u64);
        let mut check = |ok: bool| {
            checked += 1;
            if !ok {
                errors += 1;
            }
        };
        if matches!(mode, SYNC_FLUSH | SYNC_NOTIFY) {
            win.lock_all()?;
        }
        if mode == SYNC_FENCE {
            win.fence()?;
        }
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            if me == 0 {
                match mode {
                    SYNC_LOCK => {
                        win.lock(LockType::Shared, other)?;
                        let ok = origin_op(&win, op, it, other)?;
                        win.unlock(other)?;
                        if op == OP_GET {
                            check(ok);
                        }
                    }
                    SYNC_FLUSH => {
                        let ok = origin_op(&win, op, it, other)?;
                        win.flush(other)?;
                        if op == OP_GET {
                            check(ok);
                        }
                    }
                    SYNC_FENCE => {
                        let ok = origin_op(&win, op, it, other)?;
                        win.fence()?;
                        if op == OP_GET {
                            check(ok);
                        }
                    }
                    SYNC_PSCW => {
                        let group = [other];
                        let epoch = win.start(&group)?;
                        let ok = origin_op(&win, op, it, other)?;
                        epoch.complete()?;
                        if op == OP_GET {
                            check(ok);
                        }
                    }
                    _ => {
                        notified(&win, op, it, other)?;
                        win.wait_notifications(0, 1)?;
                        check(local(it)? == expected(op, it));
                    }
                }
            } else {
                match mode {
                    SYNC_FENCE => {
                        win.fence()?;
                        check(local(it)? == expected(op, it));
                    }
                    SYNC_PSCW => {
                        let group = [other];
                        win.post(&group)?.wait()?;
                        check(local(it)? == expected(op, it));
                    }
                    SYNC_NOTIFY => {
                        win.wait_notifications(0, 1)?;
                        check(local(it)? == expected(op, it));
                        notified(&win, op, it, other)?;
                    }
                    // Passive target: nothing to do until the end.
                    _ => {}
                }
            }
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        if matches!(mode, SYNC_FLUSH | SYNC_NOTIFY) {
            win.unlock_all()?;
        }
        if matches!(mode, SYNC_LOCK | SYNC_FLUSH) {
            // The origin's unlock (release) before the barrier, the
            // target's check after it.
            pair.barrier()?;
            if me == 1 && total > 0 {
                check(local(total - 1)? == expected(op, total - 1));
            }
        }
        win.free()?;
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

/// The notified operation of round `it` to element `it % 2` of `target`:
/// `accumulate_notify` for [`OP_ACC`], else `put_notify`; counter 0.
fn notified(win: &Window<'_, u64>, op: u32, it: u32, target: i32) -> Result<(), Error> {
    let at = (it % 2) as usize;
    if op == OP_ACC {
        win.accumulate_notify(&[it as u64 + 1], target, at, SystemOperation::sum(), 0)
    } else {
        win.put_notify(&[put_value(it)], target, at, 0)
    }
}

gpu_mpi_device::kernel! {
    /// The native hand-off the notified put is compared with: rank 0
    /// stores [`put_value`] into the peer's element with a plain store and
    /// raises a flag (release); the peer waits for it (acquire), checks
    /// the value, stores it into rank 0's element and raises its own flag;
    /// rank 0 waits and checks. Rank 0 times the round trips.
    pub static NATIVE_RMA_HANDOFF = fn native_rma_handoff(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        if r != 0 && r != args.peer {
            return Ok(());
        }
        let origin = r == 0;
        let part = args.part as usize;
        let (mine, theirs) = if origin { (0, args.peer as usize * part) } else { (args.peer as usize * part, 0) };
        let ping = atomic_at(&args.flags, 0)?;
        let pong = atomic_at(&args.flags, RMA_FLAG_STRIDE)?;
        let (flag_in, flag_out) = if origin { (pong, ping) } else { (ping, pong) };
        let total = args.warmup + args.iterations;
        let (mut errors, mut checked) = (0u64, 0u64);
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            if origin {
                args.data.write(theirs, put_value(it))?;
                flag_out.store(it + 1, Ordering::Release);
            }
            let arrived = spin_until(|| flag_in.load(Ordering::Acquire) == it + 1);
            checked += 1;
            if !arrived || args.data.read(mine)? != put_value(it) {
                errors += 1;
            }
            if !origin {
                args.data.write(theirs, put_value(it))?;
                flag_out.store(it + 1, Ordering::Release);
            }
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

/// This rank's window block and origin block of the bandwidth kernels.
///
/// # Safety
/// As [`GlobalSlice::slice_mut`]: the blocks are the calling rank's; the
/// window block is reached by others only as the kernel's protocol orders.
unsafe fn put_bw_blocks<'a>(args: &RmaArgs, rank: usize) -> Result<(&'a mut [u64], &'a mut [u64]), Error> {
    let words = args.bytes as usize / 8;
    let at = rank * args.part as usize;
    // SAFETY: forwarded from the caller.
    unsafe {
        Ok((
            args.data.slice_mut(at, words)?,
            args.data.slice_mut(at + words, words)?,
        ))
    }
}

/// The pattern seed of rank `r`'s blocks.
fn seed_of(r: u32) -> u32 {
    r + 1
}

gpu_mpi_device::kernel! {
    /// Put bandwidth: every rank puts its block of `bytes` (stamped with
    /// the round) into its right neighbour's window, `lock_all` held, a
    /// `flush` after each put; after `unlock_all` and a barrier each rank
    /// checks every byte of its window against its left neighbour's last
    /// block. Each rank times its rounds.
    pub static BENCH_RMA_PUT_BW = fn bench_rma_put_bw(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        // SAFETY: this rank's blocks; its window block is written by its
        // left neighbour only through the window, and read here after
        // the barrier.
        let (window, block) = unsafe { put_bw_blocks(args, r as usize)? };
        fill_pattern(bytemuck::cast_slice_mut(block), seed_of(r));
        let mut win = Window::<u64>::create(world, window)?;
        let right = ((r + 1) % p) as i32;
        let total = args.warmup + args.iterations;
        win.lock_all()?;
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            stamp(bytemuck::cast_slice_mut(block), seed_of(r), it);
            win.put(block, right, 0)?;
            win.flush(right)?;
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        win.unlock_all()?;
        world.barrier()?;
        let left = (r + p - 1) % p;
        let right_data = total == 0 || check_full(bytemuck::cast_slice(win.local_mut()), seed_of(left), total - 1);
        win.free()?;
        results(&args.out, r as usize, elapsed, u64::from(!right_data), 1)
    }
}

gpu_mpi_device::kernel! {
    /// The native twin of [`BENCH_RMA_PUT_BW`]: every rank copies its
    /// stamped block straight into its right neighbour's window block,
    /// every round; a grid barrier; each rank checks its own block.
    pub static NATIVE_RMA_PUT_BW = fn native_rma_put_bw(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        // SAFETY: this rank's origin block; its window block is written by
        // its left neighbour alone before the grid barrier, read here
        // after it.
        let (window, block) = unsafe { put_bw_blocks(args, r as usize)? };
        // SAFETY: the right neighbour's window block, written by this rank
        // alone before the grid barrier (its owner reads it after).
        let (target, _) = unsafe { put_bw_blocks(args, ((r + 1) % p) as usize)? };
        fill_pattern(bytemuck::cast_slice_mut(block), seed_of(r));
        let mut grid = GridBarrier::new(atomic_at(&args.flags, 0)?);
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            stamp(bytemuck::cast_slice_mut(block), seed_of(r), it);
            copy_words(target, block);
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        grid.sync();
        let left = (r + p - 1) % p;
        let right_data = total == 0 || check_full(bytemuck::cast_slice(window), seed_of(left), total - 1);
        results(&args.out, r as usize, elapsed, u64::from(!right_data) + grid.timeouts(), 1)
    }
}

/// One thread's copy of `src` into `dst` as a put's: with 16-byte
/// vectors, four in flight, where both ends are 16-byte aligned (what a
/// CUDA kernel's `int4` copy does), else word by word.
fn copy_words(dst: &mut [u64], src: &[u64]) {
    let bytes = 8 * dst.len().min(src.len());
    // SAFETY: both are valid for `bytes` bytes and distinct blocks; the
    // kernel's protocol orders the copy against the owner's accesses.
    unsafe { intrinsics::copy_wide(dst.as_mut_ptr() as *mut u8, src.as_ptr() as *const u8, bytes) }
}

/// A rank's halo blocks.
struct Halo<'a> {
    /// Its window: four blocks, parity 0 from the left, parity 0 from the
    /// right, parity 1 from the left, parity 1 from the right.
    window: &'a mut [u64],
    /// The boundary it sends left.
    to_left: &'a mut [u64],
    /// The boundary it sends right.
    to_right: &'a mut [u64],
}

/// The halo blocks of rank `rank`.
///
/// # Safety
/// As [`GlobalSlice::slice_mut`]: the blocks are `rank`'s; others reach
/// them only as the kernel's protocol orders.
unsafe fn halo_blocks<'a>(args: &RmaArgs, rank: usize) -> Result<Halo<'a>, Error> {
    let words = args.bytes as usize / 8;
    let at = rank * args.part as usize;
    // SAFETY: forwarded from the caller.
    unsafe {
        Ok(Halo {
            window: args.data.slice_mut(at, 4 * words)?,
            to_left: args.data.slice_mut(at + 4 * words, words)?,
            to_right: args.data.slice_mut(at + 5 * words, words)?,
        })
    }
}

/// The seed of the boundary rank `r` sends left (`right == false`) or right.
fn boundary_seed(r: u32, right: bool) -> u32 {
    2 * r + 1 + right as u32
}

/// Whether round `it`'s halos (parity `it % 2`) in `window` carry the
/// left neighbour's right boundary and the right neighbour's left one
/// (every byte with `full`, else the stamps).
fn halos_right(window: &[u64], words: usize, it: u32, left: u32, right: u32, full: bool) -> bool {
    let q = (it % 2) as usize * 2 * words;
    let from_left: &[u8] = bytemuck::cast_slice(&window[q..q + words]);
    let from_right: &[u8] = bytemuck::cast_slice(&window[q + words..q + 2 * words]);
    let check = if full { check_full } else { check_stamp };
    check(from_left, boundary_seed(left, true), it) && check(from_right, boundary_seed(right, false), it)
}

gpu_mpi_device::kernel! {
    /// A 1-D ring halo exchange: every round each rank sends `bytes` to
    /// each neighbour and receives as many from each, into the halves of
    /// its window for the round's parity. [`HALO_NOTIFY`]: `put_notify`
    /// into each neighbour's window (counter 0 for what goes right, 1 for
    /// what goes left), `lock_all` held, then a wait for one notification
    /// on each counter. [`HALO_SENDRECV`]: `send_receive` right, then left.
    /// Every round checks the stamps, the last every byte.
    pub static BENCH_RMA_HALO = fn bench_rma_halo(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let words = args.bytes as usize / 8;
        // SAFETY: this rank's blocks; its window is written by its
        // neighbours only through the window or as message payloads, each
        // round's halves after the round before was checked.
        let Halo { window, to_left, to_right } = unsafe { halo_blocks(args, r as usize)? };
        fill_pattern(bytemuck::cast_slice_mut(to_left), boundary_seed(r, false));
        fill_pattern(bytemuck::cast_slice_mut(to_right), boundary_seed(r, true));
        let total = args.warmup + args.iterations;
        let (mut errors, mut checked) = (0u64, 0u64);
        let mut start = intrinsics::clock_ns();
        if args.mode == HALO_NOTIFY {
            let mut win = Window::<u64>::create(world, window)?;
            win.lock_all()?;
            // `lock_all` costs O(size) atomics and ranks finish it at very
            // different times: start the rounds together, as the native's.
            world.barrier()?;
            for it in 0..total {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                stamp(bytemuck::cast_slice_mut(to_left), boundary_seed(r, false), it);
                stamp(bytemuck::cast_slice_mut(to_right), boundary_seed(r, true), it);
                let q = (it % 2) as usize * 2 * words;
                win.put_notify(to_right, right as i32, q, 0)?;
                win.put_notify(to_left, left as i32, q + words, 1)?;
                win.wait_notifications(0, 1)?;
                win.wait_notifications(1, 1)?;
                checked += 1;
                if !halos_right(win.local_mut(), words, it, left, right, it + 1 == total) {
                    errors += 1;
                }
            }
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            win.unlock_all()?;
            win.free()?;
            return results(&args.out, r as usize, elapsed, errors, checked);
        }
        let (to_l, to_r) = (world.process_at_rank(left as i32), world.process_at_rank(right as i32));
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            stamp(bytemuck::cast_slice_mut(to_left), boundary_seed(r, false), it);
            stamp(bytemuck::cast_slice_mut(to_right), boundary_seed(r, true), it);
            let q = (it % 2) as usize * 2 * words;
            let (from_left, from_right) = window[q..q + 2 * words].split_at_mut(words);
            send_receive_into_with_tags(&to_right[..], &to_r, 10, from_left, &to_l, 10)?;
            send_receive_into_with_tags(&to_left[..], &to_l, 11, from_right, &to_r, 11)?;
            checked += 1;
            if !halos_right(window, words, it, left, right, it + 1 == total) {
                errors += 1;
            }
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

gpu_mpi_device::kernel! {
    /// The native halo exchange: every round each rank copies its
    /// boundaries straight into its neighbours' halves for the round's
    /// parity, raises its flag to the round (release), and waits until
    /// both neighbours' flags reach it (acquire); then checks as
    /// [`BENCH_RMA_HALO`] does.
    pub static NATIVE_RMA_HALO = fn native_rma_halo(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let words = args.bytes as usize / 8;
        // SAFETY: this rank's blocks; its halves are written by its
        // neighbours only between the flags that order them.
        let Halo { window, to_left, to_right } = unsafe { halo_blocks(args, r as usize)? };
        let part = args.part as usize;
        let (right_at, left_at) = (right as usize * part, left as usize * part);
        fill_pattern(bytemuck::cast_slice_mut(to_left), boundary_seed(r, false));
        fill_pattern(bytemuck::cast_slice_mut(to_right), boundary_seed(r, true));
        let mine = atomic_at(&args.flags, r as usize * RMA_FLAG_STRIDE)?;
        let from_left = atomic_at(&args.flags, left as usize * RMA_FLAG_STRIDE)?;
        let from_right = atomic_at(&args.flags, right as usize * RMA_FLAG_STRIDE)?;
        let total = args.warmup + args.iterations;
        let (mut errors, mut checked) = (0u64, 0u64);
        let mut start = intrinsics::clock_ns();
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            stamp(bytemuck::cast_slice_mut(to_left), boundary_seed(r, false), it);
            stamp(bytemuck::cast_slice_mut(to_right), boundary_seed(r, true), it);
            let q = (it % 2) as usize * 2 * words;
            // SAFETY: this rank's halves of its neighbours' windows (from
            // the left in the right one's, from the right in the left
            // one's: distinct even when they are one rank), written by
            // this rank alone; this parity's only after both owners' flags
            // said they had checked its previous round.
            let (into_right, into_left) =
                unsafe { (args.data.slice_mut(right_at + q, words)?, args.data.slice_mut(left_at + q + words, words)?) };
            copy_words(into_right, to_right);
            copy_words(into_left, to_left);
            mine.store(it + 1, Ordering::Release);
            let arrived = spin_until(|| {
                reached(from_left.load(Ordering::Acquire), it + 1) && reached(from_right.load(Ordering::Acquire), it + 1)
            });
            checked += 1;
            if !arrived || !halos_right(window, words, it, left, right, it + 1 == total) {
                errors += 1;
            }
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

gpu_mpi_device::kernel! {
    /// `MPI_Win_fence` against the world barrier: a window of one `u64`
    /// per rank over [`CollArgs::values`]; first one checked epoch (every
    /// rank puts its rank + 1 into [`barrier_peer`]'s element between two
    /// fences and checks what its own source put), then the barrier
    /// benchmark's loop ([`barrier_loop`]) with the fence as its barrier.
    pub static BENCH_RMA_FENCE = fn bench_rma_fence(world: &World, args: &CollArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        // SAFETY: this rank's element, reached by others only through the
        // window between fences.
        let memory = unsafe { args.values.slice_mut(r as usize, 1)? };
        let win = Window::<f64>::create(world, memory)?;
        win.fence()?;
        win.put(&[f64::from(r + 1)], barrier_peer(r, p) as i32, 0)?;
        win.fence()?;
        // The rank whose peer this rank is: `barrier_peer` adds p / 2 + 1.
        let source = (r + p - (p / 2 + 1) % p) % p;
        let epoch_wrong = args.values.read(r as usize)? != f64::from(source + 1);
        let (elapsed, errors) = barrier_loop(world, args, || win.fence())?;
        win.free()?;
        coll_results(args, r as usize, elapsed, errors + u64::from(epoch_wrong))
    }
}

gpu_mpi_device::kernel! {
    /// A block's ranks count, each into its own element of block rank 0's
    /// segment: the ranks of a block (`split_shared`) make a shared-memory
    /// window of one `u64` per rank of the block (all in block rank 0's
    /// segment; the others' are empty), block rank 0 zeroes it, and under
    /// `lock_all` each rank `b` does `warmup + iterations` `fetch_and_op`s
    /// (sum, 1) on element `b`, checking each old value (a chain of
    /// dependent atomics), timing the last `iterations`. Block rank 0
    /// checks every count after a barrier. `args.mode` is 1 when the
    /// window must be in the block's shared memory, 0 when in the world
    /// memory (an error otherwise).
    pub static BENCH_RMA_BLOCK = fn bench_rma_block(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let block = world.split_shared()?;
        let (b, n) = (block.rank(), block.size() as usize);
        let mut win = Window::<u64>::allocate_shared(&block, if b == 0 { n } else { 0 })?;
        if win.is_block_shared() != (args.mode == 1) {
            return Err(Error::Intern);
        }
        if b == 0 {
            win.local_mut().fill(0);
        }
        // Orders the zeros before every rank's first add.
        win.fence_with(Mode::NO_SUCCEED)?;
        win.lock_all()?;
        // `lock_all` ends at different times on different ranks (a lock of
        // every rank): start the adds together, as the native's do.
        block.barrier()?;
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        let (mut old, mut errors) = (0u64, 0u64);
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            win.fetch_and_op(&1, &mut old, 0, b as usize, SystemOperation::sum())?;
            errors += u64::from(old != u64::from(it));
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        win.unlock_all()?;
        block.barrier()?;
        let mut checked = u64::from(total);
        if b == 0 {
            checked += 1;
            errors += u64::from(win.local_mut().iter().any(|&c| c != u64::from(total)));
        }
        win.free()?;
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

gpu_mpi_device::kernel! {
    /// [`BENCH_RMA_BLOCK`]'s adds as a CUDA programmer writes them: each
    /// thread's `atomicAdd`s on its own word of the block's (dynamic)
    /// shared memory, zeroed before a block barrier, each old value
    /// checked. Block rank 0 checks its final count too (the same checks
    /// as the MPI kernel's).
    pub static NATIVE_RMA_BLOCK = fn native_rma_block(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let thread = intrinsics::coordinates().thread as usize;
        // SAFETY: the launch gives each block 8 bytes of shared window
        // memory per thread (the host's spec), 16-byte aligned; this
        // kernel reaches its words only atomically.
        let counter = unsafe {
            gpu_mpi_device::abi::shim::atomic_u64_at(gpu_mpi_device::abi::shim::launch_shared(), 8 * thread)
        };
        counter.store(0, Ordering::Relaxed);
        intrinsics::block_barrier();
        let total = args.warmup + args.iterations;
        let mut start = intrinsics::clock_ns();
        let mut errors = 0u64;
        for it in 0..total {
            if it == args.warmup {
                start = intrinsics::clock_ns();
            }
            errors += u64::from(counter.fetch_add(1, Ordering::Relaxed) != u64::from(it));
        }
        let elapsed = intrinsics::clock_ns().wrapping_sub(start);
        let mut checked = u64::from(total);
        if thread == 0 {
            checked += 1;
            errors += u64::from(counter.load(Ordering::Relaxed) != u64::from(total));
        }
        results(&args.out, r as usize, elapsed, errors, checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acc_sum_is_what_the_accumulates_of_each_parity_leave() {
        let mut elements = [0u64; 2];
        for it in 0..50u32 {
            elements[(it % 2) as usize] += it as u64 + 1;
            assert_eq!(acc_sum(it), elements[(it % 2) as usize], "round {it}");
        }
    }
}
