//! git's C quoting of path names, undone.

/// Undoes git's C quoting of a path name (`"a/tab\there"`, octal `\303\251`): the quotes
/// are removed and the escapes decoded. A name that is not quoted is kept as it is.
pub fn git_unquote(name: &str) -> String {
    match name
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    {
        Some(inner) => c_unescape(inner),
        None => name.to_owned(),
    }
}

/// `text` with the C escapes git writes in quoted names (`\a \b \t \n \v \f \r`, `\"`,
/// `\\` and up to three octal digits) decoded wherever they stand; bytes that are not UTF-8
/// become U+FFFD.
pub fn c_unescape(text: &str) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes().peekable();
    while let Some(byte) = rest.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match rest.next() {
            Some(digit @ b'0'..=b'7') => {
                let mut value = u32::from(digit - b'0');
                for _ in 0..2 {
                    if let Some(next @ b'0'..=b'7') = rest.peek().copied() {
                        value = value * 8 + u32::from(next - b'0');
                        rest.next();
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(b'a') => bytes.push(0x07),
            Some(b'b') => bytes.push(0x08),
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(b'v') => bytes.push(0x0b),
            Some(b'f') => bytes.push(0x0c),
            Some(b'r') => bytes.push(b'\r'),
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_read_back_as_the_names_git_quoted() {
        let names = [
            "caf\u{e9}.txt",
            "tab\there",
            "quote\"d and back\\slash",
            "bell\u{7}vt\u{b}ff\u{c}cr\r",
            "plain.txt",
        ];
        let dir = std::env::temp_dir().join(format!("aci-text-unquote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "core.quotePath=true"])
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        for name in names {
            std::fs::write(dir.join(name), "x\n").unwrap();
        }
        git(&["add", "-A"]);
        let listed = git(&["diff", "--cached", "--name-only"]);
        let _ = std::fs::remove_dir_all(&dir);
        let mut read: Vec<String> = listed.lines().map(git_unquote).collect();
        read.sort();
        let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(read, expected);
        assert!(listed.contains("\"caf\\303\\251.txt\""), "{listed}");
        assert!(listed.contains("\\a") && listed.contains("\\v") && listed.contains("\\r"));
    }

    #[test]
    fn escapes_decode_anywhere_and_a_lone_backslash_stays() {
        assert_eq!(c_unescape("a/\\056git/x\\"), "a/.git/x\\");
        assert_eq!(git_unquote("\"unterminated"), "\"unterminated");
    }
}
