//! One turn's tool calls: parse, check, decide, run, record.
//!
//! Every call gets a result, in the order the model asked, even when some
//! fail or time out. Read-only calls next to each other form one batch and
//! run concurrently, at most `max_parallel_tools` at a time; a mutating
//! call is a batch of its own, run in order. Every call runs under its tool
//! timeout; one past it gets a `TIMEOUT` result while the others carry on.
//! `tool.batch.started` / `tool.batch.completed` record the grouping. Nothing
//! here stops the run: every problem with a call becomes a result the model
//! can act on (the loop guard's verdict is read by the step afterwards).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::event::bus::EventBus;
use crate::event::{
    Decision, EventKind, RuleSource, ToolBatchCompleted, ToolBatchStarted, ToolResultEvent,
};
use crate::job::ToolLoopSpec;
use crate::policy::{PermissionPolicy, ToolAllowance, Verdict};
use crate::provider::ToolCall;
use crate::tools::{RuleArgument, ToolContext, ToolErrorCode, ToolResult, ToolSpec, schema};

use super::loop_guard::{Judgement, LoopGuard};
use super::subagent::TaskRunner;
use super::toolset::{NotOffered, SkillRefusal, ToolSet};
use crate::tools::task::TASK;

/// Extra time the batch gives `exec` past the longest timeout it may ask
/// for, when the job sets no `tool_timeouts.exec`: `exec` stops its own
/// command at its `timeout` argument and reports the output so far.
const EXEC_GRACE: Duration = Duration::from_secs(5);

/// The least time a `task` call gets when the job sets no `tool_timeouts.task`:
/// a sub-agent makes many model calls and is bounded by `task.max_turns`
/// and the run's budget, not by the time one tool call may take.
const TASK_TIMEOUT: Duration = Duration::from_secs(3600);

/// What the batch needs from the run, borrowed for one turn.
pub struct BatchEnv<'a> {
    pub tools: &'a ToolSet,
    pub policy: &'a PermissionPolicy,
    pub ctx: &'a ToolContext,
    pub bus: &'a EventBus,
    /// During planning only read-only tools may run.
    pub read_only_phase: bool,
    /// Concurrency and timeouts from the job.
    pub tool_loop: &'a ToolLoopSpec,
    /// Numbers the run's batches.
    pub batches: &'a AtomicU64,
    /// Runs `task` calls (sub-agents); `None` inside a sub-agent, where
    /// `task` is refused.
    pub tasks: Option<&'a dyn TaskRunner>,
}

/// A call that passed every check and may run.
struct Approved<'a> {
    index: usize,
    tool: &'a dyn crate::tools::Tool,
    args: Value,
    /// May run next to other read-only calls: decided per call (an explore
    /// task, `process read`), from the tool's spec otherwise.
    read_only: bool,
}

/// What a turn's calls came to.
pub struct BatchRan {
    /// One result per call, in the order the model made them.
    pub results: Vec<ToolResult>,
    /// The calls that passed every check and ran (whatever their result):
    /// a run none of whose calls ever ran could not do anything.
    pub ran: usize,
}

/// Run `calls` and return one result per call, in order.
pub async fn run_batch(env: &BatchEnv<'_>, calls: &[ToolCall], guard: &mut LoopGuard) -> BatchRan {
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let parsed: Vec<Option<Value>> = calls
        .iter()
        .map(|c| serde_json::from_str(&c.arguments).ok())
        .collect();
    let turn: Vec<(&str, &Value)> = calls
        .iter()
        .zip(&parsed)
        .filter_map(|(c, a)| a.as_ref().map(|a| (c.name.as_str(), a)))
        .collect();
    let turn_judgement = guard.observe_turn(&turn);
    let mut approved = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        match admit(env, call, guard, &turn_judgement) {
            Ok((tool, args)) => {
                let read_only = match (tool.spec().name.as_str(), env.tasks) {
                    (TASK, Some(tasks)) => tasks.read_only(&args),
                    _ => tool.read_only_call(&args),
                };
                approved.push(Approved {
                    index,
                    tool,
                    args,
                    read_only,
                });
            }
            Err(result) => results[index] = Some(result),
        }
    }

    let ran = approved.len();
    // Contiguous read-only calls form one parallel group; a mutating call is a group of its own.
    let mut groups: Vec<Vec<Approved>> = Vec::new();
    for call in approved {
        match groups.last_mut() {
            Some(group) if call.read_only && group.iter().all(|c| c.read_only) => group.push(call),
            _ => groups.push(vec![call]),
        }
    }
    for group in groups {
        for (index, result) in run_group(env, calls, group).await {
            results[index] = Some(result);
        }
    }

    let results = results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| ToolResult::failure(ToolErrorCode::Io, "call was not run")))
        .collect();
    BatchRan { results, ran }
}

