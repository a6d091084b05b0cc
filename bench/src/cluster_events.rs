//! The cluster-mode halves of B8 and B9 (`cluster-node`), on the node's own containerd:
//!
//! * **B8, teardown through the API**: every pod of the first batch (30 by default) is deleted
//!   through the API at once; the clock runs from the first delete until the node's runtime
//!   shows no ready sandbox and no running container of the benchmark's namespace
//!   (*stopped*), and until the API lists no pod any more (*gone*: the kubelet reported the
//!   final status and the pods were removed).
//! * **B9, a kill seen in the API**: pods with `restartPolicy: Never` are started; for each in
//!   turn, after a pause whose fraction of a second differs per kill
//!   ([`crate::event_detect::kill_phase`], the same phases for both kubelets of a repetition),
//!   its container's init process is sent SIGKILL from outside
//!   ([`crate::event_detect::kill_from_outside`]); a watch on the pod, opened before the kill,
//!   gives the time the API first shows the container no longer running with that ID, and CRI
//!   `ContainerStatus` polled beside it gives the floor (the runtime reports EXITED).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kubelet_cri::v1::PodSandboxState;
use kubelet_cri::{RemoteRuntimeService, RuntimeService};
use serde::{Deserialize, Serialize};

use crate::cluster::{NAMESPACE, Result, bench_pod, ms};
use crate::cri_ops::running_containers_in;
use crate::event_detect::{
    ContainerView, cri_exited_after, kill_from_outside, kill_phase, pod_container_view, shows_kill,
};

/// B8 in cluster mode.
#[derive(Debug, Clone, Serialize)]
pub struct ApiTeardown {
    /// Pods deleted.
    pub pods: usize,
    /// First delete → no ready sandbox and no running container of the namespace (CRI).
    pub stopped_ms: f64,
    /// First delete → the API lists no pod of the namespace.
    pub gone_ms: f64,
}

/// One kill of B9 in cluster mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiKill {
    /// The pod.
    pub pod: String,
    /// The container killed (bare ID).
    pub container_id: String,
    /// Its init process.
    pub pid: u32,
    /// Pause before the kill.
    pub pause_s: f64,
    /// Kill → the API's status no longer shows the container running with that ID.
    pub api_status_s: f64,
    /// How the API showed it.
    pub status_seen: String,
    /// Kill → CRI reports the container EXITED (`None`: not within the timeout).
    pub cri_exited_s: Option<f64>,
}

/// The median of the kills' API times, in s.
pub fn median_api_s(kills: &[ApiKill]) -> Option<f64> {
    let v: Vec<f64> = kills.iter().map(|k| k.api_status_s).collect();
    crate::stats::median(&v)
}

/// The slowest kill's API time, in s.
pub fn max_api_s(kills: &[ApiKill]) -> Option<f64> {
    kills.iter().map(|k| k.api_status_s).reduce(f64::max)
}

/// The median of the kills' CRI EXITED times, in s.
pub fn median_cri_s(kills: &[ApiKill]) -> Option<f64> {
    let v: Vec<f64> = kills.iter().filter_map(|k| k.cri_exited_s).collect();
    crate::stats::median(&v)
}

fn cri_err<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> String {
    move |e| format!("CRI {what}: {e}")
}

/// (ready sandboxes, running containers) of the benchmark's namespace on the node.
async fn namespace_busy(rt: &RemoteRuntimeService) -> Result<(usize, usize)> {
    let ready = rt
        .list_pod_sandbox(None)
        .await
        .map_err(cri_err("ListPodSandbox"))?
        .iter()
        .filter(|s| {
            s.state == PodSandboxState::SandboxReady as i32
                && s.metadata
                    .as_ref()
                    .is_some_and(|m| m.namespace == NAMESPACE)
        })
        .count();
    let running = running_containers_in(rt, NAMESPACE)
        .await
        .map_err(|e| e.to_string())?
        .len();
    Ok((ready, running))
}

