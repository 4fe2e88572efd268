//! Colour for the terminal displays: a [`Palette`] that is either on or
//! off, decided once by the CLI (`NO_COLOR`, `CLICOLOR`, `CLICOLOR_FORCE`,
//! whether stderr is a terminal) and handed to the sinks, which never read
//! the environment themselves.
//!
//! Colour goes on after text is made inert ([`crate::inert`]): the escape
//! sequences painted here are the only ones that reach the terminal.

/// What a piece of text means to a reader, and so its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    /// Passed, done.
    Good,
    /// Failed, timed out, stopped.
    Bad,
    /// Warnings, denials, a blocked step.
    Warn,
    /// What is under way now.
    Active,
    /// Secondary detail: prefixes, pending steps, finished calls.
    Dim,
    /// Headings.
    Bold,
}

/// Paints text in a `Tone`, or leaves it as it is when colour is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Palette {
    on: bool,
}

impl Palette {
    /// `on`: whether to colour at all.
    pub fn new(on: bool) -> Palette {
        Palette { on }
    }

    pub fn is_on(self) -> bool {
        self.on
    }

    /// `text` in `tone`'s colour (SGR codes), reset after it.
    pub(crate) fn paint(self, tone: Tone, text: &str) -> String {
        if !self.on || text.is_empty() {
            return text.to_string();
        }
        let code = match tone {
            Tone::Good => "32",
            Tone::Bad => "31",
            Tone::Warn => "33",
            Tone::Active => "36",
            Tone::Dim => "2",
            Tone::Bold => "1",
        };
        format!("\u{1b}[{code}m{text}\u{1b}[0m")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_off_palette_leaves_text_alone() {
        assert_eq!(Palette::new(false).paint(Tone::Bad, "failed"), "failed");
        assert_eq!(
            Palette::new(true).paint(Tone::Bad, "failed"),
            "\u{1b}[31mfailed\u{1b}[0m"
        );
        assert_eq!(Palette::new(true).paint(Tone::Good, ""), "");
    }
}
