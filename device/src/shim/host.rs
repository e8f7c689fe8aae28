//! Host implementation of the shim: the CPU emulator and plain host threads.
//!
//! Atomics are `core::sync::atomic` applied to the world memory. Indices, the
//! block barrier and backoff ask the rank runtime that the emulator installs
//! for the running rank (see [`runtime`]); with none installed (a plain host
//! thread) the caller is rank 0 of a one-rank world.
//!
//! Every synchronising operation is also counted, by kind, in a counter
//! block of the calling OS thread ([`runtime::SyncCounts`]); the emulator
//! takes the block after each resumption of a rank and adds it to that
//! rank's totals (docs/emulator.md, "Synchronising-operation counts").
//!
//! In the emulator's timing mode (docs/model.md) every access is also
//! reported, before it happens, to the running rank's runtime
//! ([`runtime::RankRuntime::access`]), which charges it to the rank's
//! virtual clock; one thread-local test per access when the mode is off.

extern crate std;

use super::{Coordinates, Descriptor, Ordering, WarpCall, WarpOp};
use core::cell::UnsafeCell;
use core::sync::atomic as core_atomic;
use runtime::count::{self, Kind};
use runtime::Access;

/// Reports `access` to the timing model, when the running rank has one.
#[inline(always)]
fn timed(access: Access) {
    if runtime::model_on() {
        report(access)
    }
}

/// [`timed`]'s report, out of line: the check stays in the caller, the
/// call (which the compiler must assume writes memory) does not.
#[cold]
#[inline(never)]
fn report(access: Access) {
    runtime::with_current(|rt| {
        if let Some(rt) = rt {
            rt.access(access)
        }
    })
}

/// Counts a load of ordering `o` (an acquire load if it acquires).
#[inline(always)]
fn count_load(o: Ordering) {
    if matches!(o, Ordering::Acquire | Ordering::AcqRel) {
        count::bump(Kind::AcquireLoad);
    }
}

/// Counts a store of ordering `o` (a release store if it releases).
#[inline(always)]
fn count_store(o: Ordering) {
    if matches!(o, Ordering::Release | Ordering::AcqRel) {
        count::bump(Kind::ReleaseStore);
    }
}

/// Counts a read-modify-write of ordering `o` (every one: a relaxed one is
/// a memory round trip too).
#[inline(always)]
fn count_rmw(o: Ordering) {
    count::bump(match o {
        Ordering::Relaxed => Kind::RelaxedRmw,
        Ordering::Acquire => Kind::AcquireRmw,
        Ordering::Release => Kind::ReleaseRmw,
        Ordering::AcqRel => Kind::AcqRelRmw,
    });
}

fn load_ordering(o: Ordering) -> core_atomic::Ordering {
    match o {
        Ordering::Relaxed | Ordering::Release => core_atomic::Ordering::Relaxed,
        Ordering::Acquire | Ordering::AcqRel => core_atomic::Ordering::Acquire,
    }
}

fn store_ordering(o: Ordering) -> core_atomic::Ordering {
    match o {
        Ordering::Relaxed | Ordering::Acquire => core_atomic::Ordering::Relaxed,
        Ordering::Release | Ordering::AcqRel => core_atomic::Ordering::Release,
    }
}

fn rmw_ordering(o: Ordering) -> core_atomic::Ordering {
    match o {
        Ordering::Relaxed => core_atomic::Ordering::Relaxed,
        Ordering::Acquire => core_atomic::Ordering::Acquire,
        Ordering::Release => core_atomic::Ordering::Release,
        Ordering::AcqRel => core_atomic::Ordering::AcqRel,
    }
}

fn failure_ordering(o: Ordering) -> core_atomic::Ordering {
    load_ordering(o)
}

