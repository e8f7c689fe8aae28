//! Derived datatypes on the device (MPI 4.1 chapter 5): walking a committed
//! type's encoding to pack and unpack, alone or with every rank of a world.
//!
//! The host builds and commits a type (`gpu_mpi::UserDatatype`); the commit
//! flattens its typemap into *work units* and writes them, with a header and
//! the type signature, into a position-independent array of `u64` words (the
//! encoding). A kernel receives it as a [`GlobalSlice<u64>`] and reads it
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

use crate::communicator::{Communicator, World};
use crate::datatype::{primitive_size, Datatype, Equivalence, TypedBuffer, ID_BYTE, SIGNATURE_BIT};
use crate::error::Error;
use crate::kernel::GlobalSlice;
use crate::shim;
use bytemuck::{Pod, Zeroable};

/// First word of every encoding: "GMPIDDT1".
#[doc(hidden)]
pub const MAGIC: u64 = u64::from_le_bytes(*b"GMPIDDT1");
/// Words of the header.
#[doc(hidden)]
pub const HEADER_WORDS: usize = 12;
/// Words of one work unit.
#[doc(hidden)]
pub const UNIT_WORDS: usize = 8;
/// Bytes of one chunk of the cooperative walk for types committed with the
/// defaults (and the const constructors): one 16-byte load per rank.
#[doc(hidden)]
pub const DEFAULT_CHUNK_BYTES: u64 = 16;
/// Words of an encoding made by the const constructors ([`vector`],
/// [`subarray_2d`]): a header, one unit, one signature run.
#[doc(hidden)]
pub const REGULAR_WORDS: usize = HEADER_WORDS + UNIT_WORDS + 1;

/// The header of an encoding (the first [`HEADER_WORDS`] words).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[doc(hidden)]
pub struct EncodingHeader {
    /// [`MAGIC`].
    pub magic: u64,
    /// Bytes of data in one instance (`MPI_Type_size`).
    pub size: u64,
    /// Extent of one instance (`MPI_Type_get_extent`), an `i64`.
    pub extent: u64,
    /// Lower bound, an `i64`.
    pub lb: u64,
    /// True lower bound (`MPI_Type_get_true_extent`), an `i64`.
    pub true_lb: u64,
    /// True extent, an `i64`.
    pub true_extent: u64,
    /// Work units that follow the header.
    pub units: u64,
    /// Signature runs that follow the units.
    pub sig_runs: u64,
    /// Bytes of one chunk of the cooperative walk (at least 1).
    pub chunk_bytes: u64,
    /// Chunks in one instance.
    pub chunks_per_instance: u64,
    /// Primitive elements in one instance.
    pub elements: u64,
    /// FNV-1a hash of the signature words (type matching at a glance).
    pub signature_hash: u64,
}

/// One work unit: `groups` groups of `count` blocks of `len` bytes, block
/// `j` of group `g` at `disp + g * group_stride + j * stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Unit {
    /// Displacement of the first block from the instance's start.
    pub disp: i64,
    /// Bytes from one block to the next (0 when `count` is 1).
    pub stride: i64,
    /// Bytes of each block.
    pub len: u64,
    /// Blocks of a group.
    pub count: u64,
    /// Bytes from one group to the next (0 when `groups` is 1).
    pub group_stride: i64,
    /// Groups.
    pub groups: u64,
    /// Where the first block goes in the packed instance.
    pub packed_off: u64,
    /// Index of the unit's first chunk inside one instance.
    pub first_chunk: u64,
}

impl Unit {
    /// The unit as its six words.
    pub const fn to_words(&self) -> [u64; UNIT_WORDS] {
        [
            self.disp as u64,
            self.stride as u64,
            self.len,
            self.count,
            self.group_stride as u64,
            self.groups,
            self.packed_off,
            self.first_chunk,
        ]
    }
}

/// FNV-1a over signature words.
#[doc(hidden)]
pub const fn signature_hash(words: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < words.len() {
        let bytes = words[i].to_le_bytes();
        let mut b = 0;
        while b < 8 {
            h ^= bytes[b] as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            b += 1;
        }
        i += 1;
    }
    h
}

/// One signature word: `count` primitives of datatype `id`.
#[doc(hidden)]
pub const fn signature_word(id: u32, count: u64) -> u64 {
    (count << 8) | (id as u64 & 0xff)
}

const fn ceil_div(a: u64, b: u64) -> u64 {
    if b == 0 {
        0
    } else {
        a.div_ceil(b)
    }
}

/// The encoding of one unit of `count` blocks of `len` bytes at `disp + j *
/// stride` of primitive `dt`, with the given bounds: what the host's commit
/// gives for the same regular shape.
const fn regular(dt: Datatype, unit: Unit, lb: i64, extent: i64) -> [u64; REGULAR_WORDS] {
    let mut unit = unit;
    if unit.count == 1 {
        unit.stride = 0;
    }
    if unit.count > 1 && unit.stride == unit.len as i64 {
        unit.len *= unit.count;
        unit.count = 1;
        unit.stride = 0;
    }
    let size = unit.len * unit.count;
    let elements = if dt.size == 0 { 0 } else { size / dt.size as u64 };
    let sig = signature_word(dt.id, elements);
    let (true_lb, true_ub) = if unit.stride < 0 {
        (
            unit.disp + (unit.count as i64 - 1) * unit.stride,
            unit.disp + unit.len as i64,
        )
    } else {
        (
            unit.disp,
            unit.disp + (unit.count as i64 - 1) * unit.stride + unit.len as i64,
        )
    };
    let header = [
        MAGIC,
        size,
        extent as u64,
        lb as u64,
        true_lb as u64,
        (true_ub - true_lb) as u64,
        1,
        1,
        DEFAULT_CHUNK_BYTES,
        unit.count * ceil_div(unit.len, DEFAULT_CHUNK_BYTES),
        elements,
        signature_hash(&[sig]),
    ];
    let u = unit.to_words();
    let mut out = [0u64; REGULAR_WORDS];
    let mut i = 0;
    while i < HEADER_WORDS {
        out[i] = header[i];
        i += 1;
    }
    while i < HEADER_WORDS + UNIT_WORDS {
        out[i] = u[i - HEADER_WORDS];
        i += 1;
    }
    out[i] = sig;
    out
}

