//! End-to-end test of the file source and the merger on a real directory with inotify.
//!
//! The re-scan period is one hour, so every change after the first scan can only have been
//! picked up through inotify. The timeouts below only guard against hanging.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kubelet_podsource::{
    CONFIG_SOURCE_ANNOTATION_KEY, MAX_CONFIG_LENGTH, PodConfig, PodOperation, PodUpdate,
};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PERIOD: Duration = Duration::from_secs(3600);
const GUARD: Duration = Duration::from_secs(30);

fn pod(name: &str, image: &str, uid: Option<&str>) -> String {
    let uid = uid.map(|u| format!("  uid: {u}\n")).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{uid}spec:\n  containers:\n  - name: c\n    image: {image}\n"
    )
}

/// Writes through a dot-file and a rename, as editors do: one complete change.
fn write_atomic(path: &Path, data: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, data).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn next(rx: &mut mpsc::Receiver<PodUpdate>) -> PodUpdate {
    tokio::time::timeout(GUARD, rx.recv())
        .await
        .expect("no update within the guard time")
        .unwrap()
}

fn names(u: &PodUpdate) -> Vec<String> {
    let mut v: Vec<_> = u
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    v.sort();
    v
}

fn image(u: &PodUpdate) -> String {
    u.pods[0].spec.as_ref().unwrap().containers[0]
        .image
        .clone()
        .unwrap()
}

/// Collects log output of the current thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn lines_about(&self, needle: &str) -> usize {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).to_string();
        text.lines().filter(|l| l.contains(needle)).count()
    }
}

fn populate(dir: &Path) {
    let f = |n: &str| dir.join(n);
    std::fs::write(f("a.yaml"), pod("a", "nginx:1", None)).unwrap();
    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","uid":"uid-b"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}"#;
    std::fs::write(f("b.json"), json).unwrap();
    std::fs::write(f("c.manifest"), pod("c", "redis", None)).unwrap();
    std::fs::write(f(".hidden.yaml"), pod("hidden", "nginx", None)).unwrap();
    std::fs::write(f("garbage.yaml"), "{{{ this is not yaml").unwrap();
    std::fs::write(
        f("kind.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
    )
    .unwrap();
    std::fs::write(f("invalid.yaml"), pod("Invalid_Name", "''", None)).unwrap();
    std::fs::write(f("empty.yaml"), "").unwrap();
    std::fs::write(f("binary.bin"), [0u8, 159, 146, 150, 255, 0, 1]).unwrap();
    std::fs::write(f("huge.yaml"), vec![b'#'; MAX_CONFIG_LENGTH]).unwrap();
    std::os::unix::fs::symlink(f("loop2.yaml"), f("loop1.yaml")).unwrap();
    std::os::unix::fs::symlink(f("loop1.yaml"), f("loop2.yaml")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/pod.yaml", f("dangling.yaml")).unwrap();
    std::fs::create_dir(f("subdir")).unwrap();
    std::fs::write(f("subdir/nested.yaml"), pod("nested", "nginx", None)).unwrap();
}

const BAD: [&str; 9] = [
    "dangling.yaml",
    "garbage.yaml",
    "kind.yaml",
    "invalid.yaml",
    "empty.yaml",
    "binary.bin",
    "huge.yaml",
    "loop1.yaml",
    "loop2.yaml",
];

#[tokio::test]
async fn static_pod_directory_end_to_end() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("manifests");
    std::fs::create_dir(&dir).unwrap();
    populate(&dir);

    let cancel = CancellationToken::new();
    let (config, mut rx) = PodConfig::new("node1");
    let task = config.start_file_source(&dir, PERIOD, cancel.clone());

    // Exactly the valid pods come out, from the file source.
    let first = next(&mut rx).await;
    assert_eq!(first.op, PodOperation::Add);
    assert_eq!(first.source, "file");
    assert_eq!(names(&first), ["a-node1", "b-node1", "c-node1"]);
    let annotations = first.pods[0].metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[CONFIG_SOURCE_ANNOTATION_KEY], "file");
    assert!(config.seen_all_sources(&HashSet::from(["file".to_string()])));

    // A file added later is picked up through inotify.
    std::fs::write(dir.join("d.yaml"), pod("d", "nginx", None)).unwrap();
    let added = next(&mut rx).await;
    assert_eq!(
        (added.op, names(&added)),
        (PodOperation::Add, vec!["d-node1".to_string()])
    );

    // Editing a pod with an explicit UID is an UPDATE.
    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","uid":"uid-b"},"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}"#;
    write_atomic(&dir.join("b.json"), json);
    let updated = next(&mut rx).await;
    assert_eq!(
        (updated.op, names(&updated)),
        (PodOperation::Update, vec!["b-node1".to_string()])
    );
    assert_eq!(image(&updated), "busybox:2");

    // Editing a pod without one changes its content-derived UID: REMOVE then ADD.
    write_atomic(&dir.join("a.yaml"), &pod("a", "nginx:2", None));
    let removed = next(&mut rx).await;
    assert_eq!(
        (removed.op, names(&removed)),
        (PodOperation::Remove, vec!["a-node1".to_string()])
    );
    assert_eq!(image(&removed), "nginx:1");
    let readded = next(&mut rx).await;
    assert_eq!(
        (readded.op, names(&readded)),
        (PodOperation::Add, vec!["a-node1".to_string()])
    );
    assert_eq!(image(&readded), "nginx:2");

    // Removing a file is a REMOVE.
    std::fs::remove_file(dir.join("c.manifest")).unwrap();
    let gone = next(&mut rx).await;
    assert_eq!(
        (gone.op, names(&gone)),
        (PodOperation::Remove, vec!["c-node1".to_string()])
    );

    // Fixing a bad file brings its pod.
    write_atomic(&dir.join("garbage.yaml"), &pod("g", "nginx", None));
    let fixed = next(&mut rx).await;
    assert_eq!(
        (fixed.op, names(&fixed)),
        (PodOperation::Add, vec!["g-node1".to_string()])
    );

    // Many re-scans later (one per change above), each bad file was logged once.
    for bad in BAD.iter().filter(|b| **b != "garbage.yaml") {
        let path = dir.join(bad).display().to_string();
        assert_eq!(
            logs.lines_about(&format!("path={path} ")),
            1,
            "{bad} logged once"
        );
    }
    assert_eq!(logs.lines_about("hidden"), 0, "dot-files are ignored");
    assert_eq!(logs.lines_about("nested"), 0, "no recursion");

    cancel.cancel();
    tokio::time::timeout(GUARD, task).await.unwrap().unwrap();
}

