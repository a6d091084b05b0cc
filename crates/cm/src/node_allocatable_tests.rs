#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use kubelet_apimachinery::CpuSet;

use super::*;
use crate::cgroups::{CGROUP2_SUPER_MAGIC, CgroupDriver, CgroupVersion};
use crate::hostfs::FakeHostFs;
use crate::machine::MachineInfo;
use crate::node_config::NodeConfigInput;

fn machine() -> MachineInfo {
    MachineInfo {
        online_cpus: CpuSet::parse("0-3").unwrap(),
        memory_capacity: 8 << 30,
        machine_id: String::new(),
        boot_id: String::new(),
        system_uuid: String::new(),
        kernel_version: String::new(),
        os_image: String::new(),
    }
}

fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn node_config(sys: &[(&str, &str)], kube: &[(&str, &str)], enforce: &[&str]) -> NodeConfig {
    let (sys, kube, e) = (map(sys), map(kube), BTreeMap::new());
    let enforce: Vec<String> = enforce.iter().map(|s| s.to_string()).collect();
    NodeConfig::parse(
        NodeConfigInput {
            reserved_system_cpus: "",
            kube_reserved: &kube,
            system_reserved: &sys,
            eviction_hard: &e,
            ignore_eviction_for_allocatable: false,
            qos_reserved: &e,
            enforce_node_allocatable: &enforce,
        },
        &machine(),
    )
    .unwrap()
}

const V1_MOUNTED: [&str; 7] = [
    "cpu", "cpuacct", "cpuset", "memory", "pids", "systemd", "blkio",
];

/// A v1 host with the usual hierarchies mounted and `cgroups` existing in each.
fn v1_host(cgroups: &[&str]) -> Arc<FakeHostFs> {
    let fs = Arc::new(FakeHostFs::default());
    for ctrl in V1_MOUNTED {
        fs.set_fs_type(format!("/sys/fs/cgroup/{ctrl}"), 0);
        for c in cgroups {
            fs.add_dir(format!("/sys/fs/cgroup/{ctrl}/{c}"));
        }
    }
    fs
}

fn writes_under(fs: &FakeHostFs, dir: &str) -> Vec<(String, String)> {
    fs.writes()
        .into_iter()
        .filter(|(p, _)| p.starts_with(dir))
        .map(|(p, v)| (p.display().to_string(), v))
        .collect()
}

fn w(path: &str, value: &str) -> (String, String) {
    (path.to_string(), value.to_string())
}

const RESERVED: ReservedCgroups<'static> = ReservedCgroups {
    system_reserved_cgroup: "/system-reserved.slice",
    kube_reserved_cgroup: "/kube-reserved.slice",
    all_cpus: "0-3",
    memory_qos: false,
};

#[test]
fn cgroup_config_internal_sets_shares_memory_and_pids_or_only_shares() {
    let nc = node_config(
        &[("cpu", "500m"), ("memory", "1Gi"), ("pid", "1000")],
        &[],
        &[],
    );
    let rc = cgroup_config_internal(&nc.system_reserved, false);
    assert_eq!(rc.cpu_shares, Some(512));
    assert_eq!(rc.memory, Some(1 << 30));
    assert_eq!(rc.pids_limit, Some(1000));
    assert!(rc.huge_page_limit.is_empty());
    let rc = cgroup_config_internal(&nc.system_reserved, true);
    assert_eq!(rc.cpu_shares, Some(512));
    assert_eq!(rc.memory, None);
    assert_eq!(rc.pids_limit, None);
    // Nothing reserved: nothing set (an unreserved cgroup keeps its values).
    assert_eq!(
        cgroup_config_internal(&BTreeMap::new(), false),
        ResourceConfig::default()
    );
}

