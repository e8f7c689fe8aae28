//! The conformance cases of `gpu_mpi_check`, one test per case and
//! backend (`testgen!`: on the emulator always, on the GPU where one is
//! present), so that every failing rule shows by name and backend.

use gpu_mpi::Device;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check::{cases, find_case, testgen};

/// Runs conformance case `name` on `backend`.
fn run(backend: Backend, name: &str) {
    let case = find_case(name).unwrap_or_else(|| panic!("no conformance case named {name}"));
    if let Err(e) = (case.run)(&backend.device()) {
        panic!("{name} on {} failed:\n{e}", backend.name());
    }
}

/// One test body per case of the list, instantiated per backend
/// (`p2p_ring_send_receive::cpu`, `p2p_ring_send_receive::cuda`).
macro_rules! conformance_tests {
    ($($test:ident: $name:literal => $run:path,)*) => {
        $(
            fn $test(backend: Backend) {
                run(backend, $name);
            }
            testgen!($test);
        )*

        #[test]
        fn every_case_has_a_test() {
            let tested = [$($name),*];
            let listed: Vec<&str> = cases().iter().map(|c| c.name).collect();
            assert_eq!(listed, tested, "cases() and the tests' list differ");
            let mut unique = listed.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), listed.len(), "two cases share a name");
        }
    };
}

// The list lives beside the cases (gpu_mpi_check::for_each_case).
gpu_mpi_check::for_each_case!(conformance_tests);

/// One message of one byte more than a slot, streamed (`force_streaming`),
/// between two ranks: rank 1 must receive rank 0's 257 bytes. The smallest
/// case of the streamed path that `p2p/truncation_streamed` and
/// `p2p/large_streamed` exercise at size.
fn streamed_message_between_two_ranks(backend: Backend) {
    use gpu_mpi::WorldSpec;
    use gpu_mpi_check_kernels::p2p::{LARGE_PAIRS, LARGE_STRIDE, SEMANTICS_LARGE};
    use gpu_mpi_check_kernels::{pattern_byte, CaseArgs};
    const LEN: usize = 257;
    let device = backend.device();
    let out = device.alloc_zeroed::<u32>(2 * LARGE_STRIDE as usize).unwrap();
    let data = device.alloc_zeroed::<u8>(4 * LEN).unwrap();
    let cells = device.alloc_zeroed::<u32>(1).unwrap();
    let args = CaseArgs {
        case: LARGE_PAIRS,
        param: LEN as u32,
        param2: 0,
        stride: LARGE_STRIDE,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let spec = WorldSpec::ranks(2).force_streaming(true);
    device.launch(&SEMANTICS_LARGE, &args, &spec).unwrap();
    let bytes = device.download(&data).unwrap();
    // Rank 1's receive region follows its send region.
    let received = &bytes[3 * LEN..4 * LEN];
    let expected: Vec<u8> = (0..LEN).map(|i| pattern_byte(0, i)).collect();
    assert_eq!(received, &expected[..], "rank 1 did not receive rank 0's bytes");
}
testgen!(streamed_message_between_two_ranks);

// Emulator only: `local_stacks` is an option of the emulator that makes it
// stage as the GPU does (on the GPU the cases above already take that path).

/// The collective cases on an emulator whose ranks' stacks are local memory,
/// as on the GPU (`CpuOptions::local_stacks`): a root buffer on the stack
/// (every case's buffers are) can no longer be reached by the other ranks,
/// so gather and scatter stage the parts through the world's cells, the
/// path a GPU takes for them; the plain emulator copies them directly.
#[test]
fn collective_cases_with_local_stacks() {
    let device = Device::cpu_with(gpu_mpi::CpuOptions {
        local_stacks: true,
        ..Default::default()
    });
    for name in [
        "collective/gather_scatter",
        "collective/all_gather",
        "collective/datatype_views",
        "errors/collective_arguments",
        "errors/collective_count_mismatch",
        "deadlock/skipped_collective_fails_everywhere",
    ] {
        let case = find_case(name).unwrap_or_else(|| panic!("no conformance case named {name}"));
        if let Err(e) = (case.run)(&device) {
            panic!("{name} with local stacks failed:\n{e}");
        }
    }
}
