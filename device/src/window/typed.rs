//! One-sided operations with datatypes on either side (MPI 4.1 §12.3):
//! [`TargetView`] and the `*_typed` methods of [`Window`]. The rules are
//! on [`TargetView`].

use super::{check_atomic, combine, update, RmaRequest, Target, Window, DYNAMIC};
use crate::collective::{Operation, SystemOperation};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::derived::{aligned, zip_blocks, Blocks, Signature, TypeRef};
use crate::error::{saturating_u32, Error};
use crate::shim;
use crate::status::PROC_NULL;
use crate::trace::RmaOp;
use core::mem::{align_of, size_of};

/// The target side of a typed one-sided operation: `count` instances of
/// `datatype` whose buffer address is element `disp` of the target's
/// window (MPI's `target_disp`, `target_count`, `target_datatype`; the
/// displacement unit is the element's size, and 1 on a dynamic window,
/// whose displacements are addresses: the typemap must then lie in one
/// region attached at the target).
///
/// [`Window::put_typed`], [`Window::get_typed`],
/// [`Window::accumulate_typed`], [`Window::get_accumulate_typed`] and
/// their request forms take any [`Buffer`] as origin (any [`BufferMut`] as
/// result): a `Pod` slice, an array, a value, or a
/// [`View`](crate::view::View) / [`MutView`](crate::view::MutView) of a
/// committed derived type. The rules (MPI 4.1 §12.3, §12.3.4):
///
/// - the origin's type signature (its sequence of primitives) must equal
///   the target's, `count` instances of the type; otherwise
///   `MPI_ERR_TYPE` ([`Error::RmaType`], `window` then the target type's
///   signature id, `expected` the origin's), nothing moved. A `Pod`
///   buffer of a user `#[repr(C)]` type has no signature the device
///   knows: it matches only an empty target (use a view of a struct type);
/// - every byte the target typemap touches, from the true lower bound of
///   the lowest instance to the true upper bound of the highest, must lie
///   inside the target's window (`MPI_ERR_RMA_RANGE`, nothing moved); an
///   empty signature touches nothing and is checked for nothing more;
/// - an accumulate's origin, target (and result) are all of the window's
///   element type, a predefined type (§12.3.4: one predefined type, or
///   derived types of it), else `MPI_ERR_TYPE`; so are target types that
///   put an element off its alignment. The operation is applied element
///   by element, each atomically, as the `Pod` accumulate does;
/// - epochs and ranks are checked as for the `Pod` operations; `PROC_NULL`
///   does nothing.
///
/// The bytes move directly between the two memories: both typemaps are
/// walked together, and each piece where neither side has a block
/// boundary is one copy (or, for an accumulate, one atomic update per
/// element). No staging buffer, no size limit. A `Pod` slice or a
/// contiguous view is one block, so a contiguous origin to a contiguous
/// target type is one copy. The `Pod`-slice methods ([`Window::put`] and
/// the others) keep their own code: a kernel that does not call the typed
/// ones carries none of this.
#[derive(Clone, Copy, Debug)]
pub struct TargetView<'t> {
    disp: usize,
    count: usize,
    datatype: TypeRef<'t>,
}

impl<'t> TargetView<'t> {
    /// `count` instances of `datatype` at element `disp` of the target's
    /// window.
    pub fn new(disp: usize, count: usize, datatype: &TypeRef<'t>) -> TargetView<'t> {
        TargetView {
            disp,
            count,
            datatype: *datatype,
        }
    }

    /// The displacement, in elements of the window.
    pub fn disp(&self) -> usize {
        self.disp
    }

    /// Instances of the type.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The type.
    pub fn datatype(&self) -> &TypeRef<'t> {
        &self.datatype
    }

    fn signature(&self) -> Signature<'t> {
        Signature::Typed(self.datatype, self.count as u64)
    }
}

/// Where a buffer's bytes are, taken from it before its type (so that a
/// result buffer's exclusive borrow has ended when its type is read).
enum Raw {
    /// One run of bytes.
    Run(*mut u8, usize),
    /// A view of a non-contiguous type.
    Typed {
        base: *mut u8,
        len: usize,
        origin: usize,
        count: usize,
        skip: usize,
    },
}

impl Raw {
    fn typed(t: &crate::datatype::TypedBuffer) -> Raw {
        Raw::Typed {
            base: t.base,
            len: t.len,
            origin: t.origin,
            count: t.count,
            skip: t.skip,
        }
    }
}

