//! One-sided communication (MPI 4.1 chapter 12): windows, put, get and
//! the accumulates, their synchronisation, and notified access.
//!
//! Inside one GPU every rank can address every other rank's memory, so a
//! put is a copy into the target's window and a notification is an atomic
//! add on a counter beside it: no message, no progress engine, no target
//! involvement (the "separate" memory model is never needed: MPI 4.1
//! §12.4, here the unified model).
//!
//! # The world memory
//!
//! A window has an id (one bit of the mask in the windows region's header,
//! claimed by the communicator's rank 0 and given back by `free`) and, per
//! world rank, an entry of three lines (`layout::WINDOW_ENTRY_BYTES`) and
//! the memory of [`Window::allocate`] (of [`Window::allocate_shared`]: all
//! segments, one after another, in the communicator's rank 0's memory):
//!
//! | line | words | written by | read by |
//! |---|---|---|---|
//! | descriptor | base address, size in bytes, displacement unit, datatype id; on the communicator's rank 0, a sub-communicator's fence barrier (arrivals and generation, the reasons, the verdict) | its rank, at creation; the barrier's words every member | every origin, at every operation; the barrier's, the members |
//! | synchronisation | the passive-target lock word, [`NOTIFICATIONS`] notification counters | origins (atomic read-modify-writes) | its rank and origins |
//! | regions | a dynamic window's [`MAX_REGIONS`] attached regions (base, length) | its rank, at attach and detach | every origin, at every operation on a dynamic window (one batch) |
//!
//! The descriptor is published by the creation's closing all-reduce;
//! origins read it with relaxed loads, and an origin keeps the last
//! target's (it never changes while the window lives), so a run of
//! operations to one target loads it once. What only its rank reads (its
//! epochs, the targets it holds locks of, the completions and
//! notifications it has taken) lives in its [`Window`] value, not in the
//! world memory: checking an epoch or the held locks costs no load.
//!
//! # Completion and ordering
//!
//! Every operation is carried out by the origin before the call returns:
//! a put's bytes are stored into the target's memory, a get's loaded from
//! it, an accumulate's elements updated one by one, each with one atomic
//! (`fetch_add` for an integer sum, `swap` for a replace, of 4 or 8 bytes)
//! or a compare-and-swap loop (the rest). So every operation completes locally at once
//! (`flush_local` has nothing left to wait for), and two operations of
//! one origin to one location happen in program order (MPI 4.1 §12.7.2's
//! default accumulate ordering, and more). What the synchronisation
//! calls add is *visibility* at the target: `flush`, `unlock` and `fence`
//! order the origin's stores before what follows them with a device-scope
//! fence (a release read-modify-write for `unlock`), which the target's
//! or the next lock holder's acquire pairs with.
//!
//! # Synchronisation
//!
//! - **Fence** (MPI 4.1 §12.5.1): on the world, one keyed world barrier
//!   whose key is the rank's reason to fail (0: none), so that a rank
//!   that holds locks fails every rank's fence instead of hanging them;
//!   the barrier orders memory as a fence pair, and only when the keys
//!   differ does an all-reduce tell every rank the reason. On any other
//!   communicator: the window's own barrier, a counter of arrivals and
//!   generations in its communicator's rank 0's entry, whose last arrival
//!   publishes the largest reason (no message: a world window's kernel
//!   carries none of the message-based collectives, and a sub-communicator's
//!   fence costs O(size) atomics on one word instead of ceil(log2 size)
//!   rounds of messages). `free` agrees the same way. After the first fence
//!   every rank may access every target until a fence with
//!   [`Mode::NO_SUCCEED`].
//! - **Passive target** (§12.5.3): the lock word of a target holds either
//!   the count of shared holders or [`EXCLUSIVE`] with the holder's rank.
//!   `lock` waits (a bounded wait, named in deadlock reports) until a
//!   compare-and-swap (Acquire) takes it; `unlock` releases it with a
//!   Release read-modify-write. `lock_all` takes a shared lock of every
//!   target (O(size)). Exclusive lockers may wait behind a stream of
//!   shared ones: no fairness is promised.
//! - **Notified access** (our extension; MPI Forum issue 59, foMPI-NA,
//!   NVSHMEM's `put_signal`): [`Window::put_notify`] and
//!   [`Window::accumulate_notify`] add one to a counter of the target's
//!   entry with a Release add after the data (on the GPU a `red`, which
//!   the origin does not wait for);
//!   [`Window::wait_notifications`] at the target waits (Acquire) until
//!   the counter has grown by the number asked for since the last wait.
//!
//! - **Post, start, complete, wait** (§12.5.2): a target's `post` writes
//!   its rank into a free post slot of each origin's synchronisation line
//!   (a compare-and-swap, Release; it waits only while all
//!   [`POST_SLOTS`] slots of an origin are full); an
//!   origin's `start` waits for each target of its group in its slots
//!   (all slots in one batch of relaxed loads per poll, then an Acquire
//!   fence) and frees the slot. A target has at most one post pending
//!   for an origin (its next one follows its `wait`, which needs that
//!   origin's `complete`), so a slot always belongs to the epoch that
//!   takes it. `complete` adds one to each target's completion count
//!   (Release); the target's `wait` waits (Acquire) until the count has
//!   grown by its group's size. The epochs are guards:
//!   [`ExposureEpoch`] and [`AccessEpoch`].
//!
//! The request-based operations (`rput`, `rget`, `raccumulate`,
//! `rget_accumulate`; §12.3) need a passive-target epoch, as MPI says,
//! and return an [`RmaRequest`] that is complete at once.
//!
//! The `*_typed` operations ([`Window::put_typed`] and the others) take
//! any buffer, a [`View`](crate::view::View) included, as origin and a
//! [`TargetView`] (displacement, count, committed datatype) as target
//! (MPI 4.1 §12.3 with datatypes on either side).

use crate::collective::{CommunicatorCollectives, Operation, Root, SystemOperation};
use crate::communicator::{CommInfo, CommView, Communicator, Group, World};
use crate::datatype::Equivalence;
use crate::error::{AttachReason, Error, RmaSyncReason};
use crate::layout::{Layout, MAX_WINDOWS, WINDOW_ENTRY_BYTES};
use crate::polling::{wait_core, Call, WaitFor};
use crate::shim::{self, Ordering};
use crate::status::PROC_NULL;
use crate::trace::{self, RmaEpoch, RmaOp, TraceKind, RMA_OFFSET_BITS};
use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use core::cell::Cell;

pub use crate::error::Flavor;
pub use crate::layout::{MAX_LOCKS, MAX_REGIONS, NOTIFICATIONS, POST_SLOTS};

mod typed;
pub use typed::TargetView;

/// Descriptor line: the window's base address (`u64`).
const BASE: usize = 0;
/// Descriptor line: its size in bytes (`u64`; [`DYNAMIC`] for a dynamic
/// window, whose memory is its attached regions).
const SIZE: usize = 8;
/// The size word of a dynamic window's descriptor.
const DYNAMIC: u64 = u64::MAX;
/// Descriptor line: its displacement unit in bytes.
const DISP_UNIT: usize = 16;
/// Descriptor line: the datatype id of its elements.
const DATATYPE: usize = 20;
/// Descriptor line of the communicator's rank 0's entry, for a window on
/// a sub-communicator: the fences' and the free's barrier word (`u64`:
/// the arrivals of the open generation in the low half, the generation
/// in the high half; [`Window::sub_barrier`]). Every rank's entry has
/// one; only that rank's is used.
const BARRIER: usize = 24;
/// Descriptor line, beside [`BARRIER`]: the largest reason to fail
/// (an [`RmaSyncReason`]; 0: none) of the open generation's arrivals.
const REASONS: usize = 32;
/// Descriptor line, beside [`BARRIER`]: the reasons' maximum of the last
/// completed generation, which its waiting ranks read.
const VERDICT: usize = 36;
/// Synchronisation line: the lock word.
const LOCK: usize = crate::layout::WINDOW_LOCK;
/// Synchronisation line: the origins' `complete`s of this rank's
/// exposure epochs, a count.
const COMPLETES: usize = 68;
/// Synchronisation line: the notification counters.
const NOTIFY: usize = 72;
/// Synchronisation line: [`POST_SLOTS`] slots of the posts made for this
/// rank (0: free, else the target's rank + 1).
const POSTS: usize = NOTIFY + 4 * NOTIFICATIONS as usize;
/// Region line: [`MAX_REGIONS`] regions attached to a dynamic window,
/// each its base address and its length in bytes (`u64`s; base 0: a free
/// slot).
const REGIONS: usize = 128;

const _: () = assert!(VERDICT + 4 <= LOCK);
const _: () = assert!(POSTS + 4 * POST_SLOTS as usize <= REGIONS);
const _: () = assert!(REGIONS + 16 * MAX_REGIONS as usize <= WINDOW_ENTRY_BYTES);
const _: () = assert!(MAX_WINDOWS <= 64);

/// Epoch flag: a fence opened an access and exposure epoch.
const FENCE_OPEN: u32 = 1;
/// Epoch flag: this rank holds `lock_all`.
const LOCK_ALL: u32 = 2;
/// Epoch flag: this rank has an access epoch of `start` open.
const ACCESS: u32 = 4;
/// Epoch flag: this rank has an exposure epoch of `post` open.
const EXPOSURE: u32 = 8;
/// Lock word bit: held exclusively (the low bits: the holder's world
/// rank + 1, for the deadlock report); without it the low bits count the
/// shared holders.
pub const EXCLUSIVE: u32 = crate::layout::WINDOW_LOCK_EXCLUSIVE;

/// The kind of a passive-target lock (`MPI_LOCK_EXCLUSIVE`,
/// `MPI_LOCK_SHARED`; MPI 4.1 §12.5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    /// One holder at a time.
    Exclusive,
    /// Any number of holders, none exclusive.
    Shared,
}

/// Assertions of a fence (`MPI_MODE_*`, MPI 4.1 §12.5.5), combined with
/// `|`. [`Mode::NO_SUCCEED`] ends the fence epoch: an operation after it
/// needs a lock. The others are hints this implementation takes and
/// does not need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mode(u32);

impl Mode {
    /// No assertion.
    pub const NONE: Mode = Mode(0);
    /// `MPI_MODE_NOSTORE`: no local store to the window since the last
    /// synchronisation.
    pub const NO_STORE: Mode = Mode(1);
    /// `MPI_MODE_NOPUT`: no put or accumulate to this rank until the next
    /// synchronisation.
    pub const NO_PUT: Mode = Mode(2);
    /// `MPI_MODE_NOPRECEDE`: the fence ends no epoch.
    pub const NO_PRECEDE: Mode = Mode(4);
    /// `MPI_MODE_NOSUCCEED`: the fence starts no epoch.
    pub const NO_SUCCEED: Mode = Mode(8);

