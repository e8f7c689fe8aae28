//! Collectives with derived datatypes on either side, the kernel
//! `gpu_mpi_check_kernels::view_collectives` on each backend (`testgen!`:
//! the emulator always, the GPU where one is present): all-gather (fixed,
//! in place, varcount), gather and scatter (fixed and varcount), all-to-all
//! (fixed, in place, varcount) with vector, indexed and struct views on the
//! send side, the receive side or both, every root, odd world sizes and
//! small staging cells (many rounds). Every rank's buffer is checked
//! against the host reference model (pack the inputs, move packed
//! positions as MPI 4.1 §6.5-§6.8 say, unpack into the initial buffer), and
//! the error cases (a signature mismatch, a part outside the buffer) fail
//! on every rank. The same cases run on a duplicate of the world (a
//! sub-communicator: the general algorithms of `collective/general.rs`,
//! whose messages carry parts of a view).

use gpu_mpi::datatype::{reference, Primitive, UserDatatype};
use gpu_mpi::device::ErrorClass;
use gpu_mpi::WorldSpec;
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::view_collectives::*;

/// One side of a collective: a view of a type with `epi` elements per
/// instance, or a plain `[u32]`.
#[derive(Clone)]
struct Shape {
    ty: UserDatatype,
    view: bool,
    /// Elements (units of the partition) per instance.
    epi: usize,
}

fn u32s() -> UserDatatype {
    Primitive::U32.into()
}

fn plain() -> Shape {
    Shape {
        ty: u32s(),
        view: false,
        epi: 1,
    }
}

/// Three `u32` at stride 2 (gaps between).
fn vector() -> Shape {
    Shape {
        ty: UserDatatype::vector(3, 1, 2, &u32s()).unwrap(),
        view: true,
        epi: 3,
    }
}

/// Two `u32` at 0, none at 3, one at 5: gaps and a zero block.
fn indexed() -> Shape {
    Shape {
        ty: UserDatatype::indexed(&[2, 0, 1], &[0, 3, 5], &u32s()).unwrap(),
        view: true,
        epi: 3,
    }
}

/// Two `u32` 12 bytes apart, resized to 8 bytes: instances interleave
/// (instance i at bytes 8i and 8i + 12) without overlapping.
fn interleaved() -> Shape {
    let v = UserDatatype::vector(2, 1, 3, &u32s()).unwrap();
    Shape {
        ty: UserDatatype::resized(&v, 0, 8).unwrap(),
        view: true,
        epi: 2,
    }
}

/// A struct `{u32 @ 0, f64 @ 8}`, or the same signature laid out
/// backwards (`{u32 @ 16, f64 @ 0}`): one element per instance.
fn structure(backwards: bool) -> Shape {
    let d = if backwards { [16, 0] } else { [0, 8] };
    Shape {
        ty: UserDatatype::structured(&[1, 1], &d, &[u32s(), Primitive::F64.into()]).unwrap(),
        view: true,
        epi: 1,
    }
}

impl Shape {
    /// Bytes of one element of the packed stream.
    fn unit(&self) -> usize {
        self.ty.size() as usize / self.epi
    }
    fn count(&self, elements: usize) -> usize {
        assert_eq!(elements % self.epi, 0, "whole instances");
        elements / self.epi
    }
}

#[derive(Clone)]
struct Case {
    n: usize,
    op: u32,
    root: usize,
    send: Shape,
    recv: Shape,
    /// Elements each rank sends / receives.
    scount: Vec<usize>,
    rcount: Vec<usize>,
    /// Rows per rank, in elements.
    scounts: Vec<Vec<i32>>,
    sdispls: Vec<Vec<i32>>,
    rcounts: Vec<Vec<i32>>,
    rdispls: Vec<Vec<i32>>,
    bad: Option<usize>,
    /// On a duplicate of the world.
    dup: bool,
}

fn src_byte(r: usize, i: usize) -> u8 {
    (r * 37 + i * 13 + 7) as u8 | 1
}

fn dst_byte(r: usize, i: usize) -> u8 {
    ((r * 53 + i * 7 + 3) as u8) & 0x7e
}

