//! What a backend must do ([`Backend`]), and what every launch does over it,
//! written once: [`launch_traced`], [`resolve_for`], [`upload`] and
//! [`download`].
//!
//! The cpu backend (`cpu::CpuDevice`, the emulator) and the cuda backend
//! (`cuda::CudaDevice`) implement the trait; `Device` in `device.rs` picks
//! one and calls the functions here. A launch:
//!
//! 1. completes the configuration with the backend's defaults
//!    ([`Backend::complete`]: the GPU bounds every wait) and lays the world
//!    out ([`WorldConfig::layout`]);
//! 2. refuses a world that cannot be co-resident ([`Backend::check_fits`]);
//! 3. lets the backend allocate the world, write its header, run every rank
//!    and bring the world's memory back to the host ([`Backend::run`]);
//! 4. reads the outcome from that memory ([`report::check_world`]: failed
//!    ranks, a deadlock) and the trace ([`Trace::from_world`]), and
//!    assembles the [`LaunchReport`].

use crate::error::{BufferError, CopyDirection, HostError};
use crate::launch::{LaunchReport, SyncCounts, SyncProfile, TracedLaunch};
use crate::model::{ModelledTime, Profile};
use crate::report;
use crate::schedule::Schedule;
use crate::spec::{RankCount, Residency, WorldSpec};
use crate::trace::Trace;
use bytemuck::Pod;
use gpu_mpi_device::abi::layout::Layout;
use gpu_mpi_device::abi::WorldConfig;
use gpu_mpi_device::Kernel;
use std::time::Duration;

/// A device that runs worlds: the contract of the cpu and the cuda backend.
pub(crate) trait Backend {
    /// The backend's name in reports and traces: "cpu" or "cuda".
    const NAME: &'static str;
    /// An allocation of device memory.
    type Buffer;
    /// A world's memory as the host reads it after its kernel ran.
    type World;

    /// How many ranks fit at once in blocks of `block_dim`, for any kernel,
    /// and what limits it.
    fn residency(&self, block_dim: u32) -> Residency;

    /// How many ranks of `kernel` fit at once in blocks of `block_dim`
    /// (the same for every kernel unless the backend knows better).
    fn kernel_residency(&self, _kernel: &str, block_dim: u32) -> Result<Residency, HostError> {
        Ok(self.residency(block_dim))
    }

    /// [`kernel_residency`](Self::kernel_residency) for blocks that also
    /// get `shared_window_bytes` of shared window memory each
    /// (`WorldSpec::shared_window_bytes`) and the non-blocking collectives'
    /// small words (`WorldConfig::launch_shared_bytes`; the same unless
    /// shared memory bounds the backend's blocks).
    fn kernel_residency_with_shared(
        &self,
        kernel: &str,
        block_dim: u32,
        _shared_window_bytes: u64,
    ) -> Result<Residency, HostError> {
        self.kernel_residency(kernel, block_dim)
    }

    /// Fails as a launch of `kernel` would when the backend has no such
    /// kernel (the emulator runs the host build, which has them all).
    fn find_kernel(&self, _kernel: &str) -> Result<(), HostError> {
        Ok(())
    }

    /// Refuses a world of `config` that cannot be co-resident
    /// ([`HostError::NotCoResident`] with the numbers).
    fn check_fits(&self, kernel: &str, config: &WorldConfig) -> Result<(), HostError> {
        self.kernel_residency(kernel, config.block_dim)?
            .check(config.ranks)
    }

    /// `config` with the backend's values for what the spec left open.
    fn complete(&self, config: WorldConfig) -> WorldConfig {
        config
    }

    /// `bytes` zeroed bytes of device memory, aligned to at least 64 bytes.
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buffer, HostError>;

    /// Bytes of `buffer`.
    fn buffer_len(buffer: &Self::Buffer) -> usize;

    /// Copies `data` into `buffer` from byte `offset` on; the range lies in
    /// the buffer (checked by [`upload`]).
    fn write_at(&self, buffer: &mut Self::Buffer, offset: usize, data: &[u8]) -> Result<(), HostError>;