    /// Whether every assertion of `other` is in `self`.
    pub const fn contains(self, other: Mode) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Mode {
    type Output = Mode;
    fn bitor(self, other: Mode) -> Mode {
        Mode(self.0 | other.0)
    }
}

/// A window (`MPI_Win`, MPI 4.1 §12.2) of elements of `T` over a
/// communicator: every rank exposes `len` elements of its own memory,
/// and reaches every rank's through put, get and the accumulates, with
/// displacements counted in elements (the displacement unit is
/// `size_of::<T>()`). Created collectively ([`Window::create`],
/// [`Window::allocate`]) and freed collectively ([`Window::free`]); a
/// window dropped without `free` keeps its id until the launch ends.
///
/// ```
/// # use gpu_mpi_device::{Error, World};
/// # use gpu_mpi_device::traits::*;
/// # use gpu_mpi_device::window::Window;
/// fn ring(world: &World) -> Result<u32, Error> {
///     let win = Window::<u32>::allocate(world, 1)?;
///     let next = (world.rank() + 1) % world.size();
///     win.fence()?;
///     win.put(&[world.rank() as u32], next, 0)?;
///     win.fence()?;
///     let mut mine = [0u32];
///     win.get(&mut mine, world.rank(), 0)?;
///     win.free()?;
///     Ok(mine[0])
/// }
/// ```
///
/// Standard section: MPI 4.1 §12.2.
pub struct Window<'a, T: Equivalence> {
    world: &'a World,
    comm: CommInfo,
    rank: u32,
    size: u32,
    id: u32,
    flavor: Flavor,
    /// The parts of the block's shared window memory the window's
    /// segments occupy (`allocate_shared` in one block; 0: none).
    parts: u64,
    local: *mut T,
    len: usize,
    /// The group of the open `start` (ranks of the communicator; empty
    /// without one), borrowed by the [`AccessEpoch`] that holds it.
    access_group: Cell<(*const i32, usize)>,
    /// This rank's epoch flags ([`FENCE_OPEN`], [`LOCK_ALL`], [`ACCESS`],
    /// [`EXPOSURE`]). This and the three fields below are state that only
    /// this rank reads, so they live here, not in the world memory: an
    /// operation's epoch check, a fence's look for held locks and a
    /// notification wait's count cost no load of it.
    epoch: Cell<u32>,
    /// The targets locked ([`MAX_LOCKS`] words: 0 none, else the target
    /// + 1, with [`EXCLUSIVE`] for an exclusive lock).
    held: Cell<[u32; MAX_LOCKS as usize]>,
    /// The completions this rank's exposure waits have taken.
    completed: Cell<u32>,
    /// The notifications consumed, per counter.
    consumed: Cell<[u32; NOTIFICATIONS as usize]>,
    /// The descriptors of the last two targets operations reached, the
    /// latest first: a descriptor does not change while the window lives,
    /// so operations that go to one or two targets in turn (a halo's two
    /// neighbours) load each (and translate its rank) once.
    last: Cell<[Target; 2]>,
    _memory: PhantomData<&'a mut [T]>,
}

/// A target's descriptor as an origin holds it ([`Window::target`]).
#[derive(Clone, Copy)]
struct Target {
    /// The target's rank in the window's communicator (-1: none yet).
    rank: i32,
    /// Its world rank.
    world: u32,
    /// The base address of its window memory.
    base: u64,
    /// Its size in bytes.
    size: u64,
    /// The datatype id of its elements.
    datatype: u32,
}

impl Target {
    const NONE: Target = Target {
        rank: -1,
        world: 0,
        base: 0,
        size: 0,
        datatype: 0,
    };
}

/// What a creation learns from its communicator: the window id and, for
/// a shared-memory window, the parts of the block's shared window memory
/// its segments occupy (0: they are in the world memory). Rank 0 claims
/// both.
#[derive(Clone, Copy)]
struct Agreement {
    id: u32,
    parts: u64,
}

impl<'a, T: Equivalence> Window<'a, T> {
    /// Creates a window over `memory` on every rank of `comm`
    /// (`MPI_Win_create`); collective. `memory` must be reachable by
    /// other ranks: a [`GlobalSlice`](crate::GlobalSlice)'s elements, the
    /// rank's [`Scratch`](crate::Scratch) (on the GPU a thread's stack is
    /// not: every rank fails with [`Error::WindowMemory`]). Every rank
    /// fails with [`Error::WindowLimit`] (`MPI_ERR_WIN`) when the world's
    /// windows are all in use.
    ///
    /// Standard section: MPI 4.1 §12.2.1.
    pub fn create<C: Communicator + ?Sized>(comm: &'a C, memory: &'a mut [T]) -> Result<Self, Error> {
        let len = memory.len();
        let ptr = memory.as_mut_ptr();
        let reachable = len == 0 || shim::is_shared_address(ptr as *const u8);
        Self::make(comm, Flavor::Create, |_| ptr, len, Ask::memory(reachable, 0))
    }

    /// Creates a window with no memory on every rank of `comm`
    /// (`MPI_Win_create_dynamic`); collective. Each rank then attaches
    /// memory of its own ([`Window::attach`], at most [`MAX_REGIONS`]
    /// regions at once) and tells the origins where it is: the
    /// displacement of an operation on a dynamic window is the target
    /// element's address in bytes ([`Attachment::disp`], MPI's
    /// `MPI_Get_address`), its displacement unit 1. An operation on
    /// memory not attached at the target is `MPI_ERR_RMA_RANGE`.
    ///
    /// Standard section: MPI 4.1 §12.2.4.
    pub fn create_dynamic<C: Communicator + ?Sized>(comm: &'a C) -> Result<Self, Error> {
        Self::make(
            comm,
            Flavor::Dynamic,
            |_| core::ptr::null_mut(),
            0,
            Ask::memory(true, 0),
        )
    }

    /// Allocates a window of `len` elements per rank that every rank of
    /// `comm` can also load and store directly
    /// (`MPI_Win_allocate_shared`); collective. Inside one GPU every rank
    /// can reach every other's memory, so any communicator may share one.
    /// The segments are contiguous in rank order (MPI's default): rank
    /// `r`'s follows rank `r - 1`'s, all of them in the window memory of
    /// the communicator's rank 0 (`WorldSpec::window_bytes`), so their sum
    /// must fit there: every rank fails with
    /// [`Error::WindowAllocation`] (`MPI_ERR_NO_MEM`, the sum and the
    /// limit) when it does not. [`Window::shared_query`] and
    /// [`Window::shared_mut`] give a rank's segment; put, get and the
    /// accumulates work on it as on any window.
    ///
    /// **Block shared memory.** When every rank of `comm` is in one block
    /// and the launch gave blocks shared window memory
    /// (`WorldSpec::shared_window_bytes`), the segments go there instead,
    /// if their sum fits in a free run of it: loads, stores and atomics
    /// then stay on the SM (CUDA's `__shared__` memory) and never reach
    /// L2. [`Window::is_block_shared`] says which memory a window got.
    /// The block's memory is taken in 64 parts at most (each at least 16
    /// bytes); `free` gives them back. Memory that does not fit there
    /// falls back to the world memory above. Either memory's content is
    /// undefined at creation (the world memory holds what the id's last
    /// window left; the block's is uninitialised on the GPU).
    ///
    /// Standard section: MPI 4.1 §12.2.3.
    pub fn allocate_shared<C: Communicator + ?Sized>(comm: &'a C, len: usize) -> Result<Self, Error> {
        let view = comm.view();
        let world = view.world;
        let layout = &world.layout;
        let bytes = len.saturating_mul(size_of::<T>()) as u64;
        // The inclusive prefix sum of the segments' sizes: this rank's
        // segment ends there, and the largest (the last rank's) is the
        // total every rank agrees on.
        let mut end = 0u64;
        comm.scan_into(&bytes, &mut end, SystemOperation::sum())?;
        let first = view.comm.member(world, 0);
        let memory = move |a: Agreement| {
            let offset = (end - bytes) as usize;
            if a.parts != 0 {
                let start = a.parts.trailing_zeros() as usize * shared_part_bytes(layout);
                // The parts are 16-byte aligned; the segments before this
                // one hold whole elements of `T` (of at most 16-byte
                // alignment in the block's memory, as `u128`'s).
                shim::launch_shared().wrapping_add(start + offset) as *mut T
            } else {
                let at = layout.window_entry(a.id, first) + WINDOW_ENTRY_BYTES + offset;
                // The segments before this one hold whole elements of `T`
                // from a 64-byte aligned start, so this one is aligned too.
                world.base.wrapping_add(at) as *mut T
            }
        };
        Self::make(
            comm,
            Flavor::Shared,
            memory,
            len,
            Ask::shared(end, align_of::<T>()),
        )
    }

    /// Creates a window of `len` elements per rank in the world memory
    /// (`MPI_Win_allocate`; the world's `window_bytes` per rank and
    /// window, `WorldSpec::window_bytes`); collective. Its content is
    /// what the last window of the same id left there (zero at the
    /// launch's start). Every rank fails with
    /// [`Error::WindowAllocation`] (`MPI_ERR_NO_MEM`) when a rank asks
    /// for more.
    ///
    /// Standard section: MPI 4.1 §12.2.2.
    pub fn allocate<C: Communicator + ?Sized>(comm: &'a C, len: usize) -> Result<Self, Error> {
        let view = comm.view();
        let layout = &view.world.layout;
        let available = layout.window_stride as usize - WINDOW_ENTRY_BYTES;
        let bytes = len.saturating_mul(size_of::<T>());
        let too_large = if bytes > available {
            crate::error::saturating_u32(bytes).max(1)
        } else {
            0
        };
        let world = view.world;
        let memory = move |a: Agreement| {
            let at = layout.window_entry(a.id, world.rank) + WINDOW_ENTRY_BYTES;
            // The entry is 64-byte aligned, so its memory is aligned for
            // every `T` of at most 64-byte alignment.
            world.base.wrapping_add(at) as *mut T
        };
        Self::make(comm, Flavor::Allocate, memory, len, Ask::memory(true, too_large))
    }

    fn make<C: Communicator + ?Sized>(
        comm: &'a C,
        flavor: Flavor,
        memory: impl FnOnce(Agreement) -> *mut T,
        len: usize,
        ask: Ask,
    ) -> Result<Self, Error> {
        let view = comm.view();
        let world = view.world;
        let a = agree(comm, &view, ask)?;
        let mut window = Window {
            world,
            comm: view.comm,
            rank: view.rank,
            size: view.size,
            id: a.id,
            flavor,
            parts: a.parts,
            local: core::ptr::null_mut(),
            len,
            access_group: Cell::new((core::ptr::null(), 0)),
            epoch: Cell::new(0),
            held: Cell::new([0; MAX_LOCKS as usize]),
            completed: Cell::new(0),
            consumed: Cell::new([0; NOTIFICATIONS as usize]),
            last: Cell::new([Target::NONE; 2]),
            _memory: PhantomData,
        };
        window.local = memory(a);
        window.publish();
        // The entries of every rank, written before this all-reduce, are
        // visible after it: its arrivals are Release, its departures
        // Acquire (the fences make that explicit for plain stores).
        shim::fence(Ordering::AcqRel);
        let (send, mut recv) = (0u32, 0u32);
        comm.all_reduce_into(&send, &mut recv, SystemOperation::max())?;
        shim::fence(Ordering::AcqRel);
        Ok(window)
    }

    /// Writes this rank's entry: its descriptor, a free lock, zeroed
    /// counters, and for a dynamic window no regions.
    fn publish(&self) {
        let me = self.world.rank;
        let bytes = (self.len * size_of::<T>()) as u64;
        self.word64(me, BASE).store(self.local as u64, Ordering::Relaxed);
        let size = if self.flavor == Flavor::Dynamic {
            DYNAMIC
        } else {
            bytes
        };
        self.word64(me, SIZE).store(size, Ordering::Relaxed);
        self.word(me, DISP_UNIT)
            .store(size_of::<T>() as u32, Ordering::Relaxed);
        self.word(me, DATATYPE).store(T::DATATYPE.id, Ordering::Relaxed);
        self.word(me, LOCK).store(0, Ordering::Relaxed);
        self.word(me, COMPLETES).store(0, Ordering::Relaxed);
        for k in 0..POST_SLOTS as usize {
            self.word(me, POSTS + 4 * k).store(0, Ordering::Relaxed);
        }
        for k in 0..NOTIFICATIONS as usize {
            self.word(me, NOTIFY + 4 * k).store(0, Ordering::Relaxed);
        }
        if self.flavor == Flavor::Dynamic {
            for k in 0..MAX_REGIONS as usize {
                self.word64(me, REGIONS + 16 * k).store(0, Ordering::Relaxed);
            }
        }
    }

