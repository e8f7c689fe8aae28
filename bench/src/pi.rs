//! The pi suite: the thesis's comparison (sections 5.4 and 5.6) of the MPI
//! pi kernels with native kernels doing the same work.
//!
//! Six ways to compute the same estimate, each timed by the backend's
//! kernel time (`LaunchReport::elapsed`, summed over the kernels of a
//! two-kernel version):
//! - `mpi_p2p`: [`PI_P2P`] (thesis figure 5.6);
//! - `mpi_p2p_nb`: [`PI_P2P_NONBLOCKING`], the same with a window of
//!   immediate receives at rank 0 (against the same native baseline);
//! - `native_p2p`: [`NATIVE_PI_P2P_1`] then [`NATIVE_PI_P2P_2`] on one
//!   thread (figures 5.7, 5.8);
//! - `mpi_reduce`: [`PI_REDUCE`] (figure 5.17);
//! - `native_tree`: [`NATIVE_PI_TREE_1`] then [`NATIVE_PI_TREE_2`] on one
//!   block (figures 5.18, 5.19);
//! - `native_single`: [`NATIVE_PI_SINGLE_PASS`], one kernel.
//!
//! The two point-to-point MPI variants also report their synchronising
//! operations per message (`ranks - 1` messages) on the cpu backend.

use super::{
    check_pi, fmt_num, median, ratio, sync_note, Ctx, Row, Section, SyncPerMessage, Target, THESIS_BLOCK_DIM,
    THESIS_RANKS,
};
use gpu_mpi::DeviceBuffer;
use gpu_mpi_bench_kernels::mpi::{PiWindowArgs, PI_P2P_NONBLOCKING};
use gpu_mpi_bench_kernels::native::{
    NativePiArgs, NATIVE_PI_P2P_1, NATIVE_PI_P2P_2, NATIVE_PI_SINGLE_PASS, NATIVE_PI_TREE_1, NATIVE_PI_TREE_2,
};
use gpu_mpi_bench_kernels::pi::{PiArgs, PI_P2P, PI_REDUCE};

/// The thesis's averages on a GeForce 8800 GTS (ms) and ratios.
pub const THESIS_P2P_MPI_MS: f64 = 21.62;
/// Native two-kernel point-to-point average (ms).
pub const THESIS_P2P_NATIVE_MS: f64 = 1.74;
/// MPI reduce average (ms).
pub const THESIS_REDUCE_MPI_MS: f64 = 0.231;
/// Native two-kernel tree average (ms).
pub const THESIS_REDUCE_NATIVE_MS: f64 = 0.121;

/// The variants, in the order they run (index 5, the non-blocking one, was
/// added last).
const VARIANTS: [&str; 6] = [
    "mpi_p2p",
    "native_p2p",
    "mpi_reduce",
    "native_tree",
    "native_single",
    "mpi_p2p_nb",
];

/// Index of the non-blocking point-to-point variant.
const NB: usize = 5;

/// Receives rank 0 of `mpi_p2p_nb` keeps posted: the default request
/// records per rank.
const WINDOW: u32 = gpu_mpi::device::request::MAX_REQUESTS as u32;

struct Buffers {
    result: DeviceBuffer<f64>,
    /// `mpi_p2p_nb`: rank 0's receive buffers, one per rank.
    received: DeviceBuffer<f64>,
    rank_partials: DeviceBuffer<f64>,
    block_partials: DeviceBuffer<f64>,
    scratch: DeviceBuffer<f64>,
    counters: DeviceBuffer<u32>,
}

/// One scale: a world size and block size.
struct Scale {
    label: &'static str,
    ranks: u32,
    block_dim: u32,
}

/// Medians of one point: kernel ms and wall ms per variant, worst error,
/// synchronising operations per message of `mpi_p2p` and `mpi_p2p_nb`.
struct Point {
    kernel_ms: [f64; 6],
    wall_ms: [f64; 6],
    max_error: f64,
    sync: [Option<SyncPerMessage>; 2],
}

fn points(ctx: &Ctx) -> Vec<u32> {
    if ctx.preset.quick {
        return vec![2, 64, 128];
    }
    let step = ctx.options.pi_step.max(1);
    (0..).map(|k| 2 + k * step).take_while(|&p| p <= 128).collect()
}

