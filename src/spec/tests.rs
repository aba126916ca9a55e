//! The built-in table against facts of `swebench` 4.1.0's constants, and the spec file's checks.

use super::*;

fn table() -> &'static SpecTable {
    builtin()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_builtin_table_has_the_eighteen_swe_bench_repositories_with_their_parsers() {
    let parsers: Vec<(&str, ParserName)> = table()
        .repos()
        .map(|repo| (repo.repo.as_str(), repo.log_parser))
        .collect();
    assert_eq!(
        parsers,
        vec![
            ("astropy/astropy", ParserName::PytestV2),
            ("django/django", ParserName::Django),
            ("marshmallow-code/marshmallow", ParserName::Pytest),
            ("matplotlib/matplotlib", ParserName::Matplotlib),
            ("mwaskom/seaborn", ParserName::Seaborn),
            ("pallets/flask", ParserName::Pytest),
            ("psf/requests", ParserName::PytestOptions),
            ("pvlib/pvlib-python", ParserName::Pytest),
            ("pydata/xarray", ParserName::Pytest),
            ("pydicom/pydicom", ParserName::PytestOptions),
            ("pylint-dev/astroid", ParserName::Pytest),
            ("pylint-dev/pylint", ParserName::PytestOptions),
            ("pytest-dev/pytest", ParserName::Pytest),
            ("pyvista/pyvista", ParserName::Pytest),
            ("scikit-learn/scikit-learn", ParserName::PytestV2),
            ("sphinx-doc/sphinx", ParserName::PytestV2),
            ("sqlfluff/sqlfluff", ParserName::Pytest),
            ("sympy/sympy", ParserName::Sympy),
        ]
    );
    assert_eq!(table().source, "swebench 4.1.0");
    assert_eq!(
        table().requirement_replacements,
        vec![RequirementReplacement {
            from: "types-pkg_resources".to_owned(),
            to: "types-setuptools".to_owned(),
        }]
    );
}

#[test]
fn django_entries_carry_the_test_command_locale_commands_and_install() {
    let entry = table().lookup("django/django", "3.0").unwrap();
    assert_eq!(entry.repo.directives, DirectiveStyle::DjangoModules);
    assert_eq!(
        entry.repo.requirements_paths,
        strings(&["tests/requirements/py3.txt"])
    );
    assert_eq!(
        *entry.spec,
        VersionSpec {
            python: "3.6".to_owned(),
            packages: Packages::RequirementsTxt,
            no_use_env: false,
            pre_install: Vec::new(),
            install: Some("python -m pip install -e .".to_owned()),
            pip_packages: Vec::new(),
            eval_commands: strings(&[
                "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",
                "export LANG=en_US.UTF-8",
                "export LANGUAGE=en_US:en",
                "export LC_ALL=en_US.UTF-8",
            ]),
            test_cmd: "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
                .to_owned(),
            execute_test_as_nonroot: false,
            nano_cpus: None,
        }
    );
    // 1.9 runs without --parallel, as SWE-bench's table says.
    assert_eq!(
        table()
            .lookup("django/django", "1.9")
            .unwrap()
            .spec
            .test_cmd,
        "./tests/runtests.py --verbosity 2"
    );
}

#[test]
fn environment_facts_for_other_repositories_match_swe_bench() {
    let sympy = table().lookup("sympy/sympy", "1.1").unwrap().spec;
    assert_eq!(
        sympy.test_cmd,
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
    );
    assert_eq!(sympy.python, "3.9");
    assert_eq!(
        sympy.packages,
        Packages::List(strings(&["mpmath", "flake8"]))
    );
    assert_eq!(
        sympy.pip_packages,
        strings(&["mpmath==1.3.0", "flake8-comprehensions"])
    );
    let astropy = table().lookup("astropy/astropy", "1.3").unwrap().spec;
    assert_eq!(
        astropy.test_cmd,
        "pytest -rA -vv -o console_output_style=classic --tb=no"
    );
    assert_eq!(astropy.python, "3.6");
    assert_eq!(
        astropy.packages,
        Packages::List(strings(&["setuptools==38.2.4"]))
    );
    assert_eq!(astropy.pip_packages.len(), 27);
    let astropy_53 = table().lookup("astropy/astropy", "v5.3").unwrap().spec;
    assert_eq!(astropy_53.python, "3.10");
    let matplotlib = table().lookup("matplotlib/matplotlib", "3.5").unwrap();
    assert_eq!(matplotlib.spec.packages, Packages::EnvironmentYml);
    assert_eq!(
        matplotlib.repo.environment_yml_paths,
        strings(&["environment.yml"])
    );
    assert_eq!(matplotlib.spec.pre_install.len(), 7);
    assert!(
        table()
            .lookup("matplotlib/matplotlib", "1.5")
            .unwrap()
            .spec
            .execute_test_as_nonroot
    );
    assert!(
        table()
            .lookup("pydata/xarray", "0.12")
            .unwrap()
            .spec
            .no_use_env
    );
    assert_eq!(
        table()
            .lookup("pylint-dev/pylint", "2.15")
            .unwrap()
            .spec
            .nano_cpus,
        Some(2_000_000_000)
    );
    assert_eq!(
        table()
            .lookup("psf/requests", "2.10")
            .unwrap()
            .spec
            .packages,
        Packages::List(strings(&["pytest"]))
    );
    let sphinx = table().lookup("sphinx-doc/sphinx", "3.2").unwrap().spec;
    assert_eq!(sphinx.test_cmd, "tox --current-env -epy39 -v --");
    assert_eq!(
        sphinx.pre_install.first().map(String::as_str),
        Some("sed -i 's/pytest/pytest -rA/' tox.ini")
    );
    assert_eq!(
        table()
            .repo("sympy/sympy")
            .unwrap()
            .base_commit_branches
            .get("cffd4e0f86fefd4802349a9f9b19ed70934ea354")
            .map(String::as_str),
        Some("1.7")
    );
}

