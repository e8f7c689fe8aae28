//! Helpers of the host tests whose kernels record results with atomics.

use gpu_mpi_device::abi::shim;
use gpu_mpi_device::{Error, GlobalSlice};

/// The 32-bit atomic at element `i` of a device buffer.
pub fn cell(s: &GlobalSlice<u32>, i: usize) -> &'static shim::AtomicU32 {
    assert!(i < s.len());
    // SAFETY: element `i` of a live, 4-byte aligned device buffer that the
    // kernels of these tests access only atomically.
    unsafe { shim::atomic_u32_at(s.addr() as *mut u8, 4 * i) }
}

/// The error class of a call's result, 0 for `Ok`.
// Not every test binary that includes this module records classes.
#[allow(dead_code)]
pub fn class(r: &Result<(), Error>) -> u32 {
    r.err().map_or(0, |e| e.class() as u32)
}
