//! Derived datatypes in point-to-point and collectives (MPI 4.1 §3.3.1,
//! §5.1, §5.1.11): `View`/`MutView` of types built in the kernel with the
//! const constructors (`derived::vector`, `derived::subarray_2d`), so the
//! cases need nothing from the host and run unchanged on a GPU.
//!
//! Every rank keeps an 8 x 8 matrix of `u32`, element `(i, j)` =
//! `pattern_word(r, 8 i + j)`, on its stack, or (`DT_LARGE`) a 64 x 64 one in
//! its part of `data`.

use super::{class_of, count_word, pattern_word, status_words, CaseArgs, Recorder, NONE};
use gpu_mpi_device::derived::{subarray_2d, vector, TypeRef, REGULAR_WORDS};
use gpu_mpi_device::request::scope;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, MutView, Status, View, World};

/// Ring: rank `r` sends column `r % 8` of its matrix (a `vector(8, 1, 8)`
/// view) to `r + 1` with tag 4 and receives from `l = r - 1` into row `(l +
/// 3) % 8` of a zeroed matrix (a plain `[u32]` slice: the packed form is 8
/// words); with `param` = 1 the same through `immediate_send` /
/// `immediate_receive_into` into column `(l + 3) % 8` (a view). Records:
/// status (4 words), `count::<u32>`, `count_of` the column type,
/// `elements_of`, then the 64 words of the receiving matrix.
pub const DT_RING_COLUMN: u32 = 0;
/// Rank `r` sends a 64 x 40 block (columns 10..50, every row) of its 64 x 64
/// matrix in `data` as a `subarray_2d` view to `r + 1` (10 240 bytes: it
/// streams through the slot) with `send_receive_into`, receiving from `r -
/// 1` into the same block of a second zeroed matrix. Records: status,
/// `count_of`, then the received matrix's sum of words per column block
/// (wrapping): columns 0..10, 10..50, 50..64, then the received words at
/// (0, 10), (63, 49), (31, 30).
pub const DT_LARGE: u32 = 1;
/// Errors: even rank `r` with a partner sends its column view (`u32`) three
/// times to `r + 1` (tags 1, 2, 3). The partner receives tag 1 into a
/// column view of `f32` (`MPI_ERR_TYPE`), tag 2 into bytes (the escape: 32
/// bytes), tag 3 into a view of 5 of the column's 8 elements
/// (`MPI_ERR_TRUNCATE`, 5 kept); then makes a view of 5 instances of a
/// 2-row type (320 bytes) over a 256-byte matrix (`MPI_ERR_ARG`). Records (odd): status + datatype id
/// of each receive, the first byte-received word, the 5 kept words and the
/// word after them, the view's class.
pub const DT_ERRORS: u32 = 2;
/// Broadcast from `param` of the root's column `2` view into every rank's
/// column `5` view of a zeroed matrix, then a gather of every rank's
/// column 5 (a view) into the root's plain `[u32]` of `8 x size` words (at
/// most 8 x 64), and a scatter of it back into column 6 views. Records:
/// broadcast class, the 8 broadcast words, gather class, scatter class, the
/// 8 words of column 6.
pub const DT_COLLECTIVES: u32 = 3;

/// Words per rank of case `case`.
pub const fn dt_stride(case: u32) -> u32 {
    match case {
        DT_RING_COLUMN => 4 + 3 + 64,
        DT_LARGE => 4 + 1 + 3 + 3,
        DT_ERRORS => 3 * 5 + 1 + 6 + 1,
        _ => 1 + 8 + 2 + 8,
    }
}

/// Bytes of `data` per rank for [`DT_LARGE`]: two 64 x 64 matrices.
pub const DT_LARGE_BYTES: usize = 2 * 64 * 64 * 4;

fn matrix(r: u32) -> [u32; 64] {
    core::array::from_fn(|k| pattern_word(r, k))
}

fn column_of<'a>(m: &'a [u32; 64], j: usize, ty: &TypeRef<'a>) -> Result<View<'a>, Error> {
    View::with_origin(&m[..], 4 * j, 1, ty)
}

