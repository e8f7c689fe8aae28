//! A committed derived datatype's encoding read in place ([`TypeRef`]) and
//! the sequential walks over it: whole buffers (`MPI_Pack`, `MPI_Unpack`)
//! and ranges of packed bytes (the mover of every view, [`move_typed`], and
//! its signature-prefix check, [`extends`]). `derived` re-exports the
//! public items and adds what needs the layers above (the cooperative and
//! tiled walks, the pack kernel, [`TypeRef::from_global`]).
//!
//! Below the engine so that the engine and the collectives call a view's
//! walker directly: an indirect call would make ptxas compile every
//! function whose address is taken with that signature to the full call
//! ABI, whose saves of callee-saved registers every kernel that can reach
//! the engine paid as spills (docs/performance.md, "A view's walker
//! called directly").

mod encoding;
mod prefix;
mod typeref;
mod walk;

pub(crate) use encoding::ceil_div;
pub use encoding::{
    signature_hash, signature_word, subarray_2d, vector, EncodingHeader, Unit, DEFAULT_CHUNK_BYTES,
    HEADER_WORDS, MAGIC, REGULAR_WORDS, UNIT_WORDS,
};
pub use typeref::TypeRef;
pub(crate) use typeref::{out_of_bounds, BAD_ENCODING};
#[cfg(feature = "views")]
pub(crate) use walk::extends;
pub(crate) use walk::{copy, move_typed, typed_at, Dir};
pub use walk::{pack_into, pack_into_at, pack_size, unpack_from, unpack_from_at};
