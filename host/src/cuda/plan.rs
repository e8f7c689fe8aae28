//! The cuda backend's decisions that need no GPU: which kernel image (SASS
//! or PTX) to load, and how many ranks of a kernel fit on a device and what
//! limits them.
//!
//! Everything here is a pure function of numbers the driver reports (device
//! attributes, function attributes, the occupancy API), so it is tested on
//! machines without a GPU (host/tests/cuda.rs) with the numbers of an H100.
//!
//! # Co-residency
//! A world's ranks must all run at once (docs/gpu.md, "The co-residency
//! rule"). On the GPU the number of blocks of one kernel an SM holds at once
//! comes from the driver (`cuOccupancyMaxActiveBlocksPerMultiprocessor`,
//! with the world's shared window memory and the non-blocking collectives'
//! small words as the block's dynamic shared memory,
//! `WorldConfig::launch_shared_bytes`): that count is authoritative. To say *which*
//! resource runs out first, [`Bounds`] recomputes the bound of each resource
//! with the occupancy rules of sm_70 and later (registers are allocated per
//! warp in units of 256, each SM's register file is split into 4 equal
//! sub-partitions that hold whole warps, a block's register need is checked
//! against the per-block limit with its warps rounded up to a multiple of 4,
//! warps come whole, shared memory in units of 128 bytes plus the per-block
//! reservation) and names the smallest.

use crate::error::{HostError, Resource};
use crate::images::KernelImages;
pub use crate::images::{compute_capability, ImageKind, NoImage};
use crate::spec::Residency;
use std::fmt;

/// Registers are allocated to a warp in units of this many.
pub const REGISTER_ALLOC_UNIT: u32 = 256;
/// Sub-partitions (schedulers) of an SM's register file, sm_70 and later.
pub const SM_SUB_PARTITIONS: u32 = 4;
/// Shared memory is allocated to a block in units of this many bytes.
pub const SHARED_ALLOC_UNIT: u32 = 128;
/// The lowest compute capability the kernels run on (as `major * 10 + minor`).
pub const MIN_COMPUTE_CAPABILITY: u32 = 70;

/// What bounds co-residency on a device, from its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Streaming multiprocessors (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`).
    pub sms: u32,
    /// Threads per warp (32).
    pub warp_size: u32,
    /// Threads one SM holds at once (`MAX_THREADS_PER_MULTIPROCESSOR`).
    pub max_threads_per_sm: u32,
    /// Blocks one SM holds at once (`MAX_BLOCKS_PER_MULTIPROCESSOR`).
    pub max_blocks_per_sm: u32,
    /// Threads one block may have (`MAX_THREADS_PER_BLOCK`).
    pub max_threads_per_block: u32,
    /// 32-bit registers of one SM (`MAX_REGISTERS_PER_MULTIPROCESSOR`).
    pub registers_per_sm: u32,
    /// Registers one block may use (`MAX_REGISTERS_PER_BLOCK`).
    pub registers_per_block: u32,
    /// Bytes of shared memory of one SM (`MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`).
    pub shared_memory_per_sm: u32,
    /// Bytes of shared memory the system reserves for each resident block
    /// (`RESERVED_SHARED_MEMORY_PER_BLOCK`: 1 KiB from sm_80 on, 0 before).
    pub reserved_shared_memory_per_block: u32,
    /// Bytes of shared memory, static and dynamic together, one block may
    /// have once a kernel opts in (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`:
    /// 227 KiB on sm_90).
    pub shared_memory_per_block_optin: u32,
}

impl DeviceLimits {
    /// One SM of compute capability `cc` (`major * 10 + minor`) as the
    /// CUDA C Programming Guide tabulates it ("Compute Capabilities",
    /// technical specifications), `sms` 1: for what is worked out without
    /// the device (the bench's kernels table). A capability not listed is
    /// taken as sm_90's.
    pub fn of_sm(cc: u32) -> DeviceLimits {
        // (threads, blocks, shared memory per SM in KiB, opt-in per block in KiB)
        let (threads, blocks, shared_kib, optin_kib) = match cc {
            70 => (2048, 32, 96, 96),
            75 => (1024, 16, 64, 64),
            80 => (2048, 32, 164, 163),
            86 => (1536, 16, 100, 99),
            87 => (2048, 16, 164, 163),
            89 => (1536, 24, 100, 99),
            _ => (2048, 32, 228, 227),
        };
        DeviceLimits {
            sms: 1,
            warp_size: 32,
            max_threads_per_sm: threads,
            max_blocks_per_sm: blocks,
            max_threads_per_block: 1024,
            registers_per_sm: 65536,
            registers_per_block: 65536,
            shared_memory_per_sm: shared_kib * 1024,
            reserved_shared_memory_per_block: if cc >= 80 { 1024 } else { 0 },
            shared_memory_per_block_optin: optin_kib * 1024,
        }
    }
}

