//! The GitHub Actions event that started a run: its name
//! (`GITHUB_EVENT_NAME`) and payload (the JSON file at `GITHUB_EVENT_PATH`).
//!
//! Two things are read from it: the free text people outside the job wrote
//! (titles and bodies of pull requests, issues, comments, reviews and
//! discussions), which the model gets as untrusted input, and whether the
//! run works on a pull request's code, in which case the workspace is not
//! trusted by default. The payload's shape is GitHub's "Webhook events and
//! payloads" documentation; fields this module does not know are ignored.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::UntrustedText;

/// Largest payload read; GitHub's webhook payloads are capped at 25 MB.
const MAX_PAYLOAD_BYTES: u64 = 25 * 1024 * 1024;

/// The event that started the run.
#[derive(Clone, Debug, PartialEq)]
pub struct GithubEvent {
    /// `pull_request`, `issue_comment`, `push`, …
    pub name: String,
    pub payload: Value,
}

/// Events whose workflow runs on a pull request's code (or next to it),
/// whatever their payload says: the merge queue's `merge_group` tests the
/// pull request merged into its base.
const PULL_REQUEST_EVENTS: &[&str] = &[
    "pull_request",
    "pull_request_target",
    "pull_request_review",
    "pull_request_review_comment",
    "merge_group",
];

/// Events whose workflow runs with the base repository's secrets on what
/// another workflow left behind, whatever their payload says: a
/// `workflow_run` follows a run that a fork's pull request can start, and
/// the artifacts, caches and `head_sha` it works on are that run's. GitHub
/// lists a fork's pull request in none of the payload's fields, and a chain
/// of `workflow_run`s names only the last trigger, so the payload cannot
/// clear it.
const FOLLOWING_EVENTS: &[&str] = &["workflow_run"];

/// Objects of a payload that list the pull requests a run is about
/// (`workflow_run.pull_requests[]`, `check_suite.pull_requests[]`, …).
const PULL_REQUEST_LISTS: &[&[&str]] = &[
    &["workflow_run", "pull_requests"],
    &["check_suite", "pull_requests"],
    &["check_run", "pull_requests"],
    &["check_run", "check_suite", "pull_requests"],
];

/// Where free text lives in a payload, and what to call it.
const FREE_TEXT: &[(&str, &str, &str)] = &[
    ("pull_request", "title", "pull request title"),
    ("pull_request", "body", "pull request body"),
    ("issue", "title", "issue title"),
    ("issue", "body", "issue body"),
    ("discussion", "title", "discussion title"),
    ("discussion", "body", "discussion body"),
    ("review", "body", "review body"),
    ("comment", "body", "comment body"),
];

/// Why the payload of the event that started the run cannot be used; it
/// names the file, the variable that pointed there and the event.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read the GitHub event payload {} (GITHUB_EVENT_PATH, event `{name}`): {problem}",
    path.display()
)]
pub struct GithubEventError {
    pub name: String,
    pub path: PathBuf,
    pub problem: PayloadProblem,
}

/// What is wrong with the payload file.
#[derive(Debug, thiserror::Error)]
pub enum PayloadProblem {
    #[error("{0}")]
    Unreadable(std::io::Error),
    #[error("it has {size} bytes, more than GitHub sends")]
    TooLarge { size: u64 },
    #[error("it is not JSON ({0})")]
    NotJson(serde_json::Error),
    #[error("it is not a JSON object")]
    NotObject,
}

