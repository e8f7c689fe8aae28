//! A collective that one rank never enters fails on every rank that
//! entered it (docs/semantics.md, "A collective that cannot complete"):
//! the shapes beyond the conformance case's (one block, a split
//! communicator of one block: on each backend, `testgen!`; blocks of 2 on
//! one worker: on the emulator). The conformance case itself runs on both
//! in tests/semantics.rs (`deadlock_skipped_collective_fails_everywhere`).

use gpu_mpi::{CpuOptions, Device};
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check::{skipped_collective, testgen, Shape};
use gpu_mpi_check_kernels::skip::SKIP_COLLECTIVES;

fn shape(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 0,
    }
}

fn every_collective_fails_in_a_world_of_one_block(backend: Backend) {
    let d = backend.device();
    for which in 0..SKIP_COLLECTIVES {
        skipped_collective(&d, which, shape(4, 4), 1, false).unwrap();
        skipped_collective(&d, which, shape(6, 6), 2, true).unwrap();
    }
}
testgen!(every_collective_fails_in_a_world_of_one_block);

// Emulator only: one worker running every block is an emulator option.

#[test]
fn every_collective_fails_alike_with_its_blocks_on_one_worker() {
    let d = Device::cpu_with(CpuOptions {
        workers: 1,
        ..CpuOptions::default()
    });
    for which in 0..SKIP_COLLECTIVES {
        skipped_collective(&d, which, shape(8, 2), 3, false).unwrap();
    }
}
