//! The cuda backend: runs the kernels' PTX on an NVIDIA GPU through the
//! CUDA driver API (crate `cudarc`, loading `libcuda` at run time, so this
//! builds and its tests run on machines without CUDA).
//!
//! [`CudaDevice`] implements the crate's backend contract (the `Backend`
//! trait of `backend.rs`, which also holds the steps every launch shares);
//! [`CudaBuffer`] is its memory. What it does (docs/gpu.md, "The cuda
//! backend"):
//!
//! - **open**: finds the driver (`is_culib_present`), device
//!   [`CudaOptions::ordinal`] (0), requires compute capability 7.0 and
//!   cooperative launch, retains the device's primary context and loads the
//!   best embedded image ([`plan::choose_images`]): SASS of the device's
//!   major SM with a minor not above its own, else the PTX of the highest SM
//!   not above the device's compute capability, JIT-compiled by the driver
//!   with [`CudaOptions::max_registers`] (a cap skips SASS). Anything missing
//!   is [`HostError::NoGpu`] with the reason.
//! - **launch**: sizes the world by the driver's occupancy for *this* kernel
//!   and block size ([`plan::KernelOccupancy`]) and refuses one that cannot be
//!   co-resident ([`HostError::NotCoResident`]); writes the world header on
//!   the host and copies it over a zeroed world (ranks do no set-up); gives
//!   every wait [`CudaOptions::default_timeout`] when the spec has none;
//!   launches cooperatively (`cuLaunchCooperativeKernel`: the driver itself
//!   refuses a grid that cannot be co-resident), times the kernel with events
//!   and reads the outcome from the wait and result records with
//!   [`report::check_world`], as the emulator does.
//! - **a kernel that does not finish**: the host polls; when the world's
//!   abort word has been set (a wait timed out) for [`CudaOptions::abort_grace`]
//!   and the kernel still runs, or the kernel outlives
//!   [`CudaOptions::watchdog`], the launch fails with the wait records read
//!   while the kernel runs, and the context is *poisoned*: later calls fail
//!   at once (a CUDA kernel cannot be stopped; the process's exit ends it).
//!
//! The pure parts (image choice, occupancy model) are in [`plan`].

pub(crate) mod driver;
pub mod plan;

use crate::backend::{self, Backend, Ran, RunStats};
use crate::error::{CudaError, DriverFailure, HostError, NoGpu, OptionError, StuckReason};
use crate::images::KernelImages;
use crate::launch::{LaunchReport, TracedLaunch};
use crate::report::{self, DeadlockReport};
use crate::schedule::Schedule;
use crate::spec::{Residency, WorldSpec};
use bytemuck::Pod;
use cudarc::driver::{sys, DriverError};
use driver::{Context, DeviceMemory, Event, Function, Module, PinnedMemory, Stream};
use gpu_mpi_device::state::{Layout, ABORT_OFFSET, HEADER_BYTES};
use gpu_mpi_device::{Kernel, WorldConfig};
use plan::{DeviceLimits, ImageKind, ImageSet, KernelImage, KernelOccupancy, KernelResources};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a launch reads the world's abort word while the kernel runs.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// How long a launch waits for a copy of the wait records out of a kernel
/// that does not finish.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(2);

