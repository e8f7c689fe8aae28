//! Schedule exploration: runs one case under many seeded schedules of the
//! emulator ([`Schedule::Random`], [`Schedule::Pct`]) and groups the
//! outcomes, each with the seeds that reach it.
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
//! # Ok::<(), gpu_mpi_check::explore::ExploreError>(())
//! ```

use crate::Case;
use gpu_mpi::{CpuOptions, Device, Schedule};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Which seeded schedules to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// [`Schedule::Random`]: the next rank uniformly among those that can run.
    Random,
    /// [`Schedule::Pct`]: probabilistic concurrency testing.
    Pct {
        /// Bug depth (`depth - 1` priority change points), at least 1.
        depth: u32,
        /// Expected run length in steps; `None`: the emulator's default.
        steps: Option<u64>,
    },
}

impl Mode {
    /// The schedule of this mode with `seed`.
    pub fn schedule(&self, seed: u64) -> Schedule {
        match *self {
            Mode::Random => Schedule::Random { seed },
            Mode::Pct { depth, steps } => Schedule::Pct { seed, depth, steps },
        }
    }

    /// The mode's name on the command line: "random" or "pct".
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Random => "random",
            Mode::Pct { .. } => "pct",
        }
    }

    /// The `gpu-mpi-check explore` arguments that select this mode, e.g.
    /// `--mode pct --depth 3`.
    pub fn arguments(&self) -> String {
        match *self {
            Mode::Random => "--mode random".into(),
            Mode::Pct { depth, steps: None } => format!("--mode pct --depth {depth}"),
            Mode::Pct {
                depth,
                steps: Some(k),
            } => format!("--mode pct --depth {depth} --steps {k}"),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Mode::Random => f.write_str("random"),
            Mode::Pct { depth, steps: None } => write!(f, "pct (depth {depth})"),
            Mode::Pct {
                depth,
                steps: Some(k),
            } => write!(f, "pct (depth {depth}, {k} steps)"),
        }
    }
}

/// What went wrong before any schedule ran.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// No conformance case or planted case has this name.
    #[error("no case is named {name:?} (`gpu-mpi-check --list` lists the conformance cases; planted cases: {planted})")]
    UnknownCase {
        /// The name asked for.
        name: String,
        /// The planted cases' names, comma-separated.
        planted: String,
    },
    /// Zero schedules were asked for.
    #[error("--schedules must be at least 1")]
    NoSchedules,
    /// The seeds `first .. first + count` do not fit in 64 bits.
    #[error("seeds {first} + {count} schedules overflow 64 bits")]
    SeedOverflow {
        /// The first seed.
        first: u64,
        /// The number of schedules.
        count: u64,
    },
    /// PCT with depth 0.
    #[error("--depth must be at least 1")]
    ZeroDepth,
    /// PCT with a run length of 0 steps.
    #[error("--steps must be at least 1")]
    ZeroSteps,
}

/// What a run of a case amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutcomeKind {
    /// The case passed.
    Pass,
    /// A check failed (wrong results, error classes).
    Fail,
    /// A launch ended in a deadlock report.
    Deadlock,
    /// A launch ended in a livelock report.
    Livelock,
    /// The case panicked.
    Panic,
}

impl OutcomeKind {
    /// Lower-case name: "pass", "fail", "deadlock", "livelock", "panic".
    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Pass => "pass",
            OutcomeKind::Fail => "fail",
            OutcomeKind::Deadlock => "deadlock",
            OutcomeKind::Livelock => "livelock",
            OutcomeKind::Panic => "panic",
        }
    }
}

/// The outcome of one run of a case: its kind and its whole message (the
/// case's mismatches, or the launch's error with its deadlock report).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// What kind of outcome.
    pub kind: OutcomeKind,
    /// Empty for a pass.
    pub message: String,
}

