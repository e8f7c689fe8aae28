//! Point-to-point suites: osu_latency, osu_bw and osu_mbw_mr inside a
//! kernel, against native message passing through global memory.

use super::limits::pair_world;
use super::{median, ratio, sync_note, Ctx, Row, Section, SyncPerMessage, Target};
use gpu_mpi::device::Kernel;
use gpu_mpi_bench_kernels::mpi::{P2pArgs, BENCH_BW, BENCH_LATENCY, P2P_FLAG_STRIDE, P2P_RESULTS};
use gpu_mpi_bench_kernels::native::{NATIVE_BW, NATIVE_LATENCY};

/// Latency message sizes of a full run: 0 B and 1 B to 64 KiB.
fn latency_sizes(ctx: &Ctx) -> Vec<u32> {
    if ctx.preset.quick {
        return vec![0, 8, 4096, 65536];
    }
    std::iter::once(0).chain((0..=16).map(|k| 1u32 << k)).collect()
}

/// Shape of one point-to-point launch.
#[derive(Clone, Copy)]
struct Shape {
    ranks: u32,
    block_dim: u32,
    pairs: u32,
    offset: u32,
    bytes: u32,
    window: u32,
    warmup: u32,
    iterations: u32,
    slots: u32,
}

/// What the out words of one launch say: per pair the sender's timed ns;
/// and the launch's synchronising operations per message (cpu backend).
fn run_once(
    ctx: &mut Ctx,
    kernel: &Kernel<P2pArgs>,
    s: &Shape,
) -> Result<(Vec<f64>, Option<SyncPerMessage>), String> {
    let per_pair = (3 + s.slots as usize) * s.bytes as usize;
    let buffers = ctx.alloc::<u8>(per_pair * s.pairs as usize)?;
    let flags = ctx.alloc::<u32>(P2P_FLAG_STRIDE * s.pairs as usize)?;
    let out = ctx.alloc::<u64>(P2P_RESULTS * s.pairs as usize)?;
    let args = P2pArgs {
        pairs: s.pairs,
        offset: s.offset,
        bytes: s.bytes,
        window: s.window,
        warmup: s.warmup,
        iterations: s.iterations,
        slots: s.slots,
        reserved: 0,
        buffers: buffers.slice(),
        flags: flags.slice(),
        out: out.slice(),
    };
    let run = ctx.launch(kernel, &args, &ctx.world(s.ranks, Some(s.block_dim)))?;
    let o = ctx.download(&out)?;
    let rounds = (s.warmup + s.iterations) as u64;
    // Messages of the whole launch: latency, a message and its reply per
    // round; bandwidth, a window and an acknowledgement.
    let per_round = if kernel.name.contains("bw") {
        s.window as u64 + 1
    } else {
        2
    };
    let sync = SyncPerMessage::of(&run.report, rounds * per_round * s.pairs as u64);
    let mut times = Vec::new();
    for p in 0..s.pairs as usize {
        let w = &o[p * P2P_RESULTS..(p + 1) * P2P_RESULTS];
        let messages = rounds
            * if kernel.name.contains("bw") {
                s.window as u64
            } else {
                1
            };
        if w[1] != 0 || w[2] != 0 || w[3] != rounds || w[4] != messages {
            return Err(format!(
                "{}: pair {p} ({} B): payload check failed: sender {} errors, receiver {} errors, \
                 {} of {rounds} rounds and {} of {messages} messages verified",
                kernel.name, s.bytes, w[1], w[2], w[3], w[4]
            ));
        }
        times.push(w[0] as f64);
    }
    ctx.checked();
    Ok((times, sync))
}

/// Medians over the repetitions of the slowest pair's timed nanoseconds and
/// of the synchronising operations per message.
fn measure(
    ctx: &mut Ctx,
    kernel: &Kernel<P2pArgs>,
    s: &Shape,
) -> Result<(f64, Option<SyncPerMessage>), String> {
    let mut v = Vec::new();
    let mut sync = Vec::new();
    for _ in 0..ctx.preset.reps {
        let (t, c) = run_once(ctx, kernel, s)?;
        v.push(t.into_iter().fold(0.0, f64::max));
        sync.push(c);
    }
    Ok((median(&v), SyncPerMessage::median(&sync)))
}

