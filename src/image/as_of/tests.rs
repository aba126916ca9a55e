use super::*;

const PAGE: &str = r#"{
  "meta": {"api-version": "1.1"},
  "name": "setuptools",
  "files": [
    {"filename": "setuptools-41.6.0-py2.py3-none-any.whl",
     "url": "https://files.pythonhosted.org/packages/d9/de/setuptools-41.6.0-py2.py3-none-any.whl",
     "hashes": {"sha256": "3e8e8505e563631e7cb110d9ad82d135ee866b8146d5efe06e42be07a72db20a"},
     "requires-python": ">=2.7, !=3.0.*, !=3.1.*",
     "yanked": false, "upload-time": "2019-10-26T20:25:08.364232Z"},
    {"filename": "setuptools-42.0.0-py2.py3-none-any.whl",
     "url": "https://files.pythonhosted.org/packages/aa/setuptools-42.0.0-py2.py3-none-any.whl",
     "hashes": {"sha256": "c5a8e4e2cd4d1bd5cd08d4de1ee1f8ad4ba2e1fd6b5f8d8d8c8e1f5c1c8d2a1b"},
     "requires-python": ">=2.7, !=3.0.*", "yanked": true,
     "upload-time": "2019-11-24T22:00:00.000000Z"},
    {"filename": "setuptools-41.7.0.tar.gz",
     "url": "https://files.pythonhosted.org/packages/bb/setuptools-41.7.0.tar.gz?x=1&y=2",
     "hashes": {"md5": "00"}, "requires-python": null,
     "yanked": "broke <pip>", "upload-time": "2019-11-20T10:00:00Z"},
    {"filename": "setuptools-84.2.1-py3-none-any.whl",
     "url": "https://files.pythonhosted.org/packages/cc/setuptools-84.2.1-py3-none-any.whl",
     "hashes": {"sha256": "ff"}, "requires-python": ">=3.9",
     "yanked": false, "upload-time": "2026-11-01T00:00:00Z"},
    {"filename": "setuptools-0.1.tar.gz",
     "url": "https://files.pythonhosted.org/packages/dd/setuptools-0.1.tar.gz",
     "hashes": {}, "yanked": false}
  ]
}"#;

#[test]
fn the_page_keeps_the_files_uploaded_by_the_cutoff_as_pep_503_html() {
    let cutoff = Cutoff::parse("2019-11-24T22:00:00Z").unwrap();
    assert_eq!(
        filter_page("setuptools", PAGE.as_bytes(), cutoff, &[])
            .unwrap()
            .html,
        "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" \
         content=\"1.0\">\n<title>Links for setuptools</title>\n</head>\n<body>\n<h1>Links \
         for setuptools</h1>\n\
         <a href=\"https://files.pythonhosted.org/packages/d9/de/setuptools-41.6.0-py2.py3-none-any.whl#sha256=3e8e8505e563631e7cb110d9ad82d135ee866b8146d5efe06e42be07a72db20a\" \
         data-requires-python=\"&gt;=2.7, !=3.0.*, !=3.1.*\">setuptools-41.6.0-py2.py3-none-any.whl</a><br/>\n\
         <a href=\"https://files.pythonhosted.org/packages/aa/setuptools-42.0.0-py2.py3-none-any.whl#sha256=c5a8e4e2cd4d1bd5cd08d4de1ee1f8ad4ba2e1fd6b5f8d8d8c8e1f5c1c8d2a1b\" \
         data-requires-python=\"&gt;=2.7, !=3.0.*\" data-yanked=\"\">setuptools-42.0.0-py2.py3-none-any.whl</a><br/>\n\
         <a href=\"https://files.pythonhosted.org/packages/bb/setuptools-41.7.0.tar.gz?x=1&amp;y=2\" \
         data-yanked=\"broke &lt;pip&gt;\">setuptools-41.7.0.tar.gz</a><br/>\n\
         </body>\n</html>\n"
    );
}

#[test]
fn a_file_uploaded_one_second_after_the_cutoff_is_left_out() {
    let before = Cutoff::parse("2019-11-24T21:59:59Z").unwrap();
    let html = filter_page("setuptools", PAGE.as_bytes(), before, &[])
        .unwrap()
        .html;
    assert!(html.contains(">setuptools-41.7.0.tar.gz</a>"), "{html}");
    assert!(!html.contains("42.0.0"), "{html}");
}

