//! The tripwire run: an independent check that a FAIL_TO_PASS test's result comes from its body.
//!
//! When an evaluation resolves, aci grades the same patch again in a fresh sandbox in which the
//! first statement of every FAIL_TO_PASS test it can find is an assertion that fails, written in
//! the test's own style (`assert a == b`, `self.assertEqual(a, b)`, `assert_eq!(a, b);`, with
//! numbers drawn per run). A test whose body runs fails there whatever the patch fixed; a test
//! reported passed there did not get its result from its body (a faked outcome, an edited
//! runner, a shadowed assertion, a forged log). Nothing else differs between the two runs: the
//! same image, patch, test patch, command and canaries (with fresh names), so code that the
//! patch controls can tell them apart only by reading the test files and recognising the
//! tripwire.
//!
//! This module is pure: it reads the test ids ([`targets`]), says which files to read
//! ([`files_to_read`]), plants the tripwires in their text ([`plan`]) and judges the run's parsed
//! log ([`judge`]). A test it cannot place with certainty (a test inherited from another
//! class, defined in another file, generated, `#[should_panic]`, a doctest) is left unchecked
//! rather than guessed, so an honest patch is never judged by the wrong function.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::grade::lookup;
use super::parse::{ParserName, StatusMap, TestStatus};
use crate::lint::{Language, new_parser};
use crate::text::literal_regex;

/// `name (dotted.module.Class)` or `name (dotted.module.Class.name)`: Django's and unittest's
/// verbose ids.
static CLASS_ID: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(\w+) \(([\w.]+)\)$"));

/// Where the test of one id is defined, as far as the id says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The id as the lists and the parser write it.
    pub id: String,
    /// The file that defines it, or `None`: any Python (or Rust) file of the test patch.
    pub file: Option<String>,
    /// The classes (Python) or modules (Rust) it is nested in, outermost first.
    pub scopes: Vec<String>,
    /// The function's name; `None` for a test found by its docstring's first line.
    pub name: Option<String>,
}

/// The targets of `ids` (FAIL_TO_PASS) for the runner `parser` reads; ids it cannot read stay
/// out (and so unchecked).
pub fn targets(parser: ParserName, ids: &[String]) -> Vec<Target> {
    ids.iter().filter_map(|id| target(parser, id)).collect()
}

fn target(parser: ParserName, id: &str) -> Option<Target> {
    let owned = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    match parser {
        _ if parser.is_pytest() => {
            let base = id.split('[').next().unwrap_or(id);
            let mut parts: Vec<&str> = base.split("::").collect();
            if parts.len() < 2 || !parts[0].ends_with(".py") {
                return None;
            }
            let file = parts.remove(0).to_owned();
            let name = parts.pop()?.to_owned();
            Some(Target {
                id: id.to_owned(),
                file: Some(file),
                scopes: owned(&parts),
                name: Some(name),
            })
        }
        ParserName::Django | ParserName::Unittest => match CLASS_ID.captures(id) {
            Some(captures) => {
                let name = captures.get(1)?.as_str();
                let mut dotted: Vec<&str> = captures.get(2)?.as_str().split('.').collect();
                if dotted.last() == Some(&name) {
                    dotted.pop();
                }
                let class = dotted.pop()?;
                if dotted.is_empty() {
                    return None;
                }
                let module = dotted.join("/");
                let file = if parser == ParserName::Django {
                    format!("tests/{module}.py")
                } else {
                    format!("{module}.py")
                };
                Some(Target {
                    id: id.to_owned(),
                    file: Some(file),
                    scopes: vec![class.to_owned()],
                    name: Some(name.to_owned()),
                })
            }
            // Django writes a test's docstring's first line in place of its name.
            None if parser == ParserName::Django && !id.trim().is_empty() => Some(Target {
                id: id.to_owned(),
                file: None,
                scopes: Vec::new(),
                name: None,
            }),
            None => None,
        },
        ParserName::Sympy => {
            let valid =
                id.starts_with("test_") && id.chars().all(|c| c.is_alphanumeric() || c == '_');
            valid.then(|| Target {
                id: id.to_owned(),
                file: None,
                scopes: Vec::new(),
                name: Some(id.to_owned()),
            })
        }
        ParserName::Cargo | ParserName::CargoSwebench => {
            let mut parts: Vec<&str> = id.split("::").collect();
            let name = parts.pop()?;
            let valid = |part: &str| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            };
            (valid(name) && parts.iter().all(|part| valid(part))).then(|| Target {
                id: id.to_owned(),
                file: None,
                scopes: owned(&parts),
                name: Some(name.to_owned()),
            })
        }
        _ => None,
    }
}

