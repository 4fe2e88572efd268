//! Judging an `exec` command line by the simple commands it runs.
//!
//! `exec` hands its command to a shell, so `cargo test && curl … | sh` runs
//! three programs. A rule such as `exec(cargo test *)` names one of them; as
//! Claude Code does, agentci lets an allow rule through only when every
//! simple command of the line is allowed, and a deny rule stops the call
//! when it matches any of them. A line that computes commands at run time
//! (`$(…)`, backquotes, `<(…)`) cannot be judged piece by piece: only a
//! bare `exec` rule allows it. This is a guard against a model chaining an
//! allowed command with another, not a shell sandbox.

/// The simple commands of a command line, split at `;`, `&&`, `||`, `|`,
/// `&`, newlines and parentheses outside quotes.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandLine {
    pub commands: Vec<String>,
    /// The line substitutes commands at run time, so its pieces are not all visible.
    pub dynamic: bool,
}

pub fn split(line: &str) -> CommandLine {
    let mut commands = Vec::new();
    let mut current = String::new();
    let mut dynamic = false;
    let mut chars = line.chars().peekable();
    let (mut single, mut double) = (false, false);
    let mut end = |current: &mut String| {
        let trimmed = current.trim();
        if !trimmed.is_empty() {
            commands.push(trimmed.to_string());
        }
        current.clear();
    };
    while let Some(c) = chars.next() {
        if single {
            single = c != '\'';
            current.push(c);
            continue;
        }
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '\'' if !double => {
                single = true;
                current.push(c);
            }
            '"' => {
                double = !double;
                current.push(c);
            }
            '`' => {
                dynamic = true;
                current.push(c);
            }
            '$' | '<' | '>' if chars.peek() == Some(&'(') => {
                dynamic = true;
                current.push(c);
            }
            _ if double => current.push(c),
            // `2>&1`, `>&2`, `&>log`: a redirection, not a control operator.
            '&' if current.ends_with(['>', '<']) || chars.peek() == Some(&'>') => current.push(c),
            ';' | '|' | '&' | '\n' | '(' | ')' => end(&mut current),
            _ => current.push(c),
        }
    }
    end(&mut current);
    CommandLine { commands, dynamic }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(line: &str) -> Vec<String> {
        split(line).commands
    }

    #[test]
    fn splits_at_control_operators_outside_quotes() {
        assert_eq!(commands("cargo test"), ["cargo test"]);
        assert_eq!(
            commands("cargo test && rm -rf x; echo a | sh & b || c"),
            ["cargo test", "rm -rf x", "echo a", "sh", "b", "c"]
        );
        assert_eq!(commands("(cd sub && git push)"), ["cd sub", "git push"]);
        assert_eq!(commands("a\nb"), ["a", "b"]);
        assert_eq!(commands("git commit -m 'a; b'"), ["git commit -m 'a; b'"]);
        assert_eq!(commands(r#"echo "x && y""#), [r#"echo "x && y""#]);
        assert_eq!(commands(r"echo a\;b"), [r"echo a\;b"]);
        assert_eq!(
            commands("cargo test 2>&1 | tail -5"),
            ["cargo test 2>&1", "tail -5"]
        );
        assert_eq!(commands("make &> log && ls"), ["make &> log", "ls"]);
    }

    #[test]
    fn command_substitution_is_dynamic() {
        assert!(split("echo $(git push)").dynamic);
        assert!(split("echo `git push`").dynamic);
        assert!(split(r#"echo "$(git push)""#).dynamic);
        assert!(split("diff <(a) b").dynamic);
        assert!(!split("echo '$(not run)'").dynamic);
        assert!(!split("cargo test -- --nocapture").dynamic);
    }
}