    /// The 32-bit word at `offset` of world rank `rank`'s entry.
    fn word(&self, rank: u32, offset: usize) -> &'a shim::AtomicU32 {
        let at = self.world.layout.window_entry(self.id, rank) + offset;
        // SAFETY: the entry lies inside the world memory (`id` below the
        // world's windows, `rank` below its ranks), `offset` is 4-byte
        // aligned inside it, and its words are only accessed atomically.
        unsafe { shim::atomic_u32_at(self.world.base, at) }
    }

    /// The 64-bit word at `offset` of world rank `rank`'s entry.
    fn word64(&self, rank: u32, offset: usize) -> &'a shim::AtomicU64 {
        let at = self.world.layout.window_entry(self.id, rank) + offset;
        // SAFETY: as in `word`; `offset` is 8-byte aligned and entries are
        // 64-byte aligned.
        unsafe { shim::atomic_u64_at(self.world.base, at) }
    }

    /// The window's id (`0..WorldSpec::windows`).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// This rank's elements of the window (`MPI_WIN_BASE`, as a slice),
    /// for local loads and stores. Local accesses and other ranks'
    /// operations on these elements must be separated by synchronisation
    /// (MPI 4.1 §12.7: a fence, or the other ranks' unlock or flush and
    /// a notification); `&mut self` keeps this rank's own operations out
    /// while the slice lives.
    pub fn local_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `local` is valid for `len` elements of `T` for `'a`
        // (the creation's memory, or this rank's allocation in the world
        // memory), aligned, and reached by this rank only through `self`,
        // which the borrow holds; other ranks' accesses are ordered
        // against it by the window's synchronisation (the caller's part).
        unsafe { core::slice::from_raw_parts_mut(self.local, self.len) }
    }

    /// Elements of this rank's window.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this rank's window is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of this rank's window (`MPI_WIN_SIZE`).
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The displacement unit (`MPI_WIN_DISP_UNIT`): `size_of::<T>()`; 1
    /// for a dynamic window, whose displacements are addresses.
    pub fn disp_unit(&self) -> usize {
        if self.flavor == Flavor::Dynamic {
            1
        } else {
            size_of::<T>()
        }
    }

    /// How the window was made (`MPI_WIN_CREATE_FLAVOR`).
    ///
    /// Standard section: MPI 4.1 §12.2.6.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// Whether the window's memory is its block's shared memory
    /// ([`Window::allocate_shared`] on a communicator inside one block,
    /// with room in `WorldSpec::shared_window_bytes`), rather than the
    /// world's global memory.
    pub fn is_block_shared(&self) -> bool {
        self.parts != 0
    }

    /// Where rank `rank`'s window memory is (`MPI_Win_shared_query`): its
    /// first element and its length in elements; with `PROC_NULL`, the
    /// segment of the lowest rank whose segment is not empty (a null
    /// pointer and 0 if none is). Every window's memory can be loaded and
    /// stored by every rank here (MPI 4.1 lets a shared query ask any
    /// window); a dynamic window has none of its own:
    /// [`Error::WindowFlavor`] (`MPI_ERR_RMA_FLAVOR`). Loads and stores
    /// through the pointer are ordered against other ranks' accesses by
    /// the window's synchronisation, as for [`Window::local_mut`].
    ///
    /// Standard section: MPI 4.1 §12.2.3.
    pub fn shared_query(&self, rank: i32) -> Result<(*mut T, usize), Error> {
        if self.flavor == Flavor::Dynamic {
            return Err(Error::WindowFlavor {
                flavor: Flavor::Dynamic as u32,
            });
        }
        if rank == PROC_NULL {
            for r in 0..self.size as i32 {
                let t = self.target(r);
                if t.size != 0 {
                    return Ok((t.base as *mut T, t.size as usize / size_of::<T>()));
                }
            }
            return Ok((core::ptr::null_mut(), 0));
        }
        if rank < 0 || rank >= self.size as i32 {
            return Err(Error::InvalidRank {
                rank,
                size: self.size as i32,
            });
        }
        let t = self.target(rank);
        Ok((t.base as *mut T, t.size as usize / size_of::<T>()))
    }

    /// Rank `rank`'s window memory for direct loads and stores (a shared
    /// query's segment as a slice; this rank's own is
    /// [`Window::local_mut`]). Other ranks' accesses to it, and their put,
    /// get and accumulates, must be separated from these by
    /// synchronisation (MPI 4.1 §12.7: a fence, a lock, `sync` with a
    /// barrier or a notification); `&mut self` keeps this rank's own
    /// operations out while the slice lives. Errors as
    /// [`Window::shared_query`]; `PROC_NULL` is `MPI_ERR_RANK` here.
    ///
    /// Standard section: MPI 4.1 §12.2.3.
    pub fn shared_mut(&mut self, rank: i32) -> Result<&mut [T], Error> {
        if rank == PROC_NULL {
            return Err(Error::InvalidRank {
                rank,
                size: self.size as i32,
            });
        }
        let (ptr, len) = self.shared_query(rank)?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: `ptr` is `rank`'s published window memory, valid for
        // `len` elements of `T` while the window lives (`'a` outlives the
        // borrow of `self`) and aligned for `T`; other ranks' accesses are
        // ordered against the slice's by the window's synchronisation (the
        // caller's part, as for `local_mut`), this rank's by the borrow.
        Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
    }

    /// The group of the window's communicator (`MPI_Win_get_group`).
    ///
    /// Standard section: MPI 4.1 §12.2.6.
    pub fn group(&self) -> Group<'a> {
        Group::of_view(&self.view())
    }

    /// This rank's rank in the window's communicator.
    pub fn rank(&self) -> i32 {
        self.rank as i32
    }

    /// Ranks of the window's communicator.
    pub fn size(&self) -> i32 {
        self.size as i32
    }

    fn view(&self) -> CommView<'a> {
        CommView {
            world: self.world,
            comm: self.comm,
            rank: self.rank,
            size: self.size,
        }
    }

    // ---- epochs ----------------------------------------------------------

    fn me(&self) -> u32 {
        self.world.rank
    }

    fn epoch(&self) -> u32 {
        self.epoch.get()
    }

    fn set_epoch(&self, flags: u32) {
        self.epoch.set(flags);
    }

    fn set_held(&self, slot: usize, h: u32) {
        let mut all = self.held.get();
        all[slot] = h;
        self.held.set(all);
    }

    /// The slot of the held-locks list that holds `target`'s lock, or
    /// `None`.
    fn held(&self, target: u32) -> Option<(usize, u32)> {
        (0..MAX_LOCKS as usize).find_map(|k| {
            let h = self.held.get()[k];
            (h != 0 && (h & !EXCLUSIVE) == target + 1).then_some((k, h))
        })
    }

    /// Why a fence or free cannot go ahead on this rank, if it cannot.
    fn open_epochs(&self) -> Option<RmaSyncReason> {
        if self.epoch() & (ACCESS | EXPOSURE) != 0 {
            Some(RmaSyncReason::EpochOpen)
        } else if self.holds_locks() {
            Some(RmaSyncReason::LocksHeld)
        } else {
            None
        }
    }

    fn holds_locks(&self) -> bool {
        self.epoch() & LOCK_ALL != 0 || self.held.get().iter().any(|&h| h != 0)
    }

    /// Checks `target` (a rank of the communicator, not `PROC_NULL`) and
    /// that this rank has an access epoch to it; returns its descriptor.
    fn access(&self, target: i32) -> Result<Target, Error> {
        if target < 0 || target >= self.size as i32 {
            return Err(Error::InvalidRank {
                rank: target,
                size: self.size as i32,
            });
        }
        let t = target as u32;
        let epoch = self.epoch();
        if epoch & (FENCE_OPEN | LOCK_ALL) == 0 && self.held(t).is_none() {
            let reason = if epoch & ACCESS == 0 {
                RmaSyncReason::NoEpoch
            } else if self.access_group().contains(&target) {
                return Ok(self.target(target));
            } else {
                RmaSyncReason::NotInGroup
            };
            return Err(Error::RmaSync {
                target,
                reason: reason as u32,
            });
        }
        Ok(self.target(target))
    }

    /// The descriptor of `target` (a rank of the communicator): a kept
    /// one, else its entry's, loaded as one batch.
    fn target(&self, target: i32) -> Target {
        let [latest, before] = self.last.get();
        if latest.rank == target {
            return latest;
        }
        if before.rank == target {
            self.last.set([before, latest]);
            return before;
        }
        let w = self.comm.member(self.world, target as u32);
        let (base, size, datatype) = shim::independent(|| {
            (
                self.word64(w, BASE).load(Ordering::Relaxed),
                self.word64(w, SIZE).load(Ordering::Relaxed),
                self.word(w, DATATYPE).load(Ordering::Relaxed),
            )
        });
        let t = Target {
            rank: target,
            world: w,
            base,
            size,
            datatype,
        };
        self.last.set([t, latest]);
        t
    }

    /// The group of the open `start` (empty without one).
    fn access_group(&self) -> &[i32] {
        let (ptr, len) = self.access_group.get();
        if len == 0 {
            return &[];
        }
        // SAFETY: set by `start` from a slice the returned `AccessEpoch`
        // borrows, and cleared by its `complete` (or drop) before that
        // borrow ends; read only while the epoch is open.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }

    /// The address of `count` elements at displacement `disp` of the
    /// window of `t` (from [`Window::access`]), checked against its size
    /// and datatype.
    fn target_range(&self, t: Target, disp: usize, count: usize) -> Result<*mut T, Error> {
        let (target, base, size, datatype) = (t.rank, t.base, t.size, t.datatype);
        if datatype != T::DATATYPE.id {
            return Err(Error::RmaType {
                target,
                window: datatype,
                expected: T::DATATYPE.id,
            });
        }
        if size == DYNAMIC {
            return self.attached_range(t, disp, count);
        }
        let offset = disp.checked_mul(size_of::<T>());
        let bytes = count.checked_mul(size_of::<T>());
        let end = offset.zip(bytes).and_then(|(o, b)| o.checked_add(b));
        match end {
            Some(end) if end as u64 <= size => Ok((base as usize + offset.unwrap_or(0)) as *mut T),
            _ => Err(Error::RmaRange {
                target,
                offset: crate::error::saturating_u32(offset.unwrap_or(usize::MAX)),
                bytes: crate::error::saturating_u32(bytes.unwrap_or(usize::MAX)),
                size: crate::error::saturating_u32(size as usize),
            }),
        }
    }

    /// The address of `count` elements at address `addr` of the dynamic
    /// window of `t`: they must lie in one region attached there, at an
    /// element boundary of it.
    #[inline(never)]
    fn attached_range(&self, t: Target, addr: usize, count: usize) -> Result<*mut T, Error> {
        let bytes = count.checked_mul(size_of::<T>());
        if let Some(b) = bytes {
            let a = addr as u64;
            let region = self.region_holding(t, a, a.saturating_add(b as u64));
            if region.is_some_and(|(base, _)| (a - base).is_multiple_of(size_of::<T>() as u64)) {
                return Ok(addr as *mut T);
            }
        }
        Err(Error::RmaRange {
            target: t.rank,
            offset: crate::error::saturating_u32(addr),
            bytes: crate::error::saturating_u32(bytes.unwrap_or(usize::MAX)),
            size: 0,
        })
    }

    /// The region (base, length in bytes) attached to the dynamic window
    /// of `t` that holds the addresses `lo..hi`, loaded as one batch.
    fn region_holding(&self, t: Target, lo: u64, hi: u64) -> Option<(u64, u64)> {
        let regions: [u64; 2 * MAX_REGIONS as usize] = shim::independent(|| {
            core::array::from_fn(|k| self.word64(t.world, REGIONS + 8 * k).load(Ordering::Relaxed))
        });
        regions.chunks_exact(2).find_map(|r| {
            let (base, len) = (r[0], r[1]);
            (base != 0 && lo >= base && hi >= lo && hi - base <= len).then_some((base, len))
        })
    }

    // ---- dynamic windows ---------------------------------------------------

    /// Attaches `memory` to this rank's part of a dynamic window
    /// (`MPI_Win_attach`); local. Other ranks may reach it once they know
    /// its displacements ([`Attachment::disp`]; send them, or agree on
    /// them before a synchronisation that follows the attach) until the
    /// returned [`Attachment`] is detached or dropped. Errors, with
    /// nothing attached: a window that is not dynamic,
    /// [`Error::WindowFlavor`] (`MPI_ERR_RMA_FLAVOR`); [`MAX_REGIONS`]
    /// regions attached already, memory overlapping one of them, or
    /// memory other ranks cannot reach (a GPU thread's stack),
    /// [`Error::WindowAttach`] (`MPI_ERR_RMA_ATTACH`). Empty memory takes
    /// no region.
    ///
    /// Standard section: MPI 4.1 §12.2.4.
    pub fn attach<'m>(&self, memory: &'m mut [T]) -> Result<Attachment<'_, 'm, 'a, T>, Error> {
        if self.flavor != Flavor::Dynamic {
            return Err(Error::WindowFlavor {
                flavor: self.flavor as u32,
            });
        }
        let (ptr, len) = (memory.as_mut_ptr(), memory.len());
        let bytes = core::mem::size_of_val(memory);
        let refuse = |reason: AttachReason| Error::WindowAttach {
            reason: reason as u32,
            bytes: crate::error::saturating_u32(bytes),
        };
        let mut attachment = Attachment {
            window: self,
            slot: MAX_REGIONS,
            ptr,
            len,
            _memory: PhantomData,
        };
        if bytes == 0 {
            return Ok(attachment);
        }
        if !shim::is_shared_address(ptr as *const u8) {
            return Err(refuse(AttachReason::Unreachable));
        }
        let me = self.me();
        let (start, end) = (ptr as u64, ptr as u64 + bytes as u64);
        let mut free = None;
        for k in 0..MAX_REGIONS {
            let at = REGIONS + 16 * k as usize;
            let base = self.word64(me, at).load(Ordering::Relaxed);
            let size = self.word64(me, at + 8).load(Ordering::Relaxed);
            if base == 0 {
                free = free.or(Some(k));
            } else if start < base + size && base < end {
                return Err(refuse(AttachReason::Overlap));
            }
        }
        let Some(k) = free else {
            return Err(refuse(AttachReason::Full));
        };
        // Relaxed: an origin learns the displacement through a
        // synchronisation after this (a message, a barrier, a fence),
        // which orders these stores before its loads of the region.
        let at = REGIONS + 16 * k as usize;
        self.word64(me, at + 8).store(bytes as u64, Ordering::Relaxed);
        self.word64(me, at).store(start, Ordering::Relaxed);
        attachment.slot = k;
        Ok(attachment)
    }

    // ---- operations --------------------------------------------------------

    /// Stores `origin` into `target`'s window at element `disp`
    /// (`MPI_Put`); complete at the target after the next `flush`,
    /// `unlock` or `fence`. `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.3.1.
    pub fn put(&self, origin: &[T], target: i32, disp: usize) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let at = self.target_range(t, disp, origin.len())?;
        let bytes = core::mem::size_of_val(origin);
        if bytes == 8 && (at as usize).is_multiple_of(8) {
            // One word (a `u64`, an `f64`, two `u32`s): a single store of
            // the value, as a native kernel's, instead of a copy loop.
            // SAFETY: `origin` holds 8 bytes (read unaligned: `T` may be
            // smaller); `at` is 8 bytes inside the target's window,
            // 8-aligned, ordered as below.
            unsafe {
                let v = (origin.as_ptr() as *const u64).read_unaligned();
                shim::store_payload_u64(at as *mut u8, v);
            }
        } else {
            // SAFETY: `at` is `origin.len()` elements inside the target's
            // window (checked against the size its rank published), valid
            // for the window's life; `origin` is a distinct borrow (this
            // rank's window memory is only reachable through `&mut self`).
            // Conflicting accesses are ordered by the window's
            // synchronisation.
            unsafe { copy(at as *mut u8, origin.as_ptr() as *const u8, bytes) };
        }
        self.trace_op(RmaOp::Put, target, disp, origin.len());
        Ok(())
    }

    /// Loads `target`'s elements at `disp` into `result` (`MPI_Get`);
    /// complete when it returns. `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.3.2.
    pub fn get(&self, result: &mut [T], target: i32, disp: usize) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let at = self.target_range(t, disp, result.len())?;
        let bytes = core::mem::size_of_val(result);
        if bytes == 8 && (at as usize).is_multiple_of(8) {
            // One word: a single load, as in `put`.
            // SAFETY: as in `put`, the other way round.
            unsafe {
                let v = shim::load_payload_u64(at as *const u8);
                (result.as_mut_ptr() as *mut u64).write_unaligned(v);
            }
        } else {
            // SAFETY: as in `put`, the other way round.
            unsafe { copy(result.as_mut_ptr() as *mut u8, at as *const u8, bytes) };
        }
        self.trace_op(RmaOp::Get, target, disp, result.len());
        Ok(())
    }

    /// Combines `origin` into `target`'s elements at `disp` with `op`
    /// (`MPI_Accumulate`: `target = target op origin`, element by element,
    /// each atomically with respect to every other accumulate;
    /// [`SystemOperation::replace`] stores, [`SystemOperation::no_op`]
    /// does nothing). `MPI_ERR_OP` for an operation not defined on `T`.
    ///
    /// Standard section: MPI 4.1 §12.3.4.
    pub fn accumulate(&self, origin: &[T], target: i32, disp: usize, op: SystemOperation) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        self.fetch_ops(origin, None, target, disp, op)?;
        self.trace_op(RmaOp::Accumulate, target, disp, origin.len());
        Ok(())
    }

    /// [`accumulate`](Self::accumulate) that also returns the target's
    /// elements before the operation in `result` (`MPI_Get_accumulate`;
    /// with [`SystemOperation::no_op`], an atomic get). `result` must have
    /// `origin`'s length (`MPI_ERR_COUNT`).
    ///
    /// Standard section: MPI 4.1 §12.3.5.
    pub fn get_accumulate(
        &self,
        origin: &[T],
        result: &mut [T],
        target: i32,
        disp: usize,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        if result.len() != origin.len() {
            return Err(Error::CountMismatch {
                count: crate::error::saturating_u32(result.len()),
                expected: crate::error::saturating_u32(origin.len()),
            });
        }
        self.fetch_ops(origin, Some(result), target, disp, op)?;
        self.trace_op(RmaOp::GetAccumulate, target, disp, origin.len());
        Ok(())
    }

    /// One element: `result = target; target = target op origin`,
    /// atomically (`MPI_Fetch_and_op`).
    ///
    /// Standard section: MPI 4.1 §12.3.5.
    pub fn fetch_and_op(
        &self,
        origin: &T,
        result: &mut T,
        target: i32,
        disp: usize,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        self.fetch_ops(
            core::slice::from_ref(origin),
            Some(core::slice::from_mut(result)),
            target,
            disp,
            op,
        )?;
        self.trace_op(RmaOp::FetchAndOp, target, disp, 1);
        Ok(())
    }

    /// One element: `result = target; if target == compare { target =
    /// origin }`, atomically (`MPI_Compare_and_swap`). Elements compare
    /// by their bits (MPI allows integer, logical and byte types; a
    /// float's `-0.0` and `0.0` differ here).
    ///
    /// Standard section: MPI 4.1 §12.3.6.
    pub fn compare_and_swap(
        &self,
        origin: &T,
        compare: &T,
        result: &mut T,
        target: i32,
        disp: usize,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        if target == PROC_NULL {
            return Ok(());
        }
        check_atomic::<T>(SystemOperation::replace())?;
        let t = self.access(target)?;
        let at = self.target_range(t, disp, 1)?;
        let want = bytemuck::bytes_of(compare);
        // SAFETY: `at` is one element inside the target's window (checked),
        // aligned for `T`; accumulates reach it only atomically.
        *result = unsafe { update(at, |old| (bytemuck::bytes_of(&old) == want).then_some(*origin)) };
        self.trace_op(RmaOp::CompareAndSwap, target, disp, 1);
        Ok(())
    }

    fn fetch_ops(
        &self,
        origin: &[T],
        mut result: Option<&mut [T]>,
        target: i32,
        disp: usize,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        op.check_accumulate::<T>()?;
        check_atomic::<T>(op)?;
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let at = self.target_range(t, disp, origin.len())?;
        for (k, o) in origin.iter().enumerate() {
            let e = at.wrapping_add(k);
            // SAFETY: element `k < origin.len()` of the checked range,
            // aligned for `T`; accumulates reach it only atomically.
            let old = unsafe { combine(e, op, o) };
            if let Some(r) = result.as_deref_mut() {
                r[k] = old;
            }
        }
        Ok(())
    }

    // ---- request-based operations -------------------------------------------

    /// A request-based operation needs a passive-target epoch to `target`
    /// (MPI 4.1 §12.3.1: `MPI_Rput` and the like only in one).
    fn request_epoch(&self, target: i32) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        self.passive(Some(target)).map_err(|_| Error::RmaSync {
            target,
            reason: RmaSyncReason::NoEpoch as u32,
        })
    }

    /// [`put`](Self::put) returning a request (`MPI_Rput`), inside a lock
    /// of `target` or `lock_all`. The put is done when this returns, so the
    /// request is complete at once: its `wait` means, as in MPI, that
    /// `origin` may be reused; completion at the target still takes a
    /// `flush` or `unlock`.
    ///
    /// Standard section: MPI 4.1 §12.3.1.
    pub fn rput(&self, origin: &[T], target: i32, disp: usize) -> Result<RmaRequest, Error> {
        self.request_epoch(target)?;
        self.put(origin, target, disp)?;
        Ok(RmaRequest(()))
    }

    /// [`get`](Self::get) returning a request (`MPI_Rget`), inside a lock
    /// of `target` or `lock_all`; `result` holds the data when it returns.
    ///
    /// Standard section: MPI 4.1 §12.3.2.
    pub fn rget(&self, result: &mut [T], target: i32, disp: usize) -> Result<RmaRequest, Error> {
        self.request_epoch(target)?;
        self.get(result, target, disp)?;
        Ok(RmaRequest(()))
    }

    /// [`accumulate`](Self::accumulate) returning a request
    /// (`MPI_Raccumulate`), inside a lock of `target` or `lock_all`.
    ///
    /// Standard section: MPI 4.1 §12.3.4.
    pub fn raccumulate(
        &self,
        origin: &[T],
        target: i32,
        disp: usize,
        op: SystemOperation,
    ) -> Result<RmaRequest, Error>
    where
        SystemOperation: Operation<T>,
    {
        self.request_epoch(target)?;
        self.accumulate(origin, target, disp, op)?;
        Ok(RmaRequest(()))
    }

    /// [`get_accumulate`](Self::get_accumulate) returning a request
    /// (`MPI_Rget_accumulate`), inside a lock of `target` or `lock_all`.
    ///
    /// Standard section: MPI 4.1 §12.3.5.
    pub fn rget_accumulate(
        &self,
        origin: &[T],
        result: &mut [T],
        target: i32,
        disp: usize,
        op: SystemOperation,
    ) -> Result<RmaRequest, Error>
    where
        SystemOperation: Operation<T>,
    {
        self.request_epoch(target)?;
        self.get_accumulate(origin, result, target, disp, op)?;
        Ok(RmaRequest(()))
    }

    // ---- notified access -------------------------------------------------

    fn counter(&self, counter: u32) -> Result<usize, Error> {
        if counter >= NOTIFICATIONS {
            return Err(Error::OutOfBounds {
                index: counter,
                len: NOTIFICATIONS,
            });
        }
        Ok(4 * counter as usize)
    }

    /// Adds one to `target`'s counter (after its operation: its
    /// descriptor is the last one's, so this translates no rank).
    fn notify(&self, target: i32, counter: usize) {
        let w = self.target(target).world;
        // Release: the operation's stores before it, for the target's
        // Acquire load in `wait_notifications`. An add whose old value
        // nobody needs: on the GPU a `red`, which this rank does not wait for.
        self.word(w, NOTIFY + counter).add(1, Ordering::Release);
    }

    /// [`put`](Self::put), then one more notification on the target's
    /// counter `counter` (< [`NOTIFICATIONS`]): once the target's
    /// [`wait_notifications`](Self::wait_notifications) has counted it,
    /// the put's data is visible there. Needs an access epoch as a put
    /// does (a `lock_all` held for the window's life serves).
    pub fn put_notify(&self, origin: &[T], target: i32, disp: usize, counter: u32) -> Result<(), Error> {
        self.notified(target, counter, RmaOp::PutNotify, || {
            self.put(origin, target, disp)
        })
    }

    /// Runs `operation` (to `target`, as `op` records it) and raises a
    /// notification on the target's counter `counter`; the counter is
    /// checked first, so a bad one writes nothing. `PROC_NULL` does
    /// nothing.
    #[inline(always)]
    fn notified(
        &self,
        target: i32,
        counter: u32,
        op: RmaOp,
        operation: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let c = self.counter(counter)?;
        if target == PROC_NULL {
            return Ok(());
        }
        operation()?;
        self.notify(target, c);
        self.trace_notify(op, counter);
        Ok(())
    }

    /// [`accumulate`](Self::accumulate), then a notification as
    /// [`put_notify`](Self::put_notify) gives.
    pub fn accumulate_notify(
        &self,
        origin: &[T],
        target: i32,
        disp: usize,
        op: SystemOperation,
        counter: u32,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        self.notified(target, counter, RmaOp::AccumulateNotify, || {
            self.accumulate(origin, target, disp, op)
        })
    }

    /// Waits until `count` more notifications have reached this rank's
    /// counter `counter` than earlier waits took, and takes them; the
    /// data of the operations that raised them is then visible in this
    /// rank's window. A bounded wait, named in deadlock reports.
    pub fn wait_notifications(&self, counter: u32, count: u32) -> Result<(), Error> {
        let c = self.counter(counter)?;
        let me = self.me();
        let consumed = self.consumed.get()[counter as usize];
        let core = self.world.core();
        let what = WaitFor {
            operation: Call::WinNotify,
            peer: -1,
            tag: counter as i32,
        };
        wait_core(&core, what, |_| {
            // Acquire: pairs with the notifiers' Release add.
            let arrived = self.word(me, NOTIFY + c).load(Ordering::Acquire);
            (arrived.wrapping_sub(consumed) >= count).then_some(Ok(()))
        })?;
        let mut all = self.consumed.get();
        all[counter as usize] = consumed.wrapping_add(count);
        self.consumed.set(all);
        self.trace_event(TraceKind::RmaNotified, 0, -2, count, counter as u64);
        Ok(())
    }

    /// Notifications on this rank's counter `counter` not yet taken by a
    /// wait (a test: takes none; their data is visible once counted). A
    /// test that finds none gives way as a failed poll: a loop of them lets
    /// the other ranks run on the emulator and, if nothing can come, is
    /// reported as a spin.
    pub fn test_notifications(&self, counter: u32) -> Result<u32, Error> {
        let c = self.counter(counter)?;
        let me = self.me();
        let consumed = self.consumed.get()[counter as usize];
        // Acquire: as in `wait_notifications`.
        let arrived = self.word(me, NOTIFY + c).load(Ordering::Acquire);
        let n = arrived.wrapping_sub(consumed);
        if n == 0 {
            // Gives way as a failed poll, as `ExposureEpoch::test` does.
            let what = WaitFor {
                operation: Call::WinNotify,
                peer: -1,
                tag: counter as i32,
            };
            self.world.failed_poll(what, self.id as usize);
        } else {
            self.world.note_progress();
        }
        Ok(n)
    }

    // ---- active target -----------------------------------------------------

    /// `MPI_Win_fence` without assertions: completes every operation of
    /// every rank since the last fence and opens the next epoch.
    /// Collective; fails on every rank with `MPI_ERR_RMA_SYNC` when a rank
    /// holds locks of the window.
    ///
    /// Standard section: MPI 4.1 §12.5.1.
    pub fn fence(&self) -> Result<(), Error> {
        self.fence_with(Mode::NONE)
    }

    /// `MPI_Win_fence` with `mode` ([`Mode::NO_SUCCEED`] closes the fence
    /// epoch).
    ///
    /// Standard section: MPI 4.1 §12.5.1.
    pub fn fence_with(&self, mode: Mode) -> Result<(), Error> {
        let held = self.open_epochs().map_or(0, |r| r as u32);
        let any = self.agree_reasons(Call::WinFence, held)?;
        if any != 0 {
            return Err(Error::RmaSync {
                target: -2,
                reason: any,
            });
        }
        let was = self.epoch();
        let open = if mode.contains(Mode::NO_SUCCEED) {
            0
        } else {
            FENCE_OPEN
        };
        self.set_epoch((was & !FENCE_OPEN) | open);
        self.trace_fence(was, open);
        Ok(())
    }

    /// The largest of the members' reasons to fail (`held`: this rank's,
    /// an [`RmaSyncReason`] or 0), with a barrier over the window's
    /// communicator that orders memory as a fence pair: every member's
    /// operations on the window before it are complete at their targets
    /// before any member leaves it. `call` names the wait in deadlock
    /// reports and the span in traces (`WinFence`, `WinFree`).
    ///
    /// On the world: the keyed world barrier, whose key is the reason;
    /// when every rank passed the same one (0 in a correct program) each
    /// knows it, and only when they differ does the all-reduce run, on
    /// every rank alike (the barrier's verdict is the same on every rank).
    /// The barrier orders memory as a fence pair would: a block barrier
    /// gathers the block's stores, its first rank's AcqRel arrival
    /// releases them, its Acquire poll (or, for the last arrival, the
    /// arrival's acquire half) takes every block's, and the closing block
    /// barrier hands them to the block. On a sub-communicator:
    /// [`Window::sub_barrier`], with no message, so that a world window's
    /// kernel carries none of the message-based collectives.
    fn agree_reasons(&self, call: Call, held: u32) -> Result<u32, Error> {
        let what = WaitFor {
            operation: call,
            peer: -2,
            tag: self.id as i32,
        };
        let mut any = held;
        if self.comm.id == 0 {
            let mut agreed = false;
            self.world.traced(call, -2, || {
                agreed = self.world.barrier_agreeing(what, held)?;
                Ok(())
            })?;
            if !agreed {
                self.world
                    .all_reduce_into(&held, &mut any, SystemOperation::max())?;
            }
        } else {
            self.view().traced(call, -2, || {
                any = self.sub_barrier(what, held)?;
                Ok(())
            })?;
        }
        Ok(any)
    }

    /// A barrier over the members of a sub-communicator's window that
    /// returns the largest of their `held`: a counter in the descriptor
    /// line of the communicator's rank 0's entry ([`BARRIER`]), whose
    /// last arrival publishes the verdict and opens the next generation.
    /// O(size) atomics on one word, where the message-based all-reduce it
    /// replaces sent ceil(log2 size) rounds of messages per rank.
    ///
    /// After every completed generation the words are at rest (no
    /// arrival counted, [`REASONS`] 0), whatever window next takes the id
    /// and whichever rank is its communicator's rank 0; the world memory
    /// starts zeroed. A member that never arrives leaves the others
    /// waiting, a bounded wait named `what` in deadlock reports.
    fn sub_barrier(&self, what: WaitFor, held: u32) -> Result<u32, Error> {
        let words = barrier_words(self.world, self.id, self.comm.member(self.world, 0));
        match words.arrive(self.size, held) {
            Arrival::Last(any) => {
                self.world.note_progress();
                Ok(any)
            }
            Arrival::Waiting(generation) => {
                wait_core(&self.world.core(), what, |_| words.departed(generation).map(Ok))
            }
        }
    }

    // ---- generalised active target -----------------------------------------

    /// `MPI_ERR_RANK` unless `target` is a rank of the window's communicator.
    fn check_rank(&self, target: i32) -> Result<(), Error> {
        if target < 0 || target >= self.size as i32 {
            return Err(Error::InvalidRank {
                rank: target,
                size: self.size as i32,
            });
        }
        Ok(())
    }

    /// Checks a group of ranks of the window's communicator.
    fn check_group(&self, group: &[i32]) -> Result<(), Error> {
        match group.iter().find(|&&r| r < 0 || r >= self.size as i32) {
            Some(&rank) => Err(Error::InvalidRank {
                rank,
                size: self.size as i32,
            }),
            None => Ok(()),
        }
    }

    /// Opens an exposure epoch of this rank's window to the ranks of
    /// `group` (`MPI_Win_post`; distinct ranks of the window's
    /// communicator): each may access it after its `start`. Ends with
    /// [`ExposureEpoch::wait`]. Waits only when an origin already holds
    /// [`POST_SLOTS`] posts its `start` has not taken.
    ///
    /// Standard section: MPI 4.1 §12.5.2.
    pub fn post(&self, group: &[i32]) -> Result<ExposureEpoch<'_, 'a, T>, Error> {
        self.check_group(group)?;
        if self.epoch() & EXPOSURE != 0 {
            return Err(Error::RmaSync {
                target: -2,
                reason: RmaSyncReason::EpochOpen as u32,
            });
        }
        let mark = self.rank + 1;
        let core = self.world.core();
        for &o in group {
            let w = self.comm.member(self.world, o as u32);
            let what = WaitFor {
                operation: Call::WinPost,
                peer: o,
                tag: self.id as i32,
            };
            wait_core(&core, what, |_| {
                let slot = (0..POST_SLOTS as usize).find(|k| {
                    // Release: this rank's accesses to its window before
                    // the post, before the origin's operations (its
                    // Acquire load in `start`).
                    self.word(w, POSTS + 4 * k)
                        .compare_exchange(0, mark, Ordering::Release)
                        .is_ok()
                });
                slot.map(|_| Ok(()))
            })?;
        }
        self.set_epoch(self.epoch() | EXPOSURE);
        self.trace_epoch(
            TraceKind::RmaEpochOpen,
            RmaEpoch::Exposure,
            -2,
            group.len() as u32,
        );
        Ok(ExposureEpoch {
            window: self,
            origins: group.len() as u32,
        })
    }

    /// Opens an access epoch to the ranks of `group` (`MPI_Win_start`;
    /// distinct ranks of the window's communicator), waiting for each
    /// one's matching `post`. Operations to them go through the window as
    /// in any epoch; to others they fail with `MPI_ERR_RMA_SYNC`. Ends
    /// with [`AccessEpoch::complete`].
    ///
    /// Standard section: MPI 4.1 §12.5.2.
    pub fn start<'g>(&self, group: &'g [i32]) -> Result<AccessEpoch<'_, 'g, 'a, T>, Error> {
        self.check_group(group)?;
        if self.epoch() & ACCESS != 0 {
            return Err(Error::RmaSync {
                target: -2,
                reason: RmaSyncReason::EpochOpen as u32,
            });
        }
        let me = self.me();
        let core = self.world.core();
        for &t in group {
            let what = WaitFor {
                operation: Call::WinStart,
                peer: t,
                tag: self.id as i32,
            };
            let mark = t as u32 + 1;
            wait_core(&core, what, |_| {
                // Every slot in one batch of relaxed loads: one round trip
                // per poll, not one per slot.
                let words: [&shim::AtomicU32; POST_SLOTS as usize] =
                    core::array::from_fn(|k| self.word(me, POSTS + 4 * k));
                let slots = shim::load_relaxed_batch(words, POST_SLOTS as usize);
                // A target has at most one post for this rank pending (its
                // next post follows its `wait`, which needs this epoch's
                // `complete`), so the slot is this epoch's.
                slots.iter().position(|&v| v == mark).map(|k| {
                    // Acquire: with the relaxed load that read the target's
                    // post, pairs with its Release in `post`.
                    shim::fence(Ordering::Acquire);
                    self.word(me, POSTS + 4 * k).store(0, Ordering::Relaxed);
                    Ok(())
                })
            })?;
        }
        self.access_group.set((group.as_ptr(), group.len()));
        self.set_epoch(self.epoch() | ACCESS);
        self.trace_epoch(TraceKind::RmaEpochOpen, RmaEpoch::Access, -2, group.len() as u32);
        Ok(AccessEpoch { window: self, group })
    }

    // ---- passive target ----------------------------------------------------

    /// Takes a lock of `target`'s window (`MPI_Win_lock`), waiting while
    /// another rank holds a conflicting one; opens an access epoch to
    /// `target`. `MPI_ERR_RMA_SYNC` when this rank already holds a lock of
    /// it (or `lock_all`), or locks of [`MAX_LOCKS`] targets.
    /// `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.5.3.
    pub fn lock(&self, kind: LockType, target: i32) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        if target < 0 || target >= self.size as i32 {
            return Err(Error::InvalidRank {
                rank: target,
                size: self.size as i32,
            });
        }
        let t = target as u32;
        let sync = |reason: RmaSyncReason| Error::RmaSync {
            target,
            reason: reason as u32,
        };
        if self.epoch() & LOCK_ALL != 0 || self.held(t).is_some() {
            return Err(sync(RmaSyncReason::AlreadyLocked));
        }
        let Some(slot) = (0..MAX_LOCKS as usize).find(|&k| self.held.get()[k] == 0) else {
            return Err(sync(RmaSyncReason::TooManyLocks));
        };
        self.acquire(kind, target)?;
        let mark = match kind {
            LockType::Exclusive => EXCLUSIVE,
            LockType::Shared => 0,
        };
        self.set_held(slot, (t + 1) | mark);
        self.trace_epoch(TraceKind::RmaEpochOpen, lock_epoch(kind), target, 1);
        Ok(())
    }

    /// Waits for `target`'s lock word to admit `kind` and takes it.
    fn acquire(&self, kind: LockType, target: i32) -> Result<(), Error> {
        let w = self.comm.member(self.world, target as u32);
        let lock = self.word(w, LOCK);
        let mine = EXCLUSIVE | (self.me() + 1);
        let core = self.world.core();
        // The target's world rank, so that the report finds its lock word.
        let what = WaitFor {
            operation: Call::WinLock,
            peer: w as i32,
            tag: self.id as i32,
        };
        wait_core(&core, what, |_| {
            // Relaxed look first: a held lock costs no read-modify-write.
            let v = lock.load(Ordering::Relaxed);
            let next = match kind {
                LockType::Exclusive if v == 0 => mine,
                LockType::Shared if v & EXCLUSIVE == 0 => v + 1,
                _ => return None,
            };
            // Acquire: pairs with the Release of the last holder's unlock,
            // so its operations on the target are visible to ours.
            lock.compare_exchange(v, next, Ordering::Acquire)
                .ok()
                .map(|_| Ok(()))
        })
    }

    /// Gives back `target`'s lock word as `kind` took it.
    fn release(&self, kind: LockType, target: u32) {
        let w = self.comm.member(self.world, target);
        let lock = self.word(w, LOCK);
        // Release: this rank's operations on the target are complete there
        // before the next holder's Acquire takes the lock.
        match kind {
            LockType::Exclusive => lock.store(0, Ordering::Release),
            LockType::Shared => lock.add(u32::MAX, Ordering::Release),
        }
    }

    /// Gives back the lock of `target` this rank holds
    /// (`MPI_Win_unlock`), completing its operations there.
    /// `MPI_ERR_RMA_SYNC` when it holds none. `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.5.3.
    pub fn unlock(&self, target: i32) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        self.check_rank(target)?;
        let none = Error::RmaSync {
            target,
            reason: RmaSyncReason::NotLocked as u32,
        };
        let Some((slot, h)) = self.held(target as u32) else {
            return Err(none);
        };
        let kind = if h & EXCLUSIVE != 0 {
            LockType::Exclusive
        } else {
            LockType::Shared
        };
        self.release(kind, target as u32);
        self.set_held(slot, 0);
        self.trace_epoch(TraceKind::RmaEpochClose, lock_epoch(kind), target, 1);
        Ok(())
    }

    /// Takes a shared lock of every rank's window (`MPI_Win_lock_all`;
    /// O(size) atomics). `MPI_ERR_RMA_SYNC` while this rank holds any lock
    /// of the window.
    ///
    /// Standard section: MPI 4.1 §12.5.3.
    pub fn lock_all(&self) -> Result<(), Error> {
        if self.holds_locks() {
            return Err(Error::RmaSync {
                target: -2,
                reason: RmaSyncReason::AlreadyLocked as u32,
            });
        }
        for t in 0..self.size {
            if let Err(e) = self.acquire(LockType::Shared, t as i32) {
                for u in 0..t {
                    self.release(LockType::Shared, u);
                }
                return Err(e);
            }
        }
        self.set_epoch(self.epoch() | LOCK_ALL);
        self.trace_epoch(TraceKind::RmaEpochOpen, RmaEpoch::LockAll, -2, self.size);
        Ok(())
    }

    /// Gives back the locks of [`lock_all`](Self::lock_all)
    /// (`MPI_Win_unlock_all`). `MPI_ERR_RMA_SYNC` without them.
    ///
    /// Standard section: MPI 4.1 §12.5.3.
    pub fn unlock_all(&self) -> Result<(), Error> {
        if self.epoch() & LOCK_ALL == 0 {
            return Err(Error::RmaSync {
                target: -2,
                reason: RmaSyncReason::NotLocked as u32,
            });
        }
        for t in 0..self.size {
            self.release(LockType::Shared, t);
        }
        self.set_epoch(self.epoch() & !LOCK_ALL);
        self.trace_epoch(TraceKind::RmaEpochClose, RmaEpoch::LockAll, -2, self.size);
        Ok(())
    }

    /// Checks that this rank holds a passive-target epoch to `target`
    /// (`None`: to any target).
    fn passive(&self, target: Option<i32>) -> Result<(), Error> {
        if let Some(t) = target {
            self.check_rank(t)?;
        }
        let ok = match target {
            _ if self.epoch() & LOCK_ALL != 0 => true,
            None => self.holds_locks(),
            Some(t) => t >= 0 && t < self.size as i32 && self.held(t as u32).is_some(),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::RmaSync {
                target: target.unwrap_or(-2),
                reason: RmaSyncReason::NotLocked as u32,
            })
        }
    }

    /// Completes this rank's operations to `target` there
    /// (`MPI_Win_flush`), inside a lock of it or `lock_all`.
    /// `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.5.4.
    pub fn flush(&self, target: i32) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        self.passive(Some(target))?;
        // Release: the operations' stores before whatever this rank does
        // next (a notification, a message) that tells another rank to look.
        shim::fence(Ordering::AcqRel);
        Ok(())
    }

    /// [`flush`](Self::flush) to every target (`MPI_Win_flush_all`).
    ///
    /// Standard section: MPI 4.1 §12.5.4.
    pub fn flush_all(&self) -> Result<(), Error> {
        self.passive(None)?;
        // Release: as in `flush`.
        shim::fence(Ordering::AcqRel);
        Ok(())
    }

    /// Completes this rank's operations to `target` locally
    /// (`MPI_Win_flush_local`): every operation here completes locally
    /// before it returns, so this only checks the epoch.
    ///
    /// Standard section: MPI 4.1 §12.5.4.
    pub fn flush_local(&self, target: i32) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        self.passive(Some(target))
    }

    /// [`flush_local`](Self::flush_local) to every target
    /// (`MPI_Win_flush_local_all`).
    ///
    /// Standard section: MPI 4.1 §12.5.4.
    pub fn flush_local_all(&self) -> Result<(), Error> {
        self.passive(None)
    }

    /// Orders this rank's local accesses to its window against the
    /// operations of others (`MPI_Win_sync`): a device-scope fence.
    ///
    /// Standard section: MPI 4.1 §12.5.4.
    pub fn sync(&self) {
        // AcqRel: both ways, pairing with the fences of `flush`, `fence`
        // and the lock word's operations on other ranks.
        shim::fence(Ordering::AcqRel);
    }

    /// Frees the window (`MPI_Win_free`); collective. Fails on every rank
    /// with `MPI_ERR_RMA_SYNC` when a rank still holds locks of it (the id
    /// is then kept until the launch ends).
    ///
    /// Standard section: MPI 4.1 §12.2.5.
    pub fn free(self) -> Result<(), Error> {
        let held = self.open_epochs().map_or(0, |r| r as u32);
        let any = self.agree_reasons(Call::WinFree, held)?;
        if any != 0 {
            return Err(Error::RmaSync {
                target: -2,
                reason: any,
            });
        }
        // A fence epoch still open ends with the window.
        self.trace_fence(self.epoch(), 0);
        // Every rank has entered the free: no operation on the window
        // follows, so its id may be claimed again.
        if self.rank == 0 {
            if self.parts != 0 {
                release_parts(self.world, self.world.block, self.parts);
            }
            release_id(self.world, self.id);
        }
        Ok(())
    }
}

