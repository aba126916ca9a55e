//! `manifest.json` of `aci run` and `aci batch`: the resolved configuration, its hash, the
//! harness version, the images with their ids and digests, the model and the seed.

use std::path::Path;

use aci::batch::{RunContext, output};
use aci::image::env::EnvImage;
use aci::instance::Instance;
use aci::sandbox::docker::DockerRuntime;

use super::Failure;
use crate::cli::AgentArgs;

/// Writes `manifest.json` into the run's output directory.
pub async fn write_manifest(
    ctx: &RunContext,
    args: &AgentArgs,
    instances_file: &Path,
    seed: Option<u64>,
    docker: Option<&DockerRuntime>,
    instances: &[&Instance],
) -> Result<(), Failure> {
    let mut images = std::collections::BTreeMap::new();
    if let Some(docker) = docker {
        for instance in instances {
            let plan = ctx.plan(instance)?;
            // The image the instance starts from: for a spec's environment, the Python image
            // of its release that it is built on.
            let Some(tag) = plan.image.base() else {
                continue;
            };
            if images.contains_key(&tag) {
                continue;
            }
            let Some(info) = docker.inspect_image(&tag).await? else {
                // An image from a registry is pulled (or fails) with its instance, and a
                // spec's environment without its release's image fails with a hint; the
                // trajectory records the id it ran in.
                if !matches!(plan.image, aci::provision::ImagePlan::Built { .. }) {
                    continue;
                }
                return Err(Failure::new(format!("the image {tag} does not exist"))
                    .hint("run `aci images build`"));
            };
            images.insert(
                tag,
                output::ImageRecord {
                    id: info.id,
                    digests: info.digests,
                },
            );
        }
    }
    let config = serde_json::to_value(&ctx.config).map_err(|e| {
        Failure::new(format!(
            "cannot record the configuration in {}: {e}",
            ctx.output.join("manifest.json").display()
        ))
    })?;
    let mut config_files = vec!["configs/default.yaml (built in)".to_owned()];
    config_files.extend(
        super::settings::project_config(args.config.no_project_config)
            .map(|path| format!("{} (project config)", path.display())),
    );
    config_files.extend(args.config.configs.iter().map(|p| p.display().to_string()));
    let manifest = output::Manifest {
        aci_version: env!("CARGO_PKG_VERSION").to_owned(),
        run_id: ctx.run_id.clone(),
        model: ctx.model.clone(),
        runtime: ctx.engine.kind().name().to_owned(),
        instances: instances_file.display().to_string(),
        config_files,
        config_sets: args.config.sets.clone(),
        config_hash: ctx.config.hash(),
        config,
        images,
        seed,
        locks: output::read_manifest_locks(&ctx.output),
    };
    output::write_manifest(&ctx.output, &manifest).map_err(|e| {
        Failure::new(format!(
            "cannot write {}: {e}",
            ctx.output.join("manifest.json").display()
        ))
    })
}

/// Adds to `manifest.json` the locks of the environment images the run's instances ran in
/// (`provisioned`), and of the spec layers under them: read from their labels, so a user (or
/// `aci images`) finds the versions in the run's output. An image without a lock label (not
/// resolved as of a date) adds nothing; an image that cannot be inspected is left out, and a
/// manifest that cannot be rewritten is a warning: the instances' results stand.
pub async fn record_locks(output: &Path, docker: Option<&DockerRuntime>, provisioned: &[EnvImage]) {
    let Some(docker) = docker else {
        return;
    };
    let mut locks = std::collections::BTreeMap::new();
    for image in provisioned {
        for (tag, reference) in [
            (&image.tag, &image.id),
            (&image.base_image, &image.base_image),
        ] {
            if tag.is_empty() || locks.contains_key(tag) {
                continue;
            }
            if let Ok(Some(info)) = docker.inspect_image(reference).await
                && let Some(lock) = output::LockRecord::from_labels(&info.id, &info.labels)
            {
                locks.insert(tag.clone(), lock);
            }
        }
    }
    if let Err(e) = output::add_manifest_locks(output, locks) {
        eprintln!(
            "warning: cannot add the environments' locks to {}: {e}",
            output.join("manifest.json").display()
        );
    }
}

/// Resuming into a directory written with another configuration mixes results: say so.
pub fn warn_on_config_change(output: &Path, hash: &str, redo: bool) {
    let Ok(text) = std::fs::read(output.join("manifest.json")) else {
        return;
    };
    let old = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("config_hash")?.as_str().map(str::to_owned));
    if let Some(old) = old
        && old != hash
        && !redo
    {
        eprintln!(
            "warning: {} was written with another configuration (hash {old}); instances it \
             finished are skipped and keep their results\nhint: use --redo, or a new --output",
            output.display()
        );
    }
}
