//! Point-to-point semantic kernels (MPI 4.1 chapter 3).
//!
//! Record formats are given per case as word lists; a "status" is the four
//! words of [`Recorder::status`] (class, source, tag, bytes).

use super::{at, count_word, fill_pattern, prefix, prefix_mut, CaseArgs, Recorder, NONE};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{CommunicatorCollectives, Root, SystemOperation};
use gpu_mpi_device::point_to_point::{
    send_receive_into, send_receive_into_with_tags, send_receive_replace_into_with_tags,
};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, Status, World, ANY_TAG};

/// `p2p` case: every rank but 0 sends `[r, 3r + 1, 0xA11 ^ r]` with tag
/// `r % 7` to rank 0, which receives `size - 1` messages from any source
/// with any tag. Rank 0 records, per receive: status, 3 payload words.
pub const P2P_ALL_TO_ONE_ANY: u32 = 0;
/// `p2p` case: as [`P2P_ALL_TO_ONE_ANY`], but rank 0 receives from each
/// source in descending rank order with the tag it expects (`source % 7`).
pub const P2P_ALL_TO_ONE_SPECIFIC: u32 = 1;
/// `p2p` case: `param` rounds of a ring shift with `send_receive_into_with_tags`
/// (to `r + 1`, from `r - 1`, tag = round); message `[r, round, param2]`.
/// Records per round: status, 3 payload words.
pub const P2P_RING: u32 = 2;
/// `p2p` case: rank `r` and `r ^ 1` exchange with blocking calls (even
/// sends `[r, 77]` tag 11 first, odd receives first and answers tag 12); a
/// rank without partner receives from the null process. Records: status, 2
/// payload words.
pub const P2P_PAIRS: u32 = 3;
/// `p2p` case: `size - 1` rounds of `send_receive_into`; in round `k` rank
/// `r` sends `[r, dest, k]` with tag `k` to `r + k` and receives from any
/// source with any tag. Records per round: status, 3 payload words.
pub const P2P_ALL_TO_ALL: u32 = 4;
/// `p2p` case: every rank sends itself `[30 + r, 1, 2]` tag 3, `[10 + r]`
/// tag 1, `[20 + r, 5]` tag 2, then receives tags 1, 2, 3, then
/// `send_receive_into` itself `[40 + r]` (tag 0). Records per receive:
/// status, first payload word.
pub const P2P_SELF: u32 = 5;
/// `p2p` case: every rank sends `r + 1` an empty `u32` message with tag 9
/// and `[r]` with tag 10, then receives both from `r - 1` into a buffer
/// pre-filled with `0xAAAA_AAAA`. Records: status, count of `u32`, buffer
/// word 0; status, buffer word 0.
pub const P2P_ZERO_LENGTH: u32 = 6;
/// `p2p` case: the null process. Records: send class; send (tag 5) class;
/// receive status, buffer word (pre-filled `0x1234_5678`), count of `u32`;
/// receive (tag 3) status; probe status; immediate probe (5 words);
/// `send_receive_into` null/null status and buffer word.
pub const P2P_NULL: u32 = 7;
/// `p2p` case: a ring shift with `send_receive_replace_into` of 16 words
/// (staged): rank `r` sends `[r * 100 + i]`, tag 4. Records: status, words
/// 0 and 15.
pub const P2P_REPLACE: u32 = 8;

/// Words one rank records in a `p2p` case in a world of `size` ranks
/// (`param` as for the case).
pub fn p2p_stride(case: u32, size: u32, param: u32) -> u32 {
    let others = size.saturating_sub(1).max(1);
    match case {
        P2P_ALL_TO_ONE_ANY | P2P_ALL_TO_ONE_SPECIFIC | P2P_ALL_TO_ALL => 7 * others,
        P2P_RING => 7 * param.max(1),
        P2P_PAIRS => 6,
        P2P_SELF => 4 * 5,
        P2P_ZERO_LENGTH => 6 + 5,
        P2P_NULL => 1 + 1 + 6 + 4 + 4 + 5 + 5,
        P2P_REPLACE => 6,
        _ => 1,
    }
}

/// Payload of rank `r` in the all-to-one cases.
pub fn all_to_one_message(r: u32) -> [u32; 3] {
    [r, 3 * r + 1, 0xA11 ^ r]
}

