//! The `memory_manager_state` file format, byte-compatible with upstream's
//! `MemoryManagerCheckpoint`.
//!
//! Upstream's checksum (`checkpointmanager/checksum`) is FNV-1a (32 bit, widened to
//! `uint64`) of `dump.ForHash(checkpoint)` with the checksum field zeroed: go-spew's `%#v`
//! with sorted keys, one line, e.g.
//! `(*state.MemoryManagerCheckpoint){PolicyName:(string)Static MachineState:(state.NUMANodeMap)map[0:<*>{NumberOfAssignments:(int)0 MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[memory:<*>{TotalMemSize:(uint64)2048 …}] Cells:([]int)[0]}] Entries:(state.ContainerMemoryAssignments)map[] Checksum:(checksum.Checksum)0}`.
//! Go's nil maps, slices and pointers print `<nil>` there and `null` in the file; the
//! checkpoint keeps them as read so a file Go wrote verifies whatever it holds
//! (vectors from Go in `testdata/checkpoint-vectors.json`).
//!
//! The file is Go's `json.Marshal`: fields in declaration order, map keys sorted as
//! strings (NUMA node `10` before `2`), `entries` left out when empty, `<`, `>`, `&`,
//! U+2028 and U+2029 escaped. Reading follows `json.Unmarshal` into
//! `NewMemoryManagerCheckpoint()`: field names match case-insensitively, unknown fields
//! are ignored, a missing `machineState` or `entries` is an empty map. The checksum is
//! always verified (unlike the CPU manager's checkpoint, a 0 is not accepted).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::{Block, ContainerMemoryAssignments, MemoryTable, NUMANodeMap, NUMANodeState};

/// An error reading a checkpoint blob.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// Not JSON or the wrong JSON types (Go's `json.Unmarshal` errors, approximately;
    /// a truncated file gives Go's exact "unexpected end of JSON input").
    #[error("{0}")]
    Json(String),
    /// The checksum does not match (upstream `CorruptCheckpointError`).
    #[error("checkpoint is corrupted")]
    Corrupt {
        /// Checksum computed over the content.
        actual: u64,
        /// Checksum stored in the file.
        expected: u64,
    },
}

/// A NUMA node's state as stored (nil-able parts kept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RawNode {
    number_of_assignments: i64,
    memory_map: Option<BTreeMap<String, Option<MemoryTable>>>,
    cells: Option<Vec<i64>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RawBlock {
    numa_affinity: Option<Vec<i64>>,
    type_: String,
    size: u64,
}

type RawEntries = BTreeMap<String, Option<BTreeMap<String, Option<Vec<RawBlock>>>>>;

/// Upstream `MemoryManagerCheckpoint`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryManagerCheckpoint {
    /// `policyName`.
    pub policy_name: String,
    machine_state: Option<BTreeMap<i64, Option<RawNode>>>,
    entries: Option<RawEntries>,
    /// `checksum`.
    pub checksum: u64,
}

fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Go's `json.Marshal` escapes these; serde_json does not. They only occur inside strings.
fn go_json_escape(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn spew_ints(out: &mut String, ints: Option<&Vec<i64>>) {
    match ints {
        None => out.push_str("<nil>"),
        Some(v) => {
            out.push('[');
            for (i, n) in v.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{n}");
            }
            out.push(']');
        }
    }
}

fn spew_table(out: &mut String, t: &MemoryTable) {
    let _ = write!(
        out,
        "<*>{{TotalMemSize:(uint64){} SystemReserved:(uint64){} Allocatable:(uint64){} Reserved:(uint64){} Free:(uint64){}}}",
        t.total_mem_size, t.system_reserved, t.allocatable, t.reserved, t.free
    );
}

fn spew_node(out: &mut String, node: &RawNode) {
    let _ = write!(
        out,
        "<*>{{NumberOfAssignments:(int){} MemoryMap:(map[v1.ResourceName]*state.MemoryTable)",
        node.number_of_assignments
    );
    match &node.memory_map {
        None => out.push_str("<nil>"),
        Some(map) => {
            out.push_str("map[");
            for (i, (name, table)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{name}:");
                match table {
                    None => out.push_str("<nil>"),
                    Some(t) => spew_table(out, t),
                }
            }
            out.push(']');
        }
    }
    out.push_str(" Cells:([]int)");
    spew_ints(out, node.cells.as_ref());
    out.push('}');
}

