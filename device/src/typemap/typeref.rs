//! [`TypeRef`]: a committed type's encoding read in place and checked once,
//! with its queries (size, extent, units, signature, elements).

use super::encoding::{signature_word, EncodingHeader, Unit, HEADER_WORDS, MAGIC, UNIT_WORDS};
use crate::datatype::{primitive_size, ID_BYTE, SIGNATURE_BIT};
use crate::error::Error;

/// A committed type's encoding, read in place (in device-global memory or
/// anywhere else): the words checked once when it is made.
#[derive(Clone, Copy, Debug)]
pub struct TypeRef<'a> {
    words: &'a [u64],
    // The first words themselves, not a copy: a copy is twelve words a
    // walk would keep in registers or local memory for the three it reads.
    header: &'a EncodingHeader,
}

/// The error a malformed encoding gives (`MPI_ERR_INTERN`: the words are not
/// what a commit writes).
pub(crate) const BAD_ENCODING: Error = Error::Intern;

fn word(words: &[u64], i: usize) -> Result<u64, Error> {
    words.get(i).copied().ok_or(BAD_ENCODING)
}

pub(crate) fn out_of_bounds(index: u64, len: usize) -> Error {
    Error::OutOfBounds {
        index: index.min(u32::MAX as u64) as u32,
        len: (len as u64).min(u32::MAX as u64) as u32,
    }
}

impl<'a> TypeRef<'a> {
    /// Reads an encoding's header and checks its shape (magic, lengths).
    pub fn new(words: &'a [u64]) -> Result<TypeRef<'a>, Error> {
        let h: &[u64; HEADER_WORDS] = words.first_chunk().ok_or(BAD_ENCODING)?;
        let header: &EncodingHeader = bytemuck::cast_ref(h);
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

    /// The encoding's words.
    pub fn words(&self) -> &'a [u64] {
        self.words
    }

    /// The header.
    pub fn header(&self) -> &'a EncodingHeader {
        self.header
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
        let w = self.unit_words(i)?;
        Ok(Unit {
            disp: w[0] as i64,
            stride: w[1] as i64,
            len: w[2],
            count: w[3],
            group_stride: w[4] as i64,
            groups: w[5],
            packed_off: w[6],
            first_chunk: w[7],
        })
    }

    /// Work unit `i`'s words, in [`Unit::to_words`]'s order, in place: one
    /// bounds check for all eight (the range walk reads them so).
    pub(super) fn unit_words(&self, i: usize) -> Result<&'a [u64; UNIT_WORDS], Error> {
        let b = i
            .checked_mul(UNIT_WORDS)
            .and_then(|x| x.checked_add(HEADER_WORDS))
            .ok_or(BAD_ENCODING)?;
        self.words
            .get(b..)
            .and_then(|w| w.first_chunk())
            .ok_or(BAD_ENCODING)
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
        let h = self.header;
        if h.size == 0 {
            return Some(0);
        }
        if h.units != 1 {
            return None;
        }
        let u = self.unit(0).ok()?;
        (u.len == h.size && u.count == 1 && u.groups == 1).then_some(u.disp)
    }

    /// Whether the first `bytes` bytes of the packed form of `count`
    /// instances are primitives of datatype `id` only, a whole number of
    /// them: a message of `id` whose signature is a prefix of this type's
    /// signature times `count` (MPI 4.1 §3.3.1), so a receive of this type
    /// takes it. `MPI_BYTE` is no primitive here (bytes match only bytes).
    /// More than one instance's bytes of `id` alone would make the whole
    /// signature `id`'s, whose signature id is `id` itself: this answers
    /// false for them, as for a message longer than `count` instances.
    pub fn starts_with_primitive(&self, count: u64, id: u32, bytes: u64) -> bool {
        let size = primitive_size(id) as u64;
        if id == ID_BYTE || size == 0 || !bytes.is_multiple_of(size) {
            return false;
        }
        if bytes == 0 {
            return true;
        }
        if count == 0 || bytes > self.header.size {
            return false;
        }
        let mut rest = bytes;
        let mut i = 0usize;
        while rest > 0 {
            if i as u64 >= self.header.sig_runs {
                return false;
            }
            match self.signature_run(i) {
                Ok((run_id, run)) if run_id == id => rest = rest.saturating_sub(run.saturating_mul(size)),
                _ => return false,
            }
            i += 1;
        }
        true
    }

    /// Primitive elements in the first `bytes` bytes of a packed message of
    /// this type (`MPI_Get_elements`, MPI 4.1 §5.1.11): whole instances
    /// times [`EncodingHeader::elements`] plus the primitives of the
    /// signature runs the rest covers; `None` (`MPI_UNDEFINED`) when the
    /// bytes end inside a primitive.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        let h = self.header;
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
