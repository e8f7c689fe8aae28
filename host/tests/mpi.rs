//! The deadlock reports of programs that cannot finish, exact and with a
//! wait bound: emulator only, because only the emulator sees every rank
//! blocked and reports at once (a GPU ends a deadlock by its wait bound, and
//! which ranks time out rather than give up depends on its timing); the
//! programs that finish run on every backend in check/tests/world.rs. One
//! exception, which finishes only if the library is right and deadlocks
//! otherwise: a received slot handed back before a collective, under
//! several schedules.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::abi::polling::Call;
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, Schedule, WorldSpec};
use std::time::Duration;

fn cpu(workers: usize) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        ..CpuOptions::default()
    })
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SumArgs {
    result: GlobalSlice<f64>,
}

fn part(rank: i32) -> f64 {
    1.0 / (1.0 + rank as f64)
}

gpu_mpi_device::kernel! {
    /// Rank 0 receives from rank 1 with tag 7, which rank 1 never sends.
    pub static UNMATCHED = fn unmatched(world: &World, _a: &u32) -> Result<(), Error> {
        if world.rank() == 0 {
            let mut x = 0u32;
            world.process_at_rank(1).receive_into_with_tag(&mut x, 7)?;
        }
        Ok(())
    }
}

#[test]
fn an_unmatched_receive_is_reported_with_rank_operation_peer_and_tag() {
    for workers in [1, 2] {
        let e = cpu(workers)
            .launch(&UNMATCHED, &0, &WorldSpec::ranks(64).block_dim(16))
            .unwrap_err();
        let HostError::Deadlock(rep) = &e else {
            panic!("{e}")
        };
        assert_eq!(
            rep.state_of(0),
            Some(BlockedState::Waiting {
                operation: Call::Receive as u32,
                peer: 1,
                tag: 7
            })
        );
        assert!((1..64).all(|r| rep.state_of(r) == Some(BlockedState::Exited)));
        assert_eq!(
            e.to_string(),
            "deadlock: rank 0: receive(source 1, tag 7); ranks 1-63: exited\n\
             waiting receives: rank 0: receive(source 1, tag 7)\n\
             hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)"
        );
    }
}

gpu_mpi_device::kernel! {
    /// Ranks 0 and 3 each receive from the other before sending.
    pub static CROSSED = fn crossed(world: &World, _a: &u32) -> Result<(), Error> {
        let peer = match world.rank() {
            0 => 3,
            3 => 0,
            _ => return Ok(()),
        };
        let (_x, _) = world.process_at_rank(peer).receive::<u32>()?;
        world.process_at_rank(peer).send_with_tag(&1u32, 5)
    }
}

#[test]
fn two_ranks_receiving_from_each_other_are_both_named() {
    let e = cpu(2)
        .launch(&CROSSED, &0, &WorldSpec::ranks(4).block_dim(2))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "deadlock: rank 0: receive(source 3, tag any); rank 3: receive(source 0, tag any); \
         ranks 1-2: exited\n\
         waiting receives: rank 0: receive(source 3, tag any); rank 3: receive(source 0, tag any)"
    );
}

gpu_mpi_device::kernel! {
    /// Rank 2 returns at once; the others meet at the barrier.
    pub static SKIP_BARRIER = fn skip_barrier(world: &World, _a: &u32) -> Result<(), Error> {
        if world.rank() == 2 {
            return Ok(());
        }
        world.barrier()
    }
}

