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
//! Each scope's table holds [`MAX_REQUESTS`] requests; posting one more
//! while all are active fails with `MPI_ERR_REQUEST`
//! ([`Error::RequestLimit`]), never a hang. A completed request frees its
//! entry when it is waited or tested. Scopes nest: a rank has at most
//! `MAX_REQUESTS` requests per open scope.
//!
//! # Progress
//! Every request call of the rank — posting, [`Request::wait`],
//! [`Request::test`], the slice waits and tests, the end of a scope — polls
//! every active
//! request of every open scope, in table order, so pending sends stream
//! their chunks while the rank waits on any request. Among requests,
//! matching follows the posting order (MPI 3.5): a send takes a slot (its
//! number) only after every earlier posted send did, and a receive leaves a
//! message to an earlier posted, still unmatched receive that accepts it.
//!
//! Limit (registers): blocking calls, probes (also `immediate_probe`) and
//! collectives do not poll pending requests, and do not defer to them. Any call into the request engine
//! from a wait loop, even through a function pointer and never taken,
//! raised every point-to-point kernel's registers by 50 to 80 (sm_90: a
//! latency kernel from 128 to 208); so the engine is reached only from the
//! request calls above, and kernels without requests do not carry it. Hence
//! a blocking call made while requests are pending (MPI 3.7.4 asks it to
//! progress them) can hang where a pending send needs its sender (a
//! streamed chunk, or a slot claim after a full outbox) and the blocking
//! call waits on the peer of that send; and a blocking receive may take a
//! message that an earlier posted, still pending receive request also
//! matches. Complete (wait or test) requests before blocking calls that
//! depend on them; the emulator reports such a hang as a deadlock naming
//! the blocked call.
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

use crate::error::Error;
use crate::point_to_point::{RecvOp, SendMode, SendOp, Status};
use crate::shim::Backoff;
use crate::topology::{AnyProcess, Process, World};
use crate::wait::{wait_for, Operation, WaitFor};
use crate::{Buffer, BufferMut};
use core::cell::{Cell, UnsafeCell};
use core::marker::PhantomData;

/// Requests one scope holds at a time (its table's size).
pub const MAX_REQUESTS: usize = 8;

/// One entry of a scope's request table.
pub(crate) enum Entry {
    Free,
    /// Taken out while it is polled (never seen by the ordering checks).
    Busy,
    Send(SendOp),
    Recv(RecvOp),
    /// Completed, not yet collected by a wait or test.
    Done(Result<Status, Error>),
}

impl Entry {
    fn what(&self) -> Option<WaitFor> {
        match self {
            Entry::Send(op) => Some(op.what()),
            Entry::Recv(op) => Some(op.what()),
            _ => None,
        }
    }
}

/// The part of a scope the world links to: its table and the next outer
/// scope with requests.
pub(crate) struct ScopeCore {
    entries: [UnsafeCell<Entry>; MAX_REQUESTS],
    parent: Cell<*const ScopeCore>,
}

impl ScopeCore {
    fn entry(&self, i: usize) -> Option<&UnsafeCell<Entry>> {
        self.entries.get(i)
    }

    /// Takes entry `i` out (leaving `Busy`).
    fn take(&self, i: usize) -> Entry {
        match self.entry(i) {
            // SAFETY: entries are touched only by `take`, `put` and `peek`,
            // which hold no reference beyond their own body; a scope is used
            // by its one rank (`Scope` is not `Sync`).
            Some(c) => unsafe { core::mem::replace(&mut *c.get(), Entry::Busy) },
            None => Entry::Free,
        }
    }

    fn put(&self, i: usize, e: Entry) {
        if let Some(c) = self.entry(i) {
            // SAFETY: as in `take`.
            unsafe { *c.get() = e };
        }
    }

    fn peek<R>(&self, i: usize, f: impl FnOnce(&Entry) -> R) -> Option<R> {
        // SAFETY: as in `take`; `f` gets no access to the table.
        self.entry(i).map(|c| f(unsafe { &*c.get() }))
    }

