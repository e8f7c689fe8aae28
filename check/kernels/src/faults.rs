//! Kernels that fail or deadlock on purpose, for the host's error reports
//! (tests/errors.rs). Each returns the first error it meets with `?`, so the
//! launch ends in `HostError::RankFailed` or `HostError::Deadlock`.

use super::CaseArgs;
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::request;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// Rank 1 sends to rank `size` (`MPI_ERR_RANK`).
pub const FAULT_RANK: u32 = 0;
/// Rank 0 sends with tag -5 (`MPI_ERR_TAG`).
pub const FAULT_TAG: u32 = 1;
/// Rank 0 sends 8 words to rank 1, which receives into 2 (`MPI_ERR_TRUNCATE`).
pub const FAULT_TRUNCATE: u32 = 2;
/// Rank 0 sends an `f64` to rank 1, which receives an `i32` (`MPI_ERR_TYPE`).
pub const FAULT_TYPE: u32 = 3;
/// An all-reduce where the last rank passes 2 elements (`MPI_ERR_COUNT` everywhere).
pub const FAULT_COUNT: u32 = 4;
/// Rank 0 sends `param + 1` bytes (`param` = the world's limit, at most
/// 4095; `MPI_ERR_BUFFER`).
pub const FAULT_BUFFER: u32 = 5;
/// A broadcast from root `size` (`MPI_ERR_ROOT` everywhere).
pub const FAULT_ROOT: u32 = 6;
/// An all-reduce of `f64` with bitwise xor (`MPI_ERR_OP` everywhere).
pub const FAULT_OP: u32 = 7;
/// Rank 0 writes past the end of `out` (`MPI_ERR_ARG`).
pub const FAULT_ARG: u32 = 8;
/// Rank 0 receives from rank 1 with tag 7; rank 1 returns at once.
pub const FAULT_DEADLOCK_RECEIVE: u32 = 9;
/// Rank 0 returns at once; the others wait in a barrier.
pub const FAULT_EXIT_BEFORE_BARRIER: u32 = 10;
/// Ranks 0 and 1 both send `param` bytes (more than a slot) to each other
/// with tag 3 before receiving: both sends wait for a receiver.
pub const FAULT_SEND_SEND: u32 = 11;
/// Every rank receives from any source with tag 2; nobody sends. With
/// `param` 1 only rank 0 receives and the others return at once.
pub const FAULT_RECEIVE_ANY: u32 = 12;

/// Every rank spins on `immediate_probe_with_tag(9)` from its right
/// neighbour until it finds a message; nobody sends (a livelock).
pub const FAULT_SPIN_PROBE: u32 = 13;
/// Rank 0 posts a receive from rank 1 with tag 4 and spins on its `test`;
/// the other ranks spin on `test_any` over a receive with tag 5 (a livelock).
pub const FAULT_SPIN_TEST: u32 = 14;
/// Rank 0 posts one receive more than a request scope holds
/// (`MPI_ERR_REQUEST`); the pending ones are completed by rank 0's own sends.
pub const FAULT_REQUESTS: u32 = 15;
/// Every rank receives from any source with tag 2 (nobody sends), and
/// returns `Ok` whatever its receive returned (it handled the error); with
/// `param` 1 rank 0 calls `World::abort` and returns `Ok` instead of
/// receiving. The launch must report the abort, not success.
pub const FAULT_ABORT_HANDLED: u32 = 16;
/// Rank 0 and the last rank send `param + 1` bytes to themselves
/// (`param` the world's limit: `MPI_ERR_BUFFER`) and return the error;
/// the others enter an all-to-all of one `u32` per rank (at most 64
/// ranks), which waits for the two.
pub const FAULT_ERROR_BEFORE_ALL_TO_ALL: u32 = 17;
/// Every rank but rank 0 starts three non-blocking barriers: the third is
/// `MPI_ERR_REQUEST` (two may be outstanding), which the rank returns
/// once its scope has completed the two. Rank 0 starts and waits two,
/// then waits in a world barrier nobody else enters.
pub const FAULT_IMMEDIATE_LIMIT: u32 = 18;
/// The odd ranks return `Error::application(param)` (`MPI_ERR_OTHER`).
pub const FAULT_APPLICATION: u32 = 19;
/// A gather of one `i32` per rank to rank 0, but the last rank passes 2
/// (`MPI_ERR_COUNT` on every rank; at most 256 ranks). Launched with the
/// last rank in a later warp of a later block, it checks that every warp's
/// key reaches the argument agreement.
pub const FAULT_GATHER_COUNT: u32 = 20;
/// Rank 1 receives a `u32` from rank 0 with tag 5. Rank 0 fails
/// `param` immediate probes of rank 1 with tag 9, sends to rank `size`
/// (`MPI_ERR_RANK`, which it handles: any other result is returned), fails
/// `param` more of the same probes, then sends to rank 1. With `param`
/// under `SPIN_QUIET_AFTER` and twice it over, rank 0 turns quiet only if
/// the failed send does not count as its progress: the launch must succeed.
pub const FAULT_SPIN_AROUND_ERROR: u32 = 21;

