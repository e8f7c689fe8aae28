//! What the caller asks for: a backend ([`BackendKind`]) and a world ([`WorldSpec`]).

use crate::error::{HostError, Resource};
use crate::model::Profile;
use crate::schedule::Schedule;
use gpu_mpi_device::abi::layout::{
    WorldConfig, FLAG_FORCE_STREAMING, FLAG_IMMEDIATE_COMMUNICATORS, TRACE_EVENT_BYTES, TRACE_HEADER_BYTES,
};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Block size [`WorldSpec`] aims for when none is given.
pub const PREFERRED_BLOCK_DIM: u32 = 256;

/// Which backend runs the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The GPU when one is usable, else the CPU emulator (with a notice on stderr).
    #[default]
    Auto,
    /// The CPU emulator.
    Cpu,
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
}

impl BackendKind {
    /// The name `FromStr` accepts.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Auto => "auto",
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend name that is not "auto", "cpu" or "cuda".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend {0:?} (expected \"auto\", \"cpu\" or \"cuda\")")]
pub struct ParseBackendKindError(pub String);

impl FromStr for BackendKind {
    type Err = ParseBackendKindError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendKind::Auto),
            "cpu" => Ok(BackendKind::Cpu),
            "cuda" | "gpu" => Ok(BackendKind::Cuda),
            _ => Err(ParseBackendKindError(s.to_string())),
        }
    }
}

/// How many ranks a world has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankCount {
    /// Exactly this many.
    Exact(u32),
    /// As many as the device holds at once with the world's block size.
    Max,
}

