//! Physical limits measured at the start of every run: what the hardware
//! (or the emulator) allows at best, printed beside the MPI numbers; and
//! the timing-model profile they imply (`gpu-mpi-bench limits
//! --write-profile`; docs/model.md, "Modelling your own card").

use super::p2p::native_one_way_ns;
use super::{fmt_num, median, ratio, Ctx, Row, Section};
use gpu_mpi::{Device, Profile, WorldSpec};
use gpu_mpi_bench_kernels::mpi::LIMIT_RESULTS;
use gpu_mpi_bench_kernels::native::{
    AtomicArgs, ChunkCopyArgs, CopyArgs, ElementCopyArgs, CHAIN_STRIDE, NATIVE_ATOMIC_CONTENTION,
    NATIVE_ATOMIC_LOAD_BATCH, NATIVE_ATOMIC_LOAD_CHAIN, NATIVE_ATOMIC_PING_PONG, NATIVE_ATOMIC_RMW,
    NATIVE_BLOCK_BARRIER, NATIVE_BLOCK_RMW, NATIVE_BLOCK_RMW_ACQ_REL, NATIVE_CHUNK_COPY, NATIVE_COPY,
    NATIVE_ELEMENT_COPY, NATIVE_EMPTY, NATIVE_MATCH_CHAIN, NATIVE_SHARED_LOAD_BATCH, NATIVE_SHUFFLE_CHAIN,
};

/// Words each lane copies in the element copies (`native_element_copy`:
/// the native all-gather's loop at 1,024 ranks).
const ELEMENTS: u32 = 1024;

/// Bytes of the one-way copy that one thread's copy bandwidth is taken from
/// (the size of docs/bench's 514 µs H100 measurement).
pub const THREAD_COPY_BYTES: u32 = 65536;

/// Bytes each rank copies in the concurrent byte copies.
pub const CHUNK_BYTES: u32 = 4096;

/// The concurrent byte copies measure the device's bandwidth only when
/// they take this many times one thread's copy of a chunk: below, each
/// thread's own rate may have been the bound.
const DEVICE_BOUND: f64 = 1.5;

/// Links of the load chain (`CHAIN_STRIDE` words apart: no two links
/// share a line).
const CHAIN_LINKS: usize = 16;
/// Link `k` leads to link `k + CHAIN_STEP` (modulo the links): one cycle
/// through all of them, the step being odd.
const CHAIN_STEP: usize = 5;

/// The limits of the device, as measured.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Device-to-device copy bandwidth, GB/s (bytes read plus bytes written).
    pub copy_gbps: f64,
    /// Bytes copied.
    pub copy_bytes: u64,
    /// Ranks of the copy kernel.
    pub copy_ranks: u32,
    /// Round trip of two ranks (different blocks) ping-ponging through one
    /// atomic flag, nanoseconds.
    pub atomic_round_trip_ns: f64,
    /// Latency of one atomic read-modify-write (dependent chain), nanoseconds.
    pub atomic_rmw_ns: f64,
    /// Latency of one relaxed atomic load in a chain of dependent ones
    /// (a pointer chase), nanoseconds.
    pub atomic_load_ns: f64,
    /// One batch of 8 independent relaxed atomic loads in a chain of such
    /// batches (`native_atomic_load_batch`), nanoseconds.
    pub atomic_load_batch_ns: f64,
    /// One warp shuffle in a chain of dependent ones, nanoseconds.
    pub shuffle_ns: f64,
    /// One `match.all.sync.b64` in a chain of dependent ones, nanoseconds
    /// (the model prices it as a shuffle).
    pub match_ns: f64,
    /// One block barrier that every thread of the block reaches at once,
    /// nanoseconds.
    pub block_barrier_ns: f64,
    /// One relaxed block-scope atomic add on a word of the block's shared
    /// memory in a chain of dependent ones, nanoseconds.
    pub block_rmw_ns: f64,
    /// The same with acquire-release ordering (two block-scope fences an
    /// add), nanoseconds.
    pub block_rmw_acq_rel_ns: f64,
    /// One batch of 8 independent 16-byte loads of the block's shared
    /// memory in a chain of such batches (`native_shared_load_batch`),
    /// nanoseconds.
    pub shared_load_batch_ns: f64,
    /// One element of a warp's volatile element copy, the lanes' elements
    /// side by side (coalesced), nanoseconds.
    pub element_coalesced_ns: f64,
    /// The same with the lanes' elements 1,024 words apart (32
    /// lines per warp access), nanoseconds.
    pub element_apart_ns: f64,
    /// Kernel time of an empty kernel on the run's world, nanoseconds.
    pub empty_kernel_ns: f64,
    /// Kernel time of every rank adding `contention_adds` times to one word,
    /// nanoseconds.
    pub contention_kernel_ns: f64,
    /// Ranks of that kernel.
    pub contention_ranks: u32,
    /// Adds per rank of that kernel.
    pub contention_adds: u32,
    /// One-way time of the native latency kernel for 0 bytes, rank 0 to a
    /// rank of another block, nanoseconds.
    pub one_way_empty_ns: f64,
    /// The same for [`THREAD_COPY_BYTES`]: one thread copies them.
    pub one_way_copy_ns: f64,
    /// Kernel time of every rank copying [`CHUNK_BYTES`] of its own with
    /// one byte copy, at once, nanoseconds.
    pub chunk_copy_kernel_ns: f64,
    /// Ranks of that kernel.
    pub chunk_ranks: u32,
}

