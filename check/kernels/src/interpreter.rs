//! An interpreter of encoded point-to-point programs, for property tests of
//! message matching (tests/proptest_matching.rs).
//!
//! # Encoding (`ProgramArgs::program`, words)
//! - words `0..ranks`: the offset of rank `r`'s operation list;
//! - at that offset: the number of operations, then [`OP_WORDS`] words per
//!   operation: `[kind, peer, tag, bytes, id]`:
//!   - [`OP_SEND`]: send `bytes` bytes of message `id` ([`message_byte`]) to
//!     `peer` with `tag`;
//!   - [`OP_RECV`]: receive from `peer` (`ANY_SOURCE` as `u32`) with `tag`
//!     (`ANY_TAG` as `u32`) into a buffer of `bytes` bytes;
//!   - [`OP_PROBE_RECV`]: probe with that filter, then receive from the
//!     probed source with the probed tag into `bytes` bytes;
//!   - [`OP_IRECV`]: as [`OP_RECV`], non-blocking: a run of consecutive
//!     `OP_IRECV` (up to a request scope's table) is posted in order, then
//!     completed with `wait_all`, and recorded in posting order (matching
//!     follows posting order, MPI 3.5, so the sequential model applies);
//!   - [`OP_RECV_IN_RUN`]: inside such a run (never first), a blocking
//!     receive made after the run's earlier receives were posted and before
//!     its `wait_all`: it must leave to them the messages they accept.
//!
//! # Record (`ProgramArgs::out`)
//! Rank `r` writes from `r * stride`, per receive in program order,
//! [`RECORD_WORDS`] words: the probe's status (four [`NONE`] for a plain
//! receive), the receive's status, the first 4 received bytes as a
//! little-endian word (zero-padded), and [`checksum`] of the received bytes.

use super::{prefix, prefix_mut, Recorder, NONE};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::request::{self, Request, MAX_REQUESTS};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, Status, World, ANY_SOURCE};

/// Send.
pub const OP_SEND: u32 = 1;
/// Receive.
pub const OP_RECV: u32 = 2;
/// Probe, then receive what was probed.
pub const OP_PROBE_RECV: u32 = 3;
/// Non-blocking receive (posted in a run, completed with `wait_all`).
pub const OP_IRECV: u32 = 4;
/// Blocking receive inside a run of [`OP_IRECV`] (see the module docs).
pub const OP_RECV_IN_RUN: u32 = 5;
/// Words per operation.
pub const OP_WORDS: usize = 5;
/// Words recorded per receive.
pub const RECORD_WORDS: u32 = 10;
/// Largest message and receive buffer in bytes.
pub const MAX_BYTES: usize = 512;

/// Arguments of [`SEMANTICS_INTERPRETER`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ProgramArgs {
    /// Words of `out` per rank.
    pub stride: u32,
    /// Padding, zero.
    pub reserved: u32,
    /// The encoded program.
    pub program: GlobalSlice<u32>,
    /// The records.
    pub out: GlobalSlice<u32>,
}

/// Byte `j` of message `id`: its first 4 bytes are `id` (little-endian).
pub fn message_byte(id: u32, j: usize) -> u8 {
    if j < 4 {
        (id >> (8 * j)) as u8
    } else {
        id.wrapping_mul(31).wrapping_add(j as u32 * 7) as u8
    }
}

/// Checksum of received bytes: the sum of `byte * (index + 1)`, wrapping.
pub fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().enumerate().fold(0u32, |acc, (j, &b)| {
        acc.wrapping_add((b as u32).wrapping_mul(j as u32 + 1))
    })
}

