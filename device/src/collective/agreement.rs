//! The argument agreement that the newer collectives start with.
//!
//! Before moving any data, the ranks agree on one small [`Agreement`]:
//! the minimum and maximum of a few values each rank passes (its count, the
//! root it names, its datatype id, a checksum of its counts array, the
//! largest part it sends or receives), the largest error class any rank
//! found in its own arguments, and whether some rank's buffer is out of
//! the others' reach (then the data is staged through the cells), and
//! the count the root (or rank 0) passed, which a count mismatch names.
//! Every rank reads the same result, so every rank decides alike whether
//! the data rounds run (their number comes from the agreed maximum) or
//! everybody returns an error. A wrong argument
//! therefore never turns into a hang, and no rank returns `Ok` from a
//! collective another rank found erroneous.
//!
//! Cost: one keyed world barrier when every rank passed the same values
//! and no error ([`World::agree`]'s quick round); otherwise that and one
//! round of the hierarchical all-reduce (one world barrier and the block
//! trees) for 48 bytes per rank.

use super::operation::UserOperation;
use crate::communicator::{Communicator, World};
use crate::datatype::{user_datatype_id, Datatype, Equivalence};
use crate::error::{saturating_u32, Error, ErrorClass};
use crate::layout::BARRIER_KEY_WORDS;
use crate::polling::WaitFor;
use crate::status::Status;
use bytemuck::{Pod, Zeroable};

/// Bytes before the data in a scratch cell: the combined count word (or
/// `COUNT_MISMATCH`) and the rank's own count, so that the data is 8-byte aligned.
pub(super) const CELL_HEADER: usize = 8;

/// Values the ranks agree on.
pub(crate) const SLOTS: usize = 5;
/// Slot: the count that must be equal on every rank.
pub(crate) const COUNT: usize = 0;
/// Slot: the root every rank names (`u32::MAX` for none).
pub(crate) const ROOT: usize = 1;
/// Slot: the datatype id.
pub(crate) const TYPE: usize = 2;
/// Slot: a checksum of an array every rank passes alike (counts).
pub(crate) const CHECK: usize = 3;
/// Slot: a length of which only the maximum matters (bytes of the largest
/// part, the number of staging rounds follows from it).
pub(crate) const LEN: usize = 4;

/// What one rank passes to the agreement, and what all of them agree on.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Zeroable)]
pub(crate) struct Agreement {
    min: [u32; SLOTS],
    max: [u32; SLOTS],
    /// Largest error class found by a rank in its own arguments (0: none),
    /// with [`STAGED`] set when some rank's buffer cannot be reached by
    /// the other ranks, so that every rank stages the data through the
    /// cells (clear: every rank may copy straight into the others'
    /// buffers).
    class: u32,
    /// The reference rank's (the root's, or rank 0's without one) `COUNT`
    /// slot plus 1, from that rank; 0 from every other rank, so that the
    /// maximum is the reference's ([`World::agree`]'s full round sets it).
    reference: u32,
}

/// [`Agreement`]'s `class` bit: some rank stages (its error class is in
/// the bits below, a few small codes).
const STAGED: u32 = 1 << 31;

/// First byte of a cell that the agreement round leaves alone (the round
/// stages and combines `CELL_HEADER` + an [`Agreement`]'s bytes, as
/// words: [`Agreement::write_lowest`]): a
/// gather's or scatter's root, and every rank of an all-gather or
/// all-to-all, publishes its buffer's address there, for the ranks to
/// read after the agreement (`movement`).
pub(crate) const AGREEMENT_END: usize = CELL_HEADER + core::mem::size_of::<Agreement>();

// The smallest cell (64 bytes) holds the agreement and an address after it.
const _: () = assert!(AGREEMENT_END + 8 <= 64);

// The quick round's key: the staged flag and every slot.
const _: () = assert!(SLOTS + 1 == BARRIER_KEY_WORDS);

/// Words of an [`Agreement`] in its full round's form ([`Agreement::write_lowest`]).
const LOWEST_WORDS: usize = 2 * SLOTS + 2;

/// The full round's elements: the words in pairs.
const LOWEST_PAIRS: usize = LOWEST_WORDS / 2;

// The words fill the bytes of a record (`AGREEMENT_END`), in pairs.
const _: () =
    assert!(LOWEST_WORDS * 4 == core::mem::size_of::<Agreement>() && LOWEST_WORDS.is_multiple_of(2));

