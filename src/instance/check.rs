//! The rules a record's fields must keep before anything reads them as more than text: an
//! instance id that can name aci's files, commits that git cannot take for options, an
//! `owner/name` repository, and image and language names that cannot reach a command line as
//! anything but one word. Pure functions; `instance::parse_instances` applies them as it loads,
//! so a bad record is one error line and nothing of it runs.

/// The longest file name the file systems aci writes to allow (`NAME_MAX` on Linux).
const NAME_MAX: usize = 255;

/// The most bytes an instance id may have. The longest name aci makes from an id is the
/// temporary file of an atomic write of `<id>.patch`, `.<id>.patch.<pid>.<counter>.tmp`, with a
/// pid of at most 10 digits and a counter of at most 20: 43 bytes on top of the id.
pub const MAX_ID_BYTES: usize =
    NAME_MAX - ".".len() - ".patch".len() - 1 - 10 - 1 - 20 - ".tmp".len();

/// Why an instance id cannot name a directory or a file, if it cannot. Every command that
/// writes files writes them under `<output>/<id>/` with names made from the id, so `.`, `..`,
/// path separators, NUL, other control characters and ids too long for a file name are refused
/// when the instances file is read, whichever command reads it.
pub fn unsafe_id(id: &str) -> Option<String> {
    const NO_DIRECTORY: &str = "so it cannot name an output directory";
    let reason = if id == "." || id == ".." {
        "is `.` or `..`"
    } else if id.contains(['/', '\\']) {
        "contains a path separator"
    } else if id.contains('\0') {
        "contains a NUL byte"
    } else if id.chars().any(char::is_control) {
        "contains a control character"
    } else if id.len() > MAX_ID_BYTES {
        return Some(format!(
            "is {} bytes long, more than the {MAX_ID_BYTES} that leave room in a file name \
             ({NAME_MAX} bytes) for the longest name aci makes from an id, \
             `.<id>.patch.<pid>.<n>.tmp`",
            id.len()
        ));
    } else {
        return None;
    };
    Some(format!("{reason}, {NO_DIRECTORY}"))
}

/// Whether `name` is a ref name that `git check-ref-format --allow-onelevel` accepts: no
/// component that starts with `.` or ends with `.lock`, no `..`, no control character, space,
/// `~ ^ : ? * [ \`, no `@{`, not `@`, no leading, trailing or doubled `/`, and no trailing `.`.
pub fn is_ref_name(name: &str) -> bool {
    const FORBIDDEN: &[char] = &[' ', '~', '^', ':', '?', '*', '[', '\\'];
    !name.is_empty()
        && name != "@"
        && !name.contains("..")
        && !name.contains("@{")
        && !name.ends_with('.')
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || FORBIDDEN.contains(&c))
        && name
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
}

/// Whether `value` is a commit id: 7 to 64 hex digits (an abbreviated or full SHA-1 or SHA-256).
pub fn is_commit_id(value: &str) -> bool {
    (7..=64).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks a commit field (`base_commit`, `environment_setup_commit`): a commit id, or a branch
/// or tag name (SWE-smith's `base_commit` is a branch) that git accepts and that does not start
/// with `-`, so that no git command line can read it as an option.
///
/// # Errors
/// What the value is not, the value quoted.
pub fn check_commit(value: &str) -> Result<(), String> {
    if is_commit_id(value) || (is_ref_name(value) && !value.starts_with('-')) {
        return Ok(());
    }
    Err(format!(
        "{value:?} is neither a commit id (7 to 64 hex digits) nor a branch or tag name git \
         accepts (git check-ref-format, not starting with `-`)"
    ))
}

/// Whether `part` is one part of an `owner/name`: ASCII letters, digits, `.`, `_` and `-`,
/// not starting with `-`, and no `..`.
fn is_repo_part(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with('-')
        && !part.contains("..")
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Checks `repo`: `owner/name`, each part ASCII letters, digits, `.`, `_` and `-`, not
/// starting with `-` and without `..` (it names the mirror's directory, the repository's
/// directory in the container and the clone URL).
///
/// # Errors
/// What is wrong, the value quoted.
pub fn check_repo(value: &str) -> Result<(), String> {
    match value.split_once('/') {
        Some((owner, name)) if is_repo_part(owner) && is_repo_part(name) => Ok(()),
        _ => Err(format!(
            "{value:?} is not `owner/name` (ASCII letters, digits, `.`, `_` and `-` on each side \
             of one `/`, neither side starting with `-` or holding `..`)"
        )),
    }
}

/// Checks an image name (`image`, `image_name`): a Docker reference such as
/// `registry:5000/owner/name:tag` or `name@sha256:…`, made of ASCII letters, digits and
/// `. _ - / : @`, starting with a letter or digit, with no `//` or `..`.
///
/// # Errors
/// What is wrong, the value quoted.
pub fn check_image(value: &str) -> Result<(), String> {
    let well_formed = value.len() <= NAME_MAX
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !value.contains("//")
        && !value.contains("..")
        && value.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b':' | b'@')
        });
    if well_formed {
        return Ok(());
    }
    Err(format!(
        "{value:?} is not an image reference (ASCII letters, digits and `. _ - / : @`, \
         starting with a letter or digit, at most {NAME_MAX} bytes)"
    ))
}

