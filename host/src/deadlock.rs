//! What every rank of a stopped world was doing: [`DeadlockReport`] and
//! its parts, built from the world memory as bytes (the emulator's own
//! buffer, or a copy downloaded from the GPU) and its [`Layout`] by
//! [`DeadlockReport::from_world`].
//!
//! Below the errors (a [`DeadlockReport`] is part of `HostError::Deadlock`);
//! the public path of these types is [`crate::report`], which also decides
//! a launch's outcome (`report::check_world`).

use gpu_mpi_device::abi::layout::{Layout, WINDOW_LOCK, WINDOW_LOCK_EXCLUSIVE};
use gpu_mpi_device::abi::polling::{Call, WaitDisplay, STATE_EXITED, STATE_TIMED_OUT, STATE_WAITING};
use gpu_mpi_device::abi::records::{
    read_request_record, read_result_record, read_wait_record, SlotView, CONTEXT_SHIFT,
};
use gpu_mpi_device::error::ErrorClass;
use gpu_mpi_device::Error;
use std::collections::HashMap;
use std::fmt;

/// How many groups of ranks a report prints before "... and N more ranks".
const PRINTED_GROUPS: usize = 32;
/// How many entries each later section of a report prints before "... and N more".
const PRINTED_ENTRIES: usize = 8;

/// What one rank was doing when the world stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockedState {
    /// Waiting in an MPI operation (its wait record).
    Waiting {
        /// Operation code ([`Call`] as `u32`).
        operation: u32,
        /// Peer rank: destination, source or root; -1 any, -2 none.
        peer: i32,
        /// Tag; -1 any.
        tag: i32,
    },
    /// Its wait outlived the world's timeout; it aborted the world.
    TimedOut {
        /// Operation code.
        operation: u32,
        /// Peer rank.
        peer: i32,
        /// Tag.
        tag: i32,
    },
    /// It was waiting here when another rank aborted the world, and gave up.
    Aborted {
        /// Operation code.
        operation: u32,
        /// Peer rank.
        peer: i32,
        /// Tag.
        tag: i32,
    },
    /// Parked in its block's barrier (`__syncthreads`) outside any recorded
    /// MPI wait (emulator only: the GPU cannot tell).
    BlockBarrier,
    /// Parked in a warp collective (a shuffle, vote, match or
    /// `bar.warp.sync`), waiting for the other lanes of `mask` (emulator
    /// only).
    Warp {
        /// The operation.
        operation: gpu_mpi_device::abi::shim::WarpOp,
        /// The lanes it waits for (its `membermask`).
        mask: u32,
    },
    /// Neither waiting in MPI nor finished: polling shared memory outside the
    /// library (no wait record), or stopped before it attached to the world.
    Running,
    /// Its kernel function returned `Ok`.
    Exited,
    /// Its kernel function returned this error (its result record).
    Returned {
        /// The error.
        error: Error,
    },
}

impl BlockedState {
    /// The operation the rank waited in, if it waited in one.
    pub fn operation(&self) -> Option<Call> {
        match *self {
            BlockedState::Waiting { operation, .. }
            | BlockedState::TimedOut { operation, .. }
            | BlockedState::Aborted { operation, .. } => Call::from_code(operation),
            _ => None,
        }
    }

    /// Whether the rank had finished: its kernel function returned, `Ok`
    /// ([`BlockedState::Exited`]) or an error ([`BlockedState::Returned`]).
    pub fn is_exited(&self) -> bool {
        matches!(self, BlockedState::Exited | BlockedState::Returned { .. })
    }

    /// The error the rank's kernel function returned, if it returned one.
    pub fn returned(&self) -> Option<Error> {
        match *self {
            BlockedState::Returned { error } => Some(error),
            _ => None,
        }
    }

    /// The operation, peer and tag of the wait the rank was in, if any.
    fn wait(&self) -> Option<(Call, i32, i32)> {
        match *self {
            BlockedState::Waiting { peer, tag, .. }
            | BlockedState::TimedOut { peer, tag, .. }
            | BlockedState::Aborted { peer, tag, .. } => Some((self.operation()?, peer, tag)),
            _ => None,
        }
    }

    /// `(source, tag)` of the receive (or probe, or send-receive) the rank
    /// waited in, if it waited in one.
    pub fn receive(&self) -> Option<(i32, i32)> {
        match self.wait()? {
            (
                Call::Receive | Call::Probe | Call::SendReceive | Call::ImmediateProbe | Call::TestReceive,
                source,
                tag,
            ) => Some((source, tag)),
            _ => None,
        }
    }
}

impl fmt::Display for BlockedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wait = |operation, peer, tag| WaitDisplay { operation, peer, tag };
        match *self {
            BlockedState::Waiting { operation, peer, tag } => write!(f, "{}", wait(operation, peer, tag)),
            BlockedState::TimedOut { operation, peer, tag } => {
                write!(f, "timed out in {}", wait(operation, peer, tag))
            }
            BlockedState::Aborted { operation, peer, tag } => {
                write!(f, "gave up in {} (world aborted)", wait(operation, peer, tag))
            }
            BlockedState::BlockBarrier => f.write_str("block barrier"),
            BlockedState::Warp { operation, mask } => {
                write!(f, "warp collective {operation} (mask {mask:#010x})")
            }
            BlockedState::Running => f.write_str("running (polling outside any MPI wait)"),
            BlockedState::Exited => f.write_str("exited"),
            BlockedState::Returned { error } => write!(f, "returned {}", Returned(error)),
        }
    }
}

