//! The warp-collective kernel of the conformance crate
//! (`gpu_mpi_check_kernels::warp`) on each backend (`testgen!`: the emulator
//! always, the GPU where one is present): exact values on full and partial
//! warps, several blocks, the parallel, seeded random and PCT schedules
//! with one and two workers (the emulator's; the GPU runs its own once per
//! combination).

use gpu_mpi::{CpuOptions, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::warp::{SEMANTICS_WARP, WARP_WORDS};
use gpu_mpi_check_kernels::CaseArgs;

/// What rank `r` of `ranks` in blocks of `block` must record in its first
/// 11 words (the active mask and the SM id follow: [`run`] checks them).
fn expected(r: usize, ranks: usize, block: usize) -> Vec<u32> {
    let (b, t) = (r / block, r % block);
    let lane = t % 32;
    let first = b * block + t - lane;
    let n = (block - (t - lane)).min(32);
    let m: u32 = if n == 32 { u32::MAX } else { (1 << n) - 1 };
    let val = |l: usize| (first + l) as u32 + 1;
    let sum: u32 = (0..n).map(val).sum();
    let wide = (u64::from(val(n - 1)) << 33) | (n as u64 - 1);
    vec![
        if n == 32 { sum } else { 0 },
        if lane == 0 { sum } else { 0 },
        (0..=lane).map(val).sum(),
        m & 0xAAAA_AAAA,
        (0..n).filter(|l| l / 3 == lane / 3).fold(0, |a, l| a | 1 << l),
        val(0),
        val((lane + 1) % n),
        0b1_0011 | if n == 1 { 0b10_1000 } else { 0 },
        wide as u32,
        (wide >> 32) as u32,
        (b * block..(b * block + block).min(ranks))
            .map(|q| q as u32 + 1)
            .sum(),
    ]
}

/// Runs the warp kernel on `ranks` ranks in blocks of `block` and checks
/// every rank's words.
fn run(backend: Backend, workers: usize, schedule: Schedule, ranks: usize, block: usize) {
    let d = backend.device_with(CpuOptions {
        workers,
        schedule,
        ..CpuOptions::default()
    });
    let sms = d.describe().sms;
    let stride = WARP_WORDS as usize;
    let out = d.alloc_zeroed::<u32>(ranks * stride).unwrap();
    let data = d.alloc_zeroed::<u8>(8).unwrap();
    let cells = d.alloc_zeroed::<u32>(8).unwrap();
    let args = CaseArgs {
        case: 0,
        param: 0,
        param2: 0,
        stride: WARP_WORDS,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    d.launch(
        &SEMANTICS_WARP,
        &args,
        &WorldSpec::ranks(ranks as u32).block_dim(block as u32),
    )
    .unwrap_or_else(|e| panic!("{ranks}/{block} {schedule:?}: {e}"));
    let got = d.download(&out).unwrap();
    for r in 0..ranks {
        let what = format!("rank {r} of {ranks} in blocks of {block}, {schedule:?}, {workers} workers");
        let rec = &got[r * stride..(r + 1) * stride];
        assert_eq!(rec[..11], expected(r, ranks, block)[..], "{what}");
        let (t, lane) = (r % block, r % block % 32);
        let n = (block - (t - lane)).min(32);
        let warp: u32 = if n == 32 { u32::MAX } else { (1 << n) - 1 };
        let (active, sm) = (rec[11], rec[12]);
        match backend {
            // The emulator runs a warp's lanes together, on SM = its worker.
            Backend::Cpu => {
                assert_eq!(active, warp, "{what}: active mask");
                assert!(sm < 2, "{what}: SM {sm}");
            }
            // A GPU may run part of a warp at a time: the lane itself is
            // active, and no lane outside the warp.
            Backend::Cuda => {
                assert!(
                    active & 1 << lane != 0 && active & !warp == 0,
                    "{what}: active mask {active:#x}"
                );
                assert!(sm < sms, "{what}: SM {sm} of {sms}");
            }
        }
    }
}

fn the_warp_kernel_records_exact_values(backend: Backend) {
    for schedule in [Schedule::Parallel, Schedule::Random { seed: 11 }] {
        for (ranks, block) in [(256usize, 256usize), (300, 100), (33, 33), (5, 5)] {
            run(backend, 2, schedule, ranks, block);
        }
    }
}
testgen!(the_warp_kernel_records_exact_values);

fn warp_collectives_give_exact_values_on_full_and_partial_warps(backend: Backend) {
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
                run(backend, workers, schedule, ranks, block);
            }
        }
    }
}
testgen!(warp_collectives_give_exact_values_on_full_and_partial_warps);
