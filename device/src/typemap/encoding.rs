//! The encoding of a committed derived datatype: its header, work units and
//! signature words, and the const constructors ([`vector`], [`subarray_2d`])
//! that write the same words as the host's commit, in a kernel.

use crate::datatype::{Datatype, Equivalence};
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

pub(crate) const fn ceil_div(a: u64, b: u64) -> u64 {
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
