//! The architecture's invariants (docs/architecture.md, "Invariants"),
//! checked on the source text the way rust-analyzer's `tidy.rs` checks its
//! own: no test here runs a kernel.
//!
//! - The modules of `gpu-mpi-device` and of `gpu-mpi-host` stand in layers;
//!   a module imports only from layers below its own, never from a sibling
//!   or from above, so neither crate has an import cycle.
//! - `cfg(target_arch)` appears only in the device crate's shim.
//! - The kernel builder links the constant-bank copy of the world's header
//!   under the name and at the size the device library and the cuda
//!   backend use.
//!
//! An import is any `crate::NAME` path in code (comments and `#[cfg(test)]`
//! modules left out; `crate::{a, b::c}` counts each name). `KNOWN_UPWARD`
//! lists the upward imports that remain to be removed: the test fails on any
//! other, and on a listed one that is gone (so the list only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// gpu-mpi-device, bottom to top. Modules in one layer must not import
/// each other.
const DEVICE_LAYERS: &[&[&str]] = &[
    &["layout"],
    &["shim"],
    &["intrinsics"],
    &["records"],
    &["datatype"],
    &["status"],
    &["codes"],
    &["error"],
    &["typemap"],
    &["trace"],
    &["slot_return"],
    &["polling"],
    &["engine"],
    &["communicator"],
    &["buffers"],
    &["point_to_point"],
    &["nonblocking"],
    &["request"],
    &["collective"],
    &["creation"],
    &["kernel"],
    &["derived"],
    &["view"],
    &["window"],
    &["traits"],
];

/// Upward imports of gpu-mpi-device not yet removed: none left.
const DEVICE_KNOWN_UPWARD: &[(&str, &str)] = &[];

/// gpu-mpi-host, bottom to top.
const HOST_LAYERS: &[&[&str]] = &[
    &["images", "datatype", "schedule", "deadlock", "model"],
    &["error"],
    &["report"],
    &["spec"],
    &["trace"],
    &["launch"],
    &["backend"],
    &["cpu", "cuda"],
    &["distributed"],
    &["device"],
    &["pack", "explore"],
];

/// Upward imports of gpu-mpi-host not yet removed (issue 26): none left.
const HOST_KNOWN_UPWARD: &[(&str, &str)] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments (line and block) and without the contents
/// of string literals (raw ones included).
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let ident_before = i > 0 && (b[i - 1] == b'_' || b[i - 1].is_ascii_alphanumeric());
        if c == b'r' && !ident_before && matches!(b.get(i + 1), Some(b'"' | b'#')) {
            let hashes = b[i + 1..].iter().take_while(|&&h| h == b'#').count();
            if b.get(i + 1 + hashes) == Some(&b'"') {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let body = i + 2 + hashes;
                let end = b[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| body + p + close.len());
                out.push_str("\"\"");
                i = end;
                continue;
            }
        }
        if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"' or '{'.
            out.push_str("' '");
            i += 3;
        } else if c == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // An escaped char literal such as '\'' or '\\'.
            let end = b[i + 2..]
                .iter()
                .position(|&q| q == b'\'')
                .map_or(b.len(), |p| i + 3 + p);
            out.push_str("' '");
            i = end;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    out
}

/// Whether a `cfg` predicate holds only in tests (`test`, `all(test, ..)`).
fn test_only(predicate: &str) -> bool {
    let p: String = predicate.split_whitespace().collect();
    p == "test" || p.starts_with("all(test,")
}

