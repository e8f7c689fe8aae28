//! [`KernelBuilder`]: the whole kernel build of a user's `build.rs`, in one
//! call that never fails the build for want of a toolchain.

use crate::build_script::{archs_from_env, nested_target_dir, report_key, skip_requested};
use crate::check::{self, Assembly};
use crate::{
    run_as_linker_if_requested, Error, PtxBuilder, Toolchain, ARCHS_ENV, CHECK_ARCHS_ENV, DEFAULT_ARCHS,
    SKIP_ENV, TOOLCHAIN_ENV,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Set to `0` to forbid [`KernelBuilder::build`] to install the nightly
/// toolchain or its components with rustup.
pub const AUTO_INSTALL_ENV: &str = "GPU_MPI_AUTO_INSTALL";
/// `1`: assemble SASS even where [`KernelBuilder::sass_only_for_a_local_gpu`]
/// finds no GPU (a build to be carried to a GPU machine); `0`: never for such
/// crates.
pub const SASS_ENV: &str = "GPU_MPI_SASS";
/// The file [`KernelBuilder::build`] writes in `$OUT_DIR`: one Rust
/// expression, `(ptx, sass, ptxas_report, built_without)`.
pub const GENERATED_FILE: &str = "gpu_mpi_kernels.rs";
/// The SMs [`KernelBuilder`] assembles SASS for by default (sm_80 from the
/// sm_70 PTX).
pub const SASS_ARCHS_DEFAULT: &[u32] = crate::DEFAULT_CHECK_ARCHS;

/// Builds a kernel crate from a build script and writes
/// `$OUT_DIR/gpu_mpi_kernels.rs` for `gpu_mpi::include_kernels!()`.
///
/// ```no_run
/// // `main` of build.rs, in the crate that launches the kernels:
/// gpu_mpi_ptx_builder::KernelBuilder::new("kernels") // relative to CARGO_MANIFEST_DIR
///     .sms(&[70, 80, 90]) // SASS targets (the default)
///     .watch("../shared") // more paths whose changes rebuild the kernels
///     .build();
/// ```
///
/// [`build`](Self::build):
/// 1. acts as the nested build's linker when rustc runs the build script as
///    one ([`run_as_linker_if_requested`]), so `main` needs no other call;
/// 2. finds the nightly toolchain (`$GPU_MPI_PTX_TOOLCHAIN`, default
///    `nightly`) with `rust-src` and `llvm-tools`, installing what is missing
///    with rustup unless `GPU_MPI_AUTO_INSTALL=0`; when it cannot, the build
///    goes on *without GPU kernels* (one `cargo::warning` naming the command
///    to run);
/// 3. compiles the crate to PTX per SM (`$GPU_MPI_PTX_ARCHS`, else
///    [`ptx_archs`](Self::ptx_archs), default 70,90), passing
///    `-Zcrate-attr=feature(abi_ptx)` (and `-Aduplicate_features`, so a crate
///    that also enables the feature itself still builds): the kernel crate
///    needs no nightly attribute. A crate that fails to compile fails the
///    build;
/// 4. when ptxas is found, assembles the PTX into a cubin per SM of
///    [`sms`](Self::sms) (`$GPU_MPI_PTX_CHECK_ARCHS` wins; `none`: no
///    ptxas), each from the PTX of the highest SM not above it; the same
///    `ptxas -v` runs give the report (registers, stack, spills), and an
///    unchanged PTX reuses the last runs. A PTX text that any build of the
///    same target directory (another profile, `ptx-check`) assembled with
///    the same ptxas comes from the [`AssemblyCache`](crate::check::AssemblyCache)
///    in `<target>/gpu-mpi-ptx/sass-cache`, and at most
///    `$GPU_MPI_PTXAS_JOBS` ptxas processes run at once across those builds.
///    [`sass_only_for_a_local_gpu`](Self::sass_only_for_a_local_gpu) skips
///    this step on a machine without an NVIDIA driver;
/// 5. writes the expression file.
///
/// # Rebuilds
/// The build script reruns when the kernel crate's `src/`, `Cargo.toml` or
/// `build.rs` change, and so for every *path dependency* of it, followed
/// transitively (so editing a local `gpu-mpi-device` rebuilds the
/// kernels): they are read with `cargo metadata --no-deps` on each crate,
/// whose `dependencies[].path` cargo fills in for path dependencies, with
/// workspace inheritance resolved. The kernel workspace's `Cargo.lock`,
/// [`watch`](Self::watch) paths and the environment variables above are
/// watched too. While it builds without kernels, the script reruns at every
/// build, so installing the toolchain needs no other step.
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    crate_dir: PathBuf,
    ptx_archs: Vec<u32>,
    sms: Vec<u32>,
    watch: Vec<PathBuf>,
    image: Option<String>,
    sass_only_for_a_local_gpu: bool,
    resource_warnings: bool,
}