#[tokio::test]
async fn single_file_path_and_late_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("pod.yaml");
    std::fs::write(&file, pod("solo", "nginx", Some("uid-solo"))).unwrap();
    let missing_dir = tmp.path().join("later");

    let cancel = CancellationToken::new();
    let (config, mut rx) = PodConfig::new("n");
    config.start_file_source(&file, PERIOD, cancel.clone());
    let first = next(&mut rx).await;
    assert_eq!(
        (first.op, names(&first)),
        (PodOperation::Add, vec!["solo-n".to_string()])
    );
    write_atomic(&file, &pod("solo", "nginx:2", Some("uid-solo")));
    let updated = next(&mut rx).await;
    assert_eq!(
        (updated.op, image(&updated)),
        (PodOperation::Update, "nginx:2".to_string())
    );

    // A path that does not exist yet counts as an empty source; its creation is noticed.
    let (config, mut rx) = PodConfig::new("n");
    config.start_file_source(&missing_dir, PERIOD, cancel.clone());
    let empty = next(&mut rx).await;
    assert_eq!(
        (empty.op, empty.pods.len()),
        (PodOperation::Add, 0),
        "source ready"
    );
    let staging = tmp.path().join(".staging");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("p.yaml"), pod("p", "nginx", None)).unwrap();
    std::fs::rename(&staging, &missing_dir).unwrap();
    let added = next(&mut rx).await;
    assert_eq!(
        (added.op, names(&added)),
        (PodOperation::Add, vec!["p-n".to_string()])
    );
    // The watch moved into the new directory.
    std::fs::write(missing_dir.join("q.yaml"), pod("q", "nginx", None)).unwrap();
    let added = next(&mut rx).await;
    assert_eq!(
        (added.op, names(&added)),
        (PodOperation::Add, vec!["q-n".to_string()])
    );
    cancel.cancel();
}
