//! Evented PLEG: container events from the runtime instead of (most) relists
//! (upstream `pkg/kubelet/pleg/evented.go`, KEP-3386).
//!
//! Input is a channel of [`ContainerEvent`]s, which the composition root fills
//! from CRI `GetContainerEvents` (and reconnects). While events flow, the
//! generic relist slows to [`RelistDuration::EVENTED_FALLBACK`] (300 s) and the
//! cache's global timestamp is refreshed every 5 s. When the channel closes, the
//! 1 s relist is restored.

use std::sync::Arc;
use std::time::Duration;

use kubelet_container::{Cache, PodStatus, Runtime};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::event::{PodLifecycleEvent, PodLifecycleEventType};
use crate::generic::{GenericPleg, PlegError, RelistDuration, preserved_pod_ips};

/// Period of the cache's global timestamp refresh (upstream `globalCacheUpdatePeriod`).
pub const GLOBAL_CACHE_UPDATE_PERIOD: Duration = Duration::from_secs(5);

/// Runtime container event type (CRI `ContainerEventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContainerEventType {
    /// Container (or sandbox) created.
    Created,
    /// Started.
    Started,
    /// Stopped.
    Stopped,
    /// Removed.
    Deleted,
}

/// One runtime event (CRI `ContainerEventResponse`, reduced).
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerEvent {
    /// Pod UID (sandbox metadata).
    pub pod_uid: String,
    /// Pod name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Container or sandbox ID.
    pub container_id: String,
    /// What happened.
    pub event_type: ContainerEventType,
    /// The pod status carried by the event, converted by the runtime layer.
    /// When `None` the PLEG asks the runtime for this one pod's status.
    pub pod_status: Option<PodStatus>,
}

/// Event-driven PLEG sharing the event channel and cache with a [`GenericPleg`].
pub struct EventedPleg {
    runtime: Arc<dyn Runtime>,
    cache: Arc<Cache>,
    generic: Arc<GenericPleg>,
    events: mpsc::Sender<PodLifecycleEvent>,
}

impl std::fmt::Debug for EventedPleg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventedPleg").finish_non_exhaustive()
    }
}

impl EventedPleg {
    /// An evented PLEG writing to the same cache and channel as `generic`.
    pub fn new(
        runtime: Arc<dyn Runtime>,
        cache: Arc<Cache>,
        generic: Arc<GenericPleg>,
        events: mpsc::Sender<PodLifecycleEvent>,
    ) -> Self {
        Self {
            runtime,
            cache,
            generic,
            events,
        }
    }

    /// Unhealthy when the event channel is full (upstream `EventedPLEG.Healthy`);
    /// the generic PLEG's own health check still applies with its longer threshold.
    pub fn healthy(&self) -> Result<(), PlegError> {
        if self.events.capacity() == 0 {
            return Err(PlegError::ChannelFull {
                len: self.events.max_capacity(),
            });
        }
        Ok(())
    }

    /// Consumes `stream` until it closes or `shutdown` fires. Returns true when
    /// the stream closed (the caller may reconnect and call `run` again; the
    /// 1 s relist is active meanwhile).
    pub async fn run(
        &self,
        mut stream: mpsc::Receiver<ContainerEvent>,
        shutdown: CancellationToken,
    ) -> bool {
        self.generic
            .update_relist_duration(RelistDuration::EVENTED_FALLBACK);
        let mut tick = tokio::time::interval(GLOBAL_CACHE_UPDATE_PERIOD);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return false,
                _ = tick.tick() => self.cache.update_time(Instant::now()),
                event = stream.recv() => match event {
                    Some(event) => self.process(event).await,
                    None => {
                        warn!("container event stream closed, falling back to generic PLEG relisting");
                        self.generic.update_relist_duration(RelistDuration::GENERIC);
                        return true;
                    }
                },
            }
        }
    }

    /// Updates the cache from one event and emits lifecycle events
    /// (upstream `processCRIEvents` / `processCRIEvent`).
    pub async fn process(&self, event: ContainerEvent) {
        let uid = event.pod_uid.clone();
        let status = match event.pod_status.clone() {
            Some(s) => Ok(s),
            None => {
                self.runtime
                    .get_pod_status(&uid, &event.pod_name, &event.pod_namespace)
                    .await
            }
        };
        let status = status.map(|mut s| {
            s.ips = preserved_pod_ips(&self.cache, &uid, &s);
            s
        });
        let send = if event.event_type == ContainerEventType::Deleted {
            let sandbox_gone = status.as_ref().is_ok_and(|s| {
                s.sandbox_statuses
                    .iter()
                    .any(|sb| sb.id == event.container_id)
            });
            if sandbox_gone {
                self.cache.delete(&uid);
            }
            true
        } else {
            self.cache.set(&uid, status, Instant::now())
        };
        if !send {
            debug!(%uid, "stale container event ignored");
            return;
        }
        use PodLifecycleEventType as E;
        let types: &[E] = match event.event_type {
            // Creation alone changes nothing the kubelet acts on (as the generic PLEG).
            ContainerEventType::Created => &[],
            ContainerEventType::Started => &[E::ContainerStarted],
            ContainerEventType::Stopped => &[E::ContainerDied],
            ContainerEventType::Deleted => &[E::ContainerDied, E::ContainerRemoved],
        };
        for t in types {
            if self
                .events
                .try_send(PodLifecycleEvent::new(&uid, *t, &event.container_id))
                .is_err()
            {
                warn!("PLEG event channel is full or closed, discarding event");
            }
        }
    }
}