/// The end of PyPI's page of atomicwrites as it is: every version was uploaded again in July
/// 2022, so as of any earlier date it has none, and pytest 4.4's spec pins 1.4.1.
const ATOMICWRITES: &str = r#"{"meta": {"api-version": "1.1", "_last-serial": "14382305"},
 "name": "atomicwrites", "versions": ["1.3.0", "1.4.0", "1.4.1"],
 "files": [
  {"filename": "atomicwrites-1.3.0.tar.gz", "hashes": {"sha256": "75a9445bac02d8d058d5e1fe689654ba5a6556a1dfd8ce6ec55a0ed79866cfa6"}, "requires-python": ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*", "size": 11699, "upload-time": "2022-07-09T04:09:50.226713Z", "url": "https://files.pythonhosted.org/packages/ec/0f/cd484ac8820fed363b374af30049adc8fd13065720fd4f4c6be8a2309da7/atomicwrites-1.3.0.tar.gz", "yanked": false},
  {"filename": "atomicwrites-1.4.0-py2.py3-none-any.whl", "hashes": {"sha256": "6d1784dea7c0c8d4a5172b6c620f40b6e4cbfdf96d783691f2e1302a7b88e197"}, "requires-python": ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*", "size": 6790, "upload-time": "2022-07-09T04:09:09.073080Z", "url": "https://files.pythonhosted.org/packages/2c/a0/da5f49008ec6e9a658dbf5d7310a4debd397bce0b4db03cf8a410066bb87/atomicwrites-1.4.0-py2.py3-none-any.whl", "yanked": false},
  {"filename": "atomicwrites-1.4.0.tar.gz", "hashes": {"sha256": "ae70396ad1a434f9c7046fd2dd196fc04b12f9e91ffb859164193be8b6168a7a"}, "requires-python": ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*", "size": 11790, "upload-time": "2022-07-09T04:09:52.757713Z", "url": "https://files.pythonhosted.org/packages/55/8d/74a75635f2c3c914ab5b3850112fd4b0c8039975ecb320e4449aa363ba54/atomicwrites-1.4.0.tar.gz", "yanked": false},
  {"filename": "atomicwrites-1.4.1.tar.gz", "hashes": {"sha256": "81b2c9071a49367a7f770170e5eec8cb66567cfbbc8c73d20ce5ca4a8d71cf11"}, "requires-python": null, "size": 14227, "upload-time": "2022-07-08T18:31:40.459492Z", "url": "https://files.pythonhosted.org/packages/87/c6/53da25344e3e3a9c01095a89f16dbcda021c609ddb42dd6d7c0528236fb2/atomicwrites-1.4.1.tar.gz", "yanked": false}
 ]}"#;

#[test]
fn a_pinned_version_is_listed_past_the_cutoff_and_the_rest_of_the_page_obeys_it() {
    // pytest-dev__pytest-5227 (2019, Python 3.9): its layer's cutoff is Python 3.9's release.
    let cutoff = Cutoff::parse("2020-10-05T00:00:00Z").unwrap();
    let empty = filter_page("atomicwrites", ATOMICWRITES.as_bytes(), cutoff, &[]).unwrap();
    assert!(!empty.html.contains("<a "), "{}", empty.html);
    assert_eq!(empty.past_cutoff, []);
    let pins = pins::Pins::of(["atomicwrites==1.4.1", "attrs==23.1.0"]);
    let pinned = filter_page(
        "atomicwrites",
        ATOMICWRITES.as_bytes(),
        cutoff,
        &pins.versions("atomicwrites"),
    )
    .unwrap();
    let links: Vec<&str> = pinned
        .html
        .lines()
        .filter(|l| l.starts_with("<a "))
        .collect();
    assert_eq!(
        links,
        [
            "<a href=\"https://files.pythonhosted.org/packages/87/c6/53da25344e3e3a9c01095a89f16dbcda021c609ddb42dd6d7c0528236fb2/atomicwrites-1.4.1.tar.gz#sha256=81b2c9071a49367a7f770170e5eec8cb66567cfbbc8c73d20ce5ca4a8d71cf11\">atomicwrites-1.4.1.tar.gz</a><br/>"
        ]
    );
    assert_eq!(
        pinned.past_cutoff,
        [(
            "atomicwrites==1.4.1".to_owned(),
            Cutoff::parse("2022-07-08T18:31:40Z").unwrap()
        )]
    );
    // A pin the cutoff already lets through is not past it.
    let later = Cutoff::parse("2023-01-01").unwrap();
    let page = filter_page(
        "atomicwrites",
        ATOMICWRITES.as_bytes(),
        later,
        &["1.4.1".to_owned()],
    )
    .unwrap();
    assert_eq!(page.html.matches("<a ").count(), 4);
    assert_eq!(page.past_cutoff, []);
}

#[test]
fn the_label_says_the_cutoff_why_and_the_pins_past_it() {
    let as_of = AsOf {
        cutoff: Cutoff::parse("2020-10-05T00:00:00Z").unwrap(),
        why: "the release of Python 3.9, after the record's created_at 2019-05-15T13:51:41Z"
            .to_owned(),
    };
    assert_eq!(resolved_text(None, &[]), "today");
    assert_eq!(
        resolved_text(Some(&as_of), &[]),
        "2020-10-05T00:00:00Z (the release of Python 3.9, after the record's created_at \
         2019-05-15T13:51:41Z)"
    );
    let past = [
        (
            "atomicwrites==1.4.1".to_owned(),
            Cutoff::parse("2022-07-08T18:31:40Z").unwrap(),
        ),
        (
            "attrs==23.1.0".to_owned(),
            Cutoff::parse("2023-04-16T00:00:00Z").unwrap(),
        ),
    ];
    assert_eq!(
        resolved_text(Some(&as_of), &past),
        "2020-10-05T00:00:00Z (the release of Python 3.9, after the record's created_at \
         2019-05-15T13:51:41Z); pinned past it: atomicwrites==1.4.1 (uploaded \
         2022-07-08T18:31:40Z), attrs==23.1.0 (uploaded 2023-04-16T00:00:00Z)"
    );
}

#[test]
fn a_page_that_is_not_pep_691_json_is_an_error_naming_the_project() {
    let error = filter_page("six", b"<html>", Cutoff(0), &[]).unwrap_err();
    assert_eq!(
        error,
        "PyPI's page of six is not PEP 691 JSON: expected value at line 1 column 1"
    );
}

#[test]
fn the_cutoff_of_a_layer_follows_the_setting() {
    let date = Some(("2019-05-15T13:51:41Z", "the record's created_at"));
    let at = Cutoff::parse("2020-01-01").unwrap();
    let created_at = |date, python| {
        layer_cutoff(ResolveAsOf::CreatedAt, date, python)
            .map(|as_of| (as_of.cutoff.to_string(), as_of.why))
    };
    let expect = |cutoff: &str, why: &str| Some((cutoff.to_owned(), why.to_owned()));
    assert_eq!(
        created_at(date, "3.7"),
        expect("2019-05-15T13:51:41Z", "the record's created_at")
    );
    // Never before the layer's Python was released.
    assert_eq!(
        created_at(date, "3.9"),
        expect(
            "2020-10-05T00:00:00Z",
            "the release of Python 3.9, after the record's created_at 2019-05-15T13:51:41Z"
        )
    );
    assert_eq!(
        created_at(date, "3.11").map(|(cutoff, _)| cutoff),
        Some("2022-10-24T00:00:00Z".to_owned())
    );
    let commit = Some((
        "2023-06-01T00:00:00Z",
        "the environment_setup_commit's committer date",
    ));
    assert_eq!(
        created_at(commit, "3.11"),
        expect(
            "2023-06-01T00:00:00Z",
            "the environment_setup_commit's committer date"
        )
    );
    assert_eq!(
        created_at(date, "2.7"),
        expect("2019-05-15T13:51:41Z", "the record's created_at")
    );
    assert_eq!(created_at(None, "3.11"), None);
    assert_eq!(
        created_at(Some(("", "the record's created_at")), "3.11"),
        None
    );
    assert_eq!(layer_cutoff(ResolveAsOf::Today, date, "3.11"), None);
    // A date of the user's own is taken as it is.
    assert_eq!(
        layer_cutoff(ResolveAsOf::At(at), date, "3.11"),
        Some(AsOf {
            cutoff: at,
            why: "env.resolve_as_of".to_owned()
        })
    );
}

#[test]
fn names_are_normalized_as_pep_503_says() {
    assert_eq!(normalize("Setuptools_SCM"), "setuptools-scm");
    assert_eq!(normalize("zope.interface"), "zope-interface");
    assert_eq!(normalize("a-_.b"), "a-b");
}

#[test]
fn the_constraints_of_a_freeze_are_its_pins_but_pip_setuptools_and_wheel() {
    let freeze: Vec<String> = [
        "pip==23.0.1",
        "setuptools==66.1.1",
        "Wheel==0.40.0",
        "-e git+file:///testbed@abc#egg=rangeset",
        "rangeset @ file:///testbed",
        "py==1.11.0",
        "pluggy==0.13.1",
        "",
    ]
    .map(str::to_owned)
    .to_vec();
    assert_eq!(constraints(&freeze), "pluggy==0.13.1\npy==1.11.0\n");
}

#[test]
fn a_failed_pip_step_of_an_old_record_built_as_of_today_suggests_its_dates() {
    let failed =
        "failed at step `setup 1 of 1: python -m pip install -e .`: the RUN step returned 1";
    assert_eq!(
        today_hint(ResolveAsOf::Today, "2019-05-07T20:27:24Z", failed).as_deref(),
        Some(
            "the record is of 2019-05-07 and pip resolved its packages as of today; its setup \
             may need the setuptools and packages of its time: --set \
             env.resolve_as_of=created_at (docs/swebench.md, \"Environments resolved as of a \
             date\")"
        )
    );
    // Already dated, no date to go by, or not a pip step: nothing to suggest.
    assert_eq!(
        today_hint(ResolveAsOf::CreatedAt, "2019-05-07T20:27:24Z", failed),
        None
    );
    assert_eq!(today_hint(ResolveAsOf::Today, "", failed), None);
    let other = "failed at step `venv`: python3.9: command not found";
    assert_eq!(today_hint(ResolveAsOf::Today, "2019-05-07", other), None);
}