gpu_mpi_device::kernel! {
    /// Point-to-point patterns: the `P2P_*` cases.
    pub static SEMANTICS_P2P = fn semantics_p2p(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            P2P_ALL_TO_ONE_ANY | P2P_ALL_TO_ONE_SPECIFIC => all_to_one(world, args.case, &mut rec),
            P2P_RING => ring(world, args, &mut rec),
            P2P_PAIRS => pairs(world, &mut rec),
            P2P_ALL_TO_ALL => all_to_all(world, &mut rec),
            P2P_SELF => to_self(world, &mut rec),
            P2P_ZERO_LENGTH => zero_length(world, &mut rec),
            P2P_NULL => null_process(world, &mut rec),
            P2P_REPLACE => replace(world, &mut rec),
            _ => rec.push(NONE),
        }
    }
}

fn all_to_one(world: &World, case: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        let msg = all_to_one_message(rank as u32);
        return rec.class(&world.process_at_rank(0).send_with_tag(&msg[..], rank % 7));
    }
    for i in 1..size {
        let mut buf = [NONE; 3];
        let r = if case == P2P_ALL_TO_ONE_ANY {
            world.any_process().receive_into(&mut buf[..])
        } else {
            let source = size - i;
            world
                .process_at_rank(source)
                .receive_into_with_tag(&mut buf[..], source % 7)
        };
        rec.status(&r)?;
        rec.words(&buf)?;
    }
    Ok(())
}

fn ring(world: &World, args: &CaseArgs, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let right = world.process_at_rank((rank + 1) % size);
    let left = world.process_at_rank((rank + size - 1) % size);
    for round in 0..args.param {
        let msg = [rank as u32, round, args.param2];
        let mut buf = [NONE; 3];
        let tag = round as i32;
        let r = send_receive_into_with_tags(&msg[..], &right, tag, &mut buf[..], &left, tag);
        rec.status(&r)?;
        rec.words(&buf)?;
    }
    Ok(())
}

fn pairs(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let rank = world.rank();
    let partner = rank ^ 1;
    let mut buf = [NONE; 2];
    let r = if partner >= world.size() {
        world.null_process().receive_into(&mut buf[..])
    } else {
        let p = world.process_at_rank(partner);
        let msg = [rank as u32, 77];
        if rank % 2 == 0 {
            p.send_with_tag(&msg[..], 11)?;
            p.receive_into_with_tag(&mut buf[..], 12)
        } else {
            let r = p.receive_into_with_tag(&mut buf[..], 11);
            p.send_with_tag(&msg[..], 12)?;
            r
        }
    };
    rec.status(&r)?;
    rec.words(&buf)
}

fn all_to_all(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    for k in 1..size {
        let dest = (rank + k) % size;
        let msg = [rank as u32, dest as u32, k as u32];
        let mut buf = [NONE; 3];
        let to = world.process_at_rank(dest);
        let r = send_receive_into_with_tags(&msg[..], &to, k, &mut buf[..], &world.any_process(), ANY_TAG);
        rec.status(&r)?;
        rec.words(&buf)?;
    }
    Ok(())
}

fn to_self(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let rank = world.rank() as u32;
    let me = world.process_at_rank(world.rank());
    me.send_with_tag(&[30 + rank, 1, 2][..], 3)?;
    me.send_with_tag(&[10 + rank][..], 1)?;
    me.send_with_tag(&[20 + rank, 5][..], 2)?;
    for tag in [1, 2, 3] {
        let mut buf = [NONE; 4];
        let r = me.receive_into_with_tag(&mut buf[..], tag);
        rec.status(&r)?;
        rec.push(buf[0])?;
    }
    let mut buf = [NONE; 2];
    let r = send_receive_into(&[40 + rank][..], &me, &mut buf[..], &me);
    rec.status(&r)?;
    rec.push(buf[0])
}

fn zero_length(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let right = world.process_at_rank((rank + 1) % size);
    let left = world.process_at_rank((rank + size - 1) % size);
    let empty: [u32; 0] = [];
    right.send_with_tag(&empty[..], 9)?;
    right.send_with_tag(&[rank as u32][..], 10)?;
    let mut buf = [0xAAAA_AAAAu32; 4];
    let r = left.receive_into_with_tag(&mut buf[..], 9);
    rec.status(&r)?;
    rec.push(r.map_or(NONE, |s| count_word(s.count::<u32>())))?;
    rec.push(buf[0])?;
    let r = left.receive_into_with_tag(&mut buf[..], 10);
    rec.status(&r)?;
    rec.push(buf[0])
}

fn null_process(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let null = world.null_process();
    rec.class(&null.send(&5u32))?;
    rec.class(&null.send_with_tag(&[1u8, 2, 3][..], 5))?;
    let mut buf = [0x1234_5678u32; 2];
    let r = null.receive_into(&mut buf[..]);
    rec.status(&r)?;
    rec.push(buf[0])?;
    rec.push(r.map_or(NONE, |s| count_word(s.count::<u32>())))?;
    rec.status(&null.receive_into_with_tag(&mut buf[..], 3))?;
    rec.status(&null.probe())?;
    rec.maybe_status(&null.immediate_probe())?;
    let r = send_receive_into(&[9u32][..], &null, &mut buf[..], &null);
    rec.status(&r)?;
    rec.push(buf[0])
}

