//! What a kernel's registers are made of when it calls functions
//! (`ptx-check --calls KERNEL`).
//!
//! In a whole-program assembly ptxas keeps a caller's values that live
//! across a call in registers the callee does not use, so that neither
//! saves them: a kernel that calls a function needs about the callee's
//! registers plus its own live values, not the larger of the two, and
//! the sums add down a chain of calls (docs/gpu.md, "What costs
//! registers"). Two assemblies of rewritten PTX text separate the parts:
//! the kernel with the bodies of every function it calls replaced by a
//! bare return ([`with_stubbed_bodies`]: its own need), and an entry of
//! its own that only calls one function with arguments loaded from
//! memory ([`with_probe_entry`]: that function's need with its callees).
//! Both keep the one kernel and drop the module's other entries
//! ([`with_entries_only`]), so that ptxas compiles what the kernel
//! reaches and nothing else.
//!
//! The text is LLVM's NVPTX output: a definition's header runs from its
//! `.entry` or `.func` line to a line that is `{` (a declaration's ends
//! with `;`), its body to the next line that is `}`.

/// The name of the entry [`with_probe_entry`] adds.
pub const PROBE_ENTRY: &str = "gpu_mpi_probe";

/// A function or kernel defined (not only declared) in PTX text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// Its name.
    pub name: String,
    /// A kernel (`.entry`), else a `.func`.
    pub entry: bool,
    /// Index of its first header line.
    pub first: usize,
    /// Index of its body's opening `{` line.
    pub open: usize,
    /// Index of its body's closing `}` line.
    pub close: usize,
    /// Its return value's declaration (`.param .b64 func_retval0`), if any.
    pub ret: Option<String>,
    /// Its parameters' declarations, in order.
    pub params: Vec<String>,
}

/// The PTX symbol `text` starts with (empty if none).
fn leading_symbol(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect()
}

/// The name after `.entry` or `.func` (and a return declaration) on `line`,
/// with whether it is an entry.
fn declared_name(line: &str) -> Option<(String, bool)> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let mut words = t.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == ".entry" || w == ".func" {
            let entry = w == ".entry";
            let rest: String = words.collect::<Vec<_>>().join(" ");
            // `.func (.param .b64 func_retval0) name(`: past the return.
            let rest = if rest.starts_with('(') {
                rest.split_once(')')
                    .map(|(_, r)| r.trim_start().to_string())
                    .unwrap_or_default()
            } else {
                rest
            };
            let name = leading_symbol(&rest);
            return (!name.is_empty()).then_some((name, entry));
        }
        if !w.starts_with('.') {
            return None;
        }
    }
    None
}

/// Every definition of `ptx`, in order.
pub fn definitions(ptx: &str) -> Vec<Definition> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((name, entry)) = declared_name(lines[i]) else {
            i += 1;
            continue;
        };
        let first = i;
        let header_start = lines[i];
        let ret = header_start
            .split_once('(')
            .filter(|_| !entry && header_start.contains("func_retval0"))
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(d, _)| d.trim().to_string());
        let mut params = Vec::new();
        let mut j = i + 1;
        let mut open = None;
        while j < lines.len() {
            let t = lines[j].trim();
            if t == "{" {
                open = Some(j);
                break;
            }
            if t.ends_with(';') || declared_name(lines[j]).is_some() {
                break;
            }
            if let Some(p) = t
                .strip_suffix(',')
                .or(Some(t))
                .filter(|p| p.starts_with(".param"))
            {
                params.push(p.to_string());
            }
            j += 1;
        }
        let Some(open) = open else {
            i = j.max(i + 1);
            continue;
        };
        let Some(close) = (open + 1..lines.len()).find(|&k| lines[k] == "}") else {
            break;
        };
        out.push(Definition {
            name,
            entry,
            first,
            open,
            close,
            ret,
            params,
        });
        i = close + 1;
    }
    out
}

