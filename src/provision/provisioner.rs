//! The provisioner: it carries out an instance's [`EnvPlan`] (pulls its image, finds its
//! repository, builds its environment image, publishes images to a cluster's registry) and
//! says what it provisioned. The caches and locks of a run are its fields, so that two runs
//! in one process share nothing they did not ask to share.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::plan::{EnvPlan, ImagePlan, plan};
use crate::config::EnvConfig;
use crate::engine::{Cluster, Engine};
use crate::image::LABEL_IMAGE;
use crate::image::env::{BuildLocks, EnvBase, EnvImage, EnvImageError, EnvRequest};
use crate::image::pull::{Notes, PullLocks, ensure_image};
use crate::image::push::publish_one;
use crate::image::spec_env::SpecEnvError;
use crate::instance::Instance;
use crate::sandbox::docker::{DockerError, DockerRuntime};
use crate::sandbox::{OutputLimit, RepoSource, ResourceLimits, SandboxError, SandboxSpec};
use crate::source::mirror::MirrorStates;
use crate::source::{FoundRepository, Origin, PrepareError, RepoRequest, SeenImages};
use crate::spec::{SpecError, SpecTable, TableCache};

/// Output kept per command of an evaluation: the head and the tail around an elision note.
/// Far above the agent's limit, so that a long test log keeps its start marker, its results
/// and its end marker and exit code (the log is held in memory only up to this bound).
pub const EVAL_OUTPUT_LIMIT: OutputLimit = OutputLimit {
    head: 8 * 1024 * 1024,
    tail: 8 * 1024 * 1024,
};

/// Carries out environment plans; holds what one run knows of images, mirrors and builds.
#[derive(Debug, Default)]
pub struct Provisioner {
    tables: TableCache,
    builds: BuildLocks,
    pulls: PullLocks,
    seen: SeenImages,
    mirrors: MirrorStates,
    /// References known to be in a cluster's registry; one lock per reference so that two
    /// tasks needing the same image push it once.
    published: Mutex<HashMap<String, Arc<tokio::sync::Mutex<bool>>>>,
    /// The environment images found or built so far, by tag (for the manifest's locks).
    env_images: Mutex<std::collections::BTreeMap<String, EnvImage>>,
}

/// What [`Provisioner::provision`] needs besides the instance.
pub struct ProvisionRequest<'a> {
    /// Images, repo_dir, the mirror cache, pull policy, build limits.
    pub env: &'a EnvConfig,
    /// Recorded on environment images built now.
    pub run_id: &'a str,
    /// Receives an environment image build's steps.
    pub on_step: &'a (dyn Fn(&str) + Send + Sync),
    /// Receives the progress of pulls and clones.
    pub notes: &'a Notes<'a>,
}

/// What was provisioned for an instance. `E` is what it starts in: an [`EnvImage`] on Docker
/// (and for a cluster), `()` on the host (the local runtime), so a container with no
/// environment image cannot be expressed.
#[derive(Debug, Clone)]
pub struct Provisioned<E = EnvImage> {
    /// The plan carried out.
    pub plan: EnvPlan,
    /// The image that runs.
    pub env_image: E,
    /// The commit the image's repository must be checked out at (repository from the image).
    pub checkout: Option<String>,
    /// Where the repository came from.
    pub origin: Origin,
}

/// What a sandbox is for: the agent's session, or an evaluation (no network, eval's output
/// limit, and `eval.sh` activates the environment itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecUse {
    /// The agent's session.
    Agent,
    /// An evaluation.
    Eval,
}

impl Provisioner {
    /// A provisioner that knows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The spec table of `files` (`env.specs`) over the built-in one, read once.
    ///
    /// # Errors
    /// A spec file cannot be read or is invalid.
    pub fn table(&self, files: &[PathBuf]) -> Result<Arc<SpecTable>, SpecError> {
        self.tables.table(files)
    }

    /// The plan of `instance` under `env` ([`plan`]).
    ///
    /// # Errors
    /// A spec file of `env.specs` cannot be read or is invalid.
    pub fn plan(&self, instance: &Instance, env: &EnvConfig) -> Result<EnvPlan, SpecError> {
        Ok(plan(instance, env, &*self.table(&env.specs)?))
    }

    fn plan_for_instance(
        &self,
        instance: &Instance,
        env: &EnvConfig,
    ) -> Result<EnvPlan, EnvImageError> {
        self.plan(instance, env).map_err(|source| {
            EnvImageError::Spec(SpecEnvError::Table {
                instance_id: instance.instance_id.clone(),
                source,
            })
        })
    }

