//! Schedule exploration of the conformance and planted cases: one case
//! under many seeded schedules of the emulator ([`Schedule::Random`],
//! [`Schedule::Pct`]), its outcomes grouped, each with the seeds that reach
//! it. The engine is the host crate's, `gpu_mpi::explore`, which runs a
//! program of anyone's (`Device::explore` for a kernel); this module runs
//! a [`Case`] with it.
//!
//! A correct MPI program gives one outcome under every schedule. A program
//! whose result depends on the interleaving (an `ANY_SOURCE` receive whose
//! source it assumes, a deadlock that only some match orders reach) gives
//! several; each comes with the seeds whose schedule replays it, exactly
//! (the emulator's seeded schedules are deterministic: see
//! `gpu_mpi::cpu::scheduler`, "Seeded schedules"). `gpu-mpi-check explore`
//! is the command line of this module; docs/emulator.md has an example.
//!
//! ```no_run
//! use gpu_mpi_check::explore::{explore, replay, Mode};
//! let case = gpu_mpi_check::find_case("planted/any_source_deadlock").unwrap();
//! let found = explore(&case, Mode::Random, 0, 50, |_, _| {})?;
//! for o in found.differing() {
//!     let seed = o.seeds[0];
//!     assert_eq!(replay(&case, Mode::Random, seed)?, o.outcome);
//! }
//! # Ok::<(), gpu_mpi::explore::ExploreError>(())
//! ```

use crate::Case;
pub use gpu_mpi::explore::{Exploration, ExploreError, ExploreOptions, Found, Mode, Outcome, OutcomeKind};
use gpu_mpi::{CpuOptions, Device, HostError, Schedule};

/// The `gpu-mpi-check explore` arguments that select `mode`, e.g.
/// `--mode pct --depth 3`.
pub fn arguments(mode: Mode) -> String {
    match mode {
        Mode::Random => "--mode random".into(),
        Mode::Pct { depth, steps: None } => format!("--mode pct --depth {depth}"),
        Mode::Pct {
            depth,
            steps: Some(k),
        } => format!("--mode pct --depth {depth} --steps {k}"),
    }
}

/// No conformance case or planted case has this name.
#[derive(Debug, thiserror::Error)]
#[error("no case is named {name:?} (`gpu-mpi-check --list` lists the conformance cases; planted cases: {planted})")]
pub struct UnknownCase {
    /// The name asked for.
    pub name: String,
    /// The planted cases' names, comma-separated.
    pub planted: String,
}

/// Classifies a case's result. A launch error names the deadlock or
/// livelock report it carries (`... failed: deadlock: ...`, from
/// `HostError`'s text).
fn outcome_of(result: Result<(), String>) -> Outcome {
    match result {
        Ok(()) => Outcome::pass(),
        Err(message) => {
            let kind = if message.contains("failed: deadlock:") {
                OutcomeKind::Deadlock
            } else if message.contains("failed: livelock:") {
                OutcomeKind::Livelock
            } else {
                OutcomeKind::Fail
            };
            Outcome { kind, message }
        }
    }
}

/// Runs `case` on an emulator whose launches follow `schedule` (the
/// engine's run of one schedule).
fn run_case(case: &Case, schedule: Schedule) -> Result<Outcome, HostError> {
    let device = Device::cpu_with(CpuOptions {
        schedule,
        ..CpuOptions::default()
    });
    Ok(outcome_of((case.run)(&device)))
}

/// Runs `case` once on an emulator whose launches follow `schedule`.
/// A panic of the case is its outcome (the panic hook still prints it).
pub fn run_once(case: &Case, schedule: Schedule) -> Outcome {
    gpu_mpi::explore::run_once(&mut |s| run_case(case, s), schedule)
}

/// Runs `case` under the schedule of `mode` with `seed` (what an
/// exploration reported for that seed).
pub fn replay(case: &Case, mode: Mode, seed: u64) -> Result<Outcome, ExploreError> {
    gpu_mpi::explore::replay(mode, seed, |schedule| run_case(case, schedule))
}

/// Runs `case` under the default schedule, then under `schedules` seeded
/// schedules of `mode` with seeds `first_seed, first_seed + 1, ...`, and
/// groups the outcomes. `each(seed, outcome)` is called after every
/// seeded run (for progress).
pub fn explore(
    case: &Case,
    mode: Mode,
    first_seed: u64,
    schedules: u64,
    each: impl FnMut(u64, &Outcome),
) -> Result<Exploration, ExploreError> {
    let options = ExploreOptions {
        mode,
        schedules,
        first_seed,
    };
    gpu_mpi::explore::explore_reporting(&options, |schedule| run_case(case, schedule), each)
}

/// The error for a case name that names none, listing the planted cases.
pub fn unknown_case(name: &str) -> UnknownCase {
    let planted: Vec<&str> = crate::planted_cases().iter().map(|c| c.name).collect();
    UnknownCase {
        name: name.to_string(),
        planted: planted.join(", "),
    }
}
