//! A byte-level Python tokenizer pass, modelled on CPython's `tokenizer.c`: it finds the
//! tokenizer-level errors (brackets, strings, numbers, continuations, tabs, unindents) with
//! CPython's wording and records the logical lines the indentation check needs.

use super::python_names::Change;

/// A syntax problem worded as CPython words it, at a 0-based row and byte column.
///
/// flake8 prints E999 one column to the right of CPython's 1-based offset, so the printed
/// column is the character column of `col` plus 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxProblem {
    pub row: usize,
    pub col: usize,
    /// CPython's offset points one character left of `col` (an INDENT or DEDENT token), so
    /// flake8 prints the character column of `col` plus 1 instead of plus 2.
    pub before: bool,
    /// The full flake8 text after the code, e.g. `SyntaxError: unmatched ')'`.
    pub message: String,
}

impl SyntaxProblem {
    pub(crate) fn new(row: usize, col: usize, message: impl Into<String>) -> Self {
        Self {
            row,
            col,
            before: false,
            message: message.into(),
        }
    }

    /// The same problem, located one character left of `col` (see [`SyntaxProblem::before`]).
    pub(crate) fn shifted_left(self) -> Self {
        Self {
            before: true,
            ..self
        }
    }
}

/// A bracket that was opened and not (yet) closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenBracket {
    pub byte: u8,
    pub row: usize,
    pub col: usize,
}

/// How a logical line moved CPython's indentation stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndentMove {
    Same,
    Indent,
    Dedent,
}

/// The text of a short token (every keyword fits), stored inline; longer tokens read as "".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Word {
    bytes: [u8; 8],
    len: usize,
}

impl Word {
    fn new(text: &[u8]) -> Self {
        let mut word = Self::default();
        if text.len() <= word.bytes.len() {
            word.bytes[..text.len()].copy_from_slice(text);
            word.len = text.len();
        }
        word
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

/// One logical line (a statement up to its NEWLINE token), without blank and comment-only lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogicalLine {
    /// Row and byte column of the first token.
    pub row: usize,
    pub col: usize,
    /// Byte offset of the start of `row`.
    pub start_byte: usize,
    /// The entry CPython's indentation stack has on top after this line: (col with tabs to
    /// 8, col with tabs to 1). The stack itself can be rebuilt from these (see
    /// [`Scan::stack_after`]).
    pub stack_top: (usize, usize),
    /// pycodestyle's `expand_indent` of the indentation (tabs to the next multiple of 8).
    pub indent: usize,
    pub movement: IndentMove,
    /// The first two identifier-like tokens, for recognising compound statement headers.
    pub first_word: Word,
    pub second_word: Word,
    /// The last significant token is a `:` (not `:=`), so a block must follow.
    pub ends_with_colon: bool,
    /// A `:` occurs outside brackets (a compound header, possibly with its body inline).
    pub has_colon: bool,
    /// Row and byte column just past the last significant token.
    pub end_row: usize,
    pub end_col: usize,
}

/// Everything the tokenizer pass learned about one source text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The first tokenizer error; CPython stops there.
    pub error: Option<SyntaxProblem>,
    /// The tokenizer raised `error` itself (brackets, strings, characters, numbers), so it
    /// also replaces a parser error found earlier; indentation and continuation errors are
    /// only status codes and do not.
    pub error_replaces: bool,
    /// Where the tokenizer met `error` (an unindent is met at the start of its line).
    pub error_at: (usize, usize),
    /// The innermost and the outermost bracket still open at the end of the file.
    pub unclosed: Option<OpenBracket>,
    pub unclosed_outer: Option<OpenBracket>,
    /// The first character no Python token starts with (`$`, `?`, a backtick): a parser error.
    pub stray: Option<SyntaxProblem>,
    pub lines: Vec<LogicalLine>,
    /// Inclusive row ranges that flake8 joins when looking for `# noqa` (multi-line strings,
    /// backslash continuations).
    pub joined_rows: Vec<(usize, usize)>,
    /// Row and byte column just past the last token of the file.
    pub last_token_end: (usize, usize),
}

/// Scans `src` as CPython's tokenizer would, stopping at the first tokenizer error.
pub(crate) fn scan(src: &[u8]) -> Scan {
    let mut scanner = Scanner::new(src);
    scanner.out.lines.reserve(src.len() / 32);
    scanner.run();
    scanner.out
}

