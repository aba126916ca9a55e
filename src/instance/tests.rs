use super::*;
use crate::hint::with_hint;
use serde_json::json;

fn record(id: &str) -> Value {
    json!({
        "instance_id": id,
        "problem_statement": format!("bug in {id}"),
        "repo": "acme/calc",
        "base_commit": "abc123",
    })
}

fn minimal(id: &str) -> Instance {
    Instance {
        instance_id: id.to_owned(),
        problem_statement: format!("bug in {id}"),
        repo: "acme/calc".to_owned(),
        base_commit: Some("abc123".to_owned()),
        patch: None,
        test_patch: None,
        fail_to_pass: Vec::new(),
        pass_to_pass: Vec::new(),
        hints_text: String::new(),
        version: String::new(),
        created_at: String::new(),
        environment_setup_commit: None,
        repo_path: None,
        image: None,
        image_name: None,
        language: None,
        setup: Vec::new(),
        test_cmd: None,
        log_parser: None,
        extra_fields: Map::new(),
    }
}

fn ids(instances: &[Instance]) -> Vec<&str> {
    instances.iter().map(|i| i.instance_id.as_str()).collect()
}

fn named(names: &[&str]) -> Vec<Instance> {
    names.iter().map(|name| minimal(name)).collect()
}

#[test]
fn a_full_swe_bench_record_with_json_string_test_lists_loads_every_field() {
    let text = json!([{
        "instance_id": "acme__calc-12",
        "problem_statement": "Division by zero crashes",
        "repo": "acme/calc",
        "base_commit": "abc123",
        "patch": "diff --git a/calc.py b/calc.py\n",
        "test_patch": "diff --git a/tests/test_calc.py b/tests/test_calc.py\n",
        "FAIL_TO_PASS": "[\"tests/test_calc.py::test_div_zero\"]",
        "PASS_TO_PASS": "[\"tests/test_calc.py::test_add\", \"tests/test_calc.py::test_sub\"]",
        "hints_text": "see #11",
        "version": "1.2",
        "created_at": "2024-01-02T03:04:05Z",
        "environment_setup_commit": "def456",
        "difficulty": "<15 min fix",
    }])
    .to_string();
    let loaded = parse_instances(&text, None).unwrap();
    let mut extra = Map::new();
    extra.insert("difficulty".to_owned(), json!("<15 min fix"));
    let expected = Instance {
        instance_id: "acme__calc-12".to_owned(),
        problem_statement: "Division by zero crashes".to_owned(),
        patch: Some("diff --git a/calc.py b/calc.py\n".to_owned()),
        test_patch: Some("diff --git a/tests/test_calc.py b/tests/test_calc.py\n".to_owned()),
        fail_to_pass: vec!["tests/test_calc.py::test_div_zero".to_owned()],
        pass_to_pass: vec![
            "tests/test_calc.py::test_add".to_owned(),
            "tests/test_calc.py::test_sub".to_owned(),
        ],
        hints_text: "see #11".to_owned(),
        version: "1.2".to_owned(),
        created_at: "2024-01-02T03:04:05Z".to_owned(),
        environment_setup_commit: Some("def456".to_owned()),
        extra_fields: extra,
        ..minimal("acme__calc-12")
    };
    assert_eq!(
        loaded,
        LoadedInstances {
            instances: vec![expected],
            errors: vec![]
        }
    );
}

#[test]
fn list_form_test_lists_and_our_optional_fields_load_from_jsonl() {
    let line = json!({
        "instance_id": "demo-1",
        "problem_statement": "p",
        "repo": "demo/shop",
        "base_commit": "HEAD",
        "FAIL_TO_PASS": ["t::a", "t::b"],
        "PASS_TO_PASS": [],
        "version": 0.12,
        "repo_path": "repos/shop",
        "image": "aci-python:latest",
        "language": "python",
        "setup": "pip install -e .",
        "test_cmd": "pytest -rA",
        "log_parser": "pytest",
    });
    let loaded = parse_instances(&format!("\n{line}\n\n"), Some(Path::new("/data/set"))).unwrap();
    let expected = Instance {
        problem_statement: "p".to_owned(),
        repo: "demo/shop".to_owned(),
        base_commit: Some("HEAD".to_owned()),
        fail_to_pass: vec!["t::a".to_owned(), "t::b".to_owned()],
        version: "0.12".to_owned(),
        repo_path: Some(PathBuf::from("/data/set/repos/shop")),
        image: Some("aci-python:latest".to_owned()),
        language: Some("python".to_owned()),
        setup: vec!["pip install -e .".to_owned()],
        test_cmd: Some("pytest -rA".to_owned()),
        log_parser: Some("pytest".to_owned()),
        ..minimal("demo-1")
    };
    assert_eq!(loaded.errors, vec![]);
    assert_eq!(loaded.instances, vec![expected]);
}

