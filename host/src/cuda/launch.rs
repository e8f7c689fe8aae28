//! Running a world on the GPU: the cuda backend's side of the crate's
//! `Backend` contract. A launch copies the header over a zeroed world,
//! launches cooperatively, waits while watching the world's abort word, and
//! reads the records back; a kernel that faults or never finishes poisons
//! the context.

use super::device::{CudaDevice, Inner};
use super::driver::{self, DeviceMemory, PinnedMemory};
use super::memory::CudaBuffer;
use crate::backend::{self, Backend, Order, Ran, RunStats};
use crate::error::{CudaError, DriverFailure, HostError, StuckReason};
use crate::launch::{LaunchReport, TracedLaunch};
use crate::report::{self, DeadlockReport};
use crate::spec::{Residency, WorldSpec};
use bytemuck::Pod;
use gpu_mpi_device::abi::layout::{launch_shared_bytes, Layout, ABORT_OFFSET, HEADER_BYTES};
use gpu_mpi_device::abi::WorldConfig;
use gpu_mpi_device::Kernel;
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// How often a launch reads the world's abort word while the kernel runs.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// How long a launch waits for a copy of the wait records out of a kernel
/// that does not finish.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(2);

/// Where a launch stands after waiting for its kernel.
enum Finish {
    Done,
    /// The kernel faulted (the context is unusable).
    Failed {
        error: DriverFailure,
        /// It surfaced while reading the abort word.
        reading_abort_word: bool,
    },
    /// The kernel does not finish; why the launch gave up.
    Stuck(StuckReason),
}

impl CudaDevice {
    /// The world configuration `spec` gives for kernel `name`, checked:
    /// `RankCount::Max` becomes this kernel's capacity, and a world that
    /// cannot be co-resident is [`HostError::NotCoResident`].
    pub fn resolve(&self, name: &str, spec: &WorldSpec) -> Result<WorldConfig, HostError> {
        backend::resolve_for(self, name, spec)
    }

    /// Runs `kernel` on a new world of `config` and reads the outcome.
    ///
    /// `config` should come from [`resolve`](Self::resolve); it is checked
    /// again. A config without a timeout gets
    /// [`CudaOptions::default_timeout`](super::CudaOptions::default_timeout).
    pub fn launch<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
    ) -> Result<LaunchReport, HostError> {
        backend::launch(self, kernel, args, config, Order::default())
    }

    /// As [`launch`](Self::launch), with the trace apart from the outcome
    /// (also after a timed-out deadlock; `None` when `config` has no trace or
    /// the world's memory could not be read back).
    pub fn launch_traced<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
    ) -> TracedLaunch {
        backend::launch_traced(self, kernel, args, config, Order::default())
    }
}

impl Backend for CudaDevice {
    const NAME: &'static str = "cuda";
    type Buffer = CudaBuffer;
    /// The world's image on the host: the header and the regions read back.
    type World = Vec<u8>;

    fn residency(&self, block_dim: u32) -> Residency {
        CudaDevice::residency(self, block_dim)
    }

    fn kernel_residency(&self, kernel: &str, block_dim: u32) -> Result<Residency, HostError> {
        CudaDevice::kernel_residency(self, kernel, block_dim)
    }

    /// The driver's occupancy with the dynamic shared memory a launch gives
    /// such blocks.
    fn kernel_residency_with_shared(
        &self,
        kernel: &str,
        block_dim: u32,
        shared_window_bytes: u64,
    ) -> Result<Residency, HostError> {
        let dynamic = u32::try_from(launch_shared_bytes(shared_window_bytes, block_dim)).unwrap_or(u32::MAX);
        let mut inner = self.lock();
        Ok(self
            .occupancy_locked(&mut inner, kernel, block_dim, dynamic)?
            .residency)
    }

    fn find_kernel(&self, kernel: &str) -> Result<(), HostError> {
        self.function_locked(&mut self.lock(), kernel).map(drop)
    }

