//! The device a program runs kernels on, whichever backend it is.
//!
//! # Backends
//! [`Device`] holds one backend, `CpuDevice` (`cpu/`) or `CudaDevice`
//! (`cuda/`), and dispatches to it; what a backend must do is the crate's
//! `Backend` trait (`backend.rs`), and the steps of a launch (co-residency,
//! the world, the outcome and the trace) are written once there, generic
//! over it. The cuda backend's constructors (`CudaDevice::open_images`,
//! `CudaDevice::open`) fail with [`HostError::NoGpu`] when no GPU is usable.
//!
//! What a launch returns ([`LaunchReport`], [`TracedLaunch`]) is in the
//! crate's `launch.rs`, below the backends; `Device::pack` and the other
//! datatype methods are in `pack.rs`, above this module.

use crate::backend::{self, Backend, Order};
use crate::cpu::{CpuBuffer, CpuDevice, CpuOptions};
use crate::cuda::{CudaBuffer, CudaDevice, CudaOptions};
use crate::error::{AllocError, BufferError, HostError};
use crate::images::KernelImages;
use crate::launch::{LaunchReport, TracedLaunch};
use crate::model::Profile;
use crate::spec::{BackendKind, Residency, WorldSpec};
use bytemuck::Pod;
use gpu_mpi_device::abi::WorldConfig;
use gpu_mpi_device::{GlobalSlice, Kernel};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Mutex;

/// The backend a device holds.
enum AnyBackend {
    Cpu(CpuDevice),
    Cuda(CudaDevice),
}

/// `$body` with `$d` bound to the device's backend, whichever it is.
macro_rules! with_backend {
    ($device:expr, $d:ident => $body:expr) => {
        match &$device.backend {
            AnyBackend::Cpu($d) => $body,
            AnyBackend::Cuda($d) => $body,
        }
    };
}

/// What a device is ([`Device::describe`]): plain values, `None` where the
/// backend does not know them (the emulator has no clocks and no CUDA).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceDescription {
    /// "cpu" or "cuda".
    pub backend: &'static str,
    /// The GPU's name, or the emulator's with its worker threads.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: Option<(u32, u32)>,
    /// Streaming multiprocessors (the emulator's virtual ones on the cpu backend).
    pub sms: u32,
    /// Peak SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Peak memory clock, MHz.
    pub memory_clock_mhz: Option<u32>,
    /// The CUDA version the driver supports `(major, minor)`.
    pub cuda_version: Option<(u32, u32)>,
}

/// A device to run kernels on: the CPU emulator or an NVIDIA GPU.
pub struct Device {
    backend: AnyBackend,
    /// Committed types' encodings uploaded by `Device::pack` (by type uid).
    pub(crate) types: TypeCache,
}

/// Committed types' encodings on one device, uploaded once each (keyed by
/// the type's uid; filled and read by `Device::pack`, in `pack.rs`).
#[derive(Default)]
pub(crate) struct TypeCache {
    pub(crate) map: Mutex<HashMap<u64, DeviceBuffer<u64>>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("backend", &self.backend_name())
            .finish()
    }
}

enum RawBuffer {
    Cpu(CpuBuffer),
    Cuda(CudaBuffer),
}

/// `len` elements of `T` in a device's memory.
///
/// Pass [`DeviceBuffer::slice`] to a kernel in its arguments; read the data
/// back with [`Device::download`] after the launch.
pub struct DeviceBuffer<T: Pod> {
    raw: RawBuffer,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: Pod> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("backend", &self.backend_name())
            .field("len", &self.len)
            .field("address", &format_args!("{:#x}", self.address()))
            .finish()
    }
}

