//! Tests for the turn view: the demo run's windows, rejection, edit and patch; re-asks and
//! nudges; escaping; folding; SWE-agent 1.x edits.

use serde_json::json;

use super::*;

/// The demo's moneyfmt run: a window, a rejected edit, the fixed edit, tests, submit.
const MONEYFMT: &str = include_str!("../../tests/fixtures/inspect/demo__moneyfmt-1.traj");

fn steps_of(text: &str) -> Vec<Value> {
    let value: Value = serde_json::from_str(text).unwrap();
    value["trajectory"].as_array().unwrap().clone()
}

/// The turns of `steps` read as a trajectory, their texts under `x/`.
fn render(steps: &[Value], prefix: &str) -> String {
    let traj = json!({ "trajectory": steps }).to_string();
    let view =
        crate::inspect::trajectory::read(traj.as_bytes(), crate::inspect::trajectory::Keep::View)
            .unwrap();
    render_turns(&view.steps, view.summary.steps, prefix, "x/")
}

/// The HTML of turn `n` (1-based) in `html`.
fn turn(html: &str, n: usize) -> &str {
    let start = html.find(&format!("id=\"t{n}\"")).unwrap();
    let end = html[start..]
        .find("</section>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

#[test]
fn the_demo_run_shows_windows_the_rejection_the_edit_and_the_patch() {
    let html = render(&steps_of(MONEYFMT), "");
    assert_eq!(html.matches("<section class=\"turn\"").count(), 9);
    // Turn 2 opens the file: a code viewer with its numbers beside the lines.
    let open = turn(&html, 2);
    assert!(
        open.contains(
            "<div class=\"code-head\">/testbed/moneyfmt/format.py · 50 lines · showing 1–50</div>"
        ),
        "{open}"
    );
    assert!(open.contains("<pre class=\"gutter\">1\n2\n3\n"), "{open}");
    // Turn 5: the lint gate rejects the edit, in red, with its message, and the diff shows the
    // unclosed call replacing the closed one, numbered on both sides.
    let rejected = turn(&html, 5);
    assert!(rejected.contains("<span class=\"badge unresolved\">lint rejected</span>"));
    assert!(rejected.contains(
        "<div class=\"verdict rejected\">Edit rejected by the lint gate: not applied<ul><li>E999 SyntaxError: &#39;(&#39; was never closed</li></ul></div>"
    ), "{rejected}");
    assert!(rejected.contains(
        "<span class=\"l del\"><span class=\"o\">35</span><span class=\"n\"></span>-        int_part = group_digits(int_part, loc.group_sep, loc.group_size)</span>"
    ), "{rejected}");
    assert!(rejected.contains(
        "<span class=\"l add\"><span class=\"o\"></span><span class=\"n\">39</span>+        int_part = group_digits(int_part, loc.group_sep, loc.group_size</span>"
    ), "{rejected}");
    // The windows are aligned: the unchanged lines after the edit pair up, shifted by one.
    assert!(rejected.contains(
        "<span class=\"l\"><span class=\"o\">40</span><span class=\"n\">41</span>     number = int_part</span>"
    ), "{rejected}");
    // Turn 6: the fixed edit lands, shown against the lines the earlier window showed.
    let applied = turn(&html, 6);
    assert!(applied.contains("<div class=\"verdict accepted\">Edit applied</div>"));
    assert!(
        applied.contains("/testbed/moneyfmt/format.py · lines 33–38 replaced</div>"),
        "{applied}"
    );
    assert!(applied.contains(
        "<span class=\"l del\"><span class=\"o\">34</span><span class=\"n\"></span>-    if grouping:</span>"
    ), "{applied}");
    assert!(applied.contains(
        "<span class=\"l add\"><span class=\"o\"></span><span class=\"n\">34</span>+    # strip the sign before grouping, or it is counted as a digit</span>"
    ), "{applied}");
    // Turn 9 submits: the observation is the patch, coloured.
    let submit = turn(&html, 9);
    assert!(submit.contains("<span class=\"badge\">patch</span>"));
    assert!(submit.contains(
        "<span class=\"l file\">diff --git a/moneyfmt/format.py b/moneyfmt/format.py</span>"
    ));
}

#[test]
fn re_asks_and_nudges_are_shown_apart_from_the_turns() {
    let steps = vec![
        json!({"action": "", "observation": "Your output was not formatted correctly.", "response": "I think…",
               "thought": "I think…", "format_error": "Your output was not formatted correctly.", "state": {}}),
        json!({"action": "ls", "observation": "a.py", "response": "ls", "thought": "",
               "nudge": "You have 2 steps left.", "state": {"open_file": "n/a", "working_dir": "/testbed"},
               "execution_time": 0.5}),
    ];
    let html = render(&steps, "x-");
    let reask = turn(&html.replace("x-t", "t"), 1).to_owned();
    assert!(
        reask.starts_with("id=\"t1\"><div class=\"head\"><span class=\"n\">Re-ask 1</span>"),
        "{reask}"
    );
    assert!(reask.contains("the answer the parser rejected (not kept in the history)"));
    assert!(reask.contains(
        "asked again with</div><pre class=\"obs\">Your output was not formatted correctly.</pre>"
    ));
    assert!(html.contains("<section class=\"turn reask\" id=\"x-t1\">"));
    let nudged = turn(&html.replace("x-t", "t"), 2).to_owned();
    assert!(nudged.contains(
        "<div class=\"nudge\"><b>Nudge</b> sent with this request (not kept in the history)<pre>You have 2 steps left.</pre></div>"
    ));
    assert!(
        nudged.contains("<span class=\"meta\">in /testbed · 0.50 s</span>"),
        "{nudged}"
    );
}

#[test]
fn model_output_is_escaped_everywhere_in_a_turn() {
    let hostile = "<script>document.title='pwned'</script></textarea><img src=x onerror=alert(1)> javascript:alert(1)";
    let steps = vec![json!({
        "action": hostile, "observation": hostile, "response": hostile, "thought": hostile,
        "nudge": hostile, "state": {"working_dir": hostile, "open_file": "\"><script>x</script>"}
    })];
    let html = render(&steps, "");
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("</textarea>"), "{html}");
    assert!(!html.contains("href=\"javascript"), "{html}");
    assert!(
        html.contains(
            "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;&lt;/textarea&gt;"
        )
    );
}

#[test]
fn long_outputs_show_their_first_and_last_lines_and_link_their_full_text() {
    let long: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    let steps =
        vec![json!({"action": "cat big.txt", "observation": long, "thought": "", "response": ""})];
    let html = render(&steps, "");
    let observation = html.split("observation</div>").nth(1).unwrap();
    let (head, rest) = observation.split_once("<div class=\"elided\">").unwrap();
    assert!(
        head.starts_with("<div class=\"folded\"><pre class=\"obs\">line 1\nline 2\n")
            && head.ends_with("line 12</pre>"),
        "{head}"
    );
    assert!(
        rest.starts_with(
            "⋯ <a class=\"full-text\" href=\"x/t1-observation.txt\" data-bytes=\"1692\">show all 201 lines (1692 characters)</a></div><pre class=\"obs\">line 197\nline 198\nline 199\nline 200\n</pre></div>"
        ),
        "{rest}"
    );
    assert!(!html.contains("line 13\n") && !html.contains("line 196\n"));
    // One long line shows its start and end only, cut at characters.
    let wide = format!("{}{}", "é".repeat(5000), "z".repeat(10));
    let html = render(&[json!({"action": "x", "observation": wide})], "");
    assert!(
        html.contains(&format!("<pre class=\"obs\">{}</pre>", "é".repeat(750))),
        "{html}"
    );
    assert!(html.contains("show all 1 lines (5010 characters)"));
    assert!(html.len() < 4_000, "{}", html.len());
}

#[test]
fn a_page_past_its_budget_shows_the_rest_of_the_turns_in_brief() {
    // A window of 200 lines (15 KB, kept whole and shown as code), 600 times: 20 MB of turns
    // unless the budget cuts them short.
    let lines: String = (1..=200)
        .map(|n| format!("{n}:{}\n", "v".repeat(70)))
        .collect();
    let window = json!({
        "action": "open a.py\nsecond line",
        "observation": format!("[File: /a.py (200 lines total)]\n{lines}"),
    });
    let steps: Vec<Value> = std::iter::repeat_n(window, 600).collect();
    let html = render(&steps, "");
    // The budgets, the turns that crossed them, the brief turns, then the bare ones.
    assert!(html.len() < BRIEF_BUDGET + 200_000, "{}", html.len());
    let full = html.matches("<div class=\"part observation\">").count();
    let brief = html.matches("this page is long: ").count();
    let bare = html.matches("<section class=\"turn bare\"").count();
    assert_eq!(full + brief + bare, 600);
    assert!(full > 0 && brief > 0 && bare > 0, "{full} {brief} {bare}");
    assert!(turn(&html, 1).contains("<pre class=\"gutter\">1\n2\n3\n"));
    let brief_turn = turn(&html, full + 1);
    assert!(!brief_turn.contains("gutter"), "{brief_turn}");
    assert!(brief_turn.contains("<pre>open a.py</pre>"), "{brief_turn}");
    assert!(
        brief_turn.contains(&format!(
            "this page is long: <a class=\"full-text\" href=\"x/t{}-observation.txt\"",
            full + 1
        )),
        "{brief_turn}"
    );
    assert!(html.ends_with(
        "<section class=\"turn bare\" id=\"t600\"><div class=\"head\"><span class=\"n\">Turn 600</span><code>open a.py</code></div></section>\n"
    ));
}

#[test]
fn a_sweagent_1_x_edit_shows_as_a_diff_and_its_views_as_code() {
    let steps = steps_of(include_str!("../../tests/fixtures/sweagent_v1.traj"));
    let html = render(&steps, "");
    let view = turn(&html, 1);
    assert!(
        view.contains("<pre class=\"gutter\">1459\n1460\n1461\n1462\n1463\n</pre>"),
        "{view}"
    );
    let edit = turn(&html, 2);
    assert!(
        edit.contains("<div class=\"verdict accepted\">str_replace</div>"),
        "{edit}"
    );
    assert!(edit.contains(
        "<span class=\"l add\"><span class=\"o\"></span><span class=\"n\">1</span>+        return int(round(value.total_seconds() / base_unit.total_seconds()))</span>"
    ), "{edit}");
    assert!(
        edit.contains("<span class=\"meta\">in /testbed · 0.18 s</span>"),
        "{edit}"
    );
}

#[test]
fn the_file_record_follows_an_edit_that_changes_the_line_count() {
    let mut files = Files::default();
    let window = Window {
        path: "/a.py",
        total: Some(5),
        above: 0,
        below: 0,
        lines: vec![(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")],
    };
    files.see(&window);
    files.apply(
        "/a.py",
        &RangeEdit {
            start: 2,
            end: 3,
            lines: vec!["x", "y", "z"],
        },
    );
    let known: Vec<(usize, String)> = files.range("/a.py", 1, 6).unwrap();
    let texts: Vec<&str> = known.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["a", "x", "y", "z", "d", "e"]);
    assert_eq!(files.range("/a.py", 6, 7), None);
}