fn replace(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let right = world.process_at_rank((rank + 1) % size);
    let left = world.process_at_rank((rank + size - 1) % size);
    let mut buf = [0u32; 16];
    for (i, w) in buf.iter_mut().enumerate() {
        *w = rank as u32 * 100 + i as u32;
    }
    let r = send_receive_replace_into_with_tags(&mut buf[..], &right, 4, &left, 4);
    rec.status(&r)?;
    rec.words(&[buf[0], buf[15]])
}

/// `probe` case: pairs (`2k` receives from `2k + 1`; a rank without partner
/// sends to itself). See [`semantics_probe`] for the record.
pub const PROBE_PAIRS: u32 = 0;
/// `probe` case: every rank but 0 sends two messages to rank 0 (message `j`
/// of rank `r`: tag `(r + j) % 3`, `(r + j) % 4 + 1` words `[100 r + j, r,
/// ...]`); rank 0 probes any source and any tag, then receives from the
/// probed source with the probed tag. Rank 0 records per message: probe
/// status, receive status, payload word 0.
pub const PROBE_ANY_SOURCE: u32 = 1;

/// Words one rank records in a `probe` case.
pub fn probe_stride(case: u32, size: u32) -> u32 {
    match case {
        PROBE_PAIRS => 33,
        _ => 9 * 2 * size.saturating_sub(1).max(1),
    }
}

/// The three messages of [`PROBE_PAIRS`] from `source`: (tag, words).
pub fn probe_messages(source: u32) -> [(i32, [u32; 4], usize); 3] {
    [
        (5, [1, source, 0, 0], 2),
        (3, [2, source, 22, 0], 3),
        (5, [3, source, 33, 44], 4),
    ]
}

gpu_mpi_device::kernel! {
    /// Probes. [`PROBE_PAIRS`]: the receiver records
    /// 1. immediate probe (any source, any tag) before the barrier: 0 or 1;
    /// 2. after the barrier, `any.probe()` status (must be message 1);
    /// 3. `partner.probe_with_tag(3)` status (message 2);
    /// 4. receive from the source and tag of (2): status, payload words 0, 1;
    /// 5. `partner.immediate_probe_with_tag(3)`: 5 words (message 2);
    /// 6. `any.receive_into_with_tag(3)`: status, payload words 0, 1;
    /// 7. `partner.receive_into`: status, payload words 0, 1 (message 3);
    /// 8. immediate probe (any, any): 0 or 1.
    pub static SEMANTICS_PROBE = fn semantics_probe(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            PROBE_PAIRS => probe_pairs(world, &mut rec),
            PROBE_ANY_SOURCE => probe_any_source(world, &mut rec),
            _ => rec.push(NONE),
        }
    }
}

fn probe_pairs(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let receiver = rank % 2 == 0;
    let partner = if receiver {
        if rank + 1 < size {
            rank + 1
        } else {
            rank
        }
    } else {
        rank - 1
    };
    let any = world.any_process();
    if receiver {
        let early = any.immediate_probe();
        rec.push(match early {
            Ok(None) => 0,
            Ok(Some(_)) => 1,
            Err(e) => 100 + e.class() as u32,
        })?;
    }
    world.barrier()?;
    if !receiver || partner == rank {
        let dest = world.process_at_rank(if receiver { rank } else { partner });
        for (tag, words, n) in probe_messages(rank as u32) {
            dest.send_with_tag(prefix(&words, n)?, tag)?;
        }
        if !receiver {
            return Ok(());
        }
    }
    let p = world.process_at_rank(partner);
    let first = any.probe();
    rec.status(&first)?;
    rec.status(&p.probe_with_tag(3))?;
    let mut buf = [NONE; 4];
    let (src, tag) = match first {
        Ok(s) => (s.source_rank(), s.tag()),
        Err(_) => (partner, ANY_TAG),
    };
    rec.status(
        &world
            .process_at_rank(src)
            .receive_into_with_tag(&mut buf[..], tag),
    )?;
    rec.words(&[buf[0], buf[1]])?;
    rec.maybe_status(&p.immediate_probe_with_tag(3))?;
    let mut buf = [NONE; 4];
    rec.status(&any.receive_into_with_tag(&mut buf[..], 3))?;
    rec.words(&[buf[0], buf[1]])?;
    let mut buf = [NONE; 4];
    rec.status(&p.receive_into(&mut buf[..]))?;
    rec.words(&[buf[0], buf[1]])?;
    rec.push(match any.immediate_probe() {
        Ok(None) => 0,
        Ok(Some(_)) => 1,
        Err(e) => 100 + e.class() as u32,
    })
}

