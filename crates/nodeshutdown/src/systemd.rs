//! systemd-logind over D-Bus (upstream `nodeshutdown/systemd/inhibit_linux.go`): the
//! delay inhibitor lock, `InhibitDelayMaxUSec`, the logind drop-in override and its
//! reload, and the `PrepareForShutdown` signal. [`DbusInhibiter`] is the boundary
//! (upstream `dbusInhibiter`); [`DBusCon`] is the zbus implementation on the system bus
//! (`DBUS_SYSTEM_BUS_ADDRESS`, else `/var/run/dbus/system_bus_socket`, as godbus), or on
//! an injected address.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;

/// `logindService`.
pub const LOGIND_SERVICE: &str = "org.freedesktop.login1";
/// `logindObject`.
pub const LOGIND_OBJECT: &str = "/org/freedesktop/login1";
/// `logindInterface`.
pub const LOGIND_INTERFACE: &str = "org.freedesktop.login1.Manager";
/// The systemd manager's service, object and interface (`ReloadLogindConf`).
pub const SYSTEMD_SERVICE: &str = "org.freedesktop.systemd1";
/// The systemd manager's object.
pub const SYSTEMD_OBJECT: &str = "/org/freedesktop/systemd1";
/// The systemd manager's interface.
pub const SYSTEMD_INTERFACE: &str = "org.freedesktop.systemd1.Manager";
/// `logindConfigDirectory`.
pub const LOGIND_CONFIG_DIRECTORY: &str = "/etc/systemd/logind.conf.d/";
/// `kubeletLogindConf`.
pub const KUBELET_LOGIND_CONF: &str = "99-kubelet.conf";

/// The arguments of logind's `Inhibit` (`InhibitShutdown`): what, who, why, mode.
pub const INHIBIT_WHAT: &str = "shutdown";
/// Who inhibits.
pub const INHIBIT_WHO: &str = "kubelet";
/// Why.
pub const INHIBIT_WHY: &str = "Kubelet needs time to handle node shutdown";
/// A delay lock.
pub const INHIBIT_MODE: &str = "delay";

/// Failures talking to logind and systemd (messages as upstream's).
#[derive(Debug, thiserror::Error)]
pub enum DbusError {
    /// Connecting to the bus failed.
    #[error("{0}")]
    Connect(zbus::Error),
    /// Reading `InhibitDelayMaxUSec`.
    #[error("failed reading InhibitDelayMaxUSec property from logind: {0}")]
    InhibitDelay(zbus::Error),
    /// Calling `Inhibit`.
    #[error("failed creating systemd inhibitor: {0}")]
    Inhibit(zbus::Error),
    /// The `Inhibit` reply is not a file descriptor.
    #[error("failed storing inhibit lock file descriptor: {0}")]
    InhibitReply(zbus::Error),
    /// Closing the lock.
    #[error("unable to close systemd inhibitor lock: {0}")]
    Release(std::io::Error),
    /// `KillUnit` failed.
    #[error("unable to reload logind conf: {0}")]
    Reload(zbus::Error),
    /// Subscribing to `PrepareForShutdown`.
    #[error("{0}")]
    Monitor(zbus::Error),
    /// Creating the drop-in directory.
    #[error("failed creating {dir} directory: {source}")]
    OverrideDir {
        /// The directory.
        dir: String,
        /// The error.
        source: std::io::Error,
    },
    /// Writing the drop-in.
    #[error("failed writing logind shutdown inhibit override file {path}: {source}")]
    OverrideFile {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A fake's scripted failure.
    #[error("{0}")]
    Fake(String),
}

/// The inhibitor lock (upstream `InhibitLock`, the file descriptor logind handed out):
/// closing it lets the shutdown proceed.
#[derive(Debug)]
pub struct InhibitLock {
    id: u64,
    fd: Option<OwnedFd>,
}

impl InhibitLock {
    /// A lock holding logind's file descriptor, marked close-on-exec (descriptors
    /// received over D-Bus are not): a process the kubelet starts must not hold the lock
    /// after the kubelet released it.
    pub fn from_fd(fd: OwnedFd) -> Self {
        use nix::fcntl::{FcntlArg, FdFlag, fcntl};
        if let Err(e) = fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)) {
            tracing::debug!(err = %e, "Could not mark the inhibitor lock close-on-exec");
        }
        let id = u64::try_from(fd.as_raw_fd()).unwrap_or_default();
        Self { id, fd: Some(fd) }
    }

    /// The descriptor, if the lock holds one.
    pub fn fd(&self) -> Option<&OwnedFd> {
        self.fd.as_ref()
    }

    /// A lock without a descriptor (fakes).
    pub fn fake(id: u64) -> Self {
        Self { id, fd: None }
    }

    /// The descriptor number (fakes: their id).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Closes the descriptor (upstream `syscall.Close`).
    pub fn close(mut self) -> Result<(), std::io::Error> {
        if let Some(fd) = self.fd.take() {
            // `OwnedFd` closes on drop; `close(2)` of an owned descriptor cannot fail with
            // EBADF, and logind's side sees the pipe closed either way.
            drop(fd);
        }
        Ok(())
    }
}