/// Run one group (parallel reads or one mutating call) between its batch
/// events; returns `(index, result)` for each call, in no particular order.
async fn run_group(
    env: &BatchEnv<'_>,
    calls: &[ToolCall],
    group: Vec<Approved<'_>>,
) -> Vec<(usize, ToolResult)> {
    let batch = env.batches.fetch_add(1, Ordering::Relaxed) + 1;
    let call_ids: Vec<String> = group.iter().map(|c| calls[c.index].id.clone()).collect();
    let parallel = group.iter().all(|c| c.read_only);
    let max_parallel = if parallel {
        env.tool_loop.max_parallel_tools.max(1)
    } else {
        1
    };
    env.bus.emit(EventKind::ToolBatchStarted(ToolBatchStarted {
        batch,
        call_ids: call_ids.clone(),
        tools: group.iter().map(|c| calls[c.index].name.clone()).collect(),
        parallel,
        max_parallel,
    }));
    let started = Instant::now();
    // A semaphore, not a stream combinator: every call's future exists from
    // the start (so results come back whatever order they finish in), and
    // at most `max_parallel` of them hold a permit and run.
    let permits = Semaphore::new(max_parallel);
    let permits = &permits;
    let outcomes = join_all(group.into_iter().map(|call| async move {
        let _permit = permits.acquire().await.ok();
        let call_started = Instant::now();
        let name = call.tool.spec().name.as_str();
        let limit = timeout_for(env, name, &call.args);
        let run = match (name, env.tasks) {
            (TASK, Some(tasks)) => tasks.run(&calls[call.index].id, call.args),
            _ => call.tool.call(call.args, env.ctx),
        };
        let (result, timed_out) = match tokio::time::timeout(limit, run).await {
            Ok(result) => (
                super::kept_output::keep_whole(result, &calls[call.index].id, env.ctx),
                false,
            ),
            Err(_) => (timed_out_result(name, limit), true),
        };
        (call.index, result, call_started.elapsed(), timed_out)
    }))
    .await;
    let mut timed_out = Vec::new();
    let mut done = Vec::with_capacity(outcomes.len());
    for (index, result, elapsed, late) in outcomes {
        record_result(env, &calls[index], &result, elapsed.as_millis() as u64);
        if late {
            timed_out.push(calls[index].id.clone());
        }
        done.push((index, result));
    }
    env.bus
        .emit(EventKind::ToolBatchCompleted(ToolBatchCompleted {
            batch,
            call_ids,
            duration_ms: started.elapsed().as_millis() as u64,
            timed_out,
        }));
    done
}

/// The time a call of `tool` may take: `tool_timeouts.<tool>`, else
/// `tool_timeout`. `exec` without its own entry is stopped by its own
/// `timeout` argument, so the batch only backs it up.
fn timeout_for(env: &BatchEnv<'_>, tool: &str, args: &Value) -> Duration {
    let (limit, by_name) = env.tool_loop.timeout_of(tool);
    if tool == "exec" && !by_name {
        let asked = args
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
            .unwrap_or(env.ctx.limits.exec_timeout)
            .min(env.ctx.limits.exec_max_timeout);
        return limit.max(asked + EXEC_GRACE);
    }
    if tool == TASK && !by_name {
        return limit.max(TASK_TIMEOUT);
    }
    limit
}

fn timed_out_result(tool: &str, limit: Duration) -> ToolResult {
    ToolResult::failure(
        ToolErrorCode::Timeout,
        format!(
            "`{tool}` did not finish within {} (the job's tool timeout) and was stopped; the \
             other calls of the turn carried on. Try a smaller request.",
            crate::job::duration::format_duration(limit)
        ),
    )
    .with_data(serde_json::json!({ "timeout_ms": limit.as_millis() as u64 }))
}

/// Emit `tool.call`, then check the call; `Err` is the (already recorded) refusal.
fn admit<'a>(
    env: &BatchEnv<'a>,
    call: &ToolCall,
    guard: &mut LoopGuard,
    turn: &Judgement,
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
    check_call(env, call, parsed, guard, turn)
        .inspect_err(|result| record_result(env, call, result, 0))
}

/// The checks a call passes before it runs, in order: the loop guard lets
/// it run, its arguments are a JSON object, the tool is offered now, the
/// arguments fit its schema, and the skill and the policy allow it. `Err` is
/// the result the model gets; refusals by a rule are recorded as decisions.
fn check_call<'a>(
    env: &BatchEnv<'a>,
    call: &ToolCall,
    parsed: Result<Value, serde_json::Error>,
    guard: &mut LoopGuard,
    turn: &Judgement,
) -> Result<(&'a dyn crate::tools::Tool, Value), ToolResult> {
    // The guard comes first: a call refused or failing the same way again
    // and again is a repeat like any other (a model that kept calling a
    // tool it was refused burned its whole budget).
    let key = match &parsed {
        Ok(args) => args.clone(),
        Err(_) => Value::String(call.arguments.clone()),
    };
    loop_verdict(env, call, &key, guard, turn)?;
    let args = arguments_object(call, parsed)?;
    let tool = offered_tool(env, call, &args)?;
    if let Err(message) = schema::check_arguments(&tool.spec().parameters, &args) {
        return Err(ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("invalid arguments for `{}`: {message}", call.name),
        ));
    }
    permitted(env, call, tool, &args)?;
    Ok((tool, args))
}

