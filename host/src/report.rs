//! Reading a world after a launch: deadlock reports and rank errors.
//!
//! Backend-independent: it works on the world memory as bytes (the emulator's
//! own buffer, or a copy downloaded from the GPU) and its [`Layout`]. Two entry
//! points:
//! - [`DeadlockReport::from_world`] lists what every rank was doing, from the
//!   wait records, the messages left in the outboxes, and hints for the
//!   patterns it recognises (the emulator calls it when its scheduler found
//!   a deadlock);
//! - [`check_world`] decides the outcome of a launch that ran to its end: a
//!   timed-out wait means a deadlock (the GPU's path, and the emulator's when
//!   the world has a timeout), rank errors mean [`HostError::RankFailed`].
//!
//! The report's types ([`DeadlockReport`] and its parts) are defined below
//! the errors, in the crate's `deadlock.rs`, and re-exported here; this
//! module, which turns a world into a [`HostError`], stands above them.

use crate::deadlock::{record_words, result_words};
pub use crate::deadlock::{BlockedRank, BlockedState, DeadlockReport, Hint, LockHolder, UnreceivedMessage};
use crate::error::HostError;
use gpu_mpi_device::abi::layout::{Layout, ABORT_OFFSET, ABORT_TIMED_OUT};
use gpu_mpi_device::abi::polling::{STATE_EXITED, STATE_RUNNING, STATE_TIMED_OUT, STATE_WAITING};
use gpu_mpi_device::error::ErrorClass;

fn word(memory: &[u8], offset: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&memory[offset..offset + 4]);
    u32::from_ne_bytes(b)
}

/// Decides the outcome of a launch that ran to its end (every rank returned,
/// or the GPU kernel finished), from the world memory.
///
/// - A wait that timed out (its record marked timed out, or its rank's result
///   `MPI_ERR_TIMEOUT`): the world deadlocked and the device's timeout broke it up: [`HostError::Deadlock`] built from the records
///   (the timed-out rank reads "timed out in receive(...)", the ranks that
///   gave up because of it "gave up in ...").
/// - Ranks whose result record holds an error, or that never recorded their
///   exit (they could not attach to the world): [`HostError::RankFailed`].
/// - A world aborted although every rank returned `Ok` (each handled the
///   error its waits returned): [`HostError::WorldAborted`].
/// - Otherwise `Ok`.
///
/// # Panics
/// If `memory` is shorter than `layout.total`.
pub fn check_world(memory: &[u8], layout: &Layout) -> Result<(), HostError> {
    assert!(
        memory.len() >= layout.total,
        "world memory shorter than its layout"
    );
    if timed_out(memory, layout) {
        return Err(HostError::Deadlock(DeadlockReport::from_world(
            memory,
            layout,
            |_| false,
        )));
    }
    let mut errors = Vec::new();
    for rank in 0..layout.ranks {
        let w = result_words(memory, layout, rank);
        let state = record_words(memory, layout, rank)[0];
        if w[0] != 0 {
            // An unknown class is a world of another version: internal error.
            let e = gpu_mpi_device::Error::from_words(w).unwrap_or(gpu_mpi_device::Error::Intern);
            errors.push((rank, e));
        } else if state != STATE_EXITED {
            // `rank_main` writes EXITED last; a rank that could not attach
            // returns without writing anything.
            debug_assert!(state == STATE_RUNNING || state == STATE_WAITING || state > STATE_TIMED_OUT);
            errors.push((rank, gpu_mpi_device::Error::Intern));
        }
    }
    if errors.is_empty() {
        match abort_cause(memory) {
            Some((by_rank, timed_out)) => Err(HostError::WorldAborted { by_rank, timed_out }),
            None => Ok(()),
        }
    } else {
        Err(HostError::RankFailed {
            errors,
            ranks: layout.ranks,
        })
    }
}

/// Whether a wait of the world timed out (its record marked timed out, or its
/// rank's result `MPI_ERR_TIMEOUT`): [`check_world`] then reports a deadlock.
///
/// # Panics
/// If `memory` is shorter than `layout.total`.
pub fn timed_out(memory: &[u8], layout: &Layout) -> bool {
    (0..layout.ranks).any(|r| {
        record_words(memory, layout, r)[0] == STATE_TIMED_OUT
            || result_words(memory, layout, r)[0] == ErrorClass::Timeout as u32
    })
}

