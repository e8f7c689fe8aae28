//! Kernels with planted order-dependent bugs, for the schedule explorer
//! (`gpu-mpi-check explore`, docs/emulator.md "Schedule exploration").
//!
//! Both are wrong MPI programs that pass under the emulator's default
//! schedule: they assume that the first message matched by a receive from
//! `ANY_SOURCE` comes from rank 1, which MPI does not promise (MPI 4.1
//! section 3.5: the order is fixed only between one sender and one
//! receiver). Run them with `WorldSpec::ranks(3)`; every rank but 0 sends
//! rank 0 one message, `[100 * r + 1]` with tag 0.

use super::CaseArgs;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// Rank 0 receives `size - 1` messages from any source and stores the
/// `k`-th one's payload in `out[k + 1]`, as if it came from rank `k + 1`
/// (the planted bug: a gather by arrival order). Correct programs read the
/// source from the status. Records: rank 0 writes `out[1..size]`.
pub const PLANTED_ARRIVAL_ORDER: u32 = 0;
/// Rank 0 receives one message from any source, then one from rank 2
/// (the planted bug: it assumes that the first came from rank 1). When
/// rank 2's message matches first, the second receive waits for a message
/// rank 2 never sends: a deadlock, reached only under some schedules.
/// Records: rank 0 writes the two sources to `out[0]`, `out[1]`.
pub const PLANTED_DEADLOCK: u32 = 1;

/// The payload rank `r` sends rank 0.
pub fn planted_message(r: u32) -> u32 {
    100 * r + 1
}

gpu_mpi_device::kernel! {
    /// The `PLANTED_*` programs (`stride` 1 word per rank).
    pub static SEMANTICS_PLANTED = fn semantics_planted(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank != 0 {
            return world.process_at_rank(0).send_with_tag(&planted_message(rank as u32), 0);
        }
        let any = world.any_process();
        match args.case {
            PLANTED_ARRIVAL_ORDER => {
                for k in 1..size as usize {
                    let mut x = 0u32;
                    any.receive_into_with_tag(&mut x, 0)?;
                    args.out.write(k, x)?;
                }
                Ok(())
            }
            PLANTED_DEADLOCK => {
                let mut x = 0u32;
                let first = any.receive_into_with_tag(&mut x, 0)?;
                args.out.write(0, first.source_rank() as u32)?;
                let second = world.process_at_rank(2 % size).receive_into_with_tag(&mut x, 0)?;
                args.out.write(1, second.source_rank() as u32)
            }
            _ => Ok(()),
        }
    }
}
