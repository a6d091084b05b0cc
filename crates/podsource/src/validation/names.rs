//! Name and identifier checks from `k8s.io/apimachinery/pkg/util/validation`. Each returns
//! the list of problems (empty when valid) with upstream's wording.

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const LABEL_VALUE_MAX: usize = 63;
const QUALIFIED_NAME_MAX: usize = 63;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const ENV_VAR_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";

fn max_len_msg(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.first().copied().is_some_and(lower_alnum)
        && b.last().copied().is_some_and(lower_alnum)
        && b.iter().all(|&c| lower_alnum(c) || c == b'-')
}

/// RFC 1123 label: container names, volume names, namespaces.
pub fn is_dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_msg(DNS1123_LABEL_MAX));
    }
    if !label_shape(s) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

/// RFC 1123 subdomain: pod names.
pub fn is_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_msg(DNS1123_SUBDOMAIN_MAX));
    }
    if !s.split('.').all(label_shape) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.first().copied().is_some_and(alnum)
        && b.last().copied().is_some_and(alnum)
        && b.iter()
            .all(|&c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

/// Qualified name (`[prefix/]name`): label and annotation keys.
pub fn is_qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name = match s.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        None => s,
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > QUALIFIED_NAME_MAX {
            errs.push(format!("name part {}", max_len_msg(QUALIFIED_NAME_MAX)));
        }
        if !name_part_ok(name) {
            errs.push(QUALIFIED_NAME_MSG.to_string());
        }
    }
    errs
}

/// Label values: empty or a qualified-name part of at most 63 characters.
pub fn is_valid_label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX {
        errs.push(max_len_msg(LABEL_VALUE_MAX));
    }
    if !s.is_empty() && !name_part_ok(s) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

/// IANA service name: container port names.
pub fn is_iana_svc_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len_msg(15));
    }
    let b = s.as_bytes();
    if !b.iter().all(|&c| lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if !b.iter().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if b.first() == Some(&b'-') || b.last() == Some(&b'-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Environment variable names (relaxed rule, upstream default since 1.32).
pub fn is_env_var_name(s: &str) -> Vec<String> {
    if s.bytes().all(|c| (32..=126).contains(&c) && c != b'=') {
        Vec::new()
    } else {
        vec![ENV_VAR_MSG.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(is_dns1123_label("web-1").is_empty());
        assert!(!is_dns1123_label("Web").is_empty());
        assert!(!is_dns1123_label("-a").is_empty());
        assert!(!is_dns1123_label("a.b").is_empty());
        assert!(!is_dns1123_label(&"a".repeat(64)).is_empty());
        assert!(is_dns1123_subdomain("a.b-c.d").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert!(!is_dns1123_subdomain("a_b").is_empty());
        assert!(!is_dns1123_subdomain(&"a".repeat(254)).is_empty());
    }

    #[test]
    fn qualified_names_and_values() {
        assert!(is_qualified_name("app").is_empty());
        assert!(is_qualified_name("example.com/My_Name").is_empty());
        assert!(!is_qualified_name("/x").is_empty());
        assert!(!is_qualified_name("Bad_Prefix/x").is_empty());
        assert!(!is_qualified_name("x/").is_empty());
        assert!(is_valid_label_value("").is_empty());
        assert!(!is_valid_label_value("-x").is_empty());
    }

    #[test]
    fn port_and_env_names() {
        assert!(is_iana_svc_name("http").is_empty());
        assert!(!is_iana_svc_name("80").is_empty());
        assert!(!is_iana_svc_name("a--b").is_empty());
        assert!(!is_iana_svc_name("averyveryverylongname").is_empty());
        assert!(is_env_var_name("MY_VAR.with-dash 1").is_empty());
        assert!(!is_env_var_name("A=B").is_empty());
        assert!(!is_env_var_name("tab\t").is_empty());
    }
}
