//! The benchmark suites of `gpu-mpi-bench`: MPI inside a kernel against
//! native baselines doing the same work, on whichever backend runs them.
//!
//! The binary (src/main.rs) and the smoke test (tests/bench_smoke.rs) call
//! [`run`]; the kernels come from `gpu-mpi-bench-kernels` and are embedded
//! here as PTX and SASS ([`KERNELS`]). Every measurement is the median of `reps`
//! launches and comes with its native baseline from the same run and the
//! ratio MPI/native (of times: above 1 means MPI is slower). A benchmark
//! whose own correctness check fails makes [`run`] return an error naming it.
//!
//! On the emulator with a timing profile ([`Options::model`], docs/model.md)
//! every suite runs twice: once for the emulator's wall time, once in timing
//! mode; each measured column of a table gets a `model_` twin beside it.
//!
//! See docs/performance.md for the method and the numbers.

mod coll;
mod ddt;
mod kernels;
mod limits;
mod p2p;
mod pi;
mod rma;

use gpu_mpi::cpu::CpuOptions;
use gpu_mpi::device::Kernel;
use gpu_mpi::{Device, DeviceBuffer, HostError, LaunchReport, Profile, RankCount, WorldSpec};
use gpu_mpi_bench_kernels::exchange::Exchange;
use gpu_mpi_provenance::Provenance;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use serde::ser::SerializeMap as _;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use limits::{Limits, WrittenProfile, CHUNK_BYTES, THREAD_COPY_BYTES};

/// The benchmark kernels, built by build.rs: PTX and SASS per SM.
pub static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();

/// The benchmark kernels that send and receive views of derived datatypes
/// (`gpu-mpi-bench-views-kernels`, built with the device crate's `views`
/// feature): a second image, opened as a second device on a GPU.
pub static VIEWS_KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!("views");

/// Opens a backend with the benchmark kernels ([`KERNELS`]).
pub fn open(kind: gpu_mpi::BackendKind) -> Result<Device, HostError> {
    Device::open(kind, &KERNELS)
}

/// Version tag of the JSON output (2: the `provenance` object; 3: the
/// synchronising operations per message of the latency and pi suites, and
/// the non-blocking pi variant; 4: the `model` object and the rows'
/// `model_` twins of their measured values, in timing mode).
pub const SCHEMA: &str = "gpu-mpi-bench/4";

/// The thesis's scale: 32 blocks of 128 threads (its second reduction
/// kernel reads 32 block sums; its block tree starts at 64 + 64).
pub const THESIS_RANKS: u32 = 4096;
/// Threads per block in the thesis's kernels.
pub const THESIS_BLOCK_DIM: u32 = 128;
/// World size on the cpu backend when `--ranks` is not given (the emulator
/// runs every rank as a coroutine on a few cores).
pub const CPU_DEFAULT_RANKS: u32 = 1024;

/// A benchmark suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// Pi estimation: MPI point-to-point and reduce against the natives.
    Pi,
    /// osu_latency inside a kernel.
    Latency,
    /// osu_bw and osu_mbw_mr inside a kernel.
    Bw,
    /// osu_barrier against the native grid barrier and relaunch.
    Barrier,
    /// osu_bcast against a native broadcast.
    Bcast,
    /// osu_reduce against the native single-pass reduction.
    Reduce,
    /// osu_allreduce against the native single-pass all-reduce.
    Allreduce,
    /// osu_gather against native direct stores with per-block arrivals.
    Gather,
    /// osu_scatter against a native publish-and-load.
    Scatter,
    /// osu_allgather against a native staging area and grid barrier.
    Allgather,
    /// osu_alltoall against native direct stores and a grid barrier.
    Alltoall,
    /// osu_reduce_scatter (`MPI_Reduce_scatter_block`) against a native
    /// column sum.
    ReduceScatter,
    /// osu_scan against a native warp-shuffle scan.
    Scan,
    /// osu_ibarrier (`MPI_Ibarrier` + wait) against the native grid barrier.
    Ibarrier,
    /// osu_iallreduce (`MPI_Iallreduce` + wait) against the native
    /// shuffle all-reduce.
    Iallreduce,
    /// osu_gatherv, osu_scatterv, osu_allgatherv and osu_alltoallv (also
    /// in place): the varcount forms, parts of two lengths.
    Varcount,
    /// Each collective from 32 ranks to the largest world.
    Scale,
    /// Whole-GPU pack and unpack of derived datatypes (ddtbench patterns)
    /// against copy kernels.
    Ddt,
    /// One-sided communication (OSU one-sided style): put, get and
    /// accumulate latency per synchronisation mode, put bandwidth, a halo
    /// exchange and the fence, against native kernels.
    Rma,
}

impl Suite {
    /// Every suite, in the order `all` runs them.
    pub const ALL: [Suite; 19] = [
        Suite::Pi,
        Suite::Latency,
        Suite::Bw,
        Suite::Barrier,
        Suite::Bcast,
        Suite::Reduce,
        Suite::Allreduce,
        Suite::Gather,
        Suite::Scatter,
        Suite::Allgather,
        Suite::Alltoall,
        Suite::ReduceScatter,
        Suite::Scan,
        Suite::Ibarrier,
        Suite::Iallreduce,
        Suite::Varcount,
        Suite::Scale,
        Suite::Ddt,
        Suite::Rma,
    ];

