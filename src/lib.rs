//! aci runs LLM coding agents on SWE-bench-style tasks through the Agent-Computer Interface of
//! the SWE-agent paper, one Docker container per task.
//!
//! A turn: the model answers the prompt; the parser turns the answer into an action; the ACI
//! runs the action against the [`sandbox::Sandbox`] and returns an observation; the stop
//! decider says continue or stop; the trajectory is saved. `submit` writes the diff out as a
//! patch.
//!
//! Dependencies point one way: `main` → `batch`/`eval` → `agent` → `aci`/`lint`/`model`/`sandbox`
//! → plain data. Only `sandbox::docker` speaks to Docker.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod ablate;
pub mod aci;
pub mod agent;
pub mod batch;
pub mod config;
pub mod eval;
pub mod image;
pub mod inspect;
pub mod instance;
pub mod lint;
pub mod model;
pub mod sandbox;
pub mod source;
pub mod tls;
pub mod trajectory;
pub mod validate;
