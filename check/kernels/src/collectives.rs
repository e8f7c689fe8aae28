//! Collective semantic kernels (MPI 4.1 chapter 6).

use super::p2p::Mat2;
use super::{pattern_word, prefix, prefix_mut, CaseArgs, Recorder, NONE};
use gpu_mpi_device::collective::{Operation, SystemOperation, UserOperation};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// Recorded per round by [`SEMANTICS_BARRIER`].
pub const BARRIER_WORDS: u32 = 3;

/// The value rank `r` writes into its cell in round `k` of [`SEMANTICS_BARRIER`].
pub fn barrier_value(round: u32, rank: u32) -> u32 {
    round.wrapping_mul(1_000_003).wrapping_add(rank).wrapping_add(1)
}

/// Probes of delay of rank `rank` before round `round` of
/// [`SEMANTICS_BARRIER`] (at most `max`): pseudo-random per rank and round
/// (a multiplicative hash), so that the ranks arrive in another order
/// every round; the last rank always waits the longest.
pub fn barrier_delay(round: u32, rank: u32, size: u32, max: u32) -> u32 {
    if rank + 1 == size {
        return max;
    }
    let h = (rank.wrapping_mul(0x9E37_79B9) ^ round.wrapping_mul(0x85EB_CA6B)).wrapping_mul(0xC2B2_AE35);
    (h >> 16) % (max + 1)
}

gpu_mpi_device::kernel! {
    /// Barrier visibility (MPI 6.3): `param` rounds; in each, every rank
    /// writes [`barrier_value`] into its cell (`cells[r]`) after
    /// [`barrier_delay`] probes (at most `param2`, the last rank's); barrier;
    /// every rank reads every cell
    /// and counts the wrong ones; barrier. Records per round: first barrier's
    /// class, wrong cells, second barrier's class.
    pub static SEMANTICS_BARRIER = fn semantics_barrier(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        for round in 0..args.param {
            for _ in 0..barrier_delay(round, rank as u32, size as u32, args.param2) {
                let _ = world.any_process().immediate_probe();
            }
            args.cells.write(rank as usize, barrier_value(round, rank as u32))?;
            let first = world.barrier();
            let mut wrong = 0u32;
            for j in 0..size as usize {
                if args.cells.read(j)? != barrier_value(round, j as u32) {
                    wrong += 1;
                }
            }
            let second = world.barrier();
            rec.class(&first)?;
            rec.push(wrong)?;
            rec.class(&second)?;
        }
        Ok(())
    }
}

/// `broadcast` case: root `param` broadcasts `param2` words from global
/// memory: rank `r` owns `cells[r * param2 ..][.. param2]`; the root fills
/// it with its [`pattern_word`]s, the others with `0xDEAD_0000 ^ i`.
/// Records: the class.
pub const BCAST_GLOBAL: u32 = 0;
/// `broadcast` case: every rank in turn is the root of a broadcast of
/// `param2` (at most [`BCAST_MAX_STACK`]) words on the stack, then of 5
/// `f64`. Records per root: class, wrong words, class, wrong values.
pub const BCAST_EVERY_ROOT: u32 = 1;
/// Largest `param2` of [`BCAST_EVERY_ROOT`].
pub const BCAST_MAX_STACK: u32 = 96;

/// Words one rank records in a `broadcast` case.
pub fn broadcast_stride(case: u32, size: u32) -> u32 {
    match case {
        BCAST_GLOBAL => 1,
        _ => 4 * size,
    }
}

/// What a non-root rank pre-fills its broadcast buffer with.
pub fn broadcast_fill(i: usize) -> u32 {
    0xDEAD_0000 ^ i as u32
}

