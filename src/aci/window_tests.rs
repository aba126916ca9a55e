//! Tests for the viewer: every v0 message, the worked example of the reference, odd and huge
//! windows, and the byte-level line rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const PATH: &str = "/repo/src/big.py";

fn numbered(total: usize) -> Vec<u8> {
    (1..=total)
        .map(|n| format!("line {n}\n"))
        .collect::<String>()
        .into_bytes()
}

fn expected_view(path: &str, total: usize, first: usize, last: usize) -> String {
    let mut out = vec![format!("[File: {path} ({total} lines total)]")];
    if first > 1 {
        out.push(format!("({} more lines above)", first - 1));
    }
    out.extend((first..=last).map(|n| format!("{n}:line {n}")));
    if last < total {
        out.push(format!("({} more lines below)", total - last));
    }
    out.join("\n")
}

fn file(path: &str) -> PathKind {
    PathKind::File {
        abs_path: path.to_owned(),
    }
}

fn opened(total: usize, line: Option<&str>) -> (WindowState, String) {
    let mut state = WindowState::new(100, 2);
    let request = OpenRequest {
        path: "src/big.py".into(),
        line: line.map(str::to_owned),
    };
    let out = state.open(&request, &file(PATH), &numbered(total));
    (state, out)
}

#[test]
fn open_at_line_583_of_1000_shows_568_to_667_as_in_the_reference() {
    let (state, out) = opened(1000, Some("583"));
    assert_eq!(out, expected_view(PATH, 1000, 568, 667));
    assert!(out.contains("(567 more lines above)") && out.contains("(333 more lines below)"));
    assert_eq!((state.current_line, state.current_line_half), (617, false));
}

#[test]
fn open_without_a_line_shows_the_top_of_the_file() {
    let (state, out) = opened(1000, None);
    assert_eq!(out, expected_view(PATH, 1000, 1, 100));
    assert_eq!(state.current_line, 50);
    assert_eq!(state.file.as_deref(), Some(PATH));
}

#[test]
fn open_of_a_short_file_shows_all_of_it_without_above_or_below() {
    let (_, out) = opened(7, Some("5"));
    assert_eq!(out, expected_view(PATH, 7, 1, 7));
}

#[test]
fn open_past_the_end_warns_and_centres_on_the_last_line() {
    let (_, out) = opened(1000, Some("1200"));
    let warnings = "Warning: <line_number> (1200) is greater than the number of lines in the file (1000)\n\
                    Warning: Setting <line_number> to 1000\n";
    assert_eq!(
        out,
        format!("{warnings}{}", expected_view(PATH, 1000, 901, 1000))
    );
}

#[test]
fn open_below_one_warns_and_shows_the_top() {
    let (_, out) = opened(1000, Some("0"));
    let warnings =
        "Warning: <line_number> (0) is less than 1\nWarning: Setting <line_number> to 1\n";
    assert_eq!(
        out,
        format!("{warnings}{}", expected_view(PATH, 1000, 1, 100))
    );
}

#[test]
fn open_warnings_print_the_line_number_as_typed() {
    let (_, out) = opened(10, Some("0099"));
    assert!(out.starts_with("Warning: <line_number> (0099) is greater than"));
}

#[test]
fn open_of_a_clamped_line_uses_no_offset() {
    // Clamped to N = 300: c = 300 - 50 = 250 after constraining, so lines 201..300.
    let (state, out) = opened(300, Some("301"));
    assert_eq!(state.current_line, 250);
    assert!(out.ends_with(&expected_view(PATH, 300, 201, 300)));
}

#[test]
fn open_of_a_directory_says_so() {
    let mut state = WindowState::new(100, 2);
    let request = parse_open_args("src").unwrap();
    let out = state.open(&request, &PathKind::Directory, b"");
    assert_eq!(
        out,
        "Error: src is a directory. You can only open files. Use cd or ls to navigate directories."
    );
    assert_eq!(state.file, None);
}

#[test]
fn open_of_a_directory_with_a_line_prints_only_the_below_one_warning_as_mawk_fails() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(
        &parse_open_args("src 0").unwrap(),
        &PathKind::Directory,
        b"",
    );
    assert_eq!(
        out,
        "Warning: <line_number> (0) is less than 1\nWarning: Setting <line_number> to 1\n\
         Error: src is a directory. You can only open files. Use cd or ls to navigate directories."
    );
    let out = state.open(
        &parse_open_args("src 5").unwrap(),
        &PathKind::Directory,
        b"",
    );
    assert!(out.starts_with("Error: src is a directory."));
}

