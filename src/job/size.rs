//! Sizes as people write them in job files: `4GiB`, `512MiB`, `64KiB`,
//! `1GB`, or a whole number of bytes.
//!
//! Parsing only; which sizes make sense is for the caller to decide.

/// Parses `512MiB`, `4 GiB`, `1GB`, `100k` or `4096` (bytes). Binary units
/// (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024, decimal ones (`kB`,
/// `MB`, `GB`, `TB`) powers of 1000; a bare `K`/`M`/`G`/`T` is binary.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits].parse().ok()?;
    let factor: u64 = match text[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    number.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary_or_decimal_as_written() {
        assert_eq!(parse_size("4GiB"), Some(4 << 30));
        assert_eq!(parse_size("512 MiB"), Some(512 << 20));
        assert_eq!(parse_size("1GB"), Some(1_000_000_000));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("4096"), Some(4096));
    }

    #[test]
    fn nonsense_and_overflow_are_refused() {
        for bad in [
            "",
            "GiB",
            "4 gibibytes",
            "-1MiB",
            "1.5GiB",
            "99999999999TiB",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