/// The code without test-only items (`#[cfg(test)]`, `#[cfg(all(test, ..))]`
/// on a module or function, to its matching brace).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(") {
        let after = &rest[at..];
        let close = after.find(")]").unwrap_or(after.len());
        if !test_only(&after["#[cfg(".len()..close]) {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        }
        out.push_str(&rest[..at]);
        let Some(open) = after.find(['{', ';']) else {
            rest = "";
            break;
        };
        if after.as_bytes()[open] == b';' {
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The first path segments after every `crate::` (not `$crate::`).
fn crate_imports(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(k) = code[from..].find("crate::") {
        let at = from + k;
        from = at + "crate::".len();
        let before = at.checked_sub(1).map(|p| b[p]);
        if before.is_some_and(|c| c == b'$' || c == b'_' || c.is_ascii_alphanumeric()) {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: depth-0 items up to `::`, `,` or `}`.
            let mut depth = 0usize;
            let mut item = String::new();
            let mut taken = false;
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !taken && !item.is_empty() {
                            names.insert(item.clone());
                        }
                        item.clear();
                        taken = false;
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && !taken {
                    if ch.is_alphanumeric() || ch == '_' {
                        item.push(ch);
                    } else if !item.is_empty() {
                        names.insert(std::mem::take(&mut item));
                        taken = true;
                    }
                }
            }
            if !item.is_empty() && !taken {
                names.insert(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// Each top-level module of the crate in `src` and the top-level modules it
/// imports (itself excluded).
fn module_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = without_tests(&strip_comments(&text));
        let entry = graph.entry(module.clone()).or_default();
        for name in crate_imports(&code) {
            if name != module {
                entry.insert(name);
            }
        }
    }
    graph
}

/// Checks one crate against its layers; the violations, one line each.
fn check_layers(crate_name: &str, src: &Path, layers: &[&[&str]], known: &[(&str, &str)]) -> Vec<String> {
    let graph = module_imports(src);
    let layer_of = |m: &str| layers.iter().position(|l| l.contains(&m));
    let mut problems = Vec::new();
    for module in graph.keys() {
        if layer_of(module).is_none() {
            problems.push(format!(
                "{crate_name}: module `{module}` is in no layer (add it to the list in tests/architecture.rs and to docs/architecture.md)"
            ));
        }
    }
    let mut upward = BTreeSet::new();
    for (from, targets) in &graph {
        let Some(lf) = layer_of(from) else { continue };
        for to in targets {
            // Names that are not modules (macros, re-exported items) are not edges.
            let Some(lt) = layer_of(to) else { continue };
            if lt >= lf {
                upward.insert((from.clone(), to.clone()));
            }
        }
    }
    for (from, to) in &upward {
        if !known.contains(&(from.as_str(), to.as_str())) {
            problems.push(format!(
                "{crate_name}: `{from}` imports `{to}`, which is not below it (docs/architecture.md, \"Invariants\")"
            ));
        }
    }
    for (from, to) in known {
        if !upward.contains(&(from.to_string(), to.to_string())) {
            problems.push(format!(
                "{crate_name}: `{from}` no longer imports `{to}`: remove the pair from the known upward imports"
            ));
        }
    }
    problems
}

#[test]
fn device_modules_import_only_from_layers_below() {
    let problems = check_layers(
        "gpu-mpi-device",
        &root().join("device").join("src"),
        DEVICE_LAYERS,
        DEVICE_KNOWN_UPWARD,
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn host_modules_import_only_from_layers_below() {
    let problems = check_layers(
        "gpu-mpi-host",
        &root().join("host").join("src"),
        HOST_LAYERS,
        HOST_KNOWN_UPWARD,
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Every module file of the crate in `src` (`a`, `a::b`) and the module
/// files it imports through `crate::` and `super::` paths.
fn file_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let name = |f: &Path| {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into())
            .collect();
        if parts.last().is_some_and(|l| l == "mod") {
            parts.pop();
        }
        parts.join("::")
    };
    let modules: BTreeSet<String> = files.iter().map(|f| name(f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let me = name(file);
        if me == "lib" || me == "main" {
            continue;
        }
        let code = without_tests(&strip_comments(&std::fs::read_to_string(file).unwrap()));
        let parent: Vec<&str> = me
            .rsplit_once("::")
            .map_or(vec![], |(p, _)| p.split("::").collect());
        let mut targets = BTreeSet::new();
        for (prefix, base) in [("crate::", vec![]), ("super::", parent)] {
            let mut from = 0;
            while let Some(k) = code[from..].find(prefix) {
                let at = from + k;
                from = at + prefix.len();
                let before = at.checked_sub(1).map(|p| code.as_bytes()[p]);
                if before.is_some_and(|c| c == b'$' || c == b'_' || c == b':' || c.is_ascii_alphanumeric()) {
                    continue;
                }
                let path: String = code[from..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut segs: Vec<&str> = base.clone();
                segs.extend(path.split("::").filter(|s| !s.is_empty()));
                // The longest prefix that names a module file.
                if let Some(t) = (1..=segs.len())
                    .rev()
                    .map(|n| segs[..n].join("::"))
                    .find(|c| modules.contains(c))
                {
                    if t != me {
                        targets.insert(t);
                    }
                }
            }
        }
        graph.insert(me, targets);
    }
    graph
}

/// The cycles of a graph: its strongly connected components of more than
/// one node.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for t in graph.get(&n).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|k| (k, reach(k))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for a in graph.keys() {
        let scc: Vec<String> = graph
            .keys()
            .filter(|b| *b == a || (reaches[a].contains(*b) && reaches[*b].contains(a)))
            .cloned()
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

/// The layers above are of top-level modules; inside one (`collective`
/// and its files) a file must not import its parent or a sibling that
/// imports it back either.
#[test]
fn no_module_file_is_in_an_import_cycle() {
    for krate in ["device", "host"] {
        let found = cycles(&file_imports(&root().join(krate).join("src")));
        assert!(found.is_empty(), "import cycles in {krate}/src: {found:?}");
    }
}

#[test]
fn target_arch_appears_only_in_the_shim() {
    let root = root();
    let shim = root.join("device").join("src").join("shim");
    let mut files = Vec::new();
    for dir in [
        "device",
        "host",
        "src",
        "check",
        "bench",
        "examples",
        "templates",
        "ptx-builder",
        "provenance",
        "tests",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&shim)) {
        let code = strip_comments(&std::fs::read_to_string(file).unwrap());
        // This file names the word in its checks.
        if file.ends_with("tests/architecture.rs") {
            continue;
        }
        if code.contains("target_arch") {
            found.push(file.strip_prefix(&root).unwrap().display().to_string());
        }
    }
    assert!(
        found.is_empty(),
        "cfg(target_arch) outside device/src/shim (the shim selects the target; docs/architecture.md): {found:?}"
    );
}

#[test]
fn the_scanner_reads_imports_as_rustc_would() {
    let code = without_tests(&strip_comments(
        "use crate::{a::X, b, c::{d, e}};\n// crate::commented\n/* crate::block */\n\
         fn f() { crate::g::h(); $crate::macro_only(); let s = \"crate::in_string\"; }\n\
         const R: &str = r#\"crate::raw \" crate::raw2\"#; let q = '\\'';\n\
         #[cfg(test)]\nmod tests { use crate::tested; }\nuse crate::after;\n\
         #[cfg(all(test, not(loom)))]\nmod more { use crate::tested_too; }\n\
         #[cfg(not(test))]\nuse crate::kept;",
    ));
    let names: Vec<String> = crate_imports(&code).into_iter().collect();
    assert_eq!(names, ["a", "after", "b", "c", "g", "kept"]);
}

#[test]
fn builder_and_library_agree_on_the_descriptors() {
    use gpu_mpi::device::abi::layout::{DESCRIPTORS_SYMBOL, HEADER_BYTES};
    assert_eq!(gpu_mpi::builder::DESCRIPTORS_SYMBOL, DESCRIPTORS_SYMBOL);
    assert_eq!(gpu_mpi::builder::DESCRIPTORS_BYTES, HEADER_BYTES);
}
