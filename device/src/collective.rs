//! Collective communication (MPI standard chapter 6).
//!
//! - [`CommunicatorCollectives::barrier`] is block-wise like the thesis's
//!   (B. D. Young, "MPI within a GPU", 2009, fig. 5.11): the ranks of a block
//!   meet at the block barrier, then one rank per block adds the block's
//!   arrival to the world's one arrival count, the arrival that completes
//!   the barrier releases it through one word, and each block's rank waits
//!   for that word; the block barrier again. Counts only grow (generation
//!   numbers are never reset). The thesis's single-writer counters, one per
//!   block read by every block, cost `blocks²` reads per barrier (5.9x a
//!   CUDA grid barrier on an H100); this is what a grid barrier does.
//! - [`Root::broadcast_into`]: the root stages rounds of the buffer in the
//!   world's broadcast area, a barrier publishes each round.
//! - [`Root::reduce_into_root`], [`CommunicatorCollectives::all_reduce_into`]:
//!   hierarchical: warp, block, grid. Each rank stages a round of its
//!   operand in its scratch cell; each warp folds its lanes with shuffles
//!   (lower lanes always on the left), the warps' partials meet in the
//!   block's shared memory and warp 0 folds them with shuffles (three block
//!   barriers whatever the block size; `World::block_tree`); the block's
//!   leader stages the block's partial result; after a world barrier the
//!   root's block (reduce) or every block (all-reduce) combines the block
//!   results: each rank folds a contiguous run of blocks, then the same
//!   warp/shared-memory fold over those ranks. The result is therefore `x0 op x1 op ... op
//!   x(n-1)` grouped as a balanced tree, which is what MPI 6.9.1 asks of an
//!   associative, possibly non-commutative operation.
//!
//! - The other collectives of the chapter — gather, scatter, all-gather,
//!   all-to-all and their varcount and in-place forms (`exchange`),
//!   reduce-scatter, scans and `reduce_local_into` (`prefix`) — start with
//!   an argument agreement (`agreement`: one all-reduce round), then stage
//!   their data in rounds of `collective_bytes` per rank through the same
//!   cells; docs/architecture.md and docs/limits.md describe them and their
//!   costs.
//!
//! Errors (a bad root, mismatched counts) are detected without leaving the
//! collective early wherever other ranks could still wait for this one: an
//! erroneous rank still takes part in every barrier and returns the error at
//! the end, so a bad argument never turns into a hang.

mod agreement;
mod api;
pub mod immediate;
mod movement;
mod operation;

pub(crate) mod general;
pub(crate) mod hardware;
mod root;
mod scan;
mod world;

pub use api::CommunicatorCollectives;
pub use movement::{Partition, PartitionMut};
pub use operation::{Elements, ElementsMut, Operation, SystemOperation, UserOperation};
pub use root::Root;
pub use scan::reduce_local_into;
