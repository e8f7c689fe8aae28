//! Pi estimation, thesis figure 5.6: every rank sends its partial sum to rank 0.
//!
//! `cargo run --release --bin pi_p2p -- [--backend auto|cpu|cuda] [--ranks N|max] [--intervals-per-rank K]`
//!
//! The last line printed is `pi=<value> error=<|value - PI|> ranks=<N> backend=<cpu|cuda>`;
//! the exit code is non-zero on any error, including an estimate that is off
//! by more than the midpoint rule's error bound.

fn main() -> std::process::ExitCode {
    gpu_mpi_example_pi::run_pi(&gpu_mpi_example_pi_kernels::PI_P2P)
}
