//! agentci's statistics against the reference implementations: SciPy's
//! `fisher_exact(..., alternative="greater")` and statsmodels'
//! `proportion_confint(method="wilson")`, run on a table of cases and
//! compared to 1e-9. The pinned packages are installed on first use into a
//! virtual environment under the target folder, once, under a lock; without
//! `python3` or without network the test says so and is skipped (under CI it
//! fails instead).

use std::path::{Path, PathBuf};
use std::process::Command;

use agentci::eval::significance::{fisher_drop_p, wilson};
use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

use super::support::prerequisites;

const SCIPY: &str = "scipy==1.14.1";
const STATSMODELS: &str = "statsmodels==0.14.4";

/// (passed before, attempts before, passed now, attempts now).
const DROPS: &[(u32, u32, u32, u32)] = &[
    (3, 3, 2, 3),
    (3, 3, 0, 3),
    (10, 10, 0, 10),
    (10, 10, 6, 10),
    (5, 5, 4, 5),
    (7, 10, 3, 10),
    (2, 3, 2, 3),
    (0, 3, 3, 3),
    (1, 1, 0, 1),
    (20, 20, 19, 20),
    (47, 50, 40, 50),
    (30, 40, 10, 35),
    (90, 100, 75, 100),
    (180, 200, 150, 210),
    (900, 1000, 850, 1000),
    (4_500, 5_000, 4_400, 5_000),
];

/// (passed, attempts, confidence).
const RATES: &[(u32, u32, f64)] = &[
    (2, 3, 0.95),
    (3, 3, 0.95),
    (0, 3, 0.95),
    (1, 2, 0.95),
    (10, 10, 0.95),
    (0, 10, 0.99),
    (7, 10, 0.9),
    (20, 30, 0.95),
    (13, 50, 0.8),
    (999, 1000, 0.95),
    (512, 1000, 0.999),
    (1, 5000, 0.95),
];

/// The virtual environment's python with SciPy and statsmodels, or `None`
/// (noted as a skip) when this machine cannot make one.
fn reference_python() -> Option<PathBuf> {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_agentci"));
    // target/debug/agentci → target/python-reference
    let dir = exe.parent()?.parent()?.join("python-reference");
    let python = dir.join("bin/python");
    let stamp = dir.join(format!("installed-{SCIPY}-{STATSMODELS}"));
    if stamp.is_file() {
        return Some(python);
    }
    let what = "the statistics against SciPy and statsmodels";
    prerequisites::program(&["python3"], what, "install Python 3")?;
    std::fs::create_dir_all(exe.parent()?.parent()?).ok()?;
    let lock = std::fs::File::create(dir.with_extension("lock")).expect("the venv lock file");
    let _lock = Flock::lock(lock, FlockArg::LockExclusive).expect("the venv lock");
    if stamp.is_file() {
        return Some(python);
    }
    let venv = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .output();
    let pip = |python: &Path| {
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                SCIPY,
                STATSMODELS,
            ])
            .output()
    };
    let failed = match venv {
        Ok(out) if out.status.success() => match pip(&python) {
            Ok(out) if out.status.success() => None,
            Ok(out) => Some(format!(
                "`pip install {SCIPY} {STATSMODELS}` failed (no network?): {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => Some(format!("cannot run pip: {e}")),
        },
        Ok(out) => Some(format!(
            "`python3 -m venv` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run python3: {e}")),
    };
    if let Some(why) = failed {
        assert!(std::env::var_os("CI").is_none(), "{what}: {why}");
        prerequisites::skipped(format!("{what}: {why}"));
        return None;
    }
    std::fs::write(&stamp, "").expect("the install stamp");
    Some(python)
}

/// `|a - b| <= 1e-9`, or within 1e-9 of `b` relatively for tiny p-values.
fn agrees(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 1e-9 || (ours - theirs).abs() <= 1e-9 * theirs.abs()
}

#[test]
fn fisher_and_wilson_match_scipy_and_statsmodels() {
    let Some(python) = reference_python() else {
        return;
    };
    let table = serde_json::json!({"drops": DROPS, "rates": RATES});
    let script = r#"
import json, sys
from scipy.stats import fisher_exact
from statsmodels.stats.proportion import proportion_confint
table = json.loads(sys.argv[1])
out = {"drops": [], "rates": []}
for bp, bn, ap, an in table["drops"]:
    _, p = fisher_exact([[bp, bn - bp], [ap, an - ap]], alternative="greater")
    out["drops"].append(float(p))
for k, n, c in table["rates"]:
    low, high = proportion_confint(k, n, alpha=1 - c, method="wilson")
    out["rates"].append([float(low), float(high)])
print(json.dumps(out))
"#;
    let out = Command::new(&python)
        .args(["-c", script, &table.to_string()])
        .output()
        .expect("the reference python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Value = serde_json::from_slice(&out.stdout).expect("JSON from the script");
    let mut wrong = Vec::new();
    for (i, &(bp, bn, ap, an)) in DROPS.iter().enumerate() {
        let theirs = reference["drops"][i].as_f64().unwrap();
        let ours = fisher_drop_p(bp, bn, ap, an);
        if !agrees(ours, theirs) {
            wrong.push(format!(
                "fisher {bp}/{bn} → {ap}/{an}: ours {ours:e}, SciPy {theirs:e}"
            ));
        }
    }
    for (i, &(k, n, c)) in RATES.iter().enumerate() {
        let (low, high) = (
            reference["rates"][i][0].as_f64().unwrap(),
            reference["rates"][i][1].as_f64().unwrap(),
        );
        let ours = wilson(k, n, c).unwrap();
        if !agrees(ours.low, low) || !agrees(ours.high, high) {
            wrong.push(format!(
                "wilson {k}/{n} at {c}: ours ({}, {}), statsmodels ({low}, {high})",
                ours.low, ours.high
            ));
        }
    }
    assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
}