/// An error as a report names it: `MPI_ERR_BUFFER (4097 bytes exceed ...)`,
/// its class and then its detail in brackets.
struct Returned(Error);

impl fmt::Display for Returned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.0.class().mpi_name();
        let text = self.0.to_string();
        let detail = text
            .strip_prefix(name)
            .and_then(|t| t.strip_prefix(": "))
            .unwrap_or(&text);
        write!(f, "{name} ({detail})")
    }
}

/// One rank of a [`DeadlockReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedRank {
    /// The rank.
    pub rank: u32,
    /// What it was doing.
    pub state: BlockedState,
    /// The process that ran it: 0 but in a world across processes
    /// (docs/distributed.md).
    pub process: u32,
}

/// A message that was sent and never received: still in its sender's outbox
/// when the world stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnreceivedMessage {
    /// The sender.
    pub source: u32,
    /// The destination.
    pub dest: u32,
    /// The tag.
    pub tag: i32,
    /// Length in bytes.
    pub bytes: u32,
    /// Larger than a slot: its sender waits in the send until a receiver takes it.
    pub rendezvous: bool,
    /// A message of a collective that goes by messages (a
    /// sub-communicator's): the
    /// communicator's context id (0: the world), from the message's
    /// context word (`2 × id + 1`); its tag is then the algorithm's own.
    /// `None` for point-to-point.
    pub collective: Option<u32>,
}

impl fmt::Display for UnreceivedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} -> rank {} (", self.source, self.dest)?;
        match self.collective {
            None => write!(f, "tag {}", self.tag)?,
            Some(0) => f.write_str("a collective of the world")?,
            Some(id) => write!(f, "a collective of communicator {id}")?,
        }
        write!(f, ", {} bytes", self.bytes)?;
        if self.rendezvous {
            f.write_str(", rendezvous")?;
        }
        f.write_str(")")
    }
}

/// A pattern of a deadlock that the report recognises, printed as one
/// line of advice.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// A rank waits for a tag while the source sent it a message with another.
    TagMismatch {
        /// The waiting rank.
        rank: u32,
        /// The source it receives from (`ANY_SOURCE` for any).
        source: i32,
        /// The tag it waits for.
        wanted: i32,
        /// The rank that sent it a message.
        sender: u32,
        /// That message's tag.
        sent: i32,
    },
    /// Two ranks each wait in a send to the other, and neither receives.
    SendSend {
        /// The lower rank.
        first: u32,
        /// The higher rank.
        second: u32,
        /// Bytes of their messages, when both wait for a receiver because
        /// the messages are larger than a slot (otherwise their outboxes are full).
        rendezvous_bytes: Option<(u32, u32)>,
        /// Payload bytes of a slot.
        slot_bytes: u32,
    },
    /// Ranks returned `Ok` while others wait in a collective.
    ExitedBeforeCollective {
        /// The collective ([`Call`] as `u32`).
        operation: u32,
        /// The ranks waiting in it.
        waiting: Vec<u32>,
        /// The ranks that had exited.
        exited: Vec<u32>,
    },
    /// Ranks returned `Ok` while others wait for a message of a
    /// collective of a communicator whose collectives go by messages (a
    /// sub-communicator's): its
    /// blocking call's record names the communicator's collective context.
    ExitedBeforeCommunicatorCollective {
        /// The communicator's context id (0: the world).
        communicator: u32,
        /// The ranks waiting in one of its collectives.
        waiting: Vec<u32>,
        /// The ranks that had exited, members of the communicator or not
        /// (the report reads no communicator's members).
        exited: Vec<u32>,
    },
    /// A rank waits for a message from a rank that exited with no message
    /// left for it (it sent none, or an earlier receive took them all).
    SourceExited {
        /// The waiting rank.
        rank: u32,
        /// The source, which exited.
        source: u32,
        /// The class of the error the source returned, if it returned one.
        returned: Option<ErrorClass>,
    },
    /// Ranks returned an error while others still wait: the error, not
    /// the order of the calls, left them waiting (one hint per class).
    ReturnedError {
        /// The class the ranks returned.
        class: ErrorClass,
        /// The ranks that returned it.
        ranks: Vec<u32>,
        /// The ranks still waiting (and not named by a
        /// [`Hint::SourceExited`]).
        waiting: Vec<u32>,
        /// The operation they all wait in, when it is one ([`Call`] as `u32`).
        operation: Option<u32>,
    },
    /// A rank waits for a message from any source, no message is left
    /// for it, and every other rank has exited.
    AnySourceExited {
        /// The waiting rank.
        rank: u32,
    },
    /// A rank waits for a lock of a window's target that another holds
    /// (the target's lock word, read from the world memory).
    LockHeld {
        /// The waiting rank.
        rank: u32,
        /// The target (world rank) whose lock it wants.
        target: u32,
        /// The window id.
        window: u32,
        /// Who holds it.
        holder: LockHolder,
    },
}