fn ring_column(world: &World, param: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (r, n) = (world.rank(), world.size());
    let col = vector::<u32>(8, 1, 8);
    let ty = TypeRef::new(&col)?;
    let m = matrix(r as u32);
    let mut got = [0u32; 64];
    let right = world.process_at_rank((r + 1) % n);
    let left = world.process_at_rank((r + n - 1) % n);
    let send = column_of(&m, (r % 8) as usize, &ty)?;
    let k = ((r + n - 1) % n + 3) as usize % 8;
    let status = if param == 0 {
        right.send_with_tag(&send, 4)?;
        // A column arrives into a row: the packed form is 8 `u32`.
        let row = got.get_mut(8 * k..8 * k + 8).ok_or(Error::Intern)?;
        left.receive_into_with_tag(row, 4)
    } else {
        let mut into = MutView::with_origin(&mut got[..], 4 * k, 1, &ty)?;
        scope(|s| {
            let a = right.immediate_send_with_tag(s, &send, 4)?;
            let b = left.immediate_receive_into_with_tag(s, &mut into, 4)?;
            a.wait()?;
            b.wait()
        })
    };
    rec.words(&status_words(&status))?;
    let s = status.unwrap_or(Status::empty());
    rec.push(count_word(s.count::<u32>()))?;
    rec.push(count_word(s.count_of(&ty)))?;
    rec.push(count_word(s.elements_of(&ty)))?;
    rec.words(&got)
}

