//! The cpu backend: ranks, blocks, capacity, errors, deadlocks, stacks.
//!
//! Kernels here use only the shim (atomics, block barrier, backoff) and
//! `GlobalSlice`s, not the MPI calls (mpi.rs tests those). Emulator only:
//! these test the emulator itself (its workers, virtual device, scheduler,
//! deadlock detection and rank stacks).

mod common;
use bytemuck::{Pod, Zeroable};
use common::cell;
use gpu_mpi_device::abi::layout::ConfigError;
use gpu_mpi_device::abi::shim::{self, Backoff, Ordering};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{BlockedState, CpuOptions, Device, HostError, RankCount, Resource, WorldSpec};
use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};

fn cpu(workers: usize) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        ..CpuOptions::default()
    })
}

gpu_mpi_device::kernel! {
    /// Every rank writes its rank, block, thread and the world size into its element.
    pub static WHO = fn who(world: &World, args: &GlobalSlice<[u32; 4]>) -> Result<(), Error> {
        let c = shim::coordinates();
        let r = world.rank() as usize;
        args.write(r, [world.rank() as u32, c.block, c.thread, world.size() as u32])
    }
}

#[test]
fn every_rank_runs_once_with_its_coordinates() {
    for workers in [1, 2, 3] {
        let d = cpu(workers);
        let out = d.alloc_zeroed::<[u32; 4]>(4096).unwrap();
        let rep = d.launch(&WHO, &out.slice(), &WorldSpec::ranks(4096)).unwrap();
        assert_eq!(
            (rep.ranks, rep.block_dim, rep.blocks, rep.backend),
            (4096, 256, 16, "cpu")
        );
        let v = d.download(&out).unwrap();
        for (r, e) in v.iter().enumerate() {
            let r = r as u32;
            assert_eq!(*e, [r, r / 256, r % 256, 4096]);
        }
    }
}

