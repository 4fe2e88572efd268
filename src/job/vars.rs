//! Job variables: `${{ vars.NAME }}` substitution and `--var K=V` flags.
//!
//! Only the `vars.NAME` form exists; anything else inside `${{ }}` is an
//! error rather than text passed through, so a typo never reaches the model
//! as a literal `${{ ... }}`. Which fields get substituted is the loader's
//! business, not this module's.

use std::collections::BTreeMap;

/// A problem with one `${{ ... }}` expression. `start..end` are byte offsets
/// of the whole expression in the text, and `expression` is its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarProblem {
    pub start: usize,
    pub end: usize,
    pub expression: String,
    pub message: String,
}

/// Replaces every `${{ vars.NAME }}` in `text`; reports every expression
/// that names an undefined var or is not of that form.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, Vec<VarProblem>> {
    let mut out = String::with_capacity(text.len());
    let mut problems = Vec::new();
    let mut rest_start = 0;
    while let Some(found) = text[rest_start..].find("${{") {
        let start = rest_start + found;
        out.push_str(&text[rest_start..start]);
        let inner_start = start + 3;
        let Some(close) = text[inner_start..].find("}}") else {
            problems.push(VarProblem {
                start,
                end: text.len(),
                expression: text[start..].to_string(),
                message: "unclosed `${{`; expected `${{ vars.NAME }}`".to_string(),
            });
            rest_start = text.len();
            break;
        };
        let end = inner_start + close + 2;
        let expression = &text[start..end];
        let inner = text[inner_start..inner_start + close].trim();
        let problem = |message: String| VarProblem {
            start,
            end,
            expression: expression.to_string(),
            message,
        };
        match inner.strip_prefix("vars.") {
            Some(name) if is_valid_name(name) => match vars.get(name) {
                Some(value) => out.push_str(value),
                None => problems.push(problem(undefined_message(name, vars))),
            },
            _ => problems.push(problem(format!(
                "unsupported expression `{expression}`; only `${{{{ vars.NAME }}}}` is supported"
            ))),
        }
        rest_start = end;
    }
    out.push_str(&text[rest_start..]);
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn undefined_message(name: &str, vars: &BTreeMap<String, String>) -> String {
    let defined = if vars.is_empty() {
        "no vars are defined".to_string()
    } else {
        let names: Vec<&str> = vars.keys().map(String::as_str).collect();
        format!("defined: {}", names.join(", "))
    };
    format!("undefined var `{name}` ({defined}); add it to `vars` or pass --var {name}=VALUE")
}

/// The names used as `${{ vars.NAME }}` in `text`, in order, repeats included.
pub fn referenced(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        let inner = &rest[start + 3..];
        let Some(close) = inner.find("}}") else { break };
        if let Some(name) = inner[..close].trim().strip_prefix("vars.")
            && is_valid_name(name)
        {
            names.push(name.to_string());
        }
        rest = &inner[close + 2..];
    }
    names
}

/// Var names: a letter or `_`, then letters, digits, `_` or `-`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A `--var` flag that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VarFlagError {
    #[error("`{flag}` is not of the form K=V, e.g. --var crate=core")]
    NotKeyValue { flag: String },
    #[error(
        "`{name}` in `{flag}` is not a valid var name; use letters, digits, `_` and `-`, \
         starting with a letter"
    )]
    BadName { name: String, flag: String },
}

/// Parses one `--var K=V` flag (the value may be empty and may hold `=`).
pub fn parse_var_flag(flag: &str) -> Result<(String, String), VarFlagError> {
    let Some((name, value)) = flag.split_once('=') else {
        return Err(VarFlagError::NotKeyValue {
            flag: flag.to_string(),
        });
    };
    let name = name.trim();
    if !is_valid_name(name) {
        return Err(VarFlagError::BadName {
            name: name.to_string(),
            flag: flag.to_string(),
        });
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitutes_with_or_without_spaces() {
        let v = vars(&[("crate", "core"), ("n", "3")]);
        assert_eq!(
            substitute("fix ${{ vars.crate }} x${{vars.n}}y", &v).unwrap(),
            "fix core x3y"
        );
        assert_eq!(
            substitute("no vars $ {{ here }}", &v).unwrap(),
            "no vars $ {{ here }}"
        );
    }

    #[test]
    fn reports_every_problem_with_offsets() {
        let v = vars(&[("a", "1")]);
        let text = "${{ vars.a }} ${{ vars.b }} ${{ env.HOME }} ${{ vars.a";
        let problems = substitute(text, &v).unwrap_err();
        assert_eq!(problems.len(), 3);
        assert_eq!(problems[0].expression, "${{ vars.b }}");
        assert_eq!(problems[0].start, 14);
        assert!(problems[0].message.contains("undefined var `b`"));
        assert!(problems[0].message.contains("defined: a"));
        assert!(
            problems[1]
                .message
                .contains("unsupported expression `${{ env.HOME }}`")
        );
        assert!(problems[2].message.contains("unclosed"));
    }

    #[test]
    fn var_flags() {
        assert_eq!(parse_var_flag("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_var_flag("a=").unwrap(), ("a".into(), String::new()));
        assert!(
            parse_var_flag("novalue")
                .unwrap_err()
                .to_string()
                .contains("K=V")
        );
        assert!(
            parse_var_flag("1x=2")
                .unwrap_err()
                .to_string()
                .contains("not a valid var name")
        );
    }
}