fn flat(rows: &[Vec<i32>], n: usize) -> Vec<i32> {
    if rows.is_empty() {
        return vec![0; n * n];
    }
    rows.concat()
}

impl Case {
    fn new(n: usize, op: u32, send: Shape, recv: Shape) -> Case {
        Case {
            n,
            op,
            root: 0,
            send,
            recv,
            scount: vec![0; n],
            rcount: vec![0; n],
            scounts: vec![],
            sdispls: vec![],
            rcounts: vec![],
            rdispls: vec![],
            bad: None,
            dup: false,
        }
    }

    /// Launches; returns the classes and every rank's receive region.
    fn launch(&self, backend: Backend) -> (Vec<u32>, Vec<u8>, Vec<u8>) {
        let n = self.n;
        let device = backend.device();
        let src: Vec<u8> = (0..n * REGION)
            .map(|i| src_byte(i / REGION, i % REGION))
            .collect();
        let dst: Vec<u8> = (0..n * REGION)
            .map(|i| dst_byte(i / REGION, i % REGION))
            .collect();
        let sw = device.upload(self.send.ty.commit().unwrap().words()).unwrap();
        let rw = device.upload(self.recv.ty.commit().unwrap().words()).unwrap();
        let s = device.upload(&src).unwrap();
        let d = device.upload(&dst).unwrap();
        let sc: Vec<u32> = (0..n).map(|r| self.send.count(self.scount[r]) as u32).collect();
        let rc: Vec<u32> = (0..n).map(|r| self.recv.count(self.rcount[r]) as u32).collect();
        let scount = device.upload(&sc).unwrap();
        let rcount = device.upload(&rc).unwrap();
        let m = |rows: &Vec<Vec<i32>>| device.upload(&flat(rows, n)).unwrap();
        let (a, b, c, e) = (
            m(&self.scounts),
            m(&self.sdispls),
            m(&self.rcounts),
            m(&self.rdispls),
        );
        let out = device.upload(&vec![u32::MAX; n]).unwrap();
        let args = CollArgs {
            send_ty: sw.slice(),
            recv_ty: rw.slice(),
            src: s.slice(),
            dst: d.slice(),
            scount: scount.slice(),
            rcount: rcount.slice(),
            scounts: a.slice(),
            sdispls: b.slice(),
            rcounts: c.slice(),
            rdispls: e.slice(),
            out: out.slice(),
            op: self.op,
            root: self.root as u32,
            send_view: self.send.view as u32,
            recv_view: self.recv.view as u32,
            bad: self.bad.map_or(u32::MAX, |b| b as u32),
            dup: self.dup as u32,
            _pad: [0; 2],
        };
        device
            .launch(
                &SEMANTICS_VIEW_COLLECTIVES,
                &args,
                // Blocks of one or two: a duplicate of a world of more than
                // one rank is never one whole block, so it takes the
                // general (message) algorithms.
                &WorldSpec::ranks(n as u32)
                    .block_dim(if n.is_multiple_of(2) { 2 } else { 1 })
                    .collective_bytes(64),
            )
            .unwrap();
        (device.download(&out).unwrap(), dst, device.download(&d).unwrap())
    }

