#!/usr/bin/env bash
# One device call: conformance on cuda, the examples at max ranks, every bench
# suite at full size (gather --quick), the emulator's conformance if time is left.
# Everything lands in $OUT/results.tar.gz, re-packed after each step.
set -uo pipefail
export LC_ALL=C
T0=$SECONDS
DEADLINE=${DEADLINE:-545}
dir=$PWD/carry/bin
res=/tmp/res; mkdir -p $res/bench
bin=/tmp/bin; mkdir -p $bin
for b in gpu-mpi-check gpu-mpi-bench pi_p2p pi_reduce ring ping_pong; do gzip -dc $dir/$b.gz > $bin/$b; chmod +x $bin/$b; done
cp $dir/BUILD-INFO $dir/ptxas_report.txt $res/ 2>/dev/null
pack() { tar -C /tmp -czf $OUT/results.tar.gz res; }
left() { echo $(( DEADLINE - (SECONDS - T0) )); }
step() { # step LIMIT NAME CMD...
  local lim=$1 name=$2; shift 2
  local l; l=$(left); (( l < 5 )) && { echo "SKIP $name (no time)" | tee -a $res/steps.txt; return; }
  (( lim > l )) && lim=$l
  local s=$SECONDS
  timeout --kill-after=5 $lim "$@" > $res/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS-s))s (limit $lim)" | tee -a $res/steps.txt
  pack
}
{ date -u +%FT%TZ; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw --format=csv; } > $res/nvidia-smi.txt 2>&1
head -20 $res/nvidia-smi.txt
export GPU_MPI_WATCHDOG_S=30 GPU_MPI_CUDA_VERBOSE=1
step 120 check-cuda $bin/gpu-mpi-check --backend cuda --json $res/check-cuda.json
tail -3 $res/check-cuda.log
for cap in 0 128; do for ex in pi_p2p pi_reduce; do
  step 45 $ex-regs-$cap env GPU_MPI_MAX_REGISTERS=$cap $bin/$ex --backend cuda --ranks max
  grep -E '^[0-9]+ ranks in |^pi=|^error' $res/$ex-regs-$cap.log | tail -2
done; done
export GPU_MPI_WATCHDOG_S=60 GPU_MPI_CUDA_VERBOSE=0
bench() { # bench LIMIT SUITE [args]
  local lim=$1 s=$2; shift 2; local extra=()
  [[ $s == limits ]] && extra=(--write-profile $res/bench/gpu.profile)
  step $lim bench-$s $bin/gpu-mpi-bench $s --backend cuda --json $res/bench/gpu-$s.json "${extra[@]}" "$@"
  cp $res/bench-$s.log $res/bench/gpu-$s.txt 2>/dev/null
  sed -n '/^== targets/,/^all results/p' $res/bench-$s.log | head -20
}
bench 60 limits
bench 30 barrier
bench 30 bcast
bench 30 reduce
bench 30 allreduce
bench 60 latency
bench 30 scale
bench 120 pi
bench 30 ibarrier
bench 30 iallreduce
bench 40 scan
bench 40 scatter
bench 40 allgather
bench 40 reduce_scatter
bench 40 alltoall
bench 90 bw
bench 40 gather --quick
bench 60 ddt
step 200 check-cpu $bin/gpu-mpi-check --backend cpu --json $res/check-cpu.json
tail -2 $res/check-cpu.log
pack
echo "== steps"; cat $res/steps.txt
echo "total $((SECONDS-T0))s"
