//! Go's `strconv.Quote` (the `%q` verb), so error messages and klog's
//! `key="value"` pairs read as upstream's (`kubelet-klog` uses it too), and
//! Go's `time.quote` for duration errors.

/// Double-quotes `s` with Go escapes: `\"`, `\\`, `\n`, `\t`, ... and `\xNN` /
/// `\uNNNN` for other control characters; printable text is kept as is.
pub fn go_quote(s: &str) -> String {
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

/// Go's `time.quote` (duration parse errors), which differs from
/// [`go_quote`]: double quotes, `"` and `\` escaped, control and
/// non-ASCII bytes written as `\xNN`.
pub(crate) fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s.as_bytes() {
        if !(b' '..0x80).contains(&b) {
            out.push_str(&format!("\\x{b:02x}"));
        } else {
            if b == b'"' || b == b'\\' {
                out.push('\\');
            }
            out.push(char::from(b));
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::{go_quote, time_quote};

    #[test]
    fn matches_go_quote() {
        assert_eq!(go_quote("cpu"), r#""cpu""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("x\ny\t\u{1}"), r#""x\ny\t\x01""#);
        assert_eq!(go_quote("µs"), "\"µs\"");
        assert_eq!(go_quote("\u{85}"), r#""\u0085""#);
        assert_eq!(go_quote("a\"b\\c\nd\te"), r#""a\"b\\c\nd\te""#);
        assert_eq!(
            go_quote("\u{7}\u{8}\u{b}\u{c}\r\u{7f}"),
            r#""\a\b\v\f\r\x7f""#
        );
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }

    #[test]
    fn time_quote_escapes_bytes() {
        assert_eq!(time_quote("1\"x"), r#""1\"x""#);
        assert_eq!(time_quote("µs\n"), r#""\xc2\xb5s\x0a""#);
    }
}
