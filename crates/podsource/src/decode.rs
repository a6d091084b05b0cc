//! Manifest bytes to typed pods: the decoding half of upstream `tryDecodeSinglePod` and
//! `tryDecodePodList` (`pkg/kubelet/config/common.go`).
//!
//! - JSON (data starting with `{`) is read as JSON, anything else as YAML (`utilyaml.ToJSON`).
//! - Of a YAML stream only the first document is used, like upstream (`yaml.Unmarshal`); the
//!   number of documents is reported so callers can warn about the ignored ones.
//! - `kind` and `apiVersion` are required and must be `Pod`/`v1` (or `PodList`/`v1`).
//! - Quantities written as YAML/JSON numbers (`cpu: 1`) are accepted like upstream, and a few
//!   required fields that are missing are filled with empty values so that validation can
//!   report them with their field path instead of a generic decoding error.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value};

/// Why bytes could not be read as the expected object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty manifest: no YAML or JSON document")]
    Empty,
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("expected an object, got {0}")]
    NotAnObject(&'static str),
    #[error("object has no \"{0}\" field")]
    MissingTypeField(&'static str),
    #[error(
        "object is kind {kind:?} with apiVersion {api_version:?}, expected kind {expected:?} with apiVersion \"v1\""
    )]
    WrongKind {
        kind: String,
        api_version: String,
        expected: &'static str,
    },
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

/// A decoded object plus how many YAML documents the data held.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<T> {
    pub value: T,
    pub documents: usize,
}

/// Reads the first YAML/JSON document of `data` as a JSON value.
pub fn to_json_value(data: &[u8]) -> Result<Decoded<Value>, DecodeError> {
    let trimmed = data.trim_ascii_start();
    if trimmed.first() == Some(&b'{') {
        let value =
            serde_json::from_slice(trimmed).map_err(|e| DecodeError::Json(e.to_string()))?;
        return Ok(Decoded {
            value,
            documents: 1,
        });
    }
    // Upstream reads manifests with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1), where a
    // leading zero means octal: `defaultMode: 0644` is 420, as operators expect.
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<Value> = serde_saphyr::from_slice_multiple_with_options(data, options)
        .map_err(|e| DecodeError::Yaml(one_line(&e.to_string())))?;
    let documents = docs.len();
    let value = docs.into_iter().next().ok_or(DecodeError::Empty)?;
    Ok(Decoded { value, documents })
}

/// Decodes `data` as a single `v1/Pod`.
pub fn decode_pod(data: &[u8]) -> Result<Decoded<Pod>, DecodeError> {
    let Decoded { value, documents } = to_json_value(data)?;
    let mut obj = into_object(value)?;
    check_kind(&obj, "Pod")?;
    normalize_pod(&mut obj);
    let pod = typed(Value::Object(obj), "")?;
    Ok(Decoded {
        value: pod,
        documents,
    })
}

/// Decodes `data` as a `v1/PodList`.
pub fn decode_pod_list(data: &[u8]) -> Result<Decoded<Vec<Pod>>, DecodeError> {
    let Decoded { value, documents } = to_json_value(data)?;
    let mut obj = into_object(value)?;
    check_kind(&obj, "PodList")?;
    let items = match obj.remove("items") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(DecodeError::Field {
                path: "items".into(),
                message: format!("expected a list, got {}", type_name(&other)),
            });
        }
    };
    let mut pods = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let prefix = format!("items[{i}]");
        let mut item = match item {
            Value::Object(m) => m,
            other => {
                return Err(DecodeError::Field {
                    path: prefix,
                    message: format!("expected an object, got {}", type_name(&other)),
                });
            }
        };
        normalize_pod(&mut item);
        pods.push(typed(Value::Object(item), &prefix)?);
    }
    Ok(Decoded {
        value: pods,
        documents,
    })
}

fn typed(value: Value, prefix: &str) -> Result<Pod, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match (prefix.is_empty(), inner == ".") {
            (true, _) => inner,
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{inner}"),
        };
        DecodeError::Field {
            path,
            message: e.into_inner().to_string(),
        }
    })
}

