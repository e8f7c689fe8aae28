//! Per-rank scratch in the world memory (`World::scratch`): a sample sort
//! whose O(p) arrays (samples, splitters, counts and displacements of an
//! all-to-all with varying counts) live in the scratch, not on the stack,
//! and the scratch's own rules (exhaustion, one `Scratch` at a time,
//! alignment, privacy). check/tests/scratch.rs launches them.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Partition, PartitionMut, SystemOperation};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// The arguments of [`SAMPLE_SORT`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SortArgs {
    /// The keys, `keys_per_rank` per rank in rank order.
    pub keys: GlobalSlice<u32>,
    /// All keys, sorted (written by the ranks, each its bucket).
    pub sorted: GlobalSlice<u32>,
    /// Per rank: how many keys it received (its bucket's size).
    pub received: GlobalSlice<u32>,
    /// Keys each rank starts with (at least 1).
    pub keys_per_rank: u32,
    /// Padding, zero.
    pub reserved: u32,
}

/// Scratch bytes a rank of [`SAMPLE_SORT`] needs in a world of `ranks`
/// ranks with `keys_per_rank` keys each, when no bucket holds more than
/// `bucket_keys` keys: its keys, the splitters, four count and
/// displacement arrays, its bucket, and alignment.
pub const fn sort_scratch_bytes(ranks: u64, keys_per_rank: u64, bucket_keys: u64) -> u64 {
    4 * (keys_per_rank + 5 * ranks + bucket_keys) + 64
}

gpu_mpi_device::kernel! {
    /// A sample sort. Each rank sorts its keys, rank 0 gathers one sample
    /// of every rank (rank `r`'s key of rank `r mod k` in its order, so
    /// that the samples spread over the keys' range), sorts them and broadcasts the `p - 1`
    /// splitters; each rank counts its keys per bucket, the counts go
    /// through an all-to-all, the keys through an all-to-all with varying
    /// counts; each rank sorts its bucket and writes it at the offset an
    /// exclusive scan of the bucket sizes gives. Every array of `p` entries
    /// (and the bucket, whose size is known only at run time) is taken from
    /// the rank's scratch; a bucket larger than what is left fails with
    /// `MPI_ERR_NO_MEM` on its rank (after an all-reduce that tells every
    /// rank, so that none waits in the exchange for it).
    pub static SAMPLE_SORT = fn sample_sort(world: &World, args: &SortArgs) -> Result<(), Error> {
        let p = world.size() as usize;
        let r = world.rank() as usize;
        let k = args.keys_per_rank as usize;
        let scratch = world.scratch()?;
        let mine = scratch.take::<u32>(k)?;
        for (i, key) in mine.iter_mut().enumerate() {
            *key = args.keys.read(r * k + i)?;
        }
        mine.sort_unstable();
        // Rank 0 gathers the samples into the splitters' array, sorts them
        // and keeps entries 1..p as the p - 1 splitters.
        let splitters = scratch.take::<u32>(p)?;
        let root = world.process_at_rank(0);
        let sample = mine[r % k];
        if r == 0 {
            root.gather_into_root(&sample, &mut splitters[..])?;
            splitters.sort_unstable();
            splitters.copy_within(1.., 0);
        } else {
            root.gather_into(&sample)?;
        }
        root.broadcast_into(&mut splitters[..p - 1])?;
        let splitters = &splitters[..p - 1];

        let send_counts = scratch.take::<i32>(p)?;
        let send_displs = scratch.take::<i32>(p)?;
        let recv_counts = scratch.take::<i32>(p)?;
        let recv_displs = scratch.take::<i32>(p)?;
        send_counts.fill(0);
        for key in mine.iter() {
            send_counts[splitters.partition_point(|s| s <= key)] += 1;
        }
        exclusive_prefix(send_counts, send_displs);
        world.all_to_all_into(&send_counts[..], &mut recv_counts[..])?;
        let total = exclusive_prefix(recv_counts, recv_displs);
        // Every rank learns whether every bucket fits before any enters
        // the exchange: the ranks whose bucket does not fit return
        // MPI_ERR_NO_MEM, the others return Ok without sorting.
        let bucket = scratch.take::<u32>(total);
        let mut short = 0u32;
        world.all_reduce_into(&u32::from(bucket.is_err()), &mut short, SystemOperation::max())?;
        let bucket = bucket?;
        if short != 0 {
            return Ok(());
        }
        world.all_to_all_varcount_into(
            &Partition::new(&mine[..], send_counts, send_displs),
            &mut PartitionMut::new(&mut bucket[..], recv_counts, recv_displs),
        )?;
        bucket.sort_unstable();
        let mut offset = 0u32;
        world.exclusive_scan_into(&(total as u32), &mut offset, SystemOperation::sum())?;
        if r == 0 {
            offset = 0;
        }
        for (i, key) in bucket.iter().enumerate() {
            args.sorted.write(offset as usize + i, *key)?;
        }
        args.received.write(r, total as u32)
    }
}

