//! Runs the checks of a world across processes (`src/main.rs`) under
//! `mpiexec` with 2 and 4 processes, and once without it. MPI (MPICH or
//! Open MPI) is what this crate builds against, so `mpiexec` must be there:
//! its absence fails the test. `GPU_MPI_MPIEXEC` names another launcher
//! (`mpiexec.openmpi` for a build against Open MPI where MPICH's is the
//! system's `mpiexec`, as in `.ci/run`).

use std::process::Command;

/// The checks every run prints as passed (`ok   ...`).
const CHECKS: usize = 29;

fn run(processes: Option<u32>, ranks: u32) -> String {
    let exe = env!("CARGO_BIN_EXE_distributed");
    let mut cmd = match processes {
        Some(p) => {
            let launcher = std::env::var("GPU_MPI_MPIEXEC").unwrap_or_else(|_| "mpiexec".into());
            let mut c = Command::new(launcher);
            c.args(["-n", &p.to_string(), exe]);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(["--ranks", &ranks.to_string()]);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("mpiexec (MPICH or Open MPI) must be installed: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{processes:?} processes: {}\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

fn assert_all_passed(stdout: &str, world: u32) {
    assert!(stdout.contains(&format!("a world of {world}\n")), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok   ")).count(),
        CHECKS,
        "{stdout}"
    );
}

#[test]
fn two_processes() {
    let out = run(Some(2), 8);
    assert_all_passed(&out, 16);
    // The deadlock report names the processes' ranks.
    assert!(
        out.contains("processes: 0 runs ranks 0-7, 1 runs ranks 8-15"),
        "{out}"
    );
    assert!(out.contains("rank 7: receive(source 8, tag 9)"), "{out}");
}

#[test]
fn four_processes() {
    let out = run(Some(4), 12);
    assert_all_passed(&out, 48);
    assert!(out.contains("3 runs ranks 36-47"), "{out}");
}

#[test]
fn one_process_without_mpiexec() {
    let out = run(None, 8);
    assert_all_passed(&out, 8);
    assert!(!out.contains("processes:"), "{out}");
}