/// The full round's combination of two elements of the lowest form (two
/// words each): each word's minimum. The round is an element-wise
/// reduction of plain words, with no record held whole in registers.
fn lowest(a: &u64, b: &u64) -> u64 {
    let low = (*a as u32).min(*b as u32);
    let high = ((*a >> 32) as u32).min((*b >> 32) as u32);
    u64::from(high) << 32 | u64::from(low)
}

impl Agreement {
    /// Every slot 0, no error.
    pub(crate) fn new() -> Agreement {
        Agreement::zeroed()
    }

    /// Sets slot `slot` to `v`.
    pub(crate) fn set(&mut self, slot: usize, v: u32) {
        if let (Some(lo), Some(hi)) = (self.min.get_mut(slot), self.max.get_mut(slot)) {
            *lo = v;
            *hi = v;
        }
    }

    /// Sets slot `slot` (a count or a length) to `n`. The slot is a 32-bit
    /// word: a value of `u32::MAX` or more is stored saturated and fails
    /// the agreement with `MPI_ERR_COUNT` (on every rank: the class travels
    /// with the record) instead of being compared, or counted into rounds,
    /// cut to its low bits.
    pub(crate) fn set_count(&mut self, slot: usize, n: usize) {
        self.set(slot, saturating_u32(n));
        if n >= u32::MAX as usize {
            self.fail_with(ErrorClass::Count);
        }
    }

    /// Says that this rank's buffer is out of the other ranks' reach: every
    /// rank then stages the data ([`direct`](Self::direct) is false).
    pub(crate) fn stage(&mut self) {
        self.class |= STAGED;
    }

    /// Whether every rank's buffer is in the others' reach.
    pub(crate) fn direct(&self) -> bool {
        self.class & STAGED == 0
    }

    /// The largest error class a rank found in its own arguments (0: none).
    fn error_class(&self) -> u32 {
        self.class & !STAGED
    }

    /// Records an error class of this rank's own.
    pub(crate) fn fail_with(&mut self, class: ErrorClass) {
        self.class = self.error_class().max(class as u32) | (self.class & STAGED);
    }

    /// The quick round's key: the staged flag, then the slots' values
    /// (a rank's minimum and maximum of a slot are its value); none for a
    /// rank that found an error of its own.
    fn key(&self) -> Option<[u32; BARRIER_KEY_WORDS]> {
        let [a, b, c, d, e] = self.min;
        (self.error_class() == 0).then_some([u32::from(!self.direct()), a, b, c, d, e])
    }

    /// Writes this record as words whose element-wise minimum over the
    /// ranks is the agreement's ([`Agreement::from_lowest`]) at `to`: the
    /// slots' minima as they are, their maxima and the error class and
    /// the reference complemented (the minimum of complements is the
    /// complement of the maximum), and the staged flag as 0 (staged) or 1
    /// in the word of [`LEN`]'s minimum, which nothing reads (only that
    /// slot's maximum matters).
    ///
    /// # Safety
    /// `to` is valid for writes of [`LOWEST_WORDS`] words, 4-byte aligned.
    unsafe fn write_lowest(&self, to: *mut u32) {
        // SAFETY: words below `LOWEST_WORDS` (the caller's contract).
        unsafe {
            for i in 0..SLOTS {
                to.add(i).write(if i == LEN {
                    u32::from(self.direct())
                } else {
                    self.min[i]
                });
                to.add(SLOTS + i).write(!self.max[i]);
            }
            to.add(2 * SLOTS).write(!self.error_class());
            to.add(2 * SLOTS + 1).write(!self.reference);
        }
    }

    /// The agreement whose [`Agreement::write_lowest`] words' minima over
    /// the ranks are `w`.
    fn from_lowest(w: &[u32; LOWEST_WORDS]) -> Agreement {
        let mut a = Agreement::new();
        for i in 0..SLOTS {
            a.min[i] = w[i];
            a.max[i] = !w[SLOTS + i];
        }
        a.min[LEN] = a.max[LEN];
        a.class = !w[2 * SLOTS] | if w[LEN] == 0 { STAGED } else { 0 };
        a.reference = !w[2 * SLOTS + 1];
        a
    }

    /// Records a local error's class.
    pub(crate) fn fail(&mut self, e: &Error) {
        self.fail_with(e.class());
    }

