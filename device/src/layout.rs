//! The world state: one block of device-global memory, laid out by the host.
//!
//! The host sizes it from a [`WorldConfig`], zeroes it and writes the header
//! before the launch, so no rank does initialisation work at start-up (the
//! thesis's `MPI_Init` spent 0.07 ms on it). Layout, in order, each region
//! 64-byte aligned but the result records (right after the wait records,
//! 16-byte aligned; only the host reads them):
//!
//! | region | size | contents |
//! |---|---|---|
//! | header | 512 B | magic, version, [`WorldConfig`], abort flag, [`Layout`] |
//! | barrier | 320 B, at [`GRID_BARRIER_OFFSET`] | the world barrier's [`GridBarrier`](crate::records::GridBarrier) (the blocks' arrival counts, a word per generation modulo 4, and a keyed barrier's keys, a line per generation; the blocks poll the count) |
//! | wait records | `ranks × 16`, at [`WAIT_RECORDS_OFFSET`] | per rank: a [`WaitRecord`](crate::records::WaitRecord): state, operation, peer, tag (what the deadlock report prints) |
//! | results | `ranks × 32` | per rank: a [`ResultRecord`](crate::records::ResultRecord): the kernel's return value as an [`ErrorClass`](crate::ErrorClass) and four detail words |
//! | trace | `ranks × (32 + trace_events × 32)`, none when tracing is off | per rank: a [`TraceHeader`](crate::trace::TraceHeader) and its [`TraceEvent`](crate::trace::TraceEvent)s (`crate::trace`) |
//! | outboxes | `ranks × slots_per_rank × (64 + slot_bytes)` | per sending rank: its slots, each a [`SlotHeader`](crate::records::SlotHeader) and `slot_bytes` of payload (the thesis's sender-side buffering) |
//! | slot states | `ranks × slots_per_rank × 4` | per slot, in slot-id order, its state word ([`SlotState`](crate::records::SlotState) and the destination): a rank's slots side by side, so that a receive's scan of one sender's slots, or a sender's of its own, loads one line |
//! | ranks | `ranks × (80 + records × 64)` | per rank: its [`RankHeader`](crate::records::RankHeader) (inbox, unexpected queue, active list) and `requests_per_rank + 2` [`RequestRecord`](crate::records::RequestRecord)s |
//! | broadcast | `2 × collective_bytes` | the root's chunk of a broadcast |
//! | block scratch | `2 × blocks × collective_bytes` | per block: its partial reduction |
//! | rank scratch | `2 × ranks × collective_bytes` | per rank: its reduction operand, folded inside the block by warp shuffles (the cells of the warps' first ranks hold the warps' partials when they do not fit the block's shared memory) |
//! | communicators | `64 + communicators × (ranks × 16 + warps × 4)` (each table rounded up to 64) | the context counter, then per communicator context one table of `ranks` [`CommEntry`](crate::records::CommEntry)s (members, inverse map, colours and keys of its creation) followed by one [`WarpWord`](crate::records::WarpWord) per warp of the world (its communicator kind and the agreement counter of its warp collectives) |
//! | immediate | `IMMEDIATE_SLOTS × ((64 + immediate_bytes) × (1 + nodes) + ranks × immediate_bytes + words)`, `nodes` = [`immediate_tree_nodes`]`(ranks)`, `words` = [`immediate_words`]`(ranks) × 8` rounded up to 64 | the non-blocking collectives' staging slots (`crate::collective::immediate`): per slot its world record and result cell, per node of its arrival tree its record and partial-result cell, per rank its argument header and operand cell, then the ranks' and the nodes' small words side by side (a reduction's first 8 bytes, [`Layout::immediate_word`]) |
//! | immediate local | `ranks × 64` | per rank, private to it: its [`ImmediateLocal`](crate::collective::immediate::ImmediateLocal) record (how many non-blocking collectives it started, and per slot what it keeps of the one it has outstanding) |
//! | immediate communicators | `communicators × ranks × (128 + IMMEDIATE_SLOTS × (64 + 2 × immediate_bytes))` with [`FLAG_IMMEDIATE_COMMUNICATORS`], else 0 | per communicator context: per world rank its [`CommImmediateLocal`](crate::collective::immediate::CommImmediateLocal); then per slot and table entry a group record (used at a group's first entry), a result cell and the member's argument and operand cell |
//! | windows | `64 + windows × ranks × window_stride + shared` (none without windows), `window_stride` = [`WINDOW_ENTRY_BYTES`] + `window_bytes` rounded up to 64, `shared` = `blocks × 8` rounded up to 64 with `shared_window_bytes`, else 0 | the one-sided windows (`crate::window`, MPI 4.1 chapter 12): a header (the mask of window ids in use), then per window id one entry per world rank: its descriptor line (base, size, displacement unit, datatype), its synchronisation line (the passive-target lock word, the notification counters), its region line (the regions attached to a dynamic window) and `window_bytes` of memory for `Window::allocate`; then, with shared window memory, per block the word of the parts of it in use (`Window::allocate_shared`) |
//! | kernel scratch | `ranks × (64 + scratch_bytes rounded up to 64)`, none when `scratch_bytes` is 0 | per rank, private to it: a 64-byte header (the word that says a [`Scratch`](crate::kernel::Scratch) is taken) and the rank's scratch bytes ([`WorldConfig::scratch_bytes`], `World::scratch`) |
//!
//! The barrier and the wait records lie at fixed offsets, so that a world
//! barrier's round and a wait's record need no read of the layout (which the
//! GPU loads again after every atomic, from L2 after an acquire); the host
//! reads back the header, the wait and result records and the trace
//! buffers, [`Layout::front`], in one copy.
//!
//! The three staging regions come in two halves used by alternate rounds of
//! the collectives (every rank counts the rounds alike), so that a round's
//! data is read while the next round writes the other half: one world
//! barrier per round instead of two.

use bytemuck::{Pod, Zeroable};

/// "GPMI" in little-endian.
pub const MAGIC: u32 = 0x494d_5047;
/// Version of this layout; the device refuses other versions (6: trace
/// events carry a context word; cells of the non-blocking collectives;
/// 7: each rank's private record of its non-blocking collectives; 8: the
/// rank header's deferred slot returns; 9: a word per warp after each
/// communicator table; 10: the communicator contexts' non-blocking
/// collective state; 11: the world barrier's one arrival counter and
/// release word, regions from the barrier on 64-byte aligned; 12: the
/// keys of a keyed world barrier beside the arrival counter; 13: the
/// ranks' scratch region and `WorldConfig::scratch_bytes`; 14: shared
/// window memory in the blocks' shared memory; 15: a keyed
/// world barrier's key of several words, a line per generation; 16: a
/// rank header's fields reordered, its two unused words now the start of
/// its current wait; 17: the non-blocking collectives' node tallies, no
/// consumption counters; 18: the world barrier and the wait records at
/// fixed offsets after the header, then the results and the trace
/// buffers, the blocks' unused barrier records gone; 19: a slot header's
/// words in three 16-byte rows, the links, the envelope and the rest of
/// the message, for vector accesses; 20: the slots' state words out of
/// their headers, in a region of their own, a rank's side by side; 21: a
/// rank header of 80 bytes, its slot mask and next sequence number one
/// 16-byte row, every rank's header and records 16-byte aligned).
pub const VERSION: u32 = 21;

/// `flags` bit: never let a receiver copy straight out of the sender's buffer;
/// stream every large message through a slot (the path a GPU takes for a
/// buffer in a thread's local memory). Lets the emulator test that path.
pub const FLAG_FORCE_STREAMING: u32 = 1;
/// [`WorldConfig::flags`] bit: every communicator context gets the state
/// of non-blocking collectives (`crate::collective::immediate`), so that
/// sub-communicators have them too; without it they fail with
/// `MPI_ERR_COMM`.
pub const FLAG_IMMEDIATE_COMMUNICATORS: u32 = 2;
/// `WorldConfig::flags`: the world spreads over processes (`mpiexec`;
/// docs/distributed.md). Set by the host; with the device's `distributed`
/// feature the host's relays then complete the world collectives'
/// barriers with the cells they read, and its non-blocking ones (and a
/// communicator's, when its group spans processes); what needs every
/// rank's memory in this process (windows; without the feature, every
/// collective but the world barrier) fails with `MPI_ERR_OTHER`
/// (`Error::AcrossProcesses`) on every rank that enters it.
pub const FLAG_ACROSS_PROCESSES: u32 = 4;

/// Longest sleep between two polls of a GPU wait when the world's config
/// says 0 (`WorldConfig::backoff_max_ns`).
pub const DEFAULT_BACKOFF_MAX_NS: u32 = 1024;

