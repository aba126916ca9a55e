//! Number literals for the tokenizer pass: radix prefixes, digits and underscores, floats and
//! imaginaries, with CPython's wording for each literal error.

use super::python_tokens::{Scanner, is_ident_start};

impl Scanner<'_> {
    /// Scans a number and reports CPython's literal errors (leading zeros, bad digits,
    /// letters glued to the number).
    pub(super) fn number(&mut self) {
        let (row, start) = (self.row, self.pos);
        let radix = match (self.peek(0), self.peek(1).to_ascii_lowercase()) {
            (b'0', b'x') => 16,
            (b'0', b'o') => 8,
            (b'0', b'b') => 2,
            _ => 10,
        };
        if radix != 10 {
            self.pos += 2;
            while self.peek(0).is_ascii_hexdigit() || self.peek(0) == b'_' {
                let digit = self.peek(0);
                let value = char::from(digit).to_digit(16).unwrap_or(0);
                if digit != b'_' && value >= radix {
                    if digit.is_ascii_digit() {
                        let kind = if radix == 2 { "binary" } else { "octal" };
                        let col = self.col();
                        self.fail(
                            row,
                            col,
                            format!(
                                "SyntaxError: invalid digit '{}' in {kind} literal",
                                char::from(digit)
                            ),
                        );
                    }
                    break;
                }
                self.pos += 1;
            }
        } else {
            self.decimal(start);
        }
        self.check_number_end(start);
    }

    fn digits(&mut self) {
        while self.peek(0).is_ascii_digit()
            || (self.peek(0) == b'_' && self.peek(1).is_ascii_digit())
        {
            self.pos += 1;
        }
        if self.peek(0) == b'_' {
            // A trailing or doubled underscore: CPython points at it.
            self.pos += 1;
            let col = self.col() - 1;
            self.fail(self.row, col, "SyntaxError: invalid decimal literal");
        }
    }

    fn decimal(&mut self, start: usize) {
        self.digits();
        let int_end = self.pos;
        let mut is_float = false;
        if self.peek(0) == b'.' {
            is_float = true;
            self.pos += 1;
            self.digits();
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self
                .src
                .get(self.pos + 1 + sign)
                .is_some_and(u8::is_ascii_digit)
            {
                is_float = true;
                self.pos += 1 + sign;
                self.digits();
            }
        }
        let imaginary = matches!(self.peek(0), b'j' | b'J');
        if imaginary {
            self.pos += 1;
        }
        let int_part = &self.src[start..int_end];
        let leading_zero = int_part.len() > 1
            && int_part[0] == b'0'
            && int_part.iter().any(|&b| b != b'0' && b != b'_');
        if leading_zero && !is_float && !imaginary {
            let col = start - self.line_start;
            self.fail(
                self.row,
                col,
                "SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
            );
        }
    }

    /// A letter glued to a number is "invalid decimal literal" unless it starts one of the
    /// keywords CPython still tolerates there (`1if x else y`).
    fn check_number_end(&mut self, start: usize) {
        let next = self.peek(0);
        if !is_ident_start(next) || self.out.error.is_some() {
            return;
        }
        let rest = &self.src[self.pos..];
        let tolerated = ["and", "else", "for", "if", "in", "is", "not", "or"]
            .iter()
            .any(|keyword| rest.starts_with(keyword.as_bytes()));
        if !tolerated {
            let col = self.col().saturating_sub(1).max(start - self.line_start);
            self.fail(self.row, col, "SyntaxError: invalid decimal literal");
        }
    }
}
