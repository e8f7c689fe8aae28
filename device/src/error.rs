//! Error classes (MPI 4.1 section 9.4, "Error Codes and Classes").
//!
//! Every call returns a `Result`. On the device an error is an [`Error`]; it
//! crosses to the host as an [`ErrorClass`] (`repr(u32)`) plus four detail
//! words, written into the rank's result record when the kernel returns.

use crate::layout::MAX_LOCKS;
use crate::status::Status;
use core::fmt;

/// The class of an error, the code that crosses from the device to the host.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// No error (`MPI_SUCCESS`).
    Success = 0,
    /// Invalid rank (`MPI_ERR_RANK`).
    Rank = 1,
    /// Invalid tag (`MPI_ERR_TAG`).
    Tag = 2,
    /// Message truncated on receive (`MPI_ERR_TRUNCATE`).
    Truncate = 3,
    /// Datatype mismatch between send and receive (`MPI_ERR_TYPE`).
    Type = 4,
    /// Invalid count (`MPI_ERR_COUNT`): buffers of a collective disagree.
    Count = 5,
    /// Buffer larger than the world's configuration allows (`MPI_ERR_BUFFER`).
    Buffer = 6,
    /// Invalid root (`MPI_ERR_ROOT`).
    Root = 7,
    /// Operation not defined for the datatype (`MPI_ERR_OP`).
    Op = 8,
    /// A wait exceeded the world's timeout (the rank is named in the deadlock report).
    Timeout = 9,
    /// Another rank aborted the world (timed out or failed), so this wait gave up.
    Aborted = 10,
    /// The world memory is not a world of this library's version (`MPI_ERR_INTERN`).
    Intern = 11,
    /// An index outside a kernel argument slice (`MPI_ERR_ARG`).
    Arg = 12,
    /// An invalid request (`MPI_ERR_REQUEST`): more requests than a scope holds.
    Request = 13,
    /// An invalid communicator (`MPI_ERR_COMM`): here, a communicator
    /// creation beyond the world's `communicators` limit.
    Comm = 14,
    /// A failure the kernel itself reports (`MPI_ERR_OTHER`, MPI 4.1
    /// §9.4): [`Error::Application`], with a code of the program's own.
    Other = 15,
    /// Out of memory (`MPI_ERR_NO_MEM`): here, a request for more of the
    /// rank's scratch than the world gave it, or for a scratch already taken.
    NoMem = 16,
    /// A one-sided operation outside the target's window memory
    /// (`MPI_ERR_RMA_RANGE`, MPI 4.1 §12.2.1).
    RmaRange = 17,
    /// A one-sided call outside the synchronisation it needs: an
    /// operation outside an access epoch, a lock held twice, an unlock of
    /// no lock, a window freed with epochs open (`MPI_ERR_RMA_SYNC`).
    RmaSync = 18,
    /// An invalid window (`MPI_ERR_WIN`): here, a creation beyond the
    /// world's `windows` or over memory other ranks cannot reach.
    Win = 19,
    /// Memory that cannot be attached to a dynamic window
    /// (`MPI_ERR_RMA_ATTACH`, MPI 4.1 §12.2.4): every region slot in
    /// use, a region overlapping an attached one, memory other ranks
    /// cannot reach.
    RmaAttach = 20,
    /// A window of the wrong flavor for the call (`MPI_ERR_RMA_FLAVOR`):
    /// an attach to a window that is not dynamic, a shared query of a
    /// dynamic one.
    RmaFlavor = 21,
}

impl ErrorClass {
    /// The class for a code read back from the device.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::Success,
            1 => Self::Rank,
            2 => Self::Tag,
            3 => Self::Truncate,
            4 => Self::Type,
            5 => Self::Count,
            6 => Self::Buffer,
            7 => Self::Root,
            8 => Self::Op,
            9 => Self::Timeout,
            10 => Self::Aborted,
            11 => Self::Intern,
            12 => Self::Arg,
            13 => Self::Request,
            14 => Self::Comm,
            15 => Self::Other,
            16 => Self::NoMem,
            17 => Self::RmaRange,
            18 => Self::RmaSync,
            19 => Self::Win,
            20 => Self::RmaAttach,
            21 => Self::RmaFlavor,
            _ => return None,
        })
    }

    /// The MPI name of the class.
    pub fn mpi_name(self) -> &'static str {
        match self {
            Self::Success => "MPI_SUCCESS",
            Self::Rank => "MPI_ERR_RANK",
            Self::Tag => "MPI_ERR_TAG",
            Self::Truncate => "MPI_ERR_TRUNCATE",
            Self::Type => "MPI_ERR_TYPE",
            Self::Count => "MPI_ERR_COUNT",
            Self::Buffer => "MPI_ERR_BUFFER",
            Self::Root => "MPI_ERR_ROOT",
            Self::Op => "MPI_ERR_OP",
            Self::Timeout => "MPI_ERR_TIMEOUT",
            Self::Aborted => "MPI_ERR_ABORTED",
            Self::Intern => "MPI_ERR_INTERN",
            Self::Arg => "MPI_ERR_ARG",
            Self::Request => "MPI_ERR_REQUEST",
            Self::Comm => "MPI_ERR_COMM",
            Self::Other => "MPI_ERR_OTHER",
            Self::NoMem => "MPI_ERR_NO_MEM",
            Self::RmaRange => "MPI_ERR_RMA_RANGE",
            Self::RmaSync => "MPI_ERR_RMA_SYNC",
            Self::Win => "MPI_ERR_WIN",
            Self::RmaAttach => "MPI_ERR_RMA_ATTACH",
            Self::RmaFlavor => "MPI_ERR_RMA_FLAVOR",
        }
    }
}

