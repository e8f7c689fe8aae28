//! The cpu backend: an emulator of one GPU on which every rank is a
//! stackful coroutine.
//!
//! See docs/emulator.md for the execution model and its limits, and
//! [`scheduler`] for the scheduler and its exact deadlock detection.
//!
//! The virtual device has the shape of an H100 by default ([`CpuOptions`]),
//! so a world that the emulator refuses as not co-resident is one that the
//! GPU would refuse too, with the same numbers.

mod explore;
mod memory;
mod model;
mod place;
pub mod scheduler;
mod stack;

pub use crate::schedule::{Schedule, PCT_STEPS_PER_RANK};
pub use memory::CpuBuffer;

use crate::backend::{self, Backend, Order, Ran, RunStats};
use crate::error::{AllocError, DistributedError, HostError, OptionError};
use crate::launch::{LaunchReport, TracedLaunch};
use crate::model::Profile;
use crate::spec::Residency;
use bytemuck::Pod;
use gpu_mpi_device::abi::layout::{Layout, FLAG_ACROSS_PROCESSES, MAX_COMMUNICATORS};
use gpu_mpi_device::abi::WorldConfig;
use gpu_mpi_device::Kernel;
use scheduler::{Outcome, Run};
use stack::StackPool;
use std::time::Instant;

/// Shape and resources of the emulated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuOptions {
    /// Streaming multiprocessors (132, like an H100 SXM).
    pub sms: u32,
    /// Threads one SM holds at once (2048).
    pub max_threads_per_sm: u32,
    /// Blocks one SM holds at once (32).
    pub max_blocks_per_sm: u32,
    /// Threads one block may have (1024).
    pub max_threads_per_block: u32,
    /// Worker threads that run the ranks (default: the available cores); a
    /// launch uses at most one per block.
    pub workers: usize,
    /// Usable stack bytes of each rank's coroutine (default 64 KiB; rounded
    /// up to whole pages). Memory is only used as a rank touches it.
    pub stack_bytes: usize,
    /// Worlds of at most this many ranks get a guard page under every stack
    /// (an overflow kills the process with a message); larger worlds get a
    /// canary, checked at every suspension (an overflow stops the launch with
    /// [`HostError::StackOverflow`]). Default 4096: each guard page costs two
    /// of the process's ~65 530 memory mappings.
    pub guard_page_limit: u32,
    /// The order in which ranks run when the launch's
    /// [`WorldSpec::schedule`](crate::WorldSpec::schedule) is `None`
    /// (default [`Schedule::Parallel`]); a seeded schedule runs on one
    /// worker whatever `workers` says. docs/emulator.md, "Schedule
    /// exploration".
    pub schedule: Schedule,
    /// Whether a rank's stack is local memory, as on the GPU: an address on
    /// the rank's own stack counts as one no other rank can reach
    /// (`gpu_mpi_device::abi::shim::is_shared_address`), so the library takes
    /// the paths a GPU takes for stack buffers (a rendezvous streamed
    /// through the slot, a gather's or scatter's parts staged through the
    /// world's cells) instead of direct copies. Default false: every
    /// address is shared, as it is in one process.
    pub local_stacks: bool,
    /// Timing mode (docs/model.md): the GPU whose time the emulator models
    /// when the launch's [`WorldSpec::model`](crate::WorldSpec::model) is
    /// `None`. Default `None`: no model, no virtual clocks.
    pub model: Option<&'static Profile>,
    /// Timing mode: the rank whose accesses a launch logs when its
    /// [`WorldSpec::model_log`](crate::WorldSpec::model_log) is `None`
    /// ([`crate::ModelledTime::log`]). Default `None`: no log.
    pub model_log: Option<u32>,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            sms: 132,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            max_threads_per_block: 1024,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            stack_bytes: 64 * 1024,
            guard_page_limit: 4096,
            schedule: Schedule::Parallel,
            local_stacks: false,
            model: None,
            model_log: None,
        }
    }
}

/// The environment variable that sets [`CpuOptions::stack_bytes`] for
/// [`CpuOptions::from_env`] (what `Device::open` uses): bytes, or with a
/// `K`/`M` suffix KiB/MiB, at least 16 KiB.
pub const STACK_BYTES_ENV: &str = "GPU_MPI_STACK_BYTES";

/// The environment variable that sets [`CpuOptions::model_log`] for
/// [`CpuOptions::from_env`]: a rank.
pub const MODEL_LOG_ENV: &str = "GPU_MPI_MODEL_LOG";

