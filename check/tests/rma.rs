//! One-sided communication (MPI 4.1 chapter 12) on each backend
//! (`testgen!`): windows (create, allocate, zero-size, queries,
//! sub-communicators, ids and their limit, the allocation limit, memory
//! other ranks cannot reach), fence epochs with every element type and
//! every predefined operation against sequential models, the
//! synchronisation rules and their `MPI_ERR_RMA_SYNC` reasons, bad
//! arguments (ranges, ranks, `PROC_NULL`, types, lengths, counters),
//! passive-target locks (mutual exclusion, atomic counters,
//! compare-and-swap), notified access, operations with datatypes on
//! either side (`put_typed` and the others); and on the emulator the deadlock
//! reports that name a window lock or a notification wait. The kernels
//! are in check/kernels/src/rma.rs; check/tests/proptest_rma.rs runs
//! random fence programs.

use gpu_mpi::device::abi::polling::Call;
use gpu_mpi::device::datatype::Equivalence;
use gpu_mpi::device::datatype::{ID_F32, ID_U32};
use gpu_mpi::device::error::RmaSyncReason;
use gpu_mpi::device::window::{MAX_LOCKS, NOTIFICATIONS};
use gpu_mpi::device::{Error, ErrorClass, Kernel};
use gpu_mpi::{
    BlockedState, CommittedType, CpuOptions, DeadlockReport, Hint, HostError, LockHolder, Primitive,
    Schedule, UserDatatype, WorldSpec,
};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::rma::*;
use gpu_mpi_check_kernels::NONE;

/// One launch of a kernel of check/kernels/src/rma.rs.
struct Case {
    kernel: &'static Kernel<RmaArgs>,
    spec: WorldSpec,
    ranks: u32,
    slots: u32,
    part: u32,
    param: u32,
    param2: u32,
    /// The window memory before the launch (`ranks * part` words), or
    /// empty for [`pattern`].
    data: Vec<u64>,
    /// Words uploaded after the window memory (a table of types).
    table: Vec<u64>,
    options: CpuOptions,
    /// The emulator's schedule of the ranks, if not its default.
    schedule: Option<Schedule>,
}

/// What a launch left: every rank's records and the window memory.
struct Outcome {
    out: Vec<u32>,
    data: Vec<u64>,
    slots: usize,
    /// The trace, when the spec asked for one.
    trace: Option<gpu_mpi::Trace>,
}

impl Outcome {
    /// Rank `r`'s records.
    fn rank(&self, r: u32) -> Records<'_> {
        let at = r as usize * self.slots;
        Records {
            words: &self.out[at..at + self.slots],
            at: 0,
            rank: r,
        }
    }

    /// The window memory as bytes.
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.data)
    }
}

/// A cursor over one rank's records.
struct Records<'a> {
    words: &'a [u32],
    at: usize,
    rank: u32,
}

impl Records<'_> {
    fn word(&mut self) -> u32 {
        let w = self.words[self.at];
        self.at += 1;
        w
    }

    fn words(&mut self, n: usize) -> Vec<u32> {
        let w = self.words[self.at..self.at + n].to_vec();
        self.at += n;
        w
    }

    /// A result recorded as its five result-record words.
    fn result(&mut self) -> Result<(), Error> {
        let w: [u32; 5] = self.words(5).try_into().unwrap();
        match Error::from_words(w) {
            None if w == [0; 5] => Ok(()),
            None => panic!("rank {}: not a result record: {w:?}", self.rank),
            Some(e) => Err(e),
        }
    }

    /// Checks the next results against `expected`, naming each step.
    fn expect(&mut self, expected: &[(&str, Result<(), Error>)]) {
        for (step, want) in expected {
            let got = self.result();
            assert_eq!(got, *want, "rank {}: {step}", self.rank);
        }
    }
}

/// The bytes a window memory starts with where a test gives none: a
/// pattern that differs between neighbours, so that a stray write shows.
fn pattern(words: usize) -> Vec<u64> {
    let bytes: Vec<u8> = (0..8 * words).map(|i| (i * 29 + 7) as u8).collect();
    words_of(&bytes)
}

/// `bytes` (a multiple of 8) as words.
fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

impl Case {
    fn new(kernel: &'static Kernel<RmaArgs>, ranks: u32, slots: u32) -> Case {
        Case {
            kernel,
            spec: WorldSpec::ranks(ranks).windows(2),
            ranks,
            slots,
            part: 0,
            param: 0,
            param2: 0,
            data: Vec::new(),
            table: Vec::new(),
            options: CpuOptions::default(),
            schedule: None,
        }
    }

    fn spec(mut self, f: impl FnOnce(WorldSpec) -> WorldSpec) -> Case {
        self.spec = f(self.spec);
        self
    }

    fn part(mut self, words: u32) -> Case {
        self.part = words;
        self
    }

    fn params(mut self, param: u32, param2: u32) -> Case {
        self.param = param;
        self.param2 = param2;
        self
    }

    fn data(mut self, data: Vec<u64>) -> Case {
        assert_eq!(data.len(), (self.ranks * self.part) as usize);
        self.data = data;
        self
    }

    fn options(mut self, options: CpuOptions) -> Case {
        self.options = options;
        self
    }

    fn schedule(mut self, schedule: Option<Schedule>) -> Case {
        self.schedule = schedule;
        self
    }

    fn try_run(self, backend: Backend) -> Result<Outcome, HostError> {
        let d = backend.device_with(self.options);
        let words = (self.ranks * self.part) as usize;
        let initial = if self.data.is_empty() {
            pattern(words)
        } else {
            self.data
        };
        // At least one word, so that a kernel without windows over it
        // still gets a buffer.
        let data = d.upload(&[initial.as_slice(), &self.table, &[0]].concat())?;
        let out = d.alloc_zeroed::<u32>((self.ranks * self.slots).max(1) as usize)?;
        let args = RmaArgs {
            out: out.slice(),
            data: data.slice(),
            slots: self.slots,
            part: self.part,
            param: self.param,
            param2: self.param2,
        };
        let spec = match self.schedule {
            Some(s) => self.spec.schedule(s),
            None => self.spec,
        };
        let report = d.launch(self.kernel, &args, &spec)?;
        let mut data = d.download(&data)?;
        data.truncate(words);
        Ok(Outcome {
            out: d.download(&out)?,
            data,
            slots: self.slots as usize,
            trace: report.trace().cloned(),
        })
    }

    fn run(self, backend: Backend) -> Outcome {
        self.try_run(backend).unwrap_or_else(|e| panic!("{e}"))
    }
}

fn sync(target: i32, reason: RmaSyncReason) -> Result<(), Error> {
    Err(Error::RmaSync {
        target,
        reason: reason as u32,
    })
}

fn range(target: i32, offset: u32, bytes: u32, size: u32) -> Result<(), Error> {
    Err(Error::RmaRange {
        target,
        offset,
        bytes,
        size,
    })
}

/// An element of `T` at byte `at` of `bytes`.
fn read<T: bytemuck::Pod>(bytes: &[u8], at: usize) -> T {
    bytemuck::pod_read_unaligned(&bytes[at..at + std::mem::size_of::<T>()])
}

/// Stores `v` at byte `at` of `bytes`.
fn write<T: bytemuck::Pod>(bytes: &mut [u8], at: usize, v: T) {
    bytes[at..at + std::mem::size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&v));
}

/// Checks that the bytes `from..to` of rank `r`'s part still hold the
/// pattern of `initial`.
fn untouched(got: &[u8], initial: &[u8], r: u32, part: u32, from: usize, to: usize) {
    let base = r as usize * part as usize * 8;
    for i in base + from..base + to {
        assert_eq!(
            got[i],
            initial[i],
            "rank {r}: byte {} of its part changed",
            i - base
        );
    }
}

// ---- the first smoke tests -------------------------------------------------

fn a_put_between_fences_reaches_the_next_rank(backend: Backend) {
    let ranks = 64;
    let o = Case::new(&RMA_RING_PUT, ranks, 1)
        .spec(|s| s.window_bytes(64))
        .run(backend);
    for (r, &v) in o.out.iter().enumerate() {
        let prev = (r as u32 + ranks - 1) % ranks;
        assert_eq!(v, prev + 100, "rank {r}");
    }
}
testgen!(a_put_between_fences_reaches_the_next_rank);

fn fetch_and_op_counts_every_rank_once(backend: Backend) {
    let (ranks, n) = (48, 5);
    let o = Case::new(&RMA_COUNTER, ranks, 2)
        .spec(|s| s.window_bytes(64))
        .params(n, 0)
        .run(backend);
    assert_eq!(o.out[1], ranks * n, "the counter");
    let top = o.out.iter().step_by(2).copied().max().unwrap();
    assert_eq!(top, ranks * n - 1, "some rank fetched the last value");
}
testgen!(fetch_and_op_counts_every_rank_once);

