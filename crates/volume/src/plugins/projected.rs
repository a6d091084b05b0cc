//! The `projected` volume's payload (upstream `pkg/volume/projected/projected.go`
//! `collectData`): configMap, secret, downwardAPI and serviceAccountToken sources merged
//! into one payload, later sources overriding earlier paths.
//!
//! `clusterTrustBundle` and `podCertificate` sources need gates that are off by default at
//! v1.35 (`ClusterTrustBundleProjection`, `PodCertificateRequest`); pods using them are
//! refused at admission (`crates/admission/src/features.rs`).

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ProjectedVolumeSource, VolumeProjection};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{SetUpContext, mode_bits};
use crate::atomic_writer::{FileProjection, Payload};
use crate::error::VolumeError;

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
    let mut errs = Vec::new();
    let mut payload = Payload::new();
    for source in source.sources.iter().flatten() {
        match source_payload(ctx, source, default_mode).await {
            Ok(p) => payload.extend(p),
            Err(e) => errs.push(e),
        }
    }
    match VolumeError::aggregate(errs) {
        None => Ok(payload),
        Some(e) => Err(e),
    }
}

/// The files of one projection source.
async fn source_payload(
    ctx: &SetUpContext<'_>,
    source: &VolumeProjection,
    default_mode: i32,
) -> Result<Payload, VolumeError> {
    let pod = ctx.pod;
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    if let Some(s) = &source.secret {
        let items = s.items.as_deref().unwrap_or_default();
        let optional = s.optional == Some(true);
        return super::secret::read_and_make_payload(
            ctx.objects,
            namespace,
            &s.name,
            items,
            default_mode,
            optional,
        )
        .await;
    }
    if let Some(c) = &source.config_map {
        let items = c.items.as_deref().unwrap_or_default();
        let optional = c.optional == Some(true);
        return super::configmap::read_and_make_payload(
            ctx.objects,
            namespace,
            &c.name,
            items,
            default_mode,
            optional,
        )
        .await;
    }
    if let Some(d) = &source.downward_api {
        let items = d.items.as_deref().unwrap_or_default();
        return super::downwardapi::collect_data(items, pod, ctx.node, default_mode);
    }
    if let Some(tp) = &source.service_account_token {
        // With an fsUser or fsGroup the file starts 0600; the ownership change makes it
        // 0640 for the group.
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
        let tr = ctx
            .objects
            .get_service_account_token(namespace, sa, &request)
            .await?;
        let token = tr.status.map(|s| s.token).unwrap_or_default();
        let file = FileProjection {
            data: token.into_bytes(),
            mode,
            fs_user: ctx.fs_user,
        };
        return Ok(Payload::from([(tp.path.clone(), file)]));
    }
    if source.cluster_trust_bundle.is_some() || source.pod_certificate.is_some() {
        return Err(VolumeError::Payload(
            "clusterTrustBundle and podCertificate projections are not supported by this kubelet"
                .into(),
        ));
    }
    Ok(Payload::new())
}
