//! The API calls of the webhooks (the `tokenReviewer` and `subjectAccessReviewer` interfaces
//! of apiserver's webhook plugins).

use std::future::Future;
use std::pin::Pin;

use k8s_openapi::api::authentication::v1::{TokenReviewSpec, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{SubjectAccessReviewSpec, SubjectAccessReviewStatus};

/// A review could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReviewError {
    /// What failed.
    pub message: String,
    /// `webhook.DefaultShouldRetry`: connection reset or lost, 500 `InternalError`,
    /// `Timeout`, 429 / `TooManyRequests`, or a `Retry-After` the server suggested.
    pub retryable: bool,
}

impl ReviewError {
    /// An error that is not retried.
    pub fn fatal(message: impl Into<String>) -> Self {
        ReviewError {
            message: message.into(),
            retryable: false,
        }
    }

    /// An error that is retried with the back-off.
    pub fn retryable(message: impl Into<String>) -> Self {
        ReviewError {
            message: message.into(),
            retryable: true,
        }
    }
}

/// The future of a review call.
pub type ReviewFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ReviewError>> + Send + 'a>>;

/// Creates `authentication.k8s.io/v1` TokenReviews.
pub trait TokenReviewer: Send + Sync {
    /// `POST /apis/authentication.k8s.io/v1/tokenreviews`; the returned status.
    fn create_token_review<'a>(
        &'a self,
        spec: &'a TokenReviewSpec,
    ) -> ReviewFuture<'a, TokenReviewStatus>;
}

/// Creates `authorization.k8s.io/v1` SubjectAccessReviews.
pub trait SubjectAccessReviewer: Send + Sync {
    /// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`; the returned status.
    fn create_subject_access_review<'a>(
        &'a self,
        spec: &'a SubjectAccessReviewSpec,
    ) -> ReviewFuture<'a, SubjectAccessReviewStatus>;
}
