//! Launches `my_kernels::HALO`, a 1-D halo exchange, on the GPU, or on the
//! CPU emulator when there is none, and checks it against the same
//! computation done here, one cell after another:
//!
//! ```text
//! my-app [auto|cpu|cuda] [RANKS]     run it (default: auto, 4096 ranks)
//! my-app explore [SCHEDULES] [RANKS] run it on the CPU emulator under the
//!                                    default and SCHEDULES seeded schedules
//!                                    (default 100, 8 ranks) and group what
//!                                    happened, with the seeds that replay it
//! my-app replay SEED [RANKS]         run the schedule of one seed again
//! ```
//!
//! `GPU_MPI_TRACE=halo.json my-app cpu 8` also writes a trace of every
//! message (Chrome trace JSON, and `halo.html` beside it).

use gpu_mpi::explore::{self, ExploreOptions, Mode, Outcome};
use gpu_mpi::{trace_path_from_env, BackendKind, Device, HostError, KernelImages, Schedule, WorldSpec};
use my_kernels::{smooth, HaloArgs, HALO};

/// The kernels build.rs compiled: PTX and SASS for each SM.
static KERNELS: KernelImages = gpu_mpi::include_kernels!();

/// Cells each rank owns.
const CELLS_PER_RANK: u32 = 4;
/// Steps of the halo exchange.
const STEPS: u32 = 8;
/// The fixed temperatures beyond the rod's ends.
const ENDS: [f64; 2] = [100.0, 0.0];

/// What a run can end in.
enum Failure {
    /// The launch failed (a deadlock, a rank's error, ...).
    Launch(HostError),
    /// The kernel ran, but its cells are not the sequential computation's.
    Wrong(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Launch(e) => write!(f, "{e}"),
            Failure::Wrong(why) => f.write_str(why),
        }
    }
}

impl From<HostError> for Failure {
    fn from(e: HostError) -> Self {
        Failure::Launch(e)
    }
}

/// The rod's starting temperatures: a rough pattern between 0 and 99.
fn start(cells: usize) -> Vec<f64> {
    (0..cells).map(|i| ((i * 37) % 100) as f64).collect()
}

/// The halo exchange done here, one cell after another: the cells after
/// `STEPS` steps and each step's largest change.
fn sequential(mut cells: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let mut changes = Vec::new();
    for _ in 0..STEPS {
        let old = cells.clone();
        let mut largest = 0.0f64;
        for i in 0..cells.len() {
            let left = if i == 0 { ENDS[0] } else { old[i - 1] };
            let right = old.get(i + 1).copied().unwrap_or(ENDS[1]);
            cells[i] = smooth(left, old[i], right);
            largest = largest.max((cells[i] - old[i]).abs());
        }
        changes.push(largest);
    }
    (cells, changes)
}

/// Runs the halo exchange on `ranks` ranks, on the emulator in the order
/// of `schedule` if one is given (else traced when `GPU_MPI_TRACE` names a
/// file), checks it, and returns each step's largest change and the
/// launch's backend.
fn halo(
    device: &Device,
    ranks: u32,
    schedule: Option<Schedule>,
) -> Result<(Vec<f64>, &'static str), Failure> {
    let n = (ranks * CELLS_PER_RANK) as usize;
    let cells = device.upload(&start(n))?;
    let ends = device.upload(&ENDS)?;
    let changes = device.alloc_zeroed::<f64>(STEPS as usize)?;
    let args = HaloArgs {
        cells: cells.slice(),
        ends: ends.slice(),
        changes: changes.slice(),
        cells_per_rank: CELLS_PER_RANK,
        steps: STEPS,
    };
    // Each rank keeps its cells in its scratch: 8 bytes per cell.
    let spec = WorldSpec::ranks(ranks).scratch_bytes(8 * u64::from(CELLS_PER_RANK));
    let spec = match schedule {
        Some(s) => spec.schedule(s),
        None => spec.trace_from_env(),
    };
    let report = device.launch(&HALO, &args, &spec)?;
    if let (Some(path), Some(trace)) = (trace_path_from_env(), report.trace()) {
        let html = trace
            .write_files(&path, "halo exchange", None)
            .map_err(|e| Failure::Wrong(e.to_string()))?;
        eprintln!(
            "trace: {} messages in {} and {}",
            trace.messages().len(),
            path.display(),
            html.display()
        );
    }
    let (want_cells, want_changes) = sequential(start(n));
    let got_cells = device.download(&cells)?;
    let got_changes = device.download(&changes)?;
    if let Some(i) = (0..n).find(|&i| got_cells[i] != want_cells[i]) {
        return Err(Failure::Wrong(format!(
            "cell {i} is {}, the sequential computation gives {}",
            got_cells[i], want_cells[i]
        )));
    }
    if got_changes != want_changes {
        return Err(Failure::Wrong(format!(
            "largest changes {got_changes:?}, the sequential computation gives {want_changes:?}"
        )));
    }
    Ok((got_changes, report.backend))
}

