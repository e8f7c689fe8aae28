//! Backend-independent MPI conformance cases, and the kernels they launch
//! ([`KERNELS`], built from the `gpu-mpi-check-kernels` crate).
//!
//! Every [`Case`] launches one or more semantic kernels
//! ([`gpu_mpi_check_kernels`]) on the device it is given, in several
//! world shapes (one rank, one block, several blocks, block sizes that are
//! not powers of two), downloads what every rank recorded and checks each
//! word against what the MPI standard requires. The same cases run on the
//! CPU emulator and on a GPU: `cargo test` runs each as a test per backend
//! (check/tests/semantics.rs, [`testgen`]: the GPU's where one is present),
//! `gpu-mpi-check --backend cpu|cuda` all of them on one. [`for_each_case!`]
//! lists them once. docs/semantics.md lists the rules with their sections
//! of the standard.
//!
//! A case returns `Err` with every mismatch it found (the first ones, each
//! naming the world shape, the rank and the value), or with the host error
//! of a launch that failed.

use gpu_mpi::device::datatype::{ID_F32, ID_F64};
use gpu_mpi::device::{ErrorClass, GlobalSlice, Kernel, ANY_TAG, PROC_NULL};
use gpu_mpi::{BackendKind, BlockedState, Device, HostError, KernelImages, LaunchReport, WorldSpec};
use gpu_mpi_check_kernels::chapter6 as ch6;
use gpu_mpi_check_kernels::collectives::{self as coll, Operand};
use gpu_mpi_check_kernels::faults::{
    FAULT_DEADLOCK_RECEIVE, FAULT_RECEIVE_ANY, FAULT_SEND_SEND, SEMANTICS_FAULTS,
};
use gpu_mpi_check_kernels::nonblocking as nb;
use gpu_mpi_check_kernels::p2p::{self, Mat2};
use gpu_mpi_check_kernels::planted;
use gpu_mpi_check_kernels::skip::{SEMANTICS_SKIP, SKIP_COLLECTIVES};
use gpu_mpi_check_kernels::{pattern_byte, pattern_word, CaseArgs, NONE};
use std::fmt;
use std::time::Duration;

mod datatypes;
pub mod explore;
pub mod testgen;

pub use testgen::TEST_BACKEND_VAR;

/// The conformance kernels, built by build.rs: PTX and SASS per SM.
pub static KERNELS: KernelImages = gpu_mpi::include_kernels!();

/// Opens a backend with the conformance kernels ([`KERNELS`]).
pub fn open(kind: BackendKind) -> Result<Device, HostError> {
    Device::open(kind, &KERNELS)
}

/// One conformance case: a rule of the standard, checked on a device.
#[derive(Clone, Copy)]
pub struct Case {
    /// `group/rule`, e.g. `p2p/ring`.
    pub name: &'static str,
    /// Runs the case's kernels on the device and checks the results.
    pub run: fn(&Device) -> Result<(), String>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("name", &self.name).finish()
    }
}

/// Every conformance case, in the order of docs/semantics.md.
pub fn cases() -> Vec<Case> {
    macro_rules! case_list {
        ($($test:ident: $name:literal => $run:path,)*) => {
            vec![$(Case { name: $name, run: $run }),*]
        };
    }
    crate::for_each_case!(case_list)
}

/// The conformance cases, listed once: calls macro `$callback` with
/// `test_name: "group/rule" => function,` for every case, in the order of
/// docs/semantics.md. [`cases`] builds its list from it, and
/// check/tests/semantics.rs one test per case and backend; adding a case is
/// adding its line here. `test_name` is the name with `_` for `/`; the
/// functions are private to this crate (a test looks its case up by name).
#[macro_export]
macro_rules! for_each_case {
    ($callback:ident) => {
        $callback! {
            p2p_all_to_one_any_source: "p2p/all_to_one_any_source" => all_to_one_any,
            p2p_all_to_one_specific_source: "p2p/all_to_one_specific_source" => all_to_one_specific,
            p2p_ring_send_receive: "p2p/ring_send_receive" => ring,
            p2p_pairs: "p2p/pairs" => pairs,
            p2p_all_to_all_any_source: "p2p/all_to_all_any_source" => all_to_all,
            p2p_send_to_self: "p2p/send_to_self" => to_self,
            p2p_zero_length: "p2p/zero_length" => zero_length,
            p2p_null_process: "p2p/null_process" => null_process,
            p2p_send_receive_replace: "p2p/send_receive_replace" => replace,
            p2p_probe_then_receive: "p2p/probe_then_receive" => probe_pairs,
            p2p_probe_any_source: "p2p/probe_any_source" => probe_any_source,
            p2p_truncation: "p2p/truncation" => truncation,
            p2p_truncation_streamed: "p2p/truncation_streamed" => truncation_streamed,
            p2p_large_direct: "p2p/large_direct" => large_direct,
            p2p_large_streamed: "p2p/large_streamed" => large_streamed,
            p2p_non_overtaking_any_tag: "p2p/non_overtaking_any_tag" => order_any_tag,
            p2p_non_overtaking_any_source: "p2p/non_overtaking_any_source" => order_any_source,
            p2p_non_overtaking_any_source_by_tag: "p2p/non_overtaking_any_source_by_tag" => order_any_source_by_tag,
            p2p_datatype_matching: "p2p/datatype_matching" => types,
            datatypes_ring_column: "datatypes/ring_column" => datatypes::ring_column,
            datatypes_large_streamed: "datatypes/large_streamed" => datatypes::large,
            errors_datatype_views: "errors/datatype_views" => datatypes::errors,
            collective_datatype_views: "collective/datatype_views" => datatypes::collectives,
            nonblocking_wait_any_pre_posted: "nonblocking/wait_any_pre_posted" => nb_wait_any,
            nonblocking_all_to_all_posted_first: "nonblocking/all_to_all_posted_first" => nb_all_to_all,
            nonblocking_self_send_then_probe: "nonblocking/self_send_then_probe" => nb_self_probe,
            nonblocking_null_and_empty_sets: "nonblocking/null_and_empty_sets" => nb_null_sets,
            nonblocking_matched_probe: "nonblocking/matched_probe" => nb_mprobe,
            nonblocking_synchronous_send: "nonblocking/synchronous_send" => nb_ssend,
            nonblocking_arrays_as_buffers: "nonblocking/arrays_as_buffers" => nb_arrays,
            nonblocking_blocking_calls_among_requests: "nonblocking/blocking_calls_among_requests" => nb_blocking_among_requests,
            errors_invalid_arguments: "errors/invalid_arguments" => arguments,
            collective_barrier: "collective/barrier" => barrier,
            collective_broadcast: "collective/broadcast" => broadcast_global,
            collective_broadcast_every_root: "collective/broadcast_every_root" => broadcast_every_root,
            collective_reduce_u8: "collective/reduce_u8" => reduce_u8,
            collective_reduce_i8: "collective/reduce_i8" => reduce_i8,
            collective_reduce_u16: "collective/reduce_u16" => reduce_u16,
            collective_reduce_i16: "collective/reduce_i16" => reduce_i16,
            collective_reduce_u32: "collective/reduce_u32" => reduce_u32,
            collective_reduce_i32: "collective/reduce_i32" => reduce_i32,
            collective_reduce_u64: "collective/reduce_u64" => reduce_u64,
            collective_reduce_i64: "collective/reduce_i64" => reduce_i64,
            collective_reduce_f32: "collective/reduce_f32" => reduce_f32,
            collective_reduce_f64: "collective/reduce_f64" => reduce_f64,
            collective_non_commutative_user_op: "collective/non_commutative_user_op" => user_op,
            errors_collective_count_mismatch: "errors/collective_count_mismatch" => count_mismatch,
            collective_gather_scatter: "collective/gather_scatter" => gather_scatter,
            collective_all_gather: "collective/all_gather" => all_gather,
            collective_all_to_all: "collective/all_to_all" => all_to_all_case,
            collective_scan: "collective/scan" => scan,
            collective_reduce_scatter: "collective/reduce_scatter" => reduce_scatter,
            collective_reduce_in_place: "collective/reduce_in_place" => reduce_in_place,
            errors_collective_arguments: "errors/collective_arguments" => collective_arguments,
            deadlock_timeout_names_the_wait: "deadlock/timeout_names_the_wait" => deadlock_timeout,
            deadlock_send_send_times_out: "deadlock/send_send_times_out" => deadlock_send_send,
            deadlock_timeout_aborts_every_waiting_rank: "deadlock/timeout_aborts_every_waiting_rank" => deadlock_abort,
            deadlock_skipped_collective_fails_everywhere: "deadlock/skipped_collective_fails_everywhere" => skipped_collectives,
        }
    };
}

/// Cases whose kernels have a planted order-dependent bug
/// ([`gpu_mpi_check_kernels::planted`]): they pass under the emulator's
/// default schedule and fail under some others. Not conformance cases (a
/// GPU may fail them any time): the schedule explorer's test subjects
/// ([`explore`], `gpu-mpi-check explore`).
pub fn planted_cases() -> Vec<Case> {
    vec![
        Case {
            name: "planted/arrival_order",
            run: planted_arrival_order,
        },
        Case {
            name: "planted/any_source_deadlock",
            run: planted_deadlock,
        },
    ]
}

/// The conformance case or planted case named `name`.
pub fn find_case(name: &str) -> Option<Case> {
    cases()
        .into_iter()
        .chain(planted_cases())
        .find(|c| c.name == name)
}

fn planted_arrival_order(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let job = Job::new(&planted::SEMANTICS_PLANTED, planted::PLANTED_ARRIVAL_ORDER, 1);
    let o = launch(device, &shape(3, 3).spec(), 3, &job)?;
    for r in 1..3u32 {
        c.eq(
            || format!("rank 0 stored as rank {r}'s value"),
            o.out[r as usize],
            planted::planted_message(r),
        );
    }
    c.finish()
}

fn planted_deadlock(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let job = Job::new(&planted::SEMANTICS_PLANTED, planted::PLANTED_DEADLOCK, 1);
    let o = launch(device, &shape(3, 3).spec(), 3, &job)?;
    c.eq(
        || "rank 0: sources of its two receives".into(),
        [o.out[0], o.out[1]],
        [1, 2],
    );
    c.finish()
}

// ---------------------------------------------------------------------------
// Launching and reading back

/// A world shape: ranks, ranks per block, and optionally a small
/// collective round (many rounds per collective).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Ranks.
    pub ranks: u32,
    /// Ranks per block.
    pub block: u32,
    /// `collective_bytes` of the world; 0 for the default.
    pub collective_bytes: u32,
}

const fn shape(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 0,
    }
}

/// A shape whose collectives stage 64 bytes per round (56 of data).
const fn small_rounds(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 64,
    }
}

