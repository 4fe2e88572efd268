//! Notices a model that repeats itself within one plan step: the same call
//! with the same arguments `repeats` times (`loop_guard.repeats`, default
//! 3), or turns that go round in a cycle (A, B, A, B or A, B, C, A, B, C).
//!
//! The first time, the offending calls are not run and the model is warned
//! in their results; if it goes on after the warning, the guard says the
//! step is stuck and the step ends `failed` ("repeating itself"). What the
//! warning and the end look like in the trace is the batch's and the
//! step's business; this module only counts. It forgets everything when a
//! new step starts: re-reading a file in the next step is not a loop.
//! A tool call counts also when it is refused or fails (denied, a tool the
//! run lacks, bad arguments), and so does a control call its phase refuses
//! (`submit_result` in a step): the guard is asked before any other check,
//! since repeating a refusal will not change it.
//! Polls are not repeats: `process read` and `process list` answer
//! differently as a background session runs, so reading it again is how a
//! model waits for a server (the budget bounds a model that polls forever).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Longest cycle of turns the guard looks for; period 1 is the repeat count's job.
const MAX_CYCLE: usize = 3;

/// What the guard says about a call or a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Nothing repeated: run it.
    Run,
    /// Repeated for the first time: do not run it, warn the model with this text.
    Warn(String),
    /// Repeated after the warning: the step is over, for this reason.
    Stop(String),
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LoopGuard {
    repeats: u32,
    counts: HashMap<String, u32>,
    turns: Vec<String>,
    warned: bool,
    stuck: Option<String>,
}

impl Default for LoopGuard {
    fn default() -> Self {
        LoopGuard::new(3)
    }
}

impl LoopGuard {
    /// A guard that warns at the `repeats`-th identical call (at least 2).
    pub fn new(repeats: u32) -> Self {
        LoopGuard {
            repeats: repeats.max(2),
            counts: HashMap::new(),
            turns: Vec::new(),
            warned: false,
            stuck: None,
        }
    }

    /// Forget the last step: a new one starts with a clean slate.
    pub fn start_step(&mut self) {
        *self = LoopGuard::new(self.repeats);
    }

    /// Note a turn's calls before they run; judges cycles of whole turns.
    pub fn observe_turn(&mut self, calls: &[(&str, &Value)]) -> Judgement {
        if calls.is_empty() {
            return Judgement::Run;
        }
        let signature = calls
            .iter()
            .filter(|(tool, args)| !is_poll(tool, args))
            .map(|(tool, args)| call_key(tool, args))
            .collect::<Vec<_>>()
            .join("\n");
        if signature.is_empty() {
            return Judgement::Run;
        }
        self.turns.push(signature);
        let Some(period) = self.cycle() else {
            return Judgement::Run;
        };
        let what = format!(
            "your last {} turns repeat the same {period} turns in a cycle",
            period * 2
        );
        self.escalate(what)
    }

    /// Note one call; judges identical calls.
    pub fn observe_call(&mut self, tool: &str, args: &Value) -> Judgement {
        if let Some(reason) = &self.stuck {
            return Judgement::Stop(reason.clone());
        }
        if is_poll(tool, args) {
            return Judgement::Run;
        }
        let count = self.counts.entry(call_key(tool, args)).or_insert(0);
        *count += 1;
        if *count < self.repeats {
            return Judgement::Run;
        }
        let what = format!(
            "this is the {} time you called `{tool}` with exactly these arguments in this step",
            ordinal(*count)
        );
        self.escalate(what)
    }

    /// Why the step must end, once the model went on after the warning.
    pub fn stuck(&self) -> Option<&str> {
        self.stuck.as_deref()
    }

    fn escalate(&mut self, what: String) -> Judgement {
        if self.warned {
            let reason = format!("repeating itself: {what} after being warned");
            self.stuck = Some(reason.clone());
            return Judgement::Stop(reason);
        }
        self.warned = true;
        Judgement::Warn(format!(
            "{what}; the call was not run. You are repeating yourself: the result will not \
             change. Try something different, or end the step with `step_done` (status \
             `blocked` if you cannot go on). If you repeat yourself again, the step ends as \
             failed."
        ))
    }

    /// The period of a cycle the newest turns complete: the last `p` turns
    /// equal the `p` before them, and they are not all one turn.
    fn cycle(&self) -> Option<usize> {
        let turns = &self.turns;
        (2..=MAX_CYCLE).find(|&p| {
            let n = turns.len();
            n >= 2 * p
                && turns[n - p..] == turns[n - 2 * p..n - p]
                && turns[n - p..].iter().any(|t| *t != turns[n - 1])
        })
    }
}

/// A call whose answer changes while nothing else happens: reading or
/// listing background sessions.
fn is_poll(tool: &str, args: &Value) -> bool {
    tool == "process"
        && matches!(
            args.get("action").and_then(Value::as_str),
            Some("read" | "list")
        )
}

/// Identical calls have identical keys (serde_json keeps object keys
/// sorted). A key is the SHA-256 of the call, not the call: the guard is in
/// every checkpoint, which must not grow with one huge argument, nor hold
/// what the model put in one (a secret it decoded).
fn call_key(tool: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update(b" ");
    // Written straight into the hasher: a 30 MB argument is not copied.
    let _ = serde_json::to_writer(HashWriter(&mut hasher), args);
    format!("{:x}", hasher.finalize())
}