/// Word 3 of an `MPI_ERR_COUNT` result record that is an
/// [`Error::CollectiveMismatch`] (a [`Error::CountMismatch`] has 0 there).
const COLLECTIVE_MISMATCH: u32 = 1;

/// Word 3 of an `MPI_ERR_COUNT` result record that is an
/// [`Error::NegativeCount`].
const NEGATIVE_COUNT: u32 = 2;

/// Word 2 of an `MPI_ERR_COMM` result record that is an
/// [`Error::ImmediateOnSubCommunicator`] (a [`Error::CommunicatorLimit`]
/// has 0 there).
const IMMEDIATE_ON_SUB: u32 = 1;

/// Word 2 of an `MPI_ERR_REQUEST` result record that is an
/// [`Error::ImmediateLimit`] (a [`Error::RequestLimit`] has 0 there).
const IMMEDIATE_LIMIT: u32 = 1;
/// Word 3 of an `MPI_ERR_NO_MEM` result record that is an
/// [`Error::ScratchInUse`] (a [`Error::ScratchExhausted`] has 0 there).
const SCRATCH_IN_USE: u32 = 1;
/// Word 3 of an `MPI_ERR_NO_MEM` result record that is an
/// [`Error::WindowAllocation`].
const WINDOW_ALLOCATION: u32 = 2;
/// Word 2 of an `MPI_ERR_TYPE` result record that is an
/// [`Error::RmaType`]: a tag no message has (tags are non-negative).
const RMA_TYPE: u32 = -3i32 as u32;
/// Word 2 of an `MPI_ERR_OTHER` result record that is an
/// [`Error::AcrossProcesses`] (an [`Error::Application`] has 0 there).
const ACROSS_PROCESSES: u32 = 1;
/// Word 2 of an `MPI_ERR_WIN` result record that is an
/// [`Error::WindowMemory`] (a [`Error::WindowLimit`] has 0 there).
const WINDOW_MEMORY: u32 = 1;

/// Why memory could not be attached to a dynamic window
/// ([`Error::WindowAttach`]'s `reason`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttachReason {
    /// Every region slot of this rank's entry holds an attached region
    /// (`window::MAX_REGIONS`).
    Full = 1,
    /// The memory overlaps a region already attached (erroneous in MPI
    /// 4.1 §12.2.4; refused here).
    Overlap = 2,
    /// Memory other ranks cannot reach (a GPU thread's stack).
    Unreachable = 3,
}

impl AttachReason {
    /// The reason for a recorded code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => Self::Full,
            2 => Self::Overlap,
            3 => Self::Unreachable,
            _ => return None,
        })
    }
}

/// How a window was made (`MPI_WIN_CREATE_FLAVOR`, MPI 4.1 §12.2.6).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `Window::create` (`MPI_WIN_FLAVOR_CREATE`).
    Create = 1,
    /// `Window::allocate` (`MPI_WIN_FLAVOR_ALLOCATE`).
    Allocate = 2,
    /// `Window::create_dynamic` (`MPI_WIN_FLAVOR_DYNAMIC`).
    Dynamic = 3,
    /// `Window::allocate_shared` (`MPI_WIN_FLAVOR_SHARED`).
    Shared = 4,
}

impl Flavor {
    /// The flavor of a recorded code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => Self::Create,
            2 => Self::Allocate,
            3 => Self::Dynamic,
            4 => Self::Shared,
            _ => return None,
        })
    }

    /// MPI's name of the flavor.
    pub fn mpi_name(self) -> &'static str {
        match self {
            Self::Create => "MPI_WIN_FLAVOR_CREATE",
            Self::Allocate => "MPI_WIN_FLAVOR_ALLOCATE",
            Self::Dynamic => "MPI_WIN_FLAVOR_DYNAMIC",
            Self::Shared => "MPI_WIN_FLAVOR_SHARED",
        }
    }
}

