//! The one module that touches the hardware.
//!
//! Every atomic, fence, thread/block index, block barrier, warp collective
//! (shuffle, vote, match, `bar.warp.sync`), block-shared scratch, sleep and
//! clock used by device code goes through here, with one implementation per target chosen
//! by `cfg` (the crossbeam pattern):
//!
//! | cfg | file | what backs it |
//! |---|---|---|
//! | `target_arch = "nvptx64"` | `nvptx.rs` | inline PTX (`ld.acquire.gpu`, `atom.acq_rel.gpu`, `bar.sync`, `barrier.red.popc`, `shfl.sync`, `vote.sync`, `match.any.sync`, `.shared`, `nanosleep`, `%globaltimer`) |
//! | `loom` | `loom.rs` | loom's model-checked atomics, one loom thread per rank; warp collectives on a loom mutex and condvar per warp |
//! | otherwise (the host) | `host.rs` | `core::sync::atomic` on the world memory; indices, block barrier, warp collectives, shared scratch and backoff come from the CPU emulator's scheduler through [`runtime`] |
//!
//! No other file of the project may use `cfg(target_arch)`.
//!
//! Synchronizing operations have device ("gpu") scope: the world lives in
//! one GPU's global memory and nothing outside the kernel races with it.
//! The one exception is [`AtomicU64::fetch_add_block`], block (`.cta`)
//! scope, for words that only the ranks of one block touch (the
//! [`block_words`]).

#[cfg(target_arch = "nvptx64")]
#[path = "nvptx.rs"]
mod imp;

#[cfg(all(not(target_arch = "nvptx64"), loom))]
#[path = "loom.rs"]
mod imp;

#[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
#[path = "host.rs"]
mod imp;

pub use imp::*;

/// Memory ordering of one synchronizing operation (scope: the device, but for
/// [`AtomicU64::fetch_add_block`]'s block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// No ordering; atomicity only.
    Relaxed,
    /// Later accesses stay after this load (pairs with a `Release` store or RMW).
    Acquire,
    /// Earlier accesses stay before this store (pairs with an `Acquire` load or RMW).
    Release,
    /// Both, for read-modify-write operations and fences.
    AcqRel,
}

/// Thread, block and grid coordinates of the calling rank (x dimension only:
/// the world is a 1-D grid of 1-D blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinates {
    /// Thread index inside its block (`threadIdx.x`).
    pub thread: u32,
    /// Block index inside the grid (`blockIdx.x`).
    pub block: u32,
    /// Threads per block (`blockDim.x`).
    pub block_dim: u32,
    /// Blocks in the grid (`gridDim.x`).
    pub grid_dim: u32,
}

/// Exponential backoff for a wait loop that polls shared memory.
///
/// `snooze` is called after each failed poll. On the GPU it sleeps a growing
/// number of nanoseconds; on the CPU emulator it hands the core to another rank
/// and tells the scheduler whether anything happened since the last snooze
/// (the scheduler's exact deadlock detection rests on that); under loom it
/// yields the model thread.
#[derive(Debug)]
pub struct Backoff {
    polls: u32,
    max_ns: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

impl Backoff {
    /// A backoff for a new wait, sleeping at most
    /// [`DEFAULT_BACKOFF_MAX_NS`](crate::layout::DEFAULT_BACKOFF_MAX_NS) on the GPU.
    pub const fn new() -> Self {
        Backoff::with_max_ns(crate::layout::DEFAULT_BACKOFF_MAX_NS)
    }

    /// A backoff whose sleeps on the GPU grow to at most `max_ns`
    /// nanoseconds (at least 1).
    pub const fn with_max_ns(max_ns: u32) -> Self {
        Backoff {
            polls: 0,
            max_ns: if max_ns == 0 { 1 } else { max_ns },
        }
    }

    /// A backoff whose next snooze counts as a repeated failed poll (not
    /// fresh): for the polls of non-blocking calls and of requests.
    pub(crate) const fn idle(max_ns: u32) -> Self {
        let mut b = Backoff::with_max_ns(max_ns);
        b.polls = 1;
        b
    }