/// The functions `func`'s body calls, in order of first call.
pub fn direct_callees(ptx: &str, func: &str) -> Vec<String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let Some(d) = definitions(ptx).into_iter().find(|d| d.name == func) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for line in &lines[d.open..d.close] {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("call") else {
            continue;
        };
        // `call.uni (retval0), name, (params);` or `call.uni name, (...);`
        let rest = rest
            .trim_start_matches(|c: char| c != ' ' && c != '\t')
            .trim_start();
        let rest = if rest.starts_with('(') {
            rest.split_once("),").map(|(_, r)| r.trim_start()).unwrap_or("")
        } else {
            rest
        };
        let name = leading_symbol(rest);
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every function `func` reaches through calls (its callees, theirs, and
/// so on), each once, nearest first: direct callees in order of first
/// call, then theirs.
pub fn reachable(ptx: &str, func: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut next = 0;
    let mut frontier = direct_callees(ptx, func);
    loop {
        for f in frontier.drain(..) {
            if f != func && !out.contains(&f) {
                out.push(f);
            }
        }
        let Some(f) = out.get(next) else {
            return out;
        };
        frontier = direct_callees(ptx, f);
        next += 1;
    }
}

/// A bare body for `d`: returns at once (a scalar return value 0).
fn stub_body(d: &Definition) -> Vec<String> {
    let mut body = vec!["{".to_string()];
    if let Some(ty) = d.ret.as_deref().and_then(scalar_type) {
        body.push(format!("\tst.param.{ty} \t[func_retval0], 0;"));
    }
    body.push("\tret;".to_string());
    body.push("}".to_string());
    body
}

/// The type of a scalar `.param` declaration (`.param .b64 x` -> `b64`),
/// `None` for an array (`.param .align 8 .b8 x[24]`).
fn scalar_type(declaration: &str) -> Option<&str> {
    let words: Vec<&str> = declaration.split_whitespace().collect();
    if declaration.contains('[') || words.first() != Some(&".param") {
        return None;
    }
    words.get(1).and_then(|t| t.strip_prefix('.'))
}

/// `ptx` with the body of every `.func` whose name `stub` accepts replaced
/// by a bare return: what a kernel needs without those callees.
pub fn with_stubbed_bodies(ptx: &str, stub: impl Fn(&str) -> bool) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for d in definitions(ptx).into_iter().filter(|d| !d.entry && stub(&d.name)) {
        out.extend(lines[next..d.open].iter().map(|l| l.to_string()));
        out.extend(stub_body(&d));
        next = d.close + 1;
    }
    out.extend(lines[next..].iter().map(|l| l.to_string()));
    out.join("\n") + "\n"
}

/// `ptx` without the definitions of its entries other than `keep` (none
/// for `None`), and without register budgets.
pub fn with_entries_only(ptx: &str, keep: Option<&str>) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for d in definitions(ptx)
        .into_iter()
        .filter(|d| d.entry && Some(d.name.as_str()) != keep)
    {
        out.extend(&lines[next..d.first]);
        next = d.close + 1;
    }
    out.extend(&lines[next..]);
    crate::check::without_register_budgets(&(out.join("\n") + "\n"))
}

