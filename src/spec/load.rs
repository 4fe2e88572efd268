//! (stub)
pub struct LoadOptions;
pub fn load_job() {}
