//! `model.reasoning`, with `--reasoning-effort` and `--thinking-budget` over
//! it: each setting read at its own line and column, then checked against
//! the provider that will get it, since each API takes only some of them
//! (thinking budgets are Anthropic's, summaries the Responses API's, …).
//! A setting the provider does not take is an error that says which
//! providers do; when `--model` or `--replay` changed the provider, the
//! job's settings that the new one does not take are dropped with a warning.

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::ProviderKind;
use crate::job::diagnostic::{Diagnostic, Pos};
use crate::job::load::{FlagValues, pos_of};
use crate::job::raw::{RawReasoning, Scalar};
use crate::provider::reasoning::{Effort, ReasoningSettings, SummaryMode};

/// The Messages API's floor for `budget_tokens`
/// (https://docs.claude.com/en/docs/build-with-claude/extended-thinking).
pub const MIN_BUDGET_TOKENS: u64 = 1024;
/// Above any model's context window: a larger budget is a typo.
const MAX_BUDGET_TOKENS: u64 = 1_000_000;

/// One setting as the job or a flag wrote it: its key, where, and whether
/// it came from a flag.
struct Written {
    key: &'static str,
    at: Option<Pos>,
}

/// Where the providers that take a setting are named, for messages.
fn takers(key: &str) -> &'static str {
    match key {
        "effort" => {
            "openai, openai-responses, azure-openai, and anthropic, bedrock and vertex with `mode: adaptive`"
        }
        "budget_tokens" | "mode" | "interleaved" => "anthropic, bedrock and vertex",
        "summary" | "previous_response_id" => "openai-responses",
        "send_back" => "openai and azure-openai",
        _ => "",
    }
}

/// Whether `kind` takes the setting `key` (with the rest of `settings`).
fn takes(kind: ProviderKind, key: &str, settings: &ReasoningSettings) -> bool {
    use ProviderKind as P;
    match key {
        "effort" => match kind {
            P::OpenAi | P::OpenAiResponses | P::AzureOpenAi => true,
            k if k.speaks_messages() => settings.adaptive,
            _ => false,
        },
        "budget_tokens" | "mode" | "interleaved" => kind.speaks_messages(),
        "summary" | "previous_response_id" => kind == P::OpenAiResponses,
        "send_back" => matches!(kind, P::OpenAi | P::AzureOpenAi),
        _ => false,
    }
}

