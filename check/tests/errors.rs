//! Every error class, produced by a kernel, and the message it reads as (on
//! the emulator always, on the GPU where one is present: `testgen!`);
//! deadlock and livelock reports and host-side refusals (on the emulator).
//!
//! Device errors surface as `HostError::RankFailed { errors, .. }` (the
//! ranks' result records), deadlocks as `HostError::Deadlock(report)`.

use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::{Error, ErrorClass, Status};
use gpu_mpi::{BlockedState, DeadlockReport, Device, HostError, WorldSpec};
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check::{launch_fault, testgen, FAULT_OUT_WORDS};
use gpu_mpi_check_kernels::faults::*;
use gpu_mpi_check_kernels::{CaseArgs, Recorder};
use std::time::Duration;

/// Runs fault scenario `case` in a world of `spec` on `backend` and returns
/// the launch's error.
fn fault(backend: Backend, case: u32, param: u32, spec: WorldSpec) -> HostError {
    match launch_fault(&backend.device(), case, param, &spec) {
        Ok(r) => panic!("fault case {case} succeeded: {r:?}"),
        Err(e) => e,
    }
}

/// The failed ranks of a `RankFailed`, with the error's message.
fn failed(e: HostError) -> (Vec<(u32, Error)>, String) {
    let text = e.to_string();
    match e {
        HostError::RankFailed { errors, .. } => (errors, text),
        other => panic!("expected RankFailed, got {other:?}"),
    }
}

fn deadlock(e: HostError) -> (DeadlockReport, String) {
    let text = e.to_string();
    match e {
        HostError::Deadlock(report) => (report, text),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

fn world(n: u32) -> WorldSpec {
    WorldSpec::ranks(n)
}

fn invalid_rank(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_RANK, 0, world(4)));
    assert_eq!(errors, vec![(1, Error::InvalidRank { rank: 4, size: 4 })]);
    assert_eq!(errors[0].1.class(), ErrorClass::Rank);
    assert_eq!(
        text,
        "1 of 4 ranks failed: rank 1: MPI_ERR_RANK: rank 4 is not in a world of 4 ranks"
    );
}
testgen!(invalid_rank);

fn invalid_tag(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_TAG, 0, world(2)));
    assert_eq!(errors, vec![(0, Error::InvalidTag { tag: -5 })]);
    assert_eq!(errors[0].1.class(), ErrorClass::Tag);
    assert!(
        text.ends_with("rank 0: MPI_ERR_TAG: tag -5 is outside 0..=2147483647"),
        "{text}"
    );
}
testgen!(invalid_tag);

fn truncation(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_TRUNCATE, 0, world(2)));
    assert_eq!(errors.len(), 1, "{text}");
    let (rank, e) = errors[0];
    assert_eq!(rank, 1);
    assert_eq!(e.class(), ErrorClass::Truncate);
    match e {
        Error::Truncate {
            status,
            capacity_bytes,
        } => {
            assert_eq!(
                (status.source_rank(), status.tag(), status.bytes(), capacity_bytes),
                (0, 4, 32, 8)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        text.ends_with(
            "rank 1: MPI_ERR_TRUNCATE: message of 32 bytes from rank 0 (tag 4) \
             truncated to the receive buffer's 8 bytes"
        ),
        "{text}"
    );
}
testgen!(truncation);

fn type_mismatch(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_TYPE, 0, world(2)));
    assert_eq!(errors.len(), 1, "{text}");
    assert_eq!(errors[0].0, 1);
    assert_eq!(errors[0].1.class(), ErrorClass::Type);
    assert!(
        text.ends_with(
            "rank 1: MPI_ERR_TYPE: message from rank 0 (tag 6) has datatype MPI_DOUBLE, \
             the receive asked for MPI_INT32_T"
        ),
        "{text}"
    );
}
testgen!(type_mismatch);

