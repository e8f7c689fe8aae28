//! [`CudaOptions`]: the cuda backend's choices, and how the environment
//! sets them.

use crate::error::OptionError;
use std::time::Duration;

/// Choices of the cuda backend. [`CudaOptions::from_env`] reads them from
/// the environment (what [`crate::Device::open`] uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// The device (`GPU_MPI_CUDA_DEVICE`; default 0).
    pub ordinal: u32,
    /// Caps the registers per thread of every kernel when the driver
    /// JIT-compiles the PTX (`CU_JIT_MAX_REGISTERS`; `GPU_MPI_MAX_REGISTERS`,
    /// 16..=255, `0` or unset: no cap). A cap lets more ranks be co-resident
    /// (the MPI-style kernels use 140-190 registers: 256 ranks per H100 SM
    /// uncapped, 512 at 128) at the price of spills to local memory; default
    /// no cap (docs/gpu.md, "Registers and occupancy"). A cap loads PTX
    /// even where SASS for the device is embedded: only the JIT applies it.
    pub max_registers: Option<u32>,
    /// The bound of every wait when the spec has no timeout
    /// (`GPU_MPI_TIMEOUT_MS`; default 5 s). Every GPU wait must be bounded:
    /// a deadlocked world otherwise never finishes.
    pub default_timeout: Duration,
    /// The longest sleep between two polls of a GPU wait when the spec sets
    /// none (`GPU_MPI_BACKOFF_NS`, 1..; default: the device library's,
    /// 1024 ns).
    pub default_backoff_max_ns: Option<u32>,
    /// How long a kernel may go on after its world was aborted (a wait timed
    /// out) before the launch gives up on it (default 10 s, at least the
    /// world's timeout).
    pub abort_grace: Duration,
    /// The longest a kernel may run at all (`GPU_MPI_WATCHDOG_S`, `0`: no
    /// limit; default 120 s). It catches ranks stuck outside any bounded
    /// wait (a block barrier that exited ranks never reach, user code
    /// spinning on memory).
    pub watchdog: Option<Duration>,
    /// Prints one line on stderr when the device opens (device, the image
    /// loaded, its load time) and one per launch (kernel, world, occupancy and its limit)
    /// (`GPU_MPI_CUDA_VERBOSE=1`; default off).
    pub verbose: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            ordinal: 0,
            max_registers: None,
            default_timeout: Duration::from_secs(5),
            default_backoff_max_ns: None,
            abort_grace: Duration::from_secs(10),
            watchdog: Some(Duration::from_secs(120)),
            verbose: false,
        }
    }
}

impl CudaOptions {
    /// The defaults, changed by `GPU_MPI_CUDA_DEVICE`, `GPU_MPI_MAX_REGISTERS`,
    /// `GPU_MPI_TIMEOUT_MS`, `GPU_MPI_BACKOFF_NS`, `GPU_MPI_WATCHDOG_S` and `GPU_MPI_CUDA_VERBOSE`
    /// where set. Fails on a
    /// value that is not a number in range.
    pub fn from_env() -> Result<CudaOptions, OptionError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), with the variables from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<CudaOptions, OptionError> {
        let mut o = CudaOptions::default();
        let bad = |variable: &'static str, value: u64, expected: &'static str| OptionError {
            variable,
            value: value.to_string(),
            expected,
        };
        let number = |variable: &'static str| -> Result<Option<u64>, OptionError> {
            match var(variable) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| OptionError {
                    variable,
                    value: v,
                    expected: "a whole number",
                }),
            }
        };
        if let Some(n) = number("GPU_MPI_CUDA_DEVICE")? {
            o.ordinal = u32::try_from(n).map_err(|_| bad("GPU_MPI_CUDA_DEVICE", n, "a device ordinal"))?;
        }
        match number("GPU_MPI_MAX_REGISTERS")? {
            None | Some(0) => {}
            Some(n @ 16..=255) => o.max_registers = Some(n as u32),
            Some(n) => return Err(bad("GPU_MPI_MAX_REGISTERS", n, "16..=255, or 0 for no cap")),
        }
        match number("GPU_MPI_TIMEOUT_MS")? {
            None => {}
            Some(0) => {
                return Err(bad(
                    "GPU_MPI_TIMEOUT_MS",
                    0,
                    "a positive number of milliseconds (GPU waits must be bounded)",
                ))
            }
            Some(ms) => o.default_timeout = Duration::from_millis(ms),
        }
        match number("GPU_MPI_BACKOFF_NS")? {
            None => {}
            Some(n @ 1..=0xffff_ffff) => o.default_backoff_max_ns = Some(n as u32),
            Some(n) => return Err(bad("GPU_MPI_BACKOFF_NS", n, "1..=4294967295")),
        }
        match number("GPU_MPI_WATCHDOG_S")? {
            None => {}
            Some(0) => o.watchdog = None,
            Some(s) => o.watchdog = Some(Duration::from_secs(s)),
        }
        o.verbose = number("GPU_MPI_CUDA_VERBOSE")?.is_some_and(|v| v != 0);
        Ok(o)
    }
}