/// Bytes of the header region.
pub const HEADER_BYTES: usize = 512;
/// The GPU module's constant-bank copy of the header (ptx-builder links
/// it into every module, `HEADER_BYTES` long), which the cuda backend fills
/// before each launch: the ranks read the config and the layout there
/// (`shim::descriptors`).
pub const DESCRIPTORS_SYMBOL: &str = "gpu_mpi_descriptors";
/// Offset of the [`Layout`] inside the header: the host writes it, ranks
/// read its fields where they need them (kept in registers, its twenty
/// words would cost every kernel as many registers), from the constant
/// bank on the GPU ([`DESCRIPTORS_SYMBOL`]).
pub const LAYOUT_OFFSET: usize = 256;
/// Offset of the config inside the header.
pub const CONFIG_OFFSET: usize = 16;
/// Offset of the abort word (0: running; otherwise 1 + the rank that
/// aborted, with [`ABORT_TIMED_OUT`] when a wait of it timed out).
pub const ABORT_OFFSET: usize = 128;
/// Bit of the abort word: the abort was a wait's timeout, not a call of
/// `World::abort` (the host reports the two apart).
pub const ABORT_TIMED_OUT: u32 = 1 << 31;
/// Bytes of a slot's state word (the slot states region).
pub const SLOT_STATE_BYTES: usize = 4;
/// Bytes of a slot's header ([`SlotHeader`](crate::records::SlotHeader)), before its payload.
pub const SLOT_HEADER_BYTES: usize = 64;
/// Bytes of a rank's header ([`RankHeader`](crate::records::RankHeader)).
pub const RANK_HEADER_BYTES: usize = 80;
/// Bytes of one request record ([`RequestRecord`](crate::records::RequestRecord)).
pub const RECORD_BYTES: usize = 64;
/// Records of each rank kept for blocking calls (a send-receive uses two),
/// beside the `requests_per_rank` of its request scopes.
pub const BLOCKING_RECORDS: u32 = 2;
/// Most slots per rank (the engine keeps them in a 64-bit mask).
pub const MAX_SLOTS_PER_RANK: u32 = 64;
/// Most request records per rank, `requests_per_rank + BLOCKING_RECORDS`
/// (a 32-bit mask).
pub const MAX_RECORDS_PER_RANK: u32 = 32;
/// Bytes of the world barrier's record
/// ([`GridBarrier`](crate::records::GridBarrier)).
pub const GRID_BARRIER_BYTES: usize = 320;
/// Offset of the world barrier's record: right after the header, the same
/// in every world.
pub const GRID_BARRIER_OFFSET: usize = HEADER_BYTES;
/// Offset of rank 0's wait record: right after the world barrier's
/// record, the same in every world (rank `r`'s at `r ×`
/// [`RECORD_STRIDE`] from it).
pub const WAIT_RECORDS_OFFSET: usize = GRID_BARRIER_OFFSET + GRID_BARRIER_BYTES;
/// Most 32-bit words of a keyed world barrier's key
/// ([`GridBarrier::keys`](crate::records::GridBarrier)): the argument
/// agreement's six.
pub const BARRIER_KEY_WORDS: usize = 6;
/// Bytes of one rank's wait record.
pub const RECORD_STRIDE: usize = 16;
/// Bytes of one rank's result record.
pub const RESULT_STRIDE: usize = 32;
/// Bytes of a rank's trace header ([`TraceHeader`](crate::trace::TraceHeader)).
pub const TRACE_HEADER_BYTES: usize = 32;
/// Bytes of one trace event ([`TraceEvent`](crate::trace::TraceEvent)).
pub const TRACE_EVENT_BYTES: usize = 32;
/// Largest payload of a slot (1 GiB): a slot's stride then fits 32 bits
/// (`Layout::slot_of_id`).
pub const MAX_SLOT_BYTES: u32 = 1 << 30;
/// Most events a rank's trace buffer may hold (64 MiB per rank).
pub const MAX_TRACE_EVENTS: u32 = 1 << 21;
/// Staging slots of the non-blocking collectives: how many a rank may have
/// outstanding at once (`crate::collective::immediate`).
pub const IMMEDIATE_SLOTS: u32 = 2;
/// Default bytes of one rank's cell of a non-blocking collective
/// ([`WorldConfig::immediate_bytes`]): a 16-byte argument header and 48
/// bytes of operand.
pub const DEFAULT_IMMEDIATE_BYTES: u32 = 64;
/// Bytes of the records of a non-blocking collective's slot (world and
/// node records, each before its cell).
pub const IMMEDIATE_RECORD_BYTES: usize = 64;
/// Children of a node of the world's arrival tree of the non-blocking
/// collectives (`crate::collective::immediate`): 32 ranks at level 0, 32
/// nodes of the level below at each level above.
#[cfg(not(loom))]
pub const IMMEDIATE_FANOUT: u32 = 32;
/// Under loom, 2, so that worlds of a few ranks climb a tree of several
/// levels (device/tests/loom.rs); the protocol does not depend on it.
#[cfg(loom)]
pub const IMMEDIATE_FANOUT: u32 = 2;

/// Nodes a slot of the world's non-blocking collectives has in a block's
/// library words (`shim::block_words`), each with its
/// [`IMMEDIATE_BLOCK_NODE_WORDS`] tally words: the level-0 nodes whose
/// ranks all lie in the block, node `n` at place `n - floor(s /
/// IMMEDIATE_FANOUT)` of its slot for a block whose first rank is item
/// `s` of the tree (`collective::immediate`), and where level 1 has one
/// node per block ([`immediate_block_fanout`]), that node at place
/// `block_dim / IMMEDIATE_FANOUT`, after the block's level-0 nodes; a node
/// whose place would lie past them keeps its tally words in its record.
pub const IMMEDIATE_BLOCK_NODES: u32 = 33;

/// Children of a node at level 1 of the world's arrival tree of the
/// non-blocking collectives over `ranks` ranks in blocks of `block_dim`:
/// the block's level-0 nodes (`block_dim / IMMEDIATE_FANOUT`: level 1 has
/// one node per block, inside the block, and the levels above span
/// blocks) where [`immediate_block_level`] says so, else
/// [`IMMEDIATE_FANOUT`]. In a world across processes, whose processes'
/// trees start anywhere, level 1 is as the others (`collective::immediate`).
pub const fn immediate_block_fanout(ranks: u32, block_dim: u32) -> u32 {
    level_one_fanout(immediate_block_level(ranks, block_dim), block_dim)
}

/// Children of a node at level 1: the block's level-0 nodes where level 1
/// has one node per block, else [`IMMEDIATE_FANOUT`].
const fn level_one_fanout(per_block: bool, block_dim: u32) -> u32 {
    if per_block {
        block_dim / IMMEDIATE_FANOUT
    } else {
        IMMEDIATE_FANOUT
    }
}

/// Children whose small words a node's last arriver loads in one batch
/// (`collective::immediate`): half a node, eight 16-byte loads.
pub const IMMEDIATE_SMALL_BATCH: u32 = 16;

/// Whether level 1 of the arrival tree of a collective that folds small
/// words (a world reduction of elements of at most 8 bytes:
/// `collective::immediate`'s `Fold::SMALL`) has one node per block: where
/// [`immediate_block_level`] says so, and also where the tree of
/// `IMMEDIATE_FANOUT` children everywhere would leave its top more
/// children than one batch loads ([`IMMEDIATE_SMALL_BATCH`]), in blocks of
/// a multiple of the fanout holding at least two level-0 nodes: 513 to
/// 1,024 ranks in blocks of 256. The top's last arriver then loads a few
/// blocks' partial results from L2 instead of two batches of level-0
/// nodes', and the block's node loads its level-0 nodes' from shared
/// memory (docs/performance.md, "A folding collective's tree has a level
/// for each block where its top would load two batches"). A barrier keeps
/// [`immediate_block_level`]'s shape, for which the level would only add
/// a block-scope add to its path.
pub const fn immediate_fold_block_level(ranks: u32, block_dim: u32) -> bool {
    if immediate_block_level(ranks, block_dim) {
        return true;
    }
    block_dim.is_multiple_of(IMMEDIATE_FANOUT)
        && block_dim / IMMEDIATE_FANOUT >= 2
        && top_children(ranks, IMMEDIATE_FANOUT) > IMMEDIATE_SMALL_BATCH
}

/// Whether level 1 of the world's arrival tree over `ranks` ranks in
/// blocks of `block_dim` has one node per block: the block's size a
/// multiple of [`IMMEDIATE_FANOUT`], at least twice it, and the tree so
/// shaped has fewer levels above its first two than the tree of
/// `IMMEDIATE_FANOUT` children everywhere has above its first: those are
/// the levels in global memory (device-scope adds, loads from L2), the
/// first two the block's shared memory. A world of one block (its top
/// then the block's) and blocks of 32 level-0 nodes (the same shape) take
/// it too. Else an extra level in the block costs more than it saves
/// (docs/performance.md, "A level of the non-blocking collectives' tree
/// for each block").
pub const fn immediate_block_level(ranks: u32, block_dim: u32) -> bool {
    let nodes = block_dim / IMMEDIATE_FANOUT;
    if !block_dim.is_multiple_of(IMMEDIATE_FANOUT) || nodes < 2 {
        return false;
    }
    if ranks <= block_dim || nodes == IMMEDIATE_FANOUT {
        return true;
    }
    levels_above(ranks.div_ceil(block_dim)) < levels_above(ranks.div_ceil(IMMEDIATE_FANOUT))
}

/// Levels of `IMMEDIATE_FANOUT` children above a level of `nodes` nodes.
const fn levels_above(mut nodes: u32) -> u32 {
    let mut levels = 0;
    while nodes > 1 {
        nodes = nodes.div_ceil(IMMEDIATE_FANOUT);
        levels += 1;
    }
    levels
}

/// Words of a node's tally in a block's library words, as in its record
/// (`NodeRecord::tally`): the arrival word and the three packed words its
/// children OR their root, datatype and byte count into.
pub const IMMEDIATE_BLOCK_NODE_WORDS: u32 = 4;

/// How many of a slot's [`IMMEDIATE_BLOCK_NODES`] places a block of
/// `block_dim` ranks can use: a level-0 node inside the block is at most
/// place `floor((block_dim - 1) / IMMEDIATE_FANOUT) + 1` (the block's
/// first rank need not start a node), the block's level-1 node at place
/// `block_dim / IMMEDIATE_FANOUT` (where the size is a multiple of the
/// fanout). A kernel's entry zeroes their words alone, so that a block of
/// one rank stores 16 words, not 264.
pub const fn immediate_block_words(block_dim: u32) -> u32 {
    let used = block_dim.saturating_sub(1) / IMMEDIATE_FANOUT + 2;
    if used < IMMEDIATE_BLOCK_NODES {
        used
    } else {
        IMMEDIATE_BLOCK_NODES
    }
}

