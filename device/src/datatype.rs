//! Datatypes (MPI standard chapter 5, and 3.3.1 for type matching).
//!
//! A payload is any `bytemuck::Pod` type that implements [`Equivalence`]: the
//! primitive integers and floats, and user `#[repr(C)]` structs declared with
//! [`user_datatype!`](crate::user_datatype). A message carries its datatype id;
//! a receive with another datatype is an `MPI_ERR_TYPE` error, except a receive
//! into bytes (`u8`, `MPI_BYTE`), which accepts any message (MPI 3.3.1).

use bytemuck::Pod;

/// The datatype of a message element: an id and the element size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datatype {
    /// Identifier sent with the message (see the `ID_*` constants; user types
    /// carry a hash of their name with the top bit set).
    pub id: u32,
    /// Size of one element in bytes.
    pub size: u32,
}

/// `MPI_BYTE`: `u8`, which matches any datatype on receive.
#[doc(hidden)]
pub const ID_BYTE: u32 = 1;
/// `MPI_INT8_T`.
#[doc(hidden)]
pub const ID_I8: u32 = 2;
/// `MPI_UINT16_T`.
#[doc(hidden)]
pub const ID_U16: u32 = 3;
/// `MPI_INT16_T`.
#[doc(hidden)]
pub const ID_I16: u32 = 4;
/// `MPI_UINT32_T`.
#[doc(hidden)]
pub const ID_U32: u32 = 5;
/// `MPI_INT32_T`.
#[doc(hidden)]
pub const ID_I32: u32 = 6;
/// `MPI_UINT64_T`.
#[doc(hidden)]
pub const ID_U64: u32 = 7;
/// `MPI_INT64_T`.
#[doc(hidden)]
pub const ID_I64: u32 = 8;
/// `MPI_FLOAT`.
#[doc(hidden)]
pub const ID_F32: u32 = 9;
/// `MPI_DOUBLE`.
#[doc(hidden)]
pub const ID_F64: u32 = 10;
/// Top bit of every user datatype id.
#[doc(hidden)]
pub const USER_BIT: u32 = 0x8000_0000;
/// Bit 30, with [`USER_BIT`] clear: the signature id of a derived datatype
/// whose signature holds more than one primitive (the low 30 bits: a hash of
/// its signature; see `derived::TypeRef::signature_id`).
#[doc(hidden)]
pub const SIGNATURE_BIT: u32 = 0x4000_0000;

/// A type that can travel in a message.
pub trait Equivalence: Pod {
    /// The datatype sent with each message of this type.
    const DATATYPE: Datatype;
}

macro_rules! primitive {
    ($($t:ty => $id:expr),* $(,)?) => {
        $(impl Equivalence for $t {
            const DATATYPE: Datatype = Datatype { id: $id, size: core::mem::size_of::<$t>() as u32 };
        })*
    };
}

primitive! {
    u8 => ID_BYTE, i8 => ID_I8, u16 => ID_U16, i16 => ID_I16, u32 => ID_U32, i32 => ID_I32,
    u64 => ID_U64, i64 => ID_I64, f32 => ID_F32, f64 => ID_F64,
}

/// The MPI name of a datatype id (user types: "user type").
#[doc(hidden)]
pub fn datatype_name(id: u32) -> &'static str {
    match id {
        ID_BYTE => "MPI_BYTE",
        ID_I8 => "MPI_INT8_T",
        ID_U16 => "MPI_UINT16_T",
        ID_I16 => "MPI_INT16_T",
        ID_U32 => "MPI_UINT32_T",
        ID_I32 => "MPI_INT32_T",
        ID_U64 => "MPI_UINT64_T",
        ID_I64 => "MPI_INT64_T",
        ID_F32 => "MPI_FLOAT",
        ID_F64 => "MPI_DOUBLE",
        id if id & USER_BIT != 0 => "user type",
        id if id & SIGNATURE_BIT != 0 => "derived type signature",
        _ => "unknown type",
    }
}

/// FNV-1a hash of a type's name, used as a user datatype id.
#[doc(hidden)]
pub const fn user_datatype_id(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u32;
        hash = hash.wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash | USER_BIT
}

