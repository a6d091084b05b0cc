//! Every flag the 1.35 Linux kubelet registers: `KubeletFlags.AddFlags`,
//! `AddKubeletConfigFlags`, `AddGlobalFlags` and `-h/--help`, with upstream's names, types,
//! usage text and deprecation messages.

use crate::flags::Parsed;
use crate::flagvalue::Target;

/// The message every flag mapped to a `KubeletConfiguration` field is deprecated with.
pub const CONFIG_FLAG_DEPRECATION: &str = "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";
const CADVISOR_DEPRECATION: &str = "This is a cadvisor flag that was mistakenly registered with the Kubelet. Due to legacy concerns, it will follow the standard CLI deprecation timeline before being removed.";
const EVICTION_INSTEAD: &str =
    "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.";

/// Usage text; a few are computed when help is rendered.
#[derive(Clone, Copy)]
pub(crate) enum Usage {
    Static(&'static str),
    FeatureGates,
    NodeLabels,
    TlsCipherSuites,
    TlsMinVersion,
}

#[derive(Clone, Copy)]
pub(crate) struct FlagDef {
    pub name: &'static str,
    pub shorthand: Option<char>,
    pub target: Target,
    pub usage: Usage,
    pub deprecated: Option<&'static str>,
}

macro_rules! t {
    ($variant:ident, $($path:ident).+) => {
        Target::$variant(|p: &mut Parsed| &mut p.$($path).+, |p: &Parsed| &p.$($path).+)
    };
    ($variant:ident, $($path:ident).+; $extra:expr) => {
        Target::$variant(|p: &mut Parsed| &mut p.$($path).+, |p: &Parsed| &p.$($path).+, $extra)
    };
}

pub(crate) const fn flag(name: &'static str, target: Target, usage: &'static str) -> FlagDef {
    FlagDef {
        name,
        shorthand: None,
        target,
        usage: Usage::Static(usage),
        deprecated: None,
    }
}

const fn dep(mut f: FlagDef, msg: &'static str) -> FlagDef {
    f.deprecated = Some(msg);
    f
}

/// `KubeletFlags.AddFlags` (with `ContainerRuntimeOptions.AddFlags`).
fn kubelet_flags() -> Vec<FlagDef> {
    vec![
        dep(
            flag(
                "pod-infra-container-image",
                t!(Str, flags.pod_sandbox_image),
                "Specified image will not be pruned by the image garbage collector. CRI implementations have their own configuration to set this image.",
            ),
            "will be removed in 1.35. Image garbage collector will get sandbox image information from CRI.",
        ),
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
            "If non-empty, will use this string as identification instead of the actual hostname. If --cloud-provider is set, the cloud provider determines the name of the node (consult cloud provider documentation to determine if and how the hostname is used).",
        ),
        flag(
            "node-ip",
            t!(Str, flags.node_ip),
            "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default IPv4 address, if any, or its default IPv6 address if it has no IPv4 addresses. You can pass '::' to make it prefer the default IPv6 address rather than the default IPv4 address.",
        ),
        flag(
            "cert-dir",
            t!(Str, flags.cert_directory),
            "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.",
        ),
        flag(
            "cloud-provider",
            t!(Str, flags.cloud_provider),
            "The provider for cloud services. Set to empty string for running with no cloud provider. Set to 'external' for running with an external cloud provider. If set, the cloud provider determines the name of the node (consult cloud provider documentation to determine if and how the hostname is used).",
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
                "cloud-config",
                t!(Str, flags.cloud_config_file),
                "The path to the cloud provider configuration file. Empty string for no configuration file.",
            ),
            "will be removed in 1.25 or later, in favor of removing cloud provider code from Kubelet.",
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

/// The global flags (`AddGlobalFlags`): cAdvisor's leftovers, `--version`, and `-h/--help`.
fn global_flags() -> Vec<FlagDef> {
    let mut out = vec![
        flag(
            "housekeeping-interval",
            Target::Cadvisor("housekeeping-interval", "duration"),
            "Interval between container housekeepings",
        ),
        flag(
            "version",
            Target::Version,
            "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version",
        ),
        FlagDef {
            shorthand: Some('h'),
            ..flag("help", Target::Help, "help for kubelet")
        },
    ];
    for (name, ty, usage) in CADVISOR_DEPRECATED {
        out.push(dep(
            flag(name, Target::Cadvisor(name, ty), usage),
            CADVISOR_DEPRECATION,
        ));
    }
    out
}

/// Deprecated cAdvisor flags: name, pflag type (`""` = bool), usage.
const CADVISOR_DEPRECATED: &[(&str, &str, &str)] = &[
    (
        "application-metrics-count-limit",
        "int",
        "Max number of application metrics to store (per container)",
    ),
    (
        "boot-id-file",
        "string",
        "Comma-separated list of files to check for boot-id. Use the first one that exists.",
    ),
    (
        "container-hints",
        "string",
        "location of the container hints file",
    ),
    ("containerd", "string", "containerd endpoint"),
    ("containerd-namespace", "string", "containerd namespace"),
    (
        "enable-load-reader",
        "",
        "Whether to enable cpu load reader",
    ),
    (
        "event-storage-age-limit",
        "string",
        "Max length of time for which to store events (per type). Value is a comma separated list of key values, where the keys are event types (e.g.: creation, oom) or \"default\" and the value is a duration. Default is applied to all non-specified event types",
    ),
    (
        "event-storage-event-limit",
        "string",
        "Max number of events to store (per type). Value is a comma separated list of key values, where the keys are event types (e.g.: creation, oom) or \"default\" and the value is an integer. Default is applied to all non-specified event types",
    ),
    (
        "global-housekeeping-interval",
        "duration",
        "Interval between global housekeepings",
    ),
    (
        "log-cadvisor-usage",
        "",
        "Whether to log the usage of the cAdvisor container",
    ),
    (
        "machine-id-file",
        "string",
        "Comma-separated list of files to check for machine-id. Use the first one that exists.",
    ),
    (
        "storage-driver-buffer-duration",
        "duration",
        "Writes in the storage driver will be buffered for this duration, and committed to the non memory backends as a single transaction",
    ),
    ("storage-driver-db", "string", "database name"),
    ("storage-driver-host", "string", "database host:port"),
    ("storage-driver-password", "string", "database password"),
    (
        "storage-driver-secure",
        "",
        "use secure connection with database",
    ),
    ("storage-driver-table", "string", "table name"),
    ("storage-driver-user", "string", "database username"),
];

/// The default shown in help for cAdvisor flags.
pub(crate) fn cadvisor_default(name: &str) -> &'static str {
    match name {
        "housekeeping-interval" => "10s",
        "application-metrics-count-limit" => "100",
        "boot-id-file" => "/proc/sys/kernel/random/boot_id",
        "container-hints" => "/etc/cadvisor/container_hints.json",
        "containerd" => "/run/containerd/containerd.sock",
        "containerd-namespace" => "k8s.io",
        "event-storage-age-limit" | "event-storage-event-limit" => "default=0",
        "global-housekeeping-interval" | "storage-driver-buffer-duration" => "1m0s",
        "machine-id-file" => "/etc/machine-id,/var/lib/dbus/machine-id",
        "storage-driver-db" => "cadvisor",
        "storage-driver-host" => "localhost:8086",
        "storage-driver-password" | "storage-driver-user" => "root",
        "storage-driver-table" => "stats",
        "enable-load-reader" | "log-cadvisor-usage" | "storage-driver-secure" => "false",
        _ => "",
    }
}

/// All flags, in registration order.
pub(crate) fn all_flags() -> Vec<FlagDef> {
    let mut out = kubelet_flags();
    out.extend(
        crate::flag_table_config::config_flags()
            .into_iter()
            .map(|mut f| {
                if !matches!(
                    f.name,
                    "v" | "vmodule" | "log-flush-frequency" | "provider-id"
                ) {
                    f.deprecated = Some(CONFIG_FLAG_DEPRECATION);
                }
                f
            }),
    );
    out.extend(global_flags());
    out
}

pub(crate) use t as target;
