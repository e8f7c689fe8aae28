//! The world state: one block of device-global memory, laid out by the host.
//!
//! The host sizes it from a [`WorldConfig`], zeroes it and writes the header
//! before the launch, so no rank does initialisation work at start-up (the
//! thesis's `MPI_Init` spent 0.07 ms on it). Layout, in order, each region
//! 64-byte aligned:
//!
//! | region | size | contents |
//! |---|---|---|
//! | header | 256 B | magic, version, [`WorldConfig`], grid size, abort flag |
//! | outboxes | `ranks × outbox_stride` | per sending rank: its published-message count and the count of messages addressed to it and not yet received, then `slots_per_rank` slots of 64 B envelope + `slot_bytes` payload |
//! | barrier | `blocks × 64` | per block: its barrier counter (Dietz's single-writer barrier) and the flag word of a reduction's count check |
//! | broadcast | `2 × collective_bytes` | the root's chunk of a broadcast |
//! | block scratch | `2 × blocks × collective_bytes` | per block: its partial reduction |
//! | rank scratch | `2 × ranks × collective_bytes` | per rank: its reduction operand, combined in a tree inside the block |
//!
//! The three staging regions come in two halves used by alternate rounds of
//! the collectives (every rank counts the rounds alike), so that a round's
//! data is read while the next round writes the other half: one world
//! barrier per round instead of two.
//! | wait records | `ranks × 16` | per rank: state, operation, peer, tag (what the deadlock report prints) |
//! | results | `ranks × 32` | per rank: the kernel's return value as an [`ErrorClass`](crate::ErrorClass) and four detail words |

use bytemuck::{Pod, Zeroable};

/// "GPMI" in little-endian.
pub const MAGIC: u32 = 0x494d_5047;
/// Version of this layout; the device refuses other versions.
pub const VERSION: u32 = 2;

/// `flags` bit: never let a receiver copy straight out of the sender's buffer;
/// stream every large message through a slot (the path a GPU takes for a
/// buffer in a thread's local memory). Lets the emulator test that path.
pub const FLAG_FORCE_STREAMING: u32 = 1;

/// Longest sleep between two polls of a GPU wait when the world's config
/// says 0 (`WorldConfig::backoff_max_ns`).
pub const DEFAULT_BACKOFF_MAX_NS: u32 = 1024;

/// Bytes of the header region.
pub const HEADER_BYTES: usize = 256;
/// Offset of the config inside the header.
pub const CONFIG_OFFSET: usize = 16;
/// Offset of the abort word (0: running; otherwise 1 + the rank that aborted).
pub const ABORT_OFFSET: usize = 128;
/// Bytes of a slot's envelope, before its payload.
pub const ENVELOPE_BYTES: usize = 64;
/// Bytes of an outbox's header, before its slots.
pub const OUTBOX_HEADER_BYTES: usize = 64;
/// Bytes of one block's barrier record.
pub const BARRIER_STRIDE: usize = 64;
/// Bytes of one rank's wait record.
pub const RECORD_STRIDE: usize = 16;
/// Bytes of one rank's result record.
pub const RESULT_STRIDE: usize = 32;

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
    /// A wait gives up after this many nanoseconds (0: never; the CPU
    /// emulator detects deadlocks exactly and needs no timeout).
    pub timeout_ns: u64,
}