#[test]
fn open_of_a_missing_file_says_not_found() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(
        &parse_open_args("nope.py 3").unwrap(),
        &PathKind::Missing,
        b"",
    );
    assert_eq!(out, "File nope.py not found");
}

#[test]
fn open_with_shell_noise_prints_v0s_awk_and_test_errors_first() {
    let mut state = WindowState::new(100, 2);
    state.open_shell_noise = true;
    let missing = state.open(
        &parse_open_args("nope.py 101").unwrap(),
        &PathKind::Missing,
        b"",
    );
    assert_eq!(
        missing,
        "awk: cannot open nope.py (No such file or directory)\n\
         /root/commands/defaults.sh: line 54: [: 101: unary operator expected\n\
         File nope.py not found"
    );
    // The line as typed; `[ 0 -lt 1 ]` still works, so its warnings follow the noise.
    let below = state.open(
        &parse_open_args("src 0").unwrap(),
        &PathKind::Directory,
        b"",
    );
    assert_eq!(
        below,
        "awk: read error (Is a directory)\n\
         /root/commands/defaults.sh: line 54: [: 0: unary operator expected\n\
         Warning: <line_number> (0) is less than 1\n\
         Warning: Setting <line_number> to 1\n\
         Error: src is a directory. You can only open files. Use cd or ls to navigate directories."
    );
    // Without a line number v0 runs no awk.
    let plain = state.open(
        &parse_open_args("nope.py").unwrap(),
        &PathKind::Missing,
        b"",
    );
    assert_eq!(plain, "File nope.py not found");
    assert_eq!(state.file, None);
}

#[test]
fn open_usage_errors_are_verbatim() {
    assert_eq!(
        parse_open_args(""),
        Err("Usage: open \"<file>\"".to_owned())
    );
    assert_eq!(
        parse_open_args("\"\""),
        Err("Usage: open \"<file>\"".to_owned())
    );
    assert_eq!(
        parse_open_args("a.py x12"),
        Err(
            "Usage: open \"<file>\" [<line_number>]\nError: <line_number> must be a number"
                .to_owned()
        )
    );
    assert!(parse_open_args("a.py -3").is_err());
}

#[test]
fn open_arguments_work_with_and_without_quotes() {
    let plain = parse_open_args("src/a.py 12").unwrap();
    let quoted = parse_open_args("\"src/a.py\" 12").unwrap();
    assert_eq!(plain, quoted);
    assert_eq!(
        plain,
        OpenRequest {
            path: "src/a.py".into(),
            line: Some("12".into())
        }
    );
    let spaced = parse_open_args("\"my dir/a b.py\"").unwrap();
    assert_eq!(
        spaced,
        OpenRequest {
            path: "my dir/a b.py".into(),
            line: None
        }
    );
    assert_eq!(parse_open_args("a.py \"\"").unwrap().line, None);
}

#[test]
fn goto_messages_are_verbatim() {
    let mut closed = WindowState::new(100, 2);
    assert_eq!(
        closed.goto("1 2", b""),
        "goto allows only one line number at a time."
    );
    assert_eq!(
        closed.goto("5", b""),
        "No file open. Use the open command first."
    );
    let (mut state, _) = opened(1000, None);
    let bytes = numbered(1000);
    assert_eq!(state.goto("", &bytes), "Usage: goto <line>");
    assert_eq!(
        state.goto("abc", &bytes),
        "Usage: goto <line>\nError: <line> must be a number"
    );
    assert_eq!(
        state.goto("-5", &bytes),
        "Usage: goto <line>\nError: <line> must be a number"
    );
    assert_eq!(
        state.goto("1001", &bytes),
        "Error: <line> must be less than or equal to 1000"
    );
}

#[test]
fn goto_uses_the_same_placement_as_open() {
    let (mut state, _) = opened(1000, None);
    assert_eq!(
        state.goto("583", &numbered(1000)),
        expected_view(PATH, 1000, 568, 667)
    );
    assert_eq!(
        state.goto("0", &numbered(1000)),
        expected_view(PATH, 1000, 1, 100)
    );
    assert_eq!(
        state.goto("1000", &numbered(1000)),
        expected_view(PATH, 1000, 901, 1000)
    );
}

