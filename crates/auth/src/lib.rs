//! Delegated authentication and authorization of the kubelet's secure port
//! (`cmd/kubelet/app/auth.go` `BuildAuthn`/`BuildAuthz`, which configure apiserver's
//! `authenticatorfactory.DelegatingAuthenticatorConfig` and
//! `authorizerfactory.DelegatingAuthorizerConfig`).
//!
//! * [`WebhookTokenAuthenticator`] (`plugin/pkg/authenticator/token/webhook`): a bearer token
//!   becomes an `authentication.k8s.io/v1` TokenReview (no audiences, as the kubelet sets
//!   none), retried with [`RetryBackoff::DEFAULT`]; wrapped in [`CachedTokenAuthenticator`]
//!   (`authentication/token/cache`) with `authentication.webhook.cacheTTL` for both
//!   accepted and rejected tokens (errors are not cached).
//! * [`WebhookAuthorizer`] (`plugin/pkg/authorizer/webhook`): every attribute set becomes an
//!   `authorization.k8s.io/v1` SubjectAccessReview, its answer cached for
//!   `authorization.webhook.cacheAuthorizedTTL` (allowed) or `cacheUnauthorizedTTL`
//!   (not allowed).
//!
//! The API calls go through the [`TokenReviewer`] and [`SubjectAccessReviewer`] traits:
//! [`KubeReviewers`] on the kubelet's main `kube::Client`, [`FakeTokenReviewer`] and
//! [`FakeSubjectAccessReviewer`] record for tests.
//!
//! Layering: `kubelet-server` defines what it calls (`TokenAuthenticator`, `Authorizer`)
//! and knows nothing of the API server; this crate implements them on kube-rs, and
//! `kubelet-app` plugs them into the secure server in API server mode.

mod backoff;
mod fake;
mod kube_reviewers;
mod review;
mod sar;
mod token;

pub use backoff::{RetryBackoff, with_exponential_backoff};
pub use fake::{FakeSubjectAccessReviewer, FakeTokenReviewer};
pub use kube_reviewers::{KubeReviewers, should_retry};
pub use review::{ReviewError, ReviewFuture, SubjectAccessReviewer, TokenReviewer};
pub use sar::{MAX_CACHE_ENTRIES, WebhookAuthorizer, subject_access_review_spec};
pub use token::{CachedTokenAuthenticator, SHARED_LOOKUP_TIMEOUT, WebhookTokenAuthenticator};