/// Why the build goes on without kernels: the reason, and the one warning
/// line (none for `GPU_MPI_SKIP_PTX=1`).
struct Without {
    reason: String,
    warn: bool,
}

/// What the expression file lists.
struct Built {
    ptx: Vec<(u32, PathBuf)>,
    sass: Vec<(u32, PathBuf)>,
    report: PathBuf,
}

impl KernelBuilder {
    /// The kernel crate in `crate_dir` (the directory of its `Cargo.toml`),
    /// relative to `$CARGO_MANIFEST_DIR` or absolute.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        KernelBuilder {
            crate_dir: crate_dir.into(),
            ptx_archs: DEFAULT_ARCHS.to_vec(),
            sms: SASS_ARCHS_DEFAULT.to_vec(),
            watch: Vec::new(),
            image: None,
            sass_only_for_a_local_gpu: false,
            resource_warnings: true,
        }
    }

    /// Whether to warn (one `cargo::warning` per kernel, from the ptxas
    /// report) about a kernel whose registers or stack frame will limit its
    /// world: above [`check::WARN_REGISTERS`] registers (fewer ranks per
    /// SM) or a stack frame above [`check::WARN_STACK_BYTES`] bytes (local
    /// memory traffic). On by default, for a user's kernel crate; a kernel
    /// that needs them is quieted in its crate's manifest:
    ///
    /// ```toml
    /// [package.metadata.gpu-mpi.resource-warnings]
    /// my_kernel = false
    /// ```
    ///
    /// The project's own test, benchmark and example crates turn them off
    /// here: their resources are tracked by `ptx-check`'s reports
    /// (docs/gpu.md) instead.
    pub fn resource_warnings(mut self, on: bool) -> Self {
        self.resource_warnings = on;
        self
    }

    /// Writes everything into `$OUT_DIR/<name>/` instead of `$OUT_DIR`,
    /// for a build script that builds more than one kernel crate (one
    /// `KernelBuilder` each, every one but one named): the program embeds
    /// this image with `gpu_mpi::include_kernels!("<name>")`. A crate whose
    /// kernels need other features of `gpu-mpi-device` than the rest (and
    /// so other registers) ships them this way. `name`: letters, digits,
    /// `_` and `-`.
    pub fn image(mut self, name: &str) -> Self {
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            fail(&format!(
                "KernelBuilder::image: {name:?} is not a plain directory name"
            ));
        }
        self.image = Some(name.to_string());
        self
    }

    /// The SMs to ship SASS (cubins) for; default 70, 80, 90. Empty: PTX only.
    pub fn sms(mut self, sms: &[u32]) -> Self {
        self.sms = sms.to_vec();
        self
    }

    /// SASS only where the binary can meet a GPU without leaving this
    /// machine: for crates whose binaries run where they are built (test
    /// suites, benchmarks). ptxas then runs only when this machine has an
    /// NVIDIA driver (`/proc/driver/nvidia/version`, or `/dev/dxg` under
    /// WSL) or [`SASS_ENV`]`=1`; elsewhere the image holds PTX alone (which
    /// the cuda backend JIT-compiles should it meet a GPU after all), and
    /// the build skips the minutes and gigabytes that ptxas takes on a large
    /// kernel crate. [`SASS_ENV`]`=0` skips ptxas for such crates everywhere.
    pub fn sass_only_for_a_local_gpu(mut self) -> Self {
        self.sass_only_for_a_local_gpu = true;
        self
    }

    /// Why this build assembles no SASS under
    /// [`sass_only_for_a_local_gpu`](Self::sass_only_for_a_local_gpu).
    fn sass_skipped(&self) -> Option<String> {
        if !self.sass_only_for_a_local_gpu {
            return None;
        }
        match std::env::var(SASS_ENV).as_deref().map(str::trim) {
            Ok("1") => None,
            Ok("0") => Some(format!("{SASS_ENV}=0")),
            _ if local_gpu_driver() => None,
            _ => Some(format!(
                "no NVIDIA driver on this machine and this crate's binaries run where they are built \
                 ({SASS_ENV}=1 assembles anyway)"
            )),
        }
    }

    /// The SMs to build PTX for; default 70, 90 (`$GPU_MPI_PTX_ARCHS` wins).
    pub fn ptx_archs(mut self, archs: &[u32]) -> Self {
        self.ptx_archs = archs.to_vec();
        self
    }

    /// One more path (relative to `$CARGO_MANIFEST_DIR` or absolute) whose
    /// changes rebuild the kernels.
    pub fn watch(mut self, path: impl Into<PathBuf>) -> Self {
        self.watch.push(path.into());
        self
    }

    /// Builds the kernels and writes `$OUT_DIR/gpu_mpi_kernels.rs`. Returns
    /// nothing: a missing toolchain gives an expression without kernels (and
    /// one warning); a kernel crate that does not compile, or an I/O failure,
    /// ends the build script with `cargo::error`.
    pub fn build(self) {
        run_as_linker_if_requested();
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_default();
        let out_dir = PathBuf::from(
            std::env::var_os("OUT_DIR")
                .unwrap_or_else(|| fail("KernelBuilder::build runs in a build script (OUT_DIR is not set)")),
        );
        let out_dir = match &self.image {
            Some(name) => out_dir.join(name),
            None => out_dir,
        };
        if let Err(e) = std::fs::create_dir_all(&out_dir) {
            fail(&format!(
                "gpu-mpi kernel build: creating {}: {e}",
                out_dir.display()
            ));
        }
        let crate_dir = manifest_dir.join(&self.crate_dir);
        for var in [
            SKIP_ENV,
            ARCHS_ENV,
            CHECK_ARCHS_ENV,
            TOOLCHAIN_ENV,
            AUTO_INSTALL_ENV,
            SASS_ENV,
            check::PTXAS_JOBS_ENV,
            "GPU_MPI_PTX_TARGET_DIR",
            "RUSTUP",
            "PTXAS",
            "CUDA_HOME",
            "CUDA_PATH",
            "CUDA_ROOT",
        ] {
            println!("cargo::rerun-if-env-changed={var}");
        }
        for p in watched_paths(&crate_dir) {
            println!("cargo::rerun-if-changed={}", p.display());
        }
        for p in &self.watch {
            println!("cargo::rerun-if-changed={}", manifest_dir.join(p).display());
        }
        let text = match self.run(&crate_dir, &out_dir) {
            Ok(built) => expression(Ok(&built)),
            Err(without) => {
                if without.warn {
                    println!(
                        "cargo::warning=gpu-mpi: building without GPU kernels (the cuda backend will \
                         have none): {}",
                        without.reason
                    );
                    // A path that never exists: the script reruns at every
                    // build until the kernels build.
                    println!(
                        "cargo::rerun-if-changed={}",
                        out_dir.join("gpu-mpi-kernels-pending").display()
                    );
                }
                expression(Err(&without.reason))
            }
        };
        let path = out_dir.join(GENERATED_FILE);
        if let Err(e) = std::fs::write(&path, text) {
            fail(&format!("gpu-mpi kernel build: writing {}: {e}", path.display()));
        }
    }

    fn run(&self, crate_dir: &Path, out_dir: &Path) -> Result<Built, Without> {
        if skip_requested() {
            return Err(Without {
                reason: format!("{SKIP_ENV}=1"),
                warn: false,
            });
        }
        let ptx_archs = archs_from_env(ARCHS_ENV, &self.ptx_archs).unwrap_or_else(|e| fail(&e));
        let sms = archs_from_env(CHECK_ARCHS_ENV, &self.sms).unwrap_or_else(|e| fail(&e));
        let toolchain = std::env::var(TOOLCHAIN_ENV).unwrap_or_else(|_| "nightly".into());
        ensure_toolchain(&toolchain)?;
        let built = PtxBuilder::new(crate_dir)
            .archs(&ptx_archs)
            .toolchain(&toolchain)
            .target_dir(nested_target_dir(out_dir))
            .rustc_args(crate::KERNEL_CRATE_RUSTC_ARGS)
            .build();
        let built = match built {
            Ok(b) => b,
            Err(Error::Missing { what, install }) => {
                return Err(Without {
                    reason: format!("{what} is missing; run `{install}`"),
                    warn: true,
                })
            }
            Err(e @ Error::Build { .. }) => {
                // The nested cargo's diagnostics are in stderr, which cargo
                // shows for a script that exits with a failure.
                println!("cargo::error={e}");
                std::process::exit(1)
            }
            Err(e) => fail(&e.to_string()),
        };

        let mut ptx = Vec::new();
        let mut lint = Vec::new();
        for b in &built {
            let dest = out_dir.join(format!("kernels_sm{}.ptx", b.arch));
            copy_if_changed(&b.path, &dest);
            let text = std::fs::read_to_string(&dest)
                .unwrap_or_else(|e| fail(&format!("gpu-mpi kernel build: reading {}: {e}", dest.display())));
            let violations = check::lint(&text);
            for v in violations.iter().take(10) {
                println!("cargo::warning=PTX lint sm_{}: {v}", b.arch);
            }
            lint.push((dest.clone(), violations));
            ptx.push((b.arch, dest));
        }

        let sass_off = self.sass_skipped();
        let sms = if sass_off.is_some() { Vec::new() } else { sms };
        let ptxas = if sms.is_empty() { None } else { check::find_ptxas() };
        let cache = check::AssemblyCache::new(nested_target_dir(out_dir).join("sass-cache"));
        let built_archs: Vec<u32> = ptx.iter().map(|(a, _)| *a).collect();
        let jobs: Vec<(u32, PathBuf, String)> = check::assembly_plan(&built_archs, &sms)
            .into_iter()
            .filter_map(|(from, target)| {
                let (_, path) = ptx.iter().find(|(a, _)| *a == from)?;
                Some((target, path.clone(), format!("sm_{target}")))
            })
            .collect();
        let key_jobs: Vec<(PathBuf, String)> = jobs.iter().map(|(_, p, a)| (p.clone(), a.clone())).collect();
        let report = out_dir.join("ptxas_report.txt");
        let key_path = out_dir.join("ptxas_report.key");
        let key = report_key(ptxas.as_deref(), &key_jobs) + sass_off.as_deref().unwrap_or("");
        let cached = std::fs::read_to_string(&key_path).is_ok_and(|k| k == key) && report.is_file();
        let mut sass = Vec::new();
        if cached {
            let text = std::fs::read_to_string(&report).unwrap_or_default();
            for line in text.lines().filter(|l| l.starts_with("ERROR ")) {
                println!("cargo::warning=ptxas: {line}");
            }
            if ptxas.is_some() {
                for (sm, path, arch) in &jobs {
                    let cubin = check::cubin_path(path, arch);
                    if cubin.is_file() {
                        sass.push((*sm, cubin));
                    }
                }
            }
        } else {
            // No stale cubin of an earlier PTX may be shipped if ptxas fails now.
            for (_, path, arch) in &jobs {
                let _ = std::fs::remove_file(check::cubin_path(path, arch));
            }
            let assemblies: Vec<Assembly> = match &ptxas {
                Some(p) => check::assemble_all(p, &key_jobs, check::Optimization::Full, Some(&cache)),
                None => Vec::new(),
            };
            for (a, (sm, _, _)) in assemblies.iter().zip(&jobs) {
                match &a.error {
                    Some(e) => println!("cargo::warning=ptxas {}: {e}", a.arch),
                    None if a.cubin.is_file() => sass.push((*sm, a.cubin.clone())),
                    None => {}
                }
            }
            let resources: String = assemblies
                .iter()
                .flat_map(|a| &a.kernels)
                .map(|k| format!("{} {} {} {}\n", k.name, k.arch, k.registers, k.stack_frame))
                .collect();
            let _ = std::fs::write(out_dir.join(RESOURCES_FILE), resources);
            let version = ptxas.as_deref().and_then(check::ptxas_version);
            let mut text = check::format_report(
                ptxas.as_deref().map(|p| (p, version.as_deref())),
                &assemblies,
                &lint,
            );
            match sass_off {
                Some(why) => {
                    let _ = writeln!(text, "ptxas skipped: {why}");
                }
                None if sms.is_empty() => {
                    let _ = writeln!(text, "ptxas skipped (no SASS targets, or {CHECK_ARCHS_ENV}=none)");
                }
                None => {}
            }
            std::fs::write(&report, text).unwrap_or_else(|e| {
                fail(&format!(
                    "gpu-mpi kernel build: writing {}: {e}",
                    report.display()
                ))
            });
            let _ = std::fs::write(&key_path, key);
        }
        if self.resource_warnings {
            self.warn_resources(crate_dir, out_dir);
        }
        Ok(Built { ptx, sass, report })
    }

    /// Prints [`check::resource_warnings`] for the kernels of the last
    /// ptxas runs (kept in `RESOURCES_FILE`, so a build that reuses them
    /// warns alike).
    fn warn_resources(&self, crate_dir: &Path, out_dir: &Path) {
        let text = std::fs::read_to_string(out_dir.join(RESOURCES_FILE)).unwrap_or_default();
        let kernels: Vec<check::KernelResources> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some(check::KernelResources {
                    name: it.next()?.to_string(),
                    arch: it.next()?.to_string(),
                    registers: it.next()?.parse().ok()?,
                    stack_frame: it.next()?.parse().ok()?,
                    ..Default::default()
                })
            })
            .collect();
        let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap_or_default();
        for line in check::resource_warnings(&kernels, &check::quiet_kernels(&manifest)) {
            println!("cargo::warning=gpu-mpi: {line}");
        }
    }
}

