//! Derived datatypes (MPI 4.1 chapter 5) on the host: build a type from the
//! constructors of section 5.1, query it, commit it into the position-
//! independent encoding that device code walks ([`gpu_mpi_device::derived`]),
//! and pack or unpack with the reference model ([`reference`](mod@reference)) or on a device
//! (`Device::pack`, `Device::unpack`, in the crate's `pack.rs`: this module
//! does not depend on the device).
//!
//! ```
//! use gpu_mpi_host::datatype::{Primitive, UserDatatype};
//! // Column 0 of a 4 x 4 matrix of f64: 4 blocks of 1 element, stride 4.
//! let column = UserDatatype::vector(4, 1, 4, &Primitive::F64.into())?;
//! assert_eq!((column.size(), column.extent()), (32, 104));
//! let committed = column.commit()?;
//! let src: Vec<u8> = (0..128).collect();
//! let packed = committed.pack(&src, 0, 1)?;
//! assert_eq!(&packed[..16], [&src[..8], &src[32..40]].concat());
//! # Ok::<(), gpu_mpi_host::datatype::DatatypeError>(())
//! ```
//!
//! Counts, block lengths and displacements are `i64` (MPI's `MPI_Count`
//! flavour): a negative count or block length is an error of class
//! `MPI_ERR_COUNT`; every size, extent and displacement is computed with
//! checked arithmetic and overflow is `MPI_ERR_TYPE`; a subarray out of range
//! or arrays of different lengths are `MPI_ERR_ARG`. No constructor panics.

mod commit;
pub mod reference;

pub use commit::CommittedType;

use gpu_mpi_device::datatype::{
    ID_BYTE, ID_F32, ID_F64, ID_I16, ID_I32, ID_I64, ID_I8, ID_U16, ID_U32, ID_U64,
};
use gpu_mpi_device::{Equivalence, ErrorClass};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Deepest nesting of constructors a type may have (a primitive is depth 0).
pub const MAX_DEPTH: u32 = 64;
/// Most work units a committed type may have.
pub const MAX_UNITS: usize = 1 << 22;
/// Most runs a committed type's signature may have.
pub const MAX_SIGNATURE_RUNS: usize = 1 << 22;

/// A primitive datatype: the types that have device [`Equivalence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `u8`, `MPI_BYTE`.
    U8,
    /// `i8`, `MPI_INT8_T`.
    I8,
    /// `u16`, `MPI_UINT16_T`.
    U16,
    /// `i16`, `MPI_INT16_T`.
    I16,
    /// `u32`, `MPI_UINT32_T`.
    U32,
    /// `i32`, `MPI_INT32_T`.
    I32,
    /// `u64`, `MPI_UINT64_T`.
    U64,
    /// `i64`, `MPI_INT64_T`.
    I64,
    /// `f32`, `MPI_FLOAT`.
    F32,
    /// `f64`, `MPI_DOUBLE`.
    F64,
}

impl Primitive {
    /// Every primitive.
    pub const ALL: [Primitive; 10] = [
        Primitive::U8,
        Primitive::I8,
        Primitive::U16,
        Primitive::I16,
        Primitive::U32,
        Primitive::I32,
        Primitive::U64,
        Primitive::I64,
        Primitive::F32,
        Primitive::F64,
    ];

    /// The device datatype id (`gpu_mpi_device::datatype::ID_*`).
    pub fn id(self) -> u32 {
        match self {
            Primitive::U8 => ID_BYTE,
            Primitive::I8 => ID_I8,
            Primitive::U16 => ID_U16,
            Primitive::I16 => ID_I16,
            Primitive::U32 => ID_U32,
            Primitive::I32 => ID_I32,
            Primitive::U64 => ID_U64,
            Primitive::I64 => ID_I64,
            Primitive::F32 => ID_F32,
            Primitive::F64 => ID_F64,
        }
    }

    /// The primitive of a device datatype id.
    pub fn from_id(id: u32) -> Option<Primitive> {
        Primitive::ALL.into_iter().find(|p| p.id() == id)
    }

