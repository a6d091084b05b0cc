//! `preloadedImagesVerificationAllowlist` patterns: `ValidateAllowlistImagesPatterns` and
//! `getAllowlistImagePattern` (`pkg/kubelet/images/pullmanager/image_pull_policies.go`),
//! with the parts of `github.com/distribution/reference` v0.6.0 they call
//! (`ParseNormalizedNamed`, `splitDockerDomain`, `Parse`, the grammar of `regexp.go`) and
//! `github.com/opencontainers/go-digest` v1.0.0 `Digest.Validate`. Messages are upstream's.

use std::sync::LazyLock;

use regex::Regex;

// The grammar of distribution/reference regexp.go. Go's `\w` is ASCII-only.
const ALPHANUMERIC: &str = "[a-z0-9]+";
const SEPARATOR: &str = "(?:[._]|__|[-]+)";
const DOMAIN_NAME_COMPONENT: &str = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const OPTIONAL_PORT: &str = "(?::[0-9]+)?";
const TAG: &str = "[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}";
const DIGEST: &str = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}";
const IPV6_ADDRESS: &str = r"\[(?:[a-fA-F0-9:]+)\]";

fn domain_and_port() -> String {
    let domain_name = format!(r"{DOMAIN_NAME_COMPONENT}(?:\.{DOMAIN_NAME_COMPONENT})*");
    format!("(?:{domain_name}|{IPV6_ADDRESS}){OPTIONAL_PORT}")
}

fn remote_name() -> String {
    let path_component = format!("{ALPHANUMERIC}(?:{SEPARATOR}{ALPHANUMERIC})*");
    format!("{path_component}(?:/{path_component})*")
}

#[allow(clippy::unwrap_used)] // constant patterns, checked by the tests
fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap()
}

/// `ReferenceRegexp`: name, tag, digest.
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    let name = format!("(?:{}/)?{}", domain_and_port(), remote_name());
    compile(&format!("^({name})(?::({TAG}))?(?:@({DIGEST}))?$"))
});
/// `anchoredNameRegexp`: domain, path.
static ANCHORED_NAME: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        "^(?:({})/)?({})$",
        domain_and_port(),
        remote_name()
    ))
});
/// `anchoredIdentifierRegexp`.
static ANCHORED_IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| compile("^([a-f0-9]{64})$"));
/// go-digest `DigestRegexpAnchored`.
static DIGEST_ANCHORED: LazyLock<Regex> =
    LazyLock::new(|| compile("^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"));

/// `RepositoryNameTotalLengthMax`.
const REPOSITORY_NAME_TOTAL_LENGTH_MAX: usize = 255;

/// `ValidateAllowlistImagesPatterns`: the first bad pattern's error.
pub(crate) fn validate_allowlist_images_patterns(patterns: &[String]) -> Result<(), String> {
    patterns
        .iter()
        .try_for_each(|p| allowlist_image_pattern(p).map(|_| ()))
}

/// `getAllowlistImagePattern`: the pattern without its `*`, and whether it is a wildcard.
fn allowlist_image_pattern(pattern: &str) -> Result<(&str, bool), String> {
    if pattern != pattern.trim() {
        return Err(format!(
            "leading/trailing spaces are not allowed: {pattern}"
        ));
    }
    let (trimmed, wildcard) = match pattern.strip_suffix('*') {
        Some(t) if pattern.ends_with("/*") => (t, true),
        _ => (pattern, false),
    };
    if trimmed.is_empty() {
        return Err(format!("the supplied pattern is too short: {pattern}"));
    }
    if trimmed.contains('*') {
        return Err(format!(
            "not a valid wildcard pattern, only patterns ending with '/*' are allowed: {pattern}"
        ));
    }
    if wildcard {
        if trimmed.len() == 1 {
            return Err("at least registry hostname is required".to_string());
        }
    } else {
        let name = parse_normalized_named(trimmed)
            .map_err(|e| format!("failed to parse as an image name: {e}"))?;
        if trimmed != name {
            return Err(format!(
                "neither tag nor digest is accepted in an image reference: {pattern}"
            ));
        }
    }
    Ok((trimmed, wildcard))
}

