//! Escaping for HTML text and double-quoted attribute values, for every page aci serves or
//! writes: the inspector's and the as-of package index's.

/// Appends `text` escaped for HTML text and double-quoted attribute values.
pub fn push_escaped(out: &mut String, text: &str) {
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        let replacement = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&text[start..index]);
        out.push_str(replacement);
        start = index + 1;
    }
    out.push_str(&text[start..]);
}

/// `text` escaped for HTML text and double-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped(&mut out, text);
    out
}
