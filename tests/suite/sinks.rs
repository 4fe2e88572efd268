//! The sinks of the event stream: the JSONL trace against its schema, the
//! JUnit XML against the Jenkins format, and the plain log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentci::event::bus::{EventBus, EventSink};
use agentci::event::{
    BudgetLimit, CheckCompleted, CheckOutcome, ContextCompacted, ContextTrimmed, Decision, Event,
    EventKind, GitPatch, McpServerStartup, McpStartOutcome, McpStartup, ModelRequest,
    ModelResponse, ModelRetry, OutputPaths, Phase, PlanStep, RuleSource, RunCompleted, RunStarted,
    RunStatus, SCHEMA_VERSION, SandboxReport, SkillLoaded, SkillSource, StepStatus,
    SubagentCompleted, SubagentStarted, ToolBatchCompleted, ToolBatchStarted, ToolCallRef,
    ToolResultEvent, Totals,
};
use agentci::provider::{ModelInfo, Usage};
use agentci::sink::{
    JunitWriter, PlainLog, ProgressBars, TraceWriter, read_trace, read_trace_partial,
};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde_json::{Value, json};

use super::support::junit_schema::assert_readable;
use super::support::trace_schema::{assert_valid_trace, line_errors, schema, validator};

// ---------------------------------------------------------------- events

fn run_started() -> EventKind {
    EventKind::RunStarted(RunStarted {
        schema_version: SCHEMA_VERSION,
        agentci_version: "0.1.0".into(),
        job_name: "fix-clippy".into(),
        job_file: "workflows/fix-clippy.yaml".into(),
        skill: "rust-clippy-fixer".into(),
        goal: "Make clippy pass.".into(),
        model: ModelInfo {
            provider: "openai".into(),
            name: "gpt-4.1-mini".into(),
        },
        workspace: "/tmp/ws".into(),
        tools: vec!["read".into(), "exec".into()],
        outputs: OutputPaths {
            dir: ".agentci/runs/r1".into(),
            trace: Some(".agentci/runs/r1/trace.jsonl".into()),
            junit: None,
            patch: Some("out/changes.patch".into()),
        },
        sandbox: Box::new(SandboxReport {
            profile: "workspace-write".into(),
            network: false,
            require: false,
            enforced: vec!["filesystem".into(), "processes".into(), "run_folder".into()],
            missing: vec!["network".into()],
            writable: vec![agentci::event::WritableFolder {
                path: "/home/runner/.cargo/registry".into(),
                entry: "preset:cargo".into(),
            }],
            hosts: vec!["preset:cargo".into(), "registry.test:8080".into()],
        }),
        budget: Some(Box::new(agentci::event::BudgetInEffect {
            max_turns: 30,
            max_tool_calls: None,
            max_tokens: Some(200_000),
            max_cost_usd: Some(2.0),
            timeout_secs: Some(900.0),
        })),
        permissions: Some(Box::new(agentci::event::PermissionsInEffect {
            default: "deny".into(),
            allow: vec!["read".into(), "exec(cargo clippy *)".into()],
            deny: vec!["exec(git push *)".into()],
        })),
    })
}

fn plan(titles: &[&str]) -> Vec<PlanStep> {
    titles
        .iter()
        .map(|t| PlanStep {
            title: t.to_string(),
            expected_outcome: format!("{t} works"),
        })
        .collect()
}

fn tool_call(id: &str, tool: &str, arguments: Value) -> EventKind {
    EventKind::ToolCall {
        call_id: id.into(),
        tool: tool.into(),
        arguments,
    }
}

fn decision(id: &str, tool: &str, decision: Decision, rule: &str) -> EventKind {
    let (source, patterns) = match (rule, decision) {
        ("default", _) => (RuleSource::Default, vec![]),
        (_, Decision::Allow) => (RuleSource::Allow, vec![rule.to_string()]),
        (_, Decision::Deny) => (RuleSource::Deny, vec![rule.to_string()]),
    };
    EventKind::PermissionDecision {
        call_id: id.into(),
        tool: tool.into(),
        decision,
        rule: rule.into(),
        source,
        patterns,
    }
}

fn tool_result(id: &str, tool: &str, error_code: Option<&str>, ms: u64) -> EventKind {
    EventKind::ToolResult(ToolResultEvent {
        call_id: id.into(),
        tool: tool.into(),
        ok: error_code.is_none(),
        error_code: error_code.map(String::from),
        summary: if error_code.is_some() {
            "denied by exec(git push *)".into()
        } else {
            "exit code 0".into()
        },
        data: json!({"exit_code": 0, "stdout": "ok"}),
        duration_ms: ms,
    })
}

fn check(name: &str, outcome: CheckOutcome, exit_code: Option<i32>, output: &str) -> EventKind {
    EventKind::CheckCompleted(CheckCompleted {
        name: name.into(),
        command: format!("run {name}"),
        outcome,
        exit_code,
        duration_ms: 1500,
        output: output.into(),
        sandbox: "workspace-write".into(),
    })
}

fn run_completed(status: RunStatus, reason: &str, checks: (u32, u32)) -> EventKind {
    EventKind::RunCompleted(RunCompleted {
        status,
        reason: reason.into(),
        summary: (status == RunStatus::Passed || status == RunStatus::Failed)
            .then(|| "Fixed the clippy warnings in src/lib.rs.".to_string()),
        totals: Totals {
            reasoning_tokens: 0,
            turns: 12,
            tool_calls: 9,
            input_tokens: 3000,
            output_tokens: 400,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: (status == RunStatus::Passed).then_some(0.0123),
            duration_ms: 7100,
        },
        checks_passed: checks.0,
        checks_failed: checks.1,
        result: None,
        signal: None,
    })
}

