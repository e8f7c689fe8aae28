//! The runnable chapters of the tutorial "MPI semantics on a GPU"
//! (docs/tutorial/). Each chapter launches its kernel (`kernels/`), checks
//! what the ranks recorded, and writes what the chapter quotes into a
//! string; [`run`] returns it, or the failed check with what was written
//! before it. The binary `tutorial` prints it.
//!
//! Output is deterministic on the cpu backend: the emulator runs on one
//! worker thread (and chapter 3 on seeded schedules), so a test can compare
//! the chapters' quoted blocks with it (`tests/chapters.rs`).

use gpu_mpi::{BackendKind, CpuOptions, Device, DeviceBuffer, KernelImages};
use gpu_mpi_example_tutorial_kernels::TutorialArgs;
use std::fmt::Write as _;

mod collectives;
mod cost;
mod datatypes;
mod deadlock;
mod nonblocking;
mod onesided;
mod p2p;
mod probe;
mod ranks;

/// The tutorial's kernels, built by build.rs: PTX and SASS per SM.
pub static KERNELS: KernelImages = gpu_mpi::include_kernels!();

/// The chapters, in order: (number, name, title).
pub const CHAPTERS: [(u32, &str, &str); 9] = [
    (1, "ranks", "Ranks are threads"),
    (2, "p2p", "Point-to-point and non-overtaking"),
    (3, "probe", "Probe and ANY_SOURCE"),
    (4, "deadlock", "Deadlock and how to read the report"),
    (5, "collectives", "Collectives and the hardware hierarchy"),
    (6, "nonblocking", "Non-blocking communication"),
    (7, "datatypes", "Datatypes"),
    (8, "cost", "What a message costs on a GPU"),
    (9, "one-sided", "One-sided communication"),
];

/// Where a chapter runs and what it has written so far.
pub struct Chapter {
    backend: BackendKind,
    out: String,
}

/// Writes one line of the chapter's output.
macro_rules! say {
    ($c:expr, $($t:tt)*) => {
        $c.line(format_args!($($t)*))
    };
}
pub(crate) use say;

impl Chapter {
    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        // Writing into a String cannot fail.
        let _ = self.out.write_fmt(args);
        self.out.push('\n');
    }

    /// The device of chapters that run on any backend: the emulator on one
    /// worker (deterministic), or the backend asked for.
    fn device(&self) -> Result<Device, String> {
        if self.backend == BackendKind::Cpu {
            return Ok(emulator());
        }
        let kind = self.backend;
        let device = Device::open(kind, &KERNELS).map_err(|e| format!("cannot open backend {kind}: {e}"))?;
        // `auto` without a usable GPU: the emulator, on one worker.
        Ok(if device.backend_name() == "cpu" {
            emulator()
        } else {
            device
        })
    }

    /// The device of chapters that need the emulator (schedules, exact
    /// deadlock detection, operation counts).
    fn emulator(&mut self) -> Device {
        if self.backend != BackendKind::Cpu {
            eprintln!("note: this chapter runs on the cpu backend (the emulator) only");
        }
        emulator()
    }
}

/// The emulator with one worker thread: every run of a program takes the
/// same interleaving.
fn emulator() -> Device {
    Device::cpu_with(CpuOptions {
        workers: 1,
        ..CpuOptions::default()
    })
}

/// Arguments with `out` and an empty datatype.
fn args(mode: u32, count: u32, out: &DeviceBuffer<u32>, datatype: &DeviceBuffer<u64>) -> TutorialArgs {
    TutorialArgs {
        mode,
        count,
        words: 0,
        reserved: 0,
        out: out.slice(),
        datatype: datatype.slice(),
    }
}

/// `Err(message)` unless `ok`.
fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(message())
    }
}

/// A chapter's outcome: its output, and the failed check if one failed.
pub struct Outcome {
    /// What the chapter printed.
    pub output: String,
    /// The first check that failed (or the error that stopped it).
    pub failure: Option<String>,
}

/// Runs chapter `number` (1 to 9) on `backend`; chapters 3, 4 and 8 always
/// run on the emulator.
pub fn run(number: u32, backend: BackendKind) -> Outcome {
    let mut c = Chapter {
        backend,
        out: String::new(),
    };
    let result = match number {
        1 => ranks::run(&mut c),
        2 => p2p::run(&mut c),
        3 => probe::run(&mut c),
        4 => deadlock::run(&mut c),
        5 => collectives::run(&mut c),
        6 => nonblocking::run(&mut c),
        7 => datatypes::run(&mut c),
        8 => cost::run(&mut c),
        9 => onesided::run(&mut c),
        n => Err(format!("no chapter {n} (chapters 1 to {})", CHAPTERS.len())),
    };
    Outcome {
        output: c.out,
        failure: result.err(),
    }
}

/// The number of the chapter named `name` (its number or its name).
pub fn chapter_number(name: &str) -> Option<u32> {
    CHAPTERS
        .iter()
        .find(|(n, short, _)| name == *short || name.parse() == Ok(*n))
        .map(|(n, _, _)| *n)
}

/// A host error as the chapter's failure message.
fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}