/// The rank that aborted the world, if any (its abort word).
///
/// # Panics
/// If `memory` is shorter than the header.
pub fn aborted_by(memory: &[u8]) -> Option<u32> {
    abort_cause(memory).map(|(rank, _)| rank)
}

/// The rank that aborted the world, and whether it did because a wait of
/// it timed out (else it called `World::abort`), if the world was aborted.
///
/// # Panics
/// If `memory` is shorter than the header.
pub fn abort_cause(memory: &[u8]) -> Option<(u32, bool)> {
    match word(memory, ABORT_OFFSET) {
        0 => None,
        w => Some(((w & !ABORT_TIMED_OUT) - 1, w & ABORT_TIMED_OUT != 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadlock::tests::{put, world};
    use gpu_mpi_device::abi::polling::Call;

    #[test]
    fn timed_out_world_is_a_deadlock_and_errors_are_collected() {
        let (mut m, l) = world(3);
        put(
            &mut m,
            l.record(0),
            &[STATE_TIMED_OUT, Call::Receive as u32, 1, 4],
        );
        put(&mut m, l.record(1), &[STATE_EXITED, Call::Send as u32, 2, 0]);
        put(
            &mut m,
            l.result(1),
            &gpu_mpi_device::Error::Aborted { by_rank: 0 }.to_words(),
        );
        put(&mut m, l.record(2), &[STATE_EXITED]);
        put(&mut m, ABORT_OFFSET, &[1]);
        assert_eq!(aborted_by(&m), Some(0));
        match check_world(&m, &l) {
            Err(HostError::Deadlock(rep)) => assert_eq!(
                rep.to_string(),
                "deadlock: rank 0: timed out in receive(source 1, tag 4); \
                 rank 1: gave up in send(dest 2, tag 0) (world aborted); rank 2: exited\n\
                 waiting receives: rank 0: timed out in receive(source 1, tag 4)"
            ),
            other => panic!("{other:?}"),
        }
        // As `rank_main` leaves it: record exited, result "timed out".
        put(&mut m, l.record(0), &[STATE_EXITED]);
        put(
            &mut m,
            l.result(0),
            &gpu_mpi_device::Error::Timeout {
                operation: 2,
                peer: 1,
                tag: 4,
            }
            .to_words(),
        );
        match check_world(&m, &l) {
            Err(HostError::Deadlock(rep)) => assert_eq!(
                rep.state_of(0),
                Some(BlockedState::TimedOut {
                    operation: 2,
                    peer: 1,
                    tag: 4
                })
            ),
            other => panic!("{other:?}"),
        }
        put(&mut m, l.result(0), &[0; 5]);
        match check_world(&m, &l) {
            Err(HostError::RankFailed { errors, ranks: 3 }) => {
                assert_eq!(errors, vec![(1, gpu_mpi_device::Error::Aborted { by_rank: 0 })])
            }
            other => panic!("{other:?}"),
        }
        // Every rank returned Ok after the abort: the abort is reported,
        // with its cause.
        put(&mut m, l.result(1), &[0; 5]);
        assert!(matches!(
            check_world(&m, &l),
            Err(HostError::WorldAborted {
                by_rank: 0,
                timed_out: false
            })
        ));
        put(&mut m, ABORT_OFFSET, &[3 | ABORT_TIMED_OUT]);
        assert_eq!(abort_cause(&m), Some((2, true)));
        let e = check_world(&m, &l).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rank 2 aborted the world (a wait of it timed out) and every rank returned Ok after it: \
             the launch did not complete normally"
        );
        put(&mut m, ABORT_OFFSET, &[0]);
        assert!(check_world(&m, &l).is_ok());
        put(&mut m, l.record(2), &[STATE_RUNNING]);
        assert!(matches!(check_world(&m, &l), Err(HostError::RankFailed { .. })));
    }
}
