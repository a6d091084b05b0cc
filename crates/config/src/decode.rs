//! Decoding a config document: YAML or JSON → JSON value → typed v1beta1 struct, strictly
//! first then leniently (`pkg/kubelet/kubeletconfig/util/codec/codec.go`).

use serde_json::Value;
use serde_saphyr::DuplicateKeyPolicy;

use crate::decode_error::{go_decode_error, is_type_mismatch};
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

/// Sorts every object's keys: upstream turns YAML into JSON through a Go map, so its
/// decoder meets the fields in sorted order (which decides which error it reports first).
fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.sort_keys();
            m.values_mut().for_each(sort_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// Removes the value at `path` (so decoding can go on past a type error, as Go's does).
fn remove_at(v: &mut Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut cur = v;
    for seg in parents {
        let next = match (seg, cur) {
            (Segment::Map { key }, Value::Object(m)) => m.get_mut(key.as_str()),
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        cur = next;
    }
    match (last, cur) {
        (Segment::Map { key }, Value::Object(m)) => m.remove(key.as_str()).is_some(),
        (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
            a[*index] = Value::Null;
            true
        }
        _ => false,
    }
}

/// The typed struct from a JSON object without `kind`/`apiVersion`; unknown fields are
/// ignored and reported by their JSON path; a value of the wrong type is an error naming
/// its field as Go's `encoding/json` does ([`go_decode_error`]).
///
/// Which error, when there are several, is Go's too: a type mismatch is remembered and
/// decoding goes on, in sorted key order; an error from a type with its own decoder
/// (a duration, a quantity) stops it and wins; otherwise the first mismatch is reported.
pub(crate) fn from_json(mut v: Value) -> Result<(KubeletConfiguration, Vec<String>), String> {
    if let Value::Object(m) = &mut v {
        m.remove("kind");
        m.remove("apiVersion");
    }
    strip_nulls(&mut v);
    sort_keys(&mut v);
    let mut first_mismatch: Option<String> = None;
    loop {
        let mut unknown = Vec::new();
        let mut record = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
        let de = serde_ignored::Deserializer::new(v.clone(), &mut record);
        let err = match serde_path_to_error::deserialize(de) {
            Ok(cfg) => {
                return match first_mismatch {
                    Some(e) => Err(e),
                    None => Ok((cfg, unknown)),
                };
            }
            Err(e) => e,
        };
        let inner = err.inner().to_string();
        let message = go_decode_error(err.path(), &inner);
        if !is_type_mismatch(&inner) {
            return Err(message);
        }
        let first = first_mismatch.get_or_insert(message).clone();
        if !remove_at(&mut v, err.path()) {
            return Err(first);
        }
    }
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
