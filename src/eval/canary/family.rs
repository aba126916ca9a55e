//! The canaries of the Multilingual records' runners, by family: where they go in the test
//! files the test patch leaves, in each runner's own form, and how a name filter of the test
//! command is widened so that they run. A runner whose canaries cannot be placed with certainty
//! gets none, and a reason: its runs are never trusted.
//!
//! - `go test`: two `Test_<hex>` functions appended to a `_test.go` file of the test patch (in a
//!   package the command names when one is), which already imports `testing`; `-run` widened.
//! - JUnit 4 and 5 (Gradle, Ant): two methods inside the last brace of a `*Test.java` /
//!   `Test*.java` class of the test patch (the one Gradle's `--tests` names), annotated and
//!   asserted with fully qualified names, JUnit 5 when the test patch mentions
//!   `org.junit.jupiter`. Maven runs only the tests its `-Dtest` options name: none.
//! - PHPUnit: two methods inside the last brace of a `*Test.php` class of the test patch, named
//!   `test_canary_<letters>` so that `--testdox` prints them as `Canary <letters>`.
//! - JavaScript: `it(…)` blocks appended to a test file of the test patch (Jest, Karma's
//!   Mocha or Jasmine, Mocha with a TAP reporter), `QUnit.test(…)` for QUnit, Vitest's `test`
//!   imported under a name of aci's; jest's `-t`, mocha's `-g` and QUnit's `-f` widened.
//! - Ruby: a `Minitest::Test` class (its tests named with a closing period, which minitest's
//!   parser needs), a `Test::Unit::TestCase` class, or an `RSpec.describe` block, appended to a
//!   test file of the test patch; `-n` widened.
//! - C++: a GoogleTest `TEST` or a doctest `TEST_CASE` with two `SUBCASE`s appended to a test
//!   source of the test patch, only when the test command compiles it (a `ctest` run of a binary
//!   built before it would not hold them).
//! - Redis's and jq's suites, MicroPython's `run-tests.py` and Cucumber: none.

use super::{CanaryFile, CanaryNames, CanaryPlan, NameFilter, Placement, sums};
use crate::eval::parse::ParserName;

/// The canaries of a Multilingual runner (`None` for aci's Python runners and cargo, which
/// [`super::canary_plan`] places itself).
pub(super) fn language_plan(
    parser: ParserName,
    command_line: &str,
    left: &[String],
    test_patch: &str,
    names: &CanaryNames,
) -> Option<CanaryPlan> {
    let plan = match parser {
        ParserName::Gotest => go(command_line, left, names),
        ParserName::Ant | ParserName::GradleCustom => java(command_line, left, test_patch, names),
        ParserName::Maven => Err(
            "Maven runs only the tests its -Dtest options name (surefire's includes), so no canary \
             can run beside them"
                .to_owned(),
        ),
        ParserName::Phpunit => php(command_line, left, names),
        ParserName::Jest
        | ParserName::JestJson
        | ParserName::Vitest
        | ParserName::Karma
        | ParserName::Tap => javascript(parser, command_line, left, names),
        ParserName::Minitest | ParserName::RubyUnit | ParserName::RspecTransformedJson => {
            ruby(parser, command_line, left, names)
        }
        ParserName::Googletest | ParserName::Doctest => cpp(parser, command_line, left, names),
        ParserName::Redis => Err(
            "redis's Tcl suite runs the test units its runtest options name, and a new unit is \
             not among them"
                .to_owned(),
        ),
        ParserName::Jq => Err(
            "jq's `make check` runs the test scripts its Makefile lists, and a new one is not \
             among them"
                .to_owned(),
        ),
        ParserName::MicropythonTest => Err(
            "MicroPython's run-tests.py runs the test directories it is given and judges each \
             test by its expected output, so no canary can be placed with certainty"
                .to_owned(),
        ),
        ParserName::Cucumber => Err(
            "Cucumber runs feature files through the project's step definitions, so no canary \
             can be placed with certainty"
                .to_owned(),
        ),
        _ => return None,
    };
    Some(match plan {
        Ok(plan) => plan,
        Err(reason) => CanaryPlan {
            names: names.clone(),
            files: Vec::new(),
            directive: None,
            no_fail_fast: false,
            name_filter: None,
            untrusted: Some(reason),
        },
    })
}

