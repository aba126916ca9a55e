//! Canary tests: two tests that aci adds to every evaluation it runs, one that must pass and one
//! that must fail, with names drawn at random per evaluation.
//!
//! They are written by `eval.sh` right before the start marker, after the model's patch, the
//! reinstall and the test patch, so nothing the patch runs before the tests can see them. They go
//! where the instance's tests run in the same process: a test module beside the touched tests,
//! passed on the command line with the directives when there are any (pytest, sympy's `bin/test`
//! as a path, Django's `runtests.py` as a module label), or two tests appended to a touched test
//! file, so that they compile into the same cargo test target (cargo then gets `--no-fail-fast`,
//! so that the failing canary does not stop the binaries after it). The runners of the
//! Multilingual records get theirs in their own form (`family`): created, appended to a test
//! file of the test patch, or put inside its last closing brace ([`Placement`]), with the test
//! command's name filter widened to them ([`NameFilter`]); where they cannot be placed with
//! certainty the plan says why ([`CanaryPlan::untrusted`]) and no run is trusted ([`check`]).
//! For those runners the summary is not compared yet ([`super::parse::summary::compares_summary`]).
//!
//! [`verify`] trusts a run only when the parsed log shows the first passed and the second failed,
//! the test command's exit status says a test failed, and the runner's own summary agrees with
//! the result lines ([`super::parse::summary`]). A patch that turns the test call into a no-op,
//! marks every report passed, rewrites the tests as they compile, or prints result lines and ends
//! the process, does so to the canaries too, or leaves them out. Logs graded with `--from-logs`
//! have no canaries: this applies to the evaluations aci runs.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::grade::lookup;
use super::parse::summary::{
    compares_summary, line_tally, pytest_summary_section, runner_tally, test_region,
};
use super::parse::{ParserName, TestStatus, recorded_exit_code};
use super::plan::{GradingPlan, django_label, test_directives};
use super::script::{END_MARKER, EvalStep, patch_files, shell_quote};
use super::spec::DirectiveStyle;

/// The reason (before `: <detail>`) of an evaluation whose log cannot be trusted.
pub const UNTRUSTED_TEST_RUN: &str = "untrusted test run";
/// Folded into the resume key, so that a report graded before the canaries (or under another
/// scheme) is evaluated again.
pub const CANARY_SCHEME: &str = "aci canaries v1";
/// The heredoc delimiter of the canary files (their content is aci's, and never holds it).
const DELIMITER: &str = "ACI_CANARY_EOF";

/// The random parts of one evaluation's canaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanaryNames {
    /// The module (file stem) of a canary file: `test_<12 hex digits>`.
    pub module: String,
    /// The test that must pass: `test_<12 hex digits>`.
    pub pass: String,
    /// The test that must fail: `test_<12 hex digits>`.
    pub fail: String,
    /// The two numbers the canaries add (the passing one checks their sum, the failing one the
    /// sum plus one).
    pub terms: (u32, u32),
}

impl CanaryNames {
    /// Fresh names, from a hasher keyed by the operating system's randomness.
    pub fn draw() -> Self {
        Self::from_words([random_word(), random_word(), random_word(), random_word()])
    }

    /// The names four random words give (the same words give the same names).
    pub fn from_words(words: [u64; 4]) -> Self {
        let name = |word: u64| format!("test_{:012x}", word & 0xffff_ffff_ffff);
        let module = name(words[0]);
        let pass = name(words[1]);
        let mut fail = name(words[2]);
        if fail == pass || fail == module {
            fail = name(words[2] ^ 1);
        }
        let term = |bits: u64| 100 + u32::try_from(bits % 9000).unwrap_or(0);
        Self {
            module,
            pass,
            fail,
            terms: (term(words[3]), term(words[3] >> 20)),
        }
    }
}

/// 64 random bits: SipHash keyed from the operating system's randomness (std's `RandomState`)
/// over the time and a counter.
pub fn random_word() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// How a canary file's content goes into the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new file (a Python module; a Rust test target when the test patch has no `.rs` file).
    Create,
    /// At the end of an existing test file (Rust, Go, JavaScript, Ruby, C++).
    Append,
    /// Inside the last closing brace of an existing test file: the class of a Java or PHP test.
    BeforeLastBrace,
}