/// Choices of the cuda backend. [`CudaOptions::from_env`] reads them from
/// the environment (what [`crate::Device::open`] uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// The device (`GPU_MPI_CUDA_DEVICE`; default 0).
    pub ordinal: u32,
    /// Caps the registers per thread of every kernel when the driver
    /// JIT-compiles the PTX (`CU_JIT_MAX_REGISTERS`; `GPU_MPI_MAX_REGISTERS`,
    /// 16..=255, `0` or unset: no cap). A cap lets more ranks be co-resident
    /// (the MPI-style kernels use 140-190 registers: 256 ranks per H100 SM
    /// uncapped, 512 at 128) at the price of spills to local memory; default
    /// no cap (docs/gpu.md, "Registers and occupancy"). A cap loads PTX
    /// even where SASS for the device is embedded: only the JIT applies it.
    pub max_registers: Option<u32>,
    /// The bound of every wait when the spec has no timeout
    /// (`GPU_MPI_TIMEOUT_MS`; default 5 s). Every GPU wait must be bounded:
    /// a deadlocked world otherwise never finishes.
    pub default_timeout: Duration,
    /// The longest sleep between two polls of a GPU wait when the spec sets
    /// none (`GPU_MPI_BACKOFF_NS`, 1..; default: the device library's,
    /// 1024 ns).
    pub default_backoff_max_ns: Option<u32>,
    /// How long a kernel may go on after its world was aborted (a wait timed
    /// out) before the launch gives up on it (default 10 s, at least the
    /// world's timeout).
    pub abort_grace: Duration,
    /// The longest a kernel may run at all (`GPU_MPI_WATCHDOG_S`, `0`: no
    /// limit; default 120 s). It catches ranks stuck outside any bounded
    /// wait (a block barrier that exited ranks never reach, user code
    /// spinning on memory).
    pub watchdog: Option<Duration>,
    /// Prints one line on stderr when the device opens (device, the image
    /// loaded, its load time) and one per launch (kernel, world, occupancy and its limit)
    /// (`GPU_MPI_CUDA_VERBOSE=1`; default off).
    pub verbose: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            ordinal: 0,
            max_registers: None,
            default_timeout: Duration::from_secs(5),
            default_backoff_max_ns: None,
            abort_grace: Duration::from_secs(10),
            watchdog: Some(Duration::from_secs(120)),
            verbose: false,
        }
    }
}

impl CudaOptions {
    /// The defaults, changed by `GPU_MPI_CUDA_DEVICE`, `GPU_MPI_MAX_REGISTERS`,
    /// `GPU_MPI_TIMEOUT_MS`, `GPU_MPI_BACKOFF_NS`, `GPU_MPI_WATCHDOG_S` and `GPU_MPI_CUDA_VERBOSE`
    /// where set. Fails on a
    /// value that is not a number in range.
    pub fn from_env() -> Result<CudaOptions, OptionError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), with the variables from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<CudaOptions, OptionError> {
        let mut o = CudaOptions::default();
        let bad = |variable: &'static str, value: u64, expected: &'static str| OptionError {
            variable,
            value: value.to_string(),
            expected,
        };
        let number = |variable: &'static str| -> Result<Option<u64>, OptionError> {
            match var(variable) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| OptionError {
                    variable,
                    value: v,
                    expected: "a whole number",
                }),
            }
        };
        if let Some(n) = number("GPU_MPI_CUDA_DEVICE")? {
            o.ordinal = u32::try_from(n).map_err(|_| bad("GPU_MPI_CUDA_DEVICE", n, "a device ordinal"))?;
        }
        match number("GPU_MPI_MAX_REGISTERS")? {
            None | Some(0) => {}
            Some(n @ 16..=255) => o.max_registers = Some(n as u32),
            Some(n) => return Err(bad("GPU_MPI_MAX_REGISTERS", n, "16..=255, or 0 for no cap")),
        }
        match number("GPU_MPI_TIMEOUT_MS")? {
            None => {}
            Some(0) => {
                return Err(bad(
                    "GPU_MPI_TIMEOUT_MS",
                    0,
                    "a positive number of milliseconds (GPU waits must be bounded)",
                ))
            }
            Some(ms) => o.default_timeout = Duration::from_millis(ms),
        }
        match number("GPU_MPI_BACKOFF_NS")? {
            None => {}
            Some(n @ 1..=0xffff_ffff) => o.default_backoff_max_ns = Some(n as u32),
            Some(n) => return Err(bad("GPU_MPI_BACKOFF_NS", n, "1..=4294967295")),
        }
        match number("GPU_MPI_WATCHDOG_S")? {
            None => {}
            Some(0) => o.watchdog = None,
            Some(s) => o.watchdog = Some(Duration::from_secs(s)),
        }
        o.verbose = number("GPU_MPI_CUDA_VERBOSE")?.is_some_and(|v| v != 0);
        Ok(o)
    }
}

