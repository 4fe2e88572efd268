//! The user documentation: the README and the reference pages in `docs/`,
//! read for tests that keep them in step with the code.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README, CONTRIBUTING.md and every `docs/*.md`, in a fixed order,
/// with their paths.
pub fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("CONTRIBUTING.md"),
    ];
    let mut reference: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    reference.sort();
    paths.extend(reference);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable page");
            (p, text)
        })
        .collect()
}

/// All of the documentation as one text.
pub fn all_text() -> String {
    pages()
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n")
}
