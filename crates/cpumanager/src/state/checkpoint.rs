//! The `cpu_manager_state` file format, byte-compatible with upstream's
//! `CPUManagerCheckpoint` (V2) and readable from the V1 layout.
//!
//! Upstream's checksum (`checkpointmanager/checksum`) is FNV-1a (32 bit, widened
//! to `uint64`) of `dump.ForHash(checkpoint)` with the checksum field zeroed: go-spew's
//! `%#v` with sorted keys, e.g.
//! `(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)1-3
//! Entries:(map[string]map[string]string)map[pod:map[c:4-6]] Checksum:(checksum.Checksum)0}`
//! (one line). The V1 layout (`entries` keyed by container id) hashes its own type
//! with `CPUManagerCheckpointV1` renamed to `CPUManagerCheckpoint`. The file is Go's
//! `json.Marshal`: fields in declaration order, map keys sorted, `entries` left out
//! when empty, `<`, `>`, `&`, U+2028 and U+2029 escaped. Reading follows
//! `json.Unmarshal`: field names match case-insensitively, unknown fields are ignored.
//! A checksum of 0 is accepted without verification (upstream: old file backend).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

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

/// The V2 checkpoint (upstream `CPUManagerCheckpoint`): pod UID → container name → cpuset text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CPUManagerCheckpoint {
    /// `policyName`.
    pub policy_name: String,
    /// `defaultCpuSet`.
    pub default_cpu_set: String,
    /// `entries`.
    pub entries: BTreeMap<String, BTreeMap<String, String>>,
    /// `checksum`.
    pub checksum: u64,
}

/// The V1 checkpoint (upstream `CPUManagerCheckpointV1`): container id → cpuset text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CPUManagerCheckpointV1 {
    pub(crate) policy_name: String,
    pub(crate) default_cpu_set: String,
    pub(crate) entries: BTreeMap<String, String>,
    pub(crate) checksum: u64,
}

fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

fn spew_map<'a>(out: &mut String, entries: impl Iterator<Item = (&'a String, String)>) {
    out.push_str("map[");
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{k}:{v}");
    }
    out.push(']');
}

fn spew_checkpoint(policy: &str, default: &str, entries_type: &str, entries: &str) -> String {
    format!(
        "(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default} Entries:({entries_type}){entries} Checksum:(checksum.Checksum)0}}"
    )
}

/// Go's `json.Marshal` escapes these; serde_json does not. They only occur inside strings.
fn go_json_escape(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The object's fields, matched as `json.Unmarshal` does: an exact name first,
/// otherwise case-insensitively; the last matching key wins.
fn field<'a>(obj: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .next_back()
    })
}

fn type_error(value: &Value, field: &str, go_type: &str) -> CheckpointError {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    CheckpointError::Json(format!(
        "json: cannot unmarshal {kind} into Go struct field CPUManagerCheckpoint.{field} of type {go_type}"
    ))
}

fn string_field(
    obj: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<String, CheckpointError> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(type_error(v, name, "string")),
    }
}

fn parse_object(blob: &[u8]) -> Result<serde_json::Map<String, Value>, CheckpointError> {
    let value: Value = serde_json::from_slice(blob).map_err(|e| {
        CheckpointError::Json(if e.is_eof() {
            "unexpected end of JSON input".to_owned()
        } else {
            e.to_string()
        })
    })?;
    match value {
        Value::Object(obj) => Ok(obj),
        other => Err(CheckpointError::Json(format!(
            "json: cannot unmarshal {} into Go value of type state.CPUManagerCheckpoint",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "null",
            }
        ))),
    }
}

fn checksum_field(obj: &serde_json::Map<String, Value>) -> Result<u64, CheckpointError> {
    match field(obj, "checksum") {
        None | Some(Value::Null) => Ok(0),
        Some(v @ Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| type_error(v, "checksum", "checksum.Checksum")),
        Some(v) => Err(type_error(v, "checksum", "checksum.Checksum")),
    }
}

fn string_map(
    value: &Value,
    field: &str,
    go_type: &str,
) -> Result<BTreeMap<String, String>, CheckpointError> {
    match value {
        Value::Null => Ok(BTreeMap::new()),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(type_error(other, field, go_type)),
            })
            .collect(),
        other => Err(type_error(other, field, go_type)),
    }
}

impl CPUManagerCheckpoint {
    /// A checkpoint of this state; the checksum is set by [`marshal`](Self::marshal).
    pub fn new(
        policy_name: &str,
        default_cpu_set: &str,
        entries: BTreeMap<String, BTreeMap<String, String>>,
    ) -> CPUManagerCheckpoint {
        CPUManagerCheckpoint {
            policy_name: policy_name.to_owned(),
            default_cpu_set: default_cpu_set.to_owned(),
            entries,
            checksum: 0,
        }
    }

