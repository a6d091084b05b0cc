//! systemd's D-Bus API as the kubelet's systemd cgroup driver uses it (upstream: the
//! `systemd` package of `github.com/opencontainers/cgroups` v0.0.3, `common.go`,
//! `dbus.go`, `cpuset.go`, over `github.com/coreos/go-systemd/v22/dbus`).
//!
//! * [`SystemdManager`]: the boundary — `StartTransientUnit`, `SetUnitProperties`,
//!   `StopUnit`, `ResetFailedUnit` and the manager's `Version`, a started or stopped unit's
//!   job waited for until systemd's `JobRemoved` signal gives its result (go-systemd's
//!   `startJob`/`jobComplete`). [`DbusSystemdManager`] is the real one (zbus, on the
//!   system bus); [`FakeSystemdManager`] records the calls for unit tests.
//! * [`Systemd`]: libcontainer's logic over it — `startUnit` (an existing unit ignored
//!   for slices, a leftover failed one reset and retried), `stopUnit`, `setUnitProperties`,
//!   the cached `systemdVersion`, and the property rules `addCPUQuota` and `addCpuset`
//!   (`RangeToBits`).
//! * [`is_running_systemd`]: `IsRunningSystemd` (`/run/systemd/system` is a directory).

mod dbus;
#[cfg(test)]
mod dbus_tests;
#[cfg(any(test, feature = "fake-systemd"))]
pub mod fake_systemd;
#[cfg(any(test, feature = "private-bus"))]
pub mod private_bus;

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

pub use dbus::DbusSystemdManager;

/// The bus name of systemd's manager.
pub const SYSTEMD_SERVICE: &str = "org.freedesktop.systemd1";
/// Its object.
pub const SYSTEMD_OBJECT: &str = "/org/freedesktop/systemd1";
/// Its interface.
pub const SYSTEMD_MANAGER_INTERFACE: &str = "org.freedesktop.systemd1.Manager";
/// The D-Bus error systemd answers `StartTransientUnit` with for a unit that exists.
pub const UNIT_EXISTS_ERROR: &str = "org.freedesktop.systemd1.UnitExists";
/// How long libcontainer waits for a unit's job (`startUnit`, `stopUnit`).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(30);
/// `defCPUQuotaPeriod`: the kernel's default CFS period, in microseconds.
pub const DEF_CPU_QUOTA_PERIOD: u64 = 100_000;
/// The directory whose presence means the host booted with systemd (`sd_booted(3)`).
pub const RUN_SYSTEMD_SYSTEM: &str = "/run/systemd/system";

/// A unit property's value, as libcontainer builds them (`dbus.MakeVariant` of a Go
/// `bool`, `string`, `[]string`, `uint64` or `[]byte`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropValue {
    /// D-Bus `b`.
    Bool(bool),
    /// D-Bus `s`.
    Str(String),
    /// D-Bus `as`.
    StrList(Vec<String>),
    /// D-Bus `t`.
    U64(u64),
    /// D-Bus `ay`.
    Bytes(Vec<u8>),
}

/// One unit property (go-systemd `Property`: name and variant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The property name (`MemoryMax`, …).
    pub name: String,
    /// Its value.
    pub value: PropValue,
}

/// libcontainer's `newProp`.
pub fn prop(name: &str, value: PropValue) -> Property {
    Property {
        name: name.to_string(),
        value,
    }
}

/// Errors of the D-Bus boundary and of libcontainer's systemd logic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemdError {
    /// The bus could not be reached (upstream's `failed to connect to dbus …`).
    #[error("failed to connect to dbus: {0}")]
    Connect(String),
    /// systemd answered with a D-Bus error.
    #[error("{name}: {message}")]
    Dbus {
        /// The error name (`org.freedesktop.systemd1.UnitExists`, …).
        name: String,
        /// Its message.
        message: String,
    },
    /// Any other failure of a call (I/O, a reply of the wrong type).
    #[error("{0}")]
    Call(String),
    /// The job's `JobRemoved` did not come within the timeout.
    #[error("timed out waiting for the job of unit {0}")]
    JobTimeout(String),
    /// libcontainer's own errors, with its messages.
    #[error("{0}")]
    Libcontainer(String),
}

