//! Collective cases: barrier, broadcast, reduce on every predefined type
//! against reference semantics (MPI 4.1 §6.9.2), a non-commutative user
//! operation, and a count mismatch.

use crate::harness::*;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::Device;
use gpu_mpi_check_kernels::collectives::{self as coll, Operand};
use gpu_mpi_check_kernels::p2p::Mat2;
use gpu_mpi_check_kernels::pattern_word;

const COLLECTIVE_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(7, 7),
    shape(12, 3),
    shape(96, 96),
    shape(128, 32),
    shape(16, 1),
    shape(1024, 256),
    small_rounds(7, 7),
    small_rounds(12, 3),
];

pub(crate) fn barrier(device: &Device) -> Result<(), String> {
    const ROUNDS: u32 = 8;
    let mut c = Checker::default();
    let shapes = [COLLECTIVE_SHAPES, &[shape(256, 64), shape(64, 8)]].concat();
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        let job = Job::new(&coll::SEMANTICS_BARRIER, 0, coll::BARRIER_WORDS * ROUNDS)
            .params(ROUNDS, 200)
            .cells(n as usize);
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            for k in 0..ROUNDS {
                c.eq(
                    || format!("rank {r} round {k}: [barrier class, cells not yet written, barrier class]"),
                    w.array(),
                    [0, 0, 0],
                );
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn broadcast_global(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(5, 5), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            for root in [0, n / 2, n - 1] {
                // 61 words fit a collective round (248 bytes), 62 fill it, 63 need two.
                for count in [1u32, 61, 62, 63, 1000, 5000] {
                    let job = Job::new(&coll::SEMANTICS_BROADCAST, coll::BCAST_GLOBAL, 1)
                        .params(root, count)
                        .cells((count * n) as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    for r in 0..n {
                        c.eq(
                            || format!("root {root}, {count} words: rank {r}: class"),
                            o.rank(r).take(),
                            0,
                        );
                        let region = &o.cells[(r * count) as usize..][..count as usize];
                        if let Some(i) = (0..count as usize).find(|&i| region[i] != pattern_word(root, i)) {
                            c.fail(format!(
                                "root {root}, {count} words: rank {r}: word {i} is {:#x}, expected {:#x}",
                                region[i],
                                pattern_word(root, i)
                            ));
                        }
                    }
                }
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn broadcast_every_root(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3), shape(40, 20), small_rounds(6, 2)], |c, s| {
        let n = s.ranks;
        for count in [5, 70] {
            let case = coll::BCAST_EVERY_ROOT;
            let job = Job::new(&coll::SEMANTICS_BROADCAST, case, coll::broadcast_stride(case, n)).params(0, count);
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                for root in 0..n {
                    c.eq(
                        || format!("{count} words: rank {r}, root {root}: [class, wrong words, class, wrong f64s]"),
                        w.array(),
                        [0, 0, 0, 0],
                    );
                }
            }
        }
        Ok(())
    });
    c.finish()
}

/// Reference semantics of the predefined operations (MPI 4.1 section 6.9.2).
trait Reference: Operand + Copy {
    fn combine(op: u32, a: Self, b: Self) -> Self;
}

macro_rules! int_reference {
    ($($t:ty),*) => {$(
        impl Reference for $t {
            fn combine(op: u32, a: Self, b: Self) -> Self {
                match op {
                    1 => a.wrapping_add(b),
                    2 => a.wrapping_mul(b),
                    3 => a.min(b),
                    4 => a.max(b),
                    5 => a & b,
                    6 => a | b,
                    7 => a ^ b,
                    8 => <$t>::from(a != 0 && b != 0),
                    _ => <$t>::from(a != 0 || b != 0),
                }
            }
        }
    )*};
}
int_reference!(u8, i8, u16, i16, u32, i32, u64, i64);

macro_rules! float_reference {
    ($($t:ty),*) => {$(
        impl Reference for $t {
            fn combine(op: u32, a: Self, b: Self) -> Self {
                match op {
                    1 => a + b,
                    2 => a * b,
                    3 => a.min(b),
                    _ => a.max(b),
                }
            }
        }
    )*};
}
float_reference!(f32, f64);

fn reduce_checks<T: Reference>(device: &Device, type_index: u32) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(COLLECTIVE_SHAPES, |c, s| {
        let n = s.ranks;
        let mut roots = vec![coll::ALL_RANKS, 0];
        if n > 1 {
            roots.push(n - 1);
        }
        for root in roots {
            for count in [1u32, 70] {
                let job = Job::new(&coll::SEMANTICS_REDUCE, type_index, coll::reduce_stride(count))
                    .params(count, root);
                let o = launch(device, &s.spec(), n, &job)?;
                let mode = if root == coll::ALL_RANKS {
                    "all_reduce".to_string()
                } else {
                    format!("reduce to {root}")
                };
                // The result of every operation and element: operands combined in rank order.
                let results: Vec<Vec<u64>> = coll::OPS
                    .iter()
                    .map(|&op| {
                        (0..count)
                            .map(|i| {
                                (1..n)
                                    .fold(coll::operand::<T>(op, 0, i), |acc, q| {
                                        T::combine(op, acc, coll::operand::<T>(op, q, i))
                                    })
                                    .bits()
                            })
                            .collect()
                    })
                    .collect();
                let fill = T::from_i64(coll::REDUCE_FILL).bits();
                for r in 0..n {
                    let mut w = o.rank(r);
                    let gets = root == coll::ALL_RANKS || root == r;
                    for (k, op) in coll::OPS.into_iter().enumerate() {
                        let name = gpu_mpi::device::collective::SystemOperation::name_of(op);
                        let valid = !T::IS_FLOAT || op <= 4;
                        let class = if valid { OK } else { ErrorClass::Op };
                        c.eq(
                            || format!("{mode}, {count} elements, {name}: rank {r}: class"),
                            w.take(),
                            class as u32,
                        );
                        for (i, &result) in results[k].iter().enumerate() {
                            let got = w.take() as u64 | (w.take() as u64) << 32;
                            let want = if gets && valid { result } else { fill };
                            c.eq(
                                || format!("{mode}, {count} elements, {name}: rank {r}: element {i} (bits)"),
                                got,
                                want,
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn reduce_u8(d: &Device) -> Result<(), String> {
    reduce_checks::<u8>(d, 0)
}
pub(crate) fn reduce_i8(d: &Device) -> Result<(), String> {
    reduce_checks::<i8>(d, 1)
}
pub(crate) fn reduce_u16(d: &Device) -> Result<(), String> {
    reduce_checks::<u16>(d, 2)
}
pub(crate) fn reduce_i16(d: &Device) -> Result<(), String> {
    reduce_checks::<i16>(d, 3)
}
pub(crate) fn reduce_u32(d: &Device) -> Result<(), String> {
    reduce_checks::<u32>(d, 4)
}
pub(crate) fn reduce_i32(d: &Device) -> Result<(), String> {
    reduce_checks::<i32>(d, 5)
}
pub(crate) fn reduce_u64(d: &Device) -> Result<(), String> {
    reduce_checks::<u64>(d, 6)
}
pub(crate) fn reduce_i64(d: &Device) -> Result<(), String> {
    reduce_checks::<i64>(d, 7)
}
pub(crate) fn reduce_f32(d: &Device) -> Result<(), String> {
    reduce_checks::<f32>(d, 8)
}
pub(crate) fn reduce_f64(d: &Device) -> Result<(), String> {
    reduce_checks::<f64>(d, 9)
}

/// 2x2 matrix product with wrapping arithmetic, written out independently
/// of the kernel's.
pub(crate) fn mat_product(x: Mat2, y: Mat2) -> Mat2 {
    let dot = |p: u32, q: u32, s: u32, t: u32| p.wrapping_mul(q).wrapping_add(s.wrapping_mul(t));
    Mat2 {
        a: dot(x.a, y.a, x.b, y.c),
        b: dot(x.a, y.b, x.b, y.d),
        c: dot(x.c, y.a, x.d, y.c),
        d: dot(x.c, y.b, x.d, y.d),
    }
}

pub(crate) fn user_op(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    // 66 blocks of 32 and 40 of 48: a warp folds the blocks' results in
    // runs of consecutive blocks, 3 per lane over 22 lanes; 2 over 20 in
    // the first warp of a block of 48, 3 over 14 in its partial warp of
    // 16 lanes, which holds the last rank (a root below).
    let many_blocks = [shape(2, 2), shape(192, 96), shape(2112, 32), shape(1920, 48)];
    let shapes = [COLLECTIVE_SHAPES, &many_blocks].concat();
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        let mut roots = vec![coll::ALL_RANKS, 0];
        if n > 2 {
            roots.push(n - 1);
        }
        if n > 2 {
            roots.push(n / 2);
        }
        // 15 matrices fill one collective round; 20 need two.
        for count in [1u32, 20] {
            let expected: Vec<Mat2> = (0..count)
                .map(|i| {
                    (1..n).fold(coll::user_operand(0, i), |acc, r| {
                        mat_product(acc, coll::user_operand(r, i))
                    })
                })
                .collect();
            if n > 2 {
                let reversed = (0..n)
                    .rev()
                    .map(|r| coll::user_operand(r, 0))
                    .reduce(mat_product)
                    .unwrap_or_default();
                c.ensure(reversed != expected[0], || {
                    "test design: the operands commute, the case proves nothing".into()
                });
            }
            for &root in &roots {
                let job =
                    Job::new(&coll::SEMANTICS_USER_OP, 0, coll::user_op_stride(count)).params(count, root);
                let o = launch(device, &s.spec(), n, &job)?;
                for r in 0..n {
                    let mut w = o.rank(r);
                    c.eq(
                        || format!("root {root:#x}, {count} matrices: rank {r}: class"),
                        w.take(),
                        0,
                    );
                    if root != coll::ALL_RANKS && root != r {
                        continue;
                    }
                    for (i, want) in expected.iter().enumerate() {
                        let [a, b, cc, d] = w.array();
                        c.eq(
                            || {
                                format!(
                                    "root {root:#x}, {count} matrices: rank {r}: product {i} (rank order)"
                                )
                            },
                            Mat2 { a, b, c: cc, d },
                            *want,
                        );
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

/// World broadcasts whose ranks name different roots (MPI 4.1 §6.1:
/// erroneous; docs/limits.md promises `MPI_ERR_ROOT` on every rank): two
/// writers, one writer and a dissenter, three writers, no writer, an
/// invalid root on one rank, a whole block against the others; in one
/// block (2, 45 and 96 ranks) and in several (2 blocks of 1, 4 of 3, 3 of
/// 32, 4 of 16). Every rank fails with `MPI_ERR_ROOT` and its buffer is
/// untouched; the ranks of a world of one block that all name root 1 get
/// its data. Then a barrier and an all-reduce work on every rank.
pub(crate) fn broadcast_roots(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[
            shape(2, 2),
            shape(45, 45),
            shape(96, 96),
            shape(2, 1),
            shape(12, 3),
            shape(96, 32),
            shape(64, 16),
        ],
        |c, s| {
            let n = s.ranks;
            let blocks = n / s.block;
            for case in coll::ROOTS_EVEN_ODD..=coll::ROOTS_LAST_BLOCK {
                let job = Job::new(&coll::SEMANTICS_COUNT, case, coll::COUNT_STRIDE);
                let o = launch(device, &s.spec(), n, &job)?;
                // One block naming root 1 is a correct broadcast.
                let correct = case == coll::ROOTS_LAST_BLOCK && blocks == 1;
                for r in 0..n {
                    let mut w = o.rank(r);
                    let [class, value, barrier, after, total] = w.array();
                    let ctx = |what: &str| format!("roots case {case}: rank {r}: {what}");
                    if correct {
                        c.eq(|| ctx("class"), class, 0);
                        c.eq(|| ctx("value (root 1's)"), value, 101);
                    } else {
                        c.eq(|| ctx("class"), class, ErrorClass::Root as u32);
                        c.eq(|| ctx("buffer untouched"), value, r + 100);
                    }
                    c.eq(|| ctx("barrier afterwards"), barrier, 0);
                    c.eq(|| ctx("all_reduce afterwards"), [after, total], [0, n]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}

/// World reduces whose ranks name different roots (MPI 4.1 §6.1, §6.9.1:
/// erroneous; docs/limits.md promises `MPI_ERR_ROOT` on every rank): the
/// root choices of [`broadcast_roots`], in the same worlds, for a reduce
/// of two staging rounds. Every rank fails with `MPI_ERR_ROOT` and the
/// receive buffer of a rank that named itself is untouched; the ranks of
/// a world of one block that all name root 1 get the sum there. Then a
/// barrier and an all-reduce work on every rank.
pub(crate) fn reduce_roots(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[
            shape(2, 2),
            shape(45, 45),
            shape(96, 96),
            shape(2, 1),
            shape(12, 3),
            shape(96, 32),
            shape(64, 16),
        ],
        |c, s| {
            let n = s.ranks;
            let blocks = n / s.block;
            for case in coll::REDUCE_ROOTS..=coll::REDUCE_ROOTS_LAST {
                let job = Job::new(&coll::SEMANTICS_COUNT, case, coll::COUNT_STRIDE);
                let o = launch(device, &s.spec(), n, &job)?;
                let roots = case - coll::REDUCE_ROOTS + coll::ROOTS_EVEN_ODD;
                // One block naming root 1 is a correct reduce.
                let correct = roots == coll::ROOTS_LAST_BLOCK && blocks == 1;
                for r in 0..n {
                    let mut w = o.rank(r);
                    let [class, value, barrier, after, total] = w.array();
                    let ctx = |what: &str| format!("reduce roots case {roots}: rank {r}: {what}");
                    if correct {
                        c.eq(|| ctx("class"), class, 0);
                        let sum = n * (n + 1) / 2;
                        let want = if r == 1 % n { sum } else { r + 100 };
                        c.eq(|| ctx("value (the sum at root 1)"), value, want);
                    } else {
                        c.eq(|| ctx("class"), class, ErrorClass::Root as u32);
                        c.eq(|| ctx("buffer untouched"), value, r + 100);
                    }
                    c.eq(|| ctx("barrier afterwards"), barrier, 0);
                    c.eq(|| ctx("all_reduce afterwards"), [after, total], [0, n]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn count_mismatch(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(4, 4), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            for case in [
                coll::COUNT_ALL_REDUCE_SEND,
                coll::COUNT_ALL_REDUCE_RECV,
                coll::COUNT_BROADCAST,
                coll::COUNT_REDUCE,
                coll::COUNT_ALL_REDUCE_ROUNDS,
            ] {
                let job = Job::new(&coll::SEMANTICS_COUNT, case, coll::COUNT_STRIDE);
                let o = launch(device, &s.spec(), n, &job)?;
                let count = ErrorClass::Count as u32;
                for r in 0..n {
                    let mut w = o.rank(r);
                    let [class, value, barrier, after, total] = w.array();
                    let ctx = |what: &str| format!("case {case}: rank {r}: {what}");
                    match case {
                        coll::COUNT_ALL_REDUCE_RECV if r != 0 => {
                            c.eq(|| ctx("class (own counts agree)"), class, 0);
                            c.eq(|| ctx("sum"), value, n);
                        }
                        coll::COUNT_ALL_REDUCE_RECV => c.eq(|| ctx("class"), class, count),
                        coll::COUNT_BROADCAST if r != n - 1 => {
                            c.eq(|| ctx("class (own count agrees)"), class, 0);
                            c.eq(|| ctx("broadcast value"), value, 0);
                        }
                        _ => c.eq(|| ctx("class"), class, count),
                    }
                    c.eq(|| ctx("barrier afterwards"), barrier, 0);
                    c.eq(|| ctx("all_reduce afterwards"), [after, total], [0, n]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}
