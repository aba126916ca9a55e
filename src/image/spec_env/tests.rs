//! Spec environments, the pure parts: which release, the conda check, the requirements file as
//! SWE-bench reads it, the recipe, the hash and the tag.

use super::*;
use crate::spec::{SpecTable, builtin};

fn entry<'a>(table: &'a SpecTable, repo: &str, version: &str) -> SpecEntry<'a> {
    table.lookup(repo, version).unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn each_lite_spec_gets_the_release_of_its_python_or_an_error_that_names_it_and_suggests_swebench() {
    let table = builtin();
    let release = |repo: &str, version: &str| check("x-1", &entry(table, repo, version));
    assert_eq!(release("sympy/sympy", "1.1"), Ok(DebianRelease::Bullseye));
    assert_eq!(release("pallets/flask", "2.3"), Ok(DebianRelease::Bookworm));
    assert_eq!(
        crate::hint::with_hint(&release("django/django", "3.0").unwrap_err()),
        "x-1: the SWE-bench spec of django/django 3.0 asks for Python 3.6, which no Debian \
         release aci builds has (it has 3.9 (bullseye), 3.11 (bookworm), 3.13 (trixie)); no \
         other Python is substituted\nhint: run it in SWE-bench's prebuilt image with --images \
         swebench"
    );
    // Python first: xarray's 3.10 is the first reason, before its environment.yml.
    assert!(matches!(
        release("pydata/xarray", "0.12"),
        Err(SpecEnvError::NoRelease { python, .. }) if python == "3.10"
    ));
    assert_eq!(
        crate::hint::with_hint(&release("matplotlib/matplotlib", "3.5").unwrap_err()),
        "x-1: the SWE-bench spec of matplotlib/matplotlib 3.5 installs the packages of its \
         environment.yml with conda, which aci does not use (its environments come from Debian \
         and PyPI)\nhint: run it in SWE-bench's prebuilt image with --images swebench"
    );
}

#[test]
fn conda_package_specs_become_pip_requirements_or_are_refused() {
    for same in [
        "numpy",
        "numpy==1.19.2",
        "pandas<2.0.0",
        "matplotlib<3.9.0",
        "cython==3.0.10",
        "scipy>=1.5,<2",
        "setuptools==38.2.4",
    ] {
        assert_eq!(pip_requirement(same), Ok(same.to_owned()), "{same}");
    }
    assert_eq!(
        pip_requirement("numpy=1.19"),
        Ok("numpy==1.19.*".to_owned())
    );
    assert_eq!(
        pip_requirement("numpy=1.19.*"),
        Ok("numpy==1.19.*".to_owned())
    );
    for conda in [
        "numpy=1.19.2=py39h89c1606_0",
        "conda-forge::numpy",
        "numpy 1.19",
        "",
    ] {
        assert_eq!(
            pip_requirement(conda),
            Err(format!("the package {conda:?}, a conda spec")),
            "{conda}"
        );
    }
}

#[test]
fn a_requirements_file_is_read_as_swe_bench_reads_it() {
    let files = BTreeMap::from([
        (
            "requirements/dev.txt",
            "# dev tools\n-r tests.txt\n-e .\npre-commit==3.5\n.[test]\n-r missing.txt\ntox",
        ),
        (
            "requirements/tests.txt",
            "pytest==7.4\n# pinned\ntypes-pkg_resources\n",
        ),
    ]);
    let replacements = builtin().requirement_replacements.clone();
    let mut asked = Vec::new();
    let found = requirements_text(
        &strings(&["requirements.txt", "requirements/dev.txt"]),
        &replacements,
        |path| {
            asked.push(path.to_owned());
            files.get(path).map(|text| (*text).to_owned())
        },
    );
    assert_eq!(
        found,
        Some((
            "requirements/dev.txt".to_owned(),
            "pytest==7.4\ntypes-setuptools\n\npre-commit==3.5\ntox".to_owned()
        ))
    );
    assert_eq!(
        asked,
        strings(&[
            "requirements.txt",
            "requirements/dev.txt",
            "requirements/tests.txt",
            "requirements/missing.txt"
        ])
    );
    assert_eq!(requirements_text(&strings(&["a.txt"]), &[], |_| None), None);
}

fn sympy() -> SpecEnv {
    let table = builtin();
    let entry = entry(table, "sympy/sympy", "1.1");
    let release = check("x", &entry).unwrap();
    spec_env(&entry, release, None)
}

#[test]
fn sympy_versions_1_0_to_1_12_share_one_environment_76_of_its_77_lite_instances() {
    let table = builtin();
    let hashes: std::collections::BTreeSet<String> = [
        "1.0", "1.1", "1.2", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12",
    ]
    .iter()
    .map(|version| {
        let entry = entry(table, "sympy/sympy", version);
        spec_env(&entry, check("x", &entry).unwrap(), None).env_hash("sha256:base")
    })
    .collect();
    assert_eq!(hashes.len(), 1);
    let env = sympy();
    assert_eq!(env.release, DebianRelease::Bullseye);
    assert_eq!(env.packages, strings(&["mpmath", "flake8"]));
    assert_eq!(
        env.pip_packages,
        strings(&["mpmath==1.3.0", "flake8-comprehensions"])
    );
    assert_eq!(env.repo_setup(), strings(&["python -m pip install -e ."]));
}

