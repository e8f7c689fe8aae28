//! Pi estimation, thesis figure 5.17: the partial sums are reduced to rank 0.
//!
//! `cargo run --release --example pi_reduce -- [--backend auto|cpu|cuda] [--ranks N|max] [--intervals-per-rank K]`
//!
//! The last line printed is `pi=<value> error=<|value - PI|> ranks=<N> backend=<cpu|cuda>`;
//! the exit code is non-zero on any error, including an estimate that is off
//! by more than the midpoint rule's error bound.

mod common;

use gpu_mpi::kernels::pi::{PiArgs, PI_REDUCE};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match common::parse(4096, "--intervals-per-rank", 128) {
        Ok(c) => c,
        Err(e) => return common::fail(e),
    };
    let device = match common::open(&cli) {
        Ok(d) => d,
        Err(e) => return common::fail(e),
    };
    let result = match device.alloc_zeroed::<f64>(1) {
        Ok(b) => b,
        Err(e) => return common::fail(e),
    };
    let args = PiArgs {
        intervals_per_rank: cli.count,
        reserved: 0,
        result: result.slice(),
    };
    let report = match device.launch(&PI_REDUCE, &args, &common::spec(&cli)) {
        Ok(r) => r,
        Err(e) => return common::fail(e),
    };
    let pi = match device.download(&result) {
        Ok(v) => v[0],
        Err(e) => return common::fail(e),
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
        return common::fail(format!("estimate off by {error:e}"));
    }
    ExitCode::SUCCESS
}
