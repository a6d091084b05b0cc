//! Image reference handling (upstream `pkg/util/parsers.ParseImageName` and
//! `pkg/kubelet/images/helpers.go` `applyDefaultImageTag`, pull policy defaulting).

/// The parts of an image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageName {
    /// Registry host (`docker.io` when the reference names none).
    pub domain: String,
    /// Repository path within the registry.
    pub path: String,
    /// Tag, if given.
    pub tag: Option<String>,
    /// Digest, if given.
    pub digest: Option<String>,
}

fn valid_path_component(c: &str) -> bool {
    // [a-z0-9]+ separated by '.', '_', '__' or runs of '-'.
    !c.is_empty()
        && c.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
        && c.as_bytes()[0].is_ascii_alphanumeric()
        && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
}

fn valid_tag(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 128
        && (t.as_bytes()[0].is_ascii_alphanumeric() || t.as_bytes()[0] == b'_')
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    !algo.is_empty()
        && algo
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'_' | b'-'))
        && hex.len() >= 32
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parses a reference like `registry:5000/ns/app:1.0@sha256:...`.
pub fn parse_image_name(image: &str) -> Result<ImageName, String> {
    let invalid = |why: &str| Err(format!("couldn't parse image name {image:?}: {why}"));
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return invalid("invalid reference format");
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) if valid_digest(d) => (r, Some(d.to_string())),
        Some(_) => return invalid("invalid digest"),
        None => (image, None),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (
            &rest[..last_slash + i],
            Some(rest[last_slash + i + 1..].to_string()),
        ),
        None => (rest, None),
    };
    if tag.as_deref().is_some_and(|t| !valid_tag(t)) {
        return invalid("invalid tag");
    }
    let (domain, path) = match name.split_once('/') {
        Some((d, p))
            if d.contains('.')
                || d.contains(':')
                || d == "localhost"
                || d.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (d.to_string(), p.to_string())
        }
        _ => ("docker.io".to_string(), name.to_string()),
    };
    if !path.split('/').all(valid_path_component) {
        return invalid("invalid reference format: repository name must be lowercase");
    }
    Ok(ImageName {
        domain,
        path,
        tag,
        digest,
    })
}

/// `applyDefaultImageTag`: appends `:latest` to references without tag or digest.
pub fn apply_default_image_tag(image: &str) -> Result<String, String> {
    let parsed = parse_image_name(image)?;
    if parsed.digest.is_none() && parsed.tag.is_none() {
        return Ok(format!("{image}:latest"));
    }
    Ok(image.to_string())
}

/// Image pull policy (`v1.PullPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPolicy {
    /// Pull on every start.
    Always,
    /// Pull only when absent.
    IfNotPresent,
    /// Never pull.
    Never,
}

/// The container's policy, defaulted like the API server does when unset: `Always` for
/// `:latest` or untagged images, `IfNotPresent` otherwise.
pub fn pull_policy(policy: Option<&str>, image: &str) -> PullPolicy {
    match policy {
        Some("Always") => PullPolicy::Always,
        Some("IfNotPresent") => PullPolicy::IfNotPresent,
        Some("Never") => PullPolicy::Never,
        _ => match parse_image_name(image) {
            Ok(n) if n.digest.is_some() => PullPolicy::IfNotPresent,
            Ok(n) if n.tag.as_deref().is_some_and(|t| t != "latest") => PullPolicy::IfNotPresent,
            _ => PullPolicy::Always,
        },
    }
}

/// `shouldPullImage`.
pub fn should_pull_image(policy: PullPolicy, present: bool) -> bool {
    match policy {
        PullPolicy::Never => false,
        PullPolicy::Always => true,
        PullPolicy::IfNotPresent => !present,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn default_tags() {
        let d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let cases = [
            ("busybox", "busybox:latest".to_string()),
            ("busybox:1.36", "busybox:1.36".to_string()),
            (
                "localhost:5000/app",
                "localhost:5000/app:latest".to_string(),
            ),
            (
                "registry.k8s.io/pause:3.10",
                "registry.k8s.io/pause:3.10".to_string(),
            ),
            (&format!("busybox@{d}"), format!("busybox@{d}")),
        ];
        for (input, want) in cases {
            assert_eq!(apply_default_image_tag(input).unwrap(), want, "{input}");
        }
        for bad in ["", "Busybox", "a b", "busybox:", "x@sha256:zz"] {
            assert!(apply_default_image_tag(bad).is_err(), "{bad}");
        }
        let n = parse_image_name("localhost:5000/ns/app:v1").unwrap();
        assert_eq!(
            (n.domain.as_str(), n.path.as_str(), n.tag.as_deref()),
            ("localhost:5000", "ns/app", Some("v1"))
        );
    }

    #[test]
    fn pull_policies() {
        assert_eq!(pull_policy(None, "busybox"), PullPolicy::Always);
        assert_eq!(pull_policy(None, "busybox:latest"), PullPolicy::Always);
        assert_eq!(pull_policy(None, "busybox:1.36"), PullPolicy::IfNotPresent);
        assert_eq!(pull_policy(Some("Never"), "busybox"), PullPolicy::Never);
        assert!(should_pull_image(PullPolicy::Always, true));
        assert!(!should_pull_image(PullPolicy::IfNotPresent, true));
        assert!(should_pull_image(PullPolicy::IfNotPresent, false));
        assert!(!should_pull_image(PullPolicy::Never, false));
    }
}