/// `ParseNormalizedNamed`, returning the reference's `Name()` (domain/path, no tag or digest).
fn parse_normalized_named(s: &str) -> Result<String, String> {
    if ANCHORED_IDENTIFIER.is_match(s) {
        return Err(format!(
            "invalid repository name ({s}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    let (domain, remainder) = split_docker_domain(s);
    let remote = remainder.split(':').next().unwrap_or_default();
    if remote.to_lowercase() != remote {
        return Err(format!(
            "invalid reference format: repository name ({remote}) must be lowercase"
        ));
    }
    parse(&format!("{domain}/{remainder}"))
}

/// `splitDockerDomain`.
fn split_docker_domain(name: &str) -> (String, String) {
    const DEFAULT_DOMAIN: &str = "docker.io";
    const OFFICIAL_REPO_PREFIX: &str = "library/";
    let Some((maybe_domain, maybe_remote)) = name.split_once('/') else {
        return (
            DEFAULT_DOMAIN.to_string(),
            format!("{OFFICIAL_REPO_PREFIX}{name}"),
        );
    };
    let (domain, remote) = if maybe_domain == "localhost" {
        (maybe_domain, maybe_remote)
    } else if maybe_domain == "index.docker.io" {
        (DEFAULT_DOMAIN, maybe_remote)
    } else if maybe_domain.contains(['.', ':']) || maybe_domain.to_lowercase() != maybe_domain {
        (maybe_domain, maybe_remote)
    } else {
        (DEFAULT_DOMAIN, name)
    };
    if domain == DEFAULT_DOMAIN && !remote.contains('/') {
        return (
            domain.to_string(),
            format!("{OFFICIAL_REPO_PREFIX}{remote}"),
        );
    }
    (domain.to_string(), remote.to_string())
}

/// `reference.Parse`, returning `Name()`.
fn parse(s: &str) -> Result<String, String> {
    let Some(caps) = REFERENCE.captures(s) else {
        if s.is_empty() {
            return Err("repository name must have at least one component".to_string());
        }
        if REFERENCE.is_match(&s.to_lowercase()) {
            return Err("repository name must be lowercase".to_string());
        }
        return Err("invalid reference format".to_string());
    };
    let name = caps.get(1).map_or("", |m| m.as_str());
    let (domain, path) = match ANCHORED_NAME.captures(name) {
        Some(n) => (
            n.get(1).map_or("", |m| m.as_str()),
            n.get(2).map_or("", |m| m.as_str()),
        ),
        None => ("", name),
    };
    if path.len() > REPOSITORY_NAME_TOTAL_LENGTH_MAX {
        return Err(format!(
            "repository name must not be more than {REPOSITORY_NAME_TOTAL_LENGTH_MAX} characters"
        ));
    }
    if let Some(digest) = caps.get(3) {
        validate_digest(digest.as_str())?;
    }
    Ok(if domain.is_empty() {
        path.to_string()
    } else {
        format!("{domain}/{path}")
    })
}

/// go-digest `Digest.Validate` (sha256, sha384 and sha512 are available in the kubelet).
fn validate_digest(s: &str) -> Result<(), String> {
    const INVALID_FORMAT: &str = "invalid checksum digest format";
    let Some((algorithm, encoded)) = s
        .split_once(':')
        .filter(|(a, e)| !a.is_empty() && !e.is_empty())
    else {
        return Err(INVALID_FORMAT.to_string());
    };
    let size = match algorithm {
        "sha256" => 32,
        "sha384" => 48,
        "sha512" => 64,
        _ if !DIGEST_ANCHORED.is_match(s) => return Err(INVALID_FORMAT.to_string()),
        _ => return Err("unsupported digest algorithm".to_string()),
    };
    if encoded.len() != size * 2 {
        return Err("invalid checksum digest length".to_string());
    }
    if !encoded
        .bytes()
        .all(|b| matches!(b, b'a'..=b'f' | b'0'..=b'9'))
    {
        return Err(INVALID_FORMAT.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str) -> Result<(), String> {
        validate_allowlist_images_patterns(&[pattern.to_string()])
    }

    /// Cases from upstream's `image_pull_policies_test.go` and distribution/reference's
    /// `normalize_test.go`, with upstream's messages.
    #[test]
    fn patterns_as_upstream() {
        for ok in [
            "docker.io/library/busybox",
            "registry.k8s.io/pause",
            "example.com:5000/team/app",
            "localhost/app",
            "[::1]:5000/app",
            "registry.k8s.io/*",
            "example.com/team/*",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        let cases = [
            (
                " registry.k8s.io/pause",
                "leading/trailing spaces are not allowed:  registry.k8s.io/pause",
            ),
            ("", "the supplied pattern is too short: "),
            (
                "registry.k8s.io/pa*se",
                "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.k8s.io/pa*se",
            ),
            (
                "*",
                "not a valid wildcard pattern, only patterns ending with '/*' are allowed: *",
            ),
            ("/*", "at least registry hostname is required"),
            // Familiar names are normalized, so they never equal their Name().
            (
                "busybox",
                "neither tag nor digest is accepted in an image reference: busybox",
            ),
            (
                "registry.k8s.io/pause:3.10",
                "neither tag nor digest is accepted in an image reference: registry.k8s.io/pause:3.10",
            ),
            (
                "registry.k8s.io/Pause",
                "failed to parse as an image name: invalid reference format: repository name (Pause) must be lowercase",
            ),
            (
                "registry.k8s.io/pause:!",
                "failed to parse as an image name: invalid reference format",
            ),
            (
                "docker.io/library/a@sha256:abc",
                "failed to parse as an image name: invalid reference format",
            ),
            (
                "docker.io/library/a@sha256:0123456789abcdef0123456789abcdef01",
                "failed to parse as an image name: invalid checksum digest length",
            ),
            (
                "docker.io/library/a@md5:0123456789abcdef0123456789abcdef",
                "failed to parse as an image name: unsupported digest algorithm",
            ),
            (
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "failed to parse as an image name: invalid repository name (0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef), cannot specify 64-byte hexadecimal strings",
            ),
        ];
        for (pattern, want) in cases {
            assert_eq!(check(pattern), Err(want.to_string()), "{pattern:?}");
        }
        let long = format!("example.com/{}", "a".repeat(256));
        assert_eq!(
            check(&long),
            Err("failed to parse as an image name: repository name must not be more than 255 characters".to_string())
        );
    }
}
