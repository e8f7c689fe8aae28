//! The emulator's timing mode (docs/model.md): modelled times are a
//! function of the program, the world and the profile; the ranks run in
//! the order of their virtual clocks without losing the exact deadlock
//! detection; a world timeout expires in virtual time; a block barrier
//! releases its ranks together; `clock_ns` reads the virtual clock.
//! Emulator only: a GPU measures its time.

use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::intrinsics;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{AccessLog, CpuOptions, Device, HostError, Profile, Schedule, TimeCategory, WorldSpec};
use std::time::{Duration, Instant};

gpu_mpi_device::kernel! {
    /// Rank 0 and the last rank ping-pong `out.len()` 8-byte messages; each
    /// rank writes its own clock at the end into `out[rank]` when it fits.
    pub static PING = fn ping(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let (me, last) = (world.rank(), world.size() - 1);
        let rounds = out.len().min(16);
        for i in 0..rounds as u64 {
            if me == 0 {
                world.process_at_rank(last).send_with_tag(&i, 1)?;
                let mut r = 0u64;
                world.process_at_rank(last).receive_into_with_tag(&mut r, 2)?;
                if r != i + 100 {
                    return Err(Error::OutOfBounds { index: r as u32, len: i as u32 });
                }
            } else if me == last {
                let mut r = 0u64;
                world.process_at_rank(0).receive_into_with_tag(&mut r, 1)?;
                world.process_at_rank(0).send_with_tag(&(r + 100), 2)?;
            }
        }
        if (me as usize) < out.len() {
            out.write(me as usize, intrinsics::clock_ns())?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// Rank 0 waits for a message that nobody sends.
    pub static STUCK = fn stuck(world: &World, _out: &GlobalSlice<u64>) -> Result<(), Error> {
        if world.rank() == 0 {
            let mut r = 0u64;
            world.process_at_rank(1).receive_into_with_tag(&mut r, 7)?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// Rank `r` makes `r` atomic round trips, then every rank of the block
    /// meets at the block barrier and writes its clock after it.
    pub static LATE_BARRIER = fn late_barrier(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let me = world.rank() as usize;
        for _ in 0..me {
            intrinsics::fence(intrinsics::Ordering::AcqRel);
        }
        intrinsics::block_barrier();
        out.write(me, intrinsics::clock_ns())
    }
}

fn timed() -> Device {
    Device::cpu_with(CpuOptions {
        model: Some(Profile::h100()),
        ..CpuOptions::default()
    })
}

#[test]
fn modelled_times_repeat_exactly_and_add_up() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(16).unwrap();
    let spec = WorldSpec::ranks(512).block_dim(256);
    let a = d
        .launch(&PING, &out.slice(), &spec)
        .unwrap()
        .model
        .expect("timing mode reports a model");
    let clocks_a = d.download(&out).unwrap();
    let b = d.launch(&PING, &out.slice(), &spec).unwrap().model.unwrap();
    assert_eq!(a, b, "the same program, world and profile give the same times");
    assert_eq!(clocks_a, d.download(&out).unwrap());
    assert_eq!(a.profile, Profile::h100().name);
    assert_eq!(a.ranks.len(), 512);
    for (r, t) in a.ranks.iter().enumerate() {
        assert_eq!(
            t.spent_ps.iter().sum::<u64>(),
            t.end_ps,
            "rank {r}'s categories add up"
        );
    }
    // The two ranks that talk spend their time on memory, the others next
    // to none; the kernel ends after the last of them, launch included.
    let (first, last) = (a.ranks[0], a.ranks[511]);
    assert!(first.ns(TimeCategory::Loads) > 1000.0 && last.ns(TimeCategory::Loads) > 1000.0);
    assert!(a.ranks[1].end_ps * 100 < first.end_ps);
    let latest = a.ranks.iter().map(|t| t.end_ps).max().unwrap();
    let launch = (Profile::h100().launch_ns * 1e3) as u64;
    assert_eq!(a.kernel_ps, latest + launch);
    // 16 round trips take at least 32 one-way trips of an atomic flag.
    let one_way = Profile::h100().release_ns + Profile::h100().load_ns;
    assert!(first.end_ps as f64 / 1e3 > 32.0 * one_way);
    // clock_ns is the virtual clock, in ns, read before the rank returned
    // (then only its exit: a few accesses and the reads of the world's
    // layout their addresses come from).
    let end_ns = first.end_ps / 1000;
    assert!(
        clocks_a[0] <= end_ns && end_ns - clocks_a[0] < 2000,
        "{} {end_ns}",
        clocks_a[0]
    );
    // The profile matters: the same program is modelled slower when loads are.
    let mut slow = Profile::h100().clone();
    slow.load_ns *= 2.0;
    slow.name = "slow".into();
    let c = d
        .launch(&PING, &out.slice(), &spec.model(slow.leak()))
        .unwrap()
        .model
        .unwrap();
    assert_eq!(c.profile, "slow");
    assert!(c.kernel_ps > a.kernel_ps);
}

#[test]
fn timing_mode_reports_deadlocks_exactly() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(1).unwrap();
    let start = Instant::now();
    match d.launch(&STUCK, &out.slice(), &WorldSpec::ranks(64)) {
        Err(HostError::Deadlock(r)) => {
            let text = r.to_string();
            assert!(text.contains("rank 0: receive(source 1, tag 7)"), "{text}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_world_timeout_expires_in_virtual_time() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(1).unwrap();
    let start = Instant::now();
    let spec = WorldSpec::ranks(64).timeout(Duration::from_secs(3600));
    let err = d.launch(&STUCK, &out.slice(), &spec).unwrap_err();
    // An hour of virtual time passes in far less than an hour.
    assert!(start.elapsed() < Duration::from_secs(60));
    let text = err.to_string();
    assert!(text.contains("rank 0") && text.contains("tim"), "{text}");
}

#[test]
fn a_block_barrier_releases_its_ranks_together_after_the_last_arrival() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(64).unwrap();
    let rep = d
        .launch(&LATE_BARRIER, &out.slice(), &WorldSpec::ranks(64).block_dim(32))
        .unwrap();
    let clocks = d.download(&out).unwrap();
    let m = rep.model.unwrap();
    for block in clocks.chunks(32) {
        assert!(
            block.iter().all(|&c| c == block[0]),
            "one release time per block: {block:?}"
        );
    }
    // The second block's last rank makes 63 fences, the first block's 31.
    let fence = Profile::h100().fence_ns;
    assert!(clocks[32] as f64 >= 63.0 * fence && clocks[0] as f64 >= 31.0 * fence);
    assert!(clocks[32] > clocks[0]);
    // The early ranks waited at the barrier.
    assert!(m.ranks[32].ns(TimeCategory::Barriers) > m.ranks[63].ns(TimeCategory::Barriers));
}

#[test]
fn the_model_overrides_the_schedule_and_the_device_default() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(16).unwrap();
    let spec = WorldSpec::ranks(64);
    let a = d.launch(&PING, &out.slice(), &spec).unwrap().model.unwrap();
    let b = d
        .launch(&PING, &out.slice(), &spec.schedule(Schedule::Random { seed: 3 }))
        .unwrap()
        .model
        .unwrap();
    assert_eq!(
        a, b,
        "timing mode orders the ranks by their clocks, whatever the schedule"
    );
    let plain = Device::cpu();
    assert_eq!(plain.launch(&PING, &out.slice(), &spec).unwrap().model, None);
    let h200 = plain
        .launch(&PING, &out.slice(), &spec.model(Profile::h200()))
        .unwrap()
        .model
        .unwrap();
    assert_eq!(h200.profile, Profile::h200().name);
}

#[test]
fn an_access_log_says_what_one_rank_did_when_and_where() {
    let d = timed();
    let out = d.alloc_zeroed::<u64>(16).unwrap();
    let spec = WorldSpec::ranks(512).block_dim(256);
    let plain = d.launch(&PING, &out.slice(), &spec).unwrap().model.unwrap();
    assert_eq!(plain.log, None, "no log unless asked for");
    let m = d
        .launch(&PING, &out.slice(), &spec.model_log(0))
        .unwrap()
        .model
        .unwrap();
    assert_eq!(m.ranks, plain.ranks, "logging does not change the times");
    let log = m.log.as_ref().expect("the log asked for");
    assert_eq!((log.rank, log.dropped), (0, 0));
    // In program order, none overlapping the next, all before the rank
    // returned.
    for w in log.accesses.windows(2) {
        assert!(w[0].at_ps + w[0].cost_ps <= w[1].at_ps, "{:?}", w);
    }
    let last = log.accesses.last().expect("rank 0 made accesses");
    assert!(last.at_ps + last.cost_ps <= m.ranks[0].end_ps);
    let costs: u64 = log.accesses.iter().map(|a| a.cost_ps).sum();
    assert!(costs <= m.ranks[0].end_ps && costs * 2 > m.ranks[0].end_ps);
    // Sixteen sends push onto the peer's inbox; sixteen receives take
    // rank 0's own. Each is a read-modify-write of the inbox word.
    let count = |what: &str, place: &str| {
        log.accesses
            .iter()
            .filter(|a| a.what.starts_with(what) && a.place == place)
            .count()
    };
    assert_eq!(count("rmw", "rank 511 header.inbox"), 16, "{}", log.render());
    assert!(count("rmw", "rank 0 header.inbox") >= 16, "{}", log.render());
    // The clock written to `out` (`GlobalSlice::write`, a volatile
    // store), a buffer outside the world memory.
    assert_eq!(
        count("volatile write 8 B", "outside the world"),
        1,
        "{}",
        log.render()
    );
    // The kernel's entry zeroes one of the block's words per rank (the
    // non-blocking collectives' first level): rank 0's store lands in the
    // block's shared memory, not in a buffer outside the world.
    assert_eq!(
        count("store relaxed", "the block's shared memory"),
        1,
        "{}",
        log.render()
    );
    let by_place = log.by_place();
    let inbox = by_place
        .iter()
        .find(|(p, ..)| p == "rank 511 header.inbox")
        .expect("the peer's inbox in the summary");
    assert_eq!(inbox.1, 16);
    assert!(by_place.windows(2).all(|w| w[0].2 >= w[1].2), "costliest first");
    // The same run again logs the same accesses.
    let again = d
        .launch(&PING, &out.slice(), &spec.model_log(0))
        .unwrap()
        .model
        .unwrap();
    assert_eq!(again.log, m.log);
}

gpu_mpi_device::kernel! {
    /// `out.len()` world barriers, then as many one-element reduces to
    /// rank 0 (a reduce's step is an out-of-line `World` made from parts).
    pub static BARRIERS = fn barriers(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let root = world.process_at_rank(0);
        for _ in 0..out.len() {
            world.barrier()?;
        }
        for _ in 0..out.len() {
            let x = 1u64;
            if world.rank() == 0 {
                let mut sum = 0u64;
                root.reduce_into_root(&x, &mut sum, SystemOperation::sum())?;
                if sum != world.size() as u64 {
                    return Err(Error::OutOfBounds { index: sum as u32, len: 0 });
                }
            } else {
                root.reduce_into(&x, SystemOperation::sum())?;
            }
        }
        Ok(())
    }
}

/// How many reads of the world's configuration (`world header: config`)
/// an access log holds.
fn config_reads(log: &AccessLog) -> u64 {
    log.accesses
        .iter()
        .filter(|a| a.place == "world header: config")
        .map(|a| {
            let n = a
                .what
                .strip_suffix(" descriptor reads")
                .expect("a descriptor read");
            n.parse::<u64>().expect("a count of reads")
        })
        .sum()
}

#[test]
fn a_collective_reads_no_configuration_after_attach() {
    // Attach reads the trace flag and whether the world spans processes
    // once (`RankState`: untraced, local); a barrier or a reduce's step
    // reads neither again, so the count does not grow with the calls.
    let d = timed();
    let spec = WorldSpec::ranks(512).block_dim(256);
    let reads = |calls: usize, rank: u32| {
        let out = d.alloc_zeroed::<u64>(calls).unwrap();
        let m = d
            .launch(&BARRIERS, &out.slice(), &spec.model_log(rank))
            .unwrap()
            .model
            .unwrap();
        config_reads(m.log.as_ref().expect("the log asked for"))
    };
    for rank in [0, 300] {
        let one = reads(1, rank);
        assert!(one > 0, "rank {rank}: attach's read is in the log");
        assert_eq!(
            reads(6, rank),
            one,
            "rank {rank}: five more barriers and reduces read no config"
        );
    }
}
