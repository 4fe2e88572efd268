//! Whether the terminal displays are in colour, decided once from the
//! environment at the edge and handed to the sinks as a [`Palette`]. The
//! conventions: <https://no-color.org> (`NO_COLOR`, any non-empty value,
//! turns colour off, and wins) and <https://bixense.com/clicolors>
//! (`CLICOLOR_FORCE` other than `0` turns it on even when stderr is not a
//! terminal, `CLICOLOR=0` turns it off); otherwise colour when stderr is a
//! terminal.

use std::ffi::OsString;
use std::io::IsTerminal;

use crate::sink::Palette;

/// The palette for stderr, from this process's environment.
pub(super) fn stderr_palette() -> Palette {
    Palette::new(wanted(
        |name| std::env::var_os(name),
        std::io::stderr().is_terminal(),
    ))
}

/// Whether to colour, given how to read a variable and whether the output is a terminal.
fn wanted(var: impl Fn(&str) -> Option<OsString>, terminal: bool) -> bool {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    if set("NO_COLOR").is_some() {
        return false;
    }
    if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    if set("CLICOLOR").is_some_and(|v| v == "0") {
        return false;
    }
    terminal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], terminal: bool) -> bool {
        wanted(
            |name| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| OsString::from(v))
            },
            terminal,
        )
    }

    #[test]
    fn no_color_wins_force_forces_and_clicolor_zero_turns_off() {
        assert!(with(&[], true));
        assert!(!with(&[], false));
        assert!(!with(&[("NO_COLOR", "1")], true));
        assert!(
            with(&[("NO_COLOR", "")], true),
            "an empty NO_COLOR is unset"
        );
        assert!(!with(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], true));
        assert!(with(&[("CLICOLOR_FORCE", "1")], false));
        assert!(!with(&[("CLICOLOR_FORCE", "0")], false));
        assert!(!with(&[("CLICOLOR", "0")], true));
        assert!(with(&[("CLICOLOR", "1")], true));
        assert!(with(&[("CLICOLOR", "0"), ("CLICOLOR_FORCE", "1")], false));
    }
}
