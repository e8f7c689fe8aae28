//! Non-blocking point-to-point semantic kernels (MPI 4.1 sections 3.7-3.9):
//! requests, waits and tests, matched probes, synchronous sends, arrays as
//! buffers. A "status" is the four words of [`Recorder::status`].

use super::{class_of, CaseArgs, Recorder, NONE};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::request::{self, AnyCompletion, Request, MAX_REQUESTS};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, Process, Status, World, PROC_NULL};

/// Rank 0 pre-posts, in batches of up to [`MAX_REQUESTS`], receives from
/// any source with any tag into buffers of `4 + i` words (receive `i` of
/// the batch), then `wait_any`s until it reports all null. Every other rank
/// `r` sends `r % 4 + 1` words `[1000 r, ..]` with tag `r % 5`. Rank 0
/// records per message: source, tag, count of `u32`, first word; then the
/// number of batches that ended with `AllNull`.
pub const NB_WAIT_ANY: u32 = 0;
/// Offsets `k = 1..size`, in groups of [`MAX_REQUESTS`] / 2: every rank
/// posts receives from `r - k` (tag 7) for the group's offsets, then sends
/// to `r + k`, then `wait_all`s. The message for offset `k` is `[r, dest,
/// k]` followed by zeros, 3 words long, or 100 words (a rendezvous) when
/// `k % 3 == 0`. Records per offset: source, count, the first 3 words.
pub const NB_ALL_TO_ALL: u32 = 1;
/// Every rank sends itself `[r, 42]` with `immediate_send_with_tag` (tag 3),
/// then spins on `immediate_probe_with_tag(3)` until it finds it, then
/// receives it and waits for the send. Records: the probe's status, the
/// receive's status, the 2 words, the send's wait class.
pub const NB_SELF_PROBE: u32 = 2;
/// Waits and tests on empty slices and null requests. Records: wait_all
/// class, wait_any == AllNull, test_any == Some(AllNull), wait_some ==
/// Ok(None), test_some == None, test_all == Some(Ok), a null request's
/// wait status (4 words), its test status (4 words), an immediate send to
/// the null process is null (1), an immediate receive from it: status.
pub const NB_NULL_SETS: u32 = 3;
/// Odd rank `r` sends rank `r - 1` `[r, 1]` (tag 2), `[r, 2]` (tag 2), then
/// 100 words `[r, 3, ..]` (tag 5, a rendezvous). Even rank: matched probe
/// from any source and tag (the first message); a plain receive from the
/// partner with any tag (must get the second); `immediate_matched_probe`
/// with tag 5 (the third); `immediate_probe` (must find nothing); the
/// matched receive of the third, then of the first. A rank without partner
/// probes the null process. Records (even): status, status + 2 words,
/// status, probe found (0/1), status + words 0, 1, 99, status + 2 words.
pub const NB_MPROBE: u32 = 4;
/// Even rank `r` with a partner: `immediate_synchronous_send` of `[r]`
/// (tag 0) and, with `param` != 0, of 100 words (tag 3); tests both 50
/// times (recording how many tests completed early: must be 0), then sends
/// `go` with tag 1 (blocking), waits both, and does a blocking
/// `synchronous_send` of `[r + 1]` (tag 2). Odd: receives tag 1, then tag 0,
/// tag 3 (if `param`), tag 2. Records (even): early completions, wait
/// classes (2), ssend class; (odd): the words received (`[r-1]`, `go`,
/// word 99 of the big one or NONE, `[r]`).
pub const NB_SSEND: u32 = 5;
/// Arrays as buffers: every rank sends `[r, 2, 3]` (`[i32; 3]`) to its
/// right neighbour (tag 1) and receives into `[0i32; 3]` from its left.
/// Records: status, 3 words.
pub const NB_ARRAYS: u32 = 6;
/// Blocking calls among pending requests (one engine): ranks pair up (`r`
/// even with `r + 1`; a rank without partner is its own). Each posts an
/// `immediate_receive_into` from its partner with any tag, makes two
/// blocking sends to it (`[r, 1]` tag 1, `[r, 2]` tag 2), posts an
/// `immediate_send` of 100 words `1000 r + i` (tag 9, a rendezvous), then
/// a blocking receive with any tag (the earlier posted request takes tag 1,
/// so this one must get tag 2), a blocking receive of tag 9 (it must
/// progress the rank's own pending rendezvous, which streams chunk by chunk
/// with `param` != 0), then waits for both requests. Records: the blocking
/// any-tag receive's status and 2 words, the tag-9 receive's status and
/// words 0 and 99, the posted receive's status and 2 words, the send's class.
pub const NB_BLOCKING_AMONG_REQUESTS: u32 = 7;
/// A synchronous send completes when a request of its receiver takes the
/// message inside another of the receiver's blocking calls (MPI 4.1 §3.4,
/// §3.7.3). Even rank `r` with a partner: a synchronous send of `[r]`
/// (tag 5; blocking with `param` 0, `immediate_synchronous_send` and wait
/// with `param` 1), then a blocking send of `[r + 100]` (tag 7). Odd rank:
/// in a scope, an `immediate_receive_into` from `r - 1` with any tag, a
/// blocking receive of tag 7 (inside which the request takes the tag-5
/// message), then it waits the request. Then every rank sends itself
/// `[r + 200]` synchronously (tag 4, in the same two forms) to a receive
/// from itself posted before. Records: (even) the two send classes, two
/// zeros; (odd) the request's tag and word, the tag-7 receive's class and
/// word; (everyone) the self send's class, the word it received.
pub const NB_SSEND_ELSEWHERE: u32 = 8;
/// Slots come back while their receiver waits: rank 0 sends every other
/// rank 3 messages (tags 1, 2, 3; `[1000 d + t]`), then each one tag 99
/// (`[d]`). Every other rank `d` posts 3 `immediate_receive_into`s from 0
/// (tags 1-3), blocks in the receive of tag 99 (inside which the requests
/// take their messages), then waits them all. With fewer slots than
/// messages, rank 0's sends need the slots back that those requests hold
/// (docs/limits.md: a standard send waits for a slot, never for a
/// receive). Records: (rank 0) the class of its first failed send or 0;
/// (others) the tag-99 word, the 3 request words.
pub const NB_SLOTS_IN_WAITS: u32 = 9;
/// Polling between collectives is legal, however long it goes on:
/// [`POLL_ROUNDS`] rounds of [`POLLS_PER_ROUND`] `immediate_probe_with_tag(9)`
/// by rank 0 (nothing is ever sent: each finds nothing), then, by every
/// rank, a collective: with `param` 0 the world's barrier, 1 an all-reduce
/// (sum of 1), 2 the barrier of the `split_shared` communicator. The
/// emulator counts a rank whose same poll fails 2^16 times in a row with
/// no other progress as quiet (a spin that cannot succeed); a collective
/// between the polls is such progress. Records: rounds completed, the
/// first failure's class (or 0), the probes that found something.
pub const NB_POLLS_BETWEEN_COLLECTIVES: u32 = 10;
/// Rounds of [`NB_POLLS_BETWEEN_COLLECTIVES`]: more polls in all than the
/// emulator's quiet bound (2^16).
pub const POLL_ROUNDS: u32 = 2300;
/// Failed probes per round of [`NB_POLLS_BETWEEN_COLLECTIVES`].
pub const POLLS_PER_ROUND: u32 = 30;