    /// Whether every rank passed the same value in `slot`.
    pub(crate) fn same(&self, slot: usize) -> bool {
        self.min.get(slot) == self.max.get(slot)
    }

    /// The smallest value passed in `slot`.
    pub(crate) fn min(&self, slot: usize) -> u32 {
        self.min.get(slot).copied().unwrap_or(0)
    }

    /// The largest value passed in `slot`.
    pub(crate) fn max(&self, slot: usize) -> u32 {
        self.max.get(slot).copied().unwrap_or(0)
    }

    /// Whether the data rounds may run: no rank failed and the `COUNT`,
    /// `ROOT`, `TYPE` and `CHECK` slots agree.
    pub(crate) fn ok(&self) -> bool {
        self.error_class() == 0 && self.same(COUNT) && self.same(ROOT) && self.same(TYPE) && self.same(CHECK)
    }

    /// The error of a rank whose own arguments were fine when the
    /// agreement is not [`ok`](Self::ok): a bad or disagreeing root gives
    /// `MPI_ERR_ROOT`, disagreeing datatypes `MPI_ERR_TYPE`, anything else
    /// `MPI_ERR_COUNT` (`count`: this rank's count; `expected`: the root's,
    /// or rank 0's without a root, as [`Error::CountMismatch`] promises;
    /// the other end of the agreed range if that rank's never came).
    pub(crate) fn error(&self, world: &World, root: i32, count: u32, datatype: u32) -> Error {
        if !self.same(ROOT) || self.error_class() == ErrorClass::Root as u32 {
            return Error::InvalidRoot {
                root,
                size: world.size(),
            };
        }
        if !self.same(TYPE) || self.error_class() == ErrorClass::Type as u32 {
            let other = if self.min(TYPE) == datatype {
                self.max(TYPE)
            } else {
                self.min(TYPE)
            };
            return Error::TypeMismatch {
                status: Status {
                    source: root,
                    tag: -1,
                    bytes: 0,
                    datatype: other,
                },
                expected: datatype,
            };
        }
        let expected = match self.reference {
            0 if self.min(COUNT) == count => self.max(COUNT),
            0 => self.min(COUNT),
            r => r - 1,
        };
        Error::CountMismatch { count, expected }
    }
}

