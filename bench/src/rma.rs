//! The one-sided suite (`rma`), OSU one-sided style, each benchmark
//! against a native kernel doing the same data movement in the same run:
//! the latency of an 8-byte put, get and accumulate in every
//! synchronisation mode against a native flag hand-off; put bandwidth
//! against a native copy and the copy limit; a ring halo exchange with
//! notified puts against `send_receive` and a native one; the fence
//! against the world barrier; and a block's ranks counting into a
//! shared-memory window in the world memory or in the block's shared
//! memory, against atomics on shared memory. Ratios are reported, never
//! asserted.

use super::limits::pair_world;
use super::{median, ratio, Ctx, Row, Section, Target};
use gpu_mpi::device::Kernel;
use gpu_mpi::{WorldSpec, PREFERRED_BLOCK_DIM};
use gpu_mpi_bench_kernels::mpi::{CollArgs, BENCH_BARRIER};
use gpu_mpi_bench_kernels::native::{coll_counter_words, NATIVE_BARRIER};
use gpu_mpi_bench_kernels::rma::{
    halo_words, latency_words, put_bw_words, RmaArgs, BENCH_RMA_BLOCK, BENCH_RMA_FENCE, BENCH_RMA_HALO,
    BENCH_RMA_LATENCY, BENCH_RMA_PUT_BW, HALO_NOTIFY, HALO_SENDRECV, NATIVE_RMA_BLOCK, NATIVE_RMA_HALO,
    NATIVE_RMA_HANDOFF, NATIVE_RMA_PUT_BW, OP_ACC, OP_GET, OP_PUT, RMA_FLAG_STRIDE, RMA_RESULTS, SYNC_FENCE,
    SYNC_FLUSH, SYNC_LOCK, SYNC_NOTIFY, SYNC_PSCW,
};

/// The synchronisation modes of the latency table: `(mode, name)`.
const MODES: [(u32, &str); 5] = [
    (SYNC_LOCK, "lock/unlock"),
    (SYNC_FLUSH, "lock_all+flush"),
    (SYNC_FENCE, "fence"),
    (SYNC_PSCW, "pscw"),
    (SYNC_NOTIFY, "notify"),
];

/// The operations: `(op, name)`.
const OPS: [(u32, &str); 3] = [(OP_PUT, "put"), (OP_GET, "get"), (OP_ACC, "accumulate")];

/// One launch of an [`RmaArgs`] kernel.
#[derive(Clone, Copy)]
struct Launch {
    ranks: u32,
    block_dim: u32,
    mode: u32,
    op: u32,
    peer: u32,
    bytes: u32,
    warmup: u32,
    iterations: u32,
    /// Words of `data` per rank.
    part: usize,
    /// The block counter's world: bytes of each block's shared window
    /// memory (None: another benchmark's world).
    shared_window_bytes: Option<u64>,
}

/// The median over the repetitions of `stat` of the ranks' timed
/// nanoseconds. Every launch must leave no errors and, on every rank,
/// `checks(rank)` values checked: else an error naming the kernel.
fn measure(
    ctx: &mut Ctx,
    kernel: &Kernel<RmaArgs>,
    l: &Launch,
    checks: &dyn Fn(u32) -> u64,
    stat: fn(&[u64]) -> f64,
) -> Result<f64, String> {
    let ranks = l.ranks as usize;
    let data = ctx.alloc::<u64>(ranks * l.part)?;
    let mut flags = ctx.alloc::<u32>(ranks * RMA_FLAG_STRIDE)?;
    let mut out = ctx.alloc::<u64>(ranks * RMA_RESULTS)?;
    let args = RmaArgs {
        mode: l.mode,
        op: l.op,
        peer: l.peer,
        bytes: l.bytes,
        warmup: l.warmup,
        iterations: l.iterations,
        part: l.part as u32,
        reserved: 0,
        data: data.slice(),
        flags: flags.slice(),
        out: out.slice(),
    };
    let mut spec = windows(ctx.world(l.ranks, Some(l.block_dim)));
    if let Some(bytes) = l.shared_window_bytes {
        // The block counters: a window per block, one `u64` per rank of
        // the block, all in block rank 0's window bytes when not in the
        // block's memory.
        spec = spec
            .windows(l.ranks / l.block_dim)
            .window_bytes(8 * l.block_dim)
            .shared_window_bytes(bytes);
    }
    let mut v = Vec::new();
    for _ in 0..ctx.preset.reps {
        ctx.zero(&mut flags)?;
        ctx.zero(&mut out)?;
        ctx.launch(kernel, &args, &spec)?;
        let o = ctx.download(&out)?;
        for (r, w) in o.chunks_exact(RMA_RESULTS).enumerate() {
            let want = checks(r as u32);
            if w[1] != 0 || w[2] != want {
                return Err(format!(
                    "{} (mode {}, op {}, {} B, {} ranks): rank {r}: {} wrong values, {} of {want} checked",
                    kernel.name, l.mode, l.op, l.bytes, l.ranks, w[1], w[2]
                ));
            }
        }
        ctx.checked();
        let times: Vec<u64> = o.chunks_exact(RMA_RESULTS).map(|w| w[0]).collect();
        v.push(stat(&times));
    }
    Ok(median(&v))
}

