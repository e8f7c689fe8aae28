//! Random sequences of collectives on random communicators against a
//! sequential model of MPI 4.1 chapters 6 and 7.
//!
//! A generated program: a world shape (one rank, one warp, one block of 45
//! ranks with a partial last warp, 3 blocks of 5, 2 blocks of one warp, 2
//! blocks of 45); up to five communicators, each a duplicate, a split with random colours
//! (some `Color::undefined()`) and keys (with ties), a `split_shared` or a
//! `split_by_warp`, of the world or of an earlier such communicator; then
//! up to twelve steps, each a collective (barrier, broadcast, reduce,
//! all-reduce, gather, scatter, all-gather, all-to-all, scan, exclusive
//! scan, reduce-scatter-block; the varcount gatherv, scatterv,
//! all-gatherv, all-to-allv and reduce-scatter with counts from 0 to the
//! step's count per rank, parts at the ends of their slots so that gaps
//! stay, on `u32` (sums); in place or not; or a non-blocking barrier,
//! broadcast, reduce or all-reduce, waited at once, whose results must be
//! the blocking one's) on the world or one of the
//! communicators, with a root valid in every communicator of the split
//! (or, now and then, one valid in none), a count from 0 to 3 and an
//! element type `u32` or `u64` (reductions: sum) or a 2 × 2 matrix
//! (reductions: the matrix product, so rank order shows, MPI 6.9.1). The
//! interpreter kernel (`gpu_mpi_check_kernels::collective_interpreter`)
//! runs it on each backend (`testgen!`: on the emulator under a parallel
//! or a seeded random schedule; on the GPU where one is present) and
//! records, per communicator, its creation's class, rank and size, and
//! per step the call's class and a fold of its result buffer. The model
//! computes every communicator's members (MPI 7.4.2: colour, then key,
//! then parent rank) and every result from the inputs, which are a
//! function of (seed, communicator rank, element index).

