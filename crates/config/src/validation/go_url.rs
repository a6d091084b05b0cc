//! Go's `net/url.Parse` as far as `tracing.endpoint` validation needs it: whether a string
//! parses, its scheme, and Go's error text when it does not (`src/net/url/url.go`:
//! `Parse`, `parse`, `getScheme`, `parseAuthority`, `parseHost`, `unescape`, `setPath`,
//! `setFragment`). The module pins `godebug default=go1.25`, so hosts with several colons
//! take the port after the last colon for every scheme (`urlstrictcolons=0`). One detail
//! differs: a bracketed host that is not an IP address is refused as Go refuses it, but
//! the text after `ParseAddr("…"): ` is ours, not `netip`'s.

use kubelet_apimachinery::go_quote;

/// The lower-cased scheme of `raw`, or Go's `*url.Error` text: `parse "<url>": <reason>`.
pub(crate) fn parse_scheme(raw: &str) -> Result<String, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let scheme = parse(u).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if let Some(f) = frag.filter(|f| !f.is_empty()) {
        unescape(f, Mode::Other).map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    Ok(scheme)
}

fn parse(raw: &str) -> Result<String, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    if raw == "*" {
        return Ok(String::new());
    }
    let (scheme, rest) = get_scheme(raw)?;
    let scheme = scheme.to_ascii_lowercase();
    let rest = match rest.strip_suffix('?') {
        Some(r) if rest.matches('?').count() == 1 => r,
        _ => rest.split('?').next().unwrap_or_default(),
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            // A rootless path is opaque.
            return Ok(scheme);
        }
        if rest.split('/').next().unwrap_or_default().contains(':') {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    let mut path = rest;
    if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, p) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        parse_authority(authority)?;
        path = p;
    }
    unescape(path, Mode::Other)?;
    Ok(scheme)
}

/// `getScheme`: `(scheme, rest)`.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<(), String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    parse_host(host)?;
    let Some(userinfo) = userinfo else {
        return Ok(());
    };
    let valid = userinfo
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
    if !valid {
        return Err("net/url: invalid userinfo".to_string());
    }
    match userinfo.split_once(':') {
        Some((user, password)) => {
            unescape(user, Mode::Other)?;
            unescape(password, Mode::Other)?;
        }
        None => {
            unescape(userinfo, Mode::Other)?;
        }
    }
    Ok(())
}

fn parse_host(host: &str) -> Result<(), String> {
    match host.rfind('[') {
        Some(i) if i > 0 => return Err("invalid IP-literal".to_string()),
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return Err("missing ']' in host".to_string());
            };
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(format!("invalid port {} after host", go_quote(colon_port)));
            }
            unescape(colon_port, Mode::Host)?;
            let hostname = &host[1..close];
            let unescaped = match hostname.find("%25") {
                Some(z) => {
                    unescape(&hostname[..z], Mode::Host)?;
                    unescape(&hostname[z..], Mode::Zone)?;
                    // Only the address part decides; Go keeps the zone for ParseAddr.
                    percent_decode(&hostname[..z])
                }
                None => unescape(hostname, Mode::Host)?,
            };
            // netip.ParseAddr: an IPv6 address (or an IPv4-mapped one) is required.
            return match unescaped.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V6(_)) => Ok(()),
                Ok(std::net::IpAddr::V4(_)) => Err("invalid IP-literal".to_string()),
                Err(_) => Err(format!(
                    "invalid host: ParseAddr({}): unable to parse IP",
                    go_quote(&unescaped)
                )),
            };
        }
        None => {}
    }
    if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host).map(|_| ())
}

/// `validOptionalPort`: empty, or `:` followed by digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Host,
    Zone,
    /// Path, fragment and userinfo: only `%` escapes are checked.
    Other,
}

/// `shouldEscape(c, encodeHost)` for ASCII bytes.
fn host_byte_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c)
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn unhex(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// `unescape`: the decoded string, or `EscapeError` / `InvalidHostError` text.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !is_hex(b[i + 1]) || !is_hex(b[i + 2]) {
                    let end = (i + 3).min(b.len());
                    return Err(escape_error(&s[i..end]));
                }
                let seq = &s[i..i + 3];
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && seq != "%25" {
                    return Err(escape_error(seq));
                }
                if mode == Mode::Zone {
                    let v = (unhex(b[i + 1]) << 4) | unhex(b[i + 2]);
                    if seq != "%25" && v != b' ' && (v >= 0x80 || !host_byte_ok(v)) {
                        return Err(escape_error(seq));
                    }
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && !host_byte_ok(c) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&s[i..i + 1])
                    ));
                }
                i += 1;
            }
        }
    }
    Ok(percent_decode(s))
}

fn escape_error(s: &str) -> String {
    format!("invalid URL escape {}", go_quote(s))
}

/// Decodes `%XX` sequences already checked by [`unescape`].
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() && is_hex(b[i + 1]) && is_hex(b[i + 2]) {
            out.push((unhex(b[i + 1]) << 4) | unhex(b[i + 2]));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes checked against Go's `url.Parse` (go1.25/1.26, `godebug default=go1.25`).
    #[test]
    fn parses_as_go() {
        for (raw, scheme) in [
            ("dns://collector:4317", "dns"),
            ("unix:///run/otel.sock", "unix"),
            ("unix-abstract:otel", "unix-abstract"),
            ("HTTP://example.com/x?y#z", "http"),
            ("//example.com", ""),
            ("dns://[::1]:4317", "dns"),
            ("dns://a:1:2", "dns"),
        ] {
            assert_eq!(parse_scheme(raw), Ok(scheme.to_string()), "{raw}");
        }
        for (raw, err) in [
            (
                "dns://a b",
                r#"parse "dns://a b": invalid character " " in host name"#,
            ),
            (
                "dns://host:port",
                r#"parse "dns://host:port": invalid port ":port" after host"#,
            ),
            ("dns://[::1", r#"parse "dns://[::1": missing ']' in host"#),
            (
                "dns://x[::1]",
                r#"parse "dns://x[::1]": invalid IP-literal"#,
            ),
            (
                "dns://[127.0.0.1]",
                r#"parse "dns://[127.0.0.1]": invalid IP-literal"#,
            ),
            ("://x", r#"parse "://x": missing protocol scheme"#),
            (
                "dns://x/%zz",
                r#"parse "dns://x/%zz": invalid URL escape "%zz""#,
            ),
            (
                "dns://x/a%2",
                r#"parse "dns://x/a%2": invalid URL escape "%2""#,
            ),
            (
                "dns://x%41",
                r#"parse "dns://x%41": invalid URL escape "%41""#,
            ),
            (
                "dns://u ser@x",
                r#"parse "dns://u ser@x": net/url: invalid userinfo"#,
            ),
            (
                "dns://x\n",
                "parse \"dns://x\\n\": net/url: invalid control character in URL",
            ),
            (
                "dns://x#%zz",
                r#"parse "dns://x#%zz": invalid URL escape "%zz""#,
            ),
        ] {
            assert_eq!(parse_scheme(raw), Err(err.to_string()), "{raw:?}");
        }
    }
}