/// `MPI_Type_vector(count, blocklength, stride, T)` built on the device, with
/// no host: the same words as the host's commit of that type. `count` and
/// `blocklength` must be at least 1 (the regular shape has one unit); a
/// `stride` below 0 is allowed.
pub const fn vector<T: Equivalence>(count: u32, blocklength: u32, stride: i32) -> [u64; REGULAR_WORDS] {
    let dt = T::DATATYPE;
    let s = dt.size as i64;
    let len = blocklength as i64 * s;
    let step = stride as i64 * s;
    let last = (count as i64 - 1) * step;
    let (lb, ub) = if last < 0 { (last, len) } else { (0, last + len) };
    regular(
        dt,
        Unit {
            disp: 0,
            stride: step,
            len: len as u64,
            count: count as u64,
            group_stride: 0,
            groups: 1,
            packed_off: 0,
            first_chunk: 0,
        },
        lb,
        ub - lb,
    )
}

/// `MPI_Type_create_subarray` of a 2-D array of `rows x cols` elements `T`
/// in C order, taking `sub_rows x sub_cols` from `(start_row, start_col)`,
/// built on the device: the same words as the host's commit. The caller
/// keeps the shape in range (`start + sub <= size`, `sub >= 1`) as the host
/// constructor checks.
pub const fn subarray_2d<T: Equivalence>(
    sizes: [u32; 2],
    subsizes: [u32; 2],
    starts: [u32; 2],
) -> [u64; REGULAR_WORDS] {
    let dt = T::DATATYPE;
    let s = dt.size as i64;
    let row = sizes[1] as i64 * s;
    regular(
        dt,
        Unit {
            disp: starts[0] as i64 * row + starts[1] as i64 * s,
            stride: row,
            len: subsizes[1] as u64 * s as u64,
            count: subsizes[0] as u64,
            group_stride: 0,
            groups: 1,
            packed_off: 0,
            first_chunk: 0,
        },
        0,
        sizes[0] as i64 * row,
    )
}

/// A committed type's encoding, read in place (in device-global memory or
/// anywhere else): the words checked once when it is made.
#[derive(Clone, Copy, Debug)]
pub struct TypeRef<'a> {
    words: &'a [u64],
    header: EncodingHeader,
}

/// The error a malformed encoding gives (`MPI_ERR_INTERN`: the words are not
/// what a commit writes).
const BAD_ENCODING: Error = Error::Intern;

fn word(words: &[u64], i: usize) -> Result<u64, Error> {
    words.get(i).copied().ok_or(BAD_ENCODING)
}

fn out_of_bounds(index: u64, len: usize) -> Error {
    Error::OutOfBounds {
        index: index.min(u32::MAX as u64) as u32,
        len: (len as u64).min(u32::MAX as u64) as u32,
    }
}

impl<'a> TypeRef<'a> {
    /// Reads an encoding's header and checks its shape (magic, lengths).
    pub fn new(words: &'a [u64]) -> Result<TypeRef<'a>, Error> {
        let mut h = [0u64; HEADER_WORDS];
        for (i, w) in h.iter_mut().enumerate() {
            *w = word(words, i)?;
        }
        let header: EncodingHeader = bytemuck::cast(h);
        if header.magic != MAGIC || header.chunk_bytes == 0 {
            return Err(BAD_ENCODING);
        }
        let need = header
            .units
            .checked_mul(UNIT_WORDS as u64)
            .and_then(|u| u.checked_add(HEADER_WORDS as u64))
            .and_then(|u| u.checked_add(header.sig_runs))
            .ok_or(BAD_ENCODING)?;
        if need > words.len() as u64 {
            return Err(BAD_ENCODING);
        }
        Ok(TypeRef { words, header })
    }

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

    /// The encoding's words.
    pub fn words(&self) -> &'a [u64] {
        self.words
    }

    /// The header.
    pub fn header(&self) -> &EncodingHeader {
        &self.header
    }

    /// Bytes of data in one instance.
    pub fn size(&self) -> u64 {
        self.header.size
    }

    /// Extent of one instance.
    pub fn extent(&self) -> i64 {
        self.header.extent as i64
    }

    /// Lower bound.
    pub fn lb(&self) -> i64 {
        self.header.lb as i64
    }

    /// Number of work units.
    pub fn units(&self) -> usize {
        self.header.units as usize
    }

    /// Work unit `i`.
    pub fn unit(&self, i: usize) -> Result<Unit, Error> {
        let b = HEADER_WORDS + i.checked_mul(UNIT_WORDS).ok_or(BAD_ENCODING)?;
        Ok(Unit {
            disp: word(self.words, b)? as i64,
            stride: word(self.words, b + 1)? as i64,
            len: word(self.words, b + 2)?,
            count: word(self.words, b + 3)?,
            group_stride: word(self.words, b + 4)? as i64,
            groups: word(self.words, b + 5)?,
            packed_off: word(self.words, b + 6)?,
            first_chunk: word(self.words, b + 7)?,
        })
    }

    /// Signature run `i`: `(datatype id, count)`.
    pub fn signature_run(&self, i: usize) -> Result<(u32, u64), Error> {
        let w = word(self.words, HEADER_WORDS + self.units() * UNIT_WORDS + i)?;
        Ok(((w & 0xff) as u32, w >> 8))
    }

