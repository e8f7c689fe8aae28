//! The link step rustc runs for the nvptx64 target, in place of the
//! `llvm-bitcode-linker` component (which cannot be installed everywhere).
//!
//! rustc calls the linker with the `llbc` flavor's arguments:
//!
//! ```text
//! --export-symbol K ... <crate .o (bitcode)> <dep .rlib ...> -L DIR --target nvptx64-nvidia-cuda
//! --target-cpu sm_XX [--target-feature=+ptxNN] -o OUT.ptx -O3 [--debug]
//! ```
//!
//! We link all bitcode (the crate's objects and every bitcode member of the
//! rlibs) with `llvm-link`, internalize everything but the exported kernels
//! and optimize with `opt`, and emit PTX with `llc`. The three tools come from
//! the toolchain's `llvm-tools` component.

use crate::ar;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one linker invocation asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LinkArgs {
    /// Symbols to keep visible (the kernels).
    pub exports: Vec<String>,
    /// Bitcode objects and rlibs, in order.
    pub inputs: Vec<PathBuf>,
    /// Output PTX file.
    pub output: Option<PathBuf>,
    /// `sm_XX`.
    pub cpu: Option<String>,
    /// Target features (`+ptx70`, ...).
    pub features: Vec<String>,
    /// Optimization level (`0`..`3`, `s`, `z`).
    pub opt_level: String,
}

/// Parses the linker's command line (after response files are expanded).
pub fn parse_args(args: &[String]) -> Result<LinkArgs, String> {
    let mut a = LinkArgs {
        opt_level: "3".into(),
        ..LinkArgs::default()
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match arg.as_str() {
            "--export-symbol" => a.exports.push(value(arg)?),
            "-o" => a.output = Some(PathBuf::from(value(arg)?)),
            "--target-cpu" => a.cpu = Some(value(arg)?),
            "--target-feature" => a.features.extend(split_features(&value(arg)?)),
            "-L" | "--target" => {
                value(arg)?;
            }
            "--debug" => {}
            _ => {
                if let Some(f) = arg.strip_prefix("--target-feature=") {
                    a.features.extend(split_features(f));
                } else if let Some(c) = arg.strip_prefix("--target-cpu=") {
                    a.cpu = Some(c.to_string());
                } else if let Some(o) = arg.strip_prefix("-O") {
                    a.opt_level = o.to_string();
                } else if arg.starts_with("-L") || arg.starts_with("--target=") {
                } else if arg.starts_with('-') {
                    return Err(format!("unexpected linker argument `{arg}`"));
                } else {
                    a.inputs.push(PathBuf::from(arg));
                }
            }
        }
    }
    Ok(a)
}

fn split_features(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

/// Expands `@file` response files (one argument per line).
fn expand_response_files(args: Vec<OsString>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for arg in args {
        let arg = arg
            .into_string()
            .map_err(|a| format!("non-UTF-8 argument {a:?}"))?;
        if let Some(file) = arg.strip_prefix('@') {
            let text = fs::read_to_string(file).map_err(|e| format!("reading response file {file}: {e}"))?;
            out.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_string));
        } else {
            out.push(arg);
        }
    }
    Ok(out)
}

/// The PTX ISA feature to request when rustc passes none: PTX 7.0 (CUDA 11.0
/// drivers) below sm_80, where LLVM's own default (6.0 for sm_70) lacks
/// `nanosleep` (6.3); LLVM's default, which already is 7.0 or later, above.
fn default_ptx_feature(cpu: &str) -> Option<String> {
    let sm: u32 = cpu
        .strip_prefix("sm_")?
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()?;
    (sm < 80).then(|| "+ptx70".to_string())
}

/// The name of the constant-bank copy of a world's header (its config and
/// layout) in every module the link emits: the host copies the header of the
/// world it launches there first (`cuModuleGetGlobal`).
pub const DESCRIPTORS_SYMBOL: &str = "gpu_mpi_descriptors";

/// Bytes of [`DESCRIPTORS_SYMBOL`]: the world header's (the device crate's
/// `layout::HEADER_BYTES`; the host refuses a module whose copy is smaller).
pub const DESCRIPTORS_BYTES: usize = 512;

