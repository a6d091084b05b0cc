//! `EventCorrelator` (client-go `tools/record/events_cache.go`): every event on its way to
//! the sink is aggregated (`EventAggregator`), counted (`eventLogger`) and rate limited
//! per source and object (`EventSourceObjectSpamFilter`), with client-go's defaults:
//!
//! * more than [`DEFAULT_AGGREGATE_MAX_EVENTS`] − 1 events that differ only by message
//!   within [`DEFAULT_AGGREGATE_INTERVAL`] of each other become one event with the message
//!   `(combined from similar events): <latest message>`;
//! * an event seen before (same source, object, type, reason and message) is sent as a
//!   patch of the first one's `count`, `lastTimestamp` and `message`;
//! * a source may send [`DEFAULT_SPAM_BURST`] events about one object, then one every
//!   5 minutes ([`DEFAULT_SPAM_QPS`]);
//! * each cache keeps the [`MAX_LRU_CACHE_ENTRIES`] most recent keys.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::Clock;

use crate::lru::LruCache;

/// `maxLruCacheEntries`.
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// `defaultAggregateMaxEvents`.
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// `defaultAggregateIntervalInSeconds`.
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// `defaultSpamBurst`.
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// `defaultSpamQPS`: one event per 5 minutes.
pub const DEFAULT_SPAM_QPS: f64 = 1. / 300.;
/// `EventAggregatorByReasonMessageFunc`'s prefix.
pub const AGGREGATE_MESSAGE_PREFIX: &str = "(combined from similar events): ";

/// `CorrelatorOptions` (the kubelet uses the defaults).
#[derive(Clone, Debug)]
pub struct CorrelatorOptions {
    pub lru_cache_size: usize,
    pub burst_size: u32,
    pub qps: f64,
    pub max_events: usize,
    pub max_interval: Duration,
    pub clock: Arc<dyn Clock>,
}

impl CorrelatorOptions {
    /// client-go's defaults (`populateDefaults`) on `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            lru_cache_size: MAX_LRU_CACHE_ENTRIES,
            burst_size: DEFAULT_SPAM_BURST,
            qps: DEFAULT_SPAM_QPS,
            max_events: DEFAULT_AGGREGATE_MAX_EVENTS,
            max_interval: DEFAULT_AGGREGATE_INTERVAL,
            clock,
        }
    }
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

/// The source and involved object fields every key starts with (`fieldPath` only in the
/// event key), in client-go's order.
fn source_and_object(event: &Event, with_field_path: bool) -> Vec<&str> {
    let src = event.source.as_ref();
    let o = &event.involved_object;
    let mut key = vec![
        src.map_or("", |s| s.component.as_deref().unwrap_or("")),
        src.map_or("", |s| s.host.as_deref().unwrap_or("")),
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
    ];
    if with_field_path {
        key.push(s(&o.field_path));
    }
    key.extend([s(&o.uid), s(&o.api_version), s(&event.type_)]);
    key
}

/// `getEventKey`: source, involved object (with field path), type, reason and message.
pub fn get_event_key(event: &Event) -> String {
    let mut key = source_and_object(event, true);
    key.extend([s(&event.reason), s(&event.message)]);
    key.concat()
}

/// `getSpamKey`: source, involved object (without field path) and type.
pub fn get_spam_key(event: &Event) -> String {
    source_and_object(event, false).concat()
}

/// `EventAggregatorByReasonFunc`: (aggregate key, local key = message).
pub fn aggregate_key(event: &Event) -> (String, String) {
    let mut key = source_and_object(event, false);
    key.extend([
        s(&event.reason),
        s(&event.reporting_component),
        s(&event.reporting_instance),
    ]);
    (key.concat(), s(&event.message).to_string())
}

/// `flowcontrol.NewTokenBucketPassiveRateLimiterWithClock` (`x/time/rate`): starts full,
/// refills at `qps` up to `burst`.
#[derive(Debug)]
struct TokenBucket {
    tokens: f64,
    last: Timestamp,
}

