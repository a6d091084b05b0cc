//! What each of the kubelet's three clients gets from the `KubeletConfiguration`, as
//! upstream computes it: `cmd/kubelet/app/server.go` (`run`, `kubeClientConfigOverrides`,
//! `setContentTypeForClient`) and client-go `rest/config.go` (`RESTClientFor`: a QPS of
//! 0 means `DefaultQPS` 5, a burst of 0 `DefaultBurst` 10, a negative QPS no limiter) and
//! `rest.DefaultKubernetesUserAgent`.

use std::time::Duration;

use kubelet_apimachinery::goruntime::go_arch;
use kubelet_config::KubeletConfiguration;

use crate::ClientError;

/// client-go `rest.DefaultQPS`.
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go `rest.DefaultBurst`.
pub const DEFAULT_BURST: i32 = 10;

/// `runtime.ContentTypeJSON`.
pub const CONTENT_TYPE_JSON: &str = "application/json";
/// `runtime.ContentTypeProtobuf`, the kubelet's default `contentType`.
pub const CONTENT_TYPE_PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The part of a `rest.Config` that differs between the kubelet's clients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestClientSettings {
    /// `rest.Config.QPS` as the kubelet sets it (0 and negative kept: see [`Self::limiter`]).
    pub qps: f32,
    /// `rest.Config.Burst` as the kubelet sets it.
    pub burst: i32,
    /// `rest.Config.Timeout`; `None` is Go's 0, no timeout.
    pub timeout: Option<Duration>,
}

impl RestClientSettings {
    /// The token bucket `RESTClientFor` builds: `(qps, burst)` after client-go's
    /// defaulting, or `None` when the QPS is negative (no client-side throttling).
    pub fn limiter(&self) -> Option<(f32, u32)> {
        let qps = if self.qps == 0.0 {
            DEFAULT_QPS
        } else {
            self.qps
        };
        let burst = if self.burst == 0 {
            DEFAULT_BURST
        } else {
            self.burst
        };
        // Validation keeps the burst non-negative; a negative one would make every
        // request fail in x/time/rate, so clamp it to one token instead.
        (qps > 0.0).then(|| (qps, u32::try_from(burst).unwrap_or(1).max(1)))
    }
}

/// How the kubelet's `contentType` is honoured. kube-rs (with k8s-openapi) encodes and
/// decodes JSON only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentType {
    /// `application/json` (or empty: the rest client's default): honoured.
    Json,
    /// `application/vnd.kubernetes.protobuf` (the default): upstream sends protobuf with
    /// `Accept: application/vnd.kubernetes.protobuf,application/json`; kubelet-rs sends
    /// and accepts JSON, and warns once when the clients are built.
    ProtobufAsJson,
}

impl ContentType {
    /// `setContentTypeForClient`, as far as kube-rs can follow it. Any other content
    /// type is refused (upstream fails each request that has no serializer for it).
    pub fn from_config(content_type: &str) -> Result<Self, ClientError> {
        match content_type {
            "" | CONTENT_TYPE_JSON => Ok(Self::Json),
            CONTENT_TYPE_PROTOBUF => Ok(Self::ProtobufAsJson),
            other => Err(ClientError::ContentType(other.to_string())),
        }
    }

    /// The start-up warning for a content type that is not honoured, if any.
    pub fn warning(&self) -> Option<String> {
        match self {
            Self::Json => None,
            Self::ProtobufAsJson => Some(format!(
                "contentType {CONTENT_TYPE_PROTOBUF:?}: upstream talks protobuf to the API \
                 server (Accept: {CONTENT_TYPE_PROTOBUF},{CONTENT_TYPE_JSON}); kubelet-rs \
                 sends and accepts {CONTENT_TYPE_JSON} only"
            )),
        }
    }
}

/// The settings of `KubeClient`, `EventClient` and `HeartbeatClient`.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletClientSettings {
    /// `KubeClient`: `QPS=kubeAPIQPS`, `Burst=kubeAPIBurst`, no timeout.
    pub main: RestClientSettings,
    /// `EventClient`: `QPS=eventRecordQPS`, `Burst=eventBurst`, no timeout.
    pub event: RestClientSettings,
    /// `HeartbeatClient`: `QPS=-1` (unthrottled), `Timeout=min(nodeStatusUpdateFrequency,
    /// nodeLeaseDurationSeconds s)`.
    pub heartbeat: RestClientSettings,
    /// `contentType`, shared by all three.
    pub content_type: ContentType,
}

impl KubeletClientSettings {
    /// Derive the three clients' settings from a defaulted, validated configuration.
    pub fn from_config(cfg: &KubeletConfiguration) -> Result<Self, ClientError> {
        // v1beta1 pointers: nil converts to the internal type's 0.
        let main = RestClientSettings {
            qps: cfg.kube_api_qps.unwrap_or(0) as f32,
            burst: cfg.kube_api_burst,
            timeout: None,
        };
        let event = RestClientSettings {
            qps: cfg.event_record_qps.unwrap_or(0) as f32,
            burst: cfg.event_burst,
            timeout: None,
        };
        // heartbeatClientConfig.Timeout = nodeStatusUpdateFrequency, lowered to the lease
        // duration; Go's 0 (or a negative duration) means no timeout.
        let lease =
            kubelet_apimachinery::Duration::from_secs(i64::from(cfg.node_lease_duration_seconds));
        let timeout = cfg.node_status_update_frequency.min(lease);
        let heartbeat = RestClientSettings {
            qps: -1.0,
            burst: main.burst,
            timeout: timeout.as_std().filter(|d| !d.is_zero()),
        };
        Ok(Self {
            main,
            event,
            heartbeat,
            content_type: ContentType::from_config(&cfg.content_type)?,
        })
    }
}

