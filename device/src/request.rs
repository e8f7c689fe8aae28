//! Non-blocking point-to-point communication: requests and their scopes
//! (MPI 4.1 sections 3.7 and 3.9).
//!
//! ```ignore
//! use gpu_mpi_device::request::{self, wait_all};
//! let mut a = [0u32; 4];
//! let b = [1u32, 2, 3, 4];
//! request::scope(|scope| -> Result<(), Error> {
//!     let mut reqs = [
//!         world.any_process().immediate_receive_into(scope, &mut a)?,
//!         world.process_at_rank(1).immediate_send(scope, &b)?,
//!     ];
//!     wait_all(&mut reqs, &mut [])
//! })?;
//! ```
//!
//! # Scopes
//! As in rsmpi, every request belongs to a [`Scope`] opened by [`scope`],
//! and its buffer is borrowed for the scope's lifetime `'a`: it cannot be
//! read or written by the program until `scope` returns. Unlike rsmpi (whose
//! scope panics on a request dropped while still active: a panic traps on a
//! GPU), completion is mandatory and automatic: the scope keeps every
//! request's state in its own table (on the stack, no heap), and when its
//! closure returns, `scope` waits for every request still active. A request
//! dropped or forgotten without a wait is therefore still completed before
//! its buffer is released (MPI 3.7.3 allows a request to be freed while
//! active, `MPI_Request_free`, the operation completing on its own; its
//! outcome is then discarded, as here).
//!
//! Requests live in the rank's request records in the world memory
//! (`requests_per_rank` of them, 8 by default, shared by all its open
//! scopes; [`crate::records::RequestRecord`]), not on the stack: posting one
//! more while all are in use fails with `MPI_ERR_REQUEST`
//! ([`Error::RequestLimit`]), never a hang. A completed request frees its
//! record when it is waited or tested, or at the end of its scope.
//!
//! # Progress
//! There is one engine (`engine.rs`): every call of the rank that
//! communicates — posting, [`Request::wait`], [`Request::test`], the slice
//! waits and tests, the end of a scope, and every blocking send, receive
//! and probe, which is a record of its own — advances every record of the
//! rank in posting order. So pending sends stream their chunks while the
//! rank waits on anything (MPI 3.7.4), a send takes a slot only after every
//! earlier posted send did, and a receive gets a message only if no
//! earlier posted receive takes it (MPI 3.5), blocking calls included.
//! Collectives do not progress requests (their waits are barriers of their
//! own): complete the requests a collective's peers depend on before it.
//!
//! # Null and inactive requests
//! [`Request::null`] is `MPI_REQUEST_NULL`; a request becomes null when a
//! test or a wait over a slice completes it. Waiting on or testing a null
//! request returns at once with the empty status (source `ANY_SOURCE`, tag
//! `ANY_TAG`, count 0, MPI 3.7.3). [`wait_any`] and [`test_any`] over a
//! slice of only null requests (or an empty one) report
//! [`AnyCompletion::AllNull`] (`MPI_UNDEFINED`, 3.7.5); [`wait_some`] and
//! [`test_some`] then return `None`. [`Request::wait`] consumes its request,
//! so a request cannot be waited on twice.

use crate::communicator::wait_for;
use crate::communicator::{AnyProcess, Process, World};
use crate::engine::{self, Post, Posted};
use crate::error::{saturating_u32, Error};
use crate::nonblocking as immediate;
use crate::point_to_point::{receive_bytes, receive_post, send_bytes, send_post, Status};
use crate::polling::{Call, WaitFor};
use crate::records::{rec, SendMode};
use crate::{Buffer, BufferMut};
use core::cell::Cell;
use core::marker::PhantomData;

/// Requests a rank may have outstanding in its scopes with the default
/// world configuration (`WorldConfig::requests_per_rank`).
pub const MAX_REQUESTS: usize = 8;

