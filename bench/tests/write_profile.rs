//! `gpu-mpi-bench limits --write-profile` (docs/model.md, "Modelling your
//! own card") on the emulator in timing mode: the limits measured on a
//! modelled GPU must give back that GPU's profile. A synthetic profile is
//! modelled, so that a parameter taken from the wrong measurement or from
//! the base cannot pass: each measured value differs from the base's (the
//! H100's) and from the others by 20% or more.
//!
//! Each measured parameter inverts the model's cost of the kernel that
//! measures it, which is exact but for: `copy_device_gbps`, whose copies' kernel also holds the
//! last copy's issue and the ranks' exit (0.03%); and the file's four
//! significant digits (0.05%). A tolerance of 2% bounds these and no
//! mix-up.

use gpu_mpi::{Device, Profile, RankCount};
use gpu_mpi_bench as bench;
use std::process::Command;

use bench::Options;

/// The H100's profile with every parameter the limits measure moved.
fn synthetic() -> &'static Profile {
    let mut p = Profile::h100().clone();
    p.name = "synthetic".into();
    p.load_ns = 300.0;
    p.visible_ns = 150.0;
    p.rmw_ns = 180.0;
    p.rmw_interval_ns = 6.0;
    p.copy_thread_gbps = 0.2;
    p.copy_device_gbps = 400.0;
    p.launch_ns = 8000.0;
    p.batch_load_ns = 40.0;
    p.warp_op_ns = 25.0;
    p.block_barrier_ns = 35.0;
    p.line_ns = 12.0;
    p.shared_ns = 55.0;
    p.cta_fence_ns = 70.0;
    p.shared_batch_load_ns = 16.0;
    p.leak()
}

/// The parameters the limits measure, in the file's order.
const MEASURED: [&str; 14] = [
    "load_ns",
    "visible_ns",
    "rmw_ns",
    "rmw_interval_ns",
    "block_barrier_ns",
    "warp_op_ns",
    "copy_thread_gbps",
    "copy_device_gbps",
    "launch_ns",
    "shared_ns",
    "batch_load_ns",
    "line_ns",
    "cta_fence_ns",
    "shared_batch_load_ns",
];

const TOLERANCE: f64 = 0.02;

fn value(p: &Profile, key: &str) -> f64 {
    p.entries()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no key {key}"))
}

/// The limits alone (no suite), `ranks` ranks, in timing mode on `model`.
fn limits(model: &'static Profile, ranks: u32) -> bench::Report {
    let options = Options {
        suites: vec![],
        ranks: Some(RankCount::Exact(ranks)),
        quick: true,
        reps: 1,
        model: Some(model),
        ..Options::default()
    };
    bench::run(&Device::cpu(), &options, false).expect("a limit failed its check")
}

/// Checks that `written` gives back `model`'s measured parameters within
/// the tolerance and `base`'s others exactly.
fn check_round_trip(written: &Profile, model: &Profile, base: &Profile, measured: &[&str]) {
    for (key, got) in written.entries() {
        if measured.contains(&key) {
            // A shared batch's loads below `issue_ns` apart are spaced by
            // their issue: the measurement gives `issue_ns`, which models
            // the batch alike.
            let want = match key {
                "shared_batch_load_ns" => value(model, key).max(model.issue_ns),
                _ => value(model, key),
            };
            println!(
                "{key}: {got} (modelled {want}, {:+.2}%)",
                100.0 * (got / want - 1.0)
            );
            assert!(
                (got / want - 1.0).abs() <= TOLERANCE,
                "{key}: written {got}, modelled {want}"
            );
        } else {
            assert_eq!(got.to_bits(), value(base, key).to_bits(), "{key}: not the base's");
        }
    }
}

#[test]
fn the_limits_of_a_modelled_gpu_write_its_profile_back() {
    let model = synthetic();
    // 2048 ranks of 0.2 GB/s copying at once need more than the modelled
    // device's 400 GB/s: the concurrent copies measure the device.
    let report = limits(model, 2048);
    let limits = report.profile_limits();
    assert!(limits.concurrent_copy_device_bound(), "{limits:?}");
    let w = limits.profile("back", Profile::h100(), "h100", &["a header".to_string()]);
    assert_eq!(w.measured, MEASURED);
    assert_eq!(w.profile.name, "back");
    check_round_trip(&w.profile, model, Profile::h100(), &MEASURED);
    assert_eq!(Profile::parse(&w.text).as_ref(), Ok(&w.profile));
    assert!(w.text.starts_with("# a header\n"), "{}", w.text);
    for line in w.text.lines().filter(|l| !l.starts_with('#') && l.contains('=')) {
        let key = line.split('=').next().unwrap().trim();
        let marked = match key {
            "name" => continue,
            k if MEASURED.contains(&k) => "# measured: ",
            _ => "# base h100",
        };
        assert!(line.contains(marked), "{line}");
    }
}

#[test]
fn a_copy_bound_by_each_thread_keeps_the_base_device_bandwidth() {
    // 1024 ranks of the H200's 0.127 GB/s cannot fill its 2025 GB/s: the
    // concurrent copies measure the threads, and the file says so. (The
    // base must share the model's unmeasured costs for the round trip.)
    let report = limits(Profile::h200(), 1024);
    let limits = report.profile_limits();
    assert!(!limits.concurrent_copy_device_bound(), "{limits:?}");
    let w = limits.profile("back", Profile::h200(), "h200", &[]);
    let measured: Vec<&str> = MEASURED
        .into_iter()
        .filter(|k| *k != "copy_device_gbps")
        .collect();
    assert_eq!(w.measured, measured);
    check_round_trip(&w.profile, Profile::h200(), Profile::h200(), &measured);
    assert_eq!(w.profile.copy_device_gbps, Profile::h200().copy_device_gbps);
    let line = w
        .text
        .lines()
        .find(|l| l.starts_with("copy_device_gbps"))
        .unwrap();
    assert!(
        line.contains("# base h200: ") && line.contains("bound by each thread's copy"),
        "{line}"
    );
}

#[test]
fn the_binary_writes_a_profile_that_models_the_same_gpu() {
    let dir = std::env::temp_dir().join(format!("gpu-mpi-write-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("synthetic.profile"), dir.join("written.profile"));
    std::fs::write(&input, synthetic().to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .args([
            "limits",
            "--backend",
            "cpu",
            "--ranks",
            "2048",
            "--quick",
            "--reps",
            "1",
        ])
        .arg("--model")
        .arg(&input)
        .arg("--write-profile")
        .arg(&output)
        .args(["--base-profile", "h100", "--profile-name", "my card"])
        .env_remove("GPU_MPI_MODEL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("14 of its 23 parameters measured"), "{stdout}");
    let text = std::fs::read_to_string(&output).unwrap();
    let written = Profile::load(&output).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(written.name, "my card");
    check_round_trip(&written, synthetic(), Profile::h100(), &MEASURED);
    assert!(text.contains("timing mode on synthetic"), "{text}");
    // --base-profile alone is a usage error.
    let bad = Command::new(env!("CARGO_BIN_EXE_gpu-mpi-bench"))
        .args(["limits", "--backend", "cpu", "--base-profile", "h200"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
