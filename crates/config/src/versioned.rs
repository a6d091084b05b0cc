//! The versioned JSON form (what `--print-config` prints and `/configz` serves).
//!
//! Upstream registers the *internal* configuration with configz and serves it converted back
//! to v1beta1 (`initConfigz`, `zz_generated.conversion.go`). The conversion turns internal
//! values into pointers, so a v1beta1 `*bool` that has no default (`enableSystemLogQuery`)
//! is always printed, `false` included; the object has no `kind`/`apiVersion`.

use serde_json::{Map, Value};

use crate::types::{API_VERSION, KIND, KubeletConfiguration};

impl KubeletConfiguration {
    /// The object upstream's `/configz` serves under `kubeletconfig`: the v1beta1 fields,
    /// omitting empty ones as the `omitempty` tags do (durations as Go strings such as
    /// `"1m0s"`), with the internal-type round trip applied.
    pub fn to_configz_json(&self) -> Value {
        let mut internal = self.clone();
        // Internal `bool` → v1beta1 `*bool`: present even when false (no v1beta1 default).
        internal.enable_system_log_query.get_or_insert(false);
        match serde_json::to_value(&internal) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        }
    }

    /// [`Self::to_configz_json`] with `kind` and `apiVersion` first (`--print-config`).
    pub fn to_versioned_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".to_string(), Value::String(KIND.to_string()));
        out.insert(
            "apiVersion".to_string(),
            Value::String(API_VERSION.to_string()),
        );
        if let Value::Object(fields) = self.to_configz_json() {
            out.extend(fields);
        }
        Value::Object(out)
    }
}