/// Message `j` of rank `r` in [`PROBE_ANY_SOURCE`]: (tag, words, length).
pub fn probe_any_message(r: u32, j: u32) -> (i32, [u32; 4], usize) {
    (
        ((r + j) % 3) as i32,
        [100 * r + j, r, j, 7],
        ((r + j) % 4 + 1) as usize,
    )
}

fn probe_any_source(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        let zero = world.process_at_rank(0);
        for j in 0..2 {
            let (tag, words, n) = probe_any_message(rank as u32, j);
            zero.send_with_tag(prefix(&words, n)?, tag)?;
        }
        return Ok(());
    }
    for _ in 0..2 * (size - 1) {
        let probed = world.any_process().probe();
        rec.status(&probed)?;
        let mut buf = [NONE; 8];
        let r = match probed {
            Ok(s) => world
                .process_at_rank(s.source_rank())
                .receive_into_with_tag(&mut buf[..], s.tag()),
            Err(e) => Err(e),
        };
        rec.status(&r)?;
        rec.push(buf[0])?;
    }
    Ok(())
}

/// Words per rank of [`SEMANTICS_TRUNCATION`].
pub const TRUNCATION_STRIDE: u32 = 11;
/// Guard bytes after each receive region of [`SEMANTICS_TRUNCATION`].
pub const TRUNCATION_GUARD: usize = 64;
/// What [`SEMANTICS_TRUNCATION`] pre-fills receive regions with.
pub const FILL_BYTE: u8 = 0xEE;

/// Bytes of `data` one rank uses in [`SEMANTICS_TRUNCATION`]: the message,
/// then `capacity + TRUNCATION_GUARD` receive bytes.
pub fn truncation_region(message: u32, capacity: u32) -> usize {
    (message as usize + capacity as usize + TRUNCATION_GUARD).next_multiple_of(8)
}

gpu_mpi_device::kernel! {
    /// Truncation: rank `r` and `r ^ 1` (or itself) exchange a `param`-byte
    /// message (byte pattern of the sender, tag 4) received into `param2`
    /// bytes, then `[0xBEEF, r]` (tag 5) into 4 words. Data region of rank
    /// `r` ([`truncation_region`]): its message, then its receive buffer and
    /// guard (pre-filled with [`FILL_BYTE`]). Records: status, the error's
    /// capacity (or [`NONE`]), status of the second message, its 2 words.
    pub static SEMANTICS_TRUNCATION = fn semantics_truncation(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let (len, cap) = (args.param as usize, args.param2 as usize);
        let region = truncation_region(args.param, args.param2);
        // SAFETY: every rank touches only its own region of `data`.
        let mine = unsafe { args.data.slice_mut(rank as usize * region, region)? };
        let (msg, rest) = mine.split_at_mut(len.min(region));
        fill_pattern(msg, rank as u32);
        rest.fill(FILL_BYTE);
        let recv = prefix_mut(rest, cap)?;
        let partner = if (rank ^ 1) < size { rank ^ 1 } else { rank };
        let p = world.process_at_rank(partner);
        let small = [0xBEEFu32, rank as u32];
        let mut got = [NONE; 4];
        let (big, second);
        if partner == rank {
            big = send_receive_into_with_tags(&msg[..], &p, 4, recv, &p, 4);
            p.send_with_tag(&small[..], 5)?;
            second = p.receive_into_with_tag(&mut got[..], 5);
        } else if rank % 2 == 0 {
            p.send_with_tag(&msg[..], 4)?;
            p.send_with_tag(&small[..], 5)?;
            big = p.receive_into_with_tag(recv, 4);
            second = p.receive_into_with_tag(&mut got[..], 5);
        } else {
            big = p.receive_into_with_tag(recv, 4);
            second = p.receive_into_with_tag(&mut got[..], 5);
            p.send_with_tag(&msg[..], 4)?;
            p.send_with_tag(&small[..], 5)?;
        }
        rec.status(&big)?;
        rec.push(match big {
            Err(Error::Truncate { capacity_bytes, .. }) => capacity_bytes,
            _ => NONE,
        })?;
        rec.status(&second)?;
        rec.words(&[got[0], got[1]])
    }
}