/// A scope for requests (rsmpi's `LocalScope`): buffers borrowed by its
/// requests stay borrowed for `'a`, and every request is complete when
/// [`scope`] returns. Invariant in `'a`.
pub struct Scope<'a> {
    world: Cell<Option<&'a World>>,
    /// This scope's id among the rank's scopes (0 until its first request).
    id: Cell<u32>,
    /// Its requests not yet completed through a wait or test (a request
    /// dropped unwaited stays counted): its end has nothing to do, and
    /// reads nothing, when this is 0.
    open: Cell<u32>,
    _invariant: PhantomData<Cell<&'a ()>>,
}

/// Opens a scope for requests, runs `f` in it, then waits for every request
/// of the scope that is still active (see the module docs) and returns what
/// `f` returned. Outcomes of requests nobody waited for are discarded.
pub fn scope<'a, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'a>) -> R,
{
    let s = Scope {
        world: Cell::new(None),
        id: Cell::new(0),
        open: Cell::new(0),
        _invariant: PhantomData,
    };
    let r = f(&s);
    s.complete();
    r
}

/// The records of scope `id` in use, as a mask: one read of the rank's
/// mask of records in use, then the scope of each of those only.
fn owned_records(w: &World, id: u32) -> u32 {
    let used = w.records.get();
    bits(used).fold(0, |owned, i| {
        if rec!(w, i, scope) == id {
            owned | 1 << i
        } else {
            owned
        }
    })
}

/// The indices of the bits set in `mask`, lowest first.
fn bits(mut mask: u32) -> impl Iterator<Item = u32> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros();
            mask &= mask - 1;
            i
        })
    })
}

/// Whether request index `i` (a record, or a non-blocking collective's
/// slot: `collective::immediate`) has completed.
fn complete(w: &World, i: u32) -> bool {
    if immediate::is_immediate(i) {
        immediate::is_complete(w, i)
    } else {
        engine::is_complete(&w.core(), i)
    }
}

/// Collects request index `i` (complete; `done`: the request's, for a
/// collective its start completed) and frees it.
fn collect_index(w: &World, i: u32, done: bool) -> Result<Status, Error> {
    if immediate::is_immediate(i) {
        immediate::collect(w, i, done)
    } else {
        collect_record(w, i)
    }
}

/// Collects request record `i` (complete) and gives it back to the scopes.
fn collect_record(w: &World, i: u32) -> Result<Status, Error> {
    let r = engine::collect(&w.core(), i);
    release_record(w, i);
    r
}

/// Gives request record `i` (collected or cancelled: out of the active
/// list) back to the scopes; with none left in use, the list is known
/// empty (`RankState`: listed).
fn release_record(w: &World, i: u32) {
    engine::release(&w.records, i);
    if w.records.get() == 0 {
        w.known.set_listed(false);
    }
}

impl<'a> Scope<'a> {
    /// Ties this scope to `world` (first request) and checks that every
    /// request of the scope is of one world.
    pub(crate) fn attach(&self, world: &'a World) -> Result<u32, Error> {
        match self.world.get() {
            Some(w) if core::ptr::eq(w, world) => Ok(self.id.get()),
            Some(_) => Err(Error::Intern),
            None => {
                // Ids start at 1 (0 marks a blocking call's record) and wrap
                // past 2^32 scopes, far beyond any scope's life.
                let id = world.last_scope.get().wrapping_add(1).max(1);
                world.last_scope.set(id);
                self.world.set(Some(world));
                self.id.set(id);
                Ok(id)
            }
        }
    }

