//! Recording in-memory CRI image service, mirroring `FakeImageService` of
//! `k8s.io/cri-api/pkg/apis/testing/fake_image_service.go`.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use crate::error::{CriError, CriResult};
use crate::fake::calls::{FakeCalls, settle};
use crate::services::ImageService;
use crate::v1::{
    AuthConfig, FilesystemIdentifier, FilesystemUsage, Image, ImageFilter, ImageFsInfoResponse,
    ImageSpec, ImageStatusResponse, PodSandboxConfig, UInt64Value,
};

/// Size the fake gives images it creates (ImageStatus requires a non-zero size).
pub const FAKE_IMAGE_SIZE: u64 = 4 * 1024 * 1024;

/// One recorded PullImage call.
#[derive(Clone, Debug, PartialEq)]
pub struct PulledImage {
    /// The image requested.
    pub image: ImageSpec,
    /// Credentials passed.
    pub auth: Option<AuthConfig>,
    /// Sandbox config passed.
    pub sandbox_config: Option<PodSandboxConfig>,
}

/// Everything the fake image service holds.
#[derive(Debug, Default)]
pub struct FakeImageState {
    /// Call log, injected errors, unimplemented methods and delays.
    pub calls: FakeCalls,
    /// Images by ID.
    pub images: BTreeMap<String, Image>,
    /// Every PullImage call, in order.
    pub pulled: Vec<PulledImage>,
    /// Answer of ImageFsInfo; `None` answers one image filesystem with the images' total size.
    pub fs_info: Option<ImageFsInfoResponse>,
}

/// Recording fake [`ImageService`].
#[derive(Debug, Default)]
pub struct FakeImageService {
    state: Mutex<FakeImageState>,
}

