//! The tiled walk: a block's ranks move square tiles of a one-unit type
//! through the block's shared scratch ([`TileShape`]), coalesced on both
//! sides where the direct walk is not.

use crate::error::Error;
use crate::kernel::GlobalSlice;
use crate::shim;
use crate::typemap::{ceil_div, out_of_bounds, pack_size, typed_at, Dir, TypeRef, Unit, BAD_ENCODING};

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

/// Which walk the whole-GPU engine runs ([`PackArgs::path`](super::PackArgs::path)).
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
/// As for [`copy`](crate::typemap::copy); every rank of the calling block calls this with the
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
/// holds the whole packed buffer, as after [`pack_share`](super::pack_share). Every rank of the
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