use gpu_mpi::device::ErrorClass;
use gpu_mpi::{CpuOptions, Schedule, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::collective_interpreter::*;
use gpu_mpi_check_kernels::comm::hash;
use gpu_mpi_check_kernels::NONE;
use proptest::prelude::*;

mod common;
use common::SplitMix64;

/// (ranks, block size) of the generated worlds.
const SHAPES: [(u32, u32); 6] = [(1, 1), (32, 32), (45, 45), (15, 5), (64, 32), (90, 45)];
/// A root that no communicator of these worlds has.
const BAD_ROOT: u32 = 1000;

#[derive(Clone, Debug)]
struct Comm {
    kind: u32,
    /// 0: the world; `k`: the program's communicator `k - 1`.
    parent: usize,
    /// Per world rank, for [`COMM_SPLIT`]: colour (`u32::MAX`: undefined) and key.
    table: Vec<(u32, i32)>,
}

#[derive(Clone, Copy, Debug)]
struct Step {
    /// 0: the world; `k`: the program's communicator `k - 1`.
    comm: usize,
    kind: u32,
    root: u32,
    count: u32,
    ty: u32,
    seed: u32,
    in_place: bool,
}

#[derive(Clone, Debug)]
struct Program {
    ranks: u32,
    block_dim: u32,
    comms: Vec<Comm>,
    steps: Vec<Step>,
    /// The emulator's schedule: `None` parallel, else random with this seed.
    schedule: Option<u64>,
}

/// Per communicator of the program, per world rank: the members (world
/// ranks, in communicator rank order) of the communicator it is in, if any.
type Groups = Vec<Vec<Option<Vec<u32>>>>;

/// The creation's outcome at one world rank.
#[derive(Clone, Debug, PartialEq)]
enum Membership {
    /// Not a member of the parent: it made no call.
    NotInParent,
    /// An undefined colour: no communicator.
    Undefined,
    /// A member of this group.
    In(Vec<u32>),
}

/// The model of the creations (MPI 7.4.2): every communicator of the program
/// at every world rank.
fn memberships(p: &Program) -> Vec<Vec<Membership>> {
    let world: Vec<u32> = (0..p.ranks).collect();
    let mut out: Vec<Vec<Membership>> = Vec::new();
    for c in &p.comms {
        let parent_of = |w: u32| -> Option<Vec<u32>> {
            if c.parent == 0 {
                Some(world.clone())
            } else {
                match &out[c.parent - 1][w as usize] {
                    Membership::In(g) => Some(g.clone()),
                    _ => None,
                }
            }
        };
        let mut row = Vec::new();
        for w in 0..p.ranks {
            let Some(parent) = parent_of(w) else {
                row.push(Membership::NotInParent);
                continue;
            };
            // (colour, key) of a member of the parent; None: undefined.
            let place = |v: u32| -> Option<(u64, i64)> {
                let t = v % p.block_dim;
                let block = (v / p.block_dim) as u64;
                match c.kind {
                    COMM_DUPLICATE => Some((0, 0)),
                    COMM_SPLIT => {
                        let (color, key) = c.table[v as usize];
                        (color != u32::MAX).then_some((color as u64, key as i64))
                    }
                    COMM_SHARED => Some((block, 0)),
                    COMM_WARP => Some((block << 16 | (t / 32) as u64, 0)),
                    _ => unreachable!("generated kinds"),
                }
            };
            let Some((color, _)) = place(w) else {
                row.push(Membership::Undefined);
                continue;
            };
            let mut members: Vec<(i64, usize, u32)> = parent
                .iter()
                .enumerate()
                .filter_map(|(pr, &v)| match place(v) {
                    Some((cv, key)) if cv == color => Some((key, pr, v)),
                    _ => None,
                })
                .collect();
            members.sort();
            row.push(Membership::In(members.into_iter().map(|(_, _, v)| v).collect()));
        }
        out.push(row);
    }
    out
}

fn groups(m: &[Vec<Membership>]) -> Groups {
    m.iter()
        .map(|row| {
            row.iter()
                .map(|x| match x {
                    Membership::In(g) => Some(g.clone()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Contexts the creations draw: one per group of the parent that creates.
fn contexts_needed(p: &Program, m: &[Vec<Membership>]) -> u32 {
    p.comms
        .iter()
        .map(|c| {
            if c.parent == 0 {
                1
            } else {
                let mut firsts: Vec<u32> = m[c.parent - 1]
                    .iter()
                    .filter_map(|x| match x {
                        Membership::In(g) => Some(g[0]),
                        _ => None,
                    })
                    .collect();
                firsts.sort();
                firsts.dedup();
                firsts.len() as u32
            }
        })
        .sum()
}

/// The words of one element of type `ty`.
fn words_of(ty: u32) -> u32 {
    match ty {
        T_U32 => 1,
        T_U64 => 2,
        _ => 4,
    }
}

/// Element `i` of communicator rank `q`'s input, as words.
fn make(ty: u32, seed: u32, q: u32, i: u32) -> Vec<u32> {
    (0..words_of(ty)).map(|w| value_word(seed, q, i, w)).collect()
}

/// `a op b`: sum for the integers, the matrix product for matrices.
fn combine(ty: u32, a: &[u32], b: &[u32]) -> Vec<u32> {
    match ty {
        T_U32 => vec![a[0].wrapping_add(b[0])],
        T_U64 => {
            let x = (a[0] as u64 | (a[1] as u64) << 32).wrapping_add(b[0] as u64 | (b[1] as u64) << 32);
            vec![x as u32, (x >> 32) as u32]
        }
        _ => {
            let m = |x: u32, y: u32, z: u32, w: u32| x.wrapping_mul(y).wrapping_add(z.wrapping_mul(w));
            vec![
                m(a[0], b[0], a[1], b[2]),
                m(a[0], b[1], a[1], b[3]),
                m(a[2], b[0], a[3], b[2]),
                m(a[2], b[1], a[3], b[3]),
            ]
        }
    }
}

/// The fold of elements, as the kernel records it.
fn fold(elems: &[Vec<u32>]) -> u32 {
    elems.iter().flatten().fold(0, |h, &w| hash(h, w))
}

/// Element `i` reduced over ranks `ranks` (in order) with index `i`.
fn reduced(ty: u32, seed: u32, ranks: std::ops::Range<u32>, i: u32) -> Vec<u32> {
    ranks
        .map(|q| make(ty, seed, q, i))
        .reduce(|a, b| combine(ty, &a, &b))
        .expect("at least one rank")
}

fn rooted(kind: u32) -> bool {
    matches!(
        kind,
        K_BROADCAST | K_REDUCE | K_GATHER | K_SCATTER | K_IBROADCAST | K_IREDUCE | K_GATHERV | K_SCATTERV
    )
}

/// The blocking collective a non-blocking kind must agree with (MPI 4.1
/// §6.12: the same results); other kinds as they are.
fn blocking(kind: u32) -> u32 {
    match kind {
        K_IBARRIER => K_BARRIER,
        K_IBROADCAST => K_BROADCAST,
        K_IREDUCE => K_REDUCE,
        K_IALL_REDUCE => K_ALL_REDUCE,
        k => k,
    }
}

/// What rank `r` of a communicator of `n` ranks must record for `s`:
/// `(class, Some(fold))`, or `None` for the fold when MPI leaves the buffer
/// undefined (an exclusive scan's rank 0).
fn expected(s: &Step, n: u32, r: u32) -> (u32, Option<u32>) {
    if rooted(s.kind) && s.root >= n {
        return (ErrorClass::Root as u32, Some(NONE));
    }
    // The interpreter runs the varcount kinds on `u32` whatever `ty`.
    let varcount = matches!(
        s.kind,
        K_GATHERV | K_SCATTERV | K_ALL_GATHERV | K_ALL_TO_ALLV | K_REDUCE_SCATTER
    );
    let ty = if varcount { T_U32 } else { s.ty };
    let (seed, c, t) = (s.seed, s.count, s.root);
    let elems = |f: &dyn Fn(u32) -> Vec<u32>, len: u32| fold(&(0..len).map(f).collect::<Vec<_>>());
    let fill = |j: u32| make(ty, FILL_SEED, FILL_RANK, j);
    let vc = |q: u32| var_count(seed, q, c);
    // Element `j` of a varcount receive buffer (slots of `c` elements, part
    // `q` of `len(q)` elements at the slot's end): the fill in the gaps,
    // else `part(q, i)` for the part's element `i`.
    let slots = |len: &dyn Fn(u32) -> u32, part: &dyn Fn(u32, u32) -> Vec<u32>| {
        elems(
            &|j| {
                let (q, off) = (j / c.max(1), j % c.max(1));
                let gap = c - len(q);
                if off < gap {
                    fill(j)
                } else {
                    part(q, off - gap)
                }
            },
            n * c,
        )
    };
    let h = match blocking(s.kind) {
        K_BARRIER => 0,
        K_BROADCAST => elems(&|i| make(ty, seed, t, i), c),
        K_REDUCE if r != t => 0,
        K_REDUCE | K_ALL_REDUCE => elems(&|i| reduced(ty, seed, 0..n, i), c),
        K_GATHER if r != t => 0,
        K_GATHER | K_ALL_GATHER => elems(&|j| make(ty, seed, j / c.max(1), j % c.max(1)), n * c),
        K_SCATTER if r == t && s.in_place => elems(&|j| make(ty, seed, t, j), n * c),
        K_SCATTER => elems(&|i| make(ty, seed, t, r * c + i), c),
        K_ALL_TO_ALL => elems(&|j| make(ty, seed, j / c.max(1), r * c + j % c.max(1)), n * c),
        K_SCAN => elems(&|i| reduced(ty, seed, 0..r + 1, i), c),
        K_EXCLUSIVE_SCAN if r == 0 => return (0, None),
        K_EXCLUSIVE_SCAN => elems(&|i| reduced(ty, seed, 0..r, i), c),
        K_REDUCE_SCATTER_BLOCK => elems(
            &|i| {
                (0..n)
                    .map(|q| make(ty, seed, q, r * c + i))
                    .reduce(|a, b| combine(ty, &a, &b))
                    .expect("n > 0")
            },
            c,
        ),
        K_GATHERV if r != t => 0,
        K_GATHERV | K_ALL_GATHERV => slots(&vc, &|q, i| make(ty, seed, q, i)),
        K_SCATTERV if r == t && s.in_place => elems(&|j| make(ty, seed, t, j), n * c),
        K_SCATTERV => elems(&|i| make(ty, seed, t, var_displ(r, vc(r), c) + i), vc(r)),
        K_ALL_TO_ALLV => {
            // Slot `q` holds rank `q`'s elements for this rank (its slot `r`).
            let len = |q: u32| {
                if s.in_place {
                    var_pair(seed, q.min(r), q.max(r), c)
                } else {
                    var_pair(seed, q, r, c)
                }
            };
            slots(&len, &|q, i| make(ty, seed, q, r * c + i))
        }
        K_REDUCE_SCATTER => {
            let off: u32 = (0..r).map(vc).sum();
            elems(&|i| reduced(ty, seed, 0..n, off + i), vc(r))
        }
        _ => unreachable!("generated kinds"),
    };
    (0, Some(h))
}

fn stride(p: &Program) -> usize {
    (p.comms.len() * COMM_RECORD_WORDS + p.steps.len() * STEP_RECORD_WORDS).max(1)
}

/// The program as the interpreter reads it.
fn encode(p: &Program) -> Vec<u32> {
    let mut words = vec![p.comms.len() as u32, p.steps.len() as u32];
    let tables = 2 + p.comms.len() * COMM_WORDS + p.steps.len() * STEP_WORDS;
    let mut next = tables;
    for c in &p.comms {
        words.extend([c.kind, c.parent as u32, next as u32]);
        next += 2 * c.table.len();
    }
    for s in &p.steps {
        words.extend([
            s.comm as u32,
            s.kind,
            s.root,
            s.count,
            s.ty,
            s.seed,
            s.in_place as u32,
        ]);
    }
    assert_eq!(words.len(), tables);
    for c in &p.comms {
        for &(color, key) in &c.table {
            words.extend([color, key as u32]);
        }
    }
    words
}

/// Runs the program on `backend`: the records, [`stride`] words per rank.
fn run(backend: Backend, p: &Program) -> Result<Vec<u32>, String> {
    let schedule = match p.schedule {
        None => Schedule::Parallel,
        Some(seed) => Schedule::Random { seed },
    };
    let device = backend.device_with(CpuOptions {
        workers: 2,
        schedule,
        ..CpuOptions::default()
    });
    let stride = stride(p);
    let code = device.upload(&encode(p)).map_err(|e| e.to_string())?;
    let out = device
        .alloc_zeroed::<u32>(stride * p.ranks as usize)
        .map_err(|e| e.to_string())?;
    let args = CollectiveProgramArgs {
        stride: stride as u32,
        reserved: 0,
        program: code.slice(),
        out: out.slice(),
    };
    let m = memberships(p);
    let spec = WorldSpec::ranks(p.ranks)
        .block_dim(p.block_dim)
        .communicators(contexts_needed(p, &m).max(1))
        .immediate_on_communicators(true);
    device
        .launch(&SEMANTICS_COLLECTIVE_INTERPRETER, &args, &spec)
        .map_err(|e| format!("launch failed: {e}"))?;
    device.download(&out).map_err(|e| e.to_string())
}

/// Checks every record against the model.
fn check(p: &Program, records: &[u32]) -> Result<(), String> {
    let stride = stride(p);
    let m = memberships(p);
    let g = groups(&m);
    for w in 0..p.ranks as usize {
        let rec = &records[w * stride..(w + 1) * stride];
        for (k, row) in m.iter().enumerate() {
            let got = &rec[k * COMM_RECORD_WORDS..(k + 1) * COMM_RECORD_WORDS];
            let want = match &row[w] {
                Membership::NotInParent => vec![NONE; 3],
                Membership::Undefined => vec![0, NONE, NONE],
                Membership::In(members) => {
                    let r = members.iter().position(|&v| v == w as u32).expect("a member");
                    vec![0, r as u32, members.len() as u32]
                }
            };
            if got != want {
                return Err(format!(
                    "world rank {w}: communicator {k} {:?}: recorded {got:?}, expected {want:?}",
                    p.comms[k]
                ));
            }
        }
        for (i, s) in p.steps.iter().enumerate() {
            let at = p.comms.len() * COMM_RECORD_WORDS + i * STEP_RECORD_WORDS;
            let got = &rec[at..at + STEP_RECORD_WORDS];
            let members = if s.comm == 0 {
                Some((0..p.ranks).collect::<Vec<_>>())
            } else {
                g[s.comm - 1][w].clone()
            };
            let ok = match &members {
                None => got == [NONE, NONE],
                Some(members) => {
                    let r = members.iter().position(|&v| v == w as u32).expect("a member") as u32;
                    let (class, h) = expected(s, members.len() as u32, r);
                    got[0] == class && h.is_none_or(|h| got[1] == h)
                }
            };
            if !ok {
                let place = members.map(|m| {
                    let r = m.iter().position(|&v| v == w as u32).unwrap_or(usize::MAX);
                    (r, m.len())
                });
                return Err(format!(
                    "world rank {w} (communicator rank, size: {place:?}): step {i} {s:?}: recorded {got:?}"
                ));
            }
        }
    }
    Ok(())
}

type RawComm = (u32, u32, u64);
type RawStep = (u32, u32, u32, u32, u32, u32, bool);

fn build(shape: usize, raw_comms: Vec<RawComm>, raw_steps: Vec<RawStep>, schedule: Option<u64>) -> Program {
    let (ranks, block_dim) = SHAPES[shape];
    let mut comms: Vec<Comm> = Vec::new();
    for (kind, parent_raw, table_seed) in raw_comms {
        // A third of the communicators come from an earlier one of the world's.
        let firsts: Vec<usize> = (0..comms.len()).filter(|&k| comms[k].parent == 0).collect();
        let parent = if parent_raw % 3 == 0 && !firsts.is_empty() {
            firsts[parent_raw as usize / 3 % firsts.len()] + 1
        } else {
            0
        };
        let mut rng = SplitMix64::new(table_seed);
        let colors = 1 + rng.next_u64() % 3;
        let table = (0..ranks)
            .map(|_| {
                let x = rng.next_u64();
                let color = if x % 100 < 15 {
                    u32::MAX
                } else {
                    (x >> 8) as u32 % colors as u32
                };
                let key = ((x >> 32) % 7) as i32 - 3;
                (color, key)
            })
            .collect();
        comms.push(Comm { kind, parent, table });
    }
    let p = Program {
        ranks,
        block_dim,
        comms,
        steps: Vec::new(),
        schedule,
    };
    let g = groups(&memberships(&p));
    let steps = raw_steps
        .into_iter()
        .map(|(sel, kind, root_raw, count, ty, seed, in_place)| {
            let comm = sel as usize % (p.comms.len() + 1);
            // The smallest communicator the step runs on.
            let smallest = if comm == 0 {
                ranks
            } else {
                g[comm - 1]
                    .iter()
                    .flatten()
                    .map(|m| m.len() as u32)
                    .min()
                    .unwrap_or(1)
            };
            let root = if root_raw % 20 == 19 {
                BAD_ROOT
            } else {
                root_raw % smallest
            };
            Step {
                comm,
                kind,
                root,
                count,
                ty,
                seed,
                in_place,
            }
        })
        .collect();
    Program { steps, ..p }
}

fn program() -> impl Strategy<Value = Program> {
    let comm = (0..4u32, 0..12u32, any::<u64>());
    let step = (
        0..8u32,
        0..KINDS,
        0..200u32,
        0..=MAX_COUNT as u32,
        0..3u32,
        any::<u32>(),
        any::<bool>(),
    );
    (
        0..SHAPES.len(),
        prop::collection::vec(comm, 0..=MAX_COMMS - 1),
        prop::collection::vec(step, 1..=12),
        prop::option::of(any::<u64>()),
    )
        .prop_map(|(shape, comms, steps, schedule)| build(shape, comms, steps, schedule))
}

fn collectives_follow_the_sequential_model(backend: Backend) {
    proptest!(ProptestConfig::with_cases(48), |(p in program())| {
        let records = run(backend, &p).map_err(TestCaseError::fail)?;
        check(&p, &records).map_err(TestCaseError::fail)?;
    });
}
testgen!(collectives_follow_the_sequential_model);

/// The model itself: a hand-written program with a known answer.
fn model_accepts_a_known_run_and_rejects_a_wrong_order(backend: Backend) {
    // 15 ranks in blocks of 5; a split into odd and even world ranks with
    // keys that reverse them, one undefined; a per-block split of it.
    let table = (0..15)
        .map(|w: u32| {
            if w == 4 {
                (u32::MAX, 0)
            } else {
                (w % 2, -(w as i32))
            }
        })
        .collect();
    let step = |comm, kind, root, count, ty, in_place| Step {
        comm,
        kind,
        root,
        count,
        ty,
        seed: 0x1234 + kind,
        in_place,
    };
    let p = Program {
        ranks: 15,
        block_dim: 5,
        comms: vec![
            Comm {
                kind: COMM_SPLIT,
                parent: 0,
                table,
            },
            Comm {
                kind: COMM_SHARED,
                parent: 1,
                table: Vec::new(),
            },
        ],
        steps: vec![
            step(1, K_SCAN, 0, 2, T_MAT2, false),
            step(0, K_REDUCE, 3, 1, T_MAT2, true),
            step(2, K_ALL_TO_ALL, 0, 2, T_U64, false),
            step(1, K_BROADCAST, BAD_ROOT, 1, T_U32, false),
            step(2, K_REDUCE_SCATTER_BLOCK, 0, 3, T_U32, true),
            step(1, K_EXCLUSIVE_SCAN, 0, 0, T_U32, false),
        ],
        schedule: None,
    };
    let m = memberships(&p);
    // World rank 13 is rank 0 of the odd ranks (key -13 is the smallest).
    assert_eq!(m[0][13], Membership::In(vec![13, 11, 9, 7, 5, 3, 1]));
    assert_eq!(m[0][4], Membership::Undefined);
    assert_eq!(m[1][4], Membership::NotInParent);
    // Block 2 (world ranks 10..15) of the even ranks: 14, 12, 10.
    assert_eq!(m[1][12], Membership::In(vec![14, 12, 10]));
    // One context for the split, and one per group of it (odd, even) for
    // the per-block split of that.
    assert_eq!(contexts_needed(&p, &m), 3);
    let records = run(backend, &p).unwrap();
    check(&p, &records).unwrap();
    // Rank 1 of the odd ranks (world rank 11) with the scan of rank 2
    // (world rank 9): the model must see that rank order was broken.
    let stride = stride(&p);
    let at = 2 * COMM_RECORD_WORDS;
    let mut bad = records.clone();
    bad[11 * stride + at + 1] = records[9 * stride + at + 1];
    assert!(check(&p, &bad).is_err());
    // A member that reports another size.
    let mut bad = records.clone();
    bad[13 * stride + 2] += 1;
    assert!(check(&p, &bad).is_err());
    // A bad root that succeeded.
    let mut bad = records.clone();
    let at = 2 * COMM_RECORD_WORDS + 3 * STEP_RECORD_WORDS;
    bad[3 * stride + at] = 0;
    assert!(check(&p, &bad).is_err());
    // The matrix product taken in the other order gives another fold.
    let (a, b) = (make(T_MAT2, 1, 0, 0), make(T_MAT2, 1, 1, 0));
    assert_ne!(combine(T_MAT2, &a, &b), combine(T_MAT2, &b, &a));
}
testgen!(model_accepts_a_known_run_and_rejects_a_wrong_order);

/// Every root of every rooted collective (in place and not, matrices, so
/// rank order shows) on each kind of communicator, beside the random
/// programs: roots run up to the largest communicator of a split, so the
/// smaller ones of the same split must refuse the larger roots with
/// `MPI_ERR_ROOT` while the others move the data.
fn every_root_of_every_rooted_collective_on_each_kind_of_communicator(backend: Backend) {
    for (ranks, block_dim) in [(15u32, 5u32), (45, 45)] {
        let table = (0..ranks)
            .map(|w| {
                if w % 7 == 3 {
                    (u32::MAX, 0)
                } else {
                    (w % 3, (w % 4) as i32 - 2)
                }
            })
            .collect();
        let comm = |kind, parent, table| Comm { kind, parent, table };
        let mut p = Program {
            ranks,
            block_dim,
            comms: vec![
                comm(COMM_DUPLICATE, 0, Vec::new()),
                comm(COMM_SPLIT, 0, table),
                comm(COMM_SHARED, 0, Vec::new()),
                comm(COMM_WARP, 0, Vec::new()),
                comm(COMM_SHARED, 2, Vec::new()),
            ],
            steps: Vec::new(),
            schedule: None,
        };
        let g = groups(&memberships(&p));
        for sel in 0..=p.comms.len() {
            let largest = if sel == 0 {
                ranks
            } else {
                g[sel - 1]
                    .iter()
                    .flatten()
                    .map(|m| m.len() as u32)
                    .max()
                    .unwrap_or(0)
            };
            for kind in [
                K_BROADCAST,
                K_REDUCE,
                K_GATHER,
                K_SCATTER,
                K_IBROADCAST,
                K_IREDUCE,
                K_GATHERV,
                K_SCATTERV,
            ] {
                for root in 0..largest {
                    p.steps.push(Step {
                        comm: sel,
                        kind,
                        root,
                        count: 2,
                        ty: T_MAT2,
                        seed: kind << 16 | root,
                        in_place: root % 2 == 1,
                    });
                }
            }
        }
        let refused = p
            .steps
            .iter()
            .filter(|s| s.comm > 0 && g[s.comm - 1].iter().flatten().any(|m| s.root >= m.len() as u32))
            .count();
        assert!(
            refused > 0,
            "some communicator must be smaller than its split's largest"
        );
        let records = run(backend, &p).unwrap_or_else(|e| panic!("{ranks} ranks: {e}"));
        check(&p, &records).unwrap_or_else(|e| panic!("{ranks} ranks: {e}"));
    }
}
testgen!(every_root_of_every_rooted_collective_on_each_kind_of_communicator);