/// Words one rank records in a non-blocking case in a world of `size` ranks.
pub fn nb_stride(case: u32, size: u32) -> u32 {
    let others = size.saturating_sub(1).max(1);
    match case {
        NB_WAIT_ANY => 4 * others + 1,
        NB_ALL_TO_ALL => 5 * others,
        NB_SELF_PROBE => 4 + 4 + 2 + 1,
        NB_NULL_SETS => 6 + 4 + 4 + 1 + 4 + 5 + 3,
        NB_MPROBE => 4 + 6 + 4 + 1 + 7 + 6,
        NB_SSEND => 4,
        NB_ARRAYS => 7,
        NB_BLOCKING_AMONG_REQUESTS => 3 * (4 + 2) + 1,
        NB_SSEND_ELSEWHERE => 6,
        NB_SLOTS_IN_WAITS => 4,
        NB_POLLS_BETWEEN_COLLECTIVES => 3,
        _ => 1,
    }
}

gpu_mpi_device::kernel! {
    /// The `NB_*` cases.
    pub static SEMANTICS_NONBLOCKING = fn semantics_nonblocking(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let mut rec = Recorder::new(args, world.rank());
        match args.case {
            NB_WAIT_ANY => wait_any_case(world, &mut rec),
            NB_ALL_TO_ALL => all_to_all(world, &mut rec),
            NB_SELF_PROBE => self_probe(world, &mut rec),
            NB_NULL_SETS => null_sets(world, &mut rec),
            NB_MPROBE => mprobe(world, &mut rec),
            NB_SSEND => ssend(world, args.param, &mut rec),
            NB_ARRAYS => arrays(world, &mut rec),
            NB_BLOCKING_AMONG_REQUESTS => blocking_among_requests(world, &mut rec),
            NB_SSEND_ELSEWHERE => ssend_elsewhere(world, args.param, &mut rec),
            NB_SLOTS_IN_WAITS => slots_in_waits(world, &mut rec),
            NB_POLLS_BETWEEN_COLLECTIVES => polls_between_collectives(world, args.param, &mut rec),
            _ => rec.push(NONE),
        }
    }
}

