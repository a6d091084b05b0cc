//! Go's `strconv.Quote` (the `%q` verb), so error messages read as upstream's.

/// Double-quotes `s` with Go escapes: `\"`, `\\`, `\n`, `\t`, ... and `\xNN` /
/// `\uNNNN` for other control characters; printable text is kept as is.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn matches_go_quote() {
        assert_eq!(quote("cpu"), r#""cpu""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny\t\u{1}"), r#""x\ny\t\x01""#);
        assert_eq!(quote("µs"), "\"µs\"");
        assert_eq!(quote("\u{85}"), r#""\u0085""#);
    }
}