// ---- windows ---------------------------------------------------------------

fn queries(backend: Backend, how: u32) {
    let ranks = 12;
    let part = 2;
    let o = Case::new(&RMA_WINDOW_QUERIES, ranks, 20)
        .spec(|s| s.block_dim(4).window_bytes(64))
        .part(part)
        .params(how, 0)
        .run(backend);
    let initial = pattern((ranks * part) as usize);
    let initial: &[u8] = bytemuck::cast_slice(&initial);
    for r in 0..ranks {
        let len = r % 3;
        let mut rec = o.rank(r);
        assert_eq!(
            rec.words(9),
            [4 * len, 4, len, (len == 0) as u32, r, ranks, ranks, r, 1],
            "rank {r}: size in bytes, disp unit, len, empty, rank, size, group size and rank, id"
        );
        let next = (r + 1) % ranks;
        let tlen = next % 3;
        assert_eq!(
            rec.result(),
            range(next as i32, 0, 4 * (tlen + 1), 4 * tlen),
            "rank {r}: one element past rank {next}'s window"
        );
        let prev = (r + ranks - 1) % ranks;
        let want: Vec<u32> = (0..2)
            .map(|k| if k < len { query_value(prev, k) } else { NONE })
            .collect();
        assert_eq!(rec.words(2), want, "rank {r}: its window after the fence");
        assert_eq!(
            rec.word(),
            ErrorClass::RmaRange as u32,
            "rank {r}: a get at its length"
        );
        if how == WINDOW_CREATE {
            let bytes = o.bytes();
            let base = (r * part * 8) as usize;
            for k in 0..len {
                assert_eq!(read::<u32>(bytes, base + 4 * k as usize), query_value(prev, k));
            }
            untouched(bytes, initial, r, part, 4 * len as usize, 8 * part as usize);
        }
    }
}

fn created_windows_answer_queries_and_zero_size_ones_take_nothing(backend: Backend) {
    queries(backend, WINDOW_CREATE);
}
testgen!(created_windows_answer_queries_and_zero_size_ones_take_nothing);

fn allocated_windows_answer_queries_and_zero_size_ones_take_nothing(backend: Backend) {
    queries(backend, WINDOW_ALLOCATE);
}
testgen!(allocated_windows_answer_queries_and_zero_size_ones_take_nothing);

fn windows_on_sub_communicators_use_the_communicators_ranks(backend: Backend) {
    sub_communicator_windows(backend, SUB_COLOUR, None);
    sub_communicator_windows(backend, SUB_SHARED, None);
    sub_communicator_windows(backend, SUB_WARP, None);
}
testgen!(windows_on_sub_communicators_use_the_communicators_ranks);

/// Sub-communicator windows of `mode` on 128 ranks in blocks of 64 (two
/// warps each).
fn sub_communicator_windows(backend: Backend, mode: u32, schedule: Option<Schedule>) {
    let (ranks, block) = (128, 64);
    let o = Case::new(&RMA_SUBCOMM, ranks, 16)
        .spec(|s| s.block_dim(block).windows(5).window_bytes(64))
        .params(mode, 0)
        .schedule(schedule)
        .run(backend);
    // The members of world rank r's communicator, in its rank order.
    let members = |r: u32| -> Vec<u32> {
        match mode {
            // Colour r % 2, key -r: decreasing world rank.
            SUB_COLOUR => (0..ranks).rev().filter(|w| w % 2 == r % 2).collect(),
            SUB_SHARED => (0..ranks).filter(|w| w / block == r / block).collect(),
            _ => (0..ranks).filter(|w| w / 32 == r / 32).collect(),
        }
    };
    for r in 0..ranks {
        let m = members(r);
        let n = m.len() as u32;
        let me = m.iter().position(|&w| w == r).unwrap() as u32;
        let prev = (me + n - 1) % n;
        let mut rec = o.rank(r);
        assert_eq!(
            rec.words(5),
            [me, n, n, me, 1],
            "rank {r}: rank, size, group, ids"
        );
        assert_eq!(
            rec.words(2),
            [m[prev as usize], prev],
            "rank {r}: what its predecessor put"
        );
        let count = if me == 0 { n } else { NONE };
        assert_eq!(rec.word(), count, "rank {r}: the count at window rank 0");
        assert_eq!(
            rec.result(),
            Err(Error::InvalidRank {
                rank: n as i32,
                size: n as i32
            }),
            "rank {r}"
        );
        let world_prev = (r + ranks - 1) % ranks;
        let their = members(world_prev).iter().position(|&w| w == world_prev).unwrap();
        assert_eq!(rec.word(), their as u32, "rank {r}: through the world's window");
    }
}

fn window_ids_are_reused_and_one_window_too_many_fails_every_rank(backend: Backend) {
    let (ranks, sequence) = (8, 5);
    let o = Case::new(&RMA_WINDOW_IDS, ranks, 32)
        .spec(|s| s.windows(3).window_bytes(64))
        .part(1)
        .params(sequence, 0)
        .run(backend);
    for r in 0..ranks {
        let prev = (r + ranks - 1) % ranks;
        let mut rec = o.rank(r);
        for i in 0..sequence {
            assert_eq!(
                rec.words(2),
                [0, 100 * i + prev],
                "rank {r}: window {i} of the sequence"
            );
        }
        assert_eq!(rec.words(3), [0, 1, 2], "rank {r}: three at once");
        assert_eq!(
            rec.result(),
            Err(Error::WindowLimit { limit: 3 }),
            "rank {r}: a fourth"
        );
        assert_eq!(rec.words(2), [1, 7000 + prev], "rank {r}: the freed id, reused");
        assert_eq!(rec.word(), 0, "rank {r}: after all are freed");
    }
    assert_eq!(
        Error::WindowLimit { limit: 3 }.class(),
        ErrorClass::Win,
        "MPI_ERR_WIN"
    );
}
testgen!(window_ids_are_reused_and_one_window_too_many_fails_every_rank);

fn allocations_beyond_window_bytes_fail_every_rank_with_no_mem(backend: Backend) {
    let ranks = 8;
    let o = Case::new(&RMA_ALLOCATE_LIMIT, ranks, 32)
        .spec(|s| s.window_bytes(64))
        .params(3, 5)
        .run(backend);
    let too_large = |requested| {
        Err(Error::WindowAllocation {
            requested,
            available: 64,
        })
    };
    for r in 0..ranks {
        let prev = (r + ranks - 1) % ranks;
        let mut rec = o.rank(r);
        for i in 0..3 {
            // Rank 3 asked for 68 bytes, rank 5 for 80: the most is named.
            assert_eq!(rec.result(), too_large(80), "rank {r}: attempt {i}");
        }
        assert_eq!(rec.result(), too_large(u32::MAX), "rank {r}: usize::MAX elements");
        assert_eq!(rec.words(2), [0, 500 + prev], "rank {r}: 64 bytes fit, with id 0");
        assert_eq!(rec.word(), 0, "rank {r}: 8 u64s fit beside them");
    }
    assert_eq!(too_large(1).unwrap_err().class(), ErrorClass::NoMem);
}
testgen!(allocations_beyond_window_bytes_fail_every_rank_with_no_mem);

fn a_window_over_a_threads_stack_fails_every_rank_with_err_win(backend: Backend) {
    let ranks = 8;
    let options = CpuOptions {
        local_stacks: true,
        ..CpuOptions::default()
    };
    let o = Case::new(&RMA_STACK_MEMORY, ranks, 20)
        .spec(|s| s.block_dim(4))
        .part(2)
        .params((1 << 5) | (1 << 2), 0)
        .options(options)
        .run(backend);
    for r in 0..ranks {
        let mut rec = o.rank(r);
        for i in 0..3 {
            assert_eq!(
                rec.result(),
                Err(Error::WindowMemory { rank: 2 }),
                "rank {r}: attempt {i}"
            );
        }
        assert_eq!(rec.word(), 0, "rank {r}: an empty slice of a stack is fine");
        assert_eq!(
            rec.word(),
            900 + (r + ranks - 1) % ranks,
            "rank {r}: the next window works"
        );
    }
    assert_eq!(Error::WindowMemory { rank: 2 }.class(), ErrorClass::Win);
}
testgen!(a_window_over_a_threads_stack_fails_every_rank_with_err_win);

// ---- fence epochs ----------------------------------------------------------

