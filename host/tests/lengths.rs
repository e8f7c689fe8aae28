//! Collective counts and lengths past 32 bits on every path that carries
//! them in 32-bit words (docs/limits.md, "Lengths in 32-bit words"): one
//! rank passes a buffer of 2^32 + 16 bytes where the others pass 16, so
//! that the counts' low 32 bits agree. Every rank must fail with
//! `MPI_ERR_COUNT` and the world go on working, where before the ranks
//! agreed on the cut counts and then deadlocked. Emulator only: each case
//! allocates a lazily zeroed buffer of more than 4 GiB on one rank (a
//! GPU thread cannot), of which the failing call touches no page.

mod common;
use common::{cell, class};
use gpu_mpi_device::abi::shim::Ordering;
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Color, Error, ErrorClass, GlobalSlice, World};
use gpu_mpi_host::{Device, WorldSpec};

/// Bytes of the long buffer: its low 32 bits are the others' 16.
const LONG: usize = (1 << 32) + 16;

/// Case: a world scan (`MPI_Scan`) of `u8`s, the last rank's long.
const WORLD_SCAN: u32 = 0;
/// Case: a world gather to rank 0 of `u8`s, the last rank's send long.
const WORLD_GATHER: u32 = 1;
/// Case: a broadcast from rank 0 on a split with reversed keys (the
/// general algorithm), rank 0's (the last world rank's) buffer long.
const GENERAL_BROADCAST: u32 = 2;
/// Case: an all-reduce of `u8`s on a block communicator of 64 ranks
/// (`split_shared`, the hardware path), the last rank's long.
const BLOCK_ALL_REDUCE: u32 = 3;
/// Case: a broadcast from lane 0 on a warp communicator
/// (`split_by_warp`), lane 0's buffer long.
const WARP_BROADCAST: u32 = 4;

gpu_mpi_device::kernel! {
    /// Runs case `args[0]`; rank `r` records at `1 + 3 r` the call's
    /// class, then a world barrier's class and a world all-reduce of 1.
    pub static LENGTHS = fn lengths_kernel(world: &World, args: &GlobalSlice<u32>) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let long = rank == size - 1;
        let len = if long { LONG } else { 16 };
        let r = match cell(args, 0).load(Ordering::Relaxed) {
            WORLD_SCAN => {
                let send = vec![0u8; len];
                let mut recv = vec![0u8; len];
                world.scan_into(&send[..], &mut recv[..], SystemOperation::sum())
            }
            WORLD_GATHER => {
                let send = vec![0u8; len];
                let root = world.process_at_rank(0);
                if rank == 0 {
                    let mut recv = vec![0u8; 16 * size as usize];
                    root.gather_into_root(&send[..], &mut recv[..])
                } else {
                    root.gather_into(&send[..])
                }
            }
            GENERAL_BROADCAST => {
                let c = world.split_by_color_with_key(Color::with_value(0), -rank)?.ok_or(Error::Intern)?;
                let mut buf = vec![0u8; len];
                c.process_at_rank(0).broadcast_into(&mut buf[..])
            }
            BLOCK_ALL_REDUCE => {
                let c = world.split_shared()?;
                let send = vec![0u8; len];
                let mut recv = vec![0u8; len];
                c.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum())
            }
            _ => {
                let c = world.split_by_warp()?;
                let long = c.rank() == 0;
                let mut buf = vec![0u8; if long { LONG } else { 16 }];
                c.process_at_rank(0).broadcast_into(&mut buf[..])
            }
        };
        let at = 1 + 3 * rank as usize;
        cell(args, at).store(class(&r), Ordering::Relaxed);
        cell(args, at + 1).store(class(&world.barrier()), Ordering::Relaxed);
        let mut total = 0u32;
        world.all_reduce_into(&1u32, &mut total, SystemOperation::sum())?;
        cell(args, at + 2).store(total, Ordering::Relaxed);
        Ok(())
    }
}

/// Runs `case` in a world of `ranks` ranks in blocks of `block`: every
/// rank fails the call with `MPI_ERR_COUNT`, and the barrier and the
/// all-reduce after it work.
fn every_rank_fails_with_a_count_error(case: u32, ranks: u32, block: u32) {
    let d = Device::cpu();
    let mut init = vec![0u32; 1 + 3 * ranks as usize];
    init[0] = case;
    let args = d.upload(&init).unwrap();
    let spec = WorldSpec::ranks(ranks).block_dim(block);
    d.launch(&LENGTHS, &args.slice(), &spec)
        .unwrap_or_else(|e| panic!("case {case}: {e}"));
    let got = d.download(&args).unwrap();
    for r in 0..ranks as usize {
        let w = &got[1 + 3 * r..4 + 3 * r];
        assert_eq!(
            w,
            [ErrorClass::Count as u32, 0, ranks],
            "case {case}, rank {r}: [class, barrier's class, all-reduce]"
        );
    }
}

/// The world scan's agreement compared its `COUNT` slot cut to 32 bits:
/// the ranks agreed on 16 elements and the last rank went on alone into
/// 17 million more rounds (a deadlock).
#[test]
fn a_world_scan_count_past_32_bits_fails_on_every_rank() {
    every_rank_fails_with_a_count_error(WORLD_SCAN, 2, 2);
    every_rank_fails_with_a_count_error(WORLD_SCAN, 4, 2);
}

/// The world gather's `COUNT` slot: the ranks agreed on 16 bytes and the
/// last rank copied its whole part into the root's buffer of `16 × size`
/// bytes (not run before the fix: it writes past the buffer).
#[test]
fn a_world_gather_count_past_32_bits_fails_on_every_rank() {
    every_rank_fails_with_a_count_error(WORLD_GATHER, 2, 2);
    every_rank_fails_with_a_count_error(WORLD_GATHER, 4, 2);
}

/// The general algorithm's opening compared its count word cut to 32
/// bits: the root sent a first piece of 1 MiB that the other rank took as
/// `MPI_ERR_COUNT`, and then waited to send the next (a deadlock).
#[test]
fn a_general_broadcast_length_past_32_bits_fails_on_every_rank() {
    every_rank_fails_with_a_count_error(GENERAL_BROADCAST, 2, 2);
    every_rank_fails_with_a_count_error(GENERAL_BROADCAST, 3, 1);
}

/// The block communicator's descriptor held the count's low 32 bits.
#[test]
fn a_block_all_reduce_count_past_32_bits_fails_on_every_rank() {
    every_rank_fails_with_a_count_error(BLOCK_ALL_REDUCE, 64, 64);
}

/// The warp communicator's descriptor held the count's low 32 bits.
#[test]
fn a_warp_broadcast_length_past_32_bits_fails_on_every_rank() {
    every_rank_fails_with_a_count_error(WARP_BROADCAST, 2, 2);
    every_rank_fails_with_a_count_error(WARP_BROADCAST, 40, 40);
}
