//! Checks on the generated PTX.
//!
//! - [`lint`]: every `atom`/`red` instruction carries an explicit memory
//!   semantics qualifier (`.relaxed`, `.acquire`, `.release`, `.acq_rel`),
//!   and no instruction uses `.sys` scope. An unqualified `atom` is what LLVM
//!   emits for a Rust atomic RMW whatever its ordering (LLVM 22 drops it on
//!   NVPTX), and `.sys` is what Rust atomics use; both mean device code went
//!   around the shim. And no `cvta` of the constant space: the world's
//!   descriptors (the only constant-space data, `gpu_mpi_descriptors`)
//!   reached a generic address, where their reads are loads of global
//!   memory again instead of constant-bank operands.
//! - [`assemble`]: `ptxas -arch=sm_XX -v` assembles a PTX file and reports
//!   registers, stack frame and spills per kernel ([`parse_ptxas_verbose`]).

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What is wrong with one PTX instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// An `atom`/`red` without `.relaxed/.acquire/.release/.acq_rel`.
    UnqualifiedAtomic,
    /// A `.sys`-scope operation (the project means `.gpu`).
    SystemScope,
    /// A `cvta` of the `.const` space: the descriptors behind a generic
    /// address (passed by reference to a call that was not inlined?).
    GenericConstant,
}

/// One lint finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// 1-based line in the PTX text.
    pub line: usize,
    /// The instruction, whitespace-normalized.
    pub instruction: String,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.problem {
            Problem::UnqualifiedAtomic => {
                "atomic without explicit .relaxed/.acquire/.release/.acq_rel (device code bypassed the shim?)"
            }
            Problem::SystemScope => ".sys scope (the world is device memory: use .gpu through the shim)",
            Problem::GenericConstant => {
                "the constant space to a generic address (the world's descriptors read as global memory: keep `&Layout` out of calls that are not inlined)"
            }
        };
        write!(f, "line {}: `{}`: {}", self.line, self.instruction, why)
    }
}

const SEMANTICS: [&str; 4] = ["relaxed", "acquire", "release", "acq_rel"];

/// Lints PTX text; an empty result means it passes.
pub fn lint(ptx: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut in_block_comment = false;
    for (idx, raw) in ptx.lines().enumerate() {
        let code = strip_comments(raw, &mut in_block_comment);
        for stmt in code.split(';') {
            let Some(instr) = instruction(stmt) else { continue };
            let opcode = instr.split_whitespace().next().unwrap_or("");
            let parts: Vec<&str> = opcode.split('.').collect();
            let problem = if (parts[0] == "atom" || parts[0] == "red")
                && !parts.iter().any(|p| SEMANTICS.contains(p))
            {
                Some(Problem::UnqualifiedAtomic)
            } else if parts.contains(&"sys") {
                Some(Problem::SystemScope)
            } else if parts[0] == "cvta" && parts.contains(&"const") {
                Some(Problem::GenericConstant)
            } else {
                None
            };
            if let Some(problem) = problem {
                out.push(Violation {
                    line: idx + 1,
                    instruction: instr.split_whitespace().collect::<Vec<_>>().join(" "),
                    problem,
                });
            }
        }
    }
    out
}

/// Removes `//` and `/* */` comments from one line, tracking block comments
/// across lines.
fn strip_comments(line: &str, in_block: &mut bool) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        if *in_block {
            match rest.find("*/") {
                Some(i) => {
                    rest = &rest[i + 2..];
                    *in_block = false;
                }
                None => return out,
            }
        }
        let line_comment = rest.find("//");
        let block_comment = rest.find("/*");
        match (line_comment, block_comment) {
            (Some(l), Some(b)) if b < l => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_block = true;
            }
            (None, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_block = true;
            }
            (Some(l), _) => {
                out.push_str(&rest[..l]);
                return out;
            }
            (None, None) => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// The instruction in one `;`-terminated statement, without braces, labels
/// and predicate guard; `None` for directives, declarations and empty text.
fn instruction(stmt: &str) -> Option<&str> {
    let mut s = stmt.trim();
    loop {
        let before = s;
        s = s.trim_start_matches(['{', '}']).trim_start();
        // A label: `name:` at the start (names may contain `$`, `_`, `.`? no
        // dots in labels, but `$L__BB0_1` style). Not `::`.
        if let Some(colon) = s.find(':') {
            let label = &s[..colon];
            if !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%')
            {
                s = s[colon + 1..].trim_start();
            }
        }
        if s == before {
            break;
        }
    }
    if let Some(guarded) = s.strip_prefix('@') {
        // `@%p1 atom...` / `@!%p1 atom...`
        s = guarded
            .split_once(char::is_whitespace)
            .map(|(_, r)| r.trim_start())
            .unwrap_or("");
    }
    if s.is_empty() || s.starts_with('.') || s.starts_with('}') {
        return None;
    }
    Some(s)
}

/// Resources of one kernel as reported by `ptxas -v`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// Entry point name.
    pub name: String,
    /// Architecture it was assembled for (`sm_70`).
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame bytes (the kernel's own; with its callees': `cumulative_stack`).
    pub stack_frame: u32,
    /// Spill store bytes: the kernel's own and those of every function
    /// ptxas compiled for it (its callees, which spill under the kernel's
    /// register budget too).
    pub spill_stores: u32,
    /// Spill load bytes, counted as `spill_stores`.
    pub spill_loads: u32,
    /// Cumulative stack bytes (frame plus callees), when reported.
    pub cumulative_stack: Option<u32>,
}

/// Registers per thread above which [`resource_warnings`] warns: 128, at
/// most 512 ranks per SM (a full SM holds 2048 threads at 32 registers,
/// 1024 at 64). 128 is the project's ceiling for an MPI kernel (docs/gpu.md,
/// "Register budgets"): a kernel that sends, receives and reduces costs
/// 90-160 registers in the library's calls alone, so a lower threshold
/// would warn about nearly every kernel, with nothing its author could do
/// but set a budget (`[package.metadata.gpu-mpi.max-registers]`).
pub const WARN_REGISTERS: u32 = 128;
/// Stack frame bytes per thread above which [`resource_warnings`] warns:
/// 512, a frame that holds more than a few spilled values or small
/// arrays (a register budget of 128 spills 200-300 bytes in MPI kernels).
pub const WARN_STACK_BYTES: u32 = 512;
/// Registers of one SM (sm_70 to sm_90).
pub const SM_REGISTERS: u32 = 65_536;
/// Threads one SM holds at once (sm_80 and sm_90; sm_70 and sm_86 hold fewer).
pub const SM_THREADS: u32 = 2048;