/// The world a launch runs: its size, block size and limits.
///
/// [`WorldSpec::ranks`] starts from the defaults of [`WorldConfig::new`];
/// the setters change one field each:
///
/// ```
/// # use gpu_mpi_host::WorldSpec;
/// # use std::time::Duration;
/// let spec = WorldSpec::ranks(4096).block_dim(128).timeout(Duration::from_secs(2));
/// assert_eq!(spec.block_dim, Some(128));
/// ```
///
/// # Block size
/// A world's ranks split into equal blocks (`ranks % block_dim == 0`, see
/// `gpu_mpi_device::state`). With `block_dim` left at `None` the block size
/// is the largest divisor of the rank count that is at most
/// [`PREFERRED_BLOCK_DIM`] (256), taking a multiple of 32 (a whole number of
/// warps) when one exists: 4096 ranks run in blocks of 256, 4224 in blocks of
/// 192, 5000 in blocks of 250 and a prime count in blocks of 1 (which few
/// devices can hold many of: choose a rank count with small factors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldSpec {
    /// Number of ranks.
    pub ranks: RankCount,
    /// Ranks per block; `None` chooses as described above.
    pub block_dim: Option<u32>,
    /// Message slots in each rank's mailbox.
    pub slots_per_rank: u32,
    /// Payload bytes per slot (a multiple of 64).
    pub slot_bytes: u32,
    /// Largest message in bytes.
    pub max_message_bytes: u32,
    /// Bytes each rank stages per round of a collective (a multiple of 64).
    pub collective_bytes: u32,
    /// Requests each rank may have outstanding in its request scopes.
    pub requests_per_rank: u32,
    /// Communicators (splits, duplicates) the launch may create, each
    /// costing 16 bytes per rank of world memory; one more fails with
    /// `MPI_ERR_COMM` on every rank of its parent (docs/limits.md).
    pub communicators: u32,
    /// Bytes of each rank's staging cell of a non-blocking collective (a
    /// multiple of 64): a non-blocking broadcast, reduce or all-reduce moves
    /// at most `immediate_bytes - 16` bytes (docs/limits.md), one with an
    /// operation of the program's own across processes at most
    /// `immediate_bytes - 32` (docs/distributed.md). The world
    /// memory holds two slots of `ranks × immediate_bytes` and a little more.
    pub immediate_bytes: u32,
    /// Give every communicator context the state of non-blocking
    /// collectives, so that sub-communicators have `immediate_barrier`,
    /// `immediate_broadcast_into`, `immediate_reduce_into*` and
    /// `immediate_all_reduce_*`: `communicators × ranks × (128 + 2 × (64 +
    /// 2 × immediate_bytes))` bytes of world memory (512 per rank per
    /// context by default). Off (the default), they fail with
    /// `MPI_ERR_COMM` (docs/limits.md).
    pub immediate_on_communicators: bool,
    /// Stream every large message through a slot (test the GPU's path).
    pub force_streaming: bool,
    /// Give up a wait after this long: the rank's wait is marked timed out,
    /// the world aborted, and the launch reports a deadlock. `None`: waits
    /// are unbounded (the emulator detects deadlocks exactly without it).
    pub timeout: Option<Duration>,
    /// Longest sleep between two polls of a waiting rank on the GPU (waits
    /// sleep 32 ns after a failed poll, doubling up to this). `None`: the
    /// cuda backend's default (`GPU_MPI_BACKOFF_NS`, else 1024 ns). Shorter
    /// sleeps answer sooner and load the memory system more. The emulator
    /// ignores it.
    pub backoff_max: Option<Duration>,
    /// The order in which the emulator runs the ranks: a seeded
    /// [`Schedule::Random`] or [`Schedule::Pct`] replays the same
    /// interleaving, hence the same outcome, for the same seed.
    /// `None`: [`CpuOptions::schedule`](crate::CpuOptions::schedule) (by
    /// default [`Schedule::Parallel`]). The cuda backend ignores it.
    pub schedule: Option<Schedule>,
    /// Timing mode of the emulator (docs/model.md): the GPU whose time it
    /// models, with the ranks run in the order of their virtual clocks
    /// (`schedule` is then not used) and the modelled time in
    /// [`LaunchReport::model`](crate::LaunchReport::model). `None`:
    /// [`CpuOptions::model`](crate::CpuOptions::model). The cuda backend
    /// ignores it.
    pub model: Option<&'static Profile>,
    /// Timing mode: log every access of this rank, with its modelled time
    /// and the place it touched, into
    /// [`ModelledTime::log`](crate::ModelledTime::log). `None`:
    /// [`CpuOptions::model_log`](crate::CpuOptions::model_log).
    pub model_log: Option<u32>,
    /// Events each rank may record in its trace buffer (0: no trace, the
    /// default; docs/tracing.md). The trace comes back in
    /// [`LaunchReport::trace`](crate::LaunchReport::trace) and from
    /// [`Device::launch_traced`](crate::Device::launch_traced).
    pub trace_events: u32,
    /// Whether `trace_events` is a cap that the world's size may lower
    /// ([`trace_default`](Self::trace_default)): the launch records
    /// `min(trace_events, default_trace_events(ranks))` events per rank.
    pub trace_events_scaled: bool,
    /// Bytes of device-global scratch each rank gets in the world memory
    /// (0, the default: none), for per-rank arrays too large for a stack
    /// or sized at run time: a kernel takes it with `World::scratch`
    /// (`gpu_mpi_device::Scratch`); a request beyond it fails with
    /// `MPI_ERR_NO_MEM`. Rounded up to 64; at most 1 GiB per rank
    /// (docs/limits.md). The world memory grows by `ranks × (64 +
    /// scratch_bytes)`.
    pub scratch_bytes: u64,
    /// One-sided windows (`gpu_mpi_device::window`, MPI 4.1 chapter 12) a
    /// launch may have at once (none by default, at most 64): a freed
    /// window's id is used again; one more fails with `MPI_ERR_WIN`. The
    /// world memory grows by `windows × ranks × (192 + window_bytes)`.
    pub windows: u32,
    /// Bytes of memory each rank gets per window for `Window::allocate`
    /// (`MPI_Win_allocate`; 0, the default: none, and an allocation of
    /// more fails with `MPI_ERR_NO_MEM`). Rounded up to 64; at most 1 GiB.
    pub window_bytes: u32,
    /// Bytes of shared memory each block gets at launch for the
    /// shared-memory windows of communicators inside one block
    /// (`Window::allocate_shared`; 0, the default: none, and those
    /// windows live in the world memory). Needs `windows`; at most 227 KiB,
    /// and on the GPU with the kernel's own shared memory at most what a
    /// block may have: a launch that does not fit is refused with the
    /// numbers. Blocks per SM may drop (shared memory is one of the
    /// occupancy limits), and the world with them.
    pub shared_window_bytes: u64,
}

impl WorldSpec {
    /// A world of `n` ranks with [`WorldConfig::new`]'s defaults.
    pub fn ranks(n: u32) -> Self {
        Self::with_count(RankCount::Exact(n))
    }

    /// The largest world the device holds at once.
    pub fn max_ranks() -> Self {
        Self::with_count(RankCount::Max)
    }

