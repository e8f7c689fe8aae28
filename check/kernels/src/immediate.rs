//! Non-blocking collectives of the world and of sub-communicators (MPI 4.1 §6.12): barrier,
//! broadcast, reduce and all-reduce started with `immediate_*`, completed
//! with `wait`, `test` and the slice calls, mixed with point-to-point
//! requests; their argument errors and bounds.

use super::collectives::user_operand;
use super::p2p::Mat2;
use super::rma::OPS;
use super::{CaseArgs, Recorder, NONE};
use gpu_mpi_device::collective::{Operation, SystemOperation, UserOperation};
use gpu_mpi_device::request::{self, wait_all, Request};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Color, Equivalence, Error, World};

/// Values, root `param`: broadcast of `[100 root + i; 4]` and an all-reduce
/// (sum of `[r + 1, 3 r]`) outstanding together,
/// completed by `wait_all`; then a reduce to the root (sum of `[r, r²]` as
/// `u64`) and a barrier, waited in the reverse order; then a
/// non-commutative all-reduce of two [`Mat2`] (`user_operand(r, i)`,
/// matrix product) and an in-place all-reduce (min of `r + 7`); then a
/// zero-length broadcast and an in-place reduce to the root (sum of
/// `[r, 1]`); then ten all-reduces (sum of `r + k`) one after another.
/// Records: the classes of every completion and the values (see the host
/// test).
pub const IC_VALUES: u32 = 0;
/// Overlap: an all-reduce (sum of `r`) and a broadcast from root `param`
/// outstanding while every rank receives from its left and sends to its
/// right (a blocking ring step, then posted requests in the same
/// `wait_all` as the collectives). Records: the ring values, every class,
/// the sum, the broadcast word.
pub const IC_OVERLAP: u32 = 1;
/// Test polling: every rank starts an all-reduce (sum of `r + 1`); the last
/// rank starts only after a message from rank 0, which rank 0 sends after
/// testing its request 50 times (none may complete: the last rank has not
/// started). Everyone then polls `test` until it completes. Records: tests
/// that completed early (rank 0), the class, the sum.
pub const IC_TEST_POLL: u32 = 2;
/// Argument errors, kind `param`: 0 count mismatch (the last rank passes 2
/// elements to an all-reduce, the others 1); 1 root mismatch (rank 1 names
/// root 1 for a broadcast, the others root 0); 2 root out of range (every
/// rank names root `size`); 3 too large (an all-reduce of 20 `u32`); 4
/// different collectives (rank 0 a barrier, the others an all-reduce); 5
/// receive count not the send count at the reduce's root; 6 the root
/// calls the non-root reduce form. Then an all-reduce (sum of 1) that must
/// succeed. Records: the class of the bad collective, the class and value
/// of the good one, the bad one's error words (`Error::to_words`), then
/// the class and value of an all-reduce (sum of 2) in the bad one's slot,
/// completed by tests.
pub const IC_ERRORS: u32 = 3;
/// The outstanding bound: two all-reduces started, a third gives
/// `MPI_ERR_REQUEST` at once; both are waited, then a third succeeds.
/// Records: the third's start class, the two waits' classes and sums, the
/// last's class and sum.
pub const IC_LIMIT: u32 = 4;
/// Every rank but rank 0 starts an all-reduce and waits (`param` 0) or
/// spins on `test` (`param` 1); rank 0 never starts it: a deadlock (a
/// livelock when spinning) that the emulator reports, or a timeout.
/// `param` 2: the same on the communicators of a split by `rank % 2`
/// (their rank 0 never starts; needs the world's state for them).
/// Records: the class the waiting ranks got.
pub const IC_NEVER_ENTERS: u32 = 5;

/// Sub-communicators: the world split by `rank % 3` with reversed keys
/// (strided members, communicator order the reverse of the world's), and
/// per block (`split_shared`). Outstanding together: a broadcast from the
/// communicator's rank `param % size` of `[100 root + i; 4]`, a
/// non-commutative all-reduce of two [`Mat2`] (`user_operand(world rank,
/// i)`, matrix product) on it, a world all-reduce and a block all-reduce
/// (sums of the world rank). Then a reduce to its root (sum of `[world
/// rank, 1]`) and a barrier outstanding, a third start (`MPI_ERR_REQUEST`)
/// and a world all-reduce (sum of 1); then a count disagreement (its rank
/// 0 passes two elements) and an all-reduce (sum of 1). Records: 0, the
/// values and classes in that order, the communicator's size and rank.
/// On a world without their state: the error words (`Error::to_words`) of
/// the broadcast's and a barrier's starts, then the class and sum of a
/// world all-reduce.
pub const IC_SUB_COMM: u32 = 6;

