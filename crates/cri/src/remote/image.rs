//! gRPC implementation of [`ImageService`], mirroring `k8s.io/cri-client/pkg/remote_image.go`
//! (`remoteImageService`): per-call deadline = runtimeRequestTimeout except PullImage.
//!
//! PullImage has no deadline, as upstream at v0.35.4 (`context.WithCancel`): a pull of a large
//! image may take longer than any fixed timeout. Kubernetes 1.35 has no pull progress deadline
//! either (`imagePullProgressDeadline` was a dockershim flag, removed with it in 1.24; no
//! feature gate replaces it). A pull ends when it completes, fails, or when the pod's sync is
//! cancelled: killing the pod drops the pod worker's `SyncPod` future, and with it this call
//! (tonic resets the HTTP/2 stream, as Go cancels the context).

use std::time::Duration;

use async_trait::async_trait;
use tonic::transport::Channel;

use crate::error::CriResult;
use crate::remote::conn::Conn;
use crate::services::ImageService;
use crate::v1::image_service_client::ImageServiceClient;
use crate::v1::{
    AuthConfig, Image, ImageFilter, ImageFsInfoRequest, ImageFsInfoResponse, ImageSpec,
    ImageStatusRequest, ImageStatusResponse, ListImagesRequest, PodSandboxConfig, PullImageRequest,
    RemoveImageRequest,
};

type Client = ImageServiceClient<Channel>;

/// CRI image service client over a unix socket (upstream `remoteImageService`).
#[derive(Clone, Debug)]
pub struct RemoteImageService {
    conn: Conn<Client>,
}

impl RemoteImageService {
    /// Connects to `endpoint` (`unix:///path` or a bare path). `timeout` bounds the connection
    /// and is the per-call deadline for every call but PullImage.
    pub async fn connect(endpoint: &str, timeout: Duration) -> CriResult<Self> {
        let conn = Conn::dial(endpoint, timeout).await?;
        Ok(RemoteImageService { conn })
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &str {
        &self.conn.endpoint
    }
}

#[async_trait]
impl ImageService for RemoteImageService {
    async fn list_images(&self, filter: Option<&ImageFilter>) -> CriResult<Vec<Image>> {
        let req = ListImagesRequest {
            filter: filter.cloned(),
        };
        let d = Some(self.conn.timeout);
        let resp = self
            .conn
            .call("ListImages", d, req, |mut c, r| async move {
                c.list_images(r).await
            })
            .await?;
        Ok(resp.images)
    }

    async fn image_status(
        &self,
        image: &ImageSpec,
        verbose: bool,
    ) -> CriResult<ImageStatusResponse> {
        let req = ImageStatusRequest {
            image: Some(image.clone()),
            verbose,
        };
        let d = Some(self.conn.timeout);
        let resp = self
            .conn
            .call("ImageStatus", d, req, |mut c, r| async move {
                c.image_status(r).await
            })
            .await?;
        if let Some(found) = &resp.image
            && (found.id.is_empty() || found.size == 0)
        {
            let reason = format!("Id or size of image {:?} is not set", image.image);
            return Err(self.conn.invalid("ImageStatus", reason));
        }
        Ok(resp)
    }

    async fn pull_image(
        &self,
        image: &ImageSpec,
        auth: Option<&AuthConfig>,
        sandbox_config: Option<&PodSandboxConfig>,
    ) -> CriResult<String> {
        let req = PullImageRequest {
            image: Some(image.clone()),
            auth: auth.cloned(),
            sandbox_config: sandbox_config.cloned(),
        };
        let resp = self
            .conn
            .call("PullImage", None, req, |mut c, r| async move {
                c.pull_image(r).await
            })
            .await?;
        if resp.image_ref.is_empty() {
            let reason = format!("imageRef of image {:?} is not set", image.image);
            return Err(self.conn.invalid("PullImage", reason));
        }
        Ok(resp.image_ref)
    }

    async fn remove_image(&self, image: &ImageSpec) -> CriResult<()> {
        let req = RemoveImageRequest {
            image: Some(image.clone()),
        };
        let d = Some(self.conn.timeout);
        self.conn
            .call("RemoveImage", d, req, |mut c, r| async move {
                c.remove_image(r).await
            })
            .await?;
        Ok(())
    }

    async fn image_fs_info(&self) -> CriResult<ImageFsInfoResponse> {
        let d = Some(self.conn.timeout);
        self.conn
            .call(
                "ImageFsInfo",
                d,
                ImageFsInfoRequest {},
                |mut c, r| async move { c.image_fs_info(r).await },
            )
            .await
    }
}
