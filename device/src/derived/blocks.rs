//! Two typemaps walked side by side (the one-sided operations with
//! datatypes, MPI 4.1 §12.3): [`Blocks`] yields the contiguous blocks of
//! `count` instances of a type in packed order, [`zip_blocks`] cuts the
//! blocks of several sides into the pieces they share and hands each
//! piece's addresses over, so that the bytes move directly between the
//! buffers (no staging buffer); [`Signature`] compares type signatures.

use crate::datatype::{primitive_size, SIGNATURE_BIT, USER_BIT};
use crate::error::Error;
use crate::typemap::{typed_at, TypeRef, Unit, BAD_ENCODING};

/// The contiguous blocks of a buffer in packed order: one run of bytes,
/// or `count` instances of a type whose buffer address is byte `origin`
/// of `base[..len]`. Every block is checked to lie inside `base[..len]`.
pub(crate) struct Blocks<'t> {
    ty: Option<TypeRef<'t>>,
    base: *mut u8,
    len: usize,
    origin: usize,
    count: u64,
    inst: u64,
    unit: usize,
    group: u64,
    block: u64,
    /// Unit `unit`, loaded when the walk reaches it.
    current: Option<Unit>,
}

impl<'t> Blocks<'t> {
    /// The one run `base[..len]`.
    pub(crate) fn run(base: *mut u8, len: usize) -> Blocks<'t> {
        Blocks {
            ty: None,
            base,
            len,
            origin: 0,
            count: (len > 0) as u64,
            inst: 0,
            unit: 0,
            group: 0,
            block: 0,
            current: None,
        }
    }

    /// `count` instances of `ty`, the buffer address at byte `origin` of
    /// `base[..len]`.
    pub(crate) fn typed(
        ty: TypeRef<'t>,
        base: *mut u8,
        len: usize,
        origin: usize,
        count: usize,
    ) -> Blocks<'t> {
        Blocks {
            ty: Some(ty),
            base,
            len,
            origin,
            count: count as u64,
            inst: 0,
            unit: 0,
            group: 0,
            block: 0,
            current: None,
        }
    }

    /// The next block of at least one byte: its address and length.
    pub(crate) fn next_block(&mut self) -> Result<Option<(*mut u8, usize)>, Error> {
        let Some(ty) = self.ty else {
            if self.inst < self.count {
                self.inst += 1;
                return Ok(Some((self.base, self.len)));
            }
            return Ok(None);
        };
        loop {
            if self.inst >= self.count {
                return Ok(None);
            }
            if self.unit >= ty.units() {
                self.inst += 1;
                self.unit = 0;
                continue;
            }
            let u = match self.current {
                Some(u) => u,
                None => {
                    let u = ty.unit(self.unit)?;
                    self.current = Some(u);
                    u
                }
            };
            if self.group >= u.groups {
                self.unit += 1;
                self.group = 0;
                self.block = 0;
                self.current = None;
                continue;
            }
            if self.block >= u.count {
                self.group += 1;
                self.block = 0;
                continue;
            }
            let disp = (self.group as i64)
                .checked_mul(u.group_stride)
                .and_then(|x| x.checked_add((self.block as i64).checked_mul(u.stride)?))
                .and_then(|x| x.checked_add(u.disp))
                .ok_or(BAD_ENCODING)?;
            self.block += 1;
            if u.len == 0 {
                continue;
            }
            let at = typed_at(self.origin, self.inst, ty.extent(), disp, u.len, self.len)?;
            // `at + u.len <= self.len` (typed_at), so the block is inside
            // the buffer.
            return Ok(Some((self.base.wrapping_add(at), u.len as usize)));
        }
    }
}

