//! loom implementation of the shim (`RUSTFLAGS="--cfg loom"`): every rank is
//! a loom thread, every atomic of the world is a loom atomic, and payload
//! copies are checked for data races.
//!
//! # Atomics at addresses
//! Device code finds its atomics by casting addresses of the world memory
//! ([`atomic_u32_at`](super::atomic_u32_at)), so a loom atomic cannot sit at
//! that address: the shim's `AtomicU32`/`AtomicU64` keep the layout of the
//! other targets (`repr(transparent)` over an `UnsafeCell` of the integer) and
//! each operation looks its address up in the model of the world, which holds
//! one loom atomic per word.
//!
//! The model creates those loom atomics up front, on the model's main thread,
//! when the harness registers the world memory ([`loom_runtime::register_world`])
//! before it spawns the ranks; each starts with the value the memory holds
//! then. They are not created on first touch inside a rank: loom counts the
//! creation of an atomic as an unsynchronised write by the creating thread and
//! its initial value as a Release store, so a rank creating one would make
//! every other rank's first access look like a race, or give it a
//! synchronisation edge the hardware does not have. Creating them before the
//! spawns puts the creation before every rank's accesses, as the host's
//! zeroing and header write are before the launch. The same holds for the race
//! trackers of payload lines, below.
//!
//! Every 4-byte word of the registered memory gets a loom `AtomicU32` and every
//! 8-byte word a loom `AtomicU64`; a word used at both widths panics (loom
//! would model the two as unrelated locations). The raw memory of a modelled
//! word is not updated: its value lives in loom. Words that ranks only write
//! and the host reads after the launch (wait and result records) can be left
//! out of the model; they stay `core` atomics on the memory.
//!
//! # Payload races
//! Non-atomic data (slot payloads, scratch cells, user buffers) is copied with
//! [`copy_bytes`]. The model keeps one loom `UnsafeCell<()>` per 64-byte line of
//! the registered world memory (and of ranges registered with
//! [`loom_runtime::track`]; per 8-byte word in ranges registered with
//! `WorldModel::track_words`, whose neighbouring words ranks write
//! concurrently); a copy reads every tracked source line and writes
//! every tracked destination line through those cells around the raw copy, so
//! loom panics with a causality violation when a copy is not ordered after a
//! conflicting one by the protocol's acquire/release pairs. Lines that nobody
//! registered (a rank's own stack or heap buffers) are copied unchecked, and
//! plain `core::ptr` reads and writes of device code (the collectives' count
//! words and element-wise combining in scratch cells) are invisible to loom:
//! only `copy_bytes` and the accesses declared with [`loom_runtime::read`] and
//! [`loom_runtime::write`] are checked. Loom runs one rank at a time, so such a
//! plain read still sees the last value written: a missing barrier shows up as
//! a wrong result in some interleaving, a too weak ordering only where a
//! checked access is involved.
//!
//! # Ranks
//! [`loom_runtime::WorldModel::enter`] gives the calling loom thread its rank
//! coordinates. The block barrier is a loom `Mutex` + `Condvar` generation
//! counter per block; backoff yields the loom thread. Each rank has its own
//! clock, which advances [`loom_runtime::CLOCK_STEP_NS`] per read: a world
//! with a timeout times out after a bounded number of reads, whatever the
//! interleaving, so loom can check the timeout paths (a world without one
//! never reads the clock).

extern crate std;

use super::{Coordinates, Ordering};
use core::cell::UnsafeCell;
use loom::sync::atomic as loom_atomic;

/// Load orderings. A load has no release half: `Release` degrades to
/// `Relaxed`, `AcqRel` to `Acquire` (as on the host and the GPU).
fn load_ordering(o: Ordering) -> loom_atomic::Ordering {
    match o {
        Ordering::Relaxed | Ordering::Release => loom_atomic::Ordering::Relaxed,
        Ordering::Acquire | Ordering::AcqRel => loom_atomic::Ordering::Acquire,
    }
}

/// Store orderings. A store has no acquire half: `Acquire` degrades to
/// `Relaxed`, `AcqRel` to `Release`.
fn store_ordering(o: Ordering) -> loom_atomic::Ordering {
    match o {
        Ordering::Relaxed | Ordering::Acquire => loom_atomic::Ordering::Relaxed,
        Ordering::Release | Ordering::AcqRel => loom_atomic::Ordering::Release,
    }
}

/// Read-modify-write orderings map one to one (PTX `atom.<sem>.gpu`).
fn rmw_ordering(o: Ordering) -> loom_atomic::Ordering {
    match o {
        Ordering::Relaxed => loom_atomic::Ordering::Relaxed,
        Ordering::Acquire => loom_atomic::Ordering::Acquire,
        Ordering::Release => loom_atomic::Ordering::Release,
        Ordering::AcqRel => loom_atomic::Ordering::AcqRel,
    }
}

/// A failed compare-exchange is a load.
fn failure_ordering(o: Ordering) -> loom_atomic::Ordering {
    load_ordering(o)
}

/// The operations the shim's atomics forward, implemented by loom's atomics
/// and, for host-only words, by `core`'s (loom re-exports `core`'s `Ordering`).
trait AtomicOps<T> {
    fn load(&self, o: loom_atomic::Ordering) -> T;
    fn store(&self, v: T, o: loom_atomic::Ordering);
    fn fetch_add(&self, v: T, o: loom_atomic::Ordering) -> T;
    fn fetch_or(&self, v: T, o: loom_atomic::Ordering) -> T;
    fn swap(&self, v: T, o: loom_atomic::Ordering) -> T;
    fn compare_exchange(
        &self,
        current: T,
        new: T,
        success: loom_atomic::Ordering,
        failure: loom_atomic::Ordering,
    ) -> Result<T, T>;
}

