//! The MPI side of the benchmarks (`gpu-mpi-bench`), and what they share
//! with their native baselines in [`crate::native`]: argument structs,
//! payload patterns and the closed forms the results are checked against.
//!
//! Every benchmark kernel checks its own results and writes an error count
//! that the host turns into a failure:
//! - messages carry a byte pattern; three bytes of each message (first,
//!   middle, last) carry a stamp of the iteration, checked on every receive,
//!   and the last message is checked byte by byte after the timed loop;
//! - broadcasts are checked the same way on every rank;
//! - reductions add integers (exact in `f64`) whose sum has a closed form
//!   ([`reduce_expected`]), checked element by element on every rank that
//!   gets the result;
//! - barriers: in the untimed rounds each rank marks its arrival before the
//!   barrier and checks after it that a rank of another block has marked too.
//!
//! Timing is done inside the kernel with [`intrinsics::clock_ns`], after warm-up
//! rounds; the host turns the per-rank times into OSU-style statistics.

use crate::native::{barrier_loop, bcast_loop, bytes_at, coll_results, pair_buffers, pair_of, reduce_loop};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::intrinsics;
use gpu_mpi_device::request::{self, AnyCompletion, Request};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Words of [`P2pArgs::out`] per pair: `[0]` the sender's timed nanoseconds,
/// `[1]` the sender's errors, `[2]` the receiver's errors, `[3]` rounds the
/// sender verified, `[4]` messages the receiver verified.
pub const P2P_RESULTS: usize = 8;
/// Words of [`P2pArgs::flags`] per pair (the native kernels' two counters,
/// 64 bytes apart).
pub const P2P_FLAG_STRIDE: usize = 32;
/// Words of the physical-limit kernels' output.
pub const LIMIT_RESULTS: usize = 4;

/// Arguments of the point-to-point benchmarks (latency and bandwidth), MPI
/// and native: `pairs` pairs run at once, sender `i` talking to rank
/// `i + offset`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct P2pArgs {
    /// Pairs.
    pub pairs: u32,
    /// Receiver of pair `i` is rank `i + offset` (`offset >= pairs`).
    pub offset: u32,
    /// Message size in bytes.
    pub bytes: u32,
    /// Messages per round (bandwidth); 1 for latency.
    pub window: u32,
    /// Untimed rounds first.
    pub warmup: u32,
    /// Timed rounds.
    pub iterations: u32,
    /// Ring slots per pair (native bandwidth; 0 otherwise).
    pub slots: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Per pair `(3 + slots) * bytes` bytes: the sender's send buffer, the
    /// sender's receive buffer, the receiver's buffer, the ring
    /// ([`crate::native::pair_buffers`]).
    pub buffers: GlobalSlice<u8>,
    /// Per pair [`P2P_FLAG_STRIDE`] words (native kernels), zero at launch.
    pub flags: GlobalSlice<u32>,
    /// Per pair [`P2P_RESULTS`] words.
    pub out: GlobalSlice<u64>,
}

/// Arguments of the collective benchmarks, MPI and native (each uses the
/// fields it needs; the others may be empty).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CollArgs {
    /// Broadcast: bytes. Reductions: `f64` elements per rank.
    pub size: u32,
    /// Untimed (and checked) rounds first.
    pub warmup: u32,
    /// Timed rounds.
    pub iterations: u32,
    /// Root of broadcast and reduce.
    pub root: u32,
    /// Broadcast buffers ([`crate::native::bcast_bytes`]).
    pub bytes: GlobalSlice<u8>,
    /// Reduction rows ([`crate::native::reduce_values`]).
    pub values: GlobalSlice<f64>,
    /// Native counters ([`crate::native::coll_counter_words`]), zero at launch.
    pub counters: GlobalSlice<u32>,
    /// Barrier arrival marks, one per rank, zero at launch.
    pub marks: GlobalSlice<u32>,
    /// Per rank: `[2r]` timed nanoseconds, `[2r + 1]` errors.
    pub out: GlobalSlice<u64>,
    /// The varcount exchanges' counts and displacements
    /// ([`crate::exchange::varcount_entry`]); empty for the others.
    pub parts: GlobalSlice<i32>,
}

/// Byte `i` of the message pattern with `seed`.
pub fn pattern(i: usize, seed: u32) -> u8 {
    (i as u32).wrapping_mul(7).wrapping_add(seed.wrapping_mul(31)) as u8
}

/// Fills `buf` with the pattern.
pub fn fill_pattern(buf: &mut [u8], seed: u32) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i, seed);
    }
}

fn stamp_positions(n: usize) -> [usize; 3] {
    [0, n / 2, n.saturating_sub(1)]
}

