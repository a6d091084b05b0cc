//! The binary's pod lifecycle, in-process, without root, over the recording fake CRI:
//! a static pod is added, updated, crash-loops, completes, is deleted, and survives a
//! kubelet restart.
//! Each test drives the real sync loop, pod workers, `SyncPod`, PLEG and housekeeping
//! (`crates/app/src/kubelet/`), through the kubelet of `tests/support`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::{TestKubelet, attempt, container_name, pod_manifest};

/// CRI calls that change what runs.
const MUTATING: [&str; 7] = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
];

fn mutating_calls(calls: &[String]) -> Vec<&str> {
    calls
        .iter()
        .map(String::as_str)
        .filter(|c| MUTATING.contains(c))
        .collect()
}

#[tokio::test]
async fn added_pod_runs_its_init_container_then_its_container() {
    let k = TestKubelet::started().await;
    let init = "  initContainers:
  - name: init
    image: busybox:1.36
    command: [\"true\"]
";
    k.write_manifest(
        "web.yaml",
        &pod_manifest("web", "uid-add", "sleep 1d", init),
    );

    let init_c = k.wait_running("uid-add", "init").await;
    assert!(
        k.running_container("uid-add", "main").is_none(),
        "main started before its init container finished"
    );
    let phase = k.pod_status("uid-add").and_then(|s| s.phase);
    assert_eq!(phase.as_deref(), Some("Pending"));

    k.exit_container("uid-add", "init", 0);
    let main = k.wait_running("uid-add", "main").await;
    assert_eq!(main.sandbox_id, init_c.sandbox_id);

    let status = k
        .wait_until("phase Running", || {
            k.pod_status("uid-add")
                .filter(|s| s.phase.as_deref() == Some("Running"))
        })
        .await;
    let init_status = &status.init_container_statuses.unwrap()[0];
    let terminated = init_status.state.as_ref().unwrap().terminated.as_ref();
    assert_eq!(terminated.map(|t| t.exit_code), Some(0), "{init_status:?}");
    let sandbox = k.ready_sandbox("uid-add").unwrap();
    let meta = sandbox.config.metadata.as_ref().unwrap();
    assert_eq!(
        (
            meta.name.as_str(),
            meta.namespace.as_str(),
            meta.uid.as_str()
        ),
        ("web-fake-node", "default", "uid-add")
    );
    let calls = k.calls();
    assert_eq!(
        mutating_calls(&calls),
        [
            "RunPodSandbox",
            "CreateContainer",
            "StartContainer",
            "CreateContainer",
            "StartContainer"
        ],
        "{calls:?}"
    );
    assert!(k.cri.image.called().contains(&"PullImage".to_string()));
}

#[tokio::test]
async fn spec_change_restarts_the_container_in_the_same_sandbox() {
    let k = TestKubelet::started().await;
    k.write_manifest("web.yaml", &pod_manifest("web", "uid-upd", "sleep 1d", ""));
    let old = k.wait_running("uid-upd", "main").await;
    k.runtime().clear_calls();

    // Only a container's name and image are hashed (upstream `HashContainer`): a new image
    // restarts it; the UID is fixed in the manifest, so this is an update, not a new pod.
    let manifest = pod_manifest("web", "uid-upd", "sleep 1d", "");
    k.write_manifest(
        "web.yaml",
        &manifest.replace("busybox:1.36", "busybox:1.37"),
    );
    let new = k
        .wait_until("the changed container running", || {
            k.running_container("uid-upd", "main")
                .filter(|c| c.status.id != old.status.id)
        })
        .await;
    assert_eq!(new.sandbox_id, old.sandbox_id, "the sandbox must be kept");
    assert_eq!(attempt(&new), 1);
    let image = |c: &kubelet_cri::fake::FakeContainer| c.config.image.clone().unwrap();
    assert_eq!(image(&new).user_specified_image, "busybox:1.37");
    assert_ne!(
        image(&new).image,
        image(&old).image,
        "created from the new image's ID"
    );
    let stopped = k.runtime().with_state(|s| s.stop_timeouts.clone());
    assert_eq!(
        stopped,
        [(old.status.id.clone(), 7)],
        "the old container is stopped with the pod's grace period"
    );
    let calls = k.calls();
    assert!(!calls.contains(&"RunPodSandbox".to_string()), "{calls:?}");
    assert!(!calls.contains(&"StopPodSandbox".to_string()), "{calls:?}");
}

#[tokio::test]
async fn crash_looping_container_is_restarted_with_back_off() {
    let k = TestKubelet::started().await;
    k.write_manifest(
        "crash.yaml",
        &pod_manifest("crash", "uid-crash", "exit 1", ""),
    );
    let first = k.wait_running("uid-crash", "main").await;

    // The first failure is restarted at once: the back-off starts with it.
    k.exit_container("uid-crash", "main", 1);
    let second = k
        .wait_until("restart 1", || {
            k.running_container("uid-crash", "main")
                .filter(|c| attempt(c) == 1)
        })
        .await;
    assert_eq!(second.sandbox_id, first.sandbox_id);

    // The second failure within the back-off waits it out, and says so.
    k.exit_container("uid-crash", "main", 1);
    let waiting = k
        .wait_until("CrashLoopBackOff reported", || {
            let s = k.container_status("uid-crash", "main")?;
            let w = s.state.as_ref()?.waiting.clone()?;
            (w.reason.as_deref() == Some("CrashLoopBackOff")).then_some((s, w))
        })
        .await;
    let (status, w) = waiting;
    assert_eq!(
        w.message.as_deref(),
        Some(
            "back-off 10s restarting failed container=main pod=crash-fake-node_default(uid-crash)"
        )
    );
    assert_eq!(status.restart_count, 1);
    let last = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref());
    assert_eq!(last.map(|t| t.exit_code), Some(1), "{status:?}");
    assert!(!status.ready);
    assert!(
        k.running_container("uid-crash", "main").is_none(),
        "restarted inside the back-off"
    );

    // When the back-off expires the container is started again.
    let third = k
        .wait_until("restart 2 after the back-off", || {
            k.running_container("uid-crash", "main")
                .filter(|c| attempt(c) == 2)
        })
        .await;
    assert_eq!(third.sandbox_id, first.sandbox_id);
    k.wait_until("restartCount 2 reported", || {
        let s = k.container_status("uid-crash", "main")?;
        (s.restart_count == 2 && s.state.as_ref()?.running.is_some()).then_some(())
    })
    .await;
    let calls = k.calls();
    assert_eq!(
        calls.iter().filter(|c| *c == "RunPodSandbox").count(),
        1,
        "{calls:?}"
    );
}