#[test]
fn goto_rereads_the_file_it_is_given() {
    let (mut state, _) = opened(1000, None);
    assert_eq!(
        state.goto("600", &numbered(500)),
        "Error: <line> must be less than or equal to 500"
    );
}

#[test]
fn scrolling_moves_by_window_minus_overlap_and_stops_at_both_ends() {
    let (mut state, _) = opened(250, None);
    let bytes = numbered(250);
    assert_eq!(state.scroll_up(&bytes), expected_view(PATH, 250, 1, 100));
    assert_eq!(state.current_line, 50);
    state.reset_scrolls();
    assert_eq!(state.scroll_down(&bytes), expected_view(PATH, 250, 99, 198));
    assert_eq!(
        state.scroll_down(&bytes),
        expected_view(PATH, 250, 151, 250)
    );
    state.reset_scrolls();
    assert_eq!(
        state.scroll_down(&bytes),
        expected_view(PATH, 250, 151, 250)
    );
    assert_eq!(state.scroll_up(&bytes), expected_view(PATH, 250, 53, 152));
}

#[test]
fn the_third_scroll_action_in_a_row_appends_the_warning() {
    let (mut state, _) = opened(1000, None);
    let bytes = numbered(1000);
    state.end_action("open f");
    state.scroll_down(&bytes);
    state.end_action("scroll_down");
    state.scroll_down(&bytes);
    state.end_action(" scroll_down\n");
    let warning = "\n\nWARNING: Scrolling many times in a row is very inefficient.\n\
                   If you know what you are looking for, use `search_file <pattern>` instead.\n";
    assert_eq!(
        state.scroll_up(&bytes),
        format!("{}{warning}", expected_view(PATH, 1000, 99, 198))
    );
    assert_eq!(state.consecutive_scrolls, 3);
    assert!(state.scroll_down(&bytes).ends_with(warning));
    state.reset_scrolls();
    assert!(!state.scroll_down(&bytes).contains("WARNING"));
}

#[test]
fn scrolls_in_one_action_count_only_after_a_scroll_action_as_in_v0() {
    let (mut state, _) = opened(1000, None);
    let bytes = numbered(1000);
    // After `open`, v0's LAST_ACTION is the open: every scroll of the next action resets.
    state.end_action("open f");
    for _ in 0..3 {
        assert!(!state.scroll_down(&bytes).contains("WARNING"));
    }
    state.end_action("scroll_down\nscroll_down\nscroll_down");
    assert!(!state.scroll_down(&bytes).contains("WARNING"));
    // Two plain scroll actions later, a mixed action keeps counting through its scrolls.
    state.end_action("scroll_down");
    state.scroll_down(&bytes);
    state.end_action("scroll_down");
    assert!(state.scroll_up(&bytes).contains("WARNING"));
    assert!(state.scroll_up(&bytes).contains("WARNING"));
    assert_eq!(state.consecutive_scrolls, 4);
}

#[test]
fn scrolling_without_a_file_says_so_and_does_not_count() {
    let mut state = WindowState::new(100, 2);
    assert_eq!(state.scroll_down(b""), NO_FILE_OPEN);
    assert_eq!(state.scroll_up(b""), NO_FILE_OPEN);
    assert_eq!(state.consecutive_scrolls, 0);
}

#[test]
fn create_of_a_new_file_shows_one_empty_line() {
    let mut state = WindowState::new(100, 2);
    let out = state.create("new.py", false, &file("/repo/new.py"), CREATE_CONTENT);
    assert_eq!(out, "[File: /repo/new.py (1 lines total)]\n1:");
}

#[test]
fn create_of_an_existing_file_errors_then_opens_it() {
    let mut state = WindowState::new(100, 2);
    let out = state.create("a.py", true, &file("/repo/a.py"), b"x = 1\n");
    assert_eq!(
        out,
        "Error: File 'a.py' already exists.\n[File: /repo/a.py (1 lines total)]\n1:x = 1"
    );
}

