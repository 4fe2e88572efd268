//! The parts of a JSON value that change from run to run (times, ids,
//! counts), replaced before it is snapshotted. A selector is written as
//! insta's redaction selectors are (`.key`, `[]` for every element, joined:
//! `[].data.duration_ms`), so a snapshot reads the same; a path that is not
//! in the value is left alone. Kept here rather than insta's `redactions`
//! feature, which brings a parser generator (pest, 10 crates) into the
//! build for these few selectors.

use serde_json::Value;

/// `value` with what each `(selector, replacement)` selects replaced by
/// the replacement text.
pub fn redacted(value: &Value, rules: &[(&str, &str)]) -> Value {
    let mut value = value.clone();
    for (selector, replacement) in rules {
        let steps = parse(selector);
        replace(&mut value, &steps, replacement);
    }
    value
}

#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Every,
}

/// `[].data.duration_ms` → Every, Key("data"), Key("duration_ms").
fn parse(selector: &str) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    let mut rest = selector;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[]") {
            steps.push(Step::Every);
            rest = after;
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            steps.push(Step::Key(&after[..end]));
            rest = &after[end..];
        } else {
            panic!("selector `{selector}`: expected `.key` or `[]` at `{rest}`");
        }
    }
    steps
}

fn replace(value: &mut Value, steps: &[Step<'_>], replacement: &str) {
    let Some((first, rest)) = steps.split_first() else {
        *value = Value::String(replacement.to_string());
        return;
    };
    match (first, value) {
        (Step::Key(key), Value::Object(map)) => {
            if let Some(inner) = map.get_mut(*key) {
                replace(inner, rest, replacement);
            }
        }
        (Step::Every, Value::Array(items)) => {
            for item in items {
                replace(item, rest, replacement);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_reach_keys_in_every_element_and_skip_what_is_missing() {
        let trace = json!([
            {"ts": "t1", "data": {"duration_ms": 5, "kept": 1}},
            {"ts": "t2", "servers": [{"duration_ms": 7}, {"name": "x"}]},
            "not an object",
        ]);
        let out = redacted(
            &trace,
            &[
                ("[].ts", "[ts]"),
                ("[].data.duration_ms", "[ms]"),
                ("[].servers[].duration_ms", "[ms]"),
            ],
        );
        assert_eq!(
            out,
            json!([
                {"ts": "[ts]", "data": {"duration_ms": "[ms]", "kept": 1}},
                {"ts": "[ts]", "servers": [{"duration_ms": "[ms]"}, {"name": "x"}]},
                "not an object",
            ])
        );
    }
}
