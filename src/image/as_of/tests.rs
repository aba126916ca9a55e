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
        filter_page("setuptools", PAGE.as_bytes(), cutoff).unwrap(),
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
    let html = filter_page("setuptools", PAGE.as_bytes(), before).unwrap();
    assert!(html.contains(">setuptools-41.7.0.tar.gz</a>"), "{html}");
    assert!(!html.contains("42.0.0"), "{html}");
}

#[test]
fn a_page_that_is_not_pep_691_json_is_an_error_naming_the_project() {
    let error = filter_page("six", b"<html>", Cutoff(0)).unwrap_err();
    assert_eq!(
        error,
        "PyPI's page of six is not PEP 691 JSON: expected value at line 1 column 1"
    );
}

#[test]
fn the_cutoff_of_a_layer_follows_the_setting() {
    let date = Some("2019-05-15T13:51:41Z");
    let at = Cutoff::parse("2020-01-01").unwrap();
    let created_at = |date, python| layer_cutoff(ResolveAsOf::CreatedAt, date, python);
    assert_eq!(created_at(date, "3.7"), Some(Cutoff(1_557_928_301)));
    // Never before the layer's Python was released.
    assert_eq!(
        created_at(date, "3.9").map(|c| c.to_string()),
        Some("2020-10-05T00:00:00Z".to_owned())
    );
    assert_eq!(
        created_at(date, "3.11").map(|c| c.to_string()),
        Some("2022-10-24T00:00:00Z".to_owned())
    );
    assert_eq!(
        created_at(Some("2023-06-01T00:00:00Z"), "3.11").map(|c| c.to_string()),
        Some("2023-06-01T00:00:00Z".to_owned())
    );
    assert_eq!(created_at(date, "2.7"), Some(Cutoff(1_557_928_301)));
    assert_eq!(created_at(None, "3.11"), None);
    assert_eq!(created_at(Some(""), "3.11"), None);
    assert_eq!(layer_cutoff(ResolveAsOf::Today, date, "3.11"), None);
    // A date of the user's own is taken as it is.
    assert_eq!(layer_cutoff(ResolveAsOf::At(at), date, "3.11"), Some(at));
    assert_eq!(cutoff_text(Some(at)), "2020-01-01T23:59:59Z");
    assert_eq!(cutoff_text(None), "today");
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
