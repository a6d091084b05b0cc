//! A private D-Bus with a fake systemd manager, for tests of [`crate::DbusSystemdManager`]
//! on a real bus: [`PrivateBus`] runs `dbus-daemon` on a unix socket in a temporary
//! directory (as `kubelet-nodeshutdown`'s fake logind does); [`FakeSystemd`] serves
//! `org.freedesktop.systemd1.Manager` — `StartTransientUnit` (a second start of an active
//! unit answers `org.freedesktop.systemd1.UnitExists`), `SetUnitProperties`, `StopUnit`,
//! `ResetFailedUnit`, the `Version` property — recording each call with its property
//! variants, answering a job path (`/org/freedesktop/systemd1/job/<n>`) and emitting
//! `JobRemoved(id, job, unit, result)` afterwards, as systemd does.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use zbus::{OwnedObjectPath, OwnedVariant as OwnedValue, Variant as Value};

use crate::{
    PropValue, Property, SYSTEMD_MANAGER_INTERFACE, SYSTEMD_OBJECT, SYSTEMD_SERVICE, SystemdCall,
};

pub use crate::private_bus::PrivateBus;

/// What the fake saw and how it answers.
#[derive(Debug, Default)]
pub struct FakeSystemdState {
    /// Every call, in order, with the properties as received.
    pub calls: Vec<SystemdCall>,
    /// Units started and not stopped.
    pub active: BTreeSet<String>,
    /// Jobs handed out so far.
    pub jobs: u32,
    /// The result jobs end with (`done` when `None`).
    pub job_result: Option<String>,
    /// Emit no `JobRemoved` (a job that never ends).
    pub hold_jobs: bool,
}

type Shared = Arc<Mutex<FakeSystemdState>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, FakeSystemdState> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// systemd's errors the fake answers with.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.freedesktop.systemd1")]
enum SystemdFault {
    #[zbus(error)]
    ZBus(zbus::Error),
    /// `org.freedesktop.systemd1.UnitExists`.
    UnitExists(String),
    /// `org.freedesktop.systemd1.InvalidArgs` (a property of an unknown type).
    InvalidArgs(String),
}

fn from_value(v: &OwnedValue) -> Result<PropValue, SystemdFault> {
    let v: &Value<'_> = v;
    let v = match v {
        Value::Variant(inner) => inner.as_ref(),
        other => other,
    };
    Ok(match v {
        Value::Bool(b) => PropValue::Bool(*b),
        Value::Str(s) => PropValue::Str(s.to_string()),
        Value::U64(n) => PropValue::U64(*n),
        Value::Array(a) if a.element_signature().to_string() == "s" => PropValue::StrList(
            a.iter()
                .filter_map(|e| match e {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
        ),
        Value::Array(a) if a.element_signature().to_string() == "y" => PropValue::Bytes(
            a.iter()
                .filter_map(|e| match e {
                    Value::U8(b) => Some(*b),
                    _ => None,
                })
                .collect(),
        ),
        other => {
            return Err(SystemdFault::InvalidArgs(format!(
                "unexpected property value {other:?}"
            )));
        }
    })
}

fn from_dbus(props: &[(String, OwnedValue)]) -> Result<Vec<Property>, SystemdFault> {
    props
        .iter()
        .map(|(name, v)| {
            Ok(Property {
                name: name.clone(),
                value: from_value(v)?,
            })
        })
        .collect()
}

struct Manager {
    state: Shared,
}

impl Manager {
    /// A new job: its path, and `JobRemoved` emitted shortly after the reply.
    fn job(&self, conn: &zbus::Connection, unit: &str) -> zbus::fdo::Result<OwnedObjectPath> {
        let (id, result, hold) = {
            let mut s = lock(&self.state);
            s.jobs += 1;
            (
                s.jobs,
                s.job_result.clone().unwrap_or_else(|| "done".into()),
                s.hold_jobs,
            )
        };
        let path = OwnedObjectPath::try_from(format!("{SYSTEMD_OBJECT}/job/{id}"))
            .map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        if !hold {
            let (conn, job, unit) = (conn.clone(), path.clone(), unit.to_string());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = conn
                    .emit_signal(
                        None::<&str>,
                        SYSTEMD_OBJECT,
                        SYSTEMD_MANAGER_INTERFACE,
                        "JobRemoved",
                        &(id, job, unit, result),
                    )
                    .await;
            });
        }
        Ok(path)
    }
}

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl Manager {
    #[zbus(property)]
    fn version(&self) -> String {
        "252.36-1~deb12u1".to_string()
    }

    async fn start_transient_unit(
        &self,
        name: String,
        mode: String,
        properties: Vec<(String, OwnedValue)>,
        _aux: Vec<(String, Vec<(String, OwnedValue)>)>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<OwnedObjectPath, SystemdFault> {
        let properties = from_dbus(&properties)?;
        {
            let mut s = lock(&self.state);
            s.calls.push(SystemdCall::StartTransientUnit {
                name: name.clone(),
                mode,
                properties,
            });
            if !s.active.insert(name.clone()) {
                return Err(SystemdFault::UnitExists(format!(
                    "Unit {name} was already loaded or has a fragment file."
                )));
            }
        }
        self.job(conn, &name)
            .map_err(|e| SystemdFault::ZBus(zbus::Error::FDO(Box::new(e))))
    }

    fn set_unit_properties(
        &self,
        name: String,
        runtime: bool,
        properties: Vec<(String, OwnedValue)>,
    ) -> Result<(), SystemdFault> {
        let properties = from_dbus(&properties)?;
        lock(&self.state)
            .calls
            .push(SystemdCall::SetUnitProperties {
                name,
                runtime,
                properties,
            });
        Ok(())
    }

    async fn stop_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<OwnedObjectPath> {
        {
            let mut s = lock(&self.state);
            s.calls.push(SystemdCall::StopUnit {
                name: name.clone(),
                mode,
            });
            s.active.remove(&name);
        }
        self.job(conn, &name)
    }

    fn reset_failed_unit(&self, name: String) {
        lock(&self.state)
            .calls
            .push(SystemdCall::ResetFailedUnit { name });
    }
}

/// The fake systemd manager on a bus.
pub struct FakeSystemd {
    _conn: zbus::Connection,
    state: Shared,
}

impl std::fmt::Debug for FakeSystemd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSystemd").finish_non_exhaustive()
    }
}

impl FakeSystemd {
    /// Serves `org.freedesktop.systemd1` on `address`.
    pub async fn serve(address: &str) -> zbus::Result<Self> {
        let state: Shared = Arc::default();
        let conn = zbus::connection::Builder::address(address)
            .name(SYSTEMD_SERVICE)
            .serve_at(
                SYSTEMD_OBJECT,
                Manager {
                    state: state.clone(),
                },
            )
            .build()
            .await?;
        Ok(Self { _conn: conn, state })
    }

    /// Every call, in order.
    pub fn calls(&self) -> Vec<SystemdCall> {
        lock(&self.state).calls.clone()
    }

    /// The units started and not stopped.
    pub fn active(&self) -> Vec<String> {
        lock(&self.state).active.iter().cloned().collect()
    }

    /// The result later jobs end with.
    pub fn set_job_result(&self, result: &str) {
        lock(&self.state).job_result = Some(result.to_string());
    }

    /// Whether later jobs never end (no `JobRemoved`).
    pub fn hold_jobs(&self, hold: bool) {
        lock(&self.state).hold_jobs = hold;
    }
}
