//! Strings of any length kept in bounded memory: a [`Text`] is whole when short, else its first
//! and last bytes, with its size and where its full text is ([`Part`]). `Collector` builds one
//! as the string is decoded, a piece at a time, and can count lint rejections and patch lines
//! on the way.

use std::io::Read;
use std::path::Path;

use super::summary::LINT_REJECTION;

/// A string up to this many bytes is kept whole (windows, edits and patches are parsed from it).
pub const KEEP_WHOLE: usize = 16 * 1024;
/// How many bytes of a longer string's start are kept.
pub const HEAD_BYTES: usize = 4 * 1024;
/// How many bytes of a longer string's end are kept.
pub const TAIL_BYTES: usize = 2 * 1024;

/// One piece of a full text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text of its own (a separator or a heading).
    Literal(String),
    /// The JSON string whose opening quote is at this byte offset of the file.
    At(u64),
}

/// A string of a trajectory as kept: whole when at most [`KEEP_WHOLE`] bytes, else its first
/// [`HEAD_BYTES`] and last [`TAIL_BYTES`]; with its size and the parts of its full text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    whole: Option<String>,
    head: String,
    tail: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its number of lines (newlines plus one).
    pub lines: u64,
    /// Its number of characters.
    pub chars: u64,
    /// Where its full text is.
    pub parts: Vec<Part>,
}

impl Text {
    /// A text held whole (not from a file).
    pub fn of(text: &str) -> Self {
        let mut collector = Collector::new(true);
        collector.feed(text.as_bytes());
        let mut kept = collector.finish();
        kept.parts = vec![Part::Literal(text.to_owned())];
        kept
    }

    /// The whole text, when it was kept whole.
    pub fn whole(&self) -> Option<&str> {
        self.whole.as_deref()
    }

    /// Its start: the whole text, or the first bytes kept.
    pub fn head(&self) -> &str {
        self.whole.as_deref().unwrap_or(&self.head)
    }

    /// Its end: the whole text, or the last bytes kept.
    pub fn tail(&self) -> &str {
        self.whole.as_deref().unwrap_or(&self.tail)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The texts one after the other, with `separator` between them.
    pub(super) fn join(texts: &[Text], separator: &str) -> Text {
        let mut collector = Collector::new(true);
        let mut parts = Vec::new();
        for (index, text) in texts.iter().enumerate() {
            if index > 0 {
                collector.feed(separator.as_bytes());
                parts.push(Part::Literal(separator.to_owned()));
            }
            match text.whole() {
                Some(whole) => collector.feed(whole.as_bytes()),
                None => collector.feed_unknown(text),
            }
            parts.extend(text.parts.iter().cloned());
        }
        let mut joined = collector.finish();
        joined.parts = parts;
        joined
    }
}

/// Collects a string as it is decoded: counts it, keeps it whole while it is short, and keeps
/// its first and last bytes; also counts lint rejections or patch lines when asked.
pub(super) struct Collector {
    keep: bool,
    whole: Option<Vec<u8>>,
    head: Vec<u8>,
    tail: Vec<u8>,
    bytes: u64,
    newlines: u64,
    chars: u64,
    /// Counts lint rejections, when set.
    pub(super) lint: Option<Matcher>,
    /// Counts patch lines, when set.
    pub(super) patch: Option<PatchLines>,
    /// Whether every byte so far is whitespace.
    pub(super) blank: bool,
}

impl Collector {
    pub(super) fn new(keep: bool) -> Self {
        Collector {
            keep,
            whole: keep.then(Vec::new),
            head: Vec::new(),
            tail: Vec::new(),
            bytes: 0,
            newlines: 0,
            chars: 0,
            lint: None,
            patch: None,
            blank: true,
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        self.blank = self.blank && bytes.iter().all(u8::is_ascii_whitespace);
        if self.keep {
            self.newlines += bytes.iter().filter(|b| **b == b'\n').count() as u64;
            self.chars += bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64;
        }
        if let Some(lint) = &mut self.lint {
            lint.feed(bytes);
        }
        if let Some(patch) = &mut self.patch {
            patch.feed(bytes);
        }
        if !self.keep {
            return;
        }
        if let Some(whole) = &mut self.whole {
            if whole.len() + bytes.len() <= KEEP_WHOLE {
                whole.extend_from_slice(bytes);
            } else {
                self.whole = None;
            }
        }
        if self.head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - self.head.len();
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        self.tail
            .extend_from_slice(&bytes[bytes.len().saturating_sub(TAIL_BYTES)..]);
        if self.tail.len() > 2 * TAIL_BYTES {
            let extra = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..extra);
        }
    }

