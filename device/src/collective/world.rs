//! The world's own collective algorithms: the block-wise barrier, the
//! staged broadcast and the hierarchical (warp, block, grid) reduction
//! described in [`crate::collective`], on the world's staging cells.

use super::agreement::CELL_HEADER;
use super::hardware;
use super::operation::Operation;
use crate::buffers::Side;
use crate::communicator::{Communicator, World};
use crate::datatype::{BufferMut, Equivalence};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::layout::BARRIER_KEY_WORDS;
use crate::polling::{Call as WaitCall, WaitFor, STATE_RUNNING};
use crate::records::BarrierPayload;
use crate::shim::{self, AtomicU64, Ordering};

/// Count word of a staged operand or partial result: the counts of the
/// combined ranks disagreed.
const COUNT_MISMATCH: u32 = u32::MAX;

/// The block's shared scratch during the block phase of a world reduction
/// ([`World::block_tree`]).
#[repr(C)]
struct BlockStage {
    /// Each warp's count word: the count its cells agreed on, or
    /// `COUNT_MISMATCH`.
    counts: [u32; 32],
    /// The warps' partial results, `k` elements per warp, when they fit.
    partials: [u8; PARTIAL_BYTES],
}

/// Bytes of [`BlockStage::partials`].
const PARTIAL_BYTES: usize = shim::SHARED_BLOCK_BYTES - 128;

/// The key of a keyed world barrier ([`World::world_barrier_agreeing`])
/// that agrees with no other: a rank's invalid root, a warp or block whose
/// ranks disagree.
pub(super) const NO_KEY: u32 = u32::MAX;

/// The block's shared scratch during a keyed world barrier.
#[repr(C)]
struct KeyStage {
    /// Left alone: a block communicator's opening writes its descriptor
    /// here before its first block barrier.
    head: [u32; 4],
    /// The block's first rank's verdict on every block's key (1: agreed).
    verdict: u32,
    /// 1 when `fetched` holds the word the block's first rank loaded with
    /// the blocks' keys (`World::fetched_with_keys`), else 0.
    fetched_valid: u32,
    /// That word, as two halves (low first).
    fetched: [u32; 2],
    /// Each warp's key (its first words), the first word [`NO_KEY`] when
    /// its lanes' keys differ.
    warps: [[u32; BARRIER_KEY_WORDS]; 32],
}

/// The block's [`KeyStage`] in its shared scratch (taken again at each use
/// rather than held in two registers across a wait: the base is an
/// out-of-line call).
#[inline(always)]
fn key_stage() -> *mut KeyStage {
    shim::shared_block::<{ core::mem::size_of::<KeyStage>() }>() as *mut KeyStage
}

/// The block's key from its warps' keys: theirs when all are equal, else
/// with [`NO_KEY`] as its first word.
///
/// # Safety
/// The first `N` words of the stage's first `warps` (at most 32) keys
/// written and published by a block barrier.
#[inline(always)]
unsafe fn fold_keys<const N: usize>(stage: *const KeyStage, warps: u32) -> [u32; N] {
    // SAFETY: the caller's contract; `w < warps <= 32`, `i < N <=
    // BARRIER_KEY_WORDS` (the arrays' bounds are checked).
    let word = |w: u32, i: usize| unsafe { core::ptr::addr_of!((*stage).warps[w as usize][i]).read() };
    let mut first = [0u32; N];
    for (i, f) in first.iter_mut().enumerate() {
        *f = word(0, i);
    }
    let mut w = 1;
    while w < warps {
        for (i, &f) in first.iter().enumerate() {
            if word(w, i) != f {
                first[0] = NO_KEY;
                return first;
            }
        }
        w += 1;
    }
    first
}

/// Whether every lane of `mask` passed this `key`; the same answer on
/// every lane: one `match.all` per two words (an odd last word the 32-bit
/// form, which needs no register pair), where a shuffle of each word from
/// lane 0 and a vote would take a warp collective per word and one more.
#[inline(always)]
fn warp_agrees<const N: usize>(mask: u32, key: &[u32; N]) -> bool {
    let mut same = true;
    // Constant indices, no slice of the key: it stays in registers.
    for pair in 0..N / 2 {
        same &= shim::match_all_sync_u64(
            mask,
            u64::from(key[2 * pair]) | u64::from(key[2 * pair + 1]) << 32,
        );
    }
    if N % 2 == 1 {
        same &= shim::match_all_sync(mask, key[N - 1]);
    }
    same
}

/// Whether every block's key `N` (at most [`BARRIER_KEY_WORDS`]) words
/// long fits the stage ([`KeyStage::warps`]) and the keys' line.
const fn key_fits(n: usize) -> bool {
    n >= 1 && n <= BARRIER_KEY_WORDS
}

/// A block's key word as it is ORed into [`GridBarrier::keys`](crate::records::GridBarrier):
/// the word in the high half, its complement in the low.
#[inline(always)]
fn pack_key(key: u32) -> u64 {
    (u64::from(key) << 32) | u64::from(!key)
}

/// The index of barrier generation `generation`'s words in
/// [`GridBarrier`](crate::records::GridBarrier)'s arrays.
#[inline(always)]
fn generation_word(generation: u32) -> usize {
    (generation % 4) as usize
}

/// Whether the ORs of every block's [`pack_key`]s, word by word, come from
/// one key whose first word is not [`NO_KEY`]: a bit set in both halves
/// of a word is a bit on which two blocks differ.
#[inline(always)]
fn keys_agree<const N: usize>(or: &[u64; N]) -> bool {
    let same = or.iter().all(|&w| (w >> 32) as u32 & w as u32 == 0);
    same && (or[0] >> 32) as u32 != NO_KEY
}

/// What a block adds to its generation's
/// [`GridBarrier::arrivals`](crate::records::GridBarrier) beyond its 1 when
/// its key, of at most [`ZERO_KEY_WORDS`] words, is not all 0 (a window's
/// fence in a program that is not correct, a broadcast from a root other
/// than 0): a count of such blocks in the word's high half. Only such
/// blocks OR their key into the generation's key words.
const FLAGGED: u64 = 1 << 32;

/// The longest key a keyed world barrier judges from its counts when it
/// is 0 ([`FLAGGED`]): a fence's reason, a broadcast's root, a reduce's
/// root and count. The argument agreement's longer keys are seldom 0, and
/// would pay the second opening block barrier of a key that is not.
const ZERO_KEY_WORDS: usize = 2;

/// The blocks counted in an arrivals word (its low half; see [`FLAGGED`]).
#[inline(always)]
const fn arrived(word: u64) -> u32 {
    word as u32
}

/// The blocks of a key not all 0 counted in an arrivals word (its high
/// half, [`FLAGGED`]).
#[inline(always)]
const fn flagged(word: u64) -> u32 {
    (word >> 32) as u32
}

/// One generation's words of the world barrier's record
/// ([`World::generation`]).
struct GenerationWords<'w> {
    base: *mut u8,
    /// Offset of the generation's arrival count.
    arrivals: usize,
    /// Offset of the generation's first key word.
    keys: usize,
    _world: core::marker::PhantomData<&'w World>,
}

impl<'w> GenerationWords<'w> {
    /// The generation's arrivals word (see [`arrived`] and [`FLAGGED`]).
    #[inline(always)]
    fn arrivals(&self) -> &'w AtomicU64 {
        // SAFETY: inside the world barrier's record at the start of the
        // barrier region, 8-byte aligned (the record is 64-byte aligned),
        // accessed only atomically; the world outlives `'w`.
        unsafe { shim::atomic_u64_at(self.base, self.arrivals) }
    }

    /// The generation's payload word ([`GridBarrier::payloads`](crate::records::GridBarrier)),
    /// as far from its arrivals word as the two arrays' starts.
    #[inline(always)]
    fn payloads(&self) -> &'w AtomicU64 {
        use crate::records::GridBarrier;
        let from_arrivals =
            core::mem::offset_of!(GridBarrier, payloads) - core::mem::offset_of!(GridBarrier, arrivals);
        // SAFETY: inside the world barrier's record, 8-byte aligned (the
        // record is 64-byte aligned), accessed only atomically; the world
        // outlives `'w`.
        unsafe { shim::atomic_u64_at(self.base, self.arrivals + from_arrivals) }
    }

    /// Zeroes the generation's count and every word of its key (whatever
    /// its barrier's key was), as [`GridBarrier`](crate::records::GridBarrier)
    /// says, in as few stores as they take. Relaxed: published by the
    /// caller's block's next arrival.
    #[inline(always)]
    fn reset(&self) {
        self.arrivals().store(0, Ordering::Relaxed);
        for pair in 0..BARRIER_KEY_WORDS / 2 {
            shim::store_relaxed_x2_u64(self.pair(pair), [0; 2]);
        }
    }

    /// The first `N` words of the generation's key, in pairs of one vector
    /// load each; relaxed, as the caller says.
    #[inline(always)]
    fn keys<const N: usize>(&self) -> [u64; N] {
        const { assert!(N <= BARRIER_KEY_WORDS) };
        let mut keys = [0u64; N];
        for pair in 0..N / 2 {
            let [a, b] = shim::load_relaxed_x2_u64(self.pair(pair));
            keys[2 * pair] = a;
            keys[2 * pair + 1] = b;
        }
        if N % 2 == 1 {
            keys[N - 1] = self.key(N - 1).load(Ordering::Relaxed);
        }
        keys
    }

    /// Key words `2 × pair` and the next (`2 × pair + 1 <`
    /// [`BARRIER_KEY_WORDS`]), for one 16-byte access.
    #[inline(always)]
    fn pair(&self, pair: usize) -> &'w [AtomicU64; 2] {
        let first: *const AtomicU64 = self.key(2 * pair);
        // SAFETY: the two words are in a row (an array of
        // `repr(transparent)` cells) and 16-byte aligned (the keys are a
        // 64-byte aligned line of eight words, checked below, and `2 ×
        // pair + 1 < BARRIER_KEY_WORDS`); the world outlives `'w`.
        unsafe { &*(first as *const [AtomicU64; 2]) }
    }

    /// Word `word` (below [`BARRIER_KEY_WORDS`]) of the generation's key.
    #[inline(always)]
    fn key(&self, word: usize) -> &'w AtomicU64 {
        // SAFETY: inside the world barrier's record (`word <
        // BARRIER_KEY_WORDS <= 8`), 8-byte aligned (the record is 64-byte
        // aligned), accessed only atomically; the world outlives `'w`.
        unsafe { shim::atomic_u64_at(self.base, self.keys + 8 * word) }
    }
}