/// The file in `$OUT_DIR` that keeps the kernels' registers and stack
/// frames of the last ptxas runs (`name arch registers stack` lines).
const RESOURCES_FILE: &str = "ptxas_resources.txt";

/// Whether this machine has an NVIDIA driver a binary could launch on.
fn local_gpu_driver() -> bool {
    Path::new("/proc/driver/nvidia/version").exists() || Path::new("/dev/dxg").exists()
}

/// Ends the build script with one error line.
fn fail(line: &str) -> ! {
    println!("cargo::error={line}");
    std::process::exit(1)
}

/// Copies `from` to `to` unless `to` already holds the same bytes (an
/// unchanged PTX keeps its file time).
fn copy_if_changed(from: &Path, to: &Path) {
    let new = std::fs::read(from)
        .unwrap_or_else(|e| fail(&format!("gpu-mpi kernel build: reading {}: {e}", from.display())));
    if std::fs::read(to).is_ok_and(|old| old == new) {
        return;
    }
    std::fs::write(to, new)
        .unwrap_or_else(|e| fail(&format!("gpu-mpi kernel build: writing {}: {e}", to.display())));
}

fn auto_install_allowed() -> bool {
    std::env::var(AUTO_INSTALL_ENV).map_or(true, |v| v.trim() != "0")
}