macro_rules! atomic_ops {
    ($int:ty, $($impl_for:ty),*) => {$(
        impl AtomicOps<$int> for $impl_for {
            fn load(&self, o: loom_atomic::Ordering) -> $int {
                <$impl_for>::load(self, o)
            }
            fn store(&self, v: $int, o: loom_atomic::Ordering) {
                <$impl_for>::store(self, v, o)
            }
            fn fetch_add(&self, v: $int, o: loom_atomic::Ordering) -> $int {
                <$impl_for>::fetch_add(self, v, o)
            }
            fn fetch_or(&self, v: $int, o: loom_atomic::Ordering) -> $int {
                <$impl_for>::fetch_or(self, v, o)
            }
            fn swap(&self, v: $int, o: loom_atomic::Ordering) -> $int {
                <$impl_for>::swap(self, v, o)
            }
            fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: loom_atomic::Ordering,
                failure: loom_atomic::Ordering,
            ) -> Result<$int, $int> {
                <$impl_for>::compare_exchange(self, current, new, success, failure)
            }
        }
    )*};
}

atomic_ops!(u32, loom_atomic::AtomicU32, core::sync::atomic::AtomicU32);
atomic_ops!(u64, loom_atomic::AtomicU64, core::sync::atomic::AtomicU64);

macro_rules! loom_shim_atomic {
    ($name:ident, $int:ty, $lookup:ident) => {
        /// An atomic integer in world memory, modelled by a loom atomic of the
        /// registered world (see the module docs).
        #[repr(transparent)]
        pub struct $name(UnsafeCell<$int>);

        // SAFETY: the cell is only accessed atomically: through the loom
        // atomic that models its address, or (host-only words) through a
        // `core` atomic on it.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `v`. Under loom only atomics inside a
            /// registered world can be operated on.
            pub const fn new(v: $int) -> Self {
                Self(UnsafeCell::new(v))
            }

            /// Runs `op` on the atomic that models this address.
            fn with<R>(&self, op: impl FnOnce(&dyn AtomicOps<$int>) -> R) -> R {
                let model = loom_runtime::current();
                match model.$lookup(self.addr()) {
                    loom_runtime::Target::Loom(a) => op(a),
                    loom_runtime::Target::Raw(a) => op(a),
                }
            }

            fn addr(&self) -> usize {
                self.0.get() as usize
            }

            /// Atomic load.
            pub fn load(&self, o: Ordering) -> $int {
                self.with(|a| a.load(load_ordering(o)))
            }

            /// Atomic store.
            pub fn store(&self, v: $int, o: Ordering) {
                self.with(|a| a.store(v, store_ordering(o)))
            }

            /// Atomic add, returning the previous value (wrapping).
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                self.with(|a| a.fetch_add(v, rmw_ordering(o)))
            }

            /// Atomic add, returning the previous value, with block scope
            /// on the GPU: loom's atomics have one scope, so a `fetch_add`
            /// here (the block's ranks' pairings are a subset of it).
            pub fn fetch_add_block(&self, v: $int, o: Ordering) -> $int {
                self.fetch_add(v, o)
            }

            /// Atomic add whose previous value is not wanted (the GPU's
            /// `red`): a `fetch_add` here.
            pub fn add(&self, v: $int, o: Ordering) {
                self.with(|a| a.fetch_add(v, rmw_ordering(o)));
            }

            /// Atomic bitwise or, returning the previous value.
            pub fn fetch_or(&self, v: $int, o: Ordering) -> $int {
                self.with(|a| a.fetch_or(v, rmw_ordering(o)))
            }

            /// Atomic bitwise or whose previous value is not wanted (the
            /// GPU's `red`): a `fetch_or` here.
            pub fn or(&self, v: $int, o: Ordering) {
                self.with(|a| a.fetch_or(v, rmw_ordering(o)));
            }

            /// Atomic exchange, returning the previous value.
            pub fn swap(&self, v: $int, o: Ordering) -> $int {
                self.with(|a| a.swap(v, rmw_ordering(o)))
            }

            /// Atomic compare-and-swap: `Ok(previous)` when it stored `new`.
            pub fn compare_exchange(&self, current: $int, new: $int, o: Ordering) -> Result<$int, $int> {
                self.with(|a| a.compare_exchange(current, new, rmw_ordering(o), failure_ordering(o)))
            }
        }
    };
}

loom_shim_atomic!(AtomicU32, u32, atomic_u32);
loom_shim_atomic!(AtomicU64, u64, atomic_u64);

/// A memory fence: `Relaxed` is none, the others are loom fences of the same
/// ordering (PTX `fence.acq_rel.gpu`).
pub fn fence(o: Ordering) {
    match o {
        Ordering::Relaxed => {}
        _ => loom_atomic::fence(rmw_ordering(o)),
    }
}

/// Coordinates of the calling rank, as given to [`loom_runtime::WorldModel::enter`].
pub fn coordinates() -> Coordinates {
    loom_runtime::current_coordinates()
}

/// Threads per block of the launch (`blockDim.x`).
pub fn block_dim() -> u32 {
    coordinates().block_dim
}

/// Blocks of the launch (`gridDim.x`).
pub fn grid_dim() -> u32 {
    coordinates().grid_dim
}

/// Lane of the calling rank in its warp of 32.
pub fn lane_id() -> u32 {
    coordinates().thread % 32
}

/// Waits until every rank of the calling block has arrived (`__syncthreads`),
/// on the block's loom barrier. A block of one rank passes at once; a rank
/// that ended ([`loom_runtime::WorldModel::exit`]) does not hold it.
pub fn block_barrier() {
    block_barrier_count(false);
}

/// The block barrier that also counts (see the nvptx `block_barrier_count`):
/// the number of the block's ranks that arrived with `predicate` true.
pub fn block_barrier_count(predicate: bool) -> u32 {
    loom_runtime::current().block_barrier(coordinates().block, predicate)
}

/// One warp collective on the calling warp's loom mutex and condvar (see
/// [`loom_runtime`]): parks until every lane of `mask` has arrived.
fn warp(op: super::WarpOp, mask: u32, value: u32, operand: u32) -> u32 {
    let c = coordinates();
    loom_runtime::current().warp(
        c,
        super::WarpCall {
            op,
            mask,
            value,
            operand,
        },
    )
}

