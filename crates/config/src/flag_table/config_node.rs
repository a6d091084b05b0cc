//! `AddKubeletConfigFlags`, second part: cgroups, the CPU/memory/topology managers,
//! runtime requests, per-pod limits, iptables, container logs and the API client.

use super::{FlagDef, flag};
use crate::flags::Parsed;
use crate::flagvalue::Target;

pub(super) fn node_flags() -> Vec<FlagDef> {
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
            "fail-cgroupv1",
            t!(OptBool, config.fail_cgroup_v1),
            "Prevent the kubelet from starting on the host using cgroup v1.",
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
            "runonce",
            t!(Bool, config.run_once),
            "If true, exit after spawning pods from static pod files or remote urls. Exclusive with --enable-server",
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