fn spew_block(out: &mut String, b: &RawBlock) {
    out.push_str("{NUMAAffinity:([]int)");
    spew_ints(out, b.numa_affinity.as_ref());
    let _ = write!(
        out,
        " Type:(v1.ResourceName){} Size:(uint64){}}}",
        b.type_, b.size
    );
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn ints(v: &[usize]) -> Vec<i64> {
    v.iter().map(|n| to_i64(*n)).collect()
}

fn ints_value(v: Option<&Vec<i64>>) -> Value {
    v.map_or(Value::Null, |v| {
        Value::Array(v.iter().map(|n| Value::from(*n)).collect())
    })
}

fn table_value(t: &MemoryTable) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("total".into(), Value::from(t.total_mem_size));
    obj.insert("systemReserved".into(), Value::from(t.system_reserved));
    obj.insert("allocatable".into(), Value::from(t.allocatable));
    obj.insert("reserved".into(), Value::from(t.reserved));
    obj.insert("free".into(), Value::from(t.free));
    Value::Object(obj)
}

// ---- reading (json.Unmarshal) ----

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_error(value: &Value, field: &str, go_type: &str) -> CheckpointError {
    CheckpointError::Json(format!(
        "json: cannot unmarshal {} into Go struct field MemoryManagerCheckpoint.{field} of type {go_type}",
        kind(value)
    ))
}

/// The object's field, matched as `json.Unmarshal` does: an exact name first, otherwise
/// case-insensitively; the last matching key wins.
fn field<'a>(obj: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .next_back()
    })
}

fn object<'a>(
    v: &'a Value,
    path: &str,
    go_type: &str,
) -> Result<Option<&'a serde_json::Map<String, Value>>, CheckpointError> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(type_error(other, path, go_type)),
    }
}

fn uint(
    obj: &serde_json::Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<u64, CheckpointError> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(0),
        Some(v @ Value::Number(n)) => n.as_u64().ok_or_else(|| type_error(v, path, "uint64")),
        Some(v) => Err(type_error(v, path, "uint64")),
    }
}

fn int(
    obj: &serde_json::Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<i64, CheckpointError> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(0),
        Some(v @ Value::Number(n)) => n.as_i64().ok_or_else(|| type_error(v, path, "int")),
        Some(v) => Err(type_error(v, path, "int")),
    }
}

fn int_list(v: Option<&Value>, path: &str) -> Result<Option<Vec<i64>>, CheckpointError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Number(n) => n.as_i64().ok_or_else(|| type_error(i, path, "int")),
                other => Err(type_error(other, path, "int")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(type_error(other, path, "[]int")),
    }
}

fn string(
    obj: &serde_json::Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<String, CheckpointError> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(type_error(v, path, "string")),
    }
}

fn read_table(v: &Value) -> Result<Option<MemoryTable>, CheckpointError> {
    let Some(t) = object(v, "machineState.memoryMap", "state.MemoryTable")? else {
        return Ok(None);
    };
    let p = "machineState.memoryMap";
    Ok(Some(MemoryTable {
        total_mem_size: uint(t, "total", &format!("{p}.total"))?,
        system_reserved: uint(t, "systemReserved", &format!("{p}.systemReserved"))?,
        allocatable: uint(t, "allocatable", &format!("{p}.allocatable"))?,
        reserved: uint(t, "reserved", &format!("{p}.reserved"))?,
        free: uint(t, "free", &format!("{p}.free"))?,
    }))
}

