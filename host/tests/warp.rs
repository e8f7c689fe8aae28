//! Erroneous warp collectives on the emulator: a lane that exits before a
//! shuffle is a deadlock naming the operation; lanes that call different
//! operations or masks are an error. Emulator only: on a GPU both are
//! undefined behaviour (a hang or garbage), nothing that can be reported;
//! the values of correct warp collectives are checked on every backend in
//! check/tests/warp.rs.

use gpu_mpi_device::abi::shim::{self, WarpOp};
use gpu_mpi_device::{Error, World};
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
