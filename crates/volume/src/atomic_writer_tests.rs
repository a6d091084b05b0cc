//! Ported from upstream `pkg/volume/util/atomic_writer_test.go`.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use super::*;

fn payload(files: &[(&str, u32, &str)]) -> Payload {
    files
        .iter()
        .map(|(p, mode, data)| {
            (
                (*p).to_string(),
                FileProjection {
                    data: data.as_bytes().to_vec(),
                    mode: *mode,
                    fs_user: None,
                },
            )
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// `checkVolumeContents`: the user-visible tree equals the payload (data and mode), and
/// nothing else is visible.
fn check_volume_contents(dir: &Path, expected: &Payload) {
    let mut seen = Payload::new();
    fn visit(dir: &Path, base: &Path, seen: &mut Payload) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if dir == base && name.starts_with("..") {
                continue;
            }
            let path = e.path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                visit(&path, base, seen);
            } else {
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                seen.insert(
                    rel,
                    FileProjection {
                        data: std::fs::read(&path).unwrap(),
                        mode: meta.permissions().mode() & 0o777,
                        fs_user: None,
                    },
                );
            }
        }
    }
    visit(dir, dir, &mut seen);
    assert_eq!(&seen, expected);
}

fn data_target(dir: &Path) -> String {
    std::fs::read_link(dir.join(DATA_DIR_NAME))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn new_atomic_writer_needs_an_existing_dir() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(AtomicWriter::new(tmp.path(), "-test-").is_ok());
    assert!(AtomicWriter::new(&tmp.path().join("missing"), "-test-").is_err());
}

#[test]
fn validate_path_cases() {
    let max_path = "a".repeat(MAX_PATH_LENGTH + 1);
    let max_file = "a".repeat(MAX_FILE_NAME_LENGTH + 1);
    let cases: &[(&str, &str, bool)] = &[
        ("valid 1", "i/am/well/behaved.txt", true),
        ("valid 2", "keepyourheaddownandfollowtherules.txt", true),
        ("max path length", &max_path, false),
        ("max file length", &max_file, false),
        ("absolute failure", "/dev/null", false),
        ("reserved path", "..sneaky.txt", false),
        (
            "contains doubledot 1",
            "hello/there/../../../../../../etc/passwd",
            false,
        ),
        ("contains doubledot 2", "hello/../etc/somethingbad", false),
        ("empty", "", false),
    ];
    for (name, path, valid) in cases {
        assert_eq!(validate_path(path).is_ok(), *valid, "{name}");
    }
}

#[test]
fn validate_payload_cleans_paths() {
    let p = payload(&[("foo////bar", 0o644, ""), ("./baz", 0o644, "")]);
    let clean = validate_payload(&p).unwrap();
    assert_eq!(
        clean.keys().cloned().collect::<BTreeSet<_>>(),
        set(&["foo/bar", "baz"])
    );
    for bad in ["/dev/null", "..sneaky.txt", "foo/../etc/password", ""] {
        assert!(
            validate_payload(&payload(&[(bad, 0o644, "")])).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn paths_to_remove_cases() {
    let cases: Vec<(&str, Payload, Payload, BTreeSet<String>)> = vec![
        (
            "simple",
            payload(&[("foo.txt", 0o644, "foo"), ("bar.txt", 0o644, "bar")]),
            payload(&[("foo.txt", 0o644, "foo")]),
            set(&["bar.txt"]),
        ),
        (
            "simple 2",
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zip/bar.txt", 0o644, "zip/b}ar"),
            ]),
            payload(&[("foo.txt", 0o644, "foo")]),
            set(&["zip/bar.txt", "zip"]),
        ),
        (
            "subdirs 2",
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zip/1/2/3/4/bar.txt", 0o644, "x"),
            ]),
            payload(&[("foo.txt", 0o644, "foo")]),
            set(&[
                "zip/1/2/3/4/bar.txt",
                "zip",
                "zip/1",
                "zip/1/2",
                "zip/1/2/3",
                "zip/1/2/3/4",
            ]),
        ),
        (
            "subdirs 4",
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zap/1/2/3/4/bar.txt", 0o644, "zip/bar"),
                ("zap/1/2/c/bar.txt", 0o644, "zap/bar"),
                ("zap/1/2/magic.txt", 0o644, "indigo"),
            ]),
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zap/1/2/magic.txt", 0o644, "indigo"),
            ]),
            set(&[
                "zap/1/2/3",
                "zap/1/2/3/4",
                "zap/1/2/3/4/bar.txt",
                "zap/1/2/c",
                "zap/1/2/c/bar.txt",
            ]),
        ),
        (
            "subdirs 5",
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zap/1/2/3/4/bar.txt", 0o644, "zip/bar"),
                ("zap/1/2/c/bar.txt", 0o644, "zap/bar"),
            ]),
            payload(&[
                ("foo.txt", 0o644, "foo"),
                ("zap/1/2/magic.txt", 0o644, "indigo"),
            ]),
            set(&[
                "zap/1/2/3",
                "zap/1/2/3/4",
                "zap/1/2/3/4/bar.txt",
                "zap/1/2/c",
                "zap/1/2/c/bar.txt",
            ]),
        ),
    ];
    for (name, first, second, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let w = AtomicWriter::new(tmp.path(), "-test-").unwrap();
        w.write(&first, None).unwrap();
        let old = tmp.path().join(data_target(tmp.path()));
        assert_eq!(
            paths_to_remove_from(&second, &old).unwrap(),
            expected,
            "{name}"
        );
    }
}

