//! Recording fakes of the D-Bus boundary and of the kubelet's pod side (upstream's
//! `fakeDbus` in `nodeshutdown_manager_linux_test.go`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use tokio::sync::mpsc;

use crate::manager::{PodKiller, PodStatusFn};
use crate::systemd::{DbusConnector, DbusError, DbusInhibiter, InhibitLock};

/// One call the fake saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbusCall {
    /// `CurrentInhibitDelay`.
    CurrentInhibitDelay,
    /// `InhibitShutdown`, returning lock `id`.
    InhibitShutdown(u64),
    /// `ReleaseInhibitLock(id)`.
    ReleaseInhibitLock(u64),
    /// `ReloadLogindConf`.
    ReloadLogindConf,
    /// `MonitorShutdown`.
    MonitorShutdown,
    /// `OverrideInhibitDelay(d)`.
    OverrideInhibitDelay(Duration),
}

#[derive(Default)]
struct FakeState {
    current_inhibit_delay: Duration,
    override_system_inhibit_delay: Duration,
    did_override: bool,
    next_lock: u64,
    calls: Vec<DbusCall>,
    shutdown_tx: Option<mpsc::Sender<bool>>,
    fail_monitor: Option<String>,
}

/// Upstream `fakeDbus`: logind's delay is `current_inhibit_delay` until an override, then
/// `override_system_inhibit_delay` (what logind would read back from the drop-in).
#[derive(Clone, Default)]
pub struct FakeDbusInhibiter {
    state: Arc<Mutex<FakeState>>,
}

impl std::fmt::Debug for FakeDbusInhibiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDbusInhibiter").finish_non_exhaustive()
    }
}

impl FakeDbusInhibiter {
    /// A fake logind with the delay `current`, which becomes `after_override` once the
    /// drop-in is written.
    pub fn new(current: Duration, after_override: Duration) -> Self {
        let f = Self::default();
        {
            let mut s = f.lock();
            s.current_inhibit_delay = current;
            s.override_system_inhibit_delay = after_override;
            s.next_lock = 1;
        }
        f
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The calls so far.
    pub fn calls(&self) -> Vec<DbusCall> {
        self.lock().calls.clone()
    }

    /// Whether `OverrideInhibitDelay` was called.
    pub fn did_override_inhibit_delay(&self) -> bool {
        self.lock().did_override
    }

    /// Makes `MonitorShutdown` fail with `err`.
    pub fn fail_monitor(&self, err: &str) {
        self.lock().fail_monitor = Some(err.to_string());
    }

    /// Emits `PrepareForShutdown(active)`; false when nobody is watching.
    pub async fn prepare_for_shutdown(&self, active: bool) -> bool {
        let tx = self.lock().shutdown_tx.clone();
        match tx {
            Some(tx) => tx.send(active).await.is_ok(),
            None => false,
        }
    }

    /// Ends the watch, as a lost connection does.
    pub fn close_connection(&self) {
        self.lock().shutdown_tx = None;
    }

    /// The locks taken and not released.
    pub fn held_locks(&self) -> Vec<u64> {
        let s = self.lock();
        let mut held = Vec::new();
        for c in &s.calls {
            match c {
                DbusCall::InhibitShutdown(id) => held.push(*id),
                DbusCall::ReleaseInhibitLock(id) => held.retain(|h| h != id),
                _ => {}
            }
        }
        held
    }
}

#[async_trait]
impl DbusInhibiter for FakeDbusInhibiter {
    async fn current_inhibit_delay(&self) -> Result<Duration, DbusError> {
        let mut s = self.lock();
        s.calls.push(DbusCall::CurrentInhibitDelay);
        Ok(s.current_inhibit_delay)
    }

    async fn inhibit_shutdown(&self) -> Result<InhibitLock, DbusError> {
        let mut s = self.lock();
        let id = s.next_lock;
        s.next_lock += 1;
        s.calls.push(DbusCall::InhibitShutdown(id));
        Ok(InhibitLock::fake(id))
    }

    fn release_inhibit_lock(&self, lock: InhibitLock) -> Result<(), DbusError> {
        self.lock()
            .calls
            .push(DbusCall::ReleaseInhibitLock(lock.id()));
        Ok(())
    }

    async fn reload_logind_conf(&self) -> Result<(), DbusError> {
        self.lock().calls.push(DbusCall::ReloadLogindConf);
        Ok(())
    }

