//! rsmpi's examples done in a kernel (docs/rsmpi-examples.md): the table
//! of examples ([`EXAMPLES`]), each with its kernel, the derived
//! datatypes the host builds for it, the world it runs in, and what every
//! rank must have recorded, computed here from the formula of rsmpi's
//! example. [`run`] launches one, compares, and says what it saw.

use gpu_mpi::device::{ErrorClass, Kernel, ANY_TAG, PROC_NULL};
use gpu_mpi::{
    BackendKind, DatatypeError, Device, HostError, KernelImages, Primitive, UserDatatype, WorldSpec,
};
use gpu_mpi_example_rsmpi_kernels as k;
use k::{ExampleArgs, NONE, UNWRITTEN, WORDS};

/// The kernels of the examples, built by build.rs: PTX and SASS per SM.
pub static KERNELS: KernelImages = gpu_mpi::include_kernels!();

/// The world sizes every example runs with: (ranks, ranks per block). An
/// odd world in one block, and an even one in four blocks (a block's size
/// divides the world's).
pub const WORLDS: [(u32, u32); 2] = [(5, 5), (8, 2)];

/// What every rank of a run must have recorded.
pub enum Expect {
    /// Rank `r` of `n` records exactly `f(r, n)`.
    Rows(fn(i64, i64) -> Vec<i64>),
    /// A check over all the rows (for results no rank can know alone).
    World(fn(&[Vec<i64>]) -> Result<(), String>),
}

/// One of rsmpi's examples, done here.
pub struct Example {
    /// rsmpi's name for it (`examples/<name>.rs`).
    pub name: &'static str,
    /// Its kernel.
    pub kernel: &'static Kernel<ExampleArgs>,
    /// The MPI 4.1 sections it demonstrates.
    pub sections: &'static str,
    /// The derived datatypes the host builds for a world of `n` ranks
    /// (`type_a`, `type_b`; at most two).
    pub types: fn(i64) -> Result<Vec<UserDatatype>, DatatypeError>,
    /// Changes to the world's configuration.
    pub world: fn(WorldSpec) -> WorldSpec,
    /// What the ranks must record.
    pub expect: Expect,
}

fn no_types(_: i64) -> Result<Vec<UserDatatype>, DatatypeError> {
    Ok(Vec::new())
}

fn same_world(spec: WorldSpec) -> WorldSpec {
    spec
}

fn prim(p: Primitive) -> UserDatatype {
    UserDatatype::primitive(p)
}

/// `contiguous(n, u64)`: one rank's row of the gather tables.
fn row_type(n: i64) -> Result<Vec<UserDatatype>, DatatypeError> {
    Ok(vec![UserDatatype::contiguous(n, &prim(Primitive::U64))?])
}

/// rsmpi's `ComplexDatatype` as a struct type of [`k::ComplexData`]: the
/// flag byte, four `i32`, and the nested struct of two `f32` and a byte;
/// no padding.
fn complex_data_type(_: i64) -> Result<Vec<UserDatatype>, DatatypeError> {
    let pair = UserDatatype::structured(&[2, 1], &[0, 8], &[prim(Primitive::F32), prim(Primitive::U8)])?;
    let ints = UserDatatype::contiguous(4, &prim(Primitive::I32))?;
    Ok(vec![UserDatatype::structured(
        &[1, 1, 1],
        &[0, 4, 20],
        &[prim(Primitive::U8), ints, pair],
    )?])
}

/// `struct`'s two layouts of (flag, float, short): [`k::RecordC`] and
/// [`k::RecordPacked`].
fn record_types(_: i64) -> Result<Vec<UserDatatype>, DatatypeError> {
    let fields = [prim(Primitive::U8), prim(Primitive::F64), prim(Primitive::U16)];
    Ok(vec![
        UserDatatype::structured(&[1, 1, 1], &[0, 8, 16], &fields)?,
        UserDatatype::structured(&[1, 1, 1], &[10, 0, 8], &fields)?,
    ])
}

fn table(n: i64) -> Vec<i64> {
    (0..n * n).map(|a| (a / n + 1) * (a % n + 1)).collect()
}

fn gather_row(n: i64) -> Vec<i64> {
    let mut v: Vec<i64> = (0..n).map(|k| 1 << (k + 1)).collect();
    v.extend(table(n));
    v.extend(table(n));
    v
}

