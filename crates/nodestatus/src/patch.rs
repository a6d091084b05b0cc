//! `nodeutil.PatchNodeStatus` (`k8s.io/component-helpers/node/util/status.go`): the
//! strategic merge patch from the node as read to the node as computed, with the spec left
//! out, and `status.addresses` replaced as a whole when it changed (its `patchStrategy=merge`
//! on `type` is wrong for two addresses of one type).
//!
//! The two-way diff is `strategicpatch.CreateTwoWayMergePatch` for the shapes a Node has:
//! maps are merged (a removed key becomes `null`), the lists with a patch merge key
//! (`status.conditions` and `status.addresses` on `type`, `metadata.ownerReferences` on
//! `uid`) are diffed per item (changed items carry their key, removed ones
//! `{"$patch": "delete"}`, with `$setElementOrder/<list>`), every other list is replaced.
//! Quantities are compared by value, as `apiequality.Semantic` does.

use k8s_openapi::api::core::v1::Node;
use kubelet_apimachinery::Quantity;
use serde_json::{Map, Value, json};

/// The lists diffed by merge key: (path from the object's root, merge key).
const MERGE_KEYS: &[(&str, &str)] = &[
    ("status.conditions", "type"),
    ("status.addresses", "type"),
    ("metadata.ownerReferences", "uid"),
];

/// The maps of quantities, compared by value.
const QUANTITY_MAPS: &[&str] = &["status.capacity", "status.allocatable"];

/// Why a patch could not be prepared.
#[derive(Debug, thiserror::Error)]
#[error("failed to Marshal node {node:?}: {source}")]
pub struct PatchError {
    node: String,
    #[source]
    source: serde_json::Error,
}

/// `preparePatchBytesforNodeStatus`.
pub fn prepare_patch_for_node_status(
    node_name: &str,
    old: &Node,
    new: &Node,
) -> Result<Value, PatchError> {
    let err = |source| PatchError {
        node: node_name.to_string(),
        source,
    };
    let old_addresses = old.status.as_ref().and_then(|s| s.addresses.clone());
    let new_addresses = new.status.as_ref().and_then(|s| s.addresses.clone());
    let manually_patch_addresses =
        old_addresses.as_ref().is_some_and(|a| !a.is_empty()) && old_addresses != new_addresses;

    let mut diff_node = new.clone();
    diff_node.spec = old.spec.clone();
    if manually_patch_addresses && let Some(s) = diff_node.status.as_mut() {
        s.addresses = old_addresses;
    }
    let old_v = normalized(serde_json::to_value(old).map_err(err)?);
    let new_v = normalized(serde_json::to_value(&diff_node).map_err(err)?);
    let mut patch = diff(&old_v, &new_v, "").unwrap_or_else(|| json!({}));
    if manually_patch_addresses {
        // `fixupPatchForNodeStatusAddresses`.
        let mut list: Vec<Value> =
            match serde_json::to_value(new_addresses.unwrap_or_default()).map_err(err)? {
                Value::Array(a) => a,
                _ => Vec::new(),
            };
        list.push(json!({"$patch": "replace"}));
        if let Value::Object(p) = &mut patch {
            let status = p.entry("status").or_insert_with(|| json!({}));
            if let Value::Object(s) = status {
                s.insert("addresses".into(), Value::Array(list));
            }
        }
    }
    Ok(patch)
}

