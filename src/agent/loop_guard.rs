//! Detects a model that repeats the same call with the same arguments.
//!
//! The third identical call in a row is not run and the model is told why;
//! if it keeps going, the run stops as failed rather than burning the budget.

use serde_json::Value;

/// Identical calls in a row at which a call is refused instead of run.
pub const REFUSE_AT: u32 = 3;
/// Identical calls in a row at which the run gives up.
pub const STOP_AT: u32 = 5;

#[derive(Debug, Default)]
pub struct LoopGuard {
    last: Option<(String, Value)>,
    repeats: u32,
}

impl LoopGuard {
    /// Note a call; `Some(n)` when it is the n-th identical call in a row and must be refused.
    pub fn observe(&mut self, tool: &str, args: &Value) -> Option<u32> {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(t, a)| t == tool && a == args);
        if same {
            self.repeats += 1;
        } else {
            self.last = Some((tool.to_string(), args.clone()));
            self.repeats = 1;
        }
        (self.repeats >= REFUSE_AT).then_some(self.repeats)
    }

    /// True once the model has repeated itself so often that the run should stop.
    pub fn stuck(&self) -> bool {
        self.repeats >= STOP_AT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_is_refused_and_a_different_one_resets() {
        let mut g = LoopGuard::default();
        let a = json!({"path": "a"});
        assert_eq!(g.observe("read", &a), None);
        assert_eq!(g.observe("read", &a), None);
        assert_eq!(g.observe("read", &a), Some(3));
        assert_eq!(g.observe("read", &json!({"path": "b"})), None);
        assert_eq!(g.observe("read", &a), None);
        assert!(!g.stuck());
    }

    #[test]
    fn stuck_after_five() {
        let mut g = LoopGuard::default();
        for _ in 0..5 {
            g.observe("exec", &json!({"command": "ls"}));
        }
        assert!(g.stuck());
    }
}