/// One side of an operation on this rank: its blocks and its signature.
struct Side<'t> {
    blocks: Blocks<'t>,
    signature: Signature<'t>,
}

/// The words of a view's type, as [`Buffer::type_words`] gives them,
/// without the borrow of the view.
type Words = Option<(*const u64, usize, usize)>;

fn words_of(w: Option<(&[u64], usize)>) -> Words {
    w.map(|(words, count)| (words.as_ptr(), words.len(), count))
}

/// The side of a buffer from its bytes, its type's words (if a view) and
/// its datatype and count (if not).
///
/// # Safety
/// `words` come from the buffer's `type_words` and the buffer (a view,
/// which borrows its type's encoding for its life) outlives `'t`.
unsafe fn side<'t>(raw: Raw, words: Words, id: u32, count: usize) -> Result<Side<'t>, Error> {
    let ty = match words {
        // SAFETY: the view's type words, alive and unwritten for `'t` (the
        // caller); they are not the buffer's bytes, so no access to the
        // buffer aliases them.
        Some((p, n, _)) => Some(TypeRef::new(unsafe { core::slice::from_raw_parts(p, n) })?),
        None => None,
    };
    let signature = match (ty, words) {
        (Some(ty), Some((_, _, instances))) => Signature::Typed(ty, instances as u64),
        _ => Signature::of_elements(id, count),
    };
    let blocks = match raw {
        Raw::Run(p, n) => Blocks::run(p, n),
        Raw::Typed {
            base,
            len,
            origin,
            count,
            skip: 0,
        } => Blocks::typed(ty.ok_or(Error::Intern)?, base, len, origin, count),
        // A part of a view: only the collectives make them.
        Raw::Typed { .. } => return Err(Error::Intern),
    };
    Ok(Side { blocks, signature })
}

/// The side of an origin buffer.
fn origin_side<B: Buffer + ?Sized>(b: &B) -> Result<Side<'_>, Error> {
    let words = words_of(b.type_words());
    let raw = match b.typed() {
        Some(t) => Raw::typed(t),
        None => {
            let bytes = b.as_bytes();
            Raw::Run(bytes.as_ptr() as *mut u8, bytes.len())
        }
    };
    // SAFETY: `words` are `b`'s, and `b` is borrowed for the side's life.
    unsafe { side(raw, words, b.datatype().id, b.count()) }
}

/// The side of a result buffer; its bytes are written through the side's
/// blocks while `b` stays borrowed exclusively.
fn result_side<R: BufferMut + ?Sized>(b: &mut R) -> Result<Side<'_>, Error> {
    let words = words_of(b.type_words());
    let (id, count) = (b.datatype().id, b.count());
    // The pointer written through is the last one taken from `b`: no
    // later borrow of it invalidates it.
    let raw = match b.typed_mut().map(Raw::typed) {
        Some(raw) => raw,
        None => {
            let bytes = b.as_bytes_mut();
            Raw::Run(bytes.as_mut_ptr(), bytes.len())
        }
    };
    // SAFETY: `words` are `b`'s, and `b` is borrowed for the side's life.
    unsafe { side(raw, words, id, count) }
}