impl<T: Pod> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn address(&self) -> u64 {
        match &self.raw {
            RawBuffer::Cpu(b) => b.as_ptr() as u64,
            RawBuffer::Cuda(b) => b.device_address(),
        }
    }

    fn backend_name(&self) -> &'static str {
        match &self.raw {
            RawBuffer::Cpu(_) => "cpu",
            RawBuffer::Cuda(_) => "cuda",
        }
    }

    /// The buffer as a kernel argument: its device address and length.
    ///
    /// The slice carries no lifetime (it crosses to the device inside a `Pod`
    /// argument struct): keep the buffer alive for every launch that gets it.
    pub fn slice(&self) -> GlobalSlice<T> {
        // SAFETY: the address is aligned for `T` (allocations are 64-byte
        // aligned, and `alloc_zeroed` refuses types aligned more) and valid
        // for `len` elements while the buffer lives; launches that outlive
        // the buffer are the caller's bug (documented above), as on the GPU.
        unsafe { GlobalSlice::from_raw(self.address(), self.len as u64) }
    }
}

fn bytes_for<T>(len: usize) -> Result<usize, HostError> {
    if std::mem::align_of::<T>() > 64 {
        return Err(AllocError::Alignment {
            type_name: std::any::type_name::<T>(),
            align: std::mem::align_of::<T>(),
        }
        .into());
    }
    len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
        AllocError::TooManyElements {
            len,
            type_name: std::any::type_name::<T>(),
        }
        .into()
    })
}

impl Device {
    /// The CPU emulator with default options (an H100-shaped virtual device).
    pub fn cpu() -> Device {
        Device::cpu_with(CpuOptions::default())
    }

    /// The CPU emulator with default options as the environment changes
    /// them ([`CpuOptions::from_env`]: `GPU_MPI_MODEL`, the timing mode;
    /// `GPU_MPI_STACK_BYTES`, each rank's stack): what [`Device::open`]
    /// gives for the cpu backend.
    ///
    /// With the `distributed` feature, in a program started by `mpiexec`
    /// with more than one process, its worlds spread over the processes
    /// (docs/distributed.md; [`Device::process`]).
    pub fn cpu_from_env() -> Result<Device, HostError> {
        let options = CpuOptions::from_env()?;
        #[cfg(feature = "distributed")]
        if let Some(processes) = crate::distributed::Processes::from_env()? {
            return Ok(Device {
                backend: AnyBackend::Cpu(CpuDevice::spread(
                    options,
                    processes as &'static dyn crate::cpu::Spread,
                )),
                types: Default::default(),
            });
        }
        Ok(Device::cpu_with(options))
    }

    /// This process's place among the processes a world spreads over:
    /// the only one (index 0 of 1) but in a program built with the
    /// `distributed` feature and started by `mpiexec -n P`
    /// (docs/distributed.md), where process `p` of `P` runs world ranks
    /// `p × n .. (p + 1) × n` of each launch of `n` ranks per process.
    /// What a host program prints once, it prints where
    /// [`ProcessPlace::is_first`].
    pub fn process(&self) -> ProcessPlace {
        let (index, count) = match &self.backend {
            AnyBackend::Cpu(d) => d.process(),
            AnyBackend::Cuda(_) => (0, 1),
        };
        ProcessPlace { index, count }
    }

    /// The CPU emulator with these options.
    pub fn cpu_with(options: CpuOptions) -> Device {
        Device {
            backend: AnyBackend::Cpu(CpuDevice::new(options)),
            types: Default::default(),
        }
    }

    /// Like [`Device::open`], with PTX alone: `(label, text)` pairs such as
    /// `("sm_70", ptx)` (a label that is not `sm_XX` makes the cuda backend
    /// read the target from the PTX itself); the cuda backend loads the best
    /// one for its GPU. For PTX that a program made at run time.
    pub fn open_variants(
        kind: BackendKind,
        ptx: &[(&'static str, &'static str)],
    ) -> Result<Device, HostError> {
        Device::open_with(kind, || CudaDevice::open(ptx))
    }