macro_rules! host_atomic {
    ($name:ident, $int:ty, $core:ty) => {
        /// An atomic integer in world memory.
        #[repr(transparent)]
        pub struct $name(UnsafeCell<$int>);

        // SAFETY: every access goes through the atomic operations below.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `v`.
            pub const fn new(v: $int) -> Self {
                Self(UnsafeCell::new(v))
            }

            fn addr(&self) -> usize {
                self.0.get() as usize
            }

            fn core(&self) -> &$core {
                // SAFETY: the cell is aligned for the integer (repr(transparent)
                // over it, and world offsets are aligned), lives as long as
                // `self`, and is only accessed atomically.
                unsafe { <$core>::from_ptr(self.0.get()) }
            }

            /// Atomic load.
            pub fn load(&self, o: Ordering) -> $int {
                count_load(o);
                timed(Access::Load {
                    order: o,
                    addr: self.addr(),
                });
                self.core().load(load_ordering(o))
            }

            /// Atomic store.
            pub fn store(&self, v: $int, o: Ordering) {
                count_store(o);
                timed(Access::Store {
                    order: o,
                    addr: self.addr(),
                });
                self.core().store(v, store_ordering(o))
            }

            /// Atomic add, returning the previous value (wrapping).
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                count_rmw(o);
                timed(Access::Rmw {
                    order: o,
                    addr: self.addr(),
                });
                self.core().fetch_add(v, rmw_ordering(o))
            }

            /// Atomic add, returning the previous value (wrapping), with
            /// block scope (PTX `.cta`; the host's atomics have one scope,
            /// the timing model prices its fences as the block's).
            pub fn fetch_add_block(&self, v: $int, o: Ordering) -> $int {
                count_rmw(o);
                timed(Access::BlockRmw {
                    order: o,
                    addr: self.addr(),
                });
                self.core().fetch_add(v, rmw_ordering(o))
            }

            /// Atomic add whose previous value is not wanted (PTX `red`
            /// for `Relaxed` and `Release`: the rank does not wait for it;
            /// `Acquire` and `AcqRel` read, so they are a `fetch_add`).
            pub fn add(&self, v: $int, o: Ordering) {
                if matches!(o, Ordering::Acquire | Ordering::AcqRel) {
                    self.fetch_add(v, o);
                    return;
                }
                count_rmw(o);
                timed(Access::Reduce {
                    order: o,
                    addr: self.addr(),
                });
                self.core().fetch_add(v, rmw_ordering(o));
            }

            /// Atomic bitwise or whose previous value is not wanted (PTX
            /// `red`, as [`add`](Self::add)).
            pub fn or(&self, v: $int, o: Ordering) {
                if matches!(o, Ordering::Acquire | Ordering::AcqRel) {
                    self.fetch_or(v, o);
                    return;
                }
                count_rmw(o);
                timed(Access::Reduce {
                    order: o,
                    addr: self.addr(),
                });
                self.core().fetch_or(v, rmw_ordering(o));
            }

            /// Atomic bitwise or, returning the previous value.
            pub fn fetch_or(&self, v: $int, o: Ordering) -> $int {
                count_rmw(o);
                timed(Access::Rmw {
                    order: o,
                    addr: self.addr(),
                });
                self.core().fetch_or(v, rmw_ordering(o))
            }

            /// Atomic exchange, returning the previous value.
            pub fn swap(&self, v: $int, o: Ordering) -> $int {
                count_rmw(o);
                timed(Access::Rmw {
                    order: o,
                    addr: self.addr(),
                });
                self.core().swap(v, rmw_ordering(o))
            }

            /// Atomic compare-and-swap: `Ok(previous)` when it stored `new`.
            /// Counted as one read-modify-write whether or not it stores.
            pub fn compare_exchange(&self, current: $int, new: $int, o: Ordering) -> Result<$int, $int> {
                count_rmw(o);
                timed(Access::Rmw {
                    order: o,
                    addr: self.addr(),
                });
                self.core()
                    .compare_exchange(current, new, rmw_ordering(o), failure_ordering(o))
            }
        }
    };
}

host_atomic!(AtomicU32, u32, core_atomic::AtomicU32);
host_atomic!(AtomicU64, u64, core_atomic::AtomicU64);

/// A memory fence of the given ordering (a `Relaxed` one is no fence and
/// is not counted).
pub fn fence(o: Ordering) {
    match o {
        Ordering::Relaxed => {}
        _ => {
            count::bump(Kind::Fence);
            timed(Access::Fence { order: o });
            core_atomic::fence(rmw_ordering(o))
        }
    }
}

/// Coordinates of the calling rank.
pub fn coordinates() -> Coordinates {
    runtime::with_current(|rt| rt.map(|r| r.coordinates())).unwrap_or(Coordinates {
        thread: 0,
        block: 0,
        block_dim: 1,
        grid_dim: 1,
    })
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

/// Waits until every rank of the calling block has arrived (`__syncthreads`).
/// As on the GPU, a rank that returned from the kernel does not hold it.
pub fn block_barrier() {
    block_barrier_count(false);
}

/// The block barrier that also counts (see the nvptx
/// `block_barrier_count`): the scheduler parks the rank like at
/// [`block_barrier`] and, when every rank of the block that has not
/// returned has arrived, gives each the number that arrived with
/// `predicate` true. On a plain host thread (rank 0 of a one-rank world),
/// the rank alone.
pub fn block_barrier_count(predicate: bool) -> u32 {
    count::bump(Kind::BlockBarrier);
    runtime::with_current(|rt| match rt {
        Some(rt) => rt.block_barrier(predicate),
        None => u32::from(predicate),
    })
}

/// One warp collective: through the emulator's scheduler (a scheduler
/// event like the block barrier: the lane is parked until every lane of
/// `mask` has arrived), or, on a plain host thread (rank 0 of a one-rank
/// world), alone: then `mask` must name lane 0 only.
fn warp(op: WarpOp, mask: u32, value: u32, operand: u32) -> u32 {
    count::bump(Kind::WarpOperation);
    let call = WarpCall {
        op,
        mask,
        value,
        operand,
    };
    runtime::with_current(|rt| match rt {
        Some(rt) => rt.warp(call),
        None => {
            assert!(
                mask == 1,
                "{op} with mask {mask:#x} on a plain host thread (lane 0 of a one-lane warp)"
            );
            let calls = [call; 32];
            super::resolve_warp(mask, &calls)[0]
        }
    })
}

/// `shfl.sync.idx` on the emulator (see [`super::shfl_sync`]).
pub(super) fn shfl_sync(mask: u32, value: u32, src_lane: u32) -> u32 {
    warp(WarpOp::Shfl, mask, value, src_lane)
}

/// `shfl.sync.up` on the emulator (see [`super::shfl_up_sync`]).
pub(super) fn shfl_up_sync(mask: u32, value: u32, delta: u32) -> u32 {
    warp(WarpOp::ShflUp, mask, value, delta)
}

/// `shfl.sync.down` on the emulator (see [`super::shfl_down_sync`]).
pub(super) fn shfl_down_sync(mask: u32, value: u32, delta: u32) -> u32 {
    warp(WarpOp::ShflDown, mask, value, delta)
}

/// `shfl.sync.bfly` on the emulator (see [`super::shfl_xor_sync`]).
pub(super) fn shfl_xor_sync(mask: u32, value: u32, lane_mask: u32) -> u32 {
    warp(WarpOp::ShflXor, mask, value, lane_mask)
}

/// `vote.sync.all` on the emulator (see [`super::vote_all_sync`]).
pub(super) fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    warp(WarpOp::VoteAll, mask, u32::from(predicate), 0) != 0
}

