//! What of the GitHub event a run's prompt holds. Under GitHub Actions the
//! event that started the run adds to the prompt: its free text (a pull
//! request's title and body, a comment) fenced as untrusted input, and, on a
//! pull request, the workspace's memory file fenced as untrusted too.
//!
//! A replay follows its recording: a cassette recorded without the event
//! (the shipped ones, any made on a laptop) replays on a `pull_request`
//! run with the prompt it was recorded with, since the recorded answers
//! cannot depend on text the recorded model never saw. A cassette recorded
//! with the event keeps it. What the event decides about trust (refusing
//! the workspace's skills on a pull request) does not change here: that is
//! `prepare`'s, and holds whatever the prompt says.

use crate::agent::memory::Memory;
use crate::job::ProviderKind;
use crate::provider::cassette::CassetteHeader;
use crate::untrusted::UntrustedText;

use super::Prepared;

/// The untrusted input and memory file a run sends the model.
pub struct PromptInput {
    pub untrusted: Vec<UntrustedText>,
    pub memory: Option<Memory>,
    /// The prompt holds something the event that started the run added:
    /// what a recording's header keeps as `event_text`.
    pub event_text: bool,
}

/// What the run sends: all of `prepared`'s input, or, when it replays a
/// cassette recorded without the event, the input without what the event
/// added.
pub fn prompt_input(prepared: &Prepared) -> PromptInput {
    let recorded_without_event = prepared.job.model.provider == ProviderKind::Replay
        && prepared
            .job
            .model
            .cassette
            .as_deref()
            .and_then(CassetteHeader::peek)
            .is_some_and(|header| !header.event_text);
    if !recorded_without_event {
        return PromptInput {
            untrusted: prepared.untrusted.clone(),
            memory: prepared.memory.clone(),
            event_text: prepared.untrusted.iter().any(|t| t.from_event)
                || (prepared.event_untrusts_workspace && prepared.memory.is_some()),
        };
    }
    PromptInput {
        event_text: false,
        untrusted: prepared
            .untrusted
            .iter()
            .filter(|t| !t.from_event)
            .cloned()
            .collect(),
        memory: prepared.memory.clone().map(|memory| Memory {
            untrusted: memory.untrusted && !prepared.event_untrusts_workspace,
            ..memory
        }),
    }
}
