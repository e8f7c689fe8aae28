//! One-sided communication (MPI 4.1 chapter 12) on each backend
//! (`testgen!`): windows, put, get, the accumulates, fences, locks and
//! notified access. The kernels are in check/kernels/src/rma.rs.

use gpu_mpi::WorldSpec;
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::rma::*;

/// Launches `kernel` on `ranks` ranks and returns every rank's `slots` words.
fn run(
    backend: Backend,
    kernel: &'static gpu_mpi::device::Kernel<RmaArgs>,
    spec: WorldSpec,
    ranks: u32,
    slots: u32,
    param: u32,
) -> Vec<u32> {
    let d = backend.device();
    let out = d.alloc_zeroed::<u32>((ranks * slots) as usize).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        slots,
        param,
    };
    d.launch(kernel, &args, &spec).unwrap();
    d.download(&out).unwrap()
}

fn a_put_between_fences_reaches_the_next_rank(backend: Backend) {
    let ranks = 64;
    let out = run(
        backend,
        &RMA_RING_PUT,
        WorldSpec::ranks(ranks).windows(2).window_bytes(64),
        ranks,
        1,
        0,
    );
    for (r, &v) in out.iter().enumerate() {
        let prev = (r as u32 + ranks - 1) % ranks;
        assert_eq!(v, prev + 100, "rank {r}");
    }
}
testgen!(a_put_between_fences_reaches_the_next_rank);

fn fetch_and_op_counts_every_rank_once(backend: Backend) {
    let (ranks, n) = (48, 5);
    let out = run(
        backend,
        &RMA_COUNTER,
        WorldSpec::ranks(ranks).windows(2).window_bytes(64),
        ranks,
        2,
        n,
    );
    assert_eq!(out[1], ranks * n, "the counter");
    let top = out.iter().step_by(2).copied().max().unwrap();
    assert_eq!(top, ranks * n - 1, "some rank fetched the last value");
}
testgen!(fetch_and_op_counts_every_rank_once);