    /// Posts an operation: a record, then one round of progress (the
    /// post's own try when the rank had no other request in flight:
    /// `engine::post`).
    fn post<'s>(&'s self, world: &'a World, p: &Post) -> Result<Request<'a, 's>, Error> {
        let id = self.attach(world)?;
        let known = crate::records::Known {
            spinning: false,
            list_empty: !world.known.listed(),
            untraced: world.known.untraced(),
            unchecked: false,
        };
        let (i, posted) = engine::post(&world.core(), &world.records, id, p, known)?;
        // The record entered the active list unless its post completed it
        // (then the list was empty: the post found no tail).
        world.known.set_listed(posted != Posted::Complete);
        self.opened();
        world.note_progress();
        if posted == Posted::Queued {
            engine::progress(world.core());
        }
        Ok(Request {
            scope: Some(self),
            index: i,
            ready: None,
            done: posted == Posted::Complete,
            round: false,
        })
    }

    /// Counts a request created in the scope.
    fn opened(&self) {
        self.open.set(self.open.get() + 1);
    }

    /// Counts one of its requests completed (its record or slot freed).
    fn closed(&self) {
        self.open.set(self.open.get().wrapping_sub(1));
    }

    /// Waits for every request of the scope still in use and frees it (the
    /// end of [`scope`]).
    fn complete(&self) {
        if let Some(w) = self.world.get() {
            self.complete_in(w);
        }
    }

    /// [`Scope::complete`] of a scope tied to `w`.
    fn complete_in(&self, w: &World) {
        // Every request completed through a wait or a test (the usual end):
        // nothing to do, and nothing to read.
        if self.open.get() == 0 {
            return;
        }
        let id = self.id.get();
        // Every request waited for (the usual end): nothing to do, and
        // nothing progressed.
        if owned_records(w, id) == 0 && !immediate::indices(w).any(|i| immediate::owned(w, id, i)) {
            return;
        }
        let pending = || {
            bits(owned_records(w, id)).any(|i| !engine::is_complete(&w.core(), i))
                || immediate::indices(w).any(|i| immediate::owned(w, id, i) && !immediate::is_complete(w, i))
        };
        if pending() {
            let what = WaitFor {
                operation: Call::WaitMany,
                peer: -2,
                tag: (owned_records(w, id).count_ones() as usize
                    + immediate::indices(w)
                        .filter(|&i| immediate::owned(w, id, i))
                        .count())
                .min(i32::MAX as usize) as i32,
            };
            // An error here (a timeout, an abort) leaves the world aborted;
            // the requests' own outcomes are discarded (see `scope`).
            let _ = wait_for(w, what, |b| {
                pump(w, b);
                (!pending()).then_some(Ok(()))
            });
        }
        for i in bits(owned_records(w, id)) {
            if engine::is_complete(&w.core(), i) {
                let _ = engine::collect(&w.core(), i);
            } else {
                engine::cancel(&w.core(), i);
            }
            release_record(w, i);
        }
        // A collective still incomplete here (the wait above failed: a
        // timeout, an abort) stays in its slot: the world is aborted.
        for i in immediate::indices(w) {
            if immediate::owned(w, id, i) && immediate::is_complete(w, i) {
                let _ = immediate::collect(w, i, false);
            }
        }
        w.note_progress();
    }
}

/// A non-blocking operation in progress (`MPI_Request`), or the null request.
///
/// `'a` is the scope's lifetime (its buffer's borrow), `'s` the borrow of the
/// scope. Not `Clone`: [`Request::wait`] consumes it, [`Request::test`] and
/// the slice functions make it null once complete.
#[must_use = "a request is completed by wait or test (or, unwaited, at the end of its scope)"]
pub struct Request<'a, 's> {
    scope: Option<&'s Scope<'a>>,
    index: u32,
    /// A request complete from the start (a receive from the null process)
    /// holds its status here, with no record.
    ready: Option<Status>,
    /// Its post completed it (`engine::Posted::Complete`), or its start
    /// the collective, with nothing to copy (`collective::immediate`): a
    /// wait or test collects it without reading its record's state or
    /// polling.
    done: bool,
    /// A world barrier's (`collective::immediate`, "Rounds"): its wait may
    /// see the round complete in the top's arrival word, and needs none of
    /// the rank's arguments to do so.
    round: bool,
}

/// The empty status (MPI 3.7.3): source `ANY_SOURCE`, tag `ANY_TAG`, count 0.
fn empty() -> Status {
    Status::empty()
}

impl<'a, 's> Request<'a, 's> {
    /// Its index: a record of the rank's engine, or a slot of its
    /// non-blocking collectives (`nonblocking::slot_of`).
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The null request (`MPI_REQUEST_NULL`).
    pub const fn null() -> Self {
        Request {
            scope: None,
            index: 0,
            ready: None,
            done: false,
            round: false,
        }
    }

