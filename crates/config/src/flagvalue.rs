//! pflag value types as the kubelet registers them (`spf13/pflag`,
//! `k8s.io/component-base/cli/flag`, `pkg/util/flag`): parsing, "first use replaces the
//! default" accumulation, and the `String()` forms shown as defaults in `--help`.

use std::collections::BTreeMap;

use kubelet_apimachinery::{Duration, format_langle_map, parse_langle_map};
use kubelet_features::parse_go_bool;

use crate::flags::{Parsed, VersionRequest};
use crate::types::{MemoryReservation, Taint, TimeOrMetaDuration, VModuleItem};

type Acc<T> = for<'a> fn(&'a mut Parsed) -> &'a mut T;
type Get<T> = for<'a> fn(&'a Parsed) -> &'a T;

/// Where a flag stores its value and how it parses it.
#[derive(Clone, Copy)]
pub(crate) enum Target {
    Bool(Acc<bool>, Get<bool>),
    OptBool(Acc<Option<bool>>, Get<Option<bool>>),
    Str(Acc<String>, Get<String>),
    OptStr(Acc<Option<String>>, Get<Option<String>>),
    Ip(Acc<String>, Get<String>),
    Int32(Acc<i32>, Get<i32>),
    OptInt32(Acc<Option<i32>>, Get<Option<i32>>),
    Int64(Acc<i64>, Get<i64>),
    OptInt64(Acc<Option<i64>>, Get<Option<i64>>),
    Dur(Acc<Duration>, Get<Duration>),
    OptDur(Acc<Option<Duration>>, Get<Option<Duration>>),
    Strings(Acc<Vec<String>>, Get<Vec<String>>),
    OptStrings(Acc<Option<Vec<String>>>, Get<Option<Vec<String>>>),
    /// `MapStringString` (`=`, comma split unless `no_split`).
    MapStr(
        Acc<BTreeMap<String, String>>,
        Get<BTreeMap<String, String>>,
        bool,
    ),
    /// `LangleSeparatedMapStringString` (`<`).
    LangleMap(
        Acc<Option<BTreeMap<String, String>>>,
        Get<Option<BTreeMap<String, String>>>,
    ),
    LangleMapPlain(Acc<BTreeMap<String, String>>, Get<BTreeMap<String, String>>),
    MapBool(Acc<BTreeMap<String, bool>>, Get<BTreeMap<String, bool>>),
    /// `ConfigurationMap` (`--node-labels`): never resets, `k` alone means `k=`.
    ConfMap(Acc<BTreeMap<String, String>>, Get<BTreeMap<String, String>>),
    ColonMultimap(
        Acc<BTreeMap<String, Vec<String>>>,
        Get<BTreeMap<String, Vec<String>>>,
    ),
    ReservedMemory(Acc<Vec<MemoryReservation>>, Get<Vec<MemoryReservation>>),
    Taints(Acc<Vec<Taint>>, Get<Vec<Taint>>),
    Level(Acc<u32>, Get<u32>),
    VModule(Acc<Vec<VModuleItem>>, Get<Vec<VModuleItem>>),
    FlushFreq(Acc<TimeOrMetaDuration>, Get<TimeOrMetaDuration>),
    Quantity(Acc<Option<String>>, Get<Option<String>>),
    Version,
    Help,
    /// A deprecated cAdvisor flag kept for compatibility: value recorded, no effect.
    Cadvisor(&'static str, &'static str),
}

impl Target {
    /// pflag's `Value.Type()`, after `UnquoteUsage`'s renames.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Target::Bool(..) | Target::OptBool(..) | Target::Help => "",
            Target::Str(..) | Target::OptStr(..) => "string",
            Target::Ip(..) => "ip",
            Target::Int32(..) | Target::OptInt32(..) => "int32",
            Target::Int64(..) | Target::OptInt64(..) => "int",
            Target::Dur(..) | Target::OptDur(..) | Target::FlushFreq(..) => "duration",
            Target::Strings(..) | Target::OptStrings(..) => "strings",
            Target::MapStr(..)
            | Target::LangleMap(..)
            | Target::LangleMapPlain(..)
            | Target::ConfMap(..) => "mapStringString",
            Target::MapBool(..) => "mapStringBool",
            Target::ColonMultimap(..) => "colonSeparatedMultimapStringString",
            Target::ReservedMemory(..) => "reserved-memory",
            Target::Taints(..) => "[]v1.Taint",
            Target::Level(..) => "Level",
            Target::VModule(..) => "pattern=N,...",
            Target::Quantity(..) => "quantity",
            Target::Version => "version",
            Target::Cadvisor(_, ty) => ty,
        }
    }

    /// Whether the flag takes no argument unless given with `=` (pflag `NoOptDefVal`).
    pub(crate) fn no_opt_default(self) -> Option<&'static str> {
        match self {
            Target::Bool(..) | Target::OptBool(..) | Target::Help => Some("true"),
            Target::Version => Some("true"),
            Target::Cadvisor(_, "") => Some("true"),
            _ => None,
        }
    }
}

