//! My kernels: plain Rust functions in message-passing style, one rank per
//! GPU thread. This crate is compiled twice: for nvptx64 by the host's
//! build.rs (no nightly attribute needed here: the builder passes it), and
//! for the host as an ordinary crate, which the CPU emulator runs.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::point_to_point::send_receive_into_with_tags;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World, PROC_NULL};

/// The arguments of [`HALO`]: one `Pod` struct, passed to the kernel by
/// reference. Buffers are `GlobalSlice`s of device memory that the host
/// allocated (`device.upload`, `device.alloc_zeroed`, then `.slice()`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct HaloArgs {
    /// The cells of a rod, `cells_per_rank` per rank in rank order: the
    /// starting temperatures, replaced by those after `steps` steps.
    pub cells: GlobalSlice<f64>,
    /// The two fixed temperatures beyond the rod's ends: left, right.
    pub ends: GlobalSlice<f64>,
    /// `steps` values: rank 0 writes each step's largest change of a cell.
    pub changes: GlobalSlice<f64>,
    /// Cells each rank owns (at least 1).
    pub cells_per_rank: u32,
    /// Steps to run.
    pub steps: u32,
}

/// One step of a cell: the new temperature of a cell at `cell` between
/// `left` and `right` (what the host's check computes too).
pub fn smooth(left: f64, cell: f64, right: f64) -> f64 {
    0.5 * cell + 0.25 * (left + right)
}

gpu_mpi_device::kernel! {
    /// Heat spreading along a rod, a 1-D halo exchange. Each rank owns
    /// `cells_per_rank` cells, kept during the steps in its scratch (device
    /// memory of its own, sized by the host with `WorldSpec::scratch_bytes`:
    /// the count is known only at run time, and a large array on a GPU
    /// thread's stack is slow). Each step, every rank swaps its boundary
    /// cells with its neighbours (send-receive, so no exchange can
    /// deadlock; the rod's ends see the fixed temperatures instead), then
    /// smooths its cells; an all-reduce (max) gives every rank the step's
    /// largest change, which rank 0 records.
    pub static HALO = fn halo(world: &World, args: &HaloArgs) -> Result<(), Error> {
        let rank = world.rank();
        let n = args.cells_per_rank as usize;
        let first = rank as usize * n;
        let scratch = world.scratch()?;
        let cells = scratch.take::<f64>(n)?;
        for (i, cell) in cells.iter_mut().enumerate() {
            *cell = args.cells.read(first + i)?;
        }
        let left = if rank == 0 { PROC_NULL } else { rank - 1 };
        let right = if rank + 1 == world.size() { PROC_NULL } else { rank + 1 };
        let (left, right) = (world.process_at_rank(left), world.process_at_rank(right));
        for step in 0..args.steps as usize {
            // Ghost cells: the neighbours' boundary cells, or the fixed ends
            // (a receive from PROC_NULL leaves them as they are).
            let mut left_ghost = args.ends.read(0)?;
            let mut right_ghost = args.ends.read(1)?;
            // My first cell goes left while the right neighbour's comes in,
            send_receive_into_with_tags(&cells[0], &left, 0, &mut right_ghost, &right, 0)?;
            // then my last cell goes right while the left neighbour's comes in.
            send_receive_into_with_tags(&cells[n - 1], &right, 0, &mut left_ghost, &left, 0)?;

            let mut before = left_ghost;
            let mut change = 0.0f64;
            for i in 0..n {
                let old = cells[i];
                let next = if i + 1 < n { cells[i + 1] } else { right_ghost };
                cells[i] = smooth(before, old, next);
                let d = cells[i] - old;
                change = change.max(if d < 0.0 { -d } else { d });
                before = old;
            }
            let mut largest = 0.0f64;
            world.all_reduce_into(&change, &mut largest, SystemOperation::max())?;
            if rank == 0 {
                args.changes.write(step, largest)?;
            }
        }
        for (i, cell) in cells.iter().enumerate() {
            args.cells.write(first + i, *cell)?;
        }
        Ok(())
    }
}
