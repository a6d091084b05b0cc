//! Decode errors in `encoding/json`'s words (`UnmarshalTypeError.Error`, Go ≥ 1.20):
//! `json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32`.
//!
//! As in Go, the struct named is the innermost Go struct holding the field, the field is its
//! whole JSON path from the top without list indices or map keys, and the type is the Go
//! type that could not take the value (for a map, its element type).

use serde_path_to_error::{Path, Segment};

/// The Go struct at a path of struct fields (list elements share their list's path).
fn go_struct(path: &str) -> Option<&'static str> {
    Some(match path {
        "" => "KubeletConfiguration",
        "authentication" => "KubeletAuthentication",
        "authentication.x509" => "KubeletX509Authentication",
        "authentication.webhook" => "KubeletWebhookAuthentication",
        "authentication.anonymous" => "KubeletAnonymousAuthentication",
        "authorization" => "KubeletAuthorization",
        "authorization.webhook" => "KubeletWebhookAuthorization",
        "memorySwap" => "MemorySwapConfiguration",
        "crashLoopBackOff" => "CrashLoopBackOffConfig",
        "shutdownGracePeriodByPodPriority" => "ShutdownGracePeriodByPodPriority",
        "reservedMemory" => "MemoryReservation",
        "registerWithTaints" => "Taint",
        "tracing" => "TracingConfiguration",
        "userNamespaces" => "UserNamespaces",
        "logging" => "LoggingConfiguration",
        "logging.vmodule" => "VModuleItem",
        "logging.options" => "FormatOptions",
        "logging.options.text" => "TextOptions",
        "logging.options.json" => "JSONOptions",
        _ => return None,
    })
}

/// The Go package a nested struct type is printed with (`reflect.Type.String`).
fn go_package(name: &str) -> &'static str {
    match name {
        "LoggingConfiguration"
        | "VModuleItem"
        | "FormatOptions"
        | "TextOptions"
        | "JSONOptions" => "v1",
        "TracingConfiguration" => "v1",
        "Taint" => "v1",
        _ => "v1beta1",
    }
}

/// The Go type of a list or map field (`[]string` and `map[string]string` unless listed).
fn go_container_type(field: &str, map: bool) -> String {
    let known = match field {
        "tlsCurvePreferences" => "[]uint16",
        "shutdownGracePeriodByPodPriority" => "[]v1beta1.ShutdownGracePeriodByPodPriority",
        "reservedMemory" => "[]v1beta1.MemoryReservation",
        "registerWithTaints" => "[]v1.Taint",
        "logging.vmodule" => "v1.VModuleConfiguration",
        "featureGates" => "map[string]bool",
        "staticPodURLHeader" => "map[string][]string",
        "reservedMemory.limits" => "v1.ResourceList",
        _ if map => "map[string]string",
        _ => "[]string",
    };
    known.to_string()
}

/// Where a serde error happened, in Go's terms.
struct GoField {
    /// The innermost struct holding the field.
    strukt: &'static str,
    /// The JSON field path from the top (no indices, no map keys).
    field: String,
}

fn go_field(path: &Path) -> GoField {
    let mut strukt = "KubeletConfiguration";
    let mut fields: Vec<&str> = Vec::new();
    let mut in_struct = true;
    for seg in path.iter() {
        match seg {
            Segment::Map { key } if in_struct => {
                fields.push(key);
                match go_struct(&fields.join(".")) {
                    Some(s) => strukt = s,
                    None => in_struct = false,
                }
            }
            Segment::Seq { .. } => {}
            // A map key or an enum: the error belongs to the field holding it.
            _ => in_struct = false,
        }
    }
    let field = fields.join(".");
    // The last name is the field itself, not a struct: its holder is one level up.
    if go_struct(&field).is_some() && !field.is_empty() {
        let parent = fields[..fields.len() - 1].join(".");
        strukt = go_struct(&parent).unwrap_or(strukt);
    }
    GoField { strukt, field }
}

/// `UnmarshalTypeError.Value`: the JSON kind that was found (a number that does not fit is
/// `number <text>`).
fn go_value(found: &str) -> String {
    let literal = |s: &str| s.split('`').nth(1).unwrap_or("").to_string();
    if found.starts_with("string") {
        "string".into()
    } else if found.starts_with("integer") || found.starts_with("floating point") {
        format!("number {}", literal(found))
    } else if found.starts_with("boolean") {
        "bool".into()
    } else if found.starts_with("sequence") {
        "array".into()
    } else if found.starts_with("map") {
        "object".into()
    } else {
        found.to_string()
    }
}

/// `UnmarshalTypeError.Type`: the Go type for serde's "expected ...".
fn go_type(expected: &str, field: &str) -> String {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
            let (sign, bits) = expected.split_at(1);
            format!("{}int{bits}", if sign == "u" { "u" } else { "" })
        }
        "f32" | "f64" => format!("float{}", &expected[1..]),
        "a boolean" => "bool".into(),
        "a sequence" => go_container_type(field, false),
        "a map" => go_container_type(field, true),
        e if e.starts_with("struct ") => {
            let name = e.trim_start_matches("struct ");
            format!("{}.{name}", go_package(name))
        }
        // Strings, and types that decode from a string (durations, quantities).
        _ => "string".into(),
    }
}