// `GenerationWords::pair`'s 16-byte accesses: each generation's keys are a
// 64-byte aligned line (the record at a line's start, the keys a whole line
// into it), and the key words they cover come in pairs.
const _: () = {
    use crate::records::GridBarrier;
    assert!(
        (crate::layout::GRID_BARRIER_OFFSET + core::mem::offset_of!(GridBarrier, keys)).is_multiple_of(64)
    );
    assert!(BARRIER_KEY_WORDS.is_multiple_of(2));
};

impl World {
    /// Generation `generation`'s words of the world barrier's record
    /// ([`GridBarrier`](crate::records::GridBarrier)), which lies at a
    /// fixed offset: no read of the layout, before or after an atomic.
    #[inline(always)]
    fn generation(&self, generation: u32) -> GenerationWords<'_> {
        use crate::records::GridBarrier;
        let record = crate::layout::GRID_BARRIER_OFFSET;
        let g = generation_word(generation);
        GenerationWords {
            base: self.base,
            arrivals: record + core::mem::offset_of!(GridBarrier, arrivals) + 8 * g,
            keys: record + core::mem::offset_of!(GridBarrier, keys) + 64 * g,
            _world: core::marker::PhantomData,
        }
    }

    /// Starts a staging round: the next half of the staging regions.
    ///
    /// Each round writes its half before the round's world barrier and reads
    /// it after; a half is written again two rounds later, after the next
    /// round's barrier, which no rank passes before every rank has finished
    /// reading. So a round needs no closing barrier.
    pub(super) fn begin_staging_round(&self) {
        self.staging_round.set(self.staging_round.get().wrapping_add(1));
    }

    /// The half of the staging regions the current round uses.
    pub(super) fn staging_half(&self) -> usize {
        (self.staging_round.get() & 1) as usize
    }

    pub(super) fn rank_cell(&self, rank: u32) -> *mut u8 {
        let l = &self.layout;
        let half = self.staging_half() * self.ranks() as usize * l.collective_bytes;
        // SAFETY: inside the rank scratch region (two halves of `ranks` cells).
        unsafe {
            self.base
                .add(l.rank_scratch + half + rank as usize * l.collective_bytes)
        }
    }

    /// Rank `rank`'s cell in the staging round that begins next: written
    /// before that round only by `rank` itself, to publish something its
    /// first world barrier orders (the other half's readers finished before
    /// the current round's barrier, which a rank between collectives has
    /// passed).
    pub(super) fn next_rank_cell(&self, rank: u32) -> *mut u8 {
        let l = &self.layout;
        let half = (1 - self.staging_half()) * self.ranks() as usize * l.collective_bytes;
        // SAFETY: inside the rank scratch region (two halves of `ranks` cells).
        unsafe {
            self.base
                .add(l.rank_scratch + half + rank as usize * l.collective_bytes)
        }
    }

    pub(super) fn block_cell(&self, block: u32) -> *mut u8 {
        let l = &self.layout;
        let half = self.staging_half() * self.blocks() as usize * l.collective_bytes;
        // SAFETY: inside the block scratch region (two halves of `blocks` cells).
        unsafe {
            self.base
                .add(l.block_scratch + half + block as usize * l.collective_bytes)
        }
    }

    pub(super) fn collective_bytes(&self) -> usize {
        self.layout.collective_bytes
    }

    /// The world barrier, recorded as `what` in the wait record.
    ///
    /// Block barrier; the block's first rank adds the block's arrival to
    /// the world's arrival count of the generation (the number of world
    /// barriers so far, the same on every rank; [`GridBarrier`](crate::records::GridBarrier))
    /// and, unless its arrival completed it (`blocks` arrivals), polls the
    /// count until it is; block barrier. One read-modify-write per block and one polled word,
    /// what a CUDA grid barrier does: the thesis's single-writer counters
    /// (one per block, every block reading every counter) put `blocks²`
    /// polls on the memory system each round, 11.3 µs on an H100 against
    /// the native 1.9 (docs/performance.md). The last block to arrive goes
    /// on at once, and the others see its arrival itself, not a release
    /// word it stores after (a round trip and a fence fewer on the critical
    /// path). The other ranks of a block wait in the block barrier, which
    /// costs no memory traffic.
    ///
    /// It fails alike on every rank of a block. The opening block barrier
    /// counts the ranks that came: a rank that returned from the kernel does
    /// not hold a block barrier (PTX `exit`; the emulator does the same), so
    /// a count short of the block means a rank that will never enter. Such a
    /// block does not arrive (so the generation never completes and every
    /// other block's barrier fails too) and waits, bounded, for nothing
    /// ([`crate::polling::barrier_wait_forever`]).
    /// The closing block barrier counts the ranks whose waits succeeded:
    /// when the first rank's failed, its block-mates return `Aborted` as
    /// well ([`crate::polling::barrier_failed`]), so no rank of the block goes
    /// on into a collective's next step alone.
    #[inline(always)]
    pub(super) fn world_barrier(&self, what: WaitFor) -> Result<(), Error> {
        self.round_barrier(what, None).map(|_| ())
    }

    /// [`World::world_barrier_agreeing`] on `key`, or with `None`
    /// [`World::world_barrier`] (then `Ok(true)`): a collective's rounds
    /// through one inlined copy of the barrier, the first keyed.
    #[inline(always)]
    fn round_barrier(&self, what: WaitFor, key: Option<u32>) -> Result<bool, Error> {
        self.keyed_barrier::<1, false>(
            what,
            key.map(|k| [k]),
            Arrival::All,
            false,
            core::ptr::null(),
            Carry::Own,
        )
    }

    /// [`World::world_barrier`] for a caller that wrote the wait record of
    /// `what` itself (a reduction, before its block tree).
    #[inline(always)]
    fn world_barrier_recorded(&self, what: WaitFor) -> Result<bool, Error> {
        self.keyed_barrier::<1, false>(what, None, Arrival::All, true, core::ptr::null(), Carry::Own)
    }

    /// [`World::world_barrier`] after a scatter's root wrote every rank's
    /// part into its cell: across processes the root's process carries
    /// every cell ([`Carry::Root`]).
    #[inline(always)]
    pub(super) fn world_barrier_scattered(&self, what: WaitFor) -> Result<(), Error> {
        self.keyed_barrier::<1, false>(what, None, Arrival::All, false, core::ptr::null(), Carry::Root)
            .map(|_| ())
    }

    /// The world barrier that ends a gather or scatter whose ranks copied
    /// their parts straight into or out of `root`'s buffer: every block
    /// arrives, but only the root waits until every block has (a gather's
    /// root needs every part, a scatter's root its buffer back). Every
    /// other rank goes on once its own block is there (the opening block
    /// barrier, after its copies): MPI 4.1 §6.5 lets a rank that is not
    /// the root return once its part is copied, and the native gather ends
    /// the same way. The first rank of every other block arrives with a
    /// release add whose old value it does not wait for; the root makes
    /// its own block's arrival, waits, and resets the generation after
    /// next's words; no closing block barrier. Only every other world
    /// barrier may be one of these (every gather and scatter begins with
    /// its agreement), which that reset relies on
    /// ([`GridBarrier`](crate::records::GridBarrier)).
    pub(super) fn world_barrier_for_root(&self, what: WaitFor, root: i32) -> Result<(), Error> {
        let bd = self.block_dim();
        let arrival = if root as u32 / bd == self.block {
            Arrival::Root {
                thread: root as u32 % bd,
            }
        } else {
            Arrival::Leaves
        };
        self.keyed_barrier::<1, false>(what, None, arrival, false, core::ptr::null(), Carry::Own)
            .map(|_| ())
    }

    /// The world barrier ([`World::world_barrier`]) that also tells whether
    /// every rank passed the same `key` (a broadcast's or reduce's root,
    /// below [`NO_KEY`]; a rank that passes `NO_KEY` disagrees with
    /// everyone): `Ok(true)` on every rank, or `Ok(false)` on every rank.
    /// MPI 4.1 §6.1 makes ranks that disagree on a root an erroneous
    /// program; this is how the world's broadcast and reduce fail on every
    /// rank that entered instead of returning `Ok` with different data on
    /// different ranks (the reduce's first round passes its key through
    /// [`World::reduce_staged`]).
    ///
    /// Inside a block: after the opening block barrier (so every lane of
    /// the warp is there) each warp compares its lanes' keys (a
    /// `match.all` per two words, [`warp_agrees`]) and its lane 0 writes
    /// the warp's key, or
    /// `NO_KEY`, to the block's shared scratch ([`KeyStage`]). Across
    /// blocks: after one more block barrier the block's first rank folds
    /// the warps' words into the block's key and ORs `key << 32 | !key`
    /// (a longer key's lanes: each warp's word so packed, ORed) into the
    /// generation's [`GridBarrier::keys`](crate::records::GridBarrier)
    /// line before it arrives (one word per word of a longer key,
    /// [`World::world_barrier_agreeing_words`], each by its own lane of
    /// the first warp when the block has a rank per word, a warp barrier
    /// before the arrival); once every block has arrived every block
    /// reads the same words, and the blocks agreed
    /// exactly when no word's two halves share a bit (the record says who
    /// zeroes the words, and when). In a world of one block the warps'
    /// words are the whole answer, read after the closing block barrier.
    /// Cost over the plain barrier, for a key of 0 on every rank: none
    /// (the opening block barrier counts the ranks whose key is 0, and the
    /// arrivals word's high half the blocks whose key is not). For any
    /// other key: one more block barrier (the ranks present), a `match.all`
    /// per warp; with several blocks one more block barrier, and for
    /// the block's first rank a relaxed OR before its arrival and a relaxed
    /// load after the wait.
    ///
    /// The words live past the head of the shared scratch (which a block
    /// communicator's opening writes before its first block barrier) and
    /// are read after the closing block barrier, as the other collectives
    /// may read the scratch after their last one: whoever writes the
    /// scratch next passes a block barrier first.
    #[inline(always)]
    pub(super) fn world_barrier_agreeing(&self, what: WaitFor, key: u32) -> Result<bool, Error> {
        self.round_barrier(what, Some(key))
    }

    /// [`World::world_barrier_agreeing`] on a key of
    /// [`BARRIER_KEY_WORDS`] words, or with `None` on one that agrees with
    /// nobody (a rank that found an error of its own): `Ok(true)` on every
    /// rank when every rank passed the same words and the first is not
    /// [`NO_KEY`], else `Ok(false)` on every rank (the argument
    /// agreement's one round, `World::agree`). Over the one-word key: a
    /// `match.all` per two words and warp in place of the one, and per
    /// word, by a lane of the block's first warp, one more
    /// relaxed OR before the arrival, and for the block's first rank one
    /// more load, in the same batch, after the wait.
    /// With `FETCH`, `fetch` (unless null) is the address of a word in
    /// world memory that its writer wrote, if at all, before it arrived (a
    /// root's published buffer); with more than one block, each block's
    /// first rank loads it in the batch of the keys after the wait and
    /// hands it to its block ([`World::fetched_with_keys`]), so that no
    /// rank loads it in a round trip of its own after the barrier. Without
    /// `FETCH` the barrier is compiled as if there were none.
    #[inline(always)]
    pub(super) fn world_barrier_agreeing_words<const FETCH: bool>(
        &self,
        what: WaitFor,
        key: Option<[u32; BARRIER_KEY_WORDS]>,
        fetch: *const u8,
    ) -> Result<bool, Error> {
        self.keyed_barrier::<BARRIER_KEY_WORDS, FETCH>(
            what,
            Some(key.unwrap_or([NO_KEY; BARRIER_KEY_WORDS])),
            Arrival::All,
            false,
            fetch,
            Carry::Own,
        )
    }

    /// After [`World::world_barrier_agreeing_words`] returned `Ok(true)`
    /// and before this rank's next block barrier: the word its block's
    /// first rank loaded at its `fetch` (which every rank of the block
    /// passed alike: the keys agreed), or `None` with one block or no
    /// `fetch`.
    pub(super) fn fetched_with_keys(&self) -> Option<u64> {
        if self.blocks() == 1 {
            return None;
        }
        let stage = key_stage();
        // SAFETY: written by the block's first rank before the closing
        // block barrier of that call, which this rank passed; the next
        // writer of the scratch passes a block barrier first.
        let (valid, [low, high]) = unsafe {
            (
                core::ptr::addr_of!((*stage).fetched_valid).read(),
                core::ptr::addr_of!((*stage).fetched).read(),
            )
        };
        (valid != 0).then(|| u64::from(low) | u64::from(high) << 32)
    }

    /// [`World::world_barrier_agreeing`] for a caller that is no
    /// collective (a window's fence).
    pub(crate) fn barrier_agreeing(&self, what: WaitFor, key: u32) -> Result<bool, Error> {
        self.world_barrier_agreeing(what, key)
    }

    /// [`World::world_barrier`], and with a key of `N` words
    /// [`World::world_barrier_agreeing`]; `arrival` other than
    /// [`Arrival::All`] (the same on every rank of a block, never with a
    /// key): [`World::world_barrier_for_root`]. `recorded`: the caller wrote
    /// the wait record of `what` since its last call that changed it (a
    /// reduction before its block tree). `fetch`: see
    /// [`World::world_barrier_agreeing_words`] (null: none; only with a
    /// key).
    #[inline(always)]
    fn keyed_barrier<const N: usize, const FETCH: bool>(
        &self,
        what: WaitFor,
        key: Option<[u32; N]>,
        arrival: Arrival,
        recorded: bool,
        fetch: *const u8,
        carry: Carry,
    ) -> Result<bool, Error> {
        const { assert!(key_fits(N)) };
        if self.across_processes() && what.operation != WaitCall::Barrier && !carried(what.operation) {
            // Every rank reads the same flag: all fail, none arrives. The
            // barrier itself crosses: the relays add the other processes'
            // arrivals (docs/distributed.md); so do the world
            // collectives', with the cells they read after it (`carried`,
            // with the `distributed` feature); a window's would need its
            // targets' memory.
            return Err(Error::AcrossProcesses {
                operation: what.operation as u32,
            });
        }
        if !recorded {
            self.record_wait(what);
        }
        let generation = self.barrier_generation.get().wrapping_add(1);
        self.barrier_generation.set(generation);
        // A short key (`ZERO_KEY_WORDS`): the opening block barrier counts
        // the ranks whose key is all 0. All of the block's (so every rank
        // came): the block's key is 0, with no shuffle, vote or second
        // block barrier below (a correct program's fence, a broadcast from
        // root 0, a one-element reduce to root 0). Else the ranks that came
        // are counted again.
        let zeroable = N <= ZERO_KEY_WORDS && !FETCH;
        let zero = zeroable && key.is_some_and(|k| k.iter().all(|&w| w == 0));
        let (present, all_zero) = if zeroable && key.is_some() {
            let zeros = shim::block_barrier_count(zero);
            if zeros == self.block_dim() {
                (zeros, true)
            } else {
                (shim::block_barrier_count(true), false)
            }
        } else {
            (shim::block_barrier_count(true), false)
        };
        let whole = present == self.block_dim();
        let blocks = self.blocks();
        // Taken again at each use, as the stage below.
        let warps = || self.block_dim().div_ceil(32);
        let stage = key_stage;
        // The verdict of a keyed barrier as this rank sees it before the
        // closing block barrier (a block's first rank: the blocks' words).
        let mut agreed = true;
        let keyed = key.is_some();
        // The block's first rank's [`FLAGGED`] share of its arrival.
        let mut flag: u64 = 0;
        if let Some(k) = key.filter(|_| !all_zero) {
            if zeroable && whole && self.thread == 0 {
                // Some rank of the block passed a key not all 0: the
                // block's key is that key or `NO_KEY`, not 0.
                flag = FLAGGED;
            }
            if whole {
                // Every lane of the warp came (the count above), so no
                // shuffle or vote names a lane that returned.
                let mask = shim::warp_mask();
                let same = warp_agrees(mask, &k);
                if self.thread.is_multiple_of(32) {
                    // SAFETY: this warp's key in the stage, past the
                    // scratch's head; every rank of the block passed the
                    // opening barrier, so the scratch's previous readers
                    // are done.
                    let words =
                        unsafe { core::ptr::addr_of_mut!((*stage()).warps[(self.thread / 32) as usize]) };
                    for (i, &w) in k.iter().enumerate() {
                        // A warp whose lanes differ: `NO_KEY` first.
                        let f = if i == 0 && !same { NO_KEY } else { w };
                        // SAFETY: as above; `i < N <= BARRIER_KEY_WORDS`.
                        unsafe { core::ptr::addr_of_mut!((*words)[i]).write(f) };
                    }
                }
            }
            if blocks > 1 {
                // The warps' words, for the block's first lanes.
                shim::block_barrier();
                // A key of several words, in a block of at least as many
                // ranks: lane `i` of the first warp folds word `i` and ORs
                // it into the generation's words, one `red` each before
                // the first rank's arrival, not `N` in a row by the first
                // rank. Otherwise the first rank folds and ORs them all.
                let spread = N > 1 && self.block_dim() >= N as u32;
                if whole && spread && self.thread < N as u32 {
                    let i = self.thread as usize;
                    let mask = u32::MAX >> (32 - N as u32);
                    // SAFETY: the warps' words, written before the barrier
                    // above; `w < warps <= 32`, `i < N <= BARRIER_KEY_WORDS`.
                    let word =
                        |w: u32| unsafe { core::ptr::addr_of!((*stage()).warps[w as usize][i]).read() };
                    // The warps' words packed and ORed, as the blocks' are:
                    // a word on which two warps differ has a bit set in both
                    // halves, which fails `keys_agree` as a `NO_KEY` first
                    // word would, with no vote among the lanes.
                    let packed = (0..warps()).fold(0, |or, w| or | pack_key(word(w)));
                    // Relaxed: published by this block's arrival below (its
                    // release half, after the warp barrier), read by every
                    // block after the generation completed.
                    self.generation(generation).key(i).or(packed, Ordering::Relaxed);
                    // Orders the other lanes' ORs before the first rank's
                    // arrival, as the block barrier does the block's writes.
                    shim::warp_sync(mask);
                } else if whole && !spread && self.thread == 0 {
                    // SAFETY: the warps' words, written before the barrier above.
                    let block_key: [u32; N] = unsafe { fold_keys(stage(), warps()) };
                    // Relaxed: as above. Here, so that no word of the key
                    // is held across a call.
                    let words = self.generation(generation);
                    for (i, &k) in block_key.iter().enumerate() {
                        words.key(i).or(pack_key(k), Ordering::Relaxed);
                    }
                }
            }
        }
        // This rank's failure as a `polling::barrier_word` (0: none), not a
        // `Result`: it is held across the closing block barrier.
        let mut failure: u64 = 0;
        if !whole {
            failure = crate::polling::barrier_wait_forever(
                self.base as u64,
                self.rank,
                what.operation,
                what.peer,
                what.tag,
            );
        } else if blocks > 1 && self.thread == 0 && arrival == Arrival::Leaves {
            // Release: carries this block's accesses, ordered before this
            // point by the block barrier, to the root, whose acquire of the
            // count (its poll, or its AcqRel add if it completes the count)
            // reads a value of this add's release sequence. No acquire:
            // this block reads nothing of the others'.
            self.generation(generation).arrivals().add(1, Ordering::Release);
        } else if blocks > 1 && self.thread == arrival.arriver() {
            let arrivals = self.generation(generation).arrivals();
            // Folds away without the feature: kernels for one process
            // (every PTX build) keep the barrier they had.
            if carried(what.operation) && self.across_processes() {
                // Relaxed: published by the arrival below (its release
                // half), which the relay acquires before it reads this.
                self.generation(generation)
                    .payloads()
                    .or(self.barrier_payload(what, carry).0, Ordering::Relaxed);
            }
            // AcqRel. The release carries this block's writes, ordered
            // before this point by the block barrier, to every rank that
            // acquires a later value of the count: the arrivals are one
            // release sequence (CUDA's grid synchronisation fences and then
            // adds; this is the same release). The acquire takes every
            // earlier arrival's writes, all that the last arrival needs.
            let before = arrivals.fetch_add(1 + flag, Ordering::AcqRel);
            let r = if arrived(before) + 1 == blocks {
                // At a rooted barrier the root resets the words once the
                // count is complete, whoever completed it (below).
                if arrival == Arrival::All {
                    self.generation(generation.wrapping_add(3)).reset();
                }
                Ok(flagged(before + 1 + flag))
            } else {
                // The record and the idle key were written before the
                // opening block barrier (`record_wait` above).
                crate::polling::wait_recorded(&self.core_settled(), what, |_| {
                    // Acquire: `blocks` was written by the last arrival, in
                    // the release sequence of every block's arrival (the
                    // Release half above).
                    let now = arrivals.load(Ordering::Acquire);
                    (arrived(now) >= blocks).then_some(Ok(flagged(now)))
                })
            };
            if arrival != Arrival::All && r.is_ok() {
                // The other blocks left without knowing whether their
                // arrival completed the count, so the one rank that saw it
                // complete resets the words (`GridBarrier`). (The
                // generation again: not held across the wait.)
                self.generation(self.barrier_generation.get().wrapping_add(3))
                    .reset();
            }
            match r {
                Ok(nonzero_blocks) => {
                    // A short key: how many blocks passed a key not all 0
                    // (`FLAGGED`). None: every block passed 0 (not
                    // `NO_KEY`), and no key word is loaded, which would be
                    // a round trip after the acquire. Some but not all:
                    // they differ from the rest.
                    let judged = zeroable && nonzero_blocks < blocks;
                    if keyed && judged {
                        agreed = nonzero_blocks == 0;
                    }
                    // Relaxed: after the acquire of every block's arrival,
                    // which its OR preceded. No fence follows: this rank's
                    // acquire and the closing block barrier give the rest
                    // of the block every block's writes (causality order is
                    // transitive across the two scopes, PTX ISA "Memory
                    // Consistency Model"; CUDA's grid synchronisation ends
                    // the same way).
                    // (The generation again: not held across the wait.)
                    if keyed && !judged {
                        let words = self.generation(self.barrier_generation.get());
                        let (keys, fetched) = shim::independent(|| {
                            (
                                words.keys::<N>(),
                                // SAFETY: the caller's word, written before
                                // its writer's arrival, which this rank's
                                // acquire above took.
                                (FETCH && !fetch.is_null()).then(|| unsafe { shim::load_payload_u64(fetch) }),
                            )
                        });
                        agreed = keys_agree(&keys);
                        if FETCH {
                            // SAFETY: the stage's words, past the scratch's
                            // head; read by the block after the closing
                            // barrier.
                            unsafe {
                                let v = fetched.unwrap_or(0);
                                core::ptr::addr_of_mut!((*stage()).fetched_valid)
                                    .write(fetched.is_some() as u32);
                                core::ptr::addr_of_mut!((*stage()).fetched)
                                    .write([v as u32, (v >> 32) as u32]);
                            }
                        }
                    }
                }
                Err(e) => failure = crate::polling::barrier_word(e),
            }
            if keyed {
                // SAFETY: the stage's verdict word, past the scratch's head;
                // read by the block after the closing barrier.
                unsafe { core::ptr::addr_of_mut!((*stage()).verdict).write(agreed as u32) };
            }
        }
        if arrival != Arrival::All && whole {
            // At most one rank of the block (the root) waited: no verdict
            // to share in a closing block barrier, its failure is its own.
            self.record_state(STATE_RUNNING);
            if failure != 0 {
                let word = crate::polling::barrier_failed(self.base as u64, self.rank, failure);
                return Err(crate::polling::barrier_error(word, what));
            }
            return Ok(true);
        }
        let passed = shim::block_barrier_count(failure == 0);
        self.record_state(STATE_RUNNING);
        if failure != 0 || passed != present {
            let word = crate::polling::barrier_failed(self.base as u64, self.rank, failure);
            return Err(crate::polling::barrier_error(word, what));
        }
        if !keyed || (all_zero && blocks == 1) {
            Ok(true)
        } else if blocks > 1 {
            // SAFETY: written by the block's first rank before the closing
            // barrier; the next writer of the scratch passes a block barrier
            // that this rank has not reached.
            Ok(unsafe { core::ptr::addr_of!((*stage()).verdict).read() } != 0)
        } else {
            // Every warp's key equal to the first's and not `NO_KEY`: each
            // warp's lanes passed its lane 0's key (else its first word is
            // `NO_KEY`), so every rank passed this one, this rank's too.
            // SAFETY: the warps' keys, written before the closing barrier
            // (as above).
            Ok(unsafe { fold_keys::<N>(stage(), warps()) }[0] != NO_KEY)
        }
    }

    /// Reduce (`root` given) or all-reduce of the `n` elements at `send`
    /// into the `recv` elements (pointer and length) of the ranks that get
    /// the result.
    ///
    /// `send` and `recv` may be the same buffer (in place): each round reads
    /// its elements `lo..hi` of `send` when it stages them and writes the
    /// same elements of `recv` after the round's combination, so no element
    /// is read after it was written.
    ///
    /// Inlined into each call: the operands are copied here, and every
    /// barrier and shuffle of a round is in [`reduce_step`], one copy that a
    /// root and its warp-mates share. Passing `send` or `recv` to an
    /// out-of-line function would put a scalar operand in local memory.
    ///
    /// # Safety
    /// `send` valid for reads of `n` elements and `recv` for writes of its
    /// length for the whole call; nothing else accesses them meanwhile.
    #[inline(always)]
    pub(super) unsafe fn reduce_impl<T, O>(
        &self,
        send: *const T,
        n: usize,
        mut recv: Option<(*mut T, usize)>,
        root: Option<i32>,
        op: &O,
    ) -> Result<(), Error>
    where
        T: Equivalence,
        O: Operation<T>,
    {
        // Same datatype and operation on every rank: every rank returns here
        // alike, before any barrier.
        op.check()?;
        let size = core::mem::size_of::<T>();
        let per_round = (self.collective_bytes() - CELL_HEADER) / size.max(1);
        if per_round == 0 || core::mem::align_of::<T>() > CELL_HEADER {
            return Err(Error::BufferTooLarge {
                bytes: saturating_u32(size),
                limit: (self.collective_bytes() - CELL_HEADER) as u32,
            });
        }
        let what = match root {
            Some(r) => WaitFor {
                operation: WaitCall::Reduce,
                peer: r,
                tag: -1,
            },
            None => WaitFor {
                operation: WaitCall::AllReduce,
                peer: -2,
                tag: -1,
            },
        };
        let mut local_error = None;
        // The first round's world barrier also checks that every rank named
        // the same valid root (MPI 4.1 §6.1, §6.9.1), as the broadcast's
        // does: a rank with an invalid root takes part with a key that
        // agrees with nobody, so ranks that disagree, or that all name an
        // invalid root, all fail with `MPI_ERR_ROOT` after that barrier and
        // before any result is written. An all-reduce has no root to check.
        let (key, reference) = match root {
            Some(r) if self.check_rank(r).is_ok() => (Some(r as u32), r as u32),
            Some(_) => (Some(NO_KEY), 0),
            None => (None, 0),
        };
        // The count words are 32 bits. A count of `u32::MAX` elements or
        // more saturates to `COUNT_MISMATCH`, which poisons the block's
        // result: every rank fails with `MPI_ERR_COUNT` in the first round
        // instead of comparing counts cut to their low bits.
        let count = saturating_u32(n);
        if let Some((_, len)) = recv {
            if len != n {
                local_error = Some(Error::CountMismatch {
                    count: saturating_u32(len),
                    expected: count,
                });
                recv = None;
            }
        }
        let is_root = root.is_none_or(|r| r == self.rank());
        let out = recv.filter(|_| is_root).map(|(p, _)| p);
        // Reduce: the root's warp combines the block results; all-reduce:
        // every warp does.
        let combines = root.is_none_or(|r| {
            let bd = self.block_dim();
            r as u32 / bd == self.block && (r as u32 % bd) / 32 == self.thread / 32
        });
        let rounds = n.div_ceil(per_round).max(1);
        let mut round = 0;
        while round < rounds {
            let lo = round * per_round;
            let hi = (lo + per_round).min(n);
            let k = hi - lo;
            self.stage_count(count);
            // The operands go to the tree as they are: one of at most 8
            // bytes by value (a scalar operand stays in a register: no
            // pointer to it goes out of line), others by pointer.
            // SAFETY: `lo <= hi <= n` elements of `send` (the caller's
            // contract).
            unsafe {
                for i in 0..k {
                    shim::note_global(send.add(lo + i) as *const u8, size, false);
                }
            }
            let alone = n == 1 && size <= 8;
            // SAFETY: as above; `out` holds `n >= hi` elements (checked above).
            let (word, src, dst) = unsafe {
                match (alone, out) {
                    (true, _) => (to_word(&*send), core::ptr::null(), core::ptr::null_mut()),
                    (false, Some(p)) => (0, send.add(lo), p.add(lo)),
                    (false, None) => (0, send.add(lo), core::ptr::null_mut()),
                }
            };
            let generation = self.barrier_generation.get();
            let flags = combines as u32
                | (self.known.settled() as u32) << 1
                | (out.is_some() as u32) << 2
                | (self.known.local() as u32) << 3;
            let (failure, result) = reduce_step::<T, O>(
                self.base,
                self.rank,
                self.thread,
                self.block,
                generation,
                self.staging_round.get(),
                word,
                src,
                count,
                dst,
                k,
                reference,
                match (round, key) {
                    (0, Some(key)) => Verify::RootAndCount(key),
                    (0, None) => Verify::Counts,
                    // The first round checked the counts, which are the
                    // same in every round (its rounds follow from them).
                    _ => Verify::Nothing,
                },
                flags,
                op,
                what.operation,
                what.peer,
            );
            // A step passes one world barrier, failed or not (two when a
            // reduce's first round finds a disagreement: the failure's
            // second word is then the generation it reached), and records
            // its wait first (`reduce_staged`): the rank is settled.
            let passed = if failure != 0 {
                result as u32
            } else {
                generation.wrapping_add(1)
            };
            self.barrier_generation.set(passed);
            self.known.set_settled(true);
            if failure != 0 {
                return Err(step_error(failure, count, what, self.size()));
            }
            // The step wrote the elements of `dst`; an operand alone comes
            // back by value.
            if let Some(p) = out.filter(|_| alone) {
                // SAFETY: the one element of `out` (checked above).
                unsafe {
                    shim::note_global(p as *const u8, size, true);
                    core::ptr::write(p, from_word(result));
                }
            }
            round += 1;
        }
        if root.is_some() && recv.is_none() && is_root && local_error.is_none() {
            local_error = Some(Error::InvalidRoot {
                root: self.rank(),
                size: self.size(),
            });
        }
        match local_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One round of operands already in this rank's cell (`k` elements,
    /// after [`World::stage_count`] wrote its `count` words): written by
    /// [`World::stage_operands`], or by the caller itself (the agreement's
    /// full round). Combines inside the block, stages the block's result
    /// and meets at the barrier. `Ok(Err(expected))` when the ranks passed
    /// different counts (every rank reads the same answer), with the count
    /// that rank `reference` (the root, or rank 0) passed.
    #[inline(always)]
    pub(super) fn reduce_cell<T: Equivalence, O: Operation<T>>(
        &self,
        k: usize,
        count: u32,
        reference: u32,
        op: &O,
        what: WaitFor,
    ) -> Result<Result<(), u32>, Error> {
        // SAFETY: this rank's cell's data, staged with `k` elements (the
        // caller's contract).
        let src = unsafe { self.rank_cell(self.rank).add(CELL_HEADER) as *const T };
        self.reduce_staged::<T, O>(k, 0, src, count, reference, Verify::Counts, op, what)
    }

    /// Opens a staging round and copies the `k` elements at `part` into this
    /// rank's cell, with `count` in both count words.
    #[inline(always)]
    pub(super) fn stage_operands<T: Equivalence>(&self, part: *const T, k: usize, count: u32) {
        let bytes = k * core::mem::size_of::<T>();
        self.stage_count(count);
        let cell = self.rank_cell(self.rank);
        // SAFETY: our own cell's data: `per_round >= k` elements (checked by
        // the caller); no other rank touches it before the block barrier of
        // the round. `part` holds `k` readable elements (the caller's
        // contract).
        unsafe { shim::copy_bytes(cell.add(CELL_HEADER), part as *const u8, bytes) };
    }

    /// Opens a staging round and writes `count` in both count words of this
    /// rank's cell (the own-count word is what a count mismatch reports of
    /// the reference rank).
    #[inline(always)]
    pub(super) fn stage_count(&self, count: u32) {
        self.begin_staging_round();
        let cell = self.rank_cell(self.rank);
        // SAFETY: our own cell: combined-count word, own-count word; no
        // other rank touches it before the block barrier of the round.
        unsafe {
            core::ptr::write(cell as *mut u32, count);
            core::ptr::write(cell.add(4) as *mut u32, count);
        }
    }

    /// The rest of [`World::reduce_cell`]: this rank's `k` operands are at
    /// `src`, or (`src` null, `k` 1, `T` of at most 8 bytes) in `word`
    /// ([`to_word`]), its `count` words staged in its cell. The block tree
    /// writes the block's result straight into the block's cell. What the
    /// world barrier also checks is `verify`'s ([`Verify`]): ranks that
    /// passed different roots all return `Error::InvalidRoot` (naming
    /// `what.peer`), ranks that passed different counts all return the
    /// reference's count.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the operands, apart
    pub(super) fn reduce_staged<T: Equivalence, O: Operation<T>>(
        &self,
        k: usize,
        word: u64,
        src: *const T,
        count: u32,
        reference: u32,
        verify: Verify,
        op: &O,
        what: WaitFor,
    ) -> Result<Result<(), u32>, Error> {
        self.record_wait(what);
        // The block's cell of this staging half is written only by the
        // block's first rank, in the tree.
        let dest = self.block_cell(self.block);
        self.block_tree(self.block_dim(), k, word, src, count, dest, op);
        // Every rank reads the same verdicts, so every rank of the block
        // takes the same branches (and block barriers) below.
        match verify {
            Verify::Nothing => {
                self.world_barrier_recorded(what)?;
                return Ok(Ok(()));
            }
            Verify::Counts => {
                self.world_barrier_recorded(what)?;
            }
            Verify::RootAndCount(key) => {
                // The count less one: the commonest reduce, one element to
                // root 0, is then a key of 0, judged from the barrier's
                // counts with no key word loaded (`FLAGGED`); any other
                // agrees or differs exactly as the count itself would.
                if self.keyed_barrier::<2, false>(
                    what,
                    Some([key, count.wrapping_sub(1)]),
                    Arrival::All,
                    true,
                    core::ptr::null(),
                    Carry::Own,
                )? {
                    // Every rank passed this root and this count, which
                    // is the reference's too; a saturated count is no
                    // count (`COUNT_MISMATCH`).
                    return Ok(if count == COUNT_MISMATCH {
                        Err(count)
                    } else {
                        Ok(())
                    });
                }
                // Something disagreed (an erroneous program): the root
                // first, as every opening ranks them, in one more keyed
                // barrier on the root alone, which every rank passes
                // (they all read the verdict above); then the counts,
                // below.
                if !self.keyed_barrier::<1, false>(
                    what,
                    Some([key]),
                    Arrival::All,
                    true,
                    core::ptr::null(),
                    Carry::Own,
                )? {
                    return Err(Error::InvalidRoot {
                        root: what.peer,
                        size: self.size(),
                    });
                }
            }
        }
        // The block's ranks share the check of the block results' count words.
        let mut mismatch = false;
        let mut block = self.thread;
        while block < self.blocks() {
            // `COUNT_MISMATCH` is never a count that agrees, even with a
            // rank's own saturated count of `u32::MAX` elements or more.
            // SAFETY: block cells were written before the barrier; this half is
            // written again only after the next round's barrier
            // (`begin_staging_round`).
            let word = unsafe { core::ptr::read(self.block_cell(block) as *const u32) };
            shim::note_global(self.block_cell(block), 4, false);
            if word != count || word == COUNT_MISMATCH {
                mismatch = true;
                break;
            }
            block += self.block_dim();
        }
        // The block's verdict is the count of its ranks that found a
        // mismatch (`bar.red.popc`): no memory round trip.
        if shim::block_barrier_count(mismatch) != 0 {
            // SAFETY: the reference rank's own-count word was written before
            // the barrier; this half is restaged only after the next round's
            // barrier.
            let expected = unsafe { core::ptr::read(self.rank_cell(reference).add(4) as *const u32) };
            shim::note_global(self.rank_cell(reference).wrapping_add(4), 4, false);
            return Ok(Err(expected));
        }
        Ok(Ok(()))
    }

    /// Combines the operands of this block's first `active` ranks (`k`
    /// elements each at `src`, or one of at most 8 bytes in `word` when
    /// `src` is null: [`to_word`]) and their `count` words into `dest` (a
    /// cell: the count word, then the elements), in rank order, with the
    /// block's hardware: a shuffle tree per warp ([`hardware::warp_fold`]:
    /// lower lanes on the left), the warps' partials in the block's shared
    /// scratch ([`BlockStage`]; when `warps × k` elements do not fit there,
    /// in the cell of each warp's first rank), and a shuffle tree of the
    /// partials in warp 0. Three block barriers
    /// whatever the block size; the thesis's tree of neighbours in global
    /// memory took `log2(active) + 1`, a memory round trip after each. A
    /// count word that differs from the first rank's (inside a warp, or
    /// between warps) makes the result's count word `COUNT_MISMATCH`.
    /// Every rank of the block calls it; the block's first rank writes
    /// `dest`, which the closing block barrier publishes to the block.
    ///
    /// The barriers and shuffles are in one out-of-line copy
    /// ([`block_tree_at`]), called with this world's scalars.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the operands and the destination
    pub(super) fn block_tree<T: Equivalence, O: Operation<T>>(
        &self,
        active: u32,
        k: usize,
        word: u64,
        src: *const T,
        count: u32,
        dest: *mut u8,
        op: &O,
    ) {
        block_tree_at::<T, O>(
            self.base,
            self.rank,
            self.thread,
            self.block,
            self.staging_round.get(),
            word,
            src,
            count,
            active,
            k,
            dest,
            op,
        );
    }

    /// [`World::block_tree`] over the data of the cells of this block's
    /// ranks (`k` elements each, count word first) into the cell of the
    /// block's first rank.
    #[inline(always)]
    pub(super) fn block_tree_of_cells<T: Equivalence, O: Operation<T>>(&self, active: u32, k: usize, op: &O) {
        let cell = self.rank_cell(self.rank);
        // SAFETY: this rank's own cell: its count word, then its elements
        // (a lane past `active` reads its stale cell, which no lane
        // combines).
        let (count, src) = unsafe {
            (
                core::ptr::read(cell as *const u32),
                cell.add(CELL_HEADER) as *const T,
            )
        };
        let leader = self.rank_cell(self.block_leader());
        self.block_tree(active, k, 0, src, count, leader, op);
    }

    /// The body of [`World::block_tree`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // `block_tree`'s
    pub(super) fn block_tree_body<T: Equivalence, O: Operation<T>>(
        &self,
        active: u32,
        k: usize,
        word: u64,
        src: *const T,
        count: u32,
        dest: *mut u8,
        op: &O,
    ) {
        // Also orders the shared scratch: the ranks' previous collective (a
        // block communicator's) may read it until every rank has come here.
        // A block short of a rank that returned (no shuffle may name it) skips
        // the combination; the world barrier that follows fails it.
        let whole = shim::block_barrier_count(true) == self.block_dim();
        let lane = self.thread % 32;
        let warp = self.thread / 32;
        let warps = active.div_ceil(32);
        let size = core::mem::size_of::<T>();
        let stage = shim::shared_block::<{ core::mem::size_of::<BlockStage>() }>() as *mut BlockStage;
        // SAFETY: the stage's fields, inside the shared scratch.
        let (counts, shared) = unsafe {
            (
                core::ptr::addr_of_mut!((*stage).counts) as *mut u32,
                core::ptr::addr_of_mut!((*stage).partials) as *mut u8,
            )
        };
        // Where warp `w`'s partial `i` lives: `base + w × stride + i × size`.
        let (base, stride) = if warps as usize * k * size <= PARTIAL_BYTES {
            (shared, k * size)
        } else {
            // SAFETY: the data area of the block's first cell; cells of the
            // warps' first ranks are `32 × collective_bytes` apart.
            let first = unsafe { self.rank_cell(self.block_leader()).add(CELL_HEADER) };
            (first, 32 * self.collective_bytes())
        };
        let mask = shim::warp_mask();
        if whole && warp < warps {
            let n = (active - 32 * warp).min(32);
            let c0 = shim::shfl_sync(mask, count, 0);
            let differs = shim::vote_any_sync(mask, lane < n && count != c0);
            if lane == 0 {
                // SAFETY: this warp's count word of the stage.
                unsafe {
                    counts
                        .add(warp as usize)
                        .write(if differs { COUNT_MISMATCH } else { count })
                };
            }
            if !differs {
                // Equal count words: the same `k` on every lane of the warp.
                for i in 0..k {
                    let x = if src.is_null() {
                        from_word(word)
                    } else {
                        // SAFETY: element `i < k` of this rank's operands
                        // (`block_tree`'s contract).
                        unsafe { core::ptr::read(src.add(i)) }
                    };
                    let x = hardware::warp_fold(mask, lane, n, x, op);
                    if lane == 0 {
                        // SAFETY: partial `i` of this warp, inside the stage
                        // (`warps × k` elements fit) or in this rank's own cell,
                        // whose element `i`, where it held this rank's
                        // operands, was read above.
                        unsafe { core::ptr::write(base.add(warp as usize * stride + i * size) as *mut T, x) };
                    }
                }
            }
        }
        shim::block_barrier();
        if whole && warp == 0 {
            // SAFETY: the warps' count words, written before the barrier.
            let (c0, c) = unsafe { (counts.read(), counts.add(lane.min(warps - 1) as usize).read()) };
            if shim::vote_any_sync(mask, c != c0) || c0 == COUNT_MISMATCH {
                if lane == 0 {
                    // SAFETY: `dest`, a cell that only the block's first
                    // rank (this one) writes.
                    unsafe { core::ptr::write(dest as *mut u32, COUNT_MISMATCH) };
                }
            } else {
                for i in 0..k {
                    let from = lane.min(warps - 1) as usize;
                    // SAFETY: partial `i` of warp `from`, written before the
                    // barrier.
                    let y = unsafe { core::ptr::read(base.add(from * stride + i * size) as *const T) };
                    let y = hardware::warp_fold(mask, lane, warps, y, op);
                    if lane == 0 {
                        // SAFETY: element `i` of `dest` (as above); where the
                        // partials live there, every lane read element `i`
                        // before the shuffles that produced `y`.
                        unsafe { core::ptr::write((dest.add(CELL_HEADER) as *mut T).add(i), y) };
                    }
                }
                if lane == 0 {
                    // SAFETY: as above.
                    unsafe { core::ptr::write(dest as *mut u32, c0) };
                }
            }
        }
        shim::block_barrier();
    }

    /// Combines the block results of blocks `0..blocks` (`k` elements each,
    /// their count words checked; `blocks >= 1`) in block order, in this
    /// warp alone, every lane of which calls it: lane `l` folds a run of
    /// consecutive blocks, its loads issued together, then a shuffle tree
    /// folds the runs, lower lanes on the left (MPI 4.1 §6.9.1), and every
    /// lane gets the result by a shuffle: element 0 returned, and every
    /// element written to `out` unless it is null. No block barrier: the
    /// world barrier published the block cells, and the result reaches the
    /// lanes in registers. Called after a world barrier that passed, so
    /// every lane of the warp is here.
    #[inline(always)]
    pub(super) fn combine_in_warp<T: Equivalence, O: Operation<T>>(
        &self,
        blocks: u32,
        k: usize,
        out: *mut T,
        op: &O,
    ) -> T {
        let mask = shim::warp_mask();
        let lane = self.thread % 32;
        let per = blocks.div_ceil(mask.count_ones());
        let runs = blocks.div_ceil(per);
        let first = lane.min(runs - 1) * per;
        let end = (first + per).min(blocks);
        let size = core::mem::size_of::<T>();
        // SAFETY: a `Pod` is valid zeroed (returned as it is when `k` is 0).
        let mut result: T = unsafe { core::mem::zeroed() };
        for i in 0..k {
            let at = |b: u32| -> *const T {
                // SAFETY: element `i < k <= per_round` of block `b`'s cell,
                // inside the block scratch.
                unsafe { (self.block_cell(b).add(CELL_HEADER) as *const T).add(i) }
            };
            let x = shim::independent(|| {
                shim::note_global(at(first) as *const u8, size, false);
                // SAFETY: block cells were written before the world barrier;
                // this half is written again only after the next round's
                // barrier (`begin_staging_round`).
                let mut acc = unsafe { core::ptr::read(at(first)) };
                for b in first + 1..end {
                    shim::note_global(at(b) as *const u8, size, false);
                    // SAFETY: as above.
                    acc = op.apply(&acc, &unsafe { core::ptr::read(at(b)) });
                }
                acc
            });
            let y = hardware::warp_fold(mask, lane, runs, x, op);
            let y = hardware::shfl_value(mask, &y, 0);
            if i == 0 {
                result = y;
            }
            if !out.is_null() {
                // SAFETY: element `i < k` of `out` (the caller's contract).
                unsafe {
                    shim::note_global(out.add(i) as *const u8, size, true);
                    core::ptr::write(out.add(i), y);
                }
            }
        }
        result
    }

    /// Combines the staged results of blocks `0..blocks` (`k` elements
    /// each, counts already checked equal to `count`; `blocks >= 1`) in block
    /// order into the cell of this block's first rank. Every rank of the block calls it: rank `t` folds a
    /// contiguous run of blocks into its own cell, then a block tree combines
    /// the runs, so the order is block order and the critical path is a few
    /// memory round trips instead of one per block.
    pub(super) fn combine_blocks<T: Equivalence, O: Operation<T>>(
        &self,
        blocks: u32,
        k: usize,
        count: u32,
        op: &O,
    ) {
        let per_rank = blocks.div_ceil(self.block_dim());
        let active = blocks.div_ceil(per_rank);
        if self.thread < active {
            let first = self.thread * per_rank;
            let end = (first + per_rank).min(blocks);
            let cell = self.rank_cell(self.rank);
            let data = |b: u32| -> *const T {
                // SAFETY: the data area of a block cell, inside the block scratch.
                unsafe { self.block_cell(b).add(CELL_HEADER) as *const T }
            };
            // SAFETY: the block cells hold `k` staged elements each (counts
            // checked), published by the round's barrier and not written again
            // before the next round's; our own cell is free after the block
            // tree (its result went to the block cell) and holds
            // `per_round >= k` elements.
            unsafe {
                core::ptr::write(cell as *mut u32, count);
                let out = cell.add(CELL_HEADER) as *mut T;
                for i in 0..k {
                    shim::note_global(data(first).add(i).cast(), core::mem::size_of::<T>(), false);
                    let mut acc = core::ptr::read(data(first).add(i));
                    for b in first + 1..end {
                        shim::note_global(data(b).add(i).cast(), core::mem::size_of::<T>(), false);
                        acc = op.apply(&acc, &core::ptr::read(data(b).add(i)));
                    }
                    core::ptr::write(out.add(i), acc);
                }
            }
        }
        self.block_tree_of_cells(active, k, op);
    }

    // Not inlined: a root and its warp-mates reach this through different
    // API calls, and must meet at one copy of its barriers and shuffles
    // (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
    #[inline(never)]
    pub(super) fn broadcast_impl<B: BufferMut + ?Sized>(&self, root: i32, buf: &mut B) -> Result<(), Error> {
        // A rank with an invalid root still takes part in the first round's
        // barrier, with a key that agrees with nobody: every rank fails
        // alike, whether all passed that root or only some.
        let datatype = buf.datatype();
        let (side, len) = Side::of_mut(buf);
        let is_root = root == self.rank();
        // The header's length word is 32 bits: a root buffer of 2^32 bytes
        // or more fails (`MPI_ERR_BUFFER`, as an over-long send) instead of
        // broadcasting a length cut to its low bits; it joins the barrier
        // with a key that agrees with nobody, so the others fail too.
        let too_long = is_root && len > u32::MAX as usize;
        let key = if self.check_rank(root).is_ok() && !too_long {
            root as u32
        } else {
            NO_KEY
        };
        let mut walked = true;
        let what = WaitFor {
            operation: WaitCall::Broadcast,
            peer: root,
            tag: -1,
        };
        let capacity = self.collective_bytes() - CELL_HEADER;
        let mut offset = 0usize;
        // The root's header (its length and datatype words) of the first
        // round, which every round repeats, and what a non-root rank found
        // wrong with it: the error is built from these after the rounds,
        // so that its words are not live across them.
        let mut header = 0u64;
        let mut mismatch = Mismatch::None;
        loop {
            self.begin_staging_round();
            let area = self.broadcast_area();
            if is_root {
                let n = len.saturating_sub(offset).min(capacity);
                // SAFETY: only the root writes the area (in an erroneous
                // program ranks that disagree on the root may each write it:
                // then the first round's barrier fails every rank and
                // nobody reads it); this half was last read in the round
                // before the last one, which every rank finished before
                // passing the last round's barrier.
                unsafe {
                    // Saturated: a longer buffer fails every rank above.
                    core::ptr::write(area as *mut u32, saturating_u32(len));
                    core::ptr::write(area.add(4) as *mut u32, datatype.id);
                    walked &= side.read_apart(offset, area.add(CELL_HEADER), n);
                }
            }
            // The first round's barrier also checks that every rank named
            // this root (MPI 4.1 §6.1); later rounds follow from the
            // agreed root's length. Ranks that disagree fail before they
            // copy anything, every one of them with `MPI_ERR_ROOT` (a rank
            // that believed itself the root learns it here too: it passed
            // the same barrier).
            // One barrier for every round (keyed in the first alone): its
            // second inlined copy cost the kernels registers.
            if !self.round_barrier(what, (offset == 0).then_some(key))? {
                if too_long {
                    return Err(Error::BufferTooLarge {
                        bytes: saturating_u32(len),
                        limit: u32::MAX,
                    });
                }
                return Err(Error::InvalidRoot {
                    root,
                    size: self.size(),
                });
            }
            // The header and the first 8 bytes of the chunk in one batch:
            // a broadcast of at most 8 bytes needs no other load.
            // SAFETY: the area is 8-byte aligned and holds `collective_bytes
            // >= 64` bytes, all of it the root's or zero, published by the
            // barrier; nobody writes this half until after the next round's
            // barrier.
            let (words, head) = shim::independent(|| unsafe {
                (
                    shim::load_payload_u64(area),
                    shim::load_payload_u64(area.add(CELL_HEADER)),
                )
            });
            // The length word, then the datatype's (little-endian, as
            // every target of this crate).
            let (total, id) = (words as u32 as usize, (words >> 32) as u32);
            if offset == 0 && !is_root {
                header = words;
                mismatch = if id != datatype.id && datatype.id != crate::datatype::ID_BYTE {
                    Mismatch::Type
                } else if total != len {
                    Mismatch::Count
                } else {
                    Mismatch::None
                };
            }
            if !is_root && mismatch != Mismatch::Type {
                let n = total.min(len).saturating_sub(offset).min(capacity);
                match side {
                    // SAFETY: `offset + n <= len` bytes of the buffer, the
                    // chunk's first `n` bytes are `head`'s.
                    Side::Plain(p) if n <= crate::engine::HEAD_BYTES => unsafe {
                        shim::store_head_bytes(p.add(offset), head, n)
                    },
                    // SAFETY: as above; `offset + n <= len`.
                    _ => walked &= unsafe { side.write_apart(offset, area.add(CELL_HEADER), n) },
                }
            }
            offset += capacity;
            if offset >= total {
                break;
            }
        }
        let (total, id) = (header as u32, (header >> 32) as u32);
        match mismatch {
            Mismatch::Type => Err(Error::TypeMismatch {
                status: crate::status::Status {
                    source: root,
                    tag: -1,
                    bytes: total,
                    datatype: id,
                },
                expected: datatype.id,
            }),
            Mismatch::Count => Err(Error::CountMismatch {
                count: saturating_u32(len / datatype.size.max(1) as usize),
                expected: total / datatype.size.max(1),
            }),
            Mismatch::None if !walked => Err(Error::Intern),
            Mismatch::None => Ok(()),
        }
    }

    pub(super) fn broadcast_area(&self) -> *mut u8 {
        let half = self.staging_half() * self.layout.collective_bytes;
        // SAFETY: the broadcast region (two halves) lies inside the world memory.
        unsafe { self.base.add(self.layout.broadcast + half) }
    }

    /// What this block's arrival at a world barrier of `what` asks the
    /// relay to carry to the other processes ([`BarrierPayload`]), in the
    /// current staging half: a broadcast's root's block, the area it
    /// filled; a reduce's or all-reduce's every block, its cell (the block
    /// tree's result), and the reference rank's block (the root, or rank
    /// 0 when there is no valid root: `World::reduce_impl`'s), that
    /// rank's cell header; the other carried collectives' every block,
    /// its cell and its ranks' cells (each rank writes only its own, and
    /// reads any rank's or block's after the barrier: their rounds, the
    /// argument agreement's two, the reduce-scatter's and scan's block
    /// results); a scatter's round (`carry` [`Carry::Root`]), every
    /// rank's cell from the root's block alone.
    fn barrier_payload(&self, what: WaitFor, carry: Carry) -> BarrierPayload {
        let here = |r: i32| self.check_rank(r).is_ok() && r as u32 / self.block_dim() == self.block;
        let half = if self.staging_half() == 1 {
            BarrierPayload::HALF
        } else {
            0
        };
        BarrierPayload(match what.operation {
            _ if carry == Carry::Root && here(what.peer) => BarrierPayload::ALL_RANK_CELLS | half,
            _ if carry == Carry::Root => 0,
            WaitCall::Broadcast if here(what.peer) => BarrierPayload::BROADCAST_AREA | half,
            WaitCall::Reduce | WaitCall::AllReduce => {
                let reference = match what.operation {
                    WaitCall::Reduce if self.check_rank(what.peer).is_ok() => what.peer,
                    _ => 0,
                };
                let cells = BarrierPayload::BLOCK_CELLS | half;
                if here(reference) {
                    cells | BarrierPayload::REFERENCE | (reference as u64) << 32
                } else {
                    cells
                }
            }
            WaitCall::Gather
            | WaitCall::Scatter
            | WaitCall::AllGather
            | WaitCall::AllToAll
            | WaitCall::ReduceScatter
            | WaitCall::Scan => BarrierPayload::BLOCK_CELLS | BarrierPayload::RANK_CELLS | half,
            _ => 0,
        })
    }
}

