//! Finding the merged results of the latest successful run of a workflow on
//! a branch: the baseline a pull request's evaluation is compared with.
//!
//! Three calls, each documented at docs.github.com/en/rest/actions:
//! the workflow's successful runs on the branch, newest first
//! (`GET /repos/{o}/{r}/actions/workflows/{file}/runs`), the artifact of a
//! fixed name among a run's artifacts (`GET .../runs/{id}/artifacts`), and
//! its zip (`GET .../artifacts/{id}/zip`, which answers with a redirect to a
//! short-lived link on another host). The redirect is followed here, by
//! hand and without the token, which that host neither needs nor may see.
//! A branch with no such run or artifact yet is [`Baseline::NoneYet`], not an
//! error: the first run of a workflow has nothing to compare with.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::artifact::{MAX_ZIP_BYTES, results_json};
use super::{GithubApi, GithubError, read_capped, send};

/// How many of the newest successful runs are looked at for the artifact
/// (a run that skipped the upload, such as a pull request's, has none).
const RUNS_LOOKED_AT: usize = 5;
/// A path segment keeps RFC 3986's unreserved characters as they are.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// Redirects followed for one download.
const MAX_REDIRECTS: usize = 3;

/// What to look for.
#[derive(Debug, Clone)]
pub struct BaselineQuery {
    /// The workflow's file name (`eval.yml`), as in `GITHUB_WORKFLOW_REF`.
    pub workflow: String,
    pub branch: String,
    /// The artifact's name.
    pub artifact: String,
}

/// What was found.
#[derive(Debug)]
pub enum Baseline {
    /// The bytes of the artifact's `results.json`, and the run it came from.
    Found { results: Vec<u8>, run_url: String },
    /// No successful run on the branch has the artifact: say why.
    NoneYet(String),
}

#[derive(Deserialize)]
struct Runs {
    workflow_runs: Vec<Run>,
}

#[derive(Deserialize)]
struct Run {
    id: u64,
    #[serde(default)]
    html_url: String,
    /// `push` for the default branch's own runs; a fork's pull request
    /// whose branch is also named `main` is `pull_request`.
    #[serde(default)]
    event: String,
    head_repository: Option<HeadRepository>,
}

#[derive(Deserialize)]
struct HeadRepository {
    full_name: String,
}

impl Run {
    /// Only a push to this repository can have kept a baseline: a pull
    /// request's run, a fork's above all, runs workflow files its author
    /// wrote and could upload any "baseline" under any branch name.
    fn pushed_to(&self, repository: &str) -> bool {
        self.event == "push"
            && self
                .head_repository
                .as_ref()
                .is_some_and(|r| r.full_name.eq_ignore_ascii_case(repository))
    }
}

#[derive(Deserialize)]
struct Artifacts {
    artifacts: Vec<Artifact>,
}

#[derive(Deserialize)]
struct Artifact {
    id: u64,
    name: String,
    #[serde(default)]
    expired: bool,
}

/// The workflow file named by `GITHUB_WORKFLOW_REF`
/// (`OWNER/REPO/.github/workflows/eval.yml@refs/pull/1/merge` → `eval.yml`).
pub fn workflow_file(workflow_ref: &str) -> Option<String> {
    let path = workflow_ref.split('@').next()?;
    let (_, file) = path.split_once("/.github/workflows/")?;
    (!file.is_empty() && !file.contains('/')).then(|| file.to_string())
}

