//! Grading patches the way the SWE-bench harness does, pure parts only: predictions in, the
//! eval and apply scripts, log parsing, grading, and the reports out. Running containers is the
//! caller's job.

pub mod grade;
pub mod parse;
pub mod predictions;
pub mod report;
pub mod script;