    /// Opens a device of `kind` for the kernels a program ships (PTX and
    /// SASS per SM, from [`include_kernels!`](crate::include_kernels)):
    ///
    /// - `Cpu`: the emulator (it runs the host build of the kernels; the
    ///   images are not used);
    /// - `Cuda`: the GPU, loading the best image for it
    ///   ([`crate::cuda::plan::choose_images`]: SASS of its major SM with a
    ///   minor not above its own, else the PTX of the highest SM not above
    ///   it, JIT-compiled); [`HostError::NoGpu`] when none is usable, saying
    ///   `built without GPU kernels: <why>` when the build made none;
    /// - `Auto`: the GPU when usable, else the emulator with one line on
    ///   stderr, `gpu-mpi: no usable GPU (<why>); using the cpu backend`.
    ///
    /// The cuda backend's options come from the environment
    /// ([`CudaOptions::from_env`]).
    pub fn open(kind: BackendKind, kernels: &KernelImages) -> Result<Device, HostError> {
        Device::open_with(kind, || CudaDevice::open_images(kernels))
    }

    fn open_with(
        kind: BackendKind,
        cuda: impl FnOnce() -> Result<CudaDevice, HostError>,
    ) -> Result<Device, HostError> {
        // A world across processes runs on the emulator: each process's
        // kernel on its own GPU, the relay over mapped host memory, is
        // pending (docs/distributed.md).
        #[cfg(feature = "distributed")]
        if kind != BackendKind::Cpu && crate::distributed::Processes::from_env()?.is_some() {
            if kind == BackendKind::Cuda {
                return Err(crate::error::DistributedError::Unsupported {
                    what: "the cuda backend",
                }
                .into());
            }
            eprintln!("gpu-mpi: a world across processes runs on the cpu backend (the GPU path is pending)");
            return Device::cpu_from_env();
        }
        match kind {
            BackendKind::Cpu => Device::cpu_from_env(),
            BackendKind::Cuda => Ok(Device {
                backend: AnyBackend::Cuda(cuda()?),
                types: Default::default(),
            }),
            BackendKind::Auto => match cuda() {
                Ok(d) => Ok(Device {
                    backend: AnyBackend::Cuda(d),
                    types: Default::default(),
                }),
                Err(e) => {
                    let why = match e {
                        HostError::NoGpu(why) => why.to_string(),
                        other => other.to_string(),
                    };
                    eprintln!("gpu-mpi: no usable GPU ({why}); using the cpu backend");
                    Device::cpu_from_env()
                }
            },
        }
    }

    /// The GPU with these options, loading the best of `kernels` (see
    /// [`Device::open`]); [`HostError::NoGpu`] when none is usable.
    pub fn cuda_kernels_with(options: CudaOptions, kernels: &KernelImages) -> Result<Device, HostError> {
        Ok(Device {
            backend: AnyBackend::Cuda(CudaDevice::open_images_with(options, kernels)?),
            types: Default::default(),
        })
    }

    /// The GPU with these options and PTX variants (see
    /// [`Device::open_variants`]); [`HostError::NoGpu`] when none is usable.
    pub fn cuda_with(
        options: CudaOptions,
        ptx: &[(&'static str, &'static str)],
    ) -> Result<Device, HostError> {
        Ok(Device {
            backend: AnyBackend::Cuda(CudaDevice::open_with(options, ptx)?),
            types: Default::default(),
        })
    }

