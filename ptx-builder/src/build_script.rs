//! What every build script of the builder shares: the environment
//! variables it reads and where the nested builds go.

use crate::{parse_archs, CHECK_ARCHS_ENV, SKIP_ENV};
use std::path::{Path, PathBuf};

pub(crate) fn skip_requested() -> bool {
    std::env::var(SKIP_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Key of a ptxas report: ptxas, the jobs and the PTX contents.
pub(crate) fn report_key(ptxas: Option<&Path>, jobs: &[(PathBuf, String)]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ptxas.hash(&mut h);
    for (ptx, arch) in jobs {
        ptx.hash(&mut h);
        arch.hash(&mut h);
        std::fs::read(ptx).unwrap_or_default().hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

pub(crate) fn archs_from_env(var: &str, default: &[u32]) -> Result<Vec<u32>, String> {
    match std::env::var(var) {
        Ok(s) if var == CHECK_ARCHS_ENV && s.trim() == "none" => Ok(Vec::new()),
        Ok(s) if !s.trim().is_empty() => {
            parse_archs(&s).map_err(|e| format!("gpu-mpi PTX build: {var}: {e}"))
        }
        _ => Ok(default.to_vec()),
    }
}

/// The nested builds' target directory: `<outer target dir>/gpu-mpi-ptx`,
/// shared by every profile of the outer build. `OUT_DIR` is
/// `<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`.
pub(crate) fn nested_target_dir(out_dir: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("GPU_MPI_PTX_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    out_dir
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("gpu-mpi-ptx"))
        .unwrap_or_else(|| out_dir.join("gpu-mpi-ptx"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_target_dir_sits_next_to_the_profiles() {
        let out = Path::new("/w/target/debug/build/gpu-mpi-0123/out");
        assert_eq!(nested_target_dir(out), Path::new("/w/target/gpu-mpi-ptx"));
        let out = Path::new("/w/target/x86_64-unknown-linux-gnu/release/build/gpu-mpi-0123/out");
        assert_eq!(
            nested_target_dir(out),
            Path::new("/w/target/x86_64-unknown-linux-gnu/gpu-mpi-ptx")
        );
    }
}
