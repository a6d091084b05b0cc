//! The systemd driver's D-Bus calls and property values, against libcontainer's rules
//! (`genV1ResourcesProperties`, `genV2ResourcesProperties`, `Apply`, `Destroy`).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use kubelet_systemd::PropValue::{Bool, Bytes, Str, StrList, U64};
use kubelet_systemd::{Property, SystemdCall, prop};

use super::*;
use crate::cgroup_manager::CgroupManager;
use crate::cgroups::{CgroupDriver, node_allocatable_root};
use crate::hostfs::{FakeHostFs, HostFs};
use crate::pod_container_manager::{FakeProcessKiller, PodContainerManager};
use crate::qos::{QosCgroups, setup_qos_cgroups_with_manager};

fn pod() -> CgroupName {
    node_allocatable_root("/", true)
        .child("burstable")
        .child("pod1234-abcd")
}

fn guaranteed_config() -> ResourceConfig {
    ResourceConfig {
        memory: Some(64 << 20),
        cpu_shares: Some(512),
        cpu_quota: Some(50_000),
        cpu_period: Some(100_000),
        pids_limit: Some(-1),
        cpuset_cpus: Some("0-3".into()),
        ..ResourceConfig::default()
    }
}

fn set(unit: &str, properties: Vec<Property>) -> SystemdCall {
    SystemdCall::SetUnitProperties {
        name: unit.into(),
        runtime: true,
        properties,
    }
}

fn start(unit: &str, parent: &str, io: &str) -> SystemdCall {
    SystemdCall::StartTransientUnit {
        name: unit.into(),
        mode: "replace".into(),
        properties: vec![
            prop("Description", Str(format!("libcontainer container {unit}"))),
            prop("Wants", StrList(vec![parent.into()])),
            prop("MemoryAccounting", Bool(true)),
            prop("CPUAccounting", Bool(true)),
            prop(io, Bool(true)),
            prop("TasksAccounting", Bool(true)),
            prop("DefaultDependencies", Bool(false)),
        ],
    }
}

#[test]
fn unit_and_parent_as_libct_cgroup_config() {
    let root = node_allocatable_root("/", true);
    assert_eq!(
        unit_and_parent(&root),
        ("kubepods.slice".into(), "-.slice".into())
    );
    assert_eq!(
        unit_and_parent(&pod()),
        (
            "kubepods-burstable-pod1234_abcd.slice".into(),
            "kubepods-burstable.slice".into()
        )
    );
    assert_eq!(
        unit_and_parent(&CgroupName::from_systemd("/system.slice")),
        ("system.slice".into(), "-.slice".into())
    );
}

/// `genV1ResourcesProperties`: `MemoryLimit`, `CPUShares`, the quota per second and its
/// period, `TasksMax` (-1 → `u64::MAX`, "infinity"), `AllowedCPUs`.
#[test]
fn v1_properties_as_libcontainer() {
    let (_, sd) = test_systemd();
    let sd = sd.unwrap();
    let (p, out) = resources_properties(&sd, CgroupVersion::V1, &guaranteed_config()).unwrap();
    assert_eq!(
        p,
        [
            prop("MemoryLimit", U64(64 << 20)),
            prop("CPUShares", U64(512)),
            prop("CPUQuotaPeriodUSec", U64(100_000)),
            prop("CPUQuotaPerSecUSec", U64(500_000)),
            prop("TasksMax", U64(u64::MAX)),
            prop("AllowedCPUs", Bytes(vec![0x0f])),
        ]
    );
    assert_eq!(out, guaranteed_config());
    // Nothing set: no property. A pids limit of 0 or below -1: none either.
    let (p, _) = resources_properties(
        &sd,
        CgroupVersion::V1,
        &ResourceConfig {
            pids_limit: Some(-2),
            ..ResourceConfig::default()
        },
    )
    .unwrap();
    assert!(p.is_empty(), "{p:?}");
    // BestEffort's 2 shares, a Burstable pod's quota -1 with a period (unlimited).
    let (p, _) = resources_properties(
        &sd,
        CgroupVersion::V1,
        &ResourceConfig {
            cpu_shares: Some(2),
            cpu_quota: Some(-1),
            cpu_period: Some(100_000),
            ..ResourceConfig::default()
        },
    )
    .unwrap();
    assert_eq!(
        p,
        [
            prop("CPUShares", U64(2)),
            prop("CPUQuotaPeriodUSec", U64(100_000)),
            prop("CPUQuotaPerSecUSec", U64(u64::MAX)),
        ]
    );
}