impl Shape {
    fn spec(self) -> WorldSpec {
        let s = WorldSpec::ranks(self.ranks).block_dim(self.block);
        if self.collective_bytes == 0 {
            s
        } else {
            s.collective_bytes(self.collective_bytes)
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ranks in blocks of {}", self.ranks, self.block)?;
        if self.collective_bytes != 0 {
            write!(f, ", {}-byte collective rounds", self.collective_bytes)?;
        }
        Ok(())
    }
}

/// A launch of one semantic kernel.
struct Job {
    kernel: &'static Kernel<CaseArgs>,
    case: u32,
    param: u32,
    param2: u32,
    /// Words of `out` per rank.
    stride: u32,
    /// Bytes of `data`.
    data: usize,
    /// Words of `cells`.
    cells: usize,
}

impl Job {
    fn new(kernel: &'static Kernel<CaseArgs>, case: u32, stride: u32) -> Job {
        Job {
            kernel,
            case,
            param: 0,
            param2: 0,
            stride,
            data: 0,
            cells: 0,
        }
    }
    fn params(mut self, param: u32, param2: u32) -> Job {
        self.param = param;
        self.param2 = param2;
        self
    }
    fn data(mut self, bytes: usize) -> Job {
        self.data = bytes;
        self
    }
    fn cells(mut self, words: usize) -> Job {
        self.cells = words;
        self
    }
}

/// What a launch left in its buffers.
struct Output {
    out: Vec<u32>,
    data: Vec<u8>,
    cells: Vec<u32>,
    stride: usize,
}

impl Output {
    /// The words rank `r` recorded.
    fn rank(&self, r: u32) -> Words<'_> {
        let start = (r as usize * self.stride).min(self.out.len());
        let end = (start + self.stride).min(self.out.len());
        Words {
            w: &self.out[start..end],
            i: 0,
        }
    }
}

fn launch(device: &Device, spec: &WorldSpec, ranks: u32, job: &Job) -> Result<Output, String> {
    let host = |e: crate::HostError| format!("launch of {} (case {}) failed: {e}", job.kernel.name, job.case);
    let out = device
        .alloc_zeroed::<u32>((ranks as usize * job.stride as usize).max(1))
        .map_err(host)?;
    let data = device.alloc_zeroed::<u8>(job.data.max(8)).map_err(host)?;
    let cells = device.alloc_zeroed::<u32>(job.cells.max(1)).map_err(host)?;
    let args = CaseArgs {
        case: job.case,
        param: job.param,
        param2: job.param2,
        stride: job.stride,
        out: out.slice(),
        data: limit(data.slice(), job.data),
        cells: limit(cells.slice(), job.cells),
    };
    let report = device
        .launch(job.kernel, &args, &spec.trace_from_env())
        .map_err(host)?;
    write_trace(&report, job)?;
    Ok(Output {
        out: device.download(&out).map_err(host)?,
        data: device.download(&data).map_err(host)?,
        cells: device.download(&cells).map_err(host)?,
        stride: job.stride as usize,
    })
}

/// With `GPU_MPI_TRACE=dir/name.json`, writes each launch's trace beside
/// it as `dir/name-<kernel>-case<case>-<n>.json` (and `.html`), `n`
/// counting the launches of this process (docs/tracing.md).
fn write_trace(report: &LaunchReport, job: &Job) -> Result<(), String> {
    static LAUNCHES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let (Some(path), Some(trace)) = (gpu_mpi::trace_path_from_env(), report.trace()) else {
        return Ok(());
    };
    let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stem = path
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
    let file = path.with_file_name(format!("{stem}-{}-case{}-{n}.json", job.kernel.name, job.case));
    let title = format!("{} case {}", job.kernel.name, job.case);
    trace
        .write_files(&file, &title, None)
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The first `len` elements of a buffer's slice (buffers are never empty).
fn limit<T: bytemuck::Pod>(s: GlobalSlice<T>, len: usize) -> GlobalSlice<T> {
    // SAFETY: a prefix of a valid slice is valid.
    unsafe { GlobalSlice::from_raw(s.addr(), len.min(s.len()) as u64) }
}

/// Reads one rank's record word by word.
struct Words<'a> {
    w: &'a [u32],
    i: usize,
}

impl Words<'_> {
    fn take(&mut self) -> u32 {
        let v = self.w.get(self.i).copied().unwrap_or(0xBAD0_BAD0);
        self.i += 1;
        v
    }
    fn array<const N: usize>(&mut self) -> [u32; N] {
        std::array::from_fn(|_| self.take())
    }
}

/// The four words of an expected status: class, source, tag, bytes.
fn st(class: ErrorClass, source: i32, tag: i32, bytes: u32) -> [u32; 4] {
    [class as u32, source as u32, tag as u32, bytes]
}

const OK: ErrorClass = ErrorClass::Success;

/// Collects mismatches; `finish` turns them into the case's result.
#[derive(Default)]
struct Checker {
    failures: Vec<String>,
    total: usize,
}

const SHOWN_FAILURES: usize = 12;

impl Checker {
    fn fail(&mut self, msg: String) {
        self.total += 1;
        if self.failures.len() < SHOWN_FAILURES {
            self.failures.push(msg);
        }
    }

    fn eq<T: PartialEq + fmt::Debug>(&mut self, ctx: impl FnOnce() -> String, got: T, want: T) {
        if got != want {
            self.fail(format!("{}: got {got:?}, expected {want:?}", ctx()));
        }
    }

    fn ensure(&mut self, cond: bool, ctx: impl FnOnce() -> String) {
        if !cond {
            self.fail(ctx());
        }
    }

    /// Runs `f` for every shape, prefixing its failures with the shape.
    fn shapes(&mut self, shapes: &[Shape], mut f: impl FnMut(&mut Checker, Shape) -> Result<(), String>) {
        for &s in shapes {
            let mut inner = Checker::default();
            if let Err(e) = f(&mut inner, s) {
                inner.fail(e);
            }
            self.total += inner.total.saturating_sub(inner.failures.len());
            for m in inner.failures {
                self.fail(format!("[{s}] {m}"));
            }
        }
    }

    fn finish(self) -> Result<(), String> {
        if self.total == 0 {
            return Ok(());
        }
        let mut s = self.failures.join("\n");
        if self.total > self.failures.len() {
            s.push_str(&format!(
                "\n... and {} more mismatches",
                self.total - self.failures.len()
            ));
        }
        Err(s)
    }
}

fn left(r: u32, n: u32) -> u32 {
    (r + n - 1) % n
}

fn partner(r: u32, n: u32) -> Option<u32> {
    ((r ^ 1) < n).then_some(r ^ 1)
}

// ---------------------------------------------------------------------------
// Point-to-point

const P2P_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(2, 2),
    shape(7, 7),
    shape(12, 3),
    shape(96, 96),
    shape(128, 32),
];

fn all_to_one(device: &Device, case: u32) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[
            shape(1, 1),
            shape(2, 2),
            shape(12, 3),
            shape(96, 96),
            shape(256, 64),
        ],
        |c, s| {
            let n = s.ranks;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 1..n {
                c.eq(|| format!("rank {r}: send class"), o.rank(r).take(), 0);
            }
            let mut w = o.rank(0);
            let mut seen = vec![false; n as usize];
            for i in 0..n.saturating_sub(1) {
                let status: [u32; 4] = w.array();
                let payload: [u32; 3] = w.array();
                let src = status[1];
                if case == p2p::P2P_ALL_TO_ONE_SPECIFIC {
                    c.eq(
                        || format!("receive {i}: source (descending order)"),
                        src,
                        n - 1 - i,
                    );
                }
                if !(1..n).contains(&src) {
                    c.fail(format!("receive {i}: status {status:?} names no sender"));
                    continue;
                }
                c.ensure(!std::mem::replace(&mut seen[src as usize], true), || {
                    format!("receive {i}: second message from rank {src}")
                });
                c.eq(
                    || format!("receive {i}: status"),
                    status,
                    st(OK, src as i32, (src % 7) as i32, 12),
                );
                c.eq(
                    || format!("receive {i}: payload"),
                    payload,
                    p2p::all_to_one_message(src),
                );
            }
            Ok(())
        },
    );
    c.finish()
}

fn all_to_one_any(device: &Device) -> Result<(), String> {
    all_to_one(device, p2p::P2P_ALL_TO_ONE_ANY)
}

fn all_to_one_specific(device: &Device) -> Result<(), String> {
    all_to_one(device, p2p::P2P_ALL_TO_ONE_SPECIFIC)
}

fn ring(device: &Device) -> Result<(), String> {
    const ROUNDS: u32 = 5;
    const MARK: u32 = 0xC0FFEE;
    let mut c = Checker::default();
    c.shapes(P2P_SHAPES, |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_RING,
            p2p::p2p_stride(p2p::P2P_RING, n, ROUNDS),
        )
        .params(ROUNDS, MARK);
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n);
            for k in 0..ROUNDS {
                c.eq(
                    || format!("rank {r} round {k}: status"),
                    w.array(),
                    st(OK, l as i32, k as i32, 12),
                );
                c.eq(|| format!("rank {r} round {k}: payload"), w.array(), [l, k, MARK]);
            }
        }
        Ok(())
    });
    c.finish()
}

fn pairs(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(P2P_SHAPES, |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_PAIRS,
            p2p::p2p_stride(p2p::P2P_PAIRS, n, 0),
        );
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let (status, payload): ([u32; 4], [u32; 2]) = (w.array(), w.array());
            match partner(r, n) {
                Some(p) => {
                    let tag = if r % 2 == 0 { 12 } else { 11 };
                    c.eq(|| format!("rank {r}: status"), status, st(OK, p as i32, tag, 8));
                    c.eq(|| format!("rank {r}: payload"), payload, [p, 77]);
                }
                None => {
                    c.eq(
                        || format!("rank {r}: null status"),
                        status,
                        st(OK, PROC_NULL, ANY_TAG, 0),
                    );
                    c.eq(|| format!("rank {r}: buffer untouched"), payload, [NONE, NONE]);
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn all_to_all(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::P2P_ALL_TO_ALL;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                let mut seen = vec![false; n as usize];
                for i in 1..n {
                    let status: [u32; 4] = w.array();
                    let payload: [u32; 3] = w.array();
                    let src = status[1];
                    if src >= n || src == r {
                        c.fail(format!(
                            "rank {r} receive {i}: status {status:?} names no other rank"
                        ));
                        continue;
                    }
                    c.ensure(!std::mem::replace(&mut seen[src as usize], true), || {
                        format!("rank {r} receive {i}: second message from rank {src}")
                    });
                    let k = (r + n - src) % n;
                    c.eq(
                        || format!("rank {r} receive {i}: status"),
                        status,
                        st(OK, src as i32, k as i32, 12),
                    );
                    c.eq(|| format!("rank {r} receive {i}: payload"), payload, [src, r, k]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}

fn to_self(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(
            &p2p::SEMANTICS_P2P,
            p2p::P2P_SELF,
            p2p::p2p_stride(p2p::P2P_SELF, n, 0),
        );
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let me = r as i32;
            for (what, tag, bytes, first) in [
                ("tag 1", 1, 4, 10 + r),
                ("tag 2", 2, 8, 20 + r),
                ("tag 3", 3, 12, 30 + r),
                ("send_receive", 0, 4, 40 + r),
            ] {
                c.eq(
                    || format!("rank {r} {what}: status"),
                    w.array(),
                    st(OK, me, tag, bytes),
                );
                c.eq(|| format!("rank {r} {what}: payload"), w.take(), first);
            }
        }
        Ok(())
    });
    c.finish()
}

fn zero_length(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::P2P_ZERO_LENGTH;
        let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n) as i32;
            c.eq(|| format!("rank {r} empty: status"), w.array(), st(OK, l, 9, 0));
            c.eq(|| format!("rank {r} empty: count"), w.take(), 0);
            c.eq(
                || format!("rank {r} empty: buffer untouched"),
                w.take(),
                0xAAAA_AAAA,
            );
            c.eq(|| format!("rank {r} next: status"), w.array(), st(OK, l, 10, 4));
            c.eq(|| format!("rank {r} next: payload"), w.take(), l as u32);
        }
        Ok(())
    });
    c.finish()
}

