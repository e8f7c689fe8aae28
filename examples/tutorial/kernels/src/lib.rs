//! The kernels of the tutorial "MPI semantics on a GPU" (docs/tutorial/),
//! one per chapter. Each writes what it saw into a global buffer; the host
//! program (`examples/tutorial/src`) checks it and prints what the chapter
//! quotes.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::derived::{self, TypeRef};
use gpu_mpi_device::point_to_point::send_receive_into_with_tags;
use gpu_mpi_device::request::{self, wait_all, wait_any, AnyCompletion};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{intrinsics, Error, GlobalSlice, World};

/// Arguments of every tutorial kernel: a mode (what the chapter's variant
/// does), a count, and where the ranks write what they saw.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TutorialArgs {
    /// The variant of the chapter's program (see each kernel).
    pub mode: u32,
    /// A count whose meaning each kernel gives.
    pub count: u32,
    /// Chapter 8: the message size in `u64` words.
    pub words: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// What the ranks record (each kernel says where).
    pub out: GlobalSlice<u32>,
    /// Chapter 7: the host's committed datatype (its encoding words).
    pub datatype: GlobalSlice<u64>,
}

/// Words chapter 1 records per rank.
pub const WHERE_WORDS: usize = 5;

gpu_mpi_device::kernel! {
    /// Chapter 1, ranks are threads: rank `r` records its block, its thread
    /// in the block, its warp in the block, its lane (the hardware's
    /// `%laneid`) and the rank of lane 0 of its warp, learned by a warp
    /// shuffle (`shfl.sync` idx from lane 0), at `out[5 r..5 r + 5]`.
    pub static WHERE_AM_I = fn where_am_i(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let rank = world.rank() as u32;
        let block_dim = world.block_size() as u32;
        let thread = rank % block_dim;
        let leader = intrinsics::shfl_sync(intrinsics::warp_mask(), rank, 0);
        let base = rank as usize * WHERE_WORDS;
        let words = [rank / block_dim, thread, thread / 32, intrinsics::lane_id(), leader];
        for (i, w) in words.into_iter().enumerate() {
            args.out.write(base + i, w)?;
        }
        Ok(())
    }
}

/// Words chapter 2 records per receiving rank.
pub const ORDER_WORDS: usize = 10;

gpu_mpi_device::kernel! {
    /// Chapter 2, point-to-point and non-overtaking. The lower half of the
    /// ranks send, rank `r` to `r + size / 2`: four one-word messages
    /// `1000 r + k` (`k = 0..4`) with tags 1, 2, 1, 2, then three words with
    /// tag 3. The receiver takes: one with tag 2, one with any tag, one with
    /// any tag, one with tag 2, then the three words into a buffer of two.
    /// It records at `out[10 (r - size / 2)..]` the four values received,
    /// the four tags, the error class of the last receive and the first
    /// word it kept.
    pub static ORDERED = fn ordered(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let half = size / 2;
        if rank < half {
            let to = world.process_at_rank(rank + half);
            for (k, tag) in [1, 2, 1, 2].into_iter().enumerate() {
                to.send_with_tag(&(1000 * rank as u32 + k as u32), tag)?;
            }
            return to.send_with_tag(&[7u32, 8, 9], 3);
        }
        let from = world.process_at_rank(rank - half);
        let any = gpu_mpi_device::ANY_TAG;
        let base = (rank - half) as usize * ORDER_WORDS;
        for (i, tag) in [2, any, any, 2].into_iter().enumerate() {
            let mut value = 0u32;
            let status = from.receive_into_with_tag(&mut value, tag)?;
            args.out.write(base + i, value)?;
            args.out.write(base + 4 + i, status.tag() as u32)?;
        }
        let mut short = [0u32; 2];
        let class = match from.receive_into_with_tag(&mut short, 3) {
            Ok(_) => 0,
            Err(e) => e.class() as u32,
        };
        args.out.write(base + 8, class)?;
        args.out.write(base + 9, short[0])
    }
}

