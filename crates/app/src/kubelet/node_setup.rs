//! Host settings the kubelet applies to itself and the node: the open-files limit
//! (`cmd/kubelet/app/server.go` `RunKubelet` → `rlimit.SetNumFiles(maxOpenFiles)`) and the
//! kernel tunables of the container manager's `setupNode`
//! (`pkg/kubelet/cm/container_manager_linux.go`, `protectKernelDefaults`), and its system
//! containers (`kubeletCgroups`, `systemCgroups`) with the loops `Start` runs for them.

use kubelet_cm::{HostFs, KernelTunableBehavior, Rlimits};
use kubelet_config::KubeletServer;

use crate::startup::RunError;

/// `rlimit.SetNumFiles(uint64(maxOpenFiles))`; a failure is logged, as upstream does, and
/// the start goes on.
pub fn set_max_open_files(server: &KubeletServer, rlimits: &dyn Rlimits) {
    // Go's uint64(int64) conversion: the same bits.
    #[allow(clippy::cast_sign_loss)]
    let limit = server.config.max_open_files as u64;
    if let Err(e) = rlimits.set_num_files(limit) {
        tracing::error!(err = %e, "Failed to set rlimit on max file handles");
    }
}

/// `setupKernelTunables`: with `protectKernelDefaults` a differing sysctl stops the start,
/// otherwise the kubelet sets it.
pub fn setup_kernel_tunables(server: &KubeletServer, fs: &dyn HostFs) -> Result<(), RunError> {
    let behavior =
        KernelTunableBehavior::for_protect_kernel_defaults(server.config.protect_kernel_defaults);
    let in_userns = server
        .feature_gates
        .enabled(kubelet_features::gates::KUBELET_IN_USER_NAMESPACE);
    kubelet_cm::setup_kernel_tunables(fs, behavior, in_userns)
        .map_err(|e| RunError::Kubelet(format!("Failed to start ContainerManager: {e}")))
}

/// `setupNode`'s system containers: `systemCgroups` may not be `/`.
pub fn system_containers(server: &KubeletServer) -> Result<kubelet_cm::SystemContainers, RunError> {
    let c = &server.config;
    kubelet_cm::SystemContainers::new(
        &c.system_cgroups,
        &c.kubelet_cgroups,
        c.oom_score_adj.unwrap_or(-999),
    )
    .map_err(|e| RunError::Kubelet(format!("Failed to start ContainerManager: {e}")))
}

/// `containerManagerImpl.Start`'s loops: every minute (the first pass at once) each system
/// container's ensure-state function, when one is configured; every 5 minutes (the first
/// at once) the kubelet's OOM score and cgroup when `kubeletCgroups` is not set.
pub fn spawn_system_container_loops(
    system: kubelet_cm::SystemContainers,
    fs: std::sync::Arc<dyn HostFs>,
    version: kubelet_cm::CgroupVersion,
    cancel: tokio_util::sync::CancellationToken,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    let pid = std::process::id();
    let loop_of = |period: std::time::Duration, pass: Box<dyn Fn() + Send>| {
        let cancel = cancel.clone();
        async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tick.tick() => pass(),
                }
            }
        }
    };
    if system.has_ensure_state_funcs() {
        let (s, fs) = (system.clone(), fs.clone());
        tasks.spawn(loop_of(
            kubelet_cm::system_containers::ENSURE_STATE_PERIOD,
            Box::new(move || s.ensure_state(fs.as_ref(), version, pid)),
        ));
    }
    if system.kubelet.is_none() {
        tasks.spawn(loop_of(
            kubelet_cm::system_containers::PERIODIC_TASKS_PERIOD,
            Box::new(move || {
                if let Some(cgroup) = system.periodic_task(fs.as_ref(), version, pid) {
                    tracing::debug!(%cgroup, "The kubelet's cgroup");
                }
            }),
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use kubelet_cm::{FakeHostFs, FakeRlimits};

    use super::*;
    use crate::kubelet::test_config::server as config;

    #[test]
    fn max_open_files_sets_rlimit() {
        let rl = FakeRlimits::default();
        set_max_open_files(&config(""), &rl);
        set_max_open_files(&config("maxOpenFiles: 4096\n"), &rl);
        assert_eq!(rl.calls(), [1_000_000, 4096]);
        // A failure is logged; the start goes on.
        let failing = FakeRlimits::failing();
        set_max_open_files(&config("maxOpenFiles: 10\n"), &failing);
        assert_eq!(failing.calls(), [10]);
    }

    #[test]
    fn protect_kernel_defaults_checks_sysctls() {
        let host = || {
            let fs = FakeHostFs::default();
            for (f, v) in kubelet_cm::kernel_tunables::DESIRED_KERNEL_TUNABLES {
                fs.add_file(format!("/proc/sys/{f}"), v.to_string());
            }
            fs.add_file("/proc/sys/kernel/panic", "0\n");
            fs
        };
        let fs = host();
        let err = setup_kernel_tunables(&config("protectKernelDefaults: true\n"), &fs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to start ContainerManager: invalid kernel flag: kernel/panic, expected value: 10, actual value: 0"
        );
        assert!(fs.writes().is_empty());
        setup_kernel_tunables(&config(""), &fs).unwrap();
        assert_eq!(
            fs.writes(),
            [("/proc/sys/kernel/panic".into(), "10".to_string())]
        );
    }
}
