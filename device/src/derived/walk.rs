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
pub(super) enum Dir {
    Pack,
    Unpack,
}

/// Where block bytes of instance `inst` lie in the typed buffer: `origin +
/// inst * extent + disp`, checked to be a range inside `len` bytes.
pub(super) fn typed_at(
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
pub(super) unsafe fn copy(
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

/// The [`Extends`](crate::datatype::Extends) of every view: whether a
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

/// The [`Mover`](crate::datatype::Mover) of a receive view whose `count`
/// instances are one run of bytes (a contiguous heterogeneous type, typed
/// only so that a receive reaches its encoding: [`extends`]): packed byte
/// `k` is byte `k` of `t.base[..t.len]`, copied in one piece as a plain
/// buffer's bytes are.
///
/// # Safety
/// As for [`move_range`].
pub(crate) unsafe fn move_run(t: &TypedBuffer, pack: bool, at: u64, other: *mut u8, n: u64) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derived::encoding::{subarray_2d, vector};

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
