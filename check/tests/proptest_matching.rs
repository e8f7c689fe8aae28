//! Random point-to-point programs against a sequential model of MPI message
//! matching (MPI 4.1 sections 3.5 and 3.8).
//!
//! A generated program: 2 to 8 ranks; messages with random senders,
//! receivers, tags (0..4) and sizes (0 to one slot, so every send is eager);
//! every rank first sends its messages in order (outboxes hold them all, so
//! sends never block), then runs its receive list. Receive lists are always
//! satisfiable, whatever the timing. Per receiver one of:
//! - specific-source receives (any tag or a specific tag), built by
//!   simulating the matching, then any-source/any-tag receives for the rest;
//! - any-source receives with specific tags (as many per tag as there are
//!   messages with that tag), some replaced by any-source/any-tag receives
//!   at the end;
//! - any-source/any-tag receives only.
//!
//! Some receives are non-blocking, posted in runs and completed with
//! `wait_all`; inside a run, some are blocking receives made while the
//! run's earlier receives are pending (they must leave those their
//! messages: posting order, MPI 3.5, holds across blocking and non-blocking
//! receives). Some receives probe first and receive what they probed; some have small
//! buffers (truncation). The interpreter kernel
//! (`gpu_mpi_check_kernels::interpreter`) records every receive; the
//! model then replays the receives in program order: given the source a
//! receive observed, it must have matched the earliest unmatched message
//! from that source that fits its tag filter (non-overtaking), and its tag,
//! length, error class and data must be that message's. Every message must
//! be received exactly once.

use gpu_mpi::device::{ErrorClass, ANY_SOURCE, ANY_TAG};
use gpu_mpi::{Device, WorldSpec};
use gpu_mpi_check_kernels::interpreter::{
    checksum, message_byte, ProgramArgs, MAX_BYTES, OP_IRECV, OP_PROBE_RECV, OP_RECV, OP_RECV_IN_RUN,
    OP_SEND, OP_WORDS, RECORD_WORDS, SEMANTICS_INTERPRETER,
};
use gpu_mpi_check_kernels::NONE;
use proptest::prelude::*;

mod common;
use common::SplitMix64;

const SLOT_BYTES: u32 = 256;
const TAGS: i32 = 4;

