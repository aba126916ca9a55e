//! The lint gate on a one-line edit to a 5,000-line file of each language (warm: the session's
//! linter has seen the file, as it has after `open`), a fresh check of each such file, and
//! flake8 with SWE-agent v0.7's selection on the same Python file in the Python image (real
//! daemon).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use aci::lint::{EditRange, GateOptions, Language, Linter, check};
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

/// `header`, then `block(i)` for i = 1, 2, ... while the file stays under `lines - 20` lines,
/// then comment lines up to `lines - footer lines`, then `footer`.
fn generated(
    lines: usize,
    header: &str,
    block: impl Fn(usize) -> String,
    comment: &str,
    footer: &str,
) -> String {
    let mut out = header.to_owned();
    let mut i = 0;
    while out.lines().count() < lines - 20 {
        i += 1;
        out.push_str(&block(i));
    }
    while out.lines().count() + footer.lines().count() < lines {
        out.push_str(comment);
        out.push_str(" padding\n");
    }
    out + footer
}

fn go_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "type Item{i} struct {{\n\tName   string\n\tValues []int\n}}\n\n\
             func (it *Item{i}) Total() (sum int) {{\n\tfor _, v := range it.Values {{\n\t\t\
             if v%{m} == 0 {{\n\t\t\tcontinue\n\t\t}}\n\t\tsum += v * 2\n\t}}\n\treturn\n}}\n\n\
             func Helper{i}[T any](xs []T, f func(T) string) map[string]T {{\n\tout := make(map[string]T, len(xs))\n\t\
             for _, x := range xs {{\n\t\tout[f(x)] = x\n\t}}\n\tfmt.Println(len(out), `raw`)\n\treturn out\n}}\n\n",
            m = i % 7 + 2
        )
    };
    generated(
        lines,
        "package bench\n\nimport \"fmt\"\n\n",
        block,
        "//",
        "",
    )
}

fn java_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "    static final class Item{i}<T extends Comparable<T>> {{\n        private final List<T> values = new ArrayList<>();\n\n        \
             int total(Function<T, Integer> f) {{\n            int sum = 0;\n            for (T v : values) {{\n                \
             sum += f.apply(v) % {m} == 0 ? 0 : f.apply(v) * 2;\n            }}\n            return sum;\n        }}\n\n        \
             String describe() {{\n            return switch (values.size()) {{\n                case 0 -> \"empty\";\n                \
             default -> values.stream().map(Object::toString).reduce(\"\", (a, b) -> a + b);\n            }};\n        }}\n    }}\n\n",
            m = i % 7 + 2
        )
    };
    generated(
        lines,
        "package bench;\n\nimport java.util.*;\nimport java.util.function.Function;\n\npublic class Big {\n",
        block,
        "//",
        "}\n",
    )
}

fn javascript_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "export class Item{i} {{\n  #values = [];\n  static count = {i};\n\n  total() {{\n    \
             return this.#values.filter((v) => v % {m}).reduce((a, b) => a + b * 2, 0);\n  }}\n\n  \
             async fetch(key, ...rest) {{\n    const {{ a = 1, ...others }} = (await load(key)) ?? {{}};\n    \
             return `${{this.constructor.name}} ${{a}} ${{others?.b}}`;\n  }}\n}}\n\n\
             export const view{i} = (props) => <div className=\"x\">{{props.name}}</div>;\n\n",
            m = i % 7 + 2
        )
    };
    generated(
        lines,
        "import { load } from './load.js';\n\n",
        block,
        "//",
        "",
    )
}

fn typescript_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "export interface Shape{i} {{\n  readonly kind: 'a' | 'b';\n  area(scale?: number): number;\n}}\n\n\
             export class Item{i}<T extends object = {{}}> implements Shape{i} {{\n  readonly kind = 'a' as const;\n  \
             constructor(private readonly values: T[]) {{}}\n\n  area(scale = {m}): number {{\n    \
             return this.values.length * scale;\n  }}\n}}\n\n\
             export function helper{i}<K extends string, V>(entries: [K, V][]): Record<K, V> {{\n  \
             return Object.fromEntries(entries) as Record<K, V>;\n}}\n\n",
            m = i % 7 + 2
        )
    };
    generated(lines, "type Id = string;\n\n", block, "//", "")
}

fn tsx_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "type Props{i} = {{ name: string; items?: string[] }};\n\n\
             export function View{i}({{ name, items = [] }}: Props{i}): JSX.Element {{\n  \
             const first = items[{m}] as string | undefined;\n  return (\n    <ul title={{name}}>\n      \
             {{items.map((item) => <li key={{item}}>{{item}}</li>)}}\n      <>{{first ?? 'none'}}</>\n    </ul>\n  );\n}}\n\n\
             export const id{i} = <T,>(x: T): T => x;\n\n",
            m = i % 7 + 2
        )
    };
    generated(lines, "import React from 'react';\n\n", block, "//", "")
}

