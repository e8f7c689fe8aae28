//! Schedule exploration: runs a program on the emulator under many seeded
//! schedules ([`Schedule::Random`], [`Schedule::Pct`]) and groups the
//! outcomes, each with the seeds that reach it.
//!
//! A correct MPI program gives one outcome under every schedule. A program
//! whose result depends on the interleaving (an `ANY_SOURCE` receive whose
//! source it assumes, a deadlock that only some match orders reach) gives
//! several; each comes with the seeds whose schedule replays it, exactly
//! (the emulator's seeded schedules are deterministic: see
//! `cpu::scheduler`, "Seeded schedules"). docs/emulator.md, "Schedule
//! exploration"; `gpu-mpi-check explore` is this module's command line for
//! the project's own cases.
//!
//! A kernel whose outcome is its launch's (a deadlock, a rank's error) is
//! explored with [`Device::explore`]; a program that checks what the
//! kernel computed, or fills its buffers before each launch, with
//! [`explore`] and a closure that runs it once under a given schedule:
//!
//! ```
//! use gpu_mpi_host::explore::{explore, ExploreOptions, Outcome};
//! use gpu_mpi_host::{Device, WorldSpec};
//! use gpu_mpi_device::traits::*;
//! use gpu_mpi_device::{Error, GlobalSlice, World, ANY_SOURCE};
//!
//! gpu_mpi_device::kernel! {
//!     /// Rank 0 records the sources of the first two messages it receives.
//!     pub static FIRST_COME = fn first_come(world: &World, out: &GlobalSlice<i32>) -> Result<(), Error> {
//!         if world.rank() == 0 {
//!             for i in 0..2 {
//!                 let (_, status) = world.any_process().receive::<u32>()?;
//!                 out.write(i, status.source_rank())?;
//!             }
//!         } else {
//!             world.process_at_rank(0).send(&1u32)?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let device = Device::cpu();
//! let found = explore(&ExploreOptions::random(20), |schedule| {
//!     let out = device.alloc_zeroed::<i32>(2)?;
//!     device.launch(&FIRST_COME, &out.slice(), &WorldSpec::ranks(3).schedule(schedule))?;
//!     // The program assumes that rank 1's message comes first.
//!     match device.download(&out)?[..] {
//!         [1, 2] => Ok(Outcome::pass()),
//!         ref got => Ok(Outcome::fail(format!("sources {got:?}"))),
//!     }
//! })?;
//! assert!(found.outcomes.len() >= 2, "both orders: {found:?}");
//! # Ok::<(), gpu_mpi_host::explore::ExploreError>(())
//! ```

use crate::device::Device;
use crate::error::HostError;
use crate::schedule::Schedule;
use crate::spec::WorldSpec;
use bytemuck::Pod;
use gpu_mpi_device::Kernel;
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

    /// The mode's name: "random" or "pct".
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Random => "random",
            Mode::Pct { .. } => "pct",
        }
    }

    fn check(self) -> Result<(), ExploreError> {
        match self {
            Mode::Pct { depth: 0, .. } => Err(ExploreError::ZeroDepth),
            Mode::Pct { steps: Some(0), .. } => Err(ExploreError::ZeroSteps),
            _ => Ok(()),
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

/// What an exploration runs: `schedules` schedules of `mode`, seeds
/// `first_seed, first_seed + 1, ...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExploreOptions {
    /// Which seeded schedules.
    pub mode: Mode,
    /// How many (at least 1).
    pub schedules: u64,
    /// The first seed.
    pub first_seed: u64,
}

impl ExploreOptions {
    /// `schedules` random schedules from seed 0.
    pub fn random(schedules: u64) -> Self {
        ExploreOptions {
            mode: Mode::Random,
            schedules,
            first_seed: 0,
        }
    }

    /// `schedules` PCT schedules of bug depth `depth` from seed 0.
    pub fn pct(depth: u32, schedules: u64) -> Self {
        ExploreOptions {
            mode: Mode::Pct { depth, steps: None },
            schedules,
            first_seed: 0,
        }
    }

    /// The same options from seed `seed`.
    pub fn first_seed(self, seed: u64) -> Self {
        ExploreOptions {
            first_seed: seed,
            ..self
        }
    }

    fn check(&self) -> Result<(), ExploreError> {
        self.mode.check()?;
        if self.schedules == 0 {
            return Err(ExploreError::NoSchedules);
        }
        self.first_seed
            .checked_add(self.schedules - 1)
            .map(|_| ())
            .ok_or(ExploreError::SeedOverflow {
                first: self.first_seed,
                count: self.schedules,
            })
    }
}

/// What went wrong before any schedule ran.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    /// Zero schedules were asked for.
    #[error("an exploration needs at least 1 schedule")]
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
    #[error("PCT's depth must be at least 1")]
    ZeroDepth,
    /// PCT with a run length of 0 steps.
    #[error("PCT's run length must be at least 1 step")]
    ZeroSteps,
    /// [`Device::explore`] on a device that is not the emulator (only its
    /// schedules can be chosen).
    #[error("schedules can only be explored on the cpu backend (the emulator), not on {backend}")]
    NotEmulator {
        /// The device's backend.
        backend: &'static str,
    },
}

/// What a run of a program amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutcomeKind {
    /// It passed.
    Pass,
    /// A check failed, or a rank returned an error.
    Fail,
    /// The launch ended in a deadlock report.
    Deadlock,
    /// The launch ended in a livelock report.
    Livelock,
    /// A rank, or the program's check, panicked.
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