impl<'a, T: Equivalence> Window<'a, T> {
    /// The blocks of `to` in the window of `t` (from `access`), checked:
    /// the window's datatype, `to`'s signature against `origin`'s, and
    /// that the typemap lies inside the window.
    fn typed_target<'t>(
        &self,
        t: Target,
        to: &TargetView<'t>,
        origin: &Signature<'_>,
    ) -> Result<Blocks<'t>, Error> {
        let target = t.rank;
        if t.datatype != T::DATATYPE.id {
            return Err(Error::RmaType {
                target,
                window: t.datatype,
                expected: T::DATATYPE.id,
            });
        }
        let signature = to.signature();
        if !signature.matches(origin) {
            return Err(Error::RmaType {
                target,
                window: signature.id(),
                expected: origin.id(),
            });
        }
        let ty = &to.datatype;
        let h = ty.header();
        // A dynamic window's displacement is an address (unit 1).
        let dynamic = t.size == DYNAMIC;
        let offset = to.disp as i128 * self.disp_unit() as i128;
        if to.count == 0 || h.size == 0 {
            // An empty signature touches no byte (MPI 4.1 §12.3).
            return Ok(Blocks::run(core::ptr::null_mut(), 0));
        }
        // From the true lb of the lowest instance to the true ub of the
        // highest (i128: no overflow for any words).
        let last = (to.count as i128 - 1) * ty.extent() as i128;
        let true_lb = h.true_lb as i64 as i128;
        let lo = offset + true_lb + last.min(0);
        let hi = offset + true_lb + h.true_extent as i64 as i128 + last.max(0);
        // The memory the typemap must lie in: the window's (offsets from
        // its base), or on a dynamic window the attached region that holds
        // it (offsets are addresses: from the region's base).
        let (base, size, shift) = if !dynamic {
            (t.base, t.size, 0i128)
        } else {
            let held = (lo >= 0 && hi <= u64::MAX as i128)
                .then(|| self.region_holding(t, lo as u64, hi as u64))
                .flatten();
            held.map_or((0, 0, 0), |(b, l)| (b, l, b as i128))
        };
        let origin = usize::try_from(offset - shift)
            .ok()
            .filter(|&o| o <= i64::MAX as usize);
        match origin {
            Some(origin) if lo - shift >= 0 && hi - shift <= size as i128 && (!dynamic || size > 0) => Ok(
                Blocks::typed(*ty, base as usize as *mut u8, size as usize, origin, to.count),
            ),
            _ => Err(Error::RmaRange {
                target,
                offset: saturating_u32(lo.clamp(0, usize::MAX as i128) as usize),
                bytes: saturating_u32((hi - lo).clamp(0, usize::MAX as i128) as usize),
                size: if dynamic {
                    0
                } else {
                    saturating_u32(t.size as usize)
                },
            }),
        }
    }

    /// Stores `origin` (any buffer: a `Pod` slice or value, a
    /// [`View`](crate::view::View)) into `target`'s window as `to`
    /// describes (`MPI_Put` with an origin and a target datatype). The
    /// signatures must match (`MPI_ERR_TYPE`) and `to` must lie inside the
    /// window (`MPI_ERR_RMA_RANGE`); the rules are [`TargetView`]'s.
    /// Completes as [`put`](Self::put) does. `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.3.1.
    pub fn put_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
    ) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let o = origin_side(origin)?;
        let at = self.typed_target(t, &to, &o.signature)?;
        zip_blocks(&mut [o.blocks, at], |[src, dst], n| {
            // SAFETY: `dst` is `n` bytes of one block of the target's
            // typemap, inside its window (checked against the size its
            // rank published, and again per block), valid for the
            // window's life; `src` is `n` bytes of one block of the
            // origin, which `origin` borrows. They are distinct memories
            // (this rank's window is reachable only through `&mut self`);
            // conflicting accesses are ordered by the window's
            // synchronisation.
            unsafe { shim::copy_bytes(dst, src, n) };
            Ok(())
        })?;
        self.trace_typed(RmaOp::Put, target, &to);
        Ok(())
    }

    /// Records a typed operation `op` to `target` as `to` describes it.
    #[inline(always)]
    fn trace_typed(&self, op: RmaOp, target: i32, to: &TargetView<'_>) {
        self.trace_typed_parts(op, (target, to.disp(), to.count(), to.datatype().size()));
    }

    /// Loads `target`'s window as `from` describes into `result` (any
    /// receive buffer: a `Pod` slice, a [`MutView`](crate::view::MutView))
    /// (`MPI_Get` with datatypes); the rules of
    /// [`put_typed`](Self::put_typed). `PROC_NULL` does nothing.
    ///
    /// Standard section: MPI 4.1 §12.3.2.
    pub fn get_typed<R: BufferMut + ?Sized>(
        &self,
        result: &mut R,
        target: i32,
        from: TargetView<'_>,
    ) -> Result<(), Error> {
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let r = result_side(result)?;
        let at = self.typed_target(t, &from, &r.signature)?;
        zip_blocks(&mut [at, r.blocks], |[src, dst], n| {
            // SAFETY: as in `put_typed`, the other way round: `dst` is in
            // `result`, borrowed exclusively.
            unsafe { shim::copy_bytes(dst, src, n) };
            Ok(())
        })?;
        self.trace_typed(RmaOp::Get, target, &from);
        Ok(())
    }

    /// Combines `origin` into `target`'s elements that `to` describes
    /// with `op` (`MPI_Accumulate` with datatypes): element by element,
    /// each atomically, as [`accumulate`](Self::accumulate). Both sides
    /// must hold elements of `T` only (MPI 4.1 §12.3.4; `MPI_ERR_TYPE`);
    /// the other rules of [`put_typed`](Self::put_typed).
    ///
    /// Standard section: MPI 4.1 §12.3.4.
    pub fn accumulate_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        let rec = (target, to.disp(), to.count(), to.datatype().size());
        self.typed_ops::<B, [T]>(Some(origin), None, target, to, op)?;
        self.trace_typed_parts(RmaOp::Accumulate, rec);
        Ok(())
    }

    /// [`trace_typed`](Self::trace_typed) of a view already given away:
    /// its target, displacement, count and datatype size.
    #[inline(always)]
    fn trace_typed_parts(&self, op: RmaOp, (target, disp, count, size): (i32, usize, usize, u64)) {
        let bytes = size.saturating_mul(count as u64);
        self.trace_op_bytes(op, target, disp, usize::try_from(bytes).unwrap_or(usize::MAX));
    }

    /// [`accumulate_typed`](Self::accumulate_typed) that also returns the
    /// target's elements before the operation in `result`
    /// (`MPI_Get_accumulate` with datatypes), whose signature must be the
    /// target's too. With [`SystemOperation::no_op`] the origin is not
    /// read (MPI 4.1 §12.3.5: it is ignored): an atomic typed get.
    ///
    /// Standard section: MPI 4.1 §12.3.5.
    pub fn get_accumulate_typed<B: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        origin: &B,
        result: &mut R,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        let origin = (op != SystemOperation::no_op()).then_some(origin);
        let rec = (target, to.disp(), to.count(), to.datatype().size());
        self.typed_ops(origin, Some(result), target, to, op)?;
        self.trace_typed_parts(RmaOp::GetAccumulate, rec);
        Ok(())
    }

    /// `MPI_ERR_TYPE` unless `s` is of elements of `T` only (or empty).
    fn of_elements(&self, target: i32, s: &Signature<'_>) -> Result<(), Error> {
        let empty = Signature::Uniform {
            id: T::DATATYPE.id,
            elements: 0,
        };
        if s.uniform() == Some(T::DATATYPE.id) || s.matches(&empty) {
            Ok(())
        } else {
            Err(Error::RmaType {
                target,
                window: T::DATATYPE.id,
                expected: s.id(),
            })
        }
    }

    /// The typed accumulates: `origin` `None` is a get_accumulate with
    /// no_op (an atomic read of each element).
    fn typed_ops<B: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        origin: Option<&B>,
        result: Option<&mut R>,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        op.check_accumulate::<T>()?;
        check_atomic::<T>(op)?;
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.access(target)?;
        let o = origin.map(origin_side).transpose()?;
        let r = result.map(result_side).transpose()?;
        self.of_elements(target, &to.signature())?;
        if let Some(o) = &o {
            self.of_elements(target, &o.signature)?;
        }
        if let Some(r) = &r {
            self.of_elements(target, &r.signature)?;
        }
        // The target's signature is checked against the origin's, or,
        // without one, the result's.
        let reference = match (&o, &r) {
            (Some(o), _) => o.signature,
            (None, Some(r)) => r.signature,
            (None, None) => return Err(Error::Intern),
        };
        let at = self.typed_target(t, &to, &reference)?;
        if let (Some(_), Some(r)) = (&o, &r) {
            if !r.signature.matches(&to.signature()) {
                return Err(Error::RmaType {
                    target,
                    window: to.signature().id(),
                    expected: r.signature.id(),
                });
            }
        }
        let size = size_of::<T>();
        let offset = to.disp.wrapping_mul(self.disp_unit());
        if to.count > 0 && !aligned(&to.datatype, to.count, offset, align_of::<T>(), size) {
            // An element off its alignment cannot be updated atomically.
            return Err(Error::RmaType {
                target,
                window: T::DATATYPE.id,
                expected: to.signature().id(),
            });
        }
        let each = |n: usize| {
            if n.is_multiple_of(size) {
                Ok(0..n / size)
            } else {
                Err(Error::Intern)
            }
        };
        // SAFETY (for the accesses below): element `k < n / size` of a
        // piece of `n` bytes lies inside the piece. The target's pieces
        // are inside its window (checked against its published size, and
        // per block) and their elements aligned for `T` (`aligned` above,
        // on a window base aligned for `T`); accumulates reach them only
        // atomically. Origin and result elements are read and written
        // unaligned, in buffers this call borrows (the result
        // exclusively).
        match (o, r) {
            (Some(o), None) => zip_blocks(&mut [o.blocks, at], |[src, dst], n| {
                for k in each(n)? {
                    // SAFETY: see above.
                    let v = unsafe { (src.add(k * size) as *const T).read_unaligned() };
                    // SAFETY: see above.
                    unsafe { combine(dst.add(k * size) as *mut T, op, &v) };
                }
                Ok(())
            }),
            (Some(o), Some(r)) => zip_blocks(&mut [o.blocks, at, r.blocks], |[src, dst, res], n| {
                for k in each(n)? {
                    // SAFETY: see above.
                    let v = unsafe { (src.add(k * size) as *const T).read_unaligned() };
                    // SAFETY: see above.
                    let old = unsafe { combine(dst.add(k * size) as *mut T, op, &v) };
                    // SAFETY: see above.
                    unsafe { (res.add(k * size) as *mut T).write_unaligned(old) };
                }
                Ok(())
            }),
            (None, Some(r)) => zip_blocks(&mut [at, r.blocks], |[dst, res], n| {
                for k in each(n)? {
                    // SAFETY: see above.
                    let old = unsafe { update(dst.add(k * size) as *mut T, |_| None) };
                    // SAFETY: see above.
                    unsafe { (res.add(k * size) as *mut T).write_unaligned(old) };
                }
                Ok(())
            }),
            (None, None) => Err(Error::Intern),
        }
    }

    /// [`put_typed`](Self::put_typed), then a notification on the
    /// target's counter `counter`, as [`put_notify`](Self::put_notify)
    /// gives (our extension; its errors before anything is written).
    pub fn put_notify_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
        counter: u32,
    ) -> Result<(), Error> {
        self.notified(target, counter, RmaOp::PutNotify, || {
            self.put_typed(origin, target, to)
        })
    }

    /// [`accumulate_typed`](Self::accumulate_typed), then a notification
    /// as [`put_notify`](Self::put_notify) gives.
    pub fn accumulate_notify_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
        counter: u32,
    ) -> Result<(), Error>
    where
        SystemOperation: Operation<T>,
    {
        self.notified(target, counter, RmaOp::AccumulateNotify, || {
            self.accumulate_typed(origin, target, to, op)
        })
    }

    /// [`put_typed`](Self::put_typed) returning a request (`MPI_Rput`),
    /// inside a lock of `target` or `lock_all`; complete at once, as
    /// [`rput`](Self::rput)'s.
    ///
    /// Standard section: MPI 4.1 §12.3.1.
    pub fn rput_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
    ) -> Result<RmaRequest, Error> {
        self.request_epoch(target)?;
        self.put_typed(origin, target, to)?;
        Ok(RmaRequest(()))
    }

    /// [`get_typed`](Self::get_typed) returning a request (`MPI_Rget`),
    /// inside a lock of `target` or `lock_all`.
    ///
    /// Standard section: MPI 4.1 §12.3.2.
    pub fn rget_typed<R: BufferMut + ?Sized>(
        &self,
        result: &mut R,
        target: i32,
        from: TargetView<'_>,
    ) -> Result<RmaRequest, Error> {
        self.request_epoch(target)?;
        self.get_typed(result, target, from)?;
        Ok(RmaRequest(()))
    }

    /// [`accumulate_typed`](Self::accumulate_typed) returning a request
    /// (`MPI_Raccumulate`), inside a lock of `target` or `lock_all`.
    ///
    /// Standard section: MPI 4.1 §12.3.4.
    pub fn raccumulate_typed<B: Buffer + ?Sized>(
        &self,
        origin: &B,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
    ) -> Result<RmaRequest, Error>
    where
        SystemOperation: Operation<T>,
    {
        self.request_epoch(target)?;
        self.accumulate_typed(origin, target, to, op)?;
        Ok(RmaRequest(()))
    }

    /// [`get_accumulate_typed`](Self::get_accumulate_typed) returning a
    /// request (`MPI_Rget_accumulate`), inside a lock of `target` or
    /// `lock_all`.
    ///
    /// Standard section: MPI 4.1 §12.3.5.
    pub fn rget_accumulate_typed<B: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        origin: &B,
        result: &mut R,
        target: i32,
        to: TargetView<'_>,
        op: SystemOperation,
    ) -> Result<RmaRequest, Error>
    where
        SystemOperation: Operation<T>,
    {
        self.request_epoch(target)?;
        self.get_accumulate_typed(origin, result, target, to, op)?;
        Ok(RmaRequest(()))
    }
}