fn null_process(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::P2P_NULL;
        let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
        let o = launch(device, &s.spec(), n, &job)?;
        let null = st(OK, PROC_NULL, ANY_TAG, 0);
        for r in 0..n {
            let mut w = o.rank(r);
            c.eq(|| format!("rank {r}: send"), w.take(), 0);
            c.eq(|| format!("rank {r}: send with tag"), w.take(), 0);
            c.eq(|| format!("rank {r}: receive status"), w.array(), null);
            c.eq(
                || format!("rank {r}: receive buffer untouched"),
                w.take(),
                0x1234_5678,
            );
            c.eq(|| format!("rank {r}: receive count"), w.take(), 0);
            c.eq(|| format!("rank {r}: receive with tag status"), w.array(), null);
            c.eq(|| format!("rank {r}: probe status"), w.array(), null);
            let [found, a, b, d, e] = w.array();
            c.eq(
                || format!("rank {r}: immediate probe"),
                [found, a, b, d, e],
                [1, null[0], null[1], null[2], null[3]],
            );
            c.eq(|| format!("rank {r}: send_receive status"), w.array(), null);
            c.eq(
                || format!("rank {r}: send_receive buffer untouched"),
                w.take(),
                0x1234_5678,
            );
        }
        Ok(())
    });
    c.finish()
}

fn replace(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(2, 2), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::P2P_REPLACE;
            let job = Job::new(&p2p::SEMANTICS_P2P, case, p2p::p2p_stride(case, n, 0));
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                let l = left(r, n);
                c.eq(|| format!("rank {r}: status"), w.array(), st(OK, l as i32, 4, 64));
                c.eq(
                    || format!("rank {r}: words 0, 15"),
                    w.array(),
                    [l * 100, l * 100 + 15],
                );
            }
            Ok(())
        },
    );
    c.finish()
}

fn probe_pairs(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::PROBE_PAIRS;
        let job = Job::new(&p2p::SEMANTICS_PROBE, case, p2p::probe_stride(case, n));
        let o = launch(device, &s.spec(), n, &job)?;
        for r in (0..n).step_by(2) {
            let p = if r + 1 < n { r + 1 } else { r };
            let pi = p as i32;
            let mut w = o.rank(r);
            c.eq(
                || format!("rank {r}: immediate probe before any send"),
                w.take(),
                0,
            );
            c.eq(
                || format!("rank {r}: probe(any) = first message"),
                w.array(),
                st(OK, pi, 5, 8),
            );
            c.eq(
                || format!("rank {r}: probe(tag 3) = second"),
                w.array(),
                st(OK, pi, 3, 12),
            );
            c.eq(
                || format!("rank {r}: receive probed: status"),
                w.array(),
                st(OK, pi, 5, 8),
            );
            c.eq(|| format!("rank {r}: receive probed: payload"), w.array(), [1, p]);
            let [found, a, b, d, e] = w.array();
            c.eq(
                || format!("rank {r}: immediate probe(tag 3)"),
                [found, a, b, d, e],
                [1, 0, p, 3, 12],
            );
            c.eq(
                || format!("rank {r}: receive(any, tag 3): status"),
                w.array(),
                st(OK, pi, 3, 12),
            );
            c.eq(
                || format!("rank {r}: receive(any, tag 3): payload"),
                w.array(),
                [2, p],
            );
            c.eq(
                || format!("rank {r}: receive(any tag): status"),
                w.array(),
                st(OK, pi, 5, 16),
            );
            c.eq(
                || format!("rank {r}: receive(any tag): payload"),
                w.array(),
                [3, p],
            );
            c.eq(|| format!("rank {r}: immediate probe when empty"), w.take(), 0);
        }
        Ok(())
    });
    c.finish()
}

fn probe_any_source(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(7, 7), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            let case = p2p::PROBE_ANY_SOURCE;
            let job = Job::new(&p2p::SEMANTICS_PROBE, case, p2p::probe_stride(case, n));
            let o = launch(device, &s.spec(), n, &job)?;
            let mut w = o.rank(0);
            let mut next = vec![0u32; n as usize];
            for i in 0..2 * (n - 1) {
                let probed: [u32; 4] = w.array();
                let got: [u32; 4] = w.array();
                let first = w.take();
                let src = probed[1];
                if !(1..n).contains(&src) {
                    c.fail(format!("message {i}: probe status {probed:?} names no sender"));
                    continue;
                }
                let j = next[src as usize];
                next[src as usize] += 1;
                if j >= 2 {
                    c.fail(format!("message {i}: third message from rank {src}"));
                    continue;
                }
                let (tag, _, len) = p2p::probe_any_message(src, j);
                let want = st(OK, src as i32, tag, 4 * len as u32);
                c.eq(
                    || format!("message {i}: probe (the earliest from rank {src})"),
                    probed,
                    want,
                );
                c.eq(
                    || format!("message {i}: receive of the probed message"),
                    got,
                    want,
                );
                c.eq(|| format!("message {i}: payload"), first, 100 * src + j);
            }
            Ok(())
        },
    );
    c.finish()
}

/// (message bytes, receive capacity) of the truncation cases: below a slot,
/// exactly a slot, above it, large, and the same sizes without truncation.
const TRUNCATION_SIZES: &[(u32, u32)] = &[
    (100, 40),
    (100, 100),
    (256, 255),
    (256, 256),
    (257, 256),
    (257, 100),
    (300, 0),
    (0, 16),
    (1000, 1000),
    (70_000, 65_543),
    (70_000, 300),
    (200_000, 200_001),
];

fn truncation_with(device: &Device, streaming: bool) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(4, 4)], |c, s| {
        let n = s.ranks;
        for &(len, cap) in TRUNCATION_SIZES {
            let region = p2p::truncation_region(len, cap);
            let job = Job::new(&p2p::SEMANTICS_TRUNCATION, 0, p2p::TRUNCATION_STRIDE)
                .params(len, cap)
                .data(region * n as usize);
            let o = launch(device, &s.spec().force_streaming(streaming), n, &job)?;
            let truncated = len > cap;
            for r in 0..n {
                let p = partner(r, n).unwrap_or(r);
                let ctx = |what: &str| format!("{len} bytes into {cap}: rank {r}: {what}");
                let mut w = o.rank(r);
                let class = if truncated { ErrorClass::Truncate } else { OK };
                c.eq(|| ctx("status"), w.array(), st(class, p as i32, 4, len));
                c.eq(
                    || ctx("error's capacity"),
                    w.take(),
                    if truncated { cap } else { NONE },
                );
                c.eq(|| ctx("next message's status"), w.array(), st(OK, p as i32, 5, 8));
                c.eq(|| ctx("next message's payload"), w.array(), [0xBEEF, p]);
                let start = r as usize * region + len as usize;
                let recv = &o.data[start..start + cap as usize + p2p::TRUNCATION_GUARD];
                let kept = len.min(cap) as usize;
                if let Some(i) = (0..kept).find(|&i| recv[i] != pattern_byte(p, i)) {
                    c.fail(ctx(&format!(
                        "received byte {i} is {:#x}, expected {:#x}",
                        recv[i],
                        pattern_byte(p, i)
                    )));
                }
                if let Some(i) = (kept..recv.len()).find(|&i| recv[i] != p2p::FILL_BYTE) {
                    c.fail(ctx(&format!(
                        "byte {i} of the receive buffer (beyond the {kept} received) was overwritten"
                    )));
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn truncation(device: &Device) -> Result<(), String> {
    truncation_with(device, false)
}

fn truncation_streamed(device: &Device) -> Result<(), String> {
    truncation_with(device, true)
}

const LARGE_SIZES: &[u32] = &[257, 1000, 1024, 1025, 4099, 65_536, 300_001, 1 << 20];

fn large_with(device: &Device, streaming: bool) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(3, 3), shape(4, 2)], |c, s| {
        let n = s.ranks;
        for case in [
            p2p::LARGE_RING,
            p2p::LARGE_PAIRS,
            p2p::LARGE_REPLACE,
            p2p::LARGE_REPLACE_RING,
        ] {
            for &len in LARGE_SIZES {
                let l = len as usize;
                let job = Job::new(&p2p::SEMANTICS_LARGE, case, p2p::LARGE_STRIDE)
                    .params(len, 0)
                    .data(2 * l * n as usize);
                let o = launch(device, &s.spec().force_streaming(streaming), n, &job)?;
                for r in 0..n {
                    let ctx = |what: &str| format!("case {case}, {len} bytes: rank {r}: {what}");
                    let status: [u32; 4] = o.rank(r).array();
                    let send = &o.data[2 * l * r as usize..][..l];
                    let recv = &o.data[2 * l * r as usize + l..][..l];
                    let (src, region) = match case {
                        p2p::LARGE_RING => (left(r, n), recv),
                        p2p::LARGE_REPLACE_RING => (left(r, n), send),
                        p2p::LARGE_PAIRS => (partner(r, n).unwrap_or(r), recv),
                        _ => match partner(r, n) {
                            Some(p) if r % 2 == 0 => (p, send),
                            Some(p) => (p, recv),
                            None => {
                                c.eq(|| ctx("null status"), status, st(OK, PROC_NULL, ANY_TAG, 0));
                                continue;
                            }
                        },
                    };
                    c.eq(|| ctx("status"), status, st(OK, src as i32, 6, len));
                    if let Some(i) = (0..l).find(|&i| region[i] != pattern_byte(src, i)) {
                        c.fail(ctx(&format!(
                            "byte {i} is {:#x}, expected {:#x} (rank {src}'s pattern)",
                            region[i],
                            pattern_byte(src, i)
                        )));
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn large_direct(device: &Device) -> Result<(), String> {
    large_with(device, false)
}

fn large_streamed(device: &Device) -> Result<(), String> {
    large_with(device, true)
}

// ---------------------------------------------------------------------------
// Non-blocking point-to-point (MPI 3.7-3.9)

const NB_SHAPES: &[Shape] = &[shape(1, 1), shape(2, 2), shape(5, 5), shape(12, 3), shape(33, 11)];

fn nb_launch(device: &Device, s: Shape, case: u32, param: u32, streaming: bool) -> Result<Output, String> {
    let n = s.ranks;
    let job = Job::new(&nb::SEMANTICS_NONBLOCKING, case, nb::nb_stride(case, n)).params(param, 0);
    launch(device, &s.spec().force_streaming(streaming), n, &job)
}

fn nb_wait_any(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let n = s.ranks;
        let o = nb_launch(device, s, nb::NB_WAIT_ANY, 0, false)?;
        let mut w = o.rank(0);
        let mut seen = vec![0u32; n as usize];
        for i in 1..n {
            let [src, tag, count, first] = w.array();
            if src == 0 || src >= n {
                c.fail(format!("receive {i}: source {src}"));
                continue;
            }
            seen[src as usize] += 1;
            c.eq(
                || format!("message from {src}: tag, count, first word"),
                (tag, count, first),
                (src % 5, src % 4 + 1, 1000 * src),
            );
        }
        for (r, &k) in seen.iter().enumerate().skip(1) {
            c.eq(|| format!("messages received from rank {r}"), k, 1);
        }
        let batches = (n - 1).div_ceil(8);
        c.eq(|| "batches ending in AllNull".to_string(), w.take(), batches);
        Ok(())
    });
    c.finish()
}

fn nb_all_to_all(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for streaming in [false, true] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_ALL_TO_ALL, 0, streaming)?;
            for r in 0..n {
                let mut w = o.rank(r);
                for k in 1..n {
                    let src = (r + n - k) % n;
                    let count = if k % 3 == 0 { 100 } else { 3 };
                    c.eq(
                        || format!("streaming {streaming}: rank {r}, offset {k}"),
                        w.array::<5>(),
                        [src, count, src, r, k],
                    );
                }
            }
            Ok(())
        });
    }
    c.finish()
}

fn nb_self_probe(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let o = nb_launch(device, s, nb::NB_SELF_PROBE, 0, false)?;
        for r in 0..s.ranks {
            let mut w = o.rank(r);
            let s = st(OK, r as i32, 3, 8);
            c.eq(|| format!("rank {r}: probe status"), w.array(), s);
            c.eq(|| format!("rank {r}: receive status"), w.array(), s);
            c.eq(|| format!("rank {r}: words, send class"), w.array(), [r, 42, 0]);
        }
        Ok(())
    });
    c.finish()
}