impl SystemdError {
    /// libcontainer `isUnitExists`.
    pub fn is_unit_exists(&self) -> bool {
        matches!(self, SystemdError::Dbus { name, .. } if name.contains(UNIT_EXISTS_ERROR))
    }
}

/// systemd's manager over D-Bus, as libcontainer calls it. A method that starts a job
/// waits for the job's `JobRemoved` signal and returns its result (`done`, `failed`,
/// `canceled`, `timeout`, `dependency`, `skipped`), or [`SystemdError::JobTimeout`].
pub trait SystemdManager: Send + Sync {
    /// `StartTransientUnit(name, mode, properties, [])`, then the job's result.
    fn start_transient_unit(
        &self,
        name: &str,
        mode: &str,
        properties: &[Property],
    ) -> Result<String, SystemdError>;
    /// `StopUnit(name, mode)`, then the job's result.
    fn stop_unit(&self, name: &str, mode: &str) -> Result<String, SystemdError>;
    /// `SetUnitProperties(name, runtime, properties)`.
    fn set_unit_properties(
        &self,
        name: &str,
        runtime: bool,
        properties: &[Property],
    ) -> Result<(), SystemdError>;
    /// `ResetFailedUnit(name)`.
    fn reset_failed_unit(&self, name: &str) -> Result<(), SystemdError>;
    /// The manager's `Version` property (e.g. `252.36-1~deb12u1`).
    fn version(&self) -> Result<String, SystemdError>;
}

/// One call a [`SystemdManager`] received (the recording fakes' log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemdCall {
    /// `StartTransientUnit`.
    StartTransientUnit {
        /// Unit name.
        name: String,
        /// Job mode.
        mode: String,
        /// Properties, in order.
        properties: Vec<Property>,
    },
    /// `SetUnitProperties`.
    SetUnitProperties {
        /// Unit name.
        name: String,
        /// Runtime only (not persisted).
        runtime: bool,
        /// Properties, in order.
        properties: Vec<Property>,
    },
    /// `StopUnit`.
    StopUnit {
        /// Unit name.
        name: String,
        /// Job mode.
        mode: String,
    },
    /// `ResetFailedUnit`.
    ResetFailedUnit {
        /// Unit name.
        name: String,
    },
}

impl SystemdCall {
    /// The unit the call is about.
    pub fn unit(&self) -> &str {
        match self {
            SystemdCall::StartTransientUnit { name, .. }
            | SystemdCall::SetUnitProperties { name, .. }
            | SystemdCall::StopUnit { name, .. }
            | SystemdCall::ResetFailedUnit { name } => name,
        }
    }
}

#[derive(Debug, Default)]
struct FakeState {
    calls: Vec<SystemdCall>,
    active: std::collections::BTreeSet<String>,
    job_result: Option<String>,
    fail_start: Option<SystemdError>,
    fail_set: Option<SystemdError>,
    version: Option<String>,
}

/// A recording [`SystemdManager`]: units started are kept as active (a second start
/// answers `UnitExists`, as systemd), jobs end `done` unless told otherwise.
#[derive(Debug, Default)]
pub struct FakeSystemdManager {
    state: Mutex<FakeState>,
}

impl FakeSystemdManager {
    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every call, in order.
    pub fn calls(&self) -> Vec<SystemdCall> {
        self.lock().calls.clone()
    }

    /// Forgets the calls seen so far.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// The result every later job ends with (`done` by default).
    pub fn set_job_result(&self, result: &str) {
        self.lock().job_result = Some(result.to_string());
    }

    /// Makes every later `StartTransientUnit` fail with `err`.
    pub fn fail_start(&self, err: Option<SystemdError>) {
        self.lock().fail_start = err;
    }

    /// Makes every later `SetUnitProperties` fail with `err`.
    pub fn fail_set(&self, err: Option<SystemdError>) {
        self.lock().fail_set = err;
    }

    /// The `Version` answered (`252` by default).
    pub fn set_version(&self, version: &str) {
        self.lock().version = Some(version.to_string());
    }

    /// Marks a unit as existing (started before).
    pub fn add_active(&self, unit: &str) {
        self.lock().active.insert(unit.to_string());
    }