    /// Sleeps from now on grow to at most `max_ns` nanoseconds (at least
    /// 1): for a wait that learns its bound only once its first poll failed.
    pub(crate) const fn set_max_ns(&mut self, max_ns: u32) {
        self.max_ns = if max_ns == 0 { 1 } else { max_ns };
    }

    /// Failed polls since the wait began or since the last [`Backoff::progressed`].
    pub const fn polls(&self) -> u32 {
        self.polls
    }

    /// Says that the caller changed shared state or completed a step since the
    /// last snooze, so the next snooze is not a no-progress poll.
    ///
    /// This is a contract, not a hint: the emulator's exact deadlock detection
    /// treats a snooze after a failed poll with no `progressed` call as "this
    /// rank wrote nothing". A wait loop whose poll writes shared memory (a
    /// completed sub-step of a send-receive, a streamed chunk) and then
    /// snoozes without calling this can make the emulator report a deadlock
    /// that is not one.
    pub fn progressed(&mut self) {
        self.polls = 0;
    }

    /// Gives way after a failed poll.
    pub fn snooze(&mut self) {
        imp::snooze(self.polls, self.max_ns);
        self.polls = self.polls.saturating_add(1);
    }
}

/// Returns a reference to the 32-bit atomic at `base + offset`.
///
/// # Safety
/// `base + offset` must be 4-byte aligned, inside the world memory, valid for
/// the lifetime `'a`, and only ever accessed atomically.
pub unsafe fn atomic_u32_at<'a>(base: *mut u8, offset: usize) -> &'a AtomicU32 {
    // SAFETY: the caller promises alignment, validity and atomic-only access;
    // AtomicU32 is `repr(transparent)` over a `u32` cell in every implementation.
    unsafe { &*(base.add(offset) as *const AtomicU32) }
}

/// Returns a reference to the 64-bit atomic at `base + offset`.
///
/// # Safety
/// As for [`atomic_u32_at`], with 8-byte alignment.
pub unsafe fn atomic_u64_at<'a>(base: *mut u8, offset: usize) -> &'a AtomicU64 {
    // SAFETY: as in `atomic_u32_at`.
    unsafe { &*(base.add(offset) as *const AtomicU64) }
}

/// Returns a reference to the four 32-bit atomics at `base + offset`.
///
/// # Safety
/// As for [`atomic_u32_at`], for all four words.
pub unsafe fn atomic_u32x4_at<'a>(base: *mut u8, offset: usize) -> &'a [AtomicU32; 4] {
    // SAFETY: as in `atomic_u32_at`; an array of `repr(transparent)` cells
    // is the four words in a row.
    unsafe { &*(base.add(offset) as *const [AtomicU32; 4]) }
}

/// Relaxed loads of four consecutive words as one access: on the GPU one
/// 16-byte vector load (`ld.relaxed.gpu.v4.u32`; each word is read
/// atomically, the four are not one atomic read) when `words` is 16-byte
/// aligned, else four loads in one batch ([`independent`]). On the
/// emulator and under loom four loads, which the timing model counts as one
/// load of a batch when they are a vector load on the GPU.
#[inline(always)]
pub fn load_relaxed_x4(words: &[AtomicU32; 4]) -> [u32; 4] {
    if (words.as_ptr() as usize).is_multiple_of(16) {
        imp::load_relaxed_x4(words)
    } else {
        independent(|| core::array::from_fn(|k| words[k].load(Ordering::Relaxed)))
    }
}

/// Relaxed stores of four consecutive words as one access: on the GPU one
/// 16-byte vector store (`st.relaxed.gpu.v4.u32`; each word is written
/// atomically, the four are not one atomic write) when `words` is 16-byte
/// aligned, else four stores. On the emulator and under loom four stores,
/// which the timing model counts as one store when they are a vector
/// store on the GPU.
#[inline(always)]
pub fn store_relaxed_x4(words: &[AtomicU32; 4], values: [u32; 4]) {
    if (words.as_ptr() as usize).is_multiple_of(16) {
        imp::store_relaxed_x4(words, values)
    } else {
        // Written out: a loop over `values` kept them in local memory.
        words[0].store(values[0], Ordering::Relaxed);
        words[1].store(values[1], Ordering::Relaxed);
        words[2].store(values[2], Ordering::Relaxed);
        words[3].store(values[3], Ordering::Relaxed);
    }
}

/// Relaxed loads of two consecutive 64-bit words as one access: on the GPU
/// one 16-byte vector load (`ld.relaxed.gpu.v2.u64`; each word is read
/// atomically, the two are not one atomic read) when `words` is 16-byte
/// aligned, else two loads in one batch ([`independent`]). On the emulator
/// and under loom two loads, which the timing model counts as one load of a
/// batch when they are a vector load on the GPU.
#[inline(always)]
pub fn load_relaxed_x2_u64(words: &[AtomicU64; 2]) -> [u64; 2] {
    if (words.as_ptr() as usize).is_multiple_of(16) {
        imp::load_relaxed_x2_u64(words)
    } else {
        independent(|| [words[0].load(Ordering::Relaxed), words[1].load(Ordering::Relaxed)])
    }
}

/// Relaxed stores of two consecutive 64-bit words as one access: on the
/// GPU one 16-byte vector store (`st.relaxed.gpu.v2.u64`; each word is
/// written atomically, the two are not one atomic write) when `words` is
/// 16-byte aligned, else two stores. On the emulator and under loom two
/// stores, which the timing model counts as one store when they are a
/// vector store on the GPU.
#[inline(always)]
pub fn store_relaxed_x2_u64(words: &[AtomicU64; 2], values: [u64; 2]) {
    if (words.as_ptr() as usize).is_multiple_of(16) {
        imp::store_relaxed_x2_u64(words, values)
    } else {
        words[0].store(values[0], Ordering::Relaxed);
        words[1].store(values[1], Ordering::Relaxed);
    }
}

/// Bytes of the per-block scratch that [`shared_block`] returns: static
/// block-shared memory on the GPU (one `.shared` array per kernel that uses
/// it), a buffer of the block's state on the emulator and under loom.
pub const SHARED_BLOCK_BYTES: usize = 4096;

/// The calling block's shared scratch, at least `N` bytes (`N` at most
/// [`SHARED_BLOCK_BYTES`], checked at compile time), 16-byte aligned.
///
/// Every call, whatever `N`, returns the same area for all ranks of a block
/// (one area per block, not one per call site): `N` only states how much of
/// it the caller uses. The content is undefined at kernel start (zero on the
/// emulator); ranks order their accesses with [`block_barrier`] (or a
/// [`warp_sync`] among the lanes of one warp), as `__shared__` memory in CUDA.
/// The pointer is a generic address (usable by plain loads and stores), not
/// shared with other blocks: [`is_shared_address`] is false for it on the GPU
/// (true on the emulator, where every address counts as shared).
#[doc(alias = "__shared__")]
pub fn shared_block<const N: usize>() -> *mut u8 {
    const {
        assert!(
            N <= SHARED_BLOCK_BYTES,
            "shared_block::<N>: N exceeds SHARED_BLOCK_BYTES"
        );
    }
    imp::shared_block_base()
}

/// The calling block's shared memory sized at launch (CUDA's dynamic
/// shared memory, `extern __shared__`): `WorldConfig::launch_shared_bytes`
/// ([`launch_shared_bytes`] says how many the launch gave), 16-byte
/// aligned, the same area for every rank of the block and
/// apart from [`shared_block`]'s scratch. Its content is undefined at
/// kernel start (zero on the emulator). A generic address, like
/// `shared_block`'s: plain loads and stores and this shim's atomics reach
/// it, ranks of other blocks do not. Under loom the area has
/// [`LOOM_LAUNCH_SHARED_BYTES`].
#[doc(alias = "extern __shared__")]
pub fn launch_shared() -> *mut u8 {
    imp::launch_shared_base()
}

/// Bytes of [`launch_shared`]'s area the launch gave the calling block
/// (PTX `%dynamic_smem_size`; the emulator's buffer; 0 on a plain host
/// thread; [`LOOM_LAUNCH_SHARED_BYTES`] under loom).
pub fn launch_shared_bytes() -> usize {
    imp::launch_shared_len()
}

/// Bytes of [`launch_shared`]'s area under loom, whatever the world's
/// config says (loom models stay small).
pub const LOOM_LAUNCH_SHARED_BYTES: usize = 1024;

/// Bytes of [`block_words`]' area: 264 words of 8 bytes.
pub const BLOCK_WORDS_BYTES: usize = 2112;

/// The calling block's library words: [`BLOCK_WORDS_BYTES`] of shared
/// memory, 16-byte aligned, apart from [`shared_block`]'s scratch and
/// [`launch_shared`]'s area, that keep their values for the whole launch
/// (no collective uses them as scratch). Their content is undefined at
/// kernel start (zero on the emulator and under loom): a kernel's entry
/// ([`kernel::rank_main`](crate::kernel::rank_main)) zeroes those the
/// block can use behind a block barrier before its body runs
/// (`layout::immediate_block_words`). The world's non-blocking
/// collectives keep the tally words of their tree's first level here
/// (`collective::immediate`), reached with this shim's atomics: block
/// scope ([`AtomicU64::fetch_add_block`]) where only the block's ranks
/// touch a word. A generic address, as `shared_block`'s.
pub fn block_words() -> *mut u8 {
    imp::block_words_base()
}

/// Runs `f`, whose loads do not depend on one another (a scan of records
/// or slots), as one batch: on the GPU they are in flight together, so the
/// emulator's timing model (docs/model.md) charges the batch one latency
/// plus `batch_load_ns` per load after the first, instead of one latency
/// per load. On the GPU and under loom this is `f()`.
#[inline(always)]
pub fn independent<R>(f: impl FnOnce() -> R) -> R {
    imp::batch(true);
    let r = f();
    imp::batch(false);
    r
}

/// Relaxed loads of the first `n` of `words` (1 <= `n` <= `N`), as one
/// batch ([`independent`]); `words[k]` for `k >= n` must repeat
/// `words[n - 1]`, whose value the result repeats there. On the GPU all
/// `N` loads are issued back to back and unconditionally (a repeated
/// address costs nothing, a branch between the loads would stall each on
/// its value); on the emulator and under loom only `n` are (under loom
/// each load is a choice point of the model).
#[inline(always)]
pub fn load_relaxed_batch<const N: usize>(words: [&AtomicU32; N], n: usize) -> [u32; N] {
    independent(|| {
        let mut v = [0u32; N];
        for k in 0..N {
            v[k] = if imp::LOADS_REPEAT || k < n {
                words[k].load(Ordering::Relaxed)
            } else {
                v[n - 1]
            };
        }
        v
    })
}

/// Plain loads of `n` (1 <= `n` <= `N`) values of `T` at `first`,
/// `first + stride`, ..., as one batch ([`independent`]), for values
/// other ranks wrote and an acquire published (a last arriver's children's
/// operands). On the GPU all `N` loads are issued back to back and
/// unconditionally, those past `n` repeating the last address (as
/// [`load_relaxed_batch`]'s), so that the values stay in registers; on
/// the emulator and under loom only `n` are, and the rest repeat the last
/// value. The timing model sees each load ([`note_global`]).
///
/// # Safety
/// `first + j × stride` for `j < n` is valid for a read of a `T`,
/// aligned for it, and nobody writes it meanwhile.
#[inline(always)]
pub unsafe fn load_plain_batch<T: Copy, const N: usize>(first: *const u8, stride: usize, n: usize) -> [T; N] {
    independent(|| {
        let mut v = [core::mem::MaybeUninit::<T>::uninit(); N];
        for j in 0..N {
            let at = first.wrapping_add(j.min(n - 1) * stride);
            if imp::LOADS_REPEAT || j < n {
                note_global(at, core::mem::size_of::<T>(), false);
                // SAFETY: one of the first `n` values (the caller's contract).
                v[j].write(unsafe { core::ptr::read(at as *const T) });
            } else {
                v[j] = v[n - 1];
            }
        }
        // SAFETY: every element was written above (`n >= 1`).
        v.map(|x| unsafe { x.assume_init() })
    })
}

/// Says that the caller accesses `bytes` bytes of global memory at `addr`
/// with plain loads (`write` false) or stores (a payload word, another
/// rank's cell, a kernel's own plain slice), for the emulator's timing
/// model. Nothing on the GPU and under loom.
#[inline(always)]
pub fn note_global(addr: *const u8, bytes: usize, write: bool) {
    imp::note_global(addr as usize, bytes, write)
}

/// Says that the caller loads (`write` false) or stores `bytes` bytes of
/// global memory at `addr` with a volatile access (a
/// [`GlobalSlice`](crate::GlobalSlice) element), for the emulator's timing
/// model. On sm_70 and later `ld.volatile` is a strong system-scope load,
/// which L1 never serves: the model charges it a round trip to L2 where a
/// plain load may hit L1. Nothing on the GPU and under loom.
#[inline(always)]
pub fn note_volatile(addr: *const u8, bytes: usize, write: bool) {
    imp::note_volatile(addr as usize, bytes, write)
}

/// Says that the caller accesses `bytes` bytes of its own global memory
/// (its header, its request records: no other rank touches them) at `addr`
/// with a plain load or store, for the emulator's timing model. Nothing on
/// the GPU and under loom.
#[inline(always)]
pub fn note_private(addr: *const u8, bytes: usize, write: bool) {
    imp::note_private(addr as usize, bytes, write)
}

/// Asks for the line of the rank's own global memory at `addr` (`bytes`
/// bytes, in one line) to be brought into L1 without waiting for it: a
/// private word the rank is about to read after an acquire emptied L1 (the
/// send's row after a waiting receive's take: `engine::drain_matching`).
/// `prefetch.L1` on the GPU, a hint the hardware may drop; a load of the
/// line inside a batch for the emulator's timing model, which the batch's
/// end waits for (a prefetch outside a batch costs a load's wait there);
/// nothing under loom. Touches no value: no ordering to pair.
#[inline(always)]
pub fn prefetch_private(addr: *const u8, bytes: usize) {
    imp::prefetch_private(addr, bytes)
}

/// Where a rank reads the world's descriptors (its header: the config and
/// the layout, which the host writes before the launch and nothing writes
/// during it), given the world's memory: on the GPU the module's
/// constant-bank copy of the header, which the host fills before each launch
/// (ptx-builder's `DESCRIPTORS_SYMBOL`), so that each field's read is an
/// operand from the constant cache instead of a load of global memory;
/// elsewhere the world's memory itself. The offsets are the header's
/// (`layout::LAYOUT_OFFSET`, `layout::CONFIG_OFFSET`).
#[inline(always)]
pub fn descriptors(world: *mut u8) -> *const u8 {
    imp::descriptors(world)
}

/// Which of the world's two descriptors a plain read is of (the timing
/// model's [`note_descriptor`]). The host writes both before the launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptor {
    /// The world's layout (`layout::LAYOUT_OFFSET`).
    Layout = 0,
    /// The world's configuration (`layout::CONFIG_OFFSET`).
    Config = 1,
}

