//! `agentci report comment RESULTS --pr N`: compare results with the
//! baseline and keep one comment on the pull request saying how it went
//! ([`crate::eval::report::comment`]), edited in place on every push.
//! Without `--pr` the comment is printed instead, to see it before posting.
//!
//! The comment is a report, not the verdict: a comment that cannot be
//! posted is one error line and exit 4 (a service could not be used), and
//! the workflow's own verdict comes from `report merge`.

use std::io::Write;

use crate::eval::Results;
use crate::eval::report::comment::{CommentLinks, MARKER, render};
use crate::github_api::comments::Posted;

use super::args::CommentArgs;
use super::baseline::{BaselineSource, github_from_env};
use super::report::{baseline_inputs, results_file};
use super::{CliError, Exit};

pub fn comment(args: CommentArgs) -> Result<Exit, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::CurrentDir)?;
    let file = results_file(&cwd.join(&args.results));
    let folder = file
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let out = folder.strip_prefix(&cwd).unwrap_or(&folder).to_path_buf();
    let (_, thresholds, baseline) =
        baseline_inputs(&args.baseline, &out).map_err(CliError::Input)?;
    let mut results = Results::read(&file).map_err(CliError::input)?;
    super::eval::compare_with(&mut results, baseline.as_ref(), &thresholds);
    let base = match &args.baseline.baseline {
        Some(BaselineSource::Github { branch }) => Some(branch.clone()),
        _ => std::env::var("GITHUB_BASE_REF")
            .ok()
            .filter(|b| !b.is_empty()),
    };
    let links = CommentLinks {
        report: args.report_url.clone(),
        base,
    };
    let body = render(&results, baseline.as_ref(), thresholds.confidence, &links);
    let Some(pr) = args.pr else {
        let _ = write!(std::io::stdout().lock(), "{body}");
        return Ok(Exit::Success);
    };
    let (api, _) = github_from_env("report comment --pr", false).map_err(CliError::Input)?;
    let posted = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?
        .block_on(api.upsert_comment(pr, MARKER, &body));
    let mut stderr = std::io::stderr();
    match posted {
        Ok(Posted::Updated { url }) => {
            let _ = writeln!(stderr, "agentci: updated the comment on #{pr}: {url}");
            Ok(Exit::Success)
        }
        Ok(Posted::Created { url }) => {
            let _ = writeln!(stderr, "agentci: commented on #{pr}: {url}");
            Ok(Exit::Success)
        }
        Err(e) => {
            let _ = writeln!(
                stderr,
                "agentci: error: report comment: {}; the evaluation's verdict is not affected \
                 (give the job `pull-requests: write`, or leave `comment` off)",
                crate::inert::line(&e.to_string())
            );
            Ok(Exit::Unavailable)
        }
    }
}
