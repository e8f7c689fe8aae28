//! The envelope of a received or probed message (`MPI_Status`, MPI 4.1
//! section 3.2.5), below the modules that return it.

use crate::datatype::{Equivalence, ID_BYTE};

/// `MPI_ANY_TAG`.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB`: the largest tag (the standard asks for at least 32767; here `i32::MAX`).
pub const TAG_UB: i32 = i32::MAX;
/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: i32 = -1;
/// `MPI_PROC_NULL`: sends to it and receives from it return at once.
pub const PROC_NULL: i32 = -2;

/// The envelope of a received or probed message (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub(crate) source: i32,
    pub(crate) tag: i32,
    pub(crate) bytes: u32,
    pub(crate) datatype: u32,
}

impl Status {
    /// The empty status (MPI 3.7.3): source `ANY_SOURCE`, tag `ANY_TAG`,
    /// count 0; what a wait on a null request returns.
    pub const fn empty() -> Status {
        Status {
            source: ANY_SOURCE,
            tag: ANY_TAG,
            bytes: 0,
            datatype: ID_BYTE,
        }
    }
    /// The sender's rank (`MPI_SOURCE`); `PROC_NULL` for a receive from the null process.
    pub fn source_rank(&self) -> i32 {
        self.source
    }
    /// The message's tag (`MPI_TAG`); `ANY_TAG` for a receive from the null process.
    pub fn tag(&self) -> i32 {
        self.tag
    }
    /// Length of the message in bytes (the whole message, also when truncated).
    pub fn bytes(&self) -> u32 {
        self.bytes
    }
    /// The datatype id the message was sent with.
    pub fn datatype_id(&self) -> u32 {
        self.datatype
    }
    /// Number of `T` elements in the message (`MPI_Get_count`); `None`
    /// (`MPI_UNDEFINED`) when the length is not a whole number of `T`.
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        let size = T::DATATYPE.size;
        if size == 0 || !self.bytes.is_multiple_of(size) {
            None
        } else {
            Some((self.bytes / size) as usize)
        }
    }
}