/// Checks `language`: ASCII letters, digits, `.`, `_`, `+` and `-`, starting with a letter or
/// digit, at most 64 bytes (it names the language image, `aci-<language>:<release>`).
///
/// # Errors
/// What is wrong, the value quoted.
pub fn check_language(value: &str) -> Result<(), String> {
    let well_formed = value.len() <= 64
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'));
    if well_formed {
        return Ok(());
    }
    Err(format!(
        "{value:?} is not a language name (ASCII letters, digits and `. _ + -`, starting with a \
         letter or digit, at most 64 bytes)"
    ))
}

/// Checks a one-line text field (`version`): no control character, so that the messages that
/// quote it stay one line.
///
/// # Errors
/// The value quoted.
pub fn check_one_line(value: &str) -> Result<(), String> {
    if value.chars().any(char::is_control) {
        return Err(format!("{value:?} holds a control character"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What real `git check-ref-format --allow-onelevel` says of `name`. It reads an argument
    /// that starts with `-` as an option, so such a name is asked about as the second
    /// component of `x/<name>`, where the same rules apply to it.
    fn git_accepts(name: &str) -> bool {
        let asked = if name.starts_with('-') {
            format!("x/{name}")
        } else {
            name.to_owned()
        };
        std::process::Command::new("git")
            .args(["check-ref-format", "--allow-onelevel", &asked])
            .output()
            .unwrap()
            .status
            .success()
    }

    #[test]
    fn ref_names_are_judged_as_git_check_ref_format_judges_them() {
        let table = [
            "main",
            "master",
            "v1.2.3",
            "feature/x",
            "refs/heads/main",
            "Instagram__MonkeyType.70c3acf6",
            "pandas-dev__pandas.95280573.lm_rewrite__3k1x9z2a",
            "a_b-c+d=e,f;g!h#i%j&k'l",
            "caf\u{e9}",
            "-leading-dash",
            "--output=/tmp/victim",
            "+force",
            "0",
            "HEAD",
            "abc123",
            "x@y",
            "x@",
            "@",
            "@{-1}",
            "x@{1}",
            "a..b",
            "..",
            ".",
            ".hidden",
            "a/.hidden",
            "a/b.lock",
            "x.lock",
            "x.lockx",
            "x.lock/y",
            "trailing.",
            "trailing/",
            "/leading",
            "a//b",
            "with space",
            "--upload-pack=touch /tmp/marker",
            "tab\there",
            "new\nline",
            "del\u{7f}",
            "tilde~1",
            "caret^",
            "colon:x",
            "question?",
            "star*",
            "bracket[",
            "back\\slash",
            "",
        ];
        let disagreements: Vec<(&str, bool, bool)> = table
            .iter()
            .map(|name| (*name, is_ref_name(name), git_accepts(name)))
            .filter(|(_, ours, git)| ours != git)
            .collect();
        assert_eq!(disagreements, [], "(name, ours, git's)");
        // The table holds both answers, so the comparison can fail either way.
        assert!(table.iter().any(|name| is_ref_name(name)));
        assert!(table.iter().any(|name| !is_ref_name(name)));
    }

    #[test]
    fn commits_are_hex_ids_or_ref_names_that_no_git_command_reads_as_an_option() {
        for good in [
            "8ec2d1f0e2f39b4b52b1f5f1f3f0b6c4fb5b8d0a",
            "8ec2d1f",
            "0000000000000000000000000000000000000000",
            &"ab".repeat(32),
            "main",
            "pandas-dev__pandas.95280573.lm_rewrite__3k1x9z2a",
        ] {
            assert_eq!(check_commit(good), Ok(()), "{good}");
        }
        assert_eq!(
            check_commit("--output=/tmp/victim"),
            Err(
                "\"--output=/tmp/victim\" is neither a commit id (7 to 64 hex digits) nor a \
                 branch or tag name git accepts (git check-ref-format, not starting with `-`)"
                    .to_owned()
            )
        );
        for bad in [
            "--upload-pack=touch /tmp/marker",
            "-b",
            "HEAD~1",
            "a b",
            "",
            "x\ny",
        ] {
            assert!(check_commit(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn repositories_are_owner_slash_name_in_safe_characters() {
        for good in [
            "django/django",
            "psf/requests",
            "Project-MONAI/MONAI",
            "o/.github",
            "a_b/c.d-e",
        ] {
            assert_eq!(check_repo(good), Ok(()), "{good}");
        }
        for bad in [
            "django",
            "a/b/c",
            "-o/n",
            "o/-n",
            "o/..",
            "../n",
            "o/a..b",
            "o/",
            "/n",
            "o/n m",
            "o/n;rm",
            "Foo/Bar+Baz",
            "o/caf\u{e9}",
        ] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_repo("--upload-pack=x/y"),
            Err(
                "\"--upload-pack=x/y\" is not `owner/name` (ASCII letters, digits, `.`, `_` and \
                 `-` on each side of one `/`, neither side starting with `-` or holding `..`)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn image_and_language_names_are_one_safe_word() {
        for good in [
            "swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
            "jyangballin/swesmith.x86_64.pandas-dev_1776_pandas.95280573",
            "localhost:5000/aci-python:bookworm",
            "aci-python@sha256:0123abcd",
        ] {
            assert_eq!(check_image(good), Ok(()), "{good}");
        }
        for bad in ["-x", "a b", "a\nFROM b", "a//b", "a/../b", "", ":tag", "/a"] {
            assert!(check_image(bad).is_err(), "{bad:?}");
        }
        for good in ["python", "rust", "c++", "go1.22", "type_script"] {
            assert_eq!(check_language(good), Ok(()), "{good}");
        }
        for bad in ["", "-python", "py thon", "python:evil", "py/thon"] {
            assert!(check_language(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_one_line("0.12"), Ok(()));
        assert_eq!(
            check_one_line("1.0\nerror: fake"),
            Err("\"1.0\\nerror: fake\" holds a control character".to_owned())
        );
    }

    #[test]
    fn ids_that_cannot_name_every_file_aci_derives_are_refused() {
        assert_eq!(unsafe_id("django__django-11099"), None);
        assert_eq!(unsafe_id(&"x".repeat(MAX_ID_BYTES)), None);
        assert_eq!(MAX_ID_BYTES, 212);
        let longest = format!(
            ".{}.patch.{}.{}.tmp",
            "x".repeat(MAX_ID_BYTES),
            u32::MAX,
            u64::MAX
        );
        assert_eq!(longest.len(), NAME_MAX);
        assert_eq!(
            unsafe_id(&"x".repeat(MAX_ID_BYTES + 1)).unwrap(),
            "is 213 bytes long, more than the 212 that leave room in a file name (255 bytes) \
             for the longest name aci makes from an id, `.<id>.patch.<pid>.<n>.tmp`"
        );
        // Bytes, not characters: 71 three-byte characters are 213 bytes.
        assert!(unsafe_id(&"\u{20ac}".repeat(71)).is_some());
        let control = "contains a control character, so it cannot name an output directory";
        assert_eq!(unsafe_id("a\tb").unwrap(), control);
        assert_eq!(unsafe_id("a\u{1b}[2Jb").unwrap(), control);
        assert_eq!(
            unsafe_id("a\0b").unwrap(),
            "contains a NUL byte, so it cannot name an output directory"
        );
    }
}