type Planned = Result<CanaryPlan, String>;

fn one_file(
    names: CanaryNames,
    path: &str,
    content: String,
    placement: Placement,
    name_filter: Option<NameFilter>,
) -> CanaryPlan {
    CanaryPlan {
        names,
        files: vec![CanaryFile {
            path: path.to_owned(),
            content,
            placement,
        }],
        directive: None,
        no_fail_fast: false,
        name_filter,
        untrusted: None,
    }
}

/// The 12 hex digits of a drawn name (`test_<hex>`).
fn hex(name: &str) -> &str {
    name.strip_prefix("test_").unwrap_or(name)
}

/// The files of `left` that `candidate` accepts, the first that `command_line` names first.
fn pick<'a>(
    left: &'a [String],
    command_line: &str,
    candidate: impl Fn(&str) -> bool,
) -> Option<&'a String> {
    let candidates: Vec<&String> = left.iter().filter(|path| candidate(path)).collect();
    candidates
        .iter()
        .find(|path| command_line.contains(path.as_str()))
        .or(candidates.first())
        .copied()
}

fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn no_file(what: &str) -> String {
    format!("the test patch leaves no {what} to hold the canaries")
}

fn go(command_line: &str, left: &[String], names: &CanaryNames) -> Planned {
    let is_test = |path: &str| path.ends_with("_test.go");
    let tested = |path: &str| {
        let dir = dir_of(path);
        if dir.is_empty() {
            shell_words(command_line)
                .iter()
                .any(|word| word.text == "." || word.text == "./...")
        } else {
            command_line.contains(&format!("./{dir}"))
        }
    };
    let path = left
        .iter()
        .find(|path| is_test(path) && tested(path))
        .or_else(|| left.iter().find(|path| is_test(path)))
        .ok_or_else(|| no_file("_test.go file"))?;
    let names = CanaryNames {
        pass: format!("Test_{}", hex(&names.pass)),
        fail: format!("Test_{}", hex(&names.fail)),
        ..names.clone()
    };
    let (a, b, sum, wrong) = sums(&names);
    let test = |name: &str, want: u32| {
        format!(
            "\nfunc {name}(t *testing.T) {{\n\ta, b := {a}, {b}\n\tif a+b != {want} {{\n\t\t\
             t.Errorf(\"%d + %d = %d, want {want}\", a, b, a+b)\n\t}}\n}}\n"
        )
    };
    let content = format!("{}{}", test(&names.pass, sum), test(&names.fail, wrong));
    let filter = name_filter(command_line, &["-run", "--run"], |value| {
        format!("{value}|^{}$|^{}$", names.pass, names.fail)
    });
    Ok(one_file(names, path, content, Placement::Append, filter))
}

