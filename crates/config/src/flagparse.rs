//! The argv loop of `pflag.FlagSet.Parse` as the kubelet configures it: `ContinueOnError`,
//! interspersed positional arguments, `WordSepNormalizeFunc` (`_` == `-`), `--` terminator,
//! `--name=value` / `--name value`, bool flags that never take the next argument, and
//! shorthand forms `-h`, `-v3`, `-v=3`, `-v 3`.

use std::collections::{HashMap, HashSet};

use crate::flag_table::{FlagDef, all_flags};
use crate::flags::Parsed;
use crate::flagvalue::set;

/// The result of one parse.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ParseOutcome {
    /// Non-flag arguments, in order.
    pub positional: Vec<String>,
    /// `Flag --x has been deprecated, ...` lines, one per use of a deprecated flag.
    pub warnings: Vec<String>,
    /// Names of the flags that were set, in order of first use.
    pub set_flags: Vec<&'static str>,
}

/// The kubelet's flag set.
pub struct FlagSet {
    defs: Vec<FlagDef>,
    by_name: HashMap<&'static str, usize>,
    by_short: HashMap<char, usize>,
}

impl Default for FlagSet {
    fn default() -> Self {
        Self::new()
    }
}

impl FlagSet {
    pub fn new() -> Self {
        let defs = all_flags();
        let by_name = defs.iter().enumerate().map(|(i, d)| (d.name, i)).collect();
        let by_short = defs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.shorthand.map(|c| (c, i)))
            .collect();
        FlagSet {
            defs,
            by_name,
            by_short,
        }
    }

    pub(crate) fn defs(&self) -> &[FlagDef] {
        &self.defs
    }

    /// Whether `name` (after normalization) is a known flag.
    pub fn has_flag(&self, name: &str) -> bool {
        self.by_name.contains_key(normalize(name).as_str())
    }

    /// Parses `args` (without the program name) onto `p`. Errors carry pflag's wording.
    pub fn parse(&self, args: &[String], p: &mut Parsed) -> Result<ParseOutcome, String> {
        let mut out = ParseOutcome::default();
        let mut seen: HashSet<&'static str> = HashSet::new();
        let mut rest = args.iter();
        while let Some(s) = rest.next() {
            if s.len() < 2 || !s.starts_with('-') {
                out.positional.push(s.clone());
                continue;
            }
            if s == "--" {
                out.positional.extend(rest.by_ref().cloned());
                break;
            }
            if let Some(long) = s.strip_prefix("--") {
                self.parse_long(s, long, &mut rest, p, &mut out, &mut seen)?;
            } else {
                self.parse_shorts(&s[1..], &mut rest, p, &mut out, &mut seen)?;
            }
        }
        Ok(out)
    }

    fn parse_long<'a>(
        &self,
        s: &str,
        long: &str,
        rest: &mut impl Iterator<Item = &'a String>,
        p: &mut Parsed,
        out: &mut ParseOutcome,
        seen: &mut HashSet<&'static str>,
    ) -> Result<(), String> {
        if long.is_empty() || long.starts_with('-') || long.starts_with('=') {
            return Err(format!("bad flag syntax: {s}"));
        }
        let (name, inline) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (long, None),
        };
        let idx = *self
            .by_name
            .get(normalize(name).as_str())
            .ok_or_else(|| format!("unknown flag: --{name}"))?;
        let def = self.defs[idx];
        let value = match (inline, def.target.no_opt_default()) {
            (Some(v), _) => v,
            (None, Some(d)) => d.to_string(),
            (None, None) => rest
                .next()
                .cloned()
                .ok_or_else(|| format!("flag needs an argument: {s}"))?,
        };
        apply(def, &value, p, out, seen)
    }

    fn parse_shorts<'a>(
        &self,
        mut shorts: &str,
        rest: &mut impl Iterator<Item = &'a String>,
        p: &mut Parsed,
        out: &mut ParseOutcome,
        seen: &mut HashSet<&'static str>,
    ) -> Result<(), String> {
        while let Some(c) = shorts.chars().next() {
            let after = &shorts[c.len_utf8()..];
            let idx = *self
                .by_short
                .get(&c)
                .ok_or_else(|| format!("unknown shorthand flag: '{c}' in -{shorts}"))?;
            let def = self.defs[idx];
            let value = if after.len() > 1 && after.starts_with('=') {
                let v = after[1..].to_string();
                shorts = "";
                v
            } else if let Some(d) = def.target.no_opt_default() {
                shorts = after;
                d.to_string()
            } else if !after.is_empty() {
                let v = after.to_string();
                shorts = "";
                v
            } else {
                shorts = "";
                rest.next()
                    .cloned()
                    .ok_or_else(|| format!("flag needs an argument: '{c}' in -{c}"))?
            };
            apply(def, &value, p, out, seen)?;
        }
        Ok(())
    }
}

fn apply(
    def: FlagDef,
    value: &str,
    p: &mut Parsed,
    out: &mut ParseOutcome,
    seen: &mut HashSet<&'static str>,
) -> Result<(), String> {
    let first = seen.insert(def.name);
    set(def.target, p, value, first).map_err(|e| {
        let shown = match def.shorthand {
            Some(c) => format!("-{c}, --{}", def.name),
            None => format!("--{}", def.name),
        };
        format!("invalid argument {value:?} for {shown:?} flag: {e}")
    })?;
    if first {
        out.set_flags.push(def.name);
    }
    if let Some(msg) = def.deprecated {
        out.warnings
            .push(format!("Flag --{} has been deprecated, {msg}", def.name));
    }
    Ok(())
}

/// `cliflag.WordSepNormalizeFunc`.
pub fn normalize(name: &str) -> String {
    name.replace('_', "-")
}