    /// Polls entry `i` once; true when it changed shared state or completed.
    fn poll(&self, w: &World, i: usize, b: &mut Backoff) -> bool {
        let e = self.take(i);
        let before = b.polls();
        b.set_polls(1);
        let (e, done) = match e {
            Entry::Send(mut op) => match op.poll(w, b) {
                Some(r) => (Entry::Done(r.map(|()| op.status())), true),
                None => (Entry::Send(op), false),
            },
            Entry::Recv(mut op) => match op.poll(w, b) {
                Some(r) => (Entry::Done(r), true),
                None => (Entry::Recv(op), false),
            },
            other => (other, false),
        };
        self.put(i, e);
        let progressed = done || b.polls() == 0;
        b.set_polls(if progressed { 0 } else { before });
        progressed
    }

    /// The outcome of entry `i` if it completed; frees the entry.
    fn collect(&self, i: usize) -> Option<Result<Status, Error>> {
        match self.peek(i, |e| matches!(e, Entry::Done(_)))? {
            true => match self.take(i) {
                Entry::Done(r) => {
                    self.put(i, Entry::Free);
                    Some(r)
                }
                other => {
                    self.put(i, other);
                    None
                }
            },
            false => None,
        }
    }
}

/// Whether `a` was posted before `b` (post numbers wrap).
fn earlier(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Whether an entry of an open scope satisfies `f`.
fn any_entry(w: &World, mut f: impl FnMut(&Entry) -> bool) -> bool {
    let mut core = w.scopes.get();
    while !core.is_null() {
        // SAFETY: the world links only scopes that are alive (a scope
        // unlinks itself before its storage goes away).
        let c = unsafe { &*core };
        for i in 0..MAX_REQUESTS {
            if c.peek(i, &mut f) == Some(true) {
                return true;
            }
        }
        core = c.parent.get();
    }
    false
}

/// Whether a send posted before `post` still has no slot: a send posted at
/// `post` must not be numbered before it (MPI 3.5).
pub(crate) fn earlier_unclaimed_send(w: &World, post: u32) -> bool {
    // A blocking call (numbered `posted`, never taken) does not defer to
    // requests: it cannot progress them (see the module docs), so waiting
    // for them could hang.
    post != w.posted.get()
        && !w.scopes.get().is_null()
        && any_entry(
            w,
            |e| matches!(e, Entry::Send(op) if op.unclaimed() && earlier(op.post, post)),
        )
}

/// Whether a receive posted before `post` is still unmatched and accepts a
/// message with `status`'s envelope: it gets that message first (MPI 3.5).
pub(crate) fn earlier_receive_accepts(w: &World, post: u32, status: &Status) -> bool {
    // A blocking call does not defer to requests (as above).
    post != w.posted.get()
        && !w.scopes.get().is_null()
        && any_entry(
            w,
            |e| matches!(e, Entry::Recv(op) if earlier(op.post, post) && op.would_accept(status)),
        )
}

#[inline(never)]
fn progress_all(w: &World, b: &mut Backoff) {
    let mut core = w.scopes.get();
    while !core.is_null() {
        // SAFETY: as in `any_entry`.
        let c = unsafe { &*core };
        for i in 0..MAX_REQUESTS {
            c.poll(w, i, b);
        }
        core = c.parent.get();
    }
}

/// One progress pass inside a request wait's poll.
fn pump(w: &World, b: &mut Backoff) {
    if progress_now(w) {
        b.progressed();
    }
}

/// Polls every active request once; true when anything progressed.
pub(crate) fn progress_now(w: &World) -> bool {
    if w.scopes.get().is_null() {
        return false;
    }
    let mut b = Backoff::idle(w.backoff_max_ns);
    progress_all(w, &mut b);
    b.polls() == 0
}

/// A scope for requests (rsmpi's `LocalScope`): buffers borrowed by its
/// requests stay borrowed for `'a`, and every request is complete when
/// [`scope`] returns. Invariant in `'a`.
pub struct Scope<'a> {
    core: ScopeCore,
    world: Cell<Option<&'a World>>,
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
        core: ScopeCore {
            entries: [const { UnsafeCell::new(Entry::Free) }; MAX_REQUESTS],
            parent: Cell::new(core::ptr::null()),
        },
        world: Cell::new(None),
        _invariant: PhantomData,
    };
    let r = f(&s);
    s.complete();
    r
}

