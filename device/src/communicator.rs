//! Communicators: the world, sub-communicators and groups, the
//! [`Communicator`] trait and process handles (MPI 4.1 chapter 7; rsmpi
//! vocabulary). Creating a communicator is a collective operation and lives
//! above the collectives (`crate::creation`); everything here is local.
//!
//! The world holds all ranks of the launch (`MPI_COMM_WORLD`): rank `r` is
//! CUDA thread `r % block_dim` of block `r / block_dim`. A
//! [`SimpleCommunicator`] is made collectively from a parent (the [`World`]
//! or another `SimpleCommunicator`); a [`Process`] or [`AnyProcess`] of any
//! communicator names ranks of that communicator and carries its context
//! (MPI 3.5, 7.1.2). Nothing is allocated on a heap: each creation takes
//! the next free *context* of the world memory (`WorldConfig::communicators`
//! of them, never reused during a launch) and its table of `ranks`
//! [`CommEntry`](crate::records::CommEntry)s; the handle itself is four words.
//!
//! The communicators of one creation share its context: their members are
//! disjoint, so their messages cannot meet. Messages carry the context in
//! their envelope (`SlotHeader::context`: `2 × id` for point-to-point, `2 ×
//! id + 1` for the collectives), so a receive on one communicator never
//! matches a message of another, even between the same ranks with the same
//! tag (MPI 3.5 and 7.1.2).

use crate::error::Error;
use crate::layout::{
    Layout, FLAG_ACROSS_PROCESSES, IMMEDIATE_BLOCK_NODES, IMMEDIATE_BLOCK_NODE_WORDS, IMMEDIATE_SLOTS,
    LAYOUT_OFFSET, MAGIC, VERSION,
};
use crate::polling::{Call, WaitFor};
use crate::records::{CommWord, Core};
use crate::shim::{self, Backoff};
use crate::trace;
use core::cell::Cell;

pub use crate::status::{ANY_SOURCE, PROC_NULL};

/// The world's [`Layout`], read where the shim says the world's descriptors
/// are ([`shim::descriptors`]: the constant bank on the GPU); holds the
/// world's memory and dereferences to the layout.
#[derive(Clone, Copy)]
pub(crate) struct LayoutRef(*mut u8);

impl core::ops::Deref for LayoutRef {
    type Target = Layout;
    #[inline(always)]
    fn deref(&self) -> &Layout {
        // One read of a field, counted for the timing model as `Core`'s are.
        shim::note_descriptor(shim::Descriptor::Layout);
        // SAFETY: set by `World::attach` to an attached world's memory, whose
        // descriptors hold the layout (8-byte aligned at LAYOUT_OFFSET),
        // unchanged while the world lives (attach's contract).
        unsafe { &*(shim::descriptors(self.0).add(LAYOUT_OFFSET) as *const Layout) }
    }
}

/// The world communicator as seen by one rank.
pub struct World {
    pub(crate) base: *mut u8,
    /// The layout the host wrote into the header: read field by field
    /// where used, never held whole in registers.
    pub(crate) layout: LayoutRef,
    pub(crate) rank: u32,
    pub(crate) thread: u32,
    pub(crate) block: u32,
    /// World barriers this rank has entered. Every rank enters the same
    /// barriers (collectives are called by all), so it is also the
    /// generation the current world barrier completes (at `generation ×
    /// blocks` arrivals).
    pub(crate) barrier_generation: Cell<u32>,
    /// Rounds of collectives (broadcast rounds, reduction rounds) this rank
    /// has staged; its parity picks the half of the staging regions.
    pub(crate) staging_round: Cell<u32>,
    /// What this rank knows of its own private state without reading it
    /// (one word, so that `World` stays as small as it was).
    pub(crate) known: RankState,
    /// The request records of this rank's scopes in use: bit `i` for
    /// record `i` (the blocking calls' records are taken by name,
    /// `engine::BlockingRecord`). Only this rank takes and frees them, and
    /// nothing else reads the mask (a wait reads a record's own state), so
    /// it lives here, not in the rank's header: a request's post and its
    /// completion read and write no memory for it.
    pub(crate) records: Cell<u32>,
    /// The id of the last request scope this rank opened (ids start at 1;
    /// 0 marks a blocking call's record): a count only this rank keeps,
    /// so it lives here, not in the rank's header.
    pub(crate) last_scope: Cell<u32>,
}

