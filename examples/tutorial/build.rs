//! Builds the tutorial's kernels (`kernels/`) to PTX, and to SASS where ptxas
//! is found, for the cuda backend; `include_kernels!` embeds them. See docs/gpu.md.

fn main() {
    // No resource warnings: each chapter's kernel is one body of many calls
    // (registers at the budget of 128, stacks of 200-3000 bytes), tracked in
    // ptx-check's reports (docs/gpu.md) rather than warned at every build.
    gpu_mpi::builder::KernelBuilder::new("kernels")
        .resource_warnings(false)
        .build();
}