impl<'a> Scope<'a> {
    /// Links this scope into `world` (first request) and checks that every
    /// request of the scope is of one world.
    fn attach(&self, world: &'a World) -> Result<(), Error> {
        match self.world.get() {
            Some(w) if core::ptr::eq(w, world) => Ok(()),
            Some(_) => Err(Error::Intern),
            None => {
                self.world.set(Some(world));
                self.core.parent.set(world.scopes.get());
                world.scopes.set(&self.core);
                Ok(())
            }
        }
    }

    /// Posts an operation: an entry of the table, the next post number, one
    /// poll.
    fn post<'s>(&'s self, world: &'a World, mut e: Entry) -> Result<Request<'a, 's>, Error> {
        self.attach(world)?;
        let Some(i) =
            (0..MAX_REQUESTS).find(|&i| self.core.peek(i, |e| matches!(e, Entry::Free)) == Some(true))
        else {
            return Err(Error::RequestLimit {
                limit: MAX_REQUESTS as u32,
            });
        };
        let post = world.posted.get();
        world.posted.set(post.wrapping_add(1));
        match &mut e {
            Entry::Send(op) => op.post = post,
            Entry::Recv(op) => op.post = post,
            _ => {}
        }
        self.core.put(i, e);
        world.note_progress();
        let mut b = Backoff::with_max_ns(world.backoff_max_ns);
        self.core.poll(world, i, &mut b);
        Ok(Request {
            scope: Some(self),
            index: i as u32,
        })
    }

    /// Waits for every active request (the end of [`scope`]).
    fn complete(&self) {
        let Some(w) = self.world.get() else {
            return;
        };
        let active = |c: &ScopeCore| {
            (0..MAX_REQUESTS)
                .any(|i| c.peek(i, |e| matches!(e, Entry::Send(_) | Entry::Recv(_))) == Some(true))
        };
        if active(&self.core) {
            let what = WaitFor {
                operation: Operation::WaitMany,
                peer: -2,
                tag: MAX_REQUESTS as i32,
            };
            // An error here (a timeout, an abort) leaves the world aborted;
            // the requests' own outcomes are discarded (see `scope`).
            let _ = wait_for(w, what, |b| {
                pump(w, b);
                if active(&self.core) {
                    None
                } else {
                    Some(Ok(()))
                }
            });
        }
        w.note_progress();
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        // Unlink (also when `f` unwinds on the host): the world must never
        // point to a dead table.
        let Some(w) = self.world.get() else {
            return;
        };
        let me: *const ScopeCore = &self.core;
        let parent = self.core.parent.get();
        if core::ptr::eq(w.scopes.get(), me) {
            w.scopes.set(parent);
            return;
        }
        let mut core = w.scopes.get();
        while !core.is_null() {
            // SAFETY: as in `any_entry`.
            let c = unsafe { &*core };
            if core::ptr::eq(c.parent.get(), me) {
                c.parent.set(parent);
                return;
            }
            core = c.parent.get();
        }
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
}

/// The empty status (MPI 3.7.3): source `ANY_SOURCE`, tag `ANY_TAG`, count 0.
fn empty() -> Status {
    Status::empty()
}

impl<'a, 's> Request<'a, 's> {
    /// The null request (`MPI_REQUEST_NULL`).
    pub const fn null() -> Self {
        Request {
            scope: None,
            index: 0,
        }
    }

    /// Whether this is the null request (never posted, or completed by a
    /// test or a wait over a slice).
    pub fn is_null(&self) -> bool {
        self.scope.is_none()
    }

