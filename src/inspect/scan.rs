//! A pull reader of JSON over any [`BufRead`] that builds nothing it is not asked for: values
//! are skipped without being kept, strings are decoded in pieces into a sink, and every string
//! is found again by the byte offset of its opening quote ([`string_at`]). It is what lets
//! `aci inspect` read a trajectory of any size in bounded memory.
//!
//! It is lenient where a viewer can be (bytes that are not UTF-8, raw control characters and
//! lone surrogates in strings are passed on or replaced) and strict about structure: a file
//! that is not JSON fails with the offset where it stops being so.

use std::io::{BufRead, Read, Seek, SeekFrom, Write};

/// How deep arrays and objects may nest.
const MAX_DEPTH: usize = 512;

/// Why the bytes are not JSON (or could not be read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at byte {offset}")]
pub struct ScanError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub offset: u64,
}

/// The kind of the next value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{`
    Object,
    /// `[`
    Array,
    /// `"`
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

/// A JSON reader over `R`, at byte `offset` of it.
pub struct Scanner<R> {
    reader: R,
    offset: u64,
}

impl<R: BufRead> Scanner<R> {
    /// A reader at the start of `reader`, which is at byte `offset` of its file.
    pub fn new(reader: R, offset: u64) -> Self {
        Scanner { reader, offset }
    }

