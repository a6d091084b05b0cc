//! Node taints as given by `--register-with-taints` / `registerWithTaints`.
//!
//! Mirrors `pkg/util/taints/taints.go` (`parseTaint`, `ParseTaints`,
//! `CheckTaintValidation`, `validateTaintEffect`) and
//! `pkg/util/flag/flags.go` (`RegisterWithTaintsVar.Set` / `String`, which the
//! 1.35 kubelet registers for `--register-with-taints`).

use std::fmt;

use crate::validation::{is_qualified_name, is_valid_label_value};

/// A taint effect (upstream `v1.TaintEffect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaintEffect {
    /// `NoSchedule`
    NoSchedule,
    /// `PreferNoSchedule`
    PreferNoSchedule,
    /// `NoExecute`
    NoExecute,
}

impl TaintEffect {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }

    /// Upstream `validateTaintEffect`: one of the three effects, case-sensitive.
    pub fn parse(s: &str) -> Result<TaintEffect, TaintError> {
        match s {
            "NoSchedule" => Ok(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Ok(TaintEffect::PreferNoSchedule),
            "NoExecute" => Ok(TaintEffect::NoExecute),
            other => Err(TaintError::Effect(other.to_owned())),
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A taint without `timeAdded` (the kubelet never sets it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    /// A qualified name.
    pub key: String,
    /// A label value; may be empty.
    pub value: String,
    /// `None` only for the bare `<key>` form, which nodes cannot register.
    pub effect: Option<TaintEffect>,
}

/// `key=value:Effect`, the form `RegisterWithTaintsVar.String` prints.
impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let effect = self.effect.map_or("", TaintEffect::as_str);
        write!(f, "{}={}:{}", self.key, self.value, effect)
    }
}

impl Taint {
    /// Go's `%v` of a `v1.Taint` without `timeAdded`: `{key value Effect <nil>}`.
    pub fn go_value(&self) -> String {
        let effect = self.effect.map_or("", TaintEffect::as_str);
        format!("{{{} {} {effect} <nil>}}", self.key, self.value)
    }
}

/// A taint that does not parse or validate; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaintError {
    /// An effect other than the three known ones.
    #[error("invalid taint effect: {0}, unsupported taint effect")]
    Effect(String),
    /// A malformed spec; `detail` holds the joined validation messages, if any.
    #[error("invalid taint spec: {spec}{}", detail_suffix(.detail))]
    Spec {
        /// The spec as written.
        spec: String,
        /// Validation messages joined with "; ", or empty.
        detail: String,
    },
    /// A key that is not a qualified name (CheckTaintValidation).
    #[error("invalid taint key: {0}")]
    Key(String),
    /// A value that is not a label value (CheckTaintValidation).
    #[error("invalid taint value: {0}")]
    Value(String),
    /// Two taints to add with the same key and effect (`ParseTaints`); the
    /// field is the second one as Go's `%v` prints it.
    #[error("duplicated taints with the same key and effect: {0}")]
    Duplicate(String),
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(", {detail}")
    }
}

fn spec_error(spec: &str, errs: &[String]) -> TaintError {
    TaintError::Spec {
        spec: spec.to_owned(),
        detail: errs.join("; "),
    }
}

/// Upstream `parseTaint`: `<key>=<value>:<effect>`, `<key>:<effect>` or `<key>`.
pub fn parse_taint(spec: &str) -> Result<Taint, TaintError> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => (*key, "", None),
        [key_value, effect] => {
            let effect = TaintEffect::parse(effect)?;
            let kv: Vec<&str> = key_value.split('=').collect();
            let (key, value) = match kv.as_slice() {
                [key] => (*key, ""),
                [key, value] => {
                    let errs = is_valid_label_value(value);
                    if !errs.is_empty() {
                        return Err(spec_error(spec, &errs));
                    }
                    (*key, *value)
                }
                _ => return Err(spec_error(spec, &[])),
            };
            (key, value, Some(effect))
        }
        _ => return Err(spec_error(spec, &[])),
    };
    let errs = is_qualified_name(key);
    if !errs.is_empty() {
        return Err(spec_error(spec, &errs));
    }
    Ok(Taint {
        key: key.to_owned(),
        value: value.to_owned(),
        effect,
    })
}

/// Upstream `ParseTaints`: specs ending in `-` are taints to remove (key and
/// optional effect); the others are taints to add, which need an effect and
/// must be unique by key and effect. Returns `(to_add, to_remove)`.
pub fn parse_taints<'a>(
    specs: impl IntoIterator<Item = &'a str>,
) -> Result<(Vec<Taint>, Vec<Taint>), TaintError> {
    let (mut add, mut remove) = (Vec::<Taint>::new(), Vec::new());
    for spec in specs {
        if let Some(removed) = spec.strip_suffix('-') {
            let t = parse_taint(removed)?;
            remove.push(Taint {
                value: String::new(),
                ..t
            });
            continue;
        }
        let t = parse_taint(spec)?;
        if t.effect.is_none() {
            return Err(spec_error(spec, &[]));
        }
        if add.iter().any(|o| o.key == t.key && o.effect == t.effect) {
            return Err(TaintError::Duplicate(t.go_value()));
        }
        add.push(t);
    }
    Ok((add, remove))
}

/// Upstream `RegisterWithTaintsVar.Set` for `--register-with-taints`: "" is no
/// taints, otherwise comma-separated specs read by [`parse_taints`], whose
/// removals (`key-`) are dropped.
pub fn parse_taints_flag(s: &str) -> Result<Vec<Taint>, TaintError> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    parse_taints(s.split(',')).map(|(add, _)| add)
}

