//! The world communicator and process handles (MPI standard chapter 7).
//!
//! One communicator exists: the world of all ranks of the launch
//! (`MPI_COMM_WORLD`). Rank `r` is CUDA thread `r % block_dim` of block
//! `r / block_dim`.

use crate::error::Error;
use crate::memory::Core;
use crate::shim;
use crate::shim::Backoff;
use crate::state::{Layout, LAYOUT_OFFSET, MAGIC, VERSION};
use crate::wait::{wait_core, WaitFor};
use core::cell::Cell;

pub use crate::status::{ANY_SOURCE, PROC_NULL};

/// A pointer to the world's [`Layout`] in its header; dereferences to it.
#[derive(Clone, Copy)]
pub(crate) struct LayoutRef(*const Layout);

impl core::ops::Deref for LayoutRef {
    type Target = Layout;
    #[inline(always)]
    fn deref(&self) -> &Layout {
        // SAFETY: set by `World::attach` to the layout in the world's header,
        // valid and unchanged while the world lives (attach's contract).
        unsafe { &*self.0 }
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
    /// barriers (collectives are called by all), so it is also the value
    /// every block's barrier counter reaches in the current barrier.
    pub(crate) barrier_generation: Cell<u32>,
    /// Rounds of collectives (broadcast rounds, reduction rounds) this rank
    /// has staged; its parity picks the half of the staging regions.
    pub(crate) staging_round: Cell<u32>,
}

impl World {
    /// Attaches the calling rank to the world in `memory`.
    ///
    /// # Safety
    /// `memory` must point to a world laid out and initialised by the host
    /// (`WorldConfig::write_header` on zeroed memory of `layout().total`
    /// bytes) that stays valid, and is accessed only through this library,
    /// while the returned `World` lives; the launch grid must match its config.
    pub unsafe fn attach(memory: *mut u8) -> Result<World, Error> {
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
        // SAFETY: the header holds the layout the host wrote with the config
        // (`write_header`), 8-byte aligned, never written during the launch.
        let layout = LayoutRef(unsafe { memory.add(LAYOUT_OFFSET) } as *const Layout);
        let c = shim::coordinates();
        if c.block_dim != layout.block_dim || c.grid_dim != layout.blocks {
            return Err(Error::Intern);
        }
        Ok(World {
            base: memory,
            layout,
            rank: c.block * c.block_dim + c.thread,
            thread: c.thread,
            block: c.block,
            barrier_generation: Cell::new(0),
            staging_round: Cell::new(0),
        })
    }

    /// The world's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Ranks per block.
    pub fn block_size(&self) -> i32 {
        self.layout.block_dim as i32
    }

    pub(crate) fn check_rank(&self, r: i32) -> Result<(), Error> {
        if r >= 0 && r < self.layout.ranks as i32 {
            Ok(())
        } else {
            Err(Error::InvalidRank {
                rank: r,
                size: self.layout.ranks as i32,
            })
        }
    }
}

/// A communicator (MPI chapter 7): here only the world.
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
}

impl Communicator for World {
    fn rank(&self) -> i32 {
        self.rank as i32
    }
    fn size(&self) -> i32 {
        self.layout.ranks as i32
    }
    fn process_at_rank(&self, r: i32) -> Process<'_> {
        Process { world: self, rank: r }
    }
    fn null_process(&self) -> Process<'_> {
        Process {
            world: self,
            rank: PROC_NULL,
        }
    }
    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess { world: self }
    }
}

/// One rank of the world, or the null process.
#[derive(Clone, Copy)]
pub struct Process<'a> {
    pub(crate) world: &'a World,
    pub(crate) rank: i32,
}

impl<'a> Process<'a> {
    /// The rank this handle names (`PROC_NULL` for the null process).
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

/// Any rank of the world, as a receive source.
#[derive(Clone, Copy)]
pub struct AnyProcess<'a> {
    pub(crate) world: &'a World,
}

impl World {
    /// The engine's copy of this world's addresses.
    #[inline(always)]
    /// The largest message a send may carry (`WorldConfig::max_message_bytes`).
    pub(crate) fn max_message_bytes(&self) -> u32 {
        self.core().max_message_bytes()
    }

    pub(crate) fn core(&self) -> Core {
        Core {
            base: self.base,
            rank: self.rank,
        }
    }

    /// This rank's header (see `Core::rank_header`).
    #[inline(always)]
    pub(crate) fn rank_header(&self) -> *mut crate::memory::RankHeader {
        self.core().rank_header()
    }

    /// This rank's request record `index`.
    #[inline(always)]
    pub(crate) fn record(&self, index: u32) -> *mut crate::memory::RequestRecord {
        self.core().record(index)
    }
}

impl World {
    /// Writes this rank's wait record (see `Core::record_wait`).
    pub(crate) fn record_wait(&self, w: WaitFor) {
        self.core().record_wait(w)
    }

    pub(crate) fn record_state(&self, state: u32) {
        self.core().record_state(state)
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
    /// [`SPIN_QUIET_AFTER`](crate::wait::SPIN_QUIET_AFTER) times in a row with no progress of this rank in
    /// between ([`World::note_progress`], called by every wait and every
    /// non-blocking call that did something). A rank that spins on one call
    /// that can never succeed thus turns quiet, and a world of such ranks
    /// (and blocked ones) is reported, with their wait records, as a
    /// livelock. Limits: a loop that alternates between two different
    /// failing calls never turns quiet (it gives way, but is not reported);
    /// a bounded loop of more than `SPIN_QUIET_AFTER` failed calls while
    /// every other rank waits can be reported as a livelock. The key and
    /// the count live in the rank's header (private words).
    pub(crate) fn failed_poll(&self, what: WaitFor, extra: usize) {
        self.core().failed_poll(what, extra)
    }

    /// This rank did something (a wait, a completed or progressed
    /// non-blocking call): the next failed non-blocking poll is fresh, and
    /// the wait record of a spin it left is cleared.
    pub(crate) fn note_progress(&self) {
        self.core().note_progress()
    }

    /// The rank that aborted the world, if any.
    pub fn aborted_by(&self) -> Option<u32> {
        self.core().aborted_by()
    }

    /// Aborts the world: every rank waiting now or later gives up with
    /// `Aborted`. The first rank to abort is the one reported.
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
    wait_core(&world.core(), what, poll)
}