#[test]
fn a_world_of_65536_ranks_runs() {
    let d = Device::cpu();
    let out = d.alloc_zeroed::<[u32; 4]>(65536).unwrap();
    let rep = d.launch(&WHO, &out.slice(), &WorldSpec::ranks(65536)).unwrap();
    assert_eq!((rep.ranks, rep.blocks), (65536, 256));
    let v = d.download(&out).unwrap();
    assert!(v
        .iter()
        .enumerate()
        .all(|(r, e)| e[0] == r as u32 && e[3] == 65536));
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct BarrierArgs {
    cells: GlobalSlice<u32>,
    verdict: GlobalSlice<u32>,
    rounds: u32,
    reserved: u32,
}

gpu_mpi_device::kernel! {
    /// Each round every rank writes a value, meets its block at the barrier,
    /// checks that it sees every value of its block, and meets it again.
    pub static BLOCK_SUMS = fn block_sums(world: &World, a: &BarrierArgs) -> Result<(), Error> {
        let r = world.rank() as usize;
        let bd = world.block_size() as usize;
        let first = r / bd * bd;
        let mut wrong = 0;
        for round in 1..=a.rounds {
            a.cells.write(r, r as u32 * round + 1)?;
            shim::block_barrier();
            for j in first..first + bd {
                if a.cells.read(j)? != j as u32 * round + 1 {
                    wrong += 1;
                }
            }
            shim::block_barrier();
        }
        a.verdict.write(r, 1 + wrong)
    }
}

#[test]
fn the_block_barrier_publishes_every_write_of_the_block() {
    for (ranks, block) in [(1024, 256), (96, 32), (7, 7), (1, 1)] {
        let d = cpu(2);
        let cells = d.alloc_zeroed::<u32>(ranks).unwrap();
        let verdict = d.alloc_zeroed::<u32>(ranks).unwrap();
        let args = BarrierArgs {
            cells: cells.slice(),
            verdict: verdict.slice(),
            rounds: 5,
            reserved: 0,
        };
        d.launch(
            &BLOCK_SUMS,
            &args,
            &WorldSpec::ranks(ranks as u32).block_dim(block),
        )
        .unwrap();
        assert_eq!(d.download(&verdict).unwrap(), vec![1; ranks], "{ranks} ranks");
    }
}

gpu_mpi_device::kernel! {
    /// Rank 1 returns (with `flags[0]` = 0) or waits forever for `flags[1]`,
    /// which nobody sets; the other ranks meet at a counting block barrier
    /// (their rank's parity as the predicate) and store what it counted.
    pub static LEAVE_EARLY = fn leave_early(world: &World, flags: &GlobalSlice<u32>) -> Result<(), Error> {
        let r = world.rank() as usize;
        if r == 1 {
            if cell(flags, 0).load(Ordering::Relaxed) == 1 {
                let mut b = Backoff::new();
                while cell(flags, 1).load(Ordering::Acquire) == 0 {
                    b.snooze();
                }
            }
            return Ok(());
        }
        let n = shim::block_barrier_count(r.is_multiple_of(2));
        cell(flags, 2 + r).store(1 + n, Ordering::Relaxed);
        Ok(())
    }
}

#[test]
fn a_rank_that_returned_does_not_hold_its_block_barrier() {
    // As PTX `exit` releases a barrier that only exited threads hold up:
    // the block barrier completes without rank 1 and counts the ranks that
    // came with a true predicate (ranks 0 and 2 of the first block; 4 and
    // 6 of the second).
    for workers in [1, 2] {
        let d = cpu(workers);
        let flags = d.alloc_zeroed::<u32>(10).unwrap();
        d.launch(&LEAVE_EARLY, &flags.slice(), &WorldSpec::ranks(8).block_dim(4))
            .unwrap();
        assert_eq!(d.download(&flags).unwrap(), [0, 0, 3, 0, 3, 3, 3, 3, 3, 3]);
    }
}

#[test]
fn a_block_barrier_missing_a_rank_that_waits_elsewhere_is_a_deadlock() {
    // With a world timeout too: no rank is in a timed wait, so the
    // scheduler's own detection reports it once the timeout and its grace
    // period have passed.
    for (workers, timeout) in [(1, None), (2, None), (1, Some(20))] {
        let d = cpu(workers);
        let flags = d.upload(&[1u32, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let mut spec = WorldSpec::ranks(8).block_dim(4);
        if let Some(ms) = timeout {
            spec = spec.timeout(std::time::Duration::from_millis(ms));
        }
        let e = d.launch(&LEAVE_EARLY, &flags.slice(), &spec).unwrap_err();
        let HostError::Deadlock(rep) = e else {
            panic!("{e}")
        };
        // The second block passes its barrier and finishes.
        let expect = |r| match r {
            1 => BlockedState::Running,
            4..=7 => BlockedState::Exited,
            _ => BlockedState::BlockBarrier,
        };
        for r in 0..8 {
            assert_eq!(rep.state_of(r), Some(expect(r)), "rank {r}");
        }
        assert_eq!(
            rep.to_string(),
            "deadlock: rank 0: block barrier; rank 1: running (polling outside any MPI wait); \
             ranks 2-3: block barrier; ranks 4-7: exited"
        );
    }
}

gpu_mpi_device::kernel! {
    /// Rank r > 0 waits for flag r, then raises flag r + 1. Rank 0 raises
    /// flag 1 when `start` is set, else waits for flag 0, which nobody raises.
    pub static CHAIN = fn chain(world: &World, flags: &GlobalSlice<u32>) -> Result<(), Error> {
        let r = world.rank() as usize;
        let start = cell(flags, world.size() as usize).load(Ordering::Relaxed) == 1;
        if r > 0 || !start {
            let mut b = Backoff::new();
            while cell(flags, r).load(Ordering::Acquire) == 0 {
                b.snooze();
            }
        }
        if r + 1 < world.size() as usize {
            cell(flags, r + 1).store(1, Ordering::Release);
        }
        Ok(())
    }
}

#[test]
fn a_spin_that_nobody_ends_is_an_exact_deadlock() {
    for workers in [1, 2, 4] {
        for start in [0, 1] {
            let d = cpu(workers);
            let flags = d.alloc_zeroed::<u32>(257).unwrap();
            let mut init = vec![0; 257];
            init[256] = start;
            let flags = {
                let mut f = flags;
                d.write(&mut f, &init).unwrap();
                f
            };
            let r = d.launch(&CHAIN, &flags.slice(), &WorldSpec::ranks(256).block_dim(32));
            if start == 1 {
                r.unwrap();
                assert_eq!(&d.download(&flags).unwrap()[1..256], &[1; 255][..]);
            } else {
                let Err(HostError::Deadlock(rep)) = r else {
                    panic!("{r:?}")
                };
                assert_eq!(rep.ranks.len(), 256);
                assert!(rep.ranks.iter().all(|b| b.state == BlockedState::Running));
                assert_eq!(
                    rep.to_string(),
                    "deadlock: ranks 0-255: running (polling outside any MPI wait)"
                );
            }
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct PingArgs {
    counter: GlobalSlice<u32>,
    rounds: u32,
    reserved: u32,
}

gpu_mpi_device::kernel! {
    /// The first and the last rank take turns incrementing a counter.
    pub static PING_PONG = fn ping_pong(world: &World, a: &PingArgs) -> Result<(), Error> {
        let last = world.size() - 1;
        let me = match world.rank() {
            0 => 0,
            r if r == last => 1,
            _ => return Ok(()),
        };
        let c = cell(&a.counter, 0);
        for i in 0..a.rounds {
            let mut b = Backoff::new();
            while c.load(Ordering::Acquire) != 2 * i + me {
                b.snooze();
            }
            c.store(2 * i + me + 1, Ordering::Release);
        }
        Ok(())
    }
}

#[test]
fn cross_worker_progress_is_never_taken_for_a_deadlock() {
    for workers in [2, 3] {
        for _ in 0..10 {
            let d = cpu(workers);
            let counter = d.alloc_zeroed::<u32>(1).unwrap();
            let args = PingArgs {
                counter: counter.slice(),
                rounds: 300,
                reserved: 0,
            };
            d.launch(&PING_PONG, &args, &WorldSpec::ranks(96).block_dim(32))
                .unwrap();
            assert_eq!(d.download(&counter).unwrap(), vec![600]);
        }
    }
}

static DROPPED: AtomicUsize = AtomicUsize::new(0);

struct CountDrop;
impl Drop for CountDrop {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, StdOrdering::SeqCst);
    }
}

gpu_mpi_device::kernel! {
    /// Every rank holds a value with a destructor and waits forever.
    pub static HOLD_AND_HANG = fn hold_and_hang(_world: &World, flags: &GlobalSlice<u32>) -> Result<(), Error> {
        let _guard = CountDrop;
        let mut b = Backoff::new();
        while cell(flags, 0).load(Ordering::Acquire) == 0 {
            b.snooze();
        }
        Ok(())
    }
}

#[test]
fn a_deadlocked_world_unwinds_every_rank() {
    let d = cpu(2);
    let flags = d.alloc_zeroed::<u32>(1).unwrap();
    let before = DROPPED.load(StdOrdering::SeqCst);
    let e = d
        .launch(&HOLD_AND_HANG, &flags.slice(), &WorldSpec::ranks(512))
        .unwrap_err();
    assert!(matches!(e, HostError::Deadlock(_)), "{e}");
    assert_eq!(DROPPED.load(StdOrdering::SeqCst) - before, 512);
}

gpu_mpi_device::kernel! {
    /// Rank 5 panics; the others wait for a flag that nobody raises.
    pub static PANIC_AT_5 = fn panic_at_5(world: &World, flags: &GlobalSlice<u32>) -> Result<(), Error> {
        if world.rank() == 5 {
            panic!("boom at rank {}", world.rank());
        }
        let mut b = Backoff::new();
        while cell(flags, 0).load(Ordering::Acquire) == 0 {
            b.snooze();
        }
        Ok(())
    }
}

#[test]
fn a_panicking_rank_is_reported_and_the_others_are_stopped() {
    for workers in [1, 2] {
        let d = cpu(workers);
        let flags = d.alloc_zeroed::<u32>(1).unwrap();
        let e = d
            .launch(&PANIC_AT_5, &flags.slice(), &WorldSpec::ranks(64).block_dim(32))
            .unwrap_err();
        match e {
            HostError::RankPanicked { rank: 5, message } => assert_eq!(message, "boom at rank 5"),
            other => panic!("{other}"),
        }
    }
}

gpu_mpi_device::kernel! {
    /// Every rank writes element `rank` of a slice that is too short for all.
    pub static OUT_OF_BOUNDS = fn out_of_bounds(world: &World, out: &GlobalSlice<u32>) -> Result<(), Error> {
        out.write(world.rank() as usize, 7)
    }
}

#[test]
fn rank_errors_are_collected_with_their_ranks() {
    let d = Device::cpu();
    let out = d.alloc_zeroed::<u32>(60).unwrap();
    let e = d
        .launch(&OUT_OF_BOUNDS, &out.slice(), &WorldSpec::ranks(64))
        .unwrap_err();
    let HostError::RankFailed { errors, ranks } = &e else {
        panic!("{e}")
    };
    assert_eq!(*ranks, 64);
    let want: Vec<_> = (60..64)
        .map(|r| (r, Error::OutOfBounds { index: r, len: 60 }))
        .collect();
    assert_eq!(errors, &want);
    assert!(
        e.to_string()
            .starts_with("4 of 64 ranks failed: rank 60: MPI_ERR_ARG"),
        "{e}"
    );
    assert_eq!(d.download(&out).unwrap(), vec![7; 60]);
}

#[test]
fn worlds_that_cannot_be_co_resident_are_refused_with_the_numbers() {
    let d = Device::cpu();
    let e = d.launch(
        &WHO,
        &d.alloc_zeroed(1).unwrap().slice(),
        &WorldSpec::ranks(5000).block_dim(1),
    );
    let e = e.unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotCoResident {
                requested: 5000,
                fits: 4224,
                limit: Resource::BlocksPerSm,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "world of 5000 ranks cannot be co-resident: 4224 fit (132 SMs x 32 blocks of 1 ranks; limit: blocks per SM)"
    );
    let e = d
        .resolve(&WorldSpec::ranks(265 * 1024).block_dim(1024))
        .unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotCoResident {
                fits: 270_336,
                limit: Resource::ThreadsPerSm,
                ..
            }
        ),
        "{e:?}"
    );
    let e = d.resolve(&WorldSpec::ranks(2048).block_dim(2048)).unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotCoResident {
                fits: 0,
                limit: Resource::ThreadsPerBlock,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(d.max_ranks(256), 132 * 2048);
    assert_eq!(d.max_ranks(1), 4224);
}

#[test]
fn the_largest_world_fills_the_virtual_device() {
    let d = Device::cpu_with(CpuOptions {
        sms: 2,
        ..CpuOptions::default()
    });
    let spec = WorldSpec::max_ranks();
    assert_eq!(spec.ranks, RankCount::Max);
    let out = d.alloc_zeroed::<[u32; 4]>(4096).unwrap();
    let rep = d.launch(&WHO, &out.slice(), &spec).unwrap();
    assert_eq!((rep.ranks, rep.block_dim), (4096, 256));
    let e = d.resolve(&WorldSpec::ranks(4097)).unwrap_err();
    assert!(
        matches!(e, HostError::NotCoResident { requested: 4097, fits, .. } if fits < 4097),
        "{e:?}"
    );
}

/// The largest world in blocks larger than a block may be is refused for
/// the block's size, not as a world of no rank (issue 27, item 7).
#[test]
fn the_largest_world_in_blocks_too_large_names_the_block() {
    let d = Device::cpu();
    let spec = WorldSpec::max_ranks().block_dim(5000);
    let out = d.alloc_zeroed::<[u32; 4]>(1).unwrap();
    for e in [
        d.resolve(&spec).unwrap_err(),
        d.launch(&WHO, &out.slice(), &spec).unwrap_err(),
    ] {
        assert!(
            matches!(
                e,
                HostError::NotCoResident {
                    requested: 5000,
                    fits: 0,
                    limit: Resource::ThreadsPerBlock,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("blocks of 5000 ranks exceed"), "{e}");
    }
}

/// A stack size whose page rounding overflows is an allocation error before
/// any rank runs (it wrapped to 0 bytes, and the first rank overflowed it).
#[test]
fn a_stack_size_past_the_address_space_is_an_allocation_error() {
    for stack_bytes in [usize::MAX, usize::MAX - 4095, usize::MAX / 2] {
        let d = Device::cpu_with(CpuOptions {
            stack_bytes,
            ..CpuOptions::default()
        });
        let out = d.alloc_zeroed::<[u32; 4]>(2).unwrap();
        let e = d.launch(&WHO, &out.slice(), &WorldSpec::ranks(2)).unwrap_err();
        assert!(matches!(e, HostError::Alloc(_)), "{stack_bytes}: {e:?}");
    }
}

#[test]
fn bad_configurations_are_config_errors() {
    let d = Device::cpu();
    let cases = [
        (WorldSpec::ranks(0), ConfigError::NoRanks),
        (
            WorldSpec::ranks(100).block_dim(32),
            ConfigError::BlockDim {
                ranks: 100,
                block_dim: 32,
            },
        ),
        (WorldSpec::ranks(64).slot_bytes(100), ConfigError::SlotBytes(100)),
        (WorldSpec::ranks(64).slots_per_rank(0), ConfigError::NoSlots),
        (
            WorldSpec::ranks(64).collective_bytes(0),
            ConfigError::CollectiveBytes(0),
        ),
    ];
    let flags = d.alloc_zeroed::<u32>(10).unwrap();
    for (spec, want) in cases {
        match d.launch(&LEAVE_EARLY, &flags.slice(), &spec) {
            Err(HostError::Config(got)) => assert_eq!(got, want),
            other => panic!("{spec:?}: {other:?}"),
        }
    }
    let e = d.resolve(&WorldSpec::ranks(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid world configuration: a world needs at least one rank"
    );
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct DigArgs {
    /// Rank that digs.
    rank: u32,
    /// Bytes below the kernel's first local to dig to.
    depth: u32,
}

/// Recurses with 256-byte frames until `depth` bytes below `top`.
#[inline(never)]
fn dig(top: usize, depth: usize) -> u32 {
    let mut buf = [0u8; 256];
    std::hint::black_box(&mut buf);
    let here = buf.as_ptr() as usize;
    if top.saturating_sub(here) >= depth {
        return buf[7] as u32;
    }
    dig(top, depth) + std::hint::black_box(buf[100]) as u32
}

gpu_mpi_device::kernel! {
    /// One rank uses `depth` bytes of stack.
    pub static DIG = fn dig_kernel(world: &World, a: &DigArgs) -> Result<(), Error> {
        let top = 0u8;
        if world.rank() as u32 == a.rank {
            std::hint::black_box(dig(std::hint::black_box(&top) as *const u8 as usize, a.depth as usize));
        }
        Ok(())
    }
}

fn canary_device() -> Device {
    Device::cpu_with(CpuOptions {
        workers: 1,
        stack_bytes: 32 * 1024,
        guard_page_limit: 0,
        ..CpuOptions::default()
    })
}

#[test]
fn a_stack_overflow_is_detected_by_the_canary() {
    let d = canary_device();
    let ok = DigArgs {
        rank: 2,
        depth: 16 * 1024,
    };
    d.launch(&DIG, &ok, &WorldSpec::ranks(4)).unwrap();
    let over = DigArgs {
        rank: 2,
        depth: 32 * 1024 + 256,
    };
    match d.launch(&DIG, &over, &WorldSpec::ranks(4)) {
        Err(HostError::StackOverflow {
            rank: 2,
            stack_bytes: 32768,
        }) => {}
        other => panic!("{other:?}"),
    }
}

/// Run in a child process by `a_stack_overflow_hits_the_guard_page`.
#[test]
fn guard_page_overflow_child() {
    if std::env::var_os("GPU_MPI_OVERFLOW_CHILD").is_none() {
        return;
    }
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads the struct we pass; no core file for the
    // deliberate crash below.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
    let d = Device::cpu_with(CpuOptions {
        workers: 1,
        stack_bytes: 32 * 1024,
        ..CpuOptions::default()
    });
    let over = DigArgs {
        rank: 1,
        depth: 1 << 20,
    };
    let _ = d.launch(&DIG, &over, &WorldSpec::ranks(2));
    unreachable!("the overflow must fault in the guard page");
}

#[test]
fn a_stack_overflow_hits_the_guard_page() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "guard_page_overflow_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GPU_MPI_OVERFLOW_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "child survived: {stderr}");
    assert!(
        stderr.contains("gpu-mpi: rank 1 overflowed its coroutine stack of 32768 bytes"),
        "{stderr}"
    );
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RingArgs {
    token: GlobalSlice<u32>,
    laps: u32,
    reserved: u32,
}

gpu_mpi_device::kernel! {
    /// A token goes round the ring of ranks `laps` times: rank r waits for
    /// the count to reach `lap * size + r`, then increments it.
    pub static TOKEN_RING = fn token_ring(world: &World, a: &RingArgs) -> Result<(), Error> {
        let (r, n) = (world.rank() as u32, world.size() as u32);
        let token = cell(&a.token, 0);
        for lap in 0..a.laps {
            let mut b = Backoff::new();
            while token.load(Ordering::Acquire) != lap * n + r {
                b.snooze();
            }
            token.store(lap * n + r + 1, Ordering::Release);
        }
        Ok(())
    }
}

#[test]
fn a_token_ring_across_every_worker_completes() {
    for workers in [1, 2, 4] {
        let d = cpu(workers);
        let token = d.alloc_zeroed::<u32>(1).unwrap();
        let args = RingArgs {
            token: token.slice(),
            laps: 5,
            reserved: 0,
        };
        d.launch(&TOKEN_RING, &args, &WorldSpec::ranks(256).block_dim(32))
            .unwrap();
        assert_eq!(d.download(&token).unwrap(), vec![5 * 256]);
    }
}

#[test]
fn backends_open_by_name() {
    let d = Device::open("cpu".parse().unwrap(), &gpu_mpi_host::KernelImages::EMPTY).unwrap();
    assert_eq!(d.backend_name(), "cpu");
    assert!(d.as_cpu().is_some());
    let d = Device::open(
        gpu_mpi_host::BackendKind::Auto,
        &gpu_mpi_host::KernelImages::EMPTY,
    )
    .unwrap();
    assert!(["cpu", "cuda"].contains(&d.backend_name()));
}

#[test]
fn buffers_round_trip_and_check_lengths() {
    let d = Device::cpu();
    let data: Vec<u64> = (0..10_000).map(|i| i * i).collect();
    let mut b = d.upload(&data).unwrap();
    assert_eq!(b.len(), 10_000);
    assert_eq!(b.slice().len(), 10_000);
    assert_eq!(b.slice().addr() % 64, 0);
    assert_eq!(d.download(&b).unwrap(), data);
    assert!(d.write(&mut b, &data[..5]).is_err());
    let big = d.alloc_zeroed::<u8>(3 << 20).unwrap();
    assert!(d.download(&big).unwrap().iter().all(|&x| x == 0));
    let empty = d.alloc_zeroed::<u32>(0).unwrap();
    assert!(empty.is_empty() && d.download(&empty).unwrap().is_empty());
}

#[test]
fn the_emulator_describes_itself_without_gpu_fields() {
    let d = cpu(3).describe();
    assert_eq!((d.backend, d.sms), ("cpu", 132));
    assert!(
        d.name.contains("emulator") && d.name.contains("3 workers"),
        "{}",
        d.name
    );
    assert_eq!((d.compute_capability, d.cuda_version), (None, None));
    assert_eq!((d.sm_clock_mhz, d.memory_clock_mhz), (None, None));
}