fn triangle(n: i64) -> Vec<i64> {
    (0..n).flat_map(|r| 0..r).collect()
}

fn previous(r: i64, n: i64) -> i64 {
    (r + n - 1) % n
}

fn pi_bits() -> i64 {
    std::f32::consts::PI.to_bits() as i64
}

fn complex_parts(values: &[(i64, i64)]) -> Vec<i64> {
    values.iter().flat_map(|&(re, im)| [re, im]).collect()
}

fn only_root(r: i64, row: Vec<i64>) -> Vec<i64> {
    if r == 0 {
        row
    } else {
        Vec::new()
    }
}

/// The barrier-collection examples' record: per completion call (six),
/// every barrier completed and nothing miscounted or misreported.
fn barrier_tallies() -> Vec<i64> {
    [k::BARRIERS_PER_CALL as i64, 0].repeat(6)
}

/// `time`: every rank recorded (start, end) around one barrier; no rank may
/// leave before the last one entered.
fn barrier_times(rows: &[Vec<i64>]) -> Result<(), String> {
    let mut last_in = i64::MIN;
    for (r, row) in rows.iter().enumerate() {
        let [start, end] = row[..] else {
            return Err(format!("rank {r} recorded {row:?}, expected two clock readings"));
        };
        if end < start {
            return Err(format!("rank {r}: the clock went back ({start} to {end})"));
        }
        last_in = last_in.max(start);
    }
    for (r, row) in rows.iter().enumerate() {
        if row[1] < last_in {
            return Err(format!(
                "rank {r} left the barrier at {} ns, before the last rank entered at {last_in} ns",
                row[1]
            ));
        }
    }
    Ok(())
}

macro_rules! example {
    ($name:literal, $kernel:ident, $sections:literal, $expect:expr) => {
        example!($name, $kernel, $sections, no_types, same_world, $expect)
    };
    ($name:literal, $kernel:ident, $sections:literal, $types:expr, $expect:expr) => {
        example!($name, $kernel, $sections, $types, same_world, $expect)
    };
    ($name:literal, $kernel:ident, $sections:literal, $types:expr, $world:expr, $expect:expr) => {
        Example {
            name: $name,
            kernel: &k::$kernel,
            sections: $sections,
            types: $types,
            world: $world,
            expect: $expect,
        }
    };
}