/// What an [`Error::RmaSync`] found wrong (its `reason`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RmaSyncReason {
    /// An operation to a target with no access epoch open to it (no
    /// fence epoch, no lock of it, no `lock_all`).
    NoEpoch = 1,
    /// A lock of a target this rank already holds a lock of, or a
    /// `lock_all` while holding locks (MPI 4.1 §12.5.3).
    AlreadyLocked = 2,
    /// An unlock (or flush) of a target this rank holds no lock of, or an
    /// `unlock_all` without `lock_all`.
    NotLocked = 3,
    /// A fence or a window's free while a rank of the window's
    /// communicator holds locks of it (MPI 4.1 §12.5: passive-target
    /// epochs must be closed first); every rank of the communicator gets
    /// it, not only the holders, so that none waits in the fence or free.
    LocksHeld = 4,
    /// More targets locked at once than a rank may hold
    /// (`window::MAX_LOCKS`, 6; `lock_all` has no such limit).
    TooManyLocks = 5,
    /// A fence or a window's free while this rank has a post/start
    /// epoch open, or a `post` or `start` while one of the same kind is
    /// (MPI 4.1 §12.5.2).
    EpochOpen = 6,
    /// An operation to a target outside the group of this rank's `start`.
    NotInGroup = 7,
}

impl RmaSyncReason {
    /// The reason for a recorded code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => Self::NoEpoch,
            2 => Self::AlreadyLocked,
            3 => Self::NotLocked,
            4 => Self::LocksHeld,
            5 => Self::TooManyLocks,
            6 => Self::EpochOpen,
            7 => Self::NotInGroup,
            _ => return None,
        })
    }
}