/// Upstream `dbusInhibiter`.
#[async_trait]
pub trait DbusInhibiter: Send + Sync {
    /// `CurrentInhibitDelay`: logind's `InhibitDelayMaxUSec`.
    async fn current_inhibit_delay(&self) -> Result<Duration, DbusError>;
    /// `InhibitShutdown`: a delay lock on shutdown.
    async fn inhibit_shutdown(&self) -> Result<InhibitLock, DbusError>;
    /// `ReleaseInhibitLock`: closes the lock.
    fn release_inhibit_lock(&self, lock: InhibitLock) -> Result<(), DbusError>;
    /// `ReloadLogindConf`: `KillUnit("systemd-logind.service", "all", SIGHUP)`.
    async fn reload_logind_conf(&self) -> Result<(), DbusError>;
    /// `MonitorShutdown`: `PrepareForShutdown` values; the channel closes when the
    /// connection ends.
    async fn monitor_shutdown(&self) -> Result<mpsc::Receiver<bool>, DbusError>;
    /// `OverrideInhibitDelay`: writes the logind drop-in with `InhibitDelayMaxSec`.
    async fn override_inhibit_delay(&self, inhibit_delay_max: Duration) -> Result<(), DbusError>;
}

/// Opens a connection (upstream `systemDbus`, called at every (re)start).
#[async_trait]
pub trait DbusConnector: Send + Sync {
    /// A new connection.
    async fn connect(&self) -> Result<std::sync::Arc<dyn DbusInhibiter>, DbusError>;
}

/// Which bus [`DBusCon`] connects to, and where the logind drop-in is written.
#[derive(Debug, Clone)]
pub struct SystemBus {
    /// The bus address; `None`: the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else
    /// `unix:path=/var/run/dbus/system_bus_socket`).
    pub address: Option<String>,
    /// `logindConfigDirectory`.
    pub logind_config_directory: PathBuf,
}

impl Default for SystemBus {
    fn default() -> Self {
        Self {
            address: None,
            logind_config_directory: PathBuf::from(LOGIND_CONFIG_DIRECTORY),
        }
    }
}

#[async_trait]
impl DbusConnector for SystemBus {
    async fn connect(&self) -> Result<std::sync::Arc<dyn DbusInhibiter>, DbusError> {
        Ok(std::sync::Arc::new(DBusCon::new(self).await?))
    }
}

/// Upstream `DBusCon` over zbus.
#[derive(Debug, Clone)]
pub struct DBusCon {
    conn: zbus::Connection,
    logind_config_directory: PathBuf,
}

impl DBusCon {
    /// Upstream `NewDBusCon` (`dbus.SystemBus()`), or the injected address.
    pub async fn new(bus: &SystemBus) -> Result<Self, DbusError> {
        let builder = match &bus.address {
            Some(a) => zbus::connection::Builder::address(a.as_str()),
            None => zbus::connection::Builder::system(),
        };
        let conn = builder.build().await.map_err(DbusError::Connect)?;
        Ok(Self {
            conn,
            logind_config_directory: bus.logind_config_directory.clone(),
        })
    }