/// Finds toolchain `name`, installing what it lacks when allowed; the
/// reason to build without kernels otherwise.
fn ensure_toolchain(name: &str) -> Result<Toolchain, Without> {
    let gap = match Toolchain::probe(name) {
        Ok(t) => return Ok(t),
        Err(gap) => gap,
    };
    let what = gap.what(name);
    let hint = gap.install_hint(name);
    let without = |why: String| Without {
        reason: format!("{why}; run `{hint}` (or set {SKIP_ENV}=1 to build without them quietly)"),
        warn: true,
    };
    let Some(install) = gap.rustup_install(name) else {
        return Err(without(format!("{what} is missing")));
    };
    if !auto_install_allowed() {
        return Err(without(format!(
            "{what} is missing and installing it is off ({AUTO_INSTALL_ENV}=0)"
        )));
    }
    println!(
        "cargo::warning=gpu-mpi: installing {what} for the GPU kernels: `{install}` \
         ({AUTO_INSTALL_ENV}=0 forbids this)"
    );
    let mut cmd = crate::rustup();
    cmd.args(install.split_whitespace().skip(1)).stdin(Stdio::null());
    match cmd.output() {
        Err(e) => {
            return Err(without(format!(
                "{what} is missing and `{install}` could not run ({e})"
            )))
        }
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            return Err(without(format!(
                "{what} is missing and `{install}` failed ({}: {last})",
                out.status
            )));
        }
        Ok(_) => {}
    }
    Toolchain::probe(name).map_err(|gap| {
        without(format!(
            "`{install}` succeeded but {} is still missing",
            gap.what(name)
        ))
    })
}