    /// Whether `other` has the same type signature (MPI 3.3.1: a send type
    /// and a receive type match when their signatures agree).
    pub fn signature_matches(&self, other: &TypeRef<'_>) -> bool {
        if self.header.signature_hash != other.header.signature_hash
            || self.header.sig_runs != other.header.sig_runs
        {
            return false;
        }
        let base_a = HEADER_WORDS + self.units() * UNIT_WORDS;
        let base_b = HEADER_WORDS + other.units() * UNIT_WORDS;
        let n = self.header.sig_runs as usize;
        match (
            self.words.get(base_a..base_a + n),
            other.words.get(base_b..base_b + n),
        ) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

impl TypeRef<'_> {
    /// The datatype id a message of this type carries (its *signature id*),
    /// so that a receiver checks type matching (MPI 4.1 §3.3.1) without the
    /// sender's encoding:
    /// - a type whose signature is one primitive repeated (every vector,
    ///   subarray or indexed type of `f64`, ...) carries that primitive's id,
    ///   so it matches a plain `[f64]` on the other side, and a message
    ///   holding fewer elements or part of an instance still matches;
    /// - a type of size 0 carries `MPI_BYTE`'s id;
    /// - any other signature carries [`SIGNATURE_BIT`] and the low 30 bits of
    ///   an FNV-1a hash of its *period*: the shortest prefix of its signature
    ///   runs that repeats to the whole (when the first and last runs are of
    ///   different primitives; else the whole signature), so `contiguous(2,
    ///   S)` and `S` of a struct `S` carry the same id.
    ///
    /// Two different heterogeneous signatures collide with probability about
    /// 2^-30; a collision makes a mismatch go undetected (the bytes are
    /// still bounded by the receive buffer).
    pub fn signature_id(&self) -> u32 {
        let n = self.header.sig_runs as usize;
        let run = |i: usize| self.signature_run(i).map(|(id, c)| signature_word(id, c));
        let Ok(first) = run(0) else {
            return ID_BYTE;
        };
        let prim = (first & 0xff) as u32;
        if (1..n).all(|i| run(i).is_ok_and(|w| (w & 0xff) as u32 == prim)) {
            return prim;
        }
        let last = run(n - 1).unwrap_or(first);
        let mut period = n;
        if (first & 0xff) != (last & 0xff) {
            for p in 1..n {
                if n.is_multiple_of(p) && (p..n).all(|i| run(i).ok() == run(i % p).ok()) {
                    period = p;
                    break;
                }
            }
        }
        let mut h: u32 = 0x811c_9dc5;
        for i in 0..period {
            for b in run(i).unwrap_or(0).to_le_bytes() {
                h ^= b as u32;
                h = h.wrapping_mul(0x0100_0193);
            }
        }
        SIGNATURE_BIT | (h & (SIGNATURE_BIT - 1))
    }

    /// Whether one instance's typemap is one contiguous block of the type's
    /// size: `Some` with its displacement (a type of size 0: `Some(0)`).
    /// `count` instances are one run when also the extent equals the size
    /// (or `count <= 1`); such a buffer goes through the engine as plain
    /// bytes, at the cost of a `Pod` buffer.
    pub fn contiguous_run(&self) -> Option<i64> {
        let h = &self.header;
        if h.size == 0 {
            return Some(0);
        }
        if h.units != 1 {
            return None;
        }
        let u = self.unit(0).ok()?;
        (u.len == h.size && u.count == 1 && u.groups == 1).then_some(u.disp)
    }

    /// Primitive elements in the first `bytes` bytes of a packed message of
    /// this type (`MPI_Get_elements`, MPI 4.1 §5.1.11): whole instances
    /// times [`EncodingHeader::elements`] plus the primitives of the
    /// signature runs the rest covers; `None` (`MPI_UNDEFINED`) when the
    /// bytes end inside a primitive.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        let h = &self.header;
        if h.size == 0 {
            return (bytes == 0).then_some(0);
        }
        let whole = bytes / h.size;
        let mut rest = bytes % h.size;
        let mut n = whole.checked_mul(h.elements)?;
        let mut i = 0usize;
        while rest > 0 {
            let (id, count) = self.signature_run(i).ok()?;
            let size = primitive_size(id) as u64;
            if size == 0 {
                return None;
            }
            let run = size.checked_mul(count)?;
            if rest >= run {
                n = n.checked_add(count)?;
                rest -= run;
            } else {
                if !rest.is_multiple_of(size) {
                    return None;
                }
                return n.checked_add(rest / size);
            }
            i += 1;
        }
        Some(n)
    }
}

/// Bytes that `count` instances of `ty` pack into (`MPI_Pack_size`, MPI 5.2).
pub fn pack_size(count: usize, ty: &TypeRef<'_>) -> Result<usize, Error> {
    (count as u64)
        .checked_mul(ty.size())
        .filter(|&b| b <= usize::MAX as u64)
        .map(|b| b as usize)
        .ok_or(out_of_bounds(u64::MAX, 0))
}

/// Direction of a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Pack,
    Unpack,
}

/// Where block bytes of instance `inst` lie in the typed buffer: `origin +
/// inst * extent + disp`, checked to be a range inside `len` bytes.
fn typed_at(origin: usize, inst: u64, extent: i64, disp: i64, n: u64, len: usize) -> Result<usize, Error> {
    let at = (inst as i64)
        .checked_mul(extent)
        .and_then(|x| x.checked_add(disp))
        .and_then(|x| x.checked_add(origin as i64));
    match at {
        Some(a) if a >= 0 && (a as u64).checked_add(n).is_some_and(|e| e <= len as u64) => Ok(a as usize),
        Some(a) if a >= 0 => Err(out_of_bounds((a as u64).saturating_add(n), len)),
        _ => Err(out_of_bounds(0, len)),
    }
}

/// Copies `n` bytes between the typed buffer at `typed` and the packed buffer
/// at `packed`, in the walk's direction.
///
/// # Safety
/// `typed` valid for `typed_len` bytes, `packed` for `packed_len`; the
/// written side is not read or written by anyone else meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn copy(
    dir: Dir,
    typed: *mut u8,
    typed_len: usize,
    t: usize,
    packed: *mut u8,
    packed_len: usize,
    p: usize,
    n: usize,
) -> Result<(), Error> {
    if t.checked_add(n).is_none_or(|e| e > typed_len) {
        return Err(out_of_bounds(t as u64 + n as u64, typed_len));
    }
    if p.checked_add(n).is_none_or(|e| e > packed_len) {
        return Err(out_of_bounds(p as u64 + n as u64, packed_len));
    }
    // SAFETY: both ranges are in bounds (checked above) and the caller
    // guarantees validity and exclusive access to the written side; the typed
    // and packed buffers are distinct allocations.
    unsafe {
        match dir {
            Dir::Pack => shim::copy_bytes(packed.add(p), typed.add(t), n),
            Dir::Unpack => shim::copy_bytes(typed.add(t), packed.add(p), n),
        }
    }
    Ok(())
}

