//! The sequential walks: pack and unpack of whole buffers (`MPI_Pack`,
//! `MPI_Unpack`) and of a range of packed bytes (the mover of every view),
//! and the copy every walk goes through.

use super::prefix::HASHED;
use super::typeref::{out_of_bounds, TypeRef, BAD_ENCODING};
use crate::datatype::TypedBuffer;
use crate::error::Error;
use crate::shim;

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
pub(crate) enum Dir {
    Pack,
    Unpack,
}

/// Where block bytes of instance `inst` lie in the typed buffer: `origin +
/// inst * extent + disp`, checked to be a range inside `len` bytes.
pub(crate) fn typed_at(
    origin: usize,
    inst: u64,
    extent: i64,
    disp: i64,
    n: u64,
    len: usize,
) -> Result<usize, Error> {
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
pub(crate) unsafe fn copy(
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
/// there by an unpack). Finds the unit of the first byte once (a binary
/// search), divides only where it enters a unit (to find its first block
/// there), then steps from block to block by adding strides: the loop
/// keeps few values live (the walk is in the call graph of every kernel
/// that moves a view, and ptxas gives a kernel the registers of its
/// hungriest function).
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
    // `size > 0`: `n > 0` bytes lie inside `count * size`.
    let inst = from / size;
    let r = from % size;
    let units = ty.units();
    if units == 0 {
        return Err(BAD_ENCODING);
    }
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
    // Bytes of unit `u`'s packed form before the walk's next byte.
    let mut k = r.checked_sub(ty.unit(u)?.packed_off).ok_or(BAD_ENCODING)?;
    // Where instance `inst` starts in the typed buffer, and the instances
    // left to the walk (with this one): a guard against an encoding whose
    // units do not cover the type's size.
    let mut instance = (inst as i64)
        .checked_mul(ty.extent())
        .and_then(|x| x.checked_add(origin as i64))
        .ok_or(BAD_ENCODING)?;
    let mut instances = (count as u64).checked_sub(inst).ok_or(BAD_ENCODING)?;
    let mut at = packed;
    let mut left = n;
    loop {
        // The unit's words in place, one bounds check for all eight. By
        // index, not as a `Unit` (`ty.unit(u)`): with its named fields
        // rsmpi's kernels spilled 23,238 -> 27,784 B in all (2026-12-05).
        let w = ty.unit_words(u)?;
        let bytes = w[2]
            .checked_mul(w[3])
            .and_then(|x| x.checked_mul(w[5]))
            .ok_or(BAD_ENCODING)?;
        if k < bytes {
            // Block `b = g * count + j` of the unit (words 2 and 3: its
            // blocks' bytes and count), byte `off` of it.
            let b = k / w[2];
            let mut off = k % w[2];
            let (mut g, mut j) = (b / w[3], b % w[3]);
            let mut group = (g as i64)
                .checked_mul(w[4] as i64)
                .and_then(|x| x.checked_add(w[0] as i64))
                .and_then(|x| x.checked_add(instance))
                .ok_or(BAD_ENCODING)?;
            let mut block = (j as i64)
                .checked_mul(w[1] as i64)
                .and_then(|x| x.checked_add(group))
                .ok_or(BAD_ENCODING)?;
            loop {
                let m = (w[2] - off).min(left);
                let t = block
                    .checked_add(off as i64)
                    .filter(|&t| t >= 0)
                    .ok_or(out_of_bounds(0, typed_len))?;
                // SAFETY: forwarded from the caller: `at` has `left >= m`
                // bytes; `copy` checks the typed range.
                unsafe { copy(dir, typed, typed_len, t as usize, at, m as usize, 0, m as usize) }?;
                left -= m;
                if left == 0 {
                    return Ok(());
                }
                // SAFETY: `m < left` bytes of the `n` at `packed` were
                // walked; the next is inside them.
                at = unsafe { at.add(m as usize) };
                off = 0;
                j += 1;
                if j < w[3] {
                    block = block.checked_add(w[1] as i64).ok_or(BAD_ENCODING)?;
                } else {
                    g += 1;
                    if g == w[5] {
                        break;
                    }
                    j = 0;
                    group = group.checked_add(w[4] as i64).ok_or(BAD_ENCODING)?;
                    block = group;
                }
            }
            k = 0;
        } else {
            // An empty unit (or one a malformed encoding skips): its bytes
            // are not the walk's.
            k -= bytes;
        }
        u += 1;
        if u >= units {
            u = 0;
            instances -= 1;
            if instances == 0 {
                return Err(BAD_ENCODING);
            }
            instance = instance.checked_add(ty.extent()).ok_or(BAD_ENCODING)?;
        }
    }
}

/// The signature-prefix check of every typed receive: whether a
/// message of `bytes` bytes of datatype `id`, whose slot carried
/// `signature`, is a prefix of `t`'s signature (MPI 4.1 §3.3.1). A message
/// with a hash ([`HASHED`]: a heterogeneous view's) is compared with the
/// hash of `t`'s signature cut to `bytes`
/// ([`TypeRef::prefix_hash`](crate::derived::TypeRef::prefix_hash)); one
/// without is a prefix only when it is one primitive's and `t`'s packed
/// form starts with `bytes` bytes of that primitive, checked exactly
/// ([`TypeRef::starts_with_primitive`](crate::derived::TypeRef::starts_with_primitive)).
///
/// # Safety
/// `t`'s encoding words are alive and unwritten (borrowed by its view).
#[cfg_attr(not(feature = "views"), allow(dead_code))]
pub(crate) unsafe fn extends(t: &TypedBuffer, id: u32, bytes: u64, signature: u32) -> bool {
    // SAFETY: forwarded from the caller.
    let words = unsafe { core::slice::from_raw_parts(t.words, t.words_len) };
    let Ok(ty) = TypeRef::new(words) else {
        return false;
    };
    if signature & HASHED != 0 {
        ty.prefix_hash(t.count as u64, bytes) == Some(signature)
    } else {
        ty.starts_with_primitive(t.count as u64, id, bytes)
    }
}

/// Moves packed bytes `at..at + n` of a view's typed buffer to (`pack`)
/// or from `other`; false when the walk failed.
///
/// # Safety
/// The buffer and its encoding are alive (borrowed by their view, the
/// written side exclusively); `other` is valid for `n` bytes.
// One copy of the walker in a kernel, not one in every collective that
// moves a view's bytes.
#[inline(never)]
pub(crate) unsafe fn move_typed(t: &TypedBuffer, pack: bool, at: u64, other: *mut u8, n: u64) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe {
        if t.run {
            move_run(t, pack, at, other, n)
        } else {
            move_range(t, pack, at, other, n)
        }
    }
}

