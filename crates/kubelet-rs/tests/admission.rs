//! Pod admission end to end: the real binary rejects static pods it must not run (an
//! unsafe sysctl, a field kubelet-rs does not implement, more pods than `maxPods`); a
//! rejected pod shows `Failed` with upstream's reason in `/pods` and nothing of it reaches
//! the runtime, while the pods beside it run. Once against the recording fake CRI, once
//! against the real containerd of `hack/runtime-up.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::node::{Node, busybox_pod, runtime_lock};
use common::*;

const T: Duration = Duration::from_secs(60);

/// A pod setting `sysctl`, which is not in the safe set.
fn sysctl_pod(name: &str, image: &str, sysctl: &str) -> String {
    let sc =
        format!("  securityContext:\n    sysctls:\n    - name: {sysctl}\n      value: \"1\"\n");
    busybox_pod(name, image, "Always", "sleep 3600")
        .replace("  containers:\n", &format!("{sc}  containers:\n"))
}

/// A pod with an nfs volume (not implemented, refused at admission).
fn nfs_pod(name: &str, image: &str) -> String {
    busybox_pod(name, image, "Always", "sleep 3600")
        + "  volumes:\n  - name: data\n    nfs:\n      server: nfs.example\n      path: /\n"
}

/// A pod with `supplementalGroupsPolicy: <policy>` and supplemental group 4000.
fn supplemental_groups_pod(name: &str, image: &str, policy: &str) -> String {
    busybox_pod(name, image, "Always", "sleep 3600")
        + &format!(
            "  securityContext:\n    supplementalGroups: [4000]\n    supplementalGroupsPolicy: {policy}\n"
        )
}

const NFS_REJECTED: &str = "Pod was rejected: kubelet-rs does not support spec.volumes[0].nfs yet";

/// A standalone kubelet-rs over the recording fake CRI, with static pods from `manifests`
/// and the read-only port on `ro`.
struct FakeNode {
    dir: tempfile::TempDir,
    cri: kubelet_cri::fake::FakeCriServer,
    manifests: std::path::PathBuf,
    cfg: std::path::PathBuf,
    hz: u16,
    ro: u16,
}

