use std::collections::BTreeMap;

use super::*;
use crate::eval::grade::{SuccessFailure, grade};
use crate::eval::logs::{AnyReading, read_any_log};
use crate::eval::parse::LogReading;

fn names(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn status(f2p: (&[&str], &[&str]), p2p: (&[&str], &[&str])) -> TestsStatus {
    let lists = |(success, failure): (&[&str], &[&str])| SuccessFailure {
        success: names(success),
        failure: names(failure),
    };
    TestsStatus {
        fail_to_pass: lists(f2p),
        pass_to_pass: lists(p2p),
        ..TestsStatus::default()
    }
}

/// What requests 2.x (urllib3 1.x) prints under pytest -rA when httpbin.org cannot be resolved,
/// as in a grading sandbox without a network; `test_connection_error` expects a connection
/// error and passes.
const REQUESTS_OFFLINE: &str = "\
+ pytest -rA test_requests.py
>>>>> Start Test Output
============================= test session starts ==============================
platform linux -- Python 3.9.20, pytest-8.3.3, pluggy-1.5.0
rootdir: /testbed
collected 3 items

test_requests.py F.F                                                     [100%]

=================================== FAILURES ===================================
____________________ RequestsTestCase.test_HTTP_200_OK_GET _____________________

self = <test_requests.RequestsTestCase testMethod=test_HTTP_200_OK_GET>

    def test_HTTP_200_OK_GET(self):
>       r = requests.get(httpbin('get'))

test_requests.py:102: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 
E           requests.exceptions.ConnectionError: HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded with url: /get (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d4e50>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))

requests/adapters.py:415: ConnectionError
____________________ RequestsTestCase.test_HTTPS_200_OK_GET ____________________
E           ConnectionError: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple (Caused by ProtocolError('Connection aborted.', gaierror(-3, 'Temporary failure in name resolution')))
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED test_requests.py::RequestsTestCase::test_connection_error
FAILED test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET - requests.exceptions.ConnectionError: HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded with url: /get (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d4e50>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))
FAILED test_requests.py::RequestsTestCase::test_HTTPS_200_OK_GET - ConnectionError: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple
========================= 2 failed, 1 passed in 0.52s ==========================
>>>>> End Test Output
";

#[test]
fn a_test_that_cannot_reach_its_host_names_the_hosts_and_the_switch() {
    let tests = status(
        (
            &[],
            &["test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET"],
        ),
        (
            &["test_requests.py::RequestsTestCase::test_connection_error"],
            &[],
        ),
    );
    let evidence = Evidence {
        test_log: REQUESTS_OFFLINE,
        tests_status: Some(&tests),
        ..Evidence::default()
    };
    let cause = classify(&evidence).unwrap();
    assert_eq!(cause.kind, CauseKind::Network);
    assert!(cause.infrastructure);
    assert_eq!(
        cause.summary,
        "the tests could not reach the network they need (httpbin.org, pypi.org): grading runs \
         without a network; --network gives it one"
    );
    assert_eq!(cause.names, names(&["httpbin.org", "pypi.org"]));
    assert_eq!(
        cause.detail.lines().next(),
        Some(
            "E           requests.exceptions.ConnectionError: HTTPConnectionPool(host='httpbin.org', \
             port=80): Max retries exceeded with url: /get (Caused by \
             NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d4e50>: \
             Failed to establish a new connection: [Errno -3] Temporary failure in name \
             resolution'))"
        )
    );
    let with_network = Evidence {
        network: true,
        ..evidence
    };
    assert_eq!(
        classify(&with_network).unwrap().summary,
        "the tests could not reach the network they need (httpbin.org, pypi.org), even with a \
         network"
    );
}

