//! The collectives of block and warp communicators (`split_shared`,
//! `split_by_warp`), which take the hardware paths of the device's
//! `collective/hardware.rs`: values for every root, non-commutative
//! operations, zero lengths, payloads larger than the block's shared
//! scratch, disagreements, and a rank that leaves. `param2` picks the
//! communicator: [`ON_BLOCK`] or [`ON_WARP`]. Rank `r` records
//! [`HW_STRIDE`] words at `r * stride`; check/tests/hwcomm.rs computes what
//! each must be.

use super::collectives::user_operand;
use super::p2p::Mat2;
use super::{CaseArgs, Recorder, NONE};
use gpu_mpi_device::collective::{SystemOperation, UserOperation};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, MutView, SimpleCommunicator, TypeRef, World};

/// Words each rank records.
pub const HW_STRIDE: u32 = 512;

/// `param2`: the communicator of `split_shared`.
pub const ON_BLOCK: u32 = 0;
/// `param2`: the communicator of `split_by_warp`.
pub const ON_WARP: u32 = 1;

/// Barrier and all-reduce: records the creation's class, the rank and
/// size, the barrier's class, then the class of an in-place all-reduce of
/// `param` [`Mat2`]s (element `i` of rank `q`: `user_operand(q, i)`, the
/// product in rank order) and its `4 × param` words, then the class and
/// value (low word) of an all-reduce sum of `rank + 1` as `u64`.
pub const H_ALL_REDUCE: u32 = 0;
/// For every root `t` of the communicator: a broadcast of `param` `u32`s
/// (at most [`HW_MAX_BROADCAST`])
/// (the root's element `j`: `1000 t + j`), a reduce to `t` of one
/// [`Mat2`] (`user_operand(q, t)`; in place at odd roots). Records, per
/// root: broadcast class, `sum of (j + 1) × element j` (wrapping), reduce
/// class, the four words of the result at the root (NONE elsewhere).
pub const H_ROOTS: u32 = 1;
/// Disagreements: rank `param` of the communicator calls a broadcast
/// (root 0) where the others call a barrier; then an all-reduce sum where
/// rank `param` passes 2 elements and the others 1; then a broadcast
/// where rank `param` names root 1 and the others root 0; then a correct
/// all-reduce sum of `rank + 1`. Records the four classes and the sum.
pub const H_MISMATCH: u32 = 2;
/// Rank `param` of the communicator returns from the kernel; the others
/// call a barrier on it (a deadlock on the emulator).
pub const H_EXIT: u32 = 3;
/// Deferred slot returns: world rank 1 sends `param + 1` messages
/// (`1..=param + 1`, tag 7) to world rank 0, which receives the first
/// before a barrier on the communicator and the rest after it. With
/// `param` slots per rank the last send needs the slot of the first
/// message, which rank 0 keeps deferred until it blocks: it must hand it
/// back at the barrier. Records the class of the sends (rank 1) or of the
/// receives (rank 0; 0 elsewhere), the barrier's class, and at rank 0 the
/// sum of the values received.
pub const H_DEFERRED: u32 = 4;
/// For every root `t`: a broadcast of a view of a vector type (`param`
/// `u32`s at stride 2, built in the kernel) over a buffer of `2 × param`
/// words: the root's element `j` (word `2j`) is `1000 t + j`; every odd
/// word of rank `q` is `0xAA00_0000 + q` before and must stay so. Records,
/// per root: the class, `sum of (j + 1) × element j` (wrapping), and how
/// many odd words changed.
pub const H_VIEW: u32 = 5;
/// An operation that one rank's element type does not take: rank `param`
/// passes `MPI_BAND` on `f32` (`MPI_ERR_OP` there), the others `MPI_SUM`,
/// to an all-reduce and then to a reduce to root 0 of `rank + 1`; then
/// every rank a correct all-reduce sum of `rank + 1`. Records the three
/// classes and the last sum (as an `f32`'s bits).
pub const H_BAD_OP: u32 = 8;
/// Scans: an inclusive scan in place of `param` [`Mat2`]s (element `i` of
/// rank `q`: `user_operand(q, i)`, the product in rank order), then an
/// exclusive scan of the same operands into a buffer preset to
/// [`SCAN_MARK`] (rank 0's stays so), then an exclusive scan in place and
/// an inclusive scan into another buffer of `rank + 1` as `u64` (sum).
/// Records the class and `4 × param` words of each matrix scan, then the
/// class and low word of each sum.
pub const H_SCAN: u32 = 6;
/// Scan disagreements: rank `param` of the communicator calls an
/// exclusive scan where the others call a scan (sum of one `u32`), then an
/// all-reduce where the others call a scan, then a scan of 2 elements
/// where the others pass 1; then a correct scan of `rank + 1`. Records,
/// per disagreement, the class and word 3 of the error's record (1: a
/// collective mismatch, 0: a count mismatch), then the class and sum.
pub const H_SCAN_MISMATCH: u32 = 7;