impl GithubEvent {
    /// The event described by `GITHUB_EVENT_NAME` and `GITHUB_EVENT_PATH`
    /// as `env` gives them; `Ok(None)` when either is unset (not on
    /// GitHub Actions). `Err` is a message for the user: a payload that
    /// cannot be read must not silently turn a pull request run into a
    /// trusted one.
    pub fn from_env(
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<GithubEvent>, GithubEventError> {
        let (Some(name), Some(path)) = (env("GITHUB_EVENT_NAME"), env("GITHUB_EVENT_PATH")) else {
            return Ok(None);
        };
        GithubEvent::read(&name, Path::new(&path)).map(Some)
    }

    /// The event `name` with the payload in the file at `path`.
    pub fn read(name: &str, path: &Path) -> Result<GithubEvent, GithubEventError> {
        let problem = |problem: PayloadProblem| GithubEventError {
            name: name.to_string(),
            path: path.to_path_buf(),
            problem,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| problem(PayloadProblem::Unreadable(e)))?
            .len();
        if size > MAX_PAYLOAD_BYTES {
            return Err(problem(PayloadProblem::TooLarge { size }));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| problem(PayloadProblem::Unreadable(e)))?;
        let payload: Value =
            serde_json::from_str(&text).map_err(|e| problem(PayloadProblem::NotJson(e)))?;
        if !payload.is_object() {
            return Err(problem(PayloadProblem::NotObject));
        }
        Ok(GithubEvent {
            name: name.to_string(),
            payload,
        })
    }

    /// Does the run work on a pull request: a pull request or merge queue
    /// event, or any event whose payload carries a pull request (a comment
    /// on one, a `workflow_run`, `check_suite` or `check_run` that lists
    /// one, a `workflow_run` a pull request's workflow triggered or that ran
    /// on a fork's code). Unknown events count too: what decides is the
    /// payload, not a list of names that GitHub grows.
    pub fn is_pull_request(&self) -> bool {
        PULL_REQUEST_EVENTS.contains(&self.name.as_str()) || carries_pull_request(&self.payload)
    }

    /// Does the run follow another workflow (`workflow_run`), whose
    /// outputs it works on with the base repository's secrets?
    pub fn follows_another_workflow(&self) -> bool {
        FOLLOWING_EVENTS.contains(&self.name.as_str())
    }

    /// Is the workspace untrusted by default: a pull request run
    /// ([`Self::is_pull_request`]) or a run that follows another workflow
    /// ([`Self::follows_another_workflow`]).
    pub fn untrusts_workspace(&self) -> bool {
        self.is_pull_request() || self.follows_another_workflow()
    }

    /// The payload's free text, cleaned, in a fixed order; empty fields are left out.
    pub fn free_text(&self) -> Vec<UntrustedText> {
        FREE_TEXT
            .iter()
            .filter_map(|(object, field, label)| {
                let text = self.payload.get(object)?.get(field)?.as_str()?;
                (!text.trim().is_empty()).then(|| {
                    UntrustedText::new(format!("{label} (GitHub {} event)", self.name), text)
                        .from_event()
                })
            })
            .collect()
    }
}

/// Does `payload` carry a pull request anywhere GitHub puts one?
fn carries_pull_request(payload: &Value) -> bool {
    let present = |value: Option<&Value>| value.is_some_and(|v| !v.is_null());
    let listed = |path: &[&str]| {
        path.iter()
            .try_fold(payload, |value, key| value.get(key))
            .and_then(Value::as_array)
            .is_some_and(|prs| !prs.is_empty())
    };
    let run = &payload["workflow_run"];
    let triggered_by_pull_request = run["event"]
        .as_str()
        .is_some_and(|event| PULL_REQUEST_EVENTS.contains(&event));
    // A fork's pull request is not listed in `pull_requests`; its run's
    // code comes from another repository.
    let fork = match (
        run["head_repository"]["full_name"].as_str(),
        payload["repository"]["full_name"].as_str(),
    ) {
        (Some(head), Some(base)) => head != base,
        _ => false,
    };
    present(payload.get("pull_request"))
        || present(payload["issue"].get("pull_request"))
        || PULL_REQUEST_LISTS.iter().any(|path| listed(path))
        || triggered_by_pull_request
        || fork
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(name: &str, payload: Value) -> GithubEvent {
        GithubEvent {
            name: name.into(),
            payload,
        }
    }

    #[test]
    fn pull_request_runs_are_recognised() {
        assert!(event("pull_request_target", json!({})).is_pull_request());
        let on_pr = json!({"issue": {"pull_request": {"url": "u"}}, "comment": {"body": "x"}});
        assert!(event("issue_comment", on_pr).is_pull_request());
        let on_issue = json!({"issue": {"title": "t"}, "comment": {"body": "x"}});
        assert!(!event("issue_comment", on_issue).is_pull_request());
        let run = json!({"workflow_run": {"event": "pull_request"}});
        assert!(event("workflow_run", run).is_pull_request());
        assert!(!event("push", json!({})).is_pull_request());
    }

    // Regression (issue 38): a `workflow_run` whose payload named no pull
    // request (a fork's, a chain of runs) kept the workspace trusted.
    #[test]
    fn every_workflow_run_untrusts_the_workspace() {
        let quiet = json!({"workflow_run": {"event": "push", "pull_requests": []}});
        let run = event("workflow_run", quiet.clone());
        assert!(!run.is_pull_request());
        assert!(run.follows_another_workflow() && run.untrusts_workspace());
        assert!(event("pull_request_target", json!({})).untrusts_workspace());
        assert!(!event("push", quiet).untrusts_workspace());
        assert!(!event("schedule", json!({})).untrusts_workspace());
    }

    #[test]
    fn events_that_carry_a_pull_request_are_pull_request_runs() {
        let pr = json!([{"number": 7}]);
        let cases = [
            ("merge_group", json!({"merge_group": {}}), true),
            (
                "workflow_run",
                json!({"workflow_run": {"event": "push", "pull_requests": pr}}),
                true,
            ),
            (
                "workflow_run",
                json!({"workflow_run": {"event": "push", "pull_requests": []}}),
                false,
            ),
            (
                "workflow_run",
                json!({"workflow_run": {"event": "merge_group"}}),
                true,
            ),
            (
                "workflow_run",
                json!({"workflow_run": {"event": "push", "head_repository": {"full_name": "fork/r"}},
                       "repository": {"full_name": "o/r"}}),
                true,
            ),
            (
                "workflow_run",
                json!({"workflow_run": {"event": "push", "head_repository": {"full_name": "o/r"}},
                       "repository": {"full_name": "o/r"}}),
                false,
            ),
            (
                "check_suite",
                json!({"check_suite": {"pull_requests": pr}}),
                true,
            ),
            (
                "check_suite",
                json!({"check_suite": {"pull_requests": []}}),
                false,
            ),
            (
                "check_run",
                json!({"check_run": {"pull_requests": pr}}),
                true,
            ),
            (
                "check_run",
                json!({"check_run": {"check_suite": {"pull_requests": pr}}}),
                true,
            ),
            (
                "some_new_event",
                json!({"pull_request": {"number": 7}}),
                true,
            ),
            ("some_new_event", json!({"pull_request": null}), false),
        ];
        for (name, payload, want) in cases {
            assert_eq!(
                event(name, payload.clone()).is_pull_request(),
                want,
                "{name} {payload}"
            );
        }
    }

    #[test]
    fn free_text_is_cleaned_and_labelled() {
        let e = event(
            "issue_comment",
            json!({"issue": {"title": "Bug", "body": ""}, "comment": {"body": "hi<!-- x -->"}}),
        );
        let texts = e.free_text();
        assert_eq!(texts.len(), 2);
        assert_eq!(texts[0].source, "issue title (GitHub issue_comment event)");
        assert_eq!(texts[1].cleaned.text, "hi");
    }
}