/// What a broadcast's non-root rank found wrong with the root's header
/// (`World::broadcast_impl`): its datatype, or its length.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mismatch {
    None,
    Type,
    Count,
}

/// Whether a world barrier of `operation` crosses processes with the
/// bytes its ranks read after it ([`World::barrier_payload`]): the world's
/// collectives stay hierarchical across processes (inside each process,
/// the relays between them, inside each again; docs/distributed.md).
/// Only with the `distributed` feature.
#[inline(always)]
fn carried(operation: WaitCall) -> bool {
    cfg!(feature = "distributed")
        && matches!(
            operation,
            WaitCall::Broadcast
                | WaitCall::Reduce
                | WaitCall::AllReduce
                | WaitCall::Gather
                | WaitCall::Scatter
                | WaitCall::AllGather
                | WaitCall::AllToAll
                | WaitCall::ReduceScatter
                | WaitCall::Scan
        )
}

/// One round of [`World::reduce_impl`] after this rank staged its count
/// ([`World::stage_count`]): the block tree of its operands (at `src`, or
/// in `word`: [`World::reduce_staged`]), the world
/// barrier, the count check and, where this rank's warp combines, the
/// combination of the block results ([`World::combine_in_warp`]), whose
/// elements go to `out` (null: nowhere). Returns 0 and the result's
/// first element ([`to_word`]), or the failure as a word for [`step_error`]. The world is
/// passed as [`World::from_parts`]' scalars and the result by value, so that
/// the caller keeps nothing in local memory for the call. `flags`: bit 0,
/// this rank's warp combines the block results; bit 1, the world is
/// settled ([`RankState`](crate::communicator::RankState)); bit 2, this
/// rank gets the result; bit 3, the world is known to lie in this process
/// (`RankState`'s `local`).
// Not inlined: a root and its warp-mates reach this through different API
// calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
#[allow(clippy::too_many_arguments)] // scalars, to stay in registers (above)
fn reduce_step<T: Equivalence, O: Operation<T>>(
    base: *mut u8,
    rank: u32,
    thread: u32,
    block: u32,
    generation: u32,
    staging: u32,
    word: u64,
    src: *const T,
    count: u32,
    out: *mut T,
    k: usize,
    reference: u32,
    verify: Verify,
    flags: u32,
    op: &O,
    operation: WaitCall,
    peer: i32,
) -> (u64, u64) {
    // SAFETY: the scalars of the caller's attached world.
    let w = unsafe {
        World::from_parts(
            base,
            rank,
            thread,
            block,
            generation,
            staging,
            flags & 2 != 0,
            flags & 8 != 0,
        )
    };
    let what = WaitFor {
        operation,
        peer,
        tag: -1,
    };
    let failure = match w.reduce_staged::<T, O>(k, word, src, count, reference, verify, op, what) {
        Err(Error::InvalidRoot { .. }) => ErrorClass::Root as u64,
        Err(e) => crate::polling::barrier_word(e),
        Ok(Err(expected)) => (u64::from(expected) << 32) | ErrorClass::Count as u64,
        Ok(Ok(())) if flags & 1 != 0 => {
            let out = if flags & 4 != 0 {
                out
            } else {
                core::ptr::null_mut()
            };
            return (0, to_word(&w.combine_in_warp(w.blocks(), k, out, op)));
        }
        Ok(Ok(())) => 0,
    };
    // A failure says which generation the step's barriers reached.
    (failure, u64::from(w.barrier_generation.get()))
}