/// A stream with every `EventKind` variant, and every nullable field both set and null.
fn every_kind() -> Vec<EventKind> {
    vec![
        run_started(),
        EventKind::SkillLoaded(SkillLoaded {
            name: "rust-clippy-fixer".into(),
            path: "skills/rust-clippy-fixer/SKILL.md".into(),
            description: "Fixes clippy warnings.".into(),
            allowed_tools: Some(vec!["read".into(), "exec(cargo *)".into()]),
            warnings: vec!["unknown tool NotebookEdit".into()],
            source: None,
        }),
        EventKind::SkillLoaded(SkillLoaded {
            name: "helper".into(),
            path: "skills/helper/SKILL.md".into(),
            description: "Helps.".into(),
            allowed_tools: None,
            warnings: vec![],
            source: Some(SkillSource {
                git: "https://github.com/acme/skills.git".into(),
                rev: "v1.2.0".into(),
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
                path: "skills/helper".into(),
            }),
        }),
        EventKind::Warning {
            source: "job".into(),
            message: "tool web_fetch is not in the skill's allowed-tools".into(),
        },
        EventKind::SandboxDegraded(SandboxReport {
            profile: "workspace-write".into(),
            network: false,
            require: false,
            enforced: vec!["filesystem".into(), "run_folder".into()],
            missing: vec!["processes".into(), "network".into()],
            writable: Vec::new(),
            hosts: Vec::new(),
        }),
        EventKind::NetworkRequest(agentci::netproxy::NetworkRecord {
            host: "static.crates.io".into(),
            port: 443,
            method: "CONNECT".into(),
            allowed: true,
            outcome: agentci::netproxy::Outcome::Closed,
            rule: Some("preset:cargo".into()),
            reason: None,
            address: Some("151.101.1.1".parse().unwrap()),
            bytes_sent: 1_204,
            bytes_received: 58_311,
            duration_ms: 95,
        }),
        EventKind::NetworkRequest(agentci::netproxy::NetworkRecord {
            host: "evil.example".into(),
            port: 443,
            method: "CONNECT".into(),
            allowed: false,
            outcome: agentci::netproxy::Outcome::NotListed,
            rule: None,
            reason: Some("`evil.example:443` is not in sandbox.network".into()),
            address: None,
            bytes_sent: 0,
            bytes_received: 0,
            duration_ms: 0,
        }),
        EventKind::ModelRequest(ModelRequest {
            call_id: "m1".into(),
            phase: Phase::Plan,
            turn: 1,
            step: None,
            messages: 2,
            tools: vec!["read".into(), "submit_plan".into()],
            sent: Some(agentci::event::SentDelta {
                kept: 0,
                messages_dropped: 0,
                messages_added: vec![
                    agentci::provider::Message::System {
                        content: "You are agentci's agent.".into(),
                    },
                    agentci::provider::Message::User {
                        content: "Make clippy pass.".into(),
                    },
                ],
                tools_offered: Some(vec![agentci::provider::ToolDefinition {
                    name: "read".into(),
                    description: "Read a file.".into(),
                    parameters: json!({"type": "object"}),
                }]),
            }),
        }),
        EventKind::ModelResponse(ModelResponse {
            reasoning: None,
            call_id: "m1".into(),
            latency_ms: 840,
            usage: Usage {
                reasoning_tokens: 0,
                input_tokens: 1200,
                output_tokens: 80,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
            finish_reason: Some("tool_calls".into()),
            text: None,
            tool_calls: vec![ToolCallRef {
                id: "c0".into(),
                name: "submit_plan".into(),
            }],
            cost_usd: None,
        }),
        EventKind::PlanCreated {
            steps: plan(&["Run clippy", "Fix warnings"]),
        },
        EventKind::StepStarted {
            index: 0,
            title: "Run clippy".into(),
        },
        EventKind::ModelRequest(ModelRequest {
            call_id: "m2".into(),
            phase: Phase::Execute,
            turn: 2,
            step: Some(0),
            messages: 4,
            tools: vec!["exec".into(), "step_done".into()],
            sent: None,
        }),
        EventKind::ModelResponse(ModelResponse {
            reasoning: None,
            call_id: "m2".into(),
            latency_ms: 500,
            usage: Usage {
                reasoning_tokens: 0,
                input_tokens: 1500,
                output_tokens: 60,
                cache_read_tokens: 1000,
                cache_write_tokens: 200,
            },
            finish_reason: None,
            text: Some("Running clippy.".into()),
            tool_calls: vec![],
            cost_usd: Some(0.0123),
        }),
        tool_call("c1", "exec", json!({"command": "cargo clippy"})),
        decision("c1", "exec", Decision::Allow, "exec(cargo clippy *)"),
        EventKind::ToolBatchStarted(ToolBatchStarted {
            batch: 1,
            call_ids: vec!["c1".into()],
            tools: vec!["exec".into()],
            parallel: false,
            max_parallel: 1,
        }),
        tool_result("c1", "exec", None, 1200),
        EventKind::ToolBatchCompleted(ToolBatchCompleted {
            batch: 1,
            call_ids: vec!["c1".into()],
            duration_ms: 1201,
            timed_out: vec![],
        }),
        tool_call("c2", "exec", json!({"command": "git push"})),
        decision("c2", "exec", Decision::Deny, "exec(git push *)"),
        tool_result("c2", "exec", Some("PERMISSION_DENIED"), 0),
        EventKind::StepCompleted {
            index: 0,
            title: "Run clippy".into(),
            summary: "two warnings".into(),
            status: StepStatus::Done,
        },
        EventKind::StepDoneDeclined {
            index: 1,
            call_id: "call_7".into(),
            failed_call_id: "call_6".into(),
            failed_tool: "exec".into(),
        },
        EventKind::PlanUpdated {
            steps: plan(&["Run clippy", "Fix warning 1", "Fix warning 2"]),
            from_index: 1,
        },
        EventKind::ModelRequest(ModelRequest {
            call_id: "m3".into(),
            phase: Phase::Summary,
            turn: 3,
            step: None,
            messages: 9,
            tools: vec![],
            sent: None,
        }),
        EventKind::ModelRetry(ModelRetry {
            call_id: "m3".into(),
            attempt: 1,
            max_attempts: 5,
            reason: "openai returned HTTP 429 from http://x/v1/chat/completions: slow down".into(),
            status: Some(429),
            wait_ms: 1000,
        }),
        EventKind::ModelRetry(ModelRetry {
            call_id: "m3".into(),
            attempt: 2,
            max_attempts: 3,
            reason: "the response stream broke off".into(),
            status: None,
            wait_ms: 250,
        }),
        EventKind::ContextTrimmed(ContextTrimmed {
            call_id: "m3".into(),
            reason: "prompt is too long".into(),
            messages_before: 40,
            messages_after: 9,
            estimated_tokens_before: 210_000,
            estimated_tokens_after: 30_000,
            sent: Some(agentci::event::SentDelta {
                kept: 3,
                messages_dropped: 37,
                messages_added: vec![
                    agentci::provider::Message::Assistant {
                        reasoning: Vec::new(),
                        content: None,
                        tool_calls: vec![agentci::provider::ToolCall {
                            id: "c9".into(),
                            name: "read".into(),
                            arguments: "{\"path\":\"src/lib.rs\"}".into(),
                        }],
                    },
                    agentci::provider::Message::Tool {
                        tool_call_id: "c9".into(),
                        content: "fn main() {}".into(),
                    },
                ],
                tools_offered: None,
            }),
        }),
        EventKind::SubagentStarted(SubagentStarted {
            kind: "explore".into(),
            tools: vec!["read".into(), "grep".into()],
            max_turns: 20,
        }),
        EventKind::SubagentCompleted(SubagentCompleted {
            ok: true,
            reason: "answered".into(),
            turns: 2,
            tool_calls: 3,
            usage: Usage {
                reasoning_tokens: 0,
                input_tokens: 200,
                output_tokens: 40,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
            duration_ms: 900,
        }),
        EventKind::ContextCompacted(ContextCompacted {
            call_id: "m4".into(),
            method: "digest".into(),
            summary_call_id: None,
            fallback_reason: Some("the budget leaves no room for a summary call".into()),
            messages_before: 40,
            messages_after: 12,
            replaced_messages: 29,
            replaced_tool_calls: vec!["call_1".into(), "call_2".into()],
            shortened_outputs: 0,
            tokens_before: 165_000,
            tokens_after: 41_000,
            window: 200_000,
            high_water: 160_000,
        }),
        EventKind::BudgetExceeded {
            limit: BudgetLimit::MaxCostUsd,
            used: 2.04,
            max: 2.0,
        },
        check("clippy clean", CheckOutcome::Passed, Some(0), ""),
        check(
            "tests pass",
            CheckOutcome::Failed,
            Some(101),
            "test a ... FAILED",
        ),
        check("slow", CheckOutcome::TimedOut, None, ""),
        check("docs", CheckOutcome::Skipped, None, ""),
        EventKind::RoundCompleted {
            round: 1,
            of: 2,
            checks_passed: 1,
            checks_failed: 2,
        },
        EventKind::RoundStarted { round: 2, of: 2 },
        EventKind::GitPatch(GitPatch {
            path: "out/changes.patch".into(),
            files_changed: 2,
            insertions: 10,
            deletions: 3,
        }),
        EventKind::GitCommit {
            branch: "agentci/fix-clippy".into(),
            sha: "89abcdef0123456789abcdef0123456789abcdef".into(),
        },
        EventKind::GitPush {
            remote: "origin".into(),
            branch: "agentci/fix-clippy".into(),
        },
        mcp_startup(),
        EventKind::McpServerDown {
            server: "github".into(),
            reason: "exited with status 1 during tools/call".into(),
            stderr: vec!["fatal: bad token".into()],
            required: false,
        },
        EventKind::McpToolsRefreshed {
            server: "everything".into(),
            tools: vec!["mcp__everything__get-sum".into()],
        },
        EventKind::McpServerRequest {
            server: "everything".into(),
            method: "sampling/createMessage".into(),
            outcome: "declined".into(),
            detail: "sampling is off for server everything; set \
                     mcp.servers.everything.sampling: true to let it call the run's model"
                .into(),
            params: r#"{"maxTokens":100,"messages":[]}"#.into(),
        },
        EventKind::ReplayDrift(agentci::provider::replay_drift::ReplayDrift {
            turns: 12,
            drifted: 3,
            recorded: 12,
            parts: [("skill text".to_string(), 3)].into(),
            first_drifted_turn: Some(1),
        }),
        EventKind::RunResumed(Box::new(agentci::event::RunResumed {
            from_turn: 7,
            from_step: Some(1),
            round: 1,
            previous_status: Some(RunStatus::BudgetExceeded),
            previous_reason: Some("budget exceeded: max_turns is 7 and 7 were used".into()),
            budget_before: agentci::event::BudgetInEffect {
                max_turns: 7,
                ..Default::default()
            },
            budget: agentci::event::BudgetInEffect {
                max_turns: 20,
                ..Default::default()
            },
            budget_changed: vec!["max_turns".into()],
            events_dropped: 5,
            torn_line_dropped: false,
        })),
        run_completed(RunStatus::BudgetExceeded, "max_cost_usd exceeded", (1, 2)),
    ]
}

/// The `type` tag of each variant. No wildcard: a new variant must be added
/// here, to `every_kind` and to docs/trace-schema.json.
fn tag(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::RunStarted(_) => "run.started",
        EventKind::SkillLoaded(_) => "skill.loaded",
        EventKind::Warning { .. } => "warning",
        EventKind::SandboxDegraded(_) => "sandbox.degraded",
        EventKind::NetworkRequest(_) => "network.request",
        EventKind::PlanCreated { .. } => "plan.created",
        EventKind::PlanUpdated { .. } => "plan.updated",
        EventKind::StepStarted { .. } => "step.started",
        EventKind::StepCompleted { .. } => "step.completed",
        EventKind::StepDoneDeclined { .. } => "step.done_declined",
        EventKind::ModelRequest(_) => "model.request",
        EventKind::ModelResponse(_) => "model.response",
        EventKind::ModelRetry(_) => "model.retry",
        EventKind::ContextTrimmed(_) => "context.trimmed",
        EventKind::ContextCompacted(_) => "context.compacted",
        EventKind::ToolCall { .. } => "tool.call",
        EventKind::PermissionDecision { .. } => "permission.decision",
        EventKind::ToolResult(_) => "tool.result",
        EventKind::ToolBatchStarted(_) => "tool.batch.started",
        EventKind::ToolBatchCompleted(_) => "tool.batch.completed",
        EventKind::SubagentStarted(_) => "subagent.started",
        EventKind::SubagentCompleted(_) => "subagent.completed",
        EventKind::BudgetExceeded { .. } => "budget.exceeded",
        EventKind::CheckCompleted(_) => "check.completed",
        EventKind::RoundStarted { .. } => "round.started",
        EventKind::RoundCompleted { .. } => "round.completed",
        EventKind::GitPatch(_) => "git.patch",
        EventKind::GitCommit { .. } => "git.commit",
        EventKind::GitPush { .. } => "git.push",
        EventKind::McpStartup(_) => "mcp.startup",
        EventKind::McpServerDown { .. } => "mcp.server.down",
        EventKind::McpToolsRefreshed { .. } => "mcp.tools.refreshed",
        EventKind::McpServerRequest { .. } => "mcp.server.request",
        EventKind::ReplayDrift(_) => "replay.drift",
        EventKind::RunResumed(_) => "run.resumed",
        EventKind::RunCompleted(_) => "run.completed",
    }
}

/// Stamp events the way the bus does, but with fixed times so outputs are exact.
fn stamped(kinds: Vec<EventKind>) -> Vec<Event> {
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            seq: i as u64 + 1,
            ts: format!("2025-03-01T10:00:{:02}.000Z", i.min(59)),
            run_id: "r1".into(),
            agent: None,
            kind,
        })
        .collect()
}