fn go_int(s: &str, bits: u32) -> Result<i64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(h) = lower.strip_prefix("0x") {
        (16, h.to_string())
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b.to_string())
    } else if let Some(o) = lower.strip_prefix("0o") {
        (8, o.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    let syntax = || format!("strconv.ParseInt: parsing {s:?}: invalid syntax");
    if digits.is_empty() || digits.contains('+') || digits.contains('-') {
        return Err(syntax());
    }
    let mag = i128::from_str_radix(&digits.replace('_', ""), radix).map_err(|_| syntax())?;
    let v = if neg { -mag } else { mag };
    let max = (1i128 << (bits - 1)) - 1;
    if v > max || v < -max - 1 {
        return Err(format!(
            "strconv.ParseInt: parsing {s:?}: value out of range"
        ));
    }
    i64::try_from(v).map_err(|_| syntax())
}

pub(crate) fn parse_i32(s: &str) -> Result<i32, String> {
    go_int(s, 32).and_then(|v| i32::try_from(v).map_err(|e| e.to_string()))
}

fn parse_bool(s: &str) -> Result<bool, String> {
    parse_go_bool(s).ok_or_else(|| format!("strconv.ParseBool: parsing {s:?}: invalid syntax"))
}

fn parse_dur(s: &str) -> Result<Duration, String> {
    Duration::parse(s).map_err(|e| e.to_string())
}

/// pflag's `stringSlice` reads its value as one CSV record.
fn csv_fields(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' if cur.is_empty() || quoted => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// `MapStringString.Set`: `k=v` items split on `,` (unless `no_split`), empty items
/// skipped, key and value trimmed.
fn map_pairs(value: &str, no_split: bool) -> Result<Vec<(String, String)>, String> {
    let items: Vec<&str> = if no_split {
        vec![value]
    } else {
        value.split(',').collect()
    };
    let mut out = Vec::new();
    for item in items.into_iter().filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err("malformed pair, expect string=string".to_string());
        };
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// `LangleSeparatedMapStringString.Set`.
fn langle_pairs(value: &str) -> Result<BTreeMap<String, String>, String> {
    parse_langle_map(value).map_err(|e| e.to_string())
}

fn map_bool_pairs(value: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    for item in value.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err("malformed pair, expect string=bool".to_string());
        };
        let (k, v) = (k.trim(), v.trim());
        let b = parse_go_bool(v).ok_or_else(|| {
            format!(
                "invalid value of {k}: {v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax"
            )
        })?;
        out.push((k.to_string(), b));
    }
    Ok(out)
}

/// Sets `value` on the target. `first` is true on the flag's first use in this parse
/// (pflag list/map values replace their default then, and accumulate afterwards).
pub(crate) fn set(t: Target, p: &mut Parsed, value: &str, first: bool) -> Result<(), String> {
    match t {
        Target::Bool(a, _) => *a(p) = parse_bool(value)?,
        Target::OptBool(a, _) => *a(p) = Some(parse_bool(value)?),
        Target::Str(a, _) => *a(p) = value.to_string(),
        Target::OptStr(a, _) => *a(p) = Some(value.to_string()),
        Target::Ip(a, _) => {
            if value.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{value:?} is not a valid IP address"));
            }
            *a(p) = value.to_string();
        }
        Target::Int32(a, _) => *a(p) = parse_i32(value)?,
        Target::OptInt32(a, _) => *a(p) = Some(parse_i32(value)?),
        Target::Int64(a, _) => *a(p) = go_int(value, 64)?,
        Target::OptInt64(a, _) => *a(p) = Some(go_int(value, 64)?),
        Target::Dur(a, _) => *a(p) = parse_dur(value)?,
        Target::OptDur(a, _) => *a(p) = Some(parse_dur(value)?),
        Target::Strings(a, _) => set_strings(a(p), value, first),
        Target::OptStrings(a, _) => set_strings(a(p).get_or_insert_with(Vec::new), value, first),
        Target::MapStr(a, _, no_split) => set_map(a(p), map_pairs(value, no_split)?, first),
        Target::LangleMap(a, _) => set_map(
            a(p).get_or_insert_with(BTreeMap::new),
            langle_pairs(value)?,
            first,
        ),
        Target::LangleMapPlain(a, _) => set_map(a(p), langle_pairs(value)?, first),
        Target::MapBool(a, _) => set_map(a(p), map_bool_pairs(value)?, first),
        Target::ConfMap(a, _) => set_conf_map(a(p), value),
        Target::ColonMultimap(a, _) => set_multimap(a(p), value, first)?,
        Target::ReservedMemory(a, _) => {
            crate::flagparse_extra::set_reserved_memory(a(p), value, first)?
        }
        Target::Taints(a, _) => *a(p) = crate::flagparse_extra::parse_taints(value)?,
        Target::Level(a, _) => {
            *a(p) = u32::try_from(go_int(value, 64)?)
                .map_err(|_| format!("strconv.ParseUint: parsing {value:?}: invalid syntax"))?
        }
        Target::VModule(a, _) => *a(p) = crate::flagparse_extra::parse_vmodule(value)?,
        Target::FlushFreq(a, _) => {
            *a(p) = TimeOrMetaDuration {
                duration: parse_dur(value)?,
                serialize_as_string: true,
            }
        }
        Target::Quantity(a, _) => *a(p) = Some(value.to_string()),
        Target::Version => parse_version(value, &mut p.global)?,
        Target::Help => p.global.help = parse_bool(value)?,
        Target::Cadvisor(name, ty) => {
            match ty {
                "" => {
                    parse_bool(value)?;
                }
                "duration" => {
                    let d = parse_dur(value)?;
                    if name == "housekeeping-interval" {
                        p.global.housekeeping_interval = Some(d);
                    }
                }
                "int" => {
                    go_int(value, 64)?;
                }
                _ => {}
            }
            p.global
                .cadvisor
                .insert(name.to_string(), value.to_string());
        }
    }
    Ok(())
}