/// The sequential walk: every block of `count` instances in order.
///
/// # Safety
/// As for [`copy`].
#[allow(clippy::too_many_arguments)]
unsafe fn walk(
    dir: Dir,
    typed: *mut u8,
    typed_len: usize,
    origin: usize,
    count: usize,
    ty: &TypeRef<'_>,
    packed: *mut u8,
    packed_len: usize,
) -> Result<usize, Error> {
    let total = pack_size(count, ty)?;
    if total > packed_len {
        return Err(out_of_bounds(total as u64, packed_len));
    }
    let mut pos = 0usize;
    for inst in 0..count as u64 {
        for u in 0..ty.units() {
            let unit = ty.unit(u)?;
            for g in 0..unit.groups {
                let group = (g as i64)
                    .checked_mul(unit.group_stride)
                    .and_then(|x| x.checked_add(unit.disp))
                    .ok_or(BAD_ENCODING)?;
                for j in 0..unit.count {
                    let disp = (j as i64)
                        .checked_mul(unit.stride)
                        .and_then(|x| x.checked_add(group))
                        .ok_or(BAD_ENCODING)?;
                    let t = typed_at(origin, inst, ty.extent(), disp, unit.len, typed_len)?;
                    let n = unit.len as usize;
                    // SAFETY: forwarded from the caller.
                    unsafe { copy(dir, typed, typed_len, t, packed, packed_len, pos, n) }?;
                    pos += n;
                }
            }
        }
    }
    Ok(pos)
}

/// Packs `count` instances of `ty` from `src` into `out` (`MPI_Pack`, MPI
/// 5.2): the type's byte displacement `d` of instance `i` is `src[i * extent
/// + d]`. Returns the packed bytes ([`pack_size`]). A displacement outside
/// `src`, or an `out` shorter than the packed size, is
/// [`Error::OutOfBounds`] (`MPI_ERR_ARG`); a malformed encoding is
/// [`Error::Intern`]. Types with negative displacements take
/// [`pack_into_at`].
pub fn pack_into(src: &[u8], count: usize, ty: &TypeRef<'_>, out: &mut [u8]) -> Result<usize, Error> {
    pack_into_at(src, 0, count, ty, out)
}

/// [`pack_into`] with the buffer address at `src[origin]`: displacement `d`
/// of instance `i` is `src[origin + i * extent + d]` (negative `d` allowed).
pub fn pack_into_at(
    src: &[u8],
    origin: usize,
    count: usize,
    ty: &TypeRef<'_>,
    out: &mut [u8],
) -> Result<usize, Error> {
    // SAFETY: `src` is only read (a pack never writes the typed side) and
    // `out` is borrowed exclusively; both are valid for their lengths.
    unsafe {
        walk(
            Dir::Pack,
            src.as_ptr() as *mut u8,
            src.len(),
            origin,
            count,
            ty,
            out.as_mut_ptr(),
            out.len(),
        )
    }
}

/// Unpacks `count` instances of `ty` from `packed` into `dst` (`MPI_Unpack`),
/// the inverse of [`pack_into`]; returns the bytes consumed.
pub fn unpack_from(packed: &[u8], count: usize, ty: &TypeRef<'_>, dst: &mut [u8]) -> Result<usize, Error> {
    unpack_from_at(packed, count, ty, dst, 0)
}

/// [`unpack_from`] with the buffer address at `dst[origin]`.
pub fn unpack_from_at(
    packed: &[u8],
    count: usize,
    ty: &TypeRef<'_>,
    dst: &mut [u8],
    origin: usize,
) -> Result<usize, Error> {
    // SAFETY: `packed` is only read in an unpack and `dst` is borrowed
    // exclusively; both valid for their lengths.
    unsafe {
        walk(
            Dir::Unpack,
            dst.as_mut_ptr(),
            dst.len(),
            origin,
            count,
            ty,
            packed.as_ptr() as *mut u8,
            packed.len(),
        )
    }
}