/// Longest message of chapter 3, in words.
pub const PROBE_MAX_WORDS: usize = 8;

gpu_mpi_device::kernel! {
    /// Chapter 3, probe and `ANY_SOURCE`. Every rank `r > 0` sends rank 0
    /// `r` words `100 r + i` with tag `r`. Rank 0 probes from any source
    /// and any tag, receives exactly the probed message from the probed
    /// source and tag into a buffer of the probed length, and records per
    /// message, in arrival order, at `out[3 k..]`: the source, the count and
    /// 1 if every word was `100 source + i` (else 0).
    pub static PROBE_ANY = fn probe_any(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        if rank != 0 {
            let mut words = [0u32; PROBE_MAX_WORDS];
            let n = (rank as usize).min(PROBE_MAX_WORDS);
            for (i, w) in words[..n].iter_mut().enumerate() {
                *w = 100 * rank as u32 + i as u32;
            }
            return world.process_at_rank(0).send_with_tag(&words[..n], rank);
        }
        for k in 0..(size - 1) as usize {
            let status = world.any_process().probe()?;
            let source = status.source_rank();
            let n = status.count::<u32>().unwrap_or(0).min(PROBE_MAX_WORDS);
            let mut words = [0u32; PROBE_MAX_WORDS];
            world
                .process_at_rank(source)
                .receive_into_with_tag(&mut words[..n], status.tag())?;
            let right = words[..n]
                .iter()
                .enumerate()
                .all(|(i, &w)| w == 100 * source as u32 + i as u32);
            args.out.write(3 * k, source as u32)?;
            args.out.write(3 * k + 1, n as u32)?;
            args.out.write(3 * k + 2, right as u32)?;
        }
        Ok(())
    }
}

/// Chapter 4's exchange: blocking send, then blocking receive.
pub const EXCHANGE_SEND_FIRST: u32 = 0;
/// Chapter 4's exchange with `send_receive_into` (MPI 3.10).
pub const EXCHANGE_SEND_RECEIVE: u32 = 1;
/// Chapter 4's exchange: blocking receive, then blocking send.
pub const EXCHANGE_RECEIVE_FIRST: u32 = 2;
/// Longest exchange of chapter 4, in `u64` words.
pub const EXCHANGE_MAX_WORDS: usize = 16;

gpu_mpi_device::kernel! {
    /// Chapter 4, deadlock. Ranks 0 and 1 exchange `count` words (at most
    /// 16): rank `r` sends `[r + 1; count]` and receives the other's, as
    /// `mode` says (`EXCHANGE_*`). Each records the first word received at
    /// `out[r]`. Other ranks do nothing.
    pub static EXCHANGE = fn exchange(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let rank = world.rank();
        if rank > 1 {
            return Ok(());
        }
        let other = world.process_at_rank(1 - rank);
        let n = (args.count as usize).min(EXCHANGE_MAX_WORDS);
        let mine = [rank as u64 + 1; EXCHANGE_MAX_WORDS];
        let mut theirs = [0u64; EXCHANGE_MAX_WORDS];
        match args.mode {
            EXCHANGE_SEND_FIRST => {
                other.send_with_tag(&mine[..n], 0)?;
                other.receive_into_with_tag(&mut theirs[..n], 0)?;
            }
            EXCHANGE_SEND_RECEIVE => {
                send_receive_into_with_tags(&mine[..n], &other, 0, &mut theirs[..n], &other, 0)?;
            }
            _ => {
                other.receive_into_with_tag(&mut theirs[..n], 0)?;
                other.send_with_tag(&mine[..n], 0)?;
            }
        }
        args.out.write(rank as usize, theirs[0] as u32)
    }
}

/// Chapter 5's program: broadcast, all-reduce, scan.
pub const COLLECTIVES_RESULTS: u32 = 0;
/// Chapter 5's program: `count` barriers.
pub const COLLECTIVES_BARRIERS: u32 = 1;
/// Words chapter 5 records per rank.
pub const COLLECTIVE_WORDS: usize = 4;