/// Who holds a window's lock, as its lock word says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockHolder {
    /// Held exclusively by this world rank, and whether it has exited.
    Exclusive {
        /// The holder.
        rank: u32,
        /// Whether its kernel function returned (it will never unlock).
        exited: bool,
    },
    /// Held shared by this many ranks.
    Shared(u32),
}

/// A list of ranks (ascending) printed as ranges (`ranks 0-1, 3-7`), at
/// most [`PRINTED_ENTRIES`] ranges before "... and N more".
pub(crate) struct Ranks<'a>(pub(crate) &'a [u32]);

impl fmt::Display for Ranks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &r in self.0 {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == r => *last = r,
                _ => runs.push((r, r)),
            }
        }
        f.write_str(if self.0.len() == 1 { "rank " } else { "ranks " })?;
        for (i, (a, b)) in runs.iter().take(PRINTED_ENTRIES).enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            if a == b {
                write!(f, "{sep}{a}")?;
            } else {
                write!(f, "{sep}{a}-{b}")?;
            }
        }
        if runs.len() > PRINTED_ENTRIES {
            let more: u32 = runs[PRINTED_ENTRIES..].iter().map(|(a, b)| b - a + 1).sum();
            write!(f, " and {more} more")?;
        }
        Ok(())
    }
}

fn operation_name(code: u32) -> &'static str {
    match Call::from_code(code) {
        Some(Call::Barrier) => "barrier",
        Some(Call::Broadcast) => "broadcast",
        Some(Call::Reduce) => "reduce",
        Some(Call::AllReduce) => "all_reduce",
        Some(Call::Gather) => "gather",
        Some(Call::Scatter) => "scatter",
        Some(Call::AllGather) => "all_gather",
        Some(Call::AllToAll) => "all_to_all",
        Some(Call::ReduceScatter) => "reduce_scatter",
        Some(Call::Scan) => "scan",
        Some(Call::Send) => "send",
        Some(Call::Receive) => "receive",
        Some(Call::Probe) => "probe",
        Some(Call::SendReceive) => "send_receive",
        Some(Call::ImmediateProbe) => "immediate_probe",
        Some(Call::TestSend)
        | Some(Call::TestReceive)
        | Some(Call::TestMany)
        | Some(Call::TestCollective) => "test",
        Some(Call::WaitMany) => "wait",
        Some(Call::WinLock) => "window lock",
        Some(Call::WinNotify) => "window notification wait",
        Some(Call::WinStart) => "window start",
        Some(Call::WinPost) => "window post",
        Some(Call::WinWait) => "window wait",
        Some(Call::WinFence) => "window fence",
        Some(Call::WinCreate) => "window creation",
        Some(Call::WinFree) => "window free",
        _ => "an unknown operation",
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hint::TagMismatch {
                rank,
                source,
                wanted,
                sender,
                sent,
            } => {
                if *source == gpu_mpi_device::ANY_SOURCE {
                    write!(
                        f,
                        "rank {rank} waits for a message from any rank with tag {wanted}"
                    )?;
                } else {
                    write!(
                        f,
                        "rank {rank} waits for a message from rank {source} with tag {wanted}"
                    )?;
                }
                write!(
                    f,
                    ", but rank {sender} sent it one with tag {sent}: check the tags"
                )
            }
            Hint::SendSend {
                first,
                second,
                rendezvous_bytes,
                slot_bytes,
            } => {
                write!(f, "ranks {first} and {second} both send to each other first")?;
                match rendezvous_bytes {
                    Some((a, b)) if a == b => write!(
                        f,
                        ", with messages too large to buffer ({a} bytes each; a slot holds {slot_bytes})"
                    )?,
                    Some((a, b)) => write!(
                        f,
                        ", with messages too large to buffer ({a} and {b} bytes; a slot holds {slot_bytes})"
                    )?,
                    None => f.write_str(", and their outboxes are full")?,
                }
                f.write_str(": use send_receive, or order the calls so that one of them receives first")
            }
            Hint::ExitedBeforeCollective {
                operation,
                waiting,
                exited,
            } => write!(
                f,
                "{} exited while {} {} in {}: every rank must call the same collectives",
                Ranks(exited),
                Ranks(waiting),
                if waiting.len() == 1 { "waits" } else { "wait" },
                operation_name(*operation)
            ),
            Hint::ExitedBeforeCommunicatorCollective {
                communicator,
                waiting,
                exited,
            } => {
                write!(
                    f,
                    "{} {} for the messages of a collective of ",
                    Ranks(waiting),
                    if waiting.len() == 1 { "waits" } else { "wait" },
                )?;
                match communicator {
                    0 => f.write_str("the world")?,
                    id => write!(f, "communicator {id}")?,
                }
                write!(
                    f,
                    " while {} exited: every rank of a communicator must call the same collectives",
                    Ranks(exited)
                )
            }
            Hint::SourceExited {
                rank,
                source,
                returned: None,
            } => write!(
                f,
                "rank {rank} waits for a message from rank {source}, which exited with no message left for it (none sent, or all received already)"
            ),
            Hint::SourceExited {
                rank,
                source,
                returned: Some(class),
            } => write!(
                f,
                "rank {rank} waits for a message from rank {source}, which returned {} with no message left for it: the error left it waiting",
                class.mpi_name()
            ),
            Hint::ReturnedError {
                class,
                ranks,
                waiting,
                operation,
            } => {
                let one = waiting.len() == 1;
                write!(
                    f,
                    "{} returned {} while {} {}",
                    Ranks(ranks),
                    class.mpi_name(),
                    Ranks(waiting),
                    if one { "waits" } else { "wait" }
                )?;
                if let Some(op) = operation {
                    write!(f, " in {}", operation_name(*op))?;
                }
                write!(f, ": the error left {} waiting", if one { "it" } else { "them" })
            }
            Hint::AnySourceExited { rank } => write!(
                f,
                "rank {rank} waits for a message from any source, and every other rank has exited with no message left for it"
            ),
            Hint::LockHeld {
                rank,
                target,
                window,
                holder,
            } => {
                write!(f, "rank {rank} waits for the lock of rank {target}'s window {window}, ")?;
                match holder {
                    LockHolder::Exclusive { rank: h, exited: true } => {
                        write!(f, "which rank {h} holds exclusively and returned without unlocking")
                    }
                    LockHolder::Exclusive { rank: h, exited: false } => {
                        write!(f, "which rank {h} holds exclusively")
                    }
                    LockHolder::Shared(n) => write!(f, "which {n} ranks hold shared"),
                }
            }
        }
    }
}

