# Written by gpu-mpi-bench 0.1.0 limits --write-profile (commit 44dbb0c1a04116d4a3f2edf8c79a2ec4e44d70a5), 2026-11-30T18:54:12Z
# from the physical limits measured on NVIDIA H200;
# 67584 ranks, the median of 5 launches per measurement. docs/model.md, "Modelling your own card".
# "measured": this run's limit with the model's other costs of its kernel taken away;
# "base": not measured by `gpu-mpi-bench limits`, the value of the base profile h100 (NVIDIA H100 80GB HBM3).
name = "NVIDIA H200"

load_hit_ns = 20  # base h100
load_ns = 161.8  # measured: a chain of dependent relaxed atomic loads, 169.8 ns each, less issue_ns
acquire_ns = 40  # base h100
store_ns = 10  # base h100
visible_ns = 220.4  # measured: the atomic flag's one-way time, 560.2 ns, less load_ns and the base's issue, release, store and acquire costs
release_ns = 120  # base h100
fence_ns = 150  # base h100
rmw_ns = 244.2  # measured: dependent fetch_add, 252.2 ns each, less issue_ns
rmw_interval_ns = 0.01806  # measured: 67584 ranks x 8 fetch_add on one word, 19232 ns, less an empty kernel (9216 ns) and one fetch_add, over the adds after the first
sleep_min_ns = 30  # base h100
block_barrier_ns = 20  # base h100
warp_op_ns = 15  # base h100
copy_thread_gbps = 0.1274  # measured: 65536 bytes one way (515072 ns) less 0 bytes one way (564.2 ns), native latency kernel, less load_ns
copy_device_gbps = 589.8  # measured: 67584 ranks each copying 4096 bytes with one byte copy at once, read + written, over 947968 ns less an empty kernel
launch_ns = 8851  # measured: an empty kernel's kernel time on the run's world, 9216 ns, less its ranks' own modelled time, 364.8 ns
issue_ns = 8  # base h100
library_ns = 87  # base h100
copy_wide_gbps = 0.369  # base h100
shared_ns = 17  # base h100