/// What a rank knows of its own private state without reading it, in one
/// word: bit 0 `settled`, bit 1 `spinning`, bit 2 `untraced`, bit 3
/// `listed`, from bit 4 one `pending` bit per slot of the world's
/// non-blocking collectives, bit 6 `local`, from bit 8 the `started`
/// count of them.
///
/// - **settled**: the rank holds no deferred slot and its idle key is 0,
///   because nothing could have changed either since its last
///   [`World::record_wait`] (which returns the deferred slots and zeroes
///   the key): only the engine defers a slot and only a failed
///   non-blocking poll sets the key, and every way into either takes
///   [`World::core`], which clears it. Then a collective's `record_wait`
///   writes the wait record alone, without reading the deferred count (a
///   load that misses L1 after the previous collective's acquire) or
///   writing the key. Clear at attach; clear only costs the full
///   `record_wait`.
/// - **spinning**: the idle key may be non-zero: a non-blocking poll
///   failed since the key was last zeroed (`World::failed_poll`, the only
///   way to set it, sets it). A blocking call takes it ([`World::known`])
///   and notes its progress (a load of the key) only when it was set.
///   Clear at attach.
/// - **untraced**: the world does not trace (its config's trace events
///   are 0, which no launch changes): a blocking call may try alone
///   without reading the config ([`World::known`]). Set at attach from
///   one read of the config; clear in a copy made from parts (unknown:
///   the call reads it).
/// - **listed**: the rank's active list may hold a request. Set when a
///   request's post appends its record (`request::Scope::post`); clear
///   when the rank knows the list empty: a post that found its tail 0 and
///   appended nothing, or no request record in use (`World::records` 0:
///   the last one collected or cancelled). Only a request's record stays
///   in the list between calls (a blocking call's own record, and a
///   send-receive's two, leave it before the call returns). While clear,
///   neither a request's post nor a blocking call reads the list's tail
///   (a request completed at its post never enters the list: the
///   non-blocking pi's posts read no tail). Clear at attach; set in a
///   copy made from parts (unknown: the tail is read).
/// - **pending** (one per slot of the world's non-blocking collectives,
///   `IMMEDIATE_SLOTS` of them): the rank started a collective of the
///   world in the slot and has not collected it; the slot's record says
///   the same (its `scope` word, which a test or the scope's end reads),
///   and a start reads this bit instead (`MPI_ERR_REQUEST` when set), which
///   after the previous collective's acquire would be a round trip to L2.
///   Set by the start, clear when the collective is collected; clear at
///   attach and in a copy made from parts (a copy starts no non-blocking
///   collective).
/// - **local**: the world lies in this process alone (its config's
///   `FLAG_ACROSS_PROCESSES` clear, which no launch changes), so a
///   collective's check of it ([`World::across_processes`]) reads no
///   config: every world barrier made that read before its opening block
///   barrier. Set at attach, which reads the config's flags beside its
///   trace events (`untraced`); in a copy made from parts, as its caller
///   passes it (clear: unknown, the flag is read).
/// - **block words**: the block's library words
///   ([`shim::block_words`]) were zeroed at the kernel's start behind a
///   block barrier, so the world's non-blocking collectives count their
///   tree's first level there (`collective::immediate`). Set by a
///   kernel's entry's attach ([`World::attach_kernel`]), or by a loom model,
///   whose words start at zero ([`World::block_words_zeroed`]); clear at
///   attach (a rank attached otherwise cannot know that its block's
///   ranks zeroed them) and in a copy made from parts (a copy starts no
///   non-blocking collective).
/// - **started**: how many non-blocking collectives of the world the rank
///   started in this launch, modulo [`RankState::STARTED_MODULUS`]
///   (2^24): the count that names each one's slot and use
///   (`collective::immediate`, "Protocol"; `nonblocking::last_use`),
///   which a communicator context keeps in its `ImmediateLocal`. Kept
///   here so that a start and a wait read no memory for it; the modulus
///   changes nothing, as a use number is only compared for equality with
///   the same slot's, and every rank counts alike. 0 at attach and in a
///   copy.
pub(crate) struct RankState(Cell<u32>);

impl RankState {
    const SETTLED: u32 = 1;
    const SPINNING: u32 = 2;
    const UNTRACED: u32 = 4;
    const LISTED: u32 = 8;
    /// The first of the pending bits (see the type's docs).
    const PENDING: u32 = 16;
    const LOCAL: u32 = 64;
    const BLOCK_WORDS: u32 = 128;
    /// The lowest bit of the started count (see the type's docs).
    const STARTED_SHIFT: u32 = 8;
    /// The started count is kept modulo this.
    pub(crate) const STARTED_MODULUS: u32 = 1 << (32 - Self::STARTED_SHIFT);

    fn with(&self, bit: u32, on: bool) {
        let v = self.0.get();
        self.0.set(if on { v | bit } else { v & !bit });
    }

    /// See the type's docs.
    #[inline(always)]
    pub(crate) fn settled(&self) -> bool {
        self.0.get() & Self::SETTLED != 0
    }

    #[inline(always)]
    pub(crate) fn set_settled(&self, on: bool) {
        self.with(Self::SETTLED, on)
    }

    /// The spinning bit, cleared (see the type's docs).
    #[inline(always)]
    fn take_spinning(&self) -> bool {
        let v = self.0.get();
        self.0.set(v & !Self::SPINNING);
        v & Self::SPINNING != 0
    }

    #[inline(always)]
    fn set_spinning(&self, on: bool) {
        self.with(Self::SPINNING, on)
    }

    /// Whether the world is known not to trace.
    #[inline(always)]
    pub(crate) fn untraced(&self) -> bool {
        self.0.get() & Self::UNTRACED != 0
    }

    /// Whether the world is known to lie in this process alone (see the
    /// type's docs).
    #[inline(always)]
    pub(crate) fn local(&self) -> bool {
        self.0.get() & Self::LOCAL != 0
    }

    /// Whether the block's library words were zeroed for this launch (see
    /// the type's docs).
    #[inline(always)]
    pub(crate) fn block_words(&self) -> bool {
        self.0.get() & Self::BLOCK_WORDS != 0
    }

    #[inline(always)]
    pub(crate) fn set_block_words(&self) {
        self.with(Self::BLOCK_WORDS, true)
    }

    /// Whether the active list may hold a request (see the type's docs).
    #[inline(always)]
    pub(crate) fn listed(&self) -> bool {
        self.0.get() & Self::LISTED != 0
    }

    #[inline(always)]
    pub(crate) fn set_listed(&self, on: bool) {
        self.with(Self::LISTED, on)
    }

    /// Whether slot `slot` of the world's non-blocking collectives is in
    /// use (see the type's docs).
    #[inline(always)]
    pub(crate) fn pending(&self, slot: u32) -> bool {
        self.0.get() & (Self::PENDING << slot) != 0
    }

    #[inline(always)]
    pub(crate) fn set_pending(&self, slot: u32, on: bool) {
        self.with(Self::PENDING << slot, on)
    }

    /// The world's non-blocking collectives started, modulo
    /// [`RankState::STARTED_MODULUS`] (see the type's docs).
    #[inline(always)]
    pub(crate) fn started(&self) -> u32 {
        self.0.get() >> Self::STARTED_SHIFT
    }

    /// Sets the started count to `n` modulo [`RankState::STARTED_MODULUS`].
    #[inline(always)]
    pub(crate) fn set_started(&self, n: u32) {
        let low = self.0.get() & ((1 << Self::STARTED_SHIFT) - 1);
        // The bits of `n` past the modulus are shifted out.
        self.0.set(low | n << Self::STARTED_SHIFT);
    }
}

