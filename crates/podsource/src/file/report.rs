//! Logs each problem of the file source once per (path, problem, content), instead of on
//! every rescan; a problem that goes away and comes back is logged again.

use std::collections::HashMap;
use std::path::PathBuf;

/// How loud a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem met during a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub severity: Severity,
    /// Upstream's log message, e.g. "Could not process manifest file".
    pub what: &'static str,
    pub err: String,
    /// Hash of the file content, when the problem comes from the content.
    pub content: Option<String>,
}

impl Problem {
    fn key(&self) -> String {
        format!(
            "{:?}\0{}\0{}",
            self.severity,
            self.err,
            self.content.as_deref().unwrap_or_default()
        )
    }
}

/// Remembers what was logged for each path.
#[derive(Debug, Default)]
pub struct OnceReporter {
    logged: HashMap<(PathBuf, &'static str), String>,
}

impl OnceReporter {
    /// Logs the problems not logged before and forgets the ones that are gone. Returns the
    /// problems that were logged now.
    pub fn report(&mut self, problems: Vec<Problem>) -> Vec<Problem> {
        let mut current = HashMap::new();
        let mut fresh = Vec::new();
        for p in problems {
            let id = (p.path.clone(), p.what);
            let key = p.key();
            if self.logged.get(&id) != Some(&key) {
                log(&p);
                fresh.push(p);
            }
            current.insert(id, key);
        }
        self.logged = current;
        fresh
    }

    /// True when a problem is currently recorded for `path`.
    #[cfg(test)]
    pub fn has_problem(&self, path: &std::path::Path) -> bool {
        self.logged.keys().any(|(p, _)| p == path)
    }
}

fn log(p: &Problem) {
    let path = p.path.display();
    match p.severity {
        Severity::Error => tracing::error!(path = %path, err = %p.err, "{}", p.what),
        Severity::Warning => tracing::warn!(path = %path, err = %p.err, "{}", p.what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn problem(path: &str, err: &str, content: Option<&str>) -> Problem {
        Problem {
            path: path.into(),
            severity: Severity::Error,
            what: "Could not process manifest file",
            err: err.into(),
            content: content.map(str::to_string),
        }
    }

    #[test]
    fn logs_once_per_path_and_content() {
        let mut r = OnceReporter::default();
        assert_eq!(r.report(vec![problem("/a", "bad", Some("h1"))]).len(), 1);
        assert_eq!(
            r.report(vec![problem("/a", "bad", Some("h1"))]).len(),
            0,
            "same content"
        );
        assert_eq!(
            r.report(vec![problem("/a", "bad", Some("h2"))]).len(),
            1,
            "new content"
        );
        assert!(r.has_problem(Path::new("/a")));
        assert_eq!(r.report(vec![]).len(), 0);
        assert!(!r.has_problem(Path::new("/a")), "fixed");
        assert_eq!(
            r.report(vec![problem("/a", "bad", Some("h2"))]).len(),
            1,
            "broken again"
        );
        let two = vec![
            problem("/a", "bad", Some("h2")),
            problem("/b", "worse", None),
        ];
        assert_eq!(r.report(two).len(), 1, "only /b is new");
    }
}
