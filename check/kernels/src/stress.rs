//! An interpreter of encoded stress programs: point-to-point operations of
//! every mode (blocking, synchronous, immediate, probes, wildcards) on
//! several communicators, with requests pending across blocking calls, and
//! collectives between them (tests/stress.rs generates the programs, argues
//! that they cannot deadlock, and checks the records).
//!
//! # Encoding (`StressArgs::program`, words)
//! - words `0..ranks`: the offset of rank `r`'s operation list;
//! - at that offset: the number of operations, then [`OP_WORDS`] words per
//!   operation, `[kind, comm, peer, tag, bytes, id, slot, rec]`:
//!   - `comm`: 0 the world, 1 its duplicate, 2 its split by world-rank
//!     parity (keys reversed), 3 `split_shared`, 4 `split_by_warp`
//!     ([`COMMS`]); `peer` a rank of that communicator (`ANY_SOURCE` as
//!     `u32` for a receive from any source), `tag` (`ANY_TAG` as `u32`);
//!   - [`OP_SEND`], [`OP_SSEND`]: send `bytes` bytes of message `id`
//!     ([`message_byte`]), standard or synchronous mode;
//!   - [`OP_RECV`]: receive into a buffer of `bytes` bytes;
//!   - [`OP_PROBE_RECV`]: probe, then receive from the probed source with
//!     the probed tag; [`OP_MPROBE_RECV`]: matched probe, then its matched
//!     receive;
//!   - [`OP_OPEN`] opens a request scope (a *window*) and [`OP_CLOSE`]
//!     ends it; inside one, [`OP_ISEND`], [`OP_ISSEND`] and [`OP_IRECV`]
//!     post a request into buffer `slot` (each slot at most once per
//!     window, fewer than [`WINDOW`]) and [`OP_WAIT`] waits for the request
//!     of `slot`; blocking operations may come between them (they must
//!     progress the pending requests, MPI 4.1 §3.7.4);
//!   - [`OP_COLL`]: the collective `peer` (one of the `C_*` constants) on
//!     `comm` with root `tag`, `bytes` elements of `u64` and input seed
//!     `id` (never inside a window).
//!
//! # Record (`StressArgs::out`)
//! Every send, receive and collective names a record `rec`: rank `r`'s
//! record `rec` is [`RECORD_WORDS`] words from `r * stride + rec *
//! RECORD_WORDS`. A receive writes the probe's status (four [`NONE`]
//! without a probe), the receive's status, the first 4 received bytes as a
//! little-endian word (zero-padded) and [`checksum`] of the received bytes;
//! a send writes four [`NONE`], its class and five [`NONE`] (an immediate
//! send: at its wait); a collective writes its class, the [`hash`] fold of
//! its result's words (0 where the rank has no result) and eight [`NONE`].
//! Element `i` of communicator rank `q`'s collective input is
//! [`input`]`(seed, q, i)`.

use super::collective_interpreter::value_word;
use super::comm::hash;
use super::interpreter::{checksum, message_byte};
use super::{prefix, prefix_mut, status_words, NONE};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::request::{self, Request};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{
    AnyProcess, Color, Error, GlobalSlice, Process, SimpleCommunicator, Status, World, ANY_SOURCE,
};

/// Blocking standard-mode send.
pub const OP_SEND: u32 = 1;
/// Blocking synchronous send.
pub const OP_SSEND: u32 = 2;
/// Blocking receive.
pub const OP_RECV: u32 = 3;
/// Probe, then receive what was probed.
pub const OP_PROBE_RECV: u32 = 4;
/// Matched probe, then its matched receive.
pub const OP_MPROBE_RECV: u32 = 5;
/// Immediate standard-mode send (in a window).
pub const OP_ISEND: u32 = 6;
/// Immediate synchronous send (in a window).
pub const OP_ISSEND: u32 = 7;
/// Immediate receive (in a window).
pub const OP_IRECV: u32 = 8;
/// Wait for the request of a slot (in a window).
pub const OP_WAIT: u32 = 9;
/// Open a window (a request scope).
pub const OP_OPEN: u32 = 10;
/// Close the window.
pub const OP_CLOSE: u32 = 11;
/// A collective.
pub const OP_COLL: u32 = 12;
/// Words per operation.
pub const OP_WORDS: usize = 8;
/// Words per record.
pub const RECORD_WORDS: usize = 10;
/// Largest message and receive buffer in bytes.
pub const MAX_BYTES: usize = 400;
/// Request slots of a window.
pub const WINDOW: usize = 6;
/// Communicators a program may name: the world and the four made at start.
pub const COMMS: u32 = 5;
/// Elements of the largest collective result.
pub const MAX_ELEMS: usize = 64;