fn read_node(v: &Value) -> Result<Option<RawNode>, CheckpointError> {
    let Some(n) = object(v, "machineState", "state.NUMANodeState")? else {
        return Ok(None);
    };
    let memory_map = match field(n, "memoryMap") {
        None | Some(Value::Null) => None,
        Some(m) => {
            let mut map = BTreeMap::new();
            if let Some(m) = object(
                m,
                "machineState.memoryMap",
                "map[v1.ResourceName]*state.MemoryTable",
            )? {
                for (name, t) in m {
                    map.insert(name.clone(), read_table(t)?);
                }
            }
            Some(map)
        }
    };
    Ok(Some(RawNode {
        number_of_assignments: int(n, "numberOfAssignments", "machineState.numberOfAssignments")?,
        memory_map,
        cells: int_list(field(n, "cells"), "machineState.cells")?,
    }))
}

fn read_block(v: &Value) -> Result<RawBlock, CheckpointError> {
    let Some(b) = object(v, "entries", "state.Block")? else {
        return Ok(RawBlock::default());
    };
    Ok(RawBlock {
        numa_affinity: int_list(field(b, "numaAffinity"), "entries.numaAffinity")?,
        type_: string(b, "type", "entries.type")?,
        size: uint(b, "size", "entries.size")?,
    })
}

