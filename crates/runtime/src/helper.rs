//! What the runtime manager asks the kubelet while building CRI configs (upstream
//! `kubecontainer.RuntimeHelper`, implemented by the Kubelet in `kubelet_pods.go`:
//! `GenerateRunContainerOptions`, `GetPodDNS`, `GetPodCgroupParent`,
//! `GeneratePodHostNameAndDomain`, `GetExtraSupplementalGroupsForPod`).
//!
//! [`KubeletRuntimeHelper`] is the implementation: environment, volume mounts, the managed
//! `/etc/hosts`, the termination-log directory, DNS and cgroup parents.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, Volume};
use kubelet_container::is_host_network_pod;
use kubelet_cri::v1::{DnsConfig, ImageSpec, MountPropagation};

use crate::cgroup::PodCgroupNamer;
use crate::dns::{DnsConfigurer, pod_hostname_and_domain};
use crate::env::{EnvFiles, EnvObjects, NodeEnvInfo, make_environment_variables};
use crate::error::RuntimeManagerError;
use crate::expansion::expand;
use crate::hosts::{ETC_HOSTS_PATH, ensure_hosts_file};
use crate::os::OsInterface;
use crate::subpath::Subpath;
use crate::volumes::VolumeHost;

/// A bind mount for a container (upstream `kubecontainer.Mount`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mount {
    /// Volume name (informational).
    pub name: String,
    /// Path inside the container.
    pub container_path: String,
    /// Path on the host.
    pub host_path: PathBuf,
    /// Read-only bind.
    pub read_only: bool,
    /// Ask for SELinux relabeling.
    pub selinux_relabel: bool,
    /// CRI `MountPropagation` value.
    pub propagation: i32,
    /// The image of an image volume (`spec.volumes[*].image`): the runtime mounts it
    /// instead of `host_path`, which is empty then.
    pub image: Option<ImageSpec>,
    /// The subPath inside the image of an image volume (upstream `ImageSubPath`).
    pub image_sub_path: String,
}

/// The image specs of a container's image volumes, by volume name (upstream
/// `kubecontainer.ImageVolumes`).
pub type ImageVolumes = std::collections::HashMap<String, ImageSpec>;

/// Everything container creation needs from the kubelet (upstream `RunContainerOptions`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunContainerOptions {
    /// Final environment, in order.
    pub envs: Vec<(String, String)>,
    /// Bind mounts.
    pub mounts: Vec<Mount>,
    /// `<root>/pods/<uid>/containers/<name>` when a termination message path is set; the
    /// termination-log file is created there.
    pub pod_container_dir: Option<PathBuf>,
    /// Extra container annotations (device plugins).
    pub annotations: Vec<(String, String)>,
}

/// The kubelet side of container creation.
#[async_trait::async_trait]
pub trait RuntimeHelper: Send + Sync {
    /// `GenerateRunContainerOptions` (async: the environment reads ConfigMaps and Secrets
    /// through the kubelet's managers); `image_volumes` are the pulled images of the pod's
    /// image volumes the container mounts.
    async fn generate_run_container_options(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        image_volumes: &ImageVolumes,
    ) -> Result<RunContainerOptions, RuntimeManagerError>;
    /// `GetPodDNS`.
    fn get_pod_dns(&self, pod: &Pod) -> Result<DnsConfig, RuntimeManagerError>;
    /// `GetPodCgroupParent`.
    fn get_pod_cgroup_parent(&self, pod: &Pod) -> String;
    /// `GeneratePodHostNameAndDomain`.
    fn generate_pod_hostname_and_domain(
        &self,
        pod: &Pod,
    ) -> Result<(String, String), RuntimeManagerError>;
    /// `GetExtraSupplementalGroupsForPod` (volume GIDs).
    fn get_extra_supplemental_groups_for_pod(&self, _pod: &Pod) -> Vec<i64> {
        Vec::new()
    }
}