/// `genV2ResourcesProperties`: `MemoryMax`, `CPUWeight` (`getCPUWeight` of the shares),
/// the quota, `TasksMax`, `AllowedCPUs`, then the unified files systemd knows
/// (`memory.min` → `MemoryMin`); unlimited memory also unlimits swap.
#[test]
fn v2_properties_as_libcontainer() {
    let (_, sd) = test_systemd();
    let sd = sd.unwrap();
    let mut r = guaranteed_config();
    r.unified = BTreeMap::from([
        ("memory.min".to_string(), "1024".to_string()),
        ("memory.high".to_string(), "max".to_string()),
        ("io.weight".to_string(), "100".to_string()),
    ]);
    let (p, _) = resources_properties(&sd, CgroupVersion::V2, &r).unwrap();
    assert_eq!(
        p,
        [
            prop("MemoryMax", U64(64 << 20)),
            prop("CPUWeight", U64(20)),
            prop("CPUQuotaPeriodUSec", U64(100_000)),
            prop("CPUQuotaPerSecUSec", U64(500_000)),
            prop("TasksMax", U64(u64::MAX)),
            prop("AllowedCPUs", Bytes(vec![0x0f])),
            prop("MemoryHigh", U64(u64::MAX)),
            prop("MemoryMin", U64(1024)),
        ]
    );
    let (p, _) = resources_properties(
        &sd,
        CgroupVersion::V2,
        &ResourceConfig {
            memory: Some(-1),
            cpu_shares: Some(262_144),
            ..ResourceConfig::default()
        },
    )
    .unwrap();
    assert_eq!(
        p,
        [
            prop("MemoryMax", U64(u64::MAX)),
            prop("MemorySwapMax", U64(u64::MAX)),
            prop("CPUWeight", U64(10_000)),
        ]
    );
    let bad = ResourceConfig {
        unified: BTreeMap::from([("memory".to_string(), "1".to_string())]),
        ..ResourceConfig::default()
    };
    assert!(resources_properties(&sd, CgroupVersion::V2, &bad).is_err());
}

/// `Update` with systemd: the properties first, then the files — the CFS quota rounded to
/// systemd's 10 ms granularity in both.
#[test]
fn update_sets_properties_then_files_with_the_rounded_quota() {
    let fs = Arc::new(FakeHostFs::default());
    fs.add_dir("/sys/fs/cgroup/cpu");
    let (fake, sd) = test_systemd();
    let m =
        CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Systemd).with_systemd(sd);
    let r = ResourceConfig {
        cpu_quota: Some(1_500),
        cpu_period: Some(100_000),
        ..ResourceConfig::default()
    };
    m.update(&pod(), &r).unwrap();
    assert_eq!(
        fake.calls(),
        [set(
            "kubepods-burstable-pod1234_abcd.slice",
            vec![
                prop("CPUQuotaPeriodUSec", U64(100_000)),
                prop("CPUQuotaPerSecUSec", U64(20_000)),
            ]
        )]
    );
    let dir = "/sys/fs/cgroup/cpu/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice";
    assert_eq!(
        fs.writes(),
        [
            (
                PathBuf::from(format!("{dir}/cpu.cfs_period_us")),
                "100000".into()
            ),
            (
                PathBuf::from(format!("{dir}/cpu.cfs_quota_us")),
                "2000".into()
            ),
        ]
    );
    // systemd refusing: no file is written, the error is systemd's.
    fake.fail_set(Some(kubelet_systemd::SystemdError::Dbus {
        name: "org.freedesktop.DBus.Error.AccessDenied".into(),
        message: "denied".into(),
    }));
    let before = fs.writes().len();
    let err = m.update(&pod(), &r).unwrap_err();
    assert!(err.to_string().contains("AccessDenied"), "{err}");
    assert_eq!(fs.writes().len(), before);
}

