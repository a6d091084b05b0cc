//! `k8s.io/apimachinery/pkg/util/version`: `ParseSemantic`, with upstream's error texts.

use crate::go_quote;

/// A semantic version (`major.minor.patch[-pre][+build]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemanticVersion {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre_release: String,
    pub build_metadata: String,
}

/// Go's `\s` (RE2, ASCII).
fn go_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{c}' | '\r' | ' ')
}

/// `[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*`
fn identifiers(s: &str) -> bool {
    s.split('.')
        .all(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// `ParseSemantic`: `versionMatchRE`, then exactly three numeric components without leading
/// zeros, then `extraMatchRE` for the pre-release and build metadata.
pub fn parse_semantic(s: &str) -> Result<SemanticVersion, String> {
    let could_not_parse = || format!("could not parse {} as version", go_quote(s));
    // ^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)*$ — `.` does not match a newline.
    let rest = s.trim_start_matches(go_space);
    let rest = rest.strip_prefix('v').unwrap_or(rest);
    let mut end = rest.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return Err(could_not_parse());
    }
    while rest[end..].starts_with('.') && rest[end + 1..].starts_with(|c: char| c.is_ascii_digit())
    {
        end += 1 + rest[end + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
    }
    let (numbers, extra) = rest.split_at(end);
    if extra.contains('\n') {
        return Err(could_not_parse());
    }
    let components: Vec<&str> = numbers.split('.').collect();
    if components.len() != 3 {
        return Err(format!("illegal version string {}", go_quote(s)));
    }
    let mut nums = [0u64; 3];
    for (n, comp) in nums.iter_mut().zip(&components) {
        if comp.starts_with('0') && *comp != "0" {
            return Err(zero_prefixed(comp, s));
        }
        *n = comp.parse().map_err(|_| {
            format!(
                "illegal non-numeric version component {} in {}: strconv.ParseUint: parsing {}: value out of range",
                go_quote(comp),
                go_quote(s),
                go_quote(comp)
            )
        })?;
    }
    let (mut pre_release, mut build_metadata) = (String::new(), String::new());
    if !extra.is_empty() {
        // ^(?:-(ids))?(?:\+(ids))?\s*$
        let body = extra.trim_end_matches(go_space);
        let (pre, build) = match body.split_once('+') {
            Some((pre, build)) => (pre, Some(build)),
            None => (body, None),
        };
        let pre = match pre.strip_prefix('-') {
            Some(p) => Some(p),
            None if pre.is_empty() => None,
            None => return Err(bad_extra(extra, s)),
        };
        if pre.is_some_and(|p| !identifiers(p)) || build.is_some_and(|b| !identifiers(b)) {
            return Err(bad_extra(extra, s));
        }
        pre_release = pre.unwrap_or_default().to_string();
        build_metadata = build.unwrap_or_default().to_string();
        for comp in pre_release.split('.') {
            if comp.parse::<u64>().is_ok() && comp.starts_with('0') && comp != "0" {
                return Err(zero_prefixed(comp, s));
            }
        }
    }
    Ok(SemanticVersion {
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        pre_release,
        build_metadata,
    })
}

fn zero_prefixed(comp: &str, s: &str) -> String {
    format!(
        "illegal zero-prefixed version component {} in {}",
        go_quote(comp),
        go_quote(s)
    )
}

fn bad_extra(extra: &str, s: &str) -> String {
    format!(
        "could not parse pre-release/metadata ({extra}) in version {}",
        go_quote(s)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_as_upstream() {
        let v = parse_semantic("v1.35.4-rc.1+kubelet-rs.0.1.0").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 35, 4));
        assert_eq!(v.pre_release, "rc.1");
        assert_eq!(v.build_metadata, "kubelet-rs.0.1.0");
        assert!(parse_semantic(" 1.2.3 ").is_ok());
        for (s, want) in [
            ("vx", r#"could not parse "vx" as version"#),
            ("v1.35", r#"illegal version string "v1.35""#),
            ("v1.35.4.1", r#"illegal version string "v1.35.4.1""#),
            (
                "v1.035.4",
                r#"illegal zero-prefixed version component "035" in "v1.035.4""#,
            ),
            (
                "v1.35.4_x",
                r#"could not parse pre-release/metadata (_x) in version "v1.35.4_x""#,
            ),
            (
                "v1.35.4-",
                r#"could not parse pre-release/metadata (-) in version "v1.35.4-""#,
            ),
            (
                "v1.35.4-01",
                r#"illegal zero-prefixed version component "01" in "v1.35.4-01""#,
            ),
            (
                "v1.35.4.x",
                r#"could not parse pre-release/metadata (.x) in version "v1.35.4.x""#,
            ),
        ] {
            assert_eq!(parse_semantic(s), Err(want.to_string()), "{s}");
        }
    }
}