    /// The units started and not stopped.
    pub fn active(&self) -> Vec<String> {
        self.lock().active.iter().cloned().collect()
    }
}

impl SystemdManager for FakeSystemdManager {
    fn start_transient_unit(
        &self,
        name: &str,
        mode: &str,
        properties: &[Property],
    ) -> Result<String, SystemdError> {
        let mut s = self.lock();
        s.calls.push(SystemdCall::StartTransientUnit {
            name: name.to_string(),
            mode: mode.to_string(),
            properties: properties.to_vec(),
        });
        if let Some(e) = s.fail_start.clone() {
            return Err(e);
        }
        if !s.active.insert(name.to_string()) {
            return Err(SystemdError::Dbus {
                name: UNIT_EXISTS_ERROR.to_string(),
                message: format!("Unit {name} already exists."),
            });
        }
        Ok(s.job_result.clone().unwrap_or_else(|| "done".into()))
    }

    fn stop_unit(&self, name: &str, mode: &str) -> Result<String, SystemdError> {
        let mut s = self.lock();
        s.calls.push(SystemdCall::StopUnit {
            name: name.to_string(),
            mode: mode.to_string(),
        });
        s.active.remove(name);
        Ok(s.job_result.clone().unwrap_or_else(|| "done".into()))
    }

    fn set_unit_properties(
        &self,
        name: &str,
        runtime: bool,
        properties: &[Property],
    ) -> Result<(), SystemdError> {
        let mut s = self.lock();
        s.calls.push(SystemdCall::SetUnitProperties {
            name: name.to_string(),
            runtime,
            properties: properties.to_vec(),
        });
        match s.fail_set.clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn reset_failed_unit(&self, name: &str) -> Result<(), SystemdError> {
        self.lock().calls.push(SystemdCall::ResetFailedUnit {
            name: name.to_string(),
        });
        Ok(())
    }

    fn version(&self) -> Result<String, SystemdError> {
        Ok(self.lock().version.clone().unwrap_or_else(|| "252".into()))
    }
}

/// libcontainer `IsRunningSystemd` (`sd_booted(3)`): `/run/systemd/system` is a
/// directory (not followed if a symlink).
pub fn is_running_systemd() -> bool {
    std::fs::symlink_metadata(Path::new(RUN_SYSTEMD_SYSTEM)).is_ok_and(|m| m.is_dir())
}

/// libcontainer `systemdVersionAtoi`: `"v245.4-1.fc32"`, `245`, … → 245.
pub fn systemd_version_atoi(s: &str) -> Result<i64, SystemdError> {
    let s = s.trim_start_matches(['"', 'v']);
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .map_err(|e| SystemdError::Libcontainer(format!("can't parse version: strconv.Atoi: {e}")))
}

/// libcontainer `RangeToBits`: a cpuset list (`1,3-5`) as the bytes systemd reads
/// `AllowedCPUs`/`AllowedMemoryNodes` from (lowest CPUs in the first byte).
pub fn range_to_bits(s: &str) -> Result<Vec<u8>, SystemdError> {
    let bad = |m: String| SystemdError::Libcontainer(m);
    let mut bits: Vec<u8> = Vec::new();
    let mut set = |i: u64| {
        let byte = usize::try_from(i / 8).unwrap_or(usize::MAX);
        if byte >= bits.len() {
            bits.resize(byte.saturating_add(1), 0);
        }
        if let Some(b) = bits.get_mut(byte) {
            *b |= 1 << (i % 8);
        }
    };
    let parse = |t: &str| {
        t.parse::<u32>()
            .map(u64::from)
            .map_err(|e| bad(format!("strconv.ParseUint: parsing {t:?}: {e}")))
    };
    for r in s.split(',') {
        let r = r.trim();
        if r.is_empty() {
            continue;
        }
        match r.split_once('-') {
            Some((a, b)) => {
                let (start, end) = (parse(a)?, parse(b)?);
                if start > end {
                    return Err(bad(format!("invalid range: {r}")));
                }
                (start..=end).for_each(&mut set);
            }
            None => set(parse(r)?),
        }
    }
    // big.Int.Bytes() is big-endian without leading zeros; libcontainer then reverses it:
    // little-endian, without the trailing zero bytes.
    while bits.last() == Some(&0) {
        bits.pop();
    }
    if bits.is_empty() {
        return Err(bad("empty value".into()));
    }
    Ok(bits)
}

/// libcontainer's systemd logic over one connection (its `dbusConnManager` and the
/// package-level `systemdVersion` cache).
pub struct Systemd {
    manager: Arc<dyn SystemdManager>,
    version: OnceLock<i64>,
}

impl std::fmt::Debug for Systemd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Systemd")
            .field("version", &self.version.get())
            .finish_non_exhaustive()
    }
}

