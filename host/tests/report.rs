//! The deadlock report's later sections on the emulator: the messages left
//! unreceived, the receives nothing matched, and the hints; and errors that
//! print the same through `Debug` as through `Display`. Emulator only:
//! exact reports need a deadlock seen at once, which only the emulator
//! sees (a GPU ends one by its wait bound, and which ranks time out then
//! depends on its timing).

use gpu_mpi_device::abi::polling::Call;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};
use gpu_mpi_host::{
    BlockedState, CpuOptions, DeadlockReport, Device, Hint, HostError, UnreceivedMessage, WorldSpec,
};
use std::time::Duration;

fn cpu(workers: usize) -> Device {
    Device::cpu_with(CpuOptions {
        workers,
        ..CpuOptions::default()
    })
}

fn deadlock(e: &HostError) -> &DeadlockReport {
    match e {
        HostError::Deadlock(rep) => rep,
        other => panic!("expected a deadlock, got {other}"),
    }
}

gpu_mpi_device::kernel! {
    /// Rank 0 sends rank 1 a `u32` with tag 8; rank 1 waits for tag 7.
    pub static WRONG_TAG = fn wrong_tag(world: &World, _a: &u32) -> Result<(), Error> {
        match world.rank() {
            0 => world.process_at_rank(1).send_with_tag(&42u32, 8),
            1 => {
                let mut x = 0u32;
                world.process_at_rank(0).receive_into_with_tag(&mut x, 7).map(|_| ())
            }
            _ => Ok(()),
        }
    }
}

const WRONG_TAG_TEXT: &str = "deadlock: rank 1: receive(source 0, tag 7); rank 0: exited\n\
     unreceived messages: rank 0 -> rank 1 (tag 8, 4 bytes)\n\
     waiting receives: rank 1: receive(source 0, tag 7)\n\
     hint: rank 1 waits for a message from rank 0 with tag 7, but rank 0 sent it one with tag 8: \
     check the tags";

#[test]
fn a_wrong_tag_shows_the_unreceived_message_and_the_tag_hint() {
    for workers in [1, 2] {
        let e = cpu(workers)
            .launch(&WRONG_TAG, &0, &WorldSpec::ranks(2).block_dim(1))
            .unwrap_err();
        let rep = deadlock(&e);
        assert_eq!(
            rep.unreceived,
            vec![UnreceivedMessage {
                source: 0,
                dest: 1,
                tag: 8,
                bytes: 4,
                rendezvous: false,
                collective: None
            }]
        );
        assert_eq!(
            rep.hints,
            vec![Hint::TagMismatch {
                rank: 1,
                source: 0,
                wanted: 7,
                sender: 0,
                sent: 8
            }]
        );
        assert_eq!(rep.waiting_receives().map(|r| r.rank).collect::<Vec<_>>(), [1]);
        assert_eq!(e.to_string(), WRONG_TAG_TEXT);
        assert_eq!(format!("{e:?}"), format!("{e}"));
    }
}

#[test]
fn a_wrong_tag_reads_the_same_when_a_timeout_ends_the_deadlock() {
    // The GPU's way: the wait times out and the report comes from the world
    // memory after the launch (`check_world`), not from the scheduler.
    let spec = WorldSpec::ranks(2)
        .block_dim(2)
        .timeout(Duration::from_millis(30));
    let e = cpu(1).launch(&WRONG_TAG, &0, &spec).unwrap_err();
    assert_eq!(
        e.to_string(),
        WRONG_TAG_TEXT.replace(
            "rank 1: receive(source 0, tag 7)",
            "rank 1: timed out in receive(source 0, tag 7)"
        )
    );
}

/// Elements of the large messages: 2048 bytes, more than a slot's 256.
const LARGE: usize = 512;

