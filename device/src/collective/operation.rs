//! Reduction operations (MPI 4.1 §6.9: `SystemOperation`, `UserOperation`)
//! and the element views of a collective's operands (`Elements`,
//! `ElementsMut`): what every collective algorithm takes, below them all.

use crate::codes::{
    OP_BAND, OP_BOR, OP_BXOR, OP_LAND, OP_LOR, OP_MAX, OP_MIN, OP_NO_OP, OP_PRODUCT, OP_REPLACE, OP_SUM,
};
use crate::datatype::{Equivalence, ID_F32, ID_F64};
use crate::error::Error;

/// An associative reduction operation on `T` (MPI 6.9).
pub trait Operation<T> {
    /// `MPI_ERR_OP` when the operation is not defined for `T`.
    fn check(&self) -> Result<(), Error>;
    /// `left op right`; `left` always holds the lower ranks' values.
    fn apply(&self, left: &T, right: &T) -> T;
    /// The predefined operation's code ([`SystemOperation::code`]); 0 for
    /// any other. A non-blocking reduction across processes needs one
    /// (the host's relay applies it: docs/distributed.md).
    #[doc(hidden)]
    fn system_code(&self) -> u32 {
        0
    }
    /// `acc op values[from] op ... op values[to - 1]` (`to <= N`), in
    /// order: a batch of operands loaded together. A predefined operation
    /// picks its arm once for the batch, so that the loop over it unrolls
    /// and the values stay in registers (a `match` per element kept the
    /// batch in local memory on the GPU).
    #[doc(hidden)]
    #[inline(always)]
    fn fold_batch<const N: usize>(&self, acc: T, values: &[T; N], from: usize, to: usize) -> T
    where
        Self: Sized,
        T: Copy,
    {
        fold_with(acc, values, from, to, |a, b| self.apply(&a, &b))
    }
}

/// [`Operation::fold_batch`] with `f` as the operation.
#[inline(always)]
fn fold_with<T: Copy, const N: usize>(
    mut acc: T,
    values: &[T; N],
    from: usize,
    to: usize,
    f: impl Fn(T, T) -> T,
) -> T {
    // Constant indices: the loop unrolls, `values` stays in registers.
    for (j, v) in values.iter().enumerate() {
        if from <= j && j < to {
            acc = f(acc, *v);
        }
    }
    acc
}

/// The predefined operations (`MPI_SUM`, `MPI_PROD`, ...; MPI 6.9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemOperation(u32);