#[test]
fn write_once_lays_out_data_dir_and_visible_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let p = payload(&[
        ("foo", 0o644, "foo"),
        ("bar/zab.txt", 0o600, "bar"),
        ("a/b/c/d", 0o400, "deep"),
    ]);
    AtomicWriter::new(dir, "-test-")
        .unwrap()
        .write(&p, None)
        .unwrap();
    check_volume_contents(dir, &p);
    let ts = data_target(dir);
    assert!(ts.starts_with(".."), "{ts}");
    assert!(ts.len() > "..2016_02_01_15_04_05.".len(), "{ts}");
    let ts_mode = std::fs::metadata(dir.join(&ts))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(ts_mode, 0o755);
    for (link, target) in [
        ("foo", "..data/foo"),
        ("bar", "..data/bar"),
        ("a", "..data/a"),
    ] {
        assert_eq!(
            std::fs::read_link(dir.join(link)).unwrap(),
            Path::new(target)
        );
    }
    assert!(!dir.join(NEW_DATA_DIR_NAME).exists());
}

#[test]
fn update_swaps_the_data_dir_and_removes_the_old_one_and_dropped_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = AtomicWriter::new(dir, "-test-").unwrap();
    let first = payload(&[
        ("foo", 0o644, "foo"),
        ("bar", 0o644, "bar"),
        ("sub/x", 0o644, "x"),
    ]);
    w.write(&first, None).unwrap();
    let old_ts = data_target(dir);
    let next = payload(&[("foo", 0o644, "foo2"), ("baz", 0o640, "baz")]);
    w.write(&next, None).unwrap();
    check_volume_contents(dir, &next);
    let new_ts = data_target(dir);
    assert_ne!(old_ts, new_ts);
    assert!(
        !dir.join(&old_ts).exists(),
        "the old timestamped dir is removed"
    );
    assert!(
        std::fs::symlink_metadata(dir.join("bar")).is_err(),
        "dropped key's symlink removed"
    );
    assert!(std::fs::symlink_metadata(dir.join("sub")).is_err());
    let entries: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, set(&["..data", &new_ts, "foo", "baz"]));
}

#[test]
fn no_write_when_payload_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = AtomicWriter::new(dir, "-test-").unwrap();
    let p = payload(&[("foo/bar.txt", 0o644, "foo"), ("bar/zab.txt", 0o644, "bar")]);
    w.write(&p, None).unwrap();
    let ts = data_target(dir);
    let called = std::cell::Cell::new(false);
    let set_perms = |_: &str| {
        called.set(true);
        Ok(())
    };
    w.write(&p, Some(&set_perms)).unwrap();
    assert_eq!(data_target(dir), ts, "the data dir is not swapped");
    assert!(!called.get(), "nothing new to set permissions on");
    check_volume_contents(dir, &p);
}

#[test]
fn multiple_updates_add_and_remove_nested_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = AtomicWriter::new(dir, "-test-").unwrap();
    let steps = [
        payload(&[("foo/bar.txt", 0o644, "foo"), ("bar/zab.txt", 0o644, "bar")]),
        payload(&[
            ("foo/bar.txt", 0o644, "foo2"),
            ("bar/zab.txt", 0o400, "bar"),
            ("blu/zip.txt", 0o644, "zip"),
        ]),
        payload(&[("bar/zab.txt", 0o644, "bar")]),
        payload(&[("bar/zib.txt", 0o644, "zib"), ("bar/zab.txt", 0o644, "bar")]),
        payload(&[]),
        payload(&[("foo", 0o644, "again")]),
    ];
    for p in &steps {
        w.write(p, None).unwrap();
        check_volume_contents(dir, p);
        let ts_dirs = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let n = e
                    .as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .into_owned();
                n.starts_with("..") && n != DATA_DIR_NAME
            })
            .count();
        assert_eq!(ts_dirs, 1, "exactly one timestamped dir");
    }
}

#[test]
fn set_perms_runs_on_the_new_timestamped_dir_before_publication() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let w = AtomicWriter::new(&dir, "-test-").unwrap();
    let seen = std::cell::RefCell::new(String::new());
    let d = dir.clone();
    let set_perms = |sub: &str| {
        *seen.borrow_mut() = sub.to_string();
        assert!(d.join(sub).join("foo").exists());
        assert!(
            std::fs::read_link(d.join(DATA_DIR_NAME)).is_err(),
            "not yet published"
        );
        Ok(())
    };
    w.write(&payload(&[("foo", 0o644, "x")]), Some(&set_perms))
        .unwrap();
    assert_eq!(*seen.borrow(), data_target(&dir));
}

#[test]
fn write_again_after_unexpected_exit_recreates_visible_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = AtomicWriter::new(dir, "-test-").unwrap();
    let p = payload(&[("foo", 0o644, "foo"), ("bar", 0o644, "bar")]);
    w.write(&p, None).unwrap();
    for f in p.keys() {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    w.write(&p, None).unwrap();
    check_volume_contents(dir, &p);
}

#[test]
fn invalid_payload_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let w = AtomicWriter::new(tmp.path(), "-test-").unwrap();
    let err = w
        .write(
            &payload(&[("ok", 0o644, "x"), ("../escape", 0o644, "x")]),
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("must not contain '..'"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn file_modes_ignore_the_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let w = AtomicWriter::new(tmp.path(), "-test-").unwrap();
    let p = payload(&[("rw", 0o666, "x"), ("x", 0o777, "y"), ("none", 0o000, "z")]);
    w.write(&p, None).unwrap();
    check_volume_contents(tmp.path(), &p);
}