/// `barrier`.
pub const C_BARRIER: u32 = 0;
/// `broadcast_into` from the root.
pub const C_BROADCAST: u32 = 1;
/// `reduce_into_root` (sum) at the root, `reduce_into` elsewhere.
pub const C_REDUCE: u32 = 2;
/// `all_reduce_into` (sum).
pub const C_ALL_REDUCE: u32 = 3;
/// `scan_into` (sum).
pub const C_SCAN: u32 = 4;
/// `all_gather_into`.
pub const C_ALL_GATHER: u32 = 5;
/// Number of collective kinds.
pub const C_KINDS: u32 = 6;

/// Arguments of [`SEMANTICS_STRESS`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct StressArgs {
    /// Words of `out` per rank.
    pub stride: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// The encoded program.
    pub program: GlobalSlice<u32>,
    /// The records.
    pub out: GlobalSlice<u32>,
}

/// Element `i` of communicator rank `q`'s collective input under `seed`.
pub fn input(seed: u32, q: u32, i: u32) -> u64 {
    value_word(seed, q, i, 0) as u64 | (value_word(seed, q, i, 1) as u64) << 32
}

/// `h` folded with the words of `v`, low word first.
pub fn fold(h: u32, v: u64) -> u32 {
    hash(hash(h, v as u32), (v >> 32) as u32)
}

/// One decoded operation.
#[derive(Clone, Copy)]
struct Op {
    kind: u32,
    comm: u32,
    peer: i32,
    tag: i32,
    bytes: usize,
    id: u32,
    slot: usize,
    rec: usize,
}

fn op_at(p: &GlobalSlice<u32>, at: usize) -> Result<Op, Error> {
    Ok(Op {
        kind: p.read(at)?,
        comm: p.read(at + 1)?,
        peer: p.read(at + 2)? as i32,
        tag: p.read(at + 3)? as i32,
        bytes: (p.read(at + 4)? as usize).min(MAX_BYTES),
        id: p.read(at + 5)?,
        slot: p.read(at + 6)? as usize,
        rec: p.read(at + 7)? as usize,
    })
}

/// The world and the four communicators every rank makes at the start.
struct Comms<'w> {
    world: &'w World,
    sub: [SimpleCommunicator<'w>; 4],
}

impl<'w> Comms<'w> {
    fn new(world: &'w World) -> Result<Comms<'w>, Error> {
        let rank = world.rank();
        let dup = world.duplicate()?;
        let parity = world
            .split_by_color_with_key(Color::with_value(rank as u32 % 2), -rank)?
            .ok_or(Error::OutOfBounds { index: 0, len: 0 })?;
        let shared = world.split_shared()?;
        let warp = world.split_by_warp()?;
        Ok(Comms {
            world,
            sub: [dup, parity, shared, warp],
        })
    }

    fn bad(comm: u32) -> Error {
        Error::OutOfBounds {
            index: comm,
            len: COMMS,
        }
    }

    fn process(&self, comm: u32, r: i32) -> Result<Process<'_>, Error> {
        match comm {
            0 => Ok(self.world.process_at_rank(r)),
            c => self
                .sub
                .get(c as usize - 1)
                .map(|s| s.process_at_rank(r))
                .ok_or(Comms::bad(c)),
        }
    }

