//! Builds the conformance kernels (`kernels/`) to PTX, and to SASS where ptxas is found,
//! for the cuda backend (`include_kernels!` embeds them; docs/gpu.md), and
//! passes the commit to the binary's JSON provenance (`GPU_MPI_COMMIT`).

include!("../provenance/build_commit.rs");

fn main() {
    // SASS for the GPUs the suite runs on (H100, H200), and only where
    // this machine has one or GPU_MPI_SASS=1 (scripts/gpu-check.sh --build):
    // ptxas on these kernels takes minutes and about 6 GB. CI's ptx-check
    // assembles them for sm_90 all the same, with ptxas's fast compile.
    gpu_mpi::builder::KernelBuilder::new("kernels")
        .sms(&[90])
        .sass_only_for_a_local_gpu()
        // Test kernels that call every API in one body: their registers and
        // stacks are tracked in the ptxas report of a GPU_MPI_SASS=1 build
        // (docs/gpu.md), not warned.
        .resource_warnings(false)
        .build();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo::rustc-env=GPU_MPI_COMMIT={}", commit(root));
}