/// What every rank of a deadlocked world was doing, in rank order, what
/// was left undelivered, and advice.
///
/// The first line reads `deadlock: rank 3: receive(source 5, tag 7); rank 5:
/// barrier; rank 6: exited`: ranks that had not finished first, then the
/// ones that had exited (a rank that returned while others wait for it is
/// often the cause); runs of consecutive ranks in the same state print as one
/// range (`ranks 8-4095: exited`), and at most 32 such groups print before
/// `... and N more ranks`. Lines follow, each only when it has entries:
///
/// ```text
/// unreceived messages: rank 0 -> rank 1 (tag 8, 4 bytes)
/// waiting receives: rank 1: receive(source 0, tag 7)
/// hint: rank 1 waits for a message from rank 0 with tag 7, but rank 0 sent it one with tag 8: check the tags
/// ```
///
/// Each of these prints at most 8 entries before `... and N more`; the
/// fields keep them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadlockReport {
    /// Every rank of the world, in rank order.
    pub ranks: Vec<BlockedRank>,
    /// Messages sent and never received, by sender, then in the order sent.
    pub unreceived: Vec<UnreceivedMessage>,
    /// The patterns recognised, with advice.
    pub hints: Vec<Hint>,
}

/// The communicator (context id) whose collective `r` waits in when it
/// waits for a message of one: a blocking send, receive or send-receive
/// whose record holds a collective's context word (`2 × id + 1`, in the
/// high bits of its `mode`). The general algorithms' exchanges are such
/// calls; a point-to-point call's context word is even.
fn collective_of(memory: &[u8], layout: &Layout, r: &BlockedRank) -> Option<u32> {
    let BlockedState::Waiting { operation, .. } = r.state else {
        return None;
    };
    let records = match Call::from_code(operation)? {
        Call::Send | Call::Receive => 1,
        Call::SendReceive => 2,
        _ => return None,
    };
    (0..records).find_map(|index| {
        let record = read_request_record(memory, layout, r.rank, index);
        if record.state == 0 {
            return None;
        }
        communicator_of_collective(record.mode >> CONTEXT_SHIFT)
    })
}

/// The communicator (context id) of a collective context word (`2 × id +
/// 1`); `None` for a point-to-point one (`2 × id`).
fn communicator_of_collective(context: u32) -> Option<u32> {
    (context % 2 == 1).then_some(context / 2)
}

/// The wait record of `rank`: state, operation, peer and tag.
pub(crate) fn record_words(memory: &[u8], layout: &Layout, rank: u32) -> [u32; 4] {
    let r = read_wait_record(memory, layout, rank);
    [r.state, r.operation, r.peer as u32, r.tag as u32]
}

/// The result record of `rank`.
pub(crate) fn result_words(memory: &[u8], layout: &Layout, rank: u32) -> [u32; 5] {
    read_result_record(memory, layout, rank).words
}

impl DeadlockReport {
    /// Builds the report from a world's wait and result records.
    /// `in_block_barrier(rank)` says whether the rank is parked in its
    /// block's barrier (the emulator knows; pass `|_| false` otherwise).
    ///
    /// # Panics
    /// If `memory` is shorter than `layout.total`.
    pub fn from_world(memory: &[u8], layout: &Layout, in_block_barrier: impl Fn(u32) -> bool) -> Self {
        Self::from_world_parked(memory, layout, |r| {
            in_block_barrier(r).then_some(BlockedState::BlockBarrier)
        })
    }