gpu_mpi_device::kernel! {
    /// Chapter 5, collectives. `COLLECTIVES_RESULTS`: rank `count` (the
    /// root) broadcasts `[42, root]`; all ranks all-reduce their rank (sum)
    /// and scan it exclusively (sum); rank `r` records the two broadcast
    /// words, the sum and its prefix at `out[4 r..]`. `COLLECTIVES_BARRIERS`:
    /// `count` world barriers, nothing recorded.
    pub static COLLECTIVES = fn collectives(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        if args.mode == COLLECTIVES_BARRIERS {
            for _ in 0..args.count {
                world.barrier()?;
            }
            return Ok(());
        }
        let rank = world.rank() as u32;
        let root = world.process_at_rank(args.count as i32);
        let mut word = [0u32; 2];
        if rank == args.count {
            word = [42, rank];
        }
        root.broadcast_into(&mut word)?;
        let mut sum = 0u32;
        world.all_reduce_into(&rank, &mut sum, SystemOperation::sum())?;
        let mut prefix = 0u32;
        world.exclusive_scan_into(&rank, &mut prefix, SystemOperation::sum())?;
        let base = rank as usize * COLLECTIVE_WORDS;
        for (i, w) in [word[0], word[1], sum, prefix].into_iter().enumerate() {
            args.out.write(base + i, w)?;
        }
        Ok(())
    }
}

/// Words of chapter 6's ring message (more than a 64-byte slot holds).
pub const RING_WORDS: usize = 16;

gpu_mpi_device::kernel! {
    /// Chapter 6, non-blocking communication. First a ring: every rank
    /// posts a receive of 16 words from its left neighbour and a send of
    /// 16 words `[r; 16]` to its right one in one `request::scope`, then
    /// waits for both (`wait_all`); it records the first and last word
    /// received at `out[2 r..]`. Then rank 0 posts one receive from each of
    /// ranks 1..size (at most 8: one per request record of the rank) and
    /// takes them with `wait_any` as they complete; it records the sources in
    /// completion order at `out[2 size..]`, then their sum of payloads
    /// (`10 r` each). Ranks 1..size send `10 r` to rank 0 after the ring (a
    /// barrier keeps the two parts apart).
    pub static NONBLOCKING = fn nonblocking(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let left = world.process_at_rank((rank + size - 1) % size);
        let right = world.process_at_rank((rank + 1) % size);
        let mine = [rank as u64; RING_WORDS];
        let mut theirs = [0u64; RING_WORDS];
        request::scope(|scope| -> Result<(), Error> {
            let mut requests = [
                left.immediate_receive_into(scope, &mut theirs)?,
                right.immediate_send(scope, &mine)?,
            ];
            wait_all(&mut requests, &mut [])
        })?;
        args.out.write(2 * rank as usize, theirs[0] as u32)?;
        args.out.write(2 * rank as usize + 1, theirs[RING_WORDS - 1] as u32)?;
        world.barrier()?;
        if rank != 0 {
            return world.process_at_rank(0).send(&(10 * rank as u32));
        }
        let senders = ((size - 1) as usize).min(request::MAX_REQUESTS);
        let mut values = [0u32; request::MAX_REQUESTS];
        let base = 2 * size as usize;
        let mut sum = 0;
        request::scope(|scope| -> Result<(), Error> {
            let mut requests = [const { gpu_mpi_device::Request::null() }; request::MAX_REQUESTS];
            for (i, v) in values[..senders].iter_mut().enumerate() {
                requests[i] = world.process_at_rank(i as i32 + 1).immediate_receive_into(scope, v)?;
            }
            let mut k = 0;
            while let AnyCompletion::Completed { result, .. } = wait_any(&mut requests[..senders])? {
                let status = result?;
                args.out.write(base + k, status.source_rank() as u32)?;
                k += 1;
            }
            Ok(())
        })?;
        for v in &values[..senders] {
            sum += v;
        }
        args.out.write(base + senders, sum)
    }
}

