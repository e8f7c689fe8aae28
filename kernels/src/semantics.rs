//! MPI semantic test programs (filled in by the semantic-test work).