fn measure_point(ctx: &mut Ctx, s: &Scale, b: &mut Buffers, ipr: u32) -> Result<Point, String> {
    let world = ctx.world(s.ranks, Some(s.block_dim));
    let one_thread = ctx.world(1, Some(1));
    let one_block = ctx.world(s.block_dim, Some(s.block_dim));
    let mut kernel = vec![Vec::new(); VARIANTS.len()];
    let mut wall = vec![Vec::new(); VARIANTS.len()];
    let mut sync = [Vec::new(), Vec::new()];
    let mut max_error = 0.0f64;
    for _ in 0..ctx.preset.reps {
        for (v, name) in VARIANTS.iter().enumerate() {
            ctx.zero(&mut b.result)?;
            ctx.zero(&mut b.counters)?;
            let mpi = PiArgs {
                intervals_per_rank: ipr,
                reserved: 0,
                result: b.result.slice(),
            };
            let native = |partials: &DeviceBuffer<f64>| NativePiArgs {
                intervals_per_rank: ipr,
                reserved: 0,
                partials: partials.slice(),
                scratch: b.scratch.slice(),
                counters: b.counters.slice(),
                result: b.result.slice(),
            };
            let runs = match v {
                0 => vec![ctx.launch(&PI_P2P, &mpi, &world)?],
                1 => {
                    let a = native(&b.rank_partials);
                    vec![
                        ctx.launch(&NATIVE_PI_P2P_1, &a, &world)?,
                        ctx.launch(&NATIVE_PI_P2P_2, &a, &one_thread)?,
                    ]
                }
                2 => vec![ctx.launch(&PI_REDUCE, &mpi, &world)?],
                NB => {
                    let a = PiWindowArgs {
                        intervals_per_rank: ipr,
                        window: WINDOW,
                        result: b.result.slice(),
                        received: b.received.slice(),
                    };
                    vec![ctx.launch(&PI_P2P_NONBLOCKING, &a, &world)?]
                }
                3 => {
                    let a = native(&b.block_partials);
                    vec![
                        ctx.launch(&NATIVE_PI_TREE_1, &a, &world)?,
                        ctx.launch(&NATIVE_PI_TREE_2, &a, &one_block)?,
                    ]
                }
                _ => vec![ctx.launch(&NATIVE_PI_SINGLE_PASS, &native(&b.block_partials), &world)?],
            };
            // Every rank but 0 sends one message.
            let messages = s.ranks as u64 - 1;
            match v {
                0 => sync[0].push(SyncPerMessage::of(&runs[0].report, messages)),
                NB => sync[1].push(SyncPerMessage::of(&runs[0].report, messages)),
                _ => {}
            }
            let pi = ctx.download(&b.result)?[0];
            max_error = max_error.max(check_pi(name, pi, s.ranks, ipr)?);
            if v == 4 && ctx.download(&b.counters)?[0] != 0 {
                return Err("native_pi_single_pass: the arrival counter was not reset".into());
            }
            ctx.checked();
            kernel[v].push(
                runs.iter()
                    .map(|r| r.report.kernel_time().as_secs_f64() * 1e3)
                    .sum::<f64>(),
            );
            wall[v].push(runs.iter().map(|r| r.wall.as_secs_f64() * 1e3).sum::<f64>());
        }
    }
    let med = |v: &Vec<Vec<f64>>| -> [f64; 6] { std::array::from_fn(|i| median(&v[i])) };
    Ok(Point {
        kernel_ms: med(&kernel),
        wall_ms: med(&wall),
        max_error,
        sync: [SyncPerMessage::median(&sync[0]), SyncPerMessage::median(&sync[1])],
    })
}

fn best_native_reduce(k: &[f64; 6]) -> f64 {
    k[3].min(k[4])
}

