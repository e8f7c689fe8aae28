//! Point-to-point communication (MPI standard chapter 3).

/// `MPI_ANY_TAG`.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB`: the largest tag (at least 32767 by the standard; here `i32::MAX`).
pub const TAG_UB: i32 = i32::MAX;

/// The envelope of a received or probed message (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub(crate) source: i32,
    pub(crate) tag: i32,
    pub(crate) bytes: u32,
    pub(crate) datatype: u32,
}
