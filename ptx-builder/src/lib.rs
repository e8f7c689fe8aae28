//! Builds a `no_std` kernel crate to PTX with rustc's own `nvptx64-nvidia-cuda`
//! target, for use from a build script (in the spirit of `cuda_builder`, without
//! Rust-CUDA).
//!
//! For each SM architecture (`sm_70`, `sm_90` by default) it runs a nested
//! `cargo +nightly rustc --crate-type cdylib --target nvptx64-nvidia-cuda
//! -Zbuild-std=core` with `-C target-cpu=sm_XX` in `RUSTFLAGS` (so `core` is
//! built for the same CPU) and `-C linker=<our link step>`. The link step
//! replaces the `llvm-bitcode-linker` rustup component: it is the *calling
//! executable itself* (a build script or the `ptx-check` binary), which must
//! call [`run_as_linker_if_requested`] first thing in `main`. It links the
//! bitcode with `llvm-link`, internalizes all but the kernels and optimizes
//! with `opt`, and emits PTX with `llc` (see `link.rs`); those tools come from
//! the toolchain's `llvm-tools` component.
//!
//! A program's build script needs one call ([`KernelBuilder`], also
//! `gpu_mpi::builder::KernelBuilder`); the host then embeds the result with
//! `gpu_mpi::include_kernels!()`:
//!
//! ```no_run
//! // build.rs: the whole of its `fn main()`
//! gpu_mpi_ptx_builder::KernelBuilder::new("kernels").build();
//! ```
//!
//! [`PtxBuilder`] is the lower layer (one nested build per SM), for tools
//! such as `ptx-check`:
//!
//! ```no_run
//! // First, in case rustc runs this executable as the linker,
//! gpu_mpi_ptx_builder::run_as_linker_if_requested();
//! // then the build (the PTX files land in the nested target directory).
//! let ptx = gpu_mpi_ptx_builder::PtxBuilder::new("kernels").archs(&[70, 90]).build();
//! ```
//!
//! [`check`] holds the PTX lint and the `ptxas` runs; [`KernelBuilder`] the
//! whole flow of a build script that embeds kernels (PTX and SASS).

mod ar;
mod build_script;
pub mod calls;
pub mod check;
mod kernel_builder;
mod link;

pub use kernel_builder::{KernelBuilder, AUTO_INSTALL_ENV, GENERATED_FILE, SASS_ARCHS_DEFAULT, SASS_ENV};
pub use link::{DESCRIPTORS_BYTES, DESCRIPTORS_SYMBOL};

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The rustc target.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// Set (to the LLVM tools directory) in the environment of the nested cargo:
/// tells the executable it is running as the linker.
pub const LINKER_ENV: &str = "GPU_MPI_PTX_LINKER_LLVM_BIN";
/// Set to `1` to skip the PTX build (no nightly needed; no GPU kernels).
pub const SKIP_ENV: &str = "GPU_MPI_SKIP_PTX";
/// Comma-separated SM numbers to build PTX for (default `70,90`).
pub const ARCHS_ENV: &str = "GPU_MPI_PTX_ARCHS";
/// Comma-separated SM numbers to assemble with ptxas (default `70,80,90`;
/// `none` skips ptxas in the build script).
pub const CHECK_ARCHS_ENV: &str = "GPU_MPI_PTX_CHECK_ARCHS";
/// The rustup toolchain of the nested build (default `nightly`).
pub const TOOLCHAIN_ENV: &str = "GPU_MPI_PTX_TOOLCHAIN";
/// Extra rustc arguments for the kernel crate itself: `kernel!` needs the
/// nightly feature `abi_ptx`, enabled here so that a kernel crate need not
/// name it; `-Aduplicate_features` keeps a crate that names it too building.
/// (A kernel crate that is a *dependency* of the one built does not get
/// them and must carry `#![cfg_attr(target_os = "cuda", feature(abi_ptx))]`.)
pub const KERNEL_CRATE_RUSTC_ARGS: &[&str] = &["-Zcrate-attr=feature(abi_ptx)", "-Aduplicate_features"];
/// PTX is built for these SMs by default: sm_70 (Volta and later, the
/// portable one) and sm_90 (Hopper).
pub const DEFAULT_ARCHS: &[u32] = &[70, 90];
/// ptxas assembles for these SMs by default (sm_80 from the sm_70 PTX).
pub const DEFAULT_CHECK_ARCHS: &[u32] = &[70, 80, 90];