/// Rows and columns of chapter 7's matrix.
pub const MATRIX_SIDE: usize = 4;

gpu_mpi_device::kernel! {
    /// Chapter 7, datatypes. `args.datatype` holds the host's commit of a
    /// column of a 4 x 4 row-major `f64` matrix (`vector(4, 1, 4)`). Rank 0
    /// fills its matrix with `10 i + j`, packs column `count` with the
    /// host's type and sends the 32 packed bytes to rank 1, which unpacks
    /// them into the same column of its zeroed matrix. Rank 1 records its
    /// matrix as `u32` (16 words), then 1 if the host's encoding equals
    /// `derived::vector::<f64>(4, 1, 4)` built in the kernel, then the error
    /// class of packing into a buffer one byte short.
    pub static DATATYPES = fn datatypes(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let rank = world.rank();
        if rank > 1 {
            return Ok(());
        }
        // SAFETY: the host wrote the encoding before the launch and no rank
        // writes `args.datatype`.
        let column = unsafe { TypeRef::from_global(&args.datatype)? };
        let col = (args.count as usize).min(MATRIX_SIDE - 1);
        let mut matrix = [0f64; MATRIX_SIDE * MATRIX_SIDE];
        let mut packed = [0u8; MATRIX_SIDE * 8];
        if rank == 0 {
            for (k, m) in matrix.iter_mut().enumerate() {
                *m = (10 * (k / MATRIX_SIDE) + k % MATRIX_SIDE) as f64;
            }
            let bytes: &[u8] = bytemuck::cast_slice(&matrix);
            derived::pack_into(&bytes[col * 8..], 1, &column, &mut packed)?;
            return world.process_at_rank(1).send(&packed);
        }
        world.process_at_rank(0).receive_into(&mut packed)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut matrix);
        derived::unpack_from(&packed, 1, &column, &mut bytes[col * 8..])?;
        for (k, m) in matrix.iter().enumerate() {
            args.out.write(k, *m as u32)?;
        }
        let built = derived::vector::<f64>(MATRIX_SIDE as u32, 1, MATRIX_SIDE as i32);
        let mut same = built.len() == args.datatype.len();
        for (i, w) in built.iter().enumerate() {
            same &= args.datatype.read(i).ok() == Some(*w);
        }
        args.out.write(16, same as u32)?;
        let mut short = [0u8; MATRIX_SIDE * 8 - 1];
        let source: &[u8] = bytemuck::cast_slice(&matrix);
        let class = match derived::pack_into(source, 1, &column, &mut short) {
            Ok(_) => 0,
            Err(e) => e.class() as u32,
        };
        args.out.write(17, class)
    }
}

gpu_mpi_device::kernel! {
    /// Chapter 8, what a message costs: rank 0 and rank `mode` play
    /// `count` rounds of ping-pong with messages of `words` `u64` words (at
    /// most 16); the peer adds 1 to every word. Each round is two messages.
    /// Rank 0 records the number of rounds whose reply was right at
    /// `out[0]`.
    pub static COST = fn cost(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        let rank = world.rank();
        let peer = args.mode as i32;
        let n = (args.words as usize).min(EXCHANGE_MAX_WORDS);
        let mut buf = [0u64; EXCHANGE_MAX_WORDS];
        if rank == 0 {
            let to = world.process_at_rank(peer);
            let mut right = 0;
            for round in 0..args.count as u64 {
                buf[..n].fill(round);
                to.send(&buf[..n])?;
                to.receive_into(&mut buf[..n])?;
                right += buf[..n].iter().all(|&w| w == round + 1) as u32;
            }
            return args.out.write(0, right);
        }
        if rank == peer {
            let from = world.process_at_rank(0);
            for _ in 0..args.count {
                from.receive_into(&mut buf[..n])?;
                for w in &mut buf[..n] {
                    *w += 1;
                }
                from.send(&buf[..n])?;
            }
        }
        Ok(())
    }
}

