//! The job key `result_schema`: the JSON Schema of the run's structured
//! result, written inline (a mapping) or as the path of a `.json` file
//! relative to the job file (`--result-schema FILE`: relative to where the
//! command runs). The schema must compile with the `jsonschema` crate, so a
//! run never starts with a schema it cannot check against.
//!
//! Offering the schema to the model and checking its answer are the run's
//! business ([`crate::agent::result`]).

use std::io::Read;
use std::path::Path;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::Checker;
use crate::job::Diagnostic;
use crate::job::load::pos_of;
use crate::tools::workspace::normalize;

/// Schema files larger than this are refused: a schema is a page, not data.
const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;

const FIX: &str = "write the schema inline as a mapping, or the path of a `.json` file \
                   holding one";

impl Checker<'_> {
    /// The checked schema, or `None` with the problem reported.
    pub(super) fn result_schema(&mut self, value: &Spanned<Value>) -> Option<Value> {
        let pos = pos_of(&self.r, value);
        match &value.value {
            Value::Object(_) => match compile_problem(&value.value) {
                None => Some(value.value.clone()),
                Some(problem) => {
                    self.r.error(
                        pos,
                        format!(
                            "`result_schema` is not a valid JSON Schema: {problem}; fix the schema"
                        ),
                    );
                    None
                }
            },
            Value::String(text) if !text.trim().is_empty() => {
                let path = normalize(&self.job_dir.join(text.trim()));
                match read_schema(&path) {
                    Ok(schema) => Some(schema),
                    Err(SchemaFileProblem::Unreadable(problem)) => {
                        self.r.error(
                            pos,
                            format!(
                                "cannot read the `result_schema` file {}: {problem}; {FIX}",
                                path.display()
                            ),
                        );
                        None
                    }
                    Err(SchemaFileProblem::At(diagnostic)) => {
                        self.r.diagnostics.push(diagnostic);
                        None
                    }
                }
            }
            other => {
                let got = match other {
                    Value::String(_) => "an empty path",
                    Value::Array(_) => "a list",
                    Value::Null => "nothing",
                    _ => "a scalar",
                };
                self.r.error(
                    pos,
                    format!("`result_schema` must be a JSON Schema, got {got}; {FIX}"),
                );
                None
            }
        }
    }
}

enum SchemaFileProblem {
    /// The file could not be read; reported at the `result_schema` value.
    Unreadable(String),
    /// The file's content is wrong; reported in the file itself.
    At(Diagnostic),
}

/// What is wrong with a `--result-schema` file given to `agentci eval`,
/// checked once before any case runs rather than failing every attempt.
pub(crate) fn schema_file_problem(path: &Path) -> Option<String> {
    match read_schema(path) {
        Ok(_) => None,
        Err(SchemaFileProblem::Unreadable(problem)) => Some(format!(
            "cannot read {}: {problem}; give the path of a JSON Schema file, relative to \
             the current directory",
            path.display()
        )),
        Err(SchemaFileProblem::At(diagnostic)) => Some(diagnostic.to_string()),
    }
}

/// The schema in the file at `path`, parsed and checked to compile.
fn read_schema(path: &Path) -> Result<Value, SchemaFileProblem> {
    let file =
        std::fs::File::open(path).map_err(|e| SchemaFileProblem::Unreadable(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_SCHEMA_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| SchemaFileProblem::Unreadable(e.to_string()))?;
    if text.len() as u64 > MAX_SCHEMA_BYTES {
        return Err(SchemaFileProblem::Unreadable(format!(
            "it is larger than {MAX_SCHEMA_BYTES} bytes"
        )));
    }
    let schema: Value = serde_json::from_str(&text).map_err(|e| {
        SchemaFileProblem::At(Diagnostic::error(
            path,
            u32::try_from(e.line()).unwrap_or(u32::MAX).max(1),
            u32::try_from(e.column()).unwrap_or(u32::MAX).max(1),
            format!("the `result_schema` file is not valid JSON: {e}; fix the JSON"),
        ))
    })?;
    let problem = match &schema {
        Value::Object(_) => compile_problem(&schema),
        _ => Some("the schema must be a JSON object (`{\"type\": \"object\", ...}`)".to_string()),
    };
    match problem {
        None => Ok(schema),
        Some(problem) => Err(SchemaFileProblem::At(Diagnostic::error(
            path,
            1,
            1,
            format!("not a valid JSON Schema for `result_schema`: {problem}; fix the schema"),
        ))),
    }
}

/// Why `schema` does not compile, if it does not.
fn compile_problem(schema: &Value) -> Option<String> {
    jsonschema::validator_for(schema).err().map(|e| {
        let at = e.instance_path().as_str();
        if at.is_empty() {
            e.to_string()
        } else {
            format!("{e} (at `{at}`)")
        }
    })
}
