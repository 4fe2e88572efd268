//! Running one turn's tool calls: control calls (plan, step and result
//! tools) answered by the phase, the rest run as a [`batch`](super::super::batch)
//! within the run's budget, and every call's result added to the
//! conversation in the order the model made them. Calling the model is
//! [`super::model_call`]'s.

use crate::provider::{Message, ToolCall};
use crate::tools::{ToolErrorCode, ToolResult};

use super::super::batch::{self, BatchEnv};
use super::super::protocol::{self, CONTROL_TOOLS};
use super::super::subagent::Subagents;
use super::{ControlCall, Session, Stop};

impl Session<'_> {
    /// Run one turn's calls. Calls named in `control` are not run: they are
    /// returned for the phase to apply, and `answer` gives their result text.
    /// A control tool this phase does not take gets an error result that
    /// says when it may be called. Every call gets a tool message, in the
    /// order the model made them.
    pub async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        control: &[&str],
        read_only_phase: bool,
        mut answer: impl FnMut(&ControlCall) -> Result<String, String>,
    ) -> Result<Vec<ControlCall>, Stop> {
        type Indexed<'c> = Vec<(usize, &'c ToolCall)>;
        let (controls, regular): (Indexed, Indexed) = calls
            .iter()
            .enumerate()
            .partition(|(_, c)| CONTROL_TOOLS.contains(&c.name.as_str()));
        let regular_calls: Vec<ToolCall> = regular.iter().map(|(_, c)| (*c).clone()).collect();
        self.state
            .budget
            .check_tool_batch(regular_calls.len() as u32)
            .map_err(Stop::Budget)?;

        let mut texts: Vec<Option<String>> = vec![None; calls.len()];
        let applied = answer_controls(&controls, control, read_only_phase, &mut answer, &mut texts);
        let results = self.run_batch(&regular_calls, read_only_phase).await;
        self.state
            .budget
            .record_tool_calls(regular_calls.len() as u32);
        for ((index, _), result) in regular.iter().zip(results) {
            // The model provider is a third party: it never sees a secret a tool printed.
            texts[*index] = Some(self.bus.redact(&result.model_text()));
        }

        let last = calls.len().saturating_sub(1);
        for (index, (call, text)) in calls.iter().zip(texts).enumerate() {
            let mut content = text.unwrap_or_default();
            // In the tool result itself: both APIs accept no other message
            // between a turn's results and the next model turn.
            if index == last
                && let Some(reminder) = &self.rules_reminder
            {
                content.push_str("\n\n");
                content.push_str(reminder);
            }
            self.state.conversation.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            });
        }
        // A step that repeats itself ends there (the step reads the guard);
        // while planning there is no step to end, so the run does.
        if read_only_phase && let Some(reason) = self.state.guard.stuck() {
            return Err(Stop::Failed(format!(
                "the model kept {reason} while planning"
            )));
        }
        Ok(applied)
    }

    /// Run the calls that are not control calls, as one batch that may start sub-agents.
    async fn run_batch(
        &mut self,
        regular_calls: &[ToolCall],
        read_only_phase: bool,
    ) -> Vec<ToolResult> {
        let state = &mut self.state;
        // The batch's sub-agents spend from the run's budget while it runs.
        let budget = std::sync::Mutex::new(&mut state.budget);
        let tasks = Subagents {
            provider: self.provider,
            model_name: &self.model_name,
            parent_tools: &self.tools,
            config: &self.subagents,
            policy: &self.policy,
            ctx: &self.ctx,
            bus: &self.bus,
            tool_loop: &self.tool_loop,
            budget: &budget,
        };
        let env = BatchEnv {
            tools: &self.tools,
            policy: &self.policy,
            ctx: &self.ctx,
            bus: &self.bus,
            read_only_phase,
            tool_loop: &self.tool_loop,
            batches: &state.batches,
            tasks: Some(&tasks),
        };
        batch::run_batch(&env, regular_calls, &mut state.guard).await
    }
}

/// Answer the turn's control calls through `answer`, each in its place in
/// `texts`; a control tool the phase does not take gets an error result.
/// Returns the calls the phase applied.
fn answer_controls(
    controls: &[(usize, &ToolCall)],
    control: &[&str],
    read_only_phase: bool,
    answer: &mut impl FnMut(&ControlCall) -> Result<String, String>,
    texts: &mut [Option<String>],
) -> Vec<ControlCall> {
    let mut applied = Vec::new();
    for &(index, call) in controls {
        if !control.contains(&call.name.as_str()) {
            let message = protocol::out_of_phase(&call.name, read_only_phase)
                .unwrap_or_else(|| format!("`{}` cannot be called now", call.name));
            texts[index] =
                Some(ToolResult::failure(ToolErrorCode::InvalidArgument, message).model_text());
            continue;
        }
        let control_call = ControlCall {
            name: call.name.clone(),
            arguments: serde_json::from_str(&call.arguments)
                .map_err(|e| format!("arguments are not valid JSON: {e}")),
        };
        texts[index] = Some(match answer(&control_call) {
            Ok(text) => {
                applied.push(control_call);
                text
            }
            Err(message) => {
                ToolResult::failure(ToolErrorCode::InvalidArgument, message).model_text()
            }
        });
    }
    applied
}