fn write_trace(dir: &Path, kinds: Vec<EventKind>) -> PathBuf {
    let path = dir.join("out/nested/trace.jsonl");
    let writer = TraceWriter::create(&path).unwrap();
    let bus = EventBus::new("r1", vec![Box::new(writer)]);
    for kind in kinds {
        bus.emit(kind);
    }
    assert!(bus.finish().is_empty());
    path
}

// ---------------------------------------------------------------- trace

#[test]
fn trace_of_every_event_kind_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = every_kind();
    let mut tags: Vec<&str> = kinds.iter().map(tag).collect();
    tags.sort();
    tags.dedup();
    let mut schema_tags: Vec<String> = schema()["properties"]["type"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    schema_tags.sort();
    assert_eq!(
        tags, schema_tags,
        "the stream must cover every type the schema knows"
    );

    let path = write_trace(dir.path(), kinds.clone());
    assert_valid_trace(&path);
    let events = read_trace(&path).unwrap();
    let read_back: Vec<EventKind> = events.into_iter().map(|e| e.kind).collect();
    assert_eq!(read_back, kinds);
}

#[test]
fn schema_rejects_renamed_fields_and_wrong_values() {
    let validator = validator();
    let lines: Vec<Value> = stamped(every_kind())
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let find = |ty: &str| lines.iter().find(|l| l["type"] == ty).unwrap().clone();

    let mut bad: Vec<(&str, Value)> = Vec::new();
    let mut v = find("tool.result");
    v["duration"] = v["duration_ms"].take();
    v.as_object_mut().unwrap().remove("duration_ms");
    bad.push(("renamed field", v));
    let mut v = find("permission.decision");
    v["decision"] = json!("maybe");
    bad.push(("unknown decision", v));
    let mut v = find("run.completed");
    v["status"] = json!("succeeded");
    bad.push(("unknown run status", v));
    let mut v = find("model.response");
    v["usage"]["total_tokens"] = json!(5);
    bad.push(("unknown nested field", v));
    let mut v = find("check.completed");
    v["exit_code"] = json!("101");
    bad.push(("wrong type", v));
    let mut v = find("run.started");
    v["schema_version"] = json!(2);
    bad.push(("other schema version", v));
    let mut v = find("step.started");
    v["type"] = json!("step.begun");
    bad.push(("unknown event type", v));
    let mut v = find("warning");
    v.as_object_mut().unwrap().remove("seq");
    bad.push(("missing seq", v));
    let mut v = find("budget.exceeded");
    v["limit"] = json!("max_money");
    bad.push(("unknown budget limit", v));

    for line in &lines {
        assert_eq!(
            line_errors(&validator, line),
            Vec::<String>::new(),
            "{line}"
        );
    }
    for (what, line) in bad {
        assert!(
            !line_errors(&validator, &line).is_empty(),
            "the schema accepted a line with {what}: {line}"
        );
    }
}

