//! Communicator semantic kernels (MPI 4.1 chapter 7, and chapter 6 on
//! sub-communicators): splits with keys and ties, `Color::undefined`,
//! split of a split, context isolation, compare, groups, the limit on
//! communicators, per-block and per-warp communicators, and every
//! collective on the communicators of a split. Rank `r` records
//! [`COMM_STRIDE`] words; the host's model (check/tests/comm.rs) computes
//! what each must be.

use super::collectives::user_operand;
use super::p2p::Mat2;
use super::{pattern_word, CaseArgs, Recorder, NONE};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation, UserOperation};
use gpu_mpi_device::communicator::UNDEFINED;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Color, CommunicatorRelation, Error, World};

/// Words each rank records.
pub const COMM_STRIDE: u32 = 32;

/// Split with colour `rank % param` and key `(size - 1 - rank) / 2`
/// (reversed, with ties). Records: class, rank, size, world rank of rank
/// 0, then a ring on the new communicator (send own world rank to `rank +
/// 1`, receive from any source): value, source, tag (0..2 of the ring
/// class folded in word 7).
pub const C_SPLIT: u32 = 0;
/// Odd ranks pass `Color::undefined()`. Records: class, 1 if it got a
/// communicator, its rank, its size.
pub const C_UNDEFINED: u32 = 1;
/// Two duplicates of the world and the world itself exchange messages
/// with the same ranks and tags (ring to `rank + 1`, tag 5): sent on B
/// (1000 + r), on the world (2000 + r), on A (r), received on A, the
/// world, B in that order (any source). Records: classes of the two
/// duplications, then value and source of each receive.
pub const C_ISOLATION: u32 = 2;
/// Split by `rank % 2`, then that by `subrank % 3` with key `-subrank`.
/// Records: both classes, final rank, size, world rank of its rank 0,
/// and the sum of world ranks over it (all-reduce).
pub const C_SPLIT_OF_SPLIT: u32 = 3;
/// `compare`: world with itself, a duplicate with the world, the world
/// with a reversed split of one colour, the world with a split by `rank %
/// 2`, the duplicate with itself. Records the five relations (0 identical,
/// 1 congruent, 2 similar, 3 unequal) and the creation classes.
pub const C_COMPARE: u32 = 4;
/// Groups: the world's group; include `[size - 1, 0]`; exclude `[0]`;
/// translate; the communicator of the included group. Records: group
/// sizes, ranks (NONE: not a member), translations, the new communicator's
/// rank and size (NONE when none), and an include error's class.
pub const C_GROUP: u32 = 5;
/// `param + 1` duplications of the world in a world that holds `param`
/// communicators. Records each creation's class.
pub const C_LIMIT: u32 = 6;
/// `split_shared` and `split_by_warp`, each with its rank, size, barrier
/// class and the sum of world ranks (all-reduce) over it.
pub const C_SHARED: u32 = 7;
/// Every collective on the communicators of a split by `rank % param`
/// (members in world order) with `param2` elements: see
/// [`semantics_comm`] for the words.
pub const C_COLLECTIVES: u32 = 8;

/// Largest communicator size of [`C_COLLECTIVES`].
pub const COLL_MAX_SIZE: usize = 8;
/// Largest element count of [`C_COLLECTIVES`].
pub const COLL_MAX_COUNT: usize = 12;

/// The fold the collective case records its buffers with.
pub fn hash(h: u32, v: u32) -> u32 {
    h.wrapping_mul(0x0100_0193) ^ v
}

/// The fold of a matrix.
pub fn hash_mat(h: u32, m: &Mat2) -> u32 {
    hash(hash(hash(hash(h, m.a), m.b), m.c), m.d)
}

fn relation_code(r: CommunicatorRelation) -> u32 {
    match r {
        CommunicatorRelation::Identical => 0,
        CommunicatorRelation::Congruent => 1,
        CommunicatorRelation::Similar => 2,
        CommunicatorRelation::Unequal => 3,
    }
}

fn class(r: &Result<impl Sized, Error>) -> u32 {
    super::class_of(r)
}