/// Runs [`RMA_FENCE_TYPES`] for `T` and checks every window and record.
fn fence_types<T: Elem + bytemuck::Pod>(backend: Backend, ty: u32) {
    let (ranks, block) = (24u32, 8);
    let n = ranks as usize;
    let size = std::mem::size_of::<T>();
    let part = (2 * n * size).div_ceil(8) as u32;
    // Every element starts as a small integer, the padding as the pattern.
    let mut bytes: Vec<u8> = bytemuck::cast_slice(&pattern((ranks * part) as usize)).to_vec();
    let init = |t: u32, i: usize| (t as i32 * 3 + i as i32) % 9 - 4;
    for t in 0..ranks {
        for i in 0..2 * n {
            write(&mut bytes, (t * part * 8) as usize + i * size, T::of(init(t, i)));
        }
    }
    let initial = bytes.clone();
    let o = Case::new(&RMA_FENCE_TYPES, ranks, 2 * ranks)
        .spec(|s| s.block_dim(block))
        .part(part)
        .params(ty, 0)
        .data(words_of(&bytes))
        .run(backend);
    let got = o.bytes();
    let name = std::any::type_name::<T>();
    for t in 0..ranks {
        let base = (t * part * 8) as usize;
        let at = |i: usize| base + i * size;
        for s in 0..ranks {
            let want = T::of(fence_put_value(s, t));
            assert_eq!(
                read::<T>(got, at(s as usize)),
                want,
                "{name}: rank {t}, put from {s}"
            );
        }
        for k in 0..n {
            let want = match t {
                0 => (0..ranks).fold(T::of(init(t, n + k)), |acc, r| {
                    sum(acc, T::of(fence_sum_value(r, k as u32)))
                }),
                1 => T::of(fence_replace_value(k as u32)),
                _ => T::of(init(t, n + k)),
            };
            let g: T = read(got, at(n + k));
            assert_eq!(g.bits(), want.bits(), "{name}: rank {t}, element {}", n + k);
        }
        untouched(got, &initial, t, part, 2 * n * size, 8 * part as usize);
        // What rank t read from rank t + 1 in the second epoch.
        let src = (t + 1) % ranks;
        let mut rec = o.rank(t);
        for s in 0..ranks {
            let w = rec.words(2);
            let bits = u64::from(w[0]) | (u64::from(w[1]) << 32);
            assert_eq!(
                bits,
                T::of(fence_put_value(s, src)).bits(),
                "{name}: rank {t} got"
            );
        }
    }
}

/// `a + b` as each type adds (integers wrap).
fn sum<T: Elem + bytemuck::Pod>(a: T, b: T) -> T {
    model(0, a, b)
}

fn fence_epochs_move_every_element_type(backend: Backend) {
    fence_types::<u8>(backend, T_U8);
    fence_types::<i8>(backend, T_I8);
    fence_types::<u16>(backend, T_U16);
    fence_types::<i16>(backend, T_I16);
    fence_types::<u32>(backend, T_U32);
    fence_types::<i32>(backend, T_I32);
    fence_types::<u64>(backend, T_U64);
    fence_types::<i64>(backend, T_I64);
    fence_types::<f32>(backend, T_F32);
    fence_types::<f64>(backend, T_F64);
}
testgen!(fence_epochs_move_every_element_type);

/// The sequential model of operation `j` of [`OPS`]: `target op origin`,
/// written from MPI 4.1 §6.9.2 and §12.3.4 for each type.
fn model<T: Elem + bytemuck::Pod>(j: usize, t: T, o: T) -> T {
    macro_rules! ints {
        ($($ty:ty),*) => {$(
            if let (Some(t), Some(o)) = (
                (&t as &dyn std::any::Any).downcast_ref::<$ty>(),
                (&o as &dyn std::any::Any).downcast_ref::<$ty>(),
            ) {
                let (t, o) = (*t, *o);
                let v: $ty = match j {
                    0 => t.wrapping_add(o),
                    1 => t.wrapping_mul(o),
                    2 => t.min(o),
                    3 => t.max(o),
                    4 => t & o,
                    5 => t | o,
                    6 => t ^ o,
                    7 => (t != 0 && o != 0) as $ty,
                    8 => (t != 0 || o != 0) as $ty,
                    9 => o,
                    _ => t,
                };
                return bytemuck::cast_slice::<$ty, T>(&[v])[0];
            }
        )*};
    }
    macro_rules! floats {
        ($($ty:ty),*) => {$(
            if let (Some(t), Some(o)) = (
                (&t as &dyn std::any::Any).downcast_ref::<$ty>(),
                (&o as &dyn std::any::Any).downcast_ref::<$ty>(),
            ) {
                let (t, o) = (*t, *o);
                let v: $ty = match j {
                    0 => t + o,
                    1 => t * o,
                    2 => t.min(o),
                    3 => t.max(o),
                    9 => o,
                    10 => t,
                    _ => panic!("operation {j} is not defined on floats"),
                };
                return bytemuck::cast_slice::<$ty, T>(&[v])[0];
            }
        )*};
    }
    ints!(u8, i8, u16, i16, u32, i32, u64, i64);
    floats!(f32, f64);
    unreachable!("no model for {}", std::any::type_name::<T>())
}

fn ops_of<T: Elem + bytemuck::Pod>(backend: Backend, ty: u32) {
    let (ranks, block) = (12u32, 4);
    let size = std::mem::size_of::<T>();
    let len = OPS.len() * OPS_K;
    let part = (len * size).div_ceil(8) as u32;
    let mut bytes: Vec<u8> = bytemuck::cast_slice(&pattern((ranks * part) as usize)).to_vec();
    for t in 0..ranks {
        for j in 0..OPS.len() {
            for k in 0..OPS_K {
                let at = (t * part * 8) as usize + (j * OPS_K + k) * size;
                write(&mut bytes, at, T::of(op_init(j, t, k)));
            }
        }
    }
    let initial = bytes.clone();
    let o = Case::new(&RMA_OPS, ranks, 40)
        .spec(|s| s.block_dim(block))
        .part(part)
        .params(ty, 0)
        .data(words_of(&bytes))
        .run(backend);
    let got = o.bytes();
    let name = std::any::type_name::<T>();
    for t in 0..ranks {
        for (j, op) in OPS.iter().enumerate() {
            for k in 0..OPS_K {
                let mut want = T::of(op_init(j, t, k));
                if !(T::FLOAT && op_is_bitwise(j)) {
                    for r in 0..ranks {
                        if j == OP_REPLACE_INDEX && op_replacer(t, k, ranks) != r {
                            continue;
                        }
                        want = model(j, want, T::of(op_origin(j, r, k)));
                    }
                }
                let at = (t * part * 8) as usize + (j * OPS_K + k) * size;
                let g: T = read(got, at);
                assert_eq!(
                    g.bits(),
                    want.bits(),
                    "{name}: rank {t}, {} element {k}: {g:?}, the model {want:?}",
                    gpu_mpi::device::collective::SystemOperation::name_of(op.code())
                );
            }
        }
        untouched(got, &initial, t, part, len * size, 8 * part as usize);
    }
    let mut rec = o.rank(0);
    let id = T::DATATYPE.id;
    let op_error = |j: usize| {
        if T::FLOAT {
            Err(Error::InvalidOperation {
                op: OPS[j].code(),
                datatype: id,
            })
        } else {
            Ok(())
        }
    };
    let checks = [
        ("band to PROC_NULL", op_error(4)),
        ("bor to PROC_NULL", op_error(5)),
        ("bxor to PROC_NULL", op_error(6)),
        ("land to PROC_NULL", op_error(7)),
        ("lor to PROC_NULL", op_error(8)),
        ("get_accumulate bxor to PROC_NULL", op_error(6)),
        ("fetch_and_op land to PROC_NULL", op_error(7)),
        ("band to rank 0", op_error(4)),
    ];
    rec.expect(&checks);
    if T::FLOAT {
        assert_eq!(op_error(4).unwrap_err().class(), ErrorClass::Op);
    }
}

fn every_predefined_operation_matches_a_sequential_model(backend: Backend) {
    ops_of::<u8>(backend, T_U8);
    ops_of::<i8>(backend, T_I8);
    ops_of::<u16>(backend, T_U16);
    ops_of::<i16>(backend, T_I16);
    ops_of::<u32>(backend, T_U32);
    ops_of::<i32>(backend, T_I32);
    ops_of::<u64>(backend, T_U64);
    ops_of::<i64>(backend, T_I64);
    ops_of::<f32>(backend, T_F32);
    ops_of::<f64>(backend, T_F64);
}
testgen!(every_predefined_operation_matches_a_sequential_model);

// ---- synchronisation rules -----------------------------------------------------