/// If this process was started by rustc as the nvptx64 linker (the nested
/// build sets [`LINKER_ENV`]), performs the link and exits; otherwise returns.
/// Call it first thing in `main` of every executable passed as the linker.
pub fn run_as_linker_if_requested() {
    let Some(llvm_bin) = std::env::var_os(LINKER_ENV) else {
        return;
    };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match link::link(Path::new(&llvm_bin), args) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("gpu-mpi PTX link step: {e}");
            std::process::exit(1)
        }
    }
}

/// Why a PTX build failed.
#[derive(Debug)]
pub enum Error {
    /// A toolchain component is missing; `install` is the command that adds it.
    Missing {
        /// What is missing.
        what: String,
        /// The command that installs it.
        install: String,
    },
    /// The nested cargo build failed (its diagnostics went to stderr).
    Build {
        /// `sm_XX`.
        arch: String,
        /// Exit status.
        status: String,
    },
    /// There is no kernel crate (no `Cargo.toml`) where one was named.
    NoKernelCrate {
        /// The manifest looked for.
        manifest: PathBuf,
    },
    /// The nested cargo could not be started.
    Spawn {
        /// The toolchain it was run with.
        toolchain: String,
        /// Why.
        source: std::io::Error,
    },
    /// The nested build succeeded but named no `.ptx` file.
    NoPtxArtifact {
        /// `sm_XX`.
        arch: String,
    },
    /// A register budget (the kernel crate's
    /// `[package.metadata.gpu-mpi.max-registers]` table, or
    /// [`PtxBuilder::max_registers`]) that is not a whole number in 16..=255.
    BadRegisterBudget {
        /// The manifest.
        manifest: PathBuf,
        /// The kernel.
        kernel: String,
        /// The value given.
        value: String,
    },
    /// A file operation of the builder failed.
    Io {
        /// What it was doing, e.g. "copying /path".
        what: String,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Missing { what, install } => write!(
                f,
                "gpu-mpi PTX build: {what} is missing; install it with `{install}` \
                 (or set {SKIP_ENV}=1 to build without GPU kernels)"
            ),
            Error::Build { arch, status } => write!(
                f,
                "gpu-mpi PTX build: compiling the kernels for nvptx64 {arch} failed ({status}); \
                 the nested cargo's diagnostics follow in the build script's stderr \
                 (or set {SKIP_ENV}=1 to build without GPU kernels)"
            ),
            Error::NoKernelCrate { manifest } => {
                write!(f, "gpu-mpi PTX build: no kernel crate at {}", manifest.display())
            }
            Error::Spawn { toolchain, source } => {
                write!(
                    f,
                    "gpu-mpi PTX build: running `rustup run {toolchain} cargo`: {source}"
                )
            }
            Error::NoPtxArtifact { arch } => {
                write!(
                    f,
                    "gpu-mpi PTX build: the nested build for {arch} reported no .ptx artifact"
                )
            }
            Error::BadRegisterBudget {
                manifest,
                kernel,
                value,
            } => write!(
                f,
                "gpu-mpi PTX build: {}: register budget {kernel} = {value} \
                 is not a whole number in {MIN_REGISTER_BUDGET}..={MAX_REGISTER_BUDGET}",
                manifest.display()
            ),
            Error::Io { what, source } => write!(f, "gpu-mpi PTX build: {what}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The nightly toolchain the kernels are built with.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// rustup name (`nightly`, `nightly-2026-05-19`).
    pub name: String,
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// Host triple.
    pub host: String,
    /// Directory of `llvm-link`, `opt`, `llc` (the `llvm-tools` component).
    pub llvm_bin: PathBuf,
}

/// Removes from `cmd`'s environment what the outer cargo (or a rustup proxy)
/// set for itself: `CARGO_*` (but `CARGO_HOME` and `CARGO_NET_OFFLINE`),
/// `RUSTC*`, `RUSTFLAGS`, `RUSTDOC*`, `RUSTUP_TOOLCHAIN`, build-script
/// variables and the jobserver.
pub fn clear_cargo_env(cmd: &mut Command) {
    const BUILD_SCRIPT_VARS: &[&str] = &[
        "CARGO",
        "TARGET",
        "HOST",
        "OUT_DIR",
        "OPT_LEVEL",
        "PROFILE",
        "DEBUG",
        "NUM_JOBS",
        "MAKEFLAGS",
        "MFLAGS",
        "RUSTFLAGS",
        "RUSTUP_TOOLCHAIN",
        LINKER_ENV,
    ];
    for (key, _) in std::env::vars_os() {
        let Some(k) = key.to_str() else { continue };
        let clear = BUILD_SCRIPT_VARS.contains(&k)
            || (k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_NET_OFFLINE")
            || k.starts_with("__CARGO")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || k.starts_with("DEP_");
        if clear {
            cmd.env_remove(&key);
        }
    }
}

pub(crate) fn rustup() -> Command {
    let mut c = Command::new(std::env::var_os("RUSTUP").unwrap_or_else(|| "rustup".into()));
    clear_cargo_env(&mut c);
    // Never let a probe install a toolchain behind the user's back.
    c.env("RUSTUP_AUTO_INSTALL", "0");
    c
}

/// What keeps a rustup toolchain from building kernels ([`Toolchain::probe`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolchainGap {
    /// `rustup` is not found.
    NoRustup,
    /// The toolchain is not installed.
    NotInstalled,
    /// The toolchain is installed but is no nightly; its `release:` line.
    NotNightly(String),
    /// These components of the toolchain are missing (`rust-src`, `llvm-tools`).
    Components(Vec<&'static str>),
    /// The toolchain runs but `rustc --print sysroot` failed; why.
    NoSysroot(String),
}

impl ToolchainGap {
    /// What is missing, in words, for toolchain `name`.
    pub fn what(&self, name: &str) -> String {
        match self {
            ToolchainGap::NoRustup => "rustup (needed to run the nightly toolchain)".into(),
            ToolchainGap::NotInstalled => format!("the Rust `{name}` toolchain"),
            ToolchainGap::NotNightly(release) => {
                format!("a nightly toolchain (`{name}` is rustc {release}; {TOOLCHAIN_ENV} picks another)")
            }
            ToolchainGap::Components(c) => format!(
                "the {} component{} of the `{name}` toolchain",
                c.iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(" and "),
                if c.len() > 1 { "s" } else { "" }
            ),
            ToolchainGap::NoSysroot(why) => {
                format!("a working `{name}` toolchain (`rustc --print sysroot` failed: {why})")
            }
        }
    }

    /// The rustup command that fills the gap, when rustup can: installing
    /// the toolchain, or adding the components. `None` for no rustup, a
    /// toolchain that is no nightly, or a broken one.
    pub fn rustup_install(&self, name: &str) -> Option<String> {
        match self {
            ToolchainGap::NotInstalled => Some(format!(
                "rustup toolchain install {name} --profile minimal --component rust-src,llvm-tools"
            )),
            ToolchainGap::Components(c) => {
                Some(format!("rustup component add {} --toolchain {name}", c.join(" ")))
            }
            ToolchainGap::NoRustup | ToolchainGap::NotNightly(_) | ToolchainGap::NoSysroot(_) => None,
        }
    }

    /// The command a person runs to fill the gap (for messages).
    pub fn install_hint(&self, name: &str) -> String {
        match self {
            ToolchainGap::NoRustup => format!(
                "curl --proto '=https' -sSf https://sh.rustup.rs | sh, then rustup toolchain install {name} \
                 --profile minimal --component rust-src,llvm-tools"
            ),
            ToolchainGap::NotNightly(_) => {
                "rustup toolchain install nightly --profile minimal --component rust-src,llvm-tools".into()
            }
            ToolchainGap::NoSysroot(_) => format!(
                "rustup toolchain install {name} --profile minimal --component rust-src,llvm-tools --force"
            ),
            gap => gap.rustup_install(name).unwrap_or_default(),
        }
    }
}

impl Toolchain {
    /// Finds the rustup toolchain `name` and checks that it is a nightly with
    /// `rust-src` and `llvm-tools`.
    pub fn locate(name: &str) -> Result<Toolchain, Error> {
        Toolchain::probe(name).map_err(|gap| Error::Missing {
            what: gap.what(name),
            install: gap.install_hint(name),
        })
    }

    /// Like [`locate`](Self::locate), saying what is missing as a
    /// [`ToolchainGap`] (what [`KernelBuilder`] installs).
    pub fn probe(name: &str) -> Result<Toolchain, ToolchainGap> {
        let vv = rustup()
            .args(["run", name, "rustc", "-vV"])
            .stderr(Stdio::null())
            .output();
        let vv = match vv {
            Err(_) => return Err(ToolchainGap::NoRustup),
            Ok(o) if !o.status.success() => return Err(ToolchainGap::NotInstalled),
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        };
        let field = |key: &str| {
            vv.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let release = field("release:");
        if !(release.contains("nightly") || release.contains("dev")) {
            return Err(ToolchainGap::NotNightly(release));
        }
        let host = field("host:");
        let out = rustup()
            .args(["run", name, "rustc", "--print", "sysroot"])
            .output()
            .map_err(|e| ToolchainGap::NoSysroot(e.to_string()))?;
        if !out.status.success() {
            return Err(ToolchainGap::NoSysroot(out.status.to_string()));
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let llvm_bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        let exe = std::env::consts::EXE_SUFFIX;
        let mut missing = Vec::new();
        if !sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .is_file()
        {
            missing.push("rust-src");
        }
        if ["llvm-link", "opt", "llc"]
            .iter()
            .any(|t| !llvm_bin.join(format!("{t}{exe}")).is_file())
        {
            missing.push("llvm-tools");
        }
        if !missing.is_empty() {
            return Err(ToolchainGap::Components(missing));
        }
        Ok(Toolchain {
            name: name.to_string(),
            sysroot,
            host,
            llvm_bin,
        })
    }
}

/// One built PTX file.
#[derive(Clone, Debug)]
pub struct BuiltPtx {
    /// SM number (70 for `sm_70`).
    pub arch: u32,
    /// The PTX file (inside the nested target directory).
    pub path: PathBuf,
}

/// Builds a kernel crate to PTX for a list of SM architectures.
#[derive(Clone, Debug)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    archs: Vec<u32>,
    toolchain: String,
    target_dir: Option<PathBuf>,
    linker: Option<PathBuf>,
    rustc_args: Vec<String>,
    max_registers: Vec<(String, u32)>,
}

/// The smallest register budget a kernel crate may declare.
pub const MIN_REGISTER_BUDGET: u32 = 16;
/// The largest (the hardware's limit per thread).
pub const MAX_REGISTER_BUDGET: u32 = 255;

impl PtxBuilder {
    /// A builder for the crate in `crate_dir` (the directory of its
    /// Cargo.toml; a workspace member or a standalone crate). It must be
    /// `no_std` and provide (directly or through a dependency) a panic handler.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        PtxBuilder {
            crate_dir: crate_dir.into(),
            archs: DEFAULT_ARCHS.to_vec(),
            toolchain: std::env::var(TOOLCHAIN_ENV).unwrap_or_else(|_| "nightly".into()),
            target_dir: None,
            linker: None,
            rustc_args: Vec::new(),
            max_registers: Vec::new(),
        }
    }

    /// A register budget for the kernel `kernel`: a `.maxnreg` directive on
    /// its entry, which ptxas and the driver's JIT obey; registers beyond it
    /// spill to local memory, which the ptxas report shows as stack. Added
    /// to those the crate declares in its manifest, one line per kernel:
    ///
    /// ```toml
    /// [package.metadata.gpu-mpi.max-registers]
    /// bench_reduce = 128
    /// ```
    ///
    /// Only for kernels over the budget: ptxas takes a budget as room to
    /// use, so a small kernel given one may get more registers, not fewer.
    pub fn max_registers(mut self, kernel: &str, n: u32) -> Self {
        self.max_registers.push((kernel.to_string(), n));
        self
    }

    /// Extra arguments for the rustc that compiles the kernel crate itself
    /// (after `cargo rustc ... --`; its dependencies do not get them).
    pub fn rustc_args(mut self, args: &[&str]) -> Self {
        self.rustc_args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// SM numbers to build for (`&[70, 90]`).
    pub fn archs(mut self, archs: &[u32]) -> Self {
        self.archs = archs.to_vec();
        self
    }

    /// The rustup toolchain (default: `$GPU_MPI_PTX_TOOLCHAIN` or `nightly`).
    pub fn toolchain(mut self, name: &str) -> Self {
        self.toolchain = name.to_string();
        self
    }

    /// Where the nested builds keep their artifacts (one subdirectory per
    /// SM). Default: `<crate_dir>/target/gpu-mpi-ptx`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// The executable rustc calls as the linker; it must call
    /// [`run_as_linker_if_requested`] first. Default: a copy of the current
    /// executable in the target directory, named after the link step's
    /// source (see `stable_linker`).
    pub fn linker(mut self, exe: impl Into<PathBuf>) -> Self {
        self.linker = Some(exe.into());
        self
    }

    /// Builds the PTX, one file per architecture, in the order given.
    pub fn build(&self) -> Result<Vec<BuiltPtx>, Error> {
        let tc = Toolchain::locate(&self.toolchain)?;
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| self.crate_dir.join("target").join("gpu-mpi-ptx"));
        let linker = match &self.linker {
            Some(l) => l.clone(),
            None => stable_linker(&target_dir)?,
        };
        let manifest = self.crate_dir.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(Error::NoKernelCrate { manifest });
        }
        let mut budgets = register_budgets(&manifest)?;
        for (kernel, n) in &self.max_registers {
            if !(MIN_REGISTER_BUDGET..=MAX_REGISTER_BUDGET).contains(n) {
                return Err(Error::BadRegisterBudget {
                    manifest,
                    kernel: kernel.clone(),
                    value: n.to_string(),
                });
            }
            budgets.push((kernel.clone(), *n));
        }
        let mut out = Vec::new();
        for &arch in &self.archs {
            let built = self.build_one(
                &tc,
                &linker,
                &manifest,
                &target_dir.join(format!("sm_{arch}")),
                arch,
            )?;
            if !budgets.is_empty() {
                apply_register_budgets(&built.path, &budgets)?;
            }
            out.push(built);
        }
        Ok(out)
    }

    fn build_one(
        &self,
        tc: &Toolchain,
        linker: &Path,
        manifest: &Path,
        target_dir: &Path,
        arch: u32,
    ) -> Result<BuiltPtx, Error> {
        let mut cmd = rustup();
        cmd.args([
            "run",
            &tc.name,
            "cargo",
            "rustc",
            "--lib",
            "--release",
            "--crate-type",
            "cdylib",
        ])
        .args([
            "--target",
            TARGET,
            "-Zbuild-std=core",
            "--message-format=json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .args(if self.rustc_args.is_empty() {
            &[][..]
        } else {
            &["--"][..]
        })
        .args(&self.rustc_args)
        // -C target-cpu reaches core too (the target requires one CPU for
        // all crates); llbc is the target's own flavor, named so that rustc
        // does not guess another from the linker's file name. No sinking of
        // common code into a shared successor (SimplifyCFG): it merged two
        // paths' stores to different fields of a call's result into stores
        // through a phi of pointers, which keeps the result in local memory
        // (a stack frame where there was none); without it the examples'
        // and rsmpi's kernels hold 24 registers and 176 bytes of stack fewer
        // in all (docs/performance.md, "No sinking of common code").
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            [
                format!("-Ctarget-cpu=sm_{arch}"),
                "-Zunstable-options".into(),
                "-Clinker-flavor=llbc".into(),
                "-Cllvm-args=-simplifycfg-sink-common=false".into(),
            ]
            .join("\u{1f}"),
        )
        .env(
            format!("CARGO_TARGET_{}_LINKER", TARGET.to_uppercase().replace('-', "_")),
            linker,
        )
        .env(LINKER_ENV, &tc.llvm_bin)
        // Line tables in PTX only slow ptxas down; the workspace's release
        // profile asks for them for the host.
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        let output = cmd.output().map_err(|source| Error::Spawn {
            toolchain: tc.name.clone(),
            source,
        })?;
        if !output.status.success() {
            return Err(Error::Build {
                arch: format!("sm_{arch}"),
                status: output.status.to_string(),
            });
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let path = ptx_artifact(&stdout).ok_or_else(|| Error::NoPtxArtifact {
            arch: format!("sm_{arch}"),
        })?;
        Ok(BuiltPtx { arch, path })
    }
}

/// The register budgets a kernel crate declares in its manifest's
/// `[package.metadata.gpu-mpi.max-registers]` table (`kernel = N` lines).
fn register_budgets(manifest: &Path) -> Result<Vec<(String, u32)>, Error> {
    let text = std::fs::read_to_string(manifest).map_err(|source| Error::Io {
        what: format!("reading {}", manifest.display()),
        source,
    })?;
    declared_register_budgets(&text)
        .into_iter()
        .map(|(kernel, value)| match value.parse::<u32>() {
            Ok(n) if (MIN_REGISTER_BUDGET..=MAX_REGISTER_BUDGET).contains(&n) => Ok((kernel, n)),
            _ => Err(Error::BadRegisterBudget {
                manifest: manifest.to_path_buf(),
                kernel,
                value,
            }),
        })
        .collect()
}

/// The `kernel = value` lines of the `[package.metadata.gpu-mpi.max-registers]`
/// table of a manifest, as text.
fn declared_register_budgets(manifest: &str) -> Vec<(String, String)> {
    metadata_table(manifest, "max-registers")
}

/// The `key = value` lines of the `[package.metadata.gpu-mpi.<table>]`
/// table of a manifest's text, as text (a line-wise reading: the builder
/// has no TOML parser).
pub(crate) fn metadata_table(manifest: &str, table: &str) -> Vec<(String, String)> {
    let header = format!("[package.metadata.gpu-mpi.{table}]");
    let mut inside = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            inside = line == header;
        } else if let (true, Some((key, value))) = (inside, line.split_once('=')) {
            out.push((key.trim().trim_matches('"').to_string(), value.trim().to_string()));
        }
    }
    out
}

