//! Errors of the host API, shared by every backend.

use crate::deadlock::{DeadlockReport, Ranks};
use cudarc::driver::DriverError;
use gpu_mpi_device::abi::layout::ConfigError;
use std::fmt;
use std::time::Duration;

/// How many groups of failed ranks (ranks that returned the same error)
/// [`HostError::RankFailed`] prints before "... and N more".
const PRINTED_FAILURES: usize = 8;

/// The hardware resource that limits how many ranks can be co-resident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// Threads one streaming multiprocessor holds at once.
    ThreadsPerSm,
    /// Blocks one streaming multiprocessor holds at once.
    BlocksPerSm,
    /// Registers of one streaming multiprocessor.
    Registers,
    /// Shared memory of one streaming multiprocessor.
    SharedMemory,
    /// Threads one block may have.
    ThreadsPerBlock,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::ThreadsPerSm => "threads per SM",
            Resource::BlocksPerSm => "blocks per SM",
            Resource::Registers => "registers",
            Resource::SharedMemory => "shared memory",
            Resource::ThreadsPerBlock => "threads per block",
        })
    }
}

/// Every way a host call can fail.
///
/// `Debug` prints the same readable text as `Display`, so that a `main`
/// returning `Result<(), HostError>` shows the message, not a struct dump.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A derived datatype's constructor, commit or buffer check refused
    /// (`Device::pack`, `Device::unpack`).
    #[error("datatype: {0}")]
    Datatype(#[from] crate::datatype::DatatypeError),

    /// A timing profile could not be read (`GPU_MPI_MODEL`, `Profile::load`).
    #[error("timing model: {0}")]
    Model(#[from] crate::model::ProfileError),

    /// The world's configuration cannot be laid out (see `WorldConfig::layout`).
    #[error("invalid world configuration: {0}")]
    Config(#[from] ConfigError),

    /// The world does not fit on the device at once. Every rank must be
    /// resident for the whole launch (ranks wait for each other), so a world
    /// larger than the device's capacity would deadlock instead of running.
    #[error("world of {requested} ranks cannot be co-resident: {fits} fit ({detail}; limit: {limit})")]
    NotCoResident {
        /// Ranks asked for.
        requested: u32,
        /// Ranks that fit with this block size.
        fits: u32,
        /// The resource that runs out first.
        limit: Resource,
        /// How `fits` comes about, e.g. "132 SMs x 32 blocks of 1 ranks".
        detail: String,
    },

    /// Every rank that had not finished waited for something that could no
    /// longer happen (found exactly by the emulator's scheduler, or through
    /// the world's timeout on the GPU).
    #[error("{0}")]
    Deadlock(DeadlockReport),

    /// The launch ran to its end, but some ranks returned an error.
    #[error("{}", FailedRanks { errors, ranks: *ranks })]
    RankFailed {
        /// `(rank, error)` for every failed rank, in rank order.
        errors: Vec<(u32, gpu_mpi_device::Error)>,
        /// Ranks in the world.
        ranks: u32,
    },

    /// The world was aborted (a wait timed out, or a rank called
    /// `World::abort`, this library's `MPI_ABORT`), and every rank then
    /// returned `Ok`, having handled its `MPI_ERR_TIMEOUT` or the
    /// `Aborted` of its waits. The launch did not complete normally: what
    /// the ranks computed after the abort cannot be relied on, so the
    /// launch reports the abort rather than success. (A rank that returns
    /// the error instead makes it [`HostError::RankFailed`], or
    /// [`HostError::Deadlock`] for a timeout.)
    #[error(
        "rank {by_rank} aborted the world ({}) and every rank returned Ok after it: \
         the launch did not complete normally",
        if *timed_out { "a wait of it timed out" } else { "World::abort" }
    )]
    WorldAborted {
        /// The rank that aborted the world first.
        by_rank: u32,
        /// Whether it did because a wait of it timed out (else it called
        /// `World::abort`).
        timed_out: bool,
    },

    /// A rank's kernel code panicked (emulator only; on the GPU it would trap).
    #[error("rank {rank} panicked: {message}")]
    RankPanicked {
        /// The rank.
        rank: u32,
        /// The panic message.
        message: String,
    },

    /// The lanes of a warp called warp collectives (shuffle, vote, match,
    /// `bar.warp.sync`) that no warp can complete: different operations or
    /// masks among the lanes of one mask, a mask that does not name the
    /// caller, or one naming lanes that do not exist (emulator only; on the
    /// GPU the result is undefined).
    #[error("rank {rank}: warp collective mismatch: {message}")]
    WarpMismatch {
        /// The rank whose call revealed the mismatch.
        rank: u32,
        /// What the lanes called.
        message: String,
    },

    /// A rank used more stack than its coroutine has (emulator only).
    #[error(
        "rank {rank} overflowed its {stack_bytes}-byte coroutine stack \
         (raise CpuOptions::stack_bytes or GPU_MPI_STACK_BYTES, or move large arrays \
         to the rank's scratch: WorldSpec::scratch_bytes, World::scratch)"
    )]
    StackOverflow {
        /// The rank.
        rank: u32,
        /// Usable bytes of each rank's stack.
        stack_bytes: usize,
    },

    /// An environment variable the backend reads holds a value it cannot
    /// use (`GPU_MPI_STACK_BYTES`).
    #[error("{0}")]
    Environment(#[from] OptionError),

    /// No GPU could be used; the reason says why.
    #[error("no usable GPU: {0}")]
    NoGpu(#[from] NoGpu),

    /// The CUDA driver failed, or a kernel on the GPU did.
    #[error("CUDA error: {0}")]
    Cuda(#[from] CudaError),

    /// Memory for a buffer, the world or the rank stacks could not be had.
    #[error("allocation failed: {0}")]
    Alloc(#[from] AllocError),

    /// A buffer was used in a way its size or backend does not allow.
    #[error("invalid buffer use: {0}")]
    Buffer(#[from] BufferError),
    /// A world spread over processes (`mpiexec`) cannot be launched as asked
    /// (docs/distributed.md).
    #[error("world across processes: {0}")]
    Distributed(#[from] DistributedError),
}

impl fmt::Debug for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A failed CUDA driver call's result: the driver's code and its description.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{:?}{}", code.0, Described(description))]
pub struct DriverFailure {
    /// The driver's error code.
    #[source]
    pub code: DriverError,
    /// The driver's description of the code (`cuGetErrorString`), if it gave one.
    pub description: Option<String>,
}

/// " (text)" for a description, nothing without one.
struct Described<'a>(&'a Option<String>);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(text) => write!(f, " ({text})"),
            None => Ok(()),
        }
    }
}

/// A bad value of an environment variable that configures the cuda backend.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?}: expected {expected}")]
pub struct OptionError {
    /// The variable, e.g. `GPU_MPI_MAX_REGISTERS`.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What it may hold.
    pub expected: &'static str,
}

/// Why no GPU could be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoGpu {
    /// The cuda backend is configured badly through the environment.
    #[error("{0}")]
    Option(#[from] OptionError),
    /// No CUDA driver library was found.
    #[error("no CUDA driver (libcuda.so not found)")]
    NoDriver,
    /// The driver library lacks calls the backend needs (older than CUDA 11).
    #[error("the CUDA driver cannot be used: {missing}")]
    OldDriver {
        /// What the loader reported missing.
        missing: String,
    },
    /// `cuInit` failed.
    #[error("cuInit failed: {0}")]
    Init(#[source] DriverFailure),
    /// The driver sees no device.
    #[error("no CUDA device")]
    NoDevice,
    /// The device asked for (`GPU_MPI_CUDA_DEVICE`) is not there.
    #[error("no CUDA device {ordinal} ({count} present)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// Devices present.
        count: u32,
    },
    /// The device is older than compute capability 7.0.
    #[error("{name} has compute capability {major}.{minor}; the kernels need 7.0 or later")]
    ComputeCapability {
        /// The device's name.
        name: String,
        /// Major version.
        major: u32,
        /// Minor version.
        minor: u32,
    },
    /// The device cannot launch cooperative kernels.
    #[error("{name} does not support cooperative launches")]
    NoCooperativeLaunch {
        /// The device's name.
        name: String,
    },
    /// No embedded kernel image (SASS or PTX) suits the device, or the
    /// build made none.
    #[error("{0}")]
    Images(#[from] crate::images::NoImage),
}

/// A failure of the CUDA driver, or of a kernel on the GPU.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// A driver call failed.
    #[error("{call} failed: {error}")]
    Call {
        /// The call, e.g. `cuMemcpyHtoDAsync_v2` (with its kernel and grid for a launch).
        call: String,
        /// The driver's result.
        #[source]
        error: DriverFailure,
    },
    /// The driver could not compile a PTX module.
    #[error("cuModuleLoadDataEx failed: {error}{}", JitLog(log))]
    ModuleLoad {
        /// The driver's result.
        #[source]
        error: DriverFailure,
        /// The JIT compiler's error log (empty if it wrote none).
        log: String,
    },
    /// A PTX text holds a NUL byte (it cannot be passed to the driver).
    #[error("the PTX holds a NUL byte")]
    PtxNul,
    /// The driver refuses every embedded image (too old for the PTX, or a
    /// cubin it cannot load).
    #[error("the driver rejects every embedded image: {}", refusals.join("; "))]
    EveryImageRejected {
        /// One refusal per image tried, e.g. `sm_90 PTX (JIT): cuModuleLoadDataEx failed: ...`.
        refusals: Vec<String>,
    },
    /// A kernel name cannot be passed to the driver.
    #[error("kernel name {name:?} holds a NUL")]
    KernelName {
        /// The name.
        name: String,
    },
    /// The loaded module has no kernel of that name.
    #[error("kernel {name} is not in the loaded sm_{ptx_sm} {image} (cuModuleGetFunction: {error})")]
    KernelNotFound {
        /// The kernel's name.
        name: String,
        /// The SM of the loaded image.
        ptx_sm: u32,
        /// SASS or PTX.
        image: crate::images::ImageKind,
        /// The driver's result.
        #[source]
        error: DriverFailure,
    },
    /// The loaded module has no constant-bank copy of the world's header
    /// (`ptx_builder::DESCRIPTORS_SYMBOL`), or a smaller one: it was not
    /// linked by this version of the kernel builder.
    #[error(
        "the loaded sm_{ptx_sm} {image} has no {symbol} of at least {bytes} bytes for the world's descriptors (found: {found}); rebuild the kernels with this version's gpu_mpi::builder"
    )]
    NoDescriptors {
        /// The symbol looked for.
        symbol: &'static str,
        /// The bytes it must hold.
        bytes: usize,
        /// What the module has: its size, or the driver's answer.
        found: String,
        /// The SM of the loaded image.
        ptx_sm: u32,
        /// SASS or PTX.
        image: crate::images::ImageKind,
    },
    /// A kernel faulted; the context cannot be used any more.
    #[error(
        "kernel {kernel} failed: {reading}{error} (a rank trapped: a panic in device code, or a bad \
         memory access); the GPU context is unusable until the process exits",
        reading = if *reading_abort_word { "reading the abort word: " } else { "" }
    )]
    KernelFailed {
        /// The kernel's name.
        kernel: String,
        /// The driver's result.
        #[source]
        error: DriverFailure,
        /// The fault surfaced while the host read the world's abort word.
        reading_abort_word: bool,
    },
    /// A kernel never finished; the launch gave up on it and the context
    /// cannot be used any more.
    #[error(
        "kernel {kernel} never finished: {why}; the GPU context is unusable until the process exits{}",
        WaitRecords(records)
    )]
    KernelStuck {
        /// The kernel's name.
        kernel: String,
        /// Why the launch gave up.
        why: StuckReason,
        /// What the ranks waited for, if the wait records could be read.
        records: Option<DeadlockReport>,
    },
    /// An earlier kernel fault or hang left the context unusable.
    #[error("the GPU context is unusable: {earlier}")]
    ContextUnusable {
        /// The earlier failure, as it was reported.
        earlier: String,
    },
}

