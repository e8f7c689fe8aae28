//! The schedule-sweeping stress test (issue 27): random programs of
//! point-to-point operations of every mode and of collectives on several
//! communicators, each run under several seeded schedules of the emulator,
//! every message and every collective value checked against a model.
//!
//! # What a program is
//! A world shape (2 to 64 ranks, blocks that split it evenly), an outbox of
//! 1 to 8 slots of 64, 128 or 256 bytes, sometimes `force_streaming`,
//! sometimes `CpuOptions::local_stacks` (stack buffers local, as on the
//! GPU: rendezvous messages stream through the slot), and a *global
//! sequence* of events:
//! - a **pair**: one message from `source` to `dest` on a communicator
//!   (the world, its duplicate, its split by parity with keys reversed, its
//!   `split_shared`, its `split_by_warp`; source and dest of one group), a
//!   tag of 0 to 3 and 0 to 400 bytes (empty, inline, eager, exactly a
//!   slot, larger than a slot); sent by a blocking standard or synchronous
//!   send or an immediate standard or synchronous send waited later;
//!   received by a blocking receive, an immediate receive waited later, a
//!   probe and a receive of what it probed, or a matched probe and its
//!   matched receive; from the source or `ANY_SOURCE`, with the tag or
//!   `ANY_TAG` (under the rule below); into a buffer that is sometimes
//!   exactly the message's size or smaller (truncation);
//! - a **collective**: barrier, broadcast, reduce, all-reduce, scan or
//!   all-gather of 0 to 3 `u64` (sums) on one communicator, every group of
//!   it at once, with a root that every group has.
//!
//! Each rank's program is its share of the global sequence, in order: a
//! pair appends the send to the source's program and the receive to the
//! destination's (a pair from a rank to itself: the receive is an
//! immediate one posted before the send). An immediate operation is posted
//! into a request scope of the kernel (a *window*, at most
//! [`WINDOW`] requests) and waited a random number of the rank's later
//! events after (0 to 6), so blocking sends, receives and probes run while
//! requests are pending; every window is waited out and closed before a
//! collective and at the end.
//!
//! # Why no program can deadlock
//! Treat every standard send as synchronous (the worst MPI allows, §3.4)
//! and order each rank's operations by the global position of the event
//! they belong to (a wait: just before the event it precedes in the rank's
//! program). First, **every receive matches its own pair's message**, in
//! every execution. The messages from one source to one destination on one
//! communicator are sent in global order (one rank's program order) and
//! are non-overtaking (§3.5); their receives are posted in the same global
//! order, and receives match in posting order. A receive naming its source
//! (any tag or its own) therefore meets first, of the messages that fit it,
//! the earliest one its earlier receives have not taken: its own. A
//! receive from `ANY_SOURCE` (with a tag `t` or `ANY_TAG`) is generated
//! only when **every later pair to the same destination on the same
//! communicator whose tag fits the filter has the same source**: messages
//! from other sources that fit it belong to earlier pairs, whose receives
//! were posted before it and take them first; later ones from its own
//! source come after its own message. A probe with a filter sees what a
//! receive with that filter would take (§3.8.1), so the probe and the
//! receive of what it probed get the pair's message too. Second, **no
//! execution blocks forever**: in a state where every unfinished rank
//! waits, take the operation of least global position among those not
//! complete. Everything before it is complete, on every rank. If it is a
//! send (or the wait of one), its pair's receive is earlier or at the same
//! position on the destination, so it is posted, and it matches this
//! message: the send can complete (§3.7.4: pending requests progress in
//! any call, which is what issue 27's items 1 and 2 broke). If it is a
//! receive, a probe or the wait of a receive, its pair's send is posted,
//! and its message is the one it takes. If it is a collective, every rank
//! has finished everything before it, has no request pending, and calls
//! it: it completes. Posting and closing a window never block.
//!
//! # What is checked
//! Every receive's status (class, source as a rank of its communicator,
//! tag, length: so every message is received once, by its own receive,
//! hence in order per source, tag and communicator), the probe's status,
//! the first bytes and a checksum of the data (intact, truncated exactly);
//! every send's and wait's class; every collective's class and a fold of
//! its result against the sums computed here. A launch that fails
//! (deadlock, livelock, a rank's error) fails the case.
//!
//! # Running it
//! `cargo test --release -p gpu-mpi-check --test stress`: [`CI_CASES`]
//! programs (case seeds from 0), each under the schedules of [`schedules`]
//! (two `Random`, two `Pct`) on the emulator, and once on the GPU where one
//! is present. `GPU_MPI_STRESS=long` runs [`LONG_CASES`] programs,
//! `GPU_MPI_STRESS=N` runs `N`, `GPU_MPI_STRESS_FIRST=S` starts at case
//! seed `S`; `GPU_MPI_STRESS_CASE=S` runs case `S` alone and prints its
//! program. A failure names the case seed and the schedule and prints the
//! program, shrunk to fewer events where possible.

