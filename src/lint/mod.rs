//! The lint gate (placeholder until the tree-sitter gate lands: every edit passes).

/// A gated language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `.py`
    Python,
    /// `.rs`
    Rust,
}

impl Language {
    /// The language of `path` when it is enabled.
    pub fn from_path(path: &str, enabled: &[String]) -> Option<Language> {
        let language = if path.ends_with(".py") {
            Language::Python
        } else if path.ends_with(".rs") {
            Language::Rust
        } else {
            return None;
        };
        let name = match language {
            Language::Python => "python",
            Language::Rust => "rust",
        };
        enabled.iter().any(|e| e == name).then_some(language)
    }
}

/// One error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// flake8 code.
    pub code: String,
    /// The message.
    pub message: String,
}

impl LintError {
    /// `CODE message`.
    pub fn problem(&self) -> String {
        format!("{} {}", self.code, self.message)
    }
}

/// The edited range.
#[derive(Debug, Clone, Copy)]
pub struct EditRange {
    /// First line.
    pub start: usize,
    /// Last line.
    pub end: usize,
    /// Replacement line count.
    pub replacement_lines: usize,
}

/// The gate's answer.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// New errors.
    pub new_errors: Vec<LintError>,
    /// All errors.
    pub all_errors: Vec<LintError>,
}

/// Options.
#[derive(Debug, Clone, Copy)]
pub struct GateOptions {
    /// Filter pre-existing errors.
    pub filter_preexisting: bool,
}

/// Gate an edit.
pub fn gate(_: Language, _: &[u8], _: &[u8], _: &EditRange, _: &GateOptions) -> Verdict {
    Verdict::default()
}

/// Parse flake8 output.
pub fn parse_flake8(_: &str) -> Vec<LintError> {
    Vec::new()
}

/// Filter pre-existing errors.
pub fn filter_new(_: &[LintError], after: Vec<LintError>, _: &EditRange) -> Vec<LintError> {
    after
}
