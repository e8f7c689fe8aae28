//! Bounded waits, wait records and the world abort flag.
//!
//! Every blocking step of the library is a poll loop through `wait_for`. A
//! rank that has to wait writes a wait record (operation, peer, tag) into the
//! world memory; it is what the deadlock report prints, on the emulator (which
//! detects a deadlock exactly, in its scheduler) and on the GPU (where a wait
//! that outlives the world's timeout marks its record timed out, raises the
//! abort flag, and every other waiting rank gives up with `Aborted`).

pub use crate::codes::{Call, WaitDisplay};
use crate::error::{Error, ErrorClass};
use crate::layout::ABORT_TIMED_OUT;
use crate::records::{mine, Core, WaitWord};
use crate::shim::{self, Backoff, Ordering};

/// Record state: the rank is running (not waiting).
pub const STATE_RUNNING: u32 = 0;
/// Record state: the rank is waiting in the recorded operation.
pub const STATE_WAITING: u32 = 1;
/// Record state: the rank's kernel function returned.
pub const STATE_EXITED: u32 = 2;
/// A wait reads the abort word and the clock once every this many polls
/// (the others read only what the wait needs): the emulator re-polls a
/// quiet world this many times after an abort before it calls it a
/// deadlock (`host/src/cpu/scheduler.rs`).
pub const RARE_READS_EVERY: u32 = 16;

/// Record state: the rank's wait timed out (it aborted the world).
pub const STATE_TIMED_OUT: u32 = 3;

/// Failed polls of one non-blocking call in a row, with no progress of the
/// rank in between, after which the emulator counts the rank as quiet (a
/// spin that cannot succeed; see `World::failed_poll`).
pub const SPIN_QUIET_AFTER: u32 = 1 << 16;

/// What one rank waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitFor {
    /// The operation.
    pub operation: Call,
    /// The peer rank (destination, source or root); `ANY_SOURCE` or -2 for none.
    pub peer: i32,
    /// The tag; `ANY_TAG` for any.
    pub tag: i32,
}

impl Core {
    fn wait_word(&self, word: WaitWord) -> &shim::AtomicU32 {
        self.wait_word_at(self.wait_record(), word)
    }

    /// Word `word` of the wait record at offset `record` ([`Core::wait_record`]).
    fn wait_word_at(&self, record: usize, word: WaitWord) -> &shim::AtomicU32 {
        // SAFETY: the record lies inside the world memory, 4-byte aligned, and
        // its words are only accessed atomically.
        unsafe { shim::atomic_u32_at(self.base, record + word.offset()) }
    }

    /// Writes this rank's wait record. Every blocking call and every
    /// collective records its wait here first, so entering one is progress: it ends a spin of failed polls
    /// (see [`Core::failed_poll`]), even when it completes without a
    /// failed poll of its own (a barrier of one block). A collective of a
    /// settled rank (`World::record_wait`) has no spin to end and no slot
    /// to return, and writes the record alone.
    pub(crate) fn record_wait(&self, w: WaitFor) {
        mine!(self, idle_key = 0);
        self.write_wait(w);
    }

    /// Writes the wait record (see [`Core::record_wait`]) without ending a
    /// spin: a failed poll's own record.
    fn write_wait(&self, w: WaitFor) {
        // A rank about to wait hands back the slots it received from first:
        // their senders may be waiting for them (`slot_return::defer_free`).
        crate::slot_return::return_deferred(self);
        self.write_wait_record(w);
    }

    /// The wait record's words alone: for a rank that holds no deferred
    /// slot and whose idle key is 0 (`World::record_wait`). Relaxed: the
    /// record is read by the host after the ranks stopped (kernel end, or
    /// the emulator's scheduler lock), never used to synchronise ranks.
    #[inline(always)]
    pub(crate) fn write_wait_record(&self, w: WaitFor) {
        // One vector store (`st.v4`) of the record's four words, in
        // `WaitRecord`'s order (asserted in records.rs).
        // SAFETY: the record lies inside the world memory, 16-byte aligned
        // (`layout::wait_record_of`), and its words are only accessed
        // atomically.
        let words = unsafe { shim::atomic_u32x4_at(self.base, self.wait_record()) };
        shim::store_relaxed_x4(
            words,
            [STATE_WAITING, w.operation as u32, w.peer as u32, w.tag as u32],
        );
    }

    pub(crate) fn record_state(&self, state: u32) {
        self.wait_word(WaitWord::State).store(state, Ordering::Relaxed);
    }

