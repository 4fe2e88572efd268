//! The sink that turns a run's events into OpenTelemetry spans, after the
//! GenAI semantic conventions: `invoke_agent {job}` for the run, a span per
//! plan step, `chat {model}` per model call, `execute_tool {tool}` per tool
//! call, `check {name}` per check, nested as the run nests them. Times are
//! the events' own; message content is never exported.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::client::{EXPORT_TIMEOUT, ExportClient, FirstFailure};
use super::content;
use super::pipeline::{ExportStartError, tracer_provider};
use super::{OtlpTarget, TraceParent};
use crate::event::CompletionHook;
use crate::event::bus::{EventSink, SinkError};
use crate::event::{Decision, Event, EventKind, RunStatus};

/// What names a run's spans when it did not start in this process.
#[derive(Clone, Debug, Default)]
pub struct RunIdentity {
    pub job_name: String,
    pub provider: String,
    pub model: String,
}

/// The OTLP sink of one run.
pub struct OtlpSink {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    failure: FirstFailure,
    /// The spans' HTTP client, which the run's metrics share.
    http: Option<ExportClient>,
    model: String,
    provider_name: String,
    /// What the run's span nests under: an eval attempt's span, the CI job's.
    parent: Option<Context>,
    /// The job's name, provider and model, for a resumed run (its
    /// `run.started` is in the trace already, not in this process).
    identity: Option<RunIdentity>,
    run: Option<Context>,
    steps: HashMap<usize, Context>,
    open_step: Option<usize>,
    chats: HashMap<String, Context>,
    tools: HashMap<String, Context>,
    /// Message content goes on the spans (`telemetry.content`).
    content: bool,
    /// The git step's span while its events come, and the last one's time.
    git: Option<(Context, SystemTime)>,
}

impl OtlpSink {
    /// A sink exporting to `target`, and the hook that flushes what is
    /// queued before `run.completed` and names a collector that could not
    /// be reached (a `warning`). `None` with a one-line reason when the
    /// exporter cannot be built.
    pub fn start(
        target: &OtlpTarget,
        parent: Option<&TraceParent>,
        identity: Option<RunIdentity>,
    ) -> Result<(OtlpSink, CompletionHook), ExportStartError> {
        let (provider, failure, http) = tracer_provider(target)?;
        let tracer = provider.tracer("agentci");
        let hook_provider = provider.clone();
        let hook_failure = failure.clone();
        let hook: CompletionHook = Box::new(move || {
            let _ = hook_provider.force_flush();
            let failed = hook_failure.lock().ok().and_then(|f| f.clone());
            failed
                .map(|problem| EventKind::Warning {
                    source: "telemetry".to_string(),
                    message: format!(
                        "{problem}: the run's spans were not exported; check \
                         `telemetry.otlp.endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT"
                    ),
                })
                .into_iter()
                .collect()
        });
        let sink = OtlpSink {
            provider,
            tracer,
            failure,
            http,
            model: String::new(),
            provider_name: String::new(),
            parent: parent.map(TraceParent::context),
            identity,
            run: None,
            steps: HashMap::new(),
            open_step: None,
            chats: HashMap::new(),
            tools: HashMap::new(),
            git: None,
            content: target.content,
        };
        Ok((sink, hook))
    }

    fn begin(
        &self,
        name: String,
        at: SystemTime,
        parent: Option<&Context>,
        attributes: Vec<KeyValue>,
    ) -> Context {
        let kind = if name.starts_with("chat ") {
            SpanKind::Client
        } else {
            SpanKind::Internal
        };
        let builder = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_start_time(at)
            .with_attributes(attributes);
        let span = match parent {
            Some(parent) => builder.start_with_context(&self.tracer, parent),
            None => builder.start_with_context(&self.tracer, &Context::new()),
        };
        Context::new().with_span(span)
    }

    /// Where a model or tool call of `event` nests: a sub-agent's under its
    /// `task` call, the agent's under the open plan step, else the run.
    fn parent_of(&self, event: &Event, step: Option<usize>) -> Option<&Context> {
        if let Some(agent) = &event.agent
            && let Some(task) = self.tools.get(&agent.parent_call)
        {
            return Some(task);
        }
        step.or(self.open_step)
            .and_then(|i| self.steps.get(&i))
            .or(self.run.as_ref())
    }
}

impl OtlpSink {
    /// Ends the tool, model-call and step spans still open, at `at`.
    fn end_open_calls_and_steps(&mut self, at: SystemTime) {
        let open_spans = self
            .tools
            .drain()
            .chain(self.chats.drain())
            .map(|(_, cx)| cx);
        for open in open_spans.chain(self.steps.drain().map(|(_, cx)| cx)) {
            open.span().end_with_timestamp(at);
        }
        self.open_step = None;
    }