/// What one kernel uses, from its function attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Static shared memory per block (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub shared_bytes: u32,
    /// Dynamic shared memory per block the launch gives it (the world's
    /// `WorldConfig::launch_shared_bytes`: its shared window memory and the
    /// non-blocking collectives' small words; 0 from the driver's
    /// attributes).
    pub dynamic_shared_bytes: u32,
    /// The largest block the kernel can be launched with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`; fewer than the device's
    /// limit when its registers do not allow more).
    pub max_threads_per_block: u32,
    /// Local memory (stack frame and spills) per thread
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`; for the report only).
    pub local_bytes: u32,
}

fn div_ceil(a: u32, b: u32) -> u32 {
    a.div_ceil(b.max(1))
}

fn round_up(a: u32, unit: u32) -> u32 {
    div_ceil(a, unit).saturating_mul(unit)
}

/// Blocks of one kernel an SM can hold, bounded by each resource alone.
/// `None`: the resource sets no bound (a kernel without shared memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Ranks per block.
    pub block_dim: u32,
    /// Warps per block (the block size rounded up to whole warps).
    pub warps_per_block: u32,
    /// Registers one warp is allocated.
    pub registers_per_warp: u32,
    /// Registers a block counts as needing when the hardware checks the
    /// per-block limit: its warps rounded up to a multiple of the SM's
    /// sub-partitions, times `registers_per_warp`.
    pub registers_per_block_needed: u64,
    /// Registers one block may use (the device's limit).
    pub registers_per_block: u32,
    /// By the SM's block slots.
    pub blocks: u32,
    /// By the SM's threads (whole warps).
    pub threads: u32,
    /// By the SM's registers.
    pub registers: u32,
    /// By the SM's shared memory.
    pub shared_memory: Option<u32>,
    /// Shared memory a block needs, static and dynamic (without the
    /// reservation), and the most it may have.
    pub shared_per_block: (u32, u32),
    /// Why no block fits at all, if none does: the block is larger than a
    /// block may be ([`Resource::ThreadsPerBlock`]) or needs more registers
    /// than a block may have ([`Resource::Registers`]).
    pub too_large: Option<Resource>,
}

impl Bounds {
    /// Each resource's bound for blocks of `block_dim` ranks of a kernel
    /// using `kernel` on a device with `limits`.
    pub fn new(limits: &DeviceLimits, kernel: &KernelResources, block_dim: u32) -> Bounds {
        let warp = limits.warp_size.max(1);
        let warps_per_block = div_ceil(block_dim, warp);
        let registers_per_warp = round_up(kernel.registers.max(1).saturating_mul(warp), REGISTER_ALLOC_UNIT);
        let block_shared = kernel.shared_bytes.saturating_add(kernel.dynamic_shared_bytes);
        let too_large = if block_dim == 0 || block_dim > limits.max_threads_per_block {
            Some(Resource::ThreadsPerBlock)
        } else if block_shared > limits.shared_memory_per_block_optin.max(kernel.shared_bytes) {
            Some(Resource::SharedMemory)
        } else if block_dim > kernel.max_threads_per_block
            || registers_per_warp.saturating_mul(round_up(warps_per_block, SM_SUB_PARTITIONS))
                > limits.registers_per_block
        {
            Some(Resource::Registers)
        } else {
            None
        };
        let per_block = |per_sm: u32| per_sm.checked_div(warps_per_block).unwrap_or(0);
        let warps_by_registers = (limits.registers_per_sm / SM_SUB_PARTITIONS)
            .checked_div(registers_per_warp)
            .unwrap_or(0)
            * SM_SUB_PARTITIONS;
        let shared = block_shared.saturating_add(limits.reserved_shared_memory_per_block);
        let shared_memory =
            (shared > 0).then(|| limits.shared_memory_per_sm / round_up(shared, SHARED_ALLOC_UNIT));
        Bounds {
            block_dim,
            warps_per_block,
            registers_per_warp,
            registers_per_block_needed: registers_per_warp as u64
                * round_up(warps_per_block, SM_SUB_PARTITIONS) as u64,
            registers_per_block: limits.registers_per_block,
            blocks: limits.max_blocks_per_sm,
            threads: per_block(limits.max_threads_per_sm / warp),
            registers: per_block(warps_by_registers),
            shared_memory,
            shared_per_block: (block_shared, limits.shared_memory_per_block_optin),
            too_large,
        }
    }

    /// The smallest bound and its resource. Ties go to the hardware's
    /// structural limits first: block slots, then threads, registers, shared
    /// memory (a kernel whose registers allow exactly the SM's threads is
    /// limited by threads, as on the emulator).
    pub fn limit(&self) -> (u32, Resource) {
        if let Some(r) = self.too_large {
            return (0, r);
        }
        let mut best = (self.blocks, Resource::BlocksPerSm);
        for (n, r) in [
            (Some(self.threads), Resource::ThreadsPerSm),
            (Some(self.registers), Resource::Registers),
            (self.shared_memory, Resource::SharedMemory),
        ] {
            if let Some(n) = n {
                if n < best.0 {
                    best = (n, r);
                }
            }
        }
        best
    }
}

/// The co-residency of one kernel with one block size on one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelOccupancy {
    /// The kernel's name.
    pub kernel: String,
    /// What it uses.
    pub resources: KernelResources,
    /// The model's bound per resource.
    pub bounds: Bounds,
    /// Blocks per SM, ranks that fit and the limiting resource; its
    /// `blocks_per_sm` is the driver's count when there was one.
    pub residency: Residency,
    /// The driver's count of blocks per SM, when it was asked.
    pub driver_blocks_per_sm: Option<u32>,
}

impl KernelOccupancy {
    /// Combines the device's limits, the kernel's attributes and the
    /// driver's occupancy answer (`None`: use the model's own count, e.g. when
    /// the block is too large to ask about).
    pub fn new(
        kernel: &str,
        limits: &DeviceLimits,
        resources: &KernelResources,
        block_dim: u32,
        driver_blocks_per_sm: Option<u32>,
    ) -> KernelOccupancy {
        let bounds = Bounds::new(limits, resources, block_dim);
        let (model, limit) = bounds.limit();
        let blocks_per_sm = match bounds.too_large {
            Some(_) => 0,
            None => driver_blocks_per_sm.unwrap_or(model),
        };
        let residency = Residency {
            sms: limits.sms,
            blocks_per_sm,
            block_dim,
            limit,
            max_threads_per_block: if limit == Resource::ThreadsPerBlock {
                limits.max_threads_per_block
            } else {
                resources.max_threads_per_block.min(limits.max_threads_per_block)
            },
        };
        KernelOccupancy {
            kernel: kernel.to_string(),
            resources: *resources,
            bounds,
            residency,
            driver_blocks_per_sm,
        }
    }

    /// Ranks that fit.
    pub fn capacity(&self) -> u32 {
        self.residency.capacity()
    }

    /// What the kernel uses and what bounds it, for the refusal's detail,
    /// e.g. `kernel ring with 214 registers per thread and 0 B shared memory
    /// per block: blocks per SM by registers 1, by threads 8, by block slots 32`.
    pub fn describe(&self) -> String {
        let r = &self.resources;
        let b = &self.bounds;
        let mut s = format!(
            "kernel {} with {} registers per thread and {} B shared memory per block",
            self.kernel, r.registers, r.shared_bytes
        );
        if r.dynamic_shared_bytes != 0 {
            s.push_str(&format!(
                " (+ {} B of dynamic shared memory: shared window memory, WorldSpec::shared_window_bytes, and the non-blocking collectives' small words, 16 B a rank and about 550 B a block)",
                r.dynamic_shared_bytes
            ));
        }
        match b.too_large {
            Some(Resource::Registers) => s.push_str(&format!(
                ": a block of {} ranks needs {} registers, {} allowed (the kernel runs blocks of at most {} ranks)",
                b.block_dim,
                b.registers_per_block_needed,
                b.registers_per_block,
                r.max_threads_per_block
            )),
            Some(Resource::SharedMemory) => s.push_str(&format!(
                ": a block needs {} B of shared memory, {} B allowed",
                b.shared_per_block.0, b.shared_per_block.1
            )),
            Some(_) => {}
            None => {
                s.push_str(&format!(
                    ": blocks per SM by registers {}, by threads {}, by block slots {}",
                    b.registers, b.threads, b.blocks
                ));
                if let Some(n) = b.shared_memory {
                    s.push_str(&format!(", by shared memory {n}"));
                }
                let (model, _) = b.limit();
                if let Some(d) = self.driver_blocks_per_sm.filter(|&d| d != model) {
                    s.push_str(&format!(" (the driver's occupancy: {d})"));
                }
            }
        }
        s
    }

    /// `Ok` when `ranks` ranks fit, else [`HostError::NotCoResident`] worded
    /// like the emulator's refusal (`<SMs> SMs x <blocks> blocks of <block>
    /// ranks`), followed by [`describe`](Self::describe).
    pub fn check(&self, ranks: u32) -> Result<(), HostError> {
        match self.residency.check(ranks) {
            Err(HostError::NotCoResident {
                requested,
                fits,
                limit,
                detail,
            }) => Err(HostError::NotCoResident {
                requested,
                fits,
                limit,
                detail: format!("{detail}, {}", self.describe()),
            }),
            other => other,
        }
    }
}

