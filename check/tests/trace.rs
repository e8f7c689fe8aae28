//! Message traces (docs/tracing.md): what the ranks record, the Chrome
//! trace JSON read back with serde_json, dropped events, the HTML page
//! rendered in headless Chromium. The programs of
//! `gpu_mpi_check_kernels::trace` run on each backend (`testgen!`: the
//! emulator always, the GPU where one is present); what needs the emulator
//! (seeded schedules, sync counts, deadlocks) runs on it alone, with two
//! deadlocking kernels of its own here.

use bytemuck::Zeroable;
use gpu_mpi::device::abi::layout::{ConfigError, MAX_TRACE_EVENTS};
use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::abi::trace::{Creation, TraceKind, NO_CONTEXT};
use gpu_mpi::device::traits::*;
use gpu_mpi::device::{Error, ErrorClass, GlobalSlice, Kernel, World};
use gpu_mpi::{
    DeadlockReport, Device, DeviceBuffer, HostError, Profile, RankTrace, Schedule, SpanKind, SyncCounts,
    SyncProfile, Trace, WorldSpec,
};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::trace::*;
use gpu_mpi_check_kernels::CaseArgs;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const RANKS: u32 = 8;
const BLOCK: u32 = 4;

// The deadlocking kernels are defined here, so they run on the emulator
// alone: only its scheduler finds a deadlock (on the GPU it is a timeout).

gpu_mpi::device::kernel! {
    /// Ranks 0 and 1 each receive from the other first: a deadlock.
    pub static CROSSED = fn crossed(world: &World, _out: &GlobalSlice<u64>) -> Result<(), Error> {
        let r = world.rank();
        if r < 2 {
            let mut v = 0u64;
            world.process_at_rank(1 - r).receive_into_with_tag(&mut v, 3)?;
            world.process_at_rank(1 - r).send_with_tag(&v, 3)?;
        }
        Ok(())
    }
}

gpu_mpi::device::kernel! {
    /// A duplicate of the world, then a barrier on it that rank 0 skips:
    /// the others stop inside it (a deadlock).
    pub static STUCK = fn stuck(world: &World, _out: &GlobalSlice<u64>) -> Result<(), Error> {
        let d = world.duplicate()?;
        if d.rank() != 0 {
            d.barrier()?;
        }
        Ok(())
    }
}

gpu_mpi::device::kernel! {
    /// Rank 0 receives from any source; the others return at once.
    pub static ALONE = fn alone(world: &World, _out: &GlobalSlice<u64>) -> Result<(), Error> {
        if world.rank() == 0 {
            let mut v = 0u64;
            world.any_process().receive_into_with_tag(&mut v, 3)?;
        }
        Ok(())
    }
}

/// Runs `kernel` (CROSSED, STUCK or ALONE) on 4 ranks of the emulator with
/// `events` trace events each; returns its deadlock report and the trace.
fn deadlocked(kernel: &Kernel<GlobalSlice<u64>>, events: u32) -> (DeadlockReport, Trace) {
    let d = Device::cpu();
    let out = d.alloc_zeroed::<u64>(1).unwrap();
    let run = d.launch_traced(kernel, &out.slice(), &WorldSpec::ranks(4).trace(events));
    let Err(HostError::Deadlock(report)) = run.result else {
        panic!("expected a deadlock, got {:?}", run.result)
    };
    (report, run.trace.expect("trace kept after a deadlock"))
}

fn spec() -> WorldSpec {
    WorldSpec::ranks(RANKS).block_dim(BLOCK)
}

/// The arguments of program `case` (a `T_*` constant) recording `stride`
/// words per rank in `out`.
fn args(case: u32, stride: u32, out: &DeviceBuffer<u32>) -> CaseArgs {
    CaseArgs {
        case,
        stride,
        out: out.slice(),
        ..CaseArgs::zeroed()
    }
}

/// Runs T_TRAFFIC, checks its results, returns the trace.
fn traffic(d: &Device, spec: WorldSpec) -> (gpu_mpi::LaunchReport, Option<Trace>) {
    let out = d.alloc_zeroed::<u32>(3 * RANKS as usize).unwrap();
    let rep = d
        .launch(&SEMANTICS_TRACE, &args(T_TRAFFIC, 3, &out), &spec)
        .unwrap();
    let got = d.download(&out).unwrap();
    let n = RANKS;
    for r in 0..n {
        let i = 3 * r as usize;
        assert_eq!(got[i], ((r + n - 1) % n) * 10, "rank {r} ring");
        assert_eq!(got[i + 1], n * (n - 1) / 2, "rank {r} all-reduce");
        assert_eq!(got[i + 2], 99, "rank {r} broadcast");
    }
    let t = rep.trace().cloned();
    (rep, t)
}

/// How many of rank trace `r`'s events are of `kind`.
fn of_kind(r: &RankTrace, kind: TraceKind) -> usize {
    r.events.iter().filter(|e| e.kind() == Some(kind)).count()
}

/// The kinds of one-sided events: T_TRAFFIC records none (the one-sided
/// tests below cover them).
const RMA_KINDS: [TraceKind; 4] = [
    TraceKind::RmaOperation,
    TraceKind::RmaEpochOpen,
    TraceKind::RmaEpochClose,
    TraceKind::RmaNotified,
];

/// Every kind T_TRAFFIC records: all but the one-sided ones.
fn message_kinds() -> impl Iterator<Item = TraceKind> {
    TraceKind::ALL.into_iter().filter(|k| !RMA_KINDS.contains(k))
}

fn kinds_of(t: &Trace) -> HashSet<TraceKind> {
    t.ranks
        .iter()
        .flat_map(|r| r.events.iter())
        .filter_map(|e| e.kind())
        .collect()
}

fn every_rank_records_every_kind_and_messages_link(backend: Backend) {
    let d = backend.device();
    let (_, trace) = traffic(&d, spec().trace(256));
    let t = trace.expect("a traced launch has a trace");
    assert_eq!(t.ranks.len(), RANKS as usize);
    assert_eq!(t.dropped(), 0);
    assert_eq!(
        kinds_of(&t),
        message_kinds().collect(),
        "every kind but the one-sided ones recorded"
    );
    for r in &t.ranks {
        assert!(!r.events.is_empty(), "rank {} recorded nothing", r.rank);
        assert_eq!(r.block, r.rank / BLOCK);
        assert!(
            r.events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns),
            "rank {} out of order",
            r.rank
        );
        let sent = of_kind(r, TraceKind::Sent);
        let posted = of_kind(r, TraceKind::SendPosted);
        let done = of_kind(r, TraceKind::SendCompleted);
        assert_eq!(
            (sent, done),
            (posted, posted),
            "rank {}: every posted send sent and completed",
            r.rank
        );
        let enters = of_kind(r, TraceKind::CollectiveEnter);
        let leaves = of_kind(r, TraceKind::CollectiveLeave);
        assert_eq!(
            (enters, leaves),
            (3, 3),
            "rank {}: barrier, all-reduce, broadcast",
            r.rank
        );
    }
    // Every message sent was matched exactly once, by its destination, with
    // its tag and size: 2 rings of 8, ping, pong, probe's, matched probe's
    // on the world's point-to-point context; the rest are the duplicate's
    // (on the world's collective context).
    let links = t.messages();
    let (p2p, creation): (Vec<&gpu_mpi::MessageLink>, Vec<_>) = links.iter().partition(|m| m.context == 0);
    assert_eq!(p2p.len(), 2 * RANKS as usize + 4);
    assert!(!creation.is_empty() && creation.iter().all(|m| m.context == 1));
    let sent_total: usize = t.ranks.iter().map(|r| of_kind(r, TraceKind::Sent)).sum();
    assert_eq!(links.len(), sent_total);
    let mut seen = HashSet::new();
    for m in &p2p {
        assert!(seen.insert((m.source, m.sequence)), "message linked twice");
        let s = &t.ranks[m.source as usize].events[m.sent];
        assert_eq!((s.peer, s.tag, s.bytes), (m.dest as i32, m.tag, m.bytes));
        match m.tag {
            7 => assert_eq!((m.bytes, m.dest), (8, (m.source + 1) % RANKS)),
            9 => assert_eq!(m.bytes, 4 * BIG as u32),
            20 | 21 => assert_eq!(m.bytes, 4),
            11 => assert_eq!((m.source, m.dest, m.bytes), (0, 1, 2)),
            12 => assert_eq!((m.source, m.dest, m.bytes), (2, 3, 8)),
            other => panic!("unexpected tag {other}"),
        }
    }
    // Rank 1 waited for the pong: a blocked receive from rank 0, tag 21.
    assert!(t.ranks[1]
        .events
        .iter()
        .any(|e| e.kind() == Some(TraceKind::Blocked) && e.peer == 0 && e.tag == 21));
}
testgen!(every_rank_records_every_kind_and_messages_link);

