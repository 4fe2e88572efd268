//! Masking secrets: every known secret value is replaced by `***` before it
//! can leave the process.
//!
//! Masking happens once, in the event stream: the [`EventBus`](crate::event::bus::EventBus)
//! passes every event through a [`Redactor`] before any sink sees it, so the
//! trace, the JUnit file, the logs and the GitHub summary can never disagree
//! about what is hidden, and a new sink is covered without doing anything.
//! The run also masks tool results before they go back to the model (a model
//! provider is a third party) and the summary the CLI prints. What is
//! written to a file without being an event (the checkpoint, the patch, a
//! cassette) is masked with the same redactor: files are written only as
//! [`Masked`] bytes (`masked`), which only a redactor, or a caller naming
//! its bytes as made of masked parts, can produce.
//!
//! What counts as a secret (the job's API key, its `secrets:`, well-known
//! token variables) is the runner's decision: it builds a [`Redactor`] from
//! the values; this module only masks and knows nothing about jobs.
//! Values shorter than [`MIN_SECRET_LEN`] are ignored: masking `1` or `ab`
//! would garble every line without protecting anything.
//!
//! Besides the value itself, its base64, base64url and hex encodings are
//! masked, at every alignment and across line breaks (`encoded`): a
//! command that prints `base64 .env` must not hand the key over either.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

mod encoded;
mod masked;

pub use encoded::MIN_ENCODED_SECRET_LEN;
pub use masked::Masked;

/// What a masked secret is replaced with.
pub const MASK: &str = "***";

/// Secrets shorter than this many bytes are not masked.
pub const MIN_SECRET_LEN: usize = 4;

/// Environment variables that hold credentials in the places agentci runs,
/// masked whether or not the job lists them.
pub const WELL_KNOWN_SECRETS: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Replaces known secret values with [`MASK`].
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is masked whole.
    secrets: Vec<String>,
    /// The secrets' base64 and hex forms; `None` when no secret has any.
    encoded: Option<Regex>,
    /// The secrets and their forms over bytes, for bytes that are not
    /// UTF-8; built the first time such bytes come.
    bytes: OnceLock<Option<regex::bytes::Regex>>,
}

impl Redactor {
    /// A redactor for `values`; empty and too-short values are dropped.
    pub fn new<I, S>(values: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> = values
            .into_iter()
            .map(Into::into)
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        let encoded = encoded::encoded_forms_regex(&secrets);
        Redactor {
            secrets,
            encoded,
            bytes: OnceLock::new(),
        }
    }