#[test]
fn a_missing_repository_or_version_is_an_error_that_names_both() {
    assert_eq!(
        table()
            .lookup("acme/widget", "1.0")
            .unwrap_err()
            .to_string(),
        "the built-in SWE-bench specs have no repository \"acme/widget\" (asked for version \"1.0\")"
    );
    let error = table()
        .lookup("mwaskom/seaborn", "9.9")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "the built-in SWE-bench specs have no version \"9.9\" of mwaskom/seaborn \
         (known: 0.11, 0.12, 0.13, 0.14)"
    );
}

const MINIMAL: &str = "\
source: test
repos:
  acme/widget:
    log_parser: parse_log_pytest
    directives: paths
    specs:
      - versions: [\"1.0\", \"1.1\"]
        python: \"3.11\"
        packages: [\"numpy==2.0\"]
        test_cmd: pytest -rA
";

#[test]
fn a_spec_file_of_its_own_is_read_with_swe_bench_parser_names() {
    let table = SpecTable::from_yaml(MINIMAL).unwrap();
    let entry = table.lookup("acme/widget", "1.1").unwrap();
    assert_eq!(entry.repo.log_parser, ParserName::Pytest);
    assert_eq!(
        entry.spec.packages,
        Packages::List(strings(&["numpy==2.0"]))
    );
    assert_eq!(entry.spec.install, None);
    assert_eq!(
        table
            .repo("acme/widget")
            .unwrap()
            .versions()
            .collect::<Vec<_>>(),
        vec!["1.0", "1.1"]
    );
}

#[test]
fn invalid_spec_files_are_rejected_with_the_reason() {
    let cases = [
        (
            MINIMAL.replace("parse_log_pytest", "mocha"),
            "invalid SWE-bench spec for acme/widget: unknown log_parser \"mocha\" (known: pytest, \
             pytest_options, pytest_v2, matplotlib, seaborn, django, sympy, unittest, cargo, \
             cargo_swebench, phpunit, gotest, rspec_transformed_json, karma, ant, maven, redis, \
             ruby_unit, googletest, gradle_custom, jest, jest_json, tap, jq, minitest, cucumber, \
             micropython_test, vitest, doctest)",
        ),
        (
            MINIMAL.replace("[\"1.0\", \"1.1\"]", "[\"1.0\", \"1.0\"]"),
            "invalid SWE-bench spec for acme/widget: version \"1.0\" is listed twice",
        ),
        (
            MINIMAL.replace("[\"numpy==2.0\"]", "setup.py"),
            "invalid SWE-bench spec for acme/widget: versions 1.0, 1.1: packages \"setup.py\" is \
             neither requirements.txt, environment.yml nor a list",
        ),
        (
            MINIMAL.replace("test_cmd: pytest -rA", "test_cmd: \"\""),
            "invalid SWE-bench spec for acme/widget: versions 1.0, 1.1: empty test_cmd",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(
            SpecTable::from_yaml(&text).unwrap_err().to_string(),
            message
        );
    }
    let unknown_key = MINIMAL.replace("python:", "pyhton:");
    assert!(matches!(
        SpecTable::from_yaml(&unknown_key),
        Err(SpecError::Syntax(message)) if message.contains("unknown field `pyhton`")
    ));
}

#[test]
fn dev_split_entries_carry_swebench_4_1_0_facts() {
    let entry = table().lookup("pvlib/pvlib-python", "0.8").unwrap();
    assert_eq!(entry.repo.directives, DirectiveStyle::Paths);
    assert_eq!(
        *entry.spec,
        VersionSpec {
            python: "3.9".to_owned(),
            packages: Packages::List(strings(&["pandas", "scipy"])),
            no_use_env: false,
            pre_install: Vec::new(),
            install: Some("python -m pip install -e .[all]".to_owned()),
            pip_packages: strings(&["jupyter", "ipython", "matplotlib", "pytest", "flake8"]),
            eval_commands: Vec::new(),
            test_cmd: "pytest -rA".to_owned(),
            execute_test_as_nonroot: false,
            nano_cpus: None,
        }
    );
    let pyvista = table().lookup("pyvista/pyvista", "0.39").unwrap();
    assert_eq!(
        pyvista.repo.requirements_paths,
        strings(&["requirements_test.txt", "requirements.txt"])
    );
    assert_eq!(pyvista.spec.packages, Packages::RequirementsTxt);
    assert_eq!(
        pyvista.spec.pre_install,
        strings(&["apt-get update && apt-get install -y ffmpeg libsm6 libxext6 libxrender1"])
    );
    let sqlfluff = table().lookup("sqlfluff/sqlfluff", "2.2").unwrap();
    assert_eq!(
        sqlfluff.repo.requirements_paths,
        strings(&["requirements_dev.txt"])
    );
    assert_eq!(sqlfluff.spec.pip_packages, Vec::<String>::new());
    let pydicom = table().lookup("pydicom/pydicom", "1.3").unwrap();
    assert_eq!(pydicom.spec.python, "3.6");
    assert_eq!(pydicom.repo.log_parser, ParserName::PytestOptions);
    assert_eq!(
        table()
            .lookup("marshmallow-code/marshmallow", "3.19")
            .unwrap()
            .spec
            .install
            .as_deref(),
        Some("python -m pip install -e '.[dev]'")
    );
    assert_eq!(
        table()
            .repo("pylint-dev/astroid")
            .unwrap()
            .versions()
            .collect::<Vec<_>>(),
        vec![
            "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.12", "2.13", "2.14", "2.15", "2.16",
            "3.0"
        ]
    );
}
