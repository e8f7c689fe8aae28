//! The reference model: the typemap of MPI 4.1 section 5.1 by a plain
//! recursive walk of the type tree, and pack/unpack by that typemap. It
//! shares nothing with the encoding (no units, no merging) and is what the
//! tests hold the encoding, the device walkers and the whole-GPU engine to.

use super::{DatatypeError, Kind, Order, Primitive, UserDatatype};

/// One entry of a typemap: a primitive at a byte displacement.
pub type Entry = (i64, Primitive);

/// The typemap of one instance of `ty`, in order.
pub fn typemap(ty: &UserDatatype) -> Vec<Entry> {
    let mut out = Vec::new();
    walk(ty, 0, &mut out);
    out
}

fn copies(ty: &UserDatatype, d: i64, k: u64, out: &mut Vec<Entry>) {
    for j in 0..k as i64 {
        walk(ty, d + j * ty.extent(), out);
    }
}

fn walk(ty: &UserDatatype, d: i64, out: &mut Vec<Entry>) {
    match &ty.0.kind {
        Kind::Primitive(p) => out.push((d, *p)),
        Kind::Contiguous { count, child } => copies(child, d, *count, out),
        Kind::Vector {
            count,
            blocklength,
            stride,
            bytes,
            child,
        } => {
            let step = if *bytes { *stride } else { stride * child.extent() };
            for i in 0..*count as i64 {
                copies(child, d + i * step, *blocklength, out);
            }
        }
        Kind::Indexed {
            blocklengths,
            displacements,
            bytes,
            child,
        } => {
            for (b, disp) in blocklengths.iter().zip(displacements) {
                let at = if *bytes { *disp } else { disp * child.extent() };
                copies(child, d + at, *b, out);
            }
        }
        Kind::Struct {
            blocklengths,
            displacements,
            types,
        } => {
            for ((b, disp), t) in blocklengths.iter().zip(displacements).zip(types) {
                copies(t, d + disp, *b, out);
            }
        }
        Kind::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            child,
        } => {
            // Every element of the sub-block, the fastest index innermost.
            let n = sizes.len();
            let total: u64 = subsizes.iter().product();
            for flat in 0..total {
                let mut rem = flat;
                let mut offset = 0i64;
                let mut scale = 1i64;
                let dims: Vec<usize> = match order {
                    Order::C => (0..n).rev().collect(),
                    Order::Fortran => (0..n).collect(),
                };
                for &k in &dims {
                    let i = rem % subsizes[k];
                    rem /= subsizes[k];
                    offset += (starts[k] + i) as i64 * scale;
                    scale *= sizes[k] as i64;
                }
                walk(child, d + offset * child.extent(), out);
            }
        }
        Kind::Resized { child } | Kind::Dup { child } => walk(child, d, out),
    }
}

/// `(lb, ub)` of `ty` by the definitions of MPI 4.1 section 5.1 applied to
/// the tree (markers of resized types propagate; a struct pads to its
/// alignment).
pub fn bounds(ty: &UserDatatype) -> (i64, i64) {
    let child_copies = |c: &UserDatatype, d: i64, k: u64| -> Option<(i64, i64)> {
        if k == 0 {
            return None;
        }
        let (l, u) = bounds(c);
        let e = u - l;
        let last = (k as i64 - 1) * e;
        Some((d + l + last.min(0), d + u + last.max(0)))
    };
    let merge = |acc: Option<(i64, i64)>, b: Option<(i64, i64)>| match (acc, b) {
        (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        (x, None) | (None, x) => x,
    };
    let b = match &ty.0.kind {
        Kind::Primitive(p) => Some((0, p.size() as i64)),
        Kind::Contiguous { count, child } => child_copies(child, 0, *count),
        Kind::Vector {
            count,
            blocklength,
            stride,
            bytes,
            child,
        } => {
            let (l, u) = bounds(child);
            let step = if *bytes { *stride } else { stride * (u - l) };
            (0..*count as i64).fold(None, |acc, i| {
                merge(acc, child_copies(child, i * step, *blocklength))
            })
        }
        Kind::Indexed {
            blocklengths,
            displacements,
            bytes,
            child,
        } => {
            let (l, u) = bounds(child);
            blocklengths.iter().zip(displacements).fold(None, |acc, (b, d)| {
                let at = if *bytes { *d } else { d * (u - l) };
                merge(acc, child_copies(child, at, *b))
            })
        }
        Kind::Struct {
            blocklengths,
            displacements,
            types,
        } => {
            let b = blocklengths
                .iter()
                .zip(displacements)
                .zip(types)
                .fold(None, |acc, ((b, d), t)| merge(acc, child_copies(t, *d, *b)));
            let align = types.iter().map(max_align).max().unwrap_or(1);
            b.map(|(l, u)| (l, u + (align - (u - l).rem_euclid(align)) % align))
        }
        Kind::Subarray { sizes, child, .. } => {
            let (l, u) = bounds(child);
            Some((0, sizes.iter().map(|&s| s as i64).product::<i64>() * (u - l)))
        }
        Kind::Resized { .. } => Some((ty.lb(), ty.ub())),
        Kind::Dup { child } => Some(bounds(child)),
    };
    b.unwrap_or((0, 0))
}

fn max_align(ty: &UserDatatype) -> i64 {
    typemap_prims(ty).map(|p| p.size() as i64).max().unwrap_or(1)
}

fn typemap_prims(ty: &UserDatatype) -> Box<dyn Iterator<Item = Primitive> + '_> {
    match &ty.0.kind {
        Kind::Primitive(p) => Box::new(std::iter::once(*p)),
        Kind::Contiguous { child, .. }
        | Kind::Vector { child, .. }
        | Kind::Indexed { child, .. }
        | Kind::Subarray { child, .. }
        | Kind::Resized { child }
        | Kind::Dup { child } => typemap_prims(child),
        Kind::Struct { types, .. } => Box::new(types.iter().flat_map(typemap_prims)),
    }
}