/// The SM a PTX module is for: from its label (`"sm_90"`), else from its
/// `.target sm_90` directive. `None` when neither names one.
pub fn ptx_sm(label: &str, ptx: &str) -> Option<u32> {
    label_sm(label).or_else(|| {
        ptx.lines().take(64).find_map(|l| {
            l.trim()
                .strip_prefix(".target")
                .and_then(|t| label_sm(t.split(',').next()?))
        })
    })
}

/// The PTX variants a device of compute capability `cc` (`major * 10 +
/// minor`) can load, best first: those for an SM not above `cc`, highest
/// first (the driver JIT-compiles PTX for an older SM; it cannot for a newer
/// one). Variants whose SM cannot be told are left out.
pub fn ptx_candidates(variants: &[(&'static str, &'static str)], cc: u32) -> Vec<(u32, &'static str)> {
    let mut v: Vec<(u32, &'static str)> = variants
        .iter()
        .filter_map(|&(label, ptx)| ptx_sm(label, ptx).map(|sm| (sm, ptx)))
        .filter(|&(sm, _)| sm <= cc)
        .collect();
    v.sort_by_key(|&(sm, _)| std::cmp::Reverse(sm));
    v
}

/// The images to choose from, borrowed: a [`KernelImages`], or the PTX
/// variants alone (`CudaDevice::open`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageSet<'a> {
    /// PTX per SM, `("sm_70", text)` (a label that is not `sm_XX` is read
    /// from the PTX's `.target`).
    pub ptx: &'a [(&'static str, &'static str)],
    /// SASS per SM, `("sm_80", cubin)` (unlabelled ones are ignored).
    pub sass: &'a [(&'static str, &'static [u8])],
    /// Why there are no images, when the build says.
    pub built_without: Option<&'static str>,
}