/// Node records of a slot of the world's arrival tree of the non-blocking
/// collectives over `ranks` ranks in blocks of `block_dim`: those of the
/// tree of a collective that folds small words, `ceil(ranks / 32)` at
/// level 0, `ceil` of that `/` the level-1 fanout at level 1 (one a block
/// where [`immediate_fold_block_level`] says so), `ceil` of that `/ 32` at
/// level 2, and so on up to the single top node. The other collectives'
/// tree ([`immediate_block_fanout`]'s) has no more: it differs only in
/// lacking the level of blocks, so its nodes are the first of these
/// records and its top one of them; every use's top counts its rounds in
/// the last record's words, whatever its tree (`World::top_round`). A
/// process's tree in a world across processes (fanout 32 at every level)
/// has no more either.
pub const fn immediate_tree_nodes(ranks: u32, block_dim: u32) -> u32 {
    tree_nodes(
        ranks,
        level_one_fanout(immediate_fold_block_level(ranks, block_dim), block_dim),
    )
}

/// The top node of the arrival tree of the collectives that fold no
/// small words (a barrier's: [`immediate_block_fanout`]'s shape) over
/// `ranks` ranks in blocks of `block_dim`: its last node, one of
/// [`immediate_tree_nodes`]'s records. Its record holds the round words
/// of every use's top, whatever that use's tree (`World::top_round`).
pub const fn immediate_top_node(ranks: u32, block_dim: u32) -> u32 {
    tree_nodes(ranks, immediate_block_fanout(ranks, block_dim)) - 1
}

/// Nodes of a tree over `ranks` ranks whose level 1 has `next` children
/// a node and every other level [`IMMEDIATE_FANOUT`].
const fn tree_nodes(ranks: u32, next: u32) -> u32 {
    let (mut count, mut fanout, mut next) = (ranks, IMMEDIATE_FANOUT, next);
    let mut total = 0;
    loop {
        let nodes = count.div_ceil(fanout);
        total += nodes;
        if nodes <= 1 {
            return total;
        }
        (count, fanout, next) = (nodes, next, IMMEDIATE_FANOUT);
    }
}

/// Children of the top node of the arrival tree of the collectives that
/// fold no small words (a barrier's: [`immediate_block_fanout`]'s shape)
/// over `ranks` ranks in blocks of `block_dim`, in one process.
pub const fn immediate_top_children(ranks: u32, block_dim: u32) -> u32 {
    top_children(ranks, immediate_block_fanout(ranks, block_dim))
}

/// Children of the top of a tree over `ranks` ranks whose level 1 has
/// `next` children a node and every other level [`IMMEDIATE_FANOUT`].
const fn top_children(ranks: u32, next: u32) -> u32 {
    let (mut count, mut fanout, mut next) = (ranks, IMMEDIATE_FANOUT, next);
    while count > fanout {
        (count, fanout, next) = (count.div_ceil(fanout), next, IMMEDIATE_FANOUT);
    }
    count
}

/// Small words of a slot of the non-blocking collectives over `ranks`
/// ranks ([`Layout::immediate_word`]): one per rank, `ranks` rounded up
/// to even, one per node of the arrival tree, and one more, so that a
/// 16-byte load of two neighbours' words that starts at an even index
/// stays inside.
pub const fn immediate_words(ranks: u32, block_dim: u32) -> u32 {
    ranks.next_multiple_of(2) + immediate_tree_nodes(ranks, block_dim) + 1
}

/// Bytes of a block's launch-sized shared memory (CUDA's dynamic shared
/// memory) that hold the small words of the world's non-blocking
/// collectives' first levels inside the block (`collective::immediate`)
/// for a block of `block_dim` ranks: per slot one 8-byte word a rank and
/// one a place of [`IMMEDIATE_BLOCK_NODES`] (a level-0 node's partial
/// result), rounded up to 64 ([`block_small_word`]).
pub const fn immediate_shared_bytes(block_dim: u32) -> u64 {
    (IMMEDIATE_SLOTS as u64 * block_small_stride(block_dim) as u64 * 8).next_multiple_of(64)
}

/// Small words of a slot in a block's launch-sized shared memory
/// ([`block_small_word`]): a rank's and a place's each, rounded up to
/// even, so that every slot's words start 16-aligned (two neighbours per
/// 16-byte load).
const fn block_small_stride(block_dim: u32) -> u32 {
    (block_dim + IMMEDIATE_BLOCK_NODES).next_multiple_of(2)
}

/// Bytes of each block's launch-sized shared memory (CUDA's dynamic
/// shared memory, what a launch asks for): its shared window memory
/// (`shared_window_bytes`) rounded up to 64, then
/// [`immediate_shared_bytes`]`(block_dim)`.
pub const fn launch_shared_bytes(shared_window_bytes: u64, block_dim: u32) -> u64 {
    shared_window_bytes.next_multiple_of(64) + immediate_shared_bytes(block_dim)
}

/// Offset of small word `index` of slot `slot` in a block's launch-sized
/// shared memory of `len` bytes, where the world's non-blocking
/// collectives keep the small words of the nodes inside the block
/// (`collective::immediate`): index `t < block_dim` the block's rank
/// `t`'s, `block_dim + p` the partial result of the level-0 node at place
/// `p`. They are the last [`immediate_shared_bytes`]`(block_dim)` bytes,
/// per slot `block_dim + IMMEDIATE_BLOCK_NODES` words rounded up to even,
/// so after the shared
/// window memory in a launch of the host's (which gives
/// [`launch_shared_bytes`]). None where `len` cannot hold them (a launch
/// of another's that gave less): the nodes then keep them in the world
/// memory. Every rank of a block gets the same answer from the same
/// `len`, so a node's children and its last arriver agree.
pub const fn block_small_word(len: usize, block_dim: u32, slot: u32, index: u32) -> Option<usize> {
    match len.checked_sub(immediate_shared_bytes(block_dim) as usize) {
        Some(first) => Some(first + (slot * block_small_stride(block_dim) + index) as usize * 8),
        None => None,
    }
}

/// Bytes of each rank's private record of its non-blocking collectives
/// ([`ImmediateLocal`](crate::collective::immediate::ImmediateLocal)).
pub const IMMEDIATE_LOCAL_BYTES: usize = 64;
/// Bytes of each rank's private record of its non-blocking collectives on
/// one communicator context
/// ([`CommImmediateLocal`](crate::collective::immediate::CommImmediateLocal)).
pub const COMM_IMMEDIATE_LOCAL_BYTES: usize = 128;
/// Communicators a world holds by default ([`WorldConfig::communicators`]).
pub const DEFAULT_COMMUNICATORS: u32 = 4;
/// Most communicators a world may hold: a message's context word
/// (`2 × id + 1` at most) fits the 16 bits a request record keeps for it.
pub const MAX_COMMUNICATORS: u32 = 1024;
/// Bytes per world rank of one communicator table
/// (`ranks` [`CommEntry`](crate::records::CommEntry)s): its member, inverse, colour
/// and key words.
pub const COMM_TABLE_ENTRY_BYTES: usize = 16;
/// Bytes per warp of one communicator table, after its entries: its
/// [`WarpWord`](crate::records::WarpWord).
pub const COMM_WARP_WORD_BYTES: usize = 4;
/// Bytes of the communicator area's header (a line of its own): the
/// context counter, then the range of context ids this process draws from
/// ([`Layout::write_context_range`]) and, in a world across processes, the
/// ranks it runs ([`Layout::write_process_ranks`]).
pub const COMM_HEADER_BYTES: usize = 64;
/// Offset, in the communicator area's header, of one more than the last
/// context id this process may hand out (0: no range given, every id up to
/// [`WorldConfig::communicators`]).
pub const COMM_RANGE_END_OFFSET: usize = 4;
/// Offset, in the communicator area's header, of how many context ids
/// that range holds (the limit a creation that finds it used up reports).
pub const COMM_RANGE_COUNT_OFFSET: usize = 8;
/// Offset, in the communicator area's header, of the first world rank this
/// process runs ([`Layout::write_process_ranks`]).
pub const PROCESS_FIRST_OFFSET: usize = 12;
/// Offset, in the communicator area's header, of how many ranks this
/// process runs (0: no range given, the whole world).
pub const PROCESS_RANKS_OFFSET: usize = 16;
/// Bytes before each rank's scratch (a line holding the word that says
/// the scratch is taken).
pub const SCRATCH_HEADER_BYTES: usize = 64;
/// Windows a world holds by default ([`WorldConfig::windows`]): none,
/// as the other per-rank state a program may not use (scratch, the
/// sub-communicators' non-blocking collectives), so that a full GPU
/// world's memory stays within a gibibyte.
pub const DEFAULT_WINDOWS: u32 = 0;
/// Most windows a world may hold at once: their ids are the bits of one
/// 64-bit mask.
pub const MAX_WINDOWS: u32 = 64;
/// Bytes of the windows region's header (the mask of ids in use, a line
/// of its own).
pub const WINDOW_HEADER_BYTES: usize = 64;
/// Bytes of one rank's entry of a window before its allocated memory: a
/// descriptor line, a synchronisation line and a region line
/// (`crate::window`).
pub const WINDOW_ENTRY_BYTES: usize = 192;
/// Offset of the passive-target lock word in a rank's entry of a window
/// (its synchronisation line): [`WINDOW_LOCK_EXCLUSIVE`] with the
/// holder's world rank + 1, or the count of shared holders. The host's
/// deadlock report reads it.
pub const WINDOW_LOCK: usize = 64;
/// Bit of a window's lock word: held exclusively.
pub const WINDOW_LOCK_EXCLUSIVE: u32 = 1 << 31;
/// Targets of one window a rank may hold locks of at once (their list
/// lives in the rank's `Window` value; `lock_all` has no limit).
pub const MAX_LOCKS: u32 = 6;
/// Regions a rank may have attached to one dynamic window at once
/// (`Window::attach`): a base and a length each, in its entry's third
/// line.
pub const MAX_REGIONS: u32 = 4;
/// Notification counters of each rank's entry of a window
/// (`Window::put_notify`).
pub const NOTIFICATIONS: u32 = 8;
/// Posts (`Window::post`) a rank's entry of a window holds for it before
/// its `start` takes them; a target posting to an origin whose slots are
/// all full waits.
pub const POST_SLOTS: u32 = 6;
/// Most bytes of window memory per rank ([`WorldConfig::window_bytes`]).
pub const MAX_WINDOW_BYTES: u32 = 1 << 30;
/// Most bytes of a block's shared memory for shared-memory windows
/// ([`WorldConfig::shared_window_bytes`]): 227 KiB, what one block of an
/// sm_90 GPU may have (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
pub const MAX_SHARED_WINDOW_BYTES: u64 = 227 << 10;
/// Bytes of each block's word in the windows region's header that says
/// which parts of its shared window memory are in use.
pub const SHARED_WINDOW_WORD_BYTES: usize = 8;
/// Most scratch bytes a rank may have ([`WorldConfig::scratch_bytes`]):
/// 1 GiB, so that every size and error field fits 32 bits.
pub const MAX_SCRATCH_BYTES: u64 = 1 << 30;