    fn with_count(ranks: RankCount) -> Self {
        let d = WorldConfig::new(1, 1);
        WorldSpec {
            ranks,
            block_dim: None,
            slots_per_rank: d.slots_per_rank,
            slot_bytes: d.slot_bytes,
            max_message_bytes: d.max_message_bytes,
            collective_bytes: d.collective_bytes,
            requests_per_rank: d.requests_per_rank,
            communicators: d.communicators,
            immediate_bytes: d.immediate_bytes,
            immediate_on_communicators: false,
            force_streaming: false,
            timeout: None,
            backoff_max: None,
            schedule: None,
            model: None,
            model_log: None,
            trace_events: 0,
            trace_events_scaled: false,
            scratch_bytes: 0,
            windows: d.windows,
            window_bytes: d.window_bytes,
            shared_window_bytes: d.shared_window_bytes,
        }
    }

    /// Sets the block size.
    pub fn block_dim(mut self, block_dim: u32) -> Self {
        self.block_dim = Some(block_dim);
        self
    }

    /// Sets the slots per mailbox.
    pub fn slots_per_rank(mut self, n: u32) -> Self {
        self.slots_per_rank = n;
        self
    }

    /// Sets the payload bytes per slot.
    pub fn slot_bytes(mut self, n: u32) -> Self {
        self.slot_bytes = n;
        self
    }

    /// Sets the largest message size.
    pub fn max_message_bytes(mut self, n: u32) -> Self {
        self.max_message_bytes = n;
        self
    }

    /// Sets the bytes per collective round.
    pub fn collective_bytes(mut self, n: u32) -> Self {
        self.collective_bytes = n;
        self
    }

    /// Sets the requests a rank may have outstanding (1 to 30).
    pub fn requests_per_rank(mut self, n: u32) -> Self {
        self.requests_per_rank = n;
        self
    }

    /// Sets how many communicators the launch may create (0 to 1024).
    pub fn communicators(mut self, n: u32) -> Self {
        self.communicators = n;
        self
    }

    /// Sets the bytes of a rank's cell of a non-blocking collective (a
    /// multiple of 64; its payload is 16 bytes less).
    pub fn immediate_bytes(mut self, n: u32) -> Self {
        self.immediate_bytes = n;
        self
    }

    /// Gives (or not) every communicator context the state of non-blocking
    /// collectives (see the field).
    pub fn immediate_on_communicators(mut self, on: bool) -> Self {
        self.immediate_on_communicators = on;
        self
    }

    /// Forces (or not) every large message through a slot.
    pub fn force_streaming(mut self, on: bool) -> Self {
        self.force_streaming = on;
        self
    }

    /// Bounds every wait by `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the longest sleep between two polls of a GPU wait (at least
    /// 1 ns, at most about 4.29 s).
    pub fn backoff_max(mut self, max: Duration) -> Self {
        self.backoff_max = Some(max);
        self
    }

    /// Runs the ranks in the order of `schedule` on the emulator (see
    /// [`WorldSpec::schedule`](WorldSpec#structfield.schedule)).
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Models the time of the launch on the emulator with `profile`
    /// (see [`WorldSpec::model`](WorldSpec#structfield.model)).
    pub fn model(mut self, profile: &'static Profile) -> Self {
        self.model = Some(profile);
        self
    }

    /// Logs every access of `rank` in timing mode (see
    /// [`WorldSpec::model_log`](WorldSpec#structfield.model_log)).
    pub fn model_log(mut self, rank: u32) -> Self {
        self.model_log = Some(rank);
        self
    }

    /// Gives every rank `bytes` of scratch in the world memory (see the
    /// field).
    pub fn scratch_bytes(mut self, bytes: u64) -> Self {
        self.scratch_bytes = bytes;
        self
    }

    /// Lets the launch hold `n` one-sided windows at once (see the field).
    pub fn windows(mut self, n: u32) -> Self {
        self.windows = n;
        self
    }

    /// Gives every rank `bytes` of memory per window for
    /// `Window::allocate` (see the field).
    pub fn window_bytes(mut self, bytes: u32) -> Self {
        self.window_bytes = bytes;
        self
    }

    /// Gives every block `bytes` of shared memory for shared-memory
    /// windows (see the field).
    pub fn shared_window_bytes(mut self, bytes: u64) -> Self {
        self.shared_window_bytes = bytes;
        self
    }

    /// Records up to `events_per_rank` MPI events per rank (0: off). The
    /// world memory grows by `ranks × (32 + 32 × events_per_rank)` bytes.
    pub fn trace(mut self, events_per_rank: u32) -> Self {
        self.trace_events = events_per_rank;
        self.trace_events_scaled = false;
        self
    }

