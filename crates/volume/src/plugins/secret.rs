//! The `secret` volume's payload (upstream `pkg/volume/secret/secret.go` `MakePayload`).

use k8s_openapi::api::core::v1::{KeyToPath, Secret};

use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;
use crate::objects::{ObjectError, VolumeObjects};

/// `SetUpAt`'s read of Secret `namespace/name` (missing and `optional`: an empty one), then
/// [`make_payload`].
pub async fn read_and_make_payload(
    objects: &dyn VolumeObjects,
    namespace: &str,
    name: &str,
    items: &[KeyToPath],
    default_mode: i32,
    optional: bool,
) -> Result<Payload, VolumeError> {
    let secret = match objects.get_secret(namespace, name).await {
        Ok(secret) => secret,
        Err(ObjectError::NotFound { .. }) if optional => Secret::default(),
        Err(e) => {
            tracing::error!("Couldn't get secret {namespace}/{name}: {e}");
            return Err(e.into());
        }
    };
    make_payload(items, &secret, default_mode, optional)
}

/// `MakePayload`: every key of `data` with `default_mode`, or only the `items` (with their
/// `mode`); a missing item key is an error unless `optional`.
pub fn make_payload(
    items: &[KeyToPath],
    secret: &Secret,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, VolumeError> {
    let data = secret.data.as_ref();
    let file = |data: Vec<u8>, mode: i32| FileProjection {
        data,
        mode: super::mode_bits(mode),
        fs_user: None,
    };
    let mut payload = Payload::new();
    if items.is_empty() {
        for (name, v) in data.into_iter().flatten() {
            payload.insert(name.clone(), file(v.0.clone(), default_mode));
        }
        return Ok(payload);
    }
    for ktp in items {
        let Some(content) = data.and_then(|d| d.get(&ktp.key)) else {
            if optional {
                continue;
            }
            let msg = format!("references non-existent secret key: {}", ktp.key);
            tracing::error!("{msg}");
            return Err(VolumeError::Payload(msg));
        };
        payload.insert(
            ktp.path.clone(),
            file(content.0.clone(), ktp.mode.unwrap_or(default_mode)),
        );
    }
    Ok(payload)
}