    /// The suite's name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Pi => "pi",
            Suite::Latency => "latency",
            Suite::Bw => "bw",
            Suite::Barrier => "barrier",
            Suite::Bcast => "bcast",
            Suite::Reduce => "reduce",
            Suite::Allreduce => "allreduce",
            Suite::Gather => "gather",
            Suite::Scatter => "scatter",
            Suite::Allgather => "allgather",
            Suite::Alltoall => "alltoall",
            Suite::ReduceScatter => "reduce_scatter",
            Suite::Scan => "scan",
            Suite::Ibarrier => "ibarrier",
            Suite::Iallreduce => "iallreduce",
            Suite::Varcount => "varcount",
            Suite::Scale => "scale",
            Suite::Ddt => "ddt",
            Suite::Rma => "rma",
        }
    }

    /// The suites a command-line name selects (`all`: every suite;
    /// `limits`: none, as the physical limits run first in every run).
    pub fn parse(name: &str) -> Option<Vec<Suite>> {
        match name {
            "all" => return Some(Suite::ALL.to_vec()),
            "limits" => return Some(Vec::new()),
            _ => {}
        }
        Suite::ALL.iter().find(|s| s.name() == name).map(|s| vec![*s])
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The suites, in order.
    pub suites: Vec<Suite>,
    /// World size (`None`: the largest on a GPU, [`CPU_DEFAULT_RANKS`] on
    /// the emulator).
    pub ranks: Option<RankCount>,
    /// Few points, few iterations.
    pub quick: bool,
    /// Launches per measurement (the median is reported).
    pub reps: usize,
    /// Step of the intervals per rank in the pi suite (2..=128).
    pub pi_step: u32,
    /// Run the pi suite at the thesis's scale too (4096 ranks in blocks of 128).
    pub thesis_scale: bool,
    /// Overrides the timed iterations of every in-kernel loop.
    pub iterations: Option<u32>,
    /// On the emulator: also run every suite in timing mode on this
    /// profile (docs/model.md) and put the modelled figures beside the wall
    /// ones. `None`: the device's own profile, if it has one
    /// ([`Device::model`]). A GPU ignores it.
    pub model: Option<&'static Profile>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            suites: Suite::ALL.to_vec(),
            ranks: None,
            quick: false,
            reps: 5,
            pi_step: 2,
            thesis_scale: true,
            iterations: None,
            model: None,
        }
    }
}

/// One table of results.
#[derive(Clone, Debug, Serialize)]
pub struct Section {
    /// The suite that made it.
    pub suite: &'static str,
    /// Its title.
    pub title: String,
    /// Printed columns: `(key, header)`; rows may hold more keys (JSON only).
    #[serde(serialize_with = "column_keys")]
    pub columns: Vec<(&'static str, &'static str)>,
    /// The rows.
    #[serde(serialize_with = "rows_as_objects")]
    pub rows: Vec<Row>,
    /// Lines printed under the table.
    pub notes: Vec<String>,
}

/// One row: named values in order (numbers, strings, booleans; a NaN
/// number is `null`).
pub type Row = Vec<(&'static str, Value)>;

/// The JSON of the columns: their keys.
fn column_keys<S: Serializer>(columns: &[(&'static str, &'static str)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(columns.iter().map(|(key, _)| key))
}

/// The JSON of the rows: one object each, its keys in the row's order.
fn rows_as_objects<S: Serializer>(rows: &[Row], s: S) -> Result<S::Ok, S::Error> {
    struct Object<'a>(&'a Row);
    impl Serialize for Object<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (k, v) in self.0 {
                map.serialize_entry(k, v)?;
            }
            map.end()
        }
    }
    s.collect_seq(rows.iter().map(Object))
}

/// A target from docs/performance.md and whether this run meets it.
#[derive(Clone, Debug)]
pub struct Target {
    /// What is compared.
    pub name: &'static str,
    /// The measured value.
    pub value: f64,
    /// The bound.
    pub bound: f64,
    /// The unit of both.
    pub unit: &'static str,
    /// Which side of the bound meets the target.
    pub side: Side,
}

/// Which side of its bound a [`Target`]'s value must lie on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// At most the bound: a time or a ratio of times.
    AtMost,
    /// At least the bound: a bandwidth.
    AtLeast,
}

impl Target {
    /// A target met by a value of at most `bound`.
    pub fn at_most(name: &'static str, value: f64, bound: f64, unit: &'static str) -> Self {
        Target {
            name,
            value,
            bound,
            unit,
            side: Side::AtMost,
        }
    }

    /// A target met by a value of at least `bound`.
    pub fn at_least(name: &'static str, value: f64, bound: f64, unit: &'static str) -> Self {
        Target {
            side: Side::AtLeast,
            ..Target::at_most(name, value, bound, unit)
        }
    }

