//! The layering of `src/lib.rs`, checked against the source: a module imports only modules of
//! lower layers. The layers are read from lib.rs's own doc (its `# Layers` list), so the
//! documented order and the checked one are the same text.
//!
//! Every path into another top-level module counts: `crate::x::…`, each item of
//! `use crate::{x::…, y::…}`, and a `super::` chain that climbs out of its top-level module
//! (`super::x` in `src/a.rs`). Comments and string literals are skipped, so a doc link to a higher
//! module is not an import.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The files of the binary, which sits on top of every layer: these, and `commands/`.
const BINARY_FILES: [&str; 2] = ["main.rs", "cli.rs"];

/// The folder of the binary's commands.
const BINARY_DIR: &str = "commands/";

/// The layers of lib.rs's `# Layers` section, lowest first: the backticked names of each
/// numbered item before its ` — `.
fn layers(lib_rs: &str) -> Vec<Vec<String>> {
    let mut in_section = false;
    let mut layers = Vec::new();
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if let Some(heading) = doc.strip_prefix('#') {
            in_section = heading.trim() == "Layers";
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        assert_eq!(
            number.parse::<usize>().unwrap(),
            layers.len() + 1,
            "lib.rs numbers its layers 1, 2, … in order: {line}"
        );
        let names = rest.split(" — ").next().unwrap_or_default();
        let layer: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        assert!(!layer.is_empty(), "a layer without modules: {line}");
        layers.push(layer);
    }
    layers
}

/// `pub mod x;` lines of lib.rs.
fn declared_modules(lib_rs: &str) -> BTreeSet<String> {
    lib_rs
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .filter_map(|rest| rest.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// `source` with comments, string and character literals replaced by spaces (newlines kept).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                out.push(' ');
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    at += 2;
                } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[at]));
                    at += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, at) {
            // r"…", r#"…"#, br"…": skip to the quote followed by the same number of hashes.
            let open = at + chars[at..].iter().position(|&c| c == '"').unwrap_or(0);
            for &c in &chars[at..=open] {
                out.push(blank(c));
            }
            at = open + 1;
            while at < chars.len() {
                let closes =
                    chars[at] == '"' && (1..=hashes).all(|k| chars.get(at + k) == Some(&'#'));
                if closes {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    at += hashes + 1;
                    break;
                }
                out.push(blank(chars[at]));
                at += 1;
            }
        } else if c == '"' {
            out.push(' ');
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                if chars[at] == '\\' {
                    out.push(' ');
                    at += 1;
                }
                if at < chars.len() {
                    out.push(blank(chars[at]));
                    at += 1;
                }
            }
            out.push(' ');
            at += 1;
        } else if c == '\'' && is_char_literal(&chars, at) {
            out.push(' ');
            at += 1;
            while at < chars.len() && chars[at] != '\'' {
                if chars[at] == '\\' {
                    out.push(' ');
                    at += 1;
                }
                out.push(' ');
                at += 1;
            }
            out.push(' ');
            at += 1;
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}

/// The number of `#` of a raw string starting at `at` (`r"`, `r#"`, `br"`), if one does.
fn raw_string_start(chars: &[char], at: usize) -> Option<usize> {
    let previous_is_ident = at > 0 && (chars[at - 1].is_alphanumeric() || chars[at - 1] == '_');
    if previous_is_ident {
        return None;
    }
    let mut index = at;
    if chars.get(index) == Some(&'b') {
        index += 1;
    }
    if chars.get(index) != Some(&'r') {
        return None;
    }
    index += 1;
    let mut hashes = 0;
    while chars.get(index) == Some(&'#') {
        hashes += 1;
        index += 1;
    }
    (chars.get(index) == Some(&'"')).then_some(hashes)
}