    /// Copies `out.len()` bytes of `buffer` from byte `offset` on into
    /// `out`; the range lies in the buffer (checked by [`download`]).
    fn read_at(&self, buffer: &Self::Buffer, offset: usize, out: &mut [u8]) -> Result<(), HostError>;

    /// Allocates a world laid out as `layout` for `config` (already checked
    /// to fit), zeroed with the header written, runs `kernel` with `args` on
    /// every rank (in the order of `schedule` where the backend chooses
    /// one), and reads back at least the header, the wait and result
    /// records and the trace buffers. `Err` when the world never ran or
    /// could not be read back; once it was, its memory comes back with how
    /// the run ended.
    fn run<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
        layout: &Layout,
        order: Order<'_>,
    ) -> Result<Ran<Self::World>, HostError>;

    /// The bytes of a world that ran, `layout.total` of them.
    fn world_bytes(world: &Self::World) -> &[u8];
}

/// How the emulator runs a launch's ranks: the spec's schedule and timing
/// profile, each `None` for the backend's default. The cuda backend
/// ignores both.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Order<'a> {
    /// The order of the ranks ([`WorldSpec::schedule`]).
    pub(crate) schedule: Option<Schedule>,
    /// Timing mode's profile ([`WorldSpec::model`]).
    pub(crate) model: Option<&'a Profile>,
    /// Timing mode's logged rank ([`WorldSpec::model_log`]).
    pub(crate) model_log: Option<u32>,
}

impl<'a> Order<'a> {
    /// The order `spec` asks for.
    pub(crate) fn of(spec: &'a WorldSpec) -> Order<'a> {
        Order {
            schedule: spec.schedule,
            model: spec.model,
            model_log: spec.model_log,
        }
    }

    /// Just a schedule.
    pub(crate) fn schedule(schedule: Schedule) -> Order<'a> {
        Order {
            schedule: Some(schedule),
            model: None,
            model_log: None,
        }
    }
}

/// A world that ran ([`Backend::run`]).
pub(crate) struct Ran<W> {
    /// Its memory as the host reads it.
    pub(crate) world: W,
    /// How the run ended: its numbers, or why the ranks did not all return
    /// (a deadlock the emulator saw, a panic, a stack overflow).
    pub(crate) outcome: Result<RunStats, HostError>,
}

/// The numbers of a run whose ranks all returned.
pub(crate) struct RunStats {
    /// From the first rank's start to the last rank's end.
    pub(crate) elapsed: Duration,
    /// Each rank's synchronising operations, where the backend counts them.
    pub(crate) sync_counts: Option<Vec<SyncCounts>>,
    /// The modelled time of a run in timing mode.
    pub(crate) model: Option<ModelledTime>,
}

/// Fails unless `offset..offset + bytes` lies in a buffer of `len` bytes.
fn in_range(direction: CopyDirection, offset: usize, bytes: usize, len: usize) -> Result<(), HostError> {
    match offset.checked_add(bytes) {
        Some(end) if end <= len => Ok(()),
        _ => Err(BufferError::OutOfRange {
            direction,
            bytes,
            offset,
            len,
        }
        .into()),
    }
}

/// Copies `data` into `buffer` from byte `offset` on.
pub(crate) fn upload<B: Backend>(
    backend: &B,
    buffer: &mut B::Buffer,
    offset: usize,
    data: &[u8],
) -> Result<(), HostError> {
    in_range(CopyDirection::Upload, offset, data.len(), B::buffer_len(buffer))?;
    if data.is_empty() {
        return Ok(());
    }
    backend.write_at(buffer, offset, data)
}

/// Copies `out.len()` bytes from `buffer`, starting at byte `offset`.
pub(crate) fn download<B: Backend>(
    backend: &B,
    buffer: &B::Buffer,
    offset: usize,
    out: &mut [u8],
) -> Result<(), HostError> {
    in_range(CopyDirection::Download, offset, out.len(), B::buffer_len(buffer))?;
    if out.is_empty() {
        return Ok(());
    }
    backend.read_at(buffer, offset, out)
}

