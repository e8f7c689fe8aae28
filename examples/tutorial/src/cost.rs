//! Chapter 8: what a message costs on a GPU, counted by the emulator.

use crate::{check, say, text, Chapter};
use gpu_mpi::{SyncCounts, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{TutorialArgs, COST};

const ROUNDS: u32 = 100;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.emulator();
    say!(
        c,
        "ping-pong, {ROUNDS} rounds (200 messages), 64 ranks in blocks of 32, 64-byte slots"
    );
    say!(
        c,
        "per message:       release  acquire  release  acquire  fences  all"
    );
    say!(c, "                   swaps    swaps    stores   loads");
    let runs = [
        (1, 1, "8 B, same warp"),
        (32, 1, "8 B, other block"),
        (1, 16, "128 B, same warp"),
        (32, 16, "128 B, other block"),
    ];
    for (peer, words, what) in runs {
        let out = device.alloc_zeroed::<u32>(1).map_err(text)?;
        let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
        let args = TutorialArgs {
            mode: peer,
            count: ROUNDS,
            words,
            reserved: 0,
            out: out.slice(),
            datatype: none.slice(),
        };
        let spec = WorldSpec::ranks(64).block_dim(32).slot_bytes(64);
        let report = device.launch(&COST, &args, &spec).map_err(text)?;
        let right = device.download(&out).map_err(text)?[0];
        check(right == ROUNDS, || {
            format!("{what}: {right} of {ROUNDS} replies right")
        })?;
        let t: SyncCounts = report.sync_counts.ok_or("no operation counts")?.total();
        let per = |n: u64| n as f64 / (2 * ROUNDS) as f64;
        say!(
            c,
            "{:<18} {:>7}  {:>7}  {:>7}  {:>7}  {:>6}  {:>4}",
            what,
            per(t.release_rmws),
            per(t.acquire_rmws),
            per(t.release_stores),
            per(t.acquire_loads),
            per(t.fences),
            per(t.synchronizing())
        );
        check(t.release_rmws == 2 * ROUNDS as u64, || {
            format!(
                "{what}: {} release swaps for {} messages",
                t.release_rmws,
                2 * ROUNDS
            )
        })?;
    }
    Ok(())
}
