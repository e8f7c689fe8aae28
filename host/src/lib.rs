//! gpu-mpi-host: runs gpu-mpi kernels on a device and reports what happened.
//!
//! ```
//! use gpu_mpi_host::{Device, WorldSpec};
//! use gpu_mpi_device::traits::*;
//! use gpu_mpi_device::{Error, World};
//!
//! gpu_mpi_device::kernel! {
//!     /// Every rank writes its rank into its element.
//!     pub static WHO = fn who(world: &World, args: &gpu_mpi_device::GlobalSlice<u32>) -> Result<(), Error> {
//!         args.write(world.rank() as usize, world.rank() as u32)
//!     }
//! }
//!
//! let device = Device::cpu();
//! let out = device.alloc_zeroed::<u32>(64)?;
//! let report = device.launch(&WHO, &out.slice(), &WorldSpec::ranks(64))?;
//! assert_eq!(report.ranks, 64);
//! assert_eq!(device.download(&out)?, (0..64).collect::<Vec<u32>>());
//! # Ok::<(), gpu_mpi_host::HostError>(())
//! ```
//!
//! - [`KernelImages`]: the kernels a program ships (PTX and SASS per SM),
//!   embedded with [`include_kernels!`] from what
//!   `gpu_mpi_ptx_builder::KernelBuilder` built; [`Device::open`].
//! - [`Device`]: a backend ([`BackendKind`]): `cpu`, the emulator ([`cpu`],
//!   docs/emulator.md), or `cuda`, an NVIDIA GPU; buffers ([`DeviceBuffer`])
//!   and launches.
//! - [`WorldSpec`]: the world a launch runs (ranks, block size, limits,
//!   and on the emulator the [`Schedule`] of its ranks).
//! - [`HostError`]: what can go wrong, among it [`HostError::Deadlock`] with
//!   a [`DeadlockReport`] of what every rank waited for.
//! - [`datatype`]: derived datatypes (MPI chapter 5): [`UserDatatype`],
//!   [`CommittedType`], `Device::pack` and `Device::unpack`.
//! - [`report`]: reading a world after a launch (shared by every backend).
//! - [`explore`](mod@explore): schedule exploration, a program run under many seeded
//!   schedules of the emulator, its outcomes grouped with the seeds that
//!   replay them ([`Device::explore`], [`explore::explore`]).
//! - [`trace`]: message traces ([`WorldSpec::trace`]), exported as Chrome
//!   trace JSON and as an HTML page (docs/tracing.md).

mod backend;
pub mod cpu;
pub mod cuda;
pub mod datatype;
mod deadlock;
mod device;
#[cfg(feature = "distributed")]
pub mod distributed;
mod error;
pub mod explore;
mod images;
mod launch;
pub mod model;
mod pack;
pub mod report;
mod schedule;
mod spec;
pub mod trace;

pub use cpu::{CpuDevice, CpuOptions, Schedule};
pub use datatype::{CommittedType, DatatypeError, Order, PackStrategy, Primitive, UserDatatype};
pub use device::{Device, DeviceBuffer, DeviceDescription, ProcessPlace};
pub use error::{
    AllocError, BufferError, CopyDirection, CudaError, DistributedError, DriverFailure, HostError, NoGpu,
    OptionError, Resource, StuckReason,
};
pub use explore::{explore, Exploration, ExploreOptions, Outcome, OutcomeKind};
pub use images::{KernelImages, KernelParts};
pub use launch::{LaunchReport, SyncCounts, SyncProfile, TracedLaunch};
pub use model::{AccessLog, LoggedAccess, ModelledTime, Profile, ProfileError, RankTime, TimeCategory};
pub use report::{BlockedRank, BlockedState, DeadlockReport, Hint, LockHolder, UnreceivedMessage};
pub use spec::{
    default_block_dim, default_trace_events, trace_path_from_env, BackendKind, ParseBackendKindError,
    RankCount, Residency, WorldSpec, DEFAULT_TRACE_EVENTS, PREFERRED_BLOCK_DIM, TRACE_BUFFER_BOUND,
    TRACE_DEFAULT_MIN_EVENTS,
};
pub use trace::{EpochSpan, MessageLink, RankTrace, RmaRecord, SpanKind, SpanRecord, Trace, TraceWriteError};