/// `large` case: ring shift with `send_receive_into` (tag 6).
pub const LARGE_RING: u32 = 0;
/// `large` case: pairs `r`, `r ^ 1` with blocking calls (even sends first,
/// tag 6); a rank without partner uses `send_receive_into` with itself.
pub const LARGE_PAIRS: u32 = 1;
/// `large` case: pairs; even ranks `send_receive_replace_into` their send
/// region (tag 6), odd ranks receive into their receive region, then send
/// their send region.
pub const LARGE_REPLACE: u32 = 2;
/// `large` case: ring shift with `send_receive_replace_into_with_tags` of
/// the send region (tag 6): larger than a slot, no staging (MPI 3.10).
pub const LARGE_REPLACE_RING: u32 = 3;
/// Words per rank of [`SEMANTICS_LARGE`].
pub const LARGE_STRIDE: u32 = 4;

gpu_mpi_device::kernel! {
    /// Messages of `param` bytes from global memory (direct or streamed,
    /// as the world's flags say). Data region of rank `r`: `2 * param`
    /// bytes, its send region (filled with its byte pattern) then its
    /// receive region. Records: the receive's status.
    pub static SEMANTICS_LARGE = fn semantics_large(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let len = args.param as usize;
        // SAFETY: every rank touches only its own region of `data`.
        let mine = unsafe { args.data.slice_mut(rank as usize * 2 * len, 2 * len)? };
        let (send, recv) = mine.split_at_mut(len);
        fill_pattern(send, rank as u32);
        let partner = if (rank ^ 1) < size { rank ^ 1 } else { rank };
        let p = world.process_at_rank(partner);
        let r = match args.case {
            LARGE_REPLACE_RING => {
                let right = world.process_at_rank((rank + 1) % size);
                let left = world.process_at_rank((rank + size - 1) % size);
                send_receive_replace_into_with_tags(send, &right, 6, &left, 6)
            }
            LARGE_RING => {
                let right = world.process_at_rank((rank + 1) % size);
                let left = world.process_at_rank((rank + size - 1) % size);
                send_receive_into_with_tags(&send[..], &right, 6, recv, &left, 6)
            }
            LARGE_PAIRS if partner == rank => send_receive_into_with_tags(&send[..], &p, 6, recv, &p, 6),
            LARGE_PAIRS if rank % 2 == 0 => {
                p.send_with_tag(&send[..], 6)?;
                p.receive_into_with_tag(recv, 6)
            }
            LARGE_PAIRS => {
                let r = p.receive_into_with_tag(recv, 6);
                p.send_with_tag(&send[..], 6)?;
                r
            }
            LARGE_REPLACE if rank % 2 == 0 && partner != rank => send_receive_replace_into_with_tags(send, &p, 6, &p, 6),
            LARGE_REPLACE if partner != rank => {
                let r = p.receive_into_with_tag(recv, 6);
                p.send_with_tag(&send[..], 6)?;
                r
            }
            _ => world.null_process().receive_into(recv),
        };
        rec.status(&r)
    }
}

/// `ordering` case: pairs; odd rank `r` sends `param` messages to `r - 1`
/// (message `i`: tag `i % 3`, `i % 4 + 1` words `[i, r, ...]`), the even
/// rank receives them all from its partner with any tag (a rank without
/// partner sends to itself first). Records per message: status, payload
/// word 0.
pub const ORDER_ANY_TAG: u32 = 0;
/// `ordering` case: every rank but 0 sends `param` messages to rank 0
/// (message `i`: tag `i % 2`, `[i, r]`; every third message is 80 words,
/// longer than a slot); rank 0 receives them with any source and any tag.
/// Records per message: status, payload words 0 and 1.
pub const ORDER_ANY_SOURCE: u32 = 1;
/// `ordering` case: as [`ORDER_ANY_SOURCE`] with eager messages only, but
/// rank 0 first receives every tag-1 message (any source, tag 1), then the
/// rest (any source, tag 0). Needs `param` slots per rank.
pub const ORDER_ANY_SOURCE_BY_TAG: u32 = 2;
/// `ordering` case: as [`ORDER_ANY_SOURCE_BY_TAG`], but rank 0 receives
/// from each sender in turn, naming it: first its tag-1 messages, then its
/// tag-0 ones. Its receives wait while other senders' messages and the
/// sender's own of the other tag arrive (a blocking receive alone matches
/// what its inbox holds as it takes it). Needs `param` slots per rank.
pub const ORDER_SOURCE_BY_TAG: u32 = 3;

/// Words one rank records in an `ordering` case.
pub fn ordering_stride(case: u32, size: u32, param: u32) -> u32 {
    match case {
        ORDER_ANY_TAG => 5 * param.max(1),
        _ => 6 * param.max(1) * size.saturating_sub(1).max(1),
    }
}

