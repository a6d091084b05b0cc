//! `EventBroadcaster` and its recorder (client-go `tools/record/event.go`, on
//! `watch.NewLongQueueBroadcaster(maxQueuedEvents, DropIfChannelFull)`).
//!
//! [`Recorder::event`] builds the `core/v1` Event as `recorderImpl.generateEvent` does and
//! offers it to the incoming queue ([`MAX_QUEUED_EVENTS`]); a full queue drops the event
//! with upstream's error line, so a caller never waits. One task distributes every event
//! to the watchers (`StartStructuredLogging`, `StartRecordingToSink`), each with its own
//! queue of the same length that also drops when full. The sink watcher runs each event
//! through its [`EventCorrelator`] and writes it (`recordToSink`): a patch when the
//! correlator counted a repeat (a create if the patched event is gone), otherwise a
//! create; transport errors are retried up to [`MAX_TRIES_PER_EVENT`] times,
//! [`DEFAULT_SLEEP_DURATION`] apart (the first sleep a random fraction of it), a
//! rejection by the server is not.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::Clock;
use kubelet_container::events::{Annotations, EventRecorder, EventType};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::correlator::{CorrelateResult, CorrelatorOptions, EventCorrelator};
use crate::sink::EventSink;

/// `maxTriesPerEvent`.
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// `defaultSleepDuration`.
pub const DEFAULT_SLEEP_DURATION: Duration = Duration::from_secs(10);
/// `maxQueuedEvents`: the incoming queue and each watcher's queue.
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// `metav1.NamespaceDefault`.
pub const NAMESPACE_DEFAULT: &str = "default";
/// `server.ComponentKubelet`.
pub const COMPONENT_KUBELET: &str = "kubelet";

type Watchers = Arc<Mutex<Vec<mpsc::Sender<Arc<Event>>>>>;

/// `record.EventBroadcaster`. Built inside a tokio runtime; its tasks end when `cancel`
/// is cancelled (`record.WithContext`).
#[derive(Debug)]
pub struct EventBroadcaster {
    incoming: mpsc::Sender<Arc<Event>>,
    watchers: Watchers,
    cancel: CancellationToken,
    sleep_duration: Duration,
    clock: Arc<dyn Clock>,
}

impl EventBroadcaster {
    /// `record.NewBroadcaster(record.WithContext(ctx))` on `clock` (event timestamps and the
    /// correlator's time).
    pub fn new(clock: Arc<dyn Clock>, cancel: CancellationToken) -> Self {
        Self::with_sleep_duration(clock, cancel, DEFAULT_SLEEP_DURATION)
    }

    /// [`EventBroadcaster::new`] with another retry sleep (`WithSleepDuration`).
    pub fn with_sleep_duration(
        clock: Arc<dyn Clock>,
        cancel: CancellationToken,
        sleep_duration: Duration,
    ) -> Self {
        let (incoming, rx) = mpsc::channel(MAX_QUEUED_EVENTS);
        let watchers: Watchers = Arc::default();
        tokio::spawn(distribute(rx, watchers.clone(), cancel.clone()));
        Self {
            incoming,
            watchers,
            cancel,
            sleep_duration,
            clock,
        }
    }

    /// `NewRecorder(scheme, v1.EventSource{Component, Host})`.
    pub fn new_recorder(&self, component: &str, host: &str) -> Recorder {
        Recorder {
            incoming: self.incoming.clone(),
            source: EventSource {
                component: Some(component.to_string()).filter(|c| !c.is_empty()),
                host: Some(host.to_string()).filter(|h| !h.is_empty()),
            },
            clock: self.clock.clone(),
        }
    }

