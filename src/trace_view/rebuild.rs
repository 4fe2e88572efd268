//! Rebuilding what the model was sent from the `sent` deltas of a trace.

use crate::event::SentDelta;
use crate::provider::{Message, ToolDefinition};

/// Applying deltas in trace order: the messages of each request again.
#[derive(Debug, Default)]
pub struct Rebuilt {
    pub messages: Vec<Message>,
    pub offered: Vec<ToolDefinition>,
}

/// A delta that does not fit the request before it (a trace that is not whole).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the request keeps {kept} and drops {dropped} of the previous request's {had} messages")]
pub struct DeltaMismatch {
    pub kept: usize,
    pub dropped: usize,
    /// The previous request's messages.
    pub had: usize,
}

/// Apply `delta` to the request before it; an error when the delta keeps
/// more than that request had (a trace that is not whole).
pub fn rebuild(previous: &mut Rebuilt, delta: &SentDelta) -> Result<(), DeltaMismatch> {
    let had = previous.messages.len();
    if delta.kept + delta.messages_dropped != had {
        return Err(DeltaMismatch {
            kept: delta.kept,
            dropped: delta.messages_dropped,
            had,
        });
    }
    previous.messages.truncate(delta.kept);
    previous
        .messages
        .extend(delta.messages_added.iter().cloned());
    if let Some(offered) = &delta.tools_offered {
        previous.offered = offered.clone();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_that_keeps_more_than_there_was_is_refused() {
        let bad = SentDelta {
            kept: 9,
            ..SentDelta::default()
        };
        let error = rebuild(&mut Rebuilt::default(), &bad)
            .unwrap_err()
            .to_string();
        assert!(error.contains("keeps 9"), "{error}");
    }
}
