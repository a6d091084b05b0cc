//! Registry credentials from `imagePullSecrets` (upstream `pkg/credentialprovider`
//! `BasicDockerKeyring` fed by `MakeDockerKeyring` over `kubernetes.io/dockerconfigjson` and
//! `kubernetes.io/dockercfg` secrets).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kubelet_cri::v1::AuthConfig;
use serde::Deserialize;

use crate::image_ref::ImageName;

#[derive(Deserialize, Default)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, DockerConfigEntry>,
}

#[derive(Deserialize, Default, Clone)]
struct DockerConfigEntry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
    #[serde(default, rename = "identitytoken")]
    identity_token: String,
    #[serde(default, rename = "registrytoken")]
    registry_token: String,
}

/// Normalizes a credential key: no scheme, no trailing `/v1/`, Docker Hub spelled `docker.io`.
fn normalize_key(key: &str) -> String {
    let k = key
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let k = k.trim_end_matches('/');
    let k = k
        .strip_suffix("/v1")
        .or_else(|| k.strip_suffix("/v2"))
        .unwrap_or(k);
    match k {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_string()
        }
        other => other.to_string(),
    }
}

/// Credentials matching `image`, most specific key first (`DockerKeyring.Lookup`).
pub fn lookup_credentials(secrets: &[Secret], image: &ImageName) -> Vec<AuthConfig> {
    let full = format!("{}/{}", image.domain, image.path);
    let mut found: Vec<(usize, AuthConfig)> = Vec::new();
    for secret in secrets {
        let Some(data) = secret.data.as_ref() else {
            continue;
        };
        let auths = match secret.type_.as_deref() {
            Some("kubernetes.io/dockerconfigjson") => data
                .get(".dockerconfigjson")
                .and_then(|b| serde_json::from_slice::<DockerConfigJson>(&b.0).ok())
                .map(|c| c.auths),
            Some("kubernetes.io/dockercfg") => data.get(".dockercfg").and_then(|b| {
                serde_json::from_slice::<BTreeMap<String, DockerConfigEntry>>(&b.0).ok()
            }),
            _ => None,
        };
        for (key, entry) in auths.into_iter().flatten() {
            let key = normalize_key(&key);
            let matches =
                full == key || full.starts_with(&format!("{key}/")) || key == image.domain;
            if matches {
                found.push((
                    key.len(),
                    AuthConfig {
                        username: entry.username,
                        password: entry.password,
                        auth: entry.auth,
                        server_address: key,
                        identity_token: entry.identity_token,
                        registry_token: entry.registry_token,
                    },
                ));
            }
        }
    }
    found.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
    found.into_iter().map(|(_, a)| a).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::image_ref::parse_image_name;
    use k8s_openapi::ByteString;

    #[test]
    fn matches_registry_and_path() {
        let json = r#"{"auths":{"https://index.docker.io/v1/":{"auth":"aHViOnB3"},"registry.local:5000/team":{"username":"u","password":"p"}}}"#;
        let secret = Secret {
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(
                [(
                    ".dockerconfigjson".to_string(),
                    ByteString(json.as_bytes().to_vec()),
                )]
                .into(),
            ),
            ..Default::default()
        };
        let hub = lookup_credentials(
            std::slice::from_ref(&secret),
            &parse_image_name("busybox").unwrap(),
        );
        assert_eq!(hub.len(), 1);
        assert_eq!(hub[0].auth, "aHViOnB3");
        let team = lookup_credentials(
            std::slice::from_ref(&secret),
            &parse_image_name("registry.local:5000/team/app:1").unwrap(),
        );
        assert_eq!(
            (team[0].username.as_str(), team[0].server_address.as_str()),
            ("u", "registry.local:5000/team")
        );
        assert!(
            lookup_credentials(
                &[secret],
                &parse_image_name("registry.local:5000/other/app").unwrap()
            )
            .is_empty()
        );
    }
}