/// Length in words of message `i` in [`ORDER_ANY_SOURCE`].
pub fn ordering_length(case: u32, i: u32) -> usize {
    match case {
        ORDER_ANY_TAG => (i % 4 + 1) as usize,
        ORDER_ANY_SOURCE if i % 3 == 2 => 80,
        _ => 2,
    }
}

gpu_mpi_device::kernel! {
    /// Non-overtaking under `ANY_TAG` and `ANY_SOURCE`: the `ORDER_*` cases.
    pub static SEMANTICS_ORDERING = fn semantics_ordering(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let n = args.param;
        let mut msg = [0u32; 80];
        let mut buf = [NONE; 80];
        if args.case == ORDER_ANY_TAG {
            let receiver = rank % 2 == 0;
            let partner = if receiver { if rank + 1 < size { rank + 1 } else { rank } } else { rank - 1 };
            if !receiver || partner == rank {
                let dest = world.process_at_rank(if receiver { rank } else { partner });
                for i in 0..n {
                    msg[0] = i;
                    msg[1] = rank as u32;
                    dest.send_with_tag(prefix(&msg, ordering_length(args.case, i))?, (i % 3) as i32)?;
                }
                if !receiver {
                    return Ok(());
                }
            }
            let p = world.process_at_rank(partner);
            for _ in 0..n {
                let r = p.receive_into(&mut buf[..]);
                rec.status(&r)?;
                rec.push(buf[0])?;
            }
            return Ok(());
        }
        if rank != 0 {
            let zero = world.process_at_rank(0);
            for i in 0..n {
                msg[0] = i;
                msg[1] = rank as u32;
                zero.send_with_tag(prefix(&msg, ordering_length(args.case, i))?, (i % 2) as i32)?;
            }
            return Ok(());
        }
        let total = n * (size as u32 - 1);
        let ones = (n / 2) * (size as u32 - 1);
        for j in 0..total {
            let tag = match args.case {
                ORDER_ANY_SOURCE_BY_TAG if j < ones => 1,
                ORDER_ANY_SOURCE_BY_TAG => 0,
                ORDER_SOURCE_BY_TAG if j % n < n / 2 => 1,
                ORDER_SOURCE_BY_TAG => 0,
                _ => ANY_TAG,
            };
            buf[0] = NONE;
            buf[1] = NONE;
            let r = if args.case == ORDER_SOURCE_BY_TAG {
                world.process_at_rank((1 + j / n) as i32).receive_into_with_tag(&mut buf[..], tag)
            } else {
                world.any_process().receive_into_with_tag(&mut buf[..], tag)
            };
            rec.status(&r)?;
            rec.words(&[buf[0], buf[1]])?;
        }
        Ok(())
    }
}

/// A non-commutative user datatype: a 2x2 matrix of `u32` with wrapping
/// arithmetic, row-major `[a b; c d]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Mat2 {
    /// Row 0, column 0.
    pub a: u32,
    /// Row 0, column 1.
    pub b: u32,
    /// Row 1, column 0.
    pub c: u32,
    /// Row 1, column 1.
    pub d: u32,
}
gpu_mpi_device::user_datatype!(Mat2);

impl Mat2 {
    /// `self * rhs` with wrapping arithmetic.
    pub fn mul(&self, rhs: &Mat2) -> Mat2 {
        let m = |x: u32, y: u32, z: u32, w: u32| x.wrapping_mul(y).wrapping_add(z.wrapping_mul(w));
        Mat2 {
            a: m(self.a, rhs.a, self.b, rhs.c),
            b: m(self.a, rhs.b, self.b, rhs.d),
            c: m(self.c, rhs.a, self.d, rhs.c),
            d: m(self.c, rhs.b, self.d, rhs.d),
        }
    }
}

/// Another 16-byte user datatype, to show that user types match by identity.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Quad {
    /// Four words.
    pub w: [u32; 4],
}
gpu_mpi_device::user_datatype!(Quad);

/// Words per rank of [`SEMANTICS_TYPES`].
pub const TYPES_STRIDE: u32 = 46;

