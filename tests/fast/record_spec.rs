//! Every record of SWE-bench's current exports (`../shared/swebench/`, or `ACI_SWEBENCH_DATA`;
//! the tests fail when it is missing) against aci's grading:
//!
//! - each record's own spec reads (its `eval_script`'s test command, reset files, activation);
//! - for the Python records (Verified, dev, lite-dev), the record's own spec and the built-in
//!   table give the same test command and the same parser, apart from the disagreements listed
//!   in [`ALLOWED`] with their reason;
//! - every Multilingual record maps to one of aci's parsers, and each Multimodal dev record gets
//!   one line saying that its parser is not supported yet;
//! - how many Python records of Lite, Verified and dev get their test command and parser from
//!   their own spec, from the built-in table, or from neither, under each `--spec`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use aci::eval::plan::{PlanError, grading_plan_for, own_spec};
use aci::eval::spec::{SpecSource, builtin};
use aci::image::pull::SWEBENCH_ACTIVATE;
use aci::instance::{Instance, load_instances_file};
use aci::patch::patch_files;

/// Disagreements between a record's own spec and the built-in table that are known and
/// explained: `(instance_id, what differs, why)`. None today: on all 748 Python records of
/// Verified, dev and lite-dev the record's test command equals the table's command line (test
/// command, then the test directives of the test patch) byte for byte, and the record's parser
/// is the table's (SWE-bench's per-repository names, `parse_log_scikit` and the like, are
/// aliases of the same parsers). A new export that differs must be explained here.
const ALLOWED: &[(&str, &str, &str)] = &[];

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        PathBuf::from,
    );
    assert!(
        dir.join("verified.jsonl").is_file(),
        "the SWE-bench data is missing: {} has no verified.jsonl\nhint: set ACI_SWEBENCH_DATA to \
         the directory that holds lite.jsonl, verified.jsonl, dev.jsonl, lite-dev.jsonl, \
         multilingual.jsonl and multimodal-dev.jsonl",
        dir.display()
    );
    dir
}

fn records(name: &str) -> Vec<Instance> {
    let loaded = load_instances_file(&data_dir().join(format!("{name}.jsonl"))).unwrap();
    assert!(loaded.errors.is_empty(), "{name}: {:?}", loaded.errors);
    loaded.instances
}

#[test]
fn every_record_s_own_spec_reads_and_resets_only_files_of_its_test_patch() {
    let mut read = BTreeMap::new();
    for name in [
        "verified",
        "dev",
        "lite-dev",
        "multilingual",
        "multimodal-dev",
    ] {
        for record in records(name) {
            let id = &record.instance_id;
            let spec = own_spec(&record)
                .unwrap_or_else(|| panic!("{id} has no eval_script"))
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(!spec.script.test_cmd.trim().is_empty(), "{id}");
            let touched: Vec<String> = patch_files(record.test_patch.as_deref().unwrap())
                .into_iter()
                .flat_map(|change| [change.old_path, change.new_path])
                .flatten()
                .collect();
            for file in &spec.script.test_files {
                // The script names its files unquoted, so a path with a space
                // (`website/_dogfooding/_pages tests/code-block-tests.mdx` of
                // facebook__docusaurus-9183) is two words there; aci resets the test patch's
                // own paths.
                assert!(
                    touched
                        .iter()
                        .any(|path| path == file || path.split(' ').any(|part| part == file)),
                    "{id}: the script resets {file}, which its test patch does not touch"
                );
            }
            // On SWE-bench's images the script activates exactly what --images swebench does.
            if let Some(activation) = &spec.script.activation {
                assert_eq!(activation, SWEBENCH_ACTIVATE, "{id}");
            }
            *read.entry(name).or_insert(0) += 1;
        }
    }
    assert_eq!(
        read,
        BTreeMap::from([
            ("dev", 225),
            ("lite-dev", 23),
            ("multilingual", 300),
            ("multimodal-dev", 102),
            ("verified", 500),
        ])
    );
}