/// Memory attached to a dynamic window ([`Window::attach`]): other ranks
/// reach it with displacements [`Attachment::disp`] until it is detached
/// ([`Attachment::detach`], or dropped). Detaching while other ranks may
/// still access it is erroneous (MPI 4.1 §12.2.4): order their last
/// access before it with synchronisation.
#[must_use = "dropping an attachment detaches its memory"]
pub struct Attachment<'w, 'm, 'a, T: Equivalence> {
    window: &'w Window<'a, T>,
    /// Its slot of the region line ([`MAX_REGIONS`]: none, empty memory).
    slot: u32,
    ptr: *mut T,
    len: usize,
    _memory: PhantomData<&'m mut [T]>,
}

impl<T: Equivalence> Attachment<'_, '_, '_, T> {
    /// The displacement of the memory's element `index` for the window's
    /// operations: its address in bytes (`MPI_Get_address`; a dynamic
    /// window's displacement unit is 1).
    pub fn disp(&self, index: usize) -> usize {
        self.ptr as usize + index * size_of::<T>()
    }

    /// Elements of the memory.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the memory is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory, for local loads and stores; other ranks' accesses must
    /// be separated from them by synchronisation, as for
    /// [`Window::local_mut`].
    pub fn local_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the memory the attach borrowed for `'m`, which outlives
        // `self`; other ranks' accesses are ordered by the window's
        // synchronisation (the caller's part).
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Detaches the memory (`MPI_Win_detach`); local.
    ///
    /// Standard section: MPI 4.1 §12.2.4.
    pub fn detach(self) {}
}

