//! [`KernelImages`]: the kernels a program ships, as
//! `gpu_mpi_ptx_builder::KernelBuilder` builds them, and
//! [`include_kernels!`](crate::include_kernels) to embed them.
//!
//! The kinds of image ([`ImageKind`]) and why none suits a device
//! ([`NoImage`]) are here too, below the errors that name them; the cuda
//! backend chooses among the images (`cuda::plan`, which re-exports them).

use std::fmt;

/// What `$OUT_DIR/gpu_mpi_kernels.rs` holds, in [`KernelImages`]' field
/// order: PTX per SM, SASS per SM, the ptxas report, why there are none.
pub type KernelParts = (
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, &'static [u8])],
    &'static str,
    Option<&'static str>,
);

/// The kernels a program ships: PTX per SM, SASS (cubin) per SM, the ptxas
/// report, and why there are none.
///
/// ```ignore
/// static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();
/// let device = gpu_mpi::Device::open(gpu_mpi::BackendKind::Auto, &KERNELS)?;
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KernelImages {
    /// PTX per SM, `("sm_70", text)`, lowest SM first; the driver
    /// JIT-compiles it for the device.
    pub ptx: &'static [(&'static str, &'static str)],
    /// SASS per SM, `("sm_80", cubin)`: machine code, loaded without JIT on
    /// a device of the same major SM and a minor not below it.
    pub sass: &'static [(&'static str, &'static [u8])],
    /// `ptxas -v` report of the build (registers, stack, spills per kernel
    /// and SM) and the PTX lint; the reason when built without kernels.
    pub ptxas_report: &'static str,
    /// Why the program was built without GPU kernels (no nightly toolchain,
    /// `GPU_MPI_SKIP_PTX=1`), with the command that fixes it; `None` when
    /// the kernels were built.
    pub built_without: Option<&'static str>,
}

impl KernelImages {
    /// No kernels, for no stated reason.
    pub const EMPTY: KernelImages = KernelImages {
        ptx: &[],
        sass: &[],
        ptxas_report: "",
        built_without: None,
    };

    /// The images from the generated expression (what
    /// [`include_kernels!`](crate::include_kernels) passes).
    pub const fn from_parts(parts: KernelParts) -> Self {
        let (ptx, sass, ptxas_report, built_without) = parts;
        KernelImages {
            ptx,
            sass,
            ptxas_report,
            built_without,
        }
    }

    /// Whether there is neither PTX nor SASS.
    pub fn is_empty(&self) -> bool {
        self.ptx.is_empty() && self.sass.is_empty()
    }
}

impl fmt::Debug for KernelImages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Labels and sizes: the texts and cubins are megabytes.
        let ptx: Vec<(&str, usize)> = self.ptx.iter().map(|(l, t)| (*l, t.len())).collect();
        let sass: Vec<(&str, usize)> = self.sass.iter().map(|(l, c)| (*l, c.len())).collect();
        f.debug_struct("KernelImages")
            .field("ptx_bytes", &ptx)
            .field("sass_bytes", &sass)
            .field("ptxas_report_bytes", &self.ptxas_report.len())
            .field("built_without", &self.built_without)
            .finish()
    }
}

/// Machine code or PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// A cubin: loaded as it is.
    Sass,
    /// PTX: JIT-compiled by the driver when loaded.
    Ptx,
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Sass => "SASS",
            ImageKind::Ptx => "PTX (JIT)",
        })
    }
}

/// Why no embedded image suits a device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoImage {
    /// The build made no kernels, and says why.
    #[error("built without GPU kernels: {0}")]
    BuiltWithout(&'static str),
    /// There are no images and no reason was given.
    #[error("built without PTX (GPU_MPI_SKIP_PTX=1): no kernels to run")]
    Empty,
    /// None of the images runs on the device.
    #[error("no embedded PTX or SASS for compute capability {} (have {have})", compute_capability(*.cc))]
    NoneFor {
        /// The device's compute capability (`major * 10 + minor`).
        cc: u32,
        /// The images there are, e.g. `PTX sm_70, sm_90; SASS sm_80`.
        have: String,
    },
}

/// Formats a compute capability (`90` as `9.0`).
pub fn compute_capability(cc: u32) -> String {
    format!("{}.{}", cc / 10, cc % 10)
}

/// The [`KernelImages`] that `gpu_mpi_ptx_builder::KernelBuilder` wrote for
/// this crate in its build script (`$OUT_DIR/gpu_mpi_kernels.rs`); with a
/// name, the image of the builder given that name with
/// `KernelBuilder::image` (`$OUT_DIR/<name>/gpu_mpi_kernels.rs`).
///
/// ```ignore
/// static KERNELS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!();
/// static VIEWS: gpu_mpi::KernelImages = gpu_mpi::include_kernels!("views");
/// ```
#[macro_export]
macro_rules! include_kernels {
    () => {
        $crate::KernelImages::from_parts(include!(concat!(env!("OUT_DIR"), "/gpu_mpi_kernels.rs")))
    };
    ($image:literal) => {
        $crate::KernelImages::from_parts(include!(concat!(
            env!("OUT_DIR"),
            "/",
            $image,
            "/gpu_mpi_kernels.rs"
        )))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shape KernelBuilder writes, with literals instead of include_*!.
    static BUILT: KernelImages = KernelImages::from_parts((
        &[("sm_70", ".target sm_70\n"), ("sm_90", ".target sm_90\n")],
        &[("sm_80", b"\x7fELF" as &[u8])],
        "report",
        None,
    ));
    static WITHOUT: KernelImages = KernelImages::from_parts((&[], &[], "", Some("GPU_MPI_SKIP_PTX=1")));

    #[test]
    fn parts_become_images() {
        assert_eq!(BUILT.ptx.len(), 2);
        assert_eq!(BUILT.sass[0], ("sm_80", &b"\x7fELF"[..]));
        assert!(!BUILT.is_empty());
        assert!(WITHOUT.is_empty() && KernelImages::EMPTY.is_empty());
        assert_eq!(WITHOUT.built_without, Some("GPU_MPI_SKIP_PTX=1"));
        let d = format!("{BUILT:?}");
        assert!(d.contains("(\"sm_80\", 4)"), "{d}");
    }
}