    /// The byte offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn error(&self, message: impl Into<String>) -> ScanError {
        ScanError {
            message: message.into(),
            offset: self.offset,
        }
    }

    fn io(&self, error: &std::io::Error) -> ScanError {
        self.error(format!("cannot read: {error}"))
    }

    fn peek_byte(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            match self.reader.fill_buf() {
                Ok(buffer) => return Ok(buffer.first().copied()),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(self.io(&error)),
            }
        }
    }

    fn bump(&mut self) {
        self.reader.consume(1);
        self.offset += 1;
    }

    fn next_byte(&mut self) -> Result<u8, ScanError> {
        let byte = self
            .peek_byte()?
            .ok_or_else(|| self.error("EOF while parsing a value"))?;
        self.bump();
        Ok(byte)
    }

    fn skip_whitespace(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            match self.peek_byte()? {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.bump(),
                other => return Ok(other),
            }
        }
    }

    /// Whether only whitespace is left.
    ///
    /// # Errors
    /// The input cannot be read.
    pub fn at_end(&mut self) -> Result<bool, ScanError> {
        Ok(self.skip_whitespace()?.is_none())
    }

    /// The kind of the next value (whitespace skipped).
    ///
    /// # Errors
    /// The input ends, or what comes cannot start a value.
    pub fn peek_kind(&mut self) -> Result<Kind, ScanError> {
        match self.skip_whitespace()? {
            Some(b'{') => Ok(Kind::Object),
            Some(b'[') => Ok(Kind::Array),
            Some(b'"') => Ok(Kind::String),
            Some(b'-' | b'0'..=b'9') => Ok(Kind::Number),
            Some(b't' | b'f') => Ok(Kind::Bool),
            Some(b'n') => Ok(Kind::Null),
            Some(byte) => {
                Err(self.error(format!("expected a value, found {:?}", char::from(byte))))
            }
            None => Err(self.error("EOF while parsing a value")),
        }
    }

    fn expect(&mut self, wanted: u8) -> Result<(), ScanError> {
        match self.skip_whitespace()? {
            Some(byte) if byte == wanted => {
                self.bump();
                Ok(())
            }
            Some(byte) => Err(self.error(format!(
                "expected {:?}, found {:?}",
                char::from(wanted),
                char::from(byte)
            ))),
            None => Err(self.error(format!("EOF while expecting {:?}", char::from(wanted)))),
        }
    }

    /// Enters an object (its `{`); then [`Scanner::next_key`] until it says the object ended.
    ///
    /// # Errors
    /// The next value is not an object.
    pub fn begin_object(&mut self) -> Result<(), ScanError> {
        self.expect(b'{')
    }

    /// The next key of the object entered last (at most `256` bytes of it are kept), or `None`
    /// at its end. `first` is true before the first key.
    ///
    /// # Errors
    /// The object is malformed.
    pub fn next_key(&mut self, first: &mut bool) -> Result<Option<String>, ScanError> {
        match self.skip_whitespace()? {
            Some(b'}') => {
                self.bump();
                return Ok(None);
            }
            None => return Err(self.error("EOF while parsing an object")),
            Some(b',') if !*first => self.bump(),
            Some(_) if *first => {}
            Some(byte) => {
                return Err(self.error(format!(
                    "expected ',' or '}}', found {:?}",
                    char::from(byte)
                )));
            }
        }
        *first = false;
        if self.skip_whitespace()? != Some(b'"') {
            return Err(self.error("expected a key"));
        }
        let mut key = Vec::new();
        self.string(&mut |bytes: &[u8]| {
            let room = 256usize.saturating_sub(key.len());
            key.extend_from_slice(&bytes[..bytes.len().min(room)]);
        })?;
        self.expect(b':')?;
        Ok(Some(String::from_utf8_lossy(&key).into_owned()))
    }

    /// Enters an array (its `[`); then [`Scanner::next_element`] until it says the array ended.
    ///
    /// # Errors
    /// The next value is not an array.
    pub fn begin_array(&mut self) -> Result<(), ScanError> {
        self.expect(b'[')
    }

    /// Whether another element of the array entered last follows (then read or skip it).
    ///
    /// # Errors
    /// The array is malformed.
    pub fn next_element(&mut self, first: &mut bool) -> Result<bool, ScanError> {
        match self.skip_whitespace()? {
            Some(b']') => {
                self.bump();
                Ok(false)
            }
            Some(b',') if !*first => {
                self.bump();
                Ok(true)
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            Some(byte) => {
                Err(self.error(format!("expected ',' or ']', found {:?}", char::from(byte))))
            }
            None => Err(self.error("EOF while parsing a list")),
        }
    }

    /// Decodes the next value, a string, into `sink` piece by piece; returns the offset of its
    /// opening quote.
    ///
    /// # Errors
    /// The next value is not a string, or the string is malformed.
    pub fn string(&mut self, sink: &mut dyn FnMut(&[u8])) -> Result<u64, ScanError> {
        if self.skip_whitespace()? != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        let start = self.offset;
        self.bump();
        let mut pending_high: Option<u16> = None;
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(self.io(&error)),
            };
            if buffer.is_empty() {
                return Err(self.error("EOF while parsing a string"));
            }
            let run = buffer
                .iter()
                .position(|b| *b == b'"' || *b == b'\\')
                .unwrap_or(buffer.len());
            if run > 0 {
                if pending_high.take().is_some() {
                    sink(REPLACEMENT.as_bytes());
                }
                sink(&buffer[..run]);
                self.reader.consume(run);
                self.offset += run as u64;
                continue;
            }
            let byte = buffer[0];
            self.bump();
            if byte == b'"' {
                if pending_high.is_some() {
                    sink(REPLACEMENT.as_bytes());
                }
                return Ok(start);
            }
            let escaped = self.next_byte()?;
            let plain: Option<u8> = match escaped {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'b' => Some(0x08),
                b'f' => Some(0x0c),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'u' => None,
                other => {
                    return Err(self.error(format!("invalid escape {:?}", char::from(other))));
                }
            };
            if let Some(plain) = plain {
                if pending_high.take().is_some() {
                    sink(REPLACEMENT.as_bytes());
                }
                sink(&[plain]);
                continue;
            }
            let unit = self.hex4()?;
            match (pending_high.take(), unit) {
                (Some(high), 0xDC00..=0xDFFF) => {
                    let code =
                        0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    let c = char::from_u32(code).unwrap_or('\u{FFFD}');
                    sink(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                (previous, 0xD800..=0xDBFF) => {
                    if previous.is_some() {
                        sink(REPLACEMENT.as_bytes());
                    }
                    pending_high = Some(unit);
                }
                (previous, _) => {
                    if previous.is_some() {
                        sink(REPLACEMENT.as_bytes());
                    }
                    let c = char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}');
                    sink(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, ScanError> {
        let mut unit = 0u16;
        for _ in 0..4 {
            let byte = self.next_byte()?;
            let digit = char::from(byte)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid \\u escape"))?;
            unit = unit * 16 + digit as u16;
        }
        Ok(unit)
    }

    /// The next value, a number, as `f64`.
    ///
    /// # Errors
    /// The next value is not a number.
    pub fn number(&mut self) -> Result<f64, ScanError> {
        self.skip_whitespace()?;
        let mut text = String::new();
        while let Some(byte) = self.peek_byte()? {
            if !matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') || text.len() > 64 {
                break;
            }
            text.push(char::from(byte));
            self.bump();
        }
        text.parse()
            .map_err(|_| self.error(format!("invalid number {text:?}")))
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ScanError> {
        for wanted in word {
            if self.next_byte()? != *wanted {
                return Err(self.error("invalid literal"));
            }
        }
        Ok(())
    }

    /// Skips the next value whole, keeping nothing of it.
    ///
    /// # Errors
    /// It is malformed, or nests deeper than 512.
    pub fn skip(&mut self) -> Result<(), ScanError> {
        self.skip_into(&mut |_| {})
    }

    /// The next value's JSON text when it is at most `limit` bytes long (then parsed by the
    /// caller); `None` when it is longer (it is skipped all the same).
    ///
    /// # Errors
    /// It is malformed.
    pub fn capture(&mut self, limit: usize) -> Result<Option<Vec<u8>>, ScanError> {
        let mut raw = Vec::new();
        let mut over = false;
        self.skip_into(&mut |bytes| {
            if over || raw.len() + bytes.len() > limit {
                over = true;
            } else {
                raw.extend_from_slice(bytes);
            }
        })?;
        Ok((!over).then_some(raw))
    }

    /// Skips the next value, passing its bytes to `raw` as they are in the file (but the
    /// whitespace between tokens).
    fn skip_into(&mut self, raw: &mut dyn FnMut(&[u8])) -> Result<(), ScanError> {
        // The open containers, innermost last.
        let mut stack: Vec<u8> = Vec::new();
        loop {
            match self.peek_kind()? {
                kind @ (Kind::Object | Kind::Array) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.error("nested too deeply"));
                    }
                    let (open, close) = if kind == Kind::Object {
                        (b'{', b'}')
                    } else {
                        (b'[', b']')
                    };
                    self.bump();
                    raw(&[open]);
                    if self.skip_whitespace()? == Some(close) {
                        self.bump();
                        raw(&[close]);
                    } else {
                        stack.push(open);
                        if open == b'{' {
                            self.raw_string(raw)?;
                            self.expect(b':')?;
                            raw(b":");
                        }
                        // Its first value comes next.
                        continue;
                    }
                }
                Kind::String => self.raw_string(raw)?,
                Kind::Number => {
                    let mut text = Vec::new();
                    while let Some(byte) = self.peek_byte()? {
                        if !matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                            break;
                        }
                        text.push(byte);
                        self.bump();
                    }
                    raw(&text);
                }
                Kind::Bool => {
                    let word: &[u8] = if self.peek_byte()? == Some(b't') {
                        b"true"
                    } else {
                        b"false"
                    };
                    self.literal(word)?;
                    raw(word);
                }
                Kind::Null => {
                    self.literal(b"null")?;
                    raw(b"null");
                }
            }
            // After a value: close every container that ends here, then stop before the next
            // value (its key written) or return when the outermost one has ended.
            loop {
                let Some(&open) = stack.last() else {
                    return Ok(());
                };
                let close = if open == b'{' { b'}' } else { b']' };
                match self.skip_whitespace()? {
                    Some(b',') => {
                        self.bump();
                        raw(b",");
                        if open == b'{' {
                            self.raw_string(raw)?;
                            self.expect(b':')?;
                            raw(b":");
                        }
                        break;
                    }
                    Some(byte) if byte == close => {
                        self.bump();
                        raw(&[close]);
                        stack.pop();
                    }
                    Some(byte) => {
                        return Err(self.error(format!(
                            "expected ',' or {:?}, found {:?}",
                            char::from(close),
                            char::from(byte)
                        )));
                    }
                    None => return Err(self.error("EOF while parsing a value")),
                }
            }
        }
    }

    /// A string passed on raw (quotes and escapes as they are in the file).
    fn raw_string(&mut self, raw: &mut dyn FnMut(&[u8])) -> Result<(), ScanError> {
        if self.skip_whitespace()? != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        self.bump();
        raw(b"\"");
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(self.io(&error)),
            };
            if buffer.is_empty() {
                return Err(self.error("EOF while parsing a string"));
            }
            let run = buffer
                .iter()
                .position(|b| *b == b'"' || *b == b'\\')
                .unwrap_or(buffer.len());
            if run > 0 {
                raw(&buffer[..run]);
                self.reader.consume(run);
                self.offset += run as u64;
                continue;
            }
            let byte = self.next_byte()?;
            if byte == b'"' {
                raw(b"\"");
                return Ok(());
            }
            let escaped = self.next_byte()?;
            raw(&[b'\\', escaped]);
        }
    }
}

