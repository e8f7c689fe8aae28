//! `gpu-mpi-bench`: MPI inside a kernel against native kernels doing the
//! same work, OSU-style, on the GPU or the CPU emulator.
//!
//! ```text
//! cargo run --release --bin gpu-mpi-bench -- <suite>... [--backend auto|cpu|cuda]
//!     [--json FILE] [--ranks N|max] [--quick] [--reps N] [--pi-step K]
//!     [--iterations N] [--no-thesis-scale] [--model h100|h200|FILE]
//!     [--write-profile FILE [--base-profile h100|h200|FILE] [--profile-name NAME]]
//! ```
//!
//! Suites: limits (only the physical limits, which every run measures
//! first), pi, latency, bw, barrier, bcast, reduce, allreduce, gather,
//! scatter, allgather, alltoall, reduce_scatter, scan, ibarrier, iallreduce,
//! varcount (gatherv, scatterv, allgatherv, alltoallv, alltoallv in place), scale, ddt, rma, all.
//! Prints a table per measurement group and, with `--json`, writes every
//! number and the run's provenance to FILE. Exits 1 when a benchmark's own
//! correctness check fails (the message names it), a launch fails or the
//! backend cannot be opened; 2 on a usage error. See docs/performance.md.
//!
//! With `--model` (or `GPU_MPI_MODEL`) the emulator runs every suite twice,
//! the second time in timing mode, and prints the modelled figures in
//! `model` columns beside the wall ones (docs/model.md).
//!
//! `--write-profile FILE` writes the timing-model profile the measured
//! limits imply, the parameters they do not measure taken from
//! `--base-profile` (default h100): `gpu-mpi-bench limits --backend cuda
//! --write-profile my-gpu.profile` models one's own card (docs/model.md,
//! "Modelling your own card").

use gpu_mpi_bench as bench;

use bench::{Options, Suite};
use clap::{Parser, ValueEnum};
use gpu_mpi::{BackendKind, Device, Profile, RankCount};
use gpu_mpi_provenance::Provenance;
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// MPI inside a kernel against native kernels doing the same work,
/// OSU-style, on the GPU or the CPU emulator.
///
/// Prints a table per measurement group and, with --json, writes every
/// number and the run's provenance to FILE. Exits 1 when a benchmark's own
/// correctness check fails, a launch fails or the backend cannot be opened;
/// 2 on a usage error. See docs/performance.md.
#[derive(Debug, Parser, Serialize)]
#[command(name = "gpu-mpi-bench", version)]
struct Cli {
    /// The suites to run, in order (all: every suite).
    #[arg(required = true, value_enum)]
    suites: Vec<SuiteName>,
    /// cpu (the emulator), cuda (an NVIDIA GPU) or auto (the GPU when
    /// usable, else the emulator).
    #[arg(long, value_name = "auto|cpu|cuda", default_value = "auto", value_parser = parse_backend)]
    #[serde(serialize_with = "display")]
    backend: BackendKind,
    /// Also write the results to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// World size (default: the largest every kernel fits on a GPU, 1024 on
    /// the emulator).
    #[arg(long, value_name = "N|max", value_parser = parse_ranks)]
    #[serde(serialize_with = "ranks")]
    ranks: Option<RankCount>,
    /// Few points, few iterations.
    #[arg(long)]
    quick: bool,
    /// Launches per measurement, the median is reported (default 5, 3 with
    /// --quick).
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// Step of the intervals per rank in the pi suite.
    #[arg(long, value_name = "K", default_value_t = 2)]
    pi_step: u32,
    /// Overrides the timed iterations of every in-kernel loop.
    #[arg(long, value_name = "N")]
    iterations: Option<u32>,
    /// Skip the pi suite's run at the thesis's scale (4096 ranks in blocks
    /// of 128).
    #[arg(long)]
    no_thesis_scale: bool,
    /// On the emulator: run every suite a second time in timing mode on
    /// this profile (h100, h200 or a profile file; default GPU_MPI_MODEL)
    /// and print the modelled figures beside the wall ones (docs/model.md).
    #[arg(long, value_name = "h100|h200|FILE")]
    model: Option<String>,
    /// Write the timing-model profile the measured physical limits imply
    /// to FILE (on the emulator with --model: the model's own costs
    /// measured back). docs/model.md, "Modelling your own card".
    #[arg(long, value_name = "FILE")]
    write_profile: Option<PathBuf>,
    /// The profile the written one takes the parameters the limits do not
    /// measure from.
    #[arg(
        long,
        value_name = "h100|h200|FILE",
        default_value = "h100",
        requires = "write_profile"
    )]
    base_profile: String,
    /// The written profile's name (default: the device's).
    #[arg(long, value_name = "NAME", requires = "write_profile")]
    profile_name: Option<String>,
}

/// A suite on the command line.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum SuiteName {
    Limits,
    Pi,
    Latency,
    Bw,
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    #[value(name = "reduce_scatter")]
    #[serde(rename = "reduce_scatter")]
    ReduceScatter,
    Scan,
    Ibarrier,
    Iallreduce,
    Varcount,
    Scale,
    Ddt,
    Rma,
    All,
}