/// Smallest stack [`STACK_BYTES_ENV`] may ask for.
const MIN_ENV_STACK_BYTES: usize = 16 * 1024;

impl CpuOptions {
    /// The defaults as the environment changes them: `GPU_MPI_MODEL`
    /// ([`CpuOptions::model`], docs/model.md), `GPU_MPI_MODEL_LOG`
    /// ([`CpuOptions::model_log`], [`MODEL_LOG_ENV`]) and `GPU_MPI_STACK_BYTES`
    /// ([`CpuOptions::stack_bytes`], [`STACK_BYTES_ENV`]). What
    /// `Device::open` gives the cpu backend.
    pub fn from_env() -> Result<CpuOptions, HostError> {
        let mut o = CpuOptions {
            model: Profile::from_env()?,
            ..CpuOptions::default()
        };
        if let Some(v) = std::env::var_os(STACK_BYTES_ENV) {
            let v = v.to_string_lossy().into_owned();
            if !v.trim().is_empty() {
                o.stack_bytes = parse_stack_bytes(&v).ok_or_else(|| OptionError {
                    variable: STACK_BYTES_ENV,
                    value: v.clone(),
                    expected: "a stack size in bytes of at least 16384 (or with K or M: 256K, 4M)",
                })?;
            }
        }
        if let Some(v) = std::env::var_os(MODEL_LOG_ENV) {
            let v = v.to_string_lossy().into_owned();
            if !v.trim().is_empty() {
                o.model_log = Some(v.trim().parse().map_err(|_| OptionError {
                    variable: MODEL_LOG_ENV,
                    value: v.clone(),
                    expected: "a rank (0, 1, ...)",
                })?);
            }
        }
        Ok(o)
    }
}

/// `65536`, `64K`, `4M` (KiB, MiB) as bytes; `None` when not a size of at
/// least [`MIN_ENV_STACK_BYTES`].
fn parse_stack_bytes(v: &str) -> Option<usize> {
    let v = v.trim();
    let (digits, unit) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1024),
        (i, 'm' | 'M') => (&v[..i], 1024 * 1024),
        _ => (v, 1),
    };
    let n: usize = digits.parse().ok()?;
    n.checked_mul(unit).filter(|&b| b >= MIN_ENV_STACK_BYTES)
}

/// The emulated device.
#[derive(Clone, Debug, Default)]
pub struct CpuDevice {
    options: CpuOptions,
    /// The processes a world spreads over (`mpiexec`), if more than one.
    processes: Option<&'static dyn Spread>,
}

/// What spreads a world over processes (docs/distributed.md): the
/// `distributed` module's, with the feature of that name; the emulator
/// runs its share of the blocks with the relay beside, then merges.
pub(crate) trait Spread: Sync + std::fmt::Debug {
    /// This process's index.
    fn index(&self) -> u32;
    /// How many processes there are.
    fn count(&self) -> u32;
    /// The relay of a run whose processes hold `ranks_per_process` ranks.
    fn relay(&self, ranks_per_process: u32) -> Box<dyn scheduler::Relay + '_>;
    /// After the run: the processes' parts of the world, exchanged into
    /// `world`, and how the whole world's run ended (see
    /// `distributed::merge`).
    fn merge(&self, layout: &Layout, world: &mut [u8], local: LocalEnd) -> Result<RunStats, HostError>;
}

/// How this process's share of a world across processes ended
/// ([`Spread::merge`]).
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
pub(crate) struct LocalEnd {
    /// The ranks it ran.
    pub(crate) ranks: std::ops::Range<u32>,
    /// How its run ended.
    pub(crate) outcome: Outcome,
    /// The scheduler's codes of where it parked each of them.
    pub(crate) parked: Vec<u64>,
    /// From the first rank's start to the last rank's end.
    pub(crate) elapsed: std::time::Duration,
    /// Each rank's stack, which a stack overflow reports.
    pub(crate) stack_bytes: usize,
}

impl CpuDevice {
    /// An emulated device with these options.
    pub fn new(options: CpuOptions) -> CpuDevice {
        CpuDevice {
            options,
            processes: None,
        }
    }