    /// As [`from_world`](Self::from_world), with `parked(rank)` saying
    /// where the scheduler holds a rank outside any MPI wait
    /// ([`BlockedState::BlockBarrier`] or [`BlockedState::Warp`]), if it
    /// does.
    ///
    /// # Panics
    /// If `memory` is shorter than `layout.total`.
    pub fn from_world_parked(
        memory: &[u8],
        layout: &Layout,
        parked: impl Fn(u32) -> Option<BlockedState>,
    ) -> Self {
        assert!(
            memory.len() >= layout.total,
            "world memory shorter than its layout"
        );
        let ranks = (0..layout.ranks)
            .map(|rank| {
                let [state, operation, peer, tag] = record_words(memory, layout, rank);
                let (peer, tag) = (peer as i32, tag as i32);
                let result = result_words(memory, layout, rank);
                let held = parked(rank);
                let state = match state {
                    // `rank_main` marks the record exited after the timed-out
                    // wait returned; the result record still says what timed out.
                    _ if result[0] == ErrorClass::Timeout as u32 => BlockedState::TimedOut {
                        operation: result[1],
                        peer: result[2] as i32,
                        tag: result[3] as i32,
                    },
                    STATE_TIMED_OUT => BlockedState::TimedOut { operation, peer, tag },
                    STATE_WAITING => BlockedState::Waiting { operation, peer, tag },
                    _ if held.is_some() => held.unwrap_or(BlockedState::Running),
                    STATE_EXITED => {
                        if result[0] == ErrorClass::Aborted as u32 && operation != 0 {
                            BlockedState::Aborted { operation, peer, tag }
                        } else if result[0] == ErrorClass::Success as u32 {
                            BlockedState::Exited
                        } else {
                            // An unknown class is a world of another version.
                            BlockedState::Returned {
                                error: Error::from_words(result).unwrap_or(Error::Intern),
                            }
                        }
                    }
                    _ => BlockedState::Running,
                };
                BlockedRank {
                    rank,
                    state,
                    process: 0,
                }
            })
            .collect();
        let unreceived = unreceived_messages(memory, layout);
        let mut report = DeadlockReport {
            ranks,
            unreceived,
            hints: Vec::new(),
        };
        let in_collectives: HashMap<u32, u32> = report
            .ranks
            .iter()
            .filter_map(|r| Some((r.rank, collective_of(memory, layout, r)?)))
            .collect();
        report.hints = report.recognise(layout.slot_bytes, &in_collectives);
        let locks = report.lock_hints(memory, layout);
        report.hints.extend(locks);
        report
    }

    /// A [`Hint::LockHeld`] for every rank waiting for a window's lock that
    /// its lock word says is held.
    fn lock_hints(&self, memory: &[u8], layout: &Layout) -> Vec<Hint> {
        let mut hints = Vec::new();
        for r in &self.ranks {
            let Some((Call::WinLock, target, window)) = r.state.wait() else {
                continue;
            };
            if target < 0
                || target as u32 >= layout.ranks
                || window < 0
                || window as u32 >= layout.window_count
            {
                continue;
            }
            let (target, window) = (target as u32, window as u32);
            let at = layout.window_entry(window, target) + WINDOW_LOCK;
            let word = u32::from_le_bytes(memory[at..at + 4].try_into().expect("four bytes"));
            let holder = if word & WINDOW_LOCK_EXCLUSIVE != 0 {
                let h = (word & !WINDOW_LOCK_EXCLUSIVE).wrapping_sub(1);
                LockHolder::Exclusive {
                    rank: h,
                    exited: self.state_of(h).is_some_and(|s| s.is_exited()),
                }
            } else if word != 0 {
                LockHolder::Shared(word)
            } else {
                continue;
            };
            hints.push(Hint::LockHeld {
                rank: r.rank,
                target,
                window,
                holder,
            });
        }
        hints
    }

    /// The ranks that waited in a receive (or probe, or send-receive) that
    /// nothing matched.
    pub fn waiting_receives(&self) -> impl Iterator<Item = &BlockedRank> {
        self.ranks.iter().filter(|r| r.state.receive().is_some())
    }

