//! The cost of judging an `exec` command line: parse it as bash and judge
//! every simple command and redirection against a job's rules.
//!
//! Lines from a one-word command to a long pipeline with substitutions are
//! each decided many times by a policy shaped like a real job's; the time
//! per decision is printed (the mean after a warm-up). For scale, starting
//! the `bash -c` that runs the line costs about a millisecond.
//!
//! Run with `cargo bench --bench exec_rules`. Prints figures; asserts nothing.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure, with its message"
)]

use std::hint::black_box;
use std::time::Instant;

use agentci::policy::{DefaultDecision, PermissionRules};
use agentci::policy::{PermissionPolicy, ToolPattern};
use serde_json::json;

const ROUNDS: usize = 2_000;

fn main() {
    let parse = |v: &[&str]| {
        v.iter()
            .map(|s| ToolPattern::parse(s).expect("pattern"))
            .collect()
    };
    let policy = PermissionPolicy::new(&PermissionRules {
        default: DefaultDecision::Deny,
        allow: parse(&[
            "read",
            "exec(cargo test *)",
            "exec(cargo build *)",
            "exec(ls*)",
            "exec(tail *)",
            "exec(grep *)",
            "write(target/**)",
        ]),
        deny: parse(&[
            "exec(git push *)",
            "exec(rm *)",
            "read(**/.env)",
            "write(.github/**)",
        ]),
    });
    let lines = [
        "cargo test",
        "cargo test --quiet -p agentci -- --nocapture 2>&1 | tail -50",
        "cargo build 2>&1 | grep -E 'error|warning' > target/build.log; ls -la target",
        "if cargo test; then ls target; else tail -5 target/build.log; fi",
        "cargo test $(ls src | grep -v mod) && cargo build --release 2>/dev/null | tail -3",
        "cargo test #'\ntouch /tmp/x",
    ];
    println!("exec rule decision (parse as bash + judge), mean of {ROUNDS}:");
    for line in lines {
        let args = json!({ "command": line });
        for _ in 0..ROUNDS / 10 {
            black_box(policy.decide("exec", &args));
        }
        let start = Instant::now();
        for _ in 0..ROUNDS {
            black_box(policy.decide("exec", black_box(&args)));
        }
        let per = start.elapsed() / ROUNDS as u32;
        let shown: String = line.replace('\n', "\\n").chars().take(60).collect();
        println!("  {:>9.1} µs  {shown}", per.as_secs_f64() * 1e6);
    }
}