/// Says that the caller reads a field of one of the world's descriptors
/// with a plain load, for the emulator's timing model, which prices such
/// reads at the rank's next access (docs/model.md). Only counted where it
/// happens: a report per read would cost the emulator time even with the
/// model off. Nothing on the GPU and under loom.
#[inline(always)]
pub fn note_descriptor(which: Descriptor) {
    imp::note_descriptor(which)
}

/// The mask of every lane of a full warp.
pub const FULL_MASK: u32 = u32::MAX;

/// [`shfl_sync`] of a 64-bit value: two 32-bit shuffles (low, then high half).
pub fn shfl_sync_u64(mask: u32, value: u64, src_lane: u32) -> u64 {
    let lo = shfl_sync(mask, value as u32, src_lane);
    let hi = shfl_sync(mask, (value >> 32) as u32, src_lane);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`shfl_up_sync`] of a 64-bit value: two 32-bit shuffles.
pub fn shfl_up_sync_u64(mask: u32, value: u64, delta: u32) -> u64 {
    let lo = shfl_up_sync(mask, value as u32, delta);
    let hi = shfl_up_sync(mask, (value >> 32) as u32, delta);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`shfl_down_sync`] of a 64-bit value: two 32-bit shuffles.
pub fn shfl_down_sync_u64(mask: u32, value: u64, delta: u32) -> u64 {
    let lo = shfl_down_sync(mask, value as u32, delta);
    let hi = shfl_down_sync(mask, (value >> 32) as u32, delta);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`shfl_xor_sync`] of a 64-bit value: two 32-bit shuffles.