fn synchronisation_errors_name_their_reason(backend: Backend) {
    sync_errors(backend, None, false);
}
testgen!(synchronisation_errors_name_their_reason);

/// As above on a duplicate of the world: a sub-communicator's window,
/// whose fences and free agree on the reasons in the window's own barrier
/// (every member fails alike, the next fence passes).
fn a_sub_communicators_window_keeps_the_synchronisation_rules(backend: Backend) {
    sync_errors(backend, None, true);
}
testgen!(a_sub_communicators_window_keeps_the_synchronisation_rules);

/// `dup`: the windows on a duplicate of the world.
fn sync_errors(backend: Backend, schedule: Option<Schedule>, dup: bool) {
    use RmaSyncReason::*;
    let (ranks, holder) = (12u32, 5);
    let o = Case::new(&RMA_SYNC_ERRORS, ranks, 300)
        .spec(|s| s.block_dim(4).window_bytes(64))
        .params(holder, dup as u32)
        .schedule(schedule)
        .run(backend);
    let p = ranks as i32;
    for r in 0..p {
        let at = |k: i32| (r + k) % p;
        let next = at(1);
        let steps: Vec<(&str, Result<(), Error>)> = vec![
            ("put before any fence", sync(next, NoEpoch)),
            ("get before any fence", sync(next, NoEpoch)),
            ("accumulate before any fence", sync(next, NoEpoch)),
            ("fetch_and_op before any fence", sync(next, NoEpoch)),
            ("compare_and_swap before any fence", sync(next, NoEpoch)),
            ("get_accumulate before any fence", sync(next, NoEpoch)),
            ("put_notify before any fence", sync(next, NoEpoch)),
            ("flush without a lock", sync(next, NotLocked)),
            ("flush_all without a lock", sync(-2, NotLocked)),
            ("flush_local without a lock", sync(next, NotLocked)),
            ("flush_local_all without a lock", sync(-2, NotLocked)),
            ("unlock without a lock", sync(next, NotLocked)),
            ("unlock_all without lock_all", sync(-2, NotLocked)),
            ("the first fence", Ok(())),
            ("put in the fence epoch", Ok(())),
            ("flush in a fence epoch", sync(next, NotLocked)),
            ("fence NO_SUCCEED", Ok(())),
            ("put after NO_SUCCEED", sync(next, NoEpoch)),
            ("get after NO_SUCCEED", sync(next, NoEpoch)),
            ("lock exclusive", Ok(())),
            ("lock the same target again", sync(next, AlreadyLocked)),
            ("put under the lock", Ok(())),
            ("put to a target not locked", sync(at(2), NoEpoch)),
            ("flush the locked target", Ok(())),
            ("flush a target not locked", sync(at(2), NotLocked)),
            ("flush_local_all under a lock", Ok(())),
            ("lock_all while holding a lock", sync(-2, AlreadyLocked)),
            ("unlock", Ok(())),
            ("unlock again", sync(next, NotLocked)),
            ("MAX_LOCKS shared locks", Ok(())),
            ("one lock more", sync(at(1 + MAX_LOCKS as i32), TooManyLocks)),
            ("lock_all while holding locks", sync(-2, AlreadyLocked)),
            ("their unlocks", Ok(())),
            ("lock_all", Ok(())),
            ("lock under lock_all", sync(next, AlreadyLocked)),
            ("unlock under lock_all", sync(next, NotLocked)),
            ("put under lock_all", Ok(())),
            ("flush under lock_all", Ok(())),
            ("flush_all under lock_all", Ok(())),
            ("lock_all twice", sync(-2, AlreadyLocked)),
            ("unlock_all", Ok(())),
            ("unlock_all twice", sync(-2, NotLocked)),
            ("fence while one rank holds a lock", sync(-2, LocksHeld)),
            ("fence after it unlocked", Ok(())),
            ("fence while one rank holds lock_all", sync(-2, LocksHeld)),
            ("fence after unlock_all", Ok(())),
            ("free while one rank holds a lock", sync(-2, LocksHeld)),
        ];
        let mut rec = o.rank(r as u32);
        rec.expect(&steps);
        assert_eq!(rec.word(), 1, "rank {r}: the failed free kept its id");
    }
    assert_eq!(sync(0, NoEpoch).unwrap_err().class(), ErrorClass::RmaSync);
}

// ---- bad input ---------------------------------------------------------------

fn bad_arguments_fail_alone_and_write_nothing(backend: Backend) {
    let ranks = 6u32;
    let part = 2;
    let o = Case::new(&RMA_BAD_INPUT, ranks, 200)
        .spec(|s| s.block_dim(3))
        .part(part)
        .run(backend);
    let p = ranks as i32;
    let n = NOTIFICATIONS;
    let bad_rank = |rank: i32| Err(Error::InvalidRank { rank, size: p });
    let counter = |index: u32| Err(Error::OutOfBounds { index, len: n });
    for r in 0..p {
        let next = (r + 1) % p;
        let mut rec = o.rank(r as u32);
        rec.expect(&[("every call on PROC_NULL", Ok(()))]);
        assert_eq!(rec.words(3), [NONE; 3], "rank {r}: what the PROC_NULL gets left");
        let steps: Vec<(&str, Result<(), Error>)> = vec![
            ("put of 2 at 3", range(next, 12, 8, 16)),
            ("get of 2 at 3", range(next, 12, 8, 16)),
            ("accumulate of 2 at 3", range(next, 12, 8, 16)),
            ("get_accumulate of 2 at 3", range(next, 12, 8, 16)),
            ("fetch_and_op at 4", range(next, 16, 4, 16)),
            ("compare_and_swap at 4", range(next, 16, 4, 16)),
            ("put_notify at 4", range(next, 16, 4, 16)),
            ("accumulate_notify at 4", range(next, 16, 4, 16)),
            ("put at usize::MAX", range(next, u32::MAX, 4, 16)),
            ("put of 5 at 0", range(next, 0, 20, 16)),
            ("empty put at the end", Ok(())),
            ("empty put past the end", range(next, 20, 0, 16)),
            ("empty get at the end", Ok(())),
            ("put to rank p", bad_rank(p)),
            ("get from rank -5", bad_rank(-5)),
            ("accumulate to rank p + 3", bad_rank(p + 3)),
            ("fetch_and_op to rank p", bad_rank(p)),
            ("lock of rank p", bad_rank(p)),
            ("put_notify to rank -7", bad_rank(-7)),
            (
                "get_accumulate into 3 of 2",
                Err(Error::CountMismatch {
                    count: 3,
                    expected: 2,
                }),
            ),
            (
                "get_accumulate into 1 of 2, PROC_NULL",
                Err(Error::CountMismatch {
                    count: 1,
                    expected: 2,
                }),
            ),
            ("put_notify on counter NOTIFICATIONS", counter(n)),
            ("accumulate_notify on counter NOTIFICATIONS + 1", counter(n + 1)),
            ("put_notify to PROC_NULL on a bad counter", counter(n)),
            ("wait_notifications on a bad counter", counter(n)),
            ("test_notifications on counter 100", counter(100)),
        ];
        rec.expect(&steps);
        assert_eq!(rec.words(6), [NONE; 6], "rank {r}: what the failed calls left");
        assert_eq!(
            rec.words(2),
            [0, 0],
            "rank {r}: no notification from a failed call"
        );
    }
    // Nothing reached any window.
    let initial = pattern((ranks * part) as usize);
    assert_eq!(o.data, initial, "the windows changed");
    assert_eq!(range(0, 0, 0, 0).unwrap_err().class(), ErrorClass::RmaRange);
    assert_eq!(counter(n).unwrap_err().class(), ErrorClass::Arg);
    assert_eq!(bad_rank(p).unwrap_err().class(), ErrorClass::Rank);
    assert_eq!(
        Error::CountMismatch {
            count: 3,
            expected: 2
        }
        .class(),
        ErrorClass::Count
    );
}
testgen!(bad_arguments_fail_alone_and_write_nothing);

fn windows_of_different_types_fail_with_err_type(backend: Backend) {
    let ranks = 8u32;
    let o = Case::new(&RMA_TYPE_MISMATCH, ranks, 30)
        .spec(|s| s.window_bytes(64))
        .run(backend);
    let (u, f) = (u32::DATATYPE.id, f32::DATATYPE.id);
    for r in 0..ranks {
        let other = (r + 1) % ranks;
        let (mine, theirs) = if r % 2 == 0 { (u, f) } else { (f, u) };
        let e = Error::RmaType {
            target: other as i32,
            window: theirs,
            expected: mine,
        };
        let wrong = Err(e);
        o.rank(r).expect(&[
            ("put", wrong),
            ("get", wrong),
            ("accumulate", wrong),
            ("fetch_and_op", wrong),
            ("compare_and_swap", wrong),
            ("put to a window of the same type", Ok(())),
        ]);
        assert_eq!(e.class(), ErrorClass::Type);
    }
}
testgen!(windows_of_different_types_fail_with_err_type);