#[test]
fn the_pins_of_a_spec_are_its_exact_versions_from_every_list() {
    let mut env = sympy();
    assert_eq!(env.pins(), Pins::of(["mpmath==1.3.0"]));
    env.packages.push("numpy==1.19.2".to_owned());
    env.packages.push("scipy==1.5.*".to_owned());
    env.requirements = Some("# tests\nhypothesis==6.82.6\npytest>=7\n".to_owned());
    assert_eq!(
        env.pins(),
        Pins::of(["mpmath==1.3.0", "numpy==1.19.2", "hypothesis==6.82.6"])
    );
}

#[test]
fn the_recipe_creates_the_venv_checks_its_python_installs_in_swe_bench_order_and_puts_it_on_path() {
    let mut env = sympy();
    env.requirements = Some("pytest\n".to_owned());
    let labels = BTreeMap::from([("aci.image".to_owned(), "env".to_owned())]);
    assert_eq!(
        env.dockerfile("sha256:py39", &labels),
        "FROM sha256:py39\nLABEL \"aci.image\"=\"env\"\nADD spec.tar /\nRUN bash /tmp/aci-spec/1-venv.sh\nRUN \
         bash /tmp/aci-spec/2-packages.sh\nRUN bash /tmp/aci-spec/3-requirements.sh\nRUN bash \
         /tmp/aci-spec/4-pip-packages.sh\nRUN bash /tmp/aci-spec/5-lock.sh\nRUN rm -rf /tmp/aci-spec\nENV \
         VIRTUAL_ENV=/opt/aci-venv \
         PATH=/opt/aci-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
    );
    let steps = env.steps();
    assert_eq!(
        steps[0].script,
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: python3 -m venv /opt/aci-venv (Python 3.9 of \
         bullseye)'\nset -x\npython3 -m venv /opt/aci-venv\n/opt/aci-venv/bin/python -c 'import \
         sys; v = \"%d.%d\" % sys.version_info[:2]; print(\"Python\", sys.version.split()[0]); \
         sys.exit(0 if v == \"3.9\" else \"the venv has Python \" + v + \", the spec asks for \
         3.9\")'\n/opt/aci-venv/bin/python -m pip --version\n"
    );
    assert_eq!(
        steps[1].script,
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: pip install the packages of the spec'\nset -x\n\
         /opt/aci-venv/bin/python -m pip install mpmath flake8\n"
    );
    assert_eq!(
        steps[2].script,
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: pip install -r the requirements file \
         of the repository'\nset -x\n/opt/aci-venv/bin/python -m pip install -r \
         /tmp/aci-spec/requirements.txt\n"
    );
    assert_eq!(
        steps[3].script,
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: pip install the pip_packages of the spec'\nset -x\n\
         /opt/aci-venv/bin/python -m pip install mpmath==1.3.0 flake8-comprehensions\n"
    );
    assert_eq!(
        steps[4].script,
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: pip freeze --all (the lock)'\nset -x\n\
         /opt/aci-venv/bin/python -m pip freeze --all | sed 's/^/[aci] lock: /'\n"
    );
    // A spec with no packages, no requirements and no pins only makes the venv (and its lock).
    let bare = SpecEnv {
        packages: Vec::new(),
        requirements: None,
        pip_packages: Vec::new(),
        ..env.clone()
    };
    assert_eq!(bare.steps().len(), 2);
    // Resolved as of a date and rebuilt from a lock: the index argument and the constraints.
    let dated = SpecEnv {
        as_of: Some(AsOf {
            cutoff: crate::config::Cutoff(1_557_928_301),
            why: "the record's created_at".to_owned(),
        }),
        constraints: Some("mpmath==1.3.0\n".to_owned()),
        ..env
    };
    assert!(
        dated
            .dockerfile("sha256:py39", &BTreeMap::new())
            .starts_with(
                "FROM sha256:py39\nARG PIP_INDEX_URL\nARG \
             PIP_CONSTRAINT=/tmp/aci-spec/constraints.txt\nADD spec.tar /\n"
            )
    );
}