/// Writes the exclusive prefix sums of `counts` into `displs`; returns the
/// total.
fn exclusive_prefix(counts: &[i32], displs: &mut [i32]) -> usize {
    let mut sum = 0i32;
    for (c, d) in counts.iter().zip(displs.iter_mut()) {
        *d = sum;
        sum += *c;
    }
    sum as usize
}

/// Words [`SCRATCH_RULES`] records per rank.
pub const RULE_WORDS: usize = 8;

gpu_mpi_device::kernel! {
    /// The scratch's rules, recorded by rank `r` at `out[8 r..8 r + 8]`:
    /// 0: the capacity in bytes; 1: the class of a second `World::scratch`
    /// while one lives; 2: 1 when a `u64` piece taken after a 1-byte piece
    /// is 8-byte aligned; 3: the class of taking one byte more than is left;
    /// 4: the bytes that error says are left; 5: the word rank `r` finds
    /// where it wrote `r` before dropping and taking the scratch again (its
    /// own, after a barrier that lets every rank write its own); 6: the
    /// class of taking `u32::MAX` `u64`s (an overflowing size); 7: 1 when a
    /// zero-length piece is given even with nothing left.
    pub static SCRATCH_RULES = fn scratch_rules(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        let r = world.rank() as usize;
        let base = r * RULE_WORDS;
        let class = |e: Result<(), Error>| match e {
            Ok(()) => 0,
            Err(e) => e.class() as u32,
        };
        {
            let scratch = world.scratch()?;
            out.write(base, scratch.capacity() as u32)?;
            out.write(base + 1, class(world.scratch().map(|_| ())))?;
            let byte = scratch.take::<u8>(1)?;
            byte[0] = 7;
            let word = scratch.take::<u64>(1)?;
            out.write(base + 2, u32::from((word.as_ptr() as usize).is_multiple_of(8)))?;
            let left = scratch.remaining();
            let too_much = scratch.take::<u8>(left + 1).map(|_| ());
            out.write(base + 3, class(too_much))?;
            let reported = match too_much {
                Err(Error::ScratchExhausted { available, .. }) => available,
                _ => u32::MAX,
            };
            out.write(base + 4, reported)?;
            out.write(base + 6, class(scratch.take::<u64>(u32::MAX as usize).map(|_| ())))?;
            let rest = scratch.take::<u8>(scratch.remaining())?;
            rest.fill(0);
            out.write(base + 7, u32::from(scratch.take::<u32>(0).is_ok()))?;
        }
        {
            let scratch = world.scratch()?;
            scratch.take::<u32>(1)?[0] = r as u32;
        }
        world.barrier()?;
        let scratch = world.scratch()?;
        out.write(base + 5, scratch.take::<u32>(1)?[0])
    }
}
