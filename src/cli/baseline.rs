//! `--baseline FILE` or `--baseline github:BRANCH`: the results an
//! evaluation (or a merge of shards) is compared with.
//!
//! `github:BRANCH` reads the merged results of the latest successful run of
//! the same workflow on BRANCH through the GitHub REST API
//! ([`crate::github_api`]). Its three outcomes are kept apart on purpose:
//! settings that are missing (no token, not under Actions) are bad input and
//! stop before anything runs; no such run yet is a plain notice (a first run
//! compares with nothing and does not fail); an API or download failure is
//! one error line naming the step and the fix, after which the evaluation
//! runs and decides its verdict as if no baseline had been asked for, so the
//! results are still written. A baseline read from GitHub is kept as
//! `OUT/baseline.json`, for the steps after it (the pull request comment).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::eval::Results;
use crate::github_api::baseline::{Baseline, BaselineQuery, workflow_file};
use crate::github_api::{GithubApi, Token};

/// The artifact the eval workflow keeps the merged results of a push to the
/// default branch under, and that `github:BRANCH` looks for.
pub const BASELINE_ARTIFACT: &str = "agentci-eval-baseline";
/// Where a baseline read from GitHub is kept, in the results folder.
pub const BASELINE_FILE: &str = "baseline.json";

/// Where `--baseline` points, parsed once from the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineSource {
    File(PathBuf),
    /// The latest successful run of this workflow on the branch.
    Github {
        branch: String,
    },
}

impl FromStr for BaselineSource {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let Some(branch) = value.strip_prefix("github:") else {
            return Ok(BaselineSource::File(PathBuf::from(value)));
        };
        if branch.is_empty()
            || branch
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '~' | '^' | ':'))
        {
            return Err(format!(
                "`{value}` names no branch; write github:BRANCH, e.g. github:main or \
                 github:${{{{ github.base_ref }}}}"
            ));
        }
        Ok(BaselineSource::Github {
            branch: branch.to_string(),
        })
    }
}

/// The GitHub settings `github:BRANCH` needs, read from the environment the
/// runner sets.
struct GithubSettings {
    api: GithubApi,
    workflow: String,
}

/// The REST API client for the repository the runner names, for `what` (a
/// flag or command, for messages); `workflow` also needs
/// `GITHUB_WORKFLOW_REF`, whose workflow file it returns.
pub(super) fn github_from_env(
    what: &str,
    workflow: bool,
) -> Result<(GithubApi, Option<String>), Vec<String>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut missing = Vec::new();
    let token = var("GITHUB_TOKEN");
    if token.is_none() {
        missing.push("GITHUB_TOKEN (pass `env: GITHUB_TOKEN: ${{ github.token }}`)");
    }
    let repository = var("GITHUB_REPOSITORY");
    if repository.is_none() {
        missing.push("GITHUB_REPOSITORY (set by the runner: OWNER/NAME)");
    }
    let file = var("GITHUB_WORKFLOW_REF").and_then(|r| workflow_file(&r));
    if workflow && file.is_none() {
        missing
            .push("GITHUB_WORKFLOW_REF (set by the runner: OWNER/NAME/.github/workflows/FILE@REF)");
    }
    let (Some(token), Some(repository), true) = (token, repository, missing.is_empty()) else {
        return Err(vec![format!(
            "error: {what}: needs {}; it runs inside GitHub Actions",
            missing.join(", ")
        )]);
    };
    let api_url = var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_string());
    let api = GithubApi::new(&api_url, &repository, Token::new(token))
        .map_err(|e| vec![format!("error: {what}: {e}")])?;
    Ok((api, file))
}

