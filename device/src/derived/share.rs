//! The cooperative walk: each caller of a [`Share`] packs or unpacks its
//! chunks of one buffer (consecutive callers, consecutive chunks).

use crate::communicator::{Communicator, World};
use crate::error::Error;
use crate::kernel::GlobalSlice;
use crate::shim;
use crate::typemap::{ceil_div, copy, out_of_bounds, pack_size, typed_at, Dir, TypeRef, Unit, BAD_ENCODING};

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