impl SystemOperation {
    /// `MPI_SUM` (integers wrap on overflow).
    pub const fn sum() -> Self {
        SystemOperation(OP_SUM)
    }
    /// `MPI_PROD` (integers wrap on overflow).
    pub const fn product() -> Self {
        SystemOperation(OP_PRODUCT)
    }
    /// `MPI_MIN`.
    pub const fn min() -> Self {
        SystemOperation(OP_MIN)
    }
    /// `MPI_MAX`.
    pub const fn max() -> Self {
        SystemOperation(OP_MAX)
    }
    /// `MPI_BAND` (integers only).
    pub const fn bitwise_and() -> Self {
        SystemOperation(OP_BAND)
    }
    /// `MPI_BOR` (integers only).
    pub const fn bitwise_or() -> Self {
        SystemOperation(OP_BOR)
    }
    /// `MPI_BXOR` (integers only).
    pub const fn bitwise_xor() -> Self {
        SystemOperation(OP_BXOR)
    }
    /// `MPI_LAND` (integers only; nonzero is true, the result is 0 or 1).
    pub const fn logical_and() -> Self {
        SystemOperation(OP_LAND)
    }
    /// `MPI_LOR` (integers only; nonzero is true, the result is 0 or 1).
    pub const fn logical_or() -> Self {
        SystemOperation(OP_LOR)
    }
    /// `MPI_REPLACE`: the origin's value replaces the target's. For the
    /// one-sided accumulates only (`crate::window`, MPI 4.1 §12.3.4); a
    /// collective given it fails with `MPI_ERR_OP`.
    pub const fn replace() -> Self {
        SystemOperation(OP_REPLACE)
    }
    /// `MPI_NO_OP`: the target's value stays (a `get_accumulate` or
    /// `fetch_and_op` with it is an atomic read). For the one-sided
    /// accumulates only; a collective given it fails with `MPI_ERR_OP`.
    pub const fn no_op() -> Self {
        SystemOperation(OP_NO_OP)
    }
    /// `target op origin` of a one-sided accumulate (`crate::window`):
    /// `MPI_REPLACE` and `MPI_NO_OP` besides the operations every
    /// collective takes; `MPI_ERR_OP` as [`Operation::check`] for others.
    pub(crate) fn accumulate<T>(&self, target: &T, origin: &T) -> T
    where
        T: Copy,
        Self: Operation<T>,
    {
        match self.0 {
            OP_REPLACE => *origin,
            OP_NO_OP => *target,
            _ => self.apply(target, origin),
        }
    }
    /// [`Operation::check`] for a one-sided accumulate: also
    /// `MPI_REPLACE` and `MPI_NO_OP`.
    pub(crate) fn check_accumulate<T>(&self) -> Result<(), Error>
    where
        Self: Operation<T>,
    {
        match self.0 {
            OP_REPLACE | OP_NO_OP => Ok(()),
            _ => self.check(),
        }
    }
    /// The operation's code (as carried by `Error::InvalidOperation`).
    pub const fn code(&self) -> u32 {
        self.0
    }
    /// The operation of a code ([`SystemOperation::code`]).
    #[doc(hidden)]
    pub const fn from_code(code: u32) -> Self {
        SystemOperation(code)
    }
    /// The MPI name of an operation code.
    pub fn name_of(code: u32) -> &'static str {
        crate::codes::operation_name(code)
    }
}

macro_rules! integer_ops {
    ($($t:ty),*) => {$(
        impl Operation<$t> for SystemOperation {
            fn check(&self) -> Result<(), Error> {
                if (OP_SUM..=OP_LOR).contains(&self.0) {
                    Ok(())
                } else {
                    Err(Error::InvalidOperation { op: self.0, datatype: <$t>::DATATYPE.id })
                }
            }
            fn system_code(&self) -> u32 {
                self.0
            }
            fn apply(&self, a: &$t, b: &$t) -> $t {
                let (a, b) = (*a, *b);
                match self.0 {
                    OP_SUM => a.wrapping_add(b),
                    OP_PRODUCT => a.wrapping_mul(b),
                    OP_MIN => a.min(b),
                    OP_MAX => a.max(b),
                    OP_BAND => a & b,
                    OP_BOR => a | b,
                    OP_BXOR => a ^ b,
                    OP_LAND => ((a != 0) && (b != 0)) as $t,
                    _ => ((a != 0) || (b != 0)) as $t,
                }
            }
            #[inline(always)]
            fn fold_batch<const N: usize>(&self, acc: $t, values: &[$t; N], from: usize, to: usize) -> $t
            where
                Self: Sized,
                $t: Copy,
            {
                match self.0 {
                    OP_SUM => fold_with(acc, values, from, to, |a: $t, b: $t| a.wrapping_add(b)),
                    OP_PRODUCT => fold_with(acc, values, from, to, |a: $t, b: $t| a.wrapping_mul(b)),
                    OP_MIN => fold_with(acc, values, from, to, |a: $t, b: $t| a.min(b)),
                    OP_MAX => fold_with(acc, values, from, to, |a: $t, b: $t| a.max(b)),
                    OP_BAND => fold_with(acc, values, from, to, |a: $t, b: $t| a & b),
                    OP_BOR => fold_with(acc, values, from, to, |a: $t, b: $t| a | b),
                    OP_BXOR => fold_with(acc, values, from, to, |a: $t, b: $t| a ^ b),
                    OP_LAND => fold_with(acc, values, from, to, |a: $t, b: $t| ((a != 0) && (b != 0)) as $t),
                    _ => fold_with(acc, values, from, to, |a: $t, b: $t| ((a != 0) || (b != 0)) as $t),
                }
            }
        }
    )*};
}

