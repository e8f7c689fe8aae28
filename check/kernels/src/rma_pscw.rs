//! Generalised active-target synchronisation of one-sided windows (post,
//! start, complete, wait: MPI 4.1 §12.5.2): kernels for
//! check/tests/rma_pscw.rs.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::Window;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// The arguments of the post/start kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PscwArgs {
    /// Per rank: what it records (`slots` words each).
    pub out: GlobalSlice<u32>,
    /// Words each rank records.
    pub slots: u32,
    /// Rounds of the exchange.
    pub rounds: u32,
}

gpu_mpi_device::kernel! {
    /// A ring halo exchange by post/start/complete/wait, `rounds` times:
    /// each rank exposes its two-element window to its neighbours, puts
    /// `round * 1000 + rank` into the left neighbour's element 1 and the
    /// right neighbour's element 0, then checks what its neighbours put
    /// into its own window and writes its local elements back to zero.
    /// Each rank records the rounds it saw right.
    pub static PSCW_RING = fn pscw_ring(world: &World, args: &PscwArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let mut win = Window::<u32>::allocate(world, 2)?;
        let mut good = 0;
        for round in 0..args.rounds {
            let group = [left, right];
            let exposure = win.post(&group)?;
            let access = win.start(&group)?;
            let v = round * 1000 + r as u32;
            win.put(&[v], left, 1)?;
            win.put(&[v], right, 0)?;
            access.complete()?;
            exposure.wait()?;
            let mine = win.local_mut();
            let want = [round * 1000 + left as u32, round * 1000 + right as u32];
            if mine[..] == want {
                good += 1;
            }
            mine.fill(0);
        }
        win.free()?;
        args.out.write(r as usize * args.slots as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// Rank 0 posts to every other rank, each of them starts with rank 0
    /// only, adds its rank to rank 0's element with `accumulate`, and
    /// completes; rank 0's `test` is polled until it says done. Then rank
    /// 0 exposes again to an empty group and starts an empty group (both
    /// end at once). Rank 0 records the sum and the number of tests that
    /// said "not yet" (at least 0).
    pub static PSCW_GATHER = fn pscw_gather(world: &World, args: &PscwArgs) -> Result<(), Error> {
        let mut win = Window::<u32>::allocate(world, 1)?;
        let base = world.rank() as usize * args.slots as usize;
        if world.rank() == 0 {
            win.local_mut()[0] = 0;
            let others: [i32; 64] = core::array::from_fn(|i| i as i32 + 1);
            let n = (world.size() - 1) as usize;
            let exposure = win.post(&others[..n])?;
            let mut polls = 0u32;
            while !exposure.test() {
                polls += 1;
            }
            drop(exposure);
            let sum = win.local_mut()[0];
            win.post(&[])?.wait()?;
            win.start(&[])?.complete()?;
            args.out.write(base, sum)?;
            args.out.write(base + 1, polls.min(1))?;
        } else {
            let access = win.start(&[0])?;
            win.accumulate(&[world.rank() as u32], 0, 0, gpu_mpi_device::collective::SystemOperation::sum())?;
            // Not in the group: refused.
            let wrong = win.put(&[1], world.rank(), 0);
            access.complete()?;
            let code = match wrong {
                Err(e) => e.class() as u32,
                Ok(()) => 0,
            };
            args.out.write(base, code)?;
        }
        win.free()
    }
}