/// Declares a `#[repr(C)]` `Pod` struct as a message datatype.
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// struct Particle { x: f32, y: f32, mass: f32 }
/// gpu_mpi_device::user_datatype!(Particle);
/// ```
#[macro_export]
macro_rules! user_datatype {
    ($t:ty) => {
        impl $crate::datatype::Equivalence for $t {
            const DATATYPE: $crate::datatype::Datatype = $crate::datatype::Datatype {
                id: $crate::datatype::user_datatype_id(stringify!($t)),
                size: core::mem::size_of::<$t>() as u32,
            };
        }
    };
}

/// A send buffer: one value, an array or a slice of values of one datatype,
/// or a [`View`](crate::view::View) of a derived datatype.
pub trait Buffer {
    /// The element datatype.
    fn datatype(&self) -> Datatype;
    /// The buffer's bytes (a view of a non-contiguous type: empty; its bytes
    /// are reached through [`Buffer::typed`]).
    fn as_bytes(&self) -> &[u8];
    /// Number of elements.
    fn count(&self) -> usize;
    /// The length in bytes when the type fixes it (a value, an array), so
    /// that the library can choose a path at compile time; `None` for slices.
    const FIXED_BYTES: Option<usize> = None;
    /// The typed layout of a view whose type is not one contiguous run;
    /// `None` for contiguous buffers (every `Pod` buffer).
    #[doc(hidden)]
    fn typed(&self) -> Option<&TypedBuffer> {
        None
    }
    /// The word a message of this buffer carries in its slot header so that
    /// a receive of a longer signature can take it (MPI 4.1 §3.3.1): for a
    /// view of a heterogeneous type, a hash of its whole primitive
    /// sequence (`derived::TypeRef::message_hash`); 0 (no hash) otherwise.
    #[doc(hidden)]
    fn message_signature(&self) -> u32 {
        0
    }
    /// The encoding's words and the instance count of a view, contiguous
    /// or not, so that a one-sided operation compares its whole type
    /// signature with the target's (MPI 4.1 §12.3); `None` for a `Pod`
    /// buffer, whose signature is its datatype times its count.
    #[doc(hidden)]
    fn type_words(&self) -> Option<(&[u64], usize)> {
        None
    }
}

/// A receive buffer: one value, an array or a slice of values of one
/// datatype, or a [`MutView`](crate::view::MutView) of a derived datatype.
pub trait BufferMut {
    /// The element datatype.
    fn datatype(&self) -> Datatype;
    /// The buffer's bytes, writable (a view of a non-contiguous type: empty).
    fn as_bytes_mut(&mut self) -> &mut [u8];
    /// Number of elements.
    fn count(&self) -> usize;
    /// The length in bytes when the type fixes it (a value, an array), so
    /// that the library can choose a path at compile time; `None` for slices.
    const FIXED_BYTES: Option<usize> = None;
    /// As [`Buffer::typed`], for a receive buffer.
    #[doc(hidden)]
    fn typed_mut(&mut self) -> Option<&TypedBuffer> {
        None
    }
    /// The typed layout a point-to-point receive records: as
    /// [`BufferMut::typed_mut`], and also for a view of a contiguous
    /// heterogeneous type (its run moved in one piece), so that a receive of
    /// another datatype id reaches its encoding to check a signature prefix
    /// (MPI 4.1 §3.3.1).
    #[doc(hidden)]
    fn typed_receive(&mut self) -> Option<&TypedBuffer> {
        self.typed_mut()
    }
    /// As [`Buffer::message_signature`], for the send of
    /// `send_receive_replace_into`.
    #[doc(hidden)]
    fn message_signature(&self) -> u32 {
        0
    }
    /// As [`Buffer::type_words`], for a result buffer.
    #[doc(hidden)]
    fn type_words(&self) -> Option<(&[u64], usize)> {
        None
    }
}

