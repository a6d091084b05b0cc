//! The kubelet's own flag value types: `ReservedMemoryVar` and `RegisterWithTaintsVar`
//! (`pkg/util/flag/flags.go`; taint parsing is `kubelet_apimachinery::parse_taints`) and klog's `--vmodule`
//! (`component-base/logs/api/v1` `VModuleConfiguration.Set`).

use std::collections::BTreeMap;

use kubelet_apimachinery::{Quantity, TaintEffect, parse_taints_flag};

use crate::types::{MemoryReservation, Taint, VModuleItem};

/// `ReservedMemoryVar.Set`: `node:type=qty[,type=qty...]` reservations, several per value
/// when separated by `;`. The first use replaces the default, later uses append.
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
        v.push(parse_reservation(reservation)?);
    }
    Ok(())
}

fn parse_reservation(reservation: &str) -> Result<MemoryReservation, String> {
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
        let q = Quantity::parse(qty).map_err(|_| {
            format!("failed to parse the quantatity, expected quantatity, got {qty}")
        })?;
        limits.insert((*name).to_string(), q);
    }
    Ok(MemoryReservation { numa_node, limits })
}

/// `ReservedMemoryVar.String`: `node:type=qty,...` per reservation, each part sorted.
pub(crate) fn format_reserved_memory(v: &[MemoryReservation]) -> String {
    let mut slices: Vec<String> = v
        .iter()
        .map(|r| {
            let limits: Vec<String> = r.limits.iter().map(|(k, q)| format!("{k}={q}")).collect();
            format!("{}:{}", r.numa_node, limits.join(","))
        })
        .collect();
    slices.sort();
    slices.join(",")
}

/// `RegisterWithTaintsVar.Set` (`pkg/util/flag/flags.go`), into the config's `v1.Taint`.
pub(crate) fn parse_taints(value: &str) -> Result<Vec<Taint>, String> {
    let taints = parse_taints_flag(value).map_err(|e| e.to_string())?;
    Ok(taints
        .into_iter()
        .map(|t| Taint {
            key: t.key,
            value: t.value,
            effect: t.effect.map_or("", TaintEffect::as_str).to_string(),
            time_added: None,
        })
        .collect())
}

/// `RegisterWithTaintsVar.String`: `key=value:effect` joined with commas.
pub(crate) fn format_taints(v: &[Taint]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|t| format!("{}={}:{}", t.key, t.value, t.effect))
        .collect();
    parts.join(",")
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
