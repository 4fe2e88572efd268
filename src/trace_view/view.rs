//! [`RunView`]: a run's events folded into what a person asks about it —
//! how it ended, the plan and each step's outcome, the timeline of model
//! turns and tool calls with their decisions, checks, tokens, cost and time
//! per phase. `--json` prints it as it is; [`super::render_text`] prints it
//! for people. It only reads events; it decides nothing about the run.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::load::{LoadedTrace, TraceLine};
use crate::event::{
    BudgetLimit, CheckCompleted, ContextTrimmed, Decision, Event, EventKind, ModelRetry, Phase,
    PlanStep, RunStarted, SentDelta, StepStatus, Totals,
};

/// What to include beyond the outline.
#[derive(Clone, Copy, Debug, Default)]
pub struct ViewOptions {
    /// What the model was sent on each turn (the `sent` deltas).
    pub full: bool,
}

#[derive(Debug, Serialize)]
pub struct RunView {
    pub started: Option<RunStarted>,
    /// `passed`, `failed`, … as in `run.completed`; `interrupted` for a trace cut mid-run.
    pub status: String,
    pub reason: String,
    /// The exit code the run had; `None` when the trace was cut.
    pub exit_code: Option<u8>,
    /// The trace ends without `run.completed`.
    pub cut_short: bool,
    pub plan: Vec<StepView>,
    pub timeline: Vec<Entry>,
    pub checks: Vec<CheckCompleted>,
    /// From `run.completed`, or added up from the turns when the trace was cut.
    pub totals: Totals,
    /// Wall time spent in each phase, in milliseconds, from the events' times.
    pub phases_ms: BTreeMap<String, u64>,
    pub summary: Option<String>,
    /// Problems reading the trace and notes about it.
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct StepView {
    pub title: String,
    pub expected_outcome: String,
    /// `done`, `failed`, `blocked`, `not finished` or `not reached`.
    pub outcome: String,
    pub summary: Option<String>,
}

/// One thing that happened, in trace order.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    Plan {
        steps: usize,
        /// Set when an update replaced the steps from this index on.
        from_index: Option<usize>,
    },
    Step {
        index: usize,
        title: String,
    },
    StepDone {
        index: usize,
        status: StepStatus,
        summary: String,
    },
    Turn(Box<TurnView>),
    ToolCall(Box<CallView>),
    Warning {
        source: String,
        message: String,
    },
    Budget {
        limit: BudgetLimit,
        used: f64,
        max: f64,
    },
    Git {
        line: String,
    },
    /// An event shown as written: rounds, sub-agents, tool refreshes, and
    /// events this version does not know.
    Other {
        event: String,
        fields: Value,
    },
}

#[derive(Debug, Serialize)]
pub struct TurnView {
    pub call_id: String,
    pub turn: u32,
    pub phase: Phase,
    pub step: Option<usize>,
    pub messages: usize,
    /// What the model was sent (with `--full`, when the trace holds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentDelta>,
    pub retries: Vec<ModelRetry>,
    pub trimmed: Option<ContextTrimmed>,
    pub text: Option<String>,
    pub tool_calls: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    pub latency_ms: Option<u64>,
    /// The trace ends before the model answered.
    pub answered: bool,
}

#[derive(Debug, Serialize)]
pub struct CallView {
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub decision: Option<Decision>,
    pub rule: Option<String>,
    /// `None` when the trace ends before the call's result.
    pub ok: Option<bool>,
    pub error_code: Option<String>,
    pub summary: Option<String>,
    pub duration_ms: Option<u64>,
}

