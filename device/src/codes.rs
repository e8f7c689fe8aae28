//! The codes that the world memory and the errors carry as numbers, and the
//! names that the deadlock report and `Display for Error` print for them:
//! the call a rank waits in, the predefined reduction operations, the kinds
//! of non-blocking collective. They sit below `error` so that naming them
//! needs no module above it.

use crate::status::ANY_SOURCE;
use core::fmt;

/// The call a rank waits in (its code is what the wait record holds).
/// Named apart from `collective::Operation`, the reduction operations.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Call {
    /// A send waiting for a free slot or for the receiver.
    Send = 1,
    /// A receive waiting for a matching message.
    Receive = 2,
    /// A blocking probe.
    Probe = 3,
    /// A barrier (also the barrier steps inside other collectives).
    Barrier = 4,
    /// A broadcast.
    Broadcast = 5,
    /// A reduce.
    Reduce = 6,
    /// An all-reduce.
    AllReduce = 7,
    /// A combined send and receive.
    SendReceive = 8,
    /// A rank spinning on a non-blocking probe (`immediate_probe`,
    /// `immediate_matched_probe`) that finds nothing.
    ImmediateProbe = 9,
    /// A rank spinning on the test of a send request.
    TestSend = 10,
    /// A rank spinning on the test of a receive request.
    TestReceive = 11,
    /// A rank spinning on a test over several requests (`test_all`,
    /// `test_any`, `test_some`); the tag word holds their number.
    TestMany = 12,
    /// A wait over several requests (`wait_all`, `wait_any`, `wait_some`,
    /// the end of a request scope); the tag word holds their number.
    WaitMany = 13,
    /// A gather (`MPI_Gather`, `MPI_Gatherv`); the peer is the root.
    Gather = 14,
    /// A scatter (`MPI_Scatter`, `MPI_Scatterv`); the peer is the root.
    Scatter = 15,
    /// An all-gather (`MPI_Allgather`, `MPI_Allgatherv`).
    AllGather = 16,
    /// An all-to-all (`MPI_Alltoall`, `MPI_Alltoallv`).
    AllToAll = 17,
    /// A reduce-scatter (`MPI_Reduce_scatter_block`, `MPI_Reduce_scatter`).
    ReduceScatter = 18,
    /// An inclusive or exclusive scan (`MPI_Scan`, `MPI_Exscan`).
    Scan = 19,
    /// A rank spinning on the test of a non-blocking collective's request
    /// (`crate::collective::immediate`); the peer is its root (-2: none),
    /// the tag its kind.
    TestCollective = 20,
    // 21 was a non-blocking collective's wait for every rank to complete
    // its slot's previous use (layout 16 and before); it is not reused.
    /// A lock of a window's target (`crate::window`); the peer is the
    /// target's world rank, the tag the window id.
    WinLock = 22,
    /// A wait for notifications of a window (`crate::window`); the tag is
    /// the counter, the peer -1 (any rank may notify).
    WinNotify = 23,
    /// A window's `start` waiting for a target's `post`; the peer is the
    /// target, the tag the window id.
    WinStart = 24,
    /// A window's `post` waiting for a free post slot of an origin; the
    /// peer is the origin, the tag the window id.
    WinPost = 25,
    /// A window's exposure `wait` for the origins' `complete`; the tag is
    /// the number of completions still missing.
    WinWait = 26,
    /// A window's fence (its barrier: on the world the keyed world
    /// barrier, on a sub-communicator the window's own); the tag is the
    /// window id.
    WinFence = 27,
    /// A window's creation (its agreement, collective over the
    /// communicator); never a wait of its own (its collectives record
    /// theirs), only the operation of an [`Error::AcrossProcesses`](crate::Error::AcrossProcesses).
    WinCreate = 28,
    /// A window's free (its barrier: on the world the keyed world
    /// barrier, on a sub-communicator the window's own); the tag is the
    /// window id.
    WinFree = 29,
}