    /// The primitive of a device type (`None` for user `#[repr(C)]` types).
    pub fn of<T: Equivalence>() -> Option<Primitive> {
        Primitive::from_id(T::DATATYPE.id)
    }

    /// Bytes of one element (also its alignment).
    pub fn size(self) -> u64 {
        match self {
            Primitive::U8 | Primitive::I8 => 1,
            Primitive::U16 | Primitive::I16 => 2,
            Primitive::U32 | Primitive::I32 | Primitive::F32 => 4,
            Primitive::U64 | Primitive::I64 | Primitive::F64 => 8,
        }
    }
}

impl From<Primitive> for UserDatatype {
    fn from(p: Primitive) -> UserDatatype {
        UserDatatype::primitive(p)
    }
}

/// Storage order of a subarray's dimensions (MPI 4.1 section 5.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// `MPI_ORDER_C`: the last dimension varies fastest.
    C,
    /// `MPI_ORDER_FORTRAN`: the first dimension varies fastest.
    Fortran,
}

/// Which walk [`Device::pack_into_using`](crate::Device::pack_into_using) and [`Device::unpack_using`](crate::Device::unpack_using) run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PackStrategy {
    /// The tiled path when [`TileShape::profitable`](gpu_mpi_device::derived::TileShape::profitable) says so (a one-unit
    /// type whose blocks of 1 to 16 bytes lie at least a 32-byte sector
    /// apart along a row while consecutive rows are one block apart: a
    /// transpose, columns of a matrix), the direct path otherwise.
    #[default]
    Auto,
    /// Every rank copies its chunks straight between the buffers.
    Direct,
    /// Every block moves tiles through its shared scratch; a type and
    /// count without a [`TileShape`](gpu_mpi_device::derived::TileShape) is [`DatatypeError::NotTileable`].
    Tiled,
}

/// Why a constructor, a commit or a reference walk refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatatypeError {
    /// A count or block length below zero (`MPI_ERR_COUNT`).
    #[error("MPI_ERR_COUNT: {what} is {value}, below zero")]
    NegativeCount {
        /// Which argument.
        what: &'static str,
        /// Its value.
        value: i64,
    },
    /// Argument arrays of different lengths (`MPI_ERR_ARG`).
    #[error("MPI_ERR_ARG: {what} has {got} entries, {expected} expected")]
    LengthMismatch {
        /// Which array.
        what: &'static str,
        /// Entries expected (the first array's length).
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A size, extent or displacement does not fit in 64 bits (`MPI_ERR_TYPE`).
    #[error("MPI_ERR_TYPE: the {what} overflows 64 bits")]
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
    /// A subarray with no dimensions, a dimension of size below 1, or a
    /// subsize or start outside its dimension (`MPI_ERR_ARG`).
    #[error("MPI_ERR_ARG: subarray dimension {dim}: size {size}, subsize {subsize}, start {start} (needs size >= 1, 0 <= start, 0 <= subsize, start + subsize <= size)")]
    SubarrayOutOfRange {
        /// The dimension.
        dim: usize,
        /// `array_of_sizes[dim]`.
        size: i64,
        /// `array_of_subsizes[dim]`.
        subsize: i64,
        /// `array_of_starts[dim]`.
        start: i64,
    },
    /// A subarray of zero dimensions (`MPI_ERR_ARG`).
    #[error("MPI_ERR_ARG: a subarray needs at least one dimension")]
    NoDimensions,
    /// Constructors nested deeper than [`MAX_DEPTH`] (`MPI_ERR_TYPE`).
    #[error("MPI_ERR_TYPE: constructors nested {depth} deep, at most {max}")]
    TooDeep {
        /// The depth.
        depth: u32,
        /// [`MAX_DEPTH`].
        max: u32,
    },
    /// The committed type would have more work units or signature runs than
    /// the encoding allows (`MPI_ERR_TYPE`).
    #[error("MPI_ERR_TYPE: the committed type needs more than {max} {what}")]
    TooLarge {
        /// "work units" or "signature runs".
        what: &'static str,
        /// The limit.
        max: usize,
    },
    /// A chunk size of zero for the cooperative walk (`MPI_ERR_ARG`).
    #[error("MPI_ERR_ARG: the cooperative walk's chunk must be at least 1 byte")]
    ZeroChunk,
    /// A buffer too short for the typemap of `count` instances
    /// (`MPI_ERR_ARG`; reference model and host checks).
    #[error("MPI_ERR_ARG: byte {index} is outside the buffer of {len} bytes")]
    OutOfBuffer {
        /// The first byte outside (or below 0).
        index: i64,
        /// The buffer's length.
        len: usize,
    },
    /// The tiled path forced ([`PackStrategy::Tiled`]) for a type and count
    /// it cannot move: more than one work unit, blocks longer than 16 bytes,
    /// or fewer than two rows or columns (`MPI_ERR_TYPE`).
    #[error("MPI_ERR_TYPE: the tiled pack path cannot move this type and count")]
    NotTileable,
}

