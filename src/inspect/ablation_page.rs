//! The ablation view: the chart of resolve rates with their Wilson intervals (the same SVG as
//! `ablation.svg`), the comparison table of `aci ablate`, each configuration's runs, and per
//! variant the instances it gained and lost against the base, each a link to the two
//! trajectories side by side.

use std::fmt::Write as _;

use crate::ablate::chart;
use crate::ablate::table::{Row, Table};

use super::html::{encode_segment, escape, push_escaped};
use super::run_page::duration;

/// Where one configuration's repeats live in the site: `c/<config>/r<k>/index.html`.
pub fn run_link(config: &str, repeat: usize) -> String {
    format!("c/{}/r{repeat}/index.html", encode_segment(config))
}

/// The side-by-side page of `id` for `variant`: `compare/<variant>/<id>.html`.
pub fn compare_link(variant: &str, id: &str) -> String {
    format!(
        "compare/{}/{}.html",
        encode_segment(variant),
        encode_segment(id)
    )
}

fn exits(row: &Row) -> String {
    row.exits
        .iter()
        .map(|(status, n)| format!("{status}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn push_table(out: &mut String, table: &Table, repeats: &dyn Fn(&str) -> usize) {
    out.push_str(
        "<table class=\"grid\"><thead><tr><th>config</th><th>protocol</th><th class=\"num\">resolved</th><th class=\"num\">95% CI</th>\
         <th class=\"num\">Δ vs base</th><th class=\"num\">gained / lost</th><th class=\"num\">McNemar p</th>\
         <th class=\"num\">mean steps</th><th class=\"num\">obs chars / turn</th><th class=\"num\">lint rejections</th>\
         <th class=\"num\">format errors</th><th>exits</th><th class=\"num\">cost</th><th class=\"num\">wall time</th>\
         <th>runs</th></tr></thead><tbody>",
    );
    for row in &table.rows {
        let is_base = row.config == table.base;
        let spread = if row.resolved_pct_spread > 0.0 {
            format!(" ± {:.1}", row.resolved_pct_spread)
        } else {
            String::new()
        };
        let resolved = if row.resolved.fract() == 0.0 {
            format!("{:.0}", row.resolved)
        } else {
            format!("{:.1}", row.resolved)
        };
        let (delta, pairs, p) = if is_base {
            ("—".to_owned(), "—".to_owned(), "—".to_owned())
        } else {
            (
                format!("{:+.1}", row.delta_pct),
                format!("+{} / −{}", row.gained.len(), row.lost.len()),
                format!("{:.3}", row.mcnemar_p),
            )
        };
        let runs: Vec<String> = (1..=repeats(&row.config).max(1))
            .map(|k| format!("<a href=\"{}\">r{k}</a>", escape(&run_link(&row.config, k))))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}{}{}</td><td>{}</td><td class=\"num\">{resolved}/{} ({:.1}%{spread})</td><td class=\"num\">{:.1}–{:.1}%</td>\
             <td class=\"num\">{delta}</td><td class=\"num\">{pairs}</td><td class=\"num\">{p}</td><td class=\"num\">{:.1}</td>\
             <td class=\"num\">{:.0}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">${:.2}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>",
            if is_base { "<b>" } else { "" },
            escape(&row.config),
            if is_base { "</b> (base)" } else { "" },
            escape(&row.protocol.label()),
            row.instances,
            row.resolved_pct,
            row.ci95_pct.0,
            row.ci95_pct.1,
            row.mean_steps,
            row.mean_observation_chars,
            row.lint_rejections,
            row.format_errors,
            escape(&exits(row)),
            row.cost,
            duration(row.wall_seconds),
            runs.join(" "),
        );
    }
    out.push_str("</tbody></table>");
}

fn push_pairs(out: &mut String, variant: &str, label: &str, ids: &[String]) {
    let _ = write!(out, "<h3>{label} ({})</h3>", ids.len());
    if ids.is_empty() {
        out.push_str("<p class=\"muted\">none</p>");
        return;
    }
    out.push_str("<div class=\"pairs\">");
    for id in ids {
        out.push_str("<a class=\"pair\" href=\"");
        push_escaped(out, &compare_link(variant, id));
        out.push_str("\">");
        push_escaped(out, id);
        out.push_str("</a>");
    }
    out.push_str("</div>");
}