/// The outcome of one run: its kind and its whole message (the check's
/// words, or the launch's error with its deadlock report).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// What kind of outcome.
    pub kind: OutcomeKind,
    /// Empty for a pass.
    pub message: String,
}

impl Outcome {
    /// A pass.
    pub fn pass() -> Outcome {
        Outcome {
            kind: OutcomeKind::Pass,
            message: String::new(),
        }
    }

    /// A failed check, saying why.
    pub fn fail(message: impl fmt::Display) -> Outcome {
        Outcome {
            kind: OutcomeKind::Fail,
            message: message.to_string(),
        }
    }

    /// The outcome of a launch that failed: a deadlock or livelock report,
    /// a rank's panic, or else a failure.
    pub fn of_error(e: &HostError) -> Outcome {
        let message = e.to_string();
        let kind = match e {
            HostError::Deadlock(_) if message.starts_with("livelock") => OutcomeKind::Livelock,
            HostError::Deadlock(_) => OutcomeKind::Deadlock,
            HostError::RankPanicked { .. } => OutcomeKind::Panic,
            _ => OutcomeKind::Fail,
        };
        Outcome { kind, message }
    }

    /// The outcome of a launch: a pass, or [`Outcome::of_error`].
    pub fn of_launch<T>(result: &Result<T, HostError>) -> Outcome {
        match result {
            Ok(_) => Outcome::pass(),
            Err(e) => Outcome::of_error(e),
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
    /// The schedules' mode.
    pub mode: Mode,
    /// The first seed; schedule `i` used seed `first_seed + i`.
    pub first_seed: u64,
    /// How many schedules ran.
    pub schedules: u64,
    /// The outcome under the emulator's default schedule
    /// ([`Schedule::Parallel`]).
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

/// Runs `run` once under `schedule`, as [`explore`] runs each schedule:
/// an error it returns, or a panic (of the program's check, or of a
/// launch), is its outcome.
pub fn run_once<R>(run: &mut R, schedule: Schedule) -> Outcome
where
    R: FnMut(Schedule) -> Result<Outcome, HostError>,
{
    match catch_unwind(AssertUnwindSafe(|| run(schedule))) {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => Outcome::of_error(&e),
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

/// Runs the program once under the default schedule, then under every
/// schedule of `options`, and groups the outcomes. `run(schedule)` runs
/// the program once on the emulator in the order of `schedule` (a launch
/// with [`WorldSpec::schedule`], or on a device whose
/// [`CpuOptions::schedule`](crate::CpuOptions::schedule) it is) and says
/// what happened; a [`HostError`] it returns is the run's outcome
/// ([`Outcome::of_error`]: a launch's deadlock is one), and so is a panic.
pub fn explore<R>(options: &ExploreOptions, run: R) -> Result<Exploration, ExploreError>
where
    R: FnMut(Schedule) -> Result<Outcome, HostError>,
{
    explore_reporting(options, run, |_, _| {})
}

/// As [`explore`], calling `each(seed, outcome)` after every seeded run
/// (for progress).
pub fn explore_reporting<R, E>(
    options: &ExploreOptions,
    mut run: R,
    mut each: E,
) -> Result<Exploration, ExploreError>
where
    R: FnMut(Schedule) -> Result<Outcome, HostError>,
    E: FnMut(u64, &Outcome),
{
    options.check()?;
    let default = run_once(&mut run, Schedule::Parallel);
    let mut outcomes: Vec<Found> = Vec::new();
    for seed in options.first_seed..=options.first_seed + (options.schedules - 1) {
        let outcome = run_once(&mut run, options.mode.schedule(seed));
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
        mode: options.mode,
        first_seed: options.first_seed,
        schedules: options.schedules,
        default,
        outcomes,
    })
}

/// Runs the program once under the schedule of `mode` with `seed` (what
/// an exploration reported for that seed), as [`explore`] runs it.
pub fn replay<R>(mode: Mode, seed: u64, mut run: R) -> Result<Outcome, ExploreError>
where
    R: FnMut(Schedule) -> Result<Outcome, HostError>,
{
    mode.check()?;
    Ok(run_once(&mut run, mode.schedule(seed)))
}

impl Device {
    /// Explores `kernel`'s launches with `args` in the world of `spec`
    /// under the schedules of `options` ([`explore`]), the outcome of each
    /// being the launch's ([`Outcome::of_launch`]). The buffers in `args`
    /// are not reset between runs. Emulator only
    /// ([`ExploreError::NotEmulator`] elsewhere).
    pub fn explore<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        spec: &WorldSpec,
        options: &ExploreOptions,
    ) -> Result<Exploration, ExploreError> {
        self.emulator()?;
        explore(options, |schedule| {
            Ok(Outcome::of_launch(&self.launch(
                kernel,
                args,
                &(*spec).schedule(schedule),
            )))
        })
    }

    /// Replays one schedule of [`Device::explore`].
    pub fn replay<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        spec: &WorldSpec,
        mode: Mode,
        seed: u64,
    ) -> Result<Outcome, ExploreError> {
        self.emulator()?;
        replay(mode, seed, |schedule| {
            Ok(Outcome::of_launch(&self.launch(
                kernel,
                args,
                &(*spec).schedule(schedule),
            )))
        })
    }

    fn emulator(&self) -> Result<(), ExploreError> {
        match self.as_cpu() {
            Some(_) => Ok(()),
            None => Err(ExploreError::NotEmulator {
                backend: self.backend_name(),
            }),
        }
    }
}
