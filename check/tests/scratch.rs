//! Per-rank scratch in the world memory (`WorldSpec::scratch_bytes`,
//! `World::scratch`) on each backend (`testgen!`): a sample sort of 4096
//! ranks whose O(p) arrays live in the scratch (on the emulator's default
//! 64 KiB stacks, which they would overflow), the error of a bucket larger
//! than the scratch, and the scratch's rules (capacity, one at a time,
//! alignment, exhaustion, privacy).

use gpu_mpi::device::ErrorClass;
use gpu_mpi::{HostError, WorldSpec};
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::scratch::*;

/// `n` keys, a permutation of `0..n` (multiplication by an odd number
/// modulo a power of two), so the sorted result is `0..n`.
fn keys(n: u32) -> Vec<u32> {
    assert!(n.is_power_of_two());
    (0..n).map(|i| i.wrapping_mul(2_654_435_761) & (n - 1)).collect()
}

fn sort(
    backend: Backend,
    ranks: u32,
    keys_per_rank: u32,
    scratch: u64,
) -> Result<(Vec<u32>, Vec<u32>), HostError> {
    let d = backend.device();
    let n = ranks * keys_per_rank;
    let input = d.upload(&keys(n))?;
    let sorted = d.alloc_zeroed::<u32>(n as usize)?;
    let received = d.alloc_zeroed::<u32>(ranks as usize)?;
    let args = SortArgs {
        keys: input.slice(),
        sorted: sorted.slice(),
        received: received.slice(),
        keys_per_rank,
        reserved: 0,
    };
    d.launch(
        &SAMPLE_SORT,
        &args,
        &WorldSpec::ranks(ranks).scratch_bytes(scratch),
    )?;
    Ok((d.download(&sorted)?, d.download(&received)?))
}

fn a_sample_sort_of_4096_ranks_keeps_its_o_p_arrays_in_scratch(backend: Backend) {
    let (ranks, k) = (4096, 8);
    let scratch = sort_scratch_bytes(u64::from(ranks), u64::from(k), 16 * u64::from(k));
    let (sorted, received) = sort(backend, ranks, k, scratch).unwrap();
    assert_eq!(sorted, (0..ranks * k).collect::<Vec<u32>>());
    assert_eq!(received.iter().sum::<u32>(), ranks * k);
    // The samples spread over the keys: most buckets hold keys.
    assert!(
        received.iter().filter(|&&c| c > 0).count() > ranks as usize / 2,
        "{received:?}"
    );
}
testgen!(a_sample_sort_of_4096_ranks_keeps_its_o_p_arrays_in_scratch);

fn a_bucket_larger_than_the_scratch_fails_with_no_mem(backend: Backend) {
    // Room for the arrays (1312 bytes, rounded up to 1344) and a bucket of
    // 8 keys: the ranks whose bucket holds more (the keys are the same
    // every run, and some buckets hold 11 or more) fail with
    // MPI_ERR_NO_MEM, the others return Ok.
    match sort(backend, 64, 8, 4 * (8 + 5 * 64)) {
        Err(HostError::RankFailed { errors, .. }) => {
            assert!(!errors.is_empty());
            for (rank, e) in &errors {
                assert_eq!(e.class(), ErrorClass::NoMem, "rank {rank}: {e}");
            }
        }
        other => panic!("expected MPI_ERR_NO_MEM, got {other:?}"),
    }
}
testgen!(a_bucket_larger_than_the_scratch_fails_with_no_mem);

fn the_scratch_is_private_aligned_single_and_bounded(backend: Backend) {
    let d = backend.device();
    let ranks = 96;
    let out = d.alloc_zeroed::<u32>(ranks * RULE_WORDS).unwrap();
    d.launch(
        &SCRATCH_RULES,
        &out.slice(),
        &WorldSpec::ranks(ranks as u32).block_dim(32).scratch_bytes(100),
    )
    .unwrap();
    let words = d.download(&out).unwrap();
    let no_mem = ErrorClass::NoMem as u32;
    for (r, w) in words.chunks(RULE_WORDS).enumerate() {
        // 100 bytes rounded up to 128; 1 + 7 (alignment) + 8 taken before
        // the request of one byte more than the 112 left.
        assert_eq!(w, [128, no_mem, 1, no_mem, 112, r as u32, no_mem, 1], "rank {r}");
    }
    // Without scratch the capacity is 0 and every non-empty piece fails.
    let e = d
        .launch(&SCRATCH_RULES, &out.slice(), &WorldSpec::ranks(32))
        .unwrap_err();
    match e {
        HostError::RankFailed { errors, .. } => {
            assert_eq!(errors.len(), 32);
            for (rank, e) in &errors {
                assert_eq!(
                    *e,
                    gpu_mpi::device::Error::ScratchExhausted {
                        requested: 1,
                        available: 0
                    },
                    "rank {rank}"
                );
            }
        }
        other => panic!("{other:?}"),
    }
}
testgen!(the_scratch_is_private_aligned_single_and_bounded);