/// The walk of packed bytes `from..from + n` of `count` instances: the bytes
/// a pack would write at those positions, in `packed[..n]` (or read from
/// there by an unpack). Starts with a binary search for the unit, then
/// copies block by block.
///
/// # Safety
/// As for [`copy`], with `packed` valid for `n` bytes.
#[allow(clippy::too_many_arguments)]
unsafe fn walk_range(
    dir: Dir,
    typed: *mut u8,
    typed_len: usize,
    origin: usize,
    count: usize,
    ty: &TypeRef<'_>,
    from: u64,
    packed: *mut u8,
    n: u64,
) -> Result<(), Error> {
    let size = ty.size();
    let total = pack_size(count, ty)? as u64;
    let end = from.checked_add(n).ok_or(out_of_bounds(u64::MAX, 0))?;
    if end > total {
        return Err(out_of_bounds(end, total as usize));
    }
    if n == 0 {
        return Ok(());
    }
    let mut inst = from / size;
    let mut r = from % size;
    let units = ty.units();
    // The last unit whose packed bytes start at or before `r`.
    let (mut lo, mut hi) = (0usize, units);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ty.unit(mid)?.packed_off <= r {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut u = lo;
    let mut pos = from;
    while pos < end {
        if u >= units {
            return Err(BAD_ENCODING);
        }
        let unit = ty.unit(u)?;
        let bytes = unit
            .len
            .checked_mul(unit.count)
            .and_then(|x| x.checked_mul(unit.groups))
            .ok_or(BAD_ENCODING)?;
        let k = r.checked_sub(unit.packed_off).ok_or(BAD_ENCODING)?;
        if k >= bytes {
            u += 1;
            continue;
        }
        let b = k / unit.len;
        let off = k % unit.len;
        let (g, j) = (b / unit.count, b % unit.count);
        let disp = (g as i64)
            .checked_mul(unit.group_stride)
            .and_then(|x| x.checked_add((j as i64).checked_mul(unit.stride)?))
            .and_then(|x| x.checked_add(unit.disp))
            .and_then(|x| x.checked_add(off as i64))
            .ok_or(BAD_ENCODING)?;
        let m = (unit.len - off).min(end - pos);
        let t = typed_at(origin, inst, ty.extent(), disp, m, typed_len)?;
        // SAFETY: forwarded from the caller.
        unsafe {
            copy(
                dir,
                typed,
                typed_len,
                t,
                packed,
                n as usize,
                (pos - from) as usize,
                m as usize,
            )
        }?;
        pos += m;
        r += m;
        if r == size {
            inst += 1;
            r = 0;
            u = 0;
        }
    }
    Ok(())
}

/// The [`Mover`](crate::datatype::Mover) of every view: packs or unpacks
/// packed bytes `at..at + n` of `t` (bytes `skip + at..` of the whole
/// form: `t` may be a part).
///
/// # Safety
/// As for [`TypedBuffer::pack_range`] and [`TypedBuffer::unpack_range`].
pub(crate) unsafe fn move_range(t: &TypedBuffer, pack: bool, at: u64, other: *mut u8, n: u64) -> bool {
    let at = at + t.skip as u64;
    // SAFETY: forwarded from the caller.
    unsafe {
        if pack {
            t.pack_range(at, other, n)
        } else {
            t.unpack_range(at, other, n)
        }
    }
    .is_ok()
}

impl TypedBuffer {
    /// The type of the buffer.
    ///
    /// # Safety
    /// The encoding the buffer was made with is alive and unwritten.
    unsafe fn ty(&self) -> Result<TypeRef<'_>, Error> {
        // SAFETY: made from a live slice of `words_len` words (the caller
        // keeps it alive).
        let words = unsafe { core::slice::from_raw_parts(self.words, self.words_len) };
        TypeRef::new(words)
    }

    /// Packs bytes `from..from + n` of the buffer's packed form into `out`.
    ///
    /// # Safety
    /// The buffer and its encoding are alive (the view's borrow), `out` is
    /// valid for `n` bytes and written by nobody else.
    unsafe fn pack_range(&self, from: u64, out: *mut u8, n: u64) -> Result<(), Error> {
        // SAFETY: forwarded from the caller; a pack only reads the buffer.
        unsafe {
            walk_range(
                Dir::Pack,
                self.base,
                self.len,
                self.origin,
                self.count,
                &self.ty()?,
                from,
                out,
                n,
            )
        }
    }

    /// Unpacks `n` bytes at `src` as bytes `from..from + n` of the buffer's
    /// packed form.
    ///
    /// # Safety
    /// The buffer (borrowed exclusively by its view) and its encoding are
    /// alive; `src` is valid for `n` bytes.
    unsafe fn unpack_range(&self, from: u64, src: *const u8, n: u64) -> Result<(), Error> {
        // SAFETY: forwarded from the caller; an unpack only reads `src`.
        unsafe {
            walk_range(
                Dir::Unpack,
                self.base,
                self.len,
                self.origin,
                self.count,
                &self.ty()?,
                from,
                src as *mut u8,
                n,
            )
        }
    }
}

/// The unit that holds chunk `r` of an instance: the last unit whose
/// `first_chunk <= r` (binary search, units are in chunk order).
fn unit_of_chunk(ty: &TypeRef<'_>, r: u64) -> Result<Unit, Error> {
    let (mut lo, mut hi) = (0usize, ty.units());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ty.unit(mid)?.first_chunk <= r {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ty.unit(lo)
}

/// Which part of one cooperative walk this caller does: chunks `part, part +
/// parts, ...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Share {
    /// This caller's index, `0..parts`.
    pub part: u64,
    /// Callers sharing the walk (at least 1).
    pub parts: u64,
}

impl Share {
    /// The share of `world`'s rank: every rank of the world takes part.
    pub fn of_world(world: &World) -> Share {
        Share {
            part: world.rank() as u64,
            parts: world.size() as u64,
        }
    }

    /// The share of the calling rank inside its block (the block's ranks
    /// walk one buffer together).
    pub fn of_block() -> Share {
        let c = shim::coordinates();
        Share {
            part: c.thread as u64,
            parts: c.block_dim as u64,
        }
    }
}

/// The cooperative walk: this caller's chunks of `count` instances.
///
/// # Safety
/// As for [`copy`]; the other callers of the same walk write other chunks
/// (disjoint bytes of the written side as long as the type's blocks do not
/// overlap, which MPI requires of a receive type).
#[allow(clippy::too_many_arguments)]
unsafe fn walk_share(
    dir: Dir,
    typed: *mut u8,
    typed_len: usize,
    origin: usize,
    count: u64,
    ty: &TypeRef<'_>,
    packed: *mut u8,
    packed_len: usize,
    share: Share,
) -> Result<u64, Error> {
    if share.parts == 0 || share.part >= share.parts {
        return Err(out_of_bounds(share.part, share.parts as usize));
    }
    let total = pack_size(count as usize, ty)?;
    if total > packed_len {
        return Err(out_of_bounds(total as u64, packed_len));
    }
    let h = *ty.header();
    let cpi = h.chunks_per_instance;
    let chunks = count.checked_mul(cpi).ok_or(out_of_bounds(u64::MAX, 0))?;
    let cb = h.chunk_bytes;
    let mut moved = 0u64;
    let mut g = share.part;
    while g < chunks {
        let inst = g.checked_div(cpi).ok_or(BAD_ENCODING)?;
        let r = g.checked_rem(cpi).ok_or(BAD_ENCODING)?;
        let unit = unit_of_chunk(ty, r)?;
        let per_block = ceil_div(unit.len, cb);
        let per_group = per_block.checked_mul(unit.count).ok_or(BAD_ENCODING)?;
        if per_block == 0 || r < unit.first_chunk {
            return Err(BAD_ENCODING);
        }
        let k = r - unit.first_chunk;
        let grp = k.checked_div(per_group).ok_or(BAD_ENCODING)?;
        let k = k.checked_rem(per_group).ok_or(BAD_ENCODING)?;
        let j = k.checked_div(per_block).ok_or(BAD_ENCODING)?;
        let c = k.checked_rem(per_block).ok_or(BAD_ENCODING)?;
        let off = c.checked_mul(cb).ok_or(BAD_ENCODING)?;
        let n = cb.min(unit.len.saturating_sub(off));
        let disp = (grp as i64)
            .checked_mul(unit.group_stride)
            .and_then(|x| x.checked_add((j as i64).checked_mul(unit.stride)?))
            .and_then(|x| x.checked_add(unit.disp))
            .and_then(|x| x.checked_add(off as i64))
            .ok_or(BAD_ENCODING)?;
        let t = typed_at(origin, inst, ty.extent(), disp, n, typed_len)?;
        let p = inst
            .checked_mul(h.size)
            .and_then(|x| x.checked_add(unit.packed_off))
            .and_then(|x| {
                x.checked_add(
                    grp.checked_mul(unit.count)?
                        .checked_add(j)?
                        .checked_mul(unit.len)?,
                )
            })
            .and_then(|x| x.checked_add(off))
            .ok_or(BAD_ENCODING)?;
        // SAFETY: forwarded from the caller.
        unsafe {
            copy(
                dir, typed, typed_len, t, packed, packed_len, p as usize, n as usize,
            )
        }?;
        moved += n;
        g = match g.checked_add(share.parts) {
            Some(x) => x,
            None => break,
        };
    }
    Ok(moved)
}

