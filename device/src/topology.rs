//! The world communicator and process handles (MPI standard chapter 7).
//!
//! One communicator exists: the world of all ranks of the launch
//! (`MPI_COMM_WORLD`). Rank `r` is CUDA thread `r % block_dim` of block
//! `r / block_dim`.

use crate::error::Error;
use crate::shim;
use crate::state::{Layout, WorldConfig, CONFIG_OFFSET, LAYOUT_OFFSET, MAGIC, VERSION};
use core::cell::Cell;

/// `MPI_PROC_NULL`: sends to it and receives from it return at once.
pub const PROC_NULL: i32 = -2;
/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: i32 = -1;

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
    pub(crate) timeout_ns: u64,
    pub(crate) flags: u32,
    pub(crate) max_message_bytes: u32,
    /// Longest sleep of a GPU wait between polls (ns, never 0).
    pub(crate) backoff_max_ns: u32,
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
        let (magic, version, config) = unsafe {
            (
                core::ptr::read(memory as *const u32),
                core::ptr::read(memory.add(4) as *const u32),
                core::ptr::read_unaligned(memory.add(CONFIG_OFFSET) as *const WorldConfig),
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
            timeout_ns: config.timeout_ns,
            flags: config.flags,
            max_message_bytes: config.max_message_bytes,
            backoff_max_ns: config.effective_backoff_max_ns(),
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
