//! Decoding a config document: YAML or JSON → JSON value → typed v1beta1 struct, strictly
//! first then leniently (`pkg/kubelet/kubeletconfig/util/codec/codec.go`).

use serde_json::Value;
use serde_saphyr::DuplicateKeyPolicy;

use crate::decode_error::go_decode_error;
use crate::types::{API_VERSION, KIND, KubeletConfiguration};

/// A decoded document plus the strict-decoding complaints that made us fall back.
pub(crate) struct Decoded {
    pub config: KubeletConfiguration,
    pub strict_errors: Vec<String>,
}

/// YAML (or JSON) bytes to a JSON value. Returns the value and, when the strict parse
/// failed on a duplicate key, that error.
pub(crate) fn yaml_to_json(data: &[u8]) -> Result<(Value, Option<String>), String> {
    let text =
        std::str::from_utf8(data).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    let strict = serde_saphyr::options! { duplicate_keys: DuplicateKeyPolicy::Error };
    match serde_saphyr::from_str_with_options::<Value>(text, strict) {
        Ok(v) => Ok((v, None)),
        Err(strict_err) => {
            let lenient = serde_saphyr::options! { duplicate_keys: DuplicateKeyPolicy::LastWins };
            match serde_saphyr::from_str_with_options::<Value>(text, lenient) {
                Ok(v) => Ok((v, Some(strict_err.to_string()))),
                Err(e) => Err(format!("error converting YAML to JSON: {e}")),
            }
        }
    }
}

/// Removes `null` members (Go's decoder leaves the field at its zero value / nil).
pub(crate) fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// The typed struct from a JSON object without `kind`/`apiVersion`; unknown fields are
/// ignored and reported by their JSON path; a value of the wrong type is an error naming
/// its field as Go's `encoding/json` does ([`go_decode_error`]).
pub(crate) fn from_json(mut v: Value) -> Result<(KubeletConfiguration, Vec<String>), String> {
    if let Value::Object(m) = &mut v {
        m.remove("kind");
        m.remove("apiVersion");
    }
    strip_nulls(&mut v);
    let mut unknown = Vec::new();
    let mut record = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
    let de = serde_ignored::Deserializer::new(v, &mut record);
    let cfg = serde_path_to_error::deserialize(de)
        .map_err(|e| go_decode_error(e.path(), &e.inner().to_string()))?;
    Ok((cfg, unknown))
}

/// Reads `apiVersion` and `kind`.
pub(crate) fn gvk(v: &Value) -> (Option<&str>, Option<&str>) {
    (
        v.get("apiVersion").and_then(Value::as_str),
        v.get("kind").and_then(Value::as_str),
    )
}

/// `DecodeKubeletConfiguration` (without defaulting).
pub(crate) fn decode_kubelet_configuration(data: &[u8]) -> Result<Decoded, String> {
    let (value, dup) = yaml_to_json(data).map_err(|e| format!("failed to decode: {e}"))?;
    match gvk(&value) {
        (_, None) | (_, Some("")) => {
            return Err(format!(
                "failed to decode: Object 'Kind' is missing in '{}'",
                String::from_utf8_lossy(data).trim()
            ));
        }
        (Some(API_VERSION), Some(KIND)) => {}
        (version, Some(kind)) => {
            return Err(format!(
                "failed to decode: no kind {kind:?} is registered for version {:?} in scheme \"pkg/kubelet/apis/config/scheme/scheme.go:35\"",
                version.unwrap_or("")
            ));
        }
    }
    let (config, unknown) = from_json(value).map_err(|e| format!("failed to decode: {e}"))?;
    let mut strict_errors: Vec<String> = dup.into_iter().collect();
    strict_errors.extend(unknown.iter().map(|f| format!("unknown field {f:?}")));
    Ok(Decoded {
        config,
        strict_errors,
    })
}