/// `enforceNodeAllocatable: [pods, system-reserved, kube-reserved]` on cgroup v1: each
/// reserved cgroup gets its reservation as limits (cpuset, memory, cpu shares, pids, in
/// libcontainer's order), with a Normal event each.
#[test]
fn v1_system_and_kube_reserved_limit_their_existing_cgroups() {
    let fs = v1_host(&["system-reserved.slice", "kube-reserved.slice"]);
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
    let nc = node_config(
        &[("cpu", "500m"), ("memory", "1Gi"), ("pid", "1000")],
        &[
            ("cpu", "1"),
            ("memory", "512Mi"),
            ("ephemeral-storage", "1Gi"),
        ],
        &["pods", "system-reserved", "kube-reserved"],
    );
    let (events, result) = enforce_reserved_cgroups(&cgroups, &nc, RESERVED);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            EnforcementEvent::Enforced(
                "Updated limits on system reserved cgroup /system-reserved.slice".into()
            ),
            EnforcementEvent::Enforced(
                "Updated limits on kube reserved cgroup /kube-reserved.slice".into()
            ),
        ]
    );
    let sys: Vec<_> = fs
        .writes()
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("/system-reserved.slice/"))
        .map(|(p, v)| (p.display().to_string(), v))
        .collect();
    assert_eq!(
        sys,
        vec![
            w(
                "/sys/fs/cgroup/cpuset/system-reserved.slice/cpuset.cpus",
                "0-3"
            ),
            w(
                "/sys/fs/cgroup/memory/system-reserved.slice/memory.limit_in_bytes",
                "1073741824"
            ),
            w("/sys/fs/cgroup/cpu/system-reserved.slice/cpu.shares", "512"),
            w("/sys/fs/cgroup/pids/system-reserved.slice/pids.max", "1000"),
        ]
    );
    let kube: Vec<_> = fs
        .writes()
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("/kube-reserved.slice/"))
        .map(|(p, v)| (p.display().to_string(), v))
        .collect();
    // No pid reservation: pids.max is left alone.
    assert_eq!(
        kube,
        vec![
            w(
                "/sys/fs/cgroup/cpuset/kube-reserved.slice/cpuset.cpus",
                "0-3"
            ),
            w(
                "/sys/fs/cgroup/memory/kube-reserved.slice/memory.limit_in_bytes",
                "536870912"
            ),
            w("/sys/fs/cgroup/cpu/kube-reserved.slice/cpu.shares", "1024"),
        ]
    );
}

/// The `-compressible` forms set CPU only.
#[test]
fn compressible_enforcement_sets_only_cpu() {
    let fs = v1_host(&["system-reserved.slice", "kube-reserved.slice"]);
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
    let nc = node_config(
        &[("cpu", "250m"), ("memory", "1Gi"), ("pid", "1000")],
        &[("cpu", "100m"), ("memory", "1Gi")],
        &["system-reserved-compressible", "kube-reserved-compressible"],
    );
    let (events, result) = enforce_reserved_cgroups(&cgroups, &nc, RESERVED);
    result.unwrap();
    assert_eq!(events.len(), 2);
    let writes: Vec<_> = fs
        .writes()
        .into_iter()
        .map(|(p, v)| (p.display().to_string(), v))
        .filter(|(p, _)| !p.ends_with("cpuset.cpus"))
        .collect();
    assert_eq!(
        writes,
        vec![
            w("/sys/fs/cgroup/cpu/system-reserved.slice/cpu.shares", "256"),
            w("/sys/fs/cgroup/cpu/kube-reserved.slice/cpu.shares", "102"),
        ]
    );
}

/// A missing reserved cgroup: upstream's `Validate` message inside its enforcement
/// message, as a Warning event and the error; nothing is written and what follows is
/// not tried.
#[test]
fn missing_reserved_cgroup_fails_with_upstream_message_and_warning_event() {
    // Exists everywhere but in the systemd hierarchy and pids.
    let fs = Arc::new(FakeHostFs::default());
    for ctrl in V1_MOUNTED {
        fs.set_fs_type(format!("/sys/fs/cgroup/{ctrl}"), 0);
        if ctrl != "systemd" && ctrl != "pids" {
            fs.add_dir(format!("/sys/fs/cgroup/{ctrl}/system-reserved.slice"));
        }
    }
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
    let nc = node_config(
        &[("memory", "1Gi")],
        &[("memory", "1Gi")],
        &["system-reserved", "kube-reserved"],
    );
    let (events, result) = enforce_reserved_cgroups(&cgroups, &nc, RESERVED);
    let want = "Failed to enforce System Reserved Cgroup Limits on \"/system-reserved.slice\": \
                cgroup [\"system-reserved.slice\"] has some missing paths: \
                /sys/fs/cgroup/pids/system-reserved.slice, /sys/fs/cgroup/systemd/system-reserved.slice";
    assert_eq!(result.unwrap_err().to_string(), want);
    assert_eq!(events, vec![EnforcementEvent::Failed(want.into())]);
    assert!(fs.writes().is_empty(), "{:?}", fs.writes());
}

