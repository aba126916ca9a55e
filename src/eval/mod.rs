//! Grading patches the way the SWE-bench harness does (v4 semantics, with its known holes
//! closed). Pure parts: predictions in, the built-in SWE-bench specs and each instance's grading
//! plan, the eval and apply scripts, the canary tests that decide whether a run can be trusted
//! ([`canary`]), the patch's changes to test infrastructure and to `.git` ([`suspicious`]), log
//! parsing (any harness's log format), grading and the reports out. Effectful parts: [`container`] (one evaluation in a fresh container), [`run`]
//! (bounded concurrency, resume, files) and [`from_logs`] (grading logs that already exist).

pub mod canary;
pub mod container;
pub mod from_logs;
pub mod grade;
pub mod logs;
pub mod parse;
pub mod plan;
pub mod predictions;
pub mod report;
pub mod run;
pub mod script;
pub mod spec;
pub mod suspicious;

/// The directory of the real SWE-bench data the tests read (`lite.jsonl`, `harness-logs/`,
/// `harness-verdicts.json`): `ACI_SWEBENCH_DATA`, else `../shared/swebench` beside the crate.
/// A test that needs it fails, never skips, when it is missing.
#[cfg(test)]
pub(crate) fn swebench_data_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        std::path::PathBuf::from,
    );
    assert!(
        dir.join("lite.jsonl").is_file(),
        "the SWE-bench data is missing: {} has no lite.jsonl\nhint: set ACI_SWEBENCH_DATA to \
         the directory that holds lite.jsonl, harness-logs/ and harness-verdicts.json",
        dir.display()
    );
    dir
}