// The pending bits fit below the local bit, which is below the count, and
// the modulus is a multiple of the slots (a count's slot is the same
// modulo either).
const _: () = assert!(RankState::PENDING << crate::layout::IMMEDIATE_SLOTS <= RankState::LOCAL);
const _: () = assert!(RankState::LOCAL < RankState::BLOCK_WORDS);
const _: () = assert!(RankState::BLOCK_WORDS < 1 << RankState::STARTED_SHIFT);
const _: () = assert!(RankState::STARTED_MODULUS.is_multiple_of(crate::layout::IMMEDIATE_SLOTS));

impl World {
    /// Attaches the calling rank to the world in `memory`.
    ///
    /// # Safety
    /// `memory` must point to a world laid out and initialised by the host
    /// (`WorldConfig::write_header` on zeroed memory of `layout().total`
    /// bytes) that stays valid, and is accessed only through this library,
    /// while the returned `World` lives; the launch grid must match its config.
    /// A rank attaches once per launch: its `World` counts the collectives
    /// the rank took part in (the world barrier's generations, the
    /// non-blocking collectives it started), which a second `World` of the
    /// same rank would not share.
    pub unsafe fn attach(memory: *mut u8) -> Result<World, Error> {
        // SAFETY: the caller's contract.
        unsafe { World::attach_zeroing(memory, false) }
    }

    /// [`World::attach`] for a kernel's entry ([`crate::kernel::rank_main`]):
    /// once the world is checked, zeroes the block's library words
    /// ([`shim::block_words`]) together with the block's other ranks,
    /// behind a block barrier, and notes that they are zero (`RankState`'s
    /// block words) in the returned `World`.
    ///
    /// # Safety
    /// As for [`World::attach`]; and every rank of the calling block calls
    /// it, first thing in the kernel (the check before the barrier fails on
    /// every rank alike; a rank that returned does not hold the barrier).
    pub(crate) unsafe fn attach_kernel(memory: *mut u8) -> Result<World, Error> {
        // SAFETY: the caller's contract.
        unsafe { World::attach_zeroing(memory, true) }
    }

    /// [`World::attach`], zeroing the block's words with `zero` (see
    /// [`World::attach_kernel`]).
    ///
    /// # Safety
    /// As for [`World::attach_kernel`] with `zero`, else as for
    /// [`World::attach`].
    #[inline(always)]
    unsafe fn attach_zeroing(memory: *mut u8, zero: bool) -> Result<World, Error> {
        // SAFETY: the header is at least 512 bytes of initialised memory that no
        // rank writes during the launch (only the abort word, which is not read here).
        let (magic, version) = unsafe {
            (
                core::ptr::read(memory as *const u32),
                core::ptr::read(memory.add(4) as *const u32),
            )
        };
        if magic != MAGIC || version != VERSION {
            return Err(Error::Intern);
        }
        // The descriptors are a copy of the header on the GPU: one the host
        // did not fill fails here, not later.
        let descriptors = shim::descriptors(memory);
        // SAFETY: the descriptors are the header or, on the GPU, the
        // module's copy of it: `HEADER_BYTES` readable bytes, unchanged during
        // the launch.
        let copied = unsafe {
            (
                core::ptr::read(descriptors as *const u32),
                core::ptr::read(descriptors.add(4) as *const u32),
            )
        };
        if copied != (MAGIC, VERSION) {
            return Err(Error::Intern);
        }
        // The header holds the layout the host wrote with the config
        // (`write_header`), never written during the launch.
        let layout = LayoutRef(memory);
        let c = shim::coordinates();
        if c.block_dim != layout.block_dim || c.grid_dim != layout.blocks {
            return Err(Error::Intern);
        }
        if zero {
            // Each slot's words that this block's nodes can use, one word a
            // rank (a block of fewer ranks than words loops).
            let words = shim::block_words();
            let used = crate::layout::immediate_block_words(c.block_dim) * IMMEDIATE_BLOCK_NODE_WORDS;
            let mut i = c.thread;
            while i < IMMEDIATE_SLOTS * used {
                let word =
                    (i / used * IMMEDIATE_BLOCK_NODES * IMMEDIATE_BLOCK_NODE_WORDS + i % used) as usize;
                // SAFETY: word `word` of the block's words (below
                // `IMMEDIATE_SLOTS × IMMEDIATE_BLOCK_NODES ×
                // IMMEDIATE_BLOCK_NODE_WORDS`, which fit:
                // `collective::immediate`), 8-aligned, only accessed
                // atomically; no rank of the block uses them before the
                // barrier below (the caller's contract).
                unsafe { shim::atomic_u64_at(words, 8 * word) }.store(0, shim::Ordering::Relaxed);
                i += c.block_dim;
            }
            // Orders the zeroes before every later access of the block's
            // ranks to the words (a block barrier orders the block's
            // memory).
            shim::block_barrier();
        }
        Ok(World {
            base: memory,
            layout,
            rank: c.block * c.block_dim + c.thread,
            thread: c.thread,
            block: c.block,
            barrier_generation: Cell::new(0),
            staging_round: Cell::new(0),
            // One read of the config per launch, for every blocking call's
            // and every collective's.
            known: {
                let core = Core {
                    base: memory,
                    rank: 0,
                };
                RankState(Cell::new(
                    (u32::from(!trace::on(&core)) * RankState::UNTRACED)
                        | (u32::from(core.flags() & FLAG_ACROSS_PROCESSES == 0) * RankState::LOCAL)
                        | (u32::from(zero) * RankState::BLOCK_WORDS),
                ))
            },
            records: Cell::new(0),
            last_scope: Cell::new(0),
        })
    }

    /// Notes that the block's library words are zero though no rank zeroed
    /// them: for a loom model, whose words start at zero
    /// ([`shim::block_words`]) and which attaches its ranks itself.
    ///
    /// # Safety
    /// The block's words are zero and no rank of the block has used them
    /// in this launch; every rank of the block makes the same call before
    /// its first non-blocking collective, or none does.
    #[doc(hidden)]
    pub unsafe fn block_words_zeroed(&self) {
        self.known.set_block_words();
    }