/// Ranks (threads) one SM can hold when each uses `registers` registers:
/// registers are allocated per warp in units of 8 per thread (256 per
/// warp), so `65,536 / (registers rounded up to 8 × 32)` warps of 32, at
/// most [`SM_THREADS`].
pub fn ranks_per_sm(registers: u32) -> u32 {
    let per_warp = registers.max(1).next_multiple_of(8) * 32;
    (SM_REGISTERS / per_warp * 32).min(SM_THREADS)
}

/// One `cargo::warning` line (without the prefix) per kernel whose
/// registers exceed [`WARN_REGISTERS`] or whose stack frame exceeds
/// [`WARN_STACK_BYTES`] on any architecture of `kernels`, naming the worst
/// architecture's numbers and what they cost; kernels named in `quiet` are
/// left out.
pub fn resource_warnings(kernels: &[KernelResources], quiet: &[String]) -> Vec<String> {
    let mut names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    names.dedup();
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for name in names {
        if seen.contains(&name) || quiet.iter().any(|q| q == name) {
            continue;
        }
        seen.push(name);
        let mine = || kernels.iter().filter(move |k| k.name == name);
        let Some(regs) = mine().max_by_key(|k| k.registers) else {
            continue;
        };
        let Some(stack) = mine().max_by_key(|k| k.stack_frame) else {
            continue;
        };
        let heavy = regs.registers > WARN_REGISTERS;
        let deep = stack.stack_frame > WARN_STACK_BYTES;
        if !heavy && !deep {
            continue;
        }
        let mut line = format!(
            "kernel `{name}` uses {} registers ({}) and a {}-byte stack frame ({}) per rank:",
            regs.registers, regs.arch, stack.stack_frame, stack.arch
        );
        if heavy {
            let per_warp = regs.registers.next_multiple_of(8) * 32;
            let _ = write!(
                line,
                " at most {} ranks per SM ({SM_REGISTERS} registers / {per_warp} per warp; {WARN_REGISTERS} \
                 registers allow {}),",
                ranks_per_sm(regs.registers),
                ranks_per_sm(WARN_REGISTERS)
            );
        }
        if deep {
            let _ = write!(
                line,
                " its stack is local memory, every access a load or store through L1/L2 to device memory \
                 (keep large or O(ranks) arrays in the rank's scratch: WorldSpec::scratch_bytes, \
                 World::scratch),"
            );
        }
        let _ = write!(
            line,
            " warned above {WARN_REGISTERS} registers or {WARN_STACK_BYTES} stack bytes; quiet it with \
             `{name} = false` under [package.metadata.gpu-mpi.resource-warnings] in the kernel crate's Cargo.toml"
        );
        out.push(line);
    }
    out
}

/// `EIATTR_REGCOUNT`: the attribute of a cubin's `.nv.info` section that
/// gives a function's registers (its symbol's index, then the count).
const EIATTR_REGCOUNT: u8 = 0x2f;