impl GithubApi {
    /// The newest successful run of `query.workflow` on `query.branch` that
    /// kept the artifact, and its `results.json`.
    pub async fn baseline(&self, query: &BaselineQuery) -> Result<Baseline, GithubError> {
        let workflow = utf8_percent_encode(&query.workflow, SEGMENT).to_string();
        let mut url = reqwest::Url::parse(&self.url(&format!("actions/workflows/{workflow}/runs")))
            .map_err(|e| GithubError::Setup(format!("cannot make the runs URL: {e}")))?;
        url.query_pairs_mut()
            .append_pair("branch", &query.branch)
            .append_pair("status", "success")
            .append_pair("event", "push")
            .append_pair("per_page", &RUNS_LOOKED_AT.to_string());
        let step = format!(
            "list the successful runs of {} on {}",
            query.workflow, query.branch
        );
        let runs: Runs = match self.get_json(&step, url.as_str()).await {
            Ok(runs) => runs,
            // The workflow file is not on the base branch yet (it is new in
            // this pull request): nothing to compare with.
            Err(GithubError::Status { status: 404, .. }) => {
                return Ok(Baseline::NoneYet(format!(
                    "the workflow {} is not on {} yet",
                    query.workflow, query.branch
                )));
            }
            Err(e) => return Err(e),
        };
        let pushed = runs
            .workflow_runs
            .iter()
            .filter(|run| run.pushed_to(self.repository()));
        for run in pushed.take(RUNS_LOOKED_AT) {
            let mut url =
                reqwest::Url::parse(&self.url(&format!("actions/runs/{}/artifacts", run.id)))
                    .map_err(|e| {
                        GithubError::Setup(format!("cannot make the artifacts URL: {e}"))
                    })?;
            url.query_pairs_mut().append_pair("name", &query.artifact);
            let step = format!("list the artifacts of run {}", run.id);
            let artifacts: Artifacts = self.get_json(&step, url.as_str()).await?;
            let Some(artifact) = artifacts
                .artifacts
                .iter()
                .find(|a| a.name == query.artifact && !a.expired)
            else {
                continue;
            };
            let zip = self.download(artifact.id).await?;
            let results = results_json(&zip).map_err(|e| GithubError::Garbled {
                step: format!("read the artifact {} of run {}", query.artifact, run.id),
                url: self.url(&format!("actions/artifacts/{}/zip", artifact.id)),
                reason: e.to_string(),
            })?;
            return Ok(Baseline::Found {
                results,
                run_url: run.html_url.clone(),
            });
        }
        Ok(Baseline::NoneYet(if runs.workflow_runs.is_empty() {
            format!(
                "no successful run of {} on {} yet",
                query.workflow, query.branch
            )
        } else {
            format!(
                "no successful run of {} on {} kept the artifact {}",
                query.workflow, query.branch, query.artifact
            )
        }))
    }

    /// The artifact's zip: the API answers with a redirect to a signed link
    /// on another host, which is fetched without the token.
    async fn download(&self, artifact: u64) -> Result<Vec<u8>, GithubError> {
        let step = format!("download the artifact {artifact}");
        let api_url = self.url(&format!("actions/artifacts/{artifact}/zip"));
        let mut response = send(
            &step,
            &api_url,
            self.request(reqwest::Method::GET, &api_url),
        )
        .await?;
        let mut hops = 0;
        // The signed link is a credential of its own: errors name its host only.
        let mut shown = api_url.clone();
        while response.status().is_redirection() {
            hops += 1;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| response.url().join(v).ok());
            let Some(location) = location.filter(|_| hops <= MAX_REDIRECTS) else {
                return Err(GithubError::Garbled {
                    step,
                    url: shown,
                    reason: format!(
                        "a redirect without a usable Location, or more than {MAX_REDIRECTS}"
                    ),
                });
            };
            shown = format!(
                "the download link on {}",
                location.host_str().unwrap_or("another host")
            );
            // No Authorization header: the link carries its own signature.
            let request = self.client.get(location);
            response = send(&step, &shown, request).await?;
        }
        read_capped(&step, &shown, response, MAX_ZIP_BYTES).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_file_comes_from_the_workflow_ref() {
        assert_eq!(
            workflow_file("octo/app/.github/workflows/eval.yml@refs/pull/7/merge").as_deref(),
            Some("eval.yml")
        );
        assert_eq!(
            workflow_file("octo/app/.github/workflows/ci.yaml@refs/heads/main").as_deref(),
            Some("ci.yaml")
        );
        assert_eq!(workflow_file("eval.yml"), None);
        assert_eq!(workflow_file("octo/app/.github/workflows/@x"), None);
    }
}
