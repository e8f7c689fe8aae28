//! Build script.
fn main() {}