pub fn shfl_xor_sync_u64(mask: u32, value: u64, lane_mask: u32) -> u64 {
    let lo = shfl_xor_sync(mask, value as u32, lane_mask);
    let hi = shfl_xor_sync(mask, (value >> 32) as u32, lane_mask);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// A warp collective: which one, for the emulator's scheduler and its
/// deadlock report (the GPU runs the instruction named by [`WarpOp::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpOp {
    /// [`shfl_sync`].
    Shfl,
    /// [`shfl_up_sync`].
    ShflUp,
    /// [`shfl_down_sync`].
    ShflDown,
    /// [`shfl_xor_sync`].
    ShflXor,
    /// [`vote_all_sync`].
    VoteAll,
    /// [`vote_any_sync`].
    VoteAny,
    /// [`vote_ballot_sync`].
    VoteBallot,
    /// [`match_any_sync`].
    MatchAny,
    /// [`warp_sync`].
    Sync,
    /// [`match_all_sync`].
    MatchAll,
    /// [`match_all_sync_u64`].
    MatchAll64,
}

impl WarpOp {
    /// Every operation, in code order ([`WarpOp::code`] is the index).
    pub const ALL: [WarpOp; 11] = [
        WarpOp::Shfl,
        WarpOp::ShflUp,
        WarpOp::ShflDown,
        WarpOp::ShflXor,
        WarpOp::VoteAll,
        WarpOp::VoteAny,
        WarpOp::VoteBallot,
        WarpOp::MatchAny,
        WarpOp::Sync,
        WarpOp::MatchAll,
        WarpOp::MatchAll64,
    ];

