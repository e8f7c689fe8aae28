#!/usr/bin/env bash
# PTX checks, run by CI from a clean clone (after .ci/ptx-setup.sh) and by
# hand. Needs the nightly toolchain with rust-src and llvm-tools, and ptxas;
# no GPU.
#
#  1. unit tests of the checker itself (PTX snippets that must pass / fail);
#  2. builds the `kernels` crate to PTX for sm_70 and sm_90 (nvptx64, nightly,
#     -Zbuild-std=core, our llvm-link/opt/llc link step);
#  3. fails if any `atom`/`red` lacks an explicit .relaxed/.acquire/.release/
#     .acq_rel, or any `.sys`-scope operation appears, or a PTX has no kernel;
#  4. assembles with `ptxas -v` for sm_70 and sm_80 (from the sm_70 PTX) and
#     sm_90, failing on any ptxas error, and prints registers / stack / spills
#     per kernel (also written to target/ptx-check/ptxas_report.txt).
#
# Extra arguments go to the checker (`--help` lists them), e.g.
#   scripts/ptx-check.sh --kernels /path/to/crate --archs 70,90 --check-archs 70,80,90
# Environment: GPU_MPI_PTX_TOOLCHAIN (default nightly), PTXAS (path to ptxas).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== ptx-check: checker unit tests"
cargo test --quiet -p gpu-mpi-ptx-builder

echo "== ptx-check: build, lint and assemble the kernels"
exec cargo run --quiet -p gpu-mpi-ptx-builder --bin ptx-check -- "$@"
