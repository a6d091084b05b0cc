//! CRI helpers shared by the variants: connecting, finding the benchmark's sandboxes, tearing
//! them down and waiting until they are gone, and removing the pod cgroups left behind.
//!
//! Only sandboxes in namespace [`NAMESPACE`] or named with [`NAME_PREFIX`] are ever touched: the
//! same containerd may run other tests' pods.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubelet_cri::v1::{
    ContainerFilter, ContainerState, ContainerStateValue, PodSandbox, PodSandboxState,
};
use kubelet_cri::{RemoteRuntimeService, RuntimeService};

use crate::error::{BenchError, BenchResult};
use crate::manifest::{NAME_PREFIX, NAMESPACE};

/// Label the kubelet (and the floor) put on sandboxes and containers: the pod name.
pub const POD_NAME_LABEL: &str = "io.kubernetes.pod.name";
/// Label: the pod namespace.
pub const POD_NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
/// Label: the pod UID.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// Label: the container name.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";

/// Per-call timeout of the benchmark's CRI client (the kubelet's runtimeRequestTimeout).
pub const CRI_TIMEOUT: Duration = Duration::from_secs(120);

/// Connects to the runtime at `endpoint` (`unix:///...`).
pub async fn connect(endpoint: &str) -> BenchResult<Arc<RemoteRuntimeService>> {
    let rt = RemoteRuntimeService::connect(endpoint, CRI_TIMEOUT)
        .await
        .map_err(BenchError::cri(format!("connect to {endpoint}")))?;
    Ok(Arc::new(rt))
}

/// Whether `sb` belongs to the benchmark.
pub fn is_bench_sandbox(sb: &PodSandbox) -> bool {
    sb.metadata
        .as_ref()
        .is_some_and(|m| m.namespace == NAMESPACE || m.name.starts_with(NAME_PREFIX))
}

/// Every sandbox of the benchmark the runtime lists.
pub async fn bench_sandboxes(rt: &RemoteRuntimeService) -> BenchResult<Vec<PodSandbox>> {
    let all = rt
        .list_pod_sandbox(None)
        .await
        .map_err(BenchError::cri("ListPodSandbox"))?;
    Ok(all.into_iter().filter(is_bench_sandbox).collect())
}

/// Pod names (label [`POD_NAME_LABEL`]) of the benchmark's RUNNING containers: one
/// ListContainers call filtered by state and namespace label.
pub async fn running_pod_names(rt: &RemoteRuntimeService) -> BenchResult<Vec<String>> {
    Ok(running_containers_in(rt, NAMESPACE)
        .await?
        .into_iter()
        .filter_map(|c| c.labels.get(POD_NAME_LABEL).cloned())
        .collect())
}

/// The RUNNING containers of pods in `namespace`: one ListContainers call filtered by state
/// and namespace label.
pub async fn running_containers_in(
    rt: &RemoteRuntimeService,
    namespace: &str,
) -> BenchResult<Vec<kubelet_cri::v1::Container>> {
    let filter = ContainerFilter {
        state: Some(ContainerStateValue {
            state: ContainerState::ContainerRunning as i32,
        }),
        label_selector: [(POD_NAMESPACE_LABEL.to_owned(), namespace.to_owned())].into(),
        ..Default::default()
    };
    rt.list_containers(Some(&filter))
        .await
        .map_err(BenchError::cri("ListContainers"))
}

/// StopPodSandbox + RemovePodSandbox of `id`; a sandbox already gone is fine.
pub async fn stop_and_remove(rt: &RemoteRuntimeService, id: &str) -> BenchResult<()> {
    let ignore_gone = |r: kubelet_cri::CriResult<()>, what: &str| match r {
        Err(e) if !e.is_not_found() => Err(BenchError::Cri {
            what: format!("{what} {id}"),
            source: e,
        }),
        _ => Ok(()),
    };
    ignore_gone(rt.stop_pod_sandbox(id).await, "StopPodSandbox")?;
    ignore_gone(rt.remove_pod_sandbox(id).await, "RemovePodSandbox")
}

/// Polls until the runtime lists no sandbox of the benchmark; returns when that happened.
pub async fn wait_none_listed(
    rt: &RemoteRuntimeService,
    poll: Duration,
    timeout: Duration,
) -> BenchResult<Option<Instant>> {
    let deadline = Instant::now() + timeout;
    loop {
        if bench_sandboxes(rt).await?.is_empty() {
            return Ok(Some(Instant::now()));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(poll).await;
    }
}

/// Removes every sandbox of the benchmark (leftovers of an earlier, interrupted run, or of a
/// kubelet that was stopped) and their pod cgroups; returns how many there were.
pub async fn cleanup_leftovers(rt: &RemoteRuntimeService) -> BenchResult<usize> {
    let leftovers = bench_sandboxes(rt).await?;
    let uids: BTreeSet<String> = leftovers.iter().filter_map(sandbox_uid).collect();
    let mut first_err = None;
    for sb in &leftovers {
        if let Err(e) = stop_and_remove(rt, &sb.id).await {
            first_err.get_or_insert(e);
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let gone = wait_none_listed(rt, Duration::from_millis(100), Duration::from_secs(60)).await?;
    if gone.is_none() {
        return Err(BenchError::Timeout(
            "benchmark sandboxes still listed 60 s after StopPodSandbox + RemovePodSandbox".into(),
        ));
    }
    remove_pod_cgroups(uids.iter().map(String::as_str));
    Ok(leftovers.len())
}

/// The pod UID of a sandbox (metadata, or the label).
pub fn sandbox_uid(sb: &PodSandbox) -> Option<String> {
    sb.metadata
        .as_ref()
        .map(|m| m.uid.clone())
        .filter(|u| !u.is_empty())
        .or_else(|| sb.labels.get(POD_UID_LABEL).cloned())
}

/// Whether `sb` is still ready (not stopped).
pub fn is_ready(sb: &PodSandbox) -> bool {
    sb.state == PodSandboxState::SandboxReady as i32
}

/// Best-effort rmdir of `kubepods[/<qos>]/pod<uid>` in every cgroup hierarchy: runc removes
/// the container cgroups but not the pod-level parent a kubelet would remove.
pub fn remove_pod_cgroups<'a>(uids: impl IntoIterator<Item = &'a str>) {
    let root = Path::new("/sys/fs/cgroup");
    let Ok(hierarchies) = std::fs::read_dir(root) else {
        return;
    };
    let hierarchies: Vec<_> = hierarchies.flatten().map(|e| e.path()).collect();
    for uid in uids {
        if uid.is_empty() || uid.contains('/') || uid.contains("..") {
            continue;
        }
        for h in &hierarchies {
            for qos in ["", "besteffort", "burstable"] {
                let dir = h.join("kubepods").join(qos).join(format!("pod{uid}"));
                // ENOENT (other hierarchy layout) and EBUSY (still in use) are both fine here.
                let _ = std::fs::remove_dir(&dir);
            }
        }
    }
}
