//! The integration tests that need the real Docker daemon (and some of them root, chromium, a
//! registry on loopback, the Kubernetes API stand-in or PyPI), in one binary; they fail
//! loudly, never skip, when what they need is missing. Each module is one former test file.
//! `panic_guard` and `sandbox_memory` are binaries of their own: the guard removes every
//! container of its process, and the memory test reads its process's peak RSS.

#[path = "../batch_support/mod.rs"]
mod batch_support;
#[path = "../support/k8s/mod.rs"]
mod standin;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/webdriver.rs"]
mod webdriver;

mod ablate;
mod aci_cli;
mod aci_commands;
mod aci_scenarios;
mod aci_submit;
mod agent_trajectory;
mod baseline;
mod batch_docker;
mod batch_k8s;
mod canary_languages;
mod causes;
mod config_ranges;
mod demo_multilingual;
mod disk_quota;
mod env_image;
mod eval;
mod faults;
mod image_history;
mod images_push;
mod inspect_browser;
mod lint_differential;
mod lint_languages;
mod mini_side_by_side;
mod mini_swe_agent;
mod podman;
mod record_spec;
mod remote_docker;
mod remote_ssh;
mod resolve_as_of;
mod sandbox;
mod sandbox_docker;
mod sandbox_k8s;
mod spec_env;
mod swe_agent_1;
mod swebench_images;