    fn world(&self) -> Option<&'a World> {
        self.scope.and_then(|s| s.world.get())
    }

    /// Waits for the operation to complete (`MPI_Wait`) and returns its
    /// status (for a send, the send's own envelope); the null request
    /// returns the empty status at once.
    pub fn wait(self) -> Result<Status, Error> {
        let (Some(s), Some(w)) = (self.scope, self.world()) else {
            return Ok(empty());
        };
        let i = self.index as usize;
        let what = s.core.peek(i, |e| e.what()).flatten().unwrap_or(WaitFor {
            operation: Operation::WaitMany,
            peer: -2,
            tag: 1,
        });
        wait_for(w, what, |b| {
            pump(w, b);
            s.core.collect(i)
        })
    }

    /// Tests for completion (`MPI_Test`): `Some` with the outcome when the
    /// operation completed (the request becomes null), `None` when not yet.
    /// A null request gives the empty status. A `None` is a poll: on the
    /// emulator the rank gives way, and a rank that spins on a test that can
    /// never succeed is part of a livelock report.
    pub fn test(&mut self) -> Option<Result<Status, Error>> {
        let (Some(s), Some(w)) = (self.scope, self.world()) else {
            return Some(Ok(empty()));
        };
        let i = self.index as usize;
        let progressed = progress_now(w);
        if let Some(r) = s.core.collect(i) {
            self.scope = None;
            w.note_progress();
            return Some(r);
        }
        if progressed {
            w.note_progress();
        }
        let what = s.core.peek(i, |e| e.what()).flatten();
        let what = match what {
            Some(WaitFor {
                operation: Operation::Send,
                peer,
                tag,
            }) => WaitFor {
                operation: Operation::TestSend,
                peer,
                tag,
            },
            Some(WaitFor { peer, tag, .. }) => WaitFor {
                operation: Operation::TestReceive,
                peer,
                tag,
            },
            None => WaitFor {
                operation: Operation::TestMany,
                peer: -2,
                tag: 1,
            },
        };
        w.failed_poll(what, (s as *const Scope<'_> as usize).wrapping_add(i));
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
    let s = r.scope?;
    let out = s.core.collect(r.index as usize)?;
    r.scope = None;
    Some(out)
}

fn is_done(r: &Request<'_, '_>) -> bool {
    match r.scope {
        None => true,
        Some(s) => s.core.peek(r.index as usize, |e| matches!(e, Entry::Done(_))) == Some(true),
    }
}

fn many(operation: Operation, n: usize) -> WaitFor {
    WaitFor {
        operation,
        peer: -2,
        tag: n as i32,
    }
}

fn check_statuses(requests: usize, statuses: usize) -> Result<(), Error> {
    if statuses != 0 && statuses < requests {
        return Err(Error::OutOfBounds {
            index: requests as u32 - 1,
            len: statuses as u32,
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
        let what = many(Operation::WaitMany, requests.len());
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
            w.failed_poll(
                many(Operation::TestMany, requests.len()),
                requests.as_ptr() as usize,
            );
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
pub fn wait_any(requests: &mut [Request<'_, '_>]) -> Result<AnyCompletion, Error> {
    let Some(w) = world_of(requests) else {
        return Ok(AnyCompletion::AllNull);
    };
    let what = many(Operation::WaitMany, requests.len());
    wait_for(w, what, |b| {
        pump(w, b);
        first_done(requests).map(Ok)
    })
}

/// Tests for one completed request (`MPI_Testany`): `None` when none
/// completed yet (a poll), else as [`wait_any`].
pub fn test_any(requests: &mut [Request<'_, '_>]) -> Option<AnyCompletion> {
    let Some(w) = world_of(requests) else {
        return Some(AnyCompletion::AllNull);
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
            w.failed_poll(
                many(Operation::TestMany, requests.len()),
                requests.as_ptr() as usize,
            );
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
    let Some(w) = world_of(requests) else {
        return Ok(None);
    };
    if completions.is_empty() {
        return Err(Error::OutOfBounds { index: 0, len: 0 });
    }
    let what = many(Operation::WaitMany, requests.len());
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
    let w = world_of(requests)?;
    let progressed = progress_now(w);
    let n = some_done(requests, completions);
    if n == Some(0) {
        if progressed {
            w.note_progress();
        }
        w.failed_poll(
            many(Operation::TestMany, requests.len()),
            requests.as_ptr() as usize,
        );
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
        let bytes = buf.as_bytes();
        match SendOp::new(
            self.world,
            self.rank,
            tag,
            buf.datatype(),
            bytes.as_ptr(),
            bytes.len(),
            mode,
        )? {
            Some(op) => scope.post(self.world, Entry::Send(op)),
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
                let bytes = buf.as_bytes_mut();
                let op = RecvOp::new(
                    self.world,
                    self.source_filter(),
                    tag,
                    datatype,
                    bytes.as_mut_ptr(),
                    bytes.len(),
                )?;
                scope.post(self.world, Entry::Recv(op))
            }
        }
    };
}

impl_immediate_receive!(Process);
impl_immediate_receive!(AnyProcess);
