//! The README documents every flag: each long flag of every `agentci`
//! command appears there, and every `--flag` the README shows after an
//! `agentci` command exists. A flag added without a word in the docs, or a
//! documented flag renamed, fails here naming it.

use std::collections::BTreeSet;

use clap::CommandFactory;

const README: &str = include_str!("../../README.md");

/// Every long flag of every (sub)command, as `--name`.
fn flags_of(command: &clap::Command, found: &mut BTreeSet<String>) {
    for arg in command.get_arguments() {
        if arg.is_hide_set() {
            continue;
        }
        if let Some(long) = arg.get_long() {
            found.insert(format!("--{long}"));
        }
    }
    for sub in command.get_subcommands() {
        flags_of(sub, found);
    }
}

fn all_flags() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    flags_of(&agentci::cli::args::Cli::command(), &mut found);
    // clap's own.
    found.extend(["--help", "--version"].map(String::from));
    found
}

/// Whether `flag` appears in `text` as a whole flag (not the start of a
/// longer one).
fn mentions(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(at, _)| {
        let next = text[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn every_flag_of_every_command_is_in_the_readme() {
    let missing: Vec<String> = all_flags()
        .into_iter()
        .filter(|flag| !["--help", "--version"].contains(&flag.as_str()))
        .filter(|flag| !mentions(README, flag))
        .collect();
    assert!(
        missing.is_empty(),
        "flags the README never mentions; document them: {missing:?}"
    );
}

#[test]
fn every_flag_the_readme_gives_agentci_exists() {
    let flags = all_flags();
    let mut unknown = BTreeSet::new();
    // Flags on lines that run agentci (`agentci …`, `cargo run … -- …`),
    // and in backticks beside the word agentci: other tools' flags
    // (`cargo test --locked`, `git stash --include-untracked`) stay out.
    for line in README.lines().filter(|l| l.contains("agentci ")) {
        let line = line.split("cargo run").last().unwrap_or(line);
        for word in line.split(|c: char| c.is_whitespace() || "`(),[]|".contains(c)) {
            let flag = word.split('=').next().unwrap_or(word);
            let is_flag = flag.len() > 2
                && flag.starts_with("--")
                && flag[2..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-');
            if is_flag && !flags.contains(flag) {
                unknown.insert(flag.to_string());
            }
        }
    }
    // Other programs' flags that share a line with agentci in the README.
    for foreign in [
        "--locked",
        "--release",
        "--test",
        "--ignored",
        "--bench",
        "--include-untracked",
        "--repo",
        "--prefix",
        "--all-targets",
        "--cap-add",
        "--security-opt",
    ] {
        unknown.remove(foreign);
    }
    assert!(
        unknown.is_empty(),
        "the README shows agentci flags that do not exist: {unknown:?}"
    );
}
