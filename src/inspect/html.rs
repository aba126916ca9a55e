//! HTML building blocks: escaping for each context a string can land in (text, attribute
//! values, JSON inside `<script>`, URLs), page-path encoding, and the page shell with its
//! Content-Security-Policy.
//!
//! Everything a trajectory holds is model output, so no string from it reaches the page
//! unescaped: text and attribute values go through [`escape`], JSON in a script element
//! through [`json_in_script`], and a URL becomes a link only when [`safe_href`] accepts it. The
//! policy allows exactly this module's own script and style (by their SHA-256) and loads
//! nothing from anywhere, so even a missed escape could not run a script.

use std::fmt::Write as _;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The page script: sorting and filtering, `j`/`k`/`n`/`p`, live reload.
pub const SCRIPT: &str = include_str!("assets/app.js");
/// The page style.
pub const STYLE: &str = include_str!("assets/app.css");

pub use crate::text::html::{escape, push_escaped};

/// `value` as JSON that is safe inside a `<script>` element: `<`, `>` and `&` are written as
/// `\u003c`, `\u003e` and `\u0026`, so no `</script>` or `<!--` can end or change the element,
/// and U+2028/U+2029 are escaped as well.
pub fn json_in_script(value: &serde_json::Value) -> String {
    let json = value.to_string();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `url` when it is safe as a link target: `http:` or `https:` with a host. Anything else
/// (`javascript:`, `data:`, `vbscript:`, and their spellings with blanks or control characters
/// inside, which browsers strip) is `None`, and the caller shows it as text.
pub fn safe_href(url: &str) -> Option<&str> {
    // Browsers drop ASCII tabs and newlines anywhere in a URL and trim control characters and
    // spaces at its ends: judge the URL the way the browser will read it.
    let seen: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .trim_matches(|c: char| c <= ' ')
        .to_ascii_lowercase();
    let rest = seen
        .strip_prefix("https://")
        .or_else(|| seen.strip_prefix("http://"))?;
    let host_ok = rest
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '[');
    (host_ok && !url.chars().any(char::is_control)).then_some(url)
}

