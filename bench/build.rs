//! Builds the benchmark kernels (and, through their dependency, the pi
//! kernels) (`kernels/`), and the views kernels (`views-kernels/`, a second
//! image) to PTX, and to SASS where ptxas is found,
//! for the cuda backend (`include_kernels!` embeds them; docs/gpu.md), and
//! passes the commit to the binary's JSON provenance (`GPU_MPI_COMMIT`).

include!("../provenance/build_commit.rs");

fn main() {
    // SASS as for the conformance kernels (check/build.rs): sm_90, and only
    // where this machine has a GPU or GPU_MPI_SASS=1.
    gpu_mpi::builder::KernelBuilder::new("kernels")
        .sms(&[90])
        .sass_only_for_a_local_gpu()
        // Tracked in ptx-check's reports (docs/gpu.md), not warned.
        .resource_warnings(false)
        .build();
    // The kernels that need the device crate's `views` feature, as a second
    // image (`include_kernels!("views")`): the feature raises registers.
    gpu_mpi::builder::KernelBuilder::new("views-kernels")
        .image("views")
        .sms(&[90])
        .sass_only_for_a_local_gpu()
        // Tracked in ptx-check's reports (docs/gpu.md), not warned.
        .resource_warnings(false)
        .build();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo::rustc-env=GPU_MPI_COMMIT={}", commit(root));
}