    /// Records [`default_trace_events`]`(ranks)` events per rank: up to
    /// [`DEFAULT_TRACE_EVENTS`], fewer in a world so large that the trace
    /// buffers would pass [`TRACE_BUFFER_BOUND`] bytes.
    pub fn trace_default(mut self) -> Self {
        self.trace_events = DEFAULT_TRACE_EVENTS;
        self.trace_events_scaled = true;
        self
    }

    /// As [`trace`](Self::trace) with the count of the environment variable
    /// `GPU_MPI_TRACE_EVENTS`, or without it as
    /// [`trace_default`](Self::trace_default), when `GPU_MPI_TRACE` names
    /// a file; the spec unchanged otherwise. What the examples call.
    pub fn trace_from_env(self) -> Self {
        if trace_path_from_env().is_none() {
            return self;
        }
        match std::env::var("GPU_MPI_TRACE_EVENTS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            Some(n) => self.trace(n),
            None => self.trace_default(),
        }
    }

    /// Resolves the spec into a world configuration for a device whose
    /// capacity with blocks of `block_dim` ranks is `capacity(block_dim)`.
    /// Checks nothing beyond what resolving needs: [`WorldConfig::layout`] and
    /// the co-residency check come after.
    pub fn resolve(&self, capacity: impl Fn(u32) -> u32) -> Result<WorldConfig, HostError> {
        let (ranks, block_dim) = match self.ranks {
            RankCount::Exact(n) => (n, self.block_dim.unwrap_or_else(|| default_block_dim(n))),
            RankCount::Max => {
                let b = self.block_dim.unwrap_or(PREFERRED_BLOCK_DIM);
                (capacity(b), b)
            }
        };
        let mut c = WorldConfig::new(ranks, block_dim);
        c.slots_per_rank = self.slots_per_rank;
        c.slot_bytes = self.slot_bytes;
        c.max_message_bytes = self.max_message_bytes;
        c.collective_bytes = self.collective_bytes;
        c.requests_per_rank = self.requests_per_rank;
        c.trace_events = if self.trace_events_scaled {
            self.trace_events.min(default_trace_events(ranks))
        } else {
            self.trace_events
        };
        c.communicators = self.communicators;
        c.immediate_bytes = self.immediate_bytes;
        c.scratch_bytes = self.scratch_bytes;
        c.windows = self.windows;
        c.window_bytes = self.window_bytes;
        c.shared_window_bytes = self.shared_window_bytes;
        c.flags = if self.force_streaming {
            FLAG_FORCE_STREAMING
        } else {
            0
        };
        if self.immediate_on_communicators {
            c.flags |= FLAG_IMMEDIATE_COMMUNICATORS;
        }
        c.timeout_ns = match self.timeout {
            // 0 means "no timeout": a zero duration becomes 1 ns.
            Some(t) => u64::try_from(t.as_nanos()).unwrap_or(u64::MAX).max(1),
            None => 0,
        };
        c.backoff_max_ns = match self.backoff_max {
            Some(d) => u32::try_from(d.as_nanos()).unwrap_or(u32::MAX).max(1),
            None => 0,
        };
        Ok(c)
    }
}

/// Events per rank of a trace turned on by `GPU_MPI_TRACE` without
/// `GPU_MPI_TRACE_EVENTS` (or by [`WorldSpec::trace_default`]) in a world
/// of at most 2,046 ranks; larger worlds get fewer
/// ([`default_trace_events`]).
pub const DEFAULT_TRACE_EVENTS: u32 = 1024;

/// Bytes of world memory the trace buffers of a default-sized trace stay
/// within (64 MiB) in worlds of up to 123,361 ranks (beyond, the
/// [`TRACE_DEFAULT_MIN_EVENTS`] floor holds): the device memory they take,
/// and the host memory of the decoded [`Trace`](crate::Trace) (32 bytes
/// per event both), which is what the exporters read.
pub const TRACE_BUFFER_BOUND: u64 = 64 << 20;

/// The fewest events per rank a default-sized trace records, however
/// large the world: its buffers take `ranks × 544` bytes, more than
/// [`TRACE_BUFFER_BOUND`] in worlds of more than 123,361 ranks.
pub const TRACE_DEFAULT_MIN_EVENTS: u32 = 16;

