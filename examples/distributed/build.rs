//! Builds the checks' kernels (`kernels/`) to PTX, and to SASS where ptxas
//! is found, as every example does; the checks themselves run on the cpu
//! backend (a world across processes on the GPU is pending,
//! docs/distributed.md).

fn main() {
    gpu_mpi::builder::KernelBuilder::new("kernels").build();
}
