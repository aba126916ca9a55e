//! The chart of an ablation: one horizontal bar per configuration for its resolve rate, with its
//! 95% Wilson interval as a whisker, as a standalone SVG (`ablation.svg`, readable in a README or
//! a pull request, and inlined by `aci inspect`). Pure: a [`Table`] in, a string out.

use std::fmt::Write as _;

use super::table::{Row, Table};

/// Left edge of the plot (room for the configuration names).
const PLOT_LEFT: f64 = 170.0;
/// Width of the 0–100% axis.
const PLOT_WIDTH: f64 = 400.0;
/// Height of one configuration's row.
const ROW_HEIGHT: f64 = 32.0;
/// Height of a bar.
const BAR_HEIGHT: f64 = 16.0;
/// Space above the first row (the title).
const TOP: f64 = 40.0;
/// Whole width of the picture (room for the value labels on the right).
const WIDTH: f64 = 820.0;
/// The base's bar colour, and the variants'.
const BASE_FILL: &str = "#3b6ea8";
const VARIANT_FILL: &str = "#8fb3d9";

/// Escapes text for SVG (XML) content and attribute values.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML 1.0 forbids most control characters, even escaped.
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The x coordinate of a percentage, clamped to the axis.
fn x_of(pct: f64) -> f64 {
    PLOT_LEFT + PLOT_WIDTH * pct.clamp(0.0, 100.0) / 100.0
}

/// A configuration name cut to what fits left of the plot.
fn short_name(name: &str) -> String {
    const MAX: usize = 22;
    if name.chars().count() <= MAX {
        name.to_owned()
    } else {
        let head: String = name.chars().take(MAX - 1).collect();
        format!("{head}…")
    }
}

/// `7/8` or `7.5/8` (a mean over repeats).
fn count(row: &Row) -> String {
    if row.resolved.fract() == 0.0 {
        format!("{:.0}/{}", row.resolved, row.instances)
    } else {
        format!("{:.1}/{}", row.resolved, row.instances)
    }
}

/// A row's name, and under it its protocol when `protocol` is set (the table compares
/// configurations of different protocols).
fn name_text(row: &Row, middle: f64, is_base: bool, protocol: bool) -> String {
    let x = PLOT_LEFT - 8.0;
    let weight = if is_base { " font-weight=\"bold\"" } else { "" };
    let name = xml_escape(&short_name(&row.config));
    if !protocol {
        return format!(
            "<text x=\"{x:.1}\" y=\"{middle:.1}\" text-anchor=\"end\" dominant-baseline=\"middle\"{weight}>{name}</text>"
        );
    }
    format!(
        "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"end\" dominant-baseline=\"middle\"{weight}>{name}</text>\
         <text class=\"protocol\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"end\" dominant-baseline=\"middle\" font-size=\"10\" fill=\"#555555\">{}</text>",
        middle - 6.0,
        middle + 7.0,
        xml_escape(&short_name(&row.protocol.label())),
    )
}

fn push_row(svg: &mut String, index: usize, row: &Row, is_base: bool, protocol: bool) {
    let top = TOP + ROW_HEIGHT * index as f64;
    let middle = top + ROW_HEIGHT / 2.0;
    let (low, high) = row.ci95_pct;
    let fill = if is_base { BASE_FILL } else { VARIANT_FILL };
    let name = xml_escape(&row.config);
    let label = format!(
        "{:.1}% ({}) · 95% CI {:.1}–{:.1}%",
        row.resolved_pct,
        count(row),
        low,
        high
    );
    let _ = writeln!(
        svg,
        "<g class=\"config\"><title>{name} ({}): {label}</title>{}\
         <rect x=\"{PLOT_LEFT:.1}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{BAR_HEIGHT:.1}\" fill=\"{fill}\"/>\
         <path d=\"M{:.2} {middle:.1}H{:.2}M{:.2} {:.1}V{:.1}M{:.2} {:.1}V{:.1}\" stroke=\"#1a1a1a\" stroke-width=\"1.5\" fill=\"none\"/>\
         <text x=\"{:.1}\" y=\"{middle:.1}\" dominant-baseline=\"middle\">{}</text></g>",
        xml_escape(&row.protocol.label()),
        name_text(row, middle, is_base, protocol),
        middle - BAR_HEIGHT / 2.0,
        x_of(row.resolved_pct) - PLOT_LEFT,
        x_of(low),
        x_of(high),
        x_of(low),
        middle - 6.0,
        middle + 6.0,
        x_of(high),
        middle - 6.0,
        middle + 6.0,
        x_of(100.0) + 10.0,
        xml_escape(&label),
    );
}

