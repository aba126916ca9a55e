//! Grading patches the way the SWE-bench harness does (v4 semantics, with its known holes
//! closed). Pure parts: predictions in, the built-in SWE-bench specs and each instance's grading
//! plan, the eval scripts in stages and the apply chain ([`script`]), the test infrastructure put
//! back before the tests ([`infra`]), the canary tests that decide whether a run can be trusted
//! ([`canary`]), the tripwires that confirm a resolved run ([`tripwire`]), the scan of what a
//! patch adds ([`reach`]), the patch's changes to test infrastructure and to `.git`
//! ([`suspicious`]), the work tree a build sandbox hands on ([`tree`]), log parsing (any harness's
//! log format), grading, why an evaluation did not resolve ([`cause`]) and the reports out.
//! Effectful parts: [`container`] (one evaluation in
//! fresh sandboxes, in stages), [`run`] (bounded concurrency, resume, the tripwire run, files) and
//! [`from_logs`] (grading logs that already exist).

pub mod canary;
pub mod cause;
pub mod container;
pub mod from_logs;
pub mod grade;
pub mod infra;
pub mod logs;
pub mod parse;
pub use crate::provision::grading as plan;
pub mod predictions;
pub mod reach;
pub mod report;
pub mod run;
pub mod script;
pub use crate::spec;
pub mod suspicious;
pub mod tree;
pub mod tripwire;

#[cfg(test)]
pub(crate) use crate::provision::swebench_data_dir;

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    /// Every regular expression and table written as a literal in the code is compiled here, so
    /// a typo fails this test instead of panicking in a run (they used to fail silently, as
    /// "no match": no hunk counts, no ANSI stripping). Each pattern must also find a sample of
    /// what it is for.
    #[test]
    fn every_literal_regex_and_the_builtin_specs_compile() {
        use super::parse::summary;
        let patterns: [(&LazyLock<regex::Regex>, &str); 12] = [
            (&super::script::HUNK_HEADER, "@@ -1,2 +1,3 @@ fn main"),
            (
                &summary::PYTEST_SUMMARY,
                "=== 1 failed, 3 passed in 0.12s ===",
            ),
            (&summary::COUNT, "3 passed"),
            (
                &summary::CARGO_RESULT,
                "test result: ok. 2 passed; 0 failed; 0 ignored;",
            ),
            (&summary::UNITTEST_RAN, "Ran 9 tests in 0.001s"),
            (
                &summary::SYMPY_SUMMARY,
                "== tests finished: 8 passed, 2 failed, in 0.08 seconds ==",
            ),
            (&crate::text::pattern::ANSI_ESCAPE, "\x1b[31mFAILED\x1b[0m"),
            (&super::parse::CARGO_TEST_LINE, "test tests::adds ... ok"),
            (&super::parse::SUITE_RAN, "=== 3 passed in 0.1s ==="),
            (&crate::image::spec_env::PACKAGE_NAME, "numpy==1.19.2"),
            (&crate::image::spec_env::PIP_VERSIONS, "<3.9.0,>=3"),
            (
                &crate::image::env::QUOTED_RUN,
                "The command '/bin/sh -c sh /setup.sh' returned a non-zero code: 1",
            ),
        ];
        let unmatched: Vec<&str> = patterns
            .into_iter()
            .filter(|(pattern, sample)| !LazyLock::force(pattern).is_match(sample))
            .map(|(_, sample)| sample)
            .collect();
        assert_eq!(unmatched, Vec::<&str>::new());
        assert!(LazyLock::force(&crate::spec::BUILTIN).repos().count() > 0);
    }
}