    /// The hints for the patterns this report shows.
    fn recognise(&self, slot_bytes: u32, in_collectives: &HashMap<u32, u32>) -> Vec<Hint> {
        let mut hints = Vec::new();
        // Indexed by destination, so that huge worlds stay linear.
        let mut to: HashMap<u32, Vec<&UnreceivedMessage>> = HashMap::new();
        for m in &self.unreceived {
            to.entry(m.dest).or_default().push(m);
        }
        for r in &self.ranks {
            let Some((source, wanted)) = r.state.receive() else {
                continue;
            };
            if in_collectives.contains_key(&r.rank) {
                // A collective's message: the hint below names the
                // collective instead of its messages.
                continue;
            }
            let from_source =
                |m: &&&UnreceivedMessage| source == gpu_mpi_device::ANY_SOURCE || m.source as i32 == source;
            let mut sent = to.get(&r.rank).into_iter().flatten().filter(from_source);
            if let Some(m) = sent.clone().next() {
                let any_tag = gpu_mpi_device::ANY_TAG;
                if wanted != any_tag && sent.all(|m| m.tag != wanted) {
                    hints.push(Hint::TagMismatch {
                        rank: r.rank,
                        source,
                        wanted,
                        sender: m.source,
                        sent: m.tag,
                    });
                }
            } else if let Some(s) = (source >= 0)
                .then(|| self.state_of(source as u32))
                .flatten()
                .filter(BlockedState::is_exited)
            {
                hints.push(Hint::SourceExited {
                    rank: r.rank,
                    source: source as u32,
                    returned: s.returned().map(|e| e.class()),
                });
            } else if source == gpu_mpi_device::ANY_SOURCE
                && self.ranks.iter().all(|o| o.rank == r.rank || o.state.is_exited())
            {
                hints.push(Hint::AnySourceExited { rank: r.rank });
            }
        }
        for r in &self.ranks {
            let Some((Call::Send, peer, _)) = r.state.wait() else {
                continue;
            };
            let first = r.rank;
            if peer <= first as i32 {
                continue;
            }
            let second = peer as u32;
            if !matches!(self.state_of(second).and_then(|s| s.wait()), Some((Call::Send, p, _)) if p == first as i32)
            {
                continue;
            }
            let rendezvous = |from: u32, dest: u32| {
                to.get(&dest)?
                    .iter()
                    .find(|m| m.source == from && m.rendezvous)
                    .map(|m| m.bytes)
            };
            hints.push(Hint::SendSend {
                first,
                second,
                rendezvous_bytes: rendezvous(first, second).zip(rendezvous(second, first)),
                slot_bytes,
            });
        }
        // Ranks that returned `Ok`; those that returned an error get a hint
        // of their own below, which blames the error.
        let exited: Vec<u32> = self
            .ranks
            .iter()
            .filter(|r| r.state == BlockedState::Exited)
            .map(|r| r.rank)
            .collect();
        let collective = self.ranks.iter().find_map(|r| match r.state.wait() {
            Some((
                op @ (Call::Barrier
                | Call::Broadcast
                | Call::Reduce
                | Call::AllReduce
                | Call::Gather
                | Call::Scatter
                | Call::AllGather
                | Call::AllToAll
                | Call::ReduceScatter
                | Call::Scan),
                ..,
            )) => Some(op),
            _ => None,
        });
        if let (Some(op), false) = (collective, exited.is_empty()) {
            let waiting = self
                .ranks
                .iter()
                .filter(|r| r.state.operation() == Some(op))
                .map(|r| r.rank)
                .collect();
            hints.push(Hint::ExitedBeforeCollective {
                operation: op as u32,
                waiting,
                exited: exited.clone(),
            });
        }
        if !exited.is_empty() {
            let mut communicators: Vec<u32> = in_collectives.values().copied().collect();
            communicators.sort_unstable();
            communicators.dedup();
            for communicator in communicators {
                let waiting = self
                    .ranks
                    .iter()
                    .filter(|r| in_collectives.get(&r.rank) == Some(&communicator))
                    .map(|r| r.rank)
                    .collect();
                hints.push(Hint::ExitedBeforeCommunicatorCollective {
                    communicator,
                    waiting,
                    exited: exited.clone(),
                });
            }
        }
        hints.extend(self.returned_errors(&hints));
        hints
    }

    /// One [`Hint::ReturnedError`] per class that ranks returned while
    /// others wait, naming the waiting ranks that `earlier` (a
    /// [`Hint::SourceExited`]) has not explained already.
    fn returned_errors(&self, earlier: &[Hint]) -> Vec<Hint> {
        let explained: std::collections::HashSet<u32> = earlier
            .iter()
            .filter_map(|h| match h {
                Hint::SourceExited { rank, .. } => Some(*rank),
                _ => None,
            })
            .collect();
        let waiting: Vec<&BlockedRank> = self
            .ranks
            .iter()
            .filter(|r| r.state.wait().is_some() && !explained.contains(&r.rank))
            .collect();
        if waiting.is_empty() {
            return Vec::new();
        }
        let first = waiting[0].state.operation();
        let operation = first
            .filter(|_| waiting.iter().all(|r| r.state.operation() == first))
            .map(|op| op as u32);
        let waiting: Vec<u32> = waiting.iter().map(|r| r.rank).collect();
        let mut by_class: Vec<(ErrorClass, Vec<u32>)> = Vec::new();
        for r in &self.ranks {
            let Some(e) = r.state.returned() else { continue };
            match by_class.iter_mut().find(|(c, _)| *c == e.class()) {
                Some((_, ranks)) => ranks.push(r.rank),
                None => by_class.push((e.class(), vec![r.rank])),
            }
        }
        by_class
            .into_iter()
            .map(|(class, ranks)| Hint::ReturnedError {
                class,
                ranks,
                waiting: waiting.clone(),
                operation,
            })
            .collect()
    }

    /// The ranks that had not exited.
    pub fn blocked(&self) -> impl Iterator<Item = &BlockedRank> {
        self.ranks.iter().filter(|r| !r.state.is_exited())
    }

