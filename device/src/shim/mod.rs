//! The one module that touches the hardware.
//!
//! Every atomic, fence, thread/block index, block barrier, sleep and clock used
//! by device code goes through here, with one implementation per target chosen
//! by `cfg` (the crossbeam pattern):
//!
//! | cfg | file | what backs it |
//! |---|---|---|
//! | `target_arch = "nvptx64"` | `nvptx.rs` | inline PTX (`ld.acquire.gpu`, `atom.acq_rel.gpu`, `bar.sync`, `nanosleep`, `%globaltimer`) |
//! | `loom` | `loom.rs` | loom's model-checked atomics, one loom thread per rank |
//! | otherwise (the host) | `host.rs` | `core::sync::atomic` on the world memory; indices, block barrier and backoff come from the CPU emulator's scheduler through [`runtime`] |
//!
//! No other file of the project may use `cfg(target_arch)`.
//!
//! All synchronizing operations have device ("gpu") scope: the world lives in
//! one GPU's global memory and nothing outside the kernel races with it.

#[cfg(target_arch = "nvptx64")]
#[path = "nvptx.rs"]
mod imp;

#[cfg(all(not(target_arch = "nvptx64"), loom))]
#[path = "loom.rs"]
mod imp;

#[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
#[path = "host.rs"]
mod imp;

pub use imp::*;

/// Memory ordering of one synchronizing operation (scope is always the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// No ordering; atomicity only.
    Relaxed,
    /// Later accesses stay after this load (pairs with a `Release` store or RMW).
    Acquire,
    /// Earlier accesses stay before this store (pairs with an `Acquire` load or RMW).
    Release,
    /// Both, for read-modify-write operations and fences.
    AcqRel,
}

/// Thread, block and grid coordinates of the calling rank (x dimension only:
/// the world is a 1-D grid of 1-D blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinates {
    /// Thread index inside its block (`threadIdx.x`).
    pub thread: u32,
    /// Block index inside the grid (`blockIdx.x`).
    pub block: u32,
    /// Threads per block (`blockDim.x`).
    pub block_dim: u32,
    /// Blocks in the grid (`gridDim.x`).
    pub grid_dim: u32,
}

/// Exponential backoff for a wait loop that polls shared memory.
///
/// `snooze` is called after each failed poll. On the GPU it sleeps a growing
/// number of nanoseconds; on the CPU emulator it hands the core to another rank
/// and tells the scheduler whether anything happened since the last snooze
/// (the scheduler's exact deadlock detection rests on that); under loom it
/// yields the model thread.
#[derive(Debug)]
pub struct Backoff {
    polls: u32,
    max_ns: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

impl Backoff {
    /// A backoff for a new wait, sleeping at most
    /// [`DEFAULT_BACKOFF_MAX_NS`](crate::state::DEFAULT_BACKOFF_MAX_NS) on the GPU.
    pub const fn new() -> Self {
        Backoff::with_max_ns(crate::state::DEFAULT_BACKOFF_MAX_NS)
    }

    /// A backoff whose sleeps on the GPU grow to at most `max_ns`
    /// nanoseconds (at least 1).
    pub const fn with_max_ns(max_ns: u32) -> Self {
        Backoff {
            polls: 0,
            max_ns: if max_ns == 0 { 1 } else { max_ns },
        }
    }

    /// A backoff whose next snooze counts as a repeated failed poll (not
    /// fresh): for the polls of non-blocking calls and of requests.
    pub(crate) const fn idle(max_ns: u32) -> Self {
        let mut b = Backoff::with_max_ns(max_ns);
        b.polls = 1;
        b
    }

    /// Failed polls since the wait began or since the last [`Backoff::progressed`].
    pub const fn polls(&self) -> u32 {
        self.polls
    }

    /// Says that the caller changed shared state or completed a step since the
    /// last snooze, so the next snooze is not a no-progress poll.
    ///
    /// This is a contract, not a hint: the emulator's exact deadlock detection
    /// treats a snooze after a failed poll with no `progressed` call as "this
    /// rank wrote nothing". A wait loop whose poll writes shared memory (a
    /// completed sub-step of a send-receive, a streamed chunk) and then
    /// snoozes without calling this can make the emulator report a deadlock
    /// that is not one.
    pub fn progressed(&mut self) {
        self.polls = 0;
    }

    /// Gives way after a failed poll.
    pub fn snooze(&mut self) {
        imp::snooze(self.polls, self.max_ns);
        self.polls = self.polls.saturating_add(1);
    }
}

/// Returns a reference to the 32-bit atomic at `base + offset`.
///
/// # Safety
/// `base + offset` must be 4-byte aligned, inside the world memory, valid for
/// the lifetime `'a`, and only ever accessed atomically.
pub unsafe fn atomic_u32_at<'a>(base: *mut u8, offset: usize) -> &'a AtomicU32 {
    // SAFETY: the caller promises alignment, validity and atomic-only access;
    // AtomicU32 is `repr(transparent)` over a `u32` cell in every implementation.
    unsafe { &*(base.add(offset) as *const AtomicU32) }
}

/// Returns a reference to the 64-bit atomic at `base + offset`.
///
/// # Safety
/// As for [`atomic_u32_at`], with 8-byte alignment.
pub unsafe fn atomic_u64_at<'a>(base: *mut u8, offset: usize) -> &'a AtomicU64 {
    // SAFETY: as in `atomic_u32_at`.
    unsafe { &*(base.add(offset) as *const AtomicU64) }
}