fn wait_any_case(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        let r = rank as u32;
        let msg = [1000 * r, 1000 * r + 1, 1000 * r + 2, 1000 * r + 3];
        let n = (r % 4 + 1) as usize;
        return world
            .process_at_rank(0)
            .send_with_tag(msg.get(..n).unwrap_or(&[]), rank % 5);
    }
    let mut left = size - 1;
    let mut all_null = 0;
    while left > 0 {
        let batch = (left as usize).min(MAX_REQUESTS);
        let mut bufs = [[NONE; 4 + MAX_REQUESTS]; MAX_REQUESTS];
        let mut got = [(Status::empty(), NONE); MAX_REQUESTS];
        let mut n = 0;
        request::scope(|scope| -> Result<(), Error> {
            let mut reqs = [const { Request::null() }; MAX_REQUESTS];
            for (i, (b, r)) in bufs.iter_mut().zip(reqs.iter_mut()).take(batch).enumerate() {
                *r = world
                    .any_process()
                    .immediate_receive_into(scope, b.get_mut(..4 + i).unwrap_or(&mut []))?;
            }
            loop {
                match request::wait_any(&mut reqs)? {
                    AnyCompletion::AllNull => break,
                    AnyCompletion::Completed { index, result } => {
                        if let Some(g) = got.get_mut(n) {
                            *g = (result?, index as u32);
                        }
                        n += 1;
                    }
                }
            }
            all_null += 1;
            Ok(())
        })?;
        for (s, index) in got.iter().take(n) {
            let first = bufs.get(*index as usize).map_or(NONE, |b| b[0]);
            rec.words(&[
                s.source_rank() as u32,
                s.tag() as u32,
                super::count_word(s.count::<u32>()),
                first,
            ])?;
        }
        left -= batch as i32;
    }
    rec.push(all_null)
}

fn all_to_all(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    const GROUP: usize = MAX_REQUESTS / 2;
    const BIG: usize = 100;
    let mut k0 = 1;
    while k0 < size {
        let group = ((size - k0) as usize).min(GROUP);
        let mut bufs = [[NONE; BIG]; GROUP];
        let mut msgs = [[0u32; BIG]; GROUP];
        let mut statuses = [Status::empty(); 2 * GROUP];
        request::scope(|scope| -> Result<(), Error> {
            let mut reqs = [const { Request::null() }; 2 * GROUP];
            let (recvs, sends) = reqs.split_at_mut(GROUP);
            for (j, (b, r)) in bufs.iter_mut().zip(recvs.iter_mut()).take(group).enumerate() {
                let k = k0 + j as i32;
                let src = world.process_at_rank((rank + size - k) % size);
                *r = src.immediate_receive_into_with_tag(scope, &mut b[..], 7)?;
            }
            for (j, (m, r)) in msgs.iter_mut().zip(sends.iter_mut()).take(group).enumerate() {
                let k = k0 + j as i32;
                let dest = (rank + k) % size;
                m[0] = rank as u32;
                m[1] = dest as u32;
                m[2] = k as u32;
                let len = if k % 3 == 0 { BIG } else { 3 };
                *r = world.process_at_rank(dest).immediate_send_with_tag(
                    scope,
                    m.get(..len).unwrap_or(&[]),
                    7,
                )?;
            }
            request::wait_all(&mut reqs, &mut statuses)
        })?;
        for (j, b) in bufs.iter().take(group).enumerate() {
            let s = statuses.get(j).copied().unwrap_or(Status::empty());
            rec.words(&[
                s.source_rank() as u32,
                super::count_word(s.count::<u32>()),
                b[0],
                b[1],
                b[2],
            ])?;
        }
        k0 += group as i32;
    }
    Ok(())
}