/// Ranks of chapter 9's world.
pub const ONE_SIDED_RANKS: u32 = 16;
/// Chapter 9: each rank puts its value into rank 0's window between two
/// fences.
pub const ONE_SIDED_FENCE: u32 = 0;
/// Chapter 9: every rank takes a ticket from rank 0's counter with
/// `fetch_and_op` under `lock_all`.
pub const ONE_SIDED_TICKETS: u32 = 1;
/// Chapter 9: a ring of notified puts.
pub const ONE_SIDED_NOTIFY: u32 = 2;
/// Chapter 9: a put before any epoch is open.
pub const ONE_SIDED_NO_EPOCH: u32 = 3;
/// Chapter 9: rank 1 returns while it holds rank 0's lock, which rank 0
/// then waits for.
pub const ONE_SIDED_LOCK_LEFT: u32 = 4;

gpu_mpi_device::kernel! {
    /// Chapter 9, one-sided communication (MPI 4.1 chapter 12) on a window
    /// of `ONE_SIDED_RANKS` `u32`s per rank (`Window::allocate`):
    /// - `ONE_SIDED_FENCE`: rank `r` puts `10 r` into element `r` of rank
    ///   0's window between two fences; rank 0 records its window at
    ///   `out[0..16]`;
    /// - `ONE_SIDED_TICKETS`: every rank adds 1 to element 0 of rank 0's
    ///   window with `fetch_and_op` under `lock_all`, and records what it
    ///   fetched, its ticket, at `out[r]`;
    /// - `ONE_SIDED_NOTIFY`: rank `r` puts `100 + r` into element 0 of
    ///   rank `r + 1`'s window with `put_notify`, waits for the one
    ///   notification its own window gets, and records element 0 at `out[r]`;
    /// - `ONE_SIDED_NO_EPOCH`: a put before any fence or lock: returns the
    ///   error;
    /// - `ONE_SIDED_LOCK_LEFT` (two ranks): rank 1 locks rank 0
    ///   exclusively, tells rank 0 with a message and returns without
    ///   unlocking; rank 0 then asks for the same lock.
    pub static ONE_SIDED = fn one_sided(world: &World, args: &TutorialArgs) -> Result<(), Error> {
        use gpu_mpi_device::window::{LockType, Window};
        let r = world.rank();
        let mut win = Window::<u32>::allocate(world, ONE_SIDED_RANKS as usize)?;
        match args.mode {
            ONE_SIDED_FENCE => {
                win.local_mut().fill(0);
                win.fence()?;
                win.put(&[10 * r as u32], 0, r as usize)?;
                win.fence()?;
                if r == 0 {
                    for (i, v) in win.local_mut().iter().enumerate() {
                        args.out.write(i, *v)?;
                    }
                }
            }
            ONE_SIDED_TICKETS => {
                win.local_mut()[0] = 0;
                world.barrier()?;
                win.lock_all()?;
                let mut ticket = 0u32;
                win.fetch_and_op(&1, &mut ticket, 0, 0, SystemOperation::sum())?;
                win.unlock_all()?;
                args.out.write(r as usize, ticket)?;
            }
            ONE_SIDED_NOTIFY => {
                win.lock_all()?;
                let next = (r + 1) % world.size();
                win.put_notify(&[100 + r as u32], next, 0, 0)?;
                win.wait_notifications(0, 1)?;
                win.unlock_all()?;
                args.out.write(r as usize, win.local_mut()[0])?;
            }
            ONE_SIDED_NO_EPOCH => {
                win.put(&[1], (r + 1) % world.size(), 0)?;
            }
            _ => {
                if r == 1 {
                    win.lock(LockType::Exclusive, 0)?;
                    world.process_at_rank(0).send(&1u32)?;
                    return Ok(());
                }
                world.process_at_rank(1).receive_into(&mut 0u32)?;
                win.lock(LockType::Exclusive, 0)?;
                win.unlock(0)?;
            }
        }
        win.free()
    }
}