    /// The packed receive stream of every rank after the collective, by the
    /// reference model.
    fn expected(&self, dst: &[u8]) -> Vec<u8> {
        let n = self.n;
        let (su, ru) = (self.send.unit(), self.recv.unit());
        assert_eq!(su, ru, "the same signature on both sides");
        let u = su;
        let region = |buf: &[u8], r: usize| buf[r * REGION..(r + 1) * REGION].to_vec();
        let src: Vec<u8> = (0..n * REGION)
            .map(|i| src_byte(i / REGION, i % REGION))
            .collect();
        let ps: Vec<Vec<u8>> = (0..n)
            .map(|r| {
                reference::pack(
                    &self.send.ty,
                    &region(&src, r),
                    0,
                    self.send.count(self.scount[r]),
                )
                .unwrap()
            })
            .collect();
        let init: Vec<Vec<u8>> = (0..n)
            .map(|r| {
                reference::pack(&self.recv.ty, &region(dst, r), 0, self.recv.count(self.rcount[r])).unwrap()
            })
            .collect();
        let mut pr = init.clone();
        let span = |c: i32, d: i32| d as usize * u..(d + c) as usize * u;
        match self.op {
            ALL_GATHER | GATHER => {
                let k = ps[0].len();
                let targets: Vec<usize> = if self.op == GATHER {
                    vec![self.root]
                } else {
                    (0..n).collect()
                };
                for r in targets {
                    for (q, p) in ps.iter().enumerate() {
                        pr[r][q * k..(q + 1) * k].copy_from_slice(p);
                    }
                }
            }
            ALL_GATHER_IN_PLACE => {
                for (r, out) in pr.iter_mut().enumerate() {
                    let k = init[r].len() / n;
                    for (q, i) in init.iter().enumerate() {
                        out[q * k..(q + 1) * k].copy_from_slice(&i[q * k..(q + 1) * k]);
                    }
                }
            }
            ALL_GATHER_VARCOUNT | GATHER_VARCOUNT | GATHER_VARCOUNT_IN_PLACE => {
                let targets: Vec<usize> = if self.op == ALL_GATHER_VARCOUNT {
                    (0..n).collect()
                } else {
                    vec![self.root]
                };
                for r in targets {
                    for (q, p) in ps.iter().enumerate() {
                        if self.op == GATHER_VARCOUNT_IN_PLACE && q == r {
                            // The root's own part stays as it was.
                            continue;
                        }
                        let s = span(self.rcounts[r][q], self.rdispls[r][q]);
                        pr[r][s].copy_from_slice(p);
                    }
                }
            }
            SCATTER | SCATTER_VARCOUNT | SCATTER_VARCOUNT_IN_PLACE => {
                for (q, out) in pr.iter_mut().enumerate() {
                    if self.op == SCATTER_VARCOUNT_IN_PLACE && q == self.root {
                        // The root receives nothing (its part stays in its send).
                        continue;
                    }
                    let s = if self.op == SCATTER {
                        let k = out.len();
                        q * k..(q + 1) * k
                    } else {
                        span(self.scounts[self.root][q], self.sdispls[self.root][q])
                    };
                    out.copy_from_slice(&ps[self.root][s]);
                }
            }
            ALL_GATHER_VARCOUNT_IN_PLACE => {
                // Rank q's contribution is its own part q as it was.
                for (r, out) in pr.iter_mut().enumerate() {
                    for (q, i) in init.iter().enumerate() {
                        let from = span(self.rcounts[q][q], self.rdispls[q][q]);
                        out[span(self.rcounts[r][q], self.rdispls[r][q])].copy_from_slice(&i[from]);
                    }
                }
            }
            ALL_TO_ALL | ALL_TO_ALL_IN_PLACE => {
                let from = if self.op == ALL_TO_ALL { &ps } else { &init };
                for (r, out) in pr.iter_mut().enumerate() {
                    let m = from[r].len() / n;
                    for (q, f) in from.iter().enumerate() {
                        out[q * m..(q + 1) * m].copy_from_slice(&f[r * m..(r + 1) * m]);
                    }
                }
            }
            ALL_TO_ALL_VARCOUNT => {
                for (d, out) in pr.iter_mut().enumerate() {
                    for (s, p) in ps.iter().enumerate() {
                        let c = self.scounts[s][d];
                        assert_eq!(c, self.rcounts[d][s]);
                        out[span(c, self.rdispls[d][s])].copy_from_slice(&p[span(c, self.sdispls[s][d])]);
                    }
                }
            }
            ALL_TO_ALL_VARCOUNT_IN_PLACE => {
                // Rank d's part s becomes what rank s had in its part d.
                for (d, out) in pr.iter_mut().enumerate() {
                    for (s, i) in init.iter().enumerate() {
                        let c = self.rcounts[d][s];
                        assert_eq!(c, self.rcounts[s][d]);
                        out[span(c, self.rdispls[d][s])].copy_from_slice(&i[span(c, self.rdispls[s][d])]);
                    }
                }
            }
            _ => unreachable!(),
        }
        let mut want = dst.to_vec();
        for (r, p) in pr.iter().enumerate() {
            let mut reg = region(dst, r);
            reference::unpack(&self.recv.ty, p, self.recv.count(self.rcount[r]), &mut reg, 0).unwrap();
            want[r * REGION..(r + 1) * REGION].copy_from_slice(&reg);
        }
        want
    }