/// The registers of every function of `cubin` that records them (a
/// relocatable cubin, `ptxas -c`, records one per function, each compiled
/// on its own; a whole-program one only its kernels), highest first:
/// `(symbol, registers)`. The counts are each function's own under the
/// call ABI, an upper bound on what it adds to a kernel that calls it
/// (a whole-program build may specialise it for less), which tells which
/// function of a kernel over its budget needs the registers.
pub fn function_registers(cubin: &[u8]) -> Result<Vec<(String, u32)>, String> {
    let u16_at = |o: usize| cubin.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        cubin
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        cubin
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    };
    let bad = || "not a 64-bit little-endian ELF cubin".to_string();
    if cubin.get(0..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return Err(bad());
    }
    let shoff = u64_at(0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(0x3c).ok_or_else(bad)? as usize;
    let shstrndx = u16_at(0x3e).ok_or_else(bad)? as usize;
    // (name offset, type, file offset, size, link) of each section.
    let mut sections = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        sections.push((
            u32_at(h).ok_or_else(bad)? as usize,
            u32_at(h + 4).ok_or_else(bad)?,
            u64_at(h + 0x18).ok_or_else(bad)? as usize,
            u64_at(h + 0x20).ok_or_else(bad)? as usize,
            u32_at(h + 0x28).ok_or_else(bad)? as usize,
        ));
    }
    let c_string = |at: usize| -> Option<String> {
        let rest = cubin.get(at..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    let names = sections.get(shstrndx).ok_or_else(bad)?.2;
    let section_named = |name: &str| {
        sections
            .iter()
            .find(|s| c_string(names + s.0).as_deref() == Some(name))
            .copied()
    };
    const SHT_SYMTAB: u32 = 2;
    let symtab = sections
        .iter()
        .find(|s| s.1 == SHT_SYMTAB)
        .copied()
        .ok_or("no symbol table")?;
    let strtab = sections.get(symtab.4).ok_or_else(bad)?.2;
    let Some(info) = section_named(".nv.info") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let (mut at, end) = (info.2, info.2 + info.3);
    while at + 2 <= end {
        let (format, attribute) = (cubin[at], cubin[at + 1]);
        at += 2;
        // EIFMT_NVAL (no value), EIFMT_BVAL (a byte), EIFMT_HVAL (two
        // bytes), EIFMT_SVAL (a 16-bit size, then that many bytes).
        let size = match format {
            1 => 0,
            2 => 1,
            3 => 2,
            4 => {
                let n = u16_at(at).ok_or_else(bad)? as usize;
                at += 2;
                n
            }
            f => return Err(format!("unknown .nv.info attribute format {f}")),
        };
        if format == 4 && attribute == EIATTR_REGCOUNT && size >= 8 {
            let symbol = u32_at(at).ok_or_else(bad)? as usize;
            let registers = u32_at(at + 4).ok_or_else(bad)?;
            let name_at = u32_at(symtab.2 + symbol * 24).ok_or_else(bad)? as usize;
            out.push((c_string(strtab + name_at).ok_or_else(bad)?, registers));
        }
        at += size;
    }
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// `ptx` without its `.maxnreg` lines: a relocatable assembly
/// ([`function_registers`]) fails where a budgeted kernel calls a
/// function that needs more than its budget.
pub fn without_register_budgets(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| !l.trim_start().starts_with(".maxnreg"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// One line per kernel of `kernels` (each architecture) that uses more
/// than `ceiling` registers per thread: what `ptx-check --max-registers`
/// fails on. The users' kernels (the examples, the tutorial, rsmpi's) are
/// held to [`WARN_REGISTERS`] so that none needs more than the project's
/// ceiling; a budget in the crate's manifest
/// (`[package.metadata.gpu-mpi.max-registers]`) brings one under it.
pub fn over_register_ceiling(kernels: &[KernelResources], ceiling: u32) -> Vec<String> {
    kernels
        .iter()
        .filter(|k| k.registers > ceiling)
        .map(|k| {
            format!(
                "{} ({}): {} registers, over the ceiling of {ceiling} ({} ranks per SM instead of {}); \
                 give it `{} = {ceiling}` under [package.metadata.gpu-mpi.max-registers]",
                k.name,
                k.arch,
                k.registers,
                ranks_per_sm(k.registers),
                ranks_per_sm(ceiling),
                k.name
            )
        })
        .collect()
}

/// The register budget (`.maxnreg N`, which the builder puts right after
/// the entry's parameters) of every kernel of `ptx` that has one.
pub fn register_budgets(ptx: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut entry: Option<String> = None;
    for line in ptx.lines() {
        let t = line.trim_start();
        if let Some(n) = t.strip_prefix(".maxnreg") {
            if let (Some(name), Ok(n)) = (entry.take(), n.trim().parse()) {
                out.push((name, n));
            }
        } else if t.starts_with('{') {
            // The body: the entry has no budget.
            entry = None;
        } else if let Some(name) = entries(line).pop() {
            entry = Some(name);
        }
    }
    out
}

/// One line per kernel of `kernels` assembled for sm_90 that spills at a
/// register budget below `ceiling`: what `ptx-check --max-registers`
/// fails on besides the ceiling. A budget under the ceiling is an
/// occupancy choice (64 registers: 1,024 ranks per SM), made where ptxas
/// fits the kernel without local memory on the GPUs the project measures
/// (sm_90); a change that makes it spill there must raise the budget or
/// say why the spill is worth its ranks, by naming the kernel in
/// `allowed` ([`budget_spills_allowed`]; the older architectures may
/// spill a little: docs/gpu.md). `budgets`: [`register_budgets`].
pub fn spilling_under_ceiling(
    kernels: &[KernelResources],
    budgets: &[(String, u32)],
    ceiling: u32,
    allowed: &[String],
) -> Vec<String> {
    kernels
        .iter()
        .filter(|k| k.arch == "sm_90" && k.spill_stores + k.spill_loads > 0)
        .filter(|k| !allowed.contains(&k.name))
        .filter_map(|k| {
            let (_, budget) = budgets.iter().find(|(name, b)| *name == k.name && *b < ceiling)?;
            Some(format!(
                "{} ({}): {}/{} bytes of spill stores/loads at its register budget of {budget}, \
                 under the ceiling of {ceiling}: raise its budget under \
                 [package.metadata.gpu-mpi.max-registers] until it does not spill",
                k.name, k.arch, k.spill_stores, k.spill_loads
            ))
        })
        .collect()
}

/// The kernels whose register budget a kernel crate's manifest text lets
/// spill ([`spilling_under_ceiling`]): `kernel = true` lines of its
/// `[package.metadata.gpu-mpi.budget-spills]` table.
pub fn budget_spills_allowed(manifest: &str) -> Vec<String> {
    kernels_marked(manifest, "budget-spills", "true")
}

/// The kernels a kernel crate's manifest text quiets:
/// `kernel = false` lines of its `[package.metadata.gpu-mpi.resource-warnings]`
/// table.
pub fn quiet_kernels(manifest: &str) -> Vec<String> {
    kernels_marked(manifest, "resource-warnings", "false")
}

/// The kernels of the `kernel = value` lines of a manifest text's
/// `[package.metadata.gpu-mpi.<table>]` table whose value is `value`.
fn kernels_marked(manifest: &str, table: &str, value: &str) -> Vec<String> {
    crate::metadata_table(manifest, table)
        .into_iter()
        .filter(|(_, v)| v == value)
        .map(|(k, _)| k)
        .collect()
}

/// Number right before `suffix` in `line` (`"24 bytes stack frame"`).
fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let i = line.find(suffix)?;
    line[..i].split_whitespace().last()?.parse().ok()
}

/// Parses the stderr of `ptxas -v`: one entry per compiled entry function.
/// ptxas compiles a kernel's callees for each kernel, under its register
/// budget, and reports each after the kernel's own lines: their spills
/// are added to the kernel's, their stack frames are in its cumulative
/// stack already.
pub fn parse_ptxas_verbose(text: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    let mut current: Option<usize> = None;
    let mut properties_for: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let mut it = rest.split('\'');
            let name = it.next().unwrap_or("").to_string();
            let arch = it.nth(1).unwrap_or("").to_string();
            out.push(KernelResources {
                name,
                arch,
                ..Default::default()
            });
            current = Some(out.len() - 1);
            properties_for = None;
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            properties_for = Some(rest.trim().to_string());
        } else if line.contains("bytes stack frame") {
            if let (Some(i), Some(f)) = (current, properties_for.take()) {
                let k = &mut out[i];
                if k.name == f {
                    k.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                }
                k.spill_stores += number_before(line, "bytes spill stores").unwrap_or(0);
                k.spill_loads += number_before(line, "bytes spill loads").unwrap_or(0);
            }
        } else if line.contains("Used ") && line.contains(" registers") {
            if let Some(i) = current {
                out[i].registers = number_before(line, " registers").unwrap_or(0);
                out[i].cumulative_stack = number_before(line, "bytes cumulative stack size");
            }
        }
    }
    out
}

/// How hard ptxas optimises an assembly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Optimization {
    /// ptxas's default (`-O3`): what every build script assembles and
    /// ships, and the resources the register budgets are read from.
    #[default]
    Full,
    /// `-Ofc max` (ptxas fast compile): every kernel is still parsed,
    /// checked, register-allocated and written out, so ptxas errors and
    /// resource limits still fail, in a fraction of the time (the
    /// conformance kernels' 36 MB of PTX: about 2 minutes of one core
    /// instead of 35-50), but the registers and stack reported are not
    /// those of the optimised SASS. `ptx-check --fast-compile`.
    FastCompile,
}

