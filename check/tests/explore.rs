//! Schedule exploration on the emulator: seeded schedules replay exactly,
//! the explorer finds the planted order-dependent bugs
//! (`gpu_mpi_check_kernels::planted`) within a bounded number of schedules,
//! the seed it reports replays the outcome, and deadlock detection stays
//! exact under every seeded schedule.

use gpu_mpi::{CpuOptions, Device, HostError, Schedule, WorldSpec};
use gpu_mpi_check::explore::{explore, replay, run_once, ExploreError, Mode, OutcomeKind};
use gpu_mpi_check::{find_case, launch_fault};
use gpu_mpi_check_kernels::faults::*;
use gpu_mpi_check_kernels::planted::{PLANTED_ARRIVAL_ORDER, SEMANTICS_PLANTED};
use gpu_mpi_check_kernels::CaseArgs;
use serde_json::Value;
mod common;

use common::{check, text};

/// The schedules an exploration may need to find a planted bug.
const BOUND: u64 = 64;

const MODES: [Mode; 3] = [
    Mode::Random,
    Mode::Pct {
        depth: 1,
        steps: None,
    },
    Mode::Pct {
        depth: 3,
        steps: None,
    },
];

/// Explores `case` in `mode` and checks: the default schedule passes, an
/// outcome of `kind` differs from it, and its first seed replays it twice.
fn finds(case: &str, mode: Mode, kind: OutcomeKind, text: &str) {
    let case = find_case(case).unwrap();
    let e = explore(&case, mode, 0, BOUND, |_, _| {}).unwrap();
    assert_eq!(e.default.kind, OutcomeKind::Pass, "{e:#?}");
    let found = e
        .differing()
        .find(|f| f.outcome.kind == kind)
        .unwrap_or_else(|| panic!("{mode}: no {kind:?} in {BOUND} schedules: {e:#?}"));
    assert!(found.outcome.message.contains(text), "{}", found.outcome);
    // A passing schedule too: the bug is order-dependent.
    assert!(
        e.outcomes.iter().any(|f| f.outcome.kind == OutcomeKind::Pass),
        "{e:#?}"
    );
    let total: usize = e.outcomes.iter().map(|f| f.seeds.len()).sum();
    assert_eq!(total as u64, BOUND);
    for seed in found.seeds.iter().take(3) {
        for _ in 0..2 {
            assert_eq!(
                replay(&case, mode, *seed).unwrap(),
                found.outcome,
                "{mode} seed {seed}"
            );
        }
    }
}

#[test]
fn the_explorer_finds_the_planted_deadlock_and_its_seed_replays_it() {
    for mode in MODES {
        finds(
            "planted/any_source_deadlock",
            mode,
            OutcomeKind::Deadlock,
            "deadlock: rank 0: receive(source 2, tag 0); ranks 1-2: exited",
        );
    }
}

#[test]
fn the_explorer_finds_the_planted_wrong_result_and_its_seed_replays_it() {
    for mode in MODES {
        finds(
            "planted/arrival_order",
            mode,
            OutcomeKind::Fail,
            "rank 0 stored as rank 1's value: got 201, expected 101",
        );
    }
}

#[test]
fn a_correct_case_has_one_outcome_under_every_schedule() {
    for name in ["p2p/all_to_one_any_source", "p2p/non_overtaking_any_source"] {
        let case = find_case(name).unwrap();
        for mode in MODES {
            let e = explore(&case, mode, 100, 4, |_, _| {}).unwrap();
            assert!(e.deterministic(), "{e:#?}");
            assert_eq!(e.outcomes.len(), 1);
            assert_eq!(e.outcomes[0].outcome.kind, OutcomeKind::Pass);
        }
    }
}

/// Slots a receiver's requests take inside its blocking calls go back to
/// their senders while it waits (issue 27, items 1 and 2): a synchronous
/// send received that way completes, and a sender short of slots gets
/// them, under every schedule; before, some seeded schedules deadlocked.
#[test]
fn slots_taken_inside_a_wait_return_under_every_schedule() {
    for name in [
        "nonblocking/synchronous_send_received_elsewhere",
        "nonblocking/slots_return_during_waits",
    ] {
        let case = find_case(name).unwrap();
        for mode in MODES {
            let e = explore(&case, mode, 0, 12, |_, _| {}).unwrap();
            assert!(e.deterministic(), "{name}: {e:#?}");
            assert_eq!(e.outcomes[0].outcome.kind, OutcomeKind::Pass, "{name}: {e:#?}");
        }
    }
}

