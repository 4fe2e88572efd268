//! The judge's answer: the one tool it must call (`submit_judgement`), the
//! arguments checked against its JSON Schema (never parsed from prose),
//! and the median of several samples.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::JudgeError;
use crate::agent::result::ResultSchema;
use crate::provider::{ChatResponse, ToolDefinition};

/// The tool a judge answers through.
pub const SUBMIT_JUDGEMENT: &str = "submit_judgement";

/// The arguments' JSON Schema.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "score": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "How well the run meets the rubric, from 0 (not at all) to 1 (fully)."
            },
            "verdict": {
                "type": "string",
                "enum": ["pass", "fail"],
                "description": "Whether the run meets the rubric."
            },
            "reasons": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Short sentences saying what in the material led to the score."
            }
        },
        "required": ["score", "verdict", "reasons"],
        "additionalProperties": false
    })
}

pub fn tool() -> ToolDefinition {
    ToolDefinition {
        name: SUBMIT_JUDGEMENT.into(),
        description: "Submit your judgement of the run against the rubric. Call it exactly once."
            .into(),
        parameters: schema(),
    }
}

/// What the judge said in its verdict field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Said {
    Pass,
    Fail,
}

/// One sample's judgement, checked against [`schema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub score: f64,
    pub verdict: Said,
    pub reasons: Vec<String>,
}

/// The judgement in `response`, or why there is none.
pub fn read(response: &ChatResponse) -> Result<Judgement, JudgeError> {
    let Some(call) = response
        .tool_calls
        .iter()
        .find(|c| c.name == SUBMIT_JUDGEMENT)
    else {
        let what = match (response.tool_calls.first(), &response.text) {
            (Some(other), _) => format!("called `{}` instead", other.name),
            (None, Some(text)) if !text.trim().is_empty() => format!(
                "answered in text ({})",
                crate::inert::clip(text.trim(), 120)
            ),
            _ => "answered nothing".to_string(),
        };
        return Err(JudgeError::NotCalled { what });
    };
    let validator = ResultSchema::new(&schema())?;
    let checked = validator
        .check(&call.arguments)
        .map_err(|problem| JudgeError::Invalid {
            problem: problem.to_string(),
        })?;
    serde_json::from_value::<Judgement>(checked).map_err(|e| JudgeError::Invalid {
        problem: e.to_string(),
    })
}

/// The median of `scores`: the middle one, or for an even count the mean
/// of the two in the middle. `None` for none.
pub fn median(scores: &[f64]) -> Option<f64> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn answer(arguments: &str) -> ChatResponse {
        ChatResponse {
            tool_calls: vec![ToolCall {
                id: "j1".into(),
                name: SUBMIT_JUDGEMENT.into(),
                arguments: arguments.into(),
            }],
            ..ChatResponse::default()
        }
    }

    #[test]
    fn only_a_valid_tool_call_is_a_judgement() {
        let good = read(&answer(
            r#"{"score": 0.8, "verdict": "pass", "reasons": ["tests pass"]}"#,
        ))
        .unwrap();
        assert!((good.score - 0.8).abs() < 1e-12);
        assert_eq!(good.verdict, Said::Pass);
        for (arguments, expected) in [
            ("{not json", "not valid JSON"),
            (
                r#"{"score": 1.5, "verdict": "pass", "reasons": []}"#,
                "/score",
            ),
            (
                r#"{"score": 0.5, "verdict": "maybe", "reasons": []}"#,
                "/verdict",
            ),
            (r#"{"score": 0.5, "verdict": "pass"}"#, "reasons"),
        ] {
            let error = read(&answer(arguments)).unwrap_err().to_string();
            assert!(error.contains(expected), "{arguments}: {error}");
        }
        let prose = ChatResponse {
            text: Some("Score: 0.9, pass".into()),
            ..ChatResponse::default()
        };
        let error = read(&prose).unwrap_err().to_string();
        assert!(error.contains("answered in text"), "{error}");
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[0.2, 0.9, 0.8]), Some(0.8));
        assert_eq!(median(&[0.2, 0.8]), Some(0.5));
        assert_eq!(median(&[0.4]), Some(0.4));
        assert_eq!(median(&[]), None);
    }
}