    /// The same rank's `World` again, from the scalars of one attached by
    /// [`World::attach`] (`generation`, `staging`, `settled` and `local`:
    /// its counters and two of its flags, [`RankState`]; `false` where
    /// unknown). An
    /// out-of-line function that takes these scalars instead of a `&World`
    /// keeps the world in registers on nvptx: a reference, or a struct of
    /// them passed by value, makes the caller store the world in local
    /// memory (a stack frame in the ptxas report).
    ///
    /// # Safety
    /// `base`, `rank`, `thread` and `block` are those of a `World` that is
    /// alive (its contract holds for the copy).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // scalars, to stay in registers (above)
    pub(crate) unsafe fn from_parts(
        base: *mut u8,
        rank: u32,
        thread: u32,
        block: u32,
        generation: u32,
        staging: u32,
        settled: bool,
        local: bool,
    ) -> World {
        World {
            base,
            // `base` is an attached world's memory (the caller's contract).
            layout: LayoutRef(base),
            rank,
            thread,
            block,
            barrier_generation: Cell::new(generation),
            staging_round: Cell::new(staging),
            // Spinning, and listed: unknown, so the key and the list's
            // tail are read.
            known: RankState(Cell::new(
                (settled as u32 * RankState::SETTLED)
                    | (local as u32 * RankState::LOCAL)
                    | RankState::SPINNING
                    | RankState::LISTED,
            )),
            // Unknown: a copy takes no request record (the collectives'
            // steps, its only users, post none); one it tried to take
            // would fail with `Error::RequestLimit`, never reuse a record
            // in use.
            records: Cell::new(u32::MAX),
            // A copy opens no scope (see `records`).
            last_scope: Cell::new(0),
        }
    }

    /// The world's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Ranks per block: the launch's (`%ntid.x` on the GPU), which
    /// [`World::attach`] checked against the layout's. A special register
    /// and not a field of the layout because the GPU loads a layout field
    /// again after every atomic, from L2 after an acquire; so do
    /// [`World::blocks`] and [`World::ranks`].
    #[inline(always)]
    pub(crate) fn block_dim(&self) -> u32 {
        shim::block_dim()
    }

    /// Blocks: the launch's (`%nctaid.x`), checked at attach.
    #[inline(always)]
    pub(crate) fn blocks(&self) -> u32 {
        shim::grid_dim()
    }

    /// Ranks: the launch's threads, since a world's ranks are whole blocks
    /// (`WorldConfig::layout` refuses a partial one). From `coordinates`,
    /// whose reads the compiler may merge and hold: read at each use (as
    /// `block_dim` is), this gave `pi_p2p`, whose loop checks a rank per
    /// message, a stack frame.
    #[inline(always)]
    pub(crate) fn ranks(&self) -> u32 {
        let c = shim::coordinates();
        c.block_dim * c.grid_dim
    }

    /// The world rank of this rank's block's first thread: the block's
    /// leader in the collectives' block phases.
    #[inline(always)]
    pub(crate) fn block_leader(&self) -> u32 {
        self.block * self.block_dim()
    }

    /// Ranks per block.
    pub fn block_size(&self) -> i32 {
        self.block_dim() as i32
    }

    pub(crate) fn check_rank(&self, r: i32) -> Result<(), Error> {
        if r >= 0 && r < self.ranks() as i32 {
            Ok(())
        } else {
            Err(Error::InvalidRank {
                rank: r,
                size: self.ranks() as i32,
            })
        }
    }
}

/// Which communicator a handle belongs to: its context id (0: the world)
/// and where its members lie in the context's table. Copied into every
/// [`Process`] and [`AnyProcess`]; for the world every field is 0, so the
/// world's paths fold the translation away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommInfo {
    /// The context id: 0 for the world, else `1..=communicators`.
    pub(crate) id: u32,
    /// The first of its members' entries in the context's table.
    pub(crate) start: u32,
    /// Its size (0 for the world, whose size is the layout's).
    pub(crate) size: u32,
}

impl CommInfo {
    /// The world's.
    pub(crate) const WORLD: CommInfo = CommInfo {
        id: 0,
        start: 0,
        size: 0,
    };

    /// The context word of its point-to-point messages.
    #[inline(always)]
    pub(crate) fn context(&self) -> u32 {
        self.id << 1
    }

    /// The context word of its collectives' messages.
    #[inline(always)]
    pub(crate) fn collective_context(&self) -> u32 {
        (self.id << 1) | 1
    }

    /// The world rank of rank `r` of this communicator, checked
    /// (`MPI_ERR_RANK` with this communicator's size); `PROC_NULL` and
    /// `ANY_SOURCE` stay as they are.
    #[inline(always)]
    pub(crate) fn world_rank(&self, world: &World, r: i32) -> Result<i32, Error> {
        if r == PROC_NULL || r == ANY_SOURCE {
            return Ok(r);
        }
        if self.id == 0 {
            world.check_rank(r)?;
            return Ok(r);
        }
        if r < 0 || r >= self.size as i32 {
            return Err(Error::InvalidRank {
                rank: r,
                size: self.size as i32,
            });
        }
        Ok(self.member(world, r as u32) as i32)
    }

    /// The world rank of member `r < size` (no check).
    #[inline(always)]
    pub(crate) fn member(&self, world: &World, r: u32) -> u32 {
        if self.id == 0 {
            return r;
        }
        // Relaxed: the table was published by the creation's closing barrier.
        world
            .core()
            .comm_word(self.id, self.start + r, CommWord::Member)
            .load(shim::Ordering::Relaxed)
    }
}

/// A communicator (MPI 4.1 chapter 7): the world or a
/// [`SimpleCommunicator`]. Beside the rank queries and process handles it
/// provides the collective creation calls (each a split of this
/// communicator, described in [`crate::communicator`]; O(size) per rank)
/// and the local queries `compare` and `group`.
pub trait Communicator {
    /// This rank (`MPI_Comm_rank`).
    fn rank(&self) -> i32;
    /// Number of ranks (`MPI_Comm_size`).
    fn size(&self) -> i32;
    /// The process at rank `r`: a destination, a source, or a collective root.
    /// `PROC_NULL` is allowed; other invalid ranks fail with `MPI_ERR_RANK` when used.
    fn process_at_rank(&self, r: i32) -> Process<'_>;
    /// The null process (`MPI_PROC_NULL`).
    fn null_process(&self) -> Process<'_>;
    /// A source that matches any rank (`MPI_ANY_SOURCE`).
    fn any_process(&self) -> AnyProcess<'_>;
    /// This rank's view of the communicator for the general algorithms.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn view(&self) -> CommView<'_>;
    /// Which collective algorithms this communicator takes.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn route(&self) -> Route<'_>;

