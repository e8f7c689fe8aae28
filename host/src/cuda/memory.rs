//! [`CudaBuffer`], memory on the GPU, and the copies between it and the
//! host.

use super::device::{CudaDevice, Inner};
use super::driver::{self, DeviceMemory};
use crate::backend;
use crate::error::HostError;
use std::ffi::c_void;
use std::fmt;

/// Memory on the GPU.
pub struct CudaBuffer {
    pub(super) memory: DeviceMemory,
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

impl CudaDevice {
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

    /// Copies `data` into `buffer` from byte `offset` on, a range that the
    /// caller checked lies in the buffer.
    pub(super) fn write_in_range(
        &self,
        buffer: &mut CudaBuffer,
        offset: usize,
        data: &[u8],
    ) -> Result<(), HostError> {
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

    /// Copies `out.len()` bytes from device address `src`, a range of device
    /// memory the caller owns, with the lock held.
    pub(super) fn download_locked(&self, inner: &Inner, src: u64, out: &mut [u8]) -> Result<(), HostError> {
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
}
