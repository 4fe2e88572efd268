//! Line breaks in JUnit attribute values written as character references.
//!
//! A failure's `message` is often several lines (a check's last output, a
//! step's summary). XML readers normalise a raw line break inside an
//! attribute value to a space (XML 1.0 §3.3.3), so every JUnit reader
//! showed those messages on one line. `quick-junit` escapes the five XML
//! specials but leaves line breaks as they are; this pass rewrites them to
//! `&#10;` and `&#13;` inside attribute values only, leaving text, CDATA and
//! comments untouched.

/// `xml` with `\n` and `\r` inside attribute values as character references.
pub fn line_breaks_as_references(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        // Sections whose content is not markup, copied as they are.
        let skipped = [("<![CDATA[", "]]>"), ("<!--", "-->")]
            .iter()
            .find(|(open, _)| rest.starts_with(open))
            .map(|(_, close)| rest.find(close).map_or(rest.len(), |i| i + close.len()));
        if let Some(end) = skipped {
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let mut quote: Option<char> = None;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '>') => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        let mut quote: Option<char> = None;
        for c in rest[..end].chars() {
            match (quote, c) {
                (Some(_), '\n') => out.push_str("&#10;"),
                (Some(_), '\r') => out.push_str("&#13;"),
                (None, '"' | '\'') => {
                    quote = Some(c);
                    out.push(c);
                }
                (Some(q), c) if c == q => {
                    quote = None;
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_attribute_values_change() {
        let xml = "<?xml version=\"1.0\"?>\n<testcase name=\"a\">\n\
                   <failure message=\"line one\nline two\r\n\" type='x\ny'>text\nstays</failure>\n\
                   <system-out><![CDATA[a \"quoted\" <b>\nline]]></system-out><!-- a\n\"c\" -->\n</testcase>\n";
        assert_eq!(
            line_breaks_as_references(xml),
            "<?xml version=\"1.0\"?>\n<testcase name=\"a\">\n\
             <failure message=\"line one&#10;line two&#13;&#10;\" type='x&#10;y'>text\nstays</failure>\n\
             <system-out><![CDATA[a \"quoted\" <b>\nline]]></system-out><!-- a\n\"c\" -->\n</testcase>\n"
        );
    }
}