    fn watch(&self) -> mpsc::Receiver<Arc<Event>> {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_EVENTS);
        self.watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }

    /// `StartStructuredLogging(verbosity)`: `"Event occurred"` with the object, field path,
    /// kind, apiVersion, type, reason and message. The kubelet passes 3, a `debug` line
    /// (klog's V(2)–V(3) map onto `debug`, see `kubelet-klog`).
    pub fn start_structured_logging(&self) {
        let mut rx = self.watch();
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            while let Some(e) = recv(&mut rx, &cancel).await {
                log_event(&e);
            }
        });
    }

    /// `StartRecordingToSink(sink)` with a fresh correlator (client-go's defaults).
    pub fn start_recording_to_sink(&self, sink: Arc<dyn EventSink>) {
        self.start_recording_to_sink_with(sink, CorrelatorOptions::with_clock(self.clock.clone()))
    }

    /// [`EventBroadcaster::start_recording_to_sink`] with other correlator options.
    pub fn start_recording_to_sink_with(
        &self,
        sink: Arc<dyn EventSink>,
        options: CorrelatorOptions,
    ) {
        let mut rx = self.watch();
        let cancel = self.cancel.clone();
        let sleep = self.sleep_duration;
        tokio::spawn(async move {
            let mut correlator = EventCorrelator::new(options);
            while let Some(e) = recv(&mut rx, &cancel).await {
                record_to_sink(sink.as_ref(), &e, &mut correlator, sleep, &cancel).await;
            }
        });
    }
}

async fn recv(
    rx: &mut mpsc::Receiver<Arc<Event>>,
    cancel: &CancellationToken,
) -> Option<Arc<Event>> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        e = rx.recv() => e,
    }
}

