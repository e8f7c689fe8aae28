//! [`CudaDevice`], an open GPU: what was opened ([`CudaInfo`]), the driver
//! objects its calls share under one lock, and how many ranks of each
//! kernel it holds at once (occupancy, from the kernel's resources and the
//! driver's count).

use super::driver::{Context, Event, Function, Module, PinnedMemory, Stream};
use super::options::CudaOptions;
use super::plan::{self, DeviceLimits, ImageKind, KernelOccupancy, KernelResources};
use crate::error::{CudaError, HostError};
use crate::spec::Residency;
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

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

/// A kernel of the loaded module and what it uses.
#[derive(Clone, Copy)]
pub(super) struct LoadedKernel {
    pub(super) function: Function,
    pub(super) resources: KernelResources,
}

/// The driver objects of an open device, used under one lock (fields drop
/// in order: the functions' module last).
pub(super) struct Inner {
    /// Every copy and launch.
    pub(super) stream: Stream,
    /// Reads the abort word while a kernel runs on `stream`.
    pub(super) probe_stream: Stream,
    pub(super) start: Event,
    pub(super) stop: Event,
    pub(super) probe_word: PinnedMemory,
    pub(super) functions: HashMap<String, LoadedKernel>,
    /// By kernel, block size and dynamic shared memory.
    pub(super) occupancy: HashMap<(String, u32, u32), KernelOccupancy>,
    pub(super) module: Module,
    /// The module's constant-bank copy of the world's header
    /// (`layout::DESCRIPTORS_SYMBOL`), filled before each launch.
    pub(super) descriptors: sys::CUdeviceptr,
}

/// An NVIDIA GPU.
pub struct CudaDevice {
    pub(super) ctx: Arc<Context>,
    pub(super) info: Box<CudaInfo>,
    pub(super) options: CudaOptions,
    /// The kernel entry points of the loaded module.
    pub(super) entries: Vec<&'static str>,
    pub(super) inner: Box<Mutex<Inner>>,
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

impl CudaDevice {
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

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
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
        self.occupancy_locked(&mut inner, name, block_dim, 0)
    }

    pub(super) fn function_locked(&self, inner: &mut Inner, name: &str) -> Result<LoadedKernel, HostError> {
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
                dynamic_shared_bytes: 0,
                max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            },
        };
        inner.functions.insert(name.to_string(), f);
        Ok(f)
    }

    pub(super) fn occupancy_locked(
        &self,
        inner: &mut Inner,
        name: &str,
        block_dim: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<KernelOccupancy, HostError> {
        let key = (name.to_string(), block_dim, dynamic_shared_bytes);
        if let Some(o) = inner.occupancy.get(&key) {
            return Ok(o.clone());
        }
        let f = self.function_locked(inner, name)?;
        let resources = KernelResources {
            dynamic_shared_bytes,
            ..f.resources
        };
        let bounds = plan::Bounds::new(&self.info.limits, &resources, block_dim);
        let driver_count = if bounds.too_large.is_some() {
            None
        } else {
            self.ctx.bind()?;
            // SAFETY: the function's module is `inner.module`, loaded.
            unsafe {
                if dynamic_shared_bytes != 0 {
                    // Beyond 48 KiB a kernel must opt in before the driver
                    // counts (or launches) it with that much.
                    f.function.set_max_dynamic_shared_bytes(dynamic_shared_bytes)?;
                }
                Some(
                    f.function
                        .max_active_blocks_per_sm(block_dim, dynamic_shared_bytes)?,
                )
            }
        };
        let o = KernelOccupancy::new(name, &self.info.limits, &resources, block_dim, driver_count);
        inner.occupancy.insert(key, o.clone());
        Ok(o)
    }
}