    /// The PTX instruction, e.g. `shfl.sync.idx.b32`.
    pub const fn name(self) -> &'static str {
        match self {
            WarpOp::Shfl => "shfl.sync.idx.b32",
            WarpOp::ShflUp => "shfl.sync.up.b32",
            WarpOp::ShflDown => "shfl.sync.down.b32",
            WarpOp::ShflXor => "shfl.sync.bfly.b32",
            WarpOp::VoteAll => "vote.sync.all.pred",
            WarpOp::VoteAny => "vote.sync.any.pred",
            WarpOp::VoteBallot => "vote.sync.ballot.b32",
            WarpOp::MatchAny => "match.any.sync.b32",
            WarpOp::Sync => "bar.warp.sync",
            WarpOp::MatchAll => "match.all.sync.b32",
            WarpOp::MatchAll64 => "match.all.sync.b64",
        }
    }

    /// A small number for the operation (its index in [`WarpOp::ALL`]).
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The operation of [`WarpOp::code`] `code`, if any.
    pub const fn from_code(code: u32) -> Option<WarpOp> {
        if (code as usize) < WarpOp::ALL.len() {
            Some(WarpOp::ALL[code as usize])
        } else {
            None
        }
    }
}

impl core::fmt::Display for WarpOp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one lane brings to a warp collective (emulator and loom).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpCall {
    /// The operation.
    pub op: WarpOp,
    /// The lanes taking part (`membermask`).
    pub mask: u32,
    /// The lane's value (a predicate as 0 or 1).
    pub value: u32,
    /// Source lane (`Shfl`), delta (`ShflUp`, `ShflDown`), lane mask
    /// (`ShflXor`) or the value's high half (`MatchAll64`, whose `value`
    /// is the low half); 0 otherwise.
    pub operand: u32,
}

