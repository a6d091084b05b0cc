//! The systemd cgroup driver in-process, over the fake host (cgroup v2), the recording
//! fake CRI reporting the systemd driver and the recording fake systemd: the container
//! manager's start makes the QoS hierarchy of slice units and sets the reserved cgroup's
//! properties; a static pod's cgroup is a slice unit started before its sandbox and
//! stopped when the pod is gone — the calls upstream's libcontainer systemd manager makes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use kubelet_cri::v1::CgroupDriver;
use kubelet_systemd::{FakeSystemdManager, PropValue, Systemd, SystemdCall};
use support::{TestKubelet, pod_manifest};

fn started(calls: &[SystemdCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter_map(|c| match c {
            SystemdCall::StartTransientUnit {
                name, properties, ..
            } => {
                let wants = properties.iter().find(|p| p.name == "Wants")?;
                match &wants.value {
                    PropValue::StrList(l) => Some((name.clone(), l.join(","))),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn qos_reserved_and_pod_cgroups_are_slice_units() {
    let mut k = TestKubelet::new(
        "cgroupDriver: cgroupfs
enforceNodeAllocatable: [pods, system-reserved]
systemReservedCgroup: /system.slice
systemReserved:
  memory: 1Gi
",
    )
    .await;
    // The runtime's driver wins over the configured one, as upstream.
    k.cri.runtime.set_cgroup_driver(Some(CgroupDriver::Systemd));
    let fake = Arc::new(FakeSystemdManager::default());
    k.systemd = Some(Arc::new(Systemd::new(fake.clone())));
    let fs = k.host_fs.clone();
    fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
    // `kubepods.slice` and `system.slice` exist already (as on a node the kubelet ran on
    // before): `kubepods.slice` is not started again, only updated (upstream
    // `createNodeAllocatableCgroups` checks `Exists` first; the start of a new one is
    // `kubelet_cm`'s `qos_hierarchy_of_slice_units`).
    for slice in ["kubepods.slice", "system.slice"] {
        fs.add_file(
            format!("/sys/fs/cgroup/{slice}/cgroup.controllers"),
            "cpu memory pids\n",
        );
    }
    k.start().await;
    assert_eq!(
        started(&fake.calls()),
        [
            (
                "kubepods-burstable.slice".to_string(),
                "kubepods.slice".to_string()
            ),
            (
                "kubepods-besteffort.slice".to_string(),
                "kubepods.slice".to_string()
            ),
        ]
    );
    assert!(
        fake.calls().iter().any(|c| matches!(c,
            SystemdCall::SetUnitProperties { name, .. } if name == "kubepods.slice")),
        "{:#?}",
        fake.calls()
    );
    assert!(
        fake.calls().contains(&SystemdCall::SetUnitProperties {
            name: "system.slice".into(),
            runtime: true,
            // Every CPU as the cpuset, upstream's `getCgroupConfig` under the `none` policy.
            properties: vec![
                kubelet_systemd::prop("MemoryMax", PropValue::U64(1 << 30)),
                kubelet_systemd::prop("AllowedCPUs", PropValue::Bytes(vec![0b11])),
            ],
        }),
        "{:#?}",
        fake.calls()
    );
    assert_eq!(
        fs.writes()
            .iter()
            .rev()
            .find(|(p, _)| p.ends_with("system.slice/memory.max"))
            .map(|(_, v)| v.as_str()),
        Some("1073741824")
    );

    // A BestEffort static pod: its slice before its sandbox, stopped once it is gone.
    let uid = "5d6f1a2b-0000-4000-8000-000000000001";
    let unit = "kubepods-besteffort-pod5d6f1a2b_0000_4000_8000_000000000001.slice";
    fake.clear_calls();
    k.write_manifest("p.yaml", &pod_manifest("p", uid, "sleep 3600", ""));
    k.wait_running(uid, "main").await;
    assert_eq!(
        started(&fake.calls()),
        [(unit.to_string(), "kubepods-besteffort.slice".to_string())]
    );
    let sandbox = k.sandboxes(uid);
    assert!(
        sandbox.iter().any(|s| s
            .config
            .linux
            .as_ref()
            .is_some_and(|l| l.cgroup_parent.ends_with(unit))),
        "cgroup parent of {sandbox:?}"
    );
    k.remove_manifest("p.yaml");
    k.wait_until("the pod slice stopped", || {
        fake.calls()
            .contains(&SystemdCall::StopUnit {
                name: unit.into(),
                mode: "replace".into(),
            })
            .then_some(())
    })
    .await;
    assert!(!fake.active().contains(&unit.to_string()));
    k.stop().await;
}
