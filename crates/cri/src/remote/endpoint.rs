//! CRI endpoint parsing, mirroring `k8s.io/cri-client/pkg/util/util_unix.go`
//! (`GetAddressAndDialer`, `parseEndpointWithFallbackProtocol`) and the image endpoint fallback
//! of `pkg/kubelet/kubelet.go` `PreInitRuntimeService`.

use std::path::PathBuf;

use crate::error::CriError;

/// The image service endpoint the kubelet uses: `image_endpoint`, or the runtime endpoint when
/// it is empty (upstream: `imageServiceEndpoint` falls back to `containerRuntimeEndpoint`).
pub fn image_service_endpoint<'a>(runtime_endpoint: &'a str, image_endpoint: &'a str) -> &'a str {
    if image_endpoint.is_empty() {
        runtime_endpoint
    } else {
        image_endpoint
    }
}

/// Parses a CRI endpoint into the unix socket path to dial.
///
/// Accepts `unix:///abs/path` (and `unix:/abs/path`). A bare path with no scheme is accepted as
/// a unix socket path, as upstream does after logging that this form is deprecated. Any other
/// scheme (`tcp://`, `npipe://`, ...) is rejected: upstream only supports unix sockets on Linux.
pub fn parse_endpoint(endpoint: &str) -> Result<PathBuf, CriError> {
    let invalid = |reason: &str| CriError::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    if endpoint.is_empty() {
        return Err(invalid("the endpoint is empty"));
    }
    let path = if let Some(rest) = endpoint.strip_prefix("unix://") {
        rest
    } else if let Some(rest) = endpoint.strip_prefix("unix:") {
        rest
    } else if let Some((scheme, _)) = endpoint.split_once("://") {
        return Err(invalid(&format!(
            "protocol {scheme:?} not supported: only unix socket endpoints are"
        )));
    } else {
        tracing::warn!(
            endpoint,
            "using a bare path as CRI endpoint is deprecated, please consider using full url format (unix://...)"
        );
        endpoint
    };
    if path.is_empty() {
        return Err(invalid("the unix socket path is empty"));
    }
    if path.contains('\0') {
        return Err(invalid("the unix socket path contains a NUL byte"));
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_url_and_bare_path() {
        assert_eq!(
            parse_endpoint("unix:///run/containerd/containerd.sock").ok(),
            Some(PathBuf::from("/run/containerd/containerd.sock"))
        );
        assert_eq!(
            parse_endpoint("unix:/run/x.sock").ok(),
            Some(PathBuf::from("/run/x.sock"))
        );
        assert_eq!(
            parse_endpoint("/run/crio/crio.sock").ok(),
            Some(PathBuf::from("/run/crio/crio.sock"))
        );
    }

    #[test]
    fn rejects_other_schemes_and_empty() {
        let err = parse_endpoint("tcp://127.0.0.1:1234")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "invalid CRI endpoint \"tcp://127.0.0.1:1234\": protocol \"tcp\" not supported: only unix socket endpoints are"
            )
        );
        assert!(parse_endpoint("").is_err());
        assert!(parse_endpoint("unix://").is_err());
    }

    #[test]
    fn image_endpoint_falls_back_to_runtime_endpoint() {
        assert_eq!(image_service_endpoint("unix:///a", ""), "unix:///a");
        assert_eq!(
            image_service_endpoint("unix:///a", "unix:///b"),
            "unix:///b"
        );
    }
}