/// `vote.sync.any` on the emulator (see [`super::vote_any_sync`]).
pub(super) fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    warp(WarpOp::VoteAny, mask, u32::from(predicate), 0) != 0
}

/// `vote.sync.ballot` on the emulator (see [`super::vote_ballot_sync`]).
pub(super) fn vote_ballot_sync(mask: u32, predicate: bool) -> u32 {
    warp(WarpOp::VoteBallot, mask, u32::from(predicate), 0)
}

/// `match.any.sync` on the emulator (see [`super::match_any_sync`]).
pub(super) fn match_any_sync(mask: u32, value: u32) -> u32 {
    warp(WarpOp::MatchAny, mask, value, 0)
}

/// `match.all.sync.b32` on the emulator (see [`super::match_all_sync`]).
pub(super) fn match_all_sync(mask: u32, value: u32) -> bool {
    warp(WarpOp::MatchAll, mask, value, 0) != 0
}

/// `match.all.sync.b64` on the emulator (see
/// [`super::match_all_sync_u64`]): the value's halves as the call's value
/// and operand.
pub(super) fn match_all_sync_u64(mask: u32, value: u64) -> bool {
    warp(WarpOp::MatchAll64, mask, value as u32, (value >> 32) as u32) != 0
}

/// `bar.warp.sync` on the emulator (see [`super::warp_sync`]).
pub(super) fn warp_sync(mask: u32) {
    warp(WarpOp::Sync, mask, 0, 0);
}

/// Every lane of the caller's warp that exists (see [`super::active_mask`]).
pub(super) fn active_mask() -> u32 {
    super::warp_mask()
}

/// The block's launch-sized shared memory: a buffer of the block's state
/// in the emulator ([`runtime::RankRuntime::launch_shared`]); null on a
/// plain host thread, which has no launch.
pub(super) fn launch_shared_base() -> *mut u8 {
    runtime::with_current(|rt| rt.map_or(core::ptr::null_mut(), |rt| rt.launch_shared()))
}

/// Bytes of the block's launch-sized shared memory (0 on a plain host
/// thread).
pub(super) fn launch_shared_len() -> usize {
    runtime::with_current(|rt| rt.map_or(0, |rt| rt.launch_shared_bytes()))
}

/// The emulator's worker thread running the rank (0 on a plain thread).
pub(super) fn sm_id() -> u32 {
    runtime::with_current(|rt| rt.map_or(0, |r| r.sm_id()))
}

/// The block's shared scratch: a buffer of the block's state in the
/// emulator ([`runtime::RankRuntime::shared_block`]); on a plain host
/// thread, a buffer of that thread.
pub(super) fn shared_block_base() -> *mut u8 {
    runtime::with_current(|rt| match rt {
        Some(rt) => rt.shared_block(),
        None => {
            #[repr(align(16))]
            struct Scratch(core::cell::UnsafeCell<[u8; SCRATCH_BYTES]>);
            const SCRATCH_BYTES: usize = super::SHARED_BLOCK_BYTES + super::BLOCK_WORDS_BYTES;
            std::thread_local! {
                static SCRATCH: Scratch = const { Scratch(core::cell::UnsafeCell::new([0; SCRATCH_BYTES])) };
            }
            SCRATCH.with(|s| s.0.get() as *mut u8)
        }
    })
}

