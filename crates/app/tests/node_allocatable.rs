//! Node allocatable enforcement at the container manager's start, in-process over the fake
//! host (cgroup v2) and the recording fake CRI and recorder: `kubepods`' pids.max is the
//! pid capacity less the `pid` reservations, the `system-reserved` cgroup gets its
//! reservation as limits, and upstream's `NodeAllocatableEnforced` events follow
//! `BirthCry` (`enforceNodeAllocatableCgroups`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;

use support::TestKubelet;

#[tokio::test]
async fn reserved_cgroup_and_kubepods_pids_are_enforced_with_events() {
    let mut k = TestKubelet::new(
        "enforceNodeAllocatable: [pods, system-reserved]
systemReservedCgroup: /system.slice
systemReserved:
  cpu: 500m
  memory: 1Gi
  pid: \"1000\"
kubeReserved:
  pid: \"500\"
",
    )
    .await;
    let fs = k.host_fs.clone();
    fs.add_file("/sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
    fs.add_file(
        "/sys/fs/cgroup/system.slice/cgroup.controllers",
        "cpu memory pids\n",
    );
    fs.add_file("/proc/sys/kernel/pid_max", "32768\n");
    fs.add_file("/proc/sys/kernel/threads-max", "100000\n");
    k.start().await;
    let writes = fs.writes();
    let written = |p: &str| {
        writes
            .iter()
            .rev()
            .find(|(w, _)| w == Path::new(p))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        written("/sys/fs/cgroup/kubepods/pids.max").as_deref(),
        Some("31268")
    );
    assert_eq!(
        written("/sys/fs/cgroup/system.slice/memory.max").as_deref(),
        Some("1073741824")
    );
    assert_eq!(
        written("/sys/fs/cgroup/system.slice/pids.max").as_deref(),
        Some("1000")
    );
    assert_eq!(
        written("/sys/fs/cgroup/system.slice/cpu.weight").as_deref(),
        Some("20")
    );
    assert_eq!(
        written("/sys/fs/cgroup/system.slice/cpuset.cpus").as_deref(),
        Some("0-1")
    );
    let lines = k.recorder.lines();
    let at = |l: &str| lines.iter().position(|x| x == l);
    let birth = at("Normal Starting Starting kubelet.").unwrap();
    let pods =
        at("Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods").unwrap();
    let system =
        at("Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice")
            .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(birth < pods && pods < system, "{lines:#?}");
    k.stop().await;
}