fn self_probe(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let me = world.process_at_rank(world.rank());
    let out = [world.rank() as u32, 42];
    let mut got = [NONE; 2];
    request::scope(|scope| -> Result<(), Error> {
        let send = me.immediate_send_with_tag(scope, &out, 3)?;
        let probed = loop {
            if let Some(s) = me.immediate_probe_with_tag(3)? {
                break s;
            }
        };
        rec.status(&Ok(probed))?;
        rec.status(&me.receive_into_with_tag(&mut got, 3))?;
        rec.words(&got)?;
        rec.class(&send.wait())
    })
}

fn null_sets(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let mut none: [Request; 0] = [];
    rec.class(&request::wait_all(&mut none, &mut []))?;
    rec.push((request::wait_any(&mut none) == Ok(AnyCompletion::AllNull)) as u32)?;
    let mut nulls = [Request::null(), Request::null(), Request::null()];
    rec.push((request::test_any(&mut nulls) == Some(AnyCompletion::AllNull)) as u32)?;
    rec.push((request::wait_some(&mut nulls, &mut [None; 3]) == Ok(None)) as u32)?;
    rec.push((request::test_some(&mut nulls, &mut [None; 3]).is_none()) as u32)?;
    let mut statuses = [Status::empty(); 3];
    rec.push((request::test_all(&mut nulls, &mut statuses) == Some(Ok(()))) as u32)?;
    rec.status(&Request::null().wait())?;
    let mut null = Request::null();
    rec.status(&null.test().unwrap_or(Err(Error::Intern)))?;
    let x = 5u32;
    let mut y = 77u32;
    let (mut a, mut b, mut c, mut d) = (0u32, 0u32, 0u32, 0u32);
    request::scope(|scope| -> Result<(), Error> {
        let s = world.null_process().immediate_send(scope, &x)?;
        rec.push(s.is_null() as u32)?;
        let r = world.null_process().immediate_receive_into(scope, &mut y)?;
        rec.status(&r.wait())?;
        // A receive from the null process is an active request, complete at
        // once (MPI 4.1 §3.11): the slice calls return it, not "all null",
        // even when no request of the slice belongs to a world.
        let mut one = [
            Request::null(),
            world.null_process().immediate_receive_into(scope, &mut a)?,
        ];
        match request::wait_any(&mut one)? {
            AnyCompletion::Completed { index, result } => {
                rec.push(index as u32)?;
                rec.status(&result)?;
            }
            AnyCompletion::AllNull => rec.words(&[NONE; 5])?,
        }
        let mut one = [world.null_process().immediate_receive_into(scope, &mut b)?];
        rec.push(match request::test_any(&mut one) {
            Some(AnyCompletion::Completed { index, result: Ok(_) }) => index as u32,
            _ => NONE,
        })?;
        let mut one = [world.null_process().immediate_receive_into(scope, &mut c)?];
        rec.push(match request::wait_some(&mut one, &mut [None]) {
            Ok(Some(n)) => n as u32,
            _ => NONE,
        })?;
        let mut one = [world.null_process().immediate_receive_into(scope, &mut d)?];
        rec.push(match request::test_some(&mut one, &mut [None]) {
            Some(n) => n as u32,
            None => NONE,
        })
    })
}