#[test]
fn assert_valid_trace_names_the_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trace(dir.path(), every_kind());
    let mut lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[2]["surprise"] = json!(true);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();

    let panic = std::panic::catch_unwind(|| assert_valid_trace(&path)).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("trace line 3"), "{message}");
    assert!(message.contains("surprise"), "{message}");
}

#[test]
fn assert_valid_trace_catches_seq_gaps_and_a_missing_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trace(dir.path(), every_kind());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    let gap: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 4)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&path, gap).unwrap();
    let panic = std::panic::catch_unwind(|| assert_valid_trace(&path)).unwrap_err();
    assert!(
        panic
            .downcast_ref::<String>()
            .unwrap()
            .contains("trace line 5: seq")
    );

    let no_end: String = lines[..lines.len() - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, no_end).unwrap();
    let panic = std::panic::catch_unwind(|| assert_valid_trace(&path)).unwrap_err();
    assert!(
        panic
            .downcast_ref::<String>()
            .unwrap()
            .contains("must be run.completed")
    );
}

#[test]
fn a_trace_cut_mid_line_keeps_every_earlier_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let mut writer = TraceWriter::create(&path).unwrap();
    let events = stamped(every_kind());
    for event in &events[..5] {
        writer.on_event(event).unwrap();
    }
    // What a kill during the sixth write leaves behind: the lines before it are
    // on disk already, because each line is written straight through.
    let complete = std::fs::read_to_string(&path).unwrap();
    assert_eq!(complete.lines().count(), 5);
    let sixth = serde_json::to_string(&events[5]).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&sixth.as_bytes()[..sixth.len() / 2])
        .unwrap();
    drop(file);

    let error = read_trace(&path).unwrap_err();
    assert!(
        matches!(
            error,
            agentci::sink::TraceReadError::Malformed { line: 6, .. }
        ),
        "{error}"
    );
    let error = error.to_string();
    assert!(error.contains("line 6"), "{error}");
    assert!(error.contains("trace.jsonl"), "{error}");
    let partial = read_trace_partial(&path).unwrap();
    assert_eq!(partial.events, events[..5].to_vec());
    assert!(partial.error.unwrap().to_string().contains("line 6"));
}

