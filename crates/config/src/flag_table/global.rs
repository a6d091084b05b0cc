//! `AddGlobalFlags` (`cmd/kubelet/app/options/globalflags*.go`): cAdvisor's leftover
//! flags, `--version`, and `-h/--help`.

use super::{FlagDef, dep, flag};
use crate::flagvalue::Target;

const CADVISOR_DEPRECATION: &str = "This is a cadvisor flag that was mistakenly registered with the Kubelet. Due to legacy concerns, it will follow the standard CLI deprecation timeline before being removed.";

/// The global flags (`AddGlobalFlags`): cAdvisor's leftovers, `--version`, and `-h/--help`.
pub(super) fn global_flags() -> Vec<FlagDef> {
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