    /// Launches on the world, then on a duplicate of it; expects success
    /// everywhere and the reference result each time.
    fn check(&self, backend: Backend) {
        self.check_once(backend);
        let mut dup = self.clone();
        dup.dup = true;
        dup.check_once(backend);
    }

    /// Launches, expects success everywhere and the reference result.
    fn check_once(&self, backend: Backend) {
        let (classes, init, got) = self.launch(backend);
        assert_eq!(classes, vec![0; self.n], "{}", self.what());
        let want = self.expected(&init);
        for r in 0..self.n {
            assert!(
                got[r * REGION..(r + 1) * REGION] == want[r * REGION..(r + 1) * REGION],
                "rank {r}: {}",
                self.what()
            );
        }
    }

    /// Launches, expects `class` at `at` and `others` at every other rank
    /// (the agreement: nobody proceeds, nobody hangs).
    fn check_fails(&self, backend: Backend, at: usize, class: ErrorClass, others: ErrorClass) {
        let (classes, _, _) = self.launch(backend);
        for (r, &c) in classes.iter().enumerate() {
            let want = if r == at { class } else { others };
            assert_eq!(c, want as u32, "rank {r}: {}", self.what());
        }
    }

    fn what(&self) -> String {
        format!(
            "op {} on {} ranks{}, root {}, send view {} (epi {}), recv view {} (epi {})",
            self.op,
            self.n,
            if self.dup { " (duplicate)" } else { "" },
            self.root,
            self.send.view,
            self.send.epi,
            self.recv.view,
            self.recv.epi
        )
    }
}

/// The side pairs every collective runs with: u32 signatures on one side,
/// the other, both (different types), and a struct on both (different
/// layouts of one signature).
fn pairs() -> Vec<(Shape, Shape)> {
    vec![
        (vector(), plain()),
        (plain(), indexed()),
        (indexed(), interleaved()),
        (vector(), vector()),
        (structure(false), structure(true)),
    ]
}

/// Elements per part: a multiple of every `epi` (1, 2, 3).
const K: usize = 6;

fn all_gather_fixed_and_in_place_take_views(backend: Backend) {
    for n in [1, 3, 5] {
        for (s, r) in pairs() {
            let mut c = Case::new(n, ALL_GATHER, s.clone(), r.clone());
            c.scount = vec![K; n];
            c.rcount = vec![n * K; n];
            c.check(backend);
            let mut c = Case::new(n, ALL_GATHER_IN_PLACE, r.clone(), r);
            c.rcount = vec![n * K; n];
            c.check(backend);
        }
    }
}
testgen!(all_gather_fixed_and_in_place_take_views);

fn gather_and_scatter_take_views_at_every_root(backend: Backend) {
    for n in [2, 5] {
        for (s, r) in pairs() {
            for root in 0..n {
                for op in [GATHER, SCATTER] {
                    let mut c = Case::new(n, op, s.clone(), r.clone());
                    c.root = root;
                    let (mine, roots) = (K, n * K);
                    if op == GATHER {
                        c.scount = vec![mine; n];
                        c.rcount = (0..n).map(|q| if q == root { roots } else { 0 }).collect();
                    } else {
                        c.scount = (0..n).map(|q| if q == root { roots } else { 0 }).collect();
                        c.rcount = vec![mine; n];
                    }
                    c.check(backend);
                }
            }
        }
    }
}
testgen!(gather_and_scatter_take_views_at_every_root);

/// Rank q's part: `6 x ((q + 1) mod 3)` elements (0, 6 or 12), at
/// displacements in reverse rank order with a gap of 3 between parts.
fn var_parts(n: usize) -> (Vec<i32>, Vec<i32>, usize) {
    let counts: Vec<i32> = (0..n).map(|q| (K * ((q + 1) % 3)) as i32).collect();
    let mut displs = vec![0; n];
    let mut at = 3;
    for q in (0..n).rev() {
        displs[q] = at;
        at += counts[q] + 3;
    }
    (counts, displs, (at as usize).next_multiple_of(K))
}