impl Call {
    /// The operation for a recorded code.
    pub fn from_code(code: u32) -> Option<Call> {
        Some(match code {
            1 => Call::Send,
            2 => Call::Receive,
            3 => Call::Probe,
            4 => Call::Barrier,
            5 => Call::Broadcast,
            6 => Call::Reduce,
            7 => Call::AllReduce,
            8 => Call::SendReceive,
            9 => Call::ImmediateProbe,
            10 => Call::TestSend,
            11 => Call::TestReceive,
            12 => Call::TestMany,
            13 => Call::WaitMany,
            14 => Call::Gather,
            15 => Call::Scatter,
            16 => Call::AllGather,
            17 => Call::AllToAll,
            18 => Call::ReduceScatter,
            19 => Call::Scan,
            20 => Call::TestCollective,
            22 => Call::WinLock,
            23 => Call::WinNotify,
            24 => Call::WinStart,
            25 => Call::WinPost,
            26 => Call::WinWait,
            27 => Call::WinFence,
            28 => Call::WinCreate,
            29 => Call::WinFree,
            _ => return None,
        })
    }

    /// Whether a rank in this operation spins on a non-blocking call (it
    /// runs, but cannot progress: a livelock rather than a deadlock).
    pub fn is_spin(self) -> bool {
        matches!(
            self,
            Call::ImmediateProbe | Call::TestSend | Call::TestReceive | Call::TestMany | Call::TestCollective
        )
    }
}

/// Formats a wait as the deadlock report prints it, e.g.
/// `receive(source 5, tag 7)` or `barrier`.
#[derive(Clone, Copy, Debug)]
pub struct WaitDisplay {
    /// Operation code.
    pub operation: u32,
    /// Peer (-1 any, -2 none).
    pub peer: i32,
    /// Tag (-1 any).
    pub tag: i32,
}

struct Peer(i32);
impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == ANY_SOURCE {
            write!(f, "any")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl fmt::Display for WaitDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (p, t) = (Peer(self.peer), Peer(self.tag));
        match Call::from_code(self.operation) {
            Some(Call::Send) => write!(f, "send(dest {p}, tag {t})"),
            Some(Call::Receive) => write!(f, "receive(source {p}, tag {t})"),
            Some(Call::Probe) => write!(f, "probe(source {p}, tag {t})"),
            Some(Call::SendReceive) => write!(f, "send_receive(source {p}, tag {t})"),
            Some(Call::Barrier) => write!(f, "barrier"),
            Some(Call::Broadcast) => write!(f, "broadcast(root {p})"),
            Some(Call::Reduce) => write!(f, "reduce(root {p})"),
            Some(Call::AllReduce) => write!(f, "all_reduce"),
            Some(Call::Gather) => write!(f, "gather(root {p})"),
            Some(Call::Scatter) => write!(f, "scatter(root {p})"),
            Some(Call::AllGather) => write!(f, "all_gather"),
            Some(Call::AllToAll) => write!(f, "all_to_all"),
            Some(Call::ReduceScatter) => write!(f, "reduce_scatter"),
            Some(Call::Scan) => write!(f, "scan"),
            Some(Call::ImmediateProbe) => write!(f, "immediate_probe(source {p}, tag {t})"),
            Some(Call::TestSend) => write!(f, "test of send(dest {p}, tag {t})"),
            Some(Call::TestReceive) => write!(f, "test of receive(source {p}, tag {t})"),
            Some(Call::TestMany) => write!(f, "test over {} requests", self.tag),
            Some(Call::WaitMany) => write!(f, "wait over {} requests", self.tag),
            Some(Call::TestCollective) => {
                let kind = match self.tag {
                    1 => "barrier",
                    2 => "broadcast",
                    3 => "reduce",
                    _ => "all_reduce",
                };
                match self.peer {
                    -2 => write!(f, "test of immediate_{kind}"),
                    _ => write!(f, "test of immediate_{kind}(root {p})"),
                }
            }
            Some(Call::WinLock) => write!(f, "window lock(target {p}, window {})", self.tag),
            Some(Call::WinNotify) => write!(f, "window notification wait(counter {})", self.tag),
            Some(Call::WinStart) => write!(
                f,
                "window start(waiting for the post of {p}, window {})",
                self.tag
            ),
            Some(Call::WinPost) => write!(
                f,
                "window post(origin {p}'s post slots full, window {})",
                self.tag
            ),
            Some(Call::WinWait) => write!(f, "window wait({} completions missing)", self.tag),
            Some(Call::WinFence) => write!(f, "window fence(window {})", self.tag),
            Some(Call::WinCreate) => f.write_str("window creation"),
            Some(Call::WinFree) => write!(f, "window free(window {})", self.tag),
            None => write!(f, "operation {}", self.operation),
        }
    }
}

