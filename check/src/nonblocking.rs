//! Non-blocking point-to-point cases (MPI 4.1 §3.7-3.9).

use crate::harness::*;
use gpu_mpi::device::{ANY_TAG, PROC_NULL};
use gpu_mpi::{Device, WorldSpec};
use gpu_mpi_check_kernels::nonblocking as nb;
use gpu_mpi_check_kernels::NONE;

const NB_SHAPES: &[Shape] = &[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3), shape(33, 11)];

fn nb_launch(device: &Device, s: Shape, case: u32, param: u32, streaming: bool) -> Result<Output, String> {
    nb_launch_spec(device, s, s.spec().force_streaming(streaming), case, param)
}

fn nb_launch_spec(
    device: &Device,
    s: Shape,
    spec: WorldSpec,
    case: u32,
    param: u32,
) -> Result<Output, String> {
    let n = s.ranks;
    let job = Job::new(&nb::SEMANTICS_NONBLOCKING, case, nb::nb_stride(case, n)).params(param, 0);
    launch(device, &spec, n, &job)
}

pub(crate) fn nb_wait_any(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let n = s.ranks;
        let o = nb_launch(device, s, nb::NB_WAIT_ANY, 0, false)?;
        let mut w = o.rank(0);
        let mut seen = vec![0u32; n as usize];
        for i in 1..n {
            let [src, tag, count, first] = w.array();
            if src == 0 || src >= n {
                c.fail(format!("receive {i}: source {src}"));
                continue;
            }
            seen[src as usize] += 1;
            c.eq(
                || format!("message from {src}: tag, count, first word"),
                (tag, count, first),
                (src % 5, src % 4 + 1, 1000 * src),
            );
        }
        for (r, &k) in seen.iter().enumerate().skip(1) {
            c.eq(|| format!("messages received from rank {r}"), k, 1);
        }
        let batches = (n - 1).div_ceil(8);
        c.eq(|| "batches ending in AllNull".to_string(), w.take(), batches);
        Ok(())
    });
    c.finish()
}

pub(crate) fn nb_all_to_all(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for streaming in [false, true] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_ALL_TO_ALL, 0, streaming)?;
            for r in 0..n {
                let mut w = o.rank(r);
                for k in 1..n {
                    let src = (r + n - k) % n;
                    let count = if k % 3 == 0 { 100 } else { 3 };
                    c.eq(
                        || format!("streaming {streaming}: rank {r}, offset {k}"),
                        w.array::<5>(),
                        [src, count, src, r, k],
                    );
                }
            }
            Ok(())
        });
    }
    c.finish()
}

pub(crate) fn nb_self_probe(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let o = nb_launch(device, s, nb::NB_SELF_PROBE, 0, false)?;
        for r in 0..s.ranks {
            let mut w = o.rank(r);
            let s = st(OK, r as i32, 3, 8);
            c.eq(|| format!("rank {r}: probe status"), w.array(), s);
            c.eq(|| format!("rank {r}: receive status"), w.array(), s);
            c.eq(|| format!("rank {r}: words, send class"), w.array(), [r, 42, 0]);
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn nb_null_sets(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3)], |c, s| {
        let o = nb_launch(device, s, nb::NB_NULL_SETS, 0, false)?;
        for r in 0..s.ranks {
            let mut w = o.rank(r);
            c.eq(
                || format!("rank {r}: wait_all class, wait_any, test_any, wait_some, test_some, test_all"),
                w.array(),
                [0, 1, 1, 1, 1, 1],
            );
            let empty = st(OK, -1, ANY_TAG, 0);
            c.eq(|| format!("rank {r}: null wait status"), w.array(), empty);
            c.eq(|| format!("rank {r}: null test status"), w.array(), empty);
            c.eq(|| format!("rank {r}: send to null is null"), w.take(), 1);
            c.eq(
                || format!("rank {r}: receive from null"),
                w.array(),
                st(OK, PROC_NULL, ANY_TAG, 0),
            );
            c.eq(
                || format!("rank {r}: wait_any of a receive from null: its index"),
                w.take(),
                1,
            );
            c.eq(
                || format!("rank {r}: wait_any of a receive from null: its status"),
                w.array(),
                st(OK, PROC_NULL, ANY_TAG, 0),
            );
            c.eq(
                || format!("rank {r}: test_any, wait_some, test_some of a receive from null"),
                w.array(),
                [0, 1, 1],
            );
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn nb_mprobe(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for streaming in [false, true] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_MPROBE, 0, streaming)?;
            for r in (0..n).step_by(2) {
                let mut w = o.rank(r);
                let got: [u32; 28] = w.array();
                let want: Vec<u32> = if r + 1 < n {
                    let p = (r + 1) as i32;
                    let small = st(OK, p, 2, 8);
                    let big = st(OK, p, 5, 400);
                    [
                        &small[..],
                        &small,
                        &[r + 1, 2],
                        &big,
                        &[0],
                        &big,
                        &[r + 1, 3, 100 + r],
                        &small,
                        &[r + 1, 1],
                    ]
                    .concat()
                } else {
                    let null = st(OK, PROC_NULL, ANY_TAG, 0);
                    [
                        &null[..],
                        &null,
                        &[NONE, NONE],
                        &null,
                        &[0],
                        &null,
                        &[NONE; 3],
                        &null,
                        &[NONE, NONE],
                    ]
                    .concat()
                };
                c.eq(|| format!("streaming {streaming}: rank {r}"), got.to_vec(), want);
            }
            Ok(())
        });
    }
    c.finish()
}

