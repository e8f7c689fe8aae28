//! Build script: compiles the `kernels` crate to PTX (nvptx64, nightly,
//! `-Zbuild-std=core`) for the CUDA backend and writes `$OUT_DIR/ptx.rs`
//! (`KERNELS_PTX`, `PTXAS_REPORT`). See docs/gpu.md and gpu-mpi-ptx-builder.
//! `GPU_MPI_SKIP_PTX=1` skips it (no nightly needed, no GPU kernels).

use std::path::Path;

fn main() {
    // rustc runs this very executable as the nvptx64 linker of the nested build.
    gpu_mpi_ptx_builder::run_as_linker_if_requested();

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    gpu_mpi_ptx_builder::build_script::run(
        &root.join("kernels"),
        &[
            &root.join("device").join("src"),
            &root.join("device").join("Cargo.toml"),
            &root.join("Cargo.lock"),
        ],
    );
}
