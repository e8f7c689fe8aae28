//! Buffers with a derived datatype (rsmpi's `View` and `MutView`): a
//! buffer, a committed type ([`TypeRef`]) and a count, accepted wherever a
//! [`Buffer`] or [`BufferMut`] is (MPI 4.1 §3.2.2, §5.1.11, §3.3.1).
//!
//! ```ignore
//! use gpu_mpi_device::view::{MutView, View};
//! let column = TypeRef::new(&column_words)?;            // committed on the host
//! let v = View::with_count_and_datatype(&matrix[..], 1, &column)?;
//! world.process_at_rank(1).send(&v)?;                   // packed by the engine
//! let mut m = MutView::with_count_and_datatype(&mut other[..], 1, &column)?;
//! let status = world.any_process().receive_into(&mut m)?;
//! assert_eq!(status.count_of(&column), Some(1));
//! ```
//!
//! # What a view costs
//! - A type whose typemap is one contiguous run (a contiguous type, a
//!   struct without gaps, a vector whose stride equals its block) is plain
//!   bytes: [`Buffer::as_bytes`] is the run, and the send or receive is the
//!   one of a `Pod` slice; except that a point-to-point receive into a run
//!   of a heterogeneous type (a struct) is typed (with the `views`
//!   feature), its run copied in one piece, so that it can check a
//!   signature prefix (below).
//! - Any other type is *packed by the engine*: the send or receive record
//!   holds the address of the view's [`TypedBuffer`], and wherever the
//!   engine would copy bytes (into its outbox slot, out of the slot, chunk
//!   by chunk when a message streams) it packs or unpacks those packed
//!   positions of the type instead (`typemap::move_typed`: a binary search for
//!   the unit, then block by block). No staging buffer, no size limit
//!   beyond `max_message_bytes`; a message larger than a slot always
//!   streams through the slot (the receiver cannot read a typed sender's
//!   buffer directly), so it costs a slot round trip per `slot_bytes`.
//!
//! # Type matching
//! A message carries its type's *signature id*
//! ([`TypeRef::signature_id`]): the primitive's id for a type of one
//! primitive, so a vector of `f64` matches a `[f64]` on the other side; a
//! hash of the signature's period otherwise. A receive checks the id as for
//! any buffer: another id is `MPI_ERR_TYPE`, except, with the `views`
//! feature, a message whose signature is a prefix of a heterogeneous
//! receive view's (MPI 4.1 §3.3.1), which the view takes: one of a
//! primitive that the view's packed form starts with
//! ([`TypeRef::starts_with_primitive`]), or one of a heterogeneous view,
//! whose slot carries a hash of its primitive sequence that equals the
//! hash of the receive's signature cut to its length (`typemap/prefix.rs`;
//! docs/datatypes.md, "Signature prefixes"). A receive into bytes (a view
//! of an `MPI_BYTE` type, or a `u8` buffer) accepts any message, a message
//! longer than the view's packed size is `MPI_ERR_TRUNCATE`, and a shorter
//! one fills the first packed positions (MPI 4.1 §3.3.1: the receive may
//! hold more than the message).
//!
//! Counts are `usize` (a negative count cannot be written); a count whose
//! span overflows is `MPI_ERR_COUNT`, a buffer that does not hold `count`
//! instances (from the true lower bound of the first to the true upper
//! bound of the last) is `MPI_ERR_ARG`.

use crate::datatype::{primitive_size, Buffer, BufferMut, Datatype, TypedBuffer, SIGNATURE_BIT};
use crate::derived::TypeRef;
use crate::error::Error;
use crate::status::Status;
use core::marker::PhantomData;

/// The checked layout shared by [`View`] and [`MutView`].
#[derive(Clone, Copy, Debug)]
struct Layout {
    typed: TypedBuffer,
    /// `Some(start)`: the typemap of `count` instances is the one run
    /// `typed.base[start..start + packed]`.
    contiguous: Option<usize>,
    datatype: Datatype,
    elements: usize,
    /// The slot word its messages carry ([`Buffer::message_signature`]).
    signature: u32,
    /// A run (`contiguous`) of a heterogeneous type that a point-to-point
    /// receive still records as typed (`typed` is the run, moved in one
    /// piece: `typemap::move_typed`), to reach its encoding.
    receive_typed: bool,
}

fn count_error(count: usize) -> Error {
    Error::CountMismatch {
        count: count.min(u32::MAX as usize) as u32,
        expected: 0,
    }
}