/// The files the plan needs: every target's own file, and the Python (or Rust) files the test
/// patch leaves (`test_patch_files`) when a target names none.
pub fn files_to_read(targets: &[Target], test_patch_files: &[String]) -> Vec<String> {
    let mut files = BTreeSet::new();
    for target in targets {
        match &target.file {
            Some(file) => {
                files.insert(file.clone());
                if let Some(stem) = file.strip_suffix(".py") {
                    files.insert(format!("{stem}/__init__.py"));
                }
            }
            None => files.extend(
                test_patch_files
                    .iter()
                    .filter(|path| path.ends_with(".py") || path.ends_with(".rs"))
                    .cloned(),
            ),
        }
    }
    files.into_iter().collect()
}

/// The two numbers of one run's tripwires: they differ, so `a == b` is false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms(pub u32, pub u32);

impl Terms {
    /// The terms a random word gives.
    pub fn from_word(word: u64) -> Self {
        let a = 1000 + u32::try_from(word % 9000).unwrap_or(0);
        let b = a + 1 + u32::try_from((word >> 16) % 97).unwrap_or(0);
        Self(a, b)
    }
}

/// One run's tripwires: the files to write and which FAIL_TO_PASS tests carry one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripwirePlan {
    /// Each file's new text, by path.
    #[serde(skip)]
    pub files: BTreeMap<String, String>,
    /// Ids of tests that carry a tripwire.
    pub checked: Vec<String>,
    /// Ids of FAIL_TO_PASS tests that could not be placed with certainty.
    pub unchecked: Vec<String>,
}

/// Plants the tripwires of `targets` in the files of `texts` (path → text, as the tree has them
/// after the test patch). A target is checked when every function it can name is found: all
/// definitions of its name in its scope (a redefinition replaces the first), or the one test
/// whose docstring starts with it.
pub fn plan(targets: &[Target], texts: &BTreeMap<String, String>, terms: Terms) -> TripwirePlan {
    let mut insertions: BTreeMap<&str, Vec<(usize, String)>> = BTreeMap::new();
    let mut plan = TripwirePlan::default();
    let trees: BTreeMap<&str, (Language, tree_sitter::Tree)> = texts
        .iter()
        .filter_map(|(path, text)| {
            let language = if path.ends_with(".py") {
                Language::Python
            } else if path.ends_with(".rs") {
                Language::Rust
            } else {
                return None;
            };
            let tree = new_parser(language)?.parse(text, None)?;
            Some((path.as_str(), (language, tree)))
        })
        .collect();
    for target in targets {
        let mut found: Vec<(&str, usize, String)> = Vec::new();
        for (path, (language, tree)) in &trees {
            let in_scope = match &target.file {
                Some(file) => {
                    *path == file.as_str()
                        || file
                            .strip_suffix(".py")
                            .is_some_and(|stem| *path == format!("{stem}/__init__.py"))
                }
                None => true,
            };
            if !in_scope {
                continue;
            }
            let text = &texts[*path];
            let spots = match language {
                Language::Python => python_spots(tree.root_node(), text, target, terms),
                Language::Rust => rust_spots(tree.root_node(), text, path, target, terms),
                // Only .py and .rs files are parsed above.
                _ => Vec::new(),
            };
            found.extend(spots.into_iter().map(|(at, line)| (*path, at, line)));
        }
        let docstring_target = target.name.is_none();
        if found.is_empty() || (docstring_target && found.len() > 1) {
            plan.unchecked.push(target.id.clone());
            continue;
        }
        plan.checked.push(target.id.clone());
        for (path, at, line) in found {
            let list = insertions.entry(path).or_default();
            if !list.iter().any(|(existing, _)| *existing == at) {
                list.push((at, line));
            }
        }
    }
    for (path, mut list) in insertions {
        let mut text = texts[path].clone();
        list.sort_by_key(|spot| std::cmp::Reverse(spot.0));
        for (at, line) in list {
            text.insert_str(at, &line);
        }
        plan.files.insert(path.to_owned(), text);
    }
    plan
}

/// Where to insert (a byte offset) and what, for each Python function `target` names.
fn python_spots(root: Node<'_>, text: &str, target: &Target, terms: Terms) -> Vec<(usize, String)> {
    let mut functions = Vec::new();
    match &target.name {
        Some(name) => python_named(root, text, &target.scopes, name, false, &mut functions),
        None => python_by_docstring(root, text, &target.id, false, &mut functions),
    }
    let mut spots = Vec::new();
    for (function, in_class) in functions {
        match python_insertion(function, text, in_class, terms) {
            Some(spot) => spots.push(spot),
            // One definition that cannot carry a tripwire leaves the test unchecked.
            None => return Vec::new(),
        }
    }
    spots
}

