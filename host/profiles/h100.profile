# NVIDIA H100 SXM 80 GB HBM3 (132 SMs, sm_90): the timing model's costs.
# docs/model.md says how each value was obtained; "measured" means our own
# bench (docs/bench/h100-2026-11-24, gpu-mpi-bench limits), "public" a
# published figure, "fitted" chosen so that the model meets the measured
# table in docs/model.md.
name = "NVIDIA H100 80GB HBM3"

load_hit_ns = 20          # public: L1 hit ~33 cycles at 1.75 GHz (Chips and Cheese, "Nvidia's H100: Funny L2", 2023)
load_ns = 240             # measured: one L2 round trip = dependent atomic RMW, 0.239 us (2026-11-24)
acquire_ns = 40           # fitted: ld.acquire.gpu's L1 invalidation
store_ns = 10             # public: a store issues and the thread moves on
visible_ns = 120          # fitted: atomic flag one-way 0.595 us (2026-11-24) = release + visibility + poll
release_ns = 120          # fitted: MEMBAR.GPU before a release store
fence_ns = 150            # fitted: fence.acq_rel.gpu
rmw_ns = 240              # measured: dependent fetch_add, 0.239 us (2026-11-24)
rmw_interval_ns = 4.3     # fitted: the native grid barrier, 1.34 us at 132 blocks (2026-11-22) and 1.905 us at 264 (2026-11-24): 4.3 ns per arrival on one counter
sleep_min_ns = 30         # public: nanosleep's granularity (PTX ISA: "approximately")
block_barrier_ns = 20     # public: bar.sync after the last warp, ~20-40 cycles
warp_op_ns = 15           # public: shfl.sync latency, ~25 cycles
copy_thread_gbps = 0.128  # measured: the native one-way copy of 64 KiB between blocks, 514 us (2026-11-22, 380b4b6)
copy_device_gbps = 1840   # measured: grid-stride copy, read + written, 1840 GB/s (2026-11-24)
launch_ns = 10400         # measured: an empty kernel on the full world, 10.4 us kernel time (2026-11-24)
issue_ns = 8              # fitted: the instructions around each access
library_ns = 26            # fitted (docs/model.md, 44dbb0c on the H200): pi p2p 4,096 ranks, 8-byte latency, barrier 1,024 ranks; per access to a rank's own records or the world's layout
copy_wide_gbps = 0.369     # fitted on the H200 (the same SMs; the H100 never ran copy_wide): the 64 KiB one-way MPI latency, 186.4 us, less the 8-byte one
shared_ns = 17             # public: a shared-memory load ~30 cycles at 1.755 GHz (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024); not measured here
batch_load_ns = 27.6       # measured on the H200 (the same SMs and clocks; no H100 measured it): batches of 8 independent relaxed loads, 349.9 ns, less one dependent load, 156.5 ns, over 7 (docs/bench/h200-2026-11-30)
line_ns = 7               # fitted (docs/model.md, "Coalescing"): per further 128-byte line of a warp's data access
cta_fence_ns = 20         # estimate, not measured: a block-scope (.cta) fence orders a thread's accesses at its SM, as bar.sync does for the block (block_barrier_ns); the limits' shared atomic chain measures it on a GPU
shared_batch_load_ns = 2.3 # estimate, not measured: independent shared-memory loads of one thread issue a few cycles apart, 4 at 1.755 GHz; any value under issue_ns (14 cycles) models alike, the loads' issue bounding the batch; the limits' shared load batch measures it on a GPU