/// The kernel crate's and its path dependencies' sources and manifests, and
/// the lock file of its workspace (see [`KernelBuilder`], "Rebuilds").
fn watched_paths(crate_dir: &Path) -> Vec<PathBuf> {
    let mut crates: Vec<PathBuf> = vec![crate_dir.to_path_buf()];
    let mut locks: Vec<PathBuf> = Vec::new();
    let mut i = 0;
    // The bound stops a pathological graph.
    while i < crates.len() && i < 64 {
        let dir = crates[i].clone();
        i += 1;
        let Some(meta) = metadata(&dir) else { continue };
        let lock = meta.workspace_root.join("Cargo.lock");
        if !locks.contains(&lock) {
            locks.push(lock);
        }
        for p in meta.path_deps {
            if !crates.contains(&p) {
                crates.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for dir in &crates {
        out.push(dir.join("src"));
        out.push(dir.join("Cargo.toml"));
        let build_rs = dir.join("build.rs");
        if build_rs.is_file() {
            out.push(build_rs);
        }
    }
    out.extend(locks.into_iter().filter(|l| l.is_file()));
    out
}

/// What `cargo metadata --no-deps` says of one crate.
#[derive(Debug, PartialEq)]
struct Metadata {
    workspace_root: PathBuf,
    /// Directories of its path dependencies (normal and build, not dev).
    path_deps: Vec<PathBuf>,
}

/// Runs `cargo metadata --format-version 1 --no-deps` for the crate in `dir`.
fn metadata(dir: &Path) -> Option<Metadata> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--manifest-path",
        ])
        .arg(dir.join("Cargo.toml"))
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_metadata(&String::from_utf8_lossy(&out.stdout), &dir.join("Cargo.toml"))
}