fn nb_null_sets(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3)], |c, s| {
        let o = nb_launch(device, s, nb::NB_NULL_SETS, 0, false)?;
        for r in 0..s.ranks {
            let mut w = o.rank(r);
            c.eq(
                || format!("rank {r}: wait_all class, wait_any, test_any, wait_some, test_some, test_all"),
                w.array(),
                [0, 1, 1, 1, 1, 1],
            );
            let empty = st(OK, -1, ANY_TAG, 0);
            c.eq(|| format!("rank {r}: null wait status"), w.array(), empty);
            c.eq(|| format!("rank {r}: null test status"), w.array(), empty);
            c.eq(|| format!("rank {r}: send to null is null"), w.take(), 1);
            c.eq(
                || format!("rank {r}: receive from null"),
                w.array(),
                st(OK, PROC_NULL, ANY_TAG, 0),
            );
        }
        Ok(())
    });
    c.finish()
}

fn nb_mprobe(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for streaming in [false, true] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_MPROBE, 0, streaming)?;
            for r in (0..n).step_by(2) {
                let mut w = o.rank(r);
                let got: [u32; 28] = w.array();
                let want: Vec<u32> = if r + 1 < n {
                    let p = (r + 1) as i32;
                    let small = st(OK, p, 2, 8);
                    let big = st(OK, p, 5, 400);
                    [
                        &small[..],
                        &small,
                        &[r + 1, 2],
                        &big,
                        &[0],
                        &big,
                        &[r + 1, 3, 100 + r],
                        &small,
                        &[r + 1, 1],
                    ]
                    .concat()
                } else {
                    let null = st(OK, PROC_NULL, ANY_TAG, 0);
                    [
                        &null[..],
                        &null,
                        &[NONE, NONE],
                        &null,
                        &[0],
                        &null,
                        &[NONE; 3],
                        &null,
                        &[NONE, NONE],
                    ]
                    .concat()
                };
                c.eq(|| format!("streaming {streaming}: rank {r}"), got.to_vec(), want);
            }
            Ok(())
        });
    }
    c.finish()
}

fn nb_ssend(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for (param, streaming) in [(0, false), (1, false), (1, true)] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_SSEND, param, streaming)?;
            for r in 0..n {
                let got: [u32; 4] = o.rank(r).array();
                let want = if r % 2 == 1 {
                    [r - 1, 0x60, if param != 0 { 7 + r - 1 } else { NONE }, r]
                } else {
                    [0; 4]
                };
                c.eq(
                    || format!("big {param}, streaming {streaming}: rank {r}"),
                    got,
                    want,
                );
            }
            Ok(())
        });
    }
    c.finish()
}

fn nb_blocking_among_requests(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    for (param, streaming) in [(0, false), (1, true)] {
        c.shapes(NB_SHAPES, |c, s| {
            let n = s.ranks;
            let o = nb_launch(device, s, nb::NB_BLOCKING_AMONG_REQUESTS, param, streaming)?;
            for r in 0..n {
                let p = if r % 2 == 0 {
                    if r + 1 < n {
                        r + 1
                    } else {
                        r
                    }
                } else {
                    r - 1
                };
                let mut w = o.rank(r);
                let at = |what: &str| format!("streaming {streaming}: rank {r}: {what}");
                c.eq(
                    || at("blocking any-tag receive"),
                    w.array(),
                    st(OK, p as i32, 2, 8),
                );
                c.eq(|| at("its words"), w.array(), [p, 2]);
                c.eq(
                    || at("blocking tag-9 receive"),
                    w.array(),
                    st(OK, p as i32, 9, 400),
                );
                c.eq(|| at("words 0 and 99"), w.array(), [1000 * p, 1000 * p + 99]);
                c.eq(|| at("posted receive"), w.array(), st(OK, p as i32, 1, 8));
                c.eq(|| at("its words"), w.array(), [p, 1]);
                c.eq(|| at("send class"), w.take(), OK as u32);
            }
            Ok(())
        });
    }
    c.finish()
}

fn nb_arrays(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(NB_SHAPES, |c, s| {
        let n = s.ranks;
        let o = nb_launch(device, s, nb::NB_ARRAYS, 0, false)?;
        for r in 0..n {
            let mut w = o.rank(r);
            let l = left(r, n);
            c.eq(|| format!("rank {r}: status"), w.array(), st(OK, l as i32, 1, 12));
            c.eq(|| format!("rank {r}: words"), w.array(), [l, 2, 3]);
        }
        Ok(())
    });
    c.finish()
}

fn order_any_tag(device: &Device) -> Result<(), String> {
    const N: u32 = 40;
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(2, 2), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let case = p2p::ORDER_ANY_TAG;
        let job = Job::new(&p2p::SEMANTICS_ORDERING, case, p2p::ordering_stride(case, n, N)).params(N, 0);
        // A rank without partner sends all N messages to itself first.
        let o = launch(device, &s.spec().slots_per_rank(N), n, &job)?;
        for r in (0..n).step_by(2) {
            let p = if r + 1 < n { r + 1 } else { r };
            let mut w = o.rank(r);
            for i in 0..N {
                let bytes = 4 * p2p::ordering_length(case, i) as u32;
                c.eq(
                    || format!("rank {r} receive {i}: status"),
                    w.array(),
                    st(OK, p as i32, (i % 3) as i32, bytes),
                );
                c.eq(|| format!("rank {r} receive {i}: sequence"), w.take(), i);
            }
        }
        Ok(())
    });
    c.finish()
}

fn order_any_source_case(device: &Device, case: u32) -> Result<(), String> {
    const N: u32 = 12;
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(8, 8), shape(12, 3), shape(33, 33)],
        |c, s| {
            let n = s.ranks;
            let job = Job::new(&p2p::SEMANTICS_ORDERING, case, p2p::ordering_stride(case, n, N)).params(N, 0);
            let spec = if case == p2p::ORDER_ANY_SOURCE_BY_TAG {
                s.spec().slots_per_rank(N)
            } else {
                s.spec()
            };
            let o = launch(device, &spec, n, &job)?;
            let mut w = o.rank(0);
            // Next expected sequence number per source and tag class.
            let mut next = vec![[0u32; 2]; n as usize];
            let ones = (N / 2) * (n - 1);
            for j in 0..N * (n - 1) {
                let status: [u32; 4] = w.array();
                let [seq, who] = w.array();
                let src = status[1];
                if !(1..n).contains(&src) || seq >= N {
                    c.fail(format!("receive {j}: status {status:?}, payload [{seq}, {who}]"));
                    continue;
                }
                let tag = seq % 2;
                if case == p2p::ORDER_ANY_SOURCE_BY_TAG {
                    c.eq(
                        || format!("receive {j}: tag (all tag-1 messages first)"),
                        tag,
                        u32::from(j < ones),
                    );
                    // Within one tag, messages of one source arrive in send order.
                    let want = next[src as usize][tag as usize] * 2 + tag;
                    c.eq(
                        || format!("receive {j}: sequence from rank {src} with tag {tag}"),
                        seq,
                        want,
                    );
                    next[src as usize][tag as usize] += 1;
                } else {
                    let want = next[src as usize][0];
                    c.eq(
                        || format!("receive {j}: sequence from rank {src} (non-overtaking)"),
                        seq,
                        want,
                    );
                    next[src as usize][0] = seq + 1;
                }
                let bytes = 4 * p2p::ordering_length(case, seq) as u32;
                c.eq(
                    || format!("receive {j}: status"),
                    status,
                    st(OK, src as i32, tag as i32, bytes),
                );
                c.eq(|| format!("receive {j}: payload sender"), who, src);
            }
            Ok(())
        },
    );
    c.finish()
}

fn order_any_source(device: &Device) -> Result<(), String> {
    order_any_source_case(device, p2p::ORDER_ANY_SOURCE)
}

fn order_any_source_by_tag(device: &Device) -> Result<(), String> {
    order_any_source_case(device, p2p::ORDER_ANY_SOURCE_BY_TAG)
}