/// Words one rank records.
pub const IC_STRIDE: u32 = 48;
/// Every rank but rank 0 starts non-blocking collective `param` (0: a
/// barrier, 1: a broadcast from rank 1, 2: a reduce to rank 1, 3: an
/// all-reduce) and waits; rank 0 never starts it. Records: the class the
/// waiting ranks got.
pub const IC_NEVER_ENTERS_OP: u32 = 7;

/// Every predefined operation in a world all-reduce: for each integer
/// operation (the first nine of [`OPS`]: sum to logical or) an all-reduce
/// of three `i32` ([`int_operand`]), for each floating one (its first
/// four: sum to max) an all-reduce of two `f64` ([`float_operand`]). The first 8 bytes of each operand
/// fold through the tree's small words (two `i32`, one `f64`), the rest
/// through the cells. Records: the OR of the classes, then the 27 `i32`
/// results, then the 8 `f64` results (each as its low word, then its high
/// word).
pub const IC_OPS: u32 = 8;

/// Element `i` of rank `rank`'s `i32` operand in [`IC_OPS`]: small values
/// of both signs (element 1 never 0, so that a logical and is 1).
pub fn int_operand(rank: u32, i: u32) -> i32 {
    match i {
        0 => (rank % 7) as i32 - 3,
        1 => (rank % 5) as i32 + 1,
        _ => ((rank * 13 + 5) % 17) as i32 - 8,
    }
}

/// Element `i` of rank `rank`'s `f64` operand in [`IC_OPS`]: powers of two
/// from 1/4 to 4 (element 1 negated), so that every sum and product of a
/// world's operands is exact in any bracketing.
pub fn float_operand(rank: u32, i: u32) -> f64 {
    let x = [0.25, 0.5, 1.0, 2.0, 4.0][((rank + 2 * i) % 5) as usize];
    if i == 1 {
        -x
    } else {
        x
    }
}

/// An all-reduce of `[operand(0), operand(1), ...]` with each of `ops`
/// into the matching row of `outs`, each waited at once: the OR of their
/// classes.
fn all_reduce_each<T: Equivalence, const K: usize>(
    world: &World,
    ops: &[SystemOperation],
    operand: impl Fn(u32) -> T,
    outs: &mut [[T; K]],
) -> Result<u32, Error>
where
    SystemOperation: Operation<T>,
{
    let send: [T; K] = core::array::from_fn(|i| operand(i as u32));
    let mut classes = 0;
    for (op, out) in ops.iter().zip(outs.iter_mut()) {
        classes |= request::scope(|scope| -> Result<u32, Error> {
            Ok(class(
                &world
                    .immediate_all_reduce_into(scope, &send[..], &mut out[..], *op)?
                    .wait(),
            ))
        })?;
    }
    Ok(classes)
}

fn ops(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let r = world.rank() as u32;
    let mut ints = [[0i32; 3]; 9];
    let mut classes = all_reduce_each(world, &OPS[..9], |i| int_operand(r, i), &mut ints)?;
    let mut floats = [[0f64; 2]; 4];
    classes |= all_reduce_each(world, &OPS[..4], |i| float_operand(r, i), &mut floats)?;
    rec.push(classes)?;
    for v in ints.iter().flatten() {
        rec.push(*v as u32)?;
    }
    for v in floats.iter().flatten() {
        let bits = v.to_bits();
        rec.words(&[bits as u32, (bits >> 32) as u32])?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// The `IC_*` cases.
    pub static SEMANTICS_IMMEDIATE = fn semantics_immediate(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            IC_VALUES => values(world, args.param as i32, &mut rec),
            IC_OVERLAP => overlap(world, args.param as i32, &mut rec),
            IC_TEST_POLL => test_poll(world, &mut rec),
            IC_ERRORS => errors(world, args.param, &mut rec),
            IC_LIMIT => limit(world, &mut rec),
            IC_NEVER_ENTERS => never_enters(world, args.param, &mut rec),
            IC_SUB_COMM => sub_comm(world, args.param, &mut rec),
            IC_NEVER_ENTERS_OP => never_enters_op(world, args.param, &mut rec),
            IC_OPS => ops(world, &mut rec),
            _ => rec.push(NONE),
        }
    }
}

