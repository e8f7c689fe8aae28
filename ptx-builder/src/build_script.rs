//! The whole flow of a build script that embeds kernels' PTX in its crate.
//!
//! [`run`] builds the kernel crate for every SM of `$GPU_MPI_PTX_ARCHS`
//! (default 70,90), copies the PTX to `$OUT_DIR/kernels_sm70.ptx` etc., lints
//! it, assembles it with `ptxas -v` when ptxas is found (for every SM of
//! `$GPU_MPI_PTX_CHECK_ARCHS`, default 70,80,90), writes the report to
//! `$OUT_DIR/ptxas_report.txt`, and writes `$OUT_DIR/ptx.rs`:
//!
//! ```ignore
//! pub const KERNELS_PTX: &[(&str, &str)] = &[("sm_70", include_str!("…/kernels_sm70.ptx")), …];
//! pub const PTXAS_REPORT: &str = include_str!("…/ptxas_report.txt");
//! pub const PTXAS_REPORT_PATH: &str = "…/ptxas_report.txt";
//! ```
//!
//! With `GPU_MPI_SKIP_PTX=1`, `KERNELS_PTX` is empty and nothing needs nightly.
//! A missing component fails the build with one line naming the command that
//! installs it. Lint findings and ptxas failures are build warnings here;
//! `scripts/ptx-check.sh` turns them into failures.

use crate::check::{self, Assembly};
use crate::{parse_archs, BuiltPtx, PtxBuilder, ARCHS_ENV, CHECK_ARCHS_ENV, SKIP_ENV, TOOLCHAIN_ENV};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the build script embeds.
struct Outputs {
    ptx: Vec<(u32, PathBuf)>,
    report_path: PathBuf,
}

