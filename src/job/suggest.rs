//! "Did you mean": the known name closest to a misspelled one, when one is
//! close enough to be a likely typo. Used for job keys, tools, skills, vars
//! and assertion kinds; deciding what is unknown is the caller's job (for
//! skills, the folders that were searched are listed here).

/// ` (did you mean `X`?)` for the candidate closest to `name`, or "" when
/// none is close (edit distance, a swap of two letters counting once, at most a third of the name, at least 1;
/// or the same name in another case).
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The candidate closest to `name`, when close enough.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (strsim::osa_distance(&lower, &c.to_lowercase()), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// ` (agentci calls it `exec`)` for another agent's name of a builtin tool
/// (`bash`, `Bash`, `shell`), else ` (did you mean `X`?)` for a close
/// builtin name, else "".
pub fn unknown_tool_hint(name: &str) -> String {
    use crate::tools::catalog;
    match catalog::agentci_name_for(name) {
        Some(ours) => format!(" (agentci calls it `{ours}`)"),
        None => did_you_mean(name, catalog::names()),
    }
}

/// ` (did you mean `X`?)` when a skill with a name close to `name` is in
/// one of the folders that were searched for it.
pub fn similar_skill(name: &str, searched: &[std::path::PathBuf]) -> String {
    let found: Vec<String> = searched
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .filter(|entry| entry.path().join("SKILL.md").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    did_you_mean(name, found.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_close_names() {
        assert_eq!(
            closest("crate_nme", ["crate_name", "mode"]),
            Some("crate_name")
        );
        assert_eq!(closest("Exec", ["exec", "edit"]), Some("exec"));
        assert_eq!(closest("zzz", ["crate_name", "mode"]), None);
        assert_eq!(did_you_mean("rea", ["read"]), " (did you mean `read`?)");
    }
}
