//! Random fence programs of one-sided operations against a sequential
//! model of the windows (MPI 4.1 §12.5.1, §12.7).
//!
//! A generated program: 2 to 12 ranks, a window over each rank's part of
//! a buffer (0 to 12 elements of `u8`, `u32` or `i64`; some empty), and 1
//! to 4 fence epochs of puts, gets, accumulates with sum or replace, and
//! `get_accumulate`s with no_op, each from a random origin to a random
//! target and range; a third of them typed (`put_typed` and the others,
//! MPI 4.1 §12.3): the target a vector of stride 1, 2, 3 or -2 at the
//! displacement, the origin or result every other element of a local
//! view. Within an epoch the accesses do not conflict, as MPI
//! requires: a location is put or replaced by one operation, or summed
//! into by any number (sum commutes), or read by any number, and never
//! two of these. The model applies each epoch in program order; every
//! read must see the state before the epoch, and after the last fence
//! every window must hold the model's state and the bytes around the
//! windows their pattern.

use gpu_mpi::{Device, WorldSpec};
use gpu_mpi_check_kernels::rma::{
    Elem, RmaProgram, PROGRAM_FETCH, PROGRAM_GET, PROGRAM_MAX_LEN, PROGRAM_PUT, PROGRAM_REPLACE,
    PROGRAM_STRIDE_SHIFT, PROGRAM_SUM, PROGRAM_TYPED, RMA_PROGRAM, T_I64, T_U32, T_U8,
};
use proptest::prelude::*;
use std::collections::HashMap;

mod common;
use common::SplitMix64;

/// Most elements of a rank's window.
const MAX_WINDOW: u32 = 12;
/// Words of the buffer per rank: 12 elements of 8 bytes.
const PART: u32 = 12;

#[derive(Clone, Copy, Debug)]
struct Op {
    origin: u32,
    kind: u32,
    target: u32,
    disp: u32,
    len: u32,
    /// The first origin value, or for a read the offset of its record.
    value: u32,
    /// A typed operation's target stride in elements (`None`: the `Pod`
    /// operation, elements `disp..disp + len`).
    stride: Option<i32>,
}

impl Op {
    /// Element `i` of the operation in the target's window.
    fn element(&self, i: u32) -> usize {
        (self.disp as i64 + i as i64 * self.stride.unwrap_or(1) as i64) as usize
    }

    /// The kind word the kernel reads.
    fn kind_word(&self) -> u32 {
        match self.stride {
            None => self.kind,
            Some(s) => self.kind | PROGRAM_TYPED | ((s as i8 as u8 as u32) << PROGRAM_STRIDE_SHIFT),
        }
    }
}

#[derive(Clone, Debug)]
struct Program {
    ranks: u32,
    block_dim: u32,
    elem: u32,
    lens: Vec<u32>,
    epochs: Vec<Vec<Op>>,
    /// Words of the reads' records.
    out_words: u32,
}

/// How a location is used in one epoch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Written,
    Summed,
    Read,
}