    /// `MPI_Comm_compare` (local): identical (the same communicator),
    /// congruent (same ranks, same order, other context), similar (same
    /// ranks, other order) or unequal. O(size²) at worst.
    ///
    /// Standard section: MPI 4.1 §7.4.1.
    fn compare<C: Communicator + ?Sized>(&self, other: &C) -> CommunicatorRelation
    where
        Self: Sized,
    {
        compare_views(&self.view(), &other.view())
    }

    /// The group of the communicator (`MPI_Comm_group`, local).
    ///
    /// Standard section: MPI 4.1 §7.3.2.
    fn group(&self) -> Group<'_> {
        Group::of_view(&self.view())
    }
}

/// A reference to a communicator is one (as in rsmpi), so that generic
/// code can take `impl Communicator` and be handed `&world`.
impl<C: Communicator + ?Sized> Communicator for &C {
    fn rank(&self) -> i32 {
        (**self).rank()
    }
    fn size(&self) -> i32 {
        (**self).size()
    }
    fn process_at_rank(&self, r: i32) -> Process<'_> {
        (**self).process_at_rank(r)
    }
    fn null_process(&self) -> Process<'_> {
        (**self).null_process()
    }
    fn any_process(&self) -> AnyProcess<'_> {
        (**self).any_process()
    }
    #[allow(private_interfaces)]
    fn view(&self) -> CommView<'_> {
        (**self).view()
    }
    #[allow(private_interfaces)]
    #[inline(always)]
    fn route(&self) -> Route<'_> {
        (**self).route()
    }
}

impl Communicator for World {
    fn rank(&self) -> i32 {
        self.rank as i32
    }
    fn size(&self) -> i32 {
        self.ranks() as i32
    }
    fn process_at_rank(&self, r: i32) -> Process<'_> {
        Process {
            world: self,
            comm: CommInfo::WORLD,
            rank: r,
        }
    }
    fn null_process(&self) -> Process<'_> {
        Process {
            world: self,
            comm: CommInfo::WORLD,
            rank: PROC_NULL,
        }
    }
    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess {
            world: self,
            comm: CommInfo::WORLD,
        }
    }
    #[allow(private_interfaces)]
    fn view(&self) -> CommView<'_> {
        CommView::of(self, CommInfo::WORLD)
    }
    #[allow(private_interfaces)]
    #[inline(always)]
    fn route(&self) -> Route<'_> {
        // Across processes too: the relays carry what its collectives'
        // world barriers publish (docs/distributed.md).
        Route::World(self)
    }
}

/// One rank of a communicator, or the null process.
#[derive(Clone, Copy)]
pub struct Process<'a> {
    pub(crate) world: &'a World,
    /// The communicator whose rank `rank` is.
    pub(crate) comm: CommInfo,
    pub(crate) rank: i32,
}

impl<'a> Process<'a> {
    /// The rank this handle names in its communicator (`PROC_NULL` for
    /// the null process).
    pub fn rank(&self) -> i32 {
        self.rank
    }
    /// Whether this is the null process.
    pub fn is_null(&self) -> bool {
        self.rank == PROC_NULL
    }
    /// The world.
    pub fn world(&self) -> &'a World {
        self.world
    }
}

/// Any rank of a communicator, as a receive source.
#[derive(Clone, Copy)]
pub struct AnyProcess<'a> {
    pub(crate) world: &'a World,
    /// The communicator.
    pub(crate) comm: CommInfo,
}

impl World {
    /// The largest message a send may carry (`WorldConfig::max_message_bytes`).
    #[inline(always)]
    pub(crate) fn max_message_bytes(&self) -> u32 {
        self.core_settled().max_message_bytes()
    }

    /// Whether the world spreads over processes (docs/distributed.md):
    /// then the host's relay completes the world collectives' barriers
    /// with what they read, and the non-blocking ones go through the
    /// relay (with the `distributed` feature),
    /// and what would read or write another process's ranks' memory fails
    /// with [`Error::AcrossProcesses`] on every rank.
    /// Known at attach (`RankState`: local), so a collective reads no
    /// config for it.
    #[inline(always)]
    pub(crate) fn across_processes(&self) -> bool {
        !self.known.local() && self.core_settled().flags() & FLAG_ACROSS_PROCESSES != 0
    }

    /// Whether a split of the world exchanges its colours and keys by
    /// messages (`SimpleCommunicator::split_by_messages`) rather than
    /// through one table: across processes, in a build with the
    /// `distributed` feature (docs/distributed.md). Without the feature
    /// this folds to `false`.
    #[inline(always)]
    pub(crate) fn creation_by_messages(&self) -> bool {
        cfg!(feature = "distributed") && self.across_processes()
    }

    /// The engine's copy of this world's addresses, for a call that may
    /// run the engine or a non-blocking poll: the rank is no longer known
    /// to be settled ([`RankState`](crate::communicator::RankState)).
    #[inline(always)]
    pub(crate) fn core(&self) -> Core {
        self.known.set_settled(false);
        self.core_settled()
    }

    /// [`World::core`] for a caller that neither runs the engine nor fails
    /// a non-blocking poll (it defers no slot and sets no idle key): a
    /// collective's own waits and records, a look at the layout.
    #[inline(always)]
    pub(crate) fn core_settled(&self) -> Core {
        Core {
            base: self.base,
            rank: self.rank,
        }
    }

    /// [`World::core_settled`] for a trace record, when the world traces:
    /// `None` without reading the config when attach found it off
    /// ([`RankState`](crate::communicator::RankState): untraced). A record
    /// defers no slot and sets no idle key, so the rank stays settled and
    /// its next collective's wait record is a store alone.
    #[inline(always)]
    pub(crate) fn tracing(&self) -> Option<Core> {
        if self.known.untraced() {
            return None;
        }
        let core = self.core_settled();
        crate::trace::on(&core).then_some(core)
    }

