//! `MPI_Type_commit`: flattening a type tree into work units and the
//! signature, and writing the encoding that [`gpu_mpi_device::derived`]
//! documents.

use super::{
    ovf, subarray_rows, Counted, DatatypeError, Kind, Primitive, UserDatatype, MAX_SIGNATURE_RUNS, MAX_UNITS,
};
use gpu_mpi_device::derived::{
    self, signature_hash, signature_word, EncodingHeader, TypeRef, Unit, HEADER_WORDS, MAGIC,
};

/// A flattened typemap: blocks (as units without packing offsets) and the
/// signature, both in typemap order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Flat {
    pub(crate) units: Vec<Unit>,
    pub(crate) sig: Vec<(Primitive, u64)>,
}

fn unit(disp: i64, stride: i64, len: u64, count: u64) -> Unit {
    Unit {
        disp,
        stride,
        len,
        count,
        group_stride: 0,
        groups: 1,
        packed_off: 0,
        first_chunk: 0,
    }
}

/// The canonical form of a unit: one group of blocks rather than groups of
/// one block, one run rather than groups that continue each other, one
/// block rather than touching blocks, strides 0 where there is one of a
/// thing.
fn normalize(u: &mut Unit) -> Result<(), DatatypeError> {
    if u.count == 1 && u.groups > 1 {
        (u.count, u.stride, u.groups, u.group_stride) = (u.groups, u.group_stride, 1, 0);
    }
    if u.groups > 1 && Some(u.group_stride) == (u.count as i64).checked_mul(u.stride) {
        u.count = u.count.checked_mul(u.groups).ok_or(ovf("size"))?;
        (u.groups, u.group_stride) = (1, 0);
    }
    if u.count > 1 && u.groups == 1 && u.stride == u.len as i64 {
        u.len = u.len.checked_mul(u.count).ok_or(ovf("size"))?;
        u.count = 1;
    }
    if u.count == 1 {
        u.stride = 0;
    }
    if u.groups == 1 {
        u.group_stride = 0;
    }
    Ok(())
}

impl Flat {
    /// Appends a unit, merging it into the previous ones where it continues
    /// them: a block right after a single block joins it; equal blocks at a
    /// constant stride fold into one group; equal groups at a constant
    /// stride fold into one unit.
    fn push(&mut self, mut u: Unit) -> Result<(), DatatypeError> {
        if u.len == 0 || u.count == 0 || u.groups == 0 {
            return Ok(());
        }
        normalize(&mut u)?;
        self.units.push(u);
        while let [.., p, l] = self.units.as_mut_slice() {
            if l.groups != 1 {
                break;
            }
            let at = |n: u64, stride: i64| (n as i64).checked_mul(stride).and_then(|x| x.checked_add(p.disp));
            let same_group = p.len == l.len && p.count == l.count && p.stride == l.stride;
            if l.count == 1 && p.count == 1 && p.groups == 1 && at(1, p.len as i64) == Some(l.disp) {
                p.len += l.len;
            } else if l.count == 1 && p.len == l.len && p.count == 1 && p.groups == 1 {
                p.stride = l.disp - p.disp;
                p.count = 2;
            } else if l.count == 1 && p.len == l.len && p.groups == 1 && at(p.count, p.stride) == Some(l.disp)
            {
                p.count += 1;
            } else if l.count > 1 && same_group && p.groups == 1 {
                p.group_stride = l.disp - p.disp;
                p.groups = 2;
            } else if l.count > 1 && same_group && at(p.groups, p.group_stride) == Some(l.disp) {
                p.groups += 1;
            } else {
                break;
            }
            normalize(p)?;
            self.units.pop();
        }
        if self.units.len() > MAX_UNITS {
            return Err(DatatypeError::TooLarge {
                what: "work units",
                max: MAX_UNITS,
            });
        }
        Ok(())
    }

    fn push_sig(&mut self, p: Primitive, n: u64) -> Result<(), DatatypeError> {
        if n == 0 {
            return Ok(());
        }
        match self.sig.last_mut() {
            Some((q, m)) if *q == p => *m = m.checked_add(n).ok_or(ovf("element count"))?,
            _ => self.sig.push((p, n)),
        }
        if self.sig.len() > MAX_SIGNATURE_RUNS {
            return Err(DatatypeError::TooLarge {
                what: "signature runs",
                max: MAX_SIGNATURE_RUNS,
            });
        }
        Ok(())
    }