/// A buffer with a committed derived datatype, as the engine and the
/// collectives walk it: `count` instances of the type whose encoding is
/// `words[..words_len]`, instance `i` at `base + origin + i * extent`, the
/// typemap inside `base[..len]` (checked when the view was made).
/// `#[repr(C)]`: a send or receive record holds its address.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct TypedBuffer {
    /// The encoding's words.
    pub(crate) words: *const u64,
    /// Words of the encoding.
    pub(crate) words_len: usize,
    /// The buffer (for the run of a contiguous receive view moved by
    /// `typemap::move_typed`: the run's first byte).
    pub(crate) base: *mut u8,
    /// Bytes of the buffer (for such a run: its packed bytes).
    pub(crate) len: usize,
    /// Index of MPI's buffer address in the buffer (for such a run: 0).
    pub(crate) origin: usize,
    /// Instances of the type.
    pub(crate) count: usize,
    /// Bytes of the packed form (`count` times the type's size), or of the
    /// part of it that starts at `skip`.
    pub(crate) packed: usize,
    /// Packed bytes of the whole form before this buffer's first: 0 for a
    /// view, the offset of a part that the collectives of a
    /// sub-communicator send as one message ([`TypedBuffer::part`]).
    pub(crate) skip: usize,
    /// Whether the instances are one run of bytes (`typemap::move_typed`
    /// copies them in one piece), else walked block by block.
    pub(crate) run: bool,
}

impl TypedBuffer {
    /// Packed bytes `at..at + n` of this buffer's packed form as a buffer
    /// of its own, whose packed byte 0 is this one's byte `at`: a message
    /// that carries a part of a view.
    pub(crate) fn part(&self, at: usize, n: usize) -> TypedBuffer {
        TypedBuffer {
            skip: self.skip + at,
            packed: n,
            ..*self
        }
    }
}

/// The byte size of a primitive datatype id (`MPI_Type_size`), 0 for an
/// unknown id.
#[doc(hidden)]
pub const fn primitive_size(id: u32) -> u32 {
    match id {
        ID_BYTE | ID_I8 => 1,
        ID_U16 | ID_I16 => 2,
        ID_U32 | ID_I32 | ID_F32 => 4,
        ID_U64 | ID_I64 | ID_F64 => 8,
        _ => 0,
    }
}

impl<T: Equivalence> Buffer for T {
    const FIXED_BYTES: Option<usize> = Some(core::mem::size_of::<T>());
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
    fn count(&self) -> usize {
        1
    }
}

impl<T: Equivalence> Buffer for [T] {
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T: Equivalence> BufferMut for T {
    const FIXED_BYTES: Option<usize> = Some(core::mem::size_of::<T>());
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::bytes_of_mut(self)
    }
    fn count(&self) -> usize {
        1
    }
}

impl<T: Equivalence> BufferMut for [T] {
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T: Equivalence, const N: usize> Buffer for [T; N] {
    const FIXED_BYTES: Option<usize> = Some(N * core::mem::size_of::<T>());
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self[..])
    }
    fn count(&self) -> usize {
        N
    }
}

impl<T: Equivalence, const N: usize> BufferMut for [T; N] {
    const FIXED_BYTES: Option<usize> = Some(N * core::mem::size_of::<T>());
    fn datatype(&self) -> Datatype {
        T::DATATYPE
    }
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self[..])
    }
    fn count(&self) -> usize {
        N
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Pair {
        a: u32,
        b: f32,
    }
    crate::user_datatype!(Pair);

    #[test]
    fn user_types_get_distinct_ids_with_the_user_bit() {
        assert_ne!(Pair::DATATYPE.id & USER_BIT, 0);
        assert_eq!(Pair::DATATYPE.size, 8);
        assert_ne!(user_datatype_id("Pair"), user_datatype_id("Pear"));
        assert_eq!(datatype_name(Pair::DATATYPE.id), "user type");
        assert_eq!(datatype_name(f64::DATATYPE.id), "MPI_DOUBLE");
    }

    #[test]
    fn slices_and_values_report_count_and_bytes() {
        let v = [1.0f64, 2.0, 3.0];
        assert_eq!(Buffer::count(&v[..]), 3);
        assert_eq!(Buffer::as_bytes(&v[..]).len(), 24);
        assert_eq!(Buffer::count(&7u32), 1);
    }
}
