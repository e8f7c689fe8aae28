//! Builds the conformance kernels (`kernels/`) to PTX, and to SASS where ptxas is found,
//! for the cuda backend (`include_kernels!` embeds them; docs/gpu.md), and
//! passes the commit to the binary's JSON provenance (`GPU_MPI_COMMIT`).

include!("../provenance/build_commit.rs");

fn main() {
    gpu_mpi::builder::KernelBuilder::new("kernels").build();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo::rustc-env=GPU_MPI_COMMIT={}", commit(root));
}