/// Upstream `RegisterWithTaintsVar.String`: `key=value:Effect` joined with commas.
pub fn format_taints(taints: &[Taint]) -> String {
    taints
        .iter()
        .map(Taint::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream `CheckTaintValidation` for a taint read from the config file,
/// whose effect is free text there.
pub fn check_taint_validation(key: &str, value: &str, effect: &str) -> Result<(), TaintError> {
    let errs = is_qualified_name(key);
    if !errs.is_empty() {
        return Err(TaintError::Key(errs.join("; ")));
    }
    if !value.is_empty() {
        let errs = is_valid_label_value(value);
        if !errs.is_empty() {
            return Err(TaintError::Value(errs.join("; ")));
        }
    }
    if !effect.is_empty() {
        TaintEffect::parse(effect)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use proptest::prelude::*;

    use super::*;

    fn taint(key: &str, value: &str, effect: Option<TaintEffect>) -> Taint {
        Taint {
            key: key.to_owned(),
            value: value.to_owned(),
            effect,
        }
    }

    #[test]
    fn parse_forms() {
        use TaintEffect::*;
        let table = [
            ("foo=bar:NoSchedule", taint("foo", "bar", Some(NoSchedule))),
            ("foo:NoExecute", taint("foo", "", Some(NoExecute))),
            (
                "foo=:PreferNoSchedule",
                taint("foo", "", Some(PreferNoSchedule)),
            ),
            (
                "node-role.kubernetes.io/control-plane:NoSchedule",
                taint(
                    "node-role.kubernetes.io/control-plane",
                    "",
                    Some(NoSchedule),
                ),
            ),
            ("foo", taint("foo", "", None)),
        ];
        for (spec, want) in table {
            assert_eq!(parse_taint(spec).unwrap(), want, "{spec}");
        }
    }

    #[test]
    fn parse_errors_match_upstream() {
        let table = [
            (
                "foo=bar:NoScheduled",
                "invalid taint effect: NoScheduled, unsupported taint effect",
            ),
            (
                "foo=bar:",
                "invalid taint effect: , unsupported taint effect",
            ),
            (
                "foo=bar=baz:NoSchedule",
                "invalid taint spec: foo=bar=baz:NoSchedule",
            ),
            ("a:b:NoSchedule", "invalid taint spec: a:b:NoSchedule"),
            (
                "=bar:NoSchedule",
                "invalid taint spec: =bar:NoSchedule, name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                "foo=b@r:NoSchedule",
                "invalid taint spec: foo=b@r:NoSchedule, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
        ];
        for (spec, want) in table {
            assert_eq!(parse_taint(spec).unwrap_err().to_string(), want, "{spec}");
        }
    }

    #[test]
    fn flag_round_trip() {
        assert!(parse_taints_flag("").unwrap().is_empty());
        let taints = parse_taints_flag("a=b:NoSchedule,c:NoExecute").unwrap();
        assert_eq!(taints.len(), 2);
        assert_eq!(format_taints(&taints), "a=b:NoSchedule,c=:NoExecute");
        assert_eq!(parse_taints_flag(&format_taints(&taints)).unwrap(), taints);
        assert!(parse_taints_flag("a=b:NoSchedule,").is_err());
    }

    #[test]
    fn parse_taints_splits_additions_and_removals() {
        use TaintEffect::*;
        let (add, remove) =
            parse_taints(["a=b:NoSchedule", "c:NoExecute-", "d-", "a=x:NoExecute"]).unwrap();
        assert_eq!(
            add,
            [
                taint("a", "b", Some(NoSchedule)),
                taint("a", "x", Some(NoExecute))
            ]
        );
        assert_eq!(
            remove,
            [taint("c", "", Some(NoExecute)), taint("d", "", None)]
        );
        // The flag keeps only the additions, as RegisterWithTaintsVar.Set does.
        assert_eq!(
            parse_taints_flag("a=b:NoSchedule,c:NoExecute-").unwrap(),
            [taint("a", "b", Some(NoSchedule))]
        );
    }

    #[test]
    fn parse_taints_errors_match_upstream() {
        let err = |specs: &[&str]| parse_taints(specs.iter().copied()).unwrap_err().to_string();
        assert_eq!(err(&["foo"]), "invalid taint spec: foo");
        assert_eq!(
            err(&["a=b:NoSchedule", "a=c:NoSchedule"]),
            "duplicated taints with the same key and effect: {a c NoSchedule <nil>}"
        );
        assert_eq!(
            err(&["a:Bogus-"]),
            "invalid taint effect: Bogus, unsupported taint effect"
        );
    }

    #[test]
    fn check_validation() {
        assert!(check_taint_validation("foo", "bar", "NoSchedule").is_ok());
        assert!(check_taint_validation("foo", "", "").is_ok());
        assert_eq!(
            check_taint_validation("foo", "", "Bogus")
                .unwrap_err()
                .to_string(),
            "invalid taint effect: Bogus, unsupported taint effect"
        );
        assert!(
            check_taint_validation("", "", "NoSchedule")
                .unwrap_err()
                .to_string()
                .starts_with("invalid taint key: name part must be non-empty")
        );
        assert!(
            check_taint_validation("k", "-v", "NoSchedule")
                .unwrap_err()
                .to_string()
                .starts_with("invalid taint value: a valid label")
        );
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(key in "[a-z][a-z0-9]{0,10}", value in "([a-z0-9]{1,8})?", effect in 0_usize..3) {
            let effect = [TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule, TaintEffect::NoExecute][effect];
            let t = taint(&key, &value, Some(effect));
            prop_assert_eq!(parse_taint(&t.to_string()).unwrap(), t);
        }
    }
}