gpu_mpi_device::kernel! {
    /// Ranks 0 and 1 both send the other 2048 bytes first, then receive.
    pub static SEND_SEND = fn send_send(world: &World, _a: &u32) -> Result<(), Error> {
        if world.rank() > 1 {
            return Ok(());
        }
        let peer = world.process_at_rank(1 - world.rank());
        let out = [world.rank() as u32; LARGE];
        peer.send_with_tag(&out[..], 5)?;
        let mut got = [0u32; LARGE];
        peer.receive_into_with_tag(&mut got[..], 5).map(|_| ())
    }
}

#[test]
fn two_large_sends_to_each_other_give_the_send_receive_hint() {
    for workers in [1, 2] {
        let e = cpu(workers)
            .launch(&SEND_SEND, &0, &WorldSpec::ranks(4).block_dim(2))
            .unwrap_err();
        let rep = deadlock(&e);
        let send = |peer| BlockedState::Waiting {
            operation: Call::Send as u32,
            peer,
            tag: 5,
        };
        assert_eq!((rep.state_of(0), rep.state_of(1)), (Some(send(1)), Some(send(0))));
        assert_eq!(
            rep.hints,
            vec![Hint::SendSend {
                first: 0,
                second: 1,
                rendezvous_bytes: Some((2048, 2048)),
                slot_bytes: 256
            }]
        );
        assert_eq!(
            e.to_string(),
            "deadlock: rank 0: send(dest 1, tag 5); rank 1: send(dest 0, tag 5); ranks 2-3: exited\n\
             unreceived messages: rank 0 -> rank 1 (tag 5, 2048 bytes, rendezvous); \
             rank 1 -> rank 0 (tag 5, 2048 bytes, rendezvous)\n\
             hint: ranks 0 and 1 both send to each other first, with messages too large to buffer \
             (2048 bytes each; a slot holds 256): use send_receive, or order the calls so that one \
             of them receives first"
        );
    }
}

gpu_mpi_device::kernel! {
    /// Rank 2 returns; the others enter a barrier.
    pub static EXIT_BEFORE_BARRIER = fn exit_before_barrier(world: &World, _a: &u32) -> Result<(), Error> {
        if world.rank() == 2 {
            return Ok(());
        }
        world.barrier()
    }
}

