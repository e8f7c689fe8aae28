//! Smoke test of `gpu-mpi-bench`: every suite on the cpu backend at a tiny
//! size. Checks that the benchmarks' own correctness checks pass (pi close
//! to PI, payloads, broadcasts, reductions and barriers verified inside the
//! kernels) and that the tables and the JSON are well-formed. No timing is
//! asserted anywhere: the emulator's times mean nothing.

use gpu_mpi_bench as bench;

use bench::json::Json;
use bench::{Options, Suite};
use gpu_mpi::{Device, RankCount};
use std::process::Command;

fn tiny(suites: Vec<Suite>) -> Options {
    Options {
        suites,
        ranks: Some(RankCount::Exact(64)),
        quick: true,
        reps: 2,
        pi_step: 64,
        thesis_scale: false,
        iterations: Some(3),
    }
}

/// Every number in `v` is finite or null; timing fields are not negative.
fn check_numbers(v: &Json, path: &str) {
    match v {
        Json::Num(x) => assert!(
            x.is_finite() && (*x >= 0.0 || path.ends_with("growth_ms")),
            "{path} = {x}"
        ),
        Json::Arr(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, x)| check_numbers(x, &format!("{path}[{i}]"))),
        Json::Obj(m) => m
            .iter()
            .for_each(|(k, x)| check_numbers(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

#[test]
fn every_suite_runs_and_passes_its_checks() {
    let device = Device::cpu();
    let report =
        bench::run(&device, &tiny(Suite::ALL.to_vec()), false).expect("a benchmark failed its check");
    assert_eq!(report.backend, "cpu");
    assert!(
        report.checked_launches >= 50,
        "only {} launches checked",
        report.checked_launches
    );

    // Every suite produced a table with rows, every printed column is in
    // every row, and the text rendering has a line per row.
    for suite in [
        "limits",
        "pi",
        "latency",
        "bw",
        "barrier",
        "bcast",
        "reduce",
        "allreduce",
        "scale",
        "ddt",
    ] {
        let sections: Vec<_> = report.sections.iter().filter(|s| s.suite == suite).collect();
        assert!(!sections.is_empty(), "no table for {suite}");
        for s in sections {
            assert!(!s.rows.is_empty(), "{}: no rows", s.title);
            for row in &s.rows {
                for (key, _) in &s.columns {
                    assert!(
                        row.iter().any(|(k, _)| k == key),
                        "{}: a row lacks {key}",
                        s.title
                    );
                }
            }
            let text = s.text();
            assert!(text.lines().count() > s.rows.len(), "{text}");
        }
    }

    // The pi estimates were checked against PI by the bench; the worst
    // error is reported and small.
    for s in report
        .sections
        .iter()
        .filter(|s| s.suite == "pi" && s.title.starts_with("pi,"))
    {
        for row in &s.rows {
            let err = row
                .iter()
                .find(|(k, _)| *k == "max_error")
                .and_then(|(_, v)| v.as_f64())
                .unwrap();
            assert!(err < 1e-4, "pi error {err}");
        }
    }

    // Each suite compares with its native baseline: every ratio is there.
    let ratios = report
        .sections
        .iter()
        .flat_map(|s| s.rows.iter())
        .flat_map(|r| r.iter())
        .filter(|(k, _)| k.starts_with("ratio"))
        .count();
    assert!(ratios > 20, "{ratios} ratios");

    // The JSON round-trips through the parser and has the documented shape.
    let text = report.json().pretty();
    let json = Json::parse(&text).expect("the report's JSON does not parse");
    assert_eq!(json.get("schema").and_then(Json::as_str), Some(bench::SCHEMA));
    assert_eq!(json.get("backend").and_then(Json::as_str), Some("cpu"));
    assert_eq!(json.get("emulator"), Some(&Json::Bool(true)));
    let limits = json.get("limits").unwrap();
    for key in [
        "copy_gbps",
        "atomic_round_trip_ns",
        "atomic_one_way_ns",
        "atomic_rmw_ns",
    ] {
        let v = limits.get(key).and_then(Json::as_f64).unwrap_or(f64::NAN);
        assert!(v > 0.0, "limits.{key} = {v}");
    }
    let sections = json.get("sections").and_then(Json::as_array).unwrap();
    assert_eq!(sections.len(), report.sections.len());
    for s in sections {
        assert!(s
            .get("rows")
            .and_then(Json::as_array)
            .is_some_and(|r| !r.is_empty()));
    }
    let targets = json.get("targets").and_then(Json::as_array).unwrap();
    assert_eq!(targets.len(), 4, "pi (2), latency and barrier targets");
    check_numbers(&json, "$");
}

#[test]
fn the_pi_check_rejects_a_wrong_estimate() {
    assert!(bench::check_pi("x", std::f64::consts::PI + 1e-12, 64, 2).is_ok());
    let e = bench::check_pi("mpi_p2p", std::f64::consts::PI + 1e-3, 64, 128).unwrap_err();
    assert!(e.contains("mpi_p2p") && e.contains("off by"), "{e}");
    assert!(bench::check_pi("x", f64::NAN, 64, 2).is_err());
}

#[test]
fn the_binary_prints_tables_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("gpu-mpi-bench-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .args([
            "barrier",
            "reduce",
            "--backend",
            "cpu",
            "--ranks",
            "32",
            "--quick",
            "--reps",
            "1",
        ])
        .args(["--iterations", "2", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("== barrier:") && stdout.contains("== reduce:"),
        "{stdout}"
    );
    assert!(stdout.contains("not a GPU"), "the emulator is labelled: {stdout}");
    let json = Json::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let suites: Vec<&str> = json
        .get("sections")
        .and_then(Json::as_array)
        .unwrap()
        .iter()
        .filter_map(|s| s.get("suite").and_then(Json::as_str))
        .collect();
    assert_eq!(suites, ["limits", "barrier", "reduce"]);
    let _ = std::fs::remove_dir_all(&dir);

    // Bad command lines are refused.
    let bad = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .args(["nosuch", "--backend", "cpu"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_ddt_suite_checks_every_pattern() {
    let device = Device::cpu();
    let report = bench::run(&device, &tiny(vec![Suite::Ddt]), false).expect("a packed buffer was wrong");
    let section = report
        .sections
        .iter()
        .find(|s| s.suite == "ddt")
        .expect("no ddt table");
    assert_eq!(section.rows.len(), 8, "one row per pattern");
    // Every pattern's pack and unpack were compared with the reference model.
    assert!(report.checked_launches >= 16, "{}", report.checked_launches);
    for row in &section.rows {
        let units = row
            .iter()
            .find(|(k, _)| *k == "units")
            .and_then(|(_, v)| v.as_f64());
        assert!(units.is_some_and(|u| u >= 1.0), "{row:?}");
    }
}
