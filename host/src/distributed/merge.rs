//! After a run across processes: every process sends the others its own
//! ranks' part of the world memory (wait and result records, trace
//! buffers, outboxes and their slots' states, rank headers and request
//! records) and how its run ended, and each builds the same whole world
//! from them: its launch report, failed ranks and deadlock report name
//! every rank of every process.

use super::Processes;
use crate::backend::RunStats;
use crate::cpu::scheduler::{report_parked, Outcome};
use crate::cpu::LocalEnd;
use crate::error::{AllocError, DistributedError, HostError};
use gpu_mpi_device::abi::layout::{Layout, ABORT_OFFSET, RECORD_STRIDE, RESULT_STRIDE, SLOT_STATE_BYTES};
use mpi::datatype::PartitionMut;
use mpi::traits::CommunicatorCollectives;

/// The byte ranges of world memory that belong to `rank`.
fn regions(layout: &Layout, rank: u32) -> [(usize, usize); 6] {
    let first_slot = rank * layout.slots_per_rank;
    [
        (layout.record(rank), RECORD_STRIDE),
        (layout.result(rank), RESULT_STRIDE),
        (layout.trace_of(rank), layout.trace_stride),
        (layout.outbox(rank), layout.outbox_stride),
        (
            layout.slot_state_of_id(first_slot),
            layout.slots_per_rank as usize * SLOT_STATE_BYTES,
        ),
        (layout.rank_header(rank), layout.rank_stride),
    ]
}

/// How a process's run ended, as it travels.
fn encode_outcome(outcome: &Outcome) -> (u32, u32, String) {
    match outcome {
        Outcome::Finished { .. } => (0, 0, String::new()),
        Outcome::Deadlock(_) => (1, 0, String::new()),
        Outcome::Panicked { rank, message } => (2, *rank, message.clone()),
        Outcome::WarpMismatch { rank, message } => (3, *rank, message.clone()),
        Outcome::StackOverflow { rank } => (4, *rank, String::new()),
        Outcome::NoThread(e) => (5, 0, e.to_string()),
        Outcome::Remote => (6, 0, String::new()),
    }
}

fn put(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn get(v: &[u8], at: &mut usize) -> u64 {
    let x = u64::from_le_bytes(v[*at..*at + 8].try_into().expect("8 bytes"));
    *at += 8;
    x
}

/// Exchanges the processes' parts of the world (`world`, laid out as
/// `layout`) and their outcomes (this process's in `local`), and returns
/// how the whole world's run ended.
pub(crate) fn merge(
    processes: &Processes,
    layout: &Layout,
    world: &mut [u8],
    local: LocalEnd,
) -> Result<RunStats, HostError> {
    let LocalEnd {
        ranks,
        outcome,
        parked,
        elapsed,
        stack_bytes,
    } = local;
    let comm = processes.world();
    let mut mine = Vec::new();
    put(&mut mine, layout.total as u64);
    put(&mut mine, u64::from(layout.ranks));
    put(&mut mine, u64::from(ranks.start));
    put(&mut mine, u64::from(ranks.end));
    let abort = u32::from_le_bytes(world[ABORT_OFFSET..ABORT_OFFSET + 4].try_into().expect("4 bytes"));
    put(&mut mine, u64::from(abort));
    let (code, rank, message) = encode_outcome(&outcome);
    put(&mut mine, u64::from(code));
    put(&mut mine, u64::from(rank));
    put(&mut mine, message.len() as u64);
    mine.extend_from_slice(message.as_bytes());
    for (i, r) in ranks.clone().enumerate() {
        put(&mut mine, parked[i]);
        for (at, len) in regions(layout, r) {
            mine.extend_from_slice(&world[at..at + len]);
        }
    }
    let n = processes.count() as usize;
    let mut lens = vec![0u64; n];
    comm.all_gather_into(&(mine.len() as u64), &mut lens[..]);
    let counts: Vec<i32> = lens
        .iter()
        .map(|&l| {
            i32::try_from(l).map_err(|_| DistributedError::Mpi(format!("a process's part of {l} bytes")))
        })
        .collect::<Result<_, _>>()?;
    let displs: Vec<i32> = counts
        .iter()
        .scan(0i32, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; lens.iter().sum::<u64>() as usize];
    {
        let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        comm.all_gather_varcount_into(&mine[..], &mut part);
    }
    let mut parked_all = vec![0u64; layout.ranks as usize];
    let mut outcomes = Vec::with_capacity(n);
    for q in 0..n {
        let part = &all[displs[q] as usize..displs[q] as usize + counts[q] as usize];
        let mut at = 0;
        let (total, world_ranks) = (get(part, &mut at), get(part, &mut at));
        if (total, world_ranks) != (layout.total as u64, u64::from(layout.ranks)) {
            return Err(DistributedError::Mismatch {
                process: q as u32,
                theirs: format!("a world of {world_ranks} ranks in {total} bytes"),
                ours: format!("a world of {} ranks in {} bytes", layout.ranks, layout.total),
            }
            .into());
        }
        let (first, end) = (get(part, &mut at) as u32, get(part, &mut at) as u32);
        let their_abort = get(part, &mut at) as u32;
        if their_abort != 0 && world[ABORT_OFFSET..ABORT_OFFSET + 4] == [0; 4] {
            world[ABORT_OFFSET..ABORT_OFFSET + 4].copy_from_slice(&their_abort.to_le_bytes());
        }
        let (code, rank, len) = (
            get(part, &mut at),
            get(part, &mut at) as u32,
            get(part, &mut at) as usize,
        );
        let message = String::from_utf8_lossy(&part[at..at + len]).into_owned();
        at += len;
        outcomes.push((code, rank, message));
        for r in first..end {
            parked_all[r as usize] = get(part, &mut at);
            for (off, len) in regions(layout, r) {
                if q != processes.index() as usize {
                    world[off..off + len].copy_from_slice(&part[at..at + len]);
                }
                at += len;
            }
        }
    }
    for (code, rank, message) in &outcomes {
        let (rank, message) = (*rank, message.clone());
        match code {
            2 => return Err(HostError::RankPanicked { rank, message }),
            3 => return Err(HostError::WarpMismatch { rank, message }),
            4 => return Err(HostError::StackOverflow { rank, stack_bytes }),
            5 => {
                return Err(AllocError::WorkerThread {
                    source: std::io::Error::other(message),
                }
                .into())
            }
            _ => {}
        }
    }
    if outcomes.iter().any(|(code, _, _)| *code == 1) {
        let mut report = report_parked(world, layout, &parked_all);
        let per_process = layout.ranks / processes.count();
        for b in &mut report.ranks {
            b.process = b.rank / per_process;
        }
        return Err(HostError::Deadlock(report));
    }
    Ok(RunStats {
        elapsed,
        // Counted per process; not gathered.
        sync_counts: None,
        model: None,
    })
}
