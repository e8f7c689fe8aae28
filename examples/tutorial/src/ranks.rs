//! Chapter 1: ranks are threads; blocks, warps, co-residency.

use crate::{args, check, say, text, Chapter};
use gpu_mpi::{HostError, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{WHERE_AM_I, WHERE_WORDS};

const RANKS: u32 = 96;
const BLOCK: u32 = 48;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let out = device
        .alloc_zeroed::<u32>(RANKS as usize * WHERE_WORDS)
        .map_err(text)?;
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    let spec = WorldSpec::ranks(RANKS).block_dim(BLOCK);
    let report = device
        .launch(&WHERE_AM_I, &args(0, 0, &out, &none), &spec)
        .map_err(text)?;
    let words = device.download(&out).map_err(text)?;
    say!(
        c,
        "world of {} ranks in blocks of {}: {} blocks, {} warps per block (the last one partial)",
        report.ranks,
        report.block_dim,
        report.blocks,
        BLOCK.div_ceil(32)
    );
    say!(c, "rank  block  thread  warp  lane  lane 0 of its warp");
    for r in 0..RANKS {
        let w = &words[r as usize * WHERE_WORDS..][..WHERE_WORDS];
        let thread = r % BLOCK;
        let expected = [r / BLOCK, thread, thread / 32, thread % 32, r - thread % 32];
        check(w == expected, || {
            format!("rank {r} recorded {w:?}, expected {expected:?}")
        })?;
        if [0, 31, 32, 47, 48, 95].contains(&r) {
            say!(
                c,
                "{:>4}  {:>5}  {:>6}  {:>4}  {:>4}  {:>18}",
                r,
                w[0],
                w[1],
                w[2],
                w[3],
                w[4]
            );
        }
    }
    say!(
        c,
        "all {RANKS} ranks: rank = block * {BLOCK} + thread, warp = thread / 32, lane = thread % 32"
    );

    // Co-residency: how many ranks fit at once, and what is refused.
    let fit = device.residency(256);
    say!(
        c,
        "blocks of 256: {} SMs x {} blocks = {} ranks at once (limit: {})",
        fit.sms,
        fit.blocks_per_sm,
        fit.capacity(),
        fit.limit
    );
    let too_many = fit.capacity() + 256;
    // A prime rank count runs in blocks of one rank (the only divisor).
    let one_rank_blocks = device.residency(1).capacity();
    let prime = (one_rank_blocks + 1..)
        .find(|&n| (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0))
        .unwrap_or(u32::MAX);
    let refusals = [
        WorldSpec::ranks(too_many).block_dim(256),
        WorldSpec::ranks(prime),
        WorldSpec::ranks(2048).block_dim(2048),
    ];
    for spec in refusals {
        match device.launch(&WHERE_AM_I, &args(0, 0, &out, &none), &spec) {
            Err(e @ HostError::NotCoResident { .. }) => say!(c, "refused: {e}"),
            Err(e) => return Err(format!("expected NotCoResident, got: {e}")),
            Ok(_) => return Err(format!("a world of {:?} ranks was not refused", spec.ranks)),
        }
    }
    Ok(())
}