/// Results of one complete warp collective: `calls[l]` is lane `l`'s call
/// for every lane `l` of `mask` (the others are ignored); returns each such
/// lane's result at its index (0 elsewhere). All calls must have the same
/// operation and `mask` (the callers check).
///
/// A shuffle whose source lane is outside `mask` or outside the warp gives
/// the lane its own value: PTX's rule for a source outside the warp, and
/// the emulator's choice where PTX leaves the result undefined (a source
/// lane that does not take part).
pub fn resolve_warp(mask: u32, calls: &[WarpCall; 32]) -> [u32; 32] {
    let mut out = [0u32; 32];
    let member = |l: u32| l < 32 && mask & (1 << l) != 0;
    let ballot = (0..32u32)
        .filter(|&l| member(l) && calls[l as usize].value != 0)
        .fold(0u32, |b, l| b | (1 << l));
    for lane in 0..32u32 {
        if !member(lane) {
            continue;
        }
        let c = calls[lane as usize];
        let from = |src: Option<u32>| match src {
            Some(j) if member(j) => calls[j as usize].value,
            _ => c.value,
        };
        out[lane as usize] = match c.op {
            WarpOp::Shfl => from(Some(c.operand & 31)),
            WarpOp::ShflUp => from(lane.checked_sub(c.operand)),
            WarpOp::ShflDown => from(lane.checked_add(c.operand).filter(|&j| j < 32)),
            WarpOp::ShflXor => from(Some(lane ^ (c.operand & 31))),
            WarpOp::VoteAll => u32::from(ballot == mask),
            WarpOp::VoteAny => u32::from(ballot != 0),
            WarpOp::VoteBallot => ballot,
            WarpOp::MatchAny => (0..32u32)
                .filter(|&l| member(l) && calls[l as usize].value == c.value)
                .fold(0u32, |b, l| b | (1 << l)),
            WarpOp::MatchAll | WarpOp::MatchAll64 => u32::from(
                (0..32u32)
                    .filter(|&l| member(l))
                    .all(|l| (calls[l as usize].value, calls[l as usize].operand) == (c.value, c.operand)),
            ),
            WarpOp::Sync => 0,
        };
    }
    out
}