/// The Chrome trace JSON, read back.
fn chrome(t: &Trace) -> Value {
    serde_json::from_str(&t.to_chrome_json()).expect("valid JSON")
}

fn chrome_json_has_one_flow_per_message_ordered_tracks_and_every_kind(backend: Backend) {
    let d = backend.device();
    let (_, trace) = traffic(&d, spec().trace(256));
    let t = trace.unwrap();
    let doc = chrome(&t);
    let events = doc["traceEvents"].as_array().unwrap();
    // Tracks: one thread per rank, named, in the process of its block.
    let mut threads = HashMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        threads.insert(e["tid"].as_u64().unwrap(), e["pid"].as_u64().unwrap());
    }
    assert_eq!(threads.len(), RANKS as usize);
    for (tid, pid) in &threads {
        assert_eq!(*pid, tid / BLOCK as u64, "rank {tid} in its block's process");
    }
    // Per-track timestamps in order; every event on a known track.
    let mut last: HashMap<u64, f64> = HashMap::new();
    let mut kinds = HashSet::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let tid = e["tid"].as_u64().unwrap();
        assert_eq!(threads.get(&tid), Some(&e["pid"].as_u64().unwrap()));
        let ts = e["ts"].as_f64().unwrap();
        let prev = last.insert(tid, ts).unwrap_or(f64::MIN);
        assert!(prev <= ts, "rank {tid}: {prev} then {ts}");
        kinds.insert(e["args"]["kind"].as_str().unwrap().to_string());
    }
    for k in message_kinds() {
        assert!(kinds.contains(k.name()), "kind {:?} missing from the JSON", k);
    }
    // Flows: exactly one start and one finish per matched message, from the
    // sender's track to the receiver's, matched by source and sequence.
    let mut starts: HashMap<u64, &Value> = HashMap::new();
    let mut finishes: HashMap<u64, &Value> = HashMap::new();
    for e in events {
        let id = e["id"].as_u64();
        match e["ph"].as_str().unwrap() {
            "s" => assert!(starts.insert(id.unwrap(), e).is_none(), "two flow starts"),
            "f" => assert!(finishes.insert(id.unwrap(), e).is_none(), "two flow ends"),
            _ => {}
        }
    }
    let links = t.messages();
    assert_eq!(starts.len(), links.len());
    assert_eq!(finishes.len(), links.len());
    let mut pairs = HashSet::new();
    for (id, s) in &starts {
        let f = finishes[id];
        assert_eq!(s["args"]["source"], s["tid"]);
        assert_eq!(f["args"]["dest"], f["tid"]);
        assert_eq!(f["bp"], "e");
        // No order of `ts` between the two: `sent` is stamped after the
        // push, which the receiver may match first (docs/tracing.md).
        pairs.insert((
            s["args"]["source"].as_u64().unwrap(),
            s["args"]["sequence"].as_u64().unwrap(),
        ));
    }
    let expected: HashSet<(u64, u64)> = links
        .iter()
        .map(|m| (m.source as u64, m.sequence as u64))
        .collect();
    assert_eq!(pairs, expected, "every matched message has its flow");
    assert_eq!(doc["otherData"]["dropped"], 0);
    assert_eq!(doc["otherData"]["recorded"], t.recorded());
    assert_eq!(doc["otherData"]["backend"], backend.name());
}
testgen!(chrome_json_has_one_flow_per_message_ordered_tracks_and_every_kind);

// On the emulator alone: the two runs must take the same interleaving (a
// seeded schedule) to block in the same waits.
#[test]
fn a_small_buffer_counts_what_it_dropped_and_keeps_the_first_events() {
    let d = Device::cpu();
    // One seeded schedule: the same interleaving, so the same waits block.
    let seeded = spec().schedule(Schedule::Random { seed: 5 });
    let (_, big) = traffic(&d, seeded.trace(256));
    let (_, small) = traffic(&d, seeded.trace(4));
    let (big, small) = (big.unwrap(), small.unwrap());
    for (b, s) in big.ranks.iter().zip(&small.ranks) {
        assert_eq!(s.events.len(), 4, "rank {} fills its 4 events", s.rank);
        assert_eq!(
            s.dropped as usize,
            b.events.len() - 4,
            "rank {}: the rest counted",
            s.rank
        );
        // The kept events are the first four, intact.
        let kinds = |r: &RankTrace| {
            r.events
                .iter()
                .take(4)
                .map(|e| (e.kind, e.peer, e.tag))
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(s), kinds(b), "rank {}", s.rank);
    }
    let doc = chrome(&small);
    assert_eq!(doc["otherData"]["dropped"].as_u64(), Some(small.dropped()));
    assert!(small.dropped() > 0);
    let per_rank: Vec<u64> = doc["otherData"]["dropped_per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        per_rank,
        small.ranks.iter().map(|r| r.dropped as u64).collect::<Vec<_>>()
    );
}

// On the emulator alone: it counts the synchronising operations, under a
// seeded schedule.
#[test]
fn tracing_off_records_nothing_and_costs_no_synchronising_operation() {
    let d = Device::cpu();
    let seeded = |s: WorldSpec| s.schedule(Schedule::Random { seed: 11 });
    let (off, none) = traffic(&d, seeded(spec()));
    assert!(none.is_none());
    let (on, some) = traffic(&d, seeded(spec().trace(256)));
    assert!(some.is_some());
    // Trace records are plain stores to the rank's own buffer: the same
    // schedule issues the same writes that other ranks see, with it on or
    // off. Only how a receive acquires its inbox differs: untraced, a
    // lone receive waits in a loop of its own whose polls are Acquire
    // loads (`engine::receive_waiting`); traced, it waits in the request
    // passes (the trace's events come from them), whose looks are relaxed
    // and whose takes fence.
    let written = |c: &SyncCounts| {
        (
            c.release_stores,
            c.release_rmws,
            c.acq_rel_rmws,
            c.acquire_rmws,
            c.relaxed_rmws,
            c.block_barriers,
            c.warp_operations,
        )
    };
    let ranks = |p: &Option<SyncProfile>| {
        let p = p.as_ref().expect("the emulator counts");
        p.per_rank().iter().map(written).collect::<Vec<_>>()
    };
    assert_eq!(ranks(&off.sync_counts), ranks(&on.sync_counts));
    assert_eq!(
        on.world_bytes - off.world_bytes,
        (RANKS as usize) * (32 + 256 * 32)
    );
}

fn too_many_trace_events_is_a_config_error(backend: Backend) {
    let d = backend.device();
    let out = d.alloc_zeroed::<u32>(3 * RANKS as usize).unwrap();
    let e = d
        .launch(
            &SEMANTICS_TRACE,
            &args(T_TRAFFIC, 3, &out),
            &spec().trace(MAX_TRACE_EVENTS + 1),
        )
        .unwrap_err();
    assert!(
        matches!(e, HostError::Config(ConfigError::TraceEvents(n)) if n == MAX_TRACE_EVENTS + 1),
        "{e}"
    );
}
testgen!(too_many_trace_events_is_a_config_error);

