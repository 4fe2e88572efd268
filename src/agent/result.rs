//! The structured result of a run (`result_schema`): the final turn offers
//! a `submit_result` tool whose parameters are the job's schema, checks
//! what the model submits against it, and gives a result that does not
//! match back to the model with the errors, up to [`MAX_TRIES`] turns.
//!
//! Both APIs take only an object schema as a tool's parameters (Anthropic's
//! `input_schema` must have `type: object`), so any other schema is offered
//! wrapped as `{value: <schema>}` and the submitted `value` is the result.
//! Writing the result anywhere is the sinks' business; this module only
//! returns it.

use jsonschema::Validator;
use serde_json::{Value, json};

use super::session::{Session, Stop};
use crate::event::Phase;
use crate::provider::{ToolCall, ToolChoice, ToolDefinition};

/// The tool the final turn offers; no other turn does.
pub const SUBMIT_RESULT: &str = "submit_result";
/// Turns the model gets to submit a valid result: the first and two more.
pub const MAX_TRIES: u32 = 3;
/// Arguments larger than this are refused unread: a result is for a
/// workflow's next step, not a data dump.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
/// Validation errors shown to the model per try; the first few are enough to fix it.
const MAX_ERRORS: usize = 5;
/// One validation error's message, at most (they quote the submitted value).
const MAX_ERROR_CHARS: usize = 300;

/// The final turn's request when the job has a result schema (the wire
/// protocol: [`super::protocol::SUMMARY_REQUEST`] with the result added).
pub const RESULT_REQUEST: &str = "All steps are finished. Report the run's outcome for its \
     report, with evidence: what was done (the changes and why), what was checked and what it \
     showed (the commands you ran and their results), and what is left (steps that failed or \
     were blocked, problems still open). Then call `submit_result` with the run's result: its \
     arguments must match the tool's schema. No other tool can be called now.";

/// The answer to a valid `submit_result`.
pub const RESULT_ACCEPTED: &str = "Result accepted.";
/// The answer to a second `submit_result` of one response.
pub const ALREADY_ACCEPTED: &str =
    "error: a result was already accepted in this turn; only the first one counts";

/// The answer to a `submit_result` that does not match the schema.
pub fn mismatch(errors: &str) -> String {
    format!(
        "error: the result does not match the schema: {errors}. Call `submit_result` again \
         with corrected arguments."
    )
}

/// Said once to a model that answered without calling `submit_result`.
pub const RESULT_REMINDER: &str = "The run needs its result: call `submit_result` now, with \
     arguments that match its schema. Without it the run fails.";

/// The job's `result_schema` does not compile.
#[derive(Debug, thiserror::Error)]
#[error("result_schema is not a valid JSON Schema: {0}")]
pub struct InvalidResultSchema(String);

/// Why a submitted result was not taken; the text goes back to the model.
#[derive(Debug, thiserror::Error)]
pub enum ResultRefused {
    #[error("the arguments are {bytes} bytes; a result may be at most {max} bytes", max = MAX_RESULT_BYTES)]
    TooLarge { bytes: usize },
    #[error("the arguments are not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// What does not match the schema, a line each (the last may say how many more).
    #[error("{}", .0.join("; "))]
    Mismatch(Vec<String>),
}

/// The job's schema, compiled, and how it is offered.
pub struct ResultSchema {
    /// What the tool's parameters are: the schema, or the wrapper around it.
    parameters: Value,
    validator: Validator,
    /// Offered as `{value: <schema>}`: the result is the submitted `value`.
    wrapped: bool,
}

/// What the final turn produced.
pub struct Submitted {
    /// The model's text on the final turn(s), if it wrote any.
    pub summary: Option<String>,
    pub result: Value,
}

impl ResultSchema {
    /// `Err` when the schema does not compile (the job's checks make sure it does).
    pub fn new(schema: &Value) -> Result<ResultSchema, InvalidResultSchema> {
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        let parameters = if wrapped {
            wrap(schema)
        } else {
            schema.clone()
        };
        let validator = jsonschema::validator_for(&parameters)
            .map_err(|e| InvalidResultSchema(e.to_string()))?;
        Ok(ResultSchema {
            parameters,
            validator,
            wrapped,
        })
    }