/// The world a window benchmark needs: one window.
fn windows(spec: WorldSpec) -> WorldSpec {
    spec.windows(1)
}

/// Rank 0's timed nanoseconds.
fn rank0(t: &[u64]) -> f64 {
    t[0] as f64
}

/// The slowest rank's timed nanoseconds.
fn slowest(t: &[u64]) -> f64 {
    t.iter().copied().max().unwrap_or(0) as f64
}

/// The ranks' average timed nanoseconds.
fn average(t: &[u64]) -> f64 {
    t.iter().map(|&x| x as f64).sum::<f64>() / t.len().max(1) as f64
}

/// The largest world up to `top` that every one of `kernels` holds
/// co-resident (on a GPU their registers bound it), in whole blocks.
fn fitting<A>(ctx: &Ctx, top: u32, kernels: &[&Kernel<A>]) -> Result<u32, String> {
    let mut n = top;
    for k in kernels {
        let cap = ctx
            .device
            .max_ranks_for(k, PREFERRED_BLOCK_DIM)
            .map_err(|e| format!("occupancy of {}: {e}", k.name))?;
        n = n.min(cap);
    }
    if n < top && n >= PREFERRED_BLOCK_DIM {
        n = n / PREFERRED_BLOCK_DIM * PREFERRED_BLOCK_DIM;
    }
    Ok(n)
}

/// The largest world up to `top` (a power of two below it, or `top`)
/// whose `bytes_per_rank` fit `memory`; at least 2.
fn within(top: u32, bytes_per_rank: u64, memory: u64) -> u32 {
    let fits = |n: u32| n as u64 * bytes_per_rank <= memory;
    if fits(top) {
        return top;
    }
    let mut n = top.next_power_of_two() / 2;
    while n > 2 && !fits(n) {
        n /= 2;
    }
    n.max(2)
}

/// Device memory one benchmark's buffers may take.
fn memory(ctx: &Ctx) -> u64 {
    if ctx.is_gpu() {
        1 << 30
    } else {
        256 << 20
    }
}

pub(crate) fn run(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let (latency, notified) = latency(ctx)?;
    let (bandwidth, put_bw) = bandwidth(ctx)?;
    let halo = halo(ctx)?;
    let (fence, fence_ratio) = fence(ctx)?;
    let block = block_counter(ctx)?;
    let mut targets = vec![];
    if let Some(v) = notified {
        targets.push(Target::at_most(
            "notified 8-byte put / native flag hand-off",
            v,
            1.1,
            "x",
        ));
    }
    if let Some(v) = put_bw {
        targets.push(Target::at_most(
            "put time / native copy time, largest block",
            v,
            1.25,
            "x",
        ));
    }
    targets.push(Target::at_most("fence / world barrier", fence_ratio, 1.0, "x"));
    Ok((vec![latency, bandwidth, halo, fence, block], targets))
}