impl Limits {
    /// One-way latency of the flag ping-pong: half the round trip.
    pub fn atomic_one_way_ns(&self) -> f64 {
        self.atomic_round_trip_ns / 2.0
    }

    /// Interval between two read-modify-writes of one word, nanoseconds:
    /// the contended kernel's time less the empty kernel's and the last
    /// add's own latency, over the adds after the first (at least 0: on
    /// the emulator's wall clock the difference is noise).
    pub fn rmw_interval_ns(&self) -> f64 {
        let adds = f64::from(self.contention_ranks) * f64::from(self.contention_adds) - 1.0;
        ratio(
            self.contention_kernel_ns - self.empty_kernel_ns - self.atomic_rmw_ns,
            adds,
        )
        .max(0.0)
    }

    /// One thread's copy bandwidth, GB/s: [`THREAD_COPY_BYTES`] over the
    /// difference of the two one-way times (NaN when it is not positive).
    pub fn thread_copy_gbps(&self) -> f64 {
        ratio(
            f64::from(THREAD_COPY_BYTES),
            self.one_way_copy_ns - self.one_way_empty_ns,
        )
    }

    /// Bytes read plus written per nanosecond (GB/s) by the concurrent byte
    /// copies: the chunks over the kernel's time less an empty kernel's.
    pub fn concurrent_copy_gbps(&self) -> f64 {
        let bytes = 2.0 * f64::from(self.chunk_ranks) * f64::from(CHUNK_BYTES);
        ratio(bytes, self.chunk_copy_kernel_ns - self.empty_kernel_ns)
    }

    /// Whether the concurrent copies were bound by the device rather than
    /// by each thread's own rate: they took `DEVICE_BOUND` times one
    /// thread's copy of a chunk or more.
    pub fn concurrent_copy_device_bound(&self) -> bool {
        let one = f64::from(CHUNK_BYTES) / self.thread_copy_gbps();
        self.chunk_copy_kernel_ns - self.empty_kernel_ns >= DEVICE_BOUND * one
    }
}

impl serde::Serialize for Limits {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Json {
            copy_gbps: f64,
            copy_bytes: u64,
            copy_ranks: u32,
            atomic_round_trip_ns: f64,
            atomic_one_way_ns: f64,
            atomic_rmw_ns: f64,
            atomic_load_ns: f64,
            atomic_load_batch_ns: f64,
            shuffle_ns: f64,
            match_ns: f64,
            block_barrier_ns: f64,
            block_rmw_ns: f64,
            block_rmw_acq_rel_ns: f64,
            shared_load_batch_ns: f64,
            element_coalesced_ns: f64,
            element_apart_ns: f64,
            empty_kernel_ns: f64,
            contention_kernel_ns: f64,
            contention_ranks: u32,
            contention_adds: u32,
            rmw_interval_ns: f64,
            one_way_empty_ns: f64,
            one_way_copy_ns: f64,
            thread_copy_bytes: u32,
            thread_copy_gbps: f64,
            chunk_copy_kernel_ns: f64,
            chunk_ranks: u32,
            chunk_bytes: u32,
            concurrent_copy_gbps: f64,
            concurrent_copy_device_bound: bool,
        }
        Json {
            copy_gbps: self.copy_gbps,
            copy_bytes: self.copy_bytes,
            copy_ranks: self.copy_ranks,
            atomic_round_trip_ns: self.atomic_round_trip_ns,
            atomic_one_way_ns: self.atomic_one_way_ns(),
            atomic_rmw_ns: self.atomic_rmw_ns,
            atomic_load_ns: self.atomic_load_ns,
            atomic_load_batch_ns: self.atomic_load_batch_ns,
            shuffle_ns: self.shuffle_ns,
            match_ns: self.match_ns,
            block_barrier_ns: self.block_barrier_ns,
            block_rmw_ns: self.block_rmw_ns,
            block_rmw_acq_rel_ns: self.block_rmw_acq_rel_ns,
            shared_load_batch_ns: self.shared_load_batch_ns,
            element_coalesced_ns: self.element_coalesced_ns,
            element_apart_ns: self.element_apart_ns,
            empty_kernel_ns: self.empty_kernel_ns,
            contention_kernel_ns: self.contention_kernel_ns,
            contention_ranks: self.contention_ranks,
            contention_adds: self.contention_adds,
            rmw_interval_ns: self.rmw_interval_ns(),
            one_way_empty_ns: self.one_way_empty_ns,
            one_way_copy_ns: self.one_way_copy_ns,
            thread_copy_bytes: THREAD_COPY_BYTES,
            thread_copy_gbps: self.thread_copy_gbps(),
            chunk_copy_kernel_ns: self.chunk_copy_kernel_ns,
            chunk_ranks: self.chunk_ranks,
            chunk_bytes: CHUNK_BYTES,
            concurrent_copy_gbps: self.concurrent_copy_gbps(),
            concurrent_copy_device_bound: self.concurrent_copy_device_bound(),
        }
        .serialize(s)
    }
}