/// Pod cgroups with the systemd driver: `Create` starts the slice unit (`Apply(-1)`'s
/// properties, `Wants=` its QoS slice), makes the directories and sets the values;
/// `Destroy` kills what is left, stops the unit, resets it, removes the directories.
#[test]
fn pod_cgroup_is_a_slice_unit_created_and_stopped() {
    for (version, io) in [
        (CgroupVersion::V1, "BlockIOAccounting"),
        (CgroupVersion::V2, "IOAccounting"),
    ] {
        let fs = Arc::new(FakeHostFs::default());
        if version == CgroupVersion::V1 {
            for c in ["cpu", "cpuacct", "memory", "pids", "freezer"] {
                fs.add_dir(format!("/sys/fs/cgroup/{c}"));
            }
        } else {
            fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
        }
        let (fake, sd) = test_systemd();
        let killer = Arc::new(FakeProcessKiller::default());
        let m = PodContainerManager::new(
            fs.clone(),
            killer.clone(),
            version,
            CgroupDriver::Systemd,
            &node_allocatable_root("/", true),
            100,
        )
        .with_systemd(sd);
        let unit = "kubepods-burstable-pod1234_abcd.slice";
        m.ensure_exists(&pod(), &guaranteed_config()).unwrap();
        let (mem, weight_or_shares) = match version {
            CgroupVersion::V1 => ("MemoryLimit", prop("CPUShares", U64(512))),
            CgroupVersion::V2 => ("MemoryMax", prop("CPUWeight", U64(20))),
        };
        assert_eq!(
            fake.calls(),
            [
                start(unit, "kubepods-burstable.slice", io),
                set(
                    unit,
                    vec![
                        prop(mem, U64(64 << 20)),
                        weight_or_shares,
                        prop("CPUQuotaPeriodUSec", U64(100_000)),
                        prop("CPUQuotaPerSecUSec", U64(500_000)),
                        prop("TasksMax", U64(100)),
                        prop("AllowedCPUs", Bytes(vec![0x0f])),
                    ]
                ),
            ],
            "{version:?}"
        );
        let rel = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice";
        let dirs: Vec<PathBuf> = match version {
            CgroupVersion::V1 => ["memory", "cpu", "cpuacct", "pids", "freezer"]
                .iter()
                .map(|c| PathBuf::from(format!("/sys/fs/cgroup/{c}/{rel}")))
                .collect(),
            CgroupVersion::V2 => vec![PathBuf::from(format!("/sys/fs/cgroup/{rel}"))],
        };
        for d in &dirs {
            assert!(fs.exists(d), "{d:?} in {:?}", fs.dirs());
        }
        if version == CgroupVersion::V2 {
            assert!(fs.writes().contains(&(
                PathBuf::from("/sys/fs/cgroup/cgroup.subtree_control"),
                "+cpu +memory +pids".to_string()
            )));
        }
        fake.clear_calls();
        fs.add_file(dirs[0].join("cgroup.procs"), "42\n");
        m.destroy(&pod()).unwrap();
        assert_eq!(killer.killed(), [42]);
        assert_eq!(
            fake.calls(),
            [
                SystemdCall::StopUnit {
                    name: unit.into(),
                    mode: "replace".into()
                },
                SystemdCall::ResetFailedUnit { name: unit.into() },
            ]
        );
        for d in &dirs {
            assert!(fs.removed().contains(d), "{d:?} in {:?}", fs.removed());
        }
        assert!(fake.active().is_empty());
    }
}