/// Whose cells a world barrier across processes carries to the other
/// processes ([`World::barrier_payload`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Carry {
    /// What each process's ranks wrote into their own cells (and its
    /// blocks into theirs): every collective's barrier but a scatter
    /// round's.
    Own,
    /// Every rank's cell, which the root wrote (a scatter's round,
    /// [`World::world_barrier_scattered`]): from the root's process alone.
    Root,
}

/// How a block takes part in a world barrier ([`World::keyed_barrier`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// Every block waits until every block has arrived; the arrival that
    /// completes the count resets the generation after next's words.
    All,
    /// A rooted barrier's root block: the root (thread `thread` of the
    /// block) makes the block's arrival and waits until every block has
    /// arrived, then resets those words, whoever completed the count; its
    /// block-mates leave after the opening block barrier.
    Root {
        /// The root's thread in the block.
        thread: u32,
    },
    /// The block arrives without waiting for anyone: its first rank's add
    /// is a release whose old value nobody waits for, and its ranks leave
    /// after the opening block barrier.
    Leaves,
}

impl Arrival {
    /// The thread of the block that makes its arrival.
    #[inline(always)]
    fn arriver(self) -> u32 {
        match self {
            Arrival::Root { thread } => thread,
            Arrival::All | Arrival::Leaves => 0,
        }
    }
}