fn too_small(index: i128, len: usize) -> Error {
    Error::OutOfBounds {
        index: index.clamp(0, u32::MAX as i128) as u32,
        len: len.min(u32::MAX as usize) as u32,
    }
}

impl Layout {
    fn new(
        base: *mut u8,
        len: usize,
        origin: usize,
        count: usize,
        ty: &TypeRef<'_>,
    ) -> Result<Layout, Error> {
        let h = *ty.header();
        let packed = (count as u64)
            .checked_mul(h.size)
            .filter(|&b| b <= u32::MAX as u64)
            .ok_or(count_error(count))? as usize;
        if origin > len {
            return Err(too_small(origin as i128, len));
        }
        if packed > 0 {
            // The bytes touched: from the true lb of the lowest instance to
            // the true ub of the highest (i128: no overflow for any words).
            let extent = ty.extent() as i128;
            let last = (count as i128 - 1) * extent;
            let true_lb = h.true_lb as i64 as i128;
            let true_ub = true_lb + h.true_extent as i64 as i128;
            let lo = origin as i128 + true_lb + last.min(0);
            let hi = origin as i128 + true_ub + last.max(0);
            if lo < 0 {
                return Err(too_small(lo, len));
            }
            if hi > len as i128 {
                return Err(too_small(hi, len));
            }
        }
        let contiguous = match ty.contiguous_run() {
            Some(disp) if count <= 1 || ty.extent() as u64 == h.size => {
                let start = origin as i128 + disp as i128;
                (start >= 0 && start + packed as i128 <= len as i128).then_some(start as usize)
            }
            _ => None,
        }
        .or((packed == 0).then_some(origin));
        if contiguous.is_none() && !cfg!(feature = "views") {
            // Without the `views` feature the engine cannot walk a type.
            return Err(Error::TypeMismatch {
                status: Status::empty(),
                expected: ty.signature_id(),
            });
        }
        let id = ty.signature_id();
        let (datatype, elements) = if id & SIGNATURE_BIT != 0 {
            let size = u32::try_from(h.size).map_err(|_| count_error(count))?;
            (Datatype { id, size }, count)
        } else {
            // An empty view keeps its type's id (an empty type's is
            // `ID_BYTE`), as an empty slice does: a rank with no elements in
            // a varcount collective still agrees on the type.
            let size = primitive_size(id).max(1);
            (Datatype { id, size }, packed / size as usize)
        };
        let words = ty.words();
        let mut typed = TypedBuffer {
            words: words.as_ptr(),
            words_len: words.len(),
            base,
            len,
            origin,
            count,
            packed,
            skip: 0,
            run: false,
        };
        // A heterogeneous signature: its messages carry the hash of their
        // primitive sequence, and a receive of a run is typed too (the
        // engine takes a message of another id only from a typed receive).
        let heterogeneous = cfg!(feature = "views") && id & SIGNATURE_BIT != 0;
        let signature = if heterogeneous {
            ty.message_hash(count as u64)
        } else {
            0
        };
        let (contiguous, receive_typed) = match contiguous {
            Some(start) if heterogeneous => {
                // SAFETY: `start + packed <= len` (checked above).
                typed.base = unsafe { base.add(start) };
                typed.len = packed;
                typed.origin = 0;
                typed.run = true;
                (Some(0), true)
            }
            c => (c, false),
        };
        Ok(Layout {
            typed,
            contiguous,
            datatype,
            elements,
            signature,
            receive_typed,
        })
    }

    fn typed(&self) -> Option<&TypedBuffer> {
        match self.contiguous {
            Some(_) => None,
            None => Some(&self.typed),
        }
    }

    fn typed_receive(&self) -> Option<&TypedBuffer> {
        if self.receive_typed {
            Some(&self.typed)
        } else {
            self.typed()
        }
    }

    /// The type's words and the instance count (`Buffer::type_words`).
    fn type_words(&self) -> (&[u64], usize) {
        // SAFETY: `words` and `words_len` are the slice of the `TypeRef` the
        // view was made with, which the view borrows for its life (at least
        // as long as `&self`), and nothing writes an encoding meanwhile.
        let words = unsafe { core::slice::from_raw_parts(self.typed.words, self.typed.words_len) };
        (words, self.typed.count)
    }
}

/// A send buffer of `count` instances of a derived datatype (rsmpi's
/// `View`; MPI's `(buf, count, datatype)` triple). Borrows the buffer and
/// the type's encoding for `'a`.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    layout: Layout,
    _borrow: PhantomData<(&'a [u8], TypeRef<'a>)>,
}

