//! Non-blocking collectives of the world (MPI 4.1 §6.12) on each backend
//! (`testgen!`: the emulator always, the GPU where one is present; the
//! deadlock and livelock reports on the emulator alone): the `IC_*` cases of `gpu_mpi_check_kernels::immediate` for every root,
//! one block, several blocks, blocks of one rank, and seeded schedules;
//! argument errors on every rank; the outstanding bound; a rank that never
//! starts the collective (deadlock, livelock, timeout).

use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::collective::immediate::Kind;
use gpu_mpi::device::{Error, ErrorClass};
use gpu_mpi::{BlockedState, CpuOptions, Device, HostError, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::{Backend, TestDevice};
use gpu_mpi_check_kernels::collectives::user_operand;
use gpu_mpi_check_kernels::immediate::*;
use gpu_mpi_check_kernels::p2p::Mat2;
use gpu_mpi_check_kernels::{CaseArgs, NONE};
use std::time::Duration;

const SHAPES: [(u32, u32); 6] = [(1, 1), (5, 5), (6, 3), (8, 2), (12, 4), (7, 1)];
const SCHEDULES: [Schedule; 3] = [
    Schedule::Parallel,
    Schedule::Random { seed: 3 },
    Schedule::Random { seed: 11 },
];

fn device(backend: Backend, schedule: Schedule) -> TestDevice {
    backend.device_with(CpuOptions {
        workers: 2,
        schedule,
        ..CpuOptions::default()
    })
}

/// Launches case `case` and returns every rank's record, or the launch error.
/// A launch's outcome and every rank's record.
type Launched = (Result<(), HostError>, Vec<Vec<u32>>);

/// Launches case `case` and reads every rank's record, also when the
/// launch failed.
fn launch_with_records(
    d: &Device,
    spec: &WorldSpec,
    ranks: u32,
    case: u32,
    param: u32,
) -> Result<Launched, HostError> {
    let stride = IC_STRIDE as usize;
    let out = d.alloc_zeroed::<u32>(ranks as usize * stride)?;
    let data = d.alloc_zeroed::<u8>(8)?;
    let cells = d.alloc_zeroed::<u32>(8)?;
    let args = CaseArgs {
        case,
        param,
        param2: 0,
        stride: IC_STRIDE,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let launched = d.launch(&SEMANTICS_IMMEDIATE, &args, spec);
    let records = d.download(&out)?.chunks(stride).map(|c| c.to_vec()).collect();
    Ok((launched.map(|_| ()), records))
}

fn launch(
    d: &Device,
    spec: &WorldSpec,
    ranks: u32,
    case: u32,
    param: u32,
) -> Result<Vec<Vec<u32>>, HostError> {
    let (launched, records) = launch_with_records(d, spec, ranks, case, param)?;
    launched.map(|()| records)
}

/// A launch whose waits time out and whose ranks all record the error and
/// return `Ok`: the host reports the abort (`HostError::WorldAborted`, a
/// timeout), and the records are read all the same.
fn launch_timed_out(d: &Device, spec: &WorldSpec, ranks: u32, case: u32, param: u32) -> Vec<Vec<u32>> {
    let (launched, records) = launch_with_records(d, spec, ranks, case, param).unwrap();
    match launched {
        Err(HostError::WorldAborted { timed_out: true, .. }) => records,
        Err(e) => panic!("case {case} ({param}): expected the world aborted by a timeout, got {e}"),
        Ok(_) => panic!("case {case} ({param}): the launch succeeded; a wait should have timed out"),
    }
}

fn run(backend: Backend, schedule: Schedule, ranks: u32, block: u32, case: u32, param: u32) -> Vec<Vec<u32>> {
    let spec = WorldSpec::ranks(ranks).block_dim(block);
    launch(&device(backend, schedule), &spec, ranks, case, param)
        .unwrap_or_else(|e| panic!("case {case} ({param}) on {ranks}/{block} {schedule:?}: {e}"))
}

fn mat_words(m: &Mat2) -> [u32; 4] {
    [m.a, m.b, m.c, m.d]
}

/// What rank `r` of `n` records in `IC_VALUES` with root `root`.
fn values_want(n: u32, root: u32, r: u32) -> Vec<u32> {
    let mut w = vec![0];
    w.extend((0..4).map(|i| 100 * root + i));
    w.extend([n * (n + 1) / 2, 3 * n * (n - 1) / 2]);
    w.extend([0, 0]);
    if r == root {
        let s1: u64 = (0..n as u64).sum();
        let s2: u64 = (0..n as u64).map(|x| x * x).sum();
        w.extend([s1 as u32, (s1 >> 32) as u32, s2 as u32, (s2 >> 32) as u32]);
    } else {
        w.extend([NONE, 0, NONE, 0]);
    }
    w.extend([0, 0, 7]);
    for i in 0..2 {
        let m = (1..n).fold(user_operand(0, i), |acc, q| acc.mul(&user_operand(q, i)));
        w.extend(mat_words(&m));
    }
    w.extend([0, 0]);
    if r == root {
        w.extend([n * (n - 1) / 2, n]);
    } else {
        w.extend([r, 1]);
    }
    w.extend([0, 10 * n * (n - 1) / 2 + 45 * n]);
    w
}

fn check(got: &[Vec<u32>], want: impl Fn(u32) -> Vec<u32>, what: &str) {
    for (r, rec) in got.iter().enumerate() {
        let want = want(r as u32);
        assert_eq!(&rec[..want.len()], &want[..], "{what}: rank {r}");
    }
}

fn values_for_every_root_with_non_commutative_in_place_and_zero_length(backend: Backend) {
    for (n, b) in SHAPES {
        for root in 0..n {
            let s = SCHEDULES[(root as usize) % SCHEDULES.len()];
            let got = run(backend, s, n, b, IC_VALUES, root);
            check(
                &got,
                |r| values_want(n, root, r),
                &format!("{n}/{b} root {root} {s:?}"),
            );
        }
    }
}
testgen!(values_for_every_root_with_non_commutative_in_place_and_zero_length);

/// The world's arrival tree with partial nodes: 40 ranks (two levels:
/// nodes of 32 and 8 ranks under the top), 1100 (three levels: 35 nodes,
/// 2, the top) in blocks that do not line up with the nodes; and with a
/// level of one node per block (`layout::immediate_block_level`): one
/// block of 128 (4 level-0 nodes under the block's node, the top, in the
/// block's shared memory), 17 blocks of 64 (34 level-0 nodes, 17 block
/// nodes of 2, a top of 17 in global memory); and 4 blocks of 256, where
/// the reductions of small words climb through the blocks' nodes
/// (`layout::immediate_fold_block_level`) and the barrier and the others
/// straight from the 32 level-0 nodes to the top, in the same slots.
fn values_over_arrival_trees_of_two_and_three_levels(backend: Backend) {
    for (n, b) in [(40u32, 8u32), (1100, 100), (128, 128), (1088, 64), (1024, 256)] {
        for (k, root) in [0, 33, n - 1].into_iter().enumerate() {
            let s = SCHEDULES[k];
            let got = run(backend, s, n, b, IC_VALUES, root);
            check(
                &got,
                |r| values_want(n, root, r),
                &format!("{n}/{b} root {root} {s:?}"),
            );
        }
    }
}
testgen!(values_over_arrival_trees_of_two_and_three_levels);

fn collectives_overlap_point_to_point_in_one_wait_all(backend: Backend) {
    for (n, b) in SHAPES {
        for s in SCHEDULES {
            let root = n / 2;
            let got = run(backend, s, n, b, IC_OVERLAP, root);
            check(
                &got,
                |r| {
                    let left = (r + n - 1) % n;
                    vec![10 * left, 20 * left, 0, left, 2, 2, n * (n - 1) / 2, 1000 + root]
                },
                &format!("{n}/{b} {s:?}"),
            );
        }
    }
}
testgen!(collectives_overlap_point_to_point_in_one_wait_all);

fn test_polls_until_the_last_rank_starts(backend: Backend) {
    for (n, b) in SHAPES {
        for s in SCHEDULES {
            let got = run(backend, s, n, b, IC_TEST_POLL, 0);
            check(&got, |_| vec![0, 0, n * (n + 1) / 2], &format!("{n}/{b} {s:?}"));
        }
    }
}
testgen!(test_polls_until_the_last_rank_starts);

fn argument_errors_reach_every_rank_and_the_next_collective_works(backend: Backend) {
    let class = |c: ErrorClass| c as u32;
    // 40 and 70 ranks: the world's arrival tree has two levels, and the
    // disagreeing rank's verdict climbs from a level-0 node to the top.
    for (n, b) in [(5u32, 5u32), (6, 3), (8, 2), (7, 1), (40, 8), (70, 35)] {
        for kind in 0..7 {
            let s = SCHEDULES[kind as usize % SCHEDULES.len()];
            let got = run(backend, s, n, b, IC_ERRORS, kind);
            let bad = match kind {
                0 => class(ErrorClass::Count),
                1 | 2 | 6 => class(ErrorClass::Root),
                3 => class(ErrorClass::Buffer),
                _ => class(ErrorClass::Count),
            };
            check(
                &got,
                |_| vec![bad, 0, n],
                &format!("kind {kind} on {n}/{b} {s:?}"),
            );
            // The failed collective's slot again, completed by tests: clean.
            for (r, rec) in got.iter().enumerate() {
                assert_eq!(
                    &rec[8..10],
                    &[0, 2 * n],
                    "kind {kind} on {n}/{b} {s:?}: rank {r}, the slot again"
                );
            }
            if kind == 4 {
                // Rank 0 started a barrier, the others an all-reduce: each
                // names its own and the other.
                let (barrier, all_reduce) = (Kind::Barrier as u32, Kind::AllReduce as u32);
                for (r, rec) in got.iter().enumerate() {
                    let (mine, other) = if r == 0 {
                        (barrier, all_reduce)
                    } else {
                        (all_reduce, barrier)
                    };
                    let want = Error::CollectiveMismatch { kind: mine, other };
                    assert_eq!(
                        Error::from_words(rec[3..8].try_into().unwrap()),
                        Some(want),
                        "rank {r} on {n}/{b}"
                    );
                }
            }
        }
    }
}
testgen!(argument_errors_reach_every_rank_and_the_next_collective_works);

fn a_third_outstanding_collective_is_err_request_and_the_slots_recover(backend: Backend) {
    for (n, b) in SHAPES {
        let got = run(backend, Schedule::Parallel, n, b, IC_LIMIT, 0);
        check(
            &got,
            |_| vec![ErrorClass::Request as u32, 0, 0, n * (n - 1) / 2, n, 0, 3 * n],
            &format!("{n}/{b}"),
        );
    }
}
testgen!(a_third_outstanding_collective_is_err_request_and_the_slots_recover);

fn deadlock(e: Result<Vec<Vec<u32>>, HostError>) -> (Vec<BlockedState>, String) {
    match e {
        Err(HostError::Deadlock(report)) => {
            let text = report.to_string();
            (report.ranks.into_iter().map(|r| r.state).collect(), text)
        }
        Err(other) => panic!("expected a deadlock, got {other}"),
        Ok(_) => panic!("expected a deadlock, the launch succeeded"),
    }
}

/// Every state of `states` waits in a non-blocking all-reduce.
fn waiting_in_all_reduce(states: &[BlockedState], text: &str) {
    for s in states {
        let want = BlockedState::Waiting {
            operation: Call::AllReduce as u32,
            peer: -2,
            tag: -1,
        };
        assert_eq!(*s, want, "{text}");
    }
}

#[test]
fn a_rank_that_never_starts_is_a_deadlock_a_livelock_or_a_timeout() {
    // Exact deadlock and livelock detection is the emulator's.
    let d = Device::cpu();
    let spec = WorldSpec::ranks(4).block_dim(2);
    let (states, text) = deadlock(launch(&d, &spec, 4, IC_NEVER_ENTERS, 0));
    assert!(text.starts_with("deadlock: "), "{text}");
    assert!(text.contains("all_reduce"), "{text}");
    assert_eq!(states[0], BlockedState::Exited, "{text}");
    waiting_in_all_reduce(&states[1..], &text);

    let (states, text) = deadlock(launch(&d, &spec, 4, IC_NEVER_ENTERS, 1));
    assert!(text.starts_with("livelock: "), "{text}");
    assert!(text.contains("test of immediate_all_reduce"), "{text}");
    assert_eq!(
        states[1],
        BlockedState::Waiting {
            operation: Call::TestCollective as u32,
            peer: -2,
            tag: 4
        },
        "{text}"
    );

    // The same on the two communicators of a split by parity: world
    // ranks 0 and 1 (their rank 0) never start.
    let on = spec.immediate_on_communicators(true);
    let (states, text) = deadlock(launch(&d, &on, 4, IC_NEVER_ENTERS, 2));
    assert!(text.starts_with("deadlock: "), "{text}");
    assert_eq!(
        &states[..2],
        &[BlockedState::Exited, BlockedState::Exited],
        "{text}"
    );
    waiting_in_all_reduce(&states[2..], &text);

    // With a timeout the waiting ranks' waits end with an error, which
    // the kernel records (it returns normally); the launch reports the
    // abort.
    let spec = spec.timeout(Duration::from_millis(200));
    let got = launch_timed_out(&d, &spec, 4, IC_NEVER_ENTERS, 0);
    let (timeout, aborted) = (ErrorClass::Timeout as u32, ErrorClass::Aborted as u32);
    for (r, rec) in got.iter().enumerate().skip(1) {
        assert!(
            rec[0] == timeout || rec[0] == aborted,
            "rank {r}: class {}",
            rec[0]
        );
    }
    assert!(got[1..].iter().any(|rec| rec[0] == timeout));
}

// Emulator only: exact deadlock reports (as in the test above).

/// The same for the other three non-blocking collectives: rank 0 never
/// starts a barrier, a broadcast or a reduce (roots: rank 1) that the
/// others wait for: a deadlock report naming rank 0 as exited and every
/// other rank waiting in it; with a wait bound every other rank fails.
#[test]
fn a_rank_that_never_starts_a_barrier_broadcast_or_reduce_fails_the_others() {
    let d = Device::cpu();
    let spec = WorldSpec::ranks(4).block_dim(2);
    let (timeout, aborted) = (ErrorClass::Timeout as u32, ErrorClass::Aborted as u32);
    for (op, name) in [(0, "barrier"), (1, "broadcast"), (2, "reduce")] {
        let (states, text) = deadlock(launch(&d, &spec, 4, IC_NEVER_ENTERS_OP, op));
        assert!(text.starts_with("deadlock: "), "{name}: {text}");
        assert!(text.contains(name), "{name}: {text}");
        assert_eq!(states[0], BlockedState::Exited, "{name}: {text}");
        assert!(
            states[1..]
                .iter()
                .all(|s| matches!(s, BlockedState::Waiting { .. })),
            "{name}: {text}"
        );
        let bounded = spec.timeout(Duration::from_millis(200));
        let got = launch_timed_out(&d, &bounded, 4, IC_NEVER_ENTERS_OP, op);
        for (r, rec) in got.iter().enumerate().skip(1) {
            assert!(
                rec[0] == timeout || rec[0] == aborted,
                "{name}: rank {r}: class {}",
                rec[0]
            );
        }
        assert!(got[1..].iter().any(|rec| rec[0] == timeout), "{name}");
    }
}

fn a_sub_communicator_of_a_world_without_their_state_gives_err_comm_naming_its_context(backend: Backend) {
    for (n, b) in [(5u32, 5u32), (6, 3), (7, 1)] {
        let got = run(backend, Schedule::Parallel, n, b, IC_SUB_COMM, 0);
        for (r, rec) in got.iter().enumerate() {
            // The first split of the launch takes context 1.
            let want = Error::ImmediateOnSubCommunicator { context: 1 };
            for at in [0, 5] {
                let e = Error::from_words(rec[at..at + 5].try_into().unwrap());
                assert_eq!(e, Some(want), "rank {r} on {n}/{b}");
            }
            assert_eq!(&rec[10..12], &[0, n], "rank {r} on {n}/{b}");
        }
    }
}
testgen!(a_sub_communicator_of_a_world_without_their_state_gives_err_comm_naming_its_context);

/// What rank `r` of `n` (blocks of `b`) records in `IC_SUB_COMM` with
/// `param` on a world with the communicators' state: the model of the
/// split by `r % 3` with reversed keys.
fn sub_comm_want(n: u32, b: u32, param: u32, r: u32) -> Vec<u32> {
    let members: Vec<u32> = (0..n).rev().filter(|q| q % 3 == r % 3).collect();
    let m = members.len() as u32;
    let me = members.iter().position(|&q| q == r).unwrap() as u32;
    let root = param % m;
    let mut w = vec![0];
    w.extend((0..4).map(|i| 100 * root + i));
    for i in 0..2 {
        let p = members[1..].iter().fold(user_operand(members[0], i), |acc, &q| {
            acc.mul(&user_operand(q, i))
        });
        w.extend(mat_words(&p));
    }
    w.extend([0, 0, 0, 0]);
    let block = r / b * b..(r / b + 1) * b;
    w.extend([n * (n - 1) / 2, block.sum()]);
    w.extend([ErrorClass::Request as u32, 0, 0, 0]);
    if me == root {
        w.extend([members.iter().sum(), m]);
    } else {
        w.extend([NONE, NONE]);
    }
    w.push(n);
    // A communicator of one rank has nobody to disagree with.
    let count = if m > 1 { ErrorClass::Count as u32 } else { 0 };
    w.extend([count, 0, m, m, me]);
    w
}

fn sub_communicators_broadcast_reduce_in_member_order_and_keep_their_own_slots(backend: Backend) {
    for (n, b) in SHAPES {
        for param in 0..3 {
            let s = SCHEDULES[param as usize];
            let spec = WorldSpec::ranks(n).block_dim(b).immediate_on_communicators(true);
            let what = format!("{n}/{b} root param {param} {s:?}");
            let got = launch(&device(backend, s), &spec, n, IC_SUB_COMM, param)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&got, |r| sub_comm_want(n, b, param, r), &what);
        }
    }
}
testgen!(sub_communicators_broadcast_reduce_in_member_order_and_keep_their_own_slots);

fn every_predefined_operation_folds_through_small_words_and_cells(backend: Backend) {
    // 40 ranks: a level-0 node of 32 children (two batches of small
    // words) and one of 8; 70: a top of three nodes.
    for (n, b) in [(5u32, 5u32), (40, 8), (70, 35)] {
        let got = run(backend, Schedule::Parallel, n, b, IC_OPS, 0);
        let int_of = |i: u32| (0..n).map(move |r| int_operand(r, i));
        let mut want = vec![0u32];
        for op in 0..9 {
            for i in 0..3 {
                let mut v = int_of(i);
                let first = v.next().unwrap();
                let folded = v.fold(first, |a, x| match op {
                    0 => a.wrapping_add(x),
                    1 => a.wrapping_mul(x),
                    2 => a.min(x),
                    3 => a.max(x),
                    4 => a & x,
                    5 => a | x,
                    6 => a ^ x,
                    7 => (a != 0 && x != 0) as i32,
                    _ => (a != 0 || x != 0) as i32,
                });
                want.push(folded as u32);
            }
        }
        for op in 0..4 {
            for i in 0..2 {
                let mut v = (0..n).map(|r| float_operand(r, i));
                let first = v.next().unwrap();
                let folded = v.fold(first, |a, x| match op {
                    0 => a + x,
                    1 => a * x,
                    2 => a.min(x),
                    _ => a.max(x),
                });
                want.extend([folded.to_bits() as u32, (folded.to_bits() >> 32) as u32]);
            }
        }
        check(&got, |_| want.clone(), &format!("{n}/{b}"));
    }
}
testgen!(every_predefined_operation_folds_through_small_words_and_cells);
