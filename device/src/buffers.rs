//! Buffers as the collectives and the non-blocking slots address them: by
//! packed position, plain or through a view's typed buffer.

use crate::datatype::{Buffer, BufferMut, TypedBuffer};
use crate::shim;

/// One side of a collective's data, addressed by packed position: a plain
/// buffer, or a [`View`](crate::view::View) of a non-contiguous derived
/// datatype, walked slot by slot as the point-to-point engine does. Every
/// data-moving collective of the world (broadcast, gather, scatter,
/// all-gather, all-to-all, fixed and varcount, in place or not;
/// docs/datatypes.md) moves every byte through these two calls.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    /// Bytes at this address.
    Plain(*mut u8),
    /// A view's typed buffer.
    Typed(*const TypedBuffer),
}

impl Side {
    /// A send buffer's side and packed length.
    #[inline(always)]
    pub(crate) fn of<B: Buffer + ?Sized>(b: &B) -> (Side, usize) {
        match b.typed() {
            Some(t) => (Side::Typed(t), t.packed),
            None => {
                let bytes = b.as_bytes();
                (Side::Plain(bytes.as_ptr() as *mut u8), bytes.len())
            }
        }
    }

    /// A receive buffer's side and packed length.
    #[inline(always)]
    pub(crate) fn of_mut<B: BufferMut + ?Sized>(b: &mut B) -> (Side, usize) {
        match b.typed_mut() {
            Some(t) => (Side::Typed(t), t.packed),
            None => {
                let bytes = b.as_bytes_mut();
                (Side::Plain(bytes.as_mut_ptr()), bytes.len())
            }
        }
    }

    /// Copies packed bytes `at..at + n` of this side to `dst`; false when a
    /// typed walk failed (its encoding changed under the view).
    ///
    /// # Safety
    /// The side's buffer is borrowed for the call and holds `at + n` packed
    /// bytes; `dst` is valid for `n` bytes.
    #[inline(always)]
    pub(crate) unsafe fn read(self, at: usize, dst: *mut u8, n: usize) -> bool {
        match self {
            Side::Plain(p) => {
                // SAFETY: forwarded from the caller.
                unsafe { shim::copy_bytes(dst, p.add(at), n) };
                true
            }
            // SAFETY: forwarded from the caller.
            Side::Typed(t) if cfg!(feature = "views") => unsafe {
                crate::typemap::move_typed(&*t, true, at as u64, dst, n as u64)
            },
            Side::Typed(_) => false,
        }
    }

    /// Copies `n` bytes at `src` to packed bytes `at..at + n` of this side;
    /// false when a typed walk failed.
    ///
    /// # Safety
    /// The side's buffer is borrowed exclusively for the call and holds
    /// `at + n` packed bytes; `src` is valid for `n` bytes.
    #[inline(always)]
    pub(crate) unsafe fn write(self, at: usize, src: *const u8, n: usize) -> bool {
        match self {
            Side::Plain(p) => {
                // SAFETY: forwarded from the caller.
                unsafe { shim::copy_bytes(p.add(at), src, n) };
                true
            }
            // SAFETY: forwarded from the caller.
            Side::Typed(t) if cfg!(feature = "views") => unsafe {
                crate::typemap::move_typed(&*t, false, at as u64, src as *mut u8, n as u64)
            },
            Side::Typed(_) => false,
        }
    }

    /// [`Side::read`] with a plain side's copy in a call of its own, for a
    /// caller that holds its rounds' values across the copy (a
    /// broadcast): inlined, the copy's registers add to them.
    ///
    /// # Safety
    /// As for [`Side::read`].
    #[inline(always)]
    pub(crate) unsafe fn read_apart(self, at: usize, dst: *mut u8, n: usize) -> bool {
        match self {
            // SAFETY: forwarded from the caller.
            Side::Plain(p) => unsafe { copy_apart(dst, p.add(at), n) },
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.read(at, dst, n) },
        }
    }

    /// [`Side::write`] with a plain side's copy in a call of its own, as
    /// [`Side::read_apart`].
    ///
    /// # Safety
    /// As for [`Side::write`].
    #[inline(always)]
    pub(crate) unsafe fn write_apart(self, at: usize, src: *const u8, n: usize) -> bool {
        match self {
            // SAFETY: forwarded from the caller.
            Side::Plain(p) => unsafe { copy_apart(p.add(at), src, n) },
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.write(at, src, n) },
        }
    }
}

/// [`shim::copy_bytes`] as a call (true, for [`Side::read_apart`]).
///
/// # Safety
/// As for [`shim::copy_bytes`].
#[inline(never)]
unsafe fn copy_apart(dst: *mut u8, src: *const u8, n: usize) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { shim::copy_bytes(dst, src, n) };
    true
}

/// A collective's buffer from packed byte `at` on: plain bytes, or a view
/// of a non-contiguous derived datatype whose parts travel as typed
/// messages (the engine packs and unpacks them as it copies; MPI 4.1
/// section 6.1: a collective's buffers are `(buf, count, datatype)`).
#[derive(Clone, Copy)]
pub(crate) struct Place {
    /// The buffer.
    pub(crate) side: Side,
    /// The first packed byte.
    pub(crate) at: usize,
}

impl Place {
    /// Plain bytes at `p`.
    pub(crate) fn plain(p: *const u8) -> Place {
        Place {
            side: Side::Plain(p as *mut u8),
            at: 0,
        }
    }

    /// Packed bytes from `n` further on.
    pub(crate) fn add(self, n: usize) -> Place {
        Place {
            side: self.side,
            at: self.at + n,
        }
    }
}
