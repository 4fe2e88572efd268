//! Loading a job: read the file, parse it into the raw structs, apply the
//! command-line overrides, and validate everything into a [`JobSpec`].
//!
//! An unknown key or a wrong-typed value is reported and its entry set
//! aside (`super::recover`), and the semantic checks run on the rest, so
//! one run of `agentci validate` shows every problem; only broken YAML
//! syntax stops the parse, with what it usually means
//! (`super::yaml_syntax`). This module does not look for the skill; see
//! [`crate::skills::discover`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::check::Checker;
use super::diagnostic::{Diagnostic, Pos, Reporter, has_errors};
use super::overrides::{self, Overrides};
use super::raw::RawJob;
use super::recover;
use super::vars::parse_var_flag;
use super::{JobSpec, ProviderKind};
use crate::tools::workspace::normalize;

/// Job files larger than this are refused before parsing.
const MAX_JOB_BYTES: u64 = 1024 * 1024;

/// What the command line adds to a job file. Relative paths are resolved
/// against `cwd`.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// The directory relative paths on the command line (and the job's
    /// `workspace`) are resolved against.
    pub cwd: PathBuf,
    /// Raw `--var K=V` flags; they override the job's `vars`.
    pub vars: Vec<String>,
    /// `--workspace DIR`, overriding the job's `workspace`.
    pub workspace: Option<PathBuf>,
    /// `--skills-path DIR` flags; checked to exist here, searched by
    /// [`crate::skills::skill_search_paths`].
    pub skills_path: Vec<PathBuf>,
    /// `--model PROVIDER:NAME` (`openai:gpt-4.1-mini`, `anthropic:claude-sonnet-4-5`).
    pub model: Option<String>,
    /// `--base-url URL`.
    pub base_url: Option<String>,
    /// `--replay CASSETTE`: forces the replay provider with that cassette.
    pub replay: Option<PathBuf>,
    /// `--replay-match strict|sequence`, over the job's `model.replay.match`.
    pub replay_match: Option<String>,
    /// `--reasoning-effort minimal|low|medium|high`, over `model.reasoning.effort`.
    pub reasoning_effort: Option<String>,
    /// `--thinking-budget N`, over `model.reasoning.budget_tokens`.
    pub thinking_budget: Option<String>,
    /// `--goal`, `--skill`, `--check`, the budget flags, or an eval case's
    /// goal, vars and budget: written into the job before it is checked.
    pub overrides: Overrides,
    /// A `--var` the job neither defines nor uses is an error (for `run`
    /// and `validate`; an eval case's vars may serve only the case's goal).
    pub reject_unused_vars: bool,
}

/// The job "file" of a run made from flags alone (`agentci run --goal …`).
pub const COMMAND_LINE_JOB: &str = "(command line)";

/// A loaded job with what `agentci validate` needs beyond the spec.
#[derive(Clone, Debug)]
pub struct LoadedJob {
    pub job: JobSpec,
    /// Problems that do not stop the job.
    pub warnings: Vec<Diagnostic>,
    /// Line and column of the job's `skill` value, to report a missing skill
    /// there; `(0, 0)` when the skill came from `--skill`.
    pub skill_position: (u32, u32),
    /// The file the skill was named in, or `--skill`.
    pub skill_file: PathBuf,
}

/// The other flags' values after parsing, applied over the job file.
#[derive(Default)]
pub(super) struct FlagValues {
    pub vars: BTreeMap<String, String>,
    pub model: Option<(ProviderKind, String)>,
    pub base_url: Option<String>,
    pub replay: Option<PathBuf>,
    pub replay_match: Option<crate::provider::replay::ReplayMatch>,
    pub workspace: Option<PathBuf>,
    pub reasoning_effort: Option<crate::provider::reasoning::Effort>,
    pub thinking_budget: Option<u32>,
}

/// Loads and validates a job file. On success returns the spec and its
/// warnings; on failure every problem found (errors and warnings).
pub fn load_job(
    path: &Path,
    opts: &LoadOptions,
) -> Result<(JobSpec, Vec<Diagnostic>), Vec<Diagnostic>> {
    load_job_detailed(path, opts).map(|loaded| (loaded.job, loaded.warnings))
}

/// [`load_job`], also returning where the `skill` value is.
pub fn load_job_detailed(path: &Path, opts: &LoadOptions) -> Result<LoadedJob, Vec<Diagnostic>> {
    let (job, diagnostics) = load_job_with_problems(path, opts);
    match job {
        Some(loaded) if !has_errors(&diagnostics) => Ok(LoadedJob {
            warnings: diagnostics,
            ..loaded
        }),
        _ => Err(diagnostics),
    }
}

