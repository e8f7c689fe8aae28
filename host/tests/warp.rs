//! Warp collectives (shuffles, votes, match, `bar.warp.sync`) and the
//! block's shared scratch on the emulator: exact values on full and
//! partial warps and several blocks, under the parallel and the seeded
//! schedules; a lane that exits before a shuffle is a deadlock naming the
//! operation; lanes that call different operations or masks are an error.

use gpu_mpi_device::abi::shim::{self, WarpOp};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, Schedule, WorldSpec};

/// Results per rank in the output of [`WARP_OPS`].
const K: usize = 12;

gpu_mpi_device::kernel! {
    /// Each rank runs every warp collective with its warp's mask and writes
    /// the results to `out[rank * K ..]`.
    pub static WARP_OPS = fn warp_ops(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        let r = world.rank() as usize;
        let c = shim::coordinates();
        let lane = c.thread % 32;
        let m = shim::warp_mask();
        let n = m.count_ones();
        let v = r as u32 + 1;
        let mut res = [0u32; K];
        // 0: warp sum by shfl_xor (a butterfly; exact on full warps only).
        let mut s = v;
        for off in [16, 8, 4, 2, 1] {
            s = s.wrapping_add(shim::shfl_xor_sync(m, s, off));
        }
        res[0] = if n == 32 { s } else { 0 };
        // 1: warp sum by shfl_down at lane 0 (valid on partial warps).
        let mut d = v;
        for off in [16, 8, 4, 2, 1] {
            let o = shim::shfl_down_sync(m, d, off);
            if lane + off < n {
                d += o;
            }
        }
        res[1] = if lane == 0 { d } else { 0 };
        // 2: inclusive prefix sum by shfl_up.
        let mut p = v;
        for off in [1, 2, 4, 8, 16] {
            let o = shim::shfl_up_sync(m, p, off);
            if lane >= off {
                p += o;
            }
        }
        res[2] = p;
        // 3: ballot of lane parity.
        res[3] = shim::vote_ballot_sync(m, lane % 2 == 1);
        // 4: match_any of lane / 3.
        res[4] = shim::match_any_sync(m, lane / 3);
        // 5: broadcast from lane 0 and rotation by one lane.
        res[5] = shim::shfl_sync(m, v, 0);
        res[6] = shim::shfl_sync(m, v, (lane + 1) % n);
        // 7: votes, packed: all(v > 0), any(last lane), any(false), all(lane even).
        res[7] = u32::from(shim::vote_all_sync(m, v > 0))
            | u32::from(shim::vote_any_sync(m, lane == n - 1)) << 1
            | u32::from(shim::vote_any_sync(m, false)) << 2
            | u32::from(shim::vote_all_sync(m, lane.is_multiple_of(2))) << 3;
        // 8, 9: a 64-bit broadcast from the last lane (both halves).
        let w = shim::shfl_sync_u64(m, (u64::from(v) << 33) | u64::from(lane), n - 1);
        res[8] = w as u32;
        res[9] = (w >> 32) as u32;
        // 10: block sum through the block's shared scratch.
        shim::warp_sync(m);
        let sh = shim::shared_block::<1024>() as *mut u32;
        // SAFETY: the scratch holds 256 u32 and blocks here have at most 64
        // ranks; each rank writes its own element before the barrier.
        unsafe { sh.add(c.thread as usize).write(v) };
        shim::block_barrier();
        let mut b = 0;
        for t in 0..c.block_dim as usize {
            // SAFETY: inside the scratch; written by rank t of this block
            // before the barrier above, not written again until the next.
            b += unsafe { sh.add(t).read() };
        }
        shim::block_barrier();
        res[10] = b;
        // 11: active mask and the emulator's SM id (its worker, 0 or 1).
        res[11] = u32::from(shim::active_mask() == m) | u32::from(shim::sm_id() < 2) << 1;
        for (k, x) in res.iter().enumerate() {
            out.write(r * K + k, *x)?;
        }
        Ok(())
    }
}

/// What [`WARP_OPS`] must write for `ranks` ranks in blocks of `block`.
fn expected(ranks: usize, block: usize) -> Vec<u32> {
    let mut e = vec![0u32; ranks * K];
    for r in 0..ranks {
        let (b, t) = (r / block, r % block);
        let lane = t % 32;
        let first = b * block + t - lane;
        let n = (block - (t - lane)).min(32);
        let m: u32 = if n == 32 { u32::MAX } else { (1 << n) - 1 };
        let val = |l: usize| (first + l) as u32 + 1;
        let sum: u32 = (0..n).map(val).sum();
        let x = &mut e[r * K..r * K + K];
        x[0] = if n == 32 { sum } else { 0 };
        x[1] = if lane == 0 { sum } else { 0 };
        x[2] = (0..=lane).map(val).sum();
        x[3] = m & 0xAAAA_AAAA;
        x[4] = (0..n).filter(|l| l / 3 == lane / 3).fold(0, |a, l| a | 1 << l);
        x[5] = val(0);
        x[6] = val((lane + 1) % n);
        x[7] = 0b01 | 0b10 | if n == 1 { 0b1000 } else { 0 };
        let w = (u64::from(val(n - 1)) << 33) | (n as u64 - 1);
        x[8] = w as u32;
        x[9] = (w >> 32) as u32;
        x[10] = (b * block..(b * block + block).min(ranks))
            .map(|q| q as u32 + 1)
            .sum();
        x[11] = 0b11;
    }
    e
}

fn cpu(workers: usize, schedule: Schedule) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        schedule,
        ..CpuOptions::default()
    })
}

#[test]
fn warp_collectives_give_exact_values_on_full_and_partial_warps() {
    let schedules = [
        Schedule::Parallel,
        Schedule::Random { seed: 7 },
        Schedule::Pct {
            seed: 3,
            depth: 3,
            steps: None,
        },
    ];
    for schedule in schedules {
        for workers in [1, 2] {
            for (ranks, block) in [(64, 64), (96, 48), (7, 7), (100, 50), (1, 1), (128, 32)] {
                let d = cpu(workers, schedule);
                let out = d.alloc_zeroed::<u32>(ranks * K).unwrap();
                d.launch(
                    &WARP_OPS,
                    &out.slice(),
                    &WorldSpec::ranks(ranks as u32).block_dim(block as u32),
                )
                .unwrap_or_else(|e| panic!("{ranks}/{block} {schedule:?}: {e}"));
                let got = d.download(&out).unwrap();
                let want = expected(ranks, block);
                for r in 0..ranks {
                    assert_eq!(
                        got[r * K..r * K + K],
                        want[r * K..r * K + K],
                        "rank {r} of {ranks} in blocks of {block}, {schedule:?}, {workers} workers"
                    );
                }
            }
        }
    }
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