#[test]
fn setup_accepts_a_list_and_an_absolute_repo_path_is_kept() {
    let mut value = record("a");
    value["setup"] = json!(["apt-get update", "pip install ."]);
    value["repo_path"] = json!("/abs/repo");
    let loaded = parse_instances(&value.to_string(), Some(Path::new("/data"))).unwrap();
    assert_eq!(
        loaded.instances[0].setup,
        vec!["apt-get update".to_owned(), "pip install .".to_owned()]
    );
    assert_eq!(
        loaded.instances[0].repo_path,
        Some(PathBuf::from("/abs/repo"))
    );
}

#[test]
fn a_record_missing_problem_statement_is_reported_and_its_neighbours_still_load() {
    let mut bad = record("acme__calc-2");
    bad.as_object_mut().unwrap().remove("problem_statement");
    let text = json!([record("acme__calc-1"), bad, record("acme__calc-3")]).to_string();
    let loaded = parse_instances(&text, None).unwrap();
    assert_eq!(ids(&loaded.instances), vec!["acme__calc-1", "acme__calc-3"]);
    assert_eq!(
        loaded.errors,
        vec![InstanceError {
            location: RecordLocation::Index(1),
            instance_id: Some("acme__calc-2".to_owned()),
            field: Some("problem_statement".to_owned()),
            message: "missing".to_owned(),
        }]
    );
    assert_eq!(
        loaded.errors[0].to_string(),
        "instance \"acme__calc-2\" (record [1]): field \"problem_statement\": missing"
    );
}

#[test]
fn a_plain_directory_needs_no_base_commit_and_a_git_repository_does() {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join("plain")).unwrap();
    std::fs::create_dir_all(data.path().join("cloned/.git")).unwrap();
    let without_commit = |id: &str, repo_path: Option<&str>| {
        let mut value = record(id);
        value.as_object_mut().unwrap().remove("base_commit");
        if let Some(path) = repo_path {
            value["repo_path"] = json!(path);
        }
        value.to_string()
    };
    let text = [
        without_commit("plain-1", Some("plain")),
        without_commit("cloned-1", Some("cloned")),
        without_commit("swebench-1", None),
    ]
    .join("\n");
    let loaded = parse_instances(&text, Some(data.path())).unwrap();
    assert_eq!(ids(&loaded.instances), vec!["plain-1"]);
    assert_eq!(loaded.instances[0].base_commit, None);
    assert_eq!(
        loaded.instances[0].repo_path.as_deref(),
        Some(data.path().join("plain").as_path())
    );
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        vec![
            format!(
                "instance \"cloned-1\" (line 2): field \"base_commit\": missing: repo_path {} is a \
                 git repository, so the commit to check out must be given",
                data.path().join("cloned").display()
            ),
            "instance \"swebench-1\" (line 3): field \"base_commit\": missing (only a repo_path \
             that is a plain directory can do without one)"
                .to_owned(),
        ]
    );
    // Without a base_commit the record also serialises without one, and reads back the same.
    let written = serde_json::to_string(&loaded.instances[0]).unwrap();
    assert!(!written.contains("base_commit"), "{written}");
    let again = parse_instances(&written, None).unwrap();
    assert_eq!(again.instances, loaded.instances);
}

#[test]
fn a_record_without_an_id_is_named_by_its_jsonl_line() {
    let mut no_id = record("x");
    no_id.as_object_mut().unwrap().remove("instance_id");
    let text = format!("{}\n{}\n", record("a"), no_id);
    let loaded = parse_instances(&text, None).unwrap();
    assert_eq!(ids(&loaded.instances), vec!["a"]);
    assert_eq!(
        loaded.errors[0].to_string(),
        "line 2: field \"instance_id\": missing"
    );
}

