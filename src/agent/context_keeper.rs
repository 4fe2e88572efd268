//! Keeping every request under the high-water mark of the model's context
//! window: the estimate before each model call, and when it is above the
//! mark, a compaction (a summary by the model in one extra call when the
//! budget and the window allow it, else a digest), recorded as a
//! `context.compacted` event. What to keep and the texts are
//! [`super::compaction`]'s; the session's side is `session::keep`; counting is [`tokens`]'; the reactive trim after a
//! "too long" answer stays in [`super::context`].

use crate::spec::{CompactWith, ContextSpec};

use super::tokens::{self, TokenEstimator};

/// The run's context settings and its token estimator.
#[derive(Debug)]
pub struct ContextKeeper {
    pub estimator: TokenEstimator,
    pub window: u64,
    /// The high-water mark in tokens.
    pub mark: u64,
    pub method: CompactWith,
}

impl ContextKeeper {
    pub fn new(model: &str, spec: &ContextSpec) -> Self {
        let window = tokens::window_for(model, spec.window);
        ContextKeeper {
            estimator: TokenEstimator::new(model),
            window,
            mark: (window as f64 * spec.high_water) as u64,
            method: spec.method,
        }
    }
}