impl<'a> From<&'a KernelImages> for ImageSet<'a> {
    fn from(k: &'a KernelImages) -> Self {
        ImageSet {
            ptx: k.ptx,
            sass: k.sass,
            built_without: k.built_without,
        }
    }
}

impl ImageSet<'_> {
    /// Whether there is neither PTX nor SASS.
    pub fn is_empty(&self) -> bool {
        self.ptx.is_empty() && self.sass.is_empty()
    }
}

/// One image the cuda backend can load.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KernelImage {
    /// A cubin for `sm_XY`.
    Sass {
        /// Its SM (`80`).
        sm: u32,
        /// The ELF image.
        cubin: &'static [u8],
    },
    /// PTX for `sm_XY`.
    Ptx {
        /// Its SM (`70`).
        sm: u32,
        /// The text.
        text: &'static str,
    },
}

impl KernelImage {
    /// The SM it is for.
    pub fn sm(&self) -> u32 {
        match *self {
            KernelImage::Sass { sm, .. } | KernelImage::Ptx { sm, .. } => sm,
        }
    }

    /// SASS or PTX.
    pub fn kind(&self) -> ImageKind {
        match self {
            KernelImage::Sass { .. } => ImageKind::Sass,
            KernelImage::Ptx { .. } => ImageKind::Ptx,
        }
    }
}

