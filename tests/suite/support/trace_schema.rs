//! Checks a JSONL trace against `docs/trace-schema.json` (the documented,
//! hand-tuned schema), against `docs/schemas/trace.schema.json` (generated
//! from the event types: what `agentci schema trace` prints), and the
//! stream rules a schema cannot express (gapless seq, one run_id, first and
//! last events).

use std::path::Path;

use serde_json::Value;

/// The schema every trace line must satisfy.
pub fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/trace-schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

pub fn validator() -> jsonschema::Validator {
    let schema = schema();
    jsonschema::meta::validate(&schema)
        .unwrap_or_else(|e| panic!("docs/trace-schema.json is not a valid JSON Schema: {e}"));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("docs/trace-schema.json does not compile: {e}"))
}

/// The schema generated from the event types, as shipped.
pub fn generated_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/trace.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    jsonschema::meta::validate(&schema)
        .unwrap_or_else(|e| panic!("{} is not a valid JSON Schema: {e}", path.display()));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display()))
}

/// Every schema error of one line, as `instance_path: message`.
pub fn line_errors(validator: &jsonschema::Validator, line: &Value) -> Vec<String> {
    validator
        .iter_errors(line)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics, naming the line, unless `path` is a complete, schema-valid trace.
pub fn assert_valid_trace(path: &Path) {
    let validator = validator();
    let generated = generated_validator();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read trace {}: {e}", path.display()));
    assert!(
        text.ends_with('\n'),
        "trace {}: the last line is not terminated by a newline",
        path.display()
    );
    let mut run_id: Option<String> = None;
    let mut last_type = String::new();
    let mut count = 0;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("trace line {number} is not JSON: {e}\n{line}"));
        let errors = line_errors(&validator, &value);
        assert!(
            errors.is_empty(),
            "trace line {number} does not match docs/trace-schema.json:\n  {}\n{line}",
            errors.join("\n  ")
        );
        let errors = line_errors(&generated, &value);
        assert!(
            errors.is_empty(),
            "trace line {number} does not match docs/schemas/trace.schema.json:\n  {}\n{line}",
            errors.join("\n  ")
        );
        // The schema and the Rust types must agree: what validates must also load.
        serde_json::from_value::<agentci::event::Event>(value.clone())
            .unwrap_or_else(|e| panic!("trace line {number} does not load as an Event: {e}"));

        assert_eq!(
            value["seq"].as_u64(),
            Some(number as u64),
            "trace line {number}: seq must count 1..n without gaps"
        );
        let this_run = value["run_id"].as_str().unwrap_or_default().to_string();
        match &run_id {
            None => run_id = Some(this_run),
            Some(first) => assert_eq!(
                first, &this_run,
                "trace line {number}: run_id differs from line 1"
            ),
        }
        last_type = value["type"].as_str().unwrap_or_default().to_string();
        if number == 1 {
            assert_eq!(last_type, "run.started", "trace line 1 must be run.started");
            assert_eq!(
                value["schema_version"].as_u64(),
                Some(u64::from(agentci::event::SCHEMA_VERSION)),
                "trace line 1: schema_version"
            );
        }
        count = number;
    }
    assert!(count > 0, "trace {} is empty", path.display());
    assert_eq!(
        last_type, "run.completed",
        "trace line {count} (the last) must be run.completed"
    );
}
