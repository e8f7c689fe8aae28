#!/usr/bin/env bash
# Runs the gpu-mpi-bench suites at full size on an NVIDIA GPU and keeps
# every table and every number.
#
#   bash scripts/gpu-bench.sh [suite ...]      (default: every suite)
#
# - Uses the prebuilt binary target/release/gpu-mpi-bench (or $GPU_MPI_BENCH);
#   builds it with cargo only when it is missing (it must be built WITH the
#   PTX, i.e. without GPU_MPI_SKIP_PTX=1).
# - Writes, per suite, gpu-<suite>.json and gpu-<suite>.txt into $OUT when it
#   is set (the device machine's output folder), else into docs/bench/;
#   plus gpu-info.txt (nvidia-smi) and gpu-summary.txt (the targets); the
#   limits suite also writes gpu.profile, the timing-model profile its
#   limits imply (docs/model.md, "Modelling your own card").
# - --backend cuda: refuses to fall back to the emulator.
# - Extra options for every suite: $BENCH_ARGS (e.g. "--reps 3").
# - Exit status: non-zero when any suite failed (a wrong result or a failed
#   launch); the other suites still run.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GPU_MPI_BENCH:-$root/target/release/gpu-mpi-bench}
out=${OUT:-$root/docs/bench}
backend=${BACKEND:-cuda}

if [[ ! -x $bin ]]; then
    if ! command -v cargo >/dev/null; then
        echo "gpu-bench: no binary at $bin and no cargo to build it" >&2
        exit 1
    fi
    echo "gpu-bench: building $bin" >&2
    # GPU_MPI_SASS=1: SASS for sm_90 even where this machine shows no driver.
    (cd "$root" && GPU_MPI_SASS=1 cargo build --release --bin gpu-mpi-bench) || exit 1
fi

mkdir -p "$out" || exit 1
if [[ $# -gt 0 ]]; then
    suites=("$@")
else
    suites=(limits pi latency bw barrier bcast reduce allreduce gather scatter allgather alltoall reduce_scatter scan ibarrier iallreduce varcount scale rma)
fi

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 ||
        echo "nvidia-smi not available"
    echo "binary: $bin"
} >"$out/gpu-info.txt"

status=0
: >"$out/gpu-summary.txt"
for suite in "${suites[@]}"; do
    echo "gpu-bench: $suite" >&2
    start=$SECONDS
    extra=()
    if [[ $suite == limits ]]; then
        extra=(--write-profile "$out/gpu.profile")
    fi
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of options
    if "$bin" "$suite" --backend "$backend" --json "$out/gpu-$suite.json" "${extra[@]}" ${BENCH_ARGS:-} \
        >"$out/gpu-$suite.txt" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
    fi
    tail -n 3 "$out/gpu-$suite.txt" >&2
    {
        echo "$suite: $result in $((SECONDS - start)) s"
        sed -n '/^== targets/,/^all results/p' "$out/gpu-$suite.txt"
    } >>"$out/gpu-summary.txt"
done
cat "$out/gpu-summary.txt"
exit $status
