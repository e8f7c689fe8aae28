//! Programs whose message traces check/tests/trace.rs reads back
//! (docs/tracing.md): every kind of event on the world, a failed world
//! collective, and a split with point-to-point messages and collectives on
//! its halves. One kernel, the program picked by [`CaseArgs::case`]; each
//! records what its ranks saw (in `out`, [`CaseArgs::stride`] words per
//! rank) so that the test checks the values as well as the trace.

use super::{CaseArgs, Recorder};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::request::scope;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Color, Error, ErrorClass, World};

/// Every kind of event: a blocking ring (tag 7), a non-blocking ring of
/// [`BIG`] `u32`s (tag 9, larger than a slot), a ping-pong (tags 20 and
/// 21: rank 1 blocks), a probe (tag 11) and a matched probe (tag 12), a
/// barrier, an all-reduce, a broadcast from rank 3 and a duplicate of the
/// world. Each rank records 3 words: what it received from its left
/// neighbour, the all-reduce, the broadcast.
pub const T_TRAFFIC: u32 = 0;
/// A barrier, then a reduce to a root that does not exist: every rank
/// enters it and returns `MPI_ERR_ROOT`. Records nothing.
pub const T_BAD_ROOT: u32 = 1;
/// A split into even and odd ranks (two communicators); on each half a
/// ring with tag 5, an all-reduce, a broadcast from its rank 1, and a
/// broadcast from a root out of range (every rank gets `MPI_ERR_ROOT` and
/// goes on); then a world ring with the same tag and a world barrier. Each
/// rank records 4 words: what it received on its half, on the world, the
/// all-reduce, the broadcast.
pub const T_SPLIT: u32 = 2;

/// Elements of [`T_TRAFFIC`]'s non-blocking ring (600 bytes: larger than
/// a slot).
pub const BIG: usize = 150;

gpu_mpi_device::kernel! {
    /// The `T_*` programs.
    pub static SEMANTICS_TRACE = fn semantics_trace(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            T_TRAFFIC => traffic(world, &mut rec),
            T_BAD_ROOT => {
                world.barrier()?;
                world.process_at_rank(world.size()).reduce_into(&1u64, SystemOperation::sum())
            }
            T_SPLIT => split(world, &mut rec),
            _ => Err(Error::OutOfBounds { index: args.case, len: T_SPLIT + 1 }),
        }
    }
}

fn traffic(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let r = world.rank();
    let n = world.size();
    let left = ring_on(world, r as u64 * 10, 7)?;
    let next = world.process_at_rank((r + 1) % n);
    let prev = world.process_at_rank((r + n - 1) % n);
    let big_out = [r as u32; BIG];
    let mut big_in = [0u32; BIG];
    scope(|s| -> Result<(), Error> {
        let rx = prev.immediate_receive_into_with_tag(s, &mut big_in[..], 9)?;
        let tx = next.immediate_send_with_tag(s, &big_out[..], 9)?;
        tx.wait()?;
        rx.wait()?;
        Ok(())
    })?;
    if big_in.iter().any(|&v| v != ((r + n - 1) % n) as u32) {
        return Err(Error::Aborted { by_rank: r as u32 });
    }
    match r {
        0 => {
            let mut ping = 0u32;
            world.process_at_rank(1).receive_into_with_tag(&mut ping, 20)?;
            world.process_at_rank(1).send_with_tag(&(ping + 1), 21)?;
            world.process_at_rank(1).send_with_tag(&5u16, 11)?;
        }
        1 => {
            world.process_at_rank(0).send_with_tag(&41u32, 20)?;
            let mut pong = 0u32;
            world.process_at_rank(0).receive_into_with_tag(&mut pong, 21)?;
            let st = world.any_process().probe_with_tag(11)?;
            let mut v = 0u16;
            world
                .process_at_rank(st.source_rank())
                .receive_into_with_tag(&mut v, 11)?;
            if pong != 42 || v != 5 || st.bytes() != 2 {
                return Err(Error::Aborted { by_rank: 1 });
            }
        }
        2 => world.process_at_rank(3).send_with_tag(&7u64, 12)?,
        3 => {
            let (msg, _) = world.any_process().matched_probe_with_tag(12)?;
            let (v, _) = msg.matched_receive::<u64>()?;
            if v != 7 {
                return Err(Error::Aborted { by_rank: 3 });
            }
        }
        _ => {}
    }
    world.barrier()?;
    let mut sum = 0u64;
    world.all_reduce_into(&(r as u64), &mut sum, SystemOperation::sum())?;
    let mut b = if r == 3 { 99u64 } else { 0 };
    world.process_at_rank(3).broadcast_into(&mut b)?;
    let dup = world.duplicate()?;
    if dup.size() != n {
        return Err(Error::Intern);
    }
    rec.words(&[left as u32, sum as u32, b as u32])
}

fn split(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let r = world.rank();
    let half = world
        .split_by_color(Color::with_value((r % 2) as u32))?
        .ok_or(Error::Intern)?;
    let (hr, hn) = (half.rank(), half.size());
    let on_half = ring_on(&half, r as u64, 5)?;
    let mut sum = 0u64;
    half.all_reduce_into(&(r as u64), &mut sum, SystemOperation::sum())?;
    let mut b = if hr == 1 { 100 + r as u64 } else { 0 };
    half.process_at_rank(1).broadcast_into(&mut b)?;
    let mut spare = 0u64;
    match half.process_at_rank(hn).broadcast_into(&mut spare) {
        Err(e) if e.class() == ErrorClass::Root => {}
        _ => return Err(Error::Intern),
    }
    let on_world = ring_on(world, r as u64, 5)?;
    world.barrier()?;
    rec.words(&[on_half as u32, on_world as u32, sum as u32, b as u32])
}

/// A ring with tag `tag` on communicator `c` (even ranks send first):
/// sends `value` to the next rank, returns what the previous one sent.
fn ring_on<C: Communicator>(c: &C, value: u64, tag: i32) -> Result<u64, Error> {
    let (me, size) = (c.rank(), c.size());
    let next = c.process_at_rank((me + 1) % size);
    let prev = c.process_at_rank((me + size - 1) % size);
    let mut left = 0u64;
    if me % 2 == 0 {
        next.send_with_tag(&value, tag)?;
        prev.receive_into_with_tag(&mut left, tag)?;
    } else {
        prev.receive_into_with_tag(&mut left, tag)?;
        next.send_with_tag(&value, tag)?;
    }
    Ok(left)
}