impl Systemd {
    /// The logic over `manager`.
    pub fn new(manager: Arc<dyn SystemdManager>) -> Self {
        Systemd {
            manager,
            version: OnceLock::new(),
        }
    }

    /// The boundary.
    pub fn manager(&self) -> &Arc<dyn SystemdManager> {
        &self.manager
    }

    /// `systemdVersion`: the manager's version number, read once; -1 when it cannot be
    /// read or parsed (logged, as upstream).
    pub fn systemd_version(&self) -> i64 {
        *self.version.get_or_init(|| {
            match self
                .manager
                .version()
                .and_then(|v| systemd_version_atoi(&v))
            {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(err = %e, "unable to get systemd version");
                    -1
                }
            }
        })
    }

    /// libcontainer `startUnit`: starts the transient unit (mode `replace`) and waits for
    /// its job. An existing unit is not an error when `ignore_exist` (the kubelet making
    /// sure a slice exists); otherwise a leftover failed unit is reset and the start
    /// retried once. A job that does not end `done`, or does not end within 30 s, resets
    /// the unit and is an error.
    pub fn start_unit(
        &self,
        unit: &str,
        properties: &[Property],
        ignore_exist: bool,
    ) -> Result<(), SystemdError> {
        let mut retry = true;
        loop {
            match self
                .manager
                .start_transient_unit(unit, "replace", properties)
            {
                Ok(result) if result == "done" => return Ok(()),
                Ok(result) => {
                    let _ = self.manager.reset_failed_unit(unit);
                    return Err(SystemdError::Libcontainer(format!(
                        "error creating systemd unit `{unit}`: got `{result}`"
                    )));
                }
                Err(SystemdError::JobTimeout(_)) => {
                    let _ = self.manager.reset_failed_unit(unit);
                    return Err(SystemdError::Libcontainer(format!(
                        "Timeout waiting for systemd to create {unit}"
                    )));
                }
                Err(e) if !e.is_unit_exists() => return Err(e),
                Err(_) if ignore_exist => return Ok(()),
                Err(e) if !retry => return Err(e),
                Err(_) => {
                    if let Err(e) = self.manager.reset_failed_unit(unit) {
                        tracing::warn!("unable to reset failed unit: {e}");
                    }
                    retry = false;
                }
            }
        }
    }

    /// libcontainer `stopUnit`: stops the unit (mode `replace`) and waits for its job; a
    /// result other than `done` is only logged, a failed call ignored; the unit is then
    /// reset in case it failed. Only a job that does not end within 30 s is an error.
    pub fn stop_unit(&self, unit: &str) -> Result<(), SystemdError> {
        match self.manager.stop_unit(unit, "replace") {
            Ok(result) if result != "done" => {
                tracing::warn!("error removing unit `{unit}`: got `{result}`. Continuing...");
            }
            Ok(_) => {}
            Err(SystemdError::JobTimeout(_)) => {
                return Err(SystemdError::Libcontainer(format!(
                    "Timed out while waiting for systemd to remove {unit}"
                )));
            }
            Err(e) => tracing::debug!(unit, err = %e, "StopUnit failed"),
        }
        let _ = self.manager.reset_failed_unit(unit);
        Ok(())
    }

    /// libcontainer `setUnitProperties` (runtime only, as upstream).
    pub fn set_unit_properties(
        &self,
        unit: &str,
        properties: &[Property],
    ) -> Result<(), SystemdError> {
        self.manager.set_unit_properties(unit, true, properties)
    }

    /// libcontainer `addCPUQuota`: `CPUQuotaPeriodUSec` (systemd ≥ 242) for a period, and
    /// `CPUQuotaPerSecUSec` for a quota or a period — `u64::MAX` (`USEC_INFINITY`) unless
    /// the quota is positive, else quota × 10⁶ / period rounded up to 10 ms, with
    /// `quota` rounded the same way so the cgroupfs file gets the same value.
    pub fn add_cpu_quota(&self, properties: &mut Vec<Property>, quota: &mut i64, period: u64) {
        if period != 0 {
            let version = self.systemd_version();
            if version >= 242 {
                properties.push(prop("CPUQuotaPeriodUSec", PropValue::U64(period)));
            } else {
                tracing::debug!(
                    "systemd v{version} is too old to support CPUQuotaPeriodSec  (setting will still be applied to cgroupfs)"
                );
            }
        }
        if *quota != 0 || period != 0 {
            let mut per_sec = u64::MAX;
            if *quota > 0 {
                let period = if period == 0 {
                    DEF_CPU_QUOTA_PERIOD
                } else {
                    period
                };
                // Go: uint64(*quota*1000000) / period, in 64-bit arithmetic.
                per_sec = (quota.wrapping_mul(1_000_000) as u64) / period;
                if per_sec % 10_000 != 0 {
                    per_sec = (per_sec / 10_000 + 1) * 10_000;
                    *quota = (per_sec as i64).wrapping_mul(period as i64) / 1_000_000;
                }
            }
            properties.push(prop("CPUQuotaPerSecUSec", PropValue::U64(per_sec)));
        }
    }

    /// libcontainer `addCpuset`: `AllowedCPUs`/`AllowedMemoryNodes` (systemd ≥ 244).
    pub fn add_cpuset(
        &self,
        properties: &mut Vec<Property>,
        cpus: &str,
        mems: &str,
    ) -> Result<(), SystemdError> {
        if cpus.is_empty() && mems.is_empty() {
            return Ok(());
        }
        let version = self.systemd_version();
        if version < 244 {
            tracing::debug!(
                "systemd v{version} is too old to support AllowedCPUs/AllowedMemoryNodes (settings will still be applied to cgroupfs)"
            );
            return Ok(());
        }
        if !cpus.is_empty() {
            let bits = range_to_bits(cpus).map_err(|e| {
                SystemdError::Libcontainer(format!(
                    "resources.CPU.Cpus={cpus:?} conversion error: {e}"
                ))
            })?;
            properties.push(prop("AllowedCPUs", PropValue::Bytes(bits)));
        }
        if !mems.is_empty() {
            let bits = range_to_bits(mems).map_err(|e| {
                SystemdError::Libcontainer(format!(
                    "resources.CPU.Mems={mems:?} conversion error: {e}"
                ))
            })?;
            properties.push(prop("AllowedMemoryNodes", PropValue::Bytes(bits)));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn version_atoi_as_libcontainer() {
        for (s, v) in [
            ("v245.4-1.fc32", 245),
            ("245", 245),
            ("v245-1.fc32", 245),
            ("\"245-1.fc32\"", 245),
            ("252.36-1~deb12u1", 252),
        ] {
            assert_eq!(systemd_version_atoi(s).unwrap(), v, "{s}");
        }
        assert!(systemd_version_atoi("x").is_err());
    }

    /// libcontainer's `TestRangeToBits` cases.
    #[test]
    fn range_to_bits_as_libcontainer() {
        let cases: [(&str, &[u8]); 8] = [
            ("0", &[1]),
            ("1", &[2]),
            ("0-1", &[3]),
            ("0,1,2", &[7]),
            ("0-7", &[0xff]),
            ("8", &[0, 1]),
            ("0-3,9", &[0x0f, 0x02]),
            (" 1 ,3-4 ,", &[0x1a]),
        ];
        for (s, want) in cases {
            assert_eq!(range_to_bits(s).unwrap(), want, "{s}");
        }
        for bad in ["", ",", "4-3", "a", "-1"] {
            assert!(range_to_bits(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_quota_per_sec_rounding_and_unlimited() {
        let sd = Systemd::new(Arc::new(FakeSystemdManager::default()));
        let mut p = Vec::new();
        // 0.5 CPU at the default period.
        let mut q = 50_000;
        sd.add_cpu_quota(&mut p, &mut q, 100_000);
        assert_eq!(
            p,
            [
                prop("CPUQuotaPeriodUSec", PropValue::U64(100_000)),
                prop("CPUQuotaPerSecUSec", PropValue::U64(500_000)),
            ]
        );
        assert_eq!(q, 50_000);
        // 1m CPU: 1000 µs per second → rounded up to 10 ms, quota to match.
        let (mut p, mut q) = (Vec::new(), 100);
        sd.add_cpu_quota(&mut p, &mut q, 100_000);
        assert_eq!(
            p[1],
            prop("CPUQuotaPerSecUSec", PropValue::U64(10_000)),
            "{p:?}"
        );
        assert_eq!(q, 1000);
        // -1 (no limit) with a period: USEC_INFINITY.
        let (mut p, mut q) = (Vec::new(), -1);
        sd.add_cpu_quota(&mut p, &mut q, 100_000);
        assert_eq!(p[1], prop("CPUQuotaPerSecUSec", PropValue::U64(u64::MAX)));
        // Neither: nothing.
        let (mut p, mut q) = (Vec::new(), 0);
        sd.add_cpu_quota(&mut p, &mut q, 0);
        assert!(p.is_empty());
        // A quota without a period assumes 100 ms and sends no period.
        let (mut p, mut q) = (Vec::new(), 20_000);
        sd.add_cpu_quota(&mut p, &mut q, 0);
        assert_eq!(p, [prop("CPUQuotaPerSecUSec", PropValue::U64(200_000))]);
    }

    #[test]
    fn old_systemd_gets_no_period_nor_cpuset() {
        let fake = Arc::new(FakeSystemdManager::default());
        fake.set_version("241");
        let sd = Systemd::new(fake);
        let (mut p, mut q) = (Vec::new(), 50_000);
        sd.add_cpu_quota(&mut p, &mut q, 100_000);
        assert_eq!(p, [prop("CPUQuotaPerSecUSec", PropValue::U64(500_000))]);
        let mut p = Vec::new();
        sd.add_cpuset(&mut p, "0-3", "").unwrap();
        assert!(p.is_empty());
        let sd = Systemd::new(Arc::new(FakeSystemdManager::default()));
        sd.add_cpuset(&mut p, "0-3", "0").unwrap();
        assert_eq!(
            p,
            [
                prop("AllowedCPUs", PropValue::Bytes(vec![0x0f])),
                prop("AllowedMemoryNodes", PropValue::Bytes(vec![1])),
            ]
        );
    }

    #[test]
    fn start_unit_ignores_an_existing_slice_and_retries_a_failed_one_once() {
        let fake = Arc::new(FakeSystemdManager::default());
        let sd = Systemd::new(fake.clone());
        sd.start_unit("a.slice", &[], true).unwrap();
        sd.start_unit("a.slice", &[], true).unwrap();
        assert_eq!(fake.calls().len(), 2);
        fake.clear_calls();
        // Not ignored: reset, retried once, then the UnitExists error.
        let err = sd.start_unit("a.slice", &[], false).unwrap_err();
        assert!(err.is_unit_exists(), "{err}");
        let kinds: Vec<String> = fake
            .calls()
            .iter()
            .map(|c| format!("{c:?}").split(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "StartTransientUnit",
                "ResetFailedUnit",
                "StartTransientUnit"
            ]
        );
        // A job that fails: reset and upstream's message.
        fake.clear_calls();
        fake.set_job_result("failed");
        let err = sd.start_unit("b.slice", &[], true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error creating systemd unit `b.slice`: got `failed`"
        );
        assert_eq!(
            fake.calls().last(),
            Some(&SystemdCall::ResetFailedUnit {
                name: "b.slice".into()
            })
        );
        // Stopping: a failed job is only logged; the unit is reset.
        fake.clear_calls();
        sd.stop_unit("b.slice").unwrap();
        assert_eq!(
            fake.calls(),
            [
                SystemdCall::StopUnit {
                    name: "b.slice".into(),
                    mode: "replace".into()
                },
                SystemdCall::ResetFailedUnit {
                    name: "b.slice".into()
                }
            ]
        );
    }
}