/// "; JIT log: ..." for a non-empty log.
struct JitLog<'a>(&'a str);

impl fmt::Display for JitLog<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "; JIT log: {}", self.0)
        }
    }
}

/// "; its wait records: ..." when they could be read.
struct WaitRecords<'a>(&'a Option<DeadlockReport>);

impl fmt::Display for WaitRecords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(report) => write!(f, "; its wait records: {report}"),
            None => Ok(()),
        }
    }
}

/// Why a launch gave up on a kernel that does not finish.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StuckReason {
    /// A wait timed out and aborted the world, and the grace period passed.
    #[error(
        "the world was aborted (a wait timed out) {:.1} s ago and the kernel still runs: \
         some rank is stuck outside any bounded wait, e.g. in a block barrier \
         (barrier.sync) that ranks which returned never reach",
        since.as_secs_f64()
    )]
    AbortedButRunning {
        /// Time since the abort was seen.
        since: Duration,
    },
    /// The kernel ran past the watchdog.
    #[error(
        "it ran past the {} s watchdog (CudaOptions::watchdog, GPU_MPI_WATCHDOG_S){}",
        watchdog.as_secs_f64(),
        if *aborted { "" } else { " without any wait timing out" }
    )]
    Watchdog {
        /// The watchdog's limit.
        watchdog: Duration,
        /// Whether a wait had timed out (and aborted the world) before.
        aborted: bool,
    },
}

