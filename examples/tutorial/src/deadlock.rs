//! Chapter 4: deadlock and how to read the report.

use crate::{args, check, say, text, Chapter};
use gpu_mpi::{Hint, HostError, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{
    EXCHANGE, EXCHANGE_RECEIVE_FIRST, EXCHANGE_SEND_FIRST, EXCHANGE_SEND_RECEIVE,
};

/// Payload bytes of a slot in this chapter's world: a message of more
/// goes by rendezvous.
const SLOT_BYTES: u32 = 64;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.emulator();
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    let spec = WorldSpec::ranks(2).slot_bytes(SLOT_BYTES);
    let runs = [
        (EXCHANGE_SEND_FIRST, 1, "send, then receive, 8 bytes"),
        (EXCHANGE_SEND_FIRST, 16, "send, then receive, 128 bytes"),
        (EXCHANGE_SEND_RECEIVE, 16, "send_receive, 128 bytes"),
        (EXCHANGE_RECEIVE_FIRST, 1, "receive, then send, 8 bytes"),
    ];
    for (mode, words, what) in runs {
        let out = device.alloc_zeroed::<u32>(2).map_err(text)?;
        let result = device.launch(&EXCHANGE, &args(mode, words, &out, &none), &spec);
        let should_deadlock = mode == EXCHANGE_RECEIVE_FIRST || (mode == EXCHANGE_SEND_FIRST && words > 1);
        say!(c, "$ exchange: {what}");
        match result {
            Ok(_) => {
                let got = device.download(&out).map_err(text)?;
                say!(c, "ok: rank 0 received {}, rank 1 received {}", got[0], got[1]);
                check(!should_deadlock && got == [2, 1], || {
                    format!("{what}: unexpected {got:?}")
                })?;
            }
            Err(HostError::Deadlock(report)) => {
                for line in report.to_string().lines() {
                    say!(c, "{line}");
                }
                check(should_deadlock, || format!("{what}: unexpected deadlock"))?;
                let send_send = report.hints.iter().any(|h| matches!(h, Hint::SendSend { .. }));
                check(send_send == (mode == EXCHANGE_SEND_FIRST), || {
                    format!("{what}: hints {:?}", report.hints)
                })?;
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    }
    Ok(())
}
