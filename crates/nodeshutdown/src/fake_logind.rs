//! A private D-Bus with a fake systemd-logind, for tests on a real bus: [`PrivateBus`]
//! runs `dbus-daemon` on a unix socket in a temporary directory; [`FakeLogind`] serves
//! `org.freedesktop.login1` (`InhibitDelayMaxUSec`, `Inhibit` handing out the write end of
//! a pipe whose closing it notices, `PrepareForShutdown`) and `org.freedesktop.systemd1`
//! (`KillUnit`: a SIGHUP to `systemd-logind.service` re-reads the kubelet's drop-in from
//! the configured directory, as logind's reload does).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::systemd::{
    KUBELET_LOGIND_CONF, LOGIND_INTERFACE, LOGIND_OBJECT, LOGIND_SERVICE, SYSTEMD_OBJECT,
    SYSTEMD_SERVICE,
};

pub use kubelet_systemd::private_bus::PrivateBus;

/// One `Inhibit` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InhibitCall {
    /// `what`.
    pub what: String,
    /// `who`.
    pub who: String,
    /// `why`.
    pub why: String,
    /// `mode`.
    pub mode: String,
    /// Whether the caller closed the descriptor.
    pub released: bool,
}

/// What the fake saw, shared with its server objects.
#[derive(Debug, Default)]
pub struct LogindState {
    /// `InhibitDelayMaxUSec`.
    pub inhibit_delay_max_usec: u64,
    /// `Inhibit` calls, in order.
    pub inhibits: Vec<InhibitCall>,
    /// `KillUnit(name, who, signal)` calls.
    pub kill_units: Vec<(String, String, i32)>,
    /// Where a SIGHUP makes the fake read `99-kubelet.conf`.
    pub conf_dir: Option<PathBuf>,
}

type Shared = Arc<Mutex<LogindState>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, LogindState> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Logind {
    state: Shared,
}

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl Logind {
    #[zbus(property, name = "InhibitDelayMaxUSec")]
    fn inhibit_delay_max_usec(&self) -> u64 {
        lock(&self.state).inhibit_delay_max_usec
    }

    fn inhibit(
        &self,
        what: String,
        who: String,
        why: String,
        mode: String,
    ) -> zbus::fdo::Result<zbus::OwnedFd> {
        let (mut reader, writer) =
            std::io::pipe().map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        let index = {
            let mut s = lock(&self.state);
            s.inhibits.push(InhibitCall {
                what,
                who,
                why,
                mode,
                released: false,
            });
            s.inhibits.len() - 1
        };
        let state = self.state.clone();
        std::thread::spawn(move || {
            // EOF once every copy of the write end is closed.
            let mut buf = [0u8; 64];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
            if let Some(c) = lock(&state).inhibits.get_mut(index) {
                c.released = true;
            }
        });
        Ok(zbus::OwnedFd::from(std::os::fd::OwnedFd::from(writer)))
    }

    #[zbus(signal)]
    async fn prepare_for_shutdown(
        emitter: &zbus::object_server::SignalEmitter<'_>,
        start: bool,
    ) -> zbus::Result<()>;
}

struct Systemd {
    state: Shared,
}

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl Systemd {
    fn kill_unit(&self, name: String, who: String, signal: i32) {
        let mut s = lock(&self.state);
        if name == "systemd-logind.service"
            && signal == 1
            && let Some(secs) = s.conf_dir.as_deref().and_then(read_inhibit_delay_max_sec)
        {
            s.inhibit_delay_max_usec = secs.saturating_mul(1_000_000);
        }
        s.kill_units.push((name, who, signal));
    }
}

/// `InhibitDelayMaxSec=` of `<dir>/99-kubelet.conf`.
fn read_inhibit_delay_max_sec(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(KUBELET_LOGIND_CONF)).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("InhibitDelayMaxSec="))
        .and_then(|v| v.trim().parse().ok())
}

/// The fake logind and systemd manager on a bus.
pub struct FakeLogind {
    conn: zbus::Connection,
    state: Shared,
}

impl std::fmt::Debug for FakeLogind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeLogind").finish_non_exhaustive()
    }
}

impl FakeLogind {
    /// Serves `org.freedesktop.login1` and `org.freedesktop.systemd1` on `address` with
    /// `InhibitDelayMaxUSec` = `delay`; a reload reads the drop-in in `conf_dir`.
    pub async fn serve(
        address: &str,
        delay: Duration,
        conf_dir: Option<PathBuf>,
    ) -> zbus::Result<Self> {
        let state: Shared = Arc::new(Mutex::new(LogindState {
            inhibit_delay_max_usec: u64::try_from(delay.as_micros()).unwrap_or(u64::MAX),
            conf_dir,
            ..LogindState::default()
        }));
        let conn = zbus::connection::Builder::address(address)
            .name(LOGIND_SERVICE)
            .name(SYSTEMD_SERVICE)
            .serve_at(
                LOGIND_OBJECT,
                Logind {
                    state: state.clone(),
                },
            )
            .serve_at(
                SYSTEMD_OBJECT,
                Systemd {
                    state: state.clone(),
                },
            )
            .build()
            .await?;
        Ok(Self { conn, state })
    }

    /// Emits `PrepareForShutdown(start)` (a broadcast, as logind's).
    pub async fn prepare_for_shutdown(&self, start: bool) -> zbus::Result<()> {
        self.conn
            .emit_signal(
                None::<&str>,
                LOGIND_OBJECT,
                LOGIND_INTERFACE,
                "PrepareForShutdown",
                &start,
            )
            .await
    }

    /// A copy of what the fake saw.
    pub fn inhibits(&self) -> Vec<InhibitCall> {
        lock(&self.state).inhibits.clone()
    }

    /// The `KillUnit` calls.
    pub fn kill_units(&self) -> Vec<(String, String, i32)> {
        lock(&self.state).kill_units.clone()
    }

    /// `InhibitDelayMaxUSec` now.
    pub fn inhibit_delay_max_usec(&self) -> u64 {
        lock(&self.state).inhibit_delay_max_usec
    }

    /// Waits up to `timeout` for `Inhibit` call `index` to be released.
    pub async fn wait_released(&self, index: usize, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if lock(&self.state)
                .inhibits
                .get(index)
                .is_some_and(|c| c.released)
            {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits up to `timeout` for at least `n` `Inhibit` calls.
    pub async fn wait_inhibits(&self, n: usize, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if lock(&self.state).inhibits.len() >= n {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