impl Outcome {
    /// Classifies a case's result. A launch error names the deadlock or
    /// livelock report it carries (`... failed: deadlock: ...`, from
    /// `HostError`'s text).
    fn of(result: Result<(), String>) -> Outcome {
        match result {
            Ok(()) => Outcome {
                kind: OutcomeKind::Pass,
                message: String::new(),
            },
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
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// One distinct outcome and the schedules that reached it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The outcome.
    pub outcome: Outcome,
    /// Every seed whose schedule gave it, ascending.
    pub seeds: Vec<u64>,
    /// Whether it differs from the outcome under the default schedule.
    pub differs: bool,
}

/// What an exploration found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exploration {
    /// The case's name.
    pub case: &'static str,
    /// The schedules' mode.
    pub mode: Mode,
    /// The first seed; schedule `i` used seed `first_seed + i`.
    pub first_seed: u64,
    /// How many schedules ran.
    pub schedules: u64,
    /// The outcome under the emulator's default schedule
    /// ([`Schedule::Parallel`], default options).
    pub default: Outcome,
    /// The distinct outcomes, in the order of their first seed.
    pub outcomes: Vec<Found>,
}

impl Exploration {
    /// The outcomes that differ from the default schedule's.
    pub fn differing(&self) -> impl Iterator<Item = &Found> {
        self.outcomes.iter().filter(|f| f.differs)
    }

    /// Whether every schedule gave the default schedule's outcome.
    pub fn deterministic(&self) -> bool {
        self.differing().next().is_none()
    }
}

/// Runs `case` once on an emulator whose launches follow `schedule`.
/// A panic of the case is its outcome (the panic hook still prints it).
pub fn run_once(case: &Case, schedule: Schedule) -> Outcome {
    let device = Device::cpu_with(CpuOptions {
        schedule,
        ..CpuOptions::default()
    });
    match catch_unwind(AssertUnwindSafe(|| (case.run)(&device))) {
        Ok(r) => Outcome::of(r),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Outcome {
                kind: OutcomeKind::Panic,
                message,
            }
        }
    }
}

fn check_mode(mode: Mode) -> Result<(), ExploreError> {
    match mode {
        Mode::Pct { depth: 0, .. } => Err(ExploreError::ZeroDepth),
        Mode::Pct { steps: Some(0), .. } => Err(ExploreError::ZeroSteps),
        _ => Ok(()),
    }
}

/// Runs `case` under the schedule of `mode` with `seed` (what an
/// exploration reported for that seed).
pub fn replay(case: &Case, mode: Mode, seed: u64) -> Result<Outcome, ExploreError> {
    check_mode(mode)?;
    Ok(run_once(case, mode.schedule(seed)))
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
    mut each: impl FnMut(u64, &Outcome),
) -> Result<Exploration, ExploreError> {
    check_mode(mode)?;
    if schedules == 0 {
        return Err(ExploreError::NoSchedules);
    }
    first_seed
        .checked_add(schedules - 1)
        .ok_or(ExploreError::SeedOverflow {
            first: first_seed,
            count: schedules,
        })?;
    let default = run_once(case, Schedule::Parallel);
    let mut outcomes: Vec<Found> = Vec::new();
    for seed in first_seed..=first_seed + (schedules - 1) {
        let outcome = run_once(case, mode.schedule(seed));
        each(seed, &outcome);
        match outcomes.iter_mut().find(|f| f.outcome == outcome) {
            Some(f) => f.seeds.push(seed),
            None => outcomes.push(Found {
                differs: outcome != default,
                outcome,
                seeds: vec![seed],
            }),
        }
    }
    Ok(Exploration {
        case: case.name,
        mode,
        first_seed,
        schedules,
        default,
        outcomes,
    })
}

/// The planted cases' names, for [`ExploreError::UnknownCase`].
pub fn unknown_case(name: &str) -> ExploreError {
    let planted: Vec<&str> = crate::planted_cases().iter().map(|c| c.name).collect();
    ExploreError::UnknownCase {
        name: name.to_string(),
        planted: planted.join(", "),
    }
}
