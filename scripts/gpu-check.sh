#!/usr/bin/env bash
# The cuda backend's check on a machine with an NVIDIA GPU, from prebuilt
# binaries (that machine needs the NVIDIA driver, bash and coreutils; no
# Rust, no network). docs/gpu.md, "Checking on a GPU machine".
#
# Here (with Rust and the PTX toolchain), build the binaries into a folder:
#
#   scripts/gpu-check.sh --build carry/bin
#
# which runs `GPU_MPI_SASS=1 cargo build --release --workspace --bins` (with
# the PTX: not with GPU_MPI_SKIP_PTX=1; GPU_MPI_SASS=1 assembles the check and
# bench kernels for sm_90 here, where no GPU is seen) and puts gpu-mpi-check, gpu-mpi-bench and the
# examples (stripped, gzipped: about 12 MB in all), the ptxas report and
# this script into carry/bin. There:
#
#   bash carry/bin/gpu-check.sh carry/bin
#
# runs, with logs in $OUT (the device machine's output folder) or else
# ./gpu-check-out:
#   1. nvidia-smi --query-gpu=name,driver_version --format=csv, the ptxas report;
#   2. gpu-mpi-check --backend cuda, then --backend cpu, and compares them
#      case by case;
#   3. pi_p2p and pi_reduce at --ranks max on cuda, uncapped and with the
#      registers capped at 128 (GPU_MPI_MAX_REGISTERS=128);
#   4. a short table of all that, last.
# Exit status: 0 when every cuda step passed and matched the emulator.
#
# The integration tests are not run here (this machine may have no Rust):
# on a GPU machine with the toolchain, plain `cargo test --release -p
# gpu-mpi-check` runs every test written with `testgen!` on the GPU as
# well (`NAME::cuda`; GPU_MPI_TEST_BACKEND=cuda makes a GPU that does not
# open fail them instead of skipping). docs/gpu.md, "The tests on a GPU".
set -uo pipefail
export LC_ALL=C # one collation for sort and join

usage() {
    echo "usage: $0 --build DIR   (here: build the binaries into DIR)" >&2
    echo "       $0 DIR           (on the GPU machine: run the checks with the binaries in DIR)" >&2
    exit 2
}

