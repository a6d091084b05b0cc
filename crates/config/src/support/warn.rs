//! The start-time warnings: one per field or flag kubelet-rs accepts without the effect the
//! upstream kubelet would give it, when the operator set it, or when upstream would act on
//! its default too.

use serde_json::Value;

use super::{DefaultEffect, FIELDS, FLAGS, Support};
use crate::flag_table::all_flags;
use crate::flags::{GlobalFlags, KubeletFlags, Parsed};
use crate::flagvalue::{Target, render};
use crate::{KubeletConfiguration, KubeletServer, apply_legacy_defaults, set_defaults};

/// The warnings a start logs (at V(0)) and `--print-config` prints, in table order: fields
/// first, then flags.
pub fn warnings(s: &KubeletServer) -> Vec<String> {
    let current = serde_json::to_value(&s.config).unwrap_or(Value::Null);
    let default = serde_json::to_value(default_config(s)).unwrap_or(Value::Null);
    let mut out = Vec::new();
    for entry in FIELDS {
        let value = lookup(&current, entry.field);
        let name = match entry.flag {
            Some(flag) => format!("{} (--{flag})", entry.field),
            None => entry.field.to_string(),
        };
        let shown = serde_json::to_string(value).unwrap_or_default();
        let set = value != lookup(&default, entry.field);
        match entry.support {
            Support::NoEffect { upstream, default } => {
                if set {
                    out.push(format!(
                        "{name} is set to {shown} but has no effect in kubelet-rs; the upstream kubelet {upstream}"
                    ));
                } else if default == DefaultEffect::Active && !is_empty(value) {
                    out.push(format!(
                        "{name} has no effect in kubelet-rs, also at its default {shown}; the upstream kubelet {upstream}"
                    ));
                }
            }
            Support::Partial {
                works,
                upstream,
                unsupported,
                ..
            } if unsupported(value) => {
                out.push(format!(
                    "{name} is {shown}, which kubelet-rs supports only in part ({works}); upstream: {upstream}"
                ));
            }
            _ => {}
        }
    }
    out.extend(flag_warnings(s));
    out
}

/// The configuration the operator gets without setting anything, with the same gates.
fn default_config(s: &KubeletServer) -> KubeletConfiguration {
    let mut d = KubeletConfiguration::default();
    if set_defaults(&mut d, &s.feature_gates).is_err() {
        return crate::new_kubelet_configuration();
    }
    apply_legacy_defaults(&mut d);
    if !s.flags.kubelet_config_file.is_empty() {
        // `loadConfigFile` fills in the default thresholds when the file has none.
        d.eviction_hard = Some(crate::default_eviction_hard());
    }
    d
}

fn flag_warnings(s: &KubeletServer) -> Vec<String> {
    let now = Parsed {
        flags: s.flags.clone(),
        config: s.config.clone(),
        global: s.global.clone(),
    };
    let baseline = Parsed {
        flags: KubeletFlags::default(),
        config: s.config.clone(),
        global: GlobalFlags::default(),
    };
    let defs = all_flags();
    let mut out = Vec::new();
    for entry in FLAGS {
        let Support::NoEffect { upstream, .. } = entry.support else {
            continue;
        };
        let Some(def) = defs.iter().find(|d| d.name == entry.flag) else {
            continue;
        };
        let set = match def.target {
            Target::Cadvisor(name, _) => s.global.cadvisor.contains_key(name),
            t => render(t, &now) != render(t, &baseline),
        };
        if set {
            out.push(format!(
                "--{} is set but has no effect in kubelet-rs; the upstream kubelet {upstream}",
                entry.flag
            ));
        }
    }
    out
}

/// The value at a dotted JSON path; `null` when absent (omitted because empty).
pub(super) fn lookup<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .try_fold(v, |v, part| v.get(part))
        .unwrap_or(&Value::Null)
}

/// `null`, `false`, `0`, `""`, `[]` or `{}`: a value upstream does nothing with.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}