/// One run of the halo exchange under `schedule`, as the explorer sees it:
/// a pass, wrong cells (a failure of the check), or the launch's error (a
/// deadlock report, a rank's error).
fn outcome(device: &Device, ranks: u32, schedule: Schedule) -> Result<Outcome, HostError> {
    match halo(device, ranks, Some(schedule)) {
        Ok(_) => Ok(Outcome::pass()),
        Err(Failure::Wrong(why)) => Ok(Outcome::fail(why)),
        Err(Failure::Launch(e)) => Err(e),
    }
}

/// Prints an outcome's message indented under its line.
fn print_message(message: &str) {
    for line in message.lines() {
        println!("      {line}");
    }
}

/// `my-app explore [SCHEDULES] [RANKS]`.
fn explore_main(schedules: Option<String>, ranks: u32) -> ! {
    let schedules: u64 = match schedules {
        Some(n) => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage(&format!("{n:?} is not a schedule count"))),
        None => 100,
    };
    let device = Device::open(BackendKind::Cpu, &KERNELS).unwrap_or_else(|e| fail(&e.to_string()));
    println!(
        "explore: {ranks} ranks, {schedules} random schedules (seeds 0-{}) on the cpu backend",
        schedules - 1
    );
    let found = explore::explore(&ExploreOptions::random(schedules), |s| outcome(&device, ranks, s))
        .unwrap_or_else(|e| fail(&e.to_string()));
    println!("default schedule: {}", found.default.kind.name());
    print_message(&found.default.message);
    for (i, f) in found.outcomes.iter().enumerate() {
        let seeds: Vec<String> = f.seeds.iter().take(8).map(u64::to_string).collect();
        let more = if f.seeds.len() > 8 { ", ..." } else { "" };
        let same = if f.differs {
            "differs from the default schedule"
        } else {
            "as the default schedule"
        };
        println!(
            "outcome {}: {} in {} of {schedules} schedules ({same}); seeds {}{more}",
            i + 1,
            f.outcome.kind.name(),
            f.seeds.len(),
            seeds.join(", ")
        );
        print_message(&f.outcome.message);
        if f.differs {
            println!(
                "      replay: cargo run --release -- replay {} {ranks}",
                f.seeds[0]
            );
        }
    }
    match found.differing().count() {
        0 => println!("every schedule gave the default schedule's outcome"),
        n => println!(
            "{n} of {} distinct outcomes differ from the default schedule",
            found.outcomes.len()
        ),
    }
    std::process::exit(if found.deterministic() { 0 } else { 1 })
}

/// `my-app replay SEED [RANKS]`.
fn replay_main(seed: Option<String>, ranks: u32) -> ! {
    let seed: u64 = match seed {
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| usage(&format!("{s:?} is not a seed"))),
        None => usage("replay needs the seed an exploration printed"),
    };
    let device = Device::open(BackendKind::Cpu, &KERNELS).unwrap_or_else(|e| fail(&e.to_string()));
    let o = explore::replay(Mode::Random, seed, |s| outcome(&device, ranks, s))
        .unwrap_or_else(|e| fail(&e.to_string()));
    println!("seed {seed}: {}", o.kind.name());
    print_message(&o.message);
    std::process::exit(if o == Outcome::pass() { 0 } else { 1 })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    match first.as_deref() {
        Some("explore") => {
            let schedules = args.next();
            explore_main(schedules, ranks(args.next(), 8))
        }
        Some("replay") => {
            let seed = args.next();
            replay_main(seed, ranks(args.next(), 8))
        }
        _ => {}
    }
    let backend: BackendKind = match first {
        Some(b) => b.parse().unwrap_or_else(|e| usage(&format!("{e}"))),
        None => BackendKind::Auto,
    };
    let ranks = ranks(args.next(), 4096);
    let device = Device::open(backend, &KERNELS).unwrap_or_else(|e| fail(&e.to_string()));
    match halo(&device, ranks, None) {
        Ok((changes, backend)) => {
            println!(
                "halo exchange: {ranks} ranks x {CELLS_PER_RANK} cells, {STEPS} steps, {backend} backend"
            );
            for (step, c) in changes.iter().enumerate() {
                println!("step {}: largest change {c}", step + 1);
            }
            println!("the cells match the sequential computation");
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// The rank count argument, or `default`.
fn ranks(arg: Option<String>, default: u32) -> u32 {
    match arg {
        Some(n) => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage(&format!("{n:?} is not a rank count"))),
        None => default,
    }
}

fn fail(problem: &str) -> ! {
    eprintln!("error: {problem}");
    std::process::exit(1)
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "error: {problem}\nusage: my-app [auto|cpu|cuda] [RANKS]\n       my-app explore [SCHEDULES] [RANKS]\n       my-app replay SEED [RANKS]"
    );
    std::process::exit(2)
}