impl DatatypeError {
    /// The MPI error class.
    pub fn class(&self) -> ErrorClass {
        match self {
            DatatypeError::NegativeCount { .. } => ErrorClass::Count,
            DatatypeError::Overflow { .. }
            | DatatypeError::TooDeep { .. }
            | DatatypeError::TooLarge { .. }
            | DatatypeError::NotTileable => ErrorClass::Type,
            DatatypeError::LengthMismatch { .. }
            | DatatypeError::SubarrayOutOfRange { .. }
            | DatatypeError::NoDimensions
            | DatatypeError::ZeroChunk
            | DatatypeError::OutOfBuffer { .. } => ErrorClass::Arg,
        }
    }
}

/// What `MPI_Get_elements` / `MPI_Get_count` give for a byte count: a number,
/// or `MPI_UNDEFINED` (`None` in the methods that return `Option<u64>`) when
/// the bytes do not end on an element (or instance) boundary.
pub type Counted = Option<u64>;

/// How a type was made (its constructor and arguments).
#[derive(Debug)]
pub(crate) enum Kind {
    Primitive(Primitive),
    Contiguous {
        count: u64,
        child: UserDatatype,
    },
    /// `vector` (stride in child extents) and `hvector` (stride in bytes).
    Vector {
        count: u64,
        blocklength: u64,
        stride: i64,
        bytes: bool,
        child: UserDatatype,
    },
    /// `indexed`, `hindexed`, `indexed_block`, `hindexed_block`.
    Indexed {
        blocklengths: Vec<u64>,
        displacements: Vec<i64>,
        bytes: bool,
        child: UserDatatype,
    },
    Struct {
        blocklengths: Vec<u64>,
        displacements: Vec<i64>,
        types: Vec<UserDatatype>,
    },
    Subarray {
        sizes: Vec<u64>,
        subsizes: Vec<u64>,
        starts: Vec<u64>,
        order: Order,
        child: UserDatatype,
    },
    Resized {
        child: UserDatatype,
    },
    Dup {
        child: UserDatatype,
    },
}

#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    size: u64,
    lb: i64,
    ub: i64,
    true_lb: i64,
    true_ub: i64,
    align: u64,
    depth: u32,
    elements: u64,
    uid: u64,
    pub(crate) flat: OnceLock<Result<commit::Flat, DatatypeError>>,
}

/// A datatype: a primitive or a derived type built by the constructors of
/// MPI 4.1 section 5.1, nesting any of them. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct UserDatatype(pub(crate) Arc<Node>);

fn count(what: &'static str, v: i64) -> Result<u64, DatatypeError> {
    u64::try_from(v).map_err(|_| DatatypeError::NegativeCount { what, value: v })
}

fn ovf(what: &'static str) -> DatatypeError {
    DatatypeError::Overflow { what }
}