fn stamped(i: usize, seed: u32, value: u32) -> u8 {
    pattern(i, seed).wrapping_add(1 + (value % 255) as u8)
}

/// Writes the stamp of `value` into the first, middle and last byte.
pub fn stamp(buf: &mut [u8], seed: u32, value: u32) {
    if buf.is_empty() {
        return;
    }
    for p in stamp_positions(buf.len()) {
        buf[p] = stamped(p, seed, value);
    }
}

/// Whether `buf` carries the stamp of `value` (always true when empty).
pub fn check_stamp(buf: &[u8], seed: u32, value: u32) -> bool {
    buf.is_empty()
        || stamp_positions(buf.len())
            .iter()
            .all(|&p| buf[p] == stamped(p, seed, value))
}

/// Whether every byte of `buf` is the pattern with the stamp of `value`.
pub fn check_full(buf: &[u8], seed: u32, value: u32) -> bool {
    let stamps = stamp_positions(buf.len());
    check_stamp(buf, seed, value)
        && buf
            .iter()
            .enumerate()
            .all(|(i, &b)| stamps.contains(&i) || b == pattern(i, seed))
}

/// Element `e` of rank `rank`'s reduction operand in round `it`.
pub fn reduce_value(rank: u32, e: u32, it: u32) -> f64 {
    // 32-bit division: a 64-bit one is a long instruction sequence on the
    // GPU that would take registers from the timed loop. Ranks, elements and
    // rounds are far below 2^30, so the sum does not wrap.
    (rank.wrapping_add(e).wrapping_add(it) % REDUCE_MODULUS) as f64
}

const REDUCE_MODULUS: u32 = 1000;

/// `sum(k for k in a..b)`.
fn range_sum(a: u64, b: u64) -> u64 {
    if b <= a {
        0
    } else {
        (a + b - 1) * (b - a) / 2
    }
}

/// The sum over all ranks of element `e` in round `it`: the closed form of
/// `sum((r + e + it) % 1000 for r in 0..ranks)`.
pub fn reduce_expected(ranks: u32, e: u32, it: u32) -> f64 {
    let m = REDUCE_MODULUS;
    let c = e.wrapping_add(it) % m;
    let (cycles, rest) = (ranks / m, ranks % m);
    let (m, c, cycles, rest) = (m as u64, c as u64, cycles as u64, rest as u64);
    let tail = if c + rest <= m {
        range_sum(c, c + rest)
    } else {
        range_sum(c, m) + range_sum(0, c + rest - m)
    };
    (cycles * range_sum(0, m) + tail) as f64
}

/// The rank whose barrier mark `rank` checks: half the world away (another
/// block whenever there are two).
pub fn barrier_peer(rank: u32, size: u32) -> u32 {
    (rank + size / 2 + 1) % size.max(1)
}