impl Optimization {
    fn ptxas_args(self) -> &'static [&'static str] {
        match self {
            Optimization::Full => &[],
            Optimization::FastCompile => &["-Ofc", "max"],
        }
    }
}

/// Result of assembling one PTX file for one architecture.
#[derive(Clone, Debug)]
pub struct Assembly {
    /// The PTX file.
    pub ptx: PathBuf,
    /// `sm_XX` it was assembled for.
    pub arch: String,
    /// How hard ptxas optimised it.
    pub optimization: Optimization,
    /// The cubin ptxas wrote ([`cubin_path`]); only meaningful when `error`
    /// is `None`.
    pub cubin: PathBuf,
    /// Per-kernel resources (empty when assembly failed).
    pub kernels: Vec<KernelResources>,
    /// `ptxas warning` lines.
    pub warnings: Vec<String>,
    /// `Some(message)` when ptxas failed.
    pub error: Option<String>,
}

/// Finds `ptxas`: `$PTXAS`, `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `PATH`,
/// `/usr/local/cuda/bin`, the `nvidia-cuda-nvcc-cu12` Python wheel, and the
/// link that `.ci/ptx-setup.sh` leaves in `${XDG_CACHE_HOME:-~/.cache}/gpu-mpi/bin`.
pub fn find_ptxas() -> Option<PathBuf> {
    let exe = if cfg!(windows) { "ptxas.exe" } else { "ptxas" };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("PTXAS") {
        candidates.push(PathBuf::from(p));
    }
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(d) = std::env::var_os(var) {
            candidates.push(Path::new(&d).join("bin").join(exe));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join(exe)));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin").join(exe));
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Some(found.clone());
    }
    for python in ["python3", "python"] {
        // The wheel's `nvidia` and `nvidia.cuda_nvcc` are namespace packages:
        // `__file__` is None, `__path__` is not.
        let out = Command::new(python)
            .args(["-c", "import nvidia.cuda_nvcc as m; print(list(m.__path__)[0])"])
            .output();
        if let Ok(out) = out {
            if out.status.success() {
                let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
                let p = Path::new(&dir).join("bin").join(exe);
                if p.is_file() {
                    return Some(p);
                }
            }
        }
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
    let p = cache.join("gpu-mpi").join("bin").join(exe);
    p.is_file().then_some(p)
}

/// `ptxas --version`'s last line (`Cuda compilation tools, release 12.9, V12.9.86`).
pub fn ptxas_version(ptxas: &Path) -> Option<String> {
    let out = Command::new(ptxas).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("release"))
        .or_else(|| text.lines().last())?;
    Some(line.trim().to_string())
}

/// Where [`assemble`] writes the cubin of `ptx` for `arch`: next to the PTX,
/// `kernels_sm70.ptx` giving `kernels_sm70.sm_80.cubin`.
pub fn cubin_path(ptx: &Path, arch: &str) -> PathBuf {
    ptx.with_extension(format!("{arch}.cubin"))
}

/// Assembles `ptx` for `arch` (`sm_70`) with `ptxas -v`, writing the cubin
/// next to the PTX ([`cubin_path`]): one ptxas run gives both the SASS and
/// the report. With a `cache` directory ([`AssemblyCache`]), a PTX text
/// assembled before by the same ptxas for the same SM at the same
/// `optimization` is not assembled again: its cubin and ptxas output come
/// from the cache.
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
    optimization: Optimization,
    cache: Option<&AssemblyCache>,
) -> Assembly {
    let cubin = cubin_path(ptx, arch);
    let mut a = Assembly {
        ptx: ptx.to_path_buf(),
        arch: arch.to_string(),
        optimization,
        cubin,
        kernels: Vec::new(),
        warnings: Vec::new(),
        error: None,
    };
    let text = match std::fs::read(ptx) {
        Ok(t) => t,
        Err(e) => {
            a.error = Some(format!("reading {}: {e}", ptx.display()));
            return a;
        }
    };
    let key = cache.map(|c| c.key(ptxas, arch, optimization, &text));
    if let (Some(c), Some(key)) = (cache, &key) {
        if let Some(output) = c.fetch(key, &a.cubin) {
            a.warnings = warnings(&output);
            a.kernels = parse_ptxas_verbose(&output);
            return a;
        }
    }
    let result = {
        let _slot = cache.map(AssemblyCache::slot);
        Command::new(ptxas)
            .arg(format!("-arch={arch}"))
            .args(optimization.ptxas_args())
            .arg("-v")
            .arg("-o")
            .arg(&a.cubin)
            .arg(ptx)
            .output()
    };
    match result {
        Err(e) => a.error = Some(format!("running {}: {e}", ptxas.display())),
        Ok(out) => {
            let output = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            a.warnings = warnings(&output);
            if out.status.success() {
                a.kernels = parse_ptxas_verbose(&output);
                if let (Some(c), Some(key)) = (cache, &key) {
                    c.store(key, &a.cubin, &output);
                }
            } else {
                let errors: Vec<&str> = output.lines().filter(|l| !l.starts_with("ptxas info")).collect();
                a.error = Some(format!(
                    "ptxas -arch={arch} failed ({}): {}",
                    out.status,
                    errors.join(" | ")
                ));
            }
        }
    }
    a
}

fn warnings(ptxas_output: &str) -> Vec<String> {
    ptxas_output
        .lines()
        .filter(|l| l.contains("ptxas warning"))
        .map(str::to_string)
        .collect()
}

