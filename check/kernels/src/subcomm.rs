//! Erroneous collectives on sub-communicators (message algorithms): every
//! rank that entered fails with one class, no data moves, and the next
//! collective of the communicator works (MPI 4.1 §6.1, §6.14;
//! docs/limits.md).
//!
//! Each rank records the class of every call (0: `Ok`) and the values it
//! holds after it; `param2` picks the communicator ([`ON_SPLIT`],
//! [`ON_SHARED`] or [`ON_PARITY`]).

use crate::{CaseArgs, Recorder};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::communicator::{Color, SimpleCommunicator};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// Words per rank of [`SEMANTICS_SUBCOMM`]'s records.
pub const SUB_STRIDE: u32 = 16;

/// The communicator: `split_by_color_with_key(0, -rank)` (one
/// communicator, ranks reversed; the message algorithms).
pub const ON_SPLIT: u32 = 0;
/// The communicator: `split_shared` (a whole block: its varcount
/// collectives take the message algorithms, its barrier and all-reduce the
/// hardware).
pub const ON_SHARED: u32 = 1;
/// The communicator: `split_by_color_with_key(rank % 2, rank)` (two
/// communicators, interleaved ranks).
pub const ON_PARITY: u32 = 2;

/// A gather-varcount whose root (communicator rank 0) passes the
/// displacements `0, 1, .., -1` (its last part outside the buffer);
/// then a barrier and an all-reduce of 1 (records: class of the gather,
/// the root's buffer sum, class of the barrier, class and value of the
/// all-reduce).
pub const S_GATHERV_BAD_DISPLS: u32 = 1;
/// An all-to-all-varcount in which communicator rank `param` passes send
/// counts one short of the size; then a barrier and an all-reduce
/// (records as [`S_GATHERV_BAD_DISPLS`], the receive buffer's sum).
pub const S_ALLTOALLV_SHORT_COUNTS: u32 = 2;
/// Communicator rank 0 broadcasts one `u32` (7) while the others reduce
/// one `u32` to root 0; then an all-reduce of 1 (records: class of the
/// first call, the value it left, class and value of the all-reduce).
pub const S_BROADCAST_AGAINST_REDUCE: u32 = 3;
/// A gather-varcount to communicator rank 0 in which rank 1 sends `a`
/// words and the root expects `b` (`param = a << 8 | b`), every other part
/// one word; launched with a `max_message_bytes` that `a` and `b` words
/// differ by at least. Then a correct gather-varcount (one word `rank +
/// 1` from each rank), a barrier and an all-reduce of 1 (records: class
/// of the first call, class and the root's sum of the second, then
/// `after`'s).
pub const S_GATHERV_LENGTHS: u32 = 4;
/// As [`S_GATHERV_LENGTHS`] for a scatter-varcount from rank 0: its part
/// for rank 1 is `a` words, rank 1 receives `b`.
pub const S_SCATTERV_LENGTHS: u32 = 5;
/// As [`S_GATHERV_LENGTHS`] for an all-to-all-varcount: rank 0 sends rank
/// 1 `a` words, rank 1 expects `b` from rank 0; every other pair one word.
pub const S_ALLTOALLV_LENGTHS: u32 = 6;
/// As [`S_ALLTOALLV_LENGTHS`] in place: rank 0's count for rank 1 is `a`
/// (both ways), rank 1's for rank 0 is `b`.
pub const S_ALLTOALLV_IN_PLACE_LENGTHS: u32 = 7;
/// Most ranks of a communicator in these cases.
pub const SUB_MAX: usize = 8;
/// Words of the buffers of the `*_LENGTHS` cases.
const LEN_WORDS: usize = 64;