fn p2p_results(out: &GlobalSlice<u64>, pair: usize, words: &[(usize, u64)]) -> Result<(), Error> {
    for &(i, v) in words {
        out.write(pair * P2P_RESULTS + i, v)?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// osu_latency inside a kernel: each sender sends its stamped message
    /// to its receiver, which checks it and sends it back; the sender checks
    /// the reply. Rounds after the warm-up are timed by the sender.
    pub static BENCH_LATENCY = fn bench_latency(world: &World, args: &P2pArgs) -> Result<(), Error> {
        let Some((pair, sender)) = pair_of(world, args) else { return Ok(()) };
        let n = args.bytes as usize;
        let [send_at, recv_at, peer_at, _] = pair_buffers(args, pair);
        let total = args.warmup + args.iterations;
        let seed = pair as u32 + 1;
        let (mut errors, mut verified) = (0u64, 0u64);
        if sender {
            // SAFETY: only this rank uses its send and receive buffers.
            let (send, recv) = unsafe { (bytes_at(&args.buffers, send_at, n)?, bytes_at(&args.buffers, recv_at, n)?) };
            let peer = world.process_at_rank(pair as i32 + args.offset as i32);
            fill_pattern(send, seed);
            let mut start = intrinsics::clock_ns();
            for it in 0..total {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                stamp(send, seed, it);
                peer.send_with_tag(&send[..], 1)?;
                let status = peer.receive_into_with_tag(&mut recv[..], 1)?;
                if status.bytes() as usize != n || !check_stamp(recv, seed, it) {
                    errors += 1;
                }
                verified += 1;
            }
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            if total > 0 && !check_full(recv, seed, total - 1) {
                errors += 1;
            }
            p2p_results(&args.out, pair, &[(0, elapsed), (1, errors), (3, verified)])
        } else {
            // SAFETY: only this rank uses the receiver's buffer.
            let buf = unsafe { bytes_at(&args.buffers, peer_at, n)? };
            let peer = world.process_at_rank(pair as i32);
            for it in 0..total {
                let status = peer.receive_into_with_tag(&mut buf[..], 1)?;
                if status.bytes() as usize != n || !check_stamp(buf, seed, it) {
                    errors += 1;
                }
                verified += 1;
                peer.send_with_tag(&buf[..], 1)?;
            }
            if total > 0 && !check_full(buf, seed, total - 1) {
                errors += 1;
            }
            p2p_results(&args.out, pair, &[(2, errors), (4, verified)])
        }
    }
}

gpu_mpi_device::kernel! {
    /// osu_bw / osu_mbw_mr inside a kernel: each sender sends a window of
    /// `window` stamped messages to its receiver, which checks each, then
    /// answers with a 4-byte acknowledgement carrying the round. Rounds
    /// after the warm-up are timed by the sender.
    pub static BENCH_BW = fn bench_bw(world: &World, args: &P2pArgs) -> Result<(), Error> {
        let Some((pair, sender)) = pair_of(world, args) else { return Ok(()) };
        let n = args.bytes as usize;
        let [send_at, _, peer_at, _] = pair_buffers(args, pair);
        let total = args.warmup + args.iterations;
        let seed = pair as u32 + 1;
        let (mut errors, mut verified) = (0u64, 0u64);
        if sender {
            // SAFETY: only this rank uses its send buffer.
            let send = unsafe { bytes_at(&args.buffers, send_at, n)? };
            let peer = world.process_at_rank(pair as i32 + args.offset as i32);
            fill_pattern(send, seed);
            let mut start = intrinsics::clock_ns();
            for it in 0..total {
                if it == args.warmup {
                    start = intrinsics::clock_ns();
                }
                for w in 0..args.window {
                    stamp(send, seed, it * args.window + w);
                    peer.send_with_tag(&send[..], 2)?;
                }
                let (ack, _) = peer.receive::<u32>()?;
                if ack != it {
                    errors += 1;
                }
                verified += 1;
            }
            let elapsed = intrinsics::clock_ns().wrapping_sub(start);
            p2p_results(&args.out, pair, &[(0, elapsed), (1, errors), (3, verified)])
        } else {
            // SAFETY: only this rank uses the receiver's buffer.
            let buf = unsafe { bytes_at(&args.buffers, peer_at, n)? };
            let peer = world.process_at_rank(pair as i32);
            let mut last = 0;
            for it in 0..total {
                for w in 0..args.window {
                    let status = peer.receive_into_with_tag(&mut buf[..], 2)?;
                    last = it * args.window + w;
                    if status.bytes() as usize != n || !check_stamp(buf, seed, last) {
                        errors += 1;
                    }
                    verified += 1;
                }
                peer.send_with_tag(&it, 3)?;
            }
            if total > 0 && args.window > 0 && !check_full(buf, seed, last) {
                errors += 1;
            }
            p2p_results(&args.out, pair, &[(2, errors), (4, verified)])
        }
    }
}

/// Arguments of [`PI_P2P_NONBLOCKING`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PiWindowArgs {
    /// Intervals each rank sums.
    pub intervals_per_rank: u32,
    /// Receives rank 0 keeps posted at once (1 to
    /// [`request::MAX_REQUESTS`]; more are clamped).
    pub window: u32,
    /// Where rank 0 writes the estimate (one element).
    pub result: GlobalSlice<f64>,
    /// One element per rank: rank 0 receives rank `r`'s partial sum into
    /// element `r` (element 0 is unused).
    pub received: GlobalSlice<f64>,
}

gpu_mpi_device::kernel! {
    /// The thesis's point-to-point pi (figure 5.6) with non-blocking
    /// receives: every rank but 0 sends its partial sum to rank 0, which
    /// keeps a window of `window` immediate receives posted (one per source,
    /// in rank order), and each time [`request::wait_any`] completes one,
    /// posts the receive from the next rank in its place. After the last it
    /// adds the sums in rank order (the same additions as `pi_p2p`).
    pub static PI_P2P_NONBLOCKING = fn pi_p2p_nonblocking(world: &World, args: &PiWindowArgs) -> Result<(), Error> {
        let size = world.size();
        let part = crate::pi::partial_sum(world.rank() as u32, size as u32, args.intervals_per_rank);
        if world.rank() != 0 {
            return world.process_at_rank(0).send(&part);
        }
        // SAFETY: only rank 0 touches `received`, and only here.
        let received = unsafe { args.received.slice_mut(0, size as usize)? };
        let window = (args.window as usize).clamp(1, request::MAX_REQUESTS);
        request::scope(|scope| -> Result<(), Error> {
            let mut slots = received.iter_mut().enumerate().skip(1);
            let mut requests: [Request<'_, '_>; request::MAX_REQUESTS] = core::array::from_fn(|_| Request::null());
            for r in requests.iter_mut().take(window) {
                if let Some((source, buf)) = slots.next() {
                    *r = world.process_at_rank(source as i32).immediate_receive_into(scope, buf)?;
                }
            }
            loop {
                match request::wait_any(&mut requests)? {
                    AnyCompletion::AllNull => return Ok(()),
                    AnyCompletion::Completed { index, result } => {
                        result?;
                        if let Some((source, buf)) = slots.next() {
                            requests[index] = world.process_at_rank(source as i32).immediate_receive_into(scope, buf)?;
                        }
                    }
                }
            }
        })?;
        let mut sum = part;
        for v in &received[1..] {
            sum += *v;
        }
        args.result.write(0, sum)
    }
}

