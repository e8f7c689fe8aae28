//! Erroneous warp collectives on the emulator: a lane that exits before a
//! shuffle is a deadlock naming the operation; lanes that call different
//! operations or masks are an error. Emulator only: on a GPU both are
//! undefined behaviour (a hang or garbage), nothing that can be reported;
//! the values of correct warp collectives are checked on every backend in
//! check/tests/warp.rs. Also a lane that gives up in a warp
//! communicator's arrival (a wait bound; the GPU has no run of it here):
//! the emulator's deadlock report is what showed the lanes out of step.

mod common;
use common::{cell, class};
use gpu_mpi_device::abi::shim::{self, Ordering, WarpOp};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, ErrorClass, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, Schedule, WorldSpec};

fn cpu(workers: usize, schedule: Schedule) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        schedule,
        ..CpuOptions::default()
    })
}

gpu_mpi_device::kernel! {
    /// Lane 3 of every warp returns; the others shuffle with the full mask.
    pub static LANE_LEAVES = fn lane_leaves(_world: &World, _a: &u32) -> Result<(), Error> {
        if shim::lane_id() == 3 {
            return Ok(());
        }
        let _ = shim::shfl_xor_sync(shim::FULL_MASK, 1, 1);
        Ok(())
    }
}

#[test]
fn a_lane_that_exits_before_a_shuffle_is_a_deadlock_naming_it() {
    for schedule in [Schedule::Parallel, Schedule::Random { seed: 1 }] {
        for workers in [1, 2] {
            let e = cpu(workers, schedule)
                .launch(&LANE_LEAVES, &0, &WorldSpec::ranks(128).block_dim(64))
                .unwrap_err();
            let HostError::Deadlock(rep) = e else {
                panic!("{e}")
            };
            for r in 0..128 {
                let want = if r % 32 == 3 {
                    BlockedState::Exited
                } else {
                    BlockedState::Warp {
                        operation: WarpOp::ShflXor,
                        mask: u32::MAX,
                    }
                };
                assert_eq!(rep.state_of(r), Some(want), "rank {r}");
            }
            let s = rep.to_string();
            assert!(
                s.contains("warp collective shfl.sync.bfly.b32 (mask 0xffffffff)"),
                "{s}"
            );
        }
    }
}

gpu_mpi_device::kernel! {
    /// Per `mode`: 0, lane 0 votes while the others shuffle; 1, lane 5
    /// passes a mask without itself; 2, a full mask in a warp of 7 lanes;
    /// 3, lanes 0-15 use the low half as mask and lanes 16-31 the full mask.
    pub static MISMATCH = fn mismatch(_world: &World, mode: &u32) -> Result<(), Error> {
        let lane = shim::lane_id();
        match *mode {
            0 if lane == 0 => {
                let _ = shim::vote_ballot_sync(shim::FULL_MASK, true);
            }
            0 => {
                let _ = shim::shfl_sync(shim::FULL_MASK, 1, 0);
            }
            1 if lane == 5 => shim::warp_sync(1),
            1 => shim::warp_sync(shim::warp_mask()),
            2 => shim::warp_sync(shim::FULL_MASK),
            _ if lane < 16 => shim::warp_sync(0xffff),
            _ => shim::warp_sync(shim::FULL_MASK),
        }
        Ok(())
    }
}

#[test]
fn lanes_that_disagree_on_a_warp_collective_are_an_error() {
    let schedules = [
        Schedule::Parallel,
        Schedule::Random { seed: 5 },
        Schedule::Random { seed: 6 },
        Schedule::Random { seed: 9 },
    ];
    for schedule in schedules {
        for (mode, ranks) in [(0u32, 32u32), (1, 32), (2, 7), (3, 32)] {
            let e = cpu(1, schedule)
                .launch(&MISMATCH, &mode, &WorldSpec::ranks(ranks).block_dim(ranks))
                .unwrap_err();
            // Mode 3 depends on the order: when lanes 0-15 complete their
            // half-warp sync before lane 16 arrives, they return and the
            // others wait for them forever (a deadlock naming the sync).
            if mode == 3 {
                if let HostError::Deadlock(rep) = &e {
                    assert!(
                        rep.to_string().starts_with(
                            "deadlock: ranks 16-31: warp collective bar.warp.sync (mask 0xffffffff)"
                        ),
                        "{rep}"
                    );
                    continue;
                }
            }
            let HostError::WarpMismatch { message, .. } = &e else {
                panic!("mode {mode}: {e}")
            };
            let needle = match mode {
                0 => "vote.sync.ballot.b32",
                1 => "does not name it",
                2 => "do not exist",
                _ => "with mask 0x0000ffff",
            };
            assert!(message.contains(needle), "mode {mode}: {message}");
        }
    }
}

