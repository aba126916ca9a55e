//! The lint gate on a one-line edit to a 5,000-line Python file and a 5,000-line Rust file
//! (warm: the session's linter has seen the file, as it has after `open`), next to flake8 with
//! SWE-agent v0.7's selection on the same Python file in the Python image (real daemon).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use aci::lint::{EditRange, GateOptions, Language, Linter};
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::{Sandbox, SandboxSpec};
use criterion::{Criterion, criterion_group, criterion_main};

fn python_file(lines: usize) -> String {
    let mut out =
        String::from("import os\nimport re as regex\nfrom dataclasses import dataclass, field\n\n");
    let mut i = 0;
    while out.lines().count() < lines - 40 {
        i += 1;
        out.push_str(&format!(
            "@dataclass\nclass Item{i}:\n    name: str\n    values: list[int] = field(default_factory=list)\n\n    \
             def total(self) -> int:\n        if (n := len(self.values)) > 10:\n            \
             return sum(v * 2 for v in self.values if v % {m})\n        return n\n\n    \
             async def fetch(self, key, *args, **kwargs):\n        result = {{k: v async for k, v in self.stream(key)}}\n        \
             match result:\n            case {{'a': x, **rest}}:\n                return {{'x': x, **rest}}\n            \
             case [first, *others] if first:\n                return {{'first': first}}\n            case _:\n                \
             pass\n        return {{'msg': f\"{{self.name!r:>10}} {{result['a']}} {{os.sep}}\"}}\n\n\n\
             def helper_{i}(data, limit=10):\n    out = []\n    for idx, row in enumerate(data):\n        try:\n            \
             out.append(regex.sub(r'\\s+', ' ', row[:limit]))\n        except (KeyError, IndexError) as exc:\n            \
             print(exc)\n    return [x for x in out if x]\n\n\n",
            m = i % 7 + 2
        ));
    }
    while out.lines().count() < lines {
        out.push_str("# padding\n");
    }
    out
}

fn rust_file(lines: usize) -> String {
    let mut out = String::from("use std::collections::HashMap;\n\n");
    let mut i = 0;
    while out.lines().count() < lines - 20 {
        i += 1;
        out.push_str(&format!(
            "pub struct Item{i}<'a> {{\n    name: &'a str,\n    values: Vec<i64>,\n}}\n\n\
             impl<'a> Item{i}<'a> {{\n    pub fn total(&self) -> i64 {{\n        \
             let doubled: Vec<i64> = self.values.iter().map(|v| v * 2).collect();\n        \
             doubled.iter().sum::<i64>() + {i}\n    }}\n\n    pub fn index(&self) -> HashMap<&'a str, usize> {{\n        \
             let mut map = HashMap::new();\n        map.insert(self.name, self.values.len());\n        \
             println!(\"{{}} {{:?}}\", r#\"raw\"#, map);\n        map\n    }}\n}}\n\n"
        ));
    }
    while out.lines().count() < lines {
        out.push_str("// padding\n");
    }
    out
}

/// Replaces line `line` (1-based) of `text` with `replacement`.
fn replace_line(text: &str, line: usize, replacement: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(index, current)| {
            if index + 1 == line {
                replacement
            } else {
                current
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Gates a chain of one-line edits to line 2,500, each on the text the previous one left (as a
/// session does), so every measured call does the incremental work rather than hitting the
/// linter's cache of the last texts.
fn gate_bench(c: &mut Criterion, name: &str, language: Language, text: &str) {
    let line = 2500;
    let original = text.lines().nth(line - 1).unwrap_or_default().to_owned();
    let comment = if language == Language::Python {
        "#"
    } else {
        "//"
    };
    let versions: Vec<Vec<u8>> = (0..64)
        .map(|i| replace_line(text, line, &format!("{original}  {comment} edit {i}")).into_bytes())
        .collect();
    let range = EditRange {
        start: line,
        end: line,
        replacement_lines: 1,
    };
    let options = GateOptions::default();
    let mut linter = Linter::new();
    linter.gate(language, text.as_bytes(), &versions[0], &range, &options);
    let mut k = 0usize;
    c.bench_function(name, |b| {
        b.iter(|| {
            let before = &versions[k % versions.len()];
            let after = &versions[(k + 1) % versions.len()];
            k += 1;
            linter.gate(language, before, after, &range, &options)
        })
    });
}

fn benches(c: &mut Criterion) {
    let python = python_file(5000);
    let rust = rust_file(5000);
    gate_bench(
        c,
        "gate_one_line_edit_python_5000",
        Language::Python,
        &python,
    );
    gate_bench(c, "gate_one_line_edit_rust_5000", Language::Rust, &rust);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmark needs the Docker daemon");
    let run_id = format!("bench-{}", std::process::id());
    let spec = SandboxSpec::new(run_id, "lint-bench", "aci-python:bookworm");
    let mut sandbox = rt.block_on(runtime.start(&spec)).unwrap();
    rt.block_on(sandbox.write_file("/testbed/big.py", python.as_bytes()))
        .unwrap();
    let mut group = c.benchmark_group("flake8");
    group.sample_size(10);
    group.bench_function("flake8_v07_selection_python_5000", |b| {
        b.iter(|| {
            rt.block_on(sandbox.run(
                "flake8 --isolated --select=F821,F822,F831,E111,E112,E113,E999,E902 big.py",
                Duration::from_secs(120),
            ))
            .unwrap()
        })
    });
    group.finish();
    rt.block_on(sandbox.shutdown()).unwrap();
}

criterion_group!(lint_benches, benches);
criterion_main!(lint_benches);