gpu_mpi_device::kernel! {
    /// osu_barrier inside a kernel: `MPI_Barrier` in a timed loop.
    pub static BENCH_BARRIER = fn bench_barrier(world: &World, args: &CollArgs) -> Result<(), Error> {
        let (elapsed, errors) = barrier_loop(world, args, || world.barrier())?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

gpu_mpi_device::kernel! {
    /// osu_bcast inside a kernel: `MPI_Bcast` of `size` bytes from the root,
    /// each round timed alone, a barrier between rounds.
    pub static BENCH_BCAST = fn bench_bcast(world: &World, args: &CollArgs) -> Result<(), Error> {
        let root = world.process_at_rank(args.root as i32);
        let (elapsed, errors) = bcast_loop(world, args, |buf, _| root.broadcast_into(buf), || world.barrier())?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

gpu_mpi_device::kernel! {
    /// osu_reduce inside a kernel: `MPI_Reduce` (sum) of `size` `f64` per
    /// rank to the root, each round timed alone, a barrier between rounds.
    pub static BENCH_REDUCE = fn bench_reduce(world: &World, args: &CollArgs) -> Result<(), Error> {
        let root = world.process_at_rank(args.root as i32);
        let is_root = world.rank() as u32 == args.root;
        let (elapsed, errors) = reduce_loop(
            world,
            args,
            |rows, _| {
                // SAFETY: the rows are this rank's own; nothing else touches
                // them during the call.
                let send = unsafe { args.values.slice_mut(rows.send, rows.count)? };
                if is_root {
                    // SAFETY: as above.
                    let recv = unsafe { args.values.slice_mut(rows.recv, rows.count)? };
                    root.reduce_into_root(&send[..], &mut recv[..], SystemOperation::sum())?;
                } else {
                    root.reduce_into(&send[..], SystemOperation::sum())?;
                }
                Ok(is_root)
            },
            || world.barrier(),
        )?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

gpu_mpi_device::kernel! {
    /// osu_allreduce inside a kernel: `MPI_Allreduce` (sum) of `size` `f64`
    /// per rank, each round timed alone, a barrier between rounds.
    pub static BENCH_ALLREDUCE = fn bench_allreduce(world: &World, args: &CollArgs) -> Result<(), Error> {
        let (elapsed, errors) = reduce_loop(
            world,
            args,
            |rows, _| {
                // SAFETY: the rows are this rank's own; nothing else touches
                // them during the call.
                let (send, recv) = unsafe {
                    (args.values.slice_mut(rows.send, rows.count)?, args.values.slice_mut(rows.recv, rows.count)?)
                };
                world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum())?;
                Ok(true)
            },
            || world.barrier(),
        )?;
        coll_results(args, world.rank() as usize, elapsed, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_form_matches_the_loop() {
        for ranks in [1u32, 2, 7, 999, 1000, 1001, 2500, 4096] {
            for (e, it) in [(0u32, 0u32), (3, 5), (500, 499), (998, 3), (17, 1999)] {
                let direct: f64 = (0..ranks).map(|r| reduce_value(r, e, it)).sum();
                assert_eq!(
                    direct,
                    reduce_expected(ranks, e, it),
                    "ranks {ranks} e {e} it {it}"
                );
            }
        }
    }

    #[test]
    fn stamps_and_patterns() {
        let mut buf = [0u8; 100];
        fill_pattern(&mut buf, 3);
        stamp(&mut buf, 3, 7);
        assert!(check_stamp(&buf, 3, 7) && check_full(&buf, 3, 7));
        assert!(!check_stamp(&buf, 3, 8));
        buf[10] ^= 1;
        assert!(check_stamp(&buf, 3, 7) && !check_full(&buf, 3, 7));
        let mut one = [0u8; 1];
        fill_pattern(&mut one, 1);
        stamp(&mut one, 1, 254);
        assert!(check_full(&one, 1, 254) && !check_stamp(&one, 1, 255 + 255));
        assert!(check_full(&[], 1, 5));
    }
}