/// For `agentci validate`: every problem found, and the job as far as it
/// could be built even when some of its keys are wrong, so that its skill
/// can still be looked for and reported in the same pass. `None` when a
/// structural problem or a missing `name`, `skill`, `goal`, model or
/// workspace left nothing to build. The job's `warnings` are empty; all
/// problems are in the returned list.
pub fn load_job_with_problems(
    path: &Path,
    opts: &LoadOptions,
) -> (Option<LoadedJob>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let values = parse_flags(opts, &mut diagnostics);
    let from_flags = path == Path::new(COMMAND_LINE_JOB);
    let source = if from_flags {
        let missing = missing_job_flags(opts);
        if !missing.is_empty() {
            diagnostics.extend(missing);
            return (None, diagnostics);
        }
        "{}".to_string()
    } else {
        match read_source(path) {
            Ok(source) => source,
            Err(problem) => {
                diagnostics.push(problem);
                return (None, diagnostics);
            }
        }
    };
    let mut reporter = Reporter::new(path, &source, 0);
    let Some((mut raw, blanked)) = parse_raw(&source, &mut reporter) else {
        diagnostics.extend(reporter.diagnostics);
        return (None, diagnostics);
    };
    if opts.reject_unused_vars {
        diagnostics.extend(unused_vars(&values, &raw, &source, &opts.overrides));
    }
    let mut sources = overrides::merge(&mut raw, &opts.overrides, &opts.cwd);
    if from_flags {
        if opts.overrides.skill.is_none() {
            let note = overrides::ad_hoc_defaults(&mut raw, &opts.overrides, &mut sources);
            diagnostics.push(Diagnostic::warning("--skill", 0, 0, note));
        } else if let Some(note) = overrides::allow_looking(&mut raw, &opts.overrides, &mut sources)
        {
            diagnostics.push(Diagnostic::warning("--allow", 0, 0, note));
        }
        raw.name = Some(Spanned::new(
            "command-line".to_string(),
            serde_saphyr::Location::UNKNOWN,
            serde_saphyr::Location::UNKNOWN,
        ));
    }
    let job_dir = normalize(&opts.cwd.join(path))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| opts.cwd.clone());
    reporter.sources = sources;
    let checker = Checker {
        r: reporter,
        cwd: &opts.cwd,
        job_dir: &job_dir,
    };
    let (job, skill_position, mut file_diagnostics) = checker.check(path, raw, values);
    recover::drop_consequences(&mut file_diagnostics, &blanked);
    diagnostics.extend(file_diagnostics);
    let from_skill_flag = skill_position.source != 0;
    let loaded = job.map(|job| LoadedJob {
        job,
        warnings: Vec::new(),
        skill_position: if from_skill_flag {
            (0, 0)
        } else {
            (skill_position.line, skill_position.column)
        },
        skill_file: if from_skill_flag {
            PathBuf::from("--skill")
        } else {
            path.to_path_buf()
        },
    });
    (loaded, diagnostics)
}

/// A run without a job file needs a goal and a model from flags (without
/// `--skill` it gets the built-in one).
fn missing_job_flags(opts: &LoadOptions) -> Vec<Diagnostic> {
    let mut missing = Vec::new();
    if opts.overrides.goal.is_none() {
        missing.push(Diagnostic::flag(
            "--goal",
            "give a job file, or the goal with --goal TEXT (--goal - reads it from stdin)",
        ));
    }
    if opts.model.is_none() && opts.replay.is_none() {
        missing.push(Diagnostic::flag(
            "--model",
            "a run without a job file needs --model PROVIDER:NAME, e.g. openai:gpt-4.1-mini",
        ));
    }
    missing
}

/// `--var` flags naming a var the job neither defines in `vars` nor uses as
/// `${{ vars.NAME }}`: most likely a misspelling, which would otherwise be
/// ignored without a word.
fn unused_vars(
    values: &FlagValues,
    raw: &RawJob,
    source: &str,
    overrides: &Overrides,
) -> Vec<Diagnostic> {
    let mut known: Vec<String> = raw.vars.keys().cloned().collect();
    for text in std::iter::once(source).chain(overrides.texts()) {
        for name in super::vars::referenced(text) {
            if !known.contains(&name) {
                known.push(name);
            }
        }
    }
    values
        .vars
        .keys()
        .filter(|name| !known.contains(name))
        .map(|name| {
            let has = if known.is_empty() {
                "the job has no vars".to_string()
            } else {
                format!("the job's vars: {}", known.join(", "))
            };
            let hint = super::suggest::did_you_mean(name, known.iter().map(String::as_str));
            Diagnostic::flag(
                "--var",
                format!("the job does not use a var `{name}`{hint} ({has})"),
            )
        })
        .collect()
}