/// Runs the flow for the kernel crate in `kernel_crate`; `watch` are extra
/// paths whose changes rebuild the PTX (the kernel crate's own directory is
/// always watched). Exits the process with an error line on failure.
pub fn run(kernel_crate: &Path, watch: &[&Path]) {
    for var in [
        SKIP_ENV,
        ARCHS_ENV,
        CHECK_ARCHS_ENV,
        TOOLCHAIN_ENV,
        "PTXAS",
        "CUDA_HOME",
        "CUDA_PATH",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    for p in std::iter::once(&kernel_crate.join("src").as_path()).chain(watch.iter()) {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    println!(
        "cargo::rerun-if-changed={}",
        kernel_crate.join("Cargo.toml").display()
    );

    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set for build scripts"));
    match build(kernel_crate, &out_dir) {
        Ok(outputs) => write_ptx_rs(&out_dir, outputs.as_ref()),
        Err(Failure { line, show_output }) => {
            // `cargo::error` makes cargo print the line as the build's error
            // and fail the build after the script exits. A missing component
            // needs nothing more; when the kernels failed to compile, a failed
            // exit status makes cargo also show the script's stderr, which
            // holds the nested cargo's diagnostics.
            println!("cargo::error={line}");
            if show_output {
                std::process::exit(1);
            }
            write_ptx_rs(&out_dir, None);
        }
    }
}

pub(crate) fn skip_requested() -> bool {
    std::env::var(SKIP_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Key of a ptxas report: ptxas, the jobs and the PTX contents.
pub(crate) fn report_key(ptxas: Option<&Path>, jobs: &[(PathBuf, String)]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ptxas.hash(&mut h);
    for (ptx, arch) in jobs {
        ptx.hash(&mut h);
        arch.hash(&mut h);
        std::fs::read(ptx).unwrap_or_default().hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

pub(crate) fn archs_from_env(var: &str, default: &[u32]) -> Result<Vec<u32>, String> {
    match std::env::var(var) {
        Ok(s) if var == CHECK_ARCHS_ENV && s.trim() == "none" => Ok(Vec::new()),
        Ok(s) if !s.trim().is_empty() => {
            parse_archs(&s).map_err(|e| format!("gpu-mpi PTX build: {var}: {e}"))
        }
        _ => Ok(default.to_vec()),
    }
}

/// The nested builds' target directory: `<outer target dir>/gpu-mpi-ptx`,
/// shared by every profile of the outer build. `OUT_DIR` is
/// `<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`.
pub(crate) fn nested_target_dir(out_dir: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("GPU_MPI_PTX_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    out_dir
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("gpu-mpi-ptx"))
        .unwrap_or_else(|| out_dir.join("gpu-mpi-ptx"))
}

/// Why the build script fails: one line, and whether cargo should show the
/// script's stderr too.
struct Failure {
    line: String,
    show_output: bool,
}

impl From<String> for Failure {
    fn from(line: String) -> Self {
        Failure {
            line,
            show_output: false,
        }
    }
}

fn build(kernel_crate: &Path, out_dir: &Path) -> Result<Option<Outputs>, Failure> {
    println!("cargo::rerun-if-env-changed=GPU_MPI_PTX_TARGET_DIR");
    if skip_requested() {
        return Ok(None);
    }
    let archs = archs_from_env(ARCHS_ENV, crate::DEFAULT_ARCHS)?;
    let check_archs = archs_from_env(CHECK_ARCHS_ENV, crate::DEFAULT_CHECK_ARCHS)?;
    let built: Vec<BuiltPtx> = PtxBuilder::new(kernel_crate)
        .archs(&archs)
        .target_dir(nested_target_dir(out_dir))
        .build()
        .map_err(|e| Failure {
            show_output: matches!(e, crate::Error::Build { .. }),
            line: e.to_string(),
        })?;

    let mut ptx = Vec::new();
    let mut lint = Vec::new();
    for b in &built {
        let dest = out_dir.join(format!("kernels_sm{}.ptx", b.arch));
        std::fs::copy(&b.path, &dest).map_err(|e| {
            format!(
                "gpu-mpi PTX build: copying {} to {}: {e}",
                b.path.display(),
                dest.display()
            )
        })?;
        let text = std::fs::read_to_string(&dest)
            .map_err(|e| format!("gpu-mpi PTX build: reading {}: {e}", dest.display()))?;
        let violations = check::lint(&text);
        for v in violations.iter().take(10) {
            println!("cargo::warning=PTX lint sm_{}: {v}", b.arch);
        }
        lint.push((dest.clone(), violations));
        ptx.push((b.arch, dest));
    }

    let report_path = out_dir.join("ptxas_report.txt");
    let ptxas = if check_archs.is_empty() {
        None
    } else {
        check::find_ptxas()
    };
    let built_archs: Vec<u32> = ptx.iter().map(|(a, _)| *a).collect();
    let jobs: Vec<(PathBuf, String)> = check::assembly_plan(&built_archs, &check_archs)
        .into_iter()
        .filter_map(|(from, target)| {
            let (_, path) = ptx.iter().find(|(a, _)| *a == from)?;
            Some((path.clone(), format!("sm_{target}")))
        })
        .collect();
    // ptxas takes long on a large module: reuse the last report when neither
    // the PTX nor the plan nor ptxas changed.
    let key_path = out_dir.join("ptxas_report.key");
    let key = report_key(ptxas.as_deref(), &jobs);
    let cached = std::fs::read_to_string(&key_path).is_ok_and(|k| k == key) && report_path.is_file();
    if cached {
        let report = std::fs::read_to_string(&report_path).unwrap_or_default();
        for line in report.lines().filter(|l| l.starts_with("ERROR ")) {
            println!("cargo::warning=ptxas: {line}");
        }
    } else {
        let assemblies: Vec<Assembly> = match &ptxas {
            Some(ptxas) => check::assemble_all(ptxas, &jobs),
            None => Vec::new(),
        };
        for a in &assemblies {
            if let Some(e) = &a.error {
                println!("cargo::warning=ptxas {}: {e}", a.arch);
            }
        }
        let version = ptxas.as_deref().and_then(check::ptxas_version);
        let mut report = check::format_report(
            ptxas.as_deref().map(|p| (p, version.as_deref())),
            &assemblies,
            &lint,
        );
        if check_archs.is_empty() {
            report.push_str(&format!("ptxas skipped ({CHECK_ARCHS_ENV}=none)\n"));
        }
        std::fs::write(&report_path, report)
            .map_err(|e| format!("gpu-mpi PTX build: writing {}: {e}", report_path.display()))?;
        let _ = std::fs::write(&key_path, key);
    }
    Ok(Some(Outputs { ptx, report_path }))
}

fn write_ptx_rs(out_dir: &Path, outputs: Option<&Outputs>) {
    let mut s = String::new();
    let _ = writeln!(s, "// Generated by gpu-mpi-ptx-builder (build.rs). Do not edit.");
    let _ = writeln!(
        s,
        "/// PTX of the kernels crate, one entry per SM architecture: `(\"sm_70\", ptx)`, \
         lowest first. Empty when built with `{SKIP_ENV}=1`."
    );
    let _ = writeln!(s, "pub const KERNELS_PTX: &[(&str, &str)] = &[");
    if let Some(o) = outputs {
        let mut ptx = o.ptx.clone();
        ptx.sort_by_key(|(a, _)| *a);
        for (arch, path) in &ptx {
            let _ = writeln!(
                s,
                "    (\"sm_{arch}\", include_str!({:?})),",
                path.to_string_lossy()
            );
        }
    }
    let _ = writeln!(s, "];");
    let _ = writeln!(
        s,
        "/// `ptxas -v` report (registers, stack, spills per kernel and SM) and PTX lint result."
    );
    match outputs {
        Some(o) => {
            let p = o.report_path.to_string_lossy();
            let _ = writeln!(s, "pub const PTXAS_REPORT: &str = include_str!({p:?});");
            let _ = writeln!(s, "/// Where [`PTXAS_REPORT`] was written at build time.");
            let _ = writeln!(s, "pub const PTXAS_REPORT_PATH: &str = {p:?};");
        }
        None => {
            let _ = writeln!(
                s,
                "pub const PTXAS_REPORT: &str = \"built without PTX ({SKIP_ENV}=1)\";"
            );
            let _ = writeln!(
                s,
                "/// Where [`PTXAS_REPORT`] was written at build time (nowhere)."
            );
            let _ = writeln!(s, "pub const PTXAS_REPORT_PATH: &str = \"\";");
        }
    }
    let path = out_dir.join("ptx.rs");
    if let Err(e) = std::fs::write(&path, s) {
        println!("cargo::error=gpu-mpi PTX build: writing {}: {e}", path.display());
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_target_dir_sits_next_to_the_profiles() {
        let out = Path::new("/w/target/debug/build/gpu-mpi-0123/out");
        assert_eq!(nested_target_dir(out), Path::new("/w/target/gpu-mpi-ptx"));
        let out = Path::new("/w/target/x86_64-unknown-linux-gnu/release/build/gpu-mpi-0123/out");
        assert_eq!(
            nested_target_dir(out),
            Path::new("/w/target/x86_64-unknown-linux-gnu/gpu-mpi-ptx")
        );
    }
}