    /// A request for a non-blocking collective's slot
    /// (`collective::immediate`).
    pub(crate) fn collective(scope: &'s Scope<'a>, index: u32, done: bool, round: bool) -> Self {
        scope.opened();
        Request {
            scope: Some(scope),
            index,
            ready: None,
            done,
            round,
        }
    }

    /// Whether this is the null request (never posted, or completed by a
    /// test or a wait over a slice).
    pub fn is_null(&self) -> bool {
        self.scope.is_none() && self.ready.is_none()
    }

    fn world(&self) -> Option<&'a World> {
        self.scope.and_then(|s| s.world.get())
    }

    /// Waits for the operation to complete (`MPI_Wait`) and returns its
    /// status (for a send, the send's own envelope); the null request
    /// returns the empty status at once.
    // Out of line: a kernel's body keeps its registers (inlined, its wait
    // loop cost the bench's non-blocking pi 44 bytes more of spills).
    #[inline(never)]
    pub fn wait(mut self) -> Result<Status, Error> {
        if let Some(s) = self.ready.take() {
            return Ok(s);
        }
        let Some(w) = self.world() else {
            return Ok(empty());
        };
        let i = self.index;
        let closed = || {
            if let Some(s) = self.scope {
                s.closed();
            }
        };
        if immediate::is_immediate(i) {
            return immediate::wait(w, i, self.done, self.round, closed);
        }
        // Complete already (its post or an earlier call progressed it): no
        // pass of the engine, and no words of the wait record read.
        if self.done || engine::is_complete(&w.core(), i) {
            closed();
            w.note_progress();
            return collect_record(w, i);
        }
        let what = engine::what(&w.core(), i);
        wait_for(w, what, |b| {
            if engine::progress(w.core()) {
                b.progressed();
            }
            engine::is_complete(&w.core(), i).then(|| {
                closed();
                collect_record(w, i)
            })
        })
    }

    /// Tests for completion (`MPI_Test`): `Some` with the outcome when the
    /// operation completed (the request becomes null), `None` when not yet.
    /// A null request gives the empty status. A `None` is a poll: on the
    /// emulator the rank gives way, and a rank that spins on a test that can
    /// never succeed is part of a livelock report.
    pub fn test(&mut self) -> Option<Result<Status, Error>> {
        if let Some(s) = self.ready.take() {
            return Some(Ok(s));
        }
        let (Some(s), Some(w)) = (self.scope, self.world()) else {
            return Some(Ok(empty()));
        };
        let i = self.index;
        let progressed = immediate::progress_requests(w);
        if let Some(r) = collect(self) {
            w.note_progress();
            return Some(r);
        }
        if progressed {
            w.note_progress();
        }
        if immediate::is_immediate(i) {
            w.failed_poll(
                immediate::test_what(w, i),
                (s as *const Scope<'_> as usize).wrapping_add(i as usize),
            );
            return None;
        }
        let WaitFor { operation, peer, tag } = engine::what(&w.core(), i);
        let what = WaitFor {
            operation: if operation == Call::Send {
                Call::TestSend
            } else {
                Call::TestReceive
            },
            peer,
            tag,
        };
        w.failed_poll(what, (s as *const Scope<'_> as usize).wrapping_add(i as usize));
        None
    }
}

/// The outcome of [`wait_any`] or [`test_any`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyCompletion {
    /// Request `index` completed (and is now null) with `result`.
    Completed {
        /// Its position in the slice.
        index: usize,
        /// Its status, or the error it completed with.
        result: Result<Status, Error>,
    },
    /// Every request was null, or the slice empty (`MPI_UNDEFINED`).
    AllNull,
}

/// The world of the first non-null request of a slice.
fn world_of<'a>(requests: &[Request<'a, '_>]) -> Option<&'a World> {
    requests.iter().find_map(|r| r.world())
}

/// Collects request `r` if it completed: it becomes null.
fn collect(r: &mut Request<'_, '_>) -> Option<Result<Status, Error>> {
    if let Some(s) = r.ready.take() {
        return Some(Ok(s));
    }
    let w = r.world()?;
    if !r.done && !complete(w, r.index) {
        return None;
    }
    if let Some(s) = r.scope.take() {
        s.closed();
    }
    Some(collect_index(w, r.index, r.done))
}

fn is_done(r: &Request<'_, '_>) -> bool {
    match r.world() {
        None => true,
        Some(w) => r.done || complete(w, r.index),
    }
}

/// One round of progress of `w`'s engine; true if anything moved.
fn progress_now(w: &World) -> bool {
    immediate::progress_requests(w)
}

/// [`progress_now`] inside a wait: tells the backoff.
fn pump(w: &World, b: &mut crate::shim::Backoff) {
    if immediate::progress_requests(w) {
        b.progressed();
    }
}

fn many(operation: Call, n: usize) -> WaitFor {
    WaitFor {
        operation,
        peer: -2,
        // The wait record's tag word shows how many; saturated.
        tag: n.min(i32::MAX as usize) as i32,
    }
}

fn check_statuses(requests: usize, statuses: usize) -> Result<(), Error> {
    if statuses != 0 && statuses < requests {
        return Err(Error::OutOfBounds {
            index: saturating_u32(requests - 1),
            len: saturating_u32(statuses),
        });
    }
    Ok(())
}

/// Collects every request (all complete): fills `statuses` (if not empty;
/// a failed request's slot gets its error's status, a null request's the
/// empty status) and returns the first error.
fn collect_all(requests: &mut [Request<'_, '_>], statuses: &mut [Status]) -> Result<(), Error> {
    let mut first: Result<(), Error> = Ok(());
    for (i, r) in requests.iter_mut().enumerate() {
        let out = collect(r).unwrap_or(Ok(empty()));
        let status = match out {
            Ok(s) => s,
            Err(e) => {
                if first.is_ok() {
                    first = Err(e);
                }
                error_status(&e)
            }
        };
        if let Some(slot) = statuses.get_mut(i) {
            *slot = status;
        }
    }
    first
}

fn error_status(e: &Error) -> Status {
    match *e {
        Error::Truncate { status, .. } | Error::TypeMismatch { status, .. } => status,
        _ => empty(),
    }
}

/// Waits for every request (`MPI_Waitall`, MPI 3.7.5); each becomes null.
/// `statuses`: empty (`MPI_STATUSES_IGNORE`) or at least as long as
/// `requests` (else `MPI_ERR_ARG`); it gets each request's status (a null
/// request's: the empty status). When requests fail, all still complete and
/// the first error (in slice order) is returned; its status slot holds the
/// status the error carries.
pub fn wait_all(requests: &mut [Request<'_, '_>], statuses: &mut [Status]) -> Result<(), Error> {
    check_statuses(requests.len(), statuses.len())?;
    if let Some(w) = world_of(requests) {
        // All complete already: no pass of the engine (as `wait_any`).
        if requests.iter().all(is_done) {
            w.note_progress();
            return collect_all(requests, statuses);
        }
        let what = many(Call::WaitMany, requests.len());
        wait_for(w, what, |b| {
            pump(w, b);
            requests.iter().all(is_done).then_some(Ok(()))
        })?;
    }
    collect_all(requests, statuses)
}

/// Tests every request (`MPI_Testall`): `None` when not all are complete
/// (no request changes); otherwise as [`wait_all`]. A `None` is a poll.
pub fn test_all(requests: &mut [Request<'_, '_>], statuses: &mut [Status]) -> Option<Result<(), Error>> {
    if let Err(e) = check_statuses(requests.len(), statuses.len()) {
        return Some(Err(e));
    }
    if let Some(w) = world_of(requests) {
        let progressed = progress_now(w);
        if !requests.iter().all(is_done) {
            if progressed {
                w.note_progress();
            }
            w.failed_poll(many(Call::TestMany, requests.len()), requests.as_ptr() as usize);
            return None;
        }
        w.note_progress();
    }
    Some(collect_all(requests, statuses))
}

fn first_done(requests: &mut [Request<'_, '_>]) -> Option<AnyCompletion> {
    if requests.iter().all(Request::is_null) {
        return Some(AnyCompletion::AllNull);
    }
    requests.iter_mut().enumerate().find_map(|(index, r)| {
        if r.is_null() {
            return None;
        }
        collect(r).map(|result| AnyCompletion::Completed { index, result })
    })
}

/// Waits for one request to complete (`MPI_Waitany`): the first complete
/// one in slice order becomes null and is returned with its outcome;
/// [`AnyCompletion::AllNull`] at once when every request is null. The outer
/// error is the wait's own (a timeout, an abort).
#[inline(never)]
pub fn wait_any(requests: &mut [Request<'_, '_>]) -> Result<AnyCompletion, Error> {
    let world = world_of(requests);
    // One that completed already (at its post, or in an earlier call's
    // pass; a receive from the null process, which has no world, from the
    // start) is returned without a pass of the engine: MPI 4.1 §3.7.5 asks
    // for one completion, and the progress a wait owes (§3.7.4) is for the
    // case where none has come. All null: `AllNull`.
    if let Some(c) = first_done(requests) {
        if let Some(w) = world {
            w.note_progress();
        }
        return Ok(c);
    }
    // Not all null, none complete: one of them has a world.
    let Some(w) = world else {
        return Ok(AnyCompletion::AllNull);
    };
    let what = many(Call::WaitMany, requests.len());
    wait_for(w, what, |b| {
        pump(w, b);
        first_done(requests).map(Ok)
    })
}

/// Tests for one completed request (`MPI_Testany`): `None` when none
/// completed yet (a poll), else as [`wait_any`].
pub fn test_any(requests: &mut [Request<'_, '_>]) -> Option<AnyCompletion> {
    // No world: every request is null or complete from the start (a
    // receive from the null process).
    let Some(w) = world_of(requests) else {
        return first_done(requests);
    };
    let progressed = progress_now(w);
    match first_done(requests) {
        Some(c) => {
            w.note_progress();
            Some(c)
        }
        None => {
            if progressed {
                w.note_progress();
            }
            w.failed_poll(many(Call::TestMany, requests.len()), requests.as_ptr() as usize);
            None
        }
    }
}

/// Collects up to `completions.len()` complete requests; `None` when every
/// request is null.
fn some_done(
    requests: &mut [Request<'_, '_>],
    completions: &mut [Option<(usize, Result<Status, Error>)>],
) -> Option<usize> {
    if requests.iter().all(Request::is_null) {
        return None;
    }
    let mut n = 0;
    for (index, r) in requests.iter_mut().enumerate() {
        let Some(slot) = completions.get_mut(n) else {
            break;
        };
        if r.is_null() {
            continue;
        }
        if let Some(result) = collect(r) {
            *slot = Some((index, result));
            n += 1;
        }
    }
    Some(n)
}

/// Waits until at least one request completes (`MPI_Waitsome`) and collects
/// every complete one, up to `completions.len()`, as `(index, outcome)`
/// into `completions[..n]`; returns `Some(n)`, or `None`
/// (`MPI_UNDEFINED`) at once when every request is null. An empty
/// `completions` with active requests is `MPI_ERR_ARG`.
pub fn wait_some(
    requests: &mut [Request<'_, '_>],
    completions: &mut [Option<(usize, Result<Status, Error>)>],
) -> Result<Option<usize>, Error> {
    if requests.iter().all(Request::is_null) {
        return Ok(None);
    }
    if completions.is_empty() {
        return Err(Error::OutOfBounds { index: 0, len: 0 });
    }
    let world = world_of(requests);
    // Those complete already, without a pass of the engine (as `wait_any`;
    // a receive from the null process, which has no world, from the start).
    let n = some_done(requests, completions);
    if n != Some(0) {
        if let Some(w) = world {
            w.note_progress();
        }
        return Ok(n);
    }
    // None complete, not all null: one of them has a world.
    let Some(w) = world else {
        return Ok(None);
    };
    let what = many(Call::WaitMany, requests.len());
    wait_for(w, what, |b| {
        pump(w, b);
        match some_done(requests, completions) {
            Some(0) => None,
            other => Some(Ok(other)),
        }
    })
}

/// [`wait_some`] without waiting (`MPI_Testsome`): `Some(0)` when none
/// completed yet (a poll), `None` when every request is null.
pub fn test_some(
    requests: &mut [Request<'_, '_>],
    completions: &mut [Option<(usize, Result<Status, Error>)>],
) -> Option<usize> {
    // No world: every request is null or complete from the start (a
    // receive from the null process).
    let Some(w) = world_of(requests) else {
        return some_done(requests, completions);
    };
    let progressed = progress_now(w);
    let n = some_done(requests, completions);
    if n == Some(0) {
        if progressed {
            w.note_progress();
        }
        w.failed_poll(many(Call::TestMany, requests.len()), requests.as_ptr() as usize);
    } else {
        w.note_progress();
    }
    n
}

// ---------------------------------------------------------------------------
// Posting (MPI 3.7.2)

impl<'w> Process<'w> {
    /// Non-blocking standard-mode send with tag 0 (`MPI_Isend`).
    pub fn immediate_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        self.immediate_send_with_tag(scope, buf, 0)
    }

    /// Non-blocking standard-mode send (`MPI_Isend`, MPI 3.7.2). A send to
    /// the null process is the null request.
    pub fn immediate_send_with_tag<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        tag: i32,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        self.post_send(scope, buf, tag, SendMode::Standard)
    }

    /// Non-blocking synchronous send with tag 0 (`MPI_Issend`).
    pub fn immediate_synchronous_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        self.immediate_synchronous_send_with_tag(scope, buf, 0)
    }

    /// Non-blocking synchronous send (`MPI_Issend`): completes once the
    /// matching receive has started.
    pub fn immediate_synchronous_send_with_tag<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        tag: i32,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        self.post_send(scope, buf, tag, SendMode::Synchronous)
    }

    fn post_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        tag: i32,
        mode: SendMode,
    ) -> Result<Request<'a, 's>, Error>
    where
        'w: 'a,
    {
        let (ptr, len, typed) = send_bytes(buf);
        match send_post(
            self.world,
            self.comm,
            self.rank,
            tag,
            buf.datatype(),
            ptr,
            len,
            mode,
            typed,
            buf.message_signature(),
        )? {
            Some(p) => scope.post(self.world, &p),
            None => Ok(Request::null()),
        }
    }
}

