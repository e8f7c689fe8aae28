#!/usr/bin/env bash
# One call of a lent GPU machine that measures current main: the cuda
# backend's conformance, the pi examples at the largest world, and every
# benchmark suite, each step under its own time limit and all of them
# under one deadline, so that a slow step cannot take the whole lease and
# whatever finished comes back. docs/gpu.md, "A GPU session in one call".
#
# Here (with Rust and the PTX toolchain), build the binaries first:
#
#   scripts/gpu-check.sh --build carry/bin
#
# then run this with `carry/bin` carried (about 12 MB):
#
#   bash scripts/device-run.sh [carry/bin]
#
# Results: $OUT/results.tar.gz (else ./device-run-out/results.tar.gz),
# packed again after every step: a folder `res` with steps.txt (each step,
# its exit status and seconds; 124: stopped at its limit), nvidia-smi.txt,
# the binaries' BUILD-INFO and ptxas report, each step's log, and under
# bench/ the gpu-<suite>.{json,txt} that scripts/gpu-bench.sh would write
# (every JSON carries the device, driver, commit and date). Unpack it into
# docs/bench/<card>-<date>/ and commit it before anything else.
#
# Environment: DEADLINE (seconds for all steps, default 540: one command may
# run 600 s), BACKEND (default cuda; `cpu` tries the script's flow on the
# emulator, with QUICK=1 for --quick everywhere), EXTRA (options for every
# benchmark step).
set -uo pipefail
export LC_ALL=C

dir=$(cd "${1:-carry/bin}" && pwd) || exit 2
out=${OUT:-$PWD/device-run-out}
deadline=${DEADLINE:-540}
backend=${BACKEND:-cuda}
quick=${QUICK:-0}
t0=$SECONDS
res=$(mktemp -d)/res
bin=$(mktemp -d)
mkdir -p "$res/bench" "$out" || exit 1
trap 'rm -rf "$bin" "$(dirname "$res")"' EXIT

# shellcheck source=gpu-bins.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-bins.sh" || exit 2
# A missing binary's steps are skipped (`step`), the others run.
unpack_bins "$dir" "$bin" gpu-mpi-check gpu-mpi-bench "${PI_EXAMPLES[@]}"
cp "$dir/BUILD-INFO" "$dir/ptxas_report.txt" "$res/" 2>/dev/null

pack() { tar -C "$(dirname "$res")" -czf "$out/results.tar.gz" res; }
left() { echo $((deadline - (SECONDS - t0))); }

# step LIMIT NAME CMD...: CMD under min(LIMIT, time left), its output in
# NAME.log; one line in steps.txt; the results packed again.
step() {
    local limit=$1 name=$2
    shift 2
    local l
    l=$(left)
    if ((l < 5)); then
        echo "$name skipped (deadline)" | tee -a "$res/steps.txt"
        return
    fi
    ((limit > l)) && limit=$l
    if [[ ! -x $1 && $1 != env ]]; then
        echo "$name skipped (no $1)" | tee -a "$res/steps.txt"
        return
    fi
    local s=$SECONDS
    timeout --kill-after=5 "$limit" "$@" >"$res/$name.log" 2>&1
    echo "$name rc=$? $((SECONDS - s))s (limit $limit)" | tee -a "$res/steps.txt"
    pack
}

# bench LIMIT NAME ARGS...: one gpu-mpi-bench run, its JSON and text
# under bench/ as gpu-NAME.{json,txt}, its targets printed.
bench() {
    local limit=$1 name=$2
    shift 2
    local args=("$@" --backend "$backend" --json "$res/bench/gpu-$name.json")
    [[ $quick == 1 && " $* " != *" --quick "* ]] && args+=(--quick)
    [[ $name == limits ]] && args+=(--write-profile "$res/bench/gpu.profile")
    # shellcheck disable=SC2086 # EXTRA is a list of options
    step "$limit" "bench-$name" "$bin/gpu-mpi-bench" "${args[@]}" ${EXTRA:-}
    cp "$res/bench-$name.log" "$res/bench/gpu-$name.txt" 2>/dev/null
    sed -n '/^== targets/,/^all results/p' "$res/bench-$name.log" 2>/dev/null |
        grep -v '^all results' | head -n 20
}

{
    date -u +%FT%TZ
    nvidia-smi 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw --format=csv 2>&1
} >"$res/nvidia-smi.txt"
tail -n 2 "$res/nvidia-smi.txt"
pack

# Conformance first: a stuck kernel stops after 30 s, not 120.
export GPU_MPI_WATCHDOG_S=30
step 90 check-"$backend" env GPU_MPI_CUDA_VERBOSE=1 "$bin/gpu-mpi-check" --backend "$backend" --json "$res/check-$backend.json"
tail -n 2 "$res/check-$backend.log" 2>/dev/null
if [[ $backend == cuda ]]; then
    for cap in "${PI_CAPS[@]}"; do
        for ex in "${PI_EXAMPLES[@]}"; do
            step 40 "$ex-regs-$cap" env GPU_MPI_MAX_REGISTERS=$cap "$bin/$ex" --backend cuda --ranks max
            grep -E '^[0-9]+ ranks in |^pi=|^error' "$res/$ex-regs-$cap.log" | tail -n 2
        done
    done
fi

# The suites in order of what each tells (the limits first: every other
# suite's table is read against them), each with room for its full-size
# run on an H100 or H200 (docs/bench: the runs of 2026-11-28 and 11-30);
# the ones that did not finish at full size there run --quick.
bench 40 limits limits
bench 60 latency latency
bench 30 barrier barrier
bench 30 bcast bcast
bench 30 reduce reduce
bench 30 allreduce allreduce
bench 20 ibarrier ibarrier
bench 20 iallreduce iallreduce
bench 30 pi-quick pi --quick
bench 20 gather-quick gather --quick
bench 20 scatter-quick scatter --quick
bench 20 allgather-quick allgather --quick
bench 20 alltoall-quick alltoall --quick
bench 20 reduce_scatter-quick reduce_scatter --quick
bench 20 scan scan
bench 30 varcount-quick varcount --quick
bench 40 scale-quick scale --quick
bench 90 bw bw
bench 40 rma-quick rma --quick
# The size the timing model is compared at (docs/model.md), one suite a
# step so that one slow suite does not lose the others.
for s in barrier bcast reduce allreduce gather scatter allgather alltoall ibarrier iallreduce; do
    bench 30 "$s-1024" "$s" --ranks 1024
done

pack
echo "== steps"
cat "$res/steps.txt"
echo "total $((SECONDS - t0)) s; results in $out/results.tar.gz"
