//! Which attempts an earlier run into the same `--out` already finished may
//! be kept: one whose fingerprint (see [`super::fingerprint`]) is what this
//! run's would be, unless `--fresh` or `--retry-errors` (for errors) says
//! otherwise. Everything else runs, and an attempt that ran before says why
//! it runs again.
//!
//! Computing a fingerprint loads the job with the case's overrides the way
//! the attempt will (against the fixture folder instead of its copy), to
//! know the model settings and the skill folders it uses. Fixtures, skill
//! folders and job files are hashed once per evaluation, however many cases
//! share them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::attempt::{AttemptSettings, prepare, replay_cassette};
use super::fingerprint::{
    self, AGENTCI, CASE, CASSETTE, FIXTURE, Fingerprint, JOB, MODEL, RESULT_SCHEMA,
};
use super::results::{AttemptResult, Outcome};
use super::suite::{CaseSpec, Fixture, SuiteSpec};

/// What to do with one attempt.
#[derive(Debug)]
pub enum Decision {
    /// An earlier run finished it with the same fingerprint.
    Keep(Box<AttemptResult>),
    /// Run it; `rerun` says why when an earlier run had finished it.
    Run { rerun: Option<String> },
}

/// Keep or run the attempt an earlier run may have saved to `saved`
/// (its `attempt.json`), now fingerprinted as `now`.
pub fn decide(saved: &Path, now: &Fingerprint, retry_errors: bool, fresh: bool) -> Decision {
    let Some(before) = earlier(saved) else {
        return Decision::Run { rerun: None };
    };
    let why = if fresh {
        "--fresh".to_string()
    } else if before.fingerprint != now.total {
        fingerprint::rerun_reason(&before.fingerprint_parts, &now.parts)
    } else if retry_errors && before.outcome == Outcome::Error {
        "--retry-errors".to_string()
    } else {
        return Decision::Keep(Box::new(before));
    };
    Decision::Run { rerun: Some(why) }
}

fn earlier(saved: &Path) -> Option<AttemptResult> {
    let text = std::fs::read_to_string(saved).ok()?;
    serde_json::from_str(&text).ok()
}

/// Hashes already taken during this evaluation, by what they cover.
#[derive(Debug, Default)]
pub struct Hashes {
    files: HashMap<PathBuf, String>,
    fixtures: HashMap<String, String>,
    skills: HashMap<PathBuf, BTreeMap<String, String>>,
}

impl Hashes {
    /// Attempt `n` of `case`, with `settings` (a compared model already in
    /// them); `out_dir` is left out of a fixture that holds it.
    pub fn fingerprint(
        &mut self,
        suite: &SuiteSpec,
        case: &CaseSpec,
        n: u32,
        settings: &AttemptSettings,
        out_dir: &Path,
    ) -> Fingerprint {
        let mut parts = BTreeMap::new();
        let version = format!("agentci {}", env!("CARGO_PKG_VERSION"));
        parts.insert(AGENTCI.to_string(), fingerprint::text_hash(&version));
        parts.insert(JOB.to_string(), self.file(&suite.job));
        parts.insert(CASE.to_string(), fingerprint::text_hash(&case_text(case)));
        parts.insert(FIXTURE.to_string(), self.fixture(&case.fixture, out_dir));
        let cassette = replay_cassette(case, settings, n);
        let cassette_hash = match &cassette {
            Some(path) => self.file(path),
            None => fingerprint::text_hash(if settings.record { "record" } else { "live" }),
        };
        parts.insert(CASSETTE.to_string(), cassette_hash);
        if let Some(schema) = &settings.result_schema {
            parts.insert(RESULT_SCHEMA.to_string(), self.file(schema));
        }
        let workspace = match &case.fixture {
            Fixture::Dir(dir) => dir.clone(),
            Fixture::Git { .. } => settings.temp_dir.clone(),
        };
        let mut model = format!(
            "--model {:?}\n--base-url {:?}\n--replay-match {:?}\n--record {}\ncase {:?}\n",
            settings.model, settings.base_url, settings.replay_match, settings.record, case.model
        );
        match prepare(suite, case, n, settings, &workspace) {
            Ok(prepared) => {
                model.push_str(&format!("{:?}", prepared.job.model));
                for skill in std::iter::once(&prepared.skill).chain(&prepared.further_skills) {
                    parts.extend(self.skill(&skill.dir, &settings.cwd));
                }
            }
            // The attempt will fail the same way; the text tells failures apart.
            Err(problem) => model.push_str(&format!("cannot load the job: {problem}")),
        }
        parts.insert(MODEL.to_string(), fingerprint::text_hash(&model));
        Fingerprint::of(parts)
    }

    fn file(&mut self, path: &Path) -> String {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| fingerprint::file_hash(path))
            .clone()
    }

    fn fixture(&mut self, fixture: &Fixture, out_dir: &Path) -> String {
        self.fixtures
            .entry(format!("{fixture:?}"))
            .or_insert_with(|| fingerprint::fixture_hash(fixture, out_dir))
            .clone()
    }

    fn skill(&mut self, dir: &Path, cwd: &Path) -> BTreeMap<String, String> {
        self.skills
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                let shown = |path: &Path| shown_under(path, cwd);
                fingerprint::skill_parts(dir, &shown)
            })
            .clone()
    }
}

/// The case as defined (not its position in the suite file).
fn case_text(case: &CaseSpec) -> String {
    let assertions: Vec<String> = case.assertions.iter().map(|a| a.identity()).collect();
    format!(
        "{}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        case.name,
        case.fixture,
        case.goal,
        case.vars,
        case.model,
        case.budget,
        case.cassettes,
        case.min_pass_rate,
        assertions,
    )
}

/// `path` relative to the working folder when inside it (also when one of
/// them was reached through a symlink), as written otherwise.
fn shown_under(path: &Path, cwd: &Path) -> String {
    if path.starts_with(cwd) {
        return fingerprint::shown_under(path, cwd);
    }
    match std::fs::canonicalize(cwd) {
        Ok(real) => fingerprint::shown_under(path, &real),
        Err(_) => path.display().to_string(),
    }
}