fn types(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(3, 3), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(&p2p::SEMANTICS_TYPES, 0, p2p::TYPES_STRIDE);
        let o = launch(device, &s.spec(), n, &job)?;
        let ty = ErrorClass::Type;
        for r in 0..n {
            let l = left(r, n) as i32;
            let mut w = o.rank(r);
            let ctx = |what: &str| format!("rank {r}: {what}");
            c.eq(|| ctx("f64 received as i32: status"), w.array(), st(ty, l, 1, 16));
            c.eq(
                || ctx("f64 received as i32: buffer untouched"),
                w.take(),
                0x5A5A_5A5A,
            );
            c.eq(
                || ctx("next message as bytes: status"),
                w.array(),
                st(OK, l, 2, 8),
            );
            let b = 3.0f64.to_bits();
            c.eq(
                || ctx("next message as bytes: data"),
                w.array(),
                [b as u32, (b >> 32) as u32],
            );
            c.eq(|| ctx("u32 received as f32"), w.array(), st(ty, l, 3, 12));
            c.eq(
                || ctx("user type received as itself"),
                w.array(),
                st(OK, l, 4, 16),
            );
            c.eq(|| ctx("user type value"), w.take(), l as u32);
            c.eq(
                || ctx("user type received as another user type"),
                w.array(),
                st(ty, l, 5, 16),
            );
            c.eq(|| ctx("u8 received as u16"), w.array(), st(ty, l, 6, 3));
            c.eq(|| ctx("f64 received as f64"), w.array(), st(OK, l, 7, 16));
            c.eq(
                || ctx("counts of 16 bytes as f64, u32, Mat2"),
                w.array(),
                [2, 4, 1],
            );
            let (x, y) = (4.5f64.to_bits(), 5.5f64.to_bits());
            c.eq(
                || ctx("f64 values"),
                w.array(),
                [x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32],
            );
            c.eq(|| ctx("12 bytes as u8"), w.array(), st(OK, l, 8, 12));
            c.eq(
                || ctx("counts of 12 bytes as f64, u32, u8"),
                w.array(),
                [NONE, 3, 12],
            );
        }
        Ok(())
    });
    c.finish()
}

fn arguments(device: &Device) -> Result<(), String> {
    const MAX: u32 = 512;
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3)], |c, s| {
        let n = s.ranks;
        let job = Job::new(&p2p::SEMANTICS_ARGUMENTS, 0, p2p::ARGUMENTS_STRIDE).params(MAX, 0);
        let o = launch(device, &s.spec().max_message_bytes(MAX), n, &job)?;
        let out_len = n * p2p::ARGUMENTS_STRIDE;
        let e = |class: ErrorClass, a: i64, b: i64| [class as u32, a as u32, b as u32, 0, 0];
        let ok = [0u32; 5];
        let size = n as i64;
        use ErrorClass::*;
        for r in 0..n {
            let expected: [(&str, [u32; 5]); 21] = [
                ("send to rank size", e(Rank, size, size)),
                ("send to rank -7", e(Rank, -7, size)),
                ("receive from rank size + 3", e(Rank, size + 3, size)),
                ("send with tag -5", e(Tag, -5, 0)),
                ("send with ANY_TAG", e(Tag, -1, 0)),
                ("receive with tag -5", e(Tag, -5, 0)),
                ("probe with tag -3", e(Tag, -3, 0)),
                ("immediate probe of rank size", e(Rank, size, size)),
                (
                    "send of max_message_bytes + 1",
                    e(Buffer, MAX as i64 + 1, MAX as i64),
                ),
                ("send_receive of max_message_bytes", ok),
                ("broadcast from root size", e(Root, size, size)),
                ("reduce to root -1", e(Root, -1, size)),
                ("all_reduce f32 with bitwise or", e(Op, 6, ID_F32 as i64)),
                ("all_reduce f64 with logical and", e(Op, 8, ID_F64 as i64)),
                (
                    "reduce_into called by the root",
                    if r == 0 { e(Root, 0, size) } else { ok },
                ),
                ("send_receive to rank size", e(Rank, size, size)),
                (
                    "write past a GlobalSlice",
                    e(Arg, out_len as i64 + 5, out_len as i64),
                ),
                ("broadcast from the null process", e(Root, PROC_NULL as i64, size)),
                ("all_reduce i32 with bitwise or", ok),
                ("barrier after the errors", ok),
                ("all_reduce of a 256-byte element", e(Buffer, 256, 248)),
            ];
            let mut w = o.rank(r);
            for (what, want) in expected {
                c.eq(|| format!("rank {r}: {what}"), w.array::<5>(), want);
            }
            c.eq(|| format!("rank {r}: all_reduce after the errors"), w.take(), n);
        }
        Ok(())
    });
    c.finish()
}

// ---------------------------------------------------------------------------
// Collectives

const COLLECTIVE_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(7, 7),
    shape(12, 3),
    shape(96, 96),
    shape(128, 32),
    shape(16, 1),
    shape(1024, 256),
    small_rounds(7, 7),
    small_rounds(12, 3),
];

fn barrier(device: &Device) -> Result<(), String> {
    const ROUNDS: u32 = 8;
    let mut c = Checker::default();
    let shapes = [COLLECTIVE_SHAPES, &[shape(256, 64), shape(64, 8)]].concat();
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        let job = Job::new(&coll::SEMANTICS_BARRIER, 0, coll::BARRIER_WORDS * ROUNDS)
            .params(ROUNDS, 200)
            .cells(n as usize);
        let o = launch(device, &s.spec(), n, &job)?;
        for r in 0..n {
            let mut w = o.rank(r);
            for k in 0..ROUNDS {
                c.eq(
                    || format!("rank {r} round {k}: [barrier class, cells not yet written, barrier class]"),
                    w.array(),
                    [0, 0, 0],
                );
            }
        }
        Ok(())
    });
    c.finish()
}

fn broadcast_global(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(1, 1), shape(5, 5), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            for root in [0, n / 2, n - 1] {
                // 61 words fit a collective round (248 bytes), 62 fill it, 63 need two.
                for count in [1u32, 61, 62, 63, 1000, 5000] {
                    let job = Job::new(&coll::SEMANTICS_BROADCAST, coll::BCAST_GLOBAL, 1)
                        .params(root, count)
                        .cells((count * n) as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    for r in 0..n {
                        c.eq(
                            || format!("root {root}, {count} words: rank {r}: class"),
                            o.rank(r).take(),
                            0,
                        );
                        let region = &o.cells[(r * count) as usize..][..count as usize];
                        if let Some(i) = (0..count as usize).find(|&i| region[i] != pattern_word(root, i)) {
                            c.fail(format!(
                                "root {root}, {count} words: rank {r}: word {i} is {:#x}, expected {:#x}",
                                region[i],
                                pattern_word(root, i)
                            ));
                        }
                    }
                }
            }
            Ok(())
        },
    );
    c.finish()
}

fn broadcast_every_root(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(1, 1), shape(4, 4), shape(12, 3), shape(40, 20), small_rounds(6, 2)], |c, s| {
        let n = s.ranks;
        for count in [5, 70] {
            let case = coll::BCAST_EVERY_ROOT;
            let job = Job::new(&coll::SEMANTICS_BROADCAST, case, coll::broadcast_stride(case, n)).params(0, count);
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let mut w = o.rank(r);
                for root in 0..n {
                    c.eq(
                        || format!("{count} words: rank {r}, root {root}: [class, wrong words, class, wrong f64s]"),
                        w.array(),
                        [0, 0, 0, 0],
                    );
                }
            }
        }
        Ok(())
    });
    c.finish()
}

/// Reference semantics of the predefined operations (MPI 4.1 section 6.9.2).
trait Reference: Operand + Copy {
    fn combine(op: u32, a: Self, b: Self) -> Self;
}

macro_rules! int_reference {
    ($($t:ty),*) => {$(
        impl Reference for $t {
            fn combine(op: u32, a: Self, b: Self) -> Self {
                match op {
                    1 => a.wrapping_add(b),
                    2 => a.wrapping_mul(b),
                    3 => a.min(b),
                    4 => a.max(b),
                    5 => a & b,
                    6 => a | b,
                    7 => a ^ b,
                    8 => <$t>::from(a != 0 && b != 0),
                    _ => <$t>::from(a != 0 || b != 0),
                }
            }
        }
    )*};
}
int_reference!(u8, i8, u16, i16, u32, i32, u64, i64);

macro_rules! float_reference {
    ($($t:ty),*) => {$(
        impl Reference for $t {
            fn combine(op: u32, a: Self, b: Self) -> Self {
                match op {
                    1 => a + b,
                    2 => a * b,
                    3 => a.min(b),
                    _ => a.max(b),
                }
            }
        }
    )*};
}
float_reference!(f32, f64);