fn same_len(what: &'static str, expected: usize, got: usize) -> Result<(), DatatypeError> {
    if expected == got {
        Ok(())
    } else {
        Err(DatatypeError::LengthMismatch { what, expected, got })
    }
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// Bounds accumulated over the placements of a new type.
struct Acc {
    size: u64,
    elements: u64,
    /// `(lb, ub)` over every copy placed (markers included).
    bounds: Option<(i64, i64)>,
    /// `(true_lb, true_ub)` over the copies that hold data.
    data: Option<(i64, i64)>,
    align: u64,
    depth: u32,
}

fn widen(b: Option<(i64, i64)>, lo: i64, hi: i64) -> Option<(i64, i64)> {
    Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))))
}

impl Acc {
    fn new() -> Acc {
        Acc {
            size: 0,
            elements: 0,
            bounds: None,
            data: None,
            align: 1,
            depth: 0,
        }
    }

    /// `k` copies of `c` at `d, d + extent(c), ...`.
    fn place(&mut self, d: i64, k: u64, c: &UserDatatype) -> Result<(), DatatypeError> {
        let n = &c.0;
        self.depth = self.depth.max(n.depth + 1);
        self.align = self.align.max(n.align);
        if k == 0 {
            return Ok(());
        }
        let span = i64::try_from(k - 1)
            .ok()
            .and_then(|k1| k1.checked_mul(c.extent()))
            .ok_or(ovf("extent"))?;
        let (lo, hi) = (span.min(0), span.max(0));
        let add = |a: i64, b: i64, x: i64| {
            a.checked_add(b)
                .and_then(|s| s.checked_add(x))
                .ok_or(ovf("extent"))
        };
        self.bounds = widen(self.bounds, add(d, lo, n.lb)?, add(d, hi, n.ub)?);
        self.size = k
            .checked_mul(n.size)
            .and_then(|s| s.checked_add(self.size))
            .ok_or(ovf("size"))?;
        self.elements = k
            .checked_mul(n.elements)
            .and_then(|s| s.checked_add(self.elements))
            .ok_or(ovf("element count"))?;
        if n.size > 0 {
            self.data = widen(self.data, add(d, lo, n.true_lb)?, add(d, hi, n.true_ub)?);
        }
        Ok(())
    }

    fn finish(self, kind: Kind) -> Result<UserDatatype, DatatypeError> {
        if self.depth > MAX_DEPTH {
            return Err(DatatypeError::TooDeep {
                depth: self.depth,
                max: MAX_DEPTH,
            });
        }
        let (lb, ub) = self.bounds.unwrap_or((0, 0));
        let (true_lb, true_ub) = self.data.unwrap_or((0, 0));
        ub.checked_sub(lb).ok_or(ovf("extent"))?;
        true_ub.checked_sub(true_lb).ok_or(ovf("true extent"))?;
        Ok(UserDatatype(Arc::new(Node {
            kind,
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            align: self.align,
            depth: self.depth,
            elements: self.elements,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            flat: OnceLock::new(),
        })))
    }
}

fn mul_disp(d: i64, unit: i64, what: &'static str) -> Result<i64, DatatypeError> {
    d.checked_mul(unit).ok_or(ovf(what))
}

fn signed(v: u64, what: &'static str) -> Result<i64, DatatypeError> {
    i64::try_from(v).map_err(|_| ovf(what))
}

impl UserDatatype {
    /// A primitive type.
    pub fn primitive(p: Primitive) -> UserDatatype {
        let s = p.size() as i64;
        UserDatatype(Arc::new(Node {
            kind: Kind::Primitive(p),
            size: p.size(),
            lb: 0,
            ub: s,
            true_lb: 0,
            true_ub: s,
            align: p.size(),
            depth: 0,
            elements: 1,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            flat: OnceLock::new(),
        }))
    }

    /// The primitive type of `T` (`None` for user `#[repr(C)]` types).
    pub fn of<T: Equivalence>() -> Option<UserDatatype> {
        Primitive::of::<T>().map(UserDatatype::primitive)
    }

    /// `MPI_Type_contiguous` (MPI 4.1 section 5.1.2): `count` copies of
    /// `old`, one extent apart.
    pub fn contiguous(count: i64, old: &UserDatatype) -> Result<UserDatatype, DatatypeError> {
        let count = self::count("count", count)?;
        let mut acc = Acc::new();
        acc.place(0, count, old)?;
        acc.finish(Kind::Contiguous {
            count,
            child: old.clone(),
        })
    }

