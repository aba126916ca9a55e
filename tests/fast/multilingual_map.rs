//! Every record of SWE-bench Multilingual (`../shared/swebench/multilingual.jsonl`, or
//! `ACI_SWEBENCH_DATA`; the test fails when it is missing) maps: aci knows its language (for the
//! lint gate), its test command and its parser, and where it runs (aci's language image offline,
//! or the record's own image). A record that does not map is named in one line with what is
//! missing. The table of the 41 repositories in docs/swebench.md is the one this data gives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use aci::eval::plan::grading_plan_for;
use aci::eval::spec::{SpecSource, builtin};
use aci::instance::load_instances_file;
use aci::lint::Language;
use aci::provision::language::{image_language, language_of, multilingual_repo};

fn multilingual() -> PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        PathBuf::from,
    );
    let file = dir.join("multilingual.jsonl");
    assert!(
        file.is_file(),
        "the SWE-bench data is missing: {} has no multilingual.jsonl\nhint: set \
         ACI_SWEBENCH_DATA to the directory that holds it",
        dir.display()
    );
    file
}

/// One repository's row: language, records, parsers, where it runs.
#[derive(Default)]
struct Row {
    language: String,
    records: usize,
    parsers: BTreeMap<String, usize>,
    runs_on: String,
}

#[test]
fn every_multilingual_record_has_a_language_a_test_command_a_parser_and_an_image() {
    let loaded = load_instances_file(&multilingual()).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut missing: Vec<String> = Vec::new();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for record in &loaded.instances {
        let id = &record.instance_id;
        let Some(language) = language_of(record) else {
            missing.push(format!(
                "{id}: no language for the repository {}",
                record.repo
            ));
            continue;
        };
        if !Language::NAMES.contains(&language) {
            missing.push(format!("{id}: the lint gate has no language {language:?}"));
        }
        let plan = match grading_plan_for(record, builtin(), SpecSource::Record) {
            Ok(plan) => plan,
            Err(error) => {
                missing.push(format!("{id}: {error}"));
                continue;
            }
        };
        if plan.command_line().trim().is_empty() {
            missing.push(format!("{id}: the eval script has no test command"));
        }
        let repo = multilingual_repo(&record.repo).unwrap();
        let runs_on = if repo.offline {
            format!("`aci-{}:bookworm`, offline", image_language(language))
        } else if let Some(image) = record.own_image() {
            assert!(
                image.starts_with("swebench/sweb.eval.x86_64."),
                "{id}: {image}"
            );
            "the record's image".to_owned()
        } else {
            missing.push(format!("{id}: needs its own image and names none"));
            continue;
        };
        let row = rows.entry(record.repo.clone()).or_default();
        row.language = language.to_owned();
        row.records += 1;
        *row.parsers.entry(plan.parser.to_string()).or_insert(0) += 1;
        row.runs_on = runs_on;
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    assert_eq!(loaded.instances.len(), 300);
    assert_eq!(rows.len(), 41);

    let mut table = String::from(
        "| Repository | Language | Records | Parser | Runs on |\n|---|---|---|---|---|\n",
    );
    for (repo, row) in &rows {
        let parsers: Vec<String> = if row.parsers.len() == 1 {
            row.parsers.keys().cloned().collect()
        } else {
            row.parsers
                .iter()
                .map(|(parser, count)| format!("{parser} ({count})"))
                .collect()
        };
        table.push_str(&format!(
            "| `{repo}` | {} | {} | {} | {} |\n",
            row.language,
            row.records,
            parsers.join(", "),
            row.runs_on
        ));
    }
    let offline: usize = rows
        .values()
        .filter(|row| row.runs_on.ends_with("offline"))
        .map(|row| row.records)
        .sum();
    assert_eq!(offline, 27);
    let docs =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/swebench.md"))
            .unwrap();
    assert!(
        docs.contains(&table),
        "docs/swebench.md does not hold the repositories' table as the records give it:\n{table}"
    );
}
