//! `AddKubeletConfigFlags`, first part: the server switch, pod sources and sync periods,
//! serving address, authentication/authorization, TLS, rate limits, healthz and image GC.

use super::{FlagDef, Usage, flag};
use crate::flags::Parsed;
use crate::flagvalue::Target;

pub(super) fn server_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "enable-server",
            t!(OptBool, config.enable_server),
            "Enable the Kubelet's server",
        ),
        flag(
            "fail-swap-on",
            t!(OptBool, config.fail_swap_on),
            "Makes the Kubelet fail to start if swap is enabled on the node. ",
        ),
        flag(
            "pod-manifest-path",
            t!(Str, config.static_pod_path),
            "Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored.",
        ),
        flag(
            "sync-frequency",
            t!(Dur, config.sync_frequency),
            "Max period between synchronizing running containers and config",
        ),
        flag(
            "file-check-frequency",
            t!(Dur, config.file_check_frequency),
            "Duration between checking config files for new data",
        ),
        flag(
            "http-check-frequency",
            t!(Dur, config.http_check_frequency),
            "Duration between checking http for new data",
        ),
        flag(
            "manifest-url",
            t!(Str, config.static_pod_url),
            "URL for accessing additional Pod specifications to run",
        ),
        flag(
            "manifest-url-header",
            t!(ColonMultimap, config.static_pod_url_header),
            "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url. Multiple headers with the same name will be added in the same order provided. This flag can be repeatedly invoked. For example: --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'",
        ),
        flag(
            "address",
            t!(Ip, config.address),
            "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)",
        ),
        flag(
            "port",
            t!(Int32, config.port),
            "The port for the Kubelet to serve on.",
        ),
        flag(
            "read-only-port",
            t!(Int32, config.read_only_port),
            "The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable)",
        ),
        flag(
            "container-runtime-endpoint",
            t!(Str, config.container_runtime_endpoint),
            "The endpoint of container runtime service. Unix Domain Sockets are supported on Linux, while npipe and tcp endpoints are supported on Windows. Examples:'unix:///path/to/runtime.sock', 'npipe:////./pipe/runtime'",
        ),
        flag(
            "image-service-endpoint",
            t!(Str, config.image_service_endpoint),
            "The endpoint of container image service. If not specified, it will be the same with --container-runtime-endpoint by default. Unix Domain Socket are supported on Linux, while npipe and tcp endpoints are supported on Windows. Examples:'unix:///path/to/runtime.sock', 'npipe:////./pipe/runtime'",
        ),
        flag(
            "anonymous-auth",
            t!(OptBool, config.authentication.anonymous.enabled),
            "Enables anonymous requests to the Kubelet server. Requests that are not rejected by another authentication method are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.",
        ),
        flag(
            "authentication-token-webhook",
            t!(OptBool, config.authentication.webhook.enabled),
            "Use the TokenReview API to determine authentication for bearer tokens.",
        ),
        flag(
            "authentication-token-webhook-cache-ttl",
            t!(Dur, config.authentication.webhook.cache_ttl),
            "The duration to cache responses from the webhook token authenticator.",
        ),
        flag(
            "client-ca-file",
            t!(Str, config.authentication.x509.client_ca_file),
            "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.",
        ),
        flag(
            "authorization-mode",
            t!(Str, config.authorization.mode),
            "Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization.",
        ),
        flag(
            "authorization-webhook-cache-authorized-ttl",
            t!(Dur, config.authorization.webhook.cache_authorized_ttl),
            "The duration to cache 'authorized' responses from the webhook authorizer.",
        ),
        flag(
            "authorization-webhook-cache-unauthorized-ttl",
            t!(Dur, config.authorization.webhook.cache_unauthorized_ttl),
            "The duration to cache 'unauthorized' responses from the webhook authorizer.",
        ),
        flag(
            "tls-cert-file",
            t!(Str, config.tls_cert_file),
            "File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert). If --tls-cert-file and --tls-private-key-file are not provided, a self-signed certificate and key are generated for the public address and saved to the directory passed to --cert-dir.",
        ),
        flag(
            "tls-private-key-file",
            t!(Str, config.tls_private_key_file),
            "File containing x509 private key matching --tls-cert-file.",
        ),
        flag(
            "rotate-server-certificates",
            t!(Bool, config.server_tls_bootstrap),
            "Auto-request and rotate the kubelet serving certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches. Requires the RotateKubeletServerCertificate feature gate to be enabled, and approval of the submitted CertificateSigningRequest objects.",
        ),
        FlagDef {
            usage: Usage::TlsCipherSuites,
            ..flag(
                "tls-cipher-suites",
                t!(Strings, config.tls_cipher_suites),
                "",
            )
        },
        FlagDef {
            usage: Usage::TlsMinVersion,
            ..flag("tls-min-version", t!(Str, config.tls_min_version), "")
        },
        flag(
            "rotate-certificates",
            t!(Bool, config.rotate_certificates),
            "Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches.",
        ),
        flag(
            "registry-qps",
            t!(OptInt32, config.registry_pull_qps),
            "If > 0, limit registry pull QPS to this value.  If 0, unlimited.",
        ),
        flag(
            "registry-burst",
            t!(Int32, config.registry_burst),
            "Maximum size of a bursty pulls, temporarily allows pulls to burst to this number, while still not exceeding registry-qps. Only used if --registry-qps > 0",
        ),
        flag(
            "event-qps",
            t!(OptInt32, config.event_record_qps),
            "QPS to limit event creations. The number must be >= 0. If 0 will use DefaultQPS: 5.",
        ),
        flag(
            "event-burst",
            t!(Int32, config.event_burst),
            "Maximum size of a bursty event records, temporarily allows event records to burst to this number, while still not exceeding event-qps. The number must be >= 0. If 0 will use DefaultBurst: 10.",
        ),
        flag(
            "enable-debugging-handlers",
            t!(OptBool, config.enable_debugging_handlers),
            "Enables server endpoints for log collection and local running of containers and commands",
        ),
        flag(
            "contention-profiling",
            t!(Bool, config.enable_contention_profiling),
            "Enable block profiling, if profiling is enabled",
        ),
        flag(
            "healthz-port",
            t!(OptInt32, config.healthz_port),
            "The port of the localhost healthz endpoint (set to 0 to disable)",
        ),
        flag(
            "healthz-bind-address",
            t!(Ip, config.healthz_bind_address),
            "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)",
        ),
        flag(
            "oom-score-adj",
            t!(OptInt32, config.oom_score_adj),
            "The oom-score-adj value for kubelet process. Values must be within the range [-1000, 1000]",
        ),
        flag(
            "cluster-domain",
            t!(Str, config.cluster_domain),
            "Domain for this cluster.  If set, kubelet will configure all containers to search this domain in addition to the host's search domains",
        ),
        flag(
            "volume-plugin-dir",
            t!(Str, config.volume_plugin_dir),
            "The full path of the directory in which to search for additional third party volume plugins",
        ),
        flag(
            "cluster-dns",
            t!(Strings, config.cluster_dns),
            "Comma-separated list of DNS server IP address.  This value is used for containers DNS server in case of Pods with \"dnsPolicy=ClusterFirst\". Note: all DNS servers appearing in the list MUST serve the same set of records otherwise name resolution within the cluster may not work correctly. There is no guarantee as to which DNS server may be contacted for name resolution.",
        ),
        flag(
            "streaming-connection-idle-timeout",
            t!(Dur, config.streaming_connection_idle_timeout),
            "Maximum time a streaming connection can be idle before the connection is automatically closed. 0 indicates no timeout. Example: '5m'. Note: All connections to the kubelet server have a maximum duration of 4 hours.",
        ),
        flag(
            "node-status-update-frequency",
            t!(Dur, config.node_status_update_frequency),
            "Specifies how often kubelet posts node status to master. Note: be cautious when changing the constant, it must work with nodeMonitorGracePeriod in nodecontroller.",
        ),
        flag(
            "minimum-image-ttl-duration",
            t!(Dur, config.image_minimum_gc_age),
            "Minimum age for an unused image before it is garbage collected.  Examples: '300ms', '10s' or '2h45m'.",
        ),
        flag(
            "image-gc-high-threshold",
            t!(OptInt32, config.image_gc_high_threshold_percent),
            "The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100], To disable image garbage collection, set to 100. ",
        ),
        flag(
            "image-gc-low-threshold",
            t!(OptInt32, config.image_gc_low_threshold_percent),
            "The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to. Values must be within the range [0, 100] and must be less than that of --image-gc-high-threshold.",
        ),
        flag(
            "volume-stats-agg-period",
            t!(Dur, config.volume_stats_agg_period),
            "Specifies interval for kubelet to calculate and cache the volume disk usage for all pods and volumes.  To disable volume calculations, set to a negative number.",
        ),
        FlagDef {
            usage: Usage::FeatureGates,
            ..flag("feature-gates", t!(MapBool, config.feature_gates), "")
        },
    ]
}