/// Gathers: `part = min(param, HW_MAX_PART, HW_MAX_GATHER / size)` `u32`s per rank
/// (element `j` of rank `q`: `gathered(q, j)`). An all-gather, then an
/// all-gather in place (the other parts preset to [`GATHER_MARK`]), then
/// for every root `t` a gather to `t` (in place at odd roots). Records
/// the class and [`weighted`] sum of each all-gather's result, then per
/// root the class and, at the root, the weighted sum (NONE elsewhere).
pub const H_GATHER: u32 = 9;
/// Gather disagreements: rank `param` of the communicator passes 2
/// elements to an all-gather where the others pass 1 (`MPI_ERR_COUNT`
/// everywhere); then a gather to root 0 whose root passes a receive
/// buffer one element short (`MPI_ERR_COUNT` everywhere, though only the
/// root's buffer is wrong); then rank `param` calls an all-gather where
/// the others gather to 0 (a collective mismatch); then a correct
/// all-gather. Records, per disagreement, the class and word 3 of the
/// error's record (1: a collective mismatch), then the class and weighted
/// sum of the last all-gather.
pub const H_GATHER_MISMATCH: u32 = 10;

/// Most elements per rank of [`H_GATHER`].
pub const HW_MAX_PART: u32 = 32;
/// Most elements of [`H_GATHER`]'s results (4400 bytes: more than the
/// block's shared scratch, so a block gathers in several rounds).
pub const HW_MAX_GATHER: u32 = 1100;

/// Scatters: `part = min(param, HW_MAX_PART, HW_MAX_GATHER / size)`
/// `u32`s per rank. For every root `t`, a scatter from `t` (in place at
/// odd roots) of parts whose element `j` for rank `q` is
/// `gathered(q, j) + 7 t`; records the class and [`weighted`] sum of the part received
/// (at an in-place root: of its own part, left in place). Then a scatter
/// from root 0 whose root passes a receive buffer one element longer
/// (`MPI_ERR_COUNT` everywhere), recording the class and word 3 of the
/// error's record, then a correct scatter from the last rank, recording
/// its class and sum.
pub const H_SCATTER: u32 = 11;

/// All-to-all: `part = min(param, HW_MAX_PART, HW_MAX_GATHER / size)`
/// `u32`s per pair of ranks; element `e` of the part rank `q` sends to
/// rank `d` is `gathered(q, d × part + e)`. An all-to-all; on a warp
/// communicator then one where the last rank's receive buffer is one
/// element longer than its send buffer (`MPI_ERR_COUNT` everywhere,
/// through the opening) and a correct one; then one in place. Records the
/// class and [`weighted`] sum of each result (the disagreement: its class
/// and word 3 of the error's record).
pub const H_ALL_TO_ALL: u32 = 12;

/// Rank `param % 256` of the communicator returns from the kernel; the
/// others enter collective [`EXIT_OPS`]`[param / 256]` on it, rooted at the
/// next rank (a deadlock on the emulator without a timeout; with one,
/// every rank that entered must fail). Records the collective's class.
pub const H_EXIT_IN: u32 = 13;

/// A count that only the root disagrees on, with root `param % size`: a
/// broadcast of 2 `u32`s at the root and 1 elsewhere, then a reduce sum
/// of 2 at the root and 1 elsewhere, then a correct all-reduce sum of
/// `rank + 1`. With `param` from [`NOT_A_MEMBER`] on, every rank names
/// root `size + param - NOT_A_MEMBER` (no member) and member 0 passes the
/// 2. Records, for each of the two, the error's class, count and expected
/// count (zeros for none), then the class and the sum.
pub const H_ROOT_COUNT: u32 = 14;

