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
//! Modules follow the MPI standard's chapters: [`point_to_point`] (3; its
//! non-blocking requests in [`request`], 3.7),
//! [`datatype`], [`derived`] and [`view`] (5), [`collective`] (6), [`communicator`] (7), [`error`] (9); numbering of MPI 4.1.
//! The modules stand in layers, each importing only from those below it
//! (docs/architecture.md, "Invariants"; checked by `tests/architecture.rs`).
#![no_std]
// nvptx64 only: the shim's inline PTX. Crate attributes gate on
// `target_os = "cuda"` (the nvptx64-nvidia-cuda target): `cfg(target_arch)` is
// reserved to device/src/shim/.
#![cfg_attr(target_os = "cuda", feature(asm_experimental_arch))]

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
pub mod memory;
mod nonblocking;
pub mod point_to_point;
pub mod request;
pub mod shim;
mod slot_return;
pub mod state;
pub mod status;
pub mod trace;
pub mod traits;
pub mod view;
pub mod wait;

pub use communicator::{AnyProcess, Process, World, ANY_SOURCE, PROC_NULL};
pub use communicator::{Color, CommunicatorRelation, Group, SimpleCommunicator};
pub use creation::CommunicatorCreation;
pub use datatype::{Buffer, BufferMut, Equivalence};
pub use derived::{TypeRef, PACK_KERNEL};
pub use error::{Error, ErrorClass};
pub use kernel::{GlobalSlice, Kernel};
pub use point_to_point::{Message, Status, ANY_TAG, TAG_UB};
pub use request::{Request, Scope};
pub use state::WorldConfig;
pub use view::{MutView, View};
