//! One scan of `staticPodPath` (`file.go`: `listConfig`, `extractFromDir`,
//! `extractFromFile`), producing the full set of valid pods plus the problems met.

use super::fs::{EntryKind, ManifestFs};
use super::report::{OnceReporter, Problem, Severity};
use crate::hash::Fnv128a;
use crate::static_pod::{ManifestOrigin, StaticPodOptions, decode_static_pod};
use crate::types::pod_key;
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest manifest read, as upstream `maxConfigLength`: 10 MiB. A file of this size or
/// more is rejected.
pub const MAX_CONFIG_LENGTH: usize = 10 << 20;

/// The outcome of one scan.
#[derive(Debug)]
pub struct Scan {
    /// `Some(pods)`: the new full set to send (possibly empty). `None`: send nothing and
    /// keep the previous state (upstream's `listConfig` returns an error without touching
    /// its store: path unreadable, or a single-file path whose manifest is bad).
    pub pods: Option<Vec<Pod>>,
    /// The problems logged by this scan (not the ones already logged before).
    pub logged: Vec<Problem>,
}

/// The state of the file source between scans.
pub struct SourceFile {
    path: PathBuf,
    node_name: String,
    options: StaticPodOptions,
    fs: Arc<dyn ManifestFs>,
    reporter: OnceReporter,
    cache: std::sync::Mutex<DecodeCache>,
}

/// Decoded pods of the previous scan by path, with the content hash they came from, so a
/// re-scan decodes (YAML, defaulting, validation, UID hash) only the files that changed.
#[derive(Default)]
struct DecodeCache {
    previous: HashMap<PathBuf, (String, Pod)>,
    current: HashMap<PathBuf, (String, Pod)>,
}

impl DecodeCache {
    fn hit(&mut self, path: &Path, hash: &str) -> Option<Pod> {
        let (h, pod) = self.previous.remove(path)?;
        if h != hash {
            return None;
        }
        self.current.insert(path.to_path_buf(), (h, pod.clone()));
        Some(pod)
    }
}

impl SourceFile {
    pub fn new(
        path: impl Into<PathBuf>,
        node_name: impl Into<String>,
        options: StaticPodOptions,
        fs: Arc<dyn ManifestFs>,
    ) -> SourceFile {
        SourceFile {
            path: trim_trailing_slash(path.into()),
            node_name: node_name.into(),
            options,
            fs,
            reporter: OnceReporter::default(),
            cache: std::sync::Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, DecodeCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fs(&self) -> &Arc<dyn ManifestFs> {
        &self.fs
    }

    /// Scans the path and logs the problems not logged before.
    pub fn list_config(&mut self) -> Scan {
        {
            let cache = self
                .cache
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            cache.previous = std::mem::take(&mut cache.current);
        }
        let mut problems = Vec::new();
        let pods = self.list(&mut problems);
        let logged = self.reporter.report(problems);
        Scan { pods, logged }
    }

    /// Where to watch for changes: the path itself when it is a directory, else its parent
    /// directory filtered on the path's name.
    pub fn watch_target(&self) -> (PathBuf, Option<std::ffi::OsString>) {
        if matches!(self.fs.kind(&self.path), Ok(EntryKind::Dir)) {
            return (self.path.clone(), None);
        }
        let parent = self.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let parent = if parent.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            parent
        };
        (parent, self.path.file_name().map(ToOwned::to_owned))
    }

    fn list(&self, problems: &mut Vec<Problem>) -> Option<Vec<Pod>> {
        let path = self.path.clone();
        match self.fs.kind(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                problems.push(problem(
                    &path,
                    Severity::Warning,
                    "Static pod path does not exist, ignoring",
                    e,
                ));
                Some(Vec::new())
            }
            Err(e) => {
                problems.push(problem(
                    &path,
                    Severity::Error,
                    "Unable to read config path",
                    e,
                ));
                None
            }
            Ok(EntryKind::Dir) => self.extract_from_dir(problems),
            Ok(EntryKind::File) => self.extract_from_file(&path, problems).map(|pod| vec![pod]),
            Ok(EntryKind::Other) => {
                problems.push(problem(
                    &path,
                    Severity::Error,
                    "Unable to read config path",
                    "path is not a directory or file",
                ));
                None
            }
        }
    }

