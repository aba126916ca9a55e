//! The fast lane's integration tests, in one binary: those that need no Docker daemon, no root
//! and no network (the agent loop and the model clients against a local HTTP server, the lint
//! corpus, the layering of the modules, `aci batch` and `aci inspect` on the local runtime,
//! SWE-bench's log formats and selection). Each module is one former test file. The command
//! that runs this lane is in CONTRIBUTING.md.

#[path = "../batch_support/mod.rs"]
mod batch_support;
#[path = "../support/mod.rs"]
mod support;

mod agent_loop;
mod bad_input;
mod batch;
mod doc_links;
mod inspect;
mod layering;
mod lint_corpus;
mod mini_swe_agent;
mod model_http;
mod multilingual_map;
mod plan;
mod project_config;
mod record_fields;
mod record_spec;
mod selection;
mod swe_agent_1;
mod swebench_logs;
mod switches;
mod trajectory_readers;