impl WorldConfig {
    /// Defaults for `ranks` ranks in blocks of `block_dim`: 8 slots of 256 B,
    /// 1 MiB messages, 256 B collective rounds, no timeout.
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
            timeout_ns: 0,
        }
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
        if self.slot_bytes == 0 || !self.slot_bytes.is_multiple_of(64) {
            return Err(ConfigError::SlotBytes(self.slot_bytes));
        }
        if self.collective_bytes == 0 || !self.collective_bytes.is_multiple_of(64) {
            return Err(ConfigError::CollectiveBytes(self.collective_bytes));
        }
        if self.ranks > (i32::MAX as u32) {
            return Err(ConfigError::TooManyRanks(self.ranks));
        }
        let ranks = self.ranks as usize;
        let blocks = (self.ranks / self.block_dim) as usize;
        let slot_stride = ENVELOPE_BYTES + self.slot_bytes as usize;
        let outbox_stride = OUTBOX_HEADER_BYTES + self.slots_per_rank as usize * slot_stride;
        let coll = self.collective_bytes as usize;
        let outboxes = HEADER_BYTES;
        let barrier = outboxes + ranks * outbox_stride;
        let broadcast = barrier + blocks * BARRIER_STRIDE;
        let block_scratch = broadcast + 2 * coll;
        let rank_scratch = block_scratch + 2 * blocks * coll;
        let records = rank_scratch + 2 * ranks * coll;
        let results = records + ranks * RECORD_STRIDE;
        let total = results + ranks * RESULT_STRIDE;
        Ok(Layout {
            ranks: self.ranks,
            block_dim: self.block_dim,
            blocks: blocks as u32,
            slots_per_rank: self.slots_per_rank,
            slot_bytes: self.slot_bytes,
            slot_stride,
            outbox_stride,
            collective_bytes: coll,
            outboxes,
            barrier,
            broadcast,
            block_scratch,
            rank_scratch,
            records,
            results,
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
        Ok(layout)
    }
}

/// Where each region of a world lies (byte offsets from the world's base).
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
    /// Bytes from one slot to the next.
    pub slot_stride: usize,
    /// Bytes from one outbox to the next.
    pub outbox_stride: usize,
    /// Bytes of one staging cell of a collective round.
    pub collective_bytes: usize,
    /// Offset of the first outbox.
    pub outboxes: usize,
    /// Offset of the barrier counters.
    pub barrier: usize,
    /// Offset of the broadcast area (two halves).
    pub broadcast: usize,
    /// Offset of the per-block scratch (two halves).
    pub block_scratch: usize,
    /// Offset of the per-rank scratch (two halves).
    pub rank_scratch: usize,
    /// Offset of the wait records.
    pub records: usize,
    /// Offset of the result records.
    pub results: usize,
    /// Total bytes.
    pub total: usize,
}

impl Layout {
    /// Offset of `rank`'s outbox.
    pub fn outbox(&self, rank: u32) -> usize {
        self.outboxes + rank as usize * self.outbox_stride
    }
    /// Offset of slot `slot` of `rank`'s outbox.
    pub fn slot(&self, rank: u32, slot: u32) -> usize {
        self.outbox(rank) + OUTBOX_HEADER_BYTES + slot as usize * self.slot_stride
    }
    /// Offset of `rank`'s wait record.
    pub fn record(&self, rank: u32) -> usize {
        self.records + rank as usize * RECORD_STRIDE
    }
    /// Offset of `rank`'s result record.
    pub fn result(&self, rank: u32) -> usize {
        self.results + rank as usize * RESULT_STRIDE
    }
}

/// The state of an outbox slot, as [`SlotEnvelope::read`] decodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Unused: the owner may claim it.
    Free,
    /// A message (or a rendezvous chunk) published for its destination.
    Full,
    /// Streaming: the receiver asked for the next chunk.
    ClearToSend,
    /// Rendezvous finished: the sender frees the slot.
    Done,
    /// Taken out of matching by a matched probe, not yet received.
    Claimed,
    /// A state word this version does not write (a corrupt or foreign world).
    Unknown(u32),
}

/// How a slot carries its message, as [`SlotEnvelope::read`] decodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// The whole message is in the slot.
    Eager,
    /// Rendezvous: the receiver copies from the sender's buffer.
    Direct,
    /// Rendezvous: the message streams through the slot; this is its first chunk.
    Stream,
    /// Rendezvous: a later chunk of a streamed message.
    Chunk,
    /// A kind this version does not write.
    Unknown(u32),
}

/// The envelope of one outbox slot, read from a copy of the world memory
/// after a launch (the host's view; ranks read slots atomically).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotEnvelope {
    /// The slot's state.
    pub state: SlotState,
    /// The destination rank (meaningful once published).
    pub dest: u32,
    /// Low 32 bits of the message's sequence number.
    pub sequence: u32,
    /// The message's tag.
    pub tag: i32,
    /// How the slot carries the message.
    pub kind: MessageKind,
    /// The datatype id the message was sent with.
    pub datatype: u32,
    /// Length of the whole message in bytes.
    pub bytes: u32,
}

