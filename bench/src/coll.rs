//! Collective suites: osu_barrier, osu_bcast, osu_reduce, osu_allreduce,
//! osu_gather, osu_scatter, osu_allgather, osu_alltoall,
//! osu_reduce_scatter, osu_scan, osu_ibarrier and osu_iallreduce, and the
//! varcount forms of the four exchanges (gatherv to alltoallv), inside a
//! kernel, each against a native kernel doing the same data movement in
//! the same run (the grid barrier and relaunch, a native broadcast, the
//! single-pass reductions with warp shuffles and shared memory, direct
//! stores and loads for the exchanges); and `scale`, each of them from 32
//! ranks to the largest world.
//!
//! OSU's method: warm-up rounds, then a timed loop; each rank times itself
//! and the statistics are taken over ranks (min, max, average of the
//! per-round time). Barrier: the whole loop is timed. The others: each
//! round's collective is timed alone, then a barrier (MPI's or the native
//! one) separates the rounds, untimed.

use super::{median, ratio, Ctx, Row, Section, Target};
use gpu_mpi::device::Kernel;
use gpu_mpi_bench_kernels::exchange::{
    exchange_values, varcount_entries, varcount_entry, Exchange, BENCH_ALLGATHER, BENCH_ALLGATHER_VARCOUNT,
    BENCH_ALLTOALL, BENCH_ALLTOALL_IN_PLACE, BENCH_ALLTOALL_VARCOUNT, BENCH_ALLTOALL_VARCOUNT_IN_PLACE,
    BENCH_GATHER, BENCH_GATHER_VARCOUNT, BENCH_IALLREDUCE, BENCH_IBARRIER, BENCH_REDUCE_SCATTER, BENCH_SCAN,
    BENCH_SCATTER, BENCH_SCATTER_VARCOUNT, NATIVE_ALLGATHER, NATIVE_ALLGATHER_VARCOUNT,
    NATIVE_ALLREDUCE_SHFL, NATIVE_ALLTOALL, NATIVE_ALLTOALL_VARCOUNT, NATIVE_GATHER, NATIVE_GATHER_VARCOUNT,
    NATIVE_REDUCE_SCATTER, NATIVE_REDUCE_SHFL, NATIVE_SCAN, NATIVE_SCATTER, NATIVE_SCATTER_VARCOUNT,
};
use gpu_mpi_bench_kernels::mpi::{CollArgs, BENCH_ALLREDUCE, BENCH_BARRIER, BENCH_BCAST, BENCH_REDUCE};
use gpu_mpi_bench_kernels::native::{
    bcast_bytes, coll_counter_words, reduce_values, NATIVE_ALLREDUCE, NATIVE_BARRIER, NATIVE_BARRIER_VARIANT,
    NATIVE_BCAST, NATIVE_EMPTY, NATIVE_REDUCE, VARIANT_RECORD_STORES, VARIANT_RETURNING_ADD,
};

