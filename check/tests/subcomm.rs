//! Erroneous collectives on sub-communicators (the message algorithms of
//! `collective/general.rs`), on each backend (`testgen!`): every rank that
//! entered the call fails with one class (the erroneous rank its own), no
//! data moves, and the next collective of the communicator works (MPI 4.1
//! §6.1, §6.14; docs/limits.md).

use gpu_mpi::device::ErrorClass;
use gpu_mpi::{CpuOptions, Device, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::{Backend, TestDevice};
use gpu_mpi_check_kernels::subcomm::*;
use gpu_mpi_check_kernels::CaseArgs;

const COUNT: u32 = ErrorClass::Count as u32;
const ARG: u32 = ErrorClass::Arg as u32;

fn device(backend: Backend, schedule: Schedule) -> TestDevice {
    backend.device_with(CpuOptions {
        workers: 2,
        schedule,
        ..CpuOptions::default()
    })
}

const SCHEDULES: [Schedule; 2] = [Schedule::Parallel, Schedule::Random { seed: 5 }];

/// Runs case `case` on `ranks` ranks in blocks of `block` and returns every
/// rank's record.
fn run(d: &Device, ranks: u32, block: u32, case: u32, param: u32, on: u32) -> Vec<Vec<u32>> {
    run_spec(
        d,
        ranks,
        block,
        WorldSpec::ranks(ranks).block_dim(block),
        case,
        param,
        on,
    )
}

/// [`run`] on the world `spec` (of `ranks` ranks in blocks of `block`).
fn run_spec(
    d: &Device,
    ranks: u32,
    block: u32,
    spec: WorldSpec,
    case: u32,
    param: u32,
    on: u32,
) -> Vec<Vec<u32>> {
    let stride = SUB_STRIDE as usize;
    let out = d.alloc_zeroed::<u32>(ranks as usize * stride).unwrap();
    let data = d.alloc_zeroed::<u8>(8).unwrap();
    let cells = d.alloc_zeroed::<u32>(8).unwrap();
    let args = CaseArgs {
        case,
        param,
        param2: on,
        stride: SUB_STRIDE,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    d.launch(&SEMANTICS_SUBCOMM, &args, &spec).unwrap_or_else(|e| {
        panic!("case {case} ({param}, on {on}), {ranks} ranks in blocks of {block}: {e}")
    });
    let got = d.download(&out).unwrap();
    got.chunks(stride).map(|c| c.to_vec()).collect()
}

fn check(got: &[Vec<u32>], want: impl Fn(usize) -> Vec<u32>, what: &str) {
    for (w, rec) in got.iter().enumerate() {
        let want = want(w);
        assert_eq!(&rec[..want.len()], &want[..], "{what}: world rank {w}");
    }
}

/// A root whose varcount partition has a part outside its buffer: it
/// fails with `MPI_ERR_ARG`, every other rank with `MPI_ERR_COUNT`, the
/// root's buffer stays untouched, and the barrier and all-reduce after it
/// work (issue 27, item 5).
fn a_bad_gatherv_partition_fails_on_every_rank(backend: Backend) {
    for (ranks, block, on) in [
        (4, 4, ON_SPLIT),
        (4, 4, ON_SHARED),
        (8, 4, ON_SHARED),
        (5, 1, ON_SPLIT),
    ] {
        let size = if on == ON_SHARED { block } else { ranks };
        for s in SCHEDULES {
            let got = run(&device(backend, s), ranks, block, S_GATHERV_BAD_DISPLS, 0, on);
            check(
                &got,
                |w| {
                    let w = w as u32;
                    let rank = if on == ON_SHARED { w % block } else { ranks - 1 - w };
                    let class = if rank == 0 { ARG } else { COUNT };
                    vec![0, rank, size, class, 0, 0, 0, size]
                },
                &format!("gatherv with a bad displacement, {ranks} in blocks of {block}, on {on}, {s:?}"),
            );
        }
    }
}
testgen!(a_bad_gatherv_partition_fails_on_every_rank);

/// One rank's all-to-all-varcount send counts are one short: it fails with
/// `MPI_ERR_COUNT` like every other rank, nothing is received, and the
/// barrier and all-reduce after it work (issue 27, item 5).
fn short_all_to_all_varcount_counts_fail_on_every_rank(backend: Backend) {
    for (ranks, block, on) in [(4, 4, ON_SPLIT), (4, 4, ON_SHARED), (6, 2, ON_SPLIT)] {
        let size = if on == ON_SHARED { block } else { ranks };
        for s in SCHEDULES {
            let got = run(&device(backend, s), ranks, block, S_ALLTOALLV_SHORT_COUNTS, 1, on);
            check(
                &got,
                |w| {
                    let w = w as u32;
                    let rank = if on == ON_SHARED { w % block } else { ranks - 1 - w };
                    vec![0, rank, size, COUNT, 0, 0, 0, size]
                },
                &format!("all-to-allv with short counts, {ranks} in blocks of {block}, on {on}, {s:?}"),
            );
        }
    }
}
testgen!(short_all_to_all_varcount_counts_fail_on_every_rank);

/// Communicator rank 0 broadcasts while the others reduce: every rank
/// fails with `MPI_ERR_COUNT` (another collective), no value changes, and
/// the all-reduce after it gives the size on every rank (issue 27, item 6).
fn a_broadcast_against_a_reduce_fails_on_every_rank(backend: Backend) {
    for (ranks, block) in [(8, 4), (6, 3), (4, 1)] {
        let size = ranks / 2;
        for s in SCHEDULES {
            let got = run(
                &device(backend, s),
                ranks,
                block,
                S_BROADCAST_AGAINST_REDUCE,
                0,
                ON_PARITY,
            );
            check(
                &got,
                |w| {
                    let rank = w as u32 / 2;
                    let v = if rank == 0 { 7 } else { rank };
                    vec![0, rank, size, COUNT, v, 0, size]
                },
                &format!("broadcast against reduce, {ranks} in blocks of {block}, {s:?}"),
            );
        }
    }
}
testgen!(a_broadcast_against_a_reduce_fails_on_every_rank);

/// Varcount parts whose sender and receiver disagree on the length by
/// `max_message_bytes` or more (16 bytes here: 4 words), so that they
/// disagree on the number of pieces the part moves in, not only on a
/// piece's length: a gather-varcount, a scatter-varcount, an
/// all-to-all-varcount and one in place, with 4 words against 8, 8
/// against 4, 4 against 12 and 12 against 4 (a piece's worth and two),
/// and 1 against 9. Every rank fails with `MPI_ERR_COUNT`, no piece is
/// left over: a correct gather-varcount after it gets every rank's word,
/// and a barrier and an all-reduce work.
fn varcount_lengths_a_piece_apart_fail_on_every_rank(backend: Backend) {
    for case in [
        S_GATHERV_LENGTHS,
        S_SCATTERV_LENGTHS,
        S_ALLTOALLV_LENGTHS,
        S_ALLTOALLV_IN_PLACE_LENGTHS,
    ] {
        for (a, b) in [(4u32, 8u32), (8, 4), (4, 12), (12, 4), (1, 9)] {
            for (ranks, block, on) in [(4, 4, ON_SPLIT), (3, 1, ON_SPLIT)] {
                for s in SCHEDULES {
                    let spec = WorldSpec::ranks(ranks).block_dim(block).max_message_bytes(16);
                    let got = run_spec(&device(backend, s), ranks, block, spec, case, a << 8 | b, on);
                    let sum = ranks * (ranks + 1) / 2;
                    check(
                        &got,
                        |w| {
                            let rank = ranks - 1 - w as u32;
                            let root_sum = if rank == 0 { sum } else { 0 };
                            vec![0, rank, ranks, COUNT, 0, root_sum, 0, 0, ranks]
                        },
                        &format!("case {case}, {a} words against {b}, {ranks} in blocks of {block}, {s:?}"),
                    );
                }
            }
        }
    }
}
testgen!(varcount_lengths_a_piece_apart_fail_on_every_rank);