integer_ops!(u8, i8, u16, i16, u32, i32, u64, i64);

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl Operation<$t> for SystemOperation {
            fn check(&self) -> Result<(), Error> {
                if (OP_SUM..=OP_MAX).contains(&self.0) {
                    Ok(())
                } else {
                    Err(Error::InvalidOperation { op: self.0, datatype: <$t>::DATATYPE.id })
                }
            }
            fn system_code(&self) -> u32 {
                self.0
            }
            fn apply(&self, a: &$t, b: &$t) -> $t {
                let (a, b) = (*a, *b);
                match self.0 {
                    OP_SUM => a + b,
                    OP_PRODUCT => a * b,
                    OP_MIN => if b < a { b } else { a },
                    _ => if b > a { b } else { a },
                }
            }
            #[inline(always)]
            fn fold_batch<const N: usize>(&self, acc: $t, values: &[$t; N], from: usize, to: usize) -> $t
            where
                Self: Sized,
                $t: Copy,
            {
                match self.0 {
                    OP_SUM => fold_with(acc, values, from, to, |a: $t, b: $t| a + b),
                    OP_PRODUCT => fold_with(acc, values, from, to, |a: $t, b: $t| a * b),
                    OP_MIN => fold_with(acc, values, from, to, |a: $t, b: $t| if b < a { b } else { a }),
                    _ => fold_with(acc, values, from, to, |a: $t, b: $t| if b > a { b } else { a }),
                }
            }
        }
    )*};
}

float_ops!(f32, f64);

const _: () = assert!(ID_F32 != ID_F64);

/// A user-defined operation (`MPI_Op_create`), commutative or not.
///
/// The library combines operands in rank order whatever the flag says
/// (MPI 6.9.5 allows an implementation to use the order for commutative
/// operations too), so the flag changes no result; it is kept for
/// programs that ask ([`UserOperation::is_commutative`]).
///
/// Standard section: MPI 4.1 §6.9.5.
#[derive(Clone, Copy)]
pub struct UserOperation<F> {
    f: F,
    commutative: bool,
}

impl<F> UserOperation<F> {
    /// Wraps `f(left, right)`, which must be associative; the same as
    /// [`UserOperation::associative`].
    pub const fn new(f: F) -> Self {
        UserOperation {
            f,
            commutative: false,
        }
    }
    /// An associative, possibly non-commutative operation
    /// (`MPI_Op_create(f, commute = false)`): operands are combined in rank
    /// order, `left` always holding lower ranks.
    pub const fn associative(f: F) -> Self {
        UserOperation {
            f,
            commutative: false,
        }
    }
    /// An associative and commutative operation
    /// (`MPI_Op_create(f, commute = true)`).
    pub const fn commutative(f: F) -> Self {
        UserOperation { f, commutative: true }
    }
    /// Whether the operation was declared commutative.
    pub const fn is_commutative(&self) -> bool {
        self.commutative
    }
}

impl<T, F: Fn(&T, &T) -> T> Operation<T> for UserOperation<F> {
    fn check(&self) -> Result<(), Error> {
        Ok(())
    }
    fn apply(&self, left: &T, right: &T) -> T {
        (self.f)(left, right)
    }
}

/// One value or a slice of values, as the operand of a reduction.
pub trait Elements<T> {
    /// The elements.
    fn elements(&self) -> &[T];
}

/// One value or a slice of values, as the result of a reduction.
pub trait ElementsMut<T> {
    /// The elements, writable.
    fn elements_mut(&mut self) -> &mut [T];
}

impl<T: Equivalence> Elements<T> for T {
    fn elements(&self) -> &[T] {
        core::slice::from_ref(self)
    }
}
impl<T: Equivalence> Elements<T> for [T] {
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Equivalence> ElementsMut<T> for T {
    fn elements_mut(&mut self) -> &mut [T] {
        core::slice::from_mut(self)
    }
}
impl<T: Equivalence> ElementsMut<T> for [T] {
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}
