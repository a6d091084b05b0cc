//! The kubelet's own flag value types: `ReservedMemoryVar` and `RegisterWithTaintsVar`
//! (`pkg/util/flag/flags.go`, `pkg/util/taints/taints.go`) and klog's `--vmodule`
//! (`component-base/logs/api/v1` `VModuleConfiguration.Set`).

use std::collections::BTreeMap;

use crate::types::{MemoryReservation, Taint, VModuleItem};
use crate::validation::names::{is_qualified_name, is_valid_label_value};

pub(crate) fn set_reserved_memory(
    v: &mut Vec<MemoryReservation>,
    s: &str,
    first: bool,
) -> Result<(), String> {
    if s.is_empty() {
        v.clear();
        return Ok(());
    }
    if first {
        v.clear();
    }
    for reservation in s.split(';') {
        let parts: Vec<&str> = reservation.split(':').collect();
        let [node, types] = parts.as_slice() else {
            return Err(format!(
                "the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got {reservation}"
            ));
        };
        let numa_node: i32 = node.parse().map_err(|_| {
            format!("failed to convert the NUMA node ID, exptected integer, got {node}")
        })?;
        let mut limits = BTreeMap::new();
        for item in types.split(',') {
            let kv: Vec<&str> = item.split('=').collect();
            let [name, qty] = kv.as_slice() else {
                return Err(format!(
                    "the reserved limit has incorrect value, expected type=quantatity, got {item}"
                ));
            };
            if *name != "memory" && !name.starts_with("hugepages-") {
                return Err(format!(
                    "memory type conversion error, unknown type: {name:?}"
                ));
            }
            limits.insert((*name).to_string(), (*qty).to_string());
        }
        v.push(MemoryReservation { numa_node, limits });
    }
    Ok(())
}

fn parse_taint(spec: &str) -> Result<Taint, String> {
    let invalid = || format!("invalid taint spec: {spec}");
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => ((*key).to_string(), String::new(), String::new()),
        [kv, effect] => {
            if !matches!(*effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                return Err(format!(
                    "invalid taint effect: {effect}, unsupported taint effect"
                ));
            }
            let kv: Vec<&str> = kv.split('=').collect();
            match kv.as_slice() {
                [k] => ((*k).to_string(), String::new(), (*effect).to_string()),
                [k, v] => {
                    let errs = is_valid_label_value(v);
                    if !errs.is_empty() {
                        return Err(format!("invalid taint spec: {spec}, {}", errs.join("; ")));
                    }
                    ((*k).to_string(), (*v).to_string(), (*effect).to_string())
                }
                _ => return Err(invalid()),
            }
        }
        _ => return Err(invalid()),
    };
    let errs = is_qualified_name(&key);
    if !errs.is_empty() {
        return Err(format!("invalid taint spec: {spec}, {}", errs.join("; ")));
    }
    Ok(Taint {
        key,
        value,
        effect,
        time_added: None,
    })
}

/// `RegisterWithTaintsVar.Set`: comma-separated `key[=value]:effect` specs, replacing the list.
pub(crate) fn parse_taints(value: &str) -> Result<Vec<Taint>, String> {
    let mut out: Vec<Taint> = Vec::new();
    for spec in value.split(',') {
        let taint = parse_taint(spec)?;
        if taint.effect.is_empty() {
            return Err(format!("invalid taint spec: {spec}"));
        }
        if out
            .iter()
            .any(|t| t.key == taint.key && t.effect == taint.effect)
        {
            return Err(format!(
                "duplicated taints with the same key and effect: {taint:?}"
            ));
        }
        out.push(taint);
    }
    Ok(out)
}

/// `VModuleConfiguration.Set`: `pattern=N,...`.
pub(crate) fn parse_vmodule(value: &str) -> Result<Vec<VModuleItem>, String> {
    let mut out = Vec::new();
    for pat in value.split(',') {
        if pat.is_empty() {
            continue;
        }
        let Some((pattern, level)) = pat.split_once('=') else {
            return Err(format!("{pat:?} does not have the pattern=N format"));
        };
        let verbosity: u32 = level.parse().map_err(|_| {
            format!(
                "parsing verbosity in {pat:?}: strconv.ParseUint: parsing {level:?}: invalid syntax"
            )
        })?;
        out.push(VModuleItem {
            file_pattern: pattern.to_string(),
            verbosity,
        });
    }
    Ok(out)
}
