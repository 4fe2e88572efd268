//! (stub)
#[derive(Debug, Clone)]
pub struct Diagnostic;
