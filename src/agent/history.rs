//! The conversation history and the processors applied to it when a request is built.
//!
//! Processors return a new list; the stored history (and so the trajectory) is never modified.
//! Long observations are cut once, when they enter the history, by [`truncate_observation`].

pub use crate::config::agent::{
    DEFAULT_MAX_OBSERVATION_LENGTH, DEFAULT_MAX_STORED_OBSERVATION_LENGTH, HistoryConfig,
};
pub use crate::protocol::Role;
pub use crate::trajectory::{HistoryItem, MessageType};

/// The history to send, built from the stored `history` under `config`.
///
/// With `last_n_observations`, the observation messages are the non-demo entries with role
/// `user` (as in v0) or `tool` (our function-calling results). The first of them (the instance
/// prompt) and the last `n` are kept; every other one gets the content
/// `Old output omitted (<k> lines)`, where k is the line count of the original content as
/// Python's `str.splitlines` counts it. All other fields are kept, so tool-call ids still pair up.
#[must_use]
pub fn process(history: &[HistoryItem], config: &HistoryConfig) -> Vec<HistoryItem> {
    let n = match config {
        HistoryConfig::Full => return history.to_vec(),
        HistoryConfig::LastNObservations { n } => *n,
    };
    let is_observation =
        |item: &HistoryItem| !item.is_demo && matches!(item.role, Role::User | Role::Tool);
    let total = history.iter().filter(|item| is_observation(item)).count();
    let mut seen = 0;
    history
        .iter()
        .map(|item| {
            if !is_observation(item) {
                return item.clone();
            }
            seen += 1;
            if seen == 1 || seen + n > total {
                return item.clone();
            }
            HistoryItem {
                content: format!(
                    "Old output omitted ({} lines)",
                    python_line_count(&item.content)
                ),
                ..item.clone()
            }
        })
        .collect()
}

/// `len(text.splitlines())` in Python: lines end at `\n`, `\r\n`, `\r`, `\x0b`, `\x0c`, `\x1c`,
/// `\x1d`, `\x1e`, `\x85`, U+2028 and U+2029, and a trailing terminator adds no empty line.
///
/// It runs over every omitted observation on every turn, so it scans bytes instead of decoding
/// characters: in UTF-8, U+0085 is `C2 85` and U+2028/U+2029 are `E2 80 A8`/`E2 80 A9`, and
/// `C2`/`E2` only ever start a character.
fn python_line_count(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut lines = 0;
    let mut line_open = false;
    let mut at = 0;
    while at < bytes.len() {
        let next = |offset: usize| bytes.get(at + offset).copied();
        let terminator = match bytes[at] {
            b'\r' if next(1) == Some(b'\n') => 2,
            b'\r' | b'\n' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
            0xc2 if next(1) == Some(0x85) => 2,
            0xe2 if next(1) == Some(0x80) && matches!(next(2), Some(0xa8 | 0xa9)) => 3,
            _ => 0,
        };
        if terminator == 0 {
            line_open = true;
            at += 1;
        } else {
            lines += 1;
            line_open = false;
            at += terminator;
        }
    }
    lines + usize::from(line_open)
}

/// Cuts `observation` to at most `max_chars` characters of output, keeping the first and last
/// halves, and puts a note in the middle that says how many characters were elided and what to do
/// instead. Returns the text and the number of characters elided (0 when nothing was cut, and the
/// text is then returned unchanged). Counts are in Unicode scalar values, so no character is
/// split. The note itself is not counted against `max_chars`.
#[must_use]
pub fn truncate_observation(observation: &str, max_chars: usize) -> (String, usize) {
    let total = observation.chars().count();
    if total <= max_chars {
        return (observation.to_owned(), 0);
    }
    let elided = total - max_chars;
    let head_chars = max_chars / 2;
    let tail_chars = max_chars - head_chars;
    let head_end = byte_offset(observation, head_chars);
    let tail_start = byte_offset(observation, total - tail_chars);
    let note = format!(
        "\n<response clipped><NOTE>Observations should not exceed {max_chars} characters. \
{elided} characters were elided from the middle of this output. Please try a different command \
that produces less output or use head/tail/grep/redirect the output to a file. Do not use \
interactive pagers.</NOTE>\n"
    );
    let text = format!(
        "{}{note}{}",
        &observation[..head_end],
        &observation[tail_start..]
    );
    (text, elided)
}