fn mat_mul(x: &Mat2, y: &Mat2) -> Mat2 {
    x.mul(y)
}

/// A broadcast's buffer: `[100 root + i; 4]` at the root, [`NONE`]
/// elsewhere.
fn broadcast_words(root: i32, is_root: bool) -> [u32; 4] {
    let b = 100 * root as u32;
    if is_root {
        [b, b + 1, b + 2, b + 3]
    } else {
        [NONE; 4]
    }
}

fn class(r: &Result<gpu_mpi_device::Status, Error>) -> u32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as u32,
    }
}

fn values(world: &World, root: i32, rec: &mut Recorder) -> Result<(), Error> {
    let r = world.rank() as u32;
    let is_root = world.rank() == root;
    let mut bcast = broadcast_words(root, is_root);
    let mut pair = [0u32; 2];
    let all = request::scope(|scope| -> Result<Result<(), Error>, Error> {
        let mut reqs = [
            world
                .process_at_rank(root)
                .immediate_broadcast_into(scope, &mut bcast[..])?,
            world.immediate_all_reduce_into(
                scope,
                &[r + 1, 3 * r][..],
                &mut pair[..],
                SystemOperation::sum(),
            )?,
        ];
        Ok(wait_all(&mut reqs, &mut []))
    })?;
    rec.push(all.err().map_or(0, |e| e.class() as u32))?;
    rec.words(&bcast)?;
    rec.words(&pair)?;

    let mut red = [NONE as u64; 2];
    let (c_red, c_bar) = request::scope(|scope| -> Result<(u32, u32), Error> {
        let send = [r as u64, (r as u64) * (r as u64)];
        let p = world.process_at_rank(root);
        let red_req = if is_root {
            p.immediate_reduce_into_root(scope, &send[..], &mut red[..], SystemOperation::sum())?
        } else {
            p.immediate_reduce_into(scope, &send[..], SystemOperation::sum())?
        };
        let bar = world.immediate_barrier(scope)?;
        let c_bar = class(&bar.wait());
        Ok((class(&red_req.wait()), c_bar))
    })?;
    rec.words(&[c_red, c_bar])?;
    rec.words(&[
        red[0] as u32,
        (red[0] >> 32) as u32,
        red[1] as u32,
        (red[1] >> 32) as u32,
    ])?;

    let mut mats = [Mat2::default(); 2];
    let mut min = r + 7;
    let (c_mat, c_min) = request::scope(|scope| -> Result<(u32, u32), Error> {
        let send = [user_operand(r, 0), user_operand(r, 1)];
        let a =
            world.immediate_all_reduce_into(scope, &send[..], &mut mats[..], UserOperation::new(mat_mul))?;
        let b = world.immediate_all_reduce_in_place(scope, &mut min, SystemOperation::min())?;
        Ok((class(&a.wait()), class(&b.wait())))
    })?;
    rec.words(&[c_mat, c_min, min])?;
    for m in &mats {
        rec.words(&[m.a, m.b, m.c, m.d])?;
    }

    let mut empty: [u32; 0] = [];
    let mut own = [r, 1];
    let (c_empty, c_inplace) = request::scope(|scope| -> Result<(u32, u32), Error> {
        let a = world
            .process_at_rank(root)
            .immediate_broadcast_into(scope, &mut empty[..])?;
        let p = world.process_at_rank(root);
        let b = if is_root {
            p.immediate_reduce_into_root_in_place(scope, &mut own[..], SystemOperation::sum())?
        } else {
            p.immediate_reduce_into(scope, &[r, 1][..], SystemOperation::sum())?
        };
        Ok((class(&a.wait()), class(&b.wait())))
    })?;
    rec.words(&[c_empty, c_inplace, own[0], own[1]])?;

    let mut sum = 0u32;
    let mut failures = 0u32;
    for k in 0..10u32 {
        let mut s = 0u32;
        let c = request::scope(|scope| -> Result<u32, Error> {
            let q = world.immediate_all_reduce_into(scope, &(r + k), &mut s, SystemOperation::sum())?;
            Ok(class(&q.wait()))
        })?;
        failures += (c != 0) as u32;
        sum = sum.wrapping_add(s);
    }
    rec.words(&[failures, sum])
}