/// The writing half of `a_killed_run_leaves_every_written_line_intact`, run in
/// a child copy of this test binary so that it can be killed for real.
#[test]
#[ignore = "runs only as the child of a_killed_run_leaves_every_written_line_intact"]
fn trace_writer_child_process() {
    let Some(path) = std::env::var_os("AGENTCI_TRACE_CHILD") else {
        return;
    };
    let mut writer = TraceWriter::create(Path::new(&path)).unwrap();
    for event in stamped(every_kind()).iter().take(7) {
        writer.on_event(event).unwrap();
    }
    let mut stdout = std::io::stdout();
    writeln!(stdout, "AGENTCI-CHILD-WROTE-7").unwrap();
    stdout.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[test]
fn a_killed_run_leaves_every_written_line_intact() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "suite::sinks::trace_writer_child_process",
            "--exact",
            "--ignored",
        ])
        .arg("--nocapture")
        .env("AGENTCI_TRACE_CHILD", &path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let wrote = stdout
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("AGENTCI-CHILD-WROTE-7"));
    assert!(wrote, "the child never reported its writes");
    child.kill().unwrap(); // SIGKILL: no destructors, no flush
    child.wait().unwrap();

    let events = read_trace(&path).unwrap();
    assert_eq!(events, stamped(every_kind())[..7].to_vec());
}

#[test]
fn trace_writer_names_the_path_it_cannot_create() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let error = TraceWriter::create(&blocker.join("trace.jsonl"))
        .err()
        .unwrap();
    assert!(error.to_string().contains("file/trace.jsonl"), "{error}");
}

// ---------------------------------------------------------------- junit

/// Feed `kinds` to a JunitWriter (with `finish`), validate the file against
/// the Jenkins JUnit XSD and return it parsed back.
fn junit(kinds: Vec<EventKind>) -> (String, Report) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/junit.xml");
    let mut writer = JunitWriter::new(path.clone());
    for event in stamped(kinds) {
        writer.on_event(&event).unwrap();
    }
    writer.finish().unwrap();
    assert_readable(&path);
    let xml = std::fs::read_to_string(&path).unwrap();
    let report = Report::deserialize_from_str(&xml).unwrap();
    (xml, report)
}

/// The report as lines of element names and attributes, for exact comparison.
fn outline(report: &Report) -> Vec<String> {
    let mut lines = vec![format!(
        "testsuites tests={} failures={} errors={} skipped={}",
        report.tests, report.failures, report.errors, report.skipped
    )];
    for suite in &report.test_suites {
        lines.push(format!(
            "testsuite name={:?} tests={} failures={} errors={} skipped={} time={:?} timestamp={}",
            suite.name.as_str(),
            suite.tests,
            suite.failures,
            suite.errors,
            suite.skipped,
            suite.time.unwrap(),
            suite.timestamp.unwrap().to_rfc3339(),
        ));
        for p in &suite.properties {
            lines.push(format!(
                "  property {}={}",
                p.name.as_str(),
                p.value.as_str()
            ));
        }
        for case in &suite.test_cases {
            let extra: Vec<String> = case
                .extra
                .iter()
                .map(|(k, v)| format!("{}={}", k.as_str(), v.as_str()))
                .collect();
            let status = match &case.status {
                TestCaseStatus::Success { .. } => "success".to_string(),
                TestCaseStatus::NonSuccess {
                    kind,
                    message,
                    ty,
                    description,
                    ..
                } => format!(
                    "{} type={:?} message={:?} body={:?}",
                    match kind {
                        NonSuccessKind::Failure => "failure",
                        NonSuccessKind::Error => "error",
                    },
                    ty.as_deref(),
                    message.as_deref(),
                    description.as_deref()
                ),
                TestCaseStatus::Skipped { message, .. } => {
                    format!("skipped message={:?}", message.as_deref())
                }
            };
            lines.push(format!(
                "  testcase name={:?} classname={} time={:?} {}: {status} out={:?}",
                case.name.as_str(),
                case.classname.as_deref().unwrap_or("-"),
                case.time.unwrap(),
                extra.join(" "),
                case.system_out.as_deref(),
            ));
        }
    }
    lines
}

fn agent_work() -> Vec<EventKind> {
    vec![
        run_started(),
        EventKind::PlanCreated {
            steps: plan(&["Run clippy"]),
        },
        EventKind::StepStarted {
            index: 0,
            title: "Run clippy".into(),
        },
        tool_call("c1", "exec", json!({"command": "cargo clippy"})),
        tool_result("c1", "exec", None, 1200),
    ]
}

const PROPS_COMMON: [&str; 5] = [
    "  property model=openai:gpt-4.1-mini",
    "  property turns=12",
    "  property tool_calls=9",
    "  property input_tokens=3000",
    "  property output_tokens=400",
];

fn expected(head: &[&str], cost: &str, status: &str, cases: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    lines.extend(PROPS_COMMON.iter().map(|s| s.to_string()));
    lines.push(format!("  property cost_usd={cost}"));
    lines.push("  property trace=.agentci/runs/r1/trace.jsonl".into());
    lines.push(format!("  property status={status}"));
    lines.extend(cases.iter().map(|s| s.to_string()));
    lines
}

