//! `aci images build`, `aci images push` and `aci images prune`: the images aci runs tasks in.

use std::collections::BTreeMap;
use std::process::ExitCode;

use aci::hint::with_hint;
use aci::image;
use aci::image::prune::{PruneScope, prune as prune_images, prune_pulled};
use aci::image::pull::Notes;
use aci::image::push::{Published, base_images, credentials_for, push_images};
use aci::provision::{ProvisionRequest, Provisioner};
use aci::text::escape_controls;

use super::{Failure, connect_docker, load_instances, settings};
use crate::cli::PushArgs;

/// `aci images build`.
pub async fn build(
    lang: &str,
    force: bool,
    debian: image::release::DebianRelease,
) -> Result<ExitCode, Failure> {
    let mut progress = |line: &str| eprintln!("{}", escape_controls(line));
    let languages =
        image::languages_in_release(image::select_languages(lang)?, debian, &mut progress)?;
    let runtime = connect_docker().await?;
    let built = image::build_release(&runtime, debian, &languages, force, &mut progress).await?;
    for image in built {
        let state = if image.built { "built" } else { "up to date" };
        println!("{}\t{}\t{state}", image.tag, image.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// `aci images push`: each instance prepared as a run prepares it (its image pulled as
/// `env.pull` says, its repository found, its environment image built when missing), then the
/// base, language and environment images pushed.
pub async fn push(args: PushArgs) -> Result<ExitCode, Failure> {
    let settings = settings::resolve(&args.config, None)?;
    let env = &settings.config.env;
    let instances = load_instances(&args.instances)?;
    if instances.is_empty() {
        return Err(Failure::new(format!(
            "{} holds no usable instance",
            args.instances.display()
        )));
    }
    let docker = connect_docker().await?;
    let credentials = credentials_for(&args.registry).map_err(|e| Failure::new(e.to_string()))?;
    let mut progress = |line: &str| eprintln!("{}", escape_controls(line));
    // Each instance's base image (for a spec's environment, its release's Python image) and
    // the Debian base under it, as its plan says.
    let provisioner = Provisioner::new();
    let mut bases = BTreeMap::new();
    for instance in &instances {
        let image = provisioner.plan(instance, env)?.image;
        if let Some(base) = image.base() {
            bases.insert(base, image.debian_base());
        }
    }
    let mut tags = base_images(&docker, &bases, &mut progress).await?;
    let mut failed = Vec::new();
    let quiet = |_: &str| {};
    let notes = Notes::quiet();
    let request = ProvisionRequest {
        env,
        run_id: "aci-images-push",
        on_step: &quiet,
        notes: &notes,
    };
    for instance in &instances {
        match provisioner.provision(&docker, instance, &request).await {
            Ok(prepared) => {
                if !tags.contains(&prepared.env_image.tag) {
                    tags.push(prepared.env_image.tag);
                }
            }
            Err(error) => failed.push((instance.instance_id.clone(), with_hint(&error))),
        }
    }
    let images = push_images(
        &docker,
        &tags,
        &args.registry,
        credentials.as_ref(),
        &mut progress,
    )
    .await
    .map_err(|e| {
        Failure::new(e.to_string())
            .hint("is the registry reachable, and `docker login` done for it?")
    })?;
    for image in &images {
        let state = match image.state {
            Published::Pushed => "pushed",
            Published::Present => "present",
        };
        println!("{}\t{state}", escape_controls(&image.reference));
    }
    for (id, error) in &failed {
        eprintln!("{}", escape_controls(&format!("error: {id}: {error}")));
    }
    let pushed = images
        .iter()
        .filter(|image| image.state == Published::Pushed)
        .count();
    eprintln!(
        "{} image(s) in {}: {pushed} pushed, {} already there",
        images.len(),
        args.registry,
        images.len() - pushed
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::new(format!(
            "{} instance(s) of {} have no environment image; the others were pushed",
            failed.len(),
            args.instances.display()
        )))
    }
}

/// `aci images prune`.
pub async fn prune(run_id: Option<String>, all: bool, pulled: bool) -> Result<ExitCode, Failure> {
    let scope = match (run_id, all) {
        (Some(run_id), _) => PruneScope::Run(run_id),
        (None, true) => PruneScope::All,
        (None, false) => PruneScope::AllEnv,
    };
    let docker = connect_docker().await?;
    let mut pruned = prune_images(&docker, &scope).await?;
    if pulled {
        pruned.extend(prune_pulled(&docker).await?);
    }
    for image in &pruned {
        if image.removed {
            println!("removed\t{}\t{}", escape_controls(&image.name), image.id);
        } else {
            eprintln!(
                "kept {} ({}): a container still uses it",
                escape_controls(&image.name),
                image.id
            );
        }
    }
    let removed = pruned.iter().filter(|image| image.removed).count();
    eprintln!("removed {removed} image(s)");
    Ok(ExitCode::SUCCESS)
}
