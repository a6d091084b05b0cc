//! Every flag the v1.35.4 Linux kubelet registers: `KubeletFlags.AddFlags`,
//! `AddKubeletConfigFlags`, `AddGlobalFlags` and `-h/--help`, with upstream's names, types,
//! usage text and deprecation messages.

use crate::flagvalue::Target;

/// The message every flag mapped to a `KubeletConfiguration` field is deprecated with.
pub const CONFIG_FLAG_DEPRECATION: &str = "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";
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
    /// pflag `Hidden`: parsed, but left out of `--help`.
    pub hidden: bool,
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
        hidden: false,
    }
}

const fn dep(mut f: FlagDef, msg: &'static str) -> FlagDef {
    f.deprecated = Some(msg);
    f
}

mod config_logging;
mod config_node;
mod config_resources;
mod config_server;
mod global;
mod kubelet;

pub(crate) use global::cadvisor_default;

/// `AddKubeletConfigFlags` (`cmd/kubelet/app/options/options.go`): one flag per
/// `KubeletConfiguration` field, plus `logsapi.AddFlags` for the `logging` section.
fn config_flags() -> Vec<FlagDef> {
    let mut v = config_server::server_flags();
    v.extend(config_node::node_flags());
    v.extend(config_resources::resource_flags());
    v.extend(config_logging::logging_flags());
    v
}

/// Configuration flags upstream leaves undeprecated: the `notDeprecated` set of
/// `AddKubeletConfigFlags`.
const NOT_DEPRECATED: &[&str] = &[
    "v",
    "vmodule",
    "log-flush-frequency",
    "provider-id",
    "fail-cgroupv1",
];

/// All flags, in registration order.
pub(crate) fn all_flags() -> Vec<FlagDef> {
    let mut out = kubelet::kubelet_flags();
    out.extend(config_flags().into_iter().map(|mut f| {
        if !NOT_DEPRECATED.contains(&f.name) {
            f.deprecated = Some(CONFIG_FLAG_DEPRECATION);
        }
        f
    }));
    out.extend(global::global_flags());
    out
}