    /// A failed non-blocking poll (see `World::failed_poll`).
    pub(crate) fn failed_poll(&self, what: WaitFor, extra: usize) {
        // Every failed poll, not only the first of a spin: the poll's own
        // progress may have deferred slots whose senders wait for them.
        crate::slot_return::return_deferred(self);
        let key = ((what.operation as u64) << 56)
            ^ ((what.peer as u32 as u64) << 24)
            ^ (what.tag as u32 as u64)
            ^ ((extra as u64) << 8)
            | 1 << 63;
        let fresh = if mine!(self, idle_key) != key {
            mine!(self, idle_key = key);
            mine!(self, idle_count = 0);
            self.write_wait(what);
            true
        } else {
            let n = mine!(self, idle_count).saturating_add(1);
            mine!(self, idle_count = n);
            n < SPIN_QUIET_AFTER
        };
        let mut b = if fresh {
            Backoff::with_max_ns(self.backoff_max_ns())
        } else {
            Backoff::idle(self.backoff_max_ns())
        };
        b.snooze();
    }

    /// This rank did something (see `World::note_progress`).
    pub(crate) fn note_progress(&self) {
        if mine!(self, idle_key) != 0 {
            mine!(self, idle_key = 0);
            self.record_state(STATE_RUNNING);
        }
    }

    fn abort_word(&self) -> &shim::AtomicU32 {
        // SAFETY: the abort word lies in the header, 4-byte aligned, atomic-only.
        unsafe { shim::atomic_u32_at(self.base, crate::layout::ABORT_OFFSET) }
    }

    /// The rank that aborted the world, if any.
    pub(crate) fn aborted_by(&self) -> Option<u32> {
        // Relaxed: the flag only makes waiting ranks give up; it publishes no data.
        match self.abort_word().load(Ordering::Relaxed) {
            0 => None,
            r => Some((r & !ABORT_TIMED_OUT) - 1),
        }
    }

    /// Aborts the world (see `World::abort`).
    pub(crate) fn abort(&self) {
        self.abort_as(0)
    }

    /// Aborts the world because a wait of this rank timed out.
    #[cold]
    fn abort_timed_out(&self) {
        self.abort_as(ABORT_TIMED_OUT)
    }

    fn abort_as(&self, cause: u32) {
        // Relaxed: see `aborted_by`.
        let _ = self
            .abort_word()
            .compare_exchange(0, (self.rank + 1) | cause, Ordering::Relaxed);
    }
}

/// How one rank's part of a world barrier ended, as one word: 0 for
/// success, else the error class's code ([`ErrorClass`]) in the low half
/// and, for `Aborted`, the aborting rank in the high half. The world
/// barrier holds this word, not a `Result`, across its closing block
/// barrier: an `Error` held there, or returned from an out-of-line
/// function, lives in local memory on nvptx. A `Timeout` takes its fields
/// from the barrier's [`WaitFor`] when the word is turned back into an
/// error ([`barrier_error`]); `AcrossProcesses` (a world barrier across
/// processes) keeps its operation; any other error than these three (none
/// of the barrier's waits returns one) becomes `Intern`.
#[inline(always)]
pub(crate) fn barrier_word(e: Error) -> u64 {
    match e {
        Error::Timeout { .. } => ErrorClass::Timeout as u64,
        Error::Aborted { by_rank } => (u64::from(by_rank) << 32) | ErrorClass::Aborted as u64,
        Error::AcrossProcesses { operation } => (u64::from(operation) << 32) | ErrorClass::Other as u64,
        _ => ErrorClass::Intern as u64,
    }
}

/// The error of a non-zero [`barrier_word`] of a barrier that waited as `what`.
#[inline(always)]
pub(crate) fn barrier_error(word: u64, what: WaitFor) -> Error {
    match ErrorClass::from_code(word as u32) {
        Some(ErrorClass::Timeout) => Error::Timeout {
            operation: what.operation as u32,
            peer: what.peer,
            tag: what.tag,
        },
        Some(ErrorClass::Aborted) => Error::Aborted {
            by_rank: (word >> 32) as u32,
        },
        Some(ErrorClass::Other) => Error::AcrossProcesses {
            operation: (word >> 32) as u32,
        },
        _ => Error::Intern,
    }
}

/// The wait of a rank whose world barrier cannot complete because a rank
/// it needs never comes (a rank of its block returned from the kernel
/// before entering it): a bounded wait for nothing (recorded as the
/// operation, peer and tag given), which ends with `Timeout` (marking the
/// record and aborting the world) or `Aborted`; without a timeout it
/// lasts, and the emulator reports the deadlock with this wait. Returns
/// the [`barrier_word`] of the failure. Scalar arguments and result, so
/// that the caller keeps nothing in local memory for the call. Its
/// callers (the world barrier, a block communicator's opening) recorded
/// this wait as they opened the barrier (`record_wait`), so it waits as
/// [`wait_recorded`]: no second record, and no hand-back of deferred
/// slots, which would put the flush's call (`slot_return::flush_frees`)
/// and its registers in every kernel with a collective.
#[cold]
#[inline(never)]
pub(crate) fn barrier_wait_forever(base: u64, rank: u32, operation: Call, peer: i32, tag: i32) -> u64 {
    let c = Core {
        base: base as *mut u8,
        rank,
    };
    let what = WaitFor { operation, peer, tag };
    match wait_recorded(&c, what, |_| None::<Result<(), Error>>) {
        Err(e) => barrier_word(e),
        // The poll never succeeds.
        Ok(()) => ErrorClass::Intern as u64,
    }
}