/// The latency table and the notified put's ratio to the native hand-off.
fn latency(ctx: &mut Ctx) -> Result<(Section, Option<f64>), String> {
    let (n, block_dim) = pair_world(ctx);
    let peer = block_dim * (n / block_dim / 2).max(1);
    let (warmup, iterations) = ctx.preset.loops((100, 1000), (5, 50));
    let total = u64::from(warmup + iterations);
    let launch = |mode, op| Launch {
        ranks: n,
        block_dim,
        mode,
        op,
        peer,
        bytes: 8,
        warmup,
        iterations,
        part: latency_words(),
        shared_window_bytes: None,
    };
    let pair_checks = |r: u32| if r == 0 || r == peer { total } else { 0 };
    let native = measure(ctx, &NATIVE_RMA_HANDOFF, &launch(0, OP_PUT), &pair_checks, rank0)?;
    let native_one_way = native / iterations as f64 / 2.0;
    let mut rows = Vec::new();
    let mut notified = None;
    for (mode, mode_name) in MODES {
        for (op, op_name) in OPS {
            if mode == SYNC_NOTIFY && op == OP_GET {
                continue;
            }
            // What each rank checks: a get every value it reads, the
            // notified ping-pong every value both ways; a target of an
            // active mode every round, of a passive one once at the end.
            let checks = |r: u32| match (r == 0, r == peer) {
                (true, _) if op == OP_GET || mode == SYNC_NOTIFY => total,
                (_, true) if matches!(mode, SYNC_FENCE | SYNC_PSCW | SYNC_NOTIFY) => total,
                (_, true) => u64::from(total > 0),
                _ => 0,
            };
            let ns = measure(ctx, &BENCH_RMA_LATENCY, &launch(mode, op), &checks, rank0)?;
            // A ping-pong's round carries two operations.
            let per_op = ns / iterations as f64 / if mode == SYNC_NOTIFY { 2.0 } else { 1.0 };
            if mode == SYNC_NOTIFY && op == OP_PUT {
                notified = Some(ratio(per_op, native_one_way));
            }
            rows.push(vec![
                ("sync", mode_name.into()),
                ("op", op_name.into()),
                ("mpi_us", (per_op / 1e3).into()),
                ("native_us", (native_one_way / 1e3).into()),
                ("ratio", ratio(per_op, native_one_way).into()),
                ("peer_rank", peer.into()),
                ("iterations", iterations.into()),
            ] as Row);
        }
    }
    Ok((
        Section {
            suite: "rma",
            title: format!(
                "rma latency: 8-byte operations, rank 0 -> rank {peer} (another block) on a window of their own \
                 communicator, {n} ranks in blocks of {block_dim}, median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("sync", "sync"),
                ("op", "op"),
                ("mpi_us", "mpi us/op"),
                ("native_us", "native us"),
                ("ratio", "x"),
            ],
            rows,
            notes: vec![
                "mpi: rank 0's time per operation with its synchronisation: lock/unlock = lock (shared), op, unlock; \
                 lock_all+flush = op, flush; fence = op, fence (both ranks); pscw = start, op, complete (the \
                 target: post, wait); notify = a ping-pong of put_notify (accumulate_notify) + \
                 wait_notifications, one way = round trip / 2"
                    .into(),
                "native: a plain 8-byte store into the peer's element and a release flag; the peer acquires, \
                 checks, answers the same way; one way = round trip / 2; x = MPI / native"
                    .into(),
            ],
        },
        notified,
    ))
}

/// Put block sizes.
fn bw_sizes(ctx: &Ctx) -> Vec<u32> {
    ctx.preset
        .pick(vec![4096, 16384, 65536, 262144, 1 << 20], vec![4096, 65536])
}

