//! `GetKubeletContainerLogs` (`pkg/kubelet/kubelet_pods.go`) and the runtime half,
//! `kuberuntime` `GetContainerLogs`/`ReadLogs`: which container instance a log request means
//! (`validateContainerLogStatus`), then its CRI log file read by [`kubelet_cri::logs`].

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use kubelet_container::ContainerId;
use kubelet_cri::RuntimeService;
use kubelet_cri::logs::{LogOptions, read_logs};
use kubelet_server::{LogSink, LogStreamer, PodLogOptions};

/// `images.ErrImagePull` / `images.ErrImagePullBackOff`.
const ERR_IMAGE_PULL: &str = "ErrImagePull";
const ERR_IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";

fn find_status<'a>(
    statuses: Option<&'a Vec<ContainerStatus>>,
    name: &str,
) -> Option<&'a ContainerStatus> {
    statuses.and_then(|s| s.iter().find(|c| c.name == name))
}

/// `validateContainerLogStatus`: the ID of the container instance whose log is wanted.
pub fn validate_container_log_status(
    pod_name: &str,
    status: &PodStatus,
    container: &str,
    previous: bool,
) -> Result<ContainerId, String> {
    let c = find_status(status.container_statuses.as_ref(), container)
        .or_else(|| find_status(status.init_container_statuses.as_ref(), container))
        .or_else(|| find_status(status.ephemeral_container_statuses.as_ref(), container))
        .ok_or_else(|| format!("container {container:?} in pod {pod_name:?} is not available"))?;
    let last_terminated = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    let last_id = last_terminated
        .and_then(|t| t.container_id.as_deref())
        .filter(|id| !id.is_empty());
    let state = c.state.clone().unwrap_or_default();
    let id = if previous {
        last_id.ok_or_else(|| {
            format!("previous terminated container {container:?} in pod {pod_name:?} not found")
        })?
    } else if state.running.is_some() {
        c.container_id.as_deref().unwrap_or_default()
    } else if let Some(t) = &state.terminated {
        // When the next container did not start, the terminated state has no ID: the
        // last terminated instance's log is shown.
        match t.container_id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => id,
            None => last_id.ok_or_else(|| {
                format!("container {container:?} in pod {pod_name:?} is terminated")
            })?,
        }
    } else if last_terminated.is_some() {
        last_id
            .ok_or_else(|| format!("container {container:?} in pod {pod_name:?} is terminated"))?
    } else if let Some(w) = &state.waiting {
        let reason = w.reason.as_deref().unwrap_or_default();
        return Err(match reason {
            ERR_IMAGE_PULL => format!(
                "container {container:?} in pod {pod_name:?} is waiting to start: image can't be pulled"
            ),
            ERR_IMAGE_PULL_BACK_OFF => format!(
                "container {container:?} in pod {pod_name:?} is waiting to start: trying and failing to pull image"
            ),
            _ => {
                format!("container {container:?} in pod {pod_name:?} is waiting to start: {reason}")
            }
        });
    } else {
        return Err(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start - no logs yet"
        ));
    };
    // `ParseContainerID`: a malformed ID yields an empty one (and no log).
    Ok(id.parse().unwrap_or_default())
}

/// `NewLogOptions` from the request's `PodLogOptions` (with the `stream` choice).
pub fn log_options(opts: &PodLogOptions, now: jiff::Timestamp) -> LogOptions {
    let mut o = LogOptions::new(
        opts.tail_lines,
        opts.limit_bytes,
        opts.since_seconds,
        opts.since_time,
        now,
    );
    o.follow = opts.follow;
    o.timestamp = opts.timestamps;
    match opts.stream.as_deref() {
        Some("Stdout") => o.stderr = false,
        Some("Stderr") => o.stdout = false,
        _ => {}
    }
    o
}

/// `kubeGenericRuntimeManager.GetContainerLogs`: the log path from ContainerStatus, then
/// `ReadLogs` into `sink`.
pub fn stream_container_logs(
    runtime: Arc<dyn RuntimeService>,
    id: ContainerId,
    opts: LogOptions,
    sink: LogSink,
) -> LogStreamer {
    Box::pin(async move {
        let resp = runtime.container_status(&id.id, false).await.map_err(|e| {
            tracing::debug!(container_id = %id, err = %e, "Failed to get container status");
            format!("unable to retrieve container logs for {id}")
        })?;
        let status = resp.status.ok_or("container status is nil")?;
        let mut sink = sink;
        read_logs(
            std::path::Path::new(&status.log_path),
            &id.id,
            &opts,
            runtime.as_ref(),
            &mut sink,
        )
        .await
        .map_err(|e| e.to_string())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    };

    fn status(c: ContainerStatus) -> PodStatus {
        PodStatus {
            container_statuses: Some(vec![c]),
            ..PodStatus::default()
        }
    }

    fn terminated(id: &str) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                container_id: Some(id.into()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }
    }

    fn running(id: &str, last: Option<&str>) -> ContainerStatus {
        ContainerStatus {
            name: "app".into(),
            container_id: Some(id.into()),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..ContainerState::default()
            }),
            last_state: last.map(terminated),
            ..ContainerStatus::default()
        }
    }

    fn check(s: &PodStatus, previous: bool) -> Result<String, String> {
        validate_container_log_status("web", s, "app", previous).map(|id| id.id)
    }

    #[test]
    fn running_and_previous_instances() {
        let s = status(running("containerd://new", Some("containerd://old")));
        assert_eq!(check(&s, false).unwrap(), "new");
        assert_eq!(check(&s, true).unwrap(), "old");
        let s = status(running("containerd://new", None));
        assert_eq!(
            check(&s, true).unwrap_err(),
            r#"previous terminated container "app" in pod "web" not found"#
        );
        assert_eq!(
            validate_container_log_status("web", &s, "other", false).unwrap_err(),
            r#"container "other" in pod "web" is not available"#
        );
    }

    #[test]
    fn terminated_without_id_falls_back_to_the_last_instance() {
        let mut c = running("", Some("containerd://old"));
        c.state = Some(terminated(""));
        assert_eq!(check(&status(c.clone()), false).unwrap(), "old");
        c.last_state = None;
        assert_eq!(
            check(&status(c), false).unwrap_err(),
            r#"container "app" in pod "web" is terminated"#
        );
    }

    #[test]
    fn waiting_reasons() {
        let waiting = |reason: &str| {
            let mut c = running("", None);
            c.state = Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.into()),
                    ..ContainerStateWaiting::default()
                }),
                ..ContainerState::default()
            });
            check(&status(c), false).unwrap_err()
        };
        assert_eq!(
            waiting("ErrImagePull"),
            r#"container "app" in pod "web" is waiting to start: image can't be pulled"#
        );
        assert_eq!(
            waiting("ImagePullBackOff"),
            r#"container "app" in pod "web" is waiting to start: trying and failing to pull image"#
        );
        assert_eq!(
            waiting("ContainerCreating"),
            r#"container "app" in pod "web" is waiting to start: ContainerCreating"#
        );
        let mut c = running("", None);
        c.state = None;
        assert_eq!(
            check(&status(c), false).unwrap_err(),
            r#"container "app" in pod "web" is waiting to start - no logs yet"#
        );
    }
}
