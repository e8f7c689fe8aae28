//! Derived datatypes: constructors and queries against the reference model,
//! the encoding's walkers (sequential and cooperative), and the errors of
//! bad arguments, and random type trees (common/types.rs). No backend:
//! commit, the host's pack and unpack and the walkers run on host memory
//! with no kernel launched (the whole-GPU engine runs on each backend in
//! pack.rs).

use gpu_mpi::datatype::{reference, CommittedType, Order, Primitive, UserDatatype};
use gpu_mpi::device::derived::{self, Share};
use gpu_mpi::device::ErrorClass;
use proptest::prelude::*;

mod common;
use common::types::{arb_type, bytes, p};

/// Checks every query and the host pack/unpack of `ty` against the model.
fn check_type(ty: &UserDatatype, count: usize) -> CommittedType {
    let map = reference::typemap(ty);
    assert_eq!(ty.size(), map.iter().map(|e| e.1.size()).sum::<u64>());
    assert_eq!(ty.elements(), map.len() as u64);
    assert_eq!((ty.lb(), ty.ub()), reference::bounds(ty), "bounds");
    assert_eq!(
        (ty.true_lb(), ty.true_extent()),
        reference::true_bounds(&map),
        "true bounds"
    );
    let c = ty.commit().expect("commit");
    assert_eq!(c.header().size, ty.size());
    for b in [0, 1, 3, ty.size(), ty.size() + 5, 2 * ty.size() + 8] {
        assert_eq!(
            c.get_elements(b),
            reference::get_elements(ty, b),
            "get_elements({b})"
        );
    }
    let (lo, hi) = c.span(count).unwrap();
    let origin = (-lo).max(0) as usize;
    let len = origin + hi.max(0) as usize + 3;
    let src = bytes(len);
    let want = reference::pack(ty, &src, origin, count).expect("reference pack");
    assert_eq!(c.pack(&src, origin, count).expect("pack"), want, "pack");
    // The cooperative walk, in 1, 3 and 7 parts, gives the same bytes.
    for parts in [1u64, 3, 7] {
        let mut out = vec![0u8; want.len()];
        let (s, o) = (slice_of(&src), slice_of_mut(&mut out));
        for part in 0..parts {
            derived::pack_share(&s, origin, count as u64, &c.type_ref(), &o, Share { part, parts }).unwrap();
        }
        assert_eq!(out, want, "cooperative pack in {parts} parts");
    }
    let mut back = vec![0u8; len];
    let mut model = vec![0u8; len];
    c.unpack(&want, count, &mut back, origin).expect("unpack");
    reference::unpack(ty, &want, count, &mut model, origin).expect("reference unpack");
    assert_eq!(back, model, "unpack");
    c
}

fn slice_of(v: &[u8]) -> gpu_mpi::device::GlobalSlice<u8> {
    // SAFETY: the slice outlives every use in the test, which only reads it.
    unsafe { gpu_mpi::device::GlobalSlice::from_raw(v.as_ptr() as u64, v.len() as u64) }
}

fn slice_of_mut(v: &mut [u8]) -> gpu_mpi::device::GlobalSlice<u8> {
    // SAFETY: the vector outlives every use and nothing else borrows it meanwhile.
    unsafe { gpu_mpi::device::GlobalSlice::from_raw(v.as_mut_ptr() as u64, v.len() as u64) }
}

#[test]
fn vector_of_vectors() {
    let row = UserDatatype::vector(3, 2, 4, &p(Primitive::F32)).unwrap();
    let ty = UserDatatype::vector(2, 1, 3, &row).unwrap();
    assert_eq!(ty.size(), 48);
    let c = check_type(&ty, 2);
    assert_eq!(c.units(), 1, "a vector of vectors is one unit of two levels");
    let words = c.words();
    assert_eq!(
        &words[12..20],
        &[0, 16, 8, 3, 120, 2, 0, 0],
        "disp, stride, len, count, group stride, groups"
    );
}

