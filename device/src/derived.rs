//! Derived datatypes on the device (MPI 4.1 chapter 5): walking a committed
//! type's encoding to pack and unpack, alone or with every rank of a world.
//!
//! The host builds and commits a type (`gpu_mpi::UserDatatype`); the commit
//! flattens its typemap into *work units* and writes them, with a header and
//! the type signature, into a position-independent array of `u64` words (the
//! encoding). A kernel receives it as a [`GlobalSlice<u64>`](crate::kernel::GlobalSlice) and reads it
//! through a [`TypeRef`]; no walk recurses, allocates or panics.
//!
//! # The encoding (all words `u64`, little-endian on every target)
//!
//! | words | what |
//! |---|---|
//! | `0..12` | [`EncodingHeader`] |
//! | `12..12 + 8 * units` | the work units, 8 words each: [`Unit`] |
//! | then `sig_runs` words | the type signature: `(count << 8) \| datatype id`, one run of equal primitives per word |
//!
//! A unit is `groups` groups of `count` blocks of `len` contiguous bytes,
//! block `j` of group `g` at byte displacement `disp + g * group_stride + j *
//! stride` from the start of the instance (the buffer address plus `i *
//! extent` for the `i`-th instance), packed one after the other from
//! `packed_off`. Units appear in typemap order, so the packed bytes are the
//! units' blocks in order; adjacent blocks are merged, equal blocks at a
//! constant stride fold into one group and equal groups at a constant stride
//! into one unit (a vector of vectors is one unit). A unit of one block has
//! `stride` 0; of one group, `group_stride` 0.
//!
//! For the cooperative walk each block is cut into chunks of `chunk_bytes`
//! (the last chunk of a block may be shorter); `first_chunk` is the index of
//! a unit's first chunk inside one instance. Rank `r` of `n` takes chunks
//! `r, r + n, ...` of the whole buffer: consecutive ranks copy consecutive
//! chunks, which coalesces on the GPU.

mod blocks;
mod pack_kernel;
mod share;
mod tiles;

pub use crate::typemap::TypeRef;
pub use crate::typemap::{pack_into, pack_into_at, pack_size, unpack_from, unpack_from_at};
#[doc(hidden)]
pub use crate::typemap::{
    signature_hash, signature_word, EncodingHeader, Unit, DEFAULT_CHUNK_BYTES, HEADER_WORDS, MAGIC,
    REGULAR_WORDS, UNIT_WORDS,
};
pub use crate::typemap::{subarray_2d, vector};
pub(crate) use blocks::{aligned, zip_blocks, Blocks, Signature};
#[doc(hidden)]
pub use pack_kernel::{gpu_mpi_pack, PackArgs, PACK, PACK_KERNEL, UNPACK};
#[doc(hidden)]
pub use share::{pack_share, unpack_share, Share};
#[doc(hidden)]
pub use tiles::{pack_tiles, unpack_tiles, PackPath, TileShape, SECTOR_BYTES, TILE_BYTES, TILE_MAX_LEN};

use crate::error::Error;
use crate::kernel::GlobalSlice;

impl<'a> TypeRef<'a> {
    /// Borrows an encoding the host uploaded to device memory.
    ///
    /// # Safety
    /// Nothing writes the slice's words while the returned reference lives.
    pub unsafe fn from_global(slice: &GlobalSlice<u64>) -> Result<TypeRef<'a>, Error> {
        // SAFETY: the caller guarantees the words are not written meanwhile;
        // `GlobalSlice`'s contract makes them valid and aligned.
        let words = unsafe { slice.slice(0, slice.len()) }?;
        TypeRef::new(words)
    }
}