/// Limits of one world, chosen by the host. Every field is checked by
/// [`WorldConfig::layout`]; the docs (docs/limits.md) say what exceeding each gives.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct WorldConfig {
    /// Ranks in the world: one per GPU thread.
    pub ranks: u32,
    /// Ranks per block (threads per block). `ranks` must be a multiple.
    pub block_dim: u32,
    /// Message slots in each rank's outbox (messages it has sent that are not yet received).
    pub slots_per_rank: u32,
    /// Payload bytes per slot (multiple of 64). Larger messages go by rendezvous.
    pub slot_bytes: u32,
    /// Largest message in bytes; a larger send fails with `MPI_ERR_BUFFER`.
    pub max_message_bytes: u32,
    /// Bytes each rank and block may stage per round of a collective
    /// (multiple of 64; larger collectives go in several rounds).
    pub collective_bytes: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Longest sleep, in nanoseconds, between two polls of a waiting rank on
    /// the GPU (waits sleep 32 ns after a failed poll, doubling up to this);
    /// 0: [`DEFAULT_BACKOFF_MAX_NS`]. The emulator ignores it.
    pub backoff_max_ns: u32,
    /// Requests a rank may have outstanding in its request scopes at once
    /// (at most `MAX_RECORDS_PER_RANK - BLOCKING_RECORDS`); one more fails
    /// with `MPI_ERR_REQUEST`.
    pub requests_per_rank: u32,
    /// Events each rank may record in its trace buffer (0: tracing off,
    /// no trace region). `crate::trace` says what is recorded.
    pub trace_events: u32,
    /// Communicators (beyond the world) the launch may create, each a
    /// context of its own (MPI 4.1 §7.1.2): [`COMM_TABLE_ENTRY_BYTES`] per
    /// rank each; creating one more fails with `MPI_ERR_COMM` on every rank
    /// of the parent. At most [`MAX_COMMUNICATORS`].
    pub communicators: u32,
    /// Bytes of each rank's staging cell per slot of the non-blocking
    /// collectives (a multiple of 64, at least 64): a 16-byte argument
    /// header, then the operand, so a non-blocking collective moves at most
    /// `immediate_bytes - 16` bytes; more fails with `MPI_ERR_BUFFER`.
    /// Also the size of each slot's result and block cells.
    pub immediate_bytes: u32,
    /// One-sided windows (`crate::window`) the launch may have at once
    /// (a freed one's id is used again); creating one more fails with
    /// `MPI_ERR_WIN` on every rank of its communicator. At most
    /// [`MAX_WINDOWS`].
    pub windows: u32,
    /// Bytes of memory per rank and window for `Window::allocate`
    /// (`MPI_Win_allocate`), rounded up to 64; 0: none (an allocation of
    /// more fails with `MPI_ERR_NO_MEM`). At most [`MAX_WINDOW_BYTES`].
    pub window_bytes: u32,
    /// A wait gives up after this many nanoseconds (0: never; the CPU
    /// emulator detects deadlocks exactly and needs no timeout).
    pub timeout_ns: u64,
    /// Bytes of each rank's scratch in the world memory (0: none), rounded
    /// up to a multiple of 64; at most [`MAX_SCRATCH_BYTES`]. A rank
    /// reaches its own through `World::scratch`; a request beyond it fails
    /// with `MPI_ERR_NO_MEM`.
    pub scratch_bytes: u64,
    /// Bytes of each block's shared memory given at launch to the
    /// shared-memory windows of communicators inside one block
    /// (`Window::allocate_shared`; CUDA's dynamic shared memory); 0: none.
    /// At most [`MAX_SHARED_WINDOW_BYTES`]; only with `windows`. The
    /// launch gives each block [`WorldConfig::launch_shared_bytes`]: this
    /// and the non-blocking collectives' small words after it.
    pub shared_window_bytes: u64,
}

impl WorldConfig {
    /// Bytes of dynamic shared memory a launch of this world gives each
    /// block ([`launch_shared_bytes`]): its shared window memory and the
    /// non-blocking collectives' small words
    /// ([`immediate_shared_bytes`]`(block_dim)`).
    pub const fn launch_shared_bytes(&self) -> u64 {
        launch_shared_bytes(self.shared_window_bytes, self.block_dim)
    }

    /// Defaults for `ranks` ranks in blocks of `block_dim`: 8 slots of 256 B,
    /// 8 requests, 1 MiB messages, 256 B collective rounds, no timeout.
    pub const fn new(ranks: u32, block_dim: u32) -> Self {
        WorldConfig {
            ranks,
            block_dim,
            slots_per_rank: 8,
            slot_bytes: 256,
            max_message_bytes: 1 << 20,
            collective_bytes: 256,
            flags: 0,
            backoff_max_ns: 0,
            requests_per_rank: 8,
            trace_events: 0,
            communicators: DEFAULT_COMMUNICATORS,
            immediate_bytes: DEFAULT_IMMEDIATE_BYTES,
            windows: DEFAULT_WINDOWS,
            window_bytes: 0,
            timeout_ns: 0,
            scratch_bytes: 0,
            shared_window_bytes: 0,
        }
    }

    /// Request records of each rank: its requests and the blocking calls'.
    pub const fn records_per_rank(&self) -> u32 {
        self.requests_per_rank + BLOCKING_RECORDS
    }

    /// The longest sleep between two polls of a GPU wait: `backoff_max_ns`,
    /// or [`DEFAULT_BACKOFF_MAX_NS`] where that is 0.
    pub const fn effective_backoff_max_ns(&self) -> u32 {
        match self.backoff_max_ns {
            0 => DEFAULT_BACKOFF_MAX_NS,
            ns => ns,
        }
    }