impl<T: Equivalence> Drop for Attachment<'_, '_, '_, T> {
    fn drop(&mut self) {
        if self.slot < MAX_REGIONS {
            let w = self.window;
            // Relaxed: the program orders other ranks' last accesses
            // before the detach (MPI 4.1 §12.2.4).
            w.word64(w.me(), REGIONS + 16 * self.slot as usize)
                .store(0, Ordering::Relaxed);
        }
    }
}

/// Tracing (docs/tracing.md): each hook tests the config inline and
/// records out of line with scalar arguments (`trace::record_words`), so
/// a kernel that does not trace keeps its registers.
impl<T: Equivalence> Window<'_, T> {
    /// Records [`TraceKind::RmaOperation`] `op` of `count` elements at
    /// displacement `disp` of `target` (a rank of the communicator;
    /// `PROC_NULL` records nothing), carried out.
    #[inline(always)]
    fn trace_op(&self, op: RmaOp, target: i32, disp: usize, count: usize) {
        self.trace_op_bytes(op, target, disp, count.saturating_mul(size_of::<T>()));
    }

    /// [`trace_op`](Self::trace_op) of an operation moving `bytes` (a
    /// typed one: its target datatype's size times its count).
    #[inline(always)]
    fn trace_op_bytes(&self, op: RmaOp, target: i32, disp: usize, bytes: usize) {
        if target == PROC_NULL {
            return;
        }
        if let Some(core) = self.world.tracing() {
            // The operation's target: its descriptor is the latest kept.
            let to = self.target(target).world as i32;
            let bytes = crate::error::saturating_u32(bytes);
            // A dynamic window's displacement is an address (unit 1).
            let offset = (disp.saturating_mul(self.disp_unit()) as u64) & ((1 << RMA_OFFSET_BITS) - 1);
            let head = trace::rma_head(TraceKind::RmaOperation, op as u32, self.comm.id);
            trace::record_words(
                core.base as u64,
                core.rank,
                head,
                to,
                self.id as i32,
                bytes,
                offset,
            );
        }
    }

    /// The operation [`trace_op`](Self::trace_op) recorded last notified
    /// `counter`: it becomes `op`.
    #[inline(always)]
    fn trace_notify(&self, op: RmaOp, counter: u32) {
        if let Some(core) = self.world.tracing() {
            trace::rma_notify_words(core.base as u64, core.rank, op as u32, counter);
        }
    }

    /// Records a one-sided event of `kind` and `code` with `peer` (a world
    /// rank, or -2), `bytes` and `arg`.
    #[inline(always)]
    fn trace_event(&self, kind: TraceKind, code: u32, peer: i32, bytes: u32, arg: u64) {
        if let Some(core) = self.world.tracing() {
            let head = trace::rma_head(kind, code, self.comm.id);
            trace::record_words(
                core.base as u64,
                core.rank,
                head,
                peer,
                self.id as i32,
                bytes,
                arg,
            );
        }
    }

    /// Records the opening or closing (`kind`) of `epoch`, of `target`'s
    /// lock (a rank of the communicator; -2 for the other epochs),
    /// reaching `ranks` ranks.
    #[inline(always)]
    fn trace_epoch(&self, kind: TraceKind, epoch: RmaEpoch, target: i32, ranks: u32) {
        if let Some(core) = self.world.tracing() {
            let peer = if target >= 0 {
                self.comm.member(self.world, target as u32) as i32
            } else {
                -2
            };
            let head = trace::rma_head(kind, epoch as u32, self.comm.id);
            trace::record_words(core.base as u64, core.rank, head, peer, self.id as i32, ranks, 0);
        }
    }

    /// A fence (or `free`) took the epoch flags from `was` to a fence
    /// epoch `open` or not: records the fence epoch it closed and the one
    /// it opened (`trace_event` asks whether the world traces).
    #[inline(always)]
    fn trace_fence(&self, was: u32, open: u32) {
        if was & FENCE_OPEN != 0 {
            self.trace_event(TraceKind::RmaEpochClose, RmaEpoch::Fence as u32, -2, self.size, 0);
        }
        if open != 0 {
            self.trace_event(TraceKind::RmaEpochOpen, RmaEpoch::Fence as u32, -2, self.size, 0);
        }
    }
}

