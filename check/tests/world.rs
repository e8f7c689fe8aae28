//! Whole-world programs of `gpu_mpi_check_kernels::world` on each backend
//! (`testgen!`: the emulator always, with one and two workers; the GPU
//! where one is present): sums of 4096 ranks by point-to-point and by
//! all-reduce, a message larger than a slot (eager and streamed), and world
//! reductions of a non-commutative operation in rank order in every block
//! shape.

use gpu_mpi::{CpuOptions, DeviceBuffer, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::{Backend, TestDevice};
use gpu_mpi_check_kernels::p2p::Mat2;
use gpu_mpi_check_kernels::world::*;

fn device(backend: Backend, workers: usize) -> TestDevice {
    backend.device_with(CpuOptions {
        workers,
        ..CpuOptions::default()
    })
}

/// The buffers of every program (those a program does not use one element
/// long).
struct Buffers {
    sums: DeviceBuffer<f64>,
    words: DeviceBuffer<u64>,
    matrices: DeviceBuffer<Mat2>,
}

impl Buffers {
    fn new(d: &TestDevice, sums: usize, words: usize, matrices: usize) -> Buffers {
        Buffers {
            sums: d.alloc_zeroed(sums.max(1)).unwrap(),
            words: d.alloc_zeroed(words.max(1)).unwrap(),
            matrices: d.alloc_zeroed(matrices.max(1)).unwrap(),
        }
    }

    fn args(&self, program: u32, root: i32) -> WorldArgs {
        WorldArgs {
            program,
            root,
            sums: self.sums.slice(),
            words: self.words.slice(),
            matrices: self.matrices.slice(),
        }
    }
}

fn point_to_point_and_collectives_give_the_right_sums(backend: Backend) {
    for workers in [1, 2] {
        let d = device(backend, workers);
        let n = 4096;
        let want: f64 = (0..n).map(part).sum();
        let b = Buffers::new(&d, n as usize, 0, 0);
        d.launch(
            &SEMANTICS_WORLD,
            &b.args(W_GATHER_SUM, 0),
            &WorldSpec::ranks(n as u32),
        )
        .unwrap();
        assert_eq!(d.download(&b.sums).unwrap()[0], want);
        d.launch(
            &SEMANTICS_WORLD,
            &b.args(W_ALL_REDUCE_SUM, 0),
            &WorldSpec::ranks(n as u32),
        )
        .unwrap();
        for got in d.download(&b.sums).unwrap() {
            assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
        }
    }
}
testgen!(point_to_point_and_collectives_give_the_right_sums);

fn send_big(backend: Backend, streaming: bool) {
    let d = device(backend, 2);
    let b = Buffers::new(&d, 0, BIG_WORDS, 0);
    let spec = WorldSpec::ranks(128).block_dim(32).force_streaming(streaming);
    d.launch(&SEMANTICS_WORLD, &b.args(W_BIG_MESSAGE, 0), &spec)
        .unwrap();
    assert_eq!(
        d.download(&b.words).unwrap(),
        (0..BIG_WORDS as u64).map(|i| i * 3).collect::<Vec<u64>>()
    );
}

fn large_messages_cross_workers(backend: Backend) {
    send_big(backend, false);
}
testgen!(large_messages_cross_workers);

fn large_messages_cross_workers_streamed(backend: Backend) {
    send_big(backend, true);
}
testgen!(large_messages_cross_workers_streamed);

/// World reductions of a non-commutative operation come out in rank order
/// whichever place the block phase keeps the warps' partials in: the
/// block's shared memory (small blocks) or, when `warps × elements` do not
/// fit there, the global cells of the warps' first ranks (blocks of 1024
/// threads: 32 warps × 15 matrices of 16 bytes per round); partial warps
/// (blocks of 45) and several rounds of `collective_bytes`.
fn world_reductions_of_matrices_are_in_rank_order_in_every_block_shape(backend: Backend) {
    let d = device(backend, 2);
    for (ranks, block_dim, root) in [(90u32, 45u32, 77i32), (128, 64, 3), (2048, 1024, 1500), (1, 1, 0)] {
        let b = Buffers::new(&d, 0, 0, 2 * MATRICES * ranks as usize);
        d.launch(
            &SEMANTICS_WORLD,
            &b.args(W_MATRIX_REDUCTIONS, root),
            &WorldSpec::ranks(ranks).block_dim(block_dim),
        )
        .unwrap();
        let got = d.download(&b.matrices).unwrap();
        let want: Vec<Mat2> = (0..MATRICES as u32)
            .map(|i| (1..ranks).fold(matrix_operand(0, i), |acc, r| acc.mul(&matrix_operand(r, i))))
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
testgen!(world_reductions_of_matrices_are_in_rank_order_in_every_block_shape);

/// All-to-all and all-gather with every receive buffer in global memory
/// (each rank copies its parts straight into the others' buffers) and
/// with one rank's on its stack (every rank stages through the cells):
/// the same words either way, over several blocks and a partial warp.
fn exchanges_give_the_same_words_directly_and_staged(backend: Backend) {
    let d = device(backend, 2);
    for (ranks, block_dim) in [(64u32, 16u32), (45, 45)] {
        for stacked in [-1, 5] {
            let b = Buffers::new(&d, 0, EXCHANGE_WORDS * ranks as usize, 0);
            d.launch(
                &SEMANTICS_WORLD,
                &b.args(W_EXCHANGES, stacked),
                &WorldSpec::ranks(ranks).block_dim(block_dim),
            )
            .unwrap();
            let got = d.download(&b.words).unwrap();
            for r in 0..ranks {
                let at = EXCHANGE_WORDS * r as usize;
                let want: Vec<u64> = (0..ranks)
                    .map(|s| exchange_word(s, r))
                    .chain(
                        (0..ranks).flat_map(|q| (0..GATHERED_WORDS as u32).map(move |i| gathered_word(q, i))),
                    )
                    .collect();
                assert_eq!(
                    got[at..at + want.len()],
                    want[..],
                    "{ranks}x{block_dim}, rank {stacked} on its stack: rank {r}"
                );
            }
        }
    }
}
testgen!(exchanges_give_the_same_words_directly_and_staged);
