//! The reviewers on kube-rs: the kubelet's main client posts TokenReviews and
//! SubjectAccessReviews with the node's own credentials (the `system:node` rules allow
//! creating both), as upstream's `client.AuthenticationV1()` / `AuthorizationV1()`.

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{
    SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube::Api;
use kube::api::PostParams;

use crate::review::{ReviewError, ReviewFuture, SubjectAccessReviewer, TokenReviewer};

/// Both reviewers on one `kube::Client` (the kubelet's main client).
#[derive(Clone)]
pub struct KubeReviewers {
    client: kube::Client,
}

impl std::fmt::Debug for KubeReviewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeReviewers").finish_non_exhaustive()
    }
}

impl KubeReviewers {
    /// On `client`.
    pub fn new(client: kube::Client) -> Self {
        KubeReviewers { client }
    }
}

/// `webhook.DefaultShouldRetry`: a reset or lost connection, an `InternalError`, a
/// `Timeout`, `TooManyRequests` (or 429), or a status suggesting a delay (`ServerTimeout`
/// with details, or `retryAfterSeconds`).
pub fn should_retry(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            let reason = status.reason.as_str();
            let suggests_delay = status
                .details
                .as_ref()
                .is_some_and(|d| reason == "ServerTimeout" || d.retry_after_seconds > 0);
            matches!(reason, "InternalError" | "Timeout" | "TooManyRequests")
                || status.code == 429
                || suggests_delay
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => connection_lost(err),
        _ => false,
    }
}

/// `utilnet.IsConnectionReset` / `IsHTTP2ConnectionLost` over the error's source chain.
fn connection_lost(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        cur = e.source();
    }
    false
}

fn review_error(err: &kube::Error) -> ReviewError {
    let message = match err {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    };
    ReviewError {
        message,
        retryable: should_retry(err),
    }
}

impl KubeReviewers {
    /// `POST` of a cluster-scoped review object; the object the API server returns.
    async fn create<K>(&self, review: &K) -> Result<K, ReviewError>
    where
        K: kube::Resource<Scope = kube::core::ClusterResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
    {
        Api::<K>::all(self.client.clone())
            .create(&PostParams::default(), review)
            .await
            .map_err(|e| review_error(&e))
    }
}

impl TokenReviewer for KubeReviewers {
    fn create_token_review<'a>(
        &'a self,
        spec: &'a TokenReviewSpec,
    ) -> ReviewFuture<'a, TokenReviewStatus> {
        Box::pin(async move {
            let review = TokenReview {
                spec: spec.clone(),
                ..TokenReview::default()
            };
            Ok(self.create(&review).await?.status.unwrap_or_default())
        })
    }
}

impl SubjectAccessReviewer for KubeReviewers {
    fn create_subject_access_review<'a>(
        &'a self,
        spec: &'a SubjectAccessReviewSpec,
    ) -> ReviewFuture<'a, SubjectAccessReviewStatus> {
        Box::pin(async move {
            let review = SubjectAccessReview {
                spec: spec.clone(),
                ..SubjectAccessReview::default()
            };
            Ok(self.create(&review).await?.status.unwrap_or_default())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, retry_after: Option<u32>) -> kube::Error {
        let mut s = kube::core::Status::failure("m", reason);
        s.code = code;
        if let Some(secs) = retry_after {
            s.details = Some(kube::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: vec![],
                retry_after_seconds: secs,
            });
        }
        kube::Error::Api(Box::new(s))
    }

    #[test]
    fn retry_classification() {
        assert!(should_retry(&api(500, "InternalError", None)));
        assert!(should_retry(&api(504, "Timeout", None)));
        assert!(should_retry(&api(429, "", None)));
        assert!(should_retry(&api(429, "TooManyRequests", None)));
        assert!(should_retry(&api(503, "ServiceUnavailable", Some(1))));
        assert!(should_retry(&api(504, "ServerTimeout", Some(0))));
        assert!(!should_retry(&api(504, "ServerTimeout", None)));
        assert!(!should_retry(&api(403, "Forbidden", None)));
        assert!(!should_retry(&api(401, "Unauthorized", None)));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(should_retry(&kube::Error::Service(Box::new(reset))));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!should_retry(&kube::Error::Service(Box::new(refused))));
        assert_eq!(review_error(&api(403, "Forbidden", None)).message, "m");
    }
}
