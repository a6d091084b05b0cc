//! The `--eviction-hard` / `--eviction-soft` flag syntax,
//! `memory.available<100Mi,nodefs.available<10%`
//! (component-base/cli/flag/langle_separated_map_string_string.go).

use std::collections::BTreeMap;

/// A malformed `key<value` list; the message is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed pair, expect string<string")]
pub struct LangleMapError {
    /// The offending pair.
    pub pair: String,
}

/// Parses `k1<v1,k2<v2`: empty items are skipped, keys and values are trimmed,
/// and a later key replaces an earlier one (upstream `Set`).
pub fn parse_langle_map(value: &str) -> Result<BTreeMap<String, String>, LangleMapError> {
    let mut map = BTreeMap::new();
    for pair in value.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('<').ok_or_else(|| LangleMapError {
            pair: pair.to_owned(),
        })?;
        map.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    Ok(map)
}

/// Formats a map as `k1<v1,k2<v2` in key order (upstream `String`).
pub fn format_langle_map(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k}<{v}"))
        .collect::<Vec<_>>()
        .join(",")
}
