//! What every case shares: world [`Shape`]s, a [`Job`] (one launch of a
//! semantic kernel) and its [`Output`], [`launch`], reading a rank's record
//! ([`Words`]), and the [`Checker`] that collects mismatches.

use gpu_mpi::device::{ErrorClass, GlobalSlice, Kernel};
use gpu_mpi::{Device, LaunchReport, WorldSpec};
use gpu_mpi_check_kernels::CaseArgs;
use std::fmt;

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

pub(crate) const fn shape(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 0,
    }
}

/// A shape whose collectives stage 64 bytes per round (56 of data).
pub(crate) const fn small_rounds(ranks: u32, block: u32) -> Shape {
    Shape {
        ranks,
        block,
        collective_bytes: 64,
    }
}

impl Shape {
    pub(crate) fn spec(self) -> WorldSpec {
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
pub(crate) struct Job {
    pub(crate) kernel: &'static Kernel<CaseArgs>,
    pub(crate) case: u32,
    pub(crate) param: u32,
    pub(crate) param2: u32,
    /// Words of `out` per rank.
    pub(crate) stride: u32,
    /// Bytes of `data`.
    pub(crate) data: usize,
    /// Words of `cells`.
    pub(crate) cells: usize,
}

impl Job {
    pub(crate) fn new(kernel: &'static Kernel<CaseArgs>, case: u32, stride: u32) -> Job {
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
    pub(crate) fn params(mut self, param: u32, param2: u32) -> Job {
        self.param = param;
        self.param2 = param2;
        self
    }
    pub(crate) fn data(mut self, bytes: usize) -> Job {
        self.data = bytes;
        self
    }
    pub(crate) fn cells(mut self, words: usize) -> Job {
        self.cells = words;
        self
    }
}

/// What a launch left in its buffers.
pub(crate) struct Output {
    pub(crate) out: Vec<u32>,
    pub(crate) data: Vec<u8>,
    pub(crate) cells: Vec<u32>,
    pub(crate) stride: usize,
}

impl Output {
    /// The words rank `r` recorded.
    pub(crate) fn rank(&self, r: u32) -> Words<'_> {
        let start = (r as usize * self.stride).min(self.out.len());
        let end = (start + self.stride).min(self.out.len());
        Words {
            w: &self.out[start..end],
            i: 0,
        }
    }
}

pub(crate) fn launch(device: &Device, spec: &WorldSpec, ranks: u32, job: &Job) -> Result<Output, String> {
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
pub(crate) struct Words<'a> {
    w: &'a [u32],
    i: usize,
}

impl Words<'_> {
    pub(crate) fn take(&mut self) -> u32 {
        let v = self.w.get(self.i).copied().unwrap_or(0xBAD0_BAD0);
        self.i += 1;
        v
    }
    pub(crate) fn array<const N: usize>(&mut self) -> [u32; N] {
        std::array::from_fn(|_| self.take())
    }
}

/// The four words of an expected status: class, source, tag, bytes.
pub(crate) fn st(class: ErrorClass, source: i32, tag: i32, bytes: u32) -> [u32; 4] {
    [class as u32, source as u32, tag as u32, bytes]
}

pub(crate) const OK: ErrorClass = ErrorClass::Success;

/// Collects mismatches; `finish` turns them into the case's result.
#[derive(Default)]
pub(crate) struct Checker {
    failures: Vec<String>,
    total: usize,
}

const SHOWN_FAILURES: usize = 12;

impl Checker {
    pub(crate) fn fail(&mut self, msg: String) {
        self.total += 1;
        if self.failures.len() < SHOWN_FAILURES {
            self.failures.push(msg);
        }
    }

    pub(crate) fn eq<T: PartialEq + fmt::Debug>(&mut self, ctx: impl FnOnce() -> String, got: T, want: T) {
        if got != want {
            self.fail(format!("{}: got {got:?}, expected {want:?}", ctx()));
        }
    }

    pub(crate) fn ensure(&mut self, cond: bool, ctx: impl FnOnce() -> String) {
        if !cond {
            self.fail(ctx());
        }
    }

    /// Runs `f` for every shape, prefixing its failures with the shape.
    pub(crate) fn shapes(
        &mut self,
        shapes: &[Shape],
        mut f: impl FnMut(&mut Checker, Shape) -> Result<(), String>,
    ) {
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

    pub(crate) fn finish(self) -> Result<(), String> {
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

pub(crate) fn left(r: u32, n: u32) -> u32 {
    (r + n - 1) % n
}

pub(crate) fn partner(r: u32, n: u32) -> Option<u32> {
    ((r ^ 1) < n).then_some(r ^ 1)
}
