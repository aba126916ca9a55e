//! The lint gate for `edit`: tree-sitter syntax checks for Python, Rust, Go, Java,
//! JavaScript, TypeScript (and TSX), C, C++, PHP and Ruby, plus Python's
//! tokenizer-level indentation check and pyflakes-style name checks, reported with flake8's
//! codes and wording. Pure: bytes in, verdict out. Only errors an edit *adds* block it.
//!
//! [`gate`] and [`check`] are one-shot; [`Linter`] keeps the parse trees and per-statement
//! analyses of the texts it last saw, so that consecutive edits re-parse incrementally.

mod filter;
mod noqa;
mod outline;
mod python_builtins;
mod python_definitions;
mod python_indent;
mod python_names;
mod python_numbers;
mod python_scope;
mod python_strings;
mod python_syntax;
mod python_tokens;
mod syntax;
mod text;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use tree_sitter::{Parser, Tree};

pub use filter::{filter_new, parse_flake8};
pub use outline::python_function_bodies;

use python_names::{Change, Units};
use python_tokens::Scan;
pub(crate) use syntax::new_parser;
use syntax::{SYNTAX_CODE, line_edit, reparse};
use text::LineIndex;

/// A language the gate can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// Python: `.py` and `.pyi` files.
    Python,
    /// Rust: `.rs` files.
    Rust,
    /// Go: `.go` files.
    Go,
    /// Java: `.java` files.
    Java,
    /// JavaScript, JSX included: `.js`, `.mjs`, `.cjs` and `.jsx` files.
    JavaScript,
    /// TypeScript: `.ts`, `.mts` and `.cts` files.
    TypeScript,
    /// TypeScript with JSX: `.tsx` files (TypeScript's type assertions `<T>x` are not
    /// allowed there, so it has a grammar of its own).
    Tsx,
    /// C: `.c` files.
    C,
    /// C++: `.cc`, `.cpp`, `.cxx`, `.c++`, `.hpp`, `.hh`, `.hxx` and `.h` files. A `.h` is
    /// C++'s because the C++ grammar parses C too, while C's rejects every class, namespace
    /// and template of a C++ header.
    Cpp,
    /// PHP: `.php` files (HTML around `<?php ... ?>` included).
    Php,
    /// Ruby: `.rb` files.
    Ruby,
}

impl Language {
    /// Every language, in the order of [`Language::NAMES`].
    pub const ALL: [Language; 11] = [
        Language::Python,
        Language::Rust,
        Language::Go,
        Language::Java,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::C,
        Language::Cpp,
        Language::Php,
        Language::Ruby,
    ];

    /// The names `aci.lint.languages` accepts, each once (TSX is part of `typescript`).
    pub const NAMES: [&'static str; 10] = [
        "python",
        "rust",
        "go",
        "java",
        "javascript",
        "typescript",
        "c",
        "cpp",
        "php",
        "ruby",
    ];

    /// The language of `path` by extension (see each variant), if its name
    /// ([`Language::name`], any case) is in `enabled`. None means "not gated".
    pub fn from_path(path: &str, enabled: &[String]) -> Option<Language> {
        let file_name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, extension) = file_name.rsplit_once('.')?;
        let language = match extension {
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "go" => Language::Go,
            "java" => Language::Java,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "c" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h" => Language::Cpp,
            "php" => Language::Php,
            "rb" => Language::Ruby,
            _ => return None,
        };
        enabled
            .iter()
            .any(|name| name.trim().eq_ignore_ascii_case(language.name()))
            .then_some(language)
    }

    /// The name used in configuration (`aci.lint.languages`); `.tsx` files are enabled
    /// with `typescript`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Go => "go",
            Language::Java => "java",
            Language::JavaScript => "javascript",
            Language::TypeScript | Language::Tsx => "typescript",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Php => "php",
            Language::Ruby => "ruby",
        }
    }
}

/// One lint error, positioned as flake8 positions it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LintError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column in characters. For E999 this is flake8's column, one right of
    /// CPython's offset.
    pub column: usize,
    /// `"E999"`, `"F821"`, `"E111"`, ...
    pub code: String,
    /// The text after the code, e.g. `SyntaxError: '(' was never closed`.
    pub message: String,
}

impl LintError {
    /// The code and message as flake8 prints them after `file:line:col: `.
    pub fn problem(&self) -> String {
        format!("{} {}", self.code, self.message)
    }
}

impl fmt::Display for LintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {} {}",
            self.line, self.column, self.code, self.message
        )
    }
}

/// The edited lines of `before`: `start..=end` (1-based, v0 semantics) were replaced by
/// `replacement_lines` lines. Only [`filter_new`] uses it; the incremental re-parse finds
/// the changed lines itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EditRange {
    /// The first replaced line, 1-based.
    pub start: usize,
    /// The last replaced line, 1-based and inclusive.
    pub end: usize,
    /// How many lines replaced them.
    pub replacement_lines: usize,
}

