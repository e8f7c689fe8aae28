//! Deadlock cases, and the fault kernel's launcher ([`launch_fault`]).
//!
//! Every wait is bounded (the GPU's way to end a deadlock), the waiting
//! rank that times out aborts the world, the others give up, and the host
//! reports what each rank waited for. The emulator, which also detects
//! deadlocks exactly, honours a world's timeout the same way, so both
//! backends must give the same report.

use crate::harness::*;
use gpu_mpi::{BlockedState, Device, HostError, LaunchReport, Profile, Schedule, WorldSpec};
use gpu_mpi_check_kernels::faults::{
    FAULT_ABORT_HANDLED, FAULT_DEADLOCK_RECEIVE, FAULT_RECEIVE_ANY, FAULT_SEND_SEND, SEMANTICS_FAULTS,
};
use gpu_mpi_check_kernels::CaseArgs;
use std::time::Duration;

/// The wait bound of the deadlock cases: short, so that a case costs little.
const DEADLOCK_TIMEOUT: Duration = Duration::from_millis(300);

/// Words of the out buffer [`launch_fault`] gives the fault kernel.
pub const FAULT_OUT_WORDS: usize = 16;

/// Launches scenario `case` of the fault kernel
/// ([`SEMANTICS_FAULTS`]) with `param` in a world of `spec`, with an out
/// buffer of [`FAULT_OUT_WORDS`] words and small data and cell buffers.
pub fn launch_fault(
    device: &Device,
    case: u32,
    param: u32,
    spec: &WorldSpec,
) -> Result<LaunchReport, HostError> {
    let out = device.alloc_zeroed::<u32>(FAULT_OUT_WORDS)?;
    let data = device.alloc_zeroed::<u8>(8)?;
    let cells = device.alloc_zeroed::<u32>(1)?;
    let args = CaseArgs {
        case,
        param,
        param2: 0,
        stride: 0,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    device.launch(&SEMANTICS_FAULTS, &args, spec)
}

/// Launches fault scenario `case` with the deadlock cases' wait bound and
/// returns every rank's state in the deadlock report, and the report.
fn deadlock_of(
    device: &Device,
    case: u32,
    param: u32,
    spec: WorldSpec,
) -> Result<(Vec<BlockedState>, String), String> {
    match launch_fault(device, case, param, &spec.timeout(DEADLOCK_TIMEOUT)) {
        Ok(_) => Err(format!(
            "fault case {case}: the launch succeeded; expected a deadlock"
        )),
        Err(HostError::Deadlock(report)) => {
            let text = report.to_string();
            Ok((report.ranks.into_iter().map(|r| r.state).collect(), text))
        }
        Err(e) => Err(format!("fault case {case}: expected a deadlock, got: {e}")),
    }
}

/// Whether `state` is a wait that timed out or gave up, in `(operation, peer, tag)`.
fn ended_wait(state: &BlockedState, wait: (u32, i32, i32)) -> Option<bool> {
    match *state {
        BlockedState::TimedOut { operation, peer, tag } if (operation, peer, tag) == wait => Some(true),
        BlockedState::Aborted { operation, peer, tag } if (operation, peer, tag) == wait => Some(false),
        _ => None,
    }
}

/// A receive nobody answers: the receiver times out naming its source and
/// tag; the other rank has exited.
pub(crate) fn deadlock_timeout(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(2, 2), shape(2, 1)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_DEADLOCK_RECEIVE, 0, s.spec())?;
        let receive = gpu_mpi::device::abi::polling::Call::Receive as u32;
        c.eq(
            || format!("rank 0 ({text})"),
            states.first().cloned(),
            Some(BlockedState::TimedOut {
                operation: receive,
                peer: 1,
                tag: 7,
            }),
        );
        c.eq(
            || format!("rank 1 ({text})"),
            states.get(1).cloned(),
            Some(BlockedState::Exited),
        );
        c.eq(
            || "report".into(),
            text.as_str(),
            "deadlock: rank 0: timed out in receive(source 1, tag 7); rank 1: exited\n\
             waiting receives: rank 0: timed out in receive(source 1, tag 7)\n\
             hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)",
        );
        Ok(())
    });
    c.finish()
}