/// A profile written from measured limits ([`Limits::profile`]).
#[derive(Clone, Debug)]
pub struct WrittenProfile {
    /// The profile.
    pub profile: Profile,
    /// Its file: a comment per value saying where it came from.
    pub text: String,
    /// The keys whose values were measured; the others are the base's.
    pub measured: Vec<&'static str>,
}

impl Limits {
    /// The timing-model profile these limits imply (docs/model.md,
    /// "Modelling your own card"). Each parameter a limit measures is the
    /// limit with the model's other costs of that kernel taken away (the
    /// costs of host/src/cpu/model.rs, inverted); what it needs that no limit
    /// measures, and every other parameter, comes from `base` (named
    /// `base_label` in the comments). `header`: comment lines saying where
    /// the measurements came from. A derived value the file format refuses
    /// (negative, not finite) falls back to the base's, and says so.
    pub fn profile(&self, name: &str, base: &Profile, base_label: &str, header: &[String]) -> WrittenProfile {
        let b = base;
        let load = self.atomic_load_ns - b.issue_ns;
        let derived: [(&'static str, f64, String); 14] = [
            (
                "load_ns",
                load,
                format!(
                    "a chain of dependent relaxed atomic loads, {} ns each, less issue_ns",
                    fmt_num(self.atomic_load_ns)
                ),
            ),
            (
                "visible_ns",
                self.atomic_one_way_ns() - load - b.issue_ns - b.release_ns - b.store_ns - b.acquire_ns,
                format!(
                    "the atomic flag's one-way time, {} ns, less load_ns and the base's issue, release, \
                     store and acquire costs",
                    fmt_num(self.atomic_one_way_ns())
                ),
            ),
            (
                "rmw_ns",
                self.atomic_rmw_ns - b.issue_ns,
                format!(
                    "dependent fetch_add, {} ns each, less issue_ns",
                    fmt_num(self.atomic_rmw_ns)
                ),
            ),
            (
                "rmw_interval_ns",
                self.rmw_interval_ns(),
                format!(
                    "{} ranks x {} fetch_add on one word, {} ns, less an empty kernel ({} ns) and one fetch_add, \
                     over the adds after the first",
                    self.contention_ranks,
                    self.contention_adds,
                    fmt_num(self.contention_kernel_ns),
                    fmt_num(self.empty_kernel_ns)
                ),
            ),
            (
                "copy_thread_gbps",
                ratio(
                    f64::from(THREAD_COPY_BYTES),
                    self.one_way_copy_ns - self.one_way_empty_ns - load,
                ),
                format!(
                    "{} bytes one way ({} ns) less 0 bytes one way ({} ns), native latency kernel, less load_ns",
                    THREAD_COPY_BYTES,
                    fmt_num(self.one_way_copy_ns),
                    fmt_num(self.one_way_empty_ns)
                ),
            ),
            (
                "copy_device_gbps",
                if self.concurrent_copy_device_bound() {
                    self.concurrent_copy_gbps()
                } else {
                    f64::NAN
                },
                format!(
                    "{} ranks each copying {} bytes with one byte copy at once, read + written, \
                     over {} ns less an empty kernel{}",
                    self.chunk_ranks,
                    CHUNK_BYTES,
                    fmt_num(self.chunk_copy_kernel_ns),
                    if self.concurrent_copy_device_bound() {
                        String::new()
                    } else {
                        format!(
                            ": bound by each thread's copy, not the device ({} GB/s): more ranks measure it",
                            fmt_num(self.concurrent_copy_gbps())
                        )
                    }
                ),
            ),
            (
                "warp_op_ns",
                self.shuffle_ns,
                format!(
                    "a chain of dependent warp shuffles, {} ns each",
                    fmt_num(self.shuffle_ns)
                ),
            ),
            (
                "block_barrier_ns",
                self.block_barrier_ns,
                format!(
                    "block barriers that every thread reaches at once, {} ns each",
                    fmt_num(self.block_barrier_ns)
                ),
            ),
            (
                "shared_ns",
                self.block_rmw_ns - b.issue_ns,
                format!(
                    "a chain of dependent relaxed block-scope adds on a word of the block's shared memory, \
                     {} ns each, less issue_ns",
                    fmt_num(self.block_rmw_ns)
                ),
            ),
            (
                "cta_fence_ns",
                (self.block_rmw_acq_rel_ns - self.block_rmw_ns) / 2.0,
                format!(
                    "the same chain acquire-release, {} ns an add, less the relaxed one, over its two fences",
                    fmt_num(self.block_rmw_acq_rel_ns)
                ),
            ),
            // Per element the lanes-apart copy's load and store each touch
            // 32 lines, the side-by-side copy's 2 (32 lanes x 8 bytes):
            // 2 x 30 further lines between them.
            (
                "line_ns",
                (self.element_apart_ns - self.element_coalesced_ns) / 60.0,
                format!(
                    "a warp's element copy with its lanes {} KiB apart, {} ns per element, less the same side by side, \
                     {} ns, over the 60 further lines of its load and store",
                    ELEMENTS * 8 / 1024,
                    fmt_num(self.element_apart_ns),
                    fmt_num(self.element_coalesced_ns)
                ),
            ),
            (
                "launch_ns",
                f64::NAN,
                String::new(),
            ),
            // The model ends a batch of 8 `7 * batch_load_ns` after one
            // load of the chain when `batch_load_ns >= issue_ns`; below,
            // the loads' issue bounds it and this gives `issue_ns`, which
            // models the batch as well.
            (
                "batch_load_ns",
                (self.atomic_load_batch_ns - self.atomic_load_ns) / 7.0,
                format!(
                    "a chain of batches of 8 independent relaxed atomic loads, {} ns each, less one load \
                     of the chain ({} ns), over the 7 loads after the first",
                    fmt_num(self.atomic_load_batch_ns),
                    fmt_num(self.atomic_load_ns)
                ),
            ),
            // As `batch_load_ns`, in the block's shared memory: the chain's
            // first load costs what the block-scope add does (`shared_ns`
            // and one issue).
            (
                "shared_batch_load_ns",
                (self.shared_load_batch_ns - self.block_rmw_ns) / 7.0,
                format!(
                    "a chain of batches of 8 independent loads of the block's shared memory, {} ns each, less \
                     one block-scope add ({} ns), over the 7 loads after the first",
                    fmt_num(self.shared_load_batch_ns),
                    fmt_num(self.block_rmw_ns)
                ),
            ),
        ];
        // An empty kernel's time is the launch plus its ranks' own entry
        // and exit, which the model charges apart: take away what the model
        // gives them with the other parameters as written.
        let mut derived = derived;
        let written: Vec<(&str, f64)> = derived
            .iter()
            .filter(|(key, v, _)| *key != "launch_ns" && valid(key, *v))
            .map(|(key, v, _)| (*key, *v))
            .chain([("launch_ns", 0.0)])
            .collect();
        let own = with_values(b, &written).and_then(|p| modelled_kernel_ns(p, self.contention_ranks));
        let launch = derived
            .iter()
            .position(|(k, _, _)| *k == "launch_ns")
            .expect("launch_ns is derived");
        derived[launch] = (
            "launch_ns",
            own.map_or(f64::NAN, |own| self.empty_kernel_ns - own),
            match own {
                Some(own) => format!(
                    "an empty kernel's kernel time on the run's world, {} ns, less its ranks' own modelled time, {} ns",
                    fmt_num(self.empty_kernel_ns),
                    fmt_num(own)
                ),
                None => "an empty kernel could not be modelled on the emulator".to_string(),
            },
        );
        let mut text = String::new();
        for line in header {
            text.push_str(&format!("# {line}\n"));
        }
        text.push_str(&format!(
            "# \"measured\": this run's limit with the model's other costs of its kernel taken away;\n\
             # \"base\": not measured by `gpu-mpi-bench limits`, the value of the base profile {base_label} ({}).\n",
            clean(&b.name)
        ));
        text.push_str(&format!("name = \"{}\"\n\n", clean(name)));
        let mut measured = Vec::new();
        for (key, base_value) in b.entries() {
            let line = match derived.iter().find(|(k, _, _)| *k == key) {
                Some((_, v, how)) if valid(key, *v) => {
                    measured.push(key);
                    format!("{key} = {}  # measured: {how}", fmt_num(*v))
                }
                Some((_, v, how)) => format!(
                    "{key} = {base_value}  # base {base_label}: the measurement gave {} ({how})",
                    fmt_num(*v)
                ),
                None => format!("{key} = {base_value}  # base {base_label}"),
            };
            text.push_str(&line);
            text.push('\n');
        }
        let profile = Profile::parse(&text).expect("a written profile parses: its values are checked");
        WrittenProfile {
            profile,
            text,
            measured,
        }
    }
}

/// Whether `value` is one the profile format takes for `key` (and
/// `fmt_num` writes as a number).
/// `base` with the values of `over` (keys of the file format).
fn with_values(base: &Profile, over: &[(&str, f64)]) -> Option<Profile> {
    let mut text = format!("name = \"{}\"\n", clean(&base.name));
    for (key, v) in base.entries() {
        let v = over.iter().find(|(k, _)| *k == key).map_or(v, |(_, v)| *v);
        text.push_str(&format!("{key} = {v}\n"));
    }
    Profile::parse(&text).ok()
}

/// The modelled kernel time of an empty kernel on `ranks` ranks, in
/// nanoseconds, with `profile` (whose `launch_ns` is 0: what the ranks'
/// own entry and exit cost), or `None` if the emulator cannot run it.
fn modelled_kernel_ns(profile: Profile, ranks: u32) -> Option<f64> {
    let device = Device::cpu();
    let spec = WorldSpec::ranks(ranks).model(profile.leak());
    let report = device.launch(&NATIVE_EMPTY, &0u32, &spec).ok()?;
    report.model.map(|m| m.kernel_ns())
}

fn valid(key: &str, value: f64) -> bool {
    value.is_finite()
        && if key.ends_with("_gbps") {
            value > 0.0
        } else {
            value >= 0.0
        }
}

/// `s` without the characters the profile format gives a meaning.
fn clean(s: &str) -> String {
    s.replace(['#', '"', '\n'], " ")
}

/// World of the two-rank measurements: up to 4 blocks, so that "another
/// block" is another SM on a GPU (blocks go to SMs in turn).
pub(crate) fn pair_world(ctx: &Ctx) -> (u32, u32) {
    let n = ctx.ranks.min(1024);
    let block_dim = if n >= 512 { 256 } else { (n / 2).max(1) };
    let n = n / block_dim * block_dim;
    (n, block_dim)
}

fn pattern_word(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555
}

pub(crate) fn measure(ctx: &mut Ctx) -> Result<(Limits, Section), String> {
    let reps = ctx.preset.reps;
    // Copy bandwidth: a large buffer, every rank of the run.
    let words: usize = if ctx.is_gpu() {
        ctx.preset.pick(32 << 20, 8 << 20)
    } else {
        ctx.preset.pick(4 << 20, 1 << 20)
    };
    let host: Vec<u64> = (0..words).map(pattern_word).collect();
    let src = ctx.device.upload(&host).map_err(|e| format!("upload: {e}"))?;
    let dst = ctx.alloc::<u64>(words)?;
    let args = CopyArgs {
        src: src.slice(),
        dst: dst.slice(),
    };
    let copy_ranks = ctx.ranks;
    let spec = ctx.world(copy_ranks, None);
    let mut times = Vec::new();
    for _ in 0..reps {
        let t = ctx.launch(&NATIVE_COPY, &args, &spec)?;
        times.push(t.report.kernel_time().as_secs_f64() * 1e9);
    }
    if ctx.download(&dst)? != host {
        return Err("native_copy: the destination differs from the source".into());
    }
    ctx.checked();
    drop(host);
    let bytes = (words * 8) as u64;
    let copy_gbps = 2.0 * bytes as f64 / median(&times);

    // Atomic flag ping-pong between rank 0 and a rank of another block.
    let (n, block_dim) = pair_world(ctx);
    let peer = block_dim * (n / block_dim / 2).max(1);
    let (warmup, iterations) = ctx.preset.loops((100, 10_000), (10, 200));
    let mut flags = ctx.alloc::<u32>(16)?;
    let mut out = ctx.alloc::<u64>(LIMIT_RESULTS)?;
    let mut round_trips = Vec::new();
    let mut rmws = Vec::new();
    let mut loads = Vec::new();
    let mut batches = Vec::new();
    // The links, then 7 lines of zeros that the batches read past the
    // last link.
    let links: Vec<u32> = (0..(CHAIN_LINKS + 7) * CHAIN_STRIDE)
        .map(|w| match w % CHAIN_STRIDE {
            0 if w < CHAIN_LINKS * CHAIN_STRIDE => {
                ((w / CHAIN_STRIDE + CHAIN_STEP) % CHAIN_LINKS * CHAIN_STRIDE) as u32
            }
            _ => 0,
        })
        .collect();
    let chain = ctx.device.upload(&links).map_err(|e| format!("upload: {e}"))?;
    for _ in 0..reps {
        ctx.zero(&mut flags)?;
        ctx.zero(&mut out)?;
        let args = AtomicArgs {
            peer,
            warmup,
            iterations,
            reserved: 0,
            flags: flags.slice(),
            out: out.slice(),
        };
        ctx.launch(&NATIVE_ATOMIC_PING_PONG, &args, &ctx.world(n, Some(block_dim)))?;
        let o = ctx.download(&out)?;
        if o[1] != 0 || o[2] != (warmup + iterations) as u64 {
            return Err(format!(
                "native_atomic_ping_pong: flag check failed ({} errors, {} of {} rounds)",
                o[1],
                o[2],
                warmup + iterations
            ));
        }
        ctx.checked();
        round_trips.push(o[0] as f64 / iterations as f64);

        ctx.zero(&mut flags)?;
        ctx.zero(&mut out)?;
        ctx.launch(&NATIVE_ATOMIC_RMW, &args, &ctx.world(n, Some(block_dim)))?;
        let o = ctx.download(&out)?;
        if o[1] != 0 || o[2] != (warmup + iterations) as u64 {
            return Err(format!(
                "native_atomic_rmw: the counter is wrong ({} errors)",
                o[1]
            ));
        }
        ctx.checked();
        rmws.push(o[0] as f64 / iterations as f64);

        // A chain of dependent loads through the links, then the same
        // chain a batch of 8 loads per link: each must end on the link
        // the host expects.
        let args = AtomicArgs {
            flags: chain.slice(),
            ..args
        };
        let total = (warmup + iterations) as usize;
        let last = (total * CHAIN_STEP % CHAIN_LINKS * CHAIN_STRIDE) as u64;
        for (kernel, times) in [
            (&NATIVE_ATOMIC_LOAD_CHAIN, &mut loads),
            (&NATIVE_ATOMIC_LOAD_BATCH, &mut batches),
        ] {
            ctx.zero(&mut out)?;
            ctx.launch(kernel, &args, &ctx.world(n, Some(block_dim)))?;
            let o = ctx.download(&out)?;
            if o[2] != total as u64 || o[3] != last {
                return Err(format!(
                    "{}: ended at word {} after {} steps, expected word {last} after {total}",
                    kernel.name, o[3], o[2]
                ));
            }
            ctx.checked();
            times.push(o[0] as f64 / iterations as f64);
        }
    }

    // A chain of shuffles and a run of block barriers in block 0, and a
    // warp's element copies, coalesced and not. The shuffles and the copies
    // run on one full warp, whatever the run's world.
    let warp = ctx.world(32, Some(32));
    let (mut shuffles, mut matches, mut barriers) = (Vec::new(), Vec::new(), Vec::new());
    let (mut block_rmws, mut block_acq_rels, mut shared_batches) = (Vec::new(), Vec::new(), Vec::new());
    let (mut coalesced, mut apart) = (Vec::new(), Vec::new());
    let copy_words = 32 * ELEMENTS as usize;
    let host: Vec<u64> = (0..copy_words).map(pattern_word).collect();
    let esrc = ctx.device.upload(&host).map_err(|e| format!("upload: {e}"))?;
    let mut edst = ctx.alloc::<u64>(copy_words)?;
    for _ in 0..reps {
        let args = AtomicArgs {
            peer: 0,
            warmup,
            iterations,
            reserved: 0,
            flags: flags.slice(),
            out: out.slice(),
        };
        let total = (warmup + iterations) as u64;
        for (kernel, world, times) in [
            (&NATIVE_SHUFFLE_CHAIN, &warp, &mut shuffles),
            (&NATIVE_MATCH_CHAIN, &warp, &mut matches),
            (
                &NATIVE_BLOCK_BARRIER,
                &ctx.world(n, Some(block_dim)),
                &mut barriers,
            ),
            (&NATIVE_BLOCK_RMW, &warp, &mut block_rmws),
            (&NATIVE_BLOCK_RMW_ACQ_REL, &warp, &mut block_acq_rels),
            (&NATIVE_SHARED_LOAD_BATCH, &warp, &mut shared_batches),
        ] {
            ctx.zero(&mut out)?;
            ctx.launch(kernel, &args, world)?;
            let o = ctx.download(&out)?;
            if o[1] != 0 || o[2] != total {
                return Err(format!(
                    "{}: check failed ({} errors, {} of {total} rounds)",
                    kernel.name, o[1], o[2]
                ));
            }
            ctx.checked();
            times.push(o[0] as f64 / iterations as f64);
        }
        for (spread, times) in [(0, &mut coalesced), (1, &mut apart)] {
            ctx.zero(&mut out)?;
            ctx.zero(&mut edst)?;
            let args = ElementCopyArgs {
                elements: ELEMENTS,
                apart: spread,
                src: esrc.slice(),
                dst: edst.slice(),
                out: out.slice(),
            };
            ctx.launch(&NATIVE_ELEMENT_COPY, &args, &warp)?;
            let o = ctx.download(&out)?;
            if ctx.download(&edst)? != host || o[2] != u64::from(ELEMENTS) {
                return Err("native_element_copy: the destination differs from the source".into());
            }
            ctx.checked();
            times.push(o[0] as f64 / f64::from(ELEMENTS));
        }
    }
    drop((host, esrc, edst));

    // Every rank adds to one word; an empty kernel on the same world.
    let world = ctx.world(ctx.ranks, None);
    let adds = ctx.preset.loops((0, 8), (0, 4)).1;
    let (mut contended, mut empty) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        ctx.zero(&mut flags)?;
        let args = AtomicArgs {
            peer: 0,
            warmup: 0,
            iterations: adds,
            reserved: 0,
            flags: flags.slice(),
            out: out.slice(),
        };
        let t = ctx.launch(&NATIVE_ATOMIC_CONTENTION, &args, &world)?;
        let count = ctx.download(&flags)?[0];
        if u64::from(count) != u64::from(ctx.ranks) * u64::from(adds) {
            return Err(format!(
                "native_atomic_contention: the word counts {count}, expected {} ranks x {adds}",
                ctx.ranks
            ));
        }
        ctx.checked();
        contended.push(t.report.kernel_time().as_secs_f64() * 1e9);
        let t = ctx.launch(&NATIVE_EMPTY, &0u32, &world)?;
        empty.push(t.report.kernel_time().as_secs_f64() * 1e9);
    }

