#!/usr/bin/env bash
# PTX checks, run by CI from a clean clone (after .ci/ptx-setup.sh) and by
# hand. Needs the nightly toolchain with rust-src and llvm-tools, and ptxas;
# no GPU.
#
#  1. unit tests of the checker itself (PTX snippets that must pass / fail);
#  2. builds every kernel crate of the workspace (the conformance cases', the
#     benchmarks', each example's) to PTX for sm_70 and sm_90 (nvptx64,
#     nightly, -Zbuild-std=core, our llvm-link/opt/llc link step);
#  3. fails if any `atom`/`red` lacks an explicit .relaxed/.acquire/.release/
#     .acq_rel, or any `.sys`-scope operation appears, or a PTX has no kernel;
#  4. assembles with `ptxas -v` for sm_70 and sm_80 (from the sm_70 PTX) and
#     sm_90 (the conformance and benchmark kernels for sm_90 only, the
#     conformance kernels with ptxas's fast compile), failing on any ptxas
#     error, and prints registers / stack / spills per kernel
#     (one report per crate in target/ptx-check/<crate>/, all of them
#     together in target/ptx-check/ptxas_report.txt), failing on an
#     example's or benchmark's kernel above 128 registers
#     (`--max-registers`). ptxas results are
#     cached by content in target/gpu-mpi-ptx/sass-cache, shared with the
#     build scripts, so a PTX assembled once is not assembled again.
#
# Extra arguments go to the checker (`--help` lists them), e.g.
#   scripts/ptx-check.sh --archs 70,90 --check-archs 70,80,90
# To check one crate of your own:
#   cargo run -p gpu-mpi-ptx-builder --bin ptx-check -- --kernels /path/to/crate
# Environment: GPU_MPI_PTX_TOOLCHAIN (default nightly), PTXAS (path to ptxas).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== ptx-check: checker unit tests"
cargo test --quiet -p gpu-mpi-ptx-builder

# Users' kernels (the examples) are assembled for every SM the builder ships
# SASS for by default, at full optimisation: their registers are budgets
# (docs/gpu.md). The project's own for sm_90, the GPUs they run on, which is
# also all their build scripts assemble; the benchmarks at full optimisation
# (their registers are tracked), the conformance kernels with ptxas's fast
# compile (`:fast`, `ptx-check --fast-compile`): their 36 MB of PTX took
# 35-50 minutes of one core at full optimisation, the tail of CI, and about
# 2 minutes this way; it still fails on any ptxas error, but its registers
# and stack are not the optimised SASS's (scripts/gpu-check.sh --build
# assembles that, GPU_MPI_SASS=1). They come first all the same, so that
# their nvptx64 builds land in the shared target dir before the concurrent
# cargo builds' build scripts ask for them.
crates=(check/kernels:90:fast examples/pi/kernels examples/ring/kernels examples/ping_pong/kernels examples/tutorial/kernels examples/rsmpi/kernels bench/kernels:90 bench/views-kernels:90)
out=target/ptx-check
cargo build --quiet -p gpu-mpi-ptx-builder --bin ptx-check
mkdir -p "$out"
: >"$out/ptxas_report.all"
status=0
for entry in "${crates[@]}"; do
    IFS=: read -r crate sms speed <<<"$entry"
    flags=()
    [[ -n $sms ]] && flags=(--check-archs "$sms")
    [[ $speed == fast ]] && flags+=(--fast-compile)
    # No kernel above the project's ceiling of 128 registers (a budget in
    # the crate's manifest brings one under it): the kernels users read
    # and copy, the benchmarks' (their figures are the library's) and the
    # conformance kernels (a budget holds under the fast compile too).
    flags+=(--max-registers 128)
    name=${crate//\//-}
    echo "== ptx-check: build, lint and assemble $crate"
    if ! "${CARGO_TARGET_DIR:-target}/debug/ptx-check" --kernels "$crate" --out "$out/$name" "${flags[@]}" "$@"; then
        status=1
    fi
    { echo "# $crate"; cat "$out/$name/ptxas_report.txt" 2>/dev/null; } >>"$out/ptxas_report.all"
done
mv "$out/ptxas_report.all" "$out/ptxas_report.txt"
[[ $status == 0 ]] && echo "ptx-check: every kernel crate passed" || echo "ptx-check: FAILED"
exit $status
