//! The systemd cgroup driver's unit properties (upstream
//! `pkg/kubelet/cm/cgroup_manager_linux.go` `libctCgroupConfig`/`toResources`, and
//! `github.com/opencontainers/cgroups/systemd` v0.0.3: `v1.go` `Apply` and
//! `genV1ResourcesProperties`, `v2.go` `Apply`, `genV2ResourcesProperties` and
//! `unifiedResToSystemdProps`). Every cgroup of the kubelet with this driver is a slice
//! unit: created by `StartTransientUnit` with [`apply_properties`], its resources set by
//! `SetUnitProperties` with [`resources_properties`] before the cgroupfs files are
//! written, stopped by `StopUnit` before its directories are removed.

use std::collections::BTreeMap;

use kubelet_systemd::{PropValue, Property, Systemd, SystemdError, prop};

use crate::cgroup_manager::{ResourceConfig, cpu_shares_to_cpu_weight};
use crate::cgroups::{CgroupName, CgroupVersion};

/// `libctCgroupConfig` for systemd: the unit (the last slice of the systemd form) and its
/// parent slice (`-.slice` for a top-level one): `["kubepods", "burstable", "pod1"]` →
/// (`kubepods-burstable-pod1.slice`, `kubepods-burstable.slice`).
pub fn unit_and_parent(name: &CgroupName) -> (String, String) {
    let full = name.to_systemd();
    let (dir, base) = match full.rfind('/') {
        Some(i) => (&full[..=i], &full[i + 1..]),
        None => ("", full.as_str()),
    };
    let parent = if dir == "/" {
        "-.slice".to_string()
    } else {
        dir.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    (base.to_string(), parent)
}

/// libcontainer `Apply(-1)`'s properties for a slice: `Description`, `Wants=` the parent,
/// accounting on (v1 `BlockIOAccounting`, v2 `IOAccounting`), `DefaultDependencies=no`.
pub fn apply_properties(version: CgroupVersion, unit: &str, parent: &str) -> Vec<Property> {
    let io = match version {
        CgroupVersion::V1 => "BlockIOAccounting",
        CgroupVersion::V2 => "IOAccounting",
    };
    vec![
        prop(
            "Description",
            PropValue::Str(format!("libcontainer container {unit}")),
        ),
        prop("Wants", PropValue::StrList(vec![parent.to_string()])),
        prop("MemoryAccounting", PropValue::Bool(true)),
        prop("CPUAccounting", PropValue::Bool(true)),
        prop(io, PropValue::Bool(true)),
        prop("TasksAccounting", PropValue::Bool(true)),
        prop("DefaultDependencies", PropValue::Bool(false)),
    ]
}

/// Go's `uint64(v)` of an `int64`.
fn go_u64(v: i64) -> u64 {
    v as u64
}

/// `genV1ResourcesProperties` / `genV2ResourcesProperties` of the libcontainer resources
/// the kubelet's `toResources` makes of `r` (a value left `None` is libcontainer's 0;
/// v2 has `getCPUWeight` of the shares and the unified files only there). The returned
/// config is `r` with the CFS quota as `addCPUQuota` rounded it, for the cgroupfs files.
pub fn resources_properties(
    sd: &Systemd,
    version: CgroupVersion,
    r: &ResourceConfig,
) -> Result<(Vec<Property>, ResourceConfig), SystemdError> {
    let mut out = r.clone();
    let memory = r.memory.unwrap_or(0);
    let mut quota = r.cpu_quota.unwrap_or(0);
    let period = r.cpu_period.unwrap_or(0);
    let pids = r.pids_limit.unwrap_or(0);
    let cpus = r.cpuset_cpus.clone().unwrap_or_default();
    let mut p = Vec::new();
    match version {
        CgroupVersion::V1 => {
            if memory != 0 {
                p.push(prop("MemoryLimit", PropValue::U64(go_u64(memory))));
            }
            if let Some(shares) = r.cpu_shares.filter(|s| *s != 0) {
                p.push(prop("CPUShares", PropValue::U64(shares)));
            }
            sd.add_cpu_quota(&mut p, &mut quota, period);
        }
        CgroupVersion::V2 => {
            if memory != 0 {
                p.push(prop("MemoryMax", PropValue::U64(go_u64(memory))));
            }
            // ConvertMemorySwapToCgroupV2Value(0, memory): only unlimited memory gives a
            // swap value (unlimited too).
            if memory == -1 {
                p.push(prop("MemorySwapMax", PropValue::U64(u64::MAX)));
            }
            if let Some(shares) = r.cpu_shares {
                let weight = cpu_shares_to_cpu_weight(shares);
                if weight != 0 {
                    p.push(prop("CPUWeight", PropValue::U64(weight)));
                }
            }
            sd.add_cpu_quota(&mut p, &mut quota, period);
        }
    }
    if pids > 0 || pids == -1 {
        p.push(prop("TasksMax", PropValue::U64(go_u64(pids))));
    }
    sd.add_cpuset(&mut p, &cpus, "")?;
    if version == CgroupVersion::V2 && !r.unified.is_empty() {
        p.extend(unified_res_to_systemd_props(sd, &r.unified)?);
    }
    if r.cpu_quota.is_some() {
        out.cpu_quota = Some(quota);
    }
    Ok((p, out))
}

/// libcontainer `unifiedResToSystemdProps`: the unified files systemd has a property for
/// (`memory.min` → `MemoryMin`, …); others are only written to cgroupfs. In key order
/// (Go walks its map in random order).
pub fn unified_res_to_systemd_props(
    sd: &Systemd,
    res: &BTreeMap<String, String>,
) -> Result<Vec<Property>, SystemdError> {
    let bad = |m: String| SystemdError::Libcontainer(m);
    let mut p = Vec::new();
    for (k, v) in res {
        if k.contains('/') {
            return Err(bad(format!(
                "unified resource {k:?} must be a file name (no slashes)"
            )));
        }
        if k.find('.').is_none_or(|i| i == 0) {
            return Err(bad(format!(
                "unified resource {k:?} must be in the form CONTROLLER.PARAMETER"
            )));
        }
        let v = v.trim();
        let num = |v: &str| -> Result<u64, SystemdError> {
            if v == "max" {
                return Ok(u64::MAX);
            }
            v.parse::<u64>().map_err(|e| {
                bad(format!(
                    "unified resource {k:?} value conversion error: strconv.ParseUint: parsing {v:?}: {e}"
                ))
            })
        };
        match k.as_str() {
            "cpu.idle" => {
                if v == "1" && sd.systemd_version() >= 252 {
                    p.push(prop("CPUWeight", PropValue::U64(0)));
                }
            }
            "cpu.max" => {
                let f: Vec<&str> = v.split_whitespace().collect();
                if f.is_empty() || f.len() > 2 {
                    return Err(bad(format!("unified resource {k:?} value invalid: {v:?}")));
                }
                let mut quota = match f[0] {
                    "max" => 0,
                    q => q.parse::<i64>().map_err(|e| {
                        bad(format!(
                            "unified resource {k:?} period value conversion error: {e}"
                        ))
                    })?,
                };
                let period = match f.get(1) {
                    Some(s) => s.parse::<u64>().map_err(|e| {
                        bad(format!(
                            "unified resource {k:?} quota value conversion error: {e}"
                        ))
                    })?,
                    None => kubelet_systemd::DEF_CPU_QUOTA_PERIOD,
                };
                sd.add_cpu_quota(&mut p, &mut quota, period);
            }
            "cpu.weight" => {
                let idle = res.get("cpu.idle").map(|s| s.trim());
                if idle == Some("1") && sd.systemd_version() >= 252 {
                    tracing::warn!(
                        "unable to apply both cpu.weight and cpu.idle to systemd, ignoring cpu.weight"
                    );
                    continue;
                }
                let n = v.parse::<u64>().map_err(|e| {
                    bad(format!(
                        "unified resource {k:?} value conversion error: {e}"
                    ))
                })?;
                p.push(prop("CPUWeight", PropValue::U64(n)));
            }
            "cpuset.cpus" | "cpuset.mems" => {
                let bits = kubelet_systemd::range_to_bits(v).map_err(|e| {
                    bad(format!(
                        "unified resource {k:?}={v:?} conversion error: {e}"
                    ))
                })?;
                let name = if k == "cpuset.cpus" {
                    "AllowedCPUs"
                } else {
                    "AllowedMemoryNodes"
                };
                if sd.systemd_version() >= 244 {
                    p.push(prop(name, PropValue::Bytes(bits)));
                }
            }
            "memory.high" | "memory.low" | "memory.min" | "memory.max" | "memory.swap.max" => {
                let name = match k.as_str() {
                    "memory.high" => "MemoryHigh",
                    "memory.low" => "MemoryLow",
                    "memory.min" => "MemoryMin",
                    "memory.max" => "MemoryMax",
                    _ => "MemorySwapMax",
                };
                p.push(prop(name, PropValue::U64(num(v)?)));
            }
            "pids.max" => p.push(prop("TasksMax", PropValue::U64(num(v)?))),
            _ => tracing::debug!(
                "don't know how to convert unified resource {k:?}={v:?} to systemd unit property; skipping (will still be applied to cgroupfs)"
            ),
        }
    }
    Ok(p)
}

/// Go's `%+v` of a property list, for upstream's `unable to start unit` message.
pub fn go_properties(props: &[Property]) -> String {
    let one = |p: &Property| {
        let v = match &p.value {
            PropValue::Bool(b) => b.to_string(),
            PropValue::Str(s) => format!("{s:?}"),
            PropValue::StrList(l) => format!("{l:?}"),
            PropValue::U64(n) => format!("@t {n}"),
            PropValue::Bytes(b) => format!("@ay {b:?}"),
        };
        format!("{{Name:{} Value:{v}}}", p.name)
    };
    format!("[{}]", props.iter().map(one).collect::<Vec<_>>().join(" "))
}

/// A recording fake systemd for the tests of the systemd driver.
#[cfg(test)]
pub(crate) fn test_systemd() -> (
    std::sync::Arc<kubelet_systemd::FakeSystemdManager>,
    Option<std::sync::Arc<Systemd>>,
) {
    let fake = std::sync::Arc::new(kubelet_systemd::FakeSystemdManager::default());
    let sd = std::sync::Arc::new(Systemd::new(fake.clone()));
    (fake, Some(sd))
}

#[cfg(test)]
#[path = "systemd_cgroups_tests.rs"]
mod tests;