// On the emulator alone: its timing mode (docs/model.md).
/// A trace recorded in timing mode is stamped with the ranks' virtual
/// clocks (`shim::clock_ns` reads them): the same in every run, inside each
/// rank's modelled time from the launch report, and a wait for a peer ends
/// after the peer's send as the model orders them, by at least the time the
/// message takes to become visible.
#[test]
fn a_trace_in_timing_mode_carries_modelled_timestamps() {
    let d = Device::cpu();
    let h100 = Profile::h100();
    let timed = || spec().model(h100).trace(256);
    let (report, a) = traffic(&d, timed());
    let (again, b) = traffic(&d, timed());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.dropped(), 0);
    let model = report.model.as_ref().expect("a timed launch reports its model");
    assert_eq!(Some(model), again.model.as_ref(), "two runs modelled alike");
    for (ra, rb) in a.ranks.iter().zip(&b.ranks) {
        assert_eq!(ra.events, rb.events, "rank {}: two runs, other events", ra.rank);
    }
    for r in &a.ranks {
        let end_ns = model.ranks[r.rank as usize].end_ps / 1000;
        let (first, last) = (r.events[0].time_ns, r.events.last().unwrap().time_ns);
        // Virtual time starts at 0 for every rank; the host's clock would
        // be far beyond the rank's end.
        assert!(
            first <= last && last <= end_ns,
            "rank {}: events from {first} to {last} ns, its clock ended at {end_ns} ns",
            r.rank
        );
        // After its last event (the broadcast's leave) a rank only writes
        // its results and returns: a few accesses and the reads of the
        // world's layout their addresses come from, well under two
        // microseconds.
        assert!(
            end_ns - last < 2_000,
            "rank {}: {last} ns, ended at {end_ns} ns",
            r.rank
        );
        assert!(r.events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    }
    // Every message is matched after it was sent, and no sooner than its
    // push became visible to the receiver's SM.
    let links = a.messages();
    assert!(!links.is_empty());
    for m in &links {
        let sent = a.ranks[m.source as usize].events[m.sent].time_ns;
        let matched = a.ranks[m.dest as usize].events[m.matched].time_ns;
        assert!(
            matched >= sent,
            "{} -> {} tag {}: matched at {matched} ns, sent at {sent} ns",
            m.source,
            m.dest,
            m.tag
        );
    }
    // Rank 1's blocked wait for the pong (rank 0's tag 21) ends after rank
    // 0 sent it, and lasted as long as it says (modelled nanoseconds).
    let pong = a.ranks[0]
        .events
        .iter()
        .find(|e| e.kind() == Some(TraceKind::Sent) && e.tag == 21)
        .expect("rank 0 sent the pong");
    let wait = a.ranks[1]
        .events
        .iter()
        .find(|e| e.kind() == Some(TraceKind::Blocked) && e.peer == 0 && e.tag == 21)
        .expect("rank 1 blocked for the pong");
    let visible = (h100.visible_ns) as u64;
    assert!(
        wait.time_ns >= pong.time_ns + visible,
        "wait ended at {} ns, pong sent at {} ns",
        wait.time_ns,
        pong.time_ns
    );
    assert!(
        wait.arg > 0 && wait.arg <= wait.time_ns,
        "blocked {} ns",
        wait.arg
    );
    println!(
        "pong sent at {} ns, rank 1's wait ended at {} ns after {} ns blocked; kernel {} ns",
        pong.time_ns,
        wait.time_ns,
        wait.arg,
        model.kernel_ns()
    );
}

// On the emulator alone: a deadlock (CROSSED).
#[test]
fn a_deadlock_comes_with_its_trace() {
    let (report, t) = deadlocked(&CROSSED, 16);
    for r in 0..2 {
        let posted: Vec<_> = t.ranks[r]
            .events
            .iter()
            .filter(|e| e.kind() == Some(TraceKind::ReceivePosted))
            .collect();
        assert_eq!(posted.len(), 1);
        assert_eq!((posted[0].peer, posted[0].tag), (1 - r as i32, 3));
        assert!(t.ranks[r]
            .events
            .iter()
            .all(|e| e.kind() != Some(TraceKind::ReceiveCompleted)));
    }
    let html = t.to_html("crossed", Some(&report));
    assert!(html.contains("wait-edge") && html.contains("deadlock"));
}

// ---------------------------------------------------------------------------
// The HTML page in headless Chromium

/// The Chromium binary: `GPU_MPI_CHROMIUM`, else `chromium` or
/// `chromium-browser` on the PATH. `None` (with a notice) only when
/// `GPU_MPI_SKIP_BROWSER=1`; otherwise a missing browser fails the test.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("GPU_MPI_CHROMIUM")
        .map(|p| vec![PathBuf::from(p)])
        .unwrap_or_else(|| vec!["chromium".into(), "chromium-browser".into()]);
    for c in candidates {
        if Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(c);
        }
    }
    if std::env::var("GPU_MPI_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("notice: no chromium found; GPU_MPI_SKIP_BROWSER=1, skipping the browser check");
        return None;
    }
    panic!("headless Chromium is needed for this test: install Debian's `chromium` package (apt-get install -y chromium), set GPU_MPI_CHROMIUM to its binary, or set GPU_MPI_SKIP_BROWSER=1 to skip");
}