/// Docker-style normalisation: `busybox` → `docker.io/library/busybox:latest`.
pub fn normalize_image_ref(reference: &str) -> String {
    if reference.starts_with("sha256:") {
        return reference.to_owned();
    }
    let (name, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (reference, None),
    };
    let first = name.split('/').next().unwrap_or_default();
    let has_domain =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = match (has_domain, name.contains('/')) {
        (true, _) => name.to_owned(),
        (false, true) => format!("docker.io/{name}"),
        (false, false) => format!("docker.io/library/{name}"),
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    match digest {
        Some(d) => format!("{full}@{d}"),
        None => {
            if !last.contains(':') {
                full.push_str(":latest");
            }
            full
        }
    }
}

/// The ID the fake gives an image: `sha256:` + sha256 of its normalised reference.
pub fn fake_image_id(reference: &str) -> String {
    let digest = Sha256::digest(normalize_image_ref(reference).as_bytes());
    format!("sha256:{}", hex::encode(digest))
}

/// An image as the fake creates it for `reference`.
pub fn fake_image(reference: &str) -> Image {
    Image {
        id: fake_image_id(reference),
        repo_tags: vec![normalize_image_ref(reference)],
        size: FAKE_IMAGE_SIZE,
        spec: Some(ImageSpec {
            image: normalize_image_ref(reference),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn image_matches(image: &Image, reference: &str) -> bool {
    let wanted = normalize_image_ref(reference);
    image.id == reference
        || image
            .repo_tags
            .iter()
            .any(|t| normalize_image_ref(t) == wanted)
        || image
            .repo_digests
            .iter()
            .any(|d| normalize_image_ref(d) == wanted)
}

impl FakeImageService {
    /// An empty image store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, FakeImageState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the whole state.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut FakeImageState) -> R) -> R {
        f(&mut self.lock())
    }

    /// Adds an image per reference (upstream `SetFakeImages`).
    pub fn set_fake_images(&self, references: &[&str]) {
        let mut st = self.lock();
        for r in references {
            let image = fake_image(r);
            st.images.insert(image.id.clone(), image);
        }
    }

    /// Adds one image as given.
    pub fn add_image(&self, image: Image) {
        self.lock().images.insert(image.id.clone(), image);
    }

    /// Snapshot of the images.
    pub fn images(&self) -> Vec<Image> {
        self.lock().images.values().cloned().collect()
    }

    /// Every PullImage call so far.
    pub fn pulled(&self) -> Vec<PulledImage> {
        self.lock().pulled.clone()
    }

    /// CRI method names called so far, in order.
    pub fn called(&self) -> Vec<String> {
        self.lock().calls.called.clone()
    }

    /// Calls dropped before they answered (see [`crate::fake::FakeCalls::abandoned`]).
    pub fn abandoned(&self) -> Vec<String> {
        self.lock().calls.abandoned()
    }

    /// Queues `err` as the answer of the next call of `method`.
    pub fn inject_error(&self, method: &str, err: CriError) {
        self.lock().calls.inject_error(method, err);
    }

    /// Makes `method` sleep `delay` before answering.
    pub fn set_delay(&self, method: &str, delay: Duration) {
        self.lock().calls.delays.insert(method.to_owned(), delay);
    }

    async fn begin(&self, method: &'static str) -> CriResult<()> {
        let begun = self.lock().calls.begin(method);
        settle(begun).await
    }
}

#[async_trait]
impl ImageService for FakeImageService {
    async fn list_images(&self, filter: Option<&ImageFilter>) -> CriResult<Vec<Image>> {
        self.begin("ListImages").await?;
        let wanted = filter
            .and_then(|f| f.image.as_ref())
            .map(|s| s.image.as_str());
        let st = self.lock();
        let selected = st
            .images
            .values()
            .filter(|i| wanted.is_none_or(|w| image_matches(i, w)));
        Ok(selected.cloned().collect())
    }

    async fn image_status(
        &self,
        image: &ImageSpec,
        _verbose: bool,
    ) -> CriResult<ImageStatusResponse> {
        self.begin("ImageStatus").await?;
        let st = self.lock();
        let found = st
            .images
            .values()
            .find(|i| image_matches(i, &image.image))
            .cloned();
        Ok(ImageStatusResponse {
            image: found,
            ..Default::default()
        })
    }

    async fn pull_image(
        &self,
        image: &ImageSpec,
        auth: Option<&AuthConfig>,
        sandbox_config: Option<&PodSandboxConfig>,
    ) -> CriResult<String> {
        self.begin("PullImage").await?;
        let mut st = self.lock();
        st.pulled.push(PulledImage {
            image: image.clone(),
            auth: auth.cloned(),
            sandbox_config: sandbox_config.cloned(),
        });
        if let Some(existing) = st.images.values().find(|i| image_matches(i, &image.image)) {
            return Ok(existing.id.clone());
        }
        let new = fake_image(&image.image);
        let id = new.id.clone();
        st.images.insert(id.clone(), new);
        Ok(id)
    }

    async fn remove_image(&self, image: &ImageSpec) -> CriResult<()> {
        self.begin("RemoveImage").await?;
        let mut st = self.lock();
        st.images.retain(|_, i| !image_matches(i, &image.image));
        Ok(())
    }

    async fn image_fs_info(&self) -> CriResult<ImageFsInfoResponse> {
        self.begin("ImageFsInfo").await?;
        let st = self.lock();
        if let Some(info) = &st.fs_info {
            return Ok(info.clone());
        }
        let used: u64 = st.images.values().map(|i| i.size).sum();
        let fs = FilesystemUsage {
            timestamp: crate::fake::runtime_state::now_nanos(),
            fs_id: Some(FilesystemIdentifier {
                mountpoint: "/var/lib/fake-cri/images".into(),
            }),
            used_bytes: Some(UInt64Value { value: used }),
            inodes_used: Some(UInt64Value {
                value: u64::try_from(st.images.len()).unwrap_or(u64::MAX),
            }),
        };
        Ok(ImageFsInfoResponse {
            image_filesystems: vec![fs],
            container_filesystems: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_docker() {
        assert_eq!(
            normalize_image_ref("busybox"),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            normalize_image_ref("busybox:1.36"),
            "docker.io/library/busybox:1.36"
        );
        assert_eq!(normalize_image_ref("foo/bar"), "docker.io/foo/bar:latest");
        assert_eq!(
            normalize_image_ref("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(
            normalize_image_ref("localhost:5000/x"),
            "localhost:5000/x:latest"
        );
        assert_eq!(
            normalize_image_ref("a/b@sha256:00"),
            "docker.io/a/b@sha256:00"
        );
    }

    #[test]
    fn ids_are_stable_sha256() {
        let id = fake_image_id("busybox");
        assert_eq!(id, fake_image_id("docker.io/library/busybox:latest"));
        assert_eq!(id.len(), "sha256:".len() + 64);
    }
}