#[test]
fn an_invalid_jsonl_line_is_reported_and_later_lines_still_load() {
    let text = format!("{}\n{{not json\n{}\n", record("a"), record("b"));
    let loaded = parse_instances(&text, None).unwrap();
    assert_eq!(ids(&loaded.instances), vec!["a", "b"]);
    assert_eq!(loaded.errors.len(), 1);
    assert_eq!(loaded.errors[0].location, RecordLocation::Line(2));
    assert!(loaded.errors[0].message.starts_with("invalid JSON: "));
}

#[test]
fn wrong_field_types_name_the_field_and_the_type_found() {
    let mut bad_list = record("a");
    bad_list["FAIL_TO_PASS"] = json!("not a list");
    let mut bad_item = record("b");
    bad_item["PASS_TO_PASS"] = json!(["ok", 3]);
    let mut bad_repo = record("c");
    bad_repo["repo"] = json!(7);
    let mut twice = record("d");
    twice["FAIL_TO_PASS"] = json!([]);
    twice["fail_to_pass"] = json!([]);
    let text = json!([bad_list, bad_item, bad_repo, twice, "just a string"]).to_string();
    let messages: Vec<String> = parse_instances(&text, None)
        .unwrap()
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        vec![
            "instance \"a\" (record [0]): field \"FAIL_TO_PASS\": a string must hold a JSON list \
             of test ids: expected ident at line 1 column 2"
                .to_owned(),
            "instance \"b\" (record [1]): field \"PASS_TO_PASS\": item 1: expected a string test \
             id, found a number"
                .to_owned(),
            "instance \"c\" (record [2]): field \"repo\": expected a string, found a number"
                .to_owned(),
            "instance \"d\" (record [3]): field \"FAIL_TO_PASS\": given twice, as FAIL_TO_PASS \
             and as fail_to_pass; keep one"
                .to_owned(),
            "record [4]: expected a JSON object, found a string".to_owned(),
        ]
    );
}

#[test]
fn a_duplicate_instance_id_is_an_error_for_the_later_record_only() {
    let text = json!([record("a"), record("b"), record("a")]).to_string();
    let loaded = parse_instances(&text, None).unwrap();
    assert_eq!(ids(&loaded.instances), vec!["a", "b"]);
    assert_eq!(
        loaded.errors[0].to_string(),
        "instance \"a\" (record [2]): field \"instance_id\": duplicate instance_id: an earlier \
         record has the same id"
    );
}

#[test]
fn a_file_starting_with_a_bracket_that_is_not_an_array_fails_as_a_whole() {
    let error = parse_instances("  [ {\"instance_id\": ", None).unwrap_err();
    assert!(matches!(error, InstanceFileError::NotJsonArray { .. }));
}

#[test]
fn serialising_an_instance_gives_a_record_that_loads_back_equal() {
    let mut value = record("round-trip");
    value["FAIL_TO_PASS"] = json!("[\"t::a\"]");
    value["setup"] = json!(["make"]);
    value["custom"] = json!({"k": [1, 2]});
    let first = parse_instances(&value.to_string(), None).unwrap().instances;
    let again = serde_json::to_string(&first[0]).unwrap();
    let second = parse_instances(&again, None).unwrap().instances;
    assert_eq!(second, first);
}

#[test]
fn repo_dir_replaces_the_repo_name_placeholder() {
    let instance = Instance {
        repo: "django/django".to_owned(),
        ..minimal("x")
    };
    assert_eq!(
        instance.repo_dir("/work/{repo_name}"),
        "/work/django__django"
    );
    assert_eq!(instance.repo_dir("/testbed"), "/testbed");
}

#[test]
fn every_slice_form_follows_python_semantics() {
    let cases: [(&str, &[usize]); 15] = [
        ("0:3", &[0, 1, 2]),
        ("2:", &[2, 3, 4, 5, 6]),
        ("-3:", &[4, 5, 6]),
        (":-2", &[0, 1, 2, 3, 4]),
        ("-5:-2", &[2, 3, 4]),
        ("::2", &[0, 2, 4, 6]),
        ("1::3", &[1, 4]),
        ("::-1", &[6, 5, 4, 3, 2, 1, 0]),
        ("5:1:-2", &[5, 3]),
        ("-2::-1", &[5, 4, 3, 2, 1, 0]),
        ("10:20", &[]),
        ("-100:2", &[0, 1]),
        ("3:3", &[]),
        (":", &[0, 1, 2, 3, 4, 5, 6]),
        ("::-3", &[6, 3, 0]),
    ];
    for (input, expected) in cases {
        let slice: SliceSpec = input.parse().unwrap();
        assert_eq!(slice.indices(7), expected.to_vec(), "slice {input}");
    }
    let empty: SliceSpec = "::-1".parse().unwrap();
    assert_eq!(empty.indices(0), Vec::<usize>::new());
}