/// Nothing but `pods` enforced: the reserved cgroups are not touched (not even checked).
#[test]
fn pods_only_touches_no_reserved_cgroup() {
    let fs = Arc::new(FakeHostFs::default());
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
    let nc = node_config(&[("memory", "1Gi")], &[], &["pods"]);
    let (events, result) = enforce_reserved_cgroups(&cgroups, &nc, RESERVED);
    result.unwrap();
    assert!(events.is_empty());
    assert!(fs.writes().is_empty());
}

/// cgroup v2: the cgroup's `cgroup.controllers` must list the root's kubelet controllers;
/// the reservation goes to `memory.max`, `cpu.weight`, `pids.max`, `cpuset.cpus`.
#[test]
fn v2_reserved_cgroup_is_validated_by_controllers_and_limited() {
    let fs = Arc::new(FakeHostFs::default());
    fs.set_fs_type("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC);
    fs.add_file(
        "/sys/fs/cgroup/cgroup.controllers",
        "cpuset cpu io memory pids\n",
    );
    fs.add_file(
        "/sys/fs/cgroup/system.slice/cgroup.controllers",
        "cpuset cpu io memory pids\n",
    );
    fs.add_file("/sys/fs/cgroup/kube.slice/cgroup.controllers", "cpu io\n");
    let (fake, sd) = crate::systemd_cgroups::test_systemd();
    let cgroups =
        CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Systemd).with_systemd(sd);
    let reserved = ReservedCgroups {
        system_reserved_cgroup: "/system.slice",
        kube_reserved_cgroup: "/kube.slice",
        all_cpus: "0-3",
        memory_qos: false,
    };
    let nc = node_config(
        &[("cpu", "1"), ("memory", "2Gi"), ("pid", "500")],
        &[("cpu", "1")],
        &["pods", "system-reserved", "kube-reserved-compressible"],
    );
    let (events, result) = enforce_reserved_cgroups(&cgroups, &nc, reserved);
    assert_eq!(
        writes_under(&fs, "/sys/fs/cgroup/system.slice"),
        vec![
            w("/sys/fs/cgroup/system.slice/pids.max", "500"),
            w("/sys/fs/cgroup/system.slice/memory.max", "2147483648"),
            w("/sys/fs/cgroup/system.slice/cpu.weight", "39"),
            w("/sys/fs/cgroup/system.slice/cpuset.cpus", "0-3"),
        ]
    );
    let want = "Failed to enforce Kube Reserved Compressible Cgroup Limits on \"/kube.slice\": \
                cgroup [\"kube\"] has some missing controllers: cpuset, memory, pids";
    assert_eq!(result.unwrap_err().to_string(), want);
    assert_eq!(
        events,
        vec![
            EnforcementEvent::Enforced(
                "Updated limits on system reserved cgroup /system.slice".into()
            ),
            EnforcementEvent::Failed(want.into()),
        ]
    );
    assert!(writes_under(&fs, "/sys/fs/cgroup/kube.slice").is_empty());
    // The unit's properties before the files; none for the cgroup that failed `Validate`.
    use kubelet_systemd::{PropValue::*, SystemdCall, prop};
    assert_eq!(
        fake.calls(),
        [SystemdCall::SetUnitProperties {
            name: "system.slice".into(),
            runtime: true,
            properties: vec![
                prop("MemoryMax", U64(2 << 30)),
                prop("CPUWeight", U64(39)),
                prop("TasksMax", U64(500)),
                prop("AllowedCPUs", Bytes(vec![0x0f])),
            ],
        }]
    );
}

/// MemoryQoS: the reserved memory is also the cgroup's `memory.min` on v2; on v1 upstream's
/// update fails (libcontainer refuses unified files), and so does the start.
#[test]
fn memory_qos_sets_memory_min_of_reserved_cgroups() {
    let fs = Arc::new(FakeHostFs::default());
    fs.add_file(
        "/sys/fs/cgroup/cgroup.controllers",
        "cpu memory pids
",
    );
    fs.add_file(
        "/sys/fs/cgroup/system.slice/cgroup.controllers",
        "cpu memory pids
",
    );
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Cgroupfs);
    let nc = node_config(&[("memory", "1Gi")], &[], &["system-reserved"]);
    let reserved = ReservedCgroups {
        system_reserved_cgroup: "/system.slice",
        kube_reserved_cgroup: "",
        all_cpus: "",
        memory_qos: true,
    };
    let (_, result) = enforce_reserved_cgroups(&cgroups, &nc, reserved);
    result.unwrap();
    assert_eq!(
        writes_under(&fs, "/sys/fs/cgroup/system.slice"),
        vec![
            w("/sys/fs/cgroup/system.slice/memory.max", "1073741824"),
            w("/sys/fs/cgroup/system.slice/memory.min", "1073741824"),
        ]
    );
    let fs = v1_host(&["system.slice"]);
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Cgroupfs);
    let (_, result) = enforce_reserved_cgroups(&cgroups, &nc, reserved);
    let err = result.unwrap_err().to_string();
    assert!(err.contains("cannot use unified on cgroup v1"), "{err}");
}