/// The block's library words: the [`super::BLOCK_WORDS_BYTES`] after its
/// shared scratch (the emulator's buffer of the block holds both; so does
/// a plain host thread's).
pub(super) fn block_words_base() -> *mut u8 {
    // SAFETY: the scratch's buffer is `SHARED_BLOCK_BYTES +
    // BLOCK_WORDS_BYTES` long (the scheduler's `Scratch`, the thread's
    // below), 16-byte aligned.
    unsafe { shared_block_base().add(super::SHARED_BLOCK_BYTES) }
}

/// Gives way after `polls` consecutive failed polls of one wait.
pub(super) fn snooze(polls: u32, max_ns: u32) {
    let handled = runtime::with_current(|rt| match rt {
        Some(rt) => {
            if runtime::model_on() {
                // The GPU's sleep (nvptx.rs `snooze`), in virtual time.
                rt.access(Access::Sleep {
                    ns: (32u32 << polls.min(26)).min(max_ns),
                });
            }
            rt.suspend(runtime::Suspend::Poll { fresh: polls == 0 });
            true
        }
        None => false,
    });
    if !handled {
        std::thread::yield_now();
    }
}

/// Nanoseconds of a monotonic clock (the GPU's `%globaltimer`); in the
/// emulator's timing mode, the rank's virtual clock.
pub fn clock_ns() -> u64 {
    if runtime::model_on() {
        if let Some(ns) = runtime::with_current(|rt| rt.map(|rt| rt.model_ns())) {
            return ns;
        }
    }
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let start = START.get_or_init(Instant::now);
    start.elapsed().as_nanos() as u64
}

/// Whether a receive's scan of one sender's slot states also loads that
/// sender's first slot's header, before it knows what the slot holds
/// (`engine::find_in`): always, but under loom.
#[inline(always)]
pub const fn guess_headers() -> bool {
    true
}

/// Whether another rank can read `ptr` directly (on the GPU: global memory,
/// not a thread's local stack). On the host every address is shared, but
/// for an address on the running rank's own stack when the emulator keeps
/// stacks local as the GPU does (`CpuOptions::local_stacks`).
pub fn is_shared_address(ptr: *const u8) -> bool {
    runtime::with_current(|rt| rt.is_none_or(|r| !r.is_local(ptr as usize)))
}

/// Copies `len` bytes between shared locations (a message slot, a sender's
/// buffer, a receive buffer).
///
/// # Safety
/// Both ranges valid for `len` bytes and not overlapping; the protocol orders
/// the copy against every concurrent access with acquire/release operations.
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    timed(Access::Copy {
        bytes: len,
        wide: false,
        src: src as usize,
        dst: dst as usize,
    });
    // SAFETY: forwarded from the caller.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Copies `len` bytes of a large message (a rendezvous): on the GPU with
/// 16-byte loads and stores, several in flight, where both ends are
/// 16-byte aligned; here as [`copy_bytes`].
///
/// # Safety
/// As for [`copy_bytes`].
pub unsafe fn copy_wide(dst: *mut u8, src: *const u8, len: usize) {
    // Priced as the GPU's runs it: 64-byte groups of vectors while both
    // ends are 16-byte aligned, the rest (all of it, when an end is not)
    // by `copy_bytes`.
    let wide = if ((dst as usize) | (src as usize)).is_multiple_of(16) {
        len / 64 * 64
    } else {
        0
    };
    if wide > 0 {
        timed(Access::Copy {
            bytes: wide,
            wide: true,
            src: src as usize,
            dst: dst as usize,
        });
    }
    if wide < len || len == 0 {
        timed(Access::Copy {
            bytes: len - wide,
            wide: false,
            src: src as usize + wide,
            dst: dst as usize + wide,
        });
    }
    // SAFETY: forwarded from the caller.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Stores a 64-bit word into a message payload with a plain store (the
/// address of a rendezvous sender's buffer); published like the payload.
///
/// # Safety
/// `ptr` 8-byte aligned and valid; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn store_payload_u64(ptr: *mut u8, value: u64) {
    timed(Access::Plain {
        addr: ptr as usize,
        bytes: 8,
        write: true,
    });
    // SAFETY: forwarded from the caller.
    unsafe { (ptr as *mut u64).write(value) }
}

/// Loads a 64-bit word of a message payload stored by [`store_payload_u64`].
///
/// # Safety
/// As for [`store_payload_u64`].
pub unsafe fn load_payload_u64(ptr: *const u8) -> u64 {
    timed(Access::Plain {
        addr: ptr as usize,
        bytes: 8,
        write: false,
    });
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
    timed(Access::Plain {
        addr: ptr as usize,
        bytes: core::mem::size_of::<T>(),
        write: false,
    });
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
    timed(Access::Plain {
        addr: src as usize,
        bytes: len,
        write: false,
    });
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
    timed(Access::Plain {
        addr: dst as usize,
        bytes: len,
        write: true,
    });
    let bytes = value.to_le_bytes();
    // SAFETY: forwarded from the caller; `len <= 8`.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len.min(8)) }
}

