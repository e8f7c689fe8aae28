//! `gpu-mpi-check`: runs every MPI conformance case of
//! `gpu_mpi_check` on one backend and prints a table of the results.
//!
//! ```text
//! gpu-mpi-check [--backend cpu|cuda|auto] [--json FILE] [--filter TEXT] [--list]
//! gpu-mpi-check explore CASE [--schedules N] [--seed S] [--mode random|pct]
//!                            [--depth D] [--steps K] [--replay SEED] [--json FILE]
//! ```
//!
//! The details of every failure print as they happen; the table (case,
//! result, time) prints last. Exit status: 0 when every case passed, 1 when
//! one failed, 2 on a usage error or a backend that cannot be opened.
//!
//! `explore` runs one case on the emulator under N seeded schedules
//! (`gpu_mpi_check::explore`) and prints every distinct outcome with the
//! seeds that replay it; `--replay SEED` runs one of them again. Exit
//! status: 0 when every schedule gave the default schedule's outcome (for
//! `--replay`: the case passed), 1 otherwise, 2 on a usage error.

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpu_mpi::BackendKind;
use gpu_mpi_check::explore::{self as ex, Exploration, Mode};
use gpu_mpi_check::{cases, Case};
use gpu_mpi_provenance::Provenance;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use serde::{Serialize, Serializer};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs the MPI conformance cases (docs/semantics.md) on one backend.
///
/// The details of every failure print as they happen; the table (case,
/// result, time) prints last. Exit status: 0 when every case passed, 1 when
/// one failed, 2 on a usage error or a backend that cannot be opened.
#[derive(Debug, Parser, Serialize)]
#[command(name = "gpu-mpi-check", version)]
struct Options {
    /// cpu (the emulator), cuda (an NVIDIA GPU) or auto (default: the GPU
    /// when usable, else the emulator)
    #[arg(long, value_name = "cpu|cuda|auto", default_value = "auto", value_parser = parse_backend)]
    #[serde(serialize_with = "display")]
    backend: BackendKind,
    /// Also write the results to FILE as JSON (with the run's provenance)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run only the cases whose name contains TEXT
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Print the case names and exit
    #[arg(long)]
    list: bool,
    /// A subcommand instead of the conformance run
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand, Serialize)]
enum Command {
    /// Runs one case on the emulator under many seeded schedules and
    /// reports every outcome that differs, with the seeds that replay it.
    Explore(ExploreOptions),
}

/// Options of `gpu-mpi-check explore`.
#[derive(Debug, Args, Serialize)]
struct ExploreOptions {
    /// The case: a conformance case (see --list) or a planted one
    /// (planted/arrival_order, planted/any_source_deadlock)
    case: String,
    /// How many seeded schedules to run
    #[arg(long, value_name = "N", default_value_t = 100)]
    schedules: u64,
    /// The first seed (schedule i uses seed S + i)
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// random: the next rank uniformly at random; pct: probabilistic
    /// concurrency testing (random priorities, depth - 1 change points)
    #[arg(long, value_enum, default_value_t = ModeName::Random)]
    mode: ModeName,
    /// PCT's bug depth (with --mode pct)
    #[arg(long, value_name = "D", default_value_t = 3)]
    depth: u32,
    /// PCT's expected run length in scheduling steps (default: 8 per rank)
    #[arg(long, value_name = "K")]
    steps: Option<u64>,
    /// Run only the schedule of this seed, and print its outcome
    #[arg(long, value_name = "SEED")]
    replay: Option<u64>,
    /// Also write the outcomes to FILE as JSON (with the run's provenance)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum ModeName {
    Random,
    Pct,
}

impl ExploreOptions {
    fn mode(&self) -> Mode {
        match self.mode {
            ModeName::Random => Mode::Random,
            ModeName::Pct => Mode::Pct {
                depth: self.depth,
                steps: self.steps,
            },
        }
    }
}

fn parse_backend(s: &str) -> Result<BackendKind, gpu_mpi::ParseBackendKindError> {
    s.parse()
}

