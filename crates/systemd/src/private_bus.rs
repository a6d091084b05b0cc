//! A private D-Bus for tests on a real bus: [`PrivateBus`] runs `dbus-daemon` on a unix
//! socket in a temporary directory. The fake systemd manager of this crate
//! (`fake_systemd`) and `kubelet-nodeshutdown`'s fake logind serve on it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `dbus-daemon` of our own (session-style configuration, unix socket in a temporary
/// directory, any name may be owned); killed on drop.
pub struct PrivateBus {
    child: Child,
    /// The bus address (`unix:path=…,guid=…`).
    pub address: String,
    /// The socket.
    pub socket: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for PrivateBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateBus")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl PrivateBus {
    /// Starts `/usr/bin/dbus-daemon` and reads the address it prints.
    pub fn start() -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut bus = Self::start_in(dir.path())?;
        bus._dir = Some(dir);
        Ok(bus)
    }

    /// A bus on `<dir>/bus` (a stale socket there is removed first), so a test can
    /// restart the bus at the same address.
    pub fn start_in(dir: &Path) -> std::io::Result<Self> {
        let socket = dir.join("bus");
        let _ = std::fs::remove_file(&socket);
        let config = dir.join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <allow user="*"/>
  </policy>
</busconfig>
"#,
                socket.display()
            ),
        )?;
        let mut child = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .arg("--nofork")
            .arg("--print-address")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        let read = match child.stdout.take() {
            Some(out) => BufReader::new(out).read_line(&mut line),
            None => Ok(0),
        };
        if read.is_err() || line.trim().is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("dbus-daemon printed no address"));
        }
        Ok(Self {
            child,
            address: line.trim().to_string(),
            socket,
            _dir: None,
        })
    }
}

impl PrivateBus {
    /// The address without the daemon's GUID (as `DBUS_SYSTEM_BUS_ADDRESS` usually is):
    /// valid across restarts.
    pub fn socket_address(&self) -> String {
        format!("unix:path={}", self.socket.display())
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
