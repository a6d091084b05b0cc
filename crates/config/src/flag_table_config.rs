//! `AddKubeletConfigFlags` (`cmd/kubelet/app/options/options.go`): one flag per
//! `KubeletConfiguration` field, plus `logsapi.AddFlags` for the `logging` section.

use crate::flag_table::{FlagDef, Usage, flag, target as t};
use crate::flags::Parsed;
use crate::flagvalue::Target;

pub(crate) fn config_flags() -> Vec<FlagDef> {
    let mut v = server_flags();
    v.extend(node_flags());
    v.extend(resource_flags());
    v.extend(logging_flags());
    v
}

fn server_flags() -> Vec<FlagDef> {
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

fn node_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "kubelet-cgroups",
            t!(Str, config.kubelet_cgroups),
            "Optional absolute name of cgroups to create and run the Kubelet in.",
        ),
        flag(
            "system-cgroups",
            t!(Str, config.system_cgroups),
            "Optional absolute name of cgroups in which to place all non-kernel processes that are not already inside a cgroup under '/'. Empty for no container. Rolling back the flag requires a reboot.",
        ),
        flag(
            "provider-id",
            t!(Str, config.provider_id),
            "Unique identifier for identifying the node in a machine database, i.e cloudprovider",
        ),
        flag(
            "cgroups-per-qos",
            t!(OptBool, config.cgroups_per_qos),
            "Enable creation of QoS cgroup hierarchy, if true top level QoS and pod cgroups are created.",
        ),
        flag(
            "cgroup-driver",
            t!(Str, config.cgroup_driver),
            "Driver that the kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd'",
        ),
        flag(
            "cgroup-root",
            t!(Str, config.cgroup_root),
            "Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. Default: '', which means use the container runtime default.",
        ),
        flag(
            "cpu-manager-policy",
            t!(Str, config.cpu_manager_policy),
            "CPU Manager policy to use. Possible values: 'none', 'static'.",
        ),
        flag(
            "cpu-manager-policy-options",
            t!(MapStr, config.cpu_manager_policy_options; true),
            "A set of key=value CPU Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.",
        ),
        flag(
            "cpu-manager-reconcile-period",
            t!(Dur, config.cpu_manager_reconcile_period),
            "<Warning: Alpha feature> CPU Manager reconciliation period. Examples: '10s', or '1m'. If not supplied, defaults to 'NodeStatusUpdateFrequency'",
        ),
        flag(
            "qos-reserved",
            t!(MapStr, config.qos_reserved; false),
            "<Warning: Alpha feature> A set of ResourceName=Percentage (e.g. memory=50%) pairs that describe how pod resource requests are reserved at the QoS level. Currently only memory is supported. Requires the QOSReserved feature gate to be enabled.",
        ),
        flag(
            "topology-manager-policy",
            t!(Str, config.topology_manager_policy),
            "Topology Manager policy to use. Possible values: 'none', 'best-effort', 'restricted', 'single-numa-node'.",
        ),
        flag(
            "runtime-request-timeout",
            t!(Dur, config.runtime_request_timeout),
            "Timeout of all runtime requests except long running request - pull, logs, exec and attach. When timeout exceeded, kubelet will cancel the request, throw out an error and retry later.",
        ),
        flag(
            "hairpin-mode",
            t!(Str, config.hairpin_mode),
            "How should the kubelet setup hairpin NAT. This allows endpoints of a Service to loadbalance back to themselves if they should try to access their own Service. Valid values are \"promiscuous-bridge\", \"hairpin-veth\" and \"none\".",
        ),
        flag(
            "max-pods",
            t!(Int32, config.max_pods),
            "Number of Pods that can run on this Kubelet.",
        ),
        flag(
            "pod-cidr",
            t!(Str, config.pod_cidr),
            "The CIDR to use for pod IP addresses, only used in standalone mode.  In cluster mode, this is obtained from the master. For IPv6, the maximum number of IP's allocated is 65536",
        ),
        flag(
            "pod-max-pids",
            t!(OptInt64, config.pod_pids_limit),
            "Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity.",
        ),
        flag(
            "resolv-conf",
            t!(OptStr, config.resolver_config),
            "Resolver configuration file used as the basis for the container DNS resolution configuration.",
        ),
        flag(
            "cpu-cfs-quota",
            t!(OptBool, config.cpu_cfs_quota),
            "Enable CPU CFS quota enforcement for containers that specify CPU limits",
        ),
        flag(
            "cpu-cfs-quota-period",
            t!(OptDur, config.cpu_cfs_quota_period),
            "Sets CPU CFS quota period value, cpu.cfs_period_us, defaults to Linux Kernel default",
        ),
        flag(
            "enable-controller-attach-detach",
            t!(OptBool, config.enable_controller_attach_detach),
            "Enables the Attach/Detach controller to manage attachment/detachment of volumes scheduled to this node, and disables kubelet from executing any attach/detach operations",
        ),
        flag(
            "make-iptables-util-chains",
            t!(OptBool, config.make_iptables_util_chains),
            "If true, kubelet will ensure iptables utility rules are present on host.",
        ),
        flag(
            "iptables-masquerade-bit",
            t!(OptInt32, config.iptables_masquerade_bit),
            "Has no effect; use kube-proxy parameters to configure the KUBE-MARK-MASQ chain.",
        ),
        flag(
            "iptables-drop-bit",
            t!(OptInt32, config.iptables_drop_bit),
            "Has no effect; kubelet no longer creates a KUBE-MARK-DROP chain",
        ),
        flag(
            "container-log-max-size",
            t!(Str, config.container_log_max_size),
            "<Warning: Beta feature> Set the maximum size (e.g. 10Mi) of container log file before it is rotated.",
        ),
        flag(
            "container-log-max-files",
            t!(OptInt32, config.container_log_max_files),
            "<Warning: Beta feature> Set the maximum number of container log files that can be present for a container. The number must be >= 2.",
        ),
        flag(
            "allowed-unsafe-sysctls",
            t!(Strings, config.allowed_unsafe_sysctls),
            "Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your own risk.",
        ),
        flag(
            "node-status-max-images",
            t!(OptInt32, config.node_status_max_images),
            "The maximum number of images to report in Node.Status.Images. If -1 is specified, no cap will be applied.",
        ),
        flag(
            "kernel-memcg-notification",
            t!(Bool, config.kernel_memcg_notification),
            "If enabled, the kubelet will integrate with the kernel memcg notification to determine if memory eviction thresholds are crossed rather than polling.",
        ),
        flag(
            "local-storage-capacity-isolation",
            t!(OptBool, config.local_storage_capacity_isolation),
            "If true, local ephemeral storage isolation is enabled. Otherwise, local storage isolation feature will be disabled",
        ),
        flag(
            "max-open-files",
            t!(Int64, config.max_open_files),
            "Number of files that can be opened by Kubelet process.",
        ),
        flag(
            "kube-api-content-type",
            t!(Str, config.content_type),
            "Content type of requests sent to apiserver.",
        ),
        flag(
            "kube-api-qps",
            t!(OptInt32, config.kube_api_qps),
            "QPS to use while talking with kubernetes apiserver. The number must be >= 0. If 0 will use DefaultQPS: 50. Doesn't cover events and node heartbeat apis which rate limiting is controlled by a different set of flags",
        ),
        flag(
            "kube-api-burst",
            t!(Int32, config.kube_api_burst),
            "Burst to use while talking with kubernetes apiserver. The number must be >= 0. If 0 will use DefaultBurst: 100. Doesn't cover events and node heartbeat apis which rate limiting is controlled by a different set of flags",
        ),
        flag(
            "serialize-image-pulls",
            t!(OptBool, config.serialize_image_pulls),
            "Pull images one at a time. We recommend *not* changing the default value on nodes that run docker daemon with version < 1.9 or an Aufs storage backend. Issue #10959 has more details.",
        ),
    ]
}