/// The gate's answer for one edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Errors the edit introduced; any of them blocks the edit.
    pub new_errors: Vec<LintError>,
    /// Every error of the edited text.
    pub all_errors: Vec<LintError>,
}

impl Verdict {
    /// True when the edit introduced no error.
    pub fn passed(&self) -> bool {
        self.new_errors.is_empty()
    }
}

/// Gate settings (`aci.lint.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateOptions {
    /// Drop errors that existed before the edit (v0.7); false blocks on every error (v0.1).
    pub filter_preexisting: bool,
    /// The file is a package's `__init__.py`: like pyflakes, allow `__path__` and skip F822.
    pub package_init: bool,
}

impl Default for GateOptions {
    fn default() -> Self {
        Self {
            filter_preexisting: true,
            package_init: false,
        }
    }
}

/// Gates one edit: checks `before` and `after` and returns the errors the edit added.
pub fn gate(
    language: Language,
    before: &[u8],
    after: &[u8],
    edited: &EditRange,
    options: &GateOptions,
) -> Verdict {
    Linter::new().gate(language, before, after, edited, options)
}

/// Every error of one text.
pub fn check(language: Language, source: &[u8]) -> Vec<LintError> {
    Linter::new().check(language, source, &GateOptions::default())
}

/// The analysis of one text: its bytes, tree, Python units and errors.
struct Snapshot {
    language: Language,
    package_init: bool,
    text: Vec<u8>,
    tree: Option<Tree>,
    units: Units,
    /// The tokenizer pass over a Python text (empty for the other languages).
    scan: Scan,
    /// A `# flake8: noqa` line turns every check off.
    ignored: bool,
    errors: Vec<LintError>,
}

/// A gate that remembers the last texts it checked, so that the next edit of the same file
/// parses incrementally and re-analyses only the statements the edit touched.
#[derive(Default)]
pub struct Linter {
    /// One parser per language met so far.
    parsers: HashMap<Language, Parser>,
    /// The before and after texts of the last call.
    recent: Vec<Snapshot>,
}

impl fmt::Debug for Linter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Linter")
            .field("cached_texts", &self.recent.len())
            .finish()
    }
}

impl Linter {
    /// A linter with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Like [`gate`], reusing the analysis of `before` (or of the text it was derived from)
    /// when this linter saw it last time.
    pub fn gate(
        &mut self,
        language: Language,
        before: &[u8],
        after: &[u8],
        edited: &EditRange,
        options: &GateOptions,
    ) -> Verdict {
        let old = self.snapshot(language, before, options.package_init, None);
        let new = self.snapshot(language, after, options.package_init, Some(&old));
        let all_errors = new.errors.clone();
        let new_errors = if options.filter_preexisting {
            filter_new(&old.errors, all_errors.clone(), edited)
        } else {
            all_errors.clone()
        };
        self.recent = vec![old, new];
        Verdict {
            new_errors,
            all_errors,
        }
    }

    /// Like [`check`]; the text is kept as the base for the next [`Linter::gate`].
    pub fn check(
        &mut self,
        language: Language,
        source: &[u8],
        options: &GateOptions,
    ) -> Vec<LintError> {
        let snapshot = self.snapshot(language, source, options.package_init, None);
        let errors = snapshot.errors.clone();
        self.recent.retain(|s| s.text != snapshot.text);
        self.recent.push(snapshot);
        if self.recent.len() > 2 {
            self.recent.remove(0);
        }
        errors
    }

