//! The JSON Schema of one trace line, generated from [`super::Event`] and
//! the types it carries, so the schema `agentci schema trace` prints (and
//! `docs/schemas/trace.schema.json` ships) cannot drift from what a run
//! writes. `docs/trace-schema.json` stays the documented, hand-tuned schema
//! with the finer rules (formats, ranges); the tests hold every trace they
//! write to both.

/// The JSON Schema of a trace line, as `agentci schema trace` prints it.
pub fn trace_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<super::Event>();
    schema.insert("title".into(), "agentci trace event".into());
    schema.insert(
        "description".into(),
        "One line of an agentci JSONL trace (generated from agentci's event types).".into(),
    );
    schema.to_value()
}