    /// `MPI_Type_vector` (5.1.2): `count` blocks of `blocklength` copies of
    /// `old`, block starts `stride` extents of `old` apart.
    pub fn vector(
        count: i64,
        blocklength: i64,
        stride: i64,
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        let step = mul_disp(stride, old.extent(), "stride")?;
        UserDatatype::make_vector(count, blocklength, stride, step, false, old)
    }

    /// `MPI_Type_create_hvector` (5.1.2): as [`UserDatatype::vector`] with the
    /// stride in bytes.
    pub fn hvector(
        count: i64,
        blocklength: i64,
        stride: i64,
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        UserDatatype::make_vector(count, blocklength, stride, stride, true, old)
    }

    fn make_vector(
        count: i64,
        blocklength: i64,
        stride: i64,
        step: i64,
        bytes: bool,
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        let count = self::count("count", count)?;
        let blocklength = self::count("blocklength", blocklength)?;
        let mut acc = Acc::new();
        if count > 0 {
            // The first and the last block bound the others.
            acc.place(0, blocklength, old)?;
            let last = mul_disp(signed(count - 1, "count")?, step, "displacement")?;
            acc.place(last, blocklength, old)?;
            acc.size = count
                .checked_mul(blocklength)
                .and_then(|b| b.checked_mul(old.size()))
                .ok_or(ovf("size"))?;
            acc.elements = count
                .checked_mul(blocklength)
                .and_then(|b| b.checked_mul(old.0.elements))
                .ok_or(ovf("element count"))?;
        } else {
            acc.place(0, 0, old)?;
        }
        acc.finish(Kind::Vector {
            count,
            blocklength,
            stride,
            bytes,
            child: old.clone(),
        })
    }

    /// `MPI_Type_indexed` (5.1.2): blocks of `blocklengths[i]` copies of
    /// `old` at `displacements[i]` extents of `old`.
    pub fn indexed(
        blocklengths: &[i64],
        displacements: &[i64],
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        UserDatatype::make_indexed(blocklengths, displacements, false, old)
    }

    /// `MPI_Type_create_hindexed` (5.1.2): as [`UserDatatype::indexed`] with
    /// byte displacements.
    pub fn hindexed(
        blocklengths: &[i64],
        displacements: &[i64],
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        UserDatatype::make_indexed(blocklengths, displacements, true, old)
    }

    /// `MPI_Type_create_indexed_block` (5.1.2): blocks of one length at
    /// displacements in extents of `old`.
    pub fn indexed_block(
        blocklength: i64,
        displacements: &[i64],
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        let b = vec![blocklength; displacements.len()];
        UserDatatype::make_indexed(&b, displacements, false, old)
    }

    /// `MPI_Type_create_hindexed_block` (5.1.2): blocks of one length at
    /// byte displacements.
    pub fn hindexed_block(
        blocklength: i64,
        displacements: &[i64],
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        let b = vec![blocklength; displacements.len()];
        UserDatatype::make_indexed(&b, displacements, true, old)
    }

    fn make_indexed(
        blocklengths: &[i64],
        displacements: &[i64],
        bytes: bool,
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        same_len("array_of_displacements", blocklengths.len(), displacements.len())?;
        let mut acc = Acc::new();
        let mut lens = Vec::with_capacity(blocklengths.len());
        for (&b, &d) in blocklengths.iter().zip(displacements) {
            let b = count("blocklength", b)?;
            let d = if bytes {
                d
            } else {
                mul_disp(d, old.extent(), "displacement")?
            };
            acc.place(d, b, old)?;
            lens.push(b);
        }
        if blocklengths.is_empty() {
            acc.place(0, 0, old)?;
        }
        acc.finish(Kind::Indexed {
            blocklengths: lens,
            displacements: displacements.to_vec(),
            bytes,
            child: old.clone(),
        })
    }

