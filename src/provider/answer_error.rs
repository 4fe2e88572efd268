//! Why a wire format could not read the model server's answer (a JSON
//! body or one streamed event). The HTTP layer puts the server's address
//! and the body's start around it; this type holds only what the format
//! itself saw, so the formats stay free of transport concerns.

/// What was wrong with an answer, as a lowercase fragment.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The text is not JSON of the format's shape; `what` is the part
    /// ("a body", "a chunk", "an event"), `format` the wire format's name.
    #[error("{what} that is not {format} JSON ({source})")]
    NotJson {
        what: &'static str,
        format: &'static str,
        source: serde_json::Error,
    },
    /// A Chat Completions body without a choice.
    #[error("no choices")]
    NoChoices,
    /// The server sent an error where the answer belonged.
    #[error("the server reported an error: {message}")]
    Reported { message: String },
    /// A streamed delta for a content block that never started.
    #[error("a delta for content block {index}, which never started")]
    UnstartedBlock { index: usize },
}