/// The package of `manifest` in `cargo metadata`'s JSON: its path
/// dependencies (cargo fills in `path` for those, workspace inheritance
/// resolved).
fn parse_metadata(json: &str, manifest: &Path) -> Option<Metadata> {
    let root = json::parse(json)?;
    let package = root.get("packages")?.array()?.iter().find(|p| {
        p.get("manifest_path")
            .and_then(json::Value::str)
            .is_some_and(|m| Path::new(m) == manifest)
    })?;
    let path_deps = package
        .get("dependencies")?
        .array()?
        .iter()
        .filter(|d| d.get("kind").and_then(json::Value::str) != Some("dev"))
        .filter_map(|d| d.get("path")?.str().map(PathBuf::from))
        .collect();
    Some(Metadata {
        workspace_root: PathBuf::from(root.get("workspace_root")?.str()?),
        path_deps,
    })
}

/// Just enough JSON for `cargo metadata`.
mod json {
    /// A JSON value; numbers are kept as their text.
    #[derive(Debug)]
    pub(super) enum Value {
        Null,
        Bool,
        Number,
        Str(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    impl Value {
        pub(super) fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }

        pub(super) fn array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(v) => Some(v),
                _ => None,
            }
        }

        pub(super) fn str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
    }

    /// Parses one JSON document; `None` when it is not JSON.
    pub(super) fn parse(text: &str) -> Option<Value> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
        }

        fn eat(&mut self, c: u8) -> Option<()> {
            self.ws();
            (self.s.get(self.i) == Some(&c)).then(|| self.i += 1)
        }

        fn literal(&mut self, word: &str, v: Value) -> Option<Value> {
            self.s[self.i..].starts_with(word.as_bytes()).then(|| {
                self.i += word.len();
                v
            })
        }

        fn value(&mut self) -> Option<Value> {
            self.ws();
            match *self.s.get(self.i)? {
                b'{' => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    if self.eat(b'}').is_some() {
                        return Some(Value::Object(fields));
                    }
                    loop {
                        self.ws();
                        let k = self.string()?;
                        self.eat(b':')?;
                        fields.push((k, self.value()?));
                        if self.eat(b'}').is_some() {
                            return Some(Value::Object(fields));
                        }
                        self.eat(b',')?;
                    }
                }
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    if self.eat(b']').is_some() {
                        return Some(Value::Array(items));
                    }
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']').is_some() {
                            return Some(Value::Array(items));
                        }
                        self.eat(b',')?;
                    }
                }
                b'"' => self.string().map(Value::Str),
                b't' => self.literal("true", Value::Bool),
                b'f' => self.literal("false", Value::Bool),
                b'n' => self.literal("null", Value::Null),
                _ => {
                    let start = self.i;
                    while self
                        .s
                        .get(self.i)
                        .is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(c))
                    {
                        self.i += 1;
                    }
                    (self.i > start).then_some(Value::Number)
                }
            }
        }

        fn string(&mut self) -> Option<String> {
            if self.s.get(self.i) != Some(&b'"') {
                return None;
            }
            self.i += 1;
            let mut out: Vec<u8> = Vec::new();
            loop {
                let c = *self.s.get(self.i)?;
                self.i += 1;
                match c {
                    b'"' => return String::from_utf8(out).ok(),
                    b'\\' => {
                        let e = *self.s.get(self.i)?;
                        self.i += 1;
                        let ch = match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'r' => '\r',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'u' => {
                                let hex = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
                                self.i += 4;
                                // Paths with characters beyond the BMP are not worth surrogate pairs here.
                                char::from_u32(u32::from_str_radix(hex, 16).ok()?).unwrap_or('\u{fffd}')
                            }
                            other => other as char,
                        };
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    _ => out.push(c),
                }
            }
        }
    }
}

