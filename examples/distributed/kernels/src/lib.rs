//! Kernels that check point-to-point between the ranks of a world across
//! processes (docs/distributed.md). Each rank writes what it checked into
//! `out[rank]`; the host (`src/main.rs`) compares it with what MPI says.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::point_to_point::send_receive_into_with_tags;
use gpu_mpi_device::request::{self, wait_all};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};

/// Arguments of every check.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CheckArgs {
    /// Messages per rank ([`ORDER`]).
    pub rounds: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// One word per rank.
    pub out: GlobalSlice<u64>,
}

/// Elements of [`LARGE`]'s message: 4,800 bytes, more than a slot's
/// payload, so it goes by rendezvous (direct, or streamed).
pub const LARGE_ELEMENTS: usize = 600;

gpu_mpi_device::kernel! {
    /// Every rank exchanges one message with every other rank, local or
    /// remote: in step `i` it sends `1000 × rank + dst` to `rank + i` with
    /// tag `i` and receives from any source with tag `i` (only `rank - i`
    /// sends it that). `out[rank]`: the steps whose message came from the
    /// right rank with the right value (all `size - 1`).
    pub static EXCHANGE = fn exchange(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut good = 0u64;
        for i in 1..size {
            let dst = (rank + i) % size;
            let src = (rank + size - i) % size;
            let mine = (1000 * rank + dst) as u64;
            let mut got = 0u64;
            let status = send_receive_into_with_tags(
                &mine,
                &world.process_at_rank(dst),
                i,
                &mut got,
                &world.any_process(),
                i,
            )?;
            if status.source_rank() == src && status.tag() == i && got == (1000 * src + rank) as u64 {
                good += 1;
            }
        }
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank sends `rounds` messages to its right neighbour, every
    /// odd-numbered one synchronous, with tags cycling 0, 1, 2, and
    /// receives as many from any source and any tag: non-overtaking says
    /// they come in the order sent. Even ranks send first, odd ranks
    /// receive first (an even world: no cycle of synchronous sends).
    /// `out[rank]`: the messages received in order from the left
    /// neighbour (all `rounds`).
    pub static ORDER = fn order(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let right = world.process_at_rank((rank + 1) % size);
        let left = (rank + size - 1) % size;
        let send = || -> Result<(), Error> {
            for k in 0..args.rounds {
                let v = rank as u64 * 1_000_000 + k as u64;
                let tag = (k % 3) as i32;
                if k % 2 == 1 {
                    right.synchronous_send_with_tag(&v, tag)?;
                } else {
                    right.send_with_tag(&v, tag)?;
                }
            }
            Ok(())
        };
        let receive = || -> Result<u64, Error> {
            let mut good = 0u64;
            for k in 0..args.rounds {
                let mut v = 0u64;
                let status = world.any_process().receive_into(&mut v)?;
                if status.source_rank() == left
                    && status.tag() == (k % 3) as i32
                    && v == left as u64 * 1_000_000 + k as u64
                {
                    good += 1;
                }
            }
            Ok(good)
        };
        let good = if rank % 2 == 0 {
            send()?;
            receive()?
        } else {
            let good = receive()?;
            send()?;
            good
        };
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// A ring shift of [`LARGE_ELEMENTS`] `u64`s (rendezvous): rank `r`
    /// sends `r × 7919 + i` in element `i` to the right and receives from
    /// the left. `out[rank]`: the elements that hold the left
    /// neighbour's values (all of them).
    pub static LARGE = fn large(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let left = (rank + size - 1) % size;
        let mut mine = [0u64; LARGE_ELEMENTS];
        for (i, m) in mine.iter_mut().enumerate() {
            *m = rank as u64 * 7919 + i as u64;
        }
        let mut got = [0u64; LARGE_ELEMENTS];
        send_receive_into_with_tags(
            &mine[..],
            &world.process_at_rank((rank + 1) % size),
            5,
            &mut got[..],
            &world.process_at_rank(left),
            5,
        )?;
        let good = got
            .iter()
            .enumerate()
            .filter(|&(i, &g)| g == left as u64 * 7919 + i as u64)
            .count();
        args.out.write(rank as usize, good as u64)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank first receives from its right neighbour, which does the
    /// same: a deadlock across processes, which the launch reports.
    pub static DEADLOCK = fn deadlock(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut v = 0u64;
        world.process_at_rank((rank + 1) % size).receive_into_with_tag(&mut v, 9)?;
        world.process_at_rank((rank + size - 1) % size).send_with_tag(&v, 9)
    }
}

gpu_mpi_device::kernel! {
    /// World barriers across processes, with messages between them: in
    /// each of `rounds` rounds every rank passes a barrier, then sends the
    /// round's number to its right neighbour and receives its left one's.
    /// `out[rank]`: the rounds whose message held the round (all of them).
    pub static BARRIERS = fn barriers(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut good = 0u64;
        for k in 0..args.rounds {
            world.barrier()?;
            let mut got = u32::MAX;
            send_receive_into_with_tags(
                &k,
                &world.process_at_rank((rank + 1) % size),
                6,
                &mut got,
                &world.process_at_rank((rank + size - 1) % size),
                6,
            )?;
            if got == k {
                good += 1;
            }
        }
        world.barrier()?;
        args.out.write(rank as usize, good)
    }
}

gpu_mpi_device::kernel! {
    /// A broadcast: collectives that move data do not cross processes yet,
    /// so every rank returns `Error::AcrossProcesses`.
    pub static BROADCAST = fn broadcast(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let mut v = world.rank() as u64;
        world.process_at_rank(0).broadcast_into(&mut v)
    }
}

gpu_mpi_device::kernel! {
    /// Every rank but the last enters a world barrier; the last returns
    /// at once: a deadlock in the barrier across processes.
    pub static SKIPPED_BARRIER = fn skipped_barrier(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        if world.rank() == world.size() - 1 {
            return Ok(());
        }
        world.barrier()
    }
}

gpu_mpi_device::kernel! {
    /// The last rank aborts the world (`MPI_Abort`); every other rank waits
    /// for a message from it, gives up with `Aborted` and returns: the
    /// launch reports the abort on every process.
    pub static ABORT = fn abort(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank == size - 1 {
            world.abort();
            return Ok(());
        }
        let mut v = 0u64;
        match world.process_at_rank(size - 1).receive_into_with_tag(&mut v, 3) {
            Err(Error::Aborted { .. }) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Err(Error::application(1)),
        }
    }
}

gpu_mpi_device::kernel! {
    /// The last rank panics (a trap on the GPU); every other rank waits for
    /// a message from it: the launch reports the panic on every process.
    pub static PANIC = fn panic_last(world: &World, _args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank == size - 1 {
            panic!("the last rank stops here");
        }
        let mut v = 0u64;
        world.process_at_rank(size - 1).receive_into_with_tag(&mut v, 4)?;
        Ok(())
    }
}

/// Messages each rank posts at once in [`REQUESTS`].
pub const POSTED: usize = 4;

gpu_mpi_device::kernel! {
    /// Non-blocking point-to-point and matched probes across processes:
    /// every rank posts [`POSTED`] receives from its left neighbour and as
    /// many sends (`100 × rank + k`, tag `k`) to its right one and waits
    /// for all; then it sends one more message (tag 7) to the right, takes
    /// the left one's with a matched probe from any source and receives it
    /// through the probe's handle. `out[rank]`: the messages that came from
    /// the left neighbour with the right tag and value (all `POSTED + 1`).
    pub static REQUESTS = fn requests(world: &World, args: &CheckArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let left = (rank + size - 1) % size;
        let to = world.process_at_rank((rank + 1) % size);
        let from = world.process_at_rank(left);
        let mine: [u64; POSTED] = core::array::from_fn(|k| 100 * rank as u64 + k as u64);
        let mut theirs = [0u64; POSTED];
        request::scope(|scope| -> Result<(), Error> {
            let [a, b, c, d] = &mut theirs;
            let mut requests = [
                from.immediate_receive_into_with_tag(scope, a, 0)?,
                from.immediate_receive_into_with_tag(scope, b, 1)?,
                from.immediate_receive_into_with_tag(scope, c, 2)?,
                from.immediate_receive_into_with_tag(scope, d, 3)?,
                to.immediate_send_with_tag(scope, &mine[0], 0)?,
                to.immediate_send_with_tag(scope, &mine[1], 1)?,
                to.immediate_send_with_tag(scope, &mine[2], 2)?,
                to.immediate_send_with_tag(scope, &mine[3], 3)?,
            ];
            wait_all(&mut requests, &mut [])
        })?;
        let mut good = theirs
            .iter()
            .enumerate()
            .filter(|&(k, &v)| v == 100 * left as u64 + k as u64)
            .count() as u64;
        to.send_with_tag(&(rank as u64), 7)?;
        let (message, status) = world.any_process().matched_probe_with_tag(7)?;
        let mut v = 0u64;
        message.matched_receive_into(&mut v)?;
        if status.source_rank() == left && v == left as u64 {
            good += 1;
        }
        args.out.write(rank as usize, good)
    }
}