#[tokio::test]
async fn deleted_pod_is_stopped_with_its_grace_period_and_its_sandbox_removed() {
    let k = TestKubelet::started().await;
    k.write_manifest("web.yaml", &pod_manifest("web", "uid-del", "sleep 1d", ""));
    let main = k.wait_running("uid-del", "main").await;
    let sandbox = k.ready_sandbox("uid-del").unwrap();
    k.runtime().clear_calls();

    k.remove_manifest("web.yaml");
    k.wait_until("the sandbox removed", || {
        k.sandboxes("uid-del").is_empty().then_some(())
    })
    .await;
    let stopped = k.runtime().with_state(|s| s.stop_timeouts.clone());
    assert_eq!(stopped, [(main.status.id.clone(), 7)]);
    let calls = k.calls();
    let order: Vec<&str> = mutating_calls(&calls);
    let pos = |m: &str| order.iter().position(|c| *c == m);
    assert!(
        pos("StopContainer") < pos("StopPodSandbox")
            && pos("StopPodSandbox") < pos("RemovePodSandbox"),
        "containers stopped, then the sandbox stopped and removed: {calls:?}"
    );
    assert!(pos("StopContainer").is_some(), "{calls:?}");
    assert!(!calls.contains(&"RunPodSandbox".to_string()), "{calls:?}");
    assert!(
        k.runtime().sandbox(&sandbox.status.id).is_none(),
        "sandbox {} is still there",
        sandbox.status.id
    );
    k.wait_until("the pod forgotten", || {
        (k.kubelet().pod_manager.get("uid-del").is_none()
            && !k.kubelet().pod_workers.is_working("uid-del"))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn restarted_kubelet_adopts_running_containers_and_stops_orphans() {
    let mut k = TestKubelet::started().await;
    k.write_manifest(
        "keep.yaml",
        &pod_manifest("keep", "uid-keep", "sleep 1d", ""),
    );
    k.write_manifest(
        "gone.yaml",
        &pod_manifest("gone", "uid-gone", "sleep 1d", ""),
    );
    let kept = k.wait_running("uid-keep", "main").await;
    let gone = k.wait_running("uid-gone", "main").await;

    k.stop().await;
    // While the kubelet is down, one manifest goes away; the containers keep running.
    k.remove_manifest("gone.yaml");
    assert!(k.running_container("uid-keep", "main").is_some());
    k.runtime().clear_calls();
    k.start().await;

    // The new kubelet reports the running container it found, without restarting it...
    let adopted = k.wait_running("uid-keep", "main").await;
    assert_eq!(adopted.status.id, kept.status.id);
    let status = k.container_status("uid-keep", "main").unwrap();
    assert_eq!(status.restart_count, 0);
    // ...and stops the pod whose manifest is gone, as an orphan.
    k.wait_until("the orphan stopped", || {
        k.runtime()
            .container(&gone.status.id)
            .is_none_or(|c| !c.is(kubelet_cri::v1::ContainerState::ContainerRunning))
            .then_some(())
    })
    .await;

    // A few sync ticks, PLEG relists and housekeeping rounds later, nothing touched the
    // adopted pod.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let adopted_sandbox = kept.sandbox_id.clone();
    let touched: Vec<(String, i64)> = k
        .runtime()
        .with_state(|s| s.stop_timeouts.clone())
        .into_iter()
        .filter(|(id, _)| *id == kept.status.id)
        .collect();
    assert!(touched.is_empty(), "adopted container stopped: {touched:?}");
    let containers = k.containers("uid-keep");
    assert_eq!(containers.len(), 1, "{containers:?}");
    assert_eq!(container_name(&containers[0]), "main");
    assert!(k.running_container("uid-keep", "main").is_some());
    assert_eq!(
        k.ready_sandbox("uid-keep").map(|s| s.status.id),
        Some(adopted_sandbox)
    );
    let calls = k.calls();
    for m in ["RunPodSandbox", "CreateContainer", "StartContainer"] {
        assert!(
            !calls.iter().any(|c| c == m),
            "{m} after the restart: {calls:?}"
        );
    }
}

#[tokio::test]
async fn completed_pod_with_restart_policy_never_succeeds_and_is_torn_down() {
    let k = TestKubelet::started().await;
    let never = "  restartPolicy: Never\n";
    k.write_manifest("job.yaml", &pod_manifest("job", "uid-job", "true", never));
    let main = k.wait_running("uid-job", "main").await;

    k.exit_container("uid-job", "main", 0);
    let status = k
        .wait_until("phase Succeeded", || {
            k.pod_status("uid-job")
                .filter(|s| s.phase.as_deref() == Some("Succeeded"))
        })
        .await;
    let c = &status.container_statuses.unwrap()[0];
    let terminated = c
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .unwrap();
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
    // A finished pod's sandbox is stopped; its container is never started again.
    k.wait_until("the sandbox stopped", || {
        k.ready_sandbox("uid-job").is_none().then_some(())
    })
    .await;
    let calls = k.calls();
    let created = calls.iter().filter(|c| *c == "CreateContainer").count();
    assert_eq!(created, 1, "{calls:?}");
    assert!(
        k.runtime()
            .container(&main.status.id)
            .is_none_or(|c| !c.is(kubelet_cri::v1::ContainerState::ContainerRunning)),
        "the finished container runs again"
    );
}

#[tokio::test]
async fn the_kubelet_and_the_runtime_record_upstream_s_events() {
    let k = TestKubelet::started().await;
    k.write_manifest(
        "web.yaml",
        &pod_manifest("web", "uid-events", "sleep 1d", ""),
    );
    k.wait_running("uid-events", "main").await;
    let events = k
        .wait_until("the Started event", || {
            let lines = k.recorder.lines();
            lines
                .iter()
                .any(|l| l == "Normal Started Container started")
                .then_some(k.recorder.events())
        })
        .await;
    // `BirthCry` first, about the node (apiVersion v1, kind Node, the node name).
    assert_eq!(
        (events[0].reason.as_str(), events[0].message.as_str()),
        ("Starting", "Starting kubelet.")
    );
    assert_eq!(events[0].object.kind.as_deref(), Some("Node"));
    assert_eq!(events[0].object.name.as_deref(), Some("fake-node"));
    assert_eq!(
        (events[1].reason.as_str(), events[1].message.as_str()),
        (
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods"
        )
    );
    let pod_events: Vec<String> = events
        .iter()
        .filter(|e| e.object.uid.as_deref() == Some("uid-events"))
        .map(|e| {
            format!(
                "{} {} {}",
                e.object.field_path.as_deref().unwrap_or("-"),
                e.reason,
                e.message
            )
        })
        .collect();
    assert_eq!(pod_events.len(), 4, "{pod_events:?}");
    assert_eq!(
        pod_events[0],
        "spec.containers{main} Pulling Pulling image \"busybox:1.36\""
    );
    assert!(
        pod_events[1].starts_with(
            "spec.containers{main} Pulled Successfully pulled image \"busybox:1.36\" in "
        ) && pod_events[1].ends_with(" bytes."),
        "{pod_events:?}"
    );
    assert_eq!(
        pod_events[2..],
        [
            "spec.containers{main} Created Container created",
            "spec.containers{main} Started Container started",
        ]
    );
}

/// `activeDeadlineSeconds` (upstream `active_deadline.go`): once the pod has been active
/// that long, the sync loop resyncs it on its own, the status is `Failed` with reason
/// `DeadlineExceeded`, and the containers are stopped.
#[tokio::test]
async fn pod_past_its_active_deadline_is_failed_and_killed() {
    let k = TestKubelet::started().await;
    k.write_manifest(
        "deadline.yaml",
        &pod_manifest(
            "deadline",
            "uid-deadline",
            "sleep 1d",
            "  activeDeadlineSeconds: 2\n",
        ),
    );
    let main = k.wait_running("uid-deadline", "main").await;
    let status = k
        .wait_until("phase Failed", || {
            k.pod_status("uid-deadline")
                .filter(|s| s.phase.as_deref() == Some("Failed"))
        })
        .await;
    assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
    assert_eq!(
        status.message.as_deref(),
        Some("Pod was active on the node longer than the specified deadline")
    );
    k.wait_until("the container stopped", || {
        k.running_container("uid-deadline", "main")
            .is_none()
            .then_some(())
    })
    .await;
    let stopped = k.runtime().with_state(|s| s.stop_timeouts.clone());
    assert!(
        stopped.iter().any(|(id, _)| *id == main.status.id),
        "{stopped:?}"
    );
    assert!(
        k.running_container("uid-deadline", "main").is_none(),
        "not restarted"
    );
}
