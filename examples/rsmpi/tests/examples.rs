//! Runs every one of rsmpi's examples done here (docs/rsmpi-examples.md) on
//! the cpu backend in every world of `WORLDS`, checking every rank's
//! record; checks that the docs' table names every example; and runs the
//! binary as CI users do.

use gpu_mpi::device::ErrorClass;
use gpu_mpi::{BackendKind, Device, HostError, Schedule, WorldSpec};
use gpu_mpi_example_rsmpi::{open, run, run_in, EXAMPLES, WORLDS};
use gpu_mpi_example_rsmpi_kernels::{ExampleArgs, ALL_TO_ALL, BUFFERED, MAX_RANKS, UNWRITTEN, WORDS};
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

/// Arguments for a direct launch of a kernel in a world of `ranks`, with no
/// derived datatypes, and the buffers they point at.
fn plain_args(device: &Device, ranks: usize) -> (ExampleArgs, impl Sized) {
    let out = device.upload(&vec![UNWRITTEN; ranks * WORDS]).expect("upload");
    let none = device.upload::<u64>(&[]).expect("upload");
    let args = ExampleArgs {
        out: out.slice(),
        type_a: none.slice(),
        type_b: none.slice(),
    };
    (args, (out, none))
}

#[test]
fn a_world_larger_than_the_tables_is_refused_with_mpi_err_arg() {
    let device = cpu();
    let ranks = MAX_RANKS + 1;
    let (args, _buffers) = plain_args(&device, ranks);
    let result = device.launch(&ALL_TO_ALL, &args, &WorldSpec::ranks(ranks as u32));
    let Err(HostError::RankFailed { errors, .. }) = result else {
        panic!("expected every rank to fail, got {:?}", result.map(|_| ()));
    };
    assert_eq!(errors.len(), ranks, "{errors:?}");
    for (rank, e) in &errors {
        assert_eq!(e.class(), ErrorClass::Arg, "rank {rank}: {e}");
    }
}

/// `buffered`'s send to itself before its receive returns only because the
/// 1 KiB message fits a slot: with the default 256-byte slots it goes by
/// rendezvous, and the rank waits for itself (a deadlock the emulator
/// reports).
#[test]
fn buffered_needs_its_slots() {
    let device = cpu();
    let (args, _buffers) = plain_args(&device, 2);
    let result = device.launch(&BUFFERED, &args, &WorldSpec::ranks(2));
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
    // One row per file rsmpi's `examples/` has held: ours, pending, or none.
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), 67, "rows of the table");
    let ours = rows
        .iter()
        .filter(|r| !r.contains("| pending |") && !r.contains("| none |"));
    assert_eq!(ours.count(), EXAMPLES.len(), "rows with a counterpart");
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