/// The object as JSON with the quantities of [`QUANTITY_MAPS`] in canonical form, so equal
/// values compare equal whatever their spelling (`1024Mi` and `1Gi`).
pub fn normalized(mut v: Value) -> Value {
    for path in QUANTITY_MAPS {
        let mut cur = Some(&mut v);
        for part in path.split('.') {
            cur = cur.and_then(|c| c.get_mut(part));
        }
        if let Some(Value::Object(m)) = cur {
            for q in m.values_mut() {
                if let Some(parsed) = q.as_str().and_then(|s| Quantity::parse(s).ok()) {
                    *q = Value::String(parsed.to_string());
                }
            }
        }
    }
    v
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The patch turning `original` into `modified`, `None` when they are equal.
fn diff(original: &Value, modified: &Value, path: &str) -> Option<Value> {
    match (original, modified) {
        (Value::Object(o), Value::Object(m)) => diff_maps(o, m, path).map(Value::Object),
        _ if original == modified => None,
        _ => Some(modified.clone()),
    }
}

fn diff_maps(
    o: &Map<String, Value>,
    m: &Map<String, Value>,
    path: &str,
) -> Option<Map<String, Value>> {
    let mut patch = Map::new();
    for (k, mv) in m {
        let p = child(path, k);
        match o.get(k) {
            None => {
                patch.insert(k.clone(), mv.clone());
            }
            Some(ov) if ov == mv => {}
            Some(ov) => match (ov, mv, merge_key(&p)) {
                (Value::Array(oa), Value::Array(ma), Some(key)) => {
                    if let Some((items, order)) = diff_keyed_list(oa, ma, key, &p) {
                        patch.insert(k.clone(), Value::Array(items));
                        patch.insert(format!("$setElementOrder/{k}"), Value::Array(order));
                    }
                }
                _ => {
                    if let Some(d) = diff(ov, mv, &p) {
                        patch.insert(k.clone(), d);
                    }
                }
            },
        }
    }
    for k in o.keys() {
        if !m.contains_key(k) {
            patch.insert(k.clone(), Value::Null);
        }
    }
    (!patch.is_empty()).then_some(patch)
}

fn merge_key(path: &str) -> Option<&'static str> {
    MERGE_KEYS.iter().find(|(p, _)| *p == path).map(|(_, k)| *k)
}

/// A list of maps merged on `key`: the changed and new items (each a diff carrying its
/// key), `$patch: delete` for removed ones, and the order of the modified list.
fn diff_keyed_list(
    original: &[Value],
    modified: &[Value],
    key: &str,
    path: &str,
) -> Option<(Vec<Value>, Vec<Value>)> {
    let key_of = |v: &Value| v.get(key).cloned();
    let mut items = Vec::new();
    for m in modified {
        let mk = key_of(m);
        match original.iter().find(|o| key_of(o) == mk) {
            None => items.push(m.clone()),
            Some(o) => {
                if let Some(Value::Object(mut d)) = diff(o, m, path) {
                    if let Some(k) = mk {
                        d.insert(key.to_string(), k);
                    }
                    items.push(Value::Object(d));
                }
            }
        }
    }
    for o in original {
        let ok = key_of(o);
        if !modified.iter().any(|m| key_of(m) == ok) {
            let mut del = Map::new();
            del.insert("$patch".into(), json!("delete"));
            if let Some(k) = ok {
                del.insert(key.to_string(), k);
            }
            items.push(Value::Object(del));
        }
    }
    let order_changed = original.iter().map(key_of).ne(modified.iter().map(key_of));
    if items.is_empty() && !order_changed {
        return None;
    }
    let order = modified
        .iter()
        .filter_map(|m| key_of(m).map(|k| json!({ key: k })))
        .collect();
    Some((items, order))
}

/// Applies a patch made by [`prepare_patch_for_node_status`] the way the apiserver's
/// strategic merge does for a Node (for the fakes; `$setElementOrder` orders the merged
/// list).
pub fn apply_strategic_merge_patch(original: &Value, patch: &Value) -> Value {
    apply(original, patch, "")
}

