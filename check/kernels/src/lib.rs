//! MPI semantic test programs, run unchanged on every backend.
//!
//! Each kernel exercises one group of rules of the MPI standard and records
//! what every rank observed — received values, statuses, error classes —
//! into its own region of an output [`GlobalSlice<u32>`]: rank `r` writes
//! words `r * stride .. (r + 1) * stride`. The host side
//! (`gpu_mpi::conformance`) launches them, reads the regions back and checks
//! every word against what MPI requires; docs/semantics.md lists the rules.
//!
//! The kernels return `Ok` even when an MPI call fails: the failure is part
//! of what they record. Only the kernels of [`faults`] return errors (and
//! hang on purpose), for the host's error and deadlock reports.
//!
//! Everything here is `no_std`, allocation-free, and avoids panicking paths
//! (slices are taken with `get`), so it compiles for nvptx64 as it is.
//!
//! - [`p2p`]: point-to-point patterns, probes, truncation, large messages,
//!   ordering, datatype matching, argument errors;
//! - [`collectives`]: barrier, broadcast, reductions (every type and
//!   operation, a non-commutative user operation), count mismatches;
//! - [`chapter6`]: gather, scatter, all-gather, all-to-all (fixed,
//!   varcount, in place), reduce-scatter, scans, in-place reductions and
//!   their argument errors;
//! - [`datatypes`]: derived datatypes (views) in point-to-point and
//!   collectives;
//! - [`comm`]: communicators (splits, groups, compare, context isolation,
//!   the communicator limit) and the collectives on sub-communicators;
//! - [`immediate`]: the non-blocking collectives (barrier, broadcast,
//!   reduce, all-reduce), their overlap with point-to-point requests, test
//!   polling, argument errors and bounds;
//! - [`faults`]: kernels that fail or deadlock on purpose;
//! - [`interpreter`]: runs an encoded communication program (property tests);
//! - [`collective_interpreter`]: creates an encoded set of communicators and
//!   runs an encoded sequence of collectives on them (property tests);
//! - [`planted`]: wrong programs whose outcome depends on the schedule (the
//!   schedule explorer's test subjects).
//! - [`scratch`]: per-rank scratch in the world memory: a sample sort
//!   whose O(p) arrays live there, and the scratch's rules.
//! - [`warp`]: the shim's warp collectives and block-shared scratch.
//! - [`skip`]: a collective that one rank never enters (it must fail on
//!   every rank that entered it).
//! - [`subcomm`]: erroneous collectives on sub-communicators (every rank
//!   fails alike).
//! - [`stress`]: runs an encoded stress program of point-to-point
//!   operations of every mode and collectives (tests/stress.rs).
//! - [`trace`]: programs whose message traces the tests read back (every
//!   kind of event, a failed world collective, a split).
//! - [`view_collectives`]: every data-moving collective with views,
//!   plain slices or a mismatched type on either side, on the world and on
//!   a duplicate, against the host's reference model.
//! - [`views`]: derived datatypes (views) between two ranks in every
//!   receive mode, in broadcast, gather and all-gather, and a count
//!   mismatch of views in all-to-all.
//! - [`world`]: whole-world programs (sums over thousands of ranks, a large
//!   message from a rank's stack, reductions of matrices in every block
//!   shape).
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::{Error, GlobalSlice, Status};

pub mod chapter6;
pub mod collective_interpreter;
pub mod collectives;
pub mod comm;
pub mod datatypes;
pub mod faults;
pub mod hwcomm;
pub mod immediate;
pub mod interpreter;
pub mod nonblocking;
pub mod p2p;
pub mod planted;
pub mod rma;
pub mod rma_flavors;
pub mod rma_pscw;
pub mod scratch;
pub mod skip;
pub mod stress;
pub mod subcomm;
pub mod trace;
pub mod view_collectives;
pub mod views;
pub mod warp;
pub mod world;

// The whole-GPU pack engine's kernel (`Device::pack` on the GPU;
// check/tests/pack.rs).
gpu_mpi_device::pack_kernels!();

/// Arguments shared by the semantic kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CaseArgs {
    /// Which scenario of the kernel to run (the kernel's `*_` constants).
    pub case: u32,
    /// First parameter of the scenario (a size, a count, a root...).
    pub param: u32,
    /// Second parameter of the scenario.
    pub param2: u32,
    /// Words of `out` per rank.
    pub stride: u32,
    /// Per-rank records: rank `r` owns `r * stride .. (r + 1) * stride`.
    pub out: GlobalSlice<u32>,
    /// Message buffers in global memory (layout per kernel).
    pub data: GlobalSlice<u8>,
    /// Shared words (barrier cells, broadcast buffers; layout per kernel).
    pub cells: GlobalSlice<u32>,
}

/// Recorded in place of a field that does not exist (no status, no count).
pub const NONE: u32 = u32::MAX;

/// Appends words to one rank's region of the output.
pub struct Recorder {
    out: GlobalSlice<u32>,
    next: usize,
    end: usize,
}

impl Recorder {
    /// The region of `rank` in `args.out`.
    pub fn new(args: &CaseArgs, rank: i32) -> Recorder {
        Recorder::with_stride(args.out, rank, args.stride)
    }