fn overlap(world: &World, root: i32, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    let mut sum = 0u32;
    let mut word = if rank == root { 1000 + root as u32 } else { NONE };
    let mut first = NONE;
    let mut second = NONE;
    let mut classes = [NONE; 4];
    let (ring1, ring2) = (10 * r, 20 * r);
    request::scope(|scope| -> Result<(), Error> {
        let a = world.immediate_all_reduce_into(scope, &r, &mut sum, SystemOperation::sum())?;
        let b = world
            .process_at_rank(root)
            .immediate_broadcast_into(scope, &mut word)?;
        // A ring step while both collectives are outstanding.
        let s1 = world
            .process_at_rank(right)
            .immediate_send_with_tag(scope, &ring1, 1)?;
        world.process_at_rank(left).receive_into_with_tag(&mut first, 1)?;
        s1.wait()?;
        let mut reqs = [
            a,
            world
                .process_at_rank(left)
                .immediate_receive_into_with_tag(scope, &mut second, 2)?,
            b,
            world
                .process_at_rank(right)
                .immediate_send_with_tag(scope, &ring2, 2)?,
        ];
        let mut statuses = [gpu_mpi_device::Status::empty(); 4];
        let all = wait_all(&mut reqs, &mut statuses);
        classes = [
            all.err().map_or(0, |e| e.class() as u32),
            statuses[1].source_rank() as u32,
            statuses[1].tag() as u32,
            statuses[3].tag() as u32,
        ];
        Ok(())
    })?;
    rec.words(&[first, second])?;
    rec.words(&classes)?;
    rec.words(&[sum, word])
}

fn test_poll(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    let last = size - 1;
    let mut sum = 0u32;
    let mut early = 0u32;
    let mut outcome = NONE;
    if rank == last && last != 0 {
        let mut go = 0u32;
        world.process_at_rank(0).receive_into_with_tag(&mut go, 5)?;
    }
    request::scope(|scope| -> Result<(), Error> {
        let mut q = world.immediate_all_reduce_into(scope, &(r + 1), &mut sum, SystemOperation::sum())?;
        if rank == 0 && last != 0 {
            for _ in 0..50 {
                if let Some(res) = q.test() {
                    early += 1;
                    outcome = class(&res);
                }
            }
            world.process_at_rank(last).send_with_tag(&1u32, 5)?;
        }
        while outcome == NONE {
            if let Some(res) = q.test() {
                outcome = class(&res);
            }
        }
        Ok(())
    })?;
    rec.words(&[early, outcome, sum])
}

fn errors(world: &World, kind: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    let last = rank == size - 1;
    let send = [r; 20];
    let mut recv = [0u32; 20];
    let mut w = r;
    let bad = request::scope(|scope| -> Result<[u32; 5], Error> {
        let q = match kind {
            0 => {
                let n = if last { 2 } else { 1 };
                world.immediate_all_reduce_into(scope, &send[..n], &mut recv[..n], SystemOperation::sum())?
            }
            1 => {
                let root = if rank == 1 { 1 } else { 0 };
                world
                    .process_at_rank(root)
                    .immediate_broadcast_into(scope, &mut w)?
            }
            2 => world
                .process_at_rank(size)
                .immediate_broadcast_into(scope, &mut w)?,
            3 => world.immediate_all_reduce_into(scope, &send[..], &mut recv[..], SystemOperation::sum())?,
            4 if rank == 0 => world.immediate_barrier(scope)?,
            4 => world.immediate_all_reduce_into(scope, &r, &mut w, SystemOperation::sum())?,
            5 if rank == 0 => world.process_at_rank(0).immediate_reduce_into_root(
                scope,
                &send[..2],
                &mut recv[..3],
                SystemOperation::sum(),
            )?,
            5 => world
                .process_at_rank(0)
                .immediate_reduce_into(scope, &send[..2], SystemOperation::sum())?,
            _ => world
                .process_at_rank(0)
                .immediate_reduce_into(scope, &r, SystemOperation::sum())?,
        };
        Ok(q.wait().err().map_or([0; 5], |e| e.to_words()))
    })?;
    let mut s = 0u32;
    let good = request::scope(|scope| -> Result<u32, Error> {
        let q = world.immediate_all_reduce_into(scope, &1u32, &mut s, SystemOperation::sum())?;
        Ok(class(&q.wait()))
    })?;
    rec.words(&[bad[0], good, s])?;
    rec.words(&bad)?;
    // The first slot again (its verdict word still the failed use's, a
    // clean verdict being `done`'s bit alone), completed by tests, which
    // read the record's words.
    let mut t = 0u32;
    let again = request::scope(|scope| -> Result<u32, Error> {
        let mut q = world.immediate_all_reduce_into(scope, &2u32, &mut t, SystemOperation::sum())?;
        loop {
            if let Some(r) = q.test() {
                return Ok(class(&r));
            }
        }
    })?;
    rec.words(&[again, t])
}