fn count_mismatch_fails_every_rank_without_a_hang(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_COUNT, 0, world(6).block_dim(3)));
    assert_eq!(errors.len(), 6, "{text}");
    for (i, (rank, e)) in errors.iter().enumerate() {
        assert_eq!(*rank, i as u32);
        assert_eq!(e.class(), ErrorClass::Count, "{text}");
    }
    // Ranks that returned the same error print as one group.
    assert_eq!(
        text,
        "6 of 6 ranks failed: ranks 0-4: MPI_ERR_COUNT: this rank passed 1 elements, the collective's \
         root passed 1; rank 5: MPI_ERR_COUNT: this rank passed 2 elements, the collective's root passed 1"
    );
}
testgen!(count_mismatch_fails_every_rank_without_a_hang);

/// `Error::CountMismatch::expected` is documented as the count the root (or
/// rank 0) passed; here rank 0 passed 1.
fn count_mismatch_names_the_roots_count(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_COUNT, 0, world(4)));
    for (rank, e) in &errors {
        let count = if *rank == 3 { 2 } else { 1 };
        assert_eq!(*e, Error::CountMismatch { count, expected: 1 }, "{text}");
    }
}
testgen!(count_mismatch_names_the_roots_count);

/// The mismatching rank is the second warp's last lane in the second of two
/// blocks: the agreement must fold every warp's key, not only the first's.
fn gather_count_mismatch_in_a_later_warp_fails_every_rank(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_GATHER_COUNT, 0, world(128).block_dim(64)));
    let ranks: Vec<u32> = errors.iter().map(|(rank, _)| *rank).collect();
    assert_eq!(ranks, (0..128).collect::<Vec<u32>>(), "{text}");
    for (rank, e) in &errors {
        let count = if *rank == 127 { 2 } else { 1 };
        assert_eq!(*e, Error::CountMismatch { count, expected: 1 }, "{text}");
    }
}
testgen!(gather_count_mismatch_in_a_later_warp_fails_every_rank);

fn buffer_too_large(backend: Backend) {
    let (errors, text) = failed(fault(
        backend,
        FAULT_BUFFER,
        1024,
        world(2).max_message_bytes(1024),
    ));
    assert_eq!(
        errors,
        vec![(
            0,
            Error::BufferTooLarge {
                bytes: 1025,
                limit: 1024
            }
        )]
    );
    assert!(
        text.ends_with(
            "rank 0: MPI_ERR_BUFFER: 1025 bytes exceed the world's configured limit of 1024 bytes"
        ),
        "{text}"
    );
}
testgen!(buffer_too_large);

fn invalid_root_on_every_rank(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_ROOT, 0, world(4)));
    assert_eq!(errors.len(), 4);
    assert!(errors
        .iter()
        .all(|(_, e)| *e == Error::InvalidRoot { root: 4, size: 4 }));
    assert_eq!(errors[0].1.class(), ErrorClass::Root);
    assert_eq!(
        text,
        "4 of 4 ranks failed: ranks 0-3: MPI_ERR_ROOT: root 4 is not in a world of 4 ranks"
    );
}
testgen!(invalid_root_on_every_rank);

fn invalid_operation_on_every_rank(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_OP, 0, world(3)));
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[0].1.class(), ErrorClass::Op);
    assert_eq!(
        text,
        "3 of 3 ranks failed: ranks 0-2: MPI_ERR_OP: operation MPI_BXOR is not defined for datatype MPI_DOUBLE"
    );
}
testgen!(invalid_operation_on_every_rank);

fn out_of_bounds_argument(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_ARG, 0, world(2)));
    let n = FAULT_OUT_WORDS as u32;
    assert_eq!(errors, vec![(0, Error::OutOfBounds { index: n, len: n })]);
    assert_eq!(errors[0].1.class(), ErrorClass::Arg);
    assert!(
        text.ends_with(&format!(
            "rank 0: MPI_ERR_ARG: index {n} is outside a slice of {n} elements"
        )),
        "{text}"
    );
}
testgen!(out_of_bounds_argument);