    /// This rank's request record `index`.
    #[inline(always)]
    pub(crate) fn record(&self, index: u32) -> *mut crate::records::RequestRecord {
        self.core().record(index)
    }
}

impl World {
    /// Writes this rank's wait record (see `Core::record_wait`); a settled
    /// rank ([`RankState`](crate::communicator::RankState)) has nothing
    /// to return and its idle key is already 0, so it writes the record
    /// alone.
    #[inline(always)]
    pub(crate) fn record_wait(&self, w: WaitFor) {
        let c = self.core_settled();
        if self.known.settled() {
            c.write_wait_record(w);
        } else {
            c.record_wait(w);
            self.known.set_settled(true);
        }
        self.known.set_spinning(false);
    }

    /// What a blocking call about to run may take as known
    /// ([`crate::records::Known`]): whether the idle key may be set
    /// ([`RankState`]: spinning, false
    /// afterwards: the call zeroes the key if so) and whether the active
    /// list is empty ([`RankState`]: scopes).
    #[inline(always)]
    pub(crate) fn known(&self) -> crate::records::Known {
        crate::records::Known {
            spinning: self.known.take_spinning(),
            list_empty: !self.known.listed(),
            untraced: self.known.untraced(),
            unchecked: false,
        }
    }

    /// Sets the state word of this rank's wait record.
    #[inline(always)]
    pub(crate) fn record_state(&self, state: u32) {
        self.core_settled().record_state(state)
    }

    /// A non-blocking call (a test, an immediate probe) failed: give way as a
    /// failed poll does in a wait. `extra` tells apart calls with the same
    /// record (the request's or slice's address).
    ///
    /// The emulator's exact deadlock rule needs a snooze that says "not
    /// fresh" only when the rank, since its last snooze, did nothing but
    /// fail the same read, and would keep failing it. A program may count
    /// its failed tests (a delay loop), so a failed non-blocking call is
    /// fresh until the same call (same record and `extra`) failed
    /// [`SPIN_QUIET_AFTER`](crate::polling::SPIN_QUIET_AFTER) times in a row with no progress of this rank in
    /// between ([`World::note_progress`], called by every wait and every
    /// non-blocking call that did something; and entering any blocking call
    /// or collective, `Core::record_wait`, even one that completes at once). A rank that spins on one call
    /// that can never succeed thus turns quiet, and a world of such ranks
    /// (and blocked ones) is reported, with their wait records, as a
    /// livelock. Limits: a loop that alternates between two different
    /// failing calls never turns quiet (it gives way, but is not reported);
    /// a bounded loop of more than `SPIN_QUIET_AFTER` failed calls while
    /// every other rank waits can be reported as a livelock. The key and
    /// the count live in the rank's header (private words).
    pub(crate) fn failed_poll(&self, what: WaitFor, extra: usize) {
        self.known.set_spinning(true);
        self.core().failed_poll(what, extra)
    }

    /// This rank did something (a wait, a completed or progressed
    /// non-blocking call): the next failed non-blocking poll is fresh, and
    /// the wait record of a spin it left is cleared. Nothing to do, and
    /// nothing read, unless a failed poll may have set the idle key since
    /// it was last zeroed ([`RankState`]: spinning).
    pub(crate) fn note_progress(&self) {
        if self.known.take_spinning() {
            self.core().note_progress()
        }
    }

    /// The rank that aborted the world, if any.
    pub fn aborted_by(&self) -> Option<u32> {
        self.core().aborted_by()
    }

    /// Aborts the world (as `MPI_ABORT` does): every rank waiting
    /// now or later gives up with `Aborted`. The first rank to abort is the
    /// one reported; the launch fails even if every rank then returns `Ok`
    /// (the host's `HostError::WorldAborted`).
    pub fn abort(&self) {
        self.core().abort()
    }
}

/// Polls `poll` until it yields a result, snoozing between polls.
///
/// The first failed poll writes the wait record. The wait ends early with
/// `Aborted` when another rank aborted the world, and with `Timeout` (after
/// marking the record and aborting the world) when the world has a timeout
/// and it passed. `poll` gets the backoff to call `progressed` when it
/// completed part of its work (a combined send-receive).
pub(crate) fn wait_for<T>(
    world: &World,
    what: WaitFor,
    poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    // The wait notes progress (`World::note_progress`) only if the idle
    // key may be set.
    let spinning = world.known.take_spinning();
    crate::polling::wait_core_polled(&world.core(), what, false, spinning, poll)
}

impl World {
    /// Runs world collective `call` (root `root`, -2 for none) as `f`,
    /// traced as a span (as [`CommView::traced`] for the others).
    #[inline(always)]
    pub(crate) fn traced(
        &self,
        call: Call,
        root: i32,
        f: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.span(call as u32, root).leave(f())
    }

    /// Enters world collective `call` (a `polling::Call` code) with root
    /// `root` (-2: none) as a trace span, reading the trace flag only when
    /// attach did not ([`RankState`]).
    #[inline(always)]
    pub(crate) fn span(&self, call: u32, root: i32) -> trace::Span {
        self.span_in(call, root, 0, 0, 0)
    }

    /// [`World::span`] on the communicator of context `id`, first table
    /// entry `start` and size `size` (`trace::Span::enter_in`).
    #[inline(always)]
    pub(crate) fn span_in(&self, call: u32, root: i32, id: u32, start: u32, size: u32) -> trace::Span {
        trace::Span::enter_in(
            &self.core_settled(),
            self.known.untraced(),
            call,
            root,
            id,
            start,
            size,
        )
    }
}

/// One rank's view of a communicator for the general algorithms.
#[derive(Clone, Copy)]
pub(crate) struct CommView<'a> {
    pub(crate) world: &'a World,
    pub(crate) comm: CommInfo,
    /// This rank in the communicator.
    pub(crate) rank: u32,
    /// The communicator's size.
    pub(crate) size: u32,
}

