//! Dynamic windows (MPI 4.1 §12.2.4) and shared-memory windows (§12.2.3)
//! on each backend (`testgen!`). The kernel is in
//! check/kernels/src/rma_flavors.rs.

use gpu_mpi::device::error::{AttachReason, Flavor};
use gpu_mpi::device::window::MAX_REGIONS;
use gpu_mpi::device::{Error, ErrorClass};
use gpu_mpi::{CpuOptions, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::rma::RmaArgs;
use gpu_mpi_check_kernels::rma_flavors::*;
use gpu_mpi_check_kernels::NONE;

/// Words of `data` per rank: the ring's elements and the extra regions.
const PART: u32 = 4;

/// Launches [`RMA_FLAVORS`]; returns every rank's records and the window
/// memory of `data`.
fn run(
    backend: Backend,
    ranks: u32,
    spec: WorldSpec,
    options: CpuOptions,
    slots: u32,
    param: u32,
    param2: u32,
) -> (Vec<u32>, Vec<u32>) {
    let d = backend.device_with(options);
    let data = d.alloc_zeroed::<u64>((ranks * PART) as usize).unwrap();
    let out = d.alloc_zeroed::<u32>((ranks * slots) as usize).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots,
        part: PART,
        param,
        param2,
    };
    d.launch(&RMA_FLAVORS, &args, &spec)
        .unwrap_or_else(|e| panic!("{e}"));
    let memory: Vec<u64> = d.download(&data).unwrap();
    (d.download(&out).unwrap(), bytemuck::cast_slice(&memory).to_vec())
}

/// Rank `r`'s segment of a [`shared_len`] shared window as
/// `exchange_segments` records it: its [`flavor_value`]s, [`NONE`] past
/// its length.
fn segment(r: u32) -> Vec<u32> {
    (0..3)
        .map(|k| {
            if (k as usize) < shared_len(r) {
                flavor_value(r, k)
            } else {
                NONE
            }
        })
        .collect()
}

/// A result recorded as five result-record words.
fn result(w: &[u32]) -> Result<(), Error> {
    let w: [u32; 5] = w.try_into().unwrap();
    match Error::from_words(w) {
        None if w == [0; 5] => Ok(()),
        None => panic!("not a result record: {w:?}"),
        Some(e) => Err(e),
    }
}