    /// Whether the value is on the bound's side (a NaN never is).
    pub fn met(&self) -> bool {
        match self.side {
            Side::AtMost => self.value <= self.bound,
            Side::AtLeast => self.value >= self.bound,
        }
    }
}

impl Side {
    /// How the targets' text and the JSON name the side.
    pub fn text(self) -> &'static str {
        match self {
            Side::AtMost => "at most",
            Side::AtLeast => "at least",
        }
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            name: &'a str,
            value: f64,
            bound: f64,
            side: &'a str,
            unit: &'a str,
            met: bool,
        }
        Json {
            name: self.name,
            value: self.value,
            bound: self.bound,
            side: self.side.text(),
            unit: self.unit,
            met: self.met(),
        }
        .serialize(s)
    }
}

/// Everything one run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// "cpu" or "cuda".
    pub backend: &'static str,
    /// World size of the run (the largest for `scale`).
    pub ranks: u32,
    /// The options.
    pub options: Options,
    /// Physical limits measured at the start.
    pub limits: Limits,
    /// The tables.
    pub sections: Vec<Section>,
    /// Targets the suites that ran could evaluate.
    pub targets: Vec<Target>,
    /// Launches whose results were checked and right (both passes).
    pub checked_launches: u64,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// The timing-mode pass, when the run had one.
    pub model: Option<ModelPass>,
}

/// What the timing-mode pass of a run on the emulator measured beside the
/// wall-time pass: its figures are in the sections' `model_` columns.
#[derive(Clone, Debug)]
pub struct ModelPass {
    /// The profile every launch of the pass was modelled on.
    pub profile: &'static Profile,
    /// The physical limits in modelled time.
    pub limits: Limits,
    /// The targets evaluated on the modelled figures.
    pub targets: Vec<Target>,
}

/// Launches per measurement point in timing mode: modelled time is a
/// function of the program, the world and the profile, so one suffices.
pub const MODEL_REPS: usize = 1;

/// Iteration counts and sizes of one run.
#[derive(Clone, Copy)]
pub(crate) struct Preset {
    pub(crate) quick: bool,
    pub(crate) reps: usize,
    iterations: Option<u32>,
}

impl Preset {
    /// `(warmup, iterations)`, `full` for a full run, `quick` for --quick;
    /// `--iterations` overrides the timed count (and caps the warm-up).
    pub(crate) fn loops(&self, full: (u32, u32), quick: (u32, u32)) -> (u32, u32) {
        let (w, i) = if self.quick { quick } else { full };
        match self.iterations {
            Some(n) => (w.min(n.max(1)), n.max(1)),
            None => (w, i),
        }
    }

    /// `full` or `quick`.
    pub(crate) fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// The context the suites run in.
pub(crate) struct Ctx<'a> {
    pub(crate) device: &'a Device,
    pub(crate) preset: Preset,
    /// The world size of the run.
    pub(crate) ranks: u32,
    pub(crate) limits: Limits,
    pub(crate) options: &'a Options,
    pub(crate) checked: u64,
    /// The run's progress bar (hidden when nothing prints).
    pub(crate) progress: ProgressBar,
}

impl Ctx<'_> {
    pub(crate) fn is_gpu(&self) -> bool {
        self.device.backend_name() == "cuda"
    }

    /// A world of `ranks` ranks in blocks of `block_dim` (`None`: the
    /// default choice). On a GPU every wait is bounded (a hung benchmark
    /// reports the deadlock instead of hanging the machine).
    pub(crate) fn world(&self, ranks: u32, block_dim: Option<u32>) -> WorldSpec {
        let mut s = WorldSpec::ranks(ranks);
        if let Some(b) = block_dim {
            s = s.block_dim(b);
        }
        if self.is_gpu() {
            s = s.timeout(Duration::from_secs(60));
        }
        s
    }

    /// Launches `kernel`; an error names the kernel and the world.
    pub(crate) fn launch<A: bytemuck::Pod + Sync>(
        &self,
        kernel: &Kernel<A>,
        args: &A,
        spec: &WorldSpec,
    ) -> Result<Timed, String> {
        if !self.progress.is_hidden() {
            self.progress
                .set_message(format!("{} on {}", kernel.name, world_size(spec)));
        }
        let t = Instant::now();
        let r = self
            .device
            .launch(kernel, args, spec)
            .map_err(|e| launch_error(kernel.name, spec, e))?;
        // GPU_MPI_MODEL_LOG (docs/model.md): the logged rank's accesses.
        if let Some(log) = r.model.as_ref().and_then(|m| m.log.as_ref()) {
            eprint!("{} on {}: {}", kernel.name, world_size(spec), log.render());
        }
        Ok(Timed {
            wall: t.elapsed(),
            report: r,
        })
    }

    pub(crate) fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<DeviceBuffer<T>, String> {
        self.device
            .alloc_zeroed::<T>(len.max(1))
            .map_err(|e| format!("allocating {} elements: {e}", len.max(1)))
    }

    /// A device copy of `host` (one element when `host` is empty, as
    /// [`Ctx::alloc`] gives).
    pub(crate) fn upload<T: bytemuck::Pod>(&self, host: &[T]) -> Result<DeviceBuffer<T>, String> {
        if host.is_empty() {
            return self.alloc(0);
        }
        self.device.upload(host).map_err(|e| format!("upload: {e}"))
    }

    pub(crate) fn zero<T: bytemuck::Pod>(&self, buf: &mut DeviceBuffer<T>) -> Result<(), String> {
        let zeros = vec![T::zeroed(); buf.len()];
        self.device
            .write(buf, &zeros)
            .map_err(|e| format!("zeroing a buffer: {e}"))
    }

    pub(crate) fn download<T: bytemuck::Pod>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>, String> {
        self.device.download(buf).map_err(|e| format!("download: {e}"))
    }

    /// Counts a launch whose results were checked.
    pub(crate) fn checked(&mut self) {
        self.checked += 1;
    }

    /// Block size the collectives use for a world of `ranks`.
    pub(crate) fn block_dim_for(ranks: u32) -> u32 {
        gpu_mpi::default_block_dim(ranks)
    }
}