/// U+FFFD, for what cannot be decoded.
const REPLACEMENT: &str = "\u{FFFD}";

/// Decodes the JSON string whose opening quote is at byte `offset` of `file` into `out`;
/// returns how many bytes it wrote.
///
/// # Errors
/// The file cannot be read or written, or holds no string there.
pub fn string_at<F: Read + Seek>(
    file: &mut F,
    offset: u64,
    out: &mut dyn Write,
) -> std::io::Result<u64> {
    file.seek(SeekFrom::Start(offset))?;
    let mut scanner = Scanner::new(std::io::BufReader::with_capacity(64 * 1024, file), offset);
    let mut written = 0u64;
    let mut failed: Option<std::io::Error> = None;
    scanner
        .string(&mut |bytes| {
            if failed.is_none() {
                match out.write_all(bytes) {
                    Ok(()) => written += bytes.len() as u64,
                    Err(error) => failed = Some(error),
                }
            }
        })
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
    match failed {
        Some(error) => Err(error),
        None => Ok(written),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(json: &str) -> (String, u64) {
        let mut scanner = Scanner::new(json.as_bytes(), 0);
        let mut out = Vec::new();
        let at = scanner.string(&mut |b| out.extend_from_slice(b)).unwrap();
        (String::from_utf8(out).unwrap(), at)
    }

    #[test]
    fn strings_decode_as_serde_json_decodes_them() {
        for text in [
            "plain",
            "a\nb\t\"q\" \\ /",
            "\u{1F600} é \u{0}",
            "",
            "</script>\u{2028}",
        ] {
            let json = serde_json::to_string(text).unwrap();
            assert_eq!(decode(&format!("  {json}")), (text.to_owned(), 2), "{json}");
        }
        assert_eq!(decode(r#""\ud83d\ude00 \u00e9""#).0, "\u{1F600} é");
        // A lone surrogate becomes U+FFFD instead of failing the file.
        assert_eq!(decode(r#""a\ud83db\udc00""#).0, "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn values_are_skipped_or_captured_without_being_built() {
        let json = r#"{"a": [1, -2.5e3, true, false, null, {"b": "x\"y"}], "c": {}} tail"#;
        let mut scanner = Scanner::new(json.as_bytes(), 0);
        let raw = scanner.capture(1000).unwrap().unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(
            parsed,
            serde_json::from_str::<serde_json::Value>(&json[..json.len() - 5]).unwrap()
        );
        let mut scanner = Scanner::new(json.as_bytes(), 0);
        assert_eq!(scanner.capture(10).unwrap(), None);
        assert_eq!(scanner.offset(), json.len() as u64 - 5);
        for bad in [
            "{\"a\" 1}",
            "[1 2]",
            "[1,",
            "{\"a\": tru}",
            "\"abc",
            "[",
            "{1: 2}",
        ] {
            let mut scanner = Scanner::new(bad.as_bytes(), 0);
            assert!(scanner.skip().is_err(), "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1);
        let error = Scanner::new(deep.as_bytes(), 0).skip().unwrap_err();
        assert_eq!(error.message, "nested too deeply");
    }

    #[test]
    fn objects_and_arrays_are_walked_key_by_key() {
        let json = r#"{"n": 3, "s": "v", "l": ["x", "y"]}"#;
        let mut scanner = Scanner::new(json.as_bytes(), 0);
        scanner.begin_object().unwrap();
        let mut first = true;
        let mut seen = Vec::new();
        while let Some(key) = scanner.next_key(&mut first).unwrap() {
            match key.as_str() {
                "n" => seen.push(format!("n={}", scanner.number().unwrap())),
                "l" => {
                    scanner.begin_array().unwrap();
                    let mut first = true;
                    while scanner.next_element(&mut first).unwrap() {
                        let mut text = Vec::new();
                        scanner.string(&mut |b| text.extend_from_slice(b)).unwrap();
                        seen.push(String::from_utf8(text).unwrap());
                    }
                }
                _ => {
                    assert_eq!(scanner.peek_kind().unwrap(), Kind::String);
                    scanner.skip().unwrap();
                    seen.push(key);
                }
            }
        }
        assert_eq!(seen, ["n=3", "s", "x", "y"]);
    }

    #[test]
    fn a_string_is_read_again_at_its_offset() {
        let json = r#"{"a": "first", "b": "sec\nond"}"#;
        let at = json.find("\"sec").unwrap() as u64;
        let mut out = Vec::new();
        let mut file = std::io::Cursor::new(json.as_bytes());
        assert_eq!(string_at(&mut file, at, &mut out).unwrap(), 7);
        assert_eq!(out, b"sec\nond");
        assert!(string_at(&mut file, 0, &mut Vec::new()).is_err());
    }
}