/// The native latency kernel's one-way nanoseconds for `bytes`, rank 0 to
/// a rank of another block, with `(warmup, iterations)` rounds: what the
/// limits take one thread's copy bandwidth from.
pub(crate) fn native_one_way_ns(
    ctx: &mut Ctx,
    bytes: u32,
    (warmup, iterations): (u32, u32),
) -> Result<f64, String> {
    let (n, block_dim) = pair_world(ctx);
    let shape = Shape {
        ranks: n,
        block_dim,
        pairs: 1,
        offset: block_dim * (n / block_dim / 2).max(1),
        bytes,
        window: 1,
        warmup,
        iterations,
        slots: 0,
    };
    Ok(measure(ctx, &NATIVE_LATENCY, &shape)?.0 / iterations as f64 / 2.0)
}

pub(crate) fn latency(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let (n, block_dim) = pair_world(ctx);
    let blocks = n / block_dim;
    let mut peers: Vec<(&'static str, u32)> = vec![("same warp", 1)];
    if block_dim > 32 {
        peers.push(("same block, other warp", 32));
    }
    if blocks >= 2 {
        peers.push(("other block (SM)", block_dim * (blocks / 2)));
    }
    let limit = ctx.limits.atomic_one_way_ns();
    let mut rows = Vec::new();
    let mut target = None;
    for &(label, peer) in &peers {
        for bytes in latency_sizes(ctx) {
            let (warmup, iterations) = if bytes <= 8192 {
                ctx.preset.loops((100, 1000), (5, 50))
            } else {
                ctx.preset.loops((10, 100), (2, 10))
            };
            let shape = Shape {
                ranks: n,
                block_dim,
                pairs: 1,
                offset: peer,
                bytes,
                window: 1,
                warmup,
                iterations,
                slots: 0,
            };
            let one_way = |ns: f64| ns / iterations as f64 / 2.0;
            let (mpi, sync) = measure(ctx, &BENCH_LATENCY, &shape)?;
            let mpi = one_way(mpi);
            let native = one_way(measure(ctx, &NATIVE_LATENCY, &shape)?.0);
            if bytes == 8 && peer >= block_dim {
                target = Some(mpi);
            }
            rows.push(vec![
                ("peer", label.into()),
                ("peer_rank", peer.into()),
                ("bytes", bytes.into()),
                ("mpi_us", (mpi / 1e3).into()),
                ("native_us", (native / 1e3).into()),
                ("ratio", ratio(mpi, native).into()),
                ("atomic_one_way_us", (limit / 1e3).into()),
                ("mpi_sync_per_msg", SyncPerMessage::total_value(sync)),
                ("iterations", iterations.into()),
                ("mpi_sync_kinds_per_msg", SyncPerMessage::kinds_value(sync)),
            ] as Row);
        }
    }
    let targets = target
        .map(|v| Target::at_most("8-byte one-way latency, other block (SM)", v / 1e3, 1.0, "us"))
        .into_iter()
        .collect();
    Ok((
        vec![Section {
            suite: "latency",
            title: format!(
                "latency: one-way = round trip / 2, rank 0 <-> peer, {n} ranks in blocks of {block_dim}, median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("peer", "peer"),
                ("peer_rank", "rank"),
                ("bytes", "bytes"),
                ("mpi_us", "mpi us"),
                ("native_us", "native us"),
                ("ratio", "x"),
                ("atomic_one_way_us", "atomic 1-way us"),
                ("mpi_sync_per_msg", "mpi sync/msg"),
            ],
            rows,
            notes: vec![
                "native: one copy straight into the peer's buffer and a release flag; ratio = MPI / native".into(),
                sync_note(ctx),
            ],
        }],
        targets,
    ))
}

/// Bandwidth message sizes: 1 B to 1 MiB by factors of 4.
fn bw_sizes(ctx: &Ctx) -> Vec<u32> {
    ctx.preset
        .pick((0..=10).map(|k| 1u32 << (2 * k)).collect(), vec![8, 4096, 65536])
}

fn mbw_sizes(ctx: &Ctx) -> Vec<u32> {
    ctx.preset.pick(vec![8, 256, 4096, 65536, 1 << 20], vec![8, 4096])
}

pub(crate) fn bandwidth(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let (n, block_dim) = pair_world(ctx);
    let window = ctx.preset.pick(64, 16);
    let slots = window.min(8);
    let copy = ctx.limits.copy_gbps;
    // Bytes one launch moves per pair at most (keeps big messages short).
    // On a GPU one thread copies a message at about 0.1 GB/s (one rank does
    // the copy), so 16 MiB is some 0.15 s per launch.
    let budget: u64 = if ctx.is_gpu() { 16 << 20 } else { 32 << 20 };
    let memory: u64 = if ctx.is_gpu() { 1 << 30 } else { 256 << 20 };
    let mut rows = Vec::new();
    let mut cases: Vec<(&'static str, Shape)> = Vec::new();
    for bytes in bw_sizes(ctx) {
        let per_launch = bytes as u64 * window as u64;
        let iterations = (budget / per_launch.max(1)).clamp(1, 100) as u32;
        let (warmup, iterations) = ctx.preset.loops((iterations.min(2), iterations), (1, 3));
        cases.push((
            "bw",
            Shape {
                ranks: n,
                block_dim,
                pairs: 1,
                offset: block_dim * (n / block_dim / 2).max(1),
                bytes,
                window,
                warmup,
                iterations,
                slots,
            },
        ));
    }
    for bytes in mbw_sizes(ctx) {
        let per_pair = (3 + slots as u64) * bytes as u64;
        let most = (memory / per_pair.max(1)).max(1);
        let mut pairs = (ctx.ranks / 2).min(ctx.preset.pick(256, 16)).max(1);
        while pairs as u64 > most && pairs > 1 {
            pairs /= 2;
        }
        let per_launch = bytes as u64 * window as u64 * pairs as u64;
        let iterations = (budget * 4 / per_launch.max(1)).clamp(1, 100) as u32;
        let (warmup, iterations) = ctx.preset.loops((iterations.min(2), iterations), (1, 3));
        let ranks = 2 * pairs;
        cases.push((
            "mbw_mr",
            Shape {
                ranks,
                block_dim: Ctx::block_dim_for(ranks),
                pairs,
                offset: pairs,
                bytes,
                window,
                warmup,
                iterations,
                slots,
            },
        ));
    }
    let mut targets = Vec::new();
    for (test, s) in cases {
        let (mpi_ns, _) = measure(ctx, &BENCH_BW, &s)?;
        let (native_ns, _) = measure(ctx, &NATIVE_BW, &s)?;
        let messages = s.window as f64 * s.iterations as f64 * s.pairs as f64;
        let bytes = messages * s.bytes as f64;
        // Issue 29's (docs/performance.md, "Targets"): the message rate at
        // least 0.8x the native ring's, so its time at most 1.25x; one pair
        // at 1 MiB at least 1 GB/s.
        if test == "mbw_mr" && s.bytes == 8 {
            targets.push(Target::at_most(
                "8-byte message rate, many pairs: time / native",
                ratio(mpi_ns, native_ns),
                1.25,
                "x",
            ));
        }
        if test == "bw" && s.bytes == 1 << 20 {
            targets.push(Target::at_least("one pair at 1 MiB", bytes / mpi_ns, 1.0, "GB/s"));
        }
        rows.push(vec![
            ("test", test.into()),
            ("pairs", s.pairs.into()),
            ("bytes", s.bytes.into()),
            ("mpi_gbps", (bytes / mpi_ns).into()),
            ("native_gbps", (bytes / native_ns).into()),
            ("ratio", ratio(mpi_ns, native_ns).into()),
            ("mpi_mmsgs", (messages / mpi_ns * 1e3).into()),
            ("native_mmsgs", (messages / native_ns * 1e3).into()),
            ("copy_limit_gbps", copy.into()),
            ("window", s.window.into()),
            ("iterations", s.iterations.into()),
            ("ranks", s.ranks.into()),
        ] as Row);
    }
    Ok((
        vec![Section {
            suite: "bw",
            title: format!(
                "bandwidth: windows of {window} messages, then an acknowledgement; bw = one pair rank 0 -> another block, \
                 mbw_mr = many pairs (i -> i + pairs); median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("test", "test"),
                ("pairs", "pairs"),
                ("bytes", "bytes"),
                ("mpi_gbps", "mpi GB/s"),
                ("native_gbps", "native GB/s"),
                ("ratio", "x (time)"),
                ("mpi_mmsgs", "mpi Mmsg/s"),
                ("native_mmsgs", "native Mmsg/s"),
                ("copy_limit_gbps", "copy GB/s"),
            ],
            rows,
            notes: vec![format!(
                "native: a ring of {slots} slots per pair (head/tail counters), one copy in and one copy out, as MPI's eager path; \
                 GB/s counts payload bytes once; ratio = MPI time / native time; copy = the device copy limit (read + write)"
            )],
        }],
        targets,
    ))
}