impl<'a> View<'a> {
    /// `count` instances of `ty` in `buffer`, the buffer's address (MPI's
    /// `buf`) at its first byte.
    pub fn with_count_and_datatype<B: Buffer + ?Sized>(
        buffer: &'a B,
        count: usize,
        ty: &TypeRef<'a>,
    ) -> Result<View<'a>, Error> {
        View::with_origin(buffer, 0, count, ty)
    }

    /// `count` instances of `ty` with MPI's buffer address at byte `origin`
    /// of `buffer` (types with negative displacements reach below it).
    pub fn with_origin<B: Buffer + ?Sized>(
        buffer: &'a B,
        origin: usize,
        count: usize,
        ty: &TypeRef<'a>,
    ) -> Result<View<'a>, Error> {
        let b = buffer.as_bytes();
        Ok(View {
            layout: Layout::new(b.as_ptr() as *mut u8, b.len(), origin, count, ty)?,
            _borrow: PhantomData,
        })
    }

    /// Instances of the type.
    pub fn instances(&self) -> usize {
        self.layout.typed.count
    }

    /// Bytes of the packed form (what travels).
    pub fn packed_bytes(&self) -> usize {
        self.layout.typed.packed
    }

    /// Whether the engine moves it as plain bytes (one contiguous run).
    pub fn is_contiguous(&self) -> bool {
        self.layout.contiguous.is_some()
    }
}

impl Buffer for View<'_> {
    fn datatype(&self) -> Datatype {
        self.layout.datatype
    }
    fn as_bytes(&self) -> &[u8] {
        match self.layout.contiguous {
            // SAFETY: the run lies in the borrowed buffer (checked when the
            // view was made) and the view borrows it shared for its life.
            Some(start) => unsafe {
                core::slice::from_raw_parts(self.layout.typed.base.add(start), self.layout.typed.packed)
            },
            None => &[],
        }
    }
    /// Elements: primitives for a type of one primitive, else instances.
    fn count(&self) -> usize {
        self.layout.elements
    }
    fn typed(&self) -> Option<&TypedBuffer> {
        self.layout.typed()
    }
    fn message_signature(&self) -> u32 {
        self.layout.signature
    }
    fn type_words(&self) -> Option<(&[u64], usize)> {
        Some(self.layout.type_words())
    }
}

/// A receive buffer of `count` instances of a derived datatype (rsmpi's
/// `MutView`). Borrows the buffer exclusively for `'a`. The type's blocks
/// should not overlap (MPI's rule for receive types); if they do, later
/// packed positions overwrite earlier ones.
#[derive(Debug)]
pub struct MutView<'a> {
    layout: Layout,
    _borrow: PhantomData<(&'a mut [u8], TypeRef<'a>)>,
}

impl<'a> MutView<'a> {
    /// `count` instances of `ty` in `buffer`, the buffer's address at its
    /// first byte.
    pub fn with_count_and_datatype<B: BufferMut + ?Sized>(
        buffer: &'a mut B,
        count: usize,
        ty: &TypeRef<'a>,
    ) -> Result<MutView<'a>, Error> {
        MutView::with_origin(buffer, 0, count, ty)
    }

    /// `count` instances of `ty` with MPI's buffer address at byte `origin`
    /// of `buffer`.
    pub fn with_origin<B: BufferMut + ?Sized>(
        buffer: &'a mut B,
        origin: usize,
        count: usize,
        ty: &TypeRef<'a>,
    ) -> Result<MutView<'a>, Error> {
        let b = buffer.as_bytes_mut();
        Ok(MutView {
            layout: Layout::new(b.as_mut_ptr(), b.len(), origin, count, ty)?,
            _borrow: PhantomData,
        })
    }

    /// Instances of the type.
    pub fn instances(&self) -> usize {
        self.layout.typed.count
    }

    /// Bytes of the packed form (the most a message may hold).
    pub fn packed_bytes(&self) -> usize {
        self.layout.typed.packed
    }

    /// Whether the engine moves it as plain bytes (one contiguous run).
    pub fn is_contiguous(&self) -> bool {
        self.layout.contiguous.is_some()
    }
}