fn varcount_gather_scatter_and_all_gather_take_views(backend: Backend) {
    for n in [3, 4] {
        let (counts, displs, total) = var_parts(n);
        for (s, r) in pairs() {
            for root in [0, n - 1] {
                let mut c = Case::new(n, GATHER_VARCOUNT, s.clone(), r.clone());
                c.root = root;
                c.scount = counts.iter().map(|&k| k as usize).collect();
                c.rcount = (0..n).map(|q| if q == root { total } else { 0 }).collect();
                c.rcounts = vec![counts.clone(); n];
                c.rdispls = vec![displs.clone(); n];
                c.check(backend);
                let mut c = Case::new(n, SCATTER_VARCOUNT, s.clone(), r.clone());
                c.root = root;
                c.scount = (0..n).map(|q| if q == root { total } else { 0 }).collect();
                c.rcount = counts.iter().map(|&k| k as usize).collect();
                c.scounts = vec![counts.clone(); n];
                c.sdispls = vec![displs.clone(); n];
                c.check(backend);
            }
            let mut c = Case::new(n, ALL_GATHER_VARCOUNT, s, r);
            c.scount = counts.iter().map(|&k| k as usize).collect();
            c.rcount = vec![total; n];
            c.rcounts = vec![counts.clone(); n];
            c.rdispls = vec![displs.clone(); n];
            c.check(backend);
        }
    }
}
testgen!(varcount_gather_scatter_and_all_gather_take_views);

/// `MPI_Gatherv` and `MPI_Scatterv` with `MPI_IN_PLACE` at every root: the
/// root's own part stays where it is (its receive region keeps the initial
/// bytes there; a scatter's root receives nothing), every other part moves
/// as in the plain forms; views on either side (the world's staged path),
/// plain slices (its direct path) and on a duplicate (the general one).
fn varcount_gather_and_scatter_in_place_at_every_root(backend: Backend) {
    for n in [1, 3, 4] {
        let (counts, displs, total) = var_parts(n);
        for (s, r) in pairs().into_iter().chain([(plain(), plain())]) {
            for root in 0..n {
                // The root's receive side is its whole partitioned buffer;
                // the others send their part with the send side's type.
                let mut c = Case::new(n, GATHER_VARCOUNT_IN_PLACE, s.clone(), r.clone());
                c.root = root;
                c.scount = counts.iter().map(|&k| k as usize).collect();
                c.scount[root] = 0;
                c.rcount = (0..n).map(|q| if q == root { total } else { 0 }).collect();
                c.rcounts = vec![counts.clone(); n];
                c.rdispls = vec![displs.clone(); n];
                c.check(backend);
                let mut c = Case::new(n, SCATTER_VARCOUNT_IN_PLACE, s.clone(), r.clone());
                c.root = root;
                c.scount = (0..n).map(|q| if q == root { total } else { 0 }).collect();
                c.rcount = counts.iter().map(|&k| k as usize).collect();
                c.rcount[root] = 0;
                c.scounts = vec![counts.clone(); n];
                c.sdispls = vec![displs.clone(); n];
                c.check(backend);
            }
        }
    }
}
testgen!(varcount_gather_and_scatter_in_place_at_every_root);

/// `MPI_Allgatherv` with `MPI_IN_PLACE`: each rank's own part (at
/// displacements that differ between ranks) is its contribution.
fn all_gather_varcount_in_place_takes_views(backend: Backend) {
    for n in [1, 3, 4] {
        let (counts, displs, total) = var_parts(n);
        for (_, r) in pairs().into_iter().chain([(plain(), plain())]) {
            let mut c = Case::new(n, ALL_GATHER_VARCOUNT_IN_PLACE, r.clone(), r);
            c.rcount = vec![total; n];
            c.rcounts = vec![counts.clone(); n];
            // Rank p's parts shifted by p mod 2 elements of the gaps.
            c.rdispls = (0..n)
                .map(|p| displs.iter().map(|&d| d + (p % 2) as i32).collect())
                .collect();
            c.check(backend);
        }
    }
}
testgen!(all_gather_varcount_in_place_takes_views);