impl RunView {
    pub fn new(trace: &LoadedTrace, options: ViewOptions) -> RunView {
        let mut fold = Fold {
            view: RunView {
                started: None,
                status: "interrupted".into(),
                reason: "the trace ends before run.completed: the run was cut short".into(),
                exit_code: None,
                cut_short: true,
                plan: Vec::new(),
                timeline: Vec::new(),
                checks: Vec::new(),
                totals: Totals::default(),
                phases_ms: BTreeMap::new(),
                summary: None,
                notes: trace.notes.clone(),
            },
            options,
            turns: HashMap::new(),
            calls: HashMap::new(),
            steps: BTreeMap::new(),
            phase: "setup",
            last_ts: None,
        };
        for line in &trace.lines {
            fold.time(line);
            match line {
                TraceLine::Event(event) => fold.event(event),
                TraceLine::Other { kind, value, .. } => {
                    let mut fields = value.clone();
                    if let Some(map) = fields.as_object_mut() {
                        for key in ["seq", "ts", "run_id", "type"] {
                            map.remove(key);
                        }
                    }
                    fold.view.timeline.push(Entry::Other {
                        event: kind.clone(),
                        fields,
                    });
                }
            }
        }
        if let Some(problem) = &trace.problem {
            let after = match problem.lines_after {
                0 => String::new(),
                n => format!("; the {n} lines after it are not shown"),
            };
            fold.view
                .notes
                .push(format!("line {}: {}{after}", problem.line, problem.message));
        }
        fold.finish()
    }
}

struct Fold {
    view: RunView,
    options: ViewOptions,
    /// Index in the timeline of each model call's turn, by call id.
    turns: HashMap<String, usize>,
    /// Index in the timeline of each tool call, by call id.
    calls: HashMap<String, usize>,
    /// Steps started, with how they ended once they did.
    steps: BTreeMap<usize, Option<(StepStatus, String)>>,
    /// The phase the time up to the next event is counted to.
    phase: &'static str,
    last_ts: Option<chrono::DateTime<chrono::FixedOffset>>,
}

impl Fold {
    /// Count the time since the previous line to the phase it was spent in.
    fn time(&mut self, line: &TraceLine) {
        let phase = match line {
            TraceLine::Event(event) => match &event.kind {
                EventKind::ModelRequest(request) => match request.phase {
                    Phase::Plan => "plan",
                    Phase::Execute => "execute",
                    Phase::Summary => "summary",
                },
                // A check's time passes before its event: count it there.
                EventKind::CheckCompleted(_) => "checks",
                EventKind::GitPatch(_)
                | EventKind::GitCommit { .. }
                | EventKind::GitPush { .. } => "git",
                _ => self.phase,
            },
            TraceLine::Other { .. } => self.phase,
        };
        let Some(ts) = line
            .ts()
            .and_then(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok())
        else {
            return;
        };
        if let Some(last) = self.last_ts {
            let ms = (ts - last).num_milliseconds().max(0) as u64;
            let counted = match line {
                TraceLine::Event(event)
                    if matches!(
                        event.kind,
                        EventKind::CheckCompleted(_)
                            | EventKind::GitPatch(_)
                            | EventKind::GitCommit { .. }
                            | EventKind::GitPush { .. }
                    ) =>
                {
                    phase
                }
                _ => self.phase,
            };
            *self.view.phases_ms.entry(counted.to_string()).or_default() += ms;
        }
        self.last_ts = Some(ts);
        self.phase = phase;
    }