#[test]
fn indexed_with_gaps() {
    let ty = UserDatatype::indexed(&[2, 0, 3, 1], &[0, 3, 5, 10], &p(Primitive::I32)).unwrap();
    assert_eq!(ty.size(), 24);
    assert_eq!(ty.extent(), 44);
    let c = check_type(&ty, 3);
    assert_eq!(c.units(), 3);
}

#[test]
fn transpose_as_hvector_of_vectors() {
    // A 4 x 5 matrix of f64 read column by column: column = vector(4, 1, 5),
    // resized to one element, then 5 of them one element apart.
    let col = UserDatatype::vector(4, 1, 5, &p(Primitive::F64)).unwrap();
    let col1 = UserDatatype::resized(&col, 0, 8).unwrap();
    let t = UserDatatype::contiguous(5, &col1).unwrap();
    let h = UserDatatype::hvector(5, 1, 8, &col).unwrap();
    let c = check_type(&t, 1);
    assert_eq!(check_type(&h, 1).units(), 1);
    let src: Vec<u8> = (0..20u64).flat_map(|x| (x as f64).to_le_bytes()).collect();
    let packed = c.pack(&src, 0, 1).unwrap();
    let got: Vec<f64> = packed
        .chunks(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let want: Vec<f64> = (0..5)
        .flat_map(|j| (0..4).map(move |i| (i * 5 + j) as f64))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn struct_with_mixed_types_and_displacements() {
    let ty = UserDatatype::structured(
        &[1, 2, 1],
        &[0, 8, 24],
        &[p(Primitive::U8), p(Primitive::F64), p(Primitive::I16)],
    )
    .unwrap();
    assert_eq!(ty.size(), 19);
    assert_eq!(ty.extent(), 32, "padded to the alignment of f64");
    assert_eq!(ty.true_extent(), 26);
    check_type(&ty, 3);
    let neg = UserDatatype::structured(&[1, 1], &[-16, 4], &[p(Primitive::U32), ty.clone()]).unwrap();
    assert_eq!(neg.lb(), -16);
    check_type(&neg, 2);
}

#[test]
fn partial_elements_and_counts() {
    let ty = UserDatatype::structured(&[1, 1], &[0, 8], &[p(Primitive::I32), p(Primitive::F64)]).unwrap();
    let c = ty.commit().unwrap();
    assert_eq!(c.get_count(12), Some(1));
    assert_eq!(c.get_elements(12), Some(2));
    assert_eq!(c.get_count(4), None, "MPI_UNDEFINED: not a whole instance");
    assert_eq!(c.get_elements(4), Some(1), "one whole i32");
    assert_eq!(c.get_elements(6), None, "MPI_UNDEFINED: inside the f64");
    assert_eq!(c.get_elements(16), Some(3));
    let empty = UserDatatype::contiguous(0, &p(Primitive::U8)).unwrap();
    assert_eq!(empty.get_count(0), Some(0));
    assert_eq!(empty.commit().unwrap().get_elements(1), None);
}

#[test]
fn subarrays_in_both_orders_and_dup() {
    let c = UserDatatype::subarray(&[4, 5, 6], &[2, 3, 2], &[1, 2, 3], Order::C, &p(Primitive::U16)).unwrap();
    let f = UserDatatype::subarray(
        &[4, 5, 6],
        &[2, 3, 2],
        &[1, 2, 3],
        Order::Fortran,
        &p(Primitive::U16),
    )
    .unwrap();
    assert_eq!((c.lb(), c.extent()), (0, 240));
    check_type(&c, 2);
    check_type(&f, 2);
    let d = c.dup().unwrap();
    assert_ne!(d.uid(), c.uid());
    assert_eq!(d.commit().unwrap().words(), c.commit().unwrap().words());
}

#[test]
fn device_const_constructors_match_the_commit() {
    let host = UserDatatype::vector(5, 3, 7, &p(Primitive::F64))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(host.words(), &derived::vector::<f64>(5, 3, 7)[..]);
    let host = UserDatatype::vector(4, 2, -3, &p(Primitive::U32))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(host.words(), &derived::vector::<u32>(4, 2, -3)[..]);
    let host = UserDatatype::vector(4, 2, 2, &p(Primitive::U32))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(host.words(), &derived::vector::<u32>(4, 2, 2)[..]);
    let host = UserDatatype::subarray(&[8, 10], &[3, 4], &[2, 5], Order::C, &p(Primitive::F32))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(
        host.words(),
        &derived::subarray_2d::<f32>([8, 10], [3, 4], [2, 5])[..]
    );
}

#[test]
fn signatures_match_by_primitive_sequence() {
    let a = UserDatatype::vector(3, 2, 5, &p(Primitive::F64))
        .unwrap()
        .commit()
        .unwrap();
    let b = UserDatatype::contiguous(6, &p(Primitive::F64))
        .unwrap()
        .commit()
        .unwrap();
    let c = UserDatatype::contiguous(6, &p(Primitive::I64))
        .unwrap()
        .commit()
        .unwrap();
    assert!(a.signature_matches(&b));
    assert!(a.type_ref().signature_matches(&b.type_ref()));
    assert!(!a.signature_matches(&c));
    assert!(!a.type_ref().signature_matches(&c.type_ref()));
    assert_eq!(a.signature(), &[(Primitive::F64, 6)]);
}

#[test]
fn bad_arguments_give_their_class() {
    let f = p(Primitive::F64);
    let class = |r: Result<UserDatatype, gpu_mpi::DatatypeError>| r.unwrap_err().class();
    assert_eq!(class(UserDatatype::contiguous(-1, &f)), ErrorClass::Count);
    assert_eq!(class(UserDatatype::vector(2, -1, 3, &f)), ErrorClass::Count);
    assert_eq!(
        class(UserDatatype::indexed(&[1, -2], &[0, 4], &f)),
        ErrorClass::Count
    );
    assert_eq!(class(UserDatatype::indexed(&[1, 2], &[0], &f)), ErrorClass::Arg);
    assert_eq!(class(UserDatatype::structured(&[1], &[0], &[])), ErrorClass::Arg);
    assert_eq!(
        class(UserDatatype::vector(2, 1, i64::MAX / 4, &f)),
        ErrorClass::Type
    );
    assert_eq!(
        class(UserDatatype::contiguous(i64::MAX / 2, &f)),
        ErrorClass::Type
    );
    assert_eq!(
        class(UserDatatype::hindexed(&[1], &[i64::MAX - 2], &f)),
        ErrorClass::Type
    );
    assert_eq!(class(UserDatatype::resized(&f, i64::MAX, 2)), ErrorClass::Type);
    assert_eq!(
        class(UserDatatype::subarray(&[4], &[3], &[2], Order::C, &f)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(UserDatatype::subarray(&[0], &[0], &[0], Order::C, &f)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(UserDatatype::subarray(&[], &[], &[], Order::C, &f)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(UserDatatype::subarray(&[4], &[-1], &[0], Order::C, &f)),
        ErrorClass::Arg
    );
    let mut deep = f.clone();
    let mut err = None;
    for _ in 0..70 {
        match UserDatatype::contiguous(1, &deep) {
            Ok(t) => deep = t,
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(err.expect("too deep").class(), ErrorClass::Type);
    assert_eq!(f.commit_with_chunk(0).unwrap_err().class(), ErrorClass::Arg);
    let c = f.commit().unwrap();
    assert_eq!(c.pack(&[0u8; 7], 0, 1).unwrap_err().class(), ErrorClass::Arg);
    assert_eq!(
        c.unpack(&[0u8; 4], 1, &mut [0u8; 8], 0).unwrap_err().class(),
        ErrorClass::Arg
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_types_agree_with_the_reference(ty in arb_type(4), count in 0usize..4) {
        prop_assume!(reference::typemap(&ty).len() < 5000);
        check_type(&ty, count);
    }
}
