//! The documentation (the README and `docs/*.md`) is in step with the code:
//! each long flag of every `agentci` command appears in it, every `--flag`
//! it shows after an `agentci` command exists, every key of a job file and
//! of an eval suite (from their JSON Schemas, which the loader's types make)
//! is named in it, and every link between its pages leads to a page and a
//! heading that exist. A flag or key added without a word in the docs, a
//! documented flag renamed, or a heading renamed under a link fails here
//! naming it.

use std::collections::BTreeSet;

use clap::CommandFactory;

use super::support::docs;

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
    let text = docs::all_text();
    let missing: Vec<String> = all_flags()
        .into_iter()
        .filter(|flag| !["--help", "--version"].contains(&flag.as_str()))
        .filter(|flag| !mentions(&text, flag))
        .collect();
    assert!(
        missing.is_empty(),
        "flags the documentation never mentions; document them: {missing:?}"
    );
}

#[test]
fn every_flag_the_readme_gives_agentci_exists() {
    let flags = all_flags();
    let mut unknown = BTreeSet::new();
    // Flags on lines that run agentci (`agentci …`, `cargo run … -- …`),
    // and in backticks beside the word agentci: other tools' flags
    // (`cargo test --locked`, `git stash --include-untracked`) stay out.
    let text = docs::all_text();
    for line in text.lines().filter(|l| l.contains("agentci ")) {
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
        "--git",
    ] {
        unknown.remove(foreign);
    }
    assert!(
        unknown.is_empty(),
        "the documentation shows agentci flags that do not exist: {unknown:?}"
    );
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fence = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_link_between_the_pages_leads_somewhere() {
    let pages = docs::pages();
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for (path, text) in &pages {
        let dir = path.parent().unwrap();
        for target in link.captures_iter(text).map(|c| c[1].to_string()) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let dest = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            if !dest.exists() {
                broken.push(format!("{}: {target} (no such file)", path.display()));
                continue;
            }
            if !fragment.is_empty() && dest.extension().is_some_and(|e| e == "md") {
                let page = std::fs::read_to_string(&dest).unwrap();
                if !anchors(&page).contains(fragment) {
                    broken.push(format!("{}: {target} (no such heading)", path.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every property name anywhere in `schema`, following `$ref`s into `$defs`.
fn keys_of(schema: &serde_json::Value) -> BTreeSet<String> {
    fn walk(
        node: &serde_json::Value,
        defs: &serde_json::Value,
        seen: &mut BTreeSet<String>,
        keys: &mut BTreeSet<String>,
    ) {
        match node {
            serde_json::Value::Object(map) => {
                if let Some(name) = map.get("$ref").and_then(|r| r.as_str()) {
                    let name = name.rsplit('/').next().unwrap_or(name).to_string();
                    if seen.insert(name.clone()) {
                        walk(&defs[&name], defs, seen, keys);
                    }
                }
                if let Some(properties) = map.get("properties").and_then(|p| p.as_object()) {
                    keys.extend(properties.keys().cloned());
                }
                for (key, value) in map {
                    if key != "$defs" {
                        walk(value, defs, seen, keys);
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    walk(item, defs, seen, keys);
                }
            }
            _ => {}
        }
    }
    let mut keys = BTreeSet::new();
    walk(schema, &schema["$defs"], &mut BTreeSet::new(), &mut keys);
    keys
}

#[test]
fn every_key_of_a_job_file_and_a_suite_is_documented() {
    let text = docs::all_text();
    for kind in ["job", "suite"] {
        let path = format!(
            "{}/docs/schemas/{kind}.schema.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let keys = keys_of(&schema);
        assert!(keys.len() > 20, "{kind}: too few keys found: {keys:?}");
        let missing: Vec<&String> = keys.iter().filter(|key| !mentions(&text, key)).collect();
        assert!(
            missing.is_empty(),
            "{kind} keys the documentation never names; document them: {missing:?}"
        );
    }
}

/// `docs/ARCHITECTURE.md` stays true to `src/`: its module map has one row
/// for each top-level module (a module added, removed or renamed without a
/// word there fails here naming it), and the layering rule it quotes is
/// the one `tests/suite/module_graph.rs` states.
#[test]
fn the_architecture_page_names_every_module_and_quotes_the_layering_rule() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // A folder with a `mod.rs` is written `name/`; `name.rs` (with or
        // without a folder of submodules beside it) is written `name`.
        if path.join("mod.rs").is_file() {
            modules.insert(format!("{name}/"));
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            modules.insert(name);
        }
    }
    assert!(modules.len() > 20, "{modules:?}");
    let row = regex::Regex::new(r"(?m)^\| `([a-z_]+/?)` \|").unwrap();
    let mapped: BTreeSet<String> = row.captures_iter(&page).map(|c| c[1].to_string()).collect();
    assert_eq!(
        mapped, modules,
        "docs/ARCHITECTURE.md's module map (left) and the modules of src/ (right) differ"
    );

    let rule: String = std::fs::read_to_string(root.join("tests/suite/module_graph.rs"))
        .unwrap()
        .lines()
        .map_while(|l| l.strip_prefix("//! "))
        .collect::<Vec<_>>()
        .join(" ");
    let quoted: String = page
        .lines()
        .filter_map(|l| l.strip_prefix("> "))
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        quoted, rule,
        "docs/ARCHITECTURE.md quotes the layering rule"
    );
}
