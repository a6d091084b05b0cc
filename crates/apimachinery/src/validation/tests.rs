//! Cases from upstream validation_test.go / content kube_test.go, dns_test.go.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

#[test]
fn qualified_names() {
    let good = [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        &"a".repeat(63),
        &format!("{}/b", "a".repeat(253)),
    ];
    for name in good {
        assert!(
            is_qualified_name(name).is_empty(),
            "{name}: {:?}",
            is_qualified_name(name)
        );
    }
    let bad = [
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
        &"a".repeat(64),
        &format!("{}/b", "a".repeat(254)),
    ];
    for name in bad {
        assert!(!is_qualified_name(name).is_empty(), "{name}");
    }
}

#[test]
fn qualified_name_messages() {
    let name_regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    assert_eq!(is_qualified_name("-x"), vec![name_regex.to_owned()]);
    assert_eq!(
        is_qualified_name(""),
        vec![
            "name part must be non-empty".to_owned(),
            name_regex.to_owned()
        ]
    );
    assert_eq!(
        is_qualified_name("/a"),
        vec!["prefix part must be non-empty".to_owned()]
    );
    assert_eq!(
        is_qualified_name("A.com/a"),
        vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned()]
    );
    assert_eq!(
        is_qualified_name("a/b/c"),
        vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_owned()]
    );
    assert_eq!(
        is_qualified_name(&"a".repeat(64)),
        vec!["name part must be no more than 63 characters".to_owned()]
    );
}

#[test]
fn label_values() {
    for v in [
        "",
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "end-with-num-1",
        "1234",
        "Uppercase_Is_OK_123",
        &"a".repeat(63),
    ] {
        assert!(is_valid_label_value(v).is_empty(), "{v}");
    }
    for v in [
        "nospecialchars%^=@",
        "Tama-nui-te-rā",
        "cantendwithadash-",
        "-cantstartwithadash",
        "only/one/slash",
        &"a".repeat(64),
    ] {
        assert!(!is_valid_label_value(v).is_empty(), "{v}");
    }
    assert_eq!(
        is_valid_label_value("-a"),
        vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_owned()]
    );
    assert_eq!(
        is_valid_label_value(&"a".repeat(64)),
        vec!["must be no more than 63 characters".to_owned()]
    );
}

#[test]
fn dns1123_labels_and_subdomains() {
    for v in [
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        &"a".repeat(63),
    ] {
        assert!(is_dns1123_label(v).is_empty(), "{v}");
        assert!(is_dns1123_subdomain(v).is_empty(), "{v}");
    }
    for v in [
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a.b",
        "1.",
        ".1",
        "1.2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        &"a".repeat(64),
    ] {
        assert!(!is_dns1123_label(v).is_empty(), "{v}");
    }
    assert_eq!(
        is_dns1123_label("a.b"),
        vec!["must not contain dots".to_owned()]
    );
    assert_eq!(
        is_dns1123_label("A"),
        vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned()]
    );
    for v in [
        "a.a",
        "ab.1",
        "a-1.b-2",
        "0.0",
        "1.2.3",
        &format!("{}.{}", "a".repeat(63), "b".repeat(63)),
    ] {
        assert!(is_dns1123_subdomain(v).is_empty(), "{v}");
    }
    for v in ["", "a..b", "a.", ".a", "A.a", "a_b.c", &"a".repeat(254)] {
        assert!(!is_dns1123_subdomain(v).is_empty(), "{v}");
    }
}

#[test]
fn port_numbers() {
    for p in [1, 2, 1000, 16384, 65535] {
        assert!(is_valid_port_num(p).is_empty());
    }
    for p in [-1, 0, 65536, 100_000] {
        assert_eq!(
            is_valid_port_num(p),
            vec!["must be between 1 and 65535, inclusive".to_owned()]
        );
    }
}

#[test]
fn port_names() {
    for name in [
        "telnet",
        "re-mail-ck",
        "pop3",
        "a",
        "a-1",
        "1-a",
        "a-1-b-2-c",
        "1-a-2-b-3",
    ] {
        assert!(is_valid_port_name(name).is_empty(), "{name}");
    }
    for name in [
        "longerthan15characters",
        "",
        "12345",
        "1-2-3-4",
        "-begin",
        "end-",
        "two--hyphens",
        "whois++",
        "Not_IANA",
    ] {
        assert!(!is_valid_port_name(name).is_empty(), "{name}");
    }
    assert_eq!(
        is_valid_port_name("-1--"),
        vec![
            "must contain at least one letter (a-z)",
            "must not contain consecutive hyphens",
            "must not begin or end with a hyphen",
        ]
    );
    assert_eq!(
        is_valid_port_name(""),
        vec![
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "must contain at least one letter (a-z)",
        ]
    );
}

#[test]
fn relaxed_env_var_names() {
    for name in [
        "A",
        "ABC",
        "AbC_123",
        "abc",
        "a-b",
        "a.b",
        "1abc",
        "MY_VAR.with-dash 1",
        "$x",
    ] {
        assert!(is_relaxed_env_var_name(name).is_empty(), "{name}");
    }
    let msg = "a valid environment variable name must consist only of printable ASCII characters other than '='";
    for name in ["A=B", "tab\t", "caf\u{e9}", "\u{7f}"] {
        assert_eq!(is_relaxed_env_var_name(name), vec![msg], "{name:?}");
    }
    assert_eq!(
        is_relaxed_env_var_name(""),
        vec!["environment variable name must be non-empty"]
    );
}

proptest! {
    #[test]
    fn generated_labels_are_valid(label in "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?") {
        prop_assert!(is_dns1123_label(&label).is_empty());
        let subdomain = format!("{label}.example.com");
        let key = format!("example.com/{label}");
        prop_assert!(is_dns1123_subdomain(&subdomain).is_empty());
        prop_assert!(is_qualified_name(&key).is_empty());
        prop_assert!(is_valid_label_value(&label).is_empty());
    }

    #[test]
    fn label_rules_never_panic(s in "\\PC{0,80}") {
        let _ = (is_qualified_name(&s), is_valid_label_value(&s), is_dns1123_label(&s), is_dns1123_subdomain(&s));
    }
}
