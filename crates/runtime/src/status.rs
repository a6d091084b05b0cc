//! Listing and status from CRI (upstream `kuberuntime_manager.go` `GetPods`, `GetPodStatus`,
//! `getKubeletSandboxes`, `getSandboxIDByPodUID`, and `kuberuntime_container.go`
//! `getKubeletContainers`, `getPodContainerStatuses`).

use kubelet_container::{
    Container, ContainerState, Pod, PodStatus, RuntimeError, SandboxState, SandboxStatus,
};
use kubelet_cri::v1::{
    ContainerFilter, ContainerStateValue, NamespaceMode, PodSandboxFilter, PodSandboxState,
    PodSandboxStateValue, PodSandboxStatus,
};

use crate::container::{
    pod_uid_selector, sort_newest_first, to_kube_container_state, to_kube_container_status,
};
use crate::labels::{container_info_from_annotations, container_info_from_labels};
use crate::manager::{KubeGenericRuntimeManager, cri_err};

impl KubeGenericRuntimeManager {
    /// `getKubeletSandboxes`: ready sandboxes, or all with `all`; their labels and annotations
    /// hold only the kubelet's `io.kubernetes.*` keys (what `GetPods` and the GC read).
    pub(crate) async fn list_sandboxes(
        &self,
        all: bool,
    ) -> Result<Vec<kubelet_cri::v1::PodSandbox>, RuntimeError> {
        let filter = (!all).then(|| PodSandboxFilter {
            state: Some(PodSandboxStateValue {
                state: PodSandboxState::SandboxReady as i32,
            }),
            ..PodSandboxFilter::default()
        });
        self.runtime
            .list_pod_sandbox_kubelet_keys(filter.as_ref())
            .await
            .map_err(cri_err)
    }

    /// `getKubeletContainers`: running containers, or all with `all`; labels and annotations
    /// as [`Self::list_sandboxes`].
    pub(crate) async fn list_containers(
        &self,
        all: bool,
    ) -> Result<Vec<kubelet_cri::v1::Container>, RuntimeError> {
        let filter = (!all).then(|| ContainerFilter {
            state: Some(ContainerStateValue {
                state: kubelet_cri::v1::ContainerState::ContainerRunning as i32,
            }),
            ..ContainerFilter::default()
        });
        self.runtime
            .list_containers_kubelet_keys(filter.as_ref())
            .await
            .map_err(cri_err)
    }

    fn to_kube_container(&self, c: &kubelet_cri::v1::Container) -> Container {
        let labeled = container_info_from_labels(&c.labels);
        let annotated = container_info_from_annotations(&c.annotations);
        let image = c.image.as_ref();
        Container {
            id: self.id(&c.id),
            name: labeled.container_name,
            image: image.map(|i| i.image.clone()).unwrap_or_default(),
            image_id: if c.image_id.is_empty() {
                c.image_ref.clone()
            } else {
                c.image_id.clone()
            },
            image_ref: c.image_ref.clone(),
            image_runtime_handler: image.map(|i| i.runtime_handler.clone()).unwrap_or_default(),
            hash: annotated.hash,
            state: to_kube_container_state(c.state),
        }
    }

