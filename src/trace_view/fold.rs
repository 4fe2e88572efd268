//! How a trace's lines are folded into a [`RunView`]: one pass over the
//! events that opens a turn or a call where it starts and fills it in as
//! its decision, retries and result arrive, counts the time between events
//! to the phase it was spent in, and keeps what is neither a turn nor a call
//! as timeline lines. What the view looks like is in `super::view`.

use std::collections::{BTreeMap, HashMap};

use super::entries::timeline_entries;
use super::load::{LoadedTrace, TraceLine};
use super::view::{CallView, Entry, MCP_STARTUP_PHASE, RunView, StepView, TurnView, ViewOptions};
use crate::event::{Event, EventKind, Phase, PlanStep, StepStatus, Totals};

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
                result: None,
                resumed: Vec::new(),
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
            EventKind::PlanCreated { .. }
            | EventKind::PlanUpdated { .. }
            | EventKind::StepStarted { .. }
            | EventKind::StepCompleted { .. } => self.plan_event(&event.kind),
            EventKind::ModelRequest(_)
            | EventKind::ModelRetry(_)
            | EventKind::ContextTrimmed(_)
            | EventKind::ModelResponse(_) => self.turn_event(&event.kind),
            EventKind::ToolCall { .. }
            | EventKind::PermissionDecision { .. }
            | EventKind::ToolResult(_) => self.call_event(&event.kind),
            EventKind::ToolBatchStarted(_) | EventKind::ToolBatchCompleted(_) => {}
            EventKind::CheckCompleted(check) => self.view.checks.push(check.clone()),
            EventKind::SkillLoaded(_)
            | EventKind::StepDoneDeclined { .. }
            | EventKind::Warning { .. }
            | EventKind::SandboxDegraded(_)
            | EventKind::NetworkRequest(_)
            | EventKind::BudgetExceeded { .. }
            | EventKind::GitPatch(_)
            | EventKind::GitCommit { .. }
            | EventKind::GitPush { .. }
            | EventKind::McpServerDown { .. }
            | EventKind::McpServerRequest { .. }
            | EventKind::ContextCompacted(_)
            | EventKind::ReplayDrift(_)
            | EventKind::SubagentStarted(_)
            | EventKind::SubagentCompleted(_)
            | EventKind::RoundStarted { .. }
            | EventKind::RoundCompleted { .. }
            | EventKind::McpToolsRefreshed { .. } => {
                self.view.timeline.extend(timeline_entries(event));
            }
            // The servers start before `run.started`, so their time is
            // not between two events: the event carries it.
            EventKind::McpStartup(startup) => {
                *self
                    .view
                    .phases_ms
                    .entry(MCP_STARTUP_PHASE.to_string())
                    .or_default() += startup.duration_ms;
                self.view.timeline.extend(timeline_entries(event));
            }
            EventKind::RunResumed(resumed) => {
                self.view.resumed.push((**resumed).clone());
                self.view.timeline.extend(timeline_entries(event));
            }
            EventKind::RunCompleted(done) => {
                self.view.status = done.status.as_str().to_string();
                self.view.reason = done.reason.clone();
                self.view.exit_code = Some(done.exit_code());
                self.view.cut_short = false;
                self.view.totals = done.totals.clone();
                self.view.summary = done.summary.clone();
                self.view.result = done.result.clone();
            }
        }
    }

    /// The plan as written and each step's start and end.
    fn plan_event(&mut self, kind: &EventKind) {
        match kind {
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
                self.view.timeline.push(Entry::Step {
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
                self.view.timeline.push(Entry::StepDone {
                    index: *index,
                    status: *status,
                    summary: summary.clone(),
                });
            }
            _ => {}
        }
    }

    /// A model turn: its request opens it, retries and trims attach to it,
    /// its response fills in the answer and the usage.
    fn turn_event(&mut self, kind: &EventKind) {
        match kind {
            EventKind::ModelRequest(request) => {
                let timeline = &mut self.view.timeline;
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
                    reasoning: None,
                    text: None,
                    tool_calls: Vec::new(),
                    input_tokens: 0,
                    output_tokens: 0,
                    reasoning_tokens: 0,
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
                    turn.reasoning = response.reasoning.clone();
                    turn.reasoning_tokens = response.usage.reasoning_tokens;
                    turn.tool_calls = response.tool_calls.iter().map(|c| c.name.clone()).collect();
                    turn.input_tokens = response.usage.input_tokens;
                    turn.output_tokens = response.usage.output_tokens;
                    turn.cost_usd = response.cost_usd;
                    turn.latency_ms = Some(response.latency_ms);
                }
            }
            _ => {}
        }
    }

    /// A tool call: the call opens it, the decision and the result fill it in.
    fn call_event(&mut self, kind: &EventKind) {
        match kind {
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => {
                let timeline = &mut self.view.timeline;
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
            _ => {}
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