fn build(ranks: u32, elem: u32, epochs: usize, attempts: usize, seed: u64) -> Program {
    let mut rng = SplitMix64::new(seed);
    let lens: Vec<u32> = (0..ranks)
        .map(|_| {
            if rng.chance(20) {
                0
            } else {
                rng.below(MAX_WINDOW + 1)
            }
        })
        .collect();
    let divisors: Vec<u32> = (1..=ranks).filter(|b| ranks.is_multiple_of(*b)).collect();
    let block_dim = divisors[rng.index(divisors.len())];
    let mut out_words = 0;
    let mut all = Vec::new();
    for _ in 0..epochs {
        let mut uses: HashMap<(u32, u32), Use> = HashMap::new();
        let mut ops = Vec::new();
        for _ in 0..attempts {
            let origin = rng.below(ranks);
            let target = rng.below(ranks);
            let kind = rng.below(5);
            let room = lens[target as usize];
            let len = rng.below(room.min(PROGRAM_MAX_LEN as u32) + 1);
            // A third of the operations typed, with a target stride of 1
            // (one block), 2, 3 or -2 (the type reaching below its
            // displacement).
            let stride = rng.chance(33).then(|| [1, 2, 3, -2][rng.index(4)]);
            let step = stride.map_or(1, |s: i32| s.unsigned_abs());
            let span = if len == 0 { 0 } else { (len - 1) * step + 1 };
            if span > room {
                continue;
            }
            let lowest = rng.below(room - span + 1);
            let disp = match stride {
                Some(s) if s < 0 => lowest + span.saturating_sub(1),
                _ => lowest,
            };
            let op = Op {
                origin,
                kind,
                target,
                disp,
                len,
                value: 0,
                stride,
            };
            let want = match kind {
                PROGRAM_PUT | PROGRAM_REPLACE => Use::Written,
                PROGRAM_SUM => Use::Summed,
                _ => Use::Read,
            };
            let fits = (0..len).all(|i| match uses.get(&(target, op.element(i) as u32)) {
                None => true,
                Some(u) => *u == want && want != Use::Written,
            });
            if !fits {
                continue;
            }
            for i in 0..len {
                uses.insert((target, op.element(i) as u32), want);
            }
            let value = if want == Use::Read {
                out_words += 2 * len;
                out_words - 2 * len
            } else {
                rng.below(1000)
            };
            ops.push(Op { value, ..op });
        }
        all.push(ops);
    }
    Program {
        ranks,
        block_dim,
        elem,
        lens,
        epochs: all,
        out_words,
    }
}

fn program() -> impl Strategy<Value = Program> {
    (
        2u32..=12,
        prop::sample::select(vec![T_U8, T_U32, T_I64]),
        1usize..=4,
        0usize..32,
        any::<u64>(),
    )
        .prop_map(|(ranks, elem, epochs, attempts, seed)| build(ranks, elem, epochs, attempts, seed))
}

/// The program as the interpreter reads it.
fn encode(p: &Program) -> Vec<u32> {
    let mut words = vec![p.epochs.len() as u32];
    words.extend(&p.lens);
    for epoch in &p.epochs {
        words.push(epoch.len() as u32);
        for op in epoch {
            words.extend([op.origin, op.kind_word(), op.target, op.disp, op.len, op.value]);
        }
    }
    words
}

/// The pattern of the buffer around and under the windows.
fn pattern(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 53 + 11) as u8).collect()
}

/// Runs the program on the emulator: the reads' records and the buffer.
fn run(p: &Program) -> Result<(Vec<u32>, Vec<u8>), String> {
    let e = |e: gpu_mpi::HostError| e.to_string();
    let device = Device::cpu();
    let code = device.upload(&encode(p)).map_err(e)?;
    let initial: Vec<u64> = pattern((8 * PART * p.ranks) as usize)
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    let data = device.upload(&initial).map_err(e)?;
    let out = device
        .alloc_zeroed::<u32>(p.out_words.max(1) as usize)
        .map_err(e)?;
    let args = RmaProgram {
        program: code.slice(),
        data: data.slice(),
        out: out.slice(),
        part: PART,
        elem: p.elem,
    };
    let spec = WorldSpec::ranks(p.ranks).block_dim(p.block_dim).windows(2);
    device
        .launch(&RMA_PROGRAM, &args, &spec)
        .map_err(|e| format!("launch failed: {e}"))?;
    let bytes = bytemuck::cast_slice(&device.download(&data).map_err(e)?).to_vec();
    Ok((device.download(&out).map_err(e)?, bytes))
}

/// Wrapping addition, the sum of the accumulates.
trait Add: Elem + bytemuck::Pod {
    fn add(self, other: Self) -> Self;
}