#[test]
fn a_rank_that_exits_while_others_wait_in_a_barrier_shows_as_exited() {
    for workers in [1, 2] {
        for (ranks, block) in [(8, 8), (64, 16)] {
            let e = cpu(workers)
                .launch(&SKIP_BARRIER, &0, &WorldSpec::ranks(ranks).block_dim(block))
                .unwrap_err();
            let HostError::Deadlock(rep) = &e else {
                panic!("{e}")
            };
            assert_eq!(rep.state_of(2), Some(BlockedState::Exited));
            for r in (0..ranks).filter(|&r| r != 2) {
                assert_eq!(
                    rep.state_of(r).unwrap().operation(),
                    Some(Call::Barrier),
                    "rank {r}"
                );
            }
            assert_eq!(
                e.to_string(),
                format!(
                    "deadlock: ranks 0-1: barrier; ranks 3-{last}: barrier; rank 2: exited\n\
                     hint: rank 2 exited while ranks 0-1, 3-{last} wait in barrier: \
                     every rank must call the same collectives",
                    last = ranks - 1
                )
            );
        }
    }
}

#[test]
fn with_a_timeout_the_device_reports_the_timed_out_wait() {
    for workers in [1, 2] {
        let spec = WorldSpec::ranks(64)
            .block_dim(16)
            .timeout(Duration::from_millis(30));
        let e = cpu(workers).launch(&UNMATCHED, &0, &spec).unwrap_err();
        assert_eq!(
            e.to_string(),
            "deadlock: rank 0: timed out in receive(source 1, tag 7); ranks 1-63: exited\n\
             waiting receives: rank 0: timed out in receive(source 1, tag 7)\n\
             hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)"
        );
        let spec = WorldSpec::ranks(4)
            .block_dim(2)
            .timeout(Duration::from_millis(30));
        let e = cpu(workers).launch(&CROSSED, &0, &spec).unwrap_err();
        let HostError::Deadlock(rep) = &e else {
            panic!("{e}")
        };
        let states: Vec<_> = [0, 3].map(|r| rep.state_of(r).unwrap()).to_vec();
        let timed_out = states
            .iter()
            .filter(|s| matches!(s, BlockedState::TimedOut { .. }))
            .count();
        let gave_up = states
            .iter()
            .filter(|s| matches!(s, BlockedState::Aborted { .. }))
            .count();
        // Usually one times out and the other gives up; with two workers
        // both may time out at the same moment.
        assert!(timed_out >= 1 && timed_out + gave_up == 2, "{e}");
        assert!(states.iter().all(|s| s.operation() == Some(Call::Receive)), "{e}");
    }
}

#[test]
fn with_a_timeout_a_barrier_missing_a_block_mate_fails_on_every_rank() {
    // One block: rank 2 returned, so the block barrier inside `barrier`
    // completes without it (as PTX `exit` releases it) and counts one rank
    // short; the block never arrives and its ranks wait, bounded, until one
    // times out and the others give up.
    for workers in [1, 2] {
        let spec = WorldSpec::ranks(8)
            .block_dim(8)
            .timeout(Duration::from_millis(20));
        let e = cpu(workers).launch(&SKIP_BARRIER, &0, &spec).unwrap_err();
        let HostError::Deadlock(rep) = &e else {
            panic!("{e}")
        };
        assert_eq!(rep.state_of(2), Some(BlockedState::Exited));
        let ended: Vec<_> = (0..8)
            .filter(|&r| r != 2)
            .map(|r| match rep.state_of(r).unwrap() {
                BlockedState::TimedOut { operation, .. } if operation == Call::Barrier as u32 => true,
                BlockedState::Aborted { operation, .. } if operation == Call::Barrier as u32 => false,
                other => panic!("rank {r}: {other}\n{e}"),
            })
            .collect();
        assert!(ended.contains(&true), "{e}");
        assert!(
            e.to_string().ends_with(
                "rank 2: exited\n\
                 hint: rank 2 exited while ranks 0-1, 3-7 wait in barrier: every rank must call the same collectives"
            ),
            "{e}"
        );
    }
}

gpu_mpi_device::kernel! {
    /// World rank 5 calls a barrier where every other rank all-reduces (an
    /// erroneous program: MPI 6.1).
    pub static BARRIER_AGAINST_ALL_REDUCE = fn barrier_against_all_reduce(world: &World, a: &SumArgs) -> Result<(), Error> {
        if world.rank() == 5 {
            world.barrier()?;
        } else {
            let mut sum = 0.0f64;
            world.all_reduce_into(&part(world.rank()), &mut sum, SystemOperation::sum())?;
            a.result.write(world.rank() as usize, sum)?;
        }
        Ok(())
    }
}