/// What a reduction round's world barrier checks besides the arrivals
/// ([`World::reduce_staged`]).
#[derive(Clone, Copy)]
pub(super) enum Verify {
    /// The block results' count words (staged by the block trees), read
    /// after the barrier: an all-reduce's first round (keyed on the count
    /// instead, its barrier cost more than the check: 1.706 against 1.719
    /// µs for 8 bytes at 1,024 ranks, H200 profile), a scan's round, the
    /// argument agreement's.
    Counts,
    /// A reduce's first round: the barrier is keyed on the root (its key,
    /// [`NO_KEY`] for an invalid root) and the count, so that agreeing
    /// ranks read no count word; only a disagreement costs one more
    /// barrier (on the root alone) and the count words.
    RootAndCount(u32),
    /// Nothing: a later round (its counts were checked in the first).
    Nothing,
}

/// The error of a non-zero [`reduce_step`] word of a reduction of `count`
/// elements per rank that waited as `what`, in a world of `size` ranks: a
/// root disagreement (every rank read the same verdict of the keyed
/// barrier), a count mismatch (every rank read the same block counts, so
/// all stop here) with the reference rank's count in the high half, or the
/// world barrier's failure.
#[inline(always)]
fn step_error(word: u64, count: u32, what: WaitFor, size: i32) -> Error {
    if word as u32 == ErrorClass::Root as u32 {
        Error::InvalidRoot {
            root: what.peer,
            size,
        }
    } else if word as u32 == ErrorClass::Count as u32 {
        Error::CountMismatch {
            count,
            expected: (word >> 32) as u32,
        }
    } else {
        crate::polling::barrier_error(word, what)
    }
}

