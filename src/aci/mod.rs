//! The Agent-Computer Interface. The pure parts: command specs ([`registry`]), the file viewer
//! ([`window`]), line-range edits ([`edit`]), summarised search ([`search`]), shell-like
//! argument splitting ([`args`]), multi-line action splitting ([`action`]), model-output
//! parsing ([`parse`]), v0's reading of shell output ([`observation`]) and what keeps a
//! submitted patch UTF-8 ([`submission`]). [`session`] puts
//! them on a sandbox: it reads and writes bytes and runs the shell commands these modules build.

pub mod action;
pub mod args;
pub mod bash_only;
pub mod edit;
pub mod observation;
pub mod parse;
pub mod registry;
pub mod search;
pub mod session;
pub mod str_replace_editor;
pub mod submission;
pub mod window;

pub use session::{Aci, State, StepOutput};
