//! `KubeletFlags.AddFlags` (`cmd/kubelet/app/options/options.go`, with
//! `ContainerRuntimeOptions.AddFlags`): the host-specific flags that are not
//! `KubeletConfiguration` fields.

use super::{EVICTION_INSTEAD, FlagDef, Usage, dep, flag};
use crate::flags::Parsed;
use crate::flagvalue::Target;

/// `KubeletFlags.AddFlags` (with `ContainerRuntimeOptions.AddFlags`).
pub(super) fn kubelet_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "image-credential-provider-config",
            t!(Str, flags.image_credential_provider_config_path),
            "Path to a credential provider plugin config file (JSON/YAML/YML) or a directory of such files (merged in lexicographical order; non-recursive search).",
        ),
        flag(
            "image-credential-provider-bin-dir",
            t!(Str, flags.image_credential_provider_bin_dir),
            "The path to the directory where credential provider plugin binaries are located.",
        ),
        flag(
            "config",
            t!(Str, flags.kubelet_config_file),
            "The Kubelet will load its initial configuration from this file. The path may be absolute or relative; relative paths start at the Kubelet's current working directory. Omit this flag to use the built-in default configuration values. Command-line flags override configuration from this file.",
        ),
        flag(
            "config-dir",
            t!(Str, flags.kubelet_dropin_config_directory),
            "Path to a directory to specify drop-ins, allows the user to optionally specify additional configs to overwrite what is provided by default and in the KubeletConfigFile flag. [default='']",
        ),
        flag(
            "kubeconfig",
            t!(Str, flags.kubeconfig),
            "Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode.",
        ),
        flag(
            "bootstrap-kubeconfig",
            t!(Str, flags.bootstrap_kubeconfig),
            "Path to a kubeconfig file that will be used to get client certificate for kubelet. If the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to request a client certificate from the API server. On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir.",
        ),
        flag(
            "hostname-override",
            t!(Str, flags.hostname_override),
            "If non-empty, will use this string as identification instead of the actual hostname.",
        ),
        flag(
            "node-ip",
            t!(Str, flags.node_ip),
            "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default IPv4 address, if any, or its default IPv6 address if it has no IPv4 addresses. You can pass '::' to make it prefer the default IPv6 address rather than the default IPv4 address. If cloud-provider is set to external, this flag will help to bootstrap the node with the corresponding IP.",
        ),
        flag(
            "cert-dir",
            t!(Str, flags.cert_directory),
            "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.",
        ),
        flag(
            "cloud-provider",
            t!(Str, flags.cloud_provider),
            "The provider for cloud services. Set to empty string for running with no cloud provider. Set to 'external' for running with an external cloud provider.",
        ),
        flag(
            "root-dir",
            t!(Str, flags.root_directory),
            "Directory path for managing kubelet files (volume mounts,etc).",
        ),
        flag(
            "seccomp-default",
            t!(Bool, flags.seccomp_default),
            "Enable the use of `RuntimeDefault` as the default seccomp profile for all workloads.",
        ),
        FlagDef {
            usage: Usage::NodeLabels,
            ..flag("node-labels", t!(ConfMap, flags.node_labels), "")
        },
        flag(
            "lock-file",
            t!(Str, flags.lock_file_path),
            "<Warning: Alpha feature> The path to file for kubelet to use as a lock file.",
        ),
        flag(
            "runtime-cgroups",
            t!(Str, flags.runtime_cgroups),
            "Optional absolute name of cgroups to create and run the runtime in.",
        ),
        flag(
            "exit-on-lock-contention",
            t!(Bool, flags.exit_on_lock_contention),
            "Whether kubelet should exit upon lock-file contention.",
        ),
        dep(
            flag(
                "minimum-container-ttl-duration",
                t!(Dur, flags.minimum_gc_age),
                "Minimum age for a finished container before it is garbage collected.  Examples: '300ms', '10s' or '2h45m'",
            ),
            EVICTION_INSTEAD,
        ),
        dep(
            flag(
                "maximum-dead-containers-per-container",
                t!(Int32, flags.max_per_pod_container_count),
                "Maximum number of old instances to retain per container.  Each container takes up some disk space.",
            ),
            EVICTION_INSTEAD,
        ),
        dep(
            flag(
                "maximum-dead-containers",
                t!(Int32, flags.max_container_count),
                "Maximum number of old instances of containers to retain globally.  Each container takes up some disk space. To disable, set to a negative number.",
            ),
            EVICTION_INSTEAD,
        ),
        dep(
            flag(
                "experimental-mounter-path",
                t!(Str, flags.experimental_mounter_path),
                "[Experimental] Path of mounter binary. Leave empty to use the default mount.",
            ),
            "will be removed in 1.25 or later. in favor of using CSI.",
        ),
        dep(
            flag(
                "experimental-allocatable-ignore-eviction",
                t!(
                    Bool,
                    flags.experimental_node_allocatable_ignore_eviction_threshold
                ),
                "When set to 'true', Hard Eviction Thresholds will be ignored while calculating Node Allocatable. See https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ for more details. [default=false]",
            ),
            "will be removed in 1.25 or later.",
        ),
    ]
}
