//! The real [`SystemdManager`]: systemd's manager over zbus, on the system bus
//! (`DBUS_SYSTEM_BUS_ADDRESS`, else `/var/run/dbus/system_bus_socket`) or an injected
//! address. Mirrors go-systemd's `Conn` (`NewWithContext`, `startJob` with the
//! `JobRemoved` listener, `SetUnitPropertiesContext`, `ResetFailedUnitContext`,
//! `GetManagerProperty`) and libcontainer's `dbusConnManager` (one lazily made connection,
//! made again when it was closed: `retryOnDisconnect`).
//!
//! The cgroup manager is synchronous; the calls run on a small runtime of their own and
//! the caller waits for the answer, so it works from any thread, inside a tokio runtime
//! or not.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use zbus::{OwnedObjectPath, Variant as Value};

use crate::{
    JOB_TIMEOUT, PropValue, Property, SYSTEMD_MANAGER_INTERFACE, SYSTEMD_OBJECT, SYSTEMD_SERVICE,
    SystemdError, SystemdManager,
};

struct Inner {
    address: Option<String>,
    conn: tokio::sync::Mutex<Option<zbus::Connection>>,
    job_timeout: Duration,
}

/// systemd's manager over D-Bus (zbus).
pub struct DbusSystemdManager {
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DbusSystemdManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbusSystemdManager")
            .field("address", &self.inner.address)
            .finish_non_exhaustive()
    }
}

impl Drop for DbusSystemdManager {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which a tokio thread must not do.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn call_err(e: zbus::Error) -> SystemdError {
    match e {
        zbus::Error::MethodError(name, detail, _) => SystemdError::Dbus {
            name: name.to_string(),
            message: detail.unwrap_or_default(),
        },
        zbus::Error::FDO(fdo) => match *fdo {
            zbus::fdo::Error::ZBus(e) => call_err(e),
            other => SystemdError::Dbus {
                name: zbus::DBusError::name(&other).to_string(),
                message: zbus::DBusError::description(&other)
                    .unwrap_or_default()
                    .to_string(),
            },
        },
        other => SystemdError::Call(other.to_string()),
    }
}

/// A closed connection (go-systemd: `dbus.ErrClosed`): made again and the call retried.
fn is_closed(e: &zbus::Error) -> bool {
    matches!(e, zbus::Error::InputOutput(_))
}

fn to_value(v: &PropValue) -> Value<'static> {
    match v {
        PropValue::Bool(b) => Value::from(*b),
        PropValue::Str(s) => Value::from(s.clone()),
        PropValue::StrList(l) => Value::from(l.clone()),
        PropValue::U64(n) => Value::from(*n),
        PropValue::Bytes(b) => Value::from(b.clone()),
    }
}

fn to_dbus(properties: &[Property]) -> Vec<(String, Value<'static>)> {
    properties
        .iter()
        .map(|p| (p.name.clone(), to_value(&p.value)))
        .collect()
}

