//! Environment images from the SWE-bench spec table, with no registry and no conda.
//!
//! A SWE-bench record with no `image` and no `setup`, whose repository and version the spec
//! table ([`crate::spec`]) has, gets its environment built from that entry: the Debian
//! release whose Python is the spec's ([`DebianRelease::for_python`]), a virtual environment
//! at [`VENV`] with the spec's packages, its requirements file (read from the repository at
//! `environment_setup_commit`) and its pip pins, all from PyPI; then, per instance, the spec's
//! pre-install and install steps. The venv comes first on the image's `PATH`, so the agent's
//! shell and `eval.sh` both run in it.
//!
//! The layers: `aci-python:<release>` → the spec environment of one (repository, version),
//! `aci-spec-<owner>__<name>:<hash12>` (this module; the versions whose specs install the same
//! things share it) → the instance's repository at `base_commit` with its baseline and the
//! spec's `pre_install` and `install` as its setup ([`super::env`]). So the instances of one
//! repository and version share one environment layer. A spec whose Python no release has, or whose packages come from conda
//! (`environment.yml`, conda build strings), is an error of that instance that says so: no
//! other Python and no other package source is substituted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use sha2::{Digest, Sha256};

use super::LABEL_IMAGE;
use super::as_of::pins::Pins;
use super::as_of::{self, AsOf, LABEL_RESOLVED_AS_OF};
use super::build_log::{
    LOCK_MARKER, STEP_MARKER, build_logged_with, label_lock, read_lock, write_lock,
};
use super::env::{
    BuildLocks, ENV_IMAGE_KIND, EnvImage, EnvImageError, EnvRequest, LABEL_BASE_IMAGE,
    LABEL_ENV_HASH, append_file, built_env_image, label_line,
};
use super::release::DebianRelease;
use crate::config::{Cutoff, ResolveAsOf};
use crate::hint::Hint;
use crate::instance::Instance;
use crate::sandbox::docker::{DockerRuntime, LABEL_RUN_ID};
use crate::sandbox::shell_quote;
use crate::spec::{self, Packages, SpecEntry, SpecError};
use crate::text::literal_regex;

/// Where the spec's virtual environment is created in the image.
pub const VENV: &str = "/opt/aci-venv";
/// Label naming the repository and the Python of a spec environment: `<repo> python<X.Y>`.
pub const LABEL_SPEC: &str = "aci.spec";
/// The image's `PATH`: the venv first. The ACI's own tools (`/opt/venv`, with flake8 for the
/// external lint gate) stay off it, so no other interpreter answers for the project's.
pub const VENV_PATH: &str =
    "/opt/aci-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Bumped whenever the recipe below changes, so old images are not taken for new ones.
const RECIPE_VERSION: &str = "aci-spec-env-v2";
/// Where the scripts and the requirements file sit during the build.
const SCRIPT_DIR: &str = "/tmp/aci-spec";
/// The first line after `set -eo pipefail` of every build script: stderr into stdout, and
/// Python's output unbuffered, so that the build's log is one stream in the order it was
/// written (the daemon's stdout and stderr reach it apart, in no fixed order).
pub(crate) const ONE_STREAM: &str = "exec 2>&1\nexport PYTHONUNBUFFERED=1";
/// The build argument that points pip at the as-of index.
pub(crate) const INDEX_ARG: &str = "PIP_INDEX_URL";
/// The suggestion of every error that says aci cannot build an environment.
const SWEBENCH_HINT: &str = "run it in SWE-bench's prebuilt image with --images swebench";

