//! Dynamic windows (`Window::create_dynamic`, attach and detach; MPI 4.1
//! §12.2.4) and shared-memory windows (`Window::allocate_shared`,
//! `shared_query`; §12.2.3): the kernel of check/tests/rma_flavors.rs.
//! It takes the arguments of the other one-sided kernels
//! ([`RmaArgs`]) and records into `out` as they do.

use crate::rma::RmaArgs;
use crate::{Recorder, NONE};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::{Window, MAX_REGIONS};
use gpu_mpi_device::{Error, World, PROC_NULL};

/// [`RMA_FLAVORS`]'s `param`: a dynamic window ring.
pub const FLAVOR_DYNAMIC: u32 = 0;
/// [`RMA_FLAVORS`]'s `param`: a shared-memory window.
pub const FLAVOR_SHARED: u32 = 1;
/// [`RMA_FLAVORS`]'s `param`: shared-memory windows whose segments do not
/// fit together.
pub const FLAVOR_SHARED_LIMIT: u32 = 2;
/// [`RMA_FLAVORS`]'s `param`: shared-memory windows in a block's shared
/// memory.
pub const FLAVOR_BLOCK: u32 = 3;
/// Words [`FLAVOR_BLOCK`] records per rank.
pub const BLOCK_WORDS: u32 = 14;

/// Elements of `u32` each rank attaches for the ring of [`FLAVOR_DYNAMIC`].
pub const RING: usize = 4;

/// The value rank `origin` stores at element `k` of another rank's memory.
pub const fn flavor_value(origin: u32, k: u32) -> u32 {
    7000 + 100 * origin + k
}

/// Elements of rank `r`'s segment of the shared window of
/// [`FLAVOR_SHARED`].
pub const fn shared_len(r: u32) -> usize {
    (r % 3) as usize + 1
}

/// `len` `u32`s of rank `rank`'s part of `args.data`, starting at `first`
/// (`u32` elements); the callers take disjoint ranges.
fn words<'a>(args: &RmaArgs, rank: u32, first: usize, len: usize) -> Result<&'a mut [u32], Error> {
    let part = args.part as usize;
    // SAFETY: rank `rank`'s part is used by that rank only, and each
    // caller takes a range no other live one overlaps; the memory lives
    // for the launch.
    let w = unsafe { args.data.slice_mut(rank as usize * part, part) }?;
    let all: &mut [u32] = bytemuck::try_cast_slice_mut(w).map_err(|_| Error::Intern)?;
    let n = all.len();
    all.get_mut(first..first + len).ok_or(Error::OutOfBounds {
        index: (first + len) as u32,
        len: n as u32,
    })
}