/// The world configuration `spec` gives on `backend` for any kernel,
/// checked.
pub(crate) fn resolve<B: Backend>(backend: &B, spec: &WorldSpec) -> Result<WorldConfig, HostError> {
    let config = spec.resolve(|b| backend.residency(b).capacity())?;
    if spec.ranks == RankCount::Max && config.ranks == 0 && config.block_dim > 0 {
        backend.residency(config.block_dim).check(config.block_dim)?;
    }
    config.layout()?;
    backend.residency(config.block_dim).check(config.ranks)?;
    Ok(config)
}

/// The world configuration `spec` gives for `kernel` on `backend`, checked:
/// `RankCount::Max` becomes this kernel's capacity.
pub(crate) fn resolve_for<B: Backend>(
    backend: &B,
    kernel: &str,
    spec: &WorldSpec,
) -> Result<WorldConfig, HostError> {
    // An unknown kernel fails here rather than resolve to 0 ranks.
    backend.find_kernel(kernel)?;
    let shared = spec.shared_window_bytes;
    let config = spec.resolve(|b| {
        backend
            .kernel_residency_with_shared(kernel, b, shared)
            .map_or(0, |r| r.capacity())
    })?;
    if spec.ranks == RankCount::Max && config.ranks == 0 && config.block_dim > 0 {
        // Not even one block fits: say why (the block's size, its shared
        // memory), not that the world has no rank.
        let mut one = WorldConfig::new(config.block_dim, config.block_dim);
        one.shared_window_bytes = shared;
        backend.check_fits(kernel, &one)?;
    }
    config.layout()?;
    backend.check_fits(kernel, &config)?;
    Ok(config)
}

/// Runs `kernel` on a new world of `config` and reads the outcome, the trace
/// attached to the report.
pub(crate) fn launch<B: Backend, A: Pod + Sync>(
    backend: &B,
    kernel: &Kernel<A>,
    args: &A,
    config: &WorldConfig,
    order: Order<'_>,
) -> Result<LaunchReport, HostError> {
    let TracedLaunch { result, trace } = launch_traced(backend, kernel, args, config, order);
    result.map(|mut r| {
        r.trace = trace;
        r
    })
}

/// As [`launch`], with the trace apart from the outcome: also after a
/// deadlock or failed ranks; `None` when `config` has no trace or the world
/// never ran or could not be read back.
pub(crate) fn launch_traced<B: Backend, A: Pod + Sync>(
    backend: &B,
    kernel: &Kernel<A>,
    args: &A,
    config: &WorldConfig,
    order: Order<'_>,
) -> TracedLaunch {
    let mut kept = None;
    let result = run_world(backend, kernel, args, config, order, &mut kept);
    let trace = kept.and_then(|(world, layout)| Trace::from_world(B::world_bytes(&world), &layout, B::NAME));
    TracedLaunch { result, trace }
}

/// Steps 1 to 4 of a launch (see the module's documentation); leaves the
/// world's memory in `kept` once it ran.
fn run_world<B: Backend, A: Pod + Sync>(
    backend: &B,
    kernel: &Kernel<A>,
    args: &A,
    config: &WorldConfig,
    order: Order<'_>,
    kept: &mut Option<(B::World, Layout)>,
) -> Result<LaunchReport, HostError> {
    let config = backend.complete(*config);
    let layout = config.layout()?;
    backend.check_fits(kernel.name, &config)?;
    let Ran { world, outcome } = backend.run(kernel, args, &config, &layout, order)?;
    let (world, layout) = kept.insert((world, layout));
    let stats = outcome?;
    report::check_world(B::world_bytes(world), layout)?;
    Ok(LaunchReport {
        ranks: layout.ranks,
        block_dim: layout.block_dim,
        blocks: layout.blocks,
        backend: B::NAME,
        elapsed: stats.elapsed,
        world_bytes: layout.total,
        sync_counts: stats.sync_counts.map(SyncProfile::new),
        model: stats.model,
        trace: None,
    })
}