/// A rank other than the root that calls the in-place scatterv (it has no
/// receive buffer) fails with `MPI_ERR_ROOT`, and so does every rank.
fn scatterv_in_place_at_a_non_root_fails_on_every_rank(backend: Backend) {
    let n = 4;
    let (counts, displs, total) = var_parts(n);
    let mut c = Case::new(n, SCATTER_VARCOUNT_IN_PLACE_EVERYWHERE, plain(), plain());
    c.root = 1;
    c.scount = vec![total; n];
    c.rcount = counts.iter().map(|&k| k as usize).collect();
    c.scounts = vec![counts.clone(); n];
    c.sdispls = vec![displs.clone(); n];
    c.check_fails(backend, usize::MAX, ErrorClass::Root, ErrorClass::Root);
}
testgen!(scatterv_in_place_at_a_non_root_fails_on_every_rank);

fn all_to_all_fixed_in_place_and_varcount_take_views(backend: Backend) {
    for n in [1, 3, 5] {
        for (s, r) in pairs() {
            let mut c = Case::new(n, ALL_TO_ALL, s.clone(), r.clone());
            c.scount = vec![n * K; n];
            c.rcount = vec![n * K; n];
            c.check(backend);
            let mut c = Case::new(n, ALL_TO_ALL_IN_PLACE, r.clone(), r.clone());
            c.rcount = vec![n * K; n];
            c.check(backend);
            // Rank s sends 6 x ((s + d) mod 3) elements to rank d; parts in
            // reverse order in the send buffer, in order in the receive one.
            let cnt = |s: usize, d: usize| (K * ((s + d) % 3)) as i32;
            let mut c = Case::new(n, ALL_TO_ALL_VARCOUNT, s, r);
            for p in 0..n {
                let sc: Vec<i32> = (0..n).map(|d| cnt(p, d)).collect();
                let rc: Vec<i32> = (0..n).map(|s| cnt(s, p)).collect();
                let mut sd = vec![0; n];
                let mut at = 0;
                for d in (0..n).rev() {
                    sd[d] = at;
                    at += sc[d];
                }
                c.scount[p] = (at as usize).next_multiple_of(K);
                let rd: Vec<i32> = rc
                    .iter()
                    .scan(0, |a, &x| Some(std::mem::replace(a, *a + x)))
                    .collect();
                c.rcount[p] = (rc.iter().sum::<i32>() as usize).next_multiple_of(K);
                c.scounts.push(sc);
                c.sdispls.push(sd);
                c.rcounts.push(rc);
                c.rdispls.push(rd);
            }
            c.check(backend);
        }
    }
}
testgen!(all_to_all_fixed_in_place_and_varcount_take_views);

/// The in-place all-to-allv's case on `n` ranks: rank `p` swaps `cnt(p, q)
/// = cnt(q, p)` elements with rank `q` (pair 0-1 more than a staging round
/// of 64 bytes), its parts in reverse order with gaps of `p mod 3` elements.
fn all_to_allv_in_place(n: usize, recv: Shape) -> Case {
    let cnt = |p: usize, q: usize| (K * ((p + q) % 3) + if p + q == 1 { 4 * K } else { 0 }) as i32;
    let mut c = Case::new(n, ALL_TO_ALL_VARCOUNT_IN_PLACE, recv.clone(), recv);
    for p in 0..n {
        let rc: Vec<i32> = (0..n).map(|q| cnt(p, q)).collect();
        let mut rd = vec![0; n];
        let mut at = (p % 3) as i32;
        for q in (0..n).rev() {
            rd[q] = at;
            at += rc[q] + (p % 3) as i32;
        }
        c.rcount[p] = (at as usize).next_multiple_of(K);
        c.rcounts.push(rc);
        c.rdispls.push(rd);
    }
    c
}

/// `MPI_Alltoallv` with `MPI_IN_PLACE`: every rank's part for rank `q` is
/// replaced by rank `q`'s part for it (parts of different lengths per pair,
/// one longer than a staging round), views and plain slices, on the world
/// (pairwise through the cells) and a duplicate (messages).
fn all_to_all_varcount_in_place_takes_views(backend: Backend) {
    for n in [1, 2, 3, 5] {
        for (_, r) in pairs().into_iter().chain([(plain(), plain())]) {
            all_to_allv_in_place(n, r).check(backend);
        }
    }
}
testgen!(all_to_all_varcount_in_place_takes_views);

