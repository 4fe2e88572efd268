//! GitHub's workflow commands as agentci writes them: `::error …::` and
//! `::warning …::` annotations, with their message and properties escaped
//! the way the runner reads them back, so text from a run cannot end a
//! property or start a command of its own; text from the run is made
//! inert ([`crate::inert`]) first.
//!
//! Only the text of a command; when and where one is written is the sinks'.

/// `::KIND file=F,line=L,title=T::MESSAGE`, escaped as the runner expects.
pub fn annotation(
    kind: &str,
    file: &str,
    line: usize,
    title: Option<&str>,
    message: &str,
) -> String {
    let mut properties = Vec::new();
    if !file.is_empty() {
        properties.push(format!("file={}", escape_property(file)));
        properties.push(format!("line={line}"));
    }
    if let Some(title) = title {
        properties.push(format!("title={}", escape_property(title)));
    }
    let properties = if properties.is_empty() {
        String::new()
    } else {
        format!(" {}", properties.join(","))
    };
    format!("::{kind}{properties}::{}", escape_data(message))
}

/// The message part of a workflow command: made inert (escape sequences
/// removed, a lone `\r` and other controls written out), then escaped as
/// GitHub's runner unescapes it (`%`, CR and LF as `%25`, `%0D`, `%0A`).
pub fn escape_data(text: &str) -> String {
    crate::inert::terminal(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A `key=value` property of a workflow command: as [`escape_data`], and
/// `:` and `,`, which end a property, as `%3A` and `%2C`.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_values_are_escaped() {
        assert_eq!(escape_data("50%\nnext\r\n"), "50%25%0Anext%0A");
        assert_eq!(
            escape_data("a\r::error::x\u{1b}]0;t\u{7}"),
            "a\\r::error::x"
        );
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(
            annotation("error", "src/x.rs", 3, Some("t: 1"), "bad\nthing"),
            "::error file=src/x.rs,line=3,title=t%3A 1::bad%0Athing"
        );
    }
}