/// requests 2.4 (urllib3 1.9) names no host in the error; pytest's traceback shows the
/// frames' arguments, `url` among them.
#[test]
fn an_older_requests_error_is_named_by_the_url_in_the_traceback() {
    let log = "\
=================================== FAILURES ===================================
____________________ RequestsTestCase.test_DIGEST_HTTP_200_OK_GET ______________
self = <requests.sessions.Session object at 0x7f1c2b0e5d30>, method = 'GET'
url = 'http://httpbin.org/digest-auth/auth/user/pass', params = None
>           raise ConnectionError(e, request=request)
E           ConnectionError: ('Connection aborted.', gaierror(-3, 'Temporary failure in name resolution'))

requests/adapters.py:415: ConnectionError
=========================== short test summary info ============================
FAILED test_requests.py::RequestsTestCase::test_DIGEST_HTTP_200_OK_GET - ConnectionError: ('Connection aborted.', gaierror(-3, 'Temporary failure in name resolution'))
";
    let cause = classify(&Evidence {
        test_log: log,
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.names),
        (CauseKind::Network, names(&["httpbin.org"]))
    );
}

#[test]
fn other_shapes_of_a_failed_connection_name_their_host() {
    let cases = [
        (
            "curl: (6) Could not resolve host: example.com\n",
            "example.com",
        ),
        (
            "E   urllib.error.URLError: <urlopen error [Errno -2] Name or service not known> \
             for http://data.astropy.org/x.fits\n",
            "data.astropy.org",
        ),
        (
            "Error: getaddrinfo ENOTFOUND registry.npmjs.org\n",
            "registry.npmjs.org",
        ),
        (
            "Get \"https://proxy.golang.org/x\": dial tcp: lookup proxy.golang.org on \
             [::1]:53: read udp: connection refused\n",
            "proxy.golang.org",
        ),
        (
            "java.net.UnknownHostException: repo.maven.apache.org\n",
            "repo.maven.apache.org",
        ),
    ];
    for (log, host) in cases {
        let cause = classify(&Evidence {
            test_log: log,
            ..Evidence::default()
        })
        .unwrap();
        assert_eq!(
            (cause.kind, cause.names),
            (CauseKind::Network, names(&[host])),
            "{log}"
        );
    }
    let urllib = "\
=================================== FAILURES ===================================
__________________________________ test_fetch __________________________________
>       assert fetch(\"http://172.17.0.2:8000/\") == 200
E       urllib.error.URLError: <urlopen error [Errno 101] Network is unreachable>
=========================== short test summary info ============================
FAILED tests/test_fetch.py::test_fetch - urllib.error.URLError: <urlopen error [Errno 101] Network is unreachable>
";
    let cause = classify(&Evidence {
        test_log: urllib,
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.names),
        (CauseKind::Network, names(&["172.17.0.2"]))
    );
    let unnamed = classify(&Evidence {
        test_log: "OSError: [Errno 101] Network is unreachable\n",
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        unnamed.summary,
        "the tests could not reach the network they need (hosts not named in the log): grading \
         runs without a network; --network gives it one"
    );
}

#[test]
fn a_connection_error_in_a_passing_test_is_not_the_cause_of_a_failing_one() {
    let log = "\
>>>>> Start Test Output
test_a.py .F
=================================== FAILURES ===================================
___________________________________ test_sum ___________________________________
E       assert 3 == 4
==================================== PASSES ====================================
_______________________________ test_offline ___________________________________
----------------------------- Captured stdout call -----------------------------
expected: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution
=========================== short test summary info ============================
PASSED test_a.py::test_offline
FAILED test_a.py::test_sum - assert 3 == 4
========================= 1 failed, 1 passed in 0.01s ==========================
>>>>> End Test Output
";
    let tests = status(
        (&[], &["test_a.py::test_sum"]),
        (&["test_a.py::test_offline"], &[]),
    );
    let cause = classify(&Evidence {
        test_log: log,
        tests_status: Some(&tests),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        cause,
        Cause {
            kind: CauseKind::TestsFailed,
            infrastructure: false,
            summary: "tests failed: 1 of 1 FAIL_TO_PASS (test_a.py::test_sum)".to_owned(),
            names: names(&["test_a.py::test_sum"]),
            detail: String::new(),
        }
    );
}

#[test]
fn failing_tests_are_counted_and_a_few_are_named() {
    let tests = status((&["a"], &["b", "c"]), (&["d"], &["e", "f"]));
    let cause = classify(&Evidence {
        tests_status: Some(&tests),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        cause.summary,
        "tests failed: 2 of 3 FAIL_TO_PASS, 2 of 3 PASS_TO_PASS (b, c, e, … (4 in all))"
    );
    assert_eq!(cause.names, names(&["b", "c", "e", "f"]));
}

#[test]
fn a_missing_module_is_named_and_is_the_patchs_when_the_patch_has_that_package() {
    let log = "\
>>>>> Start Test Output
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_io.py _________________________
E   ModuleNotFoundError: No module named 'pyfits'
=========================== short test summary info ============================
ERROR tests/test_io.py
>>>>> End Test Output
";
    let evidence = Evidence {
        test_log: log,
        ..Evidence::default()
    };
    let cause = classify(&evidence).unwrap();
    assert_eq!(
        (cause.kind, cause.infrastructure, cause.summary.as_str()),
        (
            CauseKind::MissingModule,
            true,
            "a module the tests import is missing: pyfits (No module named 'pyfits')"
        )
    );
    let own = names(&["pyfits/__init__.py"]);
    let cause = classify(&Evidence {
        patch_files: &own,
        ..evidence
    })
    .unwrap();
    assert!(!cause.infrastructure);
    assert_eq!(
        cause.summary,
        "a module the tests import is missing: pyfits (No module named 'pyfits'); the patch \
         changes that package, so it counts as the patch's"
    );
    let submodule = "E   ModuleNotFoundError: No module named 'netcheck.fetch'\n";
    let cause = classify(&Evidence {
        test_log: submodule,
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.infrastructure, cause.summary.as_str()),
        (
            CauseKind::MissingModule,
            false,
            "a module the tests import is missing: netcheck.fetch (No module named \
             'netcheck.fetch'); its package imports, so the module is the project's own and \
             counts as the patch's"
        )
    );
}

#[test]
fn a_missing_command_is_named() {
    for line in [
        "./run_tests.sh: line 3: tox: command not found",
        "sh: 1: tox: not found",
    ] {
        let log = format!(">>>>> Start Test Output\n{line}\n>>>>> End Test Output\n");
        let cause = classify(&Evidence {
            test_log: &log,
            not_run: None,
            untrusted_reason: Some(
                "the log has no test results and no sign that the test suite ran",
            ),
            ..Evidence::default()
        })
        .unwrap();
        assert_eq!(
            (cause.kind, cause.summary.as_str()),
            (
                CauseKind::MissingCommand,
                "a command the tests run is missing: tox (tox: command not found)"
            ),
            "{line}"
        );
    }
}

#[test]
fn a_command_given_as_a_path_that_is_not_there_is_named_with_the_shells_words() {
    for (line, summary) in [
        (
            "/tmp/aci-eval/tests.sh: line 9: bin/test: No such file or directory",
            "a command the tests run is missing: bin/test (bin/test: No such file or directory; \
             the repository has no bin/test)",
        ),
        (
            "bash: line 1: ./runtests.py: No such file or directory",
            "a command the tests run is missing: ./runtests.py (./runtests.py: No such file or \
             directory; the repository has no ./runtests.py)",
        ),
        (
            "/usr/bin/env: 'python': No such file or directory",
            "a command the tests run is missing: python (python: No such file or directory)",
        ),
        (
            "/usr/bin/env: \u{2018}python2\u{2019}: No such file or directory",
            "a command the tests run is missing: python2 (python2: No such file or directory)",
        ),
    ] {
        let log = format!(">>>>> Start Test Output\n{line}\n>>>>> End Test Output\n");
        let cause = classify(&Evidence {
            test_log: &log,
            untrusted_reason: Some(
                "the log has no test results and no sign that the test suite ran",
            ),
            ..Evidence::default()
        })
        .unwrap();
        assert_eq!(
            (cause.kind, cause.summary.as_str(), cause.infrastructure),
            (CauseKind::MissingCommand, summary, true),
            "{line}"
        );
    }
    // A file a command cannot find is not a missing command.
    let log = ">>>>> Start Test Output\ncat: data/input.txt: No such file or directory\n>>>>> End \
               Test Output\n";
    let cause = classify(&Evidence {
        test_log: log,
        untrusted_reason: Some("the log has no test results and no sign that the test suite ran"),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(cause.kind, CauseKind::TestsDidNotRun);
}

/// The end of a sympy evaluation on a tree from sympy 1.7's sdist, which leaves out `bin/test`:
/// the reinstall before the tests could not reach the package index (the image had no mpmath),
/// then the test command could not start.
const SYMPY_SDIST_NO_BIN_TEST: &str = "\
| + python -m pip install -e .
| Obtaining file:///testbed
|   Preparing metadata (setup.py): started
|   Preparing metadata (setup.py): finished with status 'done'
| WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7fccd4266e90>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/mpmath/
| ERROR: Could not find a version that satisfies the requirement mpmath>=0.19 (from sympy) (from versions: none)
| ERROR: No matching distribution found for mpmath>=0.19
+ git checkout HEAD -- sympy/core/tests/test_basic.py
+ git apply -v -
Checking patch sympy/core/tests/test_basic.py...
Applied patch sympy/core/tests/test_basic.py cleanly.
+ : '>>>>> Start Test Output'
+ PYTHONWARNINGS=ignore::UserWarning,ignore::SyntaxWarning
+ bin/test -C --verbose sympy/core/tests/test_basic.py sympy/core/tests/test_3388592f9a41.py
/tmp/aci-eval/tests.sh: line 9: bin/test: No such file or directory
+ ACI_TEST_EXIT_CODE=127
+ : '>>>>> End Test Output'
+ echo '>>>>> Test Exit Code: 127'
>>>>> Test Exit Code: 127
";

#[test]
fn a_test_command_that_cannot_start_is_the_cause_whatever_failed_before_it() {
    let cause = classify(&Evidence {
        test_log: SYMPY_SDIST_NO_BIN_TEST,
        untrusted_reason: Some(
            "untrusted test run: the canary test that must pass (test_dfa499e2d978) has no \
             result in the log",
        ),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (
            cause.kind,
            cause.summary.as_str(),
            cause.names,
            cause.detail.as_str()
        ),
        (
            CauseKind::MissingCommand,
            "a command the tests run is missing: bin/test (bin/test: No such file or directory; \
             the repository has no bin/test)",
            names(&["bin/test"]),
            "/tmp/aci-eval/tests.sh: line 9: bin/test: No such file or directory"
        )
    );
    // Had the test command started (any other status), the reinstall's failure to reach the
    // index is what the log shows.
    let started = SYMPY_SDIST_NO_BIN_TEST.replace("Exit Code: 127", "Exit Code: 1");
    let cause = classify(&Evidence {
        test_log: &started,
        untrusted_reason: Some("untrusted test run: the canary test that must pass has no result"),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(cause.kind, CauseKind::Network);
}

/// pytest 4.4.2 from a tree with no tags: setuptools_scm versions it 0.1.dev1, and its own
/// tox.ini asks for pytest 2.0 or later.
const PYTEST_REFUSED_TO_START: &str = "\
+ : '>>>>> Start Test Output'
+ pytest -rA testing/logging/test_reporting.py testing/logging/test_526b3903463f.py
ERROR: /testbed/tox.ini:141: requires pytest-2.0, actual pytest-0.1.dev1+g2c5b120.d20261202'

+ ACI_TEST_EXIT_CODE=4
+ : '>>>>> End Test Output'
+ echo '>>>>> Test Exit Code: 4'
>>>>> Test Exit Code: 4
";

#[test]
fn a_runner_that_stops_before_any_test_is_quoted_rather_than_the_canaries() {
    let untrusted = "untrusted test run: the canary test that must pass (test_3b9112bb4686) has no \
                     result in the log";
    let nothing = status((&[], &["test_a"]), (&[], &["test_b"]));
    let cause = classify(&Evidence {
        test_log: PYTEST_REFUSED_TO_START,
        untrusted_reason: Some(untrusted),
        tests_status: Some(&nothing),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.summary.as_str(), cause.infrastructure),
        (
            CauseKind::TestsDidNotRun,
            "the tests did not run: the test runner said only: ERROR: /testbed/tox.ini:141: \
             requires pytest-2.0, actual pytest-0.1.dev1+g2c5b120.d20261202'",
            false
        )
    );
    // A test that passed shows the suite ran: the canaries' missing result is the cause.
    let one_passed = status((&[], &["test_a"]), (&["test_b"], &[]));
    let cause = classify(&Evidence {
        test_log: PYTEST_REFUSED_TO_START,
        untrusted_reason: Some(untrusted),
        tests_status: Some(&one_passed),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.summary.as_str()),
        (CauseKind::Untrusted, untrusted)
    );
}

#[test]
fn a_patch_that_does_not_apply_names_its_file_and_hunk() {
    let output = "\
Checking patch django/db/models/fields/__init__.py...
error: while searching for:
    def to_python(self, value):
error: patch failed: django/db/models/fields/__init__.py:1010
error: django/db/models/fields/__init__.py: patch does not apply
patching file django/db/models/fields/__init__.py
Hunk #1 FAILED at 1010.
1 out of 1 hunk FAILED -- saving rejects to file django/db/models/fields/__init__.py.rej
>>>>> Patch Apply Failed
";
    let cause = classify(&Evidence {
        apply_output: output,
        not_run: Some(NotRunReason::PatchApplyFailed),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(cause.kind, CauseKind::PatchNotApplied);
    assert!(!cause.infrastructure);
    assert_eq!(
        cause.summary,
        "the patch did not apply: error: patch failed: django/db/models/fields/__init__.py:1010, \
         error: django/db/models/fields/__init__.py: patch does not apply, Hunk #1 FAILED at \
         1010."
    );
    assert_eq!(
        cause.names,
        names(&[
            "django/db/models/fields/__init__.py:1010",
            "django/db/models/fields/__init__.py"
        ])
    );
}

#[test]
fn a_build_error_says_the_step_and_keeps_its_last_lines() {
    let error = "django__django-1: the environment image failed at step 3 (pip install -e .)\n\
                 ERROR: Could not find a version that satisfies the requirement foo==9\n\
                 hint: pin the package in env.specs";
    let cause = classify(&Evidence {
        build_error: Some(error),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        cause,
        Cause {
            kind: CauseKind::EnvironmentNotBuilt,
            infrastructure: true,
            summary: "the environment did not build: django__django-1: the environment image \
                      failed at step 3 (pip install -e .)"
                .to_owned(),
            names: Vec::new(),
            detail: error.to_owned(),
        }
    );
}

#[test]
fn timeouts_untrusted_runs_refusals_and_evaluation_errors_each_have_their_kind() {
    let kind =
        |evidence: Evidence<'_>| classify(&evidence).map(|cause| (cause.kind, cause.summary));
    assert_eq!(
        kind(Evidence {
            timed_out: true,
            ..Evidence::default()
        }),
        Some((
            CauseKind::TimedOut,
            "the tests passed their deadline (--timeout)".to_owned()
        ))
    );
    let untrusted = "untrusted test run: the canary test_aci_x did not pass";
    assert_eq!(
        kind(Evidence {
            untrusted_reason: Some(untrusted),
            ..Evidence::default()
        }),
        Some((CauseKind::Untrusted, untrusted.to_owned()))
    );
    let git = "the patch writes inside .git (.git/hooks/pre-commit), so it is not applied";
    assert_eq!(
        kind(Evidence {
            error: Some(git),
            ..Evidence::default()
        }),
        Some((CauseKind::PatchNotApplied, git.to_owned()))
    );
    assert_eq!(
        kind(Evidence {
            error: Some("the evaluation container failed: the daemon went away\nmore"),
            ..Evidence::default()
        }),
        Some((
            CauseKind::EvaluationError,
            "the evaluation failed: the evaluation container failed: the daemon went away"
                .to_owned()
        ))
    );
    assert_eq!(
        kind(Evidence {
            resolved: true,
            timed_out: true,
            ..Evidence::default()
        }),
        None
    );
}

#[test]
fn a_collection_error_or_an_empty_log_is_tests_that_did_not_run() {
    let log = "\
>>>>> Start Test Output
==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_core.py ______________________
E     File \"/testbed/pkg/core.py\", line 3
E       def f(:
E   SyntaxError: invalid syntax
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
>>>>> End Test Output
";
    let cause = classify(&Evidence {
        test_log: log,
        untrusted_reason: Some("the log has no test results and no sign that the test suite ran"),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.infrastructure, cause.summary.as_str()),
        (
            CauseKind::TestsDidNotRun,
            false,
            "the tests did not run: a collection error (ERROR collecting tests/test_core.py)"
        )
    );
    let cause = classify(&Evidence {
        test_log: "+ ./runtests.py\nSegmentation fault (core dumped)\n",
        not_run: Some(NotRunReason::MissingEndMarker),
        error: Some("the log has no end-of-tests marker"),
        ..Evidence::default()
    })
    .unwrap();
    assert_eq!(
        (cause.kind, cause.summary.as_str(), cause.detail.as_str()),
        (
            CauseKind::TestsDidNotRun,
            "the tests did not run: the log has no end-of-tests marker",
            "+ ./runtests.py\nSegmentation fault (core dumped)"
        )
    );
}

/// On each of the SWE-bench harness's 138 real logs, the cause agrees with what that run
/// published: `no_apply` → the patch did not apply, `test_timeout` → timed out, `install_fail`
/// → the environment did not build, `resolved` → no cause, applied and unresolved → a cause
/// that is none of those.
#[test]
fn on_every_swe_bench_harness_log_the_cause_agrees_with_the_published_flags() {
    let data = crate::eval::swebench_data_dir();
    let lite = std::fs::read_to_string(data.join("lite.jsonl")).unwrap();
    let verdicts: BTreeMap<String, BTreeMap<String, bool>> =
        serde_json::from_str(&std::fs::read_to_string(data.join("harness-verdicts.json")).unwrap())
            .unwrap();
    let records: BTreeMap<String, serde_json::Value> = lite
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            (record["instance_id"].as_str().unwrap().to_owned(), record)
        })
        .collect();
    let list = |record: &serde_json::Value, field: &str| -> Vec<String> {
        match &record[field] {
            serde_json::Value::String(text) => serde_json::from_str(text).unwrap(),
            other => serde_json::from_value(other.clone()).unwrap(),
        }
    };
    let table = crate::eval::spec::builtin();
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut disagree = Vec::new();
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(data.join("harness-logs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let id = name.split('.').next().unwrap();
        let record = &records[id];
        let flags = &verdicts[id];
        let parser = table
            .repo(record["repo"].as_str().unwrap())
            .unwrap()
            .log_parser;
        let log = std::fs::read_to_string(&path).unwrap();
        let reading = match read_any_log(&log, parser.parser()) {
            AnyReading::EmptyPatch => {
                kinds.entry("empty patch").or_default();
                *kinds.get_mut("empty patch").unwrap() += 1;
                continue;
            }
            AnyReading::Reading(reading) => reading,
        };
        let not_run = match &reading {
            LogReading::NotRun(reason) => Some(*reason),
            LogReading::Ran(_) => None,
        };
        let graded = grade(
            &reading,
            &list(record, "FAIL_TO_PASS"),
            &list(record, "PASS_TO_PASS"),
        );
        let cause = classify(&Evidence {
            resolved: graded.resolved,
            error: graded.error.as_deref(),
            not_run,
            test_log: &log,
            timed_out: graded.timed_out,
            untrusted_reason: graded.untrusted_reason.as_deref(),
            tests_status: graded.tests_status.as_ref(),
            ..Evidence::default()
        });
        checked += 1;
        *kinds
            .entry(
                cause
                    .as_ref()
                    .map_or("resolved", |cause| cause.kind.as_str()),
            )
            .or_default() += 1;
        let kind = cause.as_ref().map(|cause| cause.kind);
        let flag = |name: &str| flags[name];
        let agrees = if flag("no_apply") {
            kind == Some(CauseKind::PatchNotApplied)
        } else if flag("test_timeout") {
            kind == Some(CauseKind::TimedOut)
        } else if flag("install_fail") {
            kind == Some(CauseKind::EnvironmentNotBuilt)
        } else if flag("resolved") {
            kind.is_none()
        } else if flag("applied") {
            !matches!(
                kind,
                None | Some(CauseKind::PatchNotApplied | CauseKind::EnvironmentNotBuilt)
            )
        } else {
            true
        };
        if !agrees {
            disagree.push(format!("{id}: {flags:?} but {cause:?}"));
        }
        assert!(
            cause.as_ref().is_none_or(|cause| !cause.summary.is_empty()),
            "{id}: empty summary"
        );
    }
    assert_eq!(disagree, Vec::<String>::new());
    assert_eq!(
        checked + kinds.get("empty patch").copied().unwrap_or(0),
        138
    );
    eprintln!("causes on the harness logs: {kinds:?}");
}
