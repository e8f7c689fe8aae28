//! The schedule explorer as a library (`gpu_mpi_host::explore`,
//! `Device::explore`) on a kernel defined here, as a user's would be: a
//! planted `ANY_SOURCE` race that the default schedule does not expose and
//! some seeded schedules do, found with the seeds that replay it. Emulator
//! only: schedules are the emulator's.

use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::explore::{explore, replay, ExploreError, ExploreOptions, Mode, Outcome, OutcomeKind};
use gpu_mpi_host::{Device, WorldSpec};

gpu_mpi_device::kernel! {
    /// Ranks 1 and 2 send rank 0 their rank; rank 0 receives the first
    /// from any source, assuming it is rank 1's, then one from rank 2 (a
    /// deadlock when rank 2's came first), and records what it got.
    pub static ASSUMES_ORDER = fn assumes_order(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        if world.rank() == 0 {
            let (first, _) = world.any_process().receive::<u32>()?;
            let (second, _) = world.process_at_rank(2).receive::<u32>()?;
            out.write(0, first)?;
            out.write(1, second)
        } else {
            world.process_at_rank(0).send(&(world.rank() as u32))
        }
    }
}

#[test]
fn the_explorer_finds_a_users_planted_race_and_its_seed_replays_it() {
    let device = Device::cpu();
    let out = device.alloc_zeroed::<u32>(2).unwrap();
    let spec = WorldSpec::ranks(3);
    for mode in [
        Mode::Random,
        Mode::Pct {
            depth: 2,
            steps: None,
        },
    ] {
        let options = ExploreOptions {
            mode,
            schedules: 64,
            first_seed: 0,
        };
        let e = device
            .explore(&ASSUMES_ORDER, &out.slice(), &spec, &options)
            .unwrap();
        assert_eq!(e.default, Outcome::pass(), "{mode}: {e:#?}");
        let deadlock = e
            .differing()
            .find(|f| f.outcome.kind == OutcomeKind::Deadlock)
            .unwrap_or_else(|| panic!("{mode}: no deadlock in 64 schedules: {e:#?}"));
        assert!(
            deadlock
                .outcome
                .message
                .starts_with("deadlock: rank 0: receive(source 2, tag any)"),
            "{}",
            deadlock.outcome
        );
        assert!(e.outcomes.iter().any(|f| f.outcome.kind == OutcomeKind::Pass));
        assert_eq!(e.outcomes.iter().map(|f| f.seeds.len() as u64).sum::<u64>(), 64);
        for &seed in deadlock.seeds.iter().take(3) {
            let again = device
                .replay(&ASSUMES_ORDER, &out.slice(), &spec, mode, seed)
                .unwrap();
            assert_eq!(again, deadlock.outcome, "{mode} seed {seed}");
        }
    }
}

#[test]
fn a_closure_checks_results_and_its_failures_are_outcomes() {
    let device = Device::cpu();
    // The same kernel, judged by what rank 0 recorded: a pass only when
    // the first message was rank 1's.
    let run = |schedule| {
        let out = device.alloc_zeroed::<u32>(2)?;
        device.launch(
            &ASSUMES_ORDER,
            &out.slice(),
            &WorldSpec::ranks(3).schedule(schedule),
        )?;
        Ok(match device.download(&out)?[..] {
            [1, 2] => Outcome::pass(),
            ref got => Outcome::fail(format!("rank 0 got {got:?}")),
        })
    };
    let e = explore(&ExploreOptions::random(64).first_seed(1000), run).unwrap();
    assert_eq!(e.first_seed, 1000);
    let kinds: Vec<OutcomeKind> = e.outcomes.iter().map(|f| f.outcome.kind).collect();
    assert!(
        kinds.contains(&OutcomeKind::Pass) && kinds.contains(&OutcomeKind::Deadlock),
        "{e:#?}"
    );
    let f = e.differing().next().unwrap();
    assert_eq!(replay(Mode::Random, f.seeds[0], run).unwrap(), f.outcome);
    // A panic in the closure is an outcome too.
    let o = replay(Mode::Random, 0, |_| -> Result<Outcome, _> {
        panic!("the check broke")
    })
    .unwrap();
    assert_eq!(
        (o.kind, o.message.as_str()),
        (OutcomeKind::Panic, "the check broke")
    );
}

#[test]
fn bad_explorations_are_typed_errors() {
    let run = |_| Ok(Outcome::pass());
    assert!(matches!(
        explore(&ExploreOptions::random(0), run),
        Err(ExploreError::NoSchedules)
    ));
    assert!(matches!(
        explore(&ExploreOptions::random(2).first_seed(u64::MAX), run),
        Err(ExploreError::SeedOverflow { .. })
    ));
    assert!(matches!(
        explore(&ExploreOptions::pct(0, 4), run),
        Err(ExploreError::ZeroDepth)
    ));
    assert!(matches!(
        replay(
            Mode::Pct {
                depth: 2,
                steps: Some(0)
            },
            1,
            run
        ),
        Err(ExploreError::ZeroSteps)
    ));
}