// ---- passive target ------------------------------------------------------------

fn lock_counter(
    backend: Backend,
    options: CpuOptions,
    schedule: Option<Schedule>,
    kind: u32,
    ranks: u32,
    k: u32,
) -> (u32, Vec<u32>) {
    let o = Case::new(&RMA_LOCK_COUNTER, ranks, k + 1)
        .spec(|s| s.block_dim(8).window_bytes(64))
        .params(k, kind)
        .options(options)
        .schedule(schedule)
        .run(backend);
    let mut seen = Vec::new();
    let mut total = 0;
    for r in 0..ranks {
        let mut rec = o.rank(r);
        seen.extend(rec.words(k as usize));
        let last = rec.word();
        if r == 0 {
            total = last;
        } else {
            assert_eq!(last, NONE);
        }
    }
    (total, seen)
}

fn exclusive_locks_serialise_a_read_modify_write(backend: Backend) {
    exclusive_counter(backend, None);
}
testgen!(exclusive_locks_serialise_a_read_modify_write);

fn exclusive_counter(backend: Backend, schedule: Option<Schedule>) {
    let (ranks, k) = (32, 6);
    let (total, mut seen) = lock_counter(
        backend,
        CpuOptions::default(),
        schedule,
        COUNTER_EXCLUSIVE,
        ranks,
        k,
    );
    assert_eq!(total, ranks * k, "lost updates");
    for r in 0..ranks as usize {
        let mine = &seen[r * k as usize..(r + 1) * k as usize];
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "rank {r} read {mine:?}");
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..ranks * k).collect::<Vec<_>>(), "every value read once");
}

/// The counter of `exclusive_locks_serialise_a_read_modify_write` under
/// shared locks, on one worker of the emulator (a deterministic
/// interleaving): the ranks read the same values and updates are lost,
/// so that test would fail without mutual exclusion.
#[test]
fn the_same_read_modify_write_under_shared_locks_loses_updates() {
    let options = CpuOptions {
        workers: 1,
        ..CpuOptions::default()
    };
    let (ranks, k) = (32, 6);
    let (total, mut seen) = lock_counter(Backend::Cpu, options, None, COUNTER_SHARED, ranks, k);
    assert!(total < ranks * k, "{total}");
    seen.sort_unstable();
    seen.dedup();
    assert!(seen.len() < (ranks * k) as usize);
}

fn shared_lock_counters_fetch_every_value_once(backend: Backend) {
    shared_counters(backend, None);
}
testgen!(shared_lock_counters_fetch_every_value_once);

fn shared_counters(backend: Backend, schedule: Option<Schedule>) {
    let (ranks, k) = (24u32, 5u32);
    let slots = 3 * k + 6;
    let o = Case::new(&RMA_SHARED_COUNTERS, ranks, slots)
        .spec(|s| s.block_dim(8).window_bytes(64))
        .params(k, 0)
        .schedule(schedule)
        .run(backend);
    let mut fetched: [Vec<u32>; 3] = Default::default();
    let mut swapped = Vec::new();
    let mut last = Vec::new();
    for r in 0..ranks {
        let mut rec = o.rank(r);
        let mut mine: [Vec<u32>; 3] = Default::default();
        for _ in 0..k {
            for (e, v) in rec.words(3).into_iter().enumerate() {
                mine[e].push(v);
            }
        }
        for (e, m) in mine.iter().enumerate() {
            // Accesses of one origin to one location happen in program
            // order (MPI 4.1 §12.7.2).
            assert!(m.windows(2).all(|w| w[0] < w[1]), "rank {r}, counter {e}: {m:?}");
            fetched[e].extend(m);
        }
        swapped.push(rec.word());
        let end = rec.words(5);
        if r == 0 {
            last = end;
        } else {
            assert_eq!(end, [NONE; 5], "rank {r}");
        }
    }
    for (e, f) in fetched.iter_mut().enumerate() {
        f.sort_unstable();
        assert_eq!(
            *f,
            (0..ranks * k).collect::<Vec<_>>(),
            "counter {e}: every value fetched once"
        );
    }
    let sum: u32 = (1..=ranks).sum();
    assert_eq!(last[0], ranks * k);
    assert_eq!(last[1], sum, "the accumulates");
    assert_eq!(last[3..], [ranks * k; 2], "the get_accumulates");
    // The swaps form a chain: every value stored is read back once, by
    // the next swap or at the end.
    let mut chain = swapped.clone();
    chain.push(last[2]);
    chain.sort_unstable();
    assert_eq!(
        chain,
        (0..=ranks).collect::<Vec<_>>(),
        "swapped {swapped:?}, last {}",
        last[2]
    );
}

fn compare_and_swap_claims_distinct_slots_and_builds_a_lock(backend: Backend) {
    cas(backend, None);
}
testgen!(compare_and_swap_claims_distinct_slots_and_builds_a_lock);

fn cas(backend: Backend, schedule: Option<Schedule>) {
    let (ranks, k) = (16u32, 10u32);
    let n = ranks as usize;
    let part = (n + 2).div_ceil(2) as u32;
    let o = Case::new(&RMA_CAS, ranks, 2)
        .spec(|s| s.block_dim(8))
        .part(part)
        .params(k, 0)
        .data(vec![0; (ranks * part) as usize])
        .schedule(schedule)
        .run(backend);
    let words: &[u32] = bytemuck::cast_slice(&o.data);
    let window = |t: u32| &words[(t * part * 2) as usize..][..n + 2];
    let mut slots = Vec::new();
    for r in 0..ranks {
        let slot = o.rank(r).word();
        assert!(slot < ranks, "rank {r} claimed no slot");
        assert_eq!(window(0)[slot as usize], r + 1, "rank {r}'s slot {slot}");
        slots.push(slot);
    }
    slots.sort_unstable();
    assert_eq!(slots, (0..ranks).collect::<Vec<_>>(), "distinct slots");
    assert_eq!(window(1)[n], 0, "the lock is free at the end");
    assert_eq!(window(1)[n + 1], ranks * k, "the counter it guards");
    assert_eq!(&window(0)[n..], [0, 0]);
    for t in 2..ranks {
        assert!(window(t).iter().all(|&w| w == 0), "rank {t}'s window");
    }
}

// ---- notified access -------------------------------------------------------------

fn put_notify_hands_a_payload_to_its_consumer(backend: Backend) {
    handoff(backend, None);
}
testgen!(put_notify_hands_a_payload_to_its_consumer);

fn handoff(backend: Backend, schedule: Option<Schedule>) {
    let (ranks, rounds) = (16u32, 20u32);
    let o = Case::new(&RMA_NOTIFY_HANDOFF, ranks, 2)
        .spec(|s| s.block_dim(8).window_bytes(2 * HANDOFF_WORDS as u32 * 8))
        .params(rounds, 0)
        .schedule(schedule)
        .run(backend);
    for r in 0..ranks {
        assert_eq!(
            o.rank(r).words(2),
            [0, 0],
            "rank {r}: wrong elements (or acks left), flush"
        );
    }
}

fn notifications_from_many_producers_are_counted_exactly(backend: Backend) {
    many_producers(backend, None);
}
testgen!(notifications_from_many_producers_are_counted_exactly);

fn many_producers(backend: Backend, schedule: Option<Schedule>) {
    let (ranks, m) = (16u32, 6u32);
    let total = (ranks - 1) * m;
    let o = Case::new(&RMA_NOTIFY_MANY, ranks, 8)
        .spec(|s| s.block_dim(4).window_bytes(4 * (total + 1)))
        .params(m, 0)
        .schedule(schedule)
        .run(backend);
    let mut rec = o.rank(0);
    let before = rec.word();
    assert!(before <= total, "{before} notifications before any was sent?");
    let sum: u32 = (1..ranks).sum();
    assert_eq!(
        rec.words(6),
        [0, sum, 0, ranks - 1, 0, 0],
        "wrong slots, sum, counter 2 after the wait, counter 4, after its wait, counter 5"
    );
    for r in 1..ranks {
        assert_eq!(o.rank(r).words(3), [0; 3], "rank {r}: flushes under lock_all");
    }
}

// ---- schedules (emulator) ----------------------------------------------------------

