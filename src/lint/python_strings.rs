//! String literals for the tokenizer pass: quotes, triple quotes, prefixes, escapes and
//! PEP 701 f-string replacement fields (which may nest strings reusing the outer quote).

use super::python_tokens::{Scanner, is_ident_start, is_string_prefix};

impl Scanner<'_> {
    /// Scans a string literal whose prefix starts at (`row`, `col`) and whose quote is at `pos`.
    pub(super) fn string(&mut self, row: usize, col: usize, prefix: &[u8]) {
        let quote = self.peek(0);
        let triple = self.peek(1) == quote && self.peek(2) == quote;
        let formatted = prefix.iter().any(|b| b.eq_ignore_ascii_case(&b'f'));
        self.pos += if triple { 3 } else { 1 };
        let closed = self.string_body(quote, triple, formatted);
        if self.row > row {
            self.out.joined_rows.push((row, self.row));
        }
        if !closed {
            let detected = self.last_line_number();
            let message = if triple {
                format!(
                    "SyntaxError: unterminated triple-quoted string literal (detected at line {detected})"
                )
            } else {
                format!("SyntaxError: unterminated string literal (detected at line {detected})")
            };
            self.fail(row, col, message);
        }
    }

    /// The 1-based number of the line the scanner stopped on (the last line with content at
    /// the end of the file).
    pub(super) fn last_line_number(&self) -> usize {
        if self.at_end() && self.pos == self.line_start && self.row > 0 {
            self.row
        } else {
            self.row + 1
        }
    }

    /// Scans up to and including the closing quote; false when the string is unterminated.
    pub(super) fn string_body(&mut self, quote: u8, triple: bool, formatted: bool) -> bool {
        loop {
            let rest = &self.src[self.pos.min(self.src.len())..];
            let plain = rest
                .iter()
                .take_while(|&&b| {
                    b != quote
                        && b != b'\\'
                        && b != b'\n'
                        && b != b'\r'
                        && !(formatted && b == b'{')
                })
                .count();
            self.pos += plain;
            if self.at_end() {
                return false;
            }
            let byte = self.peek(0);
            if byte == b'\\' {
                self.pos += 1;
                if !self.eat_newline() && !self.at_end() {
                    self.pos += 1;
                }
                continue;
            }
            if byte == quote && (!triple || (self.peek(1) == quote && self.peek(2) == quote)) {
                self.pos += if triple { 3 } else { 1 };
                return true;
            }
            if byte == b'\n' || (byte == b'\r' && self.peek(1) == b'\n') {
                if !triple {
                    return false;
                }
                self.eat_newline();
                continue;
            }
            if formatted && byte == b'{' {
                if self.peek(1) == b'{' {
                    self.pos += 2;
                } else {
                    self.pos += 1;
                    if !self.replacement_field() {
                        return false;
                    }
                }
                continue;
            }
            self.pos += 1;
        }
    }

    /// Scans an f-string replacement field after its `{`, up to and including the matching
    /// `}` (PEP 701: nested strings may reuse the outer quote). False at the end of the file.
    pub(super) fn replacement_field(&mut self) -> bool {
        let mut depth = 0usize;
        let mut in_spec = false;
        loop {
            if self.at_end() {
                return false;
            }
            let byte = self.peek(0);
            match byte {
                b'\n' | b'\r' => {
                    if !self.eat_newline() {
                        self.pos += 1;
                    }
                }
                b'}' if depth == 0 => {
                    self.pos += 1;
                    return true;
                }
                b'{' if in_spec => {
                    self.pos += 1;
                    if !self.replacement_field() {
                        return false;
                    }
                }
                b'(' | b'[' | b'{' if !in_spec => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' | b']' | b'}' if !in_spec => {
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                }
                b':' if depth == 0 && !in_spec => {
                    in_spec = true;
                    self.pos += 1;
                }
                b'\'' | b'"' if !in_spec => {
                    let (row, col) = (self.row, self.col());
                    self.string(row, col, b"");
                    if self.out.error.is_some() {
                        return false;
                    }
                }
                _ if !in_spec && is_ident_start(byte) => {
                    let start = self.pos;
                    self.pos += 1;
                    self.skip_identifier();
                    let quote = self.peek(0);
                    if (quote == b'\'' || quote == b'"')
                        && is_string_prefix(&self.src[start..self.pos])
                    {
                        let prefix = self.src[start..self.pos].to_vec();
                        let (row, col) = (self.row, start - self.line_start);
                        self.string(row, col, &prefix);
                        if self.out.error.is_some() {
                            return false;
                        }
                    }
                }
                _ => self.pos += 1,
            }
        }
    }
}