macro_rules! add {
    ($($t:ty),*) => {$(
        impl Add for $t {
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    )*};
}

add!(u8, u32, i64);

fn check_as<T: Add>(p: &Program, out: &[u32], bytes: &[u8]) -> Result<(), String> {
    let size = std::mem::size_of::<T>();
    let initial = pattern(bytes.len());
    let at = |r: u32, e: u32| (r * PART * 8) as usize + e as usize * size;
    let elem = |b: &[u8], r: u32, e: u32| bytemuck::pod_read_unaligned::<T>(&b[at(r, e)..at(r, e) + size]);
    let mut state: Vec<Vec<T>> = (0..p.ranks)
        .map(|r| (0..p.lens[r as usize]).map(|e| elem(&initial, r, e)).collect())
        .collect();
    for (n, epoch) in p.epochs.iter().enumerate() {
        let before = state.clone();
        for op in epoch {
            let t = op.target as usize;
            for i in 0..op.len {
                let e = op.element(i);
                let v = T::of(op.value as i32 + i as i32);
                match op.kind {
                    PROGRAM_PUT | PROGRAM_REPLACE => state[t][e] = v,
                    PROGRAM_SUM => state[t][e] = state[t][e].add(v),
                    _ => {
                        let w = (op.value + 2 * i) as usize;
                        let got = u64::from(out[w]) | (u64::from(out[w + 1]) << 32);
                        let want = before[t][e].bits();
                        if got != want {
                            return Err(format!(
                                "epoch {n}, {op:?}: element {e} read {got:#x}, the model {want:#x}"
                            ));
                        }
                    }
                }
            }
        }
    }
    for r in 0..p.ranks {
        for (e, want) in state[r as usize].iter().enumerate() {
            let got = elem(bytes, r, e as u32);
            if got != *want {
                return Err(format!("rank {r} element {e}: {got:?}, the model {want:?}"));
            }
        }
        let from = at(r, p.lens[r as usize]);
        let to = ((r + 1) * PART * 8) as usize;
        if bytes[from..to] != initial[from..to] {
            return Err(format!("rank {r}: bytes past its window changed"));
        }
    }
    Ok(())
}

fn check(p: &Program, out: &[u32], bytes: &[u8]) -> Result<(), String> {
    match p.elem {
        T_U8 => check_as::<u8>(p, out, bytes),
        T_U32 => check_as::<u32>(p, out, bytes),
        _ => check_as::<i64>(p, out, bytes),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fence_programs_follow_the_sequential_model(p in program()) {
        let (out, bytes) = run(&p).map_err(TestCaseError::fail)?;
        check(&p, &out, &bytes).map_err(TestCaseError::fail)?;
    }
}

/// The checker finds a wrong window: the same program's model run on a
/// buffer where one summed element is off by one.
#[test]
fn the_model_catches_a_lost_accumulate() {
    let p = Program {
        ranks: 2,
        block_dim: 2,
        elem: T_U32,
        lens: vec![2, 1],
        epochs: vec![vec![
            Op {
                origin: 0,
                kind: PROGRAM_SUM,
                target: 1,
                disp: 0,
                len: 1,
                value: 5,
                stride: None,
            },
            Op {
                origin: 1,
                kind: PROGRAM_SUM,
                target: 1,
                disp: 0,
                len: 1,
                value: 7,
                stride: Some(2),
            },
            Op {
                origin: 1,
                kind: PROGRAM_GET,
                target: 0,
                disp: 0,
                len: 2,
                value: 0,
                stride: None,
            },
            Op {
                origin: 0,
                kind: PROGRAM_FETCH,
                target: 0,
                disp: 1,
                len: 1,
                value: 4,
                stride: Some(-2),
            },
        ]],
        out_words: 6,
    };
    let (out, mut bytes) = run(&p).unwrap();
    check(&p, &out, &bytes).unwrap();
    let at = (PART * 8) as usize;
    bytes[at] = bytes[at].wrapping_sub(1);
    assert!(check(&p, &out, &bytes).is_err());
}