/// Walks the blocks of `N` sides of equal packed size together and calls
/// `f` with the addresses of each piece they share (where none of them
/// has a block boundary) and its length, in packed order. Sides that end
/// at different lengths are [`Error::Intern`] (the signatures were
/// checked to match, so only a malformed encoding gets there).
pub(crate) fn zip_blocks<const N: usize>(
    sides: &mut [Blocks<'_>; N],
    mut f: impl FnMut([*mut u8; N], usize) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut at = [core::ptr::null_mut::<u8>(); N];
    let mut left = [0usize; N];
    loop {
        let mut ended = 0;
        for k in 0..N {
            if left[k] == 0 {
                match sides[k].next_block()? {
                    Some((p, n)) => (at[k], left[k]) = (p, n),
                    None => ended += 1,
                }
            }
        }
        if ended == N {
            return Ok(());
        }
        if ended != 0 {
            return Err(BAD_ENCODING);
        }
        let n = left.iter().copied().min().unwrap_or(0);
        f(at, n)?;
        for k in 0..N {
            at[k] = at[k].wrapping_add(n);
            left[k] -= n;
        }
    }
}

/// Whether every block of `count` instances of `ty`, displaced by
/// `offset` bytes, starts at a multiple of `align` (a power of two) and
/// has a length that is a multiple of `size`: checked on the units'
/// displacements and strides and the extent, before anything is written.
pub(crate) fn aligned(ty: &TypeRef<'_>, count: usize, offset: usize, align: usize, size: usize) -> bool {
    let a = align as i64;
    let ok = |x: i64| x.rem_euclid(a) == 0;
    if !offset.is_multiple_of(align) || (count > 1 && !ok(ty.extent())) {
        return false;
    }
    (0..ty.units()).all(|i| match ty.unit(i) {
        Ok(u) => {
            (u.len == 0 || u.len % size as u64 == 0)
                && ok(u.disp)
                && (u.count <= 1 || ok(u.stride))
                && (u.groups <= 1 || ok(u.group_stride))
        }
        Err(_) => false,
    })
}

/// A buffer's type signature (MPI 4.1 §3.3.1) as a one-sided operation
/// compares it with the target's (§12.3).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Signature<'t> {
    /// `elements` primitives of datatype `id`.
    Uniform {
        /// The primitive's datatype id.
        id: u32,
        /// How many.
        elements: u64,
    },
    /// `count` instances of a derived type.
    Typed(TypeRef<'t>, u64),
    /// `elements` elements of a user `#[repr(C)]` type, whose primitives
    /// the device does not know: it matches only an empty signature.
    Opaque {
        /// How many.
        elements: u64,
    },
}

impl<'t> Signature<'t> {
    /// The signature of `count` elements of datatype `id` (a `Pod`
    /// buffer's).
    pub(crate) fn of_elements(id: u32, count: usize) -> Signature<'t> {
        let elements = count as u64;
        if id & (USER_BIT | SIGNATURE_BIT) == 0 && primitive_size(id) != 0 {
            Signature::Uniform { id, elements }
        } else {
            Signature::Opaque { elements }
        }
    }

    /// Primitives in the signature (`None` on overflow).
    fn elements(&self) -> Option<u64> {
        match *self {
            Signature::Uniform { elements, .. } | Signature::Opaque { elements } => Some(elements),
            Signature::Typed(ty, count) => ty.header().elements.checked_mul(count),
        }
    }

    /// The primitive every element is of, if there is one.
    pub(crate) fn uniform(&self) -> Option<u32> {
        match *self {
            Signature::Uniform { id, .. } => Some(id),
            Signature::Typed(ty, _) => {
                let id = ty.signature_id();
                (id & SIGNATURE_BIT == 0).then_some(id)
            }
            Signature::Opaque { .. } => None,
        }
    }

    /// The datatype id an error names: the primitive's, or the type's
    /// signature id.
    pub(crate) fn id(&self) -> u32 {
        match *self {
            Signature::Uniform { id, .. } => id,
            Signature::Typed(ty, _) => ty.signature_id(),
            Signature::Opaque { .. } => USER_BIT,
        }
    }

    /// Whether `other` is the same sequence of primitives. Empty
    /// signatures match; two heterogeneous ones are compared run by run
    /// (`O(count × runs)` of each, unless they are the same type the same
    /// number of times).
    pub(crate) fn matches(&self, other: &Signature<'_>) -> bool {
        let n = self.elements();
        if n.is_none() || n != other.elements() {
            return false;
        }
        if n == Some(0) {
            return true;
        }
        match (self.uniform(), other.uniform()) {
            (Some(a), Some(b)) => a == b,
            (Some(_), None) | (None, Some(_)) => false,
            (None, None) => match (*self, *other) {
                (Signature::Typed(a, ca), Signature::Typed(b, cb)) => {
                    (ca == cb && a.signature_matches(&b)) || same_runs(Runs::new(a, ca), Runs::new(b, cb))
                }
                _ => false,
            },
        }
    }
}

/// The signature runs of `count` instances of a type, one after another.
struct Runs<'t> {
    ty: TypeRef<'t>,
    count: u64,
    inst: u64,
    run: usize,
}