gpu_mpi_device::kernel! {
    /// Broadcast (MPI 6.4): the `BCAST_*` cases.
    pub static SEMANTICS_BROADCAST = fn semantics_broadcast(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let n = args.param2 as usize;
        if args.case == BCAST_GLOBAL {
            let root = args.param as i32;
            // SAFETY: every rank touches only its own region of `cells`.
            let mine = unsafe { args.cells.slice_mut(rank as usize * n, n)? };
            for (i, w) in mine.iter_mut().enumerate() {
                *w = if rank == root { pattern_word(root as u32, i) } else { broadcast_fill(i) };
            }
            return rec.class(&world.process_at_rank(root).broadcast_into(mine));
        }
        let n = n.min(BCAST_MAX_STACK as usize);
        for root in 0..size {
            let mut buf = [0u32; BCAST_MAX_STACK as usize];
            let words = prefix_mut(&mut buf, n)?;
            for (i, w) in words.iter_mut().enumerate() {
                *w = if rank == root { pattern_word(root as u32, i) } else { broadcast_fill(i) };
            }
            let r = world.process_at_rank(root).broadcast_into(&mut *words);
            let wrong = words
                .iter()
                .enumerate()
                .filter(|&(i, &w)| w != pattern_word(root as u32, i))
                .count();
            rec.class(&r)?;
            rec.push(wrong as u32)?;
            let value = |i: usize| root as f64 * 10.0 + i as f64 * 0.25;
            let mut f = [-1.0f64; 5];
            if rank == root {
                for (i, v) in f.iter_mut().enumerate() {
                    *v = value(i);
                }
            }
            let r = world.process_at_rank(root).broadcast_into(&mut f[..]);
            let wrong = f.iter().enumerate().filter(|&(i, &v)| v != value(i)).count();
            rec.class(&r)?;
            rec.push(wrong as u32)?;
        }
        Ok(())
    }
}

/// A primitive type the reduction kernel tests, with the conversions that
/// build its operands and record its results.
pub trait Operand: gpu_mpi_device::Equivalence + Default {
    /// Whether the type is a float (bitwise and logical operations are
    /// then `MPI_ERR_OP`).
    const IS_FLOAT: bool;
    /// The integer `v`, wrapped into the type (floats: converted).
    fn from_i64(v: i64) -> Self;
    /// The float `v` (integers: truncated).
    fn from_f64(v: f64) -> Self;
    /// The value's bits, sign-extended for signed integers.
    fn bits(self) -> u64;
}

macro_rules! int_operand {
    ($($t:ty),*) => {$(
        impl Operand for $t {
            const IS_FLOAT: bool = false;
            fn from_i64(v: i64) -> Self { v as $t }
            fn from_f64(v: f64) -> Self { v as $t }
            fn bits(self) -> u64 { self as i64 as u64 }
        }
    )*};
}
int_operand!(u8, i8, u16, i16, u32, i32, u64, i64);