/// The `value` of lane `src_lane` (`__shfl_sync`): every lane of `mask`
/// must call it (with the same mask) before any returns. `src_lane` is taken modulo 32; a source lane outside
/// `mask` gives an undefined value on the GPU (the caller's own value on the
/// emulator).
#[doc(alias = "shfl.sync.idx.b32")]
#[doc(alias = "__shfl_sync")]
pub fn shfl_sync(mask: u32, value: u32, src_lane: u32) -> u32 {
    imp::shfl_sync(mask, value, src_lane)
}

/// The value of lane `lane - delta` (`__shfl_up_sync`); lanes below `delta`
/// keep their own value. Every lane of `mask` must call it.
#[doc(alias = "shfl.sync.up.b32")]
#[doc(alias = "__shfl_up_sync")]
pub fn shfl_up_sync(mask: u32, value: u32, delta: u32) -> u32 {
    imp::shfl_up_sync(mask, value, delta)
}

/// The value of lane `lane + delta` (`__shfl_down_sync`); lanes whose
/// source is past lane 31 keep their own value. Every lane of `mask` must
/// call it.
#[doc(alias = "shfl.sync.down.b32")]
#[doc(alias = "__shfl_down_sync")]
pub fn shfl_down_sync(mask: u32, value: u32, delta: u32) -> u32 {
    imp::shfl_down_sync(mask, value, delta)
}

