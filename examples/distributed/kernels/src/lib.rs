//! Kernels that check point-to-point between the ranks of a world across
//! processes (docs/distributed.md). Each rank writes what it checked into
//! `out[rank]`; the host (`src/main.rs`) compares it with what MPI says.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation, UserOperation};
use gpu_mpi_device::communicator::{Color, CommunicatorRelation};
use gpu_mpi_device::point_to_point::send_receive_into_with_tags;
use gpu_mpi_device::request::{self, wait_all};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::Window;
use gpu_mpi_device::{Error, GlobalSlice, SimpleCommunicator, World};

/// Arguments of every check.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CheckArgs {
    /// Messages per rank ([`ORDER`]).
    pub rounds: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// One word per rank.
    pub out: GlobalSlice<u64>,
}

/// Elements of [`LARGE`]'s message: 4,800 bytes, more than a slot's
/// payload, so it goes by rendezvous (direct, or streamed).
pub const LARGE_ELEMENTS: usize = 600;

gpu_mpi_device::kernel! {
    /// Every rank exchanges one message with every other rank, local or
    /// remote: in step `i` it sends `1000 × rank + dst` to `rank + i` with
    /// tag `i` and receives from any source with tag `i` (only `rank - i`
    /// sends it that). `out[rank]`: the steps whose message came from the
    /// right rank with the right value (all `size - 1`).
    pub static EXCHANGE = fn exchange(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut good = 0u64;
        for i in 1..size {
            let dst = (rank + i) % size;
            let src = (rank + size - i) % size;
            let mine = (1000 * rank + dst) as u64;
            let mut got = 0u64;
            let status = send_receive_into_with_tags(
                &mine,
                &world.process_at_rank(dst),
                i,
                &mut got,
                &world.any_process(),
                i,
            )?;
            if status.source_rank() == src && status.tag() == i && got == (1000 * src + rank) as u64 {
                good += 1;
            }
        }
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank sends `rounds` messages to its right neighbour, every
    /// odd-numbered one synchronous, with tags cycling 0, 1, 2, and
    /// receives as many from any source and any tag: non-overtaking says
    /// they come in the order sent. Even ranks send first, odd ranks
    /// receive first (an even world: no cycle of synchronous sends).
    /// `out[rank]`: the messages received in order from the left
    /// neighbour (all `rounds`).
    pub static ORDER = fn order(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let right = world.process_at_rank((rank + 1) % size);
        let left = (rank + size - 1) % size;
        let send = || -> Result<(), Error> {
            for k in 0..args.rounds {
                let v = rank as u64 * 1_000_000 + k as u64;
                let tag = (k % 3) as i32;
                if k % 2 == 1 {
                    right.synchronous_send_with_tag(&v, tag)?;
                } else {
                    right.send_with_tag(&v, tag)?;
                }
            }
            Ok(())
        };
        let receive = || -> Result<u64, Error> {
            let mut good = 0u64;
            for k in 0..args.rounds {
                let mut v = 0u64;
                let status = world.any_process().receive_into(&mut v)?;
                if status.source_rank() == left
                    && status.tag() == (k % 3) as i32
                    && v == left as u64 * 1_000_000 + k as u64
                {
                    good += 1;
                }
            }
            Ok(good)
        };
        let good = if rank % 2 == 0 {
            send()?;
            receive()?
        } else {
            let good = receive()?;
            send()?;
            good
        };
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// A ring shift of [`LARGE_ELEMENTS`] `u64`s (rendezvous): rank `r`
    /// sends `r × 7919 + i` in element `i` to the right and receives from
    /// the left. `out[rank]`: the elements that hold the left
    /// neighbour's values (all of them).
    pub static LARGE = fn large(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let left = (rank + size - 1) % size;
        let mut mine = [0u64; LARGE_ELEMENTS];
        for (i, m) in mine.iter_mut().enumerate() {
            *m = rank as u64 * 7919 + i as u64;
        }
        let mut got = [0u64; LARGE_ELEMENTS];
        send_receive_into_with_tags(
            &mine[..],
            &world.process_at_rank((rank + 1) % size),
            5,
            &mut got[..],
            &world.process_at_rank(left),
            5,
        )?;
        let good = got
            .iter()
            .enumerate()
            .filter(|&(i, &g)| g == left as u64 * 7919 + i as u64)
            .count();
        args.out.write(rank as usize, good as u64)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank first receives from its right neighbour, which does the
    /// same: a deadlock across processes, which the launch reports.
    pub static DEADLOCK = fn deadlock(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut v = 0u64;
        world.process_at_rank((rank + 1) % size).receive_into_with_tag(&mut v, 9)?;
        world.process_at_rank((rank + size - 1) % size).send_with_tag(&v, 9)
    }
}

gpu_mpi_device::kernel! {
    /// World barriers across processes, with messages between them: in
    /// each of `rounds` rounds every rank passes a barrier, then sends the
    /// round's number to its right neighbour and receives its left one's.
    /// `out[rank]`: the rounds whose message held the round (all of them).
    pub static BARRIERS = fn barriers(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut good = 0u64;
        for k in 0..args.rounds {
            world.barrier()?;
            let mut got = u32::MAX;
            send_receive_into_with_tags(
                &k,
                &world.process_at_rank((rank + 1) % size),
                6,
                &mut got,
                &world.process_at_rank((rank + size - 1) % size),
                6,
            )?;
            if got == k {
                good += 1;
            }
        }
        world.barrier()?;
        args.out.write(rank as usize, good)
    }
}

/// The largest world [`COLLECTIVES`] and [`SPLIT`] take (their buffers
/// live on the rank's stack).
pub const MAX_WORLD: usize = 64;

/// [`COLLECTIVES`]' checks per root (broadcast, reduce, ordered reduce,
/// gather, scatter).
pub const ROOTED_CHECKS: u64 = 5;
/// [`COLLECTIVES`]' checks without a root (barrier, all-reduce,
/// all-gather, all-to-all, scan, exclusive scan, reduce-scatter-block).
pub const UNROOTED_CHECKS: u64 = 7;

/// A range of ranks `lo << 32 | hi` joined by an operation that is
/// associative but not commutative: `[a, b]` then `[b + 1, c]` is `[a,
/// c]`; anything else (operands out of rank order) is `u64::MAX`, which
/// absorbs.
fn join(left: &u64, right: &u64) -> u64 {
    let (l, r) = (*left, *right);
    if l == u64::MAX || r == u64::MAX || (l & 0xffff_ffff) + 1 != r >> 32 {
        return u64::MAX;
    }
    (l & !0xffff_ffff) | (r & 0xffff_ffff)
}

/// `rank`'s operand of [`join`]: the range of itself.
fn single(rank: i32) -> u64 {
    ((rank as u64) << 32) | rank as u64
}

gpu_mpi_device::kernel! {
    /// Every collective of the world, those with a root from every root,
    /// each with values that say who sent them; the world's ranks are in
    /// several processes. `out[rank]`: the checks whose result was right
    /// on this rank ([`ROOTED_CHECKS`] × size + [`UNROOTED_CHECKS`]).
    pub static COLLECTIVES = fn collectives(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let n = size as usize;
        if n > MAX_WORLD {
            return Err(Error::application(2));
        }
        let me = rank as u64;
        let mut good = 0u64;
        let sum_of_ranks = (n * (n - 1) / 2) as u64;
        for root in 0..size {
            let p = world.process_at_rank(root);
            let at_root = rank == root;
            let mut v = if at_root { 1000 + root as u64 } else { 0 };
            p.broadcast_into(&mut v)?;
            good += u64::from(v == 1000 + root as u64);

            let mut sum = 0u64;
            if at_root {
                p.reduce_into_root(&me, &mut sum, SystemOperation::sum())?;
            } else {
                p.reduce_into(&me, SystemOperation::sum())?;
            }
            good += u64::from(!at_root || sum == sum_of_ranks);

            let mut range = 0u64;
            if at_root {
                p.reduce_into_root(&single(rank), &mut range, UserOperation::associative(join))?;
            } else {
                p.reduce_into(&single(rank), UserOperation::associative(join))?;
            }
            good += u64::from(!at_root || range == single(0) | (size as u64 - 1));

            let mut all = [0u64; MAX_WORLD];
            let mine = 100 * me + root as u64;
            if at_root {
                p.gather_into_root(&mine, &mut all[..n])?;
            } else {
                p.gather_into(&mine)?;
            }
            good += u64::from(!at_root || (0..n).all(|q| all[q] == 100 * q as u64 + root as u64));

            let mut part = 0u64;
            if at_root {
                let parts: [u64; MAX_WORLD] = core::array::from_fn(|q| 7 * q as u64 + root as u64);
                p.scatter_into_root(&parts[..n], &mut part)?;
            } else {
                p.scatter_into(&mut part)?;
            }
            good += u64::from(part == 7 * me + root as u64);
        }

        world.barrier()?;
        good += 1;

        let mut total = 0u64;
        world.all_reduce_into(&me, &mut total, SystemOperation::sum())?;
        good += u64::from(total == sum_of_ranks);

        let mut all = [0u64; MAX_WORLD];
        world.all_gather_into(&(me * me), &mut all[..n])?;
        good += u64::from((0..n).all(|q| all[q] == (q * q) as u64));

        let to: [u64; MAX_WORLD] = core::array::from_fn(|q| 1000 * me + q as u64);
        let mut from = [0u64; MAX_WORLD];
        world.all_to_all_into(&to[..n], &mut from[..n])?;
        good += u64::from((0..n).all(|q| from[q] == 1000 * q as u64 + me));

        let mut prefix = 0u64;
        world.scan_into(&single(rank), &mut prefix, UserOperation::associative(join))?;
        good += u64::from(prefix == single(0) | me);

        let mut before = 0u64;
        world.exclusive_scan_into(&me, &mut before, SystemOperation::sum())?;
        good += u64::from(rank == 0 || before == me * (me - 1) / 2);

        let blocks: [u64; MAX_WORLD] = core::array::from_fn(|q| q as u64 + me);
        let mut block = 0u64;
        world.reduce_scatter_block_into(&blocks[..n], &mut block, SystemOperation::sum())?;
        good += u64::from(block == n as u64 * me + sum_of_ranks);

        args.out.write(rank as usize, good)
    }
}

/// Elements of [`WORLD_ROUNDS`]' buffers: 320 bytes, several staging
/// rounds in a world of 64-byte cells.
pub const ROUND_ELEMENTS: usize = 40;

/// [`WORLD_ROUNDS`]' checks per rank: a broadcast and a reduce from each
/// of three roots, an all-reduce in rank order and one in place.
pub const ROUND_CHECKS: u64 = 8;

/// Element `i` of rank `rank`'s [`join`] operand in [`WORLD_ROUNDS`]: the
/// range of `rank`, shifted by `i` (every element its own chain).
fn shifted(rank: i32, i: usize) -> u64 {
    single(rank + i as i32)
}

gpu_mpi_device::kernel! {
    /// The world's broadcast, reduce and all-reduce over buffers that
    /// take several staging rounds (launched with small cells), each
    /// round's bytes carried between processes by the relays: broadcasts
    /// and sums from the first, a middle and the last rank, an all-reduce
    /// with an operation that is not commutative and one in place.
    /// `out[rank]`: the checks whose result was right on this rank (all
    /// [`ROUND_CHECKS`]).
    pub static WORLD_ROUNDS = fn world_rounds(world: &World, args: &CheckArgs) -> Result<(), Error> {
        const N: usize = ROUND_ELEMENTS;
        let (rank, size) = (world.rank(), world.size());
        let mut good = 0u64;
        for root in [0, size / 2, size - 1] {
            let p = world.process_at_rank(root);
            let given = |i: usize| 1000 * root as u64 + i as u64;
            let mut v: [u64; N] = core::array::from_fn(|i| if rank == root { given(i) } else { 0 });
            p.broadcast_into(&mut v[..])?;
            good += u64::from((0..N).all(|i| v[i] == given(i)));
            let mine: [u64; N] = core::array::from_fn(|i| rank as u64 * i as u64 + 1);
            let mut sum = [0u64; N];
            if rank == root {
                p.reduce_into_root(&mine[..], &mut sum[..], SystemOperation::sum())?;
            } else {
                p.reduce_into(&mine[..], SystemOperation::sum())?;
            }
            let ranks = size as u64 * (size as u64 - 1) / 2;
            good += u64::from(rank != root || (0..N).all(|i| sum[i] == ranks * i as u64 + size as u64));
        }
        let mine: [u64; N] = core::array::from_fn(|i| shifted(rank, i));
        let mut range = [0u64; N];
        world.all_reduce_into(&mine[..], &mut range[..], UserOperation::associative(join))?;
        let whole = |i: usize| (shifted(0, i) & !0xffff_ffff) | (size as u64 - 1 + i as u64);
        good += u64::from((0..N).all(|i| range[i] == whole(i)));
        let mut both: [u64; N] = core::array::from_fn(|i| rank as u64 + i as u64);
        world.all_reduce_in_place(&mut both[..], SystemOperation::max())?;
        good += u64::from((0..N).all(|i| both[i] == size as u64 - 1 + i as u64));
        args.out.write(rank as usize, good)
    }
}

/// [`MOVEMENT_ROUNDS`]' elements per rank: 80 bytes, two staging rounds
/// in 64-byte cells.
pub const MOVED: usize = 10;

/// [`MOVEMENT_ROUNDS`]' checks per rank: a gather to the last rank, a
/// varcount gather to rank 0, a scatter from a middle rank, a varcount
/// scatter from the last, an all-gather, an all-to-all, a scan in rank
/// order and a reduce-scatter.
pub const MOVEMENT_CHECKS: u64 = 8;

gpu_mpi_device::kernel! {
    /// The world's data-moving collectives over several staging rounds
    /// (launched with small cells), each round's cells carried between
    /// processes by the relays. `out[rank]`: the checks whose result was
    /// right on this rank (all [`MOVEMENT_CHECKS`]; at most
    /// [`MAX_WORLD`] ranks).
    pub static MOVEMENT_ROUNDS = fn movement_rounds(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let (me, n) = (rank as u64, size as usize);
        if n > MAX_WORLD {
            return Err(Error::application(2));
        }
        let mut good = 0u64;
        let mine: [u64; MOVED] = core::array::from_fn(|i| 100 * me + i as u64);
        let expected = |q: usize, i: usize| 100 * q as u64 + i as u64;

        let last = world.process_at_rank(size - 1);
        let mut all = [0u64; MOVED * MAX_WORLD];
        if rank == size - 1 {
            last.gather_into_root(&mine[..], &mut all[..MOVED * n])?;
        } else {
            last.gather_into(&mine[..])?;
        }
        good += u64::from(rank != size - 1 || (0..MOVED * n).all(|j| all[j] == expected(j / MOVED, j % MOVED)));

        // Rank q gives q % 3 + 1 elements.
        let mut counts = [0i32; MAX_WORLD];
        let mut displs = [0i32; MAX_WORLD];
        let mut total = 0;
        for q in 0..n {
            counts[q] = (q % 3 + 1) as i32;
            displs[q] = total as i32;
            total += q % 3 + 1;
        }
        let first = world.process_at_rank(0);
        let mut varied = [0u64; 3 * MAX_WORLD];
        let k = rank as usize % 3 + 1;
        if rank == 0 {
            let mut parts = PartitionMut::new(&mut varied[..total], &counts[..n], &displs[..n]);
            first.gather_varcount_into_root(&mine[..k], &mut parts)?;
        } else {
            first.gather_varcount_into(&mine[..k])?;
        }
        good += u64::from(
            rank != 0
                || (0..n).all(|q| (0..q % 3 + 1).all(|i| varied[displs[q] as usize + i] == expected(q, i))),
        );

        let middle = world.process_at_rank(size / 2);
        let parts: [u64; MOVED * MAX_WORLD] = core::array::from_fn(|j| expected(j / MOVED, j % MOVED) + 7);
        let mut part = [0u64; MOVED];
        if rank == size / 2 {
            middle.scatter_into_root(&parts[..MOVED * n], &mut part[..])?;
        } else {
            middle.scatter_into(&mut part[..])?;
        }
        good += u64::from((0..MOVED).all(|i| part[i] == expected(rank as usize, i) + 7));

        let mut some = [0u64; 3];
        if rank == size - 1 {
            let given = Partition::new(&parts[..total], &counts[..n], &displs[..n]);
            last.scatter_varcount_into_root(&given, &mut some[..k])?;
        } else {
            last.scatter_varcount_into(&mut some[..k])?;
        }
        let from = displs[rank as usize] as usize;
        good += u64::from((0..k).all(|i| some[i] == parts[from + i]));

        let mut all = [0u64; MOVED * MAX_WORLD];
        world.all_gather_into(&mine[..], &mut all[..MOVED * n])?;
        good += u64::from((0..MOVED * n).all(|j| all[j] == expected(j / MOVED, j % MOVED)));

        let to: [u64; 2 * MAX_WORLD] =
            core::array::from_fn(|j| 1000 * me + 10 * (j / 2) as u64 + (j % 2) as u64);
        let mut from = [0u64; 2 * MAX_WORLD];
        world.all_to_all_into(&to[..2 * n], &mut from[..2 * n])?;
        good += u64::from((0..2 * n).all(|j| from[j] == 1000 * (j / 2) as u64 + 10 * me + (j % 2) as u64));

        let ranges: [u64; MOVED] = core::array::from_fn(|i| shifted(rank, i));
        let mut prefix = [0u64; MOVED];
        world.scan_into(&ranges[..], &mut prefix[..], UserOperation::associative(join))?;
        good += u64::from((0..MOVED).all(|i| prefix[i] == (shifted(0, i) & !0xffff_ffff) | (me + i as u64)));

        let blocks: [u64; 3 * MAX_WORLD] = core::array::from_fn(|j| me + (j / 3) as u64 + (j % 3) as u64);
        let mut block = [0u64; 3];
        world.reduce_scatter_block_into(&blocks[..3 * n], &mut block[..], SystemOperation::sum())?;
        let ranks = (n * (n - 1) / 2) as u64;
        good += u64::from((0..3).all(|j| block[j] == ranks + n as u64 * (me + j as u64)));

        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// A reduce to the last rank whose counts differ: the root passes two
    /// elements, every other rank one. An erroneous call, which fails on
    /// every rank with `MPI_ERR_COUNT` and the root's count (the
    /// reference's cell, in the root's process), whichever process its
    /// ranks are in.
    pub static MISMATCHED_COUNTS = fn mismatched_counts(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let root = world.process_at_rank(size - 1);
        let mine = [rank as u64; 2];
        if rank == size - 1 {
            let mut sum = [0u64; 2];
            root.reduce_into_root(&mine[..], &mut sum[..], SystemOperation::sum())
        } else {
            root.reduce_into(&mine[..1], SystemOperation::sum())
        }
    }
}

gpu_mpi_device::kernel! {
    /// A broadcast whose ranks name different roots (rank 0 on the even
    /// ranks, rank 1 on the odd ones): an erroneous call, which fails on
    /// every rank with `MPI_ERR_ROOT`, whichever process its ranks are in.
    pub static MISMATCHED_ROOTS = fn mismatched_roots(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let mut v = 7u64;
        world.process_at_rank(world.rank() % 2).broadcast_into(&mut v)
    }
}

/// [`IMMEDIATE`]'s checks per rank: the barrier with messages inside,
/// a broadcast, a reduce per root, two all-reduces.
pub const IMMEDIATE_CHECKS_ROOTED: u64 = 2;
/// [`IMMEDIATE`]'s checks without a root.
pub const IMMEDIATE_CHECKS: u64 = 3;

gpu_mpi_device::kernel! {
    /// The world's non-blocking collectives across processes. A barrier
    /// with a ring exchange between its start and its wait (the exchange
    /// needs no rank's wait, the wait needs every rank's start); from
    /// every root a broadcast and a sum reduce; an all-reduce of the
    /// largest `f64` and one of an `i32` sum, both started before either
    /// is waited for. `out[rank]`: the checks that held
    /// ([`IMMEDIATE_CHECKS_ROOTED`] × size + [`IMMEDIATE_CHECKS`]).
    pub static IMMEDIATE = fn immediate(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let me = rank as u64;
        let mut good = 0u64;
        request::scope(|scope| -> Result<(), Error> {
            let barrier = world.immediate_barrier(scope)?;
            let got = ring_step(world, me, 2)?;
            barrier.wait()?;
            good += u64::from(got == ((rank + size - 1) % size) as u64);
            Ok(())
        })?;
        for root in 0..size {
            let p = world.process_at_rank(root);
            let mut v = if rank == root { 500 + root as u64 } else { 0 };
            request::scope(|scope| p.immediate_broadcast_into(scope, &mut v)?.wait().map(|_| ()))?;
            good += u64::from(v == 500 + root as u64);
            let mut sum = 0u64;
            request::scope(|scope| -> Result<(), Error> {
                if rank == root {
                    p.immediate_reduce_into_root(scope, &me, &mut sum, SystemOperation::sum())?.wait()?;
                } else {
                    p.immediate_reduce_into(scope, &me, SystemOperation::sum())?.wait()?;
                }
                Ok(())
            })?;
            let n = size as u64;
            good += u64::from(rank != root || sum == n * (n - 1) / 2);
        }
        let (mut largest, mut total) = (0f64, 0i32);
        request::scope(|scope| -> Result<(), Error> {
            let x = 0.5 * rank as f64;
            let a = world.immediate_all_reduce_into(scope, &x, &mut largest, SystemOperation::max())?;
            let b = world.immediate_all_reduce_into(scope, &(rank + 1), &mut total, SystemOperation::sum())?;
            b.wait()?;
            a.wait()?;
            Ok(())
        })?;
        good += u64::from(largest == 0.5 * (size - 1) as f64);
        good += u64::from(total == size * (size + 1) / 2);
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank but the last starts a non-blocking barrier and waits for
    /// it; the last returns at once: a deadlock across processes, which
    /// the launch reports with every waiting rank.
    pub static SKIPPED_IMMEDIATE = fn skipped_immediate(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        if world.rank() == world.size() - 1 {
            return Ok(());
        }
        request::scope(|scope| -> Result<(), Error> {
            world.immediate_barrier(scope)?.wait()?;
            Ok(())
        })
    }
}

/// `a ∘ b` for affine maps of `u32` packed in a `u64` (`x ↦ m x + c`, `m`
/// in the high half): associative and not commutative, so a reduction's
/// result says in which order its operands were combined.
fn compose(a: &u64, b: &u64) -> u64 {
    let (am, ac) = ((*a >> 32) as u32, *a as u32);
    let (bm, bc) = ((*b >> 32) as u32, *b as u32);
    u64::from(am.wrapping_mul(bm)) << 32 | u64::from(am.wrapping_mul(bc).wrapping_add(ac))
}

/// The map a rank with key `k` contributes to a [`compose`] reduction,
/// `x ↦ (k + 2) x + k² + 3`: no two of them commute.
fn map_of(k: u64) -> u64 {
    (k + 2) << 32 | (k * k + 3)
}

/// [`IMMEDIATE_USER_OP`]'s checks per rank.
pub const USER_OP_CHECKS: u64 = 4;

gpu_mpi_device::kernel! {
    /// Non-blocking reductions of the world with an operation of the
    /// program's own, which is not commutative ([`compose`]): an all-reduce
    /// and a reduce to the last rank, both started before either is waited
    /// for. Across processes the relay cannot apply the operation: each
    /// process's ranks fold their own, and every rank joins the processes'
    /// parts at its completion, keeping the operation meanwhile in 8 bytes
    /// and its operand in 32 (of the default 64-byte cells): so there (the
    /// host passes a non-zero `rounds`), an operation that captures 16
    /// bytes fails on every rank with `Error::AcrossProcesses`, and five
    /// `u64` with `MPI_ERR_BUFFER`; in one process both complete.
    /// `out[rank]`: the checks that held (all [`USER_OP_CHECKS`]).
    pub static IMMEDIATE_USER_OP = fn immediate_user_op(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let op = || UserOperation::associative(compose);
        let expected = (1..size as u64).fold(map_of(0), |acc, r| compose(&acc, &map_of(r)));
        let mine = map_of(rank as u64);
        let (mut all, mut rooted) = (0u64, 0u64);
        let last = world.process_at_rank(size - 1);
        request::scope(|scope| -> Result<(), Error> {
            let a = world.immediate_all_reduce_into(scope, &mine, &mut all, op())?;
            let b = if rank == size - 1 {
                last.immediate_reduce_into_root(scope, &mine, &mut rooted, op())?
            } else {
                last.immediate_reduce_into(scope, &mine, op())?
            };
            b.wait()?;
            a.wait()?;
            Ok(())
        })?;
        let mut good = u64::from(all == expected) + u64::from(rank != size - 1 || rooted == expected);
        let across = args.rounds != 0;
        let wide = [1u64, rank as u64];
        let mut sum = 0u64;
        let captures = request::scope(|scope| -> Result<(), Error> {
            let op = UserOperation::commutative(move |a: &u64, b: &u64| a.wrapping_add(*b).wrapping_add(wide[0] - 1));
            world.immediate_all_reduce_into(scope, &wide[1], &mut sum, op)?.wait()?;
            Ok(())
        });
        let n = size as u64;
        good += u64::from(match captures {
            Ok(()) => !across && sum == n * (n - 1) / 2,
            Err(e) => across && matches!(e, Error::AcrossProcesses { .. }),
        });
        let mut five = [0u64; 5];
        let long = request::scope(|scope| -> Result<(), Error> {
            let op = UserOperation::commutative(|a: &u64, b: &u64| a.wrapping_add(*b));
            world.immediate_all_reduce_into(scope, &[1u64; 5][..], &mut five[..], op)?.wait()?;
            Ok(())
        });
        good += u64::from(match long {
            Ok(()) => !across && five == [n; 5],
            Err(e) => across && e.class() == gpu_mpi_device::ErrorClass::Buffer,
        });
        args.out.write(rank as usize, good)
    }
}

/// The world split into its even and its odd ranks, each half ordered by
/// descending world rank (so each spans every process, in an order unlike
/// the world's): the half, and `top`, its rank 0's world rank (half rank
/// `r` is world rank `top - 2 r`).
fn halves(world: &World) -> Result<(SimpleCommunicator<'_>, i32), Error> {
    let (rank, size) = (world.rank(), world.size());
    let half = world
        .split_by_color_with_key(Color::with_value((rank % 2) as u32), -rank)?
        .ok_or(Error::application(3))?;
    Ok((half, size - 1 - ((size - 1 - rank) % 2)))
}

/// One step of a ring on `c` with tag `tag`: sends `me` to the next rank,
/// returns what the previous one sent.
fn ring_step<C: Communicator>(c: &C, me: u64, tag: i32) -> Result<u64, Error> {
    let (r, n) = (c.rank(), c.size());
    let mut got = u64::MAX;
    send_receive_into_with_tags(
        &me,
        &c.process_at_rank((r + 1) % n),
        tag,
        &mut got,
        &c.process_at_rank((r + n - 1) % n),
        tag,
    )?;
    Ok(got)
}

/// [`IMMEDIATE_GROUPS`]'s checks per rank with a root in its half.
pub const IMMEDIATE_GROUP_CHECKS_ROOTED: u64 = 2;
/// [`IMMEDIATE_GROUPS`]'s checks per rank without a root.
pub const IMMEDIATE_GROUP_CHECKS: u64 = 6;

gpu_mpi_device::kernel! {
    /// Non-blocking collectives of communicators: the world split into the
    /// even and the odd ranks, ordered by descending world rank (each half
    /// spans every process, its member order is not the world's). On each
    /// half: a barrier with a ring exchange between its start and its wait,
    /// from every root a broadcast and a sum reduce, an all-reduce of the
    /// largest `f64` and one of an `i64` sum of the members' ranks in the
    /// half weighted by their world ranks, both started before either is
    /// waited for; three rounds of two all-reduces in flight with an
    /// operation of the program's own that is not commutative ([`compose`]:
    /// the members' parts joined in member order at each member's
    /// completion when the half spans processes); a broadcast
    /// whose last member names another root, which fails with
    /// `MPI_ERR_ROOT` on every member. Then the world split by blocks (one
    /// process's ranks each): an all-reduce with the program's own
    /// operation, which completes. `out[rank]`: the checks that held
    /// ([`IMMEDIATE_GROUP_CHECKS_ROOTED`] × its half's size +
    /// [`IMMEDIATE_GROUP_CHECKS`]).
    pub static IMMEDIATE_GROUPS = fn immediate_groups(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let rank = world.rank();
        let me = rank as u64;
        let mut good = 0u64;
        let (half, top) = halves(world)?;
        let (hr, hn) = (half.rank(), half.size());
        let world_of = |r: i32| (top - 2 * r) as u64;
        request::scope(|scope| -> Result<(), Error> {
            let barrier = half.immediate_barrier(scope)?;
            let got = ring_step(&half, me, 6)?;
            barrier.wait()?;
            good += u64::from(got == world_of((hr + hn - 1) % hn));
            Ok(())
        })?;
        for root in 0..hn {
            let p = half.process_at_rank(root);
            let mut v = if hr == root { 700 + me } else { 0 };
            request::scope(|scope| p.immediate_broadcast_into(scope, &mut v)?.wait().map(|_| ()))?;
            good += u64::from(v == 700 + world_of(root));
            let mut sum = 0u64;
            request::scope(|scope| -> Result<(), Error> {
                if hr == root {
                    p.immediate_reduce_into_root(scope, &me, &mut sum, SystemOperation::sum())?.wait()?;
                } else {
                    p.immediate_reduce_into(scope, &me, SystemOperation::sum())?.wait()?;
                }
                Ok(())
            })?;
            let expected: u64 = (0..hn).map(world_of).sum();
            good += u64::from(hr != root || sum == expected);
        }
        let (mut largest, mut total) = (0f64, 0i64);
        request::scope(|scope| -> Result<(), Error> {
            let x = 0.5 * rank as f64;
            let weighted = i64::from(hr + 1) * i64::from(rank);
            let a = half.immediate_all_reduce_into(scope, &x, &mut largest, SystemOperation::max())?;
            let b = half.immediate_all_reduce_into(scope, &weighted, &mut total, SystemOperation::sum())?;
            b.wait()?;
            a.wait()?;
            Ok(())
        })?;
        good += u64::from(largest == 0.5 * top as f64);
        let weighted: i64 = (0..hn).map(|r| i64::from(r + 1) * world_of(r) as i64).sum();
        good += u64::from(total == weighted);
        let add = || UserOperation::commutative(|a: &u64, b: &u64| a.wrapping_add(*b));
        // Three rounds of two in flight: a member that completes both may
        // start the next round, in the same slots, while another still
        // joins this one.
        let mut all_right = true;
        for round in 0..3u64 {
            let (mut x, mut y) = (0u64, 0u64);
            request::scope(|scope| -> Result<(), Error> {
                let op = || UserOperation::associative(compose);
                let a = half.immediate_all_reduce_into(scope, &map_of(me + round), &mut x, op())?;
                let b = half.immediate_all_reduce_into(scope, &map_of(me * round), &mut y, op())?;
                a.wait()?;
                b.wait()?;
                Ok(())
            })?;
            let expect = |f: &dyn Fn(u64) -> u64| {
                (1..hn).fold(map_of(f(world_of(0))), |acc, r| compose(&acc, &map_of(f(world_of(r)))))
            };
            all_right &= x == expect(&|w| w + round) && y == expect(&|w| w * round);
        }
        good += u64::from(all_right);
        let mut v = 0u64;
        let wrong = request::scope(|scope| -> Result<(), Error> {
            let root = if hr == hn - 1 && hn > 1 { 1 } else { 0 };
            half.process_at_rank(root).immediate_broadcast_into(scope, &mut v)?.wait()?;
            Ok(())
        });
        good += u64::from(hn == 1 || wrong.is_err_and(|e| e.class() == gpu_mpi_device::ErrorClass::Root));
        let block = world.split_shared()?;
        let mut sum = 0u64;
        request::scope(|scope| -> Result<(), Error> {
            block.immediate_all_reduce_into(scope, &me, &mut sum, add())?.wait()?;
            Ok(())
        })?;
        let n = block.size() as u64;
        let first = me - block.rank() as u64;
        good += u64::from(sum == n * first + n * (n - 1) / 2);
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// The world split into halves as in [`IMMEDIATE_GROUPS`]; every rank
    /// but the world's last starts a non-blocking barrier on its half and
    /// waits for it, the last returns: its half's other members wait
    /// forever, a deadlock in a communicator's collective across
    /// processes, which the launch reports with every waiting rank.
    pub static SKIPPED_GROUP_IMMEDIATE = fn skipped_group_immediate(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (half, _) = halves(world)?;
        if world.rank() == world.size() - 1 {
            return Ok(());
        }
        request::scope(|scope| -> Result<(), Error> {
            half.immediate_barrier(scope)?.wait()?;
            Ok(())
        })
    }
}

gpu_mpi_device::kernel! {
    /// A window on the world: its operations would reach into another
    /// process's memory, so across processes every rank's creation fails
    /// with `Error::AcrossProcesses` (in one process it is created and
    /// freed).
    pub static WINDOW = fn window(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        Window::<u64>::create_dynamic(world)?.free()
    }
}

gpu_mpi_device::kernel! {
    /// Communicators across processes: the world split into the even and
    /// the odd ranks (ordered by descending world rank), which span every
    /// process; on each half a ring exchange, a broadcast from its last
    /// rank, an all-reduce and a duplicate with a barrier; then the world
    /// split by blocks (`split_shared`, one process's ranks each) with a
    /// reduce. `out[rank]`: the checks that held (all [`SPLIT_CHECKS`]).
    pub static SPLIT = fn split(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let me = rank as u64;
        let mut good = 0u64;
        let (half, top) = halves(world)?;
        let (hr, hn) = (half.rank(), half.size());
        good += u64::from(hn == (size + 1 - rank % 2) / 2 && rank == top - 2 * hr);

        let got = ring_step(&half, me, 5)?;
        good += u64::from(got == (top - 2 * ((hr + hn - 1) % hn)) as u64);

        let mut v = if hr == hn - 1 { me } else { u64::MAX };
        half.process_at_rank(hn - 1).broadcast_into(&mut v)?;
        good += u64::from(v == (top - 2 * (hn - 1)) as u64);

        let mut sum = 0u64;
        half.all_reduce_into(&me, &mut sum, SystemOperation::sum())?;
        let expected: u64 = (0..hn).map(|r| (top - 2 * r) as u64).sum();
        good += u64::from(sum == expected);

        let dup = half.duplicate()?;
        dup.barrier()?;
        good += u64::from(dup.size() == hn && dup.rank() == hr);
        good += u64::from(dup.compare(&half) == CommunicatorRelation::Congruent);

        // Every third rank outside; the others keep world order.
        let color = if rank % 3 == 0 {
            Color::undefined()
        } else {
            Color::with_value(0)
        };
        let thirds = world.split_by_color(color)?;
        let outside = (size + 2) / 3;
        good += u64::from(match &thirds {
            None => rank % 3 == 0,
            Some(t) => t.size() == size - outside && t.rank() == rank - rank / 3 - 1,
        });

        // The group of the world's first and last ranks (first, then last).
        let ends = [size - 1, 0];
        let group = world.group();
        let pair = group.include(&ends)?;
        let made = world.split_by_subgroup_collective(&pair)?;
        good += u64::from(match &made {
            Some(c) => {
                let mut v = if c.rank() == 0 { me } else { 0 };
                c.process_at_rank(0).broadcast_into(&mut v)?;
                ends.contains(&rank) && c.size() == 2 && v == (size - 1) as u64
            }
            None => !ends.contains(&rank),
        });

        let block = world.split_shared()?;
        let mut total = 0u64;
        let root = block.process_at_rank(0);
        if block.rank() == 0 {
            root.reduce_into_root(&me, &mut total, SystemOperation::sum())?;
            let first = rank as u64;
            let n = block.size() as u64;
            good += u64::from(total == n * first + n * (n - 1) / 2);
        } else {
            root.reduce_into(&me, SystemOperation::sum())?;
            good += 1;
        }
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// Duplicates of the world until none is left: world rank 0 draws
    /// every one from its process's share of contexts (the spec's
    /// `communicators`, whatever the number of processes), and the one
    /// after fails with `MPI_ERR_COMM` on every rank. `out[rank]`: the
    /// duplicates made, each checked by a barrier.
    pub static CONTEXTS = fn contexts(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let mut made = 0u64;
        loop {
            match world.duplicate() {
                Ok(d) => {
                    d.barrier()?;
                    made += 1;
                }
                Err(Error::CommunicatorLimit { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        args.out.write(world.rank() as usize, made)
    }
}

/// [`SPLIT`]'s checks per rank.
pub const SPLIT_CHECKS: u64 = 9;

gpu_mpi_device::kernel! {
    /// Every rank but the last enters a world barrier; the last returns
    /// at once: a deadlock in the barrier across processes.
    pub static SKIPPED_BARRIER = fn skipped_barrier(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        if world.rank() == world.size() - 1 {
            return Ok(());
        }
        world.barrier()
    }
}

gpu_mpi_device::kernel! {
    /// Every rank but the last enters an all-reduce; the last returns at
    /// once: a deadlock in the world's own all-reduce, whose barrier
    /// crosses processes, which the report names as in one process.
    pub static SKIPPED_ALL_REDUCE = fn skipped_all_reduce(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        if world.rank() == world.size() - 1 {
            return Ok(());
        }
        let mut sum = 0u32;
        world.all_reduce_into(&1u32, &mut sum, SystemOperation::sum())
    }
}

gpu_mpi_device::kernel! {
    /// The last rank aborts the world (`MPI_Abort`); every other rank waits
    /// for a message from it, gives up with `Aborted` and returns: the
    /// launch reports the abort on every process.
    pub static ABORT = fn abort(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank == size - 1 {
            world.abort();
            return Ok(());
        }
        let mut v = 0u64;
        match world.process_at_rank(size - 1).receive_into_with_tag(&mut v, 3) {
            Err(Error::Aborted { .. }) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Err(Error::application(1)),
        }
    }
}

gpu_mpi_device::kernel! {
    /// The last rank returns an error (application code 5) instead of
    /// sending; every other rank waits for a message from it: the launch
    /// ends on every process with a report that names the error and the
    /// waiting ranks, never a hang.
    pub static RANK_ERROR = fn rank_error(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank == size - 1 {
            return Err(Error::application(5));
        }
        let mut v = 0u64;
        world.process_at_rank(size - 1).receive_into_with_tag(&mut v, 5)?;
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// The last rank panics (a trap on the GPU); every other rank waits for
    /// a message from it: the launch reports the panic on every process.
    pub static PANIC = fn panic_last(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank == size - 1 {
            panic!("the last rank stops here");
        }
        let mut v = 0u64;
        world.process_at_rank(size - 1).receive_into_with_tag(&mut v, 4)?;
        Ok(())
    }
}

/// Messages each rank posts at once in [`REQUESTS`].
pub const POSTED: usize = 4;

gpu_mpi_device::kernel! {
    /// Non-blocking point-to-point and matched probes across processes:
    /// every rank posts [`POSTED`] receives from its left neighbour and as
    /// many sends (`100 × rank + k`, tag `k`) to its right one and waits
    /// for all; then it sends one more message (tag 7) to the right, takes
    /// the left one's with a matched probe from any source and receives it
    /// through the probe's handle. `out[rank]`: the messages that came from
    /// the left neighbour with the right tag and value (all `POSTED + 1`).
    pub static REQUESTS = fn requests(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let left = (rank + size - 1) % size;
        let to = world.process_at_rank((rank + 1) % size);
        let from = world.process_at_rank(left);
        let mine: [u64; POSTED] = core::array::from_fn(|k| 100 * rank as u64 + k as u64);
        let mut theirs = [0u64; POSTED];
        request::scope(|scope| -> Result<(), Error> {
            let [a, b, c, d] = &mut theirs;
            let mut requests = [
                from.immediate_receive_into_with_tag(scope, a, 0)?,
                from.immediate_receive_into_with_tag(scope, b, 1)?,
                from.immediate_receive_into_with_tag(scope, c, 2)?,
                from.immediate_receive_into_with_tag(scope, d, 3)?,
                to.immediate_send_with_tag(scope, &mine[0], 0)?,
                to.immediate_send_with_tag(scope, &mine[1], 1)?,
                to.immediate_send_with_tag(scope, &mine[2], 2)?,
                to.immediate_send_with_tag(scope, &mine[3], 3)?,
            ];
            wait_all(&mut requests, &mut [])
        })?;
        let mut good = theirs
            .iter()
            .enumerate()
            .filter(|&(k, &v)| v == 100 * left as u64 + k as u64)
            .count() as u64;
        to.send_with_tag(&(rank as u64), 7)?;
        let (message, status) = world.any_process().matched_probe_with_tag(7)?;
        let mut v = 0u64;
        message.matched_receive_into(&mut v)?;
        if status.source_rank() == left && v == left as u64 {
            good += 1;
        }
        args.out.write(rank as usize, good)
    }
}
