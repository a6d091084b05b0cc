//! Runtime start-up steps of the kubelet: `PreInitRuntimeService` (`pkg/kubelet/kubelet.go`,
//! with the connection validation of `k8s.io/cri-client/pkg/remote_runtime.go` /
//! `remote_image.go`) and `getCgroupDriverFromCRI` (`cmd/kubelet/app/server.go`).

use std::future::Future;
use std::time::Duration;

use crate::error::{CriError, CriResult};
use crate::remote::endpoint::image_service_endpoint;
use crate::remote::{RemoteImageService, RemoteRuntimeService};
use crate::services::{ImageService, RuntimeService};
use crate::v1::{CgroupDriver, VersionResponse};

/// The only CRI API version the kubelet speaks.
pub const CRI_VERSION_V1: &str = "v1";

/// Attempts of RuntimeConfig in [`cgroup_driver_from_cri`].
pub const RUNTIME_CONFIG_ATTEMPTS: usize = 3;

/// Pause between RuntimeConfig attempts.
pub const RUNTIME_CONFIG_RETRY_DELAY: Duration = Duration::from_secs(2);

/// Connects the CRI runtime and image clients and validates both, like upstream
/// `PreInitRuntimeService` + `NewRemoteRuntimeService` / `NewRemoteImageService`:
///
/// * `image_endpoint` falls back to `runtime_endpoint` when empty;
/// * `timeout` (`runtimeRequestTimeout`) bounds the connection and every later call;
/// * the runtime must answer `Version` with all fields set and `runtime_api_version` `v1`;
/// * the image service must answer `ImageFsInfo`.
///
/// When nothing answers, the error names the endpoint:
/// `failed to connect to container runtime at unix:///x: ...`.
pub async fn pre_init_runtime_service(
    runtime_endpoint: &str,
    image_endpoint: &str,
    timeout: Duration,
) -> CriResult<(RemoteRuntimeService, RemoteImageService, VersionResponse)> {
    let image_endpoint = image_service_endpoint(runtime_endpoint, image_endpoint);
    let runtime = RemoteRuntimeService::connect(runtime_endpoint, timeout).await?;
    let version = validate_runtime_version(&runtime, runtime_endpoint).await?;
    tracing::info!(
        runtime_name = %version.runtime_name,
        runtime_version = %version.runtime_version,
        runtime_api_version = %version.runtime_api_version,
        "Validated CRI v1 runtime API"
    );
    let image = RemoteImageService::connect(image_endpoint, timeout).await?;
    image.image_fs_info().await?;
    tracing::info!(endpoint = image_endpoint, "Validated CRI v1 image API");
    Ok((runtime, image, version))
}

/// The Version handshake: the runtime must speak CRI v1.
pub async fn validate_runtime_version(
    runtime: &dyn RuntimeService,
    endpoint: &str,
) -> CriResult<VersionResponse> {
    let version = runtime.version(CRI_VERSION_V1).await?;
    if version.runtime_api_version != CRI_VERSION_V1 {
        return Err(CriError::UnsupportedApiVersion {
            endpoint: endpoint.to_owned(),
            version: version.runtime_api_version,
        });
    }
    Ok(version)
}

/// Where the cgroup driver chosen by [`cgroup_driver_from_cri`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupDriverSource {
    /// The runtime's RuntimeConfig answer.
    Runtime,
    /// The runtime does not implement RuntimeConfig: the configured driver is kept (upstream
    /// increments `kubelet_cri_losing_support{version="1.38.0"}` in this case).
    ConfigRuntimeUnimplemented,
    /// The runtime answered without a Linux section: the configured driver is kept.
    ConfigNoLinuxConfig,
}

/// The cgroup driver to use and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriCgroupDriver {
    /// `systemd` or `cgroupfs` (or the configured value when the runtime did not say).
    pub driver: String,
    /// Where it came from.
    pub source: CgroupDriverSource,
}

/// `getCgroupDriverFromCRI`: asks the runtime which cgroup driver it uses.
///
/// Calls RuntimeConfig up to 3 times, 2 s apart, on errors other than `Unimplemented`
/// (the runtime may still be starting). `Unimplemented` keeps `configured` right away.
/// `SYSTEMD` → `systemd`, `CGROUPFS` → `cgroupfs`, anything else is an error.
pub async fn cgroup_driver_from_cri(
    runtime: &dyn RuntimeService,
    configured: &str,
) -> CriResult<CriCgroupDriver> {
    cgroup_driver_from_cri_with_sleep(runtime, configured, tokio::time::sleep).await
}

/// [`cgroup_driver_from_cri`] with the pause between attempts injected (tests pass a recorder).
pub async fn cgroup_driver_from_cri_with_sleep<S, F>(
    runtime: &dyn RuntimeService,
    configured: &str,
    sleep: S,
) -> CriResult<CriCgroupDriver>
where
    S: Fn(Duration) -> F,
    F: Future<Output = ()>,
{
    let keep = |source| CriCgroupDriver {
        driver: configured.to_owned(),
        source,
    };
    let mut attempt = 1;
    let config = loop {
        match runtime.runtime_config().await {
            Ok(config) => break config,
            Err(e) if e.is_unimplemented() => {
                tracing::info!(
                    "CRI implementation should be updated to support RuntimeConfig. Falling back to using cgroupDriver from kubelet config."
                );
                return Ok(keep(CgroupDriverSource::ConfigRuntimeUnimplemented));
            }
            Err(e) if attempt >= RUNTIME_CONFIG_ATTEMPTS => return Err(e),
            Err(e) => {
                tracing::debug!(%e, attempt, "RuntimeConfig failed, retrying");
                sleep(RUNTIME_CONFIG_RETRY_DELAY).await;
                attempt += 1;
            }
        }
    };
    let Some(linux) = config.linux else {
        return Ok(keep(CgroupDriverSource::ConfigNoLinuxConfig));
    };
    let driver = match CgroupDriver::try_from(linux.cgroup_driver) {
        Ok(CgroupDriver::Systemd) => "systemd",
        Ok(CgroupDriver::Cgroupfs) => "cgroupfs",
        Err(_) => return Err(CriError::UnknownCgroupDriver(linux.cgroup_driver)),
    };
    tracing::info!(
        cgroup_driver = driver,
        "Using cgroup driver setting received from the CRI runtime"
    );
    Ok(CriCgroupDriver {
        driver: driver.to_owned(),
        source: CgroupDriverSource::Runtime,
    })
}

#[cfg(test)]
#[path = "preinit_tests.rs"]
mod tests;
