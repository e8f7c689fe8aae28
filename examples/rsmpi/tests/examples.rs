//! Runs every one of rsmpi's examples done here (docs/rsmpi-examples.md) on
//! the cpu backend in every world of `WORLDS`, checking every rank's
//! record; checks that the docs' table names every example; and runs the
//! binary as CI users do.

use gpu_mpi::{BackendKind, Device, HostError, Schedule, WorldSpec};
use gpu_mpi_example_rsmpi::{find, open, run, run_in, EXAMPLES, WORLDS};
use gpu_mpi_example_rsmpi_kernels::{ExampleArgs, UNWRITTEN, WORDS};
use std::process::Command;

fn cpu() -> Device {
    open(BackendKind::Cpu).expect("the cpu backend opens")
}

#[test]
fn every_example_records_what_rsmpis_asserts() {
    let device = cpu();
    let mut failures = Vec::new();
    for example in EXAMPLES {
        for &(ranks, block_dim) in &WORLDS {
            if let Err(e) = run(&device, example, ranks, block_dim) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The examples' results do not depend on the interleaving (rsmpi's
/// assertions hold for every run): each example under seeded random and
/// PCT schedules of the emulator (docs/emulator.md).
#[test]
fn every_example_records_the_same_under_other_schedules() {
    let device = cpu();
    let mut failures = Vec::new();
    for seed in 1..=3 {
        for schedule in [Schedule::Random { seed }, Schedule::pct(seed, 3)] {
            for example in EXAMPLES {
                let spec = WorldSpec::ranks(6).block_dim(3).schedule(schedule);
                if let Err(e) = run_in(&device, example, spec) {
                    failures.push(format!("{schedule:?}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_world_larger_than_the_tables_is_refused_with_an_error() {
    let device = cpu();
    let example = find("all_to_all").expect("all_to_all is an example");
    let e = run(&device, example, 9, 3).expect_err("9 ranks exceed MAX_RANKS");
    assert!(e.contains("MPI_ERR_ARG") || e.contains("out of bounds"), "{e}");
}

/// `buffered`'s send to itself before its receive returns only because the
/// 1 KiB message fits a slot: with the default 256-byte slots it goes by
/// rendezvous, and the rank waits for itself (a deadlock the emulator
/// reports).
#[test]
fn buffered_needs_its_slots() {
    let device = cpu();
    let out = device.upload(&vec![UNWRITTEN; 2 * WORDS]).expect("upload");
    let none = device.upload::<u64>(&[]).expect("upload");
    let args = ExampleArgs {
        out: out.slice(),
        type_a: none.slice(),
        type_b: none.slice(),
    };
    let result = device.launch(
        &gpu_mpi_example_rsmpi_kernels::BUFFERED,
        &args,
        &WorldSpec::ranks(2),
    );
    assert!(
        matches!(result, Err(HostError::Deadlock(_))),
        "expected a deadlock, got {:?}",
        result.map(|_| ())
    );
}

#[test]
fn the_docs_table_names_every_example() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rsmpi-examples.md");
    let doc = std::fs::read_to_string(path).expect("docs/rsmpi-examples.md exists");
    for example in EXAMPLES {
        let row = format!("| `{}` | `{}` |", example.name, example.name);
        assert!(doc.contains(&row), "docs/rsmpi-examples.md has no row {row}");
    }
}

#[test]
fn the_binary_runs_examples_and_refuses_bad_usage() {
    let bin = env!("CARGO_BIN_EXE_rsmpi_examples");
    let out = Command::new(bin)
        .args(["scatter", "vector", "--ranks", "3"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout.contains("vector") && stdout.contains("3 ranks  ok"),
        "{stdout}"
    );
    for args in [
        &[][..],
        &["no_such_example"][..],
        &["simple", "--ranks", "99"][..],
    ] {
        let out = Command::new(bin).args(args).output().expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "rsmpi_examples {args:?}");
    }
}