/// `sm_90 SASS` or `sm_90 PTX (JIT)`.
impl fmt::Display for KernelImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{} {}", self.sm(), self.kind())
    }
}

impl fmt::Debug for KernelImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = match self {
            KernelImage::Sass { cubin, .. } => cubin.len(),
            KernelImage::Ptx { text, .. } => text.len(),
        };
        write!(f, "{self} ({bytes} bytes)")
    }
}

/// The SM in a label such as `"sm_90"`.
fn label_sm(label: &str) -> Option<u32> {
    let digits: String = label
        .trim()
        .strip_prefix("sm_")?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The images a device of compute capability `cc` (`major * 10 + minor`)
/// can load, best first:
/// 1. SASS of the same major SM with a minor not above the device's,
///    highest first (a cubin runs only on its own major version; an sm_80
///    cubin runs on 8.6, an sm_90 one only on 9.x);
/// 2. then PTX, as [`ptx_candidates`] orders it (the driver JIT-compiles it).
///
/// `jit_only` leaves SASS out: a register cap (`CU_JIT_MAX_REGISTERS`)
/// applies only to a JIT compilation.
pub fn choose_images(images: ImageSet<'_>, cc: u32, jit_only: bool) -> Result<Vec<KernelImage>, NoImage> {
    if images.is_empty() {
        return Err(match images.built_without {
            Some(why) => NoImage::BuiltWithout(why),
            None => NoImage::Empty,
        });
    }
    let mut sass: Vec<KernelImage> = if jit_only {
        Vec::new()
    } else {
        images
            .sass
            .iter()
            .filter_map(|&(label, cubin)| label_sm(label).map(|sm| KernelImage::Sass { sm, cubin }))
            .filter(|i| i.sm() / 10 == cc / 10 && i.sm() % 10 <= cc % 10)
            .collect()
    };
    sass.sort_by_key(|i| std::cmp::Reverse(i.sm()));
    let ptx = ptx_candidates(images.ptx, cc)
        .into_iter()
        .map(|(sm, text)| KernelImage::Ptx { sm, text });
    let all: Vec<KernelImage> = sass.into_iter().chain(ptx).collect();
    if all.is_empty() {
        let ptx: Vec<String> = images
            .ptx
            .iter()
            .map(|(label, text)| ptx_sm(label, text).map_or_else(|| "?".into(), |s| format!("sm_{s}")))
            .collect();
        let sass: Vec<&str> = images.sass.iter().map(|(label, _)| *label).collect();
        let mut have = Vec::new();
        if !ptx.is_empty() {
            have.push(format!("PTX {}", ptx.join(", ")));
        }
        if !sass.is_empty() {
            have.push(format!("SASS {}", sass.join(", ")));
        }
        return Err(NoImage::NoneFor {
            cc,
            have: have.join("; "),
        });
    }
    Ok(all)
}

/// Names of the kernel entry points (`.entry NAME(`) of a PTX module.
pub fn ptx_entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix(".visible ")
                .or_else(|| l.strip_prefix(".weak "))
                .unwrap_or(l);
            let rest = rest.strip_prefix(".entry")?;
            let name = rest
                .trim_start()
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()?;
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sm_90_is_what_the_driver_reports_for_an_h100() {
        let sm = DeviceLimits::of_sm(90);
        // The H100 SXM's attributes (host/tests/cuda.rs), but its 132 SMs.
        assert_eq!(
            (sm.max_threads_per_sm, sm.max_blocks_per_sm, sm.registers_per_sm),
            (2048, 32, 65536)
        );
        assert_eq!(sm.shared_memory_per_sm, 228 * 1024);
        assert_eq!(sm.shared_memory_per_block_optin, 227 * 1024);
        assert_eq!(sm.reserved_shared_memory_per_block, 1024);
        assert_eq!(DeviceLimits::of_sm(75).max_threads_per_sm, 1024);
        assert_eq!(DeviceLimits::of_sm(75).reserved_shared_memory_per_block, 0);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_up(214 * 32, REGISTER_ALLOC_UNIT), 216 * 32);
        assert_eq!(round_up(0, 128), 0);
        assert_eq!(div_ceil(250, 32), 8);
    }

    #[test]
    fn entries_and_targets() {
        let ptx = "//\n.version 7.8\n.target sm_90\n.address_size 64\n\n\
                   .visible .entry ring(\n\t.param .u64 ring_param_0,\n)\n\
                   .func helper(\n.visible .entry pi_reduce(\n";
        assert_eq!(ptx_entries(ptx), vec!["ring", "pi_reduce"]);
        assert_eq!(ptx_sm("", ptx), Some(90));
        assert_eq!(ptx_sm("sm_70", ptx), Some(70));
        assert_eq!(ptx_sm("", ".target sm_80, debug\n"), Some(80));
        assert_eq!(ptx_sm("x", ""), None);
    }

    const P70: &str = ".version 7.0\n.target sm_70\n";
    const P90: &str = ".version 7.8\n.target sm_90\n";
    const C70: &[u8] = b"\x7fELF sm_70";
    const C80: &[u8] = b"\x7fELF sm_80";
    const C90: &[u8] = b"\x7fELF sm_90";
    static SHIPPED: KernelImages = KernelImages {
        ptx: &[("sm_70", P70), ("sm_90", P90)],
        sass: &[("sm_70", C70), ("sm_80", C80), ("sm_90", C90)],
        ptxas_report: "",
        built_without: None,
    };

    fn best(cc: u32) -> KernelImage {
        choose_images((&SHIPPED).into(), cc, false).unwrap()[0]
    }

    #[test]
    fn sass_of_the_same_major_first_then_ptx() {
        // V100: its own cubin; then the sm_70 PTX.
        assert_eq!(
            choose_images((&SHIPPED).into(), 70, false).unwrap(),
            [
                KernelImage::Sass { sm: 70, cubin: C70 },
                KernelImage::Ptx { sm: 70, text: P70 }
            ]
        );
        // A100 and RTX 30xx (8.6): the sm_80 cubin, never the sm_70 one.
        assert_eq!(best(80), KernelImage::Sass { sm: 80, cubin: C80 });
        assert_eq!(best(86), KernelImage::Sass { sm: 80, cubin: C80 });
        assert_eq!(best(75), KernelImage::Sass { sm: 70, cubin: C70 });
        // H100.
        assert_eq!(best(90), KernelImage::Sass { sm: 90, cubin: C90 });
        assert_eq!(best(90).to_string(), "sm_90 SASS");
        // Blackwell (10.0, 12.0): no cubin of its major: the sm_90 PTX, JIT.
        assert_eq!(best(120), KernelImage::Ptx { sm: 90, text: P90 });
        assert_eq!(best(100).to_string(), "sm_90 PTX (JIT)");
        // A register cap needs the JIT.
        assert_eq!(
            choose_images((&SHIPPED).into(), 90, true).unwrap()[0],
            KernelImage::Ptx { sm: 90, text: P90 }
        );
    }

    #[test]
    fn no_image_says_why() {
        let without = KernelImages {
            built_without: Some(
                "the Rust `nightly` toolchain is missing; run `rustup toolchain install nightly`",
            ),
            ..KernelImages::EMPTY
        };
        let e = choose_images((&without).into(), 90, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "built without GPU kernels: the Rust `nightly` toolchain is missing; run `rustup toolchain install nightly`"
        );
        assert_eq!(
            choose_images((&KernelImages::EMPTY).into(), 90, false),
            Err(NoImage::Empty)
        );
        let sass_only = KernelImages {
            sass: &[("sm_90", C90)],
            ..KernelImages::EMPTY
        };
        assert_eq!(
            choose_images((&sass_only).into(), 80, false)
                .unwrap_err()
                .to_string(),
            "no embedded PTX or SASS for compute capability 8.0 (have SASS sm_90)"
        );
        assert_eq!(
            choose_images((&SHIPPED).into(), 61, false).unwrap_err().to_string(),
            "no embedded PTX or SASS for compute capability 6.1 (have PTX sm_70, sm_90; SASS sm_70, sm_80, sm_90)"
        );
    }
}
