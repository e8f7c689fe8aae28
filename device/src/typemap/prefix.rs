//! Signature prefixes (MPI 4.1 §3.3.1: a receive takes a message whose type
//! signature is a prefix of its own, `count` instances of its type): a
//! hash of a sequence of primitives that the sender of a heterogeneous
//! view puts in its slot's header ([`TypeRef::message_hash`]) and that a
//! receive of another datatype id compares with the hash of its own
//! signature cut to the message's length ([`TypeRef::prefix_hash`]).
//!
//! The hash is a polynomial in [`X`] modulo the prime `2^31 - 1` over the
//! primitives' ids, in order: `H(a_1 .. a_n) = a_1 X^(n-1) + ... + a_n`.
//! A sequence is its hash and `X^n` ([`Sequence`]), so two sequences
//! concatenate in two multiplications (`H(AB) = H(A) X^|B| + H(B)`), and
//! a run of `c` equal primitives, or `count` instances of a type, costs
//! `O(log c)` ([`Sequence::repeat`]): equal sequences hash equally however
//! their runs are cut, and neither side walks more than the signature's
//! runs. Two different sequences of at most `n` primitives share a hash
//! for at most `n` of the `2^31 - 1` values `X` could take; a collision
//! lets a message that is no prefix through (its bytes still bounded by
//! the receive's packed size).

use super::typeref::TypeRef;
use crate::datatype::{primitive_size, ID_BYTE};

/// The modulus, the prime `2^31 - 1`.
const P: u64 = (1 << 31) - 1;
/// The polynomial's variable: a fixed value in `2..P`, the same on every
/// rank (any would do).
const X: u64 = 0x2545_f491 % P;

/// Bit 31 of a slot's signature word: the low 31 bits are the hash of
/// the message's primitive sequence. A word without it carries no hash.
pub(crate) const HASHED: u32 = 1 << 31;

/// `a · b mod P` for `a, b < P` (the product fits 62 bits; `2^31 ≡ 1`).
const fn mul(a: u64, b: u64) -> u64 {
    let x = a * b;
    let r = (x & P) + (x >> 31);
    let r = (r & P) + (r >> 31);
    if r >= P {
        r - P
    } else {
        r
    }
}

/// `a + b mod P` for `a, b < P`.
const fn add(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= P {
        s - P
    } else {
        s
    }
}

/// A sequence of primitives as the hash needs it: its hash and `X` to the
/// power of its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sequence {
    hash: u64,
    power: u64,
}

impl Sequence {
    /// No primitive.
    pub(crate) const EMPTY: Sequence = Sequence { hash: 0, power: 1 };

    /// One primitive of datatype `id` (ids are below `P` and not 0, so a
    /// leading primitive always counts).
    pub(crate) const fn primitive(id: u32) -> Sequence {
        Sequence {
            hash: id as u64 % P,
            power: X,
        }
    }

    /// This sequence followed by `next`.
    pub(crate) const fn then(self, next: Sequence) -> Sequence {
        Sequence {
            hash: add(mul(self.hash, next.power), next.hash),
            power: mul(self.power, next.power),
        }
    }

    /// This sequence `n` times, in `O(log n)` concatenations (the pieces
    /// are all repetitions of one sequence, so their order is free).
    pub(crate) const fn repeat(self, n: u64) -> Sequence {
        let mut out = Sequence::EMPTY;
        let mut piece = self;
        let mut n = n;
        while n > 0 {
            if n & 1 == 1 {
                out = out.then(piece);
            }
            piece = piece.then(piece);
            n >>= 1;
        }
        out
    }

    /// The slot word of a message of this sequence: [`HASHED`] and the hash.
    pub(crate) const fn word(self) -> u32 {
        HASHED | self.hash as u32
    }
}

