//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: a static pod
//! with a `downwardAPI` volume (the one API-backed volume type a static pod can use) sees
//! upstream's files, on a read-only tmpfs at `<root>/pods/<uid>/volumes/
//! kubernetes.io~downward-api/<name>`, kept (not stacked) across a kubelet restart, unmounted
//! and removed when the pod goes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

fn mounted(path: &std::path::Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = path.to_str().unwrap();
    mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(p))
        .map(str::to_string)
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn downward_api_volume_files_as_upstream() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-dapi").await;
    node.start().await;
    let script = "cd /etc/podinfo; \
        for f in name namespace labels annotations cpu_limit mem_request; do echo \"== $f\"; cat $f; echo; done; \
        echo \"== modes\"; stat -L -c '%n %a' name labels; \
        echo \"== data\"; readlink ..data | grep -c '^\\.\\.20'; readlink labels; \
        if touch /etc/podinfo/x 2>/dev/null; then echo writable; else echo read-only; fi; \
        echo END; sleep 3600";
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: dapi
  labels:
    app: web
    tier: front-end
  annotations:
    note: 'say \"hi\" there'

spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {b}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {script:?}]
    resources:
      requests:
        memory: 32Mi
      limits:
        cpu: 500m
        memory: 64Mi
    volumeMounts:
    - name: podinfo
      mountPath: /etc/podinfo
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - path: name
        fieldRef:
          fieldPath: metadata.name
      - path: namespace
        fieldRef:
          fieldPath: metadata.namespace
      - path: labels
        mode: 256 # 0400 (our YAML decoder reads 0400 as 400.0, see the report)
        fieldRef:
          fieldPath: metadata.labels
      - path: annotations
        fieldRef:
          fieldPath: metadata.annotations
      - path: cpu_limit
        resourceFieldRef:
          containerName: main
          resource: limits.cpu
          divisor: 1m
      - path: mem_request
        resourceFieldRef:
          containerName: main
          resource: requests.memory
          divisor: 1Mi
",
        b = node.busybox
    );
    node.write_manifest("dapi.yaml", &manifest);
    node.wait_for("dapi Running", T, || async {
        (node.phase("dapi").as_deref() == Some("Running")).then_some(())
    })
    .await;
    let pod = node.pod("dapi").unwrap();
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let annotations = &pod["metadata"]["annotations"];
    let log = node
        .logs_dir()
        .join(format!("default_dapi-rt-dapi_{uid}"))
        .join("main")
        .join("0.log");
    let content = node
        .wait_for("container output", T, || async {
            std::fs::read_to_string(&log)
                .ok()
                .filter(|s| s.contains("END"))
        })
        .await;
    // CRI log lines: <time> stdout F <line>
    let out: Vec<&str> = content
        .lines()
        .filter_map(|l| l.split_once(" stdout F ").map(|(_, rest)| rest))
        .collect();
    let section = |name: &str| -> Vec<&str> {
        let start = out.iter().position(|l| *l == format!("== {name}")).unwrap();
        out[start + 1..]
            .iter()
            .take_while(|l| !l.starts_with("== ") && **l != "END")
            .copied()
            .collect()
    };
    assert_eq!(section("name"), ["dapi-rt-dapi"], "{content}");
    assert_eq!(section("namespace"), ["default"]);
    assert_eq!(section("labels"), ["app=\"web\"", "tier=\"front-end\""]);
    // Static pods carry the kubelet's annotations (config.hash, source, seen): every
    // one, sorted, as key="value".
    let mut want: Vec<String> = annotations
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap()))
        .collect();
    want.sort();
    assert_eq!(section("annotations"), want);
    assert!(
        section("annotations").contains(&r#"note="say \"hi\" there""#),
        "{content}"
    );
    assert_eq!(section("cpu_limit"), ["500"]);
    assert_eq!(section("mem_request"), ["32"]);
    assert_eq!(section("modes"), ["name 644", "labels 400"]);
    assert_eq!(section("data"), ["1", "..data/labels", "read-only"]);

    let dir = node
        .dir
        .path()
        .join("root/pods")
        .join(&uid)
        .join("volumes/kubernetes.io~downward-api/podinfo");
    let mount = mounted(&dir).unwrap_or_else(|| panic!("{dir:?} is not a mount point"));
    assert!(mount.starts_with("tmpfs "), "{mount}");
    assert!(
        mount.contains("size=65536k"),
        "sized by the pod memory limit: {mount}"
    );

    // A restarted kubelet finds the tmpfs in place: the volume is refreshed, never
    // mounted a second time on top.
    let mut old = node.proc.take().unwrap();
    old.signal(Signal::SIGKILL);
    old.wait_exit(Duration::from_secs(5)).await;
    node.start().await;
    node.wait_for("dapi Running again", T, || async {
        (node.phase("dapi").as_deref() == Some("Running")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = dir.to_str().unwrap();
    let count = mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(p))
        .count();
    assert_eq!(count, 1, "{mounts}");
    assert_eq!(
        std::fs::read_to_string(dir.join("name")).unwrap(),
        "dapi-rt-dapi"
    );

    node.remove_manifest("dapi.yaml");
    node.wait_for("volume unmounted and removed", T, || async {
        (mounted(&dir).is_none() && !dir.exists()).then_some(())
    })
    .await;
    node.cleanup().await;
}
