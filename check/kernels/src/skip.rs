//! A collective that one rank never enters (issue 8, "a collective that
//! cannot complete fails everywhere"): rank `param` returns from the kernel
//! without entering collective `case` (after the split, when `param2` is 1:
//! then the collective runs on a communicator of every rank split from the
//! world, keys reversed); every other rank records `1 +` the class of what
//! the collective returned (1 for `Ok`) in `out[rank]` and returns it, so
//! that a timed-out wait keeps its record for the host's deadlock report.

use super::CaseArgs;
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::communicator::Color;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// How many collectives [`SEMANTICS_SKIP`] numbers (`case` 0 to 24):
/// barrier, broadcast, reduce, reduce in place, all-reduce, all-reduce in
/// place, gather, gather in place, gatherv, scatter, scatter in place,
/// scatterv, all-gather, all-gather in place, all-gatherv, all-to-all,
/// all-to-all in place, all-to-allv, reduce-scatter-block (and in place),
/// reduce-scatter, scan, scan in place, exclusive scan (and in place).
pub const SKIP_COLLECTIVES: u32 = 25;

/// Largest world of the cases.
const MAX_RANKS: usize = 8;

/// Runs collective `which` on `comm` (every rank the same, root 0, two
/// elements per rank and pair).
fn collective<C: Communicator + CommunicatorCollectives>(comm: &C, which: u32) -> Result<(), Error> {
    let (rank, size) = (comm.rank(), comm.size() as usize);
    let root = comm.process_at_rank(0);
    let is_root = rank == 0;
    let mine = [rank as u32 + 1, 10 * (rank as u32 + 1)];
    let mut all = [0u32; 2 * MAX_RANKS];
    let all = all.get_mut(..2 * size).ok_or(Error::Intern)?;
    let mut two = [0u32; 2];
    let counts = [2i32; MAX_RANKS];
    let counts = counts.get(..size).ok_or(Error::Intern)?;
    let displs = [0i32, 2, 4, 6, 8, 10, 12, 14];
    let displs = displs.get(..size).ok_or(Error::Intern)?;
    let sum = SystemOperation::sum();
    match which {
        0 => comm.barrier(),
        1 => root.broadcast_into(&mut two[..]),
        2 if is_root => root.reduce_into_root(&mine[..], &mut two[..], sum),
        2 => root.reduce_into(&mine[..], sum),
        3 if is_root => {
            two = mine;
            root.reduce_into_root_in_place(&mut two[..], sum)
        }
        3 => root.reduce_into(&mine[..], sum),
        4 => comm.all_reduce_into(&mine[..], &mut two[..], sum),
        5 => {
            two = mine;
            comm.all_reduce_in_place(&mut two[..], sum)
        }
        6 if is_root => root.gather_into_root(&mine[..], all),
        6 => root.gather_into(&mine[..]),
        7 if is_root => root.gather_into_root_in_place(all),
        7 => root.gather_into(&mine[..]),
        8 if is_root => {
            root.gather_varcount_into_root(&mine[..], &mut PartitionMut::new(all, counts, displs))
        }
        8 => root.gather_varcount_into(&mine[..]),
        9 if is_root => root.scatter_into_root(&all[..], &mut two[..]),
        9 => root.scatter_into(&mut two[..]),
        10 if is_root => root.scatter_into_root_in_place(&all[..]),
        10 => root.scatter_into(&mut two[..]),
        11 if is_root => {
            root.scatter_varcount_into_root(&Partition::new(&all[..], counts, displs), &mut two[..])
        }
        11 => root.scatter_varcount_into(&mut two[..]),
        12 => comm.all_gather_into(&mine[..], all),
        13 => comm.all_gather_in_place(all),
        14 => comm.all_gather_varcount_into(&mine[..], &mut PartitionMut::new(all, counts, displs)),
        15 => {
            let send = [rank as u32; 2 * MAX_RANKS];
            comm.all_to_all_into(send.get(..2 * size).ok_or(Error::Intern)?, all)
        }
        16 => comm.all_to_all_in_place(all),
        17 => {
            let send = [rank as u32; 2 * MAX_RANKS];
            let send = Partition::new(send.get(..2 * size).ok_or(Error::Intern)?, counts, displs);
            comm.all_to_all_varcount_into(&send, &mut PartitionMut::new(all, counts, displs))
        }
        18 => comm.reduce_scatter_block_into(&all[..], &mut two[..], sum),
        19 => comm.reduce_scatter_block_in_place(all, sum),
        20 => comm.reduce_scatter_into(&all[..], &mut two[..], counts, sum),
        21 => comm.scan_into(&mine[..], &mut two[..], sum),
        22 => {
            two = mine;
            comm.scan_in_place(&mut two[..], sum)
        }
        23 => comm.exclusive_scan_into(&mine[..], &mut two[..], sum),
        24 => {
            two = mine;
            comm.exclusive_scan_in_place(&mut two[..], sum)
        }
        _ => Err(Error::Intern),
    }
}

gpu_mpi_device::kernel! {
    /// Rank `param` returns at once (after the split, when `param2` is 1);
    /// every other rank runs collective `case`, records what it returned
    /// and returns it.
    pub static SEMANTICS_SKIP = fn semantics_skip(world: &World, a: &CaseArgs) -> Result<(), Error> {
        let comm = if a.param2 == 1 {
            let key = world.size() - 1 - world.rank();
            world.split_by_color_with_key(Color::with_value(0), key)?
        } else {
            None
        };
        if world.rank() as u32 == a.param {
            return Ok(());
        }
        let r = match &comm {
            Some(c) => collective(c, a.case),
            None => collective(world, a.case),
        };
        let class = match &r {
            Ok(()) => 0,
            Err(e) => e.class() as u32,
        };
        a.out.write(world.rank() as usize, 1 + class)?;
        r
    }
}