fn world_size(spec: &WorldSpec) -> String {
    match spec.ranks {
        RankCount::Exact(n) => format!("{n} ranks"),
        RankCount::Max => "max ranks".to_string(),
    }
}

fn launch_error(name: &str, spec: &WorldSpec, e: HostError) -> String {
    format!("{name} on {}: {e}", world_size(spec))
}

/// One launch: the backend's report and the host's wall time around it.
pub(crate) struct Timed {
    pub(crate) report: LaunchReport,
    pub(crate) wall: Duration,
}

/// Synchronising operations per message of the MPI side of a launch
/// (docs/performance.md, "Synchronising operations per message
/// (emulator)"): every rank's counts over the messages the launch passed,
/// by kind. Measured on the cpu backend only; `None` on a GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncPerMessage {
    /// Every synchronising operation (the sum of the next four but
    /// `relaxed_rmws`): what the "sync/msg" columns print.
    pub total: f64,
    /// Atomic loads with acquire ordering (polls of a flag included).
    pub acquire_loads: f64,
    /// Atomic stores with release ordering.
    pub release_stores: f64,
    /// Read-modify-writes with acquire, release or acq_rel ordering.
    pub ordered_rmws: f64,
    /// Fences.
    pub fences: f64,
    /// Relaxed read-modify-writes (not synchronising; memory round trips).
    pub relaxed_rmws: f64,
}

impl SyncPerMessage {
    /// The counts of `report` over `messages` messages; `None` when the
    /// backend does not count (cuda) or no message passed.
    pub fn of(report: &LaunchReport, messages: u64) -> Option<SyncPerMessage> {
        let c = report.sync_counts.as_ref()?.total();
        if messages == 0 {
            return None;
        }
        let m = messages as f64;
        Some(SyncPerMessage {
            total: c.synchronizing() as f64 / m,
            acquire_loads: c.acquire_loads as f64 / m,
            release_stores: c.release_stores as f64 / m,
            ordered_rmws: c.ordered_rmws() as f64 / m,
            fences: c.fences as f64 / m,
            relaxed_rmws: c.relaxed_rmws as f64 / m,
        })
    }

    fn fields(&self) -> [f64; 6] {
        [
            self.total,
            self.acquire_loads,
            self.release_stores,
            self.ordered_rmws,
            self.fences,
            self.relaxed_rmws,
        ]
    }

    fn from_fields(f: [f64; 6]) -> SyncPerMessage {
        SyncPerMessage {
            total: f[0],
            acquire_loads: f[1],
            release_stores: f[2],
            ordered_rmws: f[3],
            fences: f[4],
            relaxed_rmws: f[5],
        }
    }

    /// Each kind's median over `v`, `None` when any is `None` (or `v` is
    /// empty).
    pub fn median(v: &[Option<SyncPerMessage>]) -> Option<SyncPerMessage> {
        let v: Option<Vec<[f64; 6]>> = v.iter().map(|s| s.map(|s| s.fields())).collect();
        let v = v.filter(|v| !v.is_empty())?;
        Some(SyncPerMessage::from_fields(std::array::from_fn(|i| {
            median(&v.iter().map(|f| f[i]).collect::<Vec<_>>())
        })))
    }

    /// Each kind's mean over `v`, `None` when any is `None` (or `v` is empty).
    pub fn mean(v: &[Option<SyncPerMessage>]) -> Option<SyncPerMessage> {
        let v: Option<Vec<[f64; 6]>> = v.iter().map(|s| s.map(|s| s.fields())).collect();
        let v = v.filter(|v| !v.is_empty())?;
        let n = v.len() as f64;
        Some(SyncPerMessage::from_fields(std::array::from_fn(|i| {
            v.iter().map(|f| f[i]).sum::<f64>() / n
        })))
    }

    /// The printed value: the total, `null` when not measured.
    pub fn total_value(s: Option<SyncPerMessage>) -> Value {
        s.map_or(Value::Null, |s| s.total.into())
    }

