//! Durations as people write them in job files: `15m`, `90s`, `1h30m`,
//! `500ms`, or a whole number of seconds.
//!
//! Parsing and formatting only; whether a duration may be zero is for the
//! caller to decide.

use std::fmt;
use std::time::Duration;

/// A duration that could not be parsed; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    pub text: String,
    pub reason: &'static str,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid duration `{}`: {}; write a number with a unit (`ms`, `s`, `m`, `h`) such as \
             `90s`, `15m`, `1h30m`, `500ms`, or whole seconds",
            self.text, self.reason
        )
    }
}

impl std::error::Error for DurationError {}

/// Parses `1h30m`, `90s`, `500ms`, `2h`, `1h 30m` or `90` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        text: text.to_string(),
        reason,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(err("it is empty"));
    }
    if trimmed.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = trimmed
            .parse()
            .map_err(|_| err("the number is too large"))?;
        return Ok(Duration::from_secs(seconds));
    }
    let mut total_ms: u64 = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err("expected a number"));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| err("the number is too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" if rest.is_empty() => return Err(err("a number without a unit")),
            "" if rest.starts_with('.') => return Err(err("only whole numbers are allowed")),
            "" => return Err(err("unexpected character after a number")),
            _ => return Err(err("unknown unit")),
        };
        rest = rest[unit_len..].trim_start();
        total_ms = number
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or_else(|| err("the duration is too large"))?;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Formats a duration the way [`parse_duration`] reads it: `1h30m`,
/// `2m5s`, `500ms`, `0s`. Precision below a millisecond is dropped.
pub fn format_duration(duration: Duration) -> String {
    let total_ms = duration.as_millis();
    if total_ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    let parts = [
        (total_ms / 3_600_000, "h"),
        (total_ms / 60_000 % 60, "m"),
        (total_ms / 1_000 % 60, "s"),
        (total_ms % 1_000, "ms"),
    ];
    for (value, unit) in parts {
        if value > 0 {
            out.push_str(&value.to_string());
            out.push_str(unit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_documented_forms() {
        let cases = [
            ("15m", 900_000),
            ("90s", 90_000),
            ("1h30m", 5_400_000),
            ("500ms", 500),
            ("90", 90_000),
            ("1h 30m", 5_400_000),
            (" 2h ", 7_200_000),
            ("1m500ms", 60_500),
            ("0", 0),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_with_a_reason() {
        for (text, reason) in [
            ("", "it is empty"),
            ("15x", "unknown unit"),
            ("m", "expected a number"),
            ("1h30", "a number without a unit"),
            ("-5s", "expected a number"),
            ("1.5h", "only whole numbers are allowed"),
            ("5 s", "unexpected character after a number"),
            ("99999999999999999999s", "the number is too large"),
            ("9999999999999999h", "the duration is too large"),
        ] {
            let e = parse_duration(text).unwrap_err();
            assert_eq!(e.reason, reason, "{text}");
        }
        let message = parse_duration("15x").unwrap_err().to_string();
        assert!(
            message.contains("`15x`") && message.contains("1h30m"),
            "{message}"
        );
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(
            format_duration(Duration::from_millis(3_723_004)),
            "1h2m3s4ms"
        );
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in 0u64..10_000_000_000_000) {
            let d = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,24}") {
            let _ = parse_duration(&text);
        }
    }
}