/// Events per rank of a default-sized trace in a world of `ranks` ranks:
/// [`DEFAULT_TRACE_EVENTS`], or as many as keep the world's trace buffers
/// (`ranks × (32 + 32 × events)` bytes) within [`TRACE_BUFFER_BOUND`],
/// but at least [`TRACE_DEFAULT_MIN_EVENTS`]: 1,024 up to 2,046 ranks,
/// 511 at 4,096, 127 at 16,384, 16 from 116,509 on.
pub fn default_trace_events(ranks: u32) -> u32 {
    let per_rank = TRACE_BUFFER_BOUND / u64::from(ranks.max(1));
    let fit = per_rank.saturating_sub(TRACE_HEADER_BYTES as u64) / TRACE_EVENT_BYTES as u64;
    fit.clamp(
        u64::from(TRACE_DEFAULT_MIN_EVENTS),
        u64::from(DEFAULT_TRACE_EVENTS),
    ) as u32
}

/// The file `GPU_MPI_TRACE` names (Chrome trace JSON; the HTML page goes
/// beside it), if set and not empty.
pub fn trace_path_from_env() -> Option<std::path::PathBuf> {
    std::env::var_os("GPU_MPI_TRACE")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

/// The block size a world of `ranks` ranks gets when none is given: the
/// largest divisor of `ranks` that is at most [`PREFERRED_BLOCK_DIM`],
/// preferring multiples of 32 (see [`WorldSpec`]). 1 for 0 ranks.
pub fn default_block_dim(ranks: u32) -> u32 {
    let divisors = || {
        (1..=PREFERRED_BLOCK_DIM.min(ranks))
            .rev()
            .filter(move |d| ranks.is_multiple_of(*d))
    };
    divisors()
        .find(|d| d.is_multiple_of(32))
        .or_else(|| divisors().next())
        .unwrap_or(1)
}

/// How many ranks a device holds at once with one block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Residency {
    /// Streaming multiprocessors (worker slots on the emulator).
    pub sms: u32,
    /// Blocks one SM holds at once (0 when a block is too large to run).
    pub blocks_per_sm: u32,
    /// Ranks per block.
    pub block_dim: u32,
    /// What bounds `blocks_per_sm`.
    pub limit: Resource,
    /// Threads one block may have (for the message when `limit` is
    /// [`Resource::ThreadsPerBlock`]).
    pub max_threads_per_block: u32,
}

impl Residency {
    /// Ranks that fit.
    pub fn capacity(&self) -> u32 {
        let r = self.sms as u64 * self.blocks_per_sm as u64 * self.block_dim as u64;
        r.min(u32::MAX as u64) as u32
    }

    /// Occupancy of a device with the given limits: blocks per SM is the
    /// smaller of `max_blocks_per_sm` and `max_threads_per_sm / block_dim`;
    /// a block larger than `max_threads_per_block` fits nowhere.
    pub fn from_limits(
        sms: u32,
        max_threads_per_sm: u32,
        max_blocks_per_sm: u32,
        max_threads_per_block: u32,
        block_dim: u32,
    ) -> Residency {
        let (blocks_per_sm, limit) = if block_dim == 0 || block_dim > max_threads_per_block {
            (0, Resource::ThreadsPerBlock)
        } else {
            let by_threads = max_threads_per_sm / block_dim;
            if max_blocks_per_sm <= by_threads {
                (max_blocks_per_sm, Resource::BlocksPerSm)
            } else {
                (by_threads, Resource::ThreadsPerSm)
            }
        };
        Residency {
            sms,
            blocks_per_sm,
            block_dim,
            limit,
            max_threads_per_block,
        }
    }