/// Puts `.maxnreg` on the kernel entries of the PTX file at `path` that
/// have a budget.
fn apply_register_budgets(path: &Path, budgets: &[(String, u32)]) -> Result<(), Error> {
    let io = |what: &str, source: std::io::Error| Error::Io {
        what: format!("{what} {}", path.display()),
        source,
    };
    let ptx = std::fs::read_to_string(path).map_err(|e| io("reading", e))?;
    let budgeted = with_register_budgets(&ptx, budgets);
    if budgeted != ptx {
        std::fs::write(path, budgeted).map_err(|e| io("writing", e))?;
    }
    Ok(())
}

/// `ptx` with a `.maxnreg n` directive between the parameter list and the
/// body of each `.entry` that `budgets` names (PTX ISA, "Performance-Tuning
/// Directives"), replacing one already there: applying it twice changes
/// nothing.
fn with_register_budgets(ptx: &str, budgets: &[(String, u32)]) -> String {
    let mut out = String::with_capacity(ptx.len() + 64);
    // Between a budgeted entry's `.entry` line and its body's `{`: its
    // budget, and whether its parameter list has closed.
    let mut entry: Option<(u32, bool)> = None;
    for line in ptx.split_inclusive('\n') {
        let t = line.trim();
        match entry {
            None => {
                if let Some(rest) = t.split(".entry ").nth(1) {
                    let name = rest.split('(').next().unwrap_or("").trim();
                    if let Some((_, n)) = budgets.iter().rev().find(|(k, _)| k == name) {
                        entry = Some((*n, t.ends_with(')') || t.contains("()")));
                    }
                }
            }
            Some((n, closed)) => {
                if t.starts_with(".maxnreg") {
                    continue;
                }
                if !closed && t.starts_with(')') {
                    entry = Some((n, true));
                } else if closed && t.starts_with('{') {
                    out.push_str(&format!(".maxnreg {n}\n"));
                    entry = None;
                }
            }
        }
        out.push_str(line);
    }
    out
}

