//! Helpers shared by the tests that run the `gpu-mpi-check` binary.

use std::process::{Command, Output};

/// Runs the `gpu-mpi-check` binary with `args`.
pub fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpu-mpi-check"))
        .args(args)
        .output()
        .unwrap()
}

/// Lossy UTF-8 text of a command's output.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
