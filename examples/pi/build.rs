//! Builds the pi kernels (`kernels/`) to PTX for the cuda backend; see
//! docs/gpu.md.

use std::path::Path;

fn main() {
    // rustc runs this very executable as the nvptx64 linker of the nested build.
    gpu_mpi::builder::run_as_linker_if_requested();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let device = root.join("../../device");
    gpu_mpi::builder::build_script::run(
        &root.join("kernels"),
        &[&device.join("src"), &device.join("Cargo.toml")],
    );
}