/// Loads `page` in headless Chromium; returns the rendered DOM, and writes
/// a screenshot to `shot`.
fn render(browser: &Path, page: &Path, shot: &Path, tmp: &Path) -> String {
    let url = format!("file://{}", page.display());
    let common = |c: &mut Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", tmp.join("profile").display()));
    };
    let mut dump = Command::new(browser);
    common(&mut dump);
    let out = dump.arg("--dump-dom").arg(&url).output().expect("run chromium");
    assert!(
        out.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = Command::new(browser);
    common(&mut s);
    let st = s
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1000,900")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        st.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn count(dom: &str, class: &str) -> usize {
    dom.matches(&format!("class=\"{class}\"")).count()
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpu-mpi-trace-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.len() > 1000 && b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

fn the_html_page_renders_one_arrow_per_message_in_chromium(backend: Backend) {
    let Some(browser) = chromium() else { return };
    let d = backend.device();
    let (_, trace) = traffic(&d, spec().trace(256));
    let t = trace.unwrap();
    let dir = tmp_dir(&format!("page-{}", backend.name()));
    let html = t.write_files(&dir.join("traffic.json"), "traffic", None).unwrap();
    assert!(dir.join("traffic.json").exists());
    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing loaded (the one URL is the SVG namespace name).
    for loader in [
        "<link",
        "src=",
        "href=\"http",
        "url(http",
        "fetch(",
        "XMLHttpRequest",
        "import ",
    ] {
        assert!(!page.contains(loader), "the page loads something: {loader}");
    }
    let shot = dir.join("traffic.png");
    let dom = render(&browser, &html, &shot, &dir);
    assert_eq!(count(&dom, "msg"), t.messages().len(), "one arrow per message");
    assert_eq!(count(&dom, "lifeline"), RANKS as usize);
    assert_eq!(count(&dom, "block-row"), (RANKS / BLOCK) as usize);
    assert!(count(&dom, "coll") >= 3 * RANKS as usize);
    assert!(count(&dom, "blocked") >= 1);
    assert!(dom.contains("tag 9 · 600 B"), "arrows carry tag and size");
    assert_eq!(count(&dom, "wait-edge"), 0);
    assert!(is_png(&shot), "screenshot written");
    let _ = std::fs::remove_dir_all(&dir);
}
testgen!(the_html_page_renders_one_arrow_per_message_in_chromium);

fn the_html_page_shows_communicators_and_failed_collectives_in_chromium(backend: Backend) {
    let Some(browser) = chromium() else { return };
    let t = split_trace(backend);
    let dir = tmp_dir(&format!("split-page-{}", backend.name()));
    let html = t.write_files(&dir.join("split.json"), "split", None).unwrap();
    let shot = dir.join("split.png");
    let dom = render(&browser, &html, &shot, &dir);
    assert_eq!(count(&dom, "msg"), t.messages().len(), "one arrow per message");
    // Per rank: the split, the all-reduce, the broadcast and the barrier
    // drawn as collectives, the failed broadcast apart.
    assert_eq!(count(&dom, "coll"), 4 * RANKS as usize);
    assert_eq!(count(&dom, "coll failed"), RANKS as usize);
    assert!(
        dom.contains("comm 1 · tag 5 · 8 B"),
        "arrows name their communicator"
    );
    assert!(
        dom.contains("comm 1 coll. · tag"),
        "a collective's own messages say so"
    );
    assert!(dom.contains("broadcast(root 4) (comm 1) failed: MPI_ERR_ROOT"));
    assert!(is_png(&shot));
    let _ = std::fs::remove_dir_all(&dir);
}
testgen!(the_html_page_shows_communicators_and_failed_collectives_in_chromium);

// On the emulator alone: a deadlock (CROSSED).
#[test]
fn a_deadlock_page_draws_the_wait_for_graph_in_chromium() {
    let Some(browser) = chromium() else { return };
    let (report, t) = deadlocked(&CROSSED, 16);
    let dir = tmp_dir("deadlock");
    let html = t
        .write_files(&dir.join("crossed.json"), "crossed", Some(&report))
        .unwrap();
    let shot = dir.join("crossed.png");
    let dom = render(&browser, &html, &shot, &dir);
    // Rank 0 waits for rank 1 and rank 1 for rank 0: two edges, two nodes.
    assert_eq!(count(&dom, "wait-edge"), 2);
    assert_eq!(count(&dom, "wait-node"), 2);
    assert_eq!(count(&dom, "msg"), 0);
    assert!(dom.contains("rank 0 waits in receive(source 1, tag 3)"));
    assert!(is_png(&shot));
    let _ = std::fs::remove_dir_all(&dir);
}

// On the emulator alone: a deadlock (ALONE).
#[test]
fn a_receive_from_any_source_draws_an_edge_to_the_any_source_node_in_chromium() {
    let Some(browser) = chromium() else { return };
    let (report, t) = deadlocked(&ALONE, 16);
    let dir = tmp_dir("any-source");
    let html = t
        .write_files(&dir.join("alone.json"), "alone", Some(&report))
        .unwrap();
    let shot = dir.join("alone.png");
    let dom = render(&browser, &html, &shot, &dir);
    // Rank 0 and the "any source" node, one arrow between them.
    assert_eq!(count(&dom, "wait-edge"), 1);
    assert_eq!(count(&dom, "wait-node"), 1);
    assert_eq!(count(&dom, "wait-node any-source"), 1);
    assert!(
        dom.contains("rank 0 waits in receive(source any, tag 3)"),
        "the edge's title"
    );
    assert!(
        dom.contains("every other rank has exited"),
        "the any-source node's label"
    );
    assert!(is_png(&shot));
    let _ = std::fs::remove_dir_all(&dir);
}

fn a_failed_world_collective_records_its_leave_with_the_error_class(backend: Backend) {
    let d = backend.device();
    let out = d.alloc_zeroed::<u32>(1).unwrap();
    let run = d.launch_traced(
        &SEMANTICS_TRACE,
        &args(T_BAD_ROOT, 0, &out),
        &WorldSpec::ranks(4).trace(16),
    );
    assert!(
        matches!(run.result, Err(HostError::RankFailed { .. })),
        "{:?}",
        run.result
    );
    let t = run.trace.unwrap();
    for r in &t.ranks {
        let kinds: Vec<_> = r.events.iter().filter_map(|e| e.kind()).collect();
        assert_eq!(
            kinds,
            [
                TraceKind::CollectiveEnter,
                TraceKind::CollectiveLeave,
                TraceKind::CollectiveEnter,
                TraceKind::CollectiveLeave
            ],
            "rank {}",
            r.rank
        );
        // The reduce's enter names its root (out of range: no world rank)
        // and its leave the class of its error.
        let (enter, leave) = (&r.events[2], &r.events[3]);
        assert_eq!(
            (enter.call as u32, enter.peer, enter.tag),
            (Call::Reduce as u32, 4, -1)
        );
        assert_eq!((enter.context, enter.bytes), (1, 4));
        assert_eq!(leave.arg, ErrorClass::Root as u64);
        assert_eq!(r.events[1].arg, 0, "the barrier succeeded");
    }
    for s in t.spans() {
        assert!(s.leave.is_some());
        let failed = s.kind == SpanKind::Collective(Call::Reduce);
        assert_eq!(s.error, failed.then_some(ErrorClass::Root));
    }
    // In the JSON every begun slice ends; the failed one says so.
    let doc = chrome(&t);
    let failed: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "E" && e["args"]["failed"] == true)
        .collect();
    assert_eq!(failed.len(), 4, "one failed reduce per rank");
    for e in &failed {
        assert_eq!(e["args"]["result"], "MPI_ERR_ROOT");
        assert_eq!(e["name"], "reduce(root 4) (world) failed: MPI_ERR_ROOT");
    }
    for tid in 0..4u64 {
        let on_track = |ph: &str| {
            doc["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == ph && e["tid"] == tid)
                .count()
        };
        assert_eq!((on_track("B"), on_track("E")), (2, 2), "rank {tid}");
    }
}
testgen!(a_failed_world_collective_records_its_leave_with_the_error_class);

// ---------------------------------------------------------------------------
// Communicators in the trace

/// Runs T_SPLIT on 8 ranks in blocks of 4, checks its results, returns the
/// trace.
fn split_trace(backend: Backend) -> Trace {
    let d = backend.device();
    let out = d.alloc_zeroed::<u32>(4 * RANKS as usize).unwrap();
    let rep = d
        .launch(&SEMANTICS_TRACE, &args(T_SPLIT, 4, &out), &spec().trace(512))
        .unwrap();
    let got = d.download(&out).unwrap();
    let n = RANKS;
    for r in 0..n {
        let i = 4 * r as usize;
        assert_eq!(got[i], (r + n - 2) % n, "rank {r}: left neighbour on its half");
        assert_eq!(
            got[i + 1],
            (r + n - 1) % n,
            "rank {r}: left neighbour on the world"
        );
        let half_sum: u32 = (0..n).filter(|q| q % 2 == r % 2).sum();
        assert_eq!(got[i + 2], half_sum, "rank {r}: all-reduce on its half");
        assert_eq!(
            got[i + 3],
            100 + 2 + r % 2,
            "rank {r}: broadcast from the half's rank 1"
        );
    }
    let t = rep.trace().cloned().unwrap();
    assert_eq!(t.dropped(), 0);
    t
}

fn sub_communicator_events_carry_their_context_and_spans_their_communicator(backend: Backend) {
    let t = split_trace(backend);
    for r in &t.ranks {
        let w = r.rank;
        let spans: Vec<_> = t.spans().into_iter().filter(|s| s.rank == w).collect();
        let kinds: Vec<SpanKind> = spans.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                SpanKind::Creation(Creation::Split),
                SpanKind::Collective(Call::AllReduce),
                SpanKind::Collective(Call::Broadcast),
                SpanKind::Collective(Call::Broadcast),
                SpanKind::Collective(Call::Barrier),
            ],
            "rank {w}"
        );
        let comms: Vec<u32> = spans.iter().map(|s| s.communicator).collect();
        assert_eq!(comms, [0, 1, 1, 1, 0], "rank {w}");
        assert!(
            spans.iter().all(|s| s.leave.is_some()),
            "rank {w}: every span left"
        );
        let errors: Vec<_> = spans.iter().map(|s| s.error).collect();
        assert_eq!(
            errors,
            [None, None, None, Some(ErrorClass::Root), None],
            "rank {w}"
        );
        assert_eq!(spans[0].created, Some(1));
        // The split's events: colour and key in, the new rank and size out.
        let (enter, leave) = (&r.events[spans[0].enter], &r.events[spans[0].leave.unwrap()]);
        assert_eq!(
            (enter.context, enter.peer, enter.tag),
            (1, (w % 2) as i32, w as i32)
        );
        assert_eq!((enter.bytes, enter.arg), (RANKS, w as u64));
        assert_eq!((leave.context, leave.peer, leave.bytes), (3, (w / 2) as i32, 4));
        assert_eq!(leave.tag, if w % 2 == 0 { 0 } else { 4 }, "first table entry");
        // The broadcast from the half's rank 1: its root in both numberings.
        let b = &r.events[spans[2].enter];
        assert_eq!((b.context, b.peer, b.tag, b.bytes), (3, 1, (2 + w % 2) as i32, 4));
        assert_eq!(b.arg >> 32, (w / 2) as u64, "its rank on the half");
        let bad = &r.events[spans[3].enter];
        assert_eq!((bad.peer, bad.tag), (4, -1), "a root out of range");
        assert_eq!(r.events[spans[3].leave.unwrap()].arg, ErrorClass::Root as u64);
        // Point-to-point events: world ranks as peers, the half's context
        // word (2) for its ring, the world's (0) for the world ring, the
        // collective words (1, 3) for the messages the collectives exchange.
        for e in &r.events {
            match e.kind().unwrap() {
                TraceKind::Sent | TraceKind::SendPosted if e.tag == 5 && e.context == 2 => {
                    assert_eq!(e.peer as u32, (w + 2) % RANKS)
                }
                TraceKind::Sent | TraceKind::SendPosted if e.tag == 5 && e.context == 0 => {
                    assert_eq!((e.context, e.peer as u32), (0, (w + 1) % RANKS))
                }
                TraceKind::Matched if e.tag == 5 && e.context == 2 => {
                    assert_eq!(e.peer as u32, (w + RANKS - 2) % RANKS)
                }
                TraceKind::Blocked => assert_eq!(e.context, NO_CONTEXT),
                _ => assert!(e.context <= 3, "rank {w}: {e:?}"),
            }
        }
    }
    // Messages link within their context: each match to the send of its
    // context, 8 on the halves' ring, 8 on the world's, and the
    // collectives' own.
    let links = t.messages();
    let count = |c: u16| links.iter().filter(|m| m.context == c && m.tag == 5).count();
    assert_eq!((count(2), count(0)), (8, 8));
    assert!(
        links.iter().any(|m| m.context == 3),
        "the half's collectives' messages"
    );
    assert!(
        links.iter().any(|m| m.context == 1),
        "the split's messages on the world"
    );
    for m in &links {
        let s = &t.ranks[m.source as usize].events[m.sent];
        let f = &t.ranks[m.dest as usize].events[m.matched];
        assert_eq!((s.context, f.context), (m.context, m.context));
        assert_eq!((s.peer as u32, f.peer as u32), (m.dest, m.source));
        if m.context >> 1 == 1 {
            assert_eq!(m.source % 2, m.dest % 2, "a half's message stays in its half");
        }
    }
}
testgen!(sub_communicator_events_carry_their_context_and_spans_their_communicator);

