//! What an attempt's outcome depends on, hashed, so that a run into an
//! existing `--out` keeps an earlier attempt only when none of it changed:
//! the job file, every file of the skill folders the job uses, the tree the
//! attempt copies from its fixture, the replayed cassette, the model and its
//! settings after overrides (`--model`, `--base-url`, the case's `model:`),
//! the case (goal, vars, budget, assertions), `--result-schema` and
//! agentci's version.
//!
//! Each of those is a *part* with its own SHA-256; the fingerprint is the
//! hash of the parts. Results keep the parts, so when an attempt is re-run
//! [`rerun_reason`] can say which part changed ("the skill changed
//! (skills/fix/SKILL.md)") instead of only that something did. Reading
//! files is streaming; nothing here decides what to keep or prints.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::suite::Fixture;
use super::walk::{EntryKind, walk};

/// Bumped when what a part covers changes: every earlier result re-runs.
const DESCRIPTION_VERSION: u32 = 2;

/// Part names; a skill file's part is [`SKILL`] followed by its path.
pub const AGENTCI: &str = "agentci";
pub const JOB: &str = "job";
pub const CASE: &str = "case";
pub const MODEL: &str = "model";
pub const CASSETTE: &str = "cassette";
pub const RESULT_SCHEMA: &str = "result_schema";
pub const FIXTURE: &str = "fixture";
pub const SKILL: &str = "skill ";

/// An attempt's fingerprint: the hash of its parts, and the parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    pub total: String,
    /// Part name → SHA-256 in hex.
    pub parts: BTreeMap<String, String>,
}

impl Fingerprint {
    /// The fingerprint of `parts`, in the canonical order of their names.
    pub fn of(parts: BTreeMap<String, String>) -> Fingerprint {
        let mut hasher = Sha256::new();
        hasher.update(format!("agentci eval fingerprint v{DESCRIPTION_VERSION}\n"));
        for (name, hash) in &parts {
            hasher.update(format!("{}\n{name}\n{hash}\n", name.len()));
        }
        let total = hex(&hasher.finalize());
        Fingerprint { total, parts }
    }
}

/// The SHA-256 of `text`, in hex: the part of something described in words.
pub fn text_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// A file's bytes, hashed as they stream; a file that cannot be read hashes
/// as its error, so it differs from any content and from a readable file.
pub fn file_hash(path: &Path) -> String {
    let mut hasher = Sha256::new();
    match stream_into(path, &mut hasher) {
        Ok(()) => hex(&hasher.finalize()),
        Err(e) => text_hash(&format!("unreadable: {}", e.kind())),
    }
}

fn stream_into(path: &Path, hasher: &mut Sha256) -> std::io::Result<()> {
    let mut file = std::fs::File::open(path)?;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(());
        }
        hasher.update(&buffer[..read]);
    }
}

/// One part per file of the skill folder `dir`, named [`SKILL`] + the file's
/// path as `shown` makes it. Symlinks count by their target's text and are
/// not followed; `.git` is skipped.
pub fn skill_parts(dir: &Path, shown: &dyn Fn(&Path) -> String) -> BTreeMap<String, String> {
    let mut parts = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            parts.insert(
                format!("{SKILL}{}", shown(&folder)),
                text_hash("unreadable"),
            );
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    stack.push(path);
                }
                continue;
            }
            let hash = if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                text_hash(&format!("symlink {}", target.display()))
            } else {
                file_hash(&path)
            };
            parts.insert(format!("{SKILL}{}", shown(&path)), hash);
        }
    }
    parts
}

/// The tree an attempt copies from `fixture`, hashed: every file's relative
/// path and content in walk order (what `.gitignore` ignores, `.git` and
/// `.agentci` left out, as the copy does), symlinks by their target's text.
/// `skip` (the results folder) is left out when it lies inside the fixture.
/// A git fixture is its revision resolved to a commit when the repository
/// is local, else its address and revision as written.
pub fn fixture_hash(fixture: &Fixture, skip: &Path) -> String {
    match fixture {
        Fixture::Dir(dir) => tree_hash(dir, skip),
        Fixture::Git { repo, rev } => {
            let commit = git2::Repository::open(repo).ok().and_then(|r| {
                let commit = r.revparse_single(rev).ok()?.peel_to_commit().ok()?;
                Some(commit.id().to_string())
            });
            text_hash(&format!("git {repo} {rev} {commit:?}"))
        }
    }
}

