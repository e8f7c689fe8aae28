//! Collective communication (MPI standard chapter 6).

/// A predefined reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemOperation(u32);

impl SystemOperation {
    /// Name of an operation code.
    pub fn name_of(code: u32) -> &'static str {
        let _ = code;
        "op"
    }
}