/// Linked into every module: [`DESCRIPTORS_SYMBOL`] in the `.const` state
/// space (address space 4), and `gpu_mpi_descriptors_address`, its generic
/// address, which the device library's shim calls (Rust has no way to put a
/// static in an address space). Once the call is inlined, LLVM infers the
/// constant space of every load through that address: `ld.const`, served
/// by the constant cache, which an acquire does not empty (the world's
/// header in global memory was reloaded after every `asm!` atomic, from L2
/// after an acquire: docs/performance.md), and which ptxas can fold into
/// the instruction that uses the value. The address comes from an `asm`
/// with side effects on no memory the program sees: LLVM knows nothing
/// writes the constant space, and with the symbol itself it would load
/// each field once at the kernel's start and hold them all in registers
/// (spills, measured); from an opaque address, each call's loads are its
/// own, as they were from global memory (ptxas, which knows the address,
/// folds the loads into operands, or keeps some in registers across a
/// path: docs/performance.md). The descriptors never change
/// during a launch, so the constant cache, which is not coherent with
/// global memory, is right. The data layout is rustc's for nvptx64 (LLVM
/// 22); llvm-link warns if it differs.
fn descriptors_ir() -> String {
    format!(
        r#"target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@{DESCRIPTORS_SYMBOL} = addrspace(4) externally_initialized global [{DESCRIPTORS_BYTES} x i8] zeroinitializer, align 16
define ptr @gpu_mpi_descriptors_address() #0 {{
  %p = call ptr addrspace(4) asm sideeffect "mov.u64 $0, {DESCRIPTORS_SYMBOL};", "=l"() #1
  %g = addrspacecast ptr addrspace(4) %p to ptr
  ret ptr %g
}}
attributes #0 = {{ alwaysinline nounwind }}
attributes #1 = {{ nounwind memory(inaccessiblemem: readwrite) }}
"#
    )
}