gpu_mpi_device::kernel! {
    /// `param` selects the case:
    ///
    /// - [`FLAVOR_DYNAMIC`]: a dynamic window of `u32`. Records its
    ///   flavor, displacement unit and length (3 words) and an attach to
    ///   an allocated window (5 error words). Each rank attaches [`RING`]
    ///   elements of its part of `data` (elements 0..4), sends their
    ///   displacement to the previous rank, and between two fences puts
    ///   [`flavor_value`]s into the next rank's memory, then one element
    ///   past it and one at a byte inside an element (5 error words
    ///   each); after the fence it records its own memory (4 words).
    ///   It attaches [`MAX_REGIONS`] - 1 more regions of one element
    ///   (elements 4..), records a fifth region's attach (5 error words),
    ///   and the class of an empty attach (1 word). After it detached the
    ///   ring's memory and a barrier, a put to the next rank's old
    ///   displacement (5 error words). Ranks whose bit is set in `param2`
    ///   then try to attach an array on their stack (5 error words; on the
    ///   emulator with local stacks). Then a shared query of the dynamic
    ///   window (class, 1 word).
    /// - [`FLAVOR_SHARED`]: a shared-memory window of [`shared_len`]`(r)`
    ///   `u32`s on rank `r`. Records its flavor, displacement unit and
    ///   length (3 words); whether rank `r`'s segment directly follows
    ///   rank `r - 1`'s and the `PROC_NULL` query is rank 0's (2 words).
    ///   Each rank stores [`flavor_value`]s into its own segment, fences,
    ///   and records the next rank's segment as it loads it through
    ///   `shared_mut` (3 words, [`NONE`] past its length) and as a get
    ///   reads it (3 words); then the class of a query of rank `size`.
    /// - [`FLAVOR_SHARED_LIMIT`]: rank `r` asks a shared window for
    ///   `param2 * (r + 1)` `u32`s (5 error words), then for one `u32` each
    ///   (5 error words).
    /// - [`FLAVOR_BLOCK`] ([`BLOCK_WORDS`] words): on the communicator of
    ///   its block (`split_shared`), rank `b` of a block allocates a
    ///   shared window of [`shared_len`]`(b)` `u32`s and records whether it
    ///   is in the block's shared memory and its flavor (2 words). It
    ///   stores [`flavor_value`]`(b, k)` into its segment, fences, records
    ///   the next block rank's segment through `shared_mut` and through a
    ///   get (3 words each, [`NONE`] past its length); every rank adds 1 to
    ///   block rank 0's element 0 with an accumulate, and after a fence
    ///   records it with a get (1 word). Then whether these are in the
    ///   block's memory (1 word each): a shared window on the world, one
    ///   of `param2` `u32`s per rank on the block; whether a second window
    ///   allocated while the first lives is, and whether its segments lie
    ///   apart from the first's (2 words); whether a window allocated
    ///   after both were freed is, at the first's address (1 word).
    pub static RMA_FLAVORS = fn rma_flavors(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        let mut rec = Recorder::with_stride(args.out, r as i32, args.slots);
        match args.param {
            FLAVOR_DYNAMIC => dynamic(world, args, &mut rec, r, p),
            FLAVOR_SHARED => shared(world, &mut rec, r, p),
            FLAVOR_BLOCK => block(world, &mut rec, args.param2 as usize),
            _ => {
                let big = Window::<u32>::allocate_shared(world, (args.param2 * (r + 1)) as usize);
                rec.error_words(&big)?;
                if let Ok(w) = big {
                    w.free()?;
                }
                let small = Window::<u32>::allocate_shared(world, 1);
                rec.error_words(&small)?;
                small?.free()
            }
        }
    }
}

fn dynamic(world: &World, args: &RmaArgs, rec: &mut Recorder, r: u32, p: u32) -> Result<(), Error> {
    let win = Window::<u32>::create_dynamic(world)?;
    rec.words(&[win.flavor() as u32, win.disp_unit() as u32, win.len() as u32])?;
    {
        let mut one = [0u32];
        let other = Window::<u32>::allocate(world, 1)?;
        rec.error_words(&other.attach(&mut one[..]).map(|_| ()))?;
        other.free()?;
    }
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    let mut ring = win.attach(words(args, r, 0, RING)?)?;
    let mine = ring.disp(0) as u64;
    world.process_at_rank(prev as i32).send(&mine)?;
    let mut theirs = 0u64;
    world.process_at_rank(next as i32).receive_into(&mut theirs)?;
    let at = theirs as usize;
    win.fence()?;
    let values: [u32; RING + 1] = core::array::from_fn(|k| flavor_value(r, k as u32));
    win.put(&values[..RING], next as i32, at)?;
    rec.error_words(&win.put(&values[..1], next as i32, at + 4 * RING))?;
    rec.error_words(&win.put(&values[..1], next as i32, at + 2))?;
    win.fence()?;
    rec.words(ring.local_mut())?;
    {
        let mut extra: [_; MAX_REGIONS as usize - 1] = core::array::from_fn(|_| None);
        for (k, slot) in extra.iter_mut().enumerate() {
            *slot = Some(win.attach(words(args, r, RING + k, 1)?)?);
        }
        let fifth = win.attach(words(args, r, RING + MAX_REGIONS as usize - 1, 1)?);
        rec.error_words(&fifth.map(|_| ()))?;
        rec.class(&win.attach(&mut [][..]).map(|_| ()))?;
    }
    ring.detach();
    world.barrier()?;
    rec.error_words(&win.put(&values[..1], next as i32, at))?;
    if r < 32 && args.param2 & (1 << r) != 0 {
        let mut stack = [0u32; 2];
        rec.error_words(&win.attach(&mut stack[..]).map(|_| ()))?;
    }
    rec.class(&win.shared_query(0))?;
    win.fence()?;
    win.free()
}