gpu_mpi_device::kernel! {
    /// The `C_*` cases (see their docs) with `param` and `param2`.
    pub static SEMANTICS_COMM = fn semantics_comm(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        match args.case {
            C_SPLIT => split_case(world, args, &mut rec),
            C_UNDEFINED => {
                let color = if rank % 2 == 1 { Color::undefined() } else { Color::with_value(7) };
                let c = world.split_by_color(color);
                rec.class(&c)?;
                match c {
                    Ok(Some(c)) => rec.words(&[1, c.rank() as u32, c.size() as u32]),
                    _ => rec.words(&[0, NONE, NONE]),
                }
            }
            C_ISOLATION => {
                let a = world.duplicate();
                let b = world.duplicate();
                rec.class(&a)?;
                rec.class(&b)?;
                let (Ok(a), Ok(b)) = (a, b) else { return Ok(()) };
                let next = (rank + 1) % size;
                let r = rank as u32;
                b.process_at_rank(next).send_with_tag(&(1000 + r), 5)?;
                world.process_at_rank(next).send_with_tag(&(2000 + r), 5)?;
                a.process_at_rank(next).send_with_tag(&r, 5)?;
                for (v, source) in [receive_any(&a, 5), receive_any(world, 5), receive_any(&b, 5)] {
                    rec.words(&[v, source])?;
                }
                Ok(())
            }
            C_SPLIT_OF_SPLIT => {
                let first = world.split_by_color(Color::with_value(rank as u32 % 2));
                rec.class(&first)?;
                let Ok(Some(first)) = first else { return Ok(()) };
                let sub = first.rank();
                let second = first.split_by_color_with_key(Color::with_value(sub as u32 % 3), -sub);
                rec.class(&second)?;
                let Ok(Some(second)) = second else { return Ok(()) };
                let mut sum = 0u32;
                let r = second.all_reduce_into(&(rank as u32), &mut sum, SystemOperation::sum());
                rec.words(&[
                    second.rank() as u32,
                    second.size() as u32,
                    second.world_rank_of(0).map_or(NONE, |w| w as u32),
                    if r.is_ok() { sum } else { NONE },
                ])
            }
            C_COMPARE => {
                let dup = world.duplicate();
                let reversed = world.split_by_color_with_key(Color::with_value(0), -rank);
                let halves = world.split_by_color(Color::with_value(rank as u32 % 2));
                rec.words(&[class(&dup), class(&reversed), class(&halves)])?;
                let (Ok(dup), Ok(Some(reversed)), Ok(Some(halves))) = (dup, reversed, halves) else {
                    return Ok(());
                };
                rec.words(&[
                    relation_code(world.compare(world)),
                    relation_code(dup.compare(world)),
                    relation_code(world.compare(&reversed)),
                    relation_code(world.compare(&halves)),
                    relation_code(dup.compare(&dup)),
                    // Through `impl Communicator for &C`.
                    relation_code(Communicator::compare(&&dup, &world)),
                    relation_code(Communicator::compare(&world, &&reversed)),
                ])
            }
            C_GROUP => group_case(world, &mut rec),
            C_LIMIT => {
                for _ in 0..=args.param {
                    let d = world.duplicate();
                    rec.class(&d)?;
                }
                Ok(())
            }
            C_SHARED => {
                for c in [world.split_shared(), world.split_by_warp()] {
                    rec.class(&c)?;
                    let Ok(c) = c else {
                        rec.words(&[NONE; 4])?;
                        continue;
                    };
                    let b = c.barrier();
                    let mut sum = 0u32;
                    let s = c.all_reduce_into(&(rank as u32), &mut sum, SystemOperation::sum());
                    rec.words(&[
                        c.rank() as u32,
                        c.size() as u32,
                        class(&b),
                        if s.is_ok() { sum } else { NONE },
                    ])?;
                }
                Ok(())
            }
            C_COLLECTIVES => collectives_case(world, args, &mut rec),
            _ => Ok(()),
        }
    }
}

/// A receive from any source with `tag` on `c`: the value and source
/// received (NONE, NONE on an error).
fn receive_any<C: Communicator>(c: &C, tag: i32) -> (u32, u32) {
    let mut v = 0u32;
    match c.any_process().receive_into_with_tag(&mut v, tag) {
        Ok(s) => (v, s.source_rank() as u32),
        Err(_) => (NONE, NONE),
    }
}