fn chrome_json_names_the_communicator_of_every_span_and_flow(backend: Backend) {
    let t = split_trace(backend);
    let doc = chrome(&t);
    let events = doc["traceEvents"].as_array().unwrap();
    for tid in 0..RANKS as u64 {
        let on_track: Vec<&Value> = events
            .iter()
            .filter(|e| e["tid"] == tid && (e["ph"] == "B" || e["ph"] == "E"))
            .collect();
        let names: Vec<&str> = on_track
            .iter()
            .filter(|e| e["ph"] == "B")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "split (world → comm 1)",
                "all_reduce (comm 1)",
                "broadcast(root 1) (comm 1)",
                "broadcast(root 4) (comm 1) failed: MPI_ERR_ROOT",
                "barrier (world)",
            ],
            "rank {tid}"
        );
        // Begin and end alternate: every span closed, none nested.
        let phases: Vec<&str> = on_track.iter().map(|e| e["ph"].as_str().unwrap()).collect();
        assert_eq!(phases, ["B", "E"].repeat(5), "rank {tid}");
        let comms: Vec<&str> = on_track
            .iter()
            .map(|e| e["args"]["communicator"].as_str().unwrap())
            .collect();
        assert_eq!(
            comms,
            [
                "world", "world", "comm 1", "comm 1", "comm 1", "comm 1", "comm 1", "comm 1", "world",
                "world"
            ],
            "rank {tid}"
        );
        let ends: Vec<(&Value, &Value)> = on_track
            .iter()
            .filter(|e| e["ph"] == "E")
            .map(|e| (&e["args"]["failed"], &e["args"]["result"]))
            .collect();
        assert_eq!(ends[3], (&Value::Bool(true), &Value::from("MPI_ERR_ROOT")));
        assert!(ends.iter().enumerate().all(|(i, e)| i == 3 || e.0 == false));
        let split_end = on_track[1];
        assert_eq!(split_end["args"]["created"], "comm 1");
        assert_eq!(split_end["args"]["new_size"], 4);
        let bcast = on_track[4];
        assert_eq!(bcast["args"]["root"], 1);
        assert_eq!(bcast["args"]["root_world_rank"], 2 + tid % 2);
        assert_eq!(bcast["args"]["communicator_rank"], tid / 2);
    }
    // One flow per linked message, each naming its communicator; the
    // halves' ring flows stay within a half and say "on comm 1".
    let links = t.messages();
    let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
    let finishes: HashMap<u64, &Value> = events
        .iter()
        .filter(|e| e["ph"] == "f")
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    assert_eq!((starts.len(), finishes.len()), (links.len(), links.len()));
    let mut ring_on_half = 0;
    for s in &starts {
        let f = finishes[&s["id"].as_u64().unwrap()];
        assert_eq!(s["args"], f["args"]);
        assert_eq!(s["tid"], s["args"]["source"]);
        assert_eq!(f["tid"], f["args"]["dest"]);
        let context = s["args"]["context"].as_u64().unwrap();
        let comm = if context >> 1 == 0 { "world" } else { "comm 1" };
        assert_eq!(s["args"]["communicator"], comm);
        if context == 2 && s["args"]["tag"] == 5 {
            ring_on_half += 1;
            assert!(
                s["name"].as_str().unwrap().ends_with(" on comm 1"),
                "{}",
                s["name"]
            );
            let (a, b) = (s["tid"].as_u64().unwrap(), f["tid"].as_u64().unwrap());
            assert_eq!(b, (a + 2) % RANKS as u64);
        }
        if context & 1 == 1 {
            assert!(
                s["name"].as_str().unwrap().ends_with(" collective)"),
                "{}",
                s["name"]
            );
        }
    }
    assert_eq!(ring_on_half, 8);
    // The request slices of the half's ring say where they ran.
    assert!(events
        .iter()
        .any(|e| e["ph"] == "b" && e["name"] == "send to 2 (tag 5) on comm 1" && e["tid"] == 0));
}
testgen!(chrome_json_names_the_communicator_of_every_span_and_flow);

// On the emulator alone: a deadlock (STUCK).
#[test]
fn a_rank_stopped_inside_a_collective_leaves_a_span_closed_as_unfinished() {
    let (_, t) = deadlocked(&STUCK, 64);
    for s in t.spans() {
        match s.kind {
            SpanKind::Creation(c) => {
                assert_eq!(c, Creation::Duplicate);
                assert_eq!((s.communicator, s.created, s.error), (0, Some(1), None));
            }
            SpanKind::Collective(c) => {
                assert_eq!((c, s.communicator), (Call::Barrier, 1));
                assert_ne!(s.rank, 0, "rank 0 skipped the barrier");
                assert_eq!(s.leave, None, "rank {} stopped inside", s.rank);
            }
        }
    }
    let doc = chrome(&t);
    let events = doc["traceEvents"].as_array().unwrap();
    for tid in 1..4u64 {
        let ends: Vec<&Value> = events
            .iter()
            .filter(|e| e["tid"] == tid && e["ph"] == "E")
            .collect();
        assert_eq!(ends.len(), 2, "rank {tid}: the duplicate's end and the barrier's");
        assert_eq!(ends[1]["args"]["kind"], "unfinished");
        assert_eq!(ends[1]["name"], "barrier (comm 1)");
    }
}