    /// The state of `rank`, if it is in the report.
    pub fn state_of(&self, rank: u32) -> Option<BlockedState> {
        // Ranks are stored in rank order, usually all of them.
        match self.ranks.get(rank as usize) {
            Some(r) if r.rank == rank => Some(r.state),
            _ => self.ranks.iter().find(|r| r.rank == rank).map(|r| r.state),
        }
    }
}

/// The messages still waiting in the outboxes for a receiver, by sender,
/// then in the order sent.
fn unreceived_messages(memory: &[u8], layout: &Layout) -> Vec<UnreceivedMessage> {
    let mut out = Vec::new();
    for source in 0..layout.ranks {
        let mut sent: Vec<(u32, UnreceivedMessage)> = (0..layout.slots_per_rank)
            .map(|slot| SlotView::read(memory, layout, source, slot))
            .filter(SlotView::is_unreceived)
            .map(|v| {
                let m = UnreceivedMessage {
                    source,
                    dest: v.dest(),
                    tag: v.header.tag,
                    bytes: v.header.bytes,
                    rendezvous: v.is_rendezvous(),
                    collective: communicator_of_collective(v.header.context),
                };
                (v.header.order(), m)
            })
            .collect();
        // Sequence numbers of messages in flight are close together; the
        // wrapping distance from the first orders them across a wrap.
        if let Some(&(base, _)) = sent.iter().min_by_key(|(s, _)| *s) {
            sent.sort_by_key(|(s, _)| s.wrapping_sub(base));
        }
        out.extend(sent.into_iter().map(|(_, m)| m));
    }
    out
}

/// Writes at most [`PRINTED_ENTRIES`] entries of `items` after `title`,
/// then "... and N more".
fn section<T: fmt::Display>(f: &mut fmt::Formatter<'_>, title: &str, items: &[T]) -> fmt::Result {
    if items.is_empty() {
        return Ok(());
    }
    write!(f, "\n{title}: ")?;
    for (i, item) in items.iter().take(PRINTED_ENTRIES).enumerate() {
        let sep = if i == 0 { "" } else { "; " };
        write!(f, "{sep}{item}")?;
    }
    if items.len() > PRINTED_ENTRIES {
        write!(f, "; ... and {} more", items.len() - PRINTED_ENTRIES)?;
    }
    Ok(())
}

/// One group of consecutive ranks in one state, as printed.
struct Group(u32, u32, BlockedState);

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Group(first, last, state) = self;
        if first == last {
            write!(f, "rank {first}: {state}")
        } else {
            write!(f, "ranks {first}-{last}: {state}")
        }
    }
}

