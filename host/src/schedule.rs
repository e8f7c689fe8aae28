//! [`Schedule`]: the order in which the emulator runs the ranks of a launch,
//! part of a [`WorldSpec`](crate::WorldSpec) and of the emulator's options
//! ([`CpuOptions`](crate::CpuOptions)). The seeded schedules and the
//! chooser that carries them out are described in the cpu backend's
//! `cpu/explore.rs` (docs/emulator.md, "Schedule exploration").

use std::fmt;

/// How the emulator orders the ranks of a launch ([`crate::WorldSpec::schedule`],
/// [`crate::CpuOptions::schedule`]). The cuda backend ignores it: the GPU
/// schedules its threads itself.
///
/// ```
/// # use gpu_mpi_host::{Schedule, WorldSpec};
/// let spec = WorldSpec::ranks(3).schedule(Schedule::Random { seed: 7 });
/// assert_eq!(spec.schedule, Some(Schedule::Random { seed: 7 }));
/// assert_eq!(Schedule::pct(7, 3).to_string(), "pct (seed 7, depth 3)");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// The fast default: [`crate::CpuOptions::workers`] threads, each
    /// resuming its ranks in rank order, pass after pass. Deterministic with
    /// one worker; with several, the interleaving depends on the OS.
    #[default]
    Parallel,
    /// One worker; after every resumption the next rank is drawn uniformly
    /// from the ranks that can run, by a pseudo-random generator seeded with
    /// `seed`.
    Random {
        /// The generator's seed: the same seed replays the same schedule.
        seed: u64,
    },
    /// One worker; probabilistic concurrency testing (see the cpu backend's
    /// `cpu/explore.rs`): random rank priorities and `depth - 1` priority
    /// change points among the first `steps` scheduling steps.
    Pct {
        /// The generator's seed: the same seed replays the same schedule.
        seed: u64,
        /// The bug depth PCT aims at (`depth - 1` change points); 0 counts
        /// as 1 (no change point: a random priority order of the ranks).
        depth: u32,
        /// The expected length of a run in scheduling steps (steps at which
        /// more than one rank could run), among which the change points are
        /// drawn; `None`: [`PCT_STEPS_PER_RANK`] per rank of the world.
        steps: Option<u64>,
    },
}

/// The run length PCT assumes per rank when [`Schedule::Pct`] gives none:
/// a rank of a small test program takes a few scheduling steps per MPI
/// call it makes.
pub const PCT_STEPS_PER_RANK: u64 = 8;

impl Schedule {
    /// PCT with `seed` and `depth`, and the default run length
    /// ([`PCT_STEPS_PER_RANK`] steps per rank).
    pub fn pct(seed: u64, depth: u32) -> Schedule {
        Schedule::Pct {
            seed,
            depth,
            steps: None,
        }
    }

    /// Whether the schedule is a seeded one (one worker, replayable).
    pub fn is_seeded(&self) -> bool {
        !matches!(self, Schedule::Parallel)
    }

    /// The seed, for the seeded schedules.
    pub fn seed(&self) -> Option<u64> {
        match *self {
            Schedule::Parallel => None,
            Schedule::Random { seed } | Schedule::Pct { seed, .. } => Some(seed),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Schedule::Parallel => f.write_str("parallel"),
            Schedule::Random { seed } => write!(f, "random (seed {seed})"),
            Schedule::Pct { seed, depth, steps } => {
                write!(f, "pct (seed {seed}, depth {depth}")?;
                if let Some(k) = steps {
                    write!(f, ", {k} steps")?;
                }
                f.write_str(")")
            }
        }
    }
}