fn apply(original: &Value, patch: &Value, path: &str) -> Value {
    let (Value::Object(o), Value::Object(p)) = (original, patch) else {
        return patch.clone();
    };
    let mut out = o.clone();
    for (k, pv) in p {
        if k.starts_with("$setElementOrder/") {
            continue;
        }
        let cp = child(path, k);
        if pv.is_null() {
            out.remove(k);
            continue;
        }
        let merged = match (o.get(k), pv) {
            (Some(Value::Array(oa)), Value::Array(pa)) => match merge_key(&cp) {
                Some(key) => {
                    apply_keyed_list(oa, pa, key, p.get(&format!("$setElementOrder/{k}")), &cp)
                }
                None => pv.clone(),
            },
            (Some(ov @ Value::Object(_)), Value::Object(_)) => apply(ov, pv, &cp),
            _ => strip_directives(pv),
        };
        out.insert(k.clone(), merged);
    }
    Value::Object(out)
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|i| i.get("$patch").is_none())
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn apply_keyed_list(
    original: &[Value],
    patch: &[Value],
    key: &str,
    order: Option<&Value>,
    path: &str,
) -> Value {
    if patch
        .iter()
        .any(|i| i.get("$patch") == Some(&json!("replace")))
    {
        return strip_directives(&Value::Array(patch.to_vec()));
    }
    let mut items: Vec<Value> = original.to_vec();
    for pi in patch {
        let k = pi.get(key);
        let pos = items.iter().position(|i| i.get(key) == k);
        if pi.get("$patch") == Some(&json!("delete")) {
            if let Some(i) = pos {
                items.remove(i);
            }
            continue;
        }
        match pos {
            Some(i) => items[i] = apply(&items[i], pi, path),
            None => items.push(pi.clone()),
        }
    }
    if let Some(Value::Array(order)) = order {
        let rank = |v: &Value| {
            order
                .iter()
                .position(|o| o.get(key) == v.get(key))
                .unwrap_or(usize::MAX)
        };
        items.sort_by_key(rank);
    }
    Value::Array(items)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node(v: Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn conditions_merge_on_type_and_quantities_compare_by_value() {
        let old = node(json!({
            "metadata": {"name": "n", "labels": {"a": "1", "gone": "x"}},
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {
                "capacity": {"memory": "1024Mi", "cpu": "2"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
                    {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "m"},
                    {"type": "Old", "status": "True"}
                ]
            }
        }));
        let new = node(json!({
            "metadata": {"name": "n", "labels": {"a": "1"}},
            "spec": {"podCIDR": "changed-but-ignored"},
            "status": {
                "capacity": {"memory": "1Gi", "cpu": "2"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-01-01T00:00:10Z"},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "m"}
                ]
            }
        }));
        let p = prepare_patch_for_node_status("n", &old, &new).unwrap();
        assert_eq!(
            p,
            json!({
                "metadata": {"labels": {"gone": null}},
                "status": {
                    "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "Ready"}],
                    "conditions": [
                        {"type": "MemoryPressure", "lastHeartbeatTime": "2026-01-01T00:00:10Z"},
                        {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                        {"type": "Old", "$patch": "delete"}
                    ]
                }
            })
        );
        let mut expected = serde_json::to_value(&new).unwrap();
        expected["spec"] = json!({"podCIDR": "10.0.0.0/24"});
        expected["status"]["capacity"]["memory"] = json!("1024Mi");
        let applied = apply_strategic_merge_patch(&serde_json::to_value(&old).unwrap(), &p);
        assert_eq!(normalized(applied), normalized(expected));
    }

    #[test]
    fn changed_addresses_are_replaced_whole_and_images_atomically() {
        let old = node(json!({
            "metadata": {"name": "n"},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "images": [{"names": ["a"], "sizeBytes": 1}]
            }
        }));
        let new = node(json!({
            "metadata": {"name": "n"},
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": "10.0.0.2"},
                    {"type": "InternalIP", "address": "fd00::2"}
                ],
                "images": [{"names": ["b"], "sizeBytes": 2}, {"names": ["a"], "sizeBytes": 1}]
            }
        }));
        let p = prepare_patch_for_node_status("n", &old, &new).unwrap();
        assert_eq!(
            p,
            json!({"status": {
                "images": [{"names": ["b"], "sizeBytes": 2}, {"names": ["a"], "sizeBytes": 1}],
                "addresses": [
                    {"type": "InternalIP", "address": "10.0.0.2"},
                    {"type": "InternalIP", "address": "fd00::2"},
                    {"$patch": "replace"}
                ]
            }})
        );
        let applied = apply_strategic_merge_patch(&serde_json::to_value(&old).unwrap(), &p);
        assert_eq!(applied, serde_json::to_value(&new).unwrap());
        // Unchanged: an empty patch.
        assert_eq!(
            prepare_patch_for_node_status("n", &new, &new).unwrap(),
            json!({})
        );
    }
}