/// An error returned by a device call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A rank outside `0..size` that is not the null process or any source.
    InvalidRank {
        /// The rank given.
        rank: i32,
        /// The world size.
        size: i32,
    },
    /// A tag outside `0..=TAG_UB`, or `ANY_TAG` where a send needs a real tag.
    InvalidTag {
        /// The tag given.
        tag: i32,
    },
    /// The matched message was longer than the receive buffer. The message is
    /// consumed; the buffer holds its first `capacity_bytes` bytes.
    Truncate {
        /// The message's envelope and full length.
        status: Status,
        /// Bytes the receive buffer holds.
        capacity_bytes: u32,
    },
    /// The matched message was sent with another datatype. The message is
    /// consumed and the buffer untouched. Receive as bytes (`u8`) to accept any type.
    TypeMismatch {
        /// The message's envelope.
        status: Status,
        /// Datatype id the receive asked for.
        expected: u32,
    },
    /// Ranks passed buffers of different lengths to one collective.
    CountMismatch {
        /// Elements this rank passed.
        count: u32,
        /// Elements the root (or rank 0) passed.
        expected: u32,
    },
    /// A message or collective buffer larger than the world's configuration allows.
    BufferTooLarge {
        /// Bytes asked for.
        bytes: u32,
        /// The configured limit in bytes.
        limit: u32,
    },
    /// A root outside `0..size`.
    InvalidRoot {
        /// The root given.
        root: i32,
        /// The world size.
        size: i32,
    },
    /// A reduction operation that MPI does not define for the datatype
    /// (MPI 6.9.2: bitwise and logical operations take integers only).
    InvalidOperation {
        /// The operation's code ([`crate::collective::SystemOperation::code`]).
        op: u32,
        /// The datatype id.
        datatype: u32,
    },
    /// This rank waited longer than the world's timeout.
    Timeout {
        /// The operation it waited in ([`crate::polling::Call`] code).
        operation: u32,
        /// The peer it waited for (-1: none).
        peer: i32,
        /// The tag it waited for (-1: any).
        tag: i32,
    },
    /// Another rank aborted the world; this rank gave up its wait.
    Aborted {
        /// The rank that aborted first.
        by_rank: u32,
    },
    /// The world memory does not hold a world of this library version.
    Intern,
    /// An index outside a [`GlobalSlice`](crate::kernel::GlobalSlice).
    OutOfBounds {
        /// The index.
        index: u32,
        /// The slice's length.
        len: u32,
    },
    /// A request was posted while its scope's table was full
    /// ([`crate::request::MAX_REQUESTS`] active requests).
    RequestLimit {
        /// Requests one scope holds.
        limit: u32,
    },
    /// A non-blocking collective was started while two of the same
    /// communicator were outstanding on the rank (`IMMEDIATE_SLOTS`; class
    /// `MPI_ERR_REQUEST`, as [`Error::RequestLimit`]; they use no request
    /// records).
    ImmediateLimit {
        /// Non-blocking collectives one communicator may have outstanding.
        limit: u32,
    },
    /// A failure the kernel reports on purpose, with a code of its own
    /// (class `MPI_ERR_OTHER`). MPI has no application class; a program
    /// that needs one adds it (`MPI_Add_error_class`, MPI 4.1 §9.5): here
    /// the class is `MPI_ERR_OTHER` and `code` tells the program's errors
    /// apart. Made by [`Error::application`]; the host shows the code.
    Application {
        /// The program's own code.
        code: u32,
    },
    /// Ranks started different non-blocking collectives in the same
    /// position (MPI 4.1 §6.12: every rank of a communicator starts the
    /// same collectives in the same order), or the ranks of a block or
    /// warp communicator entered different blocking collectives together
    /// (MPI 4.1 §6.1). Class `MPI_ERR_COUNT`, as the other disagreements
    /// of collective arguments; every rank's request (or call) completes
    /// with it.
    CollectiveMismatch {
        /// The collective this rank started
        /// ([`Kind`](crate::collective::immediate::Kind) code).
        kind: u32,
        /// A different collective another rank started in that position
        /// (rank 0's, or, on a rank that started rank 0's, a disagreeing
        /// rank's).
        other: u32,
    },
    /// A non-blocking collective started on a sub-communicator of a world
    /// launched without their state (`WorldSpec::immediate_on_communicators`
    /// off, the default; class `MPI_ERR_COMM`): the call fails at once on
    /// the rank and starts nothing.
    ImmediateOnSubCommunicator {
        /// The sub-communicator's context id.
        context: u32,
    },
    /// A negative count in a varcount collective's partition (class
    /// `MPI_ERR_COUNT`, as MPICH gives: a count, however it is wrong).
    NegativeCount {
        /// The rank of the communicator whose part has the count.
        rank: u32,
        /// The count.
        count: i32,
    },
    /// A communicator creation found every context of the world used
    /// (`WorldConfig::communicators`); every rank of the parent gets it and
    /// no communicator is created.
    CommunicatorLimit {
        /// Communicators the world holds.
        limit: u32,
    },
    /// A request for more of the rank's scratch
    /// ([`Scratch::take`](crate::kernel::Scratch::take)) than is left of
    /// what the world gave each rank (`WorldSpec::scratch_bytes`; class
    /// `MPI_ERR_NO_MEM`).
    ScratchExhausted {
        /// Bytes asked for (saturated at `u32::MAX`).
        requested: u32,
        /// Bytes of the rank's scratch left, before alignment.
        available: u32,
    },
    /// An operation that does not cross processes yet, in a world spread
    /// over processes (`mpiexec`; docs/distributed.md; class
    /// `MPI_ERR_OTHER`): a window's creation, a non-blocking reduction
    /// with an operation of the program's own of more than 8 bytes on the
    /// world or on a group whose members span processes
    /// (`collective::immediate`), and, in a kernel crate built without the
    /// device's `distributed` feature, every collective but the world
    /// barrier. Every rank that enters one gets this error and nothing is
    /// moved.
    AcrossProcesses {
        /// The collective ([`crate::polling::Call`] code).
        operation: u32,
    },
    /// [`World::scratch`](crate::World::scratch) while a
    /// [`Scratch`](crate::kernel::Scratch) of the same rank is alive (class
    /// `MPI_ERR_NO_MEM`): a rank has one at a time.
    ScratchInUse,
    /// A one-sided operation reaching outside the target's window memory
    /// (class `MPI_ERR_RMA_RANGE`); nothing is written or read.
    RmaRange {
        /// The target, a rank of the window's communicator.
        target: i32,
        /// The operation's first byte in the target's window (saturated).
        offset: u32,
        /// Bytes it moves (saturated).
        bytes: u32,
        /// Bytes of the target's window.
        size: u32,
    },
    /// A one-sided call outside the synchronisation it needs (class
    /// `MPI_ERR_RMA_SYNC`); nothing is written or read.
    RmaSync {
        /// The target (-2: none, a call on the whole window).
        target: i32,
        /// What was wrong ([`RmaSyncReason`] code).
        reason: u32,
    },
    /// A one-sided operation whose datatype is not the target window's
    /// (class `MPI_ERR_TYPE`; a window holds elements of one datatype
    /// here, `Window<T>`, and ranks must create it with the same `T`);
    /// for an operation with datatypes (`Window::put_typed` and the
    /// others), also origin and target type signatures that differ
    /// (`window`: the target type's signature id) or an accumulate's side
    /// not of `T` alone (`window`: `T`'s id).
    RmaType {
        /// The target.
        target: i32,
        /// The datatype id of the target's window.
        window: u32,
        /// The datatype id of the operation.
        expected: u32,
    },
    /// A window creation found every window id of the world in use
    /// (`WorldConfig::windows`); every rank of the communicator gets it.
    WindowLimit {
        /// Windows the world holds at once.
        limit: u32,
    },
    /// A window creation over memory that other ranks cannot reach (a GPU
    /// thread's stack); every rank of the communicator gets it, naming
    /// the first such rank (class `MPI_ERR_WIN`).
    WindowMemory {
        /// The rank (of the communicator) whose memory it was.
        rank: u32,
    },
    /// `Window::allocate` asked for more than the world's `window_bytes`
    /// per rank (class `MPI_ERR_NO_MEM`); every rank of the communicator
    /// gets it, with the same numbers.
    WindowAllocation {
        /// The most bytes any rank asked for (saturated).
        requested: u32,
        /// Bytes each rank has per window (`WorldSpec::window_bytes`
        /// rounded up to 64).
        available: u32,
    },
    /// Memory that cannot be attached to a dynamic window (class
    /// `MPI_ERR_RMA_ATTACH`); nothing is attached.
    WindowAttach {
        /// Why ([`AttachReason`] code).
        reason: u32,
        /// Bytes of the memory (saturated).
        bytes: u32,
    },
    /// A call on a window of the wrong flavor (class
    /// `MPI_ERR_RMA_FLAVOR`): an attach or detach on a window that is not
    /// dynamic, a shared query of a dynamic window.
    WindowFlavor {
        /// The window's flavor ([`Flavor`] code).
        flavor: u32,
    },
}