    /// Every valid pod of the directory; only a failure to list it is fatal.
    fn extract_from_dir(&self, problems: &mut Vec<Problem>) -> Option<Vec<Pod>> {
        let names = match self.fs.list_dir(&self.path) {
            Ok(names) => names,
            Err(e) => {
                problems.push(problem(
                    &self.path,
                    Severity::Error,
                    "Unable to read config path",
                    e,
                ));
                return None;
            }
        };
        let mut names: Vec<_> = names
            .into_iter()
            .filter(|n| !n.as_encoded_bytes().starts_with(b"."))
            .collect();
        names.sort();
        let mut by_key: HashMap<String, (PathBuf, usize)> = HashMap::new();
        let mut pods: Vec<Option<Pod>> = Vec::new();
        for name in names {
            let path = self.path.join(&name);
            let Some(pod) = self.extract_entry(&path, problems) else {
                continue;
            };
            let key = pod_key(&pod);
            if let Some((earlier, idx)) = by_key.insert(key.clone(), (path.clone(), pods.len())) {
                // Upstream's store keeps the last manifest for a name; say so.
                pods[idx] = None;
                let err = format!(
                    "pod {key} is also defined in {}, which wins",
                    path.display()
                );
                problems.push(problem(
                    &earlier,
                    Severity::Warning,
                    "Ignoring duplicate static pod",
                    err,
                ));
            }
            pods.push(Some(pod));
        }
        Some(pods.into_iter().flatten().collect())
    }

    fn extract_entry(&self, path: &Path, problems: &mut Vec<Problem>) -> Option<Pod> {
        match self.fs.kind(path) {
            Err(e) => {
                // NotFound here is a dangling symlink, or a file removed since the listing.
                problems.push(problem(path, Severity::Error, "Could not get metadata", e));
                None
            }
            Ok(EntryKind::Dir) => {
                let what =
                    "Provided manifest path is a directory, not recursing into manifest path";
                problems.push(problem(path, Severity::Error, what, "is a directory"));
                None
            }
            Ok(EntryKind::Other) => {
                let what = "Manifest path is not a directory or file";
                problems.push(problem(path, Severity::Error, what, "not a regular file"));
                None
            }
            Ok(EntryKind::File) => self.extract_from_file(path, problems),
        }
    }

    /// Reads and decodes one manifest; `None` when it gives no pod (problems say why,
    /// except for a file that vanished meanwhile).
    fn extract_from_file(&self, path: &Path, problems: &mut Vec<Problem>) -> Option<Pod> {
        const WHAT: &str = "Could not process manifest file";
        tracing::trace!(path = %path.display(), "Reading config file");
        let data = match self.fs.read_at_most(path, MAX_CONFIG_LENGTH) {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                problems.push(problem(path, Severity::Error, WHAT, e));
                return None;
            }
        };
        if data.len() >= MAX_CONFIG_LENGTH {
            let err = format!(
                "{}: file is too large: manifests must be smaller than {MAX_CONFIG_LENGTH} bytes (10 MiB)",
                path.display()
            );
            problems.push(problem(path, Severity::Error, WHAT, err));
            return None;
        }
        let origin = ManifestOrigin::File(path.to_string_lossy().into_owned());
        let hash = content_hash(&data);
        if let Some(pod) = self.cache().hit(path, &hash) {
            return Some(pod);
        }
        let content = Some(hash.clone());
        match decode_static_pod(&data, &origin, &self.node_name, self.options) {
            Ok(decoded) => {
                if decoded.documents > 1 {
                    let err = format!(
                        "{} YAML documents; only the first is used",
                        decoded.documents
                    );
                    let what = "Manifest has several YAML documents";
                    problems.push(Problem {
                        content,
                        ..problem(path, Severity::Warning, what, err)
                    });
                } else {
                    self.cache()
                        .current
                        .insert(path.to_path_buf(), (hash, decoded.pod.clone()));
                }
                Some(decoded.pod)
            }
            Err(e) => {
                problems.push(Problem {
                    content,
                    ..problem(path, Severity::Error, WHAT, e)
                });
                None
            }
        }
    }
}

fn problem(path: &Path, severity: Severity, what: &'static str, err: impl ToString) -> Problem {
    Problem {
        path: path.to_path_buf(),
        severity,
        what,
        err: err.to_string(),
        content: None,
    }
}

fn content_hash(data: &[u8]) -> String {
    let mut h = Fnv128a::default();
    h.write(data);
    h.hex()
}

/// Upstream trims trailing separators (`strings.TrimRight(path, "/")`), keeping "/" itself.
fn trim_trailing_slash(path: PathBuf) -> PathBuf {
    let s = path.to_string_lossy();
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() || trimmed.len() == s.len() {
        path
    } else {
        PathBuf::from(trimmed)
    }
}

#[cfg(test)]
mod tests;