#[test]
fn the_build_context_holds_the_dockerfile_and_the_scripts() {
    let mut env = sympy();
    env.requirements = Some("pytest==8\n".to_owned());
    let context = env.build_context("sha256:b", &BTreeMap::new()).unwrap();
    let entries = |bytes: &[u8]| -> Vec<(String, Vec<u8>)> {
        let mut archive = tar::Archive::new(bytes);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let name = entry.path().unwrap().display().to_string();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
                (name, data)
            })
            .collect()
    };
    let outer = entries(&context);
    let names: Vec<&str> = outer.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["Dockerfile", "spec.tar"]);
    assert_eq!(
        String::from_utf8_lossy(&outer[0].1),
        env.dockerfile("sha256:b", &BTreeMap::new())
    );
    let inner = entries(&outer[1].1);
    let names: Vec<&str> = inner.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tmp/aci-spec/1-venv.sh",
            "tmp/aci-spec/2-packages.sh",
            "tmp/aci-spec/3-requirements.sh",
            "tmp/aci-spec/4-pip-packages.sh",
            "tmp/aci-spec/5-lock.sh",
            "tmp/aci-spec/requirements.txt"
        ]
    );
    assert_eq!(inner[5].1, b"pytest==8\n");
}

#[test]
fn the_env_hash_changes_with_what_is_installed_and_not_with_per_instance_steps() {
    let env = sympy();
    let hash = env.env_hash("sha256:a");
    assert_eq!(hash.len(), 64);
    let changed = |change: &dyn Fn(&mut SpecEnv)| {
        let mut other = env.clone();
        change(&mut other);
        other.env_hash("sha256:a")
    };
    assert_ne!(env.env_hash("sha256:b"), hash);
    assert_ne!(changed(&|e| e.python = "3.11".to_owned()), hash);
    assert_ne!(
        changed(&|e| {
            e.packages.pop();
        }),
        hash
    );
    assert_ne!(changed(&|e| e.pip_packages.push("six".to_owned())), hash);
    assert_ne!(changed(&|e| e.requirements = Some(String::new())), hash);
    // A package moved between the lists is another environment (pins are installed last).
    assert_ne!(
        changed(&|e| {
            let moved = e.packages.remove(1);
            e.pip_packages.insert(0, moved);
        }),
        hash
    );
    assert_eq!(changed(&|e| e.install = Some("make".to_owned())), hash);
    assert_eq!(changed(&|e| e.pre_install.push("ls".to_owned())), hash);
    assert_eq!(changed(&|e| e.version = "1.9".to_owned()), hash);
    // A cutoff makes it another environment; a lock to rebuild it with does not.
    let as_of = |cutoff, why: &str| {
        Some(AsOf {
            cutoff: crate::config::Cutoff(cutoff),
            why: why.to_owned(),
        })
    };
    let dated = changed(&|e| e.as_of = as_of(0, "env.resolve_as_of"));
    assert_ne!(dated, hash);
    assert_ne!(changed(&|e| e.as_of = as_of(1, "env.resolve_as_of")), dated);
    // Why the cutoff is that instant does not change what is installed.
    assert_eq!(
        changed(&|e| e.as_of = as_of(0, "the record's created_at")),
        dated
    );
    assert_eq!(
        changed(&|e| e.constraints = Some("six==1\n".to_owned())),
        hash
    );
}

#[test]
fn tags_name_the_repository_and_the_hash_in_characters_docker_allows() {
    let env = SpecEnv {
        repo: "Foo/Bar+Baz".to_owned(),
        ..sympy()
    };
    assert_eq!(
        env.tag("0123456789abcdef"),
        "aci-spec-foo__bar-baz:0123456789ab"
    );
    // Versions with the same environment share its tag.
    let other_version = SpecEnv {
        version: "1.9".to_owned(),
        ..sympy()
    };
    assert_eq!(
        sympy().tag(&"f".repeat(64)),
        "aci-spec-sympy__sympy:ffffffffffff"
    );
    assert_eq!(
        other_version.tag(&"f".repeat(64)),
        sympy().tag(&"f".repeat(64))
    );
}

#[test]
fn pre_install_commands_run_as_one_script_before_install() {
    let table = builtin();
    let entry = entry(table, "sphinx-doc/sphinx", "7.2");
    let env = spec_env(&entry, check("x", &entry).unwrap(), None);
    assert_eq!(
        env.repo_setup(),
        strings(&[
            "sed -i 's/pytest/pytest -rA/' tox.ini\napt-get update && apt-get install -y graphviz",
            "python -m pip install -e .[test]"
        ])
    );
}

/// An `environment_setup_commit` of `--output=FILE` made `git show` write a host file named
/// `FILE:<requirements path>`; now it is a name that is not there, and the file is not read.
#[test]
fn a_setup_commit_that_looks_like_an_option_writes_no_host_file() {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(dir.path().join("requirements.txt"), "pytest\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "one"]);
    assert_eq!(
        git_show(dir.path(), "HEAD", "requirements.txt").as_deref(),
        Some("pytest\n")
    );
    let victim = dir.path().join("victim");
    let commit = format!("--output={}", victim.display());
    assert_eq!(git_show(dir.path(), &commit, "requirements.txt"), None);
    let written = dir.path().join("victim:requirements.txt");
    assert!(!written.exists(), "git show wrote {}", written.display());
}
