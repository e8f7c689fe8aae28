//! `gpu-mpi-check`: runs every MPI conformance case of
//! `gpu_mpi_check` on one backend and prints a table of the results.
//!
//! ```text
//! gpu-mpi-check [--backend cpu|cuda|auto] [--json FILE] [--filter TEXT] [--list]
//! ```
//!
//! The details of every failure print as they happen; the table (case,
//! result, time) prints last. Exit status: 0 when every case passed, 1 when
//! one failed, 2 on a usage error or a backend that cannot be opened.

use clap::Parser;
use gpu_mpi::BackendKind;
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

fn main() -> ExitCode {
    // --help and --version print and exit 0; usage errors exit 2.
    let options = Options::parse();
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