/// The bandwidth table and the time ratio of the largest block.
fn bandwidth(ctx: &mut Ctx) -> Result<(Section, Option<f64>), String> {
    let copy = ctx.limits.copy_gbps;
    let top = fitting(ctx, ctx.ranks, &[&BENCH_RMA_PUT_BW, &NATIVE_RMA_PUT_BW])?;
    let mut rows = Vec::new();
    let mut largest = None;
    for bytes in bw_sizes(ctx) {
        let part = put_bw_words(bytes);
        let ranks = within(top, 8 * part as u64, memory(ctx));
        // About 16 MiB per rank and launch at most: one thread copies a
        // block, at some 0.1 GB/s on a GPU.
        let iterations = ((16u32 << 20) / bytes).clamp(2, 100);
        let (warmup, iterations) = ctx.preset.loops((iterations.min(2), iterations), (1, 3));
        let l = Launch {
            ranks,
            block_dim: Ctx::block_dim_for(ranks),
            mode: 0,
            op: OP_PUT,
            peer: 0,
            bytes,
            warmup,
            iterations,
            part,
            shared_window_bytes: None,
        };
        let mpi = measure(ctx, &BENCH_RMA_PUT_BW, &l, &|_| 1, slowest)?;
        let native = measure(ctx, &NATIVE_RMA_PUT_BW, &l, &|_| 1, slowest)?;
        let moved = ranks as f64 * bytes as f64 * iterations as f64;
        let (mpi_gbps, native_gbps) = (moved / mpi, moved / native);
        largest = Some(ratio(mpi, native));
        rows.push(vec![
            ("bytes", bytes.into()),
            ("ranks", ranks.into()),
            ("mpi_gbps", mpi_gbps.into()),
            ("native_gbps", native_gbps.into()),
            ("ratio", ratio(mpi, native).into()),
            ("mpi_of_copy", ratio(2.0 * mpi_gbps, copy).into()),
            ("copy_limit_gbps", copy.into()),
            ("iterations", iterations.into()),
        ] as Row);
    }
    Ok((
        Section {
            suite: "rma",
            title: format!(
                "rma put bandwidth: every rank puts a block into its right neighbour's window, median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("bytes", "bytes"),
                ("ranks", "ranks"),
                ("mpi_gbps", "put GB/s"),
                ("native_gbps", "native GB/s"),
                ("ratio", "x (time)"),
                ("mpi_of_copy", "of copy"),
                ("copy_limit_gbps", "copy GB/s"),
            ],
            rows,
            notes: vec![
                "mpi: lock_all, then per round a put of the block and a flush; GB/s = payload bytes of every rank \
                 over the slowest rank's time"
                    .into(),
                "native: every rank copies its block straight into its neighbour's (one thread's copy, 16-byte \
                 vectors where aligned, as a put's), a grid barrier at the end; x = MPI time / native time"
                    .into(),
                "of copy = put bytes read + written over the copy limit (native_copy: every rank, 8-byte words)"
                    .into(),
            ],
        },
        largest,
    ))
}

/// Halo bytes per side.
fn halo_sizes(ctx: &Ctx) -> Vec<u32> {
    ctx.preset.pick(vec![8, 512, 4096, 32768], vec![8, 4096])
}

fn halo(ctx: &mut Ctx) -> Result<Section, String> {
    let top = fitting(ctx, ctx.ranks, &[&BENCH_RMA_HALO, &NATIVE_RMA_HALO])?;
    let loops = ctx.preset.loops((10, 100), (2, 10));
    let total = u64::from(loops.0 + loops.1);
    let mut rows = Vec::new();
    for bytes in halo_sizes(ctx) {
        let part = halo_words(bytes);
        let ranks = within(top, 8 * part as u64, memory(ctx));
        let l = |mode| Launch {
            ranks,
            block_dim: Ctx::block_dim_for(ranks),
            mode,
            op: OP_PUT,
            peer: 0,
            bytes,
            warmup: loops.0,
            iterations: loops.1,
            part,
            shared_window_bytes: None,
        };
        let per_round = |ns: f64| ns / loops.1 as f64 / 1e3;
        let put = per_round(measure(
            ctx,
            &BENCH_RMA_HALO,
            &l(HALO_NOTIFY),
            &|_| total,
            average,
        )?);
        let sendrecv = per_round(measure(
            ctx,
            &BENCH_RMA_HALO,
            &l(HALO_SENDRECV),
            &|_| total,
            average,
        )?);
        let native = per_round(measure(ctx, &NATIVE_RMA_HALO, &l(0), &|_| total, average)?);
        rows.push(vec![
            ("bytes", bytes.into()),
            ("ranks", ranks.into()),
            ("put_notify_us", put.into()),
            ("sendrecv_us", sendrecv.into()),
            ("native_us", native.into()),
            ("ratio_put_sendrecv", ratio(put, sendrecv).into()),
            ("ratio", ratio(put, native).into()),
            ("ratio_sendrecv", ratio(sendrecv, native).into()),
            ("iterations", loops.1.into()),
        ] as Row);
    }
    Ok(Section {
        suite: "rma",
        title: format!(
            "rma halo: 1-D ring, each rank exchanges bytes with both neighbours per round, per-round us averaged \
             over ranks, median of {}",
            ctx.preset.reps
        ),
        columns: vec![
            ("bytes", "bytes"),
            ("ranks", "ranks"),
            ("put_notify_us", "put+notify us"),
            ("sendrecv_us", "sendrecv us"),
            ("native_us", "native us"),
            ("ratio_put_sendrecv", "x sendrecv"),
            ("ratio", "x native"),
            ("ratio_sendrecv", "sendrecv x native"),
        ],
        rows,
        notes: vec![
            "put+notify: put_notify into both neighbours' windows (lock_all held), wait for one notification from \
             each; sendrecv: send_receive right, then left; two halo buffers per side, alternate rounds"
                .into(),
            "native: copies straight into the neighbours' halos, a release flag per rank, acquire both neighbours' \
             flags; x sendrecv = put+notify / sendrecv, x native = put+notify / native"
                .into(),
        ],
    })
}

