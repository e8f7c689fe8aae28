//! The user's template, `templates/my-kernels`, as a user takes it: copied
//! out of the tree into a temporary directory, pointed at this checkout,
//! built (its build.rs compiles the kernel crate with the kernel builder),
//! run on the CPU backend, its PTX linted and (when ptxas is found) checked
//! for SASS; then built again on a machine that lacks the nightly toolchain
//! and may not install it, which must still build and run on the CPU.
//!
//! A second test follows docs/first-program.md from another copy: each
//! command the page gives, each edit it asks for, and the output it quotes
//! (without PTX).
//!
//! Both tests build in `target/template-test` (and the nested nvptx64 builds
//! in `target/gpu-mpi-ptx`), one after the other ([`TARGET`]): the second
//! compiles only the copy's own crates, not the library and its
//! dependencies again (both tests 143 -> 77 s on a 2-core machine), and
//! reruns are incremental.

use gpu_mpi::builder::check;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let dest = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// The template copied to a fresh temporary directory, its two paths
/// pointing at this checkout, with this checkout's lock file (the same
/// dependency versions, nothing new to download).
fn copy_template(name: &str) -> PathBuf {
    let root = checkout();
    let dir = std::env::temp_dir().join(format!("gpu-mpi-template-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&root.join("templates").join("my-kernels"), &dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    // The device's path first: the checkout's path is its prefix.
    let pointed = text
        .replace(
            "path = \"../../device\"",
            &format!("path = {:?}", root.join("device").display().to_string()),
        )
        .replace(
            "path = \"../..\"",
            &format!("path = {:?}", root.display().to_string()),
        );
    assert_ne!(
        text, pointed,
        "the template's Cargo.toml no longer has the paths this test rewrites"
    );
    std::fs::write(&manifest, pointed).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

fn target_dir() -> PathBuf {
    checkout().join("target").join("template-test")
}

/// Held by each test for as long as it builds and runs in [`target_dir`]:
/// both write `release/my-app`.
static TARGET: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`TARGET`], also after the other test failed holding it.
fn hold_target() -> std::sync::MutexGuard<'static, ()> {
    TARGET.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `cargo build --release` of the copy, with `env` added.
fn build(dir: &Path, env: &[(&str, &str)]) -> Output {
    cargo(dir, &["build", "--release"], env)
}

/// `cargo <args> --offline` in the copy, with `env` added; it must succeed.
fn cargo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    gpu_mpi::builder::clear_cargo_env(&mut cmd);
    cmd.current_dir(dir)
        .args(args)
        .arg("--offline")
        .env("CARGO_TARGET_DIR", target_dir())
        .env(
            "GPU_MPI_PTX_TARGET_DIR",
            checkout().join("target").join("gpu-mpi-ptx"),
        )
        .env_remove("GPU_MPI_SKIP_PTX")
        .env_remove("GPU_MPI_PTX_TOOLCHAIN")
        .env_remove("GPU_MPI_AUTO_INSTALL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?} in the template failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Asserts that a cargo command printed no warning.
fn no_warning(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{what} warned:\n{stderr}");
}

fn run_app(args: &[&str]) -> Output {
    let out = Command::new(target_dir().join("release").join("my-app"))
        .args(args)
        .output()
        .expect("my-app runs");
    assert!(
        out.status.success(),
        "my-app {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The newest `gpu_mpi_kernels.rs` that the template's build script wrote.
fn generated_expression() -> String {
    let build = target_dir().join("release").join("build");
    let newest = std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("my-app-"))
        .map(|e| e.path().join("out").join(gpu_mpi::builder::GENERATED_FILE))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("the build script wrote its expression");
    std::fs::read_to_string(newest).unwrap()
}

/// The paths inside `macro!("...")` in the expression.
fn paths_in(expression: &str, macro_name: &str) -> Vec<PathBuf> {
    expression
        .split(&format!("{macro_name}!(\""))
        .skip(1)
        .map(|rest| PathBuf::from(&rest[..rest.find('"').unwrap()]))
        .collect()
}

#[test]
fn the_template_builds_runs_and_ships_checked_kernels_from_a_copy() {
    let _target = hold_target();
    let dir = copy_template("build");

    // 1. A normal build: PTX for sm_70 and sm_90, SASS where ptxas is found;
    // no warning (the kernel stays within the builder's resource limits,
    // the manifests ask for nothing cargo ignores), nor from `cargo test`.
    no_warning(&build(&dir, &[]), "cargo build --release");
    no_warning(&cargo(&dir, &["test", "--release"], &[]), "cargo test --release");
    let out = run_app(&["cpu", "1000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "halo exchange: 1000 ranks x 4 cells, 8 steps, cpu backend\nstep 1: largest change 34.25\n"
        ) && stdout.contains("the cells match the sequential computation"),
        "{stdout}"
    );
    // `auto` without a GPU: the emulator, with the one-line notice.
    let out = run_app(&["auto", "64"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("64 ranks x 4 cells"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("using the cpu backend"));

    let expression = generated_expression();
    // `built_without` is None: the build made kernels.
    assert!(expression.trim_end().ends_with("None,\n)"), "{expression}");
    let ptx = paths_in(&expression, "include_str");
    let ptx: Vec<&PathBuf> = ptx
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    assert_eq!(ptx.len(), 2, "PTX for sm_70 and sm_90: {expression}");
    for p in &ptx {
        let text = std::fs::read_to_string(p).unwrap();
        // Only the user's kernel: nothing of the project's own suites.
        assert_eq!(check::entries(&text), vec!["halo".to_string()], "{}", p.display());
        assert_eq!(check::lint(&text), Vec::new(), "{}", p.display());
    }
    let sass = paths_in(&expression, "include_bytes");
    match check::find_ptxas() {
        Some(_) => {
            assert_eq!(sass.len(), 3, "SASS for sm_70, sm_80 and sm_90: {expression}");
            for cubin in &sass {
                let bytes = std::fs::read(cubin).unwrap();
                assert_eq!(&bytes[..4], b"\x7fELF", "{}", cubin.display());
            }
            let report =
                std::fs::read_to_string(paths_in(&expression, "include_str").last().unwrap()).unwrap();
            assert!(!report.contains("ERROR"), "{report}");
            assert!(
                report
                    .lines()
                    .any(|l| l.starts_with("halo") && l.contains("sm_90")),
                "{report}"
            );
        }
        None => {
            assert!(sass.is_empty(), "no ptxas, no SASS: {expression}");
            eprintln!("ptxas not found: the template's SASS is not checked");
        }
    }

    // 2. A machine without the nightly toolchain that may not install it:
    // the build still succeeds with one warning naming the command, and the
    // program runs on the CPU backend.
    let out = build(
        &dir,
        &[
            ("GPU_MPI_PTX_TOOLCHAIN", "nightly-1970-01-01"),
            ("GPU_MPI_AUTO_INSTALL", "0"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: my-app"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("building without GPU kernels")
            && warnings[0]
                .contains("rustup toolchain install nightly-1970-01-01 --profile minimal --component rust-src,llvm-tools"),
        "{}",
        warnings[0]
    );
    assert!(
        generated_expression().trim_end().ends_with("\"),\n)"),
        "built_without is Some(reason)"
    );
    let out = run_app(&["auto", "64"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("the cells match"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("built without GPU kernels"), "{stderr}");

    let _ = std::fs::remove_dir_all(&dir);
}

/// What `cargo run --release --offline -- <args>` in the copy printed and
/// its exit status; the page's runs build no PTX (the test above checks
/// it), which changes nothing they print.
fn page_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    gpu_mpi::builder::clear_cargo_env(&mut cmd);
    cmd.current_dir(dir)
        .args(["run", "--release", "--offline", "--"])
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("GPU_MPI_SKIP_PTX", "1")
        .env_remove("GPU_MPI_TRACE")
        .env_remove("GPU_MPI_STACK_BYTES");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("warning"),
        "cargo run {args:?} warned:\n{stderr}"
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        out.status.code(),
    )
}

/// Replaces `from` (which must be there once) with `to` in the copy's file.
fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{file} has not one {from:?}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

/// The blocks of docs/first-program.md: `(info string, text)`.
fn page_blocks() -> Vec<(String, String)> {
    let page = std::fs::read_to_string(checkout().join("docs").join("first-program.md")).unwrap();
    let mut blocks = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
            blocks.push((info.to_string(), body.join("\n") + "\n"));
        }
    }
    blocks
}

/// The page's blocks of `info` that contain `needle`; there must be one.
fn block(blocks: &[(String, String)], info: &str, needle: &str) -> String {
    let found: Vec<&String> = blocks
        .iter()
        .filter(|(i, b)| i == info && b.contains(needle))
        .map(|(_, b)| b)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "docs/first-program.md: one {info} block with {needle:?}"
    );
    found[0].clone()
}

/// docs/first-program.md, step by step from a fresh copy: every command
/// it gives, the edits it asks for, and the output it quotes.
#[test]
fn the_first_program_page_runs_step_by_step() {
    let _target = hold_target();
    let dir = copy_template("page");
    let blocks = page_blocks();
    let one_line = |needle: &str| block(&blocks, "text", needle).trim_end().to_string();
    let rust = |needle: &str| block(&blocks, "rust", needle).trim().to_string();

    // 2. Run it.
    assert!(blocks
        .iter()
        .any(|(i, b)| i == "sh" && b == "cargo run --release -- cpu 64\n"));
    let (stdout, _, code) = page_run(&dir, &["cpu", "64"], &[]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout, block(&blocks, "text", "halo exchange: 64 ranks"));

    // 4. Too little scratch: MPI_ERR_NO_MEM on every rank.
    let scratch = ".scratch_bytes(8 * u64::from(CELLS_PER_RANK))";
    edit(&dir, "host/src/main.rs", scratch, ".scratch_bytes(0)");
    let (_, stderr, code) = page_run(&dir, &["cpu", "64"], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("64 of 64 ranks failed"), "{stderr}");
    assert!(stderr.contains(&one_line("MPI_ERR_NO_MEM: 32 bytes")), "{stderr}");
    edit(&dir, "host/src/main.rs", ".scratch_bytes(0)", scratch);

    // 5. A deliberate deadlock: a receive of tag 1, which no rank sends.
    let exchange = rust("&mut left_ghost, &left, 0)?;");
    let deadlocking = rust("&mut left_ghost, &left, 1)?;");
    edit(&dir, "kernels/src/lib.rs", &exchange, &deadlocking);
    let (_, stderr, code) = page_run(&dir, &["cpu", "8"], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("deadlock"), "{stderr}");
    assert!(
        stderr.contains("rank 1: send_receive(source 0, tag 1)"),
        "{stderr}"
    );
    assert!(stderr.contains(&one_line("hint: rank 1 waits")), "{stderr}");
    edit(&dir, "kernels/src/lib.rs", &deadlocking, &exchange);

    // 6. A trace.
    let (_, stderr, code) = page_run(&dir, &["cpu", "8"], &[("GPU_MPI_TRACE", "halo.json")]);
    assert_eq!(code, Some(0));
    let quoted = one_line("trace: ");
    assert!(stderr.contains(&quoted), "{stderr}");
    let json = std::fs::read_to_string(dir.join("halo.json")).unwrap();
    assert!(json.starts_with('{') || json.starts_with('['), "{json:.80}");
    assert!(dir.join("halo.html").is_file());

    // 7. The explorer: one outcome for the correct program ...
    let (stdout, _, code) = page_run(&dir, &["explore", "100"], &[]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout, block(&blocks, "text", "explore: 8 ranks"));
    // ... and, with the planted ANY_SOURCE bug, outcomes whose seeds replay them.
    let exact = rust("&mut right_ghost, &right, 0)?;");
    let planted = rust("&world.any_process(), 0)?;");
    edit(&dir, "kernels/src/lib.rs", &exact, &planted);
    let (stdout, _, code) = page_run(&dir, &["explore", "100"], &[]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("differs from the default schedule"), "{stdout}");
    let quoted = one_line("replay: cargo run --release -- replay SEED 8");
    let (head, tail) = quoted.trim().split_once("SEED").unwrap();
    // The first outcome that differs: its seed, and its message's lines.
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with(head))
        .unwrap();
    let seed = lines[at].trim_start()[head.len()..]
        .strip_suffix(tail)
        .unwrap()
        .trim();
    let start = lines[..at]
        .iter()
        .rposition(|l| l.starts_with("outcome "))
        .unwrap();
    let kind = lines[start]
        .split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let message: Vec<&str> = lines[start + 1..at].iter().map(|l| l.trim_start()).collect();
    for _ in 0..2 {
        let (again, _, code) = page_run(&dir, &["replay", seed, "8"], &[]);
        assert_eq!(code, Some(1), "{again}");
        let again: Vec<&str> = again.lines().map(|l| l.trim_start()).collect();
        assert_eq!(again[0], format!("seed {seed}: {kind}"));
        assert_eq!(again[1..], message[..], "seed {seed}");
    }

    let _ = std::fs::remove_dir_all(&dir);
}
