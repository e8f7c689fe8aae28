//! Physical limits measured at the start of every run: what the hardware
//! (or the emulator) allows at best, printed beside the MPI numbers.

use super::{median, Ctx, Row, Section};
use gpu_mpi_bench_kernels::mpi::LIMIT_RESULTS;
use gpu_mpi_bench_kernels::native::{
    AtomicArgs, CopyArgs, NATIVE_ATOMIC_PING_PONG, NATIVE_ATOMIC_RMW, NATIVE_COPY,
};

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
}

impl Limits {
    /// One-way latency of the flag ping-pong: half the round trip.
    pub fn atomic_one_way_ns(&self) -> f64 {
        self.atomic_round_trip_ns / 2.0
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
        }
        Json {
            copy_gbps: self.copy_gbps,
            copy_bytes: self.copy_bytes,
            copy_ranks: self.copy_ranks,
            atomic_round_trip_ns: self.atomic_round_trip_ns,
            atomic_one_way_ns: self.atomic_one_way_ns(),
            atomic_rmw_ns: self.atomic_rmw_ns,
        }
        .serialize(s)
    }
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
    }
    let limits = Limits {
        copy_gbps,
        copy_bytes: bytes,
        copy_ranks,
        atomic_round_trip_ns: median(&round_trips),
        atomic_rmw_ns: median(&rmws),
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
        ],
        notes: vec![],
    };
    Ok((limits, section))
}
