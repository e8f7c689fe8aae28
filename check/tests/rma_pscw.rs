//! Post, start, complete and wait (MPI 4.1 §12.5.2) on each backend
//! (`testgen!`). The kernels are in check/kernels/src/rma_pscw.rs.

use gpu_mpi::device::ErrorClass;
use gpu_mpi::WorldSpec;
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::rma_pscw::*;

fn run(
    backend: Backend,
    kernel: &'static gpu_mpi::device::Kernel<PscwArgs>,
    ranks: u32,
    slots: u32,
    rounds: u32,
) -> Vec<u32> {
    let d = backend.device();
    let out = d.alloc_zeroed::<u32>((ranks * slots) as usize).unwrap();
    let args = PscwArgs {
        out: out.slice(),
        slots,
        rounds,
    };
    d.launch(
        kernel,
        &args,
        &WorldSpec::ranks(ranks).windows(2).window_bytes(64),
    )
    .unwrap();
    d.download(&out).unwrap()
}

fn a_ring_exchange_by_post_and_start_sees_every_round(backend: Backend) {
    for ranks in [2, 3, 40] {
        let rounds = 12;
        let out = run(backend, &PSCW_RING, ranks, 1, rounds);
        assert!(out.iter().all(|&g| g == rounds), "{ranks} ranks: {out:?}");
    }
}
testgen!(a_ring_exchange_by_post_and_start_sees_every_round);

fn every_origin_completes_into_one_exposure(backend: Backend) {
    let ranks = 33;
    let out = run(backend, &PSCW_GATHER, ranks, 2, 0);
    assert_eq!(out[0], (1..ranks).sum::<u32>(), "the accumulated ranks");
    for r in 1..ranks as usize {
        assert_eq!(
            out[2 * r],
            ErrorClass::RmaSync as u32,
            "rank {r}: a put outside the group"
        );
    }
}
testgen!(every_origin_completes_into_one_exposure);
