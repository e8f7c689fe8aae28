//! The emulator's synchronising-operation counts (`LaunchReport::sync_counts`):
//! what the host shim counts, that each operation is charged to the rank
//! that issued it, and what an eager message costs in the point-to-point
//! engine (device/src/engine.rs, "One message"). Emulator only: the
//! counts are the host shim's; a GPU counts nothing.

mod common;
use bytemuck::{Pod, Zeroable};
use common::cell;
use gpu_mpi_device::abi::shim::{self, runtime, Ordering};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{CpuOptions, Device, Schedule, SyncCounts, WorldSpec};

/// One of each operation the shim has, issued by the rank given in `[0]`.
fn one_of_each(a: &shim::AtomicU32) {
    a.load(Ordering::Relaxed);
    a.load(Ordering::Acquire);
    a.load(Ordering::AcqRel);
    a.load(Ordering::Release); // a relaxed load
    a.store(1, Ordering::Relaxed);
    a.store(2, Ordering::Release);
    a.store(3, Ordering::AcqRel);
    a.store(4, Ordering::Acquire); // a relaxed store
    a.swap(5, Ordering::Release);
    a.swap(6, Ordering::Acquire);
    a.fetch_add(1, Ordering::AcqRel);
    a.fetch_or(1, Ordering::Relaxed);
    let _ = a.compare_exchange(0, 1, Ordering::Relaxed); // fails, still counted
    let _ = a.compare_exchange(7, 8, Ordering::AcqRel); // succeeds
    shim::fence(Ordering::Acquire);
    shim::fence(Ordering::Release);
    shim::fence(Ordering::AcqRel);
    shim::fence(Ordering::Relaxed); // no fence
}

fn expected_one_of_each() -> SyncCounts {
    SyncCounts {
        acquire_loads: 2,
        release_stores: 2,
        acquire_rmws: 1,
        release_rmws: 1,
        acq_rel_rmws: 2,
        relaxed_rmws: 2,
        fences: 3,
        ..SyncCounts::default()
    }
}

/// What every rank's kernel entry issues before its body: one block
/// barrier, behind which the block zeroes its library words with relaxed
/// stores (`kernel::rank_main`; relaxed stores are not counted).
const ENTRY: SyncCounts = SyncCounts {
    block_barriers: 1,
    acquire_loads: 0,
    release_stores: 0,
    acquire_rmws: 0,
    release_rmws: 0,
    acq_rel_rmws: 0,
    relaxed_rmws: 0,
    fences: 0,
    warp_operations: 0,
};

/// Rank `r`'s counts of `p` without its kernel entry's ([`ENTRY`]): what
/// its kernel's body issued.
fn body(p: &gpu_mpi_host::SyncProfile, r: u32) -> Option<SyncCounts> {
    p.rank(r).map(|c| {
        assert!(
            c.block_barriers >= 1,
            "rank {r} passed its entry's block barrier: {c:?}"
        );
        SyncCounts {
            block_barriers: c.block_barriers - 1,
            ..c
        }
    })
}

gpu_mpi_device::kernel! {
    /// Rank `[0]` issues one of each shim operation on word 1 of `args`,
    /// suspending in between (a failed poll), so that other ranks run.
    pub static ONE_OF_EACH = fn one_of_each_kernel(world: &World, args: &GlobalSlice<u32>) -> Result<(), Error> {
        let who = cell(args, 0).load(Ordering::Relaxed);
        if world.rank() as u32 == who {
            one_of_each(cell(args, 1));
            shim::Backoff::new().snooze();
            one_of_each(cell(args, 2));
        }
        Ok(())
    }
}