    /// Where export failures are kept, for the metrics sent with the spans.
    pub(super) fn failure_slot(&self) -> FirstFailure {
        self.failure.clone()
    }

    /// The spans' HTTP client (http/protobuf), for the metrics to share.
    pub(super) fn http_client(&self) -> Option<ExportClient> {
        self.http.clone()
    }

    /// What went wrong first while exporting (the collector could not be
    /// reached, or refused), if anything did.
    pub fn first_failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Ends every span still open at `at`, the run's last: a trace read
    /// back that was cut short (no `run.completed`) still exports whole
    /// spans, the run's marked as not finished.
    pub fn end_unfinished(&mut self, at: SystemTime) {
        self.end_open_calls_and_steps(at);
        if let Some((git, last)) = self.git.take() {
            git.span().end_with_timestamp(last);
        }
        if let Some(run) = self.run.take() {
            run.span()
                .set_attribute(KeyValue::new("agentci.run.status", "unfinished"));
            run.span()
                .set_status(Status::error("the trace ends before run.completed"));
            run.span().end_with_timestamp(at);
        }
    }
}

impl OtlpSink {
    fn run_attributes(&self, job_name: &str, event: &Event) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", job_name.to_string()),
            KeyValue::new("gen_ai.provider.name", self.provider_name.clone()),
            KeyValue::new("gen_ai.request.model", self.model.clone()),
            KeyValue::new("agentci.run.id", event.run_id.clone()),
        ]
    }

    /// A resumed run in a process of its own: its span (marked resumed,
    /// in the same place an eval or `TRACEPARENT` puts it) and the span of
    /// the step it goes on in, which has no `step.started` of its own here.
    fn begin_resumed(
        &mut self,
        event: &Event,
        at: SystemTime,
        from_step: Option<usize>,
        marks: Vec<KeyValue>,
    ) {
        let identity = self.identity.clone().unwrap_or_default();
        self.model = identity.model;
        self.provider_name = identity.provider;
        let mut attributes = self.run_attributes(&identity.job_name, event);
        attributes.push(KeyValue::new("agentci.run.resumed", true));
        attributes.extend(marks);
        let run = self.begin(
            format!("invoke_agent {}", identity.job_name),
            at,
            self.parent.as_ref(),
            attributes,
        );
        if let Some(index) = from_step {
            let step = self.begin(
                format!("step {}", index + 1),
                at,
                Some(&run),
                vec![int("agentci.step.index", index as u64)],
            );
            self.steps.insert(index, step);
            self.open_step = Some(index);
        }
        self.run = Some(run);
    }
}

/// What a `git.*` event says, as attributes of the git step's span;
/// `None` for every other event.
fn git_attributes(kind: &EventKind) -> Option<Vec<KeyValue>> {
    Some(match kind {
        EventKind::GitPatch(patch) => vec![
            KeyValue::new("agentci.git.patch", patch.path.clone()),
            int("agentci.git.files_changed", patch.files_changed as u64),
            int("agentci.git.insertions", patch.insertions as u64),
            int("agentci.git.deletions", patch.deletions as u64),
        ],
        EventKind::GitCommit { branch, sha } => vec![
            KeyValue::new("vcs.ref.head.name", branch.clone()),
            KeyValue::new("vcs.ref.head.revision", sha.clone()),
        ],
        EventKind::GitPush { remote, branch } => vec![
            KeyValue::new("agentci.git.push.remote", remote.clone()),
            KeyValue::new("vcs.ref.head.name", branch.clone()),
        ],
        _ => return None,
    })
}

impl OtlpSink {
    /// The git step's events (patch, commit, push) come one after another:
    /// one `git` span under the run from the first to the last.
    fn git_event(&mut self, at: SystemTime, attributes: Vec<KeyValue>) {
        let span = match self.git.take() {
            Some((span, _)) => span,
            None => self.begin("git".to_string(), at, self.run.as_ref(), Vec::new()),
        };
        span.span().set_attributes(attributes);
        self.git = Some((span, at));
    }
}

/// When `event` happened, from its `ts` (now, when that cannot be read).
pub(super) fn time_of(event: &Event) -> SystemTime {
    chrono::DateTime::parse_from_rfc3339(&event.ts)
        .ok()
        .and_then(|t| u64::try_from(t.timestamp_micros()).ok())
        .map_or_else(SystemTime::now, |us| {
            SystemTime::UNIX_EPOCH + Duration::from_micros(us)
        })
}

/// `attributes`, plus the sub-agent (`task-1`, …) the event comes from.
fn with_agent(event: &Event, mut attributes: Vec<KeyValue>) -> Vec<KeyValue> {
    if let Some(agent) = &event.agent {
        attributes.push(KeyValue::new("agentci.agent.id", agent.id.clone()));
    }
    attributes
}

fn int(key: &'static str, n: u64) -> KeyValue {
    KeyValue::new(key, i64::try_from(n).unwrap_or(i64::MAX))
}