pub(crate) fn run(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let mut scales = vec![Scale {
        label: "run",
        ranks: ctx.ranks,
        block_dim: Ctx::block_dim_for(ctx.ranks),
    }];
    if ctx.options.thesis_scale && !(ctx.ranks == THESIS_RANKS && scales[0].block_dim == THESIS_BLOCK_DIM) {
        scales.push(Scale {
            label: "thesis",
            ranks: THESIS_RANKS,
            block_dim: THESIS_BLOCK_DIM,
        });
    }
    let pts = points(ctx);
    let mut sections = Vec::new();
    let mut summary_rows = Vec::new();
    let mut targets = Vec::new();
    for (si, s) in scales.iter().enumerate() {
        let blocks = s.ranks / s.block_dim;
        let mut b = Buffers {
            result: ctx.alloc(1)?,
            received: ctx.alloc(s.ranks as usize)?,
            rank_partials: ctx.alloc(s.ranks as usize)?,
            block_partials: ctx.alloc(blocks as usize)?,
            scratch: ctx.alloc(s.ranks as usize)?,
            counters: ctx.alloc(1 + blocks as usize)?,
        };
        let mut rows = Vec::new();
        let mut all = Vec::new();
        for &ipr in &pts {
            let p = measure_point(ctx, s, &mut b, ipr)?;
            let k = p.kernel_ms;
            let mut row: Row = vec![
                ("scale", s.label.into()),
                ("ranks", s.ranks.into()),
                ("block_dim", s.block_dim.into()),
                ("intervals_per_rank", ipr.into()),
            ];
            for (i, name) in VARIANTS.iter().enumerate() {
                row.push((kernel_key(name), k[i].into()));
            }
            row.extend([
                ("ratio_p2p", ratio(k[0], k[1]).into()),
                ("ratio_p2p_nb", ratio(k[NB], k[1]).into()),
                ("ratio_reduce_best", ratio(k[2], best_native_reduce(&k)).into()),
                ("ratio_reduce_tree", ratio(k[2], k[3]).into()),
                ("max_error", p.max_error.into()),
                ("mpi_p2p_sync_per_msg", SyncPerMessage::total_value(p.sync[0])),
                ("mpi_p2p_nb_sync_per_msg", SyncPerMessage::total_value(p.sync[1])),
                (
                    "mpi_p2p_sync_kinds_per_msg",
                    SyncPerMessage::kinds_value(p.sync[0]),
                ),
                (
                    "mpi_p2p_nb_sync_kinds_per_msg",
                    SyncPerMessage::kinds_value(p.sync[1]),
                ),
            ]);
            for (i, name) in VARIANTS.iter().enumerate() {
                row.push((wall_key(name), p.wall_ms[i].into()));
            }
            rows.push(row);
            all.push(p);
        }
        // The thesis's summary: averages over the points, ratios of the
        // averages, and the growth from the fewest to the most intervals.
        let avg: [f64; 6] =
            std::array::from_fn(|i| all.iter().map(|p| p.kernel_ms[i]).sum::<f64>() / all.len() as f64);
        let sync: [Option<SyncPerMessage>; 2] =
            std::array::from_fn(|i| SyncPerMessage::mean(&all.iter().map(|p| p.sync[i]).collect::<Vec<_>>()));
        let growth: [f64; 6] = std::array::from_fn(|i| {
            all.last().map_or(f64::NAN, |l| l.kernel_ms[i]) - all.first().map_or(f64::NAN, |f| f.kernel_ms[i])
        });
        let r_p2p = ratio(avg[0], avg[1]);
        let r_p2p_nb = ratio(avg[NB], avg[1]);
        let r_best = ratio(avg[2], best_native_reduce(&avg));
        let r_tree = ratio(avg[2], avg[3]);
        let mut srow: Row = vec![
            ("scale", s.label.into()),
            ("ranks", s.ranks.into()),
            ("block_dim", s.block_dim.into()),
            ("points", all.len().into()),
        ];
        for (i, name) in VARIANTS.iter().enumerate() {
            srow.push((kernel_key(name), avg[i].into()));
        }
        srow.extend([
            ("ratio_p2p", r_p2p.into()),
            ("ratio_p2p_nb", r_p2p_nb.into()),
            ("ratio_reduce_best", r_best.into()),
            ("ratio_reduce_tree", r_tree.into()),
            ("mpi_p2p_sync_per_msg", SyncPerMessage::total_value(sync[0])),
            ("mpi_p2p_nb_sync_per_msg", SyncPerMessage::total_value(sync[1])),
        ]);
        for (i, name) in VARIANTS.iter().enumerate() {
            srow.push((growth_key(name), growth[i].into()));
        }
        summary_rows.push(srow);
        // Issue 29's bounds (docs/performance.md, "Targets"): at the run's
        // world (on a GPU the largest), and point-to-point at the thesis's
        // 4,096 ranks too.
        let (p2p, p2p_nb) = if si == 0 {
            targets.push(Target::at_most(
                "pi reduce / best native (avg over points)",
                r_best,
                1.05,
                "x",
            ));
            (
                "pi p2p / native two-kernel (avg over points)",
                "pi p2p non-blocking / native two-kernel (avg over points)",
            )
        } else {
            (
                "pi p2p / native two-kernel, thesis scale",
                "pi p2p non-blocking / native, thesis scale",
            )
        };
        targets.push(Target::at_most(p2p, r_p2p, 5.0, "x"));
        targets.push(Target::at_most(p2p_nb, r_p2p_nb, 1.5, "x"));
        sections.push(Section {
            suite: "pi",
            title: format!(
                "pi, {} ranks in blocks of {} ({}): kernel ms, median of {}",
                s.ranks, s.block_dim, s.label, ctx.preset.reps
            ),
            columns: vec![
                ("intervals_per_rank", "ipr"),
                ("mpi_p2p_ms", "mpi p2p"),
                ("mpi_p2p_nb_ms", "mpi p2p nb"),
                ("native_p2p_ms", "native p2p"),
                ("ratio_p2p", "p2p x"),
                ("ratio_p2p_nb", "p2p nb x"),
                ("mpi_reduce_ms", "mpi reduce"),
                ("native_tree_ms", "native tree"),
                ("native_single_ms", "native 1-pass"),
                ("ratio_reduce_best", "reduce x best"),
                ("ratio_reduce_tree", "reduce x tree"),
                ("max_error", "max |pi err|"),
                ("mpi_p2p_sync_per_msg", "p2p sync/msg"),
                ("mpi_p2p_nb_sync_per_msg", "nb sync/msg"),
            ],
            rows,
            notes: vec![
                format!("p2p nb: rank 0 keeps {WINDOW} immediate receives posted (wait_any, then the next rank's)"),
                sync_note(ctx),
            ],
        });
    }
    sections.push(Section {
        suite: "pi",
        title: "pi summary: averages over the points (ms), ratios of the averages".into(),
        columns: vec![
            ("scale", "scale"),
            ("ranks", "ranks"),
            ("mpi_p2p_ms", "mpi p2p"),
            ("mpi_p2p_nb_ms", "mpi p2p nb"),
            ("native_p2p_ms", "native p2p"),
            ("ratio_p2p", "p2p x"),
            ("ratio_p2p_nb", "p2p nb x"),
            ("mpi_reduce_ms", "mpi reduce"),
            ("native_tree_ms", "native tree"),
            ("native_single_ms", "native 1-pass"),
            ("ratio_reduce_best", "reduce x best"),
            ("ratio_reduce_tree", "reduce x tree"),
            ("mpi_p2p_sync_per_msg", "p2p sync/msg"),
            ("mpi_p2p_nb_sync_per_msg", "nb sync/msg"),
        ],
        rows: summary_rows,
        notes: vec![format!(
            "thesis (GeForce 8800 GTS, 4096 ranks): p2p {} / {} ms = {}x; reduce {} / {} ms = {}x",
            THESIS_P2P_MPI_MS,
            THESIS_P2P_NATIVE_MS,
            fmt_num(THESIS_P2P_MPI_MS / THESIS_P2P_NATIVE_MS),
            THESIS_REDUCE_MPI_MS,
            THESIS_REDUCE_NATIVE_MS,
            fmt_num(THESIS_REDUCE_MPI_MS / THESIS_REDUCE_NATIVE_MS)
        )],
    });
    Ok((sections, targets))
}