// ---------------------------------------------------------------------------
// One-sided operations in the trace (MPI 4.1 chapter 12)

const RMA_RANKS: u32 = 4;

/// Runs TRACED_PROGRAM (`gpu_mpi_check_kernels::rma::traced`) on 4 ranks
/// in blocks of 2 with `spec`'s trace, checks what every rank recorded,
/// returns the trace and the window id.
fn rma_trace(backend: Backend) -> (Trace, u32) {
    use gpu_mpi_check_kernels::rma::{RmaArgs, RMA_FAILS, TRACED_PROGRAM, TRACED_SLOTS};
    let d = backend.device();
    let n = RMA_RANKS;
    let slots = TRACED_SLOTS as usize;
    let out = d.alloc_zeroed::<u32>(n as usize * slots).unwrap();
    let data = d.alloc_zeroed::<u64>(1).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots: TRACED_SLOTS,
        part: 0,
        param: TRACED_PROGRAM,
        param2: 0,
    };
    let spec = WorldSpec::ranks(n)
        .block_dim(2)
        .windows(2)
        .window_bytes(64)
        .trace(256);
    let rep = d.launch(&RMA_FAILS, &args, &spec).unwrap();
    let got = d.download(&out).unwrap();
    let win = got[0];
    for r in 0..n {
        let prev = (r + n - 1) % n;
        let counter = if r == 0 { n } else { 0 };
        assert_eq!(
            got[r as usize * slots..][..slots],
            [win, r + 1, 1, 1, 7, r + 200, counter, prev + 200, 6, 7],
            "rank {r}: the values the operations moved"
        );
    }
    let t = rep.trace().cloned().unwrap();
    assert_eq!(t.dropped(), 0);
    (t, win)
}

/// An event's (kind, call, peer, tag, bytes, arg).
type Fields = (TraceKind, u8, i32, i32, u32, u64);

/// The one-sided events rank `r` of `n` records in TRACED_PROGRAM on
/// window `win`, in order (the steps of `traced`'s docs).
fn rma_events(r: u32, n: u32, win: u32) -> Vec<Fields> {
    use gpu_mpi::device::abi::trace::{RmaEpoch as E, RmaOp as O, RMA_OFFSET_BITS};
    let next = ((r + 1) % n) as i32;
    let w = win as i32;
    let op = |o: O, to: i32, bytes: u32, arg: u64| (TraceKind::RmaOperation, o as u8, to, w, bytes, arg);
    let open = |e: E, peer: i32, ranks: u32| (TraceKind::RmaEpochOpen, e as u8, peer, w, ranks, 0);
    let close = |e: E, peer: i32, ranks: u32| (TraceKind::RmaEpochClose, e as u8, peer, w, ranks, 0);
    let counter1 = 1u64 << RMA_OFFSET_BITS;
    vec![
        // 1: fence epochs; a put and a get of element 1 (byte 4).
        open(E::Fence, -2, n),
        op(O::Put, next, 4, 4),
        close(E::Fence, -2, n),
        open(E::Fence, -2, n),
        op(O::Get, next, 4, 4),
        close(E::Fence, -2, n),
        // 2: an exclusive lock of the next rank.
        open(E::LockExclusive, next, 1),
        op(O::Accumulate, next, 8, 8),
        op(O::GetAccumulate, next, 4, 8),
        close(E::LockExclusive, next, 1),
        // 3: a shared lock of rank 0.
        open(E::LockShared, 0, 1),
        op(O::FetchAndOp, 0, 4, 0),
        close(E::LockShared, 0, 1),
        // 4: lock_all; the rget records a get; the notified forms their
        // counter above the offset.
        open(E::LockAll, -2, n),
        op(O::CompareAndSwap, next, 4, 12),
        op(O::Get, next, 4, 12),
        op(O::PutNotify, next, 4, 4 | counter1),
        op(O::AccumulateNotify, next, 4, 8 | counter1),
        close(E::LockAll, -2, n),
        // 5: 2 notifications on counter 1.
        (TraceKind::RmaNotified, 0, -2, w, 2, 1),
        // 6: post and start, each a group of one.
        open(E::Exposure, -2, 1),
        open(E::Access, -2, 1),
        op(O::Get, next, 4, 4),
        close(E::Access, -2, 1),
        close(E::Exposure, -2, 1),
        // 7: the last fence opens an epoch, free closes it.
        open(E::Fence, -2, n),
        close(E::Fence, -2, n),
    ]
}

fn one_sided_operations_and_epochs_are_recorded_in_order(backend: Backend) {
    use gpu_mpi::device::abi::trace::{RmaEpoch, RmaOp};
    let (t, win) = rma_trace(backend);
    let n = RMA_RANKS;
    for r in &t.ranks {
        let got: Vec<Fields> = r
            .events
            .iter()
            .filter(|e| e.kind().is_some_and(|k| RMA_KINDS.contains(&k)))
            .map(|e| (e.kind().unwrap(), e.call, e.peer, e.tag, e.bytes, e.arg))
            .collect();
        assert_eq!(got, rma_events(r.rank, n, win), "rank {}", r.rank);
        // The window is the world's: its collective word.
        assert!(r
            .events
            .iter()
            .filter(|e| e.kind().is_some_and(|k| RMA_KINDS.contains(&k)))
            .all(|e| e.context == 1 && e.communicator() == Some(0)));
        // The four fences are collective spans too.
        let fences = t
            .spans()
            .iter()
            .filter(|s| s.rank == r.rank && s.kind == SpanKind::Collective(Call::WinFence))
            .count();
        assert_eq!(fences, 4, "rank {}", r.rank);
    }
    // Decoded: the operations from origin to target ...
    let ops = t.rma_operations();
    assert_eq!(ops.len(), 10 * n as usize);
    for op in &ops {
        let to = if op.op == RmaOp::FetchAndOp {
            0
        } else {
            (op.origin + 1) % n
        };
        assert_eq!(op.target, to, "{op:?}");
        assert_eq!(op.window, win);
        assert_eq!(op.counter.is_some(), op.op.notifies(), "{op:?}");
        let e = &t.ranks[op.origin as usize].events[op.event];
        assert_eq!(e.kind(), Some(TraceKind::RmaOperation));
    }
    let put_notify = ops
        .iter()
        .find(|o| o.origin == 2 && o.op == RmaOp::PutNotify)
        .unwrap();
    assert_eq!(
        (
            put_notify.target,
            put_notify.bytes,
            put_notify.offset,
            put_notify.counter
        ),
        (3, 4, 4, Some(1))
    );
    assert_eq!(
        put_notify.name(),
        format!("put_notify 2 -> 3 (win {win}, 4 B at 4, counter 1)")
    );
    // ... and the epochs, each closed.
    for r in 0..n {
        let epochs: Vec<_> = t.epochs().into_iter().filter(|s| s.rank == r).collect();
        let kinds: Vec<RmaEpoch> = epochs.iter().map(|s| s.epoch).collect();
        use RmaEpoch::*;
        assert_eq!(
            kinds,
            [
                Fence,
                Fence,
                LockExclusive,
                LockShared,
                LockAll,
                Exposure,
                Access,
                Fence
            ]
        );
        assert!(epochs.iter().all(|s| s.close.is_some() && s.window == win));
        assert_eq!(epochs[2].target, Some((r + 1) % n));
        assert_eq!(epochs[3].target, Some(0));
        assert_eq!(
            epochs[2].name(),
            format!("exclusive lock of {} (win {win})", (r + 1) % n)
        );
        // The access epoch nests in the exposure epoch.
        assert!(epochs[5].open < epochs[6].open && epochs[6].close < epochs[5].close);
    }
}
testgen!(one_sided_operations_and_epochs_are_recorded_in_order);