/// The QoS hierarchy with systemd, in upstream's order: `kubepods.slice` created under
/// `-.slice` with node allocatable, the Burstable and BestEffort slices under it (huge
/// pages unbounded, BestEffort 2 shares), then `kubepods.slice` updated again
/// (`enforceNodeAllocatableCgroups`). Slices that exist are updated, not started.
#[test]
fn qos_hierarchy_of_slice_units() {
    let fs = Arc::new(FakeHostFs::default());
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids", "systemd"] {
        fs.add_dir(format!("/sys/fs/cgroup/{c}"));
    }
    // systemd makes the slice in its own hierarchy; the fake does not.
    fs.add_dir("/sys/fs/cgroup/systemd/kubepods.slice");
    let (fake, sd) = test_systemd();
    let m =
        CgroupManager::new(fs.clone(), CgroupVersion::V1, CgroupDriver::Systemd).with_systemd(sd);
    let names = QosCgroups::new(&node_allocatable_root("/", true), CgroupDriver::Systemd);
    let kubepods = ResourceConfig {
        memory: Some(7 << 30),
        cpu_shares: Some(3072),
        pids_limit: Some(31_768),
        ..ResourceConfig::default()
    };
    setup_qos_cgroups_with_manager(&m, &names, &kubepods).unwrap();
    let kubepods_props = vec![
        prop("MemoryLimit", U64(7 << 30)),
        prop("CPUShares", U64(3072)),
        prop("TasksMax", U64(31_768)),
    ];
    let io = "BlockIOAccounting";
    assert_eq!(
        fake.calls(),
        [
            start("kubepods.slice", "-.slice", io),
            set("kubepods.slice", kubepods_props.clone()),
            start("kubepods-burstable.slice", "kubepods.slice", io),
            set("kubepods-burstable.slice", vec![]),
            start("kubepods-besteffort.slice", "kubepods.slice", io),
            set("kubepods-besteffort.slice", vec![prop("CPUShares", U64(2))]),
            set("kubepods.slice", kubepods_props.clone()),
        ]
    );
    // A restart: the slices exist (in every validated hierarchy), so they are updated.
    for q in ["kubepods-burstable.slice", "kubepods-besteffort.slice"] {
        fs.add_dir(format!("/sys/fs/cgroup/systemd/kubepods.slice/{q}"));
    }
    fake.clear_calls();
    setup_qos_cgroups_with_manager(&m, &names, &kubepods).unwrap();
    assert!(
        fake.calls()
            .iter()
            .all(|c| matches!(c, SystemdCall::SetUnitProperties { .. })),
        "{:?}",
        fake.calls()
    );
}

/// The same pod cgroup life (create, resize, destroy) through the real zbus client against
/// the fake systemd on a private `dbus-daemon` gives systemd the very calls and property
/// variants the recording fake sees.
#[tokio::test(flavor = "multi_thread")]
async fn real_bus_pod_cgroup_calls_match_the_recording_fake() {
    use kubelet_systemd::fake_systemd::{FakeSystemd, PrivateBus};
    let bus = PrivateBus::start().unwrap();
    let on_bus = FakeSystemd::serve(&bus.address).await.unwrap();
    let client = kubelet_systemd::DbusSystemdManager::with_address(
        &bus.address,
        std::time::Duration::from_secs(10),
    )
    .unwrap();
    let real = Some(Arc::new(Systemd::new(Arc::new(client))));
    let life = |sd: Option<Arc<Systemd>>| {
        let fs = Arc::new(FakeHostFs::default());
        fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
        let m = PodContainerManager::new(
            fs,
            Arc::new(FakeProcessKiller::default()),
            CgroupVersion::V2,
            CgroupDriver::Systemd,
            &node_allocatable_root("/", true),
            100,
        )
        .with_systemd(sd);
        let mut r = guaranteed_config();
        r.unified = BTreeMap::from([("memory.min".to_string(), "1024".to_string())]);
        m.ensure_exists(&pod(), &r).unwrap();
        r.cpu_quota = Some(1_500);
        m.set_pod_cgroup_config(&pod(), &r).unwrap();
        m.destroy(&pod()).unwrap();
    };
    tokio::task::spawn_blocking(move || life(real))
        .await
        .unwrap();
    let (recorded, sd) = test_systemd();
    life(sd);
    assert_eq!(on_bus.calls(), recorded.calls());
    assert_eq!(on_bus.calls().len(), 5, "{:#?}", on_bus.calls());
    assert!(on_bus.active().is_empty());
}