fn java(command_line: &str, left: &[String], test_patch: &str, names: &CanaryNames) -> Planned {
    let is_class = |path: &str| {
        let name = file_name(path);
        name.strip_suffix(".java")
            .is_some_and(|stem| stem.ends_with("Test") || stem.starts_with("Test"))
    };
    // Gradle's `--tests <class>` runs only that class: the canaries must be in it.
    let wanted = find_option(command_line, &["--tests"]).map(|found| found.value);
    let path = match &wanted {
        Some(filter) => left
            .iter()
            .filter(|path| is_class(path))
            .find(|path| {
                let stem = file_name(path).trim_end_matches(".java");
                let mut parts = filter.rsplit('.');
                let last = parts.next().unwrap_or_default();
                last == stem || parts.next() == Some(stem)
            })
            .ok_or_else(|| {
                format!("the test patch leaves no JUnit class that --tests {filter} names")
            })?,
        None => left
            .iter()
            .find(|path| is_class(path))
            .ok_or_else(|| no_file("JUnit test class (*Test.java, Test*.java)"))?,
    };
    let (test, assert) = if test_patch.contains("org.junit.jupiter") {
        (
            "@org.junit.jupiter.api.Test",
            "org.junit.jupiter.api.Assertions.assertEquals",
        )
    } else {
        ("@org.junit.Test", "org.junit.Assert.assertEquals")
    };
    let (a, b, sum, wrong) = sums(names);
    let method = |name: &str, want: u32| {
        format!(
            "\n    {test}\n    public void {name}() {{\n        {assert}({want}, {a} + {b});\n    \
             }}\n"
        )
    };
    let content = format!("{}{}", method(&names.pass, sum), method(&names.fail, wrong));
    Ok(one_file(
        names.clone(),
        path,
        content,
        Placement::BeforeLastBrace,
        None,
    ))
}

/// `0`–`f` → `a`–`p`: PHPUnit's testdox splits digits off a name, letters it leaves whole.
fn letters(name: &str) -> String {
    hex(name)
        .chars()
        .map(|c| {
            let value = c.to_digit(16).unwrap_or(0);
            char::from(b'a' + u8::try_from(value).unwrap_or(0))
        })
        .collect()
}

fn php(command_line: &str, left: &[String], names: &CanaryNames) -> Planned {
    let path = pick(left, command_line, |path| path.ends_with("Test.php"))
        .ok_or_else(|| no_file("PHPUnit test class (*Test.php)"))?;
    let names = CanaryNames {
        pass: letters(&names.pass),
        fail: letters(&names.fail),
        ..names.clone()
    };
    let (a, b, sum, wrong) = sums(&names);
    let method = |name: &str, want: u32| {
        format!(
            "\n    public function test_canary_{name}()\n    {{\n        \
             $this->assertSame({want}, {a} + {b});\n    }}\n"
        )
    };
    let content = format!("{}{}", method(&names.pass, sum), method(&names.fail, wrong));
    Ok(one_file(
        names,
        path,
        content,
        Placement::BeforeLastBrace,
        None,
    ))
}

const JS_EXTENSIONS: [&str; 8] = [".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts"];