fn chrome_json_draws_one_sided_arrows_and_epoch_spans(backend: Backend) {
    let (t, win) = rma_trace(backend);
    let n = RMA_RANKS;
    let doc = chrome(&t);
    let events = doc["traceEvents"].as_array().unwrap();
    // One arrow per operation, from the origin's track to the target's, at
    // the time the origin carried it out.
    let mut starts: HashMap<u64, &Value> = HashMap::new();
    let mut finishes: HashMap<u64, &Value> = HashMap::new();
    for e in events.iter().filter(|e| e["cat"] == "rma") {
        match e["ph"].as_str().unwrap() {
            "s" => assert!(starts.insert(e["id"].as_u64().unwrap(), e).is_none()),
            "f" => assert!(finishes.insert(e["id"].as_u64().unwrap(), e).is_none()),
            _ => {}
        }
    }
    assert_eq!(starts.len(), 10 * n as usize);
    assert_eq!(finishes.len(), starts.len());
    // Flow ids after the messages': none shared with a message's flow.
    let message_ids: HashSet<u64> = events
        .iter()
        .filter(|e| e["cat"] == "message")
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    let mut arrows = Vec::new();
    for (id, s) in &starts {
        assert!(!message_ids.contains(id));
        let f = finishes[id];
        let a = &s["args"];
        assert_eq!(s["tid"], a["origin"]);
        assert_eq!(f["tid"], a["target"]);
        assert_eq!(f["bp"], "e");
        assert_eq!(s["ts"], f["ts"]);
        assert_eq!(s["name"], f["name"]);
        assert_eq!(f["args"], s["args"]);
        assert_eq!(a["window"], win);
        arrows.push((
            a["origin"].as_u64().unwrap(),
            a["target"].as_u64().unwrap(),
            a["operation"].as_str().unwrap().to_string(),
            a["bytes"].as_u64().unwrap(),
            a["offset"].as_u64().unwrap(),
        ));
    }
    arrows.sort();
    let mut expected: Vec<_> = t
        .rma_operations()
        .iter()
        .map(|o| {
            (
                o.origin as u64,
                o.target as u64,
                o.op.name().to_string(),
                o.bytes as u64,
                o.offset,
            )
        })
        .collect();
    expected.sort();
    assert_eq!(arrows, expected);
    let put = starts
        .values()
        .find(|s| s["tid"] == 0 && s["args"]["operation"] == "put")
        .unwrap();
    assert_eq!(put["name"], format!("put 0 -> 1 (win {win}, 4 B at 4)"));
    // On the target's track, a slice the arrow ends at.
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["tid"] == 1 && e["name"] == "put from 0" && e["ts"] == put["ts"]));
    // Epochs: B/E slices on each rank's track, in order, nested.
    for r in 0..n as u64 {
        let next = (r + 1) % n as u64;
        let spans: Vec<(String, String)> = events
            .iter()
            .filter(|e| e["cat"] == "epoch" && e["tid"] == r)
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().to_string(),
                    e["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let fence = format!("fence epoch (win {win})");
        let lock = format!("exclusive lock of {next} (win {win})");
        let shared = format!("shared lock of 0 (win {win})");
        let all = format!("lock_all (win {win})");
        let post = format!("exposure epoch (post) of 1 (win {win})");
        let start = format!("access epoch (start) of 1 (win {win})");
        let be = |name: &String| [("B".to_string(), name.clone()), ("E".to_string(), name.clone())];
        let mut want = Vec::new();
        for name in [&fence, &fence, &lock, &shared, &all] {
            want.extend(be(name));
        }
        want.push(("B".to_string(), post.clone()));
        want.extend(be(&start));
        want.push(("E".to_string(), post.clone()));
        want.extend(be(&fence));
        assert_eq!(spans, want, "rank {r}");
        // Every B on the track, collectives' too, is ended.
        let on_track = |ph: &str| events.iter().filter(|e| e["ph"] == ph && e["tid"] == r).count();
        assert_eq!(on_track("B"), on_track("E"), "rank {r}");
    }
    assert_eq!(doc["otherData"]["rma_operations"], 10 * n);
    // The page counts and draws them too (its data; the drawing needs a
    // browser: docs/tracing.md).
    let html = t.to_html("rma", None);
    assert!(html.contains(&format!("{} one-sided operations", 10 * n)));
    assert!(html.contains("\"kind\":\"epoch\""));
    assert!(html.contains(&format!("\"total_rma\":{}", 10 * n)));
}
testgen!(chrome_json_draws_one_sided_arrows_and_epoch_spans);

/// A window of a sub-communicator (RMA_SUBCOMM with SUB_COLOUR: the
/// halves of `r % 2`, ranked in decreasing world rank) beside one of the
/// world: its events name world ranks and carry its communicator's word.
fn one_sided_events_of_a_sub_communicator_window_name_world_ranks(backend: Backend) {
    use gpu_mpi::device::abi::trace::{RmaEpoch, RmaOp};
    use gpu_mpi_check_kernels::rma::{RmaArgs, RMA_SUBCOMM, SUB_COLOUR};
    let d = backend.device();
    let p = RANKS;
    let slots = 16;
    let out = d.alloc_zeroed::<u32>((p * slots) as usize).unwrap();
    let data = d.alloc_zeroed::<u64>(1).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots,
        part: 0,
        param: SUB_COLOUR,
        param2: 0,
    };
    let spec = spec().windows(5).window_bytes(64).trace(512);
    let t = d
        .launch(&RMA_SUBCOMM, &args, &spec)
        .unwrap()
        .trace()
        .cloned()
        .unwrap();
    assert_eq!(t.dropped(), 0);
    let ops = t.rma_operations();
    let epochs = t.epochs();
    for r in 0..p {
        // The members of r's half, in its window's rank order.
        let m: Vec<u32> = (0..p).rev().filter(|w| w % 2 == r % 2).collect();
        let me = m.iter().position(|&w| w == r).unwrap();
        let n = m.len();
        let (sub, world): (Vec<&gpu_mpi::RmaRecord>, Vec<_>) = ops
            .iter()
            .filter(|o| o.origin == r)
            .partition(|o| o.communicator != 0);
        let comm = sub[0].communicator;
        let win = sub[0].window;
        let fields = |v: &[&gpu_mpi::RmaRecord]| -> Vec<(RmaOp, u32, u32, u64)> {
            v.iter().map(|o| (o.op, o.target, o.bytes, o.offset)).collect()
        };
        let mut want = vec![
            (RmaOp::Put, m[(me + 1) % n], 8, 0),
            (RmaOp::Get, r, 8, 0),
            (RmaOp::Accumulate, m[0], 4, 8),
        ];
        if me == 0 {
            want.push((RmaOp::Get, r, 4, 8));
        }
        assert_eq!(fields(&sub), want, "rank {r}: the sub-window's operations");
        assert!(sub.iter().all(|o| (o.communicator, o.window) == (comm, win)));
        assert_eq!(
            fields(&world),
            [(RmaOp::Put, (r + 1) % p, 4, 0), (RmaOp::Get, r, 4, 0)],
            "rank {r}: the world window's"
        );
        assert!(world.iter().all(|o| o.window != win));
        // The events carry the sub-communicator's collective word.
        let e = &t.ranks[r as usize].events[sub[0].event];
        assert_eq!((e.context, e.communicator()), ((comm * 2 + 1) as u16, Some(comm)));
        // Its epochs: the lock of window rank 0 names m[0], every epoch closed.
        let sub_epochs: Vec<_> = epochs.iter().filter(|s| s.rank == r && s.window == win).collect();
        let kinds: Vec<(RmaEpoch, Option<u32>)> = sub_epochs.iter().map(|s| (s.epoch, s.target)).collect();
        let mut want = vec![
            (RmaEpoch::Fence, None),
            (RmaEpoch::Fence, None),
            (RmaEpoch::LockShared, Some(m[0])),
        ];
        if me == 0 {
            want.push((RmaEpoch::LockExclusive, Some(m[0])));
        }
        want.extend([(RmaEpoch::Fence, None), (RmaEpoch::Fence, None)]);
        assert_eq!(kinds, want, "rank {r}: the sub-window's epochs");
        assert!(sub_epochs.iter().all(|s| s.close.is_some()
            && s.communicator == comm
            && s.ranks == if s.epoch == RmaEpoch::Fence { n as u32 } else { 1 }));
        assert_eq!(
            sub_epochs[2].name(),
            format!("shared lock of {} (win {win}) on comm {comm}", m[0])
        );
    }
}
testgen!(one_sided_events_of_a_sub_communicator_window_name_world_ranks);