impl FakeNode {
    async fn new(extra: &str) -> FakeNode {
        let dir = tempfile::tempdir().unwrap();
        let cri = kubelet_cri::fake::serve_fake(&dir.path().join("cri.sock"))
            .await
            .unwrap();
        let manifests = dir.path().join("manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        let (hz, ro) = (free_port(), free_port());
        let extra = format!(
            "staticPodPath: {}\nreadOnlyPort: {ro}\npodLogsDir: {}\n{extra}",
            manifests.display(),
            dir.path().join("logs").display()
        );
        let cfg = write(
            dir.path(),
            "kubelet.yaml",
            &standalone_config(&cri.endpoint(), hz, &extra),
        );
        FakeNode {
            dir,
            cri,
            manifests,
            cfg,
            hz,
            ro,
        }
    }

    /// Writes a manifest; the fake CRI pulls any image, so `Never` becomes `IfNotPresent`
    /// (the image would otherwise stop the pod at ErrImageNeverPull).
    fn manifest(&self, file: &str, content: &str) {
        let content = content.replace("imagePullPolicy: Never", "imagePullPolicy: IfNotPresent");
        write(&self.manifests, file, &content);
    }

    async fn start(&self) -> Proc {
        let root = self.dir.path().join("root");
        let args = [
            "--config",
            self.cfg.to_str().unwrap(),
            "--root-dir",
            root.to_str().unwrap(),
            "--hostname-override",
            "adm",
        ];
        let mut p = Proc::spawn(self.dir.path(), "k", &args);
        assert!(wait_healthy(&mut p, self.hz, T).await, "log:\n{}", p.log());
        p
    }
}

/// Polls `/pods` of the read-only port `ro` every 100 ms until `f` returns `Some`; fails
/// after [`T`] naming `what`, with the kubelet's log.
async fn wait_pods<R>(
    p: &Proc,
    ro: u16,
    what: &str,
    mut f: impl FnMut(&mut std::collections::BTreeMap<String, serde_json::Value>) -> Option<R>,
) -> R {
    let start = Instant::now();
    loop {
        let mut pods = pods_by_name(ro);
        if let Some(r) = f(&mut pods) {
            return r;
        }
        let statuses: Vec<(&String, &serde_json::Value)> =
            pods.iter().map(|(n, p)| (n, &p["status"])).collect();
        assert!(
            start.elapsed() < T,
            "timed out waiting for {what}: {statuses:#?}\nlog:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The fake CRI was asked for exactly `n` sandboxes.
fn assert_sandboxes_run(cri: &kubelet_cri::fake::FakeCriServer, n: usize) {
    let calls = cri.runtime.called();
    let runs = calls.iter().filter(|c| *c == "RunPodSandbox").count();
    assert_eq!(runs, n, "calls: {calls:?}");
}

async fn stop(mut p: Proc) {
    p.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(
        p.wait_exit(Duration::from_secs(10)).await,
        Some(0),
        "log:\n{}",
        p.log()
    );
}

/// `/pods` of the read-only port, by pod name; fails on any HTTP or decode error.
fn pods_by_name(ro_port: u16) -> std::collections::BTreeMap<String, serde_json::Value> {
    let (status, body) = http_get(ro_port, "/pods").expect("read-only port answers /pods");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["items"]
        .as_array()
        .expect("PodList items")
        .iter()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p.clone(),
            )
        })
        .collect()
}

fn assert_rejected(pod: &serde_json::Value, reason: &str, message: &str) {
    assert_eq!(pod["status"]["phase"], "Failed", "{pod}");
    assert_eq!(pod["status"]["reason"], reason, "{pod}");
    assert_eq!(pod["status"]["message"], message, "{pod}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rejected_static_pods_end_failed_and_reach_no_runtime_fake_cri() {
    let node = FakeNode::new("maxPods: 2\n").await;
    node.manifest(
        "sysctl.yaml",
        &sysctl_pod("sysctl", "busybox", "kernel.msgmax"),
    );
    node.manifest("nfs.yaml", &nfs_pod("nfs", "busybox"));
    for name in ["a", "b", "c"] {
        node.manifest(
            &format!("{name}.yaml"),
            &busybox_pod(name, "busybox", "Always", "sleep 3600"),
        );
    }
    let p = node.start().await;
    let (cri, ro) = (&node.cri, node.ro);

    // The two rejected pods, one pod over maxPods, and two running ones.
    let pods = wait_pods(&p, ro, "2 pods Running, 3 Failed", |pods| {
        let phase = |want: &str| {
            pods.values()
                .filter(|p| p["status"]["phase"] == want)
                .count()
        };
        (pods.len() == 5 && phase("Failed") == 3 && phase("Running") == 2).then(|| pods.clone())
    })
    .await;
    assert_rejected(
        &pods["sysctl-adm"],
        "SysctlForbidden",
        "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted",
    );
    assert_rejected(&pods["nfs-adm"], "UnsupportedPodFeature", NFS_REJECTED);
    let out_of_pods: Vec<&serde_json::Value> = ["a-adm", "b-adm", "c-adm"]
        .iter()
        .map(|n| &pods[*n])
        .filter(|p| p["status"]["phase"] == "Failed")
        .collect();
    assert_eq!(out_of_pods.len(), 1);
    // Static pods are critical: upstream does not reject them OutOfpods but looks for pods
    // to preempt, finds none of lower priority, and fails with this.
    assert_rejected(
        out_of_pods[0],
        "UnexpectedAdmissionError",
        "Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: pods, q: 1), ]",
    );
    assert_eq!(out_of_pods[0]["status"]["qosClass"], "BestEffort");

    // Nothing of a rejected pod reached the runtime: two sandboxes, those of the running pods.
    tokio::time::sleep(Duration::from_secs(3)).await; // a few sync ticks and housekeeping
    assert_sandboxes_run(cri, 2);
    let rejected: Vec<String> = pods
        .iter()
        .filter(|(_, p)| p["status"]["phase"] == "Failed")
        .map(|(n, _)| n.clone())
        .collect();
    let sandbox_names: Vec<String> = cri.runtime.with_state(|s| {
        s.sandboxes
            .values()
            .filter_map(|sb| sb.config.metadata.as_ref().map(|m| m.name.clone()))
            .collect()
    });
    assert_eq!(sandbox_names.len(), 2, "{sandbox_names:?}");
    for name in &rejected {
        assert!(!sandbox_names.contains(name), "{name} reached the runtime");
    }
    let log = p.log();
    assert!(log.contains("Pod admission denied"), "{log}");

    // Editing a rejected pod gives it a new UID: it goes through admission again.
    node.manifest(
        "nfs.yaml",
        &busybox_pod("nfs", "busybox", "Always", "sleep 3600"),
    );
    // No room is left (maxPods: 2), so judged again it is rejected for that now.
    wait_pods(&p, ro, "the edited pod judged again", |pods| {
        let reason = pods.get("nfs-adm").map(|p| &p["status"]["reason"]);
        (reason.is_some_and(|r| r == "UnexpectedAdmissionError")).then_some(())
    })
    .await;

    // Removing a rejected pod's manifest forgets it like any other pod.
    std::fs::remove_file(node.manifests.join("sysctl.yaml")).unwrap();
    wait_pods(&p, ro, "the removed pod forgotten", |pods| {
        (!pods.contains_key("sysctl-adm")).then_some(())
    })
    .await;
    assert_sandboxes_run(cri, 2);
    stop(p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_allowed_unsafe_sysctls_stop_the_start() {
    let FakeSetup {
        dir,
        cri: _cri,
        cfg,
        ..
    } = fake_setup("allowedUnsafeSysctls: [\"kernel.msg*\", \"foo*\"]\n").await;
    let root = dir.path().join("root");
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--root-dir",
        root.to_str().unwrap(),
    ];
    let mut p = Proc::spawn(dir.path(), "k", &args);
    assert_eq!(p.wait_exit(T).await, Some(1), "log:\n{}", p.log());
    let log = p.log();
    // klog quotes the error: the sysctl's quotes appear escaped.
    let want = r#"failed to create kubelet: the sysctls \"foo\" are not known to be namespaced"#;
    assert!(log.contains(want), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cpu_requests_beyond_allocatable_are_rejected_fake_cri() {
    let node = FakeNode::new("kubeReserved:\n  cpu: 500m\n").await;
    let big = busybox_pod("big", "busybox", "Always", "sleep 3600").replace(
        "    imagePullPolicy:",
        "    resources:\n      requests:\n        cpu: \"1000\"\n    imagePullPolicy:",
    );
    node.manifest("big.yaml", &big);
    let p = node.start().await;
    let (cri, ro) = (&node.cri, node.ro);
    let pod = wait_pods(&p, ro, "the big pod", |pods| pods.remove("big-adm")).await;
    assert_eq!(pod["status"]["phase"], "Failed", "{pod}");
    assert_eq!(pod["status"]["reason"], "UnexpectedAdmissionError", "{pod}");
    let message = pod["status"]["message"].as_str().unwrap();
    let prefix = "Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: ";
    let missing: i64 = message
        .strip_prefix(prefix)
        .and_then(|m| m.strip_suffix("), ]"))
        .expect(message)
        .parse()
        .unwrap();
    // Missing: the 1000 cores asked for minus the online cores less kubeReserved's 500m.
    assert!(
        missing < 1_000_000 && (missing - 500) % 1000 == 0,
        "{message}"
    );
    assert_sandboxes_run(cri, 0);
    stop(p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_static_pod_of_higher_priority_preempts_a_lower_one_fake_cri() {
    let node = FakeNode::new("maxPods: 1\n").await;
    let with_priority = |name: &str, priority: i32| {
        busybox_pod(name, "busybox", "Always", "sleep 3600").replace(
            "  containers:\n",
            &format!("  priority: {priority}\n  containers:\n"),
        )
    };
    node.manifest("low.yaml", &with_priority("low", 5));
    let p = node.start().await;
    let ro = node.ro;
    let phase_is =
        |pods: &std::collections::BTreeMap<String, serde_json::Value>, n: &str, want: &str| {
            pods.get(n).is_some_and(|p| p["status"]["phase"] == want)
        };
    wait_pods(&p, ro, "low Running", |pods| {
        phase_is(pods, "low-adm", "Running").then_some(())
    })
    .await;
    node.manifest("high.yaml", &with_priority("high", 10));
    let low = wait_pods(&p, ro, "low preempted, high Running", |pods| {
        let done = phase_is(pods, "low-adm", "Failed") && phase_is(pods, "high-adm", "Running");
        done.then(|| pods["low-adm"]["status"].clone())
    })
    .await;
    assert_eq!(low["reason"], "Preempting", "{low}");
    assert_eq!(
        low["message"], "Preempted in order to admit critical pod",
        "{low}"
    );
    let conditions = low["conditions"].as_array().unwrap();
    let target = conditions
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .unwrap();
    assert_eq!(target["reason"], "TerminationByKubelet", "{target}");
    stop(p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rejected_static_pods_end_failed_beside_a_running_pod_real_containerd() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-admission").await;
    node.start().await;
    let image = node.busybox.clone();
    node.write_manifest(
        "sysctl.yaml",
        &sysctl_pod("sysctl", &image, "kernel.msgmax"),
    );
    node.write_manifest("nfs.yaml", &nfs_pod("nfs", &image));
    // containerd 1.6 does not report the SupplementalGroupsPolicy feature: Strict is
    // refused at admission, Merge (what the runtime does anyway) runs.
    node.write_manifest(
        "strict.yaml",
        &supplemental_groups_pod("strict", &image, "Strict"),
    );
    node.write_manifest(
        "normal.yaml",
        &supplemental_groups_pod("normal", &image, "Merge"),
    );
    node.wait_for("normal Running, the others Failed", T, || async {
        let done = node.phase("normal").as_deref() == Some("Running")
            && node.phase("sysctl").as_deref() == Some("Failed")
            && node.phase("nfs").as_deref() == Some("Failed")
            && node.phase("strict").as_deref() == Some("Failed");
        done.then_some(())
    })
    .await;
    let pods = pods_by_name(node.ro_port);
    assert_rejected(
        &pods["sysctl-rt-admission"],
        "SysctlForbidden",
        "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted",
    );
    assert_rejected(
        &pods["nfs-rt-admission"],
        "UnsupportedPodFeature",
        NFS_REJECTED,
    );
    assert_rejected(
        &pods["strict-rt-admission"],
        "SupplementalGroupsPolicyNotSupported",
        "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node",
    );
    // The runtime reports no `user`, so neither does the status.
    let normal = &pods["normal-rt-admission"]["status"]["containerStatuses"][0];
    assert!(normal["state"]["running"].is_object(), "{normal}");
    assert_eq!(normal.get("user"), None, "{normal}");
    // Merge: the process has the pod's group 4000 and the groups the image's /etc/group
    // gives its user (root).
    let running = node.running("normal").await;
    let pid = node.container_pid(&running[0].id).await;
    let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let groups: Vec<&str> = proc_status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .unwrap()
        .split_whitespace()
        .collect();
    let etc_group = std::fs::read_to_string(format!("/proc/{pid}/root/etc/group")).unwrap();
    let image_groups: Vec<&str> = etc_group
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() == 4 && f[3].split(',').any(|m| m == "root")).then_some(f[2])
        })
        .collect();
    assert!(groups.contains(&"4000"), "{groups:?}");
    for g in &image_groups {
        assert!(groups.contains(g), "image group {g} missing: {groups:?}");
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for name in ["sysctl", "nfs", "strict"] {
        assert!(
            node.sandboxes(name).await.is_empty(),
            "{name} pod reached containerd"
        );
    }
    assert_eq!(node.running("normal").await.len(), 1);
    node.cleanup().await;
}