/// A file `eval.sh` writes (or writes into) right before the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanaryFile {
    /// Relative to the repository.
    pub path: String,
    /// What is written.
    pub content: String,
    /// Where it goes.
    pub placement: Placement,
}

/// A test command's option that runs only the tests whose names match its value (`go test
/// -run`, ruby's `-n`, jest's `-t`, mocha's `-g`, QUnit's `-f`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameFilter {
    /// The option as the command writes it (`-run`, `--grep`, …).
    pub flag: String,
    /// Its value as the runner reads it (unquoted).
    pub value: String,
    /// The value that lets the canaries through too.
    pub widened: String,
}

/// Where and how one evaluation's canaries run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanaryPlan {
    /// The names.
    pub names: CanaryNames,
    /// What `eval.sh` writes.
    pub files: Vec<CanaryFile>,
    /// Appended to the test command (the canary module's path or label), when the command names
    /// its tests.
    pub directive: Option<String>,
    /// `cargo test` gets `--no-fail-fast`.
    pub no_fail_fast: bool,
    /// The test command's name filter, widened to the canaries' names ([`widen_name_filter`]).
    pub name_filter: Option<NameFilter>,
    /// Why no canary could be placed with certainty for this runner (then `files` is empty and
    /// the run is never trusted).
    pub untrusted: Option<String>,
}

/// The canaries of one evaluation with `plan`, beside the tests `test_patch` touches.
///
/// Python runners get a module `<dir>/<names.module>.py` in the directory of the first `.py` file
/// the test patch leaves (the repository root without one): plain test functions for pytest and
/// sympy, a `unittest.TestCase` for unittest, Django, and pytest when the test patch uses
/// `TestCase`. The module is passed on the command line when the command names its tests: the
/// spec's directives, or an instance's own command that names a file of the test patch; otherwise
/// the runner's discovery finds it there. cargo gets two tests appended to the first `.rs` file of
/// the test patch (under `src/` or `tests/` if there is one), which puts them in the same target,
/// or a new `tests/<names.module>.rs` when the test patch has none. The runners of the
/// Multilingual records get theirs from [`family::language_plan`].
pub fn canary_plan(plan: &GradingPlan, test_patch: Option<&str>, names: CanaryNames) -> CanaryPlan {
    let test_patch = test_patch.unwrap_or_default();
    let left: Vec<String> = patch_files(test_patch)
        .into_iter()
        .filter_map(|change| change.new_path)
        .collect();
    if matches!(plan.parser, ParserName::Cargo | ParserName::CargoSwebench) {
        return rust_plan(&left, names);
    }
    if let Some(canary) =
        family::language_plan(plan.parser, &plan.command_line(), &left, test_patch, &names)
    {
        return canary;
    }
    let dir = left
        .iter()
        .find(|path| path.ends_with(".py"))
        .and_then(|path| path.rsplit_once('/').map(|(dir, _)| dir.to_owned()))
        .unwrap_or_default();
    let path = if dir.is_empty() {
        format!("{}.py", names.module)
    } else {
        format!("{dir}/{}.py", names.module)
    };
    let class_form = match plan.parser {
        ParserName::Unittest | ParserName::Django => true,
        ParserName::Sympy => false,
        _ => test_patch.contains("TestCase"),
    };
    let content = if class_form {
        python_class(&names)
    } else {
        python_functions(&names)
    };
    let names_its_tests = !plan.test_directives.is_empty() || mentions_tests(plan, test_patch);
    let directive = names_its_tests.then(|| match plan.parser {
        ParserName::Django => django_label(&path),
        _ => path.clone(),
    });
    CanaryPlan {
        names,
        files: vec![CanaryFile {
            path,
            content,
            placement: Placement::Create,
        }],
        directive,
        no_fail_fast: false,
        name_filter: None,
        untrusted: None,
    }
}

/// Whether the instance's own test command names a file (or Django label) of the test patch.
fn mentions_tests(plan: &GradingPlan, test_patch: &str) -> bool {
    [DirectiveStyle::Paths, DirectiveStyle::DjangoModules]
        .into_iter()
        .flat_map(|style| test_directives(test_patch, style))
        .any(|directive| plan.test_cmd.contains(&directive))
}

