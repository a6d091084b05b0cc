//! `CPUSet`: a set of logical CPU ids in Linux cpu-list syntax ("0-3,7").
//!
//! Mirrors `k8s.io/utils/cpuset/cpuset.go` (`Parse`, `String`, `Union`,
//! `Intersection`, `Difference`, `IsSubsetOf`).

use std::collections::BTreeSet;
use std::fmt;

use crate::goquote::go_quote;

/// Largest number of CPUs one range may name. Upstream has no bound; Linux
/// supports at most 8192 CPUs, so a longer range is a typo, and refusing it
/// keeps a bad flag from allocating without limit.
pub const MAX_RANGE_LEN: usize = 1 << 16;

/// An error from [`CpuSet::parse`]; messages follow upstream (`strconv.Atoi`
/// errors and `invalid range`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    /// A bound is not a decimal integer (Go: `strconv.Atoi: parsing "x": invalid syntax`).
    #[error("strconv.Atoi: parsing {}: {reason}", go_quote(.number))]
    Number {
        /// The text that is not a number.
        number: String,
        /// "invalid syntax" or "value out of range", as Go says.
        reason: &'static str,
    },
    /// A range whose start is above its end.
    #[error("invalid range {} ({start} > {end})", go_quote(.range))]
    Reversed {
        /// The offending range text.
        range: String,
        /// Its start.
        start: i64,
        /// Its end.
        end: i64,
    },
    /// Not upstream: a range longer than [`MAX_RANGE_LEN`].
    #[error("invalid range {}: more than {MAX_RANGE_LEN} CPUs", go_quote(.range))]
    TooLarge {
        /// The offending range text.
        range: String,
    },
}

/// A set of CPU ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    cpus: BTreeSet<usize>,
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, ASCII digits.
fn atoi(s: &str) -> Result<i64, CpuSetError> {
    let err = |reason| CpuSetError::Number {
        number: s.to_owned(),
        reason,
    };
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("invalid syntax"));
    }
    s.parse::<i64>().map_err(|_| err("value out of range"))
}

fn add_range(cpus: &mut BTreeSet<usize>, range: &str) -> Result<(), CpuSetError> {
    let Some((lo, hi)) = range.split_once('-') else {
        // A single bound never carries a '-' sign, so it is non-negative.
        cpus.insert(usize::try_from(atoi(range)?).unwrap_or(usize::MAX));
        return Ok(());
    };
    let (start, end) = (atoi(lo)?, atoi(hi)?);
    if start > end {
        return Err(CpuSetError::Reversed {
            range: range.to_owned(),
            start,
            end,
        });
    }
    let too_large = || CpuSetError::TooLarge {
        range: range.to_owned(),
    };
    let start = usize::try_from(start).map_err(|_| too_large())?;
    let end = usize::try_from(end).map_err(|_| too_large())?;
    if end - start >= MAX_RANGE_LEN {
        return Err(too_large());
    }
    cpus.extend(start..=end);
    Ok(())
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// Parses the Linux cpu-list format ("0-5,34,46-48"); "" is the empty set
    /// (upstream `cpuset.Parse`).
    pub fn parse(s: &str) -> Result<CpuSet, CpuSetError> {
        let mut cpus = BTreeSet::new();
        if !s.is_empty() {
            for range in s.split(',') {
                add_range(&mut cpus, range)?;
            }
        }
        Ok(CpuSet { cpus })
    }

    /// Number of CPUs (upstream `Size`).
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.cpus.contains(&cpu)
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset_of(&self, other: &CpuSet) -> bool {
        self.cpus.is_subset(&other.cpus)
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet {
            cpus: self.cpus.union(&other.cpus).copied().collect(),
        }
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet {
            cpus: self.cpus.intersection(&other.cpus).copied().collect(),
        }
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet {
            cpus: self.cpus.difference(&other.cpus).copied().collect(),
        }
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.cpus.iter().copied()
    }

    /// The CPUs in ascending order (upstream `List`).
    pub fn to_vec(&self) -> Vec<usize> {
        self.iter().collect()
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> CpuSet {
        CpuSet {
            cpus: iter.into_iter().collect(),
        }
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = usize;
    type IntoIter = std::iter::Copied<std::collections::btree_set::Iter<'a, usize>>;
    fn into_iter(self) -> Self::IntoIter {
        self.cpus.iter().copied()
    }
}

impl std::str::FromStr for CpuSet {
    type Err = CpuSetError;
    fn from_str(s: &str) -> Result<CpuSet, CpuSetError> {
        CpuSet::parse(s)
    }
}

/// Canonical cpu-list form: ascending, adjacent CPUs merged into ranges.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut iter = self.cpus.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.next_if(|&c| Some(c) == end.checked_add(1)).is_some() {
                end += 1;
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        f.pad(&out)
    }
}

