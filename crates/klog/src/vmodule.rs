//! klog's `--vmodule` (`k8s.io/klog/v2` `moduleSpec`, `modulePat.match`, `setV`):
//! `pattern=N,...` raises the verbosity for the source files whose name, without its
//! extension and directory, matches `pattern` — literally, or as a `filepath.Match` glob
//! when the pattern holds any of `\*?[]`. The first matching pattern wins; a file's
//! verbosity is the larger of `-v` and its pattern's.
//!
//! Here the file is the Rust source file of the `tracing` call site (`startup.rs` →
//! `startup`). As in the Go kubelet, where only code that logs through klog is affected,
//! only kubelet-rs's own crates are: libraries keep their info cap.

/// One `pattern=N` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModulePat {
    pattern: String,
    /// No glob metacharacters: compared as is (klog's `isLiteral`).
    literal: bool,
    level: u32,
}

/// The parsed `--vmodule` / `logging.vmodule` setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VModule {
    filter: Vec<ModulePat>,
}

impl VModule {
    /// From `(filePattern, verbosity)` pairs, in order (already validated by the config).
    pub fn new<S: Into<String>>(items: impl IntoIterator<Item = (S, u32)>) -> Self {
        VModule {
            filter: items
                .into_iter()
                .map(|(p, level)| {
                    let pattern: String = p.into();
                    ModulePat {
                        literal: !pattern.contains(['\\', '*', '?', '[', ']']),
                        pattern,
                        level,
                    }
                })
                .collect(),
        }
    }

    /// True when no pattern is set.
    pub fn is_empty(&self) -> bool {
        self.filter.is_empty()
    }

    /// The verbosity `--vmodule` gives the source file `path`, if a pattern matches
    /// (klog `setV`: extension and directories stripped first).
    pub fn level_for_file(&self, path: &str) -> Option<u32> {
        let file = path.strip_suffix(".rs").unwrap_or(path);
        let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
        self.filter
            .iter()
            .find(|f| {
                if f.literal {
                    f.pattern == file
                } else {
                    glob_match(f.pattern.as_bytes(), file.as_bytes())
                }
            })
            .map(|f| f.level)
    }
}

/// Go's `filepath.Match` on a name without separators: `*`, `?`, `[...]` classes with
/// ranges and `^` negation, `\` escapes. A malformed pattern matches nothing (Go returns
/// `ErrBadPattern`, which klog treats as no match).
fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    match pat.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| glob_match(rest, &name[i..])),
        Some((b'?', rest)) => name
            .split_first()
            .is_some_and(|(c, tail)| *c != b'/' && glob_match(rest, tail)),
        Some((b'[', rest)) => {
            let Some((c, tail)) = name.split_first() else {
                return false;
            };
            match match_class(rest, *c) {
                Some((true, after)) => glob_match(after, tail),
                _ => false,
            }
        }
        Some((b'\\', rest)) => match (rest.split_first(), name.split_first()) {
            (Some((p, prest)), Some((c, tail))) => p == c && glob_match(prest, tail),
            _ => false,
        },
        Some((p, rest)) => name
            .split_first()
            .is_some_and(|(c, tail)| p == c && glob_match(rest, tail)),
    }
}

/// Matches `c` against a class body (after `[`): whether it matched, and the pattern after
/// the closing `]`; `None` for a malformed class.
fn match_class(mut pat: &[u8], c: u8) -> Option<(bool, &[u8])> {
    let negated = pat.first() == Some(&b'^');
    if negated {
        pat = &pat[1..];
    }
    let mut matched = false;
    let mut first = true;
    loop {
        match pat.split_first() {
            None => return None,
            Some((b']', rest)) if !first => return Some((matched != negated, rest)),
            _ => {}
        }
        first = false;
        let (lo, rest) = class_char(pat)?;
        pat = rest;
        let mut hi = lo;
        if pat.first() == Some(&b'-') && pat.get(1).is_some_and(|b| *b != b']') {
            let (h, rest) = class_char(&pat[1..])?;
            hi = h;
            pat = rest;
        }
        if lo <= c && c <= hi {
            matched = true;
        }
    }
}

fn class_char(pat: &[u8]) -> Option<(u8, &[u8])> {
    match pat.split_first()? {
        (b'\\', rest) => rest.split_first().map(|(c, r)| (*c, r)),
        (b'-' | b']', _) => None,
        (c, rest) => Some((*c, rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_glob_patterns() {
        let v = VModule::new([
            ("startup", 4),
            ("sync*", 3),
            ("h?usekeeping", 2),
            ("[a-c]ache", 5),
        ]);
        assert_eq!(v.level_for_file("crates/app/src/startup.rs"), Some(4));
        assert_eq!(
            v.level_for_file("/abs/crates/app/src/kubelet/sync_loop.rs"),
            Some(3)
        );
        assert_eq!(
            v.level_for_file("crates/app/src/kubelet/syncer.rs"),
            Some(3)
        );
        assert_eq!(
            v.level_for_file("crates/app/src/kubelet/housekeeping.rs"),
            Some(2)
        );
        assert_eq!(v.level_for_file("crates/container/src/cache.rs"), Some(5));
        assert_eq!(v.level_for_file("crates/container/src/mache.rs"), None);
        assert_eq!(
            v.level_for_file("crates/app/src/startups.rs"),
            None,
            "literal is exact"
        );
        // The first matching pattern wins.
        let v = VModule::new([("sync_loop", 1), ("sync*", 5)]);
        assert_eq!(v.level_for_file("sync_loop.rs"), Some(1));
        // Negated classes, escapes, malformed patterns.
        let v = VModule::new([("[^s]*", 2)]);
        assert_eq!(v.level_for_file("syncer.rs"), None);
        assert_eq!(v.level_for_file("pleg.rs"), Some(2));
        assert!(glob_match(br"a\*b", b"a*b"));
        assert!(!glob_match(br"a\*b", b"axb"));
        assert!(!glob_match(b"[a-", b"a"));
    }
}
