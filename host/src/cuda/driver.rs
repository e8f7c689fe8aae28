//! Every CUDA driver call of the backend, one thin function each (cudarc's
//! `driver::result` tier is the model), and the owners of what the driver
//! hands out: [`Context`], [`Module`], [`Stream`], [`Event`],
//! [`DeviceMemory`] and [`PinnedMemory`] free their handle on drop, so no
//! code outside this file frees one by hand.
//!
//! A failed call is a [`CallFailed`] naming it, which becomes
//! [`CudaError::Call`], e.g. `cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY
//! (out of memory)`. Calls act on the calling thread's current context: the
//! constructors bind the owner's context ([`Context::bind`]) themselves; the
//! other calls take an owner of that context, and a caller that left another
//! one current gets the driver's error, not undefined behaviour.
//!
//! After a kernel fault, or a kernel that never finishes, the context is
//! *poisoned*: binding fails with the reason from then on, and the owners
//! free nothing any more (freeing would wait for the kernel, forever).

use crate::error::{AllocError, CudaError, DriverFailure, HostError};
use cudarc::driver::{sys, DriverError};
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, MutexGuard};

/// A failed driver call: its name and the driver's result.
#[derive(Debug)]
pub(crate) struct CallFailed {
    /// The call, e.g. `cuMemcpyHtoDAsync_v2`.
    pub(crate) call: &'static str,
    /// The driver's result.
    pub(crate) failure: DriverFailure,
}

impl CallFailed {
    /// The driver's code.
    pub(crate) fn code(&self) -> sys::CUresult {
        self.failure.code.0
    }
}

impl From<CallFailed> for CudaError {
    fn from(e: CallFailed) -> CudaError {
        CudaError::Call {
            call: e.call.into(),
            error: e.failure,
        }
    }
}

impl From<CallFailed> for HostError {
    fn from(e: CallFailed) -> HostError {
        CudaError::from(e).into()
    }
}

/// What the calls of this file return.
pub(crate) type Result<T, E = CallFailed> = std::result::Result<T, E>;

/// Calls `sys::$f(args)` and maps a failure to a [`CallFailed`] naming `$f`.
/// Expands to an unsafe call: use it inside an `unsafe` block whose
/// `SAFETY:` comment covers the call.
macro_rules! cu {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        check(stringify!($f), sys::$f($($arg),*))
    };
}

/// The driver's code and its description of it (`cuGetErrorString`).
fn failure(r: sys::CUresult) -> DriverFailure {
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

/// `Ok` for `CUDA_SUCCESS`, else a [`CallFailed`] naming `call`.
fn check(call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CallFailed {
            call,
            failure: failure(r),
        })
    }
}

/// `Ok(true)` for `CUDA_SUCCESS`, `Ok(false)` for `CUDA_ERROR_NOT_READY`
/// (the answer of the query calls while work is pending), else the failure.
fn ready(call: &'static str, r: sys::CUresult) -> Result<bool> {
    match r {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        r => check(call, r).map(|()| true),
    }
}

/// Whether the driver library can be loaded.
pub(crate) fn library_present() -> bool {
    // SAFETY: looking for the library loads and unloads it, which runs its
    // initialisers and finalisers; nothing else (cudarc's own loader does
    // the same before every first driver call).
    unsafe { sys::is_culib_present() }
}

/// `cuInit(0)`.
pub(crate) fn init() -> Result<()> {
    // SAFETY: `cuInit` has no preconditions.
    unsafe { cu!(cuInit(0)) }
}

/// `cuDriverGetVersion`: the CUDA version the driver supports, as
/// `1000 * major + 10 * minor`.
pub(crate) fn driver_version() -> Result<u32> {
    let mut v = 0;
    // SAFETY: `v` is a valid place for the value.
    unsafe { cu!(cuDriverGetVersion(&mut v)) }?;
    Ok(v.max(0) as u32)
}