fn parse_backend(s: &str) -> Result<BackendKind, gpu_mpi::ParseBackendKindError> {
    s.parse()
}

/// `N` or `max`.
fn parse_ranks(s: &str) -> Result<RankCount, String> {
    if s == "max" {
        return Ok(RankCount::Max);
    }
    s.parse()
        .map(RankCount::Exact)
        .map_err(|e| format!("{s:?} is neither a number of ranks nor max ({e})"))
}

fn display<S: Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// A number, "max" or null.
fn ranks<S: Serializer>(r: &Option<RankCount>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        None => s.serialize_none(),
        Some(RankCount::Exact(n)) => s.serialize_u32(*n),
        Some(RankCount::Max) => s.serialize_str("max"),
    }
}

/// The profile `name` names (a shipped one or a file) for `flag`.
fn profile(flag: &str, name: &str) -> Result<&'static Profile, String> {
    if let Some(p) = Profile::named(name) {
        return Ok(p);
    }
    Profile::load(Path::new(name))
        .map(Profile::leak)
        .map_err(|e| format!("{flag} {name}: expected h100, h200 or a profile file ({e})"))
}

impl Cli {
    /// The library's options.
    fn options(&self) -> Result<Options, String> {
        let suites = self
            .suites
            .iter()
            .flat_map(|s| {
                let name = s.to_possible_value().expect("no suite is skipped");
                Suite::parse(name.get_name()).expect("every suite name parses")
            })
            .collect();
        Ok(Options {
            suites,
            ranks: self.ranks,
            quick: self.quick,
            reps: self.reps.unwrap_or(if self.quick { 3 } else { 5 }).max(1),
            pi_step: self.pi_step.max(1),
            thesis_scale: !self.no_thesis_scale,
            iterations: self.iterations.map(|n| n.max(1)),
            model: self.model.as_deref().map(|m| profile("--model", m)).transpose()?,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let base = match (&cli.write_profile, profile("--base-profile", &cli.base_profile)) {
        (Some(_), Err(e)) => Err(e),
        (_, base) => Ok(base.ok()),
    };
    let (options, base) = match cli.options().and_then(|o| Ok((o, base?))) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
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
    let commit = env!("GPU_MPI_COMMIT");
    let program = concat!("gpu-mpi-bench ", env!("CARGO_PKG_VERSION"));
    // Taken before the run: its date is when the run started.
    let provenance = Provenance::new(&device, program, commit, &cli);
    let provenance_date = provenance.as_ref().ok().map(|p| p.date.clone());
    let report = match bench::run(&device, &options, true) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("\nerror: benchmark FAILED: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &cli.json {
        let written = provenance
            .and_then(|p| report.json(&p))
            .map_err(std::io::Error::from)
            .and_then(|text| std::fs::write(path, text));
        if let Err(e) = written {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    if let (Some(path), Some(base)) = (&cli.write_profile, base) {
        let written = write_profile(&cli, &device, &report, base, provenance_date.as_deref());
        if let Err(e) = std::fs::write(path, written.text) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!(
            "wrote {}: the profile \"{}\", {} of its {} parameters measured (docs/model.md)",
            path.display(),
            written.profile.name,
            written.measured.len(),
            written.profile.entries().count()
        );
    }
    ExitCode::SUCCESS
}

/// The profile `report`'s limits imply, with a header saying where they
/// come from.
fn write_profile(
    cli: &Cli,
    device: &Device,
    report: &bench::Report,
    base: &Profile,
    date: Option<&str>,
) -> bench::WrittenProfile {
    let described = device.describe().name;
    let (name, what) = match (&report.model, report.backend) {
        (Some(m), _) => (
            format!("{} (measured back on the emulator)", m.profile.name),
            format!(
                "the CPU emulator in timing mode on {}: the model's own costs measured back, not a GPU's",
                m.profile.name
            ),
        ),
        (None, "cpu") => (
            "CPU emulator (wall time)".to_string(),
            format!("{described}, in wall time: not a GPU's (only a trial of the format)"),
        ),
        (None, _) => (described.clone(), described),
    };
    let header = [
        format!(
            "Written by gpu-mpi-bench {} limits --write-profile (commit {}){}",
            env!("CARGO_PKG_VERSION"),
            env!("GPU_MPI_COMMIT"),
            date.map_or(String::new(), |d| format!(", {d}"))
        ),
        format!("from the physical limits measured on {what};"),
        format!(
            "{} ranks, {}{}. docs/model.md, \"Modelling your own card\".",
            report.ranks,
            if report.model.is_some() {
                "one launch per measurement (modelled time is deterministic)".to_string()
            } else {
                format!("the median of {} launches per measurement", report.options.reps)
            },
            if report.options.quick { ", --quick" } else { "" }
        ),
    ];
    let label = if Profile::named(&cli.base_profile).is_some() {
        cli.base_profile.to_ascii_lowercase()
    } else {
        format!("from {}", cli.base_profile)
    };
    report.profile_limits().profile(
        cli.profile_name.as_deref().unwrap_or(&name),
        base,
        &label,
        &header,
    )
}