impl BufferMut for MutView<'_> {
    fn datatype(&self) -> Datatype {
        self.layout.datatype
    }
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self.layout.contiguous {
            // SAFETY: the run lies in the buffer the view borrows
            // exclusively (checked when it was made).
            Some(start) => unsafe {
                core::slice::from_raw_parts_mut(self.layout.typed.base.add(start), self.layout.typed.packed)
            },
            None => &mut [],
        }
    }
    /// Elements: primitives for a type of one primitive, else instances.
    fn count(&self) -> usize {
        self.layout.elements
    }
    fn typed_mut(&mut self) -> Option<&TypedBuffer> {
        self.layout.typed()
    }
    fn typed_receive(&mut self) -> Option<&TypedBuffer> {
        self.layout.typed_receive()
    }
    fn message_signature(&self) -> u32 {
        self.layout.signature
    }
    fn type_words(&self) -> Option<(&[u64], usize)> {
        Some(self.layout.type_words())
    }
}

impl Status {
    /// Instances of `ty` in the message (`MPI_Get_count` with a derived
    /// datatype, MPI 4.1 §3.2.5); `None` (`MPI_UNDEFINED`) when its length
    /// is not a whole number of instances. A type of size 0: `Some(0)` for
    /// an empty message.
    pub fn count_of(&self, ty: &TypeRef<'_>) -> Option<usize> {
        let size = ty.size();
        let bytes = self.bytes as u64;
        if size == 0 {
            return (bytes == 0).then_some(0);
        }
        bytes.is_multiple_of(size).then(|| (bytes / size) as usize)
    }