#[test]
fn bad_explorations_are_typed_errors() {
    let case = find_case("planted/arrival_order").unwrap();
    assert!(matches!(
        explore(&case, Mode::Random, 0, 0, |_, _| {}),
        Err(ExploreError::NoSchedules)
    ));
    assert!(matches!(
        explore(&case, Mode::Random, u64::MAX, 2, |_, _| {}),
        Err(ExploreError::SeedOverflow { .. })
    ));
    let zero = Mode::Pct {
        depth: 0,
        steps: None,
    };
    assert!(matches!(replay(&case, zero, 1), Err(ExploreError::ZeroDepth)));
    let zero = Mode::Pct {
        depth: 2,
        steps: Some(0),
    };
    assert!(matches!(replay(&case, zero, 1), Err(ExploreError::ZeroSteps)));
    assert!(find_case("planted/nothing").is_none());
}

/// The order in which rank 0 of a world of `ranks` ranks received the
/// others' messages from any source: a fingerprint of the schedule.
fn arrival_order(device: &Device, spec: &WorldSpec, ranks: u32) -> Vec<u32> {
    let out = device.alloc_zeroed::<u32>(ranks as usize).unwrap();
    let data = device.alloc_zeroed::<u8>(8).unwrap();
    let cells = device.alloc_zeroed::<u32>(1).unwrap();
    let args = CaseArgs {
        case: PLANTED_ARRIVAL_ORDER,
        param: 0,
        param2: 0,
        stride: 1,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    device.launch(&SEMANTICS_PLANTED, &args, spec).unwrap();
    device.download(&out).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_interleaving_and_other_seeds_others() {
    // Several blocks: a seeded schedule runs them on one worker whatever
    // the device's worker count.
    let device = Device::cpu_with(CpuOptions {
        workers: 4,
        ..CpuOptions::default()
    });
    let spec = WorldSpec::ranks(24).block_dim(4);
    for schedule in [
        |s| Schedule::Random { seed: s },
        |s| Schedule::pct(s, 3),
        |s| Schedule::Pct {
            seed: s,
            depth: 2,
            steps: Some(5),
        },
    ] {
        let mut orders = Vec::new();
        for seed in 0..6u64 {
            let spec = spec.schedule(schedule(seed));
            let first = arrival_order(&device, &spec, 24);
            for _ in 0..2 {
                assert_eq!(arrival_order(&device, &spec, 24), first, "{:?}", spec.schedule);
            }
            let mut sorted = first[1..].to_vec();
            sorted.sort();
            assert_eq!(sorted, (1..24).map(|r| 100 * r + 1).collect::<Vec<_>>());
            orders.push(first);
        }
        orders.sort();
        orders.dedup();
        assert!(orders.len() > 1, "6 seeds gave one interleaving: {orders:?}");
    }
}

#[test]
fn the_spec_schedule_overrides_the_device_default() {
    let device = Device::cpu_with(CpuOptions {
        schedule: Schedule::Random { seed: 5 },
        ..CpuOptions::default()
    });
    let spec = WorldSpec::ranks(16);
    let by_device = arrival_order(&device, &spec, 16);
    assert_eq!(
        by_device,
        arrival_order(&Device::cpu(), &spec.schedule(Schedule::Random { seed: 5 }), 16)
    );
    // Rank order, as the default passes resume the ranks of one block.
    let parallel = arrival_order(&device, &spec.schedule(Schedule::Parallel), 16);
    assert_eq!(
        parallel[1..],
        (1..16).map(|r| 100 * r + 1).collect::<Vec<_>>()[..]
    );
}

/// The deadlock report of fault `case` under `schedule`.
fn report(case: u32, param: u32, spec: WorldSpec, schedule: Schedule) -> String {
    match launch_fault(&Device::cpu(), case, param, &spec.schedule(schedule)) {
        Err(e @ HostError::Deadlock(_)) => e.to_string(),
        other => panic!("fault {case} under {schedule}: expected a deadlock, got {other:?}"),
    }
}

#[test]
fn deadlocks_are_detected_and_reported_alike_under_every_schedule() {
    let cases = [
        (FAULT_DEADLOCK_RECEIVE, 0, WorldSpec::ranks(4)),
        (FAULT_EXIT_BEFORE_BARRIER, 0, WorldSpec::ranks(4)),
        // Ranks parked in block barriers of a world barrier.
        (FAULT_EXIT_BEFORE_BARRIER, 0, WorldSpec::ranks(12).block_dim(3)),
        (FAULT_SEND_SEND, 1024, WorldSpec::ranks(2)),
        (FAULT_RECEIVE_ANY, 0, WorldSpec::ranks(8).block_dim(4)),
    ];
    for (case, param, spec) in cases {
        let default = report(case, param, spec, Schedule::Parallel);
        for seed in 0..4 {
            for schedule in [Schedule::Random { seed }, Schedule::pct(seed, 2)] {
                assert_eq!(report(case, param, spec, schedule), default, "{schedule}");
            }
        }
    }
}

#[test]
fn a_livelock_is_reported_under_a_seeded_schedule() {
    let text = report(FAULT_SPIN_PROBE, 0, WorldSpec::ranks(3), Schedule::pct(1, 2));
    assert!(text.starts_with("livelock: "), "{text}");
    let text = report(
        FAULT_SPIN_PROBE,
        0,
        WorldSpec::ranks(3),
        Schedule::Random { seed: 1 },
    );
    assert!(text.starts_with("livelock: "), "{text}");
}

#[test]
fn a_seeded_run_of_a_correct_case_passes() {
    let case = find_case("collective/barrier").unwrap();
    for schedule in [Schedule::Random { seed: 3 }, Schedule::pct(3, 3)] {
        assert_eq!(run_once(&case, schedule).kind, OutcomeKind::Pass, "{schedule}");
    }
}

// ---------------------------------------------------------------------------
// The command line

#[test]
fn explore_reports_the_differing_outcome_with_a_replay_command_and_json() {
    let dir = std::env::temp_dir().join(format!("gpu-mpi-check-explore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("explore.json");
    let out = check(&[
        "explore",
        "planted/any_source_deadlock",
        "--schedules",
        "32",
        "--mode",
        "pct",
        "--depth",
        "2",
        "--json",
        file.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(
            "gpu-mpi-check explore: planted/any_source_deadlock, 32 pct (depth 2) schedules (seeds 0-31) on the cpu backend\ndefault schedule: pass\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 distinct outcomes in 32 schedules; 1 differs"),
        "{stdout}"
    );

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["case"], "planted/any_source_deadlock");
    assert_eq!((&json["mode"], &json["depth"]), (&"pct".into(), &2.into()));
    assert_eq!(json["default_schedule"]["kind"], "pass");
    assert!(json["provenance"].is_object());
    let outcomes = json["outcomes"].as_array().unwrap();
    let dead = outcomes
        .iter()
        .find(|o| o["kind"] == "deadlock")
        .expect("a deadlock");
    assert_eq!(dead["differs_from_default"], true);
    let seeds = dead["seeds"].as_array().unwrap();
    assert_eq!(dead["count"].as_u64(), Some(seeds.len() as u64));
    let counts: u64 = outcomes.iter().map(|o| o["count"].as_u64().unwrap()).sum();
    assert_eq!(counts, 32);
    let replay = dead["replay"].as_str().unwrap();
    let seed = seeds[0].as_u64().unwrap();
    assert_eq!(
        replay,
        format!("gpu-mpi-check explore planted/any_source_deadlock --mode pct --depth 2 --replay {seed}")
    );
    assert!(stdout.contains(&format!("replay: {replay}")), "{stdout}");

    // The replay command, twice: the same deadlock report.
    let args: Vec<&str> = replay.split(' ').skip(1).collect();
    let first = check(&args);
    assert_eq!(first.status.code(), Some(1));
    let shown = text(&first.stdout);
    assert!(
        shown.starts_with(&format!(
            "planted/any_source_deadlock under pct (seed {seed}, depth 2): deadlock\n"
        )),
        "{shown}"
    );
    let message = dead["message"].as_str().unwrap();
    for line in message.lines() {
        assert!(shown.contains(line), "{shown}");
    }
    assert_eq!(text(&check(&args).stdout), shown);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn explore_usage_errors_exit_2() {
    let out = check(&["explore", "planted/nothing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no case is named \"planted/nothing\""),
        "{}",
        text(&out.stderr)
    );
    let out = check(&[
        "explore",
        "planted/arrival_order",
        "--mode",
        "pct",
        "--depth",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--depth must be at least 1"));
    let out = check(&["explore", "planted/arrival_order", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn explore_of_a_correct_case_exits_0() {
    let out = check(&["explore", "p2p/pairs", "--schedules", "3", "--seed", "7"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("outcome 1: pass in 3 of 3 schedules (as the default schedule); seeds 7, 8, 9"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("1 distinct outcomes in 3 schedules; 0 differ from the default schedule\n"),
        "{stdout}"
    );
}