    /// An emulated device whose worlds spread over `processes`
    /// (docs/distributed.md): each launch's world has `processes.count()`
    /// times the ranks its spec asks for, this process running its share.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn spread(options: CpuOptions, processes: &'static dyn Spread) -> CpuDevice {
        CpuDevice {
            options,
            processes: Some(processes),
        }
    }

    /// The processes a world spreads over: this one's index and their
    /// count (`(0, 1)` without `mpiexec`).
    pub fn process(&self) -> (u32, u32) {
        self.processes.map_or((0, 1), |p| (p.index(), p.count()))
    }

    /// The device's options.
    pub fn options(&self) -> &CpuOptions {
        &self.options
    }

    /// How many ranks fit at once in blocks of `block_dim`.
    pub fn residency(&self, block_dim: u32) -> Residency {
        let o = &self.options;
        Residency::from_limits(
            o.sms,
            o.max_threads_per_sm,
            o.max_blocks_per_sm,
            o.max_threads_per_block,
            block_dim,
        )
    }

    /// `bytes` zeroed bytes of device memory.
    pub fn alloc_zeroed(&self, bytes: usize) -> Result<CpuBuffer, HostError> {
        CpuBuffer::zeroed(bytes)
    }

    /// Copies `data` into `buffer` from byte `offset` on.
    pub fn upload(&self, buffer: &mut CpuBuffer, offset: usize, data: &[u8]) -> Result<(), HostError> {
        backend::upload(self, buffer, offset, data)
    }

    /// Copies `out.len()` bytes from `buffer`, starting at byte `offset`.
    pub fn download(&self, buffer: &CpuBuffer, offset: usize, out: &mut [u8]) -> Result<(), HostError> {
        backend::download(self, buffer, offset, out)
    }

    /// Runs `kernel` on a new world of `config` and reads the outcome, in
    /// the order of [`CpuOptions::schedule`].
    pub fn launch<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
    ) -> Result<LaunchReport, HostError> {
        backend::launch(self, kernel, args, config, Order::default())
    }

    /// Runs `kernel` on a new world of `config` in the order of `schedule`
    /// and reads the outcome.
    pub fn launch_scheduled<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
        schedule: Schedule,
    ) -> Result<LaunchReport, HostError> {
        backend::launch(self, kernel, args, config, Order::schedule(schedule))
    }

    /// As [`launch_scheduled`](Self::launch_scheduled), with the trace apart
    /// from the outcome (also after a deadlock; `None` when `config` has no
    /// trace or the world never ran).
    pub fn launch_traced<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
        schedule: Schedule,
    ) -> TracedLaunch {
        backend::launch_traced(self, kernel, args, config, Order::schedule(schedule))
    }
}

impl Backend for CpuDevice {
    const NAME: &'static str = "cpu";
    type Buffer = CpuBuffer;
    type World = CpuBuffer;

    fn residency(&self, block_dim: u32) -> Residency {
        CpuDevice::residency(self, block_dim)
    }

    /// Each process's device holds its own share of a world across
    /// processes.
    fn check_fits(&self, kernel: &str, config: &WorldConfig) -> Result<(), HostError> {
        let ranks = if config.flags & FLAG_ACROSS_PROCESSES != 0 {
            config.ranks / self.process().1
        } else {
            config.ranks
        };
        backend::Backend::kernel_residency(self, kernel, config.block_dim)?.check(ranks)
    }

