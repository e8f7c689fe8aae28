//! The relay: the thread of each process that carries point-to-point
//! messages between its world memory and the other processes' over MPI,
//! completes world barriers and the world's non-blocking collectives across
//! them, propagates an abort, and decides
//! with the other relays when the whole world has finished or can never
//! progress (docs/distributed.md).
//!
//! # A message to a rank of another process
//! The sending rank runs the engine as for any message: it fills a slot of
//! its outbox and pushes it on the destination's inbox, which in this
//! process is a shadow's. The relay takes the shadow's inbox as a receiver
//! does (one swap, Acquire here where the engine fences around a relaxed
//! one, then the chain of links, newest first, turned around), and for each message, in the order pushed:
//! - eager: copies the payload (at most 8 bytes: the header's `head`);
//! - direct (the sender's buffer is shared memory): copies `bytes` from the
//!   sender's buffer, whose address is the header's `head`;
//! - streamed: takes the chunks as a receiver does (CLEAR-TO-SEND, wait for
//!   CHUNK, ...) until it has the whole message;
//!
//! and sends it as one MPI message (`DATA`: envelope, sender's slot index,
//! sequence number, bytes) to the destination's process. The sender's slot
//! stays as it is (the sender sees no receipt) until that process answers
//! `RETURN`: then the relay stores FREE (eager) or DONE (rendezvous), as
//! the receiver would have, so a synchronous send completes only once the
//! remote receive has started, and a standard one as it would locally.
//!
//! # A message from a rank of another process
//! The relay writes a `DATA` into the same slot of the sender's shadow
//! outbox (free: the sender holds its own slot, and so sends nothing more
//! through it, until this one is returned) with the message's envelope and
//! sequence number, and pushes it on the destination's inbox as the sender
//! would (a Release swap). A message longer than a slot's payload becomes a
//! direct message whose buffer is the relay's copy. When the receiver has
//! returned the slot (FREE, or DONE for a direct one), the relay answers
//! `RETURN`.
//!
//! Every message between two processes goes through their two relays, one
//! thread each, in order (MPI's non-overtaking between two processes), so
//! one sender's messages to one destination arrive in the order it sent
//! them, and their sequence numbers are the sender's own: matching reads
//! them exactly as a local sender's.
//!
//! # A world barrier
//! The blocks of every process arrive at the barrier record of their own
//! world memory. Once the count of the current generation equals this
//! process's blocks, the relay sends `BARRIER` (the generation, the
//! count's word, the key words, and the staging bytes its blocks named in
//! the generation's payload word: the world's own collectives' cells,
//! docs/distributed.md) to every other relay; once
//! every other process's came, it writes their bytes at the same offsets
//! here, ORs their key words in, clears generation `g + 3` as the last
//! block to arrive does in one process, and adds their counts with a
//! Release, which the waiting blocks acquire. A barrier's generation is
//! the same in every process: every rank passes the same world
//! collectives (in a kernel crate without the device's `distributed`
//! feature, those but the barrier fail before they count one).
//!
//! # A non-blocking collective of the world
//! Each process's ranks climb an arrival tree of their own; its top
//! arriver stores the use in the slot's `handed` word (Release). The relay
//! sends that part (`IMMEDIATE`: the process's ranks' arguments, the
//! operation code, its fold or a broadcast root's data) to every other
//! relay, and once every process's part of the use came, publishes it as
//! the top arriver of one process would ([`Pump::advance_immediate`]).
//!
//! # A non-blocking collective of a communicator's group
//! A group whose members span processes counts its arrivals per process;
//! the last of a process's members to start a use stores it in the group
//! record's `handed` word (Release) and sets the context's `relayed` flag.
//! The relay looks at the records of the flagged contexts, sends its
//! members' arguments and operands or root's data (`GROUP`) to every
//! other process with members of the group, and once it has every
//! member's, publishes the use in its process's copy of the record as the
//! group's last arriver would ([`Pump::advance_groups`]).
//!
//! A reduction with an operation of the program's own (code 0), which the
//! relay cannot apply: it puts the parts where the ranks read them (the
//! world: each other process's fold into its first rank's cell, a
//! shadow's; a group: every member's operand in a buffer of the relay's,
//! its address in the group's result cell) and publishes `VERDICT_JOIN`;
//! each rank joins them at its completion with the operation it kept.
//!
//! # When the world is done
//! A process is *passive* when its relay has nothing to move and no local
//! rank can progress before the world memory changes (every worker sleeps
//! quiet at the epoch the relay read before its last look at the inboxes,
//! [`LocalState::Quiet`]), or every local rank returned. Only a message
//! from another process (`DATA`, `RETURN`, `ABORT`, `BARRIER`,
//! `IMMEDIATE`, `GROUP`: the *counted* ones) can make a passive process active again. Process 0's
//! relay runs waves: it asks every relay (`PROBE`) for its state, epoch
//! and counts of counted messages sent and received (`REPORT`). The world
//! is done when two consecutive waves find every process passive, with the same state,
//! epoch and counts in both, and as many messages received as sent in all
//! (Mattern's four counters, 1987): each process was passive throughout
//! between its two reports, so at the latest first report every process
//! was passive and, the counts being equal and unchanged, no message was
//! in flight: nothing could ever wake any of them. Then `END` says how it
//! ended: every rank returned, or a deadlock (each relay ends its quiet
//! run, [`LocalRun::end_deadlocked`]), or, as soon as a wave finds a
//! process whose run ended early (a panic), a failure (the others stop).
//! Each relay then tells every other how many counted messages it sent it
//! (`FINAL`) and receives until it has them all, so that no MPI message is
//! left unmatched. MPI orders only one sender's messages to one receiver
//! (MPI 4.1 §3.5), so another relay's `FINAL`, sent once it had process
//! 0's `END`, may reach a relay before its own `END` does (Open MPI with
//! four processes did): a relay keeps each `FINAL` it receives and counts
//! it in when its `END` comes.

use super::Processes;
use crate::cpu::scheduler::{LocalRun, LocalState, Relay};
use gpu_mpi_device::abi::layout::{
    Layout, ABORT_OFFSET, BARRIER_KEY_WORDS, GRID_BARRIER_OFFSET, IMMEDIATE_RECORD_BYTES, IMMEDIATE_SLOTS,
    SLOT_HEADER_BYTES,
};
use gpu_mpi_device::abi::records::{
    kind_of, kind_sequence, BarrierPayload, CommEntry, GridBarrier, MessageKind, SlotHeader, SlotState,
    KIND_BITS, LINK_NONE, LINK_PENDING,
};
use gpu_mpi_device::collective::immediate::{
    done_word, fold_system, judge, Args, Kind as ImmediateKind, SlotRecord, ARGS_BYTES, VERDICT_JOIN,
};
use gpu_mpi_device::error::ErrorClass;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Destination, Source};
use std::collections::HashMap;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The MPI tag of every relay message (the relays use MPI's world
/// communicator alone).
const TAG: i32 = 0x6770;

/// What a relay message is: its first word.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A message for a rank of the receiving process.
    Data = 1,
    /// The slot of a `DATA` came back: the sender's slot may be returned.
    Return = 2,
    /// A rank aborted the world (the abort word follows).
    Abort = 3,
    /// Process 0 asks for a report (the wave's number follows).
    Probe = 4,
    /// A process's state for a wave.
    Report = 5,
    /// The world is done (how: [`Verdict`]).
    End = 6,
    /// After `END`: how many counted messages the sender sent the receiver.
    Final = 7,
    /// Every block of the sending process arrived at a world barrier (its
    /// generation and key words follow).
    Barrier = 8,
    /// Every rank of the sending process started a use of a world slot of
    /// the non-blocking collectives: its part ([`ImmediatePart`]).
    Immediate = 9,
    /// Every member of a communicator's group that the sending process runs
    /// started a use of one of the context's slots: their arguments and
    /// operands ([`Pump::advance_groups`]).
    Group = 10,
}

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::Data,
        Kind::Return,
        Kind::Abort,
        Kind::Probe,
        Kind::Report,
        Kind::End,
        Kind::Final,
        Kind::Barrier,
        Kind::Immediate,
        Kind::Group,
    ];

    fn of(word: u32) -> Option<Kind> {
        Kind::ALL.into_iter().find(|&k| k as u32 == word)
    }

    /// Whether the termination waves count it: the messages that can make
    /// a passive process active (module docs, "When the world is done").
    fn counted(self) -> bool {
        matches!(
            self,
            Kind::Data | Kind::Return | Kind::Abort | Kind::Barrier | Kind::Immediate | Kind::Group
        )
    }
}

