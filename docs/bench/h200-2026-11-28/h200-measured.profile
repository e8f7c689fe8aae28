# Written by gpu-mpi-bench 0.1.0 limits --write-profile (commit a641fbbc26ddefb464e640c3da5453bba0502ce4), 2026-11-28T16:39:40Z
# from the physical limits measured on NVIDIA H200;
# 67584 ranks, the median of 5 launches per measurement. docs/model.md, "Modelling your own card".
# "measured": this run's limit with the model's other costs of its kernel taken away;
# "base": not measured by `gpu-mpi-bench limits`, the value of the base profile h100 (NVIDIA H100 80GB HBM3).
name = "NVIDIA H200"

load_hit_ns = 20  # base h100
load_ns = 173.4  # measured: a chain of dependent relaxed atomic loads, 181.4 ns each, less issue_ns
acquire_ns = 40  # base h100
store_ns = 10  # base h100
visible_ns = 192.3  # measured: the atomic flag's one-way time, 543.7 ns, less load_ns and the base's issue, release, store and acquire costs
release_ns = 120  # base h100
fence_ns = 150  # base h100
rmw_ns = 219.8  # measured: dependent fetch_add, 227.8 ns each, less issue_ns
rmw_interval_ns = 0.01840  # measured: 67584 ranks x 8 fetch_add on one word, 19648 ns, less an empty kernel (9472 ns) and one fetch_add, over the adds after the first
sleep_min_ns = 30  # base h100
block_barrier_ns = 20  # base h100
warp_op_ns = 15  # base h100
copy_thread_gbps = 0.1266  # measured: 65536 bytes one way (518626 ns) less 0 bytes one way (603.7 ns), native latency kernel, less load_ns
copy_device_gbps = 558.7  # measured: 67584 ranks each copying 4096 bytes with one byte copy at once, read + written, over 1000352 ns less an empty kernel
launch_ns = 9183  # measured: an empty kernel's kernel time on the run's world, 9472 ns, less its ranks' own modelled time, 289.4 ns
issue_ns = 8  # base h100
