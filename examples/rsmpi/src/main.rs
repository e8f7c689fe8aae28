//! Runs rsmpi's examples done in a kernel (docs/rsmpi-examples.md) and
//! checks what every rank recorded.
//!
//! `cargo run --release --bin rsmpi_examples -- <name...|all> [--backend cpu|cuda|auto] [--ranks N]`
//!
//! Without `--ranks`, each example runs in every world of
//! `gpu_mpi_example_rsmpi::WORLDS`; with it, in one world of N ranks (2 to
//! the kernels' `MAX_RANKS`) in one block. Exit status: 0 when every run passed its
//! checks, 1 when one failed, 2 on a usage error.

use gpu_mpi::BackendKind;
use gpu_mpi_example_rsmpi::{find, open, run, EXAMPLES, WORLDS};
use gpu_mpi_example_rsmpi_kernels::MAX_RANKS;
use std::process::ExitCode;

fn usage() -> ExitCode {
    let names: Vec<&str> = EXAMPLES.iter().map(|e| e.name).collect();
    eprintln!(
        "usage: rsmpi_examples <name...|all> [--backend cpu|cuda|auto] [--ranks N]\nexamples: {}",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut chosen = Vec::new();
    let mut backend = BackendKind::Cpu;
    let mut worlds = WORLDS.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backend" => match args.next().map(|v| v.parse::<BackendKind>()) {
                Some(Ok(b)) => backend = b,
                _ => return usage(),
            },
            "--ranks" => match args.next().map(|v| v.parse::<u32>()) {
                Some(Ok(n)) if (2..=MAX_RANKS as u32).contains(&n) => worlds = vec![(n, n)],
                _ => return usage(),
            },
            "all" => chosen.extend(EXAMPLES.iter()),
            name => match find(name) {
                Some(e) => chosen.push(e),
                None => return usage(),
            },
        }
    }
    if chosen.is_empty() {
        return usage();
    }
    let device = match open(backend) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot open backend {backend}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for example in chosen {
        for &(ranks, block_dim) in &worlds {
            match run(&device, example, ranks, block_dim) {
                Ok(row) => println!(
                    "{:<28} {ranks} ranks  ok  (MPI 4.1 {}) rank 0: {row:?}",
                    example.name, example.sections
                ),
                Err(e) => {
                    eprintln!("error: {e}");
                    failed = true;
                }
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