fn split_case(world: &World, args: &CaseArgs, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let m = args.param.max(1);
    let c = world.split_by_color_with_key(Color::with_value(rank as u32 % m), (size - 1 - rank) / 2);
    rec.class(&c)?;
    let Ok(Some(c)) = c else { return Ok(()) };
    let (r, n) = (c.rank(), c.size());
    rec.words(&[r as u32, n as u32, c.world_rank_of(0).map_or(NONE, |w| w as u32)])?;
    let to = c.process_at_rank((r + 1) % n);
    let sent = to.send_with_tag(&(rank as u32), 9);
    let mut v = 0u32;
    let got = c.any_process().receive_into_with_tag(&mut v, 9);
    match got {
        Ok(s) => rec.words(&[v, s.source_rank() as u32, s.tag() as u32])?,
        Err(_) => rec.words(&[NONE; 3])?,
    }
    rec.push(class(&sent) | class(&got) << 8)
}

fn group_case(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let g = world.group();
    let list = [size - 1, 0];
    let picked = match g.include(&list[..size.min(2) as usize]) {
        Ok(p) => p,
        Err(e) => return rec.push(e.class() as u32),
    };
    let rest = match g.exclude(&[0]) {
        Ok(p) => p,
        Err(e) => return rec.push(e.class() as u32),
    };
    let opt = |r: Option<i32>| r.map_or(NONE, |r| r as u32);
    rec.words(&[
        g.size() as u32,
        picked.size() as u32,
        rest.size() as u32,
        opt(g.rank()),
        opt(picked.rank()),
        opt(rest.rank()),
    ])?;
    // Rank `rank` of the world in the two subgroups, and rank 0 of
    // `picked` back in the world.
    let mut out = [0i32; 2];
    let t = g.translate_ranks(&[rank, size - 1], &picked, &mut out);
    rec.words(&[class(&t), out[0] as u32, out[1] as u32])?;
    let back = picked.translate_rank(0, &g);
    rec.push(match back {
        Ok(Some(w)) => w as u32,
        Ok(None) => UNDEFINED as u32,
        Err(e) => 0x100 | e.class() as u32,
    })?;
    let in_rest = g.translate_rank(rank, &rest);
    rec.push(match in_rest {
        Ok(Some(w)) => w as u32,
        Ok(None) => UNDEFINED as u32,
        Err(e) => 0x100 | e.class() as u32,
    })?;
    let c = world.split_by_subgroup_collective(&picked);
    rec.class(&c)?;
    match c {
        Ok(Some(c)) => rec.words(&[c.rank() as u32, c.size() as u32])?,
        _ => rec.words(&[NONE, NONE])?,
    }
    // A rank listed twice.
    let twice = g.include(&[0, 0]).map(|_| ());
    rec.class(&twice)
}

