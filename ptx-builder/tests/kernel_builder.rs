//! `KernelBuilder` end to end, without a GPU: `cargo build` of a user-like
//! project (tests/fixtures/app: a host crate whose build.rs calls the
//! builder, and a kernel crate without any nightly attribute), checking the
//! generated expression; and the fallback when the toolchain is missing.
//!
//! Each test has its own target directory under `<target>/builder-tests`, so
//! reruns are incremental; the nested nvptx64 builds share
//! `<target>/gpu-mpi-ptx` with the workspace's own build (one `core` per SM).

use gpu_mpi_ptx_builder::{check, Toolchain, GENERATED_FILE};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app")
}

/// The workspace's target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .to_path_buf()
}

/// `cargo build` of the fixture into `<target>/builder-tests/<name>`, with
/// the outer cargo's environment cleared and `vars` set.
fn build_fixture(name: &str, vars: &[(&str, &str)]) -> (Output, PathBuf) {
    let app = fixture();
    // The fixture is its own workspace: start its lock file from gpu-mpi's,
    // so that it resolves to the crates already downloaded.
    let lock = app.join("Cargo.lock");
    if !lock.is_file() {
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"), &lock)
            .expect("seeding the fixture's Cargo.lock");
    }
    let target = target_dir().join("builder-tests").join(name);
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    gpu_mpi_ptx_builder::clear_cargo_env(&mut cmd);
    for var in [
        "GPU_MPI_SKIP_PTX",
        "GPU_MPI_PTX_ARCHS",
        "GPU_MPI_PTX_CHECK_ARCHS",
        "GPU_MPI_AUTO_INSTALL",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(["build", "--manifest-path"])
        .arg(app.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env("GPU_MPI_PTX_TARGET_DIR", target_dir().join("gpu-mpi-ptx"))
        .envs(vars.iter().copied());
    let out = cmd.output().expect("running cargo");
    (out, target)
}

/// The newest generated expression file under `target`.
fn generated(target: &Path) -> String {
    let build = target.join("debug/build");
    let newest = std::fs::read_dir(&build)
        .expect("the build directory")
        .filter_map(|e| {
            let p = e.ok()?.path().join("out").join(GENERATED_FILE);
            let t = std::fs::metadata(&p).ok()?.modified().ok()?;
            Some((t, p))
        })
        .max()
        .expect("a generated expression file");
    std::fs::read_to_string(newest.1).unwrap()
}

/// The paths in `include_str!("...")` / `include_bytes!("...")` of `kind`.
fn included(expr: &str, kind: &str) -> Vec<PathBuf> {
    expr.split(&format!("{kind}!(\""))
        .skip(1)
        .map(|rest| PathBuf::from(rest.split("\")").next().unwrap()))
        .collect()
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run_fixture(target: &Path) -> String {
    let out = Command::new(target.join("debug/gpu-mpi-builder-fixture"))
        .output()
        .expect("running the fixture");
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn builds_ptx_and_cubins_of_a_kernel_crate_without_nightly_attributes() {
    if std::env::var("GPU_MPI_SKIP_PTX").is_ok_and(|v| !v.is_empty() && v != "0") {
        eprintln!("skipped: GPU_MPI_SKIP_PTX is set");
        return;
    }
    let toolchain = std::env::var("GPU_MPI_PTX_TOOLCHAIN").unwrap_or_else(|_| "nightly".into());
    if let Err(gap) = Toolchain::probe(&toolchain) {
        eprintln!(
            "skipped: {} is missing (bash .ci/ptx-setup.sh installs it)",
            gap.what(&toolchain)
        );
        return;
    }
    let (out, target) = build_fixture("full", &[("GPU_MPI_AUTO_INSTALL", "0")]);
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("building without GPU kernels"), "{log}");
    let expr = generated(&target);
    assert!(expr.trim_end().ends_with("None,\n)"), "{expr}");

    let ptx = included(&expr, "include_str");
    // The sm_70 PTX, then the report.
    assert_eq!(ptx.len(), 2, "{expr}");
    assert!(ptx[0].ends_with("kernels_sm70.ptx"), "{expr}");
    let text70 = std::fs::read_to_string(&ptx[0]).unwrap();
    assert_eq!(
        check::entries(&text70),
        [
            "builder_fixture_lookup",
            "builder_fixture_quiet_lookup",
            "builder_fixture_who"
        ]
    );
    let report = std::fs::read_to_string(&ptx[1]).unwrap();

    let cubins = included(&expr, "include_bytes");
    if check::find_ptxas().is_some() {
        assert!(expr.contains("(\"sm_70\", include_bytes!("), "{expr}");
        assert!(expr.contains("(\"sm_80\", include_bytes!("), "{expr}");
        assert_eq!(cubins.len(), 2, "{expr}");
        for c in &cubins {
            assert!(
                std::fs::read(c).unwrap().starts_with(b"\x7fELF"),
                "{}",
                c.display()
            );
        }
        assert!(
            report.contains("builder_fixture_who") && report.contains("sm_80"),
            "{report}"
        );
        // One resource warning: the lookup's stack frame, not its quieted
        // twin's, nor the small kernel's.
        let warnings: Vec<&str> = log.lines().filter(|l| l.contains("gpu-mpi: kernel `")).collect();
        assert_eq!(warnings.len(), 1, "{log}");
        let w = warnings[0];
        assert!(
            w.contains(
                "warning: gpu-mpi-builder-fixture@0.0.0: gpu-mpi: kernel `builder_fixture_lookup` uses "
            ),
            "{w}"
        );
        let stack: u32 = w
            .split("-byte stack frame")
            .next()
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no stack size in {w}"));
        assert!(stack > check::WARN_STACK_BYTES, "{w}");
        assert!(
            w.contains("its stack is local memory") && w.contains("World::scratch"),
            "{w}"
        );
        assert!(
            w.contains("`builder_fixture_lookup = false` under [package.metadata.gpu-mpi.resource-warnings]"),
            "{w}"
        );
    } else {
        eprintln!("ptxas not found: PTX only");
        assert!(cubins.is_empty(), "{expr}");
        assert!(!log.contains("gpu-mpi: kernel `"), "{log}");
    }

    let run = run_fixture(&target);
    assert!(run.contains("ptx sm_70 ") && run.contains(", 3 entries"), "{run}");
    assert!(run.contains("built_without None"), "{run}");
}

#[test]
fn a_missing_toolchain_builds_without_kernels_and_says_how_to_install_it() {
    let (out, target) = build_fixture(
        "fallback",
        &[
            ("GPU_MPI_PTX_TOOLCHAIN", "nightly-1970-01-01"),
            ("GPU_MPI_AUTO_INSTALL", "0"),
        ],
    );
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("gpu-mpi:")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    let command =
        "rustup toolchain install nightly-1970-01-01 --profile minimal --component rust-src,llvm-tools";
    assert!(warnings[0].contains(&format!("`{command}`")), "{log}");
    assert!(warnings[0].contains("GPU_MPI_AUTO_INSTALL=0"), "{log}");

    let expr = generated(&target);
    assert!(expr.contains("&[],\n    &[],"), "{expr}");
    assert!(
        expr.contains("Some(\"the Rust `nightly-1970-01-01` toolchain is missing"),
        "{expr}"
    );
    let run = run_fixture(&target);
    assert!(
        run.contains("built_without Some(") && run.contains(command),
        "{run}"
    );
    assert!(!run.contains("ptx sm_"), "{run}");
}

#[cfg(unix)]
#[test]
fn a_failed_install_is_announced_then_builds_without_kernels() {
    use std::os::unix::fs::PermissionsExt;
    // A rustup without toolchains whose installs fail (as offline).
    let dir = target_dir().join("builder-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let rustup = dir.join("failing-rustup.sh");
    std::fs::write(
        &rustup,
        "#!/bin/sh\n\
         case \"$1\" in\n\
           run) echo \"error: toolchain is not installed\" >&2; exit 1;;\n\
           *) echo \"error: could not download: no network here\" >&2; exit 1;;\n\
         esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&rustup, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, target) = build_fixture(
        "install",
        &[
            ("RUSTUP", rustup.to_str().unwrap()),
            ("GPU_MPI_PTX_TOOLCHAIN", "nightly-offline"),
        ],
    );
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    let command =
        "rustup toolchain install nightly-offline --profile minimal --component rust-src,llvm-tools";
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("gpu-mpi:")).collect();
    assert_eq!(warnings.len(), 2, "{log}");
    assert!(
        warnings[0].contains(&format!(
            "gpu-mpi: installing the Rust `nightly-offline` toolchain for the GPU kernels: `{command}`"
        )),
        "{log}"
    );
    assert!(warnings[1].contains("building without GPU kernels"), "{log}");
    assert!(warnings[1].contains("no network here"), "{log}");
    assert!(warnings[1].contains(&format!("run `{command}`")), "{log}");
    assert!(generated(&target).contains("Some(\"the Rust `nightly-offline` toolchain is missing and"));
}
