//! The hardware operations a kernel may use beside MPI, for code that
//! mixes message passing with native CUDA-style work (a native baseline,
//! a block-local phase): atomics and fences at device scope, the thread's
//! coordinates, the block barrier, the warp's shuffles, votes and match,
//! the block's shared scratch and the clock. [`block_words`] are the
//! library's own (a kernel that starts a non-blocking collective of the
//! world must leave them alone; the limits' native kernels measure a
//! block-scope atomic on them). They are the shim's own
//! (`device/src/shim`), the same operations the library uses, so they run
//! on the GPU, on the emulator (as scheduler events) and under loom alike.
//!
//! A warp operation's `mask` must name lanes that all call it (PTX's
//! `.sync` rule); [`warp_mask`] gives the lanes of this thread's warp.

pub use crate::shim::{
    active_mask, atomic_u64_at, block_barrier, block_barrier_count, block_words, clock_ns, coordinates,
    copy_bytes, copy_wide, fence, lane_id, match_all_sync, match_all_sync_u64, match_any_sync, shared_block,
    shfl_down_sync, shfl_down_sync_u64, shfl_sync, shfl_sync_u64, shfl_up_sync, shfl_up_sync_u64,
    shfl_xor_sync, shfl_xor_sync_u64, sm_id, vote_all_sync, vote_any_sync, vote_ballot_sync, warp_mask,
    warp_sync, AtomicU32, AtomicU64, Backoff, Coordinates, Ordering, BLOCK_WORDS_BYTES, FULL_MASK,
    SHARED_BLOCK_BYTES,
};
