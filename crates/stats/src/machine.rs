//! The machine facts of `/metrics/cadvisor`'s machine collector and version info
//! (cAdvisor v0.53.0 `machine/info.go` `Info`, `machine/machine.go` `GetPhysicalCores`,
//! `GetSockets`, `GetMachineSwapCapacity`, `utils/sysinfo` `GetNodesInfo`,
//! `utils/sysfs` `GetSystemUUID`, `metrics/prometheus_machine.go`), read once through
//! [`HostFs`] (they do not change while the kubelet runs; cAdvisor reads them at start).
//!
//! * logical cores: the `cpu<N>` entries of each NUMA node
//!   (`/sys/devices/system/node/node*/`) that are online (`/sys/devices/system/cpu/online`)
//!   and have a `topology/core_id` and `topology/physical_package_id`; without NUMA nodes,
//!   every `/sys/devices/system/cpu/cpu<N>` (`getCPUTopology`);
//! * physical cores and sockets: the distinct `core id` / `physical id` lines of
//!   `/proc/cpuinfo`, else the distinct `topology/core_id` / `physical_package_id` of the CPUs;
//! * `SwapTotal` of `/proc/meminfo`;
//! * the labels: `machine_id` (first of `/etc/machine-id`, `/var/lib/dbus/machine-id`),
//!   `boot_id` (`/proc/sys/kernel/random/boot_id`), `system_uuid`
//!   (`/sys/class/dmi/id/product_uuid`, the device-tree `system-id` and `vm,uuid`, then
//!   `/etc/machine-id` — cAdvisor's s390x fallback, which is what a VM without DMI reports);
//! * `cadvisor_version_info`: the kernel release (`/proc/sys/kernel/osrelease`) and
//!   `PRETTY_NAME` of `/etc/os-release` (`/usr/lib/os-release`; `Linux` without one);
//!   the docker, cAdvisor version and revision labels are empty, as in upstream's kubelet
//!   (no docker; the vendored cAdvisor's version variables are not set by its build).
//!
//! NVM (`machine_nvm_capacity`, `machine_nvm_avg_power_budget_watts`) is 0: upstream's
//! kubelet is built without `libipmctl`, whose absence makes cAdvisor's `nvm.GetInfo` return
//! zeros on every machine.

use std::collections::BTreeSet;
use std::path::Path;

use kubelet_cm::HostFs;
use kubelet_cm::machine::{
    MACHINE_ID_FILES, OS_RELEASE_FILES, SYSTEM_UUID_FILES, os_pretty_name, read_first,
};

/// What the machine collector reports beyond the memory (read once, at the first scrape).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineFacts {
    /// `NumCores`: logical CPUs.
    pub cores: u64,
    /// `NumPhysicalCores`.
    pub physical_cores: u64,
    /// `NumSockets`.
    pub sockets: u64,
    /// `SwapCapacity` in bytes.
    pub swap: u64,
    /// `MachineID`.
    pub machine_id: String,
    /// `BootID`.
    pub boot_id: String,
    /// `SystemUUID`.
    pub system_uuid: String,
    /// `KernelVersion`.
    pub kernel_version: String,
    /// `ContainerOsVersion`.
    pub os_version: String,
}

/// The CPU number of a `cpu<N>` directory name.
fn cpu_number(name: &str) -> Option<u32> {
    name.strip_prefix("cpu")?.parse().ok()
}

/// Whether CPU `n` is in a kernel CPU list (`0-3,5`).
fn in_cpu_list(list: &str, n: u32) -> bool {
    list.trim().split(',').any(|r| match r.split_once('-') {
        Some((a, b)) => {
            a.parse().is_ok_and(|a: u32| a <= n) && b.parse().is_ok_and(|b: u32| n <= b)
        }
        None => r.parse() == Ok(n),
    })
}

/// The distinct matches of `^<key>\s*:\s*[0-9]+$` lines (`getUniqueMatchesCount`).
fn distinct_lines(cpuinfo: &str, key: &str) -> u64 {
    cpuinfo
        .lines()
        .filter(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.trim_start().strip_prefix(':'))
                .is_some_and(|v| {
                    let v = v.trim_start();
                    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
                })
        })
        .collect::<BTreeSet<_>>()
        .len() as u64
}