/// `Broadcaster.loop` / `distribute` with `DropIfChannelFull`.
async fn distribute(
    mut rx: mpsc::Receiver<Arc<Event>>,
    watchers: Watchers,
    cancel: CancellationToken,
) {
    while let Some(e) = recv(&mut rx, &cancel).await {
        let watchers = watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for w in watchers {
            // Don't block if the event can't be queued.
            let _ = w.try_send(e.clone());
        }
    }
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

/// `klog.KRef(namespace, name)`.
fn kref(o: &ObjectReference) -> String {
    match s(&o.namespace) {
        "" => s(&o.name).to_string(),
        ns => format!("{ns}/{}", s(&o.name)),
    }
}

fn log_event(e: &Event) {
    let o = &e.involved_object;
    tracing::debug!(
        object = %kref(o),
        fieldPath = s(&o.field_path),
        kind = s(&o.kind),
        apiVersion = s(&o.api_version),
        r#type = s(&e.type_),
        reason = s(&e.reason),
        message = s(&e.message),
        "Event occurred"
    );
}

fn event_summary(e: &Event) -> String {
    format!(
        "{}/{} {} {}: {}",
        s(&e.metadata.namespace),
        s(&e.metadata.name),
        s(&e.type_),
        s(&e.reason),
        s(&e.message)
    )
}

/// `recordToSink`.
pub(crate) async fn record_to_sink(
    sink: &dyn EventSink,
    event: &Event,
    correlator: &mut EventCorrelator,
    sleep_duration: Duration,
    cancel: &CancellationToken,
) {
    let (event, patch) = match correlator.event_correlate(event) {
        CorrelateResult::Skip => return,
        CorrelateResult::Send { event, patch } => (event, patch),
    };
    let mut tries = 0;
    loop {
        if record_event(sink, &event, patch.as_ref(), correlator).await {
            break;
        }
        tries += 1;
        if tries >= MAX_TRIES_PER_EVENT {
            tracing::error!(event = %event_summary(&event), "Unable to write event (retry limit exceeded!)");
            break;
        }
        // Randomize the first sleep so that various clients won't all be synced up if
        // the master goes down.
        let delay = if tries == 1 {
            sleep_duration.mul_f64(fastrand::f64())
        } else {
            sleep_duration
        };
        tokio::select! {
            _ = cancel.cancelled() => {
                tracing::error!(event = %event_summary(&event), "Unable to write event (broadcaster is shut down)");
                return;
            }
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// `recordEvent`: true when the event was written or must be abandoned, false to retry.
async fn record_event(
    sink: &dyn EventSink,
    event: &Event,
    patch: Option<&serde_json::Value>,
    correlator: &mut EventCorrelator,
) -> bool {
    let update_existing = event.count.unwrap_or(0) > 1;
    let mut result = None;
    if let (true, Some(patch)) = (update_existing, patch) {
        result = Some(sink.patch(event, patch).await);
    }
    // The patch can fail because the event was removed: create it then.
    let result = match result {
        Some(Err(e)) if e.is_not_found() => None,
        r => r,
    };
    let result = match result {
        Some(r) => r,
        None => {
            let mut create = event.clone();
            // Making sure that ResourceVersion is empty on creation.
            create.metadata.resource_version = None;
            sink.create(&create).await
        }
    };
    let err = match result {
        Ok(written) => {
            correlator.update_state(&written);
            return true;
        }
        Err(e) => e,
    };
    use crate::sink::SinkError;
    match &err {
        SinkError::RequestConstruction(_) => {
            tracing::error!(err = %err, event = %event_summary(event), "Unable to construct event (will not retry!)");
            true
        }
        SinkError::Status { .. } if err.is_expected_rejection() => {
            tracing::trace!(event = %event_summary(event), err = %err, "Server rejected event (will not retry!)");
            true
        }
        SinkError::Status { .. } => {
            tracing::error!(err = %err, event = %event_summary(event), "Server rejected event (will not retry!)");
            true
        }
        SinkError::Transport(_) => {
            tracing::error!(err = %err, event = %event_summary(event), "Unable to write event (may retry after sleeping)");
            false
        }
    }
}

/// The recorder of [`EventBroadcaster::new_recorder`] (`recorderImpl`): cheap to clone.
#[derive(Clone, Debug)]
pub struct Recorder {
    incoming: mpsc::Sender<Arc<Event>>,
    source: EventSource,
    clock: Arc<dyn Clock>,
}

impl Recorder {
    /// `makeEvent` plus the source and reporting fields of `generateEvent`.
    pub fn make_event(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> Event {
        let t = self.clock.now();
        let namespace = match s(&object.namespace) {
            "" => NAMESPACE_DEFAULT,
            ns => ns,
        };
        Event {
            metadata: ObjectMeta {
                name: Some(generate_event_name(s(&object.name), t.as_nanosecond())),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            involved_object: object.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            first_timestamp: Some(Time(t)),
            last_timestamp: Some(Time(t)),
            count: Some(1),
            type_: Some(event_type.as_str().to_string()),
            source: Some(self.source.clone()),
            reporting_instance: self.source.host.clone(),
            reporting_component: self.source.component.clone(),
            ..Event::default()
        }
    }
}

impl EventRecorder for Recorder {
    /// `generateEvent`: never blocks; a full queue drops the event.
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: &Annotations,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        let mut event = self.make_event(object, event_type, reason, message);
        // `makeEvent` puts the map in the metadata; an empty one is not serialized.
        if !annotations.is_empty() {
            event.metadata.annotations = Some(annotations.clone());
        }
        match self.incoming.try_send(Arc::new(event)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(e)) => {
                tracing::error!(event = %event_summary(&e), "Unable to record event: too many queued events, dropped event");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::error!(
                    err = "broadcaster already stopped",
                    "Unable to record event (will not retry!)"
                );
            }
        }
    }
}

/// `util.GenerateEventName`: `<name>.<unix nanoseconds in hex>`, or a random UUID when that
/// is not a valid DNS subdomain.
pub fn generate_event_name(ref_name: &str, unix_nano: i128) -> String {
    let name = format!("{ref_name}.{unix_nano:x}");
    if kubelet_apimachinery::validation::is_dns1123_subdomain(&name).is_empty() {
        return name;
    }
    uuid_v4()
}

/// `uuid.New().String()`: a random (version 4, RFC 4122 variant) UUID.
fn uuid_v4() -> String {
    let mut b = fastrand::u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
#[path = "broadcaster_tests.rs"]
mod tests;