fn rust_plan(left: &[String], names: CanaryNames) -> CanaryPlan {
    let rust_files: Vec<&String> = left.iter().filter(|path| path.ends_with(".rs")).collect();
    let in_target = rust_files.iter().find(|path| {
        path.split('/')
            .rev()
            .skip(1)
            .any(|dir| dir == "src" || dir == "tests")
    });
    let file = match in_target.or(rust_files.first()) {
        Some(path) => CanaryFile {
            path: (*path).clone(),
            content: rust_tests(&names),
            placement: Placement::Append,
        },
        None => CanaryFile {
            path: format!("tests/{}.rs", names.module),
            content: rust_tests(&names).trim_start().to_owned(),
            placement: Placement::Create,
        },
    };
    CanaryPlan {
        names,
        files: vec![file],
        directive: None,
        no_fail_fast: true,
        name_filter: None,
        untrusted: None,
    }
}

fn sums(names: &CanaryNames) -> (u32, u32, u32, u32) {
    let (a, b) = names.terms;
    (a, b, a + b, a + b + 1)
}

fn python_functions(names: &CanaryNames) -> String {
    let (a, b, sum, wrong) = sums(names);
    format!(
        "def {pass}():\n    assert {a} + {b} == {sum}\n\n\ndef {fail}():\n    assert {a} + {b} == \
         {wrong}\n",
        pass = names.pass,
        fail = names.fail,
    )
}

fn python_class(names: &CanaryNames) -> String {
    let (a, b, sum, wrong) = sums(names);
    let class = names.module.replacen("test_", "Test", 1);
    format!(
        "import unittest\n\n\nclass {class}(unittest.TestCase):\n    def {pass}(self):\n        \
         self.assertEqual({a} + {b}, {sum})\n\n    def {fail}(self):\n        \
         self.assertEqual({a} + {b}, {wrong})\n",
        pass = names.pass,
        fail = names.fail,
    )
}

fn rust_tests(names: &CanaryNames) -> String {
    let (a, b, sum, wrong) = sums(names);
    format!(
        "\n#[test]\nfn {pass}() {{\n    assert_eq!({a} + {b}, {sum});\n}}\n\n#[test]\nfn {fail}() \
         {{\n    assert_eq!({a} + {b}, {wrong});\n}}\n",
        pass = names.pass,
        fail = names.fail,
    )
}

/// Adds `canary` to the steps of `eval.sh` ([`super::script::eval_steps`]): its files are written
/// right before the start marker, the test command gets the directive (and `--no-fail-fast`),
/// and the files it created are removed after the end marker.
pub fn add_canaries(steps: &mut Vec<EvalStep>, canary: &CanaryPlan) {
    if let Some(index) = steps.iter().position(|step| *step == EvalStep::StartMarker) {
        steps.insert(index, EvalStep::Command(write_command(&canary.files)));
    }
    for step in steps.iter_mut() {
        if let EvalStep::RunTests { command_line } = step {
            add_to_command_line(command_line, canary);
        }
    }
    let created: Vec<String> = canary
        .files
        .iter()
        .filter(|file| file.placement == Placement::Create)
        .map(|file| shell_quote(&file.path))
        .collect();
    if let Some(index) = steps.iter().position(|step| *step == EvalStep::EndMarker)
        && !created.is_empty()
    {
        let remove = format!("rm -f -- {}", created.join(" "));
        steps.insert(index + 1, EvalStep::Command(remove));
    }
}

/// The test command with what `canary` needs: `--no-fail-fast` for cargo, its name filter
/// widened to the canaries, and the canary module's path or label when the command names its
/// tests. (A staged evaluation writes the canary files itself, right before the tests, so no
/// script holds their text.)
pub fn add_to_command_line(command_line: &mut String, canary: &CanaryPlan) {
    if canary.no_fail_fast {
        *command_line = with_no_fail_fast(command_line);
    }
    if let Some(filter) = &canary.name_filter {
        *command_line = widen_name_filter(command_line, filter);
    }
    if let Some(directive) = &canary.directive {
        command_line.push(' ');
        command_line.push_str(&shell_quote(directive));
    }
}