/// Reads the facts.
pub fn read_machine_facts(host: &dyn HostFs) -> MachineFacts {
    const CPUS: &str = "/sys/devices/system/cpu";
    const NODES: &str = "/sys/devices/system/node";
    let cpu_dirs = |dir: &str| -> Vec<(String, u32)> {
        host.read_dir(Path::new(dir))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| cpu_number(&n).map(|c| (format!("{dir}/{n}"), c)))
            .collect()
    };
    let topology = |cpu: &str, file: &str| {
        host.read_to_string(Path::new(&format!("{cpu}/topology/{file}")))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let nodes: Vec<String> = host
        .read_dir(Path::new(NODES))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| {
            n.strip_prefix("node")
                .is_some_and(|i| i.parse::<u32>().is_ok())
        })
        .collect();
    let cores = if nodes.is_empty() {
        cpu_dirs(CPUS).len() as u64
    } else {
        // `IsCPUOnline`: all online without the `online` list (no CPU hotplug). A node's
        // `cpu<N>` entries are symlinks to the CPU directories (which `HostFs::read_dir`
        // does not list): the CPUs whose entry exists under the node.
        let online = host
            .read_to_string(Path::new(&format!("{CPUS}/online")))
            .ok();
        let cpus = cpu_dirs(CPUS);
        nodes
            .iter()
            .flat_map(|node| {
                cpus.iter()
                    .filter(move |(_, n)| host.exists(Path::new(&format!("{NODES}/{node}/cpu{n}"))))
            })
            .filter(|(dir, n)| {
                online.as_deref().is_none_or(|l| in_cpu_list(l, *n))
                    && topology(dir, "core_id").is_some()
                    && topology(dir, "physical_package_id").is_some()
            })
            .count() as u64
    };
    let cpuinfo = host
        .read_to_string(Path::new("/proc/cpuinfo"))
        .unwrap_or_default();
    let distinct_topology = |file: &str| {
        cpu_dirs(CPUS)
            .iter()
            .filter_map(|(dir, _)| topology(dir, file))
            .collect::<BTreeSet<_>>()
            .len() as u64
    };
    let or_topology = |n: u64, file: &str| if n == 0 { distinct_topology(file) } else { n };
    let swap = host
        .read_to_string(Path::new("/proc/meminfo"))
        .ok()
        .and_then(|m| crate::cgroup::parse_meminfo(&m).get("SwapTotal").copied())
        .unwrap_or(0);
    let machine_id = read_first(host, MACHINE_ID_FILES);
    let system_uuid = read_first(host, SYSTEM_UUID_FILES);
    MachineFacts {
        cores,
        physical_cores: or_topology(distinct_lines(&cpuinfo, "core id"), "core_id"),
        sockets: or_topology(
            distinct_lines(&cpuinfo, "physical id"),
            "physical_package_id",
        ),
        swap,
        machine_id,
        boot_id: read_first(host, &["/proc/sys/kernel/random/boot_id"]),
        system_uuid,
        kernel_version: read_first(host, &["/proc/sys/kernel/osrelease"]),
        os_version: os_pretty_name(&read_first(host, OS_RELEASE_FILES)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_cm::FakeHostFs;

    fn add_cpu(fs: &FakeHostFs, base: &str, n: u32, core: u32, package: u32) {
        fs.add_dir(format!("{base}/cpu{n}"));
        fs.add_file(
            format!("{base}/cpu{n}/topology/core_id"),
            format!("{core}\n"),
        );
        fs.add_file(
            format!("{base}/cpu{n}/topology/physical_package_id"),
            format!("{package}\n"),
        );
    }

    #[test]
    fn numa_cpus_cpuinfo_ids_and_the_machine_id_fallback_for_the_uuid() {
        let fs = FakeHostFs::default();
        for n in 0..4 {
            add_cpu(&fs, "/sys/devices/system/cpu", n, n % 2, n / 2);
            add_cpu(&fs, "/sys/devices/system/node/node0", n, n % 2, n / 2);
        }
        fs.add_dir("/sys/devices/system/cpu/cpufreq");
        fs.add_file("/sys/devices/system/cpu/online", "0-2\n");
        fs.add_file(
            "/proc/cpuinfo",
            "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\nprocessor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n",
        );
        fs.add_file("/proc/meminfo", "MemTotal: 100 kB\nSwapTotal: 2048 kB\n");
        fs.add_file("/etc/machine-id", "abc\n");
        fs.add_file("/proc/sys/kernel/random/boot_id", "boot-1\n");
        fs.add_file("/proc/sys/kernel/osrelease", "6.1.0\n");
        fs.add_file(
            "/etc/os-release",
            "NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
        );
        let m = read_machine_facts(&fs);
        assert_eq!(
            m,
            MachineFacts {
                cores: 3,
                physical_cores: 2,
                sockets: 2,
                swap: 2048 * 1024,
                machine_id: "abc".into(),
                boot_id: "boot-1".into(),
                system_uuid: "abc".into(),
                kernel_version: "6.1.0".into(),
                os_version: "Debian GNU/Linux 12 (bookworm)".into(),
            }
        );
    }

    #[test]
    fn without_numa_nodes_or_cpuinfo_ids_sysfs_topology_counts() {
        let fs = FakeHostFs::default();
        for n in 0..4 {
            add_cpu(&fs, "/sys/devices/system/cpu", n, n % 2, 0);
        }
        fs.add_file("/sys/class/dmi/id/product_uuid", "UUID-1\n");
        fs.add_file("/etc/machine-id", "abc\n");
        let m = read_machine_facts(&fs);
        assert_eq!((m.cores, m.physical_cores, m.sockets), (4, 2, 1));
        assert_eq!(m.system_uuid, "UUID-1");
        assert_eq!(m.os_version, "Linux");
    }
}