fn reduce_checks<T: Reference>(device: &Device, type_index: u32) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(COLLECTIVE_SHAPES, |c, s| {
        let n = s.ranks;
        let mut roots = vec![coll::ALL_RANKS, 0];
        if n > 1 {
            roots.push(n - 1);
        }
        for root in roots {
            for count in [1u32, 70] {
                let job = Job::new(&coll::SEMANTICS_REDUCE, type_index, coll::reduce_stride(count))
                    .params(count, root);
                let o = launch(device, &s.spec(), n, &job)?;
                let mode = if root == coll::ALL_RANKS {
                    "all_reduce".to_string()
                } else {
                    format!("reduce to {root}")
                };
                // The result of every operation and element: operands combined in rank order.
                let results: Vec<Vec<u64>> = coll::OPS
                    .iter()
                    .map(|&op| {
                        (0..count)
                            .map(|i| {
                                (1..n)
                                    .fold(coll::operand::<T>(op, 0, i), |acc, q| {
                                        T::combine(op, acc, coll::operand::<T>(op, q, i))
                                    })
                                    .bits()
                            })
                            .collect()
                    })
                    .collect();
                let fill = T::from_i64(coll::REDUCE_FILL).bits();
                for r in 0..n {
                    let mut w = o.rank(r);
                    let gets = root == coll::ALL_RANKS || root == r;
                    for (k, op) in coll::OPS.into_iter().enumerate() {
                        let name = gpu_mpi::device::collective::SystemOperation::name_of(op);
                        let valid = !T::IS_FLOAT || op <= 4;
                        let class = if valid { OK } else { ErrorClass::Op };
                        c.eq(
                            || format!("{mode}, {count} elements, {name}: rank {r}: class"),
                            w.take(),
                            class as u32,
                        );
                        for (i, &result) in results[k].iter().enumerate() {
                            let got = w.take() as u64 | (w.take() as u64) << 32;
                            let want = if gets && valid { result } else { fill };
                            c.eq(
                                || format!("{mode}, {count} elements, {name}: rank {r}: element {i} (bits)"),
                                got,
                                want,
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn reduce_u8(d: &Device) -> Result<(), String> {
    reduce_checks::<u8>(d, 0)
}
fn reduce_i8(d: &Device) -> Result<(), String> {
    reduce_checks::<i8>(d, 1)
}
fn reduce_u16(d: &Device) -> Result<(), String> {
    reduce_checks::<u16>(d, 2)
}
fn reduce_i16(d: &Device) -> Result<(), String> {
    reduce_checks::<i16>(d, 3)
}
fn reduce_u32(d: &Device) -> Result<(), String> {
    reduce_checks::<u32>(d, 4)
}
fn reduce_i32(d: &Device) -> Result<(), String> {
    reduce_checks::<i32>(d, 5)
}
fn reduce_u64(d: &Device) -> Result<(), String> {
    reduce_checks::<u64>(d, 6)
}
fn reduce_i64(d: &Device) -> Result<(), String> {
    reduce_checks::<i64>(d, 7)
}
fn reduce_f32(d: &Device) -> Result<(), String> {
    reduce_checks::<f32>(d, 8)
}
fn reduce_f64(d: &Device) -> Result<(), String> {
    reduce_checks::<f64>(d, 9)
}

/// 2x2 matrix product with wrapping arithmetic, written out independently
/// of the kernel's.
fn mat_product(x: Mat2, y: Mat2) -> Mat2 {
    let dot = |p: u32, q: u32, s: u32, t: u32| p.wrapping_mul(q).wrapping_add(s.wrapping_mul(t));
    Mat2 {
        a: dot(x.a, y.a, x.b, y.c),
        b: dot(x.a, y.b, x.b, y.d),
        c: dot(x.c, y.a, x.d, y.c),
        d: dot(x.c, y.b, x.d, y.d),
    }
}

fn user_op(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let shapes = [COLLECTIVE_SHAPES, &[shape(2, 2), shape(192, 96)]].concat();
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        let mut roots = vec![coll::ALL_RANKS, 0];
        if n > 2 {
            roots.push(n / 2);
        }
        // 15 matrices fill one collective round; 20 need two.
        for count in [1u32, 20] {
            let expected: Vec<Mat2> = (0..count)
                .map(|i| {
                    (1..n).fold(coll::user_operand(0, i), |acc, r| {
                        mat_product(acc, coll::user_operand(r, i))
                    })
                })
                .collect();
            if n > 2 {
                let reversed = (0..n)
                    .rev()
                    .map(|r| coll::user_operand(r, 0))
                    .reduce(mat_product)
                    .unwrap_or_default();
                c.ensure(reversed != expected[0], || {
                    "test design: the operands commute, the case proves nothing".into()
                });
            }
            for &root in &roots {
                let job =
                    Job::new(&coll::SEMANTICS_USER_OP, 0, coll::user_op_stride(count)).params(count, root);
                let o = launch(device, &s.spec(), n, &job)?;
                for r in 0..n {
                    let mut w = o.rank(r);
                    c.eq(
                        || format!("root {root:#x}, {count} matrices: rank {r}: class"),
                        w.take(),
                        0,
                    );
                    if root != coll::ALL_RANKS && root != r {
                        continue;
                    }
                    for (i, want) in expected.iter().enumerate() {
                        let [a, b, cc, d] = w.array();
                        c.eq(
                            || {
                                format!(
                                    "root {root:#x}, {count} matrices: rank {r}: product {i} (rank order)"
                                )
                            },
                            Mat2 { a, b, c: cc, d },
                            *want,
                        );
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn count_mismatch(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(
        &[shape(2, 2), shape(4, 4), shape(12, 3), shape(96, 96)],
        |c, s| {
            let n = s.ranks;
            for case in [
                coll::COUNT_ALL_REDUCE_SEND,
                coll::COUNT_ALL_REDUCE_RECV,
                coll::COUNT_BROADCAST,
                coll::COUNT_REDUCE,
                coll::COUNT_ALL_REDUCE_ROUNDS,
            ] {
                let job = Job::new(&coll::SEMANTICS_COUNT, case, coll::COUNT_STRIDE);
                let o = launch(device, &s.spec(), n, &job)?;
                let count = ErrorClass::Count as u32;
                for r in 0..n {
                    let mut w = o.rank(r);
                    let [class, value, barrier, after, total] = w.array();
                    let ctx = |what: &str| format!("case {case}: rank {r}: {what}");
                    match case {
                        coll::COUNT_ALL_REDUCE_RECV if r != 0 => {
                            c.eq(|| ctx("class (own counts agree)"), class, 0);
                            c.eq(|| ctx("sum"), value, n);
                        }
                        coll::COUNT_ALL_REDUCE_RECV => c.eq(|| ctx("class"), class, count),
                        coll::COUNT_BROADCAST if r != n - 1 => {
                            c.eq(|| ctx("class (own count agrees)"), class, 0);
                            c.eq(|| ctx("broadcast value"), value, 0);
                        }
                        _ => c.eq(|| ctx("class"), class, count),
                    }
                    c.eq(|| ctx("barrier afterwards"), barrier, 0);
                    c.eq(|| ctx("all_reduce afterwards"), [after, total], [0, n]);
                }
            }
            Ok(())
        },
    );
    c.finish()
}

// ---------------------------------------------------------------------------
// Chapter 6 beyond barrier, broadcast and reduce: gather, scatter,
// all-gather, all-to-all, reduce-scatter, scans, in-place forms.

/// World shapes of the chapter 6 cases: one rank, one block, blocks of 32
/// (64 and 96 ranks), 300 ranks in 5 blocks, many small blocks (blocks of 3
/// and of 1), and 64-byte collective rounds.
const CH6_SHAPES: &[Shape] = &[
    shape(1, 1),
    shape(7, 7),
    shape(12, 3),
    shape(16, 1),
    shape(64, 32),
    shape(96, 32),
    shape(300, 60),
    small_rounds(7, 7),
    small_rounds(12, 3),
];

/// Element counts per part for a world of `n` ranks: 0 (nothing moves), 1,
/// and several collective rounds where the world is small.
fn ch6_counts(n: u32) -> &'static [u32] {
    if n <= 16 {
        &[0, 1, 70]
    } else {
        &[1, 5]
    }
}

fn ch6_name(case: u32) -> &'static str {
    match case {
        ch6::X_GATHER => "gather",
        ch6::X_GATHER_IN_PLACE => "gather in place",
        ch6::X_GATHERV => "gatherv",
        ch6::X_SCATTER => "scatter",
        ch6::X_SCATTER_IN_PLACE => "scatter in place",
        ch6::X_SCATTERV => "scatterv",
        ch6::X_GATHERV_IN_PLACE => "gatherv in place",
        ch6::X_SCATTERV_IN_PLACE => "scatterv in place",
        ch6::X_ALLGATHER => "all_gather",
        ch6::X_ALLGATHER_IN_PLACE => "all_gather in place",
        ch6::X_ALLGATHERV => "all_gatherv",
        ch6::X_ALLTOALL => "all_to_all",
        ch6::X_ALLTOALL_IN_PLACE => "all_to_all in place",
        ch6::X_ALLTOALLV => "all_to_allv",
        ch6::X_ALLTOALLV_IN_PLACE => "all_to_allv in place",
        _ => "?",
    }
}

/// What rank `r`'s receive buffer (`n (k + 2)` words) must hold after
/// exchange case `case` with root `root`.
fn exchange_expected(case: u32, n: u32, k: u32, root: u32, r: u32) -> Vec<u32> {
    let mut v = vec![ch6::FILL; (n * (k + 2)) as usize];
    let mut put = |at: u32, val: u32| v[at as usize] = val;
    for q in 0..n {
        match case {
            ch6::X_GATHER | ch6::X_GATHER_IN_PLACE if r == root => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, root, i)))
            }
            ch6::X_GATHERV if r == 0 => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, 0) + i, ch6::xval(q, 0, i)))
            }
            ch6::X_GATHERV_IN_PLACE if r == root => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, 0) + i, ch6::xval(q, root, i)))
            }
            ch6::X_ALLGATHER | ch6::X_ALLGATHER_IN_PLACE => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, 0, i)))
            }
            ch6::X_ALLGATHERV => {
                (0..ch6::vc(q, k)).for_each(|i| put(ch6::displ(q, k, r) + i, ch6::xval(q, 0, i)))
            }
            ch6::X_ALLTOALL | ch6::X_ALLTOALL_IN_PLACE => {
                (0..k).for_each(|i| put(q * k + i, ch6::xval(q, r, i)))
            }
            ch6::X_ALLTOALLV => {
                (0..ch6::vcc(q, r, k)).for_each(|i| put(ch6::displ(q, k, 1) + i, ch6::xval(q, r, i)))
            }
            ch6::X_ALLTOALLV_IN_PLACE => {
                (0..ch6::vcs(q, r, k)).for_each(|i| put(ch6::displ(q, k, r) + i, ch6::xval(q, r, i)))
            }
            _ => {}
        }
    }
    match case {
        ch6::X_SCATTER => (0..k).for_each(|i| put(i, ch6::xval(root, r, i))),
        ch6::X_SCATTER_IN_PLACE if r != root => (0..k).for_each(|i| put(i, ch6::xval(root, r, i))),
        ch6::X_SCATTERV => (0..ch6::vc(r, k)).for_each(|i| put(i, ch6::xval(0, r, i))),
        ch6::X_SCATTERV_IN_PLACE if r != root => {
            (0..ch6::vc(r, k)).for_each(|i| put(i, ch6::xval(root, r, i)))
        }
        _ => {}
    }
    v
}