impl TokenBucket {
    fn try_accept(&mut self, now: Timestamp, qps: f64, burst: u32) -> bool {
        let elapsed = kubelet_container::clock::duration_between(self.last, now);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * qps).min(f64::from(burst));
        if now > self.last {
            self.last = now;
        }
        if self.tokens >= 1. {
            self.tokens -= 1.;
            true
        } else {
            false
        }
    }
}

/// `EventSourceObjectSpamFilter`.
#[derive(Debug)]
pub struct EventSourceObjectSpamFilter {
    cache: LruCache<TokenBucket>,
    burst: u32,
    qps: f64,
    clock: Arc<dyn Clock>,
}

impl EventSourceObjectSpamFilter {
    pub fn new(lru_cache_size: usize, burst: u32, qps: f64, clock: Arc<dyn Clock>) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
            burst,
            qps,
            clock,
        }
    }

    /// `Filter`: true when the event must be dropped.
    pub fn filter(&mut self, event: &Event) -> bool {
        let key = get_spam_key(event);
        let now = self.clock.now();
        let mut bucket = match self.cache.get_mut(&key) {
            Some(b) => std::mem::replace(
                b,
                TokenBucket {
                    tokens: 0.,
                    last: now,
                },
            ),
            None => TokenBucket {
                tokens: f64::from(self.burst),
                last: now,
            },
        };
        let accepted = bucket.try_accept(now, self.qps, self.burst);
        self.cache.add(key, bucket);
        !accepted
    }
}

#[derive(Debug)]
struct AggregateRecord {
    local_keys: HashSet<String>,
    last_timestamp: Timestamp,
}

/// `EventAggregator` with `EventAggregatorByReasonFunc` and
/// `EventAggregatorByReasonMessageFunc`.
#[derive(Debug)]
pub struct EventAggregator {
    cache: LruCache<AggregateRecord>,
    max_events: usize,
    max_interval: Duration,
    clock: Arc<dyn Clock>,
}

impl EventAggregator {
    pub fn new(
        lru_cache_size: usize,
        max_events: usize,
        max_interval: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
            max_events,
            max_interval,
            clock,
        }
    }

    /// `EventAggregate`: the event to send and its cache key (the full event key, or the
    /// aggregate key for an aggregated event, so that later ones update it).
    pub fn event_aggregate(&mut self, new_event: &Event) -> (Event, String) {
        let now = self.clock.now();
        let event_key = get_event_key(new_event);
        let (aggregate_key, local_key) = aggregate_key(new_event);

        let mut record = match self.cache.get_mut(&aggregate_key) {
            Some(r)
                if kubelet_container::clock::duration_between(r.last_timestamp, now)
                    <= self.max_interval =>
            {
                std::mem::replace(
                    r,
                    AggregateRecord {
                        local_keys: HashSet::new(),
                        last_timestamp: now,
                    },
                )
            }
            _ => AggregateRecord {
                local_keys: HashSet::new(),
                last_timestamp: now,
            },
        };
        record.local_keys.insert(local_key);
        record.last_timestamp = now;
        let over = record.local_keys.len() >= self.max_events;
        if over {
            // "do not grow our local key set any larger than max" (PopAny).
            if let Some(any) = record.local_keys.iter().next().cloned() {
                record.local_keys.remove(&any);
            }
        }
        self.cache.add(aggregate_key.clone(), record);
        if !over {
            return (new_event.clone(), event_key);
        }

        let involved = &new_event.involved_object;
        let aggregated = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", s(&involved.name), now.as_nanosecond())),
                namespace: new_event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(now)),
            involved_object: involved.clone(),
            last_timestamp: Some(Time(now)),
            message: Some(format!(
                "{AGGREGATE_MESSAGE_PREFIX}{}",
                s(&new_event.message)
            )),
            type_: new_event.type_.clone(),
            reason: new_event.reason.clone(),
            source: new_event.source.clone(),
            ..Event::default()
        };
        (aggregated, aggregate_key)
    }
}

/// `eventLog`.
#[derive(Clone, Debug)]
struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// `eventLogger`: counts occurrences of an event key.
#[derive(Debug)]
pub struct EventLogger {
    cache: LruCache<EventLog>,
}