impl TypeRef<'_> {
    /// Signature run `i` as a sequence with its primitive's size; `None`
    /// for an id that is no primitive (a malformed encoding) or bytes.
    fn run_sequence(&self, i: usize) -> Option<(u32, u64, u64)> {
        let (id, count) = self.signature_run(i).ok()?;
        let size = primitive_size(id) as u64;
        (size != 0 && id != ID_BYTE).then_some((id, count, size))
    }

    /// The sequence of one instance's signature.
    fn instance_sequence(&self) -> Option<Sequence> {
        let mut s = Sequence::EMPTY;
        for i in 0..self.header().sig_runs as usize {
            let (id, count, _) = self.run_sequence(i)?;
            s = s.then(Sequence::primitive(id).repeat(count));
        }
        Some(s)
    }

    /// The slot word of a message of `count` instances of this type: the
    /// hash of its whole primitive sequence with [`HASHED`]; 0 (no hash)
    /// when a run is not of a primitive.
    pub(crate) fn message_hash(&self, count: u64) -> u32 {
        self.instance_sequence().map_or(0, |s| s.repeat(count).word())
    }

    /// The slot word ([`TypeRef::message_hash`]'s form) of the first
    /// `bytes` bytes of the packed form of `count` instances: `None` when
    /// they end inside a primitive or go beyond the `count` instances.
    pub(crate) fn prefix_hash(&self, count: u64, bytes: u64) -> Option<u32> {
        let size = self.size();
        if size == 0 {
            return (bytes == 0).then_some(Sequence::EMPTY.word());
        }
        let (whole, mut rest) = (bytes / size, bytes % size);
        if whole > count || (whole == count && rest > 0) {
            return None;
        }
        let mut s = if whole > 0 {
            self.instance_sequence()?.repeat(whole)
        } else {
            Sequence::EMPTY
        };
        let mut i = 0usize;
        while rest > 0 {
            let (id, run, size) = self.run_sequence(i)?;
            let n = (rest / size).min(run);
            if n < run && !rest.is_multiple_of(size) {
                return None;
            }
            s = s.then(Sequence::primitive(id).repeat(n));
            rest -= n * size;
            i += 1;
        }
        Some(s.word())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{ID_F64, ID_I32};
    use crate::typemap::encoding::{signature_word, HEADER_WORDS, MAGIC};
    use std::vec::Vec;
    extern crate std;

    /// The words of a type of `size` bytes whose signature is `runs`
    /// (no units: the prefix hashes read the header and the runs only).
    fn encoding(runs: &[(u32, u64)]) -> Vec<u64> {
        let size: u64 = runs.iter().map(|&(id, c)| primitive_size(id) as u64 * c).sum();
        let elements: u64 = runs.iter().map(|&(_, c)| c).sum();
        let mut w = std::vec![0u64; HEADER_WORDS];
        w[0] = MAGIC;
        w[1] = size;
        w[2] = size;
        w[5] = size;
        w[7] = runs.len() as u64;
        w[8] = 16;
        w[10] = elements;
        w.extend(runs.iter().map(|&(id, c)| signature_word(id, c)));
        w
    }

    fn seq(ids: &[u32]) -> Sequence {
        ids.iter()
            .fold(Sequence::EMPTY, |s, &id| s.then(Sequence::primitive(id)))
    }

    #[test]
    fn runs_and_repetitions_hash_as_their_primitives() {
        let (d, i) = (ID_F64, ID_I32);
        assert_eq!(Sequence::primitive(i).repeat(5), seq(&[i; 5]));
        assert_eq!(seq(&[d, i]).repeat(3), seq(&[d, i, d, i, d, i]));
        assert_eq!(
            Sequence::primitive(i)
                .repeat(2)
                .then(Sequence::primitive(i).repeat(3)),
            seq(&[i; 5])
        );
        assert_ne!(seq(&[d, i]), seq(&[i, d]));
        assert_ne!(seq(&[i]), seq(&[i, i]));
        assert_eq!(Sequence::primitive(i).repeat(0), Sequence::EMPTY);
        // Long runs: the power of X wraps the modulus.
        let long = Sequence::primitive(d).repeat(1 << 40);
        assert_eq!(long, Sequence::primitive(d).repeat(1 << 39).repeat(2));
    }

    #[test]
    fn a_prefix_hashes_as_the_message_it_is() {
        let (d, i) = (ID_F64, ID_I32);
        let di = encoding(&[(d, 1), (i, 1)]);
        let dii = encoding(&[(d, 1), (i, 2)]);
        let (di, dii) = (TypeRef::new(&di).unwrap(), TypeRef::new(&dii).unwrap());
        // {f64, i32} is the first 12 bytes of {f64, i32, i32}.
        assert_eq!(dii.prefix_hash(1, 12), Some(di.message_hash(1)));
        // {f64, i32} x 2 is not a prefix of {f64, i32, i32} x 2.
        assert_ne!(dii.prefix_hash(2, 24), Some(di.message_hash(2)));
        // Across instances: f64 i32 i32 f64 of {f64, i32, i32} x 3.
        let diid = encoding(&[(d, 1), (i, 2), (d, 1)]);
        let diid = TypeRef::new(&diid).unwrap();
        assert_eq!(dii.prefix_hash(3, 24), Some(diid.message_hash(1)));
        // Whole instances, and the empty message.
        assert_eq!(dii.prefix_hash(3, 32), Some(dii.message_hash(2)));
        assert_eq!(dii.prefix_hash(3, 0), Some(dii.message_hash(0)));
        // Inside a primitive, past the instances: no prefix.
        assert_eq!(dii.prefix_hash(1, 10), None);
        assert_eq!(dii.prefix_hash(1, 20), None);
        assert_eq!(dii.prefix_hash(2, 36), None);
        // A part of a run.
        let i5 = encoding(&[(i, 5), (d, 1)]);
        let i5 = TypeRef::new(&i5).unwrap();
        let i3 = encoding(&[(i, 3)]);
        assert_eq!(
            i5.prefix_hash(1, 12),
            Some(TypeRef::new(&i3).unwrap().message_hash(1))
        );
    }
}