fn c_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "typedef struct item{i} {{\n    int value;\n    struct item{i} *next;\n}} item{i}_t;\n\n\
             static int total{i}(const item{i}_t *head) {{\n    int sum = 0;\n    \
             for (const item{i}_t *n = head; n != NULL; n = n->next) {{\n        \
             if (n->value % {m} == 0) {{\n            continue;\n        }}\n        sum += MAX(n->value, 0) * 2;\n    }}\n    \
             return sum;\n}}\n\n",
            m = i % 7 + 2
        )
    };
    generated(
        lines,
        "#include <stddef.h>\n\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n\n",
        block,
        "//",
        "",
    )
}

fn cpp_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "template <typename T>\nclass Stack{i} {{\npublic:\n    explicit Stack{i}(std::size_t n) {{ items_.reserve(n); }}\n    \
             void push(T value) {{ items_.push_back(std::move(value)); }}\n    \
             [[nodiscard]] auto size() const noexcept -> std::size_t {{ return items_.size() % {m}; }}\n\n\
             private:\n    std::vector<T> items_;\n}};\n\n\
             inline int helper{i}(const std::vector<int>& xs) {{\n    \
             auto doubled = [](int x) {{ return x * 2; }};\n    int sum = 0;\n    \
             for (const auto& x : xs) {{\n        sum += doubled(x);\n    }}\n    return sum;\n}}\n\n",
            m = i % 7 + 2
        )
    };
    generated(
        lines,
        "#include <vector>\n#include <utility>\n\nnamespace bench {\n\n",
        block,
        "//",
        "}  // namespace bench\n",
    )
}

fn php_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "final class Item{i}\n{{\n    public function __construct(private readonly array $values = []) {{}}\n\n    \
             public function total(): int\n    {{\n        $double = fn(int $x): int => $x * 2;\n        \
             return array_sum(array_map($double, array_filter($this->values, fn($v) => $v % {m})));\n    }}\n\n    \
             public function describe(): string\n    {{\n        return match (count($this->values)) {{\n            \
             0 => 'empty',\n            default => \"{{$this->total()}} items\",\n        }};\n    }}\n}}\n\n",
            m = i % 7 + 2
        )
    };
    generated(lines, "<?php\n\nnamespace Bench;\n\n", block, "//", "")
}

fn ruby_file(lines: usize) -> String {
    let block = |i: usize| {
        format!(
            "class Item{i}\n  include Enumerable\n  attr_reader :values\n\n  \
             def initialize(*values, limit: {m}, &block)\n    @values = values\n    @limit = limit\n    @block = block\n  end\n\n  \
             def each(&) = @values.each(&)\n\n  def total\n    select {{ |v| (v % @limit).nonzero? }}.sum {{ _1 * 2 }}\n  end\n\n  \
             def to_s\n    case @values\n    in [] then 'empty'\n    in [first, *rest] then \"#{{first}} and #{{rest.size}} more\"\n    end\n  end\nend\n\n",
            m = i % 7 + 2
        )
    };
    generated(lines, "# frozen_string_literal: true\n\n", block, "#", "")
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
    let comment = if matches!(language, Language::Python | Language::Ruby) {
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
    let files = [
        ("python", Language::Python, python.clone()),
        ("rust", Language::Rust, rust_file(5000)),
        ("go", Language::Go, go_file(5000)),
        ("java", Language::Java, java_file(5000)),
        ("javascript", Language::JavaScript, javascript_file(5000)),
        ("typescript", Language::TypeScript, typescript_file(5000)),
        ("tsx", Language::Tsx, tsx_file(5000)),
        ("c", Language::C, c_file(5000)),
        ("cpp", Language::Cpp, cpp_file(5000)),
        ("php", Language::Php, php_file(5000)),
        ("ruby", Language::Ruby, ruby_file(5000)),
    ];
    for (name, language, text) in &files {
        assert_eq!(text.lines().count(), 5000, "{name}");
        assert_eq!(check(*language, text.as_bytes()), Vec::new(), "{name}");
        gate_bench(
            c,
            &format!("gate_one_line_edit_{name}_5000"),
            *language,
            text,
        );
    }
    let mut group = c.benchmark_group("fresh_check");
    group.sample_size(20);
    for (name, language, text) in &files {
        group.bench_function(format!("check_{name}_5000"), |b| {
            b.iter(|| check(*language, text.as_bytes()))
        });
    }
    group.finish();

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