/// rsmpi's examples that have a counterpart here, in rsmpi's (alphabetical)
/// order.
pub static EXAMPLES: &[Example] = &[
    example!(
        "all_gather",
        ALL_GATHER,
        "6.7",
        row_type,
        Expect::Rows(|_, n| gather_row(n))
    ),
    example!(
        "all_gather_bool",
        ALL_GATHER_BOOL,
        "6.7",
        Expect::Rows(|_, n| (0..n).map(|i| (i % 2 == 0) as i64).collect())
    ),
    example!(
        "all_gather_varcount",
        ALL_GATHER_VARCOUNT,
        "6.7",
        Expect::Rows(|_, n| triangle(n))
    ),
    example!(
        "all_to_all",
        ALL_TO_ALL,
        "6.8",
        Expect::Rows(|_, n| (0..n).collect())
    ),
    example!(
        "arrays",
        ARRAYS,
        "3.2, 3.7",
        Expect::Rows(|r, _| vec![1, 2, 3, r, 3, 1, 2, 3])
    ),
    example!(
        "barrier",
        BARRIER,
        "6.3",
        Expect::Rows(|r, n| {
            let mut v = vec![1; n as usize - 1];
            v.extend(vec![2; n as usize - 1]);
            only_root(r, v)
        })
    ),
    example!(
        "broadcast",
        BROADCAST,
        "6.4",
        Expect::Rows(|_, _| vec![1024, 2, 4, 8, 16])
    ),
    example!(
        "broadcast_complex",
        BROADCAST_COMPLEX,
        "6.4, 5.1",
        Expect::Rows(|_, _| complex_parts(&[(1, -2), (8, -4), (3, -9), (7, -5)]))
    ),
    example!(
        "buffered",
        BUFFERED,
        "3.4, 3.6",
        no_types,
        |spec| spec.slot_bytes(1024),
        Expect::Rows(|_, _| vec![k::BUFFERED_WORDS as i64; 2])
    ),
    example!(
        "complex_datatype",
        COMPLEX_DATATYPE,
        "5.1.2, 6.4",
        complex_data_type,
        Expect::Rows(|r, _| {
            let pad = if r == 0 { k::PAD_BYTE as i64 } else { 0 };
            let mut v = vec![1, 1, -2, 3, -4];
            v.extend([(-0.1f32).to_bits() as i64, 0.1f32.to_bits() as i64, 7]);
            v.extend([pad; 6]);
            v
        })
    ),
    example!(
        "complex_numbers",
        COMPLEX_NUMBERS,
        "6.4, 5.1",
        Expect::Rows(|_, _| complex_parts(&[(1, 2), (2, 3), (3, 4)]))
    ),
    example!(
        "contiguous",
        CONTIGUOUS,
        "5.1.2, 3.10",
        |_| Ok(vec![UserDatatype::contiguous(3, &prim(Primitive::I32))?]),
        Expect::Rows(|r, n| {
            let p = previous(r, n);
            vec![p, 2 * p, 3 * p, p]
        })
    ),
    example!(
        "datatype_dup",
        DATATYPE_DUP,
        "5.1.10, 6.4",
        |_| Ok(vec![prim(Primitive::I32).dup()?]),
        Expect::Rows(|_, _| vec![1, 2, 3, 4])
    ),
    example!(
        "duplicate",
        DUPLICATE,
        "7.4.1, 7.4.2",
        Expect::Rows(|r, n| vec![1, 0, r, n, 200 + previous(r, n), 100 + previous(r, n)])
    ),
    example!(
        "dyn_communicator",
        DYN_COMMUNICATOR,
        "7.3.2, 7.4.2, 6.11",
        Expect::Rows(|r, _| {
            let q = r / 2;
            let odd = if r % 2 != 0 { q * (q + 1) / 2 } else { NONE };
            let even = if r % 2 == 0 { q * (q + 1) / 2 } else { NONE };
            vec![r * (r + 1) / 2, odd, even]
        })
    ),
    example!(
        "gather",
        GATHER,
        "6.5",
        row_type,
        Expect::Rows(|r, n| only_root(r, gather_row(n)))
    ),
    example!(
        "gather_varcount",
        GATHER_VARCOUNT,
        "6.5",
        Expect::Rows(|r, n| only_root(r, triangle(n)))
    ),
    example!(
        "group",
        GROUP,
        "7.3.1, 7.3.2",
        Expect::Rows(|r, n| {
            let h = n / 2;
            let mut v = vec![n, r, h, n - h];
            v.push(if r < h { r } else { NONE });
            v.push(if r >= h { r - h } else { NONE });
            v.push(n - 1 - r);
            if h > 0 {
                v.push(NONE);
            }
            v.push(ErrorClass::Rank as i64);
            v
        })
    ),
    example!(
        "immediate",
        IMMEDIATE,
        "3.7, 3.8.1, 3.8.2",
        Expect::Rows(|r, _| vec![pi_bits(), 1, 1, pi_bits(), r, 0, pi_bits()])
    ),
    example!(
        "immediate_barrier",
        IMMEDIATE_BARRIER,
        "6.12.1, 3.4",
        Expect::Rows(|r, n| {
            let mut v = vec![n - 1, n - 1];
            v.extend(vec![3; n as usize - 1]);
            only_root(r, v)
        })
    ),
    example!(
        "immediate_barrier_multiple",
        IMMEDIATE_BARRIER_MULTIPLE,
        "6.12.1, 3.7.5",
        Expect::Rows(|_, _| barrier_tallies())
    ),
    example!(
        "immediate_broadcast",
        IMMEDIATE_BROADCAST,
        "6.12.2",
        Expect::Rows(|_, _| vec![1024, 2, 4, 8, 16])
    ),
    example!(
        "immediate_multiple_barrier",
        IMMEDIATE_MULTIPLE_BARRIER,
        "6.12.1, 3.7.5",
        Expect::Rows(|_, _| {
            let mut v = barrier_tallies();
            v.extend([ErrorClass::Request as i64, 0]);
            v
        })
    ),
    example!(
        "immediate_multiple_requests",
        IMMEDIATE_MULTIPLE_REQUESTS,
        "3.7.5, 3.5",
        Expect::Rows(|r, n| {
            let m = k::MULTIPLE as i64;
            let p = previous(r, n);
            let mut v = Vec::new();
            for _ in 0..3 {
                v.extend([m, m, p, p, p, p]);
            }
            v.extend([m, m, 0, 1, 2, 3]);
            v
        })
    ),
    example!(
        "immediate_multiple_test",
        IMMEDIATE_MULTIPLE_TEST,
        "3.7.5",
        Expect::Rows(|_, _| {
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(2 * k::MULTIPLE as i64);
                v.extend((0..k::MULTIPLE as i64).flat_map(|k| k..k + 4));
            }
            v
        })
    ),
    example!(
        "immediate_multiple_wait",
        IMMEDIATE_MULTIPLE_WAIT,
        "3.7.5",
        Expect::Rows(|r, n| {
            let even = r % 2 == 0;
            let targets = n / 2 + (n % 2 != 0 && !even) as i64;
            let lbound = even as i64;
            let mut v = vec![targets, 1];
            v.extend((0..targets).map(|k| 2 * k + lbound));
            v
        })
    ),
    example!(
        "immediate_reduce",
        IMMEDIATE_REDUCE,
        "6.12.7, 6.12.8, 6.9.5",
        Expect::Rows(|r, n| {
            let mut v = only_root(r, vec![n * (n - 1) / 2]);
            v.push(n - 1);
            v.push((r as i32).wrapping_pow(n as u32) as i64);
            v.extend([n * (n - 1) / 2; 2]);
            v
        })
    ),
    example!(
        "null_process",
        NULL_PROCESS,
        "3.11",
        Expect::Rows(|_, _| {
            let null = PROC_NULL as i64;
            vec![0, null, ANY_TAG as i64, 0, 0, 1, null, 0, null]
        })
    ),
    example!(
        "pack",
        PACK,
        "5.2",
        Expect::Rows(|_, _| vec![12, 3, 2, 1, 12, ErrorClass::Arg as i64])
    ),
    example!(
        "readme",
        README,
        "3.2, 3.7, 3.8.1, 6.4",
        Expect::Rows(|r, n| {
            let p = previous(r, n);
            vec![p, 3, p, 2 * p, 4 * p, 2, 4, 8, 16]
        })
    ),
    example!(
        "ready_send",
        READY_SEND,
        "3.4, 3.7",
        Expect::Rows(|r, n| only_root(r, (1..n).collect()))
    ),
    example!(
        "reduce",
        REDUCE,
        "6.9, 6.10, 6.9.5, 6.9.7",
        Expect::Rows(|r, n| {
            let mut v = only_root(r, vec![n * (n - 1) / 2]);
            v.extend([
                n - 1,
                0b0000_1100_0011_0000,
                0b0011_1111_1111_1100,
                0b0011_0011_1100_1100,
            ]);
            v.push((r as i32).wrapping_pow(n as u32) as i64);
            v.extend([n * (n + 1) / 2; 2]);
            v
        })
    ),
    example!(
        "scan",
        SCAN,
        "6.11",
        Expect::Rows(|r, _| {
            let mut v = vec![r * (r + 1) / 2];
            if r > 0 {
                v.push((1..=r).product());
            }
            v
        })
    ),
    example!("scatter", SCATTER, "6.6", Expect::Rows(|r, _| vec![r])),
    example!(
        "scatter_varcount",
        SCATTER_VARCOUNT,
        "6.6",
        Expect::Rows(|r, _| (0..r).collect())
    ),
    example!(
        "send_receive",
        SEND_RECEIVE,
        "3.10, 3.8.1",
        Expect::Rows(|r, n| {
            let next = (r + 1) % n;
            let mut v = vec![next, next];
            if r == 0 {
                v.extend((1..n).flat_map(|s| [s, s + 1, s - 1]));
            }
            v.push(previous(r, n));
            v
        })
    ),
    example!("simple", SIMPLE, "7.4.1", Expect::Rows(|r, n| vec![r, n])),
    example!(
        "split",
        SPLIT,
        "7.3.2, 7.4.2",
        Expect::Rows(|r, n| {
            let odd = r % 2 != 0;
            let member = |yes: bool| if yes { 1 } else { NONE };
            let size = if odd { n / 2 } else { (n + 1) / 2 };
            vec![odd as i64, !odd as i64, member(odd), 1, size, member(odd)]
        })
    ),
    example!(
        "struct",
        STRUCT,
        "5.1.2, 5.1.11, 5.2",
        record_types,
        Expect::Rows(|_, _| vec![1, 3.4f64.to_bits() as i64, 7, 11, 1, 0])
    ),
    example!(
        "structured",
        STRUCTURED,
        "5.1.2, 6.4, 3.3.1",
        |_| {
            let i = prim(Primitive::I32);
            Ok(vec![UserDatatype::structured(
                &[1, 1, 1],
                &[8, 4, 0],
                &[i.clone(), i.clone(), i],
            )?])
        },
        Expect::Rows(|r, _| if r == 0 {
            vec![3, 2, 1, 13, 12, 11]
        } else {
            vec![1, 2, 3, 11, 12, 13]
        })
    ),
    example!("time", TIME, "9.6", Expect::World(barrier_times)),
    example!(
        "vector",
        VECTOR,
        "5.1.2, 3.10",
        |_| Ok(vec![UserDatatype::vector(2, 2, 3, &prim(Primitive::I32))?]),
        Expect::Rows(|r, n| {
            let p = previous(r, n);
            vec![p, 2 * p, -1, 4 * p, 5 * p, -1, p]
        })
    ),
    example!(
        "wait_all",
        WAIT_ALL,
        "3.4, 3.7.5",
        Expect::Rows(|r, _| if r == 0 { vec![1] } else { vec![pi_bits()] })
    ),
    example!(
        "wait_any",
        WAIT_ANY,
        "3.4, 3.7.5",
        Expect::Rows(|r, n| if r == 0 {
            vec![(1 << (n - 1)) - 1, n - 1]
        } else {
            vec![pi_bits()]
        })
    ),
];