    /// "cpu" or "cuda".
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            AnyBackend::Cpu(_) => "cpu",
            AnyBackend::Cuda(_) => "cuda",
        }
    }

    /// The profile the emulator models launches with by default (timing
    /// mode, docs/model.md); `None` on the GPU and on an emulator without.
    pub fn model(&self) -> Option<&'static Profile> {
        match &self.backend {
            AnyBackend::Cpu(d) => d.options().model,
            AnyBackend::Cuda(_) => None,
        }
    }

    /// What this device is, for the record of a run (the benchmarks' and
    /// the conformance check's JSON); the same fields on every backend.
    pub fn describe(&self) -> DeviceDescription {
        match &self.backend {
            AnyBackend::Cpu(d) => DeviceDescription {
                backend: "cpu",
                name: match d.options().model {
                    Some(p) => format!("CPU emulator in timing mode, modelling {}", p.name),
                    None => format!("CPU emulator ({} workers)", d.options().workers),
                },
                compute_capability: None,
                sms: d.options().sms,
                sm_clock_mhz: None,
                memory_clock_mhz: None,
                cuda_version: None,
            },
            AnyBackend::Cuda(d) => {
                let info = d.info();
                DeviceDescription {
                    backend: "cuda",
                    name: info.name.clone(),
                    compute_capability: Some((info.compute_capability / 10, info.compute_capability % 10)),
                    sms: info.limits.sms,
                    sm_clock_mhz: info.sm_clock_khz.map(|k| k / 1000),
                    memory_clock_mhz: info.memory_clock_khz.map(|k| k / 1000),
                    cuda_version: Some((info.driver_version / 1000, info.driver_version % 1000 / 10)),
                }
            }
        }
    }

    /// The emulator, when this device is one.
    pub fn as_cpu(&self) -> Option<&CpuDevice> {
        match &self.backend {
            AnyBackend::Cpu(d) => Some(d),
            AnyBackend::Cuda(_) => None,
        }
    }

    /// The GPU, when this device is one.
    pub fn as_cuda(&self) -> Option<&CudaDevice> {
        match &self.backend {
            AnyBackend::Cuda(d) => Some(d),
            AnyBackend::Cpu(_) => None,
        }
    }

    /// How many ranks fit at once in blocks of `block_dim`, and what limits it.
    ///
    /// On the GPU it depends on the kernel (its registers): this is the
    /// smallest over every kernel of the loaded PTX, a world that any of them
    /// can run; [`Device::residency_for`] gives one kernel's.
    pub fn residency(&self, block_dim: u32) -> Residency {
        with_backend!(self, d => Backend::residency(d, block_dim))
    }

    /// The largest world that is co-resident in blocks of `block_dim`
    /// (on the GPU: for every kernel, see [`Device::residency`]).
    pub fn max_ranks(&self, block_dim: u32) -> u32 {
        self.residency(block_dim).capacity()
    }

    /// How many ranks of `kernel` fit at once in blocks of `block_dim`
    /// (on the emulator the same for every kernel).
    pub fn residency_for<A>(&self, kernel: &Kernel<A>, block_dim: u32) -> Result<Residency, HostError> {
        with_backend!(self, d => d.kernel_residency(kernel.name, block_dim))
    }

    /// The largest world of `kernel` that is co-resident in blocks of `block_dim`.
    pub fn max_ranks_for<A>(&self, kernel: &Kernel<A>, block_dim: u32) -> Result<u32, HostError> {
        Ok(self.residency_for(kernel, block_dim)?.capacity())
    }

    /// `len` zeroed elements of device memory.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>, HostError> {
        let bytes = bytes_for::<T>(len)?;
        let raw = match &self.backend {
            AnyBackend::Cpu(d) => RawBuffer::Cpu(Backend::alloc_zeroed(d, bytes)?),
            AnyBackend::Cuda(d) => RawBuffer::Cuda(Backend::alloc_zeroed(d, bytes)?),
        };
        Ok(DeviceBuffer {
            raw,
            len,
            _marker: PhantomData,
        })
    }

    /// A device buffer holding a copy of `data`.
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>, HostError> {
        let mut buf = self.alloc_zeroed::<T>(data.len())?;
        self.write(&mut buf, data)?;
        Ok(buf)
    }

    /// Overwrites `buffer` with `data` (of the same length).
    pub fn write<T: Pod>(&self, buffer: &mut DeviceBuffer<T>, data: &[T]) -> Result<(), HostError> {
        if data.len() != buffer.len {
            return Err(BufferError::LengthMismatch {
                given: data.len(),
                len: buffer.len,
            }
            .into());
        }
        let bytes: &[u8] = bytemuck::cast_slice(data);
        match (&self.backend, &mut buffer.raw) {
            (AnyBackend::Cpu(d), RawBuffer::Cpu(b)) => backend::upload(d, b, 0, bytes),
            (AnyBackend::Cuda(d), RawBuffer::Cuda(b)) => backend::upload(d, b, 0, bytes),
            _ => Err(self.foreign(buffer.backend_name())),
        }
    }

    /// A host copy of `buffer`.
    pub fn download<T: Pod>(&self, buffer: &DeviceBuffer<T>) -> Result<Vec<T>, HostError> {
        let mut out = vec![T::zeroed(); buffer.len];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        match (&self.backend, &buffer.raw) {
            (AnyBackend::Cpu(d), RawBuffer::Cpu(b)) => backend::download(d, b, 0, bytes)?,
            (AnyBackend::Cuda(d), RawBuffer::Cuda(b)) => backend::download(d, b, 0, bytes)?,
            _ => return Err(self.foreign(buffer.backend_name())),
        }
        Ok(out)
    }

    fn foreign(&self, owner: &'static str) -> HostError {
        BufferError::ForeignBackend {
            owner,
            used: self.backend_name(),
        }
        .into()
    }

    /// Runs `kernel` with `args` on a new world described by `spec`.
    ///
    /// Resolves the spec ([`WorldSpec::resolve`]: `RankCount::Max` becomes
    /// the largest co-resident world of this kernel), checks the layout
    /// ([`HostError::Config`]) and co-residency ([`HostError::NotCoResident`]),
    /// runs every rank, and reads the outcome: a deadlock
    /// ([`HostError::Deadlock`]), ranks that returned errors
    /// ([`HostError::RankFailed`]), or a [`LaunchReport`]. On the emulator
    /// the ranks run in the order of the spec's [`WorldSpec::schedule`], else
    /// of [`CpuOptions::schedule`].
    pub fn launch<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        spec: &WorldSpec,
    ) -> Result<LaunchReport, HostError> {
        let config = self.resolve_for(kernel, spec)?;
        with_backend!(self, d => backend::launch(d, kernel, args, &config, Order::of(spec)))
    }

    /// As [`launch`](Self::launch), returning the trace apart from the
    /// outcome, so that a deadlock or a failed rank comes with the events
    /// that led to it (docs/tracing.md).
    pub fn launch_traced<A: Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        spec: &WorldSpec,
    ) -> TracedLaunch {
        let config = match self.resolve_for(kernel, spec) {
            Ok(c) => c,
            Err(e) => {
                return TracedLaunch {
                    result: Err(e),
                    trace: None,
                }
            }
        };
        with_backend!(self, d => backend::launch_traced(d, kernel, args, &config, Order::of(spec)))
    }

    /// The world configuration `spec` gives for `kernel` on this device,
    /// checked (on the emulator the same as [`Device::resolve`]; on the GPU
    /// sized by the kernel's own occupancy).
    pub fn resolve_for<A>(&self, kernel: &Kernel<A>, spec: &WorldSpec) -> Result<WorldConfig, HostError> {
        with_backend!(self, d => backend::resolve_for(d, kernel.name, spec))
    }

    /// The world configuration `spec` gives on this device, checked.
    pub fn resolve(&self, spec: &WorldSpec) -> Result<WorldConfig, HostError> {
        with_backend!(self, d => backend::resolve(d, spec))
    }
}

/// Where this process stands among the processes a world spreads over
/// ([`Device::process`]; docs/distributed.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessPlace {
    /// This process's index, below `count`: it runs world ranks `index × n
    /// .. (index + 1) × n` of a launch of `n` ranks per process.
    pub index: u32,
    /// How many processes the world spreads over (1 without `mpiexec`).
    pub count: u32,
}

impl ProcessPlace {
    /// Whether this is the first process (index 0), the one that prints
    /// what a program prints once.
    pub fn is_first(&self) -> bool {
        self.index == 0
    }
}