/// A JavaScript or TypeScript test file: under `__tests__`, `test`, `tests` or `spec`, or named
/// `*.test.*`, `*.spec.*`, `*.tests.*`; never under `fixtures` or `__snapshots__`.
fn is_js_test(path: &str) -> bool {
    if !JS_EXTENSIONS.iter().any(|ext| path.ends_with(ext)) {
        return false;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let (name, dirs) = parts.split_last().unwrap_or((&"", &[]));
    if dirs
        .iter()
        .any(|dir| matches!(*dir, "fixtures" | "__fixtures__" | "__snapshots__"))
    {
        return false;
    }
    dirs.iter()
        .any(|dir| matches!(*dir, "__tests__" | "test" | "tests" | "spec"))
        || [".test.", ".spec.", ".tests."]
            .iter()
            .any(|infix| name.contains(infix))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum JsRunner {
    /// Jest, Karma (Mocha or Jasmine), Mocha: a global `it`.
    It,
    /// Vitest: `test` imported from `vitest`.
    Vitest,
    /// QUnit: `QUnit.test`.
    Qunit,
    /// Node's own runner (`node --test`): `test` from `node:test`, in a file of its own
    /// beside the test file (CommonJS, so a TypeScript project's `allowJs` compiles it too).
    NodeTest,
}

fn javascript(
    parser: ParserName,
    command_line: &str,
    left: &[String],
    names: &CanaryNames,
) -> Planned {
    let words: Vec<String> = shell_words(command_line)
        .into_iter()
        .map(|word| word.text)
        .collect();
    let runs = |tool: &str| words.iter().any(|word| file_name(word) == tool);
    let runner = match parser {
        ParserName::Vitest => JsRunner::Vitest,
        ParserName::Tap if runs("qunit") => JsRunner::Qunit,
        ParserName::Tap if runs("node") && words.iter().any(|word| word == "--test") => {
            JsRunner::NodeTest
        }
        ParserName::Tap if !runs("mocha") => {
            return Err(
                "its TAP comes from a producer other than Mocha, QUnit or node --test, whose tests need the \
                 producer's own module"
                    .to_owned(),
            );
        }
        _ => JsRunner::It,
    };
    let path = pick(left, command_line, is_js_test)
        .ok_or_else(|| no_file("JavaScript or TypeScript test file"))?;
    let (a, b, sum, wrong) = sums(names);
    let alias = format!("aci_{}", hex(&names.module));
    let block = |name: &str, want: u32| match runner {
        JsRunner::It => format!(
            "\nit('{name}', () => {{\n  if ({a} + {b} !== {want}) {{\n    \
             throw new Error('{a} + {b} is ' + ({a} + {b}) + ', not {want}');\n  }}\n}});\n"
        ),
        JsRunner::Vitest => format!(
            "\n{alias}.test('{name}', () => {{\n  {alias}.expect({a} + {b}).toBe({want});\n}});\n"
        ),
        JsRunner::Qunit => format!(
            "\nQUnit.test('{name}', (assert) => {{\n  assert.strictEqual({a} + {b}, {want});\n}});\n"
        ),
        JsRunner::NodeTest => format!(
            "\n{alias}('{name}', () => {{\n  if ({a} + {b} !== {want}) {{\n    \
             throw new Error('{a} + {b} is ' + ({a} + {b}) + ', not {want}');\n  }}\n}});\n"
        ),
    };
    let import = match runner {
        JsRunner::Vitest => format!("\nimport * as {alias} from 'vitest';\n"),
        JsRunner::NodeTest => format!("'use strict';\nconst {alias} = require('node:test');\n"),
        _ => String::new(),
    };
    let content = format!(
        "{import}{}{}",
        block(&names.pass, sum),
        block(&names.fail, wrong)
    );
    if runner == JsRunner::NodeTest {
        let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        let file = format!(
            "{}{}{}.test.js",
            dir,
            if dir.is_empty() { "" } else { "/" },
            names.module
        );
        return Ok(one_file(
            names.clone(),
            &file,
            content,
            Placement::Create,
            None,
        ));
    }
    let (pass, fail) = (&names.pass, &names.fail);
    let filter = match (parser, runner) {
        (ParserName::Jest | ParserName::JestJson, _) => {
            name_filter(command_line, &["-t", "--testNamePattern"], |value| {
                format!("(?:{value})|{pass}|{fail}")
            })
        }
        (_, JsRunner::Qunit) => name_filter(command_line, &["-f", "--filter"], |value| {
            qunit_widened(value, pass, fail)
        }),
        (ParserName::Tap, JsRunner::It) => name_filter(command_line, &["-g", "--grep"], |value| {
            match slashed(value) {
                Some((inner, flags)) => format!("/(?:{inner})|{pass}|{fail}/{flags}"),
                None => format!("(?:{value})|{pass}|{fail}"),
            }
        }),
        _ => None,
    };
    Ok(one_file(
        names.clone(),
        path,
        content,
        Placement::Append,
        filter,
    ))
}

/// `/re/flags` → `(re, flags)`.
fn slashed(value: &str) -> Option<(&str, &str)> {
    let rest = value.strip_prefix('/')?;
    let (inner, flags) = rest.rsplit_once('/')?;
    flags
        .chars()
        .all(|c| c.is_ascii_alphabetic())
        .then_some((inner, flags))
}

/// QUnit's `--filter`: a `/re/flags` gets the canaries as alternatives; a `!text` exclusion
/// already lets them through; a text (a case-insensitive substring) becomes the same regex.
fn qunit_widened(value: &str, pass: &str, fail: &str) -> String {
    if value.starts_with('!') {
        return value.to_owned();
    }
    match slashed(value) {
        Some((inner, flags)) => format!("/(?:{inner})|{pass}|{fail}/{flags}"),
        None => format!("/(?:{})|{pass}|{fail}/i", regex_escaped(value)),
    }
}

/// `text` as a JavaScript or Ruby regex that matches it literally.
fn regex_escaped(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/-".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn ruby(parser: ParserName, command_line: &str, left: &[String], names: &CanaryNames) -> Planned {
    let rspec = parser == ParserName::RspecTransformedJson;
    let candidate = |path: &str| {
        let Some(stem) = file_name(path).strip_suffix(".rb") else {
            return false;
        };
        if rspec {
            stem.ends_with("_spec")
        } else {
            stem.starts_with("test_") || stem.ends_with("_test")
        }
    };
    let what = if rspec {
        "RSpec file (*_spec.rb)"
    } else {
        "Ruby test file (test_*.rb, *_test.rb)"
    };
    let path = pick(left, command_line, candidate).ok_or_else(|| no_file(what))?;
    let (a, b, sum, wrong) = sums(names);
    let class = format!("AciCanary_{}", hex(&names.module));
    let content = if rspec {
        let example = |name: &str, want: u32| {
            format!("  it '{name}' do\n    expect({a} + {b}).to eq({want})\n  end\n")
        };
        format!(
            "\nRSpec.describe '{class}' do\n{}\n{}end\n",
            example(&names.pass, sum),
            example(&names.fail, wrong)
        )
    } else {
        let base = if parser == ParserName::RubyUnit {
            "Test::Unit::TestCase"
        } else {
            "(defined?(Minitest::Test) ? Minitest::Test : MiniTest::Unit::TestCase)"
        };
        // minitest's `-v` line is `Class#name = 0.00 s = .`, and the parser reads the text before
        // a `. ` (jekyll's names are sentences): the name ends with a period.
        let method = |name: &str, want: u32| {
            if parser == ParserName::RubyUnit {
                format!("  def {name}\n    assert_equal({want}, {a} + {b})\n  end\n")
            } else {
                format!(
                    "  define_method(:'{name}.') do\n    assert_equal({want}, {a} + {b})\n  end\n"
                )
            }
        };
        format!(
            "\nclass {class} < {base}\n{}\n{}end\n",
            method(&names.pass, sum),
            method(&names.fail, wrong)
        )
    };
    let (pass, fail) = (&names.pass, &names.fail);
    let filter = (!rspec)
        .then(|| {
            name_filter(command_line, &["-n", "--name"], |value| {
                match slashed(value) {
                    Some((inner, flags)) => format!("/(?:{inner})|{pass}|{fail}/{flags}"),
                    None => format!("/\\A(?:{})\\z|{pass}|{fail}/", regex_escaped(value)),
                }
            })
        })
        .flatten();
    Ok(one_file(
        names.clone(),
        path,
        content,
        Placement::Append,
        filter,
    ))
}

/// Whether `command_line` builds what it runs (a compiler or build tool among its words).
fn compiles(command_line: &str) -> bool {
    shell_words(command_line).iter().any(|word| {
        matches!(
            file_name(&word.text),
            "make" | "cmake" | "ninja" | "gcc" | "g++" | "clang" | "clang++" | "c++" | "cc"
        )
    })
}

fn cpp(parser: ParserName, command_line: &str, left: &[String], names: &CanaryNames) -> Planned {
    if !compiles(command_line) {
        return Err(format!(
            "the test command runs test binaries built before it ({}), so canaries written \
             before it are not compiled in",
            command_line.trim()
        ));
    }
    let candidate = |path: &str| {
        [".cc", ".cpp", ".cxx", ".c++"]
            .iter()
            .any(|ext| path.ends_with(ext))
            && path.contains("test")
    };
    let path = pick(left, command_line, candidate).ok_or_else(|| no_file("C++ test source"))?;
    let (a, b, sum, wrong) = sums(names);
    let suite = format!("AciCanary_{}", hex(&names.module));
    let content = if parser == ParserName::Doctest {
        let subcase = |name: &str, want: u32| {
            format!("    SUBCASE(\"{name}\") {{\n        CHECK({a} + {b} == {want});\n    }}\n")
        };
        format!(
            "\nTEST_CASE(\"{suite}\") {{\n{}{}}}\n",
            subcase(&names.pass, sum),
            subcase(&names.fail, wrong)
        )
    } else {
        let test = |name: &str, want: u32| {
            format!("\nTEST({suite}, {name}) {{\n    EXPECT_EQ({a} + {b}, {want});\n}}\n")
        };
        format!("{}{}", test(&names.pass, sum), test(&names.fail, wrong))
    };
    Ok(one_file(
        names.clone(),
        path,
        content,
        Placement::Append,
        None,
    ))
}

/// The name filter of `command_line` for one of `flags`, widened by `widen`.
fn name_filter(
    command_line: &str,
    flags: &[&str],
    widen: impl Fn(&str) -> String,
) -> Option<NameFilter> {
    let found = find_option(command_line, flags)?;
    Some(NameFilter {
        widened: widen(&found.value),
        flag: found.flag,
        value: found.value,
    })
}

/// One shell word of a command line: its unquoted text and where it is.
pub(super) struct Word {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// The words of `command_line`, split at unquoted white space and shell operators (`(`, `)`,
/// `|`, `;`, `&`, `<`, `>`), with single quotes, double quotes (`\` escaping inside them) and
/// `\` outside them undone.
pub(super) fn shell_words(command_line: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = command_line.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if c.is_whitespace() || "()|;&<>".contains(c) {
            if let Some(word) = current.take() {
                words.push(word);
            }
            continue;
        }
        let word = current.get_or_insert_with(|| Word {
            text: String::new(),
            start: index,
            end: index,
        });
        match c {
            '\'' => {
                for (_, c) in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.text.push(c);
                }
            }
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some((_, next)) = chars.next() {
                                if !"\"\\$`".contains(next) {
                                    word.text.push('\\');
                                }
                                word.text.push(next);
                            }
                        }
                        _ => word.text.push(c),
                    }
                }
            }
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    word.text.push(next);
                }
            }
            _ => word.text.push(c),
        }
        word.end = chars.peek().map_or(command_line.len(), |(next, _)| *next);
    }
    if let Some(word) = current {
        words.push(word);
    }
    words
}

/// Where an option's value is in a command line.
pub(super) struct FoundOption {
    /// The option as written.
    pub flag: String,
    /// Its value, unquoted.
    pub value: String,
    /// The byte range of the value's word (the whole `flag=value` word when joined).
    pub start: usize,
    pub end: usize,
    /// Written as one word, `flag=value`.
    pub joined: bool,
}

/// The first of `flags` in `command_line` with its value: `flag value` or `flag=value`.
pub(super) fn find_option(command_line: &str, flags: &[&str]) -> Option<FoundOption> {
    let words = shell_words(command_line);
    for (index, word) in words.iter().enumerate() {
        for flag in flags {
            if word.text == *flag {
                let value = words.get(index + 1)?;
                return Some(FoundOption {
                    flag: (*flag).to_owned(),
                    value: value.text.clone(),
                    start: value.start,
                    end: value.end,
                    joined: false,
                });
            }
            if let Some(value) = word
                .text
                .strip_prefix(flag)
                .and_then(|rest| rest.strip_prefix('='))
            {
                return Some(FoundOption {
                    flag: (*flag).to_owned(),
                    value: value.to_owned(),
                    start: word.start,
                    end: word.end,
                    joined: true,
                });
            }
        }
    }
    None
}