/// The example named `name`.
pub fn find(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.name == name)
}

/// Opens `backend` with the examples' kernels; `auto` without a usable GPU
/// is the emulator.
pub fn open(backend: BackendKind) -> Result<Device, HostError> {
    Device::open(backend, &KERNELS)
}

/// Runs `example` in a world of `ranks` ranks in blocks of `block_dim`,
/// checks every rank's record, and returns rank 0's (or the error: a host
/// error, or the first rank whose record differs).
pub fn run(device: &Device, example: &Example, ranks: u32, block_dim: u32) -> Result<Vec<i64>, String> {
    run_in(device, example, WorldSpec::ranks(ranks).block_dim(block_dim))
}

/// [`run`] in the world `spec` (its size, block size, and on the cpu
/// backend its schedule), with the example's own changes applied.
pub fn run_in(device: &Device, example: &Example, spec: WorldSpec) -> Result<Vec<i64>, String> {
    let text = |e: HostError| format!("{}: {e}", example.name);
    let config = device.resolve(&spec).map_err(text)?;
    let ranks = config.ranks;
    let n = ranks as i64;
    let types = (example.types)(n).map_err(|e| format!("{}: datatype: {e}", example.name))?;
    let mut committed = Vec::new();
    for t in &types {
        committed.push(t.commit().map_err(|e| format!("{}: commit: {e}", example.name))?);
    }
    let words = |i: usize| committed.get(i).map_or(&[][..], |c| c.words());
    let type_a = device.upload(words(0)).map_err(text)?;
    let type_b = device.upload(words(1)).map_err(text)?;
    let out = device
        .upload(&vec![UNWRITTEN; ranks as usize * WORDS])
        .map_err(text)?;
    let args = ExampleArgs {
        out: out.slice(),
        type_a: type_a.slice(),
        type_b: type_b.slice(),
    };
    let spec = (example.world)(spec);
    device.launch(example.kernel, &args, &spec).map_err(text)?;
    let all = device.download(&out).map_err(text)?;
    let mut rows = Vec::new();
    for (r, words) in all.chunks(WORDS).enumerate() {
        let len = words.iter().position(|&w| w == UNWRITTEN).unwrap_or(WORDS);
        if let Some(i) = words[len..].iter().position(|&w| w != UNWRITTEN) {
            return Err(format!(
                "{}: rank {r} left word {len} unwritten but wrote word {}",
                example.name,
                len + i
            ));
        }
        rows.push(words[..len].to_vec());
    }
    match &example.expect {
        Expect::Rows(f) => {
            for (r, row) in rows.iter().enumerate() {
                let expected = f(r as i64, n);
                if *row != expected {
                    return Err(format!(
                        "{} ({ranks} ranks): rank {r} recorded {row:?}, expected {expected:?}",
                        example.name
                    ));
                }
            }
        }
        Expect::World(f) => f(&rows).map_err(|e| format!("{} ({ranks} ranks): {e}", example.name))?,
    }
    Ok(rows.swap_remove(0))
}
