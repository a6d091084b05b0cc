//! The pod status patch (upstream `pkg/util/pod/pod.go` `PatchPodStatus`,
//! `preparePatchBytesForPodStatus`).
//!
//! Upstream marshals `Pod{Status: old}` and `Pod{UID, Status: new}` and lets
//! client-go's `strategicpatch.CreateTwoWayMergePatch` compute a strategic
//! merge patch, sent to `pods/<name>/status`. [`pod_status_patch`] builds the
//! same patch from k8s-openapi values with the same algorithm, specialised
//! to `PodStatus`'s patch metadata:
//!
//! - the merge lists of `PodStatus` (`conditions` by `type`, `podIPs` and
//!   `hostIPs` by `ip`, `resourceClaimStatuses` by `name`) are diffed item by
//!   item: changed items carry only their changed fields plus the merge key,
//!   new items are sent whole, removed ones as `{"$patch":"delete", key}`,
//!   and `$setElementOrder/<list>` gives the new order (upstream `diffLists`
//!   with `SetElementOrder`). A condition set by another writer between the
//!   kubelet's GET and its PATCH therefore survives, as it does upstream;
//! - every other list (container statuses are `listType=atomic` without a
//!   patch strategy) is replaced whole when it differs;
//! - objects are diffed recursively; a field present before and absent now
//!   is sent as `null` (upstream `updatePatchIfMissing`).
//!
//! `metadata.uid` is always in the patch: the apiserver refuses a patch that
//! would change the UID, so it acts as a precondition against a pod that was
//! deleted and recreated under the same name. A patch with nothing but the
//! UID means "unchanged" and is not sent.
//!
//! Go marshals empty strings, lists and nil pointers of `omitempty` fields as
//! absent and empty structs as `{}`, k8s-openapi as `""`, `[]`, `{}` or absent
//! depending on the field; both sides are normalised (nulls, `""`, `[]` and
//! empty `state`/`lastState` dropped) before the diff, so a status does not
//! look changed only because of its representation. The
//! `$retainKeys` directive of `resourceClaimStatuses` items is not produced:
//! the kubelet copies that list from the API object (`mergePodStatus`), so it
//! never differs.

use k8s_openapi::api::core::v1::PodStatus as ApiPodStatus;
use serde_json::{Map, Value, json};

/// The patch merge key of a list field of `PodStatus`, `None` for lists
/// without the `merge` patch strategy.
fn pod_status_merge_key(field: &str) -> Option<&'static str> {
    match field {
        "conditions" => Some("type"),
        "podIPs" | "hostIPs" => Some("ip"),
        "resourceClaimStatuses" => Some("name"),
        _ => None,
    }
}

/// Fields of `PodStatus` (and below) that are Go structs, not pointers: an
/// empty one is the zero value, as absent is (the apiserver returns
/// `"lastState": {}`).
const STRUCT_FIELDS: [&str; 2] = ["state", "lastState"];

/// Drops nulls, empty strings, empty lists and empty struct fields (Go's
/// `omitempty` view, what `apiequality.Semantic.DeepEqual` sees as equal).
pub(crate) fn normalize(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, normalize(v)))
                .filter(|(k, v)| !is_empty(v) && !is_empty_struct(k, v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(normalize).collect()),
        other => other,
    }
}

fn is_empty_struct(key: &str, v: &Value) -> bool {
    STRUCT_FIELDS.contains(&key) && v.as_object().is_some_and(Map::is_empty)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Upstream `diffMaps`: the patch turning `original` into `modified`. Only
/// the top level of `PodStatus` has merge lists (`merge_lists`); nested
/// objects are diffed without them.
fn diff_maps(
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    merge_lists: bool,
) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, new) in modified {
        let Some(old) = original.get(key) else {
            patch.insert(key.clone(), new.clone());
            continue;
        };
        match (old, new) {
            (Value::Object(o), Value::Object(n)) => {
                let sub = diff_maps(o, n, false);
                if !sub.is_empty() {
                    patch.insert(key.clone(), Value::Object(sub));
                }
            }
            (Value::Array(o), Value::Array(n)) => {
                match pod_status_merge_key(key).filter(|_| merge_lists) {
                    Some(merge_key) => diff_merge_list(key, o, n, merge_key, &mut patch),
                    None if o != n => {
                        patch.insert(key.clone(), new.clone());
                    }
                    None => {}
                }
            }
            _ if old != new => {
                patch.insert(key.clone(), new.clone());
            }
            _ => {}
        }
    }
    for key in original.keys() {
        if !modified.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    patch
}