fn dynamic_windows_reach_attached_memory_and_nothing_else(backend: Backend) {
    let ranks = 12;
    let stack_ranks = 1 << 5;
    let options = CpuOptions {
        local_stacks: true,
        ..CpuOptions::default()
    };
    let slots = 3 + 5 + 5 + 5 + 4 + 5 + 1 + 5 + 5 + 1;
    let spec = WorldSpec::ranks(ranks).windows(2).window_bytes(64).block_dim(4);
    let (out, memory) = run(backend, ranks, spec, options, slots, FLAVOR_DYNAMIC, stack_ranks);
    let ring = RING as u32;
    for r in 0..ranks {
        let prev = (r + ranks - 1) % ranks;
        let rec = &out[(r * slots) as usize..((r + 1) * slots) as usize];
        assert_eq!(
            rec[..3],
            [Flavor::Dynamic as u32, 1, 0],
            "rank {r}: flavor, unit, length"
        );
        assert_eq!(
            result(&rec[3..8]),
            Err(Error::WindowFlavor {
                flavor: Flavor::Allocate as u32
            }),
            "rank {r}: an attach to an allocated window"
        );
        let past = result(&rec[8..13]).unwrap_err();
        assert_eq!(
            past.class(),
            ErrorClass::RmaRange,
            "rank {r}: one element past the region"
        );
        assert!(
            matches!(past, Error::RmaRange { target, bytes: 4, size: 0, .. } if target == ((r + 1) % ranks) as i32),
            "rank {r}: {past:?}"
        );
        assert_eq!(
            result(&rec[13..18]).map_err(|e| e.class()),
            Err(ErrorClass::RmaRange),
            "rank {r}: a byte inside an element"
        );
        let want: Vec<u32> = (0..ring).map(|k| flavor_value(prev, k)).collect();
        assert_eq!(
            rec[18..22],
            want[..],
            "rank {r}: its attached memory after the fence"
        );
        assert_eq!(
            result(&rec[22..27]),
            Err(Error::WindowAttach {
                reason: AttachReason::Full as u32,
                bytes: 4
            }),
            "rank {r}: a region beyond {MAX_REGIONS}"
        );
        assert_eq!(rec[27], 0, "rank {r}: an empty attach takes no region");
        assert_eq!(
            result(&rec[28..33]).map_err(|e| e.class()),
            Err(ErrorClass::RmaRange),
            "rank {r}: a put to detached memory"
        );
        let mut at = 33;
        if stack_ranks & (1 << r) != 0 {
            assert_eq!(
                result(&rec[at..at + 5]),
                Err(Error::WindowAttach {
                    reason: AttachReason::Unreachable as u32,
                    bytes: 8
                }),
                "rank {r}: an array on its stack"
            );
            at += 5;
        }
        assert_eq!(
            rec[at],
            ErrorClass::RmaFlavor as u32,
            "rank {r}: a shared query of a dynamic window"
        );
        // What the puts left in memory: the ring, and nothing past it
        // (the extra regions were never written).
        let base = (r * PART * 2) as usize;
        assert_eq!(memory[base..base + RING], want[..], "rank {r}: memory");
        assert!(
            memory[base + RING..base + 2 * PART as usize]
                .iter()
                .all(|&w| w == 0),
            "rank {r}: memory past the ring"
        );
    }
}
testgen!(dynamic_windows_reach_attached_memory_and_nothing_else);

fn shared_windows_are_contiguous_and_loadable_by_every_rank(backend: Backend) {
    for ranks in [1, 7, 64] {
        let slots = 3 + 2 + 3 + 3 + 1;
        let spec = WorldSpec::ranks(ranks).windows(2).window_bytes(1024);
        let (out, _) = run(
            backend,
            ranks,
            spec,
            CpuOptions::default(),
            slots,
            FLAVOR_SHARED,
            0,
        );
        for r in 0..ranks {
            let next = (r + 1) % ranks;
            let rec = &out[(r * slots) as usize..((r + 1) * slots) as usize];
            assert_eq!(
                rec[..3],
                [Flavor::Shared as u32, 4, shared_len(r) as u32],
                "{ranks} ranks, rank {r}: flavor, unit, length"
            );
            assert_eq!(
                rec[3..5],
                [1, 1],
                "{ranks} ranks, rank {r}: contiguous, PROC_NULL is rank 0's"
            );
            let want = segment(next);
            assert_eq!(
                rec[5..8],
                want[..],
                "{ranks} ranks, rank {r}: loads of the next rank's segment"
            );
            assert_eq!(rec[8..11], want[..], "{ranks} ranks, rank {r}: a get of it");
            assert_eq!(
                rec[11],
                ErrorClass::Rank as u32,
                "{ranks} ranks, rank {r}: a query of rank {ranks}"
            );
        }
    }
}
testgen!(shared_windows_are_contiguous_and_loadable_by_every_rank);

fn shared_windows_whose_segments_do_not_fit_together_fail_every_rank(backend: Backend) {
    let ranks = 8;
    // 64 bytes per rank and window: 16 u32s in all. Rank r asks for
    // 2 (r + 1): 72 in all, so the sum (288 bytes) is too large although
    // every rank's own part would fit.
    let spec = WorldSpec::ranks(ranks).windows(2).window_bytes(64);
    let (out, _) = run(
        backend,
        ranks,
        spec,
        CpuOptions::default(),
        10,
        FLAVOR_SHARED_LIMIT,
        2,
    );
    for r in 0..ranks {
        let rec = &out[(r * 10) as usize..((r + 1) * 10) as usize];
        assert_eq!(
            result(&rec[..5]),
            Err(Error::WindowAllocation {
                requested: 288,
                available: 64
            }),
            "rank {r}"
        );
        assert_eq!(result(&rec[5..10]), Ok(()), "rank {r}: 8 u32s fit");
    }
}
testgen!(shared_windows_whose_segments_do_not_fit_together_fail_every_rank);

