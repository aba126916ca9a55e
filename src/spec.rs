//! The built-in table of SWE-bench specifications (`specs/swebench.yaml`, compiled in): for each
//! repository and `version`, how the SWE-bench harness builds the environment (Python version,
//! packages, pre-install and install steps, pip pins), which commands run before the tests, the
//! test command and the log parser. Grading reads the test command and parser from it; building
//! an environment from the same entry needs nothing more.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use serde::Deserialize;

pub mod record;

pub use record::{EvalType, RecordSpec, SpecSource};

/// The text of `specs/swebench.yaml`.
pub const BUILTIN_SPECS_YAML: &str = include_str!("../specs/swebench.yaml");

/// Where the packages of an environment come from (SWE-bench's `packages`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packages {
    /// Nothing beyond Python itself (and `pip_packages`).
    None,
    /// The repository's requirements file, fetched at `environment_setup_commit` from the first
    /// of [`RepoSpecs::requirements_paths`] that exists, then installed with pip.
    RequirementsTxt,
    /// The repository's conda `environment.yml`, from the first of
    /// [`RepoSpecs::environment_yml_paths`] that exists.
    EnvironmentYml,
    /// These packages, installed when the environment is created (conda specs such as
    /// `numpy==1.19.2` or `pandas<2.0.0`).
    List(Vec<String>),
}

/// How one version of one repository is built and tested.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionSpec {
    /// The Python version (`3.9`).
    pub python: String,
    /// The packages the environment starts with.
    pub packages: Packages,
    /// With [`Packages::EnvironmentYml`]: create the environment with `python` first and then
    /// update it from the file (SWE-bench's `no_use_env`), instead of creating it from the file.
    pub no_use_env: bool,
    /// Commands run in the repository before `install` (system packages, pin edits).
    pub pre_install: Vec<String>,
    /// The command that installs the repository itself; the evaluation runs it again after the
    /// patch is applied (the reinstall step).
    pub install: Option<String>,
    /// Extra pip requirements installed after `packages`, pinned as SWE-bench pins them.
    pub pip_packages: Vec<String>,
    /// Commands the evaluation runs before everything else (locale settings).
    pub eval_commands: Vec<String>,
    /// The test command; the test files of the test patch are appended to it.
    pub test_cmd: String,
    /// SWE-bench runs the tests as a non-root user for this version.
    pub execute_test_as_nonroot: bool,
    /// CPU limit SWE-bench sets for this version, in billionths of a CPU.
    pub nano_cpus: Option<u64>,
}

/// How the test files a test patch touches become arguments of the test command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectiveStyle {
    /// The file paths, as they are (pytest, sympy's `bin/test`).
    Paths,
    /// Django's `runtests.py` labels: `tests/a/b.py` → `a.b`.
    DjangoModules,
}

/// One repository's entries.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoSpecs {
    /// `owner/name`.
    pub repo: String,
    /// The parser for every version's test log.
    pub log_parser: ParserName,
    /// How test files become test-command arguments.
    pub directives: DirectiveStyle,
    /// Where [`Packages::RequirementsTxt`] looks, in order.
    pub requirements_paths: Vec<String>,
    /// Where [`Packages::EnvironmentYml`] looks, in order.
    pub environment_yml_paths: Vec<String>,
    /// Base commits that a single-branch clone reaches only through this branch.
    pub base_commit_branches: BTreeMap<String, String>,
    versions: Vec<(String, VersionSpec)>,
}

impl RepoSpecs {
    /// The entry for `version`.
    pub fn version(&self, version: &str) -> Option<&VersionSpec> {
        self.versions
            .iter()
            .find(|(known, _)| known == version)
            .map(|(_, spec)| spec)
    }

    /// Every version, in the file's order.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.versions.iter().map(|(version, _)| version.as_str())
    }
}

/// A requirement SWE-bench replaces when it reads a requirements or environment file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequirementReplacement {
    /// The package name to replace.
    pub from: String,
    /// What replaces it.
    pub to: String,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecTable {
    /// Where the facts come from (`swebench 4.1.0`).
    pub source: String,
    /// Requirements replaced when a requirements or environment file is read.
    pub requirement_replacements: Vec<RequirementReplacement>,
    repos: BTreeMap<String, RepoSpecs>,
}