/// Consecutive ranks in one state.
fn groups<'a>(ranks: impl Iterator<Item = &'a BlockedRank>) -> Vec<(u32, u32, BlockedState)> {
    let mut out: Vec<(u32, u32, BlockedState)> = Vec::new();
    for r in ranks {
        match out.last_mut() {
            Some((_, last, state)) if *last + 1 == r.rank && *state == r.state => *last = r.rank,
            _ => out.push((r.rank, r.rank, r.state)),
        }
    }
    out
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Ranks that spin on a non-blocking call that can never succeed run
        // but cannot progress: the world is live-locked rather than dead.
        let spinning = self
            .ranks
            .iter()
            .any(|r| matches!(r.state, BlockedState::Waiting { operation, .. } if Call::from_code(operation).is_some_and(Call::is_spin)));
        f.write_str(if spinning { "livelock" } else { "deadlock" })?;
        let mut all = groups(self.ranks.iter().filter(|r| !r.state.is_exited()));
        all.extend(groups(self.ranks.iter().filter(|r| r.state.is_exited())));
        for (i, (first, last, state)) in all.iter().take(PRINTED_GROUPS).enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{}", Group(*first, *last, *state))?;
        }
        if all.len() > PRINTED_GROUPS {
            let more: u32 = all[PRINTED_GROUPS..].iter().map(|(a, b, _)| b - a + 1).sum();
            write!(f, "; ... and {more} more ranks")?;
        }
        if self.ranks.iter().any(|r| r.process != 0) {
            // Each process runs a contiguous range of ranks.
            f.write_str("\nprocesses: ")?;
            let mut first = 0;
            for (i, r) in self.ranks.iter().enumerate() {
                let last = self.ranks.get(i + 1).is_none_or(|n| n.process != r.process);
                if last {
                    let sep = if first == 0 { "" } else { ", " };
                    write!(
                        f,
                        "{sep}{} runs ranks {}-{}",
                        r.process, self.ranks[first].rank, r.rank
                    )?;
                    first = i + 1;
                }
            }
        }
        section(f, "unreceived messages", &self.unreceived)?;
        let receives: Vec<Group> = groups(self.waiting_receives())
            .into_iter()
            .map(|(a, b, state)| Group(a, b, state))
            .collect();
        section(f, "waiting receives", &receives)?;
        for hint in self.hints.iter().take(PRINTED_ENTRIES) {
            write!(f, "\nhint: {hint}")?;
        }
        if self.hints.len() > PRINTED_ENTRIES {
            write!(f, "\n... and {} more hints", self.hints.len() - PRINTED_ENTRIES)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gpu_mpi_device::abi::WorldConfig;

    /// A world of `ranks` ranks with its header written.
    pub(crate) fn world(ranks: u32) -> (Vec<u8>, Layout) {
        let c = WorldConfig::new(ranks, 1);
        let l = c.layout().unwrap();
        let mut m = vec![0u8; l.total];
        c.write_header(&mut m).unwrap();
        (m, l)
    }

    /// Writes `words` at byte `off` of `m`.
    pub(crate) fn put(m: &mut [u8], off: usize, words: &[u32]) {
        for (i, w) in words.iter().enumerate() {
            m[off + 4 * i..off + 4 * i + 4].copy_from_slice(&w.to_ne_bytes());
        }
    }

    #[test]
    fn report_reads_like_the_spec() {
        let (mut m, l) = world(7);
        for r in 0..7 {
            put(&mut m, l.record(r), &[STATE_EXITED]);
        }
        put(&mut m, l.record(3), &[STATE_WAITING, Call::Receive as u32, 5, 7]);
        put(
            &mut m,
            l.record(5),
            &[STATE_WAITING, Call::Barrier as u32, -2i32 as u32, -1i32 as u32],
        );
        let rep = DeadlockReport::from_world(&m, &l, |_| false);
        assert_eq!(rep.ranks.len(), 7);
        assert_eq!(
            rep.to_string(),
            "deadlock: rank 3: receive(source 5, tag 7); rank 5: barrier; ranks 0-2: exited; \
             rank 4: exited; rank 6: exited\n\
             waiting receives: rank 3: receive(source 5, tag 7)\n\
             hint: ranks 0-2, 4, 6 exited while rank 5 waits in barrier: every rank must call the same collectives"
        );
        assert_eq!(rep.state_of(3).unwrap().operation(), Some(Call::Receive));
        assert_eq!(rep.blocked().count(), 2);
    }

    #[test]
    fn a_rank_that_returned_an_error_is_named_with_it_and_blamed() {
        let (mut m, l) = world(4);
        put(&mut m, l.record(0), &[STATE_WAITING, Call::Receive as u32, 1, 7]);
        put(&mut m, l.record(1), &[STATE_EXITED]);
        let error = Error::BufferTooLarge { bytes: 10, limit: 8 };
        put(&mut m, l.result(1), &error.to_words());
        put(
            &mut m,
            l.record(2),
            &[STATE_WAITING, Call::Barrier as u32, -2i32 as u32, -1i32 as u32],
        );
        put(&mut m, l.record(3), &[STATE_EXITED]);
        let rep = DeadlockReport::from_world(&m, &l, |_| false);
        assert_eq!(rep.state_of(1), Some(BlockedState::Returned { error }));
        assert_eq!(rep.state_of(3), Some(BlockedState::Exited));
        assert_eq!(
            rep.hints,
            vec![
                Hint::SourceExited {
                    rank: 0,
                    source: 1,
                    returned: Some(ErrorClass::Buffer)
                },
                Hint::ExitedBeforeCollective {
                    operation: Call::Barrier as u32,
                    waiting: vec![2],
                    exited: vec![3]
                },
                Hint::ReturnedError {
                    class: ErrorClass::Buffer,
                    ranks: vec![1],
                    waiting: vec![2],
                    operation: Some(Call::Barrier as u32)
                },
            ]
        );
        assert_eq!(
            rep.to_string(),
            "deadlock: rank 0: receive(source 1, tag 7); rank 2: barrier; rank 1: returned \
             MPI_ERR_BUFFER (10 bytes exceed the world's configured limit of 8 bytes); rank 3: exited\n\
             waiting receives: rank 0: receive(source 1, tag 7)\n\
             hint: rank 0 waits for a message from rank 1, which returned MPI_ERR_BUFFER with no \
             message left for it: the error left it waiting\n\
             hint: rank 3 exited while rank 2 waits in barrier: every rank must call the same collectives\n\
             hint: rank 1 returned MPI_ERR_BUFFER while rank 2 waits in barrier: the error left it waiting"
        );
        // Waits in different operations: the hint names none.
        put(&mut m, l.record(3), &[STATE_WAITING, Call::Send as u32, 2, 0]);
        let rep = DeadlockReport::from_world(&m, &l, |_| false);
        assert!(rep.to_string().ends_with(
            "hint: rank 1 returned MPI_ERR_BUFFER while ranks 2-3 wait: the error left them waiting"
        ));
    }

    #[test]
    fn long_reports_are_capped() {
        let (mut m, l) = world(100);
        for r in 0..100 {
            put(
                &mut m,
                l.record(r),
                &[STATE_WAITING, Call::Receive as u32, r + 1, 0],
            );
        }
        let s = DeadlockReport::from_world(&m, &l, |_| false).to_string();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].ends_with("; ... and 68 more ranks"), "{s}");
        assert!(
            lines[1].starts_with("waiting receives: rank 0: receive(source 1, tag 0); rank 1:"),
            "{s}"
        );
        assert!(lines[1].ends_with("; ... and 92 more"), "{s}");
        assert_eq!(lines.len(), 2, "{s}");
    }
}