fn read_entries(v: &Value) -> Result<Option<RawEntries>, CheckpointError> {
    let Some(pods) = object(v, "entries", "state.ContainerMemoryAssignments")? else {
        return Ok(None);
    };
    let mut entries = RawEntries::new();
    for (pod, containers) in pods {
        let Some(containers) = object(containers, "entries", "map[string][]state.Block")? else {
            entries.insert(pod.clone(), None);
            continue;
        };
        let mut map = BTreeMap::new();
        for (name, blocks) in containers {
            let blocks = match blocks {
                Value::Null => None,
                Value::Array(items) => Some(
                    items
                        .iter()
                        .map(read_block)
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                other => return Err(type_error(other, "entries", "[]state.Block")),
            };
            map.insert(name.clone(), blocks);
        }
        entries.insert(pod.clone(), Some(map));
    }
    Ok(Some(entries))
}

impl MemoryManagerCheckpoint {
    /// A checkpoint of this state (`NewMemoryManagerCheckpoint` filled by `storeState`);
    /// the checksum is set by [`marshal`](Self::marshal).
    pub fn new(
        policy_name: &str,
        machine_state: &NUMANodeMap,
        entries: &ContainerMemoryAssignments,
    ) -> MemoryManagerCheckpoint {
        let machine_state = machine_state
            .iter()
            .map(|(id, node)| {
                let raw = RawNode {
                    number_of_assignments: node.number_of_assignments,
                    memory_map: Some(
                        node.memory_map
                            .iter()
                            .map(|(k, t)| (k.clone(), Some(*t)))
                            .collect(),
                    ),
                    cells: Some(ints(&node.cells)),
                };
                (to_i64(*id), Some(raw))
            })
            .collect();
        let entries = entries
            .iter()
            .map(|(pod, containers)| {
                let containers = containers
                    .iter()
                    .map(|(name, blocks)| {
                        let blocks = blocks
                            .iter()
                            .map(|b| RawBlock {
                                numa_affinity: Some(ints(&b.numa_affinity)),
                                type_: b.type_.clone(),
                                size: b.size,
                            })
                            .collect();
                        (name.clone(), Some(blocks))
                    })
                    .collect();
                (pod.clone(), Some(containers))
            })
            .collect();
        MemoryManagerCheckpoint {
            policy_name: policy_name.to_owned(),
            machine_state: Some(machine_state),
            entries: Some(entries),
            checksum: 0,
        }
    }

    /// Upstream's checksum of this checkpoint (its own checksum field zeroed).
    pub fn compute_checksum(&self) -> u64 {
        u64::from(fnv1a32(self.hash_input().as_bytes()))
    }

    /// `dump.ForHash` of the checkpoint with its checksum zeroed.
    pub fn hash_input(&self) -> String {
        let mut out = format!(
            "(*state.MemoryManagerCheckpoint){{PolicyName:(string){} MachineState:(state.NUMANodeMap)",
            self.policy_name
        );
        match &self.machine_state {
            None => out.push_str("<nil>"),
            Some(nodes) => {
                out.push_str("map[");
                for (i, (id, node)) in nodes.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{id}:");
                    match node {
                        None => out.push_str("<nil>"),
                        Some(n) => spew_node(&mut out, n),
                    }
                }
                out.push(']');
            }
        }
        out.push_str(" Entries:(state.ContainerMemoryAssignments)");
        match &self.entries {
            None => out.push_str("<nil>"),
            Some(pods) => {
                out.push_str("map[");
                for (i, (pod, containers)) in pods.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{pod}:");
                    let Some(containers) = containers else {
                        out.push_str("<nil>");
                        continue;
                    };
                    out.push_str("map[");
                    for (j, (name, blocks)) in containers.iter().enumerate() {
                        if j > 0 {
                            out.push(' ');
                        }
                        let _ = write!(out, "{name}:");
                        let Some(blocks) = blocks else {
                            out.push_str("<nil>");
                            continue;
                        };
                        out.push('[');
                        for (k, b) in blocks.iter().enumerate() {
                            if k > 0 {
                                out.push(' ');
                            }
                            spew_block(&mut out, b);
                        }
                        out.push(']');
                    }
                    out.push(']');
                }
                out.push(']');
            }
        }
        out.push_str(" Checksum:(checksum.Checksum)0}");
        out
    }

    /// `MarshalCheckpoint`: sets the checksum and returns the JSON bytes as Go writes them.
    pub fn marshal(&mut self) -> Vec<u8> {
        self.checksum = self.compute_checksum();
        let mut obj = serde_json::Map::new();
        obj.insert("policyName".into(), Value::String(self.policy_name.clone()));
        let machine_state = match &self.machine_state {
            None => Value::Null,
            Some(nodes) => {
                // encoding/json sorts map keys as strings.
                let mut keyed: Vec<(String, &Option<RawNode>)> =
                    nodes.iter().map(|(id, n)| (id.to_string(), n)).collect();
                keyed.sort_by(|a, b| a.0.cmp(&b.0));
                let mut m = serde_json::Map::new();
                for (id, node) in keyed {
                    let v = match node {
                        None => Value::Null,
                        Some(n) => {
                            let mut o = serde_json::Map::new();
                            o.insert(
                                "numberOfAssignments".into(),
                                Value::from(n.number_of_assignments),
                            );
                            let mm = match &n.memory_map {
                                None => Value::Null,
                                Some(map) => Value::Object(
                                    map.iter()
                                        .map(|(k, t)| {
                                            (k.clone(), t.as_ref().map_or(Value::Null, table_value))
                                        })
                                        .collect(),
                                ),
                            };
                            o.insert("memoryMap".into(), mm);
                            o.insert("cells".into(), ints_value(n.cells.as_ref()));
                            Value::Object(o)
                        }
                    };
                    m.insert(id, v);
                }
                Value::Object(m)
            }
        };
        obj.insert("machineState".into(), machine_state);
        if let Some(pods) = self.entries.as_ref().filter(|e| !e.is_empty()) {
            let mut m = serde_json::Map::new();
            for (pod, containers) in pods {
                let v = match containers {
                    None => Value::Null,
                    Some(containers) => {
                        let mut c = serde_json::Map::new();
                        for (name, blocks) in containers {
                            let v = match blocks {
                                None => Value::Null,
                                Some(blocks) => Value::Array(
                                    blocks
                                        .iter()
                                        .map(|b| {
                                            let mut o = serde_json::Map::new();
                                            o.insert(
                                                "numaAffinity".into(),
                                                ints_value(b.numa_affinity.as_ref()),
                                            );
                                            o.insert("type".into(), Value::String(b.type_.clone()));
                                            o.insert("size".into(), Value::from(b.size));
                                            Value::Object(o)
                                        })
                                        .collect(),
                                ),
                            };
                            c.insert(name.clone(), v);
                        }
                        Value::Object(c)
                    }
                };
                m.insert(pod.clone(), v);
            }
            obj.insert("entries".into(), Value::Object(m));
        }
        obj.insert("checksum".into(), Value::from(self.checksum));
        go_json_escape(&Value::Object(obj).to_string()).into_bytes()
    }

    /// `UnmarshalCheckpoint` (into `NewMemoryManagerCheckpoint()`) then `VerifyChecksum`.
    pub fn unmarshal(blob: &[u8]) -> Result<MemoryManagerCheckpoint, CheckpointError> {
        let value: Value = serde_json::from_slice(blob).map_err(|e| {
            CheckpointError::Json(if e.is_eof() {
                "unexpected end of JSON input".to_owned()
            } else {
                e.to_string()
            })
        })?;
        let obj = match value {
            Value::Object(obj) => obj,
            other => {
                return Err(CheckpointError::Json(format!(
                    "json: cannot unmarshal {} into Go value of type state.MemoryManagerCheckpoint",
                    kind(&other)
                )));
            }
        };
        let machine_state = match field(&obj, "machineState") {
            None => Some(BTreeMap::new()),
            Some(v) => match object(v, "machineState", "state.NUMANodeMap")? {
                None => None,
                Some(nodes) => {
                    let mut map = BTreeMap::new();
                    for (id, node) in nodes {
                        let id: i64 = id.parse().map_err(|_| {
                            CheckpointError::Json(format!(
                                "json: cannot unmarshal number {id} into Go struct field MemoryManagerCheckpoint.machineState of type int"
                            ))
                        })?;
                        map.insert(id, read_node(node)?);
                    }
                    Some(map)
                }
            },
        };
        let entries = match field(&obj, "entries") {
            None => Some(RawEntries::new()),
            Some(v) => read_entries(v)?,
        };
        let checksum = match field(&obj, "checksum") {
            None | Some(Value::Null) => 0,
            Some(v @ Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| type_error(v, "checksum", "checksum.Checksum"))?,
            Some(v) => return Err(type_error(v, "checksum", "checksum.Checksum")),
        };
        let cp = MemoryManagerCheckpoint {
            policy_name: string(&obj, "policyName", "policyName")?,
            machine_state,
            entries,
            checksum,
        };
        cp.verify_checksum()?;
        Ok(cp)
    }

    /// `VerifyChecksum`.
    pub fn verify_checksum(&self) -> Result<(), CheckpointError> {
        let actual = self.compute_checksum();
        if actual != self.checksum {
            return Err(CheckpointError::Corrupt {
                actual,
                expected: self.checksum,
            });
        }
        Ok(())
    }

    /// The machine state (nil nodes, maps and lists read as empty; a negative NUMA node
    /// id, which no machine has, is an error).
    pub fn machine_state(&self) -> Result<NUMANodeMap, CheckpointError> {
        let mut out = NUMANodeMap::new();
        for (id, node) in self.machine_state.iter().flatten() {
            let node = node.clone().unwrap_or_default();
            out.insert(
                node_id(*id)?,
                NUMANodeState {
                    number_of_assignments: node.number_of_assignments,
                    memory_map: node
                        .memory_map
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, t)| (k, t.unwrap_or_default()))
                        .collect(),
                    cells: node_ids(node.cells.as_deref())?,
                },
            );
        }
        Ok(out)
    }

    /// The memory assignments.
    pub fn entries(&self) -> Result<ContainerMemoryAssignments, CheckpointError> {
        let mut out = ContainerMemoryAssignments::new();
        for (pod, containers) in self.entries.iter().flatten() {
            let mut map = BTreeMap::new();
            for (name, blocks) in containers.iter().flatten() {
                let blocks = blocks
                    .iter()
                    .flatten()
                    .map(|b| {
                        Ok(Block {
                            numa_affinity: node_ids(b.numa_affinity.as_deref())?,
                            type_: b.type_.clone(),
                            size: b.size,
                        })
                    })
                    .collect::<Result<Vec<_>, CheckpointError>>()?;
                map.insert(name.clone(), blocks);
            }
            out.insert(pod.clone(), map);
        }
        Ok(out)
    }
}

fn node_id(id: i64) -> Result<usize, CheckpointError> {
    usize::try_from(id).map_err(|_| CheckpointError::Json(format!("invalid NUMA node id {id}")))
}

fn node_ids(ids: Option<&[i64]>) -> Result<Vec<usize>, CheckpointError> {
    ids.unwrap_or_default()
        .iter()
        .map(|id| node_id(*id))
        .collect()
}