/// Appends `text` escaped, with every `http://` and `https://` URL in it made a link (opened
/// without a referrer). Other schemes stay text.
pub fn push_linkified(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(found) = find_url(rest) {
        let (before, after) = rest.split_at(found);
        push_escaped(out, before);
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`'))
            .unwrap_or(after.len());
        // A URL at the end of a sentence keeps its full stop or bracket outside the link.
        let url = after[..end].trim_end_matches(['.', ',', ';', ':', ')', ']', '!', '?']);
        match safe_href(url) {
            Some(href) => {
                out.push_str("<a rel=\"noopener noreferrer nofollow\" href=\"");
                push_escaped(out, href);
                out.push_str("\">");
                push_escaped(out, url);
                out.push_str("</a>");
            }
            None => push_escaped(out, url),
        }
        rest = &after[url.len().max(1).min(after.len())..];
    }
    push_escaped(out, rest);
}

fn find_url(text: &str) -> Option<usize> {
    let http = text.find("http://");
    let https = text.find("https://");
    match (http, https) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An id or a configuration name as one path segment of the site, readable and the same on
/// every file system: ASCII letters, digits, `_`, `-` and `.` stay (but a leading `.`), every
/// other byte is `~` and two hex digits. The result needs no further escaping in a URL.
pub fn encode_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (index, byte) in name.bytes().enumerate() {
        let plain = byte.is_ascii_alphanumeric()
            || byte == b'_'
            || byte == b'-'
            || (byte == b'.' && index > 0);
        if plain {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "~{byte:02X}");
        }
    }
    if out.is_empty() {
        out.push('~');
    }
    out
}

/// The name [`encode_segment`] encoded, or `None` for a segment it cannot have written.
pub fn decode_segment(segment: &str) -> Option<String> {
    if segment == "~" {
        return Some(String::new());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'~' {
            let hex = segment.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    let name = String::from_utf8(out).ok()?;
    (encode_segment(&name) == segment).then_some(name)
}

fn sha256_source(text: &str) -> String {
    format!(
        "'sha256-{}'",
        data_encoding::BASE64.encode(&Sha256::digest(text.as_bytes()))
    )
}

/// The Content-Security-Policy of every page: no source but the page's own script and style
/// (named by their hashes, so it holds for a static file as well as for the server), no
/// plugin, no base URL, no form, and requests only back to the server (live updates).
pub fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        format!(
            "default-src 'none'; script-src {}; style-src {}; img-src data:; connect-src 'self'; \
             base-uri 'none'; form-action 'none'",
            sha256_source(SCRIPT),
            sha256_source(STYLE)
        )
    })
}

/// What the page shell needs besides the body.
#[derive(Debug, Clone, Default)]
pub struct Shell<'a> {
    /// The `<title>`.
    pub title: &'a str,
    /// The page's kind for the script and the style (`run`, `instance`, `ablation`, `compare`).
    pub kind: &'a str,
    /// The breadcrumb: labels, and the relative link of each but the last.
    pub crumbs: Vec<(String, Option<String>)>,
    /// Where the server answers this page's version (live pages only).
    pub live: Option<String>,
    /// The version the page was rendered from.
    pub version: String,
}

/// A whole HTML page around `body`.
pub fn page(shell: &Shell<'_>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + SCRIPT.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"");
    push_escaped(&mut out, content_security_policy());
    out.push_str("\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n<title>");
    push_escaped(&mut out, shell.title);
    out.push_str("</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body class=\"");
    push_escaped(&mut out, shell.kind);
    out.push_str("\">\n<nav class=\"crumbs\"><span class=\"brand\">aci inspect</span>");
    for (label, href) in &shell.crumbs {
        out.push_str(" <span class=\"sep\">/</span> ");
        match href {
            Some(href) => {
                out.push_str("<a href=\"");
                push_escaped(&mut out, href);
                out.push_str("\">");
                push_escaped(&mut out, label);
                out.push_str("</a>");
            }
            None => {
                out.push_str("<span>");
                push_escaped(&mut out, label);
                out.push_str("</span>");
            }
        }
    }
    if shell.live.is_some() {
        out.push_str(" <span class=\"live\" title=\"reloads when the files change\">live</span>");
    }
    out.push_str("</nav>\n<main>\n");
    out.push_str(body);
    out.push_str("\n</main>\n<script type=\"application/json\" id=\"page-data\">");
    let data = serde_json::json!({
        "kind": shell.kind,
        "live": shell.live,
        "version": shell.version,
    });
    out.push_str(&json_in_script(&data));
    out.push_str("</script>\n<script>");
    out.push_str(SCRIPT);
    out.push_str("</script>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_escape_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("</textarea>é"), "&lt;/textarea&gt;é");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn json_in_a_script_cannot_close_the_element() {
        let value =
            serde_json::json!({"id": "</script><script>alert(1)</script>", "c": "<!-- & \u{2028}"});
        let json = json_in_script(&value);
        assert!(
            !json.contains('<') && !json.contains('>') && !json.contains('&'),
            "{json}"
        );
        assert!(!json.contains('\u{2028}'));
        // And it is still the same JSON.
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json).unwrap(),
            value
        );
    }

    #[test]
    fn only_http_and_https_urls_become_links() {
        assert_eq!(
            safe_href("https://example.com/a?b=1"),
            Some("https://example.com/a?b=1")
        );
        assert_eq!(
            safe_href("http://localhost:8000/"),
            Some("http://localhost:8000/")
        );
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "java\nscript:alert(1)",
            "\u{1}javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "https://",
            "http:///x",
            "//evil.example/",
            "/relative",
        ] {
            assert_eq!(safe_href(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn linkify_links_web_urls_and_leaves_other_schemes_as_text() {
        let mut out = String::new();
        push_linkified(
            &mut out,
            "see https://github.com/o/r/issues/1. or javascript:alert(1) <b>",
        );
        assert_eq!(
            out,
            "see <a rel=\"noopener noreferrer nofollow\" href=\"https://github.com/o/r/issues/1\">\
             https://github.com/o/r/issues/1</a>. or javascript:alert(1) &lt;b&gt;"
        );
        let mut out = String::new();
        push_linkified(&mut out, "http://\"onmouseover=alert(1) https://");
        assert!(!out.contains("<a"), "{out}");
        assert!(out.contains("&quot;onmouseover"), "{out}");
    }

    #[test]
    fn segments_round_trip_and_need_no_url_escaping() {
        for name in [
            "django__django-11099",
            "a/b",
            "../etc",
            ".hidden",
            "<script>",
            "x y~z",
            "é",
            "",
        ] {
            let segment = encode_segment(name);
            assert!(
                segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.~".contains(&b)),
                "{segment}"
            );
            assert!(!segment.starts_with('.'), "{segment}");
            assert_eq!(decode_segment(&segment).as_deref(), Some(name), "{segment}");
        }
        assert_eq!(
            encode_segment("django__django-11099"),
            "django__django-11099"
        );
        assert_eq!(encode_segment("../x"), "~2E.~2Fx");
        assert_eq!(decode_segment(".."), None);
        assert_eq!(decode_segment("a~2"), None);
        assert_eq!(decode_segment("~61"), None, "not how `a` is encoded");
    }

    #[test]
    fn the_policy_names_the_hashes_of_the_script_and_the_style() {
        let policy = content_security_policy();
        assert!(
            policy.starts_with("default-src 'none'; script-src 'sha256-"),
            "{policy}"
        );
        assert!(!policy.contains("unsafe"), "{policy}");
        assert_eq!(policy.matches("'sha256-").count(), 2);
    }

    #[test]
    fn the_page_shell_escapes_its_title_and_crumbs_and_carries_the_policy() {
        let shell = Shell {
            title: "</title><script>x</script>",
            kind: "run",
            crumbs: vec![
                ("run <1>".to_owned(), Some("../index.html".to_owned())),
                ("id\"x".to_owned(), None),
            ],
            live: Some("/_version/index.html".to_owned()),
            version: "v1".to_owned(),
        };
        let html = page(&shell, "<p>body</p>");
        assert!(html.contains("<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>"));
        assert!(html.contains("<a href=\"../index.html\">run &lt;1&gt;</a>"));
        assert!(html.contains("<span>id&quot;x</span>"));
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the page's own script"
        );
        assert!(html.contains(&escape(content_security_policy())));
        assert!(html.contains("\"live\":\"/_version/index.html\""));
    }
}
