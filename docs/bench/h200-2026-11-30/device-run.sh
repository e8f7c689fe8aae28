#!/usr/bin/env bash
# One device call (docs/bench/h200-2026-11-30/README.md): conformance on cuda,
# the examples at max ranks, the suites whose code changed since the H200 run
# of 2026-11-28 (full size, or --quick where that run did not finish at full
# size), every collective at the 1,024 ranks the timing model is compared at,
# and the barrier with every backoff sleep at 1 ns (docs/model.md asks
# whether the waiting ranks' nanosleep explains the barrier's miss).
# Everything lands in $OUT/results.tar.gz, re-packed after each step.
set -uo pipefail
export LC_ALL=C
T0=$SECONDS
DEADLINE=${DEADLINE:-550}
dir=$PWD/carry/bin
res=/tmp/res; mkdir -p $res/bench
bin=/tmp/bin; mkdir -p $bin
for b in gpu-mpi-check gpu-mpi-bench pi_p2p pi_reduce; do gzip -dc $dir/$b.gz > $bin/$b; chmod +x $bin/$b; done
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
tail -3 $res/nvidia-smi.txt
export GPU_MPI_WATCHDOG_S=30 GPU_MPI_CUDA_VERBOSE=1
step 60 check-cuda $bin/gpu-mpi-check --backend cuda --json $res/check-cuda.json
tail -2 $res/check-cuda.log
for cap in 0 128; do for ex in pi_p2p pi_reduce; do
  step 30 $ex-regs-$cap env GPU_MPI_MAX_REGISTERS=$cap $bin/$ex --backend cuda --ranks max
  grep -E '^[0-9]+ ranks in |^pi=|^error' $res/$ex-regs-$cap.log | tail -2
done; done
export GPU_MPI_CUDA_VERBOSE=0
bench() { # bench LIMIT NAME SUITES... [args]
  local lim=$1 n=$2; shift 2; local extra=()
  [[ $n == limits ]] && extra=(--write-profile $res/bench/gpu.profile)
  step $lim bench-$n $bin/gpu-mpi-bench "$@" --backend cuda --json $res/bench/gpu-$n.json "${extra[@]}"
  cp $res/bench-$n.log $res/bench/gpu-$n.txt 2>/dev/null
  sed -n '/^== targets/,/^all results/p' $res/bench-$n.log | grep -v '^all results' | head -12
}
bench 30 limits limits
bench 30 barrier barrier
bench 30 bcast bcast
bench 30 reduce reduce
bench 30 allreduce allreduce
bench 90 coll-1024 barrier bcast reduce allreduce gather scatter allgather alltoall reduce_scatter scan ibarrier iallreduce --ranks 1024
step 40 bench-barrier-sleep1 env GPU_MPI_BACKOFF_NS=1 $bin/gpu-mpi-bench barrier --backend cuda --ranks 1024 --json $res/bench/gpu-barrier-sleep1-1024.json
cp $res/bench-barrier-sleep1.log $res/bench/gpu-barrier-sleep1-1024.txt
bench 45 latency latency
bench 75 pi-quick pi --quick
bench 20 gather-quick gather --quick
bench 20 scan scan
bench 20 ibarrier ibarrier
bench 20 iallreduce iallreduce
bench 40 scale-quick scale --quick
bench 40 scatter-quick scatter --quick
bench 40 allgather-quick allgather --quick
bench 40 alltoall-quick alltoall --quick
bench 40 reduce_scatter-quick reduce_scatter --quick
bench 60 bw bw
bench 30 rma-quick rma --quick
pack
echo "== steps"; cat $res/steps.txt
echo "total $((SECONDS-T0))s"