/// Per-round microseconds of a [`CollArgs`] barrier-loop kernel, averaged
/// over ranks (median over launches); its errors fail the run.
fn barrier_like(
    ctx: &mut Ctx,
    kernel: &Kernel<CollArgs>,
    ranks: u32,
    loops: (u32, u32),
) -> Result<f64, String> {
    let block_dim = Ctx::block_dim_for(ranks);
    let bytes = ctx.alloc::<u8>(0)?;
    let values = ctx.alloc::<f64>(ranks as usize)?;
    let mut counters = ctx.alloc::<u32>(coll_counter_words(ranks / block_dim))?;
    let mut marks = ctx.alloc::<u32>(ranks as usize)?;
    let mut out = ctx.alloc::<u64>(2 * ranks as usize)?;
    let parts = ctx.alloc::<i32>(0)?;
    let args = CollArgs {
        size: 0,
        warmup: loops.0,
        iterations: loops.1,
        root: 0,
        bytes: bytes.slice(),
        values: values.slice(),
        counters: counters.slice(),
        marks: marks.slice(),
        out: out.slice(),
        parts: parts.slice(),
    };
    let spec = windows(ctx.world(ranks, Some(block_dim)));
    let mut avgs = Vec::new();
    for _ in 0..ctx.preset.reps {
        ctx.zero(&mut counters)?;
        ctx.zero(&mut marks)?;
        ctx.zero(&mut out)?;
        ctx.launch(kernel, &args, &spec)?;
        let o = ctx.download(&out)?;
        if let Some(bad) = o.iter().skip(1).step_by(2).position(|&e| e != 0) {
            return Err(format!(
                "{}: wrong results on {ranks} ranks, the first on rank {bad}",
                kernel.name
            ));
        }
        ctx.checked();
        let per_round: Vec<f64> = o
            .iter()
            .step_by(2)
            .map(|&ns| ns as f64 / loops.1 as f64)
            .collect();
        avgs.push(per_round.iter().sum::<f64>() / per_round.len() as f64 / 1e3);
    }
    Ok(median(&avgs))
}

