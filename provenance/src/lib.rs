//! Where a JSON result of `gpu-mpi-bench` or `gpu-mpi-check` comes from:
//! the device (name, compute capability, SMs, clocks), the driver and CUDA
//! versions, the program and its commit, the date and host of the run, and
//! the options it was given. Every field the backend does not know is
//! `null` (the emulator has no clocks, driver or CUDA). See
//! docs/bench/README.md.

use gpu_mpi::Device;
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

/// The provenance object of a JSON result.
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// The program and its version, e.g. "gpu-mpi-bench 0.1.0".
    pub program: String,
    /// The git commit the program was built from (`-dirty` when the tree had
    /// uncommitted changes, "unknown" without git).
    pub commit: String,
    /// When the run started, UTC, RFC 3339 (`2026-11-23T01:13:24Z`).
    pub date: String,
    /// The machine's host name.
    pub host: Option<String>,
    /// "cpu" (the emulator) or "cuda".
    pub backend: &'static str,
    /// The GPU's name, or the emulator's.
    pub device: String,
    /// Compute capability, "9.0".
    pub compute_capability: Option<String>,
    /// Streaming multiprocessors (the emulator's virtual ones).
    pub sm_count: u32,
    /// Peak SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Peak memory clock, MHz.
    pub memory_clock_mhz: Option<u32>,
    /// The NVIDIA kernel driver's version, "550.54.15" (from
    /// /proc/driver/nvidia/version; Linux only).
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports, "12.8" (`cuDriverGetVersion`;
    /// the cuda backend uses the driver API only, there is no runtime).
    pub cuda_version: Option<String>,
    /// The options of the run, as the command line parsed them.
    pub options: serde_json::Value,
}

impl Provenance {
    /// The record of a run of `program` (name and version) built from
    /// `commit` on `device` with `options`, starting now.
    pub fn new(
        device: &Device,
        program: &str,
        commit: &str,
        options: &impl Serialize,
    ) -> Result<Provenance, serde_json::Error> {
        let d = device.describe();
        let on_gpu = d.backend == "cuda";
        Ok(Provenance {
            program: program.to_string(),
            commit: commit.to_string(),
            date: rfc3339_utc(SystemTime::now()),
            host: host_name(),
            backend: d.backend,
            device: d.name,
            compute_capability: d
                .compute_capability
                .map(|(major, minor)| format!("{major}.{minor}")),
            sm_count: d.sms,
            sm_clock_mhz: d.sm_clock_mhz,
            memory_clock_mhz: d.memory_clock_mhz,
            driver_version: if on_gpu { nvidia_driver_version() } else { None },
            cuda_version: d.cuda_version.map(|(major, minor)| format!("{major}.{minor}")),
            options: serde_json::to_value(options)?,
        })
    }
}

/// `t` in UTC as RFC 3339 with whole seconds (`1970-01-01T00:00:00Z`);
/// times before 1970 read as 1970.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`, for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The host name: the kernel's (Linux), else `$HOSTNAME`.
pub fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The NVIDIA kernel driver's version from /proc/driver/nvidia/version.
fn nvidia_driver_version() -> Option<String> {
    parse_nvidia_version(&std::fs::read_to_string("/proc/driver/nvidia/version").ok()?)
}

/// The version in the "NVRM version:" line of /proc/driver/nvidia/version:
/// the first word after "Kernel Module" made of digits and dots.
fn parse_nvidia_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let after = line.split_once("Kernel Module")?.1;
    after
        .split_whitespace()
        .find(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.') && w.contains('.'))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> String {
        rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs))
    }

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_164_799), "2024-02-28T23:59:59Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(at(1_735_689_600), "2025-01-01T00:00:00Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
        assert_eq!(at(1_795_396_404), "2026-11-23T01:13:24Z");
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn every_day_follows_the_one_before() {
        let mut prev = civil_from_days(0);
        for d in 1..200_000 {
            let (y, m, day) = civil_from_days(d);
            let next_ok = (y, m, day) == (prev.0, prev.1, prev.2 + 1)
                || (day == 1 && ((y, m) == (prev.0, prev.1 + 1) || (y, m, prev.1) == (prev.0 + 1, 1, 12)));
            assert!(next_ok, "day {d}: {prev:?} then {:?}", (y, m, day));
            prev = (y, m, day);
        }
    }

    #[test]
    fn the_driver_version_comes_from_the_nvrm_line() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(parse_nvidia_version(text).as_deref(), Some("550.54.15"));
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.10  Release Build\n";
        assert_eq!(parse_nvidia_version(open).as_deref(), Some("570.86.10"));
        assert_eq!(parse_nvidia_version("nothing here"), None);
    }

    #[test]
    fn the_emulator_has_no_gpu_fields() {
        #[derive(Serialize)]
        struct Opts {
            quick: bool,
        }
        let p = Provenance::new(&Device::cpu(), "x 1", "abc", &Opts { quick: true }).unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["backend"], "cpu");
        assert_eq!(v["sm_count"], 132);
        for key in [
            "compute_capability",
            "sm_clock_mhz",
            "memory_clock_mhz",
            "driver_version",
            "cuda_version",
        ] {
            assert!(v[key].is_null(), "{key}: {}", v[key]);
        }
        assert_eq!(v["options"]["quick"], true);
        assert_eq!(v["commit"], "abc");
        assert_eq!(v["date"].as_str().map(str::len), Some(20));
    }
}