#[test]
fn create_usage_is_verbatim() {
    assert_eq!(
        parse_create_args("  "),
        Err("Usage: create <filename>".to_owned())
    );
    assert_eq!(parse_create_args("'a b.py'"), Ok("a b.py".to_owned()));
}

#[test]
fn lines_are_counted_like_awk() {
    assert_eq!(count_lines(b""), 0);
    assert_eq!(count_lines(b"\n"), 1);
    assert_eq!(count_lines(b"a"), 1);
    assert_eq!(count_lines(b"a\nb"), 2);
    assert_eq!(count_lines(b"a\r\nb\r\n"), 2);
    assert_eq!(split_lines(b"a\n\n"), [&b"a"[..], &b""[..]]);
    assert_eq!(split_lines(b"a\r\nb"), [&b"a\r"[..], &b"b"[..]]);
}

#[test]
fn crlf_lines_keep_their_carriage_return() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(
        &parse_open_args("w.txt").unwrap(),
        &file("/w.txt"),
        b"a\r\nb\r\n",
    );
    assert_eq!(out, "[File: /w.txt (2 lines total)]\n1:a\r\n2:b\r");
}

#[test]
fn a_last_line_without_newline_is_shown() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(&parse_open_args("w.txt").unwrap(), &file("/w.txt"), b"a\nb");
    assert_eq!(out, "[File: /w.txt (2 lines total)]\n1:a\n2:b");
}

#[test]
fn an_empty_file_shows_only_the_header() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(&parse_open_args("e.txt").unwrap(), &file("/e.txt"), b"");
    assert_eq!(out, "[File: /e.txt (0 lines total)]");
}

#[test]
fn invalid_utf8_is_shown_with_backslash_escapes_as_v0_decodes_it() {
    let mut state = WindowState::new(100, 2);
    let out = state.open(&parse_open_args("b").unwrap(), &file("/b"), b"caf\xe9\n");
    assert_eq!(out, "[File: /b (1 lines total)]\n1:caf\\xe9");
}

#[test]
fn an_odd_window_keeps_v0s_half_line_centre() {
    // WINDOW=5: open without a line puts CURRENT_LINE at 2.5, so head -n 5 shows lines 1..5;
    // a scroll moves it to 5.5, head -n 8, tail -n 5: lines 4..8.
    let mut state = WindowState::new(5, 2);
    let bytes = numbered(20);
    let out = state.open(&parse_open_args("f").unwrap(), &file("/f"), &bytes);
    assert_eq!(out, expected_view("/f", 20, 1, 5));
    assert_eq!((state.current_line, state.current_line_half), (2, true));
    assert_eq!(state.scroll_down(&bytes), expected_view("/f", 20, 4, 8));
    assert_eq!((state.current_line, state.current_line_half), (5, true));
}

#[test]
fn an_odd_window_after_goto_shows_one_line_fewer_as_v0_does() {
    // WINDOW=5, goto 1: c = floor(max(1 + 2.5 - 0, 1)) = 3; head -n floor(5.5) = 5, tail 5.
    // goto 10: c = 12, head -n 14, tail -n 5 => 10..14; above floor(9.5) = 9; below
    // round(20 - 12 - 2.5) = 6.
    let mut state = WindowState::new(5, 2);
    let bytes = numbered(20);
    state.open(&parse_open_args("f").unwrap(), &file("/f"), &bytes);
    assert_eq!(state.goto("10", &bytes), expected_view("/f", 20, 10, 14));
}

#[test]
fn a_huge_window_shows_the_whole_file_without_overflow() {
    for window in [usize::MAX, usize::MAX - 1, 1 << 40] {
        let mut state = WindowState::new(window, 2);
        let bytes = numbered(30);
        let out = state.open(&parse_open_args("f 25").unwrap(), &file("/f"), &bytes);
        assert_eq!(out, expected_view("/f", 30, 1, 30), "window {window}");
        assert_eq!(state.scroll_down(&bytes), expected_view("/f", 30, 1, 30));
        assert_eq!(state.goto("30", &bytes), expected_view("/f", 30, 1, 30));
    }
}

#[test]
fn a_huge_line_number_saturates() {
    let (_, out) = opened(10, Some("99999999999999999999999999"));
    assert!(out.starts_with("Warning: <line_number> (99999999999999999999999999) is greater"));
}