/// This caller's share of packing `count` instances of `ty` from `src` into
/// `out`, both in device-global memory: with every caller of `share.parts`
/// done, `out` holds the whole packed buffer. Returns the bytes this caller
/// moved. `origin` is the buffer address's index in `src`.
#[doc(hidden)]
pub fn pack_share(
    src: &GlobalSlice<u8>,
    origin: usize,
    count: u64,
    ty: &TypeRef<'_>,
    out: &GlobalSlice<u8>,
    share: Share,
) -> Result<u64, Error> {
    // SAFETY: `GlobalSlice`'s contract makes both valid for their lengths;
    // `src` is only read and each caller writes only its own chunks of `out`.
    unsafe {
        walk_share(
            Dir::Pack,
            src.addr() as *mut u8,
            src.len(),
            origin,
            count,
            ty,
            out.addr() as *mut u8,
            out.len(),
            share,
        )
    }
}

/// This caller's share of unpacking `count` instances of `ty` from `packed`
/// into `dst` (the inverse of [`pack_share`]; the type's blocks must not
/// overlap, as MPI requires of a receive type).
#[doc(hidden)]
pub fn unpack_share(
    packed: &GlobalSlice<u8>,
    count: u64,
    ty: &TypeRef<'_>,
    dst: &GlobalSlice<u8>,
    origin: usize,
    share: Share,
) -> Result<u64, Error> {
    // SAFETY: as in `pack_share`, with `dst` the written side.
    unsafe {
        walk_share(
            Dir::Unpack,
            dst.addr() as *mut u8,
            dst.len(),
            origin,
            count,
            ty,
            packed.addr() as *mut u8,
            packed.len(),
            share,
        )
    }
}

/// Bytes of the block-shared scratch one tile may use
/// ([`shim::SHARED_BLOCK_BYTES`]).
#[doc(hidden)]
pub const TILE_BYTES: u64 = shim::SHARED_BLOCK_BYTES as u64;

/// Longest block (element) the tiled walk moves, in bytes.
#[doc(hidden)]
pub const TILE_MAX_LEN: u64 = 16;

/// Bytes of a DRAM sector: a direct walk whose consecutive blocks lie at
/// least this far apart touches one sector per block.
#[doc(hidden)]
pub const SECTOR_BYTES: i64 = 32;

/// The tiled walk's view of a one-unit type: `count` instances of `groups`
/// groups of `cols` blocks of `len` bytes, seen as a matrix of `rows =
/// count * groups` rows (row `o` is group `o % groups` of instance `o /
/// groups`) and `cols` columns. The packed buffer holds it row by row; in
/// the typed buffer a row's blocks lie `stride` apart, so a direct walk
/// (consecutive ranks, consecutive packed blocks) reads or writes the typed
/// side `stride` bytes apart, while consecutive rows are `row_step` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct TileShape {
    /// The type's one unit.
    pub unit: Unit,
    /// Bytes of one element (the unit's block length, `1..=16`).
    pub len: u64,
    /// Elements on a side of a square tile: the largest power of two up to
    /// 32 with `side * side * len <= TILE_BYTES`.
    pub side: u64,
    /// Rows: `count * groups`.
    pub rows: u64,
    /// Columns: blocks of a group.
    pub cols: u64,
    /// Bytes between the typed addresses of consecutive rows inside one
    /// instance (`group_stride`, or the extent when the unit has one group).
    pub row_step: i64,
}

impl TileShape {
    /// The shape of `count` instances of `ty` when the tiled walk can move
    /// them: one unit, blocks of 1 to [`TILE_MAX_LEN`] bytes, at least two
    /// rows and two columns. `None` otherwise (the direct walk moves every
    /// type).
    pub fn of(ty: &TypeRef<'_>, count: u64) -> Option<TileShape> {
        if ty.units() != 1 {
            return None;
        }
        let unit = ty.unit(0).ok()?;
        let rows = count.checked_mul(unit.groups)?;
        if unit.len == 0 || unit.len > TILE_MAX_LEN || rows < 2 || unit.count < 2 {
            return None;
        }
        let mut side = 32u64;
        while side * side * unit.len > TILE_BYTES {
            side /= 2;
        }
        let row_step = if unit.groups > 1 {
            unit.group_stride
        } else {
            ty.extent()
        };
        Some(TileShape {
            unit,
            len: unit.len,
            side,
            rows,
            cols: unit.count,
            row_step,
        })
    }

    /// The selection rule: tiles beat direct access when the direct walk is
    /// uncoalesced on the typed side (consecutive blocks of a row at least a
    /// sector apart) and a tile's column is one contiguous run there
    /// (consecutive rows exactly one block apart: a transpose, the columns
    /// of a matrix).
    pub fn profitable(&self) -> bool {
        self.row_step == self.len as i64 && self.unit.stride.unsigned_abs() >= SECTOR_BYTES as u64
    }

    /// Tiles: `ceil(rows / side) * ceil(cols / side)`.
    pub fn tiles(&self) -> Option<u64> {
        ceil_div(self.rows, self.side).checked_mul(ceil_div(self.cols, self.side))
    }

    /// Typed byte index of element (`o`, `j`) (`origin` is the buffer
    /// address's index), checked to lie inside `typed_len` bytes.
    fn typed_index(
        &self,
        ty: &TypeRef<'_>,
        origin: usize,
        o: u64,
        j: u64,
        typed_len: usize,
    ) -> Result<usize, Error> {
        let inst = o / self.unit.groups;
        let g = o % self.unit.groups;
        let disp = (g as i64)
            .checked_mul(self.unit.group_stride)
            .and_then(|x| x.checked_add((j as i64).checked_mul(self.unit.stride)?))
            .and_then(|x| x.checked_add(self.unit.disp))
            .ok_or(BAD_ENCODING)?;
        typed_at(origin, inst, ty.extent(), disp, self.len, typed_len)
    }

