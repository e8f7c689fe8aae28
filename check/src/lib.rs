//! Backend-independent MPI conformance cases, and the kernels they launch
//! ([`KERNELS`], built from the `gpu-mpi-check-kernels` crate).
//!
//! Every [`Case`] launches one or more semantic kernels
//! ([`gpu_mpi_check_kernels`]) on the device it is given, in several
//! world shapes (one rank, one block, several blocks, block sizes that are
//! not powers of two), downloads what every rank recorded and checks each
//! word against what the MPI standard requires. The same cases run on the
//! CPU emulator and on a GPU: `cargo test` runs each as a test per backend
//! (check/tests/semantics.rs, [`testgen`](mod@testgen): the GPU's where one is present),
//! `gpu-mpi-check --backend cpu|cuda` all of them on one. [`for_each_case!`]
//! lists them once. docs/semantics.md lists the rules with their sections
//! of the standard.
//!
//! A case returns `Err` with every mismatch it found (the first ones, each
//! naming the world shape, the rank and the value), or with the host error
//! of a launch that failed.

use gpu_mpi::{BackendKind, Device, HostError, KernelImages};

mod case;
mod chapter6;
mod collective;
mod datatypes;
mod deadlock;
pub mod explore;
mod harness;
mod nonblocking;
mod p2p;
mod planted;
mod skip;
pub mod testgen;

pub use case::{cases, find_case, planted_cases, Case};
pub use deadlock::{launch_fault, FAULT_OUT_WORDS};
pub use harness::Shape;
pub use skip::{skipped_collective, SKIP_CALLS};
pub use testgen::TEST_BACKEND_VAR;

/// The conformance kernels, built by build.rs: PTX and SASS per SM.
pub static KERNELS: KernelImages = gpu_mpi::include_kernels!();

/// Opens a backend with the conformance kernels ([`KERNELS`]).
pub fn open(kind: BackendKind) -> Result<Device, HostError> {
    Device::open(kind, &KERNELS)
}
