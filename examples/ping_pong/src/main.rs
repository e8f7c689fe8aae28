//! Rank 0 and the last rank bounce a message `--iterations` times; the peer
//! adds 1 to every byte and rank 0 checks each reply.
//!
//! `cargo run --release --bin ping_pong -- [--backend auto|cpu|cuda] [--ranks N|max] [--bytes B]`

use gpu_mpi_examples_common as common;

use gpu_mpi_example_ping_pong_kernels::{PingPongArgs, PING_PONG};
use std::process::ExitCode;

/// The kernel, built by build.rs: PTX and SASS per SM.
static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();

const ITERATIONS: u32 = 100;

fn main() -> ExitCode {
    let cli = match common::parse(64, "--bytes", 4096) {
        Ok(c) => c,
        Err(e) => return common::fail(e),
    };
    let run = || -> Result<(u64, gpu_mpi::LaunchReport), Box<dyn std::error::Error>> {
        let device = common::open(&cli, &KERNELS)?;
        let spec = common::spec(&cli);
        // The peer is the last rank, so `max` is resolved before the launch.
        let ranks = device.resolve_for(&PING_PONG, &spec)?.ranks;
        let spec = gpu_mpi::WorldSpec {
            ranks: gpu_mpi::RankCount::Exact(ranks),
            ..spec
        };
        let buffers = device.alloc_zeroed::<u8>(2 * cli.count as usize)?;
        let result = device.alloc_zeroed::<u64>(1)?;
        let args = PingPongArgs {
            peer: ranks - 1,
            bytes: cli.count,
            iterations: ITERATIONS,
            reserved: 0,
            buffers: buffers.slice(),
            result: result.slice(),
        };
        let report = device.launch(&PING_PONG, &args, &spec)?;
        common::write_trace(&device, &report, "ping_pong")?;
        Ok((device.download(&result)?[0], report))
    };
    match run() {
        Ok((good, report)) => {
            // In timing mode the modelled kernel time, else the wall time.
            let kernel_s = report
                .model
                .as_ref()
                .map_or(report.elapsed.as_secs_f64(), |m| m.kernel_ns() / 1e9);
            let per_trip = kernel_s / ITERATIONS as f64;
            println!(
                "round_trips_ok={good}/{ITERATIONS} bytes={} launch_per_round_trip_us={:.2} ranks={} backend={}",
                cli.count,
                per_trip * 1e6,
                report.ranks,
                report.backend
            );
            if good == ITERATIONS as u64 {
                ExitCode::SUCCESS
            } else {
                common::fail("some replies were wrong")
            }
        }
        Err(e) => common::fail(e),
    }
}
