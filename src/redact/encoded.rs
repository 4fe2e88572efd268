//! The encoded forms of a secret that [`super::Redactor`] masks besides the
//! value itself: base64 (standard and URL-safe alphabets, with and without
//! padding) and hex (any case).
//!
//! A secret inside a longer base64 stream (`base64 .env`, `env | base64`)
//! does not encode the way it does alone: base64 maps 3 bytes to 4
//! characters, so the characters depend on where the secret starts modulo
//! 3, and the first and last character of its run also carry bits of the
//! bytes around it. For each of the 3 alignments this module takes the
//! characters that come from the secret's bits alone (the stable middle),
//! which appear in any stream holding the secret at that alignment. At most
//! the one or two boundary characters on each side stay visible: a few bits,
//! never the secret. Hex is byte-aligned, so one form covers every offset.
//!
//! Tools wrap encoded output (`base64` at 76 columns, `xxd -p` at 60), so a
//! form also matches with a line break between any two of its characters.
//! Forms of other encodings (base32, URL encoding, compressed or reversed
//! text, a secret printed in pieces) are not masked; docs/security.md says so.

use data_encoding::{BASE64, BASE64_NOPAD, BASE64URL, BASE64URL_NOPAD, Encoding, HEXLOWER};
use regex::Regex;

/// Secrets shorter than this many bytes get no encoded forms: their stable
/// base64 runs would be a handful of characters, found by chance in
/// ordinary base64 data and masked there for nothing.
pub const MIN_ENCODED_SECRET_LEN: usize = 8;

/// One regex matching every encoded form of `secrets`, longest forms first
/// so that a whole standalone encoding (padding included) wins over its
/// stable middle; `None` when no secret is long enough.
pub fn encoded_forms_regex(secrets: &[String]) -> Option<Regex> {
    let mut forms: Vec<(String, bool)> = Vec::new();
    for secret in secrets.iter().filter(|s| s.len() >= MIN_ENCODED_SECRET_LEN) {
        let bytes = secret.as_bytes();
        for form in whole_base64_forms(bytes)
            .into_iter()
            .chain(stable_base64_runs(bytes))
        {
            forms.push((form, false));
        }
        // Hex digits are matched without regard to case: `xxd` writes lower,
        // `od`-style tools and `printf %X` upper, and mixed case decodes too.
        forms.push((HEXLOWER.encode(bytes), true));
    }
    forms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
    forms.dedup();
    if forms.is_empty() {
        return None;
    }
    let alternatives: Vec<String> = forms
        .iter()
        .map(|(form, any_case)| wrapped_pattern(form, *any_case))
        .collect();
    // The forms are escaped literals; a regex too big for the default limit
    // would need thousands of long secrets. Without it the exact values are
    // still masked.
    Regex::new(&alternatives.join("|")).ok()
}

/// The encodings of `bytes` alone, padded and unpadded, in both alphabets.
fn whole_base64_forms(bytes: &[u8]) -> Vec<String> {
    [&BASE64, &BASE64_NOPAD, &BASE64URL, &BASE64URL_NOPAD]
        .iter()
        .map(|encoding| encoding.encode(bytes))
        .collect()
}

/// For each alignment (the secret starting 0, 1 or 2 bytes into a 3-byte
/// group) and each alphabet, the characters whose 6 bits all come from
/// the secret.
pub fn stable_base64_runs(bytes: &[u8]) -> Vec<String> {
    let mut runs = Vec::new();
    for offset in 0..3 {
        for encoding in [&BASE64_NOPAD, &BASE64URL_NOPAD] {
            if let Some(run) = stable_run(encoding, bytes, offset) {
                runs.push(run);
            }
        }
    }
    runs
}

/// The stable characters of `bytes` encoded `offset` bytes into a stream.
fn stable_run(encoding: &Encoding, bytes: &[u8], offset: usize) -> Option<String> {
    // Zero bytes stand in for the unknown neighbours; only characters that
    // do not depend on them are kept.
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    padded.extend_from_slice(&[0, 0]);
    let encoded = encoding.encode(&padded);
    let first_bit = 8 * offset;
    let end_bit = 8 * (offset + bytes.len());
    let first = first_bit.div_ceil(6);
    let end = end_bit / 6; // characters whose 6 bits end at or before end_bit
    (end > first).then(|| encoded[first..end].to_string())
}

/// A regex for `form` that also matches it with a line break (`\n` or
/// `\r\n`) between any two characters.
fn wrapped_pattern(form: &str, any_case: bool) -> String {
    let chars: Vec<String> = form
        .chars()
        .map(|c| regex::escape(c.encode_utf8(&mut [0; 4])))
        .collect();
    let body = chars.join(r"(?:\r?\n)?");
    if any_case {
        format!("(?i:{body})")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stable_run_of_each_alignment_is_inside_the_stream() {
        let secret = b"sk-test-0123456789";
        for prefix in [&b""[..], b"x", b"xy", b"KEY=", b"long prefix of text "] {
            let mut stream = prefix.to_vec();
            stream.extend_from_slice(secret);
            stream.extend_from_slice(b"\nmore");
            let encoded = BASE64.encode(&stream);
            let runs = stable_base64_runs(secret);
            assert!(
                runs.iter().any(|r| encoded.contains(r.as_str())),
                "{prefix:?}: {encoded} holds none of {runs:?}"
            );
        }
    }

    #[test]
    fn short_secrets_have_no_encoded_forms() {
        assert!(encoded_forms_regex(&["abcdefg".into()]).is_none());
        assert!(encoded_forms_regex(&["abcdefgh".into()]).is_some());
    }

    #[test]
    fn forms_match_across_line_breaks_and_hex_in_any_case() {
        let regex = encoded_forms_regex(&["sk-test-0123456789".into()]).unwrap();
        let hex = HEXLOWER.encode(b"sk-test-0123456789");
        assert!(regex.is_match(&hex.to_uppercase()));
        let (a, b) = hex.split_at(10);
        assert!(regex.is_match(&format!("{a}\n{b}")));
        let b64 = BASE64.encode(b"sk-test-0123456789");
        let (a, b) = b64.split_at(7);
        assert!(regex.is_match(&format!("{a}\r\n{b}")));
    }
}
