//! Grading patches the way the SWE-bench harness does (v4 semantics, with its known holes
//! closed). Pure parts: predictions in, the eval and apply scripts, log parsing, grading and the
//! reports out. Effectful parts: [`container`] (one evaluation in a fresh container) and
//! [`run`] (bounded concurrency, resume, files).

pub mod container;
pub mod grade;
pub mod parse;
pub mod predictions;
pub mod report;
pub mod run;
pub mod script;
pub mod spec;