    /// `Ok` when `ranks` ranks fit, else [`HostError::NotCoResident`].
    pub fn check(&self, ranks: u32) -> Result<(), HostError> {
        let fits = self.capacity();
        if ranks <= fits && self.blocks_per_sm > 0 {
            return Ok(());
        }
        let detail = if self.limit == Resource::ThreadsPerBlock {
            format!(
                "blocks of {} ranks exceed the {} threads a block may have",
                self.block_dim, self.max_threads_per_block
            )
        } else {
            format!(
                "{} SMs x {} blocks of {} ranks",
                self.sms, self.blocks_per_sm, self.block_dim
            )
        };
        Err(HostError::NotCoResident {
            requested: ranks,
            fits,
            limit: self.limit,
            detail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_choice() {
        assert_eq!(default_block_dim(4096), 256);
        assert_eq!(default_block_dim(4224), 192);
        assert_eq!(default_block_dim(5000), 250);
        assert_eq!(default_block_dim(4099), 1);
        assert_eq!(default_block_dim(64), 64);
        assert_eq!(default_block_dim(100), 100);
        assert_eq!(default_block_dim(96 * 7), 224);
        assert_eq!(default_block_dim(1), 1);
        assert_eq!(default_block_dim(0), 1);
    }

    #[test]
    fn a_default_trace_stays_within_its_bound() {
        let cases = [
            (1, 1024),
            (512, 1024),
            (2046, 1024),
            (2047, 1023),
            (4096, 511),
            (16384, 127),
        ];
        for (ranks, events) in cases {
            assert_eq!(default_trace_events(ranks), events, "{ranks} ranks");
        }
        assert_eq!(default_trace_events(116_508), 17);
        assert_eq!(default_trace_events(116_509), TRACE_DEFAULT_MIN_EVENTS);
        assert_eq!(default_trace_events(u32::MAX), TRACE_DEFAULT_MIN_EVENTS);
        assert_eq!(default_trace_events(0), DEFAULT_TRACE_EVENTS);
        for ranks in [1u32, 1000, 2047, 4096, 5000, 16384, 100_000, 123_361] {
            let c = WorldSpec::ranks(ranks).trace_default().resolve(|_| 0).unwrap();
            let bytes = u64::from(ranks) * (32 + 32 * u64::from(c.trace_events));
            assert!(bytes <= TRACE_BUFFER_BOUND, "{ranks} ranks: {bytes} bytes");
            assert_eq!(c.layout().unwrap().trace_stride as u64 * u64::from(ranks), bytes);
        }
        // An explicit count is taken as it is, and replaces the default.
        let c = WorldSpec::ranks(16384)
            .trace_default()
            .trace(1024)
            .resolve(|_| 0)
            .unwrap();
        assert_eq!(c.trace_events, 1024);
        let c = WorldSpec::ranks(16384)
            .trace(7)
            .trace_default()
            .resolve(|_| 0)
            .unwrap();
        assert_eq!(c.trace_events, 127);
    }

    #[test]
    fn backend_names() {
        assert_eq!("cpu".parse::<BackendKind>().unwrap(), BackendKind::Cpu);
        assert_eq!("CUDA".parse::<BackendKind>().unwrap(), BackendKind::Cuda);
        assert_eq!("auto".parse::<BackendKind>().unwrap(), BackendKind::Auto);
        assert!("tpu".parse::<BackendKind>().is_err());
    }

    #[test]
    fn residency_limits() {
        let r = Residency::from_limits(132, 2048, 32, 1024, 1);
        assert_eq!((r.capacity(), r.limit), (4224, Resource::BlocksPerSm));
        let r = Residency::from_limits(132, 2048, 32, 1024, 256);
        assert_eq!((r.capacity(), r.limit), (132 * 2048, Resource::ThreadsPerSm));
        let r = Residency::from_limits(132, 2048, 32, 1024, 2048);
        assert_eq!((r.capacity(), r.limit), (0, Resource::ThreadsPerBlock));
        assert!(r.check(2048).is_err());
    }

    #[test]
    fn resolve_fills_the_config() {
        let c = WorldSpec::ranks(64)
            .slot_bytes(512)
            .force_streaming(true)
            .timeout(Duration::ZERO)
            .resolve(|_| 0)
            .unwrap();
        assert_eq!((c.ranks, c.block_dim, c.slot_bytes), (64, 64, 512));
        assert_eq!((c.flags, c.timeout_ns), (FLAG_FORCE_STREAMING, 1));
        assert_eq!(c.backoff_max_ns, 0);
        let c = WorldSpec::ranks(64)
            .immediate_on_communicators(true)
            .resolve(|_| 0)
            .unwrap();
        assert_eq!(c.flags, FLAG_IMMEDIATE_COMMUNICATORS);
        let c = WorldSpec::ranks(64)
            .backoff_max(Duration::from_nanos(200))
            .resolve(|_| 0)
            .unwrap();
        assert_eq!(c.backoff_max_ns, 200);
        let c = WorldSpec::ranks(64)
            .backoff_max(Duration::ZERO)
            .resolve(|_| 0)
            .unwrap();
        assert_eq!(c.backoff_max_ns, 1);
        let c = WorldSpec::max_ranks().block_dim(32).resolve(|b| b * 10).unwrap();
        assert_eq!((c.ranks, c.block_dim), (320, 32));
    }
}