/// The walk of [`move_typed`] for a receive view whose `count`
/// instances are one run of bytes (a contiguous heterogeneous type, typed
/// only so that a receive reaches its encoding: [`extends`]): packed byte
/// `k` is byte `k` of `t.base[..t.len]`, copied in one piece as a plain
/// buffer's bytes are.
///
/// # Safety
/// As for [`move_range`].
unsafe fn move_run(t: &TypedBuffer, pack: bool, at: u64, other: *mut u8, n: u64) -> bool {
    let at = at + t.skip as u64;
    if at.checked_add(n).is_none_or(|end| end > t.len as u64) {
        return false;
    }
    // SAFETY: `at + n <= len` bytes of the run, which the view borrows
    // (exclusively when written); `other` holds `n` bytes (the caller).
    unsafe {
        let run = t.base.add(at as usize);
        if pack {
            shim::copy_wide(other, run, n as usize)
        } else {
            shim::copy_wide(run, other, n as usize)
        }
    }
    true
}

/// The walk of [`move_typed`] for a view that is not one run: packs or unpacks
/// packed bytes `at..at + n` of `t` (bytes `skip + at..` of the whole
/// form: `t` may be a part).
///
/// # Safety
/// `t`'s buffer and encoding are alive (the view's borrow; the buffer
/// borrowed exclusively when an unpack writes it); `other` is valid for `n`
/// bytes, written by nobody else when a pack writes it.
unsafe fn move_range(t: &TypedBuffer, pack: bool, at: u64, other: *mut u8, n: u64) -> bool {
    let dir = if pack { Dir::Pack } else { Dir::Unpack };
    // SAFETY: made from a live slice of `words_len` words (the caller
    // keeps it alive).
    let words = unsafe { core::slice::from_raw_parts(t.words, t.words_len) };
    let Ok(ty) = TypeRef::new(words) else {
        return false;
    };
    // SAFETY: forwarded from the caller; a pack only reads the buffer and
    // an unpack only reads `other`.
    unsafe {
        walk_range(
            dir,
            t.base,
            t.len,
            t.origin,
            t.count,
            &ty,
            at + t.skip as u64,
            other,
            n,
        )
    }
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typemap::encoding::{signature_word, subarray_2d, vector, Unit, HEADER_WORDS, MAGIC};
    extern crate std;
    use std::vec::Vec;

    /// A type of four units, 16 bytes, extent 40: 3 bytes at 2; two groups
    /// of three 2-byte blocks (stride 5, groups 20 apart) at 8; an empty
    /// unit (no commit writes one; the walks skip it); 1 byte at -1.
    fn four_units() -> Vec<u64> {
        let unit = |disp: i64,
                    stride: i64,
                    len: u64,
                    count: u64,
                    group_stride: i64,
                    groups: u64,
                    packed_off: u64| Unit {
            disp,
            stride,
            len,
            count,
            group_stride,
            groups,
            packed_off,
            first_chunk: 0,
        };
        let units = [
            unit(2, 0, 3, 1, 0, 1, 0),
            unit(8, 5, 2, 3, 20, 2, 3),
            unit(0, 0, 4, 0, 0, 1, 15),
            unit(-1, 0, 1, 1, 0, 1, 15),
        ];
        let mut w = std::vec![0u64; HEADER_WORDS];
        w[0] = MAGIC;
        w[1] = 16;
        w[2] = 40;
        w[6] = units.len() as u64;
        w[7] = 1;
        w[8] = 16;
        w[10] = 16;
        for u in &units {
            w.extend(u.to_words());
        }
        w.push(signature_word(crate::datatype::ID_BYTE, 16));
        w
    }

    #[test]
    fn every_range_moves_the_bytes_a_whole_walk_moves_there() {
        let enc = four_units();
        let ty = TypeRef::new(&enc).unwrap();
        // Three instances from byte 1 (the last unit's -1 is byte 0).
        let (origin, count, total) = (1usize, 3usize, 48usize);
        let src: Vec<u8> = (0..121).map(|i| i as u8).collect();
        let mut full = [0u8; 48];
        assert_eq!(pack_into_at(&src, origin, count, &ty, &mut full), Ok(total));
        // `src[i] == i`: packed byte `p` comes from typed byte `full[p]`.
        let payload: Vec<u8> = (0..total).map(|p| 0x80 | p as u8).collect();
        let mut dst = [0u8; 121];
        let typed = |base: *mut u8, skip: usize| TypedBuffer {
            words: enc.as_ptr(),
            words_len: enc.len(),
            base,
            len: 121,
            origin,
            count,
            packed: total - skip,
            skip,
            run: false,
        };
        for from in 0..=total {
            for n in 0..=total - from {
                let t = typed(src.as_ptr() as *mut u8, 0);
                let mut out = [0u8; 48];
                // SAFETY: `src` and `out` outlive the calls; `out` holds `n`.
                assert!(unsafe { move_typed(&t, true, from as u64, out.as_mut_ptr(), n as u64) });
                assert_eq!(out[..n], full[from..from + n], "pack of {from}..{}", from + n);
                dst.fill(0);
                let t = typed(dst.as_mut_ptr(), 0);
                let bytes = payload[from..].as_ptr() as *mut u8;
                // SAFETY: as above; an unpack only reads `payload`.
                assert!(unsafe { move_typed(&t, false, from as u64, bytes, n as u64) });
                let mut want = [0u8; 121];
                for p in from..from + n {
                    want[full[p] as usize] = payload[p];
                }
                assert_eq!(dst, want, "unpack of {from}..{}", from + n);
            }
        }
        // A part: packed byte 0 of the part is byte 5 of the whole.
        let t = typed(src.as_ptr() as *mut u8, 5);
        let mut out = [0u8; 43];
        // SAFETY: as above.
        assert!(unsafe { move_typed(&t, true, 0, out.as_mut_ptr(), 43) });
        assert_eq!(out[..], full[5..]);
        // Past the packed form, nothing moves.
        let t = typed(src.as_ptr() as *mut u8, 0);
        // SAFETY: as above.
        assert!(!unsafe { move_typed(&t, true, 40, out.as_mut_ptr(), 9) });
        // A buffer too short for the last instance.
        let short = TypedBuffer { len: 90, ..t };
        // SAFETY: as above; the walk checks `len` before any copy.
        assert!(!unsafe { move_typed(&short, true, 32, out.as_mut_ptr(), 16) });
    }

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