/// `cuDeviceGetCount`.
pub(crate) fn device_count() -> Result<u32> {
    let mut n = 0;
    // SAFETY: `n` is a valid place for the count.
    unsafe { cu!(cuDeviceGetCount(&mut n)) }?;
    Ok(n.max(0) as u32)
}

/// A device, as `cuDeviceGet` names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gpu(sys::CUdevice);

/// `cuDeviceGet`: device `ordinal`.
pub(crate) fn device_get(ordinal: u32) -> Result<Gpu> {
    let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
    let mut d: sys::CUdevice = 0;
    // SAFETY: `d` is a valid place for the handle; a bad ordinal is the
    // driver's error.
    unsafe { cu!(cuDeviceGet(&mut d, ordinal)) }?;
    Ok(Gpu(d))
}

impl Gpu {
    /// `cuDeviceGetName`.
    pub(crate) fn name(self) -> Result<String> {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer holds 256 bytes and the driver writes a
        // NUL-terminated name of at most that many.
        unsafe { cu!(cuDeviceGetName(buf.as_mut_ptr() as *mut _, 256, self.0)) }?;
        Ok(String::from_utf8_lossy(buf.split(|&b| b == 0).next().unwrap_or(&[])).into_owned())
    }

    /// `cuDeviceGetAttribute`: integer attribute `a`.
    pub(crate) fn attribute(self, a: sys::CUdevice_attribute) -> Result<u32> {
        let mut v: i32 = 0;
        // SAFETY: `self` came from `cuDeviceGet`; `v` is a valid place.
        unsafe { cu!(cuDeviceGetAttribute(&mut v, a, self.0)) }?;
        Ok(v.max(0) as u32)
    }
}

/// The primary context of one device, retained for as long as this lives.
///
/// [`Context::bind`] makes it current on the calling thread; the backend
/// calls it before every sequence of calls.
pub(crate) struct Context {
    device: Gpu,
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
    /// `cuDevicePrimaryCtxRetain`: the primary context of `device`.
    pub(crate) fn retain(device: Gpu) -> Result<Arc<Context>> {
        let mut raw: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `device` came from `cuDeviceGet` (so the driver is
        // initialised); `raw` is a valid place for the handle.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut raw, device.0)) }?;
        Ok(Arc::new(Context {
            device,
            raw,
            poisoned: Mutex::new(None),
        }))
    }

    fn poisoned(&self) -> MutexGuard<'_, Option<String>> {
        self.poisoned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `cuCtxSetCurrent`: makes the context current on the calling thread;
    /// fails once it is poisoned.
    pub(crate) fn bind(&self) -> Result<(), CudaError> {
        if let Some(why) = self.poisoned().as_ref() {
            return Err(CudaError::ContextUnusable { earlier: why.clone() });
        }
        // SAFETY: `raw` is a primary context this value retained and has not
        // released (it is released only on drop).
        Ok(unsafe { cu!(cuCtxSetCurrent(self.raw)) }?)
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
        // released once, here; nothing uses `raw` after this (every owner of
        // a handle in it holds an `Arc` of this value).
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device.0) };
    }
}

/// Bytes of each of the JIT's log buffers.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// A loaded module, unloaded on drop.
pub(crate) struct Module {
    raw: sys::CUmodule,
    ctx: Arc<Context>,
}

// SAFETY: a module handle may be used from any thread while its context is
// current; `Module` only hands it to the driver.
unsafe impl Send for Module {}

impl Module {
    /// Loads PTX text, JIT-compiling it for the context's device;
    /// `max_registers` caps the registers per thread of every kernel
    /// (`CU_JIT_MAX_REGISTERS`). A failure's error carries the JIT's log.
    pub(crate) fn load_ptx(
        ctx: &Arc<Context>,
        ptx: &str,
        max_registers: Option<u32>,
    ) -> Result<Module, CudaError> {
        let image = CString::new(ptx).map_err(|_| CudaError::PtxNul)?;
        // SAFETY: `image` is NUL-terminated PTX text that outlives the call.
        unsafe { Module::load(ctx, image.as_ptr() as *const c_void, max_registers) }
    }