fn display<S: Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

struct Outcome {
    name: &'static str,
    result: Result<(), String>,
    time: Duration,
}

fn run_case(case: &Case, device: &gpu_mpi::Device) -> Outcome {
    let start = Instant::now();
    let result = match catch_unwind(AssertUnwindSafe(|| (case.run)(device))) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(format!("panicked: {msg}"))
        }
    };
    Outcome {
        name: case.name,
        result,
        time: start.elapsed(),
    }
}

/// The `--json` document: the counts, a row per case and the provenance.
fn json(backend: &str, outcomes: &[Outcome], provenance: &Provenance) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct CaseJson<'a> {
        name: &'a str,
        result: &'static str,
        seconds: f64,
        message: &'a str,
    }
    #[derive(Serialize)]
    struct Json<'a> {
        backend: &'a str,
        passed: usize,
        failed: usize,
        cases: Vec<CaseJson<'a>>,
        provenance: &'a Provenance,
    }
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let cases = outcomes
        .iter()
        .map(|o| CaseJson {
            name: o.name,
            result: if o.result.is_ok() { "pass" } else { "fail" },
            seconds: o.time.as_secs_f64(),
            message: o.result.as_ref().err().map_or("", String::as_str),
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&Json {
        backend,
        passed: outcomes.len() - failed,
        failed,
        cases,
        provenance,
    })?;
    text.push('\n');
    Ok(text)
}

fn table(backend: &str, outcomes: &[Outcome]) -> String {
    let width = outcomes.iter().map(|o| o.name.len()).max().unwrap_or(4).max(4);
    let mut s = format!("{:<width$}  {:<6}  {:>11}\n", "case", "result", "time");
    s.push_str(&format!("{:-<width$}  {:-<6}  {:->11}\n", "", "", ""));
    for o in outcomes {
        let result = if o.result.is_ok() { "pass" } else { "FAIL" };
        s.push_str(&format!(
            "{:<width$}  {result:<6}  {:>8.1} ms\n",
            o.name,
            o.time.as_secs_f64() * 1e3
        ));
    }
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let total: Duration = outcomes.iter().map(|o| o.time).sum();
    s.push_str(&format!(
        "{} cases on {backend}: {} passed, {failed} failed, {:.3}s\n",
        outcomes.len(),
        outcomes.len() - failed,
        total.as_secs_f64()
    ));
    s
}

/// One bar over the cases on stderr, hidden when stderr is not a terminal;
/// cleared when dropped.
fn progress_bar(cases: usize) -> ProgressBar {
    let style = ProgressStyle::with_template("{spinner} [{elapsed}] {bar:30} {pos}/{len} {wide_msg}")
        .expect("the template is valid");
    let bar = ProgressBar::with_draw_target(Some(cases as u64), ProgressDrawTarget::stderr())
        .with_style(style)
        .with_finish(ProgressFinish::AndClear);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The command that replays `seed` of an exploration.
fn replay_command(case: &str, mode: Mode, seed: u64) -> String {
    format!(
        "gpu-mpi-check explore {case} {} --replay {seed}",
        ex::arguments(mode)
    )
}

/// Prints an outcome's message indented under its line.
fn print_message(message: &str) {
    for line in message.lines() {
        println!("      {line}");
    }
}

/// Seeds as `0, 3, 7, ... (12 in all)`: the first 8.
fn seed_list(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
    let mut s = shown.join(", ");
    if seeds.len() > 8 {
        s.push_str(&format!(", ... ({} in all)", seeds.len()));
    }
    s
}

/// The `explore --json` document.
fn explore_json(case: &str, e: &Exploration, provenance: &Provenance) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct OutcomeJson<'a> {
        kind: &'static str,
        message: &'a str,
    }
    #[derive(Serialize)]
    struct FoundJson<'a> {
        kind: &'static str,
        message: &'a str,
        differs_from_default: bool,
        count: usize,
        seeds: &'a [u64],
        replay: String,
    }
    #[derive(Serialize)]
    struct Json<'a> {
        case: &'a str,
        mode: &'static str,
        depth: Option<u32>,
        steps: Option<u64>,
        first_seed: u64,
        schedules: u64,
        default_schedule: OutcomeJson<'a>,
        outcomes: Vec<FoundJson<'a>>,
        provenance: &'a Provenance,
    }
    let (depth, steps) = match e.mode {
        Mode::Random => (None, None),
        Mode::Pct { depth, steps } => (Some(depth), steps),
    };
    let mut text = serde_json::to_string_pretty(&Json {
        case,
        mode: e.mode.name(),
        depth,
        steps,
        first_seed: e.first_seed,
        schedules: e.schedules,
        default_schedule: OutcomeJson {
            kind: e.default.kind.name(),
            message: &e.default.message,
        },
        outcomes: e
            .outcomes
            .iter()
            .map(|f| FoundJson {
                kind: f.outcome.kind.name(),
                message: &f.outcome.message,
                differs_from_default: f.differs,
                count: f.seeds.len(),
                seeds: &f.seeds,
                replay: replay_command(case, e.mode, f.seeds[0]),
            })
            .collect(),
        provenance,
    })?;
    text.push('\n');
    Ok(text)
}