fn github_settings(flag: &str) -> Result<GithubSettings, Vec<String>> {
    let what = format!("--baseline {flag}");
    match github_from_env(&what, true) {
        Ok((api, Some(workflow))) => Ok(GithubSettings { api, workflow }),
        Ok((_, None)) => Err(vec![format!("error: {what}: needs GITHUB_WORKFLOW_REF")]),
        Err(mut problems) => {
            for p in &mut problems {
                p.push_str("; elsewhere give --baseline FILE");
            }
            Err(problems)
        }
    }
}

/// The baseline results, if any: a file is read (and must be valid); a
/// GitHub branch is looked up as the module says. `out_dir` is where a
/// baseline from GitHub is kept.
pub(super) fn read_baseline(
    source: Option<&BaselineSource>,
    cwd: &Path,
    out_dir: &Path,
) -> Result<Option<Results>, Vec<String>> {
    match source {
        None => Ok(None),
        Some(BaselineSource::File(path)) => Results::read(&cwd.join(path))
            .map(Some)
            .map_err(|e| vec![format!("error: --baseline: {e}")]),
        Some(BaselineSource::Github { branch }) => {
            let flag = format!("github:{branch}");
            let settings = github_settings(&flag)?;
            Ok(from_github(&settings, branch, &flag, out_dir))
        }
    }
}

fn from_github(
    settings: &GithubSettings,
    branch: &str,
    flag: &str,
    out_dir: &Path,
) -> Option<Results> {
    let query = BaselineQuery {
        workflow: settings.workflow.clone(),
        branch: branch.to_string(),
        artifact: BASELINE_ARTIFACT.to_string(),
    };
    let found = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .and_then(|runtime| {
            runtime
                .block_on(settings.api.baseline(&query))
                .map_err(|e| e.to_string())
        });
    let failed = |why: String| {
        let message = format!(
            "--baseline {flag}: cannot read the baseline: {why}; nothing is compared and the \
             evaluation's verdict is its own (fix the step named, or run without --baseline)"
        );
        say("error", &message);
        None
    };
    match found {
        Err(why) => failed(why),
        Ok(Baseline::NoneYet(why)) => {
            say(
                "notice",
                &format!("no baseline yet: first run on {branch}, nothing compared ({why})"),
            );
            None
        }
        Ok(Baseline::Found { results, run_url }) => {
            let kept = out_dir.join(BASELINE_FILE);
            let written = std::fs::create_dir_all(out_dir)
                // Another run's results, written masked by that run.
                .and_then(|()| {
                    let results = crate::redact::Masked::from_masked_parts(&results[..]);
                    crate::safe_file::replace(&kept, &results, None)
                });
            if let Err(e) = written {
                return failed(format!("cannot keep it as {}: {e}", kept.display()));
            }
            match Results::read(&kept) {
                Ok(baseline) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "agentci: baseline: the merged results of {run_url} ({} on {branch})",
                        settings.workflow
                    );
                    Some(baseline)
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&kept);
                    failed(e.to_string())
                }
            }
        }
    }
}

/// One line on stderr, and under GitHub Actions an annotation of the same
/// level so the pull request shows it too.
fn say(level: &str, message: &str) {
    let line = crate::inert::line(message);
    let _ = writeln!(std::io::stderr(), "agentci: {level}: {line}");
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        let annotation = crate::sink::annotation(level, "", 0, Some("agentci baseline"), &line);
        let _ = writeln!(std::io::stdout().lock(), "{annotation}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_branches_and_files_parse() {
        assert_eq!(
            "github:main".parse::<BaselineSource>(),
            Ok(BaselineSource::Github {
                branch: "main".into()
            })
        );
        assert_eq!(
            "github:release/1.x".parse::<BaselineSource>(),
            Ok(BaselineSource::Github {
                branch: "release/1.x".into()
            })
        );
        assert_eq!(
            "old/results.json".parse::<BaselineSource>(),
            Ok(BaselineSource::File("old/results.json".into()))
        );
        assert!("github:".parse::<BaselineSource>().is_err());
        assert!("github:a b".parse::<BaselineSource>().is_err());
    }
}
