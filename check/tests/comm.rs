//! Communicators (MPI 4.1 chapter 7) and the collectives on them, on each
//! backend (`testgen!`: the emulator always, the GPU where one is present;
//! schedules are the emulator's): the `C_*` cases of `gpu_mpi_check_kernels::comm` against a
//! sequential model of splits, groups and every collective, for odd sizes,
//! strided members, several blocks, partial warps and seeded schedules.

use gpu_mpi::device::ErrorClass;
use gpu_mpi::{CpuOptions, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::collectives::user_operand;
use gpu_mpi_check_kernels::comm::*;
use gpu_mpi_check_kernels::p2p::Mat2;
use gpu_mpi_check_kernels::{pattern_word, CaseArgs, NONE};

const UNDEF: u32 = gpu_mpi::device::communicator::UNDEFINED as u32;

/// Runs case `case` on `spec` and returns every rank's record.
fn run(
    backend: Backend,
    spec: WorldSpec,
    schedule: Schedule,
    case: u32,
    param: u32,
    param2: u32,
) -> Vec<Vec<u32>> {
    let ranks = match spec.ranks {
        gpu_mpi::RankCount::Exact(n) => n as usize,
        gpu_mpi::RankCount::Max => unreachable!("tests use exact sizes"),
    };
    let d = backend.device_with(CpuOptions {
        workers: 2,
        schedule,
        ..CpuOptions::default()
    });
    let stride = COMM_STRIDE as usize;
    let out = d.alloc_zeroed::<u32>(ranks * stride).unwrap();
    let data = d.alloc_zeroed::<u8>(8).unwrap();
    let cells = d.alloc_zeroed::<u32>(8).unwrap();
    let args = CaseArgs {
        case,
        param,
        param2,
        stride: COMM_STRIDE,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    d.launch(&SEMANTICS_COMM, &args, &spec)
        .unwrap_or_else(|e| panic!("case {case} ({param}, {param2}) on {spec:?}: {e}"));
    let got = d.download(&out).unwrap();
    got.chunks(stride).map(|c| c.to_vec()).collect()
}

fn check(got: &[Vec<u32>], want: impl Fn(usize) -> Vec<u32>, what: &str) {
    for (w, rec) in got.iter().enumerate() {
        let want = want(w);
        assert_eq!(&rec[..want.len()], &want[..], "{what}: world rank {w}");
    }
}

const SCHEDULES: [Schedule; 2] = [Schedule::Parallel, Schedule::Random { seed: 7 }];

fn split_orders_by_key_then_parent_rank_and_renumbers_statuses(backend: Backend) {
    for (ranks, block, m) in [(13u32, 13u32, 3u32), (24, 8, 2), (7, 7, 1), (5, 1, 5), (12, 4, 4)] {
        for s in SCHEDULES {
            let got = run(
                backend,
                WorldSpec::ranks(ranks).block_dim(block),
                s,
                C_SPLIT,
                m,
                0,
            );
            let size = ranks as i32;
            check(
                &got,
                |w| {
                    let key = |q: i32| (size - 1 - q) / 2;
                    let mut members: Vec<i32> = (0..size)
                        .filter(|q| q % m as i32 == w as i32 % m as i32)
                        .collect();
                    members.sort_by_key(|&q| (key(q), q));
                    let n = members.len();
                    let r = members.iter().position(|&q| q == w as i32).unwrap();
                    let prev = (r + n - 1) % n;
                    vec![
                        0,
                        r as u32,
                        n as u32,
                        members[0] as u32,
                        members[prev] as u32,
                        prev as u32,
                        9,
                        0,
                    ]
                },
                &format!("split of {ranks} by rank % {m}, {s:?}"),
            );
        }
    }
}
testgen!(split_orders_by_key_then_parent_rank_and_renumbers_statuses);

fn undefined_colour_gets_no_communicator(backend: Backend) {
    let got = run(
        backend,
        WorldSpec::ranks(9).block_dim(3),
        Schedule::Parallel,
        C_UNDEFINED,
        0,
        0,
    );
    check(
        &got,
        |w| {
            if w % 2 == 1 {
                vec![0, 0, NONE, NONE]
            } else {
                vec![0, 1, (w / 2) as u32, 5]
            }
        },
        "undefined colour",
    );
}
testgen!(undefined_colour_gets_no_communicator);

fn messages_of_different_communicators_never_match(backend: Backend) {
    for (ranks, block) in [(6u32, 3u32), (1, 1), (10, 10)] {
        for s in SCHEDULES {
            let got = run(
                backend,
                WorldSpec::ranks(ranks).block_dim(block),
                s,
                C_ISOLATION,
                0,
                0,
            );
            check(
                &got,
                |w| {
                    let p = ((w + ranks as usize - 1) % ranks as usize) as u32;
                    vec![0, 0, p, p, 2000 + p, p, 1000 + p, p]
                },
                &format!("isolation, {ranks} ranks, {s:?}"),
            );
        }
    }
}
testgen!(messages_of_different_communicators_never_match);

fn a_split_of_a_split_works(backend: Backend) {
    for ranks in [11u32, 16] {
        let got = run(
            backend,
            WorldSpec::ranks(ranks).block_dim(ranks),
            Schedule::Random { seed: 3 },
            C_SPLIT_OF_SPLIT,
            0,
            0,
        );
        check(
            &got,
            |w| {
                let w = w as u32;
                let sub = w / 2;
                let mut members: Vec<u32> = (0..ranks)
                    .filter(|q| q % 2 == w % 2 && (q / 2) % 3 == sub % 3)
                    .collect();
                members.sort_by_key(|&q| std::cmp::Reverse(q / 2));
                let r = members.iter().position(|&q| q == w).unwrap() as u32;
                vec![0, 0, r, members.len() as u32, members[0], members.iter().sum()]
            },
            &format!("split of a split, {ranks} ranks"),
        );
    }
}
testgen!(a_split_of_a_split_works);

fn compare_tells_identical_congruent_similar_and_unequal(backend: Backend) {
    for ranks in [1u32, 6] {
        let got = run(
            backend,
            WorldSpec::ranks(ranks),
            Schedule::Parallel,
            C_COMPARE,
            0,
            0,
        );
        let many = ranks > 1;
        check(
            &got,
            |_| {
                vec![
                    0,
                    0,
                    0,
                    0,
                    1,
                    if many { 2 } else { 1 },
                    if many { 3 } else { 1 },
                    0,
                    1,
                    if many { 2 } else { 1 },
                ]
            },
            &format!("compare, {ranks} ranks"),
        );
    }
}
testgen!(compare_tells_identical_congruent_similar_and_unequal);

fn groups_include_exclude_translate_and_create(backend: Backend) {
    for ranks in [1u32, 2, 7] {
        let got = run(
            backend,
            WorldSpec::ranks(ranks).block_dim(1),
            Schedule::Parallel,
            C_GROUP,
            0,
            0,
        );
        let s = ranks;
        check(
            &got,
            |w| {
                let w = w as u32;
                let picked: Vec<u32> = if s == 1 { vec![0] } else { vec![s - 1, 0] };
                let prank = picked.iter().position(|&q| q == w).map(|p| p as u32);
                let restrank = (w != 0).then(|| w - 1);
                vec![
                    s,
                    picked.len() as u32,
                    s - 1,
                    w,
                    prank.unwrap_or(NONE),
                    restrank.unwrap_or(NONE),
                    0,
                    prank.unwrap_or(UNDEF),
                    0,
                    s - 1,
                    restrank.unwrap_or(UNDEF),
                    0,
                    prank.unwrap_or(NONE),
                    if prank.is_some() {
                        picked.len() as u32
                    } else {
                        NONE
                    },
                    ErrorClass::Rank as u32,
                ]
            },
            &format!("groups, {ranks} ranks"),
        );
    }
}
testgen!(groups_include_exclude_translate_and_create);

fn too_many_communicators_fail_on_every_rank(backend: Backend) {
    for limit in [0u32, 3] {
        let got = run(
            backend,
            WorldSpec::ranks(10).block_dim(5).communicators(limit),
            Schedule::Parallel,
            C_LIMIT,
            limit,
            0,
        );
        check(
            &got,
            |_| {
                let mut v = vec![0; limit as usize];
                v.push(ErrorClass::Comm as u32);
                v
            },
            &format!("limit {limit}"),
        );
    }
}
testgen!(too_many_communicators_fail_on_every_rank);

fn split_shared_and_split_by_warp_follow_blocks_and_warps(backend: Backend) {
    for (ranks, block) in [(80u32, 40u32), (96, 96), (6, 3)] {
        let got = run(
            backend,
            WorldSpec::ranks(ranks).block_dim(block),
            Schedule::Parallel,
            C_SHARED,
            0,
            0,
        );
        check(
            &got,
            |w| {
                let w = w as u32;
                let b0 = w / block * block;
                let t = w % block;
                let w0 = b0 + t / 32 * 32;
                let w1 = (w0 + 32).min(b0 + block);
                vec![
                    0,
                    t,
                    block,
                    0,
                    (b0..b0 + block).sum(),
                    0,
                    t % 32,
                    w1 - w0,
                    0,
                    (w0..w1).sum(),
                ]
            },
            &format!("split_shared/by_warp, {ranks} in blocks of {block}"),
        );
    }
}
testgen!(split_shared_and_split_by_warp_follow_blocks_and_warps);

fn fold(h: u32, v: &[u32]) -> u32 {
    v.iter().fold(h, |h, &x| hash(h, x))
}

fn fold_mats(v: &[Mat2]) -> u32 {
    v.iter().fold(0, hash_mat)
}

fn product(members: &[u32], count: usize) -> Vec<Mat2> {
    (0..count)
        .map(|i| {
            members
                .iter()
                .map(|&q| user_operand(q, i as u32))
                .reduce(|a, b| a.mul(&b))
                .unwrap()
        })
        .collect()
}

/// What rank `w` records in the collectives case.
fn collectives_model(w: u32, ranks: u32, m: u32, count: usize) -> Vec<u32> {
    let members: Vec<u32> = (0..ranks).filter(|q| q % m == w % m).collect();
    let n = members.len();
    let r = members.iter().position(|&q| q == w).unwrap();
    let pat = |q: u32, range: std::ops::Range<usize>| range.map(|i| pattern_word(q, i)).collect::<Vec<_>>();
    let mut words = vec![0u32; 17];
    // words 17.. are pushed below
    words[1] = (0..n).fold(0, |h, root| fold(h, &pat(members[root], 0..count)));
    words[2] = fold_mats(&product(&members, count));
    let gathered: Vec<u32> = members.iter().flat_map(|&q| pat(q, 0..count)).collect();
    words[3] = fold(0, &gathered);
    words[4] = (0..n).fold(0, |h, root| {
        fold(h, &pat(members[root], r * count..(r + 1) * count))
    });
    words[5] = fold_mats(&product(&members, count));
    words[6] = fold(0, &gathered);
    let a2a: Vec<u32> = members
        .iter()
        .flat_map(|&s| pat(s, r * count..(r + 1) * count))
        .collect();
    words[7] = fold(0, &a2a);
    words[8] = fold_mats(&product(&members[..=r], count));
    words[9] = if r == 0 {
        fold_mats(&vec![Mat2::default(); count])
    } else {
        fold_mats(&product(&members[..r], count))
    };
    let block: Vec<u32> = (0..count)
        .map(|i| {
            members
                .iter()
                .fold(0u32, |a, &q| a.wrapping_add(pattern_word(q, r * count + i)))
        })
        .collect();
    words[10] = fold(0, &block);
    words[11] = words[7];
    words[12] = words[6];
    let var: Vec<u32> = members
        .iter()
        .enumerate()
        .flat_map(|(q, &wq)| pat(wq, 0..q + 1))
        .collect();
    words[13] = if r == 0 { fold(0, &var) } else { 0 };
    words[14] = fold(0, &var);
    words[15] = if r == n - 1 {
        fold_mats(&product(&members, count))
    } else {
        0
    };
    words[16] = words[8];
    let displ = |q: usize| q * (q + 1) / 2;
    words.push(fold(0, &pat(members[n - 1], displ(r)..displ(r) + r + 1)));
    let a2av: Vec<u32> = members
        .iter()
        .enumerate()
        .flat_map(|(s, &ws)| {
            let from: usize = (0..r).map(|d| (s + d) % 3).sum();
            pat(ws, from..from + (s + r) % 3)
        })
        .collect();
    words.push(fold(0, &a2av));
    let off: usize = (0..r).map(|q| q % 2 + 1).sum();
    let rs: Vec<u32> = (off..off + r % 2 + 1)
        .map(|j| {
            members
                .iter()
                .fold(0u32, |a, &q| a.wrapping_add(pattern_word(q, j)))
        })
        .collect();
    words.push(fold(0, &rs));
    // The in-place forms: the same results (the in-place scatterv's root
    // receives nothing, its part stays zero).
    words.push(words[19]);
    words.push(words[14]);
    words.push(words[13]);
    words.push(if r == n - 1 {
        fold(0, &vec![0; r + 1])
    } else {
        words[17]
    });
    words.push(words[18]);
    let mut v = vec![0, r as u32, n as u32, 0];
    v.extend(words);
    v
}

fn every_collective_on_split_communicators(backend: Backend) {
    // (ranks, block, colours, count): strided members (rank % colours), odd
    // sizes, one-rank communicators, several chunks of the reductions (8
    // matrices per chunk), several blocks.
    for (ranks, block, m, count) in [
        (21u32, 7u32, 3u32, 3u32),
        (16, 16, 2, 12),
        (5, 5, 1, 9),
        (4, 2, 4, 2),
        (14, 7, 2, 0),
    ] {
        for s in SCHEDULES {
            let got = run(
                backend,
                WorldSpec::ranks(ranks).block_dim(block),
                s,
                C_COLLECTIVES,
                m,
                count,
            );
            check(
                &got,
                |w| collectives_model(w as u32, ranks, m, count as usize),
                &format!(
                    "collectives, {ranks} ranks in blocks of {block}, colours {m}, count {count}, {s:?}"
                ),
            );
        }
    }
}
testgen!(every_collective_on_split_communicators);