/// The collective a launch measures.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Ibarrier,
    Iallreduce,
    Exchange(Exchange),
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Barrier => "barrier",
            Op::Bcast => "bcast",
            Op::Reduce => "reduce",
            Op::Allreduce => "allreduce",
            Op::Ibarrier => "ibarrier",
            Op::Iallreduce => "iallreduce",
            Op::Exchange(Exchange::Gather) => "gather",
            Op::Exchange(Exchange::Scatter) => "scatter",
            Op::Exchange(Exchange::AllGather) => "allgather",
            Op::Exchange(Exchange::AllToAll) => "alltoall",
            Op::Exchange(Exchange::AllToAllInPlace) => "alltoall_in_place",
            Op::Exchange(Exchange::ReduceScatter) => "reduce_scatter",
            Op::Exchange(Exchange::Scan) => "scan",
            Op::Exchange(Exchange::GatherVarcount) => "gatherv",
            Op::Exchange(Exchange::ScatterVarcount) => "scatterv",
            Op::Exchange(Exchange::AllGatherVarcount) => "allgatherv",
            Op::Exchange(Exchange::AllToAllVarcount) => "alltoallv",
            Op::Exchange(Exchange::AllToAllVarcountInPlace) => "alltoallv_in_place",
        }
    }

    /// The MPI kernel and the native baseline the ratio is taken against.
    fn kernels(self) -> (&'static Kernel<CollArgs>, &'static Kernel<CollArgs>) {
        match self {
            Op::Barrier => (&BENCH_BARRIER, &NATIVE_BARRIER),
            Op::Bcast => (&BENCH_BCAST, &NATIVE_BCAST),
            Op::Reduce => (&BENCH_REDUCE, &NATIVE_REDUCE_SHFL),
            Op::Allreduce => (&BENCH_ALLREDUCE, &NATIVE_ALLREDUCE_SHFL),
            Op::Ibarrier => (&BENCH_IBARRIER, &NATIVE_BARRIER),
            Op::Iallreduce => (&BENCH_IALLREDUCE, &NATIVE_ALLREDUCE_SHFL),
            Op::Exchange(x) => match x {
                Exchange::Gather => (&BENCH_GATHER, &NATIVE_GATHER),
                Exchange::Scatter => (&BENCH_SCATTER, &NATIVE_SCATTER),
                Exchange::AllGather => (&BENCH_ALLGATHER, &NATIVE_ALLGATHER),
                Exchange::AllToAll => (&BENCH_ALLTOALL, &NATIVE_ALLTOALL),
                Exchange::AllToAllInPlace => (&BENCH_ALLTOALL_IN_PLACE, &NATIVE_ALLTOALL),
                Exchange::ReduceScatter => (&BENCH_REDUCE_SCATTER, &NATIVE_REDUCE_SCATTER),
                Exchange::Scan => (&BENCH_SCAN, &NATIVE_SCAN),
                Exchange::GatherVarcount => (&BENCH_GATHER_VARCOUNT, &NATIVE_GATHER_VARCOUNT),
                Exchange::ScatterVarcount => (&BENCH_SCATTER_VARCOUNT, &NATIVE_SCATTER_VARCOUNT),
                Exchange::AllGatherVarcount => (&BENCH_ALLGATHER_VARCOUNT, &NATIVE_ALLGATHER_VARCOUNT),
                Exchange::AllToAllVarcount => (&BENCH_ALLTOALL_VARCOUNT, &NATIVE_ALLTOALL_VARCOUNT),
                Exchange::AllToAllVarcountInPlace => {
                    (&BENCH_ALLTOALL_VARCOUNT_IN_PLACE, &NATIVE_ALLTOALL_VARCOUNT)
                }
            },
        }
    }

    /// The first native baseline, without shuffles or shared memory (block
    /// trees in global memory), kept as a second column.
    fn global_native(self) -> Option<&'static Kernel<CollArgs>> {
        match self {
            Op::Reduce => Some(&NATIVE_REDUCE),
            Op::Allreduce => Some(&NATIVE_ALLREDUCE),
            _ => None,
        }
    }

    fn is_reduction(self) -> bool {
        matches!(self, Op::Reduce | Op::Allreduce | Op::Iallreduce)
    }

    /// Bytes a rank contributes per call for `size` (broadcast: bytes;
    /// the others: `f64` elements).
    fn bytes(self, size: u32) -> u32 {
        if self == Op::Bcast {
            size
        } else {
            size * 8
        }
    }
}

/// Per-round microseconds over ranks: medians (over launches) of the
/// minimum, maximum and average.
#[derive(Clone, Copy)]
struct Stats {
    min: f64,
    max: f64,
    avg: f64,
}

