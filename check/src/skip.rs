//! A collective that one rank never enters fails on every rank that
//! entered it ([`skipped_collective`]; docs/semantics.md, "A collective
//! that cannot complete").

use crate::harness::*;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::{BlockedState, Device, HostError};
use gpu_mpi_check_kernels::skip::{SEMANTICS_SKIP, SKIP_COLLECTIVES};
use gpu_mpi_check_kernels::CaseArgs;
use std::time::Duration;

/// The call each collective of [`SEMANTICS_SKIP`] waits in, by its number.
pub const SKIP_CALLS: [(&str, gpu_mpi::device::abi::polling::Call); SKIP_COLLECTIVES as usize] = {
    use gpu_mpi::device::abi::polling::Call::*;
    [
        ("barrier", Barrier),
        ("broadcast", Broadcast),
        ("reduce", Reduce),
        ("reduce in place", Reduce),
        ("all_reduce", AllReduce),
        ("all_reduce in place", AllReduce),
        ("gather", Gather),
        ("gather in place", Gather),
        ("gatherv", Gather),
        ("scatter", Scatter),
        ("scatter in place", Scatter),
        ("scatterv", Scatter),
        ("all_gather", AllGather),
        ("all_gather in place", AllGather),
        ("all_gatherv", AllGather),
        ("all_to_all", AllToAll),
        ("all_to_all in place", AllToAll),
        ("all_to_allv", AllToAll),
        ("reduce_scatter_block", ReduceScatter),
        ("reduce_scatter_block in place", ReduceScatter),
        ("reduce_scatter", ReduceScatter),
        ("scan", Scan),
        ("scan in place", Scan),
        ("exclusive_scan", Scan),
        ("exclusive_scan in place", Scan),
    ]
};

/// The wait bound of the skipped-collective worlds.
const SKIP_TIMEOUT: Duration = Duration::from_millis(40);

/// Launches collective `which` of [`SEMANTICS_SKIP`] in a world of `shape`
/// (at most 8 ranks) with world rank `skip` never entering it, on the
/// world or (`split`) on a communicator of every rank split from it with
/// the keys reversed, and checks the rule of docs/semantics.md:
/// - on the world, every other rank returns `MPI_ERR_TIMEOUT` or
///   `MPI_ERR_ABORTED`, at least one times out, and the deadlock report
///   shows each of them ending its wait in the collective, the missing
///   rank as exited, and the hint naming it;
/// - on the split communicator (the general algorithms over messages),
///   every other rank fails the same way (the rooted collectives and scans
///   end with a completion barrier), at least one times out, and the
///   report shows the missing rank as exited and each rank in a message
///   step of the algorithm.
pub fn skipped_collective(
    device: &Device,
    which: u32,
    s: Shape,
    skip: u32,
    split: bool,
) -> Result<(), String> {
    let (name, call) = SKIP_CALLS[which as usize];
    let what = format!(
        "{name}{} ({} ranks in blocks of {}, rank {skip} missing)",
        if split { " on a split communicator" } else { "" },
        s.ranks,
        s.block
    );
    let out = device
        .alloc_zeroed::<u32>(s.ranks as usize)
        .map_err(|e| e.to_string())?;
    let (data, cells) = (
        device.alloc_zeroed::<u8>(8).map_err(|e| e.to_string())?,
        device.alloc_zeroed::<u32>(1).map_err(|e| e.to_string())?,
    );
    let args = CaseArgs {
        case: which,
        param: skip,
        param2: split as u32,
        stride: 1,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let launched = device.launch(&SEMANTICS_SKIP, &args, &s.spec().timeout(SKIP_TIMEOUT));
    let got = device.download(&out).map_err(|e| e.to_string())?;
    let (timeout, aborted) = (1 + ErrorClass::Timeout as u32, 1 + ErrorClass::Aborted as u32);
    let mut c = Checker::default();
    let report = match &launched {
        Err(HostError::Deadlock(rep)) => Some(rep),
        Ok(_) => None,
        Err(e) => return Err(format!("{what}: expected a deadlock report, got: {e}")),
    };
    let text = report.map(|r| r.to_string()).unwrap_or_default();
    c.eq(
        || format!("{what}: what the missing rank recorded"),
        got[skip as usize],
        0,
    );
    for r in (0..s.ranks).filter(|&r| r != skip) {
        let class = got[r as usize];
        let failed = class == timeout || class == aborted;
        c.ensure(failed, || {
            format!(
                "{what}: rank {r} returned class {} (it must fail): {text:.600}",
                class.wrapping_sub(1),
            )
        });
        if let (Some(rep), true) = (report, failed) {
            // On the world the wait is the collective's; on a split
            // communicator, a message step of its algorithm.
            let state = rep.state_of(r);
            let ended = match state {
                Some(BlockedState::TimedOut { operation, .. }) => {
                    class == timeout && (split || operation == call as u32)
                }
                Some(BlockedState::Aborted { operation, .. }) => {
                    class == aborted && (split || operation == call as u32)
                }
                _ => false,
            };
            c.ensure(ended, || {
                format!("{what}: rank {r} ended as {state:?}: {text:.600}")
            });
        }
    }
    match report {
        Some(rep) => {
            c.eq(
                || format!("{what}: the missing rank in the report"),
                rep.state_of(skip),
                Some(BlockedState::Exited),
            );
            c.ensure(got.contains(&timeout), || {
                format!("{what}: no rank timed out: {got:?}")
            });
            c.ensure(
                split || text.contains(&format!("hint: rank {skip} exited while")),
                || format!("{what}: the hint does not name rank {skip}: {text:.600}"),
            );
        }
        None => c.fail(format!("{what}: the launch succeeded: {got:?}")),
    }
    c.finish()
}

/// Every collective of the world with one rank missing, in another block
/// than some of the ranks that entered and in the same block as others (8
/// ranks in blocks of 4, the first block's rank 2 or the second block's
/// rank 6 missing), and of a split communicator (rank 5 missing).
/// check/tests/collective_failure.rs runs more shapes.
pub(crate) fn skipped_collectives(device: &Device) -> Result<(), String> {
    let mut errors = Vec::new();
    for which in 0..SKIP_COLLECTIVES {
        for (skip, split) in [(6, false), (2, false), (5, true)] {
            if let Err(e) = skipped_collective(device, which, shape(8, 4), skip, split) {
                errors.push(e);
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