    /// Checks the config and computes where each region lies.
    pub fn layout(&self) -> Result<Layout, ConfigError> {
        if self.ranks == 0 {
            return Err(ConfigError::NoRanks);
        }
        if self.block_dim == 0 || !self.ranks.is_multiple_of(self.block_dim) {
            return Err(ConfigError::BlockDim {
                ranks: self.ranks,
                block_dim: self.block_dim,
            });
        }
        if self.slots_per_rank == 0 {
            return Err(ConfigError::NoSlots);
        }
        if self.slots_per_rank > MAX_SLOTS_PER_RANK {
            return Err(ConfigError::TooManySlots(self.slots_per_rank));
        }
        if self.requests_per_rank == 0 || self.records_per_rank() > MAX_RECORDS_PER_RANK {
            return Err(ConfigError::Requests(self.requests_per_rank));
        }
        if (self.ranks as u64) * (self.slots_per_rank as u64) >= (u32::MAX - 1) as u64 {
            return Err(ConfigError::TooManyRanks(self.ranks));
        }
        if self.slot_bytes == 0 || !self.slot_bytes.is_multiple_of(64) || self.slot_bytes > MAX_SLOT_BYTES {
            return Err(ConfigError::SlotBytes(self.slot_bytes));
        }
        if self.collective_bytes == 0 || !self.collective_bytes.is_multiple_of(64) {
            return Err(ConfigError::CollectiveBytes(self.collective_bytes));
        }
        if self.immediate_bytes == 0 || !self.immediate_bytes.is_multiple_of(64) {
            return Err(ConfigError::ImmediateBytes(self.immediate_bytes));
        }
        if self.ranks > (i32::MAX as u32) {
            return Err(ConfigError::TooManyRanks(self.ranks));
        }
        if self.trace_events > MAX_TRACE_EVENTS {
            return Err(ConfigError::TraceEvents(self.trace_events));
        }
        if self.communicators > MAX_COMMUNICATORS {
            return Err(ConfigError::Communicators(self.communicators));
        }
        if self.scratch_bytes > MAX_SCRATCH_BYTES {
            return Err(ConfigError::ScratchBytes(self.scratch_bytes));
        }
        if self.windows > MAX_WINDOWS {
            return Err(ConfigError::Windows(self.windows));
        }
        if self.window_bytes > MAX_WINDOW_BYTES {
            return Err(ConfigError::WindowBytes(self.window_bytes));
        }
        if self.shared_window_bytes > MAX_SHARED_WINDOW_BYTES
            || (self.shared_window_bytes != 0 && self.windows == 0)
        {
            return Err(ConfigError::SharedWindowBytes(self.shared_window_bytes));
        }
        let ranks = self.ranks as usize;
        let blocks = (self.ranks / self.block_dim) as usize;
        // An outbox is exactly its slots, one after another, so that slot
        // `id` lies at `outboxes + id × slot_stride` (`Layout::slot_of_id`):
        // no division by the slots per rank on the message path. A slot
        // starts 64-byte aligned (`slot_bytes` is a multiple of 64 and the
        // header 64 bytes): a slot's header is one line, which a receive's
        // batch loads whole.
        let slot_stride = SLOT_HEADER_BYTES + self.slot_bytes as usize;
        let outbox_stride = self.slots_per_rank as usize * slot_stride;
        let rank_stride = RANK_HEADER_BYTES + self.records_per_rank() as usize * RECORD_BYTES;
        let coll = self.collective_bytes as usize;
        // The barrier and the wait records at fixed offsets (the module's
        // doc), then what the host reads back, then the rest. Every region
        // the ranks share starts 64-byte aligned: a barrier record, a
        // collective cell never shares a cache line (or a loom
        // race-tracking line) with another. The result records follow the
        // wait records unaligned (host-only, like them).
        let records = WAIT_RECORDS_OFFSET;
        let results = records + ranks * RECORD_STRIDE;
        let trace = (results + ranks * RESULT_STRIDE).next_multiple_of(64);
        let trace_stride = match self.trace_events {
            0 => 0,
            n => TRACE_HEADER_BYTES + n as usize * TRACE_EVENT_BYTES,
        };
        // The outboxes and the rank headers start on a 128-byte line (the
        // GPU's L1 line), as when the outboxes came first: which words of a
        // rank's header and records share a line is the same in every world.
        let outboxes = (trace + ranks * trace_stride).next_multiple_of(128);
        // The slots' state words apart from their headers, a rank's side by
        // side: a scan of one outbox's states is one line, not one per slot.
        let slot_states = (outboxes + ranks * outbox_stride).next_multiple_of(128);
        let slot_count = ranks * self.slots_per_rank as usize;
        let rank_headers = (slot_states + slot_count * SLOT_STATE_BYTES).next_multiple_of(128);
        let broadcast = (rank_headers + ranks * rank_stride).next_multiple_of(64);
        let block_scratch = broadcast + 2 * coll;
        let rank_scratch = block_scratch + 2 * blocks * coll;
        let comms = rank_scratch + 2 * ranks * coll;
        let warps = blocks * (self.block_dim as usize).div_ceil(32);
        let comm_stride =
            (ranks * COMM_TABLE_ENTRY_BYTES + warps * COMM_WARP_WORD_BYTES).next_multiple_of(64);
        let immediate = comms + COMM_HEADER_BYTES + self.communicators as usize * comm_stride;
        let ib = self.immediate_bytes as usize;
        let immediate_nodes = immediate_tree_nodes(self.ranks, self.block_dim);
        let immediate_slot_stride = (IMMEDIATE_RECORD_BYTES + ib) * (1 + immediate_nodes as usize)
            + ranks * ib
            + (immediate_words(self.ranks, self.block_dim) as usize * 8).next_multiple_of(64);
        let immediate_local = immediate + IMMEDIATE_SLOTS as usize * immediate_slot_stride;
        let immediate_comms = immediate_local + ranks * IMMEDIATE_LOCAL_BYTES;
        let immediate_comm_stride = if self.flags & FLAG_IMMEDIATE_COMMUNICATORS != 0 {
            ranks
                * (COMM_IMMEDIATE_LOCAL_BYTES + IMMEDIATE_SLOTS as usize * (IMMEDIATE_RECORD_BYTES + 2 * ib))
        } else {
            0
        };
        let windows =
            (immediate_comms + self.communicators as usize * immediate_comm_stride).next_multiple_of(64);
        let window_stride = WINDOW_ENTRY_BYTES + (self.window_bytes as usize).next_multiple_of(64);
        // After the entries, with shared window memory, each block's word
        // of its parts in use.
        let shared_words = match self.shared_window_bytes {
            0 => 0,
            _ => (blocks * SHARED_WINDOW_WORD_BYTES).next_multiple_of(64),
        };
        let scratch = match self.windows {
            0 => windows,
            n => windows + WINDOW_HEADER_BYTES + n as usize * ranks * window_stride + shared_words,
        };
        let scratch_stride = match self.scratch_bytes {
            0 => 0,
            n => SCRATCH_HEADER_BYTES + (n as usize).next_multiple_of(64),
        };
        let total = scratch + ranks * scratch_stride;
        Ok(Layout {
            ranks: self.ranks,
            block_dim: self.block_dim,
            blocks: blocks as u32,
            slots_per_rank: self.slots_per_rank,
            slot_bytes: self.slot_bytes,
            shared_window_bytes: self.shared_window_bytes as u32,
            slot_stride,
            outbox_stride,
            rank_stride,
            records_per_rank: self.records_per_rank(),
            collective_bytes: coll,
            outboxes,
            slot_states,
            rank_headers,
            broadcast,
            block_scratch,
            rank_scratch,
            communicators: self.communicators,
            comms,
            comm_stride,
            immediate,
            immediate_bytes: ib,
            immediate_slot_stride,
            immediate_nodes,
            immediate_top: immediate_top_node(self.ranks, self.block_dim),
            immediate_local,
            immediate_comms,
            immediate_comm_stride,
            windows,
            window_count: self.windows,
            window_stride: window_stride as u32,
            scratch,
            scratch_stride,
            records,
            results,
            trace,
            trace_stride,
            total,
        })
    }

    /// Writes the header of a fresh world into `memory`, which must be zeroed
    /// and at least `layout().total` bytes long.
    pub fn write_header(&self, memory: &mut [u8]) -> Result<Layout, ConfigError> {
        let layout = self.layout()?;
        if memory.len() < layout.total {
            return Err(ConfigError::MemoryTooSmall {
                needed: layout.total,
                got: memory.len(),
            });
        }
        memory[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        memory[4..8].copy_from_slice(&VERSION.to_le_bytes());
        memory[CONFIG_OFFSET..CONFIG_OFFSET + core::mem::size_of::<WorldConfig>()]
            .copy_from_slice(bytemuck::bytes_of(self));
        // SAFETY: `LAYOUT_OFFSET + size_of::<Layout>() <= HEADER_BYTES <=
        // memory.len()` (checked below at compile time and above); an
        // unaligned write of a `Copy` struct.
        unsafe { core::ptr::write_unaligned(memory.as_mut_ptr().add(LAYOUT_OFFSET) as *mut Layout, layout) };
        Ok(layout)
    }
}

const _: () = assert!(LAYOUT_OFFSET + core::mem::size_of::<Layout>() <= HEADER_BYTES);
const _: () = assert!(ABORT_OFFSET + 4 <= LAYOUT_OFFSET);

/// Where each region of a world lies (byte offsets from the world's base).
/// `repr(C)`: the host writes it into the header at [`LAYOUT_OFFSET`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Ranks.
    pub ranks: u32,
    /// Ranks per block.
    pub block_dim: u32,
    /// Blocks.
    pub blocks: u32,
    /// Slots per outbox.
    pub slots_per_rank: u32,
    /// Payload bytes per slot.
    pub slot_bytes: u32,
    /// Bytes of each block's shared memory for shared windows
    /// ([`WorldConfig::shared_window_bytes`]; here, where it fills what
    /// would be padding).
    pub shared_window_bytes: u32,
    /// Bytes from one slot to the next.
    pub slot_stride: usize,
    /// Bytes from one outbox to the next.
    pub outbox_stride: usize,
    /// Bytes from one rank's header (and records) to the next.
    pub rank_stride: usize,
    /// Request records per rank.
    pub records_per_rank: u32,
    /// The node of a slot's arrival tree of the non-blocking collectives
    /// whose record holds the top's round words ([`immediate_top_node`];
    /// here, beside a `u32`, where `repr(C)` leaves room).
    pub immediate_top: u32,
    /// Bytes of one staging cell of a collective round.
    pub collective_bytes: usize,
    /// Offset of the first outbox.
    pub outboxes: usize,
    /// Offset of the slots' state words (`u32` per slot, in slot-id order).
    pub slot_states: usize,
    /// Offset of the first rank header.
    pub rank_headers: usize,
    /// Offset of the broadcast area (two halves).
    pub broadcast: usize,
    /// Offset of the per-block scratch (two halves).
    pub block_scratch: usize,
    /// Offset of the per-rank scratch (two halves).
    pub rank_scratch: usize,
    /// Communicator tables after the communicator area's header.
    pub communicators: u32,
    /// Window ids ([`WorldConfig::windows`]; beside `communicators`, in
    /// what would be padding).
    pub window_count: u32,
    /// Offset of the communicator area (the context counter, then the tables).
    pub comms: usize,
    /// Bytes of one communicator table.
    pub comm_stride: usize,
    /// Offset of the non-blocking collectives' slots.
    pub immediate: usize,
    /// Bytes of one rank's (or block's, or the result's) cell of a slot.
    pub immediate_bytes: usize,
    /// Bytes of one slot: its world record and result cell, its block
    /// records and cells, its rank cells.
    pub immediate_slot_stride: usize,
    /// Nodes of a slot's arrival tree ([`immediate_tree_nodes`]).
    pub immediate_nodes: u32,
    /// Bytes of one rank's entry of a window, its allocated memory
    /// included (at most 1 GiB + 256: a `u32`).
    pub window_stride: u32,
    /// Offset of the ranks' private records of their non-blocking
    /// collectives ([`IMMEDIATE_LOCAL_BYTES`] each).
    pub immediate_local: usize,
    /// Offset of the communicator contexts' non-blocking collective state.
    pub immediate_comms: usize,
    /// Bytes of one context's non-blocking collective state; 0 when the
    /// world has none ([`FLAG_IMMEDIATE_COMMUNICATORS`] unset).
    pub immediate_comm_stride: usize,
    /// Offset of the windows region (its header, then the entries).
    pub windows: usize,

    /// Offset of the ranks' scratch.
    pub scratch: usize,
    /// Bytes of one rank's scratch with its header; 0 when the world has
    /// none ([`WorldConfig::scratch_bytes`] 0).
    pub scratch_stride: usize,
    /// Offset of the wait records ([`WAIT_RECORDS_OFFSET`] in every world).
    pub records: usize,
    /// Offset of the result records.
    pub results: usize,
    /// Offset of the trace buffers (equal to `outboxes` when tracing is
    /// off).
    pub trace: usize,
    /// Bytes of one rank's trace buffer: a `TraceHeader` and
    /// `trace_events` `TraceEvent`s (0 when tracing is off).
    pub trace_stride: usize,
    /// Total bytes.
    pub total: usize,
}

