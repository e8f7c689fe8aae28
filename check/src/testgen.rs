//! Tests written once, run on every backend: [`testgen!`](crate::testgen!)
//! turns a test body `fn name(backend: Backend)` into a test on the
//! emulator, always, and one on the GPU, which runs where a GPU is present
//! and otherwise returns at once after one line saying it was skipped.
//!
//! ```ignore
//! use gpu_mpi_check::testgen::Backend;
//!
//! fn ring_passes_a_token(backend: Backend) {
//!     let device = backend.device();
//!     // launch, download, assert
//! }
//! gpu_mpi_check::testgen!(ring_passes_a_token);
//! // tests `ring_passes_a_token::cpu` and `ring_passes_a_token::cuda`
//! ```
//!
//! "Present" is decided once per test binary: the cuda backend opens with
//! the conformance kernels ([`crate::open`]). [`TEST_BACKEND_VAR`] can
//! narrow it: `cpu` skips every GPU test, `cuda` fails them when no GPU
//! opens (a run that must prove GPU coverage). The GPU tests share that one
//! device and run one at a time (a world fills the GPU; two launches side
//! by side could each wait for blocks that the other holds).
//!
//! Only kernels of the conformance crate (`gpu-mpi-check-kernels`, built
//! into [`crate::KERNELS`]) exist on the GPU: a test that launches a kernel
//! defined in the test file itself stays on the emulator.

use gpu_mpi::{BackendKind, CpuOptions, Device, HostError};
use std::ops::Deref;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The variable that narrows where the tests run: unset (or empty) runs the
/// GPU tests where a GPU opens and skips them elsewhere; `cpu` skips them;
/// `cuda` requires the GPU (a GPU test fails when none opens). The tests on
/// the emulator run in every case.
pub const TEST_BACKEND_VAR: &str = "GPU_MPI_TEST_BACKEND";

/// The backend one instance of a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU emulator: a new device per [`Backend::device`] call.
    Cpu,
    /// The GPU: the one device of this test binary.
    Cuda,
}

impl Backend {
    /// The test's device: the emulator with default options, or the GPU.
    pub fn device(self) -> TestDevice {
        self.device_with(CpuOptions::default())
    }

    /// The test's device: the emulator with `options`, or the GPU (which has
    /// none of them: a seeded schedule or a worker count means nothing
    /// there, so the same assertions must hold without them).
    pub fn device_with(self, options: CpuOptions) -> TestDevice {
        match self {
            Backend::Cpu => TestDevice::Own(Device::cpu_with(options)),
            Backend::Cuda => match gpu() {
                Gpu::Present(d) => TestDevice::Shared(d),
                Gpu::Absent(why) | Gpu::Broken(why) => {
                    panic!("a GPU test asked for the GPU, which is not usable: {why}")
                }
            },
        }
    }

    /// `cpu` or `cuda`, as [`Device::backend_name`] says it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

/// A test's device: its own emulator, or the test binary's GPU.
#[derive(Debug)]
pub enum TestDevice {
    /// An emulator made for this test.
    Own(Device),
    /// The GPU that every GPU test of the binary shares.
    Shared(&'static Device),
}

impl Deref for TestDevice {
    type Target = Device;

    fn deref(&self) -> &Device {
        match self {
            TestDevice::Own(d) => d,
            TestDevice::Shared(d) => d,
        }
    }
}

/// Whether the GPU tests can run, decided once.
enum Gpu {
    /// The GPU, opened with the conformance kernels.
    Present(Device),
    /// No usable GPU, or [`TEST_BACKEND_VAR`] says `cpu`: skip, saying why.
    Absent(String),
    /// A GPU was required, or one answered and then failed to open: fail.
    Broken(String),
}

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let required = match std::env::var(TEST_BACKEND_VAR).as_deref() {
            Err(std::env::VarError::NotPresent) | Ok("") => false,
            Ok("cpu") => return Gpu::Absent(format!("{TEST_BACKEND_VAR}=cpu")),
            Ok("cuda") => true,
            Ok(other) => return Gpu::Broken(format!("{TEST_BACKEND_VAR}={other}: neither cpu nor cuda")),
            Err(e) => return Gpu::Broken(format!("{TEST_BACKEND_VAR}: {e}")),
        };
        match crate::open(BackendKind::Cuda) {
            Ok(d) => Gpu::Present(d),
            Err(HostError::NoGpu(why)) if !required => Gpu::Absent(format!("no GPU: {why}")),
            Err(e) if required => Gpu::Broken(format!("{TEST_BACKEND_VAR}=cuda: {e}")),
            Err(e) => Gpu::Broken(format!("the GPU did not open: {e}")),
        }
    })
}

/// Whether the GPU tests of this binary run (a GPU opened, and
/// [`TEST_BACKEND_VAR`] does not say `cpu`).
pub fn gpu_present() -> bool {
    matches!(gpu(), Gpu::Present(_))
}

/// The emulator instance of a test (what [`testgen!`](crate::testgen!)
/// generates as `NAME::cpu`).
pub fn on_cpu(body: fn(Backend)) {
    body(Backend::Cpu)
}

/// The GPU instance of test `name` (`NAME::cuda`): runs `body` on the GPU,
/// one GPU test at a time, or prints one line saying it was skipped.
///
/// # Panics
///
/// When the GPU was required ([`TEST_BACKEND_VAR`]`=cuda`) and did not
/// open, or answered and failed to open; and when `body` panics.
pub fn on_cuda(name: &str, body: fn(Backend)) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    match gpu() {
        Gpu::Present(_) => {
            // A failed test poisons the lock; the next one still runs.
            let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
            body(Backend::Cuda)
        }
        Gpu::Absent(why) => eprintln!("{name}: skipped on cuda ({why})"),
        Gpu::Broken(why) => panic!("{name} on cuda: {why}"),
    }
}

/// Turns each test body `fn NAME(backend: Backend)` (written once, beside
/// it) into two tests: `NAME::cpu`, on the emulator, and `NAME::cuda`, on
/// the GPU where one is present and otherwise skipped with one line
/// ([`testgen`](mod@crate::testgen)). Attributes before a name (`#[ignore]`)
/// go on both tests.
///
/// ```ignore
/// fn a_test(backend: gpu_mpi_check::testgen::Backend) { /* ... */ }
/// gpu_mpi_check::testgen!(a_test);
/// ```
#[macro_export]
macro_rules! testgen {
    ($($(#[$attr:meta])* $test:ident),+ $(,)?) => {
        $(
            mod $test {
                #[test]
                $(#[$attr])*
                fn cpu() {
                    $crate::testgen::on_cpu(super::$test)
                }

                #[test]
                $(#[$attr])*
                fn cuda() {
                    $crate::testgen::on_cuda(module_path!(), super::$test)
                }
            }
        )+
    };
}