/// The body of the ablation view. `repeats` says how many repeats a configuration has on disk.
pub fn render(title: &str, table: &Table, repeats: &dyn Fn(&str) -> usize) -> String {
    let mut out = String::new();
    out.push_str("<h1>");
    push_escaped(&mut out, title);
    out.push_str("</h1><div class=\"chart\">");
    out.push_str(&chart::svg(table));
    out.push_str("</div>");
    push_table(&mut out, table, repeats);
    out.push_str(
        "<p class=\"muted\">Resolve rates are noisy: read the interval and the paired McNemar p-value \
         before reading a difference as an effect. Gained and lost compare the first repeats.</p>",
    );
    for row in table.rows.iter().filter(|row| row.config != table.base) {
        out.push_str("<h2>");
        push_escaped(&mut out, &row.config);
        out.push_str(" against ");
        push_escaped(&mut out, &table.base);
        out.push_str("</h2>");
        push_pairs(
            &mut out,
            &row.config,
            "gained: resolved only by the variant",
            &row.gained,
        );
        push_pairs(
            &mut out,
            &row.config,
            "lost: resolved only by the base",
            &row.lost,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn row(config: &str, lost: &[&str]) -> Row {
        Row {
            config: config.to_owned(),
            protocol: crate::ablate::protocol::Protocol {
                interface: "paper ACI".to_owned(),
                parser: "thought_action".to_owned(),
                ..Default::default()
            },
            instances: 8,
            resolved: 7.0,
            resolved_pct: 87.5,
            resolved_pct_spread: 0.0,
            ci95_pct: (52.9, 97.8),
            delta_pct: 0.0,
            gained: Vec::new(),
            lost: lost.iter().map(|s| (*s).to_owned()).collect(),
            mcnemar_p: 1.0,
            mean_steps: 9.6,
            mean_observation_chars: 804.4,
            lint_rejections: 1,
            format_errors: 0,
            exits: BTreeMap::from([("submitted".to_owned(), 8)]),
            cost: 0.0,
            wall_seconds: 49.3,
        }
    }

    #[test]
    fn the_view_has_the_chart_the_table_and_links_to_each_pair() {
        let table = Table {
            base: "default".to_owned(),
            rows: vec![
                row("default", &[]),
                row("no-lint", &["demo__moneyfmt-1", "<x>"]),
            ],
        };
        let html = render("ablation", &table, &|config| {
            if config == "default" { 2 } else { 1 }
        });
        assert!(
            html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"ablation-chart\"")
        );
        assert!(html.contains(
            "<td><b>default</b> (base)</td><td>paper ACI (text)</td><td class=\"num\">7/8 (87.5%)</td>"
        ));
        assert!(html.contains(
            "<a href=\"c/default/r1/index.html\">r1</a> <a href=\"c/default/r2/index.html\">r2</a>"
        ));
        assert!(html.contains("<td class=\"num\">+0 / −2</td>"));
        assert!(html.contains(
            "<a class=\"pair\" href=\"compare/no-lint/demo__moneyfmt-1.html\">demo__moneyfmt-1</a>"
        ));
        assert!(
            html.contains("<a class=\"pair\" href=\"compare/no-lint/~3Cx~3E.html\">&lt;x&gt;</a>")
        );
        assert!(html.contains(
            "<h3>gained: resolved only by the variant (0)</h3><p class=\"muted\">none</p>"
        ));
    }

    #[test]
    fn instances_a_variant_gained_are_listed_apart_from_those_it_lost() {
        let mut window = row("window-30", &["demo__lost-1"]);
        window.gained = vec!["demo__gained-1".to_owned(), "demo__gained-2".to_owned()];
        let table = Table {
            base: "default".to_owned(),
            rows: vec![row("default", &[]), window],
        };
        let html = render("ablation", &table, &|_| 1);
        assert!(html.contains("<td class=\"num\">+2 / −1</td>"));
        assert!(html.contains(
            "<h3>gained: resolved only by the variant (2)</h3><div class=\"pairs\">\
             <a class=\"pair\" href=\"compare/window-30/demo__gained-1.html\">demo__gained-1</a>\
             <a class=\"pair\" href=\"compare/window-30/demo__gained-2.html\">demo__gained-2</a></div>\
             <h3>lost: resolved only by the base (1)</h3><div class=\"pairs\">\
             <a class=\"pair\" href=\"compare/window-30/demo__lost-1.html\">demo__lost-1</a></div>"
        ));
    }
}