fn one_request_more_than_a_scope_holds_is_err_request(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_REQUESTS, 0, world(2)));
    let limit = gpu_mpi::device::request::MAX_REQUESTS as u32;
    assert_eq!(errors, vec![(0, Error::RequestLimit { limit })]);
    assert_eq!(errors[0].1.class(), ErrorClass::Request);
    assert!(
        text.contains(&format!(
            "MPI_ERR_REQUEST: more than {limit} requests active in one request scope"
        )),
        "{text}"
    );
}
testgen!(one_request_more_than_a_scope_holds_is_err_request);

fn an_application_error_reaches_the_host_with_its_code_and_ranks_group(backend: Backend) {
    let (errors, text) = failed(fault(backend, FAULT_APPLICATION, 42, world(8)));
    let e = Error::application(42);
    assert_eq!(errors, [1, 3, 5, 7].map(|r| (r, e)).to_vec());
    assert_eq!(e, Error::Application { code: 42 });
    assert_eq!(e.class(), ErrorClass::Other);
    assert_eq!(
        text,
        "4 of 8 ranks failed: ranks 1, 3, 5, 7: MPI_ERR_OTHER: the kernel failed with application code 42"
    );
}
testgen!(an_application_error_reaches_the_host_with_its_code_and_ranks_group);

// Emulator only, to `timeout_aborts_the_other_waiting_ranks`: exact
// deadlock reports. The emulator sees every rank blocked and reports at once;
// a GPU only ends a deadlock by a wait bound, and which ranks time out rather
// than give up depends on its timing (the conformance cases `deadlock/*`
// check what holds there too, on both backends).

#[test]
fn unmatched_receive_is_reported_with_rank_operation_peer_and_tag() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_DEADLOCK_RECEIVE, 0, world(2)));
    assert_eq!(
        report.state_of(0),
        Some(BlockedState::Waiting {
            operation: Call::Receive as u32,
            peer: 1,
            tag: 7
        })
    );
    assert_eq!(report.state_of(1), Some(BlockedState::Exited));
    assert_eq!(
        text,
        "deadlock: rank 0: receive(source 1, tag 7); rank 1: exited\n\
         waiting receives: rank 0: receive(source 1, tag 7)\n\
         hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)"
    );
}

#[test]
fn rank_that_exits_before_a_barrier_shows_as_exited() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_EXIT_BEFORE_BARRIER, 0, world(4)));
    assert!(report.state_of(0).is_some_and(|s| s.is_exited()), "{text}");
    for r in 1..4 {
        let s = report.state_of(r).unwrap();
        assert!(!s.is_exited(), "rank {r} should still wait: {text}");
    }
    assert!(text.contains("rank 0: exited"), "{text}");
    assert!(text.starts_with("deadlock: ranks 1-3: "), "{text}");
}

#[test]
fn rank_that_exits_before_a_barrier_across_blocks() {
    let (report, text) = deadlock(fault(
        Backend::Cpu,
        FAULT_EXIT_BEFORE_BARRIER,
        0,
        world(6).block_dim(2),
    ));
    assert_eq!(report.state_of(0), Some(BlockedState::Exited), "{text}");
    assert_eq!(report.blocked().count(), 5, "{text}");
}

#[test]
fn two_large_sends_to_each_other_deadlock_and_both_show() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_SEND_SEND, 1024, world(2)));
    for (r, peer) in [(0u32, 1), (1, 0)] {
        assert_eq!(
            report.state_of(r),
            Some(BlockedState::Waiting {
                operation: Call::Send as u32,
                peer,
                tag: 3
            }),
            "{text}"
        );
    }
    assert_eq!(
        text,
        "deadlock: rank 0: send(dest 1, tag 3); rank 1: send(dest 0, tag 3)\n\
         unreceived messages: rank 0 -> rank 1 (tag 3, 1024 bytes, rendezvous); \
         rank 1 -> rank 0 (tag 3, 1024 bytes, rendezvous)\n\
         hint: ranks 0 and 1 both send to each other first, with messages too large to buffer \
         (1024 bytes each; a slot holds 256): use send_receive, or order the calls so that one \
         of them receives first"
    );
}

