//! The `secrets` and `env` keys: which environment variables hold secrets
//! (masked everywhere), and the variables `exec` and the checks get on top
//! of the scrubbed environment.
//!
//! An `env` value is text with `${{ vars.NAME }}` substituted, or exactly
//! `${{ secrets.NAME }}`, which passes the secret through by reference: it
//! is read from agentci's environment when the run starts, never stored in
//! the spec. Reading that environment is the runner's job.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::Checker;
use crate::job::load::pos_of;
use crate::job::raw::Scalar;
use crate::job::{EnvValue, EnvVar};

/// `NAME`, as POSIX shells accept it: a letter or `_`, then letters, digits or `_`.
pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Checker<'_> {
    pub(super) fn secrets(&mut self, raw: &[Spanned<String>]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in raw {
            let pos = pos_of(&self.r, name);
            let text = name.value.trim();
            if !is_env_name(text) {
                self.r.error(
                    pos,
                    format!(
                        "`{text}` is not an environment variable name; `secrets` lists the names \
                         of variables holding secrets (letters, digits and `_`), never the values"
                    ),
                );
            } else if out.iter().any(|s| s == text) {
                self.r
                    .warning(pos, format!("secret `{text}` is listed more than once"));
            } else {
                out.push(text.to_string());
            }
        }
        out
    }

    pub(super) fn env(
        &mut self,
        raw: &BTreeMap<String, Spanned<Scalar>>,
        secrets: &[String],
        vars: &BTreeMap<String, String>,
    ) -> Vec<EnvVar> {
        let mut out = Vec::new();
        for (name, value) in raw {
            let pos = pos_of(&self.r, value);
            if !is_env_name(name) {
                self.r.error(
                    pos,
                    format!(
                        "`{name}` is not an environment variable name; use letters, digits and \
                         `_`, not starting with a digit"
                    ),
                );
                continue;
            }
            let text = match &value.value {
                Scalar::Null => {
                    self.r.error(
                        pos,
                        format!("env `{name}` has no value; write `{name}: \"\"` for an empty one"),
                    );
                    continue;
                }
                Scalar::Str(s) => s.clone(),
                other => other.text(),
            };
            if let Some(secret) = secret_reference(&text) {
                let secret = secret.to_string();
                if secrets.contains(&secret) {
                    out.push(EnvVar {
                        name: name.clone(),
                        value: EnvValue::Secret(secret),
                    });
                } else {
                    self.r.error(
                        pos,
                        format!(
                            "env `{name}` refers to secret `{secret}`, which is not listed; add \
                             it to `secrets: [{secret}]`"
                        ),
                    );
                }
                continue;
            }
            if text.contains("secrets.") && text.contains("${{") {
                self.r.error(
                    pos,
                    format!(
                        "env `{name}`: a secret must be the whole value, as \
                         `{name}: \"${{{{ secrets.NAME }}}}\"`"
                    ),
                );
                continue;
            }
            let spanned = Spanned {
                value: text,
                referenced: value.referenced,
                defined: value.defined,
            };
            if let Some(text) = self.substitute(&spanned, vars) {
                out.push(EnvVar {
                    name: name.clone(),
                    value: EnvValue::Text(text),
                });
            }
        }
        out
    }
}

/// `NAME` when `text` is exactly `${{ secrets.NAME }}` (spaces inside the braces allowed).
fn secret_reference(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("${{")?.strip_suffix("}}")?.trim();
    inner
        .strip_prefix("secrets.")
        .filter(|name| is_env_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_are_shell_names() {
        assert!(is_env_name("MY_TOKEN") && is_env_name("_x1"));
        assert!(!is_env_name("1X") && !is_env_name("A-B") && !is_env_name(""));
    }

    #[test]
    fn a_secret_reference_is_the_whole_value() {
        assert_eq!(secret_reference("${{ secrets.TOKEN }}"), Some("TOKEN"));
        assert_eq!(secret_reference("${{secrets.T_1}}"), Some("T_1"));
        assert_eq!(secret_reference("Bearer ${{ secrets.TOKEN }}"), None);
        assert_eq!(secret_reference("${{ vars.TOKEN }}"), None);
    }
}
