//! The environment plan of one instance: a pure function of the record, the configuration and
//! the spec table. It says which image the instance runs on and how that image is had (a
//! language image aci builds, an image pulled as `env.pull` says, or the environment of its
//! SWE-bench spec), where its repository comes from (the host, the image at a commit, a
//! mirror), what is layered on top (nothing, the record's setup, the spec's install), the
//! activation, the test command and where it comes from, and the log parser.
//!
//! The image's precedence: `env.image`, the record's `image` (or `image_name`),
//! `env.image_template`, then, for a Python record with no `setup` whose repository and
//! version the spec table has, its spec's environment, and otherwise its language's image in
//! `env.images`.

use serde_json::{Value, json};

use super::grading::{GradingPlan, PlanError, grading_plan_for, log_parser_for, own_spec};
use super::language;
use crate::config::{EnvConfig, PullPolicy};
use crate::image::LANGUAGE_IMAGES;
use crate::image::pull::{image_from_template, is_built_locally};
use crate::image::release::DebianRelease;
use crate::image::spec_env::{self, SpecEnvError};
use crate::instance::Instance;
use crate::source::mirror;
pub use crate::source::{MirrorPlan, RepoPlan};
use crate::spec::{Packages, ParserName, SpecSource, SpecTable};

/// Where an image reference was taken from, in the order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageChoice {
    /// `env.image`.
    EnvImage,
    /// The record's `image` or `image_name`.
    Record,
    /// `env.image_template`, filled in for the record.
    Template,
    /// The image of the record's language in `env.images`.
    Language,
}

impl ImageChoice {
    /// The name the plan's JSON gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EnvImage => "env.image",
            Self::Record => "record",
            Self::Template => "env.image_template",
            Self::Language => "language",
        }
    }
}

/// The environment of a SWE-bench spec, as far as it is known without reading the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecImage {
    /// The spec's repository (`owner/name`).
    pub repo: String,
    /// The spec's version key.
    pub version: String,
    /// The spec's Python.
    pub python: String,
    /// The Debian release whose Python it is.
    pub release: DebianRelease,
    /// Whether the spec installs the repository's requirements file (read at
    /// `environment_setup_commit` when the image is built).
    pub requirements: bool,
    /// The per-instance setup over the environment: the pre-install commands as one script,
    /// then the install command.
    pub setup: Vec<String>,
}

impl SpecImage {
    /// The Python image of the release, which the spec's environment is built on.
    pub fn base(&self) -> String {
        self.release.language_tag("python")
    }
}

/// The image an instance runs on, and how it is had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImagePlan {
    /// A language image aci builds (`aci images build`); never pulled.
    Built {
        /// Its tag.
        reference: String,
        /// Where the reference was taken from.
        from: ImageChoice,
        /// The Debian release whose recipe builds it, when it is one of aci's recipes.
        release: Option<DebianRelease>,
    },
    /// An image from a registry, pulled as `env.pull` says.
    Pulled {
        /// The reference.
        reference: String,
        /// Where the reference was taken from.
        from: ImageChoice,
        /// `env.pull`.
        policy: PullPolicy,
    },
    /// The environment of the record's SWE-bench spec, built here on the Python image of the
    /// spec's Debian release (its tag is a hash of what it installs, known once built).
    Spec(SpecImage),
    /// The record's environment would come from its spec, which aci cannot build (no release
    /// has its Python, or conda installs its packages): the instance fails with this error.
    Unbuildable(SpecEnvError),
}

impl ImagePlan {
    /// The image the instance starts from, before any layer of aci's: the reference, or for a
    /// spec environment the Python image it is built on. `None` when it cannot be built.
    pub fn base(&self) -> Option<String> {
        match self {
            Self::Built { reference, .. } | Self::Pulled { reference, .. } => {
                Some(reference.clone())
            }
            Self::Spec(spec) => Some(spec.base()),
            Self::Unbuildable(_) => None,
        }
    }

    /// The Debian base image under it, for an image of aci's own recipes.
    pub fn debian_base(&self) -> Option<String> {
        match self {
            Self::Built {
                release: Some(release),
                ..
            } => Some(release.base_tag()),
            Self::Spec(spec) => Some(spec.release.base_tag()),
            _ => None,
        }
    }