#[test]
fn receives_from_any_source_with_nobody_sending() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_RECEIVE_ANY, 0, world(40).block_dim(8)));
    assert_eq!(report.blocked().count(), 40);
    assert_eq!(
        text,
        "deadlock: ranks 0-39: receive(source any, tag 2)\n\
         waiting receives: ranks 0-39: receive(source any, tag 2)"
    );
}

#[test]
fn a_receive_from_any_source_whose_senders_all_exited_gets_a_hint() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_RECEIVE_ANY, 1, world(4)));
    assert_eq!(report.blocked().count(), 1);
    assert_eq!(
        text,
        "deadlock: rank 0: receive(source any, tag 2); ranks 1-3: exited\n\
         waiting receives: rank 0: receive(source any, tag 2)\n\
         hint: rank 0 waits for a message from any source, and every other rank has exited \
         with no message left for it"
    );
}

/// Two ranks return `MPI_ERR_BUFFER` while the others wait in an
/// all-to-all: the report names what they returned, and the hint blames
/// the error, not the order of the collectives.
#[test]
fn ranks_that_returned_an_error_are_named_with_it_and_the_hint_blames_it() {
    let (report, text) = deadlock(fault(
        Backend::Cpu,
        FAULT_ERROR_BEFORE_ALL_TO_ALL,
        1024,
        world(8).max_message_bytes(1024),
    ));
    let error = Error::BufferTooLarge {
        bytes: 1025,
        limit: 1024,
    };
    for r in [0, 7] {
        let state = report.state_of(r).unwrap();
        assert_eq!(state, BlockedState::Returned { error }, "{text}");
        assert!(state.is_exited());
        assert_eq!(state.returned(), Some(error));
    }
    for r in 1..7 {
        assert_eq!(
            report.state_of(r).unwrap().operation(),
            Some(Call::AllToAll),
            "{text}"
        );
    }
    let returned = "returned MPI_ERR_BUFFER (1025 bytes exceed the world's configured limit of 1024 bytes)";
    assert_eq!(
        text,
        format!(
            "deadlock: ranks 1-6: all_to_all; rank 0: {returned}; rank 7: {returned}\n\
             hint: ranks 0, 7 returned MPI_ERR_BUFFER while ranks 1-6 wait in all_to_all: \
             the error left them waiting"
        )
    );
    assert!(
        !text.contains("every rank must call the same collectives"),
        "{text}"
    );
}

/// Ranks that return `MPI_ERR_REQUEST` (a third outstanding non-blocking
/// collective) while rank 0 waits in a barrier: one group, the message
/// naming the real limit, and a hint that blames the error.
#[test]
fn ranks_that_hit_the_outstanding_collectives_limit_are_one_group() {
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_IMMEDIATE_LIMIT, 0, world(64)));
    let error = Error::ImmediateLimit { limit: 2 };
    for r in 1..64 {
        assert_eq!(
            report.state_of(r),
            Some(BlockedState::Returned { error }),
            "{text}"
        );
    }
    assert_eq!(
        text,
        "deadlock: rank 0: barrier; ranks 1-63: returned MPI_ERR_REQUEST (more than 2 non-blocking \
         collectives outstanding on one communicator: complete one (wait or test) before starting \
         another)\n\
         hint: ranks 1-63 returned MPI_ERR_REQUEST while rank 0 waits in barrier: the error left it waiting"
    );
}