    /// Loads a cubin (SASS for the device's SM), without JIT.
    ///
    /// # Safety
    /// `cubin` must be a whole ELF image: the driver reads as far as its
    /// headers say.
    pub(crate) unsafe fn load_cubin(ctx: &Arc<Context>, cubin: &[u8]) -> Result<Module, CudaError> {
        // An embedded cubin (`include_bytes!`) may sit at any address; the ELF
        // reader is given an 8-byte-aligned copy.
        let mut aligned = vec![0u64; cubin.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..cubin.len()].copy_from_slice(cubin);
        // SAFETY: `aligned` holds the whole ELF image (the caller's contract)
        // and outlives the call.
        unsafe { Module::load(ctx, aligned.as_ptr() as *const c_void, None) }
    }

    /// `cuModuleLoadDataEx` of `image` (NUL-terminated PTX, or a cubin) with
    /// an error log, and the register cap when given.
    ///
    /// # Safety
    /// `image` must point to a whole PTX text or cubin that outlives the call.
    unsafe fn load(
        ctx: &Arc<Context>,
        image: *const c_void,
        max_registers: Option<u32>,
    ) -> Result<Module, CudaError> {
        use sys::CUjit_option as O;
        ctx.bind()?;
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
        let mut raw: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the context is current; `image` is a whole image that
        // outlives the call (the caller's contract); `options` and `values`
        // have the same length, and the error log buffer is `JIT_LOG_BYTES`
        // bytes long and outlives the call (the driver writes at most that
        // many).
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                image,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r == sys::CUresult::CUDA_SUCCESS {
            return Ok(Module {
                raw,
                ctx: ctx.clone(),
            });
        }
        let log = String::from_utf8_lossy(&error_log);
        Err(CudaError::ModuleLoad {
            error: failure(r),
            log: log.trim_end_matches('\0').trim().to_string(),
        })
    }

    /// `cuModuleGetGlobal_v2`: the device address and size of the module's
    /// global `name` (`CUDA_ERROR_NOT_FOUND` when it has none).
    pub(crate) fn global(&self, name: &CStr) -> Result<(sys::CUdeviceptr, usize)> {
        let mut ptr: sys::CUdeviceptr = 0;
        let mut bytes = 0usize;
        // SAFETY: the module is loaded; the name is NUL-terminated and
        // outlives the call; `ptr` and `bytes` are valid places for the results.
        unsafe {
            cu!(cuModuleGetGlobal_v2(
                &mut ptr,
                &mut bytes,
                self.raw,
                name.as_ptr()
            ))
        }?;
        Ok((ptr, bytes))
    }

    /// `cuModuleGetFunction`: the kernel `name` (`CUDA_ERROR_NOT_FOUND` when
    /// the module has none).
    pub(crate) fn function(&self, name: &CStr) -> Result<Function> {
        let mut raw: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: the module is loaded; the name is NUL-terminated and
        // outlives the call; `raw` is a valid place for the handle.
        unsafe { cu!(cuModuleGetFunction(&mut raw, self.raw, name.as_ptr())) }?;
        Ok(Function { raw })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: the module was loaded in this context, which is
            // current, and is unloaded once, here; no kernel of it runs
            // (launches wait for their kernel, and one that never finished
            // poisoned the context, so `bind` failed).
            let _ = unsafe { sys::cuModuleUnload(self.raw) };
        }
    }
}

/// A kernel of a loaded [`Module`]: a handle that is valid while the module
/// is loaded (the driver frees it with the module).
#[derive(Clone, Copy)]
pub(crate) struct Function {
    raw: sys::CUfunction,
}

// SAFETY: a function handle may be used from any thread while its context is
// current; `Function` only hands it to the driver.
unsafe impl Send for Function {}

