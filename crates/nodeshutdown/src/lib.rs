//! Graceful node shutdown (upstream `pkg/kubelet/nodeshutdown`): the manager takes a
//! systemd-logind delay inhibitor lock at start, and when logind announces a shutdown
//! (`PrepareForShutdown(true)`) it marks the node as shutting down (pods are no longer
//! admitted, the Ready condition turns false), kills the active pods by priority band,
//! each band within its grace period, records the times in the state file and releases
//! the lock so the shutdown proceeds.
//!
//! - [`manager`] — `nodeshutdown_manager.go`, `nodeshutdown_manager_linux.go`
//! - [`storage`] — `storage.go`
//! - [`systemd`] — `systemd/inhibit_linux.go` (zbus)
//! - [`fake`] — recording fakes of the D-Bus boundary and of the kubelet's pods
//! - `fake_logind` (feature `fake-logind`): a private `dbus-daemon` with a fake
//!   `org.freedesktop.login1` and `org.freedesktop.systemd1`, for tests on a real bus

pub mod fake;
#[cfg(any(test, feature = "fake-logind"))]
pub mod fake_logind;
pub mod manager;
pub mod storage;
pub mod systemd;

pub use manager::{
    Config, Deps, Manager, ManagerImpl, ManagerStub, NODE_SHUTDOWN_MESSAGE,
    NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE, NODE_SHUTDOWN_NOT_ADMITTED_REASON, NODE_SHUTDOWN_REASON,
    PodKiller, PodStatusFn, ShutdownAdmitHandler, ShutdownGracePeriodByPodPriority, StartError,
    new_manager,
};
pub use systemd::{DBusCon, DbusConnector, DbusError, DbusInhibiter, InhibitLock, SystemBus};

#[cfg(test)]
mod dbus_tests;
#[cfg(test)]
mod manager_tests;
