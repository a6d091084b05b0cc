//! KubeletConfiguration v1beta1 and KubeletFlags: flags, config file, drop-ins, defaults,
//! precedence and validation.
//!
//! Mirrors `cmd/kubelet/app/options` (flags, `NewKubeletConfiguration`,
//! `ValidateKubeletFlags`), `cmd/kubelet/app/server.go` (`NewKubeletCommand`'s loading
//! sequence, `mergeKubeletConfigurations`, `kubeletConfigFlagPrecedence`),
//! `pkg/kubelet/kubeletconfig/configfiles` (file loading),
//! `pkg/kubelet/apis/config/v1beta1/defaults.go` and
//! `pkg/kubelet/apis/config/validation`. The entry point is [`load`].

mod configfile;
mod decode;
mod decode_error;
pub mod defaults;
mod dropin;
mod flag_table;
mod flagparse;
mod flagparse_extra;
pub mod flags;
mod flagvalue;
pub mod fs;
mod help;
mod load;
pub mod support;
pub mod types;
#[cfg(test)]
mod upstream_pin;
pub mod validation;
pub mod version;
mod versioned;

pub use defaults::{
    apply_legacy_defaults, default_eviction_hard, new_kubelet_configuration, set_defaults,
};
pub use flag_table::CONFIG_FLAG_DEPRECATION;
pub use flagparse::{FlagSet, ParseOutcome, normalize};
pub use flags::{GlobalFlags, KubeletFlags, Parsed, VersionRequest};
pub use fs::{ConfigFs, FakeFs, RealFs};
pub use help::{KUBELET_LABEL_NAMESPACES, KUBELET_LABELS, help_text};
pub use load::{Command, ConfigError, KubeletServer, load, load_unvalidated};
pub use types::KubeletConfiguration;
pub use validation::{
    HostInfo, ValidationErrors, validate_kubelet_configuration, validate_kubelet_flags,
};