/// Two ranks send each other a message larger than a slot (rendezvous):
/// both wait in their send; at least one times out, the other times out
/// too or gives up.
pub(crate) fn deadlock_send_send(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(2, 2), shape(2, 1)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_SEND_SEND, 1024, s.spec())?;
        let send = gpu_mpi::device::abi::polling::Call::Send as u32;
        let ends: Vec<_> = [(0usize, 1), (1, 0)]
            .iter()
            .map(|&(r, peer)| states.get(r).and_then(|st| ended_wait(st, (send, peer, 3))))
            .collect();
        c.ensure(ends.iter().all(Option::is_some), || {
            format!("both ranks end their send(dest peer, tag 3): {text}")
        });
        c.ensure(ends.contains(&Some(true)), || {
            format!("one of them timed out: {text}")
        });
        Ok(())
    });
    c.finish()
}

/// Every rank receives from any source and nobody sends, over several
/// blocks: the first rank to time out aborts the world and every other rank
/// gives up (or times out at the same moment), each naming its wait.
pub(crate) fn deadlock_abort(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(3, 3), shape(40, 8), shape(512, 256)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_RECEIVE_ANY, 0, s.spec())?;
        let wait = (gpu_mpi::device::abi::polling::Call::Receive as u32, -1, 2);
        let ends: Vec<_> = states.iter().map(|st| ended_wait(st, wait)).collect();
        c.eq(|| "ranks in the report".into(), ends.len(), s.ranks as usize);
        let odd = ends.iter().position(Option::is_none);
        c.ensure(odd.is_none(), || {
            format!("rank {odd:?} did not end its receive(source any, tag 2): {text:.300}")
        });
        c.ensure(ends.contains(&Some(true)), || {
            format!("a rank timed out: {text:.300}")
        });
        c.ensure(text.contains("timed out in receive(source any, tag 2)"), || {
            format!("report names the wait: {text:.300}")
        });
        Ok(())
    });
    c.finish()
}

/// A world aborted by a timeout or by `World::abort` (with and without a
/// world timeout), whose ranks all handled the error and returned `Ok`: the
/// launch reports the abort (`HostError::WorldAborted`) with the rank and
/// the cause, never success nor a deadlock.
pub(crate) fn aborted_world_handled(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(2, 2), shape(3, 1), shape(40, 8)], |c, s| {
        for (param, timed_out) in [(0, true), (1, false)] {
            let got = launch_fault(
                device,
                FAULT_ABORT_HANDLED,
                param,
                &s.spec().timeout(DEADLOCK_TIMEOUT),
            );
            match got {
                Err(HostError::WorldAborted {
                    by_rank,
                    timed_out: cause,
                }) => {
                    c.eq(|| format!("param {param}: a timeout"), cause, timed_out);
                    c.ensure(by_rank < s.ranks && (timed_out || by_rank == 0), || {
                        format!("param {param}: aborted by rank {by_rank}")
                    });
                }
                other => c.fail(format!("param {param}: expected WorldAborted, got {other:?}")),
            }
        }
        // Without a timeout: the emulator's quiet world after an abort is
        // final only once every waiting rank has read the abort word (its
        // waits read it every 16th poll), so they give up, not deadlock.
        // In every scheduling mode of the emulator (the GPU ignores both).
        let modes = [
            ("parallel", s.spec()),
            ("seeded", s.spec().schedule(Schedule::Random { seed: 3 })),
            ("timing model", s.spec().model(Profile::h100())),
        ];
        for (mode, spec) in modes {
            match launch_fault(device, FAULT_ABORT_HANDLED, 1, &spec) {
                Err(HostError::WorldAborted {
                    by_rank: 0,
                    timed_out: false,
                }) => {}
                other => c.fail(format!(
                    "{mode}, no timeout: expected WorldAborted by rank 0, got {other:?}"
                )),
            }
        }
        Ok(())
    });
    c.finish()
}
