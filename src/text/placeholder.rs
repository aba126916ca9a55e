//! `{name}` placeholders in texts from config and command files (nudge texts, command
//! docstrings), filled in one pass.

/// How a template's braces read, apart from the `{name}` fields that are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Braces {
    /// As Python's `str.format` reads them, which SWE-agent uses for command docstrings: `{{`
    /// and `}}` are one literal brace.
    Escaped,
    /// Every brace is kept as written (nudge texts, whose only fields are aci's variables).
    Literal,
}

/// Replaces each `{name}` of `template` whose name is in `variables`, in one pass (a value that
/// contains `{other}` is not filled again); a field with another name, and any other brace,
/// stays as written (`braces` says how doubled braces read).
#[must_use]
pub fn fill<K: AsRef<str>, V: AsRef<str>>(
    template: &str,
    variables: &[(K, V)],
    braces: Braces,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    loop {
        let next = match braces {
            Braces::Escaped => rest.find(['{', '}']),
            Braces::Literal => rest.find('{'),
        };
        let Some(index) = next else {
            break;
        };
        out.push_str(&rest[..index]);
        let tail = &rest[index..];
        if braces == Braces::Escaped && (tail.starts_with("{{") || tail.starts_with("}}")) {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let field = tail.strip_prefix('{').and_then(|inner| {
            let close = inner.find('}')?;
            let (_, value) = variables
                .iter()
                .find(|(key, _)| key.as_ref() == &inner[..close])?;
            Some((value.as_ref(), close + 2))
        });
        match field {
            Some((value, width)) => {
                out.push_str(value);
                rest = &tail[width..];
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_braces_fill_known_placeholders_once_and_keep_other_braces() {
        let variables = vec![("n", "{m}".to_owned()), ("m", "2".to_owned())];
        assert_eq!(
            [
                fill("a {n} b {unknown} c {m}} {", &variables, Braces::Literal),
                fill("{{n}}", &variables, Braces::Literal),
            ],
            ["a {m} b {unknown} c 2} {", "{{m}}"]
        );
    }

    #[test]
    fn escaped_braces_follow_python_format() {
        let env = [("WINDOW", "100"), ("OVERLAP", "2")];
        assert_eq!(
            [
                fill("down {WINDOW} lines", &env, Braces::Escaped),
                fill("{{WINDOW}} {OVERLAP}", &env, Braces::Escaped),
                fill("{UNKNOWN} {", &env, Braces::Escaped),
            ],
            ["down 100 lines", "{WINDOW} 2", "{UNKNOWN} {"]
        );
    }
}