/// Whether the `'` at `at` opens a character literal rather than a lifetime or label.
fn is_char_literal(chars: &[char], at: usize) -> bool {
    matches!(
        (chars.get(at + 1), chars.get(at + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// One path into another module: where it is and the top-level module it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    line: usize,
    target: String,
}

/// The top-level modules that the code of a file at module path `module` names: through
/// `crate::`, and through `super::` chains that climb to the crate root. Inline `mod x { … }`
/// blocks deepen the path for `super::`.
fn imports(code: &str, module: &[String]) -> Vec<Import> {
    let tokens = tokenize(code);
    let mut found = Vec::new();
    // Each open brace: whether it opened an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        let (line, token) = &tokens[index];
        let text = token.as_str();
        match text {
            "{" => {
                let is_mod =
                    index >= 2 && tokens[index - 2].1 == "mod" && is_ident(&tokens[index - 1].1);
                braces.push(is_mod);
            }
            "}" => {
                braces.pop();
            }
            "crate" if tokens.get(index + 1).is_some_and(|t| t.1 == "::") => {
                let previous_is_dollar = index > 0 && tokens[index - 1].1 == "$";
                if !previous_is_dollar {
                    found.extend(
                        path_heads(&tokens, index + 2)
                            .into_iter()
                            .map(|target| Import {
                                line: *line,
                                target,
                            }),
                    );
                }
            }
            "super" if index == 0 || tokens[index - 1].1 != "::" => {
                let mut climbs = 0;
                let mut at = index;
                while tokens.get(at).is_some_and(|t| t.1 == "super")
                    && tokens.get(at + 1).is_some_and(|t| t.1 == "::")
                {
                    climbs += 1;
                    at += 2;
                }
                let depth = module.len() + braces.iter().filter(|&&is_mod| is_mod).count();
                if climbs >= depth {
                    found.extend(path_heads(&tokens, at).into_iter().map(|target| Import {
                        line: *line,
                        target,
                    }));
                }
            }
            _ => {}
        }
        index += 1;
    }
    found
}

/// The first segments of the path(s) starting at token `at`: `x` for `x::…`, each item's first
/// segment for `{x::…, y, …}`.
fn path_heads(tokens: &[(usize, String)], at: usize) -> Vec<String> {
    let Some((_, first)) = tokens.get(at) else {
        return Vec::new();
    };
    if first != "{" {
        return vec![first.clone()];
    }
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    for (_, token) in &tokens[at..] {
        match token.as_str() {
            "{" => {
                depth += 1;
                expect_head = depth == 1;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => expect_head = true,
            other if expect_head && depth == 1 => {
                heads.push(other.to_owned());
                expect_head = false;
            }
            _ => {}
        }
    }
    heads
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::`, and single punctuation characters, each with its 1-based line.
fn tokenize(code: &str) -> Vec<(usize, String)> {
    let mut tokens = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut at = 0;
        while at < chars.len() {
            let c = chars[at];
            if c.is_alphanumeric() || c == '_' {
                let start = at;
                while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                    at += 1;
                }
                tokens.push((number + 1, chars[start..at].iter().collect()));
            } else if c == ':' && chars.get(at + 1) == Some(&':') {
                tokens.push((number + 1, "::".to_owned()));
                at += 2;
            } else {
                if !c.is_whitespace() {
                    tokens.push((number + 1, c.to_string()));
                }
                at += 1;
            }
        }
    }
    tokens
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The module path of a file under `src/` from its place (`a/b.rs`, `a/b/mod.rs` → `a::b`),
/// unless a `#[path = "…"] mod m;` elsewhere names it (then its parent's path and `m`).
fn module_paths(src: &Path, files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<String>> {
    let mut paths: BTreeMap<PathBuf, Vec<String>> = files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(src).unwrap();
            let mut parts: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            let last = parts.pop().unwrap();
            if last != "mod.rs" {
                parts.push(last.trim_end_matches(".rs").to_owned());
            }
            (file.clone(), parts)
        })
        .collect();
    for file in files {
        let source = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = source.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let Some(target) = line
                .trim()
                .strip_prefix("#[path = \"")
                .and_then(|rest| rest.strip_suffix("\"]"))
            else {
                continue;
            };
            let Some(name) = lines
                .get(index + 1)
                .and_then(|next| next.trim().strip_prefix("mod "))
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            let mut module = paths[file].clone();
            module.push(name.to_owned());
            paths.insert(file.parent().unwrap().join(target), module);
        }
    }
    paths
}

#[test]
fn every_module_imports_only_modules_of_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib_rs = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let layer_of: BTreeMap<String, usize> = layers(&lib_rs)
        .into_iter()
        .enumerate()
        .flat_map(|(index, names)| names.into_iter().map(move |name| (name, index + 1)))
        .collect();
    let files = rust_files(&src);
    let module_paths = module_paths(&src, &files);
    let mut violations = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative == "lib.rs"
            || BINARY_FILES.contains(&relative.as_str())
            || relative.starts_with(BINARY_DIR)
        {
            continue;
        }
        let module = &module_paths[file];
        let own = &module[0];
        let Some(&own_layer) = layer_of.get(own) else {
            violations.push(format!("{relative}: module `{own}` has no layer in lib.rs"));
            continue;
        };
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let mut seen = BTreeSet::new();
        for import in imports(&code, module) {
            if &import.target == own || !seen.insert(import.clone()) {
                continue;
            }
            match layer_of.get(&import.target) {
                Some(&layer) if layer < own_layer => {}
                Some(&layer) => violations.push(format!(
                    "{relative}:{}: `{own}` (layer {own_layer}) imports `{}` (layer {layer})",
                    import.line, import.target
                )),
                // Not a module (a macro or a function of the crate root): lib.rs has none.
                None => violations.push(format!(
                    "{relative}:{}: `crate::{}` is not a module placed in a layer",
                    import.line, import.target
                )),
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layers of src/lib.rs:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_module_of_lib_rs_has_exactly_one_layer() {
    let lib_rs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut placed: Vec<String> = layers(&lib_rs).into_iter().flatten().collect();
    placed.sort();
    let declared: Vec<String> = declared_modules(&lib_rs).into_iter().collect();
    assert_eq!(
        placed, declared,
        "each `pub mod` of lib.rs, once in its `# Layers` list"
    );
}

#[test]
fn the_checker_sees_grouped_imports_and_climbing_super_paths_but_not_comments_or_strings() {
    let source = r##"
//! Links to [`crate::comment`] are prose.
use crate::{alpha::A, beta::{B, C}, gamma};
use super::delta::D;
fn f() -> &'static str {
    let _ = crate::epsilon::e();
    let _ = '"';
    let _ = "crate::string";
    let _ = r#"crate::raw "quoted""#;
    /* crate::block */
    super::zeta::z()
}
mod inner {
    use super::eta;
    use super::super::theta;
}
"##;
    let found: Vec<(usize, String)> = imports(&code_only(source), &["own".to_owned()])
        .into_iter()
        .map(|import| (import.line, import.target))
        .collect();
    let expected: Vec<(usize, String)> = [
        (3, "alpha"),
        (3, "beta"),
        (3, "gamma"),
        (4, "delta"),
        (6, "epsilon"),
        (11, "zeta"),
        (15, "theta"),
    ]
    .into_iter()
    .map(|(line, target)| (line, target.to_owned()))
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_layers_are_read_from_the_numbered_list_under_the_heading() {
    let lib_rs = "//! Intro with `ignored`.\n//!\n//! # Layers\n//!\n//! Text `also_ignored`.\n\
                  //!\n//! 1. `a`, `b` — leaves, see `c`.\n//! 2. `c` — above.\n//!    `d` wraps.\n\
                  //!\n//! # Other\n//! 3. `e` — not a layer.\n";
    assert_eq!(
        layers(lib_rs),
        vec![vec!["a".to_owned(), "b".to_owned()], vec!["c".to_owned()]]
    );
}