/// A checksum of a counts array (FNV-1a over its words), equal on every rank
/// that passed the same array.
pub(crate) fn checksum(counts: &[i32]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &c in counts {
        h ^= c as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

impl World {
    /// All-reduces `mine` over the world: every rank gets the same
    /// [`Agreement`].
    ///
    /// First the quick round: one keyed world barrier
    /// ([`World::world_barrier_agreeing_words`]) on a key of this rank's
    /// [`direct`](Agreement::direct) flag and its slots, or one that agrees
    /// with nobody from a rank that found an error of its own. When every
    /// rank passed the same slots, no error and the same flag, each rank's
    /// own record is the agreement: one world barrier, where the full
    /// round costs a world barrier and two block trees of 48 bytes.
    /// Otherwise the full round all-reduces the records, for the error
    /// every rank returns and a varcount form's longest part; it clears
    /// this rank's published buffer first (published for the quick round's
    /// cells, which the full round leaves behind) and stages, so that no
    /// rank copies through an address read from the wrong round. The
    /// records travel as words whose minima are the agreement's
    /// ([`Agreement::write_lowest`]), reduced element-wise in pairs: a
    /// block tree of the record whole held two records in registers at
    /// each step of its shuffles (rsmpi's `scatter` 72 -> 66 registers,
    /// `scan` 96 -> 86, sm_90; docs/performance.md).
    pub(crate) fn agree(&self, mine: Agreement, what: WaitFor) -> Result<Agreement, Error> {
        let mut none = None;
        self.agree_in::<false, true>(mine, what, None, &mut none)
    }

    /// [`World::agree`] for a collective that reads the agreed maximum of
    /// [`LEN`] only when it stages: the quick round's key leaves a direct
    /// rank's `LEN` out, so ranks whose largest parts differ agree in one
    /// keyed barrier. The result's `LEN` is then this rank's own, and only
    /// a result that is not [`direct`](Agreement::direct) (a full round,
    /// of every rank's `LEN`) holds the maximum.
    pub(crate) fn agree_len_if_staged(&self, mine: Agreement, what: WaitFor) -> Result<Agreement, Error> {
        let mut none = None;
        self.agree_in::<false, false>(mine, what, None, &mut none)
    }

    /// [`World::agree`], and for a rooted collective (`root` given: the
    /// root this rank names, in range) the address the root published
    /// for this round ([`World::publish_buffer`]) when the quick round
    /// agreed and the world has more than one block: loaded by each
    /// block's first rank in the batch of the keys
    /// ([`World::fetched_with_keys`]), where every rank would otherwise
    /// load it after the barrier. `None`: load it with
    /// [`World::published_buffer`].
    ///
    /// Inlined into its two callers (the gather's and the scatter's
    /// implementations, themselves never inlined): as a call it took its
    /// record, its `WaitFor` and its result through the caller's local
    /// memory, 128 bytes of stack (sm_90: rsmpi's `scatter` 84 registers
    /// and 264 bytes of stack as a call, 76 and 160 inlined; docs/gpu.md).
    #[inline(always)]
    pub(crate) fn agree_fetching(
        &self,
        mine: Agreement,
        what: WaitFor,
        root: Option<u32>,
    ) -> Result<(Agreement, Option<u64>), Error> {
        let mut fetched = None;
        let agreed = self.agree_in::<true, true>(mine, what, root, &mut fetched)?;
        Ok((agreed, fetched))
    }

    /// [`World::agree`] (without `FETCH`, which compiles the fetch out)
    /// and [`World::agree_fetching`] (the address in `fetched`), each its
    /// own copy; without `LEN_KEYED`, [`World::agree_len_if_staged`].
    #[inline(always)]
    fn agree_in<const FETCH: bool, const LEN_KEYED: bool>(
        &self,
        mut mine: Agreement,
        what: WaitFor,
        root: Option<u32>,
        fetched: &mut Option<u64>,
    ) -> Result<Agreement, Error> {
        self.begin_staging_round();
        let fetch = match root {
            Some(r) if FETCH => self.published_at(r),
            _ => core::ptr::null(),
        };
        let key = mine.key().map(|mut k| {
            if !LEN_KEYED && mine.direct() {
                k[1 + LEN] = 0;
            }
            k
        });
        if self.world_barrier_agreeing_words::<FETCH>(what, key, fetch)? {
            if FETCH && root.is_some() {
                *fetched = self.fetched_with_keys();
            }
            return Ok(mine);
        }
        self.publish_buffer(core::ptr::null_mut());
        mine.stage();
        // The reference rank says what it passed, for a count mismatch's
        // error (`Agreement::error`).
        let named = mine.min(ROOT);
        if self.rank() as u32 == if named == u32::MAX { 0 } else { named } {
            mine.reference = mine.min(COUNT).saturating_add(1);
        }
        let op = UserOperation::commutative(lowest);
        let k = LOWEST_PAIRS as u32;
        // This rank's words straight into its cell, as `stage_operands`
        // stages its operands (a copy from an array would put the array
        // in local memory).
        self.stage_count(k);
        // SAFETY: this rank's own cell, whose data holds `LOWEST_WORDS`
        // words (48 bytes, the smallest cell's 56) and which no other rank
        // touches before the round's block barrier; 8-byte aligned.
        let data = unsafe { self.rank_cell(self.rank).add(CELL_HEADER) as *mut u32 };
        crate::shim::note_global(data as *const u8, LOWEST_WORDS * 4, true);
        // SAFETY: the cell's data (above).
        unsafe { mine.write_lowest(data) };
        // Every rank passes the same number of pairs, so the round's count
        // check cannot fail; it returns an `Err` only for a failed wait.
        let _ = self.reduce_cell::<u64, _>(LOWEST_PAIRS, k, 0, &op, what)?;
        self.combine_blocks(self.blocks(), LOWEST_PAIRS, k, &op);
        let leader = self.rank_cell(self.block_leader());
        // SAFETY: the leader's cell holds the combined words, published by
        // the block tree's closing barrier and not written again before the
        // next round's world barrier; the data is 8-byte aligned.
        let agreed = unsafe { core::ptr::read(leader.add(CELL_HEADER) as *const [u32; LOWEST_WORDS]) };
        crate::shim::note_global(
            leader.wrapping_add(CELL_HEADER),
            core::mem::size_of::<[u32; LOWEST_WORDS]>(),
            false,
        );
        Ok(Agreement::from_lowest(&agreed))
    }
}

/// The [`Kind`](crate::codes::Kind) code of a [`Call`](crate::codes::Call)
/// code (what [`Error::CollectiveMismatch`] names, as for the non-blocking
/// collectives); 0 for any other call.
pub(crate) fn kind_code(call: u32) -> u32 {
    use crate::codes::{Call, Kind};
    match Call::from_code(call) {
        Some(Call::Barrier) => Kind::Barrier as u32,
        Some(Call::Broadcast) => Kind::Broadcast as u32,
        Some(Call::Reduce) => Kind::Reduce as u32,
        Some(Call::AllReduce) => Kind::AllReduce as u32,
        _ => 0,
    }
}

/// Bit of an [`Opening`]'s call word: the exclusive scan (which must not
/// pair with an inclusive one).
pub(crate) const EXCLUSIVE_CALL: u32 = 1 << 8;
/// Bit of an [`Opening`]'s call word: the varcount form of a gather,
/// scatter, all-gather or all-to-all (which must not pair with the fixed
/// one: their messages differ).
pub(crate) const VARCOUNT_CALL: u32 = 1 << 9;

/// What a rank passes to the opening of a sub-communicator's collective
/// (`CommView::open`): the words every member must pass alike.
#[derive(Clone, Copy)]
pub(crate) struct Opening {
    /// The [`Call`](crate::codes::Call) code, with [`EXCLUSIVE_CALL`] or
    /// [`VARCOUNT_CALL`].
    pub(crate) call: u32,
    /// The root (`u32::MAX` for none).
    pub(crate) root: u32,
    /// The count every member passes (elements of a reduction, bytes of
    /// a part; 0 where members pass different counts), saturated: a count
    /// of `u32::MAX` or more is `u32::MAX`, which fails the opening
    /// ([`Opened::of`]).
    pub(crate) count: u32,
    /// The datatype id.
    pub(crate) datatype: u32,
    /// A checksum of an array every member passes alike (counts), or 0.
    pub(crate) check: u32,
}

/// Words of an [`Opened`] record, in the order of precedence of their
/// disagreements.
const OPEN_WORDS: usize = 5;
const O_CALL: usize = 0;
const O_ROOT: usize = 1;
const O_COUNT: usize = 2;
const O_TYPE: usize = 3;
const O_CHECK: usize = 4;

/// The lowest and highest of each [`Opening`] word over the members that
/// a record has heard from, the largest class of their own argument
/// errors, and the reference member's count: what the opening's messages
/// carry (48 bytes) and combine.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Opened {
    lo: [u32; OPEN_WORDS],
    hi: [u32; OPEN_WORDS],
    class: u32,
    /// The reference member's (the root's, or member 0's without one)
    /// count plus 1, from that member; 0 from the others, so that the
    /// maximum is the reference's (a count mismatch names it).
    reference: u32,
}

impl Equivalence for Opened {
    const DATATYPE: Datatype = Datatype {
        id: user_datatype_id("gpu_mpi_device::collective::Opened"),
        size: core::mem::size_of::<Opened>() as u32,
    };
}

impl Opening {
    fn words(&self) -> [u32; OPEN_WORDS] {
        [self.call, self.root, self.count, self.datatype, self.check]
    }
}

impl Opened {
    /// One member's record: its words, and its own error's class. A count
    /// that its word could not hold ([`Opening::count`] saturated to
    /// `u32::MAX`) is an `MPI_ERR_COUNT` of the member's own, so that
    /// members whose counts differ by a multiple of 2^32 cannot agree.
    /// `reference`: this member is the root (member 0 without a root).
    pub(crate) fn of(mine: &Opening, local: Option<&Error>, reference: bool) -> Opened {
        let w = mine.words();
        let own = local.map_or(0, |e| e.class() as u32);
        let count = if mine.count == u32::MAX {
            ErrorClass::Count as u32
        } else {
            0
        };
        Opened {
            lo: w,
            hi: w,
            class: own.max(count),
            reference: if reference {
                mine.count.saturating_add(1)
            } else {
                0
            },
        }
    }

    /// Takes in what `other` heard (min, max and max are idempotent, so
    /// hearing of a member twice changes nothing).
    pub(crate) fn combine(&mut self, other: &Opened) {
        for i in 0..OPEN_WORDS {
            self.lo[i] = self.lo[i].min(other.lo[i]);
            self.hi[i] = self.hi[i].max(other.hi[i]);
        }
        self.class = self.class.max(other.class);
        self.reference = self.reference.max(other.reference);
    }

    /// The verdict of a record that heard from every member (the same on
    /// every member): `Ok`, or the error this member returns. A member
    /// with an error of its own keeps it when no word disagrees, or when
    /// its class is the disagreement's; the others get the class of the
    /// first disagreement (another collective: [`Error::CollectiveMismatch`],
    /// then `MPI_ERR_ROOT`, `MPI_ERR_COUNT`, `MPI_ERR_TYPE`, a checksum:
    /// `MPI_ERR_COUNT`), or of the worst own error (`MPI_ERR_ROOT`,
    /// `MPI_ERR_TYPE` for a root or type error or an operation a member's
    /// type does not take, else `MPI_ERR_COUNT`).
    pub(crate) fn verdict(&self, mine: &Opening, local: Option<Error>, size: u32) -> Result<(), Error> {
        let same = |i: usize| self.lo[i] == self.hi[i];
        let all_same = (0..OPEN_WORDS).all(same);
        if all_same && self.class == 0 {
            return Ok(());
        }
        let w = mine.words();
        // The other end of the agreed range of word `i`.
        let other = |i: usize| {
            if self.lo[i] == w[i] {
                self.hi[i]
            } else {
                self.lo[i]
            }
        };
        let root = Error::InvalidRoot {
            root: mine.root as i32,
            size: size as i32,
        };
        // The root's (or member 0's) count, as `Error::CountMismatch`
        // promises; the other end of the range had it not been heard of.
        let count = Error::CountMismatch {
            count: mine.count,
            expected: self.reference.checked_sub(1).unwrap_or_else(|| other(O_COUNT)),
        };
        let datatype = Error::TypeMismatch {
            status: Status {
                source: -1,
                tag: -1,
                bytes: 0,
                datatype: other(O_TYPE),
            },
            expected: mine.datatype,
        };
        let e = if !same(O_CALL) {
            Error::CollectiveMismatch {
                kind: kind_code(mine.call),
                other: kind_code(other(O_CALL)),
            }
        } else if !same(O_ROOT) {
            root
        } else if !same(O_COUNT) || !same(O_CHECK) {
            count
        } else if !same(O_TYPE) {
            datatype
        } else if self.class == ErrorClass::Root as u32 {
            root
        } else if self.class == ErrorClass::Type as u32 || self.class == ErrorClass::Op as u32 {
            datatype
        } else {
            count
        };
        Err(match local {
            Some(l) if all_same || l.class() == e.class() => l,
            _ => e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::Call;
    use crate::datatype::ID_U32;

    /// Every member's verdict on `counts` (one per member) when `root`
    /// (`u32::MAX`: none) is the root they all name.
    fn verdicts<const N: usize>(call: Call, root: u32, counts: [u32; N]) -> [Result<(), Error>; N] {
        let opening = |count| Opening {
            call: call as u32,
            root,
            count,
            datatype: ID_U32,
            check: 0,
        };
        let reference = if root == u32::MAX { 0 } else { root };
        let mut heard = Opened::of(&opening(counts[0]), None, reference == 0);
        for (m, &c) in counts.iter().enumerate().skip(1) {
            heard.combine(&Opened::of(&opening(c), None, m as u32 == reference));
        }
        counts.map(|c| heard.verdict(&opening(c), None, N as u32))
    }

    /// A sub-communicator's count mismatch names this member's count and
    /// the root's (member 0's without a root) on every member, as
    /// `Error::CountMismatch` promises, whichever end of the range that is.
    #[test]
    fn an_opening_count_mismatch_names_the_roots_count() {
        let mismatch = |count, expected| Err(Error::CountMismatch { count, expected });
        assert_eq!(
            verdicts(Call::Gather, 2, [5, 5, 5, 7]),
            [mismatch(5, 5), mismatch(5, 5), mismatch(5, 5), mismatch(7, 5)]
        );
        assert_eq!(
            verdicts(Call::Gather, 3, [5, 5, 5, 7]),
            [mismatch(5, 7), mismatch(5, 7), mismatch(5, 7), mismatch(7, 7)]
        );
        assert_eq!(
            verdicts(Call::AllGather, u32::MAX, [4, 9, 4]),
            [mismatch(4, 4), mismatch(9, 4), mismatch(4, 4)]
        );
        assert_eq!(
            verdicts(Call::AllGather, u32::MAX, [4, 4, 4]),
            [Ok(()), Ok(()), Ok(())]
        );
    }
}