impl Checker<'_> {
    /// The job's reasoning settings for a model served by `kind`;
    /// `provider_changed` when a flag chose another provider than the job's.
    pub(super) fn reasoning(
        &mut self,
        raw: Option<&Spanned<RawReasoning>>,
        (kind, model): (ProviderKind, Option<&str>),
        provider_changed: bool,
        overrides: &FlagValues,
    ) -> ReasoningSettings {
        let (mut settings, mut written) = self.written_reasoning(raw);
        if let Some(effort) = overrides.reasoning_effort {
            settings.effort = Some(effort);
            written.retain(|w| w.key != "effort");
            written.push(Written {
                key: "effort",
                at: None,
            });
        }
        if let Some(budget) = overrides.thinking_budget {
            settings.budget_tokens = Some(budget);
            settings.adaptive = false;
            written.retain(|w| !matches!(w.key, "budget_tokens" | "mode"));
            written.push(Written {
                key: "budget_tokens",
                at: None,
            });
        }
        // A replay serves what was recorded: the settings shaped the
        // recording, and no request goes anywhere.
        if kind == ProviderKind::Replay {
            return settings;
        }
        self.combinations(kind, &settings, &written);
        if kind.speaks_messages()
            && let Some(problem) =
                model.and_then(|m| crate::provider::anthropic::reasoning_problem(&settings, m))
        {
            self.error_at_key_or_flag(
                written
                    .iter()
                    .find(|w| w.key == "budget_tokens")
                    .and_then(|w| w.at),
                "--thinking-budget",
                problem,
            );
        }
        for w in &written {
            if takes(kind, w.key, &settings) {
                continue;
            }
            let name = kind.as_str();
            let who = takers(w.key);
            match w.at {
                Some(at) if provider_changed => {
                    self.r.warning(
                        at,
                        format!(
                            "`reasoning.{}` is left out: --model chose provider {name}, which \
                             does not take it (it is for {who})",
                            w.key
                        ),
                    );
                    clear(&mut settings, w.key);
                }
                Some(at) => self.r.error(
                    at,
                    format!(
                        "provider {name} does not take `reasoning.{}`; it is for {who}: remove \
                         it or change the provider",
                        w.key
                    ),
                ),
                None => self.r.diagnostics.push(Diagnostic::flag(
                    flag_of(w.key),
                    format!(
                        "provider {name} does not take {}; it is for {who}",
                        flag_of(w.key)
                    ),
                )),
            }
        }
        settings
    }

    /// The settings as the job wrote them, each read where it stands.
    fn written_reasoning(
        &mut self,
        raw: Option<&Spanned<RawReasoning>>,
    ) -> (ReasoningSettings, Vec<Written>) {
        let mut settings = ReasoningSettings::default();
        let mut written = Vec::new();
        let Some(raw) = raw.map(|r| &r.value) else {
            return (settings, written);
        };
        let mut note = |key, at| written.push(Written { key, at: Some(at) });
        if let Some(v) = &raw.effort {
            note("effort", pos_of(&self.r, v));
            settings.effort = self.choice(
                v,
                "effort",
                Effort::parse,
                "`minimal`, `low`, `medium` or `high`",
            );
        }
        if let Some(v) = &raw.budget_tokens {
            note("budget_tokens", pos_of(&self.r, v));
            settings.budget_tokens = self.budget_tokens(v);
        }
        if let Some(v) = &raw.mode {
            note("mode", pos_of(&self.r, v));
            settings.adaptive = self
                .choice(
                    v,
                    "mode",
                    |m| match m {
                        "adaptive" => Some(true),
                        "manual" => Some(false),
                        _ => None,
                    },
                    "`adaptive` or `manual`",
                )
                .unwrap_or(false);
        }
        if let Some(v) = &raw.interleaved {
            note("interleaved", pos_of(&self.r, v));
            settings.interleaved = self.boolean(v, "interleaved").unwrap_or(false);
        }
        if let Some(v) = &raw.summary {
            note("summary", pos_of(&self.r, v));
            settings.summary = self.choice(
                v,
                "summary",
                |s| match s {
                    "auto" => Some(SummaryMode::Auto),
                    "none" => Some(SummaryMode::None),
                    _ => None,
                },
                "`auto` or `none`",
            );
        }
        if let Some(v) = &raw.send_back {
            note("send_back", pos_of(&self.r, v));
            settings.send_back = self.boolean(v, "send_back");
        }
        if let Some(v) = &raw.previous_response_id {
            note("previous_response_id", pos_of(&self.r, v));
            settings.previous_response_id =
                self.boolean(v, "previous_response_id").unwrap_or(false);
        }
        (settings, written)
    }

    /// Manual thinking (a budget) and adaptive thinking exclude each other,
    /// interleaving needs thinking on, and Anthropic's effort has no `minimal`.
    fn combinations(
        &mut self,
        kind: ProviderKind,
        settings: &ReasoningSettings,
        written: &[Written],
    ) {
        let at = |key: &str| written.iter().find(|w| w.key == key).and_then(|w| w.at);
        // https://docs.claude.com/en/docs/build-with-claude/effort: low, medium, high.
        if kind.speaks_messages() && settings.adaptive && settings.effort == Some(Effort::Minimal) {
            let message = format!(
                "provider {} takes effort `low`, `medium` or `high`, not `minimal`",
                kind.as_str()
            );
            self.error_at_key_or_flag(at("effort"), "--reasoning-effort", message);
        }
        if settings.adaptive && settings.budget_tokens.is_some() {
            let message = "`mode: adaptive` lets the model decide how long to think, so it takes \
                           no `budget_tokens`: remove one of them (use `effort` to steer adaptive \
                           thinking)";
            self.error_at_key_or_flag(at("mode"), "--thinking-budget", message);
        }
        if settings.interleaved
            && !settings.thinking()
            && let Some(pos) = at("interleaved")
        {
            self.r.error(
                pos,
                "`interleaved: true` needs thinking on: add `budget_tokens: N` (manual \
                 thinking) or `mode: adaptive`",
            );
        }
    }

    /// An error at the job's key when the job wrote it (`at`), else at `flag`.
    fn error_at_key_or_flag(&mut self, at: Option<Pos>, flag: &str, message: impl Into<String>) {
        match at {
            Some(pos) => self.r.error(pos, message),
            None => self.r.diagnostics.push(Diagnostic::flag(flag, message)),
        }
    }

    /// A text setting that must be one of a few words.
    fn choice<T>(
        &mut self,
        value: &Spanned<String>,
        key: &str,
        parse: impl Fn(&str) -> Option<T>,
        expected: &str,
    ) -> Option<T> {
        let parsed = parse(value.value.trim());
        if parsed.is_none() {
            let at = pos_of(&self.r, value);
            self.r.error(
                at,
                format!(
                    "unknown `reasoning.{key}` `{}`; expected {expected}",
                    value.value
                ),
            );
        }
        parsed
    }

    fn budget_tokens(&mut self, value: &Spanned<Scalar>) -> Option<u32> {
        let n = self.positive(value, "budget_tokens", MAX_BUDGET_TOKENS)?;
        if n < MIN_BUDGET_TOKENS {
            let at = pos_of(&self.r, value);
            self.r.error(
                at,
                format!(
                    "`budget_tokens` must be at least {MIN_BUDGET_TOKENS} (the Messages API's \
                     minimum), found `{n}`"
                ),
            );
            return None;
        }
        u32::try_from(n).ok()
    }
}

/// The command-line flag that sets `key`.
fn flag_of(key: &str) -> &'static str {
    match key {
        "effort" => "--reasoning-effort",
        _ => "--thinking-budget",
    }
}

/// Forgets one setting the provider does not take.
fn clear(settings: &mut ReasoningSettings, key: &str) {
    match key {
        "effort" => settings.effort = None,
        "budget_tokens" => settings.budget_tokens = None,
        "mode" => settings.adaptive = false,
        "interleaved" => settings.interleaved = false,
        "summary" => settings.summary = None,
        "send_back" => settings.send_back = None,
        "previous_response_id" => settings.previous_response_id = false,
        _ => {}
    }
}
