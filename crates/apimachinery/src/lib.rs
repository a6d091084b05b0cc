//! Value types with upstream apimachinery semantics, shared by every kubelet-rs
//! crate: Go durations (`metav1.Duration`), `resource.Quantity`, cpusets,
//! eviction thresholds, reserved resources, and label/taint validation.
//!
//! | Module | Upstream Go source |
//! | --- | --- |
//! | [`duration`] | `src/time/format.go` (`ParseDuration`), `src/time/time.go` (`Duration.String`), `apimachinery/pkg/apis/meta/v1/duration.go` |
//! | [`quantity`] | `apimachinery/pkg/api/resource/{quantity,amount,suffix}.go` |
//! | [`cpuset`] | `k8s.io/utils/cpuset/cpuset.go` |
//! | [`eviction`] | `pkg/kubelet/eviction/{helpers,defaults_linux}.go`, `pkg/kubelet/eviction/api/types.go`, `component-base/cli/flag/langle_separated_map_string_string.go` |
//! | [`reserved`] | `cmd/kubelet/app/server.go` (`parseResourceList`), `pkg/kubelet/cm/container_manager.go` (`ParseQOSReserved`) |
//! | [`validation`] | `apimachinery/pkg/util/validation/validation.go`, `apimachinery/pkg/api/validate/content` |
//! | [`go_quote`] | `src/strconv/quote.go` (`Quote`, the `%q` verb) |
//! | [`net`] | `k8s.io/utils/net` (`ParseIPSloppy`), `k8s.io/component-helpers/node/util/ips.go` (`ParseNodeIPArgument`) |
//! | [`taints`] | `pkg/util/taints/taints.go`, `pkg/util/flag/flags.go` (`RegisterWithTaintsVar`) |
//!
//! Everything public is also re-exported here.

pub mod cpuset;
pub mod duration;
pub mod eviction;
mod goquote;
pub mod goruntime;
pub mod net;
pub mod quantity;
pub mod reserved;
pub mod taints;
pub mod validation;
pub mod version;

pub use cpuset::{CpuSet, CpuSetError};
pub use duration::{Duration, ParseDurationError};
pub use eviction::{
    DEFAULT_EVICTION_HARD, EvictionError, LangleMapError, NODE_ALLOCATABLE_ENFORCEMENT_KEY, Signal,
    Threshold, ThresholdOperator, ThresholdValue, default_eviction_hard, format_langle_map,
    parse_langle_map, parse_threshold_config,
};
pub use goquote::go_quote;
pub use net::{NodeIpError, parse_ip_sloppy, parse_node_ip_argument};
pub use quantity::{Format, Quantity, QuantityError};
pub use reserved::{RESERVABLE_RESOURCES, ReservedError, parse_qos_reserved, parse_resource_list};
pub use taints::{
    Taint, TaintEffect, TaintError, check_taint_validation, format_taints, parse_taint,
    parse_taints, parse_taints_flag,
};
pub use validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_relaxed_env_var_name,
    is_valid_label_value, is_valid_port_name, is_valid_port_num,
};
pub use version::{SemanticVersion, parse_semantic};

/// `[(k, v)]` as an owned string map (the defaults tables and tests use it).
pub(crate) fn string_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