fn shared(world: &World, rec: &mut Recorder, r: u32, p: u32) -> Result<(), Error> {
    let mut win = Window::<u32>::allocate_shared(world, shared_len(r))?;
    rec.words(&[win.flavor() as u32, win.disp_unit() as u32, win.len() as u32])?;
    let (mine, _) = win.shared_query(r as i32)?;
    let follows = if r == 0 {
        true
    } else {
        let (before, n) = win.shared_query(r as i32 - 1)?;
        before.wrapping_add(n) == mine
    };
    let (first, _) = win.shared_query(PROC_NULL)?;
    let (zero, _) = win.shared_query(0)?;
    rec.words(&[follows as u32, (first == zero) as u32])?;
    exchange_segments(&mut win, rec, r, ((r + 1) % p) as i32)?;
    rec.class(&win.shared_query(p as i32))?;
    win.fence()?;
    win.free()
}

/// Stores [`flavor_value`]s into rank `me`'s segment of a shared window of
/// [`shared_len`] elements per rank, fences, and records rank `next`'s
/// segment as `shared_mut` loads it and as a get reads it (3 words each,
/// [`NONE`] past its length).
fn exchange_segments(win: &mut Window<'_, u32>, rec: &mut Recorder, me: u32, next: i32) -> Result<(), Error> {
    for (k, v) in win.local_mut().iter_mut().enumerate() {
        *v = flavor_value(me, k as u32);
    }
    win.fence()?;
    let mut seen = [NONE; 3];
    let theirs = win.shared_mut(next)?;
    seen[..theirs.len()].copy_from_slice(theirs);
    rec.words(&seen)?;
    let mut got = [NONE; 3];
    win.get(&mut got[..shared_len(next as u32)], next, 0)?;
    rec.words(&got)
}

fn block(world: &World, rec: &mut Recorder, large: usize) -> Result<(), Error> {
    let comm = world.split_shared()?;
    let (b, n) = (comm.rank() as u32, comm.size() as u32);
    let mut win = Window::<u32>::allocate_shared(&comm, shared_len(b))?;
    rec.words(&[win.is_block_shared() as u32, win.flavor() as u32])?;
    exchange_segments(&mut win, rec, b, ((b + 1) % n) as i32)?;
    win.fence()?;
    win.accumulate(&[1], 0, 0, SystemOperation::sum())?;
    win.fence()?;
    let mut first = [NONE];
    win.get(&mut first, 0, 0)?;
    rec.words(&first)?;
    win.fence()?;

    let across = Window::<u32>::allocate_shared(world, 1)?;
    rec.words(&[across.is_block_shared() as u32])?;
    across.free()?;
    let big = Window::<u32>::allocate_shared(&comm, large)?;
    rec.words(&[big.is_block_shared() as u32])?;
    big.free()?;

    let (base, _) = win.shared_query(0)?;
    let (last, last_len) = win.shared_query(n as i32 - 1)?;
    let end = last.wrapping_add(last_len);
    let second = Window::<u32>::allocate_shared(&comm, shared_len(b))?;
    let (second_base, _) = second.shared_query(0)?;
    let (second_last, second_len) = second.shared_query(n as i32 - 1)?;
    let apart = second_base >= end || second_last.wrapping_add(second_len) <= base;
    rec.words(&[second.is_block_shared() as u32, apart as u32])?;
    second.free()?;
    win.free()?;
    let again = Window::<u32>::allocate_shared(&comm, shared_len(b))?;
    let (again_base, _) = again.shared_query(0)?;
    rec.words(&[(again.is_block_shared() && again_base == base) as u32])?;
    again.free()
}