impl Error {
    /// An error of the program's own (class `MPI_ERR_OTHER`) carrying
    /// `code` to the host, for a kernel that fails on purpose: a result it
    /// checked and found wrong, an input it refuses.
    pub const fn application(code: u32) -> Error {
        Error::Application { code }
    }

    /// The error's class.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidRank { .. } => ErrorClass::Rank,
            Error::InvalidTag { .. } => ErrorClass::Tag,
            Error::Truncate { .. } => ErrorClass::Truncate,
            Error::TypeMismatch { .. } => ErrorClass::Type,
            Error::CountMismatch { .. } => ErrorClass::Count,
            Error::BufferTooLarge { .. } => ErrorClass::Buffer,
            Error::InvalidRoot { .. } => ErrorClass::Root,
            Error::InvalidOperation { .. } => ErrorClass::Op,
            Error::Timeout { .. } => ErrorClass::Timeout,
            Error::Aborted { .. } => ErrorClass::Aborted,
            Error::Intern => ErrorClass::Intern,
            Error::OutOfBounds { .. } => ErrorClass::Arg,
            Error::RequestLimit { .. } | Error::ImmediateLimit { .. } => ErrorClass::Request,
            Error::Application { .. } | Error::AcrossProcesses { .. } => ErrorClass::Other,
            Error::CommunicatorLimit { .. } => ErrorClass::Comm,
            Error::CollectiveMismatch { .. } => ErrorClass::Count,
            Error::NegativeCount { .. } => ErrorClass::Count,
            Error::ImmediateOnSubCommunicator { .. } => ErrorClass::Comm,
            Error::ScratchExhausted { .. } | Error::ScratchInUse => ErrorClass::NoMem,
            Error::WindowAllocation { .. } => ErrorClass::NoMem,
            Error::RmaRange { .. } => ErrorClass::RmaRange,
            Error::RmaSync { .. } => ErrorClass::RmaSync,
            Error::RmaType { .. } => ErrorClass::Type,
            Error::WindowLimit { .. } | Error::WindowMemory { .. } => ErrorClass::Win,
            Error::WindowAttach { .. } => ErrorClass::RmaAttach,
            Error::WindowFlavor { .. } => ErrorClass::RmaFlavor,
        }
    }

    /// The error as the five words of a rank's result record: class, details.
    pub fn to_words(&self) -> [u32; 5] {
        let c = self.class() as u32;
        match *self {
            Error::InvalidRank { rank, size } => [c, rank as u32, size as u32, 0, 0],
            Error::InvalidTag { tag } => [c, tag as u32, 0, 0, 0],
            Error::Truncate {
                status,
                capacity_bytes,
            } => [
                c,
                status.source as u32,
                status.tag as u32,
                status.bytes,
                capacity_bytes,
            ],
            Error::TypeMismatch { status, expected } => [
                c,
                status.source as u32,
                status.tag as u32,
                status.datatype,
                expected,
            ],
            Error::CountMismatch { count, expected } => [c, count, expected, 0, 0],
            Error::CollectiveMismatch { kind, other } => [c, kind, other, COLLECTIVE_MISMATCH, 0],
            Error::NegativeCount { rank, count } => [c, rank, count as u32, NEGATIVE_COUNT, 0],
            Error::BufferTooLarge { bytes, limit } => [c, bytes, limit, 0, 0],
            Error::InvalidRoot { root, size } => [c, root as u32, size as u32, 0, 0],
            Error::InvalidOperation { op, datatype } => [c, op, datatype, 0, 0],
            Error::Timeout { operation, peer, tag } => [c, operation, peer as u32, tag as u32, 0],
            Error::Aborted { by_rank } => [c, by_rank, 0, 0, 0],
            Error::Intern => [c, 0, 0, 0, 0],
            Error::OutOfBounds { index, len } => [c, index, len, 0, 0],
            Error::RequestLimit { limit } => [c, limit, 0, 0, 0],
            Error::ImmediateLimit { limit } => [c, limit, IMMEDIATE_LIMIT, 0, 0],
            Error::Application { code } => [c, code, 0, 0, 0],
            Error::AcrossProcesses { operation } => [c, 0, ACROSS_PROCESSES, operation, 0],
            Error::CommunicatorLimit { limit } => [c, limit, 0, 0, 0],
            Error::ImmediateOnSubCommunicator { context } => [c, context, IMMEDIATE_ON_SUB, 0, 0],
            Error::ScratchExhausted { requested, available } => [c, requested, available, 0, 0],
            Error::ScratchInUse => [c, 0, 0, SCRATCH_IN_USE, 0],
            Error::WindowAllocation { requested, available } => {
                [c, requested, available, WINDOW_ALLOCATION, 0]
            }
            Error::RmaRange {
                target,
                offset,
                bytes,
                size,
            } => [c, target as u32, offset, bytes, size],
            Error::RmaSync { target, reason } => [c, target as u32, reason, 0, 0],
            Error::RmaType {
                target,
                window,
                expected,
            } => [c, target as u32, RMA_TYPE, window, expected],
            Error::WindowLimit { limit } => [c, limit, 0, 0, 0],
            Error::WindowMemory { rank } => [c, rank, WINDOW_MEMORY, 0, 0],
            Error::WindowAttach { reason, bytes } => [c, reason, bytes, 0, 0],
            Error::WindowFlavor { flavor } => [c, flavor, 0, 0, 0],
        }
    }

    /// Rebuilds an error from a result record; `None` for success or an
    /// unknown class. Fields the record does not carry (a truncated message's
    /// datatype, a mismatched message's length) come back as 0.
    pub fn from_words(w: [u32; 5]) -> Option<Error> {
        let status = |bytes: u32, datatype: u32| Status {
            source: w[1] as i32,
            tag: w[2] as i32,
            bytes,
            datatype,
        };
        Some(match ErrorClass::from_code(w[0])? {
            ErrorClass::Success => return None,
            ErrorClass::Rank => Error::InvalidRank {
                rank: w[1] as i32,
                size: w[2] as i32,
            },
            ErrorClass::Tag => Error::InvalidTag { tag: w[1] as i32 },
            ErrorClass::Truncate => Error::Truncate {
                status: status(w[3], 0),
                capacity_bytes: w[4],
            },
            ErrorClass::Type if w[2] == RMA_TYPE => Error::RmaType {
                target: w[1] as i32,
                window: w[3],
                expected: w[4],
            },
            ErrorClass::Type => Error::TypeMismatch {
                status: status(0, w[3]),
                expected: w[4],
            },
            ErrorClass::Count if w[3] == COLLECTIVE_MISMATCH => Error::CollectiveMismatch {
                kind: w[1],
                other: w[2],
            },
            ErrorClass::Count if w[3] == NEGATIVE_COUNT => Error::NegativeCount {
                rank: w[1],
                count: w[2] as i32,
            },
            ErrorClass::Count => Error::CountMismatch {
                count: w[1],
                expected: w[2],
            },
            ErrorClass::Buffer => Error::BufferTooLarge {
                bytes: w[1],
                limit: w[2],
            },
            ErrorClass::Root => Error::InvalidRoot {
                root: w[1] as i32,
                size: w[2] as i32,
            },
            ErrorClass::Op => Error::InvalidOperation {
                op: w[1],
                datatype: w[2],
            },
            ErrorClass::Timeout => Error::Timeout {
                operation: w[1],
                peer: w[2] as i32,
                tag: w[3] as i32,
            },
            ErrorClass::Aborted => Error::Aborted { by_rank: w[1] },
            ErrorClass::Intern => Error::Intern,
            ErrorClass::Arg => Error::OutOfBounds {
                index: w[1],
                len: w[2],
            },
            ErrorClass::Request if w[2] == IMMEDIATE_LIMIT => Error::ImmediateLimit { limit: w[1] },
            ErrorClass::Request => Error::RequestLimit { limit: w[1] },
            ErrorClass::Other if w[2] == ACROSS_PROCESSES => Error::AcrossProcesses { operation: w[3] },
            ErrorClass::Other => Error::Application { code: w[1] },
            ErrorClass::Comm if w[2] == IMMEDIATE_ON_SUB => {
                Error::ImmediateOnSubCommunicator { context: w[1] }
            }
            ErrorClass::Comm => Error::CommunicatorLimit { limit: w[1] },
            ErrorClass::NoMem if w[3] == SCRATCH_IN_USE => Error::ScratchInUse,
            ErrorClass::NoMem if w[3] == WINDOW_ALLOCATION => Error::WindowAllocation {
                requested: w[1],
                available: w[2],
            },
            ErrorClass::NoMem => Error::ScratchExhausted {
                requested: w[1],
                available: w[2],
            },
            ErrorClass::RmaRange => Error::RmaRange {
                target: w[1] as i32,
                offset: w[2],
                bytes: w[3],
                size: w[4],
            },
            ErrorClass::RmaSync => Error::RmaSync {
                target: w[1] as i32,
                reason: w[2],
            },
            ErrorClass::Win if w[2] == WINDOW_MEMORY => Error::WindowMemory { rank: w[1] },
            ErrorClass::Win => Error::WindowLimit { limit: w[1] },
            ErrorClass::RmaAttach => Error::WindowAttach {
                reason: w[1],
                bytes: w[2],
            },
            ErrorClass::RmaFlavor => Error::WindowFlavor { flavor: w[1] },
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.class().mpi_name())?;
        match *self {
            Error::InvalidRank { rank, size } => write!(f, "rank {rank} is not in a world of {size} ranks"),
            Error::InvalidTag { tag } => write!(f, "tag {tag} is outside 0..={}", crate::status::TAG_UB),
            Error::Truncate { status, capacity_bytes } => write!(
                f,
                "message of {} bytes from rank {} (tag {}) truncated to the receive buffer's {capacity_bytes} bytes",
                status.bytes, status.source, status.tag
            ),
            Error::TypeMismatch { status, expected } => write!(
                f,
                "message from rank {} (tag {}) has datatype {}, the receive asked for {}",
                status.source,
                status.tag,
                crate::datatype::datatype_name(status.datatype),
                crate::datatype::datatype_name(expected)
            ),
            Error::CountMismatch { count, expected } => {
                write!(f, "this rank passed {count} elements, the collective's root passed {expected}")
            }
            Error::CollectiveMismatch { kind, other } => write!(
                f,
                "this rank called {} where another rank of its communicator called {}",
                crate::codes::kind_name(kind),
                crate::codes::kind_name(other)
            ),
            Error::NegativeCount { rank, count } => {
                write!(f, "the partition gives rank {rank} a negative count ({count})")
            }
            Error::BufferTooLarge { bytes, limit } => {
                write!(f, "{bytes} bytes exceed the world's configured limit of {limit} bytes")
            }
            Error::InvalidRoot { root, size } => write!(f, "root {root} is not in a world of {size} ranks"),
            Error::InvalidOperation { op, datatype } => write!(
                f,
                "operation {} is not defined for datatype {}",
                crate::codes::operation_name(op),
                crate::datatype::datatype_name(datatype)
            ),
            Error::Timeout { operation, peer, tag } => write!(
                f,
                "timed out in {}",
                crate::codes::WaitDisplay { operation, peer, tag }
            ),
            Error::Aborted { by_rank } => write!(f, "world aborted by rank {by_rank}"),
            Error::Intern => write!(f, "world memory is not a gpu-mpi world of this version"),
            Error::OutOfBounds { index, len } => write!(f, "index {index} is outside a slice of {len} elements"),
            Error::RequestLimit { limit } => {
                write!(f, "more than {limit} requests active in one request scope")
            }
            Error::ImmediateLimit { limit } => write!(
                f,
                "more than {limit} non-blocking collectives outstanding on one communicator: complete one (wait or test) before starting another"
            ),
            Error::Application { code } => write!(f, "the kernel failed with application code {code}"),
            Error::AcrossProcesses { operation } => match crate::codes::Call::from_code(operation) {
                Some(call) => write!(f, "{call:?} in a world across processes: it does not cross processes yet (docs/distributed.md)"),
                None => write!(f, "a collective in a world across processes: it does not cross processes yet (docs/distributed.md)"),
            },
            Error::ImmediateOnSubCommunicator { context } => write!(
                f,
                "non-blocking collective on sub-communicator context {context}: the world was launched without their state (WorldSpec::immediate_on_communicators)"
            ),
            Error::CommunicatorLimit { limit } => {
                write!(f, "the world holds {limit} communicators (across processes: the share of the process of the creation's rank 0) and all are in use")
            }
            Error::ScratchExhausted { requested, available } => write!(
                f,
                "{requested} bytes of scratch asked for, {available} left of this rank's scratch (WorldSpec::scratch_bytes)"
            ),
            Error::ScratchInUse => {
                write!(f, "this rank's scratch is already taken (one Scratch per rank at a time)")
            }
            Error::WindowAllocation { requested, available } => write!(
                f,
                "a window of {requested} bytes per rank asked for, {available} bytes per rank and window in the world (WorldSpec::window_bytes)"
            ),
            Error::RmaRange {
                target,
                offset,
                bytes,
                size,
            } => write!(
                f,
                "{bytes} bytes at byte {offset} of rank {target}'s window reach past its {size} bytes"
            ),
            Error::RmaSync { target, reason } => {
                let to = |f: &mut fmt::Formatter<'_>| match target {
                    -2 => Ok(()),
                    t => write!(f, " (target {t})"),
                };
                match RmaSyncReason::from_code(reason) {
                    Some(RmaSyncReason::NoEpoch) => {
                        write!(f, "a one-sided operation outside an access epoch")?;
                        to(f)?;
                        write!(f, ": call fence, lock or lock_all first")
                    }
                    Some(RmaSyncReason::AlreadyLocked) => {
                        write!(f, "this rank already holds a lock of the window")?;
                        to(f)
                    }
                    Some(RmaSyncReason::NotLocked) => {
                        write!(f, "this rank holds no such lock of the window")?;
                        to(f)
                    }
                    Some(RmaSyncReason::LocksHeld) => {
                        write!(
                            f,
                            "a fence or free of a window while a rank holds locks of it \
                             (this rank or another): every rank must unlock first"
                        )
                    }
                    Some(RmaSyncReason::TooManyLocks) => write!(
                        f,
                        "more than {} targets of one window locked at once by this rank (lock_all has no limit)",
                        MAX_LOCKS
                    ),
                    Some(RmaSyncReason::EpochOpen) => write!(
                        f,
                        "a post/start epoch of the window is open (on this rank, or on another for a fence or free): wait or complete it first"
                    ),
                    Some(RmaSyncReason::NotInGroup) => {
                        write!(f, "an operation to a target outside the group of this rank's start")?;
                        to(f)
                    }
                    None => write!(f, "reason {reason}"),
                }
            }
            Error::RmaType {
                target,
                window,
                expected,
            } if window == expected => write!(
                f,
                "a one-sided operation to rank {target} whose origin and target type signatures differ \
                 (both of {}, in other numbers), or whose target type puts an element off its alignment",
                crate::datatype::datatype_name(window)
            ),
            Error::RmaType {
                target,
                window,
                expected,
            } => write!(
                f,
                "rank {target}'s window holds {}, the operation moves {}",
                crate::datatype::datatype_name(window),
                crate::datatype::datatype_name(expected)
            ),
            Error::WindowLimit { limit: 0 } => {
                write!(f, "the world was launched without windows: give it some with WorldSpec::windows")
            }
            Error::WindowLimit { limit } => {
                write!(f, "the world holds {limit} windows at once and all are in use (WorldSpec::windows)")
            }
            Error::WindowMemory { rank } => write!(
                f,
                "rank {rank} created the window over memory other ranks cannot reach (a thread's stack): use a GlobalSlice, the scratch or Window::allocate"
            ),
            Error::WindowAttach { reason, bytes } => match AttachReason::from_code(reason) {
                Some(AttachReason::Full) => write!(
                    f,
                    "{bytes} bytes not attached: this rank has {} regions attached to the window, the most it holds",
                    crate::layout::MAX_REGIONS
                ),
                Some(AttachReason::Overlap) => {
                    write!(f, "{bytes} bytes not attached: they overlap a region attached to the window")
                }
                Some(AttachReason::Unreachable) => write!(
                    f,
                    "{bytes} bytes not attached: other ranks cannot reach them (a thread's stack): use a GlobalSlice or the scratch"
                ),
                None => write!(f, "{bytes} bytes not attached (reason {reason})"),
            },
            Error::WindowFlavor { flavor } => match Flavor::from_code(flavor) {
                Some(Flavor::Dynamic) => write!(
                    f,
                    "a dynamic window has no memory of its own to query: attach memory and pass its displacement instead"
                ),
                Some(other) => write!(
                    f,
                    "the window is of {}: attach and detach need a dynamic window (Window::create_dynamic)",
                    other.mpi_name()
                ),
                None => write!(f, "a window of flavor {flavor}"),
            },
        }
    }
}

