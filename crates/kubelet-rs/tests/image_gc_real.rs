//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: image garbage
//! collection (`imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`,
//! `imageMinimumGCAge`; upstream `image_gc_manager.go`).
//!
//! The runtime is shared with every other real test and nothing can be pulled again, so the
//! test only ever lets the kubelet remove images it imported itself: three tiny distinct
//! images (`images/build-oci.py`), while the shared busybox is in use by the test's pod and
//! the pause image is the runtime's sandbox image. It refuses to run when the runtime holds
//! any other image.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::http_get;
use common::node::{Node, busybox_pod, runtime_lock};
use kubelet_e2e::runtime_env::RuntimeEnv;

const T: Duration = Duration::from_secs(90);
const REPO: &str = "example.com/kubelet-rs-image-gc";

fn ctr(env: &RuntimeEnv, args: &[&str]) -> String {
    let out = env.ctr().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ctr {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Builds and imports `REPO/<tag>:1`: one file of `size` bytes, distinct per tag.
fn import_image(env: &RuntimeEnv, dir: &Path, tag: &str, size: usize) -> String {
    let root = dir.join(format!("{tag}-rootfs"));
    std::fs::create_dir_all(&root).unwrap();
    let content: Vec<u8> = tag.bytes().cycle().take(size).collect();
    std::fs::write(root.join("data"), content).unwrap();
    let out = dir.join(format!("{tag}.tar"));
    let name = format!("{REPO}/{tag}:1");
    let script = kubelet_e2e::runtime_env::repo_root().join("images/build-oci.py");
    let built = Command::new("python3")
        .arg(script)
        .args(["--rootfs", root.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(["--arch", arch(), "--name", &name, "--cmd", "[\"/data\"]"])
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "build-oci.py: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    ctr(
        env,
        &[
            "images",
            "import",
            "--snapshotter",
            &env.snapshotter,
            out.to_str().unwrap(),
        ],
    );
    name
}

async fn cri_images(env: &RuntimeEnv) -> kubelet_cri::RemoteImageService {
    kubelet_cri::RemoteImageService::connect(&env.endpoint, Duration::from_secs(30))
        .await
        .unwrap()
}

/// Removes this test's images (all their references, as CRI `RemoveImage` does), left over
/// by a failed run.
async fn remove_test_images(env: &RuntimeEnv) {
    use kubelet_cri::ImageService;
    let cri = cri_images(env).await;
    for image in cri.list_images(None).await.unwrap() {
        if image.repo_tags.iter().any(|t| t.starts_with(REPO)) {
            let spec = kubelet_cri::v1::ImageSpec {
                image: image.id,
                ..Default::default()
            };
            cri.remove_image(&spec).await.unwrap();
        }
    }
}

/// The runtime's images as CRI lists them: each image's tags (an untagged image: its ID).
async fn names(env: &RuntimeEnv) -> Vec<String> {
    use kubelet_cri::ImageService;
    let mut names: Vec<String> = cri_images(env)
        .await
        .list_images(None)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|i| {
            if i.repo_tags.is_empty() {
                vec![i.id]
            } else {
                i.repo_tags
            }
        })
        .collect();
    names.sort();
    names
}

/// The CRI image ID of `name`.
async fn cri_image_id(env: &RuntimeEnv, name: &str) -> String {
    use kubelet_cri::ImageService;
    let images = cri_images(env).await;
    let spec = kubelet_cri::v1::ImageSpec {
        image: name.to_string(),
        ..Default::default()
    };
    images
        .image_status(&spec, false)
        .await
        .unwrap()
        .image
        .unwrap_or_else(|| panic!("{name} not in the runtime"))
        .id
}

/// The `image_id`s of the kubelet's "Removing image to free bytes" lines, in order.
fn removals(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("Removing image to free bytes"))
        .filter_map(|l| {
            let (_, rest) = l.split_once("image_id=\"")?;
            Some(rest.split('"').next()?.to_string())
        })
        .collect()
}

/// A kubelet whose image filesystem is past `imageGCHighThresholdPercent` removes the
/// images no container uses, least recently used first (never used before used), and keeps
/// the image of the pod's container and the runtime's sandbox (pause) image; images younger
/// than `imageMinimumGCAge` wait for a later round. Freeing less than needed (the rest of
/// the disk is not images) ends with upstream's `FreeDiskSpaceFailed` error.
///
/// Timeline: the first round runs at the kubelet's start (as upstream's
/// `StartGarbageCollection`), when the three imported images are first detected, so all are
/// too young (`imageMinimumGCAge: 1s`; upstream's defaulting turns `0s` into 2 minutes) and
/// `a` is in use by the `user-a` pod; then `user-a` goes, and the second round, one
/// `ImageGCPeriod` (5 minutes) later, removes `b` and `c` (never used) before `a` (used
/// until the first round).
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn unused_images_are_collected_past_the_high_threshold_in_use_and_sandbox_images_kept() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-imagegc").await;
    let env = kubelet_e2e::runtime_env::ensure().unwrap();
    remove_test_images(&env).await;
    let shared: Vec<String> = names(&env).await;
    let foreign: Vec<&String> = shared
        .iter()
        .filter(|n| !(n.contains("/pause:") || n.contains("busybox:")))
        .collect();
    assert!(
        foreign.is_empty(),
        "the runtime holds images this test's kubelet would remove (they cannot be pulled again): {foreign:?}"
    );
    let work = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for (tag, size) in [("a", 64 << 10), ("b", 96 << 10), ("c", 128 << 10)] {
        let name = import_image(&env, work.path(), tag, size);
        ids.push(cri_image_id(&env, &name).await);
    }
    let (busybox_id, pause_id) = (
        cri_image_id(&env, &node.busybox).await,
        cri_image_id(&env, &env.pause_image).await,
    );

    // First without image GC (the harness's default), so that the containers exist before
    // the first round: `keeper` runs busybox; `user-a`'s container, from image `a` (which
    // has nothing to run), fails to start and is retried: there is always one.
    node.start().await;
    node.write_manifest(
        "keeper.yaml",
        &busybox_pod("keeper", &node.busybox, "Always", "sleep 3600"),
    );
    node.write_manifest(
        "user-a.yaml",
        &format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: user-a
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: a
    image: {REPO}/a:1
    imagePullPolicy: Never
"
        ),
    );
    node.wait_for("keeper running, user-a's container created", T, || async {
        let a = node.containers("user-a").await;
        (node.phase("keeper").as_deref() == Some("Running") && !a.is_empty()).then_some(())
    })
    .await;
    let mut first = node.proc.take().unwrap();
    first.signal(nix::sys::signal::Signal::SIGTERM);
    first.wait_exit(Duration::from_secs(10)).await;
    assert_eq!(
        node.running("keeper").await.len(),
        1,
        "the pod's container outlives the kubelet"
    );

    // Past the high threshold whatever this disk's usage: 1 %; down to 0 %, more than the
    // images can give.
    let config = std::fs::read_to_string(&node.config).unwrap().replace(
        "imageGCHighThresholdPercent: 100\n",
        "imageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 1s\n",
    );
    std::fs::write(&node.config, config).unwrap();
    node.start().await;

    // Round 1, at start: nothing eligible.
    node.wait_for("the first round", T, || async {
        node.log()
            .contains("Image garbage collection failed once")
            .then_some(())
    })
    .await;
    let log = node.log();
    assert!(
        log.contains("Insufficient free disk space on the node's image filesystem")
            && log.contains("(freed 0 bytes)"),
        "{log}"
    );
    assert!(removals(&log).is_empty(), "{log}");
    node.remove_manifest("user-a.yaml");
    node.wait_for("user-a's containers removed", T, || async {
        node.containers("user-a").await.is_empty().then_some(())
    })
    .await;

    // Round 2, one ImageGCPeriod after the start.
    let removed = node
        .wait_for(
            "the second round",
            Duration::from_secs(5 * 60 + 60),
            || async {
                let r = removals(&node.log());
                (r.len() >= 3).then_some(r)
            },
        )
        .await;
    assert_eq!(removed.len(), 3, "{removed:?}");
    assert_eq!(
        removed[2], ids[0],
        "a, used until round 1, goes last: {removed:?}"
    );
    let mut never_used = removed[..2].to_vec();
    never_used.sort();
    let mut want = ids[1..].to_vec();
    want.sort();
    assert_eq!(never_used, want);
    let left = names(&env).await;
    assert!(!left.iter().any(|n| n.starts_with(REPO)), "{left:?}");
    for kept in &shared {
        assert!(left.contains(kept), "{kept} was removed: {left:?}");
    }
    assert!(!removed.contains(&busybox_id) && !removed.contains(&pause_id));
    node.wait_for("the second round's error", T, || async {
        (node
            .log()
            .matches("Image garbage collection failed multiple times in a row")
            .count()
            >= 1)
            .then_some(())
    })
    .await;
    let (_, metrics) = http_get(node.ro_port, "/metrics").unwrap();
    assert!(
        metrics.contains("kubelet_image_garbage_collected_total{reason=\"space\"} 3"),
        "{metrics}"
    );
    // The pod still runs from the kept image.
    assert_eq!(node.running("keeper").await.len(), 1);
    node.cleanup().await;
    remove_test_images(&env).await;
}