gpu_mpi_device::kernel! {
    /// Datatype matching (MPI 3.3): rank `r` sends to `r + 1`, receives from
    /// `r - 1`. Sends, in order: `[1.5f64, -2.25]` tag 1; `[3.0f64]` tag 2;
    /// `[7u32, 8, 9]` tag 3; `Mat2 {r, 2, 3, 4}` tag 4; `Mat2` tag 5;
    /// `[1u8, 2, 3]` tag 6; `[4.5f64, 5.5]` tag 7; 12 bytes tag 8.
    /// Records:
    /// 1. tag 1 into `[i32; 4]` (pre-filled `0x5A5A_5A5A`): status, word 0;
    /// 2. any tag into `[u8; 16]`: status, the first 8 bytes as 2 words;
    /// 3. tag 3 into `[f32; 3]`: status;
    /// 4. tag 4 into `Mat2`: status, `a`;
    /// 5. tag 5 into `Quad`: status;
    /// 6. tag 6 into `[u16; 2]`: status;
    /// 7. tag 7 into `[f64; 2]`: status, counts of `f64`, `u32`, `Mat2`, the
    ///    two values' bits (4 words);
    /// 8. tag 8 into `[u8; 16]`: status, counts of `f64`, `u32`, `u8`.
    pub static SEMANTICS_TYPES = fn semantics_types(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let right = world.process_at_rank((rank + 1) % size);
        let left = world.process_at_rank((rank + size - 1) % size);
        let m = Mat2 { a: rank as u32, b: 2, c: 3, d: 4 };
        right.send_with_tag(&[1.5f64, -2.25][..], 1)?;
        right.send_with_tag(&[3.0f64][..], 2)?;
        right.send_with_tag(&[7u32, 8, 9][..], 3)?;
        right.send_with_tag(&m, 4)?;
        right.send_with_tag(&m, 5)?;
        right.send_with_tag(&[1u8, 2, 3][..], 6)?;
        right.send_with_tag(&[4.5f64, 5.5][..], 7)?;
        right.send_with_tag(&[9u8; 12][..], 8)?;

        let mut ints = [0x5A5A_5A5Ai32; 4];
        rec.status(&left.receive_into_with_tag(&mut ints[..], 1))?;
        rec.push(ints[0] as u32)?;

        let mut bytes = [0u8; 16];
        rec.status(&left.receive_into(&mut bytes[..]))?;
        let word = |i: usize| {
            u32::from_le_bytes([at(&bytes, i), at(&bytes, i + 1), at(&bytes, i + 2), at(&bytes, i + 3)])
        };
        rec.words(&[word(0), word(4)])?;

        let mut floats = [0.0f32; 3];
        rec.status(&left.receive_into_with_tag(&mut floats[..], 3))?;

        let mut mat = Mat2::default();
        rec.status(&left.receive_into_with_tag(&mut mat, 4))?;
        rec.push(mat.a)?;

        let mut quad = Quad::default();
        rec.status(&left.receive_into_with_tag(&mut quad, 5))?;

        let mut shorts = [0u16; 2];
        rec.status(&left.receive_into_with_tag(&mut shorts[..], 6))?;

        let mut doubles = [0.0f64; 2];
        let r = left.receive_into_with_tag(&mut doubles[..], 7);
        rec.status(&r)?;
        let counts = |s: &Result<Status, Error>| match s {
            Ok(s) => [count_word(s.count::<f64>()), count_word(s.count::<u32>()), count_word(s.count::<Mat2>())],
            Err(_) => [NONE; 3],
        };
        rec.words(&counts(&r))?;
        let (b0, b1) = (doubles[0].to_bits(), doubles[1].to_bits());
        rec.words(&[b0 as u32, (b0 >> 32) as u32, b1 as u32, (b1 >> 32) as u32])?;

        let mut bytes = [0u8; 16];
        let r = left.receive_into_with_tag(&mut bytes[..], 8);
        rec.status(&r)?;
        let counts = match r {
            Ok(s) => [count_word(s.count::<f64>()), count_word(s.count::<u32>()), count_word(s.count::<u8>())],
            Err(_) => [NONE; 3],
        };
        rec.words(&counts)
    }
}

/// Words per rank of [`SEMANTICS_ARGUMENTS`]: 26 results of 5 words, then
/// the final all-reduce's value.
pub const ARGUMENTS_STRIDE: u32 = 26 * 5 + 1;

/// A 256-byte user datatype: one element is more than a default collective
/// round (248 bytes of data) can stage.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct Big {
    /// 32 words.
    pub w: [u64; 32],
}
gpu_mpi_device::user_datatype!(Big);

fn big_add(x: &Big, y: &Big) -> Big {
    let mut z = *x;
    for (a, b) in z.w.iter_mut().zip(y.w.iter()) {
        *a = a.wrapping_add(*b);
    }
    z
}
/// Bytes of the stack buffer of [`SEMANTICS_ARGUMENTS`]: run it with
/// `max_message_bytes` below this.
pub const ARGUMENTS_BUFFER: usize = 1024;