/// With a timeout (the GPU's way to end a deadlock) the waiting rank times
/// out with `MPI_ERR_TIMEOUT`, aborts the world, and the host still reports
/// a deadlock naming what it waited for.
#[test]
fn timeout_ends_a_deadlock() {
    let spec = world(2).timeout(Duration::from_millis(200));
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_DEADLOCK_RECEIVE, 0, spec));
    assert_eq!(
        report.state_of(0),
        Some(BlockedState::TimedOut {
            operation: Call::Receive as u32,
            peer: 1,
            tag: 7
        }),
        "{text}"
    );
    assert_eq!(
        text,
        "deadlock: rank 0: timed out in receive(source 1, tag 7); rank 1: exited\n\
         waiting receives: rank 0: timed out in receive(source 1, tag 7)\n\
         hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)"
    );
}

/// Every rank waits; the first to time out aborts the world and the others
/// give up with `MPI_ERR_ABORTED`.
#[test]
fn timeout_aborts_the_other_waiting_ranks() {
    let spec = world(3).timeout(Duration::from_millis(200));
    let (report, text) = deadlock(fault(Backend::Cpu, FAULT_RECEIVE_ANY, 0, spec));
    let states: Vec<_> = (0..3).map(|r| report.state_of(r).unwrap()).collect();
    let wait = (Call::Receive as u32, -1, 2);
    let timed_out = states
        .iter()
        .filter(|s| matches!(s, BlockedState::TimedOut { operation, peer, tag } if (*operation, *peer, *tag) == wait))
        .count();
    let aborted = states
        .iter()
        .filter(|s| matches!(s, BlockedState::Aborted { operation, peer, tag } if (*operation, *peer, *tag) == wait))
        .count();
    assert_eq!((timed_out, aborted), (1, 2), "{text}");
    assert!(text.contains("timed out in receive(source any, tag 2)"), "{text}");
    assert!(
        text.contains("gave up in receive(source any, tag 2) (world aborted)"),
        "{text}"
    );
}

// Emulator only: these two launch `WHO`, a kernel of this file (not in the
// conformance crate's PTX), and `max_ranks` is the emulator's own.

