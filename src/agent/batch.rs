//! One turn's tool calls: parse, check, decide, run, record.
//!
//! Every call gets a result, in the order the model asked, even when some
//! fail. Read-only calls next to each other run in parallel; a mutating call
//! runs alone, in order. Nothing here stops the run: every problem with a
//! call becomes a result the model can act on.

use std::time::Instant;

use futures_util::future::join_all;
use serde_json::Value;

use crate::event::{Decision, EventBus, EventKind, RuleSource, ToolResultEvent};
use crate::policy::{PermissionPolicy, ToolAllowance, Verdict};
use crate::provider::ToolCall;
use crate::tools::{ToolContext, ToolErrorCode, ToolResult, schema};

use super::loop_guard::LoopGuard;
use super::toolset::{NotOffered, SkillRefusal, ToolSet};

/// What the batch needs from the run, borrowed for one turn.
pub struct BatchEnv<'a> {
    pub tools: &'a ToolSet,
    pub policy: &'a PermissionPolicy,
    pub ctx: &'a ToolContext,
    pub bus: &'a EventBus,
    /// During planning only read-only tools may run.
    pub read_only_phase: bool,
}

/// A call that passed every check and may run.
struct Approved<'a> {
    index: usize,
    tool: &'a dyn crate::tools::Tool,
    args: Value,
}

/// Run `calls` and return one result per call, in order.
pub async fn run_batch(
    env: &BatchEnv<'_>,
    calls: &[ToolCall],
    guard: &mut LoopGuard,
) -> Vec<ToolResult> {
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let mut approved = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        match admit(env, call, guard) {
            Ok((tool, args)) => approved.push(Approved { index, tool, args }),
            Err(result) => results[index] = Some(result),
        }
    }

    // Contiguous read-only calls form one parallel group; a mutating call is a group of its own.
    let mut groups: Vec<Vec<Approved>> = Vec::new();
    for call in approved {
        let read_only = call.tool.spec().read_only;
        match groups.last_mut() {
            Some(group) if read_only && group.iter().all(|c| c.tool.spec().read_only) => {
                group.push(call)
            }
            _ => groups.push(vec![call]),
        }
    }
    for group in groups {
        let outcomes = join_all(group.into_iter().map(|call| async move {
            let started = Instant::now();
            let result = call.tool.call(call.args, env.ctx).await;
            (call.index, result, started.elapsed())
        }))
        .await;
        for (index, result, elapsed) in outcomes {
            record_result(env, &calls[index], &result, elapsed.as_millis() as u64);
            results[index] = Some(result);
        }
    }

    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| ToolResult::failure(ToolErrorCode::Io, "call was not run")))
        .collect()
}