    /// `GetPods`.
    pub async fn get_pods_impl(&self, all: bool) -> Result<Vec<Pod>, RuntimeError> {
        let mut pods: Vec<Pod> = Vec::new();
        fn entry<'a>(pods: &'a mut Vec<Pod>, uid: &str, name: &str, ns: &str) -> &'a mut Pod {
            match pods.iter().position(|p| p.id == uid) {
                Some(i) => &mut pods[i],
                None => {
                    pods.push(Pod {
                        id: uid.into(),
                        name: name.into(),
                        namespace: ns.into(),
                        ..Pod::default()
                    });
                    let last = pods.len() - 1;
                    &mut pods[last]
                }
            }
        }
        for s in self.list_sandboxes(all).await? {
            let Some(m) = s.metadata.as_ref() else {
                continue;
            };
            let pod = entry(&mut pods, &m.uid, &m.name, &m.namespace);
            let state = if s.state == PodSandboxState::SandboxReady as i32 {
                ContainerState::Running
            } else {
                ContainerState::Exited
            };
            pod.sandboxes.push(Container {
                id: self.id(&s.id),
                state,
                ..Container::default()
            });
            pod.created_at = u64::try_from(s.created_at).unwrap_or(0);
        }
        for c in self.list_containers(all).await? {
            if c.metadata.is_none() {
                continue;
            }
            let l = container_info_from_labels(&c.labels);
            let converted = self.to_kube_container(&c);
            entry(&mut pods, &l.pod_uid, &l.pod_name, &l.pod_namespace)
                .containers
                .push(converted);
        }
        pods.sort_by_key(|p| std::cmp::Reverse(p.created_at));
        Ok(pods)
    }

    /// `getSandboxIDByPodUID`: sandbox IDs of a pod, newest first.
    pub(crate) async fn sandbox_ids_by_pod_uid(
        &self,
        uid: &str,
    ) -> Result<Vec<String>, RuntimeError> {
        let filter = PodSandboxFilter {
            label_selector: pod_uid_selector(uid),
            ..PodSandboxFilter::default()
        };
        let mut sandboxes = self
            .runtime
            .list_pod_sandbox(Some(&filter))
            .await
            .map_err(cri_err)?;
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        Ok(sandboxes.into_iter().map(|s| s.id).collect())
    }

    /// `GetPodStatus`.
    pub async fn get_pod_status_impl(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError> {
        let mut status = PodStatus::empty(uid, name, namespace);
        for (idx, id) in self.sandbox_ids_by_pod_uid(uid).await?.iter().enumerate() {
            let resp = match self.runtime.pod_sandbox_status(id, false).await {
                Err(e) if e.is_not_found() => continue,
                r => r.map_err(cri_err)?,
            };
            let Some(s) = resp.status else {
                return Err(RuntimeError::Invalid("pod sandbox status is nil".into()));
            };
            let converted = to_sandbox_status(&s);
            if idx == 0 && converted.state == SandboxState::Ready {
                status.ips = std::iter::once(converted.ip.clone())
                    .filter(|ip| !ip.is_empty())
                    .chain(converted.additional_ips.iter().cloned())
                    .collect();
            }
            status.sandbox_statuses.push(converted);
        }
        status.container_statuses = self.pod_container_statuses(uid).await?;
        status.timestamp = Some(jiff::Timestamp::now());
        Ok(status)
    }

    /// `getPodContainerStatuses`, newest first.
    pub(crate) async fn pod_container_statuses(
        &self,
        uid: &str,
    ) -> Result<Vec<kubelet_container::Status>, RuntimeError> {
        let filter = ContainerFilter {
            label_selector: pod_uid_selector(uid),
            ..ContainerFilter::default()
        };
        let containers = self
            .runtime
            .list_containers(Some(&filter))
            .await
            .map_err(cri_err)?;
        let mut statuses = Vec::with_capacity(containers.len());
        for c in containers {
            let resp = match self.runtime.container_status(&c.id, false).await {
                Err(e) if e.is_not_found() => continue,
                r => r.map_err(cri_err)?,
            };
            let Some(s) = resp.status else {
                return Err(RuntimeError::Invalid("container status is nil".into()));
            };
            let mut status = to_kube_container_status(self.os.as_ref(), &self.runtime_name, &s);
            status.resources = crate::resize::fill_from_actuated(
                crate::resize::to_kube_container_resources(s.resources.as_ref()),
                self.actuated
                    .get_container_resources(uid, &status.name)
                    .as_ref(),
            );
            statuses.push(status);
        }
        sort_newest_first(&mut statuses);
        Ok(statuses)
    }
}

/// CRI sandbox status → runtime-neutral.
pub fn to_sandbox_status(s: &PodSandboxStatus) -> SandboxStatus {
    let m = s.metadata.clone().unwrap_or_default();
    let network = s.network.clone().unwrap_or_default();
    let host_network = s
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == NamespaceMode::Node as i32);
    SandboxStatus {
        id: s.id.clone(),
        name: m.name,
        uid: m.uid,
        namespace: m.namespace,
        attempt: m.attempt,
        state: if s.state == PodSandboxState::SandboxReady as i32 {
            SandboxState::Ready
        } else {
            SandboxState::NotReady
        },
        created_at: (s.created_at != 0)
            .then(|| jiff::Timestamp::from_nanosecond(i128::from(s.created_at)).ok())
            .flatten(),
        ip: network.ip,
        additional_ips: network.additional_ips.into_iter().map(|i| i.ip).collect(),
        host_network,
    }
}