/// Words of [`C_COLLECTIVES`], after the split's class and the
/// communicator's rank and size:
/// 3. OR of every collective's class (shifted by its index);
/// 4. barrier class;
/// 5. broadcasts from every root (`count` pattern words of the root's
///    world rank): the fold of what arrived;
/// 6. reduce of `user_operand`s (matrix products, non-commutative) to
///    every root: the fold of the root's results;
/// 7. gather to every root: the root's fold of its buffer;
/// 8. scatter from every root (the root's `n × count` pattern words): the
///    fold of the parts received;
/// 9. all-reduce (matrices); 10. all-gather; 11. all-to-all (part `d` of
///    rank `s`: pattern of `s`'s world rank, elements `d × count ..`);
/// 12. inclusive scan (matrices); 13. exclusive scan (rank 0: untouched
///    zeros); 14. reduce-scatter-block (u32 sums of patterns);
/// 15. all-to-all in place; 16. all-gather in place; 17. gatherv to root
///    0 (rank `q` sends `q + 1` words, packed); 18. all-gatherv (same);
/// 19. in-place reduce at root `n - 1` (matrices, others contribute too);
/// 20. in-place inclusive scan (matrices); 21. scatterv from rank `n - 1`
/// (part `q`: `q + 1` words); 22. all-to-allv (`(s + d) % 3` words from
/// `s` to `d`, packed); 23. reduce-scatter with counts `q % 2 + 1`;
/// 24-27. the in-place reduce-scatter, all-gatherv, gatherv (root 0) and
/// scatterv (root `n - 1`) on the same data; 28. the in-place all-to-allv
/// (the same counts as 22, which are the same both ways: word 22 again).
fn collectives_case(world: &World, args: &CaseArgs, rec: &mut Recorder) -> Result<(), Error> {
    let rank = world.rank();
    let m = args.param.max(1);
    let count = (args.param2 as usize).min(COLL_MAX_COUNT);
    let c = world.split_by_color(Color::with_value(rank as u32 % m));
    rec.class(&c)?;
    let Ok(Some(c)) = c else { return Ok(()) };
    let (r, n) = (c.rank() as usize, c.size() as usize);
    rec.words(&[r as u32, n as u32])?;
    if n > COLL_MAX_SIZE {
        return Ok(());
    }
    let me = rank as u32;
    let mut classes = 0u32;
    let mut note = |k: u32, r: &Result<(), Error>| classes |= class(r) << k;
    let op = UserOperation::associative(|a: &Mat2, b: &Mat2| a.mul(b));
    let mut words = [0u32; 25];

    let b = c.barrier();
    note(0, &b);
    words[0] = class(&b);

    let mut h = 0;
    for root in 0..n {
        let mut buf = [0u32; COLL_MAX_COUNT];
        if root == r {
            for (i, v) in buf[..count].iter_mut().enumerate() {
                *v = pattern_word(me, i);
            }
        }
        note(
            1,
            &c.process_at_rank(root as i32).broadcast_into(&mut buf[..count]),
        );
        h = buf[..count].iter().fold(h, |h, &v| hash(h, v));
    }
    words[1] = h;

    let mats = |w: u32| {
        let mut a = [Mat2::default(); COLL_MAX_COUNT];
        for (i, x) in a.iter_mut().enumerate() {
            *x = user_operand(w, i as u32);
        }
        a
    };
    let mine = mats(me);
    let mut h = 0;
    for root in 0..n {
        let p = c.process_at_rank(root as i32);
        if root == r {
            let mut out = [Mat2::default(); COLL_MAX_COUNT];
            note(2, &p.reduce_into_root(&mine[..count], &mut out[..count], op));
            h = out[..count].iter().fold(h, hash_mat);
        } else {
            note(2, &p.reduce_into(&mine[..count], op));
        }
    }
    words[2] = h;

    let own: [u32; COLL_MAX_COUNT] = core::array::from_fn(|i| pattern_word(me, i));
    let mut h = 0;
    for root in 0..n {
        let p = c.process_at_rank(root as i32);
        if root == r {
            let mut all = [0u32; COLL_MAX_SIZE * COLL_MAX_COUNT];
            note(3, &p.gather_into_root(&own[..count], &mut all[..n * count]));
            h = all[..n * count].iter().fold(h, |h, &v| hash(h, v));
        } else {
            note(3, &p.gather_into(&own[..count]));
        }
    }
    words[3] = h;

    let mut h = 0;
    for root in 0..n {
        let p = c.process_at_rank(root as i32);
        let mut part = [0u32; COLL_MAX_COUNT];
        if root == r {
            let all: [u32; COLL_MAX_SIZE * COLL_MAX_COUNT] = core::array::from_fn(|i| pattern_word(me, i));
            note(4, &p.scatter_into_root(&all[..n * count], &mut part[..count]));
        } else {
            note(4, &p.scatter_into(&mut part[..count]));
        }
        h = part[..count].iter().fold(h, |h, &v| hash(h, v));
    }
    words[4] = h;

    let mut out = [Mat2::default(); COLL_MAX_COUNT];
    note(5, &c.all_reduce_into(&mine[..count], &mut out[..count], op));
    words[5] = out[..count].iter().fold(0, hash_mat);

    let mut all = [0u32; COLL_MAX_SIZE * COLL_MAX_COUNT];
    note(6, &c.all_gather_into(&own[..count], &mut all[..n * count]));
    words[6] = all[..n * count].iter().fold(0, |h, &v| hash(h, v));

    let send: [u32; COLL_MAX_SIZE * COLL_MAX_COUNT] = core::array::from_fn(|i| pattern_word(me, i));
    let mut got = [0u32; COLL_MAX_SIZE * COLL_MAX_COUNT];
    note(7, &c.all_to_all_into(&send[..n * count], &mut got[..n * count]));
    words[7] = got[..n * count].iter().fold(0, |h, &v| hash(h, v));

    let mut out = [Mat2::default(); COLL_MAX_COUNT];
    note(8, &c.scan_into(&mine[..count], &mut out[..count], op));
    words[8] = out[..count].iter().fold(0, hash_mat);

    let mut out = [Mat2::default(); COLL_MAX_COUNT];
    note(9, &c.exclusive_scan_into(&mine[..count], &mut out[..count], op));
    words[9] = out[..count].iter().fold(0, hash_mat);

    let mut block = [0u32; COLL_MAX_COUNT];
    note(
        10,
        &c.reduce_scatter_block_into(&send[..n * count], &mut block[..count], SystemOperation::sum()),
    );
    words[10] = block[..count].iter().fold(0, |h, &v| hash(h, v));

    let mut inplace = send;
    note(11, &c.all_to_all_in_place(&mut inplace[..n * count]));
    words[11] = inplace[..n * count].iter().fold(0, |h, &v| hash(h, v));

    let mut ag = [0u32; COLL_MAX_SIZE * COLL_MAX_COUNT];
    ag[r * count..(r + 1) * count].copy_from_slice(&own[..count]);
    note(12, &c.all_gather_in_place(&mut ag[..n * count]));
    words[12] = ag[..n * count].iter().fold(0, |h, &v| hash(h, v));

    let counts: [i32; COLL_MAX_SIZE] = core::array::from_fn(|q| q as i32 + 1);
    let displs: [i32; COLL_MAX_SIZE] = core::array::from_fn(|q| (q * (q + 1) / 2) as i32);
    let total = n * (n + 1) / 2;
    let mut v = [0u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2];
    let p0 = c.process_at_rank(0);
    if r == 0 {
        let mut part = PartitionMut::new(&mut v[..total], &counts[..n], &displs[..n]);
        note(13, &p0.gather_varcount_into_root(&own[..r + 1], &mut part));
        words[13] = v[..total].iter().fold(0, |h, &x| hash(h, x));
    } else {
        note(13, &p0.gather_varcount_into(&own[..r + 1]));
    }

    let mut v = [0u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2];
    let mut part = PartitionMut::new(&mut v[..total], &counts[..n], &displs[..n]);
    note(14, &c.all_gather_varcount_into(&own[..r + 1], &mut part));
    words[14] = v[..total].iter().fold(0, |h, &x| hash(h, x));

    let mut buf = mine;
    let last = c.process_at_rank(n as i32 - 1);
    if r == n - 1 {
        note(15, &last.reduce_into_root_in_place(&mut buf[..count], op));
        words[15] = buf[..count].iter().fold(0, hash_mat);
    } else {
        note(15, &last.reduce_into(&buf[..count], op));
    }

    let mut buf = mine;
    note(16, &c.scan_in_place(&mut buf[..count], op));
    words[16] = buf[..count].iter().fold(0, hash_mat);

    // Scatterv from the last rank: part `q` is `q + 1` of its pattern words.
    let mut part = [0u32; COLL_MAX_SIZE];
    if r == n - 1 {
        let all: [u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2] =
            core::array::from_fn(|i| pattern_word(me, i));
        let send = Partition::new(&all[..total], &counts[..n], &displs[..n]);
        note(17, &last.scatter_varcount_into_root(&send, &mut part[..r + 1]));
    } else {
        note(17, &last.scatter_varcount_into(&mut part[..r + 1]));
    }
    words[17] = part[..r + 1].iter().fold(0, |h, &x| hash(h, x));

    // All-to-allv: rank `s` sends `(s + d) % 3` words to `d`, packed.
    let sc: [i32; COLL_MAX_SIZE] = core::array::from_fn(|d| ((r + d) % 3) as i32);
    let rc: [i32; COLL_MAX_SIZE] = core::array::from_fn(|s| ((s + r) % 3) as i32);
    let sd: [i32; COLL_MAX_SIZE] = core::array::from_fn(|d| sc[..d].iter().sum());
    let rd: [i32; COLL_MAX_SIZE] = core::array::from_fn(|s| rc[..s].iter().sum());
    let stotal = sc[..n].iter().sum::<i32>() as usize;
    let rtotal = rc[..n].iter().sum::<i32>() as usize;
    let out: [u32; 2 * COLL_MAX_SIZE] = core::array::from_fn(|i| pattern_word(me, i));
    let mut inb = [0u32; 2 * COLL_MAX_SIZE];
    let send = Partition::new(&out[..stotal], &sc[..n], &sd[..n]);
    let mut recv = PartitionMut::new(&mut inb[..rtotal], &rc[..n], &rd[..n]);
    note(18, &c.all_to_all_varcount_into(&send, &mut recv));
    words[18] = inb[..rtotal].iter().fold(0, |h, &x| hash(h, x));

    // Reduce-scatter with counts `q % 2 + 1` (u32 sums of pattern words).
    let rs: [i32; COLL_MAX_SIZE] = core::array::from_fn(|q| (q % 2 + 1) as i32);
    let rs_total = rs[..n].iter().sum::<i32>() as usize;
    let mut mine_rs = [0u32; 2];
    let mine_n = rs[r] as usize;
    note(
        19,
        &c.reduce_scatter_into(
            &send_words(me)[..rs_total],
            &mut mine_rs[..mine_n],
            &rs[..n],
            SystemOperation::sum(),
        ),
    );
    words[19] = mine_rs[..mine_n].iter().fold(0, |h, &x| hash(h, x));

    // The in-place forms of the last four varcount collectives, on the
    // same data: the same results as words 19, 14, 13 and 17.
    let mut rs_buf = send_words(me);
    note(
        20,
        &c.reduce_scatter_in_place(&mut rs_buf[..rs_total], &rs[..n], SystemOperation::sum()),
    );
    words[20] = rs_buf[..mine_n].iter().fold(0, |h, &x| hash(h, x));

    let mut v = [0u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2];
    let at = displs[r] as usize;
    v[at..at + r + 1].copy_from_slice(&own[..r + 1]);
    let mut part = PartitionMut::new(&mut v[..total], &counts[..n], &displs[..n]);
    note(21, &c.all_gather_varcount_in_place(&mut part));
    words[21] = v[..total].iter().fold(0, |h, &x| hash(h, x));

    let mut v = [0u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2];
    if r == 0 {
        v[0] = own[0];
        let mut part = PartitionMut::new(&mut v[..total], &counts[..n], &displs[..n]);
        note(22, &p0.gather_varcount_into_root_in_place(&mut part));
        words[22] = v[..total].iter().fold(0, |h, &x| hash(h, x));
    } else {
        note(22, &p0.gather_varcount_into(&own[..r + 1]));
    }

    let mut part = [0u32; COLL_MAX_SIZE];
    if r == n - 1 {
        let all: [u32; COLL_MAX_SIZE * (COLL_MAX_SIZE + 1) / 2] =
            core::array::from_fn(|i| pattern_word(me, i));
        let send = Partition::new(&all[..total], &counts[..n], &displs[..n]);
        note(23, &last.scatter_varcount_into_root_in_place(&send));
    } else {
        note(23, &last.scatter_varcount_into(&mut part[..r + 1]));
    }
    words[23] = part[..r + 1].iter().fold(0, |h, &x| hash(h, x));

    // All-to-allv in place: part `s` of the buffer (packed as word 18's
    // receive buffer) starts as this rank's words for `s`, at the offset
    // where rank `s` keeps its part for this rank, so the result is word
    // 18's.
    let mut io = out;
    let mut part = PartitionMut::new(&mut io[..rtotal], &rc[..n], &rd[..n]);
    note(24, &c.all_to_all_varcount_in_place(&mut part));
    words[24] = io[..rtotal].iter().fold(0, |h, &x| hash(h, x));

    rec.push(classes)?;
    rec.words(&words)
}

/// The first `2 × COLL_MAX_SIZE` pattern words of world rank `me`.
fn send_words(me: u32) -> [u32; 2 * COLL_MAX_SIZE] {
    core::array::from_fn(|i| pattern_word(me, i))
}
