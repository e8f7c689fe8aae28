//! Block and warp communicators (`split_shared`, `split_by_warp`) on each
//! backend (`testgen!`: the emulator always, the GPU where one is present;
//! the deadlock report is the emulator's alone): their collectives take the hardware paths of
//! `collective/hardware.rs` (no message on their collective context, the
//! spans still traced), with the values of the general algorithms: every
//! root, a non-commutative operation in rank order, zero lengths, payloads
//! above the block's stage (a gather, an all-reduce in a block of 1024),
//! blocks with a partial last warp; and every
//! rank fails alike on a disagreement, or the emulator reports a deadlock
//! when a rank has left.

use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::SpanKind;
use gpu_mpi::{CpuOptions, Device, HostError, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::{Backend, TestDevice};
use gpu_mpi_check_kernels::collectives::user_operand;
use gpu_mpi_check_kernels::hwcomm::*;
use gpu_mpi_check_kernels::p2p::Mat2;
use gpu_mpi_check_kernels::{CaseArgs, NONE};
use std::time::Duration;

fn device(backend: Backend, schedule: Schedule) -> TestDevice {
    backend.device_with(CpuOptions {
        workers: 2,
        schedule,
        ..CpuOptions::default()
    })
}

struct Run {
    records: Vec<Vec<u32>>,
    report: gpu_mpi::LaunchReport,
}

/// Runs case `case` on `spec`: the launch's outcome and every rank's
/// record, read also when the launch failed.
fn launch_with_records(
    d: &Device,
    spec: &WorldSpec,
    case: u32,
    param: u32,
    on: u32,
) -> (Result<gpu_mpi::LaunchReport, HostError>, Vec<Vec<u32>>) {
    let ranks = match spec.ranks {
        gpu_mpi::RankCount::Exact(n) => n as usize,
        gpu_mpi::RankCount::Max => unreachable!("tests use exact sizes"),
    };
    let stride = HW_STRIDE as usize;
    let out = d.alloc_zeroed::<u32>(ranks * stride).unwrap();
    let data = d.alloc_zeroed::<u8>(8).unwrap();
    let cells = d.alloc_zeroed::<u32>(8).unwrap();
    let args = CaseArgs {
        case,
        param,
        param2: on,
        stride: HW_STRIDE,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let launched = d.launch(&SEMANTICS_HWCOMM, &args, spec);
    let got = d.download(&out).unwrap();
    (launched, got.chunks(stride).map(|c| c.to_vec()).collect())
}

/// Runs case `case` on `spec` and returns every rank's record.
fn launch(d: &Device, spec: &WorldSpec, case: u32, param: u32, on: u32) -> Result<Run, HostError> {
    let (launched, records) = launch_with_records(d, spec, case, param, on);
    Ok(Run {
        records,
        report: launched?,
    })
}

/// A launch whose waits time out and whose ranks all record the error and
/// return `Ok`: the host reports the abort (`HostError::WorldAborted`, a
/// timeout); every rank's record.
fn launch_timed_out(d: &Device, spec: &WorldSpec, case: u32, param: u32, on: u32) -> Vec<Vec<u32>> {
    match launch_with_records(d, spec, case, param, on) {
        (Err(HostError::WorldAborted { timed_out: true, .. }), records) => records,
        (Err(e), _) => {
            panic!("case {case} ({param}, on {on}): expected the world aborted by a timeout, got {e}")
        }
        (Ok(_), _) => {
            panic!("case {case} ({param}, on {on}): the launch succeeded; a wait should have timed out")
        }
    }
}

fn run(
    backend: Backend,
    spec: WorldSpec,
    schedule: Schedule,
    case: u32,
    param: u32,
    on: u32,
) -> Vec<Vec<u32>> {
    launch(&device(backend, schedule), &spec, case, param, on)
        .unwrap_or_else(|e| panic!("case {case} ({param}, on {on}) on {spec:?}: {e}"))
        .records
}

/// World rank `w`'s rank and size in its block (`ON_BLOCK`) or warp
/// (`ON_WARP`) communicator, in a world of blocks of `block` ranks.
fn place(w: u32, block: u32, on: u32) -> (u32, u32) {
    let t = w % block;
    if on == ON_BLOCK {
        return (t, block);
    }
    let first = t / 32 * 32;
    (t % 32, (block - first).min(32))
}

fn product(size: u32, i: u32) -> Mat2 {
    (0..size)
        .map(|q| user_operand(q, i))
        .reduce(|a, b| a.mul(&b))
        .unwrap()
}

fn check(got: &[Vec<u32>], want: impl Fn(usize) -> Vec<u32>, what: &str) {
    for (w, rec) in got.iter().enumerate() {
        let want = want(w);
        assert_eq!(&rec[..want.len()], &want[..], "{what}: world rank {w}");
    }
}

const SCHEDULES: [Schedule; 2] = [Schedule::Parallel, Schedule::Random { seed: 11 }];
/// (ranks, block size): a partial last warp (45 = 32 + 13), a block that
/// is one warp, two blocks of 40, a block of one rank.
const SHAPES: [(u32, u32); 4] = [(45, 45), (64, 32), (80, 40), (3, 1)];

fn barrier_and_all_reduce_of_matrices_in_rank_order(backend: Backend) {
    // 0 (zero length), 1, 3, and 70 matrices (1120 bytes: several rounds
    // of the block's scratch).
    for (ranks, block) in SHAPES {
        for on in [ON_BLOCK, ON_WARP] {
            for n in [0u32, 1, 3, 70] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_ALL_REDUCE,
                        n,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let mut v = vec![0, r, size, 0, 0];
                            for i in 0..n {
                                let m = product(size, i);
                                v.extend([m.a, m.b, m.c, m.d]);
                            }
                            v.extend([0, size * (size + 1) / 2]);
                            v
                        },
                        &format!("all-reduce of {n}, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(barrier_and_all_reduce_of_matrices_in_rank_order);

fn all_reduce_of_a_block_of_1024_in_rounds_of_the_stage(backend: Backend) {
    // 32 warps: the stage holds 4080 / (33 × 16) = 7 matrices a round, so
    // 70 take 10 rounds.
    let spec = WorldSpec::ranks(1024).block_dim(1024);
    let got = match launch(
        &device(backend, Schedule::Parallel),
        &spec,
        H_ALL_REDUCE,
        70,
        ON_BLOCK,
    ) {
        Ok(run) => run.records,
        // On a GPU the test kernel's 128 registers allow blocks of 512 at
        // most: the host refuses the world with the numbers, as it must.
        Err(HostError::NotCoResident { fits, .. }) if backend == Backend::Cuda => {
            assert_eq!(fits, 0);
            eprintln!("skipped on the GPU: a block of 1024 does not fit this kernel");
            return;
        }
        Err(e) => panic!("all-reduce on a block of 1024: {e}"),
    };
    check(
        &got,
        |w| {
            let mut v = vec![0, w as u32, 1024, 0, 0];
            for i in 0..70 {
                let m = product(1024, i);
                v.extend([m.a, m.b, m.c, m.d]);
            }
            v.extend([0, 1024 * 1025 / 2]);
            v
        },
        "all-reduce of 70 matrices on a block of 1024",
    );
}
testgen!(all_reduce_of_a_block_of_1024_in_rounds_of_the_stage);

/// Runs `case` (one of the every-root cases) on every shape, both
/// communicators and 0, 1, 5 and 300 elements (1200 bytes: more than the
/// block's stage, so several rounds), and checks each rank's record: its
/// place, then per root `t` the broadcast's class, the weighted sum of the
/// root's elements (`1000 t + j`), then what `after(size, rank, t)` adds.
fn every_root(
    backend: Backend,
    case: u32,
    what: &str,
    counts: &[u32],
    after: impl Fn(u32, u32, u32) -> Vec<u32>,
) {
    for (ranks, block) in SHAPES {
        for on in [ON_BLOCK, ON_WARP] {
            for &n in counts {
                let got = run(
                    backend,
                    WorldSpec::ranks(ranks).block_dim(block),
                    Schedule::Parallel,
                    case,
                    n,
                    on,
                );
                check(
                    &got,
                    |w| {
                        let (r, size) = place(w as u32, block, on);
                        let mut v = vec![0, r, size];
                        for t in 0..size {
                            let sum =
                                (0..n).fold(0u32, |s, j| s.wrapping_add((1000 * t + j).wrapping_mul(j + 1)));
                            v.extend([0, sum]);
                            v.extend(after(size, r, t));
                        }
                        v
                    },
                    &format!("{what}, {n} elements, {ranks} in blocks of {block}, on {on}"),
                );
            }
        }
    }
}

fn broadcast_and_reduce_from_every_root(backend: Backend) {
    // 1100 words (4400 bytes): two rounds of a block's stage of 4080.
    every_root(backend, H_ROOTS, "roots", &[0, 1, 5, 300, 1100], |size, r, t| {
        let mut v = vec![0];
        if r == t {
            let m = product(size, t);
            v.extend([m.a, m.b, m.c, m.d]);
        } else {
            v.extend([NONE; 4]);
        }
        v
    });
}
testgen!(broadcast_and_reduce_from_every_root);

fn broadcast_of_a_view_from_every_root_moves_only_its_elements(backend: Backend) {
    // Elements at stride 2; the warp path moves 4 packed bytes per shuffle
    // through the walker. The third word per root: odd words changed.
    every_root(backend, H_VIEW, "view broadcast", &[0, 1, 5, 300], |_, _, _| {
        vec![0]
    });
}
testgen!(broadcast_of_a_view_from_every_root_moves_only_its_elements);

fn an_operation_one_rank_cannot_apply_fails_every_rank(backend: Backend) {
    let op = ErrorClass::Op as u32;
    let ty = ErrorClass::Type as u32;
    for (ranks, block) in SHAPES {
        for on in [ON_BLOCK, ON_WARP] {
            for odd in [0u32, 1, 12, 40] {
                let got = run(
                    backend,
                    WorldSpec::ranks(ranks).block_dim(block),
                    Schedule::Parallel,
                    H_BAD_OP,
                    odd,
                    on,
                );
                check(
                    &got,
                    |w| {
                        let (r, size) = place(w as u32, block, on);
                        let class = match (odd < size, r == odd) {
                            (false, _) => 0,
                            (true, true) => op,
                            (true, false) => ty,
                        };
                        let sum = (size * (size + 1) / 2) as f32;
                        vec![0, r, size, class, class, 0, sum.to_bits()]
                    },
                    &format!("rank {odd} passes MPI_BAND on f32, {ranks} in blocks of {block}, on {on}"),
                );
            }
        }
    }
}
testgen!(an_operation_one_rank_cannot_apply_fails_every_rank);

fn a_disagreement_fails_on_every_rank_and_the_next_call_works(backend: Backend) {
    let count = ErrorClass::Count as u32;
    let root = ErrorClass::Root as u32;
    for (ranks, block) in [(45u32, 45u32), (64, 32)] {
        for on in [ON_BLOCK, ON_WARP] {
            for odd in [0u32, 1, 12, 40] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_MISMATCH,
                        odd,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let bad = odd < size;
                            let classes = if bad { [count, count, root] } else { [0, 0, 0] };
                            let mut v = vec![0, r, size];
                            v.extend(classes);
                            v.extend([0, size * (size + 1) / 2]);
                            v
                        },
                        &format!("rank {odd} disagrees, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(a_disagreement_fails_on_every_rank_and_the_next_call_works);

/// A count mismatch names the root's count on every rank, whichever
/// member the root is (MPI 4.1 §6.4, §6.9.1: each rank's type signature
/// must match the root's; `Error::CountMismatch::expected`); with a root
/// that all name but no member is, member 0's.
fn a_count_mismatch_names_the_roots_count_whichever_member_is_root(backend: Backend) {
    let count = ErrorClass::Count as u32;
    for (ranks, block) in [(45u32, 45u32), (64, 32)] {
        for on in [ON_BLOCK, ON_WARP] {
            for root in [0u32, 1, 12, 40, NOT_A_MEMBER, NOT_A_MEMBER + 3] {
                let got = run(
                    backend,
                    WorldSpec::ranks(ranks).block_dim(block),
                    SCHEDULES[0],
                    H_ROOT_COUNT,
                    root,
                    on,
                );
                check(
                    &got,
                    |w| {
                        let (r, size) = place(w as u32, block, on);
                        let odd = if root >= NOT_A_MEMBER { 0 } else { root % size };
                        let mine = if r == odd { 2 } else { 1 };
                        let mut v = vec![0, r, size];
                        // Bytes of the broadcast, elements of the reduce.
                        v.extend([count, 4 * mine, 8, count, mine, 2]);
                        v.extend([0, size * (size + 1) / 2]);
                        v
                    },
                    &format!("root {root}, {ranks} in blocks of {block}, on {on}"),
                );
            }
        }
    }
}
testgen!(a_count_mismatch_names_the_roots_count_whichever_member_is_root);

#[test]
fn a_rank_that_left_gives_a_deadlock_report() {
    // `odd` is a communicator rank: on a warp communicator, a lane that
    // both warps of a block of 45 have (12 < 13).
    for (ranks, block, odd_block, odd_warp) in [(45u32, 45u32, 3u32, 3u32), (45, 45, 40, 12), (64, 32, 0, 0)]
    {
        for (on, odd) in [(ON_BLOCK, odd_block), (ON_WARP, odd_warp)] {
            // Exact deadlock detection is the emulator's.
            let d = Device::cpu();
            let spec = WorldSpec::ranks(ranks).block_dim(block);
            match launch(&d, &spec, H_EXIT, odd, on) {
                Err(HostError::Deadlock(report)) => {
                    let text = report.to_string();
                    assert!(text.contains("barrier"), "{text}");
                }
                Err(e) => panic!("rank {odd} left, on {on}: not a deadlock report: {e}"),
                Ok(_) => panic!("rank {odd} left, on {on}: the launch succeeded"),
            }
        }
    }
}

fn a_rank_that_left_gives_timeouts_on_the_others_with_a_wait_bound(backend: Backend) {
    // With a timeout the ranks that came fail their bounded wait (as on
    // the GPU) rather than being seen as a deadlock: the kernel records
    // the barrier's class. On a block communicator the 44 other ranks of
    // the block; on a warp communicator the other lanes of both warps,
    // since lane 3 leaves in each (world ranks 3 and 35): their own wait
    // times out or the abort of another ends it. (The emulator's schedule
    // let the second warp see the abort first; on an H100 its lanes timed
    // out themselves.)
    let timeout = ErrorClass::Timeout as u32;
    let aborted = ErrorClass::Aborted as u32;
    for on in [ON_BLOCK, ON_WARP] {
        let d = device(backend, Schedule::Parallel);
        let spec = WorldSpec::ranks(45)
            .block_dim(45)
            .timeout(Duration::from_millis(50));
        let records = launch_timed_out(&d, &spec, H_EXIT, 3, on);
        let mut timed_out = 0;
        for (w, rec) in records.iter().enumerate() {
            let (r, size) = place(w as u32, 45, on);
            assert_eq!(&rec[..3], &[0, r, size], "on {on}: world rank {w}");
            let class = rec[3];
            if r == 3 {
                assert_eq!(class, 0, "on {on}: world rank {w} left and records nothing more");
            } else {
                assert!(
                    class == timeout || class == aborted,
                    "on {on}: world rank {w}: class {class}"
                );
            }
            timed_out += usize::from(class == timeout);
        }
        assert!(timed_out >= 1, "on {on}: no rank timed out");
    }
}
testgen!(a_rank_that_left_gives_timeouts_on_the_others_with_a_wait_bound);

fn a_rank_hands_back_deferred_slots_before_it_waits_in_a_block_or_warp_collective(backend: Backend) {
    // Rank 1's last send needs the slot rank 0 holds deferred: rank 0 must
    // return it when it enters the barrier, or both wait for ever.
    let slots = 4u32;
    for on in [ON_BLOCK, ON_WARP] {
        for s in SCHEDULES {
            let spec = WorldSpec::ranks(45).block_dim(45).slots_per_rank(slots);
            let got = run(backend, spec, s, H_DEFERRED, slots, on);
            check(
                &got,
                |w| {
                    let (r, size) = place(w as u32, 45, on);
                    let sum = if w == 0 { (slots + 1) * (slots + 2) / 2 } else { 0 };
                    vec![0, r, size, 0, 0, sum]
                },
                &format!("deferred returns, on {on}, {s:?}"),
            );
        }
    }
}
testgen!(a_rank_hands_back_deferred_slots_before_it_waits_in_a_block_or_warp_collective);

/// Runs `case` traced on one block of 45 ranks, on the block and on the
/// warp communicators, and checks that every rank's spans of each call in
/// `want` (call, completed spans in all) are there, and that no message
/// went on the new communicator's collective context (3: the creation's
/// own messages are on the world's, 1), where the general algorithms
/// would send them.
fn traced_without_messages(backend: Backend, case: u32, want: &[(Call, usize)]) {
    traced_without_messages_on(backend, case, |_| want.to_vec());
}

/// [`traced_without_messages`] with counts that depend on the communicator
/// (`ON_BLOCK`: one of 45 ranks; `ON_WARP`: warps of 32 and 13).
fn traced_without_messages_on(backend: Backend, case: u32, want: impl Fn(u32) -> Vec<(Call, usize)>) {
    for on in [ON_BLOCK, ON_WARP] {
        let d = device(backend, Schedule::Parallel);
        let spec = WorldSpec::ranks(45).block_dim(45).trace(512);
        let run = launch(&d, &spec, case, 3, on).unwrap();
        assert_eq!(run.records.len(), 45);
        let t = run.report.trace().expect("a traced launch has a trace");
        let spans = t.spans();
        for (call, n) in want(on) {
            let done = spans
                .iter()
                .filter(|s| s.kind == SpanKind::Collective(call) && s.communicator != 0)
                .filter(|s| s.leave.is_some() && s.error.is_none())
                .count();
            assert_eq!(done, n, "on {on}: {call:?} spans");
        }
        let on_comm = t.messages().iter().filter(|m| m.context == 3).count();
        assert_eq!(
            on_comm, 0,
            "on {on}: messages on the communicator's collective context"
        );
    }
}

fn block_and_warp_collectives_send_no_message_and_are_traced(backend: Backend) {
    traced_without_messages(
        backend,
        H_ALL_REDUCE,
        &[(Call::Barrier, 45), (Call::AllReduce, 90)],
    );
}
testgen!(block_and_warp_collectives_send_no_message_and_are_traced);

/// The product of `user_operand(q, i)` for `q` in `0..=r` (rank order).
fn prefix(r: u32, i: u32) -> Mat2 {
    product(r + 1, i)
}

fn scan_and_exclusive_scan_of_matrices_in_rank_order(backend: Backend) {
    // 0 (zero length), 1, 3 and 60 matrices (960 bytes: 2 rounds of a
    // block of 2 warps' stage, 6 of a block of 4 warps'); blocks of 45
    // (a partial last warp), 32 (one warp: the warp path), 40 (two
    // blocks), 100 (four warps), 1.
    let shapes = [(45u32, 45u32), (64, 32), (80, 40), (100, 100), (3, 1)];
    for (ranks, block) in shapes {
        for on in [ON_BLOCK, ON_WARP] {
            for n in [0u32, 1, 3, 60] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_SCAN,
                        n,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let mut v = vec![0, r, size, 0];
                            for i in 0..n {
                                let m = prefix(r, i);
                                v.extend([m.a, m.b, m.c, m.d]);
                            }
                            v.push(0);
                            for i in 0..n {
                                let m = if r == 0 { SCAN_MARK } else { prefix(r - 1, i) };
                                v.extend([m.a, m.b, m.c, m.d]);
                            }
                            let ex = if r == 0 { 1 } else { r * (r + 1) / 2 };
                            v.extend([0, ex, 0, (r + 1) * (r + 2) / 2]);
                            v
                        },
                        &format!("scans of {n}, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(scan_and_exclusive_scan_of_matrices_in_rank_order);

fn a_scan_disagreement_fails_on_every_rank_and_the_next_scan_works(backend: Backend) {
    let count = ErrorClass::Count as u32;
    for (ranks, block) in [(45u32, 45u32), (64, 32), (100, 100)] {
        for on in [ON_BLOCK, ON_WARP] {
            for odd in [0u32, 1, 12, 40, 99] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_SCAN_MISMATCH,
                        odd,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let mut v = vec![0, r, size];
                            if odd < size {
                                // Another call twice (a collective
                                // mismatch), then another count.
                                v.extend([count, 1, count, 1, count, 0]);
                            } else {
                                v.extend([0; 6]);
                            }
                            v.extend([0, (r + 1) * (r + 2) / 2]);
                            v
                        },
                        &format!(
                            "rank {odd} disagrees in a scan, {ranks} in blocks of {block}, on {on}, {s:?}"
                        ),
                    );
                }
            }
        }
    }
}
testgen!(a_scan_disagreement_fails_on_every_rank_and_the_next_scan_works);

fn block_and_warp_scans_send_no_message_and_are_traced(backend: Backend) {
    // Four scans per rank (exclusive ones are traced as scans).
    traced_without_messages(backend, H_SCAN, &[(Call::Scan, 4 * 45)]);
}
testgen!(block_and_warp_scans_send_no_message_and_are_traced);

/// The weighted sum of a gather's result on a communicator of `size`
/// ranks with `part` elements each (`gathered(q, j)` in part `q`).
fn gathered_sum(size: u32, part: u32) -> u32 {
    let all: Vec<u32> = (0..size)
        .flat_map(|q| (0..part).map(move |j| gathered(q, j)))
        .collect();
    weighted(&all)
}

fn gather_and_all_gather_from_every_root_in_place_and_not(backend: Backend) {
    // 0, 1, 3 and 24 elements per rank (24 × 4 = 96 bytes: two rounds of
    // a block's stage of 4080 / 45 = 90 bytes per rank; blocks of 100 take
    // 11, 44 bytes in rounds of 40: the kernel's buffer holds 1100).
    for (ranks, block) in [(45u32, 45u32), (64, 32), (80, 40), (3, 1), (100, 100)] {
        for on in [ON_BLOCK, ON_WARP] {
            for n in [0u32, 1, 3, 24] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_GATHER,
                        n,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let part = n.min(HW_MAX_PART).min(HW_MAX_GATHER / size);
                            let sum = gathered_sum(size, part);
                            let mut v = vec![0, r, size, 0, sum, 0, sum];
                            for t in 0..size {
                                v.extend([0, if t == r { sum } else { NONE }]);
                            }
                            v
                        },
                        &format!("gathers of {n}, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(gather_and_all_gather_from_every_root_in_place_and_not);

fn a_gather_disagreement_fails_on_every_rank_and_the_next_call_works(backend: Backend) {
    let count = ErrorClass::Count as u32;
    for (ranks, block) in [(45u32, 45u32), (64, 32), (100, 100)] {
        for on in [ON_BLOCK, ON_WARP] {
            for odd in [0u32, 1, 12, 40, 99] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_GATHER_MISMATCH,
                        odd,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let mut v = vec![0, r, size];
                            if odd < size {
                                v.extend([count, 0]);
                            } else {
                                v.extend([0, 0]);
                            }
                            // The root's short buffer fails everyone.
                            v.extend([count, 0]);
                            if odd < size && odd != 0 {
                                // An all-gather against gathers.
                                v.extend([count, 1]);
                            } else if odd == 0 {
                                // The root calls the all-gather.
                                v.extend([count, 1]);
                            } else {
                                v.extend([0, 0]);
                            }
                            v.extend([0, gathered_sum(size, 1)]);
                            v
                        },
                        &format!(
                            "rank {odd} disagrees in a gather, {ranks} in blocks of {block}, on {on}, {s:?}"
                        ),
                    );
                }
            }
        }
    }
}
testgen!(a_gather_disagreement_fails_on_every_rank_and_the_next_call_works);

fn block_and_warp_gathers_send_no_message_and_are_traced(backend: Backend) {
    // Two all-gathers per rank, and per rank a gather per root of its
    // communicator: 45 roots on the block, 32 and 13 on the two warps.
    traced_without_messages_on(backend, H_GATHER, |on| {
        let gathers = if on == ON_BLOCK {
            45 * 45
        } else {
            32 * 32 + 13 * 13
        };
        vec![(Call::AllGather, 2 * 45), (Call::Gather, gathers)]
    });
}
testgen!(block_and_warp_gathers_send_no_message_and_are_traced);

fn scatter_from_every_root_in_place_and_not(backend: Backend) {
    let count = ErrorClass::Count as u32;
    for (ranks, block) in [(45u32, 45u32), (64, 32), (3, 1), (100, 100)] {
        for on in [ON_BLOCK, ON_WARP] {
            for n in [0u32, 1, 24] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_SCATTER,
                        n,
                        on,
                    );
                    check(
                        &got,
                        |w| {
                            let (r, size) = place(w as u32, block, on);
                            let part = n.min(HW_MAX_PART).min(HW_MAX_GATHER / size);
                            let mine = |shift: u32| -> Vec<u32> {
                                (0..part).map(|j| gathered(r, j) + shift).collect()
                            };
                            let mut v = vec![0, r, size];
                            for t in 0..size {
                                v.extend([0, weighted(&mine(7 * t))]);
                            }
                            // The root's longer receive buffer fails everyone.
                            v.extend([count, 0]);
                            v.extend([0, weighted(&mine(0))]);
                            v
                        },
                        &format!("scatters of {n}, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(scatter_from_every_root_in_place_and_not);

fn block_and_warp_scatters_send_no_message_and_are_traced(backend: Backend) {
    // Per rank a scatter per root of its communicator, then two more (the
    // failing one is traced with its error, so not counted).
    traced_without_messages_on(backend, H_SCATTER, |on| {
        let scatters = if on == ON_BLOCK {
            45 * 46
        } else {
            32 * 33 + 13 * 14
        };
        vec![(Call::Scatter, scatters)]
    });
}
testgen!(block_and_warp_scatters_send_no_message_and_are_traced);

/// What world rank `w` records in `H_ALL_TO_ALL` with `n` elements.
fn all_to_all_want(w: u32, block: u32, on: u32, n: u32) -> Vec<u32> {
    let (r, size) = place(w, block, on);
    let part = n.min(HW_MAX_PART).min(HW_MAX_GATHER / size);
    let got: Vec<u32> = (0..size)
        .flat_map(|q| (0..part).map(move |e| gathered(q, r * part + e)))
        .collect();
    let sum = weighted(&got);
    let mut v = vec![0, r, size, 0, sum];
    if on == ON_WARP {
        // The last lane's longer receive buffer fails every lane.
        v.extend([ErrorClass::Count as u32, 0, 0, sum]);
    }
    v.extend([0, sum]);
    v
}

fn all_to_all_on_warps_by_shuffles_and_on_blocks_in_place_and_not(backend: Backend) {
    // Warps of 32, 13 (a partial last warp: rounds to 16 with lanes
    // that have no partner), 8 and 1; 0, 1, 3 and 24 elements per pair.
    for (ranks, block) in [(45u32, 45u32), (64, 32), (16, 8), (3, 1)] {
        for on in [ON_BLOCK, ON_WARP] {
            for n in [0u32, 1, 3, 24] {
                for s in SCHEDULES {
                    let got = run(
                        backend,
                        WorldSpec::ranks(ranks).block_dim(block),
                        s,
                        H_ALL_TO_ALL,
                        n,
                        on,
                    );
                    check(
                        &got,
                        |w| all_to_all_want(w as u32, block, on, n),
                        &format!("all-to-all of {n}, {ranks} in blocks of {block}, on {on}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(all_to_all_on_warps_by_shuffles_and_on_blocks_in_place_and_not);

fn warp_all_to_all_sends_no_message_and_is_traced(backend: Backend) {
    let d = device(backend, Schedule::Parallel);
    let spec = WorldSpec::ranks(45).block_dim(45).trace(512);
    let run = launch(&d, &spec, H_ALL_TO_ALL, 3, ON_WARP).unwrap();
    let t = run.report.trace().expect("a traced launch has a trace");
    let done = t
        .spans()
        .iter()
        .filter(|s| s.kind == SpanKind::Collective(Call::AllToAll) && s.communicator != 0)
        .filter(|s| s.leave.is_some() && s.error.is_none())
        .count();
    // Three that succeed per lane, the disagreement fails.
    assert_eq!(done, 3 * 45);
    assert_eq!(t.messages().iter().filter(|m| m.context == 3).count(), 0);
}
testgen!(warp_all_to_all_sends_no_message_and_is_traced);

/// A rank of a block or warp communicator that returns from the kernel
/// while the others enter a collective on it (every collective of
/// [`EXIT_OPS`], rooted at the next rank): without a wait bound the
/// emulator reports the deadlock, naming the rank that left; with one,
/// every rank that entered fails (`Timeout` or `Aborted`), none returns Ok.
fn a_rank_that_left_fails_every_collective_on_blocks_and_warps(backend: Backend) {
    let timeout = ErrorClass::Timeout as u32;
    let aborted = ErrorClass::Aborted as u32;
    for (op, name) in EXIT_OPS.iter().enumerate() {
        let param = 3 + 256 * op as u32;
        for on in [ON_BLOCK, ON_WARP] {
            let spec = WorldSpec::ranks(45).block_dim(45);
            match launch(&Device::cpu(), &spec, H_EXIT_IN, param, on) {
                Err(HostError::Deadlock(report)) => {
                    let text = report.to_string();
                    // In the list of blocked ranks, or (a general
                    // algorithm's long list, cut short) in the hint that
                    // names the communicator's collective.
                    assert!(
                        text.contains("rank 3: exited") || text.contains("while rank 3 exited"),
                        "{name} on {on}: {text}"
                    );
                }
                Err(e) => panic!("{name} on {on}: not a deadlock report: {e}"),
                Ok(_) => panic!("{name} on {on}: the launch succeeded"),
            }
            let spec = spec.timeout(Duration::from_millis(50));
            let records = launch_timed_out(&device(backend, Schedule::Parallel), &spec, H_EXIT_IN, param, on);
            for (w, rec) in records.iter().enumerate() {
                let (r, size) = place(w as u32, 45, on);
                assert_eq!(&rec[..3], &[0, r, size], "{name} on {on}: world rank {w}");
                let class = rec[3];
                if r == 3 {
                    assert_eq!(class, 0, "{name} on {on}: world rank {w} left");
                } else {
                    assert!(
                        class == timeout || class == aborted,
                        "{name} on {on}: world rank {w} (rank {r}) returned class {class}"
                    );
                }
            }
        }
    }
}
testgen!(a_rank_that_left_fails_every_collective_on_blocks_and_warps);