#[test]
fn the_host_shim_counts_each_kind_on_the_calling_thread() {
    let _ = runtime::take_sync_counts();
    let a = shim::AtomicU32::new(7);
    one_of_each(&a);
    assert_eq!(runtime::take_sync_counts(), expected_one_of_each());
    assert_eq!(
        runtime::take_sync_counts(),
        SyncCounts::default(),
        "taking resets"
    );
    let e = expected_one_of_each();
    assert_eq!((e.ordered_rmws(), e.synchronizing(), e.total()), (4, 11, 13));
}

#[test]
fn each_rank_is_charged_with_its_own_operations() {
    for workers in [1, 2] {
        let d = Device::cpu_with(CpuOptions {
            workers,
            ..CpuOptions::default()
        });
        for who in [0u32, 5, 63] {
            let mut buf = d.alloc_zeroed::<u32>(3).unwrap();
            d.write(&mut buf, &[who, 7, 7]).unwrap();
            let rep = d
                .launch(&ONE_OF_EACH, &buf.slice(), &WorldSpec::ranks(64).block_dim(32))
                .unwrap();
            let p = rep.sync_counts.expect("the cpu backend counts");
            assert_eq!(p.per_rank().len(), 64);
            let e = expected_one_of_each();
            for r in 0..64 {
                let want = if r == who { e + e } else { SyncCounts::default() };
                assert_eq!(body(&p, r), Some(want), "rank {r}, {workers} workers");
            }
            assert_eq!(p.rank(64), None);
            let entries = (0..64).fold(SyncCounts::default(), |sum, _| sum + ENTRY);
            assert_eq!(p.total(), e + e + entries);
        }
    }
}

/// Arguments of [`EAGER`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct EagerArgs {
    /// Messages rank 1 sends to rank 0.
    messages: u32,
    reserved: u32,
    /// Rank 0 writes the messages it got wrong into element 0.
    errors: GlobalSlice<u32>,
}