fn resource_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "eviction-hard",
            t!(LangleMap, config.eviction_hard),
            "A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.",
        ),
        flag(
            "eviction-soft",
            t!(LangleMapPlain, config.eviction_soft),
            "A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction.",
        ),
        flag(
            "eviction-soft-grace-period",
            t!(MapStr, config.eviction_soft_grace_period; false),
            "A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction.",
        ),
        flag(
            "eviction-pressure-transition-period",
            t!(Dur, config.eviction_pressure_transition_period),
            "Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition.",
        ),
        flag(
            "eviction-max-pod-grace-period",
            t!(Int32, config.eviction_max_pod_grace_period),
            "Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met.  If negative, defer to pod specified value.",
        ),
        flag(
            "eviction-minimum-reclaim",
            t!(MapStr, config.eviction_minimum_reclaim; false),
            "A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure.",
        ),
        flag(
            "pods-per-core",
            t!(Int32, config.pods_per_core),
            "Number of Pods per core that can run on this Kubelet. The total number of Pods on this Kubelet cannot exceed max-pods, so max-pods will be used if this calculation results in a larger number of Pods allowed on the Kubelet. A value of 0 disables this limit.",
        ),
        flag(
            "protect-kernel-defaults",
            t!(Bool, config.protect_kernel_defaults),
            "Default kubelet behaviour for kernel tuning. If set, kubelet errors if any of kernel tunables is different than kubelet defaults.",
        ),
        flag(
            "reserved-cpus",
            t!(Str, config.reserved_system_cpus),
            "A comma-separated list of CPUs or CPU ranges that are reserved for system and kubernetes usage. This specific list will supersede cpu counts in --system-reserved and --kube-reserved.",
        ),
        flag(
            "topology-manager-scope",
            t!(Str, config.topology_manager_scope),
            "Scope to which topology hints applied. Topology Manager collects hints from Hint Providers and applies them to defined scope to ensure the pod admission. Possible values: 'container', 'pod'.",
        ),
        flag(
            "topology-manager-policy-options",
            t!(MapStr, config.topology_manager_policy_options; true),
            "A set of key=value Topology Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.",
        ),
        flag(
            "system-reserved",
            t!(MapStr, config.system_reserved; false),
            "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. See https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/ for more detail. [default=none]",
        ),
        flag(
            "kube-reserved",
            t!(MapStr, config.kube_reserved; false),
            "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. See https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/ for more detail. [default=none]",
        ),
        flag(
            "enforce-node-allocatable",
            t!(OptStrings, config.enforce_node_allocatable),
            "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. Acceptable options are 'none', 'pods', 'system-reserved', and 'kube-reserved'. If the latter two options are specified, '--system-reserved-cgroup' and '--kube-reserved-cgroup' must also be set, respectively. If 'none' is specified, no additional options should be set. See https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ for more details.",
        ),
        flag(
            "system-reserved-cgroup",
            t!(Str, config.system_reserved_cgroup),
            "Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved'. [default='']",
        ),
        flag(
            "kube-reserved-cgroup",
            t!(Str, config.kube_reserved_cgroup),
            "Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved'. [default='']",
        ),
        flag(
            "memory-manager-policy",
            t!(Str, config.memory_manager_policy),
            "Memory Manager policy to use. Possible values: 'None', 'Static'.",
        ),
        flag(
            "reserved-memory",
            t!(ReservedMemory, config.reserved_memory),
            "A comma separated list of memory reservations for NUMA nodes. (e.g. --reserved-memory 0:memory=1Gi,hugepages-1M=2Gi --reserved-memory 1:memory=2Gi). The total sum for each memory type should be equal to the sum of kube-reserved, system-reserved and eviction-threshold. See https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/#reserved-memory-flag for more details.",
        ),
        flag(
            "register-node",
            t!(OptBool, config.register_node),
            "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with.",
        ),
        flag(
            "register-with-taints",
            t!(Taints, config.register_with_taints),
            "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). No-op if register-node is false.",
        ),
    ]
}

/// `logsapi.AddFlags`.
fn logging_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "logging-format",
            t!(Str, config.logging.format),
            "Sets the log format. Permitted formats: \"json\" (gated by LoggingBetaOptions), \"text\".",
        ),
        flag(
            "log-flush-frequency",
            t!(FlushFreq, config.logging.flush_frequency),
            "Maximum number of seconds between log flushes",
        ),
        FlagDef {
            shorthand: Some('v'),
            ..flag(
                "v",
                t!(Level, config.logging.verbosity),
                "number for the log level verbosity",
            )
        },
        flag(
            "vmodule",
            t!(VModule, config.logging.vmodule),
            "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
        ),
        flag(
            "log-json-split-stream",
            t!(Bool, config.logging.options.json.split_stream),
            "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-json-info-buffer-size",
            t!(Quantity, config.logging.options.json.info_buffer_size),
            "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-text-split-stream",
            t!(Bool, config.logging.options.text.split_stream),
            "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-text-info-buffer-size",
            t!(Quantity, config.logging.options.text.info_buffer_size),
            "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        ),
    ]
}
