//! The `projected` volume's payload (upstream `pkg/volume/projected/projected.go`
//! `collectData`): configMap, secret, downwardAPI and serviceAccountToken sources merged
//! into one payload, later sources overriding earlier paths.
//!
//! `clusterTrustBundle` and `podCertificate` sources need gates that are off by default at
//! v1.35 (`ClusterTrustBundleProjection`, `PodCertificateRequest`); pods using them are
//! refused at admission (`crates/admission/src/features.rs`).

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ProjectedVolumeSource, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{SetUpContext, mode_bits};
use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;
use crate::objects::ObjectError;

/// Upstream's `expirationSeconds` default (API defaulting; applied here for pods that did
/// not pass through it).
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// The TokenRequest for a `serviceAccountToken` source: the audience (if any), the
/// expiration, bound to the pod.
pub fn token_request(
    pod: &Pod,
    audience: Option<&str>,
    expiration_seconds: Option<i64>,
) -> TokenRequest {
    TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: audience
                .filter(|a| !a.is_empty())
                .map(|a| vec![a.to_string()])
                .unwrap_or_default(),
            expiration_seconds: Some(
                expiration_seconds.unwrap_or(DEFAULT_TOKEN_EXPIRATION_SECONDS),
            ),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            }),
        },
        status: None,
    }
}

/// `collectData`.
pub async fn collect_data(
    ctx: &SetUpContext<'_>,
    volume_name: &str,
    source: &ProjectedVolumeSource,
) -> Result<Payload, VolumeError> {
    let default_mode = source.default_mode.unwrap_or(super::DEFAULT_MODE);
    if !ctx.objects.has_kube_client() {
        return Err(VolumeError::Payload(format!(
            "cannot setup projected volume {volume_name} because kube client is not configured"
        )));
    }
    let pod = ctx.pod;
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut errs = Vec::new();
    let mut payload = Payload::new();
    for source in source.sources.iter().flatten() {
        if let Some(s) = &source.secret {
            let optional = s.optional == Some(true);
            let secret = match ctx.objects.get_secret(namespace, &s.name).await {
                Ok(secret) => secret,
                Err(ObjectError::NotFound { .. }) if optional => Secret::default(),
                Err(e) => {
                    tracing::error!("Couldn't get secret {namespace}/{}: {e}", s.name);
                    errs.push(e.into());
                    continue;
                }
            };
            let items = s.items.as_deref().unwrap_or_default();
            match super::secret::make_payload(items, &secret, default_mode, optional) {
                Ok(p) => payload.extend(p),
                Err(e) => errs.push(e),
            }
        } else if let Some(c) = &source.config_map {
            let optional = c.optional == Some(true);
            let cm = match ctx.objects.get_config_map(namespace, &c.name).await {
                Ok(cm) => cm,
                Err(ObjectError::NotFound { .. }) if optional => ConfigMap::default(),
                Err(e) => {
                    tracing::error!("Couldn't get configMap {namespace}/{}: {e}", c.name);
                    errs.push(e.into());
                    continue;
                }
            };
            let items = c.items.as_deref().unwrap_or_default();
            match super::configmap::make_payload(items, &cm, default_mode, optional) {
                Ok(p) => payload.extend(p),
                Err(e) => errs.push(e),
            }
        } else if let Some(d) = &source.downward_api {
            let items = d.items.as_deref().unwrap_or_default();
            match super::downwardapi::collect_data(items, pod, ctx.node, default_mode) {
                Ok(p) => payload.extend(p),
                Err(e) => errs.push(e),
            }
        } else if let Some(tp) = &source.service_account_token {
            // With an fsUser or fsGroup the file starts 0600; the ownership change makes
            // it 0640 for the group.
            let mode = if ctx.fs_user.is_some() || ctx.fs_group.is_some() {
                0o600
            } else {
                mode_bits(default_mode)
            };
            let request = token_request(pod, tp.audience.as_deref(), tp.expiration_seconds);
            let sa = pod
                .spec
                .as_ref()
                .and_then(|s| s.service_account_name.as_deref())
                .unwrap_or_default();
            match ctx
                .objects
                .get_service_account_token(namespace, sa, &request)
                .await
            {
                Ok(tr) => {
                    let token = tr.status.map(|s| s.token).unwrap_or_default();
                    payload.insert(
                        tp.path.clone(),
                        FileProjection {
                            data: token.into_bytes(),
                            mode,
                            fs_user: ctx.fs_user,
                        },
                    );
                }
                Err(e) => errs.push(e.into()),
            }
        } else if source.cluster_trust_bundle.is_some() || source.pod_certificate.is_some() {
            errs.push(VolumeError::Payload(
                "clusterTrustBundle and podCertificate projections are not supported by this kubelet"
                    .into(),
            ));
        }
    }
    match VolumeError::aggregate(errs) {
        None => Ok(payload),
        Some(e) => Err(e),
    }
}