gpu_mpi_device::kernel! {
    /// On the warp communicator of each warp, lane 3 waits in a receive
    /// from world rank 4 (never sent) while the other lanes enter a
    /// barrier: under a wait bound one lane times out and the others give
    /// up. Then every lane calls a barrier and an all-reduce of 1 there,
    /// handles the errors and returns `Ok`. Rank `r` records at `4 r` the
    /// classes of the three calls and the sum.
    pub static GIVE_UP = fn give_up(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        let c = world.split_by_warp()?;
        let first = if c.rank() == 3 {
            let mut x = 0u32;
            world.process_at_rank(4).receive_into(&mut x).map(|_| ())
        } else {
            c.barrier()
        };
        let second = c.barrier();
        let mut sum = 0u32;
        let third = c.all_reduce_into(&1u32, &mut sum, SystemOperation::sum());
        let at = 4 * world.rank() as usize;
        for (i, v) in [class(&first), class(&second), class(&third), sum].into_iter().enumerate() {
            cell(out, at + i).store(v, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Lanes that give up in a warp collective's arrival (the wait bound, or
/// the world's abort) take their arrival back: the next warp collectives
/// on the communicator count their lanes afresh. Before, the lane that had
/// skipped the first barrier arrived at its first barrier as the warp's
/// "last" lane (the others' stale arrivals counted) and went into the
/// barrier's `bar.warp.sync` alone, which the emulator reported as lanes
/// that disagree on a warp collective (a hang on a GPU). Now the launch
/// ends as a world aborted by a timeout whose ranks all handled their
/// errors, every call after the abort returns `Ok` (its arrival
/// completed: the sum is right) or an error class, never a warp
/// collective with a lane missing. (Which calls pair up after the abort
/// depends on who gave up first: lane 3's next barrier may complete the
/// others' first, as MPI allows of barriers called from different places.)
#[test]
fn a_lane_that_gives_up_in_a_warp_arrival_takes_it_back() {
    use std::time::Duration;
    let schedules = [
        Schedule::Parallel,
        Schedule::Random { seed: 1 },
        Schedule::Random { seed: 2 },
        Schedule::pct(3, 2),
    ];
    for schedule in schedules {
        for (ranks, block) in [(32u32, 32u32), (40, 40), (64, 32)] {
            let d = cpu(2, schedule);
            let out = d.alloc_zeroed::<u32>(4 * ranks as usize).unwrap();
            let spec = WorldSpec::ranks(ranks)
                .block_dim(block)
                .timeout(Duration::from_millis(50));
            let what = format!("{schedule:?}, {ranks} ranks in blocks of {block}");
            match d.launch(&GIVE_UP, &out.slice(), &spec) {
                Err(HostError::WorldAborted { timed_out: true, .. }) => {}
                other => panic!("{what}: {other:?}"),
            }
            let got = d.download(&out).unwrap();
            let (timeout, aborted) = (ErrorClass::Timeout as u32, ErrorClass::Aborted as u32);
            for r in 0..ranks as usize {
                let [first, second, third, sum] = [0, 1, 2, 3].map(|i| got[4 * r + i]);
                let lanes = (block - (r as u32 % block) / 32 * 32).min(32);
                if r as u32 % 32 == 3 {
                    assert!(
                        first == timeout || first == aborted,
                        "{what}: rank {r}: first {first}"
                    );
                }
                // The others' first barrier may also complete: when lane 3
                // gives up first, its next barrier is the last arrival.
                for (name, c) in [("first", first), ("second", second), ("third", third)] {
                    assert!(
                        c == 0 || c == timeout || c == aborted || c == ErrorClass::Count as u32,
                        "{what}: rank {r}: {name} {c}"
                    );
                }
                if third == 0 {
                    assert_eq!(sum, lanes, "{what}: rank {r}: the all-reduce's sum");
                }
            }
        }
    }
}