    /// Primitive elements of `ty`'s signature in the message
    /// (`MPI_Get_elements`, MPI 4.1 §5.1.11): counts a partly filled
    /// instance; `None` (`MPI_UNDEFINED`) when the message ends inside a
    /// primitive.
    pub fn elements_of(&self, ty: &TypeRef<'_>) -> Option<usize> {
        ty.elements_in(self.bytes as u64).map(|n| n as usize)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread: self-sends of views, eager
    //! and streamed, and the argument checks. Multi-rank cases run on each
    //! backend (check/tests/views.rs, check/tests/view_collectives.rs).
    extern crate std;
    use super::*;
    use crate::communicator::{Communicator, World};
    #[cfg(feature = "views")]
    use crate::derived::subarray_2d;
    use crate::derived::vector;
    use crate::layout::WorldConfig;
    #[cfg(feature = "views")]
    use crate::layout::FLAG_FORCE_STREAMING;
    #[cfg(feature = "views")]
    use crate::point_to_point::send_receive_replace_into;
    use crate::point_to_point::{Destination, Source};
    use crate::ErrorClass;
    use std::vec;
    use std::vec::Vec;

    fn with_world(config: WorldConfig, f: impl FnOnce(&World)) {
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        f(&world);
    }

    #[test]
    #[cfg(feature = "views")]
    fn a_vector_view_travels_packed_and_matches_a_plain_slice() {
        with_world(WorldConfig::new(1, 1), |w| {
            let enc = vector::<u32>(3, 2, 4);
            let ty = TypeRef::new(&enc).unwrap();
            let src: Vec<u32> = (0..12).collect();
            let v = View::with_count_and_datatype(&src[..], 1, &ty).unwrap();
            assert!(!v.is_contiguous());
            assert_eq!((v.packed_bytes(), Buffer::count(&v)), (24, 6));
            let me = w.process_at_rank(0);
            me.send_with_tag(&v, 3).unwrap();
            let mut plain = [0u32; 6];
            let s = me.receive_into(&mut plain).unwrap();
            assert_eq!(plain, [0, 1, 4, 5, 8, 9]);
            assert_eq!(
                (s.count::<u32>(), s.count_of(&ty), s.elements_of(&ty)),
                (Some(6), Some(1), Some(6))
            );
            // Plain slice out, view in: the gaps stay untouched.
            me.send(&[7u32, 8, 9, 10, 11, 12][..]).unwrap();
            let mut dst = [0u32; 12];
            let mut mv = MutView::with_count_and_datatype(&mut dst[..], 1, &ty).unwrap();
            me.receive_into(&mut mv).unwrap();
            assert_eq!(dst, [7, 8, 0, 0, 9, 10, 0, 0, 11, 12, 0, 0]);
        });
    }

    #[test]
    #[cfg(feature = "views")]
    fn large_views_stream_through_the_slot_both_ways() {
        for flags in [0, FLAG_FORCE_STREAMING] {
            let mut c = WorldConfig::new(1, 1);
            c.flags = flags;
            with_world(c, |w| {
                // A 64 x 64 f64 matrix's column block 10..50 of every row:
                // 64 x 40 x 8 = 20 480 bytes, beyond a slot.
                let enc = subarray_2d::<f64>([64, 64], [64, 40], [0, 10]);
                let ty = TypeRef::new(&enc).unwrap();
                let src: Vec<f64> = (0..64 * 64).map(|i| i as f64).collect();
                let mut dst = vec![-1.0f64; 64 * 64];
                let me = w.process_at_rank(0);
                {
                    let v = View::with_count_and_datatype(&src[..], 1, &ty).unwrap();
                    let mut mv = MutView::with_count_and_datatype(&mut dst[..], 1, &ty).unwrap();
                    let s = crate::point_to_point::send_receive_into(&v, &me, &mut mv, &me).unwrap();
                    assert_eq!(s.bytes(), 64 * 40 * 8);
                }
                for (i, (&d, &x)) in dst.iter().zip(&src).enumerate() {
                    let col = i % 64;
                    assert_eq!(d, if (10..50).contains(&col) { x } else { -1.0 }, "element {i}");
                }
                // Replace: the view's packed positions go out and come back.
                let mut buf = src.clone();
                let mut mv = MutView::with_count_and_datatype(&mut buf[..], 1, &ty).unwrap();
                send_receive_replace_into(&mut mv, &me, &me).unwrap();
                assert_eq!(buf, src);
            });
        }
    }

    #[test]
    fn contiguous_types_are_plain_bytes() {
        with_world(WorldConfig::new(1, 1), |w| {
            let enc = vector::<u16>(4, 2, 2);
            let ty = TypeRef::new(&enc).unwrap();
            let src: Vec<u16> = (0..8).collect();
            let v = View::with_count_and_datatype(&src[..], 1, &ty).unwrap();
            assert!(v.is_contiguous() && v.typed().is_none());
            assert_eq!(v.as_bytes().len(), 16);
            w.process_at_rank(0).send(&v).unwrap();
            let mut got = [0u16; 8];
            w.any_process().receive_into(&mut got).unwrap();
            assert_eq!(&got[..], &src[..]);
        });
    }

    #[test]
    #[cfg(not(feature = "views"))]
    fn without_the_feature_only_contiguous_views_are_made() {
        let enc = vector::<u32>(3, 1, 2);
        let ty = TypeRef::new(&enc).unwrap();
        let src = [1u32, 2, 3, 4, 5];
        assert_eq!(
            View::with_count_and_datatype(&src[..], 1, &ty)
                .unwrap_err()
                .class(),
            ErrorClass::Type
        );
        let run = vector::<u32>(2, 2, 2);
        let ty = TypeRef::new(&run).unwrap();
        assert!(View::with_count_and_datatype(&src[..], 1, &ty)
            .unwrap()
            .is_contiguous());
    }

    #[test]
    #[cfg(feature = "views")]
    fn mismatches_truncation_and_bad_buffers_are_error_classes() {
        with_world(WorldConfig::new(1, 1), |w| {
            let enc = vector::<u32>(3, 1, 2);
            let ty = TypeRef::new(&enc).unwrap();
            let src = [1u32, 2, 3, 4, 5];
            let me = w.process_at_rank(0);
            // A buffer shorter than count x extent.
            assert_eq!(
                View::with_count_and_datatype(&src[..], 2, &ty)
                    .unwrap_err()
                    .class(),
                ErrorClass::Arg
            );
            assert_eq!(
                View::with_origin(&src[..], 21, 1, &ty).unwrap_err().class(),
                ErrorClass::Arg
            );
            assert_eq!(
                View::with_count_and_datatype(&src[..], usize::MAX / 2, &ty)
                    .unwrap_err()
                    .class(),
                ErrorClass::Count
            );
            let v = View::with_count_and_datatype(&src[..], 1, &ty).unwrap();
            // u32 signature into f32: MPI_ERR_TYPE, consumed.
            me.send(&v).unwrap();
            let mut f = [0f32; 3];
            assert_eq!(me.receive_into(&mut f[..]).unwrap_err().class(), ErrorClass::Type);
            // Into a view of two elements: truncated, first two kept.
            me.send(&v).unwrap();
            let enc2 = vector::<u32>(2, 1, 2);
            let ty2 = TypeRef::new(&enc2).unwrap();
            let mut dst = [0u32; 4];
            let mut mv = MutView::with_count_and_datatype(&mut dst[..], 1, &ty2).unwrap();
            assert_eq!(
                me.receive_into(&mut mv).unwrap_err().class(),
                ErrorClass::Truncate
            );
            assert_eq!(dst, [1, 0, 3, 0]);
        });
    }
}
