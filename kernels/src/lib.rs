//! The project's own kernels, written once for the GPU and the CPU emulator.
//!
//! Every kernel here is an ordinary Rust function wrapped by
//! [`gpu_mpi_device::kernel!`]: the PTX builder compiles this crate for
//! nvptx64 (each kernel becomes a PTX entry point), and the host links it as
//! a normal crate for the emulator.
//!
//! - [`pi`]: the thesis's two pi-estimation kernels (figures 5.6 and 5.17).
//! - [`samples`]: a token ring and a ping-pong.
//! - [`semantics`]: the MPI semantic test programs, run on every backend.
//! - [`bench`]: the MPI side of the benchmarks (latency, bandwidth, collectives).
//! - [`native`]: native baselines doing the same work without MPI (thesis
//!   figures 5.7/5.8 and 5.18/5.19, a single-pass reduction, a grid barrier).
#![no_std]
// nvptx64 only: `kernel!` expands to an `extern "ptx-kernel"` entry point here.
// Crate attributes gate on `target_os = "cuda"` (the nvptx64-nvidia-cuda
// target): `cfg(target_arch)` is reserved to device/src/shim/.
#![cfg_attr(target_os = "cuda", feature(abi_ptx))]

pub mod bench;
pub mod native;
pub mod pi;
pub mod samples;
pub mod semantics;