/// `kubecontainer.ExpandContainerVolumeMounts`: `subPathExpr` with `$(VAR)` replaced from
/// the container's environment; a reference to an unset or empty variable is an error.
pub fn expand_container_volume_mounts(
    expr: &str,
    envs: &[(String, String)],
) -> Result<String, RuntimeManagerError> {
    let map: std::collections::HashMap<&str, &str> =
        envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let missing = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let expanded = expand(expr, &|key: &str| {
        let value = map.get(key).copied().unwrap_or_default();
        if value.is_empty() {
            missing.borrow_mut().insert(key.to_string());
        }
        value.to_string()
    });
    let missing = missing.into_inner();
    if !missing.is_empty() {
        return Err(RuntimeManagerError::InvalidPod(format!(
            "missing value for {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(expanded)
}

/// The kubelet's [`RuntimeHelper`].
pub struct KubeletRuntimeHelper {
    /// Filesystem.
    pub os: Arc<dyn OsInterface>,
    /// `--root-dir` (`/var/lib/kubelet`).
    pub root_dir: PathBuf,
    /// DNS settings.
    pub dns: DnsConfigurer,
    /// Pod cgroup names.
    pub cgroups: PodCgroupNamer,
    /// Downward-API node facts.
    pub node: NodeEnvInfo,
    /// ConfigMaps/Secrets for env.
    pub env_objects: Arc<dyn EnvObjects>,
    /// Volume paths.
    pub volumes: Arc<dyn VolumeHost>,
    /// The node's hosts file, copied for host-network pods (`/etc/hosts`).
    pub node_hosts_file: PathBuf,
    /// Feature gate `EnvFiles` (`env[*].valueFrom.fileKeyRef`).
    pub env_files: bool,
    /// Feature gate `HostnameOverride` (`spec.hostnameOverride`).
    pub hostname_override: bool,
}

impl KubeletRuntimeHelper {
    /// `<root>/pods/<uid>`.
    pub fn pod_dir(&self, pod: &Pod) -> PathBuf {
        self.root_dir
            .join("pods")
            .join(pod.metadata.uid.as_deref().unwrap_or_default())
    }

    fn io(what: &str, path: &Path, source: std::io::Error) -> RuntimeManagerError {
        RuntimeManagerError::Io {
            what: what.to_string(),
            path: path.to_path_buf(),
            source,
        }
    }

    /// The subPath part of `makeMounts`: creates a missing subPath directory inside the
    /// volume (`SafeMakeDir`, with the volume root's mode) and returns the bind-mounted
    /// target of the safely opened subPath (`PrepareSafeSubpath`), which is what the runtime
    /// gets. Details of a failure are logged, not returned: they may describe the host.
    fn prepare_sub_path(
        &self,
        pod: &Pod,
        container: &Container,
        index: usize,
        volume: &Volume,
        volume_path: PathBuf,
        sub_path: &str,
    ) -> Result<PathBuf, RuntimeManagerError> {
        let host_path = volume_path.join(sub_path);
        if !self.os.exists(&host_path) {
            // Created now with the volume's mode (an fsGroup needs g+rwx), never outside it.
            let perm = self
                .os
                .get_mode(&volume_path)
                .map_err(|e| Self::io("stat volume", &volume_path, e))?;
            if let Err(e) = self
                .os
                .safe_make_dir(Path::new(sub_path), &volume_path, perm)
            {
                tracing::error!(error = %e, container_name = %container.name, volume_mount_name = %volume.name, "Failed to create subPath directory for volumeMount of the container");
                return Err(RuntimeManagerError::InvalidPod(format!(
                    "failed to create subPath directory for volumeMount {:?} of container {:?}",
                    volume.name, container.name
                )));
            }
        }
        let subpath = Subpath {
            volume_mount_index: index,
            path: host_path,
            volume_name: volume.name.clone(),
            volume_path,
            pod_dir: self.pod_dir(pod),
            container_name: container.name.clone(),
        };
        self.os.prepare_safe_subpath(&subpath).map_err(|e| {
            tracing::error!(error = %e, container_name = %container.name, volume_mount_name = %volume.name, "Failed to prepare subPath for volumeMount of the container");
            RuntimeManagerError::InvalidPod(format!(
                "failed to prepare subPath for volumeMount {:?} of container {:?}",
                volume.name, container.name
            ))
        })
    }

    /// `makeMounts`: volume mounts, then `/etc/hosts` unless the container mounts its own or
    /// the pod IP is not known yet. A mount of an image volume (in `image_volumes`, gate
    /// `ImageVolume`) has no host path: it carries the image and the subPath inside it for
    /// the runtime, and is read-only (the image plugin's `ReadOnly` attribute).
    fn make_mounts(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        envs: &[(String, String)],
        image_volumes: &ImageVolumes,
    ) -> Result<Vec<Mount>, RuntimeManagerError> {
        let volumes = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default();
        let mut mounts = Vec::new();
        let mut mount_etc_hosts = !pod_ips.is_empty();
        for (i, vm) in container.volume_mounts.iter().flatten().enumerate() {
            if vm.mount_path == ETC_HOSTS_PATH {
                mount_etc_hosts = false;
            }
            let volume = volumes.iter().find(|v| v.name == vm.name).ok_or_else(|| {
                RuntimeManagerError::InvalidPod(format!(
                    "cannot find volume {:?} to mount into container {:?}",
                    vm.name, container.name
                ))
            })?;
            let mut sub_path = vm.sub_path.clone().unwrap_or_default();
            if let Some(expr) = vm.sub_path_expr.as_deref().filter(|e| !e.is_empty()) {
                sub_path = expand_container_volume_mounts(expr, envs)?;
            }
            if !sub_path.is_empty() {
                if Path::new(&sub_path).is_absolute() {
                    return Err(RuntimeManagerError::InvalidPod(format!(
                        "error SubPath `{sub_path}` must not be an absolute path"
                    )));
                }
                if sub_path.split('/').any(|c| c == "..") {
                    return Err(RuntimeManagerError::InvalidPod(format!(
                        "unable to provision SubPath `{sub_path}`: must not contain '..'"
                    )));
                }
            }
            let propagation = match vm.mount_propagation.as_deref() {
                Some("HostToContainer") => MountPropagation::PropagationHostToContainer,
                Some("Bidirectional") => MountPropagation::PropagationBidirectional,
                _ => MountPropagation::PropagationPrivate,
            };
            let image = image_volumes
                .get(&vm.name)
                .filter(|_| kubelet_container::gates::image_volume());
            if let Some(image) = image {
                // `pkg/volume/image`: no host path, `ReadOnly: true, Managed: false,
                // SELinuxRelabel: false`.
                mounts.push(Mount {
                    name: vm.name.clone(),
                    container_path: vm.mount_path.clone(),
                    host_path: PathBuf::new(),
                    read_only: true,
                    selinux_relabel: false,
                    propagation: propagation as i32,
                    image: Some(image.clone()),
                    image_sub_path: sub_path,
                });
                continue;
            }
            let mut host_path = self.volumes.volume_path(pod, volume)?;
            let attributes = self.volumes.attributes(volume);
            if !sub_path.is_empty() {
                host_path =
                    self.prepare_sub_path(pod, container, i, volume, host_path, &sub_path)?;
            }
            mounts.push(Mount {
                name: vm.name.clone(),
                container_path: vm.mount_path.clone(),
                host_path,
                read_only: vm.read_only.unwrap_or(false) || attributes.read_only,
                // upstream: `Managed && SELinuxRelabel` (its "labeled once" mark is set on a
                // copy, so every mount of such a volume asks for the relabel).
                selinux_relabel: attributes.managed && attributes.selinux_relabel,
                propagation: propagation as i32,
                ..Mount::default()
            });
        }
        if mount_etc_hosts {
            let (hostname, domain) = self.generate_pod_hostname_and_domain(pod)?;
            let aliases = pod
                .spec
                .as_ref()
                .and_then(|s| s.host_aliases.as_deref())
                .unwrap_or_default();
            let path = ensure_hosts_file(
                self.os.as_ref(),
                &self.pod_dir(pod),
                pod_ips,
                &hostname,
                &domain,
                aliases,
                is_host_network_pod(pod),
                &self.node_hosts_file,
            )?;
            mounts.push(Mount {
                name: "k8s-managed-etc-hosts".into(),
                container_path: ETC_HOSTS_PATH.into(),
                host_path: path,
                read_only: false,
                selinux_relabel: true,
                propagation: MountPropagation::PropagationPrivate as i32,
                ..Mount::default()
            });
        }
        Ok(mounts)
    }
}

#[async_trait::async_trait]
impl RuntimeHelper for KubeletRuntimeHelper {
    async fn generate_run_container_options(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        image_volumes: &ImageVolumes,
    ) -> Result<RunContainerOptions, RuntimeManagerError> {
        let envs = make_environment_variables(
            pod,
            container,
            pod_ips,
            &self.node,
            self.env_objects.as_ref(),
            self.env_files.then(|| EnvFiles {
                os: self.os.as_ref(),
                volumes: self.volumes.as_ref(),
            }),
        )
        .await?;
        let mounts = self.make_mounts(pod, container, pod_ips, &envs, image_volumes)?;
        let mut pod_container_dir = None;
        if container
            .termination_message_path
            .as_deref()
            .is_some_and(|p| !p.is_empty())
        {
            let dir = self.pod_dir(pod).join("containers").join(&container.name);
            match self.os.mkdir_all(&dir) {
                Ok(()) => pod_container_dir = Some(dir),
                Err(e) => {
                    tracing::error!(path = %dir.display(), error = %e, "Error on creating dir")
                }
            }
        }
        Ok(RunContainerOptions {
            envs,
            mounts,
            pod_container_dir,
            annotations: Vec::new(),
        })
    }

    fn get_pod_dns(&self, pod: &Pod) -> Result<DnsConfig, RuntimeManagerError> {
        self.dns.get_pod_dns(pod)
    }

    fn get_pod_cgroup_parent(&self, pod: &Pod) -> String {
        self.cgroups.pod_cgroup_parent(pod)
    }

    fn generate_pod_hostname_and_domain(
        &self,
        pod: &Pod,
    ) -> Result<(String, String), RuntimeManagerError> {
        pod_hostname_and_domain(pod, &self.dns.cluster_domain, self.hostname_override)
    }

    fn get_extra_supplemental_groups_for_pod(&self, _pod: &Pod) -> Vec<i64> {
        Vec::new()
    }
}
