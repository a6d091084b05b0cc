//! A scripted, recording [`ListerWatcher`] for tests: each `list` and `watch` call takes
//! the next scripted answer and records the resource version it was asked for.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::error::ApiError;
use crate::reflector::{ListerWatcher, ObjectList, WatchEvent};

/// What one `watch` call returns.
#[derive(Debug, Clone)]
pub enum FakeWatch<K> {
    /// The call fails.
    Fail(ApiError),
    /// The events, then the watch ends (the server's timeout).
    Events(Vec<Result<WatchEvent<K>, ApiError>>),
    /// The events, then the watch stays open.
    EventsThenHang(Vec<Result<WatchEvent<K>, ApiError>>),
}

/// A call the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeCall {
    /// `list` at this resource version.
    List(String),
    /// `watch` from this resource version.
    Watch(String),
}

struct State<K> {
    lists: VecDeque<Result<ObjectList<K>, ApiError>>,
    watches: VecDeque<FakeWatch<K>>,
    calls: Vec<FakeCall>,
}

/// The scripted lister-watcher (cheap to clone; clones share the script).
pub struct FakeListerWatcher<K> {
    state: Arc<Mutex<State<K>>>,
    calls_changed: Arc<tokio::sync::Notify>,
}

impl<K> Clone for FakeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            calls_changed: self.calls_changed.clone(),
        }
    }
}

impl<K> Default for FakeListerWatcher<K> {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                lists: VecDeque::new(),
                watches: VecDeque::new(),
                calls: Vec::new(),
            })),
            calls_changed: Arc::new(tokio::sync::Notify::new()),
        }
    }
}

impl<K> FakeListerWatcher<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Scripts the next `list` answer.
    pub fn push_list(&self, r: Result<ObjectList<K>, ApiError>) {
        self.lock().lists.push_back(r);
    }

    /// Scripts the next `watch` answer.
    pub fn push_watch(&self, w: FakeWatch<K>) {
        self.lock().watches.push_back(w);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.lock().calls.clone()
    }

    /// Waits until at least `n` calls were made.
    pub async fn wait_for_calls(&self, n: usize) {
        loop {
            let notified = self.calls_changed.notified();
            if self.lock().calls.len() >= n {
                return;
            }
            notified.await;
        }
    }

    fn record(&self, c: FakeCall) {
        self.lock().calls.push(c);
        self.calls_changed.notify_waiters();
    }
}

#[async_trait]
impl<K: Clone + Send + Sync + 'static> ListerWatcher<K> for FakeListerWatcher<K> {
    async fn list(&self, resource_version: &str) -> Result<ObjectList<K>, ApiError> {
        let next = self.lock().lists.pop_front();
        self.record(FakeCall::List(resource_version.to_string()));
        next.unwrap_or_else(|| Err(ApiError::Transport("connection refused".into())))
    }

    async fn watch(
        &self,
        resource_version: &str,
        _timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>, ApiError>>, ApiError> {
        let next = self.lock().watches.pop_front();
        self.record(FakeCall::Watch(resource_version.to_string()));
        match next {
            None => Ok(futures::stream::pending().boxed()),
            Some(FakeWatch::Fail(e)) => Err(e),
            Some(FakeWatch::Events(ev)) => Ok(futures::stream::iter(ev).boxed()),
            Some(FakeWatch::EventsThenHang(ev)) => Ok(futures::stream::iter(ev)
                .chain(futures::stream::pending())
                .boxed()),
        }
    }
}
