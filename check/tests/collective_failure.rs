//! A collective that one rank never enters fails on every rank that
//! entered it (docs/semantics.md, "A collective that cannot complete"):
//! the shapes beyond the conformance case's (one block, blocks of 2 on one
//! worker, a split communicator of one block), on the emulator; and the
//! conformance case on a GPU where there is one (skipped otherwise).

use gpu_mpi::{BackendKind, CpuOptions, Device, HostError};
use gpu_mpi_check::{find_case, open, skipped_collective, Shape};
use gpu_mpi_check_kernels::skip::SKIP_COLLECTIVES;

fn shape(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 0,
    }
}

#[test]
fn every_collective_fails_in_a_world_of_one_block() {
    let d = Device::cpu();
    for which in 0..SKIP_COLLECTIVES {
        skipped_collective(&d, which, shape(4, 4), 1, false).unwrap();
        skipped_collective(&d, which, shape(6, 6), 2, true).unwrap();
    }
}

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

#[test]
fn on_a_gpu_every_collective_fails_where_one_rank_never_enters() {
    let d = match open(BackendKind::Cuda) {
        Ok(d) => d,
        Err(HostError::NoGpu(why)) => {
            eprintln!("skipped: no GPU ({why})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let case = find_case("deadlock/skipped_collective_fails_everywhere").unwrap();
    if let Err(e) = (case.run)(&d) {
        panic!("{e}");
    }
}