/// `verflag.versionValue.Set`: `raw`, a dynamic version `v…`, or a Go bool.
fn parse_version(value: &str, g: &mut crate::flags::GlobalFlags) -> Result<(), String> {
    g.version = if value == "raw" {
        VersionRequest::Raw
    } else if value.starts_with('v') {
        crate::version::validate_dynamic_version(value)?;
        g.dynamic_version = Some(value.to_string());
        // Neither `true` nor `raw`: nothing is printed.
        VersionRequest::NotSet
    } else if parse_bool(value)? {
        VersionRequest::Print
    } else {
        VersionRequest::NotSet
    };
    Ok(())
}

fn set_strings(v: &mut Vec<String>, value: &str, first: bool) {
    let fields = csv_fields(value);
    if first {
        *v = fields;
    } else {
        v.extend(fields);
    }
}

fn set_map<V>(
    m: &mut BTreeMap<String, V>,
    pairs: impl IntoIterator<Item = (String, V)>,
    first: bool,
) {
    if first {
        m.clear();
    }
    m.extend(pairs);
}

fn set_conf_map(m: &mut BTreeMap<String, String>, value: &str) {
    for item in value.split(',').filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) => m.insert(k.trim().to_string(), v.trim().to_string()),
            None => m.insert(item.trim().to_string(), String::new()),
        };
    }
}

fn set_multimap(
    m: &mut BTreeMap<String, Vec<String>>,
    value: &str,
    first: bool,
) -> Result<(), String> {
    if first {
        m.clear();
    }
    for item in value.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (k, v) = item
            .split_once(':')
            .ok_or("malformed pair, expect string:string")?;
        m.entry(k.trim().to_string())
            .or_default()
            .push(v.trim().to_string());
    }
    Ok(())
}

/// The flag's current value as pflag's `Value.String()` renders it (the `--help` default).
pub(crate) fn render(t: Target, p: &Parsed) -> String {
    fn join<I: IntoIterator<Item = String>>(it: I) -> String {
        it.into_iter().collect::<Vec<_>>().join(",")
    }
    match t {
        Target::Bool(_, g) => g(p).to_string(),
        Target::OptBool(_, g) => g(p).unwrap_or(false).to_string(),
        Target::Str(_, g) | Target::Ip(_, g) => g(p).clone(),
        Target::OptStr(_, g) => g(p).clone().unwrap_or_default(),
        Target::Int32(_, g) => g(p).to_string(),
        Target::OptInt32(_, g) => g(p).unwrap_or(0).to_string(),
        Target::Int64(_, g) => g(p).to_string(),
        Target::OptInt64(_, g) => g(p).unwrap_or(0).to_string(),
        Target::Dur(_, g) => g(p).to_string(),
        Target::OptDur(_, g) => g(p).unwrap_or_default().to_string(),
        Target::FlushFreq(_, g) => g(p).duration.to_string(),
        Target::Strings(_, g) => format!("[{}]", g(p).join(",")),
        Target::OptStrings(_, g) => format!("[{}]", g(p).clone().unwrap_or_default().join(",")),
        Target::MapStr(_, g, _) | Target::ConfMap(_, g) => {
            join(g(p).iter().map(|(k, v)| format!("{k}={v}")))
        }
        Target::LangleMap(_, g) => g(p).as_ref().map(format_langle_map).unwrap_or_default(),
        Target::LangleMapPlain(_, g) => format_langle_map(g(p)),
        Target::MapBool(_, g) => join(g(p).iter().map(|(k, v)| format!("{k}={v}"))),
        Target::ColonMultimap(_, g) => join(
            g(p).iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{k}:{v}"))),
        ),
        Target::ReservedMemory(_, g) => crate::flagparse_extra::format_reserved_memory(g(p)),
        Target::Taints(_, g) => crate::flagparse_extra::format_taints(g(p)),
        Target::Level(_, g) => g(p).to_string(),
        Target::VModule(_, g) => join(
            g(p).iter()
                .map(|i| format!("{}={}", i.file_pattern, i.verbosity)),
        ),
        Target::Quantity(_, g) => g(p).clone().unwrap_or_else(|| "0".to_string()),
        Target::Version => "false".to_string(),
        Target::Help => "false".to_string(),
        Target::Cadvisor(name, _) => crate::flag_table::cadvisor_default(name).to_string(),
    }
}