/// Parses the YAML into the raw structs. A structural error (an unknown
/// key, a wrong type) is reported, its entry blanked out, and the parse tried
/// again, so the checks that follow still see the rest of the file; a
/// syntax error ends the parse.
/// Returns the raw job and the known keys blanked for a wrong value.
fn parse_raw(source: &str, reporter: &mut Reporter<'_>) -> Option<(RawJob, Vec<String>)> {
    if source.trim().is_empty() {
        reporter.error(
            reporter.start(),
            "the job file is empty; expected a mapping with at least `name`, `skill` and `goal`",
        );
        return None;
    }
    recover::parse_recovering::<RawJob>(source, reporter)
}

/// Reads a file as UTF-8 text, refusing huge files.
pub(crate) fn read_source(path: &Path) -> Result<String, Diagnostic> {
    let fail = |message: String| Diagnostic::error(path, 0, 0, message);
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read the file: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_JOB_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read the file: {e}")))?;
    if bytes.len() as u64 > MAX_JOB_BYTES {
        return Err(fail(format!(
            "the file is larger than {} KiB; job files and SKILL.md must be small",
            MAX_JOB_BYTES / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let before = String::from_utf8_lossy(&e.as_bytes()[..bad]);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        Diagnostic::error(
            path,
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
            format!(
                "the file is not valid UTF-8: byte 0x{:02x} here starts no character; save it as UTF-8",
                e.as_bytes()[bad]
            ),
        )
    })
}

/// Parses the command-line overrides, reporting bad flags as diagnostics.
fn parse_flags(opts: &LoadOptions, diagnostics: &mut Vec<Diagnostic>) -> FlagValues {
    let mut overrides = FlagValues {
        // An eval case's vars; `--var` flags beat them.
        vars: opts.overrides.vars.clone(),
        ..FlagValues::default()
    };
    for flag in &opts.vars {
        match parse_var_flag(flag) {
            Ok((name, value)) => {
                overrides.vars.insert(name, value);
            }
            Err(e) => diagnostics.push(Diagnostic::flag("--var", e.to_string())),
        }
    }
    if let Some(model) = &opts.model {
        match parse_model_flag(model) {
            Ok(parsed) => overrides.model = Some(parsed),
            Err(e) => diagnostics.push(Diagnostic::flag("--model", e.to_string())),
        }
    }
    if let Some(url) = &opts.base_url {
        match check_base_url(url) {
            Ok(()) => overrides.base_url = Some(url.clone()),
            Err(e) => diagnostics.push(Diagnostic::flag("--base-url", e.to_string())),
        }
    }
    if let Some(cassette) = &opts.replay {
        let cassette = normalize(&opts.cwd.join(cassette));
        if cassette.is_file() {
            overrides.replay = Some(cassette);
        } else {
            diagnostics.push(Diagnostic::flag(
                "--replay",
                format!("cassette {} does not exist", cassette.display()),
            ));
        }
    }
    if let Some(mode) = &opts.replay_match {
        match crate::provider::replay::ReplayMatch::parse(mode) {
            Some(parsed) => overrides.replay_match = Some(parsed),
            None => diagnostics.push(Diagnostic::flag(
                "--replay-match",
                format!("unknown replay match `{mode}`; expected `strict` or `sequence`"),
            )),
        }
    }
    if let Some(effort) = &opts.reasoning_effort {
        match crate::provider::reasoning::Effort::parse(effort.trim()) {
            Some(parsed) => overrides.reasoning_effort = Some(parsed),
            None => diagnostics.push(Diagnostic::flag(
                "--reasoning-effort",
                format!("unknown effort `{effort}`; expected minimal, low, medium or high"),
            )),
        }
    }
    if let Some(budget) = &opts.thinking_budget {
        let min = super::check::MIN_BUDGET_TOKENS;
        match budget.trim().parse::<u32>() {
            Ok(n) if u64::from(n) >= min => overrides.thinking_budget = Some(n),
            _ => diagnostics.push(Diagnostic::flag(
                "--thinking-budget",
                format!(
                    "`{budget}` is not a thinking budget; expected a whole number of tokens, \
                     at least {min}, e.g. 8000"
                ),
            )),
        }
    }
    if let Some(workspace) = &opts.workspace {
        match existing_dir(&opts.cwd.join(workspace)) {
            Ok(dir) => overrides.workspace = Some(dir),
            Err(e) => diagnostics.push(Diagnostic::flag("--workspace", e.to_string())),
        }
    }
    for dir in &opts.skills_path {
        if !opts.cwd.join(dir).is_dir() {
            diagnostics.push(Diagnostic::flag(
                "--skills-path",
                format!("{} is not a directory", dir.display()),
            ));
        }
    }
    overrides
}

/// A model, server or folder given on the command line (or in a job or
/// suite key that takes the same text) that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("`{flag}` is not of the form PROVIDER:NAME, e.g. openai:gpt-4.1-mini")]
    NotProviderName { flag: String },
    #[error("use --replay CASSETTE to replay a recorded session")]
    ReplayProvider,
    #[error(
        "unknown provider `{provider}` in `{flag}`; expected `openai` (any \
         OpenAI-compatible server; set --base-url for others), `openai-responses`, \
         `azure-openai`, `anthropic`, `bedrock` or `vertex`"
    )]
    UnknownProvider { provider: String, flag: String },
    #[error("`{flag}` has no model name after `{provider}:`")]
    NoModelName { flag: String, provider: String },
    #[error("base URL `{url}` must start with http:// or https://, e.g. http://127.0.0.1:11434/v1")]
    UrlScheme { url: String },
    #[error("base URL `{url}` has no host, e.g. http://127.0.0.1:11434/v1")]
    UrlHost { url: String },
    #[error("base URL `{url}` is not a valid URL ({reason}), e.g. http://127.0.0.1:11434/v1")]
    Url { url: String, reason: String },
    #[error("{} is not a directory; create it or give another", .path.display())]
    NotADirectory { path: PathBuf },
}