    fn any(&self, comm: u32) -> Result<AnyProcess<'_>, Error> {
        match comm {
            0 => Ok(self.world.any_process()),
            c => self
                .sub
                .get(c as usize - 1)
                .map(|s| s.any_process())
                .ok_or(Comms::bad(c)),
        }
    }
}

/// One rank's region of the records.
struct Out {
    out: GlobalSlice<u32>,
    start: usize,
    stride: usize,
}

impl Out {
    fn put(&self, rec: usize, words: &[u32; RECORD_WORDS]) -> Result<(), Error> {
        let at = rec * RECORD_WORDS;
        if at + RECORD_WORDS > self.stride {
            return Err(Error::OutOfBounds {
                index: (at + RECORD_WORDS) as u32,
                len: self.stride as u32,
            });
        }
        for (j, &w) in words.iter().enumerate() {
            self.out.write(self.start + at + j, w)?;
        }
        Ok(())
    }

    fn send(&self, rec: usize, r: &Result<(), Error>) -> Result<(), Error> {
        let mut w = [NONE; RECORD_WORDS];
        w[4] = super::class_of(r);
        self.put(rec, &w)
    }

    fn receive(
        &self,
        rec: usize,
        probed: Option<&Result<Status, Error>>,
        r: &Result<Status, Error>,
        buf: &[u8],
    ) -> Result<(), Error> {
        let mut w = [NONE; RECORD_WORDS];
        if let Some(p) = probed {
            w[..4].copy_from_slice(&status_words(p));
        }
        w[4..8].copy_from_slice(&status_words(r));
        let got = match r {
            Ok(s) => s.bytes() as usize,
            Err(e) => super::error_status(e).map_or(0, |s| s.bytes() as usize),
        }
        .min(buf.len());
        let data = prefix(buf, got)?;
        let mut first = [0u8; 4];
        for (d, s) in first.iter_mut().zip(data.iter()) {
            *d = *s;
        }
        w[8] = u32::from_le_bytes(first);
        w[9] = checksum(data);
        self.put(rec, &w)
    }
}

gpu_mpi_device::kernel! {
    /// Makes the communicators, then runs this rank's operations in order.
    pub static SEMANTICS_STRESS = fn semantics_stress(world: &World, args: &StressArgs) -> Result<(), Error> {
        let rank = world.rank() as usize;
        let out = Out {
            out: args.out,
            start: rank * args.stride as usize,
            stride: args.stride as usize,
        };
        let comms = Comms::new(world)?;
        let p = &args.program;
        let start = p.read(rank)? as usize;
        let ops = p.read(start)? as usize;
        let mut buf = [0u8; MAX_BYTES];
        let mut k = 0;
        while k < ops {
            let op = op_at(p, start + 1 + k * OP_WORDS)?;
            k += 1;
            match op.kind {
                OP_OPEN => window(&comms, &out, p, start, ops, &mut k)?,
                OP_COLL => collective(&comms, &out, &op)?,
                _ => blocking(&comms, &out, &op, &mut buf)?,
            }
        }
        Ok(())
    }
}