impl SlotEnvelope {
    /// Decodes slot `slot` of `owner`'s outbox from `memory`, a copy of a
    /// world laid out by `layout`.
    ///
    /// # Panics
    /// If the slot lies outside `memory`.
    pub fn read(memory: &[u8], layout: &Layout, owner: u32, slot: u32) -> SlotEnvelope {
        use crate::point_to_point as p;
        let base = layout.slot(owner, slot);
        let u64_at = |word: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&memory[base + word..base + word + 8]);
            u64::from_ne_bytes(b)
        };
        let (state_word, head, type_bytes) = (u64_at(p::W_STATE), u64_at(p::W_HEAD), u64_at(p::W_TYPE_BYTES));
        let state = match state_word as u32 & p::STATE_MASK {
            p::FREE => SlotState::Free,
            p::FULL => SlotState::Full,
            p::CTS => SlotState::ClearToSend,
            p::DONE => SlotState::Done,
            p::CLAIMED => SlotState::Claimed,
            other => SlotState::Unknown(other),
        };
        let kind = match (head >> 32) as u32 {
            p::KIND_EAGER => MessageKind::Eager,
            p::KIND_DIRECT => MessageKind::Direct,
            p::KIND_STREAM => MessageKind::Stream,
            p::KIND_CHUNK => MessageKind::Chunk,
            other => MessageKind::Unknown(other),
        };
        SlotEnvelope {
            state,
            dest: state_word as u32 >> p::STATE_BITS,
            sequence: (state_word >> 32) as u32,
            tag: head as u32 as i32,
            kind,
            datatype: type_bytes as u32,
            bytes: (type_bytes >> 32) as u32,
        }
    }

    /// Whether the slot holds a message published and not yet taken by a
    /// receiver: FULL with a first envelope (a later chunk belongs to a
    /// message a receiver already matched).
    pub fn is_unreceived(&self) -> bool {
        matches!(self.state, SlotState::Full | SlotState::Claimed) && self.kind != MessageKind::Chunk
    }

    /// Whether the message goes by rendezvous (larger than a slot): its
    /// sender waits for the receiver.
    pub fn is_rendezvous(&self) -> bool {
        matches!(self.kind, MessageKind::Direct | MessageKind::Stream)
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
    /// Slot payload not a positive multiple of 64.
    SlotBytes(u32),
    /// Collective round size not a positive multiple of 64.
    CollectiveBytes(u32),
    /// More ranks than an `i32` rank can name.
    TooManyRanks(u32),
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
            ConfigError::SlotBytes(b) => write!(f, "slot_bytes {b} is not a positive multiple of 64"),
            ConfigError::CollectiveBytes(b) => {
                write!(f, "collective_bytes {b} is not a positive multiple of 64")
            }
            ConfigError::TooManyRanks(r) => write!(f, "{r} ranks exceed i32::MAX"),
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

    #[test]
    fn regions_are_ordered_aligned_and_sized() {
        let l = WorldConfig::new(1024, 256).layout().unwrap();
        assert_eq!(l.blocks, 4);
        assert_eq!(l.slot_stride, 64 + 256);
        for off in [
            l.outboxes,
            l.barrier,
            l.broadcast,
            l.block_scratch,
            l.rank_scratch,
            l.records,
            l.results,
        ] {
            assert_eq!(off % 16, 0, "offset {off} misaligned");
        }
        assert!(l.outboxes < l.barrier && l.barrier < l.broadcast && l.records < l.results);
        assert_eq!(l.total, l.results + 1024 * RESULT_STRIDE);
        assert_eq!(l.slot(1, 0), l.outbox(1) + OUTBOX_HEADER_BYTES);
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
        let mut mem = [0u8; 16];
        assert!(matches!(
            WorldConfig::new(64, 32).write_header(&mut mem),
            Err(ConfigError::MemoryTooSmall { .. })
        ));
    }
}
