//! gpu-mpi: MPI inside one GPU kernel, in Rust. Every CUDA thread is an MPI
//! rank; a kernel written in message-passing style runs unchanged on an
//! NVIDIA GPU and on a CPU emulator that needs no GPU.
//!
//! This is the crate a program depends on. It holds three things:
//! - the device library, [`device`]: what a kernel crate calls (a kernel
//!   crate itself depends on `gpu-mpi-device`, which builds for nvptx64);
//! - the host API (devices, worlds, launches, error reports), re-exported at
//!   the top level (feature `host`, on by default);
//! - the kernel builder, [`builder`], for a program's `build.rs`: it compiles
//!   the program's kernel crate to PTX (and SASS where ptxas is found).
//!
//! See README.md ("Your own kernel") and docs/architecture.md.

pub use gpu_mpi_device as device;
#[cfg(feature = "host")]
pub use gpu_mpi_host::*;
pub use gpu_mpi_ptx_builder as builder;