#[test]
fn bad_slices_are_rejected_with_the_reason() {
    let messages: Vec<String> = ["5", "1:2:3:4", "a:3", "::0"]
        .iter()
        .map(|input| with_hint(&input.parse::<SliceSpec>().unwrap_err()))
        .collect();
    let hint = "\nhint: use Python slice syntax, e.g. 0:10, -5:, ::2";
    assert_eq!(
        messages,
        vec![
            format!("invalid --slice \"5\": expected a colon, as in A:B{hint}"),
            format!(
                "invalid --slice \"1:2:3:4\": expected at most two colons, as in A:B:STEP{hint}"
            ),
            format!("invalid --slice \"a:3\": \"a\" is not an integer{hint}"),
            format!("invalid --slice \"::0\": the step must not be zero{hint}"),
        ]
    );
}

#[test]
fn shards_are_one_based_contiguous_and_cover_every_item_once() {
    let ranges: Vec<std::ops::Range<usize>> = (1..=3)
        .map(|index| ShardSpec { index, count: 3 }.range(10))
        .collect();
    assert_eq!(ranges, vec![0..4, 4..7, 7..10]);
    assert_eq!(ShardSpec { index: 4, count: 4 }.range(2), 2..2);
    assert_eq!(
        " 2 / 4 ".parse::<ShardSpec>().unwrap(),
        ShardSpec { index: 2, count: 4 }
    );
}

#[test]
fn bad_shards_are_rejected_with_the_reason() {
    let messages: Vec<String> = ["0/4", "5/4", "1/0", "2", "x/3"]
        .iter()
        .map(|input| with_hint(&input.parse::<ShardSpec>().unwrap_err()))
        .collect();
    let hint = "\nhint: write I/N with shards numbered 1..=N, e.g. 1/4";
    assert_eq!(
        messages,
        vec![
            format!(
                "invalid --shard \"0/4\": shard 0 is out of range: shards are numbered 1 to 4{hint}"
            ),
            format!(
                "invalid --shard \"5/4\": shard 5 is out of range: shards are numbered 1 to 4{hint}"
            ),
            format!("invalid --shard \"1/0\": the shard count must be at least 1{hint}"),
            format!("invalid --shard \"2\": expected a slash, as in 1/4{hint}"),
            format!("invalid --shard \"x/3\": \"x\" is not a non-negative integer{hint}"),
        ]
    );
}