/// `shfl.sync.idx` under loom (see [`super::shfl_sync`]).
pub(super) fn shfl_sync(mask: u32, value: u32, src_lane: u32) -> u32 {
    warp(super::WarpOp::Shfl, mask, value, src_lane)
}

/// `shfl.sync.up` under loom (see [`super::shfl_up_sync`]).
pub(super) fn shfl_up_sync(mask: u32, value: u32, delta: u32) -> u32 {
    warp(super::WarpOp::ShflUp, mask, value, delta)
}

/// `shfl.sync.down` under loom (see [`super::shfl_down_sync`]).
pub(super) fn shfl_down_sync(mask: u32, value: u32, delta: u32) -> u32 {
    warp(super::WarpOp::ShflDown, mask, value, delta)
}

/// `shfl.sync.bfly` under loom (see [`super::shfl_xor_sync`]).
pub(super) fn shfl_xor_sync(mask: u32, value: u32, lane_mask: u32) -> u32 {
    warp(super::WarpOp::ShflXor, mask, value, lane_mask)
}

/// `vote.sync.all` under loom (see [`super::vote_all_sync`]).
pub(super) fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    warp(super::WarpOp::VoteAll, mask, u32::from(predicate), 0) != 0
}

/// `vote.sync.any` under loom (see [`super::vote_any_sync`]).
pub(super) fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    warp(super::WarpOp::VoteAny, mask, u32::from(predicate), 0) != 0
}

/// `vote.sync.ballot` under loom (see [`super::vote_ballot_sync`]).
pub(super) fn vote_ballot_sync(mask: u32, predicate: bool) -> u32 {
    warp(super::WarpOp::VoteBallot, mask, u32::from(predicate), 0)
}

/// `match.any.sync` under loom (see [`super::match_any_sync`]).
pub(super) fn match_any_sync(mask: u32, value: u32) -> u32 {
    warp(super::WarpOp::MatchAny, mask, value, 0)
}

/// `match.all.sync.b32` under loom (see [`super::match_all_sync`]).
pub(super) fn match_all_sync(mask: u32, value: u32) -> bool {
    warp(super::WarpOp::MatchAll, mask, value, 0) != 0
}

/// `match.all.sync.b64` under loom (see [`super::match_all_sync_u64`]).
pub(super) fn match_all_sync_u64(mask: u32, value: u64) -> bool {
    warp(
        super::WarpOp::MatchAll64,
        mask,
        value as u32,
        (value >> 32) as u32,
    ) != 0
}

/// `bar.warp.sync` under loom (see [`super::warp_sync`]).
pub(super) fn warp_sync(mask: u32) {
    warp(super::WarpOp::Sync, mask, 0, 0);
}

/// Every lane of the caller's warp that exists (see [`super::active_mask`]).
pub(super) fn active_mask() -> u32 {
    super::warp_mask()
}

/// Always 0 under loom.
pub(super) fn sm_id() -> u32 {
    0
}

/// The block's shared scratch, a buffer of the model (see [`loom_runtime`]).
/// Accesses to it are plain and not race-checked by loom.
pub(super) fn shared_block_base() -> *mut u8 {
    loom_runtime::current().shared_block(coordinates().block)
}

/// The block's library words: a buffer of the model per block whose
/// words the block's nodes can use are loom atomics, as the world
/// memory's are (see [`loom_runtime::register_world`]), zero when the
/// model starts; an atomic on another of them panics, as one outside the
/// world memory does.
pub(super) fn block_words_base() -> *mut u8 {
    loom_runtime::current().block_words(coordinates().block)
}

/// The block's launch-sized shared memory: the
/// [`super::LOOM_LAUNCH_SHARED_BYTES`] after the block's scratch in the
/// model's buffer. Plain accesses to it are not race-checked, and the
/// shim's atomics cannot reach it (loom models the world memory's words
/// only).
pub(super) fn launch_shared_base() -> *mut u8 {
    // SAFETY: the block's buffer holds the scratch and then the launch's
    // shared memory.
    unsafe { shared_block_base().add(super::SHARED_BLOCK_BYTES) }
}

/// Bytes of the block's launch-sized shared memory under loom.
pub(super) fn launch_shared_len() -> usize {
    super::LOOM_LAUNCH_SHARED_BYTES
}

/// Gives way after a failed poll: yields the loom thread, which tells loom's
/// scheduler to run another rank before this one polls again.
pub(super) fn snooze(_polls: u32, _max_ns: u32) {
    loom::thread::yield_now();
}

/// The calling rank's clock: [`loom_runtime::CLOCK_STEP_NS`] more on each
/// read. A rank's own count of reads, so the value depends only on what the
/// rank did, as loom's replay of an interleaving requires.
pub fn clock_ns() -> u64 {
    loom_runtime::tick_clock()
}

