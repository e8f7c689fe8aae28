//! gpu-mpi: MPI inside one GPU kernel, in Rust. Every CUDA thread is an MPI
//! rank; a kernel written in message-passing style runs unchanged on an
//! NVIDIA GPU and on a CPU emulator that needs no GPU.
//!
//! This crate is what a host program depends on: it re-exports the host API
//! of `gpu-mpi-host` (devices, worlds, launches, error reports), the device
//! library as [`device`], the project's kernels as [`kernels`], and the PTX
//! those kernels were compiled to.
//!
//! See README.md and docs/architecture.md.

pub use gpu_mpi_device as device;
pub use gpu_mpi_host::*;
pub use gpu_mpi_kernels as kernels;

pub mod conformance;

include!(concat!(env!("OUT_DIR"), "/ptx.rs"));

/// Opens a backend with the PTX this crate was built with
/// ([`KERNELS_PTX`]: the cuda backend loads the variant of the highest SM not
/// above the GPU's compute capability; empty when built with
/// `GPU_MPI_SKIP_PTX=1`, and then the cuda backend reports that it has no
/// kernels). The cuda backend's options come from the environment
/// (`gpu_mpi_host::cuda::CudaOptions::from_env`, docs/gpu.md).
pub fn open(kind: BackendKind) -> Result<Device, HostError> {
    Device::open_variants(kind, KERNELS_PTX)
}