fn kernel_key(name: &str) -> &'static str {
    match name {
        "mpi_p2p" => "mpi_p2p_ms",
        "mpi_p2p_nb" => "mpi_p2p_nb_ms",
        "native_p2p" => "native_p2p_ms",
        "mpi_reduce" => "mpi_reduce_ms",
        "native_tree" => "native_tree_ms",
        _ => "native_single_ms",
    }
}

fn wall_key(name: &str) -> &'static str {
    match name {
        "mpi_p2p" => "mpi_p2p_wall_ms",
        "mpi_p2p_nb" => "mpi_p2p_nb_wall_ms",
        "native_p2p" => "native_p2p_wall_ms",
        "mpi_reduce" => "mpi_reduce_wall_ms",
        "native_tree" => "native_tree_wall_ms",
        _ => "native_single_wall_ms",
    }
}

fn growth_key(name: &str) -> &'static str {
    match name {
        "mpi_p2p" => "mpi_p2p_growth_ms",
        "mpi_p2p_nb" => "mpi_p2p_nb_growth_ms",
        "native_p2p" => "native_p2p_growth_ms",
        "mpi_reduce" => "mpi_reduce_growth_ms",
        "native_tree" => "native_tree_growth_ms",
        _ => "native_single_growth_ms",
    }
}