/// How the world ended, in `END`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Every rank of every process returned.
    Finished = 0,
    /// Nothing can ever progress and some rank has not returned.
    Deadlock = 1,
    /// A process's run ended early; the others stop.
    Failure = 2,
}

/// A process's state in a `REPORT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Report {
    /// 0 busy, 1 quiet, 2 finished, 3 ended early.
    state: u32,
    /// The epoch it is quiet at (0 unless quiet).
    epoch: u64,
    /// Counted messages it sent, in all.
    sent: u64,
    /// Counted messages it received, in all.
    received: u64,
}

const BUSY: u32 = 0;
const QUIET: u32 = 1;
const FINISHED: u32 = 2;
const ENDED: u32 = 3;

/// Words of a `DATA` before its payload: kind, source, destination, slot,
/// tag, context, datatype, bytes, sequence, signature.
const DATA_WORDS: usize = 10;

/// The relay of one process (the [`Relay`] the scheduler runs).
pub(crate) struct MpiRelay<'p> {
    pub(crate) processes: &'p Processes,
    /// World ranks per process.
    pub(crate) ranks_per_process: u32,
}

impl Relay for MpiRelay<'_> {
    fn serve(&self, local: &LocalRun<'_, '_>) {
        Pump::new(self, local).serve()
    }
}

/// The world memory as the relay touches it: shared words atomically, as
/// the ranks do; payloads with plain copies ordered by them.
struct Memory {
    base: *mut u8,
    layout: Layout,
}

impl Memory {
    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: every offset passed is a 4-byte aligned shared word of the
        // world memory (a layout's offset of one), which lives for the run,
        // and whose every access is atomic.
        unsafe { AtomicU32::from_ptr(self.base.add(offset).cast::<u32>()) }
    }

    /// The arrivals word of world barrier generation `generation`: the
    /// count in its low half, the blocks of a short key not all 0 in its
    /// high half (`GridBarrier::arrivals`).
    fn arrivals(&self, generation: u32) -> &AtomicU64 {
        self.word64(GRID_BARRIER_OFFSET + offset_of!(GridBarrier, arrivals) + 8 * (generation % 4) as usize)
    }

    /// The payload word of world barrier generation `generation`
    /// (`GridBarrier::payloads`).
    fn payloads(&self, generation: u32) -> &AtomicU64 {
        self.word64(GRID_BARRIER_OFFSET + offset_of!(GridBarrier, payloads) + 8 * (generation % 4) as usize)
    }

    /// Key word `i` of world barrier generation `generation`.
    fn key(&self, generation: u32, i: usize) -> &AtomicU64 {
        self.word64(
            GRID_BARRIER_OFFSET + offset_of!(GridBarrier, keys) + 64 * (generation % 4) as usize + 8 * i,
        )
    }

    /// The 8-byte word at `offset` of the world memory (a word of the
    /// barrier's record).
    fn word64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: every offset passed is an 8-byte aligned word of the
        // barrier's record, which lives for the run and is only accessed
        // atomically.
        unsafe { AtomicU64::from_ptr(self.base.add(offset).cast::<u64>()) }
    }

    fn inbox(&self, rank: u32) -> &AtomicU32 {
        self.word(self.layout.rank_header(rank))
    }

    fn state(&self, id: u32) -> &AtomicU32 {
        self.word(self.layout.slot_state_of_id(id))
    }

    fn slot_word(&self, id: u32, field: usize) -> &AtomicU32 {
        self.word(self.layout.slot_of_id(id) + field)
    }

    /// The 64-bit word of slot `id`'s header that `head_low` begins
    /// (`SlotHeader::head_low`), as its two words (relaxed: acquired with
    /// the inbox).
    fn head(&self, id: u32) -> u64 {
        let low = self
            .slot_word(id, offset_of!(SlotHeader, head_low))
            .load(Ordering::Relaxed);
        let high = self
            .slot_word(id, offset_of!(SlotHeader, head_high))
            .load(Ordering::Relaxed);
        u64::from(low) | u64::from(high) << 32
    }

    fn payload(&self, id: u32) -> *mut u8 {
        // SAFETY: the payload follows the slot's header inside the world.
        unsafe { self.base.add(self.layout.slot_of_id(id) + SLOT_HEADER_BYTES) }
    }
}

/// The other processes' arrivals at one world barrier generation, as
/// their `BARRIER`s came.
#[derive(Default)]
struct RemoteArrivals {
    /// Processes whose arrival came.
    processes: u32,
    /// Their arrivals words added up (each the process's blocks in the low
    /// half, its blocks of a short key not all 0 in the high half).
    count: u64,
    /// Their key words ORed.
    keys: [u64; BARRIER_KEY_WORDS],
    /// The staging bytes they carried (`BarrierPayload`), each at its
    /// offset in the world memory.
    bytes: Vec<(usize, Vec<u8>)>,
}

/// A streamed message being taken chunk by chunk.
struct Stream {
    id: u32,
    dst: u32,
    words: [u32; DATA_WORDS],
    data: Vec<u8>,
}

/// A message written into a shadow's slot here, until its receiver
/// returns the slot.
struct Injected {
    id: u32,
    dst: u32,
    /// The process of its sender.
    from: u32,
    /// A direct message's bytes (its payload points here).
    buffer: Option<Box<[u8]>>,
}

/// One process's part of a use of a world slot of the non-blocking
/// collectives: its ranks' arguments (four words each, in rank order), the
/// reduction's operation code, and its bytes: for a broadcast whose root
/// it runs, the root's data; otherwise its result cell (its ranks' fold).
struct ImmediatePart {
    args: Vec<[u32; 4]>,
    operation: u32,
    bytes: Vec<u8>,
}

/// One use of a slot of a communicator's group that spans processes, as
/// the relays' `GROUP` parts fill it: the predefined operation code and,
/// per member (in the group's order), its arguments (four words) and the
/// bytes of its operand or, for a broadcast, the root's data.
struct GroupUse {
    operation: u32,
    members: Vec<Option<([u32; 4], Vec<u8>)>>,
}

/// Which use of which slot of which group: (context, slot, the group's
/// first entry in the context's table, use).
type GroupKey = (u32, u32, u32, u32);

