//! A token goes around every rank `--laps` times; each rank adds its rank.
//!
//! `cargo run --release --bin ring -- [--backend auto|cpu|cuda] [--ranks N|max] [--laps K]`

use gpu_mpi_examples_common as common;

use gpu_mpi_example_ring_kernels::{RingArgs, RING};
use std::process::ExitCode;

/// The kernel, built by build.rs: PTX and SASS per SM.
static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();

fn main() -> ExitCode {
    let cli = match common::parse(1024, "--laps", 3) {
        Ok(c) => c,
        Err(e) => return common::fail(e),
    };
    let run =
        || -> Result<(u64, gpu_mpi::LaunchReport, gpu_mpi::ProcessPlace), Box<dyn std::error::Error>> {
            let device = common::open(&cli, &KERNELS)?;
            let result = device.alloc_zeroed::<u64>(1)?;
            let args = RingArgs {
                laps: cli.count,
                reserved: 0,
                result: result.slice(),
            };
            let report = device.launch(&RING, &args, &common::spec(&cli))?;
            common::write_trace(&device, &report, "ring")?;
            Ok((device.download(&result)?[0], report, device.process()))
        };
    match run() {
        // A world across processes (docs/distributed.md): rank 0, on
        // process 0, holds the token.
        Ok((_, _, process)) if !process.is_first() => ExitCode::SUCCESS,
        Ok((token, report, _)) => {
            let n = report.ranks as u64;
            let expected = cli.count as u64 * n * (n - 1) / 2;
            println!(
                "token={token} expected={expected} ranks={} backend={}",
                report.ranks, report.backend
            );
            if token == expected {
                ExitCode::SUCCESS
            } else {
                common::fail("the token does not hold the sum of all ranks")
            }
        }
        Err(e) => common::fail(e),
    }
}
