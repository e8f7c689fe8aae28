//! `ptx-check`: builds the kernels to PTX and checks it (what CI runs through
//! `scripts/ptx-check.sh`).
//!
//! ```text
//! ptx-check [--kernels DIR] [--archs 70,90] [--check-archs 70,80,90]
//!           [--target-dir DIR] [--out DIR] [--toolchain NAME] [--fast-compile]
//!           [--max-registers N] [--functions N] [--calls KERNEL]
//! ptx-check --ptx FILE:SM [--ptx FILE:SM ...] [--check-archs ...] [--calls KERNEL]
//! ```
//!
//! `--fast-compile` assembles with ptxas `-Ofc max`
//! ([`check::Optimization::FastCompile`]): every error still fails, but the
//! report's registers and stack are not the optimised SASS's. CI uses it
//! for the conformance kernels only (scripts/ptx-check.sh).
//!
//! `--max-registers N` fails when a kernel uses more than N registers on
//! any check architecture ([`check::over_register_ceiling`]): CI holds
//! the users' kernels (the examples) to 128, the project's ceiling. It
//! also fails a kernel whose budget is below N and that spills on sm_90
//! ([`check::spilling_under_ceiling`]): such a budget buys ranks per SM
//! only where it costs no local memory, unless the crate's manifest says
//! the spill is worth it (`[package.metadata.gpu-mpi.budget-spills]`,
//! `kernel = true`).
//!
//! `--functions N` also assembles each PTX with `ptxas -c` (every
//! function compiled on its own, the kernels' register budgets left out)
//! and prints the N functions with the most registers
//! ([`check::function_registers`]): which function of a kernel over its
//! budget needs them.
//!
//! `--calls KERNEL` (repeatable) prints, per assembly that has the kernel,
//! what its registers are made of ([`gpu_mpi_ptx_builder::calls`]): its
//! registers without budgets, its own body's with every function it calls
//! stubbed, each function it calls directly through an entry of its
//! own, and for every function it reaches its registers with that
//! function's body stubbed (the call whose stub lowers the count is the
//! one that sets it). A kernel that calls a function needs about the
//! callee's registers plus its own values live across the call
//! (docs/gpu.md).
//!
//! Fails (exit 1) when a PTX has no kernel entry point, when the lint finds an
//! `atom`/`red` without explicit `.relaxed/.acquire/.release/.acq_rel` or any
//! `.sys`-scope operation, when ptxas is missing, or when ptxas rejects a PTX
//! for any of the check architectures. Prints the register/stack report.

use gpu_mpi_ptx_builder::{calls, check, parse_archs, PtxBuilder, DEFAULT_ARCHS, DEFAULT_CHECK_ARCHS};
use std::path::PathBuf;
use std::process::ExitCode;

struct Options {
    kernels: PathBuf,
    archs: Vec<u32>,
    check_archs: Vec<u32>,
    target_dir: PathBuf,
    out: PathBuf,
    toolchain: Option<String>,
    given_ptx: Vec<(u32, PathBuf)>,
    optimization: check::Optimization,
    max_registers: Option<u32>,
    functions: Option<usize>,
    calls: Vec<String>,
}

const USAGE: &str = "usage: ptx-check [--kernels DIR] [--archs 70,90] [--check-archs 70,80,90] \
[--target-dir DIR] [--out DIR] [--toolchain NAME] [--fast-compile] [--max-registers N] [--functions N] [--calls KERNEL] | --ptx FILE:SM ...";

