//! An instance's environment, decided once and then provisioned: [`plan::plan`] decides, from
//! the record, the configuration and the spec table alone, which image the instance runs on
//! and how it is had, where its repository comes from, what is layered on top, and how it is
//! tested; the [`Provisioner`] carries a plan out (pulls, clones, builds, publishes to a
//! cluster's registry) and says what it provisioned. Every command reads the plan or the
//! provisioner's result; none decides any of it again.

pub mod grading;
pub mod language;
pub mod plan;
mod provisioner;

pub use plan::{EnvPlan, ImagePlan, LayerPlan, RepoPlan, plan};
pub use provisioner::{EVAL_OUTPUT_LIMIT, ProvisionRequest, Provisioned, Provisioner, SpecUse};

use crate::config::EnvConfig;
use crate::instance::Instance;
use crate::spec::SpecError;

/// The plans of `instances` under `env` as JSON lines, one per instance, for `--plan`. On the
/// host (`--runtime local`) there is no image to take the repository from.
///
/// # Errors
/// A spec file of `env.specs` cannot be read or is invalid.
pub fn plan_lines(
    instances: &[Instance],
    env: &EnvConfig,
    on_host: bool,
) -> Result<Vec<String>, SpecError> {
    let provisioner = Provisioner::new();
    instances
        .iter()
        .map(|instance| {
            let mut plan = provisioner.plan(instance, env)?;
            if on_host {
                plan.repository = plan.repository.on_host();
            }
            Ok(plan.to_json().to_string())
        })
        .collect()
}

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
