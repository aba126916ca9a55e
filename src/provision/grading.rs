//! The grading plan of one instance: its test command with the test directives SWE-bench would
//! pass, the log parser, and the commands the evaluation runs before the tests. An instance's own
//! fields (`test_cmd`, `log_parser`, `setup`) override the built-in SWE-bench specs
//! ([`crate::spec`]); a record the table lacks and that brings no `test_cmd` is an error naming
//! its repository and version.
//!
//! A SWE-bench record that carries its own spec (`eval_script`, `log_parser`, `eval_type`, as the
//! 5.x exports do) is graded by it ([`SpecSource::Record`], the default): the test command
//! between its script's markers, verbatim, its parser and its eval type. With
//! [`SpecSource::Builtin`] the table grades it when the table has its repository and version.
//! Either way the commands before the tests (locale settings, the reinstall) are the table's.

use crate::instance::Instance;
use crate::patch::patch_files;
use crate::sandbox::shell_quote;
use crate::spec::record::{RecordSpecError, record_spec};
use crate::spec::{
    DirectiveStyle, EvalType, ParserName, RecordSpec, SpecLookupError, SpecSource, SpecTable,
};

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
    /// How the test lists are read from the log: the record's `eval_type`, or `pass_and_fail`.
    pub eval_type: EvalType,
    /// Which spec gave the test command and parser: the record's own (`eval_script`), the
    /// table's; `None` for an instance's own `test_cmd`.
    pub spec_source: Option<SpecSource>,
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
    /// `log_parser` is one of SWE-bench's parsers that aci does not have (the JavaScript ones of
    /// the Multimodal export).
    #[error("SWE-bench's log parser {name:?} is not supported yet (aci reads: {known})")]
    UnsupportedParser {
        /// The name given.
        name: String,
        /// The names aci reads in its place.
        known: String,
    },
    /// `log_parser` is one of SWE-bench's parsers that pick a runner by the instance
    /// (`parse_log_jekyll`, `parse_log_immutable_js`), and it knows none for this one.
    #[error(
        "SWE-bench's log parser {name:?} picks its runner by the instance and has none for \
         {instance_id:?}"
    )]
    UnknownInstanceParser {
        /// The name given.
        name: String,
        /// The instance's id.
        instance_id: String,
    },
    /// The record's own spec cannot be read.
    #[error("{0}")]
    RecordSpec(RecordSpecError),
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
        if let Some(parser) = parser_by_instance(name, &instance.instance_id) {
            return parser;
        }
        if instance.extra_fields.contains_key("eval_script") {
            return swe_bench_parser(name);
        }
        return parser_named(name);
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

/// The parser called `name`; a SWE-bench name (`parse_log_…`) aci lacks is "not supported yet".
fn parser_named(name: &str) -> Result<ParserName, PlanError> {
    ParserName::from_name(name).ok_or_else(|| {
        if name.starts_with("parse_log_") {
            PlanError::UnsupportedParser {
                name: name.to_owned(),
                known: ParserName::names(),
            }
        } else {
            PlanError::UnknownParser {
                name: name.to_owned(),
                known: ParserName::names(),
            }
        }
    })
}

/// SWE-bench's parsers a record's own spec may name, for the error message.
const SWE_BENCH_PARSERS: &str = "parse_log_pytest, parse_log_pytest_options, \
     parse_log_pytest_v2, parse_log_matplotlib, parse_log_seaborn, parse_log_django, \
     parse_log_sympy and their per-repository names; parse_log_cargo, parse_log_phpunit, \
     parse_log_gotest, parse_log_rspec_transformed_json, parse_log_karma, parse_log_ant, \
     parse_log_maven, parse_log_redis, parse_log_ruby_unit, parse_log_googletest, \
     parse_log_gradle_custom, parse_log_jest, parse_log_jest_json, parse_log_tap, parse_log_jq, \
     parse_log_minitest, parse_log_cucumber, parse_log_jekyll, parse_log_micropython_test, \
     parse_log_vitest, parse_log_immutable_js, parse_log_doctest";

/// The parser a record's own spec names: one of SWE-bench's Python parsers or of the parsers of
/// the Multilingual records, `parse_log_cargo` being SWE-bench's reading of cargo
/// ([`ParserName::CargoSwebench`]), not aci's own. Any other (`parse_log_chart_js`, … of the
/// Multimodal records) is not supported yet.
fn swe_bench_parser(name: &str) -> Result<ParserName, PlanError> {
    if name == "parse_log_cargo" {
        return Ok(ParserName::CargoSwebench);
    }
    match ParserName::from_name(name) {
        Some(ParserName::Cargo | ParserName::CargoSwebench | ParserName::Unittest) | None => {
            Err(PlanError::UnsupportedParser {
                name: name.to_owned(),
                known: SWE_BENCH_PARSERS.to_owned(),
            })
        }
        Some(parser) => Ok(parser),
    }
}

