//! Derived datatypes: constructors and queries against the reference model,
//! the encoding's walkers (sequential and cooperative) and the whole-GPU
//! engine on the emulator, and the errors of bad arguments.

use gpu_mpi_device::derived::{self, PackPath, Share};
use gpu_mpi_device::ErrorClass;
use gpu_mpi_host::datatype::{reference, CommittedType, Order, PackStrategy, Primitive, UserDatatype};
use gpu_mpi_host::Device;
use proptest::prelude::*;

fn p(x: Primitive) -> UserDatatype {
    x.into()
}

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

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

fn slice_of(v: &[u8]) -> gpu_mpi_device::GlobalSlice<u8> {
    // SAFETY: the slice outlives every use in the test, which only reads it.
    unsafe { gpu_mpi_device::GlobalSlice::from_raw(v.as_ptr() as u64, v.len() as u64) }
}

fn slice_of_mut(v: &mut [u8]) -> gpu_mpi_device::GlobalSlice<u8> {
    // SAFETY: the vector outlives every use and nothing else borrows it meanwhile.
    unsafe { gpu_mpi_device::GlobalSlice::from_raw(v.as_mut_ptr() as u64, v.len() as u64) }
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
    let class = |r: Result<UserDatatype, gpu_mpi_host::DatatypeError>| r.unwrap_err().class();
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

#[test]
fn whole_gpu_pack_on_the_emulator() {
    let device = Device::cpu();
    let col = UserDatatype::vector(64, 3, 10, &p(Primitive::F32)).unwrap();
    let ty = UserDatatype::structured(&[2, 1], &[-8, 4000], &[col, p(Primitive::F64)]).unwrap();
    let c = ty.commit().unwrap();
    let count = 3;
    let (lo, hi) = c.span(count).unwrap();
    let origin = (-lo) as usize;
    let src = bytes(origin + hi as usize);
    let want = reference::pack(&ty, &src, origin, count).unwrap();
    let dsrc = device.upload(&src).unwrap();
    let packed = device.pack_at(&c, &dsrc, origin, count).unwrap();
    assert_eq!(device.download(&packed).unwrap(), want);
    let dst = device.alloc_zeroed::<u8>(src.len()).unwrap();
    device.unpack(&c, &packed, count, &dst, origin).unwrap().unwrap();
    let mut model = vec![0u8; src.len()];
    reference::unpack(&ty, &want, count, &mut model, origin).unwrap();
    assert_eq!(device.download(&dst).unwrap(), model);
    // The encoding is uploaded once: a second pack reuses it.
    let again = device.pack_at(&c, &dsrc, origin, count).unwrap();
    assert_eq!(device.download(&again).unwrap(), want);
    device.forget_type(&c);
    let err = device.pack(&c, &dsrc, count).unwrap_err();
    assert!(err.to_string().contains("MPI_ERR_ARG"), "{err}");
}

/// A count or block length: mostly 1..max, sometimes 0.
fn n(max: i64) -> BoxedStrategy<i64> {
    prop_oneof![1 => Just(0i64), 6 => 1..max].boxed()
}

/// A random type tree of nesting depth up to `depth`.
fn arb_type(depth: u32) -> BoxedStrategy<UserDatatype> {
    let leaf = prop::sample::select(Primitive::ALL.to_vec()).prop_map(UserDatatype::primitive);
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = arb_type(depth - 1);
    prop_oneof![
        2 => leaf,
        1 => (n(4), sub.clone()).prop_map(|(n, t)| UserDatatype::contiguous(n, &t).unwrap()),
        2 => (n(4), n(3), -4i64..5, sub.clone())
            .prop_map(|(n, b, s, t)| UserDatatype::vector(n, b, s, &t).unwrap()),
        1 => (n(4), n(3), -40i64..40, sub.clone())
            .prop_map(|(n, b, s, t)| UserDatatype::hvector(n, b, s, &t).unwrap()),
        1 => (prop::collection::vec((n(3), -5i64..8), 0..4), sub.clone()).prop_map(|(v, t)| {
            let (b, d): (Vec<i64>, Vec<i64>) = v.into_iter().unzip();
            UserDatatype::indexed(&b, &d, &t).unwrap()
        }),
        1 => (prop::collection::vec((n(3), -30i64..60), 0..4), sub.clone()).prop_map(|(v, t)| {
            let (b, d): (Vec<i64>, Vec<i64>) = v.into_iter().unzip();
            UserDatatype::hindexed(&b, &d, &t).unwrap()
        }),
        1 => (n(3), prop::collection::vec(-5i64..8, 0..4), sub.clone())
            .prop_map(|(b, d, t)| UserDatatype::indexed_block(b, &d, &t).unwrap()),
        1 => (n(3), prop::collection::vec(-30i64..60, 0..4), sub.clone())
            .prop_map(|(b, d, t)| UserDatatype::hindexed_block(b, &d, &t).unwrap()),
        1 => prop::collection::vec((n(3), -30i64..60, sub.clone()), 0..4).prop_map(|v| {
            let b: Vec<i64> = v.iter().map(|x| x.0).collect();
            let d: Vec<i64> = v.iter().map(|x| x.1).collect();
            let t: Vec<UserDatatype> = v.into_iter().map(|x| x.2).collect();
            UserDatatype::structured(&b, &d, &t).unwrap()
        }),
        1 => (prop::collection::vec((1i64..5, n(4), 0i64..4), 1..4), any::<bool>(), sub.clone()).prop_map(|(dims, c, t)| {
            let sizes: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<i64> = dims.iter().map(|d| d.1.min(d.0)).collect();
            let starts: Vec<i64> = dims.iter().map(|d| d.2.min(d.0 - d.1.min(d.0))).collect();
            let order = if c { Order::C } else { Order::Fortran };
            UserDatatype::subarray(&sizes, &subs, &starts, order, &t).unwrap()
        }),
        1 => (-16i64..16, 0i64..40, sub.clone()).prop_map(|(lb, e, t)| UserDatatype::resized(&t, lb, e).unwrap()),
        1 => sub.prop_map(|t| t.dup().unwrap()),
    ]
    .boxed()
}

/// Whether `count` instances of `ty` write no byte twice (MPI's condition
/// on a receive type; the cooperative unpack needs it).
fn no_overlap(ty: &UserDatatype, count: usize) -> bool {
    let map = reference::typemap(ty);
    let mut seen = std::collections::HashSet::new();
    (0..count as i64).all(|i| {
        map.iter()
            .all(|&(d, p)| (0..p.size() as i64).all(|b| seen.insert(i * ty.extent() + d + b)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_types_agree_with_the_reference(ty in arb_type(4), count in 0usize..4) {
        prop_assume!(reference::typemap(&ty).len() < 5000);
        check_type(&ty, count);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_types_pack_on_the_emulator(ty in arb_type(3), count in 1usize..3) {
        prop_assume!(ty.size() > 0 && reference::typemap(&ty).len() < 2000);
        let device = Device::cpu();
        let c = ty.commit_with_chunk(8).unwrap();
        let (lo, hi) = c.span(count).unwrap();
        let origin = (-lo).max(0) as usize;
        let src = bytes(origin + hi.max(0) as usize);
        let want = reference::pack(&ty, &src, origin, count).unwrap();
        let dsrc = device.upload(&src).unwrap();
        let packed = device.pack_at(&c, &dsrc, origin, count).unwrap();
        prop_assert_eq!(device.download(&packed).unwrap(), want.clone());
        if no_overlap(&ty, count) {
            let dst = device.alloc_zeroed::<u8>(src.len()).unwrap();
            device.unpack(&c, &packed, count, &dst, origin).unwrap().unwrap();
            let mut model = vec![0u8; src.len()];
            reference::unpack(&ty, &want, count, &mut model, origin).unwrap();
            prop_assert_eq!(device.download(&dst).unwrap(), model);
        }
    }
}

/// Packs and unpacks `count` instances of `ty` on the emulator by `strategy`
/// and checks both against the reference model (the unpack only for types
/// whose blocks do not overlap).
fn check_engine(
    device: &Device,
    ty: &UserDatatype,
    count: usize,
    strategy: PackStrategy,
) -> Result<(), TestCaseError> {
    let c = ty.commit().unwrap();
    let (lo, hi) = c.span(count).unwrap();
    let origin = (-lo).max(0) as usize;
    let src = bytes(origin + hi.max(0) as usize + 5);
    let want = reference::pack(ty, &src, origin, count).unwrap();
    let dsrc = device.upload(&src).unwrap();
    let out = device.alloc_zeroed::<u8>(want.len().max(1)).unwrap();
    device
        .pack_into_using(&c, &dsrc, origin, count, &out, strategy)
        .unwrap();
    prop_assert_eq!(
        &device.download(&out).unwrap()[..want.len()],
        &want[..],
        "pack by {:?}",
        strategy
    );
    if no_overlap(ty, count) {
        let dst = device.alloc_zeroed::<u8>(src.len()).unwrap();
        let packed = device.upload(&want).unwrap();
        device
            .unpack_using(&c, &packed, count, &dst, origin, strategy)
            .unwrap();
        let mut model = vec![0u8; src.len()];
        reference::unpack(ty, &want, count, &mut model, origin).unwrap();
        prop_assert_eq!(device.download(&dst).unwrap(), model, "unpack by {:?}", strategy);
    }
    Ok(())
}

/// A `rows x cols` matrix of `elem` read column by column: an hvector of
/// `cols` column vectors, one element apart (the FFT 2-D transpose).
fn transpose(rows: i64, cols: i64, elem: &UserDatatype) -> UserDatatype {
    let col = UserDatatype::vector(rows, 1, cols, elem).unwrap();
    UserDatatype::hvector(cols, 1, elem.extent(), &col).unwrap()
}

#[test]
fn tiled_path_moves_transposes_and_columns() {
    let device = Device::cpu();
    let complex = UserDatatype::contiguous(2, &p(Primitive::F64)).unwrap();
    let elems = [
        p(Primitive::U8),
        p(Primitive::I16),
        p(Primitive::F32),
        p(Primitive::F64),
        complex,
    ];
    for elem in &elems {
        // 35 x 37: partial tiles on both sides for every tile side (8..32).
        let t = transpose(35, 37, elem);
        let c = t.commit().unwrap();
        let shape = derived::TileShape::of(&c.type_ref(), 1).expect("a transpose has a tile shape");
        assert_eq!((shape.rows, shape.cols, shape.len), (37, 35, elem.size()));
        assert!(shape.side * shape.side * shape.len <= derived::TILE_BYTES);
        assert!(shape.side >= 16, "side {} for {} bytes", shape.side, shape.len);
        assert_eq!(
            Device::pack_path(&c, 1, PackStrategy::Auto).unwrap(),
            PackPath::Tiled
        );
        assert_eq!(
            Device::pack_path(&c, 1, PackStrategy::Direct).unwrap(),
            PackPath::Direct
        );
        for s in [PackStrategy::Auto, PackStrategy::Tiled, PackStrategy::Direct] {
            check_engine(&device, &t, 1, s).unwrap();
            check_engine(&device, &t, 2, s).unwrap();
        }
    }
    // Columns of a 40 x 33 f32 matrix: a column resized to one element,
    // `count` of them (one group; the rows of the tile are the instances).
    let col = UserDatatype::vector(40, 1, 33, &p(Primitive::F32)).unwrap();
    let col1 = UserDatatype::resized(&col, 0, 4).unwrap();
    let c = col1.commit().unwrap();
    assert_eq!(
        Device::pack_path(&c, 33, PackStrategy::Auto).unwrap(),
        PackPath::Tiled
    );
    // One column has one row: nothing to tile.
    assert_eq!(
        Device::pack_path(&c, 1, PackStrategy::Auto).unwrap(),
        PackPath::Direct
    );
    for s in [PackStrategy::Tiled, PackStrategy::Direct] {
        check_engine(&device, &col1, 33, s).unwrap();
        check_engine(&device, &col1, 20, s).unwrap();
    }
    // The packed column-major matrix, transposed back by the tiled unpack.
    let m: Vec<u8> = (0..40 * 33u32).flat_map(|x| (x as f32).to_le_bytes()).collect();
    let dm = device.upload(&m).unwrap();
    let packed = device.alloc_zeroed::<u8>(m.len()).unwrap();
    device
        .pack_into_using(&c, &dm, 0, 33, &packed, PackStrategy::Tiled)
        .unwrap();
    let got: Vec<f32> = device
        .download(&packed)
        .unwrap()
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (0..33)
        .flat_map(|j| (0..40).map(move |i| (i * 33 + j) as f32))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn tiled_path_selection_and_refusals() {
    let device = Device::cpu();
    // Rows of 128 f64 are 1 KiB blocks: the direct path only.
    let face = UserDatatype::vector(128, 128, 128 * 128, &p(Primitive::F64)).unwrap();
    let c = face.commit().unwrap();
    assert_eq!(
        Device::pack_path(&c, 1, PackStrategy::Auto).unwrap(),
        PackPath::Direct
    );
    let err = Device::pack_path(&c, 1, PackStrategy::Tiled).unwrap_err();
    assert!(err.to_string().contains("MPI_ERR_TYPE"), "{err}");
    let src = device.upload(&bytes(c.span(1).unwrap().1 as usize)).unwrap();
    let out = device.alloc_zeroed::<u8>(c.pack_size(1).unwrap()).unwrap();
    let err = device
        .pack_into_using(&c, &src, 0, 1, &out, PackStrategy::Tiled)
        .unwrap_err();
    assert!(err.to_string().contains("MPI_ERR_TYPE"), "{err}");
    assert_eq!(gpu_mpi_host::DatatypeError::NotTileable.class(), ErrorClass::Type);
    // A vector of f32 one stride of 2 elements apart: tileable, but its
    // rows are 8 bytes apart, under a sector, and rows are not one block
    // apart: direct by the rule, tiled when forced.
    let v = UserDatatype::vector(50, 1, 2, &p(Primitive::F32)).unwrap();
    let cv = v.commit().unwrap();
    assert!(derived::TileShape::of(&cv.type_ref(), 3).is_some());
    assert_eq!(
        Device::pack_path(&cv, 3, PackStrategy::Auto).unwrap(),
        PackPath::Direct
    );
    check_engine(&device, &v, 3, PackStrategy::Tiled).unwrap();
    // A struct of several units is never tiled.
    let s = UserDatatype::structured(&[1, 1], &[0, 16], &[p(Primitive::F64), p(Primitive::I32)]).unwrap();
    let cs = s.commit().unwrap();
    assert!(Device::pack_path(&cs, 4, PackStrategy::Tiled).is_err());
    // A short buffer is refused on the tiled path as on the direct one.
    let t = transpose(20, 20, &p(Primitive::F32));
    let ct = t.commit().unwrap();
    let short = device.alloc_zeroed::<u8>(100).unwrap();
    let out = device.alloc_zeroed::<u8>(ct.pack_size(1).unwrap()).unwrap();
    let err = device
        .pack_into_using(&ct, &short, 0, 1, &out, PackStrategy::Tiled)
        .unwrap_err();
    assert!(err.to_string().contains("MPI_ERR_ARG"), "{err}");
}

/// A two-level shape the commit folds into one unit when it is regular:
/// `groups` groups, `group_stride` bytes apart, of `cols` blocks of `len`
/// bytes, `stride` bytes apart, sometimes resized.
fn arb_grid() -> BoxedStrategy<UserDatatype> {
    (
        1i64..40,
        1i64..40,
        1i64..17,
        -80i64..80,
        -80i64..80,
        prop::option::of((-8i64..8, 1i64..64)),
    )
        .prop_map(|(groups, cols, len, stride, gstride, resize)| {
            let inner = UserDatatype::hvector(cols, len, stride, &p(Primitive::U8)).unwrap();
            let t = UserDatatype::hvector(groups, 1, gstride, &inner).unwrap();
            match resize {
                Some((lb, extent)) => UserDatatype::resized(&t, lb, extent).unwrap(),
                None => t,
            }
        })
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The tiled path, forced, against the reference model: random grids
    /// (negative strides, overlaps, resized extents) and random type trees;
    /// a type without a tile shape is refused with `MPI_ERR_TYPE`.
    #[test]
    fn tiled_path_agrees_with_the_reference(
        ty in prop_oneof![3 => arb_grid(), 1 => arb_type(2)],
        count in 1usize..4,
    ) {
        prop_assume!(ty.size() > 0 && reference::typemap(&ty).len() < 4000);
        let device = Device::cpu();
        let c = ty.commit().unwrap();
        if derived::TileShape::of(&c.type_ref(), count as u64).is_some() {
            check_engine(&device, &ty, count, PackStrategy::Tiled)?;
        } else {
            let err = Device::pack_path(&c, count, PackStrategy::Tiled).unwrap_err();
            prop_assert!(err.to_string().contains("MPI_ERR_TYPE"));
        }
    }
}