    /// The JSON breakdown by kind, `null` when not measured.
    pub fn kinds_value(s: Option<SyncPerMessage>) -> Value {
        s.map_or(Value::Null, |s| {
            serde_json::json!({
                "acquire_loads": s.acquire_loads,
                "release_stores": s.release_stores,
                "ordered_rmws": s.ordered_rmws,
                "fences": s.fences,
                "relaxed_rmws": s.relaxed_rmws,
            })
        })
    }
}

/// The note under a table with "sync/msg" columns.
pub(crate) fn sync_note(ctx: &Ctx) -> String {
    if ctx.is_gpu() {
        "sync/msg: not measured on a GPU (the emulator counts synchronising operations; run with --backend cpu)".into()
    } else {
        "sync/msg: synchronising operations (acquire loads, release stores, ordered RMWs, fences) of every rank per \
         message, counted by the emulator; by kind in the JSON"
            .into()
    }
}

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Checks a pi estimate over `ranks * intervals_per_rank` intervals and
/// returns its error; an error names the kernel (`name`).
pub fn check_pi(name: &str, pi: f64, ranks: u32, intervals_per_rank: u32) -> Result<f64, String> {
    let error = (pi - std::f64::consts::PI).abs();
    // The midpoint rule's error for 4/(1+x^2) on n intervals is below 1/n^2;
    // rounding in the sums adds far less than 1e-9.
    let n = ranks as f64 * intervals_per_rank as f64;
    if !error.is_finite() || error > 1.0 / (n * n) + 1e-9 {
        return Err(format!(
            "{name}: pi = {pi} is off by {error:e} ({ranks} ranks, {intervals_per_rank} intervals per rank)"
        ));
    }
    Ok(error)
}

/// `a / b`, NaN when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// The largest world in blocks of [`gpu_mpi::PREFERRED_BLOCK_DIM`] that
/// every kernel run at the run's world size can hold (on a GPU each
/// kernel's registers bound its occupancy; MPI and native are compared on
/// the same world, so the smallest bound wins).
pub fn max_common_ranks(device: &Device) -> Result<u32, String> {
    use gpu_mpi_bench_kernels::{mpi as b, native as n, pi as p};
    let bd = gpu_mpi::PREFERRED_BLOCK_DIM;
    let caps = [
        device.max_ranks_for(&p::PI_P2P, bd),
        device.max_ranks_for(&b::PI_P2P_NONBLOCKING, bd),
        device.max_ranks_for(&p::PI_REDUCE, bd),
        device.max_ranks_for(&n::NATIVE_PI_P2P_1, bd),
        device.max_ranks_for(&n::NATIVE_PI_TREE_1, bd),
        device.max_ranks_for(&n::NATIVE_PI_SINGLE_PASS, bd),
        device.max_ranks_for(&n::NATIVE_COPY, bd),
        device.max_ranks_for(&n::NATIVE_EMPTY, bd),
        device.max_ranks_for(&n::NATIVE_ATOMIC_CONTENTION, bd),
        device.max_ranks_for(&n::NATIVE_CHUNK_COPY, bd),
        device.max_ranks_for(&b::BENCH_BARRIER, bd),
        device.max_ranks_for(&b::BENCH_BCAST, bd),
        device.max_ranks_for(&b::BENCH_REDUCE, bd),
        device.max_ranks_for(&b::BENCH_ALLREDUCE, bd),
        device.max_ranks_for(&n::NATIVE_BARRIER, bd),
        device.max_ranks_for(&n::NATIVE_BCAST, bd),
        device.max_ranks_for(&n::NATIVE_REDUCE, bd),
        device.max_ranks_for(&n::NATIVE_ALLREDUCE, bd),
    ];
    let mut most = u32::MAX;
    for c in caps {
        most = most.min(c.map_err(|e| format!("occupancy: {e}"))?);
    }
    Ok(most)
}

/// The world size `options` asks for on `device`.
pub fn resolve_ranks(device: &Device, options: &Options) -> Result<u32, String> {
    Ok(match options.ranks {
        Some(RankCount::Exact(n)) => n,
        Some(RankCount::Max) => max_common_ranks(device)?,
        None if device.backend_name() == "cuda" => max_common_ranks(device)?,
        None => CPU_DEFAULT_RANKS,
    })
}