/// Assembles every `(ptx, arch)` job, in parallel (ptxas on a module of many
/// inlined kernels takes minutes), returning the results in order. With a
/// cache, the ptxas processes of every build script and `ptx-check` that
/// share it are bounded together ([`PTXAS_JOBS_ENV`]).
pub fn assemble_all(
    ptxas: &Path,
    jobs: &[(PathBuf, String)],
    optimization: Optimization,
    cache: Option<&AssemblyCache>,
) -> Vec<Assembly> {
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(ptx, arch)| s.spawn(move || assemble(ptxas, ptx, arch, optimization, cache)))
            .collect();
        handles
            .into_iter()
            .zip(jobs)
            .map(|(h, (ptx, arch))| {
                h.join().unwrap_or_else(|_| Assembly {
                    ptx: ptx.clone(),
                    arch: arch.clone(),
                    optimization,
                    cubin: cubin_path(ptx, arch),
                    kernels: Vec::new(),
                    warnings: Vec::new(),
                    error: Some("the ptxas thread panicked".into()),
                })
            })
            .collect()
    })
}

/// Environment variable: how many ptxas processes may run at once among all
/// the builds that share one [`AssemblyCache`] (default: one per 6 GiB of
/// available memory, at most one per CPU, at least one).
pub const PTXAS_JOBS_ENV: &str = "GPU_MPI_PTXAS_JOBS";

/// A content-addressed store of ptxas results: the key is ptxas itself (its
/// path, size and modification time), the SM and the PTX text, so the build
/// scripts of every profile (release, clippy's, doc's) and `ptx-check` that
/// assemble the same PTX run ptxas once between them. The directory also
/// holds the lock files that bound how many ptxas processes run at once
/// ([`PTXAS_JOBS_ENV`]): ptxas on the conformance kernels takes about 6 GB.
#[derive(Clone, Debug)]
pub struct AssemblyCache {
    dir: PathBuf,
    slots: usize,
}