    // Every rank copies a chunk of its own, at once.
    let chunks = ctx.ranks as usize * CHUNK_BYTES as usize;
    let host: Vec<u8> = (0..chunks).map(|i| (i * 131 + 7) as u8).collect();
    let csrc = ctx.device.upload(&host).map_err(|e| format!("upload: {e}"))?;
    let cdst = ctx.alloc::<u8>(chunks)?;
    let args = ChunkCopyArgs {
        chunk: CHUNK_BYTES,
        reserved: 0,
        src: csrc.slice(),
        dst: cdst.slice(),
    };
    let mut chunk_times = Vec::new();
    for _ in 0..reps {
        let t = ctx.launch(&NATIVE_CHUNK_COPY, &args, &world)?;
        chunk_times.push(t.report.kernel_time().as_secs_f64() * 1e9);
    }
    if ctx.download(&cdst)? != host {
        return Err("native_chunk_copy: the destination differs from the source".into());
    }
    ctx.checked();
    drop((host, csrc, cdst));

    // One thread's copy: the native one-way time of a large message less
    // that of an empty one.
    let copy_loops = ctx.preset.loops((10, 100), (2, 10));
    let one_way_empty_ns = native_one_way_ns(ctx, 0, copy_loops)?;
    let one_way_copy_ns = native_one_way_ns(ctx, THREAD_COPY_BYTES, copy_loops)?;

