//! Every relative link in the documentation resolves to a file or directory that exists:
//! README.md, CONTRIBUTING.md, docs/*.md and every README.md under tests/fixtures. A link is
//! `[text](target)` or a reference definition `[label]: target` outside code (fenced blocks and
//! `inline code`); URLs (`https:`, `mailto:` …) and in-page anchors (`#section`) are not files,
//! and a target's own `#anchor` is dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files the test reads.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut pending = vec![root.join("tests/fixtures")];
    let mut readmes = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|name| name == "README.md") {
                readmes.push(path);
            }
        }
    }
    readmes.sort();
    files.extend(readmes);
    files
}

/// `(line number, target)` of every link in `text` outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let inline = Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).unwrap();
    let reference = Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?").unwrap();
    let code = Regex::new(r"`[^`]*`").unwrap();
    let mut found = Vec::new();
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = code.replace_all(line, "");
        let targets = inline
            .captures_iter(&line)
            .chain(reference.captures_iter(&line))
            .map(|captures| captures[1].to_owned());
        found.extend(targets.map(|target| (index + 1, target)));
    }
    found
}

/// Whether `target` names a file in the repository (not a URL or an anchor).
fn is_relative(target: &str) -> bool {
    let scheme = target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic())
    });
    !scheme && !target.starts_with('#')
}

#[test]
fn links_are_read_from_markdown_outside_code() {
    let text = "\
See [the guide](docs/guide.md#setup \"Guide\") and [home](https://example.org).
[ref]: ../CONTRIBUTING.md
`[not](a-link.md)` and [anchor](#top)
```
[inside](fence.md)
```
";
    let found: Vec<(usize, String)> = links(text);
    assert_eq!(
        found,
        vec![
            (1, "docs/guide.md#setup".to_owned()),
            (1, "https://example.org".to_owned()),
            (2, "../CONTRIBUTING.md".to_owned()),
            (3, "#top".to_owned()),
        ]
    );
    let relative: Vec<bool> = found.iter().map(|(_, t)| is_relative(t)).collect();
    assert_eq!(relative, [true, false, true, false]);
}

#[test]
fn every_relative_link_in_the_docs_resolves_to_a_file_that_exists() {
    let documents = documents();
    assert!(documents.len() >= 15, "{documents:?}");
    let root = root();
    let mut checked = 0;
    let mut broken = Vec::new();
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        let dir = document.parent().unwrap_or(Path::new("."));
        for (line, target) in links(&text) {
            if !is_relative(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap_or(&target);
            checked += 1;
            if !dir.join(path).exists() {
                let shown = document.strip_prefix(&root).unwrap_or(document);
                broken.push(format!("{}:{line}: {target}", shown.display()));
            }
        }
    }
    assert!(checked > 0);
    assert_eq!(
        broken,
        Vec::<String>::new(),
        "links to files that do not exist"
    );
}