if [[ ${1:-} == --build ]]; then
    [[ $# -eq 2 ]] || usage
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    dest=$2
    if [[ ${GPU_MPI_SKIP_PTX:-} == 1 ]]; then
        echo "gpu-check: GPU_MPI_SKIP_PTX=1 builds no GPU kernels; unset it" >&2
        exit 1
    fi
    (cd "$root" && GPU_MPI_SASS=1 cargo build --release --workspace --bins) || exit 1
    mkdir -p "$dest" || exit 1
    rel=$root/target/release
    # Stripped and gzipped: ~2 MB each instead of ~22 MB (debug info, and
    # the embedded PTX text compresses well).
    for b in gpu-mpi-check gpu-mpi-bench pi_p2p pi_reduce ring ping_pong; do
        name=$(basename "$b")
        cp "$rel/$b" "$dest/$name" || exit 1
        if command -v strip >/dev/null; then strip "$dest/$name" || exit 1; fi
        gzip -9 -f "$dest/$name" || exit 1
    done
    # The report of the build that embedded the PTX (newest build directory).
    report=$(ls -t "$rel"/build/gpu-mpi-*/out/ptxas_report.txt 2>/dev/null | head -n 1)
    if [[ -n $report ]]; then
        cp "$report" "$dest/ptxas_report.txt"
    else
        echo "gpu-check: no ptxas report found (ptxas missing at build time?)" >&2
    fi
    cp "${BASH_SOURCE[0]}" "$dest/gpu-check.sh"
    cp "$(dirname "${BASH_SOURCE[0]}")/gpu-bins.sh" "$dest/gpu-bins.sh" || exit 1
    {
        echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "commit: $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "rustc: $(rustc --version 2>/dev/null)"
    } >"$dest/BUILD-INFO"
    echo "gpu-check: binaries in $dest; on the GPU machine run: bash $dest/gpu-check.sh $dest"
    exit 0
fi

[[ $# -eq 1 && -d $1 ]] || usage
dir=$(cd "$1" && pwd)
# shellcheck source=gpu-bins.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-bins.sh" || exit 2
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out" || exit 1
# The binaries: unpacked into a scratch folder when they come gzipped.
bin=$(mktemp -d) || exit 1
trap 'rm -rf "$bin"' EXIT
unpack_bins "$dir" "$bin" gpu-mpi-check "${PI_EXAMPLES[@]}" || exit 2

# A stuck kernel stops its launch after this long instead of the default 120 s.
export GPU_MPI_WATCHDOG_S=${GPU_MPI_WATCHDOG_S:-60}
# One line per device open and per launch: PTX chosen, JIT time, occupancy.
export GPU_MPI_CUDA_VERBOSE=${GPU_MPI_CUDA_VERBOSE:-1}

# run LIMIT LOG CMD...: runs CMD with a time limit, output into LOG; its status.
run() {
    local limit=$1 log=$2
    shift 2
    if command -v timeout >/dev/null; then
        timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    else
        "$@" >"$log" 2>&1
    fi
}

summary=()
note() { summary+=("$(printf '%-30s %s' "$1" "$2")"); }
status=0

echo "== GPU"
if gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1); then
    note "GPU (name, driver)" "$(echo "$gpu" | sed -n 2p)"
else
    gpu="nvidia-smi failed: $gpu"
    note "GPU (name, driver)" "nvidia-smi failed"
fi
echo "$gpu" | tee "$out/gpu-info.txt"
[[ -f $dir/BUILD-INFO ]] && cat "$dir/BUILD-INFO"

echo "== ptxas report (registers, stack, spills per kernel)"
if [[ -f $dir/ptxas_report.txt ]]; then
    cat "$dir/ptxas_report.txt"
else
    echo "(no ptxas_report.txt in $dir)"
fi

# results LOG: "name result" per case of a gpu-mpi-check log.
results() { awk '$1 == "pass" || $1 == "FAIL" { print $2, $1 }' "$1" | sort; }

for backend in cuda cpu; do
    echo "== gpu-mpi-check --backend $backend"
    start=$SECONDS
    run 420 "$out/check-$backend.log" "$bin/gpu-mpi-check" --backend "$backend" --json "$out/check-$backend.json"
    rc=$?
    grep -v '^pass ' "$out/check-$backend.log" | tail -n 60
    line=$(grep -E '^[0-9]+ cases on ' "$out/check-$backend.log" | tail -n 1)
    note "conformance $backend" "${line:-no table} (exit $rc, $((SECONDS - start)) s)"
    [[ $backend == cuda && $rc -ne 0 ]] && status=1
done

echo "== cuda against cpu"
results "$out/check-cuda.log" >"$out/results-cuda.txt"
results "$out/check-cpu.log" >"$out/results-cpu.txt"
join -a1 -a2 -e missing -o 0,1.2,2.2 "$out/results-cuda.txt" "$out/results-cpu.txt" |
    awk '$2 != $3 { printf "%s (cuda %s, cpu %s)\n", $1, $2, $3 }' >"$out/differ.txt"
cases=$(wc -l <"$out/results-cpu.txt")
differ=$(wc -l <"$out/differ.txt")
if [[ ! -s $out/results-cuda.txt ]]; then
    echo "cuda ran no case"
    note "cuda vs cpu" "NOT COMPARED: cuda ran no case"
    status=1
elif [[ $differ -eq 0 && $cases -gt 0 ]]; then
    echo "same result in all $cases cases"
    note "cuda vs cpu" "same in all $cases cases"
else
    cat "$out/differ.txt"
    note "cuda vs cpu" "$differ DIFFER: $(head -n 5 "$out/differ.txt" | tr '\n' ' ')$([[ $differ -gt 5 ]] && echo "...")"
    status=1
fi

for cap in "${PI_CAPS[@]}"; do
    for example in "${PI_EXAMPLES[@]}"; do
        name="$example max ranks"
        ((cap > 0)) && name="$name, regs<=$cap"
        log="$out/$example-regs-$cap.log"
        run 300 "$log" env GPU_MPI_MAX_REGISTERS="$cap" "$bin/$example" --backend cuda --ranks max
        rc=$?
        echo "== $name"
        cat "$log"
        # "N ranks in B blocks of D on cuda: T ms" and "pi=... error=..."
        timing=$(grep -E '^[0-9]+ ranks in ' "$log" | tail -n 1)
        pi=$(grep -E '^pi=' "$log" | tail -n 1 | awk '{ print $2 }')
        if [[ $rc -eq 0 ]]; then
            note "$name" "$timing, $pi"
        else
            note "$name" "FAILED (exit $rc): $(grep -E '^error' "$log" | tail -n 1)"
            status=1
        fi
    done
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
echo "logs: $out"
exit $status