    /// The `submit_result` tool as offered to the model.
    pub fn tool(&self) -> ToolDefinition {
        let mut description = "Submit the run's structured result. The arguments are checked \
                               against this tool's schema; a result that does not match comes \
                               back with the errors, to be submitted again."
            .to_string();
        if self.wrapped {
            description.push_str(" Put the result in `value`.");
        }
        ToolDefinition {
            name: SUBMIT_RESULT.into(),
            description,
            parameters: self.parameters.clone(),
        }
    }

    /// The result in `arguments` (the string the model sent), or what is wrong with it.
    pub fn check(&self, arguments: &str) -> Result<Value, ResultRefused> {
        if arguments.len() > MAX_RESULT_BYTES {
            return Err(ResultRefused::TooLarge {
                bytes: arguments.len(),
            });
        }
        let submitted: Value = serde_json::from_str(arguments).map_err(ResultRefused::NotJson)?;
        let problems = {
            let mut errors = self.validator.iter_errors(&submitted);
            let mut lines: Vec<String> = errors.by_ref().take(MAX_ERRORS).map(describe).collect();
            let more = errors.count();
            if more > 0 {
                lines.push(format!("… and {more} more"));
            }
            lines
        };
        if !problems.is_empty() {
            return Err(ResultRefused::Mismatch(problems));
        }
        Ok(match (self.wrapped, submitted) {
            (true, Value::Object(mut fields)) => fields.remove("value").unwrap_or(Value::Null),
            (_, submitted) => submitted,
        })
    }
}

/// `{value: <schema>}`, with the schema's `$defs` (and `$schema`) moved up
/// so that its local references (`#/$defs/x`) still resolve.
fn wrap(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut outer = json!({
        "type": "object",
        "properties": {},
        "required": ["value"],
        "additionalProperties": false
    });
    if let (Some(inner_map), Some(outer_map)) = (inner.as_object_mut(), outer.as_object_mut()) {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(moved) = inner_map.remove(key) {
                outer_map.insert(key.to_string(), moved);
            }
        }
    }
    outer["properties"]["value"] = inner;
    outer
}

/// One validation error: where in the submitted arguments, and what.
fn describe(error: jsonschema::ValidationError<'_>) -> String {
    let at = error.instance_path().as_str().to_string();
    let message = error.to_string();
    let message = match message.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    };
    if at.is_empty() {
        format!("(root): {message}")
    } else {
        format!("{at}: {message}")
    }
}

/// The final turn with a result schema: ask for the outcome and the result,
/// and give the model [`MAX_TRIES`] turns to submit a valid one. A model
/// that answers in text only is reminded once. `Stop::Failed` when no valid
/// result came; budget and provider stops end the run as they would
/// anywhere else (the result is part of the job, not a courtesy).
///
/// `text` is the model's latest text on these turns, left there also when
/// no valid result came.
///
/// `first_try` is what was wrong with a result that came with the last
/// step's `step_done`: that was the first try, answered with the errors
/// already, so the turns go on from the second without asking again.
pub async fn result_turn(
    session: &mut Session<'_>,
    schema: &ResultSchema,
    text: &mut Option<String>,
    first_try: Option<String>,
) -> Result<Submitted, Stop> {
    session.offer_final_tool(schema.tool());
    let mut reminded = false;
    let (first, mut last_problem) = match first_try {
        Some(problem) => (2, problem),
        None => {
            session.tell(RESULT_REQUEST.to_string());
            (1, String::new())
        }
    };
    for tries in first..=MAX_TRIES {
        let response = session
            .call_model(Phase::Summary, None, ToolChoice::Auto)
            .await?;
        if let Some(said) = response.text.as_deref().map(str::trim)
            && !said.is_empty()
        {
            *text = Some(said.to_string());
        }
        if response.tool_calls.is_empty() {
            last_problem = "the model answered in text and did not call submit_result".into();
            if reminded {
                return Err(failed(tries, &last_problem));
            }
            reminded = true;
            session.tell(RESULT_REMINDER.to_string());
            continue;
        }
        match answer_calls(session, schema, &response.tool_calls) {
            Ok(result) => {
                return Ok(Submitted {
                    summary: text.clone(),
                    result,
                });
            }
            Err(problem) => last_problem = problem,
        }
    }
    Err(failed(MAX_TRIES, &last_problem))
}