/// What was opened: the device, its limits and the kernel image loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CudaInfo {
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Its ordinal.
    pub ordinal: u32,
    /// Compute capability as `major * 10 + minor` (90 for 9.0).
    pub compute_capability: u32,
    /// The driver's CUDA version as `1000 * major + 10 * minor` (12080).
    pub driver_version: u32,
    /// The SM of the image loaded (70, 80 or 90), PTX or SASS ([`image`](Self::image)).
    pub ptx_sm: u32,
    /// Whether the image loaded was SASS or PTX (JIT-compiled).
    pub image: ImageKind,
    /// The device's limits.
    pub limits: DeviceLimits,
    /// Peak SM clock in kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`); `None`
    /// where the driver no longer reports it.
    pub sm_clock_khz: Option<u32>,
    /// Peak memory clock in kHz (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`);
    /// `None` where the driver no longer reports it.
    pub memory_clock_khz: Option<u32>,
    /// The register cap the PTX was compiled with (always `None` for SASS).
    pub max_registers: Option<u32>,
    /// Whether the device runs a display watchdog that kills long kernels.
    pub kernel_exec_timeout: bool,
    /// How long loading the module took (for PTX: JIT-compiling it).
    pub jit_time: Duration,
}

impl fmt::Display for CudaInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (device {}, compute capability {}, {} SMs, driver CUDA {}.{}), sm_{} {}, registers {}",
            self.name,
            self.ordinal,
            plan::compute_capability(self.compute_capability),
            self.limits.sms,
            self.driver_version / 1000,
            self.driver_version % 1000 / 10,
            self.ptx_sm,
            self.image,
            match self.max_registers {
                Some(n) => format!("capped at {n}"),
                None => "uncapped".into(),
            }
        )?;
        if self.kernel_exec_timeout {
            f.write_str(", display watchdog on")?;
        }
        Ok(())
    }
}

/// Memory on the GPU.
pub struct CudaBuffer {
    memory: DeviceMemory,
}

impl fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaBuffer")
            .field("len", &self.len())
            .field("address", &format_args!("{:#x}", self.device_address()))
            .finish()
    }
}

impl CudaBuffer {
    /// Bytes of the allocation.
    pub fn len(&self) -> usize {
        self.memory.bytes()
    }

    /// Whether the allocation is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address (256-byte aligned).
    pub fn device_address(&self) -> u64 {
        self.memory.ptr()
    }
}

/// A kernel of the loaded module and what it uses.
#[derive(Clone, Copy)]
struct LoadedKernel {
    function: Function,
    resources: KernelResources,
}

/// The driver objects of an open device, used under one lock (fields drop
/// in order: the functions' module last).
struct Inner {
    /// Every copy and launch.
    stream: Stream,
    /// Reads the abort word while a kernel runs on `stream`.
    probe_stream: Stream,
    start: Event,
    stop: Event,
    probe_word: PinnedMemory,
    functions: HashMap<String, LoadedKernel>,
    occupancy: HashMap<(String, u32), KernelOccupancy>,
    module: Module,
}

/// An NVIDIA GPU.
pub struct CudaDevice {
    ctx: Arc<Context>,
    info: Box<CudaInfo>,
    options: CudaOptions,
    /// The kernel entry points of the loaded module.
    entries: Vec<&'static str>,
    inner: Box<Mutex<Inner>>,
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .field("options", &self.options)
            .field("kernels", &self.entries.len())
            .finish()
    }
}

