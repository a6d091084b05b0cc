//! Serves any [`ImageService`] as the gRPC `runtime.v1.ImageService`.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::server::runtime_adapter::reply;
use crate::services::ImageService;
use crate::v1::image_service_server::ImageService as GrpcImageService;
use crate::v1::{
    ImageFsInfoRequest, ImageFsInfoResponse, ImageStatusRequest, ImageStatusResponse,
    ListImagesRequest, ListImagesResponse, PullImageRequest, PullImageResponse, RemoveImageRequest,
    RemoveImageResponse,
};

/// Adapter from [`ImageService`] to the generated gRPC server trait.
#[derive(Clone)]
pub struct ImageServiceAdapter {
    inner: Arc<dyn ImageService>,
}

impl ImageServiceAdapter {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ImageService>) -> Self {
        ImageServiceAdapter { inner }
    }
}

type Res<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl GrpcImageService for ImageServiceAdapter {
    async fn list_images(&self, r: Request<ListImagesRequest>) -> Res<ListImagesResponse> {
        let filter = r.into_inner().filter;
        let images = self.inner.list_images(filter.as_ref()).await;
        reply(images.map(|images| ListImagesResponse { images }))
    }

    async fn image_status(&self, r: Request<ImageStatusRequest>) -> Res<ImageStatusResponse> {
        let r = r.into_inner();
        let spec = r.image.unwrap_or_default();
        reply(self.inner.image_status(&spec, r.verbose).await)
    }

    async fn pull_image(&self, r: Request<PullImageRequest>) -> Res<PullImageResponse> {
        let r = r.into_inner();
        let spec = r.image.unwrap_or_default();
        let image_ref = self
            .inner
            .pull_image(&spec, r.auth.as_ref(), r.sandbox_config.as_ref())
            .await;
        reply(image_ref.map(|image_ref| PullImageResponse { image_ref }))
    }

    async fn remove_image(&self, r: Request<RemoveImageRequest>) -> Res<RemoveImageResponse> {
        let spec = r.into_inner().image.unwrap_or_default();
        reply(
            self.inner
                .remove_image(&spec)
                .await
                .map(|()| RemoveImageResponse {}),
        )
    }

    async fn image_fs_info(&self, _r: Request<ImageFsInfoRequest>) -> Res<ImageFsInfoResponse> {
        reply(self.inner.image_fs_info().await)
    }
}
