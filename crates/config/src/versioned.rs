//! The versioned JSON form (what `--print-config`-style dumps and `/configz` serve).

use serde_json::{Map, Value};

use crate::types::{API_VERSION, KIND, KubeletConfiguration};

impl KubeletConfiguration {
    /// The v1beta1 JSON object with `kind` and `apiVersion` first, omitting empty fields
    /// as upstream's `omitempty` tags do (durations as Go strings such as `"1m0s"`).
    pub fn to_versioned_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".to_string(), Value::String(KIND.to_string()));
        out.insert(
            "apiVersion".to_string(),
            Value::String(API_VERSION.to_string()),
        );
        if let Ok(Value::Object(fields)) = serde_json::to_value(self) {
            out.extend(fields);
        }
        Value::Object(out)
    }
}
