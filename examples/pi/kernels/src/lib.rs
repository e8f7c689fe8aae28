//! Pi estimation, the thesis's comparison kernels (B. D. Young, "MPI within a
//! GPU", 2009, figures 5.5, 5.6 and 5.17), in `f64` (the thesis had `float`).
//!
//! Pi is the integral of 4/(1+x^2) over [0, 1], summed by the midpoint rule
//! over `ranks * intervals_per_rank` intervals; rank `r` takes intervals
//! `r, r + ranks, r + 2 ranks, ...`.
#![no_std]
// The benchmarks' kernel crate depends on this one, and the builder enables
// `abi_ptx` only for the crate it builds: a dependency names it itself.
#![cfg_attr(target_os = "cuda", feature(abi_ptx))]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Arguments of the pi kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PiArgs {
    /// Intervals each rank sums.
    pub intervals_per_rank: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// Where rank 0 writes the estimate (one element).
    pub result: GlobalSlice<f64>,
}

/// This rank's share of the midpoint sum, already multiplied by the width.
pub fn partial_sum(rank: u32, ranks: u32, intervals_per_rank: u32) -> f64 {
    let intervals = ranks as u64 * intervals_per_rank as u64;
    let width = 1.0 / intervals as f64;
    let mut sum = 0.0;
    let mut i = rank as u64;
    while i < intervals {
        let x = (i as f64 + 0.5) * width;
        sum += 4.0 / (1.0 + x * x);
        i += ranks as u64;
    }
    sum * width
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.6: every rank but 0 sends its partial sum to rank 0,
    /// which receives them in rank order and adds them up.
    pub static PI_P2P = fn pi_p2p(world: &World, args: &PiArgs) -> Result<(), Error> {
        let part = partial_sum(world.rank() as u32, world.size() as u32, args.intervals_per_rank);
        if world.rank() != 0 {
            return world.process_at_rank(0).send(&part);
        }
        let mut sum = part;
        for source in 1..world.size() {
            let (v, _) = world.process_at_rank(source).receive::<f64>()?;
            sum += v;
        }
        args.result.write(0, sum)
    }
}

gpu_mpi_device::kernel! {
    /// Thesis figure 5.17: the partial sums are reduced to rank 0.
    pub static PI_REDUCE = fn pi_reduce(world: &World, args: &PiArgs) -> Result<(), Error> {
        let part = partial_sum(world.rank() as u32, world.size() as u32, args.intervals_per_rank);
        let root = world.process_at_rank(0);
        if world.rank() == 0 {
            let mut sum = 0.0f64;
            root.reduce_into_root(&part, &mut sum, SystemOperation::sum())?;
            args.result.write(0, sum)
        } else {
            root.reduce_into(&part, SystemOperation::sum())
        }
    }
}
