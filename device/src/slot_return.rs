//! The return of received eager slots to their senders, at once or
//! deferred: the part of the point-to-point engine that a rank must run
//! whenever a poll fails and before it exits, below both the engine and
//! the waits.

use crate::layout::SLOT_STATE_BYTES;
use crate::records::{mine, Core, SlotState, SlotWord};
use crate::shim::{self, Ordering};

/// Returns received eager slot `id` to its sender later, in a batch: the
/// slot joins this rank's deferred list, which [`flush_frees`] empties when
/// it holds half of a rank's slots, and before this rank waits, fails a
/// non-blocking poll or exits.
///
/// Why: returning a slot at once costs a Release store per message; a batch
/// costs one fence, and the common eager message then costs the receiver
/// only its share of the inbox swap. Why it cannot deadlock: a sender waits
/// for one of its slots only inside a wait, and a rank holds deferred slots
/// only while it runs: before the first snooze of a wait
/// (`polling::wait_core`), after every later failed poll of it that made
/// progress (only progress defers a slot, so after one that did not the
/// list is still empty), after every failed poll of a non-blocking call
/// (`Core::failed_poll`), and before its exit, it flushes. A wait's own
/// progress can receive into a pending request (the slot deferred here)
/// and still not have what the wait needs, which that slot's sender may
/// send only once it has the slot back (a synchronous send; a sender out
/// of slots): the flush after the failed poll hands it back. The delay is bounded by the
/// rank's next poll that fails (or its exit), and a sender always keeps
/// the slots beyond the batch bound. A synchronous eager send completes
/// when its slot comes back, so it may complete that much later than the
/// receive started (MPI 3.4 sets no bound).
///
/// `count`: the rank's `free_count`, if the caller holds it (a receive's
/// poll loads it before its acquire, after which it would be a round trip
/// to L2).
#[inline(never)]
pub(crate) fn defer_free(w: &Core, id: u32, count: Option<u32>) {
    // Every address before the first store: one read of the layout.
    let at = w.places();
    let (state, header, slots) = (at.state(id), at.header(), at.slots_per_rank());
    let (entries_at, stride) = at.outbox_words(w.rank, SlotWord::Deferred);
    // Relaxed: only this rank acts on RETURNING (a receive from one source
    // passes it over as it does every state but ARRIVED; the sender waits
    // for FREE).
    state.store(SlotState::Returning.word(w.rank), Ordering::Relaxed);
    let n = match count {
        Some(n) => n,
        None => mine!(header, free_count),
    };
    // Relaxed: a word of this rank's own slot `n` that only this rank
    // touches (`SlotHeader::deferred`); `n` is below the flush bound, which
    // is at most `slots_per_rank`.
    // SAFETY: a span of this rank's outbox, `n < slots_per_rank`.
    unsafe { Core::outbox_word(entries_at, stride, n) }.store(id + 1, Ordering::Relaxed);
    mine!(header, free_count = n + 1);
    if n + 1 >= (slots / 2).max(1) {
        flush_frees(w);
    }
}

/// When a receive gives its eager slot back to the sender.
///
/// A deferred return ([`defer_free`]) costs the receiver a store of the
/// slot's state and three accesses to its own words per message and, per
/// batch, a fence and a batch of loads; it is cheaper than a Release store
/// of FREE only when the batch is flushed while the rank waits anyway. A
/// rank whose receive found its message already queued (taken from the
/// inbox by an earlier call) is working through a backlog, and would flush
/// on its own critical path: it returns the slot at once
/// ([`SlotReturn::after`]). One whose own call had to take the message
/// from the inbox (a ping-pong's, the first of a burst) defers it, and
/// flushes while it waits for the next.
#[derive(Clone, Copy)]
pub(crate) enum SlotReturn {
    /// At once, with a Release store ([`return_now`]).
    Now,
    /// In the next batch ([`defer_free`]), with the rank's `free_count` if
    /// the caller loaded it before an acquire emptied L1.
    Later(Option<u32>),
}

impl SlotReturn {
    /// How a lone receive returns its slot: later if its own call took the
    /// message from the inbox (`drained`), else at once. The lone call's
    /// try and its pass (a traced call's, which makes no try) search alike,
    /// so a run traced or not returns the same slots the same way.
    #[inline(always)]
    pub(crate) fn after(drained: bool) -> SlotReturn {
        if drained {
            SlotReturn::Later(None)
        } else {
            SlotReturn::Now
        }
    }
}

/// Gives received eager slot `id` back to its sender now.
#[inline(always)]
fn return_now(w: &Core, id: u32) {
    // Release: pairs with the owner's Acquire fence after its reclaim scan
    // (and a synchronous sender's Acquire wait for FREE), as the fence of
    // `flush_frees` does for a batch: our read of the payload happens
    // before its next writes to it.
    w.places()
        .state(id)
        .store(SlotState::Free.word(0), Ordering::Release);
}

/// Gives received eager slot `id` back to its sender as `how` says.
#[inline(always)]
pub(crate) fn give_back(w: &Core, id: u32, how: SlotReturn) {
    match how {
        SlotReturn::Now => return_now(w, id),
        SlotReturn::Later(count) => defer_free(w, id, count),
    }
}

/// Returns the deferred slots (see [`defer_free`]) if there are any: what a
/// rank does before it waits or exits.
#[inline(always)]
pub(crate) fn return_deferred(w: &Core) {
    if mine!(w, free_count) != 0 {
        flush_frees(w);
    }
}

/// Deferred entries one batch of [`flush_frees`] loads together.
const BATCH: u32 = 4;

/// Returns every deferred slot (see [`defer_free`]) to its sender: the
/// list's entries in batches of independent loads, one fence, then one
/// relaxed store of FREE per slot.
#[inline(never)]
fn flush_frees(w: &Core) {
    // Every address's parts before the fence: one read of the layout.
    let at = w.places();
    let header = at.header();
    let count = mine!(header, free_count);
    let (entries_at, stride) = at.outbox_words(w.rank, SlotWord::Deferred);
    let states_at = at.states(0);
    // Release: with the relaxed FREE stores below, pairs with the owner's
    // Acquire fence after its reclaim scan (and a synchronous sender's
    // Acquire wait for FREE): our reads of each payload happen before its
    // next writes to it.
    shim::fence(Ordering::Release);
    let mut first = 0;
    while first < count {
        let n = (count - first).min(BATCH);
        // Relaxed: this rank's own words, written by it in `defer_free`.
        // Past the last entry the batch repeats it.
        // SAFETY: a span of this rank's outbox, `first + n <= count <=
        // slots_per_rank`.
        let ids = unsafe { Core::outbox_batch::<{ BATCH as usize }>(entries_at, stride, first, n) };
        // Constant indices keep `ids` in registers (a loop to `n` would
        // index it at run time, from local memory on the GPU).
        for (k, &id1) in ids.iter().enumerate() {
            if (k as u32) < n {
                // Relaxed: made a release by the fence above.
                // SAFETY: a slot id this rank deferred (`defer_free`).
                unsafe { Core::outbox_word(states_at, SLOT_STATE_BYTES, id1 - 1) }
                    .store(SlotState::Free.word(0), Ordering::Relaxed);
            }
        }
        first += BATCH;
    }
    mine!(header, free_count = 0);
}