/// The definitions (`function_definition` nodes) among the children of `block` (a module or a
/// class body), decorated ones included.
fn definitions<'a>(block: Node<'a>) -> Vec<Node<'a>> {
    let mut cursor = block.walk();
    block
        .named_children(&mut cursor)
        .filter_map(|child| match child.kind() {
            "decorated_definition" => child.child_by_field_name("definition"),
            _ => Some(child),
        })
        .filter(|node| matches!(node.kind(), "function_definition" | "class_definition"))
        .collect()
}

fn node_name<'a>(node: Node<'_>, text: &'a str) -> Option<&'a str> {
    node.child_by_field_name("name")
        .and_then(|name| text.get(name.byte_range()))
}

fn python_named<'a>(
    block: Node<'a>,
    text: &str,
    scopes: &[String],
    name: &str,
    in_class: bool,
    out: &mut Vec<(Node<'a>, bool)>,
) {
    for node in definitions(block) {
        let node_is =
            |kind: &str, wanted: &str| node.kind() == kind && node_name(node, text) == Some(wanted);
        match scopes.split_first() {
            None if node_is("function_definition", name) => out.push((node, in_class)),
            Some((class, rest)) if node_is("class_definition", class) => {
                if let Some(body) = node.child_by_field_name("body") {
                    python_named(body, text, rest, name, true, out);
                }
            }
            _ => {}
        }
    }
}

fn python_by_docstring<'a>(
    block: Node<'a>,
    text: &str,
    first_line: &str,
    in_class: bool,
    out: &mut Vec<(Node<'a>, bool)>,
) {
    for node in definitions(block) {
        let Some(body) = node.child_by_field_name("body") else {
            continue;
        };
        if node.kind() == "class_definition" {
            python_by_docstring(body, text, first_line, true, out);
            continue;
        }
        let starts = docstring(body, text).is_some_and(|doc| {
            doc.lines().map(str::trim).find(|line| !line.is_empty()) == Some(first_line.trim())
        });
        if starts {
            out.push((node, in_class));
        }
    }
}

/// The statements of a block, comments left out.
fn statements<'a>(body: Node<'a>) -> Vec<Node<'a>> {
    let mut cursor = body.walk();
    body.named_children(&mut cursor)
        .filter(|node| node.kind() != "comment")
        .collect()
}

/// The text of the docstring that opens `body`, quotes and prefixes stripped.
fn docstring<'a>(body: Node<'_>, text: &'a str) -> Option<&'a str> {
    let first = *statements(body).first()?;
    let string = (first.kind() == "expression_statement")
        .then(|| first.named_child(0))
        .flatten()
        .filter(|node| node.kind() == "string")?;
    let raw = text.get(string.byte_range())?;
    let raw = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let quotes = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else {
        1
    };
    raw.get(quotes..raw.len().saturating_sub(quotes))
}

/// The byte offset where line `row` (0-based) of `text` starts, if it exists.
fn line_start(text: &str, row: usize) -> Option<usize> {
    if row == 0 {
        return Some(0);
    }
    text.match_indices('\n')
        .nth(row - 1)
        .map(|(index, _)| index + 1)
        .filter(|start| *start < text.len())
}

/// The tripwire goes before the first statement of `function`'s body after its docstring, at
/// that statement's indentation (after the docstring, at its indentation, when the docstring is
/// all there is): `self.assertEqual(a, b)` in a method of a class whose file uses
/// `self.assert…`, `assert a == b` otherwise. `None` when the body starts on the `def` line or
/// the statement does not start its line.
fn python_insertion(
    function: Node<'_>,
    text: &str,
    in_class: bool,
    terms: Terms,
) -> Option<(usize, String)> {
    let body = function.child_by_field_name("body")?;
    let body_statements = statements(body);
    let first = *body_statements.first()?;
    if first.start_position().row <= function.start_position().row {
        return None;
    }
    let skip = usize::from(docstring(body, text).is_some());
    let (at, indent) = match body_statements.get(skip) {
        Some(anchor) => {
            let at = line_start(text, anchor.start_position().row)?;
            let indent = text.get(at..anchor.start_byte())?;
            (at, indent)
        }
        None => {
            let start = line_start(text, first.start_position().row)?;
            let indent = text.get(start..first.start_byte())?;
            let at = line_start(text, first.end_position().row + 1).unwrap_or(text.len());
            (at, indent)
        }
    };
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    let uses_self = in_class && function_takes_self(function, text) && text.contains("self.assert");
    let Terms(a, b) = terms;
    let statement = if uses_self {
        format!("self.assertEqual({a}, {b})")
    } else {
        format!("assert {a} == {b}")
    };
    let newline = if at == text.len() && !text.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    Some((at, format!("{newline}{indent}{statement}\n")))
}