#[test]
fn the_record_s_own_spec_and_the_builtin_table_agree_on_every_python_record() {
    let table = builtin();
    let mut disagreements: Vec<String> = Vec::new();
    let mut compared = 0;
    for name in ["verified", "dev", "lite-dev"] {
        for record in records(name) {
            let id = record.instance_id.clone();
            let own = grading_plan_for(&record, table, SpecSource::Record)
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            let table_plan = grading_plan_for(&record, table, SpecSource::Builtin)
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(own.spec_source, Some(SpecSource::Record), "{id}");
            assert_eq!(table_plan.spec_source, Some(SpecSource::Builtin), "{id}");
            let mut differ = |what: &str, mine: String, theirs: String| {
                if mine != theirs
                    && !ALLOWED
                        .iter()
                        .any(|(at, field, _)| *at == id && *field == what)
                {
                    disagreements.push(format!("{id} {what}: record {mine:?}, table {theirs:?}"));
                }
            };
            differ(
                "test command",
                own.command_line(),
                table_plan.command_line(),
            );
            differ(
                "parser",
                own.parser.to_string(),
                table_plan.parser.to_string(),
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 748);
    assert!(
        disagreements.is_empty(),
        "{} disagreements not in ALLOWED:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

#[test]
fn every_multilingual_record_maps_to_a_parser_and_each_multimodal_one_gets_one_line() {
    let mut unsupported: BTreeMap<String, usize> = BTreeMap::new();
    let mut mapped: BTreeMap<String, usize> = BTreeMap::new();
    for name in ["multilingual", "multimodal-dev"] {
        for record in records(name) {
            let id = &record.instance_id;
            let parser = record.log_parser.clone().unwrap();
            match grading_plan_for(&record, builtin(), SpecSource::Record) {
                Ok(plan) => {
                    assert_eq!(name, "multilingual", "{id}");
                    *mapped.entry(plan.parser.to_string()).or_insert(0) += 1;
                }
                Err(error @ PlanError::UnsupportedParser { .. }) => {
                    let line = error.to_string();
                    assert!(!line.contains('\n'), "{id}: {line}");
                    assert!(
                        line.starts_with(&format!(
                            "SWE-bench's log parser {parser:?} is not supported yet (aci reads: \
                             parse_log_pytest, "
                        )),
                        "{id}: {line}"
                    );
                    *unsupported.entry(format!("{name} {parser}")).or_insert(0) += 1;
                }
                other => panic!("{id} ({parser}): {other:?}"),
            }
        }
    }
    let count = |pairs: &[(&str, usize)]| -> BTreeMap<String, usize> {
        pairs
            .iter()
            .map(|(name, count)| ((*name).to_owned(), *count))
            .collect()
    };
    // jekyll's 5 records: 3 minitest, 2 cucumber; immutable-js's 2: jest and jest_json.
    assert_eq!(
        mapped,
        count(&[
            ("ant", 17),
            ("cargo_swebench", 43),
            ("cucumber", 2),
            ("doctest", 1),
            ("googletest", 11),
            ("gotest", 42),
            ("gradle_custom", 10),
            ("jest", 11),
            ("jest_json", 1),
            ("jq", 9),
            ("karma", 17),
            ("maven", 16),
            ("micropython_test", 5),
            ("minitest", 3),
            ("phpunit", 43),
            ("redis", 16),
            ("rspec_transformed_json", 25),
            ("ruby_unit", 14),
            ("tap", 9),
            ("vitest", 5),
        ])
    );
    assert_eq!(mapped.values().sum::<usize>(), 300);
    let multimodal = records("multimodal-dev").len();
    assert_eq!(multimodal, 102);
    let mut expected = BTreeMap::new();
    for record in records("multimodal-dev") {
        *expected
            .entry(format!("multimodal-dev {}", record.log_parser.unwrap()))
            .or_insert(0) += 1;
    }
    assert_eq!(unsupported, expected);
}

/// `(own spec, built-in table, neither)`: where each record's test command and parser come from.
fn sources(name: &str, choice: SpecSource) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for record in records(name) {
        match grading_plan_for(&record, builtin(), choice).map(|plan| plan.spec_source) {
            Ok(Some(SpecSource::Record)) => counts.0 += 1,
            Ok(Some(SpecSource::Builtin)) => counts.1 += 1,
            Ok(None) | Err(_) => counts.2 += 1,
        }
    }
    eprintln!(
        "{name} --spec {choice}: own spec {}, built-in table {}, neither {}",
        counts.0, counts.1, counts.2
    );
    counts
}

#[test]
fn where_the_python_records_of_lite_verified_and_dev_get_their_test_command_and_parser() {
    // Lite (June 2024) carries no spec of its own: the table grades all of it either way.
    assert_eq!(sources("lite", SpecSource::Record), (0, 300, 0));
    assert_eq!(sources("lite", SpecSource::Builtin), (0, 300, 0));
    // Verified and dev carry their own: graded by it, or by the table, which has every one.
    assert_eq!(sources("verified", SpecSource::Record), (500, 0, 0));
    assert_eq!(sources("verified", SpecSource::Builtin), (0, 500, 0));
    assert_eq!(sources("dev", SpecSource::Record), (225, 0, 0));
    assert_eq!(sources("dev", SpecSource::Builtin), (0, 225, 0));
}
