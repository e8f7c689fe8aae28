//! The `kernels` table: every benchmark kernel's registers, stack and
//! spills from the build's ptxas report, and how many of its ranks one SM
//! can hold (issue 29: "every CUDA thread a rank" holds only for a kernel
//! at or below 32 registers).
//!
//! Ranks per SM follow the occupancy rules the cuda backend names a
//! world's bound with (`gpu_mpi::cuda::plan::Bounds`: a warp's registers
//! are allocated in units of 256, each of an SM's four register-file
//! sub-partitions holds whole warps, docs/gpu.md), in whole blocks of
//! [`gpu_mpi::PREFERRED_BLOCK_DIM`], at most as many threads and blocks as
//! the SM allows. Shared memory is left out (the collectives' 4 KiB per
//! block binds no SM below 64 blocks), and so is the driver's own answer,
//! which a launch on a GPU asks for.

use crate::{Row, Section};
use gpu_mpi::cuda::plan::{Bounds, DeviceLimits, KernelResources};
use gpu_mpi::{KernelImages, Resource};

/// One row of a ptxas report: a kernel built for one SM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    /// The kernel's name.
    pub kernel: String,
    /// The SM it was built for, `sm_90`.
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of stack frame per thread.
    pub stack: u32,
    /// Bytes spilled: stores and loads.
    pub spills: (u32, u32),
}

/// The rows of a ptxas report (`gpu-mpi PTX report`, ptx-builder's
/// format: `kernel arch regs stack cum.stack spill-st spill-ld`); other
/// lines are skipped.
pub fn parse_report(report: &str) -> Vec<Usage> {
    report
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [kernel, arch, regs, stack, _, st, ld] = f.as_slice() else {
                return None;
            };
            if !arch.starts_with("sm_") {
                return None;
            }
            Some(Usage {
                kernel: kernel.to_string(),
                arch: arch.to_string(),
                registers: regs.parse().ok()?,
                stack: stack.parse().ok()?,
                spills: (st.parse().ok()?, ld.parse().ok()?),
            })
        })
        .collect()
}

/// How many ranks of a kernel with `registers` per thread one SM of
/// `arch` (`sm_90`) holds in blocks of `block_dim`, and what bounds it
/// (`"registers"`, `"threads"` or `"blocks"`): the cuda backend's
/// occupancy rules ([`Bounds`]) on the SM's tabulated limits
/// ([`DeviceLimits::of_sm`]), for a kernel without shared memory.
pub fn ranks_per_sm(registers: u32, block_dim: u32, arch: &str) -> (u32, &'static str) {
    let cc = arch.trim_start_matches("sm_").parse().unwrap_or(90);
    let kernel = KernelResources {
        registers,
        shared_bytes: 0,
        dynamic_shared_bytes: 0,
        max_threads_per_block: 1024,
        local_bytes: 0,
    };
    let (blocks, resource) = Bounds::new(&DeviceLimits::of_sm(cc), &kernel, block_dim).limit();
    let bound = match resource {
        Resource::Registers => "registers",
        Resource::ThreadsPerSm => "threads",
        Resource::BlocksPerSm => "blocks",
        _ => "block size",
    };
    (blocks * block_dim, bound)
}

/// The SM whose rows the table shows: `wanted` (a GPU's `sm_XY`) when the
/// report has it, else the highest the report has below it, else its
/// highest (the emulator: no SM of its own).
fn chosen_arch(rows: &[Usage], wanted: Option<&str>) -> Option<String> {
    let number = |a: &str| a.trim_start_matches("sm_").parse::<u32>().unwrap_or(0);
    let mut archs: Vec<&str> = rows.iter().map(|u| u.arch.as_str()).collect();
    archs.sort_by_key(|a| number(a));
    archs.dedup();
    match wanted {
        Some(w) => archs.iter().rev().find(|a| number(a) <= number(w)),
        None => archs.last(),
    }
    .map(|a| a.to_string())
}

