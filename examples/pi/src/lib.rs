//! The pi example's host side: runs one of the thesis's two pi kernels
//! (`kernels/`, built to PTX and SASS by build.rs: [`KERNELS`]) with the options
//! of the command line. The binaries `pi_p2p` and `pi_reduce` call [`run_pi`].

use gpu_mpi_examples_common::{fail, open, parse, spec, write_trace};
use std::process::ExitCode;

/// The pi kernels, built by build.rs: PTX and SASS per SM.
pub static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();

/// Runs one of the pi kernels with the options of the command line and prints
/// `pi=<value> error=<|value - PI|> ranks=<N> backend=<cpu|cuda>` last.
pub fn run_pi(kernel: &gpu_mpi::device::Kernel<gpu_mpi_example_pi_kernels::PiArgs>) -> ExitCode {
    let cli = match parse(4096, "--intervals-per-rank", 128) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let run =
        || -> Result<(f64, gpu_mpi::LaunchReport, gpu_mpi::ProcessPlace), Box<dyn std::error::Error>> {
            let device = open(&cli, &KERNELS)?;
            let result = device.alloc_zeroed::<f64>(1)?;
            let args = gpu_mpi_example_pi_kernels::PiArgs {
                intervals_per_rank: cli.count,
                reserved: 0,
                result: result.slice(),
            };
            let report = device.launch(kernel, &args, &spec(&cli))?;
            write_trace(&device, &report, kernel.name)?;
            Ok((device.download(&result)?[0], report, device.process()))
        };
    let (pi, report, process) = match run() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if !process.is_first() {
        // A world across processes (docs/distributed.md): rank 0, on
        // process 0, holds the estimate.
        return ExitCode::SUCCESS;
    }
    let error = (pi - std::f64::consts::PI).abs();
    eprintln!(
        "{} ranks in {} blocks of {} on {}: {:.3} ms{}",
        report.ranks,
        report.blocks,
        report.block_dim,
        report.backend,
        report.elapsed.as_secs_f64() * 1e3,
        report.model.as_ref().map_or(String::new(), |m| format!(
            " (modelled on {}: {:.3} ms)",
            m.profile,
            m.kernel_ns() / 1e6
        ))
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
