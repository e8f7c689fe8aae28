//! A collective that cannot complete fails everywhere (issue 8): one rank
//! returns from the kernel without entering the collective, in a world
//! with a timeout; every rank that entered it must return `Timeout` or
//! `Aborted` (none `Ok`, none another class, none hanging), and the
//! deadlock report must show the rank that never came as exited. Every
//! world collective and its in-place and varcount forms, with the missing
//! rank in another block than some entered ranks and in the same block as
//! others, and in a world of one block; then on a communicator split from
//! the world (the general algorithms; docs/semantics.md gives the rule).

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::communicator::Color;
use gpu_mpi_device::error::ErrorClass;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::wait::Call;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, WorldSpec};
use std::time::Duration;

/// The collectives of [`skip_one`], by number.
const COLLECTIVES: [(&str, Call); 25] = [
    ("barrier", Call::Barrier),
    ("broadcast", Call::Broadcast),
    ("reduce", Call::Reduce),
    ("reduce in place", Call::Reduce),
    ("all_reduce", Call::AllReduce),
    ("all_reduce in place", Call::AllReduce),
    ("gather", Call::Gather),
    ("gather in place", Call::Gather),
    ("gatherv", Call::Gather),
    ("scatter", Call::Scatter),
    ("scatter in place", Call::Scatter),
    ("scatterv", Call::Scatter),
    ("all_gather", Call::AllGather),
    ("all_gather in place", Call::AllGather),
    ("all_gatherv", Call::AllGather),
    ("all_to_all", Call::AllToAll),
    ("all_to_all in place", Call::AllToAll),
    ("all_to_allv", Call::AllToAll),
    ("reduce_scatter_block", Call::ReduceScatter),
    ("reduce_scatter_block in place", Call::ReduceScatter),
    ("reduce_scatter", Call::ReduceScatter),
    ("scan", Call::Scan),
    ("scan in place", Call::Scan),
    ("exclusive_scan", Call::Scan),
    ("exclusive_scan in place", Call::Scan),
];

/// Largest world of these tests.
const MAX_RANKS: usize = 8;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SkipArgs {
    /// Which collective (an index of [`COLLECTIVES`]).
    collective: u32,
    /// The rank that returns without entering it.
    skip: u32,
    /// 1: run it on a communicator of every rank split from the world
    /// (keys reversed, so its ranks are not the world's).
    split: u32,
    /// Unused (alignment).
    reserved: u32,
    /// Per world rank: 1 + the class of what the collective returned
    /// (1 for `Ok`), 0 if it did not return.
    out: GlobalSlice<u32>,
}

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
    /// Rank `skip` returns at once (after the split, when there is one);
    /// every other rank runs the collective, records what it returned and
    /// returns it.
    pub static SKIP_ONE = fn skip_one(world: &World, a: &SkipArgs) -> Result<(), Error> {
        let comm = if a.split == 1 {
            let key = world.size() - 1 - world.rank();
            world.split_by_color_with_key(Color::with_value(0), key)?
        } else {
            None
        };
        if world.rank() as u32 == a.skip {
            return Ok(());
        }
        let r = match &comm {
            Some(c) => collective(c, a.collective),
            None => collective(world, a.collective),
        };
        let class = match &r {
            Ok(()) => 0,
            Err(e) => e.class() as u32,
        };
        a.out.write(world.rank() as usize, 1 + class)?;
        r
    }
}

/// The wait bound of these worlds.
const TIMEOUT: Duration = Duration::from_millis(40);

/// Launches `which` with rank `skip` missing in a world of `ranks` in
/// blocks of `block` and checks every rank's result and the report.
fn check(d: &Device, which: usize, ranks: u32, block: u32, skip: u32, split: bool) {
    let (name, call) = COLLECTIVES[which];
    let what = format!("{name} ({ranks} ranks in blocks of {block}, rank {skip} missing, split {split})");
    let out = d.alloc_zeroed::<u32>(ranks as usize).unwrap();
    let args = SkipArgs {
        collective: which as u32,
        skip,
        split: split as u32,
        reserved: 0,
        out: out.slice(),
    };
    let spec = WorldSpec::ranks(ranks).block_dim(block).timeout(TIMEOUT);
    let e = d.launch(&SKIP_ONE, &args, &spec).unwrap_err();
    let HostError::Deadlock(rep) = &e else {
        panic!("{what}: expected a deadlock report, got {e}")
    };
    let got = d.download(&out).unwrap();
    let timeout = 1 + ErrorClass::Timeout as u32;
    let aborted = 1 + ErrorClass::Aborted as u32;
    for r in 0..ranks {
        let state = rep.state_of(r).unwrap();
        if r == skip {
            assert_eq!(got[r as usize], 0, "{what}: the missing rank recorded");
            assert_eq!(state, BlockedState::Exited, "{what}: rank {r}\n{e}");
            continue;
        }
        let class = got[r as usize];
        assert!(
            class == timeout || class == aborted,
            "{what}: rank {r} returned class {} instead of a timeout or an abort\n{e}",
            class.wrapping_sub(1)
        );
        let ended = match state {
            BlockedState::TimedOut { operation, .. } => class == timeout && operation == call as u32,
            BlockedState::Aborted { operation, .. } => class == aborted && operation == call as u32,
            _ => false,
        };
        assert!(ended, "{what}: rank {r} ended as {state}\n{e}");
    }
    assert!(got.contains(&timeout), "{what}: no rank timed out: {got:?}\n{e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("rank {skip}: exited")),
        "{what}: the report does not show rank {skip} as exited\n{text}"
    );
    assert!(
        text.contains(&format!("hint: rank {skip} exited while")),
        "{what}: the report's hint does not name rank {skip}\n{text}"
    );
}

fn cpu(workers: usize) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        ..CpuOptions::default()
    })
}

#[test]
fn every_world_collective_fails_on_every_rank_when_one_never_enters() {
    let d = cpu(2);
    for which in 0..COLLECTIVES.len() {
        // Two blocks: rank 6 missing from the second block, rank 2 from the
        // first (the root's); one block: rank 1 missing.
        for (ranks, block, skip) in [(8, 4, 6), (8, 4, 2), (4, 4, 1)] {
            check(&d, which, ranks, block, skip, false);
        }
    }
}

#[test]
fn every_world_collective_fails_alike_on_one_worker() {
    // Blocks on one worker: the missing rank's block is scheduled with the
    // others, and every block sees the failure the same way.
    let d = cpu(1);
    for which in [0, 1, 4, 9, 15, 21] {
        check(&d, which, 8, 2, 3, false);
    }
}