#[test]
fn a_thirty_line_window_places_like_v0() {
    // WINDOW=30: offset floor(30/6) = 5, so goto 100 centres on 110 and shows 96..125.
    let mut state = WindowState::new(30, 2);
    let bytes = numbered(400);
    state.open(&parse_open_args("f").unwrap(), &file("/f"), &bytes);
    assert_eq!(state.goto("100", &bytes), expected_view("/f", 400, 96, 125));
}

#[test]
fn render_shows_the_current_view() {
    let (state, out) = opened(1000, Some("583"));
    assert_eq!(state.render(&numbered(1000)), Some(out));
    assert_eq!(WindowState::new(100, 2).render(b"x"), None);
}

#[test]
fn probes_are_parsed_with_the_file_bytes_after_the_path() {
    let empty: &[u8] = b"";
    assert_eq!(
        parse_probe(b"file\0/repo/a b.py\n\0x = 1\r\n\0\xff"),
        (file("/repo/a b.py"), &b"x = 1\r\n\0\xff"[..])
    );
    assert_eq!(
        parse_probe(b"file\0/repo/e.py\n\0"),
        (file("/repo/e.py"), empty)
    );
    assert_eq!(parse_probe(b"dir\0"), (PathKind::Directory, empty));
    assert_eq!(parse_probe(b"missing\0"), (PathKind::Missing, empty));
    assert_eq!(parse_probe(b""), (PathKind::Missing, empty));
    assert_eq!(
        parse_create_output(b"exists\0dir\0"),
        (true, PathKind::Directory, empty)
    );
    assert_eq!(
        parse_create_output(b"created\0file\0/r/n.py\n\0\n"),
        (false, file("/r/n.py"), &b"\n"[..])
    );
}

#[test]
fn probe_commands_quote_paths_with_spaces_and_dashes() {
    assert_eq!(
        probe_command("my dir/a.py"),
        "( p='my dir/a.py'; if [ -f \"$p\" ]; then printf 'file\\0'; if [ -L \"$p\" ]; then \
         realpath -- \"$p\"; else o=$PWD; case $p in */*) CDPATH= cd -P -- \"${p%/*}/\";; \
         *) CDPATH= cd -P .;; esac && printf '%s/%s\\n' \"${PWD%/}\" \"${p##*/}\"; cd -- \"$o\"; fi; \
         printf '\\0'; cat -- \"$p\"; elif [ -d \"$p\" ]; then printf 'dir\\0'; \
         else printf 'missing\\0'; fi ) 2>/dev/null"
    );
    assert!(create_command("-x").starts_with("( f=./-x;"));
}

#[test]
fn the_state_names_the_open_file_or_na() {
    assert_eq!(WindowState::new(100, 2).open_file_or_na(), "n/a");
    assert_eq!(opened(3, None).0.open_file_or_na(), PATH);
}

#[test]
fn a_line_longer_than_the_width_is_cut_with_a_marker_and_shorter_ones_are_whole() {
    let mut state = WindowState::new(100, 2);
    state.max_line_length = 10;
    let bytes = b"short\n0123456789\n0123456789abcdef\n\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xff\xfe\xfdxyz\n";
    let request = OpenRequest {
        path: "data.txt".into(),
        line: None,
    };
    let out = state.open(&request, &file("/repo/data.txt"), bytes);
    assert_eq!(
        out,
        "[File: /repo/data.txt (4 lines total)]\n1:short\n2:0123456789\n\
         3:0123456789 [... 6 more characters on this line]\n\
         4:éééééé\\xff\\xfe\\xfdx [... 2 more characters on this line]"
    );
}

#[test]
fn a_window_over_a_huge_line_stays_small() {
    let mut bytes = vec![b'x'; 50_000_000];
    bytes.extend_from_slice(b"\nend\n");
    let mut state = WindowState::new(100, 2);
    let request = OpenRequest {
        path: "min.js".into(),
        line: None,
    };
    let out = state.open(&request, &file("/repo/min.js"), &bytes);
    let expected = format!(
        "[File: /repo/min.js (2 lines total)]\n1:{}{}\n2:end",
        "x".repeat(DEFAULT_MAX_LINE_LENGTH),
        cut_marker(50_000_000 - DEFAULT_MAX_LINE_LENGTH)
    );
    assert_eq!(out, expected);
}