/// In-place all-to-allv with counts that do not match pairwise (rank 2
/// expects one element more from rank 0 than rank 0 sends it): the counts
/// round finds it, every rank fails with `MPI_ERR_COUNT` and none moves
/// data.
fn an_in_place_all_to_allv_count_mismatch_fails_on_every_rank(backend: Backend) {
    let mut c = all_to_allv_in_place(4, plain());
    c.rcounts[2][0] += 1;
    c.rcount[2] += K;
    c.check_fails(backend, usize::MAX, ErrorClass::Count, ErrorClass::Count);
}
testgen!(an_in_place_all_to_allv_count_mismatch_fails_on_every_rank);

fn a_signature_mismatch_fails_on_every_rank(backend: Backend) {
    let n = 5;
    for op in [
        ALL_GATHER,
        ALL_GATHER_IN_PLACE,
        ALL_TO_ALL,
        ALL_TO_ALL_IN_PLACE,
        ALL_TO_ALL_VARCOUNT,
        ALL_GATHER_VARCOUNT,
    ] {
        let mut c = Case::new(n, op, vector(), plain());
        let bad = 3;
        c.bad = Some(bad);
        c.scount = vec![n * K; n];
        c.rcount = vec![n * K; n];
        if op == ALL_GATHER {
            c.scount = vec![K; n];
        }
        let rows = vec![vec![K as i32; n]; n];
        let displs: Vec<Vec<i32>> = vec![(0..n).map(|q| (q * K) as i32).collect(); n];
        c.scounts = rows.clone();
        c.sdispls = displs.clone();
        c.rcounts = rows;
        c.rdispls = displs;
        if op == ALL_GATHER_VARCOUNT {
            c.scount = vec![K; n];
        }
        // The agreement names the type mismatch on every rank.
        c.check_fails(backend, bad, ErrorClass::Type, ErrorClass::Type);
    }
    // A struct view against a u32 view: the signatures differ.
    let mut c = Case::new(3, ALL_TO_ALL, structure(false), vector());
    c.scount = vec![3 * K; 3];
    c.rcount = vec![3 * K; 3];
    let (classes, _, _) = c.launch(backend);
    assert!(
        classes.iter().all(|&k| k == ErrorClass::Type as u32),
        "{classes:?}"
    );
}
testgen!(a_signature_mismatch_fails_on_every_rank);

fn a_part_outside_the_view_fails_on_every_rank(backend: Backend) {
    // Rank 2's receive partition reaches past its view (one element more
    // than the view holds): MPI_ERR_ARG there, an error everywhere.
    let n = 4;
    let mut c = Case::new(n, ALL_TO_ALL_VARCOUNT, vector(), indexed());
    let rows = vec![vec![K as i32; n]; n];
    let displs: Vec<Vec<i32>> = vec![(0..n).map(|q| (q * K) as i32).collect(); n];
    c.scount = vec![n * K; n];
    c.rcount = vec![n * K; n];
    c.scounts = rows.clone();
    c.sdispls = displs.clone();
    c.rcounts = rows;
    c.rdispls = displs;
    c.rdispls[2][n - 1] += 1;
    c.check_fails(backend, 2, ErrorClass::Arg, ErrorClass::Count);
    // A varcount gather whose root's view is too small for its partition.
    let (counts, displs, total) = var_parts(n);
    let mut c = Case::new(n, GATHER_VARCOUNT, indexed(), vector());
    c.root = 1;
    c.scount = counts.iter().map(|&k| k as usize).collect();
    c.rcount = (0..n).map(|q| if q == 1 { total - 2 * K } else { 0 }).collect();
    c.rcounts = vec![counts; n];
    c.rdispls = vec![displs; n];
    c.check_fails(backend, 1, ErrorClass::Arg, ErrorClass::Count);
}
testgen!(a_part_outside_the_view_fails_on_every_rank);
