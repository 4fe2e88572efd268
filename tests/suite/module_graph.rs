//! The top-level modules of `src/` must not form a cycle: data flows one way
//! (see the layering in `src/lib.rs`). This reads every `crate::…` path in the
//! library's source, builds the graph "module X names module Y", and fails with
//! the circle spelled out, each step with the files that make it, when one
//! comes back. Unit tests (`#[cfg(test)]` blocks, `tests.rs` files) may reach
//! anywhere and are not counted.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// `from -> to -> files that make the step`.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn top_level_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(
        graph.len() > 10,
        "the scan found too few modules in {}: {:?}",
        src.display(),
        graph.keys().collect::<Vec<_>>()
    );
    let cycles = cycles(&graph);
    assert!(
        cycles.is_empty(),
        "top-level modules of src/ depend on each other in a circle; break it by moving \
         the type or function to the lower module (see the layering in src/lib.rs):\n{}",
        cycles.join("\n")
    );
}

/// Steps that make no circle today but would bind a layer to one above or
/// beside it, each with why it is refused.
const FORBIDDEN: &[(&str, &str, &str)] = &[
    (
        "agent",
        "sink",
        "the agent emits through crate::event::bus and must not know what observes it",
    ),
    (
        "event",
        "sink",
        "the events and their bus are the contract the sinks read, not the other way round",
    ),
];

#[test]
fn forbidden_steps_are_not_taken() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    let taken = forbidden_taken(&graph);
    assert!(taken.is_empty(), "{}", taken.join("\n"));
}

/// A forbidden step is named with its files and the reason.
#[test]
fn a_forbidden_step_is_named_with_its_files() {
    let mut graph = Graph::new();
    graph
        .entry("agent".to_string())
        .or_default()
        .entry("sink".to_string())
        .or_default()
        .insert("agent/mod.rs".to_string());
    assert_eq!(
        forbidden_taken(&graph),
        [
            "agent -> sink (agent/mod.rs): the agent emits through crate::event::bus and must \
          not know what observes it"
        ]
    );
}

fn forbidden_taken(graph: &Graph) -> Vec<String> {
    let mut taken = Vec::new();
    for (from, to, why) in FORBIDDEN {
        if let Some(files) = graph.get(*from).and_then(|steps| steps.get(*to)) {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            taken.push(format!("{from} -> {to} ({}): {why}", files.join(", ")));
        }
    }
    taken
}

/// The parser sees grouped, nested and inline paths, and skips comments and tests.
#[test]
fn the_scan_reads_grouped_paths_and_skips_tests() {
    let text = "use crate::{a::B, b, c::{d, e}};\n\
                // crate::commented\n\
                fn f() { crate::inline::call(); }\n\
                #[cfg(test)]\n\
                mod tests { use crate::only_tests; }\n";
    let found: BTreeSet<String> = modules_named(text).into_iter().collect();
    let want: BTreeSet<String> = ["a", "b", "c", "inline"].map(String::from).into();
    assert_eq!(found, want);
}

/// A circle is reported with each step and the files that make it.
#[test]
fn a_circle_is_named_with_its_files() {
    let mut graph = Graph::new();
    let mut step = |from: &str, to: &str, file: &str| {
        graph
            .entry(from.to_string())
            .or_default()
            .entry(to.to_string())
            .or_default()
            .insert(file.to_string());
    };
    step("job", "policy", "job/mod.rs");
    step("policy", "job", "policy/mod.rs");
    step("event", "provider", "event.rs");
    let found = cycles(&graph);
    assert_eq!(
        found,
        ["job -> policy -> job:\n  job -> policy (job/mod.rs)\n  policy -> job (policy/mod.rs)"]
    );
}

fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap_or(&file);
        let mut parts = relative.iter().map(|p| p.to_string_lossy().into_owned());
        let first = parts.next().unwrap_or_default();
        let module = first.trim_end_matches(".rs").to_string();
        let is_tests = relative.iter().any(|p| p == "tests" || p == "tests.rs");
        if module == "lib" || module == "main" || is_tests {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let node = graph.entry(module.clone()).or_default();
        for named in modules_named(&text) {
            if named != module {
                node.entry(named)
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The top-level modules a file's code names through `crate::…`, up to its
/// first `#[cfg(test)]` (unit tests sit at the end of a file).
fn modules_named(text: &str) -> Vec<String> {
    let mut code = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `$crate::` and `my_crate::` are not this crate's root.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group));
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
}

/// The first segment of each path in `a::b, c::{d, e}}`, up to the closing brace.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if at_start && (c.is_alphabetic() || c == '_') => {
                heads.push(ident(&group[i..]));
                at_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Each circle once, as `a -> b (files) -> … -> a`, found as the shortest way
/// back from every step.
fn cycles(graph: &Graph) -> Vec<String> {
    let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    let mut out = Vec::new();
    for (from, edges) in graph {
        for to in edges.keys() {
            let Some(back) = shortest_path(graph, to, from) else {
                continue;
            };
            let mut circle = vec![from.clone()];
            circle.extend(back);
            let members: BTreeSet<String> = circle.iter().cloned().collect();
            if !seen.insert(members) {
                continue;
            }
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| {
                    let files: Vec<&String> = graph[&w[0]][&w[1]].iter().collect();
                    format!("  {} -> {} ({})", w[0], w[1], join(&files))
                })
                .collect();
            out.push(format!("{}:\n{}", circle.join(" -> "), steps.join("\n")));
        }
    }
    out
}

/// Modules on the shortest way from `start` to `goal`, both included.
fn shortest_path(graph: &Graph, start: &str, goal: &str) -> Option<Vec<String>> {
    let mut previous: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([start.to_string()]);
    let mut visited = BTreeSet::from([start.to_string()]);
    while let Some(node) = queue.pop_front() {
        if node == goal {
            let mut path = vec![node.clone()];
            let mut at = node;
            while let Some(p) = previous.get(&at) {
                path.push(p.clone());
                at = p.clone();
            }
            path.reverse();
            return Some(path);
        }
        for next in graph.get(&node).into_iter().flat_map(|e| e.keys()) {
            if visited.insert(next.clone()) {
                previous.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}

fn join(files: &[&String]) -> String {
    files
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
