//! The evented PLEG's input (`pkg/kubelet/pleg/evented.go` `watchEventsChannel`): the CRI
//! `GetContainerEvents` stream, turned into `kubelet_pleg::ContainerEvent`s. Used when the
//! `EventedPLEG` gate is on (alpha, off by default, as upstream) and the runtime implements
//! the stream; otherwise the generic PLEG relists every second on its own.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{ContainerEventResponse, ContainerEventType as CriEventType};
use kubelet_pleg::{ContainerEvent, ContainerEventType, EventedPleg};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long to wait before re-opening a stream that ended (upstream `eventedPlegMaxStreamRetries` spacing).
const RETRY: Duration = Duration::from_secs(1);

/// Converts one CRI event; `None` for events without a pod sandbox or of unknown type.
pub fn convert(e: ContainerEventResponse) -> Option<ContainerEvent> {
    let event_type = match CriEventType::try_from(e.container_event_type).ok()? {
        CriEventType::ContainerCreatedEvent => ContainerEventType::Created,
        CriEventType::ContainerStartedEvent => ContainerEventType::Started,
        CriEventType::ContainerStoppedEvent => ContainerEventType::Stopped,
        CriEventType::ContainerDeletedEvent => ContainerEventType::Deleted,
    };
    let meta = e.pod_sandbox_status.and_then(|s| s.metadata)?;
    Some(ContainerEvent {
        pod_uid: meta.uid,
        pod_name: meta.name,
        pod_namespace: meta.namespace,
        container_id: e.container_id,
        event_type,
        pod_status: None,
    })
}

/// Runs the evented PLEG while the runtime's event stream works. Returns when the runtime
/// does not implement the stream (the generic PLEG keeps its 1 s relist) or on shutdown.
pub async fn run_evented_pleg(
    cri: Arc<dyn RuntimeService>,
    pleg: EventedPleg,
    shutdown: CancellationToken,
) {
    loop {
        let mut stream = match cri.get_container_events().await {
            Ok(s) => {
                kubelet_metrics::with(|m| m.evented_pleg_conn.inc());
                s
            }
            Err(e) if e.is_unimplemented() => {
                tracing::info!(
                    "Runtime does not support GetContainerEvents; using the generic PLEG only"
                );
                return;
            }
            Err(e) => {
                kubelet_metrics::with(|m| m.evented_pleg_conn_err.inc());
                tracing::info!(err = %e, "GetContainerEvents failed; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        tracing::info!("Using the CRI container event stream (evented PLEG)");
        let (tx, rx) = mpsc::channel(kubelet_pleg::PLEG_CHANNEL_CAPACITY);
        let pump = async move {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(e) => {
                        // `updateLatencyMetric`: from the runtime's event time to now.
                        let now = jiff::Timestamp::now().as_nanosecond();
                        let secs = (now - i128::from(e.created_at)) as f64 / 1e9;
                        kubelet_metrics::with(|m| m.evented_pleg_conn_latency.observe(secs));
                        if let Some(ev) = convert(e)
                            && tx.send(ev).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        kubelet_metrics::with(|m| m.evented_pleg_conn_err.inc());
                        tracing::info!(err = %e, "Container event stream failed");
                        return;
                    }
                }
            }
        };
        tokio::select! {
            () = pump => {}
            stream_ended = pleg.run(rx, shutdown.clone()) => if !stream_ended { return },
        }
        if shutdown.is_cancelled() {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubelet_cri::v1::{PodSandboxMetadata, PodSandboxStatus};

    #[test]
    fn converts_events_with_sandbox_metadata() {
        let e = ContainerEventResponse {
            container_id: "c1".into(),
            container_event_type: CriEventType::ContainerStoppedEvent as i32,
            pod_sandbox_status: Some(PodSandboxStatus {
                metadata: Some(PodSandboxMetadata {
                    name: "web-n1".into(),
                    uid: "u1".into(),
                    namespace: "default".into(),
                    attempt: 0,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let c = convert(e.clone()).unwrap_or_else(|| unreachable!());
        assert_eq!(c.pod_uid, "u1");
        assert_eq!(c.event_type, ContainerEventType::Stopped);
        let mut no_sandbox = e;
        no_sandbox.pod_sandbox_status = None;
        assert!(convert(no_sandbox).is_none());
    }
}