impl EventSink for OtlpSink {
    fn on_event(&mut self, event: &Event) -> Result<(), SinkError> {
        let at = time_of(event);
        if let Some(attributes) = git_attributes(&event.kind) {
            self.git_event(at, attributes);
            return Ok(());
        }
        if let Some((git, last)) = self.git.take() {
            git.span().end_with_timestamp(last);
        }
        match &event.kind {
            EventKind::RunStarted(started) => {
                self.model = started.model.name.clone();
                self.provider_name = started.model.provider.clone();
                let mut attributes = self.run_attributes(&started.job_name, event);
                attributes.push(KeyValue::new("agentci.skill", started.skill.clone()));
                self.run = Some(self.begin(
                    format!("invoke_agent {}", started.job_name),
                    at,
                    self.parent.as_ref(),
                    attributes,
                ));
            }
            EventKind::RunResumed(resumed) => {
                let marks = vec![
                    int("agentci.resume.from_turn", u64::from(resumed.from_turn)),
                    int("agentci.resume.round", u64::from(resumed.round)),
                ];
                match &self.run {
                    // A trace read back: the run's span is open since `run.started`.
                    Some(run) => run.span().add_event_with_timestamp("resumed", at, marks),
                    None => self.begin_resumed(event, at, resumed.from_step, marks),
                }
            }
            EventKind::StepStarted { index, title } if event.agent.is_none() => {
                let step = self.begin(
                    format!("step {}", index + 1),
                    at,
                    self.run.as_ref(),
                    vec![
                        int("agentci.step.index", *index as u64),
                        KeyValue::new("agentci.step.title", title.clone()),
                    ],
                );
                self.steps.insert(*index, step);
                self.open_step = Some(*index);
            }
            EventKind::StepCompleted { index, status, .. } if event.agent.is_none() => {
                if let Some(step) = self.steps.remove(index) {
                    step.span()
                        .set_attribute(KeyValue::new("agentci.step.status", status.as_str()));
                    step.span().end_with_timestamp(at);
                }
                if self.open_step == Some(*index) {
                    self.open_step = None;
                }
            }
            EventKind::ModelRequest(request) => {
                let parent = self.parent_of(event, request.step).cloned();
                let chat = self.begin(
                    format!("chat {}", self.model),
                    at,
                    parent.as_ref(),
                    with_agent(
                        event,
                        vec![
                            KeyValue::new("gen_ai.operation.name", "chat"),
                            KeyValue::new("gen_ai.provider.name", self.provider_name.clone()),
                            KeyValue::new("gen_ai.request.model", self.model.clone()),
                            int("agentci.turn", u64::from(request.turn)),
                            KeyValue::new(
                                "agentci.phase",
                                format!("{:?}", request.phase).to_lowercase(),
                            ),
                        ],
                    ),
                );
                if self.content
                    && let Some(sent) = &request.sent
                {
                    let (system, input) = content::input_messages(sent);
                    if let Some(system) = system {
                        chat.span()
                            .set_attribute(KeyValue::new("gen_ai.system_instructions", system));
                    }
                    chat.span()
                        .set_attribute(KeyValue::new("gen_ai.input.messages", input));
                }
                self.chats.insert(request.call_id.clone(), chat);
            }
            EventKind::ModelRetry(retry) => {
                if let Some(chat) = self.chats.get(&retry.call_id) {
                    let mut attributes = vec![
                        int("agentci.retry.attempt", u64::from(retry.attempt)),
                        KeyValue::new("agentci.retry.reason", retry.reason.clone()),
                    ];
                    if let Some(status) = retry.status {
                        attributes.push(int("http.response.status_code", u64::from(status)));
                    }
                    chat.span()
                        .add_event_with_timestamp("retry", at, attributes);
                    chat.span()
                        .set_attribute(int("agentci.retries", u64::from(retry.attempt)));
                }
            }
            EventKind::ModelResponse(response) => {
                if let Some(chat) = self.chats.remove(&response.call_id) {
                    let usage = &response.usage;
                    let span = chat.span();
                    span.set_attribute(int("gen_ai.usage.input_tokens", usage.input_tokens));
                    span.set_attribute(int("gen_ai.usage.output_tokens", usage.output_tokens));
                    span.set_attribute(int(
                        "gen_ai.usage.cache_read.input_tokens",
                        usage.cache_read_tokens,
                    ));
                    span.set_attribute(int(
                        "gen_ai.usage.cache_creation.input_tokens",
                        usage.cache_write_tokens,
                    ));
                    span.set_attribute(int(
                        "gen_ai.usage.reasoning.output_tokens",
                        usage.reasoning_tokens,
                    ));
                    if let Some(reason) = &response.finish_reason {
                        span.set_attribute(KeyValue::new(
                            "gen_ai.response.finish_reasons",
                            Value::Array(Array::String(vec![StringValue::from(reason.clone())])),
                        ));
                    }
                    if let Some(cost) = response.cost_usd {
                        span.set_attribute(KeyValue::new("agentci.cost_usd", cost));
                    }
                    if self.content {
                        span.set_attribute(KeyValue::new(
                            "gen_ai.output.messages",
                            content::output_messages(response),
                        ));
                    }
                    span.end_with_timestamp(at);
                }
            }
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => {
                let parent = self.parent_of(event, None).cloned();
                let span = self.begin(
                    format!("execute_tool {tool}"),
                    at,
                    parent.as_ref(),
                    with_agent(
                        event,
                        vec![
                            KeyValue::new("gen_ai.operation.name", "execute_tool"),
                            KeyValue::new("gen_ai.tool.name", tool.clone()),
                            KeyValue::new("gen_ai.tool.call.id", call_id.clone()),
                        ],
                    ),
                );
                if self.content {
                    span.span().set_attribute(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        content::capped(&arguments.to_string()),
                    ));
                }
                self.tools.insert(call_id.clone(), span);
            }
            EventKind::PermissionDecision {
                call_id,
                decision,
                rule,
                ..
            } => {
                if let Some(tool) = self.tools.get(call_id) {
                    let decided = match decision {
                        Decision::Allow => "allow",
                        Decision::Deny => "deny",
                    };
                    tool.span()
                        .set_attribute(KeyValue::new("agentci.permission.decision", decided));
                    tool.span()
                        .set_attribute(KeyValue::new("agentci.permission.rule", rule.clone()));
                }
            }
            EventKind::ToolResult(result) => {
                if let Some(tool) = self.tools.remove(&result.call_id) {
                    let span = tool.span();
                    let outcome = if result.ok { "ok" } else { "error" };
                    span.set_attribute(KeyValue::new("agentci.tool.outcome", outcome));
                    if self.content {
                        span.set_attribute(KeyValue::new(
                            "gen_ai.tool.call.result",
                            content::capped(&result.summary),
                        ));
                    }
                    if let Some(code) = &result.error_code {
                        span.set_attribute(KeyValue::new("error.type", code.clone()));
                        span.set_status(Status::error(code.clone()));
                    }
                    span.end_with_timestamp(at);
                }
            }
            EventKind::CheckCompleted(check) => {
                let start = at
                    .checked_sub(Duration::from_millis(check.duration_ms))
                    .unwrap_or(at);
                let outcome = serde_json::to_value(check.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let mut attributes = vec![KeyValue::new("agentci.check.outcome", outcome.clone())];
                if let Some(code) = check.exit_code {
                    attributes.push(KeyValue::new("process.exit.code", i64::from(code)));
                }
                let span = self.begin(
                    format!("check {}", check.name),
                    start,
                    self.run.as_ref(),
                    attributes,
                );
                if outcome != "passed" && outcome != "skipped" {
                    span.span().set_status(Status::error(outcome));
                }
                span.span().end_with_timestamp(at);
            }
            EventKind::Warning { source, message } => {
                if let Some(run) = &self.run {
                    run.span().add_event_with_timestamp(
                        "warning",
                        at,
                        vec![
                            KeyValue::new("agentci.warning.source", source.clone()),
                            KeyValue::new("agentci.warning.message", message.clone()),
                        ],
                    );
                }
            }
            EventKind::RunCompleted(completed) => {
                self.end_open_calls_and_steps(at);
                if let Some(run) = self.run.take() {
                    let span = run.span();
                    let totals = &completed.totals;
                    let status = completed.status.as_str();
                    span.set_attribute(KeyValue::new("agentci.run.status", status));
                    span.set_attribute(int("gen_ai.usage.input_tokens", totals.input_tokens));
                    span.set_attribute(int("gen_ai.usage.output_tokens", totals.output_tokens));
                    span.set_attribute(int("agentci.turns", u64::from(totals.turns)));
                    span.set_attribute(int("agentci.tool_calls", u64::from(totals.tool_calls)));
                    span.set_attribute(int(
                        "agentci.checks.passed",
                        u64::from(completed.checks_passed),
                    ));
                    span.set_attribute(int(
                        "agentci.checks.failed",
                        u64::from(completed.checks_failed),
                    ));
                    if let Some(cost) = totals.cost_usd {
                        span.set_attribute(KeyValue::new("agentci.cost_usd", cost));
                    }
                    if completed.status != RunStatus::Passed {
                        span.set_status(Status::error(status));
                    }
                    span.end_with_timestamp(at);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The last spans get one short flush; a failure here was already
    /// reported before `run.completed` or is not worth holding the run for.
    fn finish(&mut self) -> Result<(), SinkError> {
        let _ = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT);
        Ok(())
    }
}