/// cgroup v2 with a cgroup that does not exist: upstream's "could not read controllers".
#[test]
fn v2_missing_cgroup_cannot_read_controllers() {
    let fs = Arc::new(FakeHostFs::default());
    fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V2, CgroupDriver::Cgroupfs);
    let err = cgroups
        .validate(&cgroups.cgroup_name("/absent"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "could not read controllers for cgroup [\"absent\"]: open /sys/fs/cgroup/absent/cgroup.controllers: "
        ),
        "{err}"
    );
}

/// The systemd driver names the reserved cgroup as a slice (`/system.slice` →
/// `["system"]`), rendered back the same way for the files.
#[test]
fn systemd_driver_resolves_slice_names() {
    let fs = v1_host(&["system.slice"]);
    let (fake, sd) = crate::systemd_cgroups::test_systemd();
    let cgroups =
        CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Systemd).with_systemd(sd);
    let nc = node_config(&[("memory", "1Gi")], &[], &["system-reserved"]);
    let reserved = ReservedCgroups {
        system_reserved_cgroup: "/system.slice",
        kube_reserved_cgroup: "",
        all_cpus: "",
        memory_qos: false,
    };
    let (_, result) = enforce_reserved_cgroups(&cgroups, &nc, reserved);
    result.unwrap();
    assert_eq!(
        fs.writes(),
        vec![(
            PathBuf::from("/sys/fs/cgroup/memory/system.slice/memory.limit_in_bytes"),
            "1073741824".to_string()
        )]
    );
    assert_eq!(
        fake.calls(),
        [kubelet_systemd::SystemdCall::SetUnitProperties {
            name: "system.slice".into(),
            runtime: true,
            properties: vec![kubelet_systemd::prop(
                "MemoryLimit",
                kubelet_systemd::PropValue::U64(1 << 30)
            )],
        }]
    );
    // Without a connection to systemd the systemd driver changes nothing.
    let cgroups = CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Systemd);
    let (_, result) = enforce_reserved_cgroups(&cgroups, &nc, reserved);
    assert!(
        result
            .unwrap_err()
            .to_string()
            .contains("the systemd cgroup driver has no connection to systemd")
    );
}

#[test]
fn pid_capacity_is_the_smaller_kernel_limit_and_reservations_come_off_it() {
    let fs = FakeHostFs::default();
    assert_eq!(pid_capacity(&fs), None);
    fs.add_file("/proc/sys/kernel/pid_max", "32768\n");
    assert_eq!(pid_capacity(&fs), Some(32768));
    fs.add_file("/proc/sys/kernel/threads-max", "15000\n");
    assert_eq!(pid_capacity(&fs), Some(15000));
    let nc = node_config(&[("pid", "1000")], &[("pid", "500")], &["pods"]);
    assert_eq!(nc.pods_pids_limit(Some(15000)), Some(13500));
    assert_eq!(nc.pods_pids_limit(Some(1200)), Some(0));
    assert_eq!(nc.pods_pids_limit(None), None);
    let nc = node_config(&[], &[], &["pods"]);
    assert_eq!(nc.pods_pids_limit(Some(15000)), Some(15000));
}

/// `kubepods` is limited either way: to node allocatable with `pods` enforced, to the
/// machine's capacity without (upstream `enforceNodeAllocatableCgroups`).
#[test]
fn kubepods_limits_are_allocatable_with_pods_and_capacity_without() {
    let reserved = [("cpu", "1"), ("memory", "1Gi"), ("pid", "1000")];
    let with = node_config(&reserved, &[], &["pods"]);
    assert_eq!(
        with.kubepods_limits(&machine(), Some(32768)),
        KubepodsLimits {
            cpu_memory: (3000, 7 << 30),
            pids: Some(31768),
        }
    );
    let without = node_config(&reserved, &[], &[]);
    assert_eq!(
        without.kubepods_limits(&machine(), Some(32768)),
        KubepodsLimits {
            cpu_memory: (4000, 8 << 30),
            pids: Some(32768),
        }
    );
    assert_eq!(without.kubepods_limits(&machine(), None).pids, None);
}