impl AssemblyCache {
    /// The cache in `dir` (created on first use).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        AssemblyCache {
            dir: dir.into(),
            slots: ptxas_jobs(),
        }
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn key(&self, ptxas: &Path, arch: &str, optimization: Optimization, ptx: &[u8]) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let ptxas = ptxas.canonicalize().unwrap_or_else(|_| ptxas.to_path_buf());
        ptxas.hash(&mut h);
        if let Ok(m) = std::fs::metadata(&ptxas) {
            m.len().hash(&mut h);
            m.modified().ok().hash(&mut h);
        }
        arch.hash(&mut h);
        optimization.hash(&mut h);
        ptx.len().hash(&mut h);
        ptx.hash(&mut h);
        format!("{arch}-{:016x}", h.finish())
    }

    /// Copies a cached cubin to `cubin`; its ptxas output, or `None` on a miss.
    fn fetch(&self, key: &str, cubin: &Path) -> Option<String> {
        let output = std::fs::read_to_string(self.dir.join(format!("{key}.log"))).ok()?;
        std::fs::copy(self.dir.join(format!("{key}.cubin")), cubin).ok()?;
        Some(output)
    }

    /// Stores a successful assembly. A failure to store only costs a later
    /// ptxas run; each file is renamed into place, so a reader never sees
    /// half of one, and the log (which `fetch` reads first) comes last.
    fn store(&self, key: &str, cubin: &Path, output: &str) {
        let _ = std::fs::create_dir_all(&self.dir);
        let tmp = |ext: &str| self.dir.join(format!("{key}.{ext}.tmp{}", std::process::id()));
        let put = |ext: &str, write: &dyn Fn(&Path) -> std::io::Result<()>| {
            let t = tmp(ext);
            let ok = write(&t).is_ok() && std::fs::rename(&t, self.dir.join(format!("{key}.{ext}"))).is_ok();
            if !ok {
                let _ = std::fs::remove_file(&t);
            }
            ok
        };
        if put("cubin", &|t| std::fs::copy(cubin, t).map(|_| ())) {
            put("log", &|t| std::fs::write(t, output));
        }
    }

    /// Waits for one of the cache's ptxas slots (a lock file held until the
    /// guard drops; the OS releases it should the process die). Without a
    /// usable lock file, ptxas runs unbounded rather than not at all.
    fn slot(&self) -> Option<std::fs::File> {
        std::fs::create_dir_all(&self.dir).ok()?;
        let files: Vec<std::fs::File> = (0..self.slots)
            .filter_map(|i| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(self.dir.join(format!("ptxas-slot-{i}.lock")))
                    .ok()
            })
            .collect();
        if files.is_empty() {
            return None;
        }
        loop {
            for f in &files {
                if f.try_lock().is_ok() {
                    return f.try_clone().ok();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// How many ptxas processes may run at once ([`PTXAS_JOBS_ENV`]).
pub fn ptxas_jobs() -> usize {
    if let Some(n) = std::env::var(PTXAS_JOBS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n.max(1);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let by_memory = available_memory_bytes().map_or(cpus, |b| (b / (6 << 30)) as usize);
    by_memory.clamp(1, cpus)
}

/// `MemAvailable` of /proc/meminfo (Linux); `None` elsewhere.
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Architectures to assemble for, each with the built PTX architecture it is
/// assembled from: the highest built one not above it.
pub fn assembly_plan(built: &[u32], check: &[u32]) -> Vec<(u32, u32)> {
    let mut plan = Vec::new();
    for &target in check {
        if let Some(&from) = built.iter().filter(|&&b| b <= target).max() {
            plan.push((from, target));
        }
    }
    plan
}

/// Formats the report: one row per kernel and architecture, then warnings,
/// errors and lint findings.
pub fn format_report(
    ptxas: Option<(&Path, Option<&str>)>,
    assemblies: &[Assembly],
    lint: &[(PathBuf, Vec<Violation>)],
) -> String {
    use std::fmt::Write;
    let mut r = String::new();
    let _ = writeln!(r, "gpu-mpi PTX report");
    match ptxas {
        Some((p, v)) => {
            let _ = writeln!(r, "ptxas: {} ({})", p.display(), v.unwrap_or("unknown version"));
        }
        None => {
            let _ = writeln!(
                r,
                "ptxas: not found (run .ci/ptx-setup.sh or set PTXAS); nothing assembled"
            );
        }
    }
    let rows: Vec<&KernelResources> = assemblies.iter().flat_map(|a| a.kernels.iter()).collect();
    if !rows.is_empty() {
        let w = rows.iter().map(|k| k.name.len()).max().unwrap_or(6).max(6);
        let _ = writeln!(
            r,
            "{:<w$}  {:<6}  {:>4}  {:>5}  {:>9}  {:>8}  {:>8}",
            "kernel", "arch", "regs", "stack", "cum.stack", "spill-st", "spill-ld"
        );
        for k in rows {
            let cum = k
                .cumulative_stack
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                r,
                "{:<w$}  {:<6}  {:>4}  {:>5}  {:>9}  {:>8}  {:>8}",
                k.name, k.arch, k.registers, k.stack_frame, cum, k.spill_stores, k.spill_loads
            );
        }
    }
    for a in assemblies {
        if a.optimization == Optimization::FastCompile {
            let _ = writeln!(
                r,
                "{} ({}): assembled with ptxas {} (fast compile): checked, but its registers and stack are not the optimised SASS's",
                a.ptx.display(),
                a.arch,
                a.optimization.ptxas_args().join(" ")
            );
        }
        for warning in &a.warnings {
            let _ = writeln!(r, "{} ({}): {}", a.ptx.display(), a.arch, warning.trim());
        }
        if let Some(e) = &a.error {
            let _ = writeln!(r, "ERROR {} ({}): {}", a.ptx.display(), a.arch, e);
        }
    }
    for (path, violations) in lint {
        if violations.is_empty() {
            let _ = writeln!(
                r,
                "lint {}: ok (every atom/red has explicit semantics, no .sys scope, no generic constant address)",
                path.display()
            );
        } else {
            let _ = writeln!(r, "lint {}: {} violation(s)", path.display(), violations.len());
            for v in violations {
                let _ = writeln!(r, "  {v}");
            }
        }
    }
    r
}

/// Names of the `.entry` functions in PTX text.
pub fn entries(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in ptx.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == ".entry" {
                if let Some(name) = words.next() {
                    out.push(name.split('(').next().unwrap_or(name).to_string());
                }
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(ptx: &str) -> Vec<(usize, Problem)> {
        lint(ptx).into_iter().map(|v| (v.line, v.problem)).collect()
    }

    #[test]
    fn shim_instructions_pass() {
        let ptx = r#"
//
// Generated by LLVM NVPTX Back-End
//
.version 7.0
.target sm_70
.address_size 64
.visible .entry ring(
	.param .u64 .ptr .align 1 ring_param_0
)
{
	.reg .pred 	%p<3>;
	// begin inline asm
	ld.acquire.gpu.u32 %r142, [%rd346];
	// end inline asm
	ld.relaxed.gpu.u64 %rd14, [%rd180];
	st.release.gpu.u32 [%rd116], %r276;
	st.relaxed.gpu.u32 [%rd218], %r81;
	atom.relaxed.gpu.add.u64 %rd311, [%rd121], %rd312;
	atom.acquire.gpu.cas.b32 %r130, [%rd310], %r384, %r131;
	atom.release.gpu.exch.b32 %r1, [%rd1], %r2;
	atom.acq_rel.gpu.or.b64 %rd1, [%rd2], %rd3;
	@%p1 atom.acq_rel.gpu.add.u32 %r1, [%rd1], %r2;
	red.release.gpu.global.add.u32 [%rd1], %r2;
	fence.acq_rel.gpu;
	membar.gl;
	barrier.sync 0;
	nanosleep.u32 %r119;
	{ .reg .pred %gpu_mpi_isg; isspacep.global %gpu_mpi_isg, %rd7; selp.u32 %r9, 1, 0, %gpu_mpi_isg; }
	redux.sync.add.u32 %r1, %r2, -1;
	ld.global.nc.u32 %r3, [%rd4];
	mov.u64 %rd5, %globaltimer;
$L__BB0_1:
	// atom.global.add.u32 %r1, [%rd1], 1;   (a comment, not code)
	/* red.global.add.u32 [%rd1], 1; */
	/* a block comment
	   atom.add.u32 %r1, [%rd1], 1;
	*/
	ret;
}
"#;
        assert_eq!(lint(ptx), vec![]);
    }

    #[test]
    fn unqualified_atomics_fail() {
        let ptx = "\
	atom.global.add.u32 %r1, [%rd1], %r2;
	@%p1 atom.add.u32 %r1, [%rd1], %r2;
	@!%p2 atom.global.cas.b32 %r1, [%rd1], %r2, %r3;
	red.global.add.u32 [%rd1], %r2;
$L__BB0_3: atom.shared.exch.b32 %r1, [%rd1], %r2;
	{ atom.gpu.or.b32 %r1, [%rd1], %r2; }
	atom.relaxed.gpu.add.u32 %r1, [%rd1], %r2; atom.inc.u32 %r1, [%rd1], %r2;
";
        assert_eq!(
            problems(ptx),
            vec![
                (1, Problem::UnqualifiedAtomic),
                (2, Problem::UnqualifiedAtomic),
                (3, Problem::UnqualifiedAtomic),
                (4, Problem::UnqualifiedAtomic),
                (5, Problem::UnqualifiedAtomic),
                (6, Problem::UnqualifiedAtomic),
                (7, Problem::UnqualifiedAtomic),
            ]
        );
        let v = lint("  atom.global.add.u32   %r1, [%rd1], %r2;");
        assert_eq!(v[0].instruction, "atom.global.add.u32 %r1, [%rd1], %r2");
    }

    #[test]
    fn the_constant_space_to_a_generic_address_fails() {
        let ptx = "\
	mov.u64 %rd3, gpu_mpi_descriptors;
	ld.const.b32 %r76, [%rd3+260];
	cvta.const.u64 %rd4, %rd3;
	cvta.to.const.u64 %rd5, %rd4;
	cvta.global.u64 %rd6, %rd7;
";
        assert_eq!(
            problems(ptx),
            vec![(3, Problem::GenericConstant), (4, Problem::GenericConstant)]
        );
    }

    #[test]
    fn system_scope_fails() {
        let ptx = "\
	ld.acquire.sys.global.u32 %r1, [%rd1];
	st.release.sys.u32 [%rd1], %r2;
	atom.acq_rel.sys.add.u32 %r1, [%rd1], %r2;
	fence.sc.sys;
	fence.acq_rel.sys;
	membar.sys;
	ld.relaxed.sys.u64 %rd1, [%rd2];
	ld.acquire.gpu.u32 %r1, [%rd1];
";
        assert_eq!(
            problems(ptx),
            (1..=7).map(|l| (l, Problem::SystemScope)).collect::<Vec<_>>()
        );
    }

    /// A stand-in ptxas that counts its runs and writes a cubin and a report.
    #[cfg(unix)]
    fn fake_ptxas(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("ptxas");
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> {runs}\nout=\"\"\nfor a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n\
             echo cubin > \"$out\"\n\
             echo \"ptxas info    : Compiling entry function 'k' for 'sm_90'\"\n\
             echo \"ptxas info    : Used 12 registers\"\n",
            runs = dir.join("runs").display()
        );
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn the_cache_assembles_each_ptx_text_once_per_sm() {
        let dir = std::env::temp_dir().join(format!("gpu-mpi-sass-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let ptxas = fake_ptxas(&dir);
        let runs = || std::fs::read_to_string(dir.join("runs")).map_or(0, |t| t.lines().count());
        let cache = AssemblyCache::new(dir.join("cache"));
        let (a, b) = (dir.join("a").join("k.ptx"), dir.join("b").join("k.ptx"));
        std::fs::write(&a, ".entry k").unwrap();
        std::fs::write(&b, ".entry k").unwrap();
        let first = assemble(&ptxas, &a, "sm_90", Optimization::Full, Some(&cache));
        assert_eq!(
            (first.error.as_deref(), first.kernels.len(), runs()),
            (None, 1, 1)
        );
        // The same text elsewhere (another profile's OUT_DIR): no ptxas run,
        // the cubin and the report all the same.
        let again = assemble(&ptxas, &b, "sm_90", Optimization::Full, Some(&cache));
        assert_eq!((again.kernels[0].registers, runs()), (12, 1));
        assert_eq!(std::fs::read_to_string(&again.cubin).unwrap(), "cubin\n");
        // Another SM, or other text: assembled.
        assemble(&ptxas, &b, "sm_80", Optimization::Full, Some(&cache));
        assert_eq!(runs(), 2);
        std::fs::write(&b, ".entry k2").unwrap();
        assemble(&ptxas, &b, "sm_90", Optimization::Full, Some(&cache));
        assert_eq!(runs(), 3);
        // Fast compile is not the optimised SASS: assembled, with -Ofc max,
        // and a build that wants the optimised SASS still gets it from the cache.
        let fast = assemble(&ptxas, &a, "sm_90", Optimization::FastCompile, Some(&cache));
        assert_eq!((fast.optimization, runs()), (Optimization::FastCompile, 4));
        let log = std::fs::read_to_string(dir.join("runs")).unwrap();
        assert!(
            log.lines().last().unwrap().starts_with("-arch=sm_90 -Ofc max -v"),
            "{log}"
        );
        assert!(!log.lines().next().unwrap().contains("-Ofc"), "{log}");
        assemble(&ptxas, &a, "sm_90", Optimization::Full, Some(&cache));
        assert_eq!(runs(), 4);
        // Without a cache, always.
        assemble(&ptxas, &a, "sm_90", Optimization::Full, None);
        assert_eq!(runs(), 5);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_ptxas_verbose() {
        let text = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'ring' for 'sm_70'
ptxas info    : Function properties for ring
    24 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 91 registers, used 1 barriers, 24 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 221.396 ms
ptxas info    : Function properties for _RNvNtCs_4core9panicking9panic_fmt
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _RNvNtCs_6engine9run_words
    16 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Compiling entry function 'pi' for 'sm_90'
ptxas info    : Function properties for pi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers
";
        let k = parse_ptxas_verbose(text);
        assert_eq!(
            k,
            vec![
                KernelResources {
                    name: "ring".into(),
                    arch: "sm_70".into(),
                    registers: 91,
                    stack_frame: 24,
                    // Its own and its callee `run_words`'.
                    spill_stores: 16,
                    spill_loads: 24,
                    cumulative_stack: Some(24),
                },
                KernelResources {
                    name: "pi".into(),
                    arch: "sm_90".into(),
                    registers: 40,
                    ..Default::default()
                },
            ]
        );
    }

    #[test]
    fn plan_and_entries() {
        assert_eq!(
            assembly_plan(&[70, 90], &[70, 80, 90]),
            vec![(70, 70), (70, 80), (90, 90)]
        );
        assert_eq!(assembly_plan(&[80], &[70, 80]), vec![(80, 80)]);
        let ptx = ".visible .entry ring(\n.param .u64 a\n)\n.func foo()\n.visible .entry pi_reduce(\n\
                   .visible .entry k(.param .u64 p)\n";
        assert_eq!(entries(ptx), ["ring", "pi_reduce", "k"]);
    }

    fn resources(name: &str, arch: &str, registers: u32, stack_frame: u32) -> KernelResources {
        KernelResources {
            name: name.into(),
            arch: arch.into(),
            registers,
            stack_frame,
            ..Default::default()
        }
    }

    #[test]
    fn ranks_per_sm_follow_the_register_file_in_units_of_eight() {
        assert_eq!(ranks_per_sm(32), 2048);
        assert_eq!(ranks_per_sm(64), 1024);
        assert_eq!(ranks_per_sm(128), 512);
        // 155 is allocated as 160: 65536 / 5120 = 12 warps.
        assert_eq!(ranks_per_sm(155), 384);
        assert_eq!(ranks_per_sm(255), 256);
        assert_eq!(ranks_per_sm(0), 2048);
    }

    #[test]
    fn function_registers_reads_each_regcount_attribute_of_a_cubin() {
        // A minimal ELF64: null, .shstrtab, .strtab, .symtab, .nv.info.
        let shstrtab = b"\0.shstrtab\0.strtab\0.symtab\0.nv.info\0".to_vec();
        let strtab = b"\0kernel\0helper\0".to_vec();
        let mut symtab = vec![0u8; 24 * 3];
        symtab[24..28].copy_from_slice(&1u32.to_le_bytes());
        symtab[48..52].copy_from_slice(&8u32.to_le_bytes());
        let mut info = Vec::new();
        info.extend_from_slice(&[1, 0x1b]); // an attribute without a value
        info.extend_from_slice(&[2, 0x10, 7]); // one with a byte
        for (symbol, registers) in [(1u32, 40u32), (2, 130)] {
            info.extend_from_slice(&[4, EIATTR_REGCOUNT, 8, 0]);
            info.extend_from_slice(&symbol.to_le_bytes());
            info.extend_from_slice(&registers.to_le_bytes());
        }
        info.extend_from_slice(&[4, 0x12, 4, 0, 9, 9, 9, 9]); // another, sized
        let bodies = [&shstrtab, &strtab, &symtab, &info];
        let mut elf = vec![0u8; 64];
        elf[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
        let mut offsets = Vec::new();
        for b in bodies {
            offsets.push(elf.len());
            elf.extend_from_slice(b);
        }
        let shoff = elf.len();
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&5u16.to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        elf.extend_from_slice(&[0u8; 64]);
        // (name in .shstrtab, type, body, link)
        for (k, (name, kind, link)) in [(1u32, 3u32, 0u32), (11, 3, 0), (19, 2, 2), (27, 0x7000_0000, 3)]
            .into_iter()
            .enumerate()
        {
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(offsets[k] as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(bodies[k].len() as u64).to_le_bytes());
            h[0x28..0x2c].copy_from_slice(&link.to_le_bytes());
            elf.extend_from_slice(&h);
        }
        let got = function_registers(&elf).unwrap();
        assert_eq!(got, vec![("helper".to_string(), 130), ("kernel".to_string(), 40)]);
        assert!(function_registers(b"not an elf").is_err());
        assert_eq!(
            without_register_budgets(".entry k(\n)\n.maxnreg 128\n{\n}\n"),
            ".entry k(\n)\n{\n}\n"
        );
    }

    #[test]
    fn the_register_ceiling_names_each_kernel_and_architecture_over_it() {
        let kernels = [
            resources("at", "sm_90", 128, 0),
            resources("over", "sm_70", 250, 944),
            resources("over", "sm_90", 248, 944),
        ];
        let lines = over_register_ceiling(&kernels, 128);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "over (sm_70): 250 registers, over the ceiling of 128 (256 ranks per SM instead of 512)"
            ),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("over (sm_90): 248 registers"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("`over = 128`"), "{}", lines[1]);
        assert!(over_register_ceiling(&kernels, 255).is_empty());
    }

    #[test]
    fn budgets_below_the_ceiling_must_not_spill_on_sm_90() {
        let ptx = ".visible .entry low(\n\t.param .u64 low_param_0\n)  // @low\n.maxnreg 64\n{\n}\n\
                   .visible .entry free(\n)\n{\n}\n\
                   .visible .entry high(\n)\n.maxnreg 128\n{\n}\n";
        let budgets = register_budgets(ptx);
        assert_eq!(budgets, vec![("low".to_string(), 64), ("high".to_string(), 128)]);
        let spilling = |name: &str, arch: &str, stores: u32| KernelResources {
            spill_stores: stores,
            spill_loads: stores / 2,
            ..resources(name, arch, 64, 0)
        };
        let kernels = [
            spilling("low", "sm_70", 28),
            spilling("low", "sm_90", 0),
            spilling("high", "sm_90", 40),
            spilling("free", "sm_90", 8),
        ];
        // Only a spill on sm_90 under a budget below the ceiling fails.
        assert!(spilling_under_ceiling(&kernels, &budgets, 128, &[]).is_empty());
        let kernels = [spilling("low", "sm_90", 12)];
        let lines = spilling_under_ceiling(&kernels, &budgets, 128, &[]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0]
                .starts_with("low (sm_90): 12/6 bytes of spill stores/loads at its register budget of 64"),
            "{}",
            lines[0]
        );
        // A budget at the ceiling is the ceiling's business: spills allowed.
        assert!(spilling_under_ceiling(&kernels, &budgets, 64, &[]).is_empty());
        // And so is a spill the manifest allows.
        let manifest = "[package]\nname = \"k\"\n\n[package.metadata.gpu-mpi.budget-spills]\n\
                        low = true # the thesis's kernel\nother = false\n";
        let allowed = budget_spills_allowed(manifest);
        assert_eq!(allowed, vec!["low".to_string()]);
        assert!(spilling_under_ceiling(&kernels, &budgets, 128, &allowed).is_empty());
    }

    #[test]
    fn resource_warnings_name_the_worst_architecture_and_skip_quiet_kernels() {
        let kernels = [
            resources("light", "sm_70", 64, 0),
            resources("heavy", "sm_70", 161, 192),
            resources("heavy", "sm_90", 155, 600),
            resources("deep", "sm_90", 40, 99_688),
            resources("quiet", "sm_90", 240, 4096),
            resources("light", "sm_90", 128, 512),
        ];
        let w = resource_warnings(&kernels, &["quiet".to_string()]);
        assert_eq!(w.len(), 2, "{w:#?}");
        assert!(
            w[0].starts_with(
                "kernel `heavy` uses 161 registers (sm_70) and a 600-byte stack frame (sm_90) per rank: \
                 at most 384 ranks per SM (65536 registers / 5376 per warp; 128 registers allow 512), \
                 its stack is local memory"
            ),
            "{}",
            w[0]
        );
        assert!(w[0].contains("World::scratch"), "{}", w[0]);
        assert!(
            w[0].ends_with("`heavy = false` under [package.metadata.gpu-mpi.resource-warnings] in the kernel crate's Cargo.toml"),
            "{}",
            w[0]
        );
        assert!(
            w[1].starts_with("kernel `deep` uses 40 registers (sm_90) and a 99688-byte stack frame (sm_90) per rank: its stack"),
            "{}",
            w[1]
        );
        assert!(!w[1].contains("ranks per SM"), "{}", w[1]);
    }

    #[test]
    fn quiet_kernels_are_the_false_lines_of_their_table() {
        let manifest = "[package]\nname = \"k\"\n\n[package.metadata.gpu-mpi.resource-warnings]\n\
                        # a big table on purpose\nlookup = false\nother = true\n\n[dependencies]\nx = false\n";
        assert_eq!(quiet_kernels(manifest), ["lookup"]);
    }
}