fn sub_comm(world: &World, param: u32, rec: &mut Recorder) -> Result<(), Error> {
    let rank = world.rank();
    let color = Color::with_value(rank as u32 % 3);
    let Some(sub) = world.split_by_color_with_key(color, -rank)? else {
        return rec.push(NONE);
    };
    let block = world.split_shared()?;
    let (n, me) = (sub.size(), sub.rank());
    let root = (param % n as u32) as i32;
    let r = rank as u32;
    let mut bcast = broadcast_words(root, me == root);
    let send = [user_operand(r, 0), user_operand(r, 1)];
    let mut mats = [Mat2::default(); 2];
    let (mut wsum, mut bsum) = (0u32, 0u32);
    let words = |e: Error| e.to_words();
    // Without the world's state for them: the errors of a broadcast and a
    // barrier on the communicator, then a world all-reduce.
    let first = request::scope(|scope| -> Result<Result<[u32; 4], [u32; 10]>, Error> {
        let b = match sub
            .process_at_rank(root)
            .immediate_broadcast_into(scope, &mut bcast)
        {
            Ok(q) => q,
            Err(e) => {
                let mut both = [0; 10];
                both[..5].copy_from_slice(&words(e));
                if let Err(e) = sub.immediate_barrier(scope) {
                    both[5..].copy_from_slice(&words(e));
                }
                return Ok(Err(both));
            }
        };
        let a =
            sub.immediate_all_reduce_into(scope, &send[..], &mut mats[..], UserOperation::new(mat_mul))?;
        let w = world.immediate_all_reduce_into(scope, &r, &mut wsum, SystemOperation::sum())?;
        let k = block.immediate_all_reduce_into(scope, &r, &mut bsum, SystemOperation::sum())?;
        Ok(Ok([
            class(&k.wait()),
            class(&w.wait()),
            class(&a.wait()),
            class(&b.wait()),
        ]))
    })?;
    let classes = match first {
        Ok(c) => c,
        Err(both) => {
            rec.words(&both)?;
            let mut s = 0u32;
            let good = request::scope(|scope| -> Result<u32, Error> {
                let q = world.immediate_all_reduce_into(scope, &1u32, &mut s, SystemOperation::sum())?;
                Ok(class(&q.wait()))
            })?;
            return rec.words(&[good, s]);
        }
    };
    rec.push(0)?;
    rec.words(&bcast)?;
    for m in &mats {
        rec.words(&[m.a, m.b, m.c, m.d])?;
    }
    rec.words(&classes)?;
    rec.words(&[wsum, bsum])?;
    // A reduce to the root and a barrier outstanding on the communicator:
    // a third start there is `MPI_ERR_REQUEST`, while one on the world
    // (its own two slots) starts.
    let mut red = [NONE; 2];
    let mut ws = 0u32;
    let second = request::scope(|scope| -> Result<[u32; 4], Error> {
        let p = sub.process_at_rank(root);
        let q = if me == root {
            p.immediate_reduce_into_root(scope, &[r, 1][..], &mut red[..], SystemOperation::sum())?
        } else {
            p.immediate_reduce_into(scope, &[r, 1][..], SystemOperation::sum())?
        };
        let bar = sub.immediate_barrier(scope)?;
        let third = sub.immediate_barrier(scope).err().map_or(0, |e| e.class() as u32);
        let w = world.immediate_all_reduce_into(scope, &1u32, &mut ws, SystemOperation::sum())?;
        Ok([third, class(&q.wait()), class(&bar.wait()), class(&w.wait())])
    })?;
    rec.words(&second)?;
    rec.words(&red)?;
    rec.push(ws)?;
    // A count disagreement on the communicator (its rank 0 passes two
    // elements, the others one) fails every member; the next succeeds.
    let (mut x, mut s) = ([0u32; 2], 0u32);
    let third = request::scope(|scope| -> Result<[u32; 2], Error> {
        let len = if me == 0 { 2 } else { 1 };
        let q =
            sub.immediate_all_reduce_into(scope, &[1u32, 1][..len], &mut x[..len], SystemOperation::sum())?;
        let bad = class(&q.wait());
        let q = sub.immediate_all_reduce_into(scope, &1u32, &mut s, SystemOperation::sum())?;
        Ok([bad, class(&q.wait())])
    })?;
    rec.words(&third)?;
    rec.push(s)?;
    rec.words(&[n as u32, me as u32])
}