impl Inner {
    async fn connection(&self) -> Result<zbus::Connection, SystemdError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let builder = match &self.address {
            Some(a) => zbus::connection::Builder::address(a.as_str()),
            None => zbus::connection::Builder::system(),
        };
        let conn = builder
            .build()
            .await
            .map_err(|e| SystemdError::Connect(e.to_string()))?;
        *guard = Some(conn.clone());
        Ok(conn)
    }

    async fn reset(&self, conn: &zbus::Connection) {
        let mut guard = self.conn.lock().await;
        if guard
            .as_ref()
            .is_some_and(|c| c.unique_name() == conn.unique_name())
        {
            *guard = None;
        }
    }

    async fn proxy(conn: &zbus::Connection) -> zbus::Result<zbus::Proxy<'static>> {
        zbus::proxy::Builder::new(conn)
            .destination(SYSTEMD_SERVICE)
            .path(SYSTEMD_OBJECT)
            .interface(SYSTEMD_MANAGER_INTERFACE)
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
    }

    /// libcontainer `retryOnDisconnect`: `op` on the connection, again on a new one while
    /// the old one turns out closed.
    async fn retry_on_disconnect<T, F, Fut>(&self, op: F) -> Result<T, SystemdError>
    where
        F: Fn(zbus::Connection) -> Fut,
        Fut: Future<Output = Result<T, zbus::Error>>,
    {
        loop {
            let conn = self.connection().await?;
            match op(conn.clone()).await {
                Ok(v) => return Ok(v),
                Err(e) if is_closed(&e) => self.reset(&conn).await,
                Err(e) => return Err(call_err(e)),
            }
        }
    }

    /// go-systemd `startJob` with a result channel: the `JobRemoved` listener is in place
    /// before the call, so the signal cannot be missed; then the job's result.
    async fn job(&self, unit: &str, method: &str, body: JobBody) -> Result<String, SystemdError> {
        let timeout = self.job_timeout;
        let unit_owned = unit.to_string();
        let (mut signals, job) = self
            .retry_on_disconnect(|conn| {
                let body = body.clone();
                async move {
                    let proxy = Inner::proxy(&conn).await?;
                    let signals = proxy.receive_signal("JobRemoved").await?;
                    let reply = match &body {
                        JobBody::Start { name, mode, props } => {
                            let aux: Vec<(String, Vec<(String, Value<'_>)>)> = Vec::new();
                            proxy
                                .call_method(
                                    method,
                                    &(name.as_str(), mode.as_str(), to_dbus(props), aux),
                                )
                                .await?
                        }
                        JobBody::Stop { name, mode } => {
                            proxy
                                .call_method(method, &(name.as_str(), mode.as_str()))
                                .await?
                        }
                    };
                    let job: OwnedObjectPath = reply.body().deserialize()?;
                    Ok((signals, job))
                }
            })
            .await?;
        let wait = async {
            while let Some(msg) = signals.next().await {
                let Ok((_id, path, _unit, result)) =
                    msg.body()
                        .deserialize::<(u32, OwnedObjectPath, String, String)>()
                else {
                    continue;
                };
                if path == job {
                    return Ok(result);
                }
            }
            Err(SystemdError::Call(format!(
                "the connection closed before the job of unit {unit_owned} ended"
            )))
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(r) => r,
            Err(_) => Err(SystemdError::JobTimeout(unit.to_string())),
        }
    }
}

#[derive(Clone)]
enum JobBody {
    Start {
        name: String,
        mode: String,
        props: Vec<Property>,
    },
    Stop {
        name: String,
        mode: String,
    },
}

impl DbusSystemdManager {
    /// The manager on the system bus (go-systemd `NewSystemConnectionContext`); the
    /// connection is made on the first call.
    pub fn system() -> Result<Self, SystemdError> {
        Self::build(None, JOB_TIMEOUT)
    }

    /// The manager at `address` (tests: a private bus), jobs waited for up to
    /// `job_timeout`.
    pub fn with_address(address: &str, job_timeout: Duration) -> Result<Self, SystemdError> {
        Self::build(Some(address.to_string()), job_timeout)
    }

    fn build(address: Option<String>, job_timeout: Duration) -> Result<Self, SystemdError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("systemd-dbus")
            .enable_all()
            .build()
            .map_err(|e| SystemdError::Connect(format!("cannot start the D-Bus runtime: {e}")))?;
        Ok(DbusSystemdManager {
            runtime: Some(runtime),
            inner: Arc::new(Inner {
                address,
                conn: tokio::sync::Mutex::new(None),
                job_timeout,
            }),
        })
    }

    /// Runs `f` on the manager's runtime and waits for it.
    fn run<T, F, Fut>(&self, f: F) -> Result<T, SystemdError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T, SystemdError>> + Send + 'static,
    {
        let Some(rt) = self.runtime.as_ref() else {
            return Err(SystemdError::Call("the D-Bus runtime is gone".into()));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let fut = f(self.inner.clone());
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        // The futures end by themselves (job timeout, call timeouts); the margin only
        // guards against a runtime that stopped.
        let limit = self.inner.job_timeout + Duration::from_secs(60);
        match rx.recv_timeout(limit) {
            Ok(r) => r,
            Err(_) => Err(SystemdError::Call(
                "no answer from the D-Bus task".to_string(),
            )),
        }
    }
}

impl SystemdManager for DbusSystemdManager {
    fn start_transient_unit(
        &self,
        name: &str,
        mode: &str,
        properties: &[Property],
    ) -> Result<String, SystemdError> {
        let body = JobBody::Start {
            name: name.to_string(),
            mode: mode.to_string(),
            props: properties.to_vec(),
        };
        let unit = name.to_string();
        self.run(move |inner| async move { inner.job(&unit, "StartTransientUnit", body).await })
    }

    fn stop_unit(&self, name: &str, mode: &str) -> Result<String, SystemdError> {
        let body = JobBody::Stop {
            name: name.to_string(),
            mode: mode.to_string(),
        };
        let unit = name.to_string();
        self.run(move |inner| async move { inner.job(&unit, "StopUnit", body).await })
    }

    fn set_unit_properties(
        &self,
        name: &str,
        runtime: bool,
        properties: &[Property],
    ) -> Result<(), SystemdError> {
        let (name, props) = (name.to_string(), properties.to_vec());
        self.run(move |inner| async move {
            inner
                .retry_on_disconnect(|conn| {
                    let (name, props) = (name.clone(), props.clone());
                    async move {
                        let proxy = Inner::proxy(&conn).await?;
                        proxy
                            .call_method(
                                "SetUnitProperties",
                                &(name.as_str(), runtime, to_dbus(&props)),
                            )
                            .await?;
                        Ok(())
                    }
                })
                .await
        })
    }

    fn reset_failed_unit(&self, name: &str) -> Result<(), SystemdError> {
        let name = name.to_string();
        self.run(move |inner| async move {
            inner
                .retry_on_disconnect(|conn| {
                    let name = name.clone();
                    async move {
                        let proxy = Inner::proxy(&conn).await?;
                        proxy
                            .call_method("ResetFailedUnit", &(name.as_str(),))
                            .await?;
                        Ok(())
                    }
                })
                .await
        })
    }

    fn version(&self) -> Result<String, SystemdError> {
        self.run(|inner| async move {
            inner
                .retry_on_disconnect(|conn| async move {
                    let proxy = Inner::proxy(&conn).await?;
                    proxy.get_property::<String>("Version").await
                })
                .await
        })
    }
}
