//! aci runs LLM coding agents on SWE-bench-style tasks through the Agent-Computer Interface of
//! the SWE-agent paper, one Docker container per task.
//!
//! A turn: the model answers the prompt; the parser turns the answer into an action; the ACI
//! runs the action against the [`sandbox::Sandbox`] and returns an observation; the stop
//! decider says continue or stop; the trajectory is saved. `submit` writes the diff out as a
//! patch.
//!
//! # Layers
//!
//! Dependencies point one way: a module imports only modules of lower layers, never one of its
//! own layer or above. `tests/fast/layering.rs` reads this list and checks every `crate::` path
//! (and every `super::` that leaves its module) against it. The binary (`main.rs`, `cli.rs` and
//! `commands/`, one file per command) stands on all of them. Only `sandbox::docker` speaks to
//! Docker, and only `sandbox::k8s` to a Kubernetes API server.
//!
//! 1. `hint` — what to do about an error, kept apart from its message.
//! 2. `files`, `protocol`, `text`, `secret`, `tls`, `instance`, `lint`, `spec`, `error_chain`, `http` —
//!    leaves: atomic writes; the data the layers hand each other (roles, exit statuses,
//!    predictions); placeholders, literal regular expressions and escaped names; the credentials
//!    held and their scrubbing; the TLS provider; task instances; the lint verdict; SWE-bench's
//!    specifications, which grading and environments both read; an error and its causes as one
//!    line; the head of an HTTP request, for aci's two small servers.
//! 3. `config`, `trajectory`, `patch` — the configuration schema and its data types; `.traj`
//!    files; reading a diff.
//! 4. `sandbox`, `model` — the sandboxes commands run in; the language models.
//! 5. `aci`, `image` — the Agent-Computer Interface over a sandbox; environment images.
//! 6. `agent`, `source`, `engine` — the loop: prompt, parse, act, decide, save; where an
//!    instance's repository comes from; where tasks run (Docker, the host, or Kubernetes:
//!    `--runtime docker|local`, `--engine docker|k8s`).
//! 7. `provision` — the pure environment plan of an instance (its image, repository, layer,
//!    test command) and the provisioner that carries plans out.
//! 8. `batch`, `eval`, `ablate` — running instances; grading patches; comparing runs.
//! 9. `inspect`, `validate`, `failure` — the trajectory inspector over runs and ablations;
//!    checking a dataset by grading its gold and empty patches; the hint of a failure, found
//!    along its error's sources.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

pub mod ablate;
pub mod aci;
pub mod agent;
pub mod batch;
pub mod config;
pub mod engine;
pub mod error_chain;
pub mod eval;
pub mod failure;
pub mod files;
pub mod hint;
pub mod http;
pub mod image;
pub mod inspect;
pub mod instance;
pub mod lint;
pub mod model;
pub mod patch;
pub mod protocol;
pub mod provision;
pub mod sandbox;
pub mod secret;
pub mod source;
pub mod spec;
pub mod text;
pub mod tls;
pub mod trajectory;
pub mod validate;