/// One entry found: the repository's settings and the version's.
#[derive(Debug, Clone, Copy)]
pub struct SpecEntry<'a> {
    /// The repository.
    pub repo: &'a RepoSpecs,
    /// The version's key.
    pub version: &'a str,
    /// The version's settings.
    pub spec: &'a VersionSpec,
}

/// Why the table has no entry for a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecLookupError {
    /// The repository is not in the table.
    #[error(
        "the built-in SWE-bench specs have no repository {repo:?} (asked for version {version:?})"
    )]
    UnknownRepo {
        /// The record's `repo`.
        repo: String,
        /// The record's `version`.
        version: String,
    },
    /// The repository is there, the version is not.
    #[error("the built-in SWE-bench specs have no version {version:?} of {repo} (known: {known})")]
    UnknownVersion {
        /// The record's `repo`.
        repo: String,
        /// The record's `version`.
        version: String,
        /// The versions the table has, comma-separated.
        known: String,
    },
}

/// A spec file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not YAML of the expected shape.
    #[error("invalid SWE-bench spec file: {0}")]
    Syntax(String),
    /// A value is wrong.
    #[error("invalid SWE-bench spec for {repo}: {message}")]
    Invalid {
        /// The repository.
        repo: String,
        /// What is wrong.
        message: String,
    },
    /// An extra spec file (`env.specs`) cannot be read or is invalid.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl SpecTable {
    /// Reads a spec file in the format of `specs/swebench.yaml`.
    ///
    /// # Errors
    /// The text is not such a file, a parser name is unknown, a version is listed twice for one
    /// repository, or a test command or Python version is empty.
    pub fn from_yaml(text: &str) -> Result<Self, SpecError> {
        let file: SpecFile =
            serde_yaml::from_str(text).map_err(|e| SpecError::Syntax(e.to_string()))?;
        let mut repos = BTreeMap::new();
        for (repo, raw) in file.repos {
            let specs = repo_specs(&repo, raw)?;
            repos.insert(repo, specs);
        }
        Ok(Self {
            source: file.source,
            requirement_replacements: file.requirement_replacements,
            repos,
        })
    }

    /// The entry for `repo` at `version`.
    ///
    /// # Errors
    /// The table has no such repository, or no such version of it; the error names both.
    pub fn lookup(&self, repo: &str, version: &str) -> Result<SpecEntry<'_>, SpecLookupError> {
        let Some(specs) = self.repos.get(repo) else {
            return Err(SpecLookupError::UnknownRepo {
                repo: repo.to_owned(),
                version: version.to_owned(),
            });
        };
        let found = specs.versions.iter().find(|(known, _)| known == version);
        match found {
            Some((version, spec)) => Ok(SpecEntry {
                repo: specs,
                version,
                spec,
            }),
            None => Err(SpecLookupError::UnknownVersion {
                repo: repo.to_owned(),
                version: version.to_owned(),
                known: specs.versions().collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// The repository's settings, if the table has it.
    pub fn repo(&self, repo: &str) -> Option<&RepoSpecs> {
        self.repos.get(repo)
    }

    /// Every repository, by name.
    pub fn repos(&self) -> impl Iterator<Item = &RepoSpecs> {
        self.repos.values()
    }

    /// Adds the repositories of `other`, each replacing the entry of the same name whole
    /// (its parser, directives and every version), and its requirement replacements.
    pub fn extend(&mut self, other: SpecTable) {
        self.repos.extend(other.repos);
        for replacement in other.requirement_replacements {
            if !self.requirement_replacements.contains(&replacement) {
                self.requirement_replacements.push(replacement);
            }
        }
    }
}

/// The built-in table. The file is compiled in, so an invalid one is a bug: the test that
/// forces every literal table and pattern fails with its error.
pub(crate) static BUILTIN: LazyLock<SpecTable> =
    LazyLock::new(|| match SpecTable::from_yaml(BUILTIN_SPECS_YAML) {
        Ok(table) => table,
        Err(error) => panic!("the built-in SWE-bench specs do not load: {error}"),
    });

/// The built-in table, read once.
pub fn builtin() -> &'static SpecTable {
    &BUILTIN
}

/// The spec tables read so far, by their list of files: the built-in table with `files`
/// (`env.specs`) read after it, in order, each repository of a file replacing the entry of the
/// same name ([`SpecTable::extend`]). A field of the [`crate::provision::Provisioner`], so
/// that each list of files is read once per run.
#[derive(Debug, Default)]
pub struct TableCache {
    tables: Mutex<HashMap<Vec<PathBuf>, Arc<SpecTable>>>,
}

impl TableCache {
    /// The table of `files`, read once; without files it is the built-in table.
    ///
    /// # Errors
    /// A file cannot be read or is not a valid spec file; the error names the file.
    pub fn table(&self, files: &[PathBuf]) -> Result<Arc<SpecTable>, SpecError> {
        if let Some(table) = self.tables.lock().ok().and_then(|t| t.get(files).cloned()) {
            return Ok(table);
        }
        let mut table = builtin().clone();
        for path in files {
            table.extend(read_spec_file(path)?);
        }
        let table = Arc::new(table);
        if let Ok(mut tables) = self.tables.lock() {
            tables.insert(files.to_vec(), Arc::clone(&table));
        }
        Ok(table)
    }
}

fn read_spec_file(path: &Path) -> Result<SpecTable, SpecError> {
    let file_error = |message: String| SpecError::File {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| file_error(format!("cannot read the SWE-bench spec file: {e}")))?;
    SpecTable::from_yaml(&text).map_err(|e| file_error(e.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    source: String,
    #[serde(default)]
    requirement_replacements: Vec<RequirementReplacement>,
    repos: BTreeMap<String, RepoFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoFile {
    log_parser: String,
    directives: DirectiveStyle,
    #[serde(default)]
    requirements_paths: Vec<String>,
    #[serde(default)]
    environment_yml_paths: Vec<String>,
    #[serde(default)]
    base_commit_branches: BTreeMap<String, String>,
    specs: Vec<GroupFile>,
}

/// Versions that share one spec.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    versions: Vec<String>,
    python: String,
    #[serde(default)]
    packages: Option<PackagesFile>,
    #[serde(default)]
    no_use_env: bool,
    #[serde(default)]
    pre_install: Vec<String>,
    #[serde(default)]
    install: Option<String>,
    #[serde(default)]
    pip_packages: Vec<String>,
    #[serde(default)]
    eval_commands: Vec<String>,
    test_cmd: String,
    #[serde(default)]
    execute_test_as_nonroot: bool,
    #[serde(default)]
    nano_cpus: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PackagesFile {
    File(String),
    List(Vec<String>),
}

fn repo_specs(repo: &str, raw: RepoFile) -> Result<RepoSpecs, SpecError> {
    let invalid = |message: String| SpecError::Invalid {
        repo: repo.to_owned(),
        message,
    };
    let log_parser = ParserName::from_name(&raw.log_parser).ok_or_else(|| {
        invalid(format!(
            "unknown log_parser {:?} (known: {})",
            raw.log_parser,
            ParserName::names()
        ))
    })?;
    let mut versions: Vec<(String, VersionSpec)> = Vec::new();
    for group in raw.specs {
        let spec = version_spec(&group).map_err(invalid)?;
        for version in &group.versions {
            if versions.iter().any(|(known, _)| known == version) {
                return Err(invalid(format!("version {version:?} is listed twice")));
            }
            versions.push((version.clone(), spec.clone()));
        }
    }
    Ok(RepoSpecs {
        repo: repo.to_owned(),
        log_parser,
        directives: raw.directives,
        requirements_paths: raw.requirements_paths,
        environment_yml_paths: raw.environment_yml_paths,
        base_commit_branches: raw.base_commit_branches,
        versions,
    })
}

fn version_spec(group: &GroupFile) -> Result<VersionSpec, String> {
    let versions = group.versions.join(", ");
    if group.test_cmd.trim().is_empty() {
        return Err(format!("versions {versions}: empty test_cmd"));
    }
    if group.python.trim().is_empty() {
        return Err(format!("versions {versions}: empty python"));
    }
    let packages = match &group.packages {
        None => Packages::None,
        Some(PackagesFile::File(name)) if name == "requirements.txt" => Packages::RequirementsTxt,
        Some(PackagesFile::File(name)) if name == "environment.yml" => Packages::EnvironmentYml,
        Some(PackagesFile::File(other)) => {
            return Err(format!(
                "versions {versions}: packages {other:?} is neither requirements.txt, \
                 environment.yml nor a list"
            ));
        }
        Some(PackagesFile::List(list)) => Packages::List(list.clone()),
    };
    Ok(VersionSpec {
        python: group.python.clone(),
        packages,
        no_use_env: group.no_use_env,
        pre_install: group.pre_install.clone(),
        install: group.install.clone().filter(|cmd| !cmd.trim().is_empty()),
        pip_packages: group.pip_packages.clone(),
        eval_commands: group.eval_commands.clone(),
        test_cmd: group.test_cmd.clone(),
        execute_test_as_nonroot: group.execute_test_as_nonroot,
        nano_cpus: group.nano_cpus,
    })
}

/// A log parser aci knows, by the name an instance's `log_parser` (or the spec table) gives it.
/// The parsers themselves are `eval::parse`'s ([`ParserName`]'s `parser()` there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ParserName {
    /// pytest `-rA` short summary (SWE-bench's `parse_log_pytest`).
    Pytest,
    /// pytest, with parameters that are absolute paths cut to their last component
    /// (`parse_log_pytest_options`: requests, pylint).
    PytestOptions,
    /// pytest with colour codes stripped and the older `<id> STATUS` lines read too
    /// (`parse_log_pytest_v2`: astropy, scikit-learn, sphinx).
    PytestV2,
    /// pytest with matplotlib's `MouseButton` ids rewritten (`parse_log_matplotlib`).
    Matplotlib,
    /// pytest, passes and failures only (`parse_log_seaborn`).
    Seaborn,
    /// Django's `runtests.py --verbosity 2` (`parse_log_django`).
    Django,
    /// sympy's `bin/test --verbose` (`parse_log_sympy`).
    Sympy,
    /// Python `unittest -v`.
    Unittest,
    /// `cargo test` (libtest's pretty format).
    Cargo,
    /// `cargo test` as SWE-bench reads it (its `parse_log_cargo`, for the records that carry
    /// their own spec).
    CargoSwebench,
    /// PHPUnit `--testdox` (`parse_log_phpunit`).
    Phpunit,
    /// `go test -v` (`parse_log_gotest`).
    Gotest,
    /// RSpec's JSON report through `jq` (`parse_log_rspec_transformed_json`).
    RspecTransformedJson,
    /// Karma's mocha reporter (`parse_log_karma`).
    Karma,
    /// Ant's `junit` task (`parse_log_ant`).
    Ant,
    /// Maven, one run per test (`parse_log_maven`).
    Maven,
    /// Redis's Tcl test suite (`parse_log_redis`).
    Redis,
    /// test-unit's verbose output (`parse_log_ruby_unit`).
    RubyUnit,
    /// GoogleTest (`parse_log_googletest`).
    Googletest,
    /// Gradle's test events (`parse_log_gradle_custom`).
    GradleCustom,
    /// Jest `--verbose` (`parse_log_jest`).
    Jest,
    /// Jest's JSON report through `jq` (`parse_log_jest_json`).
    JestJson,
    /// TAP (`parse_log_tap`).
    Tap,
    /// Automake's test driver (`parse_log_jq`).
    Jq,
    /// minitest `-v` (`parse_log_minitest`).
    Minitest,
    /// Cucumber's progress format (`parse_log_cucumber`).
    Cucumber,
    /// MicroPython's `run-tests.py` (`parse_log_micropython_test`).
    MicropythonTest,
    /// Vitest `--reporter=verbose` (`parse_log_vitest`).
    Vitest,
    /// doctest's XML reporter (`parse_log_doctest`).
    Doctest,
}

/// SWE-bench's per-repository parser names (`parse_log_<repo>`) and the parser each is.
const SWE_BENCH_REPO_PARSERS: [(&str, ParserName); 13] = [
    ("astroid", ParserName::Pytest),
    ("flask", ParserName::Pytest),
    ("marshmallow", ParserName::Pytest),
    ("pvlib", ParserName::Pytest),
    ("pyvista", ParserName::Pytest),
    ("sqlfluff", ParserName::Pytest),
    ("xarray", ParserName::Pytest),
    ("pydicom", ParserName::PytestOptions),
    ("requests", ParserName::PytestOptions),
    ("pylint", ParserName::PytestOptions),
    ("astropy", ParserName::PytestV2),
    ("scikit", ParserName::PytestV2),
    ("sphinx", ParserName::PytestV2),
];

impl ParserName {
    /// Every parser, in the order `--help` and error messages list them.
    pub const ALL: [Self; 29] = [
        Self::Pytest,
        Self::PytestOptions,
        Self::PytestV2,
        Self::Matplotlib,
        Self::Seaborn,
        Self::Django,
        Self::Sympy,
        Self::Unittest,
        Self::Cargo,
        Self::CargoSwebench,
        Self::Phpunit,
        Self::Gotest,
        Self::RspecTransformedJson,
        Self::Karma,
        Self::Ant,
        Self::Maven,
        Self::Redis,
        Self::RubyUnit,
        Self::Googletest,
        Self::GradleCustom,
        Self::Jest,
        Self::JestJson,
        Self::Tap,
        Self::Jq,
        Self::Minitest,
        Self::Cucumber,
        Self::MicropythonTest,
        Self::Vitest,
        Self::Doctest,
    ];

    /// aci's name: `pytest`, `pytest_options`, `pytest_v2`, `matplotlib`, `seaborn`, `django`,
    /// `sympy`, `unittest`, `cargo`; SWE-bench's name without `parse_log_` for the parsers of the
    /// Multilingual records (`gotest`, `phpunit`, …), and `cargo_swebench` for its cargo parser.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pytest => "pytest",
            Self::PytestOptions => "pytest_options",
            Self::PytestV2 => "pytest_v2",
            Self::Matplotlib => "matplotlib",
            Self::Seaborn => "seaborn",
            Self::Django => "django",
            Self::Sympy => "sympy",
            Self::Unittest => "unittest",
            Self::Cargo => "cargo",
            Self::CargoSwebench => "cargo_swebench",
            Self::Phpunit => "phpunit",
            Self::Gotest => "gotest",
            Self::RspecTransformedJson => "rspec_transformed_json",
            Self::Karma => "karma",
            Self::Ant => "ant",
            Self::Maven => "maven",
            Self::Redis => "redis",
            Self::RubyUnit => "ruby_unit",
            Self::Googletest => "googletest",
            Self::GradleCustom => "gradle_custom",
            Self::Jest => "jest",
            Self::JestJson => "jest_json",
            Self::Tap => "tap",
            Self::Jq => "jq",
            Self::Minitest => "minitest",
            Self::Cucumber => "cucumber",
            Self::MicropythonTest => "micropython_test",
            Self::Vitest => "vitest",
            Self::Doctest => "doctest",
        }
    }

    /// The parser called `name`: aci's names, SWE-bench's function names (`parse_log_pytest`,
    /// `parse_log_django`, …) and SWE-bench's per-repository aliases (`parse_log_astropy`,
    /// `parse_log_requests`, …, also without the `parse_log_` prefix).
    pub fn from_name(name: &str) -> Option<Self> {
        let bare = name.strip_prefix("parse_log_").unwrap_or(name);
        Self::ALL
            .into_iter()
            .find(|parser| parser.as_str() == bare)
            .or_else(|| {
                SWE_BENCH_REPO_PARSERS
                    .iter()
                    .find(|(alias, _)| *alias == bare)
                    .map(|(_, parser)| *parser)
            })
    }

    /// Whether this is one of the pytest parsers (they read the same runner's output).
    pub fn is_pytest(self) -> bool {
        matches!(
            self,
            Self::Pytest | Self::PytestOptions | Self::PytestV2 | Self::Matplotlib | Self::Seaborn
        )
    }

    /// aci's names, comma-separated, for error messages.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl fmt::Display for ParserName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