gpu_mpi_device::kernel! {
    /// Invalid arguments: every rank records the result words
    /// (`Error::to_words`, zeros for `Ok`) of, in order:
    /// 1. send to rank `size`; 2. send to rank -7; 3. receive from `size + 3`;
    /// 4. send with tag -5; 5. send with `ANY_TAG`; 6. receive with tag -5;
    /// 7. probe (any source) with tag -3; 8. immediate probe of rank `size`;
    /// 9. send of `param + 1` bytes to itself (`param` = the world's
    ///    `max_message_bytes`); 10. `send_receive_into` itself `param` bytes;
    /// 11. broadcast from root `size`; 12. reduce to root -1; 13. all-reduce
    ///     `f32` with bitwise or; 14. all-reduce `f64` with logical and;
    /// 15. `reduce_into` with root 0 (rank 0 calling it is an error);
    /// 16. `send_receive_into` with destination `size`; 17. a write past the
    ///     end of `out`; 18. broadcast from the null process; 19. all-reduce
    ///     `i32` with bitwise or (valid); 20. barrier; 21. all-reduce of one
    ///     256-byte [`Big`] (more than a collective round); 22. send to the
    ///     null process with tag -5; 23. receive from the null process with
    ///     tag -5; 24. `receive` of one value from rank `size`; 25. send to
    ///     rank `size` with tag -5 (the tag is judged first); 26. receive
    ///     from rank -7 with tag -5;
    /// then the value of an all-reduce sum of 1 (the world still works).
    pub static SEMANTICS_ARGUMENTS = fn semantics_arguments(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let mut rec = Recorder::new(args, rank);
        let me = world.process_at_rank(rank);
        let mut x = 0u32;
        rec.error_words(&world.process_at_rank(size).send(&1u32))?;
        rec.error_words(&world.process_at_rank(-7).send(&1u32))?;
        rec.error_words(&world.process_at_rank(size + 3).receive_into(&mut x))?;
        rec.error_words(&me.send_with_tag(&1u32, -5))?;
        rec.error_words(&me.send_with_tag(&1u32, ANY_TAG))?;
        rec.error_words(&me.receive_into_with_tag(&mut x, -5))?;
        rec.error_words(&world.any_process().probe_with_tag(-3))?;
        rec.error_words(&world.process_at_rank(size).immediate_probe())?;
        let max = (args.param as usize).min(ARGUMENTS_BUFFER - 1);
        let mut big = [0u8; ARGUMENTS_BUFFER];
        let mut back = [0u8; ARGUMENTS_BUFFER];
        fill_pattern(&mut big, rank as u32);
        rec.error_words(&me.send(prefix(&big, max + 1)?))?;
        let r = send_receive_into(prefix(&big, max)?, &me, prefix_mut(&mut back, max)?, &me);
        if r.is_ok() && big.get(..max) != back.get(..max) {
            rec.words(&[NONE; 5])?;
        } else {
            rec.error_words(&r)?;
        }
        rec.error_words(&world.process_at_rank(size).broadcast_into(&mut x))?;
        rec.error_words(&world.process_at_rank(-1).reduce_into(&1u32, SystemOperation::sum()))?;
        let mut f = 0.0f32;
        rec.error_words(&world.all_reduce_into(&1.0f32, &mut f, SystemOperation::bitwise_or()))?;
        let mut d = 0.0f64;
        rec.error_words(&world.all_reduce_into(&1.0f64, &mut d, SystemOperation::logical_and()))?;
        rec.error_words(&world.process_at_rank(0).reduce_into(&1u32, SystemOperation::sum()))?;
        let mut y = 0u32;
        rec.error_words(&send_receive_into(&1u32, &world.process_at_rank(size), &mut y, &me))?;
        rec.error_words(&args.out.write(args.out.len() + 5, 1))?;
        rec.error_words(&world.null_process().broadcast_into(&mut x))?;
        let mut bits = 0i32;
        rec.error_words(&world.all_reduce_into(&(1i32 << (rank % 31)), &mut bits, SystemOperation::bitwise_or()))?;
        rec.error_words(&world.barrier())?;
        let big = Big { w: [rank as u64; 32] };
        let mut sum = Big { w: [0; 32] };
        let op = gpu_mpi_device::collective::UserOperation::new(big_add);
        rec.error_words(&world.all_reduce_into(&big, &mut sum, op))?;
        rec.error_words(&world.null_process().send_with_tag(&1u32, -5))?;
        rec.error_words(&world.null_process().receive_into_with_tag(&mut x, -5))?;
        rec.error_words(&world.process_at_rank(size).receive::<u32>())?;
        rec.error_words(&world.process_at_rank(size).send_with_tag(&1u32, -5))?;
        rec.error_words(&world.process_at_rank(-7).receive_into_with_tag(&mut x, -5))?;
        let mut total = 0u32;
        world.all_reduce_into(&1u32, &mut total, SystemOperation::sum())?;
        rec.push(total)
    }
}