/// A plain type mismatch (Go's decoder notes it and goes on), as opposed to an error of a
/// type with its own decoder (a duration, a quantity: Go stops there).
pub(crate) fn is_type_mismatch(inner: &str) -> bool {
    let std_kind = inner.starts_with("invalid type: ") || inner.starts_with("invalid value: ");
    std_kind && !inner.contains("Go duration") && !inner.contains("quantity")
}

/// Renders a typed decode error at `path` as Go's `encoding/json` does; other errors
/// (a bad duration text, an unknown enum value) name the same field.
pub(crate) fn go_decode_error(path: &Path, inner: &str) -> String {
    let GoField { strukt, field } = go_field(path);
    let other = || format!("json: Go struct field {strukt}.{field}: {inner}");
    let (rest, out_of_range) = if let Some(r) = inner.strip_prefix("invalid type: ") {
        (r, false)
    } else if let Some(r) = inner.strip_prefix("invalid value: ") {
        (r, true)
    } else {
        return other();
    };
    let Some((found, expected)) = rest.rsplit_once(", expected ") else {
        return other();
    };
    let go_type = go_type(expected, &field);
    let numeric = go_type.contains("int") || go_type.starts_with("float");
    let value = match (out_of_range, numeric) {
        // Only a number that does not fit keeps its text (`number 5000000000`).
        (true, true) => go_value(found),
        (true, false) => return other(),
        (false, _) => go_value(found)
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    format!(
        "json: cannot unmarshal {value} into Go struct field {strukt}.{field} of type {go_type}"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::decode::from_json;

    fn err(json: serde_json::Value) -> String {
        from_json(json).map(|_| ()).unwrap_err()
    }

    #[test]
    fn upstream_wording_with_the_field_path() {
        // Each expectation is the upstream kubelet v1.35.4's message for the same input.
        assert_eq!(
            err(serde_json::json!({"maxPods": "lots"})),
            "json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32"
        );
        assert_eq!(
            err(serde_json::json!({"authentication": {"x509": {"clientCAFile": [1]}}})),
            "json: cannot unmarshal array into Go struct field KubeletX509Authentication.authentication.x509.clientCAFile of type string"
        );
        assert_eq!(
            err(serde_json::json!({"syncFrequency": 7})),
            "json: cannot unmarshal number into Go struct field KubeletConfiguration.syncFrequency of type string"
        );
        assert_eq!(
            err(serde_json::json!({"evictionHard": {"memory.available": 5}})),
            "json: cannot unmarshal number into Go struct field KubeletConfiguration.evictionHard of type string"
        );
        assert_eq!(
            err(serde_json::json!({"featureGates": {"Foo": "yes"}})),
            "json: cannot unmarshal string into Go struct field KubeletConfiguration.featureGates of type bool"
        );
    }

    #[test]
    fn which_error_wins_is_gos_choice() {
        // Checked against the upstream kubelet: fields in sorted order, the first type
        // mismatch is reported...
        assert_eq!(
            err(serde_json::json!({"syncFrequency": "1s", "maxPods": "x", "clusterDNS": 5})),
            "json: cannot unmarshal number into Go struct field KubeletConfiguration.clusterDNS of type []string"
        );
        // ... unless a type with its own decoder fails later, which stops decoding.
        assert_eq!(
            err(serde_json::json!({"evictionHard": {"memory.available": 5}, "syncFrequency": 7})),
            "json: cannot unmarshal number into Go struct field KubeletConfiguration.syncFrequency of type string"
        );
        assert!(
            err(serde_json::json!({"maxPods": "x", "syncFrequency": "soon"}))
                .ends_with("time: invalid duration \"soon\"")
        );
    }

    #[test]
    fn nested_lists_structs_and_ranges() {
        assert_eq!(
            err(serde_json::json!({"reservedMemory": [{"numaNode": "x"}]})),
            "json: cannot unmarshal string into Go struct field MemoryReservation.reservedMemory.numaNode of type int32"
        );
        assert_eq!(
            err(serde_json::json!({"authentication": "x"})),
            "json: cannot unmarshal string into Go struct field KubeletConfiguration.authentication of type v1beta1.KubeletAuthentication"
        );
        assert_eq!(
            err(serde_json::json!({"clusterDNS": "10.0.0.10"})),
            "json: cannot unmarshal string into Go struct field KubeletConfiguration.clusterDNS of type []string"
        );
        assert_eq!(
            err(serde_json::json!({"maxPods": 5_000_000_000_i64})),
            "json: cannot unmarshal number 5000000000 into Go struct field KubeletConfiguration.maxPods of type int32"
        );
        let bad_duration = err(serde_json::json!({"syncFrequency": "soon"}));
        assert!(
            bad_duration.ends_with("time: invalid duration \"soon\""),
            "{bad_duration}"
        );
        assert!(
            bad_duration.starts_with("json: Go struct field KubeletConfiguration.syncFrequency: "),
            "{bad_duration}"
        );
    }
}