    /// How the image is named in messages: its reference, or the spec environment and the
    /// image it is built on.
    pub fn describe(&self) -> String {
        match self {
            Self::Built { reference, .. } | Self::Pulled { reference, .. } => reference.clone(),
            Self::Spec(spec) => format!(
                "the environment of the SWE-bench spec of {} {} on {}",
                spec.repo,
                spec.version,
                spec.base()
            ),
            Self::Unbuildable(_) => "no image (its SWE-bench spec cannot be built)".to_owned(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Built {
                reference,
                from,
                release,
            } => json!({
                "obtained": "built",
                "reference": reference,
                "from": from.as_str(),
                "debian_base": release.map(DebianRelease::base_tag),
            }),
            Self::Pulled {
                reference,
                from,
                policy,
            } => json!({
                "obtained": "pull",
                "reference": reference,
                "from": from.as_str(),
                "pull": policy,
            }),
            Self::Spec(spec) => json!({
                "obtained": "spec",
                "reference": Value::Null,
                "base": spec.base(),
                "debian_base": spec.release.base_tag(),
                "from": "spec",
                "spec": format!("{} {}", spec.repo, spec.version),
                "python": spec.python,
                "release": spec.release.name(),
                "requirements": spec.requirements,
            }),
            Self::Unbuildable(error) => json!({
                "obtained": "none",
                "reference": Value::Null,
                "from": "spec",
                "error": error.to_string(),
            }),
        }
    }
}

/// What aci layers over the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerPlan {
    /// No setup: the image runs as it is, with the repository added when it comes from the
    /// host or a mirror.
    None,
    /// The record's `setup` commands (and the repository, when it comes from the host).
    Setup(Vec<String>),
    /// The spec's `pre_install` and `install` over its environment.
    Spec(Vec<String>),
}

impl LayerPlan {
    /// The commands run once per environment image.
    pub fn setup(&self) -> &[String] {
        match self {
            Self::None => &[],
            Self::Setup(setup) | Self::Spec(setup) => setup,
        }
    }

    fn to_json(&self) -> Value {
        let kind = match self {
            Self::None => "none",
            Self::Setup(_) => "setup",
            Self::Spec(_) => "spec",
        };
        json!({ "kind": kind, "setup": self.setup() })
    }
}

/// The whole environment plan of one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPlan {
    /// The instance.
    pub instance_id: String,
    /// Its language (`python` when the record names none).
    pub language: String,
    /// Its image.
    pub image: ImagePlan,
    /// Its repository.
    pub repository: RepoPlan,
    /// The commit its repository is taken at.
    pub commit: Option<String>,
    /// Where the repository is in the sandbox.
    pub repo_dir: String,
    /// What is layered over the image.
    pub layer: LayerPlan,
    /// `env.activate`: run at the start of the agent's session and of every evaluation script.
    /// Unset, a record graded by its own spec in its own image (`image`: SWE-bench's) gets its
    /// script's activation lines for its evaluation script instead ([`record_activation`]).
    pub activate: Option<String>,
    /// How it is graded: its test command and log parser, or why it cannot be.
    pub grading: Result<GradingPlan, PlanError>,
    /// Where its test command comes from.
    pub test_source: TestSource,
    /// Its log parser, when one is known (also when it cannot be graded for another reason).
    pub log_parser: Option<ParserName>,
}

impl EnvPlan {
    /// The plan as one JSON object (`aci batch|eval|validate --plan` print one per line).
    pub fn to_json(&self) -> Value {
        let (test_cmd, test_error) = match &self.grading {
            Ok(grading) => (Some(grading.command_line()), None),
            Err(error) => (None, Some(error.to_string())),
        };
        json!({
            "instance_id": self.instance_id,
            "language": self.language,
            "image": self.image.to_json(),
            "repository": self.repository.to_json(self.commit.as_deref()),
            "repo_dir": self.repo_dir,
            "layer": self.layer.to_json(),
            "activate": self.activate,
            "test_cmd": test_cmd,
            "test_cmd_source": test_cmd.as_ref().map(|_| self.test_source.as_str()),
            "spec_source": self
                .grading
                .as_ref()
                .ok()
                .and_then(|grading| grading.spec_source)
                .map(SpecSource::as_str),
            "log_parser": self.log_parser.map(ParserName::as_str),
            "test_error": test_error,
        })
    }
}

/// Where the test command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestSource {
    /// The record's own `test_cmd`, or the test command of its own `eval_script`, run as it is.
    Record,
    /// The spec table's, with the test files of the test patch as its arguments.
    Spec,
}

impl TestSource {
    /// The name the plan's JSON gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Spec => "spec",
        }
    }
}

