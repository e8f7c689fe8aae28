//! Command line shared by the examples.
// Each example uses only some of these helpers.
#![allow(dead_code)]

use gpu_mpi::{BackendKind, Device, RankCount, WorldSpec};
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

/// The world the options ask for.
pub fn spec(cli: &Cli) -> WorldSpec {
    match cli.ranks {
        RankCount::Exact(n) => WorldSpec::ranks(n),
        RankCount::Max => WorldSpec::max_ranks(),
    }
}

/// Opens the backend or prints why not.
pub fn open(cli: &Cli) -> Result<Device, String> {
    gpu_mpi::open(cli.backend).map_err(|e| format!("cannot open backend {}: {e}", cli.backend))
}

/// Prints `error: ...` and returns a failure exit code.
pub fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

/// Runs one of the pi kernels with the options of the command line and prints
/// `pi=<value> error=<|value - PI|> ranks=<N> backend=<cpu|cuda>` last.
pub fn run_pi(kernel: &gpu_mpi::device::Kernel<gpu_mpi::kernels::pi::PiArgs>) -> ExitCode {
    let cli = match parse(4096, "--intervals-per-rank", 128) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let run = || -> Result<(f64, gpu_mpi::LaunchReport), Box<dyn std::error::Error>> {
        let device = open(&cli)?;
        let result = device.alloc_zeroed::<f64>(1)?;
        let args = gpu_mpi::kernels::pi::PiArgs {
            intervals_per_rank: cli.count,
            reserved: 0,
            result: result.slice(),
        };
        let report = device.launch(kernel, &args, &spec(&cli))?;
        Ok((device.download(&result)?[0], report))
    };
    let (pi, report) = match run() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let error = (pi - std::f64::consts::PI).abs();
    eprintln!(
        "{} ranks in {} blocks of {} on {}: {:.3} ms",
        report.ranks,
        report.blocks,
        report.block_dim,
        report.backend,
        report.elapsed.as_secs_f64() * 1e3
    );
    println!(
        "pi={pi} error={error:e} ranks={} backend={}",
        report.ranks, report.backend
    );
    // The midpoint rule's error for 4/(1+x^2) on n intervals is below 1/n^2;
    // summation rounding adds far less than 1e-9 here.
    let intervals = report.ranks as f64 * cli.count as f64;
    if error > 1.0 / (intervals * intervals) + 1e-9 {
        return fail(format!("estimate off by {error:e}"));
    }
    ExitCode::SUCCESS
}