/// FNV-1a of the link step's source: names the linker copy, so that a change
/// of the link step relinks the kernels.
const LINK_STEP_HASH: u64 = {
    const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
            i += 1;
        }
        h
    }
    let h = fnv(0xcbf2_9ce4_8422_2325, include_bytes!("link.rs"));
    fnv(h, include_bytes!("ar.rs"))
};

/// The linker rustc is given: a copy of the current executable at a path
/// that depends only on the link step's source. Cargo fingerprints the
/// linker's path (a new one rebuilds even `core`), and the executables that
/// run builds differ (the build script of each outer profile, `ptx-check`);
/// all of them link alike, so they share one copy and one nested build.
fn stable_linker(target_dir: &Path) -> Result<PathBuf, Error> {
    let name = format!(
        "gpu-mpi-ptx-link-{LINK_STEP_HASH:016x}{}",
        std::env::consts::EXE_SUFFIX
    );
    let stable = target_dir.join(name);
    if stable.is_file() {
        return Ok(stable);
    }
    let io = |what: &str, source: std::io::Error| Error::Io {
        what: what.to_string(),
        source,
    };
    let exe = std::env::current_exe().map_err(|e| io("current_exe", e))?;
    std::fs::create_dir_all(target_dir).map_err(|e| io(&format!("creating {}", target_dir.display()), e))?;
    // Copy then rename, so that a concurrent build never runs a partial file.
    let tmp = target_dir.join(format!(".gpu-mpi-ptx-link-{}.tmp", std::process::id()));
    std::fs::copy(&exe, &tmp).map_err(|e| io(&format!("copying {}", exe.display()), e))?;
    std::fs::rename(&tmp, &stable).map_err(|e| io(&format!("renaming to {}", stable.display()), e))?;
    Ok(stable)
}

