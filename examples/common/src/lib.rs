//! Command line shared by the examples: `--backend auto|cpu|cuda`,
//! `--ranks N|max` and one count option of the example's own.

use gpu_mpi::{trace_path_from_env, BackendKind, Device, KernelImages, LaunchReport, RankCount, WorldSpec};
use std::process::ExitCode;

/// Options every example takes.
pub struct Cli {
    /// `--backend auto|cpu|cuda` (default auto).
    pub backend: BackendKind,
    /// `--ranks N|max` (default given by the example).
    pub ranks: RankCount,
    /// `--intervals-per-rank K` and other per-example counts.
    pub count: u32,
}

/// Parses `--backend`, `--ranks` and the example's count option `count_flag`.
pub fn parse(default_ranks: u32, count_flag: &str, default_count: u32) -> Result<Cli, String> {
    let mut cli = Cli {
        backend: BackendKind::Auto,
        ranks: RankCount::Exact(default_ranks),
        count: default_count,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" => cli.backend = value()?.parse().map_err(|e| format!("{e}"))?,
            "--ranks" => {
                let v = value()?;
                cli.ranks = if v == "max" {
                    RankCount::Max
                } else {
                    RankCount::Exact(v.parse().map_err(|_| format!("--ranks: {v:?} is not a number or \"max\""))?)
                };
            }
            f if f == count_flag => {
                let v = value()?;
                cli.count = v.parse().map_err(|_| format!("{count_flag}: {v:?} is not a number"))?;
            }
            "--help" | "-h" => {
                return Err(format!(
                    "usage: [--backend auto|cpu|cuda] [--ranks N|max] [{count_flag} K] (defaults: auto, {default_ranks}, {default_count})"
                ))
            }
            other => return Err(format!("unknown option {other:?} (try --help)")),
        }
    }
    Ok(cli)
}

/// The world the options ask for, traced when `GPU_MPI_TRACE` names a
/// file (`GPU_MPI_TRACE_EVENTS` events per rank, default 1024;
/// docs/tracing.md).
pub fn spec(cli: &Cli) -> WorldSpec {
    match cli.ranks {
        RankCount::Exact(n) => WorldSpec::ranks(n),
        RankCount::Max => WorldSpec::max_ranks(),
    }
    .trace_from_env()
}

/// Writes the launch's trace to the file `GPU_MPI_TRACE` names (Chrome
/// trace JSON) and the HTML page beside it, and says so on stderr; does
/// nothing when the variable is unset or the launch was not traced, nor on
/// any process but the first of a world across processes (each holds the
/// whole world's trace: docs/distributed.md), where they would all write
/// the same file.
pub fn write_trace(device: &Device, report: &LaunchReport, title: &str) -> Result<(), String> {
    if !device.process().is_first() {
        return Ok(());
    }
    // Every example writes its trace; the modelled time (timing mode,
    // GPU_MPI_MODEL, docs/model.md) goes beside it.
    if let Some(m) = &report.model {
        eprint!("{}", m.summary());
        if let Some(log) = &m.log {
            eprint!("{}", log.render());
        }
    }
    let (Some(path), Some(trace)) = (trace_path_from_env(), report.trace()) else {
        return Ok(());
    };
    let html = trace.write_files(&path, title, None).map_err(|e| e.to_string())?;
    eprintln!(
        "trace: {} events ({} dropped), {} messages: {} and {}",
        trace.recorded(),
        trace.dropped(),
        trace.messages().len(),
        path.display(),
        html.display()
    );
    Ok(())
}

/// Opens the backend the options ask for, with the example's kernels
/// (what its build script built, from `gpu_mpi::include_kernels!`), or says
/// why not.
pub fn open(cli: &Cli, kernels: &KernelImages) -> Result<Device, String> {
    Device::open(cli.backend, kernels).map_err(|e| format!("cannot open backend {}: {e}", cli.backend))
}

/// Prints `error: ...` and returns a failure exit code.
pub fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}