fn function_takes_self(function: Node<'_>, text: &str) -> bool {
    function
        .child_by_field_name("parameters")
        .and_then(|parameters| parameters.named_child(0))
        .and_then(|first| text.get(first.byte_range()))
        .is_some_and(|first| first == "self")
}

/// The module path of a Rust file within its crate (`src/parser/tests.rs` → `parser::tests`,
/// `src/lib.rs` → nothing, `tests/it.rs` → nothing, `tests/it/common.rs` → `common`).
pub fn rust_module_path(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let after = |dir: &str| {
        parts
            .iter()
            .rposition(|part| *part == dir)
            .map(|index| &parts[index + 1..])
    };
    let mut module: Vec<String> = match after("src") {
        Some(rest) if rest.first() == Some(&"bin") => {
            rest.iter().skip(2).map(|p| (*p).to_owned()).collect()
        }
        Some(rest) => rest.iter().map(|p| (*p).to_owned()).collect(),
        None => match after("tests") {
            Some(rest) => rest.iter().skip(1).map(|p| (*p).to_owned()).collect(),
            None => return Vec::new(),
        },
    };
    if let Some(last) = module.last_mut()
        && let Some(stem) = last.strip_suffix(".rs")
    {
        *last = stem.to_owned();
    }
    if matches!(
        module.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        module.pop();
    }
    module
}

fn rust_spots(
    root: Node<'_>,
    text: &str,
    path: &str,
    target: &Target,
    terms: Terms,
) -> Vec<(usize, String)> {
    let Some(name) = &target.name else {
        return Vec::new();
    };
    let prefix = rust_module_path(path);
    let Some(inner) = target.scopes.strip_prefix(prefix.as_slice()) else {
        return Vec::new();
    };
    let mut functions = Vec::new();
    rust_named(root, text, inner, name, &mut functions);
    let Terms(a, b) = terms;
    let mut spots = Vec::new();
    for (function, attributes) in functions {
        if attributes
            .iter()
            .any(|attribute| attribute.contains("should_panic"))
        {
            return Vec::new();
        }
        let Some(body) = function.child_by_field_name("body") else {
            return Vec::new();
        };
        spots.push((body.start_byte() + 1, format!(" assert_eq!({a}, {b});")));
    }
    spots
}

/// The test functions named `name` in the modules `scopes` below `block`, each with the text of
/// its attributes.
fn rust_named<'a>(
    block: Node<'a>,
    text: &'a str,
    scopes: &[String],
    name: &str,
    out: &mut Vec<(Node<'a>, Vec<&'a str>)>,
) {
    let mut cursor = block.walk();
    let mut attributes: Vec<&str> = Vec::new();
    for child in block.named_children(&mut cursor) {
        match child.kind() {
            "attribute_item" => {
                attributes.extend(text.get(child.byte_range()));
                continue;
            }
            "line_comment" | "block_comment" => continue,
            "function_item"
                if scopes.is_empty()
                    && node_name(child, text) == Some(name)
                    && attributes.iter().any(|a| is_test_attribute(a)) =>
            {
                out.push((child, attributes.clone()));
            }
            "mod_item" => {
                if let (Some((module, rest)), Some(body)) =
                    (scopes.split_first(), child.child_by_field_name("body"))
                    && node_name(child, text) == Some(module.as_str())
                {
                    rust_named(body, text, rest, name, out);
                }
            }
            _ => {}
        }
        attributes.clear();
    }
}

/// `#[test]`, `#[tokio::test]`, `#[tokio::test(flavor = …)]`, `#[rstest]`.
fn is_test_attribute(attribute: &str) -> bool {
    let inner = attribute
        .trim()
        .strip_prefix("#[")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_default();
    let path = inner.split(['(', ' ']).next().unwrap_or_default();
    path == "test" || path.ends_with("::test") || path == "rstest"
}

/// Whether the tripwire run confirms the first run: every test of `checked` that the first run
/// graded as passing (`passed_first`) is reported failed, errored or an expected failure in the
/// tripwire run's parsed log (`status`).
///
/// # Errors
/// The first test that passed, was skipped or has no result, in words.
pub fn judge(
    status: &StatusMap,
    checked: &[String],
    passed_first: &[String],
) -> Result<(), String> {
    for id in checked.iter().filter(|id| passed_first.contains(id)) {
        let problem = match lookup(status, id) {
            Some(found) if found.is_failure() || found == TestStatus::XFail => continue,
            Some(found) => format!("is reported {found}"),
            None => "has no result".to_owned(),
        };
        return Err(format!(
            "{id} {problem} in the tripwire run, where its first statement is an assertion that \
             fails: its result does not come from its body"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
