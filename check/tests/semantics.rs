//! The conformance cases of `gpu_mpi_check`, run on the CPU emulator:
//! one test per case, so that every failing rule shows by name.

use gpu_mpi::Device;
use gpu_mpi_check::{cases, Case};

fn run(name: &str) {
    let case: Case = cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no conformance case named {name}"));
    if let Err(e) = (case.run)(&Device::cpu()) {
        panic!("{name} failed:\n{e}");
    }
}

macro_rules! conformance_tests {
    ($($(#[$attr:meta])* $test:ident => $name:literal,)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $test() {
                run($name);
            }
        )*

        #[test]
        fn every_case_has_a_test() {
            let tested = [$($name),*];
            for c in cases() {
                assert!(tested.contains(&c.name), "conformance case {} has no test in tests/semantics.rs", c.name);
            }
        }
    };
}

conformance_tests! {
    p2p_all_to_one_any_source => "p2p/all_to_one_any_source",
    p2p_all_to_one_specific_source => "p2p/all_to_one_specific_source",
    p2p_ring_send_receive => "p2p/ring_send_receive",
    p2p_pairs => "p2p/pairs",
    p2p_all_to_all_any_source => "p2p/all_to_all_any_source",
    p2p_send_to_self => "p2p/send_to_self",
    p2p_zero_length => "p2p/zero_length",
    p2p_null_process => "p2p/null_process",
    p2p_send_receive_replace => "p2p/send_receive_replace",
    p2p_probe_then_receive => "p2p/probe_then_receive",
    p2p_probe_any_source => "p2p/probe_any_source",
    p2p_truncation => "p2p/truncation",

    p2p_truncation_streamed => "p2p/truncation_streamed",
    p2p_large_direct => "p2p/large_direct",

    p2p_large_streamed => "p2p/large_streamed",
    p2p_non_overtaking_any_tag => "p2p/non_overtaking_any_tag",
    p2p_non_overtaking_any_source => "p2p/non_overtaking_any_source",
    p2p_non_overtaking_any_source_by_tag => "p2p/non_overtaking_any_source_by_tag",
    p2p_datatype_matching => "p2p/datatype_matching",
    datatypes_ring_column => "datatypes/ring_column",
    datatypes_large_streamed => "datatypes/large_streamed",
    errors_datatype_views => "errors/datatype_views",
    collective_datatype_views => "collective/datatype_views",
    nonblocking_wait_any_pre_posted => "nonblocking/wait_any_pre_posted",
    nonblocking_all_to_all_posted_first => "nonblocking/all_to_all_posted_first",
    nonblocking_self_send_then_probe => "nonblocking/self_send_then_probe",
    nonblocking_null_and_empty_sets => "nonblocking/null_and_empty_sets",
    nonblocking_matched_probe => "nonblocking/matched_probe",
    nonblocking_synchronous_send => "nonblocking/synchronous_send",
    nonblocking_arrays_as_buffers => "nonblocking/arrays_as_buffers",
    nonblocking_blocking_calls_among_requests => "nonblocking/blocking_calls_among_requests",
    errors_invalid_arguments => "errors/invalid_arguments",
    collective_barrier => "collective/barrier",
    collective_broadcast => "collective/broadcast",
    collective_broadcast_every_root => "collective/broadcast_every_root",
    collective_reduce_u8 => "collective/reduce_u8",
    collective_reduce_i8 => "collective/reduce_i8",
    collective_reduce_u16 => "collective/reduce_u16",
    collective_reduce_i16 => "collective/reduce_i16",
    collective_reduce_u32 => "collective/reduce_u32",
    collective_reduce_i32 => "collective/reduce_i32",
    collective_reduce_u64 => "collective/reduce_u64",
    collective_reduce_i64 => "collective/reduce_i64",
    collective_reduce_f32 => "collective/reduce_f32",
    collective_reduce_f64 => "collective/reduce_f64",
    collective_non_commutative_user_op => "collective/non_commutative_user_op",
    errors_collective_count_mismatch => "errors/collective_count_mismatch",
    collective_gather_scatter => "collective/gather_scatter",
    collective_all_gather => "collective/all_gather",
    collective_all_to_all => "collective/all_to_all",
    collective_scan => "collective/scan",
    collective_reduce_scatter => "collective/reduce_scatter",
    collective_reduce_in_place => "collective/reduce_in_place",
    errors_collective_arguments => "errors/collective_arguments",
    deadlock_timeout_names_the_wait => "deadlock/timeout_names_the_wait",
    deadlock_send_send_times_out => "deadlock/send_send_times_out",
    deadlock_timeout_aborts_every_waiting_rank => "deadlock/timeout_aborts_every_waiting_rank",
    deadlock_skipped_collective_fails_everywhere => "deadlock/skipped_collective_fails_everywhere",
}

/// One message of one byte more than a slot, streamed (`force_streaming`),
/// between two ranks: rank 1 must receive rank 0's 257 bytes. The smallest
/// case of the streamed path that `p2p/truncation_streamed` and
/// `p2p/large_streamed` exercise at size.
#[test]
fn streamed_message_between_two_ranks() {
    use gpu_mpi::WorldSpec;
    use gpu_mpi_check_kernels::p2p::{LARGE_PAIRS, LARGE_STRIDE, SEMANTICS_LARGE};
    use gpu_mpi_check_kernels::{pattern_byte, CaseArgs};
    const LEN: usize = 257;
    let device = Device::cpu();
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
        let case: Case = cases()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no conformance case named {name}"));
        if let Err(e) = (case.run)(&device) {
            panic!("{name} with local stacks failed:\n{e}");
        }
    }
}