/// Serialised as the cpu-list string, as the CPU manager checkpoint stores it.
impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        CpuSet::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use proptest::prelude::*;

    use super::*;

    /// From upstream cpuset_test.go TestParse: (input, CPUs).
    const PARSE_OK: &[(&str, &[usize])] = &[
        ("", &[]),
        ("5", &[5]),
        ("1,2,3,4,5", &[1, 2, 3, 4, 5]),
        ("1-5", &[1, 2, 3, 4, 5]),
        ("1-2,3-5", &[1, 2, 3, 4, 5]),
        ("5,4,3,2,1", &[1, 2, 3, 4, 5]),
        ("3-6,1-5", &[1, 2, 3, 4, 5, 6]),
        ("3-3,5-5", &[3, 5]),
        ("0-3,7", &[0, 1, 2, 3, 7]),
        ("+1", &[1]),
    ];

    const PARSE_ERR: &[(&str, &str)] = &[
        (
            "nonnumeric",
            r#"strconv.Atoi: parsing "nonnumeric": invalid syntax"#,
        ),
        (
            "non-numeric",
            r#"strconv.Atoi: parsing "non": invalid syntax"#,
        ),
        ("5-", r#"strconv.Atoi: parsing "": invalid syntax"#),
        ("-5", r#"strconv.Atoi: parsing "": invalid syntax"#),
        ("1,", r#"strconv.Atoi: parsing "": invalid syntax"#),
        ("1-2-3", r#"strconv.Atoi: parsing "2-3": invalid syntax"#),
        ("5-3", r#"invalid range "5-3" (5 > 3)"#),
        ("0-0,3--1", r#"invalid range "3--1" (3 > -1)"#),
        (" 1", r#"strconv.Atoi: parsing " 1": invalid syntax"#),
        (
            "99999999999999999999",
            r#"strconv.Atoi: parsing "99999999999999999999": value out of range"#,
        ),
        (
            "0-100000000",
            r#"invalid range "0-100000000": more than 65536 CPUs"#,
        ),
    ];

    #[test]
    fn parse_table() {
        for (input, cpus) in PARSE_OK {
            let set = CpuSet::parse(input).unwrap();
            assert_eq!(set.to_vec(), *cpus, "{input}");
        }
        for (input, msg) in PARSE_ERR {
            assert_eq!(
                CpuSet::parse(input).unwrap_err().to_string(),
                *msg,
                "{input}"
            );
        }
    }

    #[test]
    fn display_is_canonical() {
        let table = [
            ("", ""),
            ("5", "5"),
            ("1,2,3", "1-3"),
            ("7,0-3", "0-3,7"),
            ("1,3,5", "1,3,5"),
            ("0-1,2-3,5-6", "0-3,5-6"),
        ];
        for (input, want) in table {
            assert_eq!(CpuSet::parse(input).unwrap().to_string(), want);
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::parse("0-3").unwrap();
        let b = CpuSet::parse("2-5").unwrap();
        assert_eq!(a.union(&b).to_string(), "0-5");
        assert_eq!(a.intersection(&b).to_string(), "2-3");
        assert_eq!(a.difference(&b).to_string(), "0-1");
        assert!(CpuSet::parse("1-2").unwrap().is_subset_of(&a));
        assert!(!b.is_subset_of(&a));
        assert!(CpuSet::new().is_subset_of(&a));
        assert_eq!(a.len(), 4);
        assert!(a.contains(3) && !a.contains(4));
        assert_eq!((&a).into_iter().sum::<usize>(), 6);
        assert_eq!([9, 8].into_iter().collect::<CpuSet>().to_string(), "8-9");
    }

    #[test]
    fn json_is_the_cpu_list() {
        let set = CpuSet::parse("0-3,7").unwrap();
        assert_eq!(serde_json::to_string(&set).unwrap(), r#""0-3,7""#);
        assert_eq!(serde_json::from_str::<CpuSet>(r#""7,0-3""#).unwrap(), set);
        assert!(serde_json::from_str::<CpuSet>(r#""3-1""#).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(cpus in prop::collection::btree_set(0_usize..512, 0..64)) {
            let set: CpuSet = cpus.iter().copied().collect();
            let text = set.to_string();
            prop_assert_eq!(CpuSet::parse(&text).unwrap(), set.clone());
            prop_assert_eq!(set.len(), cpus.len());
        }

        #[test]
        fn union_and_difference_agree(a in prop::collection::btree_set(0_usize..64, 0..32), b in prop::collection::btree_set(0_usize..64, 0..32)) {
            let (a, b): (CpuSet, CpuSet) = (a.into_iter().collect(), b.into_iter().collect());
            prop_assert!(a.is_subset_of(&a.union(&b)));
            prop_assert!(a.intersection(&b).is_subset_of(&b));
            prop_assert_eq!(a.difference(&b).union(&a.intersection(&b)), a.clone());
        }

        #[test]
        fn parse_never_panics(s in "[0-9,\\-+ ]{0,16}") {
            let _ = CpuSet::parse(&s);
        }
    }
}
