//! Serving CRI implementations over a unix socket with tonic: adapters from the
//! [`RuntimeService`] / [`ImageService`] traits to the generated gRPC servers, and [`serve`],
//! which the fake CRI server (`crate::fake::serve_fake`) and in-process tests use
//! (upstream: `k8s.io/cri-client/pkg/fake/fake_runtime.go` `RemoteRuntime.Start`).

mod image_adapter;
mod runtime_adapter;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;

use crate::error::{CriError, CriResult};
use crate::remote::MAX_MSG_SIZE;
use crate::services::{ImageService, RuntimeService};
use crate::v1::image_service_server::ImageServiceServer;
use crate::v1::runtime_service_server::RuntimeServiceServer;

pub use image_adapter::ImageServiceAdapter;
pub use runtime_adapter::RuntimeServiceAdapter;

/// A running CRI server. Dropping it stops the server (without waiting).
#[derive(Debug)]
pub struct CriServerHandle {
    path: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl CriServerHandle {
    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The endpoint to give a client: `unix://<path>`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// Stops the server, waits for it to finish and removes the socket file.
    pub async fn shutdown(mut self) -> CriResult<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let serve_err = |reason: String| CriError::Serve {
            path: self.path.display().to_string(),
            reason,
        };
        if let Some(task) = self.task.take() {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(serve_err(crate::error::error_chain(&e))),
                Err(e) => return Err(serve_err(e.to_string())),
            }
        }
        remove_stale_socket(&self.path)
    }
}

impl Drop for CriServerHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn remove_stale_socket(path: &Path) -> CriResult<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CriError::Serve {
            path: path.display().to_string(),
            reason: format!("failed to unlink socket file: {e}"),
        }),
    }
}

/// Serves `runtime` and `image` on the unix socket `socket_path` (a stale socket file is
/// unlinked first) with 16 MiB message limits. Must be called inside a tokio runtime.
pub async fn serve(
    socket_path: &Path,
    runtime: Arc<dyn RuntimeService>,
    image: Arc<dyn ImageService>,
) -> CriResult<CriServerHandle> {
    remove_stale_socket(socket_path)?;
    let listener = UnixListener::bind(socket_path).map_err(|e| CriError::Serve {
        path: socket_path.display().to_string(),
        reason: format!("failed to listen: {e}"),
    })?;
    let runtime = RuntimeServiceServer::new(RuntimeServiceAdapter::new(runtime))
        .max_decoding_message_size(MAX_MSG_SIZE)
        .max_encoding_message_size(MAX_MSG_SIZE);
    let image = ImageServiceServer::new(ImageServiceAdapter::new(image))
        .max_decoding_message_size(MAX_MSG_SIZE)
        .max_encoding_message_size(MAX_MSG_SIZE);
    let (tx, rx) = oneshot::channel::<()>();
    let incoming = UnixListenerStream::new(listener);
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(runtime)
            .add_service(image)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = rx.await;
            }),
    );
    Ok(CriServerHandle {
        path: socket_path.to_owned(),
        shutdown: Some(tx),
        task: Some(task),
    })
}
