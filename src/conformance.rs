//! Backend-independent MPI conformance cases (filled in by the semantic-test work).