fn tree_hash(dir: &Path, skip: &Path) -> String {
    let mut hasher = Sha256::new();
    for entry in walk(dir) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                hasher.update(format!("unreadable {e}\n"));
                continue;
            }
        };
        if entry.path.starts_with(skip) {
            continue;
        }
        let name = entry.relative.to_string_lossy();
        match entry.kind {
            EntryKind::Dir => hasher.update(format!("dir {}\n{name}\n", name.len())),
            EntryKind::File => {
                hasher.update(format!("file {}\n{name}\n", name.len()));
                hasher.update(file_hash(&entry.path));
            }
            EntryKind::Symlink => {
                let target = std::fs::read_link(&entry.path).unwrap_or_default();
                hasher.update(format!("symlink {}\n{name}\n", name.len()));
                hasher.update(text_hash(&target.to_string_lossy()));
            }
        }
    }
    hex(&hasher.finalize())
}

/// Why an attempt with `before`'s parts runs again now that they are
/// `now`: the parts that differ, in words. Results from before parts were
/// kept say so.
pub fn rerun_reason(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> String {
    if before.is_empty() {
        return "the results came from an older agentci".to_string();
    }
    let differs = |name: &str| before.get(name) != now.get(name);
    let mut reasons = Vec::new();
    let skills: Vec<&str> = before
        .keys()
        .chain(now.keys().filter(|k| !before.contains_key(*k)))
        .filter(|name| name.starts_with(SKILL) && differs(name))
        .filter_map(|name| name.strip_prefix(SKILL))
        .collect();
    if !skills.is_empty() {
        reasons.push(format!("the skill changed ({})", listed(&skills)));
    }
    for (part, words) in [
        (JOB, "the job changed"),
        (CASE, "the case changed"),
        (FIXTURE, "the fixture changed"),
        (CASSETTE, "the cassette changed"),
        (MODEL, "the model settings changed"),
        (RESULT_SCHEMA, "--result-schema changed"),
        (AGENTCI, "agentci's version changed"),
    ] {
        if differs(part) {
            reasons.push(words.to_string());
        }
    }
    if reasons.is_empty() {
        // Parts this version does not know: a newer agentci wrote them.
        reasons.push("the results came from another agentci".to_string());
    }
    reasons.join("; ")
}

/// At most three names, then how many more.
fn listed(names: &[&str]) -> String {
    let mut text = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
    if names.len() > 3 {
        text.push_str(&format!(" and {} more", names.len() - 3));
    }
    text
}

/// `path` relative to `base` when it lies inside it, as written otherwise.
pub fn shown_under(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn the_total_follows_every_part() {
        let a = Fingerprint::of(parts(&[(JOB, "1"), (MODEL, "2")]));
        let b = Fingerprint::of(parts(&[(JOB, "1"), (MODEL, "3")]));
        assert_ne!(a.total, b.total);
        assert_eq!(a, Fingerprint::of(parts(&[(MODEL, "2"), (JOB, "1")])));
    }

    #[test]
    fn the_reason_names_the_changed_skill_files_and_parts() {
        let before = parts(&[("skill a/SKILL.md", "1"), (MODEL, "1"), (JOB, "1")]);
        let now = parts(&[
            ("skill a/SKILL.md", "2"),
            ("skill a/ref.md", "1"),
            (MODEL, "2"),
            (JOB, "1"),
        ]);
        assert_eq!(
            rerun_reason(&before, &now),
            "the skill changed (a/SKILL.md, a/ref.md); the model settings changed"
        );
        assert_eq!(
            rerun_reason(&BTreeMap::new(), &now),
            "the results came from an older agentci"
        );
    }

    #[test]
    fn a_fixture_hash_follows_content_and_skips_the_results_folder() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "one").unwrap_or_else(|e| panic!("{e}"));
        let out = root.join("out");
        let fixture = Fixture::Dir(root.to_path_buf());
        let first = fixture_hash(&fixture, &out);
        std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(out.join("attempt.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fixture_hash(&fixture, &out), first);
        std::fs::write(root.join("a.txt"), "two").unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(fixture_hash(&fixture, &out), first);
    }
}
