//! Recording CRI fakes for tests (feature `fake`): [`FakeRuntimeService`] and
//! [`FakeImageService`] (upstream `k8s.io/cri-api/pkg/apis/testing`), and [`serve_fake`], which
//! serves them on a unix socket (upstream `k8s.io/cri-client/pkg/fake`) so the remote clients,
//! or a whole kubelet, can be tested in-process against a socket.

mod builders;
mod calls;
mod image;
mod runtime;
mod runtime_exec_stats;
mod runtime_impl;
mod runtime_state;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

pub use builders::{container_config, sandbox_config};
pub use calls::{FAKE_ENDPOINT, FakeCalls};
pub use image::{
    FAKE_IMAGE_SIZE, FakeImageService, FakeImageState, PulledImage, fake_image, fake_image_id,
    normalize_image_ref,
};
pub use runtime::FakeRuntimeService;
pub use runtime_state::{
    ExecSyncHandler, FAKE_POD_SANDBOX_IP, FAKE_RUNTIME_NAME, FAKE_STREAMING_URL, FAKE_VERSION,
    FakeContainer, FakePodSandbox, FakeRuntimeState, build_container_name, build_sandbox_name,
    fake_container_user,
};

use crate::error::CriResult;
use crate::server::{CriServerHandle, serve};

/// A fake CRI server on a unix socket, with the fakes behind it.
#[derive(Debug)]
pub struct FakeCriServer {
    /// The runtime fake the server answers from.
    pub runtime: Arc<FakeRuntimeService>,
    /// The image fake the server answers from.
    pub image: Arc<FakeImageService>,
    /// The server; dropping it stops the server.
    pub handle: CriServerHandle,
}

impl std::fmt::Debug for FakeRuntimeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeRuntimeService").finish_non_exhaustive()
    }
}

impl FakeCriServer {
    /// The endpoint to give a client: `unix://<socket>`.
    pub fn endpoint(&self) -> String {
        self.handle.endpoint()
    }

    /// Stops the server and removes the socket.
    pub async fn shutdown(self) -> CriResult<()> {
        self.handle.shutdown().await
    }
}

/// Serves a new empty [`FakeRuntimeService`] and [`FakeImageService`] on `socket_path`.
pub async fn serve_fake(socket_path: &Path) -> CriResult<FakeCriServer> {
    let runtime = Arc::new(FakeRuntimeService::new());
    let image = Arc::new(FakeImageService::new());
    serve_fakes(socket_path, runtime, image).await
}

/// Serves the given fakes on `socket_path`.
pub async fn serve_fakes(
    socket_path: &Path,
    runtime: Arc<FakeRuntimeService>,
    image: Arc<FakeImageService>,
) -> CriResult<FakeCriServer> {
    let handle = serve(socket_path, runtime.clone(), image.clone()).await?;
    Ok(FakeCriServer {
        runtime,
        image,
        handle,
    })
}