/// PSCW_GATHER on 4 ranks: rank 0's exposure epoch to the others ends in
/// a `test` that said done, its empty ones at once; the others' access
/// epochs hold their accumulate, and the put each tries outside its group
/// (refused) records nothing.
fn an_exposure_ended_by_test_and_a_refused_put_are_traced_as_they_happened(backend: Backend) {
    use gpu_mpi::device::abi::trace::{RmaEpoch as E, RmaOp};
    use gpu_mpi_check_kernels::rma_pscw::{PscwArgs, PSCW_GATHER};
    let d = backend.device();
    let ranks = 4;
    let out = d.alloc_zeroed::<u32>(2 * ranks as usize).unwrap();
    let args = PscwArgs {
        out: out.slice(),
        slots: 2,
        rounds: 0,
    };
    let spec = WorldSpec::ranks(ranks).windows(2).window_bytes(64).trace(128);
    let t = d
        .launch(&PSCW_GATHER, &args, &spec)
        .unwrap()
        .trace()
        .cloned()
        .unwrap();
    let got = d.download(&out).unwrap();
    assert_eq!(got[0], 1 + 2 + 3, "the accumulated ranks");
    assert_eq!(t.dropped(), 0);
    for r in &t.ranks {
        let got: Vec<(TraceKind, u8, i32, u32, u64)> = r
            .events
            .iter()
            .filter(|e| e.kind().is_some_and(|k| RMA_KINDS.contains(&k)))
            .map(|e| (e.kind().unwrap(), e.call, e.peer, e.bytes, e.arg))
            .collect();
        let (open, close) = (TraceKind::RmaEpochOpen, TraceKind::RmaEpochClose);
        let (exposure, access) = (E::Exposure as u8, E::Access as u8);
        let want = if r.rank == 0 {
            vec![
                (open, exposure, -2, ranks - 1, 0),
                (close, exposure, -2, ranks - 1, 0),
                (open, exposure, -2, 0, 0),
                (close, exposure, -2, 0, 0),
                (open, access, -2, 0, 0),
                (close, access, -2, 0, 0),
            ]
        } else {
            vec![
                (open, access, -2, 1, 0),
                (TraceKind::RmaOperation, RmaOp::Accumulate as u8, 0, 4, 0),
                (close, access, -2, 1, 0),
            ]
        };
        assert_eq!(got, want, "rank {}", r.rank);
    }
    // Rank 0's exposure closed after every origin's accumulate.
    let closed = t.epochs()[0].close.unwrap();
    let closed_at = t.ranks[0].events[closed].time_ns;
    for op in t.rma_operations() {
        assert!(
            t.ranks[op.origin as usize].events[op.event].time_ns <= closed_at,
            "{op:?}"
        );
    }
}
testgen!(an_exposure_ended_by_test_and_a_refused_put_are_traced_as_they_happened);

/// RMA_FLAVORS' dynamic window on 4 ranks: each rank's one put that
/// succeeds records the target's address (a dynamic window's
/// displacement, unit 1) as its offset; the refused puts record nothing.
fn a_put_to_a_dynamic_window_records_the_targets_address(backend: Backend) {
    use gpu_mpi::device::abi::trace::{RmaOp, RMA_OFFSET_BITS};
    use gpu_mpi_check_kernels::rma::RmaArgs;
    use gpu_mpi_check_kernels::rma_flavors::{FLAVOR_DYNAMIC, RING, RMA_FLAVORS};
    let d = backend.device();
    let (ranks, part) = (4u32, 4u32);
    let slots = 40;
    let data = d.alloc_zeroed::<u64>((ranks * part) as usize).unwrap();
    let out = d.alloc_zeroed::<u32>((ranks * slots) as usize).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots,
        part,
        param: FLAVOR_DYNAMIC,
        param2: 0,
    };
    let spec = WorldSpec::ranks(ranks).windows(2).window_bytes(64).trace(256);
    let t = d
        .launch(&RMA_FLAVORS, &args, &spec)
        .unwrap()
        .trace()
        .cloned()
        .unwrap();
    assert_eq!(t.dropped(), 0);
    let mask = (1u64 << RMA_OFFSET_BITS) - 1;
    let ops = t.rma_operations();
    for r in 0..ranks {
        let next = (r + 1) % ranks;
        let address = (data.slice().addr() + 8 * (next * part) as u64) & mask;
        let mine: Vec<_> = ops
            .iter()
            .filter(|o| o.origin == r)
            .map(|o| (o.op, o.target, o.bytes, o.offset))
            .collect();
        assert_eq!(mine, [(RmaOp::Put, next, 4 * RING as u32, address)], "rank {r}");
    }
}
testgen!(a_put_to_a_dynamic_window_records_the_targets_address);

fn the_html_page_draws_one_sided_arrows_and_epochs_in_chromium(backend: Backend) {
    let Some(browser) = chromium() else { return };
    let (t, win) = rma_trace(backend);
    let dir = tmp_dir(&format!("rma-page-{}", backend.name()));
    let html = t.write_files(&dir.join("rma.json"), "rma", None).unwrap();
    let shot = dir.join("rma.png");
    let dom = render(&browser, &html, &shot, &dir);
    // One dashed arrow per operation, one bar per epoch (8 per rank, all
    // closed).
    assert_eq!(count(&dom, "rma"), t.rma_operations().len());
    assert_eq!(count(&dom, "epoch"), 8 * RMA_RANKS as usize);
    assert_eq!(count(&dom, "epoch failed"), 0);
    assert!(dom.contains(&format!("put_notify · win {win} · 4 B")));
    assert!(is_png(&shot));
    let _ = std::fs::remove_dir_all(&dir);
}
testgen!(the_html_page_draws_one_sided_arrows_and_epochs_in_chromium);

// On the emulator alone: it needs the deadlock.
#[test]
fn a_lock_its_rank_returned_with_is_an_epoch_left_unfinished() {
    use gpu_mpi::device::abi::trace::RmaEpoch;
    use gpu_mpi_check_kernels::rma::{RmaArgs, DEADLOCK_LOCK_HELD, RMA_DEADLOCK};
    let d = Device::cpu();
    let out = d.alloc_zeroed::<u32>(1).unwrap();
    let data = d.alloc_zeroed::<u64>(1).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots: 0,
        part: 0,
        param: DEADLOCK_LOCK_HELD,
        param2: 0,
    };
    let run = d.launch_traced(
        &RMA_DEADLOCK,
        &args,
        &WorldSpec::ranks(4).windows(2).window_bytes(64).trace(64),
    );
    assert!(
        matches!(run.result, Err(HostError::Deadlock(_))),
        "{:?}",
        run.result
    );
    let t = run.trace.unwrap();
    // Rank 0 returned holding its own exclusive lock; the others never got it.
    let epochs = t.epochs();
    assert_eq!(epochs.len(), 1, "{epochs:?}");
    let e = epochs[0];
    assert_eq!(
        (e.rank, e.epoch, e.target, e.close),
        (0, RmaEpoch::LockExclusive, Some(0), None)
    );
    let doc = chrome(&t);
    let ends: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["ph"] == "E" && v["tid"] == 0 && v["name"] == e.name())
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["args"]["kind"], "unfinished");
    // It began when the lock was taken and ends at the rank's last event,
    // later by the time between the two.
    let begin = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["ph"] == "B" && v["tid"] == 0 && v["name"] == e.name())
        .unwrap();
    let events = &t.ranks[0].events;
    let held_us = (events.last().unwrap().time_ns - events[e.open].time_ns) as f64 / 1000.0;
    let span = ends[0]["ts"].as_f64().unwrap() - begin["ts"].as_f64().unwrap();
    assert!((span - held_us).abs() < 1e-3, "{span} µs, held {held_us} µs");
}
