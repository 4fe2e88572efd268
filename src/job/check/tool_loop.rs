//! The job keys about how one turn's tool calls run: `max_parallel_tools`,
//! `tool_timeout`, `tool_timeouts`, `loop_guard.repeats` and `task.max_turns`. Running them is
//! the agent's business ([`crate::agent::batch`], [`crate::agent::loop_guard`]).

use super::Checker;
use crate::job::ToolLoopSpec;
use crate::job::load::pos_of;
use crate::job::raw::RawJob;
use crate::tools::catalog;

/// More parallel calls than this gain nothing on a CI runner and only hide a runaway model.
const MAX_PARALLEL_TOOLS: u64 = 64;
/// A guard that warns at the first repeat would stop honest re-reads; beyond 100 it guards nothing.
const MAX_LOOP_REPEATS: u64 = 100;
/// A sub-agent is a focused errand; more turns than this is a run of its own.
const MAX_TASK_TURNS: u64 = 500;

impl Checker<'_> {
    pub(super) fn tool_loop(&mut self, raw: &RawJob) -> ToolLoopSpec {
        let mut spec = ToolLoopSpec::default();
        if let Some(v) = &raw.max_parallel_tools
            && let Some(n) = self.positive(v, "max_parallel_tools", MAX_PARALLEL_TOOLS)
        {
            spec.max_parallel_tools = n as usize;
        }
        if let Some(v) = &raw.tool_timeout
            && let Some(t) = self.duration(v, "tool_timeout")
        {
            spec.tool_timeout = t;
        }
        for (tool, value) in raw.tool_timeouts.iter().flatten() {
            if !catalog::is_builtin(tool) {
                let pos = pos_of(&self.r, value);
                self.r.error(
                    pos,
                    format!(
                        "`tool_timeouts` names `{tool}`, which is not a tool; use one of: {}",
                        catalog::names().join(", ")
                    ),
                );
                continue;
            }
            if let Some(t) = self.duration(value, &format!("tool_timeouts.{tool}")) {
                spec.tool_timeouts.insert(tool.clone(), t);
            }
        }
        if let Some(v) = raw.loop_guard.as_ref().and_then(|g| g.repeats.as_ref()) {
            match self.positive(v, "loop_guard.repeats", MAX_LOOP_REPEATS) {
                Some(1) => {
                    let pos = pos_of(&self.r, v);
                    self.r.error(
                        pos,
                        "`loop_guard.repeats` must be at least 2: at 1 every call would count \
                         as a repeat"
                            .to_string(),
                    );
                }
                Some(n) => spec.loop_repeats = n as u32,
                None => {}
            }
        }
        if let Some(v) = raw.task.as_ref().and_then(|t| t.max_turns.as_ref())
            && let Some(n) = self.positive(v, "task.max_turns", MAX_TASK_TURNS)
        {
            spec.task_max_turns = n as u32;
        }
        spec
    }
}