/// The copy of an observation the trajectory stores: whole up to `max_chars` characters,
/// otherwise its head and tail around a note of how much was elided. The trajectory is
/// rewritten after every turn, so what one turn stores stays bounded whatever a command
/// printed or a window showed.
pub fn cap_stored_observation(observation: &str, max_chars: usize) -> String {
    let total = observation.chars().count();
    if total <= max_chars {
        return observation.to_owned();
    }
    let elided = total - max_chars;
    let head_end = byte_offset(observation, max_chars / 2);
    let tail_start = byte_offset(observation, total - (max_chars - max_chars / 2));
    format!(
        "{}\n<aci: {elided} characters elided from the middle of this observation in the \
         trajectory (agent.max_stored_observation_length = {max_chars})>\n{}",
        &observation[..head_end],
        &observation[tail_start..]
    )
}

/// The byte offset of character number `chars` in `text` (its length when past the end).
fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(offset, _)| offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(content: &str, message_type: MessageType) -> HistoryItem {
        HistoryItem::new(Role::User, content, message_type)
    }

    fn assistant(content: &str) -> HistoryItem {
        HistoryItem {
            thought: Some("I look.".to_owned()),
            action: Some(content.to_owned()),
            ..HistoryItem::new(Role::Assistant, content, MessageType::Action)
        }
    }

    fn demo(role: Role, content: &str) -> HistoryItem {
        HistoryItem {
            is_demo: true,
            ..HistoryItem::new(role, content, MessageType::Demonstration)
        }
    }

    fn observation(content: &str) -> HistoryItem {
        user(content, MessageType::Observation)
    }

    fn omitted(item: &HistoryItem, lines: usize) -> HistoryItem {
        HistoryItem {
            content: format!("Old output omitted ({lines} lines)"),
            ..item.clone()
        }
    }

    /// System, a demo pair, the instance, then `count` action/observation pairs.
    fn session(count: usize) -> Vec<HistoryItem> {
        let mut items = vec![
            HistoryItem::new(Role::System, "You are an agent.", MessageType::SystemPrompt),
            demo(Role::User, "demo problem\nline 2"),
            demo(Role::Assistant, "demo action"),
            user("Fix the bug.\nIt is in a.py.", MessageType::Instance),
        ];
        for i in 1..=count {
            items.push(assistant(&format!("cmd {i}")));
            items.push(observation(&format!("out {i}\n").repeat(i)));
        }
        items
    }

    #[test]
    fn full_history_is_sent_unchanged() {
        let history = session(8);
        assert_eq!(process(&history, &HistoryConfig::Full), history);
    }

    #[test]
    fn last_n_keeps_the_instance_prompt_demos_and_the_last_n_observations() {
        let history = session(8);
        let processed = process(&history, &HistoryConfig::LastNObservations { n: 5 });
        let mut expected = history.clone();
        // Observations 1..=3 sit at indexes 5, 7, 9; observation i has i lines.
        for (index, lines) in [(5, 1), (7, 2), (9, 3)] {
            expected[index] = omitted(&history[index], lines);
        }
        assert_eq!(processed, expected);
    }

    #[test]
    fn last_n_changes_nothing_while_there_are_at_most_n_observations_after_the_instance() {
        let history = session(5);
        assert_eq!(
            process(&history, &HistoryConfig::LastNObservations { n: 5 }),
            history
        );
    }

    #[test]
    fn last_n_with_n_zero_omits_every_observation_but_the_instance_prompt() {
        let history = session(2);
        let mut expected = history.clone();
        expected[5] = omitted(&history[5], 1);
        expected[7] = omitted(&history[7], 2);
        assert_eq!(
            process(&history, &HistoryConfig::LastNObservations { n: 0 }),
            expected
        );
    }

    #[test]
    fn tool_results_count_as_observations_and_keep_their_call_ids() {
        let tool = HistoryItem {
            tool_call_ids: Some(vec!["call_1".to_owned()]),
            ..HistoryItem::new(Role::Tool, "a\nb\nc", MessageType::Observation)
        };
        let history = vec![
            user("Fix it.", MessageType::Instance),
            assistant("ls"),
            tool.clone(),
            assistant("pwd"),
            observation("/testbed"),
        ];
        let mut expected = history.clone();
        expected[2] = omitted(&tool, 3);
        assert_eq!(
            process(&history, &HistoryConfig::LastNObservations { n: 1 }),
            expected
        );
    }

    #[test]
    fn omitted_line_counts_follow_python_splitlines() {
        let cases = [
            ("", 0),
            ("one", 1),
            ("one\n", 1),
            ("one\n\n", 2),
            ("a\r\nb\rc\nd", 4),
            ("a\x0bb\x0cc\u{85}d\u{2028}e\u{2029}", 5),
            ("\n", 1),
            ("é€😀\nß", 2),
            ("a\u{2027}b\u{a0}c", 1),
        ];
        let counts: Vec<(&str, usize)> = cases
            .iter()
            .map(|(text, _)| (*text, python_line_count(text)))
            .collect();
        assert_eq!(counts, cases.to_vec());
    }

    #[test]
    fn history_items_serialise_in_sweagent_key_order_without_empty_fields() {
        let item = HistoryItem {
            is_demo: true,
            thought: Some("t".to_owned()),
            action: Some("ls".to_owned()),
            tool_calls: Some(serde_json::json!([{"id": "c1"}])),
            tool_call_ids: Some(vec!["c1".to_owned()]),
            ..HistoryItem::new(Role::Assistant, "t\nls", MessageType::Action)
        };
        let plain = HistoryItem::new(Role::User, "out", MessageType::Observation);
        assert_eq!(
            (
                serde_json::to_string(&item).unwrap(),
                serde_json::to_string(&plain).unwrap()
            ),
            (
                r#"{"role":"assistant","content":"t\nls","agent":"primary","message_type":"action","is_demo":true,"thought":"t","action":"ls","tool_calls":[{"id":"c1"}],"tool_call_ids":["c1"]}"#.to_owned(),
                r#"{"role":"user","content":"out","agent":"primary","message_type":"observation"}"#.to_owned()
            )
        );
    }

    #[test]
    fn unknown_message_types_and_keys_survive_a_round_trip() {
        let json = r#"{"role":"user","content":"x","agent":"primary","message_type":"user_review","cache_control":{"type":"ephemeral"}}"#;
        let item: HistoryItem = serde_json::from_str(json).unwrap();
        assert_eq!(
            (
                item.message_type.clone(),
                serde_json::to_string(&item).unwrap()
            ),
            (
                Some(MessageType::Other("user_review".to_owned())),
                json.to_owned()
            )
        );
    }

    #[test]
    fn history_config_reads_both_types_with_a_default_n() {
        let configs: Vec<HistoryConfig> = serde_json::from_str(
            r#"[{"type": "last_n_observations"}, {"type": "last_n_observations", "n": 2}, {"type": "full"}]"#,
        )
        .unwrap();
        assert_eq!(
            configs,
            vec![
                HistoryConfig::default(),
                HistoryConfig::LastNObservations { n: 2 },
                HistoryConfig::Full
            ]
        );
        assert_eq!(
            HistoryConfig::default(),
            HistoryConfig::LastNObservations { n: 5 }
        );
    }

    #[test]
    fn history_config_rejects_unknown_keys_and_types() {
        let errors: Vec<bool> = [
            r#"{"type": "last_n_observations", "m": 2}"#,
            r#"{"type": "last_5"}"#,
        ]
        .iter()
        .map(|json| serde_json::from_str::<HistoryConfig>(json).is_err())
        .collect();
        assert_eq!(errors, vec![true, true]);
    }

    #[test]
    fn short_observations_are_returned_unchanged() {
        assert_eq!(
            (
                truncate_observation("hello", 5),
                truncate_observation("", 0)
            ),
            (("hello".to_owned(), 0), (String::new(), 0))
        );
    }

    #[test]
    fn long_observations_keep_head_and_tail_around_a_note() {
        let (text, elided) = truncate_observation("0123456789abcdefghij", 10);
        assert_eq!(
            (text.as_str(), elided),
            (
                "01234\n<response clipped><NOTE>Observations should not exceed 10 characters. \
10 characters were elided from the middle of this output. Please try a different command that \
produces less output or use head/tail/grep/redirect the output to a file. Do not use interactive \
pagers.</NOTE>\nfghij",
                10
            )
        );
    }

    /// The note as the model sees it, to build whole expected values.
    fn note(max_chars: usize, elided: usize) -> String {
        format!(
            "\n<response clipped><NOTE>Observations should not exceed {max_chars} characters. \
{elided} characters were elided from the middle of this output. Please try a different command \
that produces less output or use head/tail/grep/redirect the output to a file. Do not use \
interactive pagers.</NOTE>\n"
        )
    }

    #[test]
    fn truncation_never_splits_a_multibyte_character() {
        assert_eq!(
            truncate_observation("äöü€😀ß漢字", 5),
            (format!("äö{}ß漢字", note(5, 3)), 3)
        );
    }

    #[test]
    fn a_zero_limit_elides_everything_but_the_note() {
        assert_eq!(truncate_observation("abc", 0), (note(0, 3), 3));
    }
}
