//! The gpu-mpi-check binary: its command line, exit codes and JSON (with
//! the provenance of the run) on the emulator.

use serde_json::Value;
mod common;

use common::{check, text};

#[test]
fn list_prints_the_filtered_case_names() {
    let out = check(&["--list", "--filter", "p2p/pairs"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "p2p/pairs\n");
    let out = check(&["--list", "--filter=collective/"]);
    assert!(out.status.success());
    let names = text(&out.stdout);
    assert!(
        names.lines().count() > 1 && names.lines().all(|l| l.starts_with("collective/")),
        "{names}"
    );
}

#[test]
fn a_run_passes_prints_its_table_and_writes_json_with_provenance() {
    let dir = std::env::temp_dir().join(format!("gpu-mpi-check-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("check.json");
    let out = check(&[
        "--backend",
        "cpu",
        "--filter",
        "p2p/ring",
        "--json",
        file.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    // Not a terminal: no progress bar, the lines as before.
    assert!(
        stdout.starts_with("gpu-mpi-check: 1 cases on the cpu backend\npass  p2p/ring_send_receive ("),
        "{stdout}"
    );
    assert!(stdout.contains("1 cases on cpu: 1 passed, 0 failed"), "{stdout}");
    assert_eq!(text(&out.stderr), "");

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        (&json["backend"], &json["passed"], &json["failed"]),
        (&"cpu".into(), &1.into(), &0.into())
    );
    let case = &json["cases"][0];
    assert_eq!(
        (&case["name"], &case["result"], &case["message"]),
        (&"p2p/ring_send_receive".into(), &"pass".into(), &"".into())
    );
    assert!(case["seconds"].as_f64().unwrap() >= 0.0);
    let p = &json["provenance"];
    assert_eq!(p["backend"], "cpu");
    assert!(
        p["program"].as_str().unwrap().starts_with("gpu-mpi-check "),
        "{p}"
    );
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
    assert!(!p["commit"].as_str().unwrap().is_empty());
    assert!(p["date"].as_str().unwrap().ends_with('Z'));
    let o = &p["options"];
    assert_eq!(
        (&o["backend"], &o["filter"], &o["list"]),
        (&"cpu".into(), &"p2p/ring".into(), &false.into()),
        "{o}"
    );
    assert_eq!(o["json"], file.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    for args in [&["--nosuch"][..], &["--backend", "tpu"], &["--json"], &["extra"]] {
        let out = check(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).starts_with("error:"), "{args:?}");
    }
    let out = check(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for words in [
        "--backend",
        "--json",
        "--filter",
        "--list",
        "conformance",
        "the emulator",
        "Exit status",
    ] {
        assert!(help.contains(words), "{words}: {help}");
    }
}

#[test]
fn a_backend_that_cannot_be_opened_exits_2() {
    // No GPU here, or one without this build's kernels: either way the cuda
    // backend refuses when asked for by name, unless a GPU is usable.
    let out = check(&["--backend", "cuda", "--filter", "p2p/pairs"]);
    if out.status.code() != Some(0) {
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("cannot open the cuda backend"));
    }
}
