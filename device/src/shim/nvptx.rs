//! nvptx64 implementation of the shim (written by the GPU-path work).
