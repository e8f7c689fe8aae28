//! Chapter 9: one-sided communication (MPI 4.1 chapter 12).

use crate::{args, check, say, text, Chapter};
use gpu_mpi::{HostError, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{
    ONE_SIDED, ONE_SIDED_FENCE, ONE_SIDED_LOCK_LEFT, ONE_SIDED_NOTIFY, ONE_SIDED_NO_EPOCH,
    ONE_SIDED_RANKS as RANKS, ONE_SIDED_TICKETS,
};

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    // One window at a time, RANKS u32s of window memory per rank.
    let spec = |ranks: u32| WorldSpec::ranks(ranks).windows(1).window_bytes(4 * RANKS);
    let launch = |mode: u32, ranks: u32| -> Result<Vec<u32>, HostError> {
        let out = device.alloc_zeroed::<u32>(RANKS as usize)?;
        device.launch(&ONE_SIDED, &args(mode, 0, &out, &none), &spec(ranks))?;
        device.download(&out)
    };

    let window = launch(ONE_SIDED_FENCE, RANKS).map_err(text)?;
    let want: Vec<u32> = (0..RANKS).map(|r| 10 * r).collect();
    check(window == want, || format!("fence: rank 0's window {window:?}"))?;
    say!(c, "fence, put, fence: rank 0's window holds {}", list(&window));

    let mut tickets = launch(ONE_SIDED_TICKETS, RANKS).map_err(text)?;
    tickets.sort_unstable();
    check(tickets == (0..RANKS).collect::<Vec<_>>(), || {
        format!("tickets {tickets:?}")
    })?;
    say!(
        c,
        "lock_all, fetch_and_op: {RANKS} ranks took the tickets 0 to {}, each once",
        RANKS - 1
    );

    let got = launch(ONE_SIDED_NOTIFY, RANKS).map_err(text)?;
    let want: Vec<u32> = (0..RANKS).map(|r| 100 + (r + RANKS - 1) % RANKS).collect();
    check(got == want, || format!("notified ring {got:?}"))?;
    say!(
        c,
        "put_notify, wait_notifications: rank 0 read {}, rank 1 read {}, ... rank {} read {}",
        got[0],
        got[1],
        RANKS - 1,
        got[RANKS as usize - 1]
    );

    match launch(ONE_SIDED_NO_EPOCH, 2) {
        Err(HostError::RankFailed { errors, .. }) => {
            let (rank, e) = &errors[0];
            say!(c, "a put before any epoch: rank {rank}: {e}");
        }
        other => return Err(format!("a put outside an epoch: {other:?}")),
    }

    let device = c.emulator();
    let out = device.alloc_zeroed::<u32>(RANKS as usize).map_err(text)?;
    match device.launch(&ONE_SIDED, &args(ONE_SIDED_LOCK_LEFT, 0, &out, &none), &spec(2)) {
        Err(HostError::Deadlock(report)) => {
            for line in report.to_string().lines() {
                say!(c, "{line}");
            }
        }
        other => return Err(format!("a lock never given back: {other:?}")),
    }
    Ok(())
}