/// Why an instance's environment cannot be built from its spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecEnvError {
    /// The spec's Python is in no Debian release aci builds.
    #[error(
        "{instance_id}: the SWE-bench spec of {repo} {version} asks for Python {python}, which \
         no Debian release aci builds has (it has {known}); no other Python is substituted",
        known = DebianRelease::pythons()
    )]
    NoRelease {
        /// The instance.
        instance_id: String,
        /// The repository.
        repo: String,
        /// The spec's version key.
        version: String,
        /// The Python version the spec asks for.
        python: String,
    },
    /// The spec's packages come from conda.
    #[error(
        "{instance_id}: the SWE-bench spec of {repo} {version} installs {what} with conda, \
         which aci does not use (its environments come from Debian and PyPI)"
    )]
    Conda {
        /// The instance.
        instance_id: String,
        /// The repository.
        repo: String,
        /// The spec's version key.
        version: String,
        /// What conda would install (`the packages of environment.yml`, a package spec).
        what: String,
    },
    /// The requirements file must be read from the repository, and it cannot be.
    #[error(
        "{instance_id}: the SWE-bench spec of {repo} {version} installs the repository's \
         requirements file, which {reason}"
    )]
    Requirements {
        /// The instance.
        instance_id: String,
        /// The repository.
        repo: String,
        /// The spec's version key.
        version: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// The spec table (with `env.specs`) cannot be read.
    #[error("{instance_id}: {source}")]
    Table {
        /// The instance.
        instance_id: String,
        /// The table's error.
        source: SpecError,
    },
}

impl Hint for SpecEnvError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::NoRelease { .. } | Self::Conda { .. } => Some(SWEBENCH_HINT.to_owned()),
            Self::Requirements { repo, .. } => Some(format!(
                "give the record a repo_path to a clone of {repo} that has the commit, or use \
                 --images swebench"
            )),
            Self::Table { .. } => None,
        }
    }
}

/// The environment of one (repository, version), as its spec says to build it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecEnv {
    /// `owner/name`.
    pub repo: String,
    /// The spec's version key.
    pub version: String,
    /// The release whose Python is the spec's.
    pub release: DebianRelease,
    /// The spec's Python version.
    pub python: String,
    /// The spec's `packages` list as pip requirements.
    pub packages: Vec<String>,
    /// The requirements file's text (with its `-r` includes), when the spec installs one.
    pub requirements: Option<String>,
    /// The spec's pip pins, installed last.
    pub pip_packages: Vec<String>,
    /// Commands run in the repository before `install` (per instance).
    pub pre_install: Vec<String>,
    /// The command that installs the repository (per instance).
    pub install: Option<String>,
    /// The instant pip resolves this layer as of (`env.resolve_as_of`), and why; `None`:
    /// today. The spec's exact pins ([`SpecEnv::pins`]) are listed whatever their date.
    pub as_of: Option<AsOf>,
    /// The lock of an earlier build of this environment, installed as pip's constraints
    /// (`PIP_CONSTRAINT`) so that a rebuild installs the same versions. Not part of the hash.
    pub constraints: Option<String>,
}

/// One step of the spec environment's build: a script run by its own `RUN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStep {
    /// The script's file name under the build's script directory.
    pub file: String,
    /// The script.
    pub script: String,
}

/// The release for a spec entry, and the check that its packages are not conda's.
///
/// # Errors
/// [`SpecEnvError::NoRelease`] or [`SpecEnvError::Conda`].
pub fn check(instance_id: &str, entry: &SpecEntry<'_>) -> Result<DebianRelease, SpecEnvError> {
    let spec = entry.spec;
    let release =
        DebianRelease::for_python(&spec.python).ok_or_else(|| SpecEnvError::NoRelease {
            instance_id: instance_id.to_owned(),
            repo: entry.repo.repo.clone(),
            version: entry.version.to_owned(),
            python: spec.python.clone(),
        })?;
    let conda = |what: String| SpecEnvError::Conda {
        instance_id: instance_id.to_owned(),
        repo: entry.repo.repo.clone(),
        version: entry.version.to_owned(),
        what,
    };
    match &spec.packages {
        Packages::EnvironmentYml => Err(conda("the packages of its environment.yml".to_owned())),
        Packages::List(list) => match list.iter().find_map(|p| pip_requirement(p).err()) {
            Some(what) => Err(conda(what)),
            None => Ok(release),
        },
        Packages::None | Packages::RequirementsTxt => Ok(release),
    }
}