/// A rank in another world collective than the rest of its warp: the
/// all-reduce's lanes wait in the warp shuffles of the block phase for a
/// lane that waits at a block barrier elsewhere. The emulator reports the
/// deadlock (on a GPU nothing reports it: docs/limits.md).
#[test]
fn a_rank_in_another_world_collective_gives_a_deadlock_report() {
    for workers in [1, 2] {
        let d = cpu(workers);
        let out = d.alloc_zeroed::<f64>(64).unwrap();
        let args = SumArgs { result: out.slice() };
        let e = d
            .launch(
                &BARRIER_AGAINST_ALL_REDUCE,
                &args,
                &WorldSpec::ranks(64).block_dim(64),
            )
            .unwrap_err();
        let HostError::Deadlock(rep) = &e else {
            panic!("{workers} workers: expected a deadlock report, got {e}");
        };
        for r in 0..64 {
            let operation = if r == 5 { Call::Barrier } else { Call::AllReduce };
            assert_eq!(
                rep.state_of(r),
                Some(BlockedState::Waiting {
                    operation: operation as u32,
                    peer: -2,
                    tag: -1
                }),
                "{workers} workers, rank {r}: {rep}"
            );
        }
    }
}

gpu_mpi_device::kernel! {
    /// After a barrier, three rounds: rank 1 sends rank 0 a synchronous
    /// message, which completes only once rank 0 hands its slot back, and
    /// rank 0 receives it and goes straight into a collective (a barrier,
    /// an all-reduce, a broadcast) that rank 1 joins only after its send
    /// completed. Rank 0 must return the slot before the collective's
    /// block barrier, although its last collective left it with nothing
    /// to return. Each rank writes the sum of its all-reduces.
    pub static RETURN_BEFORE_COLLECTIVE = fn return_before_collective(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let me = world.rank();
        world.barrier()?;
        let mut total = 0u64;
        for round in 0..3u64 {
            if me == 1 {
                world.process_at_rank(0).synchronous_send_with_tag(&round, 5)?;
            } else if me == 0 {
                let mut x = u64::MAX;
                world.process_at_rank(1).receive_into_with_tag(&mut x, 5)?;
                if x != round {
                    return Err(Error::OutOfBounds { index: x as u32, len: round as u32 });
                }
            }
            match round {
                0 => world.barrier()?,
                1 => {
                    let mut sum = 0u64;
                    world.all_reduce_into(&(me as u64), &mut sum, SystemOperation::sum())?;
                    total += sum;
                }
                _ => {
                    let mut b = if me == 0 { 7u64 } else { 0 };
                    world.process_at_rank(0).broadcast_into(&mut b)?;
                    total += b;
                }
            }
        }
        out.write(me as usize, total)
    }
}

#[test]
fn a_received_slot_goes_back_before_the_next_collective() {
    let n = 64u64;
    let expected = n * (n - 1) / 2 + 7;
    for (workers, schedule) in [
        (1, None),
        (2, None),
        (1, Some(Schedule::Random { seed: 11 })),
        (1, Some(Schedule::Random { seed: 12 })),
    ] {
        let d = cpu(workers);
        let out = d.alloc_zeroed::<u64>(n as usize).unwrap();
        let mut spec = WorldSpec::ranks(n as u32).block_dim(32);
        if let Some(s) = schedule {
            spec = spec.schedule(s);
        }
        d.launch(&RETURN_BEFORE_COLLECTIVE, &out.slice(), &spec)
            .unwrap_or_else(|e| panic!("{workers} workers, {schedule:?}: {e}"));
        assert_eq!(d.download(&out).unwrap(), vec![expected; n as usize]);
    }
}
