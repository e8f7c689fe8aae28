//! The cuda backend: runs the kernels' PTX on an NVIDIA GPU through the
//! CUDA driver API (crate `cudarc`, loading `libcuda` at run time, so this
//! builds and its tests run on machines without CUDA).
//!
//! [`CudaDevice`] implements the crate's backend contract (the `Backend`
//! trait of `backend.rs`, which also holds the steps every launch shares);
//! [`CudaBuffer`] is its memory. What it does (docs/gpu.md, "The cuda
//! backend"):
//!
//! - **open**: finds the driver (`is_culib_present`), device
//!   [`CudaOptions::ordinal`] (0), requires compute capability 7.0 and
//!   cooperative launch, retains the device's primary context and loads the
//!   best embedded image ([`plan::choose_images`]): SASS of the device's
//!   major SM with a minor not above its own, else the PTX of the highest SM
//!   not above the device's compute capability, JIT-compiled by the driver
//!   with [`CudaOptions::max_registers`] (a cap skips SASS). Anything missing
//!   is [`HostError::NoGpu`](crate::HostError::NoGpu) with the reason.
//! - **launch**: sizes the world by the driver's occupancy for *this* kernel
//!   and block size ([`plan::KernelOccupancy`]) and refuses one that cannot be
//!   co-resident ([`HostError::NotCoResident`](crate::HostError::NotCoResident)); writes the world header on
//!   the host and copies it over a zeroed world (ranks do no set-up); gives
//!   every wait [`CudaOptions::default_timeout`] when the spec has none;
//!   launches cooperatively (`cuLaunchCooperativeKernel`: the driver itself
//!   refuses a grid that cannot be co-resident), times the kernel with events
//!   and reads the outcome from the wait and result records with
//!   [`report::check_world`](crate::report::check_world), as the emulator does.
//! - **a kernel that does not finish**: the host polls; when the world's
//!   abort word has been set (a wait timed out) for [`CudaOptions::abort_grace`]
//!   and the kernel still runs, or the kernel outlives
//!   [`CudaOptions::watchdog`], the launch fails with the wait records read
//!   while the kernel runs, and the context is *poisoned*: later calls fail
//!   at once (a CUDA kernel cannot be stopped; the process's exit ends it).
//!
//! The files, each one idea: `options.rs` ([`CudaOptions`] and the
//! environment), `driver.rs` (every driver call and the owners of the
//! driver's handles), [`plan`] (the pure parts: image choice, occupancy
//! model), `device.rs` ([`CudaDevice`], [`CudaInfo`], occupancy per kernel),
//! `open.rs` (opening the GPU), `memory.rs` ([`CudaBuffer`] and the copies),
//! `launch.rs` (running a world: the backend contract).

pub(crate) mod driver;
pub mod plan;

mod device;
mod launch;
mod memory;
mod open;
mod options;

pub use device::{CudaDevice, CudaInfo};
pub use memory::CudaBuffer;
pub use options::CudaOptions;