/// Offset of `rank`'s wait record in every world: no read of the layout.
pub const fn wait_record_of(rank: u32) -> usize {
    WAIT_RECORDS_OFFSET + rank as usize * RECORD_STRIDE
}

impl Layout {
    /// What the host reads back after a launch, one range from the world's
    /// start: the header (the abort word), the barrier, the wait and result
    /// records and the trace buffers.
    pub fn front(&self) -> core::ops::Range<usize> {
        0..self.outboxes
    }
    /// The part of [`Layout::front`] that ranks write and only the host
    /// reads, after the launch or in a deadlock probe while it runs: the
    /// wait and result records and the trace buffers.
    pub fn host_records(&self) -> core::ops::Range<usize> {
        self.records..self.outboxes
    }
    /// What a deadlock report adds to [`Layout::front`]: the outboxes (the
    /// messages left in them) and the rank headers.
    pub fn messages(&self) -> core::ops::Range<usize> {
        self.outboxes..self.broadcast
    }
    /// Offset of `rank`'s outbox.
    pub fn outbox(&self, rank: u32) -> usize {
        self.outboxes + rank as usize * self.outbox_stride
    }
    /// Offset of slot `slot` of `rank`'s outbox.
    pub fn slot(&self, rank: u32, slot: u32) -> usize {
        self.outbox(rank) + slot as usize * self.slot_stride
    }
    /// Offset of slot `id` (`rank × slots_per_rank + slot`): the outboxes
    /// are exactly their slots, one after another. The stride fits 32 bits
    /// (`MAX_SLOT_BYTES`): one `mul.wide.u32` (a 64-bit multiply cost
    /// pi_p2p a spill).
    pub fn slot_of_id(&self, id: u32) -> usize {
        self.outboxes + (u64::from(id) * u64::from(self.slot_stride as u32)) as usize
    }
    /// Offset of the state word of slot `id` (`rank × slots_per_rank +
    /// slot`).
    pub fn slot_state_of_id(&self, id: u32) -> usize {
        self.slot_states + id as usize * SLOT_STATE_BYTES
    }
    /// Offset of `rank`'s header.
    pub fn rank_header(&self, rank: u32) -> usize {
        self.rank_headers + rank as usize * self.rank_stride
    }
    /// Offset of `rank`'s request record `index`.
    pub fn record_of(&self, rank: u32, index: u32) -> usize {
        self.rank_header(rank) + RANK_HEADER_BYTES + index as usize * RECORD_BYTES
    }
    /// Offset of `rank`'s wait record ([`wait_record_of`]).
    pub fn record(&self, rank: u32) -> usize {
        wait_record_of(rank)
    }
    /// Offset of `rank`'s result record.
    pub fn result(&self, rank: u32) -> usize {
        self.results + rank as usize * RESULT_STRIDE
    }
    /// Offset of `rank`'s trace buffer (its header; the events follow).
    pub fn trace_of(&self, rank: u32) -> usize {
        self.trace + rank as usize * self.trace_stride
    }
    /// Offset of world rank `rank`'s entry of window `id` (its descriptor
    /// line; the synchronisation and region lines and the allocated
    /// memory follow).
    pub fn window_entry(&self, id: u32, rank: u32) -> usize {
        self.windows
            + WINDOW_HEADER_BYTES
            + (id as usize * self.ranks as usize + rank as usize) * self.window_stride as usize
    }
    /// Offset of block `block`'s word of the parts of its shared window
    /// memory in use (only with [`Layout::shared_window_bytes`] not 0).
    pub fn shared_window_word(&self, block: u32) -> usize {
        self.window_entry(self.window_count, 0) + block as usize * SHARED_WINDOW_WORD_BYTES
    }

    /// Offset of `rank`'s scratch header (its scratch bytes follow,
    /// [`SCRATCH_HEADER_BYTES`] on; only with [`Layout::scratch_stride`]
    /// not 0).
    pub fn scratch_of(&self, rank: u32) -> usize {
        self.scratch + rank as usize * self.scratch_stride
    }

    /// Offset of slot `slot`'s world record (its result cell follows).
    pub fn immediate_slot(&self, slot: u32) -> usize {
        self.immediate + slot as usize * self.immediate_slot_stride
    }
    /// Offset of node `node`'s record in slot `slot` (its cell follows);
    /// nodes numbered level by level from level 0.
    pub fn immediate_node(&self, slot: u32, node: u32) -> usize {
        self.immediate_slot(slot) + (1 + node as usize) * (IMMEDIATE_RECORD_BYTES + self.immediate_bytes)
    }
    /// Offset of rank `rank`'s cell in slot `slot`.
    pub fn immediate_rank(&self, slot: u32, rank: u32) -> usize {
        self.immediate_slot(slot)
            + (1 + self.immediate_nodes as usize) * (IMMEDIATE_RECORD_BYTES + self.immediate_bytes)
            + rank as usize * self.immediate_bytes
    }

    /// Offset of small word `index` of slot `slot` (8 bytes; the words
    /// follow the ranks' cells, 64-aligned): rank `r`'s at index `r`, node
    /// `n`'s at [`Layout::immediate_node_word`]`(n)`. A reduction of
    /// elements of at most 8 bytes keeps its operand's first 8 bytes (a
    /// rank's) or partial result's (a node's) there, so that the node's
    /// last arriver loads two children's with one 16-byte load.
    pub fn immediate_word(&self, slot: u32, index: u32) -> usize {
        self.immediate_rank(slot, self.ranks) + index as usize * 8
    }
    /// Bytes of each block's launch-sized shared memory the world asks for
    /// ([`launch_shared_bytes`]).
    pub fn launch_shared_bytes(&self) -> u64 {
        launch_shared_bytes(u64::from(self.shared_window_bytes), self.block_dim)
    }

    /// Index of node `node`'s small word ([`Layout::immediate_word`]):
    /// after the ranks', from an even index.
    pub fn immediate_node_word(&self, node: u32) -> u32 {
        self.ranks.next_multiple_of(2) + node
    }

    /// Offset of rank `rank`'s private record of its non-blocking collectives.
    pub fn immediate_local_of(&self, rank: u32) -> usize {
        self.immediate_local + rank as usize * IMMEDIATE_LOCAL_BYTES
    }

    /// Offset of world rank `rank`'s private record of its non-blocking
    /// collectives on communicator context `id` (`1..=communicators`;
    /// only with [`Layout::immediate_comm_stride`] not 0).
    pub fn immediate_comm_local(&self, id: u32, rank: u32) -> usize {
        self.immediate_comms
            + (id as usize - 1) * self.immediate_comm_stride
            + rank as usize * COMM_IMMEDIATE_LOCAL_BYTES
    }
    /// Offset of entry `entry`'s record in slot `slot` of communicator
    /// context `id` (a group's record, at its first member's entry), then
    /// its result cell, then its member cell (each `immediate_bytes`).
    pub fn immediate_comm_entry(&self, id: u32, slot: u32, entry: u32) -> usize {
        let per_entry = IMMEDIATE_RECORD_BYTES + 2 * self.immediate_bytes;
        self.immediate_comm_local(id, 0)
            + self.ranks as usize * COMM_IMMEDIATE_LOCAL_BYTES
            + (slot as usize * self.ranks as usize + entry as usize) * per_entry
    }

    /// Gives the process that owns `memory` (laid out as `self`, header
    /// written) the context ids `first + 1 ..= first + count` for the
    /// communicators its ranks create: in a world across processes
    /// (docs/distributed.md) each process draws from its own range, so
    /// that no two creations anywhere take the same context. `None` when
    /// the range is not inside `1 ..= communicators` or `memory` is too
    /// small.
    pub fn write_context_range(&self, memory: &mut [u8], first: u32, count: u32) -> Option<()> {
        let end = first.checked_add(count).filter(|&e| e <= self.communicators)?;
        let words = memory.get_mut(self.comms..self.comms + COMM_HEADER_BYTES)?;
        words[0..4].copy_from_slice(&first.to_le_bytes());
        words[COMM_RANGE_END_OFFSET..COMM_RANGE_END_OFFSET + 4].copy_from_slice(&(end + 1).to_le_bytes());
        words[COMM_RANGE_COUNT_OFFSET..COMM_RANGE_COUNT_OFFSET + 4].copy_from_slice(&count.to_le_bytes());
        Some(())
    }

    /// Tells the ranks of the process that owns `memory` (laid out as
    /// `self`) that it runs world ranks `first .. first + ranks` of a world
    /// across processes (docs/distributed.md): the non-blocking
    /// collectives' arrival tree then spans them alone. `None` when the
    /// range is not inside the world or `memory` is too small.
    pub fn write_process_ranks(&self, memory: &mut [u8], first: u32, ranks: u32) -> Option<()> {
        first
            .checked_add(ranks)
            .filter(|&e| e <= self.ranks && ranks > 0)?;
        let words = memory.get_mut(self.comms..self.comms + COMM_HEADER_BYTES)?;
        words[PROCESS_FIRST_OFFSET..PROCESS_FIRST_OFFSET + 4].copy_from_slice(&first.to_le_bytes());
        words[PROCESS_RANKS_OFFSET..PROCESS_RANKS_OFFSET + 4].copy_from_slice(&ranks.to_le_bytes());
        Some(())
    }

    /// Offset of the table of communicator context `id` (`1..=communicators`).
    pub fn comm_table(&self, id: u32) -> usize {
        self.comms + COMM_HEADER_BYTES + (id as usize - 1) * self.comm_stride
    }