impl EventLogger {
    pub fn new(lru_cache_size: usize) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
        }
    }

    /// `eventObserve`: the event to send and, when `key` was seen before, the patch of the
    /// existing event (`count`, `lastTimestamp`, `message`: what
    /// `strategicpatch.CreateTwoWayMergePatch` yields between the event with those fields
    /// zeroed and the event).
    pub fn event_observe(
        &mut self,
        new_event: &Event,
        key: &str,
    ) -> (Event, Option<serde_json::Value>) {
        let mut event = new_event.clone();
        let mut patch = None;
        let last = self.cache.get_mut(key).cloned();
        if let Some(last) = last.filter(|l| l.count > 0) {
            event.metadata.name = last.name;
            event.metadata.resource_version = last.resource_version;
            event.first_timestamp = last.first_timestamp;
            event.count = Some(last.count.saturating_add(1));
            patch = Some(count_patch(&event));
        }
        self.cache.add(
            key.to_string(),
            EventLog {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
        (event, patch)
    }

    /// `updateState`: what the server returned, under the returned event's key.
    pub fn update_state(&mut self, event: &Event) {
        self.cache.add(
            get_event_key(event),
            EventLog {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
    }
}

/// The two-way strategic merge patch from `event` with count 0, `lastTimestamp` at the
/// epoch and no message to `event` (keys in Go's sorted order).
fn count_patch(event: &Event) -> serde_json::Value {
    let mut patch = serde_json::Map::new();
    if let Some(c) = event.count.filter(|c| *c != 0) {
        patch.insert("count".into(), c.into());
    }
    match &event.last_timestamp {
        Some(t) if t.0 != Timestamp::UNIX_EPOCH => {
            patch.insert(
                "lastTimestamp".into(),
                serde_json::to_value(t).unwrap_or(serde_json::Value::Null),
            );
        }
        Some(_) => {}
        None => {
            patch.insert("lastTimestamp".into(), serde_json::Value::Null);
        }
    }
    if let Some(m) = event.message.as_ref().filter(|m| !m.is_empty()) {
        patch.insert("message".into(), m.clone().into());
    }
    serde_json::Value::Object(patch)
}

/// `EventCorrelateResult`.
#[derive(Clone, Debug, PartialEq)]
pub enum CorrelateResult {
    /// Dropped by the spam filter.
    Skip,
    /// Create the event, or (`patch` set) patch the existing one.
    Send {
        event: Box<Event>,
        patch: Option<serde_json::Value>,
    },
}

/// `EventCorrelator`.
#[derive(Debug)]
pub struct EventCorrelator {
    spam_filter: EventSourceObjectSpamFilter,
    aggregator: EventAggregator,
    logger: EventLogger,
}

impl EventCorrelator {
    /// `NewEventCorrelatorWithOptions`.
    pub fn new(options: CorrelatorOptions) -> Self {
        Self {
            spam_filter: EventSourceObjectSpamFilter::new(
                options.lru_cache_size,
                options.burst_size,
                options.qps,
                options.clock.clone(),
            ),
            aggregator: EventAggregator::new(
                options.lru_cache_size,
                options.max_events,
                options.max_interval,
                options.clock,
            ),
            logger: EventLogger::new(options.lru_cache_size),
        }
    }

    /// `EventCorrelate`: aggregate, count, then filter.
    pub fn event_correlate(&mut self, new_event: &Event) -> CorrelateResult {
        let (aggregate_event, key) = self.aggregator.event_aggregate(new_event);
        let (observed, patch) = self.logger.event_observe(&aggregate_event, &key);
        if self.spam_filter.filter(&observed) {
            return CorrelateResult::Skip;
        }
        CorrelateResult::Send {
            event: Box::new(observed),
            patch,
        }
    }

    /// `UpdateState`: the server's copy (name, resourceVersion, count) of a written event.
    pub fn update_state(&mut self, event: &Event) {
        self.logger.update_state(event);
    }
}

#[cfg(test)]
#[path = "correlator_tests.rs"]
mod tests;
