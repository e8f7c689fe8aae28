//! The case registry: [`Case`], the conformance cases listed once
//! ([`for_each_case!`](crate::for_each_case!), [`cases`]), the planted cases
//! of the schedule explorer ([`planted_cases`]) and [`find_case`].

use crate::{chapter6, collective, datatypes, deadlock, nonblocking, p2p, planted, skip};
use gpu_mpi::Device;
use std::fmt;

/// One conformance case: a rule of the standard, checked on a device.
#[derive(Clone, Copy)]
pub struct Case {
    /// `group/rule`, e.g. `p2p/ring`.
    pub name: &'static str,
    /// Runs the case's kernels on the device and checks the results.
    pub run: fn(&Device) -> Result<(), String>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("name", &self.name).finish()
    }
}

/// Every conformance case, in the order of docs/semantics.md.
pub fn cases() -> Vec<Case> {
    macro_rules! case_list {
        ($($test:ident: $name:literal => $run:path,)*) => {
            vec![$(Case { name: $name, run: $run }),*]
        };
    }
    crate::for_each_case!(case_list)
}

/// The conformance cases, listed once: calls macro `$callback` with
/// `test_name: "group/rule" => function,` for every case, in the order of
/// docs/semantics.md. [`cases`] builds its list from it, and
/// check/tests/semantics.rs one test per case and backend; adding a case is
/// adding its line here. `test_name` is the name with `_` for `/`; the
/// functions are private to this crate (a test looks its case up by name).
#[macro_export]
macro_rules! for_each_case {
    ($callback:ident) => {
        $callback! {
            p2p_all_to_one_any_source: "p2p/all_to_one_any_source" => p2p::all_to_one_any,
            p2p_all_to_one_specific_source: "p2p/all_to_one_specific_source" => p2p::all_to_one_specific,
            p2p_ring_send_receive: "p2p/ring_send_receive" => p2p::ring,
            p2p_pairs: "p2p/pairs" => p2p::pairs,
            p2p_all_to_all_any_source: "p2p/all_to_all_any_source" => p2p::all_to_all,
            p2p_send_to_self: "p2p/send_to_self" => p2p::to_self,
            p2p_zero_length: "p2p/zero_length" => p2p::zero_length,
            p2p_null_process: "p2p/null_process" => p2p::null_process,
            p2p_send_receive_replace: "p2p/send_receive_replace" => p2p::replace,
            p2p_probe_then_receive: "p2p/probe_then_receive" => p2p::probe_pairs,
            p2p_probe_any_source: "p2p/probe_any_source" => p2p::probe_any_source,
            p2p_truncation: "p2p/truncation" => p2p::truncation,
            p2p_truncation_streamed: "p2p/truncation_streamed" => p2p::truncation_streamed,
            p2p_large_direct: "p2p/large_direct" => p2p::large_direct,
            p2p_large_streamed: "p2p/large_streamed" => p2p::large_streamed,
            p2p_non_overtaking_any_tag: "p2p/non_overtaking_any_tag" => p2p::order_any_tag,
            p2p_non_overtaking_any_source: "p2p/non_overtaking_any_source" => p2p::order_any_source,
            p2p_non_overtaking_any_source_by_tag: "p2p/non_overtaking_any_source_by_tag" => p2p::order_any_source_by_tag,
            p2p_non_overtaking_source_by_tag: "p2p/non_overtaking_source_by_tag" => p2p::order_source_by_tag,
            p2p_datatype_matching: "p2p/datatype_matching" => p2p::types,
            datatypes_ring_column: "datatypes/ring_column" => datatypes::ring_column,
            datatypes_large_streamed: "datatypes/large_streamed" => datatypes::large,
            errors_datatype_views: "errors/datatype_views" => datatypes::errors,
            collective_datatype_views: "collective/datatype_views" => datatypes::collectives,
            nonblocking_wait_any_pre_posted: "nonblocking/wait_any_pre_posted" => nonblocking::nb_wait_any,
            nonblocking_all_to_all_posted_first: "nonblocking/all_to_all_posted_first" => nonblocking::nb_all_to_all,
            nonblocking_self_send_then_probe: "nonblocking/self_send_then_probe" => nonblocking::nb_self_probe,
            nonblocking_null_and_empty_sets: "nonblocking/null_and_empty_sets" => nonblocking::nb_null_sets,
            nonblocking_matched_probe: "nonblocking/matched_probe" => nonblocking::nb_mprobe,
            nonblocking_synchronous_send: "nonblocking/synchronous_send" => nonblocking::nb_ssend,
            nonblocking_arrays_as_buffers: "nonblocking/arrays_as_buffers" => nonblocking::nb_arrays,
            nonblocking_blocking_calls_among_requests: "nonblocking/blocking_calls_among_requests" => nonblocking::nb_blocking_among_requests,
            nonblocking_synchronous_send_received_elsewhere: "nonblocking/synchronous_send_received_elsewhere" => nonblocking::nb_ssend_elsewhere,
            nonblocking_slots_return_during_waits: "nonblocking/slots_return_during_waits" => nonblocking::nb_slots_in_waits,
            nonblocking_polls_between_collectives: "nonblocking/polls_between_collectives" => nonblocking::nb_polls_between_collectives,
            errors_invalid_arguments: "errors/invalid_arguments" => p2p::arguments,
            collective_barrier: "collective/barrier" => collective::barrier,
            collective_broadcast: "collective/broadcast" => collective::broadcast_global,
            collective_broadcast_every_root: "collective/broadcast_every_root" => collective::broadcast_every_root,
            collective_reduce_u8: "collective/reduce_u8" => collective::reduce_u8,
            collective_reduce_i8: "collective/reduce_i8" => collective::reduce_i8,
            collective_reduce_u16: "collective/reduce_u16" => collective::reduce_u16,
            collective_reduce_i16: "collective/reduce_i16" => collective::reduce_i16,
            collective_reduce_u32: "collective/reduce_u32" => collective::reduce_u32,
            collective_reduce_i32: "collective/reduce_i32" => collective::reduce_i32,
            collective_reduce_u64: "collective/reduce_u64" => collective::reduce_u64,
            collective_reduce_i64: "collective/reduce_i64" => collective::reduce_i64,
            collective_reduce_f32: "collective/reduce_f32" => collective::reduce_f32,
            collective_reduce_f64: "collective/reduce_f64" => collective::reduce_f64,
            collective_non_commutative_user_op: "collective/non_commutative_user_op" => collective::user_op,
            errors_collective_count_mismatch: "errors/collective_count_mismatch" => collective::count_mismatch,
            errors_broadcast_root_disagreement: "errors/broadcast_root_disagreement" => collective::broadcast_roots,
            errors_reduce_root_disagreement: "errors/reduce_root_disagreement" => collective::reduce_roots,
            collective_gather_scatter: "collective/gather_scatter" => chapter6::gather_scatter,
            collective_all_gather: "collective/all_gather" => chapter6::all_gather,
            collective_all_to_all: "collective/all_to_all" => chapter6::all_to_all_case,
            collective_scan: "collective/scan" => chapter6::scan,
            collective_scan_long_rounds: "collective/scan_long_rounds" => chapter6::scan_long_rounds,
            collective_reduce_scatter: "collective/reduce_scatter" => chapter6::reduce_scatter,
            collective_reduce_in_place: "collective/reduce_in_place" => chapter6::reduce_in_place,
            errors_collective_arguments: "errors/collective_arguments" => chapter6::collective_arguments,
            deadlock_timeout_names_the_wait: "deadlock/timeout_names_the_wait" => deadlock::deadlock_timeout,
            deadlock_send_send_times_out: "deadlock/send_send_times_out" => deadlock::deadlock_send_send,
            deadlock_timeout_aborts_every_waiting_rank: "deadlock/timeout_aborts_every_waiting_rank" => deadlock::deadlock_abort,
            deadlock_aborted_world_whose_ranks_returned_ok: "deadlock/aborted_world_whose_ranks_returned_ok" => deadlock::aborted_world_handled,
            deadlock_skipped_collective_fails_everywhere: "deadlock/skipped_collective_fails_everywhere" => skip::skipped_collectives,
        }
    };
}

/// Cases whose kernels have a planted order-dependent bug
/// ([`gpu_mpi_check_kernels::planted`]): they pass under the emulator's
/// default schedule and fail under some others. Not conformance cases (a
/// GPU may fail them any time): the schedule explorer's test subjects
/// ([`crate::explore`], `gpu-mpi-check explore`).
pub fn planted_cases() -> Vec<Case> {
    vec![
        Case {
            name: "planted/arrival_order",
            run: planted::planted_arrival_order,
        },
        Case {
            name: "planted/any_source_deadlock",
            run: planted::planted_deadlock,
        },
    ]
}

/// The conformance case or planted case named `name`.
pub fn find_case(name: &str) -> Option<Case> {
    cases()
        .into_iter()
        .chain(planted_cases())
        .find(|c| c.name == name)
}