pub(crate) fn nb_ssend(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for (param, streaming) in [(0, false), (1, false), (1, true)] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_SSEND, param, streaming)?;
            for r in 0..n {
                let got: [u32; 4] = o.rank(r).array();
                let want = if r % 2 == 1 {
                    [r - 1, 0x60, if param != 0 { 7 + r - 1 } else { NONE }, r]
                } else {
                    [0; 4]
                };
                c.eq(
                    || format!("big {param}, streaming {streaming}: rank {r}"),
                    got,
                    want,
                );
            }
            Ok(())
        });
    }
    c.finish()
}

pub(crate) fn nb_blocking_among_requests(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for (param, streaming) in [(0, false), (1, true)] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_BLOCKING_AMONG_REQUESTS, param, streaming)?;
            for r in 0..n {
                let p = if r % 2 == 0 {
                    if r + 1 < n {
                        r + 1
                    } else {
                        r
                    }
                } else {
                    r - 1
                };
                let mut w = o.rank(r);
                let at = |what: &str| format!("streaming {streaming}: rank {r}: {what}");
                c.eq(
                    || at("blocking any-tag receive"),
                    w.array(),
                    st(OK, p as i32, 2, 8),
                );
                c.eq(|| at("its words"), w.array(), [p, 2]);
                c.eq(
                    || at("blocking tag-9 receive"),
                    w.array(),
                    st(OK, p as i32, 9, 400),
                );
                c.eq(|| at("words 0 and 99"), w.array(), [1000 * p, 1000 * p + 99]);
                c.eq(|| at("posted receive"), w.array(), st(OK, p as i32, 1, 8));
                c.eq(|| at("its words"), w.array(), [p, 1]);
                c.eq(|| at("send class"), w.take(), OK as u32);
            }
            Ok(())
        });
    }
    c.finish()
}

pub(crate) fn nb_arrays(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let n = s.ranks;
        let o = nb_launch(device, s, nb::NB_ARRAYS, 0, false)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n);
            c.eq(|| format!("rank {r}: status"), w.array(), st(OK, l as i32, 1, 12));
            c.eq(|| format!("rank {r}: words"), w.array(), [l, 2, 3]);
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn nb_ssend_elsewhere(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for immediate in [0, 1] {
        for slots in [1, 8] {
            c.shapes(NB_SHAPES, |c, s| {
                let n = s.ranks;
                let spec = s.spec().slots_per_rank(slots);
                let o = nb_launch_spec(device, s, spec, nb::NB_SSEND_ELSEWHERE, immediate)?;
                for r in 0..n {
                    let mut w = o.rank(r);
                    let at = |what: &str| format!("immediate {immediate}, {slots} slots: rank {r}: {what}");
                    let pair: [u32; 4] = w.array();
                    let want = if r % 2 == 0 && r + 1 < n {
                        [OK as u32, OK as u32, 0, 0]
                    } else if r % 2 == 1 {
                        [5, r - 1, OK as u32, r + 99]
                    } else {
                        [0; 4]
                    };
                    c.eq(|| at("pair"), pair, want);
                    c.eq(|| at("synchronous send to self"), w.array(), [OK as u32, r + 200]);
                }
                Ok(())
            });
        }
    }
    c.finish()
}

pub(crate) fn nb_slots_in_waits(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let shapes = [shape(4, 4), shape(4, 2), shape(6, 3)];
    for slots in [1, 2, 8] {
        c.shapes(&shapes, |c, s| {
            let n = s.ranks;
            let spec = s.spec().slots_per_rank(slots);
            let o = nb_launch_spec(device, s, spec, nb::NB_SLOTS_IN_WAITS, 0)?;
            c.eq(
                || format!("{slots} slots: rank 0's sends"),
                o.rank(0).array::<4>(),
                [OK as u32, 0, 0, 0],
            );
            for d in 1..n {
                c.eq(
                    || format!("{slots} slots: rank {d}: tag 99, tags 1-3"),
                    o.rank(d).array::<4>(),
                    [d, 1000 * d + 1, 1000 * d + 2, 1000 * d + 3],
                );
            }
            Ok(())
        });
    }
    c.finish()
}

pub(crate) fn nb_polls_between_collectives(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for (param, what) in [
        (0, "world barrier"),
        (1, "all-reduce"),
        (2, "split_shared barrier"),
    ] {
        c.shapes(&[shape(2, 2), shape(4, 2)], |c, s| {
            let o = nb_launch(device, s, nb::NB_POLLS_BETWEEN_COLLECTIVES, param, false)?;
            for r in 0..s.ranks {
                c.eq(
                    || format!("{what}: rank {r}: rounds, failure class, probes that found something"),
                    o.rank(r).array::<3>(),
                    [nb::POLL_ROUNDS, 0, 0],
                );
            }
            Ok(())
        });
    }
    c.finish()
}
