//! Chapter 6: non-blocking communication (MPI 4.1 section 3.7).

use crate::{args, check, say, text, Chapter};
use gpu_mpi::{Device, Schedule, WorldSpec};
use gpu_mpi_example_tutorial_kernels::NONBLOCKING;

const RANKS: u32 = 8;

/// Runs the kernel, checks it, and returns the sources in the order
/// `wait_any` completed their receives.
fn completion_order(device: &Device, schedule: Option<Schedule>) -> Result<Vec<u32>, String> {
    let out = device.alloc_zeroed::<u32>(3 * RANKS as usize).map_err(text)?;
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    // 64-byte slots: the ring's 128-byte messages go by rendezvous, as in
    // chapter 4's deadlock.
    let mut spec = WorldSpec::ranks(RANKS).slot_bytes(64);
    if let Some(s) = schedule {
        spec = spec.schedule(s);
    }
    device
        .launch(&NONBLOCKING, &args(0, 0, &out, &none), &spec)
        .map_err(text)?;
    let words = device.download(&out).map_err(text)?;
    for r in 0..RANKS {
        let left = (r + RANKS - 1) % RANKS;
        let got = [words[2 * r as usize], words[2 * r as usize + 1]];
        check(got == [left, left], || {
            format!("rank {r} received {got:?} from rank {left}")
        })?;
    }
    let base = 2 * RANKS as usize;
    let order = &words[base..base + RANKS as usize - 1];
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    check(sorted == (1..RANKS).collect::<Vec<_>>(), || {
        format!("wait_any order {order:?}")
    })?;
    let sum = words[base + RANKS as usize - 1];
    let expected: u32 = (1..RANKS).map(|r| 10 * r).sum();
    check(sum == expected, || format!("sum {sum}, expected {expected}"))?;
    Ok(order.to_vec())
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let order = completion_order(&device, None)?;
    say!(
        c,
        "ring of {RANKS} ranks, 128-byte messages (rendezvous): every rank received its left neighbour's"
    );
    say!(
        c,
        "rank 0, wait_any over {} receives: completed from ranks {}",
        RANKS - 1,
        list(&order)
    );
    say!(
        c,
        "sum of the 7 values: {} (checked)",
        (1..RANKS).map(|r| 10 * r).sum::<u32>()
    );
    if device.backend_name() != "cpu" {
        return Ok(());
    }
    for seed in [1, 2] {
        let order = completion_order(&device, Some(Schedule::Random { seed }))?;
        say!(
            c,
            "random schedule, seed {seed}: completed from ranks {}",
            list(&order)
        );
    }
    Ok(())
}