    async fn monitor_shutdown(&self) -> Result<mpsc::Receiver<bool>, DbusError> {
        let mut s = self.lock();
        s.calls.push(DbusCall::MonitorShutdown);
        if let Some(e) = s.fail_monitor.clone() {
            return Err(DbusError::Fake(e));
        }
        let (tx, rx) = mpsc::channel(1);
        s.shutdown_tx = Some(tx);
        Ok(rx)
    }

    async fn override_inhibit_delay(&self, inhibit_delay_max: Duration) -> Result<(), DbusError> {
        let mut s = self.lock();
        s.calls
            .push(DbusCall::OverrideInhibitDelay(inhibit_delay_max));
        s.did_override = true;
        s.current_inhibit_delay = s.override_system_inhibit_delay;
        Ok(())
    }
}

/// Connects to a [`FakeDbusInhibiter`] (or fails with a scripted error).
#[derive(Clone, Debug)]
pub struct FakeConnector {
    /// The fake every connection is.
    pub dbus: FakeDbusInhibiter,
    /// When set, every connection fails with it.
    pub fail: Option<String>,
    connects: Arc<Mutex<usize>>,
}

impl FakeConnector {
    /// Connections to `dbus`.
    pub fn new(dbus: FakeDbusInhibiter) -> Self {
        Self {
            dbus,
            fail: None,
            connects: Arc::default(),
        }
    }

    /// How many connections were made.
    pub fn connects(&self) -> usize {
        *self.connects.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl DbusConnector for FakeConnector {
    async fn connect(&self) -> Result<Arc<dyn DbusInhibiter>, DbusError> {
        *self.connects.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        if let Some(e) = &self.fail {
            return Err(DbusError::Fake(e.clone()));
        }
        Ok(Arc::new(self.dbus.clone()))
    }
}

/// One kill the fake saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Kill {
    /// The pod's name.
    pub pod: String,
    /// Evicted (always false for shutdown).
    pub is_evicted: bool,
    /// The grace period override.
    pub grace_period_override: i64,
    /// The pod's status after the status function ran on its status.
    pub status: PodStatus,
    /// When the kill started (tokio time, since the fake was made).
    pub at: Duration,
}

#[derive(Default)]
struct KillerState {
    pods: Vec<Arc<Pod>>,
    kills: Vec<Kill>,
    node_status_syncs: usize,
    unmount_waits: usize,
}

/// Records kills; a kill takes `kill_time` (tokio time), an unmount wait `unmount_time`.
#[derive(Clone)]
pub struct FakePodKiller {
    state: Arc<Mutex<KillerState>>,
    /// How long each kill takes.
    pub kill_time: Duration,
    /// How long each unmount wait takes.
    pub unmount_time: Duration,
    origin: tokio::time::Instant,
}

impl FakePodKiller {
    /// A killer of `pods` whose kills and unmounts are immediate.
    pub fn new(pods: Vec<Arc<Pod>>) -> Self {
        Self {
            state: Arc::new(Mutex::new(KillerState {
                pods,
                ..KillerState::default()
            })),
            kill_time: Duration::ZERO,
            unmount_time: Duration::ZERO,
            origin: tokio::time::Instant::now(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KillerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The kills so far.
    pub fn kills(&self) -> Vec<Kill> {
        self.lock().kills.clone()
    }

    /// How many node status syncs were asked for.
    pub fn node_status_syncs(&self) -> usize {
        self.lock().node_status_syncs
    }

    /// How many unmount waits were made.
    pub fn unmount_waits(&self) -> usize {
        self.lock().unmount_waits
    }
}

#[async_trait]
impl PodKiller for FakePodKiller {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.lock().pods.clone()
    }

    async fn kill_pod(
        &self,
        pod: Arc<Pod>,
        is_evicted: bool,
        grace_period_override: i64,
        status_fn: PodStatusFn,
    ) -> Result<(), String> {
        let mut status = pod.status.clone().unwrap_or_default();
        status_fn(&mut status);
        self.lock().kills.push(Kill {
            pod: pod.metadata.name.clone().unwrap_or_default(),
            is_evicted,
            grace_period_override,
            status,
            at: self.origin.elapsed(),
        });
        tokio::time::sleep(self.kill_time).await;
        Ok(())
    }

    async fn wait_for_all_pods_unmount(&self, _pods: &[Arc<Pod>]) -> Result<(), String> {
        self.lock().unmount_waits += 1;
        tokio::time::sleep(self.unmount_time).await;
        Ok(())
    }

    fn sync_node_status(&self) {
        self.lock().node_status_syncs += 1;
    }
}
