//! What a launch reports, on every backend: [`LaunchReport`] for a launch
//! that succeeded, [`TracedLaunch`] for one whose trace is wanted whatever
//! its outcome, and the cpu backend's [`SyncProfile`].

use crate::error::HostError;
use crate::model::ModelledTime;
use crate::trace::Trace;
pub use gpu_mpi_device::abi::shim::runtime::SyncCounts;
use std::time::Duration;

/// What a successful launch reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchReport {
    /// Ranks in the world.
    pub ranks: u32,
    /// Ranks per block.
    pub block_dim: u32,
    /// Blocks.
    pub blocks: u32,
    /// The backend that ran it ("cpu" or "cuda").
    pub backend: &'static str,
    /// Time from the first rank's start to the last rank's end (on the GPU:
    /// the kernel's run time).
    pub elapsed: Duration,
    /// Bytes of world memory.
    pub world_bytes: usize,
    /// The synchronising operations every rank issued (acquire loads,
    /// release stores, read-modify-writes, fences; [`SyncCounts`]),
    /// counted by the cpu backend's shim; `None` on the cuda backend, whose
    /// atomics are not counted. docs/emulator.md, "Synchronising-operation
    /// counts".
    pub sync_counts: Option<SyncProfile>,
    /// The modelled time of a launch in the emulator's timing mode
    /// ([`WorldSpec::model`](crate::WorldSpec::model), docs/model.md): the
    /// kernel's time on the modelled GPU and where each rank's went; `None`
    /// otherwise.
    pub model: Option<ModelledTime>,
    /// The ranks' MPI events when the spec asked for a trace
    /// ([`WorldSpec::trace`](crate::WorldSpec::trace)), else `None`.
    pub trace: Option<Trace>,
}

impl LaunchReport {
    /// The kernel's time: the modelled time of a launch in timing mode
    /// ([`LaunchReport::model`]), else [`LaunchReport::elapsed`].
    pub fn kernel_time(&self) -> Duration {
        self.model
            .as_ref()
            .map_or(self.elapsed, |m| Duration::from_nanos(m.kernel_ps / 1000))
    }

    /// The launch's trace, if it was traced ([`WorldSpec::trace`](crate::WorldSpec::trace)).
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }
}

/// A launch with its trace, whatever its outcome ([`Device::launch_traced`](crate::Device::launch_traced)).
#[derive(Debug)]
pub struct TracedLaunch {
    /// What [`Device::launch`](crate::Device::launch) returns (its report's `trace` is `None`:
    /// the trace is in [`TracedLaunch::trace`]).
    pub result: Result<LaunchReport, HostError>,
    /// The ranks' events, also after a deadlock or failed ranks; `None` when
    /// the spec asked for no trace or the launch never ran.
    pub trace: Option<Trace>,
}

/// The synchronising operations of one launch, per rank (the cpu backend's
/// [`LaunchReport::sync_counts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncProfile {
    per_rank: Vec<SyncCounts>,
}

impl SyncProfile {
    /// A profile from the counts of ranks `0..per_rank.len()`.
    pub fn new(per_rank: Vec<SyncCounts>) -> SyncProfile {
        SyncProfile { per_rank }
    }

    /// The counts of every rank, indexed by rank.
    pub fn per_rank(&self) -> &[SyncCounts] {
        &self.per_rank
    }

    /// The counts of `rank`, `None` past the world's last rank.
    pub fn rank(&self, rank: u32) -> Option<SyncCounts> {
        self.per_rank.get(rank as usize).copied()
    }

    /// The sum over every rank.
    pub fn total(&self) -> SyncCounts {
        self.per_rank.iter().copied().sum()
    }
}