/// The fence table and the fence's ratio to the world barrier.
fn fence(ctx: &mut Ctx) -> Result<(Section, f64), String> {
    // The fence kernel holds fewer ranks than the barriers (255 registers
    // on an H200: 33,792 against the run's 67,584).
    let ranks = fitting(ctx, ctx.ranks, &[&BENCH_RMA_FENCE])?;
    let loops = ctx.preset.loops((10, 1000), (3, 20));
    let fence = barrier_like(ctx, &BENCH_RMA_FENCE, ranks, loops)?;
    let barrier = barrier_like(ctx, &BENCH_BARRIER, ranks, loops)?;
    let native = barrier_like(ctx, &NATIVE_BARRIER, ranks, loops)?;
    let row: Row = vec![
        ("ranks", ranks.into()),
        ("fence_us", fence.into()),
        ("barrier_us", barrier.into()),
        ("native_us", native.into()),
        ("ratio", ratio(fence, barrier).into()),
        ("ratio_native", ratio(fence, native).into()),
        ("iterations", loops.1.into()),
    ];
    Ok((
        Section {
            suite: "rma",
            title: format!(
                "rma fence: MPI_Win_fence against MPI_Barrier, {ranks} ranks in blocks of {}, {} rounds timed, \
                 per-round us averaged over ranks, median of {}",
                Ctx::block_dim_for(ranks),
                loops.1,
                ctx.preset.reps
            ),
            columns: vec![
                ("ranks", "ranks"),
                ("fence_us", "fence us"),
                ("barrier_us", "barrier us"),
                ("native_us", "grid barrier us"),
                ("ratio", "x barrier"),
                ("ratio_native", "x grid"),
            ],
            rows: vec![row],
            notes: vec![
                "fence: a window of one f64 per rank over the world; one checked epoch (a put to rank r + size/2 + 1 \
                 between two fences), then the barrier benchmark's loop with the fence as its barrier"
                    .into(),
                "barrier: the barrier suite's kernel; grid barrier: the native one; x barrier = fence / barrier"
                    .into(),
            ],
        },
        ratio(fence, barrier),
    ))
}

/// The block counter table: each rank of a block adding 1 to its own
/// element of a shared-memory window over its block, each add waiting for
/// the last, with the window in the world memory and in the block's
/// shared memory, against atomics on words of the block's shared memory.
fn block_counter(ctx: &mut Ctx) -> Result<Section, String> {
    let (n, block_dim) = pair_world(ctx);
    let (warmup, iterations) = ctx.preset.loops((10, 200), (2, 10));
    let total = u64::from(warmup + iterations);
    let launch = |mode, shared_window_bytes| Launch {
        ranks: n,
        block_dim,
        mode,
        op: 0,
        peer: 0,
        bytes: 8,
        warmup,
        iterations,
        part: 1,
        shared_window_bytes: Some(shared_window_bytes),
    };
    let checks = |r: u32| total + u64::from(r.is_multiple_of(block_dim));
    let per_add = |ns: f64| ns / f64::from(iterations.max(1));
    let bytes = 8 * u64::from(block_dim);
    let native = per_add(measure(
        ctx,
        &NATIVE_RMA_BLOCK,
        &launch(0, bytes),
        &checks,
        average,
    )?);
    let mut rows = Vec::new();
    for (mode, bytes, memory) in [(0, 0, "world memory"), (1, bytes, "block shared memory")] {
        let mpi = per_add(measure(
            ctx,
            &BENCH_RMA_BLOCK,
            &launch(mode, bytes),
            &checks,
            average,
        )?);
        rows.push(vec![
            ("memory", memory.into()),
            ("mpi_us", (mpi / 1e3).into()),
            ("native_us", (native / 1e3).into()),
            ("ratio", ratio(mpi, native).into()),
            ("iterations", iterations.into()),
        ] as Row);
    }
    Ok(Section {
        suite: "rma",
        title: format!(
            "rma block counter: every rank of a block fetch_and_op(sum, 1) on its own element of a shared-memory \
             window over its block, each add after the last, {n} ranks in blocks of {block_dim}, per-add us averaged over ranks, median of {}",
            ctx.preset.reps
        ),
        columns: vec![
            ("memory", "window in"),
            ("mpi_us", "mpi us/add"),
            ("native_us", "native us/add"),
            ("ratio", "x"),
        ],
        rows,
        notes: vec![
            "mpi: Window::allocate_shared on split_shared's communicator (block rank 0's segment: a u64 per rank), \
             under lock_all; world memory: the launch has no shared window memory; block shared memory: \
             WorldSpec::shared_window_bytes(8 x block size)"
                .into(),
            "native: relaxed atomic adds on the thread's word of the block's dynamic shared memory (atomicAdd on \
             __shared__); x = MPI / native"
                .into(),
        ],
    })
}
