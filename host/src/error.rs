//! Errors of the host API, shared by every backend.

use crate::report::DeadlockReport;
use gpu_mpi_device::state::ConfigError;
use std::fmt;

/// How many failed ranks [`HostError::RankFailed`] prints before "... and N more".
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
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

    /// A rank's kernel code panicked (emulator only; on the GPU it would trap).
    #[error("rank {rank} panicked: {message}")]
    RankPanicked {
        /// The rank.
        rank: u32,
        /// The panic message.
        message: String,
    },

    /// A rank used more stack than its coroutine has (emulator only).
    #[error(
        "rank {rank} overflowed its {stack_bytes}-byte coroutine stack \
         (raise CpuOptions::stack_bytes)"
    )]
    StackOverflow {
        /// The rank.
        rank: u32,
        /// Usable bytes of each rank's stack.
        stack_bytes: usize,
    },

    /// No GPU could be used (no driver, no device, no PTX, or the cuda
    /// backend is not built in); the text says why.
    #[error("no usable GPU: {0}")]
    NoGpu(String),

    /// A CUDA driver call failed.
    #[error("CUDA error: {0}")]
    Cuda(String),

    /// Memory for a buffer, the world or the rank stacks could not be had.
    #[error("allocation failed: {0}")]
    Alloc(String),
}

/// Display helper of [`HostError::RankFailed`].
struct FailedRanks<'a> {
    errors: &'a [(u32, gpu_mpi_device::Error)],
    ranks: u32,
}

impl fmt::Display for FailedRanks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} ranks failed", self.errors.len(), self.ranks)?;
        for (i, (rank, e)) in self.errors.iter().take(PRINTED_FAILURES).enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}rank {rank}: {e}")?;
        }
        if self.errors.len() > PRINTED_FAILURES {
            write!(f, "; ... and {} more", self.errors.len() - PRINTED_FAILURES)?;
        }
        Ok(())
    }
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
    fn errors_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<HostError>();
    }

    #[test]
    fn rank_failed_lists_the_first_ranks() {
        let errors: Vec<_> = (0..10)
            .map(|r| (r, gpu_mpi_device::Error::InvalidTag { tag: -5 }))
            .collect();
        let s = HostError::RankFailed { errors, ranks: 64 }.to_string();
        assert!(s.starts_with("10 of 64 ranks failed: rank 0: MPI_ERR_TAG"), "{s}");
        assert!(s.ends_with("; ... and 2 more"), "{s}");
    }
}