/// Memory that could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// Host memory for a buffer or a world (emulator).
    #[error("{bytes} bytes of host memory: {source}")]
    HostMemory {
        /// Bytes asked for.
        bytes: usize,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// GPU memory.
    #[error("{bytes} bytes of GPU memory (cuMemAlloc_v2: {error})")]
    GpuMemory {
        /// Bytes asked for.
        bytes: usize,
        /// The driver's result.
        #[source]
        error: DriverFailure,
    },
    /// The rank stacks' total size overflows the address space.
    #[error("{count} stacks of {bytes} bytes")]
    StacksTooLarge {
        /// Stacks asked for.
        count: usize,
        /// Usable bytes of each.
        bytes: usize,
    },
    /// The rank stacks could not be mapped (emulator).
    #[error("{count} rank stacks of {bytes} bytes ({total} bytes of address space): {source}")]
    Stacks {
        /// Stacks asked for.
        count: usize,
        /// Usable bytes of each.
        bytes: usize,
        /// Bytes of address space with the guard pages.
        total: usize,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// An emulator worker thread could not be started.
    #[error("an emulator worker thread: {source}")]
    WorkerThread {
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A buffer's size in bytes overflows `usize`.
    #[error("{len} elements of {type_name}")]
    TooManyElements {
        /// Elements asked for.
        len: usize,
        /// The element type.
        type_name: &'static str,
    },
    /// The element type needs more alignment than device buffers have.
    #[error("{type_name} needs {align}-byte alignment; device buffers are 64-byte aligned")]
    Alignment {
        /// The element type.
        type_name: &'static str,
        /// Its alignment.
        align: usize,
    },
}

/// Which way a copy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDirection {
    /// Host to device.
    Upload,
    /// Device to host.
    Download,
}

/// A buffer used in a way its size or backend does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BufferError {
    /// A copy reaching past the end of the buffer.
    #[error(
        "{} of {bytes} bytes at offset {offset} {} a buffer of {len} bytes",
        match direction { CopyDirection::Upload => "upload", CopyDirection::Download => "download" },
        match direction { CopyDirection::Upload => "into", CopyDirection::Download => "from" }
    )]
    OutOfRange {
        /// Which way.
        direction: CopyDirection,
        /// Bytes to copy.
        bytes: usize,
        /// Offset in the buffer.
        offset: usize,
        /// The buffer's length in bytes.
        len: usize,
    },
    /// A write of another number of elements than the buffer holds.
    #[error("writing {given} elements into a buffer of {len}")]
    LengthMismatch {
        /// Elements given.
        given: usize,
        /// Elements in the buffer.
        len: usize,
    },
    /// A buffer of one backend used with a device of another.
    #[error("a buffer of the {owner} backend used with the {used} backend")]
    ForeignBackend {
        /// The buffer's backend.
        owner: &'static str,
        /// The device's backend.
        used: &'static str,
    },
}

