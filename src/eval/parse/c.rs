//! SWE-bench's C and C++ parsers of the Multilingual records (`swebench` 5.0.2,
//! `harness/log_parsers/c.py`): `parse_log_redis` (redis, valkey), `parse_log_jq`,
//! `parse_log_micropython_test`, `parse_log_googletest` (fmt) and `parse_log_doctest`
//! (nlohmann/json).

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static REDIS: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^\[(ok|err|skip|ignore)\]:[\s\x1C-\x1F](.+?)(?:[\s\x1C-\x1F]\((\d+[\s\x1C-\x1F]*m?s)\))?$",
    )
});
static REDIS_ERR_PLACE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"[\s\x1C-\x1F]+in[\s\x1C-\x1F]+[^\s\x1C-\x1F]+$"));

/// Redis's Tcl test suite: a stripped `[ok]: <name>`, `[err]: <name>`, `[skip]: <name>` or
/// `[ignore]: <name>` line, without a trailing ` (12 ms)`, is PASSED, FAILED, SKIPPED or SKIPPED;
/// a failure's trailing ` in <file>` is cut, so it names the test its pass would.
pub fn parse_redis(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = REDIS.captures(py_strip(line)) else {
            continue;
        };
        let name = &captures[2];
        match &captures[1] {
            "ok" => set(&mut map, name, TestStatus::Passed),
            "err" => set(
                &mut map,
                &REDIS_ERR_PLACE.replace(name, ""),
                TestStatus::Failed,
            ),
            _ => set(&mut map, name, TestStatus::Skipped),
        }
    }
    map
}

/// Each stripped line of `log` that `regex` matches, as `(status word, name)` from its first two
/// groups, with the status `status` gives the word.
fn word_then_name(log: &str, regex: &Regex, status: fn(&str) -> TestStatus) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if let Some(captures) = regex.captures(py_strip(line)) {
            set(&mut map, &captures[2], status(&captures[1]));
        }
    }
    map
}

static JQ: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^[\s\x1C-\x1F]*(PASS|FAIL):[\s\x1C-\x1F](.+)$"));

/// Automake's test driver (`make check`): a stripped `PASS: <name>` is PASSED and `FAIL: <name>`
/// FAILED; `SKIP:`, `XFAIL:` and `ERROR:` are not read.
pub fn parse_jq(log: &str) -> StatusMap {
    word_then_name(log, &JQ, |word| {
        if word == "PASS" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        }
    })
}

static MICROPYTHON: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^(pass|FAIL|skip)[\s\x1C-\x1F]+(.+)$"));

/// MicroPython's `run-tests.py`: a stripped `pass <test>`, `FAIL <test>` or `skip <test>` line is
/// PASSED, FAILED or SKIPPED.
pub fn parse_micropython_test(log: &str) -> StatusMap {
    word_then_name(log, &MICROPYTHON, |word| match word {
        "pass" => TestStatus::Passed,
        "FAIL" => TestStatus::Failed,
        _ => TestStatus::Skipped,
    })
}

static GOOGLETEST: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^.*\[[\s\x1C-\x1F]*(OK|FAILED)[\s\x1C-\x1F]*\][\s\x1C-\x1F](.*)[\s\x1C-\x1F]\(.*\)$",
    )
});

/// GoogleTest's output (through `ctest -V`, whose `N: ` prefix may precede it): a stripped line
/// whose last `[ OK ]` or `[ FAILED ]` mark is followed by a name and ` (…)` at the end
/// (`[       OK ] Suite.Test (0 ms)`) is PASSED or FAILED; the name runs to the last ` (`.
pub fn parse_googletest(log: &str) -> StatusMap {
    word_then_name(log, &GOOGLETEST, |word| {
        if word == "OK" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        }
    })
}

/// doctest's XML reporter (`-s -r=xml`; nlohmann/json): the text from the first `<doctest` to
/// the first `</doctest>` after it is read as an XML document, and each `SubCase` under each
/// `TestCase` (nested ones too, each on its own, under the test case) is the test
/// `<test case> > <subcase>`, PASSED when every `Expression` under it has `success="true"` (a
/// subcase without one passes), FAILED otherwise. A test case without subcases is not read. A
/// name that is missing reads `None`, as Python prints it. When that text is not well-formed XML
/// (a test printed a tag into it) SWE-bench's parser raises and the harness grades nothing; aci
/// reads no test from it.
pub fn parse_doctest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let Some(start) = log.find("<doctest") else {
        return map;
    };
    let Some(end) = log[start..].find("</doctest>") else {
        return map;
    };
    let Some(document) = xml::parse(&log[start..start + end + "</doctest>".len()]) else {
        return map;
    };
    for case in document.descendants(0, "TestCase") {
        let case_name = document.attribute(case, "name").unwrap_or("None");
        for subcase in document.descendants(case, "SubCase") {
            let subcase_name = document.attribute(subcase, "name").unwrap_or("None");
            let passed = document
                .descendants(subcase, "Expression")
                .all(|expression| document.attribute(expression, "success") == Some("true"));
            let status = if passed {
                TestStatus::Passed
            } else {
                TestStatus::Failed
            };
            set(&mut map, &format!("{case_name} > {subcase_name}"), status);
        }
    }
    map
}

