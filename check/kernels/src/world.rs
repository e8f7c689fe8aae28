//! Whole-world programs: sums by point-to-point and by all-reduce over
//! thousands of ranks, a message larger than a slot from a rank's stack,
//! and world reductions of a non-commutative operation in every block
//! shape. One kernel, the program picked by [`WorldArgs::program`];
//! check/tests/world.rs computes what each must leave.

use super::p2p::Mat2;
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{SystemOperation, UserOperation};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Every rank sends [`part`] of its rank to rank 0, which adds them in rank
/// order (checking each status's source) and writes the sum to `sums[0]`.
pub const W_GATHER_SUM: u32 = 0;
/// The parts are all-reduced by the sum; rank `r` writes its result to
/// `sums[r]`.
pub const W_ALL_REDUCE_SUM: u32 = 1;
/// Rank 0 sends [`BIG_WORDS`] `u64`s (`3 i`) from its stack to the last
/// rank (tag 9), which receives them on its stack and writes them to
/// `words`.
pub const W_BIG_MESSAGE: u32 = 2;
/// Every rank all-reduces [`MATRICES`] matrices ([`matrix_operand`]) by the
/// product (several rounds of `collective_bytes`), then reduces them to
/// `root`. Rank `r` writes its all-reduce result to `matrices[2 MATRICES
/// r..]` and the root its reduce result after it.
pub const W_MATRIX_REDUCTIONS: u32 = 3;
/// Every rank (at most [`EXCHANGE_RANKS`]) sends [`exchange_word`]`(r, d)`
/// to rank `d` by all-to-all, then all-gathers [`GATHERED_WORDS`] words
/// ([`gathered_word`]); rank `r`'s results are `words[EXCHANGE_WORDS r..]`:
/// the `n` words received, then the `n × GATHERED_WORDS` gathered. Every
/// rank receives straight into `words`, but rank `root` (when it is a rank)
/// into arrays on its stack, which it then copies there: the other ranks
/// cannot reach those, so every rank stages the data.
pub const W_EXCHANGES: u32 = 4;

/// `u64`s of [`W_BIG_MESSAGE`]'s message.
pub const BIG_WORDS: usize = 1000;
/// Matrices per rank of [`W_MATRIX_REDUCTIONS`].
pub const MATRICES: usize = 40;
/// The largest world of [`W_EXCHANGES`].
pub const EXCHANGE_RANKS: usize = 64;
/// Words of each rank's all-gather part in [`W_EXCHANGES`].
pub const GATHERED_WORDS: usize = 3;
/// Words of `words` per rank of [`W_EXCHANGES`] (room for the largest world).
pub const EXCHANGE_WORDS: usize = EXCHANGE_RANKS * (1 + GATHERED_WORDS);

/// What rank `s` sends rank `d` in [`W_EXCHANGES`]' all-to-all.
pub fn exchange_word(s: u32, d: u32) -> u64 {
    u64::from(s) * 1000 + u64::from(d)
}

/// Word `i` of rank `r`'s all-gather part in [`W_EXCHANGES`].
pub fn gathered_word(r: u32, i: u32) -> u64 {
    u64::from(r) * 7 + u64::from(i) + 1
}

/// The arguments of [`SEMANTICS_WORLD`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct WorldArgs {
    /// Which program (the `W_*` constants).
    pub program: u32,
    /// The reduce's root of [`W_MATRIX_REDUCTIONS`].
    pub root: i32,
    /// The sums of [`W_GATHER_SUM`] and [`W_ALL_REDUCE_SUM`].
    pub sums: GlobalSlice<f64>,
    /// The message of [`W_BIG_MESSAGE`].
    pub words: GlobalSlice<u64>,
    /// The results of [`W_MATRIX_REDUCTIONS`].
    pub matrices: GlobalSlice<Mat2>,
}

/// Rank `rank`'s part of the sums: `1 / (1 + rank)`.
pub fn part(rank: i32) -> f64 {
    1.0 / (1.0 + rank as f64)
}

/// Element `i` of rank `r`'s operand of [`W_MATRIX_REDUCTIONS`].
pub fn matrix_operand(r: u32, i: u32) -> Mat2 {
    Mat2 {
        a: 1,
        b: r.wrapping_mul(7).wrapping_add(i),
        c: (r ^ i) & 3,
        d: 1,
    }
}