/// The synchronising tests on one worker of the emulator, in random
/// orders of the ranks and in PCT's (`Schedule`): the lock protocol, the
/// atomics and the notifications must not depend on the order in which
/// ranks run.
#[test]
fn passive_target_and_notifications_hold_in_random_schedules() {
    for seed in 0..6 {
        for schedule in [Schedule::Random { seed }, Schedule::pct(seed, 3)] {
            let s = Some(schedule);
            sub_communicator_windows(Backend::Cpu, SUB_COLOUR, s);
            sub_communicator_windows(Backend::Cpu, SUB_WARP, s);
            sync_errors(Backend::Cpu, s, false);
            sync_errors(Backend::Cpu, s, true);
            exclusive_counter(Backend::Cpu, s);
            shared_counters(Backend::Cpu, s);
            cas(Backend::Cpu, s);
            handoff(Backend::Cpu, s);
            many_producers(Backend::Cpu, s);
        }
    }
}

// ---- deadlock reports (emulator: exact reports) ------------------------------------

fn deadlock(case: u32, ranks: u32) -> (DeadlockReport, String) {
    deadlock_with(case, ranks, |s| s)
}

fn deadlock_with(
    case: u32,
    ranks: u32,
    spec: impl FnOnce(WorldSpec) -> WorldSpec,
) -> (DeadlockReport, String) {
    let e = Case::new(&RMA_DEADLOCK, ranks, 0)
        .spec(|s| spec(s.window_bytes(64)))
        .params(case, 0)
        .try_run(Backend::Cpu)
        .err()
        .expect("the kernel deadlocks");
    let text = e.to_string();
    match e {
        HostError::Deadlock(report) => (report, text),
        other => panic!("expected a deadlock, got {other}"),
    }
}

fn lock_wait(target: i32, window: i32) -> BlockedState {
    BlockedState::Waiting {
        operation: Call::WinLock as u32,
        peer: target,
        tag: window,
    }
}

#[test]
fn a_rank_that_returns_holding_a_lock_leaves_the_others_waiting_for_it() {
    let (report, text) = deadlock(DEADLOCK_LOCK_HELD, 4);
    assert_eq!(report.state_of(0), Some(BlockedState::Exited), "{text}");
    for r in 1..4 {
        assert_eq!(report.state_of(r), Some(lock_wait(0, 0)), "{text}");
    }
    // The hints read the holder from rank 0's lock word.
    assert_eq!(
        text,
        "deadlock: ranks 1-3: window lock(target 0, window 0); rank 0: exited\n\
         hint: rank 1 waits for the lock of rank 0's window 0, which rank 0 holds exclusively and returned without unlocking\n\
         hint: rank 2 waits for the lock of rank 0's window 0, which rank 0 holds exclusively and returned without unlocking\n\
         hint: rank 3 waits for the lock of rank 0's window 0, which rank 0 holds exclusively and returned without unlocking"
    );
    assert!(report.hints.contains(&Hint::LockHeld {
        rank: 2,
        target: 0,
        window: 0,
        holder: LockHolder::Exclusive {
            rank: 0,
            exited: true
        },
    }));
}

#[test]
fn a_notification_wait_nobody_answers_is_reported() {
    let (report, text) = deadlock(DEADLOCK_NOTIFICATION, 3);
    assert_eq!(
        report.state_of(0),
        Some(BlockedState::Waiting {
            operation: Call::WinNotify as u32,
            peer: -1,
            tag: 3
        }),
        "{text}"
    );
    assert_eq!(
        text,
        "deadlock: rank 0: window notification wait(counter 3); ranks 1-2: exited"
    );
}

#[test]
fn a_fence_a_rank_never_enters_is_reported_as_a_window_fence() {
    let (report, text) = deadlock(DEADLOCK_FENCE, 3);
    assert_eq!(report.state_of(0), Some(BlockedState::Exited), "{text}");
    for r in 1..3 {
        assert_eq!(
            report.state_of(r),
            Some(BlockedState::Waiting {
                operation: Call::WinFence as u32,
                peer: -2,
                tag: 0
            }),
            "{text}"
        );
    }
    assert_eq!(
        text,
        "deadlock: ranks 1-2: window fence(window 0); rank 0: exited"
    );
}

/// A free, and a sub-communicator's fence and free (the window's own
/// barrier), that rank 0 never enters: each waiting rank is named in the
/// operation it waits in.
#[test]
fn a_free_or_a_sub_communicators_fence_a_rank_never_enters_is_reported() {
    for (case, name, call) in [
        (DEADLOCK_FREE, "window free", Call::WinFree),
        (DEADLOCK_SUB_FENCE, "window fence", Call::WinFence),
        (DEADLOCK_SUB_FREE, "window free", Call::WinFree),
    ] {
        let (report, text) = deadlock(case, 3);
        assert_eq!(report.state_of(0), Some(BlockedState::Exited), "{text}");
        for r in 1..3 {
            assert_eq!(
                report.state_of(r),
                Some(BlockedState::Waiting {
                    operation: call as u32,
                    peer: -2,
                    tag: 0
                }),
                "{text}"
            );
        }
        assert_eq!(
            text,
            format!("deadlock: ranks 1-2: {name}(window 0); rank 0: exited")
        );
    }
}

#[test]
fn a_lock_held_across_a_notification_wait_is_a_cycle() {
    let (report, text) = deadlock(DEADLOCK_CYCLE, 4);
    assert_eq!(report.state_of(1), Some(lock_wait(0, 0)), "{text}");
    assert_eq!(
        text,
        "deadlock: rank 0: window notification wait(counter 2); \
         rank 1: window lock(target 0, window 0); ranks 2-3: exited\n\
         hint: rank 1 waits for the lock of rank 0's window 0, which rank 0 holds exclusively"
    );
}

// ---- errors as the host reports them ---------------------------------------------

fn failed(backend: Backend, case: u32, ranks: u32) -> (Vec<(u32, Error)>, String) {
    let e = Case::new(&RMA_FAILS, ranks, 0)
        .spec(|s| s.window_bytes(64))
        .params(case, 0)
        .try_run(backend)
        .err()
        .expect("the kernel fails");
    let text = e.to_string();
    match e {
        HostError::RankFailed { errors, .. } => (errors, text),
        other => panic!("expected RankFailed, got {other}"),
    }
}

/// The errors a kernel returns reach the host whole, and the report reads
/// well: a range error names the target, the bytes and the window's
/// size; a fence while one rank holds a lock fails every rank, whose
/// message must not claim that each holds one.
fn returned_rma_errors_reach_the_host_and_read_well(backend: Backend) {
    let (errors, text) = failed(backend, FAIL_RANGE, 4);
    let e = Error::RmaRange {
        target: 2,
        offset: 12,
        bytes: 8,
        size: 16,
    };
    assert_eq!(errors, vec![(1, e)]);
    assert_eq!(
        text,
        "1 of 4 ranks failed: rank 1: MPI_ERR_RMA_RANGE: 8 bytes at byte 12 of rank 2's window reach past its 16 bytes"
    );
    let (errors, text) = failed(backend, FAIL_FENCE_WITH_LOCK, 4);
    let e = sync(-2, RmaSyncReason::LocksHeld).unwrap_err();
    assert_eq!(errors, (0..4).map(|r| (r, e)).collect::<Vec<_>>());
    assert_eq!(
        text,
        "4 of 4 ranks failed: ranks 0-3: MPI_ERR_RMA_SYNC: a fence or free of a window while a rank \
         holds locks of it (this rank or another): every rank must unlock first"
    );
}
testgen!(returned_rma_errors_reach_the_host_and_read_well);