    /// Upstream's checksum of this checkpoint (its own checksum field zeroed).
    pub fn compute_checksum(&self) -> u64 {
        let mut entries = String::new();
        spew_map(
            &mut entries,
            self.entries.iter().map(|(pod, containers)| {
                let mut inner = String::new();
                spew_map(&mut inner, containers.iter().map(|(c, v)| (c, v.clone())));
                (pod, inner)
            }),
        );
        let obj = spew_checkpoint(
            &self.policy_name,
            &self.default_cpu_set,
            "map[string]map[string]string",
            &entries,
        );
        u64::from(fnv1a32(obj.as_bytes()))
    }

    /// `MarshalCheckpoint`: sets the checksum and returns the JSON bytes as Go writes them.
    pub fn marshal(&mut self) -> Vec<u8> {
        self.checksum = self.compute_checksum();
        let mut obj = serde_json::Map::new();
        obj.insert("policyName".into(), Value::String(self.policy_name.clone()));
        obj.insert(
            "defaultCpuSet".into(),
            Value::String(self.default_cpu_set.clone()),
        );
        if !self.entries.is_empty() {
            let entries = self
                .entries
                .iter()
                .map(|(pod, containers)| {
                    let inner = containers
                        .iter()
                        .map(|(c, v)| (c.clone(), Value::String(v.clone())))
                        .collect();
                    (pod.clone(), Value::Object(inner))
                })
                .collect();
            obj.insert("entries".into(), Value::Object(entries));
        }
        obj.insert("checksum".into(), Value::from(self.checksum));
        go_json_escape(&Value::Object(obj).to_string()).into_bytes()
    }

    /// `UnmarshalCheckpoint` then `VerifyChecksum`.
    pub fn unmarshal(blob: &[u8]) -> Result<CPUManagerCheckpoint, CheckpointError> {
        let obj = parse_object(blob)?;
        let mut entries = BTreeMap::new();
        match field(&obj, "entries") {
            None | Some(Value::Null) => {}
            Some(Value::Object(pods)) => {
                for (pod, containers) in pods {
                    entries.insert(
                        pod.clone(),
                        string_map(containers, "entries", "map[string]string")?,
                    );
                }
            }
            Some(v) => return Err(type_error(v, "entries", "map[string]map[string]string")),
        }
        let cp = CPUManagerCheckpoint {
            policy_name: string_field(&obj, "policyName")?,
            default_cpu_set: string_field(&obj, "defaultCpuSet")?,
            entries,
            checksum: checksum_field(&obj)?,
        };
        cp.verify_checksum()?;
        Ok(cp)
    }

    /// `VerifyChecksum` (0: accepted).
    pub fn verify_checksum(&self) -> Result<(), CheckpointError> {
        if self.checksum == 0 {
            return Ok(());
        }
        let actual = self.compute_checksum();
        if actual != self.checksum {
            return Err(CheckpointError::Corrupt {
                actual,
                expected: self.checksum,
            });
        }
        Ok(())
    }
}

impl CPUManagerCheckpointV1 {
    pub(crate) fn compute_checksum(&self) -> u64 {
        let mut entries = String::new();
        spew_map(
            &mut entries,
            self.entries.iter().map(|(k, v)| (k, v.clone())),
        );
        let obj = spew_checkpoint(
            &self.policy_name,
            &self.default_cpu_set,
            "map[string]string",
            &entries,
        );
        u64::from(fnv1a32(obj.as_bytes()))
    }

    /// `UnmarshalCheckpoint` then `VerifyChecksum` of the V1 layout.
    pub(crate) fn unmarshal(blob: &[u8]) -> Result<CPUManagerCheckpointV1, CheckpointError> {
        let obj = parse_object(blob)?;
        let entries = match field(&obj, "entries") {
            None => BTreeMap::new(),
            Some(v) => string_map(v, "entries", "string")?,
        };
        let cp = CPUManagerCheckpointV1 {
            policy_name: string_field(&obj, "policyName")?,
            default_cpu_set: string_field(&obj, "defaultCpuSet")?,
            entries,
            checksum: checksum_field(&obj)?,
        };
        if cp.checksum != 0 {
            let actual = cp.compute_checksum();
            if actual != cp.checksum {
                return Err(CheckpointError::Corrupt {
                    actual,
                    expected: cp.checksum,
                });
            }
        }
        Ok(cp)
    }

    #[cfg(test)]
    pub(crate) fn marshal(&mut self) -> Vec<u8> {
        self.checksum = self.compute_checksum();
        let mut obj = serde_json::Map::new();
        obj.insert("policyName".into(), Value::String(self.policy_name.clone()));
        obj.insert(
            "defaultCpuSet".into(),
            Value::String(self.default_cpu_set.clone()),
        );
        if !self.entries.is_empty() {
            let entries = self
                .entries
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            obj.insert("entries".into(), Value::Object(entries));
        }
        obj.insert("checksum".into(), Value::from(self.checksum));
        go_json_escape(&Value::Object(obj).to_string()).into_bytes()
    }
}
