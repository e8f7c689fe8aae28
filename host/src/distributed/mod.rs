//! One world across processes (feature `distributed`; docs/distributed.md).
//!
//! A program started by `mpiexec -n P` runs each launch on a world of
//! `P × n` ranks, `n` being the ranks its [`WorldSpec`](crate::WorldSpec)
//! asks for: process `p` runs world ranks `p·n .. (p+1)·n` (whole blocks)
//! on its own device, and every process lays out the whole world's memory.
//! The other processes' ranks are *shadows* there: nobody runs them, and a
//! relay thread (`relay.rs`) carries what crosses between processes over MPI
//! (MPICH or Open MPI through rsmpi): a local rank's message to a shadow
//! leaves from the shadow's inbox; a remote rank's message arrives in the
//! destination's inbox from the sender's shadow outbox, with the same
//! envelope, sequence number and slot, so matching, ordering and the
//! deadlock report read it as a message from that rank. After the run the
//! processes exchange their ranks' records (`merge.rs`), so that each one's
//! launch report (results, failed ranks, deadlocks, traces) is the whole
//! world's.
//!
//! Without `mpiexec` (or with one process) nothing changes.

mod merge;
mod relay;

use crate::backend::RunStats;
use crate::cpu::scheduler::Relay;
use crate::cpu::{LocalEnd, Spread};
use crate::error::{DistributedError, HostError};
use gpu_mpi_device::abi::layout::Layout;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use std::sync::{Mutex, OnceLock};

/// The environment variables that say how many processes `mpiexec`
/// started: MPICH's (PMI) and Open MPI's.
const SIZE_VARIABLES: [&str; 3] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"];

/// The processes of a world spread by `mpiexec`: this one's index and
/// their count, over MPI's world communicator.
#[derive(Debug)]
pub struct Processes {
    index: u32,
    count: u32,
}

/// MPI, started once per process (MPI may be initialised only once) and
/// finalised at exit.
static UNIVERSE: Mutex<Option<Universe>> = Mutex::new(None);
static PROCESSES: OnceLock<Result<Option<Processes>, DistributedError>> = OnceLock::new();

extern "C" fn finalize_at_exit() {
    if let Ok(mut u) = UNIVERSE.lock() {
        // Dropping the universe calls MPI_Finalize.
        drop(u.take());
    }
}

impl Processes {
    /// The processes this program runs as: `None` when it was not started
    /// by `mpiexec` with more than one process (a one-process world, MPI
    /// not started). Starts MPI (`MPI_THREAD_MULTIPLE` asked, at least
    /// `MPI_THREAD_SERIALIZED` needed: the relay thread makes the MPI calls
    /// of a run, the launching thread those before and after it) the first
    /// time it is called.
    pub fn from_env() -> Result<Option<&'static Processes>, HostError> {
        let r = PROCESSES.get_or_init(|| {
            let size = SIZE_VARIABLES
                .iter()
                .find_map(|v| std::env::var(v).ok())
                .and_then(|v| v.trim().parse::<u32>().ok());
            if size.is_none_or(|n| n < 2) {
                return Ok(None);
            }
            let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
                .ok_or_else(|| DistributedError::Mpi("MPI was already initialised".into()))?;
            if !matches!(threading, mpi::Threading::Multiple | mpi::Threading::Serialized) {
                return Err(DistributedError::Mpi(format!(
                    "the MPI library gives {threading:?} threading; the relay needs Serialized"
                )));
            }
            let world = universe.world();
            let p = Processes {
                index: world.rank() as u32,
                count: world.size() as u32,
            };
            *UNIVERSE.lock().unwrap_or_else(|e| e.into_inner()) = Some(universe);
            // SAFETY: registers a plain `extern "C"` function with no
            // arguments, which libc calls at exit.
            unsafe { libc::atexit(finalize_at_exit) };
            Ok(Some(p))
        });
        match r {
            Ok(p) => Ok(p.as_ref()),
            Err(e) => Err(e.clone().into()),
        }
    }

    /// This process's index (its rank among the processes).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many processes there are.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// MPI's world communicator.
    pub(crate) fn world(&self) -> SimpleCommunicator {
        SimpleCommunicator::world()
    }
}

impl Spread for Processes {
    fn index(&self) -> u32 {
        self.index
    }

    fn count(&self) -> u32 {
        self.count
    }

    fn relay(&self, ranks_per_process: u32) -> Box<dyn Relay + '_> {
        Box::new(relay::MpiRelay {
            processes: self,
            ranks_per_process,
        })
    }

    fn merge(&self, layout: &Layout, world: &mut [u8], local: LocalEnd) -> Result<RunStats, HostError> {
        merge::merge(self, layout, world, local)
    }
}
