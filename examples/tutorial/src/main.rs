//! The tutorial's chapters (docs/tutorial/): each launches its kernel,
//! checks what the ranks recorded and prints what the chapter quotes.
//!
//! `cargo run --release --bin tutorial -- <1-9|name|all> [--backend cpu|cuda|auto]`
//!
//! Exit status: 0 when every chapter run passed its checks, 1 when one
//! failed, 2 on a usage error.

use gpu_mpi::BackendKind;
use gpu_mpi_example_tutorial::{chapter_number, run, CHAPTERS};
use std::io::Write;
use std::process::ExitCode;

fn usage() -> ExitCode {
    let names: Vec<String> = CHAPTERS
        .iter()
        .map(|(n, name, _)| format!("{n} {name}"))
        .collect();
    eprintln!(
        "usage: tutorial <chapter|all> [--backend cpu|cuda|auto]\nchapters: {}",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut chapters = Vec::new();
    let mut backend = BackendKind::Cpu;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backend" => match args.next().map(|v| v.parse::<BackendKind>()) {
                Some(Ok(b)) => backend = b,
                _ => return usage(),
            },
            "all" => chapters.extend(CHAPTERS.iter().map(|c| c.0)),
            name => match chapter_number(name) {
                Some(n) => chapters.push(n),
                None => return usage(),
            },
        }
    }
    if chapters.is_empty() {
        return usage();
    }
    let several = chapters.len() > 1;
    let mut failed = false;
    // A closed pipe (`tutorial all | head`) ends the output, not the checks.
    let mut stdout = std::io::stdout().lock();
    for n in chapters {
        if several {
            let _ = writeln!(stdout, "== chapter {n}: {}", CHAPTERS[n as usize - 1].2);
        }
        let outcome = run(n, backend);
        let _ = stdout.write_all(outcome.output.as_bytes());
        let _ = stdout.flush();
        if let Some(f) = outcome.failure {
            eprintln!("error: chapter {n}: {f}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