impl<'t> Runs<'t> {
    fn new(ty: TypeRef<'t>, count: u64) -> Runs<'t> {
        Runs {
            ty,
            count,
            inst: 0,
            run: 0,
        }
    }

    /// The next run of at least one primitive: `(id, count)`; `Err` for a
    /// malformed encoding.
    fn next_run(&mut self) -> Result<Option<(u32, u64)>, Error> {
        let runs = self.ty.header().sig_runs as usize;
        loop {
            if self.inst >= self.count || runs == 0 {
                return Ok(None);
            }
            if self.run >= runs {
                self.inst += 1;
                self.run = 0;
                continue;
            }
            let r = self.ty.signature_run(self.run)?;
            self.run += 1;
            if r.1 > 0 {
                return Ok(Some(r));
            }
        }
    }
}

/// Whether two run sequences hold the same primitives in the same order,
/// however their runs are cut.
fn same_runs(mut a: Runs<'_>, mut b: Runs<'_>) -> bool {
    let (mut ra, mut rb) = ((0u32, 0u64), (0u32, 0u64));
    loop {
        if ra.1 == 0 {
            match a.next_run() {
                Ok(Some(r)) => ra = r,
                Ok(None) => return rb.1 == 0 && matches!(b.next_run(), Ok(None)),
                Err(_) => return false,
            }
        }
        if rb.1 == 0 {
            match b.next_run() {
                Ok(Some(r)) => rb = r,
                _ => return false,
            }
        }
        if ra.0 != rb.0 {
            return false;
        }
        let n = ra.1.min(rb.1);
        ra.1 -= n;
        rb.1 -= n;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::datatype::{ID_F64, ID_U32};
    use crate::typemap::vector;
    use std::vec::Vec;

    fn blocks(b: &mut Blocks<'_>, base: *mut u8) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        while let Some((p, n)) = b.next_block().unwrap() {
            out.push((p as usize - base as usize, n));
        }
        out
    }

    #[test]
    fn a_vector_yields_its_blocks_and_checks_the_buffer() {
        let enc = vector::<u32>(3, 2, 4);
        let ty = TypeRef::new(&enc).unwrap();
        let mut buf = [0u8; 128];
        let base = buf.as_mut_ptr();
        let mut b = Blocks::typed(ty, base, 128, 8, 2);
        assert_eq!(
            blocks(&mut b, base),
            [(8, 8), (24, 8), (40, 8), (48, 8), (64, 8), (80, 8)]
        );
        let mut short = Blocks::typed(ty, base, 36, 0, 1);
        assert_eq!(short.next_block().unwrap(), Some((base, 8)));
        assert_eq!(short.next_block().unwrap(), Some((base.wrapping_add(16), 8)));
        assert!(short.next_block().is_err());
        assert!(Blocks::run(base, 0).next_block().unwrap().is_none());
    }

    #[test]
    fn zipped_sides_cut_at_every_boundary() {
        let enc = vector::<u32>(3, 2, 4);
        let ty = TypeRef::new(&enc).unwrap();
        let mut a = [0u8; 64];
        let mut c = [0u8; 24];
        let (pa, pc) = (a.as_mut_ptr(), c.as_mut_ptr());
        let mut sides = [Blocks::typed(ty, pa, 64, 0, 1), Blocks::run(pc, 12)];
        let mut pieces = Vec::new();
        zip_blocks(&mut sides, |[x, y], n| {
            pieces.push((x as usize - pa as usize, y as usize - pc as usize, n));
            Ok(())
        })
        .unwrap_err();
        assert_eq!(pieces, [(0, 0, 8), (16, 8, 4)]);
        let mut sides = [Blocks::typed(ty, pa, 64, 0, 1), Blocks::run(pc, 24)];
        let mut n = 0;
        zip_blocks(&mut sides, |_, k| {
            n += k;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 24);
    }

    #[test]
    fn signatures_match_by_their_primitives() {
        let six = vector::<u32>(3, 2, 4);
        let two = vector::<u32>(1, 2, 2);
        let (six, two) = (TypeRef::new(&six).unwrap(), TypeRef::new(&two).unwrap());
        let plain = Signature::of_elements(ID_U32, 6);
        assert!(plain.matches(&Signature::Typed(six, 1)));
        assert!(Signature::Typed(two, 3).matches(&Signature::Typed(six, 1)));
        assert!(!Signature::Typed(two, 2).matches(&Signature::Typed(six, 1)));
        assert!(!Signature::of_elements(ID_F64, 6).matches(&Signature::Typed(six, 1)));
        assert!(!Signature::of_elements(USER_BIT | 5, 6).matches(&plain));
        assert!(Signature::of_elements(USER_BIT | 5, 0).matches(&Signature::Typed(six, 0)));
    }
}
