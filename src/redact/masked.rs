//! [`Masked`]: the only form in which agentci writes a record to a file.
//!
//! Every file agentci leaves behind (the trace, JUnit, the checkpoint's
//! record and messages, the patch, results, summaries, HTML, cassettes) is
//! written by [`crate::safe_file`], whose functions take `Masked` bytes and
//! nothing else. A `Masked` value is made in one of two ways:
//! - by the run's [`Redactor`] ([`Redactor::mask`], [`Redactor::mask_bytes`],
//!   [`Redactor::mask_json`]), which replaces every secret it knows;
//! - by [`Masked::from_masked_parts`], for bytes put together only from
//!   parts already masked (events the bus delivered, which it masks before
//!   any sink sees them; a masked record inside its envelope; results read
//!   back from files agentci wrote masked) or from parts that cannot hold a
//!   secret (digests, counts, agentci's own words). Each use says which.
//!
//! So a new writer cannot forget masking: it has to pick one of the two,
//! by name. This module decides nothing about what is secret (the runner
//! does) and does not open files ([`crate::safe_file`] does).

use std::borrow::Cow;

use serde::Serialize;

use super::Redactor;

/// Bytes that went through the run's [`Redactor`], ready for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked<'a> {
    bytes: Cow<'a, [u8]>,
}

impl<'a> Masked<'a> {
    /// Bytes assembled only from parts masked already, or from parts that
    /// cannot hold a secret; the caller says which in a comment.
    pub fn from_masked_parts(bytes: impl Into<Cow<'a, [u8]>>) -> Masked<'a> {
        Masked {
            bytes: bytes.into(),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_owned()
    }
}

impl Redactor {
    /// `text` masked, for a file.
    pub fn mask<'a>(&self, text: &'a str) -> Masked<'a> {
        match self.redact(text) {
            Cow::Borrowed(text) => Masked::from_masked_parts(text.as_bytes()),
            Cow::Owned(text) => Masked::from_masked_parts(text.into_bytes()),
        }
    }

    /// `bytes` masked, for a file: text as [`Redactor::mask`] masks it, and
    /// bytes that are not UTF-8 (a patch of a Latin-1 file) byte for byte,
    /// so that nothing else in them changes.
    pub fn mask_bytes<'a>(&self, bytes: &'a [u8]) -> Masked<'a> {
        if self.is_empty() {
            return Masked::from_masked_parts(bytes);
        }
        if let Ok(text) = std::str::from_utf8(bytes) {
            return self.mask(text);
        }
        match self.bytes_regex() {
            Some(regex) => match regex.replace_all(bytes, super::MASK.as_bytes()) {
                Cow::Borrowed(bytes) => Masked::from_masked_parts(bytes),
                Cow::Owned(bytes) => Masked::from_masked_parts(bytes),
            },
            // No pattern could be built (see `bytes_regex`): mask what is
            // text, so a secret is never written for lack of a regex.
            None => Masked::from_masked_parts(
                self.redact(&String::from_utf8_lossy(bytes))
                    .into_owned()
                    .into_bytes(),
            ),
        }
    }

    /// `value` as JSON with every string in it masked (object keys too).
    pub fn mask_json<T: Serialize + ?Sized>(
        &self,
        value: &T,
    ) -> serde_json::Result<Masked<'static>> {
        if self.is_empty() {
            return serde_json::to_vec(value).map(Masked::from_masked_parts);
        }
        let mut json = serde_json::to_value(value)?;
        self.redact_json(&mut json);
        serde_json::to_vec(&json).map(Masked::from_masked_parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_bytes_and_json_are_masked_alike() {
        let r = Redactor::new(["tok-5f3a9c1e7d"]);
        assert_eq!(r.mask("a tok-5f3a9c1e7d b").as_bytes(), b"a *** b");
        let mut latin1 = b"caf\xe9 tok-5f3a9c1e7d \xff".to_vec();
        assert_eq!(r.mask_bytes(&latin1).as_bytes(), b"caf\xe9 *** \xff");
        // Its hex form inside bytes that are not UTF-8 too.
        latin1.extend_from_slice(b" 746f6b2d3566336139633165376");
        latin1.extend_from_slice(b"4\n");
        let masked = r.mask_bytes(&latin1);
        assert!(
            !masked
                .as_bytes()
                .windows(14)
                .any(|w| w == b"tok-5f3a9c1e7d")
        );
        assert!(masked.as_bytes().ends_with(b" ***\n"), "{masked:?}");
        let json = r
            .mask_json(&json!({"args": {"command": "echo tok-5f3a9c1e7d"}}))
            .unwrap();
        assert_eq!(json.as_bytes(), br#"{"args":{"command":"echo ***"}}"#);
    }

    #[test]
    fn a_secret_of_any_characters_is_masked_in_bytes() {
        let r = Redactor::new(["clé-5f3a9c1e7d"]);
        let bytes = b"\xff cl\xc3\xa9-5f3a9c1e7d \xfe";
        assert_eq!(r.mask_bytes(bytes).as_bytes(), b"\xff *** \xfe");
    }

    #[test]
    fn nothing_to_mask_borrows() {
        let r = Redactor::new(["tok-5f3a9c1e7d"]);
        let text = "nothing secret";
        assert!(matches!(r.mask(text).bytes, Cow::Borrowed(_)));
        assert!(matches!(
            Redactor::default().mask_bytes(b"\xff").bytes,
            Cow::Borrowed(_)
        ));
    }
}
