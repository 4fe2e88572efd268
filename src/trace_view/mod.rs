//! Reading a finished (or cut short) JSONL trace back for people and tools:
//! `agentci trace show` and `agentci trace summary`.
//!
//! [`load`] reads a trace line by line, tolerating what real traces hold: a
//! last line cut by a kill, events of a type this version does not know (a
//! newer agentci), older schema versions; it stops at
//! the first line that is not an event and says which. [`RunView`] folds the
//! events into what a person asks about a run, [`render_text`] prints it.
//! [`rebuild`] turns the `sent` deltas back into the requests the model was
//! sent. Writing traces is [`crate::sink::TraceWriter`]'s job; the Markdown
//! step summary is the GitHub sink's ([`crate::sink::step_summary`]).

mod entries;
mod fold;
mod load;
mod rebuild;
mod text;
mod view;

pub use load::{LoadedTrace, TraceLine, TraceLoadError, TraceProblem, load};
pub use rebuild::{DeltaMismatch, Rebuilt, rebuild};
pub use text::render_text;
pub use view::{RunView, ViewOptions};