fn limit(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let r = world.rank() as u32;
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    let words = request::scope(|scope| -> Result<[u32; 5], Error> {
        let qa = world.immediate_all_reduce_into(scope, &r, &mut a, SystemOperation::sum())?;
        let qb = world.immediate_all_reduce_into(scope, &1u32, &mut b, SystemOperation::sum())?;
        let third = match world.immediate_all_reduce_into(scope, &2u32, &mut c, SystemOperation::sum()) {
            Ok(q) => {
                let _ = q.wait();
                0
            }
            Err(e) => e.class() as u32,
        };
        Ok([third, class(&qa.wait()), class(&qb.wait()), 0, 0])
    })?;
    rec.words(&words[..3])?;
    rec.words(&[a, b])?;
    let mut d = 0u32;
    let last = request::scope(|scope| -> Result<u32, Error> {
        let q = world.immediate_all_reduce_into(scope, &3u32, &mut d, SystemOperation::sum())?;
        Ok(class(&q.wait()))
    })?;
    rec.words(&[last, d])
}

fn never_enters(world: &World, spin: u32, rec: &mut Recorder) -> Result<(), Error> {
    if spin == 2 {
        let color = Color::with_value(world.rank() as u32 % 2);
        let Some(c) = world.split_by_color(color)? else {
            return rec.push(NONE);
        };
        if c.rank() == 0 {
            return rec.push(0);
        }
        let mut s = 0u32;
        let got = request::scope(|scope| -> Result<u32, Error> {
            let q = c.immediate_all_reduce_into(scope, &1u32, &mut s, SystemOperation::sum())?;
            Ok(class(&q.wait()))
        })?;
        return rec.push(got);
    }
    if world.rank() == 0 {
        return rec.push(0);
    }
    let mut s = 0u32;
    let got = request::scope(|scope| -> Result<u32, Error> {
        let mut q: Request<'_, '_> =
            world.immediate_all_reduce_into(scope, &1u32, &mut s, SystemOperation::sum())?;
        if spin == 0 {
            return Ok(class(&q.wait()));
        }
        loop {
            if let Some(res) = q.test() {
                return Ok(class(&res));
            }
            if world.aborted_by().is_some() {
                return Ok(Error::Aborted { by_rank: 0 }.class() as u32);
            }
        }
    })?;
    rec.push(got)
}

fn never_enters_op(world: &World, op: u32, rec: &mut Recorder) -> Result<(), Error> {
    if world.rank() == 0 {
        return rec.push(0);
    }
    let (mut buf, mut out) = ([world.rank() as u32; 2], [0u32; 2]);
    let root = world.process_at_rank(1);
    let got = request::scope(|scope| -> Result<u32, Error> {
        let q = match op {
            0 => world.immediate_barrier(scope)?,
            1 => root.immediate_broadcast_into(scope, &mut buf[..])?,
            2 if world.rank() == 1 => {
                root.immediate_reduce_into_root(scope, &buf[..], &mut out[..], SystemOperation::sum())?
            }
            2 => root.immediate_reduce_into(scope, &buf[..], SystemOperation::sum())?,
            _ => world.immediate_all_reduce_into(scope, &buf[..], &mut out[..], SystemOperation::sum())?,
        };
        Ok(class(&q.wait()))
    })?;
    rec.push(got)
}
