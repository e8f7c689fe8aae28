//! Checks of one world across processes (docs/distributed.md), run under
//! `mpiexec`:
//!
//! `mpiexec -n 4 target/release/distributed [--ranks N]`
//!
//! Every process runs `N` ranks (default 8, in blocks of 4) of each check's
//! world and checks what its own ranks recorded; process 0 prints one line
//! per check. Exits non-zero when a check fails on any process.

use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::Error as DeviceError;
use gpu_mpi::device::ErrorClass;
use gpu_mpi::{BlockedState, Device, DeviceBuffer, Hint, HostError, LaunchReport, WorldSpec};
use gpu_mpi_example_distributed_kernels::{
    CheckArgs, ABORT, BARRIERS, COLLECTIVES, CONTEXTS, DEADLOCK, EXCHANGE, IMMEDIATE, IMMEDIATE_CHECKS,
    IMMEDIATE_CHECKS_ROOTED, IMMEDIATE_GROUPS, IMMEDIATE_GROUP_CHECKS, IMMEDIATE_GROUP_CHECKS_ROOTED,
    IMMEDIATE_USER_OP, LARGE, LARGE_ELEMENTS, MAX_WORLD, MISMATCHED_COUNTS, MISMATCHED_ROOTS,
    MOVEMENT_CHECKS, MOVEMENT_ROUNDS, ORDER, PANIC, POSTED, RANK_ERROR, REQUESTS, ROOTED_CHECKS,
    ROUND_CHECKS, SKIPPED_ALL_REDUCE, SKIPPED_BARRIER, SKIPPED_GROUP_IMMEDIATE, SKIPPED_IMMEDIATE, SPLIT,
    SPLIT_CHECKS, UNROOTED_CHECKS, USER_OP_CHECKS, WINDOW, WORLD_ROUNDS,
};
use gpu_mpi_example_pi_kernels::{PiArgs, PI_P2P, PI_REDUCE};
use gpu_mpi_example_ring_kernels::{RingArgs, RING};
use std::process::ExitCode;

struct Checks {
    device: Device,
    /// Ranks per process.
    n: u32,
    process: u32,
    processes: u32,
    failed: Vec<String>,
}

impl Checks {
    fn spec(&self) -> WorldSpec {
        WorldSpec::ranks(self.n).block_dim(4)
    }

    fn ranks(&self) -> std::ops::Range<u32> {
        self.process * self.n..(self.process + 1) * self.n
    }

    fn say(&self, line: &str) {
        if self.process == 0 {
            println!("{line}");
        }
    }

    fn check(&mut self, name: &str, ok: Result<(), String>) {
        match ok {
            Ok(()) => self.say(&format!("ok   {name}")),
            Err(why) => {
                eprintln!("FAIL {name} (process {}): {why}", self.process);
                self.failed.push(name.to_string());
            }
        }
    }