/// The expression file: `(ptx, sass, ptxas_report, built_without)`.
fn expression(built: Result<&Built, &str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by gpu-mpi-ptx-builder's KernelBuilder. Do not edit.\n\
         // (ptx: &[(sm, text)], sass: &[(sm, cubin)], ptxas_report, built_without)"
    );
    match built {
        Ok(b) => {
            let mut ptx = b.ptx.clone();
            ptx.sort_by_key(|(a, _)| *a);
            let mut sass = b.sass.clone();
            sass.sort_by_key(|(a, _)| *a);
            s.push_str("(\n    &[\n");
            for (arch, path) in &ptx {
                let _ = writeln!(
                    s,
                    "        (\"sm_{arch}\", include_str!({:?})),",
                    path.to_string_lossy()
                );
            }
            s.push_str("    ],\n    &[\n");
            for (arch, path) in &sass {
                let _ = writeln!(
                    s,
                    "        (\"sm_{arch}\", include_bytes!({:?}) as &[u8]),",
                    path.to_string_lossy()
                );
            }
            let _ = writeln!(
                s,
                "    ],\n    include_str!({:?}),\n    None,\n)",
                b.report.to_string_lossy()
            );
        }
        Err(why) => {
            let _ = writeln!(
                s,
                "(\n    &[],\n    &[],\n    {:?},\n    Some({why:?}),\n)",
                format!("built without GPU kernels: {why}")
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_path_dependencies_from_metadata() {
        let json = r#"{"packages":[
            {"name":"app","dependencies":[{"name":"gpu-mpi-ptx-builder","kind":"build","path":"/w/ptx-builder"}],
             "manifest_path":"/w/Cargo.toml"},
            {"name":"k","version":"0.1.0","dependencies":[
                {"name":"gpu-mpi-device","source":null,"req":"*","kind":null,"optional":false,"path":"/w/dev\u00edce"},
                {"name":"bytemuck","source":"registry+https://github.com/rust-lang/crates.io-index","kind":null},
                {"name":"helper","kind":"build","path":"/w/helper"},
                {"name":"proptest","kind":"dev","path":"/w/proptest"}],
             "targets":[{"src_path":"/w/k/src/lib.rs","edition":"2021","doctest":true}],"manifest_path":"/w/k/Cargo.toml"}],
            "workspace_root":"/w","target_directory":"/w/target","version":1,"metadata":null}"#;
        let m = parse_metadata(json, Path::new("/w/k/Cargo.toml")).unwrap();
        assert_eq!(
            m,
            Metadata {
                workspace_root: "/w".into(),
                path_deps: vec!["/w/dev\u{ed}ce".into(), "/w/helper".into()],
            }
        );
        assert!(parse_metadata(json, Path::new("/elsewhere/Cargo.toml")).is_none());
        assert!(json::parse("{\"a\": [1, 2.5e3, true, null]} x").is_none());
    }

    #[test]
    fn the_expression_has_no_type_paths() {
        let b = Built {
            ptx: vec![(90, "/o/k_sm90.ptx".into()), (70, "/o/k_sm70.ptx".into())],
            sass: vec![(80, "/o/k_sm70.sm_80.cubin".into())],
            report: "/o/r.txt".into(),
        };
        let e = expression(Ok(&b));
        let body: String = e.lines().filter(|l| !l.starts_with("//")).collect();
        let body: String = body.split_whitespace().collect();
        assert_eq!(
            body,
            r#"(&[("sm_70",include_str!("/o/k_sm70.ptx")),("sm_90",include_str!("/o/k_sm90.ptx")),],&[("sm_80",include_bytes!("/o/k_sm70.sm_80.cubin")as&[u8]),],include_str!("/o/r.txt"),None,)"#
        );
        let e = expression(Err("GPU_MPI_SKIP_PTX=1"));
        assert!(e.contains("Some(\"GPU_MPI_SKIP_PTX=1\")"), "{e}");
        assert!(!e.contains("::"), "{e}");
    }
}