    /// Provisions `instance` on Docker as its plan says: its image (pulled as `env.pull` says
    /// when it comes from a registry), its repository, and its environment image.
    ///
    /// # Errors
    /// [`PrepareError`]: no image, no repository, or no environment image.
    pub async fn provision(
        &self,
        runtime: &DockerRuntime,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<Provisioned, PrepareError> {
        let plan = self.plan_for_instance(instance, request.env)?;
        let id = &instance.instance_id;
        match &plan.image {
            ImagePlan::Unbuildable(error) => {
                return Err(PrepareError::Env(EnvImageError::Spec(error.clone())));
            }
            ImagePlan::Pulled {
                reference, policy, ..
            } => {
                ensure_image(runtime, reference, *policy, id, request.notes, &self.pulls).await?;
            }
            ImagePlan::Built { .. } | ImagePlan::Spec(_) => {}
        }
        let found = self
            .find_repository(Some(runtime), &plan, instance, request)
            .await?;
        // The environment image takes the repository from where it was found on the host.
        let mut layered = instance.clone();
        layered.repo_path = found.origin.host_path().map(PathBuf::from);
        let env_request = EnvRequest {
            env: request.env,
            run_id: request.run_id,
            on_step: request.on_step,
        };
        let env_image = self
            .env_image_of(runtime, &plan, &layered, &env_request)
            .await?;
        Ok(Provisioned {
            plan,
            env_image,
            checkout: found.checkout,
            origin: found.origin,
        })
    }

    /// Provisions `instance` on the host (the local runtime, which has no image): its
    /// repository only, from its `repo_path` or a mirror.
    ///
    /// # Errors
    /// [`PrepareError::NoRepository`]: neither has it.
    pub async fn provision_on_host(
        &self,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<Provisioned<()>, PrepareError> {
        let plan = self.plan_for_instance(instance, request.env)?;
        let found = self.find_repository(None, &plan, instance, request).await?;
        Ok(Provisioned {
            plan,
            env_image: (),
            checkout: found.checkout,
            origin: found.origin,
        })
    }

    async fn find_repository(
        &self,
        runtime: Option<&DockerRuntime>,
        plan: &EnvPlan,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<FoundRepository, PrepareError> {
        let repo_request = RepoRequest {
            runtime,
            instance_id: &instance.instance_id,
            repo: &instance.repo,
            commit: plan.commit.as_deref(),
            also: match &plan.image {
                ImagePlan::Spec(_) => instance.environment_setup_commit.as_deref(),
                _ => None,
            },
            notes: request.notes,
            seen: &self.seen,
            mirrors: &self.mirrors,
        };
        let missing = |image: &str| match &plan.image {
            ImagePlan::Spec(spec) => EnvImageError::MissingRelease {
                instance_id: instance.instance_id.clone(),
                image: image.to_owned(),
                release: spec.release,
            },
            _ => EnvImageError::MissingBase {
                instance_id: instance.instance_id.clone(),
                image: image.to_owned(),
            },
        };
        crate::source::find_repository(&plan.repository, &repo_request, missing).await
    }

    /// Finds or builds the environment image of `instance` (its repository at its
    /// `repo_path`), on what its plan says.
    ///
    /// # Errors
    /// [`EnvImageError`]: the spec table or the spec cannot be used, the base is missing, the
    /// build fails.
    pub async fn env_image(
        &self,
        runtime: &DockerRuntime,
        instance: &Instance,
        request: &EnvRequest<'_>,
    ) -> Result<EnvImage, EnvImageError> {
        let plan = self.plan_for_instance(instance, request.env)?;
        self.env_image_of(runtime, &plan, instance, request).await
    }

    /// The environment images this provisioner found or built, sorted by tag.
    pub fn env_images(&self) -> Vec<EnvImage> {
        self.env_images
            .lock()
            .map(|images| images.values().cloned().collect())
            .unwrap_or_default()
    }

    async fn env_image_of(
        &self,
        runtime: &DockerRuntime,
        plan: &EnvPlan,
        instance: &Instance,
        request: &EnvRequest<'_>,
    ) -> Result<EnvImage, EnvImageError> {
        let image = self
            .find_env_image(runtime, plan, instance, request)
            .await?;
        if let Ok(mut images) = self.env_images.lock() {
            images.insert(image.tag.clone(), image.clone());
        }
        Ok(image)
    }

    async fn find_env_image(
        &self,
        runtime: &DockerRuntime,
        plan: &EnvPlan,
        instance: &Instance,
        request: &EnvRequest<'_>,
    ) -> Result<EnvImage, EnvImageError> {
        let base = match &plan.image {
            ImagePlan::Built { reference, .. } | ImagePlan::Pulled { reference, .. } => reference,
            ImagePlan::Unbuildable(error) => return Err(EnvImageError::Spec(error.clone())),
            ImagePlan::Spec(spec) => {
                let table = self.plan_table(instance, request.env)?;
                let entry = table.lookup(&spec.repo, &spec.version).map_err(|_| {
                    EnvImageError::MissingRelease {
                        instance_id: instance.instance_id.clone(),
                        image: spec.base(),
                        release: spec.release,
                    }
                })?;
                let base = EnvBase::Spec {
                    entry,
                    table: &table,
                    release: spec.release,
                };
                return crate::image::env::ensure_env_image(
                    runtime,
                    instance,
                    base,
                    &self.builds,
                    request,
                )
                .await;
            }
        };
        crate::image::env::ensure_env_image(
            runtime,
            instance,
            EnvBase::Image(base),
            &self.builds,
            request,
        )
        .await
    }

    fn plan_table(
        &self,
        instance: &Instance,
        env: &EnvConfig,
    ) -> Result<Arc<SpecTable>, EnvImageError> {
        self.table(&env.specs).map_err(|source| {
            EnvImageError::Spec(SpecEnvError::Table {
                instance_id: instance.instance_id.clone(),
                source,
            })
        })
    }

    /// The reference the engine's sandboxes pull for the local image `tag`: on a cluster with
    /// a registry, an image aci built (labelled `aci.image`) is pushed there first, unless the
    /// registry already has that tag with the same digest; any other image (an instance's own,
    /// from a public registry) is pulled by the nodes from where it came.
    ///
    /// # Errors
    /// The image is missing, or the push failed.
    pub async fn publish(&self, engine: &Engine, tag: &str) -> Result<String, SandboxError> {
        match engine {
            Engine::Docker(_) | Engine::Local => Ok(tag.to_owned()),
            Engine::K8s(cluster) => self.publish_to(cluster, tag).await,
        }
    }

    /// [`Provisioner::publish`] for `cluster`.
    ///
    /// # Errors
    /// The image is missing, or the push failed.
    pub async fn publish_to(&self, cluster: &Cluster, tag: &str) -> Result<String, SandboxError> {
        let Some(_) = &cluster.registry else {
            return Ok(tag.to_owned());
        };
        let info = cluster.docker.inspect_image(tag).await?.ok_or_else(|| {
            SandboxError::Docker(DockerError::other(format!(
                "the image {tag} does not exist\nhint: run `aci images build`"
            )))
        })?;
        if !info.labels.contains_key(LABEL_IMAGE) {
            return Ok(tag.to_owned());
        }
        let reference = cluster.reference(tag);
        let lock = {
            let mut published = self.published.lock().map_err(|_| {
                SandboxError::Docker(DockerError::other("the image registry lock is poisoned"))
            })?;
            Arc::clone(published.entry(reference.clone()).or_default())
        };
        let mut done = lock.lock().await;
        if !*done {
            publish_one(
                &cluster.docker,
                tag,
                &reference,
                &info.digests,
                cluster.credentials.as_ref(),
            )
            .await?;
            *done = true;
        }
        Ok(reference)
    }
}

impl Provisioned<EnvImage> {
    /// The sandbox of this instance on Docker (or a cluster), labelled `run_id`: its
    /// environment image, which holds the repository and its baseline, so nothing is copied
    /// in.
    pub fn sandbox_spec(&self, env: &EnvConfig, run_id: &str, use_for: SpecUse) -> SandboxSpec {
        let mut spec = sandbox_spec(&self.plan, env, run_id, use_for);
        spec.image.clone_from(&self.env_image.tag);
        spec.checkout.clone_from(&self.checkout);
        spec
    }
}

impl Provisioned<()> {
    /// The sandbox of this instance on the host: its repository copied from where it was
    /// found.
    pub fn sandbox_spec(&self, env: &EnvConfig, run_id: &str, use_for: SpecUse) -> SandboxSpec {
        let mut spec = sandbox_spec(&self.plan, env, run_id, use_for);
        spec.image = self.plan.image.base().unwrap_or_default();
        spec.repo = self.origin.host_path().map(|path| RepoSource {
            path: path.to_owned(),
            commit: self.plan.commit.clone(),
        });
        spec.checkout.clone_from(&self.checkout);
        spec
    }
}

/// The parts of a sandbox that follow from the plan and the configuration alone.
fn sandbox_spec(plan: &EnvPlan, env: &EnvConfig, run_id: &str, use_for: SpecUse) -> SandboxSpec {
    let agent = use_for == SpecUse::Agent;
    SandboxSpec {
        run_id: run_id.to_owned(),
        instance_id: plan.instance_id.clone(),
        image: String::new(),
        repo: None,
        repo_dir: plan.repo_dir.clone(),
        limits: ResourceLimits::from_env(env),
        // Tests never get a network, whatever env.network says for agent runs.
        network: agent && env.network,
        env: env
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        output_limit: if agent {
            OutputLimit {
                head: env.output_head_bytes,
                tail: env.output_tail_bytes,
            }
        } else {
            EVAL_OUTPUT_LIMIT
        },
        checkout: None,
        // eval.sh activates the environment itself, as SWE-bench's does.
        activate: if agent { env.activate.clone() } else { None },
    }
}

#[cfg(test)]
mod tests;
