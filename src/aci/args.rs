//! Bash-like word splitting for ACI command arguments, `shlex.quote`-compatible quoting, and a
//! small bash lexer that says whether shell input goes on past the end of a line. Nothing is
//! expanded: `$VAR`, `~` and globs stay literal, because the harness, not bash, runs ACI
//! commands.

/// Splits `input` into words the way bash splits the arguments of a simple command.
///
/// Handles blanks (space, tab, newline), single quotes, double quotes (where `\` escapes only
/// `$`, `` ` ``, `"`, `\` and newline), backslash escapes, backslash-newline continuations,
/// `$'…'` (the common escapes), `$"…"`, and `#` comments at the start of a word. An empty quoted
/// string is a word. Control operators (`;`, `|`, `&&`, …) are ordinary characters here.
/// Unterminated quotes run to the end of the input instead of failing.
pub fn split_words(input: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => while chars.next_if(|&next| next != '\n').is_some() {},
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next) => {
                    word.push(next);
                    in_word = true;
                }
                None => {
                    word.push('\\');
                    in_word = true;
                }
            },
            '\'' => {
                in_word = true;
                for next in chars.by_ref() {
                    if next == '\'' {
                        break;
                    }
                    word.push(next);
                }
            }
            '"' => {
                in_word = true;
                read_double_quoted(&mut chars, &mut word);
            }
            '$' if chars.next_if_eq(&'\'').is_some() => {
                in_word = true;
                read_ansi_c_quoted(&mut chars, &mut word);
            }
            '$' if chars.next_if_eq(&'"').is_some() => {
                in_word = true;
                read_double_quoted(&mut chars, &mut word);
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn read_double_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '"' => return,
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next @ ('$' | '`' | '"' | '\\')) => word.push(next),
                Some(next) => {
                    word.push('\\');
                    word.push(next);
                }
                None => word.push('\\'),
            },
            _ => word.push(c),
        }
    }
}

fn read_ansi_c_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '\'' => return,
            '\\' => {
                let Some(next) = chars.next() else {
                    word.push('\\');
                    return;
                };
                match next {
                    'n' => word.push('\n'),
                    't' => word.push('\t'),
                    'r' => word.push('\r'),
                    'a' => word.push('\u{7}'),
                    'b' => word.push('\u{8}'),
                    'e' | 'E' => word.push('\u{1b}'),
                    'f' => word.push('\u{c}'),
                    'v' => word.push('\u{b}'),
                    '\\' | '\'' | '"' | '?' => word.push(next),
                    _ => {
                        word.push('\\');
                        word.push(next);
                    }
                }
            }
            _ => word.push(c),
        }
    }
}

/// Quotes `value` for a POSIX shell exactly as Python's `shlex.quote` does: unchanged when it is
/// non-empty and only has `[A-Za-z0-9_@%+=:,./-]`, otherwise single-quoted with each `'`
/// written as `'"'"'`.
pub fn shlex_quote(value: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !value.is_empty() && value.chars().all(safe) {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\'', r#"'"'"'"#))
}

/// Escapes `value` for use between double quotes in bash: `\`, `"`, `$` and `` ` `` get a
/// backslash. [`split_words`] reads the result back to `value`.
pub fn double_quote_escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Whether bash, having read `text`, would wait for more lines before running it: an open
/// quote, `$(`, or backtick; a here-document whose delimiter line has not come; a trailing
/// `|`, `&&`, `||` or backslash; or an unclosed `if`/`case`/`for`/`while`/`until`/`select`/`{`/`(`.
///
/// This is a lexer, not a parser: it is right for the shapes models write (loops, heredocs,
/// `python -c "…"` over several lines) and errs towards "complete" on exotic input.
pub fn continues_on_next_line(text: &str) -> bool {
    let mut lexer = Lexer::new(text);
    lexer.run();
    lexer.is_incomplete()
}

/// A lexer context that an opening character pushed and a closing one pops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Single,
    AnsiC,
    Double,
    Backtick,
    Substitution { parens: usize },
}

struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
}

/// State of the continuation lexer; reserved words and parentheses count only at top level.
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    stack: Vec<Context>,
    heredocs: Vec<Heredoc>,
    word: String,
    in_word: bool,
    word_quoted: bool,
    command_position: bool,
    after_function: bool,
    depth: usize,
    case_depth: usize,
    paren_depth: usize,
    trailing_operator: bool,
    trailing_backslash: bool,
    open_heredoc: bool,
}