/// Runs the exchange `cases` in every chapter 6 shape and checks every
/// rank's class and receive buffer.
fn exchange_checks(device: &Device, cases: &[u32]) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(CH6_SHAPES, |c, s| {
        let n = s.ranks;
        let rooted = |case: u32| {
            matches!(
                case,
                ch6::X_GATHER
                    | ch6::X_GATHER_IN_PLACE
                    | ch6::X_SCATTER
                    | ch6::X_SCATTER_IN_PLACE
                    | ch6::X_GATHERV_IN_PLACE
                    | ch6::X_SCATTERV_IN_PLACE
            )
        };
        for &case in cases {
            let roots: Vec<u32> = if rooted(case) { vec![0, n / 2, n - 1] } else { vec![0] };
            let mut seen = std::collections::BTreeSet::new();
            for &k in ch6_counts(n) {
                for &root in &roots {
                    if !seen.insert((k, root)) {
                        continue;
                    }
                    let region = ch6::exchange_region(n, k);
                    let job = Job::new(&ch6::SEMANTICS_EXCHANGE, case, ch6::CH6_STRIDE)
                        .params(k, root)
                        .cells(region * n as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    let name = ch6_name(case);
                    for r in 0..n {
                        c.eq(
                            || format!("{name}, {k} words, root {root}: rank {r}: [class, barrier, all_reduce, sum]"),
                            o.rank(r).array(),
                            [0, 0, 0, n],
                        );
                        let at = r as usize * region + ch6::exchange_recv_offset(n, k);
                        let got = &o.cells[at..at + (n * (k + 2)) as usize];
                        let want = exchange_expected(case, n, k, root, r);
                        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                            c.fail(format!(
                                "{name}, {k} words, root {root}: rank {r}: receive word {i} is {:#x}, expected {:#x}",
                                got[i], want[i]
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn gather_scatter(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[
            ch6::X_GATHER,
            ch6::X_GATHER_IN_PLACE,
            ch6::X_GATHERV,
            ch6::X_SCATTER,
            ch6::X_SCATTER_IN_PLACE,
            ch6::X_SCATTERV,
            ch6::X_GATHERV_IN_PLACE,
            ch6::X_SCATTERV_IN_PLACE,
        ],
    )
}

fn all_gather(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[ch6::X_ALLGATHER, ch6::X_ALLGATHER_IN_PLACE, ch6::X_ALLGATHERV],
    )
}

fn all_to_all_case(device: &Device) -> Result<(), String> {
    exchange_checks(
        device,
        &[
            ch6::X_ALLTOALL,
            ch6::X_ALLTOALL_IN_PLACE,
            ch6::X_ALLTOALLV,
            ch6::X_ALLTOALLV_IN_PLACE,
        ],
    )
}

/// An element of a prefix case as its words, with the case's operation.
struct PrefixOp {
    name: &'static str,
    param2: u32,
    elem: fn(u32, u32) -> Vec<u32>,
    combine: fn(&[u32], &[u32]) -> Vec<u32>,
    /// Words per element.
    words: usize,
}

const PREFIX_OPS: [PrefixOp; 2] = [
    PrefixOp {
        name: "u32 sum",
        param2: ch6::PREFIX_SUM,
        elem: |r, j| vec![ch6::sum_operand(r, j)],
        combine: |a, b| vec![a[0].wrapping_add(b[0])],
        words: 1,
    },
    PrefixOp {
        name: "matrix product (non-commutative)",
        param2: ch6::PREFIX_MATRIX,
        elem: |r, j| {
            let m = coll::user_operand(r, j);
            vec![m.a, m.b, m.c, m.d]
        },
        combine: |x, y| {
            let m = mat_product(
                Mat2 {
                    a: x[0],
                    b: x[1],
                    c: x[2],
                    d: x[3],
                },
                Mat2 {
                    a: y[0],
                    b: y[1],
                    c: y[2],
                    d: y[3],
                },
            );
            vec![m.a, m.b, m.c, m.d]
        },
        words: 4,
    },
];

fn prefix_name(case: u32) -> &'static str {
    match case {
        ch6::P_SCAN => "scan",
        ch6::P_SCAN_IN_PLACE => "scan in place",
        ch6::P_EXSCAN => "exclusive_scan",
        ch6::P_EXSCAN_IN_PLACE => "exclusive_scan in place",
        ch6::P_RSB => "reduce_scatter_block",
        ch6::P_RSB_IN_PLACE => "reduce_scatter_block in place",
        ch6::P_RS => "reduce_scatter",
        ch6::P_RS_IN_PLACE => "reduce_scatter in place",
        ch6::P_ALL_REDUCE_IN_PLACE => "all_reduce in place",
        ch6::P_REDUCE_IN_PLACE => "reduce in place (root n/2)",
        ch6::P_REDUCE_LOCAL => "reduce_local",
        _ => "?",
    }
}

/// `op` folded over `ranks` (in that order) for element `j`.
fn fold(op: &PrefixOp, ranks: impl Iterator<Item = u32>, j: u32) -> Option<Vec<u32>> {
    ranks.map(|q| (op.elem)(q, j)).reduce(|a, b| (op.combine)(&a, &b))
}

/// Runs the prefix `cases` in every chapter 6 shape with both operations
/// and checks the results (words of the buffer that receives them: the
/// receive buffer, or the send buffer in place).
fn prefix_checks(device: &Device, cases: &[u32]) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(CH6_SHAPES, |c, s| {
        let n = s.ranks;
        for op in &PREFIX_OPS {
            if op.words == 4 && n > 1 {
                let forward = fold(op, 0..n, 0);
                let backward = fold(op, (0..n).rev(), 0);
                c.ensure(forward != backward, || {
                    "test design: the operands commute, the case proves nothing".into()
                });
            }
            for &case in cases {
                for &k in ch6_counts(n) {
                    let region = ch6::prefix_region(n, k);
                    let job = Job::new(&ch6::SEMANTICS_PREFIX, case, ch6::CH6_STRIDE)
                        .params(k, op.param2)
                        .cells(region * n as usize);
                    let o = launch(device, &s.spec(), n, &job)?;
                    let name = prefix_name(case);
                    let in_place = matches!(
                        case,
                        ch6::P_SCAN_IN_PLACE
                            | ch6::P_EXSCAN_IN_PLACE
                            | ch6::P_RSB_IN_PLACE
                            | ch6::P_RS_IN_PLACE
                            | ch6::P_ALL_REDUCE_IN_PLACE
                            | ch6::P_REDUCE_IN_PLACE
                    );
                    let offsets: Vec<u32> = (0..=n)
                        .scan(0, |acc, q| {
                            let v = *acc;
                            *acc += if q < n { ch6::rs_count(q, k) } else { 0 };
                            Some(v)
                        })
                        .collect();
                    for r in 0..n {
                        c.eq(
                            || format!("{}, {name}, {k} elements: rank {r}: [class, barrier, all_reduce, sum]", op.name),
                            o.rank(r).array(),
                            [0, 0, 0, n],
                        );
                        let base = r as usize * region + if in_place { 0 } else { region / 2 };
                        let fill = vec![ch6::FILL; op.words];
                        let mine = |j: u32| (op.elem)(r, j);
                        let (len, want): (u32, Box<dyn Fn(u32) -> Vec<u32>>) = match case {
                            ch6::P_SCAN | ch6::P_SCAN_IN_PLACE => {
                                (k, Box::new(|j| fold(op, 0..=r, j).unwrap_or_default()))
                            }
                            ch6::P_EXSCAN | ch6::P_EXSCAN_IN_PLACE => (
                                k,
                                Box::new(|j| match fold(op, 0..r, j) {
                                    Some(v) => v,
                                    None if in_place => mine(j),
                                    None => fill.clone(),
                                }),
                            ),
                            ch6::P_RSB | ch6::P_RSB_IN_PLACE => {
                                (k, Box::new(|i| fold(op, 0..n, r * k + i).unwrap_or_default()))
                            }
                            ch6::P_RS | ch6::P_RS_IN_PLACE => (
                                ch6::rs_count(r, k),
                                Box::new(|i| fold(op, 0..n, offsets[r as usize] + i).unwrap_or_default()),
                            ),
                            ch6::P_ALL_REDUCE_IN_PLACE => (k, Box::new(|j| fold(op, 0..n, j).unwrap_or_default())),
                            // Element j (the left operand) combined with
                            // element j + 1 of this rank's own operands.
                            ch6::P_REDUCE_LOCAL => (k, Box::new(|j| (op.combine)(&mine(j), &mine(j + 1)))),
                            _ => (
                                k,
                                Box::new(|j| if r == n / 2 { fold(op, 0..n, j).unwrap_or_default() } else { mine(j) }),
                            ),
                        };
                        for j in 0..len {
                            let at = base + j as usize * op.words;
                            let got = &o.cells[at..at + op.words];
                            let w = want(j);
                            if got != &w[..] {
                                c.fail(format!(
                                    "{}, {name}, {k} elements: rank {r}: element {j} is {got:x?}, expected {w:x?}",
                                    op.name
                                ));
                                break;
                            }
                        }
                        if !in_place {
                            let at = base + len as usize * op.words;
                            c.eq(
                                || format!("{}, {name}, {k} elements: rank {r}: element {len} (past the result) untouched", op.name),
                                &o.cells[at..at + op.words],
                                &fill[..],
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    });
    c.finish()
}

fn scan(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[
            ch6::P_SCAN,
            ch6::P_SCAN_IN_PLACE,
            ch6::P_EXSCAN,
            ch6::P_EXSCAN_IN_PLACE,
        ],
    )
}

fn reduce_scatter(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[ch6::P_RSB, ch6::P_RSB_IN_PLACE, ch6::P_RS, ch6::P_RS_IN_PLACE],
    )
}

fn reduce_in_place(device: &Device) -> Result<(), String> {
    prefix_checks(
        device,
        &[
            ch6::P_ALL_REDUCE_IN_PLACE,
            ch6::P_REDUCE_IN_PLACE,
            ch6::P_REDUCE_LOCAL,
        ],
    )
}

/// Bad arguments to the chapter 6 collectives: every rank that entered
/// returns an error (its own, or the class of the failure), nobody hangs,
/// and the world works afterwards.
fn collective_arguments(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let shapes = [
        shape(1, 1),
        shape(2, 2),
        shape(7, 7),
        shape(12, 3),
        shape(64, 32),
        small_rounds(12, 3),
    ];
    c.shapes(&shapes, |c, s| {
        let n = s.ranks;
        const K: u32 = 3;
        let count = ErrorClass::Count as u32;
        for case in ch6::E_CASES {
            let job = Job::new(&ch6::SEMANTICS_EXCHANGE, case, ch6::CH6_STRIDE)
                .params(K, 0)
                .cells(ch6::exchange_region(n, K) * n as usize);
            let o = launch(device, &s.spec(), n, &job)?;
            for r in 0..n {
                let class = match case {
                    ch6::E_GATHER_BAD_ROOT | ch6::E_SCATTER_BAD_ROOT => ErrorClass::Root as u32,
                    ch6::E_SCATTERV_BOUNDS if r == 0 => ErrorClass::Arg as u32,
                    ch6::E_ALLGATHER_TYPE => ErrorClass::Type as u32,
                    _ => count,
                };
                c.eq(
                    || format!("exchange error case {case}: rank {r}: [class, barrier, all_reduce, sum]"),
                    o.rank(r).array(),
                    [class, 0, 0, n],
                );
            }
        }
        for op in &PREFIX_OPS {
            for case in ch6::PE_CASES {
                let job = Job::new(&ch6::SEMANTICS_PREFIX, case, ch6::CH6_STRIDE)
                    .params(K, op.param2)
                    .cells(ch6::prefix_region(n, K) * n as usize);
                let o = launch(device, &s.spec(), n, &job)?;
                // One rank alone passing one element more is consistent.
                let class = if case == ch6::PE_SCAN_COUNT && n == 1 {
                    0
                } else {
                    count
                };
                for r in 0..n {
                    c.eq(
                        || {
                            format!(
                                "{}, prefix error case {case}: rank {r}: [class, barrier, all_reduce, sum]",
                                op.name
                            )
                        },
                        o.rank(r).array(),
                        [class, 0, 0, n],
                    );
                }
            }
        }
        Ok(())
    });
    c.finish()
}

// ---------------------------------------------------------------------------
// Deadlocks: every wait is bounded (the GPU's way to end one), the waiting
// rank that times out aborts the world, the others give up, and the host
// reports what each rank waited for. The emulator, which also detects
// deadlocks exactly, honours a world's timeout the same way, so both
// backends must give the same report.

/// The wait bound of the deadlock cases: short, so that a case costs little.
const DEADLOCK_TIMEOUT: Duration = Duration::from_millis(300);

/// Words of the out buffer [`launch_fault`] gives the fault kernel.
pub const FAULT_OUT_WORDS: usize = 16;

/// Launches scenario `case` of the fault kernel
/// ([`SEMANTICS_FAULTS`]) with `param` in a world of `spec`, with an out
/// buffer of [`FAULT_OUT_WORDS`] words and small data and cell buffers.
pub fn launch_fault(
    device: &Device,
    case: u32,
    param: u32,
    spec: &WorldSpec,
) -> Result<LaunchReport, HostError> {
    let out = device.alloc_zeroed::<u32>(FAULT_OUT_WORDS)?;
    let data = device.alloc_zeroed::<u8>(8)?;
    let cells = device.alloc_zeroed::<u32>(1)?;
    let args = CaseArgs {
        case,
        param,
        param2: 0,
        stride: 0,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    device.launch(&SEMANTICS_FAULTS, &args, spec)
}

/// Launches fault scenario `case` with the deadlock cases' wait bound and
/// returns every rank's state in the deadlock report, and the report.
fn deadlock_of(
    device: &Device,
    case: u32,
    param: u32,
    spec: WorldSpec,
) -> Result<(Vec<BlockedState>, String), String> {
    match launch_fault(device, case, param, &spec.timeout(DEADLOCK_TIMEOUT)) {
        Ok(_) => Err(format!(
            "fault case {case}: the launch succeeded; expected a deadlock"
        )),
        Err(HostError::Deadlock(report)) => {
            let text = report.to_string();
            Ok((report.ranks.into_iter().map(|r| r.state).collect(), text))
        }
        Err(e) => Err(format!("fault case {case}: expected a deadlock, got: {e}")),
    }
}

/// Whether `state` is a wait that timed out or gave up, in `(operation, peer, tag)`.
fn ended_wait(state: &BlockedState, wait: (u32, i32, i32)) -> Option<bool> {
    match *state {
        BlockedState::TimedOut { operation, peer, tag } if (operation, peer, tag) == wait => Some(true),
        BlockedState::Aborted { operation, peer, tag } if (operation, peer, tag) == wait => Some(false),
        _ => None,
    }
}

/// A receive nobody answers: the receiver times out naming its source and
/// tag; the other rank has exited.
fn deadlock_timeout(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(2, 2), shape(2, 1)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_DEADLOCK_RECEIVE, 0, s.spec())?;
        let receive = gpu_mpi::device::wait::Call::Receive as u32;
        c.eq(
            || format!("rank 0 ({text})"),
            states.first().cloned(),
            Some(BlockedState::TimedOut {
                operation: receive,
                peer: 1,
                tag: 7,
            }),
        );
        c.eq(
            || format!("rank 1 ({text})"),
            states.get(1).cloned(),
            Some(BlockedState::Exited),
        );
        c.eq(
            || "report".into(),
            text.as_str(),
            "deadlock: rank 0: timed out in receive(source 1, tag 7); rank 1: exited\n\
             waiting receives: rank 0: timed out in receive(source 1, tag 7)\n\
             hint: rank 0 waits for a message from rank 1, which exited with no message left for it (none sent, or all received already)",
        );
        Ok(())
    });
    c.finish()
}

/// Two ranks send each other a message larger than a slot (rendezvous):
/// both wait in their send; at least one times out, the other times out
/// too or gives up.
fn deadlock_send_send(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(2, 2), shape(2, 1)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_SEND_SEND, 1024, s.spec())?;
        let send = gpu_mpi::device::wait::Call::Send as u32;
        let ends: Vec<_> = [(0usize, 1), (1, 0)]
            .iter()
            .map(|&(r, peer)| states.get(r).and_then(|st| ended_wait(st, (send, peer, 3))))
            .collect();
        c.ensure(ends.iter().all(Option::is_some), || {
            format!("both ranks end their send(dest peer, tag 3): {text}")
        });
        c.ensure(ends.contains(&Some(true)), || {
            format!("one of them timed out: {text}")
        });
        Ok(())
    });
    c.finish()
}

/// Every rank receives from any source and nobody sends, over several
/// blocks: the first rank to time out aborts the world and every other rank
/// gives up (or times out at the same moment), each naming its wait.
fn deadlock_abort(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    c.shapes(&[shape(3, 3), shape(40, 8), shape(512, 256)], |c, s| {
        let (states, text) = deadlock_of(device, FAULT_RECEIVE_ANY, 0, s.spec())?;
        let wait = (gpu_mpi::device::wait::Call::Receive as u32, -1, 2);
        let ends: Vec<_> = states.iter().map(|st| ended_wait(st, wait)).collect();
        c.eq(|| "ranks in the report".into(), ends.len(), s.ranks as usize);
        let odd = ends.iter().position(Option::is_none);
        c.ensure(odd.is_none(), || {
            format!("rank {odd:?} did not end its receive(source any, tag 2): {text:.300}")
        });
        c.ensure(ends.contains(&Some(true)), || {
            format!("a rank timed out: {text:.300}")
        });
        c.ensure(text.contains("timed out in receive(source any, tag 2)"), || {
            format!("report names the wait: {text:.300}")
        });
        Ok(())
    });
    c.finish()
}

// ---------------------------------------------------------------------------
// A collective that one rank never enters fails on every rank that entered
// it (docs/semantics.md, "A collective that cannot complete").

/// The call each collective of [`SEMANTICS_SKIP`] waits in, by its number.
pub const SKIP_CALLS: [(&str, gpu_mpi::device::wait::Call); SKIP_COLLECTIVES as usize] = {
    use gpu_mpi::device::wait::Call::*;
    [
        ("barrier", Barrier),
        ("broadcast", Broadcast),
        ("reduce", Reduce),
        ("reduce in place", Reduce),
        ("all_reduce", AllReduce),
        ("all_reduce in place", AllReduce),
        ("gather", Gather),
        ("gather in place", Gather),
        ("gatherv", Gather),
        ("scatter", Scatter),
        ("scatter in place", Scatter),
        ("scatterv", Scatter),
        ("all_gather", AllGather),
        ("all_gather in place", AllGather),
        ("all_gatherv", AllGather),
        ("all_to_all", AllToAll),
        ("all_to_all in place", AllToAll),
        ("all_to_allv", AllToAll),
        ("reduce_scatter_block", ReduceScatter),
        ("reduce_scatter_block in place", ReduceScatter),
        ("reduce_scatter", ReduceScatter),
        ("scan", Scan),
        ("scan in place", Scan),
        ("exclusive_scan", Scan),
        ("exclusive_scan in place", Scan),
    ]
};

/// The wait bound of the skipped-collective worlds.
const SKIP_TIMEOUT: Duration = Duration::from_millis(40);

/// Launches collective `which` of [`SEMANTICS_SKIP`] in a world of `shape`
/// (at most 8 ranks) with world rank `skip` never entering it, on the
/// world or (`split`) on a communicator of every rank split from it with
/// the keys reversed, and checks the rule of docs/semantics.md:
/// - on the world, every other rank returns `MPI_ERR_TIMEOUT` or
///   `MPI_ERR_ABORTED`, at least one times out, and the deadlock report
///   shows each of them ending its wait in the collective, the missing
///   rank as exited, and the hint naming it;
/// - on the split communicator (the general algorithms over messages),
///   every other rank fails the same way (the rooted collectives and scans
///   end with a completion barrier), at least one times out, and the
///   report shows the missing rank as exited and each rank in a message
///   step of the algorithm.
pub fn skipped_collective(
    device: &Device,
    which: u32,
    s: Shape,
    skip: u32,
    split: bool,
) -> Result<(), String> {
    let (name, call) = SKIP_CALLS[which as usize];
    let what = format!(
        "{name}{} ({} ranks in blocks of {}, rank {skip} missing)",
        if split { " on a split communicator" } else { "" },
        s.ranks,
        s.block
    );
    let out = device
        .alloc_zeroed::<u32>(s.ranks as usize)
        .map_err(|e| e.to_string())?;
    let (data, cells) = (
        device.alloc_zeroed::<u8>(8).map_err(|e| e.to_string())?,
        device.alloc_zeroed::<u32>(1).map_err(|e| e.to_string())?,
    );
    let args = CaseArgs {
        case: which,
        param: skip,
        param2: split as u32,
        stride: 1,
        out: out.slice(),
        data: data.slice(),
        cells: cells.slice(),
    };
    let launched = device.launch(&SEMANTICS_SKIP, &args, &s.spec().timeout(SKIP_TIMEOUT));
    let got = device.download(&out).map_err(|e| e.to_string())?;
    let (timeout, aborted) = (1 + ErrorClass::Timeout as u32, 1 + ErrorClass::Aborted as u32);
    let mut c = Checker::default();
    let report = match &launched {
        Err(HostError::Deadlock(rep)) => Some(rep),
        Ok(_) => None,
        Err(e) => return Err(format!("{what}: expected a deadlock report, got: {e}")),
    };
    let text = report.map(|r| r.to_string()).unwrap_or_default();
    c.eq(
        || format!("{what}: what the missing rank recorded"),
        got[skip as usize],
        0,
    );
    for r in (0..s.ranks).filter(|&r| r != skip) {
        let class = got[r as usize];
        let failed = class == timeout || class == aborted;
        c.ensure(failed, || {
            format!(
                "{what}: rank {r} returned class {} (it must fail): {text:.600}",
                class.wrapping_sub(1),
            )
        });
        if let (Some(rep), true) = (report, failed) {
            // On the world the wait is the collective's; on a split
            // communicator, a message step of its algorithm.
            let state = rep.state_of(r);
            let ended = match state {
                Some(BlockedState::TimedOut { operation, .. }) => {
                    class == timeout && (split || operation == call as u32)
                }
                Some(BlockedState::Aborted { operation, .. }) => {
                    class == aborted && (split || operation == call as u32)
                }
                _ => false,
            };
            c.ensure(ended, || {
                format!("{what}: rank {r} ended as {state:?}: {text:.600}")
            });
        }
    }
    match report {
        Some(rep) => {
            c.eq(
                || format!("{what}: the missing rank in the report"),
                rep.state_of(skip),
                Some(BlockedState::Exited),
            );
            c.ensure(got.contains(&timeout), || {
                format!("{what}: no rank timed out: {got:?}")
            });
            c.ensure(
                split || text.contains(&format!("hint: rank {skip} exited while")),
                || format!("{what}: the hint does not name rank {skip}: {text:.600}"),
            );
        }
        None => c.fail(format!("{what}: the launch succeeded: {got:?}")),
    }
    c.finish()
}

/// Every collective of the world with one rank missing, in another block
/// than some of the ranks that entered and in the same block as others (8
/// ranks in blocks of 4, the first block's rank 2 or the second block's
/// rank 6 missing), and of a split communicator (rank 5 missing).
/// check/tests/collective_failure.rs runs more shapes.
fn skipped_collectives(device: &Device) -> Result<(), String> {
    let mut errors = Vec::new();
    for which in 0..SKIP_COLLECTIVES {
        for (skip, split) in [(6, false), (2, false), (5, true)] {
            if let Err(e) = skipped_collective(device, which, shape(8, 4), skip, split) {
                errors.push(e);
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
