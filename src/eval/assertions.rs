//! Judging a case's assertions after a run: commands and file contents in
//! the workspace, the diff against the fixture, and what the trace and
//! `run.completed` say (tools called, turns, cost, duration, status, the
//! final text). Every assertion gets a verdict; none stops the others.

use std::path::Path;
use std::time::Duration;

use super::judge::Judging;
use super::results::AssertionResult;
use super::suite::{Assertion, ExpectedStatus};
use crate::event::{Event, EventKind, RunCompleted, RunStatus};
use crate::process::ProcessRunner;

/// Output of a failed `run:` kept in the message.
const MAX_OUTPUT_CHARS: usize = 2000;

/// What an attempt left to judge.
pub struct Facts<'a> {
    /// Runs `run:` commands (sandbox, scrubbed environment, masking).
    pub processes: &'a ProcessRunner,
    pub workspace: &'a Path,
    pub completed: &'a RunCompleted,
    pub events: &'a [Event],
    /// Paths the run changed, relative, with `/`.
    pub changed: &'a [String],
    /// What `judge:` assertions grade with; `None`: they cannot be graded.
    pub judging: Option<&'a Judging<'a>>,
}

pub async fn judge(assertions: &[Assertion], facts: &Facts<'_>) -> Vec<AssertionResult> {
    let mut results = Vec::with_capacity(assertions.len());
    for assertion in assertions {
        if let Assertion::Judge(spec) = assertion {
            results.push(match facts.judging {
                Some(judging) => judging.grade(spec, assertion.label()).await,
                None => AssertionResult {
                    name: assertion.label(),
                    passed: false,
                    message: Some("the judge errored: no model to judge with".into()),
                    error: true,
                    judge: None,
                },
            });
            continue;
        }
        let verdict = judge_one(assertion, facts).await;
        results.push(AssertionResult {
            name: assertion.label(),
            passed: verdict.is_ok(),
            message: verdict.err(),
            error: false,
            judge: None,
        });
    }
    results
}

async fn judge_one(assertion: &Assertion, facts: &Facts<'_>) -> Result<(), String> {
    let totals = &facts.completed.totals;
    match assertion {
        Assertion::Run { command, timeout } => {
            run(command, *timeout, facts.workspace, facts.processes).await
        }
        Assertion::FileContains { path, pattern } => {
            let text = read(facts.workspace, path)?;
            check(pattern.is_match(&text), || {
                format!("{path} does not match /{}/", pattern.as_str())
            })
        }
        Assertion::FileNotContains { path, pattern } => {
            let text = read(facts.workspace, path)?;
            check(!pattern.is_match(&text), || {
                format!("{path} matches /{}/", pattern.as_str())
            })
        }
        Assertion::FileUnchanged { path } => {
            let prefix = format!("{path}/");
            let touched: Vec<&String> = facts
                .changed
                .iter()
                .filter(|c| *c == path || c.starts_with(&prefix))
                .collect();
            check(touched.is_empty(), || {
                format!("changed: {}", join(touched.iter().map(|s| s.as_str())))
            })
        }
        Assertion::DiffTouchesOnly { set, .. } => {
            let outside: Vec<&str> = facts
                .changed
                .iter()
                .filter(|c| !set.is_match(c.as_str()))
                .map(String::as_str)
                .collect();
            check(outside.is_empty(), || {
                format!(
                    "changed outside the allowed paths: {}",
                    join(outside.into_iter())
                )
            })
        }
        Assertion::ToolCalled(tool) => check(called(facts.events, tool) > 0, || {
            format!("`{tool}` was never called")
        }),
        Assertion::ToolNotCalled(tool) => {
            let n = called(facts.events, tool);
            check(n == 0, || format!("`{tool}` was called {n} time(s)"))
        }
        Assertion::MaxTurns(max) => check(totals.turns <= *max, || {
            format!("{} turns, more than {max}", totals.turns)
        }),
        Assertion::MaxCostUsd(max) => match totals.cost_usd {
            Some(cost) => check(cost <= *max, || {
                format!("cost ${cost:.4}, more than ${max}")
            }),
            // An unknown price cannot be shown to be under the limit.
            None => Err(
                "the cost is unknown (no price for this model), so the limit cannot be checked"
                    .into(),
            ),
        },
        Assertion::MaxDuration(max) => {
            let took = Duration::from_millis(totals.duration_ms);
            check(took <= *max, || {
                format!(
                    "the run took {:.1}s, more than {:.1}s",
                    took.as_secs_f64(),
                    max.as_secs_f64()
                )
            })
        }
        Assertion::Status(expected) => {
            let actual = facts.completed.status;
            let wanted = match expected {
                ExpectedStatus::Passed => RunStatus::Passed,
                ExpectedStatus::Failed => RunStatus::Failed,
                ExpectedStatus::BudgetExceeded => RunStatus::BudgetExceeded,
            };
            check(actual == wanted, || {
                format!(
                    "the run {} ({}), expected {}",
                    actual.as_str(),
                    facts.completed.reason,
                    expected.as_str()
                )
            })
        }
        Assertion::FinalTextMatches(pattern) => match &facts.completed.summary {
            Some(text) => check(pattern.is_match(text), || {
                format!("the final text does not match /{}/", pattern.as_str())
            }),
            None => Err("the run has no final text".into()),
        },
        // Graded in `judge` above, by a model.
        Assertion::Judge(_) => Err("a judge is graded by a model".into()),
    }
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(message()) }
}

