//! Chapter 3: probe and `ANY_SOURCE` (MPI 4.1 sections 3.5 and 3.8), and
//! the schedule explorer showing different arrival orders.

use crate::{args, check, say, text, Chapter};
use gpu_mpi::{Device, DeviceBuffer, Schedule, WorldSpec};
use gpu_mpi_example_tutorial_kernels::PROBE_ANY;
use std::collections::BTreeMap;

const RANKS: u32 = 4;
const SCHEDULES: u64 = 16;

/// Runs the kernel once under `schedule` and checks every message; returns
/// the sources in the order rank 0 received them.
fn arrival_order(
    device: &Device,
    out: &DeviceBuffer<u32>,
    schedule: Option<Schedule>,
) -> Result<Vec<u32>, String> {
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    let mut spec = WorldSpec::ranks(RANKS);
    if let Some(s) = schedule {
        spec = spec.schedule(s);
    }
    device
        .launch(&PROBE_ANY, &args(0, 0, out, &none), &spec)
        .map_err(text)?;
    let words = device.download(out).map_err(text)?;
    let mut order = Vec::new();
    for k in 0..(RANKS - 1) as usize {
        let [source, count, right] = [words[3 * k], words[3 * k + 1], words[3 * k + 2]];
        check(count == source && right == 1, || {
            format!("message {k}: source {source}, {count} words, intact: {right} under {schedule:?}")
        })?;
        order.push(source);
    }
    let mut sorted = order.clone();
    sorted.sort_unstable();
    check(sorted == (1..RANKS).collect::<Vec<_>>(), || {
        format!("rank 0 received from {order:?} under {schedule:?}")
    })?;
    Ok(order)
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.emulator();
    let out = device.alloc_zeroed::<u32>(3 * RANKS as usize).map_err(text)?;
    let default = arrival_order(&device, &out, None)?;
    say!(
        c,
        "default schedule: rank 0 received from ranks {}",
        list(&default)
    );
    let mut outcomes: BTreeMap<Vec<u32>, Vec<u64>> = BTreeMap::new();
    for seed in 0..SCHEDULES {
        let order = arrival_order(&device, &out, Some(Schedule::Random { seed }))?;
        outcomes.entry(order).or_default().push(seed);
    }
    say!(c, "{SCHEDULES} random schedules (seeds 0-{}):", SCHEDULES - 1);
    for (order, seeds) in &outcomes {
        let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
        say!(c, "  from ranks {}: seeds {}", list(order), seeds.join(", "));
    }
    say!(
        c,
        "{} different arrival orders; every message matched its probe (source, tag, count)",
        outcomes.len()
    );
    check(outcomes.len() >= 2, || {
        "every schedule gave the same order".into()
    })?;
    let (order, seeds) = outcomes
        .iter()
        .find(|(o, _)| **o != default)
        .ok_or("no schedule differs from the default")?;
    let again = arrival_order(&device, &out, Some(Schedule::Random { seed: seeds[0] }))?;
    check(again == *order, || {
        format!("seed {} replayed {again:?}, not {order:?}", seeds[0])
    })?;
    say!(
        c,
        "replay of seed {}: from ranks {} again",
        seeds[0],
        list(&again)
    );
    Ok(())
}