#[derive(Clone, Copy, Debug)]
struct Message {
    id: u32,
    source: u32,
    dest: u32,
    tag: i32,
    bytes: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Receive {
    source: i32,
    tag: i32,
    capacity: u32,
    probe: bool,
    /// Posted as a non-blocking receive; a run of them (up to a scope's
    /// request table) is posted in order and completed with `wait_all`.
    immediate: bool,
    /// Made blocking inside such a run (when not its first), while the
    /// run's earlier receives are pending: posting order holds for it too.
    in_run: bool,
}

#[derive(Clone, Debug)]
struct Program {
    ranks: u32,
    block_dim: u32,
    messages: Vec<Message>,
    receives: Vec<Vec<Receive>>,
}

fn receive(rng: &mut SplitMix64, source: i32, tag: i32) -> Receive {
    let capacity = if rng.chance(80) {
        SLOT_BYTES
    } else {
        rng.index(SLOT_BYTES as usize + 1) as u32
    };
    let probe = rng.chance(25);
    Receive {
        source,
        tag,
        capacity,
        probe,
        immediate: !probe && rng.chance(50),
        in_run: rng.chance(25),
    }
}

/// The receive list of `dest` for its incoming `messages` (in send order).
fn receives_for(rng: &mut SplitMix64, mode: u8, ranks: u32, messages: &[Message]) -> Vec<Receive> {
    let mut out = Vec::new();
    match mode {
        0 => {
            // Specific sources, simulated: queues of unmatched messages per source.
            let mut queues: Vec<Vec<Message>> = (0..ranks)
                .map(|s| messages.iter().filter(|m| m.source == s).copied().collect())
                .collect();
            let specific = rng.index(messages.len() + 1);
            for _ in 0..specific {
                let sources: Vec<usize> = (0..ranks as usize).filter(|&s| !queues[s].is_empty()).collect();
                let s = sources[rng.index(sources.len())];
                let q = &mut queues[s];
                let tag = if rng.chance(50) {
                    ANY_TAG
                } else {
                    q[rng.index(q.len())].tag
                };
                let pos = q
                    .iter()
                    .position(|m| tag == ANY_TAG || m.tag == tag)
                    .expect("a match");
                q.remove(pos);
                out.push(receive(rng, s as i32, tag));
            }
            let rest: usize = queues.iter().map(Vec::len).sum();
            for _ in 0..rest {
                out.push(receive(rng, ANY_SOURCE, ANY_TAG));
            }
        }
        1 => {
            let mut tags: Vec<i32> = messages.iter().map(|m| m.tag).collect();
            rng.shuffle(&mut tags);
            let any = rng.index(tags.len() + 1);
            for &t in &tags[any..] {
                out.push(receive(rng, ANY_SOURCE, t));
            }
            for _ in 0..any {
                out.push(receive(rng, ANY_SOURCE, ANY_TAG));
            }
        }
        _ => {
            for _ in messages {
                out.push(receive(rng, ANY_SOURCE, ANY_TAG));
            }
        }
    }
    out
}

fn build(ranks: u32, raw: Vec<(u32, u32, i32, u32)>, modes: Vec<u8>, seed: u64, block: usize) -> Program {
    let messages: Vec<Message> = raw
        .into_iter()
        .enumerate()
        .map(|(i, (source, dest, tag, bytes))| Message {
            id: 0x100 + i as u32,
            source: source % ranks,
            dest: dest % ranks,
            tag,
            bytes,
        })
        .collect();
    // The receive lists are built from a generated seed.
    let mut rng = SplitMix64::new(seed);
    let receives = (0..ranks)
        .map(|d| {
            let incoming: Vec<Message> = messages.iter().filter(|m| m.dest == d).copied().collect();
            receives_for(&mut rng, modes[d as usize], ranks, &incoming)
        })
        .collect();
    let divisors: Vec<u32> = (1..=ranks).filter(|b| ranks.is_multiple_of(*b)).collect();
    Program {
        ranks,
        block_dim: divisors[block % divisors.len()],
        messages,
        receives,
    }
}

fn program() -> impl Strategy<Value = Program> {
    (2u32..=8).prop_flat_map(|ranks| {
        let size = prop_oneof![Just(0u32), Just(SLOT_BYTES), 1u32..SLOT_BYTES];
        let message = (0..ranks, 0..ranks, 0..TAGS, size);
        (
            Just(ranks),
            prop::collection::vec(message, 0..48),
            prop::collection::vec(0u8..3, ranks as usize),
            any::<u64>(),
            0usize..4,
        )
            .prop_map(|(ranks, raw, modes, seed, block)| build(ranks, raw, modes, seed, block))
    })
}

/// The program as the interpreter reads it.
fn encode(p: &Program) -> Vec<u32> {
    let mut words = vec![0u32; p.ranks as usize];
    for r in 0..p.ranks {
        words[r as usize] = words.len() as u32;
        let sends: Vec<&Message> = p.messages.iter().filter(|m| m.source == r).collect();
        let receives = &p.receives[r as usize];
        words.push((sends.len() + receives.len()) as u32);
        for m in sends {
            words.extend([OP_SEND, m.dest, m.tag as u32, m.bytes, m.id]);
        }
        let mut previous_immediate = false;
        for rv in receives {
            let kind = if rv.probe {
                OP_PROBE_RECV
            } else if rv.immediate && rv.in_run && previous_immediate {
                OP_RECV_IN_RUN
            } else if rv.immediate {
                OP_IRECV
            } else {
                OP_RECV
            };
            previous_immediate = rv.immediate && !rv.probe;
            words.extend([kind, rv.source as u32, rv.tag as u32, rv.capacity, 0]);
        }
    }
    words
}

/// Runs the program on the emulator: the records, `stride` words per rank.
fn run(p: &Program) -> Result<(Vec<u32>, usize), String> {
    let device = Device::cpu();
    let most = p.receives.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let stride = most * RECORD_WORDS as usize;
    let code = device.upload(&encode(p)).map_err(|e| e.to_string())?;
    let out = device
        .alloc_zeroed::<u32>(stride * p.ranks as usize)
        .map_err(|e| e.to_string())?;
    let args = ProgramArgs {
        stride: stride as u32,
        reserved: 0,
        program: code.slice(),
        out: out.slice(),
    };
    let per_sender = (0..p.ranks)
        .map(|r| p.messages.iter().filter(|m| m.source == r).count())
        .max()
        .unwrap_or(0)
        .max(1) as u32;
    let spec = WorldSpec::ranks(p.ranks)
        .block_dim(p.block_dim)
        .slot_bytes(SLOT_BYTES)
        .slots_per_rank(per_sender);
    device
        .launch(&SEMANTICS_INTERPRETER, &args, &spec)
        .map_err(|e| format!("launch failed: {e}"))?;
    Ok((device.download(&out).map_err(|e| e.to_string())?, stride))
}

/// Checks every record against the sequential matching model.
fn check(p: &Program, records: &[u32], stride: usize) -> Result<(), String> {
    let mut matched = vec![false; p.messages.len()];
    for d in 0..p.ranks {
        for (k, rv) in p.receives[d as usize].iter().enumerate() {
            let at = d as usize * stride + k * RECORD_WORDS as usize;
            let rec = &records[at..at + RECORD_WORDS as usize];
            let (probe, status, first, sum) = (&rec[0..4], &rec[4..8], rec[8], rec[9]);
            let ctx = format!("rank {d} receive {k} {rv:?}: record {rec:?}");
            let source = status[1];
            if source >= p.ranks {
                return Err(format!("{ctx}: no source"));
            }
            if rv.source != ANY_SOURCE && source != rv.source as u32 {
                return Err(format!("{ctx}: source filter not respected"));
            }
            // The model: the earliest unmatched message from that source to
            // this rank that fits the tag filter.
            let Some(i) = p.messages.iter().enumerate().position(|(i, m)| {
                !matched[i] && m.source == source && m.dest == d && (rv.tag == ANY_TAG || m.tag == rv.tag)
            }) else {
                return Err(format!("{ctx}: no unmatched message from rank {source} fits"));
            };
            matched[i] = true;
            let m = p.messages[i];
            let kept = m.bytes.min(rv.capacity) as usize;
            let class = if m.bytes > rv.capacity {
                ErrorClass::Truncate as u32
            } else {
                0
            };
            let want_status = [class, m.source, m.tag as u32, m.bytes];
            if status != want_status {
                return Err(format!("{ctx}: expected status {want_status:?} of message {m:?}"));
            }
            let want_probe = if rv.probe {
                [0, m.source, m.tag as u32, m.bytes]
            } else {
                [NONE; 4]
            };
            if probe != want_probe {
                return Err(format!("{ctx}: expected probe {want_probe:?} of message {m:?}"));
            }
            let data: Vec<u8> = (0..kept).map(|j| message_byte(m.id, j)).collect();
            let mut head = [0u8; 4];
            for (h, b) in head.iter_mut().zip(&data) {
                *h = *b;
            }
            if first != u32::from_le_bytes(head) || sum != checksum(&data) {
                return Err(format!("{ctx}: data is not message {m:?}'s first {kept} bytes"));
            }
        }
    }
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(format!("message {:?} was never received", p.messages[i]));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matching_follows_the_sequential_model(p in program()) {
        let (records, stride) = run(&p).map_err(TestCaseError::fail)?;
        check(&p, &records, stride).map_err(TestCaseError::fail)?;
    }
}

/// The model itself: a hand-written program with a known answer.
#[test]
fn model_accepts_a_known_run_and_rejects_overtaking() {
    let m = |id, source, dest, tag, bytes| Message {
        id,
        source,
        dest,
        tag,
        bytes,
    };
    let r = |source, tag| Receive {
        source,
        tag,
        capacity: SLOT_BYTES,
        probe: false,
        immediate: false,
        in_run: false,
    };
    let p = Program {
        ranks: 2,
        block_dim: 2,
        messages: vec![m(0x100, 1, 0, 1, 8), m(0x101, 1, 0, 2, 8), m(0x102, 1, 0, 1, 4)],
        receives: vec![vec![r(1, 2), r(ANY_SOURCE, ANY_TAG), r(1, ANY_TAG)], vec![]],
    };
    let (records, stride) = run(&p).unwrap();
    check(&p, &records, stride).unwrap();
    // Swapping the records of the last two receives breaks non-overtaking.
    let mut bad = records.clone();
    let w = RECORD_WORDS as usize;
    for j in 0..w {
        bad.swap(w + j, 2 * w + j);
    }
    assert!(check(&p, &bad, stride).is_err());
    assert!(MAX_BYTES >= SLOT_BYTES as usize);
    assert_eq!(encode(&p).len(), 2 + 2 + 6 * OP_WORDS);
}
