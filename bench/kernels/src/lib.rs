//! The benchmarks' kernels (`gpu-mpi-bench`), written once for the GPU and
//! the CPU emulator: [`mpi`], the MPI side, [`ddt`], the datatype engine's
//! entry point and copy baseline, [`rma`], the one-sided benchmarks and
//! their native twins, and [`native`], the native
//! baselines doing the same work without MPI (thesis figures 5.7/5.8 and
//! 5.18/5.19, a single-pass reduction, a grid barrier). The pi kernels come
//! from the pi example's kernel crate ([`pi`]).
#![no_std]

pub mod ddt;
pub mod exchange;
pub mod mpi;
pub mod native;
pub mod rma;
pub use gpu_mpi_example_pi_kernels as pi;