/// [`World::block_tree`] out of line, on the world rebuilt from its scalars
/// ([`World::from_parts`]; the tree passes no world barrier, so the
/// generation does not matter here).
// Not inlined: a root and its warp-mates reach this through different API
// calls, and must meet at one copy of its barriers and shuffles
// (docs/gpu.md, "GPU runs", 2026-11-24: two inlined copies hung).
#[inline(never)]
#[allow(clippy::too_many_arguments)] // scalars, to stay in registers (above)
fn block_tree_at<T: Equivalence, O: Operation<T>>(
    base: *mut u8,
    rank: u32,
    thread: u32,
    block: u32,
    staging: u32,
    word: u64,
    src: *const T,
    count: u32,
    active: u32,
    k: usize,
    dest: *mut u8,
    op: &O,
) {
    // SAFETY: the scalars of the caller's attached world.
    let w = unsafe { World::from_parts(base, rank, thread, block, 0, staging, false, false) };
    w.block_tree_body::<T, O>(active, k, word, src, count, dest, op);
}

/// The bytes of `x` in a word (the rest zero): an operand of at most 8
/// bytes passed by value to a function out of line, so that it stays in a
/// register (a larger `T`, or a pointer to `x`, would go through local
/// memory). 0 for a larger `T`.
#[inline(always)]
fn to_word<T: Equivalence>(x: &T) -> u64 {
    let mut w = 0u64;
    let n = core::mem::size_of::<T>();
    if n <= 8 {
        // SAFETY: `n <= 8` bytes of `x` into `w`; `T` is `Pod`.
        unsafe {
            core::ptr::copy_nonoverlapping(x as *const T as *const u8, &mut w as *mut u64 as *mut u8, n)
        };
    }
    w
}

/// The `T` whose bytes [`to_word`] put in `w` (zero for a larger `T`).
#[inline(always)]
fn from_word<T: Equivalence>(w: u64) -> T {
    let mut x = core::mem::MaybeUninit::<T>::zeroed();
    let n = core::mem::size_of::<T>();
    if n <= 8 {
        // SAFETY: `n <= 8` bytes of `w` into `x`.
        unsafe {
            core::ptr::copy_nonoverlapping(&w as *const u64 as *const u8, x.as_mut_ptr() as *mut u8, n)
        };
    }
    // SAFETY: a `Pod`, valid for any bytes, zeroed ones included.
    unsafe { x.assume_init() }
}