/// Which algorithms a collective call on a communicator takes
/// (`collective/api.rs` matches on it once per call, each arm with its
/// own closure, so that the other arm folds away). Each handle type
/// gives its own ([`Communicator::route`]), so the choice is made by the
/// type at compile time and a kernel carries only the algorithms of the
/// communicators it uses.
#[derive(Clone, Copy)]
pub(crate) enum Route<'a> {
    /// The world's own: the staging cells and the grid barrier
    /// (`collective/world.rs`, `movement.rs`, `scan.rs`).
    World(&'a World),
    /// A communicator made from the world: the hardware path of a whole
    /// block or warp where the call has one (`collective/hardware.rs`),
    /// else the message algorithms (`collective/general.rs`).
    Sub(CommView<'a>),
}

/// The colour of a split (`MPI_Comm_split`'s `color`): ranks passing the
/// same colour land in the same new communicator.
///
/// Standard section: MPI 4.1 §7.4.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Color(pub(crate) u32);

impl Color {
    /// `MPI_UNDEFINED`: the rank joins no communicator (the split returns
    /// `None` to it).
    pub const fn undefined() -> Color {
        Color(u32::MAX)
    }
    /// A colour. `u32::MAX` is [`Color::undefined`].
    pub const fn with_value(value: u32) -> Color {
        Color(value)
    }
    /// Whether this is [`Color::undefined`].
    pub const fn is_undefined(&self) -> bool {
        self.0 == u32::MAX
    }
}

/// How two communicators relate (`MPI_Comm_compare`'s result).
///
/// Standard section: MPI 4.1 §7.4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommunicatorRelation {
    /// `MPI_IDENT`: the same communicator (same context and members).
    Identical,
    /// `MPI_CONGRUENT`: the same members in the same order, another context.
    Congruent,
    /// `MPI_SIMILAR`: the same members in another order.
    Similar,
    /// `MPI_UNEQUAL`: other members.
    Unequal,
}

/// A communicator made from a parent (rsmpi's `SimpleCommunicator`),
/// valid while the world lives. Its point-to-point calls go through
/// [`Communicator::process_at_rank`] and [`Communicator::any_process`] as
/// on the world (ranks and statuses in its own numbering); its collectives
/// are [`CommunicatorCollectives`](crate::collective::CommunicatorCollectives)
/// and [`Root`](crate::collective::Root), with the algorithms of
/// `collective/general.rs` (docs/limits.md gives their costs).
///
/// Standard section: MPI 4.1 §7.4.
#[derive(Clone, Copy)]
pub struct SimpleCommunicator<'w> {
    pub(crate) world: &'w World,
    pub(crate) info: CommInfo,
    pub(crate) rank: u32,
}

impl<'w> SimpleCommunicator<'w> {
    /// The world it was made in.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// Its context id (1 to the world's `communicators`; the world is 0).
    /// The communicators of one split share it.
    pub fn context_id(&self) -> u32 {
        self.info.id
    }

    /// The world rank of its rank `r`, or `MPI_ERR_RANK`.
    pub fn world_rank_of(&self, r: i32) -> Result<i32, Error> {
        if r == PROC_NULL {
            return Err(Error::InvalidRank {
                rank: r,
                size: self.info.size as i32,
            });
        }
        self.info.world_rank(self.world, r)
    }
}

impl Communicator for SimpleCommunicator<'_> {
    fn rank(&self) -> i32 {
        self.rank as i32
    }
    fn size(&self) -> i32 {
        self.info.size as i32
    }
    fn process_at_rank(&self, r: i32) -> Process<'_> {
        Process {
            world: self.world,
            comm: self.info,
            rank: r,
        }
    }
    fn null_process(&self) -> Process<'_> {
        Process {
            world: self.world,
            comm: self.info,
            rank: PROC_NULL,
        }
    }
    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess {
            world: self.world,
            comm: self.info,
        }
    }
    #[allow(private_interfaces)]
    fn view(&self) -> CommView<'_> {
        CommView {
            world: self.world,
            comm: self.info,
            rank: self.rank,
            size: self.info.size,
        }
    }
    #[allow(private_interfaces)]
    #[inline(always)]
    fn route(&self) -> Route<'_> {
        Route::Sub(self.view())
    }
}

impl<'w> CommView<'w> {
    /// The view of the communicator `comm` for the calling rank (its rank
    /// there from the inverse map; the world's as it is).
    pub(crate) fn of(world: &'w World, comm: CommInfo) -> CommView<'w> {
        if comm.id == 0 {
            return CommView {
                world,
                comm,
                rank: world.rank,
                size: world.ranks(),
            };
        }
        CommView {
            world,
            comm,
            rank: world.core().comm_rank_of(comm.context(), world.rank) as u32,
            size: comm.size,
        }
    }

    /// Runs collective `call` (root `root` in this communicator's
    /// numbering, -2 for none) as `f`, traced as a span: entered before
    /// `f`, left with its result on every path (`trace::Span`).
    #[inline(always)]
    pub(crate) fn traced(
        &self,
        call: Call,
        root: i32,
        f: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let c = self.comm;
        let span = self.world.span_in(call as u32, root, c.id, c.start, c.size);
        span.leave(f())
    }
}

/// The colour `split_shared` gives world rank `w`: its block.
pub(crate) fn block_color(world: &World, w: u32) -> Color {
    Color(w / world.block_dim())
}

/// The colour `split_by_warp` gives world rank `w`: its warp (32
/// consecutive threads of its block; a block whose size is not a multiple
/// of 32 ends with a partial warp).
pub(crate) fn warp_color(world: &World, w: u32) -> Color {
    let bd = world.block_dim();
    let warps = bd.div_ceil(32);
    Color((w / bd) * warps + (w % bd) / 32)
}

/// `MPI_Comm_compare` of two views.
pub(crate) fn compare_views(a: &CommView<'_>, b: &CommView<'_>) -> CommunicatorRelation {
    if a.comm == b.comm && a.size == b.size {
        return CommunicatorRelation::Identical;
    }
    if a.size != b.size {
        return CommunicatorRelation::Unequal;
    }
    let n = a.size;
    if (0..n).all(|r| a.comm.member(a.world, r) == b.comm.member(b.world, r)) {
        return CommunicatorRelation::Congruent;
    }
    let in_b = |w: u32| (0..n).any(|r| b.comm.member(b.world, r) == w);
    if (0..n).all(|r| in_b(a.comm.member(a.world, r))) {
        CommunicatorRelation::Similar
    } else {
        CommunicatorRelation::Unequal
    }
}

/// A group of processes (`MPI_Group`, MPI 4.1 §7.3): an ordered set of
/// world ranks, heap-free. The group of a communicator reads its members
/// from the communicator's table; [`Group::include`] and
/// [`Group::exclude`] borrow their rank lists and the group they select
/// from.
///
/// Standard section: MPI 4.1 §7.3.
#[derive(Clone, Copy)]
pub struct Group<'a> {
    world: &'a World,
    members: Members<'a>,
}

