//! Thin, checked wrappers over the CUDA driver calls of the backend: error
//! mapping, the context, device and pinned host memory, module loading.
//!
//! Every driver call goes through [`cu!`](crate::cuda::driver::cu), which
//! turns a failure into [`CudaError::Call`] naming the call, e.g.
//! `cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation
//! failed)`.

use crate::error::{AllocError, CudaError, DriverFailure, HostError};
use cudarc::driver::{sys, DriverError};
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, MutexGuard};

/// Calls `sys::$f(args)` and maps a failure to [`CudaError::Call`] naming
/// `$f`. Expands to an unsafe call: use it inside an `unsafe` block whose
/// `SAFETY:` comment covers the call.
macro_rules! cu {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        $crate::cuda::driver::check(stringify!($f), cudarc::driver::sys::$f($($arg),*))
    };
}
pub(crate) use cu;

/// The driver's code and its description of it.
pub(crate) fn failure(r: sys::CUresult) -> DriverFailure {
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: only called once the driver library is loaded (after a driver
    // call returned `r`); `cuGetErrorString` writes a pointer to a static,
    // NUL-terminated string or fails and leaves `text` null.
    let ok = unsafe { sys::cuGetErrorString(r, &mut text) } == sys::CUresult::CUDA_SUCCESS;
    let description = if ok && !text.is_null() {
        // SAFETY: a non-null result of `cuGetErrorString` is a static C string.
        Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    } else {
        None
    };
    DriverFailure {
        code: DriverError(r),
        description,
    }
}

/// `Ok` for `CUDA_SUCCESS`, else [`CudaError::Call`] naming `call`.
pub(crate) fn check(call: &str, r: sys::CUresult) -> Result<(), HostError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::Call {
            call: call.into(),
            error: failure(r),
        }
        .into())
    }
}

/// The primary context of one device, retained for as long as this lives.
///
/// Driver calls act on the calling thread's current context:
/// [`Context::bind`] makes this one current and is called before every
/// sequence of calls. After a kernel fault, or a kernel that never finishes,
/// the context is *poisoned*: `bind` fails with the reason from then on, and
/// nothing is freed any more (freeing would wait for the kernel, forever).
pub(crate) struct Context {
    device: sys::CUdevice,
    raw: sys::CUcontext,
    poisoned: Mutex<Option<String>>,
}

// SAFETY: a CUcontext is a handle that the driver lets any thread make
// current; `Context` only hands it to the driver (`cuCtxSetCurrent`,
// `cuDevicePrimaryCtxRelease`), and its only mutable state is behind a mutex.
unsafe impl Send for Context {}
// SAFETY: as above; `&Context` gives access to nothing but the mutex and
// driver calls that are thread-safe.
unsafe impl Sync for Context {}

impl Context {
    /// Retains the primary context of `device`.
    ///
    /// # Safety
    /// - The driver must be initialised (`cuInit` succeeded).
    /// - `device` must come from `cuDeviceGet`.
    pub(crate) unsafe fn retain(device: sys::CUdevice) -> Result<Arc<Context>, HostError> {
        let mut raw: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the driver is initialised and `device` valid (the caller's
        // contract); `raw` is a valid place for the handle.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut raw, device)) }?;
        Ok(Arc::new(Context {
            device,
            raw,
            poisoned: Mutex::new(None),
        }))
    }

    fn poisoned(&self) -> MutexGuard<'_, Option<String>> {
        self.poisoned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the context current on the calling thread; fails once it is
    /// poisoned.
    pub(crate) fn bind(&self) -> Result<(), HostError> {
        if let Some(why) = self.poisoned().as_ref() {
            return Err(CudaError::ContextUnusable { earlier: why.clone() }.into());
        }
        // SAFETY: `raw` is a primary context this value retained and has not
        // released (it is released only on drop).
        unsafe { cu!(cuCtxSetCurrent(self.raw)) }
    }

    /// Marks the context unusable for the rest of the process.
    pub(crate) fn poison(&self, why: String) {
        let mut p = self.poisoned();
        if p.is_none() {
            *p = Some(why);
        }
    }

    /// Whether the context was poisoned.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned().is_some()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.is_poisoned() {
            // A kernel may still run in it; releasing the last reference
            // would wait for it. The process's exit tears it down.
            return;
        }
        // SAFETY: the primary context was retained once by `retain` and is
        // released once, here; nothing uses `raw` after this.
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

/// An allocation of device memory, freed on drop (unless the context is
/// poisoned: then it is left to the process's exit).
pub(crate) struct DeviceMemory {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<Context>,
}

impl DeviceMemory {
    /// `bytes` bytes (at least 1) of device memory, 256-byte aligned,
    /// uninitialised.
    pub(crate) fn alloc(ctx: &Arc<Context>, bytes: usize) -> Result<DeviceMemory, HostError> {
        ctx.bind()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: the context is current; `ptr` is a valid place for the
        // address. The memory is only reached through this value.
        let r = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) };
        if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(AllocError::GpuMemory {
                bytes,
                error: failure(r),
            }
            .into());
        }
        check("cuMemAlloc_v2", r)?;
        Ok(DeviceMemory {
            ptr,
            bytes,
            ctx: ctx.clone(),
        })
    }

    /// The device address.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Bytes asked for.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives the memory up without freeing it (a kernel that may still use it
    /// runs on).
    pub(crate) fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: `ptr` came from `cuMemAlloc_v2` in this context, which
            // is current, and is freed once, here. Launches that received it
            // have finished (launches wait for their kernel; a kernel that
            // never finished poisoned the context, and then `bind` fails).
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// Page-locked host memory, which the GPU's copy engines write while a
/// kernel runs (the launch's probe of the abort word). Freed on drop unless
/// the context is poisoned.
pub(crate) struct PinnedMemory {
    ptr: *mut u8,
    bytes: usize,
    ctx: Arc<Context>,
}