/// Answer every call of one turn (both APIs want a result for each): the
/// first valid `submit_result` is the result; anything else gets an error.
fn answer_calls(
    session: &mut Session<'_>,
    schema: &ResultSchema,
    calls: &[ToolCall],
) -> Result<Value, String> {
    let mut accepted = None;
    let mut problem = String::new();
    for call in calls {
        let answer = if call.name != SUBMIT_RESULT {
            problem = format!("the model called `{}` instead of submit_result", call.name);
            format!(
                "error: `{}` cannot be called now; only `submit_result` can",
                call.name
            )
        } else if accepted.is_some() {
            ALREADY_ACCEPTED.into()
        } else {
            match schema.check(&call.arguments) {
                Ok(result) => {
                    accepted = Some(result);
                    RESULT_ACCEPTED.to_string()
                }
                Err(errors) => {
                    let errors = errors.to_string();
                    let answer = mismatch(&errors);
                    problem = errors;
                    answer
                }
            }
        };
        // The model provider is a third party: the errors quote what was submitted.
        let answer = session.tool_context().secrets.redact(&answer).into_owned();
        session.answer_call(&call.id, answer);
    }
    accepted.ok_or(problem)
}

fn failed(tries: u32, problem: &str) -> Stop {
    let noun = if tries == 1 { "try" } else { "tries" };
    Stop::Failed(format!(
        "the result did not match result_schema after {tries} {noun}: {problem}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_object_schema_is_wrapped_and_unwrapped() {
        let schema = ResultSchema::new(&json!({
            "type": "array",
            "items": {"$ref": "#/$defs/n"},
            "$defs": {"n": {"type": "integer"}}
        }))
        .unwrap();
        assert_eq!(schema.tool().parameters["type"], "object");
        assert_eq!(schema.check(r#"{"value": [1, 2]}"#).unwrap(), json!([1, 2]));
        let error = schema
            .check(r#"{"value": [1, "x"]}"#)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("/value/1: "), "{error}");
    }

    #[test]
    fn hostile_arguments_are_refused_with_a_reason() {
        let schema = ResultSchema::new(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .unwrap();
        assert!(
            schema
                .check("{not json")
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        let huge = format!(r#"{{"n": 1, "pad": "{}"}}"#, "x".repeat(MAX_RESULT_BYTES));
        let too_large = schema.check(&huge).unwrap_err().to_string();
        assert_eq!(
            too_large,
            format!(
                "the arguments are {} bytes; a result may be at most {MAX_RESULT_BYTES} bytes",
                huge.len()
            )
        );
        assert!(
            schema
                .check("{}")
                .unwrap_err()
                .to_string()
                .contains("\"n\" is a required")
        );
        assert_eq!(schema.check(r#"{"n": 3}"#).unwrap(), json!({"n": 3}));
    }

    #[test]
    fn many_errors_are_capped() {
        let schema = ResultSchema::new(&json!({
            "type": "object",
            "additionalProperties": {"type": "integer"}
        }))
        .unwrap();
        let args: serde_json::Map<String, Value> =
            (0..20).map(|i| (format!("k{i}"), json!("x"))).collect();
        let error = schema
            .check(&Value::Object(args).to_string())
            .unwrap_err()
            .to_string();
        assert_eq!(error.matches("is not of type").count(), MAX_ERRORS);
        assert!(error.ends_with("… and 15 more"), "{error}");
    }
}
