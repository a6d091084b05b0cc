//! The `secret` volume's payload (upstream `pkg/volume/secret/secret.go` `MakePayload`).

use k8s_openapi::api::core::v1::{KeyToPath, Secret};

use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;

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