/// [`H_ROOT_COUNT`]'s first `param` that names a root outside the
/// communicator.
pub const NOT_A_MEMBER: u32 = 1000;

/// The collectives of [`H_EXIT_IN`], by index.
pub const EXIT_OPS: [&str; 10] = [
    "barrier",
    "broadcast",
    "reduce",
    "all-reduce",
    "scan",
    "gather",
    "scatter",
    "all-gather",
    "all-to-all",
    "exclusive scan",
];

/// Element `j` of rank `q`'s part in [`H_GATHER`].
pub fn gathered(q: u32, j: u32) -> u32 {
    1000 * q + j + 1
}

/// `sum of (i + 1) × x[i]`, wrapping: a checksum that sees every element
/// and its position.
pub fn weighted(x: &[u32]) -> u32 {
    x.iter()
        .enumerate()
        .fold(0u32, |s, (i, v)| s.wrapping_add(v.wrapping_mul(i as u32 + 1)))
}

/// What the parts of an in-place all-gather hold before the call.
pub const GATHER_MARK: u32 = 0x6A7E_0000;

fn communicator<'w>(world: &'w World, on: u32) -> Result<SimpleCommunicator<'w>, Error> {
    if on == ON_WARP {
        world.split_by_warp()
    } else {
        world.split_shared()
    }
}

fn class_of<T>(r: &Result<T, Error>) -> u32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as u32,
    }
}

fn mat_mul(x: &Mat2, y: &Mat2) -> Mat2 {
    x.mul(y)
}

/// Most elements of the broadcasts of [`H_ROOTS`] (1200 bytes; the
/// block's stage holds 4080, so one round).
pub const HW_MAX_COUNT: u32 = 300;
/// Most elements of [`H_ROOTS`]'s broadcast (4400 bytes: two rounds of
/// the block's stage).
pub const HW_MAX_BROADCAST: u32 = 1100;
/// Most matrices of [`H_ALL_REDUCE`] (1120 bytes).
pub const HW_MAX_MATRICES: u32 = 70;
/// Most matrices of [`H_SCAN`] (960 bytes: several rounds of a block
/// scan's stage in blocks of more than 2 warps, whose rounds hold
/// `4080 / (2 × (warps − 1) × 16)` matrices: 42 in a block of 100).
pub const HW_MAX_SCAN: u32 = 60;
/// What an exclusive scan's receive buffer holds before [`H_SCAN`]'s call.
pub const SCAN_MARK: Mat2 = Mat2 {
    a: 0x5CA0,
    b: 0x5CA1,
    c: 0x5CA2,
    d: 0x5CA3,
};

fn mismatch_words(r: &Result<(), Error>) -> [u32; 2] {
    match r {
        Ok(()) => [0, 0],
        Err(e) => {
            let w = e.to_words();
            [w[0], w[3]]
        }
    }
}