/// SWE-bench's parsers that pick a runner's parser by the instance: `parse_log_jekyll` by the
/// number after the first `-` of its id (minitest for 9141, 8047 and 8167, cucumber for 8761 and
/// 8771), `parse_log_immutable_js` by the number after the last `-` (jest for 2006, jest's JSON
/// report for 2005). `None` for every other name.
fn parser_by_instance(name: &str, instance_id: &str) -> Option<Result<ParserName, PlanError>> {
    let (number, choices): (Option<&str>, &[(&str, ParserName)]) = match name {
        "parse_log_jekyll" => (
            instance_id.split('-').nth(1),
            &[
                ("9141", ParserName::Minitest),
                ("8047", ParserName::Minitest),
                ("8167", ParserName::Minitest),
                ("8761", ParserName::Cucumber),
                ("8771", ParserName::Cucumber),
            ],
        ),
        "parse_log_immutable_js" => (
            instance_id.rsplit('-').next(),
            &[("2006", ParserName::Jest), ("2005", ParserName::JestJson)],
        ),
        _ => return None,
    };
    let parser = choices
        .iter()
        .find(|(choice, _)| Some(*choice) == number)
        .map(|(_, parser)| *parser);
    Some(parser.ok_or_else(|| PlanError::UnknownInstanceParser {
        name: name.to_owned(),
        instance_id: instance_id.to_owned(),
    }))
}

/// The record's own spec, when it carries an `eval_script` (kept in `extra_fields`); `eval_type`
/// is read from there too, `log_parser` from the record's field.
pub fn own_spec(instance: &Instance) -> Option<Result<RecordSpec, RecordSpecError>> {
    let script = instance.extra_fields.get("eval_script")?.as_str()?;
    let eval_type = instance
        .extra_fields
        .get("eval_type")
        .and_then(|value| value.as_str());
    Some(record_spec(
        script,
        instance.log_parser.as_deref(),
        eval_type,
    ))
}

/// Which spec grades `instance` under `choice`: the record's own when it has one and either it
/// is chosen or the table lacks the record (or the instance brings its own `test_cmd`, which
/// always wins); otherwise the table.
pub fn spec_source(instance: &Instance, table: &SpecTable, choice: SpecSource) -> SpecSource {
    let has_own = instance.extra_fields.contains_key("eval_script");
    let in_table = table.lookup(&instance.repo, &instance.version).is_ok();
    if has_own && (choice == SpecSource::Record || !in_table) {
        SpecSource::Record
    } else {
        SpecSource::Builtin
    }
}

/// The log parser of `instance` under `choice`: as [`log_parser`], except that a record graded
/// by the table ([`spec_source`]) takes the table's parser, not its own `log_parser`.
///
/// # Errors
/// As [`log_parser`].
pub fn log_parser_for(
    instance: &Instance,
    table: &SpecTable,
    choice: SpecSource,
) -> Result<ParserName, PlanError> {
    let has_own = instance.extra_fields.contains_key("eval_script");
    match (
        has_own,
        spec_source(instance, table, choice),
        table.repo(&instance.repo),
    ) {
        (true, SpecSource::Builtin, Some(repo)) => Ok(repo.log_parser),
        _ => log_parser(instance, table),
    }
}

/// The grading plan of `instance` (see [`GradingPlan`]), a record's own spec first.
///
/// # Errors
/// As [`grading_plan_for`].
pub fn grading_plan(instance: &Instance, table: &SpecTable) -> Result<GradingPlan, PlanError> {
    grading_plan_for(instance, table, SpecSource::Record)
}

/// The grading plan of `instance` with the spec `choice` picks ([`spec_source`]).
///
/// # Errors
/// No parser can be found ([`log_parser`]) or it is one aci does not have yet; the record's own
/// spec, when it grades, cannot be read; or the instance has no `test_cmd` nor spec of its own
/// and `table` has no entry for its repository and version.
pub fn grading_plan_for(
    instance: &Instance,
    table: &SpecTable,
    choice: SpecSource,
) -> Result<GradingPlan, PlanError> {
    let entry = table.lookup(&instance.repo, &instance.version);
    let parser = log_parser_for(instance, table, choice)?;
    let own = match own_spec(instance) {
        Some(spec) if spec_source(instance, table, choice) == SpecSource::Record => {
            Some(spec.map_err(PlanError::RecordSpec)?)
        }
        _ => None,
    };
    let eval_type = eval_type_of(instance, own.as_ref());
    let spec_source = match (&own, own_test_cmd(instance)) {
        (_, Some(_)) => None,
        (Some(_), None) => Some(SpecSource::Record),
        (None, None) => Some(SpecSource::Builtin),
    };
    let own_cmd = own_test_cmd(instance).or(own.as_ref().map(|own| own.script.test_cmd.as_str()));
    let (test_cmd, test_directives) = match (own_cmd, &entry) {
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
        eval_type,
        spec_source,
    })
}

/// How the FAIL_TO_PASS and PASS_TO_PASS lists of `instance` are read under `choice`: as
/// [`grading_plan_for`] reads them, without the rest of the plan (for logs graded with no
/// container, which need no test command).
pub fn eval_type_for(instance: &Instance, table: &SpecTable, choice: SpecSource) -> EvalType {
    let own = match own_spec(instance) {
        Some(Ok(own)) if spec_source(instance, table, choice) == SpecSource::Record => Some(own),
        _ => None,
    };
    eval_type_of(instance, own.as_ref())
}

/// The record's own `eval_type` when its own spec grades it (`own`) and it brings no test
/// command of its own; `pass_and_fail` otherwise.
fn eval_type_of(instance: &Instance, own: Option<&RecordSpec>) -> EvalType {
    match (own, own_test_cmd(instance)) {
        (Some(own), None) => own.eval_type,
        _ => EvalType::PassAndFail,
    }
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
