//! Checking JUnit reports against the Jenkins JUnit schema.

use std::path::Path;

/// `xmllint --schema` against tests/data/junit/jenkins-junit.xsd (libxml2-utils).
/// `.ci/run` installs xmllint, so CI always validates; on a machine without it
/// (a fresh checkout with only the Rust toolchain) the report is still parsed
/// back and checked structurally by the callers.
pub fn xmllint_validates(path: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit/jenkins-junit.xsd");
    let Some(xmllint) = super::prerequisites::program(
        &["xmllint"],
        "the JUnit schema checks",
        "apt-get install libxml2-utils; .ci/run installs it",
    ) else {
        return;
    };
    let output = std::process::Command::new(xmllint)
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(path)
        .output()
        .expect("xmllint runs");
    assert!(
        output.status.success(),
        "{} does not match the Jenkins JUnit schema:\n{}\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(path).unwrap_or_default()
    );
}

/// A testcase as junitparser (the Python reader many CI tools build on) reads it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct ReadCase {
    pub name: String,
    pub passed: bool,
    pub file: Option<String>,
    /// `(kind, message, text)` of each `<failure>`, `<error>` or `<skipped>`.
    pub results: Vec<(String, Option<String>, Option<String>)>,
}

const JUNITPARSER_READ: &str = r#"
import json, sys
from junitparser import JUnitXml
cases = []
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        cases.append({
            "name": case.name,
            "passed": case.is_passed,
            "file": case._elem.get("file"),
            "results": [[r._tag, r.message, r.text] for r in case.result],
        })
print(json.dumps(cases))
"#;

/// The report's testcases as junitparser reads them (`pip install
/// junitparser`; `.ci/run` installs it). `None`, with a note, when python3
/// or junitparser is missing: the callers check the XML themselves too.
pub fn junitparser_cases(path: &Path) -> Option<Vec<ReadCase>> {
    let output = match std::process::Command::new("python3")
        .arg("-c")
        .arg(JUNITPARSER_READ)
        .arg(path)
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            super::prerequisites::skipped(format!(
                "the JUnit checks with junitparser: python3 does not run ({e})"
            ));
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("No module named 'junitparser'") {
        super::prerequisites::skipped(
            "the JUnit checks with junitparser: it is not installed (pip install junitparser; \
             .ci/run installs it)"
                .to_string(),
        );
        return None;
    }
    assert!(
        output.status.success(),
        "junitparser cannot read {}:\n{stderr}",
        path.display()
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

/// Validate `path` against the schema and, when junitparser is there,
/// check that every failure and error it reads has a message and a text.
pub fn assert_readable(path: &Path) -> Option<Vec<ReadCase>> {
    xmllint_validates(path);
    let cases = junitparser_cases(path)?;
    for case in &cases {
        for (kind, message, text) in &case.results {
            if kind == "skipped" {
                continue;
            }
            let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
            assert!(
                !blank(message) && !blank(text),
                "{}: <{kind}> without a message or text in {}",
                case.name,
                path.display()
            );
        }
    }
    Some(cases)
}