/// Four relaxed loads as one vector load ([`super::load_relaxed_x4`]): a
/// batch that the timing model counts as one load of any batch around it,
/// as the GPU's one `ld.v4` instruction is.
#[inline(always)]
pub(super) fn load_relaxed_x4(words: &[AtomicU32; 4]) -> [u32; 4] {
    timed(Access::BatchBegin { vector: true });
    let v = core::array::from_fn(|k| words[k].load(Ordering::Relaxed));
    timed(Access::BatchEnd);
    v
}

/// Four relaxed stores as one vector store ([`super::store_relaxed_x4`]):
/// the timing model counts them as one store, as the GPU's one `st.v4`
/// instruction is.
#[inline(always)]
pub(super) fn store_relaxed_x4(words: &[AtomicU32; 4], values: [u32; 4]) {
    timed(Access::BatchBegin { vector: true });
    for (w, v) in words.iter().zip(values) {
        w.store(v, Ordering::Relaxed);
    }
    timed(Access::BatchEnd);
}

/// Two relaxed 64-bit loads as one vector load
/// ([`super::load_relaxed_x2_u64`]): one load of any batch around it to the
/// timing model, as the GPU's one `ld.v2` instruction is.
#[inline(always)]
pub(super) fn load_relaxed_x2_u64(words: &[AtomicU64; 2]) -> [u64; 2] {
    timed(Access::BatchBegin { vector: true });
    let v = [words[0].load(Ordering::Relaxed), words[1].load(Ordering::Relaxed)];
    timed(Access::BatchEnd);
    v
}

/// Two relaxed 64-bit stores as one vector store
/// ([`super::store_relaxed_x2_u64`]): one store to the timing model, as
/// the GPU's one `st.v2` instruction is.
#[inline(always)]
pub(super) fn store_relaxed_x2_u64(words: &[AtomicU64; 2], values: [u64; 2]) {
    timed(Access::BatchBegin { vector: true });
    for (w, v) in words.iter().zip(values) {
        w.store(v, Ordering::Relaxed);
    }
    timed(Access::BatchEnd);
}

/// Whether [`super::load_relaxed_batch`] loads its repeated words too:
/// only the loads a batch needs: fewer reports to the timing model.
pub(super) const LOADS_REPEAT: bool = false;

/// A batch of independent loads begins or ends (timing mode).
pub(super) fn batch(begin: bool) {
    timed(if begin {
        Access::BatchBegin { vector: false }
    } else {
        Access::BatchEnd
    });
}

/// A plain access of global memory (timing mode).
#[inline(always)]
pub(super) fn note_global(addr: usize, bytes: usize, write: bool) {
    timed(Access::Plain { addr, bytes, write });
}

/// The world's memory itself: the host's copy of the header is there.
#[inline(always)]
pub(super) fn descriptors(world: *mut u8) -> *const u8 {
    world
}

/// A read of a world descriptor's field: counted on this OS thread until
/// the running rank's next access or switch (`runtime::take_descriptor_reads`).
#[inline(always)]
pub(super) fn note_descriptor(which: Descriptor) {
    runtime::DESCRIPTOR_READS.with(|c| {
        let mut reads = c.get();
        reads[which as usize] = reads[which as usize].wrapping_add(1);
        c.set(reads)
    })
}

/// A plain access of the rank's own global memory (timing mode).
#[inline(always)]
pub(super) fn note_private(addr: usize, bytes: usize, write: bool) {
    timed(Access::Private { addr, bytes, write });
}

/// A prefetch of the rank's own global memory into L1 (timing mode).
#[inline(always)]
pub(super) fn prefetch_private(addr: *const u8, bytes: usize) {
    timed(Access::Prefetch {
        addr: addr as usize,
        bytes,
    });
}

/// A volatile access of global memory (timing mode).
#[inline(always)]
pub(super) fn note_volatile(addr: usize, bytes: usize, write: bool) {
    timed(Access::Volatile { addr, bytes, write });
}

pub mod runtime {
    //! The hook through which the CPU emulator runs ranks.
    //!
    //! The emulator installs, on each worker thread and before it resumes a
    //! rank, a pointer to that rank's [`RankRuntime`]. The shim asks it for the
    //! rank's coordinates and suspends the rank through it at block barriers
    //! and failed polls.

    extern crate std;

    use super::{Coordinates, Ordering, WarpCall};
    use core::cell::Cell;

