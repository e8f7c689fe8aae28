//! Zeroed, 256-byte aligned host memory: the emulator's "device memory".

use crate::error::{AllocError, HostError};
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment of every allocation: `cudaMalloc`'s 256 bytes. More than the
/// 64 bytes a device buffer promises, so that the timing model's 128-byte
/// L1 lines (cpu/model.rs) fall at the same offsets of a buffer wherever
/// the host allocator put it: otherwise two runs could model different
/// times.
pub const ALIGN: usize = 256;
/// Buffers of at least this many bytes are mapped (page-aligned, lazily zero)
/// instead of allocated and cleared.
const MAP_THRESHOLD: usize = 1 << 20;

/// A zeroed allocation whose address is the emulator's device address.
///
/// It hands out only raw pointers: kernels write it through [`GlobalSlice`]s
/// and atomics while the host holds a `&CpuBuffer`, so no Rust reference to
/// its bytes may live across a launch.
///
/// [`GlobalSlice`]: gpu_mpi_device::GlobalSlice
#[derive(Debug)]
pub struct CpuBuffer {
    ptr: NonNull<u8>,
    bytes: usize,
    /// The heap layout, or `None` for a mapping of `bytes` bytes.
    layout: Option<Layout>,
}

// SAFETY: the buffer owns its allocation; concurrent access goes through raw
// pointers whose users (launches, which join their workers before returning,
// and the &mut/& methods below) order it.
unsafe impl Send for CpuBuffer {}
// SAFETY: as above; `&CpuBuffer` gives out only raw pointers.
unsafe impl Sync for CpuBuffer {}

impl CpuBuffer {
    /// `bytes` zeroed bytes (at least one cache line is allocated). Large
    /// buffers are mapped from the kernel, zero until touched: a world's
    /// memory costs only what its ranks use.
    pub fn zeroed(bytes: usize) -> Result<CpuBuffer, HostError> {
        let fail = |source: std::io::Error| HostError::from(AllocError::HostMemory { bytes, source });
        if bytes >= MAP_THRESHOLD {
            // SAFETY: an anonymous private mapping at an address of the
            // kernel's choosing touches no existing memory.
            let raw = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if raw == libc::MAP_FAILED {
                return Err(fail(std::io::Error::last_os_error()));
            }
            let ptr =
                NonNull::new(raw as *mut u8).ok_or_else(|| fail(std::io::ErrorKind::OutOfMemory.into()))?;
            return Ok(CpuBuffer {
                ptr,
                bytes,
                layout: None,
            });
        }
        // Whole 64-byte lines, as a GPU allocation has (256-byte granules):
        // an atomic on the aligned word around a window's 1- or 2-byte
        // element (`gpu_mpi_device::window`) stays inside the allocation.
        let layout = Layout::from_size_align(bytes.max(1).next_multiple_of(ALIGN), ALIGN)
            .map_err(|e| fail(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| fail(std::io::ErrorKind::OutOfMemory.into()))?;
        Ok(CpuBuffer {
            ptr,
            bytes,
            layout: Some(layout),
        })
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether no bytes were asked for.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The start address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes, for the host while no launch runs.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `bytes` initialised (zeroed) bytes; callers use it only
        // between launches (a launch returns after its workers are joined).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.bytes) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` excludes other users.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.bytes) }
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        match self.layout {
            // SAFETY: allocated in `zeroed` with this layout.
            Some(layout) => unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) },
            // SAFETY: mapped in `zeroed` with this length; no pointer into it
            // is used after the buffer drops.
            None => unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.bytes);
            },
        }
    }
}