/// The scan of `after`, derived from `base`, the scan of the text `after` was edited from
/// (`change` gives the edited bytes, which begin and end at line starts).
///
/// The tokenizer's state at the start of a logical line is only its position and its
/// indentation stack, and the stack can be rebuilt from the logical lines before it. So the
/// scan restarts at the logical line the edit begins in, and once it reaches, past the edit, a
/// logical line that `base` also starts there with the same stack, the rest of `base` is
/// reused, shifted. A base with a tokenizer error, a stray character or an unclosed bracket
/// is scanned afresh. Equal to `scan(after)` in every case.
pub(crate) fn rescan(base: &Scan, after: &[u8], change: &Change) -> Scan {
    let clean = base.error.is_none() && base.stray.is_none() && base.unclosed.is_none();
    let first = base
        .lines
        .partition_point(|line| line.start_byte <= change.start);
    if !clean || first < 2 {
        return scan(after);
    }
    let restart = first - 1;
    let from = &base.lines[restart];
    let mut scanner = Scanner::new(after);
    scanner.pos = from.start_byte;
    scanner.line_start = from.start_byte;
    scanner.row = from.row;
    scanner.indents = base.stack_after(restart - 1);
    scanner.out.lines.reserve(base.lines.len() + 8);
    scanner.out.lines.extend_from_slice(&base.lines[..restart]);
    scanner.out.joined_rows = base
        .joined_rows
        .iter()
        .filter(|&&(start, _)| start < from.row)
        .copied()
        .collect();
    let before = &base.lines[restart - 1];
    scanner.out.last_token_end = (before.end_row, before.end_col);
    scanner.resync = Some(Resync {
        base,
        old_end: change.old_end,
        new_end: change.new_end,
    });
    scanner.run();
    scanner.out
}

impl Scan {
    /// CPython's indentation stack after logical line `index`: that line's entry, under it
    /// the entry of the last earlier line with a smaller column, and so on down to column 0.
    fn stack_after(&self, index: usize) -> Vec<(usize, usize)> {
        let mut stack = Vec::new();
        let mut bound = usize::MAX;
        for line in self.lines[..=index].iter().rev() {
            if line.stack_top.0 < bound {
                stack.push(line.stack_top);
                bound = line.stack_top.0;
                if bound == 0 {
                    break;
                }
            }
        }
        if bound != 0 {
            stack.push((0, 0));
        }
        stack.reverse();
        stack
    }
}

/// Where a [`rescan`] may rejoin its base scan.
struct Resync<'a> {
    base: &'a Scan,
    old_end: usize,
    new_end: usize,
}

pub(super) struct Scanner<'a> {
    pub(super) src: &'a [u8],
    pub(super) pos: usize,
    pub(super) row: usize,
    pub(super) line_start: usize,
    pub(super) brackets: Vec<OpenBracket>,
    /// CPython's indentation stack: (col with tabs to 8, col with tabs to 1).
    pub(super) indents: Vec<(usize, usize)>,
    pub(super) current: Option<LogicalLine>,
    pub(super) words_seen: usize,
    pub(super) out: Scan,
    resync: Option<Resync<'a>>,
}

pub(super) fn is_ident_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte >= 0x80
}

/// Whether `word` is a string prefix that CPython accepts (`rb`, `f`, `U`, ...).
pub(super) fn is_string_prefix(word: &[u8]) -> bool {
    let lower: Vec<u8> = word.iter().map(u8::to_ascii_lowercase).collect();
    matches!(
        lower.as_slice(),
        b"r" | b"u" | b"b" | b"f" | b"br" | b"rb" | b"fr" | b"rf"
    )
}

enum CharClass {
    Identifier,
    NonPrintable(u32),
    Invalid(char),
}

/// Sorts a non-ASCII character the way CPython's tokenizer would, for the ranges where the
/// answer is certain; anything else is taken as part of an identifier.
fn classify_non_ascii(ch: char) -> CharClass {
    let code = u32::from(ch);
    let non_printable = matches!(code, 0x80..=0xA0 | 0xAD | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F | 0x3000 | 0xFEFF);
    if non_printable {
        return CharClass::NonPrintable(code);
    }
    let invalid = matches!(code,
        0xA1..=0xA9 | 0xAB | 0xAC | 0xAE..=0xB4 | 0xB6..=0xB9 | 0xBB..=0xBF | 0xD7 | 0xF7
        | 0x2010..=0x2027 | 0x2030..=0x203E | 0x2041..=0x2053 | 0x2055..=0x205E
        | 0x2190..=0x23FF | 0x2500..=0x27BF | 0x2E00..=0x2E7F | 0x3001..=0x3004 | 0x3008..=0x3020
        | 0xFF01..=0xFF0F | 0x1F300..=0x1FAFF);
    if invalid {
        CharClass::Invalid(ch)
    } else {
        CharClass::Identifier
    }
}

