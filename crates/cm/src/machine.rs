//! Machine information (what cAdvisor's `MachineInfo` gives the kubelet): CPUs,
//! memory, machine/boot/system IDs, kernel and OS. Read from `/proc` and `/sys`.

use std::path::Path;

use kubelet_apimachinery::CpuSet;

use crate::CmError;
use crate::hostfs::HostFs;

/// The machine facts the kubelet uses for node capacity and nodeInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineInfo {
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub online_cpus: CpuSet,
    /// Total memory in bytes (`MemTotal` of `/proc/meminfo`).
    pub memory_capacity: u64,
    /// The first of [`MACHINE_ID_FILES`], empty when none is readable.
    pub machine_id: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// The first of [`SYSTEM_UUID_FILES`], empty when none is readable.
    pub system_uuid: String,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel_version: String,
    /// `PRETTY_NAME` of `/etc/os-release`.
    pub os_image: String,
}

impl MachineInfo {
    /// Number of online CPUs.
    pub fn num_cores(&self) -> usize {
        self.online_cpus.len()
    }
}

fn read(fs: &dyn HostFs, path: &str) -> Result<String, CmError> {
    fs.read_to_string(Path::new(path))
        .map(|s| s.trim().to_string())
        .map_err(|source| CmError::Read {
            path: path.to_string(),
            source,
        })
}

/// Where cAdvisor looks for the machine ID (its `--machine-id-file` default).
pub const MACHINE_ID_FILES: &[&str] = &["/etc/machine-id", "/var/lib/dbus/machine-id"];

/// Where cAdvisor's `GetSystemUUID` looks for the system UUID, in order: DMI, the
/// device tree's `system-id` and `vm,uuid` (POWER), then `/etc/machine-id` (its s390x
/// fallback, which is also what a VM without DMI reports, on any architecture).
pub const SYSTEM_UUID_FILES: &[&str] = &[
    "/sys/class/dmi/id/product_uuid",
    "/proc/device-tree/system-id",
    "/proc/device-tree/vm,uuid",
    "/etc/machine-id",
];

/// The trimmed content of the first readable file of `paths` (trailing NULs of device-tree
/// files dropped), empty when none is readable: cAdvisor's `getInfoFromFiles`.
pub fn read_first(fs: &dyn HostFs, paths: &[&str]) -> String {
    paths
        .iter()
        .find_map(|p| fs.read_to_string(Path::new(p)).ok())
        .map(|s| s.trim_end_matches('\0').trim().to_string())
        .unwrap_or_default()
}

/// Parses `MemTotal:  24576000 kB` out of `/proc/meminfo`.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line.split_whitespace().skip(1);
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// Where cAdvisor's `getOperatingSystem` reads the OS: `/etc/os-release`, else
/// `/usr/lib/os-release` (stateless systems).
pub const OS_RELEASE_FILES: &[&str] = &["/etc/os-release", "/usr/lib/os-release"];

/// `PRETTY_NAME` of an os-release file, `Linux` without one (cAdvisor's
/// `ContainerOsVersion`, the node's `osImage`).
pub fn os_pretty_name(os_release: &str) -> String {
    os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .unwrap_or_else(|| "Linux".to_string())
}

/// Reads the machine information from the host.
pub fn read_machine_info(fs: &dyn HostFs) -> Result<MachineInfo, CmError> {
    let online = read(fs, "/sys/devices/system/cpu/online")?;
    let online_cpus = CpuSet::parse(&online).map_err(|e| CmError::Parse {
        path: "/sys/devices/system/cpu/online".into(),
        reason: e.to_string(),
    })?;
    let meminfo = read(fs, "/proc/meminfo")?;
    let memory_capacity = mem_total(&meminfo).ok_or_else(|| CmError::Parse {
        path: "/proc/meminfo".into(),
        reason: "no MemTotal line".into(),
    })?;
    Ok(MachineInfo {
        online_cpus,
        memory_capacity,
        machine_id: read_first(fs, MACHINE_ID_FILES),
        boot_id: read_first(fs, &["/proc/sys/kernel/random/boot_id"]),
        system_uuid: read_first(fs, SYSTEM_UUID_FILES),
        kernel_version: read_first(fs, &["/proc/sys/kernel/osrelease"]),
        os_image: os_pretty_name(&read_first(fs, OS_RELEASE_FILES)),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::{FakeHostFs, RealHostFs};

    #[test]
    fn reads_fake_machine() {
        let fs = FakeHostFs::default();
        fs.add_file("/sys/devices/system/cpu/online", "0-1\n");
        fs.add_file(
            "/proc/meminfo",
            "MemTotal:       24576000 kB\nMemFree: 1 kB\n",
        );
        fs.add_file(
            "/etc/os-release",
            "NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
        );
        fs.add_file("/proc/sys/kernel/osrelease", "6.1.0\n");
        let m = read_machine_info(&fs).unwrap();
        assert_eq!(m.num_cores(), 2);
        assert_eq!(m.memory_capacity, 24576000 * 1024);
        assert_eq!(m.os_image, "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(m.kernel_version, "6.1.0");
        assert_eq!(m.machine_id, "");
        assert_eq!(m.system_uuid, "");
        // Without DMI, the system UUID is the machine ID, as cAdvisor's fallback gives it.
        fs.add_file("/etc/machine-id", "m1\n");
        let m = read_machine_info(&fs).unwrap();
        assert_eq!(
            (m.machine_id.as_str(), m.system_uuid.as_str()),
            ("m1", "m1")
        );
        fs.add_file("/proc/device-tree/vm,uuid", "vm-uuid\0");
        assert_eq!(read_machine_info(&fs).unwrap().system_uuid, "vm-uuid");
        fs.add_file("/sys/class/dmi/id/product_uuid", "DMI-UUID\n");
        assert_eq!(read_machine_info(&fs).unwrap().system_uuid, "DMI-UUID");
    }

    #[test]
    fn missing_cpu_file_names_path() {
        let fs = FakeHostFs::default();
        let err = read_machine_info(&fs).unwrap_err();
        assert!(
            err.to_string().contains("/sys/devices/system/cpu/online"),
            "{err}"
        );
    }

    #[test]
    fn bad_meminfo_is_an_error() {
        assert_eq!(mem_total("MemTotal: 10 MB"), None);
        assert_eq!(mem_total("MemFree: 10 kB"), None);
        assert_eq!(mem_total("MemTotal: 10 kB"), Some(10240));
    }

    #[test]
    fn reads_this_machine() {
        let m = read_machine_info(&RealHostFs).unwrap();
        assert!(m.num_cores() >= 1);
        assert!(m.memory_capacity > 0);
    }
}