fn mprobe(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    let mut big = [0u32; 100];
    if rank % 2 == 1 {
        let p = world.process_at_rank(rank - 1);
        p.send_with_tag(&[r, 1], 2)?;
        p.send_with_tag(&[r, 2], 2)?;
        big[0] = r;
        big[1] = 3;
        big[99] = 99 + r;
        return p.send_with_tag(&big, 5);
    }
    let partner = if rank + 1 < size { rank + 1 } else { PROC_NULL };
    let from = world.process_at_rank(partner);
    let (first, s1) = if partner == PROC_NULL {
        from.matched_probe()?
    } else {
        world.any_process().matched_probe()?
    };
    rec.status(&Ok(s1))?;
    let mut plain = [NONE; 2];
    rec.status(&from.receive_into(&mut plain))?;
    rec.words(&plain)?;
    let (third, s3) = loop {
        if let Some(m) = from.immediate_matched_probe_with_tag(5)? {
            break m;
        }
    };
    rec.status(&Ok(s3))?;
    rec.push(if partner == PROC_NULL {
        0
    } else {
        from.immediate_probe()?.is_some() as u32
    })?;
    let mut got = [NONE; 100];
    rec.status(&third.matched_receive_into(&mut got))?;
    rec.words(&[got[0], got[1], got[99]])?;
    let mut one = [NONE; 2];
    rec.status(&first.matched_receive_into(&mut one))?;
    rec.words(&one)
}

/// A completed request's outcome.
type Outcome = Result<Status, Error>;

fn ssend(world: &World, param: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    if rank % 2 == 0 && rank + 1 < size {
        let p = world.process_at_rank(rank + 1);
        let small = [r];
        let mut big = [0u32; 100];
        big[99] = 7 + r;
        let (early, a, b) = request::scope(|scope| -> Result<(u32, Outcome, Outcome), Error> {
            let mut s1 = p.immediate_synchronous_send(scope, &small)?;
            let mut s2 = if param != 0 {
                p.immediate_synchronous_send_with_tag(scope, &big, 3)?
            } else {
                Request::null()
            };
            let mut early = 0;
            for _ in 0..50 {
                early += s1.test().is_some() as u32;
                early += (!s2.is_null() && s2.test().is_some()) as u32;
            }
            p.send_with_tag(&0x60u32, 1)?;
            Ok((early, s1.wait(), s2.wait()))
        })?;
        rec.push(early)?;
        rec.class(&a)?;
        rec.class(&b)?;
        rec.class(&p.synchronous_send_with_tag(&[r + 1], 2))
    } else if rank % 2 == 1 {
        let p = world.process_at_rank(rank - 1);
        let mut go = 0u32;
        p.receive_into_with_tag(&mut go, 1)?;
        let mut first = [NONE];
        p.receive_into_with_tag(&mut first, 0)?;
        let mut big = [NONE; 100];
        if param != 0 {
            p.receive_into_with_tag(&mut big, 3)?;
        }
        let mut last = [NONE];
        p.receive_into_with_tag(&mut last, 2)?;
        rec.words(&[first[0], go, big[99], last[0]])
    } else {
        rec.words(&[0, 0, 0, 0])
    }
}

fn arrays(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    world
        .process_at_rank((rank + 1) % size)
        .send_with_tag(&[rank, 2, 3], 1)?;
    let mut got = [0i32; 3];
    let s = world
        .process_at_rank((rank + size - 1) % size)
        .receive_into(&mut got);
    rec.status(&s)?;
    rec.words(&[got[0] as u32, got[1] as u32, got[2] as u32])
}

fn blocking_among_requests(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let rank = world.rank();
    let partner = if rank % 2 == 0 {
        if rank + 1 < world.size() {
            rank + 1
        } else {
            rank
        }
    } else {
        rank - 1
    };
    let p = world.process_at_rank(partner);
    let r = rank as u32;
    let mut big = [0u32; 100];
    for (i, w) in big.iter_mut().enumerate() {
        *w = 1000 * r + i as u32;
    }
    let mut first = [NONE; 2];
    let mut second = [NONE; 2];
    let mut got = [NONE; 100];
    let (s2, sb, s1, sent) = request::scope(|scope| -> Result<_, Error> {
        let rx = p.immediate_receive_into(scope, &mut first)?;
        p.send_with_tag(&[r, 1], 1)?;
        p.send_with_tag(&[r, 2], 2)?;
        let sx = p.immediate_send_with_tag(scope, &big, 9)?;
        let s2 = p.receive_into(&mut second);
        let sb = p.receive_into_with_tag(&mut got, 9);
        Ok((s2, sb, rx.wait(), sx.wait()))
    })?;
    rec.status(&s2)?;
    rec.words(&second)?;
    rec.status(&sb)?;
    rec.words(&[got[0], got[99]])?;
    rec.status(&s1)?;
    rec.words(&first)?;
    rec.class(&sent)
}