/// Every one-sided error survives the trip through a result record and
/// reads as documented.
#[test]
fn rma_errors_round_trip_and_read_well() {
    use RmaSyncReason::*;
    let e = |target, reason| sync(target, reason).unwrap_err();
    let cases = [
        (
            Error::RmaRange {
                target: 3,
                offset: 12,
                bytes: 8,
                size: 16,
            },
            "MPI_ERR_RMA_RANGE: 8 bytes at byte 12 of rank 3's window reach past its 16 bytes",
        ),
        (
            e(2, NoEpoch),
            "MPI_ERR_RMA_SYNC: a one-sided operation outside an access epoch (target 2): \
             call fence, lock or lock_all first",
        ),
        (
            e(5, AlreadyLocked),
            "MPI_ERR_RMA_SYNC: this rank already holds a lock of the window (target 5)",
        ),
        (
            e(-2, AlreadyLocked),
            "MPI_ERR_RMA_SYNC: this rank already holds a lock of the window",
        ),
        (
            e(1, NotLocked),
            "MPI_ERR_RMA_SYNC: this rank holds no such lock of the window (target 1)",
        ),
        (
            e(-2, LocksHeld),
            "MPI_ERR_RMA_SYNC: a fence or free of a window while a rank holds locks of it \
             (this rank or another): every rank must unlock first",
        ),
        (
            e(4, TooManyLocks),
            "MPI_ERR_RMA_SYNC: more than 6 targets of one window locked at once by this rank \
             (lock_all has no limit)",
        ),
        (
            Error::RmaType {
                target: 1,
                window: f32::DATATYPE.id,
                expected: u32::DATATYPE.id,
            },
            "MPI_ERR_TYPE: rank 1's window holds MPI_FLOAT, the operation moves MPI_UINT32_T",
        ),
        (
            Error::WindowLimit { limit: 3 },
            "MPI_ERR_WIN: the world holds 3 windows at once and all are in use (WorldSpec::windows)",
        ),
        (
            Error::WindowMemory { rank: 2 },
            "MPI_ERR_WIN: rank 2 created the window over memory other ranks cannot reach \
             (a thread's stack): use a GlobalSlice, the scratch or Window::allocate",
        ),
        (
            Error::WindowAllocation {
                requested: 80,
                available: 64,
            },
            "MPI_ERR_NO_MEM: a window of 80 bytes per rank asked for, 64 bytes per rank and \
             window in the world (WorldSpec::window_bytes)",
        ),
    ];
    assert_eq!(MAX_LOCKS, 6);
    for (e, text) in cases {
        assert_eq!(Error::from_words(e.to_words()), Some(e), "{e:?}");
        assert_eq!(e.to_string(), text);
    }
}

/// With a timeout (the GPU's way to end a deadlock) one of the ranks
/// waiting for the lock times out with `MPI_ERR_TIMEOUT`, aborts the
/// world, the others give up, and the report still names the lock.
#[test]
fn a_lock_wait_times_out_and_is_reported() {
    let spec = |s: WorldSpec| s.timeout(std::time::Duration::from_millis(200));
    let (report, text) = deadlock_with(DEADLOCK_LOCK_HELD, 4, spec);
    assert_eq!(report.state_of(0), Some(BlockedState::Exited), "{text}");
    let wait = (Call::WinLock as u32, 0, 0);
    let states: Vec<_> = (1..4).map(|r| report.state_of(r).unwrap()).collect();
    let timed_out = states
        .iter()
        .filter(|s| matches!(s, BlockedState::TimedOut { operation, peer, tag } if (*operation, *peer, *tag) == wait))
        .count();
    let aborted = states
        .iter()
        .filter(|s| matches!(s, BlockedState::Aborted { operation, peer, tag } if (*operation, *peer, *tag) == wait))
        .count();
    assert_eq!((timed_out, aborted), (1, 2), "{text}");
    assert!(
        text.contains("timed out in window lock(target 0, window 0)"),
        "{text}"
    );
}

// ---- request-based operations ----------------------------------------------------

fn request_based_operations_complete_locally_in_passive_epochs(backend: Backend) {
    let ranks = 12;
    let o = Case::new(&RMA_REQUESTS, ranks, 4)
        .spec(|s| s.window_bytes(4 * (ranks + 1)))
        .run(backend);
    for r in 0..ranks as usize {
        let w = &o.out[4 * r..4 * r + 4];
        assert_eq!(w[0], r as u32 + 1, "rank {r}: rget of rank 0's element {}", r + 1);
        assert_eq!(w[1], 1, "rank {r}: rget_accumulate of the next rank's element 0");
        assert_eq!(w[2], 1, "rank {r}: the requests tested complete");
        assert_eq!(
            w[3],
            ErrorClass::RmaSync as u32,
            "rank {r}: rput outside a passive epoch"
        );
    }
}
testgen!(request_based_operations_complete_locally_in_passive_epochs);

// ---- operations with datatypes ---------------------------------------------

/// The types of [`RMA_TYPED`]'s table, in the order of its `TY_*` indices.
fn typed_types() -> Vec<CommittedType> {
    let u32s: UserDatatype = Primitive::U32.into();
    let f32s: UserDatatype = Primitive::F32.into();
    let types = [
        UserDatatype::vector(4, 1, 5, &u32s),
        Ok(u32s.clone()),
        UserDatatype::vector(4, 1, 2, &u32s),
        UserDatatype::indexed(&[2, 1, 3], &[0, 5, 9], &u32s),
        UserDatatype::structured(&[1, 1], &[0, 8], &[u32s.clone(), f32s.clone()]),
        UserDatatype::structured(&[1, 1], &[0, 4], &[u32s.clone(), f32s.clone()]),
        UserDatatype::structured(&[1, 1], &[0, 4], &[f32s.clone(), u32s.clone()]),
        UserDatatype::vector(4, 1, 5, &f32s),
        UserDatatype::hindexed(&[1], &[2], &u32s),
        UserDatatype::hindexed(&[1], &[-4], &u32s),
    ];
    assert_eq!(types.len(), TY_COUNT);
    types.into_iter().map(|t| t.unwrap().commit().unwrap()).collect()
}

/// The table as the kernel reads it: the count, the lengths, the words.
fn typed_table(types: &[CommittedType]) -> Vec<u64> {
    let mut t = vec![types.len() as u64];
    t.extend(types.iter().map(|c| c.words().len() as u64));
    for c in types {
        t.extend_from_slice(c.words());
    }
    t
}

/// Words of each rank's part in [`RMA_TYPED`].
const TYPED_PART: u32 = (TYPED_ELEMS / 2) as u32;

/// A run of [`RMA_TYPED`] case `case` on `ranks` ranks, each window
/// starting as `data` (or the pattern).
fn typed(backend: Backend, case: u32, ranks: u32, slots: u32, data: Vec<u64>) -> Outcome {
    let mut c = Case::new(&RMA_TYPED, ranks, slots)
        .part(TYPED_PART)
        .params(case, 0);
    if !data.is_empty() {
        c = c.data(data);
    }
    c.table = typed_table(&typed_types());
    c.run(backend)
}

/// Rank `r`'s matrix after the launch, as `u32`s.
fn matrix(o: &Outcome, r: u32) -> Vec<u32> {
    let at = (r * TYPED_PART * 8) as usize;
    (0..TYPED_ELEMS)
        .map(|k| read::<u32>(o.bytes(), at + 4 * k))
        .collect()
}

/// The pattern's matrix of rank `r`.
fn pattern_matrix(ranks: u32, r: u32) -> Vec<u32> {
    let p = pattern((ranks * TYPED_PART) as usize);
    let bytes: &[u8] = bytemuck::cast_slice(&p);
    let at = (r * TYPED_PART * 8) as usize;
    (0..TYPED_ELEMS).map(|k| read::<u32>(bytes, at + 4 * k)).collect()
}

fn typed_puts_fill_columns_and_gets_read_them_back(backend: Backend) {
    let ranks = 4;
    let o = typed(backend, TYPED_COLUMNS, ranks, 4, Vec::new());
    for t in 0..ranks {
        let mut want = pattern_matrix(ranks, t);
        for c in 0..ranks {
            for i in 0..4 {
                want[(5 * i + c) as usize] = column_value(c, t, i);
            }
        }
        assert_eq!(matrix(&o, t), want, "rank {t}'s matrix (column 4 untouched)");
        let (c, from) = ((t + 1) % ranks, (t + 2) % ranks);
        let got: Vec<u32> = (0..4).map(|i| column_value(c, from, i)).collect();
        assert_eq!(o.rank(t).words(4), got, "rank {t}: column {c} of rank {from}");
    }
}
testgen!(typed_puts_fill_columns_and_gets_read_them_back);

fn typed_operations_are_traced_with_their_target_datatypes_bytes(backend: Backend) {
    use gpu_mpi::device::abi::trace::RmaOp;
    let ranks = 4;
    let mut c = Case::new(&RMA_TYPED, ranks, 4)
        .part(TYPED_PART)
        .params(TYPED_COLUMNS, 0)
        .spec(|s| s.trace(64));
    c.table = typed_table(&typed_types());
    let o = c.run(backend);
    let t = o.trace.expect("a trace");
    assert_eq!(t.dropped(), 0);
    let ops = t.rma_operations();
    for r in 0..ranks {
        // A column is 4 u32s of a 4x5 row-major matrix: 16 bytes, its
        // first element at column r (a put) or (r + 1) % ranks (the get).
        let mut want: Vec<_> = (0..ranks).map(|to| (RmaOp::Put, to, 16, 4 * r as u64)).collect();
        want.push((RmaOp::Get, (r + 2) % ranks, 16, 4 * ((r + 1) % ranks) as u64));
        let mine: Vec<_> = ops
            .iter()
            .filter(|o| o.origin == r)
            .map(|o| (o.op, o.target, o.bytes, o.offset))
            .collect();
        assert_eq!(mine, want, "rank {r}");
    }
}
testgen!(typed_operations_are_traced_with_their_target_datatypes_bytes);