    /// The analysis of `text`: cached, derived incrementally from `base`, or from scratch.
    fn snapshot(
        &mut self,
        language: Language,
        text: &[u8],
        package_init: bool,
        base: Option<&Snapshot>,
    ) -> Snapshot {
        let same = |s: &Snapshot| {
            s.language == language && s.package_init == package_init && s.text == text
        };
        if let Some(index) = self.recent.iter().position(same) {
            return self.recent.swap_remove(index);
        }
        if let Some(base) = base.filter(|b| same(b)) {
            return base.duplicate();
        }
        let base = base.filter(|b| b.language == language && b.tree.is_some());
        let parser = self
            .parsers
            .entry(language)
            .or_insert_with(|| new_parser(language).unwrap_or_default());
        let incremental = base.and_then(|base| {
            let edit = line_edit(&base.text, text)?;
            // tree-sitter's error recovery can differ between an incremental and a fresh
            // parse; a text with errors is parsed afresh so its messages never depend on the
            // edits that led to it.
            let tree = reparse(parser, base.tree.as_ref()?, &edit, text)
                .filter(|tree| !tree.root_node().has_error())?;
            let change = Change {
                start: edit.start_byte,
                old_end: edit.old_end_byte,
                new_end: edit.new_end_byte,
            };
            Some((tree, base, change))
        });
        let (tree, units, scan, ignored) = match incremental {
            Some((tree, base, change)) => match language {
                Language::Python => {
                    let units =
                        Units::rebuild(tree.root_node(), text, Some((&base.units, &change)));
                    let scan = python_tokens::rescan(&base.scan, text, &change);
                    // The edit keeps whole lines, so a marker line is an old one or a new one.
                    let ignored = if base.ignored {
                        noqa::file_is_ignored(text)
                    } else {
                        noqa::file_is_ignored(&text[change.start..change.new_end])
                    };
                    (Some(tree), units, scan, ignored)
                }
                _ => (Some(tree), Units::default(), Scan::default(), false),
            },
            None => {
                let tree = parser.parse(text, None);
                match (&tree, language) {
                    (Some(root), Language::Python) => {
                        let units = Units::build(root.root_node(), text);
                        let ignored = noqa::file_is_ignored(text);
                        (tree, units, python_tokens::scan(text), ignored)
                    }
                    _ => (tree, Units::default(), Scan::default(), false),
                }
            }
        };
        let errors = match (&tree, language) {
            (Some(_), Language::Python) if ignored => Vec::new(),
            (Some(tree), Language::Python) => {
                python_errors(tree, text, &units, &scan, package_init)
            }
            (Some(tree), _) => syntax::syntax_errors(language, tree.root_node(), text),
            (None, _) => Vec::new(),
        };
        Snapshot {
            language,
            package_init,
            text: text.to_vec(),
            tree,
            units,
            scan,
            ignored,
            errors,
        }
    }
}

impl Snapshot {
    fn duplicate(&self) -> Snapshot {
        Snapshot {
            language: self.language,
            package_init: self.package_init,
            text: self.text.clone(),
            tree: self.tree.clone(),
            units: self.units.clone(),
            scan: self.scan.clone(),
            ignored: self.ignored,
            errors: self.errors.clone(),
        }
    }
}

/// flake8's view of a Python text: the single E999 if there is a syntax error (flake8 stops
/// there), otherwise F821/F822/F831 and E111/E112/E113, minus `# noqa` lines.
fn python_errors(
    tree: &Tree,
    src: &[u8],
    units: &Units,
    scan: &Scan,
    package_init: bool,
) -> Vec<LintError> {
    let root = tree.root_node();
    if let Some(problem) = python_syntax::first_syntax_error(root, src, scan, units) {
        let index = LineIndex::new(src);
        if noqa::suppresses(index.row(src, problem.row), SYNTAX_CODE) {
            return Vec::new();
        }
        return vec![LintError {
            line: problem.row + 1,
            column: index.char_col(src, problem.row, problem.col)
                + if problem.before { 1 } else { 2 },
            code: SYNTAX_CODE.to_owned(),
            message: problem.message,
        }];
    }
    let names = units
        .diagnostics(package_init)
        .into_iter()
        .map(|d| (d.row, d.col, d.code, d.message));
    let style = python_indent::style_diagnostics(scan)
        .into_iter()
        .map(|d| (d.row, d.col, d.code, d.message.to_owned()));
    let found: Vec<_> = names.chain(style).collect();
    if found.is_empty() {
        return Vec::new();
    }
    let index = LineIndex::new(src);
    let groups = noqa_groups(&scan.joined_rows);
    let mut errors: Vec<LintError> = found
        .into_iter()
        .filter(|(row, _, code, _)| !noqa_covers(src, &index, &groups, *row, code))
        .map(|(row, col, code, message)| LintError {
            line: row + 1,
            column: index.char_col(src, row, col) + 1,
            code: code.to_owned(),
            message,
        })
        .collect();
    errors.sort_by_key(|error| (error.line, error.column));
    errors
}

/// Merges the row ranges flake8 joins for `# noqa` (multi-line strings, continuations).
fn noqa_groups(joined: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut ranges = joined.to_vec();
    ranges.sort_unstable();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for (start, end) in ranges {
        match groups.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => groups.push((start, end)),
        }
    }
    groups
}

fn noqa_covers(
    src: &[u8],
    index: &LineIndex,
    groups: &[(usize, usize)],
    row: usize,
    code: &str,
) -> bool {
    let at = groups.partition_point(|&(_, end)| end < row);
    let (first, last) = groups
        .get(at)
        .filter(|&&(start, _)| start <= row)
        .copied()
        .unwrap_or((row, row));
    (first..=last).any(|r| noqa::suppresses(index.row(src, r), code))
}