/// The failure tail of a world barrier, after its closing block barrier:
/// `word` is this rank's own [`barrier_word`]. A rank whose own waits
/// failed keeps its error. A rank whose own waits succeeded while another
/// rank of its block failed returns `Aborted` by the rank that aborted the
/// world: the failed wait aborted the world (a timeout) or gave up because
/// it was aborted, before the block barrier through which this rank learnt
/// of it, so the word is set; should it read unset, this rank aborts the
/// world itself and names whoever did first.
#[cold]
#[inline(never)]
pub(crate) fn barrier_failed(base: u64, rank: u32, word: u64) -> u64 {
    if word != 0 {
        return word;
    }
    let c = Core {
        base: base as *mut u8,
        rank,
    };
    if c.aborted_by().is_none() {
        c.abort();
    }
    let by_rank = c.aborted_by().unwrap_or(rank);
    (u64::from(by_rank) << 32) | ErrorClass::Aborted as u64
}

/// The wait loop of `communicator::wait_for`, on a [`Core`].
#[inline(always)]
pub(crate) fn wait_core<T>(
    c: &Core,
    what: WaitFor,
    poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    c.note_progress();
    wait_from(c, recorded, always, || what, Start::Fresh, poll)
}

/// [`wait_core`] for a call that has polled once already, out of the loop
/// (`polled`; see `engine::run_words`): the loop starts as after a failed
/// first poll (the wait recorded, one snooze), so the same search does not
/// run twice before the first snooze. Notes progress only when
/// `spinning` (the rank's idle key may be set: `World::known`).
#[inline(always)]
pub(crate) fn wait_core_polled<T>(
    c: &Core,
    what: WaitFor,
    polled: bool,
    spinning: bool,
    poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    if spinning {
        c.note_progress();
    }
    wait_from(
        c,
        recorded,
        always,
        || what,
        if polled { Start::Polled } else { Start::Fresh },
        poll,
    )
}

/// [`wait_core`] for a rank that has just written its wait record
/// ([`Core::record_wait`], which also does what [`Core::note_progress`]
/// would): the world barrier, which records its wait before the block
/// barrier that opens it, and [`barrier_wait_forever`]. Neither the start
/// nor the first failed poll writes the record again, which saves loads
/// of the rank's own record that the barrier's acquire has evicted from
/// L1; nor does the end: the record says the rank waits until the caller
/// marks it running. The record handed back the rank's deferred slots,
/// and `poll` must not run the engine (a barrier's count, or nothing), so
/// none is deferred while it waits: the loop hands back none (`never`),
/// and a kernel with a collective has no call of the flush inside its
/// wait (docs/performance.md, "The world barrier's waits hand back no
/// slots").
#[inline(always)]
pub(crate) fn wait_recorded<T>(
    c: &Core,
    what: WaitFor,
    poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    wait_from(c, recorded, never, || what, Start::Recorded, poll)
}

/// A wait's record as [`Core::record_wait`] writes it (the wrappers but
/// [`wait_core_lazy`]).
fn recorded(c: &Core, what: WaitFor) {
    c.record_wait(what)
}

/// The rank may hold deferred slots (the wrappers but [`wait_core_lazy`]).
fn always() -> bool {
    true
}

/// The rank holds no deferred slot, and its poll defers none
/// ([`wait_recorded`]).
fn never() -> bool {
    false
}

/// [`wait_core`] whose [`WaitFor`] is worked out only if the first poll
/// fails (a non-blocking collective's request reads it from the rank's
/// cell: a load a wait that succeeds at once does without), for a caller
/// that knows more of the rank than its memory says (the `World`'s
/// `RankState`): `record` writes the wait record at the first failed
/// poll (a settled rank's alone), and `unsettled` says whether the rank
/// may hold deferred slots to hand back after a poll that progressed.
/// The caller notes its progress itself.
#[inline(always)]
pub(crate) fn wait_core_lazy<T>(
    c: &Core,
    record: impl Fn(&Core, WaitFor),
    unsettled: impl Fn() -> bool,
    what: impl Fn() -> WaitFor,
    poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    wait_from(c, record, unsettled, what, Start::Fresh, poll)
}