/// The plan of `instance` under `env`, with `table` (the built-in SWE-bench specs and
/// `env.specs`) for its spec.
pub fn plan(instance: &Instance, env: &EnvConfig, table: &SpecTable) -> EnvPlan {
    let image = image_plan(instance, env, table);
    let repo_dir = instance.repo_dir(&env.repo_dir);
    let mirror = MirrorPlan {
        url: mirror::repo_url(&env.repo_url, &instance.repo),
        cache: env.repo_cache_dir(),
    };
    let repository = match (&instance.repo_path, image.base()) {
        (Some(path), _) => RepoPlan::HostPath(path.clone()),
        (None, Some(image)) => RepoPlan::ImageElseMirror {
            image,
            repo_dir: repo_dir.clone(),
            mirror,
        },
        (None, None) => RepoPlan::Mirror(mirror),
    };
    let grading = grading_plan_for(instance, table, env.spec_source);
    let own_cmd = instance
        .test_cmd
        .as_deref()
        .is_some_and(|cmd| !cmd.trim().is_empty());
    let from_record = matches!(&grading, Ok(plan) if plan.spec_source == Some(SpecSource::Record));
    let activate = env
        .activate
        .clone()
        .or_else(|| record_activation(instance, &image, &grading));
    let layer = match &image {
        ImagePlan::Spec(spec) => LayerPlan::Spec(spec.setup.clone()),
        _ if !instance.setup.is_empty() => LayerPlan::Setup(instance.setup.clone()),
        _ => LayerPlan::None,
    };
    EnvPlan {
        instance_id: instance.instance_id.clone(),
        language: language::language_of(instance)
            .unwrap_or("python")
            .to_owned(),
        image,
        repository,
        commit: instance.base_commit.clone(),
        repo_dir,
        layer,
        activate,
        log_parser: log_parser_for(instance, table, env.spec_source).ok(),
        grading,
        test_source: if own_cmd || from_record {
            TestSource::Record
        } else {
            TestSource::Spec
        },
    }
}

/// The activation of a record's own `eval_script` (`source /opt/miniconda3/bin/activate &&
/// conda activate testbed`), when the record runs in its own image (its `image`, SWE-bench's
/// prebuilt one, whose environment that activates) and its own spec grades it; otherwise none.
pub fn record_activation(
    instance: &Instance,
    image: &ImagePlan,
    grading: &Result<GradingPlan, PlanError>,
) -> Option<String> {
    let own_image = matches!(
        image,
        ImagePlan::Pulled {
            from: ImageChoice::Record,
            ..
        } | ImagePlan::Built {
            from: ImageChoice::Record,
            ..
        }
    );
    let own_spec_grades =
        matches!(grading, Ok(plan) if plan.spec_source == Some(SpecSource::Record));
    if !(own_image && own_spec_grades) {
        return None;
    }
    own_spec(instance)?.ok()?.script.activation
}

/// The image, by the precedence of this module's header.
fn image_plan(instance: &Instance, env: &EnvConfig, table: &SpecTable) -> ImagePlan {
    if let Some(reference) = env.image.as_deref() {
        return chosen(reference.to_owned(), ImageChoice::EnvImage, env);
    }
    if let Some(reference) = instance.own_image() {
        return chosen(reference.to_owned(), ImageChoice::Record, env);
    }
    if let Some(template) = &env.image_template {
        let reference = image_from_template(template, instance);
        return chosen(reference, ImageChoice::Template, env);
    }
    if instance.setup.is_empty()
        && matches!(instance.language.as_deref(), None | Some("python"))
        && let Ok(entry) = table.lookup(&instance.repo, &instance.version)
    {
        return match spec_env::check(&instance.instance_id, &entry) {
            Ok(release) => ImagePlan::Spec(SpecImage {
                setup: spec_env::spec_env(&entry, release, None).repo_setup(),
                repo: entry.repo.repo.clone(),
                version: entry.version.to_owned(),
                python: entry.spec.python.clone(),
                release,
                requirements: matches!(entry.spec.packages, Packages::RequirementsTxt),
            }),
            Err(error) => ImagePlan::Unbuildable(error),
        };
    }
    let language = language::language_of(instance).unwrap_or("python");
    let toolchain = language::image_language(language);
    let reference = env
        .images
        .get(language)
        .or_else(|| env.images.get(toolchain))
        .cloned()
        .unwrap_or_else(|| format!("aci-{toolchain}:bookworm"));
    chosen(reference, ImageChoice::Language, env)
}

/// An image reference: built here when it is one of `env.images`, else pulled.
fn chosen(reference: String, from: ImageChoice, env: &EnvConfig) -> ImagePlan {
    if is_built_locally(&reference, env) {
        let release = DebianRelease::ALL.into_iter().find(|release| {
            LANGUAGE_IMAGES
                .iter()
                .any(|image| release.language_tag(image.language) == reference)
        });
        ImagePlan::Built {
            reference,
            from,
            release,
        }
    } else {
        ImagePlan::Pulled {
            reference,
            from,
            policy: env.pull,
        }
    }
}

#[cfg(test)]
mod tests;