/// Runs the suites of `options` on `device`. Prints each table as soon as
/// it is done when `print` is set, with a progress bar on stderr while it
/// runs (only when stderr is a terminal). Fails on the first wrong result
/// or failed launch.
///
/// On the emulator with a profile ([`Options::model`], else the device's
/// own), each suite runs twice: on an emulator without a model (the wall
/// figures; a default one when `device` itself is in timing mode) and on
/// one in timing mode ([`MODEL_REPS`] launches per point); the tables get
/// the modelled figures as `model_` columns ([`merge_model`]).
pub fn run(device: &Device, options: &Options, print: bool) -> Result<Report, String> {
    let start = Instant::now();
    let ranks = resolve_ranks(device, options)?;
    if ranks < 4 {
        return Err(format!("--ranks {ranks}: the benchmarks need at least 4 ranks"));
    }
    let on_cpu = device.backend_name() == "cpu";
    let profile = options.model.or(device.model()).filter(|_| on_cpu);
    // A launch cannot leave its device's timing mode, so each pass gets an
    // emulator of its own kind.
    let plain;
    let wall_device = if device.model().is_some() {
        plain = Device::cpu();
        &plain
    } else {
        device
    };
    let timed;
    let model_device = match profile {
        Some(p) if device.model() == Some(p) => Some(device),
        Some(p) => {
            timed = Device::cpu_with(CpuOptions {
                model: Some(p),
                // GPU_MPI_MODEL_LOG applies to the flag's model too.
                model_log: CpuOptions::from_env().map_err(|e| e.to_string())?.model_log,
                ..CpuOptions::default()
            });
            Some(&timed)
        }
        None => None,
    };
    let preset = Preset {
        quick: options.quick,
        reps: options.reps.max(1),
        iterations: options.iterations,
    };
    let progress = progress_bar(print, options.suites.len() as u64 + 1);
    let mut ctx = Ctx {
        device: wall_device,
        preset,
        ranks,
        limits: Limits::default(),
        options,
        checked: 0,
        progress: progress.clone(),
    };
    let mut model = model_device.map(|d| Ctx {
        device: d,
        preset: Preset {
            reps: MODEL_REPS,
            ..preset
        },
        ranks,
        limits: Limits::default(),
        options,
        checked: 0,
        progress: progress.clone(),
    });
    if print {
        progress.suspend(|| {
            println!(
                "gpu-mpi-bench: backend {}{}, {} ranks, {}{}",
                device.backend_name(),
                match (on_cpu, profile) {
                    (true, Some(p)) => format!(
                        " (the CPU emulator, not a GPU: wall time, and beside it in `model` columns the time \
                         modelled on {} in timing mode, {MODEL_REPS} launch per point, docs/model.md)",
                        p.name
                    ),
                    (true, None) => " (the CPU emulator, not a GPU)".to_string(),
                    (false, _) if options.model.is_some() => {
                        " (no timing model: a GPU measures its own time)".to_string()
                    }
                    _ => String::new(),
                },
                ranks,
                match preset.reps {
                    1 => "1 launch per measurement".to_string(),
                    n => format!("{n} launches per measurement (median)"),
                },
                if options.quick { ", quick" } else { "" }
            )
        });
    }
    let mut sections = Vec::new();
    progress.set_prefix("limits");
    let (limits, mut section) = limits::measure(&mut ctx)?;
    ctx.limits = limits;
    if let (Some(m), Some(p)) = (model.as_mut(), profile) {
        progress.set_prefix("limits (model)");
        let (limits, modelled) = limits::measure(m)?;
        m.limits = limits;
        section = merge_model(section, modelled, p)?;
    }
    emit(print, &progress, &section);
    sections.push(section);
    // No launch: the build's ptxas report, for the device's SM.
    let kernels = kernels::section(&KERNELS, device.describe().compute_capability);
    emit(print, &progress, &kernels);
    sections.push(kernels);
    progress.inc(1);
    let mut targets = Vec::new();
    let mut model_targets = Vec::new();
    for suite in &options.suites {
        progress.set_prefix(suite.name());
        let (mut new, t) = run_suite(&mut ctx, *suite)?;
        if let (Some(m), Some(p)) = (model.as_mut(), profile) {
            progress.set_prefix(format!("{} (model)", suite.name()));
            let (modelled, mt) = run_suite(m, *suite)?;
            if modelled.len() != new.len() {
                return Err(format!(
                    "{}: the timing-mode pass made {} tables, the wall pass {}",
                    suite.name(),
                    modelled.len(),
                    new.len()
                ));
            }
            new = new
                .into_iter()
                .zip(modelled)
                .map(|(w, m)| merge_model(w, m, p))
                .collect::<Result<_, _>>()?;
            model_targets.extend(mt);
        }
        for s in &new {
            emit(print, &progress, s);
        }
        sections.extend(new);
        targets.extend(t);
        progress.inc(1);
    }
    progress.finish_and_clear();
    let report = Report {
        backend: device.backend_name(),
        ranks,
        options: options.clone(),
        limits: ctx.limits.clone(),
        sections,
        targets,
        checked_launches: ctx.checked + model.as_ref().map_or(0, |m| m.checked),
        wall: start.elapsed(),
        model: model.zip(profile).map(|(m, p)| ModelPass {
            profile: p,
            limits: m.limits,
            targets: model_targets,
        }),
    };
    if print {
        print!("{}", report.targets_text());
        println!(
            "all results checked: {} launches verified, wall time {:.1} s",
            report.checked_launches,
            report.wall.as_secs_f64()
        );
    }
    Ok(report)
}