    /// Packed byte index of element (`o`, `j`).
    fn packed_index(&self, ty: &TypeRef<'_>, o: u64, j: u64) -> Result<usize, Error> {
        let inst = o / self.unit.groups;
        let g = o % self.unit.groups;
        inst.checked_mul(ty.size())
            .and_then(|x| x.checked_add(self.unit.packed_off))
            .and_then(|x| x.checked_add(g.checked_mul(self.cols)?.checked_add(j)?.checked_mul(self.len)?))
            .filter(|&b| b <= usize::MAX as u64)
            .map(|b| b as usize)
            .ok_or(BAD_ENCODING)
    }
}

/// Which walk the whole-GPU engine runs ([`PackArgs::path`]).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum PackPath {
    /// Every rank takes its chunks (`pack_share`).
    Direct = 0,
    /// Every block moves tiles through its shared scratch (`pack_tiles`).
    Tiled = 1,
}

/// One side of a tile phase: element `e` of `side * side`, in the order
/// that keeps consecutive ranks on consecutive addresses of the side it
/// touches (`typed`: down a column, consecutive rows; packed: along a row).
/// Returns (row, column) inside the tile.
fn tile_element(e: u64, side: u64, typed: bool) -> (u64, u64) {
    if typed {
        (e % side, e / side)
    } else {
        (e / side, e % side)
    }
}

/// Byte offset of tile element (`r`, `c`) in the shared scratch: row `r`,
/// column `c ^ r` (an XOR swizzle: a column's elements fall in different
/// banks without padding, which the scratch has no room for).
fn tile_slot(r: u64, c: u64, side: u64, len: u64) -> usize {
    ((r * side + (c ^ r)) * len) as usize
}

/// The tiled walk of one rank: its block moves tiles `block, block +
/// blocks, ...`; for each, the block's ranks copy the tile from the read
/// side into the shared scratch (coalesced on that side), meet at a block
/// barrier, copy it out to the written side (coalesced there), and meet
/// again before the scratch is reused. Every rank of a block runs the same
/// number of barriers whatever fails: an element that fails records the
/// first error and the walk goes on, so no rank waits for one that left.
///
/// # Safety
/// As for [`copy`]; every rank of the calling block calls this with the
/// same arguments (the barriers), the other blocks of the world write other
/// tiles, and nothing else uses the block's shared scratch meanwhile.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn walk_tiles(
    dir: Dir,
    typed: *mut u8,
    typed_len: usize,
    origin: usize,
    count: u64,
    ty: &TypeRef<'_>,
    packed: *mut u8,
    packed_len: usize,
) -> Result<u64, Error> {
    let total = pack_size(count as usize, ty)?;
    if total > packed_len {
        return Err(out_of_bounds(total as u64, packed_len));
    }
    let s = TileShape::of(ty, count).ok_or(BAD_ENCODING)?;
    let tiles = s.tiles().ok_or(BAD_ENCODING)?;
    let across = ceil_div(s.cols, s.side);
    let c = shim::coordinates();
    let scratch = shim::shared_block::<{ shim::SHARED_BLOCK_BYTES }>();
    let mut first: Result<(), Error> = Ok(());
    let mut moved = 0u64;
    let mut t = c.block as u64;
    while t < tiles {
        let (r0, c0) = ((t / across) * s.side, (t % across) * s.side);
        for phase in 0..2u32 {
            // Phase 0 reads the read side into the scratch, phase 1 writes
            // the scratch to the written side.
            let typed_side = (phase == 0) == (dir == Dir::Pack);
            let mut e = c.thread as u64;
            while e < s.side * s.side {
                let (r, col) = tile_element(e, s.side, typed_side);
                let (o, j) = (r0 + r, c0 + col);
                if o < s.rows && j < s.cols {
                    let at = if typed_side {
                        s.typed_index(ty, origin, o, j, typed_len)
                    } else {
                        s.packed_index(ty, o, j)
                    };
                    let slot = tile_slot(r, col, s.side, s.len);
                    let done = at.and_then(|a| {
                        let (buf, buf_len) = if typed_side {
                            (typed, typed_len)
                        } else {
                            (packed, packed_len)
                        };
                        if a.checked_add(s.len as usize).is_none_or(|end| end > buf_len) {
                            return Err(out_of_bounds(a as u64 + s.len, buf_len));
                        }
                        // SAFETY: `a .. a + len` lies in the buffer (checked
                        // above, valid by the caller's contract); the slot
                        // lies in the scratch (`side * side * len <=
                        // TILE_BYTES`, `c ^ r < side`); in phase 0 only this
                        // rank writes the slot, in phase 1 only it writes
                        // `a .. a + len` (the tiles of the world are
                        // disjoint and the barrier below orders the phases).
                        unsafe {
                            if phase == 0 {
                                shim::copy_bytes(scratch.add(slot), buf.add(a), s.len as usize);
                            } else {
                                shim::copy_bytes(buf.add(a), scratch.add(slot), s.len as usize);
                            }
                        }
                        Ok(())
                    });
                    match done {
                        Ok(()) if phase == 1 => moved += s.len,
                        Ok(()) => {}
                        Err(err) => {
                            if first.is_ok() {
                                first = Err(err);
                            }
                        }
                    }
                }
                e += c.block_dim as u64;
            }
            // The block's scratch writes (phase 0) before its reads (phase
            // 1), and those reads before the next tile's writes.
            shim::block_barrier();
        }
        t += c.grid_dim as u64;
    }
    first.map(|()| moved)
}