std::thread_local! {
    static GUESS_HEADERS: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether a receive's scan of one sender's slot states also loads that
/// sender's first slot's header, before it knows what the slot holds
/// (`engine::find_in`). The other targets always do; under loom only a
/// rank that asked ([`set_guess_headers`]): the guess's twelve loads in
/// every receive's first scan multiply every model's schedules (the
/// two-message eager model took 66 s instead of a few), so the models
/// that check the guess ask for it, and the rest check the protocol
/// without it, which takes the same words after the states.
pub fn guess_headers() -> bool {
    GUESS_HEADERS.with(core::cell::Cell::get)
}

/// Makes [`guess_headers`] `on` for the calling rank (a loom model's
/// kernel calls it first).
pub fn set_guess_headers(on: bool) {
    GUESS_HEADERS.with(|g| g.set(on));
}

/// Whether another rank can read `ptr` directly: every address is shared, as
/// on the host.
pub fn is_shared_address(_ptr: *const u8) -> bool {
    true
}

/// Copies `len` bytes, reading every tracked 64-byte line of the source and
/// writing every tracked line of the destination through loom's race checker.
///
/// # Safety
/// Both ranges valid for `len` bytes and not overlapping; the protocol orders
/// the copy against every concurrent access with acquire/release operations.
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    let _guards = loom_runtime::current().access(&[(src as usize, len, false), (dst as usize, len, true)]);
    // SAFETY: forwarded from the caller; the guards above only record the
    // access with loom and do not touch the bytes.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Copies `len` bytes of a large message; under loom as [`copy_bytes`]
/// (same race checks).
///
/// # Safety
/// As for [`copy_bytes`].
pub unsafe fn copy_wide(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { copy_bytes(dst, src, len) }
}

/// Stores a 64-bit word into a message payload with a plain store, checked
/// by loom like a copy into it.
///
/// # Safety
/// `ptr` 8-byte aligned and valid; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn store_payload_u64(ptr: *mut u8, value: u64) {
    let _guards = loom_runtime::current().access(&[(ptr as usize, 8, true)]);
    // SAFETY: forwarded from the caller.
    unsafe { (ptr as *mut u64).write(value) }
}

/// Loads a 64-bit word of a message payload, checked by loom like a copy
/// out of it.
///
/// # Safety
/// As for [`store_payload_u64`].
pub unsafe fn load_payload_u64(ptr: *const u8) -> u64 {
    let _guards = loom_runtime::current().access(&[(ptr as usize, 8, false)]);
    // SAFETY: forwarded from the caller.
    unsafe { (ptr as *const u64).read() }
}

/// Loads one element of `T` from another rank's buffer in global memory
/// (a reduce-scatter's operand): a plain load, several of which may be in
/// flight in a batch ([`super::independent`]).
///
/// # Safety
/// `ptr` valid for reads of one `T` and aligned; ordered against the
/// element's writes by the protocol's acquire/release operations.
pub unsafe fn load_element<T: Copy>(ptr: *const T) -> T {
    let _guards = loom_runtime::current().access(&[(ptr as usize, core::mem::size_of::<T>(), false)]);
    // SAFETY: forwarded from the caller.
    unsafe { ptr.read() }
}

/// Loads the first `len` (at most 8) bytes at `src` into a payload's first
/// word, in memory order, the rest zero: [`store_head_bytes`]'s inverse
/// (the send of a small message through registers).
///
/// # Safety
/// `src` valid for `len` bytes; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn load_head_bytes(src: *const u8, len: usize) -> u64 {
    let len = len.min(8);
    if len == 0 {
        return 0;
    }
    let _guards = loom_runtime::current().access(&[(src as usize, len, false)]);
    let mut bytes = [0u8; 8];
    // SAFETY: forwarded from the caller; `len <= 8`.
    unsafe { core::ptr::copy_nonoverlapping(src, bytes.as_mut_ptr(), len) };
    u64::from_le_bytes(bytes)
}

/// Stores the first `len` (at most 8) bytes of `value` at `dst`: a
/// payload's first word as [`load_payload_u64`] read it, so its bytes in
/// memory order (the receive of a small message from registers).
///
/// # Safety
/// `dst` valid for `len` bytes; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn store_head_bytes(dst: *mut u8, value: u64, len: usize) {
    if len == 0 {
        return;
    }
    let _guards = loom_runtime::current().access(&[(dst as usize, len, true)]);
    let bytes = value.to_le_bytes();
    // SAFETY: forwarded from the caller; `len <= 8`.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len.min(8)) }
}

pub mod loom_runtime {
    //! What the loom harness uses to run ranks on loom threads: registering a
    //! world's memory before the spawns, entering a rank on each loom thread,
    //! and declaring plain accesses of tracked memory.

    extern crate std;