/// `ptx` without its entries, plus an entry [`PROBE_ENTRY`] that loads
/// `func`'s arguments from the memory its one parameter points to and
/// calls it (storing a scalar result back), so that ptxas assembles
/// `func` and its callees under a caller that keeps nothing live across
/// the call. `None` when `ptx` does not define `func`.
pub fn with_probe_entry(ptx: &str, func: &str) -> Option<String> {
    let d = definitions(ptx)
        .into_iter()
        .find(|d| d.name == func && !d.entry)?;
    // The callee's name for a parameter replaced by the caller's.
    let renamed = |decl: &str, to: &str| {
        let name = decl.split_whitespace().last().unwrap_or("");
        decl.replacen(name.split('[').next().unwrap_or(name), to, 1)
    };
    let (mut declarations, mut loads, mut stores) = (Vec::new(), Vec::new(), Vec::new());
    let mut offset = 0usize;
    for (k, decl) in d.params.iter().enumerate() {
        let local = format!("param{k}");
        declarations.push(format!("\t{};", renamed(decl, &local)));
        match scalar_type(decl) {
            Some(ty) => {
                // Every scalar from a 64-bit word of memory, converted to
                // its width: no argument is a constant ptxas could fold.
                let r = format!("%rd{}", k + 3);
                loads.push(format!("\tld.global.u64 \t{r}, [%rd1+{offset}];"));
                let value = match ty {
                    "b64" | "u64" | "s64" | "f64" => r,
                    "b32" | "u32" | "s32" | "f32" => {
                        stores.push(format!("\tcvt.u32.u64 \t%r1, {r};"));
                        "%r1".to_string()
                    }
                    _ => {
                        stores.push(format!("\tcvt.u16.u64 \t%rs1, {r};"));
                        "%rs1".to_string()
                    }
                };
                stores.push(format!("\tst.param.{ty} \t[{local}], {value};"));
                offset += 8;
            }
            None => {
                // An array: its bytes, each from a byte of memory.
                let bytes: usize = decl
                    .split('[')
                    .nth(1)
                    .and_then(|n| n.trim_end_matches(']').parse().ok())
                    .unwrap_or(0);
                for b in 0..bytes {
                    stores.push(format!("\tld.global.u8 \t%rs1, [%rd1+{offset}];"));
                    stores.push(format!("\tst.param.b8 \t[{local}+{b}], %rs1;"));
                    offset += 1;
                }
            }
        }
    }
    let args: Vec<String> = (0..d.params.len()).map(|k| format!("param{k}")).collect();
    let mut call = Vec::new();
    match d.ret.as_deref() {
        Some(r) => {
            declarations.push(format!("\t{};", renamed(r, "retval0")));
            call.push(format!("\tcall.uni (retval0), {func}, ({});", args.join(", ")));
            if let Some(ty) = scalar_type(r) {
                let (reg, width) = if ty.ends_with("64") {
                    ("%rd2", "u64")
                } else {
                    ("%r1", "u32")
                };
                call.push(format!("\tld.param.{ty} \t{reg}, [retval0];"));
                call.push("\t}".to_string());
                call.push(format!("\tst.global.{width} \t[%rd1], {reg};"));
            } else {
                call.push("\t}".to_string());
            }
        }
        None => {
            call.push(format!("\tcall.uni {func}, ({});", args.join(", ")));
            call.push("\t}".to_string());
        }
    }
    let mut p = vec![
        format!(".visible .entry {PROBE_ENTRY}(.param .u64 {PROBE_ENTRY}_args)"),
        "{".to_string(),
        "\t.reg .b16 \t%rs<2>;".to_string(),
        "\t.reg .b32 \t%r<2>;".to_string(),
        format!("\t.reg .b64 \t%rd<{}>;", d.params.len() + 4),
        format!("\tld.param.u64 \t%rd1, [{PROBE_ENTRY}_args];"),
        "\tcvta.to.global.u64 \t%rd1, %rd1;".to_string(),
    ];
    p.extend(loads);
    p.push("\t{".to_string());
    p.extend(declarations);
    p.extend(stores);
    p.extend(call);
    p.push("\tret;".to_string());
    p.push("}".to_string());
    Some(with_entries_only(ptx, None) + &p.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//
// Generated by LLVM NVPTX Back-End
//
.version 7.0
.target sm_70
.address_size 64

.func  (.param .b64 func_retval0) helper
(
\t.param .b64 helper_param_0,
\t.param .b32 helper_param_1
)
;
.func cold
(
\t.param .align 8 .b8 cold_param_0[12]
)
;
.visible .entry kernel(
\t.param .u64 .ptr .align 1 kernel_param_0
)
.maxnreg 64
{
\t.reg .b64 \t%rd<4>;

\tld.param.b64 \t%rd1, [kernel_param_0];
\t{ // callseq 0, 0
\t.param .b64 param0;
\t.param .b32 param1;
\t.param .b64 retval0;
\tst.param.b64 \t[param0], %rd1;
\tst.param.b32 \t[param1], 3;
\tcall.uni (retval0), helper, (param0, param1);
\tld.param.b64 \t%rd2, [retval0];
\t} // callseq 0
\t{ // callseq 1, 0
\t.param .align 8 .b8 param0[12];
\tcall.uni cold, (param0);
\t} // callseq 1
\tret;

}
.visible .entry other(
\t.param .u64 .ptr .align 1 other_param_0
)
{
\tret;

}
.func  (.param .b64 func_retval0) helper(
\t.param .b64 helper_param_0,
\t.param .b32 helper_param_1
)
{
\t.reg .b64 \t%rd<3>;

\tld.param.b64 \t%rd1, [helper_param_0];
\tld.global.b64 \t%rd2, [%rd1];
\tst.param.b64 \t[func_retval0], %rd2;
\tret;

}
.func cold(
\t.param .align 8 .b8 cold_param_0[12]
)
{
\tret;

}
";

    #[test]
    fn definitions_are_bodies_and_declarations_are_not() {
        let d = definitions(PTX);
        let names: Vec<(&str, bool)> = d.iter().map(|d| (d.name.as_str(), d.entry)).collect();
        assert_eq!(
            names,
            [
                ("kernel", true),
                ("other", true),
                ("helper", false),
                ("cold", false)
            ]
        );
        let helper = &d[2];
        assert_eq!(helper.ret.as_deref(), Some(".param .b64 func_retval0"));
        assert_eq!(
            helper.params,
            [".param .b64 helper_param_0", ".param .b32 helper_param_1"]
        );
        assert_eq!(d[3].params, [".param .align 8 .b8 cold_param_0[12]"]);
        assert_eq!(d[3].ret, None);
        let lines: Vec<&str> = PTX.lines().collect();
        assert_eq!(lines[helper.open], "{");
        assert_eq!(lines[helper.close], "}");
        assert!(lines[helper.close - 2].contains("ret;"));
    }

    #[test]
    fn a_kernels_direct_callees_are_named_once_in_order() {
        assert_eq!(direct_callees(PTX, "kernel"), ["helper", "cold"]);
        assert!(direct_callees(PTX, "helper").is_empty());
        assert!(direct_callees(PTX, "missing").is_empty());
    }

    /// `kernel` calls `a`; `a` calls `b` then `c`; `b` calls `c` and `a`
    /// (a cycle); `c` calls nothing.
    const CHAIN: &str = ".version 7.0
.target sm_70
.address_size 64

.visible .entry kernel(
\t.param .u64 kernel_param_0
)
{
\tcall.uni a, ();
\tret;
}
.func a(
)
{
\tcall.uni b, ();
\tcall.uni c, ();
\tret;
}
.func b(
)
{
\tcall.uni c, ();
\tcall.uni a, ();
\tret;
}
.func c(
)
{
\tret;
}
";

    #[test]
    fn reachable_functions_are_named_once_nearest_first() {
        assert_eq!(reachable(CHAIN, "kernel"), ["a", "b", "c"]);
        // A function reaches itself through the cycle but is not listed.
        assert_eq!(reachable(CHAIN, "a"), ["b", "c"]);
        assert_eq!(reachable(CHAIN, "b"), ["c", "a"]);
        assert!(reachable(CHAIN, "c").is_empty());
        assert!(reachable(CHAIN, "missing").is_empty());
        assert_eq!(reachable(PTX, "kernel"), ["helper", "cold"]);
    }

    #[test]
    fn a_stubbed_function_returns_zero_and_keeps_its_header() {
        let s = with_stubbed_bodies(PTX, |n| n == "helper");
        let d = definitions(&s);
        let helper = d.iter().find(|d| d.name == "helper").unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            &lines[helper.open..=helper.close],
            ["{", "\tst.param.b64 \t[func_retval0], 0;", "\tret;", "}"]
        );
        assert!(!s.contains("ld.global.b64 \t%rd2, [%rd1];"));
        // The rest is untouched: the kernel, the other function.
        assert!(s.contains("\tcall.uni (retval0), helper, (param0, param1);"));
        assert_eq!(d.len(), 4);
        let cold = with_stubbed_bodies(PTX, |n| n == "cold");
        assert!(cold.contains("ld.global.b64 \t%rd2, [%rd1];"));
    }

    #[test]
    fn only_the_kept_entry_stays_and_budgets_go() {
        let s = with_entries_only(PTX, Some("kernel"));
        let names: Vec<String> = definitions(&s).into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["kernel", "helper", "cold"]);
        assert!(!s.contains(".maxnreg"));
        let none = with_entries_only(PTX, None);
        assert!(definitions(&none).iter().all(|d| !d.entry));
    }

    #[test]
    fn a_probe_calls_the_function_with_arguments_from_memory() {
        let s = with_probe_entry(PTX, "helper").unwrap();
        let d = definitions(&s);
        let entries: Vec<&str> = d.iter().filter(|d| d.entry).map(|d| d.name.as_str()).collect();
        assert_eq!(entries, [PROBE_ENTRY]);
        assert_eq!(direct_callees(&s, PROBE_ENTRY), ["helper"]);
        assert!(s.contains("\t.param .b64 param0;"));
        assert!(s.contains("\t.param .b32 param1;"));
        assert!(s.contains("\tld.global.u64 \t%rd4, [%rd1+8];"));
        assert!(s.contains("\tst.param.b32 \t[param1], %r1;"));
        assert!(s.contains("\tcall.uni (retval0), helper, (param0, param1);"));
        assert!(s.contains("\tst.global.u64 \t[%rd1], %rd2;"));
        let cold = with_probe_entry(PTX, "cold").unwrap();
        assert!(cold.contains("\t.param .align 8 .b8 param0[12];"));
        assert!(cold.contains("\tst.param.b8 \t[param0+11], %rs1;"));
        assert!(cold.contains("\tcall.uni cold, (param0);"));
        assert!(with_probe_entry(PTX, "kernel").is_none());
        assert!(with_probe_entry(PTX, "missing").is_none());
    }

    /// The rewritten texts are PTX that ptxas accepts (where it is found:
    /// CI installs it), with the entries each should have.
    #[test]
    fn ptxas_assembles_the_rewritten_texts() {
        let Some(ptxas) = crate::check::find_ptxas() else {
            eprintln!("no ptxas: the rewritten texts are not assembled");
            return;
        };
        let dir = std::env::temp_dir().join(format!("gpu-mpi-calls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            ("kernel", with_entries_only(PTX, Some("kernel"))),
            (
                "kernel",
                with_stubbed_bodies(&with_entries_only(PTX, Some("kernel")), |_| true),
            ),
            (PROBE_ENTRY, with_probe_entry(PTX, "helper").unwrap()),
            (PROBE_ENTRY, with_probe_entry(PTX, "cold").unwrap()),
        ];
        for (i, (entry, text)) in cases.iter().enumerate() {
            let path = dir.join(format!("case{i}.ptx"));
            std::fs::write(&path, text).unwrap();
            let a = crate::check::assemble(&ptxas, &path, "sm_70", crate::check::Optimization::Full, None);
            assert_eq!(a.error, None, "case {i}:\n{text}");
            let names: Vec<&str> = a.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, [*entry], "case {i}");
            assert!(a.kernels[0].registers > 0, "case {i}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