/// Display helper of [`HostError::RankFailed`].
struct FailedRanks<'a> {
    errors: &'a [(u32, gpu_mpi_device::Error)],
    ranks: u32,
}

impl fmt::Display for FailedRanks<'_> {
    /// `3 of 64 ranks failed: ranks 3-61: MPI_ERR_REQUEST: ...; rank 62: ...`:
    /// the ranks that returned the same error form one group, named as the
    /// deadlock report names ranks, groups in the order of their first rank.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} ranks failed", self.errors.len(), self.ranks)?;
        // Errors are few kinds over many ranks: a linear search per rank
        // stays cheap, and no `Hash` is asked of the device's `Error`.
        let mut groups: Vec<(gpu_mpi_device::Error, Vec<u32>)> = Vec::new();
        for (rank, e) in self.errors {
            match groups.iter_mut().rev().find(|(g, _)| g == e) {
                Some((_, ranks)) => ranks.push(*rank),
                None => groups.push((*e, vec![*rank])),
            }
        }
        for (i, (e, ranks)) in groups.iter().take(PRINTED_FAILURES).enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{}: {e}", Ranks(ranks))?;
        }
        if groups.len() > PRINTED_FAILURES {
            let more: usize = groups[PRINTED_FAILURES..].iter().map(|(_, r)| r.len()).sum();
            write!(f, "; ... and {more} more ranks")?;
        }
        Ok(())
    }
}