/// Runs the link: `llvm_bin` holds `llvm-link`, `opt` and `llc`.
pub fn link(llvm_bin: &Path, raw_args: Vec<OsString>) -> Result<(), String> {
    let args = parse_args(&expand_response_files(raw_args)?)?;
    let output = args.output.clone().ok_or("no `-o` output given")?;
    let cpu = args.cpu.clone().unwrap_or_else(|| "sm_70".into());
    let tmp = output.with_extension(format!("link-tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
    let result = link_in(llvm_bin, &args, &cpu, &output, &tmp);
    // GPU_MPI_KEEP_LINK_TMP: keep the bitcode (`linked.bc`, `optimized.bc`)
    // beside the output, for reading the IR the PTX came from (docs/gpu.md).
    if result.is_ok() && std::env::var_os("GPU_MPI_KEEP_LINK_TMP").is_none() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

fn link_in(llvm_bin: &Path, args: &LinkArgs, cpu: &str, output: &Path, tmp: &Path) -> Result<(), String> {
    // 1. Collect the bitcode: objects as they are, archives unpacked.
    let mut bitcode: Vec<PathBuf> = Vec::new();
    for input in &args.inputs {
        let data = fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
        if ar::is_archive(&data) {
            for (i, (name, body)) in ar::members(&data)
                .map_err(|e| format!("{}: {e}", input.display()))?
                .into_iter()
                .enumerate()
            {
                if ar::is_bitcode(body) {
                    let stem = input.file_stem().and_then(|s| s.to_str()).unwrap_or("lib");
                    let path = tmp.join(format!("{stem}-{i}-{}.bc", sanitize(&name)));
                    fs::write(&path, body).map_err(|e| format!("writing {}: {e}", path.display()))?;
                    bitcode.push(path);
                }
            }
        } else if ar::is_bitcode(&data) {
            bitcode.push(input.clone());
        } else {
            return Err(format!(
                "{} is neither LLVM bitcode nor an archive",
                input.display()
            ));
        }
    }
    if bitcode.is_empty() {
        return Err("no bitcode to link".into());
    }

    // 2. One module, with the world's descriptors in the constant bank
    // (`descriptors_ir`), after the crate's bitcode so that its data layout
    // is the module's.
    let descriptors = tmp.join("descriptors.ll");
    fs::write(&descriptors, descriptors_ir())
        .map_err(|e| format!("writing {}: {e}", descriptors.display()))?;
    let linked = tmp.join("linked.bc");
    let mut cmd = Command::new(llvm_bin.join("llvm-link"));
    cmd.arg("-o").arg(&linked).args(&bitcode).arg(&descriptors);
    run(cmd)?;

    // 3. Keep the kernels, drop the rest, optimize.
    let opt_level = match args.opt_level.as_str() {
        "0" | "1" | "2" | "3" | "s" | "z" => args.opt_level.as_str(),
        _ => "3",
    };
    let optimized = tmp.join("optimized.bc");
    let mut cmd = Command::new(llvm_bin.join("opt"));
    // No sinking of common code, as in rustc's own pipeline (`PtxBuilder`'s
    // RUSTFLAGS, which say why).
    cmd.arg(format!("-passes=internalize,globaldce,default<O{opt_level}>"))
        .arg("-simplifycfg-sink-common=false")
        .arg(format!(
            "-internalize-public-api-list={},{DESCRIPTORS_SYMBOL}",
            args.exports.join(",")
        ))
        .arg("-o")
        .arg(&optimized)
        .arg(&linked);
    run(cmd)?;

    // 4. PTX.
    let mut features = args.features.clone();
    if !features.iter().any(|f| f.starts_with("+ptx")) {
        features.extend(default_ptx_feature(cpu));
    }
    let llc_opt = match opt_level {
        "0" | "1" | "2" => opt_level,
        _ => "3",
    };
    let mut cmd = Command::new(llvm_bin.join("llc"));
    cmd.arg(format!("-mcpu={cpu}")).arg(format!("-O{llc_opt}"));
    if !features.is_empty() {
        cmd.arg(format!("-mattr={}", features.join(",")));
    }
    cmd.arg("-o").arg(output).arg(&optimized);
    run(cmd)
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn run(mut cmd: Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let status = cmd.status().map_err(|e| format!("running {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn descriptors_are_a_constant_symbol_of_the_header_size() {
        let ir = descriptors_ir();
        assert!(ir.contains(&format!(
            "@{DESCRIPTORS_SYMBOL} = addrspace(4) externally_initialized global [{DESCRIPTORS_BYTES} x i8]"
        )));
        assert!(ir.contains(&format!("mov.u64 $0, {DESCRIPTORS_SYMBOL};")));
        assert!(ir.contains("define ptr @gpu_mpi_descriptors_address()"));
    }

    #[test]
    fn parses_rustc_llbc_command_line() {
        let a = parse_args(&s(&[
            "--export-symbol",
            "ring",
            "--export-symbol",
            "pi_reduce",
            "/t/deps/k.k.0.rcgu.o",
            "/t/deps/libcore-1.rlib",
            "-L",
            "/t/deps/raw-dylibs",
            "--target",
            "nvptx64-nvidia-cuda",
            "--target-cpu",
            "sm_70",
            "--target-feature=+ptx70",
            "-o",
            "/t/deps/k.ptx",
            "-O3",
            "--debug",
        ]))
        .unwrap();
        assert_eq!(a.exports, ["ring", "pi_reduce"]);
        assert_eq!(
            a.inputs,
            [
                PathBuf::from("/t/deps/k.k.0.rcgu.o"),
                PathBuf::from("/t/deps/libcore-1.rlib")
            ]
        );
        assert_eq!(a.cpu.as_deref(), Some("sm_70"));
        assert_eq!(a.features, ["+ptx70"]);
        assert_eq!(a.output, Some(PathBuf::from("/t/deps/k.ptx")));
        assert_eq!(a.opt_level, "3");
        assert!(parse_args(&s(&["--bogus"])).is_err());
        assert!(parse_args(&s(&["-o"])).is_err());
    }

    #[test]
    fn ptx_version_floor() {
        assert_eq!(default_ptx_feature("sm_70").as_deref(), Some("+ptx70"));
        assert_eq!(default_ptx_feature("sm_75").as_deref(), Some("+ptx70"));
        assert_eq!(default_ptx_feature("sm_90"), None);
        assert_eq!(default_ptx_feature("sm_90a"), None);
    }
}