/// The `.ptx` path among cargo's JSON messages (`"filenames":[...]` of a
/// `compiler-artifact`).
fn ptx_artifact(json_lines: &str) -> Option<PathBuf> {
    for line in json_lines.lines().rev() {
        if !line.contains("\"reason\":\"compiler-artifact\"") {
            continue;
        }
        let Some(files) = line.split("\"filenames\":[").nth(1) else {
            continue;
        };
        let files = files.split(']').next().unwrap_or("");
        for quoted in json_strings(files) {
            if quoted.ends_with(".ptx") {
                return Some(PathBuf::from(quoted));
            }
        }
    }
    None
}

/// The JSON string literals in `s`, unescaped (enough for paths).
fn json_strings(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut v = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => v.push('\n'),
                    Some('t') => v.push('\t'),
                    Some(o) => v.push(o),
                    None => break,
                },
                _ => v.push(c),
            }
        }
        out.push(v);
    }
    out
}

/// Parses a comma-separated SM list (`"70,90"`, `"sm_70, sm_80"`).
pub fn parse_archs(s: &str) -> Result<Vec<u32>, String> {
    let v: Result<Vec<u32>, String> = s
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| {
            a.trim_start_matches("sm_")
                .parse::<u32>()
                .map_err(|_| format!("bad SM architecture `{a}`"))
                .and_then(|n| {
                    if n >= 70 {
                        Ok(n)
                    } else {
                        Err(format!("sm_{n}: the shim needs sm_70 or later"))
                    }
                })
        })
        .collect();
    let v = v?;
    if v.is_empty() {
        return Err("empty SM architecture list".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE_ENTRIES: &str = "\
.func helper(\n\t.param .b64 x\n)\n{\n\tret;\n}\n\
.visible .entry ring(\n\t.param .u64 a,\n\t.param .u64 b\n)\n{\n\tret;\n}\n\
.visible .entry empty()\n{\n\tret;\n}\n\
.visible .entry small(\n\t.param .u64 a\n)\n{\n\tret;\n}\n";

    fn budgets(list: &[(&str, u32)]) -> Vec<(String, u32)> {
        list.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    #[test]
    fn register_budgets_go_on_the_named_entries_only() {
        let once = with_register_budgets(THREE_ENTRIES, &budgets(&[("ring", 128), ("empty", 96)]));
        assert!(once.contains("\t.param .u64 b\n)\n.maxnreg 128\n{"), "{once}");
        assert!(once.contains(".entry empty()\n.maxnreg 96\n{"), "{once}");
        assert!(once.contains(".entry small(\n\t.param .u64 a\n)\n{"), "{once}");
        assert!(once.contains(".func helper(\n\t.param .b64 x\n)\n{"), "{once}");
        assert_eq!(once.matches(".maxnreg").count(), 2);
        // Idempotent, and a new budget replaces the old one.
        assert_eq!(
            with_register_budgets(&once, &budgets(&[("ring", 128), ("empty", 96)])),
            once
        );
        let other = with_register_budgets(&once, &budgets(&[("ring", 64), ("empty", 96)]));
        assert_eq!(
            other,
            with_register_budgets(THREE_ENTRIES, &budgets(&[("ring", 64), ("empty", 96)]))
        );
    }

    #[test]
    fn register_budgets_are_read_from_their_metadata_table_only() {
        let manifest = "[package]\nname = \"k\"\nring = 7\n\n\
                        [package.metadata.gpu-mpi.max-registers]\n# budgets\nring = 128 # per thread\n\
                        \"bench_reduce\" = 96\n[dependencies]\nsmall = 9\n";
        assert_eq!(
            declared_register_budgets(manifest),
            vec![
                ("ring".to_string(), "128".to_string()),
                ("bench_reduce".to_string(), "96".to_string())
            ]
        );
        assert!(declared_register_budgets("[package]\nname = \"k\"\n").is_empty());
        let dir = std::env::temp_dir().join(format!("gpu-mpi-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("Cargo.toml");
        for (value, ok) in [("128", Some(128)), ("8", None), ("256", None), ("\"many\"", None)] {
            let text = format!("[package.metadata.gpu-mpi.max-registers]\nring = {value}\n");
            std::fs::write(&path, text).unwrap();
            match (register_budgets(&path), ok) {
                (Ok(b), Some(want)) => assert_eq!(b, budgets(&[("ring", want)])),
                (Err(Error::BadRegisterBudget { kernel, value: v, .. }), None) => {
                    assert_eq!((kernel.as_str(), v.as_str()), ("ring", value))
                }
                (other, _) => panic!("{value}: {other:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn finds_ptx_artifact_in_cargo_json() {
        let json = concat!(
            "{\"reason\":\"compiler-artifact\",\"package_id\":\"x\",\"filenames\":[\"/t/libcore.rlib\"]}\n",
            "{\"reason\":\"compiler-artifact\",\"target\":{\"kind\":[\"cdylib\"]},",
            "\"filenames\":[\"/t/nvptx64-nvidia-cuda/release/gpu_mpi_kernels.ptx\"],\"fresh\":false}\n",
            "{\"reason\":\"build-finished\",\"success\":true}\n"
        );
        assert_eq!(
            ptx_artifact(json),
            Some(PathBuf::from(
                "/t/nvptx64-nvidia-cuda/release/gpu_mpi_kernels.ptx"
            ))
        );
        assert_eq!(ptx_artifact("{\"reason\":\"build-finished\"}"), None);
        assert_eq!(json_strings(r#""a\"b", "c\\d""#), ["a\"b", "c\\d"]);
    }

    #[test]
    fn parses_arch_lists() {
        assert_eq!(parse_archs("70,90").unwrap(), [70, 90]);
        assert_eq!(parse_archs(" sm_70 , sm_80").unwrap(), [70, 80]);
        assert!(parse_archs("60").is_err());
        assert!(parse_archs("x").is_err());
        assert!(parse_archs("").is_err());
    }

    #[test]
    fn missing_component_is_one_line() {
        let e = Error::Missing {
            what: "the `rust-src` component of the `nightly` toolchain".into(),
            install: "rustup component add rust-src --toolchain nightly".into(),
        };
        let s = e.to_string();
        assert!(!s.contains('\n'));
        assert!(s.contains("rustup component add rust-src --toolchain nightly"));
    }
}