/// The `kernels` section for `images`, on a device of compute capability
/// `capability` (`None`: the emulator).
pub fn section(images: &KernelImages, capability: Option<(u32, u32)>) -> Section {
    let rows = parse_report(images.ptxas_report);
    let wanted = capability.map(|(major, minor)| format!("sm_{major}{minor}"));
    let arch = chosen_arch(&rows, wanted.as_deref());
    let block_dim = gpu_mpi::PREFERRED_BLOCK_DIM;
    let table: Vec<Row> = rows
        .iter()
        .filter(|u| Some(&u.arch) == arch.as_ref())
        .map(|u| {
            let (ranks, bound) = ranks_per_sm(u.registers, block_dim, &u.arch);
            vec![
                ("kernel", u.kernel.clone().into()),
                ("arch", u.arch.clone().into()),
                ("registers", u.registers.into()),
                ("stack_bytes", u.stack.into()),
                ("spill_bytes", (u.spills.0 + u.spills.1).into()),
                ("ranks_per_sm", ranks.into()),
                ("bound", bound.into()),
            ]
        })
        .collect();
    let mut notes = vec![format!(
        "ranks/SM: in blocks of {block_dim}, from the registers (allocated per warp in units of 256, whole warps in \
         each 16 Ki-register quarter of the SM) and the SM's thread and block limits; shared memory and the \
         driver's own occupancy are left out"
    )];
    if table.is_empty() {
        // The report's own lines say why ptxas did not run.
        let said: Vec<&str> = images
            .ptxas_report
            .lines()
            .filter(|l| l.starts_with("ptxas"))
            .collect();
        notes.push(match images.built_without {
            Some(why) => format!("no ptxas report: {why}"),
            None if said.is_empty() => "no ptxas report in this build".to_string(),
            None => format!("no ptxas report: {}", said.join("; ")),
        });
    }
    Section {
        suite: "kernels",
        title: match &arch {
            Some(a) => format!("kernels: registers, stack and ranks per SM ({a}, ptxas)"),
            None => "kernels: registers, stack and ranks per SM (ptxas)".to_string(),
        },
        columns: vec![
            ("kernel", "kernel"),
            ("registers", "regs"),
            ("stack_bytes", "stack B"),
            ("spill_bytes", "spills B"),
            ("ranks_per_sm", "ranks/SM"),
            ("bound", "bound by"),
        ],
        rows: table,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_per_sm_follow_the_register_allocation() {
        // 32 registers: every thread of an sm_90 SM.
        assert_eq!(ranks_per_sm(32, 256, "sm_90"), (2048, "threads"));
        assert_eq!(ranks_per_sm(64, 256, "sm_90"), (1024, "registers"));
        // 72 rounds to 9 units of 256 per warp, 7 warps per quarter: 3
        // blocks of 8 warps.
        assert_eq!(ranks_per_sm(72, 256, "sm_90"), (768, "registers"));
        // docs/gpu.md's example: 142 registers, 3 warps per quarter.
        assert_eq!(ranks_per_sm(142, 256, "sm_90"), (256, "registers"));
        assert_eq!(ranks_per_sm(128, 256, "sm_90"), (512, "registers"));
        assert_eq!(ranks_per_sm(255, 256, "sm_90"), (256, "registers"));
        // sm_86 holds 1536 threads: 6 blocks of 256 at 40 registers.
        assert_eq!(ranks_per_sm(40, 256, "sm_86"), (1536, "threads"));
        // Blocks of one warp: the SM's 32 block slots bind first.
        assert_eq!(ranks_per_sm(32, 32, "sm_90"), (1024, "blocks"));
    }

    #[test]
    fn the_report_is_parsed_and_the_gpu_s_arch_chosen() {
        let report = "gpu-mpi PTX report\n\
                      ptxas: /x/ptxas (V12.9)\n\
                      kernel                    arch    regs  stack  cum.stack  spill-st  spill-ld\n\
                      pi_p2p                    sm_80     60      0          -         0         0\n\
                      pi_p2p                    sm_90     64      8          8         4         4\n\
                      PTX lint: ok\n";
        let rows = parse_report(report);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[1],
            Usage {
                kernel: "pi_p2p".into(),
                arch: "sm_90".into(),
                registers: 64,
                stack: 8,
                spills: (4, 4)
            }
        );
        assert_eq!(chosen_arch(&rows, None).as_deref(), Some("sm_90"));
        assert_eq!(chosen_arch(&rows, Some("sm_89")).as_deref(), Some("sm_80"));
        assert_eq!(chosen_arch(&rows, Some("sm_90")).as_deref(), Some("sm_90"));
        let images = KernelImages {
            ptxas_report: Box::leak(report.to_string().into_boxed_str()),
            ..KernelImages::EMPTY
        };
        let s = section(&images, Some((9, 0)));
        assert_eq!(s.rows.len(), 1);
        let ranks = s.rows[0]
            .iter()
            .find(|(k, _)| *k == "ranks_per_sm")
            .map(|(_, v)| v.clone());
        assert_eq!(ranks, Some(1024.into()));
        let empty = section(&KernelImages::EMPTY, None);
        assert!(empty.rows.is_empty());
        assert!(
            empty.notes.iter().any(|n| n.contains("no ptxas report")),
            "{:?}",
            empty.notes
        );
    }
}