fn arguments_object(
    call: &ToolCall,
    parsed: Result<Value, serde_json::Error>,
) -> Result<Value, ToolResult> {
    match parsed {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!(
                "arguments of `{}` must be a JSON object, got {}",
                call.name,
                json_kind(&other)
            ),
        )),
        Err(e) => Err(ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("arguments of `{}` are not valid JSON: {e}", call.name),
        )),
    }
}

/// The tool the call names, if this run offers it now: not `task` inside a
/// task, and only read-only tools while planning.
fn offered_tool<'a>(
    env: &BatchEnv<'a>,
    call: &ToolCall,
    args: &Value,
) -> Result<&'a dyn crate::tools::Tool, ToolResult> {
    if call.name == TASK && env.tasks.is_none() {
        decide(
            env,
            call,
            &refusal("sub-agent", RuleSource::ToolSet, Vec::new()),
        );
        return Err(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            "sub-agents cannot start sub-agents: `task` is not available inside a task; do the \
             work with your own tools and answer with text",
        ));
    }
    // A task whose tools only look is read-only, so it may run while planning too.
    let looks_only = call.name == TASK && env.tasks.is_some_and(|t| t.read_only(args));
    match env
        .tools
        .get(&call.name, env.read_only_phase && !looks_only)
    {
        Ok(tool) => Ok(tool),
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
            Err(ToolResult::failure(
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
            ))
        }
    }
}

/// The loop guard's word on the call (or the turn's, when the whole turn
/// repeats); a warning is also emitted as an event.
fn loop_verdict(
    env: &BatchEnv<'_>,
    call: &ToolCall,
    args: &Value,
    guard: &mut LoopGuard,
    turn: &Judgement,
) -> Result<(), ToolResult> {
    let judgement = match turn {
        Judgement::Run => guard.observe_call(&call.name, args),
        repeated => repeated.clone(),
    };
    match judgement {
        Judgement::Run => Ok(()),
        Judgement::Warn(message) => {
            env.bus.emit(EventKind::Warning {
                source: "loop_guard".into(),
                message: format!("call {} (`{}`) not run: {message}", call.id, call.name),
            });
            Err(ToolResult::failure(ToolErrorCode::LoopDetected, message))
        }
        Judgement::Stop(reason) => Err(ToolResult::failure(
            ToolErrorCode::LoopDetected,
            format!("not run: the step is ended, {reason}"),
        )),
    }
}

/// The skill's `allowed-tools`, then the job's permission policy; both
/// decisions are recorded.
fn permitted(
    env: &BatchEnv<'_>,
    call: &ToolCall,
    tool: &dyn crate::tools::Tool,
    args: &Value,
) -> Result<(), ToolResult> {
    if let Err(SkillRefusal { allowed, why }) =
        env.tools
            .skill_permits(&call.name, args, env.policy.skill_programs())
    {
        let verdict = refusal("skill allowed-tools", RuleSource::Skill, allowed.clone());
        decide(env, call, &verdict);
        // A line the patterns cannot judge says why, or the message would
        // name a pattern the call seems to match.
        let why = why.map(|why| format!(", which cannot vouch for this line: {why}"));
        return Err(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "the skill allows `{}` only as {}{}",
                call.name,
                allowed.join(", "),
                why.unwrap_or_default()
            ),
        ));
    }
    let verdict = decide_through_links(env, tool.spec(), args);
    decide(env, call, &verdict);
    if verdict.decision == Decision::Deny {
        return Err(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "`{}` call denied by the job's permission policy ({}); {}",
                call.name,
                verdict.rule,
                what_is_allowed(env.policy, &call.name)
            ),
        ));
    }
    Ok(())
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
fn decide_through_links(env: &BatchEnv<'_>, spec: &ToolSpec, args: &Value) -> Verdict {
    let written = env.policy.decide_call(spec, args);
    let RuleArgument::Path { .. } = spec.rule_argument else {
        return written;
    };
    let Some(path) = args.get("path").and_then(Value::as_str) else {
        return written;
    };
    let Ok(resolved) = env.ctx.workspace.resolve_for_reading(path) else {
        // The tool refuses it anyway, as outside the workspace.
        return written;
    };
    let target = env.ctx.workspace.relative(&resolved);
    let mut through = args.clone();
    through["path"] = Value::String(target);
    let linked = env.policy.decide_call(spec, &through);
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
