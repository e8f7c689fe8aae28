//! Chapter 8: what a message costs on a GPU, counted by the emulator and,
//! with `GPU_MPI_MODEL` set, modelled in its timing mode (docs/model.md).

use crate::{check, say, text, Chapter};
use gpu_mpi::{Device, LaunchReport, Profile, SyncCounts, TimeCategory, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{TutorialArgs, COST};

const ROUNDS: u32 = 100;

/// The ping-pongs: (peer, words per message, label).
const RUNS: [(u32, u32, &str); 4] = [
    (1, 1, "8 B, same warp"),
    (32, 1, "8 B, other block"),
    (1, 16, "128 B, same warp"),
    (32, 16, "128 B, other block"),
];

/// Messages of one ping-pong: a message and its reply per round.
const MESSAGES: f64 = (2 * ROUNDS) as f64;

/// Runs one ping-pong with rank `peer` and `words` words per message,
/// modelled on `model` when given; checks every reply.
fn ping_pong(
    device: &Device,
    peer: u32,
    words: u32,
    what: &str,
    model: Option<&'static Profile>,
) -> Result<LaunchReport, String> {
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
    let mut spec = WorldSpec::ranks(64).block_dim(32).slot_bytes(64);
    if let Some(p) = model {
        spec = spec.model(p);
    }
    let report = device.launch(&COST, &args, &spec).map_err(text)?;
    let right = device.download(&out).map_err(text)?[0];
    check(right == ROUNDS, || {
        format!("{what}: {right} of {ROUNDS} replies right")
    })?;
    Ok(report)
}

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.emulator();
    say!(
        c,
        "ping-pong, {ROUNDS} rounds (200 messages), 64 ranks in blocks of 32, 64-byte slots"
    );
    say!(
        c,
        "per message:       release  relaxed  release  acquire  fences  all"
    );
    say!(c, "                   swaps    swaps    stores   loads");
    for (peer, words, what) in RUNS {
        let report = ping_pong(&device, peer, words, what, None)?;
        let t: SyncCounts = report.sync_counts.ok_or("no operation counts")?.total();
        let per = |n: u64| n as f64 / MESSAGES;
        say!(
            c,
            "{:<18} {:>7}  {:>7}  {:>7}  {:>7}  {:>6}  {:>4}",
            what,
            per(t.release_rmws),
            per(t.relaxed_rmws),
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
    match Profile::from_env().map_err(text)? {
        Some(profile) => modelled(c, &device, profile),
        None => {
            say!(
                c,
                "(with GPU_MPI_MODEL=h100: the same ping-pongs in modelled H100 time, docs/model.md)"
            );
            Ok(())
        }
    }
}

/// The ping-pongs again in timing mode on `profile`: the modelled one-way
/// time of a message and where each of the two ranks' time went, per
/// message.
fn modelled(c: &mut Chapter, device: &Device, profile: &'static Profile) -> Result<(), String> {
    say!(c, "");
    say!(c, "modelled on {}, ns per message:", profile.name);
    let mut header = format!("{:<18} {:>7}  {:>4}", "", "one way", "rank");
    for category in TimeCategory::ALL {
        header.push_str(&format!(" {:>8}", category.name()));
    }
    say!(c, "{}", header.trim_end());
    for (peer, words, what) in RUNS {
        let report = ping_pong(device, peer, words, what, Some(profile))?;
        let m = report.model.ok_or("no modelled time in timing mode")?;
        // Rank 0's clock runs from its first send to its last reply:
        // every message of the ping-pong, one after the other.
        let one_way = m.ranks[0].end_ps as f64 / 1e3 / MESSAGES;
        for (i, rank) in [0, peer].into_iter().enumerate() {
            let t = m.ranks[rank as usize];
            let label = if i == 0 { what } else { "" };
            let time = if i == 0 {
                format!("{one_way:.0}")
            } else {
                String::new()
            };
            let mut row = format!("{label:<18} {time:>7}  {rank:>4}");
            for category in TimeCategory::ALL {
                row.push_str(&format!(" {:>8.0}", t.ns(category) / MESSAGES));
            }
            say!(c, "{row}");
            check(t.spent_ps.iter().sum::<u64>() == t.end_ps, || {
                format!("{what}: rank {rank}'s categories do not add up to its clock")
            })?;
        }
    }
    Ok(())
}