/// The epoch a lock of `kind` opens.
const fn lock_epoch(kind: LockType) -> RmaEpoch {
    match kind {
        LockType::Exclusive => RmaEpoch::LockExclusive,
        LockType::Shared => RmaEpoch::LockShared,
    }
}

/// The request of a request-based one-sided operation ([`Window::rput`],
/// [`Window::rget`], [`Window::raccumulate`], [`Window::rget_accumulate`]).
/// Every one-sided operation here is carried out before its call returns,
/// so the request is complete from the start: `test` says so and `wait`
/// returns at once. It holds no record (no `requests_per_rank` limit).
#[must_use = "a request is completed by wait or test"]
#[derive(Debug)]
pub struct RmaRequest(());

impl RmaRequest {
    /// Whether the operation has completed locally (`MPI_Test`): always.
    pub fn test(&self) -> bool {
        true
    }

    /// Waits for the operation's local completion (`MPI_Wait`): its origin
    /// buffer may be reused, its result buffer read.
    pub fn wait(self) -> Result<(), Error> {
        Ok(())
    }
}

/// An exposure epoch of [`Window::post`]; [`wait`](Self::wait) ends it.
/// Dropped without `wait`, the epoch stays open (a later fence or free
/// fails with `MPI_ERR_RMA_SYNC`).
#[must_use = "an exposure epoch ends with wait or test"]
pub struct ExposureEpoch<'w, 'a, T: Equivalence> {
    window: &'w Window<'a, T>,
    origins: u32,
}