    async fn logind(&self) -> zbus::Result<zbus::Proxy<'static>> {
        zbus::proxy::Builder::new(&self.conn)
            .destination(LOGIND_SERVICE)
            .path(LOGIND_OBJECT)
            .interface(LOGIND_INTERFACE)
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
    }
}

#[async_trait]
impl DbusInhibiter for DBusCon {
    async fn current_inhibit_delay(&self) -> Result<Duration, DbusError> {
        let proxy = self.logind().await.map_err(DbusError::InhibitDelay)?;
        let usec: u64 = proxy
            .get_property("InhibitDelayMaxUSec")
            .await
            .map_err(DbusError::InhibitDelay)?;
        Ok(Duration::from_micros(usec))
    }

    async fn inhibit_shutdown(&self) -> Result<InhibitLock, DbusError> {
        let proxy = self.logind().await.map_err(DbusError::Inhibit)?;
        let reply = proxy
            .call_method(
                "Inhibit",
                &(INHIBIT_WHAT, INHIBIT_WHO, INHIBIT_WHY, INHIBIT_MODE),
            )
            .await
            .map_err(DbusError::Inhibit)?;
        let fd: zbus::OwnedFd = reply
            .body()
            .deserialize()
            .map_err(DbusError::InhibitReply)?;
        Ok(InhibitLock::from_fd(fd.into()))
    }

    fn release_inhibit_lock(&self, lock: InhibitLock) -> Result<(), DbusError> {
        lock.close().map_err(DbusError::Release)
    }

    async fn reload_logind_conf(&self) -> Result<(), DbusError> {
        let proxy: zbus::Proxy<'_> = zbus::proxy::Builder::new(&self.conn)
            .destination(SYSTEMD_SERVICE)
            .path(SYSTEMD_OBJECT)
            .interface(SYSTEMD_INTERFACE)
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .map_err(DbusError::Reload)?;
        let sighup: i32 = 1;
        proxy
            .call_method("KillUnit", &("systemd-logind.service", "all", sighup))
            .await
            .map_err(DbusError::Reload)?;
        Ok(())
    }

    async fn monitor_shutdown(&self) -> Result<mpsc::Receiver<bool>, DbusError> {
        let proxy = self.logind().await.map_err(DbusError::Monitor)?;
        let mut signals = proxy
            .receive_signal("PrepareForShutdown")
            .await
            .map_err(DbusError::Monitor)?;
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            while let Some(msg) = signals.next().await {
                let active: bool = match msg.body().deserialize() {
                    Ok(b) => b,
                    Err(_) => {
                        tracing::error!(
                            "Failed obtaining shutdown event, PrepareForShutdown event was not bool type as expected"
                        );
                        continue;
                    }
                };
                if tx.send(active).await.is_err() {
                    return;
                }
            }
        });
        Ok(rx)
    }

    async fn override_inhibit_delay(&self, inhibit_delay_max: Duration) -> Result<(), DbusError> {
        write_inhibit_delay_override(&self.logind_config_directory, inhibit_delay_max)
    }
}

/// The drop-in `OverrideInhibitDelay` writes.
pub fn inhibit_override(inhibit_delay_max: Duration) -> String {
    format!(
        "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec={:.0}\n",
        inhibit_delay_max.as_secs_f64()
    )
}

/// `OverrideInhibitDelay`'s file work: `<dir>/99-kubelet.conf` (directory created 0755,
/// file 0644).
pub fn write_inhibit_delay_override(
    dir: &Path,
    inhibit_delay_max: Duration,
) -> Result<(), DbusError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|source| DbusError::OverrideDir {
            dir: dir.display().to_string(),
            source,
        })?;
    let path = dir.join(KUBELET_LOGIND_CONF);
    let err = |source| DbusError::OverrideFile {
        path: path.display().to_string(),
        source,
    };
    std::fs::write(&path, inhibit_override(inhibit_delay_max)).map_err(err)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).map_err(err)
}