    /// `MPI_Type_create_struct` (5.1.2): blocks of `blocklengths[i]` copies
    /// of `types[i]` at byte displacements. The extent is padded to a
    /// multiple of the largest primitive's alignment (the `epsilon` of MPI
    /// 4.1 section 5.1.6), as C structs are.
    pub fn structured(
        blocklengths: &[i64],
        displacements: &[i64],
        types: &[UserDatatype],
    ) -> Result<UserDatatype, DatatypeError> {
        same_len("array_of_displacements", blocklengths.len(), displacements.len())?;
        same_len("array_of_types", blocklengths.len(), types.len())?;
        let mut acc = Acc::new();
        let mut lens = Vec::with_capacity(blocklengths.len());
        for ((&b, &d), t) in blocklengths.iter().zip(displacements).zip(types) {
            let b = count("blocklength", b)?;
            acc.place(d, b, t)?;
            lens.push(b);
        }
        if let Some((lb, ub)) = acc.bounds {
            let extent = ub.checked_sub(lb).ok_or(ovf("extent"))?;
            let a = signed(acc.align, "alignment")?;
            let pad = (a - extent.rem_euclid(a)) % a;
            acc.bounds = Some((lb, ub.checked_add(pad).ok_or(ovf("extent"))?));
        }
        acc.finish(Kind::Struct {
            blocklengths: lens,
            displacements: displacements.to_vec(),
            types: types.to_vec(),
        })
    }

    /// `MPI_Type_create_subarray` (5.1.3): the `subsizes` block at `starts`
    /// of an array of `sizes` elements of `old`, in C or Fortran order. Its
    /// lower bound is 0 and its extent the whole array's.
    pub fn subarray(
        sizes: &[i64],
        subsizes: &[i64],
        starts: &[i64],
        order: Order,
        old: &UserDatatype,
    ) -> Result<UserDatatype, DatatypeError> {
        if sizes.is_empty() {
            return Err(DatatypeError::NoDimensions);
        }
        same_len("array_of_subsizes", sizes.len(), subsizes.len())?;
        same_len("array_of_starts", sizes.len(), starts.len())?;
        for dim in 0..sizes.len() {
            let (size, subsize, start) = (sizes[dim], subsizes[dim], starts[dim]);
            if size < 1 || subsize < 0 || start < 0 || start.checked_add(subsize).is_none_or(|e| e > size) {
                return Err(DatatypeError::SubarrayOutOfRange {
                    dim,
                    size,
                    subsize,
                    start,
                });
            }
        }
        let u = |v: &[i64]| v.iter().map(|&x| x as u64).collect::<Vec<u64>>();
        let kind = Kind::Subarray {
            sizes: u(sizes),
            subsizes: u(subsizes),
            starts: u(starts),
            order,
            child: old.clone(),
        };
        let total = sizes
            .iter()
            .try_fold(1i64, |a, &s| a.checked_mul(s))
            .and_then(|n| n.checked_mul(old.extent()))
            .ok_or(ovf("extent"))?;
        let mut acc = Acc::new();
        let mut err = Ok(());
        subarray_rows(&kind, old.extent(), |d, k| {
            if err.is_ok() {
                err = acc.place(d, k, old);
            }
        })?;
        err?;
        acc.place(0, 0, old)?;
        acc.bounds = Some((0, total));
        acc.finish(kind)
    }

    /// `MPI_Type_create_resized` (5.1.7): `old` with lower bound `lb` and
    /// extent `extent`.
    pub fn resized(old: &UserDatatype, lb: i64, extent: i64) -> Result<UserDatatype, DatatypeError> {
        let mut acc = Acc::new();
        acc.place(0, 1, old)?;
        acc.bounds = Some((lb, lb.checked_add(extent).ok_or(ovf("extent"))?));
        acc.finish(Kind::Resized { child: old.clone() })
    }

    /// `MPI_Type_dup` (5.1.10): the same typemap, a new type.
    pub fn dup(&self) -> Result<UserDatatype, DatatypeError> {
        let mut acc = Acc::new();
        acc.place(0, 1, self)?;
        acc.finish(Kind::Dup { child: self.clone() })
    }