/// How a wait loop ([`wait_from`]) starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// It polls first; the first failed poll records the wait.
    Fresh,
    /// The caller polled once already, out of the loop, and failed
    /// ([`wait_core_polled`]): the loop starts as after that poll.
    Polled,
    /// The caller wrote the wait record and handed back its deferred
    /// slots just before ([`wait_recorded`]): no failed poll writes them
    /// again, which on a GPU would load the rank's own deferred count
    /// after the poll's acquire evicted it from L1, on the path of a wait
    /// that is about to succeed.
    Recorded,
}

/// The loop of every blocking wait, started as `start` says.
#[inline(always)]
fn wait_from<T>(
    c: &Core,
    record: impl Fn(&Core, WaitFor),
    unsettled: impl Fn() -> bool,
    what: impl Fn() -> WaitFor,
    start: Start,
    mut poll: impl FnMut(&mut Backoff) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    // The bound is read once the first poll failed: a wait that succeeds
    // at once reads no configuration (after an acquire, a round trip to L2
    // on the GPU); the first poll never sleeps.
    let mut backoff = Backoff::new();
    let mut polls: u32 = 0;
    let mut skip = start == Start::Polled;
    // One call site of `poll`, so that it is inlined (a closure called from
    // two places is kept out of line, its captures in local memory).
    loop {
        if !skip {
            if let Some(r) = poll(&mut backoff) {
                if polls != 0 {
                    // A recorded wait's caller still waits (for its block)
                    // and marks the rank running itself.
                    if start != Start::Recorded {
                        c.record_state(STATE_RUNNING);
                    }
                    crate::trace::wait_ended(c);
                }
                return r;
            }
        }
        skip = false;
        if polls == 0 {
            backoff.set_max_ns(c.backoff_max_ns());
            if start != Start::Recorded {
                record(c, what());
            }
            if c.timeout_ns() != 0 {
                mine!(c, wait_since = shim::clock_ns());
            }
            crate::trace::wait_began(c);
        } else if backoff.polls() == 0 {
            // The poll's progress may have received into a pending request
            // (deferring its slot) while what this wait needs has not
            // come: that slot's sender may be waiting for it (a synchronous
            // send, or a sender out of slots) before it can send what we
            // wait for. Only progress defers a slot, and a poll that
            // progresses says so (`Backoff::progressed` zeroes the count);
            // after one that did not there is nothing new to return (the
            // first poll's `record_wait` returned what there was; a
            // settled rank has none).
            if unsettled() {
                crate::slot_return::return_deferred(c);
            }
        }
        backoff.snooze();
        polls = polls.wrapping_add(1).max(1);
        // The abort word and the clock are read every 16th poll: each read is
        // a memory round trip on the GPU, on the path of a wait that is
        // about to succeed; giving up 16 polls late costs nothing.
        if polls.is_multiple_of(RARE_READS_EVERY) {
            if let Some(by_rank) = c.aborted_by() {
                c.record_state(STATE_RUNNING);
                return Err(Error::Aborted { by_rank });
            }
            if c.timeout_ns() != 0 && shim::clock_ns().wrapping_sub(mine!(c, wait_since)) > c.timeout_ns() {
                c.record_state(STATE_TIMED_OUT);
                c.abort_timed_out();
                let what = what();
                return Err(Error::Timeout {
                    operation: what.operation as u32,
                    peer: what.peer,
                    tag: what.tag,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHAT: WaitFor = WaitFor {
        operation: Call::Barrier,
        peer: -2,
        tag: 7,
    };

    #[test]
    fn barrier_word_keeps_what_the_barrier_error_needs() {
        let timeout = Error::Timeout {
            operation: Call::Barrier as u32,
            peer: -2,
            tag: 7,
        };
        let w = barrier_word(timeout);
        assert_ne!(w, 0);
        assert_eq!(barrier_error(w, WHAT), timeout);
        for by_rank in [0, 1, 12_345, u32::MAX - 1] {
            let w = barrier_word(Error::Aborted { by_rank });
            assert_ne!(w, 0);
            assert_eq!(barrier_error(w, WHAT), Error::Aborted { by_rank });
        }
        let across = Error::AcrossProcesses {
            operation: Call::Reduce as u32,
        };
        assert_eq!(barrier_error(barrier_word(across), WHAT), across);
    }

    #[test]
    fn barrier_word_of_another_error_is_intern() {
        let w = barrier_word(Error::InvalidTag { tag: 3 });
        assert_ne!(w, 0);
        assert_eq!(barrier_error(w, WHAT), Error::Intern);
        assert_eq!(barrier_error(barrier_word(Error::Intern), WHAT), Error::Intern);
    }
}