/// An exploration the options cannot run, in the options' words.
fn usage_error(e: &ex::ExploreError) -> String {
    match e {
        ex::ExploreError::NoSchedules => "--schedules must be at least 1".into(),
        ex::ExploreError::ZeroDepth => "--depth must be at least 1".into(),
        ex::ExploreError::ZeroSteps => "--steps must be at least 1".into(),
        other => other.to_string(),
    }
}

/// `gpu-mpi-check explore`.
fn explore_main(options: &Options, o: &ExploreOptions) -> ExitCode {
    let Some(case) = gpu_mpi_check::find_case(&o.case) else {
        eprintln!("gpu-mpi-check: {}", ex::unknown_case(&o.case));
        return ExitCode::from(2);
    };
    let mode = o.mode();
    let write_json = |text: serde_json::Result<String>| -> Result<(), ExitCode> {
        let Some(path) = &o.json else { return Ok(()) };
        text.map_err(std::io::Error::from)
            .and_then(|t| std::fs::write(path, t))
            .map_err(|e| {
                eprintln!("gpu-mpi-check: writing {}: {e}", path.display());
                ExitCode::from(2)
            })
    };
    let provenance = || {
        Provenance::new(
            &gpu_mpi::Device::cpu(),
            concat!("gpu-mpi-check ", env!("CARGO_PKG_VERSION")),
            env!("GPU_MPI_COMMIT"),
            options,
        )
    };
    if let Some(seed) = o.replay {
        let outcome = match ex::replay(&case, mode, seed) {
            Ok(outcome) => outcome,
            Err(e) => {
                eprintln!("gpu-mpi-check: {}", usage_error(&e));
                return ExitCode::from(2);
            }
        };
        println!(
            "{} under {}: {}",
            case.name,
            mode.schedule(seed),
            outcome.kind.name()
        );
        print_message(&outcome.message);
        let json = provenance().and_then(|p| {
            #[derive(Serialize)]
            struct Json<'a> {
                case: &'a str,
                mode: &'static str,
                schedule: String,
                seed: u64,
                kind: &'static str,
                message: &'a str,
                provenance: &'a Provenance,
            }
            let mut t = serde_json::to_string_pretty(&Json {
                case: case.name,
                mode: mode.name(),
                schedule: mode.schedule(seed).to_string(),
                seed,
                kind: outcome.kind.name(),
                message: &outcome.message,
                provenance: &p,
            })?;
            t.push('\n');
            Ok(t)
        });
        if let Err(code) = write_json(json) {
            return code;
        }
        return if outcome.kind == ex::OutcomeKind::Pass {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    let last = o.seed.saturating_add(o.schedules.saturating_sub(1));
    println!(
        "gpu-mpi-check explore: {}, {} {mode} schedules (seeds {}-{last}) on the cpu backend",
        case.name, o.schedules, o.seed
    );
    let progress = progress_bar(o.schedules as usize);
    let default_hook = std::panic::take_hook();
    let hook_bar = progress.clone();
    std::panic::set_hook(Box::new(move |info| hook_bar.suspend(|| default_hook(info))));
    let explored = ex::explore(&case, mode, o.seed, o.schedules, |seed, outcome| {
        progress.set_message(format!("seed {seed}: {}", outcome.kind.name()));
        progress.inc(1);
    });
    progress.finish_and_clear();
    let e = match explored {
        Ok(e) => e,
        Err(err) => {
            eprintln!("gpu-mpi-check: {}", usage_error(&err));
            return ExitCode::from(2);
        }
    };
    println!("default schedule: {}", e.default.kind.name());
    print_message(&e.default.message);
    for (i, f) in e.outcomes.iter().enumerate() {
        let same = if f.differs {
            "differs from the default schedule"
        } else {
            "as the default schedule"
        };
        println!(
            "outcome {}: {} in {} of {} schedules ({same}); seeds {}",
            i + 1,
            f.outcome.kind.name(),
            f.seeds.len(),
            e.schedules,
            seed_list(&f.seeds)
        );
        print_message(&f.outcome.message);
        if f.differs {
            println!("      replay: {}", replay_command(case.name, e.mode, f.seeds[0]));
        }
    }
    let differing = e.differing().count();
    println!(
        "{} distinct outcomes in {} schedules; {differing} {} from the default schedule",
        e.outcomes.len(),
        e.schedules,
        if differing == 1 { "differs" } else { "differ" }
    );
    if let Err(code) = write_json(provenance().and_then(|p| explore_json(case.name, &e, &p))) {
        return code;
    }
    if e.deterministic() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    // --help and --version print and exit 0; usage errors exit 2.
    let options = Options::parse();
    if let Some(Command::Explore(o)) = &options.command {
        return explore_main(&options, o);
    }
    let selected: Vec<Case> = cases()
        .into_iter()
        .filter(|c| options.filter.as_deref().is_none_or(|f| c.name.contains(f)))
        .collect();
    if options.list {
        for c in &selected {
            println!("{}", c.name);
        }
        return ExitCode::SUCCESS;
    }
    let device = match gpu_mpi_check::open(options.backend) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("gpu-mpi-check: cannot open the {} backend: {e}", options.backend);
            return ExitCode::from(2);
        }
    };
    let provenance = Provenance::new(
        &device,
        concat!("gpu-mpi-check ", env!("CARGO_PKG_VERSION")),
        env!("GPU_MPI_COMMIT"),
        &options,
    );
    let backend = device.backend_name();
    println!("gpu-mpi-check: {} cases on the {backend} backend", selected.len());
    let progress = progress_bar(selected.len());
    // A panicking case prints its message on stderr: clear the bar around it.
    let default_hook = std::panic::take_hook();
    let hook_bar = progress.clone();
    std::panic::set_hook(Box::new(move |info| hook_bar.suspend(|| default_hook(info))));
    let mut outcomes = Vec::new();
    for case in &selected {
        progress.set_message(case.name);
        let o = run_case(case, &device);
        progress.suspend(|| match &o.result {
            Ok(()) => println!("pass  {} ({:.3}s)", o.name, o.time.as_secs_f64()),
            Err(e) => {
                println!("FAIL  {} ({:.3}s)", o.name, o.time.as_secs_f64());
                for line in e.lines() {
                    println!("      {line}");
                }
            }
        });
        progress.inc(1);
        outcomes.push(o);
    }
    progress.finish_and_clear();
    if let Some(path) = &options.json {
        let written = provenance
            .and_then(|p| json(backend, &outcomes, &p))
            .map_err(std::io::Error::from)
            .and_then(|text| std::fs::write(path, text));
        if let Err(e) = written {
            eprintln!("gpu-mpi-check: writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    println!();
    print!("{}", table(backend, &outcomes));
    if outcomes.iter().any(|o| o.result.is_err()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