/// The text of a panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

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
    /// Opens the GPU with [`CudaOptions::from_env`] and loads the best of the
    /// `ptx` variants (`("sm_70", text)`, ...; a label that is not `sm_XX`
    /// is read from the PTX's `.target`). [`HostError::NoGpu`] says why no
    /// GPU is usable: no driver, no device, compute capability below 7.0, no
    /// cooperative launch, no PTX for this device.
    pub fn open(ptx: &[(&'static str, &'static str)]) -> Result<CudaDevice, HostError> {
        let options = CudaOptions::from_env().map_err(NoGpu::from)?;
        CudaDevice::open_with(options, ptx)
    }

    /// Opens the GPU with these options.
    pub fn open_with(
        options: CudaOptions,
        ptx: &[(&'static str, &'static str)],
    ) -> Result<CudaDevice, HostError> {
        CudaDevice::open_set(
            options,
            ImageSet {
                ptx,
                ..ImageSet::default()
            },
        )
    }

    /// Opens the GPU with [`CudaOptions::from_env`] and loads the best of
    /// `kernels` ([`plan::choose_images`]: SASS for the device when there is
    /// some, else PTX). Without kernels, [`HostError::NoGpu`] says why
    /// ([`KernelImages::built_without`]).
    pub fn open_images(kernels: &KernelImages) -> Result<CudaDevice, HostError> {
        let options = CudaOptions::from_env().map_err(NoGpu::from)?;
        CudaDevice::open_images_with(options, kernels)
    }

    /// [`open_images`](Self::open_images) with these options.
    pub fn open_images_with(options: CudaOptions, kernels: &KernelImages) -> Result<CudaDevice, HostError> {
        CudaDevice::open_set(options, kernels.into())
    }

    fn open_set(options: CudaOptions, images: ImageSet<'_>) -> Result<CudaDevice, HostError> {
        // Without images no GPU is usable, whatever the driver: say why first.
        if images.is_empty() {
            if let Err(e) = plan::choose_images(images, 0, false) {
                return Err(NoGpu::from(e).into());
            }
        }
        if !driver::library_present() {
            return Err(NoGpu::NoDriver.into());
        }
        // cudarc panics when the library lacks a symbol it is asked for (a
        // driver older than CUDA 11): report that as no usable GPU.
        match std::panic::catch_unwind(|| CudaDevice::open_loaded(options, images)) {
            Ok(r) => r,
            Err(p) => Err(NoGpu::OldDriver {
                missing: panic_text(&*p),
            }
            .into()),
        }
    }

    fn open_loaded(options: CudaOptions, images: ImageSet<'_>) -> Result<CudaDevice, HostError> {
        use sys::CUdevice_attribute as A;
        driver::init().map_err(|e| NoGpu::Init(e.failure))?;
        let count = driver::device_count()?;
        if count == 0 {
            return Err(NoGpu::NoDevice.into());
        }
        if options.ordinal >= count {
            return Err(NoGpu::NoSuchDevice {
                ordinal: options.ordinal,
                count,
            }
            .into());
        }
        let device = driver::device_get(options.ordinal)?;
        let name = device.name()?;
        let attr = |a| device.attribute(a);
        let cc = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
            + attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        if cc < plan::MIN_COMPUTE_CAPABILITY {
            return Err(NoGpu::ComputeCapability {
                name,
                major: cc / 10,
                minor: cc % 10,
            }
            .into());
        }
        if attr(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? == 0 {
            return Err(NoGpu::NoCooperativeLaunch { name }.into());
        }
        let candidates =
            plan::choose_images(images, cc, options.max_registers.is_some()).map_err(NoGpu::from)?;
        let limits = DeviceLimits {
            sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            registers_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            shared_memory_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            reserved_shared_memory_per_block: attr(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
        };
        let kernel_exec_timeout = attr(A::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)? != 0;
        // For the record only: CUDA 13 deprecates the clock attributes, so a
        // refusal leaves them unknown instead of failing the open.
        let sm_clock_khz = attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).ok();
        let memory_clock_khz = attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).ok();
        let driver_version = driver::driver_version()?;

        let ctx = Context::retain(device)?;
        let jit_start = Instant::now();
        let mut loaded = None;
        let mut refusals = Vec::new();
        for &image in &candidates {
            let result = match image {
                KernelImage::Ptx { text, .. } => Module::load_ptx(&ctx, text, options.max_registers),
                // SAFETY: an embedded cubin is a whole ELF image (the
                // assembler's output, `include_bytes!`-ed whole).
                KernelImage::Sass { cubin, .. } => unsafe { Module::load_cubin(&ctx, cubin) },
            };
            match result {
                Ok(m) => {
                    loaded = Some((image, m));
                    break;
                }
                // A driver older than the PTX ISA of this variant, or one
                // that refuses this cubin: try the next image.
                Err(
                    e @ CudaError::ModuleLoad {
                        error:
                            DriverFailure {
                                code: DriverError(code),
                                ..
                            },
                        ..
                    },
                ) if matches!(
                    code,
                    sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                        | sys::CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
                ) || (image.kind() == ImageKind::Sass
                    && code == sys::CUresult::CUDA_ERROR_INVALID_IMAGE) =>
                {
                    refusals.push(format!("{image}: {e}"))
                }
                Err(e) => return Err(e.into()),
            }
        }
        let Some((image, module)) = loaded else {
            return Err(CudaError::EveryImageRejected { refusals }.into());
        };
        // A cubin's entries are those of the PTX it was assembled from.
        let entries = match image {
            KernelImage::Ptx { text, .. } => plan::ptx_entries(text),
            KernelImage::Sass { .. } => images
                .ptx
                .iter()
                .map(|(_, text)| plan::ptx_entries(text))
                .find(|e| !e.is_empty())
                .unwrap_or_default(),
        };
        let jit_time = jit_start.elapsed();
        let stream = Stream::non_blocking(&ctx)?;
        let probe_stream = Stream::non_blocking(&ctx)?;
        let start = Event::new(&ctx)?;
        let stop = Event::new(&ctx)?;
        let probe_word = PinnedMemory::alloc(&ctx, 64)?;
        let device = CudaDevice {
            info: Box::new(CudaInfo {
                name,
                ordinal: options.ordinal,
                compute_capability: cc,
                driver_version,
                ptx_sm: image.sm(),
                image: image.kind(),
                limits,
                sm_clock_khz,
                memory_clock_khz,
                max_registers: match image {
                    KernelImage::Ptx { .. } => options.max_registers,
                    KernelImage::Sass { .. } => None,
                },
                kernel_exec_timeout,
                jit_time,
            }),
            entries,
            options,
            inner: Box::new(Mutex::new(Inner {
                stream,
                probe_stream,
                start,
                stop,
                probe_word,
                functions: HashMap::new(),
                occupancy: HashMap::new(),
                module,
            })),
            ctx,
        };
        if device.options.verbose {
            eprintln!(
                "gpu-mpi: cuda: {}; {} kernels, loaded in {:.1} s",
                device.info,
                device.entries.len(),
                device.info.jit_time.as_secs_f64()
            );
        }
        Ok(device)
    }

    /// The device and the PTX loaded.
    pub fn info(&self) -> &CudaInfo {
        &self.info
    }

    /// The options it was opened with.
    pub fn options(&self) -> &CudaOptions {
        &self.options
    }

    /// The kernel entry points of the loaded module.
    pub fn kernels(&self) -> &[&'static str] {
        &self.entries
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many ranks fit at once in blocks of `block_dim` for *every*
    /// kernel of the loaded module: the smallest [`kernel_residency`]
    /// (occupancy depends on the kernel's registers; use `kernel_residency`
    /// for one kernel). Without kernels: the device's thread and block limits.
    ///
    /// [`kernel_residency`]: Self::kernel_residency
    pub fn residency(&self, block_dim: u32) -> Residency {
        let mut best: Option<Residency> = None;
        for name in &self.entries {
            if let Ok(o) = self.kernel_occupancy(name, block_dim) {
                if best.is_none_or(|b| o.capacity() < b.capacity()) {
                    best = Some(o.residency);
                }
            }
        }
        best.unwrap_or_else(|| {
            let l = &self.info.limits;
            Residency::from_limits(
                l.sms,
                l.max_threads_per_sm,
                l.max_blocks_per_sm,
                l.max_threads_per_block,
                block_dim,
            )
        })
    }

    /// How many ranks of kernel `name` fit at once in blocks of `block_dim`.
    pub fn kernel_residency(&self, name: &str, block_dim: u32) -> Result<Residency, HostError> {
        Ok(self.kernel_occupancy(name, block_dim)?.residency)
    }

    /// The occupancy of kernel `name` in blocks of `block_dim`: the driver's
    /// count, what each resource allows and which runs out first.
    pub fn kernel_occupancy(&self, name: &str, block_dim: u32) -> Result<KernelOccupancy, HostError> {
        let mut inner = self.lock();
        self.occupancy_locked(&mut inner, name, block_dim)
    }

    fn function_locked(&self, inner: &mut Inner, name: &str) -> Result<LoadedKernel, HostError> {
        use sys::CUfunction_attribute as F;
        if let Some(f) = inner.functions.get(name) {
            return Ok(*f);
        }
        self.ctx.bind()?;
        let c_name = CString::new(name).map_err(|_| CudaError::KernelName { name: name.into() })?;
        let function = match inner.module.function(&c_name) {
            Err(e) if e.code() == sys::CUresult::CUDA_ERROR_NOT_FOUND => {
                return Err(CudaError::KernelNotFound {
                    name: name.into(),
                    ptx_sm: self.info.ptx_sm,
                    image: self.info.image,
                    error: e.failure,
                }
                .into())
            }
            r => r?,
        };
        let attr = |a| {
            // SAFETY: the function's module is `inner.module`, loaded.
            unsafe { function.attribute(a) }
        };
        let f = LoadedKernel {
            function,
            resources: KernelResources {
                registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
                shared_bytes: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            },
        };
        inner.functions.insert(name.to_string(), f);
        Ok(f)
    }

    fn occupancy_locked(
        &self,
        inner: &mut Inner,
        name: &str,
        block_dim: u32,
    ) -> Result<KernelOccupancy, HostError> {
        let key = (name.to_string(), block_dim);
        if let Some(o) = inner.occupancy.get(&key) {
            return Ok(o.clone());
        }
        let f = self.function_locked(inner, name)?;
        let bounds = plan::Bounds::new(&self.info.limits, &f.resources, block_dim);
        let driver_count = if bounds.too_large.is_some() {
            None
        } else {
            self.ctx.bind()?;
            // SAFETY: the function's module is `inner.module`, loaded.
            Some(unsafe { f.function.max_active_blocks_per_sm(block_dim) }?)
        };
        let o = KernelOccupancy::new(name, &self.info.limits, &f.resources, block_dim, driver_count);
        inner.occupancy.insert(key, o.clone());
        Ok(o)
    }

    /// The world configuration `spec` gives for kernel `name`, checked:
    /// `RankCount::Max` becomes this kernel's capacity, and a world that
    /// cannot be co-resident is [`HostError::NotCoResident`].
    pub fn resolve(&self, name: &str, spec: &WorldSpec) -> Result<WorldConfig, HostError> {
        backend::resolve_for(self, name, spec)
    }

    /// `bytes` zeroed bytes of GPU memory (256-byte aligned).
    pub fn alloc_zeroed(&self, bytes: usize) -> Result<CudaBuffer, HostError> {
        let inner = self.lock();
        let memory = DeviceMemory::alloc(&self.ctx, bytes)?;
        memory.zero_async(&inner.stream)?;
        inner.stream.synchronize()?;
        Ok(CudaBuffer { memory })
    }

    /// Copies `data` into `buffer` from byte `offset` on.
    pub fn upload(&self, buffer: &mut CudaBuffer, offset: usize, data: &[u8]) -> Result<(), HostError> {
        backend::upload(self, buffer, offset, data)
    }

    /// Copies `out.len()` bytes from `buffer`, starting at byte `offset`.
    pub fn download(&self, buffer: &CudaBuffer, offset: usize, out: &mut [u8]) -> Result<(), HostError> {
        backend::download(self, buffer, offset, out)
    }

    fn download_locked(&self, inner: &Inner, src: u64, out: &mut [u8]) -> Result<(), HostError> {
        if out.is_empty() {
            return Ok(());
        }
        self.ctx.bind()?;
        // SAFETY: the caller passes a source range of device memory it owns;
        // `out` is valid for writes of its length and borrowed until the copy
        // completed (the stream is synchronised before returning).
        unsafe {
            driver::copy_to_host_async(out.as_mut_ptr() as *mut c_void, src, out.len(), &inner.stream)
        }?;
        Ok(inner.stream.synchronize()?)
    }

    /// Runs `kernel` on a new world of `config` and reads the outcome.
    ///
    /// `config` should come from [`resolve`](Self::resolve); it is checked
    /// again. A config without a timeout gets
    /// [`CudaOptions::default_timeout`].
    pub fn launch<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        config: &WorldConfig,
    ) -> Result<LaunchReport, HostError> {
        backend::launch(self, kernel, args, config, None)
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
        backend::launch_traced(self, kernel, args, config, None)
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

    fn find_kernel(&self, kernel: &str) -> Result<(), HostError> {
        self.function_locked(&mut self.lock(), kernel).map(drop)
    }

    /// The kernel's occupancy decides, and a refusal names what the kernel
    /// uses ([`KernelOccupancy::check`]).
    fn check_fits(&self, kernel: &str, config: &WorldConfig) -> Result<(), HostError> {
        self.kernel_occupancy(kernel, config.block_dim)?
            .check(config.ranks)
    }

    /// Every GPU wait must be bounded: [`CudaOptions::default_timeout`]
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
        let inner = self.lock();
        self.ctx.bind()?;
        // SAFETY: the destination range lies in the buffer (the caller's
        // contract), which `&mut` keeps alive; `data` outlives the copy (the
        // stream is synchronised before returning).
        unsafe {
            driver::copy_to_device_async(buffer.device_address() + offset as u64, data, &inner.stream)
        }?;
        Ok(inner.stream.synchronize()?)
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
        _schedule: Option<Schedule>,
    ) -> Result<Ran<Vec<u8>>, HostError> {
        let mut inner = self.lock();
        let occupancy = self.occupancy_locked(&mut inner, kernel.name, config.block_dim)?;
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
        // SAFETY: each copy's device range lies in its allocation; the host
        // sources (`image`, `args_bytes`) outlive the copies (pageable
        // sources are staged before the call returns, and the stream is
        // waited for before this function returns in any case).
        unsafe {
            driver::copy_to_device_async(world.ptr(), &image[..head], stream)?;
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
            function
                .function
                .launch_cooperative(layout.blocks, layout.block_dim, stream, &mut params)
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

        // Back come the header (the abort word) and the wait and result
        // records, the last two regions of the world.
        self.download_locked(&inner, world.ptr(), &mut image[..head])?;
        self.download_locked(
            &inner,
            world.ptr() + layout.records as u64,
            &mut image[layout.records..layout.total],
        )?;
        if report::timed_out(&image, layout) {
            // A deadlock: its report also lists the messages left in the
            // outboxes, as the emulator's does.
            self.download_locked(
                &inner,
                world.ptr() + layout.outboxes as u64,
                &mut image[layout.outboxes..layout.barrier],
            )?;
        }
        // The trace buffers lie after the result records: downloaded above.
        Ok(Ran {
            world: image,
            outcome: Ok(RunStats {
                elapsed,
                // The GPU's atomics are not counted (docs/emulator.md).
                sync_counts: None,
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
        let bytes = layout.total - layout.records;
        let mut pinned = PinnedMemory::alloc(&self.ctx, bytes).ok()?;
        let dst = pinned.as_mut_ptr();
        // SAFETY: the source range is the records region of the world
        // allocation; the destination is `bytes` of pinned memory owned by
        // `pinned`, which is leaked rather than freed below unless the copy
        // completed.
        let r = unsafe {
            driver::copy_to_host_async(dst, world + layout.records as u64, bytes, &inner.probe_stream)
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
        let records = unsafe { pinned.read() };
        let n = bytes.min(pinned.len());
        image[layout.records..layout.records + n].copy_from_slice(&records[..n]);
        // The context is about to be poisoned: leave the memory to the exit.
        pinned.leak();
        Some(DeadlockReport::from_world(image, layout, |_| false))
    }
}