impl Function {
    /// `cuFuncGetAttribute`: integer attribute `a`.
    ///
    /// # Safety
    /// The function's module must still be loaded.
    pub(crate) unsafe fn attribute(self, a: sys::CUfunction_attribute) -> Result<u32> {
        let mut v: i32 = 0;
        // SAFETY: the handle is live (the caller's contract); `v` is a valid
        // place for the value.
        unsafe { cu!(cuFuncGetAttribute(&mut v, a, self.raw)) }?;
        Ok(v.max(0) as u32)
    }

    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: blocks of `block_dim`
    /// threads with `dynamic_shared` bytes of dynamic shared memory each
    /// that one SM holds at once.
    ///
    /// # Safety
    /// The function's module must still be loaded.
    pub(crate) unsafe fn max_active_blocks_per_sm(self, block_dim: u32, dynamic_shared: u32) -> Result<u32> {
        let mut n: i32 = 0;
        let block = i32::try_from(block_dim).unwrap_or(i32::MAX);
        // SAFETY: the handle is live (the caller's contract); `n` is a valid
        // place for the count; a bad block size is the driver's error.
        unsafe {
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                self.raw,
                block,
                dynamic_shared as usize
            ))
        }?;
        Ok(n.max(0) as u32)
    }

    /// `cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`:
    /// lets launches give the kernel up to `bytes` of dynamic shared memory.
    ///
    /// # Safety
    /// The function's module must still be loaded.
    pub(crate) unsafe fn set_max_dynamic_shared_bytes(self, bytes: u32) -> Result<()> {
        let v = i32::try_from(bytes).unwrap_or(i32::MAX);
        // SAFETY: the handle is live (the caller's contract); a value beyond
        // the device's limit is the driver's error.
        unsafe {
            cu!(cuFuncSetAttribute(
                self.raw,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                v
            ))
        }
    }

    /// `cuLaunchCooperativeKernel`: `blocks` blocks of `block_dim` threads,
    /// each with `dynamic_shared` bytes of dynamic shared memory, on
    /// `stream`.
    ///
    /// # Safety
    /// The function's module must still be loaded; `params` must point to
    /// the kernel's parameters, in number and type; everything the kernel
    /// reaches through them (device memory included) must stay valid until
    /// the kernel finished.
    pub(crate) unsafe fn launch_cooperative(
        self,
        blocks: u32,
        block_dim: u32,
        dynamic_shared: u32,
        stream: &Stream,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: as the caller guarantees; the driver copies the parameters
        // before the call returns.
        unsafe {
            cu!(cuLaunchCooperativeKernel(
                self.raw,
                blocks,
                1,
                1,
                block_dim,
                1,
                1,
                dynamic_shared,
                stream.raw,
                params.as_mut_ptr(),
            ))
        }
    }
}

/// A non-blocking stream (it does not wait for, or hold up, other
/// streams), destroyed on drop.
pub(crate) struct Stream {
    raw: sys::CUstream,
    ctx: Arc<Context>,
}

// SAFETY: a stream handle may be used from any thread while its context is
// current; `Stream` only hands it to the driver.
unsafe impl Send for Stream {}

impl Stream {
    /// `cuStreamCreate` with `CU_STREAM_NON_BLOCKING`.
    pub(crate) fn non_blocking(ctx: &Arc<Context>) -> Result<Stream, CudaError> {
        ctx.bind()?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: the context is current; `raw` is a valid place for the handle.
        unsafe { cu!(cuStreamCreate(&mut raw, flags)) }?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// `cuStreamSynchronize`: waits for the stream's work.
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is live.
        unsafe { cu!(cuStreamSynchronize(self.raw)) }
    }