fn closing_for(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        _ => b'}',
    }
}

impl<'a> Scanner<'a> {
    fn new(src: &'a [u8]) -> Self {
        let pos = if src.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        };
        Self {
            src,
            pos,
            row: 0,
            line_start: 0,
            brackets: Vec::new(),
            indents: vec![(0, 0)],
            current: None,
            words_seen: 0,
            out: Scan::default(),
            resync: None,
        }
    }

    pub(super) fn peek(&self, offset: usize) -> u8 {
        self.src.get(self.pos + offset).copied().unwrap_or(0)
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    pub(super) fn col(&self) -> usize {
        self.pos - self.line_start
    }

    pub(super) fn fail(&mut self, row: usize, col: usize, message: impl Into<String>) {
        if self.out.error.is_none() {
            self.out.error = Some(SyntaxProblem::new(row, col, message));
            self.out.error_replaces = true;
            self.out.error_at = (row, col);
        }
    }

    /// A tokenizer status error (indentation, continuation, end of file), which CPython
    /// reports only if the parser has not failed before it.
    fn fail_status(&mut self, row: usize, col: usize, message: &str) {
        if self.out.error.is_none() {
            self.out.error = Some(SyntaxProblem::new(row, col, message));
            let at_line_start =
                message.starts_with("IndentationError") || message.starts_with("TabError");
            // A bad continuation is met at its backslash, one column left of where it is reported.
            let continuation = message.ends_with("line continuation character");
            let col = if continuation {
                col.saturating_sub(1)
            } else {
                col
            };
            self.out.error_at = (row, if at_line_start { 0 } else { col });
        }
    }

    /// Length in bytes of the current row's content, without its line ending.
    fn row_len(&self, line_start: usize) -> usize {
        let rest = &self.src[line_start.min(self.src.len())..];
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let content = &rest[..end];
        content.strip_suffix(b"\r").unwrap_or(content).len()
    }

    /// Consumes a line ending at `pos` (`\n` or `\r\n`), if there is one.
    pub(super) fn eat_newline(&mut self) -> bool {
        let len = match (self.peek(0), self.peek(1)) {
            (b'\n', _) => 1,
            (b'\r', b'\n') => 2,
            _ => return false,
        };
        self.pos += len;
        self.row += 1;
        self.line_start = self.pos;
        true
    }

    fn run(&mut self) {
        let mut at_line_start = true;
        while self.out.error.is_none() {
            if at_line_start {
                at_line_start = false;
                self.begin_line();
                if self.out.error.is_some() {
                    break;
                }
            }
            if self.at_end() {
                break;
            }
            if self.eat_newline() {
                if self.brackets.is_empty() {
                    self.finish_logical_line();
                }
                at_line_start = true;
                continue;
            }
            self.token();
        }
        self.finish_logical_line();
        if self.out.error.is_none() {
            self.out.unclosed = self.brackets.last().copied();
            self.out.unclosed_outer = self.brackets.first().copied();
        }
    }

    /// Measures the indentation of a new physical line and, when it starts a logical line,
    /// applies CPython's INDENT/DEDENT rules.
    fn begin_line(&mut self) {
        let (mut col, mut altcol, mut expanded) = (0usize, 0usize, 0usize);
        loop {
            match self.peek(0) {
                b' ' => {
                    col += 1;
                    altcol += 1;
                    expanded += 1;
                }
                b'\t' => {
                    col = (col / 8 + 1) * 8;
                    altcol += 1;
                    expanded = expanded / 8 * 8 + 8;
                }
                0x0c => {
                    col = 0;
                    altcol = 0;
                }
                _ => break,
            }
            self.pos += 1;
        }
        let next = self.peek(0);
        let blank = self.at_end()
            || next == b'#'
            || next == b'\n'
            || (next == b'\r' && self.peek(1) == b'\n');
        if blank || !self.brackets.is_empty() || self.current.is_some() {
            return;
        }
        if self.resynchronise() {
            return;
        }
        let Some(movement) = self.move_indentation(col, altcol) else {
            return;
        };
        self.current = Some(LogicalLine {
            row: self.row,
            col: self.col(),
            start_byte: self.line_start,
            stack_top: (col, altcol),
            indent: expanded,
            movement,
            first_word: Word::default(),
            second_word: Word::default(),
            ends_with_colon: false,
            has_colon: false,
            end_row: self.row,
            end_col: self.col(),
        });
        self.words_seen = 0;
    }

    /// In a [`rescan`], at the start of a logical line past the edit: if the base scan has a
    /// logical line at the same place in the unedited tail with the same indentation stack,
    /// takes the rest of the base scan, shifted, and ends the scan.
    fn resynchronise(&mut self) -> bool {
        let Some(resync) = &self.resync else {
            return false;
        };
        if self.line_start < resync.new_end {
            return false;
        }
        let base = resync.base;
        let base_start = self.line_start - resync.new_end + resync.old_end;
        let at = base
            .lines
            .partition_point(|line| line.start_byte < base_start);
        let Some(rejoin) = base.lines.get(at).filter(|l| l.start_byte == base_start) else {
            return false;
        };
        if at == 0 || base.stack_after(at - 1) != self.indents {
            return false;
        }
        let (row_now, start_now) = (self.row, self.line_start);
        let rows = |row: usize| row + row_now - rejoin.row;
        let bytes = |byte: usize| byte + start_now - base_start;
        self.out
            .lines
            .extend(base.lines[at..].iter().map(|line| LogicalLine {
                row: rows(line.row),
                end_row: rows(line.end_row),
                start_byte: bytes(line.start_byte),
                ..line.clone()
            }));
        self.out.joined_rows.extend(
            base.joined_rows
                .iter()
                .filter(|&&(start, _)| start >= rejoin.row)
                .map(|&(start, end)| (rows(start), rows(end))),
        );
        let (row, col) = base.last_token_end;
        if row >= rejoin.row {
            self.out.last_token_end = (rows(row), col);
        }
        self.resync = None;
        self.pos = self.src.len();
        true
    }

    fn move_indentation(&mut self, col: usize, altcol: usize) -> Option<IndentMove> {
        let (top, alttop) = self.indents.last().copied().unwrap_or((0, 0));
        let tab_error = "TabError: inconsistent use of tabs and spaces in indentation";
        if col == top {
            if altcol != alttop {
                self.fail_status(self.row, 0, tab_error);
                return None;
            }
            return Some(IndentMove::Same);
        }
        if col > top {
            if altcol <= alttop {
                self.fail_status(self.row, 0, tab_error);
                return None;
            }
            self.indents.push((col, altcol));
            return Some(IndentMove::Indent);
        }
        while self.indents.len() > 1 && self.indents.last().is_some_and(|&(c, _)| col < c) {
            self.indents.pop();
        }
        let (top, alttop) = self.indents.last().copied().unwrap_or((0, 0));
        if col != top {
            let end = self.row_len(self.line_start);
            self.fail_status(
                self.row,
                end,
                "IndentationError: unindent does not match any outer indentation level",
            );
            return None;
        }
        if altcol != alttop {
            self.fail_status(self.row, 0, tab_error);
            return None;
        }
        Some(IndentMove::Dedent)
    }

    fn finish_logical_line(&mut self) {
        if let Some(line) = self.current.take() {
            self.out.lines.push(line);
        }
    }

    /// Records a significant token spanning `start..self.pos` on the current logical line.
    fn note_token(&mut self, start: usize, is_colon: bool) {
        let (row, col) = (self.row, self.col());
        self.out.last_token_end = (row, col);
        if let Some(line) = self.current.as_mut() {
            line.ends_with_colon = is_colon;
            line.has_colon |= is_colon && self.brackets.is_empty();
            line.end_row = row;
            line.end_col = col;
            if self.words_seen < 2 {
                let text = Word::new(&self.src[start..self.pos]);
                if self.words_seen == 0 {
                    line.first_word = text;
                } else {
                    line.second_word = text;
                }
                self.words_seen += 1;
            }
        }
    }

    /// Scans one token (or skips whitespace or a comment) at `pos`, which is not a newline.
    fn token(&mut self) {
        let start = self.pos;
        let byte = self.peek(0);
        match byte {
            b' ' | b'\t' | 0x0c | b'\r' => {
                let rest = &self.src[self.pos..];
                self.pos += rest
                    .iter()
                    .take_while(|&&b| matches!(b, b' ' | b'\t' | 0x0c))
                    .count()
                    .max(1);
            }
            b'#' => {
                let rest = &self.src[self.pos..];
                self.pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            }
            b'\\' => self.continuation(),
            b'\'' | b'"' => {
                let (row, col) = (self.row, self.col());
                self.string(row, col, b"");
                self.note_token(start, false);
            }
            b'0'..=b'9' => {
                self.number();
                self.note_token(start, false);
            }
            b'.' if self.peek(1).is_ascii_digit() => {
                self.number();
                self.note_token(start, false);
            }
            0x80.. => self.non_ascii(),
            _ if is_ident_start(byte) => self.word(),
            b'(' | b'[' | b'{' => {
                self.open_bracket(byte);
                self.note_token(start, false);
            }
            b')' | b']' | b'}' => {
                self.close_bracket(byte);
                self.pos += 1;
                self.note_token(start, false);
            }
            _ => self.operator(),
        }
    }

    fn operator(&mut self) {
        let start = self.pos;
        let byte = self.peek(0);
        if matches!(byte, b'$' | b'?' | b'`') || byte < 0x20 {
            if self.out.stray.is_none() {
                self.out.stray = Some(SyntaxProblem::new(
                    self.row,
                    self.col(),
                    "SyntaxError: invalid syntax",
                ));
            }
            self.pos += 1;
            self.note_token(start, false);
            return;
        }
        let is_colon = byte == b':' && self.peek(1) != b'=';
        self.pos += 1;
        if byte == b':' && !is_colon {
            self.pos += 1;
        }
        self.note_token(start, is_colon);
    }

    fn continuation(&mut self) {
        let (row, col, line_start) = (self.row, self.col(), self.line_start);
        self.pos += 1;
        let at_newline = self.eat_newline();
        if !at_newline && !self.at_end() {
            self.fail_status(
                row,
                col + 1,
                "SyntaxError: unexpected character after line continuation character",
            );
            return;
        }
        if at_newline {
            self.out.joined_rows.push((row, row + 1));
        }
        if self.at_end() {
            let len = self.row_len(line_start);
            self.fail_status(row, len, "SyntaxError: unexpected EOF while parsing");
        }
    }

    fn word(&mut self) {
        let start = self.pos;
        self.pos += 1;
        self.skip_identifier();
        let quote = self.peek(0);
        if (quote == b'\'' || quote == b'"') && is_string_prefix(&self.src[start..self.pos]) {
            let prefix = self.src[start..self.pos].to_vec();
            let (row, col) = (self.row, start - self.line_start);
            self.string(row, col, &prefix);
        }
        self.note_token(start, false);
    }

    /// Advances over identifier characters, stopping at non-ASCII characters CPython rejects.
    pub(super) fn skip_identifier(&mut self) {
        while let Some(&byte) = self.src.get(self.pos) {
            let letter = byte.is_ascii_alphanumeric() || byte == b'_';
            let identifier_char =
                letter || (byte >= 0x80 && matches!(self.non_ascii_class(), CharClass::Identifier));
            if !identifier_char {
                return;
            }
            self.pos += 1;
        }
    }

    fn non_ascii_class(&self) -> CharClass {
        let rest = &self.src[self.pos..self.src.len().min(self.pos + 4)];
        let text = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(error) => std::str::from_utf8(&rest[..error.valid_up_to()]).unwrap_or(""),
        };
        text.chars()
            .next()
            .map_or(CharClass::Identifier, classify_non_ascii)
    }

    /// A non-ASCII character outside strings: identifiers may use letters, but CPython
    /// rejects punctuation, symbols and invisible characters.
    fn non_ascii(&mut self) {
        match self.non_ascii_class() {
            CharClass::NonPrintable(code) => {
                let message = format!("SyntaxError: invalid non-printable character U+{code:04X}");
                self.fail(self.row, self.col(), message);
            }
            CharClass::Invalid(ch) => {
                let message = format!(
                    "SyntaxError: invalid character '{ch}' (U+{:04X})",
                    u32::from(ch)
                );
                self.fail(self.row, self.col(), message);
            }
            CharClass::Identifier => self.word(),
        }
    }

    fn open_bracket(&mut self, byte: u8) {
        self.brackets.push(OpenBracket {
            byte,
            row: self.row,
            col: self.col(),
        });
        self.pos += 1;
    }

    fn close_bracket(&mut self, byte: u8) {
        let (row, col) = (self.row, self.col());
        let closer = char::from(byte);
        match self.brackets.pop() {
            None => self.fail(row, col, format!("SyntaxError: unmatched '{closer}'")),
            Some(open) if closing_for(open.byte) != byte => {
                let opener = char::from(open.byte);
                let message = if open.row == row {
                    format!(
                        "SyntaxError: closing parenthesis '{closer}' does not match opening parenthesis '{opener}'"
                    )
                } else {
                    format!(
                        "SyntaxError: closing parenthesis '{closer}' does not match opening parenthesis '{opener}' on line {}",
                        open.row + 1
                    )
                };
                self.fail(row, col, message);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