// SAFETY: the pointer is plain host memory owned by this value; it is only
// read after the copies into it completed (see `PinnedMemory::read`).
unsafe impl Send for PinnedMemory {}

impl PinnedMemory {
    /// `bytes` bytes (at least 1) of zeroed page-locked host memory.
    pub(crate) fn alloc(ctx: &Arc<Context>, bytes: usize) -> Result<PinnedMemory, HostError> {
        ctx.bind()?;
        let bytes = bytes.max(1);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the context is current; `ptr` is a valid place for the
        // pointer.
        unsafe { cu!(cuMemAllocHost_v2(&mut ptr, bytes)) }?;
        // SAFETY: the driver returned `bytes` writable bytes at `ptr`.
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        Ok(PinnedMemory {
            ptr: ptr as *mut u8,
            bytes,
            ctx: ctx.clone(),
        })
    }

    /// The host address (the destination of device-to-host copies).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr as *mut c_void
    }

    /// Bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// A copy of the contents.
    ///
    /// # Safety
    /// No copy into this memory may be in flight.
    pub(crate) unsafe fn read(&self) -> Vec<u8> {
        // SAFETY: `ptr` holds `bytes` initialised bytes (zeroed at
        // allocation) and no copy writes them now (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }.to_vec()
    }

    /// Gives the memory up without freeing it (a copy into it may still be
    /// in flight).
    pub(crate) fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: `ptr` came from `cuMemAllocHost_v2` in this context and
            // is freed once; copies into it have completed (their stream was
            // synchronised or queried done before the owner let go of it).
            let _ = unsafe { sys::cuMemFreeHost(self.ptr as *mut c_void) };
        }
    }
}

/// Integer device attribute `a` of `device`.
///
/// # Safety
/// The driver must be initialised and `device` come from `cuDeviceGet`.
pub(crate) unsafe fn device_attribute(
    device: sys::CUdevice,
    a: sys::CUdevice_attribute,
) -> Result<u32, HostError> {
    let mut v: i32 = 0;
    // SAFETY: as the caller guarantees; `v` is a valid place for the value.
    unsafe { cu!(cuDeviceGetAttribute(&mut v, a, device)) }?;
    Ok(v.max(0) as u32)
}

/// Integer attribute `a` of kernel `f`.
///
/// # Safety
/// `f` must be a function of a loaded module of the current context.
pub(crate) unsafe fn function_attribute(
    f: sys::CUfunction,
    a: sys::CUfunction_attribute,
) -> Result<u32, HostError> {
    let mut v: i32 = 0;
    // SAFETY: as the caller guarantees; `v` is a valid place for the value.
    unsafe { cu!(cuFuncGetAttribute(&mut v, a, f)) }?;
    Ok(v.max(0) as u32)
}

/// Bytes of each of the JIT's log buffers.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// Loads PTX text as a module, JIT-compiling it for the current device;
/// `max_registers` caps the registers per thread of every kernel
/// (`CU_JIT_MAX_REGISTERS`). A failure's error carries the JIT's error log.
///
/// # Safety
/// A context must be current on the calling thread.
pub(crate) unsafe fn load_module(ptx: &str, max_registers: Option<u32>) -> Result<sys::CUmodule, CudaError> {
    let image = CString::new(ptx).map_err(|_| CudaError::PtxNul)?;
    // SAFETY: a context is current (the caller's contract); `image` is
    // NUL-terminated PTX text that outlives the call.
    unsafe { load_image(image.as_ptr() as *const c_void, max_registers) }
}

/// Loads a cubin (SASS for the device's SM) as a module, without JIT.
///
/// # Safety
/// A context must be current on the calling thread.
pub(crate) unsafe fn load_cubin(cubin: &[u8]) -> Result<sys::CUmodule, CudaError> {
    // An embedded cubin (`include_bytes!`) may sit at any address; the ELF
    // reader is given an 8-byte-aligned copy.
    let mut aligned = vec![0u64; cubin.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..cubin.len()].copy_from_slice(cubin);
    // SAFETY: a context is current (the caller's contract); `aligned` holds
    // the whole ELF image, whose headers give its size, and outlives the call.
    unsafe { load_image(aligned.as_ptr() as *const c_void, None) }
}

/// `cuModuleLoadDataEx` of `image` (NUL-terminated PTX, or a cubin) with an
/// error log, and the register cap when given.
///
/// # Safety
/// A context must be current on the calling thread, and `image` point to a
/// whole PTX text or cubin that outlives the call.
unsafe fn load_image(image: *const c_void, max_registers: Option<u32>) -> Result<sys::CUmodule, CudaError> {
    use sys::CUjit_option as O;
    let mut error_log = vec![0u8; JIT_LOG_BYTES];
    let mut options = vec![O::CU_JIT_ERROR_LOG_BUFFER, O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    // Integer option values travel in the pointer itself (CUDA's convention).
    let mut values: Vec<*mut c_void> = vec![
        error_log.as_mut_ptr() as *mut c_void,
        JIT_LOG_BYTES as *mut c_void,
    ];
    if let Some(n) = max_registers {
        options.push(O::CU_JIT_MAX_REGISTERS);
        values.push(n as usize as *mut c_void);
    }
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: a context is current and `image` is a whole image that
    // outlives the call (the caller's contract); `options` and `values` have
    // the same length, and the error log buffer is `JIT_LOG_BYTES` bytes long
    // and outlives the call (the driver writes at most that many).
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image,
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(module);
    }
    let log = String::from_utf8_lossy(&error_log);
    Err(CudaError::ModuleLoad {
        error: failure(r),
        log: log.trim_end_matches('\0').trim().to_string(),
    })
}
