//! Conformance cases of derived datatypes in point-to-point and collectives
//! (MPI 4.1 §3.3.1, §5.1.11; the kernels of
//! [`gpu_mpi_check_kernels::datatypes`]).

use crate::harness::{launch, left, partner, shape, small_rounds, st, Checker, Job, Shape, OK};
use gpu_mpi::device::datatype::ID_U32;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::Device;
use gpu_mpi_check_kernels::datatypes::{self as dt, dt_stride};
use gpu_mpi_check_kernels::pattern_word;

const DT_SHAPES: &[Shape] = &[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 4), shape(33, 11)];

fn matrix(r: u32) -> Vec<u32> {
    (0..64).map(|k| pattern_word(r, k)).collect()
}

/// `datatypes/ring_column`: a column view travels to a row (blocking) and
/// to a column view (immediate).
pub(crate) fn ring_column(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for param in [0u32, 1] {
        c.shapes(DT_SHAPES, |c, s| {
            let n = s.ranks;
            let job = Job::new(
                &dt::SEMANTICS_DATATYPES,
                dt::DT_RING_COLUMN,
                dt_stride(dt::DT_RING_COLUMN),
            )
            .params(param, 0);
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let l = left(r, n);
                let mut w = o.rank(r);
                c.eq(
                    || format!("immediate {param}: rank {r}: status"),
                    w.array::<4>(),
                    st(OK, l as i32, 4, 32),
                );
                c.eq(
                    || format!("immediate {param}: rank {r}: count u32, count_of, elements_of"),
                    w.array::<3>(),
                    [8, 1, 8],
                );
                let src = matrix(l);
                let col = (l % 8) as usize;
                let k = ((l + 3) % 8) as usize;
                let mut want = vec![0u32; 64];
                for i in 0..8 {
                    let v = src[8 * i + col];
                    if param == 0 {
                        want[8 * k + i] = v;
                    } else {
                        want[8 * i + k] = v;
                    }
                }
                let got: Vec<u32> = (0..64).map(|_| w.take()).collect();
                c.eq(|| format!("immediate {param}: rank {r}: matrix"), got, want);
            }
            Ok(())
        });
    }
    c.finish()
}

/// `datatypes/large_streamed`: a 64 x 40 block of a 64 x 64 matrix in a
/// send-receive ring, streamed through the slots.
pub(crate) fn large(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for streaming in [false, true] {
        c.shapes(&[shape(1, 1), shape(2, 2), shape(6, 3)], |c, s| {
            let n = s.ranks;
            let job = Job::new(&dt::SEMANTICS_DATATYPES, dt::DT_LARGE, dt_stride(dt::DT_LARGE))
                .data(n as usize * dt::DT_LARGE_BYTES);
            let o = launch(device, &s.spec().force_streaming(streaming), n, &job)?;
            for r in 0..n {
                let l = left(r, n);
                let mut w = o.rank(r);
                c.eq(
                    || format!("rank {r}: status, count_of"),
                    w.array::<5>(),
                    [0, l, 0, 64 * 40 * 4, 1],
                );
                let word = |i: usize, j: usize| pattern_word(l, 64 * i + j);
                let sum = |lo: usize, hi: usize| {
                    (0..64)
                        .flat_map(|i| (lo..hi).map(move |j| (i, j)))
                        .fold(0u32, |a, (i, j)| a.wrapping_add(word(i, j)))
                };
                c.eq(
                    || format!("rank {r}: sums of columns 0..10, 10..50, 50..64"),
                    w.array::<3>(),
                    [0, sum(10, 50), 0],
                );
                c.eq(
                    || format!("rank {r}: words (0, 10), (63, 49), (31, 30)"),
                    w.array::<3>(),
                    [word(0, 10), word(63, 49), word(31, 30)],
                );
            }
            Ok(())
        });
    }
    c.finish()
}

/// `errors/datatype_views`: signature mismatch, the bytes escape,
/// truncation into a shorter view, a buffer too small for its view.
pub(crate) fn errors(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(DT_SHAPES, |c, s| {
        let n = s.ranks;
        let job = Job::new(&dt::SEMANTICS_DATATYPES, dt::DT_ERRORS, dt_stride(dt::DT_ERRORS));
        let o = launch(device, &s.spec(), n, &job)?;
        for r in (1..n).step_by(2) {
            let Some(p) = partner(r, n) else { continue };
            let p = p as i32;
            let mut w = o.rank(r);
            c.eq(
                || format!("rank {r}: into an f32 view"),
                w.array::<5>(),
                [ErrorClass::Type as u32, p as u32, 1, 32, ID_U32],
            );
            c.eq(
                || format!("rank {r}: into bytes"),
                w.array::<5>(),
                [0, p as u32, 2, 32, ID_U32],
            );
            c.eq(
                || format!("rank {r}: into 5 elements"),
                w.array::<5>(),
                [ErrorClass::Truncate as u32, p as u32, 3, 32, ID_U32],
            );
            let m = matrix(p as u32);
            c.eq(|| format!("rank {r}: first byte-received word"), w.take(), m[1]);
            let kept: Vec<u32> = (0..6).map(|_| w.take()).collect();
            let mut want: Vec<u32> = (0..5).map(|i| m[8 * i + 1]).collect();
            want.push(0);
            c.eq(|| format!("rank {r}: the 5 kept words and the next"), kept, want);
            c.eq(
                || format!("rank {r}: view too large"),
                w.take(),
                ErrorClass::Arg as u32,
            );
        }
        Ok(())
    });
    c.finish()
}

/// `collective/datatype_views`: broadcast into column views, gather of
/// views into a plain buffer, scatter of it into views.
pub(crate) fn collectives(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let shapes = [
        shape(1, 1),
        shape(4, 4),
        small_rounds(9, 3),
        shape(33, 11),
        small_rounds(64, 16),
    ];
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        for root in [0, n - 1, n / 2] {
            let job = Job::new(
                &dt::SEMANTICS_DATATYPES,
                dt::DT_COLLECTIVES,
                dt_stride(dt::DT_COLLECTIVES),
            )
            .params(root, 0);
            let o = launch(device, &s.spec(), n, &job)?;
            let m = matrix(root);
            let col: Vec<u32> = (0..8).map(|i| m[8 * i + 2]).collect();
            for r in 0..n {
                let mut w = o.rank(r);
                c.eq(|| format!("root {root}: rank {r}: broadcast class"), w.take(), 0);
                let got: Vec<u32> = (0..8).map(|_| w.take()).collect();
                c.eq(|| format!("root {root}: rank {r}: broadcast column"), &got, &col);
                c.eq(
                    || format!("root {root}: rank {r}: gather, scatter classes"),
                    w.array::<2>(),
                    [0, 0],
                );
                let back: Vec<u32> = (0..8).map(|_| w.take()).collect();
                c.eq(|| format!("root {root}: rank {r}: scattered column"), &back, &col);
            }
        }
        Ok(())
    });
    c.finish()
}
