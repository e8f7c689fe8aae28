// The commit a benchmark or check binary was built from, for its JSON's
// provenance: `include!`d by bench/build.rs and check/build.rs (a build
// script cannot depend on the provenance crate without building the host
// library for itself).

use std::path::Path;
use std::process::Command;

/// `git rev-parse HEAD` of the tree, with `-dirty` when tracked files have
/// uncommitted changes; "unknown" without git. Reruns when HEAD moves, the
/// branch gets a commit or the index changes (an edit that is never staged
/// shows only once something else reruns this script).
fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    // In a worktree .git is a file; ask git where HEAD, the branch and the index live.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "index", "packed-refs"]
        .iter()
        .copied()
        .chain(branch.as_deref())
    {
        // A watched path that does not exist would rerun this script on every build.
        let path = git(&["rev-parse", "--path-format=absolute", "--git-path", name]);
        if let Some(path) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo::rerun-if-changed={path}");
        }
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{head}-dirty")
    } else {
        head
    }
}