/// A send in flight and its buffer, leaked until the send completes.
type InFlight = (Request<'static, [u8], StaticScope>, *mut [u8]);

/// Process 0's termination detection.
struct Waves {
    wave: u32,
    reports: Vec<Option<Report>>,
    outstanding: bool,
    previous: Option<Vec<Report>>,
    next: Instant,
}

struct Pump<'r, 'l, 's, 'a> {
    relay: &'r MpiRelay<'r>,
    local: &'l LocalRun<'s, 'a>,
    world: SimpleCommunicator,
    memory: Memory,
    me: u32,
    processes: u32,
    slots_per_rank: u32,
    slot_bytes: u32,
    /// Local senders' slots whose messages left, awaiting `RETURN`.
    forwarded: HashMap<u32, (MessageKind, u32)>,
    streams: Vec<Stream>,
    injected: Vec<Injected>,
    /// Sends in flight, with their leaked buffers.
    sends: Vec<InFlight>,
    sent_to: Vec<u64>,
    received_from: Vec<u64>,
    abort_sent: bool,
    probe: Option<u32>,
    waves: Option<Waves>,
    verdict: Option<Verdict>,
    /// Per process, the count its `FINAL` gave, if it came before this
    /// relay's `END` (module docs, "When the world is done").
    finals: Vec<Option<u64>>,
    /// The world barrier's generation this process is in (the first is 1).
    generation: u32,
    /// Whether its blocks' arrival went to the other processes.
    arrived: bool,
    /// Per generation, the other processes' arrivals so far.
    remote: HashMap<u32, RemoteArrivals>,
    /// Blocks per process.
    blocks: u32,
    /// Per world slot of the non-blocking collectives, the last use this
    /// process's part went out for.
    handed: [u32; IMMEDIATE_SLOTS as usize],
    /// Per (slot, use), the processes' parts so far.
    parts: HashMap<(u32, u32), Vec<Option<ImmediatePart>>>,
    /// Per (context, slot, group's first entry), the last use of a group
    /// that spans processes whose members here went out.
    group_handed: HashMap<(u32, u32, u32), u32>,
    /// The uses of groups that span processes with members' parts so far.
    groups: HashMap<GroupKey, GroupUse>,
    /// Per context whose `relayed` flag was seen, the first entries of its
    /// groups with a member here (from its table, which never changes).
    group_starts: HashMap<u32, Vec<u32>>,
    /// Per (context, slot, group's first entry), the members' operands of
    /// its last use joined by the ranks (`VERDICT_JOIN`), which they read
    /// here ([`Pump::publish_group`]).
    join_parts: HashMap<(u32, u32, u32), Box<[u8]>>,
}

impl<'r, 'l, 's, 'a> Pump<'r, 'l, 's, 'a> {
    fn new(relay: &'r MpiRelay<'r>, local: &'l LocalRun<'s, 'a>) -> Self {
        let layout = *local.layout();
        let processes = relay.processes.count();
        let me = relay.processes.index();
        Pump {
            relay,
            local,
            world: relay.processes.world(),
            memory: Memory {
                base: local.world(),
                layout,
            },
            me,
            processes,
            slots_per_rank: layout.slots_per_rank,
            slot_bytes: layout.slot_bytes,
            forwarded: HashMap::new(),
            streams: Vec::new(),
            injected: Vec::new(),
            sends: Vec::new(),
            sent_to: vec![0; processes as usize],
            received_from: vec![0; processes as usize],
            abort_sent: false,
            probe: None,
            waves: (me == 0).then(|| Waves {
                wave: 0,
                reports: vec![None; processes as usize],
                outstanding: false,
                previous: None,
                next: Instant::now(),
            }),
            verdict: None,
            finals: vec![None; processes as usize],
            generation: 1,
            arrived: false,
            remote: HashMap::new(),
            blocks: layout.blocks / processes,
            handed: [0; IMMEDIATE_SLOTS as usize],
            parts: HashMap::new(),
            group_handed: HashMap::new(),
            groups: HashMap::new(),
            group_starts: HashMap::new(),
            join_parts: HashMap::new(),
        }
    }

    fn process_of(&self, rank: u32) -> u32 {
        rank / self.relay.ranks_per_process
    }

    fn send(&mut self, to: u32, words: &[u32], payload: &[u8]) {
        let mut v = Vec::with_capacity(words.len() * 4 + payload.len());
        for w in words {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(payload);
        let buf: &'static mut [u8] = Box::leak(v.into_boxed_slice());
        let ptr: *mut [u8] = buf;
        let req = self
            .world
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, &*buf, TAG);
        self.sends.push((req, ptr));
        if Kind::of(words[0]).is_some_and(Kind::counted) {
            self.sent_to[to as usize] += 1;
        }
    }

    /// Completes the sends that are done; true if none is left.
    fn test_sends(&mut self) -> bool {
        let mut i = 0;
        while i < self.sends.len() {
            let (req, ptr) = self.sends.swap_remove(i);
            match req.test() {
                Ok(_) => {
                    // SAFETY: `ptr` is the buffer leaked for this send, which
                    // MPI no longer reads.
                    drop(unsafe { Box::from_raw(ptr) });
                }
                Err(req) => {
                    self.sends.push((req, ptr));
                    let last = self.sends.len() - 1;
                    self.sends.swap(i, last);
                    i += 1;
                }
            }
        }
        self.sends.is_empty()
    }

    fn serve(mut self) {
        let ranks = self.local.ranks();
        let total = self.memory.layout.ranks;
        let remote: Vec<u32> = (0..total).filter(|r| !ranks.contains(r)).collect();
        let mut idle = Duration::from_micros(20);
        loop {
            let e0 = self.local.epoch();
            let mut work = false;
            for &r in &remote {
                // Relaxed: a non-empty inbox is taken with the Acquire swap.
                if self.memory.inbox(r).load(Ordering::Relaxed) != 0 {
                    work = true;
                    self.take_outgoing(r);
                }
            }
            work |= self.advance_streams();
            work |= self.check_injected();
            work |= self.advance_barrier();
            work |= self.advance_immediate();
            work |= self.advance_groups();
            let abort = self.memory.word(ABORT_OFFSET).load(Ordering::Relaxed);
            if abort != 0 && !self.abort_sent {
                self.abort_sent = true;
                work = true;
                let me = self.me;
                for q in (0..self.processes).filter(|&q| q != me) {
                    self.send(q, &[Kind::Abort as u32, abort], &[]);
                }
            }
            work |= self.receive_all();
            self.test_sends();
            if let Some(wave) = self.probe.take() {
                let report = self.report(work, e0);
                let words = [
                    Kind::Report as u32,
                    wave,
                    report.state,
                    report.epoch as u32,
                    (report.epoch >> 32) as u32,
                    report.sent as u32,
                    (report.sent >> 32) as u32,
                    report.received as u32,
                    (report.received >> 32) as u32,
                ];
                self.send(0, &words, &[]);
            }
            self.run_waves();
            if let Some(verdict) = self.verdict {
                self.end(verdict);
                return;
            }
            if work {
                idle = Duration::from_micros(20);
            } else {
                std::thread::sleep(idle);
                idle = (idle * 2).min(Duration::from_millis(1));
            }
        }
    }

    /// This process's report: passive only if the relay found nothing to
    /// do in the pass that began at epoch `e0` and the run is still quiet
    /// at `e0` (no rank wrote since the relay looked at the inboxes).
    fn report(&self, work: bool, e0: u64) -> Report {
        let (state, epoch) = match self.local.state() {
            LocalState::Ended => (ENDED, 0),
            _ if work || !self.streams.is_empty() => (BUSY, 0),
            LocalState::Finished => (FINISHED, 0),
            LocalState::Quiet(e) if e == e0 => (QUIET, e),
            _ => (BUSY, 0),
        };
        Report {
            state,
            epoch,
            sent: self.sent_to.iter().sum(),
            received: self.received_from.iter().sum(),
        }
    }

    /// Process 0: starts waves and judges them.
    fn run_waves(&mut self) {
        let Some(w) = self.waves.as_mut() else {
            return;
        };
        if w.outstanding {
            if w.reports.iter().any(Option::is_none) {
                return;
            }
            w.outstanding = false;
            let now: Vec<Report> = w.reports.iter().map(|r| r.expect("checked")).collect();
            w.reports.fill(None);
            if now.iter().any(|r| r.state == ENDED) {
                self.announce(Verdict::Failure);
                return;
            }
            let passive = now.iter().all(|r| r.state == QUIET || r.state == FINISHED);
            let sent: u64 = now.iter().map(|r| r.sent).sum();
            let received: u64 = now.iter().map(|r| r.received).sum();
            if passive && sent == received && w.previous.as_ref() == Some(&now) {
                let finished = now.iter().all(|r| r.state == FINISHED);
                self.announce(if finished {
                    Verdict::Finished
                } else {
                    Verdict::Deadlock
                });
                return;
            }
            let w = self.waves.as_mut().expect("process 0");
            w.next = Instant::now()
                + if passive {
                    Duration::ZERO
                } else {
                    Duration::from_millis(1)
                };
            w.previous = Some(now);
            return;
        }
        if Instant::now() < w.next {
            return;
        }
        w.wave = w.wave.wrapping_add(1);
        w.outstanding = true;
        let wave = w.wave;
        for q in 0..self.processes {
            self.send(q, &[Kind::Probe as u32, wave], &[]);
        }
    }

    fn announce(&mut self, verdict: Verdict) {
        for q in 0..self.processes {
            self.send(q, &[Kind::End as u32, verdict as u32], &[]);
        }
    }

    /// Receives every relay message that has arrived; true if one was
    /// counted (it changed this process).
    fn receive_all(&mut self) -> bool {
        let mut counted = false;
        while let Some(probed) = self.world.any_process().immediate_matched_probe_with_tag(TAG) {
            let (v, status) = probed.matched_receive_vec::<u8>();
            let from = status.source_rank() as u32;
            counted |= self.handle(from, &v);
        }
        counted
    }

    fn handle(&mut self, from: u32, v: &[u8]) -> bool {
        let word = |i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let kind = Kind::of(word(0)).unwrap_or_else(|| panic!("relay message of unknown kind {}", word(0)));
        if kind.counted() {
            self.received_from[from as usize] += 1;
        }
        match kind {
            Kind::Data => {
                let mut words = [0u32; DATA_WORDS];
                for (i, w) in words.iter_mut().enumerate() {
                    *w = word(i);
                }
                self.inject(from, words, &v[4 * DATA_WORDS..]);
                true
            }
            Kind::Return => {
                self.returned(word(1));
                true
            }
            Kind::Abort => {
                // Relaxed, as the ranks' own abort: a flag their polls read.
                let _ = self.memory.word(ABORT_OFFSET).compare_exchange(
                    0,
                    word(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                // Already sent on: the others have it from its process.
                self.abort_sent = true;
                self.local.progressed();
                true
            }
            Kind::Probe => {
                self.probe = Some(word(1));
                false
            }
            Kind::Report => {
                let w = self.waves.as_mut().expect("reports go to process 0");
                if word(1) == w.wave {
                    let wide = |i: usize| u64::from(word(i)) | (u64::from(word(i + 1)) << 32);
                    w.reports[from as usize] = Some(Report {
                        state: word(2),
                        epoch: wide(3),
                        sent: wide(5),
                        received: wide(7),
                    });
                }
                false
            }
            Kind::End => {
                self.verdict = Some(match word(1) {
                    0 => Verdict::Finished,
                    1 => Verdict::Deadlock,
                    _ => Verdict::Failure,
                });
                false
            }
            Kind::Barrier => {
                let wide = |i: usize| u64::from(word(i)) | (u64::from(word(i + 1)) << 32);
                let entry = self.remote.entry(word(1)).or_default();
                entry.processes += 1;
                entry.count += wide(2);
                for (i, k) in entry.keys.iter_mut().enumerate() {
                    *k |= wide(4 + 2 * i);
                }
                let ranges = 4 + 2 * BARRIER_KEY_WORDS;
                let mut at = 4 * (ranges + 1 + 3 * word(ranges) as usize);
                for r in 0..word(ranges) as usize {
                    let at_word = ranges + 1 + 3 * r;
                    let (offset, len) = (wide(at_word) as usize, word(at_word + 2) as usize);
                    entry.bytes.push((offset, v[at..at + len].to_vec()));
                    at += len;
                }
                true
            }
            Kind::Immediate => {
                let (slot, use_, operation, n) = (word(1), word(2), word(3), word(4) as usize);
                let args = (0..n)
                    .map(|i| [word(5 + 4 * i), word(6 + 4 * i), word(7 + 4 * i), word(8 + 4 * i)])
                    .collect();
                let part = ImmediatePart {
                    args,
                    operation,
                    bytes: v[4 * (5 + 4 * n)..].to_vec(),
                };
                self.store_part(slot, use_, from, part);
                true
            }
            Kind::Group => {
                let (context, slot, entry, use_) = (word(1), word(2), word(3), word(4));
                let (operation, size, n) = (word(5), word(6), word(7) as usize);
                let mut at = 4 * (8 + 6 * n);
                let members = (0..n)
                    .map(|i| {
                        let w = |k: usize| word(8 + 6 * i + k);
                        let bytes = w(5) as usize;
                        let data = v[at..at + bytes].to_vec();
                        at += bytes;
                        (w(0), [w(1), w(2), w(3), w(4)], data)
                    })
                    .collect();
                self.store_group((context, slot, entry, use_), operation, size, members);
                true
            }
            Kind::Final => {
                // Another relay ended first: kept for `end`.
                self.finals[from as usize] = Some(u64::from(word(1)) | (u64::from(word(2)) << 32));
                false
            }
        }
    }

    /// The world barrier across processes: once every local block arrived
    /// at the current generation, sends the count's arrival (its whole
    /// word), the key words and the staging bytes its blocks asked for
    /// ([`Pump::payload_ranges`]) to the other processes; once all of
    /// theirs came, writes their bytes where they were, ORs their keys in
    /// and adds their arrivals, as the last block to arrive would (it also
    /// clears generation `g + 3`, the words the next barriers reuse). True
    /// if it did either.
    fn advance_barrier(&mut self) -> bool {
        let g = self.generation;
        let mut moved = false;
        // Acquire pairs with the blocks' AcqRel arrivals: their key and
        // payload ORs and the staging bytes they wrote, all before, are
        // visible.
        let count = self.memory.arrivals(g).load(Ordering::Acquire);
        if !self.arrived && count as u32 == self.blocks {
            let mut words = vec![Kind::Barrier as u32, g, count as u32, (count >> 32) as u32];
            for i in 0..BARRIER_KEY_WORDS {
                // Relaxed: after the acquire above.
                let k = self.memory.key(g, i).load(Ordering::Relaxed);
                words.extend([k as u32, (k >> 32) as u32]);
            }
            // Relaxed: after the acquire above.
            let payload = BarrierPayload(self.memory.payloads(g).load(Ordering::Relaxed));
            let ranges = self.payload_ranges(payload);
            words.push(ranges.len() as u32);
            let mut bytes = Vec::new();
            for &(offset, len) in &ranges {
                words.extend([offset as u32, (offset as u64 >> 32) as u32, len as u32]);
                // SAFETY: a staging range of this process's ranks inside the
                // world memory, written before their arrivals (acquired
                // above) and not again before this generation completes.
                bytes.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(self.memory.base.add(offset), len)
                });
            }
            // MPI's counts are `int`s (docs/distributed.md, limits): so
            // are the ranges' lengths above, which this bounds.
            assert!(
                4 * words.len() + bytes.len() <= i32::MAX as usize,
                "a BARRIER of {} bytes of staging cells: over MPI's 2 GiB",
                bytes.len()
            );
            let me = self.me;
            for q in (0..self.processes).filter(|&q| q != me) {
                self.send(q, &words, &bytes);
            }
            self.arrived = true;
            moved = true;
        }
        let complete = self
            .remote
            .get(&g)
            .is_some_and(|r| r.processes == self.processes - 1);
        if self.arrived && complete {
            let remote = self.remote.remove(&g).expect("checked");
            for (offset, bytes) in &remote.bytes {
                // SAFETY: a staging range inside the world memory, at the
                // offset its writers used in their process. In this round
                // its writers are there alone (a process's own ranks' and
                // blocks' cells, or a scatter's root's every cell), so no
                // rank here writes it before the Release add below, after
                // which they read it; they read this staging half's
                // previous round before they arrived at this generation.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.memory.base.add(*offset), bytes.len())
                };
            }
            for (i, &k) in remote.keys.iter().enumerate() {
                // Relaxed: published by the Release add below.
                self.memory.key(g, i).fetch_or(k, Ordering::Relaxed);
            }
            let next = g.wrapping_add(3);
            // Relaxed: published by the Release add below, which the
            // blocks acquire before they arrive at generation `g + 3`.
            self.memory.arrivals(next).store(0, Ordering::Relaxed);
            self.memory.payloads(next).store(0, Ordering::Relaxed);
            for i in 0..BARRIER_KEY_WORDS {
                self.memory.key(next, i).store(0, Ordering::Relaxed);
            }
            // Release pairs with the waiting blocks' Acquire loads of the
            // count: the bytes and keys above are visible to them.
            self.memory.arrivals(g).fetch_add(remote.count, Ordering::Release);
            self.generation = g.wrapping_add(1);
            self.arrived = false;
            self.local.progressed();
            moved = true;
        }
        moved
    }

    /// The world memory ranges (offset, length) that `payload` names, as
    /// this process holds them: its blocks' cells, its ranks' cells (or
    /// every rank's, a scatter's root wrote them), the broadcast area, the
    /// reference rank's cell if it runs it; in the payload's staging
    /// half. Whole cells: the relay need not know their layout.
    fn payload_ranges(&self, payload: BarrierPayload) -> Vec<(usize, usize)> {
        let l = &self.memory.layout;
        let (cell, half) = (l.collective_bytes, payload.half());
        let mut ranges = Vec::new();
        if payload.has(BarrierPayload::BLOCK_CELLS) {
            let first = (half * l.blocks as usize + (self.me * self.blocks) as usize) * cell;
            ranges.push((l.block_scratch + first, self.blocks as usize * cell));
        }
        if payload.has(BarrierPayload::BROADCAST_AREA) {
            ranges.push((l.broadcast + half * cell, cell));
        }
        if payload.has(BarrierPayload::RANK_CELLS) {
            let n = self.relay.ranks_per_process as usize;
            let first = (half * l.ranks as usize + self.me as usize * n) * cell;
            ranges.push((l.rank_scratch + first, n * cell));
        }
        if payload.has(BarrierPayload::ALL_RANK_CELLS) {
            ranges.push((
                l.rank_scratch + half * l.ranks as usize * cell,
                l.ranks as usize * cell,
            ));
        }
        let reference = payload.reference();
        if payload.has(BarrierPayload::REFERENCE)
            && reference < l.ranks
            && self.process_of(reference) == self.me
        {
            ranges.push((
                l.rank_scratch + (half * l.ranks as usize + reference as usize) * cell,
                cell,
            ));
        }
        ranges
    }

    /// The non-blocking collectives of the world across processes
    /// (docs/distributed.md): each process's ranks climb an arrival tree
    /// of their own, whose top arriver folds them and stores the use in
    /// the slot's `handed` word; the relay sends that part to the other
    /// processes, and once every process's part of the use came it judges
    /// every rank's arguments (`immediate::judge`, as the top arriver of
    /// one process would), joins the parts in process order, which is
    /// rank order (a broadcast: the root's data; a reduction: the
    /// predefined operation, `immediate::fold_system`), and publishes the
    /// use as that arriver does. True if it did either.
    fn advance_immediate(&mut self) -> bool {
        let mut moved = false;
        let layout = self.memory.layout;
        let ranks = self.local.ranks();
        for slot in 0..IMMEDIATE_SLOTS {
            let record = layout.immediate_slot(slot);
            // Acquire pairs with the top arriver's Release store: its
            // process's arguments, operands and fold are visible.
            let handed = self
                .memory
                .word(record + offset_of!(SlotRecord, handed))
                .load(Ordering::Acquire);
            if handed != self.handed[slot as usize] {
                self.handed[slot as usize] = handed;
                // Relaxed: after the acquire above.
                let operation = self
                    .memory
                    .word(record + offset_of!(SlotRecord, operation))
                    .load(Ordering::Relaxed);
                let args: Vec<[u32; 4]> = ranks
                    .clone()
                    .map(|r| {
                        let at = layout.immediate_rank(slot, r);
                        // Relaxed: after the acquire above.
                        std::array::from_fn(|i| self.memory.word(at + 4 * i).load(Ordering::Relaxed))
                    })
                    .collect();
                let payload = layout.immediate_bytes - ARGS_BYTES;
                let first = args.first().copied().unwrap_or_default();
                let (kind, root) = (first[0] & 0xff, first[1] as i32 as i64);
                let local_root = kind == ImmediateKind::Broadcast as u32
                    && root >= i64::from(ranks.start)
                    && root < i64::from(ranks.end);
                let cell = if local_root {
                    layout.immediate_rank(slot, root as u32) + ARGS_BYTES
                } else {
                    record + IMMEDIATE_RECORD_BYTES
                };
                // SAFETY: `payload` bytes of the root's operand or of the
                // result cell, inside the world memory, which no rank
                // writes until this use is published (the ranks wait for
                // `done`; the next use's writers wait for their own ranks'
                // completion of this one).
                let bytes =
                    unsafe { std::slice::from_raw_parts(self.memory.base.add(cell), payload) }.to_vec();
                let mut words = vec![Kind::Immediate as u32, slot, handed, operation, args.len() as u32];
                words.extend(args.iter().flatten());
                let me = self.me;
                for q in (0..self.processes).filter(|&q| q != me) {
                    self.send(q, &words, &bytes);
                }
                self.store_part(
                    slot,
                    handed,
                    me,
                    ImmediatePart {
                        args,
                        operation,
                        bytes,
                    },
                );
                moved = true;
            }
            let key = (slot, self.handed[slot as usize]);
            if self
                .parts
                .get(&key)
                .is_some_and(|p| p.iter().all(Option::is_some))
            {
                let parts: Vec<ImmediatePart> = self
                    .parts
                    .remove(&key)
                    .expect("checked")
                    .into_iter()
                    .flatten()
                    .collect();
                self.publish_immediate(slot, key.1, &parts);
                self.local.progressed();
                moved = true;
            }
        }
        moved
    }

    /// Keeps `process`'s part of use `use_` of world slot `slot`.
    fn store_part(&mut self, slot: u32, use_: u32, process: u32, part: ImmediatePart) {
        let processes = self.processes as usize;
        let parts = self
            .parts
            .entry((slot, use_))
            .or_insert_with(|| (0..processes).map(|_| None).collect());
        parts[process as usize] = Some(part);
    }

    /// Publishes use `use_` of world slot `slot` from every process's part,
    /// as the world's top arriver does in one process (`immediate::publish`).
    fn publish_immediate(&self, slot: u32, use_: u32, parts: &[ImmediatePart]) {
        let layout = self.memory.layout;
        let record = layout.immediate_slot(slot);
        let args = parts.iter().flat_map(|p| p.args.iter()).map(|a| Args {
            kind_class: a[0],
            root: a[1] as i32,
            bytes: a[2],
            datatype: a[3],
        });
        let (mut verdict, reference) = judge(args);
        let bytes = reference.bytes as usize;
        let kind = reference.kind_class & 0xff;
        let folds = kind == ImmediateKind::Reduce as u32 || kind == ImmediateKind::AllReduce as u32;
        let result = if verdict == 0 && folds && parts[0].operation == 0 {
            // The program's own operation, which only the ranks can apply:
            // each other process's fold into its first rank's cell here (a
            // shadow's, which no rank here uses), and every rank joins them
            // in process order at its completion (`VERDICT_JOIN`).
            let n = self.relay.ranks_per_process;
            for (q, p) in parts.iter().enumerate().filter(|&(q, _)| q as u32 != self.me) {
                let cell = layout.immediate_rank(slot, q as u32 * n) + ARGS_BYTES;
                // SAFETY: `bytes` (at most the payload) into a shadow rank's
                // operand, inside the world memory, which no rank writes
                // and the ranks read only after `done` below.
                unsafe { std::ptr::copy_nonoverlapping(p.bytes.as_ptr(), self.memory.base.add(cell), bytes) };
            }
            // Even for no bytes: every rank's completion drops the operation
            // it kept.
            verdict = VERDICT_JOIN;
            None
        } else if verdict != 0 || bytes == 0 {
            None
        } else if kind == ImmediateKind::Broadcast as u32 {
            let owner = reference.root as u32 / self.relay.ranks_per_process;
            Some(parts[owner as usize].bytes[..bytes].to_vec())
        } else if folds {
            let mut acc = parts[0].bytes[..bytes].to_vec();
            let operation = parts[0].operation;
            for p in &parts[1..] {
                if !fold_system(operation, reference.datatype, &mut acc, &p.bytes[..bytes]) {
                    // The ranks checked the operation on their datatype at
                    // start; a process whose part cannot be joined is a
                    // library error, which every rank reports.
                    verdict = ErrorClass::Intern as u32;
                }
            }
            Some(acc)
        } else {
            None
        };
        self.publish_at(record, use_, verdict, &reference, result.as_deref());
    }

    /// A last arriver's end, at the slot record at `record` (a world
    /// slot's or a group's): the result into the cell after it when the
    /// verdict is clean, the verdict and the reference arguments, then
    /// `done` (Release), as `immediate::publish` does on the device.
    fn publish_at(&self, record: usize, use_: u32, verdict: u32, reference: &Args, result: Option<&[u8]>) {
        if let (Some(r), 0) = (result, verdict) {
            // SAFETY: the result cell (`immediate_bytes` long, `r` no
            // longer than its payload), which no rank reads before `done`
            // below and no other writer touches in this use.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    r.as_ptr(),
                    self.memory.base.add(record + IMMEDIATE_RECORD_BYTES),
                    r.len(),
                )
            };
        }
        let word = |field: usize| self.memory.word(record + field);
        // Relaxed: released by the store of `done` below.
        word(offset_of!(SlotRecord, verdict)).store(verdict, Ordering::Relaxed);
        let r = offset_of!(SlotRecord, reference);
        for (i, v) in [
            reference.kind_class,
            reference.root as u32,
            reference.bytes,
            reference.datatype,
        ]
        .into_iter()
        .enumerate()
        {
            // Relaxed, as above.
            word(r + 4 * i).store(v, Ordering::Relaxed);
        }
        // Release: pairs with the Acquire load of every rank's test, as the
        // last arriver's store in one process.
        word(offset_of!(SlotRecord, done)).store(done_word(use_, verdict), Ordering::Release);
    }

    /// The non-blocking collectives of communicators' groups that span
    /// processes (docs/distributed.md): the last of a process's members to
    /// start a use stores it in the group's `handed` word (and sets the
    /// context's `relayed` flag, so that only contexts with such groups
    /// are looked at, and there only the records of the groups with a
    /// member here, both slots: [`Pump::local_group_starts`]). The relay
    /// sends its members' arguments and operands (`GROUP`) to every other
    /// process with members of the group, and once it has every member's,
    /// publishes the use here ([`Pump::publish_group`]). True if it did
    /// either.
    fn advance_groups(&mut self) -> bool {
        let layout = self.memory.layout;
        if layout.immediate_comm_stride == 0 {
            return false;
        }
        let mut moved = false;
        for context in 1..=layout.communicators {
            // Acquire pairs with the Release store of the flag by a member
            // that passed the context's creation: its table is visible
            // (`local_group_starts`); the records are acquired below.
            let flag = self
                .memory
                .word(layout.immediate_comm_entry(context, 0, 0) + offset_of!(SlotRecord, relayed))
                .load(Ordering::Acquire);
            if flag == 0 {
                continue;
            }
            if !self.group_starts.contains_key(&context) {
                let starts = self.local_group_starts(context);
                self.group_starts.insert(context, starts);
            }
            for i in 0..self.group_starts[&context].len() {
                let entry = self.group_starts[&context][i];
                for slot in 0..IMMEDIATE_SLOTS {
                    let record = layout.immediate_comm_entry(context, slot, entry);
                    // Acquire pairs with the members' last arriver's Release
                    // store: every local member's cell is visible.
                    let handed = self
                        .memory
                        .word(record + offset_of!(SlotRecord, handed))
                        .load(Ordering::Acquire);
                    let seen = self.group_handed.entry((context, slot, entry)).or_insert(0);
                    if handed == *seen {
                        continue;
                    }
                    *seen = handed;
                    self.hand_group(context, slot, entry, handed);
                    moved = true;
                }
            }
        }
        let complete: Vec<GroupKey> = self
            .groups
            .iter()
            .filter(|(_, g)| g.members.iter().all(Option::is_some))
            .map(|(&k, _)| k)
            .collect();
        for key in complete {
            let g = self.groups.remove(&key).expect("listed");
            self.publish_group(key, g);
            self.local.progressed();
            moved = true;
        }
        moved
    }

    /// Word `field` of entry `entry` of context `context`'s table.
    fn table(&self, context: u32, entry: u32, field: usize) -> u32 {
        let at = self.memory.layout.comm_table(context)
            + entry as usize * std::mem::size_of::<CommEntry>()
            + field;
        // Relaxed: written by the creation before any member could start a
        // collective on the context (its closing exchange), which the
        // acquire of the context's `relayed` flag took.
        self.memory.word(at).load(Ordering::Relaxed)
    }

    /// World rank of entry `entry` of context `context`'s table.
    fn member(&self, context: u32, entry: u32) -> u32 {
        self.table(context, entry, offset_of!(CommEntry, member))
    }

    /// The first entries of the groups of `context` that have a member in
    /// this process: entry `i` holds world rank `m`, which is rank
    /// `inverse[m]` of its group, so its group starts at `i - inverse[m]`
    /// (entries past the context's members give starts whose records no
    /// group uses, whose `handed` stays 0). One pass over the table, once
    /// per context: a group is made once and never changes.
    fn local_group_starts(&self, context: u32) -> Vec<u32> {
        let ranks = self.local.ranks();
        let mut starts: Vec<u32> = (0..self.memory.layout.ranks)
            .filter_map(|i| {
                let m = self.member(context, i);
                if !ranks.contains(&m) {
                    return None;
                }
                i.checked_sub(self.table(context, m, offset_of!(CommEntry, inverse)))
            })
            .collect();
        starts.sort_unstable();
        starts.dedup();
        starts
    }

    /// Sends this process's members' part of use `use_` of the group whose
    /// record is at entry `entry` of slot `slot` of `context` to the other
    /// processes with members, and keeps it.
    fn hand_group(&mut self, context: u32, slot: u32, entry: u32, use_: u32) {
        let layout = self.memory.layout;
        let record = layout.immediate_comm_entry(context, slot, entry);
        // Relaxed: after the acquire of `handed`.
        let operation = self
            .memory
            .word(record + offset_of!(SlotRecord, operation))
            .load(Ordering::Relaxed);
        let size = self
            .memory
            .word(record + offset_of!(SlotRecord, group_size))
            .load(Ordering::Relaxed);
        let ranks = self.local.ranks();
        let capacity = layout.immediate_bytes - ARGS_BYTES;
        let mut words = vec![Kind::Group as u32, context, slot, entry, use_, operation, size, 0];
        let mut payload = Vec::new();
        let mut members = Vec::new();
        let mut others = Vec::new();
        for m in 0..size {
            let rank = self.member(context, entry + m);
            if !ranks.contains(&rank) {
                let q = self.process_of(rank);
                if !others.contains(&q) {
                    others.push(q);
                }
                continue;
            }
            let cell = layout.immediate_comm_entry(context, slot, entry + m)
                + IMMEDIATE_RECORD_BYTES
                + layout.immediate_bytes;
            // Relaxed: after the acquire of `handed`, which the member's
            // arrival (its cell written before) preceded.
            let args: [u32; 4] =
                std::array::from_fn(|i| self.memory.word(cell + 4 * i).load(Ordering::Relaxed));
            let (kind, class, root) = (args[0] & 0xff, args[0] >> 8, args[1] as i32);
            let carries = class == 0
                && match kind {
                    k if k == ImmediateKind::Broadcast as u32 => root == m as i32,
                    k => k == ImmediateKind::Reduce as u32 || k == ImmediateKind::AllReduce as u32,
                };
            let bytes = if carries {
                (args[2] as usize).min(capacity)
            } else {
                0
            };
            // SAFETY: `bytes` of the member's operand, inside its cell, which
            // it does not write again before this use is published.
            let data = unsafe { std::slice::from_raw_parts(self.memory.base.add(cell + ARGS_BYTES), bytes) }
                .to_vec();
            words.push(m);
            words.extend(args);
            words.push(bytes as u32);
            payload.extend_from_slice(&data);
            members.push((m, args, data));
        }
        words[7] = members.len() as u32;
        for q in others {
            self.send(q, &words, &payload);
        }
        self.store_group((context, slot, entry, use_), operation, size, members);
    }

    /// Keeps members' parts of a group's use (`size` members in all).
    fn store_group(
        &mut self,
        key: GroupKey,
        operation: u32,
        size: u32,
        members: Vec<(u32, [u32; 4], Vec<u8>)>,
    ) {
        let g = self.groups.entry(key).or_insert_with(|| GroupUse {
            operation,
            members: (0..size).map(|_| None).collect(),
        });
        for (m, args, data) in members {
            if let Some(cell) = g.members.get_mut(m as usize) {
                *cell = Some((args, data));
            }
        }
    }

    /// Publishes a group's use from every member's part, as the group's
    /// last arriver does in one process: judges the members' arguments in
    /// member order (`immediate::judge`), and when they agree, copies the
    /// root's data (a broadcast) or folds the operands in member order
    /// with the predefined operation (`immediate::fold_system`).
    fn publish_group(&mut self, (context, slot, entry, use_): GroupKey, g: GroupUse) {
        let members: Vec<([u32; 4], Vec<u8>)> = g.members.into_iter().flatten().collect();
        let (mut verdict, reference) = judge(members.iter().map(|(a, _)| Args {
            kind_class: a[0],
            root: a[1] as i32,
            bytes: a[2],
            datatype: a[3],
        }));
        let bytes = reference.bytes as usize;
        let kind = reference.kind_class & 0xff;
        let folds = kind == ImmediateKind::Reduce as u32 || kind == ImmediateKind::AllReduce as u32;
        let record = self.memory.layout.immediate_comm_entry(context, slot, entry);
        let result = if verdict == 0 && folds && g.operation == 0 {
            // The program's own operation: every member's operand, in
            // member order, into a buffer of this relay's, whose address
            // goes into the group's result cell; every member here joins
            // them at its completion (`VERDICT_JOIN`). Not the members'
            // cells: a member here may start the slot's next use, and write
            // its cell, before another has joined this one. The buffer
            // lives until the slot's next use is published here, when
            // every member here has started that use, so completed this.
            let parts: Box<[u8]> = members
                .iter()
                .flat_map(|(_, d)| d[..bytes].iter().copied())
                .collect();
            let address = parts.as_ptr() as u64;
            self.join_parts.insert((context, slot, entry), parts);
            // Relaxed: released by the store of `done` (`publish_at`).
            for (i, half) in [address as u32, (address >> 32) as u32].into_iter().enumerate() {
                self.memory
                    .word(record + IMMEDIATE_RECORD_BYTES + 4 * i)
                    .store(half, Ordering::Relaxed);
            }
            // Even for no bytes, as for the world's.
            verdict = VERDICT_JOIN;
            None
        } else if verdict != 0 || bytes == 0 {
            None
        } else if kind == ImmediateKind::Broadcast as u32 {
            members
                .get(reference.root as usize)
                .map(|(_, d)| d[..bytes.min(d.len())].to_vec())
        } else if folds {
            let mut acc = members[0].1.clone();
            for (_, d) in &members[1..] {
                if !fold_system(g.operation, reference.datatype, &mut acc, d) {
                    // As for the world's parts: every member checked its
                    // operation on its datatype at start.
                    verdict = ErrorClass::Intern as u32;
                }
            }
            Some(acc)
        } else {
            None
        };
        self.publish_at(record, use_, verdict, &reference, result.as_deref());
    }

    /// Takes shadow `dst`'s inbox and sends every message in it on.
    fn take_outgoing(&mut self, dst: u32) {
        // Acquire pairs with the senders' Release swaps: their headers and
        // payloads (and, through the release sequence, every earlier
        // pusher's) are visible.
        let mut next = self.memory.inbox(dst).swap(0, Ordering::Acquire);
        let mut chain = Vec::new();
        while next != LINK_NONE {
            let id = next - 1;
            chain.push(id);
            let link = self.memory.slot_word(id, offset_of!(SlotHeader, link));
            // Relaxed: the sender stores the link right after its push.
            next = loop {
                let l = link.load(Ordering::Relaxed);
                if l != LINK_PENDING {
                    break l;
                }
                std::hint::spin_loop();
            };
        }
        for &id in chain.iter().rev() {
            self.forward(id, dst);
        }
    }

    fn header(&self, id: u32, field: usize) -> u32 {
        // Relaxed: acquired with the inbox (see `take_outgoing`).
        self.memory.slot_word(id, field).load(Ordering::Relaxed)
    }

    /// Sends the message in local slot `id` for `dst`, or starts taking its
    /// chunks.
    fn forward(&mut self, id: u32, dst: u32) {
        let src = id / self.slots_per_rank;
        let kind_sequence = self.header(id, offset_of!(SlotHeader, kind_sequence));
        let words = [
            Kind::Data as u32,
            src,
            dst,
            id % self.slots_per_rank,
            self.header(id, offset_of!(SlotHeader, tag)),
            self.header(id, offset_of!(SlotHeader, context)),
            self.header(id, offset_of!(SlotHeader, datatype)),
            self.header(id, offset_of!(SlotHeader, bytes)),
            kind_sequence >> KIND_BITS,
            self.header(id, offset_of!(SlotHeader, signature)),
        ];
        let bytes = words[7] as usize;
        let kind_word = kind_of(kind_sequence);
        let kind = MessageKind::from_code(kind_word)
            .unwrap_or_else(|| panic!("slot {id} holds a message of unknown kind {kind_word}"));
        let payload = self.memory.payload(id);
        match kind {
            MessageKind::Eager if bytes <= 8 => {
                // A message of at most 8 bytes has them in its header's
                // head word (`engine::claim`).
                let head = self.memory.head(id).to_le_bytes();
                self.send(self.process_of(dst), &words, &head[..bytes]);
            }
            MessageKind::Eager => {
                // SAFETY: an eager message's `bytes` (at most a slot's
                // payload) are in the payload, acquired with the inbox.
                let data = unsafe { std::slice::from_raw_parts(payload, bytes) };
                self.send(self.process_of(dst), &words, data);
            }
            MessageKind::Direct => {
                // SAFETY: a direct message's head word is the address of
                // the sender's buffer, which holds `bytes` bytes and which
                // the sender keeps unwritten until it sees DONE.
                let data = unsafe {
                    let at = self.memory.head(id) as usize as *const u8;
                    std::slice::from_raw_parts(at, bytes)
                };
                self.send(self.process_of(dst), &words, data);
            }
            MessageKind::Stream => {
                let chunk = self.header(id, offset_of!(SlotHeader, chunk)) as usize;
                // SAFETY: the first chunk's `chunk` bytes are in the payload.
                let data = unsafe { std::slice::from_raw_parts(payload, chunk.min(bytes)) }.to_vec();
                self.streams.push(Stream { id, dst, words, data });
                self.advance_stream_at(self.streams.len() - 1, true);
            }
        }
        self.forwarded.insert(id, (kind, dst));
    }

    /// Takes the chunks that arrived; true if one did.
    fn advance_streams(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.streams.len() {
            let before = self.streams.len();
            moved |= self.advance_stream_at(i, false);
            if self.streams.len() == before {
                i += 1;
            }
        }
        moved
    }

    /// Advances stream `i`: after its first chunk (`first`), or when the
    /// sender stored the next. Sends it on once whole.
    fn advance_stream_at(&mut self, i: usize, first: bool) -> bool {
        let (id, dst) = (self.streams[i].id, self.streams[i].dst);
        let state = self.memory.state(id);
        if !first {
            // Acquire pairs with the sender's Release store of CHUNK.
            if state.load(Ordering::Acquire) != SlotState::Chunk.word(dst) {
                return false;
            }
            let n = self.header(id, offset_of!(SlotHeader, chunk)) as usize;
            let s = &mut self.streams[i];
            let n = n.min(s.words[7] as usize - s.data.len());
            // SAFETY: a CHUNK slot holds `chunk >= n` bytes in its payload.
            let chunk = unsafe { std::slice::from_raw_parts(self.memory.payload(id), n) };
            s.data.extend_from_slice(chunk);
        }
        let s = &self.streams[i];
        if s.data.len() < s.words[7] as usize {
            // Release pairs with the sender's Acquire wait for CTS: our
            // reads of the payload are done.
            state.store(SlotState::ClearToSend.word(dst), Ordering::Release);
        } else {
            let s = self.streams.swap_remove(i);
            self.send(self.process_of(dst), &s.words, &s.data);
        }
        self.local.progressed();
        true
    }

    /// `RETURN` of local slot `id`: hands it back as its receiver would.
    fn returned(&mut self, id: u32) {
        let (kind, dst) = self
            .forwarded
            .remove(&id)
            .unwrap_or_else(|| panic!("RETURN of slot {id}, which did not leave"));
        let state = self.memory.state(id);
        match kind {
            // Release pairs with the sender's Acquire wait for FREE (a
            // synchronous send) or its fence after a scan for free slots.
            MessageKind::Eager => state.store(SlotState::Free as u32, Ordering::Release),
            // Release pairs with the sender's Acquire wait for DONE.
            MessageKind::Direct | MessageKind::Stream => {
                state.store(SlotState::Done.word(dst), Ordering::Release)
            }
        }
        self.local.progressed();
    }

    /// Writes a `DATA` from process `from` into its sender's shadow slot
    /// and pushes it on the destination's inbox.
    fn inject(&mut self, from: u32, words: [u32; DATA_WORDS], data: &[u8]) {
        let [_, src, dst, k, tag, context, datatype, bytes, sequence, signature] = words;
        assert!(
            k < self.slots_per_rank && self.process_of(src) == from && self.process_of(dst) == self.me,
            "DATA from process {from} names slot {k} of rank {src} for rank {dst}"
        );
        let id = src * self.slots_per_rank + k;
        // Acquire pairs with the last receiver's Release store of FREE: its
        // reads of the slot are done before our writes.
        let now = self.memory.state(id).load(Ordering::Acquire);
        assert_eq!(
            now,
            SlotState::Free as u32,
            "shadow slot {id} of rank {src} is in use"
        );
        let eager = bytes <= self.slot_bytes;
        let mut buffer = None;
        let payload = self.memory.payload(id);
        // The head word, what a receive takes a message of at most 8 bytes
        // (and a direct one's address) from, as a sender stores it
        // (`engine::claim`).
        let head = if eager {
            // SAFETY: `bytes <= slot_bytes` into the free slot's payload.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), payload, data.len()) };
            let mut word = [0u8; 8];
            let n = data.len().min(8);
            word[..n].copy_from_slice(&data[..n]);
            u64::from_le_bytes(word)
        } else {
            let copy: Box<[u8]> = data.into();
            let at = copy.as_ptr() as u64;
            buffer = Some(copy);
            at
        };
        let (kind, chunk) = if eager {
            (MessageKind::Eager, bytes)
        } else {
            (MessageKind::Direct, 0)
        };
        let set = |field: usize, v: u32| self.memory.slot_word(id, field).store(v, Ordering::Relaxed);
        // Relaxed: published by the Release swap below, as a sender's.
        set(offset_of!(SlotHeader, link), LINK_PENDING);
        set(offset_of!(SlotHeader, tag), tag);
        set(offset_of!(SlotHeader, context), context);
        set(offset_of!(SlotHeader, datatype), datatype);
        set(offset_of!(SlotHeader, bytes), bytes);
        set(
            offset_of!(SlotHeader, kind_sequence),
            kind_sequence(kind, sequence),
        );
        set(offset_of!(SlotHeader, head_low), head as u32);
        set(offset_of!(SlotHeader, head_high), (head >> 32) as u32);
        set(offset_of!(SlotHeader, chunk), chunk);
        set(offset_of!(SlotHeader, signature), signature);
        self.memory
            .state(id)
            .store(SlotState::Queued.word(dst), Ordering::Relaxed);
        // Release pairs with the Acquire fence of the receiver's take in
        // its drain.
        let before = self.memory.inbox(dst).swap(id + 1, Ordering::Release);
        // Relaxed: the receiver waits while it reads LINK_PENDING.
        set(offset_of!(SlotHeader, link), before);
        self.injected.push(Injected {
            id,
            dst,
            from,
            buffer,
        });
        self.local.progressed();
    }

    /// Answers `RETURN` for every injected slot its receiver handed back.
    fn check_injected(&mut self) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < self.injected.len() {
            let inj = &self.injected[i];
            let state = self.memory.state(inj.id);
            // Acquire pairs with the receiver's Release store of FREE (its
            // deferred return) or DONE (its copy out of our buffer).
            let now = state.load(Ordering::Acquire);
            let back = match inj.buffer {
                None => now == SlotState::Free as u32,
                Some(_) => now == SlotState::Done.word(inj.dst),
            };
            if !back {
                i += 1;
                continue;
            }
            let inj = self.injected.swap_remove(i);
            if inj.buffer.is_some() {
                // Relaxed: only the relay takes its shadows' slots.
                state.store(SlotState::Free as u32, Ordering::Relaxed);
            }
            drop(inj.buffer);
            self.send(inj.from, &[Kind::Return as u32, inj.id], &[]);
            any = true;
        }
        any
    }

    /// After `END`: ends the local run as the verdict says, tells every
    /// other relay how many counted messages it sent it, and receives
    /// until it has every message sent to it and its own sends are done.
    fn end(mut self, verdict: Verdict) {
        match verdict {
            Verdict::Deadlock => {
                if matches!(self.local.state(), LocalState::Quiet(_)) {
                    self.local.end_deadlocked();
                }
            }
            Verdict::Failure => self.local.end_aborted(),
            Verdict::Finished => {}
        }
        if verdict != Verdict::Finished {
            // A rank of a run that ends early may still be joining from
            // these buffers: left allocated (once per launch that fails).
            std::mem::forget(std::mem::take(&mut self.join_parts));
        }
        let me = self.me;
        for q in (0..self.processes).filter(|&q| q != me) {
            let n = self.sent_to[q as usize];
            self.send(q, &[Kind::Final as u32, n as u32, (n >> 32) as u32], &[]);
        }
        let mut finals = std::mem::take(&mut self.finals);
        finals[self.me as usize] = Some(self.received_from[self.me as usize]);
        loop {
            while let Some(probed) = self.world.any_process().immediate_matched_probe_with_tag(TAG) {
                let (v, status) = probed.matched_receive_vec::<u8>();
                let from = status.source_rank() as usize;
                let word = |i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().expect("4 bytes"));
                match Kind::of(word(0)) {
                    Some(Kind::Final) => {
                        finals[from] = Some(u64::from(word(1)) | (u64::from(word(2)) << 32));
                    }
                    Some(k) if k.counted() => self.received_from[from] += 1,
                    _ => {}
                }
            }
            let sends_done = self.test_sends();
            let all_in = (0..self.processes as usize).all(|q| finals[q] == Some(self.received_from[q]));
            if sends_done && all_in {
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
