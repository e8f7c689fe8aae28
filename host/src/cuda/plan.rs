//! The cuda backend's decisions that need no GPU: which PTX to load, and
//! how many ranks of a kernel fit on a device and what limits them.
//!
//! Everything here is a pure function of numbers the driver reports (device
//! attributes, function attributes, the occupancy API), so it is tested on
//! machines without a GPU (host/tests/cuda.rs) with the numbers of an H100.
//!
//! # Co-residency
//! A world's ranks must all run at once (docs/gpu.md, "The co-residency
//! rule"). On the GPU the number of blocks of one kernel an SM holds at once
//! comes from the driver (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, no
//! dynamic shared memory): that count is authoritative. To say *which*
//! resource runs out first, [`Bounds`] recomputes the bound of each resource
//! with the occupancy rules of sm_70 and later (registers are allocated per
//! warp in units of 256, each SM's register file is split into 4 equal
//! sub-partitions that hold whole warps, a block's register need is checked
//! against the per-block limit with its warps rounded up to a multiple of 4,
//! warps come whole, shared memory in units of 128 bytes plus the per-block
//! reservation) and names the smallest.

use crate::error::{HostError, Resource};
use crate::spec::Residency;

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
}

/// What one kernel uses, from its function attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Static shared memory per block (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub shared_bytes: u32,
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
        let too_large = if block_dim == 0 || block_dim > limits.max_threads_per_block {
            Some(Resource::ThreadsPerBlock)
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
        let shared = kernel.shared_bytes + limits.reserved_shared_memory_per_block;
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
        match b.too_large {
            Some(Resource::Registers) => s.push_str(&format!(
                ": a block of {} ranks needs {} registers, {} allowed (the kernel runs blocks of at most {} ranks)",
                b.block_dim,
                b.registers_per_block_needed,
                b.registers_per_block,
                r.max_threads_per_block
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
    fn parse(s: &str) -> Option<u32> {
        let digits: String = s
            .trim()
            .strip_prefix("sm_")?
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    }
    parse(label).or_else(|| {
        ptx.lines().take(64).find_map(|l| {
            l.trim()
                .strip_prefix(".target")
                .and_then(|t| parse(t.split(',').next()?))
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

/// Formats a compute capability (`90` as `9.0`).
pub fn compute_capability(cc: u32) -> String {
    format!("{}.{}", cc / 10, cc % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