    /// The region of `rank` in `out`, `stride` words per rank.
    pub fn with_stride(out: GlobalSlice<u32>, rank: i32, stride: u32) -> Recorder {
        let start = rank as usize * stride as usize;
        Recorder {
            out,
            next: start,
            end: start + stride as usize,
        }
    }

    /// Appends one word; `OutOfBounds` past the rank's region.
    pub fn push(&mut self, v: u32) -> Result<(), Error> {
        if self.next >= self.end {
            return Err(Error::OutOfBounds {
                index: self.next as u32,
                len: self.end as u32,
            });
        }
        self.out.write(self.next, v)?;
        self.next += 1;
        Ok(())
    }

    /// Appends several words.
    pub fn words(&mut self, w: &[u32]) -> Result<(), Error> {
        for &v in w {
            self.push(v)?;
        }
        Ok(())
    }

    /// Appends the class of a result (0 for `Ok`).
    pub fn class<T>(&mut self, r: &Result<T, Error>) -> Result<(), Error> {
        self.push(class_of(r))
    }

    /// Appends 4 words for a receive or probe: class, source, tag, bytes. An
    /// error that carries a status (truncation, type mismatch) records it;
    /// other errors record [`NONE`] for the three fields.
    pub fn status(&mut self, r: &Result<Status, Error>) -> Result<(), Error> {
        self.words(&status_words(r))
    }

    /// Appends 5 words for an optional status: 1 and the status when there
    /// is one, 0 and four [`NONE`] otherwise; an error records 2 and its
    /// status words.
    pub fn maybe_status(&mut self, r: &Result<Option<Status>, Error>) -> Result<(), Error> {
        match r {
            Ok(Some(s)) => {
                self.push(1)?;
                self.status(&Ok(*s))
            }
            Ok(None) => self.words(&[0, NONE, NONE, NONE, NONE]),
            Err(e) => {
                self.push(2)?;
                self.status(&Err(*e))
            }
        }
    }

    /// Appends an error's 5 result-record words (five zeros for `Ok`).
    pub fn error_words<T>(&mut self, r: &Result<T, Error>) -> Result<(), Error> {
        match r {
            Ok(_) => self.words(&[0; 5]),
            Err(e) => self.words(&e.to_words()),
        }
    }
}

/// The class code of a result: 0 for `Ok`.
pub fn class_of<T>(r: &Result<T, Error>) -> u32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as u32,
    }
}

/// The status an error carries, if any.
pub fn error_status(e: &Error) -> Option<Status> {
    match *e {
        Error::Truncate { status, .. } | Error::TypeMismatch { status, .. } => Some(status),
        _ => None,
    }
}

/// Class, source, tag and bytes of a receive or probe result.
pub fn status_words(r: &Result<Status, Error>) -> [u32; 4] {
    let (class, status) = match r {
        Ok(s) => (0, Some(*s)),
        Err(e) => (e.class() as u32, error_status(e)),
    };
    match status {
        Some(s) => [class, s.source_rank() as u32, s.tag() as u32, s.bytes()],
        None => [class, NONE, NONE, NONE],
    }
}

/// `Some(n)` as `n`, `None` as [`NONE`].
pub fn count_word(c: Option<usize>) -> u32 {
    c.map_or(NONE, |n| n as u32)
}

/// Byte `i` of the test pattern of rank `source`: differs between ranks and
/// between neighbouring bytes, 256-byte chunks and 64 KiB blocks, so a
/// misplaced or repeated chunk shows.
pub fn pattern_byte(source: u32, i: usize) -> u8 {
    let i = i as u32;
    i.wrapping_mul(7)
        .wrapping_add((i >> 8).wrapping_mul(13))
        .wrapping_add((i >> 16).wrapping_mul(29))
        .wrapping_add(source.wrapping_mul(101))
        .wrapping_add(17) as u8
}

/// Word `i` of the 32-bit test pattern of rank `source`.
pub fn pattern_word(source: u32, i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9E37_79B9) ^ source.wrapping_mul(0x85EB_CA6B) ^ 0x5bd1_e995
}

/// Fills `buf` with the byte pattern of `source`.
pub fn fill_pattern(buf: &mut [u8], source: u32) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(source, i);
    }
}

/// The first `n` elements of `buf`, or `OutOfBounds`.
pub fn prefix<T>(buf: &[T], n: usize) -> Result<&[T], Error> {
    buf.get(..n).ok_or(Error::OutOfBounds {
        index: n as u32,
        len: buf.len() as u32,
    })
}

/// The first `n` elements of `buf`, writable, or `OutOfBounds`.
pub fn prefix_mut<T>(buf: &mut [T], n: usize) -> Result<&mut [T], Error> {
    let len = buf.len();
    buf.get_mut(..n).ok_or(Error::OutOfBounds {
        index: n as u32,
        len: len as u32,
    })
}

/// Element `i` of `buf` or [`NONE`]-like zero when out of range (for
/// recording; the host check then fails instead of the kernel panicking).
pub fn at<T: Copy + Default>(buf: &[T], i: usize) -> T {
    buf.get(i).copied().unwrap_or_default()
}
