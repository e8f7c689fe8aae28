//! The traits to import in a kernel: `use gpu_mpi_device::traits::*;`.

pub use crate::collective::immediate::ImmediateCollectives;
pub use crate::collective::{CommunicatorCollectives, Operation, Root};
pub use crate::communicator::Communicator;
pub use crate::creation::CommunicatorCreation;
pub use crate::datatype::{Buffer, BufferMut, Equivalence};
pub use crate::point_to_point::{Destination, Source};
