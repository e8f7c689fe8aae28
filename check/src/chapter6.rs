//! Chapter 6 beyond barrier, broadcast and reduce: gather, scatter,
//! all-gather, all-to-all, reduce-scatter, scans, in-place forms, and their
//! argument errors.

use crate::collective::mat_product;
use crate::harness::*;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::Device;
use gpu_mpi_check_kernels::chapter6 as ch6;
use gpu_mpi_check_kernels::collectives as coll;
use gpu_mpi_check_kernels::p2p::Mat2;

/// World shapes of the chapter 6 cases: one rank, one block, blocks of 32
/// (64 and 96 ranks), 300 ranks in 5 blocks, many small blocks (blocks of 3
/// and of 1), and 64-byte collective rounds.
const CH6_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(7, 7),
    shape(12, 3),
    shape(16, 1),
    shape(64, 32),
    shape(96, 32),
    shape(300, 60),
    small_rounds(7, 7),
    small_rounds(12, 3),
];

/// Element counts per part for a world of `n` ranks: 0 (nothing moves), 1,
/// and several collective rounds where the world is small.
fn ch6_counts(n: u32) -> &'static [u32] {
    if n <= 16 {
        &[0, 1, 70]
    } else {
        &[1, 5]
    }
}

/// The exchange checks' counts: [`ch6_counts`], and on the small shapes 3
/// words too, a part of 12 bytes (the in-place swaps' register path for
/// parts of 9 to 16 bytes, between the batched words and the copies).
fn exchange_counts(n: u32) -> &'static [u32] {
    if n <= 16 {
        &[0, 1, 3, 70]
    } else {
        ch6_counts(n)
    }
}

fn ch6_name(case: u32) -> &'static str {
    match case {
        ch6::X_GATHER => "gather",
        ch6::X_GATHER_IN_PLACE => "gather in place",
        ch6::X_GATHERV => "gatherv",
        ch6::X_SCATTER => "scatter",
        ch6::X_SCATTER_IN_PLACE => "scatter in place",
        ch6::X_SCATTERV => "scatterv",
        ch6::X_GATHERV_IN_PLACE => "gatherv in place",
        ch6::X_SCATTERV_IN_PLACE => "scatterv in place",
        ch6::X_ALLGATHER => "all_gather",
        ch6::X_ALLGATHER_IN_PLACE => "all_gather in place",
        ch6::X_ALLGATHERV => "all_gatherv",
        ch6::X_ALLTOALL => "all_to_all",
        ch6::X_ALLTOALL_IN_PLACE => "all_to_all in place",
        ch6::X_ALLTOALLV => "all_to_allv",
        ch6::X_ALLTOALLV_IN_PLACE => "all_to_allv in place",
        _ => "?",
    }
}

/// What rank `r`'s receive buffer (`n (k + 2)` words) must hold after
/// exchange case `case` with root `root`.
fn exchange_expected(case: u32, n: u32, k: u32, root: u32, r: u32) -> Vec<u32> {
    let mut v = vec![ch6::FILL; (n * (k + 2)) as usize];
    let mut put = |at: u32, val: u32| v[at as usize] = val;
    for q in 0..n {
        match case {
            ch6::X_GATHER | ch6::X_GATHER_IN_PLACE if r == root => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, root, i)))
            }
            ch6::X_GATHERV if r == 0 => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, 0) + i, ch6::xval(q, 0, i)))
            }
            ch6::X_GATHERV_IN_PLACE if r == root => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, 0) + i, ch6::xval(q, root, i)))
            }
            ch6::X_ALLGATHER | ch6::X_ALLGATHER_IN_PLACE => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, 0, i)))
            }
            ch6::X_ALLGATHERV => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, r) + i, ch6::xval(q, 0, i)))
            }
            ch6::X_ALLTOALL | ch6::X_ALLTOALL_IN_PLACE => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, r, i)))
            }
            ch6::X_ALLTOALLV => {
                (0..ch6::vcc(q, r, k)).for_each(|i| put(ch6::displ(q, k, 1) + i, ch6::xval(q, r, i)))
            }
            ch6::X_ALLTOALLV_IN_PLACE => {
                (0..ch6::vcs(q, r, k)).for_each(|i| put(ch6::displ(q, k, r) + i, ch6::xval(q, r, i)))
            }
            _ => {}
        }
    }
    match case {
        ch6::X_SCATTER => (0..k).for_each(|i| put(i, ch6::xval(root, r, i))),
        ch6::X_SCATTER_IN_PLACE if r != root => (0..k).for_each(|i| put(i, ch6::xval(root, r, i))),
        ch6::X_SCATTERV => (0..ch6::vc(r, k)).for_each(|i| put(i, ch6::xval(0, r, i))),
        ch6::X_SCATTERV_IN_PLACE if r != root => {
            (0..ch6::vc(r, k)).for_each(|i| put(i, ch6::xval(root, r, i)))
        }
        _ => {}
    }
    v
}