fn measure(
    ctx: &mut Ctx,
    kernel: &Kernel<CollArgs>,
    op: Op,
    ranks: u32,
    size: u32,
    (warmup, iterations): (u32, u32),
) -> Result<Stats, String> {
    let block_dim = Ctx::block_dim_for(ranks);
    let blocks = ranks / block_dim;
    let bytes = ctx.alloc::<u8>(if op == Op::Bcast {
        bcast_bytes(ranks, size)
    } else {
        0
    })?;
    let values = ctx.alloc::<f64>(match op {
        Op::Exchange(x) => exchange_values(x, ranks, blocks, size),
        _ if op.is_reduction() => reduce_values(ranks, blocks, size),
        _ => 0,
    })?;
    let mut counters = ctx.alloc::<u32>(coll_counter_words(blocks))?;
    let mut marks = ctx.alloc::<u32>(ranks as usize)?;
    let mut out = ctx.alloc::<u64>(2 * ranks as usize)?;
    let parts: Vec<i32> = match op {
        Op::Exchange(x) if x.is_varcount() => (0..varcount_entries(ranks as usize))
            .map(|i| varcount_entry(ranks as usize, size as usize, i))
            .collect(),
        _ => Vec::new(),
    };
    let parts = ctx.upload(&parts)?;
    let args = CollArgs {
        size,
        warmup,
        iterations,
        root: 0,
        bytes: bytes.slice(),
        values: values.slice(),
        counters: counters.slice(),
        marks: marks.slice(),
        out: out.slice(),
        parts: parts.slice(),
    };
    let spec = ctx.world(ranks, Some(block_dim));
    let (mut mins, mut maxs, mut avgs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ctx.preset.reps {
        ctx.zero(&mut counters)?;
        ctx.zero(&mut marks)?;
        ctx.zero(&mut out)?;
        ctx.launch(kernel, &args, &spec)?;
        let o = ctx.download(&out)?;
        let errors: u64 = o.iter().skip(1).step_by(2).sum();
        if errors != 0 {
            let bad = o.iter().skip(1).step_by(2).position(|&e| e != 0).unwrap_or(0);
            return Err(format!(
                "{}: {errors} wrong results on {ranks} ranks (size {size}), the first on rank {bad}",
                kernel.name
            ));
        }
        ctx.checked();
        let per_round: Vec<f64> = o
            .iter()
            .step_by(2)
            .map(|&ns| ns as f64 / iterations as f64 / 1e3)
            .collect();
        mins.push(per_round.iter().copied().fold(f64::INFINITY, f64::min));
        maxs.push(per_round.iter().copied().fold(0.0, f64::max));
        avgs.push(per_round.iter().sum::<f64>() / per_round.len() as f64);
    }
    Ok(Stats {
        min: median(&mins),
        max: median(&maxs),
        avg: median(&avgs),
    })
}

/// Kernel and wall microseconds of relaunching an empty kernel on the world.
fn relaunch(ctx: &mut Ctx, ranks: u32) -> Result<(f64, f64), String> {
    let spec = ctx.world(ranks, Some(Ctx::block_dim_for(ranks)));
    let (mut kernel, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..ctx.preset.reps {
        let t = ctx.launch(&NATIVE_EMPTY, &0u32, &spec)?;
        kernel.push(t.report.kernel_time().as_secs_f64() * 1e6);
        wall.push(t.wall.as_secs_f64() * 1e6);
    }
    ctx.checked();
    Ok((median(&kernel), median(&wall)))
}

fn stats_row(op: Op, ranks: u32, size: u32, mpi: Stats, native: Stats) -> Row {
    vec![
        ("op", op.name().into()),
        ("ranks", ranks.into()),
        ("size", size.into()),
        ("mpi_avg_us", mpi.avg.into()),
        ("mpi_min_us", mpi.min.into()),
        ("mpi_max_us", mpi.max.into()),
        ("native_avg_us", native.avg.into()),
        ("native_min_us", native.min.into()),
        ("native_max_us", native.max.into()),
        ("ratio", ratio(mpi.avg, native.avg).into()),
    ]
}

/// What issue 29 asks of an 8-byte `op` (docs/performance.md, "Targets"):
/// a bound on its time over its native's, or on its own time.
#[derive(Clone, Copy)]
enum Goal {
    /// MPI time / native time at most this.
    Ratio(f64),
    /// MPI time at most this many µs.
    Micros(f64),
}

/// The target `op`'s 8-byte row is held to, named for its suite's table
/// (`across`: for the scale suite, over its worlds from 32 ranks up: the
/// worst ratio, or the time at the largest world); `None` for the
/// collectives issue 29 gives no bound (reduce-scatter, scan).
fn goal(op: Op, across: bool) -> Option<(&'static str, Goal)> {
    // A ratio's name, and the scale suite's "worst world" twin of it.
    macro_rules! ratio {
        ($name:literal, $bound:expr) => {
            (
                ($name, concat!($name, ", worst world")),
                Goal::Ratio($bound),
            )
        };
    }
    // A time's name, and the scale suite's "largest world" twin of it.
    macro_rules! micros {
        ($name:literal, $bound:expr) => {
            (
                ($name, concat!($name, ", largest world")),
                Goal::Micros($bound),
            )
        };
    }
    let ((one, all), goal) = match op {
        Op::Barrier => ratio!("MPI barrier / native grid barrier", 1.0),
        Op::Ibarrier => ratio!("MPI_Ibarrier + wait / native grid barrier", 1.0),
        Op::Bcast => ratio!("8-byte broadcast / native", 1.5),
        Op::Reduce => ratio!("8-byte reduce / native single pass", 1.1),
        Op::Allreduce => micros!("8-byte all-reduce", 3.0),
        Op::Iallreduce => micros!("8-byte MPI_Iallreduce + wait", 3.0),
        Op::Exchange(Exchange::Gather) => ratio!("8-byte gather / native", 1.5),
        Op::Exchange(Exchange::Scatter) => ratio!("8-byte scatter / native", 1.5),
        Op::Exchange(Exchange::AllGather) => ratio!("8-byte all-gather / native", 1.5),
        Op::Exchange(Exchange::AllToAll) => ratio!("8-byte all-to-all / native", 1.5),
        Op::Exchange(Exchange::AllToAllInPlace) => ratio!("8-byte all-to-all in place / native", 1.5),
        Op::Exchange(Exchange::ReduceScatter | Exchange::Scan) => return None,
        Op::Exchange(Exchange::GatherVarcount) => ratio!("gatherv of 8 and 16 bytes / native", 1.5),
        Op::Exchange(Exchange::ScatterVarcount) => ratio!("scatterv of 8 and 16 bytes / native", 1.5),
        Op::Exchange(Exchange::AllGatherVarcount) => ratio!("all-gatherv of 8 and 16 bytes / native", 1.5),
        Op::Exchange(Exchange::AllToAllVarcount) => ratio!("all-to-allv of 8 and 16 bytes / native", 1.5),
        Op::Exchange(Exchange::AllToAllVarcountInPlace) => {
            ratio!("all-to-allv in place of 8 and 16 bytes / native", 1.5)
        }
    };
    Some((if across { all } else { one }, goal))
}

/// `op`'s target (see [`goal`]) on one measurement.
fn target(op: Op, across: bool, mpi: Stats, native: Stats) -> Option<Target> {
    goal(op, across).map(|(name, goal)| match goal {
        Goal::Ratio(bound) => Target::at_most(name, ratio(mpi.avg, native.avg), bound, "x"),
        Goal::Micros(bound) => Target::at_most(name, mpi.avg, bound, "us"),
    })
}

const STATS_COLUMNS: [(&str, &str); 7] = [
    ("mpi_avg_us", "mpi avg us"),
    ("mpi_min_us", "min"),
    ("mpi_max_us", "max"),
    ("native_avg_us", "native avg us"),
    ("native_min_us", "min"),
    ("native_max_us", "max"),
    ("ratio", "x (avg)"),
];

/// The columns of the first native baseline (block trees in global memory).
const GLOBAL_COLUMNS: [(&str, &str); 2] = [
    ("native_global_avg_us", "global-tree native us"),
    ("ratio_global", "x (global)"),
];

pub(crate) fn barrier(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let ranks = ctx.ranks;
    let loops = ctx.preset.loops((10, 1000), (3, 20));
    let (mpi_k, native_k) = Op::Barrier.kernels();
    let mpi = measure(ctx, mpi_k, Op::Barrier, ranks, 0, loops)?;
    let native = measure(ctx, native_k, Op::Barrier, ranks, 0, loops)?;
    let (relaunch_kernel, relaunch_wall) = relaunch(ctx, ranks)?;
    let mut variants = Vec::new();
    for (name, bits) in [
        ("native", 0),
        ("returning acq_rel add", VARIANT_RETURNING_ADD),
        ("4 relaxed stores per rank", VARIANT_RECORD_STORES),
        ("both", VARIANT_RETURNING_ADD | VARIANT_RECORD_STORES),
    ] {
        let v = measure(ctx, &NATIVE_BARRIER_VARIANT, Op::Barrier, ranks, bits, loops)?;
        variants.push(vec![
            ("variant", name.into()),
            ("avg_us", v.avg.into()),
            ("max_us", v.max.into()),
            ("ratio_native", ratio(v.avg, native.avg).into()),
            ("ratio_mpi", ratio(v.avg, mpi.avg).into()),
        ]);
    }
    let mut row = stats_row(Op::Barrier, ranks, 0, mpi, native);
    row.extend([
        ("relaunch_kernel_us", relaunch_kernel.into()),
        ("relaunch_wall_us", relaunch_wall.into()),
        (
            "atomic_round_trip_us",
            (ctx.limits.atomic_round_trip_ns / 1e3).into(),
        ),
        ("iterations", loops.1.into()),
    ]);
    let mut columns = vec![("ranks", "ranks")];
    columns.extend(STATS_COLUMNS);
    columns.extend([
        ("relaunch_kernel_us", "relaunch us"),
        ("relaunch_wall_us", "relaunch wall us"),
        ("atomic_round_trip_us", "atomic rtt us"),
    ]);
    Ok((
        vec![Section {
            suite: "barrier",
            title: format!(
                "barrier: {} ranks in blocks of {}, {} rounds timed, per-round time over ranks, median of {}",
                ranks,
                Ctx::block_dim_for(ranks),
                loops.1,
                ctx.preset.reps
            ),
            columns,
            rows: vec![row],
            notes: vec![
                "native: grid barrier as cooperative groups' grid.sync (block barrier, one release atomic per block, acquire spin, block barrier)".into(),
                "relaunch: an empty kernel on the same world (kernel time; wall = the host's launch call, world set-up included)".into(),
            ],
        }, Section {
            suite: "barrier",
            title: format!(
                "barrier variants: the native grid barrier with what the world barrier adds, {ranks} ranks, per-round time over ranks, median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("variant", "variant"),
                ("avg_us", "avg us"),
                ("max_us", "max us"),
                ("ratio_native", "x native"),
                ("ratio_mpi", "x mpi"),
            ],
            rows: variants,
            notes: vec![
                "returning acq_rel add: the leader arrives with one acquire-release add whose value it uses, as the world barrier does (native: a fence, then a release add)".into(),
                "4 relaxed stores per rank: before each barrier every rank stores 4 words of its own, as the world barrier writes its wait record".into(),
            ],
        }],
        target(Op::Barrier, false, mpi, native).into_iter().collect(),
    ))
}

pub(crate) fn ibarrier(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let ranks = ctx.ranks;
    let loops = ctx.preset.loops((10, 1000), (3, 20));
    let (mpi_k, native_k) = Op::Ibarrier.kernels();
    let mpi = measure(ctx, mpi_k, Op::Ibarrier, ranks, 0, loops)?;
    let native = measure(ctx, native_k, Op::Ibarrier, ranks, 0, loops)?;
    let mut row = stats_row(Op::Ibarrier, ranks, 0, mpi, native);
    row.push(("iterations", loops.1.into()));
    let mut columns = vec![("ranks", "ranks")];
    columns.extend(STATS_COLUMNS);
    Ok((
        vec![Section {
            suite: "ibarrier",
            title: format!(
                "ibarrier: {} ranks in blocks of {}, {} rounds of MPI_Ibarrier + MPI_Wait timed, per-round time over ranks, median of {}",
                ranks,
                Ctx::block_dim_for(ranks),
                loops.1,
                ctx.preset.reps
            ),
            columns,
            rows: vec![row],
            notes: vec!["native: the grid barrier of the barrier suite (nothing to overlap: the wait follows the call at once)".into()],
        }],
        target(Op::Ibarrier, false, mpi, native).into_iter().collect(),
    ))
}

/// `op`'s table over `sizes`, and its target on the 8-byte row.
fn sized(
    ctx: &mut Ctx,
    op: Op,
    sizes: &[u32],
    unit: &'static str,
) -> Result<(Vec<Section>, Vec<Target>), String> {
    let ranks = ctx.ranks;
    let loops = ctx.preset.loops((10, 100), (2, 10));
    let (mpi_k, native_k) = op.kernels();
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for &size in sizes {
        let mpi = measure(ctx, mpi_k, op, ranks, size, loops)?;
        let native = measure(ctx, native_k, op, ranks, size, loops)?;
        if op.bytes(size) == 8 {
            targets.extend(target(op, false, mpi, native));
        }
        let mut row = stats_row(op, ranks, size, mpi, native);
        row.push(("bytes", op.bytes(size).into()));
        if let Some(global_k) = op.global_native() {
            let global = measure(ctx, global_k, op, ranks, size, loops)?;
            row.extend([
                ("native_global_avg_us", global.avg.into()),
                ("ratio_global", ratio(mpi.avg, global.avg).into()),
            ]);
        }
        rows.push(row);
    }
    let mut columns = vec![("bytes", "bytes")];
    columns.extend(STATS_COLUMNS);
    if op.global_native().is_some() {
        columns.extend(GLOBAL_COLUMNS);
    }
    let mut notes = vec![match op {
        Op::Bcast => "native: the root copies to a staging area and publishes the round (release); block leaders acquire, block barrier, all copy out",
        Op::Reduce => "native: single pass with warp shuffles and shared memory (warp sums, block sum in shared memory, one row per block, the last block to arrive sums the rows), the root waits for the result",
        _ => "native: the single pass of reduce (warp shuffles, shared memory), then every block leader waits for the last block's announcement, block barrier, all read the result",
    }
    .to_string()];
    if op.global_native().is_some() {
        notes.push("global-tree native: the first baseline, the same single pass with the block trees in global memory and a block barrier per step (no shuffles, no shared memory)".into());
    }
    if op == Op::Iallreduce {
        notes.push("mpi: MPI_Iallreduce then MPI_Wait at once (no overlap measured)".into());
    }
    let section = Section {
        suite: op.name(),
        title: format!(
            "{}: {} ranks in blocks of {}, {} ({}), each round timed alone, median of {}",
            op.name(),
            ranks,
            Ctx::block_dim_for(ranks),
            match op {
                Op::Bcast => "root 0",
                Op::Reduce => "sum of f64, root 0",
                _ => "sum of f64",
            },
            unit,
            ctx.preset.reps
        ),
        columns,
        rows,
        notes,
    };
    Ok((vec![section], targets))
}

/// Broadcast sizes; the per-rank buffers stay under 256 MiB in all.
fn bcast_sizes(ctx: &Ctx) -> Vec<u32> {
    let all = ctx.preset.pick(vec![8, 64, 512, 4096, 32768], vec![8, 4096]);
    all.into_iter()
        .filter(|&s| s == 8 || (ctx.ranks as u64 + 1) * s as u64 <= 256 << 20)
        .collect()
}

/// Reduction element counts; the rows stay under 512 MiB in all.
fn reduce_counts(ctx: &Ctx) -> Vec<u32> {
    let all = ctx.preset.pick(vec![1, 4, 32, 128], vec![1, 32]);
    all.into_iter()
        .filter(|&c| c == 1 || 4 * ctx.ranks as u64 * c as u64 * 8 <= 512 << 20)
        .collect()
}

pub(crate) fn bcast(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let sizes = bcast_sizes(ctx);
    sized(ctx, Op::Bcast, &sizes, "bytes")
}

pub(crate) fn reduce(ctx: &mut Ctx, all: bool) -> Result<(Vec<Section>, Vec<Target>), String> {
    let counts = reduce_counts(ctx);
    let op = if all { Op::Allreduce } else { Op::Reduce };
    sized(ctx, op, &counts, "size = f64 elements")
}

pub(crate) fn iallreduce(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    // A non-blocking all-reduce's operand must fit the world's
    // `immediate_bytes` (48 by default): at most 6 `f64`.
    sized(ctx, Op::Iallreduce, &[1, 4], "size = f64 elements")
}

/// `f64` elements of the exchange benchmarks' buffers at most (512 MiB).
const EXCHANGE_MAX_VALUES: usize = 64 << 20;

/// The largest world (a power of two, or `top` itself) up to `top` whose
/// buffers for `x` with `count` elements fit [`EXCHANGE_MAX_VALUES`]: the
/// all-gather, all-to-all and reduce-scatter grow with the square of the
/// world.
fn exchange_ranks(x: Exchange, top: u32, count: u32) -> u32 {
    let fits = |n: u32| exchange_values(x, n, n, count) <= EXCHANGE_MAX_VALUES;
    if fits(top) {
        return top;
    }
    let mut n = top.next_power_of_two() / 2;
    while n > 1 && !fits(n) {
        n /= 2;
    }
    n.max(1)
}

/// What each exchange's native baseline does.
fn exchange_note(x: Exchange) -> &'static str {
    match x {
        Exchange::Gather => "native: every rank stores its part straight into the root's buffer; block barrier, one release arrival per block; the root acquires until every block arrived",
        Exchange::Scatter => "native: the root publishes the round (release); block leaders acquire, block barrier, every rank loads its part of the root's buffer",
        Exchange::AllGather => "native: every rank stores its part once into a staging area, grid barrier, every rank loads all parts",
        Exchange::AllToAll => "native: every rank stores part d straight into rank d's buffer, then a grid barrier",
        Exchange::AllToAllInPlace => "native: the all-to-all's (from a send buffer apart: no native swaps in place)",
        Exchange::ReduceScatter => "native: a grid barrier publishes the send buffers; rank r sums element r of every rank's buffer (adjacent ranks load adjacent elements)",
        Exchange::Scan => "native: block scan with warp shuffles (shfl.up) and the warps' totals in shared memory; the block's totals published with a release flag; warp 0 of each block acquires the earlier blocks' totals and sums them with shuffles",
        Exchange::GatherVarcount => "native: the gather's, each part stored at its displacement in the root's buffer",
        Exchange::ScatterVarcount => "native: the scatter's, each rank loads its part from its displacement in the root's buffer",
        Exchange::AllGatherVarcount => "native: the all-gather's, each part stored at its displacement in the staging area",
        Exchange::AllToAllVarcount => "native: the all-to-all's, each part from its displacement in the sender's buffer to the receiver's",
        Exchange::AllToAllVarcountInPlace => "native: the all-to-allv's (from a send buffer apart, the same number of elements a rank: no native swaps in place)",
    }
}

pub(crate) fn exchange(ctx: &mut Ctx, x: Exchange) -> Result<(Vec<Section>, Vec<Target>), String> {
    let op = Op::Exchange(x);
    let counts = ctx.preset.pick(vec![1, 8, 64], vec![1, 8]);
    let loops = ctx.preset.loops((10, 100), (2, 10));
    let (mpi_k, native_k) = op.kernels();
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for &count in &counts {
        let ranks = exchange_ranks(x, ctx.ranks, count);
        if ranks < 32.min(ctx.ranks) {
            continue;
        }
        let mpi = measure(ctx, mpi_k, op, ranks, count, loops)?;
        let native = measure(ctx, native_k, op, ranks, count, loops)?;
        if op.bytes(count) == 8 {
            targets.extend(target(op, false, mpi, native));
        }
        let mut row = stats_row(op, ranks, count, mpi, native);
        row.push(("bytes", op.bytes(count).into()));
        rows.push(row);
    }
    let mut columns = vec![("bytes", "bytes"), ("ranks", "ranks")];
    columns.extend(STATS_COLUMNS);
    let mut notes = vec![exchange_note(x).to_string()];
    if x == Exchange::AllToAllVarcountInPlace {
        notes.push(
            "in place: the part two ranks trade is the row's f64 elements where their parities agree, twice as \
             many where they differ"
                .into(),
        );
    } else if x.is_varcount() {
        notes.push(
            "varcount: an even rank's part is the row's f64 elements, an odd rank's twice as many (all-to-allv: \
             the receiver's rank decides), packed at their displacements; the counts and displacements are \
             arrays in global memory"
                .into(),
        );
    }
    if x.is_quadratic() {
        notes.push(format!(
            "memory grows with the square of the world: a row runs on the largest world up to {} ranks whose buffers fit 512 MiB",
            ctx.ranks
        ));
    }
    Ok((
        vec![Section {
            suite: match x {
                _ if x.is_varcount() => "varcount",
                Exchange::AllToAllInPlace => "alltoall",
                _ => op.name(),
            },
            title: format!(
                "{}: up to {} ranks, bytes = f64 elements × 8 per rank and part{}, each round timed alone, median of {}",
                op.name(),
                ctx.ranks,
                match x {
                    Exchange::Gather | Exchange::Scatter => ", root 0",
                    Exchange::GatherVarcount | Exchange::ScatterVarcount => " (an even rank's), root 0",
                    Exchange::AllGatherVarcount | Exchange::AllToAllVarcount => " (an even rank's)",
                    Exchange::AllToAllVarcountInPlace => " (between ranks of one parity)",
                    Exchange::ReduceScatter | Exchange::Scan => ", sum",
                    _ => "",
                },
                ctx.preset.reps
            ),
            columns,
            rows,
            notes,
        }],
        targets,
    ))
}

/// The all-to-all, with a separate receive buffer and in place, one table
/// each.
pub(crate) fn alltoall(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let (mut sections, mut targets) = exchange(ctx, Exchange::AllToAll)?;
    let (s, t) = exchange(ctx, Exchange::AllToAllInPlace)?;
    sections.extend(s);
    targets.extend(t);
    Ok((sections, targets))
}

/// The varcount forms of gather, scatter, all-gather and all-to-all (the
/// last also in place), one table each.
pub(crate) fn varcount(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let (mut sections, mut targets) = (Vec::new(), Vec::new());
    for x in Exchange::VARCOUNT
        .into_iter()
        .chain([Exchange::AllToAllVarcountInPlace])
    {
        let (s, t) = exchange(ctx, x)?;
        sections.extend(s);
        targets.extend(t);
    }
    Ok((sections, targets))
}

pub(crate) fn scale(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let top = ctx.ranks;
    let mut sizes: Vec<u32> = (5..32).map(|k| 1u32 << k).take_while(|&n| n <= top).collect();
    if sizes.last() != Some(&top) && top >= 32 {
        sizes.push(top);
    }
    if sizes.is_empty() {
        sizes.push(top);
    }
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut ops = vec![Op::Barrier, Op::Bcast, Op::Reduce, Op::Allreduce];
    ops.extend(Exchange::ALL.map(Op::Exchange));
    ops.push(Op::Exchange(Exchange::AllToAllInPlace));
    ops.extend(Exchange::VARCOUNT.map(Op::Exchange));
    ops.push(Op::Exchange(Exchange::AllToAllVarcountInPlace));
    ops.extend([Op::Ibarrier, Op::Iallreduce]);
    for op in ops {
        let loops = if matches!(op, Op::Barrier | Op::Ibarrier) {
            ctx.preset.loops((10, 200), (2, 10))
        } else {
            ctx.preset.loops((5, 50), (1, 5))
        };
        let size = match op {
            Op::Barrier | Op::Ibarrier => 0,
            Op::Bcast => 8,
            _ => 1,
        };
        let (mpi_k, native_k) = op.kernels();
        // The worst ratio over the worlds, or the time at the largest.
        let worst = matches!(goal(op, true), Some((_, Goal::Ratio(_))));
        let mut held: Option<Target> = None;
        for &ranks in &sizes {
            if let Op::Exchange(x) = op {
                if exchange_ranks(x, ranks, size) != ranks {
                    continue;
                }
            }
            let mpi = measure(ctx, mpi_k, op, ranks, size, loops)?;
            let native = measure(ctx, native_k, op, ranks, size, loops)?;
            if let Some(t) = target(op, true, mpi, native) {
                if held.as_ref().is_none_or(|h| !worst || t.value > h.value) {
                    held = Some(t);
                }
            }
            let mut row = stats_row(op, ranks, size, mpi, native);
            row.push(("blocks", (ranks / Ctx::block_dim_for(ranks)).into()));
            rows.push(row);
        }
        targets.extend(held);
    }
    Ok((
        vec![Section {
            suite: "scale",
            title: format!(
                "scale: 8-byte collectives (barrier: none) from 32 to {top} ranks, per-round us, median of {}",
                ctx.preset.reps
            ),
            columns: vec![
                ("op", "op"),
                ("ranks", "ranks"),
                ("blocks", "blocks"),
                ("mpi_avg_us", "mpi avg us"),
                ("mpi_max_us", "mpi max"),
                ("native_avg_us", "native avg us"),
                ("native_max_us", "native max"),
                ("ratio", "x (avg)"),
            ],
            rows,
            notes: vec![
                "all-gather, all-to-all, reduce-scatter: only the worlds whose buffers fit 512 MiB (memory grows with the square of the world)".into(),
                "gatherv, scatterv, all-gatherv, all-to-allv: parts of 8 bytes (an even rank's) and 16 (an odd rank's), as in the varcount tables' one-element rows; all-to-allv in place: 8 bytes between ranks of one parity, 16 between the others".into(),
            ],
        }],
        targets,
    ))
}