/// One suite's tables and targets.
fn run_suite(ctx: &mut Ctx, suite: Suite) -> Result<(Vec<Section>, Vec<Target>), String> {
    match suite {
        Suite::Pi => pi::run(ctx),
        Suite::Latency => p2p::latency(ctx),
        Suite::Bw => p2p::bandwidth(ctx),
        Suite::Barrier => coll::barrier(ctx),
        Suite::Bcast => coll::bcast(ctx),
        Suite::Reduce => coll::reduce(ctx, false),
        Suite::Allreduce => coll::reduce(ctx, true),
        Suite::Gather => coll::exchange(ctx, Exchange::Gather),
        Suite::Scatter => coll::exchange(ctx, Exchange::Scatter),
        Suite::Allgather => coll::exchange(ctx, Exchange::AllGather),
        Suite::Alltoall => coll::alltoall(ctx),
        Suite::ReduceScatter => coll::exchange(ctx, Exchange::ReduceScatter),
        Suite::Scan => coll::exchange(ctx, Exchange::Scan),
        Suite::Ibarrier => coll::ibarrier(ctx),
        Suite::Iallreduce => coll::iallreduce(ctx),
        Suite::Varcount => coll::varcount(ctx),
        Suite::Scale => coll::scale(ctx),
        Suite::Ddt => ddt::run(ctx),
        Suite::Rma => rma::run(ctx),
    }
}

/// Whether a row's value under `key` is a measurement (a time, a rate or
/// a ratio of them) rather than a parameter of the point: the values that
/// get a `model_` twin. Host-side times (`wall`, `host_`) are not kernel
/// times, so they have none.
pub fn is_measured(key: &str) -> bool {
    if key.contains("wall") || key.starts_with("host_") {
        return false;
    }
    key == "value"
        || key.starts_with("ratio")
        || key.contains("_of_")
        || key.contains("_over_")
        || ["_us", "_ms", "_ns", "_gbps", "_mmsgs"]
            .iter()
            .any(|unit| key.ends_with(unit))
}

