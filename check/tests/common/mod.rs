//! Helpers shared by the tests of `check/tests/`: running the
//! `gpu-mpi-check` binary, a seeded generator ([`SplitMix64`]), and random
//! derived datatypes ([`types`]).

// Each test binary compiles this whole module and uses a part of it.
#![allow(dead_code)]

pub mod types;

use std::process::{Command, Output};

/// Runs the `gpu-mpi-check` binary with `args`.
pub fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpu-mpi-check"))
        .args(args)
        .output()
        .unwrap()
}

/// Lossy UTF-8 text of a command's output.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
/// generators", 2014): the tests' programs are a function of a seed, so a
/// failure replays from the seed it names.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        self.index(n as usize) as u32
    }

    /// An index in `0..len` (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        if len == 0 {
            0
        } else {
            (self.next_u64() % len as u64) as usize
        }
    }

    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// Shuffles `v` (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.index(i + 1);
            v.swap(i, j);
        }
    }
}