/// Feeds what is written to a SHA-256.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, r) if r != 11 => "st",
        (2, r) if r != 12 => "nd",
        (3, r) if r != 13 => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn warns_at_the_repeat_then_stops() {
        let mut g = LoopGuard::new(3);
        let a = json!({"path": "a"});
        assert_eq!(g.observe_call("read", &a), Judgement::Run);
        assert_eq!(
            g.observe_call("read", &json!({"path": "b"})),
            Judgement::Run
        );
        assert_eq!(g.observe_call("read", &a), Judgement::Run);
        assert!(matches!(g.observe_call("read", &a), Judgement::Warn(m) if m.contains("3rd")));
        assert!(g.stuck().is_none());
        assert!(
            matches!(g.observe_call("read", &a), Judgement::Stop(m) if m.starts_with("repeating itself"))
        );
        assert!(g.stuck().is_some());
    }

    // Regression: the guard kept each call's arguments as its key, so one
    // 30 MB argument made every later checkpoint of the step hold it twice
    // (in the counts and in the turns), and a secret the model decoded
    // into an argument sat in the checkpoint unmasked.
    #[test]
    fn the_guard_keeps_digests_not_arguments() {
        let mut g = LoopGuard::new(2);
        let big = json!({"path": format!("tok-5f3a9c1e7d{}", "x".repeat(1 << 20))});
        assert_eq!(g.observe_turn(&[("read", &big)]), Judgement::Run);
        assert_eq!(g.observe_call("read", &big), Judgement::Run);
        let saved = serde_json::to_string(&g).unwrap();
        assert!(saved.len() < 1024, "{} bytes", saved.len());
        assert!(!saved.contains("tok-5f3a9c1e7d"), "{saved}");
        // Still the same judgement: the repeat is caught.
        assert!(matches!(g.observe_call("read", &big), Judgement::Warn(_)));
        assert_eq!(
            g.observe_call("read", &json!({"path": "other"})),
            Judgement::Run
        );
    }

    #[test]
    fn a_new_step_forgets() {
        let mut g = LoopGuard::new(2);
        let a = json!({"command": "ls"});
        g.observe_call("exec", &a);
        assert!(matches!(g.observe_call("exec", &a), Judgement::Warn(_)));
        g.start_step();
        assert_eq!(g.observe_call("exec", &a), Judgement::Run);
    }

    #[test]
    fn cycles_of_two_and_three_turns_are_caught() {
        let (a, b, c) = (
            json!({"path": "a"}),
            json!({"path": "b"}),
            json!({"path": "c"}),
        );
        let mut g = LoopGuard::new(10);
        assert_eq!(g.observe_turn(&[("read", &a)]), Judgement::Run);
        assert_eq!(g.observe_turn(&[("read", &b)]), Judgement::Run);
        assert_eq!(g.observe_turn(&[("read", &a)]), Judgement::Run);
        assert!(matches!(
            g.observe_turn(&[("read", &b)]),
            Judgement::Warn(_)
        ));
        assert!(matches!(
            g.observe_turn(&[("read", &a)]),
            Judgement::Stop(_)
        ));

        let mut g = LoopGuard::new(10);
        for turn in [&a, &b, &c, &a, &b] {
            assert_eq!(g.observe_turn(&[("read", turn)]), Judgement::Run);
        }
        assert!(
            matches!(g.observe_turn(&[("read", &c)]), Judgement::Warn(m) if m.contains("same 3 turns"))
        );
    }

    #[test]
    fn progress_is_not_a_cycle() {
        let mut g = LoopGuard::new(10);
        for i in 0..20 {
            let args = json!({ "path": format!("f{i}") });
            assert_eq!(g.observe_turn(&[("read", &args)]), Judgement::Run);
        }
    }

    #[test]
    fn polling_a_background_session_is_not_repeating() {
        let mut g = LoopGuard::new(3);
        let read = json!({"action": "read", "session_id": "s1"});
        let exec = json!({"command": "curl -s 127.0.0.1:8080/health"});
        for _ in 0..10 {
            assert_eq!(g.observe_turn(&[("process", &read)]), Judgement::Run);
            assert_eq!(g.observe_call("process", &read), Judgement::Run);
        }
        // A poll between two identical commands does not hide their repeat.
        assert_eq!(g.observe_call("exec", &exec), Judgement::Run);
        assert_eq!(g.observe_call("process", &read), Judgement::Run);
        assert_eq!(g.observe_call("exec", &exec), Judgement::Run);
        assert!(matches!(g.observe_call("exec", &exec), Judgement::Warn(_)));
        // Killing a session is not a poll.
        let kill = json!({"action": "kill", "session_id": "s1"});
        let mut g = LoopGuard::new(2);
        assert_eq!(g.observe_call("process", &kill), Judgement::Run);
        assert!(matches!(
            g.observe_call("process", &kill),
            Judgement::Warn(_)
        ));
    }
}