impl Lexer {
    fn new(text: &str) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
            stack: Vec::new(),
            heredocs: Vec::new(),
            word: String::new(),
            in_word: false,
            word_quoted: false,
            command_position: true,
            after_function: false,
            depth: 0,
            case_depth: 0,
            paren_depth: 0,
            trailing_operator: false,
            trailing_backslash: false,
            open_heredoc: false,
        }
    }

    fn is_incomplete(&self) -> bool {
        !self.stack.is_empty()
            || self.open_heredoc
            || !self.heredocs.is_empty()
            || self.depth > 0
            || self.paren_depth > 0
            || self.trailing_operator
            || self.trailing_backslash
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            match self.stack.last().copied() {
                None => self.top_level(c),
                Some(Context::Substitution { parens }) => self.substitution(c, parens),
                Some(Context::Single) => self.close_on(c, '\'', false),
                Some(Context::AnsiC) => self.close_on(c, '\'', true),
                Some(Context::Backtick) => self.close_on(c, '`', true),
                Some(Context::Double) => self.double_quoted(c),
            }
        }
        self.end_word();
    }

    /// Inside quotes that only end at `close` (with `\` escaping when `escapes`).
    fn close_on(&mut self, c: char, close: char, escapes: bool) {
        if escapes && c == '\\' {
            self.pos += 2;
        } else {
            if c == close {
                self.stack.pop();
            }
            self.pos += 1;
        }
    }

    fn double_quoted(&mut self, c: char) {
        match c {
            '\\' => self.pos += 2,
            '"' => {
                self.stack.pop();
                self.pos += 1;
            }
            '`' => {
                self.stack.push(Context::Backtick);
                self.pos += 1;
            }
            '$' if self.peek(1) == Some('(') => {
                self.stack.push(Context::Substitution { parens: 0 });
                self.pos += 2;
            }
            _ => self.pos += 1,
        }
    }

    /// Opens a quote or substitution at `c` if there is one; returns whether it did.
    fn open_quote(&mut self, c: char) -> bool {
        let (context, width) = match (c, self.peek(1)) {
            ('\'', _) => (Context::Single, 1),
            ('"', _) => (Context::Double, 1),
            ('`', _) => (Context::Backtick, 1),
            ('$', Some('(')) => (Context::Substitution { parens: 0 }, 2),
            ('$', Some('\'')) => (Context::AnsiC, 2),
            ('$', Some('"')) => (Context::Double, 2),
            _ => return false,
        };
        self.stack.push(context);
        self.pos += width;
        true
    }

    fn substitution(&mut self, c: char, parens: usize) {
        if self.open_quote(c) {
            return;
        }
        self.pos += 1;
        match c {
            '\\' => self.pos += 1,
            '(' => self.set_parens(parens + 1),
            ')' if parens == 0 => {
                self.stack.pop();
            }
            ')' => self.set_parens(parens - 1),
            _ => {}
        }
    }

    fn set_parens(&mut self, parens: usize) {
        if let Some(top) = self.stack.last_mut() {
            *top = Context::Substitution { parens };
        }
    }

    fn top_level(&mut self, c: char) {
        match c {
            ' ' | '\t' => {
                self.end_word();
                self.pos += 1;
            }
            '\n' => {
                self.end_word();
                self.pos += 1;
                self.command_position = true;
                self.read_heredoc_bodies();
            }
            '#' if !self.in_word => {
                while self.peek(0).is_some_and(|next| next != '\n') {
                    self.pos += 1;
                }
            }
            '\\' => {
                if self.peek(1).is_none() {
                    self.trailing_backslash = true;
                    self.pos += 1;
                } else {
                    if self.peek(1) != Some('\n') {
                        self.start_word(true);
                    }
                    self.pos += 2;
                }
            }
            '(' | ')' => self.paren(c),
            '|' | '&' | ';' | '<' | '>' => self.operator(),
            _ => {
                if matches!(c, '\'' | '"' | '`' | '$') && self.open_quote(c) {
                    self.start_word(true);
                } else {
                    self.start_word(false);
                    self.word.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn start_word(&mut self, quoted: bool) {
        self.in_word = true;
        self.word_quoted |= quoted;
        self.trailing_operator = false;
    }

    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let reserved = self.command_position && !self.word_quoted;
        self.in_word = false;
        self.word_quoted = false;
        if reserved {
            match word.as_str() {
                "if" | "for" | "while" | "until" | "select" | "{" => self.depth += 1,
                "case" => {
                    self.depth += 1;
                    self.case_depth += 1;
                }
                "fi" | "done" | "}" => self.depth = self.depth.saturating_sub(1),
                "esac" => {
                    self.depth = self.depth.saturating_sub(1);
                    self.case_depth = self.case_depth.saturating_sub(1);
                }
                _ => {}
            }
        }
        let keeps_position = matches!(
            word.as_str(),
            "then" | "do" | "else" | "elif" | "if" | "while" | "until" | "!" | "{" | "time"
        );
        self.command_position = reserved && keeps_position || self.after_function;
        self.after_function = reserved && word == "function";
    }

    fn paren(&mut self, c: char) {
        self.end_word();
        self.pos += 1;
        self.trailing_operator = false;
        self.command_position = true;
        if self.case_depth > 0 {
            return;
        }
        if c == '(' {
            self.paren_depth += 1;
        } else {
            self.paren_depth = self.paren_depth.saturating_sub(1);
        }
    }

    fn operator(&mut self) {
        self.end_word();
        let start = self.pos;
        while self
            .peek(0)
            .is_some_and(|c| matches!(c, '|' | '&' | ';' | '<' | '>' | '-'))
            && self.pos - start < 3
        {
            // `-` belongs to the operator only as `<<-`.
            if self.peek(0) == Some('-') && self.chars[start..self.pos] != ['<', '<'] {
                break;
            }
            self.pos += 1;
        }
        let operator: String = self.chars[start..self.pos].iter().collect();
        self.trailing_operator = matches!(operator.as_str(), "|" | "||" | "&&" | "|&");
        self.command_position = !operator.starts_with(['<', '>']);
        match operator.as_str() {
            "<<" => self.read_heredoc_delimiter(false),
            "<<-" => self.read_heredoc_delimiter(true),
            _ => {}
        }
    }

    fn read_heredoc_delimiter(&mut self, strip_tabs: bool) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let mut delimiter = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | '|' | '&' | ';' | '<' | '>' | '(' | ')' => break,
                '\'' | '"' => {
                    self.pos += 1;
                    while let Some(quoted) = self.peek(0) {
                        self.pos += 1;
                        if quoted == c {
                            break;
                        }
                        delimiter.push(quoted);
                    }
                }
                '\\' => {
                    self.pos += 1;
                    if let Some(escaped) = self.peek(0) {
                        delimiter.push(escaped);
                        self.pos += 1;
                    }
                }
                _ => {
                    delimiter.push(c);
                    self.pos += 1;
                }
            }
        }
        self.heredocs.push(Heredoc {
            delimiter,
            strip_tabs,
        });
    }

    /// After the newline that ends a command: skips each pending here-document body.
    fn read_heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            loop {
                if self.pos >= self.chars.len() {
                    self.open_heredoc = true;
                    return;
                }
                let end = self.chars[self.pos..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |offset| self.pos + offset);
                let mut line = &self.chars[self.pos..end];
                if heredoc.strip_tabs {
                    while let [first, rest @ ..] = line {
                        if *first != '\t' {
                            break;
                        }
                        line = rest;
                    }
                }
                let done = line.iter().copied().eq(heredoc.delimiter.chars());
                self.pos = (end + 1).min(self.chars.len());
                if done {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn words(input: &str) -> Vec<String> {
        split_words(input)
    }

    #[test]
    fn plain_words_are_split_on_blanks() {
        assert_eq!(words("  src/a.py\t 12 \n"), ["src/a.py", "12"]);
    }

    #[test]
    fn double_quotes_keep_spaces_together() {
        assert_eq!(words(r#""foo bar" src"#), ["foo bar", "src"]);
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(words(r"'a \ $b' c"), [r"a \ $b", "c"]);
    }

    #[test]
    fn double_quotes_escape_only_the_special_characters() {
        assert_eq!(words(r#""a\"b\\c\$d\n""#), [r#"a"b\c$d\n"#]);
    }

    #[test]
    fn a_backslash_escapes_a_space_outside_quotes() {
        assert_eq!(words(r"my\ file.py 3"), ["my file.py", "3"]);
    }

    #[test]
    fn empty_quotes_make_an_empty_word() {
        assert_eq!(words(r#"goto """#), ["goto", ""]);
    }

    #[test]
    fn quotes_join_with_adjacent_text() {
        assert_eq!(words(r#"a"b c"'d'"#), ["ab cd"]);
    }

    #[test]
    fn a_hash_at_word_start_begins_a_comment() {
        assert_eq!(words("goto 50 # the class\n"), ["goto", "50"]);
        assert_eq!(words("a#b"), ["a#b"]);
    }

    #[test]
    fn ansi_c_quotes_understand_common_escapes() {
        assert_eq!(words(r"$'a\tb\'c'"), ["a\tb'c"]);
    }

    #[test]
    fn an_unterminated_quote_runs_to_the_end() {
        assert_eq!(words(r#"open "src/a b.py"#), ["open", "src/a b.py"]);
    }

    #[test]
    fn a_backslash_newline_joins_lines() {
        assert_eq!(words("a\\\nb c"), ["ab", "c"]);
    }

    #[test]
    fn shlex_quote_matches_python() {
        assert_eq!(shlex_quote(""), "''");
        assert_eq!(shlex_quote("src/a-b_c.py"), "src/a-b_c.py");
        assert_eq!(shlex_quote("a b"), "'a b'");
        assert_eq!(shlex_quote("it's"), r#"'it'"'"'s'"#);
        assert_eq!(shlex_quote("é"), "'é'");
    }

    #[test]
    fn shlex_quoted_values_split_back_to_themselves() {
        for value in [
            "",
            "a b",
            "it's",
            "x\"y",
            "$HOME",
            "tab\there",
            "back\\slash",
        ] {
            assert_eq!(words(&shlex_quote(value)), [value]);
        }
    }

    #[test]
    fn double_quote_escaped_values_split_back_to_themselves() {
        for value in ["a b", "x\"y", "$HOME", "`id`", "back\\slash", "it's"] {
            let quoted = format!("\"{}\"", double_quote_escape(value));
            assert_eq!(words(&quoted), [value]);
        }
    }

    #[test]
    fn simple_commands_are_complete() {
        for text in [
            "ls -la",
            "echo 'a' \"b\"",
            "cat a | grep b",
            "x=$(ls)",
            "echo a # it's",
        ] {
            assert!(!continues_on_next_line(text), "{text}");
        }
    }

    #[test]
    fn open_quotes_continue() {
        assert!(continues_on_next_line("python -c \"import os\nprint(1)"));
        assert!(continues_on_next_line("echo 'a"));
        assert!(continues_on_next_line("x=$(ls"));
        assert!(continues_on_next_line("echo `ls"));
        assert!(!continues_on_next_line("python -c \"import os\nprint(1)\""));
    }

    #[test]
    fn heredocs_continue_until_their_delimiter() {
        assert!(continues_on_next_line("cat <<EOF > a.py"));
        assert!(continues_on_next_line("cat <<'EOF' > a.py\nprint(1)\n"));
        assert!(!continues_on_next_line("cat <<'EOF' > a.py\nopen x\nEOF"));
        assert!(!continues_on_next_line("cat <<-\"EOF\"\n\tx\n\tEOF\n"));
        assert!(!continues_on_next_line("cat <<< 'here string'"));
    }

    #[test]
    fn trailing_operators_and_backslashes_continue() {
        assert!(continues_on_next_line("ls |"));
        assert!(continues_on_next_line("make &&"));
        assert!(continues_on_next_line("make ||\n"));
        assert!(continues_on_next_line("ls \\"));
        assert!(!continues_on_next_line("ls &"));
        assert!(!continues_on_next_line("ls;"));
    }

    #[test]
    fn compound_commands_continue_until_closed() {
        assert!(continues_on_next_line("for f in *.py; do"));
        assert!(continues_on_next_line("for f in *.py; do\n  open $f"));
        assert!(!continues_on_next_line(
            "for f in *.py; do\n  echo $f\ndone"
        ));
        assert!(continues_on_next_line("if true; then"));
        assert!(!continues_on_next_line("if true; then echo; fi"));
        assert!(continues_on_next_line("f() {"));
        assert!(!continues_on_next_line("f() { echo hi; }"));
        assert!(!continues_on_next_line(
            "case $x in a) echo a;; b) echo b;; esac"
        ));
        assert!(continues_on_next_line("case $x in\na) echo a;;"));
        assert!(continues_on_next_line("(cd src"));
        assert!(!continues_on_next_line("(cd src && ls)"));
    }

    #[test]
    fn reserved_words_count_only_in_command_position() {
        assert!(!continues_on_next_line("echo if for while"));
        assert!(!continues_on_next_line("grep -n 'if' a.py"));
        assert!(!continues_on_next_line("echo {a,b} done"));
    }
}
