//! Pins kubelet-rs to one upstream patch level: its flag table, `--help` text, feature gates
//! and `KubeletConfiguration` fields are compared with `testdata/upstream-kubelet.json`,
//! which `e2e/cluster/cmd/krs-upstream-dump` generates from the upstream kubelet's own code
//! at the version the harness builds (regenerate with `hack/update-upstream-dump.sh`).
//! Every difference fails, naming the flag, gate or field.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use kubelet_features::FeatureGate;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use crate::flag_table::all_flags;
use crate::flags::Parsed;
use crate::flagvalue::render;
use crate::help::{help_text, usage_text};
use crate::{KubeletConfiguration, new_kubelet_configuration};

const DUMP: &str = include_str!("../testdata/upstream-kubelet.json");

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dump {
    module: String,
    version: String,
    flag_usages: String,
    flags: Vec<DumpFlag>,
    feature_gates: Vec<DumpGate>,
    config_fields: Vec<DumpField>,
    config_defaults: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DumpFlag {
    name: String,
    shorthand: String,
    #[serde(rename = "type")]
    ty: String,
    default: String,
    no_opt_default: String,
    usage: String,
    deprecated: String,
    shorthand_deprecated: String,
    hidden: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DumpGate {
    name: String,
    default: bool,
    pre_release: String,
    lock_to_default: bool,
}

#[derive(Deserialize)]
struct DumpField {
    path: String,
}

/// The type name `--help` shows for a pflag type (`pflag.UnquoteUsage`), which is what the
/// flag table records.
fn help_type_name(pflag_type: &str) -> &str {
    match pflag_type {
        "bool" | "boolfunc" => "",
        "func" => "value",
        "float64" => "float",
        "int64" => "int",
        "uint64" => "uint",
        "stringSlice" => "strings",
        "intSlice" => "ints",
        "uintSlice" => "uints",
        "boolSlice" => "bools",
        t => t,
    }
}

/// `ours` and `theirs` around their first difference (usage texts run to kilobytes).
fn excerpt(ours: &str, theirs: &str) -> String {
    let at = ours
        .char_indices()
        .zip(theirs.chars())
        .find(|((_, a), b)| a != b)
        .map_or(ours.len().min(theirs.len()), |((i, _), _)| i);
    let start = ours[..at.min(ours.len())]
        .char_indices()
        .rev()
        .nth(40)
        .map_or(0, |(i, _)| i);
    let window = |s: &str| {
        let tail: String = s
            .get(start..)
            .unwrap_or_default()
            .chars()
            .take(120)
            .collect();
        format!("{}{tail:?}", if start > 0 { "…" } else { "" })
    };
    format!("ours {}, upstream {}", window(ours), window(theirs))
}

fn dump() -> Dump {
    serde_json::from_str(DUMP).unwrap()
}

fn baseline() -> Parsed {
    Parsed {
        flags: Default::default(),
        config: new_kubelet_configuration(),
        global: Default::default(),
    }
}

/// The entries both sides have, by name; a name only one side has is a difference.
fn pair_up<'m, O, T>(
    ours: &'m BTreeMap<&'m str, O>,
    theirs: &'m BTreeMap<&'m str, T>,
    prefix: &str,
    kind: &str,
    diffs: &mut Vec<String>,
) -> Vec<(&'m str, &'m O, &'m T)> {
    for name in ours.keys().filter(|n| !theirs.contains_key(*n)) {
        diffs.push(format!("{prefix}{name}: not a {kind} upstream"));
    }
    let mut both = Vec::new();
    for (name, up) in theirs {
        match ours.get(name) {
            Some(o) => both.push((*name, o, up)),
            None => diffs.push(format!("{prefix}{name}: missing")),
        }
    }
    both
}

/// Fails with every line of `diffs`, under `what`.
fn assert_no_diffs(what: &str, diffs: &[String]) {
    assert!(
        diffs.is_empty(),
        "{} difference(s) from upstream {what} ({}):\n  {}",
        diffs.len(),
        dump().version,
        diffs.join("\n  ")
    );
}

#[test]
fn the_dump_is_of_kubernetes_1_35() {
    let d = dump();
    assert_eq!(d.module, "k8s.io/kubernetes");
    assert!(d.version.starts_with("v1.35."), "{}", d.version);
    assert!(d.flags.len() > 100, "{} flags", d.flags.len());
    assert!(d.feature_gates.len() > 100);
    assert!(d.config_fields.len() > 100);
}

/// The dump is of the version the harness builds (`e2e/cluster/go.mod`): bumping the
/// harness without regenerating the dump fails here.
#[test]
fn the_dump_is_of_the_harness_version() {
    let go_mod = include_str!("../../../e2e/cluster/go.mod");
    let pinned = go_mod
        .lines()
        .find_map(|l| l.trim().strip_prefix("k8s.io/kubernetes "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap();
    assert_eq!(
        dump().version,
        pinned,
        "run hack/update-upstream-dump.sh after changing e2e/cluster/go.mod"
    );
}

#[test]
fn flags_are_upstreams() {
    let d = dump();
    let base = baseline();
    let gates = FeatureGate::new();
    let ours: BTreeMap<&str, _> = all_flags().into_iter().map(|f| (f.name, f)).collect();
    let theirs: BTreeMap<&str, &DumpFlag> = d.flags.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut diffs = Vec::new();
    for (name, def, up) in pair_up(&ours, &theirs, "--", "flag", &mut diffs) {
        let mut check = |what: &str, ours: String, theirs: &str| {
            if ours != theirs {
                diffs.push(format!("--{name} {what}: {}", excerpt(&ours, theirs)));
            }
        };
        check(
            "shorthand",
            def.shorthand.map(String::from).unwrap_or_default(),
            &up.shorthand,
        );
        check(
            "type",
            def.target.type_name().to_string(),
            help_type_name(&up.ty),
        );
        check("default", render(def.target, &base), &up.default);
        check(
            "no-option default",
            def.target.no_opt_default().unwrap_or_default().to_string(),
            &up.no_opt_default,
        );
        check("usage", usage_text(def, &gates), &up.usage);
        check(
            "deprecation",
            def.deprecated.unwrap_or_default().to_string(),
            &up.deprecated,
        );
        check(
            "shorthand deprecation",
            String::new(),
            &up.shorthand_deprecated,
        );
        check("hidden", def.hidden.to_string(), &up.hidden.to_string());
    }
    assert_no_diffs("flags", &diffs);
}

/// `kubelet --help`'s flag section is upstream's, line for line.
#[test]
fn help_flag_section_is_upstreams() {
    let d = dump();
    let text = help_text(&baseline(), &FeatureGate::new());
    let (_, ours) = text.split_once("\nFlags:\n").unwrap();
    let mut diffs = Vec::new();
    let (ours, theirs): (Vec<&str>, Vec<&str>) =
        (ours.lines().collect(), d.flag_usages.lines().collect());
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        if o != t {
            diffs.push(format!(
                "line {}:\n    ours:     {o}\n    upstream: {t}",
                i + 1
            ));
        }
    }
    if ours.len() != theirs.len() {
        diffs.push(format!("{} lines, upstream {}", ours.len(), theirs.len()));
    }
    diffs.truncate(20);
    assert_no_diffs("--help", &diffs);
}

#[test]
fn feature_gates_are_upstreams() {
    let d = dump();
    let ours: BTreeMap<&str, _> = FeatureGate::new()
        .all()
        .into_iter()
        .map(|(name, spec, _)| (name, spec))
        .collect();
    let theirs: BTreeMap<&str, &DumpGate> = d
        .feature_gates
        .iter()
        .map(|g| (g.name.as_str(), g))
        .collect();
    let mut diffs = Vec::new();
    for (name, spec, up) in pair_up(&ours, &theirs, "", "gate", &mut diffs) {
        let ours = (
            spec.default,
            spec.pre_release.to_string(),
            spec.lock_to_default,
        );
        let theirs = (up.default, up.pre_release.clone(), up.lock_to_default);
        if ours != theirs {
            diffs.push(format!(
                "{name}: ours (default, stage, locked) = {ours:?}, upstream {theirs:?}"
            ));
        }
    }
    assert_no_diffs("feature gates", &diffs);
}

#[test]
fn config_fields_are_upstreams() {
    let d = dump();
    let ours = config_field_paths();
    let theirs: BTreeSet<String> = d.config_fields.into_iter().map(|f| f.path).collect();
    let mut diffs: Vec<String> = ours
        .difference(&theirs)
        .map(|p| format!("{p}: not a field upstream"))
        .collect();
    diffs.extend(theirs.difference(&ours).map(|p| format!("{p}: missing")));
    assert_no_diffs("KubeletConfiguration fields", &diffs);
}

/// An empty v1beta1 configuration, defaulted, serialises as upstream's does.
#[test]
fn config_defaults_are_upstreams() {
    let mut kc = KubeletConfiguration::default();
    crate::set_defaults(&mut kc, &FeatureGate::new()).unwrap();
    let ours = serde_json::to_value(&kc).unwrap();
    let mut diffs = Vec::new();
    json_diffs("", &ours, &dump().config_defaults, &mut diffs);
    assert_no_diffs("v1beta1 defaults", &diffs);
}

/// Every path where `ours` and `theirs` differ (a missing key is a difference).
fn json_diffs(
    path: &str,
    ours: &serde_json::Value,
    theirs: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (ours, theirs) {
        (Value::Object(o), Value::Object(t)) => {
            let keys: BTreeSet<&String> = o.keys().chain(t.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (o.get(k), t.get(k)) {
                    (Some(a), Some(b)) => json_diffs(&p, a, b, out),
                    (Some(a), None) => out.push(format!("{p}: ours {a}, upstream omits it")),
                    (None, Some(b)) => out.push(format!("{p}: ours omits it, upstream {b}")),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => out.push(format!("{path}: ours {a}, upstream {b}")),
        _ => {}
    }
}

#[test]
fn the_field_recorder_sees_nested_fields() {
    let paths = config_field_paths();
    for p in [
        "syncFrequency",
        "staticPodURL",
        "authentication.x509.clientCAFile",
        "logging.vmodule[].filePattern",
        "logging.options.json.infoBufferSize",
        "registerWithTaints[].timeAdded",
        "reservedMemory[].limits",
        "tracing.endpoint",
    ] {
        assert!(paths.contains(p), "{p} in {paths:?}");
    }
    assert!(!paths.contains("reservedMemory[].limits{}"));
}

/// The JSON field paths of [`KubeletConfiguration`] as serde sees them, in the dump's
/// notation: nested fields joined by `.`, `[]` after a list and `{}` after a map whose
/// values are structs.
fn config_field_paths() -> BTreeSet<String> {
    let out = RefCell::new(BTreeSet::new());
    KubeletConfiguration::deserialize(Recorder {
        path: String::new(),
        out: &out,
    })
    .unwrap();
    out.into_inner()
}

/// A deserializer that walks a type instead of data: every struct yields all of its fields
/// (recorded under the current path), every list and map one element, every scalar a
/// zero value ("0" for strings, which parses as a duration and as a quantity).
struct Recorder<'a> {
    path: String,
    out: &'a RefCell<BTreeSet<String>>,
}

impl<'a> Recorder<'a> {
    fn at(&self, suffix: &str) -> Recorder<'a> {
        Recorder {
            path: format!("{}{suffix}", self.path),
            out: self.out,
        }
    }
}

type Error = de::value::Error;

macro_rules! scalar {
    ($($method:ident => $visit:ident($value:expr)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.$visit($value)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Recorder<'_> {
    type Error = Error;

    scalar! {
        deserialize_any => visit_str("0"),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('0'),
        deserialize_str => visit_str("0"),
        deserialize_string => visit_str("0"),
        deserialize_bytes => visit_bytes(b""),
        deserialize_byte_buf => visit_bytes(b""),
        deserialize_identifier => visit_str("0"),
    }

    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_seq(One(Some(self.at("[]"))))
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
        self.deserialize_seq(v)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        v: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_map(Fields {
            names: ["0"].iter(),
            values: FieldValues::Map(self.at("{}")),
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let prefix = if self.path.is_empty() {
            String::new()
        } else {
            format!("{}.", self.path)
        };
        for f in fields {
            self.out.borrow_mut().insert(format!("{prefix}{f}"));
        }
        v.visit_map(Fields {
            names: fields.iter(),
            values: FieldValues::Struct(prefix, self.out),
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Error> {
        Err(de::Error::custom(format!(
            "{}: enum {name} is not walked",
            self.path
        )))
    }
}

/// A list of exactly one element.
struct One<'a>(Option<Recorder<'a>>);

impl<'de> de::SeqAccess<'de> for One<'_> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.take().map(|r| seed.deserialize(r)).transpose()
    }
}

enum FieldValues<'a> {
    /// Struct fields: the value of field `f` is walked at `<prefix>f`.
    Struct(String, &'a RefCell<BTreeSet<String>>),
    /// The one value of a map, walked at the map's path + `{}`; recorded only when the
    /// value is a struct (its fields are recorded then, not the `{}` itself).
    Map(Recorder<'a>),
}

/// The entries of a struct (its fields) or of a one-entry map.
struct Fields<'a> {
    names: std::slice::Iter<'static, &'static str>,
    values: FieldValues<'a>,
}

impl<'de> de::MapAccess<'de> for Fields<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.names.as_slice().first() {
            Some(name) => seed.deserialize(name.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let name = self.names.next().copied().unwrap_or_default();
        let r = match &self.values {
            FieldValues::Struct(prefix, out) => Recorder {
                path: format!("{prefix}{name}"),
                out,
            },
            FieldValues::Map(r) => r.at(""),
        };
        seed.deserialize(r)
    }
}