    /// `cuStreamQuery`: whether the stream's work completed.
    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: the stream is live.
        ready("cuStreamQuery", unsafe { sys::cuStreamQuery(self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: the stream was created in this context, which is
            // current, and is destroyed once, here (pending work completes
            // first, per the driver).
            let _ = unsafe { sys::cuStreamDestroy_v2(self.raw) };
        }
    }
}

/// An event (with timing), destroyed on drop.
pub(crate) struct Event {
    raw: sys::CUevent,
    ctx: Arc<Context>,
}

// SAFETY: an event handle may be used from any thread while its context is
// current; `Event` only hands it to the driver.
unsafe impl Send for Event {}

impl Event {
    /// `cuEventCreate` with `CU_EVENT_DEFAULT`.
    pub(crate) fn new(ctx: &Arc<Context>) -> Result<Event, CudaError> {
        ctx.bind()?;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT as u32;
        // SAFETY: the context is current; `raw` is a valid place for the handle.
        unsafe { cu!(cuEventCreate(&mut raw, flags)) }?;
        Ok(Event {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// `cuEventRecord`: records the event at the current end of `stream`.
    pub(crate) fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: the event and the stream are live.
        unsafe { cu!(cuEventRecord(self.raw, stream.raw)) }
    }

    /// `cuEventQuery`: whether the work before the event completed.
    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: the event is live.
        ready("cuEventQuery", unsafe { sys::cuEventQuery(self.raw) })
    }

    /// `cuEventElapsedTime`: milliseconds from `start` to `self`, both
    /// recorded and completed.
    pub(crate) fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live; `ms` is a valid place for the value.
        unsafe { cu!(cuEventElapsedTime(&mut ms, start.raw, self.raw)) }?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: the event was created in this context, which is
            // current, and is destroyed once, here.
            let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
        }
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
    /// `cuMemAlloc_v2`: `bytes` bytes (at least 1) of device memory,
    /// 256-byte aligned, uninitialised.
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

    /// `cuMemsetD8Async`: zeroes the whole allocation on `stream`.
    pub(crate) fn zero_async(&self, stream: &Stream) -> Result<()> {
        if self.bytes == 0 {
            return Ok(());
        }
        // SAFETY: the range is this allocation, which outlives the memset:
        // freeing it (`cuMemFree_v2`, on drop) synchronises with the device.
        unsafe { cu!(cuMemsetD8Async(self.ptr, 0, self.bytes, stream.raw)) }
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

/// `cuMemcpyHtoDAsync_v2`: copies `src` to device address `dst` on `stream`.
///
/// # Safety
/// `dst..dst + src.len()` must lie in a live allocation of the stream's
/// context; `src` must stay valid and unchanged until the copy completed
/// (pageable memory is staged before the call returns, pinned memory is
/// read later).
pub(crate) unsafe fn copy_to_device_async(dst: sys::CUdeviceptr, src: &[u8], stream: &Stream) -> Result<()> {
    // SAFETY: as the caller guarantees; `src` is valid for reads of its length.
    unsafe {
        cu!(cuMemcpyHtoDAsync_v2(
            dst,
            src.as_ptr() as *const c_void,
            src.len(),
            stream.raw
        ))
    }
}

/// `cuMemcpyDtoHAsync_v2`: copies `len` bytes from device address `src` to
/// host address `dst` on `stream`.
///
/// # Safety
/// `src..src + len` must lie in a live allocation of the stream's context;
/// `dst` must be valid for writes of `len` bytes until the copy completed,
/// and not be read or written by anything else until then.
pub(crate) unsafe fn copy_to_host_async(
    dst: *mut c_void,
    src: sys::CUdeviceptr,
    len: usize,
    stream: &Stream,
) -> Result<()> {
    // SAFETY: as the caller guarantees.
    unsafe { cu!(cuMemcpyDtoHAsync_v2(dst, src, len, stream.raw)) }
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
    /// `cuMemAllocHost_v2`: `bytes` bytes (at least 1) of zeroed page-locked
    /// host memory.
    pub(crate) fn alloc(ctx: &Arc<Context>, bytes: usize) -> Result<PinnedMemory, CudaError> {
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
