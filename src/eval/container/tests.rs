use super::infrastructure::digest_map;
use super::*;

#[test]
fn a_timed_out_log_ends_with_the_timeout_sentinel() {
    let run = ContainerRun {
        applied: true,
        test_output: Some("+ : '>>>>> Start Test Output'\nrunning".to_owned()),
        timed_out: true,
        ..ContainerRun::default()
    };
    assert_eq!(
        run.test_log(Duration::from_secs(60)),
        "+ : '>>>>> Start Test Output'\nrunning\n>>>>> Tests Timed Out\n\
         Timeout error: 60 seconds exceeded.\n"
    );
}

#[test]
fn a_patch_that_did_not_apply_is_graded_from_the_apply_output() {
    let run = ContainerRun {
        apply_output: "error: corrupt patch at line 3\n>>>>> Patch Apply Failed\n".to_owned(),
        ..ContainerRun::default()
    };
    assert_eq!(
        run.test_log(Duration::from_secs(60)),
        "error: corrupt patch at line 3\n>>>>> Patch Apply Failed\n"
    );
    let killed = ContainerRun {
        apply_output: "Checking patch a.py...".to_owned(),
        ..ContainerRun::default()
    };
    assert!(
        killed
            .test_log(Duration::from_secs(1))
            .ends_with(">>>>> Patch Apply Failed\n")
    );
}

#[test]
fn digests_read_back_by_path_with_spaces_and_newlines() {
    let sums = b"abc  a b.pyc\0def  x\ny/entry_points.txt\0";
    assert_eq!(
        digest_map(sums),
        BTreeMap::from([
            ("a b.pyc".to_owned(), "abc".to_owned()),
            ("x\ny/entry_points.txt".to_owned(), "def".to_owned()),
        ])
    );
}
