//! Checking tool arguments against the tool's JSON schema, with messages
//! the model can act on ("`limit` must be an integer >= 1, got 0").
//!
//! Validation runs on every tool call, so compiled validators are cached by
//! schema text. This module knows nothing about individual tools; it only
//! reads their schemas.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// Messages reported at most per call; the first few are enough to fix it.
const MAX_MESSAGES: usize = 3;

/// Why arguments were refused: what is wrong with them (the first few
/// things, each naming its argument), or a schema that does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("the tool's own argument schema is invalid: {0}")]
    BadSchema(String),
}

/// `Err` with a message naming the offending argument when `args` does not fit `schema`.
pub fn check_arguments(schema: &Value, args: &Value) -> Result<(), ArgumentsError> {
    let validator = compiled(schema)?;
    let mut messages: Vec<String> = Vec::new();
    for error in validator.iter_errors(args) {
        let message = describe_error(schema, &error);
        if !messages.contains(&message) {
            messages.push(message);
        }
        if messages.len() == MAX_MESSAGES {
            break;
        }
    }
    if messages.is_empty() {
        Ok(())
    } else {
        Err(ArgumentsError::Invalid(messages))
    }
}

/// Compile `schemas` on the runtime's blocking pool, so that a run's first
/// tool call does not wait for them. The first validator of a process also
/// builds the JSON Schema draft's own validator (about 2 ms), work that can
/// overlap the first model call instead. Outside a runtime nothing happens:
/// each compiles on first use, as always. A schema that does not compile is
/// left for that call to report.
pub fn compile_ahead(schemas: Vec<Value>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    drop(runtime.spawn_blocking(move || {
        for schema in &schemas {
            let _ = compiled(schema);
        }
    }));
}

/// The validator for `schema`, compiled once and then shared.
fn compiled(schema: &Value) -> Result<Arc<Validator>, ArgumentsError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    let key = schema.to_string();
    let cache = CACHE.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked mid-insert; the map is still usable.
    if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(Arc::clone(found));
    }
    let validator = Arc::new(
        jsonschema::validator_for(schema).map_err(|e| ArgumentsError::BadSchema(e.to_string()))?,
    );
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, Arc::clone(&validator));
    Ok(validator)
}

fn describe_error(schema: &Value, error: &ValidationError<'_>) -> String {
    let at = argument_name(error);
    // The schema object holding the keyword that failed.
    let keyword_path = error.schema_path().as_str();
    let owner = keyword_path
        .rsplit_once('/')
        .and_then(|(parent, _)| schema.pointer(parent))
        .unwrap_or(&Value::Null);
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            match &at {
                Some(parent) => format!("`{parent}.{name}` is required"),
                None => format!("`{name}` is required"),
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let known = owner
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| props.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let names = unexpected
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let noun = if unexpected.len() == 1 {
                "unknown argument"
            } else {
                "unknown arguments"
            };
            if known.is_empty() {
                format!("{noun} {names}; this tool takes no arguments")
            } else {
                format!("{noun} {names}; expected one of {known}")
            }
        }
        ValidationErrorKind::Type { kind } if at.is_none() => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(_) => "object".to_string(),
            };
            format!(
                "arguments must be a JSON {expected}, got {}",
                show_value(error.instance())
            )
        }
        _ => {
            let name = at.unwrap_or_else(|| "arguments".to_string());
            match expectation(owner) {
                Some(expected) => format!(
                    "`{name}` must be {expected}, got {}",
                    show_value(error.instance())
                ),
                None => format!("`{name}`: {error}"),
            }
        }
    }
}

/// The argument an error is about, as `limit` or `steps[0].title`; `None` for the whole object.
fn argument_name(error: &ValidationError<'_>) -> Option<String> {
    let mut name = String::new();
    for segment in error.instance_path().segments() {
        match segment {
            jsonschema::paths::LocationSegment::Property(p) => {
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(&p);
            }
            jsonschema::paths::LocationSegment::Index(i) => name.push_str(&format!("[{i}]")),
        }
    }
    (!name.is_empty()).then_some(name)
}

/// What a property schema accepts, in words: "an integer >= 1", "one of `a`, `b`".
fn expectation(schema: &Value) -> Option<String> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let list = options
            .iter()
            .map(|o| {
                format!(
                    "`{}`",
                    o.as_str().map_or_else(|| o.to_string(), str::to_string)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        return Some(format!("one of {list}"));
    }
    let base = match schema.get("type").and_then(Value::as_str)? {
        "string" if schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) > 0 => {
            "a non-empty string"
        }
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "array" => "an array",
        "object" => "an object",
        "null" => "null",
        _ => return None,
    };
    let min = schema.get("minimum").filter(|v| v.is_number());
    let max = schema.get("maximum").filter(|v| v.is_number());
    Some(match (min, max) {
        (Some(lo), Some(hi)) => format!("{base} between {lo} and {hi}"),
        (Some(lo), None) => format!("{base} >= {lo}"),
        (None, Some(hi)) => format!("{base} <= {hi}"),
        (None, None) => base.to_string(),
    })
}

/// A short rendering of the offending value.
fn show_value(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let head: String = text.chars().take(57).collect();
        format!("{head}...")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn valid_arguments_pass() {
        assert_eq!(
            check_arguments(&schema(), &json!({"path": "a", "limit": 3})),
            Ok(())
        );
    }

    #[test]
    fn messages_name_the_argument_and_the_expectation() {
        let s = schema();
        let err = |args: Value| check_arguments(&s, &args).unwrap_err().to_string();
        assert_eq!(err(json!({})), "`path` is required");
        assert_eq!(
            err(json!({"path": "a", "limit": 0})),
            "`limit` must be an integer >= 1, got 0"
        );
        assert_eq!(
            err(json!({"path": "a", "limit": "ten"})),
            "`limit` must be an integer >= 1, got \"ten\""
        );
        assert_eq!(
            err(json!({"path": "a", "file": "b"})),
            "unknown argument `file`; expected one of limit, mode, offset, path"
                .replace("limit, mode, offset, path", &known_order(&s))
        );
        assert_eq!(
            err(json!({"path": "a", "mode": "c"})),
            "`mode` must be one of `a`, `b`, got \"c\""
        );
        assert_eq!(err(json!([1])), "arguments must be a JSON object, got [1]");
        assert!(err(json!({"file": "b"})).contains("`path` is required"));
    }

    fn known_order(s: &Value) -> String {
        s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn the_validator_is_compiled_once() {
        let s = json!({"type": "object", "properties": {"only_here_x": {"type": "string"}}});
        let a = compiled(&s).unwrap();
        let b = compiled(&s).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }
}