impl<T: Equivalence> ExposureEpoch<'_, '_, T> {
    /// Whether every origin of the post has completed its access, and if
    /// so ends the epoch (`MPI_Win_test`): the origins' operations are
    /// then visible in this rank's window.
    ///
    /// Standard section: MPI 4.1 §12.5.2.
    pub fn test(&self) -> bool {
        let w = self.window;
        let me = w.me();
        let taken = w.completed.get();
        // Acquire: pairs with the origins' Release add in `complete`.
        let done = w.word(me, COMPLETES).load(Ordering::Acquire);
        let got = done.wrapping_sub(taken);
        if got < self.origins {
            // Gives way as a failed poll (a loop of tests must let the
            // origins run on the emulator, and may be reported as a spin).
            let what = WaitFor {
                operation: Call::WinWait,
                peer: -2,
                tag: (self.origins - got) as i32,
            };
            w.world.failed_poll(what, w.id as usize);
            return false;
        }
        w.world.note_progress();
        w.completed.set(taken.wrapping_add(self.origins));
        w.set_epoch(w.epoch() & !EXPOSURE);
        w.trace_epoch(TraceKind::RmaEpochClose, RmaEpoch::Exposure, -2, self.origins);
        true
    }

    /// Waits until every origin of the post has completed its access
    /// (`MPI_Win_wait`), and ends the epoch.
    ///
    /// Standard section: MPI 4.1 §12.5.2.
    pub fn wait(self) -> Result<(), Error> {
        let w = self.window;
        let me = w.me();
        let taken = w.completed.get();
        let core = w.world.core();
        // The completions of later epochs cannot come before this wait
        // ends: an origin's next access to this rank waits for its next post.
        let missing = |done: u32| self.origins.saturating_sub(done.wrapping_sub(taken));
        // Relaxed: only the wait record's tag.
        let first = missing(w.word(me, COMPLETES).load(Ordering::Relaxed));
        let what = WaitFor {
            operation: Call::WinWait,
            peer: -2,
            tag: first as i32,
        };
        wait_core(&core, what, |_| {
            // Acquire: as in `test`.
            let done = w.word(me, COMPLETES).load(Ordering::Acquire);
            (missing(done) == 0).then_some(Ok(()))
        })?;
        w.completed.set(taken.wrapping_add(self.origins));
        w.set_epoch(w.epoch() & !EXPOSURE);
        w.trace_epoch(TraceKind::RmaEpochClose, RmaEpoch::Exposure, -2, self.origins);
        Ok(())
    }
}

/// An access epoch of [`Window::start`]; [`complete`](Self::complete)
/// ends it. Dropped without `complete`, the epoch ends there without
/// telling the targets (their `wait` then waits forever: a deadlock report
/// on the emulator).
#[must_use = "an access epoch ends with complete"]
pub struct AccessEpoch<'w, 'g, 'a, T: Equivalence> {
    window: &'w Window<'a, T>,
    group: &'g [i32],
}

impl<T: Equivalence> AccessEpoch<'_, '_, '_, T> {
    /// Ends the access epoch (`MPI_Win_complete`): this rank's operations
    /// to the group's targets are complete there, and each target's
    /// `wait` counts this rank.
    ///
    /// Standard section: MPI 4.1 §12.5.2.
    pub fn complete(self) -> Result<(), Error> {
        let w = self.window;
        for &t in self.group {
            let at = w.comm.member(w.world, t as u32);
            // Release: this rank's operations on the target before the
            // target's Acquire in its `wait` or `test`.
            w.word(at, COMPLETES).add(1, Ordering::Release);
        }
        w.trace_epoch(
            TraceKind::RmaEpochClose,
            RmaEpoch::Access,
            -2,
            self.group.len() as u32,
        );
        Ok(())
    }
}

impl<T: Equivalence> Drop for AccessEpoch<'_, '_, '_, T> {
    fn drop(&mut self) {
        let w = self.window;
        w.access_group.set((core::ptr::null(), 0));
        w.set_epoch(w.epoch() & !ACCESS);
    }
}

/// Bytes from which a put or get whose two ends are 16-byte aligned
/// copies with 16-byte vectors, four in flight (`shim::copy_wide`, as a
/// direct message's payload), instead of one word at a time.
const WIDE_BYTES: usize = 64;

/// Copies a put's or get's `len` bytes: wide when both ends allow it.
///
/// # Safety
/// As for `shim::copy_bytes`.
unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    if len >= WIDE_BYTES && ((dst as usize) | (src as usize)).is_multiple_of(16) {
        // SAFETY: forwarded from the caller.
        unsafe { shim::copy_wide(dst, src, len) }
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { shim::copy_bytes(dst, src, len) }
    }
}

/// The offset of the windows region's mask of ids in use.
fn mask_of(layout: &Layout) -> usize {
    layout.windows
}

/// What a creation asks its agreement: whether this rank's memory is
/// reachable, the bytes it asked for beyond the world's limit (0: none),
/// and for `allocate_shared` the end of its segment (the prefix sum of
/// the segments) and the elements' alignment.
#[derive(Clone, Copy)]
struct Ask {
    reachable: bool,
    too_large: u32,
    shared: Option<(u64, usize)>,
}

impl Ask {
    fn memory(reachable: bool, too_large: u32) -> Ask {
        Ask {
            reachable,
            too_large,
            shared: None,
        }
    }

    fn shared(end: u64, align: usize) -> Ask {
        Ask {
            reachable: true,
            too_large: 0,
            shared: Some((end, align)),
        }
    }
}

/// Rank 0's word of a creation's broadcast: the creation goes on.
const AGREED: u32 = 0;
/// Rank 0's word of a creation's broadcast: every window id is in use.
const NO_ID: u32 = 1;
/// Rank 0's word of a creation's broadcast: the shared segments fit
/// neither the block's free shared memory nor the world memory.
const NO_MEMORY: u32 = 2;

/// A creation's agreement, in one all-reduce and one broadcast: every
/// rank learns whether any rank's memory is unusable or too large (and,
/// for `allocate_shared`, the segments' total and whether the
/// communicator lies in one block); then rank 0 claims the lowest free
/// id (and the block's shared memory where the segments fit in it) and
/// tells every rank. A failure is every rank's, and nothing stays
/// claimed.
fn agree<C: Communicator + ?Sized>(comm: &C, view: &CommView<'_>, ask: Ask) -> Result<Agreement, Error> {
    let world = view.world;
    if world.across_processes() {
        // Every rank reads the same flag: all fail, none takes part. A
        // window's operations reach into its targets' memory, which across
        // processes is another process's.
        return Err(Error::AcrossProcesses {
            operation: Call::WinCreate as u32,
        });
    }
    let layout = &world.layout;
    let block = world.block;
    let available = layout.window_stride - WINDOW_ENTRY_BYTES as u32;
    let end = ask.shared.map_or(0, |(e, _)| {
        crate::error::saturating_u32(usize::try_from(e).unwrap_or(usize::MAX))
    });
    // Word 0: size - the lowest rank whose memory is unreachable (0:
    // none); word 1: the largest allocation asked for beyond the limit
    // (0: none); words 2 and 3: the highest block of a rank and the
    // complement of the lowest; word 4: the shared segments' total (the
    // last rank's end).
    let send = [
        if ask.reachable { 0 } else { view.size - view.rank },
        ask.too_large,
        block,
        !block,
        end,
    ];
    let mut recv = [0u32; 5];
    comm.all_reduce_into(&send[..], &mut recv[..], SystemOperation::max())?;
    if recv[0] != 0 {
        return Err(Error::WindowMemory {
            rank: view.size - recv[0],
        });
    }
    if recv[1] != 0 {
        return Err(Error::WindowAllocation {
            requested: recv[1],
            available,
        });
    }
    let total = recv[4];
    let one_block = recv[2] == !recv[3];
    let mut decision = [u32::MAX, AGREED, 0, 0];
    if view.rank == 0 {
        match claim_id(world, layout.window_count) {
            None => decision[1] = NO_ID,
            Some(id) => {
                decision[0] = id;
                if let Some((_, align)) = ask.shared {
                    let parts = if one_block && align <= 16 {
                        claim_parts(world, block, total)
                    } else {
                        0
                    };
                    if parts == 0 && total > available {
                        release_id(world, id);
                        decision[1] = NO_MEMORY;
                    }
                    decision[2] = parts as u32;
                    decision[3] = (parts >> 32) as u32;
                }
            }
        }
    }
    if let Err(e) = comm.process_at_rank(0).broadcast_into(&mut decision[..]) {
        if view.rank == 0 && decision[1] == AGREED {
            release_parts(
                world,
                block,
                u64::from(decision[2]) | u64::from(decision[3]) << 32,
            );
            release_id(world, decision[0]);
        }
        return Err(e);
    }
    match decision[1] {
        NO_ID => Err(Error::WindowLimit {
            limit: layout.window_count,
        }),
        NO_MEMORY => Err(Error::WindowAllocation {
            requested: total,
            available,
        }),
        _ => Ok(Agreement {
            id: decision[0],
            parts: u64::from(decision[2]) | u64::from(decision[3]) << 32,
        }),
    }
}

/// The three words of a sub-communicator window's barrier
/// ([`Window::sub_barrier`]; [`BARRIER`], [`REASONS`], [`VERDICT`] of its
/// communicator's rank 0's entry). Public for its loom model.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct BarrierWords<'a> {
    /// The arrivals of the open generation (low half) and the generation
    /// (high half).
    pub counter: &'a shim::AtomicU64,
    /// The largest reason to fail of the open generation's arrivals.
    pub reasons: &'a shim::AtomicU32,
    /// The largest reason of the last completed generation.
    pub verdict: &'a shim::AtomicU32,
}

