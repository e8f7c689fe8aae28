//! Chapter 5: collectives and the hardware hierarchy (MPI 4.1 chapter 6).

use crate::{args, check, say, text, Chapter};
use gpu_mpi::WorldSpec;
use gpu_mpi_example_tutorial_kernels::{
    COLLECTIVES, COLLECTIVES_BARRIERS, COLLECTIVES_RESULTS, COLLECTIVE_WORDS,
};

const RANKS: u32 = 256;
const ROOT: u32 = 5;
const BARRIERS: u32 = 10;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let out = device
        .alloc_zeroed::<u32>(RANKS as usize * COLLECTIVE_WORDS)
        .map_err(text)?;
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    let spec = WorldSpec::ranks(RANKS).block_dim(64);
    let report = device
        .launch(&COLLECTIVES, &args(COLLECTIVES_RESULTS, ROOT, &out, &none), &spec)
        .map_err(text)?;
    let words = device.download(&out).map_err(text)?;
    let sum = RANKS * (RANKS - 1) / 2;
    for r in 0..RANKS {
        let w = &words[r as usize * COLLECTIVE_WORDS..][..COLLECTIVE_WORDS];
        let expected = [42, ROOT, sum, r * r.saturating_sub(1) / 2];
        check(w == expected, || {
            format!("rank {r} recorded {w:?}, expected {expected:?}")
        })?;
    }
    say!(
        c,
        "{} ranks in {} blocks of {}: broadcast from rank {ROOT}, all-reduce (sum), exclusive scan (sum)",
        report.ranks,
        report.blocks,
        report.block_dim
    );
    say!(
        c,
        "every rank: broadcast [42, {ROOT}], sum of ranks {sum}, prefix r(r-1)/2: checked"
    );

    // The barrier's cost by block size: one arrival per block.
    let Some(_) = report.sync_counts else {
        say!(c, "(no operation counts on the {} backend)", report.backend);
        return Ok(());
    };
    say!(
        c,
        "{BARRIERS} barriers of {RANKS} ranks, synchronising operations per barrier:"
    );
    say!(c, "block  blocks  arrivals  acquire loads  fences  all");
    for block in [32, 64, 128, 256] {
        let spec = WorldSpec::ranks(RANKS).block_dim(block);
        let report = device
            .launch(
                &COLLECTIVES,
                &args(COLLECTIVES_BARRIERS, BARRIERS, &out, &none),
                &spec,
            )
            .map_err(text)?;
        let counts = report.sync_counts.ok_or("no operation counts")?.total();
        let per = |n: u64| n as f64 / BARRIERS as f64;
        say!(
            c,
            "{:>5}  {:>6}  {:>8}  {:>13}  {:>6}  {:>5}",
            block,
            report.blocks,
            per(counts.acq_rel_rmws),
            per(counts.acquire_loads),
            per(counts.fences),
            per(counts.synchronizing())
        );
        // One arrival per block (its rank 0 adds to the world's count),
        // which the other blocks poll: no release store, no fence, and no
        // memory at all for a world of one block (the block barrier alone).
        let arrivals = if report.blocks > 1 { report.blocks } else { 0 };
        check(counts.acq_rel_rmws == (BARRIERS * arrivals) as u64, || {
            format!("blocks of {block}: {} arrivals", counts.acq_rel_rmws)
        })?;
        check(counts.release_stores == 0 && counts.fences == 0, || {
            format!(
                "blocks of {block}: {} release stores, {} fences",
                counts.release_stores, counts.fences
            )
        })?;
    }
    Ok(())
}
