//! The planted cases' checks ([`crate::planted_cases`]): kernels with an
//! order-dependent bug that the emulator's default schedule hides.

use crate::harness::*;
use gpu_mpi::Device;
use gpu_mpi_check_kernels::planted;

pub(crate) fn planted_arrival_order(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let job = Job::new(&planted::SEMANTICS_PLANTED, planted::PLANTED_ARRIVAL_ORDER, 1);
    let o = launch(device, &shape(3, 3).spec(), 3, &job)?;
    for r in 1..3u32 {
        c.eq(
            || format!("rank 0 stored as rank {r}'s value"),
            o.out[r as usize],
            planted::planted_message(r),
        );
    }
    c.finish()
}

pub(crate) fn planted_deadlock(device: &Device) -> Result<(), String> {
    let mut c = Checker::default();
    let job = Job::new(&planted::SEMANTICS_PLANTED, planted::PLANTED_DEADLOCK, 1);
    let o = launch(device, &shape(3, 3).spec(), 3, &job)?;
    c.eq(
        || "rank 0: sources of its two receives".into(),
        [o.out[0], o.out[1]],
        [1, 2],
    );
    c.finish()
}