fn into_object(value: Value) -> Result<Map<String, Value>, DecodeError> {
    match value {
        Value::Object(m) => Ok(m),
        Value::Null => Err(DecodeError::Empty),
        other => Err(DecodeError::NotAnObject(type_name(&other))),
    }
}

fn check_kind(obj: &Map<String, Value>, expected: &'static str) -> Result<(), DecodeError> {
    let kind = string_field(obj, "kind")?;
    let api_version = string_field(obj, "apiVersion")?;
    if kind != expected || api_version != "v1" {
        return Err(DecodeError::WrongKind {
            kind,
            api_version,
            expected,
        });
    }
    Ok(())
}

fn string_field(obj: &Map<String, Value>, key: &'static str) -> Result<String, DecodeError> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(DecodeError::MissingTypeField(key))
        }
        Some(other) => Err(DecodeError::Field {
            path: key.to_string(),
            message: format!("expected a string, got {}", type_name(other)),
        }),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Upstream-compatible leniency applied before typed decoding.
fn normalize_pod(obj: &mut Map<String, Value>) {
    quantities_to_strings(obj);
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        fill_required(spec);
    }
}

/// `resource.Quantity` accepts JSON numbers; k8s-openapi only strings.
fn quantities_to_strings(obj: &mut Map<String, Value>) {
    for (key, value) in obj.iter_mut() {
        match (key.as_str(), value) {
            ("limits" | "requests" | "overhead", Value::Object(list)) => {
                for q in list.values_mut() {
                    number_to_string(q);
                }
            }
            ("sizeLimit", q) => number_to_string(q),
            (_, Value::Object(inner)) => quantities_to_strings(inner),
            (_, Value::Array(items)) => {
                for item in items.iter_mut() {
                    if let Value::Object(inner) = item {
                        quantities_to_strings(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

fn number_to_string(v: &mut Value) {
    if let Value::Number(n) = v {
        *v = Value::String(n.to_string());
    }
}

/// Fills required-but-missing fields validation reports on (`containers`, names, ports...).
fn fill_required(spec: &mut Map<String, Value>) {
    spec.entry("containers")
        .or_insert_with(|| Value::Array(Vec::new()));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in objects_mut(spec, list) {
            container
                .entry("name")
                .or_insert(Value::String(String::new()));
            for port in objects_mut(container, "ports") {
                port.entry("containerPort").or_insert(Value::from(0));
            }
            for env in objects_mut(container, "env") {
                env.entry("name").or_insert(Value::String(String::new()));
            }
            for mount in objects_mut(container, "volumeMounts") {
                mount.entry("name").or_insert(Value::String(String::new()));
                mount
                    .entry("mountPath")
                    .or_insert(Value::String(String::new()));
            }
        }
    }
    for volume in objects_mut(spec, "volumes") {
        volume.entry("name").or_insert(Value::String(String::new()));
    }
}

fn objects_mut<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|items| items.iter_mut())
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    const YAML_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      limits:\n        cpu: 1\n        memory: 128Mi\n";

    #[test]
    fn decodes_yaml_pod_with_numeric_quantity() {
        let d = decode_pod(YAML_POD.as_bytes()).unwrap();
        assert_eq!(d.documents, 1);
        let pod = d.value;
        assert_eq!(pod.metadata.name.as_deref(), Some("web"));
        let spec = pod.spec.unwrap();
        let limits = spec.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .limits
            .as_ref()
            .unwrap();
        assert_eq!(limits["cpu"].0, "1");
        assert_eq!(limits["memory"].0, "128Mi");
    }

    #[test]
    fn leading_zero_modes_are_octal_as_in_go_yaml() {
        let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: m\nspec:\n  containers:\n  - name: c\n    image: i\n  volumes:\n  - name: d\n    downwardAPI:\n      defaultMode: 0644\n      items:\n      - path: name\n        mode: 0400\n        fieldRef: {fieldPath: metadata.name}\n";
        let pod = decode_pod(yaml.as_bytes()).unwrap().value;
        let d = pod.spec.unwrap().volumes.unwrap()[0]
            .downward_api
            .clone()
            .unwrap();
        assert_eq!(d.default_mode, Some(0o644));
        assert_eq!(d.items.unwrap()[0].mode, Some(0o400));
    }

    #[test]
    fn decodes_json_pod() {
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
        let pod = decode_pod(json.as_bytes()).unwrap().value;
        assert_eq!(pod.metadata.name.as_deref(), Some("j"));
    }

    #[test]
    fn json_with_trailing_garbage_is_an_error() {
        let err = decode_pod(br#"{"kind":"Pod"} xx"#).unwrap_err();
        assert!(matches!(err, DecodeError::Json(_)), "{err}");
    }

    #[test]
    fn counts_documents_and_uses_the_first() {
        let data = format!("{YAML_POD}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: second\n");
        let d = decode_pod(data.as_bytes()).unwrap();
        assert_eq!(d.documents, 2);
        assert_eq!(d.value.metadata.name.as_deref(), Some("web"));
    }

    #[test]
    fn rejects_wrong_kind_and_missing_type() {
        let err = decode_pod(b"apiVersion: apps/v1\nkind: Deployment\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "object is kind \"Deployment\" with apiVersion \"apps/v1\", expected kind \"Pod\" with apiVersion \"v1\""
        );
        assert_eq!(
            decode_pod(b"kind: Pod\n").unwrap_err(),
            DecodeError::MissingTypeField("apiVersion")
        );
        assert_eq!(
            decode_pod(b"apiVersion: v1\n").unwrap_err(),
            DecodeError::MissingTypeField("kind")
        );
        assert!(matches!(
            decode_pod(b"apiVersion: v1\nkind: PodList\n"),
            Err(DecodeError::WrongKind { .. })
        ));
    }

    #[test]
    fn rejects_empty_garbage_and_binary() {
        assert_eq!(decode_pod(b"").unwrap_err(), DecodeError::Empty);
        assert_eq!(
            decode_pod(b"   \n# only a comment\n").unwrap_err(),
            DecodeError::Empty
        );
        assert_eq!(
            decode_pod(b"just a string").unwrap_err(),
            DecodeError::NotAnObject("a string")
        );
        assert!(matches!(
            decode_pod(&[0xff, 0xfe, 0x00, 0x01]),
            Err(DecodeError::Yaml(_))
        ));
        assert!(matches!(
            decode_pod(b"a: [unclosed"),
            Err(DecodeError::Yaml(_))
        ));
    }

    #[test]
    fn type_errors_name_the_field() {
        let data = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n    image: i\n    ports:\n    - containerPort: notanumber\n";
        let err = decode_pod(data).unwrap_err();
        let DecodeError::Field { path, .. } = err else {
            panic!("{err}")
        };
        assert_eq!(path, "spec.containers[0].ports[0].containerPort");
    }

    #[test]
    fn missing_required_fields_are_filled_for_validation() {
        let pod = decode_pod(b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - image: i\n    ports:\n    - name: p\n").unwrap().value;
        let c = &pod.spec.unwrap().containers[0];
        assert_eq!(c.name, "");
        assert_eq!(c.ports.as_ref().unwrap()[0].container_port, 0);
    }

    #[test]
    fn decodes_pod_list_and_names_bad_item() {
        let list = b"apiVersion: v1\nkind: PodList\nitems:\n- metadata:\n    name: a\n- metadata:\n    name: b\n";
        let pods = decode_pod_list(list).unwrap().value;
        assert_eq!(pods.len(), 2);
        let bad = b"apiVersion: v1\nkind: PodList\nitems:\n- metadata:\n    name: a\n- 3\n";
        let err = decode_pod_list(bad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "items[1]: expected an object, got a number"
        );
        assert!(matches!(
            decode_pod_list(YAML_POD.as_bytes()),
            Err(DecodeError::WrongKind { .. })
        ));
    }
}