    /// One regex over bytes for the secrets (longest first) and their
    /// encoded forms; `None` when it cannot be built (see `encoded`).
    fn bytes_regex(&self) -> Option<&regex::bytes::Regex> {
        self.bytes
            .get_or_init(|| {
                // Each byte spelled `\xNN`: with Unicode off that matches
                // the byte itself, whatever the secret's characters are.
                let mut alternatives: Vec<String> = self
                    .secrets
                    .iter()
                    .map(|s| s.bytes().map(|b| format!("\\x{b:02x}")).collect())
                    .collect();
                alternatives.extend(self.encoded.as_ref().map(|r| r.as_str().to_string()));
                // Unicode off: a secret's bytes match wherever they stand.
                regex::bytes::RegexBuilder::new(&alternatives.join("|"))
                    .unicode(false)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret, and every encoded form of one, replaced by [`MASK`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let exact = self.redact_exact(text);
        let Some(encoded) = &self.encoded else {
            return exact;
        };
        match exact {
            Cow::Borrowed(text) => encoded.replace_all(text, MASK),
            Cow::Owned(text) => Cow::Owned(encoded.replace_all(&text, MASK).into_owned()),
        }
    }

    fn redact_exact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.secrets.iter().any(|s| text.contains(s.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MASK);
            }
        }
        Cow::Owned(out)
    }

    /// Mask every string inside a JSON value, in place (object keys included).
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(masked) = self.redact(s) {
                    *s = masked;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let Some(mut inner) = map.remove(&key) else {
                        continue;
                    };
                    self.redact_json(&mut inner);
                    map.insert(self.redact(&key).into_owned(), inner);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `value` with every string in it masked, by a round trip through JSON
    /// so that a field added to an event later is covered too. `Err` gives
    /// the value back when it no longer deserializes after masking (a secret
    /// equal to an enum tag such as `passed`); the caller must not show it.
    pub fn redact_serde<T: Serialize + DeserializeOwned>(&self, value: T) -> Result<T, T> {
        if self.is_empty() {
            return Ok(value);
        }
        let Ok(mut json) = serde_json::to_value(&value) else {
            return Err(value);
        };
        if !contains_secret(self, &json) {
            return Ok(value);
        }
        self.redact_json(&mut json);
        serde_json::from_value(json).map_err(|_| value)
    }
}

fn contains_secret(redactor: &Redactor, value: &Value) -> bool {
    match value {
        Value::String(s) => matches!(redactor.redact(s), Cow::Owned(_)),
        Value::Array(items) => items.iter().any(|v| contains_secret(redactor, v)),
        Value::Object(map) => map.iter().any(|(k, v)| {
            matches!(redactor.redact(k), Cow::Owned(_)) || contains_secret(redactor, v)
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, ToolResultEvent};
    use serde_json::json;

    #[test]
    fn masks_every_occurrence_longest_first() {
        let r = Redactor::new(["abcd", "abcdef", "", "xy"]);
        assert_eq!(r.redact("abcdef abcd abc xy"), "*** *** abc xy");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_and_empty_values_are_not_secrets() {
        assert!(Redactor::new(["", "a", "abc"]).is_empty());
    }

    #[test]
    fn every_string_of_an_event_is_masked() {
        let r = Redactor::new(["s3cr3t-token"]);
        let kind = EventKind::ToolResult(ToolResultEvent {
            call_id: "c1".into(),
            tool: "exec".into(),
            ok: true,
            error_code: None,
            summary: "printed s3cr3t-token".into(),
            data: json!({"command": "echo s3cr3t-token", "nested": ["x-s3cr3t-token-y"],
                         "s3cr3t-token": 1}),
            duration_ms: 3,
        });
        let masked = r.redact_serde(kind).unwrap();
        let text = serde_json::to_string(&masked).unwrap();
        assert!(!text.contains("s3cr3t-token"), "{text}");
        assert!(
            text.contains("printed ***") && text.contains("x-***-y"),
            "{text}"
        );
    }

    #[test]
    fn base64_and_hex_of_a_secret_are_masked() {
        use data_encoding::{BASE64, BASE64URL_NOPAD, HEXUPPER};
        let key = "sk-test-very-secret-key";
        let r = Redactor::new([key]);
        let b64 = BASE64.encode(key.as_bytes());
        assert_eq!(r.redact(&format!("out: {b64}\n")), "out: ***\n");
        let url = BASE64URL_NOPAD.encode(format!("OPENAI_API_KEY={key}").as_bytes());
        assert!(
            !r.redact(&url)
                .contains(&BASE64URL_NOPAD.encode(&key.as_bytes()[3..18]))
        );
        let hex = HEXUPPER.encode(key.as_bytes());
        assert_eq!(r.redact(&format!("[{hex}]")), "[***]");
        // Ordinary text is left alone.
        assert!(matches!(r.redact("c2stdGVzdA nothing"), Cow::Borrowed(_)));
    }

    /// The characters of `encoded` (the base64 of a stream holding a secret
    /// of `len` bytes at `offset`) that come from the secret's bits alone.
    fn secret_only_run(encoded: &str, offset: usize, len: usize) -> String {
        let first = (8 * offset).div_ceil(6);
        let end = 8 * (offset + len) / 6;
        encoded.chars().skip(first).take(end - first).collect()
    }

    proptest::proptest! {
        // For any secret and any bytes around it, no run of base64 or hex
        // characters that only the secret determines survives masking, in
        // either alphabet, wrapped at 76 columns or not.
        #[test]
        fn no_secret_only_encoding_run_survives(
            secret in "[!-~]{8,48}",
            prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            suffix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            url in proptest::prelude::any::<bool>(),
            wrap in proptest::prelude::any::<bool>(),
        ) {
            use data_encoding::{BASE64, BASE64URL, HEXLOWER};
            let r = Redactor::new([secret.as_str()]);
            let mut stream = prefix.clone();
            stream.extend_from_slice(secret.as_bytes());
            stream.extend_from_slice(&suffix);
            let encoded = if url { BASE64URL.encode(&stream) } else { BASE64.encode(&stream) };
            let run = secret_only_run(&encoded, prefix.len(), secret.len());
            let shown = if wrap {
                encoded.as_bytes().chunks(76).map(|c| String::from_utf8_lossy(c).into_owned())
                    .collect::<Vec<_>>().join("\n")
            } else {
                encoded.clone()
            };
            let masked = r.redact(&shown).replace('\n', "");
            proptest::prop_assert!(!masked.contains(&run), "{run} in {masked}");
            let hex = HEXLOWER.encode(&stream);
            let masked = r.redact(&hex).to_lowercase();
            proptest::prop_assert!(!masked.contains(&HEXLOWER.encode(secret.as_bytes())));
        }
    }

    #[test]
    fn a_secret_equal_to_an_enum_tag_withholds_the_value() {
        let r = Redactor::new(["passed"]);
        let status = crate::event::RunStatus::Passed;
        assert!(r.redact_serde(status).is_err());
    }
}