impl Operand for f32 {
    const IS_FLOAT: bool = true;
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Operand for f64 {
    const IS_FLOAT: bool = true;
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Codes of the predefined operations, in the order the reduction kernel
/// runs them: sum, product, min, max, bitwise and/or/xor, logical and/or.
pub const OPS: [u32; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];

/// The predefined operation with `code` (as [`SystemOperation::code`]).
pub fn system_operation(code: u32) -> SystemOperation {
    match code {
        1 => SystemOperation::sum(),
        2 => SystemOperation::product(),
        3 => SystemOperation::min(),
        4 => SystemOperation::max(),
        5 => SystemOperation::bitwise_and(),
        6 => SystemOperation::bitwise_or(),
        7 => SystemOperation::bitwise_xor(),
        8 => SystemOperation::logical_and(),
        _ => SystemOperation::logical_or(),
    }
}

/// Operand `i` of `rank` for operation `op` on an integer type (wrapped into
/// the type by `as`).
pub fn int_operand(op: u32, rank: u32, i: u32) -> i64 {
    let (r, i) = (rank as i64, i as i64);
    match op {
        1 => r * 7 + i * 3 - 50,
        2 => [1, -1, 2, 3, -1][((r * 3 + i) % 5) as usize],
        3 | 4 => (r * 37 + i * 11) % 101 - 50,
        5 => !(1i64 << ((r * 5 + i) % 61)),
        6 => 1i64 << ((r * 5 + i) % 61),
        7 => ((r + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)) ^ (i * 0x0123_4567),
        8 => {
            if i % 2 == 0 && (r + i) % 5 == 0 {
                0
            } else {
                (r + i) % 100 + 1
            }
        }
        _ => {
            if i % 3 != 0 && r == i % 7 {
                3
            } else {
                0
            }
        }
    }
}

/// Operand `i` of `rank` for operation `op` on a float type: small integers
/// and powers of two, so that every result is exact in any grouping.
pub fn float_operand(op: u32, rank: u32, i: u32) -> f64 {
    match op {
        1 => ((rank * 7 + i * 3) % 41) as f64 - 20.0,
        2 => [1.0, -1.0, 2.0, 0.5][((rank + i) % 4) as usize],
        3 | 4 => ((rank * 37 + i * 11) % 101) as f64 - 50.5,
        _ => 1.0,
    }
}

/// Operand `i` of `rank` for `op`, in `T`.
pub fn operand<T: Operand>(op: u32, rank: u32, i: u32) -> T {
    if T::IS_FLOAT {
        T::from_f64(float_operand(op, rank, i))
    } else {
        T::from_i64(int_operand(op, rank, i))
    }
}

/// `reduce` types, by case: u8, i8, u16, i16, u32, i32, u64, i64, f32, f64.
pub const REDUCE_TYPES: [&str; 10] = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64"];
/// Largest element count of [`SEMANTICS_REDUCE`].
pub const REDUCE_MAX_COUNT: u32 = 80;
/// `param2` of the reduction kernels for an all-reduce.
pub const ALL_RANKS: u32 = u32::MAX;
/// What receive buffers are pre-filled with (as `from_i64`).
pub const REDUCE_FILL: i64 = 0x5A;

/// Words one rank records in [`SEMANTICS_REDUCE`] with `count` elements.
pub fn reduce_stride(count: u32) -> u32 {
    OPS.len() as u32 * (1 + 2 * count)
}

gpu_mpi_device::kernel! {
    /// Reductions (MPI 6.9) of `param` elements of type `REDUCE_TYPES[case]`
    /// with every predefined operation in [`OPS`] order: an all-reduce when
    /// `param2` is [`ALL_RANKS`], else a reduce to root `param2`. Records per
    /// operation: the class, then per element the result's [`Operand::bits`]
    /// as 2 words (low first; the pre-fill where there is no result).
    pub static SEMANTICS_REDUCE = fn semantics_reduce(world: &World, args: &CaseArgs) -> Result<(), Error> {
        match args.case {
            0 => reduce_type::<u8>(world, args),
            1 => reduce_type::<i8>(world, args),
            2 => reduce_type::<u16>(world, args),
            3 => reduce_type::<i16>(world, args),
            4 => reduce_type::<u32>(world, args),
            5 => reduce_type::<i32>(world, args),
            6 => reduce_type::<u64>(world, args),
            7 => reduce_type::<i64>(world, args),
            8 => reduce_type::<f32>(world, args),
            _ => reduce_type::<f64>(world, args),
        }
    }
}

fn reduce_type<T: Operand>(world: &World, args: &CaseArgs) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let rank = world.rank();
    let mut rec = Recorder::new(args, rank);
    let n = args.param.min(REDUCE_MAX_COUNT) as usize;
    for op in OPS {
        let mut send = [T::default(); REDUCE_MAX_COUNT as usize];
        for (i, v) in send.iter_mut().enumerate() {
            *v = operand::<T>(op, rank as u32, i as u32);
        }
        let mut recv = [T::from_i64(REDUCE_FILL); REDUCE_MAX_COUNT as usize];
        let s = prefix(&send, n)?;
        let out = prefix_mut(&mut recv, n)?;
        let o = system_operation(op);
        let r = if args.param2 == ALL_RANKS {
            world.all_reduce_into(s, out, o)
        } else {
            let root = world.process_at_rank(args.param2 as i32);
            if rank as u32 == args.param2 {
                root.reduce_into_root(s, out, o)
            } else {
                root.reduce_into(s, o)
            }
        };
        rec.class(&r)?;
        for v in out.iter() {
            let b = v.bits();
            rec.words(&[b as u32, (b >> 32) as u32])?;
        }
    }
    Ok(())
}

/// Operand `i` of `rank` in [`SEMANTICS_USER_OP`]: `[1 + xy, x; y, 1]`
/// with `x = rank + i + 1`, `y = 2 rank + i + 3`. Its determinant is 1, so
/// products of many of them never collapse to zero modulo 2^32, and two of
/// them with different `x` do not commute.
pub fn user_operand(rank: u32, i: u32) -> Mat2 {
    let x = rank.wrapping_add(i).wrapping_add(1);
    let y = rank.wrapping_mul(2).wrapping_add(i).wrapping_add(3);
    Mat2 {
        a: x.wrapping_mul(y).wrapping_add(1),
        b: x,
        c: y,
        d: 1,
    }
}

/// Largest element count of [`SEMANTICS_USER_OP`].
pub const USER_OP_MAX_COUNT: u32 = 24;

/// Words one rank records in [`SEMANTICS_USER_OP`].
pub fn user_op_stride(count: u32) -> u32 {
    1 + 4 * count
}

fn mat_mul(x: &Mat2, y: &Mat2) -> Mat2 {
    x.mul(y)
}

gpu_mpi_device::kernel! {
    /// A non-commutative user operation (MPI 6.9.5): the product of 2x2
    /// matrices, `param` of them per rank ([`user_operand`]), all-reduced
    /// (`param2` = [`ALL_RANKS`]) or reduced to root `param2`. Records: the
    /// class, then the `param` result matrices (4 words each; zeros where
    /// there is no result).
    pub static SEMANTICS_USER_OP = fn semantics_user_op(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let rank = world.rank();
        let mut rec = Recorder::new(args, rank);
        let n = args.param.min(USER_OP_MAX_COUNT) as usize;
        let mut send = [Mat2::default(); USER_OP_MAX_COUNT as usize];
        for (i, m) in send.iter_mut().enumerate() {
            *m = user_operand(rank as u32, i as u32);
        }
        let mut recv = [Mat2::default(); USER_OP_MAX_COUNT as usize];
        let s = prefix(&send, n)?;
        let out = prefix_mut(&mut recv, n)?;
        let op = UserOperation::new(mat_mul);
        let r = if args.param2 == ALL_RANKS {
            world.all_reduce_into(s, out, op)
        } else {
            let root = world.process_at_rank(args.param2 as i32);
            if rank as u32 == args.param2 {
                root.reduce_into_root(s, out, op)
            } else {
                root.reduce_into(s, op)
            }
        };
        rec.class(&r)?;
        for m in out.iter() {
            rec.words(&[m.a, m.b, m.c, m.d])?;
        }
        Ok(())
    }
}

/// `count` case: all-reduce where the last rank passes 2 elements (send and
/// receive), the others 1.
pub const COUNT_ALL_REDUCE_SEND: u32 = 0;
/// `count` case: all-reduce where rank 0 receives into 2 elements but sends 1.
pub const COUNT_ALL_REDUCE_RECV: u32 = 1;
/// `count` case: broadcast from rank 0 of 5 words; the last rank passes 3.
pub const COUNT_BROADCAST: u32 = 2;
/// `count` case: reduce to rank 0 where rank 1 passes 2 elements.
pub const COUNT_REDUCE: u32 = 3;
/// `count` case: all-reduce of `u64` where the last rank passes 100
/// elements (4 rounds) and the others 40 (2 rounds).
pub const COUNT_ALL_REDUCE_ROUNDS: u32 = 4;
/// `count` case: rank 0 broadcasts `[7u32; 4]`; the last rank receives into
/// `[f32; 4]` (`MPI_ERR_TYPE`), rank 1 (when it is not the last) into
/// `[u8; 16]` (raw bytes: received), the others into `[u32; 4]`. The
/// recorded result word is the first received word (or [`NONE`]).
pub const COUNT_BROADCAST_TYPE: u32 = 5;
/// `count` case (roots): a world broadcast of 2 `u32`s (each rank's
/// buffer `rank + 100`) where even ranks name root 0 and odd ranks root
/// 1: two ranks believe themselves the root.
pub const ROOTS_EVEN_ODD: u32 = 6;
/// `count` case (roots): every rank names root 0 but the last, which
/// names root 1 (which names 0): one writer, one dissenter.
pub const ROOTS_LAST_DISSENTS: u32 = 7;
/// `count` case (roots): rank `r` names root `r mod 3`: three writers.
pub const ROOTS_MOD_THREE: u32 = 8;
/// `count` case (roots): rank `r` names root `(r + 1) mod size`: nobody
/// names itself, nobody writes.
pub const ROOTS_NEXT: u32 = 9;
/// `count` case (roots): every rank names root 0 but the last, which
/// names root `size` (invalid).
pub const ROOTS_LAST_INVALID: u32 = 10;
/// `count` case (roots): the ranks of the last block name root `1 mod
/// size`, the others root 0: with one block a correct broadcast from root
/// 1, with several a whole block against the others.
pub const ROOTS_LAST_BLOCK: u32 = 11;
/// `count` case (reduce roots): case `REDUCE_ROOTS + (c - ROOTS_EVEN_ODD)`
/// names the roots of `ROOTS_*` case `c` in a world reduce (sum) of
/// [`REDUCE_ROOTS_LEN`] `u64`s (rank `r` sends `r + 1` in each; two
/// staging rounds), the rank that names itself calling `reduce_into_root`
/// into a buffer of `rank + 100`s, the others `reduce_into`. The recorded
/// result word is the low word of the first element of that buffer (a
/// non-root's is never passed: `rank + 100`).
pub const REDUCE_ROOTS: u32 = 12;
/// The last reduce roots case (`ROOTS_LAST_BLOCK`'s).
pub const REDUCE_ROOTS_LAST: u32 = REDUCE_ROOTS + (ROOTS_LAST_BLOCK - ROOTS_EVEN_ODD);
/// Elements of a [`REDUCE_ROOTS`] case's reduce: more than one staging
/// round of the default 256-byte cells.
pub const REDUCE_ROOTS_LEN: usize = 40;
/// The root rank `rank` names in the `ROOTS_*` case `case`.
pub fn roots_case_root(case: u32, rank: i32, size: i32, block: i32) -> i32 {
    match case {
        ROOTS_EVEN_ODD => rank % 2,
        ROOTS_LAST_DISSENTS => i32::from(rank == size - 1),
        ROOTS_MOD_THREE => rank % 3,
        ROOTS_NEXT => (rank + 1) % size,
        ROOTS_LAST_INVALID if rank == size - 1 => size,
        ROOTS_LAST_BLOCK if rank >= size - block => 1 % size,
        _ => 0,
    }
}
/// Words per rank of [`SEMANTICS_COUNT`].
pub const COUNT_STRIDE: u32 = 5;

gpu_mpi_device::kernel! {
    /// Count mismatches in collectives (MPI 6.1: the amount of data sent
    /// must equal the amount received): the `COUNT_*` cases. Records: the
    /// collective's class, its first result word (or [`NONE`]), then a
    /// barrier's class and a valid all-reduce sum of 1 (class and value), to
    /// show that nobody hangs and the world still works.
    pub static SEMANTICS_COUNT = fn semantics_count(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let last = rank == size - 1;
        let sum = SystemOperation::sum();
        let mut out = [NONE; 2];
        let r = match args.case {
            COUNT_ALL_REDUCE_SEND => {
                let n = if last { 2 } else { 1 };
                world.all_reduce_into(prefix(&[1u32, 1], n)?, prefix_mut(&mut out, n)?, sum)
            }
            COUNT_ALL_REDUCE_RECV => {
                let n = if rank == 0 { 2 } else { 1 };
                world.all_reduce_into(&1u32, prefix_mut(&mut out, n)?, sum)
            }
            COUNT_BROADCAST => {
                let mut buf = [rank as u32; 5];
                let n = if last { 3 } else { 5 };
                let r = world.process_at_rank(0).broadcast_into(prefix_mut(&mut buf, n)?);
                out[0] = buf[0];
                r
            }
            COUNT_REDUCE => {
                let n = if rank == 1 { 2 } else { 1 };
                let root = world.process_at_rank(0);
                if rank == 0 {
                    root.reduce_into_root(prefix(&[1u32, 1], n)?, prefix_mut(&mut out, n)?, sum)
                } else {
                    root.reduce_into(prefix(&[1u32, 1], n)?, sum)
                }
            }
            COUNT_BROADCAST_TYPE => {
                let root = world.process_at_rank(0);
                if last && rank != 0 {
                    let mut f = [0.0f32; 4];
                    root.broadcast_into(&mut f[..])
                } else if rank == 1 {
                    let mut b = [0u8; 16];
                    let r = root.broadcast_into(&mut b[..]);
                    out[0] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    r
                } else {
                    let mut w = if rank == 0 { [7u32; 4] } else { [NONE; 4] };
                    let r = root.broadcast_into(&mut w[..]);
                    out[0] = w[0];
                    r
                }
            }
            ROOTS_EVEN_ODD..=ROOTS_LAST_BLOCK => {
                let root = roots_case_root(args.case, rank, size, world.block_size());
                let mut buf = [rank as u32 + 100; 2];
                let r = world.process_at_rank(root).broadcast_into(&mut buf[..]);
                out[0] = buf[0];
                r
            }
            REDUCE_ROOTS..=REDUCE_ROOTS_LAST => {
                let case = args.case - REDUCE_ROOTS + ROOTS_EVEN_ODD;
                let root = roots_case_root(case, rank, size, world.block_size());
                let send = [rank as u64 + 1; REDUCE_ROOTS_LEN];
                let mut recv = [rank as u64 + 100; REDUCE_ROOTS_LEN];
                let p = world.process_at_rank(root);
                let r = if root == rank {
                    p.reduce_into_root(&send[..], &mut recv[..], sum)
                } else {
                    p.reduce_into(&send[..], sum)
                };
                out[0] = recv[0] as u32;
                r
            }
            _ => {
                let n = if last { 100 } else { 40 };
                let send = [1u64; 100];
                let mut recv = [0u64; 100];
                let r = world.all_reduce_into(prefix(&send, n)?, prefix_mut(&mut recv, n)?, sum);
                out[0] = recv[0] as u32;
                r
            }
        };
        rec.class(&r)?;
        rec.push(out[0])?;
        rec.class(&world.barrier())?;
        let mut total = 0u32;
        let r = world.all_reduce_into(&1u32, &mut total, sum);
        rec.class(&r)?;
        rec.push(total)
    }
}