/// The shell lines that write `files`, each from a quoted heredoc (as [`placed`] places them).
fn write_command(files: &[CanaryFile]) -> String {
    let mut lines = Vec::new();
    for file in files {
        let path = shell_quote(&file.path);
        let content = file.content.trim_end_matches('\n');
        if file.placement == Placement::BeforeLastBrace {
            // The text before the file's last `}`, the canaries, a newline, then the `}` and
            // what follows it; a file without `}` is left as it is.
            lines.push(format!(
                "aci_t=$(cat -- {path}; printf x) && aci_t=${{aci_t%x}} && aci_c=$(cat <<'{DELIMITER}'"
            ));
            lines.push(content.to_owned());
            lines.push(DELIMITER.to_owned());
            lines.push(format!(
                ") && case $aci_t in *\\}}*) printf '%s%s\\n}}%s' \"${{aci_t%\\}}*}}\" \"$aci_c\" \
                 \"${{aci_t##*\\}}}}\" > {path};; esac"
            ));
            continue;
        }
        let redirect = if file.placement == Placement::Append {
            ">>"
        } else {
            ">"
        };
        let mut line = String::new();
        if let Some((dir, _)) = file.path.rsplit_once('/') {
            line.push_str(&format!("mkdir -p -- {} && ", shell_quote(dir)));
        }
        line.push_str(&format!("cat {redirect} {path} <<'{DELIMITER}'"));
        lines.push(line);
        lines.push(content.to_owned());
        lines.push(DELIMITER.to_owned());
    }
    lines.join("\n")
}

/// The bytes of `file.path` once its canaries are in, from its current bytes (`None`: the file
/// does not exist): the content alone ([`Placement::Create`]), after the current text
/// ([`Placement::Append`]), or right before its last `}` ([`Placement::BeforeLastBrace`]); the
/// content always ends with one newline.
///
/// # Errors
/// [`Placement::BeforeLastBrace`] into a file that does not exist or has no `}`.
pub fn placed(current: Option<&[u8]>, file: &CanaryFile) -> Result<Vec<u8>, String> {
    let mut content = file.content.trim_end_matches('\n').as_bytes().to_vec();
    content.push(b'\n');
    match file.placement {
        Placement::Create => Ok(content),
        Placement::Append => {
            let mut text = current.unwrap_or_default().to_vec();
            text.extend_from_slice(&content);
            Ok(text)
        }
        Placement::BeforeLastBrace => {
            let current = current.ok_or_else(|| format!("{} does not exist", file.path))?;
            let brace = current
                .iter()
                .rposition(|byte| *byte == b'}')
                .ok_or_else(|| format!("{} has no closing brace", file.path))?;
            let mut text = current[..brace].to_vec();
            text.extend_from_slice(&content);
            text.extend_from_slice(&current[brace..]);
            Ok(text)
        }
    }
}

/// `command_line` with the value of `filter`'s option replaced by its widened value (quoted);
/// unchanged when the option is not found.
pub fn widen_name_filter(command_line: &str, filter: &NameFilter) -> String {
    let Some(found) = family::find_option(command_line, &[filter.flag.as_str()]) else {
        return command_line.to_owned();
    };
    let replacement = if found.joined {
        shell_quote(&format!("{}={}", filter.flag, filter.widened))
    } else {
        shell_quote(&filter.widened)
    };
    format!(
        "{}{replacement}{}",
        &command_line[..found.start],
        &command_line[found.end..]
    )
}

/// `cargo test …` → `cargo test --no-fail-fast …`, at the first `cargo test` of the command, unless
/// it already has the flag.
fn with_no_fail_fast(command_line: &str) -> String {
    if command_line.contains("--no-fail-fast") {
        return command_line.to_owned();
    }
    let mut search = 0;
    while let Some(found) = command_line[search..].find("cargo test") {
        let index = search + found;
        let end = index + "cargo test".len();
        let starts_word = index == 0
            || command_line[..index]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_whitespace() || "&|;(".contains(c));
        let ends_word = command_line[end..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace);
        if starts_word && ends_word {
            return format!(
                "{} --no-fail-fast{}",
                &command_line[..end],
                &command_line[end..]
            );
        }
        search = end;
    }
    command_line.to_owned()
}