/// The few rules of XML that doctest's report needs, strict where a conforming parser is: tags
/// that do not nest, a second root, an attribute twice, an unknown entity or a `<` in an
/// attribute value make the document unreadable (`None`).
mod xml {
    /// One element: its name, attributes (values decoded) and where its subtree ends.
    struct Element {
        name: String,
        attributes: Vec<(String, String)>,
        /// One past the index of its last descendant (elements are stored in document order).
        end: usize,
    }

    /// The elements of a document in document order; the first is the root.
    pub(super) struct Document {
        elements: Vec<Element>,
    }

    impl Document {
        /// The descendants of element `index` named `name`, in document order.
        pub(super) fn descendants<'a>(
            &'a self,
            index: usize,
            name: &'a str,
        ) -> impl Iterator<Item = usize> + 'a {
            let end = self
                .elements
                .get(index)
                .map_or(index, |element| element.end);
            (index + 1..end).filter(move |&i| self.elements[i].name == name)
        }

        /// The value of attribute `name` of element `index`.
        pub(super) fn attribute(&self, index: usize, name: &str) -> Option<&str> {
            self.elements
                .get(index)?
                .attributes
                .iter()
                .find_map(|(key, value)| (key == name).then_some(value.as_str()))
        }
    }

    /// `text` with its entity and character references replaced; `None` for an unknown one.
    fn decode(text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            let semi = rest[amp..].find(';')? + amp;
            let entity = &rest[amp + 1..semi];
            let decoded = match entity {
                "lt" => '<',
                "gt" => '>',
                "amp" => '&',
                "quot" => '"',
                "apos" => '\'',
                _ => {
                    let code = if let Some(hex) = entity.strip_prefix("#x") {
                        u32::from_str_radix(hex, 16).ok()?
                    } else {
                        entity.strip_prefix('#')?.parse().ok()?
                    };
                    char::from_u32(code)?
                }
            };
            out.push(decoded);
            rest = &rest[semi + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn is_name_end(c: char) -> bool {
        c.is_whitespace() || c == '/' || c == '>' || c == '='
    }

    /// Reads `text` as one XML document.
    pub(super) fn parse(text: &str) -> Option<Document> {
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut rest = text;
        let mut closed_root = false;
        loop {
            let Some(lt) = rest.find('<') else {
                decode(rest)?;
                let outside = closed_root || elements.is_empty();
                if outside && !rest.trim().is_empty() {
                    return None;
                }
                break;
            };
            let between = &rest[..lt];
            decode(between)?;
            if open.is_empty() && !between.trim().is_empty() {
                return None;
            }
            rest = &rest[lt..];
            if let Some(after) = rest.strip_prefix("<!--") {
                rest = &after[after.find("-->")? + 3..];
            } else if let Some(after) = rest.strip_prefix("<![CDATA[") {
                if open.is_empty() {
                    return None;
                }
                rest = &after[after.find("]]>")? + 3..];
            } else if let Some(after) = rest.strip_prefix("<?") {
                rest = &after[after.find("?>")? + 2..];
            } else if let Some(after) = rest.strip_prefix("</") {
                let close = after.find('>')?;
                let name = after[..close].trim_end();
                let index = open.pop()?;
                if elements[index].name != name {
                    return None;
                }
                elements[index].end = elements.len();
                closed_root |= open.is_empty();
                rest = &after[close + 1..];
            } else {
                if closed_root {
                    return None;
                }
                let after = &rest[1..];
                let name_len = after.find(is_name_end)?;
                if name_len == 0 {
                    return None;
                }
                let name = after[..name_len].to_owned();
                let mut tag = &after[name_len..];
                let mut attributes: Vec<(String, String)> = Vec::new();
                let self_closing = loop {
                    tag = tag.trim_start();
                    if let Some(after) = tag.strip_prefix("/>") {
                        tag = after;
                        break true;
                    }
                    if let Some(after) = tag.strip_prefix('>') {
                        tag = after;
                        break false;
                    }
                    let key_len = tag.find(is_name_end)?;
                    if key_len == 0 {
                        return None;
                    }
                    let key = tag[..key_len].to_owned();
                    let value = tag[key_len..].trim_start().strip_prefix('=')?.trim_start();
                    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
                    let value = &value[1..];
                    let close = value.find(quote)?;
                    let raw = &value[..close];
                    if raw.contains('<') || attributes.iter().any(|(k, _)| *k == key) {
                        return None;
                    }
                    let normalized = raw.replace(['\t', '\n', '\r'], " ");
                    attributes.push((key, decode(&normalized)?));
                    tag = &value[close + 1..];
                };
                let index = elements.len();
                elements.push(Element {
                    name,
                    attributes,
                    end: index + 1,
                });
                if self_closing {
                    closed_root |= open.is_empty();
                } else {
                    open.push(index);
                }
                rest = tag;
            }
        }
        (open.is_empty() && !elements.is_empty()).then_some(Document { elements })
    }
}