macro_rules! impl_immediate_receive {
    ($t:ident) => {
        impl<'w> $t<'w> {
            /// Non-blocking receive with any tag (`MPI_Irecv`).
            pub fn immediate_receive_into<'a, 's, B: BufferMut + ?Sized>(
                &self,
                scope: &'s Scope<'a>,
                buf: &'a mut B,
            ) -> Result<Request<'a, 's>, Error>
            where
                'w: 'a,
            {
                self.immediate_receive_into_with_tag(scope, buf, crate::ANY_TAG)
            }

            /// Non-blocking receive (`MPI_Irecv`, MPI 3.7.2). Receives
            /// posted earlier match first (MPI 3.5). A receive from the null
            /// process completes at once with the null status.
            pub fn immediate_receive_into_with_tag<'a, 's, B: BufferMut + ?Sized>(
                &self,
                scope: &'s Scope<'a>,
                buf: &'a mut B,
                tag: i32,
            ) -> Result<Request<'a, 's>, Error>
            where
                'w: 'a,
            {
                use crate::point_to_point::Source;
                let datatype = buf.datatype();
                let (ptr, len, typed) = receive_bytes(buf);
                match receive_post(
                    self.world,
                    self.comm,
                    self.source_filter(),
                    tag,
                    datatype,
                    ptr,
                    len,
                    typed,
                )? {
                    Ok(p) => scope.post(self.world, &p),
                    Err(null) => Ok(Request {
                        scope: None,
                        index: 0,
                        ready: Some(null),
                        done: false,
                        round: false,
                    }),
                }
            }
        }
    };
}

impl_immediate_receive!(Process);
impl_immediate_receive!(AnyProcess);
