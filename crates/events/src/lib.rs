//! The kubelet's event recorder: client-go's `tools/record` on tokio, as the kubelet sets
//! it up in `cmd/kubelet/app/server.go` `makeEventRecorder`.
//!
//! | Rust module     | Upstream Go file                                                        |
//! |-----------------|-------------------------------------------------------------------------|
//! | [`broadcaster`] | `client-go/tools/record/event.go` (`EventBroadcaster`, `recorderImpl`, `recordToSink`), `record/util/util.go`, `apimachinery/pkg/watch/mux.go` (`NewLongQueueBroadcaster`, `DropIfChannelFull`) |
//! | [`correlator`]  | `client-go/tools/record/events_cache.go` (`EventCorrelator`, `EventAggregator`, `eventLogger`, `EventSourceObjectSpamFilter`) |
//! | [`sink`]        | `record.EventSink`, `typed/core/v1/event_expansion.go` (`EventSinkImpl`) |
//! | [`lru`]         | `k8s.io/utils/lru`                                                      |
//!
//! Callers only see [`kubelet_container::events::EventRecorder`]: `event()` builds the
//! Event (source `kubelet` on the node name, `reportingComponent`/`reportingInstance`
//! likewise), queues it and returns; the queue drops events when 1000 are waiting. A
//! logging watcher writes each event as a `debug` line (`StartStructuredLogging(3)`), and
//! in API server mode a sink watcher sends it through the event client after the
//! correlator (aggregation, repeat counts as patches, per-object spam filter).

pub mod broadcaster;
pub mod correlator;
pub mod lru;
pub mod sink;

use std::sync::Arc;

use kubelet_container::Clock;
use kubelet_container::events::EventRecorder;
use tokio_util::sync::CancellationToken;

pub use broadcaster::{
    COMPONENT_KUBELET, DEFAULT_SLEEP_DURATION, EventBroadcaster, MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT, Recorder, generate_event_name,
};
pub use correlator::{CorrelateResult, CorrelatorOptions, EventCorrelator};
pub use sink::{EventSink, FakeEventSink, KubeEventSink, SinkCall, SinkError};

/// `makeEventRecorder`: a broadcaster logging every event, writing them to `sink` when
/// there is an API server (the kubelet's event client, [`KubeEventSink`]), and its
/// recorder for component `kubelet` on `node_name`. Must run inside a tokio runtime; the
/// tasks end with `cancel`.
pub fn make_event_recorder(
    node_name: &str,
    sink: Option<Arc<dyn EventSink>>,
    clock: Arc<dyn Clock>,
    cancel: CancellationToken,
) -> Arc<dyn EventRecorder> {
    let broadcaster = EventBroadcaster::new(clock, cancel);
    let recorder = broadcaster.new_recorder(COMPONENT_KUBELET, node_name);
    broadcaster.start_structured_logging();
    match sink {
        Some(sink) => {
            tracing::trace!("Sending events to api server");
            broadcaster.start_recording_to_sink(sink);
        }
        None => tracing::info!("No api server defined - no events will be sent to API server"),
    }
    Arc::new(recorder)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use kubelet_container::FakeClock;
    use kubelet_container::events::{EventType, node_ref};

    #[tokio::test(start_paused = true)]
    async fn the_kubelet_s_recorder_writes_as_component_kubelet_on_the_node() {
        let sink = Arc::new(FakeEventSink::new());
        let cancel = CancellationToken::new();
        let recorder = make_event_recorder(
            "node-1",
            Some(sink.clone()),
            Arc::new(FakeClock::default()),
            cancel.clone(),
        );
        recorder.event(
            &node_ref("node-1"),
            EventType::Normal,
            "Starting",
            "Starting kubelet.",
        );
        for _ in 0..1000 {
            if !sink.calls().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let SinkCall::Create(e) = &sink.calls()[0] else {
            panic!("{:?}", sink.calls());
        };
        let source = e.source.clone().unwrap();
        assert_eq!(
            (source.component.as_deref(), source.host.as_deref()),
            (Some("kubelet"), Some("node-1"))
        );
        assert_eq!(e.reporting_component.as_deref(), Some("kubelet"));
        assert_eq!(e.reporting_instance.as_deref(), Some("node-1"));

        // Standalone: no sink, events are only logged; recording never blocks.
        let standalone = make_event_recorder(
            "node-1",
            None,
            Arc::new(FakeClock::default()),
            cancel.clone(),
        );
        for _ in 0..2 * MAX_QUEUED_EVENTS {
            standalone.event(&node_ref("node-1"), EventType::Normal, "R", "m");
        }
        cancel.cancel();
        // After shutdown, events are dropped without blocking either.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        recorder.event(&node_ref("node-1"), EventType::Normal, "R", "late");
        assert_eq!(sink.calls().len(), 1);
    }
}