    use super::Coordinates;
    use core::cell::RefCell;
    use core::sync::atomic::{AtomicU8, Ordering as StdOrdering};
    use loom::cell::{ConstPtr, MutPtr, UnsafeCell as LoomCell};
    use loom::sync::atomic::{AtomicU32 as LoomU32, AtomicU64 as LoomU64};
    use loom::sync::{Condvar, Mutex};
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex as StdMutex};
    use std::vec::Vec;

    /// Bytes of one race-tracked line.
    pub const LINE: usize = 64;
    /// Bytes of one race-tracked word of a range tracked per word
    /// ([`WorldModel::track_words`]).
    pub const WORD: usize = 8;

    /// Width a word was first used at (bookkeeping only, not modelled).
    const UNUSED: u8 = 0;
    const WIDTH_32: u8 = 4;
    const WIDTH_64: u8 = 8;
    /// The upper half of a word used at 64 bits.
    const WIDTH_64_HIGH: u8 = 9;

    /// One 4-byte word of the world: its loom atomics (none for a host-only
    /// word) and the width it is used at.
    struct Word {
        a32: Option<LoomU32>,
        /// Only at 8-byte aligned addresses.
        a64: Option<LoomU64>,
        width: AtomicU8,
    }

    /// The atomic a shim operation goes to: loom's, or the raw memory for a
    /// host-only word (see [`register_world`]).
    pub(super) enum Target<'a, L, C> {
        /// A loom atomic.
        Loom(&'a L),
        /// A `core` atomic on the raw memory.
        Raw(&'a C),
    }

    /// The state of a block's barrier.
    struct BarrierState {
        /// Arrivals of the current generation.
        arrived: u32,
        /// Of those, the ones with a true predicate.
        votes: u32,
        /// Ranks of the block that ended: they do not hold the barrier.
        exited: u32,
        /// Completed generations.
        generation: u64,
        /// The count of the last completed generation.
        count: u32,
    }

    /// A block's barrier under a loom mutex (whose lock/unlock give the
    /// happens-before edges of `bar.sync`).
    struct BlockBarrier {
        state: Mutex<BarrierState>,
        cv: Condvar,
        parties: u32,
    }

    impl BlockBarrier {
        /// Completes the current generation if every rank that has not
        /// ended has arrived.
        fn complete_if_full(&self, g: &mut BarrierState) {
            if g.arrived > 0 && g.arrived + g.exited >= self.parties {
                g.count = g.votes;
                g.arrived = 0;
                g.votes = 0;
                g.generation += 1;
                self.cv.notify_all();
            }
        }

        fn wait(&self, predicate: bool) -> u32 {
            let mut g = self.state.lock().unwrap();
            let generation = g.generation;
            g.arrived += 1;
            g.votes += u32::from(predicate);
            self.complete_if_full(&mut g);
            while g.generation == generation {
                g = self.cv.wait(g).unwrap();
            }
            g.count
        }

        fn exit(&self) {
            let mut g = self.state.lock().unwrap();
            g.exited += 1;
            self.complete_if_full(&mut g);
        }
    }

    /// A warp's collective state, under a loom mutex (whose lock/unlock
    /// give the happens-before edges of a `*.sync` warp instruction):
    /// the lanes that arrived and their calls, and the results not yet
    /// taken.
    struct WarpState {
        arrived: u32,
        calls: [Option<crate::shim::WarpCall>; 32],
        done: u32,
        results: [u32; 32],
    }

    struct Warp {
        state: Mutex<WarpState>,
        cv: Condvar,
    }

    impl Warp {
        /// Lane `lane` (of a warp whose lanes are `exists`) arrives with
        /// `call`; returns its result once every lane of the mask arrived.
        /// Panics (failing the model) on a call that no warp could
        /// complete: a mask without the caller or with lanes that do not
        /// exist, or lanes of one mask with different operations or masks.
        fn arrive(&self, lane: u32, exists: u32, call: crate::shim::WarpCall) -> u32 {
            let bit = 1u32 << lane;
            assert!(
                call.mask & bit != 0 && call.mask & !exists == 0,
                "{}: mask {:#x} must name the calling lane {lane} and only lanes of the warp ({exists:#x})",
                call.op,
                call.mask
            );
            let mut g = self.state.lock().unwrap();
            for k in 0..32u32 {
                if let Some(other) = g.calls[k as usize] {
                    if (call.mask & (1 << k) != 0 || other.mask & bit != 0)
                        && (other.mask != call.mask || other.op != call.op)
                    {
                        panic!(
                            "lane {lane} called {} with mask {:#x} while lane {k} waits in {} with mask {:#x}",
                            call.op, call.mask, other.op, other.mask
                        );
                    }
                }
            }
            g.arrived |= bit;
            g.calls[lane as usize] = Some(call);
            if g.arrived & call.mask == call.mask {
                let calls: [crate::shim::WarpCall; 32] = core::array::from_fn(|l| g.calls[l].unwrap_or(call));
                let r = crate::shim::resolve_warp(call.mask, &calls);
                for (l, &x) in r.iter().enumerate() {
                    if call.mask & (1 << l) != 0 {
                        g.results[l] = x;
                        g.calls[l] = None;
                    }
                }
                g.arrived &= !call.mask;
                g.done |= call.mask;
                self.cv.notify_all();
            }
            while g.done & bit == 0 {
                g = self.cv.wait(g).unwrap();
            }
            g.done &= !bit;
            g.results[lane as usize]
        }
    }

    /// A block's shared scratch, then its launch-sized shared memory
    /// (64-byte aligned, so that race tracking by word can cover the
    /// non-blocking collectives' small words there).
    #[repr(align(64))]
    struct SharedScratch(
        core::cell::UnsafeCell<[u8; crate::shim::SHARED_BLOCK_BYTES + crate::shim::LOOM_LAUNCH_SHARED_BYTES]>,
    );

    // SAFETY: the ranks of a block order their accesses to the scratch with
    // barriers, as on the GPU; loom runs one thread at a time.
    unsafe impl Sync for SharedScratch {}
    // SAFETY: as above.
    unsafe impl Send for SharedScratch {}

    /// A block's library words ([`crate::shim::block_words`]).
    #[repr(align(16))]
    struct BlockWords(core::cell::UnsafeCell<[u8; crate::shim::BLOCK_WORDS_BYTES]>);

    // SAFETY: only accessed atomically, through the loom atomics that model
    // its words.
    unsafe impl Sync for BlockWords {}
    // SAFETY: as above.
    unsafe impl Send for BlockWords {}

    struct Shared {
        /// Words by address (the world memory's and the blocks' library
        /// words); built before the spawns and never changed.
        words: BTreeMap<usize, Word>,
        /// Race trackers by the address of their granule (a 64-byte line, or
        /// an 8-byte word inside `words`). A std mutex: it only guards the
        /// map and is never held across a loom scheduling point.
        lines: StdMutex<BTreeMap<usize, LoomCell<()>>>,
        /// Ranges tracked per 8-byte word ([`WorldModel::track_words`]).
        words_tracked: StdMutex<Vec<core::ops::Range<usize>>>,
        blocks: Vec<BlockBarrier>,
        /// Per block, per warp (block-major).
        warps: Vec<Warp>,
        /// Per block, its shared scratch.
        scratch: Vec<SharedScratch>,
        /// Per block, its library words (their addresses are the keys of
        /// `words`: the vector's buffer, built before them, never moves).
        block_words: Vec<BlockWords>,
        block_dim: u32,
        grid_dim: u32,
    }

    /// The model of one world: its atomics, tracked lines and block barriers.
    /// Clone it into every rank's loom thread.
    #[derive(Clone)]
    pub struct WorldModel(Arc<Shared>);

    struct Context {
        model: WorldModel,
        coordinates: Coordinates,
        /// The rank's clock (see [`super::clock_ns`]).
        clock_ns: u64,
    }

    /// How far a rank's clock advances per read under loom.
    pub const CLOCK_STEP_NS: u64 = 1_000;

    loom::thread_local! {
        static CONTEXT: RefCell<Option<Context>> = RefCell::new(None);
    }

    /// Registers `len` bytes of world memory at `memory` for a grid of
    /// `grid_dim` blocks of `block_dim` ranks: creates its loom atomics (from
    /// the memory's current values), the race trackers of its lines and the
    /// block barriers. Call it on the model's main thread, after writing the
    /// header and before spawning the ranks.
    ///
    /// `host_only` lists byte ranges `(offset, len)` of atomics that ranks
    /// only write and that only the host reads, after the launch (the wait
    /// records and result records). Their interleaving with the other ranks
    /// cannot change what any rank does, so they are plain atomics on the raw
    /// memory rather than loom atomics: no scheduling points, a smaller state
    /// space, and their final values stay readable in the memory.
    ///
    /// # Safety
    /// `memory` must be 8-byte aligned, valid for `len` bytes, and outlive
    /// every use of the returned model; during the model its words are
    /// accessed only through the shim.
    pub unsafe fn register_world(
        memory: *mut u8,
        len: usize,
        block_dim: u32,
        grid_dim: u32,
        host_only: &[(usize, usize)],
    ) -> WorldModel {
        assert_eq!(memory as usize % 8, 0, "world memory must be 8-byte aligned");
        assert!(block_dim > 0 && grid_dim > 0);
        let base = memory as usize;
        let modelled = |offset: usize, width: usize| {
            !host_only
                .iter()
                .any(|&(start, n)| offset < start + n && start < offset + width)
        };
        let mut words = BTreeMap::new();
        for offset in (0..len.saturating_sub(3)).step_by(4) {
            // SAFETY: inside the memory (caller), 4-byte aligned (base is 8-aligned).
            let v32 = unsafe { core::ptr::read(memory.add(offset) as *const u32) };
            let v64 = if offset % 8 == 0 && offset + 8 <= len {
                // SAFETY: as above, 8 bytes, 8-byte aligned.
                Some(unsafe { core::ptr::read(memory.add(offset) as *const u64) })
            } else {
                None
            };
            words.insert(
                base + offset,
                Word {
                    a32: modelled(offset, 4).then(|| LoomU32::new(v32)),
                    a64: v64.filter(|_| modelled(offset, 8)).map(LoomU64::new),
                    width: AtomicU8::new(UNUSED),
                },
            );
        }
        let block_words: Vec<BlockWords> = (0..grid_dim)
            .map(|_| BlockWords(core::cell::UnsafeCell::new([0; crate::shim::BLOCK_WORDS_BYTES])))
            .collect();
        // Only the words a block of `block_dim` ranks can use (each slot's
        // first `immediate_block_words` nodes' tally words, what a kernel's
        // entry zeroes): a loom atomic per word of all 264 cost every model
        // its objects.
        let node_words = crate::layout::IMMEDIATE_BLOCK_NODE_WORDS as usize;
        let used = crate::layout::immediate_block_words(block_dim) as usize * node_words;
        for b in &block_words {
            let at = b.0.get() as usize;
            for slot in 0..crate::layout::IMMEDIATE_SLOTS as usize {
                for k in 0..used {
                    let word =
                        at + 8 * (slot * crate::layout::IMMEDIATE_BLOCK_NODES as usize * node_words + k);
                    for (offset, v64) in [(0, true), (4, false)] {
                        words.insert(
                            word + offset,
                            Word {
                                a32: Some(LoomU32::new(0)),
                                a64: v64.then(|| LoomU64::new(0)),
                                width: AtomicU8::new(UNUSED),
                            },
                        );
                    }
                }
            }
        }
        let model = WorldModel(Arc::new(Shared {
            words,
            lines: StdMutex::new(BTreeMap::new()),
            words_tracked: StdMutex::new(Vec::new()),
            blocks: (0..grid_dim)
                .map(|_| BlockBarrier {
                    state: Mutex::new(BarrierState {
                        arrived: 0,
                        votes: 0,
                        exited: 0,
                        generation: 0,
                        count: 0,
                    }),
                    cv: Condvar::new(),
                    parties: block_dim,
                })
                .collect(),
            warps: (0..grid_dim * block_dim.div_ceil(32))
                .map(|_| Warp {
                    state: Mutex::new(WarpState {
                        arrived: 0,
                        calls: [None; 32],
                        done: 0,
                        results: [0; 32],
                    }),
                    cv: Condvar::new(),
                })
                .collect(),
            scratch: (0..grid_dim)
                .map(|_| {
                    SharedScratch(core::cell::UnsafeCell::new(
                        [0; crate::shim::SHARED_BLOCK_BYTES + crate::shim::LOOM_LAUNCH_SHARED_BYTES],
                    ))
                })
                .collect(),
            block_words,
            block_dim,
            grid_dim,
        }));
        model.track(memory, len);
        model
    }

    impl WorldModel {
        /// Makes the calling loom thread rank (`thread`, `block`) of this
        /// world, until the thread ends.
        pub fn enter(&self, thread: u32, block: u32) {
            assert!(thread < self.0.block_dim && block < self.0.grid_dim);
            let coordinates = Coordinates {
                thread,
                block,
                block_dim: self.0.block_dim,
                grid_dim: self.0.grid_dim,
            };
            CONTEXT.with(|c| {
                *c.borrow_mut() = Some(Context {
                    model: self.clone(),
                    coordinates,
                    clock_ns: 0,
                })
            });
        }

        /// Race-tracks the 64-byte lines of `len` bytes at `ptr` from now on.
        /// Creating a tracker counts, for loom, as a write by the calling
        /// thread: call it on the main thread before the spawns for memory
        /// every rank may touch (a scratch area), or on the rank that owns the
        /// memory (its send buffer). Already tracked lines are kept.
        pub fn track(&self, ptr: *const u8, len: usize) {
            let mut lines = self.0.lines.lock().unwrap();
            self.granules(ptr as usize, len, |line| {
                lines.entry(line).or_insert_with(|| LoomCell::new(()));
            });
        }

        /// Race-tracks `len` bytes at `ptr` (64-byte aligned, a multiple of
        /// 64) per 8-byte word from now on, in place of their lines: for
        /// memory whose neighbouring words different ranks write
        /// concurrently (the non-blocking collectives' small words), which
        /// the GPU allows and a per-line tracker would call a race. Call it
        /// on the model's main thread before the spawns.
        pub fn track_words(&self, ptr: *const u8, len: usize) {
            let start = ptr as usize;
            assert!(
                start % LINE == 0 && len % LINE == 0,
                "word tracking is by whole lines"
            );
            let mut lines = self.0.lines.lock().unwrap();
            for line in (start..start + len).step_by(LINE) {
                lines.remove(&line);
                for word in (line..line + LINE).step_by(WORD) {
                    lines.insert(word, LoomCell::new(()));
                }
            }
            self.0.words_tracked.lock().unwrap().push(start..start + len);
        }

        /// Calls `f` with each granule (its address) that `len` bytes at
        /// `addr` touch: 8-byte words inside a range given to
        /// [`WorldModel::track_words`], 64-byte lines elsewhere.
        fn granules(&self, addr: usize, len: usize, mut f: impl FnMut(usize)) {
            let words = self.0.words_tracked.lock().unwrap();
            let mut at = addr;
            while at < addr + len {
                let size = if words.iter().any(|r| r.contains(&at)) {
                    WORD
                } else {
                    LINE
                };
                let granule = at / size * size;
                f(granule);
                at = granule + size;
            }
        }

        /// Stops tracking the lines of `len` bytes at `ptr` (before the memory
        /// is freed, so that a later allocation there starts afresh).
        pub fn untrack(&self, ptr: *const u8, len: usize) {
            let mut lines = self.0.lines.lock().unwrap();
            self.granules(ptr as usize, len, |line| {
                lines.remove(&line);
            });
        }

        /// Records with loom accesses of tracked lines: `(address, len,
        /// write)` per range. The accesses last while the returned guards live.
        pub(crate) fn access(&self, ranges: &[(usize, usize, bool)]) -> AccessGuards {
            let lines = self.0.lines.lock().unwrap();
            let mut wanted: BTreeMap<usize, bool> = BTreeMap::new();
            for &(addr, len, write) in ranges {
                self.granules(addr, len, |line| {
                    if lines.contains_key(&line) {
                        let w = wanted.entry(line).or_insert(false);
                        *w |= write;
                    }
                });
            }
            let mut guards = AccessGuards {
                reads: Vec::new(),
                writes: Vec::new(),
            };
            for (line, write) in wanted {
                // Entering an access is not a loom scheduling point, so the
                // std mutex is not held across a switch to another rank.
                let cell = &lines[&line];
                if write {
                    guards.writes.push(cell.get_mut());
                } else {
                    guards.reads.push(cell.get());
                }
            }
            guards
        }

        fn word(&self, addr: usize, width: u8) -> &Word {
            let Some(word) = self.0.words.get(&addr) else {
                panic!(
                    "loom shim: atomic at {addr:#x} is not in the registered world memory \
                     (only world atomics can be modelled)"
                );
            };
            claim(word, addr, width);
            word
        }

        pub(super) fn atomic_u32(&self, addr: usize) -> Target<'_, LoomU32, core::sync::atomic::AtomicU32> {
            match &self.word(addr, WIDTH_32).a32 {
                Some(a) => Target::Loom(a),
                // SAFETY: a host-only word of the registered memory: 4-byte
                // aligned, alive while the model is, and only accessed
                // atomically (through the shim).
                None => Target::Raw(unsafe { core::sync::atomic::AtomicU32::from_ptr(addr as *mut u32) }),
            }
        }

        pub(super) fn atomic_u64(&self, addr: usize) -> Target<'_, LoomU64, core::sync::atomic::AtomicU64> {
            let word = self.word(addr, WIDTH_64);
            let Some(high) = self.0.words.get(&(addr + 4)) else {
                panic!("loom shim: 64-bit atomic at {addr:#x} runs past the world memory");
            };
            claim(high, addr + 4, WIDTH_64_HIGH);
            if addr % 8 != 0 {
                panic!("loom shim: 64-bit atomic at {addr:#x} is not 8-byte aligned");
            }
            match &word.a64 {
                Some(a) => Target::Loom(a),
                // SAFETY: as in `atomic_u32`, 8-byte aligned (checked above).
                None => Target::Raw(unsafe { core::sync::atomic::AtomicU64::from_ptr(addr as *mut u64) }),
            }
        }

        /// A warp collective of the rank at `c` (see [`Warp::arrive`]).
        pub(super) fn warp(&self, c: Coordinates, call: crate::shim::WarpCall) -> u32 {
            let per_block = self.0.block_dim.div_ceil(32);
            let w = &self.0.warps[(c.block * per_block + c.thread / 32) as usize];
            let first = c.thread - c.thread % 32;
            let n = (self.0.block_dim - first).min(32);
            let exists = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
            w.arrive(c.thread % 32, exists, call)
        }

        /// The shared scratch of `block`.
        pub(super) fn shared_block(&self, block: u32) -> *mut u8 {
            self.0.scratch[block as usize].0.get() as *mut u8
        }

        /// The launch-sized shared memory of `block`
        /// ([`LOOM_LAUNCH_SHARED_BYTES`](crate::shim::LOOM_LAUNCH_SHARED_BYTES)),
        /// for a harness to race-track.
        pub fn launch_shared(&self, block: u32) -> *mut u8 {
            // SAFETY: the block's buffer holds the scratch and then the
            // launch's shared memory.
            unsafe { self.shared_block(block).add(crate::shim::SHARED_BLOCK_BYTES) }
        }

        /// The library words of `block`.
        pub(super) fn block_words(&self, block: u32) -> *mut u8 {
            self.0.block_words[block as usize].0.get() as *mut u8
        }

        pub(super) fn block_barrier(&self, block: u32, predicate: bool) -> u32 {
            let b = &self.0.blocks[block as usize];
            if b.parties > 1 {
                b.wait(predicate)
            } else {
                u32::from(predicate)
            }
        }

        /// The calling rank ended (its kernel function returned): like a
        /// thread's PTX `exit`, it no longer holds its block's barrier, which
        /// completes if the other ranks of the block are all waiting in it.
        /// Call it on the rank's loom thread after its last shim call.
        pub fn exit(&self) {
            let c = current_coordinates();
            let b = &self.0.blocks[c.block as usize];
            if b.parties > 1 {
                b.exit();
            }
        }
    }

    /// Records the width a word is used at; panics on a mixed-width use.
    fn claim(word: &Word, addr: usize, width: u8) {
        // Bookkeeping outside the model: Relaxed std atomics (loom runs one
        // thread at a time).
        match word
            .width
            .compare_exchange(UNUSED, width, StdOrdering::Relaxed, StdOrdering::Relaxed)
        {
            Ok(_) => {}
            Err(w) if w == width => {}
            Err(w) => panic!(
                "loom shim: the word at {addr:#x} is used as a {} and as a {} atomic",
                width_name(w),
                width_name(width)
            ),
        }
    }

    fn width_name(w: u8) -> &'static str {
        match w {
            WIDTH_32 => "32-bit",
            WIDTH_64 => "64-bit",
            _ => "64-bit (upper half)",
        }
    }

    /// Loom access guards of one copy or declared access.
    pub struct AccessGuards {
        reads: Vec<ConstPtr<()>>,
        writes: Vec<MutPtr<()>>,
    }

    /// The model of the calling rank's world.
    pub(crate) fn current() -> WorldModel {
        CONTEXT
            .with(|c| c.borrow().as_ref().map(|c| c.model.clone()))
            .expect("loom shim used outside a rank (call WorldModel::enter on this loom thread first)")
    }

    pub(super) fn current_coordinates() -> Coordinates {
        CONTEXT
            .with(|c| c.borrow().as_ref().map(|c| c.coordinates))
            .expect("loom shim used outside a rank (call WorldModel::enter on this loom thread first)")
    }

    /// Advances the calling rank's clock by [`CLOCK_STEP_NS`] and returns it.
    pub(super) fn tick_clock() -> u64 {
        CONTEXT.with(|c| {
            let mut c = c.borrow_mut();
            let c = c
                .as_mut()
                .expect("loom shim used outside a rank (call WorldModel::enter on this loom thread first)");
            c.clock_ns += CLOCK_STEP_NS;
            c.clock_ns
        })
    }

    /// Declares that the calling rank reads `len` bytes at `ptr` with plain
    /// loads (checked against concurrent writes where those lines are tracked).
    pub fn read(ptr: *const u8, len: usize) {
        drop(current().access(&[(ptr as usize, len, false)]));
    }

    /// Declares that the calling rank writes `len` bytes at `ptr` with plain
    /// stores (checked against concurrent accesses where those lines are tracked).
    pub fn write(ptr: *const u8, len: usize) {
        drop(current().access(&[(ptr as usize, len, true)]));
    }

    /// [`WorldModel::track`] for the calling rank's world.
    pub fn track(ptr: *const u8, len: usize) {
        current().track(ptr, len)
    }

    /// [`WorldModel::untrack`] for the calling rank's world.
    pub fn untrack(ptr: *const u8, len: usize) {
        current().untrack(ptr, len)
    }
}

