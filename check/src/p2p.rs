//! Point-to-point cases (MPI 4.1 chapter 3): all-to-one, rings, pairs,
//! self sends, zero lengths, the null process, probes, truncation, large
//! messages direct and streamed, non-overtaking, datatype matching and
//! invalid arguments.

use crate::harness::*;
use gpu_mpi::device::datatype::{ID_F32, ID_F64};
use gpu_mpi::device::{ErrorClass, ANY_TAG, PROC_NULL};
use gpu_mpi::Device;
use gpu_mpi_check_kernels::p2p;
use gpu_mpi_check_kernels::{pattern_byte, NONE};

const P2P_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(2, 2),
    shape(7, 7),
    shape(12, 3),
    shape(96, 96),
    shape(128, 32),
];

fn all_to_one(device: &Device, case: u32) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[
            shape(1, 1),
            shape(2, 2),
            shape(12, 3),
            shape(96, 96),
            shape(256, 64),
        ],
        |c, s| {
            let n = s.ranks;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 1..n {
                c.eq(|| format!("rank {r}: send class"), o.rank(r).take(), 0);
            }
            let mut w = o.rank(0);
            let mut seen = vec![false; n as usize];
            for i in 0..n.saturating_sub(1) {
                let status: [u32; 4] = w.array();
                let payload: [u32; 3] = w.array();
                let src = status[1];
                if case == p2p::P2P_ALL_TO_ONE_SPECIFIC {
                    c.eq(
                        || format!("receive {i}: source (descending order)"),
                        src,
                        n - 1 - i,
                    );
                }
                if !(1..n).contains(&src) {
                    c.fail(format!("receive {i}: status {status:?} names no sender"));
                    continue;
                }
                c.ensure(!std::mem::replace(&mut seen[src as usize], true), || {
                    format!("receive {i}: second message from rank {src}")
                });
                c.eq(
                    || format!("receive {i}: status"),
                    status,
                    st(OK, src as i32, (src % 7) as i32, 12),
                );
                c.eq(
                    || format!("receive {i}: payload"),
                    payload,
                    p2p::all_to_one_message(src),
                );
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn all_to_one_any(device: &Device) -> Result<(), String> {
    all_to_one(device, p2p::P2P_ALL_TO_ONE_ANY)
}

pub(crate) fn all_to_one_specific(device: &Device) -> Result<(), String> {
    all_to_one(device, p2p::P2P_ALL_TO_ONE_SPECIFIC)
}

pub(crate) fn ring(device: &Device) -> Result<(), String> {
    const ROUNDS: u32 = 5;
    const MARK: u32 = 0xC0FFEE;
    let mut c = Checker::default();
    c.shapes(P2P_SHAPES, |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_RING,
            p2p::p2p_stride(p2p::P2P_RING, n, ROUNDS),
        )
        .params(ROUNDS, MARK);
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n);
            for k in 0..ROUNDS {
                c.eq(
                    || format!("rank {r} round {k}: status"),
                    w.array(),
                    st(OK, l as i32, k as i32, 12),
                );
                c.eq(|| format!("rank {r} round {k}: payload"), w.array(), [l, k, MARK]);
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn pairs(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(P2P_SHAPES, |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_PAIRS,
            p2p::p2p_stride(p2p::P2P_PAIRS, n, 0),
        );
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let (status, payload): ([u32; 4], [u32; 2]) = (w.array(), w.array());
            match partner(r, n) {
                Some(p) => {
                    let tag = if r % 2 == 0 { 12 } else { 11 };
                    c.eq(|| format!("rank {r}: status"), status, st(OK, p as i32, tag, 8));
                    c.eq(|| format!("rank {r}: payload"), payload, [p, 77]);
                }
                None => {
                    c.eq(
                        || format!("rank {r}: null status"),
                        status,
                        st(OK, PROC_NULL, ANY_TAG, 0),
                    );
                    c.eq(|| format!("rank {r}: buffer untouched"), payload, [NONE, NONE]);
                }
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn all_to_all(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::P2P_ALL_TO_ALL;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                let mut seen = vec![false; n as usize];
                for i in 1..n {
                    let status: [u32; 4] = w.array();
                    let payload: [u32; 3] = w.array();
                    let src = status[1];
                    if src >= n || src == r {
                        c.fail(format!(
                            "rank {r} receive {i}: status {status:?} names no other rank"
                        ));
                        continue;
                    }
                    c.ensure(!std::mem::replace(&mut seen[src as usize], true), || {
                        format!("rank {r} receive {i}: second message from rank {src}")
                    });
                    let k = (r + n - src) % n;
                    c.eq(
                        || format!("rank {r} receive {i}: status"),
                        status,
                        st(OK, src as i32, k as i32, 12),
                    );
                    c.eq(|| format!("rank {r} receive {i}: payload"), payload, [src, r, k]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn to_self(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_SELF,
            p2p::p2p_stride(p2p::P2P_SELF, n, 0),
        );
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let me = r as i32;
            for (what, tag, bytes, first) in [
                ("tag 1", 1, 4, 10 + r),
                ("tag 2", 2, 8, 20 + r),
                ("tag 3", 3, 12, 30 + r),
                ("send_receive", 0, 4, 40 + r),
            ] {
                c.eq(
                    || format!("rank {r} {what}: status"),
                    w.array(),
                    st(OK, me, tag, bytes),
                );
                c.eq(|| format!("rank {r} {what}: payload"), w.take(), first);
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn zero_length(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::P2P_ZERO_LENGTH;
        let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n) as i32;
            c.eq(|| format!("rank {r} empty: status"), w.array(), st(OK, l, 9, 0));
            c.eq(|| format!("rank {r} empty: count"), w.take(), 0);
            c.eq(
                || format!("rank {r} empty: buffer untouched"),
                w.take(),
                0xAAAA_AAAA,
            );
            c.eq(|| format!("rank {r} next: status"), w.array(), st(OK, l, 10, 4));
            c.eq(|| format!("rank {r} next: payload"), w.take(), l as u32);
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn null_process(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::P2P_NULL;
        let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
        let o = launch(device, &s.spec(), n, &job)?;
        let null = st(OK, PROC_NULL, ANY_TAG, 0);
        for r in 0..n {
            let mut w = o.rank(r);
            c.eq(|| format!("rank {r}: send"), w.take(), 0);
            c.eq(|| format!("rank {r}: send with tag"), w.take(), 0);
            c.eq(|| format!("rank {r}: receive status"), w.array(), null);
            c.eq(
                || format!("rank {r}: receive buffer untouched"),
                w.take(),
                0x1234_5678,
            );
            c.eq(|| format!("rank {r}: receive count"), w.take(), 0);
            c.eq(|| format!("rank {r}: receive with tag status"), w.array(), null);
            c.eq(|| format!("rank {r}: probe status"), w.array(), null);
            let [found, a, b, d, e] = w.array();
            c.eq(
                || format!("rank {r}: immediate probe"),
                [found, a, b, d, e],
                [1, null[0], null[1], null[2], null[3]],
            );
            c.eq(|| format!("rank {r}: send_receive status"), w.array(), null);
            c.eq(
                || format!("rank {r}: send_receive buffer untouched"),
                w.take(),
                0x1234_5678,
            );
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn replace(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(2, 2), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::P2P_REPLACE;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                let l = left(r, n);
                c.eq(|| format!("rank {r}: status"), w.array(), st(OK, l as i32, 4, 64));
                c.eq(
                    || format!("rank {r}: words 0, 15"),
                    w.array(),
                    [l * 100, l * 100 + 15],
                );
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn probe_pairs(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::PROBE_PAIRS;
        let job = Job::new(&p2p::SEMANTICS_PROBE, case, p2p::probe_stride(case, n));
        let o = launch(device, &s.spec(), n, &job)?;
        for r in (0..n).step_by(2) {
            let p = if r + 1 < n { r + 1 } else { r };
            let pi = p as i32;
            let mut w = o.rank(r);
            c.eq(
                || format!("rank {r}: immediate probe before any send"),
                w.take(),
                0,
            );
            c.eq(
                || format!("rank {r}: probe(any) = first message"),
                w.array(),
                st(OK, pi, 5, 8),
            );
            c.eq(
                || format!("rank {r}: probe(tag 3) = second"),
                w.array(),
                st(OK, pi, 3, 12),
            );
            c.eq(
                || format!("rank {r}: receive probed: status"),
                w.array(),
                st(OK, pi, 5, 8),
            );
            c.eq(|| format!("rank {r}: receive probed: payload"), w.array(), [1, p]);
            let [found, a, b, d, e] = w.array();
            c.eq(
                || format!("rank {r}: immediate probe(tag 3)"),
                [found, a, b, d, e],
                [1, 0, p, 3, 12],
            );
            c.eq(
                || format!("rank {r}: receive(any, tag 3): status"),
                w.array(),
                st(OK, pi, 3, 12),
            );
            c.eq(
                || format!("rank {r}: receive(any, tag 3): payload"),
                w.array(),
                [2, p],
            );
            c.eq(
                || format!("rank {r}: receive(any tag): status"),
                w.array(),
                st(OK, pi, 5, 16),
            );
            c.eq(
                || format!("rank {r}: receive(any tag): payload"),
                w.array(),
                [3, p],
            );
            c.eq(|| format!("rank {r}: immediate probe when empty"), w.take(), 0);
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn probe_any_source(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(7, 7), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::PROBE_ANY_SOURCE;
            let job = Job::new(&p2p::SEMANTICS_PROBE, case, p2p::probe_stride(case, n));
            let o = launch(device, &s.spec(), n, &job)?;
            let mut w = o.rank(0);
            let mut next = vec![0u32; n as usize];
            for i in 0..2 * (n - 1) {
                let probed: [u32; 4] = w.array();
                let got: [u32; 4] = w.array();
                let first = w.take();
                let src = probed[1];
                if !(1..n).contains(&src) {
                    c.fail(format!("message {i}: probe status {probed:?} names no sender"));
                    continue;
                }
                let j = next[src as usize];
                next[src as usize] += 1;
                if j >= 2 {
                    c.fail(format!("message {i}: third message from rank {src}"));
                    continue;
                }
                let (tag, _, len) = p2p::probe_any_message(src, j);
                let want = st(OK, src as i32, tag, 4 * len as u32);
                c.eq(
                    || format!("message {i}: probe (the earliest from rank {src})"),
                    probed,
                    want,
                );
                c.eq(
                    || format!("message {i}: receive of the probed message"),
                    got,
                    want,
                );
                c.eq(|| format!("message {i}: payload"), first, 100 * src + j);
            }
            Ok(())
        },
    );
    c.finish()
}

/// (message bytes, receive capacity) of the truncation cases: below a slot,
/// exactly a slot, above it, large, and the same sizes without truncation.
const TRUNCATION_SIZES: &[(u32, u32)] = &[
    (100, 40),
    (100, 100),
    (256, 255),
    (256, 256),
    (257, 256),
    (257, 100),
    (300, 0),
    (0, 16),
    (1000, 1000),
    (70_000, 65_543),
    (70_000, 300),
    (200_000, 200_001),
];

fn truncation_with(device: &Device, streaming: bool) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(4, 4)], |c, s| {
        let n = s.ranks;
        for &(len, cap) in TRUNCATION_SIZES {
            let region = p2p::truncation_region(len, cap);
            let job = Job::new(&p2p::SEMANTICS_TRUNCATION, 0, p2p::TRUNCATION_STRIDE)
                .params(len, cap)
                .data(region * n as usize);
            let o = launch(device, &s.spec().force_streaming(streaming), n, &job)?;
            let truncated = len > cap;
            for r in 0..n {
                let p = partner(r, n).unwrap_or(r);
                let ctx = |what: &str| format!("{len} bytes into {cap}: rank {r}: {what}");
                let mut w = o.rank(r);
                let class = if truncated { ErrorClass::Truncate } else { OK };
                c.eq(|| ctx("status"), w.array(), st(class, p as i32, 4, len));
                c.eq(
                    || ctx("error's capacity"),
                    w.take(),
                    if truncated { cap } else { NONE },
                );
                c.eq(|| ctx("next message's status"), w.array(), st(OK, p as i32, 5, 8));
                c.eq(|| ctx("next message's payload"), w.array(), [0xBEEF, p]);
                let start = r as usize * region + len as usize;
                let recv = &o.data[start..start + cap as usize + p2p::TRUNCATION_GUARD];
                let kept = len.min(cap) as usize;
                if let Some(i) = (0..kept).find(|&i| recv[i] != pattern_byte(p, i)) {
                    c.fail(ctx(&format!(
                        "received byte {i} is {:#x}, expected {:#x}",
                        recv[i],
                        pattern_byte(p, i)
                    )));
                }
                if let Some(i) = (kept..recv.len()).find(|&i| recv[i] != p2p::FILL_BYTE) {
                    c.fail(ctx(&format!(
                        "byte {i} of the receive buffer (beyond the {kept} received) was overwritten"
                    )));
                }
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn truncation(device: &Device) -> Result<(), String> {
    truncation_with(device, false)
}

pub(crate) fn truncation_streamed(device: &Device) -> Result<(), String> {
    truncation_with(device, true)
}

const LARGE_SIZES: &[u32] = &[257, 1000, 1024, 1025, 4099, 65_536, 300_001, 1 << 20];

fn large_with(device: &Device, streaming: bool) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(3, 3), shape(4, 2)], |c, s| {
        let n = s.ranks;
        for case in [
            p2p::LARGE_RING,
            p2p::LARGE_PAIRS,
            p2p::LARGE_REPLACE,
            p2p::LARGE_REPLACE_RING,
        ] {
            for &len in LARGE_SIZES {
                let l = len as usize;
                let job = Job::new(&p2p::SEMANTICS_LARGE, case, p2p::LARGE_STRIDE)
                    .params(len, 0)
                    .data(2 * l * n as usize);
                let o = launch(device, &s.spec().force_streaming(streaming), n, &job)?;
                for r in 0..n {
                    let ctx = |what: &str| format!("case {case}, {len} bytes: rank {r}: {what}");
                    let status: [u32; 4] = o.rank(r).array();
                    let send = &o.data[2 * l * r as usize..][..l];
                    let recv = &o.data[2 * l * r as usize + l..][..l];
                    let (src, region) = match case {
                        p2p::LARGE_RING => (left(r, n), recv),
                        p2p::LARGE_REPLACE_RING => (left(r, n), send),
                        p2p::LARGE_PAIRS => (partner(r, n).unwrap_or(r), recv),
                        _ => match partner(r, n) {
                            Some(p) if r % 2 == 0 => (p, send),
                            Some(p) => (p, recv),
                            None => {
                                c.eq(|| ctx("null status"), status, st(OK, PROC_NULL, ANY_TAG, 0));
                                continue;
                            }
                        },
                    };
                    c.eq(|| ctx("status"), status, st(OK, src as i32, 6, len));
                    if let Some(i) = (0..l).find(|&i| region[i] != pattern_byte(src, i)) {
                        c.fail(ctx(&format!(
                            "byte {i} is {:#x}, expected {:#x} (rank {src}'s pattern)",
                            region[i],
                            pattern_byte(src, i)
                        )));
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn large_direct(device: &Device) -> Result<(), String> {
    large_with(device, false)
}

pub(crate) fn large_streamed(device: &Device) -> Result<(), String> {
    large_with(device, true)
}

pub(crate) fn order_any_tag(device: &Device) -> Result<(), String> {
    const N: u32 = 40;
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::ORDER_ANY_TAG;
        let job = Job::new(&p2p::SEMANTICS_ORDERING, case, p2p::ordering_stride(case, n, N)).params(N, 0);
        // A rank without partner sends all N messages to itself first.
        let o = launch(device, &s.spec().slots_per_rank(N), n, &job)?;
        for r in (0..n).step_by(2) {
            let p = if r + 1 < n { r + 1 } else { r };
            let mut w = o.rank(r);
            for i in 0..N {
                let bytes = 4 * p2p::ordering_length(case, i) as u32;
                c.eq(
                    || format!("rank {r} receive {i}: status"),
                    w.array(),
                    st(OK, p as i32, (i % 3) as i32, bytes),
                );
                c.eq(|| format!("rank {r} receive {i}: sequence"), w.take(), i);
            }
        }
        Ok(())
    });
    c.finish()
}

fn order_any_source_case(device: &Device, case: u32) -> Result<(), String> {
    const N: u32 = 12;
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(8, 8), shape(12, 3), shape(33, 33)],
        |c, s| {
            let n = s.ranks;
            let job = Job::new(&p2p::SEMANTICS_ORDERING, case, p2p::ordering_stride(case, n, N)).params(N, 0);
            let by_tag = case == p2p::ORDER_ANY_SOURCE_BY_TAG || case == p2p::ORDER_SOURCE_BY_TAG;
            let spec = if by_tag {
                s.spec().slots_per_rank(N)
            } else {
                s.spec()
            };
            let o = launch(device, &spec, n, &job)?;
            let mut w = o.rank(0);
            // Next expected sequence number per source and tag class.
            let mut next = vec![[0u32; 2]; n as usize];
            let ones = (N / 2) * (n - 1);
            for j in 0..N * (n - 1) {
                let status: [u32; 4] = w.array();
                let [seq, who] = w.array();
                let src = status[1];
                if !(1..n).contains(&src) || seq >= N {
                    c.fail(format!("receive {j}: status {status:?}, payload [{seq}, {who}]"));
                    continue;
                }
                let tag = seq % 2;
                if case == p2p::ORDER_SOURCE_BY_TAG {
                    c.eq(
                        || format!("receive {j}: source (one sender at a time)"),
                        src,
                        1 + j / N,
                    );
                    c.eq(
                        || format!("receive {j}: tag (the sender's tag-1 messages first)"),
                        tag,
                        u32::from(j % N < N / 2),
                    );
                } else if case == p2p::ORDER_ANY_SOURCE_BY_TAG {
                    c.eq(
                        || format!("receive {j}: tag (all tag-1 messages first)"),
                        tag,
                        u32::from(j < ones),
                    );
                }
                if by_tag {
                    // Within one tag, messages of one source arrive in send order.
                    let want = next[src as usize][tag as usize] * 2 + tag;
                    c.eq(
                        || format!("receive {j}: sequence from rank {src} with tag {tag}"),
                        seq,
                        want,
                    );
                    next[src as usize][tag as usize] += 1;
                } else {
                    let want = next[src as usize][0];
                    c.eq(
                        || format!("receive {j}: sequence from rank {src} (non-overtaking)"),
                        seq,
                        want,
                    );
                    next[src as usize][0] = seq + 1;
                }
                let bytes = 4 * p2p::ordering_length(case, seq) as u32;
                c.eq(
                    || format!("receive {j}: status"),
                    status,
                    st(OK, src as i32, tag as i32, bytes),
                );
                c.eq(|| format!("receive {j}: payload sender"), who, src);
            }
            Ok(())
        },
    );
    c.finish()
}

pub(crate) fn order_any_source(device: &Device) -> Result<(), String> {
    order_any_source_case(device, p2p::ORDER_ANY_SOURCE)
}

pub(crate) fn order_any_source_by_tag(device: &Device) -> Result<(), String> {
    order_any_source_case(device, p2p::ORDER_ANY_SOURCE_BY_TAG)
}

pub(crate) fn order_source_by_tag(device: &Device) -> Result<(), String> {
    order_any_source_case(device, p2p::ORDER_SOURCE_BY_TAG)
}

pub(crate) fn types(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(&p2p::SEMANTICS_TYPES, 0, p2p::TYPES_STRIDE);
        let o = launch(device, &s.spec(), n, &job)?;
        let ty = ErrorClass::Type;
        for r in 0..n {
            let l = left(r, n) as i32;
            let mut w = o.rank(r);
            let ctx = |what: &str| format!("rank {r}: {what}");
            c.eq(|| ctx("f64 received as i32: status"), w.array(), st(ty, l, 1, 16));
            c.eq(
                || ctx("f64 received as i32: buffer untouched"),
                w.take(),
                0x5A5A_5A5A,
            );
            c.eq(
                || ctx("next message as bytes: status"),
                w.array(),
                st(OK, l, 2, 8),
            );
            let b = 3.0f64.to_bits();
            c.eq(
                || ctx("next message as bytes: data"),
                w.array(),
                [b as u32, (b >> 32) as u32],
            );
            c.eq(|| ctx("u32 received as f32"), w.array(), st(ty, l, 3, 12));
            c.eq(
                || ctx("user type received as itself"),
                w.array(),
                st(OK, l, 4, 16),
            );
            c.eq(|| ctx("user type value"), w.take(), l as u32);
            c.eq(
                || ctx("user type received as another user type"),
                w.array(),
                st(ty, l, 5, 16),
            );
            c.eq(|| ctx("u8 received as u16"), w.array(), st(ty, l, 6, 3));
            c.eq(|| ctx("f64 received as f64"), w.array(), st(OK, l, 7, 16));
            c.eq(
                || ctx("counts of 16 bytes as f64, u32, Mat2"),
                w.array(),
                [2, 4, 1],
            );
            let (x, y) = (4.5f64.to_bits(), 5.5f64.to_bits());
            c.eq(
                || ctx("f64 values"),
                w.array(),
                [x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32],
            );
            c.eq(|| ctx("12 bytes as u8"), w.array(), st(OK, l, 8, 12));
            c.eq(
                || ctx("counts of 12 bytes as f64, u32, u8"),
                w.array(),
                [NONE, 3, 12],
            );
        }
        Ok(())
    });
    c.finish()
}

pub(crate) fn arguments(device: &Device) -> Result<(), String> {
    const MAX: u32 = 512;
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(&p2p::SEMANTICS_ARGUMENTS, 0, p2p::ARGUMENTS_STRIDE).params(MAX, 0);
        let o = launch(device, &s.spec().max_message_bytes(MAX), n, &job)?;
        let out_len = n * p2p::ARGUMENTS_STRIDE;
        let e = |class: ErrorClass, a: i64, b: i64| [class as u32, a as u32, b as u32, 0, 0];
        let ok = [0u32; 5];
        let size = n as i64;
        use ErrorClass::*;
        for r in 0..n {
            let expected: [(&str, [u32; 5]); 26] = [
                ("send to rank size", e(Rank, size, size)),
                ("send to rank -7", e(Rank, -7, size)),
                ("receive from rank size + 3", e(Rank, size + 3, size)),
                ("send with tag -5", e(Tag, -5, 0)),
                ("send with ANY_TAG", e(Tag, -1, 0)),
                ("receive with tag -5", e(Tag, -5, 0)),
                ("probe with tag -3", e(Tag, -3, 0)),
                ("immediate probe of rank size", e(Rank, size, size)),
                (
                    "send of max_message_bytes + 1",
                    e(Buffer, MAX as i64 + 1, MAX as i64),
                ),
                ("send_receive of max_message_bytes", ok),
                ("broadcast from root size", e(Root, size, size)),
                ("reduce to root -1", e(Root, -1, size)),
                ("all_reduce f32 with bitwise or", e(Op, 6, ID_F32 as i64)),
                ("all_reduce f64 with logical and", e(Op, 8, ID_F64 as i64)),
                (
                    "reduce_into called by the root",
                    if r == 0 { e(Root, 0, size) } else { ok },
                ),
                ("send_receive to rank size", e(Rank, size, size)),
                (
                    "write past a GlobalSlice",
                    e(Arg, out_len as i64 + 5, out_len as i64),
                ),
                ("broadcast from the null process", e(Root, PROC_NULL as i64, size)),
                ("all_reduce i32 with bitwise or", ok),
                ("barrier after the errors", ok),
                ("all_reduce of a 256-byte element", e(Buffer, 256, 248)),
                ("send to the null process with tag -5", e(Tag, -5, 0)),
                ("receive from the null process with tag -5", e(Tag, -5, 0)),
                ("receive of a value from rank size", e(Rank, size, size)),
                ("send to rank size with tag -5", e(Tag, -5, 0)),
                ("receive from rank -7 with tag -5", e(Tag, -5, 0)),
            ];
            let mut w = o.rank(r);
            for (what, want) in expected {
                c.eq(|| format!("rank {r}: {what}"), w.array::<5>(), want);
            }
            c.eq(|| format!("rank {r}: all_reduce after the errors"), w.take(), n);
        }
        Ok(())
    });
    c.finish()
}
