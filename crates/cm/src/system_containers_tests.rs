#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use super::*;
use crate::hostfs::FakeHostFs;

fn v1_host() -> FakeHostFs {
    let fs = FakeHostFs::default();
    for h in [
        "cpu,cpuacct",
        "cpuset",
        "devices",
        "memory",
        "pids",
        "systemd",
        "unified",
    ] {
        fs.add_dir(format!("/sys/fs/cgroup/{h}"));
    }
    fs.add_file("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n");
    fs.add_file("/sys/fs/cgroup/cpuset/cpuset.mems", "0\n");
    fs.add_link("/proc/1/ns/pid", "pid:[4026531836]");
    fs
}

fn procs_writes(fs: &FakeHostFs) -> Vec<(PathBuf, String)> {
    fs.writes()
        .into_iter()
        .filter(|(p, _)| p.ends_with("cgroup.procs"))
        .collect()
}

#[test]
fn system_cgroups_may_not_be_the_root() {
    let err = SystemContainers::new("/", "", -999).unwrap_err();
    assert_eq!(err.to_string(), "system container cannot be root (\"/\")");
    let none = SystemContainers::new("", "", -999).unwrap();
    assert!(!none.has_ensure_state_funcs());
    let both = SystemContainers::new("/system", "/kubelet", -999).unwrap();
    assert!(both.has_ensure_state_funcs());
}

/// `ensureSystemCgroups`: the root's processes but init and kernel threads go to the
/// system container in every hierarchy but `devices`; the cpuset cgroup inherits.
#[test]
fn non_kernel_processes_of_the_root_move_to_the_system_container() {
    let fs = v1_host();
    fs.add_file("/sys/fs/cgroup/devices/cgroup.procs", "1\n2\n300\n301\n");
    fs.add_link("/proc/300/exe", "/usr/sbin/sshd");
    fs.add_link("/proc/301/exe", "/usr/bin/containerd");
    // pid 2 (kthreadd) has no exe link: a kernel thread.
    let system = SystemCgroup {
        name: "/system".into(),
    };
    // The fake's root list never changes, so every round moves them again: upstream's
    // 11 rounds, no error.
    ensure_system_cgroups(&fs, CgroupVersion::V1, &system).unwrap();
    let writes = procs_writes(&fs);
    let first: Vec<(String, String)> = writes
        .iter()
        .take(10)
        .map(|(p, v)| (p.display().to_string(), v.clone()))
        .collect();
    let dirs = ["cpu,cpuacct", "cpuset", "memory", "pids", "systemd"];
    let want: Vec<(String, String)> = ["300", "301"]
        .iter()
        .flat_map(|pid| {
            dirs.iter().map(move |d| {
                (
                    format!("/sys/fs/cgroup/{d}/system/cgroup.procs"),
                    (*pid).to_string(),
                )
            })
        })
        .collect();
    assert_eq!(first, want);
    assert_eq!(writes.len(), 11 * 10);
    assert!(
        fs.writes().iter().any(|(p, v)| p
            == &PathBuf::from("/sys/fs/cgroup/cpuset/system/cpuset.cpus")
            && v == "0-1"),
        "the cpuset cgroup gets its parent's CPUs"
    );
}

#[test]
fn an_empty_root_needs_no_move_and_a_failed_move_is_reported() {
    let fs = v1_host();
    fs.add_file("/sys/fs/cgroup/devices/cgroup.procs", "1\n");
    let system = SystemCgroup {
        name: "/system".into(),
    };
    ensure_system_cgroups(&fs, CgroupVersion::V1, &system).unwrap();
    assert!(procs_writes(&fs).is_empty());

    let fs = v1_host();
    fs.add_file("/sys/fs/cgroup/devices/cgroup.procs", "7\n");
    fs.add_link("/proc/7/exe", "/bin/sh");
    fs.deny_writes("/sys/fs/cgroup/memory/system/cgroup.procs");
    let err = ensure_system_cgroups(&fs, CgroupVersion::V1, &system)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed to move PID 7 into the system container \"/system\""),
        "{err}"
    );

    let fs = FakeHostFs::default();
    let err = ensure_system_cgroups(&fs, CgroupVersion::V2, &system)
        .unwrap_err()
        .to_string();
    assert!(err.contains("failed to list PIDs for root"), "{err}");
}

#[test]
fn v2_moves_into_the_unified_cgroup() {
    let fs = FakeHostFs::default();
    fs.add_file("/sys/fs/cgroup/cgroup.procs", "40\n");
    fs.add_link("/proc/40/exe", "/bin/sh");
    let system = SystemCgroup {
        name: "/system.slice/misc".into(),
    };
    ensure_system_cgroups(&fs, CgroupVersion::V2, &system).unwrap();
    let writes = procs_writes(&fs);
    assert_eq!(
        writes[0],
        (
            PathBuf::from("/sys/fs/cgroup/system.slice/misc/cgroup.procs"),
            "40".to_string()
        )
    );
}

