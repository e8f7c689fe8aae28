//! loom implementation of the shim.
