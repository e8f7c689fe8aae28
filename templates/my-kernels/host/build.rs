//! Compiles `../kernels` to PTX (and SASS where ptxas is found) for the
//! GPU. On a machine without the nightly toolchain it installs it through
//! rustup, or builds without GPU kernels and says which command adds them.

fn main() {
    gpu_mpi::builder::KernelBuilder::new("../kernels").build();
}