    /// The kernel's occupancy decides, and a refusal names what the kernel
    /// uses ([`KernelOccupancy::check`](super::plan::KernelOccupancy::check)).
    fn check_fits(&self, kernel: &str, config: &WorldConfig) -> Result<(), HostError> {
        let mut inner = self.lock();
        self.occupancy_locked(&mut inner, kernel, config.block_dim, dynamic_shared_bytes(config))?
            .check(config.ranks)
    }

    /// Every GPU wait must be bounded: [`CudaOptions::default_timeout`](super::CudaOptions::default_timeout)
    /// when the spec has none, and the options' backoff.
    fn complete(&self, mut config: WorldConfig) -> WorldConfig {
        if config.timeout_ns == 0 {
            config.timeout_ns = u64::try_from(self.options.default_timeout.as_nanos())
                .unwrap_or(u64::MAX)
                .max(1);
        }
        if config.backoff_max_ns == 0 {
            config.backoff_max_ns = self.options.default_backoff_max_ns.unwrap_or(0);
        }
        config
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<CudaBuffer, HostError> {
        CudaDevice::alloc_zeroed(self, bytes)
    }

    fn buffer_len(buffer: &CudaBuffer) -> usize {
        buffer.len()
    }

    fn write_at(&self, buffer: &mut CudaBuffer, offset: usize, data: &[u8]) -> Result<(), HostError> {
        self.write_in_range(buffer, offset, data)
    }

    fn read_at(&self, buffer: &CudaBuffer, offset: usize, out: &mut [u8]) -> Result<(), HostError> {
        let inner = self.lock();
        self.download_locked(&inner, buffer.device_address() + offset as u64, out)
    }

    /// Copies the header over a zeroed world, launches cooperatively, waits
    /// while watching the abort word, and reads back the header, the
    /// records and the trace buffers (and the outboxes after a deadlock).
    /// A kernel that faults or never finishes poisons the context.
    fn run<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
        layout: &Layout,
        _order: Order<'_>,
    ) -> Result<Ran<Vec<u8>>, HostError> {
        let mut inner = self.lock();
        let dynamic_shared = dynamic_shared_bytes(config);
        let occupancy = self.occupancy_locked(&mut inner, kernel.name, config.block_dim, dynamic_shared)?;
        if self.options.verbose {
            eprintln!(
                "gpu-mpi: cuda: launch {}: {} ranks in {} blocks of {}, timeout {:.3} s, backoff max {} ns; fits {} ({} SMs x {} blocks, limit: {}; {})",
                kernel.name,
                config.ranks,
                layout.blocks,
                layout.block_dim,
                config.timeout_ns as f64 / 1e9,
                config.effective_backoff_max_ns(),
                occupancy.capacity(),
                occupancy.residency.sms,
                occupancy.residency.blocks_per_sm,
                occupancy.residency.limit,
                occupancy.describe()
            );
        }
        let function = self.function_locked(&mut inner, kernel.name)?;

        // The world's image on the host: zeroed (lazily, by the allocator),
        // with the header. Only the header is copied; the rest is zeroed on
        // the device. After the launch, the records come back into it.
        let mut image = vec![0u8; layout.total];
        config.write_header(&mut image)?;
        let head = HEADER_BYTES.min(layout.total);

        let world = DeviceMemory::alloc(&self.ctx, layout.total)?;
        let args_memory = DeviceMemory::alloc(&self.ctx, std::mem::size_of::<A>())?;
        let args_bytes = bytemuck::bytes_of(args);
        let stream = &inner.stream;
        world.zero_async(stream)?;
        // SAFETY: each copy's device range lies in its allocation (the
        // descriptors' in the module's symbol, found at open with at least
        // HEADER_BYTES >= `head` bytes); the host
        // sources (`image`, `args_bytes`) outlive the copies (pageable
        // sources are staged before the call returns, and the stream is
        // waited for before this function returns in any case).
        unsafe {
            driver::copy_to_device_async(world.ptr(), &image[..head], stream)?;
            // The ranks read the config and the layout from the module's
            // constant bank (`shim::descriptors`): the same header there.
            // Launches of this device are one at a time (the lock held),
            // so the copy is this launch's until it ends.
            driver::copy_to_device_async(inner.descriptors, &image[..head], stream)?;
            if !args_bytes.is_empty() {
                driver::copy_to_device_async(args_memory.ptr(), args_bytes, stream)?;
            }
        }

        // The entry's parameters: `(world_memory: u64, args: u64)`.
        let mut world_param: u64 = world.ptr();
        let mut args_param: u64 = args_memory.ptr();
        let mut params: [*mut c_void; 2] = [
            &mut world_param as *mut u64 as *mut c_void,
            &mut args_param as *mut u64 as *mut c_void,
        ];
        inner.start.record(stream)?;
        // SAFETY: `function` is the entry `kernel.name` of the loaded module,
        // whose parameters are two u64 (the `kernel!` macro's entry
        // signature), and `params` points to two u64. The world holds
        // `layout.total` bytes laid out for `config` with its header written
        // (ordered before the launch on the stream), and `args_memory` a copy
        // of the `A` that the entry expects; both stay allocated until the
        // kernel finished or, if it never does, for the rest of the process
        // (leaked below). The grid is `layout.blocks` blocks of `block_dim`,
        // which the occupancy check above found co-resident.
        unsafe {
            function.function.launch_cooperative(
                layout.blocks,
                layout.block_dim,
                dynamic_shared,
                stream,
                &mut params,
            )
        }
        .map_err(|e| CudaError::Call {
            call: format!(
                "cuLaunchCooperativeKernel({}, {} blocks of {})",
                kernel.name, layout.blocks, layout.block_dim
            ),
            error: e.failure,
        })?;
        if let Err(e) = inner.stop.record(stream) {
            // The kernel is queued: wait for it before the memory is freed.
            let _ = stream.synchronize();
            return Err(e.into());
        }

        let timeout = Duration::from_nanos(config.timeout_ns);
        match self.wait_locked(&mut inner, world.ptr(), timeout) {
            Finish::Done => {}
            Finish::Failed {
                error,
                reading_abort_word,
            } => {
                let e = CudaError::KernelFailed {
                    kernel: kernel.name.into(),
                    error,
                    reading_abort_word,
                };
                self.ctx.poison(e.to_string());
                world.leak();
                args_memory.leak();
                return Err(e.into());
            }
            Finish::Stuck(why) => {
                let records = self.snapshot_locked(&inner, world.ptr(), layout, &mut image);
                let e = CudaError::KernelStuck {
                    kernel: kernel.name.into(),
                    why,
                    records,
                };
                // Later calls name the hang, not the wait records again.
                let poisoned = CudaError::KernelStuck {
                    kernel: kernel.name.into(),
                    why,
                    records: None,
                };
                self.ctx.poison(poisoned.to_string());
                world.leak();
                args_memory.leak();
                return Err(e.into());
            }
        }
        let ms = inner.stop.elapsed_ms_since(&inner.start)?;
        let elapsed = Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3);

