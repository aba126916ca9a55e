//! Records and configurations to plans, with no Docker: real SWE-bench Lite records, the demo
//! tasks, and configurations with `env.image`, image templates and each language.

use std::path::{Path, PathBuf};

use super::*;
use crate::config::{Config, EnvConfig};
use crate::instance::{load_instances_file, parse_instances};
use crate::spec::builtin;

/// One Lite record by id.
fn lite(id: &str) -> Instance {
    let path = crate::provision::swebench_data_dir().join("lite.jsonl");
    let loaded = load_instances_file(&path).unwrap();
    loaded
        .instances
        .into_iter()
        .find(|instance| instance.instance_id == id)
        .unwrap_or_else(|| panic!("{id} is not in {}", path.display()))
}

/// One demo task by id, its `repo_path` resolved against the demo's directory.
fn demo(id: &str) -> Instance {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/instances.jsonl");
    let loaded = load_instances_file(&path).unwrap();
    loaded
        .instances
        .into_iter()
        .find(|instance| instance.instance_id == id)
        .unwrap()
}

fn record(extra: &serde_json::Value) -> Instance {
    let mut record = serde_json::json!({
        "instance_id": "a__b-1", "problem_statement": "", "repo": "sympy/sympy",
        "version": "1.1", "base_commit": "0000000000000000000000000000000000000000",
    });
    for (key, value) in extra.as_object().unwrap() {
        record[key] = value.clone();
    }
    parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

fn env() -> EnvConfig {
    EnvConfig {
        repo_cache: Some(PathBuf::from("/cache/repos")),
        ..EnvConfig::default()
    }
}

/// The configuration `--images swebench` makes.
fn swebench_env() -> EnvConfig {
    let preset = crate::image::pull::swebench_preset();
    let config: Config =
        crate::config::resolve_with_presets(&[("--images swebench", &preset)], &[], &[]).unwrap();
    EnvConfig {
        repo_cache: Some(PathBuf::from("/cache/repos")),
        ..config.env
    }
}

fn mirror(repo: &str) -> MirrorPlan {
    MirrorPlan {
        url: format!("https://github.com/{repo}.git"),
        cache: Some(PathBuf::from("/cache/repos")),
    }
}

#[test]
fn a_lite_record_whose_spec_python_is_3_9_runs_on_the_bullseye_spec_environment() {
    let instance = lite("sympy__sympy-20590");
    let plan = plan(&instance, &env(), builtin());
    let spec = SpecImage {
        repo: "sympy/sympy".to_owned(),
        version: "1.7".to_owned(),
        python: "3.9".to_owned(),
        release: DebianRelease::Bullseye,
        requirements: false,
        setup: vec!["python -m pip install -e .".to_owned()],
    };
    assert_eq!(plan.image, ImagePlan::Spec(spec.clone()));
    // What the manifest, the shell's banner and the repository's message name: bullseye's
    // Python image, never the bookworm one the record would have had without its spec.
    assert_eq!(plan.image.base().as_deref(), Some("aci-python:bullseye"));
    assert_eq!(
        plan.image.debian_base().as_deref(),
        Some("aci-base:bullseye")
    );
    assert_eq!(
        plan.image.describe(),
        "the environment of the SWE-bench spec of sympy/sympy 1.7 on aci-python:bullseye"
    );
    assert_eq!(
        plan.repository,
        RepoPlan::ImageElseMirror {
            image: "aci-python:bullseye".to_owned(),
            repo_dir: "/testbed".to_owned(),
            mirror: mirror("sympy/sympy"),
        }
    );
    assert_eq!(plan.layer, LayerPlan::Spec(spec.setup));
    assert_eq!(plan.commit, instance.base_commit);
    assert_eq!(plan.activate, None);
    assert_eq!(plan.test_source, TestSource::Spec);
    assert_eq!(plan.log_parser, Some(ParserName::Sympy));
    let grading = plan.grading.clone().unwrap();
    assert_eq!(
        grading.spec,
        Some(("sympy/sympy".to_owned(), "1.7".to_owned()))
    );
    let json = plan.to_json();
    assert_eq!(json["instance_id"], "sympy__sympy-20590");
    assert_eq!(json["language"], "python");
    assert_eq!(json["image"]["obtained"], "spec");
    assert_eq!(json["image"]["base"], "aci-python:bullseye");
    assert_eq!(json["image"]["release"], "bullseye");
    assert_eq!(json["repository"]["source"], "image_else_mirror");
    assert_eq!(json["layer"]["kind"], "spec");
    assert_eq!(json["test_cmd_source"], "spec");
    assert_eq!(json["test_cmd"], grading.command_line());
    assert_eq!(json["log_parser"], "sympy");
}

#[test]
fn a_lite_record_whose_spec_aci_cannot_build_plans_no_image_and_says_why() {
    let plan = plan(&lite("django__django-11099"), &env(), builtin());
    let ImagePlan::Unbuildable(error) = &plan.image else {
        panic!("{:?}", plan.image);
    };
    assert!(
        error.to_string().starts_with(
            "django__django-11099: the SWE-bench spec of django/django 3.0 asks for Python 3.6"
        ),
        "{error}"
    );
    assert_eq!(plan.image.base(), None);
    assert_eq!(plan.repository, RepoPlan::Mirror(mirror("django/django")));
    assert_eq!(plan.layer, LayerPlan::None);
    assert_eq!(plan.log_parser, Some(ParserName::Django));
    let json = plan.to_json();
    assert_eq!(json["image"]["obtained"], "none");
    assert_eq!(json["repository"]["source"], "mirror");
}

#[test]
fn with_images_swebench_a_lite_record_pulls_its_prebuilt_image_and_activates_its_conda_env() {
    let env = swebench_env();
    let plan = plan(&lite("django__django-11099"), &env, builtin());
    let image = "swebench/sweb.eval.x86_64.django_1776_django-11099:latest";
    assert_eq!(
        plan.image,
        ImagePlan::Pulled {
            reference: image.to_owned(),
            from: ImageChoice::Template,
            policy: PullPolicy::Missing,
        }
    );
    assert_eq!(plan.image.debian_base(), None);
    assert_eq!(
        plan.repository,
        RepoPlan::ImageElseMirror {
            image: image.to_owned(),
            repo_dir: "/testbed".to_owned(),
            mirror: mirror("django/django"),
        }
    );
    assert_eq!(plan.layer, LayerPlan::None);
    assert_eq!(
        plan.activate.as_deref(),
        Some(crate::image::pull::SWEBENCH_ACTIVATE)
    );
    assert_eq!(plan.test_source, TestSource::Spec);
    let json = plan.to_json();
    assert_eq!(json["image"]["obtained"], "pull");
    assert_eq!(json["image"]["reference"], image);
    assert_eq!(json["image"]["pull"], "missing");
    assert_eq!(json["image"]["from"], "env.image_template");
}

#[test]
fn demo_tasks_run_on_their_language_image_with_their_repository_and_test_command() {
    for (id, language, image) in [
        ("demo__inicfg-1", "python", "aci-python:bookworm"),
        ("demo__ringbuf-1", "rust", "aci-rust:bookworm"),
    ] {
        let instance = demo(id);
        let plan = plan(&instance, &env(), builtin());
        assert_eq!(
            plan.image,
            ImagePlan::Built {
                reference: image.to_owned(),
                from: ImageChoice::Language,
                release: Some(DebianRelease::Bookworm),
            },
            "{id}"
        );
        assert_eq!(
            plan.repository,
            RepoPlan::HostPath(instance.repo_path.clone().unwrap())
        );
        assert_eq!(plan.layer, LayerPlan::None);
        assert_eq!(plan.language, language);
        assert_eq!(plan.test_source, TestSource::Record);
        let json = plan.to_json();
        assert_eq!(json["image"]["obtained"], "built");
        assert_eq!(json["image"]["debian_base"], "aci-base:bookworm");
        assert_eq!(json["repository"]["source"], "repo_path");
        assert_eq!(json["test_cmd"], instance.test_cmd.clone().unwrap());
        assert_eq!(json["test_cmd_source"], "record");
        assert_eq!(json["log_parser"], instance.log_parser.clone().unwrap());
    }
}

#[test]
fn the_image_is_env_image_then_the_records_then_the_template_then_the_spec_then_the_language() {
    let image_of = |instance: &Instance, env: &EnvConfig| plan(instance, env, builtin()).image;
    let built = |reference: &str, from, release| ImagePlan::Built {
        reference: reference.to_owned(),
        from,
        release,
    };
    let pulled = |reference: &str, from| ImagePlan::Pulled {
        reference: reference.to_owned(),
        from,
        policy: PullPolicy::Missing,
    };
    let bookworm = Some(DebianRelease::Bookworm);
    let rust = record(&serde_json::json!({"language": "rust"}));
    assert_eq!(
        image_of(&rust, &env()),
        built("aci-rust:bookworm", ImageChoice::Language, bookworm)
    );
    let go = record(&serde_json::json!({"language": "go"}));
    assert_eq!(
        image_of(&go, &env()),
        built("aci-go:bookworm", ImageChoice::Language, bookworm)
    );
    // A language runs on its toolchain's image: TypeScript on Node.js's, C++ on C's.
    let typescript = record(&serde_json::json!({"language": "typescript"}));
    assert_eq!(
        image_of(&typescript, &env()),
        built("aci-node:bookworm", ImageChoice::Language, bookworm)
    );
    let cpp = record(&serde_json::json!({"language": "cpp"}));
    assert_eq!(
        image_of(&cpp, &env()),
        built("aci-c:bookworm", ImageChoice::Language, bookworm)
    );
    // One aci builds no image for is pulled under its conventional name.
    let cobol = record(&serde_json::json!({"language": "cobol"}));
    assert_eq!(
        image_of(&cobol, &env()),
        pulled("aci-cobol:bookworm", ImageChoice::Language)
    );
    let own = record(&serde_json::json!({"language": "rust", "image": "my/img:1"}));
    assert_eq!(
        image_of(&own, &env()),
        pulled("my/img:1", ImageChoice::Record)
    );
    let smith = record(&serde_json::json!({"image_name": "swesmith.x86_64.a:1"}));
    assert_eq!(
        image_of(&smith, &env()),
        pulled("swesmith.x86_64.a:1", ImageChoice::Record)
    );
    let forced = EnvConfig {
        image: Some("forced:1".to_owned()),
        ..env()
    };
    assert_eq!(
        image_of(&own, &forced),
        pulled("forced:1", ImageChoice::EnvImage)
    );
    let template = EnvConfig {
        image_template: Some("r.example:5000/{repo}/{instance_id}".to_owned()),
        ..env()
    };
    assert_eq!(
        image_of(&record(&serde_json::json!({})), &template),
        pulled("r.example:5000/sympy/sympy/a__b-1", ImageChoice::Template)
    );
    assert_eq!(
        image_of(&own, &template),
        pulled("my/img:1", ImageChoice::Record)
    );
    // env.image naming aci's own image: built, never pulled, and no spec environment.
    let bookworm_forced = EnvConfig {
        image: Some("aci-python:bookworm".to_owned()),
        ..env()
    };
    let spec_record = record(&serde_json::json!({}));
    let forced_plan = plan(&spec_record, &bookworm_forced, builtin());
    assert_eq!(
        forced_plan.image,
        built("aci-python:bookworm", ImageChoice::EnvImage, bookworm)
    );
    assert_eq!(forced_plan.layer, LayerPlan::None);
}

#[test]
fn only_python_records_without_an_image_of_any_kind_or_a_setup_come_from_specs() {
    let from_spec = |extra: serde_json::Value, env: &EnvConfig| {
        matches!(
            plan(&record(&extra), env, builtin()).image,
            ImagePlan::Spec(_)
        )
    };
    let env = env();
    assert!(from_spec(serde_json::json!({}), &env));
    assert!(from_spec(serde_json::json!({"language": "python"}), &env));
    assert!(!from_spec(serde_json::json!({"language": "rust"}), &env));
    assert!(!from_spec(serde_json::json!({"image": "i:1"}), &env));
    assert!(!from_spec(
        serde_json::json!({"image_name": "swesmith.x86_64.a:1"}),
        &env
    ));
    assert!(!from_spec(serde_json::json!({"setup": ["make"]}), &env));
    let forced = EnvConfig {
        image: Some("i:2".to_owned()),
        ..env.clone()
    };
    assert!(!from_spec(serde_json::json!({}), &forced));
    assert!(!from_spec(serde_json::json!({}), &swebench_env()));
    // A repository the table lacks: the language image.
    assert!(!from_spec(serde_json::json!({"repo": "demo/x"}), &env));
}

#[test]
fn a_records_setup_is_its_layer_over_its_language_image() {
    let instance = record(&serde_json::json!({"setup": ["make", "make install"]}));
    let plan = plan(&instance, &env(), builtin());
    assert_eq!(
        plan.image,
        ImagePlan::Built {
            reference: "aci-python:bookworm".to_owned(),
            from: ImageChoice::Language,
            release: Some(DebianRelease::Bookworm),
        }
    );
    assert_eq!(
        plan.layer,
        LayerPlan::Setup(vec!["make".to_owned(), "make install".to_owned()])
    );
    assert_eq!(plan.to_json()["layer"]["setup"][1], "make install");
}

#[test]
fn a_language_image_of_another_release_sits_on_that_releases_base_and_others_on_none() {
    let mut env = env();
    env.images
        .insert("python".to_owned(), "aci-python:trixie".to_owned());
    env.images.insert("rust".to_owned(), "my-rust:1".to_owned());
    let python = plan(
        &record(&serde_json::json!({"repo": "demo/x"})),
        &env,
        builtin(),
    );
    assert_eq!(
        python.image.debian_base().as_deref(),
        Some("aci-base:trixie")
    );
    let rust = plan(
        &record(&serde_json::json!({"language": "rust"})),
        &env,
        builtin(),
    );
    assert_eq!(
        rust.image,
        ImagePlan::Built {
            reference: "my-rust:1".to_owned(),
            from: ImageChoice::Language,
            release: None,
        }
    );
    assert_eq!(rust.image.debian_base(), None);
}

#[test]
fn on_the_host_the_repository_comes_from_its_path_or_a_mirror() {
    let spec_plan = plan(&lite("sympy__sympy-20590"), &env(), builtin());
    assert_eq!(
        spec_plan.repository.on_host(),
        RepoPlan::Mirror(mirror("sympy/sympy"))
    );
    let demo_plan = plan(&demo("demo__calc-1"), &env(), builtin());
    assert_eq!(demo_plan.repository.on_host(), demo_plan.repository);
}

#[test]
fn a_record_that_cannot_be_graded_still_has_a_plan_with_the_reason() {
    let instance = record(&serde_json::json!({"repo": "demo/x"}));
    let plan = plan(&instance, &env(), builtin());
    assert!(plan.grading.is_err());
    let json = plan.to_json();
    assert_eq!(json["test_cmd"], serde_json::Value::Null);
    assert_eq!(json["test_cmd_source"], serde_json::Value::Null);
    assert!(
        json["test_error"]
            .as_str()
            .unwrap()
            .starts_with("the instance names no log_parser and has no test_cmd"),
        "{json}"
    );
}

/// The tail of a 5.x record's `eval_script`, with SWE-bench's activation lines.
const OWN_SCRIPT: &str = "\
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
: '>>>>> Start Test Output'
bin/test -C --verbose sympy/core/tests/test_basic.py
: '>>>>> End Test Output'
";

#[test]
fn a_record_graded_by_its_own_spec_in_its_own_image_activates_as_its_script_does() {
    let own = record(&serde_json::json!({
        "eval_script": OWN_SCRIPT,
        "log_parser": "parse_log_sympy",
        "image": "swebench/sweb.eval.x86_64.sympy_1776_sympy-1:latest",
    }));
    let planned = plan(&own, &env(), builtin());
    assert_eq!(
        planned.activate.as_deref(),
        Some("source /opt/miniconda3/bin/activate && conda activate testbed")
    );
    assert_eq!(
        planned.to_json()["spec_source"],
        serde_json::json!("record")
    );
    assert_eq!(
        planned.grading.unwrap().command_line(),
        "bin/test -C --verbose sympy/core/tests/test_basic.py"
    );
    // env.activate wins; --spec builtin and aci's own images take nothing from the script.
    let set = EnvConfig {
        activate: Some("source /opt/aci-venv/bin/activate".to_owned()),
        ..env()
    };
    assert_eq!(
        plan(&own, &set, builtin()).activate.as_deref(),
        Some("source /opt/aci-venv/bin/activate")
    );
    let table = EnvConfig {
        spec_source: SpecSource::Builtin,
        ..env()
    };
    assert_eq!(plan(&own, &table, builtin()).activate, None);
    let local = EnvConfig {
        image: Some("aci-python:bookworm".to_owned()),
        ..env()
    };
    assert_eq!(plan(&own, &local, builtin()).activate, None);
    assert_eq!(
        plan(&own, &swebench_env(), builtin()).activate.as_deref(),
        Some(crate::image::pull::SWEBENCH_ACTIVATE)
    );
}