/// This rank's share of packing `count` instances of `ty` through shared
/// memory tiles ([`TileShape`]); with every rank of every block done, `out`
/// holds the whole packed buffer, as after [`pack_share`]. Every rank of the
/// calling block must call it with the same arguments (it meets them at
/// block barriers). A type without a tile shape is [`Error::Intern`].
#[doc(hidden)]
pub fn pack_tiles(
    src: &GlobalSlice<u8>,
    origin: usize,
    count: u64,
    ty: &TypeRef<'_>,
    out: &GlobalSlice<u8>,
) -> Result<u64, Error> {
    // SAFETY: as in `pack_share`; the blocks' tiles are disjoint.
    unsafe {
        walk_tiles(
            Dir::Pack,
            src.addr() as *mut u8,
            src.len(),
            origin,
            count,
            ty,
            out.addr() as *mut u8,
            out.len(),
        )
    }
}

/// The inverse of [`pack_tiles`] (the type's blocks must not overlap).
#[doc(hidden)]
pub fn unpack_tiles(
    packed: &GlobalSlice<u8>,
    count: u64,
    ty: &TypeRef<'_>,
    dst: &GlobalSlice<u8>,
    origin: usize,
) -> Result<u64, Error> {
    // SAFETY: as in `unpack_share`; the blocks' tiles are disjoint.
    unsafe {
        walk_tiles(
            Dir::Unpack,
            dst.addr() as *mut u8,
            dst.len(),
            origin,
            count,
            ty,
            packed.addr() as *mut u8,
            packed.len(),
        )
    }
}

/// [`PackArgs::direction`]: pack.
#[doc(hidden)]
pub const PACK: u32 = 0;
/// [`PackArgs::direction`]: unpack.
#[doc(hidden)]
pub const UNPACK: u32 = 1;

/// Arguments of the whole-GPU pack kernel [`gpu_mpi_pack`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[doc(hidden)]
pub struct PackArgs {
    /// The committed type's encoding.
    pub ty: GlobalSlice<u64>,
    /// The typed buffer (read by a pack, written by an unpack).
    pub typed: GlobalSlice<u8>,
    /// The packed buffer (written by a pack, read by an unpack).
    pub packed: GlobalSlice<u8>,
    /// Instances.
    pub count: u64,
    /// Index of the buffer address in `typed`.
    pub origin: u64,
    /// [`PACK`] or [`UNPACK`].
    pub direction: u32,
    /// The walk: a [`PackPath`] as `u32` (`Direct` 0, `Tiled` 1).
    pub path: u32,
}

/// The whole-GPU pack and unpack: every rank of the world takes its share
/// ([`Share::of_world`]) of the walk `args` describe.
#[doc(hidden)]
pub fn gpu_mpi_pack(world: &World, args: &PackArgs) -> Result<(), Error> {
    // SAFETY: the host does not write the encoding during the launch.
    let ty = unsafe { TypeRef::from_global(&args.ty) }?;
    let share = Share::of_world(world);
    if args.path == PackPath::Tiled as u32 {
        // Uniform over the world: every rank takes the same branch.
        return match args.direction {
            PACK => pack_tiles(&args.typed, args.origin as usize, args.count, &ty, &args.packed),
            _ => unpack_tiles(&args.packed, args.count, &ty, &args.typed, args.origin as usize),
        }
        .map(|_| ());
    }
    match args.direction {
        PACK => pack_share(
            &args.typed,
            args.origin as usize,
            args.count,
            &ty,
            &args.packed,
            share,
        ),
        _ => unpack_share(
            &args.packed,
            args.count,
            &ty,
            &args.typed,
            args.origin as usize,
            share,
        ),
    }?;
    Ok(())
}

/// Launch descriptor of [`gpu_mpi_pack`], used by the host's `Device::pack`
/// and `Device::unpack`. On the emulator it runs as is; on a GPU the PTX of
/// the program's kernel crate must hold the entry point, which
/// [`pack_kernels!`](crate::pack_kernels) adds.
#[doc(hidden)]
pub static PACK_KERNEL: crate::kernel::Kernel<PackArgs> = crate::kernel::Kernel {
    name: "gpu_mpi_pack",
    entry: |world: *mut u8, args: *const PackArgs| {
        // SAFETY: the launcher upholds `rank_main`'s contract.
        unsafe { crate::kernel::rank_main(world, args, gpu_mpi_pack) }
    },
};

/// Adds the whole-GPU pack kernel's PTX entry point (`gpu_mpi_pack`) to the
/// kernel crate that invokes it, for `Device::pack` and `Device::unpack` on
/// a GPU. Kernel crates that do not invoke it carry no pack code in their
/// PTX (the link step keeps only exported entry points).
///
/// ```ignore
/// gpu_mpi_device::pack_kernels!();
/// ```
#[macro_export]
macro_rules! pack_kernels {
    () => {
        const _: () = {
            use $crate::derived::gpu_mpi_pack;
            $crate::__kernel_entry!(gpu_mpi_pack, $crate::derived::PackArgs);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_packs_its_blocks() {
        let enc = vector::<u32>(3, 2, 4);
        let ty = TypeRef::new(&enc).unwrap();
        assert_eq!(ty.size(), 24);
        assert_eq!(ty.extent(), 40);
        let src: [u8; 48] = core::array::from_fn(|i| i as u8);
        let mut out = [0u8; 24];
        assert_eq!(pack_into(&src, 1, &ty, &mut out), Ok(24));
        assert_eq!(&out[..8], &src[..8]);
        assert_eq!(&out[8..16], &src[16..24]);
        assert_eq!(&out[16..], &src[32..40]);
        let mut back = [0u8; 48];
        assert_eq!(unpack_from(&out, 1, &ty, &mut back), Ok(24));
        assert_eq!(&back[16..24], &src[16..24]);
        assert_eq!(back[8], 0);
    }

    #[test]
    fn short_buffers_and_bad_words_are_errors() {
        let enc = subarray_2d::<f64>([4, 4], [2, 2], [1, 1]);
        let ty = TypeRef::new(&enc).unwrap();
        let src = [0u8; 128];
        let mut out = [0u8; 31];
        assert_eq!(
            pack_into(&src, 1, &ty, &mut out).unwrap_err().class(),
            crate::ErrorClass::Arg
        );
        let mut out = [0u8; 64];
        assert!(pack_into(&src[..64], 2, &ty, &mut out).is_err());
        assert_eq!(TypeRef::new(&enc[..5]).unwrap_err(), Error::Intern);
        let mut bad = enc;
        bad[6] = 1000;
        assert_eq!(TypeRef::new(&bad).unwrap_err(), Error::Intern);
    }
}