    /// Offset of the [`WarpWord`](crate::records::WarpWord) of warp `warp`
    /// (block-major: `block × ceil(block_dim / 32) + thread / 32`) in the
    /// table of communicator context `id`.
    pub fn comm_warp_word(&self, id: u32, warp: u32) -> usize {
        self.comm_table(id)
            + self.ranks as usize * COMM_TABLE_ENTRY_BYTES
            + warp as usize * COMM_WARP_WORD_BYTES
    }
}

/// A world configuration that cannot be laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// Zero ranks.
    NoRanks,
    /// `ranks` is not a multiple of `block_dim`, or `block_dim` is zero.
    BlockDim {
        /// Ranks asked for.
        ranks: u32,
        /// Block size asked for.
        block_dim: u32,
    },
    /// Zero slots per rank.
    NoSlots,
    /// More slots per rank than [`MAX_SLOTS_PER_RANK`].
    TooManySlots(u32),
    /// Zero requests per rank, or more than `MAX_RECORDS_PER_RANK - BLOCKING_RECORDS`.
    Requests(u32),
    /// Slot payload not a positive multiple of 64.
    SlotBytes(u32),
    /// Collective round size not a positive multiple of 64.
    CollectiveBytes(u32),
    /// More ranks than an `i32` rank can name.
    TooManyRanks(u32),
    /// More trace events per rank than [`MAX_TRACE_EVENTS`].
    TraceEvents(u32),
    /// More communicators than [`MAX_COMMUNICATORS`].
    Communicators(u32),
    /// `immediate_bytes` not a positive multiple of 64.
    ImmediateBytes(u32),
    /// More scratch bytes per rank than [`MAX_SCRATCH_BYTES`].
    ScratchBytes(u64),
    /// More windows than [`MAX_WINDOWS`].
    Windows(u32),
    /// More window bytes per rank than [`MAX_WINDOW_BYTES`].
    WindowBytes(u32),
    /// More shared window bytes per block than
    /// [`MAX_SHARED_WINDOW_BYTES`], or some without windows.
    SharedWindowBytes(u64),
    /// The memory given is smaller than the layout.
    MemoryTooSmall {
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            ConfigError::NoRanks => write!(f, "a world needs at least one rank"),
            ConfigError::BlockDim { ranks, block_dim } => {
                write!(f, "{ranks} ranks do not split into blocks of {block_dim}")
            }
            ConfigError::NoSlots => write!(f, "slots_per_rank must be at least 1"),
            ConfigError::TooManySlots(n) => {
                write!(f, "slots_per_rank {n} exceeds {MAX_SLOTS_PER_RANK}")
            }
            ConfigError::Requests(n) => write!(
                f,
                "requests_per_rank {n} is not in 1..={}",
                MAX_RECORDS_PER_RANK - BLOCKING_RECORDS
            ),
            ConfigError::SlotBytes(b) => {
                write!(
                    f,
                    "slot_bytes {b} is not a positive multiple of 64 at most {MAX_SLOT_BYTES}"
                )
            }
            ConfigError::CollectiveBytes(b) => {
                write!(f, "collective_bytes {b} is not a positive multiple of 64")
            }
            ConfigError::TooManyRanks(r) => {
                write!(f, "{r} ranks exceed i32::MAX (or their slots exceed 2^32 - 2)")
            }
            ConfigError::TraceEvents(n) => {
                write!(f, "trace_events {n} exceeds {MAX_TRACE_EVENTS} per rank")
            }
            ConfigError::Communicators(n) => {
                write!(f, "communicators {n} exceeds {MAX_COMMUNICATORS}")
            }
            ConfigError::ImmediateBytes(b) => {
                write!(f, "immediate_bytes {b} is not a positive multiple of 64")
            }
            ConfigError::ScratchBytes(b) => {
                write!(f, "scratch_bytes {b} per rank exceeds {MAX_SCRATCH_BYTES}")
            }
            ConfigError::Windows(n) => write!(f, "windows {n} exceeds {MAX_WINDOWS}"),
            ConfigError::WindowBytes(b) => {
                write!(f, "window_bytes {b} per rank exceeds {MAX_WINDOW_BYTES}")
            }
            ConfigError::SharedWindowBytes(b) => write!(
                f,
                "shared_window_bytes {b} per block: at most {MAX_SHARED_WINDOW_BYTES}, and only with windows"
            ),
            ConfigError::MemoryTooSmall { needed, got } => {
                write!(
                    f,
                    "world memory of {got} bytes is smaller than the {needed} bytes its layout needs"
                )
            }
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every level-0 node whose ranks all lie in one block has its word
    /// below the block's `immediate_block_words` (what the entry zeroes),
    /// whatever the block size, the world's size and where the tree's
    /// items start (a process's first rank), unless that is past the
    /// slot's words (then the node keeps its record's word).
    #[test]
    fn a_block_zeroes_every_word_its_nodes_use() {
        let f = IMMEDIATE_FANOUT;
        for bd in (1..=1024).filter(|b| *b <= 70 || b % 31 == 0 || b % 32 == 0 || *b > 990) {
            let used = immediate_block_words(bd);
            assert!(used <= IMMEDIATE_BLOCK_NODES, "block of {bd}");
            for blocks in 1..=3u32 {
                for end in [blocks * bd, blocks * bd - bd / 2] {
                    for node in 0..end.div_ceil(f) {
                        let (first, last) = (node * f, (node * f + f).min(end) - 1);
                        if first / bd != last / bd {
                            continue;
                        }
                        let index = node - first / bd * bd / f;
                        if index < IMMEDIATE_BLOCK_NODES {
                            assert!(
                                index < used,
                                "block of {bd}, {end} ranks, node {node}: {index} >= {used}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The small words a block's nodes keep in its launch-sized shared
    /// memory (its ranks' and its level-0 nodes' partial results) lie after
    /// its shared window memory in a launch of the host's and inside what
    /// it gives, one word a rank and a place in each slot, each slot's
    /// first 16-aligned (two neighbours per 16-byte load), the slots apart;
    /// a launch that gave less has none.
    #[test]
    fn block_small_words_lie_in_the_launch_shared_memory() {
        for bd in [1, 2, 31, 32, 33, 256, 1000, 1024] {
            for window in [0, 16, 100, 4096] {
                let mut c = WorldConfig::new(bd, bd);
                if window != 0 {
                    c.windows = 1;
                    c.shared_window_bytes = window;
                }
                let l = c.layout().unwrap();
                let len = c.launch_shared_bytes() as usize;
                assert_eq!(len as u64, launch_shared_bytes(window, bd));
                assert_eq!(l.launch_shared_bytes(), len as u64);
                let word = |slot, index| block_small_word(len, bd, slot, index).unwrap();
                let first = word(0, 0);
                assert!(
                    first >= window as usize && first.is_multiple_of(64),
                    "block of {bd}, window {window}"
                );
                let places = bd + IMMEDIATE_BLOCK_NODES;
                let last = word(IMMEDIATE_SLOTS - 1, places - 1);
                assert!(
                    last + 8 <= len,
                    "block of {bd}, window {window}: {last} + 8 > {len}"
                );
                assert_eq!(word(0, bd) - word(0, bd - 1), 8);
                assert!(word(1, 0) > word(0, places - 1));
                assert!(word(1, 0).is_multiple_of(16), "block of {bd}");
                let short = immediate_shared_bytes(bd) as usize - 1;
                assert_eq!(block_small_word(short, bd, 0, 0), None);
            }
        }
    }

    #[test]
    fn regions_are_ordered_aligned_and_sized() {
        let l = WorldConfig::new(1024, 256).layout().unwrap();
        assert_eq!(l.blocks, 4);
        assert_eq!(l.slot_stride, 64 + 256);
        for off in [
            l.outboxes,
            GRID_BARRIER_OFFSET,
            l.broadcast,
            l.block_scratch,
            l.rank_scratch,
            l.records,
            l.results,
        ] {
            assert_eq!(off % 16, 0, "offset {off} misaligned");
        }
        // Fixed offsets first, what the host reads back, then the rest.
        assert_eq!(l.records, WAIT_RECORDS_OFFSET);
        assert_eq!(l.record(5), WAIT_RECORDS_OFFSET + 5 * RECORD_STRIDE);
        assert!(HEADER_BYTES <= GRID_BARRIER_OFFSET && GRID_BARRIER_OFFSET + GRID_BARRIER_BYTES <= l.records);
        assert_eq!(l.results, l.record(1023) + RECORD_STRIDE);
        assert_eq!(l.trace, l.result(1023) + RESULT_STRIDE);
        assert_eq!(l.outboxes, l.trace.next_multiple_of(128));
        assert_eq!((l.outboxes % 128, l.rank_headers % 128), (0, 0));
        assert_eq!(l.front(), 0..l.outboxes);
        assert_eq!(l.host_records(), l.records..l.outboxes);
        assert!(l.outboxes < l.rank_headers && l.rank_headers < l.broadcast);
        assert_eq!(l.messages(), l.outboxes..l.broadcast);
        assert!(l.record_of(1023, l.records_per_rank - 1) + RECORD_BYTES <= l.broadcast);
        assert_eq!(l.total, l.scratch);
        assert_eq!(l.slot(1, 0), l.outbox(1));
        assert_eq!(l.record_of(2, 0), l.rank_header(2) + RANK_HEADER_BYTES);
        assert_eq!(l.rank_headers % 64, 0);
        assert_eq!(l.outbox_stride, l.slots_per_rank as usize * l.slot_stride);
        let last = 1024 * l.slots_per_rank - 1;
        assert_eq!(l.slot_of_id(last), l.slot(1023, l.slots_per_rank - 1));
        assert_eq!(l.slot_of_id(l.slots_per_rank + 2), l.slot(1, 2));
        assert!(l.slot_of_id(last) + l.slot_stride <= l.slot_states);
        assert_eq!(l.slot_states % 128, 0);
        assert_eq!(
            l.slot_state_of_id(8) - l.slot_state_of_id(0),
            8 * SLOT_STATE_BYTES
        );
        assert!(l.slot_state_of_id(last) + SLOT_STATE_BYTES <= l.rank_headers);
    }

    #[test]
    fn the_arrival_tree_has_a_node_per_32_below_up_to_one() {
        for (ranks, nodes) in [
            (1, 1),
            (32, 1),
            (33, 3),
            (1024, 33),
            (1025, 36),
            (270_336, 8448 + 264 + 9 + 1),
        ] {
            // Blocks of one rank: 32 children at every level.
            assert_eq!(immediate_tree_nodes(ranks, 1), nodes, "{ranks} ranks");
        }
        // Blocks of a multiple of 32 ranks: level 1 has a node per block
        // where that leaves fewer levels above the first two (or one
        // block, or blocks of 32 level-0 nodes); for a folding collective
        // also where the top would have more than 16 children, whose
        // records the others' tree shares (its top is then a barrier's
        // `top` children).
        for (ranks, block_dim, nodes, top) in [
            (256, 256, 8 + 1, 8),
            (512, 256, 16 + 1, 16),
            (768, 256, 24 + 3 + 1, 24),
            (1024, 256, 32 + 4 + 1, 32),
            (1024, 128, 32 + 8 + 1, 32),
            (1536, 256, 48 + 6 + 1, 6),
            (4096, 256, 128 + 16 + 1, 16),
            (270_336, 256, 8448 + 264 + 9 + 1, 9),
            (270_336, 1024, 8448 + 264 + 9 + 1, 9),
            (64, 64, 2 + 1, 2),
            (96, 32, 3 + 1, 3),
        ] {
            assert_eq!(
                immediate_tree_nodes(ranks, block_dim),
                nodes,
                "{ranks} in {block_dim}"
            );
            assert_eq!(
                immediate_top_children(ranks, block_dim),
                top,
                "{ranks} in {block_dim}"
            );
        }
        assert_eq!(immediate_top_children(1100, 100), 2);
        assert_eq!(immediate_top_children(32, 32), 32);
        for (ranks, block_dim, barrier, fold) in [
            (512, 256, false, false),
            (513, 256, false, true),
            (1024, 256, false, true),
            (1025, 256, true, true),
            (1024, 32, false, false),
            (1024, 100, false, false),
            (270_336, 256, false, false),
            (256, 256, true, true),
        ] {
            assert_eq!(
                immediate_block_level(ranks, block_dim),
                barrier,
                "{ranks} in {block_dim}"
            );
            assert_eq!(
                immediate_fold_block_level(ranks, block_dim),
                fold,
                "{ranks} in {block_dim}"
            );
        }
        // The rounds' record: a barrier's top, inside the folding tree's
        // records (37 at 1,024 ranks in blocks of 256, 55 at 1,536).
        for (ranks, block_dim, top) in [(1024, 256, 32), (768, 256, 24), (1536, 256, 54), (1100, 100, 37)] {
            assert_eq!(
                immediate_top_node(ranks, block_dim),
                top,
                "{ranks} in {block_dim}"
            );
            assert!(top < immediate_tree_nodes(ranks, block_dim));
        }
        let l = WorldConfig::new(1100, 100).layout().unwrap();
        assert_eq!(l.immediate_nodes, 35 + 2 + 1);
        assert_eq!(l.immediate_node(0, 38), l.immediate_rank(0, 0));
        assert_eq!(l.immediate_rank(1, 0), l.immediate_slot(1) + 39 * 128);
        // The small words: 1100 ranks', 38 nodes' and one more, 9,112
        // bytes rounded up to 9,152.
        assert_eq!(l.immediate_word(0, 0), l.immediate_rank(0, 0) + 1100 * 64);
        assert_eq!(
            l.immediate_word(0, l.immediate_node_word(0)),
            l.immediate_word(0, 1100)
        );
        assert_eq!(l.immediate_slot(1), l.immediate_word(0, 0) + 9152);
        assert_eq!(l.immediate_word(0, 0) % 64, 0);
    }

    #[test]
    fn the_communicators_immediate_state_is_opt_in_and_tiles_its_region() {
        let off = WorldConfig::new(96, 32).layout().unwrap();
        assert_eq!(off.immediate_comm_stride, 0);
        assert_eq!(off.total, off.immediate_comms);
        let mut c = WorldConfig::new(96, 32);
        c.flags = FLAG_IMMEDIATE_COMMUNICATORS;
        let on = c.layout().unwrap();
        // 128 + 2 x (64 + 2 x 64) bytes per rank and context.
        assert_eq!(on.immediate_comm_stride, 96 * 512);
        assert_eq!(on.total, on.immediate_comms + 4 * 96 * 512);
        assert_eq!(on.immediate_comm_local(1, 0), on.immediate_comms);
        assert_eq!(on.immediate_comm_local(2, 1), on.immediate_comms + 96 * 512 + 128);
        let per_entry = 64 + 2 * 64;
        assert_eq!(on.immediate_comm_entry(1, 0, 0), on.immediate_comms + 96 * 128);
        assert_eq!(
            on.immediate_comm_entry(1, 1, 95) + per_entry,
            on.immediate_comm_local(2, 0)
        );
        assert_eq!(on.immediate_comm_entry(4, 1, 95) + per_entry, on.total);
        for o in [on.immediate_comm_local(3, 5), on.immediate_comm_entry(3, 1, 7)] {
            assert_eq!(o % 64, 0);
        }
    }

    #[test]
    fn the_scratch_is_opt_in_private_per_rank_and_last() {
        let none = WorldConfig::new(64, 32).layout().unwrap();
        assert_eq!((none.scratch_stride, none.total), (0, none.scratch));
        let mut c = WorldConfig::new(64, 32);
        c.scratch_bytes = 100;
        let l = c.layout().unwrap();
        assert_eq!(l.scratch_stride, 64 + 128);
        assert_eq!(l.scratch % 64, 0);
        assert_eq!(l.scratch_of(1), l.scratch + 192);
        assert_eq!(l.total, l.scratch_of(63) + 192);
        assert_eq!(l.scratch, none.scratch);
        c.scratch_bytes = MAX_SCRATCH_BYTES + 1;
        assert_eq!(c.layout(), Err(ConfigError::ScratchBytes(MAX_SCRATCH_BYTES + 1)));
    }

    #[test]
    fn the_windows_lie_between_the_communicators_state_and_the_scratch() {
        let mut c = WorldConfig::new(256, 128);
        c.windows = 3;
        c.window_bytes = 100;
        let l = c.layout().unwrap();
        assert_eq!(l.window_stride as usize, WINDOW_ENTRY_BYTES + 128);
        assert_eq!(l.windows % 64, 0);
        assert_eq!(l.window_entry(0, 0), l.windows + WINDOW_HEADER_BYTES);
        assert_eq!(
            l.window_entry(1, 0),
            l.window_entry(0, 255) + l.window_stride as usize
        );
        assert_eq!(l.window_entry(2, 255) + l.window_stride as usize, l.scratch);
        c.shared_window_bytes = 4096;
        let s = c.layout().unwrap();
        assert_eq!(s.shared_window_bytes, 4096);
        assert_eq!(s.window_entry(0, 0), l.window_entry(0, 0));
        assert_eq!(s.shared_window_word(0), l.scratch);
        assert_eq!(s.shared_window_word(1), l.scratch + 8);
        assert_eq!(
            s.scratch,
            l.scratch + (s.blocks as usize * 8).next_multiple_of(64)
        );
        c.shared_window_bytes = MAX_SHARED_WINDOW_BYTES + 1;
        assert_eq!(
            c.layout(),
            Err(ConfigError::SharedWindowBytes(MAX_SHARED_WINDOW_BYTES + 1))
        );
        c.shared_window_bytes = 0;
        c.windows = MAX_WINDOWS + 1;
        assert_eq!(c.layout(), Err(ConfigError::Windows(MAX_WINDOWS + 1)));
        c.windows = 0;
        c.window_bytes = MAX_WINDOW_BYTES + 1;
        assert_eq!(c.layout(), Err(ConfigError::WindowBytes(MAX_WINDOW_BYTES + 1)));
    }

    #[test]
    fn a_full_gpu_world_takes_about_a_gibibyte() {
        // An H100: 132 SMs x 2048 threads, blocks of 256, default settings:
        // 1,123,322,432 bytes (1.046 GiB; 1,088,719,424 before the slot
        // header grew to 64 bytes for its head word, 16 bytes more per
        // slot; 1,084,254,400 before the non-blocking collectives' small
        // words, 0.9997 GiB before the slots' state words moved out of
        // their headers, 4 bytes more per slot).
        let l = WorldConfig::new(270_336, 256).layout().unwrap();
        assert!(l.total < (1 << 30) + (1 << 30) / 16, "{} bytes", l.total);
        let per_rank = (l.total - l.outboxes) / 270_336;
        assert!((4_048..4_152).contains(&per_rank), "{per_rank} bytes per rank");
    }

    #[test]
    fn bad_configs_are_refused_with_the_reason() {
        assert_eq!(WorldConfig::new(0, 1).layout(), Err(ConfigError::NoRanks));
        assert_eq!(
            WorldConfig::new(100, 32).layout(),
            Err(ConfigError::BlockDim {
                ranks: 100,
                block_dim: 32
            })
        );
        let mut c = WorldConfig::new(64, 32);
        c.slot_bytes = 100;
        assert_eq!(c.layout(), Err(ConfigError::SlotBytes(100)));
        c.slot_bytes = MAX_SLOT_BYTES + 64;
        assert_eq!(c.layout(), Err(ConfigError::SlotBytes(MAX_SLOT_BYTES + 64)));
        let mut mem = [0u8; 16];
        assert!(matches!(
            WorldConfig::new(64, 32).write_header(&mut mem),
            Err(ConfigError::MemoryTooSmall { .. })
        ));
    }
}