/// The environment for `entry` (checked by [`check`]), with the requirements file's text when
/// the spec installs one.
pub fn spec_env(
    entry: &SpecEntry<'_>,
    release: DebianRelease,
    requirements: Option<String>,
) -> SpecEnv {
    let spec = entry.spec;
    let packages = match &spec.packages {
        Packages::List(list) => list
            .iter()
            .filter_map(|p| pip_requirement(p).ok())
            .collect(),
        _ => Vec::new(),
    };
    SpecEnv {
        repo: entry.repo.repo.clone(),
        version: entry.version.to_owned(),
        release,
        python: spec.python.clone(),
        packages,
        requirements,
        pip_packages: spec.pip_packages.clone(),
        pre_install: spec.pre_install.clone(),
        install: spec.install.clone(),
        as_of: None,
        constraints: None,
    }
}

/// A package name at the start of a requirement.
pub(crate) static PACKAGE_NAME: LazyLock<regex::Regex> =
    LazyLock::new(|| literal_regex(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?"));
/// Version clauses pip and conda read alike: `==1.2`, `<2.0,>=1`.
pub(crate) static PIP_VERSIONS: LazyLock<regex::Regex> = LazyLock::new(|| {
    literal_regex(
        r"^(\s*(==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*)(,\s*(==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*)*$",
    )
});

/// A package of a spec's `packages` list (a conda spec) as a pip requirement: `name`,
/// `name==1.2`, `name<2.0`, `name>=1,<2` as they are, conda's fuzzy `name=1.2` as
/// `name==1.2.*`.
///
/// # Errors
/// A conda build string (`name=1.2=py39_0`), a channel (`conda-forge::name`) or text that is no
/// requirement: a description of the package for the conda error.
pub fn pip_requirement(conda: &str) -> Result<String, String> {
    let text = conda.trim();
    let not_pip = || format!("the package {text:?}, a conda spec");
    let Some(found) = PACKAGE_NAME.find(text) else {
        return Err(not_pip());
    };
    let rest = &text[found.end()..];
    if rest.is_empty() || PIP_VERSIONS.is_match(rest) {
        return Ok(text.to_owned());
    }
    // conda's `name=1.2` is `1.2.*`; a second `=` is a build string, which pip has no notion of.
    if let Some(version) = rest.strip_prefix('=').map(|v| v.trim_end_matches(".*"))
        && !version.is_empty()
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.')
    {
        return Ok(format!("{}=={version}.*", found.as_str()));
    }
    Err(not_pip())
}

/// SWE-bench's reading of a requirements file: the first of `paths` that `read` finds; each
/// `-r FILE` line replaced by FILE's lines (FILE relative to the first file's directory; a
/// missing one adds nothing); lines starting with `-e .`, `#` or `.[test` dropped; the
/// included lines first, then the file's own; then each replacement applied to the text.
/// Returns the path found and the text, or `None` when no path exists.
pub fn requirements_text(
    paths: &[String],
    replacements: &[spec::RequirementReplacement],
    mut read: impl FnMut(&str) -> Option<String>,
) -> Option<(String, String)> {
    let (path, text) = paths
        .iter()
        .find_map(|path| read(path).map(|text| (path.clone(), text)))?;
    let excluded = |line: &str| {
        let line = line.trim();
        ["-e .", "#", ".[test"]
            .iter()
            .any(|prefix| line.starts_with(prefix))
    };
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut included = Vec::new();
    let mut own = Vec::new();
    for line in text.split('\n') {
        if let Some(file) = line.trim().strip_prefix("-r") {
            let file = file.trim();
            let include = if dir.is_empty() {
                file.to_owned()
            } else {
                format!("{dir}/{file}")
            };
            if let Some(extra) = read(&include) {
                included.extend(
                    extra
                        .split('\n')
                        .filter(|line| !excluded(line))
                        .map(str::to_owned),
                );
            }
        } else if !excluded(line) {
            own.push(line.to_owned());
        }
    }
    included.push(own.join("\n"));
    let mut all = included.join("\n");
    for replacement in replacements {
        all = all.replace(&replacement.from, &replacement.to);
    }
    Some((path, all))
}

impl SpecEnv {
    /// The layer's cutoff, when it is resolved as of one.
    pub fn cutoff(&self) -> Option<Cutoff> {
        self.as_of.as_ref().map(|as_of| as_of.cutoff)
    }

    /// The exact pins of the spec (`name==version` in its packages, its requirements file and
    /// its pip pins): the as-of index lists them whatever their upload time.
    pub fn pins(&self) -> Pins {
        Pins::of(
            self.packages
                .iter()
                .chain(&self.pip_packages)
                .map(String::as_str)
                .chain(self.requirements.as_deref()),
        )
    }

    /// The per-instance setup: the pre-install commands as one script (SWE-bench runs them in
    /// one shell, so a variable set by one is seen by the next), then the install command.
    pub fn repo_setup(&self) -> Vec<String> {
        let mut setup = Vec::new();
        if !self.pre_install.is_empty() {
            setup.push(self.pre_install.join("\n"));
        }
        setup.extend(self.install.clone());
        setup
    }

    /// The environment hash: lowercase hex SHA-256 over the recipe version, the base image id,
    /// the Python version, and each package, the requirements text and each pip pin, every
    /// field length-prefixed and each list ended by its length; then, when the layer is
    /// resolved as of a cutoff, `as of <RFC 3339>` (so an unfiltered environment keeps its
    /// hash, and two cutoffs never share an image).
    pub fn env_hash(&self, base_id: &str) -> String {
        let mut hasher = Sha256::new();
        let mut field = |text: &str| {
            hasher.update(u64::try_from(text.len()).unwrap_or(u64::MAX).to_le_bytes());
            hasher.update(text.as_bytes());
        };
        field(RECIPE_VERSION);
        field(base_id);
        field(&self.python);
        for list in [&self.packages, &self.pip_packages] {
            for item in list {
                field(item);
            }
            field(&format!("#{}", list.len()));
        }
        field(self.requirements.as_deref().unwrap_or("\0none"));
        if let Some(cutoff) = self.cutoff() {
            field(&format!("as of {cutoff}"));
        }
        data_encoding::HEXLOWER.encode(&hasher.finalize())
    }

    /// `aci-spec-<owner>__<name>:<hash12>`, lower-case, with every character Docker does not
    /// allow as `-`. No version in it: the versions whose specs install the same things share
    /// the image.
    pub fn tag(&self, env_hash: &str) -> String {
        let name: String = self
            .repo
            .replace('/', "__")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._".contains(c) {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        format!("aci-spec-{name}:{}", &env_hash[..env_hash.len().min(12)])
    }

    /// The build's scripts, in order: the venv (and the check that its Python is the spec's),
    /// the packages, the requirements file, the pip pins. Each announces itself with
    /// [`STEP_MARKER`] and stops at its first failing command.
    pub fn steps(&self) -> Vec<BuildStep> {
        let pip = format!("{VENV}/bin/python -m pip install");
        let mut steps = vec![BuildStep {
            file: "1-venv.sh".to_owned(),
            script: script(
                &format!(
                    "python3 -m venv {VENV} (Python {} of {})",
                    self.python, self.release
                ),
                &[
                    format!("python3 -m venv {VENV}"),
                    format!(
                        "{VENV}/bin/python -c {}",
                        shell_quote(&python_check(&self.python))
                    ),
                    format!("{VENV}/bin/python -m pip --version"),
                ],
            ),
        }];
        if !self.packages.is_empty() {
            steps.push(BuildStep {
                file: "2-packages.sh".to_owned(),
                script: script(
                    "pip install the packages of the spec",
                    &[format!("{pip} {}", quote_all(&self.packages))],
                ),
            });
        }
        if self.requirements.is_some() {
            steps.push(BuildStep {
                file: "3-requirements.sh".to_owned(),
                script: script(
                    "pip install -r the requirements file of the repository",
                    &[format!("{pip} -r {SCRIPT_DIR}/requirements.txt")],
                ),
            });
        }
        if !self.pip_packages.is_empty() {
            steps.push(BuildStep {
                file: "4-pip-packages.sh".to_owned(),
                script: script(
                    "pip install the pip_packages of the spec",
                    &[format!("{pip} {}", quote_all(&self.pip_packages))],
                ),
            });
        }
        steps.push(BuildStep {
            file: "5-lock.sh".to_owned(),
            script: script("pip freeze --all (the lock)", &[lock_command()]),
        });
        steps
    }

    /// The Dockerfile over `base` (an image id): the labels, the scripts, one `RUN` per step,
    /// and the venv first on `PATH`. pip reaches PyPI with the host CA bundle that the
    /// language image was built with (`PIP_CERT`). With a cutoff, the build argument
    /// `PIP_INDEX_URL` (the as-of index) is declared; with a lock, `PIP_CONSTRAINT` names its
    /// file. Both are the `RUN` steps' environment only, never the image's.
    pub fn dockerfile(&self, base: &str, labels: &BTreeMap<String, String>) -> String {
        let mut lines = vec![format!("FROM {base}")];
        lines.extend(label_line(labels));
        if self.as_of.is_some() {
            lines.push(format!("ARG {INDEX_ARG}"));
        }
        if self.constraints.is_some() {
            lines.push(format!("ARG PIP_CONSTRAINT={SCRIPT_DIR}/constraints.txt"));
        }
        lines.push("ADD spec.tar /".to_owned());
        for step in self.steps() {
            lines.push(format!("RUN bash {SCRIPT_DIR}/{}", step.file));
        }
        lines.push(format!("RUN rm -rf {SCRIPT_DIR}"));
        lines.push(format!("ENV VIRTUAL_ENV={VENV} PATH={VENV_PATH}"));
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    /// The tar build context: `Dockerfile` and `spec.tar`, with the scripts and
    /// `requirements.txt` under the script directory.
    pub fn build_context(
        &self,
        base: &str,
        labels: &BTreeMap<String, String>,
    ) -> std::io::Result<Vec<u8>> {
        let mut inner = tar::Builder::new(Vec::new());
        let dir = SCRIPT_DIR.trim_start_matches('/');
        for step in self.steps() {
            append_file(
                &mut inner,
                &format!("{dir}/{}", step.file),
                step.script.as_bytes(),
            )?;
        }
        if let Some(requirements) = &self.requirements {
            append_file(
                &mut inner,
                &format!("{dir}/requirements.txt"),
                requirements.as_bytes(),
            )?;
        }
        if let Some(constraints) = &self.constraints {
            append_file(
                &mut inner,
                &format!("{dir}/constraints.txt"),
                constraints.as_bytes(),
            )?;
        }
        let inner = inner.into_inner()?;
        let mut outer = tar::Builder::new(Vec::new());
        append_file(
            &mut outer,
            "Dockerfile",
            self.dockerfile(base, labels).as_bytes(),
        )?;
        append_file(&mut outer, "spec.tar", &inner)?;
        outer.into_inner()
    }
}

/// The command that prints the venv's distributions, each behind [`LOCK_MARKER`].
pub(super) fn lock_command() -> String {
    format!("{VENV}/bin/python -m pip freeze --all | sed 's/^/{LOCK_MARKER}/'")
}

/// A failure because pip found no distribution gets the hint that conda may have it.
fn pypi_hint(message: &str) -> Option<String> {
    message.contains("No matching distribution found").then(|| {
        "a package or pin of the spec is not on PyPI for this Python (some exist only on \
         conda); use --images swebench"
            .to_owned()
    })
}

/// Python code that exits non-zero unless the interpreter is `major.minor` = `python`.
fn python_check(python: &str) -> String {
    format!(
        "import sys; v = \"%d.%d\" % sys.version_info[:2]; print(\"Python\", sys.version.split()[0]); \
         sys.exit(0 if v == \"{python}\" else \"the venv has Python \" + v + \", the spec asks for \
         {python}\")"
    )
}

/// A build script: one ordered stream (stderr into stdout, Python unbuffered: the build log
/// shows lines in the order they were written), announce the step, stop at the first failing
/// command, echo each one.
fn script(step: &str, commands: &[String]) -> String {
    let mut text = format!(
        "set -eo pipefail\n{ONE_STREAM}\necho {}\nset -x\n",
        shell_quote(&format!("{STEP_MARKER}{step}"))
    );
    for command in commands {
        text.push_str(command);
        text.push('\n');
    }
    text
}

fn quote_all(items: &[String]) -> String {
    items
        .iter()
        .map(|item| shell_quote(item))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The environment of `entry` (its release checked by [`check`]) for `instance`, with the
/// requirements file read from the instance's repository when the spec installs one.
///
/// # Errors
/// The requirements file cannot be read from the repository.
pub async fn for_entry(
    instance: &Instance,
    entry: &SpecEntry<'_>,
    table: &spec::SpecTable,
    release: DebianRelease,
) -> Result<SpecEnv, SpecEnvError> {
    let requirements = match entry.spec.packages {
        Packages::RequirementsTxt => Some(read_requirements(instance, entry, table).await?),
        _ => None,
    };
    Ok(spec_env(entry, release, requirements))
}

/// The requirements file at `environment_setup_commit` (else `base_commit`) of the instance's
/// repository, read with `git show`.
async fn read_requirements(
    instance: &Instance,
    entry: &SpecEntry<'_>,
    table: &spec::SpecTable,
) -> Result<String, SpecEnvError> {
    let error = |reason: String| SpecEnvError::Requirements {
        instance_id: instance.instance_id.clone(),
        repo: entry.repo.repo.clone(),
        version: entry.version.to_owned(),
        reason,
    };
    let Some(repo) = instance.repo_path.clone() else {
        return Err(error(
            "must be read from the repository, and the record has no repo_path".to_owned(),
        ));
    };
    let Some(commit) = instance
        .environment_setup_commit
        .clone()
        .or_else(|| instance.base_commit.clone())
    else {
        return Err(error(
            "is read at environment_setup_commit, and the record has neither it nor a \
             base_commit"
                .to_owned(),
        ));
    };
    let paths = entry.repo.requirements_paths.clone();
    let replacements = table.requirement_replacements.clone();
    let found = tokio::task::spawn_blocking({
        let commit = commit.clone();
        move || requirements_text(&paths, &replacements, |path| git_show(&repo, &commit, path))
    })
    .await
    .map_err(|e| error(format!("could not be read: {e}")))?;
    match found {
        Some((_, text)) => Ok(text),
        None => Err(error(format!(
            "is at none of {} at commit {commit} of {}",
            entry.repo.requirements_paths.join(", "),
            instance
                .repo_path
                .as_deref()
                .map_or_else(String::new, |p| p.display().to_string())
        ))),
    }
}

/// The file at `commit:path` of the git repository `repo`, when it is there. The commit is a
/// record's: after `--end-of-options` git never reads it as an option (`--output=FILE`).
fn git_show(repo: &Path, commit: &str, path: &str) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", "--end-of-options", &format!("{commit}:{path}")])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Finds or builds the spec environment image of `spec` on `aci-python:<release>`: reused
/// when its `aci.env_hash` label matches, else built with a network (pip reaches PyPI through
/// the host CA bundle the language image holds), its whole log kept ([`build_logged`]).
///
/// # Errors
/// The release's Python image is missing (the hint says how to build it), the daemon fails,
/// or the build fails: the error names the step and quotes its last lines.
pub async fn ensure_spec_env(
    runtime: &DockerRuntime,
    spec: &SpecEnv,
    instance_id: &str,
    locks: &BuildLocks,
    request: &EnvRequest<'_>,
) -> Result<EnvImage, EnvImageError> {
    let docker_error = |source| EnvImageError::Docker {
        instance_id: instance_id.to_owned(),
        source,
    };
    let base = spec.release.language_tag("python");
    let base_info = runtime
        .inspect_image(&base)
        .await
        .map_err(docker_error)?
        .ok_or_else(|| EnvImageError::MissingRelease {
            instance_id: instance_id.to_owned(),
            image: base.clone(),
            release: spec.release,
        })?;
    let hash = spec.env_hash(&base_info.id);
    let tag = spec.tag(&hash);
    let name = format!("spec-{hash}");
    let _lock = locks.lock(&name).await;
    if let Some(built) = built_env_image(runtime, &tag, &hash, &base)
        .await
        .map_err(docker_error)?
    {
        return Ok(built);
    }
    let build_error = |message: String, hint: Option<String>| EnvImageError::Build {
        instance_id: instance_id.to_owned(),
        tag: tag.clone(),
        message,
        hint,
    };
    if let Some((message, hint)) = locks.failed(&name) {
        return Err(build_error(message, hint));
    }
    let labels = BTreeMap::from([
        (LABEL_IMAGE.to_owned(), ENV_IMAGE_KIND.to_owned()),
        (LABEL_ENV_HASH.to_owned(), hash.clone()),
        (LABEL_BASE_IMAGE.to_owned(), base.clone()),
        (LABEL_RUN_ID.to_owned(), request.run_id.to_owned()),
        (
            LABEL_SPEC.to_owned(),
            format!("{} python{}", spec.repo, spec.python),
        ),
        (
            LABEL_RESOLVED_AS_OF.to_owned(),
            as_of::resolved_text(spec.as_of.as_ref(), &[]),
        ),
    ]);
    let mut spec = spec.clone();
    spec.constraints = read_lock(request.env, &tag);
    let context = spec
        .build_context(&base_info.id, &labels)
        .map_err(|e| build_error(format!("cannot write the build context: {e}"), None))?;
    let pins = spec.pins();
    let options =
        as_of::server::build_options(spec.cutoff(), &pins).map_err(|e| build_error(e, None))?;
    let built = build_logged_with(runtime, &tag, context, request, instance_id, &options)
        .await
        .map_err(|message| {
            let hint = pypi_hint(&message);
            build_error(as_of::server::with_failures(message, spec.cutoff()), hint)
        })
        .inspect_err(|error| locks.remember(&name, error))?;
    let past_cutoff = as_of::server::past_cutoff(spec.cutoff(), &pins);
    let resolved = as_of::resolved_text(spec.as_of.as_ref(), &past_cutoff);
    let image_id = label_lock(runtime, &tag, &built.id, &built.lock, &resolved)
        .await
        .map_err(|message| build_error(message, None))?;
    write_lock(request.env, &tag, &as_of::constraints(&built.lock));
    Ok(EnvImage {
        tag,
        id: image_id,
        env_hash: hash,
        base_image: base,
        built: true,
    })
}

/// The cutoff of the spec's environment layer (`env.resolve_as_of`): with `created_at`, the
/// committer date of the record's `environment_setup_commit` in its repository (`repo_path`,
/// which is the mirror's path when the repository came from `env.repo_url`; read with git, no
/// network), so that every instance of a (repository, version) shares the layer; else the
/// record's `created_at`; never before the release of `python` ([`as_of::layer_cutoff`]).
pub async fn layer_cutoff(instance: &Instance, setting: ResolveAsOf, python: &str) -> Option<AsOf> {
    if setting != ResolveAsOf::CreatedAt {
        return as_of::layer_cutoff(setting, None, python);
    }
    let committed = match (&instance.repo_path, &instance.environment_setup_commit) {
        (Some(repo), Some(commit)) => {
            let (repo, commit) = (repo.clone(), commit.clone());
            tokio::task::spawn_blocking(move || committer_date(&repo, &commit))
                .await
                .ok()
                .flatten()
        }
        _ => None,
    };
    match committed {
        Some(date) => as_of::layer_cutoff(
            setting,
            Some((&date, "the environment_setup_commit's committer date")),
            python,
        ),
        None => as_of::layer_cutoff(
            setting,
            Some((&instance.created_at, "the record's created_at")),
            python,
        ),
    }
}

/// The committer date of `commit` in the git repository `repo` (strict ISO 8601).
fn committer_date(repo: &Path, commit: &str) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", "-s", "--format=%cI", "--end-of-options", commit])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests;