gpu_mpi_device::kernel! {
    /// Rank 1 sends `messages` 8-byte messages to rank 0 with blocking
    /// sends; rank 0 receives them with blocking receives and checks them.
    pub static EAGER = fn eager_kernel(world: &World, args: &EagerArgs) -> Result<(), Error> {
        match world.rank() {
            1 => {
                for i in 0..args.messages as u64 {
                    world.process_at_rank(0).send(&(i * 3 + 1))?;
                }
            }
            0 => {
                let mut errors = 0;
                for i in 0..args.messages as u64 {
                    let (v, _) = world.process_at_rank(1).receive::<u64>()?;
                    errors += u32::from(v != i * 3 + 1);
                }
                args.errors.write(0, errors)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Runs [`EAGER`] and returns the counts of ranks 0 and 1.
fn eager(d: &Device, messages: u32, spec: WorldSpec) -> (SyncCounts, SyncCounts) {
    let errors = d.alloc_zeroed::<u32>(1).unwrap();
    let args = EagerArgs {
        messages,
        reserved: 0,
        errors: errors.slice(),
    };
    let rep = d.launch(&EAGER, &args, &spec).unwrap();
    assert_eq!(d.download(&errors).unwrap(), [0]);
    let p = rep.sync_counts.unwrap();
    for r in 2..rep.ranks {
        assert_eq!(body(&p, r), Some(SyncCounts::default()), "rank {r} only returned");
    }
    (body(&p, 0).unwrap(), body(&p, 1).unwrap())
}

/// Slots a receiver returns in one batch: half a rank's slots (at least
/// one), as `slot_return::defer_free` does.
fn batch(s: u64) -> u64 {
    (s / 2).max(1)
}

/// What the engine's module docs promise for `n` eager messages with `s`
/// slots per rank, whatever the schedule: per message, the sender issues
/// one Release swap (the push); the receiver returns each slot either at
/// once, with one Release store (a receive whose message was already
/// queued), or later in a batch, one Release fence per batch of at most
/// `batch(s)` slots (their FREE stores are relaxed), so the fences are at
/// least the deferred slots over `batch(s)` and at most one per deferred
/// slot; the receiver's takes of its inbox (a relaxed swap after an
/// acquire: the Acquire load of a waiting receive's poll that saw the
/// inbox non-empty, or an Acquire fence after a relaxed look; a second
/// fence when the swap finds a push newer than the look) happen only when
/// it is not empty (so at most one per message, and at least one per `s`:
/// the sender has at most `s` slots in flight), and each poll of a waiting
/// receive is one Acquire load, however many it makes; the sender's Acquire fences
/// come one per reclaim scan that found a free slot: none for its first
/// `s` messages (a new world's slots are known free), then the first scan
/// finds all `s`, every later one at least one. Nothing else.
fn check_bounds(n: u64, s: u64, receiver: SyncCounts, sender: SyncCounts, what: &str) {
    let batches = n.div_ceil(s);
    assert_eq!(
        sender,
        SyncCounts {
            release_rmws: n,
            fences: sender.fences,
            ..SyncCounts::default()
        },
        "sender, {what}"
    );
    let least_fences = batches.saturating_sub(1);
    let most_fences = n.saturating_sub(s);
    assert!(
        (least_fences..=most_fences).contains(&sender.fences),
        "sender fences {} not in {least_fences}..={most_fences}, {what}",
        sender.fences
    );
    assert_eq!(
        receiver,
        SyncCounts {
            acquire_loads: receiver.acquire_loads,
            release_stores: receiver.release_stores,
            fences: receiver.fences,
            relaxed_rmws: receiver.relaxed_rmws,
            ..SyncCounts::default()
        },
        "receiver, {what}"
    );
    let takes = receiver.relaxed_rmws;
    assert!(
        (batches..=n).contains(&takes),
        "receiver takes {takes} not in {batches}..={n}, {what}"
    );
    // A slot not returned at once went back in a batch.
    assert!(receiver.release_stores <= n, "receiver release stores, {what}");
    let deferred = n - receiver.release_stores;
    let least = takes.saturating_sub(receiver.acquire_loads) + deferred.div_ceil(batch(s));
    let most = 2 * takes + deferred;
    assert!(
        (least..=most).contains(&receiver.fences),
        "receiver fences {} not in {least}..={most}, {what}",
        receiver.fences
    );
}

#[test]
fn an_eager_message_costs_one_release_and_one_acquire_in_batches() {
    // One block on one worker: passes resume rank 0, then rank 1. The
    // sender fills its `s` slots in one resumption (known free: no scan,
    // no fence), then fails to find a free slot; the receiver's receive,
    // which waited, takes all `s` with one swap after the Acquire load of
    // the poll that saw them, and defers its own slot;
    // the `s - 1` receives after it find their messages already queued
    // and return each slot at once (one Release store); the next receive
    // waits, and returns the deferred slot first (one fence), as does the
    // rank's exit; the sender's next scan finds all `s` free (one fence),
    // and so on.
    let d = Device::cpu();
    for (n, s) in [(0u32, 8u32), (1, 8), (8, 8), (100, 8), (20, 4), (7, 1), (64, 64)] {
        let spec = WorldSpec::ranks(4).block_dim(4).slots_per_rank(s);
        let (receiver, sender) = eager(&d, n, spec);
        let (n, s) = (n as u64, s as u64);
        let batches = n.div_ceil(s);
        assert_eq!(
            sender,
            SyncCounts {
                release_rmws: n,
                fences: batches.saturating_sub(1),
                ..SyncCounts::default()
            },
            "sender, {n} messages, {s} slots"
        );
        // Each take: the Acquire load of the waiting receive's poll that
        // found the batch, and a relaxed swap (the sender is suspended, so
        // nothing lands between the look and the swap).
        assert_eq!(
            receiver,
            SyncCounts {
                acquire_loads: batches,
                relaxed_rmws: batches,
                release_stores: n - batches,
                fences: batches,
                ..SyncCounts::default()
            },
            "receiver, {n} messages, {s} slots"
        );
        check_bounds(n, s, receiver, sender, "parallel schedule");
    }
}

#[test]
fn eager_message_counts_stay_in_bounds_on_any_schedule() {
    let d = Device::cpu_with(CpuOptions {
        workers: 2,
        ..CpuOptions::default()
    });
    let (n, s) = (64u32, 4u32);
    let mut fences = Vec::new();
    for seed in 0..16 {
        for schedule in [Schedule::Random { seed }, Schedule::pct(seed, 3)] {
            let spec = WorldSpec::ranks(4)
                .block_dim(2)
                .slots_per_rank(s)
                .schedule(schedule);
            let (receiver, sender) = eager(&d, n, spec);
            check_bounds(n as u64, s as u64, receiver, sender, &schedule.to_string());
            fences.push(sender.fences);
        }
    }
    // A rank gives way only at a failed poll, so on one worker the sender
    // fills all its slots before the receiver runs, and the receiver frees
    // every message that arrived before the sender runs again: one swap per
    // `s` messages, and one fence per `s` messages after the first `s`
    // (sent from slots known free), on every seeded schedule.
    let batches = (n / s) as u64;
    assert!(fences.iter().all(|&f| f == batches - 1), "{fences:?}");
    // Two blocks on two workers: the ranks really run at once, and a scan
    // may find only part of a batch freed.
    for _ in 0..4 {
        let spec = WorldSpec::ranks(4).block_dim(2).slots_per_rank(s);
        let (receiver, sender) = eager(&d, n, spec);
        check_bounds(n as u64, s as u64, receiver, sender, "two workers");
    }
}

gpu_mpi_device::kernel! {
    /// Every rank all-reduces one `f64` (its rank + 1) over the world;
    /// a rank whose result is not `n (n + 1) / 2` adds one to element 0.
    pub static ALL_REDUCE_ONE = fn all_reduce_one_kernel(world: &World, errors: &GlobalSlice<u32>) -> Result<(), Error> {
        let n = world.size() as f64;
        let mut sum = 0.0f64;
        world.all_reduce_into(&(world.rank() as f64 + 1.0), &mut sum, gpu_mpi_device::collective::SystemOperation::sum())?;
        if sum != n * (n + 1.0) / 2.0 {
            let _ = cell(errors, 0).fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// The world all-reduce's block phase follows the hardware (warp shuffles,
/// then the warps' partials in shared memory) and its combination of the
/// blocks' results is one warp's: a rank meets the same 6 block barriers
/// whatever the block size (3 in the block phase, 2 in the world barrier,
/// 1 for the count check), where the earlier tree of neighbours in global
/// memory took `log2(block_dim) + 1` per phase and the combination a block
/// tree of its own. Warp operations, for one 8-byte element (2 words a
/// shuffle): every warp agrees on its ranks' counts (a shuffle and a vote)
/// and folds its lanes (`2 ceil(log2 32)` shuffles); warp 0 then checks the
/// warps' counts (a vote) and folds their partials (`2 ceil(log2 warps)`);
/// then every warp folds the blocks' results, one run of blocks per lane
/// (`2 ceil(log2 runs)`), and passes lane 0's result to every lane (2).
#[test]
fn a_world_all_reduce_meets_six_block_barriers_whatever_the_block_size() {
    let d = Device::cpu();
    for (blocks, block_dim) in [(1u32, 32u32), (1, 64), (1, 256), (4, 64), (4, 256)] {
        let ranks = blocks * block_dim;
        let errors = d.alloc_zeroed::<u32>(1).unwrap();
        let spec = WorldSpec::ranks(ranks).block_dim(block_dim);
        let rep = d.launch(&ALL_REDUCE_ONE, &errors.slice(), &spec).unwrap();
        assert_eq!(d.download(&errors).unwrap(), [0], "{blocks}x{block_dim}: sums");
        let p = rep.sync_counts.unwrap();
        let warps = block_dim / 32;
        let log2 = |x: u32| u64::from(x.next_power_of_two().trailing_zeros());
        // Each block phase: a shuffle and a vote per warp, the lane fold.
        let lanes = 2 + 2 * log2(32);
        // Warp 0 also: a vote and the fold of the warps' partials.
        let leader = 1 + 2 * log2(warps);
        // Every warp: the fold of the runs of blocks (one block per lane
        // here), then lane 0's result to every lane.
        let runs = blocks.div_ceil(blocks.div_ceil(32));
        let combining = 2 * log2(runs) + 2;
        for r in 0..ranks {
            let c = body(&p, r).unwrap();
            let thread = r % block_dim;
            let expected_warp_ops = if thread < 32 {
                lanes + leader + combining
            } else {
                lanes + combining
            };
            assert_eq!(
                (c.block_barriers, c.warp_operations),
                (6, expected_warp_ops),
                "{blocks}x{block_dim}, rank {r}"
            );
        }
    }
}

/// Arguments of [`GATHER_TO_ROOT`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct GatherArgs {
    /// Elements each rank sends (at most 64).
    count: u32,
    reserved: u32,
    /// Rank 0 adds the elements it got wrong to element 0.
    errors: GlobalSlice<u32>,
}

gpu_mpi_device::kernel! {
    /// Every rank gathers `count` copies of its rank to rank 0, whose
    /// receive buffer is an array on its stack (at most 8 ranks).
    pub static GATHER_TO_ROOT = fn gather_to_root_kernel(world: &World, args: &GatherArgs) -> Result<(), Error> {
        let k = args.count as usize;
        let n = world.size() as usize;
        let mine = [world.rank() as u32; 64];
        let root = world.process_at_rank(0);
        if world.rank() == 0 {
            let mut all = [u32::MAX; 8 * 64];
            root.gather_into_root(&mine[..k], &mut all[..n * k])?;
            let wrong = (0..n * k).filter(|&i| all[i] != (i / k) as u32).count();
            let _ = cell(&args.errors, 0).fetch_add(wrong as u32, Ordering::Relaxed);
        } else {
            root.gather_into(&mine[..k])?;
        }
        Ok(())
    }
}

/// A gather whose root's buffer every rank can reach (the plain emulator:
/// every address is shared) costs one world barrier after the agreement
/// whatever its size: each rank copies its own part into the root's
/// buffer; only the root waits at that barrier, and every rank passes its
/// opening block barrier alone. A root buffer on the stack of a GPU
/// thread (`local_stacks`) cannot be reached, and the parts go through
/// the world's cells, one world barrier (two block barriers) per
/// `collective_bytes` round.
#[test]
fn a_direct_gather_costs_the_same_barriers_at_any_size() {
    let mut barriers = Vec::new();
    for local_stacks in [false, true] {
        let d = Device::cpu_with(CpuOptions {
            local_stacks,
            ..CpuOptions::default()
        });
        for count in [16u32, 64] {
            let errors = d.alloc_zeroed::<u32>(1).unwrap();
            let args = GatherArgs {
                count,
                reserved: 0,
                errors: errors.slice(),
            };
            let spec = WorldSpec::ranks(8).block_dim(4).collective_bytes(64);
            let rep = d.launch(&GATHER_TO_ROOT, &args, &spec).unwrap();
            assert_eq!(
                d.download(&errors).unwrap(),
                [0],
                "local stacks {local_stacks}, {count} elements"
            );
            let p = rep.sync_counts.unwrap();
            let per_rank: Vec<u64> = (0..8).map(|r| p.rank(r).unwrap().block_barriers).collect();
            assert!(per_rank.iter().all(|&b| b == per_rank[0]), "{per_rank:?}");
            barriers.push(per_rank[0]);
        }
    }
    // 16 elements: one round of 64 bytes; 64 elements: four.
    let (direct_small, direct_large, staged_small, staged_large) =
        (barriers[0], barriers[1], barriers[2], barriers[3]);
    assert_eq!(direct_small, direct_large, "{barriers:?}");
    // The staged round's world barrier has its closing block barrier.
    assert_eq!(staged_small, direct_small + 1, "{barriers:?}");
    assert_eq!(staged_large, staged_small + 3 * 2, "{barriers:?}");
}

gpu_mpi_device::kernel! {
    /// Every rank takes an 8-byte broadcast from rank `errors[1]`
    /// (`u64::MAX - 1`); a rank that gets another value adds one to
    /// element 0.
    pub static BROADCAST_EIGHT = fn broadcast_eight_kernel(world: &World, errors: &GlobalSlice<u32>) -> Result<(), Error> {
        let root = errors.read(1)? as i32;
        let mut x = if world.rank() == root { u64::MAX - 1 } else { 0 };
        world.process_at_rank(root).broadcast_into(&mut x)?;
        if x != u64::MAX - 1 {
            let _ = cell(errors, 0).fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// What the 8-byte world broadcast (a headline benchmark) costs each rank,
/// printed for docs/limits.md and pinned: one round, one world barrier whose
/// opening checks that every rank named the same root (MPI 4.1 §6.1), a
/// one-word key. From root 0 (a key of 0): the barrier's two block
/// barriers, the opening one counting the ranks whose key is 0, and no
/// warp operation; with several blocks, for each block's first rank, the
/// barrier's acquire-release arrival and its acquire polls of the arrival
/// count (no fence), which say that every block passed 0. From another
/// root: the opening counts again (three block barriers) and a
/// `match.all` per warp; with several blocks one more block barrier (the warps'
/// keys reach the block's first rank), and for that rank one relaxed OR of
/// the block's key before its arrival (and a relaxed load of every
/// block's after the last one).
#[test]
fn an_eight_byte_world_broadcast_checks_its_root_in_its_one_world_barrier() {
    let d = Device::cpu();
    let shapes = [(1u32, 32u32), (1, 256), (4, 64), (4, 256)];
    for root in [0u32, 1] {
        let mut profiles = Vec::new();
        for (blocks, block_dim) in shapes {
            let ranks = blocks * block_dim;
            let errors = d.upload(&[0u32, root]).unwrap();
            let spec = WorldSpec::ranks(ranks).block_dim(block_dim);
            let rep = d.launch(&BROADCAST_EIGHT, &errors.slice(), &spec).unwrap();
            assert_eq!(
                d.download(&errors).unwrap(),
                [0, root],
                "{blocks}x{block_dim}: values"
            );
            let p = rep.sync_counts.unwrap();
            let (leader, other) = (body(&p, 0).unwrap(), body(&p, 1).unwrap());
            eprintln!("root {root}, {blocks}x{block_dim}: leader {leader:?}; other {other:?}");
            profiles.push(p);
        }
        for ((blocks, block_dim), p) in shapes.into_iter().zip(profiles) {
            let ranks = blocks * block_dim;
            let several = u64::from(blocks > 1);
            let expected = if root == 0 { (2, 0) } else { (3 + several, 1) };
            for r in 0..ranks {
                let c = body(&p, r).unwrap();
                assert_eq!(
                    (c.block_barriers, c.warp_operations),
                    expected,
                    "root {root}, {blocks}x{block_dim}, rank {r}"
                );
                if r % block_dim != 0 || blocks == 1 {
                    assert_eq!(c.total(), 0, "root {root}, {blocks}x{block_dim}, rank {r}: {c:?}");
                } else {
                    assert_eq!(
                        (c.fences, c.acq_rel_rmws, c.relaxed_rmws),
                        (0, 1, u64::from(root != 0)),
                        "root {root}, {blocks}x{block_dim}, rank {r}: {c:?}"
                    );
                }
            }
        }
    }
}