/// A blocking send or receive.
#[inline(never)]
fn blocking(comms: &Comms<'_>, out: &Out, op: &Op, buf: &mut [u8; MAX_BYTES]) -> Result<(), Error> {
    match op.kind {
        OP_SEND | OP_SSEND => {
            for (j, b) in buf.iter_mut().enumerate() {
                *b = message_byte(op.id, j);
            }
            let to = comms.process(op.comm, op.peer)?;
            let data = prefix(buf, op.bytes)?;
            let r = if op.kind == OP_SSEND {
                to.synchronous_send_with_tag(data, op.tag)
            } else {
                to.send_with_tag(data, op.tag)
            };
            out.send(op.rec, &r)
        }
        OP_RECV | OP_PROBE_RECV | OP_MPROBE_RECV => {
            buf.fill(0);
            let into = prefix_mut(buf, op.bytes)?;
            let any = op.peer == ANY_SOURCE;
            let (probed, r) = match op.kind {
                OP_RECV if any => (None, comms.any(op.comm)?.receive_into_with_tag(into, op.tag)),
                OP_RECV => (
                    None,
                    comms
                        .process(op.comm, op.peer)?
                        .receive_into_with_tag(into, op.tag),
                ),
                OP_PROBE_RECV => {
                    let probed = if any {
                        comms.any(op.comm)?.probe_with_tag(op.tag)
                    } else {
                        comms.process(op.comm, op.peer)?.probe_with_tag(op.tag)
                    };
                    let r = match probed {
                        Ok(s) => comms
                            .process(op.comm, s.source_rank())?
                            .receive_into_with_tag(into, s.tag()),
                        Err(e) => Err(e),
                    };
                    (Some(probed), r)
                }
                _ => {
                    let matched = if any {
                        comms.any(op.comm)?.matched_probe_with_tag(op.tag)
                    } else {
                        comms.process(op.comm, op.peer)?.matched_probe_with_tag(op.tag)
                    };
                    match matched {
                        Ok((m, s)) => (Some(Ok(s)), m.matched_receive_into(into)),
                        Err(e) => (Some(Err(e)), Err(e)),
                    }
                }
            };
            let n = op.bytes;
            out.receive(op.rec, probed.as_ref(), &r, prefix(buf, n)?)
        }
        other => Err(Error::OutOfBounds {
            index: other,
            len: OP_COLL + 1,
        }),
    }
}

/// What a window keeps of a slot's request until it is recorded.
#[derive(Clone, Copy)]
struct Pending {
    /// 0: unused; else the operation's kind.
    kind: u32,
    rec: usize,
    capacity: usize,
    result: Result<Status, Error>,
}

const UNUSED: Pending = Pending {
    kind: 0,
    rec: 0,
    capacity: 0,
    result: Ok(Status::empty()),
};

/// Runs the operations after an [`OP_OPEN`] up to its [`OP_CLOSE`] in one
/// request scope, then records the window's requests.
#[inline(never)]
fn window(
    comms: &Comms<'_>,
    out: &Out,
    p: &GlobalSlice<u32>,
    start: usize,
    ops: usize,
    k: &mut usize,
) -> Result<(), Error> {
    let mut bufs = [[0u8; MAX_BYTES]; WINDOW];
    let mut pending = [UNUSED; WINDOW];
    let mut scratch = [0u8; MAX_BYTES];
    request::scope(|scope| -> Result<(), Error> {
        let mut free: [Option<&mut [u8; MAX_BYTES]>; WINDOW] = [const { None }; WINDOW];
        for (f, b) in free.iter_mut().zip(bufs.iter_mut()) {
            *f = Some(b);
        }
        let mut reqs = [const { Request::null() }; WINDOW];
        while *k < ops {
            let op = op_at(p, start + 1 + *k * OP_WORDS)?;
            *k += 1;
            let bad = Error::OutOfBounds {
                index: op.slot as u32,
                len: WINDOW as u32,
            };
            match op.kind {
                OP_CLOSE => return Ok(()),
                OP_ISEND | OP_ISSEND | OP_IRECV => {
                    let b = free.get_mut(op.slot).and_then(Option::take).ok_or(bad)?;
                    let posted = if op.kind == OP_IRECV {
                        b.fill(0);
                        let into = prefix_mut(b, op.bytes)?;
                        if op.peer == ANY_SOURCE {
                            comms
                                .any(op.comm)?
                                .immediate_receive_into_with_tag(scope, into, op.tag)
                        } else {
                            comms
                                .process(op.comm, op.peer)?
                                .immediate_receive_into_with_tag(scope, into, op.tag)
                        }
                    } else {
                        for (j, x) in b.iter_mut().enumerate() {
                            *x = message_byte(op.id, j);
                        }
                        let b: &[u8; MAX_BYTES] = b;
                        let data = prefix(b, op.bytes)?;
                        let to = comms.process(op.comm, op.peer)?;
                        if op.kind == OP_ISSEND {
                            to.immediate_synchronous_send_with_tag(scope, data, op.tag)
                        } else {
                            to.immediate_send_with_tag(scope, data, op.tag)
                        }
                    };
                    let slot = pending.get_mut(op.slot).ok_or(bad)?;
                    *slot = Pending {
                        kind: op.kind,
                        rec: op.rec,
                        capacity: op.bytes,
                        result: Ok(Status::empty()),
                    };
                    match posted {
                        Ok(r) => *reqs.get_mut(op.slot).ok_or(bad)? = r,
                        Err(e) => slot.result = Err(e),
                    }
                }
                OP_WAIT => {
                    let r = core::mem::replace(reqs.get_mut(op.slot).ok_or(bad)?, Request::null());
                    let slot = pending.get_mut(op.slot).ok_or(bad)?;
                    if slot.result.is_ok() {
                        slot.result = r.wait();
                    }
                }
                _ => blocking(comms, out, &op, &mut scratch)?,
            }
        }
        Ok(())
    })?;
    for (pd, b) in pending.iter().zip(bufs.iter()) {
        match pd.kind {
            0 => {}
            OP_IRECV => {
                let r = match pd.result {
                    // A truncated message shows in the status's length.
                    Ok(s) if s.bytes() as usize > pd.capacity => Err(Error::Truncate {
                        status: s,
                        capacity_bytes: pd.capacity as u32,
                    }),
                    r => r,
                };
                out.receive(pd.rec, None, &r, prefix(b, pd.capacity)?)?
            }
            _ => out.send(pd.rec, &pd.result.map(|_| ()))?,
        }
    }
    Ok(())
}