#[test]
fn junit_for_a_passing_run() {
    let mut kinds = agent_work();
    kinds.push(check(
        "clippy clean",
        CheckOutcome::Passed,
        Some(0),
        "no warnings",
    ));
    kinds.push(check("tests pass", CheckOutcome::Passed, Some(0), ""));
    kinds.push(run_completed(
        RunStatus::Passed,
        "all 2 checks passed",
        (2, 0),
    ));
    let (_, report) = junit(kinds);
    assert_eq!(
        outline(&report),
        expected(
            &[
                "testsuites tests=3 failures=0 errors=0 skipped=0",
                "testsuite name=\"fix-clippy\" tests=3 failures=0 errors=0 skipped=0 time=7.1s timestamp=2025-03-01T10:00:00+00:00",
            ],
            "0.0123",
            "passed",
            &[
                "  testcase name=\"agent\" classname=rust-clippy-fixer time=4.1s file=workflows/fix-clippy.yaml: success out=Some(\"Fixed the clippy warnings in src/lib.rs.\")",
                "  testcase name=\"clippy clean\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: success out=Some(\"no warnings\")",
                "  testcase name=\"tests pass\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: success out=None",
            ],
        )
    );
}

#[test]
fn junit_for_a_failed_check() {
    let mut kinds = agent_work();
    kinds.push(EventKind::StepCompleted {
        index: 0,
        title: "Run clippy".into(),
        summary: "clippy is clean".into(),
        status: StepStatus::Done,
    });
    kinds.push(check("clippy clean", CheckOutcome::Passed, Some(0), ""));
    kinds.push(check(
        "tests pass",
        CheckOutcome::Failed,
        Some(101),
        "test parse ... FAILED\n<assert> & done",
    ));
    kinds.push(run_completed(
        RunStatus::Failed,
        "1 of 2 checks failed",
        (1, 1),
    ));
    let (xml, report) = junit(kinds);
    assert_eq!(
        outline(&report),
        expected(
            &[
                "testsuites tests=3 failures=1 errors=0 skipped=0",
                "testsuite name=\"fix-clippy\" tests=3 failures=1 errors=0 skipped=0 time=7.1s timestamp=2025-03-01T10:00:00+00:00",
            ],
            "unknown",
            "failed",
            &[
                // The agent finished; the failure belongs to the check, counted once.
                "  testcase name=\"agent\" classname=rust-clippy-fixer time=4.1s file=workflows/fix-clippy.yaml: success out=Some(\"Fixed the clippy warnings in src/lib.rs.\")",
                "  testcase name=\"clippy clean\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: success out=None",
                "  testcase name=\"tests pass\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: failure type=Some(\"failed\") message=Some(\"check failed: exit code 101\") body=Some(\"test parse ... FAILED\\n<assert> & done\") out=None",
            ],
        )
    );
    // Markup in check output is escaped, not interpreted.
    assert!(xml.contains("&lt;assert&gt; &amp; done"), "{xml}");
}

#[test]
fn junit_for_a_run_over_budget() {
    let mut kinds = agent_work();
    kinds.push(EventKind::BudgetExceeded {
        limit: BudgetLimit::MaxTurns,
        used: 41.0,
        max: 40.0,
    });
    kinds.push(check("clippy clean", CheckOutcome::Skipped, None, ""));
    kinds.push(check("tests pass", CheckOutcome::Skipped, None, ""));
    kinds.push(run_completed(
        RunStatus::BudgetExceeded,
        "max_turns exceeded: 41 of 40",
        (0, 0),
    ));
    let (_, report) = junit(kinds);
    assert_eq!(
        outline(&report),
        expected(
            &[
                "testsuites tests=3 failures=0 errors=1 skipped=2",
                "testsuite name=\"fix-clippy\" tests=3 failures=0 errors=1 skipped=2 time=7.1s timestamp=2025-03-01T10:00:00+00:00",
            ],
            "unknown",
            "budget_exceeded",
            &[
                "  testcase name=\"agent\" classname=rust-clippy-fixer time=4.1s file=workflows/fix-clippy.yaml: error type=Some(\"budget_exceeded\") message=Some(\"max_turns exceeded: 41 of 40\") body=Some(\"max_turns exceeded: 41 of 40\\nplan: 0 of 1 steps completed\\nchecks: 0 passed, 0 failed\") out=None",
                "  testcase name=\"clippy clean\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: skipped message=Some(\"not run: the agent did not finish\") out=None",
                "  testcase name=\"tests pass\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: skipped message=Some(\"not run: the agent did not finish\") out=None",
            ],
        )
    );
}

#[test]
fn junit_for_an_unavailable_provider() {
    let kinds = vec![
        run_started(),
        check("tests pass", CheckOutcome::Skipped, None, ""),
        run_completed(
            RunStatus::ProviderUnavailable,
            "openai: connection refused after 3 retries",
            (0, 0),
        ),
    ];
    let (_, report) = junit(kinds);
    let lines = outline(&report);
    assert_eq!(lines[0], "testsuites tests=2 failures=0 errors=1 skipped=1");
    assert!(lines.contains(&"  property status=provider_unavailable".to_string()));
    assert_eq!(
        lines.last().unwrap(),
        "  testcase name=\"tests pass\" classname=rust-clippy-fixer time=1.5s file=workflows/fix-clippy.yaml: skipped message=Some(\"not run: the agent did not finish\") out=None"
    );
    assert_eq!(
        lines[lines.len() - 2],
        "  testcase name=\"agent\" classname=rust-clippy-fixer time=5.6s file=workflows/fix-clippy.yaml: error type=Some(\"provider_unavailable\") message=Some(\"openai: connection refused after 3 retries\") body=Some(\"openai: connection refused after 3 retries\\nplan: none submitted\\nchecks: 0 passed, 0 failed\") out=None"
    );
}