gpu_mpi_device::kernel! {
    /// The `FAULT_*` scenarios.
    pub static SEMANTICS_FAULTS = fn semantics_faults(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        match args.case {
            FAULT_RANK if rank == 1 => world.process_at_rank(size).send(&1u32),
            FAULT_TAG if rank == 0 => world.process_at_rank(0).send_with_tag(&1u32, -5),
            FAULT_TRUNCATE if rank == 0 => world.process_at_rank(1).send_with_tag(&[7u32; 8][..], 4),
            FAULT_TRUNCATE if rank == 1 => {
                let mut two = [0u32; 2];
                world.process_at_rank(0).receive_into(&mut two[..]).map(|_| ())
            }
            FAULT_TYPE if rank == 0 => world.process_at_rank(1).send_with_tag(&2.5f64, 6),
            FAULT_TYPE if rank == 1 => {
                let mut x = 0i32;
                world.process_at_rank(0).receive_into(&mut x).map(|_| ())
            }
            FAULT_COUNT => {
                let n = if rank == size - 1 { 2 } else { 1 };
                let mut out = [0u32; 2];
                let send = [1u32; 2];
                world.all_reduce_into(
                    send.get(..n).unwrap_or(&[]),
                    out.get_mut(..n).unwrap_or(&mut []),
                    SystemOperation::sum(),
                )
            }
            FAULT_BUFFER if rank == 0 => {
                let big = [0u8; 4096];
                let n = (args.param as usize + 1).min(big.len());
                world.process_at_rank(0).send(big.get(..n).unwrap_or(&[]))
            }
            FAULT_ROOT => {
                let mut x = 0u32;
                world.process_at_rank(size).broadcast_into(&mut x)
            }
            FAULT_OP => {
                let mut x = 0.0f64;
                world.all_reduce_into(&1.0f64, &mut x, SystemOperation::bitwise_xor())
            }
            FAULT_ARG if rank == 0 => args.out.write(args.out.len(), 1),
            FAULT_DEADLOCK_RECEIVE if rank == 0 => {
                let mut x = 0u32;
                world.process_at_rank(1).receive_into_with_tag(&mut x, 7).map(|_| ())
            }
            FAULT_EXIT_BEFORE_BARRIER if rank != 0 => world.barrier(),
            FAULT_SEND_SEND if rank < 2 => {
                let other = world.process_at_rank(1 - rank);
                let big = [rank as u8; 2048];
                let n = (args.param as usize).min(big.len());
                let msg = big.get(..n).unwrap_or(&[]);
                other.send_with_tag(msg, 3)?;
                let mut back = [0u8; 2048];
                other.receive_into_with_tag(&mut back[..], 3).map(|_| ())
            }
            FAULT_RECEIVE_ANY if args.param == 0 || rank == 0 => {
                let mut x = 0u32;
                world.any_process().receive_into_with_tag(&mut x, 2).map(|_| ())
            }
            FAULT_SPIN_PROBE => {
                let right = world.process_at_rank((rank + 1) % size);
                while right.immediate_probe_with_tag(9)?.is_none() {}
                Ok(())
            }
            FAULT_SPIN_TEST => {
                let mut x = 0u32;
                request::scope(|scope| {
                    if rank == 0 {
                        let mut r = world.process_at_rank(1 % size).immediate_receive_into_with_tag(scope, &mut x, 4)?;
                        while r.test().is_none() {}
                    } else {
                        let mut rs = [world.any_process().immediate_receive_into_with_tag(scope, &mut x, 5)?];
                        while request::test_any(&mut rs).is_none() {}
                    }
                    Ok(())
                })
            }
            FAULT_REQUESTS if rank == 0 => {
                let mut bufs = [0u32; request::MAX_REQUESTS + 1];
                let me = world.process_at_rank(0);
                request::scope(|scope| {
                    let mut result = Ok(());
                    for b in bufs.iter_mut() {
                        if let Err(e) = me.immediate_receive_into(scope, b) {
                            result = Err(e);
                        }
                    }
                    for i in 0..request::MAX_REQUESTS as u32 {
                        me.send(&i)?;
                    }
                    result
                })
            }
            FAULT_ABORT_HANDLED => {
                if rank == 0 && args.param == 1 {
                    world.abort();
                } else {
                    let mut x = 0u32;
                    let _handled = world.any_process().receive_into_with_tag(&mut x, 2);
                }
                Ok(())
            }
            FAULT_ERROR_BEFORE_ALL_TO_ALL if rank == 0 || rank == size - 1 => {
                let big = [0u8; 4096];
                let n = (args.param as usize + 1).min(big.len());
                world.process_at_rank(rank).send(big.get(..n).unwrap_or(&[]))
            }
            FAULT_ERROR_BEFORE_ALL_TO_ALL => {
                let send = [rank; 64];
                let mut recv = [0u32; 64];
                let n = size as usize;
                world.all_to_all_into(send.get(..n).unwrap_or(&[]), recv.get_mut(..n).unwrap_or(&mut []))
            }
            FAULT_IMMEDIATE_LIMIT => {
                request::scope(|scope| {
                    let first = world.immediate_barrier(scope)?;
                    let second = world.immediate_barrier(scope)?;
                    if rank != 0 {
                        // The third fails at once; had it started, the
                        // scope's end would complete it.
                        let _third = world.immediate_barrier(scope)?;
                    }
                    first.wait()?;
                    second.wait().map(|_| ())
                })?;
                world.barrier()
            }
            FAULT_APPLICATION if rank % 2 == 1 => Err(Error::application(args.param)),
            FAULT_GATHER_COUNT => {
                let n = if rank == size - 1 { 2 } else { 1 };
                let send = [rank; 2];
                let send = send.get(..n).unwrap_or(&[]);
                let root = world.process_at_rank(0);
                if rank == 0 {
                    let mut recv = [0i32; 256];
                    root.gather_into_root(send, recv.get_mut(..size as usize).unwrap_or(&mut []))
                } else {
                    root.gather_into(send)
                }
            }
            FAULT_SPIN_AROUND_ERROR if rank == 0 => {
                let peer = world.process_at_rank(1);
                for _ in 0..2 {
                    for _ in 0..args.param {
                        if peer.immediate_probe_with_tag(9)?.is_some() {
                            return Err(Error::Intern);
                        }
                    }
                    match world.process_at_rank(size).send(&1u32) {
                        Err(Error::InvalidRank { .. }) => {}
                        other => return other.and(Err(Error::Intern)),
                    }
                }
                peer.send_with_tag(&7u32, 5)
            }
            FAULT_SPIN_AROUND_ERROR if rank == 1 => {
                let mut x = 0u32;
                world.process_at_rank(0).receive_into_with_tag(&mut x, 5)?;
                if x == 7 {
                    Ok(())
                } else {
                    Err(Error::Intern)
                }
            }
            _ => Ok(()),
        }
    }
}
