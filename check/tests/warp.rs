//! The warp-collective kernel of the conformance crate
//! (`gpu_mpi_check_kernels::warp`) on each backend (`testgen!`: the emulator
//! always, the GPU where one is present): exact values on full and partial
//! warps, several blocks, the parallel and a seeded schedule (the
//! emulator's; the GPU runs its own twice).

use gpu_mpi::{CpuOptions, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::warp::{SEMANTICS_WARP, WARP_WORDS};
use gpu_mpi_check_kernels::CaseArgs;

/// What rank `r` of `ranks` in blocks of `block` must record.
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
        0b11,
        wide as u32,
        (wide >> 32) as u32,
        (b * block..(b * block + block).min(ranks))
            .map(|q| q as u32 + 1)
            .sum(),
    ]
}

fn the_warp_kernel_records_exact_values(backend: Backend) {
    for schedule in [Schedule::Parallel, Schedule::Random { seed: 11 }] {
        for (ranks, block) in [(256usize, 256usize), (300, 100), (33, 33), (5, 5)] {
            let d = backend.device_with(CpuOptions {
                workers: 2,
                schedule,
                ..CpuOptions::default()
            });
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
            .unwrap();
            let got = d.download(&out).unwrap();
            for r in 0..ranks {
                assert_eq!(
                    got[r * stride..(r + 1) * stride],
                    expected(r, ranks, block)[..],
                    "rank {r} of {ranks} in blocks of {block}, {schedule:?}"
                );
            }
        }
    }
}
testgen!(the_warp_kernel_records_exact_values);