#[test]
fn junit_without_run_completed_is_still_a_valid_report() {
    let mut kinds = agent_work();
    kinds.push(EventKind::ModelResponse(ModelResponse {
        reasoning: None,
        call_id: "m1".into(),
        latency_ms: 10,
        usage: Usage {
            reasoning_tokens: 0,
            input_tokens: 100,
            output_tokens: 7,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        },
        finish_reason: None,
        text: None,
        tool_calls: vec![],
        cost_usd: None,
    }));
    let (_, report) = junit(kinds);
    let lines = outline(&report);
    assert_eq!(lines[0], "testsuites tests=1 failures=0 errors=1 skipped=0");
    // The span of the events seen: 10:00:00 to 10:00:05.
    assert!(lines[1].contains("time=5s"), "{}", lines[1]);
    for prop in [
        "turns=0",
        "tool_calls=1",
        "input_tokens=100",
        "output_tokens=7",
        "cost_usd=unknown",
        "status=incomplete",
    ] {
        assert!(
            lines.contains(&format!("  property {prop}")),
            "{prop}: {lines:#?}"
        );
    }
    assert!(
        lines
            .last()
            .unwrap()
            .contains("error type=Some(\"incomplete\") message=Some(\"run did not complete\")"),
        "{lines:#?}"
    );
}

#[test]
fn junit_with_no_events_at_all_is_valid() {
    let (_, report) = junit(vec![]);
    assert_eq!(report.test_suites[0].name.as_str(), "agentci");
    assert_eq!(report.errors, 1);
}

#[test]
fn junit_testcase_names_are_unique() {
    let kinds = vec![
        run_started(),
        check("agent", CheckOutcome::Passed, Some(0), ""),
        check("tests", CheckOutcome::Passed, Some(0), ""),
        check("tests", CheckOutcome::Failed, Some(1), ""),
        check("tests", CheckOutcome::Passed, Some(0), ""),
        run_completed(RunStatus::Failed, "1 of 4 checks failed", (3, 1)),
    ];
    let (_, report) = junit(kinds);
    let names: Vec<&str> = report.test_suites[0]
        .test_cases
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["agent", "agent (2)", "tests", "tests (2)", "tests (3)"]
    );
}

#[test]
fn junit_agent_fails_when_the_run_failed_without_a_failed_check() {
    let kinds = vec![
        run_started(),
        run_completed(RunStatus::Failed, "the agent gave up: cannot build", (0, 0)),
    ];
    let (_, report) = junit(kinds);
    let lines = outline(&report);
    assert!(
        lines.last().unwrap().contains(
            "failure type=Some(\"failed\") message=Some(\"the agent gave up: cannot build\")"
        ),
        "{lines:#?}"
    );
}

#[test]
fn junit_writer_reports_an_unwritable_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let mut writer = JunitWriter::new(blocker.join("junit.xml"));
    let error = writer.finish().unwrap_err();
    assert!(
        error.to_string().starts_with("write junit xml to "),
        "{error}"
    );
    assert!(error.to_string().contains("file/junit.xml"), "{error}");
}

// ---------------------------------------------------------------- progress

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn plain_log_shows_one_line_per_meaningful_event() {
    let out = Captured::default();
    let bus = EventBus::new("r1", vec![Box::new(PlainLog::new(Box::new(out.clone())))]);
    let mut kinds = vec![
        run_started(),
        EventKind::PlanCreated {
            steps: plan(&["Run the tests", "Fix the failure", "Rerun"]),
        },
        EventKind::StepStarted {
            index: 0,
            title: "Run the tests".into(),
        },
        tool_call("c1", "exec", json!({"command": "cargo test"})),
        decision("c1", "exec", Decision::Allow, "exec(cargo test *)"),
        tool_result("c1", "exec", None, 1200),
        tool_call("c2", "exec", json!({"command": "git push"})),
        decision("c2", "exec", Decision::Deny, "exec(git push *)"),
        tool_result("c2", "exec", Some("PERMISSION_DENIED"), 0),
        tool_call("c3", "read", json!({"path": "src/missing.rs"})),
        EventKind::ToolResult(ToolResultEvent {
            call_id: "c3".into(),
            tool: "read".into(),
            ok: false,
            error_code: Some("NOT_FOUND".into()),
            summary: "src/missing.rs does not exist".into(),
            data: Value::Null,
            duration_ms: 3,
        }),
        EventKind::StepCompleted {
            index: 0,
            title: "Run the tests".into(),
            summary: "one test fails\nmore detail".into(),
            status: StepStatus::Done,
        },
        check("tests pass", CheckOutcome::Passed, Some(0), ""),
        check(
            "clippy clean",
            CheckOutcome::Failed,
            Some(1),
            "warning: x\nerror: y",
        ),
    ];
    kinds.push(run_completed(
        RunStatus::Passed,
        "all checks passed",
        (1, 1),
    ));
    for kind in kinds {
        bus.emit(kind);
    }
    assert!(bus.finish().is_empty());
    assert_eq!(
        out.text(),
        "\
[agentci] run fix-clippy: skill rust-clippy-fixer, model openai:gpt-4.1-mini, 2 tools
[agentci] plan: 3 steps
[agentci]   1. Run the tests
[agentci]   2. Fix the failure
[agentci]   3. Rerun
[agentci] step 1/3: Run the tests
[agentci]   exec cargo test -> ok (1.2s)
[agentci]   denied exec git push (rule: exec(git push *))
[agentci]   read src/missing.rs -> NOT_FOUND: src/missing.rs does not exist (0.0s)
[agentci] step 1/3 done: one test fails…
[agentci] check \"tests pass\": passed (1.5s)
[agentci] check \"clippy clean\": failed: exit code 1 (1.5s)
[agentci]   | warning: x
[agentci]   | error: y
[agentci] run passed in 7.1s: 12 turns, 9 tool calls, 3,400 tokens, $0.0123
"
    );
}

fn mcp_startup() -> EventKind {
    let server = |name: &str, duration_ms, outcome| McpServerStartup {
        server: name.into(),
        duration_ms,
        outcome,
    };
    EventKind::McpStartup(McpStartup {
        duration_ms: 4_012,
        servers: vec![
            server("github", 830, McpStartOutcome::Started),
            server("gone", 120, McpStartOutcome::Failed),
            server("slow", 4_012, McpStartOutcome::TimedOut),
        ],
    })
}