/// `(true_lb, true_extent)` from the typemap: the lowest data byte and the
/// span to past the highest (0, 0 without data).
pub fn true_bounds(map: &[Entry]) -> (i64, i64) {
    let lo = map.iter().map(|e| e.0).min();
    let hi = map.iter().map(|e| e.0 + e.1.size() as i64).max();
    match (lo, hi) {
        (Some(l), Some(h)) => (l, h - l),
        _ => (0, 0),
    }
}

/// `MPI_Get_elements` by the typemap: elements in `bytes` of `count`-style
/// consecutive instances, `None` when the bytes end inside an element.
pub fn get_elements(ty: &UserDatatype, bytes: u64) -> Option<u64> {
    let map = typemap(ty);
    let size: u64 = map.iter().map(|e| e.1.size()).sum();
    if size == 0 {
        return (bytes == 0).then_some(0);
    }
    let mut n = (bytes / size) * map.len() as u64;
    let mut rest = bytes % size;
    for e in &map {
        if rest == 0 {
            break;
        }
        if rest < e.1.size() {
            return None;
        }
        rest -= e.1.size();
        n += 1;
    }
    Some(n)
}

fn at(
    origin: usize,
    inst: usize,
    extent: i64,
    disp: i64,
    n: u64,
    len: usize,
) -> Result<usize, DatatypeError> {
    let a = origin as i64 + inst as i64 * extent + disp;
    if a < 0 || a as u64 + n > len as u64 {
        return Err(DatatypeError::OutOfBuffer {
            index: if a < 0 { a } else { a + n as i64 },
            len,
        });
    }
    Ok(a as usize)
}

/// `MPI_Pack` by the typemap: `count` instances, the buffer address at
/// `src[origin]`.
pub fn pack(ty: &UserDatatype, src: &[u8], origin: usize, count: usize) -> Result<Vec<u8>, DatatypeError> {
    let map = typemap(ty);
    let mut out = Vec::new();
    for inst in 0..count {
        for &(d, p) in &map {
            let a = at(origin, inst, ty.extent(), d, p.size(), src.len())?;
            out.extend_from_slice(&src[a..a + p.size() as usize]);
        }
    }
    Ok(out)
}

/// `MPI_Unpack` by the typemap: `count` instances from `packed` into `dst`
/// (the buffer address at `dst[origin]`).
pub fn unpack(
    ty: &UserDatatype,
    packed: &[u8],
    count: usize,
    dst: &mut [u8],
    origin: usize,
) -> Result<(), DatatypeError> {
    let map = typemap(ty);
    let mut pos = 0usize;
    for inst in 0..count {
        for &(d, p) in &map {
            let n = p.size() as usize;
            let a = at(origin, inst, ty.extent(), d, p.size(), dst.len())?;
            let chunk = packed.get(pos..pos + n).ok_or(DatatypeError::OutOfBuffer {
                index: (pos + n) as i64,
                len: packed.len(),
            })?;
            dst[a..a + n].copy_from_slice(chunk);
            pos += n;
        }
    }
    Ok(())
}
