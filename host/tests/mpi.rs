//! The cpu backend running the device library's MPI calls: results, and the
//! deadlock reports of programs that cannot finish.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::abi::polling::Call;
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, WorldSpec};
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
    /// Every rank sends its part to rank 0, which adds them in rank order.
    pub static GATHER_SUM = fn gather_sum(world: &World, a: &SumArgs) -> Result<(), Error> {
        if world.rank() != 0 {
            return world.process_at_rank(0).send(&part(world.rank()));
        }
        let mut sum = part(0);
        for source in 1..world.size() {
            let (v, status) = world.process_at_rank(source).receive::<f64>()?;
            assert_eq!(status.source_rank(), source);
            sum += v;
        }
        a.result.write(0, sum)
    }
}

gpu_mpi_device::kernel! {
    /// The parts are all-reduced; every rank writes the sum it got.
    pub static ALL_REDUCE_SUM = fn all_reduce_sum(world: &World, a: &SumArgs) -> Result<(), Error> {
        let mut sum = 0.0f64;
        world.all_reduce_into(&part(world.rank()), &mut sum, SystemOperation::sum())?;
        a.result.write(world.rank() as usize, sum)
    }
}

#[test]
fn point_to_point_and_collectives_give_the_right_sums() {
    for workers in [1, 2] {
        let d = cpu(workers);
        let n = 4096;
        let want: f64 = (0..n).map(part).sum();
        let out = d.alloc_zeroed::<f64>(n as usize).unwrap();
        let args = SumArgs { result: out.slice() };
        d.launch(&GATHER_SUM, &args, &WorldSpec::ranks(n as u32)).unwrap();
        assert_eq!(d.download(&out).unwrap()[0], want);
        d.launch(&ALL_REDUCE_SUM, &args, &WorldSpec::ranks(n as u32))
            .unwrap();
        for got in d.download(&out).unwrap() {
            assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct BigArgs {
    out: GlobalSlice<u64>,
}

gpu_mpi_device::kernel! {
    /// Rank 0 sends 1000 u64 to the last rank, which writes them out.
    pub static BIG_MESSAGE = fn big_message(world: &World, a: &BigArgs) -> Result<(), Error> {
        let last = world.size() - 1;
        if world.rank() == 0 {
            let mut data = [0u64; 1000];
            for (i, v) in data.iter_mut().enumerate() {
                *v = i as u64 * 3;
            }
            world.process_at_rank(last).send_with_tag(&data[..], 9)?;
        } else if world.rank() == last {
            let mut data = [0u64; 1000];
            world.process_at_rank(0).receive_into_with_tag(&mut data[..], 9)?;
            for (i, v) in data.iter().enumerate() {
                a.out.write(i, *v)?;
            }
        }
        Ok(())
    }
}

fn send_big(streaming: bool) {
    let d = cpu(2);
    let out = d.alloc_zeroed::<u64>(1000).unwrap();
    let spec = WorldSpec::ranks(128).block_dim(32).force_streaming(streaming);
    d.launch(&BIG_MESSAGE, &BigArgs { out: out.slice() }, &spec)
        .unwrap();
    assert_eq!(
        d.download(&out).unwrap(),
        (0..1000).map(|i| i * 3).collect::<Vec<u64>>()
    );
}

#[test]
fn large_messages_cross_workers() {
    send_big(false);
}

#[test]
fn large_messages_cross_workers_streamed() {
    send_big(true);
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

/// A 2x2 matrix of wrapping `u32` (row-major `[a b; c d]`): its product is
/// associative and not commutative, so a result shows the order operands
/// were combined in.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
struct M2([u32; 4]);
gpu_mpi_device::user_datatype!(M2);

impl M2 {
    fn mul(&self, r: &M2) -> M2 {
        let (a, b) = (self.0, r.0);
        let m = |x: u32, y: u32, z: u32, w: u32| x.wrapping_mul(y).wrapping_add(z.wrapping_mul(w));
        M2([
            m(a[0], b[0], a[1], b[2]),
            m(a[0], b[1], a[1], b[3]),
            m(a[2], b[0], a[3], b[2]),
            m(a[2], b[1], a[3], b[3]),
        ])
    }

    /// Element `i` of rank `r`'s operand.
    fn of(r: u32, i: u32) -> M2 {
        M2([1, r.wrapping_mul(7).wrapping_add(i), (r ^ i) & 3, 1])
    }
}

/// Elements per rank of [`MATRIX_REDUCTIONS`].
const MATRICES: usize = 40;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MatrixArgs {
    /// The reduce's root.
    root: i32,
    reserved: u32,
    /// Per rank: its all-reduce result, then (the root only) its reduce
    /// result, `MATRICES` matrices each.
    out: GlobalSlice<M2>,
}

gpu_mpi_device::kernel! {
    /// Every rank all-reduces `MATRICES` matrices by the product (several
    /// rounds of `collective_bytes`), then reduces them to `root`.
    pub static MATRIX_REDUCTIONS = fn matrix_reductions(world: &World, a: &MatrixArgs) -> Result<(), Error> {
        let me = world.rank() as u32;
        let mut send = [M2::default(); MATRICES];
        for (i, m) in send.iter_mut().enumerate() {
            *m = M2::of(me, i as u32);
        }
        let op = gpu_mpi_device::collective::UserOperation::associative(|l: &M2, r: &M2| l.mul(r));
        let mut all = [M2::default(); MATRICES];
        world.all_reduce_into(&send[..], &mut all[..], op)?;
        let base = 2 * MATRICES * me as usize;
        for (i, m) in all.iter().enumerate() {
            a.out.write(base + i, *m)?;
        }
        let root = world.process_at_rank(a.root);
        if world.rank() == a.root {
            let mut at_root = [M2::default(); MATRICES];
            root.reduce_into_root(&send[..], &mut at_root[..], op)?;
            for (i, m) in at_root.iter().enumerate() {
                a.out.write(base + MATRICES + i, *m)?;
            }
        } else {
            root.reduce_into(&send[..], op)?;
        }
        Ok(())
    }
}

/// World reductions of a non-commutative operation come out in rank order
/// whichever place the block phase keeps the warps' partials in: the
/// block's shared memory (small blocks) or, when `warps × elements` do not
/// fit there, the global cells of the warps' first ranks (blocks of 1024
/// threads: 32 warps × 15 matrices of 16 bytes per round); partial warps
/// (blocks of 45) and several rounds of `collective_bytes`.
#[test]
fn world_reductions_of_matrices_are_in_rank_order_in_every_block_shape() {
    let d = cpu(2);
    for (ranks, block_dim, root) in [(90u32, 45u32, 77i32), (128, 64, 3), (2048, 1024, 1500), (1, 1, 0)] {
        let out = d.alloc_zeroed::<M2>(2 * MATRICES * ranks as usize).unwrap();
        let args = MatrixArgs {
            root,
            reserved: 0,
            out: out.slice(),
        };
        d.launch(
            &MATRIX_REDUCTIONS,
            &args,
            &WorldSpec::ranks(ranks).block_dim(block_dim),
        )
        .unwrap();
        let got = d.download(&out).unwrap();
        let want: Vec<M2> = (0..MATRICES as u32)
            .map(|i| (1..ranks).fold(M2::of(0, i), |acc, r| acc.mul(&M2::of(r, i))))
            .collect();
        for r in 0..ranks as usize {
            let base = 2 * MATRICES * r;
            assert_eq!(
                got[base..base + MATRICES],
                want[..],
                "{ranks}x{block_dim}: all-reduce at rank {r}"
            );
        }
        let base = 2 * MATRICES * root as usize + MATRICES;
        assert_eq!(
            got[base..base + MATRICES],
            want[..],
            "{ranks}x{block_dim}: reduce at root {root}"
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