fn notified_typed_operations_hand_columns_to_the_next_rank(backend: Backend) {
    let ranks = 5;
    let o = typed(backend, TYPED_NOTIFY, ranks, 9, Vec::new());
    for r in 0..ranks {
        let prev = (r + ranks - 1) % ranks;
        let initial = pattern_matrix(ranks, r);
        let mut want: Vec<u32> = (0..4).map(|i| column_value(prev, r, i)).collect();
        want.extend((0..4).map(|i| initial[5 * i + 4].wrapping_add(prev + 1)));
        let mut rec = o.rank(r);
        assert_eq!(
            rec.words(8),
            want,
            "rank {r}: columns 0 and 4 after both notifications"
        );
        assert_eq!(
            rec.word(),
            ErrorClass::Arg as u32,
            "rank {r}: counter {NOTIFICATIONS}"
        );
        let mut m = initial;
        for i in 0..4 {
            m[5 * i] = column_value(prev, r, i as u32);
            m[5 * i + 4] = m[5 * i + 4].wrapping_add(prev + 1);
        }
        assert_eq!(matrix(&o, r), m, "rank {r}'s matrix: nothing else written");
    }
}
testgen!(notified_typed_operations_hand_columns_to_the_next_rank);

fn typed_operations_on_a_dynamic_window_stay_in_its_attached_regions(backend: Backend) {
    let ranks = 6;
    let o = typed(backend, TYPED_DYNAMIC, ranks, 6, Vec::new());
    for r in 0..ranks {
        let prev = (r + ranks - 1) % ranks;
        let mut rec = o.rank(r);
        assert_eq!(
            rec.words(2),
            [ErrorClass::RmaRange as u32; 2],
            "rank {r}: a column one past the region, and one where nothing is attached"
        );
        let col: Vec<u32> = (0..4).map(|i| column_value(prev, r, i)).collect();
        assert_eq!(rec.words(4), col, "rank {r}: the column the previous rank put");
        let mut want = pattern_matrix(ranks, r);
        for i in 0..4 {
            want[5 * i + (prev % 5) as usize] = col[i];
        }
        assert_eq!(matrix(&o, r), want, "rank {r}'s matrix: nothing else written");
    }
}
testgen!(typed_operations_on_a_dynamic_window_stay_in_its_attached_regions);

fn typed_operations_take_strided_and_contiguous_views(backend: Backend) {
    let ranks = 4;
    let o = typed(backend, TYPED_VIEWS, ranks, 9, Vec::new());
    for t in 0..ranks {
        let from = (t + ranks - 1) % ranks;
        let mut want = pattern_matrix(ranks, t);
        for k in 0..4u32 {
            // Row 0, columns 1..5: every other element of the origin.
            want[1 + k as usize] = 100 * from + 2 * k;
            // Column 0: the same from the second origin.
            want[5 * k as usize] = 100 * from + 50 + 2 * k;
            // Row 2, columns 1..5: the contiguous view.
            want[11 + k as usize] = 100 * from + 80 + k;
        }
        assert_eq!(matrix(&o, t), want, "rank {t}'s matrix");
        let mut rec = o.rank(t);
        assert_eq!(rec.word(), 1, "rank {t}: the contiguous view is one run");
        let next = (t + 1) % ranks;
        let got = rec.words(8);
        for k in 0..8u32 {
            let w = if k % 2 == 0 { 100 * t + k } else { NONE };
            assert_eq!(
                got[k as usize], w,
                "rank {t}: element {k} of what it got back from rank {next}"
            );
        }
    }
}
testgen!(typed_operations_take_strided_and_contiguous_views);

fn typed_operations_reach_indexed_and_struct_targets(backend: Backend) {
    let ranks = 3;
    let o = typed(backend, TYPED_INDEXED, ranks, 10, Vec::new());
    for t in 0..ranks {
        let from = (t + ranks - 1) % ranks;
        let mut want = pattern_matrix(ranks, t);
        for (k, e) in [1usize, 2, 6, 10, 11, 12].into_iter().enumerate() {
            want[e] = 100 * from + k as u32;
        }
        for (k, e) in [13usize, 15, 16, 18].into_iter().enumerate() {
            want[e] = 100 * from + 50 + k as u32;
        }
        assert_eq!(matrix(&o, t), want, "rank {t}'s matrix");
        let mut rec = o.rank(t);
        let six: Vec<u32> = (0..6).map(|k| 100 * t + k).collect();
        assert_eq!(rec.words(6), six, "rank {t}: the indexed elements back");
        let four: Vec<u32> = (0..4).map(|k| 100 * t + 50 + k).collect();
        assert_eq!(rec.words(4), four, "rank {t}: the struct pairs back");
    }
}
testgen!(typed_operations_reach_indexed_and_struct_targets);

fn typed_accumulates_sum_columns_from_every_rank(backend: Backend) {
    let ranks = 5;
    // Every element 1 before the launch.
    let ones = vec![1u64 | (1 << 32); (ranks * TYPED_PART) as usize];
    let o = typed(backend, TYPED_ACCUMULATE, ranks, 12, ones);
    let s: u32 = (1..=ranks).sum();
    for t in 0..ranks {
        let mut want = vec![1u32; TYPED_ELEMS];
        for i in 0..4u32 {
            let e = (5 * i) as usize;
            if t == 0 {
                want[e + 1] = 1 + s * (i + 1);
                want[e + 3] = 1 + ranks;
            }
            if t == 1 {
                want[e + 2] = 1 + s * (2 * i + 1);
            }
            if t == 2 {
                want[e + 4] = ranks - 1;
            }
        }
        assert_eq!(matrix(&o, t), want, "rank {t}'s matrix");
    }
    for i in 0..4 {
        let mut fetched: Vec<u32> = (0..ranks).map(|r| o.rank(r).words(4)[i]).collect();
        fetched.sort();
        let all: Vec<u32> = (1..=ranks).collect();
        assert_eq!(fetched, all, "element {i}: each get_accumulate saw another count");
    }
    for r in 0..ranks {
        let mut rec = o.rank(r);
        rec.words(4);
        let now: Vec<u32> = (0..4).map(|i| 1 + s * (i + 1)).collect();
        assert_eq!(
            rec.words(4),
            now,
            "rank {r}: the sums through a no-op get_accumulate"
        );
        assert_eq!(
            rec.words(4),
            [ranks - 1; 4],
            "rank {r}: the maxima through rget_typed"
        );
    }
}
testgen!(typed_accumulates_sum_columns_from_every_rank);

fn typed_errors_are_classes_and_write_nothing(backend: Backend) {
    let ranks = 3;
    let o = typed(backend, TYPED_ERRORS, ranks, 80, Vec::new());
    let types = typed_types();
    let sig = |i: usize| types[i].type_ref().signature_id();
    let rma_type = |target: i32, window: u32, expected: u32| -> Result<(), Error> {
        Err(Error::RmaType {
            target,
            window,
            expected,
        })
    };
    for r in 0..ranks {
        let next = ((r + 1) % ranks) as i32;
        let mut rec = o.rank(r);
        rec.expect(&[
            ("a put before any fence", sync(next, RmaSyncReason::NoEpoch)),
            ("3 elements into a column of 4", rma_type(next, ID_U32, ID_U32)),
            ("f32s into a u32 column", rma_type(next, ID_U32, ID_F32)),
            ("a column past the window", range(next, 20, 64, 80)),
            ("a get of a column past the window", range(next, 20, 64, 80)),
            (
                "(f32, u32) into (u32, f32)",
                rma_type(next, sig(TY_STRUCT_GAP), sig(TY_STRUCT_SWAP)),
            ),
            ("an accumulate into an f32 column", rma_type(next, ID_U32, ID_F32)),
            (
                "an accumulate into a struct",
                rma_type(next, ID_U32, sig(TY_STRUCT_GAP)),
            ),
            ("an accumulate off alignment", rma_type(next, ID_U32, ID_U32)),
            ("zero counts and PROC_NULL", Ok(())),
            ("an empty origin into a column", rma_type(next, ID_U32, ID_U32)),
            ("a type below the window", range(next, 0, 4, 80)),
            ("a result of 3 for a column", rma_type(next, ID_U32, ID_U32)),
            ("an rput in a fence epoch", sync(next, RmaSyncReason::NoEpoch)),
        ]);
        assert_eq!(rec.words(7), [NONE; 7], "rank {r}: the failed gets' buffers");
        assert_eq!(matrix(&o, r), pattern_matrix(ranks, r), "rank {r}'s window");
    }
}
testgen!(typed_errors_are_classes_and_write_nothing);