/// A collective on the program's communicator `op.comm`.
#[inline(never)]
fn collective(comms: &Comms<'_>, out: &Out, op: &Op) -> Result<(), Error> {
    let (class, h) = match op.comm {
        0 => on(comms.world, op),
        c => match comms.sub.get(c as usize - 1) {
            Some(s) => on(s, op),
            None => return Err(Comms::bad(c)),
        },
    };
    let mut w = [NONE; RECORD_WORDS];
    w[0] = class;
    w[1] = h;
    out.put(op.rec, &w)
}

/// The collective `op.peer` on `c`: its class and the fold of its result.
#[inline(never)]
fn on<C: Communicator + CommunicatorCollectives>(c: &C, op: &Op) -> (u32, u32) {
    let (n, me) = (c.size() as usize, c.rank() as u32);
    let count = op.bytes;
    let whole = if op.peer as u32 == C_ALL_GATHER {
        n * count
    } else {
        count
    };
    if whole > MAX_ELEMS {
        return (
            Error::OutOfBounds {
                index: whole as u32,
                len: MAX_ELEMS as u32,
            }
            .class() as u32,
            NONE,
        );
    }
    let mut send = [0u64; MAX_ELEMS];
    let mut recv = [0u64; MAX_ELEMS];
    for (i, v) in send.iter_mut().enumerate().take(count) {
        *v = input(op.id, me, i as u32);
    }
    let root = c.process_at_rank(op.tag);
    let is_root = op.tag as u32 == me;
    let sum = SystemOperation::sum();
    let (r, shown) = match op.peer as u32 {
        C_BARRIER => (c.barrier(), 0),
        C_BROADCAST => {
            if is_root {
                recv[..count].copy_from_slice(&send[..count]);
            }
            (root.broadcast_into(&mut recv[..count]), count)
        }
        C_REDUCE if is_root => (
            root.reduce_into_root(&send[..count], &mut recv[..count], sum),
            count,
        ),
        C_REDUCE => (root.reduce_into(&send[..count], sum), 0),
        C_ALL_REDUCE => (c.all_reduce_into(&send[..count], &mut recv[..count], sum), count),
        C_SCAN => (c.scan_into(&send[..count], &mut recv[..count], sum), count),
        C_ALL_GATHER => (c.all_gather_into(&send[..count], &mut recv[..whole]), whole),
        other => (
            Err(Error::OutOfBounds {
                index: other,
                len: C_KINDS,
            }),
            0,
        ),
    };
    match r {
        Ok(()) => (0, recv[..shown].iter().fold(0, |h, &v| fold(h, v))),
        Err(e) => (e.class() as u32, NONE),
    }
}