/// Emit `tool.call`, then check the call; `Err` is the (already recorded) refusal.
fn admit<'a>(
    env: &BatchEnv<'a>,
    call: &ToolCall,
    guard: &mut LoopGuard,
) -> Result<(&'a dyn crate::tools::Tool, Value), ToolResult> {
    let parsed: Result<Value, _> = serde_json::from_str(&call.arguments);
    env.bus.emit(EventKind::ToolCall {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: match &parsed {
            Ok(v) => v.clone(),
            Err(_) => serde_json::json!({ "_unparsed": call.arguments }),
        },
    });
    let refuse = |result: ToolResult| {
        record_result(env, call, &result, 0);
        result
    };
    let args = match parsed {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => {
            return Err(refuse(ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!(
                    "arguments of `{}` must be a JSON object, got {}",
                    call.name,
                    json_kind(&other)
                ),
            )));
        }
        Err(e) => {
            return Err(refuse(ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!("arguments of `{}` are not valid JSON: {e}", call.name),
            )));
        }
    };
    let tool = match env.tools.get(&call.name, env.read_only_phase) {
        Ok(tool) => tool,
        Err(NotOffered { available }) => {
            // A tool of the run called while planning is refused by the
            // phase, not by the tool set; the trace says which.
            let in_run = env.tools.names().contains(&call.name);
            let verdict = if in_run {
                refusal("phase", RuleSource::Phase, Vec::new())
            } else {
                refusal("tool set", RuleSource::ToolSet, Vec::new())
            };
            decide(env, call, &verdict);
            return Err(refuse(ToolResult::failure(
                ToolErrorCode::UnknownTool,
                format!(
                    "tool `{}` is not available {}; available: {}",
                    call.name,
                    if env.read_only_phase {
                        "while planning (submit the plan first)"
                    } else {
                        "in this run"
                    },
                    available.join(", ")
                ),
            )));
        }
    };
    if let Err(message) = schema::check_arguments(&tool.spec().parameters, &args) {
        return Err(refuse(ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("invalid arguments for `{}`: {message}", call.name),
        )));
    }
    if let Some(count) = guard.observe(&call.name, &args) {
        return Err(refuse(ToolResult::failure(
            ToolErrorCode::LoopDetected,
            format!(
                "the same `{}` call with the same arguments was made {count} times in a row; \
                 it was not run again. Try something different.",
                call.name
            ),
        )));
    }
    if let Err(SkillRefusal { allowed }) = env.tools.skill_permits(&call.name, &args) {
        let verdict = refusal("skill allowed-tools", RuleSource::Skill, allowed.clone());
        decide(env, call, &verdict);
        return Err(refuse(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "the skill allows `{}` only as {}",
                call.name,
                allowed.join(", ")
            ),
        )));
    }
    let verdict = decide_through_links(env, &call.name, &args);
    decide(env, call, &verdict);
    if verdict.decision == Decision::Deny {
        return Err(refuse(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "`{}` call denied by the job's permission policy ({}); {}",
                call.name,
                verdict.rule,
                what_is_allowed(env.policy, &call.name)
            ),
        )));
    }
    Ok((tool, args))
}

/// The allow rules that exist for `tool`, so a model whose call was denied
/// knows what it may do instead.
fn what_is_allowed(policy: &PermissionPolicy, tool: &str) -> String {
    match policy.allowance(tool) {
        ToolAllowance::None => format!("the job allows no `{tool}` calls"),
        ToolAllowance::Any => format!("the job allows other `{tool}` calls"),
        ToolAllowance::Only(rules) => {
            format!("the job allows `{tool}` only as: {}", rules.join(", "))
        }
    }
}

/// The policy's verdict on a call, judged on the path as written and, when
/// a symlink inside the workspace leads elsewhere, on where it leads too:
/// `deny: read(secrets/**)` must also stop `read(link-to-secrets/key)`.
/// The stricter verdict wins.
fn decide_through_links(env: &BatchEnv<'_>, tool: &str, args: &Value) -> Verdict {
    let written = env.policy.decide(tool, args);
    let Some(path) = args.get("path").and_then(Value::as_str) else {
        return written;
    };
    let Ok(resolved) = env.ctx.workspace.resolve(path) else {
        // The tool refuses it anyway, as outside the workspace.
        return written;
    };
    let target = env.ctx.workspace.relative(&resolved);
    let mut through = args.clone();
    through["path"] = Value::String(target);
    let linked = env.policy.decide(tool, &through);
    if written.decision == Decision::Allow && linked.decision == Decision::Deny {
        Verdict {
            rule: format!("{} (through a symlink)", linked.rule),
            ..linked
        }
    } else {
        written
    }
}

/// A denial decided before the job's rules: by the tool set, the phase or the skill.
fn refusal(rule: &str, source: RuleSource, patterns: Vec<String>) -> Verdict {
    Verdict {
        decision: Decision::Deny,
        rule: rule.to_string(),
        source,
        patterns,
    }
}

fn decide(env: &BatchEnv<'_>, call: &ToolCall, verdict: &Verdict) {
    env.bus.emit(EventKind::PermissionDecision {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        decision: verdict.decision,
        rule: verdict.rule.clone(),
        source: verdict.source,
        patterns: verdict.patterns.clone(),
    });
}

fn record_result(env: &BatchEnv<'_>, call: &ToolCall, result: &ToolResult, duration_ms: u64) {
    env.bus.emit(EventKind::ToolResult(ToolResultEvent {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        ok: result.ok,
        error_code: result.error.map(|c| c.as_str().to_string()),
        summary: result.summary.clone(),
        data: result.data.clone(),
        duration_ms,
    }));
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