        // Back come the header (the abort word), the wait and result records
        // and the trace buffers: the world's front, one range.
        let front = layout.front();
        self.download_locked(&inner, world.ptr(), &mut image[front])?;
        if report::timed_out(&image, layout) {
            // A deadlock: its report also lists the messages left in the
            // outboxes, as the emulator's does.
            let messages = layout.messages();
            self.download_locked(&inner, world.ptr() + messages.start as u64, &mut image[messages])?;
        }
        Ok(Ran {
            world: image,
            outcome: Ok(RunStats {
                elapsed,
                // The GPU's atomics are not counted (docs/emulator.md).
                sync_counts: None,
                // The GPU's time is measured, not modelled.
                model: None,
            }),
        })
    }

    fn world_bytes(world: &Vec<u8>) -> &[u8] {
        world
    }
}

impl CudaDevice {
    /// Waits for the launch's stop event, watching the world's abort word
    /// (docs/gpu.md, "Timeouts and the abort path").
    fn wait_locked(&self, inner: &mut Inner, world: u64, timeout: Duration) -> Finish {
        let started = Instant::now();
        let grace = self.options.abort_grace.max(timeout);
        let mut aborted_at: Option<Instant> = None;
        let mut probing = false;
        let mut next_probe = started + PROBE_INTERVAL;
        let mut pause = Duration::from_micros(10);
        loop {
            match inner.stop.query() {
                Ok(true) => return Finish::Done,
                Ok(false) => {}
                Err(e) => {
                    return Finish::Failed {
                        error: e.failure,
                        reading_abort_word: false,
                    }
                }
            }
            let now = Instant::now();
            if probing {
                match inner.probe_stream.query() {
                    Ok(true) => {
                        probing = false;
                        // SAFETY: the copy into the probe word completed.
                        let word = unsafe { inner.probe_word.read() };
                        let aborted = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]) != 0;
                        if aborted && aborted_at.is_none() {
                            aborted_at = Some(now);
                        }
                    }
                    Ok(false) => {}
                    Err(e) => {
                        return Finish::Failed {
                            error: e.failure,
                            reading_abort_word: true,
                        }
                    }
                }
            } else if now >= next_probe {
                next_probe = now + PROBE_INTERVAL;
                let dst = inner.probe_word.as_mut_ptr();
                // SAFETY: the source is the abort word inside the world
                // allocation (ABORT_OFFSET + 4 <= HEADER_BYTES); the
                // destination is 64 bytes of pinned memory that no other copy
                // targets now (`probing` was false) and that lives in `inner`.
                let r = unsafe {
                    driver::copy_to_host_async(dst, world + ABORT_OFFSET as u64, 4, &inner.probe_stream)
                };
                if let Err(e) = r {
                    return Finish::Failed {
                        error: e.failure,
                        reading_abort_word: true,
                    };
                }
                probing = true;
            }
            if let Some(t) = aborted_at {
                if now.duration_since(t) > grace {
                    return Finish::Stuck(StuckReason::AbortedButRunning {
                        since: now.duration_since(t),
                    });
                }
            }
            if let Some(w) = self.options.watchdog {
                if now.duration_since(started) > w {
                    return Finish::Stuck(StuckReason::Watchdog {
                        watchdog: w,
                        aborted: aborted_at.is_some(),
                    });
                }
            }
            if now.duration_since(started) < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(1));
            }
        }
    }

    /// Copies the wait and result records out of a world whose kernel still
    /// runs, into `image`, and reads them as a deadlock report. `None` when
    /// the copy fails or does not complete in time.
    fn snapshot_locked(
        &self,
        inner: &Inner,
        world: u64,
        layout: &Layout,
        image: &mut [u8],
    ) -> Option<DeadlockReport> {
        let records = layout.host_records();
        let bytes = records.len();
        let mut pinned = PinnedMemory::alloc(&self.ctx, bytes).ok()?;
        let dst = pinned.as_mut_ptr();
        // SAFETY: the source range is the records region of the world
        // allocation (`Layout::host_records`, inside `total`); the
        // destination is `bytes` of pinned memory owned by `pinned`, which
        // is leaked rather than freed below unless the copy completed.
        let r = unsafe {
            driver::copy_to_host_async(dst, world + records.start as u64, bytes, &inner.probe_stream)
        };
        if r.is_err() {
            pinned.leak();
            return None;
        }
        let deadline = Instant::now() + SNAPSHOT_WAIT;
        loop {
            match inner.probe_stream.query() {
                Ok(true) => break,
                Ok(false) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                _ => {
                    pinned.leak();
                    return None;
                }
            }
        }
        // SAFETY: the copy completed (the probe stream is idle).
        let copied = unsafe { pinned.read() };
        let n = bytes.min(pinned.len());
        image[records.start..records.start + n].copy_from_slice(&copied[..n]);
        // The context is about to be poisoned: leave the memory to the exit.
        pinned.leak();
        Some(DeadlockReport::from_world(image, layout, |_| false))
    }
}

/// The dynamic shared memory a world's blocks get
/// (`WorldConfig::launch_shared_bytes`): its shared window memory and the
/// non-blocking collectives' small words, 16 bytes a rank
/// (`WorldConfig::layout` has checked the first against
/// `MAX_SHARED_WINDOW_BYTES` and the block's size, so it fits a `u32`).
fn dynamic_shared_bytes(config: &WorldConfig) -> u32 {
    u32::try_from(config.launch_shared_bytes()).unwrap_or(u32::MAX)
}
