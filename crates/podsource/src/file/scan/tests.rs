#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::file::fs::{FakeEntry, FakeFs};

const DIR: &str = "/etc/kubernetes/manifests";

fn pod_yaml(name: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: {image}\n"
    )
}

fn source(fs: &Arc<FakeFs>, path: &str) -> SourceFile {
    SourceFile::new(path, "node1", StaticPodOptions::default(), fs.clone())
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

fn logged_paths(scan: &Scan) -> Vec<String> {
    let mut v: Vec<_> = scan
        .logged
        .iter()
        .map(|p| p.path.display().to_string())
        .collect();
    v.sort();
    v
}

fn messy_dir() -> Arc<FakeFs> {
    let fs = Arc::new(FakeFs::default());
    fs.set(DIR, FakeEntry::Dir);
    let f = |n: &str| format!("{DIR}/{n}");
    fs.write(f("a.yaml"), pod_yaml("a", "nginx"));
    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
    fs.write(f("b.json"), json);
    fs.write(f(".hidden.yaml"), pod_yaml("hidden", "nginx"));
    fs.write(f("garbage.yaml"), "{{{ not yaml");
    fs.write(
        f("kind.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
    );
    fs.write(f("invalid.yaml"), pod_yaml("Invalid_Name", ""));
    fs.write(f("empty.yaml"), "");
    fs.write(f("binary.bin"), vec![0u8, 159, 146, 150, 255]);
    fs.set(
        f("loop.yaml"),
        FakeEntry::Broken(
            io::ErrorKind::Other,
            "Too many levels of symbolic links (os error 40)".into(),
        ),
    );
    fs.write(f("huge.yaml"), vec![b'#'; MAX_CONFIG_LENGTH]);
    fs.set(f("subdir"), FakeEntry::Dir);
    fs.set(
        f("dangling.yaml"),
        FakeEntry::Broken(
            io::ErrorKind::NotFound,
            "No such file or directory (os error 2)".into(),
        ),
    );
    fs.set(f("fifo"), FakeEntry::Other);
    fs.set(
        f("secret.yaml"),
        FakeEntry::Unreadable(
            io::ErrorKind::PermissionDenied,
            "Permission denied (os error 13)".into(),
        ),
    );
    fs
}

#[test]
fn directory_scan_keeps_valid_pods_and_reports_each_bad_file_once() {
    let fs = messy_dir();
    let mut src = source(&fs, DIR);
    let scan = src.list_config();
    assert_eq!(names(scan.pods.as_ref().unwrap()), ["a-node1", "b-node1"]);
    let bad = [
        "binary.bin",
        "dangling.yaml",
        "empty.yaml",
        "fifo",
        "garbage.yaml",
        "huge.yaml",
        "invalid.yaml",
        "kind.yaml",
        "loop.yaml",
        "secret.yaml",
        "subdir",
    ];
    let want: Vec<String> = bad.iter().map(|n| format!("{DIR}/{n}")).collect();
    assert_eq!(logged_paths(&scan), want);
    assert!(scan.logged.iter().all(|p| p.severity == Severity::Error));
    let err_of = |n: &str| {
        scan.logged
            .iter()
            .find(|p| p.path.ends_with(n))
            .unwrap()
            .err
            .clone()
    };
    assert!(
        err_of("huge.yaml").contains("10 MiB"),
        "{}",
        err_of("huge.yaml")
    );
    assert!(err_of("loop.yaml").contains("symbolic links"));
    assert!(
        err_of("kind.yaml").contains("couldn't parse as pod"),
        "{}",
        err_of("kind.yaml")
    );
    assert!(err_of("kind.yaml").starts_with(&format!("{DIR}/kind.yaml")));
    assert!(err_of("invalid.yaml").contains("spec.containers[0].image: Required value"));
    assert!(
        err_of("invalid.yaml").contains("metadata.name: Invalid value: \"Invalid_Name-node1\"")
    );
    assert!(err_of("secret.yaml").contains("Permission denied"));
    assert!(
        !fs.reads().iter().any(|p| p.ends_with(".hidden.yaml")),
        "dot-files are never read"
    );

    let again = src.list_config();
    assert_eq!(names(again.pods.as_ref().unwrap()), ["a-node1", "b-node1"]);
    assert!(
        again.logged.is_empty(),
        "nothing logged twice: {:?}",
        again.logged
    );

    fs.write(format!("{DIR}/garbage.yaml"), "other: [garbage");
    let edited = src.list_config();
    assert_eq!(
        logged_paths(&edited),
        [format!("{DIR}/garbage.yaml")],
        "new content, new log"
    );
}

#[test]
fn fixed_file_joins_the_set_and_breaking_it_again_logs_again() {
    let fs = messy_dir();
    let mut src = source(&fs, DIR);
    src.list_config();
    fs.write(format!("{DIR}/garbage.yaml"), pod_yaml("g", "nginx"));
    let fixed = src.list_config();
    assert_eq!(
        names(fixed.pods.as_ref().unwrap()),
        ["a-node1", "b-node1", "g-node1"]
    );
    fs.write(format!("{DIR}/garbage.yaml"), "{{{ not yaml");
    let broken = src.list_config();
    assert_eq!(names(broken.pods.as_ref().unwrap()), ["a-node1", "b-node1"]);
    assert_eq!(broken.logged.len(), 1);
}

#[test]
fn missing_path_sends_an_empty_set_and_warns_once() {
    let fs = Arc::new(FakeFs::default());
    let mut src = source(&fs, "/nope/");
    assert_eq!(src.path(), Path::new("/nope"));
    let scan = src.list_config();
    assert_eq!(scan.pods, Some(vec![]));
    assert_eq!(scan.logged.len(), 1);
    assert_eq!(scan.logged[0].severity, Severity::Warning);
    assert!(src.list_config().logged.is_empty());
}

#[test]
fn unreadable_path_keeps_previous_state() {
    let fs = Arc::new(FakeFs::default());
    fs.set(
        DIR,
        FakeEntry::Broken(io::ErrorKind::PermissionDenied, "Permission denied".into()),
    );
    let scan = source(&fs, DIR).list_config();
    assert_eq!(scan.pods, None);
    assert_eq!(scan.logged[0].what, "Unable to read config path");
}

#[test]
fn single_file_path() {
    let fs = Arc::new(FakeFs::default());
    let path = "/etc/pod.yaml";
    fs.write(path, pod_yaml("solo", "nginx"));
    let mut src = source(&fs, path);
    let pods = src.list_config().pods.unwrap();
    assert_eq!(names(&pods), ["solo-node1"]);
    assert_eq!(
        pods[0].spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("nginx")
    );
    assert_eq!(
        src.watch_target(),
        (PathBuf::from("/etc"), Some("pod.yaml".into()))
    );

    fs.write(path, "garbage: [");
    let scan = src.list_config();
    assert_eq!(
        scan.pods, None,
        "upstream keeps the previous state for a bad single file"
    );
    assert_eq!(scan.logged.len(), 1);
}

#[test]
fn watch_target_is_the_directory() {
    let fs = messy_dir();
    assert_eq!(source(&fs, DIR).watch_target(), (PathBuf::from(DIR), None));
}

#[test]
fn duplicate_names_later_file_wins_and_multi_document_warns() {
    let fs = Arc::new(FakeFs::default());
    fs.set(DIR, FakeEntry::Dir);
    fs.write(format!("{DIR}/1.yaml"), pod_yaml("same", "old"));
    fs.write(
        format!("{DIR}/2.yaml"),
        format!("{}---\n{}", pod_yaml("same", "new"), pod_yaml("x", "y")),
    );
    let mut src = source(&fs, DIR);
    let scan = src.list_config();
    let pods = scan.pods.unwrap();
    assert_eq!(names(&pods), ["same-node1"]);
    assert_eq!(
        pods[0].spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("new")
    );
    let mut whats: Vec<_> = scan
        .logged
        .iter()
        .map(|p| (p.path.display().to_string(), p.what))
        .collect();
    whats.sort();
    assert_eq!(
        whats,
        [
            (format!("{DIR}/1.yaml"), "Ignoring duplicate static pod"),
            (
                format!("{DIR}/2.yaml"),
                "Manifest has several YAML documents"
            ),
        ]
    );
    assert!(src.list_config().logged.is_empty());
}

#[test]
fn uid_uses_the_joined_path() {
    let fs = messy_dir();
    let with_slash = source(&fs, &format!("{DIR}/")).list_config().pods.unwrap();
    let without = source(&fs, DIR).list_config().pods.unwrap();
    assert_eq!(with_slash[0].metadata.uid, without[0].metadata.uid);
}

#[test]
fn rescans_reuse_decoded_pods_only_while_the_content_is_unchanged() {
    let fs = Arc::new(FakeFs::default());
    fs.set(DIR, FakeEntry::Dir);
    fs.write(format!("{DIR}/a.yaml"), pod_yaml("a", "nginx:1"));
    fs.write(format!("{DIR}/b.yaml"), pod_yaml("b", "nginx:1"));
    let mut src = source(&fs, DIR);
    let first = src.list_config().pods.unwrap();
    let again = src.list_config().pods.unwrap();
    assert_eq!(first, again, "unchanged files give the same pods");
    fs.write(format!("{DIR}/a.yaml"), pod_yaml("a", "nginx:2"));
    let edited = src.list_config().pods.unwrap();
    let image = |pods: &[Pod], name: &str| {
        pods.iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .and_then(|p| p.spec.as_ref()?.containers[0].image.clone())
    };
    assert_eq!(image(&edited, "a-node1").as_deref(), Some("nginx:2"));
    assert_eq!(image(&edited, "b-node1").as_deref(), Some("nginx:1"));
    assert_ne!(
        first
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some("a-node1"))
            .and_then(|p| p.metadata.uid.clone()),
        edited
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some("a-node1"))
            .and_then(|p| p.metadata.uid.clone()),
        "an edited manifest is decoded again (new content, new UID)"
    );
    fs.remove(format!("{DIR}/b.yaml"));
    assert_eq!(names(&src.list_config().pods.unwrap()), ["a-node1"]);
}
