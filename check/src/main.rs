//! `gpu-mpi-check`: runs every MPI conformance case of
//! `gpu_mpi_check` on one backend and prints a table of the results.
//!
//! ```text
//! gpu-mpi-check [--backend cpu|cuda|auto] [--json FILE] [--filter TEXT] [--list]
//! ```
//!
//! The details of every failure print as they happen; the table (case,
//! result, time) prints last. Exit status: 0 when every case passed, 1 when
//! one failed, 2 on a usage error or a backend that cannot be opened.

use gpu_mpi::BackendKind;
use gpu_mpi_check::{cases, Case};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: gpu-mpi-check [--backend cpu|cuda|auto] [--json FILE] [--filter TEXT] [--list]

Runs the MPI conformance cases (docs/semantics.md) on one backend.
  --backend B   cpu (the emulator), cuda (an NVIDIA GPU) or auto (default:
                the GPU when usable, else the emulator)
  --json FILE   also write the results to FILE as JSON
  --filter TEXT run only the cases whose name contains TEXT
  --list        print the case names and exit";

struct Options {
    backend: BackendKind,
    json: Option<String>,
    filter: Option<String>,
    list: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        backend: BackendKind::Auto,
        json: None,
        filter: None,
        list: false,
    };
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--backend" => o.backend = value("--backend")?.parse().map_err(|e| format!("{e}"))?,
            "--json" => o.json = Some(value("--json")?),
            "--filter" => o.filter = Some(value("--filter")?),
            "--list" => o.list = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

struct Outcome {
    name: &'static str,
    result: Result<(), String>,
    time: Duration,
}

fn run_case(case: &Case, device: &gpu_mpi::Device) -> Outcome {
    let start = Instant::now();
    let result = match catch_unwind(AssertUnwindSafe(|| (case.run)(device))) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(format!("panicked: {msg}"))
        }
    };
    Outcome {
        name: case.name,
        result,
        time: start.elapsed(),
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json(backend: &str, outcomes: &[Outcome]) -> String {
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let mut s = format!(
        "{{\n  \"backend\": {},\n  \"passed\": {},\n  \"failed\": {},\n  \"cases\": [",
        json_string(backend),
        outcomes.len() - failed,
        failed
    );
    for (i, o) in outcomes.iter().enumerate() {
        let (result, message) = match &o.result {
            Ok(()) => ("pass", String::new()),
            Err(e) => ("fail", e.clone()),
        };
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        s.push_str(&format!(
            "    {{\"name\": {}, \"result\": \"{result}\", \"seconds\": {:.6}, \"message\": {}}}",
            json_string(o.name),
            o.time.as_secs_f64(),
            json_string(&message)
        ));
    }
    s.push_str("\n  ]\n}\n");
    s
}

fn table(backend: &str, outcomes: &[Outcome]) -> String {
    let width = outcomes.iter().map(|o| o.name.len()).max().unwrap_or(4).max(4);
    let mut s = format!("{:<width$}  {:<6}  {:>11}\n", "case", "result", "time");
    s.push_str(&format!("{:-<width$}  {:-<6}  {:->11}\n", "", "", ""));
    for o in outcomes {
        let result = if o.result.is_ok() { "pass" } else { "FAIL" };
        s.push_str(&format!(
            "{:<width$}  {result:<6}  {:>8.1} ms\n",
            o.name,
            o.time.as_secs_f64() * 1e3
        ));
    }
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let total: Duration = outcomes.iter().map(|o| o.time).sum();
    s.push_str(&format!(
        "{} cases on {backend}: {} passed, {failed} failed, {:.3}s\n",
        outcomes.len(),
        outcomes.len() - failed,
        total.as_secs_f64()
    ));
    s
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gpu-mpi-check: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let selected: Vec<Case> = cases()
        .into_iter()
        .filter(|c| options.filter.as_deref().is_none_or(|f| c.name.contains(f)))
        .collect();
    if options.list {
        for c in &selected {
            println!("{}", c.name);
        }
        return ExitCode::SUCCESS;
    }
    let device = match gpu_mpi_check::open(options.backend) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("gpu-mpi-check: cannot open the {} backend: {e}", options.backend);
            return ExitCode::from(2);
        }
    };
    let backend = device.backend_name();
    println!("gpu-mpi-check: {} cases on the {backend} backend", selected.len());
    let mut outcomes = Vec::new();
    for case in &selected {
        let o = run_case(case, &device);
        match &o.result {
            Ok(()) => println!("pass  {} ({:.3}s)", o.name, o.time.as_secs_f64()),
            Err(e) => {
                println!("FAIL  {} ({:.3}s)", o.name, o.time.as_secs_f64());
                for line in e.lines() {
                    println!("      {line}");
                }
            }
        }
        outcomes.push(o);
    }
    if let Some(path) = &options.json {
        if let Err(e) = std::fs::write(path, json(backend, &outcomes)) {
            eprintln!("gpu-mpi-check: writing {path}: {e}");
            return ExitCode::from(2);
        }
    }
    println!();
    print!("{}", table(backend, &outcomes));
    if outcomes.iter().any(|o| o.result.is_err()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