#[test]
fn invalid_world_configuration_is_refused() {
    let device = Device::cpu();
    let out = device.alloc_zeroed::<u32>(1).unwrap();
    let e = device
        .launch(&WHO, &out.slice(), &WorldSpec::ranks(4).slot_bytes(100))
        .unwrap_err();
    assert!(matches!(e, HostError::Config(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "invalid world configuration: slot_bytes 100 is not a positive multiple of 64 at most 1073741824"
    );
    let e = device
        .launch(&WHO, &out.slice(), &WorldSpec::ranks(10).block_dim(4))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid world configuration: 10 ranks do not split into blocks of 4"
    );
}

#[test]
fn world_too_large_to_be_co_resident_is_refused() {
    let device = Device::cpu();
    let out = device.alloc_zeroed::<u32>(1).unwrap();
    let fits = device.max_ranks(1);
    let e = device
        .launch(&WHO, &out.slice(), &WorldSpec::ranks(fits + 1).block_dim(1))
        .unwrap_err();
    match &e {
        HostError::NotCoResident {
            requested, fits: f, ..
        } => assert_eq!((*requested, *f), (fits + 1, fits)),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("cannot be co-resident"), "{e}");
}

gpu_mpi::device::kernel! {
    /// Does nothing (for launches that must be refused before they run).
    static WHO = fn who(_world: &gpu_mpi::device::World, _out: &gpu_mpi::device::GlobalSlice<u32>) -> Result<(), Error> {
        Ok(())
    }
}

// Values of the error types, not of a backend: once.

/// Every class has its MPI name, and every error survives the trip through
/// a result record (class and detail words) with the same message.
#[test]
fn every_class_round_trips_and_reads_well() {
    let status = statuses();
    let cases: Vec<(Error, &str, &str)> = vec![
        (
            Error::InvalidRank { rank: 9, size: 4 },
            "MPI_ERR_RANK",
            "rank 9 is not in a world of 4 ranks",
        ),
        (
            Error::InvalidTag { tag: -5 },
            "MPI_ERR_TAG",
            "tag -5 is outside 0..=2147483647",
        ),
        (
            Error::Truncate {
                status,
                capacity_bytes: 8,
            },
            "MPI_ERR_TRUNCATE",
            "message of 32 bytes from rank 0 (tag 4) truncated to the receive buffer's 8 bytes",
        ),
        (
            Error::CountMismatch {
                count: 2,
                expected: 1,
            },
            "MPI_ERR_COUNT",
            "this rank passed 2 elements, the collective's root passed 1",
        ),
        (
            Error::BufferTooLarge { bytes: 10, limit: 8 },
            "MPI_ERR_BUFFER",
            "10 bytes exceed the world's configured limit of 8 bytes",
        ),
        (
            Error::InvalidRoot { root: -1, size: 3 },
            "MPI_ERR_ROOT",
            "root -1 is not in a world of 3 ranks",
        ),
        (
            Error::InvalidOperation { op: 9, datatype: 9 },
            "MPI_ERR_OP",
            "operation MPI_LOR is not defined for datatype MPI_FLOAT",
        ),
        (
            Error::Timeout {
                operation: Call::Receive as u32,
                peer: 1,
                tag: 7,
            },
            "MPI_ERR_TIMEOUT",
            "timed out in receive(source 1, tag 7)",
        ),
        (
            Error::Aborted { by_rank: 3 },
            "MPI_ERR_ABORTED",
            "world aborted by rank 3",
        ),
        (
            Error::Intern,
            "MPI_ERR_INTERN",
            "world memory is not a gpu-mpi world of this version",
        ),
        (
            Error::OutOfBounds { index: 5, len: 5 },
            "MPI_ERR_ARG",
            "index 5 is outside a slice of 5 elements",
        ),
        (
            Error::CommunicatorLimit { limit: 4 },
            "MPI_ERR_COMM",
            "the world holds 4 communicators (across processes: the share of the process of the creation's rank 0) and all are in use",
        ),
        (
            Error::ImmediateLimit { limit: 2 },
            "MPI_ERR_REQUEST",
            "more than 2 non-blocking collectives outstanding on one communicator: complete one \
             (wait or test) before starting another",
        ),
        (
            Error::application(7),
            "MPI_ERR_OTHER",
            "the kernel failed with application code 7",
        ),
        (
            Error::ScratchExhausted {
                requested: 4096,
                available: 128,
            },
            "MPI_ERR_NO_MEM",
            "4096 bytes of scratch asked for, 128 left of this rank's scratch (WorldSpec::scratch_bytes)",
        ),
        (
            Error::ScratchInUse,
            "MPI_ERR_NO_MEM",
            "this rank's scratch is already taken (one Scratch per rank at a time)",
        ),
        (
            Error::AcrossProcesses {
                operation: Call::WinCreate as u32,
            },
            "MPI_ERR_OTHER",
            "WinCreate in a world across processes: it does not cross processes yet (docs/distributed.md)",
        ),
    ];
    for (e, name, detail) in cases {
        assert_eq!(e.class().mpi_name(), name);
        assert_eq!(e.to_string(), format!("{name}: {detail}"));
        let back = Error::from_words(e.to_words()).expect("an error record");
        assert_eq!(back.class(), e.class());
        assert_eq!(back.to_string(), e.to_string());
        assert_eq!(ErrorClass::from_code(e.class() as u32), Some(e.class()));
    }
    assert_eq!(Error::from_words([0; 5]), None);
    assert_eq!(ErrorClass::Success.mpi_name(), "MPI_SUCCESS");
    assert_eq!(ErrorClass::from_code(999), None);
}

/// A status with source 0, tag 4, 32 bytes, as a truncated receive reports
/// it (statuses have no public constructor: take one from a real receive).
fn statuses() -> Status {
    let (errors, _) = failed(fault(Backend::Cpu, FAULT_TRUNCATE, 0, world(2)));
    match errors[0].1 {
        Error::Truncate { status, .. } => status,
        other => panic!("{other:?}"),
    }
}

// Emulator only: `OVERFLOW` is a kernel of this file (not in the PTX).

/// `Recorder` (used by every semantic kernel) refuses to write past a rank's
/// region instead of corrupting the next rank's.
#[test]
fn recorder_stays_in_its_region() {
    let device = Device::cpu();
    let out = device.alloc_zeroed::<u32>(4).unwrap();
    let data = device.alloc_zeroed::<u8>(8).unwrap();
    let cells = device.alloc_zeroed::<u32>(1).unwrap();
    let args = CaseArgs {
        case: 0,
        param: 0,
        param2: 0,
        stride: 2,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let (errors, _) = failed(device.launch(&OVERFLOW, &args, &WorldSpec::ranks(2)).unwrap_err());
    assert_eq!(
        errors,
        vec![
            (0, Error::OutOfBounds { index: 2, len: 2 }),
            (1, Error::OutOfBounds { index: 4, len: 4 })
        ]
    );
    assert_eq!(device.download(&out).unwrap(), vec![1, 2, 1, 2]);
}

gpu_mpi::device::kernel! {
    /// Writes 3 words into a 2-word region.
    static OVERFLOW = fn overflow(world: &gpu_mpi::device::World, args: &CaseArgs) -> Result<(), Error> {
        use gpu_mpi::device::traits::*;
        let mut rec = Recorder::new(args, world.rank());
        rec.words(&[1, 2, 3])
    }
}

// Emulator only: livelock reports come from the emulator's scheduler, which
// sees every rank spinning; a GPU would spin until its watchdog.

/// Runs `f` on a thread and fails if it does not return within `limit`: a
/// regression to a silent emulator hang fails instead of hanging CI.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the emulator did not return within {limit:?}"))
}

#[test]
fn spinning_on_immediate_probe_is_a_livelock_not_a_hang() {
    for spec in [world(2), world(3).block_dim(1), world(1)] {
        let e = within(Duration::from_secs(120), move || {
            fault(Backend::Cpu, FAULT_SPIN_PROBE, 0, spec)
        });
        let (report, text) = deadlock(e);
        assert!(text.starts_with("livelock: "), "{text}");
        let n = report.blocked().count() as u32;
        for r in 0..n {
            assert_eq!(
                report.state_of(r),
                Some(BlockedState::Waiting {
                    operation: Call::ImmediateProbe as u32,
                    peer: ((r + 1) % n) as i32,
                    tag: 9
                }),
                "{text}"
            );
        }
        assert!(text.contains("immediate_probe(source "), "{text}");
    }
}

/// A blocking call that fails its argument checks is progress of its
/// rank (docs/emulator.md, livelocks): the failed probes before it and
/// after it are not one spin of more than `SPIN_QUIET_AFTER`.
#[test]
fn a_failed_blocking_call_between_spins_is_progress() {
    use gpu_mpi::device::abi::polling::SPIN_QUIET_AFTER;
    let param = SPIN_QUIET_AFTER / 2 + SPIN_QUIET_AFTER / 4;
    let r = within(Duration::from_secs(120), move || {
        launch_fault(&Backend::Cpu.device(), FAULT_SPIN_AROUND_ERROR, param, &world(2))
    });
    if let Err(e) = r {
        panic!("expected the launch to succeed: {e}");
    }
}

#[test]
fn spinning_on_test_is_a_livelock_naming_the_requests() {
    let e = within(Duration::from_secs(120), || {
        fault(Backend::Cpu, FAULT_SPIN_TEST, 0, world(3))
    });
    let (report, text) = deadlock(e);
    assert!(text.starts_with("livelock: "), "{text}");
    assert!(
        text.contains("rank 0: test of receive(source 1, tag 4)"),
        "{text}"
    );
    assert!(text.contains("ranks 1-2: test over 1 requests"), "{text}");
    assert_eq!(
        report.state_of(1),
        Some(BlockedState::Waiting {
            operation: Call::TestMany as u32,
            peer: -2,
            tag: 1
        })
    );
}