fn shared_windows_of_a_block_live_in_its_shared_memory(backend: Backend) {
    let (ranks, block) = (12, 4);
    let slots = BLOCK_WORDS;
    // 256 bytes of each block's shared memory (16 parts of 16 bytes): a
    // block's segments (at most 4 x 3 u32s) fit, 100 u32s per rank do not
    // and go to the world memory (rank 0's 2048 window bytes). Window ids
    // are the world's: each block holds two at once.
    let spec = WorldSpec::ranks(ranks)
        .block_dim(block)
        .windows(8)
        .window_bytes(2048)
        .shared_window_bytes(256);
    let (out, _) = run(
        backend,
        ranks,
        spec,
        CpuOptions::default(),
        slots,
        FLAVOR_BLOCK,
        100,
    );
    for r in 0..ranks {
        let b = r % block;
        let next = (b + 1) % block;
        let rec = &out[(r * slots) as usize..((r + 1) * slots) as usize];
        assert_eq!(
            rec[..2],
            [1, Flavor::Shared as u32],
            "rank {r}: in the block's memory"
        );
        let want = segment(next);
        assert_eq!(rec[2..5], want[..], "rank {r}: loads of the next segment");
        assert_eq!(rec[5..8], want[..], "rank {r}: a get of it");
        assert_eq!(
            rec[8],
            flavor_value(0, 0) + block,
            "rank {r}: every rank's accumulate on block rank 0's first element"
        );
        assert_eq!(
            rec[9..],
            [0, 0, 1, 1, 1],
            "rank {r}: across blocks, too large, a second one apart, the first's memory again"
        );
    }
}
testgen!(shared_windows_of_a_block_live_in_its_shared_memory);

#[test]
fn shared_window_memory_needs_windows_and_a_bound() {
    use gpu_mpi::device::abi::layout::{ConfigError, MAX_SHARED_WINDOW_BYTES};
    let d = Backend::Cpu.device_with(CpuOptions::default());
    let out = d.alloc_zeroed::<u32>(4).unwrap();
    let data = d.alloc_zeroed::<u64>(4).unwrap();
    let args = RmaArgs {
        out: out.slice(),
        data: data.slice(),
        slots: 1,
        part: 1,
        param: FLAVOR_SHARED,
        param2: 0,
    };
    for (spec, bytes) in [
        (WorldSpec::ranks(4).shared_window_bytes(64), 64),
        (
            WorldSpec::ranks(4)
                .windows(1)
                .shared_window_bytes(MAX_SHARED_WINDOW_BYTES + 1),
            MAX_SHARED_WINDOW_BYTES + 1,
        ),
    ] {
        let e = d.launch(&RMA_FLAVORS, &args, &spec).unwrap_err().to_string();
        assert!(
            e.contains(&ConfigError::SharedWindowBytes(bytes).to_string()),
            "{e}"
        );
    }
}

#[test]
fn the_new_error_classes_have_their_mpi_names() {
    let attach = Error::WindowAttach {
        reason: AttachReason::Overlap as u32,
        bytes: 12,
    };
    assert_eq!(attach.class(), ErrorClass::RmaAttach);
    assert_eq!(Error::from_words(attach.to_words()), Some(attach));
    assert!(attach
        .to_string()
        .starts_with("MPI_ERR_RMA_ATTACH: 12 bytes not attached: they overlap"));
    let flavor = Error::WindowFlavor {
        flavor: Flavor::Create as u32,
    };
    assert_eq!(flavor.class(), ErrorClass::RmaFlavor);
    assert_eq!(Error::from_words(flavor.to_words()), Some(flavor));
    assert!(flavor.to_string().contains("MPI_WIN_FLAVOR_CREATE"), "{flavor}");
}