#[test]
fn a_rank_that_exits_before_a_barrier_is_named_in_a_hint() {
    for workers in [1, 2] {
        let e = cpu(workers)
            .launch(&EXIT_BEFORE_BARRIER, &0, &WorldSpec::ranks(8).block_dim(4))
            .unwrap_err();
        let rep = deadlock(&e);
        assert_eq!(
            rep.hints,
            vec![Hint::ExitedBeforeCollective {
                operation: Call::Barrier as u32,
                waiting: vec![0, 1, 3, 4, 5, 6, 7],
                exited: vec![2],
            }]
        );
        assert!(rep.unreceived.is_empty());
        let text = e.to_string();
        assert_eq!(
            text.lines().nth(1),
            Some(
                "hint: rank 2 exited while ranks 0-1, 3-7 wait in barrier: \
                 every rank must call the same collectives"
            ),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}

gpu_mpi_device::kernel! {
    /// The world splits into its even and odd ranks; rank 5 returns before
    /// its half's all-reduce, which the other odd ranks enter; the even
    /// half completes its own.
    pub static EXIT_BEFORE_SUB_COLLECTIVE = fn exit_before_sub_collective(world: &World, _a: &u32) -> Result<(), Error> {
        let half = world
            .split_by_color(gpu_mpi_device::Color::with_value((world.rank() % 2) as u32))?
            .ok_or(Error::Intern)?;
        if world.rank() == 5 {
            return Ok(());
        }
        let mut sum = 0u32;
        half.all_reduce_into(&1u32, &mut sum, gpu_mpi_device::collective::SystemOperation::sum())
    }
}

#[test]
fn a_rank_that_exits_before_a_sub_communicator_collective_is_named_in_a_hint() {
    for workers in [1, 2] {
        let e = cpu(workers)
            .launch(&EXIT_BEFORE_SUB_COLLECTIVE, &0, &WorldSpec::ranks(8).block_dim(2))
            .unwrap_err();
        let rep = deadlock(&e);
        // The odd half's context (the world's is 0, the split's 1).
        assert_eq!(
            rep.hints,
            vec![Hint::ExitedBeforeCommunicatorCollective {
                communicator: 1,
                waiting: vec![1, 3, 7],
                exited: vec![0, 2, 4, 5, 6],
            }]
        );
        // The opening's messages the waiting ranks sent each other before
        // the one from rank 5 that never came, named by their collective.
        assert!(!rep.unreceived.is_empty());
        assert!(rep.unreceived.iter().all(|m| m.collective == Some(1)));
        let text = e.to_string();
        assert!(
            text.contains("(a collective of communicator 1, 48 bytes)"),
            "{text}"
        );
        assert!(
            text.contains(
                "hint: ranks 1, 3, 7 wait for the messages of a collective of communicator 1 while \
                 ranks 0, 2, 4-6 exited: every rank of a communicator must call the same collectives"
            ),
            "{text}"
        );
        assert!(!text.contains("no message left"), "{text}");
    }
}

gpu_mpi_device::kernel! {
    /// Every rank sends its successor a message with tag 1 and waits for
    /// one with tag 2 from its predecessor.
    pub static RING_OF_WRONG_TAGS = fn ring_of_wrong_tags(world: &World, _a: &u32) -> Result<(), Error> {
        let n = world.size();
        let next = world.process_at_rank((world.rank() + 1) % n);
        let prev = world.process_at_rank((world.rank() + n - 1) % n);
        next.send_with_tag(&world.rank(), 1)?;
        let mut x = 0i32;
        prev.receive_into_with_tag(&mut x, 2).map(|_| ())
    }
}

#[test]
fn every_section_of_a_large_report_is_capped() {
    let e = cpu(2)
        .launch(&RING_OF_WRONG_TAGS, &0, &WorldSpec::ranks(64).block_dim(16))
        .unwrap_err();
    let rep = deadlock(&e);
    assert_eq!((rep.unreceived.len(), rep.hints.len()), (64, 64));
    assert_eq!(
        rep.unreceived[63],
        UnreceivedMessage {
            source: 63,
            dest: 0,
            tag: 1,
            bytes: 4,
            rendezvous: false,
            collective: None
        }
    );
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 1 + 1 + 8 + 1, "{text}");
    assert!(lines[0].ends_with("; ... and 32 more ranks"), "{text}");
    assert!(
        lines[1].starts_with("unreceived messages: rank 0 -> rank 1 (tag 1, 4 bytes); ")
            && lines[1].ends_with("; ... and 56 more"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("waiting receives: rank 0: receive(source 63, tag 2); ")
            && lines[2].ends_with("; ... and 56 more"),
        "{text}"
    );
    assert_eq!(
        lines[3],
        "hint: rank 0 waits for a message from rank 63 with tag 2, but rank 63 sent it one with tag 1: \
         check the tags"
    );
    assert_eq!(lines[11], "... and 56 more hints");
}

gpu_mpi_device::kernel! {
    /// Odd ranks send with a negative tag: `MPI_ERR_TAG`.
    pub static BAD_TAG = fn bad_tag(world: &World, _a: &u32) -> Result<(), Error> {
        if world.rank() % 2 == 1 {
            world.process_at_rank(0).send_with_tag(&1u32, -5)?;
        }
        Ok(())
    }
}

#[test]
fn rank_failures_print_the_same_through_debug() {
    let e = cpu(1)
        .launch(&BAD_TAG, &0, &WorldSpec::ranks(4).block_dim(2))
        .unwrap_err();
    assert!(matches!(e, HostError::RankFailed { ranks: 4, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "2 of 4 ranks failed: ranks 1, 3: MPI_ERR_TAG: tag -5 is outside 0..=2147483647"
    );
    assert_eq!(format!("{e:?}"), format!("{e}"));
}