    /// Counts a text that was not kept whole, keeping its head and tail as far as they go.
    fn feed_unknown(&mut self, text: &Text) {
        self.whole = None;
        self.bytes += text.bytes;
        self.newlines += text.lines.saturating_sub(1);
        self.chars += text.chars;
        if self.keep && self.head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - self.head.len();
            let head = text.head().as_bytes();
            self.head.extend_from_slice(&head[..head.len().min(room)]);
        }
        if self.keep {
            self.tail = text.tail().as_bytes().to_vec();
        }
    }

    pub(super) fn finish(self) -> Text {
        let tail_start = self.tail.len().saturating_sub(TAIL_BYTES);
        Text {
            whole: self
                .whole
                .map(|whole| String::from_utf8_lossy(&whole).into_owned()),
            head: lossy_prefix(&self.head),
            tail: lossy_suffix(&self.tail[tail_start..]),
            bytes: self.bytes,
            lines: self.newlines + 1,
            chars: self.chars,
            parts: Vec::new(),
        }
    }
}

/// `bytes` as text, a character cut at its end dropped.
fn lossy_prefix(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(error) if error.error_len().is_none() => {
            String::from_utf8_lossy(&bytes[..error.valid_up_to()]).into_owned()
        }
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// `bytes` as text, a character cut at its start dropped.
fn lossy_suffix(bytes: &[u8]) -> String {
    let start = bytes
        .iter()
        .take(4)
        .position(|b| (*b & 0xC0) != 0x80)
        .unwrap_or(0);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Counts the occurrences of [`LINT_REJECTION`] in a stream of bytes.
pub(super) struct Matcher {
    carry: Vec<u8>,
    /// The occurrences so far.
    pub(super) count: usize,
}

impl Matcher {
    pub(super) fn new() -> Self {
        Matcher {
            carry: Vec::new(),
            count: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let needle = LINT_REJECTION.as_bytes();
        // The carry (the last bytes before) is shorter than the needle: a match counted here
        // is never counted again, and one cut between two pieces is whole here.
        let mut window = std::mem::take(&mut self.carry);
        window.extend_from_slice(bytes);
        self.count += count_in(&window, needle);
        window.drain(..window.len().saturating_sub(needle.len() - 1));
        self.carry = window;
    }
}

fn count_in(haystack: &[u8], needle: &[u8]) -> usize {
    if haystack.len() < needle.len() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// Counts the lines a unified diff adds and removes, as [`super::summary::patch_lines`] does.
pub(super) struct PatchLines {
    /// The first bytes of the current line (up to 4).
    start: Vec<u8>,
    added: usize,
    removed: usize,
}

impl PatchLines {
    pub(super) fn new() -> Self {
        PatchLines {
            start: Vec::new(),
            added: 0,
            removed: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for byte in bytes {
            if *byte == b'\n' {
                self.end_line();
            } else if self.start.len() < 4 {
                self.start.push(*byte);
            }
        }
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.start);
        if line.first() == Some(&b'+') && !line.starts_with(b"+++ ") {
            self.added += 1;
        } else if line.first() == Some(&b'-') && !line.starts_with(b"--- ") {
            self.removed += 1;
        }
    }

    pub(super) fn finish(mut self) -> (usize, usize) {
        if !self.start.is_empty() {
            self.end_line();
        }
        (self.added, self.removed)
    }
}

/// The text of a file of any size as a [`Text`]: whole when short, else its first and last
/// bytes (the file is read through once; nothing else of it is kept).
///
/// # Errors
/// The file cannot be read.
pub fn read_text_file(path: &Path) -> std::io::Result<Text> {
    let mut file = std::fs::File::open(path)?;
    let mut collector = Collector::new(true);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        collector.feed(&buffer[..n]);
    }
    Ok(collector.finish())
}