/// `ensureProcessInContainerWithOOMScore` with `kubeletCgroups`: moved when elsewhere,
/// left when there; the OOM score either way; a failed OOM score is an error (upstream
/// logs it as "Failed to ensure state" and goes on).
#[test]
fn the_kubelet_is_kept_in_its_cgroup_with_its_oom_score() {
    let fs = v1_host();
    fs.add_link("/proc/55/ns/pid", "pid:[4026531836]");
    fs.add_file(
        "/proc/55/cgroup",
        "5:memory:/user.slice\n4:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice/session-1.scope\n",
    );
    let kubelet = SystemCgroup {
        name: "/kubelet".into(),
    };
    ensure_process_in_container_with_oom_score(&fs, CgroupVersion::V1, 55, -999, Some(&kubelet))
        .unwrap();
    let procs: Vec<String> = procs_writes(&fs)
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(procs.contains(&"/sys/fs/cgroup/memory/kubelet/cgroup.procs".to_string()));
    assert!(
        fs.writes()
            .iter()
            .any(|(p, v)| p == &PathBuf::from("/proc/55/oom_score_adj") && v == "-999")
    );

    // Already there (by its name=systemd cgroup, as getContainer reads it): not moved.
    let fs = v1_host();
    fs.add_link("/proc/55/ns/pid", "pid:[4026531836]");
    fs.add_file(
        "/proc/55/cgroup",
        "5:memory:/kubelet\n4:cpu,cpuacct:/kubelet\n1:name=systemd:/kubelet\n",
    );
    fs.deny_writes("/proc/55/oom_score_adj");
    let err = ensure_process_in_container_with_oom_score(
        &fs,
        CgroupVersion::V1,
        55,
        -999,
        Some(&kubelet),
    )
    .unwrap_err()
    .to_string();
    assert!(procs_writes(&fs).is_empty());
    assert!(
        err.starts_with("failed to apply oom score -999 to PID 55"),
        "{err}"
    );

    // Init's pid namespace unreadable: nothing is moved, upstream's error.
    let fs = FakeHostFs::default();
    let err = ensure_process_in_container_with_oom_score(
        &fs,
        CgroupVersion::V1,
        55,
        -999,
        Some(&kubelet),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("failed to find pid namespace of init process"),
        "{err}"
    );
    assert!(fs.writes().is_empty());

    // Another pid namespace: left alone.
    let fs = v1_host();
    fs.add_link("/proc/55/ns/pid", "pid:[4026532000]");
    ensure_process_in_container_with_oom_score(&fs, CgroupVersion::V1, 55, -999, Some(&kubelet))
        .unwrap();
    assert!(fs.writes().is_empty());
}

#[test]
fn get_container_as_upstream() {
    let unified = "0::/system.slice/kubelet.service\n";
    assert_eq!(
        container_of(unified, CgroupVersion::V2).unwrap(),
        "/system.slice/kubelet.service"
    );
    let v1 = "12:pids:/a\n4:memory:/k\n3:cpu,cpuacct:/k\n0::/x\n";
    assert_eq!(container_of(v1, CgroupVersion::V1).unwrap(), "/k");
    let systemd = "4:memory:/\n3:cpu,cpuacct:/\n1:name=systemd:/user.slice/s.scope\n";
    assert_eq!(
        container_of(systemd, CgroupVersion::V1).unwrap(),
        "/user.slice/s.scope"
    );
    let split = "4:memory:/a\n3:cpu,cpuacct:/b\n";
    assert_eq!(
        container_of(split, CgroupVersion::V1).unwrap_err(),
        "cpu and memory cgroup hierarchy not unified.  cpu: /b, memory: /a"
    );
}

/// Without `kubeletCgroups`: the periodic task sets the OOM score and finds the kubelet's
/// cgroup; with it, there is no such task.
#[test]
fn the_periodic_task_finds_the_kubelets_cgroup() {
    let fs = v1_host();
    fs.add_link("/proc/55/ns/pid", "pid:[4026531836]");
    fs.add_file("/proc/55/cgroup", "4:memory:/k\n3:cpu,cpuacct:/k\n");
    let none = SystemContainers::new("", "", -999).unwrap();
    assert_eq!(
        none.periodic_task(&fs, CgroupVersion::V1, 55).as_deref(),
        Some("/k")
    );
    let set = SystemContainers::new("", "/kubelet", -999).unwrap();
    assert_eq!(set.periodic_task(&fs, CgroupVersion::V1, 55), None);
    fs.deny_writes("/proc/55/oom_score_adj");
    assert_eq!(none.periodic_task(&fs, CgroupVersion::V1, 55), None);
}