/// Paths for a message: the first few, then how many more.
fn join<'a>(paths: impl Iterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let paths: Vec<&str> = paths.collect();
    let mut text = paths[..paths.len().min(SHOWN)].join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

fn called(events: &[Event], tool: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::ToolCall { tool: t, .. } if t == tool))
        .count()
}

fn read(workspace: &Path, path: &str) -> Result<String, String> {
    std::fs::read(workspace.join(path))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| format!("cannot read {path}: {e}"))
}

/// `bash -c COMMAND` in the workspace through the attempt's runner; exit 0 passes.
async fn run(
    command: &str,
    timeout: Duration,
    workspace: &Path,
    processes: &ProcessRunner,
) -> Result<(), String> {
    let output = processes
        .run_shell(command, workspace, timeout, MAX_OUTPUT_CHARS)
        .await
        .map_err(|e| format!("cannot run `bash -c`: {e}"))?;
    if output.timed_out {
        return Err(format!("timed out after {}s", timeout.as_secs()));
    }
    if output.exit_code == Some(0) {
        return Ok(());
    }
    let code = output.exit_code.map_or_else(
        || "killed by a signal".to_string(),
        |c| format!("exit code {c}"),
    );
    let text = output.output.trim();
    Err(if text.is_empty() {
        code
    } else {
        format!("{code}: {text}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Totals;
    use regex::Regex;
    use serde_json::json;

    fn call(tool: &str) -> Event {
        Event {
            seq: 1,
            ts: String::new(),
            run_id: "r".into(),
            agent: None,
            kind: EventKind::ToolCall {
                call_id: "c".into(),
                tool: tool.into(),
                arguments: json!({}),
            },
        }
    }

    fn glob(pattern: &str) -> globset::GlobSet {
        let mut builder = globset::GlobSetBuilder::new();
        builder.add(globset::Glob::new(pattern).unwrap());
        builder.build().unwrap()
    }

    /// Each kind both passes and fails on what the run left, with a message
    /// saying what was wrong.
    #[tokio::test]
    async fn every_kind_passes_and_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "status: fixed\n").unwrap();
        let completed = RunCompleted {
            status: RunStatus::Passed,
            reason: "1 of 1 checks passed".into(),
            summary: Some("Fixed the status.".into()),
            totals: Totals {
                turns: 4,
                tool_calls: 1,
                cost_usd: Some(0.02),
                duration_ms: 3_000,
                ..Totals::default()
            },
            checks_passed: 1,
            checks_failed: 0,
            signal: None,
            result: None,
        };
        let events = vec![call("edit")];
        let changed = vec!["notes.txt".to_string(), "src/a.rs".to_string()];
        let processes = ProcessRunner::default();
        let facts = Facts {
            processes: &processes,
            workspace: dir.path(),
            completed: &completed,
            events: &events,
            changed: &changed,
            judging: None,
        };
        let re = |p: &str| Regex::new(p).unwrap();
        let secs = Duration::from_secs;
        let run = |c: &str| Assertion::Run {
            command: c.into(),
            timeout: secs(10),
        };
        let cases: Vec<(Assertion, Option<&str>)> = vec![
            (run("grep -q fixed notes.txt"), None),
            (run("echo nope; exit 3"), Some("exit code 3: nope")),
            (
                Assertion::FileContains {
                    path: "notes.txt".into(),
                    pattern: re("fixed"),
                },
                None,
            ),
            (
                Assertion::FileContains {
                    path: "notes.txt".into(),
                    pattern: re("broken"),
                },
                Some("notes.txt does not match /broken/"),
            ),
            (
                Assertion::FileContains {
                    path: "gone.txt".into(),
                    pattern: re("x"),
                },
                Some("cannot read gone.txt"),
            ),
            (
                Assertion::FileNotContains {
                    path: "notes.txt".into(),
                    pattern: re("fixed"),
                },
                Some("notes.txt matches /fixed/"),
            ),
            (
                Assertion::FileUnchanged {
                    path: "README.md".into(),
                },
                None,
            ),
            (
                Assertion::FileUnchanged { path: "src".into() },
                Some("changed: src/a.rs"),
            ),
            (
                Assertion::DiffTouchesOnly {
                    globs: vec!["*.txt".into()],
                    set: glob("*.txt"),
                },
                Some("changed outside the allowed paths: src/a.rs"),
            ),
            (
                Assertion::DiffTouchesOnly {
                    globs: vec!["**".into()],
                    set: glob("**"),
                },
                None,
            ),
            (Assertion::ToolCalled("edit".into()), None),
            (
                Assertion::ToolCalled("exec".into()),
                Some("`exec` was never called"),
            ),
            (Assertion::ToolNotCalled("exec".into()), None),
            (
                Assertion::ToolNotCalled("edit".into()),
                Some("`edit` was called 1 time(s)"),
            ),
            (Assertion::MaxTurns(4), None),
            (Assertion::MaxTurns(3), Some("4 turns, more than 3")),
            (Assertion::MaxCostUsd(0.05), None),
            (
                Assertion::MaxCostUsd(0.01),
                Some("cost $0.0200, more than $0.01"),
            ),
            (Assertion::MaxDuration(secs(3)), None),
            (
                Assertion::MaxDuration(secs(2)),
                Some("the run took 3.0s, more than 2.0s"),
            ),
            (Assertion::Status(ExpectedStatus::Passed), None),
            (
                Assertion::Status(ExpectedStatus::Failed),
                Some("the run passed (1 of 1 checks passed), expected failed"),
            ),
            (Assertion::FinalTextMatches(re("(?i)fixed")), None),
            (
                Assertion::FinalTextMatches(re("^Gave up")),
                Some("the final text does not match /^Gave up/"),
            ),
        ];
        for (assertion, expected) in cases {
            let label = assertion.label();
            let got = judge(std::slice::from_ref(&assertion), &facts)
                .await
                .remove(0);
            assert_eq!(got.name, label);
            match expected {
                None => assert!(got.passed, "{label}: {:?}", got.message),
                Some(message) => {
                    assert!(!got.passed, "{label} passed");
                    let text = got.message.unwrap_or_default();
                    assert!(text.starts_with(message), "{label}: {text}");
                }
            }
        }
        // An unknown price cannot be shown to be under a cost limit.
        let unpriced = RunCompleted {
            totals: Totals {
                cost_usd: None,
                ..completed.totals.clone()
            },
            ..completed.clone()
        };
        let facts = Facts {
            completed: &unpriced,
            ..facts
        };
        let got = judge(&[Assertion::MaxCostUsd(1.0)], &facts).await;
        assert!(!got[0].passed);
    }

    /// A `run` assertion that times out takes what it started with it,
    /// not only `sh` (the same holds when a signal drops it).
    #[tokio::test]
    async fn run_kills_its_whole_process_group() {
        const MARKER: &str = "26.125";
        let dir = tempfile::tempdir().unwrap();
        let outcome = run(
            &format!("sleep {MARKER}; true"),
            Duration::from_millis(300),
            dir.path(),
            &ProcessRunner::default(),
        )
        .await;
        assert_eq!(outcome, Err("timed out after 0s".to_string()));
        let alive = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .any(|c| {
                    String::from_utf8_lossy(&c).replace('\0', " ") == format!("sleep {MARKER} ")
                })
        };
        for _ in 0..50 {
            if !alive() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the assertion's sleep outlived it");
    }
}