    fn event(&mut self, event: &Event) {
        let timeline = &mut self.view.timeline;
        // A sub-agent's own turns and calls are summed up by its
        // `subagent.completed`; the run's view is the parent's conversation.
        let in_subagent = event.agent.is_some();
        if in_subagent
            && !matches!(
                event.kind,
                EventKind::SubagentStarted(_) | EventKind::SubagentCompleted(_)
            )
        {
            return;
        }
        match &event.kind {
            EventKind::RunStarted(run) => self.view.started = Some(run.clone()),
            EventKind::RunResumed(resumed) => timeline.push(Entry::Warning {
                source: "resume".into(),
                message: format!(
                    "the run was resumed after turn {} ({} events of the stopped run dropped)",
                    resumed.from_turn, resumed.events_dropped
                ),
            }),
            EventKind::SkillLoaded(skill) => {
                for warning in &skill.warnings {
                    timeline.push(Entry::Warning {
                        source: format!("skill {}", skill.name),
                        message: warning.clone(),
                    });
                }
            }
            EventKind::Warning { source, message } => timeline.push(Entry::Warning {
                source: source.clone(),
                message: message.clone(),
            }),
            EventKind::SandboxDegraded(report) => timeline.push(Entry::Warning {
                source: "sandbox".into(),
                message: format!("not enforced here: {}", report.missing.join(", ")),
            }),
            EventKind::PlanCreated { steps } => {
                self.set_plan(steps);
                self.view.timeline.push(Entry::Plan {
                    steps: steps.len(),
                    from_index: None,
                });
            }
            EventKind::PlanUpdated { steps, from_index } => {
                self.set_plan(steps);
                self.view.timeline.push(Entry::Plan {
                    steps: steps.len(),
                    from_index: Some(*from_index),
                });
            }
            EventKind::StepStarted { index, title } => {
                self.steps.entry(*index).or_insert(None);
                timeline.push(Entry::Step {
                    index: *index,
                    title: title.clone(),
                });
            }
            EventKind::StepCompleted {
                index,
                summary,
                status,
                ..
            } => {
                self.steps.insert(*index, Some((*status, summary.clone())));
                timeline.push(Entry::StepDone {
                    index: *index,
                    status: *status,
                    summary: summary.clone(),
                });
            }
            EventKind::ModelRequest(request) => {
                self.turns.insert(request.call_id.clone(), timeline.len());
                timeline.push(Entry::Turn(Box::new(TurnView {
                    call_id: request.call_id.clone(),
                    turn: request.turn,
                    phase: request.phase,
                    step: request.step,
                    messages: request.messages,
                    sent: request.sent.clone().filter(|_| self.options.full),
                    retries: Vec::new(),
                    trimmed: None,
                    text: None,
                    tool_calls: Vec::new(),
                    input_tokens: 0,
                    output_tokens: 0,
                    cost_usd: None,
                    latency_ms: None,
                    answered: false,
                })));
            }
            EventKind::ModelRetry(retry) => {
                if let Some(turn) = self.turn(&retry.call_id) {
                    turn.retries.push(retry.clone());
                }
            }
            EventKind::ContextTrimmed(trim) => {
                let full = self.options.full;
                if let Some(turn) = self.turn(&trim.call_id) {
                    let mut trim = trim.clone();
                    if !full {
                        trim.sent = None;
                    }
                    turn.trimmed = Some(trim);
                }
            }
            EventKind::ModelResponse(response) => {
                if let Some(turn) = self.turn(&response.call_id) {
                    turn.answered = true;
                    turn.text = response.text.clone();
                    turn.tool_calls = response.tool_calls.iter().map(|c| c.name.clone()).collect();
                    turn.input_tokens = response.usage.input_tokens;
                    turn.output_tokens = response.usage.output_tokens;
                    turn.cost_usd = response.cost_usd;
                    turn.latency_ms = Some(response.latency_ms);
                }
            }
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => {
                self.calls.insert(call_id.clone(), timeline.len());
                timeline.push(Entry::ToolCall(Box::new(CallView {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    decision: None,
                    rule: None,
                    ok: None,
                    error_code: None,
                    summary: None,
                    duration_ms: None,
                })));
            }
            EventKind::PermissionDecision {
                call_id,
                decision,
                rule,
                ..
            } => {
                if let Some(call) = self.call(call_id) {
                    call.decision = Some(*decision);
                    call.rule = Some(rule.clone());
                }
            }
            EventKind::ToolResult(result) => {
                if let Some(call) = self.call(&result.call_id) {
                    call.ok = Some(result.ok);
                    call.error_code = result.error_code.clone();
                    call.summary = Some(result.summary.clone());
                    call.duration_ms = Some(result.duration_ms);
                }
            }
            EventKind::ToolBatchStarted(_) | EventKind::ToolBatchCompleted(_) => {}
            EventKind::BudgetExceeded { limit, used, max } => timeline.push(Entry::Budget {
                limit: *limit,
                used: *used,
                max: *max,
            }),
            EventKind::CheckCompleted(check) => self.view.checks.push(check.clone()),
            EventKind::GitPatch(patch) => timeline.push(Entry::Git {
                line: format!(
                    "patch {}: {} files changed, +{} -{}",
                    patch.path, patch.files_changed, patch.insertions, patch.deletions
                ),
            }),
            EventKind::GitCommit { branch, sha } => timeline.push(Entry::Git {
                line: format!(
                    "committed {} on branch {branch}",
                    sha.get(..12).unwrap_or(sha)
                ),
            }),
            EventKind::GitPush { remote, branch } => timeline.push(Entry::Git {
                line: format!("pushed branch {branch} to {remote}"),
            }),
            EventKind::McpServerDown {
                server,
                reason,
                stderr,
                required,
            } => timeline.push(Entry::Warning {
                source: format!("mcp server {server}"),
                message: format!(
                    "down{}: {reason}{}",
                    if *required { " (required)" } else { "" },
                    stderr
                        .last()
                        .map(|line| format!(" (stderr: {line})"))
                        .unwrap_or_default()
                ),
            }),
            // A request agentci did not answer is what a user looks for
            // when a server's tool misbehaves; answered ones are detail.
            EventKind::McpServerRequest {
                server,
                method,
                outcome,
                detail,
                ..
            } if outcome != "answered" => timeline.push(Entry::Warning {
                source: format!("mcp server {server}"),
                message: format!("{outcome} its request `{method}`: {detail}"),
            }),
            EventKind::ContextCompacted(c) => timeline.push(Entry::Warning {
                source: "context".to_string(),
                message: format!(
                    "{} earlier messages replaced by a {} (~{} to ~{} tokens of {})",
                    c.replaced_messages, c.method, c.tokens_before, c.tokens_after, c.window
                ),
            }),
            EventKind::ReplayDrift(drift) => timeline.push(Entry::Warning {
                source: "replay".to_string(),
                message: drift.summary(),
            }),
            // Rounds are shown as written; the checks of every round stay in `checks`.
            EventKind::SubagentStarted(_)
            | EventKind::SubagentCompleted(_)
            | EventKind::RoundStarted { .. }
            | EventKind::RoundCompleted { .. }
            | EventKind::McpToolsRefreshed { .. }
            | EventKind::McpServerRequest { .. } => {
                let mut fields = serde_json::to_value(&event.kind).unwrap_or_default();
                let name = fields
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(map) = fields.as_object_mut() {
                    map.remove("type");
                    if let Some(agent) = &event.agent {
                        map.insert("agent".into(), Value::String(agent.id.clone()));
                    }
                }
                timeline.push(Entry::Other {
                    event: name,
                    fields,
                });
            }
            EventKind::RunCompleted(done) => {
                self.view.status = done.status.as_str().to_string();
                self.view.reason = done.reason.clone();
                self.view.exit_code = Some(done.exit_code());
                self.view.cut_short = false;
                self.view.totals = done.totals.clone();
                self.view.summary = done.summary.clone();
            }
        }
    }

