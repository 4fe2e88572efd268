//! What the model sees: the system prompt, the per-phase messages and the
//! control tools (`submit_plan`, `step_done`, `update_plan`).
//!
//! This is part of the product's contract (PRODUCT.md, "What the model
//! sees"): cassettes and skills depend on the exact text, so it changes
//! only on purpose. Nothing here may contain times, ids or anything else
//! that differs between two runs of the same job, apart from the workspace
//! path, which cassettes normalize.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::event::PlanStep;
use crate::provider::ToolDefinition;
use crate::skills::Skill;

pub const SUBMIT_PLAN: &str = "submit_plan";
pub const STEP_DONE: &str = "step_done";
pub const UPDATE_PLAN: &str = "update_plan";

pub fn system_prompt(
    skill: &Skill,
    further: &[Skill],
    workspace: &str,
    tools: &[String],
) -> String {
    let text = format!(
        "You are agentci, a coding agent running unattended in CI. Nobody will answer questions: \
         decide, act with the tools, and report.\n\
         The workspace is {workspace}. Paths in tool calls are relative to it; nothing outside it \
         can be read or changed. Tools available in this run: {tools}. Calls are decided by a \
         permission policy; a denied call returns PERMISSION_DENIED, so choose another way.\n\
         Work in two phases. First plan: look around with the read-only tools if you need to, \
         then call submit_plan with ordered steps, each with a title and an expected outcome. \
         Then execute the steps one at a time, calling step_done when a step is finished.\n\n\
         # Skill: {name}\n{description}\n\n{instructions}",
        tools = if tools.is_empty() {
            "none".to_string()
        } else {
            tools.join(", ")
        },
        name = skill.name,
        description = skill.description,
        instructions = skill.instructions.trim(),
    );
    format!("{text}\n\n{}", skill_folders(skill, further))
}

/// The per-run part about skills: where the skill's folder is (its body
/// names sibling files by relative path; the Agent Skills client guidance
/// is to give "a base path for resolving relative references in the skill
/// body") and the further skills, by name, description and folder only;
/// the model reads a `SKILL.md` when it needs it (progressive disclosure).
/// Absolute paths differ between checkouts, so this comes after the text
/// that stays the same from run to run; cassettes normalize them.
pub fn skill_folders(skill: &Skill, further: &[Skill]) -> String {
    let mut text = format!(
        "The skill's folder is {dir}: resolve relative paths in the skill's instructions \
         against it. Files in a skill folder are read with read, find, grep and ls by their \
         absolute path; skill folders are read-only. Scripts there run with exec by their \
         absolute path, when the permission policy allows the command.",
        dir = skill.dir.display()
    );
    if !further.is_empty() {
        text.push_str(
            "\n\nFurther skills you may use. When one fits the task, read its SKILL.md first \
             and follow it:",
        );
        for other in further {
            text.push_str(&format!(
                "\n- {name}: {description} (folder: {dir}, instructions: {file})",
                name = other.name,
                description = other.description,
                dir = other.dir.display(),
                file = other.dir.join("SKILL.md").display(),
            ));
        }
    }
    text
}

pub fn goal_message(goal: &str) -> String {
    format!(
        "Goal:\n{}\n\nMake a plan for this goal and submit it with submit_plan.",
        goal.trim()
    )
}

pub const PLAN_REMINDER: &str =
    "Submit your plan now by calling submit_plan with the ordered steps.";

pub fn step_message(index: usize, total: usize, step: &PlanStep) -> String {
    format!(
        "Step {n} of {total}: {title}\nExpected outcome: {outcome}\n\
         Carry out this step with the tools. When it is done, call step_done with a short \
         summary. To change the steps after this one, call update_plan.",
        n = index + 1,
        title = step.title,
        outcome = step.expected_outcome,
    )
}

pub const SUMMARY_REQUEST: &str = "All steps are done. Write a short summary of what you changed \
     and why, for the run's report. Do not call tools.";

pub const PLAN_ACCEPTED: &str = "Plan accepted.";
pub const STEP_DONE_ACK: &str = "Step marked done.";

fn steps_schema() -> Value {
    json!({
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "What the step does, in a few words."},
                "expected_outcome": {"type": "string", "description": "How to tell the step worked."}
            },
            "required": ["title", "expected_outcome"],
            "additionalProperties": false
        }
    })
}

pub fn submit_plan_tool() -> ToolDefinition {
    ToolDefinition {
        name: SUBMIT_PLAN.into(),
        description: "Submit the plan: ordered steps, each with a title and an expected outcome."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"steps": steps_schema()},
            "required": ["steps"],
            "additionalProperties": false
        }),
    }
}

pub fn step_done_tool() -> ToolDefinition {
    ToolDefinition {
        name: STEP_DONE.into(),
        description: "Mark the current step as done, with a short summary of what was done.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
            "additionalProperties": false
        }),
    }
}

pub fn update_plan_tool() -> ToolDefinition {
    ToolDefinition {
        name: UPDATE_PLAN.into(),
        description: "Replace the steps after the current one. Completed steps and the current \
                      step do not change."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"steps": steps_schema()},
            "required": ["steps"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepsArgs {
    steps: Vec<PlanStep>,
}

/// Parse the `steps` of `submit_plan` / `update_plan`; `Err` is a message for the model.
pub fn parse_steps(arguments: &Value, allow_empty: bool) -> Result<Vec<PlanStep>, String> {
    let args: StepsArgs = serde_json::from_value(arguments.clone()).map_err(|e| {
        format!("expected {{\"steps\": [{{\"title\": str, \"expected_outcome\": str}}]}}: {e}")
    })?;
    if args.steps.is_empty() && !allow_empty {
        return Err("the plan needs at least one step".into());
    }
    if let Some(i) = args.steps.iter().position(|s| s.title.trim().is_empty()) {
        return Err(format!("step {} has an empty title", i + 1));
    }
    Ok(args.steps)
}

/// Parse the `summary` of `step_done`; `Err` is a message for the model.
pub fn parse_summary(arguments: &Value) -> Result<String, String> {
    arguments
        .get("summary")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "expected {\"summary\": str}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_and_reject() {
        let ok = json!({"steps": [{"title": "a", "expected_outcome": "b"}]});
        assert_eq!(parse_steps(&ok, false).unwrap().len(), 1);
        assert!(parse_steps(&json!({"steps": []}), false).is_err());
        assert!(parse_steps(&json!({"steps": []}), true).is_ok());
        assert!(parse_steps(&json!({"steps": [{"title": "a"}]}), false).is_err());
        assert!(parse_steps(&json!({"plan": []}), false).is_err());
    }
}