/// The chart of `table` as a standalone SVG document: a bar per configuration (the base first,
/// darker) for its resolve rate, a whisker for its 95% Wilson interval, and the figures as text.
pub fn svg(table: &Table) -> String {
    let rows = table.rows.len().max(1);
    let axis_y = TOP + ROW_HEIGHT * rows as f64 + 4.0;
    let height = axis_y + 34.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"ablation-chart\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH:.0} {height:.0}\" role=\"img\" aria-labelledby=\"chart-title\" \
         font-family=\"sans-serif\" font-size=\"12\" fill=\"#1a1a1a\">\n\
         <title id=\"chart-title\">Resolve rate per configuration, with 95% Wilson intervals (base: {})</title>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
         <text x=\"{PLOT_LEFT:.1}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">Resolve rate, 95% Wilson interval</text>\n",
        xml_escape(&table.base)
    );
    for tick in [0.0, 25.0, 50.0, 75.0, 100.0] {
        let x = x_of(tick);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{axis_y:.1}\" stroke=\"#d0d0d0\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{tick:.0}%</text>",
            TOP - 4.0,
            axis_y + 16.0,
        );
    }
    // Protocols are named under the configurations when they differ.
    let protocol = table
        .rows
        .iter()
        .any(|row| row.protocol.label() != table.rows[0].protocol.label());
    for (index, row) in table.rows.iter().enumerate() {
        push_row(&mut svg, index, row, row.config == table.base, protocol);
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn row(config: &str, resolved: f64, instances: usize, ci: (f64, f64)) -> Row {
        Row {
            config: config.to_owned(),
            protocol: crate::ablate::protocol::Protocol {
                interface: "paper ACI".to_owned(),
                parser: "thought_action".to_owned(),
                ..Default::default()
            },
            instances,
            resolved,
            resolved_pct: 100.0 * resolved / instances as f64,
            resolved_pct_spread: 0.0,
            ci95_pct: ci,
            delta_pct: 0.0,
            gained: Vec::new(),
            lost: Vec::new(),
            mcnemar_p: 1.0,
            mean_steps: 0.0,
            mean_observation_chars: 0.0,
            lint_rejections: 0,
            format_errors: 0,
            exits: BTreeMap::new(),
            cost: 0.0,
            wall_seconds: 0.0,
        }
    }

    fn demo() -> Table {
        Table {
            base: "default".to_owned(),
            rows: vec![
                row("default", 7.0, 8, (52.9, 97.8)),
                row("no-lint", 6.0, 8, (40.9, 92.9)),
            ],
        }
    }

    #[test]
    fn each_configuration_gets_a_bar_to_its_rate_and_a_whisker_over_its_interval() {
        let svg = svg(&demo());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        // 87.5% of 400 px, and 75%.
        assert!(
            svg.contains("width=\"350.00\" height=\"16.0\" fill=\"#3b6ea8\""),
            "{svg}"
        );
        assert!(
            svg.contains("width=\"300.00\" height=\"16.0\" fill=\"#8fb3d9\""),
            "{svg}"
        );
        // The base's whisker from 52.9% to 97.8% of the axis, in the first row (middle y=56).
        assert!(svg.contains("d=\"M381.60 56.0H561.20"), "{svg}");
        assert!(
            svg.contains(">87.5% (7/8) · 95% CI 52.9–97.8%</text>"),
            "{svg}"
        );
        assert!(
            svg.contains(">75.0% (6/8) · 95% CI 40.9–92.9%</text>"),
            "{svg}"
        );
        assert_eq!(svg.matches("<g class=\"config\">").count(), 2);
        assert!(svg.contains("font-weight=\"bold\">default</text>"));
        assert!(svg.contains("<title>default (paper ACI (text)): 87.5% (7/8)"));
        // One protocol: not repeated under every name.
        assert!(!svg.contains("class=\"protocol\""), "{svg}");
    }

    #[test]
    fn protocols_that_differ_are_named_under_each_configuration() {
        let mut table = demo();
        table.rows[1].config = "bash-only".to_owned();
        table.rows[1].protocol.interface = "bash-only".to_owned();
        table.rows[1].protocol.parser = "action_regex".to_owned();
        let svg = svg(&table);
        assert_eq!(svg.matches("class=\"protocol\"").count(), 2, "{svg}");
        assert!(
            svg.contains(
                "<text x=\"162.0\" y=\"82.0\" text-anchor=\"end\" dominant-baseline=\"middle\">bash-only</text>\
                 <text class=\"protocol\" x=\"162.0\" y=\"95.0\" text-anchor=\"end\" dominant-baseline=\"middle\" font-size=\"10\" fill=\"#555555\">bash-only (text)</text>"
            ),
            "{svg}"
        );
        assert!(svg.contains(">paper ACI (text)</text>"), "{svg}");
    }

    #[test]
    fn names_are_escaped_and_long_ones_cut() {
        let mut table = demo();
        table.rows[1].config = "<script>alert(1)</script>&a-very-long-config-name".to_owned();
        let svg = svg(&table);
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(
            svg.contains("&lt;script&gt;alert(1)&lt;/scr…</text>"),
            "{svg}"
        );
        assert!(svg.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt;&amp;a-very-long"));
    }

    #[test]
    fn a_mean_over_repeats_and_rates_past_the_axis_stay_in_the_picture() {
        let mut table = demo();
        table.rows[1].resolved = 6.5;
        table.rows[1].resolved_pct = 81.25;
        table.rows[1].ci95_pct = (-5.0, 120.0);
        let svg = svg(&table);
        assert!(svg.contains("(6.5/8)"), "{svg}");
        assert!(svg.contains("M170.00 88.0H570.00"), "{svg}");
    }
}