/// Deletes every pod of the namespace through the API and times the teardown (module doc).
pub async fn teardown(
    client: &Client,
    rt: &RemoteRuntimeService,
    timeout: Duration,
) -> Result<ApiTeardown> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let names: Vec<String> = pods
        .list(&Default::default())
        .await
        .map_err(|e| format!("list pods: {e}"))?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    let t0 = Instant::now();
    for name in &names {
        pods.delete(name, &DeleteParams::default())
            .await
            .map_err(|e| format!("delete pod {name}: {e}"))?;
    }
    let deadline = t0 + timeout;
    let mut stopped = None;
    loop {
        let now = Instant::now();
        if stopped.is_none() && namespace_busy(rt).await? == (0, 0) {
            stopped = Some(now - t0);
        }
        if let Some(stopped) = stopped
            && pods
                .list(&Default::default())
                .await
                .map_err(|e| format!("list pods: {e}"))?
                .items
                .is_empty()
        {
            return Ok(ApiTeardown {
                pods: names.len(),
                stopped_ms: ms(stopped),
                gone_ms: ms(Instant::now() - t0),
            });
        }
        if now > deadline {
            return Err(format!(
                "teardown of {} pods not done {timeout:?} after their deletion (stopped: {stopped:?})",
                names.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A pod for one kill: [`bench_pod`] with `restartPolicy: Never`, so the killed container
/// stays terminated and nothing restarts while the next kill is measured.
pub fn kill_pod(name: &str, node: &str) -> Pod {
    let mut pod = bench_pod(name, node);
    if let Some(spec) = pod.spec.as_mut() {
        spec.restart_policy = Some("Never".into());
    }
    pod
}

fn running_id(p: &Pod) -> Option<String> {
    match pod_container_view(&serde_json::to_value(p).ok()?, "c") {
        ContainerView::Running { id } if !id.is_empty() => Some(id),
        _ => None,
    }
}

/// Starts `kills` pods `k-<i>` on `node`, then kills each one's container in turn (module doc).
pub async fn api_kills(
    client: &Client,
    rt: &RemoteRuntimeService,
    node: &str,
    kills: usize,
    phase_seed: f64,
    timeout: Duration,
) -> Result<Vec<ApiKill>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let names: Vec<String> = (0..kills).map(|i| format!("k-{i}")).collect();
    for name in &names {
        pods.create(&PostParams::default(), &kill_pod(name, node))
            .await
            .map_err(|e| format!("create pod {name}: {e}"))?;
    }
    let mut out = Vec::with_capacity(kills);
    for (i, name) in names.iter().enumerate() {
        // The container running with its ID in the API.
        let deadline = Instant::now() + timeout;
        let (id, rv) = loop {
            let p = pods
                .get(name)
                .await
                .map_err(|e| format!("get pod {name}: {e}"))?;
            if let Some(id) = running_id(&p) {
                break (id, p.metadata.resource_version.unwrap_or_default());
            }
            if Instant::now() > deadline {
                return Err(format!("pod {name} not running within {timeout:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let pause = Duration::from_secs(1) + Duration::from_secs_f64(kill_phase(i, phase_seed));
        tokio::time::sleep(pause).await;
        let wp = WatchParams::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(timeout.as_secs().clamp(1, 290) as u32);
        let mut stream = pods
            .watch(&wp, &rv)
            .await
            .map_err(|e| format!("watch pod {name}: {e}"))?
            .boxed();
        let (pid, t0) = kill_from_outside(rt, name, &id)
            .await
            .map_err(|e| e.to_string())?;
        let deadline = t0 + timeout;
        let cri = cri_exited_after(rt, &id, t0, deadline, Duration::from_millis(10));
        let api = async {
            while let Some(ev) = stream.try_next().await.map_err(|e| e.to_string())? {
                if let WatchEvent::Modified(p) = ev
                    && let Ok(v) = serde_json::to_value(&p)
                    && let Some(seen) = shows_kill(&pod_container_view(&v, "c"), &id)
                {
                    return Ok((t0.elapsed(), seen));
                }
            }
            Err(format!(
                "{name}: the watch ended before the API showed container {id} killed"
            ))
        };
        let (cri, api) = tokio::join!(cri, tokio::time::timeout(timeout, api));
        let (at, status_seen) =
            api.map_err(|_| format!("{name}: kill not in the API within {timeout:?}"))??;
        out.push(ApiKill {
            pod: name.clone(),
            container_id: id,
            pid,
            pause_s: pause.as_secs_f64(),
            api_status_s: at.as_secs_f64(),
            status_seen,
            cri_exited_s: cri.map(|d| d.as_secs_f64()),
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn kill(api: f64, cri: Option<f64>) -> ApiKill {
        ApiKill {
            pod: "k-0".into(),
            container_id: "c1".into(),
            pid: 1,
            pause_s: 1.0,
            api_status_s: api,
            status_seen: "terminated".into(),
            cri_exited_s: cri,
        }
    }

    #[test]
    fn kill_pod_never_restarts() {
        let p = kill_pod("k-0", "n1");
        let spec = p.spec.expect("spec");
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.node_name.as_deref(), Some("n1"));
    }

    #[test]
    fn medians_and_max_of_kills() {
        let k = [
            kill(0.5, Some(0.05)),
            kill(0.9, None),
            kill(0.7, Some(0.07)),
        ];
        assert_eq!(median_api_s(&k), Some(0.7));
        assert_eq!(max_api_s(&k), Some(0.9));
        assert!((median_cri_s(&k).expect("cri") - 0.06).abs() < 1e-9);
        assert_eq!(median_api_s(&[]), None);
    }

    #[test]
    fn running_id_reads_the_api_status() {
        let p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "k-0"},
            "status": {"containerStatuses": [{
                "name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                "containerID": "containerd://abc", "state": {"running": {}}
            }]}
        }))
        .expect("pod");
        assert_eq!(running_id(&p).as_deref(), Some("abc"));
        assert_eq!(running_id(&Pod::default()), None);
    }
}