    /// Appends `k` copies of `c` at `d, d + extent(c), ...`.
    fn place(&mut self, d: i64, k: u64, c: &UserDatatype) -> Result<(), DatatypeError> {
        let cf = c.flat()?;
        if k == 0 || c.size() == 0 {
            return Ok(());
        }
        let ext = c.extent();
        match cf.units.as_slice() {
            [u] if u.count == 1 && u.groups == 1 => self.push(unit(
                d.checked_add(u.disp).ok_or(ovf("displacement"))?,
                ext,
                u.len,
                k,
            ))?,
            units => {
                let mut base = d;
                for j in 0..k {
                    if j > 0 {
                        base = base.checked_add(ext).ok_or(ovf("displacement"))?;
                    }
                    for u in units {
                        let mut v = *u;
                        v.disp = v.disp.checked_add(base).ok_or(ovf("displacement"))?;
                        self.push(v)?;
                    }
                }
            }
        }
        match cf.sig.as_slice() {
            [(p, n)] => self.push_sig(*p, n.checked_mul(k).ok_or(ovf("element count"))?)?,
            runs => {
                for _ in 0..k {
                    for &(p, n) in runs {
                        self.push_sig(p, n)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl UserDatatype {
    /// The flattened typemap, computed once per type.
    pub(crate) fn flat(&self) -> Result<&Flat, DatatypeError> {
        self.0
            .flat
            .get_or_init(|| self.flatten())
            .as_ref()
            .map_err(|e| e.clone())
    }

    fn flatten(&self) -> Result<Flat, DatatypeError> {
        let mut f = Flat::default();
        match &self.0.kind {
            Kind::Primitive(p) => {
                f.push(unit(0, 0, p.size(), 1))?;
                f.push_sig(*p, 1)?;
            }
            Kind::Contiguous { count, child } => f.place(0, *count, child)?,
            Kind::Vector {
                count,
                blocklength,
                stride,
                bytes,
                child,
            } => {
                let step = if *bytes {
                    *stride
                } else {
                    stride.checked_mul(child.extent()).ok_or(ovf("stride"))?
                };
                let mut d = 0i64;
                for i in 0..*count {
                    if i > 0 {
                        d = d.checked_add(step).ok_or(ovf("displacement"))?;
                    }
                    f.place(d, *blocklength, child)?;
                }
            }
            Kind::Indexed {
                blocklengths,
                displacements,
                bytes,
                child,
            } => {
                for (&b, &d) in blocklengths.iter().zip(displacements) {
                    let d = if *bytes {
                        d
                    } else {
                        d.checked_mul(child.extent()).ok_or(ovf("displacement"))?
                    };
                    f.place(d, b, child)?;
                }
            }
            Kind::Struct {
                blocklengths,
                displacements,
                types,
            } => {
                for ((&b, &d), t) in blocklengths.iter().zip(displacements).zip(types) {
                    f.place(d, b, t)?;
                }
            }
            kind @ Kind::Subarray { child, .. } => {
                let mut err = Ok(());
                subarray_rows(kind, child.extent(), |d, k| {
                    if err.is_ok() {
                        err = f.place(d, k, child);
                    }
                })?;
                err?;
            }
            Kind::Resized { child } | Kind::Dup { child } => f.place(0, 1, child)?,
        }
        Ok(f)
    }
}

/// A committed type (`MPI_Type_commit`): the type and its encoding, ready
/// to upload and walk on a device.
#[derive(Clone, Debug)]
pub struct CommittedType {
    ty: UserDatatype,
    words: Vec<u64>,
    sig: Vec<(Primitive, u64)>,
}

impl CommittedType {
    pub(crate) fn new(ty: &UserDatatype, chunk_bytes: u64) -> Result<CommittedType, DatatypeError> {
        if chunk_bytes == 0 {
            return Err(DatatypeError::ZeroChunk);
        }
        let flat = ty.flat()?;
        let mut units = flat.units.clone();
        let (mut packed, mut chunks) = (0u64, 0u64);
        for u in &mut units {
            u.packed_off = packed;
            u.first_chunk = chunks;
            packed = u
                .len
                .checked_mul(u.count)
                .and_then(|b| b.checked_mul(u.groups))
                .and_then(|b| b.checked_add(packed))
                .ok_or(ovf("size"))?;
            chunks = u
                .len
                .div_ceil(chunk_bytes)
                .checked_mul(u.count)
                .and_then(|c| c.checked_mul(u.groups))
                .and_then(|c| c.checked_add(chunks))
                .ok_or(ovf("chunk count"))?;
        }
        let mut sig_words = Vec::with_capacity(flat.sig.len());
        for &(p, n) in &flat.sig {
            if n >> 56 != 0 {
                return Err(ovf("signature run"));
            }
            sig_words.push(signature_word(p.id(), n));
        }
        let header = EncodingHeader {
            magic: MAGIC,
            size: ty.size(),
            extent: ty.extent() as u64,
            lb: ty.lb() as u64,
            true_lb: ty.true_lb() as u64,
            true_extent: ty.true_extent() as u64,
            units: units.len() as u64,
            sig_runs: sig_words.len() as u64,
            chunk_bytes,
            chunks_per_instance: chunks,
            elements: ty.elements(),
            signature_hash: signature_hash(&sig_words),
        };
        let mut words =
            Vec::with_capacity(HEADER_WORDS + units.len() * derived::UNIT_WORDS + sig_words.len());
        words.extend_from_slice(bytemuck::cast_slice::<EncodingHeader, u64>(std::slice::from_ref(
            &header,
        )));
        for u in &units {
            words.extend_from_slice(&u.to_words());
        }
        words.extend_from_slice(&sig_words);
        Ok(CommittedType {
            ty: ty.clone(),
            words,
            sig: flat.sig.clone(),
        })
    }

    /// The type.
    pub fn datatype(&self) -> &UserDatatype {
        &self.ty
    }

    /// The encoding's words (upload them and pass them to a kernel as a
    /// `GlobalSlice<u64>`; see [`gpu_mpi_device::derived`]).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Bytes of the encoding.
    pub fn encoding_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The header of the encoding.
    pub fn header(&self) -> EncodingHeader {
        bytemuck::pod_read_unaligned(bytemuck::cast_slice(&self.words[..HEADER_WORDS]))
    }

    /// The encoding as the device reads it.
    pub fn type_ref(&self) -> TypeRef<'_> {
        match TypeRef::new(&self.words) {
            Ok(t) => t,
            Err(_) => unreachable!("a commit writes a well-formed encoding"),
        }
    }

    /// Work units of the encoding.
    pub fn units(&self) -> usize {
        self.header().units as usize
    }

    /// The type signature: runs of equal primitives, in typemap order.
    pub fn signature(&self) -> &[(Primitive, u64)] {
        &self.sig
    }

    /// Whether `other` has the same type signature (MPI 3.3.1).
    pub fn signature_matches(&self, other: &CommittedType) -> bool {
        self.sig == other.sig
    }

    /// `MPI_Get_elements` for `bytes` received: primitive elements, or `None`
    /// (`MPI_UNDEFINED`) when the bytes end inside an element.
    pub fn get_elements(&self, bytes: u64) -> Counted {
        let size = self.ty.size();
        if size == 0 {
            return (bytes == 0).then_some(0);
        }
        let mut n = (bytes / size).checked_mul(self.ty.elements())?;
        let mut rest = bytes % size;
        for &(p, k) in &self.sig {
            if rest == 0 {
                break;
            }
            let take = (rest / p.size()).min(k);
            n += take;
            rest -= take * p.size();
            if take < k {
                break;
            }
        }
        (rest == 0).then_some(n)
    }

    /// `MPI_Get_count` (see [`UserDatatype::get_count`]).
    pub fn get_count(&self, bytes: u64) -> Counted {
        self.ty.get_count(bytes)
    }

    /// `MPI_Pack` on the host by walking the encoding (the device's code):
    /// `count` instances with the buffer address at `src[origin]`.
    pub fn pack(&self, src: &[u8], origin: usize, count: usize) -> Result<Vec<u8>, DatatypeError> {
        let total = self.pack_size(count)?;
        let mut out = vec![0u8; total];
        derived::pack_into_at(src, origin, count, &self.type_ref(), &mut out).map_err(device_error)?;
        Ok(out)
    }

    /// `MPI_Unpack` on the host by walking the encoding: writes `count`
    /// instances into `dst` with the buffer address at `dst[origin]`.
    pub fn unpack(
        &self,
        packed: &[u8],
        count: usize,
        dst: &mut [u8],
        origin: usize,
    ) -> Result<(), DatatypeError> {
        derived::unpack_from_at(packed, count, &self.type_ref(), dst, origin).map_err(device_error)?;
        Ok(())
    }

    /// `MPI_Pack_size`: bytes of `count` packed instances.
    pub fn pack_size(&self, count: usize) -> Result<usize, DatatypeError> {
        (count as u64)
            .checked_mul(self.ty.size())
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(ovf("packed size"))
    }

    /// The bytes `count` instances touch relative to the buffer address:
    /// `(first, end)`, empty when the type holds no data.
    pub fn span(&self, count: usize) -> Result<(i64, i64), DatatypeError> {
        if count == 0 || self.ty.size() == 0 {
            return Ok((0, 0));
        }
        let last = i64::try_from(count - 1)
            .ok()
            .and_then(|c| c.checked_mul(self.ty.extent()))
            .ok_or(ovf("extent"))?;
        let lo = self.ty.true_lb().checked_add(last.min(0)).ok_or(ovf("extent"))?;
        let hi = self
            .ty
            .true_lb()
            .checked_add(self.ty.true_extent())
            .and_then(|h| h.checked_add(last.max(0)))
            .ok_or(ovf("extent"))?;
        Ok((lo, hi))
    }
}

fn device_error(e: gpu_mpi_device::Error) -> DatatypeError {
    match e {
        gpu_mpi_device::Error::OutOfBounds { index, len } => DatatypeError::OutOfBuffer {
            index: index as i64,
            len: len as usize,
        },
        _ => ovf("encoding"),
    }
}