    /// Bytes of data in one instance (`MPI_Type_size`).
    pub fn size(&self) -> u64 {
        self.0.size
    }

    /// Lower bound (`MPI_Type_get_extent`'s `lb`).
    pub fn lb(&self) -> i64 {
        self.0.lb
    }

    /// Upper bound (`lb + extent`).
    pub fn ub(&self) -> i64 {
        self.0.ub
    }

    /// Extent (`MPI_Type_get_extent`).
    pub fn extent(&self) -> i64 {
        self.0.ub - self.0.lb
    }

    /// True lower bound (`MPI_Type_get_true_extent`): the lowest byte of data.
    pub fn true_lb(&self) -> i64 {
        self.0.true_lb
    }

    /// True extent: from the lowest to past the highest byte of data.
    pub fn true_extent(&self) -> i64 {
        self.0.true_ub - self.0.true_lb
    }

    /// Primitive elements in one instance.
    pub fn elements(&self) -> u64 {
        self.0.elements
    }

    /// Constructors nested (a primitive is 0).
    pub fn depth(&self) -> u32 {
        self.0.depth
    }

    /// A number unique to this type (a `dup` gets its own).
    pub fn uid(&self) -> u64 {
        self.0.uid
    }

    /// `MPI_Get_count` for `bytes` received: whole instances, or `None`
    /// (`MPI_UNDEFINED`) when `bytes` is not a multiple of the size. A type
    /// of size 0 counts 0 instances in 0 bytes.
    pub fn get_count(&self, bytes: u64) -> Counted {
        match self.size() {
            0 => (bytes == 0).then_some(0),
            s => bytes.is_multiple_of(s).then_some(bytes / s),
        }
    }

    /// `MPI_Type_commit`: flattens the type into its encoding
    /// ([`CommittedType`]), with the default chunk of the cooperative walk.
    pub fn commit(&self) -> Result<CommittedType, DatatypeError> {
        CommittedType::new(self, gpu_mpi_device::derived::DEFAULT_CHUNK_BYTES)
    }

    /// [`UserDatatype::commit`] with chunks of `chunk_bytes` for the
    /// cooperative walk.
    pub fn commit_with_chunk(&self, chunk_bytes: u64) -> Result<CommittedType, DatatypeError> {
        CommittedType::new(self, chunk_bytes)
    }
}

/// Calls `f(displacement, run)` for each contiguous run of elements of a
/// subarray (along its fastest dimension), in typemap order.
pub(crate) fn subarray_rows(
    kind: &Kind,
    extent: i64,
    mut f: impl FnMut(i64, u64),
) -> Result<(), DatatypeError> {
    let Kind::Subarray {
        sizes,
        subsizes,
        starts,
        order,
        ..
    } = kind
    else {
        return Ok(());
    };
    let n = sizes.len();
    // Dimensions from slowest to fastest.
    let dims: Vec<usize> = match order {
        Order::C => (0..n).collect(),
        Order::Fortran => (0..n).rev().collect(),
    };
    let mut strides = vec![0i64; n];
    let mut s = extent;
    for &d in dims.iter().rev() {
        strides[d] = s;
        s = s.checked_mul(sizes[d] as i64).ok_or(ovf("extent"))?;
    }
    if subsizes.contains(&0) {
        return Ok(());
    }
    let fast = dims[n - 1];
    let mut idx = vec![0u64; n];
    loop {
        let mut d = 0i64;
        for &k in &dims {
            let i = if k == fast { starts[k] } else { starts[k] + idx[k] };
            d = (i as i64)
                .checked_mul(strides[k])
                .and_then(|x| x.checked_add(d))
                .ok_or(ovf("displacement"))?;
        }
        f(d, subsizes[fast]);
        let mut level = n - 1;
        loop {
            if level == 0 {
                return Ok(());
            }
            level -= 1;
            let k = dims[level];
            idx[k] += 1;
            if idx[k] < subsizes[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}
