//! Checking tool arguments against a JSON schema. (stub)
use serde_json::Value;

/// `Err` with a message naming the offending argument when `args` does not fit `schema`.
pub fn check_arguments(_schema: &Value, _args: &Value) -> Result<(), String> {
    todo!()
}