/// Kernel entry point under loom: nothing beyond the descriptor that
/// [`kernel!`](crate::kernel) always emits.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_entry {
    ($name:ident, $argty:ty) => {};
}

/// Four relaxed loads in one batch ([`super::load_relaxed_x4`]).
#[inline(always)]
pub(super) fn load_relaxed_x4(words: &[AtomicU32; 4]) -> [u32; 4] {
    super::independent(|| core::array::from_fn(|k| words[k].load(Ordering::Relaxed)))
}

/// Four relaxed stores ([`super::store_relaxed_x4`]).
#[inline(always)]
pub(super) fn store_relaxed_x4(words: &[AtomicU32; 4], values: [u32; 4]) {
    for (w, v) in words.iter().zip(values) {
        w.store(v, Ordering::Relaxed);
    }
}

/// Two relaxed 64-bit loads in one batch ([`super::load_relaxed_x2_u64`]).
#[inline(always)]
pub(super) fn load_relaxed_x2_u64(words: &[AtomicU64; 2]) -> [u64; 2] {
    super::independent(|| [words[0].load(Ordering::Relaxed), words[1].load(Ordering::Relaxed)])
}

/// Two relaxed 64-bit stores ([`super::store_relaxed_x2_u64`]).
#[inline(always)]
pub(super) fn store_relaxed_x2_u64(words: &[AtomicU64; 2], values: [u64; 2]) {
    for (w, v) in words.iter().zip(values) {
        w.store(v, Ordering::Relaxed);
    }
}

/// Whether [`super::load_relaxed_batch`] loads its repeated words too:
/// each load is a choice point of the model.
pub(super) const LOADS_REPEAT: bool = false;

/// A batch of independent loads begins (`true`) or ends: nothing here (the
/// emulator's timing model counts batches).
#[inline(always)]
pub(super) fn batch(_begin: bool) {}

/// A plain access of global memory: nothing here (the emulator's timing
/// model charges it).
#[inline(always)]
pub(super) fn note_global(_addr: usize, _bytes: usize, _write: bool) {}

#[inline(always)]
pub(super) fn note_private(_addr: usize, _bytes: usize, _write: bool) {}

#[inline(always)]
pub(super) fn prefetch_private(_addr: *const u8, _bytes: usize) {}

#[inline(always)]
pub(super) fn note_volatile(_addr: usize, _bytes: usize, _write: bool) {}

/// The world's memory itself: the host's copy of the header is there.
#[inline(always)]
pub(super) fn descriptors(world: *mut u8) -> *const u8 {
    world
}

#[inline(always)]
pub(super) fn note_descriptor(_which: super::Descriptor) {}
