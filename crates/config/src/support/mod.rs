//! The table of support: every `KubeletConfiguration` v1beta1 field and every command-line
//! flag, classified as implemented, refused at start, accepted without effect (with what the
//! upstream kubelet would do), or without effect as on upstream's standalone kubelet.
//!
//! This is kubelet-rs's own (upstream has no equivalent): it is measured against the
//! upstream kubelet's `cmd/kubelet/app/server.go` and `pkg/kubelet` in standalone mode.
//! [`warnings`] turns it into the start-time warnings (`startup.rs`, `--print-config`);
//! [`markdown`] renders `docs/support.md`. The tests enumerate the fields of the config
//! type and the flag table, so a new field or flag fails them until it is classified.

mod doc;
mod fields;
mod flags;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_enumerate;
mod warn;

pub use doc::markdown;
pub use fields::FIELDS;
pub use flags::FLAGS;
pub use warn::warnings;

/// What the upstream kubelet would do with the default value of a field kubelet-rs ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultEffect {
    /// The default does nothing upstream either: warn only when the value is set.
    Inert,
    /// Upstream acts on the default too (e.g. the default `evictionHard`): warn whenever the
    /// value is not empty, set or not.
    Active,
}

/// How kubelet-rs supports one field or flag.
#[derive(Debug, Clone, Copy)]
pub enum Support {
    /// Behaves as upstream's standalone kubelet. `proof` names the tests
    /// (`path/from/workspace/root.rs::test_fn`) showing that changing it changes something
    /// observable.
    /// `note` (may be empty) says how, where upstream's behaviour itself depends on the host.
    Implemented {
        proof: &'static [&'static str],
        note: &'static str,
    },
    /// The start refuses the values `reason` names, with an error naming the field; other
    /// values behave as upstream. `proof` names the tests that show the refusal.
    Refused {
        reason: &'static str,
        proof: &'static [&'static str],
    },
    /// Accepted, validated and shown in `/configz`, but kubelet-rs does nothing with it;
    /// `upstream` says what upstream would do. Warned about at start (see [`DefaultEffect`]).
    NoEffect {
        upstream: &'static str,
        default: DefaultEffect,
    },
    /// Some values behave as upstream (`works`, proven by `proof`); the others have no effect
    /// (`upstream` says what upstream would do with them), and `unsupported` tells, from the
    /// field's JSON value, whether the value in effect uses them (then a warning at start).
    Partial {
        works: &'static str,
        upstream: &'static str,
        proof: &'static [&'static str],
        unsupported: fn(&serde_json::Value) -> bool,
    },
    /// Accepted without effect, exactly as on upstream's standalone kubelet (`why`): no
    /// divergence, so no warning.
    AsUpstream { why: &'static str },
}

impl Support {
    /// The short name used in the documentation table.
    pub fn label(&self) -> &'static str {
        match self {
            Support::Implemented { .. } => "implemented",
            Support::Refused { .. } => "refused at start",
            Support::NoEffect {
                default: DefaultEffect::Inert,
                ..
            } => "no effect (warned when set)",
            Support::NoEffect {
                default: DefaultEffect::Active,
                ..
            } => "no effect (warned, also by default)",
            Support::Partial { .. } => "partly (warned otherwise)",
            Support::AsUpstream { .. } => "no effect, as upstream standalone",
        }
    }

    /// The tests named as proof (empty for the kinds that need none).
    pub fn proof(&self) -> &'static [&'static str] {
        match self {
            Support::Implemented { proof, .. }
            | Support::Refused { proof, .. }
            | Support::Partial { proof, .. } => proof,
            Support::NoEffect { .. } | Support::AsUpstream { .. } => &[],
        }
    }
}

/// One `KubeletConfiguration` field (JSON path, dotted for nested structs), the flag that
/// sets it, if any, and its support.
#[derive(Debug, Clone, Copy)]
pub struct FieldSupport {
    pub field: &'static str,
    pub flag: Option<&'static str>,
    pub support: Support,
}

/// One command-line flag that is not a `KubeletConfiguration` field (`KubeletFlags`, the
/// global flags and cAdvisor's leftovers) and its support.
#[derive(Debug, Clone, Copy)]
pub struct FlagSupport {
    pub flag: &'static str,
    pub support: Support,
}

const fn done(proof: &'static [&'static str]) -> Support {
    Support::Implemented { proof, note: "" }
}

const fn done_with_note(note: &'static str, proof: &'static [&'static str]) -> Support {
    Support::Implemented { proof, note }
}

const fn refused(reason: &'static str, proof: &'static [&'static str]) -> Support {
    Support::Refused { reason, proof }
}

const fn ignored(upstream: &'static str) -> Support {
    Support::NoEffect {
        upstream,
        default: DefaultEffect::Inert,
    }
}

const fn ignored_even_default(upstream: &'static str) -> Support {
    Support::NoEffect {
        upstream,
        default: DefaultEffect::Active,
    }
}

const fn as_upstream(why: &'static str) -> Support {
    Support::AsUpstream { why }
}