/// `rest.DefaultKubernetesUserAgent()`: `<command>/<version> (<os>/<arch>)
/// kubernetes/<commit>`, with the basename of `argv[0]`, the version cut at its first
/// `-`, and the commit's first 7 characters (`unknown` when empty).
pub fn default_user_agent(argv0: &str, git_version: &str, git_commit: &str) -> String {
    let command = std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or("unknown");
    let version = match git_version.split('-').next() {
        Some(v) if !v.is_empty() => v,
        _ => "unknown",
    };
    let commit = match git_commit {
        "" => "unknown",
        c => c.get(..7).unwrap_or(c),
    };
    format!(
        "{command}/{version} ({}/{}) kubernetes/{commit}",
        go_os(),
        go_arch()
    )
}

fn go_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_apimachinery::Duration as GoDuration;

    fn defaulted() -> KubeletConfiguration {
        kubelet_config::new_kubelet_configuration()
    }

    #[test]
    fn upstream_defaults() {
        let s = KubeletClientSettings::from_config(&defaulted()).unwrap();
        assert_eq!(s.main.limiter(), Some((50.0, 100)));
        assert_eq!(s.main.timeout, None);
        assert_eq!(s.event.limiter(), Some((50.0, 100)));
        assert_eq!(s.event.timeout, None);
        // Unthrottled, 10s = min(nodeStatusUpdateFrequency 10s, lease 40s).
        assert_eq!(s.heartbeat.limiter(), None);
        assert_eq!(s.heartbeat.timeout, Some(Duration::from_secs(10)));
        // The default contentType is protobuf, which kube-rs cannot speak.
        assert_eq!(s.content_type, ContentType::ProtobufAsJson);
        assert!(s.content_type.warning().is_some());
    }

    #[test]
    fn zero_means_client_go_defaults_not_unlimited() {
        // `--event-qps`: "If 0 will use DefaultQPS: 5"; `--event-burst` likewise 10. The
        // v1beta1 doc's "If 0, there is no limit enforced" is not what the code does.
        let mut cfg = defaulted();
        cfg.event_record_qps = Some(0);
        cfg.event_burst = 0;
        cfg.kube_api_qps = Some(0);
        cfg.kube_api_burst = 0;
        let s = KubeletClientSettings::from_config(&cfg).unwrap();
        assert_eq!(s.event.limiter(), Some((5.0, 10)));
        assert_eq!(s.main.limiter(), Some((5.0, 10)));
        // A QPS without a burst, and the other way round.
        cfg.kube_api_qps = Some(7);
        cfg.event_burst = 3;
        let s = KubeletClientSettings::from_config(&cfg).unwrap();
        assert_eq!(s.main.limiter(), Some((7.0, 10)));
        assert_eq!(s.event.limiter(), Some((5.0, 3)));
    }

    #[test]
    fn heartbeat_timeout_is_the_shorter_of_status_frequency_and_lease() {
        let mut cfg = defaulted();
        cfg.node_status_update_frequency = GoDuration::from_secs(60);
        cfg.node_lease_duration_seconds = 15;
        let s = KubeletClientSettings::from_config(&cfg).unwrap();
        assert_eq!(s.heartbeat.timeout, Some(Duration::from_secs(15)));
        cfg.node_status_update_frequency = GoDuration::from_millis(2500);
        let s = KubeletClientSettings::from_config(&cfg).unwrap();
        assert_eq!(s.heartbeat.timeout, Some(Duration::from_millis(2500)));
        // The other clients are untouched by both fields.
        assert_eq!(s.main.timeout, None);
        assert_eq!(s.event.timeout, None);
    }

    #[test]
    fn content_types() {
        assert!(matches!(
            ContentType::from_config(""),
            Ok(ContentType::Json)
        ));
        assert!(matches!(
            ContentType::from_config("application/json"),
            Ok(ContentType::Json)
        ));
        assert_eq!(ContentType::Json.warning(), None);
        let mut cfg = defaulted();
        cfg.content_type = "application/yaml".into();
        assert!(matches!(
            KubeletClientSettings::from_config(&cfg),
            Err(ClientError::ContentType(t)) if t == "application/yaml"
        ));
    }

    #[test]
    fn user_agent_as_client_go() {
        assert_eq!(
            default_user_agent(
                "/usr/bin/kubelet",
                "v1.35.4",
                "d0a7a4d3e1fa4ea0a6e2cd2a9f3f3e4d05b1a0c2"
            ),
            format!(
                "kubelet/v1.35.4 ({}/{}) kubernetes/d0a7a4d",
                go_os(),
                go_arch()
            )
        );
        assert_eq!(
            default_user_agent("kubelet-rs", "v1.35.4-rc.1+x", ""),
            format!(
                "kubelet-rs/v1.35.4 ({}/{}) kubernetes/unknown",
                go_os(),
                go_arch()
            )
        );
    }
}
