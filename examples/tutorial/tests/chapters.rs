//! Runs every chapter of the tutorial (docs/tutorial/) on the cpu backend
//! through the `tutorial` binary, and checks that every output block a
//! chapter quotes (a ```text block after a `<!-- tutorial N -->` line) is
//! exactly what chapter N prints. A block after `<!-- tutorial N
//! VAR=value -->` is what chapter N prints with that environment variable
//! set (chapter 8's timing mode: `GPU_MPI_MODEL=h100`); every other run has
//! `GPU_MPI_MODEL` unset.

use std::path::PathBuf;
use std::process::Command;

/// What `tutorial N` prints with the environment variable `env` (name,
/// value) set, and whether it exited successfully.
fn run_chapter(n: u32, env: Option<&(String, String)>) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tutorial"));
    command.arg(n.to_string()).env_remove("GPU_MPI_MODEL");
    if let Some((name, value)) = env {
        command.env(name, value);
    }
    let out = command.output().expect("the tutorial binary runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf-8 output"),
        String::from_utf8(out.stderr).expect("utf-8 errors"),
    )
}

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/tutorial")
}

/// A quoted block: its file, the chapter, the environment variable it was
/// printed with, the text.
type Quote = (String, u32, Option<(String, String)>, String);

/// Every block quoted in the tutorial's markdown files.
fn quoted_blocks() -> Vec<Quote> {
    let mut blocks = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(docs())
        .expect("docs/tutorial exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("readable markdown");
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(marker) = line
                .strip_prefix("<!-- tutorial ")
                .and_then(|r| r.strip_suffix(" -->"))
            else {
                continue;
            };
            let (n, env) = match marker.split_once(' ') {
                Some((n, assignment)) => {
                    let (var, value) = assignment
                        .split_once('=')
                        .unwrap_or_else(|| panic!("{name}: bad marker {line:?}"));
                    (n, Some((var.to_string(), value.to_string())))
                }
                None => (marker, None),
            };
            let n: u32 = n
                .parse()
                .unwrap_or_else(|_| panic!("{name}: bad marker {line:?}"));
            assert_eq!(
                lines.next(),
                Some("```text"),
                "{name}: a ```text block must follow {line:?}"
            );
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((name.clone(), n, env, block.join("\n") + "\n"));
        }
    }
    blocks
}

#[test]
fn every_chapter_passes_and_prints_what_it_quotes() {
    let blocks = quoted_blocks();
    for n in 1..=gpu_mpi_example_tutorial::CHAPTERS.len() as u32 {
        let quoted: Vec<_> = blocks.iter().filter(|b| b.1 == n).collect();
        assert!(
            quoted.iter().any(|b| b.2.is_none()),
            "no chapter quotes `tutorial {n}`"
        );
        let mut envs: Vec<Option<&(String, String)>> = quoted.iter().map(|b| b.2.as_ref()).collect();
        envs.sort();
        envs.dedup();
        for env in envs {
            let (ok, stdout, stderr) = run_chapter(n, env);
            assert!(ok, "chapter {n} ({env:?}) failed its checks:\n{stdout}{stderr}");
            for (file, _, _, block) in quoted.iter().filter(|b| b.2.as_ref() == env) {
                assert!(
                    stdout.contains(block.as_str()),
                    "{file} quotes for chapter {n} ({env:?}):\n{block}\nbut the program printed:\n{stdout}"
                );
            }
        }
    }
}

#[test]
fn the_deadlock_chapter_quotes_the_reports() {
    let blocks = quoted_blocks();
    let deadlock = blocks
        .iter()
        .filter(|b| b.1 == 4)
        .map(|b| b.3.as_str())
        .collect::<String>();
    assert!(deadlock.contains("deadlock: rank 0: send(dest 1, tag 0); rank 1: send(dest 0, tag 0)"));
    assert!(deadlock.contains("deadlock: rank 0: receive(source 1, tag 0); rank 1: receive(source 0, tag 0)"));
}

#[test]
fn usage_errors_exit_with_2() {
    for args in [&[][..], &["10"][..], &["1", "--backend", "nonsense"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_tutorial"))
            .args(args)
            .output()
            .expect("the tutorial binary runs");
        assert_eq!(out.status.code(), Some(2), "tutorial {args:?}");
    }
}
