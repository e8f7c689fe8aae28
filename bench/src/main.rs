//! `gpu-mpi-bench`: MPI inside a kernel against native kernels doing the
//! same work, OSU-style, on the GPU or the CPU emulator.
//!
//! ```text
//! cargo run --release --bin gpu-mpi-bench -- <suite> [--backend auto|cpu|cuda]
//!     [--json FILE] [--ranks N|max] [--quick] [--reps N] [--pi-step K]
//!     [--iterations N] [--no-thesis-scale]
//! ```
//!
//! Suites: pi, latency, bw, barrier, bcast, reduce, allreduce, scale, ddt, all.
//! Prints a table per measurement group and, with `--json`, writes every
//! number to FILE. Exits non-zero when a benchmark's own correctness check
//! fails (the message names it) or a launch fails. See docs/performance.md.

use gpu_mpi_bench as bench;

use bench::{Options, Suite};
use gpu_mpi::{BackendKind, RankCount};
use std::process::ExitCode;

const USAGE: &str = "usage: gpu-mpi-bench <pi|latency|bw|barrier|bcast|reduce|allreduce|scale|ddt|all> \
[--backend auto|cpu|cuda] [--json FILE] [--ranks N|max] [--quick] [--reps N] [--pi-step K] \
[--iterations N] [--no-thesis-scale]";

struct Cli {
    backend: BackendKind,
    json: Option<String>,
    options: Options,
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{flag}: {v:?} is not a number"))
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Cli, String> {
    let mut cli = Cli {
        backend: BackendKind::Auto,
        json: None,
        options: Options::default(),
    };
    let mut suites: Option<Vec<Suite>> = None;
    let mut reps = None;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--backend" => cli.backend = value()?.parse().map_err(|e| format!("{e}"))?,
            "--json" => cli.json = Some(value()?),
            "--ranks" => {
                let v = value()?;
                cli.options.ranks = Some(if v == "max" {
                    RankCount::Max
                } else {
                    RankCount::Exact(number("--ranks", &v)?)
                });
            }
            "--quick" => cli.options.quick = true,
            "--reps" => reps = Some(number::<usize>("--reps", &value()?)?.max(1)),
            "--pi-step" => cli.options.pi_step = number::<u32>("--pi-step", &value()?)?.max(1),
            "--iterations" => cli.options.iterations = Some(number::<u32>("--iterations", &value()?)?.max(1)),
            "--no-thesis-scale" => cli.options.thesis_scale = false,
            "--help" | "-h" => return Err(USAGE.to_string()),
            s if !s.starts_with('-') => {
                let found = Suite::parse(s).ok_or_else(|| format!("unknown suite {s:?}\n{USAGE}"))?;
                suites.get_or_insert_with(Vec::new).extend(found);
            }
            other => return Err(format!("unknown option {other:?}\n{USAGE}")),
        }
    }
    cli.options.suites = suites.ok_or_else(|| format!("no suite given\n{USAGE}"))?;
    cli.options.reps = reps.unwrap_or(if cli.options.quick { 3 } else { 5 });
    Ok(cli)
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let device = match bench::open(cli.backend) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot open backend {}: {e}", cli.backend);
            return ExitCode::FAILURE;
        }
    };
    let report = match bench::run(&device, &cli.options, true) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("\nerror: benchmark FAILED: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &cli.json {
        if let Err(e) = std::fs::write(path, report.json().pretty()) {
            eprintln!("error: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {path}");
    }
    ExitCode::SUCCESS
}