#[test]
fn a_bad_filter_regex_is_rejected_and_a_good_one_matches_at_the_start_of_the_id() {
    let error = parse_filter("django(").unwrap_err();
    assert!(matches!(error, SelectionError::Filter { .. }));
    assert!(
        error
            .to_string()
            .starts_with("invalid --filter \"django(\": "),
        "{error}"
    );
    let select_with = |pattern: &str| {
        let selected = select(
            named(&["acme__calc-1", "acme__calc-12", "x__calc-2"]),
            &Selection {
                filter: Some(parse_filter(pattern).unwrap()),
                ..Selection::default()
            },
        );
        ids(&selected)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // Python's re.match: anchored at the start, not at the end.
    assert_eq!(
        select_with("acme__calc-1"),
        ["acme__calc-1", "acme__calc-12"]
    );
    assert_eq!(select_with("calc-1"), Vec::<String>::new());
    assert_eq!(select_with(".*calc-1"), ["acme__calc-1", "acme__calc-12"]);
    assert_eq!(select_with("acme__calc-1$"), ["acme__calc-1"]);
    assert_eq!(
        select_with("x|acme__calc-12"),
        ["acme__calc-12", "x__calc-2"]
    );
}

// The expected orders below are Python's, for example
//   python3 -c 'import random; x = sorted("abcdefgh"); random.seed(42); random.shuffle(x); print(x)'

#[test]
fn shuffle_sorts_by_id_then_shuffles_as_python_random_does() {
    let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut reversed = names;
    reversed.reverse();
    let selection = Selection {
        shuffle_seed: Some(DEFAULT_SEED),
        ..Selection::default()
    };
    let first = select(named(&names), &selection);
    let second = select(named(&reversed), &selection);
    assert_eq!(ids(&first), vec!["d", "e", "g", "h", "c", "f", "a", "b"]);
    assert_eq!(ids(&second), ids(&first), "the file order does not matter");
}

#[test]
fn selection_applies_shuffle_then_filter_then_slice_then_shard() {
    let names = ["p-1", "p-2", "p-3", "q-1", "p-4", "xp-5", "p-6", "p-7"];
    let selection = Selection {
        shuffle_seed: Some(3),
        filter: Some(parse_filter("p-").unwrap()),
        slice: Some("1:".parse().unwrap()),
        shard: Some("2/2".parse().unwrap()),
    };
    // python3 -c 'import random, re; x = sorted(["p-1", "p-2", "p-3", "q-1", "p-4", "xp-5",
    //   "p-6", "p-7"]); random.seed(3); random.shuffle(x); print(x)'
    // gives p-1 p-7 xp-5 p-3 p-2 q-1 p-6 p-4; re.match("p-") keeps p-1 p-7 p-3 p-2 p-6 p-4;
    // 1: drops p-1; shard 2/2 of those 5 is the last 2. Filtering before the shuffle would
    // give p-6 p-2, and re.search would keep xp-5.
    assert_eq!(ids(&select(named(&names), &selection)), vec!["p-6", "p-4"]);
}

#[test]
fn a_swe_smith_record_names_its_image_in_image_name_and_image_wins_over_it() {
    let mut value = record("oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc");
    value["base_commit"] = json!("oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc");
    value["image_name"] = json!("jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536");
    let loaded = parse_instances(&value.to_string(), None).unwrap().instances;
    let instance = &loaded[0];
    assert_eq!(
        instance.own_image(),
        Some("jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536")
    );
    assert!(
        instance.extra_fields.is_empty(),
        "{:?}",
        instance.extra_fields
    );
    let again = serde_json::to_string(instance).unwrap();
    assert_eq!(parse_instances(&again, None).unwrap().instances, loaded);
    value["image"] = json!("mine:1");
    let both = parse_instances(&value.to_string(), None).unwrap().instances;
    assert_eq!(both[0].own_image(), Some("mine:1"));
}

#[test]
fn a_jsonl_line_that_is_not_utf8_fails_alone_and_the_others_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instances.jsonl");
    let record = |id: &str| {
        format!(
            r#"{{"instance_id":"{id}","problem_statement":"p","repo":"o/r","base_commit":"abc"}}"#
        )
    };
    let mut bytes = format!("{}\n", record("a")).into_bytes();
    bytes.extend_from_slice(b"{\"instance_id\":\"b\xff\",\"problem_statement\":\"p\"}\n");
    bytes.extend_from_slice(format!("{}\n", record("c")).as_bytes());
    std::fs::write(&path, bytes).unwrap();
    let loaded = load_instances_file(&path).unwrap();
    let ids: Vec<&str> = loaded
        .instances
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["a", "c"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors, ["line 2: the line is not valid UTF-8"]);
}

#[test]
fn a_json_array_that_is_not_utf8_names_the_line_of_the_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instances.json");
    std::fs::write(
        &path,
        b"[\n{\"instance_id\": \"a\"},\n{\"instance_id\": \"\xc3(\"}\n]\n",
    )
    .unwrap();
    let error = load_instances_file(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        "instances file is not valid UTF-8 (first bad byte on line 3)"
    );
}

#[test]
fn an_instance_id_that_is_not_a_plain_name_is_refused_for_every_command() {
    let record = |id: &str| {
        serde_json::json!({
            "instance_id": id, "problem_statement": "p", "repo": "o/r", "base_commit": "abc"
        })
        .to_string()
    };
    let text = ["ok-1", "../escape", "/etc/cron.d/x", "a\\b", "..", "."]
        .map(record)
        .join("\n");
    let loaded = parse_instances(&text, None).unwrap();
    let ids: Vec<&str> = loaded
        .instances
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["ok-1"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "instance \"../escape\" (line 2): field \"instance_id\": contains a path separator, so it cannot name an output directory",
            "instance \"/etc/cron.d/x\" (line 3): field \"instance_id\": contains a path separator, so it cannot name an output directory",
            "instance \"a\\\\b\" (line 4): field \"instance_id\": contains a path separator, so it cannot name an output directory",
            "instance \"..\" (line 5): field \"instance_id\": is `.` or `..`, so it cannot name an output directory",
            "instance \".\" (line 6): field \"instance_id\": is `.` or `..`, so it cannot name an output directory",
        ]
    );
}