    let limits = Limits {
        copy_gbps,
        copy_bytes: bytes,
        copy_ranks,
        atomic_round_trip_ns: median(&round_trips),
        atomic_rmw_ns: median(&rmws),
        atomic_load_ns: median(&loads),
        atomic_load_batch_ns: median(&batches),
        shuffle_ns: median(&shuffles),
        match_ns: median(&matches),
        block_barrier_ns: median(&barriers),
        block_rmw_ns: median(&block_rmws),
        block_rmw_acq_rel_ns: median(&block_acq_rels),
        shared_load_batch_ns: median(&shared_batches),
        element_coalesced_ns: median(&coalesced),
        element_apart_ns: median(&apart),
        empty_kernel_ns: median(&empty),
        contention_kernel_ns: median(&contended),
        contention_ranks: ctx.ranks,
        contention_adds: adds,
        one_way_empty_ns,
        one_way_copy_ns,
        chunk_copy_kernel_ns: median(&chunk_times),
        chunk_ranks: ctx.ranks,
    };
    let row = |what: &str, value: f64, unit: &str, how: String| -> Row {
        vec![
            ("limit", what.into()),
            ("value", value.into()),
            ("unit", unit.into()),
            ("how", how.into()),
        ]
    };
    let section = Section {
        suite: "limits",
        title: "physical limits (native kernels, same run)".into(),
        columns: vec![
            ("limit", "limit"),
            ("value", "value"),
            ("unit", "unit"),
            ("how", "how"),
        ],
        rows: vec![
            row(
                "copy bandwidth",
                copy_gbps,
                "GB/s",
                format!(
                    "{} MiB read + written by {copy_ranks} ranks, 8-byte words",
                    bytes >> 20
                ),
            ),
            row(
                "atomic flag round trip",
                limits.atomic_round_trip_ns / 1e3,
                "us",
                format!("rank 0 <-> rank {peer} (another block), {iterations} rounds"),
            ),
            row(
                "atomic flag one-way",
                limits.atomic_one_way_ns() / 1e3,
                "us",
                "half the round trip".into(),
            ),
            row(
                "atomic RMW latency",
                limits.atomic_rmw_ns / 1e3,
                "us",
                format!("{iterations} dependent fetch_add by one rank"),
            ),
            row(
                "atomic load latency",
                limits.atomic_load_ns / 1e3,
                "us",
                format!("{iterations} dependent relaxed atomic loads by one rank (a pointer chase)"),
            ),
            row(
                "batch of 8 loads",
                limits.atomic_load_batch_ns / 1e3,
                "us",
                format!("{iterations} dependent batches of 8 independent relaxed atomic loads by one rank"),
            ),
            row(
                "batch / load latency",
                limits.atomic_load_batch_ns / limits.atomic_load_ns,
                "x",
                "1: the 8 loads fully overlap; 8: they are a chain (the model: batch_load_ns per load after the first)"
                    .into(),
            ),
            row(
                "warp shuffle",
                limits.shuffle_ns,
                "ns",
                format!("{iterations} dependent shfl.sync by one warp"),
            ),
            row(
                "warp match",
                limits.match_ns,
                "ns",
                format!("{iterations} dependent match.all.sync.b64 by one warp (modelled as a shuffle)"),
            ),
            row(
                "block barrier",
                limits.block_barrier_ns,
                "ns",
                format!("{iterations} bar.sync by a block of {block_dim}, every thread arriving at once"),
            ),
            row(
                "block-scope atomic",
                limits.block_rmw_ns,
                "ns",
                format!("{iterations} dependent relaxed block-scope fetch_add on the block's shared memory by one rank"),
            ),
            row(
                "  acquire-release",
                limits.block_rmw_acq_rel_ns,
                "ns",
                "the same, acquire-release: two block-scope fences an add".into(),
            ),
            row(
                "shared batch of 8 loads",
                limits.shared_load_batch_ns,
                "ns",
                format!("{iterations} dependent batches of 8 independent 16-byte loads of the block's shared memory by one rank"),
            ),
            row(
                "element copy, coalesced",
                limits.element_coalesced_ns,
                "ns",
                format!("one warp, {ELEMENTS} elements per lane, each a volatile load and the store of its value; lanes side by side"),
            ),
            row(
                "element copy, lanes apart",
                limits.element_apart_ns,
                "ns",
                format!("the same with the lanes' elements {} KiB apart (32 lines per warp access)", ELEMENTS * 8 / 1024),
            ),
            row(
                "RMW interval, one word",
                limits.rmw_interval_ns(),
                "ns",
                format!(
                    "{} ranks x {adds} fetch_add on one word, less an empty kernel and one fetch_add",
                    ctx.ranks
                ),
            ),
            row(
                "empty kernel",
                limits.empty_kernel_ns / 1e3,
                "us",
                format!("kernel time on {} ranks", ctx.ranks),
            ),
            row(
                "concurrent byte copies",
                limits.concurrent_copy_gbps(),
                "GB/s",
                format!(
                    "{} ranks copy {} KiB each at once, read + written, less an empty kernel",
                    ctx.ranks,
                    CHUNK_BYTES >> 10,
                ),
            ),
            row(
                "one thread's copy",
                limits.thread_copy_gbps(),
                "GB/s",
                format!(
                    "{} KiB one-way less 0 B one-way, rank 0 -> rank {peer}, {} rounds",
                    THREAD_COPY_BYTES >> 10,
                    copy_loops.1
                ),
            ),
        ],
        notes: if limits.concurrent_copy_device_bound() {
            vec![]
        } else {
            vec![format!(
                "concurrent byte copies: bound by each thread's copy ({} ranks are too few to fill the device)",
                ctx.ranks
            )]
        },
    };
    Ok((limits, section))
}