/// The barrier words of window `id` in world rank `root`'s entry.
#[doc(hidden)]
pub fn barrier_words(world: &World, id: u32, root: u32) -> BarrierWords<'_> {
    let at = world.layout.window_entry(id, root);
    // SAFETY: the entry lies inside the world memory (`id` below the
    // world's windows, `root` below its ranks), the offsets are aligned
    // for their words inside its descriptor line (entries are 64-byte
    // aligned), and these words are only accessed atomically.
    unsafe {
        BarrierWords {
            counter: shim::atomic_u64_at(world.base, at + BARRIER),
            reasons: shim::atomic_u32_at(world.base, at + REASONS),
            verdict: shim::atomic_u32_at(world.base, at + VERDICT),
        }
    }
}

/// What an arrival at [`BarrierWords`] learnt.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The last of the members: the generation is complete, with the
    /// largest reason (0: none).
    Last(u32),
    /// Not the last: wait until the generation (the high half of the
    /// counter) moves past this one ([`BarrierWords::departed`]).
    Waiting(u64),
}

impl BarrierWords<'_> {
    /// Arrives as one of `size` members with reason `held` (0: none).
    pub fn arrive(&self, size: u32, held: u32) -> Arrival {
        if held != 0 {
            // Relaxed: ordered before the last arriver's read by this
            // rank's arrival below (its Release half).
            let mut seen = self.reasons.load(Ordering::Relaxed);
            while seen < held {
                match self.reasons.compare_exchange(seen, held, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(now) => seen = now,
                }
            }
        }
        // AcqRel. Release: this rank's operations on the window and its
        // reason before the last arriver's Acquire half (the arrivals are
        // read-modify-writes of one word, so each heads a release
        // sequence the last one reads from). Acquire: for the last
        // arriver, every earlier arrival's.
        let old = self.counter.fetch_add(1, Ordering::AcqRel);
        let generation = old >> 32;
        if old as u32 + 1 != size {
            return Arrival::Waiting(generation);
        }
        let any = self.reasons.load(Ordering::Relaxed);
        if any != 0 {
            self.reasons.store(0, Ordering::Relaxed);
        }
        self.verdict.store(any, Ordering::Relaxed);
        // Release: the verdict, the words' rest and every arrival's
        // operations (acquired above) before the waiting members' Acquire
        // fence in `departed`; no arrival of the next generation precedes
        // it, since every member is in this one.
        self.counter
            .store(generation.wrapping_add(1) << 32, Ordering::Release);
        Arrival::Last(any)
    }

    /// The verdict once generation `generation` is complete (a poll: one
    /// relaxed load, and on success an Acquire fence and the verdict's
    /// load); `None` while it is open.
    pub fn departed(&self, generation: u64) -> Option<u32> {
        let now = self.counter.load(Ordering::Relaxed);
        (now >> 32 != generation).then(|| {
            // Acquire: with the relaxed load that saw the next generation,
            // pairs with the last arriver's Release store in `arrive`.
            shim::fence(Ordering::Acquire);
            self.verdict.load(Ordering::Relaxed)
        })
    }
}

/// Bytes of one part of a block's shared window memory: at least 16 (the
/// alignment every part keeps), so that the memory has at most 64.
fn shared_part_bytes(layout: &Layout) -> usize {
    (layout.shared_window_bytes as usize / 64)
        .next_multiple_of(16)
        .max(16)
}

/// The block's word of the parts of its shared window memory in use.
fn parts_word(world: &World, block: u32) -> &shim::AtomicU64 {
    // SAFETY: the block's word lies in the windows region's header
    // (present when `shared_window_bytes` is not 0, the only case in
    // which a part is claimed or released), 8-byte aligned, accessed only
    // atomically.
    unsafe { shim::atomic_u64_at(world.base, world.layout.shared_window_word(block)) }
}

/// Claims the lowest run of free parts of `block`'s shared window memory
/// that holds `bytes`; 0 when none does (or `bytes` is 0: an empty window
/// needs no memory, and the world memory's entry serves it).
#[doc(hidden)]
pub fn claim_parts(world: &World, block: u32, bytes: u32) -> u64 {
    let layout = &world.layout;
    if bytes == 0 || bytes > layout.shared_window_bytes {
        return 0;
    }
    let part = shared_part_bytes(layout);
    let count = (layout.shared_window_bytes as usize / part) as u32;
    let need = (bytes as usize).div_ceil(part) as u32;
    if need > count {
        return 0;
    }
    let run = if need >= 64 { u64::MAX } else { (1u64 << need) - 1 };
    let word = parts_word(world, block);
    let mut m = word.load(Ordering::Relaxed);
    loop {
        let Some(at) = (0..=count - need).find(|&k| m & (run << k) == 0) else {
            return 0;
        };
        // Acquire: pairs with the Release of the free that gave these parts
        // back, after which no rank touches the old window's memory.
        match word.compare_exchange(m, m | (run << at), Ordering::Acquire) {
            Ok(_) => return run << at,
            Err(now) => m = now,
        }
    }
}

/// Gives the parts `parts` of `block`'s shared window memory back.
#[doc(hidden)]
pub fn release_parts(world: &World, block: u32, parts: u64) {
    if parts == 0 {
        return;
    }
    let word = parts_word(world, block);
    let mut m = word.load(Ordering::Relaxed);
    // Release: the memory's last uses before the next claim (its Acquire).
    while let Err(now) = word.compare_exchange(m, m & !parts, Ordering::Release) {
        m = now;
    }
}

fn mask_word(world: &World) -> &shim::AtomicU64 {
    // SAFETY: the mask is the first word of the windows region's header,
    // inside the world memory, 64-byte aligned, accessed only atomically.
    unsafe { shim::atomic_u64_at(world.base, mask_of(&world.layout)) }
}

/// Claims the lowest window id not in use, if any of `count` is free.
fn claim_id(world: &World, count: u32) -> Option<u32> {
    if count == 0 {
        // No windows region either: nothing to look at.
        return None;
    }
    let mask = mask_word(world);
    let all = if count >= 64 {
        u64::MAX
    } else {
        (1u64 << count) - 1
    };
    let mut m = mask.load(Ordering::Relaxed);
    loop {
        let free = !m & all;
        if free == 0 {
            return None;
        }
        let id = free.trailing_zeros();
        // Acquire: pairs with the Release of the free that gave the id
        // back, after which no rank touches the old window's entries.
        match mask.compare_exchange(m, m | (1 << id), Ordering::Acquire) {
            Ok(_) => return Some(id),
            Err(now) => m = now,
        }
    }
}

/// Gives window id `id` back.
fn release_id(world: &World, id: u32) {
    let mask = mask_word(world);
    let mut m = mask.load(Ordering::Relaxed);
    // Release: the entries' last uses before the next claim (its Acquire).
    while let Err(now) = mask.compare_exchange(m, m & !(1u64 << id), Ordering::Release) {
        m = now;
    }
}

/// `MPI_ERR_OP` unless `T` is of a size [`update`] handles (1, 2, 4 or 8
/// bytes, aligned to it): the predefined types are; a user's
/// `impl Operation<Type> for SystemOperation` may not be.
fn check_atomic<T: Equivalence>(op: SystemOperation) -> Result<(), Error> {
    let n = size_of::<T>();
    if matches!(n, 1 | 2 | 4 | 8) && core::mem::align_of::<T>() == n {
        Ok(())
    } else {
        Err(Error::InvalidOperation {
            op: op.code(),
            datatype: T::DATATYPE.id,
        })
    }
}

/// Updates the element at `at` atomically: `f(old)` is stored unless it
/// is `None`; returns `old`. A compare-and-swap loop on the element's
/// 4- or 8-byte word, or on the aligned 4-byte word that holds an element
/// of 1 or 2 bytes (the predefined types' sizes).
///
/// # Safety
/// `at` valid and aligned for a `T` of 1, 2, 4 or 8 bytes, and every
/// concurrent access to it atomic (through this function).
/// `op` applied atomically to the element at `at` with `origin`
/// (`target op origin`); returns the element's old value. An integer sum
/// of 4 or 8 bytes is one `fetch_add` (PTX `atom.add`) and a replace of 4
/// or 8 bytes one `swap` (`atom.exch`), as NVSHMEM's atomics are; every
/// other operation (and element size) a compare-and-swap loop
/// ([`update`]). Integer sums wrap either way (`MPI_SUM` here).
///
/// # Safety
/// As for [`update`].
unsafe fn combine<T: Equivalence>(at: *mut T, op: SystemOperation, origin: &T) -> T
where
    SystemOperation: Operation<T>,
{
    use crate::datatype::{ID_I32, ID_I64, ID_U32, ID_U64};
    let n = size_of::<T>();
    let integer = matches!(T::DATATYPE.id, ID_U32 | ID_I32 | ID_U64 | ID_I64);
    let sum = op == SystemOperation::sum() && integer;
    let replace = op == SystemOperation::replace();
    if (sum || replace) && (n == 4 || n == 8) {
        let mut bits = [0u8; 8];
        bits[..n].copy_from_slice(bytemuck::bytes_of(origin));
        let mut old = [0u8; 8];
        if n == 8 {
            // SAFETY: `at` is 8-byte aligned and valid (caller), atomic-only.
            let word = unsafe { shim::atomic_u64_at(at as *mut u8, 0) };
            let v = u64::from_ne_bytes(bits);
            let was = if sum {
                word.fetch_add(v, Ordering::Relaxed)
            } else {
                word.swap(v, Ordering::Relaxed)
            };
            old.copy_from_slice(&was.to_ne_bytes());
        } else {
            // SAFETY: as above, 4 bytes, 4-byte aligned.
            let word = unsafe { shim::atomic_u32_at(at as *mut u8, 0) };
            let v = u32::from_ne_bytes([bits[0], bits[1], bits[2], bits[3]]);
            let was = if sum {
                word.fetch_add(v, Ordering::Relaxed)
            } else {
                word.swap(v, Ordering::Relaxed)
            };
            old[..4].copy_from_slice(&was.to_ne_bytes());
        }
        return bytemuck::pod_read_unaligned::<T>(&old[..n]);
    }
    let no_op = op == SystemOperation::no_op();
    // SAFETY: forwarded from the caller.
    unsafe { update(at, |t| (!no_op).then(|| op.accumulate(&t, origin))) }
}

unsafe fn update<T: Equivalence>(at: *mut T, f: impl Fn(T) -> Option<T>) -> T {
    let n = size_of::<T>();
    let value = |bytes: &[u8]| bytemuck::pod_read_unaligned::<T>(&bytes[..n]);
    if n == 8 {
        // SAFETY: `at` is 8-byte aligned and valid (caller), atomic-only.
        let word = unsafe { shim::atomic_u64_at(at as *mut u8, 0) };
        let mut old = word.load(Ordering::Relaxed);
        loop {
            let t = value(&old.to_ne_bytes());
            let Some(new) = f(t) else { return t };
            let mut b = [0u8; 8];
            b.copy_from_slice(bytemuck::bytes_of(&new));
            match word.compare_exchange(old, u64::from_ne_bytes(b), Ordering::Relaxed) {
                Ok(_) => return t,
                Err(now) => old = now,
            }
        }
    }
    let addr = at as usize;
    let shift = 8 * (addr & 3) as u32;
    let mask = if n >= 4 {
        u32::MAX
    } else {
        ((1u32 << (8 * n)) - 1) << shift
    };
    // SAFETY: the aligned 4-byte word holding the element lies inside the
    // element's allocation: an element of 1 or 2 bytes at its natural
    // alignment never crosses a 4-byte boundary, and every allocation a
    // window can lie in is whole 64-byte lines from a 64-byte aligned
    // start (the world memory, a GPU allocation's 256-byte granules, the
    // emulator's buffers, `CpuBuffer::zeroed`). Atomic-only by the caller;
    // the word's other bytes (a neighbour's elements) are written back as
    // they were, or the exchange fails and the loop reads them again.
    let word = unsafe { shim::atomic_u32_at((addr & !3) as *mut u8, 0) };
    let mut old = word.load(Ordering::Relaxed);
    loop {
        let t = value(&((old & mask) >> shift).to_ne_bytes());
        let Some(new) = f(t) else { return t };
        let mut b = [0u8; 4];
        b[..n].copy_from_slice(bytemuck::bytes_of(&new));
        let next = (old & !mask) | ((u32::from_ne_bytes(b) << shift) & mask);
        match word.compare_exchange(old, next, Ordering::Relaxed) {
            Ok(_) => return t,
            Err(now) => old = now,
        }
    }
}
