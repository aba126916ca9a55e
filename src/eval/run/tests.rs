use super::*;

/// A patch naming one conftest.py through git's C quoting of an OSC title sequence and one
/// with raw ESC bytes in its header.
const PATCH: &str = "diff --git \"a/t/\\033]0;pwned\\007/conftest.py\" \"b/t/\\033]0;pwned\\007/conftest.py\"\n\
    --- \"a/t/\\033]0;pwned\\007/conftest.py\"\n\
    +++ \"b/t/\\033]0;pwned\\007/conftest.py\"\n\
    @@ -1 +1 @@\n-a\n+b\n\
    diff --git a/t/\x1b[2J/conftest.py b/t/\x1b[2J/conftest.py\n\
    --- a/t/\x1b[2J/conftest.py\n\
    +++ b/t/\x1b[2J/conftest.py\n\
    @@ -1 +1 @@\n-a\n+b\n";

#[test]
fn names_from_a_patch_or_a_record_are_escaped_in_run_instance_log_and_progress_lines() {
    let touched = test_infrastructure(PATCH, None, &BaseFiles::new());
    assert_eq!(
        touched
            .iter()
            .map(|file| file.path.as_str())
            .collect::<Vec<_>>(),
        ["t/\x1b]0;pwned\x07/conftest.py", "t/\x1b[2J/conftest.py"]
    );
    assert_eq!(
        touches_lines(&touched),
        "the patch changes test infrastructure: t/\\x1b]0;pwned\\x07/conftest.py: pytest \
         loads it as a plugin\n\
         the patch changes test infrastructure: t/\\x1b[2J/conftest.py: pytest loads it \
         as a plugin\n"
    );
    let done = InstanceDone {
        instance_id: "id\x1b]0;x\x07-1".to_owned(),
        status: InstanceStatus::Error("cannot read /logs/\x1b[2J/test_output.txt".to_owned()),
        reused: false,
        elapsed: Duration::from_millis(1500),
        touches_tests: touched,
        cause: None,
    };
    assert_eq!(
        done.describe(),
        "id\\x1b]0;x\\x07-1: error: cannot read /logs/\\x1b[2J/test_output.txt (1.5 s); the \
         patch changes test infrastructure: t/\\x1b]0;pwned\\x07/conftest.py (pytest loads \
         it as a plugin), t/\\x1b[2J/conftest.py (pytest loads it as a plugin)"
    );
}

#[test]
fn the_apply_chain_output_in_run_instance_log_keeps_its_lines_and_escapes_the_rest() {
    let image = EnvImage {
        tag: "aci-env-python:abc".to_owned(),
        id: "sha256:1".to_owned(),
        env_hash: String::new(),
        base_image: String::new(),
        built: false,
    };
    assert_eq!(
        run_log(
            &image,
            "patching file t/\x1b[2J/conftest.py\r\nApplied\n",
            false,
            0
        ),
        "image: aci-env-python:abc (sha256:1)\n>>>>> apply chain output\n\
         patching file t/\\x1b[2J/conftest.py\\r\nApplied\n"
    );
}