/// Why a world spread over processes cannot be launched as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DistributedError {
    /// MPI could not be started, or a process's part disagrees with the
    /// others'.
    #[error("MPI: {0}")]
    Mpi(String),
    /// The launch asks for what only a one-process world has (a seeded
    /// schedule, the timing model).
    #[error("{what} is not available in a world across processes (docs/distributed.md)")]
    Unsupported {
        /// What was asked.
        what: &'static str,
    },
    /// The processes launched different worlds (their sizes or kernels differ).
    #[error("process {process} launched {theirs}, this one {ours}")]
    Mismatch {
        /// The other process.
        process: u32,
        /// What it launched.
        theirs: String,
        /// What this one launched.
        ours: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_co_resident_reads_like_the_spec() {
        let e = HostError::NotCoResident {
            requested: 5000,
            fits: 4224,
            limit: Resource::BlocksPerSm,
            detail: "132 SMs x 32 blocks of 1 ranks".into(),
        };
        assert_eq!(
            e.to_string(),
            "world of 5000 ranks cannot be co-resident: 4224 fit \
             (132 SMs x 32 blocks of 1 ranks; limit: blocks per SM)"
        );
    }

    #[test]
    fn debug_reads_as_display_and_sources_chain() {
        let e = HostError::from(AllocError::WorkerThread {
            source: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
        });
        assert_eq!(format!("{e:?}"), format!("{e}"));
        assert!(
            e.to_string()
                .starts_with("allocation failed: an emulator worker thread: "),
            "{e}"
        );
        let alloc = std::error::Error::source(&e).expect("the AllocError");
        let io = alloc.source().expect("the io::Error");
        assert!(io.downcast_ref::<std::io::Error>().is_some());

        let failure = DriverFailure {
            code: DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            description: Some("out of memory".into()),
        };
        let e = HostError::from(CudaError::Call {
            call: "cuMemAlloc_v2".into(),
            error: failure,
        });
        assert_eq!(
            format!("{e:?}"),
            "CUDA error: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
        );
        assert_eq!(
            HostError::from(NoGpu::from(crate::images::NoImage::NoneFor {
                cc: 90,
                have: "PTX sm_100".into()
            }))
            .to_string(),
            "no usable GPU: no embedded PTX or SASS for compute capability 9.0 (have PTX sm_100)"
        );
    }

    #[test]
    fn errors_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<HostError>();
    }

    #[test]
    fn rank_failed_groups_ranks_with_the_same_error() {
        use gpu_mpi_device::Error;
        let limit = Error::RequestLimit { limit: 8 };
        let mut errors: Vec<_> = (3..62).map(|r| (r, limit)).collect();
        errors.push((62, Error::InvalidTag { tag: -5 }));
        errors.push((63, limit));
        let s = HostError::RankFailed { errors, ranks: 64 }.to_string();
        assert_eq!(
            s,
            "61 of 64 ranks failed: ranks 3-61, 63: MPI_ERR_REQUEST: more than 8 requests active in one \
             request scope; rank 62: MPI_ERR_TAG: tag -5 is outside 0..=2147483647"
        );
    }

    #[test]
    fn rank_failed_lists_the_first_groups() {
        let errors: Vec<_> = (0..10)
            .map(|r| (r, gpu_mpi_device::Error::InvalidTag { tag: -(r as i32) - 1 }))
            .collect();
        let s = HostError::RankFailed { errors, ranks: 64 }.to_string();
        assert!(s.starts_with("10 of 64 ranks failed: rank 0: MPI_ERR_TAG"), "{s}");
        assert!(s.ends_with("; ... and 2 more ranks"), "{s}");
    }
}
