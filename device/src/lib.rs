//! gpu-mpi-device: MPI called from inside a GPU kernel, every thread a rank.
//!
//! The same code runs on an NVIDIA GPU (compiled to PTX by rustc's nvptx64
//! target) and on the host, where the CPU emulator of `gpu-mpi-host` runs
//! each rank as a coroutine. The API follows rsmpi's vocabulary:
//!
//! ```ignore
//! use gpu_mpi_device::traits::*;
//! let x = world.rank() as f64;
//! if world.rank() == 0 {
//!     let mut y = 0.0f64;
//!     world.process_at_rank(1).receive_into(&mut y)?;
//! } else if world.rank() == 1 {
//!     world.process_at_rank(0).send(&x)?;
//! }
//! world.barrier()?;
//! ```
//!
//! Import the traits with `use gpu_mpi_device::traits::*;` and start from
//! the [`World`] a kernel is handed (see [`kernel!`]).
//!
//! | module | MPI 4.1 | what it holds |
//! |---|---|---|
//! | [`point_to_point`] | 3 | blocking send, receive, probe and send-receive on a [`Process`] or [`AnyProcess`] |
//! | [`request`] | 3.7 | non-blocking calls: a [`Scope`] and its [`Request`]s, waits and tests over several |
//! | [`datatype`], [`derived`], [`view`] | 5 | [`Equivalence`] and buffers; derived datatypes ([`TypeRef`]) and the [`View`]s that send them |
//! | [`collective`] | 6 | [`CommunicatorCollectives`](traits::CommunicatorCollectives), [`Root`](traits::Root), the non-blocking collectives, reduction operations |
//! | [`communicator`] | 7 | [`World`], [`SimpleCommunicator`], [`Group`], communicator creation |
//! | [`window`] | 12 | one-sided communication: [`Window`](window::Window), put, get, accumulates, fence, locks, notified access |
//! | [`error`] | 9 | [`Error`] and its [`ErrorClass`] |
//! | [`kernel`](mod@kernel) | – | [`kernel!`], [`GlobalSlice`], [`Scratch`]: a kernel's entry, its buffers and per-rank scratch |
//! | [`intrinsics`] | – | the hardware operations a kernel may use beside MPI |
//!
//! The modules stand in layers, each importing only from those below it
//! (docs/architecture.md, "Invariants"; checked by `tests/architecture.rs`).
#![no_std]
// nvptx64 only: the shim's inline PTX. Crate attributes gate on
// `target_os = "cuda"` (the nvptx64-nvidia-cuda target): `cfg(target_arch)` is
// reserved to device/src/shim/.
#![cfg_attr(target_os = "cuda", feature(asm_experimental_arch))]
// rustc's dynamic shared memory intrinsic (`shim::launch_shared`).
#![cfg_attr(
    target_os = "cuda",
    feature(core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem),
    allow(internal_features)
)]

mod buffers;
mod codes;
pub mod collective;
pub mod communicator;
mod creation;
pub mod datatype;
pub mod derived;
pub(crate) mod engine;
pub mod error;
pub mod kernel;
mod layout;
mod nonblocking;
pub mod point_to_point;
mod polling;
mod records;
pub mod request;
mod shim;
mod slot_return;
mod status;
mod trace;
pub mod traits;
mod typemap;
pub mod view;
pub mod window;

pub use communicator::{AnyProcess, Process, World, ANY_SOURCE, PROC_NULL};
pub use communicator::{Color, CommunicatorRelation, Group, SimpleCommunicator};
pub use creation::CommunicatorCreation;
pub use datatype::{Buffer, BufferMut, Equivalence};
pub use derived::{TypeRef, PACK_KERNEL};
pub use error::{Error, ErrorClass};
pub use kernel::{GlobalSlice, Kernel, Scratch};
pub use point_to_point::{Message, Status, ANY_TAG, TAG_UB};
pub use request::{Request, Scope};
pub use view::{MutView, View};

pub mod intrinsics;

/// What the host crate, the conformance tests and the benchmarks need of
/// this crate's internals: the world memory's layout and records, the
/// codes of waits and traces, the emulator's and loom's hooks into the
/// shim. Not for kernels, and without any stability promise (rsmpi's
/// hidden `internal`); a kernel's hardware operations are [`intrinsics`].
#[doc(hidden)]
pub mod abi {
    /// The world memory's layout and configuration (`layout.rs`).
    pub mod layout {
        pub use crate::layout::*;
    }
    /// The typed records of the world memory (`records.rs`).
    pub mod records {
        pub use crate::records::*;
    }
    /// The codes of wait records and their states (`polling.rs`).
    pub mod polling {
        pub use crate::polling::*;
    }
    /// The trace records (`trace.rs`).
    pub mod trace {
        pub use crate::trace::*;
    }
    /// The claim of a block's shared window memory and a
    /// sub-communicator window's barrier (`window.rs`), for their loom
    /// models.
    pub mod window {
        pub use crate::window::{barrier_words, claim_parts, release_parts, Arrival, BarrierWords};
    }
    /// The whole shim, with the emulator's `runtime` and loom's
    /// `loom_runtime` hooks where they exist.
    pub mod shim {
        pub use crate::shim::*;
    }
    pub use crate::layout::WorldConfig;
}