gpu_mpi_device::kernel! {
    /// The `W_*` programs.
    pub static SEMANTICS_WORLD = fn semantics_world(world: &World, a: &WorldArgs) -> Result<(), Error> {
        match a.program {
            W_GATHER_SUM => gather_sum(world, a),
            W_ALL_REDUCE_SUM => {
                let mut sum = 0.0f64;
                world.all_reduce_into(&part(world.rank()), &mut sum, SystemOperation::sum())?;
                a.sums.write(world.rank() as usize, sum)
            }
            W_BIG_MESSAGE => big_message(world, a),
            W_MATRIX_REDUCTIONS => matrix_reductions(world, a),
            W_EXCHANGES => exchanges(world, a),
            _ => Err(Error::OutOfBounds { index: a.program, len: W_EXCHANGES + 1 }),
        }
    }
}

fn gather_sum(world: &World, a: &WorldArgs) -> Result<(), Error> {
    if world.rank() != 0 {
        return world.process_at_rank(0).send(&part(world.rank()));
    }
    let mut sum = part(0);
    for source in 1..world.size() {
        let (v, status) = world.process_at_rank(source).receive::<f64>()?;
        // A status naming another source fails the launch.
        if status.source_rank() != source {
            return Err(Error::InvalidRank {
                rank: status.source_rank(),
                size: world.size(),
            });
        }
        sum += v;
    }
    a.sums.write(0, sum)
}

fn big_message(world: &World, a: &WorldArgs) -> Result<(), Error> {
    let last = world.size() - 1;
    if world.rank() == 0 {
        let mut data = [0u64; BIG_WORDS];
        for (i, v) in data.iter_mut().enumerate() {
            *v = i as u64 * 3;
        }
        world.process_at_rank(last).send_with_tag(&data[..], 9)?;
    } else if world.rank() == last {
        let mut data = [0u64; BIG_WORDS];
        world.process_at_rank(0).receive_into_with_tag(&mut data[..], 9)?;
        for (i, v) in data.iter().enumerate() {
            a.words.write(i, *v)?;
        }
    }
    Ok(())
}

fn matrix_reductions(world: &World, a: &WorldArgs) -> Result<(), Error> {
    let me = world.rank() as u32;
    let mut send = [Mat2::default(); MATRICES];
    for (i, m) in send.iter_mut().enumerate() {
        *m = matrix_operand(me, i as u32);
    }
    let op = UserOperation::associative(|l: &Mat2, r: &Mat2| l.mul(r));
    let mut all = [Mat2::default(); MATRICES];
    world.all_reduce_into(&send[..], &mut all[..], op)?;
    let base = 2 * MATRICES * me as usize;
    for (i, m) in all.iter().enumerate() {
        a.matrices.write(base + i, *m)?;
    }
    let root = world.process_at_rank(a.root);
    if world.rank() == a.root {
        let mut at_root = [Mat2::default(); MATRICES];
        root.reduce_into_root(&send[..], &mut at_root[..], op)?;
        for (i, m) in at_root.iter().enumerate() {
            a.matrices.write(base + MATRICES + i, *m)?;
        }
    } else {
        root.reduce_into(&send[..], op)?;
    }
    Ok(())
}

fn exchanges(world: &World, a: &WorldArgs) -> Result<(), Error> {
    let (me, n) = (world.rank() as u32, world.size() as usize);
    if n > EXCHANGE_RANKS {
        return Err(Error::OutOfBounds {
            index: n as u32,
            len: EXCHANGE_RANKS as u32,
        });
    }
    let base = EXCHANGE_WORDS * me as usize;
    let mut send = [0u64; EXCHANGE_RANKS];
    for (d, w) in send.iter_mut().enumerate().take(n) {
        *w = exchange_word(me, d as u32);
    }
    let mut part = [0u64; GATHERED_WORDS];
    for (i, w) in part.iter_mut().enumerate() {
        *w = gathered_word(me, i as u32);
    }
    let gathered = n * GATHERED_WORDS;
    if world.rank() == a.root {
        let mut exchanged = [0u64; EXCHANGE_RANKS];
        world.all_to_all_into(&send[..n], &mut exchanged[..n])?;
        let mut all = [0u64; EXCHANGE_RANKS * GATHERED_WORDS];
        world.all_gather_into(&part[..], &mut all[..gathered])?;
        for (i, w) in exchanged[..n].iter().chain(all[..gathered].iter()).enumerate() {
            a.words.write(base + i, *w)?;
        }
        return Ok(());
    }
    // SAFETY: this rank's own `EXCHANGE_WORDS` of `words`, which no other
    // rank touches outside the two collectives.
    let mine = unsafe { a.words.slice_mut(base, n + gathered)? };
    let (exchanged, all) = mine.split_at_mut(n);
    world.all_to_all_into(&send[..n], exchanged)?;
    world.all_gather_into(&part[..], all)
}