gpu_mpi_device::kernel! {
    /// The cases `H_*` of this module on the communicator `param2` picks.
    pub static SEMANTICS_HWCOMM = fn semantics_hwcomm(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        let c = communicator(world, args.param2);
        rec.push(class_of(&c))?;
        let c = c?;
        let (rank, size) = (c.rank(), c.size());
        rec.words(&[rank as u32, size as u32])?;
        let n = args.param.min(HW_MAX_COUNT) as usize;
        match args.case {
            H_ALL_REDUCE => {
                rec.push(class_of(&c.barrier()))?;
                let n = n.min(HW_MAX_MATRICES as usize);
                let mut mats = [Mat2::default(); HW_MAX_MATRICES as usize];
                for (i, m) in mats.iter_mut().enumerate().take(n) {
                    *m = user_operand(rank as u32, i as u32);
                }
                let op = UserOperation::associative(mat_mul);
                let r = c.all_reduce_in_place(&mut mats[..n], op);
                rec.push(class_of(&r))?;
                for m in &mats[..n] {
                    rec.words(&[m.a, m.b, m.c, m.d])?;
                }
                let mut x = 0u64;
                let r = c.all_reduce_into(&(rank as u64 + 1), &mut x, SystemOperation::sum());
                rec.words(&[class_of(&r), x as u32])
            }
            H_ROOTS => {
                let op = UserOperation::associative(mat_mul);
                let n = args.param.min(HW_MAX_BROADCAST) as usize;
                for t in 0..size {
                    let mut buf = [0u32; HW_MAX_BROADCAST as usize];
                    if rank == t {
                        for (j, v) in buf.iter_mut().enumerate().take(n) {
                            *v = 1000 * t as u32 + j as u32;
                        }
                    }
                    let root = c.process_at_rank(t);
                    let b = root.broadcast_into(&mut buf[..n]);
                    let sum = buf[..n]
                        .iter()
                        .enumerate()
                        .fold(0u32, |s, (j, v)| s.wrapping_add(v.wrapping_mul(j as u32 + 1)));
                    rec.words(&[class_of(&b), sum])?;
                    let mine = user_operand(rank as u32, t as u32);
                    let (r, got) = if rank == t {
                        if t % 2 == 1 {
                            let mut m = mine;
                            (root.reduce_into_root_in_place(&mut m, op), Some(m))
                        } else {
                            let mut m = Mat2::default();
                            (root.reduce_into_root(&mine, &mut m, op), Some(m))
                        }
                    } else {
                        (root.reduce_into(&mine, op), None)
                    };
                    rec.push(class_of(&r))?;
                    match got {
                        Some(m) => rec.words(&[m.a, m.b, m.c, m.d])?,
                        None => rec.words(&[NONE; 4])?,
                    }
                }
                Ok(())
            }
            H_MISMATCH => {
                let odd = rank == args.param as i32;
                let r = if odd {
                    let mut v = 5u32;
                    c.process_at_rank(0).broadcast_into(&mut v)
                } else {
                    c.barrier()
                };
                rec.push(class_of(&r))?;
                let two = [rank as u32; 2];
                let mut out = [0u32; 2];
                let k = if odd { 2 } else { 1 };
                let r = c.all_reduce_into(&two[..k], &mut out[..k], SystemOperation::sum());
                rec.push(class_of(&r))?;
                let mut v = rank as u32;
                let r = c.process_at_rank(if odd { 1 } else { 0 }).broadcast_into(&mut v);
                rec.push(class_of(&r))?;
                let mut s = 0u32;
                let r = c.all_reduce_into(&(rank as u32 + 1), &mut s, SystemOperation::sum());
                rec.words(&[class_of(&r), s])
            }
            H_DEFERRED => {
                let me = world.rank();
                let mut sum = 0u32;
                let mut r = Ok(());
                if me == 1 {
                    let to = world.process_at_rank(0);
                    r = (0..=args.param).try_for_each(|i| to.send_with_tag(&(i + 1), 7));
                } else if me == 0 {
                    let mut v = 0u32;
                    r = world.process_at_rank(1).receive_into_with_tag(&mut v, 7).map(|_| ());
                    sum = v;
                }
                let b = c.barrier();
                if me == 0 && r.is_ok() {
                    for _ in 0..args.param {
                        let mut v = 0u32;
                        r = world.process_at_rank(1).receive_into_with_tag(&mut v, 7).map(|_| ());
                        if r.is_err() {
                            break;
                        }
                        sum = sum.wrapping_add(v);
                    }
                }
                rec.words(&[class_of(&r), class_of(&b), sum])
            }
            H_VIEW => {
                let words = gpu_mpi_device::derived::vector::<u32>(n as u32, 1, 2);
                let ty = TypeRef::new(&words)?;
                for t in 0..size {
                    let mut buf = [0u32; 2 * HW_MAX_COUNT as usize];
                    for (k, v) in buf.iter_mut().enumerate().take(2 * n) {
                        *v = if k % 2 == 1 {
                            0xAA00_0000 + rank as u32
                        } else if rank == t {
                            1000 * t as u32 + k as u32 / 2
                        } else {
                            0
                        };
                    }
                    let b = {
                        let mut v = MutView::with_count_and_datatype(&mut buf[..2 * n], 1, &ty)?;
                        c.process_at_rank(t).broadcast_into(&mut v)
                    };
                    let sum = (0..n).fold(0u32, |s, j| s.wrapping_add(buf[2 * j].wrapping_mul(j as u32 + 1)));
                    let changed = (0..n).filter(|&j| buf[2 * j + 1] != 0xAA00_0000 + rank as u32).count();
                    rec.words(&[class_of(&b), sum, changed as u32])?;
                }
                Ok(())
            }
            H_BAD_OP => {
                let op = if rank == args.param as i32 {
                    SystemOperation::bitwise_and()
                } else {
                    SystemOperation::sum()
                };
                let mine = rank as f32 + 1.0;
                let mut out = 0f32;
                let all = c.all_reduce_into(&mine, &mut out, op);
                let root = c.process_at_rank(0);
                let one = if rank == 0 {
                    root.reduce_into_root(&mine, &mut out, op)
                } else {
                    root.reduce_into(&mine, op)
                };
                let mut sum = 0f32;
                let last = c.all_reduce_into(&mine, &mut sum, SystemOperation::sum());
                rec.words(&[class_of(&all), class_of(&one), class_of(&last), sum.to_bits()])
            }
            H_SCAN => {
                let n = n.min(HW_MAX_SCAN as usize);
                let op = UserOperation::associative(mat_mul);
                let mut mats = [Mat2::default(); HW_MAX_SCAN as usize];
                for (i, m) in mats.iter_mut().enumerate().take(n) {
                    *m = user_operand(rank as u32, i as u32);
                }
                let operands = mats;
                let r = c.scan_in_place(&mut mats[..n], op);
                rec.push(class_of(&r))?;
                for m in &mats[..n] {
                    rec.words(&[m.a, m.b, m.c, m.d])?;
                }
                let mut ex = [SCAN_MARK; HW_MAX_SCAN as usize];
                let r = c.exclusive_scan_into(&operands[..n], &mut ex[..n], op);
                rec.push(class_of(&r))?;
                for m in &ex[..n] {
                    rec.words(&[m.a, m.b, m.c, m.d])?;
                }
                let mut x = rank as u64 + 1;
                let r = c.exclusive_scan_in_place(&mut x, SystemOperation::sum());
                rec.words(&[class_of(&r), x as u32])?;
                let mut y = 0u64;
                let r = c.scan_into(&(rank as u64 + 1), &mut y, SystemOperation::sum());
                rec.words(&[class_of(&r), y as u32])
            }
            H_SCAN_MISMATCH => {
                let odd = rank == args.param as i32;
                let one = rank as u32 + 1;
                let mut out = [0u32; 2];
                let r = if odd {
                    c.exclusive_scan_into(&one, &mut out[0], SystemOperation::sum())
                } else {
                    c.scan_into(&one, &mut out[0], SystemOperation::sum())
                };
                rec.words(&mismatch_words(&r))?;
                let r = if odd {
                    c.all_reduce_into(&one, &mut out[0], SystemOperation::sum())
                } else {
                    c.scan_into(&one, &mut out[0], SystemOperation::sum())
                };
                rec.words(&mismatch_words(&r))?;
                let two = [one; 2];
                let k = if odd { 2 } else { 1 };
                let r = c.scan_into(&two[..k], &mut out[..k], SystemOperation::sum());
                rec.words(&mismatch_words(&r))?;
                let mut s = 0u32;
                let r = c.scan_into(&one, &mut s, SystemOperation::sum());
                rec.words(&[class_of(&r), s])
            }
            H_GATHER => {
                let me = rank as u32;
                let size = size as usize;
                let part = (args.param.min(HW_MAX_PART) as usize).min(HW_MAX_GATHER as usize / size);
                let mut mine = [0u32; HW_MAX_PART as usize];
                for (j, v) in mine.iter_mut().enumerate().take(part) {
                    *v = gathered(me, j as u32);
                }
                let all = part * size;
                let mut buf = [0u32; HW_MAX_GATHER as usize];
                let r = c.all_gather_into(&mine[..part], &mut buf[..all]);
                rec.words(&[class_of(&r), weighted(&buf[..all])])?;
                for (i, v) in buf.iter_mut().enumerate().take(all) {
                    *v = if i / part.max(1) == rank as usize { mine[i % part.max(1)] } else { GATHER_MARK };
                }
                let r = c.all_gather_in_place(&mut buf[..all]);
                rec.words(&[class_of(&r), weighted(&buf[..all])])?;
                for t in 0..size as i32 {
                    let root = c.process_at_rank(t);
                    let r = if rank != t {
                        if t % 2 == 1 {
                            let mut own = mine;
                            root.gather_into_root_in_place(&mut own[..part])
                        } else {
                            root.gather_into(&mine[..part])
                        }
                    } else {
                        buf = [GATHER_MARK; HW_MAX_GATHER as usize];
                        if t % 2 == 1 {
                            buf[t as usize * part..(t as usize + 1) * part].copy_from_slice(&mine[..part]);
                            root.gather_into_root_in_place(&mut buf[..all])
                        } else {
                            root.gather_into_root(&mine[..part], &mut buf[..all])
                        }
                    };
                    let sum = if rank == t { weighted(&buf[..all]) } else { NONE };
                    rec.words(&[class_of(&r), sum])?;
                }
                Ok(())
            }
            H_SCATTER => {
                let size = size as usize;
                let part = (args.param.min(HW_MAX_PART) as usize).min(HW_MAX_GATHER as usize / size);
                let all = part * size;
                let mut parts = [0u32; HW_MAX_GATHER as usize];
                for t in 0..size as i32 {
                    let root = c.process_at_rank(t);
                    let mut got = [0u32; HW_MAX_PART as usize + 1];
                    let r = if rank == t {
                        for (i, v) in parts.iter_mut().enumerate().take(all) {
                            *v = gathered((i / part.max(1)) as u32, (i % part.max(1)) as u32) + 7 * t as u32;
                        }
                        if t % 2 == 1 {
                            let r = root.scatter_into_root_in_place(&parts[..all]);
                            let own = t as usize * part;
                            got[..part].copy_from_slice(&parts[own..own + part]);
                            r
                        } else {
                            root.scatter_into_root(&parts[..all], &mut got[..part])
                        }
                    } else {
                        root.scatter_into(&mut got[..part])
                    };
                    rec.words(&[class_of(&r), weighted(&got[..part])])?;
                }
                let root = c.process_at_rank(0);
                let mut got = [0u32; HW_MAX_PART as usize + 1];
                let r = if rank == 0 {
                    root.scatter_into_root(&parts[..all], &mut got[..part + 1])
                } else {
                    root.scatter_into(&mut got[..part])
                };
                rec.words(&mismatch_words(&r))?;
                let last = c.process_at_rank(size as i32 - 1);
                let r = if rank == size as i32 - 1 {
                    for (i, v) in parts.iter_mut().enumerate().take(all) {
                        *v = gathered((i / part.max(1)) as u32, (i % part.max(1)) as u32);
                    }
                    last.scatter_into_root(&parts[..all], &mut got[..part])
                } else {
                    last.scatter_into(&mut got[..part])
                };
                rec.words(&[class_of(&r), weighted(&got[..part])])
            }
            H_GATHER_MISMATCH => {
                let odd = rank == args.param as i32;
                let me = rank as u32;
                let size = size as usize;
                let mine = [gathered(me, 0), gathered(me, 1)];
                let mut buf = [0u32; 2 * HW_MAX_COUNT as usize];
                let k = if odd { 2 } else { 1 };
                let r = c.all_gather_into(&mine[..k], &mut buf[..k * size]);
                rec.words(&mismatch_words(&r))?;
                let root = c.process_at_rank(0);
                let r = if rank == 0 {
                    root.gather_into_root(&mine[..1], &mut buf[..size - 1])
                } else {
                    root.gather_into(&mine[..1])
                };
                rec.words(&mismatch_words(&r))?;
                let r = if odd {
                    c.all_gather_into(&mine[..1], &mut buf[..size])
                } else if rank == 0 {
                    root.gather_into_root(&mine[..1], &mut buf[..size])
                } else {
                    root.gather_into(&mine[..1])
                };
                rec.words(&mismatch_words(&r))?;
                let r = c.all_gather_into(&mine[..1], &mut buf[..size]);
                rec.words(&[class_of(&r), weighted(&buf[..size])])
            }
            H_EXIT => {
                if rank == args.param as i32 {
                    return Ok(());
                }
                let r = c.barrier();
                rec.push(class_of(&r))
            }
            H_EXIT_IN => {
                let (odd, op) = ((args.param % 256) as i32, args.param / 256);
                if rank == odd {
                    return Ok(());
                }
                let root_rank = (odd + 1) % size;
                let root = c.process_at_rank(root_rank);
                let is_root = rank == root_rank;
                let n = size as usize;
                let mut buf = [rank as u32 + 1; 64];
                let mut all = [0u32; 64];
                let r = match op {
                    0 => c.barrier(),
                    1 => root.broadcast_into(&mut buf[..2]),
                    2 if is_root => root.reduce_into_root(&buf[..2], &mut all[..2], SystemOperation::sum()),
                    2 => root.reduce_into(&buf[..2], SystemOperation::sum()),
                    3 => c.all_reduce_into(&buf[..2], &mut all[..2], SystemOperation::sum()),
                    4 => c.scan_into(&buf[..2], &mut all[..2], SystemOperation::sum()),
                    5 if is_root => root.gather_into_root(&buf[..1], &mut all[..n]),
                    5 => root.gather_into(&buf[..1]),
                    6 if is_root => root.scatter_into_root(&buf[..n], &mut all[..1]),
                    6 => root.scatter_into(&mut all[..1]),
                    7 => c.all_gather_into(&buf[..1], &mut all[..n]),
                    8 => c.all_to_all_into(&buf[..n], &mut all[..n]),
                    _ => c.exclusive_scan_into(&buf[..2], &mut all[..2], SystemOperation::sum()),
                };
                rec.push(class_of(&r))
            }
            H_ROOT_COUNT => {
                let (t, odd) = match args.param.checked_sub(NOT_A_MEMBER) {
                    Some(past) => (size + past as i32, 0),
                    None => (args.param as i32 % size, args.param as i32 % size),
                };
                let root = c.process_at_rank(t);
                let k = if rank == odd { 2 } else { 1 };
                let count_words = |r: &Result<(), Error>| match r {
                    Ok(()) => [0; 3],
                    Err(e) => {
                        let w = e.to_words();
                        [w[0], w[1], w[2]]
                    }
                };
                let mut buf = [rank as u32 + 1; 2];
                let r = root.broadcast_into(&mut buf[..k]);
                rec.words(&count_words(&r))?;
                let mut sum = [0u32; 2];
                let r = if rank == t {
                    root.reduce_into_root(&buf[..k], &mut sum[..k], SystemOperation::sum())
                } else {
                    root.reduce_into(&buf[..k], SystemOperation::sum())
                };
                rec.words(&count_words(&r))?;
                let mut s = 0u32;
                let r = c.all_reduce_into(&(rank as u32 + 1), &mut s, SystemOperation::sum());
                rec.words(&[class_of(&r), s])
            }
            H_ALL_TO_ALL => {
                let size = size as usize;
                let part = (args.param.min(HW_MAX_PART) as usize).min(HW_MAX_GATHER as usize / size);
                let all = part * size;
                let mut send = [0u32; HW_MAX_GATHER as usize + 1];
                for (i, v) in send.iter_mut().enumerate().take(all) {
                    *v = gathered(rank as u32, i as u32);
                }
                let mut recv = [0u32; HW_MAX_GATHER as usize + 1];
                let r = c.all_to_all_into(&send[..all], &mut recv[..all]);
                rec.words(&[class_of(&r), weighted(&recv[..all])])?;
                if args.param2 == ON_WARP {
                    let longer = all + usize::from(rank == size as i32 - 1);
                    let r = c.all_to_all_into(&send[..all], &mut recv[..longer]);
                    rec.words(&mismatch_words(&r))?;
                    let r = c.all_to_all_into(&send[..all], &mut recv[..all]);
                    rec.words(&[class_of(&r), weighted(&recv[..all])])?;
                }
                let r = c.all_to_all_in_place(&mut send[..all]);
                rec.words(&[class_of(&r), weighted(&send[..all])])
            }
            _ => Ok(()),
        }
    }
}
