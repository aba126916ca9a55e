//! The parsers of the Multilingual records on logs of the real runners, in
//! `tests/fixtures/logs/<parser>/` (how each was made: the README there), and on lines in the
//! format of the runners that cannot run here, in `tests/fixtures/logs-written/<parser>/`.
//!
//! `harness-status-maps.json` in each holds the status map `swebench` 5.0.2's own parser reads
//! from each log (`examples/harness_status_maps.py` writes them); aci must read the very same map.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::TestStatus::{Failed, Passed, Skipped};
use super::{ParserName, StatusMap, TestStatus};

fn fixtures(root: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(root)
}

fn log_in(root: &str, path: &str) -> String {
    let path = fixtures(root).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn log(path: &str) -> String {
    log_in("logs", path)
}

/// The parser of a fixture folder: SWE-bench's `parse_log_<folder>`.
fn parser_of(folder: &str) -> ParserName {
    if folder == "cargo" {
        return ParserName::CargoSwebench;
    }
    ParserName::from_name(folder).unwrap_or_else(|| panic!("no parser {folder}"))
}

fn read_in(root: &str, path: &str) -> StatusMap {
    let (folder, _) = path.split_once('/').unwrap_or((path, ""));
    parser_of(folder).parser()(&log_in(root, path))
}

fn read(path: &str) -> StatusMap {
    read_in("logs", path)
}

/// The folders of `root`'s logs, after checking that aci reads every log of `root` as swebench's
/// parser does (`harness-status-maps.json`).
fn same_maps_as_swebench(root: &str, logs: usize) -> Vec<String> {
    // `null`: swebench's parser raises on the log, and the harness grades nothing.
    let harness: BTreeMap<String, Option<BTreeMap<String, String>>> =
        serde_json::from_str(&log_in(root, "harness-status-maps.json")).unwrap();
    let mut agree = 0;
    let mut differ = Vec::new();
    for (path, expected) in &harness {
        let ours: BTreeMap<String, String> = read_in(root, path)
            .into_iter()
            .map(|(id, status)| (id, status.as_str().to_owned()))
            .collect();
        if ours == expected.clone().unwrap_or_default() {
            agree += 1;
        } else {
            differ.push(format!("{path}: aci {ours:?}, swebench {expected:?}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert_eq!(agree, logs);
    let mut folders: Vec<String> = harness
        .keys()
        .filter_map(|path| path.split_once('/').map(|(folder, _)| folder.to_owned()))
        .collect();
    folders.dedup();
    folders
}

fn map(entries: &[(&str, TestStatus)]) -> StatusMap {
    entries
        .iter()
        .map(|(id, status)| ((*id).to_owned(), *status))
        .collect()
}

#[test]
fn every_fixture_log_reads_as_swebench_reads_it() {
    assert_eq!(
        same_maps_as_swebench("logs", 30),
        [
            "ant",
            "cargo",
            "doctest",
            "googletest",
            "gotest",
            "gradle_custom",
            "jq",
            "maven",
            "minitest",
            "phpunit",
            "rspec_transformed_json",
            "ruby_unit",
            "tap"
        ]
    );
}

#[test]
fn every_written_log_reads_as_swebench_reads_it() {
    assert_eq!(
        same_maps_as_swebench("logs-written", 11),
        [
            "cucumber",
            "doctest",
            "gradle_custom",
            "jest",
            "jest_json",
            "karma",
            "micropython_test",
            "redis",
            "vitest"
        ]
    );
}

#[test]
fn karma_keeps_a_sibling_suite_under_its_predecessor_and_stops_at_the_summary() {
    let read = read_in("logs-written", "karma/format.txt");
    assert_eq!(
        read.get("render() > should work with function components"),
        Some(&Passed),
        "`memo()` is shallower than `nested`: one pop, so its tests stay under `render()`"
    );
    assert!(!read.keys().any(|id| id.contains("after the summary")));
}

#[test]
fn jest_names_a_test_by_its_title_only_and_vitest_by_its_path() {
    let jest = read_in("logs-written", "jest/format.txt");
    assert_eq!(
        jest.get("same title"),
        Some(&Failed),
        "the last of two wins"
    );
    assert_eq!(jest.get("name with a trailing space"), Some(&Passed));
    assert!(!jest.keys().any(|id| id.contains("coloured")));
    let vitest = read_in("logs-written", "vitest/format.txt");
    assert_eq!(
        vitest.get("packages/runtime-core/__tests__/apiWatch.spec.ts > api: watch > skipped"),
        Some(&Skipped)
    );
}

#[test]
fn gradle_reads_a_failed_task_as_a_test_and_a_line_a_test_prints() {
    assert_eq!(
        read("gradle_custom/streams.txt"),
        map(&[
            (":test", Failed),
            ("org.example.CalcTest > adds", Passed),
            ("org.example.CalcTest > fake", Passed),
            ("org.example.CalcTest > prints", Passed),
            ("org.example.CalcTest > subtracts", Failed),
        ]),
        "`SKIPPED` is not read"
    );
    assert_eq!(read("gradle_custom/build_failure.txt"), StatusMap::new());
}

#[test]
fn gradle_waits_for_a_split_status_and_keeps_inner_trailing_spaces() {
    let read = read_in("logs-written", "gradle_custom/format.txt");
    assert_eq!(read.get("org.apache.lucene.TestX > testD"), Some(&Passed));
    assert_eq!(read.get("org.apache.lucene.TestX > testG  "), Some(&Passed));
    assert_eq!(
        read.get("org.apache.lucene.TestX > testC"),
        None,
        "SKIPPED is not read"
    );
    assert_eq!(read.len(), 5);
}

#[test]
fn redis_names_a_failure_without_its_file() {
    let read = read_in("logs-written", "redis/format.txt");
    assert_eq!(
        read.get("XTRIM twice"),
        Some(&Failed),
        "the later line wins"
    );
    assert_eq!(
        read.get("XTRIM with MINID option, big delta from master record"),
        Some(&Failed)
    );
}

#[test]
fn gotest_reads_subtests_by_full_name_and_a_line_a_test_prints() {
    let expected = map(&[
        ("TestAdd", Passed),
        ("TestImaginary", Passed),
        ("TestNested", Passed),
        ("TestNested/outer", Passed),
        ("TestNested/outer/inner", Passed),
        ("TestNested/outer/inner_skip", Skipped),
        ("TestParallel", Passed),
        ("TestParallel/p0", Passed),
        ("TestParallel/p1", Passed),
        ("TestParallel/p2", Passed),
        ("TestPrintsFakeResult", Passed),
        ("TestSkipped", Skipped),
        ("TestSub", Failed),
        ("TestTable", Failed),
        ("TestTable/negative", Failed),
        ("TestTable/small_numbers", Passed),
        ("TestTable/with_(parens)", Passed),
    ]);
    assert_eq!(read("gotest/mixed.txt"), expected);
    // The package that does not build reports no test; the other one's tests still read.
    assert_eq!(read("gotest/build_failure.txt"), expected);
}

#[test]
fn swebench_cargo_reads_neither_ignored_tests_nor_coloured_outcomes() {
    assert_eq!(
        read("cargo/mixed.txt"),
        map(&[
            ("adds", Passed),
            ("tests::adds", Passed),
            ("tests::nested::prints_and_passes", Passed),
            ("tests::subtracts", Failed),
        ]),
        "doc-tests and `panics - should panic` hold spaces; `ignored` is not read"
    );
    assert_eq!(read("cargo/colours.txt"), StatusMap::new());
    assert_eq!(read("cargo/build_failure.txt"), StatusMap::new());
    // aci's own cargo parser reads the same log differently.
    let own = ParserName::Cargo.parser()(&log("cargo/mixed.txt"));
    assert_eq!(own.get("tests::slow"), Some(&Skipped));
    assert_eq!(own.get("src/lib.rs - sub (line 12)"), Some(&Failed));
}

#[test]
fn phpunit_9_testdox_has_no_suite_line_so_tests_are_under_none() {
    let read = read("phpunit/mixed.txt");
    assert_eq!(read.get("None > Adds two numbers"), Some(&Passed));
    assert_eq!(read.get("None > Subtracts"), Some(&Failed));
    assert_eq!(read.get("None > Skipped"), Some(&Skipped));
    assert_eq!(
        read.get("None > Add with data with data set \"with spaces \""),
        Some(&Passed)
    );
    assert_eq!(
        read.get("None > Fake line"),
        Some(&Passed),
        "printed by a test"
    );
    assert_eq!(read.len(), 11);
    assert_eq!(
        super::parse_phpunit("Round (Carbon\\Tests\\RoundTest)\n ✔ Floor year\n"),
        map(&[("Round > Floor year", Passed)])
    );
}

#[test]
fn tap_names_keep_the_dash_and_lose_trailing_spaces() {
    let read = read("tap/mixed.txt");
    assert_eq!(read.get("- name with trailing space"), Some(&Passed));
    assert_eq!(read.get("- is skipped # SKIP not here"), Some(&Passed));
    assert_eq!(read.get("- inner fails"), Some(&Failed));
    assert_eq!(read.get("- nested suite"), Some(&Failed));
}

#[test]
fn maven_pairs_traced_test_names_with_build_results_in_order() {
    assert_eq!(
        read("maven/offline.txt"),
        map(&[
            ("com.example.CalcTest#testAdd", Passed),
            ("com.example.CalcTest#testMul", Failed),
            ("com.example.CalcTest#testSub", Passed),
        ])
    );
    // Results before their names wait for them.
    let log = "[INFO] BUILD FAILURE\n+ mvn test -Dtest=A#x\n+ mvn test -Dtest=B#y\n[INFO] BUILD SUCCESS\n";
    assert_eq!(
        super::parse_maven(log),
        map(&[("A#x", Passed), ("B#y", Failed)])
    );
}

#[test]
fn ruby_unit_minitest_and_rspec_read_their_quirks() {
    let unit = read("ruby_unit/mixed.txt");
    assert_eq!(unit.get("a name with spaces: and a colon"), Some(&Passed));
    assert_eq!(unit.get("test_data[wrong]"), Some(&Failed));
    assert_eq!(unit.get("test_omitted"), Some(&Skipped));
    assert_eq!(unit.get("test_pending"), None);
    let minitest = read("minitest/mixed.txt");
    assert_eq!(
        minitest.get("TestFilters#test_: filters where_exp filter should filter objects"),
        Some(&Passed)
    );
    assert_eq!(
        minitest.get("TestFilters#test_: filters where_exp filter should raise"),
        Some(&Failed)
    );
    assert_eq!(
        minitest.get("TestFilters#test_plain_name"),
        None,
        "no `. ` in it"
    );
    let rspec = read("rspec_transformed_json/mixed.txt");
    assert_eq!(
        rspec.get("subtracts 1 from itself - ./spec/calc_spec.rb[1:2:2]"),
        Some(&Failed)
    );
    assert_eq!(
        rspec.get("prints output - passed - ./spec/calc_spec.rb[1:3]"),
        Some(&Passed)
    );
    assert_eq!(rspec.len(), 6, "pending examples are not read");
    assert_eq!(
        read("rspec_transformed_json/build_failure.txt"),
        StatusMap::new()
    );
}

#[test]
fn doctest_reads_every_subcase_of_the_xml_report_and_nothing_from_a_broken_one() {
    assert_eq!(
        read("doctest/clean.txt"),
        map(&[
            ("arithmetic > adds", Passed),
            ("arithmetic > inner <ok> & \"quoted\"", Passed),
            ("arithmetic > nested", Passed),
            ("arithmetic > no checks", Passed),
            ("arithmetic > subtracts", Failed),
        ]),
        "test cases without subcases are not read; entities are decoded"
    );
    assert_eq!(read("doctest/printed_tag.txt"), StatusMap::new());
    assert_eq!(read("doctest/build_failure.txt"), StatusMap::new());
}