    /// One access of a rank, as the timing model sees it (docs/model.md):
    /// reported before it happens, so that the model can first run the
    /// ranks whose virtual clocks are behind.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Access {
        /// An atomic load of the word at `addr`.
        Load {
            /// Its ordering.
            order: Ordering,
            /// The word's address.
            addr: usize,
        },
        /// An atomic store to the word at `addr`.
        Store {
            /// Its ordering.
            order: Ordering,
            /// The word's address.
            addr: usize,
        },
        /// A read-modify-write of the word at `addr`.
        Rmw {
            /// Its ordering.
            order: Ordering,
            /// The word's address.
            addr: usize,
        },
        /// A read-modify-write of the word at `addr` with block scope
        /// (`fetch_add_block`): its orderings pair within the block alone.
        BlockRmw {
            /// Its ordering.
            order: Ordering,
            /// The word's address.
            addr: usize,
        },
        /// A read-modify-write of the word at `addr` whose old value the
        /// rank does not wait for (PTX `red`; `Relaxed` or `Release`).
        Reduce {
            /// Its ordering.
            order: Ordering,
            /// The word's address.
            addr: usize,
        },
        /// A fence (not `Relaxed`).
        Fence {
            /// Its ordering.
            order: Ordering,
        },
        /// Plain loads or stores of `bytes` bytes at `addr` (a payload
        /// word, another rank's cell).
        Plain {
            /// The first byte's address.
            addr: usize,
            /// How many bytes.
            bytes: usize,
            /// Stores (else loads).
            write: bool,
        },
        /// A volatile load or store of `bytes` bytes at `addr` (a
        /// `GlobalSlice` element: `ld.volatile`/`st.volatile` on the GPU).
        Volatile {
            /// The first byte's address.
            addr: usize,
            /// How many bytes.
            bytes: usize,
            /// A store (else a load).
            write: bool,
        },
        /// Plain loads or stores of `bytes` bytes at `addr` of the rank's
        /// own global memory (its header and request records), which no
        /// other rank touches.
        Private {
            /// The first byte's address.
            addr: usize,
            /// How many bytes.
            bytes: usize,
            /// Stores (else loads).
            write: bool,
        },
        /// A prefetch of `bytes` bytes at `addr` of the rank's own global
        /// memory into L1 (`shim::prefetch_private`): no value returns.
        Prefetch {
            /// The first byte's address.
            addr: usize,
            /// How many bytes (in one line).
            bytes: usize,
        },
        /// A copy of `bytes` bytes by one thread.
        Copy {
            /// How many bytes.
            bytes: usize,
            /// `copy_wide` (16-byte vectors, several in flight) rather
            /// than `copy_bytes` (one word at a time).
            wide: bool,
            /// The source's first byte.
            src: usize,
            /// The destination's first byte.
            dst: usize,
        },
        /// `reads` plain reads of fields of the world descriptor at `addr`
        /// (its layout or its configuration) since the rank's previous
        /// access: `shim::note_descriptor`'s count, reported by the
        /// emulator itself.
        Descriptor {
            /// The descriptor's first byte.
            addr: usize,
            /// How many reads.
            reads: u32,
        },
        /// A backoff sleep of `ns` nanoseconds (`nanosleep`), before the
        /// rank gives way after a failed poll.
        Sleep {
            /// The requested sleep.
            ns: u32,
        },
        /// Loads that do not depend on one another follow, until
        /// [`Access::BatchEnd`] (`shim::independent`); batches nest.
        BatchBegin {
            /// The batch's loads are the words of one vector load on the
            /// GPU (`shim::load_relaxed_x4`): one load of the batch around
            /// it, not four; or its stores the words of one vector store
            /// (`shim::store_relaxed_x4`): one store.
            vector: bool,
        },
        /// The batch ends.
        BatchEnd,
    }

    /// Why a rank hands the core back to the scheduler.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Suspend {
        /// A poll of shared memory failed. `fresh` is true when the rank did
        /// something (completed a step, wrote shared state) since it was last
        /// resumed; false when it only polled the same wait again and failed.
        Poll {
            /// Something happened since the last suspension.
            fresh: bool,
        },
        /// The rank arrived at its block's barrier (its predicate is in its
        /// runtime, [`RankRuntime::block_barrier`]); resume it when every
        /// rank of the block that has not returned has arrived.
        BlockBarrier,
        /// The rank arrived at a warp collective (the call is in its
        /// runtime, [`RankRuntime::warp`]); resume it when every lane of
        /// the call's mask has arrived.
        Warp,
        /// Timing mode: the rank's virtual clock passed another runnable
        /// rank's, so that rank runs first; the rank is interrupted before
        /// an access, not in a poll.
        Time,
    }

    /// What the emulator provides for one running rank.
    pub trait RankRuntime {
        /// The rank's thread/block coordinates.
        fn coordinates(&self) -> Coordinates;
        /// Suspends the rank until the scheduler resumes it.
        fn suspend(&self, why: Suspend);
        /// Takes part in the block barrier: records `predicate`, suspends
        /// with [`Suspend::BlockBarrier`] and returns how many ranks of the
        /// block arrived with their predicate true once the barrier
        /// completed (every rank of the block that has not returned arrived:
        /// a returned rank does not hold a block barrier, as PTX `exit`
        /// releases one).
        fn block_barrier(&self, predicate: bool) -> u32;
        /// Takes part in a warp collective: records `call`, suspends with
        /// [`Suspend::Warp`] and returns the lane's result
        /// ([`resolve_warp`](crate::shim::resolve_warp)) once every lane of
        /// `call.mask` has arrived.
        fn warp(&self, call: WarpCall) -> u32;
        /// The rank's block's shared scratch:
        /// [`SHARED_BLOCK_BYTES`](crate::shim::SHARED_BLOCK_BYTES) bytes,
        /// 16-byte aligned, the same for every rank of the block, followed
        /// by its [`BLOCK_WORDS_BYTES`](crate::shim::BLOCK_WORDS_BYTES) of
        /// library words ([`block_words`](crate::shim::block_words)), zeroed
        /// at launch.
        fn shared_block(&self) -> *mut u8;
        /// The rank's block's launch-sized shared memory: the world's
        /// `launch_shared_bytes`, 16-byte aligned, zeroed at launch, the
        /// same for every rank of the block.
        fn launch_shared(&self) -> *mut u8;
        /// Bytes of [`launch_shared`](Self::launch_shared)'s memory.
        fn launch_shared_bytes(&self) -> usize;
        /// The worker running the rank (the emulator's `%smid`).
        fn sm_id(&self) -> u32;
        /// Whether `addr` is in the rank's local memory, which no other
        /// rank may reach (its stack, when the emulator keeps stacks local
        /// as the GPU does).
        fn is_local(&self, addr: usize) -> bool;
        /// Timing mode: charges `access` to the rank's virtual clock, and
        /// first suspends the rank with [`Suspend::Time`] while another
        /// runnable rank's clock is behind its own. Called only while
        /// [`model_on`] holds.
        fn access(&self, access: Access) {
            let _ = access;
        }
        /// Timing mode: the rank's virtual clock in nanoseconds (what
        /// `clock_ns` returns).
        fn model_ns(&self) -> u64 {
            0
        }
    }

    std::thread_local! {
        static MODEL: Cell<bool> = const { Cell::new(false) };
    }

    /// Turns the timing model's reports on or off for this OS thread (the
    /// emulator's worker, for a run in timing mode), with no descriptor
    /// reads counted.
    pub fn set_model(on: bool) {
        MODEL.with(|m| m.set(on));
        let _ = take_descriptor_reads();
    }

    std::thread_local! {
        /// Reads of each [`Descriptor`](super::Descriptor) by this OS
        /// thread's running rank since they were last taken.
        pub(super) static DESCRIPTOR_READS: Cell<[u32; 2]> = const { Cell::new([0; 2]) };
    }

    /// The reads of each descriptor (indexed by `Descriptor as usize`)
    /// counted on this OS thread since the last call, which zeroes them:
    /// the emulator takes them before each access of a rank in timing mode
    /// and before it switches ranks.
    pub fn take_descriptor_reads() -> [u32; 2] {
        DESCRIPTOR_READS.with(|c| c.replace([0; 2]))
    }

    /// Whether this OS thread's ranks run in timing mode.
    #[inline(always)]
    pub fn model_on() -> bool {
        MODEL.with(|m| m.get())
    }

    std::thread_local! {
        static CURRENT: Cell<Option<*const dyn RankRuntime>> = const { Cell::new(None) };
    }

    /// Synchronising operations, by kind, that the device code of one rank
    /// (or one OS thread) issued through the shim, and its block barriers
    /// and warp collectives (scheduler events, counted apart).
    ///
    /// An operation is *synchronising* when it orders other accesses or is
    /// a read-modify-write: an atomic load with `Acquire` (or `AcqRel`), a
    /// store with `Release` (or `AcqRel`), every read-modify-write (swap,
    /// add, or, compare-and-swap, whether or not it stores), and every fence
    /// but a `Relaxed` one (which is none). Relaxed read-modify-writes order
    /// nothing but are memory round trips on a GPU, so they are counted on
    /// their own; relaxed loads and stores, plain accesses and copies are
    /// not counted.
    ///
    /// Counting is per OS thread and costs one thread-local increment per
    /// operation; [`take_sync_counts`] reads and resets the thread's block.
    /// The CPU emulator takes it after every resumption of a rank, so its
    /// per-rank totals (`LaunchReport::sync_counts` in gpu-mpi-host) hold
    /// exactly what each rank issued.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct SyncCounts {
        /// Atomic loads with `Acquire` (or `AcqRel`) ordering.
        pub acquire_loads: u64,
        /// Atomic stores with `Release` (or `AcqRel`) ordering.
        pub release_stores: u64,
        /// Read-modify-writes with `Acquire` ordering.
        pub acquire_rmws: u64,
        /// Read-modify-writes with `Release` ordering.
        pub release_rmws: u64,
        /// Read-modify-writes with `AcqRel` ordering.
        pub acq_rel_rmws: u64,
        /// Read-modify-writes with `Relaxed` ordering (not synchronising,
        /// but a memory round trip each).
        pub relaxed_rmws: u64,
        /// Fences (`Acquire`, `Release` or `AcqRel`).
        pub fences: u64,
        /// Block barriers (plain or counting): scheduler events of the whole
        /// block, not memory operations, so not in
        /// [`total`](Self::total).
        pub block_barriers: u64,
        /// Warp collectives (shuffles, votes, match, `bar.warp.sync`):
        /// scheduler events of a warp, not in [`total`](Self::total).
        pub warp_operations: u64,
    }

    impl SyncCounts {
        /// Read-modify-writes with an ordering other than `Relaxed`.
        pub const fn ordered_rmws(&self) -> u64 {
            self.acquire_rmws + self.release_rmws + self.acq_rel_rmws
        }

        /// Every synchronising operation: acquire loads, release stores,
        /// ordered read-modify-writes and fences (relaxed read-modify-writes
        /// are not among them).
        pub const fn synchronizing(&self) -> u64 {
            self.acquire_loads + self.release_stores + self.ordered_rmws() + self.fences
        }

        /// Every counted operation: [`synchronizing`](Self::synchronizing)
        /// plus the relaxed read-modify-writes.
        pub const fn total(&self) -> u64 {
            self.synchronizing() + self.relaxed_rmws
        }

        fn fields(&self) -> [u64; count::KINDS] {
            [
                self.acquire_loads,
                self.release_stores,
                self.acquire_rmws,
                self.release_rmws,
                self.acq_rel_rmws,
                self.relaxed_rmws,
                self.fences,
                self.block_barriers,
                self.warp_operations,
            ]
        }

        fn from_fields(f: [u64; count::KINDS]) -> Self {
            SyncCounts {
                acquire_loads: f[0],
                release_stores: f[1],
                acquire_rmws: f[2],
                release_rmws: f[3],
                acq_rel_rmws: f[4],
                relaxed_rmws: f[5],
                fences: f[6],
                block_barriers: f[7],
                warp_operations: f[8],
            }
        }
    }

    impl core::ops::AddAssign for SyncCounts {
        fn add_assign(&mut self, other: SyncCounts) {
            let (a, b) = (self.fields(), other.fields());
            *self = SyncCounts::from_fields(core::array::from_fn(|i| a[i].wrapping_add(b[i])));
        }
    }

    impl core::ops::Add for SyncCounts {
        type Output = SyncCounts;
        fn add(mut self, other: SyncCounts) -> SyncCounts {
            self += other;
            self
        }
    }

    impl core::iter::Sum for SyncCounts {
        fn sum<I: Iterator<Item = SyncCounts>>(iter: I) -> SyncCounts {
            iter.fold(SyncCounts::default(), |a, b| a + b)
        }
    }

    /// Returns the synchronising operations this OS thread issued since the
    /// last call (or since it started) and resets its counters.
    pub fn take_sync_counts() -> SyncCounts {
        SyncCounts::from_fields(count::take())
    }

    pub(in super::super) mod count {
        //! The thread's counter block.

        extern crate std;

        use core::cell::Cell;

        /// Kinds of counted operations, in [`super::SyncCounts`]'s field order.
        #[derive(Clone, Copy)]
        pub(in super::super::super) enum Kind {
            AcquireLoad = 0,
            ReleaseStore = 1,
            AcquireRmw = 2,
            ReleaseRmw = 3,
            AcqRelRmw = 4,
            RelaxedRmw = 5,
            Fence = 6,
            BlockBarrier = 7,
            WarpOperation = 8,
        }

        /// Number of kinds.
        pub(super) const KINDS: usize = 9;

        std::thread_local! {
            static COUNTS: [Cell<u64>; KINDS] = const { [const { Cell::new(0) }; KINDS] };
        }

        /// Counts one operation of `kind` on this thread.
        #[inline(always)]
        pub(in super::super::super) fn bump(kind: Kind) {
            COUNTS.with(|c| {
                let c = &c[kind as usize];
                c.set(c.get().wrapping_add(1));
            });
        }

        /// This thread's counts; resets them.
        pub(super) fn take() -> [u64; KINDS] {
            COUNTS.with(|c| core::array::from_fn(|i| c[i].replace(0)))
        }
    }

    /// Installs `rt` as the running rank of this OS thread (or none).
    ///
    /// # Safety
    /// `rt` must stay valid until it is replaced or cleared on this thread.
    pub unsafe fn set_current(rt: Option<*const dyn RankRuntime>) {
        CURRENT.with(|c| c.set(rt));
    }

    /// Calls `f` with the running rank's runtime, if any.
    pub fn with_current<R>(f: impl FnOnce(Option<&dyn RankRuntime>) -> R) -> R {
        let ptr = CURRENT.with(|c| c.get());
        // SAFETY: `set_current`'s caller keeps the runtime valid while installed.
        let rt = ptr.map(|p| unsafe { &*p });
        f(rt)
    }
}

/// Kernel entry point for the host: nothing beyond the descriptor that
/// [`kernel!`](crate::kernel) always emits.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_entry {
    ($name:ident, $argty:ty) => {};
}
