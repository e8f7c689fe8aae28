//! Builds the kernels of rsmpi's examples (`kernels/`) to PTX, and to SASS
//! where ptxas is found, for the cuda backend; `include_kernels!` embeds
//! them. See docs/gpu.md.

fn main() {
    gpu_mpi::builder::KernelBuilder::new("kernels").build();
}
