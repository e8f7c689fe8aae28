//! The cuda backend: a placeholder until the CUDA driver backend lands here.
//!
//! This directory belongs to the cuda backend; the rest of the crate uses
//! only the interface described in `device.rs` (module docs): `CudaDevice`
//! with `open`, `residency`, `alloc_zeroed`, `upload`, `download` and
//! `launch`, and `CudaBuffer` with `len` and `device_address`. Until then
//! `open` says no GPU is usable, so `BackendKind::Auto` falls back to the
//! emulator.

use crate::device::LaunchReport;
use crate::error::HostError;
use crate::spec::Residency;
use bytemuck::Pod;
use gpu_mpi_device::{Kernel, WorldConfig};

const NOT_BUILT: &str = "the cuda backend is not built into this version";

/// An NVIDIA GPU (placeholder: cannot be opened).
#[derive(Debug)]
pub struct CudaDevice;

/// Memory on the GPU (placeholder: never allocated).
#[derive(Debug)]
pub struct CudaBuffer;

impl CudaBuffer {
    /// Bytes of the allocation.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether the allocation is empty.
    pub fn is_empty(&self) -> bool {
        true
    }

    /// The device address.
    pub fn device_address(&self) -> u64 {
        0
    }
}

impl CudaDevice {
    /// Opens the first GPU and loads `ptx`.
    pub fn open(_ptx: Option<&'static str>) -> Result<CudaDevice, HostError> {
        Err(HostError::NoGpu(NOT_BUILT.into()))
    }

    /// How many ranks fit at once in blocks of `block_dim`.
    pub fn residency(&self, block_dim: u32) -> Residency {
        Residency::from_limits(0, 0, 0, 0, block_dim)
    }

    /// `bytes` zeroed bytes of GPU memory.
    pub fn alloc_zeroed(&self, _bytes: usize) -> Result<CudaBuffer, HostError> {
        Err(HostError::NoGpu(NOT_BUILT.into()))
    }

    /// Host to device copy.
    pub fn upload(&self, _buffer: &mut CudaBuffer, _offset: usize, _data: &[u8]) -> Result<(), HostError> {
        Err(HostError::NoGpu(NOT_BUILT.into()))
    }

    /// Device to host copy.
    pub fn download(&self, _buffer: &CudaBuffer, _offset: usize, _out: &mut [u8]) -> Result<(), HostError> {
        Err(HostError::NoGpu(NOT_BUILT.into()))
    }

    /// Runs `kernel` on a new world of `config`.
    pub fn launch<A: Pod + Sync>(
        &self,
        _kernel: &Kernel<A>,
        _args: &A,
        _config: &WorldConfig,
    ) -> Result<LaunchReport, HostError> {
        Err(HostError::NoGpu(NOT_BUILT.into()))
    }
}