impl core::error::Error for Error {}

/// `n` as an error field or a record word of 32 bits, saturated: a length,
/// count or index beyond `u32::MAX` reads as `u32::MAX` (at least that
/// many), never as its low 32 bits.
#[inline(always)]
pub(crate) const fn saturating_u32(n: usize) -> u32 {
    if n > u32::MAX as usize {
        u32::MAX
    } else {
        n as u32
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn the_immediate_collectives_errors_cross_to_the_host_apart_from_their_classmates() {
        let e = Error::CollectiveMismatch { kind: 1, other: 4 };
        assert_eq!(e.class(), ErrorClass::Count);
        assert_eq!(Error::from_words(e.to_words()), Some(e));
        let c = Error::CountMismatch {
            count: 1,
            expected: 4,
        };
        assert_eq!(Error::from_words(c.to_words()), Some(c));
        let n = Error::NegativeCount { rank: 3, count: -2 };
        assert_eq!(n.class(), ErrorClass::Count);
        assert_eq!(Error::from_words(n.to_words()), Some(n));
        let s = Error::ImmediateOnSubCommunicator { context: 3 };
        assert_eq!(s.class(), ErrorClass::Comm);
        assert_eq!(Error::from_words(s.to_words()), Some(s));
        let l = Error::CommunicatorLimit { limit: 3 };
        assert_eq!(Error::from_words(l.to_words()), Some(l));
        let i = Error::ImmediateLimit { limit: 2 };
        assert_eq!(i.class(), ErrorClass::Request);
        assert_eq!(Error::from_words(i.to_words()), Some(i));
        let r = Error::RequestLimit { limit: 2 };
        assert_eq!(Error::from_words(r.to_words()), Some(r));
        let x = Error::ScratchExhausted {
            requested: 4096,
            available: 64,
        };
        assert_eq!(x.class(), ErrorClass::NoMem);
        assert_eq!(Error::from_words(x.to_words()), Some(x));
        assert_eq!(
            Error::from_words(Error::ScratchInUse.to_words()),
            Some(Error::ScratchInUse)
        );
        let text = std::format!("{e}");
        assert_eq!(
            text,
            "MPI_ERR_COUNT: this rank called barrier where another rank of its communicator called all-reduce"
        );
    }

    #[test]
    fn an_application_error_crosses_with_its_code_as_mpi_err_other() {
        let e = Error::application(0xdead);
        assert_eq!(e.class(), ErrorClass::Other);
        assert_eq!(e.class() as u32, 15);
        assert_eq!(ErrorClass::from_code(15), Some(ErrorClass::Other));
        assert_eq!(Error::from_words(e.to_words()), Some(e));
        assert_eq!(
            std::format!("{e}"),
            "MPI_ERR_OTHER: the kernel failed with application code 57005"
        );
        assert_eq!(
            std::format!("{}", Error::ImmediateLimit { limit: 2 }),
            "MPI_ERR_REQUEST: more than 2 non-blocking collectives outstanding on one communicator: \
             complete one (wait or test) before starting another"
        );
    }
}