fn parse_options() -> Result<Options, String> {
    // The workspace this binary belongs to.
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let mut o = Options {
        kernels: workspace.join("check").join("kernels"),
        archs: DEFAULT_ARCHS.to_vec(),
        check_archs: DEFAULT_CHECK_ARCHS.to_vec(),
        target_dir: workspace.join("target").join("gpu-mpi-ptx"),
        out: workspace.join("target").join("ptx-check"),
        toolchain: None,
        given_ptx: Vec::new(),
        optimization: check::Optimization::Full,
        max_registers: None,
        functions: None,
        calls: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{a}` needs a value\n{USAGE}"));
        match a.as_str() {
            "--kernels" => o.kernels = PathBuf::from(value()?),
            "--archs" => o.archs = parse_archs(&value()?)?,
            "--check-archs" => o.check_archs = parse_archs(&value()?)?,
            "--target-dir" => o.target_dir = PathBuf::from(value()?),
            "--out" => o.out = PathBuf::from(value()?),
            "--toolchain" => o.toolchain = Some(value()?),
            "--fast-compile" => o.optimization = check::Optimization::FastCompile,
            "--max-registers" => o.max_registers = Some(number(&a, "registers", value()?)?),
            "--functions" => o.functions = Some(number(&a, "functions", value()?)?),
            "--calls" => o.calls.push(value()?),
            "--ptx" => {
                let v = value()?;
                let (file, sm) = v
                    .rsplit_once(':')
                    .ok_or_else(|| format!("--ptx wants FILE:SM, got `{v}`"))?;
                let sm = parse_archs(sm)?;
                o.given_ptx.push((sm[0], PathBuf::from(file)));
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument `{a}`\n{USAGE}")),
        }
    }
    Ok(o)
}

/// The value of option `flag`, a number of `what`.
fn number<T: std::str::FromStr>(flag: &str, what: &str, value: String) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} wants a number of {what}, got `{value}`"))
}

fn main() -> ExitCode {
    // rustc runs this very executable as the nvptx64 linker of the nested build.
    gpu_mpi_ptx_builder::run_as_linker_if_requested();

    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ptx-check: {e}");
            return ExitCode::from(2);
        }
    };
    let mut failed = false;

    // 1. The PTX: given, or built.
    let ptx: Vec<(u32, PathBuf)> = if !o.given_ptx.is_empty() {
        o.given_ptx.clone()
    } else {
        let mut b = PtxBuilder::new(&o.kernels)
            .archs(&o.archs)
            .target_dir(&o.target_dir)
            .rustc_args(gpu_mpi_ptx_builder::KERNEL_CRATE_RUSTC_ARGS);
        if let Some(tc) = &o.toolchain {
            b = b.toolchain(tc);
        }
        eprintln!("ptx-check: building {} for {:?}", o.kernels.display(), o.archs);
        match b.build() {
            Ok(built) => {
                if let Err(e) = std::fs::create_dir_all(&o.out) {
                    eprintln!("ptx-check: creating {}: {e}", o.out.display());
                    return ExitCode::FAILURE;
                }
                let mut v = Vec::new();
                for p in built {
                    let dest = o.out.join(format!("kernels_sm{}.ptx", p.arch));
                    if let Err(e) = std::fs::copy(&p.path, &dest) {
                        eprintln!("ptx-check: copying {}: {e}", p.path.display());
                        return ExitCode::FAILURE;
                    }
                    v.push((p.arch, dest));
                }
                v
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    };

    // 2. Lint, and make sure there is something to check; the kernels'
    // register budgets (`.maxnreg`), for the check of `--max-registers`.
    let mut lint = Vec::new();
    let mut budgets = Vec::new();
    for (arch, path) in &ptx {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("ptx-check: reading {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        budgets.extend(check::register_budgets(&text));
        let entries = check::entries(&text);
        if entries.is_empty() {
            eprintln!(
                "ptx-check: FAIL {} (sm_{arch}) has no kernel entry point",
                path.display()
            );
            failed = true;
        } else {
            println!(
                "{} (sm_{arch}): {} kernels: {}",
                path.display(),
                entries.len(),
                entries.join(", ")
            );
        }
        let v = check::lint(&text);
        if !v.is_empty() {
            failed = true;
        }
        lint.push((path.clone(), v));
    }

    // 3. ptxas.
    let ptxas = check::find_ptxas();
    let mut assemblies = Vec::new();
    match &ptxas {
        None => {
            eprintln!(
                "ptx-check: FAIL ptxas not found: run .ci/ptx-setup.sh \
                 (pip wheel nvidia-cuda-nvcc-cu12) or set PTXAS=/path/to/ptxas"
            );
            failed = true;
        }
        Some(ptxas) => {
            let built: Vec<u32> = ptx.iter().map(|(a, _)| *a).collect();
            let plan = check::assembly_plan(&built, &o.check_archs);
            for &target in &o.check_archs {
                if !plan.iter().any(|&(_, t)| t == target) {
                    eprintln!("ptx-check: FAIL no PTX at or below sm_{target} to assemble for it");
                    failed = true;
                }
            }
            let jobs: Vec<(PathBuf, String)> = plan
                .into_iter()
                .filter_map(|(from, target)| {
                    let (_, path) = ptx.iter().find(|(a, _)| *a == from)?;
                    Some((path.clone(), format!("sm_{target}")))
                })
                .collect();
            let cache = check::AssemblyCache::new(o.target_dir.join("sass-cache"));
            assemblies = check::assemble_all(ptxas, &jobs, o.optimization, Some(&cache));
            if assemblies.iter().any(|a| a.error.is_some()) {
                failed = true;
            }
        }
    }

    let version = ptxas.as_deref().and_then(check::ptxas_version);
    let report = check::format_report(
        ptxas.as_deref().map(|p| (p, version.as_deref())),
        &assemblies,
        &lint,
    );
    println!("{report}");
    if let (Some(n), Some(ptxas)) = (o.functions, &ptxas) {
        for a in assemblies.iter().filter(|a| a.error.is_none()) {
            match function_registers(ptxas, &a.ptx, &a.arch) {
                Ok(list) => {
                    println!(
                        "functions of {} ({}), registers each, most first:",
                        a.ptx.display(),
                        a.arch
                    );
                    for (name, registers) in list.iter().take(n) {
                        println!("  {registers:>4}  {name}");
                    }
                }
                Err(e) => {
                    eprintln!(
                        "ptx-check: FAIL per-function registers of {}: {e}",
                        a.ptx.display()
                    );
                    failed = true;
                }
            }
        }
    }
    if let Some(ptxas) = &ptxas {
        for a in assemblies.iter().filter(|a| a.error.is_none()) {
            for kernel in o.calls.iter().filter(|k| a.kernels.iter().any(|r| &r.name == *k)) {
                match calls_report(ptxas, &a.ptx, &a.arch, kernel) {
                    Ok(text) => print!("{text}"),
                    Err(e) => {
                        eprintln!(
                            "ptx-check: FAIL the calls of {kernel} in {}: {e}",
                            a.ptx.display()
                        );
                        failed = true;
                    }
                }
            }
        }
    }
    if let Some(ceiling) = o.max_registers {
        let kernels: Vec<_> = assemblies
            .iter()
            .flat_map(|a| a.kernels.iter().cloned())
            .collect();
        for line in check::over_register_ceiling(&kernels, ceiling) {
            eprintln!("ptx-check: FAIL {line}");
            failed = true;
        }
        // Built from a crate: the spills its manifest allows.
        let allowed = if o.given_ptx.is_empty() {
            std::fs::read_to_string(o.kernels.join("Cargo.toml"))
                .map(|m| check::budget_spills_allowed(&m))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for line in check::spilling_under_ceiling(&kernels, &budgets, ceiling, &allowed) {
            eprintln!("ptx-check: FAIL {line}");
            failed = true;
        }
    }
    if o.given_ptx.is_empty() {
        let path = o.out.join("ptxas_report.txt");
        match std::fs::write(&path, &report) {
            Ok(()) => println!("report written to {}", path.display()),
            Err(e) => eprintln!("ptx-check: writing {}: {e}", path.display()),
        }
    }
    if failed {
        eprintln!("ptx-check: FAILED");
        ExitCode::FAILURE
    } else {
        println!("ptx-check: ok");
        ExitCode::SUCCESS
    }
}

/// [`check::function_registers`] of `ptx` assembled for `arch` with
/// `ptxas -c`, its register budgets left out; the relocatable cubin is
/// written beside the PTX.
fn function_registers(
    ptxas: &std::path::Path,
    ptx: &std::path::Path,
    arch: &str,
) -> Result<Vec<(String, u32)>, String> {
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("reading {}: {e}", ptx.display()))?;
    let unbudgeted = ptx.with_extension(format!("{arch}.unbudgeted.ptx"));
    std::fs::write(&unbudgeted, check::without_register_budgets(&text))
        .map_err(|e| format!("writing {}: {e}", unbudgeted.display()))?;
    let cubin = ptx.with_extension(format!("{arch}.relocatable.cubin"));
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-c")
        .arg("-o")
        .arg(&cubin)
        .arg(&unbudgeted)
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    if !out.status.success() {
        return Err(format!(
            "ptxas -c failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let bytes = std::fs::read(&cubin).map_err(|e| format!("reading {}: {e}", cubin.display()))?;
    check::function_registers(&bytes)
}

/// The registers of entry `entry` when `text` is assembled for `arch`
/// (written to `path` first).
fn entry_registers(
    ptxas: &std::path::Path,
    path: &std::path::Path,
    text: &str,
    arch: &str,
    entry: &str,
) -> Result<u32, String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let a = check::assemble(ptxas, path, arch, check::Optimization::Full, None);
    if let Some(e) = a.error {
        return Err(e);
    }
    a.kernels
        .iter()
        .find(|k| k.name == entry)
        .map(|k| k.registers)
        .ok_or_else(|| format!("ptxas reported no entry `{entry}`"))
}

/// What `kernel`'s registers in `ptx` for `arch` are made of
/// ([`calls`]), as lines to print.
fn calls_report(
    ptxas: &std::path::Path,
    ptx: &std::path::Path,
    arch: &str,
    kernel: &str,
) -> Result<String, String> {
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("reading {}: {e}", ptx.display()))?;
    let scratch = ptx.with_extension(format!("{arch}.calls.ptx"));
    let alone_text = calls::with_entries_only(&text, Some(kernel));
    let whole = entry_registers(ptxas, &scratch, &alone_text, arch, kernel)?;
    let own = entry_registers(
        ptxas,
        &scratch,
        &calls::with_stubbed_bodies(&alone_text, |_| true),
        arch,
        kernel,
    )?;
    let mut out = format!(
        "calls of {kernel} ({arch}, budgets left out): {whole} registers; its own body, every function it calls stubbed: {own}\n\
         \x20 alone: a direct callee with its callees under an entry that keeps nothing live across the call; \
         without: the kernel with that function's body stubbed (wherever it is called)\n\
         \x20alone  without  function\n"
    );
    let direct = calls::direct_callees(&text, kernel);
    for f in calls::reachable(&text, kernel) {
        let probe = if direct.contains(&f) {
            calls::with_probe_entry(&text, &f)
        } else {
            None
        };
        let alone = match probe {
            Some(probe) => entry_registers(ptxas, &scratch, &probe, arch, calls::PROBE_ENTRY)?.to_string(),
            None => "-".to_string(),
        };
        let without = entry_registers(
            ptxas,
            &scratch,
            &calls::with_stubbed_bodies(&alone_text, |n| n == f),
            arch,
            kernel,
        )?;
        out.push_str(&format!("  {alone:>5}  {without:>7}  {f}\n"));
    }
    let _ = std::fs::remove_file(&scratch);
    let _ = std::fs::remove_file(check::cubin_path(&scratch, arch));
    Ok(out)
}
