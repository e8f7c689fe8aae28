//! gpu-mpi