#[derive(Clone, Copy)]
enum Members<'a> {
    /// A communicator's members.
    Comm(CommInfo, u32),
    /// Ranks `ranks[i]` of `parent`, in that order.
    Include(&'a Group<'a>, &'a [i32]),
    /// The ranks of `parent` not in the list, in their order.
    Exclude(&'a Group<'a>, &'a [i32]),
}

impl<'a> Group<'a> {
    pub(crate) fn of_view(view: &CommView<'a>) -> Group<'a> {
        Group {
            world: view.world,
            members: Members::Comm(view.comm, view.size),
        }
    }

    /// Its size (`MPI_Group_size`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn size(&self) -> i32 {
        // `ranks` lists distinct ranks of the parent (`check_list`): at most
        // its size, an `i32`.
        match self.members {
            Members::Comm(_, n) => n as i32,
            Members::Include(_, ranks) => ranks.len() as i32,
            Members::Exclude(parent, ranks) => parent.size() - ranks.len() as i32,
        }
    }

    /// The world rank of its rank `r < size` (unchecked beyond the bounds
    /// of its parts).
    fn world_of(&self, r: i32) -> u32 {
        match self.members {
            Members::Comm(c, _) => c.member(self.world, r as u32),
            Members::Include(parent, ranks) => parent.world_of(ranks[r as usize]),
            Members::Exclude(parent, ranks) => {
                let mut seen = -1;
                for q in 0..parent.size() {
                    if !ranks.contains(&q) {
                        seen += 1;
                        if seen == r {
                            return parent.world_of(q);
                        }
                    }
                }
                u32::MAX
            }
        }
    }

    /// The rank in this group of world rank `w`, if it is a member (O(size)).
    fn rank_of_world(&self, w: u32) -> Option<i32> {
        (0..self.size()).find(|&r| self.world_of(r) == w)
    }

    /// The calling rank's rank in the group, `None` when it is not a
    /// member (`MPI_Group_rank`, `MPI_UNDEFINED`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn rank(&self) -> Option<i32> {
        self.rank_of_world(self.world.rank)
    }

    /// The rank in `other` of this group's rank `r`: `Some(None)` when it
    /// is not in `other` (`MPI_UNDEFINED`); `MPI_ERR_RANK` for a bad `r`.
    /// `PROC_NULL` translates to itself.
    ///
    /// Standard section: MPI 4.1 §7.3.1 (`MPI_Group_translate_ranks`).
    pub fn translate_rank(&self, r: i32, other: &Group<'_>) -> Result<Option<i32>, Error> {
        if r == PROC_NULL {
            return Ok(Some(PROC_NULL));
        }
        if r < 0 || r >= self.size() {
            return Err(Error::InvalidRank {
                rank: r,
                size: self.size(),
            });
        }
        Ok(other.rank_of_world(self.world_of(r)))
    }

    /// `MPI_Group_translate_ranks`: `out[i]` is the rank in `other` of
    /// `ranks[i]` (`-32766`, `MPI_UNDEFINED`'s value here, for none);
    /// `out` needs `ranks.len()` entries (`MPI_ERR_COUNT`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn translate_ranks(&self, ranks: &[i32], other: &Group<'_>, out: &mut [i32]) -> Result<(), Error> {
        if out.len() < ranks.len() {
            return Err(Error::CountMismatch {
                count: crate::error::saturating_u32(out.len()),
                expected: crate::error::saturating_u32(ranks.len()),
            });
        }
        for (o, &r) in out.iter_mut().zip(ranks) {
            *o = self.translate_rank(r, other)?.unwrap_or(UNDEFINED);
        }
        Ok(())
    }

    /// Checks a rank list of [`Group::include`] or [`Group::exclude`]:
    /// each in `0..size` and distinct, else `MPI_ERR_RANK`.
    fn check_list(&self, ranks: &[i32]) -> Result<(), Error> {
        for (i, &r) in ranks.iter().enumerate() {
            if r < 0 || r >= self.size() || ranks[..i].contains(&r) {
                return Err(Error::InvalidRank {
                    rank: r,
                    size: self.size(),
                });
            }
        }
        Ok(())
    }

    /// The group of this group's ranks `ranks`, in that order
    /// (`MPI_Group_incl`); `MPI_ERR_RANK` for a rank out of range or
    /// listed twice.
    ///
    /// Standard section: MPI 4.1 §7.3.2.
    pub fn include(&'a self, ranks: &'a [i32]) -> Result<Group<'a>, Error> {
        self.check_list(ranks)?;
        Ok(Group {
            world: self.world,
            members: Members::Include(self, ranks),
        })
    }

    /// The group of this group's ranks not in `ranks`, in their order
    /// (`MPI_Group_excl`); `MPI_ERR_RANK` as [`Group::include`].
    ///
    /// Standard section: MPI 4.1 §7.3.2.
    pub fn exclude(&'a self, ranks: &'a [i32]) -> Result<Group<'a>, Error> {
        self.check_list(ranks)?;
        Ok(Group {
            world: self.world,
            members: Members::Exclude(self, ranks),
        })
    }
}

/// `MPI_UNDEFINED` as [`Group::translate_ranks`] writes it.
pub const UNDEFINED: i32 = -32766;