/// Runs the exchange `cases` in every chapter 6 shape and checks every
/// rank's class and receive buffer.
fn exchange_checks(device: &Device, cases: &[u32]) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(CH6_SHAPES, |c, s| {
        let n = s.ranks;
        let rooted = |case: u32| {
            matches!(
                case,
                ch6::X_GATHER
                    | ch6::X_GATHER_IN_PLACE
                    | ch6::X_SCATTER
                    | ch6::X_SCATTER_IN_PLACE
                    | ch6::X_GATHERV_IN_PLACE
                    | ch6::X_SCATTERV_IN_PLACE
            )
        };
        for &case in cases {
            let roots: Vec<u32> = if rooted(case) { vec![0, n / 2, n - 1] } else { vec![0] };
            let mut seen = std::collections::BTreeSet::new();
            for &k in exchange_counts(n) {
                for &root in &roots {
                    if !seen.insert((k, root)) {
                        continue;
                    }
                    let region = ch6::exchange_region(n, k);
                    let job = Job::new(&ch6::SEMANTICS_EXCHANGE, case, ch6::CH6_STRIDE)
                        .params(k, root)
                        .cells(region * n as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    let name = ch6_name(case);
                    for r in 0..n {
                        c.eq(
                            || format!("{name}, {k} words, root {root}: rank {r}: [class, barrier, all_reduce, sum]"),
                            o.rank(r).array(),
                            [0, 0, 0, n],
                        );
                        let at = r as usize * region + ch6::exchange_recv_offset(n, k);
                        let got = &o.cells[at..at + (n * (k + 2)) as usize];
                        let want = exchange_expected(case, n, k, root, r);
                        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                            c.fail(format!(
                                "{name}, {k} words, root {root}: rank {r}: receive word {i} is {:#x}, expected {:#x}",
                                got[i], want[i]
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn gather_scatter(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[
            ch6::X_GATHER,
            ch6::X_GATHER_IN_PLACE,
            ch6::X_GATHERV,
            ch6::X_SCATTER,
            ch6::X_SCATTER_IN_PLACE,
            ch6::X_SCATTERV,
            ch6::X_GATHERV_IN_PLACE,
            ch6::X_SCATTERV_IN_PLACE,
        ],
    )
}

pub(crate) fn all_gather(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[ch6::X_ALLGATHER, ch6::X_ALLGATHER_IN_PLACE, ch6::X_ALLGATHERV],
    )
}

pub(crate) fn all_to_all_case(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[
            ch6::X_ALLTOALL,
            ch6::X_ALLTOALL_IN_PLACE,
            ch6::X_ALLTOALLV,
            ch6::X_ALLTOALLV_IN_PLACE,
        ],
    )
}

/// An element of a prefix case as its words, with the case's operation.
struct PrefixOp {
    name: &'static str,
    param2: u32,
    elem: fn(u32, u32) -> Vec<u32>,
    combine: fn(&[u32], &[u32]) -> Vec<u32>,
    /// Words per element.
    words: usize,
}

const PREFIX_OPS: [PrefixOp; 2] = [
    PrefixOp {
        name: "u32 sum",
        param2: ch6::PREFIX_SUM,
        elem: |r, j| vec![ch6::sum_operand(r, j)],
        combine: |a, b| vec![a[0].wrapping_add(b[0])],
        words: 1,
    },
    PrefixOp {
        name: "matrix product (non-commutative)",
        param2: ch6::PREFIX_MATRIX,
        elem: |r, j| {
            let m = coll::user_operand(r, j);
            vec![m.a, m.b, m.c, m.d]
        },
        combine: |x, y| {
            let m = mat_product(
                Mat2 {
                    a: x[0],
                    b: x[1],
                    c: x[2],
                    d: x[3],
                },
                Mat2 {
                    a: y[0],
                    b: y[1],
                    c: y[2],
                    d: y[3],
                },
            );
            vec![m.a, m.b, m.c, m.d]
        },
        words: 4,
    },
];

fn prefix_name(case: u32) -> &'static str {
    match case {
        ch6::P_SCAN => "scan",
        ch6::P_SCAN_IN_PLACE => "scan in place",
        ch6::P_EXSCAN => "exclusive_scan",
        ch6::P_EXSCAN_IN_PLACE => "exclusive_scan in place",
        ch6::P_RSB => "reduce_scatter_block",
        ch6::P_RSB_IN_PLACE => "reduce_scatter_block in place",
        ch6::P_RS => "reduce_scatter",
        ch6::P_RS_IN_PLACE => "reduce_scatter in place",
        ch6::P_ALL_REDUCE_IN_PLACE => "all_reduce in place",
        ch6::P_REDUCE_IN_PLACE => "reduce in place (root n/2)",
        ch6::P_REDUCE_LOCAL => "reduce_local",
        _ => "?",
    }
}

/// `op` folded over `ranks` (in that order) for element `j`.
fn fold(op: &PrefixOp, ranks: impl Iterator<Item = u32>, j: u32) -> Option<Vec<u32>> {
    ranks.map(|q| (op.elem)(q, j)).reduce(|a, b| (op.combine)(&a, &b))
}

/// Runs the prefix `cases` in every chapter 6 shape with both operations
/// and checks the results (words of the buffer that receives them: the
/// receive buffer, or the send buffer in place).
fn prefix_checks(device: &Device, cases: &[u32]) -> Result<(), String> {
    prefix_checks_on(device, CH6_SHAPES, ch6_counts, cases)
}

/// [`prefix_checks`] on `shapes`, with `counts(ranks)` elements per part.
fn prefix_checks_on(
    device: &Device,
    shapes: &[Shape],
    counts: fn(u32) -> &'static [u32],
    cases: &[u32],
) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(shapes, |c, s| {
        let n = s.ranks;
        for op in &PREFIX_OPS {
            if op.words == 4 && n > 1 {
                let forward = fold(op, 0..n, 0);
                let backward = fold(op, (0..n).rev(), 0);
                c.ensure(forward != backward, || {
                    "test design: the operands commute, the case proves nothing".into()
                });
            }
            for &case in cases {
                for &k in counts(n) {
                    let region = ch6::prefix_region(n, k);
                    let job = Job::new(&ch6::SEMANTICS_PREFIX, case, ch6::CH6_STRIDE)
                        .params(k, op.param2)
                        .cells(region * n as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    let name = prefix_name(case);
                    let in_place = matches!(
                        case,
                        ch6::P_SCAN_IN_PLACE
                            | ch6::P_EXSCAN_IN_PLACE
                            | ch6::P_RSB_IN_PLACE
                            | ch6::P_RS_IN_PLACE
                            | ch6::P_ALL_REDUCE_IN_PLACE
                            | ch6::P_REDUCE_IN_PLACE
                    );
                    let offsets: Vec<u32> = (0..=n)
                        .scan(0, |acc, q| {
                            let v = *acc;
                            *acc += if q < n { ch6::rs_count(q, k) } else { 0 };
                            Some(v)
                        })
                        .collect();
                    for r in 0..n {
                        c.eq(
                            || format!("{}, {name}, {k} elements: rank {r}: [class, barrier, all_reduce, sum]", op.name),
                            o.rank(r).array(),
                            [0, 0, 0, n],
                        );
                        let base = r as usize * region + if in_place { 0 } else { region / 2 };
                        let fill = vec![ch6::FILL; op.words];
                        let mine = |j: u32| (op.elem)(r, j);
                        let (len, want): (u32, Box<dyn Fn(u32) -> Vec<u32>>) = match case {
                            ch6::P_SCAN | ch6::P_SCAN_IN_PLACE => {
                                (k, Box::new(|j| fold(op, 0..=r, j).unwrap_or_default()))
                            }
                            ch6::P_EXSCAN | ch6::P_EXSCAN_IN_PLACE => (
                                k,
                                Box::new(|j| match fold(op, 0..r, j) {
                                    Some(v) => v,
                                    None if in_place => mine(j),
                                    None => fill.clone(),
                                }),
                            ),
                            ch6::P_RSB | ch6::P_RSB_IN_PLACE => {
                                (k, Box::new(|i| fold(op, 0..n, r * k + i).unwrap_or_default()))
                            }
                            ch6::P_RS | ch6::P_RS_IN_PLACE => (
                                ch6::rs_count(r, k),
                                Box::new(|i| fold(op, 0..n, offsets[r as usize] + i).unwrap_or_default()),
                            ),
                            ch6::P_ALL_REDUCE_IN_PLACE => (k, Box::new(|j| fold(op, 0..n, j).unwrap_or_default())),
                            // Element j (the left operand) combined with
                            // element j + 1 of this rank's own operands.
                            ch6::P_REDUCE_LOCAL => (k, Box::new(|j| (op.combine)(&mine(j), &mine(j + 1)))),
                            _ => (
                                k,
                                Box::new(|j| if r == n / 2 { fold(op, 0..n, j).unwrap_or_default() } else { mine(j) }),
                            ),
                        };
                        for j in 0..len {
                            let at = base + j as usize * op.words;
                            let got = &o.cells[at..at + op.words];
                            let w = want(j);
                            if got != &w[..] {
                                c.fail(format!(
                                    "{}, {name}, {k} elements: rank {r}: element {j} is {got:x?}, expected {w:x?}",
                                    op.name
                                ));
                                break;
                            }
                        }
                        if !in_place {
                            let at = base + len as usize * op.words;
                            c.eq(
                                || format!("{}, {name}, {k} elements: rank {r}: element {len} (past the result) untouched", op.name),
                                &o.cells[at..at + op.words],
                                &fill[..],
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

pub(crate) fn scan(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[
            ch6::P_SCAN,
            ch6::P_SCAN_IN_PLACE,
            ch6::P_EXSCAN,
            ch6::P_EXSCAN_IN_PLACE,
        ],
    )
}

/// Scans whose rounds are long: 96 ranks in one block of three warps
/// staging 4,096 bytes per round, 300 elements. A round's warp totals and
/// prefixes (five per element) do not fit the block's shared scratch and
/// go through the rank cells: all of the `u32` sum's one round, and the
/// first of the matrix product's two (255 and 45 elements; the second
/// fits).
pub(crate) fn scan_long_rounds(device: &Device) -> Result<(), String> {
    const SHAPES: &[Shape] = &[Shape {
        ranks: 96,
        block: 96,
        collective_bytes: 4096,
    }];
    prefix_checks_on(
        device,
        SHAPES,
        |_| &[300],
        &[
            ch6::P_SCAN,
            ch6::P_SCAN_IN_PLACE,
            ch6::P_EXSCAN,
            ch6::P_EXSCAN_IN_PLACE,
        ],
    )
}

pub(crate) fn reduce_scatter(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[ch6::P_RSB, ch6::P_RSB_IN_PLACE, ch6::P_RS, ch6::P_RS_IN_PLACE],
    )
}

pub(crate) fn reduce_in_place(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[
            ch6::P_ALL_REDUCE_IN_PLACE,
            ch6::P_REDUCE_IN_PLACE,
            ch6::P_REDUCE_LOCAL,
        ],
    )
}

/// Bad arguments to the chapter 6 collectives: every rank that entered
/// returns an error (its own, or the class of the failure), nobody hangs,
/// and the world works afterwards.
pub(crate) fn collective_arguments(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let shapes = [
        shape(1, 1),
        shape(2, 2),
        shape(7, 7),
        shape(12, 3),
        shape(64, 32),
        small_rounds(12, 3),
    ];
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        const K: u32 = 3;
        let count = ErrorClass::Count as u32;
        for case in ch6::E_CASES {
            let job = Job::new(&ch6::SEMANTICS_EXCHANGE, case, ch6::CH6_STRIDE)
                .params(K, 0)
                .cells(ch6::exchange_region(n, K) * n as usize);
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let class = match case {
                    ch6::E_GATHER_BAD_ROOT | ch6::E_SCATTER_BAD_ROOT => ErrorClass::Root as u32,
                    ch6::E_SCATTERV_BOUNDS if r == 0 => ErrorClass::Arg as u32,
                    ch6::E_ALLGATHER_TYPE => ErrorClass::Type as u32,
                    // The rank whose partition is at fault names it; the
                    // others return the agreement's error, as for case 25.
                    ch6::E_ALLTOALLV_RECV_BOUNDS | ch6::E_ALLTOALLV_IN_PLACE_BOUNDS if r == 0 => {
                        ErrorClass::Arg as u32
                    }
                    ch6::E_ALLTOALLV_SEND_BOUNDS | ch6::E_ALLTOALLV_IN_PLACE_PARTNER_BOUNDS if r == n - 1 => {
                        ErrorClass::Arg as u32
                    }
                    ch6::E_ALLTOALLV_IN_PLACE_COUNTS if n == 1 => 0,
                    _ => count,
                };
                c.eq(
                    || format!("exchange error case {case}: rank {r}: [class, barrier, all_reduce, sum]"),
                    o.rank(r).array(),
                    [class, 0, 0, n],
                );
            }
        }
        for op in &PREFIX_OPS {
            for case in ch6::PE_CASES {
                let job = Job::new(&ch6::SEMANTICS_PREFIX, case, ch6::CH6_STRIDE)
                    .params(K, op.param2)
                    .cells(ch6::prefix_region(n, K) * n as usize);
                let o = launch(device, &s.spec(), n, &job)?;
                // One rank alone passing one element more is consistent.
                let class = if case == ch6::PE_SCAN_COUNT && n == 1 {
                    0
                } else {
                    count
                };
                for r in 0..n {
                    c.eq(
                        || {
                            format!(
                                "{}, prefix error case {case}: rank {r}: [class, barrier, all_reduce, sum]",
                                op.name
                            )
                        },
                        o.rank(r).array(),
                        [class, 0, 0, n],
                    );
                }
            }
        }
        Ok(())
    });
    c.finish()
}