/// A synchronous send of `data` to `p` with `tag`: blocking (`immediate`
/// false) or an immediate one waited at once.
fn ssend_to(p: &Process<'_>, data: &u32, tag: i32, immediate: bool) -> Result<(), Error> {
    if immediate {
        request::scope(|scope| -> Result<(), Error> {
            p.immediate_synchronous_send_with_tag(scope, data, tag)?.wait()?;
            Ok(())
        })
    } else {
        p.synchronous_send_with_tag(data, tag)
    }
}

fn ssend_elsewhere(world: &World, param: u32, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as u32;
    let immediate = param != 0;
    if rank % 2 == 0 && rank + 1 < size {
        let p = world.process_at_rank(rank + 1);
        rec.class(&ssend_to(&p, &r, 5, immediate))?;
        rec.class(&p.send_with_tag(&(r + 100), 7))?;
        rec.words(&[0, 0])?;
    } else if rank % 2 == 1 {
        let p = world.process_at_rank(rank - 1);
        let mut early = NONE;
        let mut late = NONE;
        let (late_class, posted) = request::scope(|scope| -> Result<(u32, Outcome), Error> {
            let rx = p.immediate_receive_into(scope, &mut early)?;
            let late_class = class_of(&p.receive_into_with_tag(&mut late, 7));
            Ok((late_class, rx.wait()))
        })?;
        rec.words(&[posted.map_or(NONE, |s| s.tag() as u32), early, late_class, late])?;
    } else {
        rec.words(&[0, 0, 0, 0])?;
    }
    let me = world.process_at_rank(rank);
    let mut got = NONE;
    let sent = request::scope(|scope| -> Result<u32, Error> {
        let rx = me.immediate_receive_into_with_tag(scope, &mut got, 4)?;
        let sent = class_of(&ssend_to(&me, &(r + 200), 4, immediate));
        rx.wait()?;
        Ok(sent)
    })?;
    rec.words(&[sent, got])
}

fn slots_in_waits(world: &World, rec: &mut Recorder) -> Result<(), Error> {
    let (rank, size) = (world.rank(), world.size());
    if rank == 0 {
        let mut first_failure = 0;
        for tag in (1..=3).chain([99]) {
            for d in 1..size {
                let word = if tag == 99 {
                    d as u32
                } else {
                    1000 * d as u32 + tag as u32
                };
                let sent = world.process_at_rank(d).send_with_tag(&word, tag);
                if first_failure == 0 {
                    first_failure = class_of(&sent);
                }
            }
        }
        return rec.words(&[first_failure, 0, 0, 0]);
    }
    let p = world.process_at_rank(0);
    let mut words = [NONE; 3];
    let mut last = NONE;
    request::scope(|scope| -> Result<(), Error> {
        let [a, b, c] = &mut words;
        let mut reqs = [
            p.immediate_receive_into_with_tag(scope, a, 1)?,
            p.immediate_receive_into_with_tag(scope, b, 2)?,
            p.immediate_receive_into_with_tag(scope, c, 3)?,
        ];
        p.receive_into_with_tag(&mut last, 99)?;
        let mut statuses = [Status::empty(); 3];
        request::wait_all(&mut reqs, &mut statuses)
    })?;
    rec.words(&[last, words[0], words[1], words[2]])
}

fn polls_between_collectives(world: &World, param: u32, rec: &mut Recorder) -> Result<(), Error> {
    let shared = world.split_shared()?;
    let mut found = 0;
    let mut rounds = 0;
    let mut failure = 0;
    while rounds < POLL_ROUNDS {
        if world.rank() == 0 {
            for _ in 0..POLLS_PER_ROUND {
                found += world.any_process().immediate_probe_with_tag(9)?.is_some() as u32;
            }
        }
        let r = match param {
            0 => world.barrier(),
            1 => {
                let mut sum = 0u32;
                world
                    .all_reduce_into(&1u32, &mut sum, SystemOperation::sum())
                    .map(|()| {
                        found += (sum != world.size() as u32) as u32;
                    })
            }
            _ => shared.barrier(),
        };
        if let Err(e) = r {
            failure = e.class() as u32;
            break;
        }
        rounds += 1;
    }
    rec.words(&[rounds, failure, found])
}