/// The merge key value of a list item as a sort/match key (Go's `%v`).
fn key_of(item: &Value, merge_key: &str) -> String {
    match item.get(merge_key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Upstream `diffLists` + `diffListsOfMaps` for a list of maps with a merge key.
fn diff_merge_list(
    field: &str,
    original: &[Value],
    modified: &[Value],
    merge_key: &str,
    patch: &mut Map<String, Value>,
) {
    if original.is_empty() {
        if !modified.is_empty() {
            patch.insert(field.to_string(), Value::Array(modified.to_vec()));
        }
        return;
    }
    let mut changes = Vec::new();
    let mut deletions = Vec::new();
    for new in modified {
        let key = key_of(new, merge_key);
        match original.iter().find(|o| key_of(o, merge_key) == key) {
            Some(old) => {
                let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
                    if old != new {
                        changes.push(new.clone());
                    }
                    continue;
                };
                let mut sub = diff_maps(o, n, false);
                if !sub.is_empty() {
                    sub.insert(
                        merge_key.to_string(),
                        n.get(merge_key).cloned().unwrap_or(Value::Null),
                    );
                    changes.push(Value::Object(sub));
                }
            }
            None => changes.push(new.clone()),
        }
    }
    for old in original {
        let key = key_of(old, merge_key);
        if !modified.iter().any(|n| key_of(n, merge_key) == key) {
            let mut d = Map::new();
            d.insert("$patch".into(), Value::String("delete".into()));
            d.insert(
                merge_key.to_string(),
                old.get(merge_key).cloned().unwrap_or(Value::Null),
            );
            deletions.push(Value::Object(d));
        }
    }
    let order_same = original.len() == modified.len()
        && original
            .iter()
            .zip(modified)
            .all(|(o, n)| key_of(o, merge_key) == key_of(n, merge_key));
    changes.extend(deletions);
    if changes.is_empty() && order_same {
        return;
    }
    if !changes.is_empty() {
        patch.insert(field.to_string(), Value::Array(changes));
    }
    let order = modified
        .iter()
        .map(|n| {
            let mut m = Map::new();
            m.insert(
                merge_key.to_string(),
                n.get(merge_key).cloned().unwrap_or(Value::Null),
            );
            Value::Object(m)
        })
        .collect();
    patch.insert(format!("$setElementOrder/{field}"), Value::Array(order));
}

fn to_map(status: &ApiPodStatus) -> Result<Map<String, Value>, serde_json::Error> {
    match normalize(serde_json::to_value(status)?) {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// A strategic merge patch for `pods/status` from `old` to `new`, with the
/// pod UID as precondition, and whether nothing but the UID is in it
/// (upstream `preparePatchBytesForPodStatus`).
pub fn pod_status_patch(
    uid: &str,
    old: &ApiPodStatus,
    new: &ApiPodStatus,
) -> Result<(Value, bool), serde_json::Error> {
    let status = diff_maps(&to_map(old)?, &to_map(new)?, true);
    let unchanged = status.is_empty();
    let mut patch = json!({ "metadata": { "uid": uid } });
    if !unchanged && let Value::Object(p) = &mut patch {
        p.insert("status".into(), Value::Object(status));
    }
    Ok((patch, unchanged))
}

/// Applies a patch made by [`pod_status_patch`] to `status` as the
/// apiserver's strategic merge would (for the recording fake and tests).
pub fn apply_pod_status_patch(status: &ApiPodStatus, patch: &Value) -> ApiPodStatus {
    let Some(Value::Object(p)) = patch.get("status") else {
        return status.clone();
    };
    let Ok(Value::Object(mut current)) = serde_json::to_value(status) else {
        return status.clone();
    };
    merge_map(&mut current, p, true);
    serde_json::from_value(Value::Object(current)).unwrap_or_else(|_| status.clone())
}

fn merge_map(current: &mut Map<String, Value>, patch: &Map<String, Value>, merge_lists: bool) {
    for (key, value) in patch {
        if key.starts_with("$setElementOrder/") {
            continue;
        }
        match value {
            Value::Null => {
                current.remove(key);
            }
            Value::Object(p) => match current.get_mut(key) {
                Some(Value::Object(c)) => merge_map(c, p, false),
                _ => {
                    current.insert(key.clone(), value.clone());
                }
            },
            Value::Array(items) => match pod_status_merge_key(key).filter(|_| merge_lists) {
                Some(merge_key) => {
                    let order = patch.get(&format!("$setElementOrder/{key}"));
                    let list = merge_list(current.get(key), items, order, merge_key);
                    current.insert(key.clone(), Value::Array(list));
                }
                None => {
                    current.insert(key.clone(), value.clone());
                }
            },
            other => {
                current.insert(key.clone(), other.clone());
            }
        }
    }
}

fn merge_list(
    current: Option<&Value>,
    items: &[Value],
    order: Option<&Value>,
    merge_key: &str,
) -> Vec<Value> {
    let mut list: Vec<Value> = current
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for item in items {
        let key = key_of(item, merge_key);
        let pos = list.iter().position(|c| key_of(c, merge_key) == key);
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(i) = pos {
                list.remove(i);
            }
            continue;
        }
        match (pos, item.as_object()) {
            (Some(i), Some(p)) => {
                if let Some(Value::Object(c)) = list.get_mut(i) {
                    merge_map(c, p, false);
                }
            }
            _ => list.push(item.clone()),
        }
    }
    if let Some(Value::Array(order)) = order {
        let rank = |v: &Value| {
            order
                .iter()
                .position(|o| key_of(o, merge_key) == key_of(v, merge_key))
                .unwrap_or(usize::MAX)
        };
        list.sort_by_key(rank);
    }
    list
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodIP};

    fn cond(type_: &str, status: &str) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            ..PodCondition::default()
        }
    }

    fn status(conds: &[(&str, &str)]) -> ApiPodStatus {
        ApiPodStatus {
            phase: Some("Running".into()),
            conditions: Some(conds.iter().map(|(t, s)| cond(t, s)).collect()),
            ..ApiPodStatus::default()
        }
    }

    #[test]
    fn unchanged_status_is_only_the_uid() {
        let s = status(&[("Ready", "True")]);
        let (patch, unchanged) = pod_status_patch("u1", &s, &s).unwrap();
        assert!(unchanged);
        assert_eq!(patch, json!({"metadata": {"uid": "u1"}}));
        // Representation differences (None vs empty) are not changes.
        let mut empty = s.clone();
        empty.pod_ips = Some(vec![]);
        empty.message = Some(String::new());
        empty.container_statuses = Some(vec![ContainerStatus {
            name: "c".into(),
            last_state: Some(Default::default()),
            ..ContainerStatus::default()
        }]);
        let mut absent = s.clone();
        absent.container_statuses = Some(vec![ContainerStatus {
            name: "c".into(),
            ..ContainerStatus::default()
        }]);
        assert!(pod_status_patch("u1", &absent, &empty).unwrap().1);
    }

    #[test]
    fn conditions_merge_by_type_with_element_order() {
        let old = status(&[("PodScheduled", "True"), ("Ready", "False")]);
        let new = status(&[("PodScheduled", "True"), ("Ready", "True")]);
        let (patch, unchanged) = pod_status_patch("u1", &old, &new).unwrap();
        assert!(!unchanged);
        assert_eq!(
            patch,
            json!({
                "metadata": {"uid": "u1"},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "$setElementOrder/conditions": [{"type": "PodScheduled"}, {"type": "Ready"}],
                }
            })
        );
        assert_eq!(apply_pod_status_patch(&old, &patch), new);
    }

    #[test]
    fn removed_items_and_fields() {
        let mut old = status(&[("Ready", "True"), ("Initialized", "True")]);
        old.pod_ip = Some("10.0.0.1".into());
        old.pod_ips = Some(vec![PodIP {
            ip: "10.0.0.1".into(),
        }]);
        let new = status(&[("Ready", "True")]);
        let (patch, _) = pod_status_patch("u1", &old, &new).unwrap();
        assert_eq!(
            patch["status"],
            json!({
                "conditions": [{"$patch": "delete", "type": "Initialized"}],
                "$setElementOrder/conditions": [{"type": "Ready"}],
                "podIP": null,
                "podIPs": null,
            })
        );
        assert_eq!(apply_pod_status_patch(&old, &patch), new);
    }

    #[test]
    fn container_statuses_are_replaced_whole() {
        let cs = |name: &str, ready: bool| ContainerStatus {
            name: name.into(),
            ready,
            ..ContainerStatus::default()
        };
        let mut old = status(&[]);
        old.container_statuses = Some(vec![cs("a", false), cs("b", false)]);
        let mut new = old.clone();
        new.container_statuses = Some(vec![cs("a", true), cs("b", false)]);
        let (patch, _) = pod_status_patch("u1", &old, &new).unwrap();
        assert_eq!(
            patch["status"]["containerStatuses"],
            normalize(serde_json::to_value(new.container_statuses.as_ref().unwrap()).unwrap())
        );
        assert_eq!(apply_pod_status_patch(&old, &patch), new);
    }

    #[test]
    fn a_condition_added_by_another_writer_survives() {
        let old = status(&[("Ready", "False")]);
        let new = status(&[("Ready", "True")]);
        let (patch, _) = pod_status_patch("u1", &old, &new).unwrap();
        // Meanwhile a controller added a readiness gate condition.
        let live = status(&[("Ready", "False"), ("example.com/gate", "True")]);
        let merged = apply_pod_status_patch(&live, &patch);
        let types: Vec<_> = merged
            .conditions
            .unwrap()
            .into_iter()
            .map(|c| (c.type_, c.status))
            .collect();
        assert_eq!(
            types,
            [
                ("Ready".to_string(), "True".to_string()),
                ("example.com/gate".into(), "True".into())
            ]
        );
    }
}
