# NVIDIA H200 141 GB HBM3e (132 SMs, sm_90): the timing model's costs.
# Refitted from the H200 run of docs/bench/h200-2026-11-28 (commit a641fbb);
# load_ns and batch_load_ns from the limits of docs/bench/h200-2026-11-30
# (commit 5dd1a39, gpu-limits-5dd1a39.txt).
# docs/model.md says how each value was obtained; "measured" means that
# run's `gpu-mpi-bench limits` less the model's other costs of the kernel
# that measured it (docs/model.md, "Modelling your own card"), "public" a
# published figure, "fitted" chosen so that the model meets that run's
# figures (docs/model.md, "Measured against modelled").
name = "NVIDIA H200"

load_hit_ns = 20          # public: L1 hit ~33 cycles at 1.75 GHz (Chips and Cheese, "Nvidia's H100: Funny L2", 2023)
load_ns = 148.5           # measured (docs/bench/h200-2026-11-30, 5dd1a39): dependent relaxed atomic loads, 156.5 ns each, less issue_ns
acquire_ns = 40           # fitted on the H100: ld.acquire.gpu's L1 invalidation
store_ns = 10             # public: a store issues and the thread moves on
visible_ns = 192.3        # measured: atomic flag one-way 543.7 ns, less load, issue, release, store and acquire
release_ns = 120          # fitted on the H100: MEMBAR.GPU before a release store
fence_ns = 150            # fitted on the H100: fence.acq_rel.gpu
rmw_ns = 219.8            # measured: dependent fetch_add, 227.8 ns each, less issue_ns
rmw_interval_ns = 2.1     # fitted: the native grid barrier, 1.084 us at 128 blocks and 1.349 us at 256 (scale suite)
sleep_min_ns = 30         # public: nanosleep's granularity (PTX ISA: "approximately")
block_barrier_ns = 20     # public: bar.sync after the last warp, ~20-40 cycles
warp_op_ns = 15           # public: shfl.sync latency, ~25 cycles
copy_thread_gbps = 0.1266 # measured: the native one-way copy of 64 KiB less 0 B, 518.0 us, less load_ns
copy_device_gbps = 2025   # measured: the grid-stride copy kernel, read plus written
launch_ns = 9183          # measured: an empty kernel on 67,584 ranks, 9.472 us, less its ranks' own modelled time
issue_ns = 8              # fitted on the H100: the instructions around each access
library_ns = 26            # fitted (docs/model.md, 44dbb0c on the H200): pi p2p 4,096 ranks, 8-byte latency, barrier 1,024 ranks; per access to a rank's own records or the world's layout
copy_wide_gbps = 0.369     # fitted: the 64 KiB one-way MPI latency, 186.4 us, less the modelled rest of the message (a direct message, one copy_wide); 1 MiB one pair measured 0.372 GB/s
shared_ns = 17             # public: a shared-memory load ~30 cycles at 1.755 GHz (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024); not measured here
batch_load_ns = 27.6       # measured (docs/bench/h200-2026-11-30, 5dd1a39): batches of 8 independent relaxed loads, 349.9 ns each, less one dependent load, 156.5 ns, over the 7 loads after the first
line_ns = 7               # fitted (docs/model.md, "Coalescing"): per further 128-byte line of a warp's data access
cta_fence_ns = 20         # estimate, not measured: a block-scope (.cta) fence orders a thread's accesses at its SM, as bar.sync does for the block (block_barrier_ns); the limits' shared atomic chain measures it on a GPU
shared_batch_load_ns = 2.3 # estimate, not measured: independent shared-memory loads of one thread issue a few cycles apart, 4 at 1.755 GHz; any value under issue_ns (14 cycles) models alike, the loads' issue bounding the batch; the limits' shared load batch measures it on a GPU
