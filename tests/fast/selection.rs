//! `--shuffle`, `--filter` and `--slice` pick the same SWE-bench Lite instances, in the same
//! order, as SWE-agent and mini-swe-agent. The expected ids are Python's, written to
//! `tests/fixtures/selection/lite_selection.json` by the script next to it (the command is in
//! the file's `made_by`). The Lite records are read from `../shared/swebench` next to the
//! repository, or from `ACI_SWEBENCH_DATA`; without them the test fails and says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use aci::instance::{self, Selection};
use serde_json::Value;

/// The directory with the SWE-bench Lite records.
fn swebench_data() -> PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        PathBuf::from,
    );
    assert!(
        dir.join("lite.jsonl").is_file(),
        "the SWE-bench Lite records are missing: {}/lite.jsonl does not exist\n\
         hint: set ACI_SWEBENCH_DATA to a directory holding lite.jsonl (the 300 records of the \
         SWE-bench Lite test split, one JSON object a line)",
        dir.display()
    );
    dir
}

#[test]
fn shuffle_filter_and_slice_pick_the_lite_instances_python_picks() {
    let loaded = instance::load_instances_file(&swebench_data().join("lite.jsonl")).unwrap();
    assert_eq!(loaded.errors, vec![]);
    assert_eq!(loaded.instances.len(), 300);
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/selection/lite_selection.json");
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let filter = case["filter"].as_str().unwrap();
        let selection = Selection {
            shuffle_seed: Some(case["seed"].as_u64().unwrap()),
            filter: Some(instance::parse_filter(filter).unwrap()),
            slice: Some(case["slice"].as_str().unwrap().parse().unwrap()),
            shard: None,
        };
        let picked: Vec<String> = instance::select(loaded.instances.clone(), &selection)
            .into_iter()
            .map(|instance| instance.instance_id)
            .collect();
        let expected: Vec<String> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        assert!(!expected.is_empty(), "{case}");
        assert_eq!(picked, expected, "{case}");
    }
    // The first case: the first 20 ids of seed 42, with no filter.
    assert_eq!(cases[0]["seed"], 42);
    assert_eq!(cases[0]["filter"], "");
    assert_eq!(cases[0]["ids"].as_array().unwrap().len(), 20);
}