/// `openai:gpt-4.1-mini` → (OpenAi, "gpt-4.1-mini"). The name may hold `:`.
pub(crate) fn parse_model_flag(flag: &str) -> Result<(ProviderKind, String), ValueError> {
    let Some((provider, name)) = flag.split_once(':') else {
        return Err(ValueError::NotProviderName {
            flag: flag.to_string(),
        });
    };
    let kind = match ProviderKind::parse(provider) {
        Some(ProviderKind::Replay) => return Err(ValueError::ReplayProvider),
        Some(kind) => kind,
        None => {
            return Err(ValueError::UnknownProvider {
                provider: provider.to_string(),
                flag: flag.to_string(),
            });
        }
    };
    if name.trim().is_empty() {
        return Err(ValueError::NoModelName {
            flag: flag.to_string(),
            provider: provider.to_string(),
        });
    }
    Ok((kind, name.trim().to_string()))
}

pub(crate) fn check_base_url(url: &str) -> Result<(), ValueError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ValueError::UrlScheme {
            url: url.to_string(),
        });
    }
    // What the HTTP client will parse at the first request, checked now.
    match reqwest::Url::parse(url) {
        Ok(parsed) if parsed.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        Ok(_) => Err(ValueError::UrlHost {
            url: url.to_string(),
        }),
        Err(e) => Err(ValueError::Url {
            url: url.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// An existing directory, absolute and with symlinks resolved.
pub(super) fn existing_dir(path: &Path) -> Result<PathBuf, ValueError> {
    let normalized = normalize(path);
    if !normalized.is_dir() {
        return Err(ValueError::NotADirectory { path: normalized });
    }
    Ok(std::fs::canonicalize(&normalized).unwrap_or(normalized))
}

/// The position of a spanned value.
pub(super) fn pos_of<T>(reporter: &Reporter<'_>, value: &Spanned<T>) -> Pos {
    reporter.pos(&value.referenced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_flags() {
        assert_eq!(
            parse_model_flag("openai:llama3:8b").unwrap(),
            (ProviderKind::OpenAi, "llama3:8b".to_string())
        );
        assert!(
            parse_model_flag("gpt-4")
                .unwrap_err()
                .to_string()
                .contains("PROVIDER:NAME")
        );
        assert_eq!(
            parse_model_flag("anthropic:claude-sonnet-4-5").unwrap(),
            (ProviderKind::Anthropic, "claude-sonnet-4-5".to_string())
        );
        assert!(
            parse_model_flag("gemini:x")
                .unwrap_err()
                .to_string()
                .contains("unknown provider")
        );
        assert!(
            parse_model_flag("anthropic:")
                .unwrap_err()
                .to_string()
                .contains("no model name")
        );
        assert!(
            parse_model_flag("openai:")
                .unwrap_err()
                .to_string()
                .contains("no model name")
        );
    }
}
