//! Line bookkeeping shared by the checks: where rows start, how long they are, and the
//! character column (flake8 counts characters, tree-sitter counts bytes) of a byte column.

/// Start offsets of every row of a text (rows end at `\n`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub(crate) fn new(src: &[u8]) -> Self {
        let mut starts = vec![0];
        starts.extend(
            src.iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self {
            starts,
            len: src.len(),
        }
    }

    /// The bytes of `row` without its line ending (empty past the end).
    pub(crate) fn row<'a>(&self, src: &'a [u8], row: usize) -> &'a [u8] {
        let Some(&start) = self.starts.get(row) else {
            return &[];
        };
        let end = self.starts.get(row + 1).map_or(self.len, |next| next - 1);
        let line = src.get(start..end.max(start)).unwrap_or(&[]);
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// The number of characters before byte column `col` of `row` (bytes past the end of
    /// the row count one each).
    pub(crate) fn char_col(&self, src: &[u8], row: usize, col: usize) -> usize {
        let line = self.row(src, row);
        let within = &line[..col.min(line.len())];
        let chars = within.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
        chars + col.saturating_sub(line.len())
    }
}

/// Row and byte column of the first token at or after `byte`, skipping whitespace, line
/// endings and comments; None at the end of the text.
pub(crate) fn token_after(src: &[u8], byte: usize) -> Option<(usize, usize)> {
    let mut byte = byte;
    while byte < src.len() {
        match src[byte] {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0c => byte += 1,
            b'#' => {
                while byte < src.len() && src[byte] != b'\n' {
                    byte += 1;
                }
            }
            _ => {
                let before = &src[..byte];
                let row = before.iter().filter(|&&b| b == b'\n').count();
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                return Some((row, byte - line_start));
            }
        }
    }
    None
}

/// Where CPython reports an error found at the end of the file: just past the last line
/// (a final newline does not start a line of its own).
pub(crate) fn end_of_file(src: &[u8]) -> (usize, usize) {
    let newlines = src.iter().filter(|&&b| b == b'\n').count();
    let row = if src.ends_with(b"\n") {
        newlines.saturating_sub(1)
    } else {
        newlines
    };
    let index = LineIndex::new(src);
    (row, index.row(src, row).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_exclude_line_endings_including_crlf() {
        let src = b"ab\r\ncd\nef";
        let index = LineIndex::new(src);
        assert_eq!(index.row(src, 0), b"ab");
        assert_eq!(index.row(src, 1), b"cd");
        assert_eq!(index.row(src, 2), b"ef");
        assert_eq!(index.row(src, 3), b"");
    }

    #[test]
    fn char_columns_count_multibyte_characters_once() {
        let src = "é = x\n".as_bytes();
        let index = LineIndex::new(src);
        assert_eq!(index.char_col(src, 0, 5), 4);
        assert_eq!(index.char_col(src, 0, 9), 8);
    }
}