    fn set_plan(&mut self, steps: &[PlanStep]) {
        self.view.plan = steps
            .iter()
            .map(|s| StepView {
                title: s.title.clone(),
                expected_outcome: s.expected_outcome.clone(),
                outcome: String::new(),
                summary: None,
            })
            .collect();
    }

    fn turn(&mut self, call_id: &str) -> Option<&mut TurnView> {
        match self.view.timeline.get_mut(*self.turns.get(call_id)?)? {
            Entry::Turn(turn) => Some(turn),
            _ => None,
        }
    }

    fn call(&mut self, call_id: &str) -> Option<&mut CallView> {
        match self.view.timeline.get_mut(*self.calls.get(call_id)?)? {
            Entry::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    fn finish(mut self) -> RunView {
        for (index, step) in self.view.plan.iter_mut().enumerate() {
            match self.steps.get(&index) {
                // Started and not completed: the run stopped inside it.
                Some(None) => step.outcome = "not finished".into(),
                Some(Some((status, summary))) => {
                    step.outcome = status.as_str().to_string();
                    step.summary = Some(summary.clone());
                }
                None => step.outcome = "not reached".into(),
            }
        }
        if self.view.cut_short {
            // No run.completed to read totals from: add up what the trace holds.
            let totals = &mut self.view.totals;
            let mut cost = Some(0.0);
            for entry in &self.view.timeline {
                match entry {
                    Entry::Turn(turn) => {
                        totals.turns += 1;
                        totals.input_tokens += turn.input_tokens;
                        totals.output_tokens += turn.output_tokens;
                        cost = match (cost, turn.cost_usd) {
                            (Some(sum), Some(c)) => Some(sum + c),
                            _ if !turn.answered => cost,
                            _ => None,
                        };
                    }
                    Entry::ToolCall(_) => totals.tool_calls += 1,
                    _ => {}
                }
            }
            totals.cost_usd = cost;
            totals.duration_ms = self.view.phases_ms.values().sum();
        }
        self.view
    }
}