/// Whether the log of an evaluation with `canary` can be trusted: never when no canary could be
/// placed for its runner ([`CanaryPlan::untrusted`]), otherwise as [`verify`] says.
///
/// # Errors
/// Why not, in words.
pub fn check(
    log: &str,
    parser: ParserName,
    canary: &CanaryPlan,
    graded: &[&String],
) -> Result<(), String> {
    if let Some(reason) = &canary.untrusted {
        return Err(format!("no canary could be placed: {reason}"));
    }
    verify(log, parser, &canary.names, graded)
}

/// Whether the evaluation's log can be trusted: `Err` says why not (the reason of an
/// [`UNTRUSTED_TEST_RUN`]).
///
/// Trusted when, between the markers: every result of the canary that must pass is PASSED and
/// every result of the one that must fail is FAILED (each at least once); the recorded exit status
/// is not 0 (a test failed); the runner's summary line agrees with the result lines
/// ([`super::parse::summary`]); and, for pytest, every `graded` test the log reads as passing
/// passes in pytest's short test summary too (a `PASSED` line that a test prints in its captured
/// output is read by the parsers, as by SWE-bench's, but pytest's own summary does not back it).
/// Listed ids that no short summary can hold are left to the parser: the `[100%]` and `[` that
/// SWE-bench's parser reads from the inner runs of pytest's own suite (pytest-dev__pytest-5227's
/// PASS_TO_PASS holds them) name no test, so pytest never summarises them.
///
/// # Errors
/// The first of those that does not hold, in words.
pub fn verify(
    log: &str,
    parser: ParserName,
    names: &CanaryNames,
    graded: &[&String],
) -> Result<(), String> {
    let Some(region) = test_region(log) else {
        return Err("the log has no test output between the markers".to_owned());
    };
    let status = (parser.parser())(region);
    for (name, expected, must) in [
        (&names.pass, TestStatus::Passed, "pass"),
        (&names.fail, TestStatus::Failed, "fail"),
    ] {
        let found: Vec<TestStatus> = status
            .iter()
            .filter(|(id, _)| id.contains(name.as_str()))
            .map(|(_, status)| *status)
            .collect();
        if found.is_empty() {
            return Err(format!(
                "the canary test that must {must} ({name}) has no result in the log"
            ));
        }
        if let Some(other) = found.iter().find(|status| **status != expected) {
            return Err(format!(
                "the canary test that must {must} ({name}) is reported {other}"
            ));
        }
    }
    let exit_code = log
        .rfind(END_MARKER)
        .and_then(|index| recorded_exit_code(&log[index..]));
    match exit_code {
        None => return Err("the log does not record the test command's exit status".to_owned()),
        Some(0) => {
            return Err(
                "the test command exited with status 0 although a canary test failed".to_owned(),
            );
        }
        Some(_) => {}
    }
    match runner_tally(region, parser) {
        None if compares_summary(parser) => {
            return Err(format!(
                "the log has no summary line of the {parser} runner"
            ));
        }
        None => {}
        Some(summary) => {
            let lines = line_tally(region, parser);
            if summary != lines {
                return Err(format!(
                    "the runner's summary counts {summary}, but the log's result lines count \
                     {lines}"
                ));
            }
        }
    }
    if parser.is_pytest() {
        let section = (parser.parser())(pytest_summary_section(region));
        let passes = |map, test: &str| lookup(map, test).is_some_and(TestStatus::is_pass);
        if let Some(test) = graded
            .iter()
            .filter(|test| names_a_node(test))
            .find(|test| passes(&status, test) && !passes(&section, test))
        {
            return Err(format!(
                "{test} is reported passed only outside pytest's short test summary"
            ));
        }
    }
    Ok(())
}

/// Whether `test` is an id pytest's short summary can list: a node id (`path::name`) or a path.
fn names_a_node(test: &str) -> bool {
    test.contains("::") || test.ends_with(".py")
}

mod family;
#[cfg(test)]
mod tests;