gpu_mpi_device::kernel! {
    /// Runs this rank's operations of the encoded program in order.
    pub static SEMANTICS_INTERPRETER = fn semantics_interpreter(world: &World, args: &ProgramArgs) -> Result<(), Error> {
        let rank = world.rank();
        let mut rec = Recorder::with_stride(args.out, rank, args.stride);
        let p = &args.program;
        let start = p.read(rank as usize)? as usize;
        let ops = p.read(start)? as usize;
        let mut buf = [0u8; MAX_BYTES];
        let mut k = 0;
        while k < ops {
            let base = start + 1 + k * OP_WORDS;
            k += 1;
            let kind = p.read(base)?;
            let peer = p.read(base + 1)? as i32;
            let tag = p.read(base + 2)? as i32;
            let bytes = (p.read(base + 3)? as usize).min(MAX_BYTES);
            let id = p.read(base + 4)?;
            match kind {
                OP_IRECV => {
                    let mut run = 1;
                    while run < MAX_REQUESTS
                        && k + run - 1 < ops
                        && matches!(p.read(start + 1 + (k + run - 1) * OP_WORDS)?, OP_IRECV | OP_RECV_IN_RUN)
                    {
                        run += 1;
                    }
                    immediate_run(world, &mut rec, p, base, run)?;
                    k += run - 1;
                }
                OP_SEND => {
                    for (j, b) in buf.iter_mut().enumerate() {
                        *b = message_byte(id, j);
                    }
                    world.process_at_rank(peer).send_with_tag(prefix(&buf, bytes)?, tag)?;
                }
                _ => {
                    buf.fill(0);
                    let (probed, r) = if kind == OP_PROBE_RECV {
                        let probed = if peer == ANY_SOURCE {
                            world.any_process().probe_with_tag(tag)
                        } else {
                            world.process_at_rank(peer).probe_with_tag(tag)
                        };
                        let r = match probed {
                            Ok(s) => world
                                .process_at_rank(s.source_rank())
                                .receive_into_with_tag(prefix_mut(&mut buf, bytes)?, s.tag()),
                            Err(e) => Err(e),
                        };
                        (Some(probed), r)
                    } else if peer == ANY_SOURCE {
                        (None, world.any_process().receive_into_with_tag(prefix_mut(&mut buf, bytes)?, tag))
                    } else {
                        (None, world.process_at_rank(peer).receive_into_with_tag(prefix_mut(&mut buf, bytes)?, tag))
                    };
                    record(&mut rec, probed, &r, &buf, bytes)?;
                }
            }
        }
        Ok(())
    }
}

/// Posts `run` consecutive `OP_IRECV` operations from `base` in order,
/// completes them with `wait_all`, and records each in posting order.
fn immediate_run(
    world: &World,
    rec: &mut Recorder,
    p: &GlobalSlice<u32>,
    base: usize,
    run: usize,
) -> Result<(), Error> {
    let mut bufs = [[0u8; MAX_BYTES]; MAX_REQUESTS];
    let mut caps = [0usize; MAX_REQUESTS];
    let mut statuses = [Status::empty(); MAX_REQUESTS];
    let mut blocking: [Option<Result<Status, Error>>; MAX_REQUESTS] = [None; MAX_REQUESTS];
    let posted = request::scope(|scope| -> Result<(), Error> {
        let mut reqs = [const { Request::null() }; MAX_REQUESTS];
        for (i, ((b, r), cap)) in bufs
            .iter_mut()
            .zip(reqs.iter_mut())
            .zip(caps.iter_mut())
            .take(run)
            .enumerate()
        {
            let op = base + i * OP_WORDS;
            let kind = p.read(op)?;
            let peer = p.read(op + 1)? as i32;
            let tag = p.read(op + 2)? as i32;
            *cap = (p.read(op + 3)? as usize).min(MAX_BYTES);
            let into = prefix_mut(b, *cap)?;
            if kind == OP_RECV_IN_RUN {
                // Blocking, while the earlier receives of the run are pending.
                let got = if peer == ANY_SOURCE {
                    world.any_process().receive_into_with_tag(into, tag)
                } else {
                    world.process_at_rank(peer).receive_into_with_tag(into, tag)
                };
                blocking[i] = Some(got);
                continue;
            }
            *r = if peer == ANY_SOURCE {
                world
                    .any_process()
                    .immediate_receive_into_with_tag(scope, into, tag)?
            } else {
                world
                    .process_at_rank(peer)
                    .immediate_receive_into_with_tag(scope, into, tag)?
            };
        }
        // Errors of single receives (truncation) show in their statuses.
        let _ = request::wait_all(&mut reqs, &mut statuses);
        Ok(())
    });
    posted?;
    for (((b, s), cap), got) in bufs
        .iter()
        .zip(statuses.iter())
        .zip(caps.iter())
        .zip(blocking.iter())
        .take(run)
    {
        if let Some(r) = got {
            record(rec, None, r, b, *cap)?;
            continue;
        }
        let r = if s.bytes() as usize > *cap {
            Err(Error::Truncate {
                status: *s,
                capacity_bytes: *cap as u32,
            })
        } else {
            Ok(*s)
        };
        record(rec, None, &r, b, *cap)?;
    }
    Ok(())
}

fn record(
    rec: &mut Recorder,
    probed: Option<Result<Status, Error>>,
    r: &Result<Status, Error>,
    buf: &[u8],
    capacity: usize,
) -> Result<(), Error> {
    match probed {
        Some(p) => rec.status(&p)?,
        None => rec.words(&[NONE; 4])?,
    }
    rec.status(r)?;
    let got = match r {
        Ok(s) => s.bytes() as usize,
        Err(e) => super::error_status(e).map_or(0, |s| s.bytes() as usize),
    }
    .min(capacity);
    let data = prefix(buf, got)?;
    let mut first = [0u8; 4];
    for (d, s) in first.iter_mut().zip(data.iter()) {
        *d = *s;
    }
    rec.push(u32::from_le_bytes(first))?;
    rec.push(checksum(data))
}
