//! Builds the benchmark kernels (and, through their dependency, the pi
//! kernels) (`kernels/`), and the views kernels (`views-kernels/`, a second
//! image) to PTX, and to SASS where ptxas is found,
//! for the cuda backend (`include_kernels!` embeds them; docs/gpu.md), and
//! passes the commit to the binary's JSON provenance (`GPU_MPI_COMMIT`).

include!("../provenance/build_commit.rs");

fn main() {
    gpu_mpi::builder::KernelBuilder::new("kernels").build();
    // The kernels that need the device crate's `views` feature, as a second
    // image (`include_kernels!("views")`): the feature raises registers.
    gpu_mpi::builder::KernelBuilder::new("views-kernels")
        .image("views")
        .build();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo::rustc-env=GPU_MPI_COMMIT={}", commit(root));
}
