//! The container manager's hooks around a container's life (upstream
//! `cm.InternalContainerLifecycle`, called by `kuberuntime_container.go`: `PreCreateContainer`
//! after the CRI config is generated, `PreStartContainer` between CRI `CreateContainer` and
//! `StartContainer`, `PostStopContainer` before a container is removed).
//!
//! The runtime manager calls the hooks of the lifecycle set with
//! [`KubeGenericRuntimeManager::with_internal_lifecycle`](crate::manager::KubeGenericRuntimeManager::with_internal_lifecycle);
//! without one it uses [`NoInternalLifecycle`], which changes nothing (a kubelet whose
//! resource managers all have the `none` policy).

use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_cri::v1::ContainerConfig;

/// Upstream `InternalContainerLifecycle`. A hook's error fails the container's start with
/// `PreCreateHookError` / `PreStartHookError` (the message is the error's text).
pub trait InternalContainerLifecycle: Send + Sync {
    /// `PreCreateContainer`: may change the CRI config (the CPU manager's `cpuset_cpus`).
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String>;
    /// `PreStartContainer`: the container exists in the runtime under `container_id`.
    fn pre_start_container(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
    ) -> Result<(), String>;
    /// `PostStopContainer`: the container is about to be removed.
    fn post_stop_container(&self, container_id: &str) -> Result<(), String>;
}

/// The lifecycle of a kubelet without resource managers: every hook succeeds and changes
/// nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoInternalLifecycle;

impl InternalContainerLifecycle for NoInternalLifecycle {
    fn pre_create_container(
        &self,
        _pod: &Pod,
        _container: &Container,
        _config: &mut ContainerConfig,
    ) -> Result<(), String> {
        Ok(())
    }

    fn pre_start_container(
        &self,
        _pod: &Pod,
        _container: &Container,
        _container_id: &str,
    ) -> Result<(), String> {
        Ok(())
    }

    fn post_stop_container(&self, _container_id: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Several managers' hooks, called in order (upstream's `internalContainerLifecycleImpl`
/// calls the CPU manager's, then the memory manager's); the first error stops a hook.
#[derive(Clone, Default)]
pub struct ComposedLifecycle(pub Vec<std::sync::Arc<dyn InternalContainerLifecycle>>);

impl std::fmt::Debug for ComposedLifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComposedLifecycle")
            .field("hooks", &self.0.len())
            .finish()
    }
}

impl InternalContainerLifecycle for ComposedLifecycle {
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String> {
        self.0
            .iter()
            .try_for_each(|l| l.pre_create_container(pod, container, config))
    }

    fn pre_start_container(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
    ) -> Result<(), String> {
        self.0
            .iter()
            .try_for_each(|l| l.pre_start_container(pod, container, container_id))
    }

    fn post_stop_container(&self, container_id: &str) -> Result<(), String> {
        self.0
            .iter()
            .try_for_each(|l| l.post_stop_container(container_id))
    }
}

/// A call the [`RecordingLifecycle`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleCall {
    /// `PreCreateContainer` (pod name, container name).
    PreCreate(String, String),
    /// `PreStartContainer` (pod name, container name, container id).
    PreStart(String, String, String),
    /// `PostStopContainer` (container id).
    PostStop(String),
}

/// A recording fake for unit tests: records each call, sets `cpuset_cpus` at
/// `PreCreateContainer` when [`Self::cpuset`] is set, and fails the hooks named in
/// [`Self::fail`].
#[derive(Debug, Default)]
pub struct RecordingLifecycle {
    /// The calls, in order.
    pub calls: Mutex<Vec<LifecycleCall>>,
    /// `cpuset_cpus` written at `PreCreateContainer`.
    pub cpuset: Option<String>,
    /// Hooks that fail: `"pre_create"`, `"pre_start"`, `"post_stop"`.
    pub fail: Vec<&'static str>,
}

impl RecordingLifecycle {
    fn record(&self, call: LifecycleCall) {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(call);
    }

    fn result(&self, hook: &str) -> Result<(), String> {
        if self.fail.contains(&hook) {
            Err(format!("{hook} failed"))
        } else {
            Ok(())
        }
    }

    /// The calls so far.
    pub fn calls(&self) -> Vec<LifecycleCall> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

fn pod_name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

impl InternalContainerLifecycle for RecordingLifecycle {
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String> {
        self.record(LifecycleCall::PreCreate(
            pod_name(pod),
            container.name.clone(),
        ));
        if let Some(cpus) = &self.cpuset {
            let linux = config.linux.get_or_insert_with(Default::default);
            linux
                .resources
                .get_or_insert_with(Default::default)
                .cpuset_cpus
                .clone_from(cpus);
        }
        self.result("pre_create")
    }

    fn pre_start_container(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
    ) -> Result<(), String> {
        self.record(LifecycleCall::PreStart(
            pod_name(pod),
            container.name.clone(),
            container_id.to_owned(),
        ));
        self.result("pre_start")
    }

    fn post_stop_container(&self, container_id: &str) -> Result<(), String> {
        self.record(LifecycleCall::PostStop(container_id.to_owned()));
        self.result("post_stop")
    }
}

/// Which containers have CPUs of their own (upstream `cpuAllocationReader` with
/// `containerHasExclusiveCPUs` / `podHasExclusiveCPUs`, `cm/container_manager.go`). With
/// the `DisableCPUQuotaWithExclusiveCPUs` gate (on by default) such a container, its
/// sandbox and its pod cgroup get no CFS quota (`cpu_quota` -1). The kubelet sets a reader
/// only with the gate on; without one ([`NoExclusiveCpus`]) every quota is enforced.
pub trait CpuAllocationReader: Send + Sync {
    /// `containerHasExclusiveCPUs`: the container was given exclusive CPUs.
    fn container_has_exclusive_cpus(&self, pod: &Pod, container: &Container) -> bool;

    /// `podHasExclusiveCPUs`: an init or app container of the pod has exclusive CPUs.
    fn pod_has_exclusive_cpus(&self, pod: &Pod) -> bool {
        pod.spec.as_ref().is_some_and(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(s.containers.iter())
                .any(|c| self.container_has_exclusive_cpus(pod, c))
        })
    }
}

/// No container has exclusive CPUs (the `none` CPU manager policy, or the
/// `DisableCPUQuotaWithExclusiveCPUs` gate off).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExclusiveCpus;

impl CpuAllocationReader for NoExclusiveCpus {
    fn container_has_exclusive_cpus(&self, _pod: &Pod, _container: &Container) -> bool {
        false
    }
}

/// A fake naming the (pod UID, container name) pairs with exclusive CPUs.
#[derive(Debug, Default, Clone)]
pub struct FakeExclusiveCpus(pub Vec<(String, String)>);

impl CpuAllocationReader for FakeExclusiveCpus {
    fn container_has_exclusive_cpus(&self, pod: &Pod, container: &Container) -> bool {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        self.0.iter().any(|(p, c)| p == uid && *c == container.name)
    }
}