use gpu_mpi::device::{ErrorClass, ANY_SOURCE, ANY_TAG};
use gpu_mpi::{CpuOptions, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::interpreter::{checksum, message_byte};
use gpu_mpi_check_kernels::stress::*;
use gpu_mpi_check_kernels::NONE;
use std::fmt::Write as _;

mod common;
use common::SplitMix64;

/// Programs of a test run (each under every schedule of [`schedules`]).
const CI_CASES: u64 = 1500;
/// Programs of `GPU_MPI_STRESS=long`.
const LONG_CASES: u64 = 50_000;
/// (ranks, block size) of the worlds, repeated to weight the small ones.
const SHAPES: [(u32, u32); 15] = [
    (2, 2),
    (2, 1),
    (3, 3),
    (4, 4),
    (4, 2),
    (5, 5),
    (6, 3),
    (6, 6),
    (8, 4),
    (8, 8),
    (12, 6),
    (16, 8),
    (36, 36),
    (40, 20),
    (64, 64),
];
const TAGS: u32 = 4;
/// Largest number of a rank's events an immediate operation stays pending.
const MAX_DELAY: u32 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendKind {
    Send,
    Ssend,
    Isend,
    Issend,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvKind {
    Recv,
    Irecv,
    Probe,
    MatchedProbe,
}

#[derive(Clone, Copy, Debug)]
struct Pair {
    /// Message id: its bytes are `message_byte(id, j)`.
    id: u32,
    comm: u32,
    /// World ranks.
    source: u32,
    dest: u32,
    tag: u32,
    bytes: u32,
    send: SendKind,
    recv: RecvKind,
    any_source: bool,
    any_tag: bool,
    capacity: u32,
    /// Events of the sender (receiver) between an immediate send's
    /// (receive's) post and its wait.
    send_delay: u32,
    recv_delay: u32,
}

#[derive(Clone, Copy, Debug)]
struct Coll {
    comm: u32,
    kind: u32,
    root: u32,
    count: u32,
    seed: u32,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Pair(Pair),
    Coll(Coll),
}

#[derive(Clone, Debug)]
struct Program {
    ranks: u32,
    block_dim: u32,
    slots: u32,
    slot_bytes: u32,
    force_streaming: bool,
    local_stacks: bool,
    events: Vec<Event>,
}

/// The members (world ranks, in communicator rank order) of the group of
/// communicator `comm` that world rank `w` is in (as the kernel makes them).
fn group(p: &Program, comm: u32, w: u32) -> Vec<u32> {
    let all = 0..p.ranks;
    let block = |v: u32| v / p.block_dim;
    let warp = |v: u32| (block(v), v % p.block_dim / 32);
    match comm {
        0 | 1 => all.collect(),
        // Colour: parity; key: minus the world rank.
        2 => all.rev().filter(|v| v % 2 == w % 2).collect(),
        3 => all.filter(|&v| block(v) == block(w)).collect(),
        _ => all.filter(|&v| warp(v) == warp(w)).collect(),
    }
}

/// The rank of world rank `w` in its group of `comm`.
fn comm_rank(p: &Program, comm: u32, w: u32) -> u32 {
    group(p, comm, w).iter().position(|&v| v == w).expect("a member") as u32
}

/// The smallest group of `comm`.
fn smallest(p: &Program, comm: u32) -> u32 {
    (0..p.ranks)
        .map(|w| group(p, comm, w).len() as u32)
        .min()
        .unwrap_or(1)
}

/// Whether pair `k`'s receive may take `ANY_SOURCE` with its tag (or with
/// `ANY_TAG`): every later pair to the same destination on the same
/// communicator whose tag fits comes from the same source (module docs).
fn any_source_allowed(events: &[Event], k: usize, any_tag: bool) -> bool {
    let Event::Pair(me) = events[k] else {
        return false;
    };
    events[k + 1..].iter().all(|e| match e {
        Event::Pair(q) if q.dest == me.dest && q.comm == me.comm && (any_tag || q.tag == me.tag) => {
            q.source == me.source
        }
        _ => true,
    })
}

fn message_size(rng: &mut SplitMix64, slot_bytes: u32) -> u32 {
    let max = MAX_BYTES as u32;
    match rng.below(10) {
        0 => 0,
        1 => 1 + rng.below(8),
        2 | 3 => 9 + rng.below(slot_bytes - 8),
        4 => slot_bytes,
        _ => (slot_bytes + 1 + rng.below(max - slot_bytes)).min(max),
    }
}

/// Program `case`: a deterministic function of the seed.
fn generate(case: u64) -> Program {
    let mut rng = SplitMix64::new(case.wrapping_mul(0xA076_1D64_78BD_642F) ^ 0x5EED);
    let (ranks, block_dim) = SHAPES[rng.below(SHAPES.len() as u32) as usize];
    let slot_bytes = [64, 128, 256][rng.below(3) as usize];
    let mut p = Program {
        ranks,
        block_dim,
        slots: 1 + rng.below(8),
        slot_bytes,
        force_streaming: rng.chance(20),
        local_stacks: rng.chance(30),
        events: Vec::new(),
    };
    let n = 6 + rng.below(75);
    for i in 0..n {
        let comm = rng.below(COMMS);
        if rng.chance(10) {
            let kind = rng.below(C_KINDS);
            let most = if kind == C_ALL_GATHER {
                (MAX_ELEMS as u32 / ranks).min(3)
            } else {
                3
            };
            p.events.push(Event::Coll(Coll {
                comm,
                kind,
                root: rng.below(smallest(&p, comm)),
                count: rng.below(most + 1),
                seed: rng.next_u64() as u32,
            }));
            continue;
        }
        let source = rng.below(ranks);
        let members = group(&p, comm, source);
        let others: Vec<u32> = members.iter().copied().filter(|&v| v != source).collect();
        let dest = if others.is_empty() || rng.chance(8) {
            source
        } else {
            others[rng.below(others.len() as u32) as usize]
        };
        let bytes = message_size(&mut rng, slot_bytes);
        let capacity = match rng.below(20) {
            0 if bytes > 0 => rng.below(bytes),
            1 | 2 => bytes,
            _ => MAX_BYTES as u32,
        };
        let send =
            [SendKind::Send, SendKind::Ssend, SendKind::Isend, SendKind::Issend][rng.below(4) as usize];
        let recv = if dest == source {
            RecvKind::Irecv
        } else {
            [
                RecvKind::Recv,
                RecvKind::Irecv,
                RecvKind::Probe,
                RecvKind::MatchedProbe,
            ][rng.below(4) as usize]
        };
        p.events.push(Event::Pair(Pair {
            id: 0x1000 + i,
            comm,
            source,
            dest,
            tag: rng.below(TAGS),
            bytes,
            send,
            recv,
            any_source: false,
            any_tag: rng.chance(35),
            capacity,
            send_delay: rng.below(MAX_DELAY + 1),
            recv_delay: rng.below(MAX_DELAY + 1),
        }));
    }
    // Wildcard sources where the rule allows them (a later pass: it looks ahead).
    for k in 0..p.events.len() {
        let want = rng.chance(50);
        if let Event::Pair(q) = p.events[k] {
            if want && any_source_allowed(&p.events, k, q.any_tag) {
                if let Event::Pair(q) = &mut p.events[k] {
                    q.any_source = true;
                }
            }
        }
    }
    p
}

/// What a record of a rank must hold.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Send(usize),
    Recv(usize),
    Coll(usize),
}

/// One rank's requests while its program is encoded.
#[derive(Default)]
struct RankState {
    ops: Vec<[u32; OP_WORDS]>,
    records: Vec<Expect>,
    open: bool,
    used: usize,
    /// (slot, events left before its wait).
    pending: Vec<(usize, u32)>,
}

impl RankState {
    fn record(&mut self, e: Expect) -> u32 {
        self.records.push(e);
        (self.records.len() - 1) as u32
    }
    fn wait(&mut self, slot: usize) {
        self.ops.push([OP_WAIT, 0, 0, 0, 0, 0, slot as u32, 0]);
    }
    /// Before one of the rank's events: the waits that are due, and the
    /// window closed once nothing is pending.
    fn advance(&mut self) {
        let mut keep = Vec::new();
        for (slot, left) in std::mem::take(&mut self.pending) {
            if left == 0 {
                self.wait(slot);
            } else {
                keep.push((slot, left - 1));
            }
        }
        self.pending = keep;
        if self.open && self.pending.is_empty() {
            self.close();
        }
    }
    fn flush(&mut self) {
        for (slot, _) in std::mem::take(&mut self.pending) {
            self.wait(slot);
        }
        if self.open {
            self.close();
        }
    }
    fn close(&mut self) {
        self.ops.push([OP_CLOSE, 0, 0, 0, 0, 0, 0, 0]);
        self.open = false;
        self.used = 0;
    }
    /// Makes room for `n` more requests in the window: a full one is
    /// waited out and closed first.
    fn reserve(&mut self, n: usize) {
        if self.used + n > WINDOW {
            self.flush();
        }
    }
    /// A slot of the open window (opening or renewing it as needed).
    fn slot(&mut self) -> usize {
        self.reserve(1);
        if !self.open {
            self.ops.push([OP_OPEN, 0, 0, 0, 0, 0, 0, 0]);
            self.open = true;
        }
        self.used += 1;
        self.used - 1
    }
}

/// Per rank: its operations and what each of its records must hold.
struct Encoded {
    ranks: Vec<RankState>,
}

fn encode(p: &Program) -> Encoded {
    let mut st: Vec<RankState> = (0..p.ranks).map(|_| RankState::default()).collect();
    for (k, e) in p.events.iter().enumerate() {
        match *e {
            Event::Coll(c) => {
                for s in st.iter_mut() {
                    s.flush();
                    let rec = s.record(Expect::Coll(k));
                    s.ops
                        .push([OP_COLL, c.comm, c.kind, c.root, c.count, c.seed, 0, rec]);
                }
            }
            Event::Pair(q) => {
                assert!(
                    !q.any_source || any_source_allowed(&p.events, k, q.any_tag),
                    "event {k}: a wildcard source the rule forbids"
                );
                let to = comm_rank(p, q.comm, q.dest);
                let from = if q.any_source {
                    ANY_SOURCE as u32
                } else {
                    comm_rank(p, q.comm, q.source)
                };
                let tag = if q.any_tag { ANY_TAG as u32 } else { q.tag };
                let receive = |s: &mut RankState| {
                    let rec = s.record(Expect::Recv(k));
                    let (kind, slot) = match q.recv {
                        RecvKind::Recv => (OP_RECV, 0),
                        RecvKind::Probe => (OP_PROBE_RECV, 0),
                        RecvKind::MatchedProbe => (OP_MPROBE_RECV, 0),
                        RecvKind::Irecv => {
                            let slot = s.slot();
                            s.pending.push((slot, q.recv_delay));
                            (OP_IRECV, slot)
                        }
                    };
                    s.ops
                        .push([kind, q.comm, from, tag, q.capacity, 0, slot as u32, rec]);
                };
                let send = |s: &mut RankState| {
                    let rec = s.record(Expect::Send(k));
                    let (kind, slot) = match q.send {
                        SendKind::Send => (OP_SEND, 0),
                        SendKind::Ssend => (OP_SSEND, 0),
                        SendKind::Isend | SendKind::Issend => {
                            let slot = s.slot();
                            s.pending.push((slot, q.send_delay));
                            let kind = if q.send == SendKind::Isend {
                                OP_ISEND
                            } else {
                                OP_ISSEND
                            };
                            (kind, slot)
                        }
                    };
                    s.ops
                        .push([kind, q.comm, to, q.tag, q.bytes, q.id, slot as u32, rec]);
                };
                if q.source == q.dest {
                    let s = &mut st[q.source as usize];
                    s.advance();
                    // The send must not wait out a full window that holds
                    // its own receive.
                    s.reserve(1 + matches!(q.send, SendKind::Isend | SendKind::Issend) as usize);
                    receive(s);
                    send(s);
                } else {
                    st[q.source as usize].advance();
                    send(&mut st[q.source as usize]);
                    st[q.dest as usize].advance();
                    receive(&mut st[q.dest as usize]);
                }
            }
        }
    }
    for s in st.iter_mut() {
        s.flush();
    }
    Encoded { ranks: st }
}

impl Encoded {
    fn words(&self) -> Vec<u32> {
        let mut words = vec![0u32; self.ranks.len()];
        for (r, s) in self.ranks.iter().enumerate() {
            words[r] = words.len() as u32;
            words.push(s.ops.len() as u32);
            for op in &s.ops {
                words.extend(op);
            }
        }
        words
    }
    fn stride(&self) -> usize {
        self.ranks
            .iter()
            .map(|s| s.records.len())
            .max()
            .unwrap_or(0)
            .max(1)
            * RECORD_WORDS
    }
}

/// The seeded schedules every program runs under, from its case seed.
fn schedules(case: u64, p: &Program) -> Vec<Schedule> {
    let ops: usize = encode(p).ranks.iter().map(|s| s.ops.len()).sum();
    vec![
        Schedule::Random { seed: case },
        Schedule::Random { seed: case ^ 0xD1CE },
        Schedule::pct(case, 2),
        Schedule::Pct {
            seed: case,
            depth: 3,
            steps: Some(4 * ops as u64 + 16),
        },
    ]
}

/// Runs `p` on `backend` under `schedule`: the records.
fn run(backend: Backend, p: &Program, schedule: Schedule) -> Result<Vec<u32>, String> {
    let device = backend.device_with(CpuOptions {
        local_stacks: p.local_stacks,
        ..CpuOptions::default()
    });
    let e = encode(p);
    let stride = e.stride();
    let code = device.upload(&e.words()).map_err(|e| e.to_string())?;
    let out = device
        .alloc_zeroed::<u32>(stride * p.ranks as usize)
        .map_err(|e| e.to_string())?;
    let args = StressArgs {
        stride: stride as u32,
        reserved: 0,
        program: code.slice(),
        out: out.slice(),
    };
    let spec = WorldSpec::ranks(p.ranks)
        .block_dim(p.block_dim)
        .slots_per_rank(p.slots)
        .slot_bytes(p.slot_bytes)
        .force_streaming(p.force_streaming)
        .communicators(4)
        .schedule(schedule);
    device
        .launch(&SEMANTICS_STRESS, &args, &spec)
        .map_err(|e| format!("launch failed: {e}"))?;
    device.download(&out).map_err(|e| e.to_string())
}

/// The record a receive of pair `q` must leave.
fn receive_record(p: &Program, q: &Pair) -> Vec<u32> {
    let source = comm_rank(p, q.comm, q.source);
    let class = if q.bytes > q.capacity {
        ErrorClass::Truncate as u32
    } else {
        0
    };
    let mut w = vec![NONE; 4];
    if matches!(q.recv, RecvKind::Probe | RecvKind::MatchedProbe) {
        w = vec![0, source, q.tag, q.bytes];
    }
    w.extend([class, source, q.tag, q.bytes]);
    let data: Vec<u8> = (0..q.bytes.min(q.capacity) as usize)
        .map(|j| message_byte(q.id, j))
        .collect();
    let mut head = [0u8; 4];
    for (h, b) in head.iter_mut().zip(&data) {
        *h = *b;
    }
    w.extend([u32::from_le_bytes(head), checksum(&data)]);
    w
}

/// The record a collective must leave at world rank `w`.
fn collective_record(p: &Program, c: &Coll, w: u32) -> Vec<u32> {
    let members = group(p, c.comm, w);
    let (n, r) = (members.len() as u32, comm_rank(p, c.comm, w));
    let sum =
        |ranks: std::ops::Range<u32>, i: u32| ranks.fold(0u64, |a, q| a.wrapping_add(input(c.seed, q, i)));
    let elems: Vec<u64> = match c.kind {
        C_BARRIER => vec![],
        C_BROADCAST => (0..c.count).map(|i| input(c.seed, c.root, i)).collect(),
        C_REDUCE if r != c.root => vec![],
        C_REDUCE | C_ALL_REDUCE => (0..c.count).map(|i| sum(0..n, i)).collect(),
        C_SCAN => (0..c.count).map(|i| sum(0..r + 1, i)).collect(),
        _ => (0..n * c.count)
            .map(|j| input(c.seed, j / c.count, j % c.count))
            .collect(),
    };
    let mut out = vec![0, elems.iter().fold(0, |h, &v| fold(h, v))];
    out.extend([NONE; RECORD_WORDS - 2]);
    out
}

/// Checks every record of every rank against the model.
fn check(p: &Program, records: &[u32]) -> Result<(), String> {
    let e = encode(p);
    let stride = e.stride();
    for (w, s) in e.ranks.iter().enumerate() {
        for (i, x) in s.records.iter().enumerate() {
            let at = w * stride + i * RECORD_WORDS;
            let got = &records[at..at + RECORD_WORDS];
            let (want, what) = match *x {
                Expect::Send(k) | Expect::Recv(k) => {
                    let Event::Pair(q) = p.events[k] else {
                        unreachable!("a pair's record")
                    };
                    if let Expect::Send(_) = x {
                        let mut want = vec![NONE; RECORD_WORDS];
                        want[4] = 0;
                        (want, format!("the send of event {k} {q:?}"))
                    } else {
                        (receive_record(p, &q), format!("the receive of event {k} {q:?}"))
                    }
                }
                Expect::Coll(k) => {
                    let Event::Coll(c) = p.events[k] else {
                        unreachable!("a collective's record")
                    };
                    (collective_record(p, &c, w as u32), format!("event {k} {c:?}"))
                }
            };
            if got != want.as_slice() {
                return Err(format!(
                    "world rank {w}, record {i} ({what}): recorded {got:?}, expected {want:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The program, one event per line.
fn describe(p: &Program) -> String {
    let mut s = format!(
        "{} ranks in blocks of {}, {} slots of {} bytes, force_streaming {}, local_stacks {}\n",
        p.ranks, p.block_dim, p.slots, p.slot_bytes, p.force_streaming, p.local_stacks
    );
    for (k, e) in p.events.iter().enumerate() {
        let _ = writeln!(s, "  {k}: {e:?}");
    }
    s
}

/// Runs `p` under `schedule` and checks it.
fn outcome(backend: Backend, p: &Program, schedule: Schedule) -> Result<(), String> {
    let records = run(backend, p, schedule)?;
    check(p, &records)
}

/// Drops events (one at a time, then collectives' and pairs' options
/// kept) while `p` still fails under `schedule`.
fn shrink(backend: Backend, p: &Program, schedule: Schedule) -> Program {
    let mut best = p.clone();
    let mut k = 0;
    while k < best.events.len() {
        let mut q = best.clone();
        q.events.remove(k);
        if outcome(backend, &q, schedule).is_err() {
            best = q;
        } else {
            k += 1;
        }
    }
    best
}

/// Runs case `case` on `backend`: every schedule on the emulator, once on
/// the GPU. `Err` names the case, the schedule and the (shrunk) program.
fn stress_case(backend: Backend, case: u64) -> Result<(), String> {
    let p = generate(case);
    let runs = match backend {
        Backend::Cpu => schedules(case, &p),
        Backend::Cuda => vec![Schedule::Parallel],
    };
    for schedule in runs {
        if let Err(e) = outcome(backend, &p, schedule) {
            let small = shrink(backend, &p, schedule);
            let again = outcome(backend, &small, schedule).err().unwrap_or_default();
            return Err(format!(
                "stress case {case} failed on {} under schedule {schedule}: {e}\n\
                 replay: GPU_MPI_STRESS_CASE={case} cargo test --release -p gpu-mpi-check --test stress\n\
                 program:\n{}\nshrunk to {} of {} events ({again}):\n{}",
                backend.name(),
                describe(&p),
                small.events.len(),
                p.events.len(),
                describe(&small)
            ));
        }
    }
    Ok(())
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(v.parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

/// The case seeds of this run (module docs, "Running it").
fn cases() -> std::ops::Range<u64> {
    if let Some(c) = env_u64("GPU_MPI_STRESS_CASE") {
        eprintln!("stress case {c}:\n{}", describe(&generate(c)));
        return c..c + 1;
    }
    let n = match std::env::var("GPU_MPI_STRESS").as_deref() {
        Err(_) | Ok("") => CI_CASES,
        Ok("long") => LONG_CASES,
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("GPU_MPI_STRESS={v}: neither `long` nor a number")),
    };
    let first = env_u64("GPU_MPI_STRESS_FIRST").unwrap_or(0);
    first..first + n
}

fn random_programs_under_seeded_schedules(backend: Backend) {
    let mut failures = Vec::new();
    for case in cases() {
        if let Err(e) = stress_case(backend, case) {
            failures.push(e);
            if failures.len() == 3 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
testgen!(random_programs_under_seeded_schedules);

/// The model on a hand-written program: it accepts the run and rejects
/// swapped, corrupted and failed records.
fn model_accepts_a_known_run_and_rejects_wrong_records(backend: Backend) {
    let pair = |id, comm, source, dest, tag, bytes, send, recv| Pair {
        id,
        comm,
        source,
        dest,
        tag,
        bytes,
        send,
        recv,
        any_source: false,
        any_tag: false,
        capacity: MAX_BYTES as u32,
        send_delay: 2,
        recv_delay: 1,
    };
    let mut events = vec![
        Event::Pair(pair(1, 0, 1, 0, 1, 100, SendKind::Isend, RecvKind::Irecv)),
        Event::Pair(pair(2, 0, 2, 0, 1, 300, SendKind::Ssend, RecvKind::Recv)),
        Event::Pair(pair(3, 2, 2, 0, 2, 50, SendKind::Send, RecvKind::Probe)),
        Event::Coll(Coll {
            comm: 2,
            kind: C_SCAN,
            root: 0,
            count: 2,
            seed: 77,
        }),
        Event::Pair(pair(4, 1, 1, 1, 0, 8, SendKind::Issend, RecvKind::Irecv)),
        Event::Pair(pair(5, 0, 0, 2, 3, 70, SendKind::Send, RecvKind::MatchedProbe)),
    ];
    if let Event::Pair(q) = &mut events[1] {
        q.any_source = true;
    }
    if let Event::Pair(q) = &mut events[5] {
        q.capacity = 20;
    }
    let p = Program {
        ranks: 3,
        block_dim: 3,
        slots: 1,
        slot_bytes: 64,
        force_streaming: false,
        local_stacks: false,
        events,
    };
    // Event 1 may take any source: no later message to rank 0 with tag 1.
    assert!(any_source_allowed(&p.events, 1, false));
    // Event 0 may not: event 1's message from rank 2 would fit it.
    assert!(!any_source_allowed(&p.events, 0, false));
    // With any tag, event 2's message (rank 2, the parity split) does not
    // count for event 1 (the world), but event 1's counts for event 0.
    assert!(any_source_allowed(&p.events, 1, true));
    assert!(!any_source_allowed(&p.events, 0, true));
    let records = run(backend, &p, Schedule::Random { seed: 5 }).unwrap();
    check(&p, &records).unwrap();
    let e = encode(&p);
    let stride = e.stride();
    let w = RECORD_WORDS;
    // Rank 0's records: receives of events 0, 1, 2, the scan, a send;
    // rank 2's: sends of events 1 and 2, the scan, the receive of event 5.
    assert!(matches!(
        e.ranks[0].records[..],
        [
            Expect::Recv(0),
            Expect::Recv(1),
            Expect::Recv(2),
            Expect::Coll(3),
            Expect::Send(5)
        ]
    ));
    assert!(matches!(
        e.ranks[2].records[..],
        [Expect::Send(1), Expect::Send(2), Expect::Coll(3), Expect::Recv(5)]
    ));
    let corrupt = |at: usize, f: &dyn Fn(&mut u32)| {
        let mut bad = records.clone();
        f(&mut bad[at]);
        check(&p, &bad).is_err()
    };
    // Receives 0 and 1 of rank 0 swapped: another source, data, length.
    let mut bad = records.clone();
    for j in 0..w {
        bad.swap(j, w + j);
    }
    assert!(check(&p, &bad).is_err());
    // A checksum, a probe's tag, a truncation's class, a send's class, a
    // scan's fold.
    assert!(corrupt(w + 9, &|x| *x ^= 1));
    assert!(corrupt(2 * w + 2, &|x| *x += 1));
    assert!(corrupt(2 * stride + 3 * w + 4, &|x| *x = 0));
    assert!(corrupt(stride + 4, &|x| *x = ErrorClass::Truncate as u32));
    assert!(corrupt(3 * w + 1, &|x| *x = x.wrapping_add(1)));
    // The truncated message: class, full length, the first 20 bytes.
    let at = 2 * stride + 3 * w;
    assert_eq!(records[at + 4..at + 8], [ErrorClass::Truncate as u32, 0, 3, 70]);
    let head: Vec<u8> = (0..20).map(|j| message_byte(5, j)).collect();
    assert_eq!(records[at + 9], checksum(&head));
}
testgen!(model_accepts_a_known_run_and_rejects_wrong_records);

/// The generator produces what the module docs promise, in the CI run's
/// programs.
#[test]
fn the_ci_programs_cover_every_operation() {
    let mut seen = std::collections::BTreeSet::new();
    for case in 0..CI_CASES {
        let p = generate(case);
        seen.insert(format!("shape {} {}", p.ranks, p.block_dim));
        seen.insert(format!("slots {}", p.slots));
        if p.force_streaming {
            seen.insert("force_streaming".into());
        }
        if p.local_stacks {
            seen.insert("local_stacks".into());
        }
        let e = encode(&p);
        for s in &e.ranks {
            for op in &s.ops {
                seen.insert(format!("op {}", op[0]));
            }
            // Blocking operations while requests are pending.
            let mut open = false;
            for op in &s.ops {
                match op[0] {
                    OP_OPEN => open = true,
                    OP_CLOSE => open = false,
                    OP_SEND | OP_SSEND | OP_RECV | OP_PROBE_RECV | OP_MPROBE_RECV if open => {
                        seen.insert(format!("blocking {} in a window", op[0]));
                    }
                    _ => {}
                }
            }
        }
        for ev in &p.events {
            match *ev {
                Event::Coll(c) => {
                    seen.insert(format!("collective {} on {}", c.kind, c.comm));
                }
                Event::Pair(q) => {
                    seen.insert(format!("pair on {}", q.comm));
                    if q.any_source {
                        seen.insert(format!("any source, any tag {}", q.any_tag));
                    }
                    if q.source == q.dest {
                        seen.insert("to itself".into());
                    }
                    if q.bytes > q.capacity {
                        seen.insert("truncated".into());
                    }
                    if q.bytes > p.slot_bytes {
                        seen.insert("larger than a slot".into());
                    }
                    if q.bytes == 0 {
                        seen.insert("empty".into());
                    }
                }
            }
        }
    }
    let mut want: Vec<String> = (1..=8).map(|s| format!("slots {s}")).collect();
    want.extend((OP_SEND..=OP_COLL).map(|k| format!("op {k}")));
    want.extend(
        [OP_SEND, OP_SSEND, OP_RECV, OP_PROBE_RECV, OP_MPROBE_RECV]
            .map(|k| format!("blocking {k} in a window")),
    );
    want.extend((0..COMMS).map(|c| format!("pair on {c}")));
    want.extend((0..C_KINDS).flat_map(|k| (0..COMMS).map(move |c| format!("collective {k} on {c}"))));
    want.extend(SHAPES.map(|(r, b)| format!("shape {r} {b}")));
    for s in [
        "force_streaming",
        "local_stacks",
        "any source, any tag false",
        "any source, any tag true",
        "to itself",
        "truncated",
        "larger than a slot",
        "empty",
    ] {
        want.push(s.into());
    }
    let missing: Vec<&String> = want.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "the CI programs never have: {missing:?}");
}
