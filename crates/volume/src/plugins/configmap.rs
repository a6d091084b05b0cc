//! The `configMap` volume's payload (upstream `pkg/volume/configmap/configmap.go`
//! `MakePayload`).

use k8s_openapi::api::core::v1::{ConfigMap, KeyToPath};

use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;
use crate::objects::{ObjectError, VolumeObjects};

/// `SetUpAt`'s read of ConfigMap `namespace/name` (missing and `optional`: an empty one),
/// then [`make_payload`].
pub async fn read_and_make_payload(
    objects: &dyn VolumeObjects,
    namespace: &str,
    name: &str,
    items: &[KeyToPath],
    default_mode: i32,
    optional: bool,
) -> Result<Payload, VolumeError> {
    let config_map = match objects.get_config_map(namespace, name).await {
        Ok(cm) => cm,
        Err(ObjectError::NotFound { .. }) if optional => ConfigMap::default(),
        Err(e) => {
            tracing::error!("Couldn't get configMap {namespace}/{name}: {e}");
            return Err(e.into());
        }
    };
    make_payload(items, &config_map, default_mode, optional)
}

/// `MakePayload`: every key of `data` and `binaryData` with `default_mode`, or only the
/// `items` (with their `mode`); a missing item key is an error unless `optional`.
pub fn make_payload(
    items: &[KeyToPath],
    config_map: &ConfigMap,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, VolumeError> {
    let data = config_map.data.as_ref();
    let binary = config_map.binary_data.as_ref();
    let mut payload = Payload::new();
    let file = |data: Vec<u8>, mode: i32| FileProjection {
        data,
        mode: super::mode_bits(mode),
        fs_user: None,
    };
    if items.is_empty() {
        for (name, v) in data.into_iter().flatten() {
            payload.insert(name.clone(), file(v.clone().into_bytes(), default_mode));
        }
        for (name, v) in binary.into_iter().flatten() {
            payload.insert(name.clone(), file(v.0.clone(), default_mode));
        }
        return Ok(payload);
    }
    for ktp in items {
        let content = if let Some(s) = data.and_then(|d| d.get(&ktp.key)) {
            s.clone().into_bytes()
        } else if let Some(b) = binary.and_then(|d| d.get(&ktp.key)) {
            b.0.clone()
        } else if optional {
            continue;
        } else {
            return Err(VolumeError::Payload(format!(
                "configmap references non-existent config key: {}",
                ktp.key
            )));
        };
        payload.insert(
            ktp.path.clone(),
            file(content, ktp.mode.unwrap_or(default_mode)),
        );
    }
    Ok(payload)
}
