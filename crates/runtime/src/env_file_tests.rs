//! Cases of upstream `TestParseEnv` (`pkg/kubelet/util/env/env_util_test.go`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn parse(content: &str, key: &str) -> Result<String, ParseEnvError> {
    parse_env(content.as_bytes(), "/env", key)
}

#[test]
fn values_as_upstream_parses_them() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "ignore leading whitespace",
            "   KEY1='val1'\n\t\tKEY2='val2'\nKEY3='val3'\n",
            "KEY2",
            "val2",
        ),
        (
            "ignore blank and comment lines",
            "# comment\n\nKEY1='foo'\n   # another comment\n\nKEY2='bar'\n",
            "KEY2",
            "bar",
        ),
        (
            "key not found returns empty",
            "KEY1='foo'\nKEY2='bar'\n",
            "KEY3",
            "",
        ),
        (
            "value with embedded #",
            "KEY1='foo#notcomment'\n",
            "KEY1",
            "foo#notcomment",
        ),
        (
            "value with leading and trailing whitespace",
            "KEY1='   foo bar   '\n",
            "KEY1",
            "   foo bar   ",
        ),
        (
            "empty value",
            "KEY1='foo'\nKEY2=''\nKEY3='bar'\n",
            "KEY2",
            "",
        ),
        (
            "multiple = in value",
            "KEY1='foo=bar=baz'\n",
            "KEY1",
            "foo=bar=baz",
        ),
        (
            "comment after key value pair",
            "KEY1='foo'\nKEY2='bar' # comment\n",
            "KEY2",
            "bar",
        ),
        (
            "value contains mixed shell variable syntax, should not expand",
            "KEY1='foo$BAR-${HOME}_$'\nKEY2='bar'",
            "KEY1",
            "foo$BAR-${HOME}_$",
        ),
        (
            "double quotes within value quotes",
            "KEY1='value with \"nested\" quotes'\n",
            "KEY1",
            "value with \"nested\" quotes",
        ),
        (
            "unicode characters in value",
            "KEY1='中文 Español Français 🌍'\n",
            "KEY1",
            "中文 Español Français 🌍",
        ),
        (
            "backslashes in value",
            "KEY1='path\\\\to\\\\file'\n",
            "KEY1",
            "path\\\\to\\\\file",
        ),
        (
            "multi-line value with empty lines",
            "KEY1='line1\n\nline3 after empty line\n\nline5 after another empty'\nKEY2='bar'\n",
            "KEY1",
            "line1\n\nline3 after empty line\n\nline5 after another empty",
        ),
        (
            "multi-line value with trailing spaces",
            "KEY1='line1\nline2 with trailing spaces\nline3   '\nKEY2='bar'\n",
            "KEY1",
            "line1\nline2 with trailing spaces\nline3   ",
        ),
        // `KEY= 'v'`: a shell sets KEY to empty; the later lines are not read.
        (
            "blank after = sets empty",
            "KEY1= 'val1'\nbroken\n",
            "KEY1",
            "",
        ),
        (
            "blank after = skips another key",
            "KEY1= 'val1'\nKEY2='v'\n",
            "KEY2",
            "v",
        ),
        // The first assignment wins (upstream returns at the first match).
        ("first assignment wins", "K='a'\nK='b'\n", "K", "a"),
        // A malformed line after the key is never read.
        ("malformed line after the key", "K='a'\nbroken\n", "K", "a"),
        // `bufio.ScanLines` drops a trailing `\r`.
        ("CRLF line ends", "K='a'\r\nL='b'\r\n", "L", "b"),
    ];
    for (name, content, key, want) in cases {
        let got = parse(content, key).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&got, want, "{name}");
    }
}

#[test]
fn errors_as_upstream_reports_them() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "whitespace around = and not allowed",
            "KEY1 = 'val1'\nKEY2=   'val2'\n",
            "KEY2",
            "invalid environment variable format at line 1: whitespace before '=' is not allowed",
        ),
        (
            "key is empty (should error)",
            "='foo'\nKEY2='bar'\n",
            "KEY2",
            "invalid environment variable format at line 1: empty variable name",
        ),
        (
            "invalid line triggers error with line number",
            "KEY1='foo'\nINVALID_LINE\nKEY2='bar'\n",
            "KEY2",
            "invalid environment variable format at line 2: missing '='",
        ),
        (
            "unquoted value triggers error",
            "KEY1='foo'\nKEY2=bar\n",
            "KEY2",
            "invalid environment variable format at line 2: value must be enclosed in single quotes",
        ),
        (
            "double quoted value triggers error",
            "KEY2=\"bar\"\n",
            "KEY2",
            "value must be enclosed in single quotes",
        ),
        (
            "value with multiple adjacent quoted strings",
            "KEY1='foo''bar'",
            "KEY1",
            "unexpected content after closing quote",
        ),
        (
            "unclosed single quote triggers error",
            "KEY1='foo'\nKEY2='bar\nKEY3='baz'\n",
            "KEY2",
            "invalid environment variable format at line 3: unexpected content after closing quote",
        ),
        (
            "content after closing quote triggers error",
            "KEY2='bar'baz\n",
            "KEY2",
            "unexpected content after closing quote",
        ),
        (
            "single quotes within value quotes",
            "KEY1='value with \\'nested\\' quotes'\n",
            "KEY1",
            "unexpected content after closing quote",
        ),
        (
            "quote never closed",
            "KEY1='foo\nbar\n",
            "KEY1",
            "invalid environment variable format starting at line 1: unclosed single quote",
        ),
    ];
    for (name, content, key, want) in cases {
        let err = parse(content, key).expect_err(name);
        assert!(err.to_string().contains(want), "{name}: {err}");
    }
}

#[test]
fn lines_of_64_kib_fail_as_go_scanner_does() {
    // The longest line bufio.Scanner takes is 64 KiB - 1 bytes.
    let fits = format!("K='{}'\n", "v".repeat(MAX_LINE_LEN - 5));
    assert_eq!(parse(&fits, "K").unwrap().len(), MAX_LINE_LEN - 5);
    let too_long = format!("K='{}'\n", "v".repeat(MAX_LINE_LEN - 4));
    let err = parse(&too_long, "K").unwrap_err();
    assert_eq!(
        err.to_string(),
        "error reading environment variable file \"/env\": bufio.Scanner: token too long"
    );
    // The same without a final newline.
    let err = parse(too_long.trim_end(), "K").unwrap_err();
    assert!(err.to_string().contains("token too long"), "{err}");
    // A long line after the key is never read.
    let after = format!("K='v'\nL='{}'\n", "v".repeat(MAX_LINE_LEN));
    assert_eq!(parse(&after, "K").unwrap(), "v");
    // Inside a quoted value, upstream reports the quote as unclosed.
    let inside = format!("K='v\n{}'\n", "v".repeat(MAX_LINE_LEN));
    let err = parse(&inside, "K").unwrap_err();
    assert!(err.to_string().contains("unclosed single quote"), "{err}");
}

#[test]
fn a_value_that_is_not_utf8_is_refused() {
    let err = parse_env(&b"K='\xff'\n"[..], "/env", "K").unwrap_err();
    assert!(matches!(err, ParseEnvError::NotUtf8(1)), "{err}");
}