    /// Runs `kernel` with `rounds` and checks that every local rank wrote
    /// `expected`.
    fn per_rank(
        &mut self,
        name: &str,
        kernel: &gpu_mpi::device::Kernel<CheckArgs>,
        spec: WorldSpec,
        rounds: u32,
        expected: u64,
    ) {
        let total = self.n * self.processes;
        let r = (|| -> Result<(), String> {
            let (out, report) = launch(self, kernel, &spec, rounds)?;
            let report = report.map_err(|e| e.to_string())?;
            if report.ranks != total {
                return Err(format!("a world of {} ranks, not {total}", report.ranks));
            }
            let got = self.device.download(&out).map_err(|e| e.to_string())?;
            for r in self.ranks() {
                if got[r as usize] != expected {
                    return Err(format!(
                        "rank {r} recorded {}, expected {expected}",
                        got[r as usize]
                    ));
                }
            }
            Ok(())
        })();
        self.check(name, r);
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut n = 8u32;
    while let Some(a) = args.next() {
        match (a.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--ranks", Some(v)) if v % 4 == 0 && v > 0 => n = v,
            _ => {
                eprintln!("usage: distributed [--ranks N (a multiple of 4)]");
                return ExitCode::FAILURE;
            }
        }
    }
    let device = match Device::cpu_from_env() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("distributed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let place = device.process();
    let (process, processes) = (place.index, place.count);
    let mut c = Checks {
        device,
        n,
        process,
        processes,
        failed: Vec::new(),
    };
    let total = n * processes;
    c.say(&format!("{processes} processes x {n} ranks: a world of {total}"));
    c.per_rank(
        "exchange: every pair, any source",
        &EXCHANGE,
        c.spec(),
        0,
        u64::from(total - 1),
    );
    c.per_rank(
        "order: non-overtaking, synchronous sends",
        &ORDER,
        c.spec(),
        24,
        24,
    );
    c.per_rank(
        "large: direct rendezvous",
        &LARGE,
        c.spec(),
        0,
        LARGE_ELEMENTS as u64,
    );
    c.per_rank(
        "large: streamed rendezvous",
        &LARGE,
        c.spec().force_streaming(true),
        0,
        LARGE_ELEMENTS as u64,
    );
    c.per_rank(
        "order: one slot per rank",
        &ORDER,
        c.spec().slots_per_rank(1),
        24,
        24,
    );
    c.per_rank(
        "requests and a matched probe",
        &REQUESTS,
        c.spec(),
        0,
        POSTED as u64 + 1,
    );
    let ring = ring(&c, 3);
    c.check("ring example, 3 laps", ring);
    let pi_p2p = pi(&c, &PI_P2P);
    c.check("pi example, point-to-point", pi_p2p);
    let pi_reduce = pi(&c, &PI_REDUCE);
    c.check("pi example, reduce", pi_reduce);
    let deadlock = deadlock(&c);
    c.check("a deadlock across processes, reported", deadlock);
    c.per_rank("world barriers between messages", &BARRIERS, c.spec(), 6, 6);
    if total as usize <= MAX_WORLD {
        c.per_rank(
            "every collective, every root",
            &COLLECTIVES,
            c.spec(),
            0,
            ROOTED_CHECKS * u64::from(total) + UNROOTED_CHECKS,
        );
        c.per_rank(
            "communicators split across processes",
            &SPLIT,
            c.spec().communicators(6),
            0,
            SPLIT_CHECKS,
        );
        c.per_rank(
            "each process draws the spec's communicators",
            &CONTEXTS,
            c.spec().communicators(3),
            0,
            3,
        );
    } else {
        c.say(&format!("--   collectives and splits: at most {MAX_WORLD} ranks"));
    }
    c.per_rank(
        "the world's broadcast and reductions over several staging rounds",
        &WORLD_ROUNDS,
        c.spec().collective_bytes(64),
        0,
        ROUND_CHECKS,
    );
    if total as usize <= MAX_WORLD {
        c.per_rank(
            "the world's gathers, scatters, all-to-all, scan and reduce-scatter over several staging rounds",
            &MOVEMENT_ROUNDS,
            c.spec().collective_bytes(64),
            0,
            MOVEMENT_CHECKS,
        );
    }
    let counts = every_rank_fails(&c, &MISMATCHED_COUNTS, c.spec(), |e| {
        matches!(e, DeviceError::CountMismatch { expected: 2, .. })
    });
    c.check("a reduce with mismatched counts fails on every rank", counts);
    let mismatched = every_rank_fails(&c, &MISMATCHED_ROOTS, c.spec(), |e| e.class() == ErrorClass::Root);
    c.check(
        "a broadcast with mismatched roots fails on every rank",
        mismatched,
    );
    let across = |call: Call| {
        move |e: &DeviceError| {
            matches!(e, DeviceError::AcrossProcesses { operation } if *operation == call as u32)
                && e.class() == ErrorClass::Other
        }
    };
    c.per_rank(
        "non-blocking collectives, every root",
        &IMMEDIATE,
        c.spec(),
        0,
        IMMEDIATE_CHECKS_ROOTED * u64::from(total) + IMMEDIATE_CHECKS,
    );
    // Two creations per kernel: a split, and `split_shared` or nothing.
    let group_spec = c.spec().communicators(4).immediate_on_communicators(true);
    c.per_rank(
        "non-blocking collectives of communicators, every root",
        &IMMEDIATE_GROUPS,
        group_spec,
        0,
        IMMEDIATE_GROUP_CHECKS_ROOTED * u64::from(total / 2) + IMMEDIATE_GROUP_CHECKS,
    );
    let skipped = ended(&c, &SKIPPED_IMMEDIATE, |e| {
        let HostError::Deadlock(report) = e else {
            return false;
        };
        let last = c.n * c.processes - 1;
        report.ranks.iter().all(|b| {
            b.process == b.rank / c.n
                && if b.rank == last {
                    b.state == BlockedState::Exited
                } else {
                    matches!(b.state, BlockedState::Waiting { .. })
                }
        }) || {
            eprintln!("{report}");
            false
        }
    });
    c.check("a non-blocking barrier the last rank skipped, reported", skipped);
    let skipped = ended_on(&c, &SKIPPED_GROUP_IMMEDIATE, &group_spec, |e| {
        let HostError::Deadlock(report) = e else {
            return false;
        };
        let last = c.n * c.processes - 1;
        let waits = |r: u32| r % 2 == last % 2 && r != last;
        report.ranks.iter().any(|b| waits(b.rank))
            && report.ranks.iter().all(|b| {
                b.process == b.rank / c.n && matches!(b.state, BlockedState::Waiting { .. }) == waits(b.rank)
            })
            || {
                eprintln!("{report}");
                false
            }
    });
    c.check(
        "a communicator's non-blocking barrier the last rank skipped, reported",
        skipped,
    );
    c.per_rank(
        "non-blocking reductions with the program's own operation, in rank order",
        &IMMEDIATE_USER_OP,
        c.spec(),
        u32::from(processes > 1),
        USER_OP_CHECKS,
    );
    let window = every_rank_fails(&c, &WINDOW, c.spec().windows(1), across(Call::WinCreate));
    c.check("a window's creation fails on every rank", window);
    let skipped = skipped_barrier(&c);
    c.check("a barrier the last rank skipped, reported", skipped);
    let skipped = ended(&c, &SKIPPED_ALL_REDUCE, |e| {
        let HostError::Deadlock(report) = e else {
            return false;
        };
        let last = c.n * c.processes - 1;
        // The world's own all-reduce, in one process or across several
        // (its barrier crosses with the relays): a world collective, not
        // a communicator's messages.
        let hint = Hint::ExitedBeforeCollective {
            operation: Call::AllReduce as u32,
            waiting: (0..last).collect(),
            exited: vec![last],
        };
        report.hints == vec![hint]
    });
    c.check("an all-reduce the last rank skipped, reported", skipped);
    let abort = ended(
        &c,
        &ABORT,
        |e| matches!(e, HostError::WorldAborted { by_rank, timed_out: false } if *by_rank == c.n * c.processes - 1),
    );
    c.check("an abort on the last process reaches every rank", abort);
    let error = ended(&c, &RANK_ERROR, |e| {
        let HostError::Deadlock(report) = e else {
            return false;
        };
        let last = c.n * c.processes - 1;
        report.ranks.len() == (last + 1) as usize
            && report.ranks.iter().all(|b| {
                b.process == b.rank / c.n
                    && if b.rank == last {
                        b.state.returned() == Some(DeviceError::application(5))
                    } else {
                        b.state.receive() == Some((last as i32, 5))
                    }
            })
    });
    c.check(
        "a rank's error on the last process ends every process's launch",
        error,
    );
    let panic = ended(
        &c,
        &PANIC,
        |e| matches!(e, HostError::RankPanicked { rank, message } if *rank == c.n * c.processes - 1 && message.contains("stops here")),
    );
    c.check("a panic on the last process ends every process's launch", panic);
    if c.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn ring(c: &Checks, laps: u32) -> Result<(), String> {
    let result = c.device.alloc_zeroed::<u64>(1).map_err(|e| e.to_string())?;
    let args = RingArgs {
        laps,
        reserved: 0,
        result: result.slice(),
    };
    let report = c
        .device
        .launch(&RING, &args, &c.spec())
        .map_err(|e| e.to_string())?;
    let n = u64::from(report.ranks);
    let token = c.device.download(&result).map_err(|e| e.to_string())?[0];
    // Rank 0, on process 0, writes the token.
    if c.process == 0 && token != u64::from(laps) * n * (n - 1) / 2 {
        return Err(format!("token {token} after {laps} laps of {n} ranks"));
    }
    Ok(())
}

fn pi(c: &Checks, kernel: &gpu_mpi::device::Kernel<PiArgs>) -> Result<(), String> {
    let result = c.device.alloc_zeroed::<f64>(1).map_err(|e| e.to_string())?;
    let args = PiArgs {
        intervals_per_rank: 1000,
        reserved: 0,
        result: result.slice(),
    };
    c.device
        .launch(kernel, &args, &c.spec())
        .map_err(|e| e.to_string())?;
    let pi = c.device.download(&result).map_err(|e| e.to_string())?[0];
    if c.process == 0 && (pi - std::f64::consts::PI).abs() > 1e-6 {
        return Err(format!("pi = {pi}"));
    }
    Ok(())
}

/// Launches `kernel` with `rounds` on `spec`'s world and an output word
/// per rank; `Err` only when the output buffer cannot be had.
fn launch(
    c: &Checks,
    kernel: &gpu_mpi::device::Kernel<CheckArgs>,
    spec: &WorldSpec,
    rounds: u32,
) -> Result<(DeviceBuffer<u64>, Result<LaunchReport, HostError>), String> {
    let out = c
        .device
        .alloc_zeroed::<u64>((c.n * c.processes) as usize)
        .map_err(|e| e.to_string())?;
    let args = CheckArgs {
        rounds,
        reserved: 0,
        out: out.slice(),
    };
    let report = c.device.launch(kernel, &args, spec);
    Ok((out, report))
}

/// [`launch`] of a check that must fail, on the checks' world.
fn launch_failing(
    c: &Checks,
    kernel: &gpu_mpi::device::Kernel<CheckArgs>,
) -> Result<Result<LaunchReport, HostError>, String> {
    Ok(launch(c, kernel, &c.spec(), 0)?.1)
}

fn skipped_barrier(c: &Checks) -> Result<(), String> {
    let size = c.n * c.processes;
    match launch_failing(c, &SKIPPED_BARRIER)? {
        Err(HostError::Deadlock(report)) => {
            for b in &report.ranks {
                let ok = if b.rank == size - 1 {
                    b.state == BlockedState::Exited
                } else {
                    matches!(b.state, BlockedState::Waiting { operation, .. } if operation == Call::Barrier as u32)
                };
                if !ok || b.process != b.rank / c.n {
                    return Err(format!(
                        "rank {} is {:?} on process {}\n{report}",
                        b.rank, b.state, b.process
                    ));
                }
            }
            Ok(())
        }
        Err(e) => Err(format!("not a deadlock: {e}")),
        Ok(_) => Err("the world finished".into()),
    }
}

fn deadlock(c: &Checks) -> Result<(), String> {
    match launch_failing(c, &DEADLOCK)? {
        Err(HostError::Deadlock(report)) => {
            let size = c.n * c.processes;
            if report.ranks.len() != size as usize {
                return Err(format!("{} ranks in the report", report.ranks.len()));
            }
            for b in &report.ranks {
                let expected = BlockedState::Waiting {
                    operation: Call::Receive as u32,
                    peer: ((b.rank + 1) % size) as i32,
                    tag: 9,
                };
                if b.state != expected || b.process != b.rank / c.n {
                    return Err(format!(
                        "rank {} is {:?} on process {}, expected {expected:?}",
                        b.rank, b.state, b.process
                    ));
                }
            }
            c.say(&format!("     {}", report.to_string().replace('\n', "\n     ")));
            Ok(())
        }
        Err(e) => Err(format!("not a deadlock: {e}")),
        Ok(_) => Err("the world finished".into()),
    }
}

/// Runs `kernel`, which must fail as `expected` says.
fn ended(
    c: &Checks,
    kernel: &gpu_mpi::device::Kernel<CheckArgs>,
    expected: impl Fn(&HostError) -> bool,
) -> Result<(), String> {
    ended_on(c, kernel, &c.spec(), expected)
}

/// [`ended`] on `spec`'s world.
fn ended_on(
    c: &Checks,
    kernel: &gpu_mpi::device::Kernel<CheckArgs>,
    spec: &WorldSpec,
    expected: impl Fn(&HostError) -> bool,
) -> Result<(), String> {
    match launch(c, kernel, spec, 0)?.1 {
        Err(e) if expected(&e) => Ok(()),
        Err(e) => Err(format!("not the expected error: {e}")),
        Ok(_) => Err("the world finished".into()),
    }
}

/// Launches `kernel` on `spec`'s world, which must fail on every rank with
/// an error that `expected` accepts (in a world of one process, the kernels
/// that only fail across processes complete: `WINDOW`).
fn every_rank_fails(
    c: &Checks,
    kernel: &gpu_mpi::device::Kernel<CheckArgs>,
    spec: WorldSpec,
    expected: impl Fn(&DeviceError) -> bool,
) -> Result<(), String> {
    match launch(c, kernel, &spec, 0)?.1 {
        Err(HostError::RankFailed { errors, ranks }) => {
            if errors.len() != ranks as usize {
                return Err(format!("{} of {ranks} ranks failed", errors.len()));
            }
            match errors.iter().find(|(_, e)| !expected(e)) {
                Some((rank, e)) => Err(format!("rank {rank}: {e}")),
                None => Ok(()),
            }
        }
        Err(e) => Err(format!("not the ranks' errors: {e}")),
        Ok(_)
            if c.processes == 1
                && (std::ptr::eq(kernel, &IMMEDIATE_USER_OP) || std::ptr::eq(kernel, &WINDOW)) =>
        {
            Ok(())
        }
        Ok(_) => Err("the launch completed".into()),
    }
}