/// Counts of `size` parts, one word each but `counts[at] = c`, and their
/// displacements (packed in rank order).
fn parts(size: usize, at: usize, c: i32) -> ([i32; SUB_MAX], [i32; SUB_MAX]) {
    let mut counts = [0i32; SUB_MAX];
    let mut displs = [0i32; SUB_MAX];
    let mut d = 0;
    for q in 0..size {
        counts[q] = if q == at { c } else { 1 };
        displs[q] = d;
        d += counts[q];
    }
    (counts, displs)
}

/// The erroneous varcount call of a `*_LENGTHS` case (`a` words on the
/// sending side of the odd part, `b` on the receiving side).
fn varcount_lengths<C: Communicator>(c: &C, case: u32, a: usize, b: usize) -> Result<(), Error> {
    let (rank, size) = (c.rank() as usize, c.size() as usize);
    let root = c.process_at_rank(0);
    let send = [rank as u32 + 1; LEN_WORDS];
    let mut recv = [0u32; LEN_WORDS];
    let total = |counts: &[i32]| counts.iter().sum::<i32>() as usize;
    match case {
        S_GATHERV_LENGTHS if rank == 0 => {
            let (counts, displs) = parts(size, 1, b as i32);
            let n = total(&counts[..size]);
            let mut p = PartitionMut::new(&mut recv[..n], &counts[..size], &displs[..size]);
            root.gather_varcount_into_root(&send[..1], &mut p)
        }
        S_GATHERV_LENGTHS => root.gather_varcount_into(&send[..if rank == 1 { a } else { 1 }]),
        S_SCATTERV_LENGTHS if rank == 0 => {
            let (counts, displs) = parts(size, 1, a as i32);
            let n = total(&counts[..size]);
            let p = Partition::new(&send[..n], &counts[..size], &displs[..size]);
            root.scatter_varcount_into_root(&p, &mut recv[..1])
        }
        S_SCATTERV_LENGTHS => root.scatter_varcount_into(&mut recv[..if rank == 1 { b } else { 1 }]),
        S_ALLTOALLV_LENGTHS => {
            let (sc, sd) = parts(size, if rank == 0 { 1 } else { SUB_MAX }, a as i32);
            let (rc, rd) = parts(size, if rank == 1 { 0 } else { SUB_MAX }, b as i32);
            let (sn, rn) = (total(&sc[..size]), total(&rc[..size]));
            let s = Partition::new(&send[..sn], &sc[..size], &sd[..size]);
            let mut p = PartitionMut::new(&mut recv[..rn], &rc[..size], &rd[..size]);
            c.all_to_all_varcount_into(&s, &mut p)
        }
        _ => {
            let (counts, displs) = match rank {
                0 => parts(size, 1, a as i32),
                1 => parts(size, 0, b as i32),
                _ => parts(size, SUB_MAX, 0),
            };
            let n = total(&counts[..size]);
            let mut p = PartitionMut::new(&mut recv[..n], &counts[..size], &displs[..size]);
            c.all_to_all_varcount_in_place(&mut p)
        }
    }
}

fn class_of<T>(r: &Result<T, Error>) -> u32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as u32,
    }
}

fn communicator<'w>(world: &'w World, on: u32) -> Result<Option<SimpleCommunicator<'w>>, Error> {
    match on {
        ON_SHARED => world.split_shared().map(Some),
        ON_PARITY => world.split_by_color_with_key(Color::with_value(world.rank() as u32 % 2), world.rank()),
        _ => world.split_by_color_with_key(Color::with_value(0), -world.rank()),
    }
}

/// A barrier and an all-reduce of 1 after the erroneous call.
fn after<C: Communicator>(c: &C, rec: &mut Recorder) -> Result<(), Error> {
    rec.push(class_of(&c.barrier()))?;
    let mut s = 0u32;
    let r = c.all_reduce_into(&1u32, &mut s, SystemOperation::sum());
    rec.words(&[class_of(&r), s])
}

