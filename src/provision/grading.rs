//! The grading plan of one instance: its test command with the test directives SWE-bench would
//! pass, the log parser, and the commands the evaluation runs before the tests. An instance's own
//! fields (`test_cmd`, `log_parser`, `setup`) override the built-in SWE-bench specs
//! ([`crate::spec`]); a record the table lacks and that brings no `test_cmd` is an error naming
//! its repository and version.

use crate::instance::Instance;
use crate::patch::patch_files;
use crate::sandbox::shell_quote;
use crate::spec::{DirectiveStyle, ParserName, SpecLookupError, SpecTable};

/// Extensions SWE-bench never passes to the test command (its `NON_TEST_EXTS`, including the
/// dotless `csv`, which matches any name ending in `csv`).
const NON_TEST_EXTENSIONS: [&str; 11] = [
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// Everything the evaluation of one instance needs to know besides the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradingPlan {
    /// The parser of the test log.
    pub parser: ParserName,
    /// The test command: the instance's own `test_cmd` verbatim, or the spec's.
    pub test_cmd: String,
    /// Arguments appended to the spec's test command (empty for an instance's own `test_cmd`).
    pub test_directives: Vec<String>,
    /// Commands run before the tests, from the spec (locale settings).
    pub eval_commands: Vec<String>,
    /// The spec's install command, run again after the patch is applied; `None` when the
    /// instance brings its own `setup` (which then decides how the repository is installed).
    pub reinstall: Option<String>,
    /// The spec entry used, as `(repo, version)`.
    pub spec: Option<(String, String)>,
}

impl GradingPlan {
    /// The test command as `eval.sh` runs it: the command, then each directive shell-quoted.
    pub fn command_line(&self) -> String {
        let mut line = self.test_cmd.trim_end().to_owned();
        for directive in &self.test_directives {
            line.push(' ');
            line.push_str(&shell_quote(directive));
        }
        line
    }
}

/// Why an instance cannot be graded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `log_parser` names no parser.
    #[error("unknown log_parser {name:?} (known: {known})")]
    UnknownParser {
        /// The name given.
        name: String,
        /// The names aci knows.
        known: String,
    },
    /// No `test_cmd` and no spec entry.
    #[error("the instance has no test_cmd, and {0}")]
    NoTestCommand(SpecLookupError),
    /// No `log_parser`, no spec entry, and no `test_cmd` that would make a language default safe.
    #[error("the instance names no log_parser and has no test_cmd, and {0}")]
    NoParser(SpecLookupError),
    /// `log_parser` is missing and the instance's language has no default parser.
    #[error("the instance names no log_parser and its language {0:?} has no default one")]
    NoLanguageParser(String),
}

/// The log parser of `instance`: its `log_parser` (aci's names and SWE-bench's are both
/// accepted), else its repository's in `table`, else — for an instance that brings its own
/// `test_cmd` — its language's default (`pytest` for Python or no language, `cargo` for Rust).
///
/// # Errors
/// An unknown `log_parser`; or nothing to go by.
pub fn log_parser(instance: &Instance, table: &SpecTable) -> Result<ParserName, PlanError> {
    if let Some(name) = &instance.log_parser {
        return ParserName::from_name(name).ok_or_else(|| PlanError::UnknownParser {
            name: name.clone(),
            known: ParserName::names(),
        });
    }
    if let Some(repo) = table.repo(&instance.repo) {
        return Ok(repo.log_parser);
    }
    if own_test_cmd(instance).is_none() {
        return Err(PlanError::NoParser(SpecLookupError::UnknownRepo {
            repo: instance.repo.clone(),
            version: instance.version.clone(),
        }));
    }
    match instance.language.as_deref() {
        Some("python") | None => Ok(ParserName::Pytest),
        Some("rust") => Ok(ParserName::Cargo),
        Some(other) => Err(PlanError::NoLanguageParser(other.to_owned())),
    }
}

/// The grading plan of `instance` (see [`GradingPlan`]).
///
/// # Errors
/// No parser can be found ([`log_parser`]), or the instance has no `test_cmd` and `table` has
/// no entry for its repository and version.
pub fn grading_plan(instance: &Instance, table: &SpecTable) -> Result<GradingPlan, PlanError> {
    let entry = table.lookup(&instance.repo, &instance.version);
    let parser = log_parser(instance, table)?;
    let (test_cmd, test_directives) = match (own_test_cmd(instance), &entry) {
        (Some(cmd), _) => (cmd.to_owned(), Vec::new()),
        (None, Ok(entry)) => (
            entry.spec.test_cmd.clone(),
            test_directives(
                instance.test_patch.as_deref().unwrap_or_default(),
                entry.repo.directives,
            ),
        ),
        (None, Err(lookup)) => return Err(PlanError::NoTestCommand(lookup.clone())),
    };
    let (eval_commands, reinstall, spec) = match entry {
        Ok(entry) => (
            entry.spec.eval_commands.clone(),
            entry
                .spec
                .install
                .clone()
                .filter(|_| instance.setup.is_empty()),
            Some((entry.repo.repo.clone(), entry.version.to_owned())),
        ),
        Err(_) => (Vec::new(), None, None),
    };
    Ok(GradingPlan {
        parser,
        test_cmd,
        test_directives,
        eval_commands,
        reinstall,
        spec,
    })
}

fn own_test_cmd(instance: &Instance) -> Option<&str> {
    instance
        .test_cmd
        .as_deref()
        .filter(|cmd| !cmd.trim().is_empty())
}

/// The test files SWE-bench passes to the test command for `test_patch`: the post-image path of
/// every file section (the path of a deleted file too, as SWE-bench reads it from the
/// `diff --git` header), in patch order, without data files (`.json`, `.txt`, `.md`, `.toml`, …).
/// With [`DirectiveStyle::DjangoModules`] each path becomes a `runtests.py` label: `.py` and a
/// leading `tests/` removed, `/` → `.`. Quoted paths are unquoted (SWE-bench skips them).
pub fn test_directives(test_patch: &str, style: DirectiveStyle) -> Vec<String> {
    let mut directives: Vec<String> = Vec::new();
    for change in patch_files(test_patch) {
        let Some(path) = change.new_path.or(change.old_path) else {
            continue;
        };
        if NON_TEST_EXTENSIONS.iter().any(|ext| path.ends_with(ext)) {
            continue;
        }
        // A record is data: a path that would read as an option is passed as `./<path>`, and a
        // Django label cannot be one.
        let directive = match style {
            DirectiveStyle::Paths if path.starts_with('-') => format!("./{path}"),
            DirectiveStyle::Paths => path,
            DirectiveStyle::DjangoModules if path.starts_with('-') => continue,
            DirectiveStyle::DjangoModules => django_label(&path),
        };
        if !directives.contains(&directive) {
            directives.push(directive);
        }
    }
    directives
}

/// The `runtests.py` label of a test file: `.py` and a leading `tests/` removed, `/` → `.`
/// (`tests/auth_tests/test_models.py` → `auth_tests.test_models`).
pub fn django_label(path: &str) -> String {
    let module = path.strip_suffix(".py").unwrap_or(path);
    let module = module.strip_prefix("tests/").unwrap_or(module);
    module.replace('/', ".")
}

#[cfg(test)]
mod tests;
