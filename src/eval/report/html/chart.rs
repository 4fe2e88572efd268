//! Horizontal bar charts as inline SVG: one group of bars per row (a case
//! or a suite), one bar per series (a model, the baseline). Labels are
//! escaped here; the caller gives plain text. No scripts, no external
//! fonts: the SVG is part of the page and draws offline.

use std::fmt::Write;

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

/// One row of bars; `None` is a figure that is unknown (drawn as "—").
pub struct Row {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

/// A chart's bars: the series names (for the legend and tooltips) and how
/// each figure is written.
pub struct Chart<'a> {
    pub title: &'a str,
    pub series: &'a [String],
    /// CSS classes of the series, parallel to `series` (colours in the page's CSS).
    pub classes: &'a [String],
    pub rows: Vec<Row>,
    /// The axis maximum; `None`: the largest figure.
    pub max: Option<f64>,
    pub format: fn(f64) -> String,
}

const LABEL_W: f64 = 230.0;
const BAR_W: f64 = 380.0;
const VALUE_W: f64 = 90.0;
const BAR_H: f64 = 13.0;
const GAP: f64 = 9.0;

pub fn svg(chart: &Chart) -> String {
    let max = chart
        .max
        .unwrap_or_else(|| {
            chart
                .rows
                .iter()
                .flat_map(|r| r.values.iter().flatten())
                .fold(0.0_f64, |a, b| a.max(*b))
        })
        .max(f64::MIN_POSITIVE);
    let per_row = BAR_H * chart.series.len().max(1) as f64 + GAP;
    let height = per_row * chart.rows.len() as f64 + GAP;
    let width = LABEL_W + BAR_W + VALUE_W;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{}</title>"#,
        text(chart.title)
    );
    for (i, row) in chart.rows.iter().enumerate() {
        let top = GAP + per_row * i as f64;
        let middle = top + BAR_H * chart.series.len().max(1) as f64 / 2.0;
        let _ = write!(
            out,
            r#"<text class="label" x="{}" y="{middle}" text-anchor="end" dominant-baseline="middle">{}</text>"#,
            LABEL_W - 8.0,
            text(&shorten(&row.label, 34))
        );
        for (j, value) in row.values.iter().enumerate() {
            let y = top + BAR_H * j as f64;
            let class = chart.classes.get(j).map_or("s0", String::as_str);
            let name = chart.series.get(j).map_or("", String::as_str);
            let shown = value.map_or_else(|| "—".to_string(), chart.format);
            let w = value.map_or(0.0, |v| (v / max).clamp(0.0, 1.0) * BAR_W);
            let _ = write!(
                out,
                r#"<rect class="{}" x="{LABEL_W}" y="{y}" width="{w:.1}" height="{}"><title>{}</title></rect><text class="value" x="{:.1}" y="{}" dominant-baseline="middle">{}</text>"#,
                attr(class),
                BAR_H - 2.0,
                text(&format!("{}: {name}: {shown}", row.label)),
                LABEL_W + w + 4.0,
                y + (BAR_H - 2.0) / 2.0,
                text(&shown)
            );
        }
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LABEL_W}" y1="0" x2="{LABEL_W}" y2="{height}"/></svg>"#
    );
    out
}

/// The legend under a chart: a swatch per series.
pub fn legend(series: &[String], classes: &[String]) -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    for (name, class) in series.iter().zip(classes) {
        let _ = write!(
            out,
            r#"<span><svg width="12" height="12" aria-hidden="true"><rect class="{}" width="12" height="12"/></svg> {}</span> "#,
            attr(class),
            text(name)
        );
    }
    out.push_str("</p>");
    out
}

/// At most `max` characters, with `…` when cut.
fn shorten(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        let cut: String = label.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_bars_scale() {
        let series = vec!["now".to_string()];
        let classes = vec!["s0".to_string()];
        let out = svg(&Chart {
            title: "t",
            series: &series,
            classes: &classes,
            rows: vec![
                Row {
                    label: "<script>x</script>".into(),
                    values: vec![Some(1.0)],
                },
                Row {
                    label: "half".into(),
                    values: vec![Some(0.5)],
                },
            ],
            max: Some(1.0),
            format: |v| format!("{v}"),
        });
        assert!(!out.contains("<script>"), "{out}");
        assert!(out.contains("&lt;script&gt;"));
        assert!(out.contains(r#"width="380.0""#) && out.contains(r#"width="190.0""#));
    }
}
