//! The traits to import: `use gpu_mpi_device::traits::*;`.