/// The predefined operations' codes (`SystemOperation`'s word).
pub(crate) const OP_SUM: u32 = 1;
pub(crate) const OP_PRODUCT: u32 = 2;
pub(crate) const OP_MIN: u32 = 3;
pub(crate) const OP_MAX: u32 = 4;
pub(crate) const OP_BAND: u32 = 5;
pub(crate) const OP_BOR: u32 = 6;
pub(crate) const OP_BXOR: u32 = 7;
pub(crate) const OP_LAND: u32 = 8;
pub(crate) const OP_LOR: u32 = 9;
/// `MPI_REPLACE`: one-sided accumulates only (MPI 4.1 §12.3.4).
pub(crate) const OP_REPLACE: u32 = 10;
/// `MPI_NO_OP`: one-sided accumulates only (MPI 4.1 §12.3.4).
pub(crate) const OP_NO_OP: u32 = 11;

/// The MPI name of a reduction operation's code (`SystemOperation::name_of`).
pub fn operation_name(code: u32) -> &'static str {
    match code {
        OP_SUM => "MPI_SUM",
        OP_PRODUCT => "MPI_PROD",
        OP_MIN => "MPI_MIN",
        OP_MAX => "MPI_MAX",
        OP_BAND => "MPI_BAND",
        OP_BOR => "MPI_BOR",
        OP_BXOR => "MPI_BXOR",
        OP_LAND => "MPI_LAND",
        OP_LOR => "MPI_LOR",
        OP_REPLACE => "MPI_REPLACE",
        OP_NO_OP => "MPI_NO_OP",
        _ => "unknown operation",
    }
}

/// Which collective a slot use is (the low byte of `collective::immediate::Args::kind_class`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `MPI_Ibarrier`.
    Barrier = 1,
    /// `MPI_Ibcast`.
    Broadcast = 2,
    /// `MPI_Ireduce`.
    Reduce = 3,
    /// `MPI_Iallreduce`.
    AllReduce = 4,
}

impl Kind {
    pub(crate) fn call(self) -> Call {
        match self {
            Kind::Barrier => Call::Barrier,
            Kind::Broadcast => Call::Broadcast,
            Kind::Reduce => Call::Reduce,
            Kind::AllReduce => Call::AllReduce,
        }
    }

    /// Whether a use whose reference `collective::immediate::Args::kind_class` is `code`
    /// combines operands.
    pub(crate) fn folds(code: u32) -> bool {
        let kind = code & 0xff;
        kind == Kind::Reduce as u32 || kind == Kind::AllReduce as u32
    }
}

/// The name of a [`Kind`] code (what [`Error::CollectiveMismatch`](crate::Error::CollectiveMismatch) prints).
pub fn kind_name(code: u32) -> &'static str {
    match code {
        c if c == Kind::Barrier as u32 => "barrier",
        c if c == Kind::Broadcast as u32 => "broadcast",
        c if c == Kind::Reduce as u32 => "reduce",
        c if c == Kind::AllReduce as u32 => "all-reduce",
        _ => "collective",
    }
}
