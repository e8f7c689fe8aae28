//! Smoke test of `gpu-mpi-bench`: every suite on the cpu backend at a tiny
//! size. Checks that the benchmarks' own correctness checks pass (pi close
//! to PI, payloads, broadcasts, reductions and barriers verified inside the
//! kernels) and that the tables and the JSON are well-formed. No timing is
//! asserted anywhere: the emulator's times mean nothing.

use gpu_mpi_bench as bench;

use bench::{Options, Side, Suite};
use gpu_mpi::{Device, Profile, RankCount};
use gpu_mpi_provenance::Provenance;
use serde_json::Value;
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
        model: None,
    }
}

/// Every number in `v` is finite or null; timing fields are not negative.
fn check_numbers(v: &Value, path: &str) {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap();
            assert!(
                x.is_finite() && (x >= 0.0 || path.ends_with("growth_ms")),
                "{path} = {x}"
            )
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, x)| check_numbers(x, &format!("{path}[{i}]"))),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| check_numbers(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

/// The provenance of an emulator run: the device fields the emulator has,
/// null for the GPU-only ones, a commit, an RFC 3339 UTC date.
fn check_cpu_provenance(p: &Value) {
    assert_eq!(p["backend"], "cpu", "{p}");
    assert!(p["device"].as_str().unwrap().contains("emulator"), "{p}");
    assert!(p["sm_count"].as_u64().unwrap() > 0, "{p}");
    for key in [
        "compute_capability",
        "sm_clock_mhz",
        "memory_clock_mhz",
        "driver_version",
        "cuda_version",
    ] {
        assert!(p.get(key).is_some_and(Value::is_null), "{key}: {p}");
    }
    assert!(!p["commit"].as_str().unwrap().is_empty(), "{p}");
    let date = p["date"].as_str().unwrap();
    assert!(
        date.len() == 20 && date.ends_with('Z') && date.as_bytes()[10] == b'T',
        "{date}"
    );
    assert!(
        p["program"].as_str().unwrap().starts_with("gpu-mpi-bench "),
        "{p}"
    );
    assert!(p["options"].is_object(), "{p}");
}

/// The value of `key` in `row`.
fn field<'r>(row: &'r [(&'static str, Value)], key: &str) -> Option<&'r Value> {
    row.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Per-message kinds of eager messages: one release store (the slot
/// freed) in `release_stores`, exactly one ordered read-modify-write (the
/// push), `takes` relaxed swaps (a receiver takes its inbox with one, and
/// pi's rank 0 takes many messages per take), each after an acquire: an
/// acquire load (a waiting receive's poll, which counts idle polls too, so
/// unbounded above) or an acquire fence, at most two a take; the fences
/// that return slots in `return_fences` (less than one: none for a rank's
/// first `slots_per_rank` sends). Nothing else.
fn check_eager_kinds(
    kinds: &Value,
    takes: std::ops::RangeInclusive<f64>,
    release_stores: std::ops::RangeInclusive<f64>,
    return_fences: std::ops::Range<f64>,
    what: &str,
) {
    let k = |name: &str| kinds[name].as_f64().unwrap_or(f64::NAN);
    // The receiver returns a slot whose message was already queued with a
    // release store, any other with a relaxed store after one release
    // fence per batch (`slot_return::SlotReturn`).
    assert!(release_stores.contains(&k("release_stores")), "{what}: {kinds}");
    assert_eq!(k("ordered_rmws"), 1.0, "{what}: {kinds}");
    let taken = k("relaxed_rmws");
    assert!(takes.contains(&taken), "{what}: {kinds}");
    assert!(k("acquire_loads") + k("fences") >= taken, "{what}: {kinds}");
    let fences = return_fences.start..return_fences.end + 2.0 * taken;
    assert!(fences.contains(&k("fences")), "{what}: {kinds}");
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
        "gather",
        "scatter",
        "allgather",
        "alltoall",
        "reduce_scatter",
        "scan",
        "ibarrier",
        "iallreduce",
        "varcount",
        "scale",
        "ddt",
        "rma",
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

    // The non-blocking pi variant ran beside the blocking one, against the
    // same native baseline, its estimate checked like the others.
    let pi_rows: Vec<_> = report
        .sections
        .iter()
        .filter(|s| s.suite == "pi")
        .flat_map(|s| s.rows.iter())
        .collect();
    assert!(!pi_rows.is_empty());
    for row in &pi_rows {
        let num = |key: &str| field(row, key).and_then(Value::as_f64);
        assert!(num("mpi_p2p_nb_ms").is_some_and(|v| v > 0.0), "{row:?}");
        assert!(num("ratio_p2p_nb").is_some_and(|v| v > 0.0), "{row:?}");
        // Both point-to-point variants pass one eager message per rank but
        // 0: one push, rank 0's share of a take of its inbox (a relaxed
        // swap after an acquire), and the slot's return: a release store for a message rank 0 found queued (all
        // but those its own receive took from the inbox), a share of a
        // batch's fence for the others.
        for key in ["mpi_p2p_sync_per_msg", "mpi_p2p_nb_sync_per_msg"] {
            let v = num(key).unwrap_or(f64::NAN);
            assert!((1.5..2.1).contains(&v), "{key} = {v}");
        }
    }
    for key in ["mpi_p2p_sync_kinds_per_msg", "mpi_p2p_nb_sync_kinds_per_msg"] {
        let row = pi_rows.iter().find(|r| field(r, key).is_some()).unwrap();
        check_eager_kinds(field(row, key).unwrap(), 1e-9..=0.5, 0.5..=1.0, 0.0..0.5, key);
    }

    // The latency suite counts synchronising operations per message: an
    // eager ping-pong message is one push (release swap), one take of the
    // inbox (a relaxed swap, not counted as synchronising, after the
    // acquire load of the poll that saw it or an acquire fence) and the
    // fence that returns its slot when the receiver next waits (each rank
    // waits after every message, and its own receive took the message from
    // the inbox: no release store), plus a reclaim fence per slots-full of
    // messages; and the acquire load of every idle poll, as many as the
    // schedule makes, left out of the bound.
    let latency = report.sections.iter().find(|s| s.suite == "latency").unwrap();
    for row in &latency.rows {
        let bytes = field(row, "bytes").and_then(Value::as_u64).unwrap();
        let total = field(row, "mpi_sync_per_msg").and_then(Value::as_f64).unwrap();
        assert!(total >= 3.0, "{bytes} B: {total} sync ops per message");
        let kinds = field(row, "mpi_sync_kinds_per_msg").unwrap();
        if bytes <= 8 {
            check_eager_kinds(kinds, 1.0..=1.0, 0.0..=0.0, 1.0..2.0, "latency");
            let polls = kinds["acquire_loads"].as_f64().unwrap_or(f64::NAN);
            assert!(total - polls <= 3.0, "{bytes} B: {total}, {polls} of them polls");
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

    // The kernels table: the build's ptxas report for its highest SM, or
    // why there is none.
    let kernels = report
        .sections
        .iter()
        .find(|s| s.suite == "kernels")
        .expect("a kernels table");
    // A build without kernels, or one whose ptxas did not run (no driver:
    // `GPU_MPI_SASS`), has no rows, and says why.
    if bench::KERNELS.ptxas_report.contains("spill-ld") {
        let pi = kernels
            .rows
            .iter()
            .find(|r| r[0].1 == "pi_p2p")
            .expect("the pi_p2p kernel in the kernels table");
        let ranks = pi
            .iter()
            .find(|(k, _)| *k == "ranks_per_sm")
            .map(|(_, v)| v.as_u64());
        assert!(matches!(ranks, Some(Some(256..=2048))), "{pi:?}");
    } else {
        assert!(kernels.rows.is_empty());
        assert!(
            kernels.notes.iter().any(|n| n.starts_with("no ptxas report")),
            "{:?}",
            kernels.notes
        );
    }

    // The JSON parses back and has the documented shape, its values those
    // of the report.
    let provenance = Provenance::new(
        &device,
        "gpu-mpi-bench test",
        "abc123",
        &serde_json::json!({"suites": ["all"]}),
    )
    .unwrap();
    let text = report.json(&provenance).unwrap();
    let json: Value = serde_json::from_str(&text).expect("the report's JSON does not parse");
    assert_eq!(json["schema"], bench::SCHEMA);
    assert_eq!(json["backend"], "cpu");
    assert_eq!(json["emulator"], true);
    assert_eq!(json["ranks"], 64);
    assert_eq!(json["checked_launches"], report.checked_launches);
    assert_eq!(
        json["options"]["suites"].as_array().unwrap().len(),
        Suite::ALL.len()
    );
    assert_eq!(json["options"]["reps"], 2);
    assert_eq!(json["options"]["iterations"], 3);
    assert_eq!(json["options"]["thesis_scale"], false);
    let limits = &json["limits"];
    for key in [
        "copy_gbps",
        "atomic_round_trip_ns",
        "atomic_one_way_ns",
        "atomic_rmw_ns",
    ] {
        let v = limits[key].as_f64().unwrap_or(f64::NAN);
        assert!(v > 0.0, "limits.{key} = {v}");
    }
    assert_eq!(limits["copy_gbps"].as_f64(), Some(report.limits.copy_gbps));
    let sections = json["sections"].as_array().unwrap();
    assert_eq!(sections.len(), report.sections.len());
    for (s, section) in sections.iter().zip(&report.sections) {
        assert_eq!(s["suite"], section.suite);
        assert_eq!(s["title"], section.title.as_str());
        let keys: Vec<&str> = section.columns.iter().map(|(k, _)| *k).collect();
        assert_eq!(s["columns"], serde_json::json!(keys));
        let rows = s["rows"].as_array().unwrap();
        assert_eq!(rows.len(), section.rows.len());
        for (r, row) in rows.iter().zip(&section.rows) {
            // Every key, in the row's order.
            let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
            let expected: Vec<&str> = row.iter().map(|(k, _)| *k).collect();
            assert_eq!(keys, expected, "{}", section.title);
        }
    }
    // Issue 29's targets, each from its suite's 8-byte row (the quick run
    // has no 1 MiB message: no bandwidth target of one pair), the scale
    // suite's over its worlds; then rma's.
    let targets = json["targets"].as_array().unwrap();
    let names: Vec<&str> = report.targets.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "pi reduce / best native (avg over points)",
            "pi p2p / native two-kernel (avg over points)",
            "pi p2p non-blocking / native two-kernel (avg over points)",
            "8-byte one-way latency, other block (SM)",
            "8-byte message rate, many pairs: time / native",
            "MPI barrier / native grid barrier",
            "8-byte broadcast / native",
            "8-byte reduce / native single pass",
            "8-byte all-reduce",
            "8-byte gather / native",
            "8-byte scatter / native",
            "8-byte all-gather / native",
            "8-byte all-to-all / native",
            "8-byte all-to-all in place / native",
            "MPI_Ibarrier + wait / native grid barrier",
            "8-byte MPI_Iallreduce + wait",
            "gatherv of 8 and 16 bytes / native",
            "scatterv of 8 and 16 bytes / native",
            "all-gatherv of 8 and 16 bytes / native",
            "all-to-allv of 8 and 16 bytes / native",
            "all-to-allv in place of 8 and 16 bytes / native",
            "MPI barrier / native grid barrier, worst world",
            "8-byte broadcast / native, worst world",
            "8-byte reduce / native single pass, worst world",
            "8-byte all-reduce, largest world",
            "8-byte gather / native, worst world",
            "8-byte scatter / native, worst world",
            "8-byte all-gather / native, worst world",
            "8-byte all-to-all / native, worst world",
            "8-byte all-to-all in place / native, worst world",
            "gatherv of 8 and 16 bytes / native, worst world",
            "scatterv of 8 and 16 bytes / native, worst world",
            "all-gatherv of 8 and 16 bytes / native, worst world",
            "all-to-allv of 8 and 16 bytes / native, worst world",
            "all-to-allv in place of 8 and 16 bytes / native, worst world",
            "MPI_Ibarrier + wait / native grid barrier, worst world",
            "8-byte MPI_Iallreduce + wait, largest world",
            "notified 8-byte put / native flag hand-off",
            "put time / native copy time, largest block",
            "fence / world barrier",
        ]
    );
    assert_eq!(targets.len(), names.len());
    for (t, target) in targets.iter().zip(&report.targets) {
        assert_eq!(t["name"], target.name);
        assert_eq!(t["value"].as_f64(), Some(target.value));
        assert_eq!(t["bound"].as_f64(), Some(target.bound));
        assert_eq!(t["side"], target.side.text());
        assert_eq!(t["met"], target.met());
    }
    // The table's 8-byte broadcast row is the target's value.
    let bcast = report.sections.iter().find(|s| s.suite == "bcast").unwrap();
    let num = |row: &[(&'static str, Value)], key: &str| field(row, key).and_then(Value::as_f64);
    let row = bcast.rows.iter().find(|r| num(r, "bytes") == Some(8.0)).unwrap();
    assert_eq!(Some(report.targets[6].value), num(row, "ratio"));
    assert_eq!(
        (report.targets[6].bound, report.targets[6].side),
        (1.5, Side::AtMost)
    );
    // The scale suite's gather target is its worst world's ratio, its
    // all-reduce target the largest world's time.
    let scale = report.sections.iter().find(|s| s.suite == "scale").unwrap();
    let of = |op: &'static str| {
        scale
            .rows
            .iter()
            .filter(move |r| field(r, "op").and_then(Value::as_str) == Some(op))
    };
    let worst = of("gather").filter_map(|r| num(r, "ratio")).fold(0.0, f64::max);
    assert_eq!(report.targets[25].name, "8-byte gather / native, worst world");
    assert_eq!(report.targets[25].value, worst);
    assert!(of("gather").count() >= 2, "{:?}", scale.rows);
    let largest = of("allreduce").next_back().and_then(|r| num(r, "mpi_avg_us"));
    assert_eq!(Some(report.targets[24].value), largest);
    assert_eq!(report.targets[24].unit, "us");
    // The scale suite runs the varcount forms too, each target its worst
    // world's ratio.
    let worst_of = |op: &'static str| of(op).filter_map(|r| num(r, "ratio")).fold(0.0, f64::max);
    for (i, op) in [
        "gatherv",
        "scatterv",
        "allgatherv",
        "alltoallv",
        "alltoallv_in_place",
    ]
    .into_iter()
    .enumerate()
    {
        assert!(of(op).count() >= 1, "no {op} row in {:?}", scale.rows);
        assert_eq!(report.targets[30 + i].value, worst_of(op), "{op}");
        assert!(report.targets[30 + i]
            .name
            .ends_with("of 8 and 16 bytes / native, worst world"));
    }
    // The varcount tables: one per form, each target its 8-byte row's ratio.
    let varcount: Vec<_> = report.sections.iter().filter(|s| s.suite == "varcount").collect();
    assert_eq!(varcount.len(), 5);
    for (i, s) in varcount.iter().enumerate() {
        let row = s.rows.iter().find(|r| num(r, "bytes") == Some(8.0)).unwrap();
        assert_eq!(
            Some(report.targets[16 + i].value),
            num(row, "ratio"),
            "{}",
            s.title
        );
        assert!(report.targets[16 + i]
            .name
            .contains(" of 8 and 16 bytes / native"));
    }
    let p = &json["provenance"];
    assert_eq!(
        (&p["commit"], &p["program"]),
        (&"abc123".into(), &"gpu-mpi-bench test".into())
    );
    assert_eq!(p["options"]["suites"][0], "all");
    check_cpu_provenance(p);
    check_numbers(&json, "$");
}

/// Every `model_` value of `report`, by table, row and key.
fn modelled_values(report: &bench::Report) -> Vec<(String, usize, &'static str, Value)> {
    let mut out = Vec::new();
    for s in &report.sections {
        for (i, row) in s.rows.iter().enumerate() {
            for (k, v) in row {
                if k.starts_with("model_") {
                    out.push((s.title.clone(), i, *k, v.clone()));
                }
            }
        }
    }
    out
}

/// With a profile, every suite runs on the emulator for wall time and in
/// timing mode: every measured value of every table has its modelled twin
/// right after it, every printed one a `model` column beside it; the
/// modelled values are positive and the same in two runs (modelled time
/// is a function of the program, the world and the profile).
#[test]
fn model_columns_stand_beside_the_wall_ones_positive_and_deterministic() {
    let options = Options {
        model: Some(Profile::h100()),
        ..tiny(Suite::ALL.to_vec())
    };
    let device = Device::cpu();
    let a = bench::run(&device, &options, false).expect("a benchmark failed its check");
    let m = a.model.as_ref().expect("a timing-mode pass");
    assert_eq!(m.profile, Profile::h100());
    // The modelled flag round trip and dependent RMW: the profile's costs
    // (docs/model.md, "Measured against modelled").
    assert!(
        (m.limits.atomic_round_trip_ns - 1076.0).abs() < 1.0,
        "{:?}",
        m.limits
    );
    assert!((m.limits.atomic_rmw_ns - 248.0).abs() < 1.0, "{:?}", m.limits);
    assert_eq!(m.targets.len(), a.targets.len());
    // The `kernels` table measures nothing: it reads the ptxas report.
    for s in a.sections.iter().filter(|s| s.suite != "kernels") {
        let measured: Vec<&str> = s
            .rows
            .iter()
            .flat_map(|r| r.iter().map(|(k, _)| *k))
            .filter(|k| bench::is_measured(k))
            .collect();
        assert!(!measured.is_empty(), "{}: nothing measured", s.title);
        for row in &s.rows {
            for (i, (key, value)) in row.iter().enumerate() {
                if !bench::is_measured(key) || key.starts_with("model_") {
                    continue;
                }
                let (twin, modelled) = &row[i + 1];
                assert_eq!(*twin, bench::model_key(key), "{}: {key}", s.title);
                if value.is_null() {
                    continue;
                }
                let v = modelled.as_f64().unwrap_or(f64::NAN);
                // A growth is a difference of times (pi's compute costs
                // nothing in the model: docs/model.md).
                let positive = v > 0.0 || (key.ends_with("growth_ms") && v == 0.0);
                assert!(v.is_finite() && positive, "{}: {twin} = {modelled}", s.title);
            }
        }
        // Each printed time or ratio has its `model` column next to it.
        let printed: Vec<&str> = s.columns.iter().map(|(k, _)| *k).collect();
        let twins = s.columns.iter().filter(|(_, h)| *h == "model").count();
        assert!(twins >= 1, "{}: no model column", s.title);
        for (i, (key, header)) in s.columns.iter().enumerate() {
            if *header == "model" {
                assert_eq!(*key, bench::model_key(printed[i - 1]), "{}", s.title);
            }
        }
        let text = s.text();
        assert!(text.contains("model") && text.contains(&m.profile.name), "{text}");
    }
    let b = bench::run(&device, &options, false).expect("a benchmark failed its check");
    let (va, vb) = (modelled_values(&a), modelled_values(&b));
    assert!(va.len() > 100, "{} modelled values", va.len());
    assert_eq!(va.len(), vb.len());
    let differ: Vec<_> = va.iter().zip(&vb).filter(|(x, y)| x != y).collect();
    assert!(
        differ.is_empty(),
        "two runs modelled {} values differently, e.g. {:?}",
        differ.len(),
        &differ[..differ.len().min(4)]
    );
    let limits = |r: &bench::Report| r.model.as_ref().map(|m| m.limits.copy_gbps);
    assert_eq!(limits(&a), limits(&b));

    // The JSON carries both: the old members as before, the rows' twins,
    // and the model object with the profile's parameters.
    let provenance = Provenance::new(&device, "gpu-mpi-bench test", "abc123", &options.suites.len()).unwrap();
    let json: Value = serde_json::from_str(&b.json(&provenance).unwrap()).unwrap();
    let model = &json["model"];
    assert_eq!(model["profile"], Profile::h100().name.as_str());
    assert_eq!(model["parameters"]["load_ns"], Profile::h100().load_ns);
    assert_eq!(model["launches_per_point"], bench::MODEL_REPS);
    assert!(model["limits"]["atomic_rmw_ns"].as_f64().unwrap() > 0.0);
    assert_eq!(model["targets"].as_array().unwrap().len(), 40);
    let latency = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["suite"] == "latency")
        .unwrap();
    let row = &latency["rows"][0];
    for key in [
        "mpi_us",
        "model_mpi_us",
        "native_us",
        "model_native_us",
        "ratio",
        "model_ratio",
    ] {
        assert!(row[key].as_f64().unwrap() > 0.0, "{key}: {row}");
    }
    check_numbers(&json, "$");
}

#[test]
fn without_a_model_there_are_no_model_columns() {
    let report =
        bench::run(&Device::cpu(), &tiny(vec![Suite::Barrier]), false).expect("a benchmark failed its check");
    assert!(report.model.is_none());
    assert!(modelled_values(&report).is_empty());
    assert!(report
        .sections
        .iter()
        .all(|s| s.columns.iter().all(|(_, h)| *h != "model")));
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
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let suites: Vec<&str> = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["suite"].as_str())
        .collect();
    // The barrier suite's second section: the native barrier's variants.
    assert_eq!(suites, ["limits", "kernels", "barrier", "barrier", "reduce"]);
    let variants = &json["sections"][3];
    assert!(
        variants["title"]
            .as_str()
            .unwrap()
            .starts_with("barrier variants"),
        "{variants}"
    );
    let names: Vec<&str> = variants["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "native",
            "returning acq_rel add",
            "4 relaxed stores per rank",
            "both"
        ]
    );
    for r in variants["rows"].as_array().unwrap() {
        assert!(r["avg_us"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(json["schema"], bench::SCHEMA);
    assert_eq!(json["ranks"], 32);
    assert_eq!(json["options"]["reps"], 1);
    // The provenance: this build's commit and the command line as parsed.
    let p = &json["provenance"];
    check_cpu_provenance(p);
    assert_ne!(p["commit"], "", "{p}");
    let o = &p["options"];
    assert_eq!(o["suites"], serde_json::json!(["barrier", "reduce"]), "{o}");
    assert_eq!(
        (
            &o["backend"],
            &o["ranks"],
            &o["quick"],
            &o["reps"],
            &o["iterations"]
        ),
        (&"cpu".into(), &32.into(), &true.into(), &1.into(), &2.into()),
        "{o}"
    );
    assert_eq!(o["json"], file.to_str().unwrap(), "{o}");
    assert_eq!(o["no_thesis_scale"], false, "{o}");
    assert!(json["model"].is_null(), "no model without --model");

    // --model h100: the same tables with `model` columns, the model in the
    // JSON and in the recorded options.
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .args([
            "barrier",
            "--backend",
            "cpu",
            "--ranks",
            "32",
            "--quick",
            "--reps",
            "1",
        ])
        .args(["--iterations", "2", "--model", "h100", "--json"])
        .arg(&file)
        .env_remove("GPU_MPI_MODEL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The model column beside the wall one (columns are as wide as their
    // values, so the spacing varies).
    assert!(
        stdout.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.windows(4).any(|w| w == ["mpi", "avg", "us", "model"])
        }),
        "{stdout}"
    );
    assert!(stdout.contains("modelled on NVIDIA H100"), "{stdout}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["model"]["profile"], Profile::h100().name.as_str());
    assert_eq!(json["provenance"]["options"]["model"], "h100");
    let barrier = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["suite"] == "barrier")
        .expect("a barrier table");
    let row = &barrier["rows"][0];
    assert!(row["model_mpi_avg_us"].as_f64().unwrap() > 0.0, "{row}");
    let _ = std::fs::remove_dir_all(&dir);

    // Bad command lines are refused with a usage error.
    for args in [
        &["nosuch", "--backend", "cpu"][..],
        &["--backend", "cpu"],
        &["pi", "--backend", "tpu"],
        &["pi", "--ranks", "many"],
        &["pi", "--reps"],
        &["pi", "--nosuch"],
        &["pi", "--backend", "cpu", "--model", "/no/such.profile"],
    ] {
        let bad = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&bad.stderr).starts_with("error:"),
            "{args:?}"
        );
    }
}

#[test]
fn the_help_names_every_flag_and_suite() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--backend",
        "--json",
        "--ranks",
        "--quick",
        "--reps",
        "--pi-step",
        "--iterations",
        "--no-thesis-scale",
        "--model",
        "--write-profile",
        "--base-profile",
        "--profile-name",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    for suite in [
        "limits",
        "pi",
        "latency",
        "bw",
        "barrier",
        "bcast",
        "reduce",
        "allreduce",
        "gather",
        "reduce_scatter",
        "iallreduce",
        "scale",
        "ddt",
        "rma",
        "all",
    ] {
        assert!(help.contains(suite), "{suite}: {help}");
    }
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
    let titles: Vec<&str> = report
        .sections
        .iter()
        .filter(|s| s.suite == "ddt")
        .map(|s| s.title.as_str())
        .collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    let tiles = report
        .sections
        .iter()
        .find(|s| s.title.starts_with("ddt tiles"))
        .expect("no tiles table");
    assert_eq!(tiles.rows.len(), 4);
    for row in &tiles.rows {
        let auto = row.iter().find(|(k, _)| *k == "auto").map(|(_, v)| v.to_string());
        assert!(auto.is_some_and(|a| a.contains("tiled")), "{row:?}");
    }
    let p2p = report
        .sections
        .iter()
        .find(|s| s.title.starts_with("ddt p2p"))
        .expect("no p2p table");
    assert_eq!(p2p.rows.len(), 8);
    // Every pattern's pack and unpack were compared with the reference model.
    assert!(
        report.checked_launches >= 16 + 16 + 16,
        "{}",
        report.checked_launches
    );
    for row in &section.rows {
        let units = row
            .iter()
            .find(|(k, _)| *k == "units")
            .and_then(|(_, v)| v.as_f64());
        assert!(units.is_some_and(|u| u >= 1.0), "{row:?}");
    }
}

/// The one-sided suite at the tiny size: its four tables with a row per
/// synchronisation mode and operation (no notified get), per block size,
/// per halo size, and the fence; every kernel's check passed (else `run`
/// fails naming it), every time positive, its three targets in the report
/// and in the JSON.
#[test]
fn the_rma_suite_has_every_row_and_target() {
    let device = Device::cpu();
    let report =
        bench::run(&device, &tiny(vec![Suite::Rma]), false).expect("an rma benchmark failed its check");
    let rma: Vec<_> = report.sections.iter().filter(|s| s.suite == "rma").collect();
    let titles: Vec<&str> = rma.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles.len(), 5, "{titles:?}");
    let table = |prefix: &str| {
        *rma.iter()
            .find(|s| s.title.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} table in {titles:?}"))
    };
    let text = |row: &[(&'static str, Value)], key: &str| {
        field(row, key).and_then(Value::as_str).map(str::to_string)
    };
    let num = |row: &[(&'static str, Value)], key: &str| {
        field(row, key).and_then(Value::as_f64).unwrap_or(f64::NAN)
    };

    let latency = table("rma latency");
    let pairs: Vec<(String, String)> = latency
        .rows
        .iter()
        .map(|r| (text(r, "sync").unwrap(), text(r, "op").unwrap()))
        .collect();
    let mut expected = Vec::new();
    for sync in ["lock/unlock", "lock_all+flush", "fence", "pscw", "notify"] {
        for op in ["put", "get", "accumulate"] {
            if !(sync == "notify" && op == "get") {
                expected.push((sync.to_string(), op.to_string()));
            }
        }
    }
    assert_eq!(pairs, expected);
    for row in &latency.rows {
        for key in ["mpi_us", "native_us", "ratio"] {
            assert!(num(row, key) > 0.0, "{key}: {row:?}");
        }
    }

    let bw = table("rma put bandwidth");
    let sizes: Vec<u64> = bw
        .rows
        .iter()
        .map(|r| field(r, "bytes").and_then(Value::as_u64).unwrap())
        .collect();
    assert_eq!(sizes, [4096, 65536]);
    for row in &bw.rows {
        for key in ["mpi_gbps", "native_gbps", "ratio", "mpi_of_copy"] {
            assert!(num(row, key) > 0.0, "{key}: {row:?}");
        }
        assert_eq!(field(row, "ranks").and_then(Value::as_u64), Some(64), "{row:?}");
    }

    let halo = table("rma halo");
    let sizes: Vec<u64> = halo
        .rows
        .iter()
        .map(|r| field(r, "bytes").and_then(Value::as_u64).unwrap())
        .collect();
    assert_eq!(sizes, [8, 4096]);
    for row in &halo.rows {
        for key in [
            "put_notify_us",
            "sendrecv_us",
            "native_us",
            "ratio",
            "ratio_put_sendrecv",
        ] {
            assert!(num(row, key) > 0.0, "{key}: {row:?}");
        }
    }

    let fence = table("rma fence");
    assert_eq!(fence.rows.len(), 1);
    for key in ["fence_us", "barrier_us", "native_us", "ratio"] {
        assert!(num(&fence.rows[0], key) > 0.0, "{key}: {:?}", fence.rows[0]);
    }

    let block = table("rma block counter");
    let memories: Vec<String> = block.rows.iter().map(|r| text(r, "memory").unwrap()).collect();
    assert_eq!(memories, ["world memory", "block shared memory"]);
    for row in &block.rows {
        for key in ["mpi_us", "native_us", "ratio"] {
            assert!(num(row, key) > 0.0, "{key}: {row:?}");
        }
    }

    // Two launches (reps) per point: 14 + 1 latency (the native), 2 x 2
    // bandwidth, 2 x 3 halo, 3 fence and 3 block counter points, beside
    // the limits' own.
    let limits_only = bench::run(&device, &tiny(vec![]), false).expect("a limit failed its check");
    assert_eq!(
        report.checked_launches - limits_only.checked_launches,
        2 * (15 + 4 + 6 + 3 + 3)
    );
    let names: Vec<&str> = report.targets.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "notified 8-byte put / native flag hand-off",
            "put time / native copy time, largest block",
            "fence / world barrier",
        ]
    );
    let fence_ratio = num(&fence.rows[0], "ratio");
    assert_eq!(report.targets[2].value, fence_ratio);

    let provenance = Provenance::new(&device, "gpu-mpi-bench test", "abc123", &"rma").unwrap();
    let json: Value = serde_json::from_str(&report.json(&provenance).unwrap()).unwrap();
    let sections = json["sections"].as_array().unwrap();
    let rows: Vec<usize> = sections
        .iter()
        .filter(|s| s["suite"] == "rma")
        .map(|s| s["rows"].as_array().unwrap().len())
        .collect();
    assert_eq!(rows, [14, 2, 2, 1, 2]);
    assert_eq!(json["targets"].as_array().unwrap().len(), 3);
    check_numbers(&json, "$");
}
