//! The report's colours pass WCAG 2 AA for text: every `color` the style
//! sheet sets has a contrast ratio of at least 4.5:1 against the background
//! it is drawn on (its own rule's, the dark header's, or each light
//! background the page uses), computed from the CSS itself so a new colour
//! cannot slip in unchecked.

use super::STYLE;

/// The light backgrounds text sits on: page, cards and tables, `pre`,
/// table headers, failed and errored rows, the warning banner.
const LIGHT: [&str; 7] = [
    "#ffffff", "#f8fafc", "#f9fafb", "#f3f4f6", "#fef2f2", "#fffbeb", "#fef3c7",
];
const HEADER: &str = "#111827";

fn channel(hex: &str, at: usize) -> f64 {
    let v = f64::from(u8::from_str_radix(&hex[at..at + 2], 16).unwrap()) / 255.0;
    if v <= 0.039_28 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

fn luminance(colour: &str) -> f64 {
    let hex = colour.trim_start_matches('#');
    let hex = if hex.len() == 3 {
        hex.chars().flat_map(|c| [c, c]).collect()
    } else {
        hex.to_string()
    };
    0.2126 * channel(&hex, 0) + 0.7152 * channel(&hex, 2) + 0.0722 * channel(&hex, 4)
}

fn ratio(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// `(selector, declarations)` of each rule.
fn rules(css: &str) -> Vec<(String, String)> {
    css.split('}')
        .filter_map(|rule| rule.split_once('{'))
        .map(|(sel, body)| (sel.trim().to_string(), body.to_string()))
        .collect()
}

/// The value of `property` in `body` (a `#rrggbb`/`#rgb` colour).
fn value(body: &str, property: &str) -> Option<String> {
    body.split(';').find_map(|decl| {
        let (name, value) = decl.split_once(':')?;
        (name.trim() == property && value.trim().starts_with('#')).then(|| value.trim().to_string())
    })
}

#[test]
fn every_text_colour_has_contrast_of_at_least_4_5_to_1() {
    let mut checked = 0;
    for (selector, body) in rules(STYLE) {
        let colour = value(&body, "color");
        let background = value(&body, "background");
        let pairs: Vec<(String, String)> = match (colour, background) {
            (Some(fg), Some(bg)) => vec![(fg, bg)],
            // Badges set white text once and a background per kind.
            (None, Some(bg)) if selector.contains("badge") => vec![("#fff".into(), bg)],
            (Some(fg), None) if selector.starts_with("header") => vec![(fg, HEADER.into())],
            (Some(fg), None) => LIGHT
                .iter()
                .map(|bg| (fg.clone(), bg.to_string()))
                .collect(),
            _ => continue,
        };
        for (fg, bg) in pairs {
            let r = ratio(&fg, &bg);
            assert!(
                r >= 4.5,
                "`{selector}`: {fg} on {bg} is {r:.2}:1, below 4.5:1"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 40,
        "only {checked} pairs found: is the CSS parsed?"
    );
    // The formula itself: black on white is 21:1.
    assert!((ratio("#000", "#fff") - 21.0).abs() < 0.01);
}