/// The value of lane `lane ^ lane_mask` (`__shfl_xor_sync`, a butterfly).
/// Every lane of `mask` must call it.
#[doc(alias = "shfl.sync.bfly.b32")]
#[doc(alias = "__shfl_xor_sync")]
pub fn shfl_xor_sync(mask: u32, value: u32, lane_mask: u32) -> u32 {
    imp::shfl_xor_sync(mask, value, lane_mask)
}

/// Whether `predicate` holds on every lane of `mask` (`__all_sync`).
#[doc(alias = "vote.sync.all.pred")]
#[doc(alias = "__all_sync")]
pub fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    imp::vote_all_sync(mask, predicate)
}

/// Whether `predicate` holds on some lane of `mask` (`__any_sync`).
#[doc(alias = "vote.sync.any.pred")]
#[doc(alias = "__any_sync")]
pub fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    imp::vote_any_sync(mask, predicate)
}

/// The lanes of `mask` whose `predicate` holds, one bit per lane
/// (`__ballot_sync`).
#[doc(alias = "vote.sync.ballot.b32")]
#[doc(alias = "__ballot_sync")]
pub fn vote_ballot_sync(mask: u32, predicate: bool) -> u32 {
    imp::vote_ballot_sync(mask, predicate)
}

/// The lanes of `mask` whose `value` equals the caller's (`__match_any_sync`;
/// sm_70 or later).
#[doc(alias = "match.any.sync.b32")]
#[doc(alias = "__match_any_sync")]
pub fn match_any_sync(mask: u32, value: u32) -> u32 {
    imp::match_any_sync(mask, value)
}

/// Whether every lane of `mask` passed the same `value`
/// (`__match_all_sync`'s predicate; sm_70 or later): one instruction where
/// comparing with lane 0's value takes a shuffle and a vote. Every lane
/// gets the same answer.
#[doc(alias = "match.all.sync.b32")]
#[doc(alias = "__match_all_sync")]
pub fn match_all_sync(mask: u32, value: u32) -> bool {
    imp::match_all_sync(mask, value)
}

/// [`match_all_sync`] of a 64-bit value, one instruction
/// (`match.all.sync.b64`), where a shuffle compares 32 bits.
#[doc(alias = "match.all.sync.b64")]
pub fn match_all_sync_u64(mask: u32, value: u64) -> bool {
    imp::match_all_sync_u64(mask, value)
}

/// Waits until every lane of `mask` has arrived (`__syncwarp`); orders
/// memory among them like [`block_barrier`] does for a block.
#[doc(alias = "bar.warp.sync")]
#[doc(alias = "__syncwarp")]
pub fn warp_sync(mask: u32) {
    imp::warp_sync(mask)
}

/// The lanes of the caller's warp that execute this call together
/// (`__activemask`). On the emulator and under loom: every lane of the
/// warp that exists (the last warp of a block may be partial), a superset
/// of the GPU's answer, which depends on divergence.
#[doc(alias = "activemask.b32")]
#[doc(alias = "__activemask")]
pub fn active_mask() -> u32 {
    imp::active_mask()
}

/// The lanes of the caller's warp that exist: all 32, or fewer in the last
/// warp of a block whose size is not a multiple of 32. The mask to pass to
/// a warp collective that the whole warp calls.
pub fn warp_mask() -> u32 {
    let c = coordinates();
    let first = c.thread - c.thread % 32;
    let n = (c.block_dim - first).min(32);
    if n == 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// The streaming multiprocessor running the caller (`%smid`; it may change
/// during the thread's life on the GPU). On the emulator: the worker
/// thread running the rank; under loom: 0.
#[doc(alias = "%smid")]
pub fn sm_id() -> u32 {
    imp::sm_id()
}
