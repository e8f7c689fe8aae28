//! The whole-GPU pack engine (`Device::pack`, `unpack`, the direct and
//! tiled paths) on each backend (`testgen!`: the emulator always, the GPU
//! where one is present; the conformance kernels include the pack kernel,
//! `pack_kernels!`), against the host's reference model; random type trees
//! of the generator in common/types.rs.

use gpu_mpi::datatype::{reference, PackStrategy, Primitive, UserDatatype};
use gpu_mpi::device::derived::{self, PackPath};
use gpu_mpi::device::ErrorClass;
use gpu_mpi::Device;
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use proptest::prelude::*;

mod common;
use common::types::{arb_type, bytes, no_overlap, p};

fn whole_gpu_pack_on_the_emulator(backend: Backend) {
    let device = backend.device();
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
testgen!(whole_gpu_pack_on_the_emulator);

fn random_types_pack_on_the_device(backend: Backend) {
    let strategy = (arb_type(3), 1usize..3);
    proptest!(ProptestConfig::with_cases(32), |((ty, count) in strategy)| {
        prop_assume!(ty.size() > 0 && reference::typemap(&ty).len() < 2000);
        let device = backend.device();
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
    });
}
testgen!(random_types_pack_on_the_device);

/// Packs and unpacks `count` instances of `ty` on `device` by `strategy`
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

fn tiled_path_moves_transposes_and_columns(backend: Backend) {
    let device = backend.device();
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
testgen!(tiled_path_moves_transposes_and_columns);

fn tiled_path_selection_and_refusals(backend: Backend) {
    let device = backend.device();
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
    assert_eq!(gpu_mpi::DatatypeError::NotTileable.class(), ErrorClass::Type);
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
testgen!(tiled_path_selection_and_refusals);

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

/// The tiled path, forced, against the reference model: random grids
/// (negative strides, overlaps, resized extents) and random type trees; a
/// type without a tile shape is refused with `MPI_ERR_TYPE`.
fn tiled_path_agrees_with_the_reference(backend: Backend) {
    let strategy = (prop_oneof![3 => arb_grid(), 1 => arb_type(2)], 1usize..4);
    proptest!(ProptestConfig::with_cases(48), |((ty, count) in strategy)| {
        prop_assume!(ty.size() > 0 && reference::typemap(&ty).len() < 4000);
        let device = backend.device();
        let c = ty.commit().unwrap();
        if derived::TileShape::of(&c.type_ref(), count as u64).is_some() {
            check_engine(&device, &ty, count, PackStrategy::Tiled)?;
        } else {
            let err = Device::pack_path(&c, count, PackStrategy::Tiled).unwrap_err();
            prop_assert!(err.to_string().contains("MPI_ERR_TYPE"));
        }
    });
}
testgen!(tiled_path_agrees_with_the_reference);