#[test]
fn an_instance_id_too_long_or_with_control_characters_is_refused_at_load() {
    let record = |id: &str| {
        serde_json::json!({
            "instance_id": id, "problem_statement": "p", "repo": "o/r", "base_commit": "abc"
        })
        .to_string()
    };
    let longest = "x".repeat(MAX_ID_BYTES);
    let too_long = "y".repeat(MAX_ID_BYTES + 1);
    let text = [longest.as_str(), &too_long, "a\u{1b}[2Jb", "ok-1"]
        .map(record)
        .join("\n");
    let loaded = parse_instances(&text, None).unwrap();
    assert_eq!(ids(&loaded.instances), [longest.as_str(), "ok-1"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            format!(
                "instance {too_long:?} (line 2): field \"instance_id\": is 213 bytes long, more \
                 than the 212 that leave room in a file name (255 bytes) for the longest name \
                 aci makes from an id, `.<id>.patch.<pid>.<n>.tmp`"
            ),
            "instance \"a\\u{1b}[2Jb\" (line 3): field \"instance_id\": contains a control \
             character, so it cannot name an output directory"
                .to_owned(),
        ]
    );
}

/// Each field that reaches a command line, with a value git would read as an option (or that
/// would make a name of it): the record is one error naming the instance and the field, and
/// the others load.
#[test]
fn record_fields_that_reach_a_command_line_are_checked_at_load() {
    let hostile = [
        ("base_commit", "--upload-pack=touch /tmp/marker"),
        ("base_commit", "--output=/tmp/victim"),
        ("environment_setup_commit", "--output=/tmp/victim"),
        ("repo", "--upload-pack=x/y"),
        ("repo", "o/../../etc"),
        ("image", "-evil"),
        ("image_name", "a\nFROM b"),
        ("language", "python:evil"),
        ("version", "1.0\nerror: fake"),
    ];
    let mut lines = vec![record("good-1").to_string()];
    for (index, (field, value)) in hostile.iter().enumerate() {
        let mut bad = record(&format!("bad-{index}"));
        bad[field] = json!(value);
        lines.push(bad.to_string());
    }
    let loaded = parse_instances(&lines.join("\n"), None).unwrap();
    assert_eq!(ids(&loaded.instances), ["good-1"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    let commit = |value: &str| {
        format!(
            "{value:?} is neither a commit id (7 to 64 hex digits) nor a branch or tag name git \
             accepts (git check-ref-format, not starting with `-`)"
        )
    };
    let repo = |value: &str| {
        format!(
            "{value:?} is not `owner/name` (ASCII letters, digits, `.`, `_` and `-` on each side \
             of one `/`, neither side starting with `-` or holding `..`)"
        )
    };
    let image = |value: &str| {
        format!(
            "{value:?} is not an image reference (ASCII letters, digits and `. _ - / : @`, \
             starting with a letter or digit, at most 255 bytes)"
        )
    };
    let messages = [
        commit("--upload-pack=touch /tmp/marker"),
        commit("--output=/tmp/victim"),
        commit("--output=/tmp/victim"),
        repo("--upload-pack=x/y"),
        repo("o/../../etc"),
        image("-evil"),
        image("a\nFROM b"),
        "\"python:evil\" is not a language name (ASCII letters, digits and `. _ + -`, starting \
         with a letter or digit, at most 64 bytes)"
            .to_owned(),
        "\"1.0\\nerror: fake\" holds a control character".to_owned(),
    ];
    let expected: Vec<String> = hostile
        .iter()
        .zip(messages)
        .enumerate()
        .map(|(index, ((field, _), message))| {
            format!(
                "instance \"bad-{index}\" (line {}): field \"{field}\": {message}",
                index + 2
            )
        })
        .collect();
    assert_eq!(errors, expected);
    assert!(errors.iter().all(|line| !line.contains('\n')), "{errors:?}");
}