    /// A world across processes has every process's ranks, and as many
    /// communicator contexts for each process as the spec asks for (each
    /// process draws from its own share, `run`), up to
    /// [`MAX_COMMUNICATORS`] in all.
    fn complete(&self, config: WorldConfig) -> WorldConfig {
        let (_, count) = self.process();
        if count < 2 || config.flags & FLAG_ACROSS_PROCESSES != 0 {
            return config;
        }
        WorldConfig {
            ranks: config.ranks.saturating_mul(count),
            communicators: config.communicators.saturating_mul(count).min(MAX_COMMUNICATORS),
            flags: config.flags | FLAG_ACROSS_PROCESSES,
            ..config
        }
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<CpuBuffer, HostError> {
        CpuBuffer::zeroed(bytes)
    }

    fn buffer_len(buffer: &CpuBuffer) -> usize {
        buffer.len()
    }

    fn write_at(&self, buffer: &mut CpuBuffer, offset: usize, data: &[u8]) -> Result<(), HostError> {
        buffer.as_mut_slice()[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read_at(&self, buffer: &CpuBuffer, offset: usize, out: &mut [u8]) -> Result<(), HostError> {
        out.copy_from_slice(&buffer.as_slice()[offset..offset + out.len()]);
        Ok(())
    }

    /// Runs every rank as a coroutine on the workers, in the order of
    /// `schedule`, else of [`CpuOptions::schedule`]; the world is host
    /// memory, so nothing is read back.
    fn run<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
        layout: &Layout,
        order: Order<'_>,
    ) -> Result<Ran<CpuBuffer>, HostError> {
        let (index, count) = self.process();
        if count > 1 {
            across_processes(
                order.model.or(self.options.model).is_some(),
                order.schedule.unwrap_or(self.options.schedule),
            )?;
        }
        let mut world = CpuBuffer::zeroed(layout.total)?;
        config.write_header(world.as_mut_slice())?;
        if count > 1 {
            // Each process hands out its own share of the context ids, so
            // that creations in different processes never take the same one.
            let share = config.communicators / count;
            let given = layout.write_context_range(world.as_mut_slice(), index * share, share);
            // `index < count`, so the share ends at most at `communicators`.
            debug_assert!(given.is_some());
            // The ranks it runs: its non-blocking collectives' arrival tree
            // spans them alone (the relay joins the processes' parts).
            let per_process = layout.ranks / count;
            let given = layout.write_process_ranks(world.as_mut_slice(), index * per_process, per_process);
            debug_assert!(given.is_some());
        }
        let o = &self.options;
        let guard_pages = config.ranks <= o.guard_page_limit;
        let stacks = StackPool::new(config.ranks as usize, o.stack_bytes, guard_pages)?;
        if stacks.guarded() > 0 {
            stack::install_overflow_reporter();
        }
        let workers = o.workers.clamp(1, layout.blocks as usize);
        let timeout = (config.timeout_ns != 0).then(|| std::time::Duration::from_nanos(config.timeout_ns));
        let start = Instant::now();
        let per_process = layout.blocks / count;
        let blocks = index * per_process..(index + 1) * per_process;
        let relay = self.processes.map(|p| p.relay(layout.ranks / count));
        // SAFETY: `world` holds `layout.total` bytes laid out for `config`
        // with the header written, and lives (unused by anything else but
        // the relay, which touches it as the ranks do) until after `run`
        // returns, which joins every worker and the relay.
        let (outcome, parked) = unsafe {
            Run {
                entry: kernel.entry,
                world: world.as_ptr(),
                layout,
                args,
                stacks: &stacks,
                workers,
                timeout,
                schedule: order.schedule.unwrap_or(o.schedule),
                local_stacks: o.local_stacks,
                model: order.model.or(o.model),
                model_log: order.model_log.or(o.model_log),
                blocks: blocks.clone(),
                relay: relay.as_deref(),
            }
            .run_parked()
        };
        let elapsed = start.elapsed();
        drop(relay);
        if let Some(processes) = self.processes {
            let local = LocalEnd {
                ranks: blocks.start * layout.block_dim..blocks.end * layout.block_dim,
                outcome,
                parked,
                elapsed,
                stack_bytes: stacks.stack_bytes(),
            };
            let outcome = processes.merge(layout, world.as_mut_slice(), local);
            return Ok(Ran { world, outcome });
        }
        let outcome = match outcome {
            Outcome::Finished { sync, model } => Ok(RunStats {
                elapsed,
                sync_counts: Some(sync),
                model,
            }),
            Outcome::Deadlock(r) => Err(HostError::Deadlock(r)),
            Outcome::Panicked { rank, message } => Err(HostError::RankPanicked { rank, message }),
            Outcome::WarpMismatch { rank, message } => Err(HostError::WarpMismatch { rank, message }),
            Outcome::NoThread(source) => Err(AllocError::WorkerThread { source }.into()),
            Outcome::Remote => unreachable!("only a relay ends a run for another process"),
            Outcome::StackOverflow { rank } => Err(HostError::StackOverflow {
                rank,
                stack_bytes: stacks.stack_bytes(),
            }),
        };
        Ok(Ran { world, outcome })
    }

    fn world_bytes(world: &CpuBuffer) -> &[u8] {
        world.as_slice()
    }
}

/// Refuses what a world across processes cannot do on the emulator.
fn across_processes(model: bool, schedule: Schedule) -> Result<(), HostError> {
    let unsupported = |what| Err(DistributedError::Unsupported { what }.into());
    if model {
        return unsupported("the timing model");
    }
    if schedule != Schedule::Parallel {
        return unsupported("a seeded schedule");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_stack_bytes;

    #[test]
    fn stack_sizes_from_the_environment_parse_with_units_and_a_floor() {
        assert_eq!(parse_stack_bytes("65536"), Some(65536));
        assert_eq!(parse_stack_bytes(" 256K "), Some(256 * 1024));
        assert_eq!(parse_stack_bytes("4m"), Some(4 << 20));
        assert_eq!(parse_stack_bytes("1K"), None);
        assert_eq!(parse_stack_bytes("lots"), None);
        assert_eq!(parse_stack_bytes("K"), None);
    }
}