/// A compaction that replaced `replaced` messages by `method` and shortened
/// `shortened` tool outputs.
fn compacted(method: &str, replaced: usize, shortened: usize) -> EventKind {
    EventKind::ContextCompacted(ContextCompacted {
        call_id: "m4".into(),
        method: method.into(),
        summary_call_id: (method == "summary").then(|| "m3".into()),
        fallback_reason: None,
        messages_before: 40,
        messages_after: 40 - replaced,
        replaced_messages: replaced,
        replaced_tool_calls: Vec::new(),
        shortened_outputs: shortened,
        tokens_before: 11_309,
        tokens_after: 2_933,
        window: 16_000,
        high_water: 12_800,
    })
}

/// Regression: a compaction that only shortened tool outputs read "0 earlier
/// messages replaced by a digest"; the lines now say what was done.
#[test]
fn plain_log_says_what_a_compaction_did_and_how_servers_started() {
    let out = Captured::default();
    let mut log = PlainLog::new(Box::new(out.clone()));
    for event in stamped(vec![
        mcp_startup(),
        compacted("digest", 0, 3),
        compacted("digest", 1, 0),
        compacted("summary", 12, 2),
        compacted("digest", 29, 0),
    ]) {
        log.on_event(&event).unwrap();
    }
    log.finish().unwrap();
    let text = out.text();
    assert!(!text.contains("0 earlier"), "{text}");
    insta::assert_snapshot!("plain_log_compaction_and_mcp_startup", text);
}

/// `trace show` says the same as the log: what a compaction did, and the
/// servers' start-up as a line and as its own phase.
#[test]
fn trace_show_says_what_a_compaction_did_and_how_servers_started() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trace(
        dir.path(),
        vec![
            run_started(),
            mcp_startup(),
            compacted("digest", 0, 3),
            compacted("summary", 12, 2),
            run_completed(RunStatus::Passed, "all checks passed", (1, 0)),
        ],
    );
    let out = super::support::harness::agentci_in(
        dir.path(),
        &["trace", "show", path.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("context") || l.contains("MCP"))
        .collect();
    assert!(!text.contains("0 earlier"), "{text}");
    insta::assert_snapshot!("trace_show_compaction_and_mcp_startup", lines.join("\n"));
}

#[test]
fn plain_log_reports_why_a_run_stopped() {
    let out = Captured::default();
    let mut log = PlainLog::new(Box::new(out.clone()));
    for event in stamped(vec![
        EventKind::PlanUpdated {
            steps: plan(&["Look", "Retry"]),
            from_index: 1,
        },
        EventKind::StepStarted {
            index: 4,
            title: "beyond the plan".into(),
        },
        EventKind::BudgetExceeded {
            limit: BudgetLimit::MaxCostUsd,
            used: 2.04,
            max: 2.0,
        },
        run_completed(RunStatus::BudgetExceeded, "max_cost_usd exceeded", (0, 0)),
    ]) {
        log.on_event(&event).unwrap();
    }
    assert_eq!(
        out.text(),
        "\
[agentci] plan updated from step 2: 2 steps
[agentci]   1. Look
[agentci]   2. Retry
[agentci] step 5: beyond the plan
[agentci] budget exceeded: max_cost_usd $2.0400 of $2.0000
[agentci] run stopped (budget exceeded) in 7.1s: 12 turns, 9 tool calls, 3,400 tokens
[agentci]   reason: max_cost_usd exceeded
"
    );
}

#[test]
fn plain_log_reports_a_closed_output_once() {
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let bus = EventBus::new("r1", vec![Box::new(PlainLog::new(Box::new(Closed)))]);
    for kind in every_kind() {
        bus.emit(kind);
    }
    let errors = bus.finish();
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn progress_bars_survive_odd_streams() {
    let odd = vec![
        EventKind::StepStarted {
            index: 3,
            title: "before any plan".into(),
        },
        EventKind::StepCompleted {
            index: 3,
            title: "before any plan".into(),
            summary: String::new(),
            status: StepStatus::Done,
        },
        tool_result("never-called", "exec", Some("TIMEOUT"), 5),
        decision("never-called", "exec", Decision::Deny, "default"),
        EventKind::PlanCreated { steps: vec![] },
        EventKind::StepCompleted {
            index: 9,
            title: "past the end".into(),
            summary: String::new(),
            status: StepStatus::Done,
        },
        EventKind::PlanUpdated {
            steps: plan(&["a"]),
            from_index: 7,
        },
        EventKind::StepCompleted {
            index: 99,
            title: "past the end".into(),
            summary: String::new(),
            status: StepStatus::Done,
        },
        run_completed(RunStatus::Interrupted, "interrupted", (0, 0)),
        run_completed(RunStatus::Passed, "twice", (0, 0)),
    ];
    let mut all = every_kind();
    all.extend(odd.clone());
    for kinds in [all, odd, vec![]] {
        let palette = agentci::sink::Palette::new(true);
        let mut bars =
            ProgressBars::with_draw_target(indicatif::ProgressDrawTarget::hidden(), palette);
        let mut log = PlainLog::new(Box::new(Captured::default())).with_palette(palette);
        for event in stamped(kinds) {
            bars.on_event(&event).unwrap();
            log.on_event(&event).unwrap();
        }
        bars.finish().unwrap();
        log.finish().unwrap();
    }
}

#[test]
fn junit_keeps_colored_check_output_valid_xml() {
    // cargo and test runners color their output on CI; control characters
    // are not allowed in XML 1.0 and would make the whole report unreadable.
    let kinds = vec![
        run_started(),
        check(
            "tests \"pass\" & <ok>",
            CheckOutcome::Failed,
            Some(1),
            "\x1b[31merror\x1b[0m: bad\x00 byte\x07",
        ),
        run_completed(RunStatus::Failed, "1 of 1 checks failed", (0, 1)),
    ];
    let (_, report) = junit(kinds);
    let case = &report.test_suites[0].test_cases[1];
    assert_eq!(case.name.as_str(), "tests \"pass\" & <ok>");
    match &case.status {
        TestCaseStatus::NonSuccess { description, .. } => {
            assert_eq!(description.as_deref(), Some("error: bad byte"));
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}