fn large(world: &World, args: &CaseArgs, rec: &mut Recorder) -> Result<(), Error> {
    let (r, n) = (world.rank(), world.size());
    let block = subarray_2d::<u32>([64, 64], [64, 40], [0, 10]);
    let ty = TypeRef::new(&block)?;
    // SAFETY: rank r alone touches its part of `data`; the host writes
    // nothing during the launch.
    let mine = unsafe { args.data.slice_mut(r as usize * DT_LARGE_BYTES, DT_LARGE_BYTES) }?;
    let (out, back) = mine.split_at_mut(DT_LARGE_BYTES / 2);
    for (k, w) in out.chunks_exact_mut(4).enumerate() {
        w.copy_from_slice(&pattern_word(r as u32, k).to_le_bytes());
    }
    back.fill(0);
    let right = world.process_at_rank((r + 1) % n);
    let left = world.process_at_rank((r + n - 1) % n);
    let status = {
        let v = View::with_count_and_datatype(&*out, 1, &ty)?;
        let mut into = MutView::with_count_and_datatype(&mut *back, 1, &ty)?;
        gpu_mpi_device::point_to_point::send_receive_into(&v, &right, &mut into, &left)
    };
    rec.words(&status_words(&status))?;
    rec.push(count_word(status.unwrap_or(Status::empty()).count_of(&ty)))?;
    let word = |i: usize, j: usize| -> u32 {
        let at = 4 * (64 * i + j);
        back.get(at..at + 4)
            .map_or(NONE, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    for (lo, hi) in [(0, 10), (10, 50), (50, 64)] {
        let mut sum = 0u32;
        for i in 0..64 {
            for j in lo..hi {
                sum = sum.wrapping_add(word(i, j));
            }
        }
        rec.push(sum)?;
    }
    rec.words(&[word(0, 10), word(63, 49), word(31, 30)])
}

fn errors(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (r, n) = (world.rank(), world.size());
    let col = vector::<u32>(8, 1, 8);
    let ty = TypeRef::new(&col)?;
    if r % 2 == 0 {
        if r + 1 < n {
            let m = matrix(r as u32);
            let v = column_of(&m, 1, &ty)?;
            let to = world.process_at_rank(r + 1);
            for tag in 1..=3 {
                to.send_with_tag(&v, tag)?;
            }
        }
        return Ok(());
    }
    let from = world.process_at_rank(r - 1);
    let record = |rec: &mut Recorder, s: &Result<Status, Error>| -> Result<(), Error> {
        rec.words(&status_words(s))?;
        let id = match s {
            Ok(st) => Some(st.datatype_id()),
            Err(Error::TypeMismatch { status, .. }) | Err(Error::Truncate { status, .. }) => {
                Some(status.datatype_id())
            }
            Err(_) => None,
        };
        rec.push(id.unwrap_or(NONE))
    };
    let fcol = vector::<f32>(8, 1, 8);
    let fty = TypeRef::new(&fcol)?;
    let mut fm = [0f32; 64];
    let s1 = {
        let mut into = MutView::with_count_and_datatype(&mut fm[..], 1, &fty)?;
        from.receive_into_with_tag(&mut into, 1)
    };
    record(rec, &s1)?;
    let mut raw = [0u8; 40];
    let s2 = from.receive_into_with_tag(&mut raw[..], 2);
    record(rec, &s2)?;
    let five = vector::<u32>(5, 1, 8);
    let fty5 = TypeRef::new(&five)?;
    let mut got = [0u32; 64];
    let s3 = {
        let mut into = MutView::with_count_and_datatype(&mut got[..], 1, &fty5)?;
        from.receive_into_with_tag(&mut into, 3)
    };
    record(rec, &s3)?;
    rec.push(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))?;
    for i in 0..6 {
        rec.push(got[8 * i])?;
    }
    let small = [0u32; 64];
    let two = vector::<u32>(2, 8, 8);
    let tty = TypeRef::new(&two)?;
    rec.push(class_of(&View::with_count_and_datatype(&small[..], 5, &tty)))
}

fn collectives(world: &World, root: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (r, n) = (world.rank() as usize, world.size() as usize);
    let col = vector::<u32>(8, 1, 8);
    let ty = TypeRef::new(&col)?;
    let source = matrix(root);
    let mut m = [0u32; 64];
    let root_p = world.process_at_rank(root as i32);
    let b = if r == root as usize {
        // The root's data is its column 2, received by the others in column 5.
        let mut cols = [0u32; 64];
        for i in 0..8 {
            cols[8 * i + 5] = source[8 * i + 2];
        }
        m = cols;
        let mut v = MutView::with_origin(&mut m[..], 4 * 5, 1, &ty)?;
        root_p.broadcast_into(&mut v)
    } else {
        let mut v = MutView::with_origin(&mut m[..], 4 * 5, 1, &ty)?;
        root_p.broadcast_into(&mut v)
    };
    rec.class(&b)?;
    for i in 0..8 {
        rec.push(m[8 * i + 5])?;
    }
    let mut all = [0u32; 8 * 64];
    let g = {
        let v = View::with_origin(&m[..], 4 * 5, 1, &ty)?;
        if r == root as usize {
            let into = all.get_mut(..8 * n).ok_or(Error::Intern)?;
            root_p.gather_into_root(&v, into)
        } else {
            root_p.gather_into(&v)
        }
    };
    rec.class(&g)?;
    // Each rank gets its 8 words back into column 6.
    let s = {
        let mut v = MutView::with_origin(&mut m[..], 4 * 6, 1, &ty)?;
        if r == root as usize {
            let from = all.get(..8 * n).ok_or(Error::Intern)?;
            root_p.scatter_into_root(from, &mut v)
        } else {
            root_p.scatter_into(&mut v)
        }
    };
    rec.class(&s)?;
    for i in 0..8 {
        rec.push(m[8 * i + 6])?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// The `DT_*` cases.
    pub static SEMANTICS_DATATYPES = fn semantics_datatypes(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            DT_RING_COLUMN => ring_column(world, args.param, &mut rec),
            DT_LARGE => large(world, args, &mut rec),
            DT_ERRORS => errors(world, &mut rec),
            DT_COLLECTIVES => collectives(world, args.param, &mut rec),
            _ => rec.push(NONE),
        }
    }
}

/// Words of a const-constructed encoding (for the host's checks).
pub const COLUMN_WORDS: [u64; REGULAR_WORDS] = vector::<u32>(8, 1, 8);