/// The key of `key`'s modelled twin: `model_` and the key.
pub fn model_key(key: &'static str) -> &'static str {
    // Rows hold `&'static str` keys; the measured keys are a fixed set of
    // a few dozen, each leaked once.
    static KEYS: OnceLock<Mutex<HashMap<&'static str, &'static str>>> = OnceLock::new();
    let mut keys = KEYS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    keys.entry(key)
        .or_insert_with(|| Box::leak(format!("model_{key}").into_boxed_str()))
}

/// Whether a table prints the `model` twin of column `key` (the JSON has
/// every twin): not those of the min and max over ranks, which would make
/// the collectives' tables twice as wide for figures the averages carry.
fn prints_model(key: &str) -> bool {
    is_measured(key) && !key.contains("_min_") && !key.contains("_max_") && !key.ends_with("_mmsgs")
}

/// `wall` with the measured values of `modelled`, the same table made in
/// timing mode on `profile`: every measured value ([`is_measured`]) gets
/// its twin ([`model_key`]) right after it, every printed measured column
/// a `model` column beside it. Fails when the two tables do not describe
/// the same points (their other text and integer values differ).
pub fn merge_model(mut wall: Section, modelled: Section, profile: &Profile) -> Result<Section, String> {
    if wall.suite != modelled.suite || wall.rows.len() != modelled.rows.len() {
        return Err(format!(
            "{}: the timing-mode pass made {} rows of {}, the wall pass {} of {}",
            wall.title,
            modelled.rows.len(),
            modelled.suite,
            wall.rows.len(),
            wall.suite
        ));
    }
    let point =
        |key: &str, v: &Value| !is_measured(key) && !key.contains("sync") && (v.is_string() || v.is_u64());
    for (i, (w, m)) in wall.rows.iter_mut().zip(modelled.rows).enumerate() {
        let mut merged: Row = Vec::with_capacity(2 * w.len());
        for (key, value) in w.drain(..) {
            let twin = m.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
            if point(key, &value) && twin != Some(&value) {
                return Err(format!(
                    "{}, row {i}: {key} is {value} in the wall pass but {} in the timing-mode pass",
                    wall.title,
                    twin.map_or("missing".to_string(), Value::to_string)
                ));
            }
            let measured = is_measured(key);
            let twin = twin.cloned().unwrap_or(Value::Null);
            merged.push((key, value));
            if measured {
                merged.push((model_key(key), twin));
            }
        }
        *w = merged;
    }
    wall.columns = wall
        .columns
        .iter()
        .flat_map(|&(key, header)| {
            let twin = prints_model(key).then(|| (model_key(key), "model"));
            std::iter::once((key, header)).chain(twin)
        })
        .collect();
    for note in modelled.notes {
        if !wall.notes.contains(&note) {
            wall.notes.push(format!("model: {note}"));
        }
    }
    wall.notes.push(format!(
        "model: the column to its left modelled on {} (the emulator in timing mode, docs/model.md; \
         {MODEL_REPS} launch per point); every other time is the emulator's wall time",
        profile.name
    ));
    Ok(wall)
}

/// One bar over the suites (the limits first), its message the launch under
/// way; on stderr when `print` is set and stderr is a terminal, else hidden.
/// Cleared when dropped, so an error message does not land behind it.
fn progress_bar(print: bool, suites: u64) -> ProgressBar {
    if !print {
        return ProgressBar::hidden();
    }
    let style =
        ProgressStyle::with_template("{spinner} [{elapsed}] {bar:20} {pos}/{len} {prefix}: {wide_msg}")
            .expect("the template is valid");
    let bar = ProgressBar::with_draw_target(Some(suites), ProgressDrawTarget::stderr())
        .with_style(style)
        .with_finish(ProgressFinish::AndClear);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Prints a finished table on stdout, clearing the bar around it.
fn emit(print: bool, progress: &ProgressBar, s: &Section) {
    if print {
        progress.suspend(|| print!("{}", s.text()));
    }
}

/// A number for a table: integers as such, others with four significant digits.
pub fn fmt_num(v: f64) -> String {
    if v.is_nan() {
        return "-".to_string();
    }
    if v == v.trunc() && v.abs() < 1e9 {
        return format!("{}", v as i64);
    }
    if v.abs() < 1e-3 {
        return format!("{v:.2e}");
    }
    let mag = v.abs().log10().floor() as i32;
    let decimals = (3 - mag).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

impl Section {
    /// The table as text.
    pub fn text(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                self.columns
                    .iter()
                    .map(
                        |(key, _)| match row.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
                            Some(Value::Number(v)) => fmt_num(v.as_f64().unwrap_or(f64::NAN)),
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Bool(b)) => b.to_string(),
                            _ => "-".to_string(),
                        },
                    )
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, h))| {
                cells
                    .iter()
                    .map(|r| r[i].len())
                    .chain([h.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let _ = writeln!(out, "\n== {} ==", self.title);
        let line = |out: &mut String, items: Vec<&str>| {
            let parts: Vec<String> = items
                .iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:>w$}"))
                .collect();
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&mut out, self.columns.iter().map(|(_, h)| *h).collect());
        for r in &cells {
            line(&mut out, r.iter().map(String::as_str).collect());
        }
        for n in &self.notes {
            let _ = writeln!(out, "  {n}");
        }
        out
    }
}

impl Report {
    /// The limits a profile is written from ([`Limits::profile`]): those of
    /// the timing-mode pass when the run had one (the model's own costs
    /// measured back), else the run's.
    pub fn profile_limits(&self) -> &Limits {
        self.model.as_ref().map_or(&self.limits, |m| &m.limits)
    }

    /// The targets as text (those of the timing-mode pass after them).
    pub fn targets_text(&self) -> String {
        let mut out = String::new();
        if self.targets.is_empty() {
            return out;
        }
        let what = if self.backend == "cpu" {
            "the emulator's wall time: informative only, the targets are for a GPU".to_string()
        } else {
            "GPU".to_string()
        };
        let mut lists = vec![(what, &self.targets)];
        if let Some(m) = &self.model {
            lists.push((
                format!("modelled on {}, docs/model.md", m.profile.name),
                &m.targets,
            ));
        }
        for (what, targets) in lists {
            let _ = writeln!(out, "\n== targets ({what}) ==");
            for t in targets {
                let _ = writeln!(
                    out,
                    "  {:<48} {:>10} {} ({} {} {}): {}",
                    t.name,
                    fmt_num(t.value),
                    t.unit,
                    t.side.text(),
                    fmt_num(t.bound),
                    t.unit,
                    if t.met() { "met" } else { "NOT met" }
                );
            }
        }
        out
    }

    /// The whole report as pretty-printed JSON, with the provenance of
    /// the run (docs/bench/README.md).
    pub fn json(&self, provenance: &Provenance) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct OptionsJson {
            suites: Vec<&'static str>,
            quick: bool,
            reps: usize,
            pi_step: u32,
            thesis_scale: bool,
            iterations: Option<u32>,
        }
        #[derive(Serialize)]
        struct ModelJson<'a> {
            profile: &'a str,
            parameters: serde_json::Map<String, Value>,
            launches_per_point: usize,
            limits: &'a Limits,
            targets: &'a [Target],
        }
        #[derive(Serialize)]
        struct ReportJson<'a> {
            schema: &'static str,
            backend: &'static str,
            emulator: bool,
            unix_time: u64,
            ranks: u32,
            options: OptionsJson,
            limits: &'a Limits,
            sections: &'a [Section],
            targets: &'a [Target],
            checked_launches: u64,
            wall_s: f64,
            model: Option<ModelJson<'a>>,
            provenance: &'a Provenance,
        }
        let o = &self.options;
        let mut text = serde_json::to_string_pretty(&ReportJson {
            schema: SCHEMA,
            backend: self.backend,
            emulator: self.backend == "cpu",
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ranks: self.ranks,
            options: OptionsJson {
                suites: o.suites.iter().map(|s| s.name()).collect(),
                quick: o.quick,
                reps: o.reps,
                pi_step: o.pi_step,
                thesis_scale: o.thesis_scale,
                iterations: o.iterations,
            },
            limits: &self.limits,
            sections: &self.sections,
            targets: &self.targets,
            checked_launches: self.checked_launches,
            wall_s: self.wall.as_secs_f64(),
            model: self.model.as_ref().map(|m| ModelJson {
                profile: &m.profile.name,
                parameters: m
                    .profile
                    .entries()
                    .map(|(k, v)| (k.to_string(), v.into()))
                    .collect(),
                launches_per_point: MODEL_REPS,
                limits: &m.limits,
                targets: &m.targets,
            }),
            provenance,
        })?;
        text.push('\n');
        Ok(text)
    }
}
