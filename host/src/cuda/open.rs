//! Opening the GPU: the driver, the device and its limits, the best
//! embedded image loaded ([`plan::choose_images`]), and the driver objects
//! every later call uses.

use super::device::{CudaDevice, CudaInfo, Inner};
use super::driver::{self, Context, Event, Module, PinnedMemory, Stream};
use super::options::CudaOptions;
use super::plan::{self, DeviceLimits, ImageKind, ImageSet, KernelImage};
use crate::error::{CudaError, DriverFailure, HostError, NoGpu};
use crate::images::KernelImages;
use cudarc::driver::{sys, DriverError};
use gpu_mpi_device::abi::layout::HEADER_BYTES;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;
use std::time::Instant;

/// The text of a panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
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
            shared_memory_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
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
        let descriptors = world_descriptors(&module, &image)?;
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
                descriptors,
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
}

/// The device address of the module's constant-bank copy of the world's
/// header, which every launch fills first (`layout::DESCRIPTORS_SYMBOL`).
fn world_descriptors(module: &Module, image: &KernelImage) -> Result<sys::CUdeviceptr, CudaError> {
    let symbol = gpu_mpi_device::abi::layout::DESCRIPTORS_SYMBOL;
    let name = CString::new(symbol).expect("the symbol has no NUL");
    let no = |found: String| CudaError::NoDescriptors {
        symbol,
        bytes: HEADER_BYTES,
        found,
        ptx_sm: image.sm(),
        image: image.kind(),
    };
    match module.global(&name) {
        Ok((ptr, bytes)) if bytes >= HEADER_BYTES => Ok(ptr),
        Ok((_, bytes)) => Err(no(format!("{bytes} bytes"))),
        Err(e) => Err(no(format!("{}: {}", e.call, e.failure))),
    }
}