gpu_mpi_device::kernel! {
    /// The cases `S_*` of this module.
    pub static SEMANTICS_SUBCOMM = fn semantics_subcomm(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::with_stride(args.out, world.rank(), SUB_STRIDE);
        let c = communicator(world, args.param2);
        rec.push(class_of(&c))?;
        let Some(c) = c? else { return Ok(()) };
        let (rank, size) = (c.rank(), c.size() as usize);
        rec.words(&[rank as u32, size as u32])?;
        if size > SUB_MAX {
            return Ok(());
        }
        match args.case {
            S_GATHERV_BAD_DISPLS => {
                let root = c.process_at_rank(0);
                let mine = [rank as u32 + 1];
                let r = if rank == 0 {
                    let counts = [1i32; SUB_MAX];
                    let mut displs = [0i32; SUB_MAX];
                    for (i, d) in displs.iter_mut().enumerate().take(size) {
                        *d = if i + 1 == size { -1 } else { i as i32 };
                    }
                    let mut buf = [0u32; SUB_MAX];
                    let r = {
                        let mut p = PartitionMut::new(&mut buf[..size], &counts[..size], &displs[..size]);
                        root.gather_varcount_into_root(&mine[..], &mut p)
                    };
                    rec.words(&[class_of(&r), buf.iter().sum()])?;
                    r
                } else {
                    let r = root.gather_varcount_into(&mine[..]);
                    rec.words(&[class_of(&r), 0])?;
                    r
                };
                let _ = r;
                after(&c, &mut rec)
            }
            S_ALLTOALLV_SHORT_COUNTS => {
                let counts = [1i32; SUB_MAX];
                let mut displs = [0i32; SUB_MAX];
                for (i, d) in displs.iter_mut().enumerate() {
                    *d = i as i32;
                }
                let short = rank == args.param as i32;
                let k = if short { size - 1 } else { size };
                let send = [rank as u32 + 1; SUB_MAX];
                let mut recv = [0u32; SUB_MAX];
                let r = {
                    let s = gpu_mpi_device::collective::Partition::new(&send[..size], &counts[..k], &displs[..k]);
                    let mut p = PartitionMut::new(&mut recv[..size], &counts[..size], &displs[..size]);
                    c.all_to_all_varcount_into(&s, &mut p)
                };
                rec.words(&[class_of(&r), recv.iter().sum()])?;
                after(&c, &mut rec)
            }
            S_BROADCAST_AGAINST_REDUCE => {
                let root = c.process_at_rank(0);
                let mut v = 7u32;
                let r = if rank == 0 {
                    root.broadcast_into(&mut v)
                } else {
                    v = rank as u32;
                    root.reduce_into(&v, SystemOperation::sum())
                };
                rec.words(&[class_of(&r), v])?;
                let mut s = 0u32;
                let r = c.all_reduce_into(&1u32, &mut s, SystemOperation::sum());
                rec.words(&[class_of(&r), s])
            }
            S_GATHERV_LENGTHS..=S_ALLTOALLV_IN_PLACE_LENGTHS => {
                let (a, b) = ((args.param >> 8) as usize, (args.param & 0xff) as usize);
                rec.push(class_of(&varcount_lengths(&c, args.case, a, b)))?;
                // A correct gather-varcount: no piece of the call before
                // may be left for it.
                let root = c.process_at_rank(0);
                let mine = [rank as u32 + 1];
                let (r, sum) = if rank == 0 {
                    let (counts, displs) = parts(size, SUB_MAX, 0);
                    let mut buf = [0u32; SUB_MAX];
                    let r = {
                        let mut p = PartitionMut::new(&mut buf[..size], &counts[..size], &displs[..size]);
                        root.gather_varcount_into_root(&mine[..], &mut p)
                    };
                    (r, buf.iter().sum())
                } else {
                    (root.gather_varcount_into(&mine[..]), 0)
                };
                rec.words(&[class_of(&r), sum])?;
                after(&c, &mut rec)
            }
            _ => Ok(()),
        }
    }
}
