//! An evaluation as one OpenTelemetry trace: an `eval` span, a span per
//! suite, a span per attempt, and under each attempt its run's own spans
//! (the run is handed its attempt's span as its parent). Made only when the
//! `OTEL_EXPORTER_OTLP_*` variables name a collector.

use std::collections::HashMap;
use std::sync::Mutex;

use super::results::{AttemptResult, Outcome, Results};
use crate::telemetry::{KeyValue, OpenSpan, OtlpTarget, SpanTree, TraceParent};

/// The open spans of one evaluation.
#[derive(Debug)]
pub struct EvalSpans {
    tree: SpanTree,
    root: OpenSpan,
    suites: Mutex<HashMap<String, OpenSpan>>,
}

fn int(key: &'static str, n: impl TryInto<i64>) -> KeyValue {
    KeyValue::new(key, n.try_into().unwrap_or(i64::MAX))
}

impl EvalSpans {
    /// Opens the `eval` span, under `parent` when the CI job is traced;
    /// `Err` with one line when export cannot start.
    pub fn start(
        target: &OtlpTarget,
        parent: Option<&TraceParent>,
        repeat: u32,
        shard: Option<String>,
    ) -> Result<Self, String> {
        let tree = SpanTree::start(target).map_err(|e| e.to_string())?;
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "evaluate"),
            int("agentci.eval.repeat", repeat),
        ];
        if let Some(shard) = shard {
            attributes.push(KeyValue::new("agentci.eval.shard", shard));
        }
        let remote = parent.map(OpenSpan::remote);
        let root = tree.open("eval".to_string(), remote.as_ref(), attributes);
        Ok(EvalSpans {
            tree,
            root,
            suites: Mutex::new(HashMap::new()),
        })
    }

    /// Opens attempt `n` of `case` under its suite's span (opened with its
    /// first attempt); what the attempt's run nests under.
    pub fn attempt_started(&self, suite: &str, case: &str, n: u32) -> OpenSpan {
        let parent = {
            let mut suites = self.suites.lock().unwrap_or_else(|p| p.into_inner());
            suites
                .entry(suite.to_string())
                .or_insert_with(|| {
                    self.tree.open(
                        format!("eval_suite {suite}"),
                        Some(&self.root),
                        vec![KeyValue::new("agentci.eval.suite", suite.to_string())],
                    )
                })
                .clone()
        };
        self.tree.open(
            format!("eval_attempt {case} #{n}"),
            Some(&parent),
            vec![
                KeyValue::new("agentci.eval.case", case.to_string()),
                int("agentci.eval.attempt", n),
            ],
        )
    }

    /// Closes an attempt's span with its verdict and figures.
    pub fn attempt_finished(span: &OpenSpan, result: &AttemptResult) {
        let mut attributes = vec![
            KeyValue::new("agentci.eval.outcome", result.outcome.as_str()),
            int("agentci.turns", result.turns),
            int("gen_ai.usage.input_tokens", result.input_tokens),
            int("gen_ai.usage.output_tokens", result.output_tokens),
        ];
        if let Some(cost) = result.cost_usd {
            attributes.push(KeyValue::new("agentci.cost_usd", cost));
        }
        let error = (result.outcome != Outcome::Passed).then(|| result.reason.clone());
        span.end(attributes, error);
    }

    /// Closes the suites' spans with their pass rates and gates, then the
    /// `eval` span, and sends what is left; the first export failure.
    pub fn finish(&self, results: &Results) -> Option<String> {
        let mut suites = self.suites.lock().unwrap_or_else(|p| p.into_inner());
        for suite in &results.suites {
            if let Some(span) = suites.remove(&suite.name) {
                let error = (!suite.gate_passed).then(|| {
                    format!(
                        "pass rate {:.2} below {:.2}",
                        suite.pass_rate, suite.min_pass_rate
                    )
                });
                span.end(
                    vec![
                        KeyValue::new("agentci.eval.pass_rate", suite.pass_rate),
                        KeyValue::new("agentci.eval.gate_passed", suite.gate_passed),
                        int("agentci.eval.cases", suite.cases_total),
                    ],
                    error,
                );
            }
        }
        for (_, span) in suites.drain() {
            span.end(Vec::new(), Some("no result".to_string()));
        }
        let failed =
            !results.regressions.is_empty() || results.suites.iter().any(|s| !s.gate_passed);
        self.root.end(
            vec![int("agentci.eval.regressions", results.regressions.len())],
            failed.then(|| "a suite failed its gate or regressed".to_string()),
        );
        self.tree.finish()
    }
}
