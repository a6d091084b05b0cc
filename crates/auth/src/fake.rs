//! Recording fakes of the reviewers, for tests.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::authentication::v1::{TokenReviewSpec, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{SubjectAccessReviewSpec, SubjectAccessReviewStatus};
use tokio::sync::Semaphore;

use crate::review::{ReviewError, ReviewFuture, SubjectAccessReviewer, TokenReviewer};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Holds the fake's calls until [`Gate::release`].
#[derive(Debug)]
pub struct Gate(Arc<Semaphore>);

impl Gate {
    /// Lets every held and later call through.
    pub fn release(&self) {
        self.0.add_permits(Semaphore::MAX_PERMITS / 2);
    }
}

/// Calls wait at the gate, if one is set.
#[derive(Debug, Default)]
struct Held(Mutex<Option<Arc<Semaphore>>>);

impl Held {
    fn hold(&self) -> Gate {
        let sem = Arc::new(Semaphore::new(0));
        *lock(&self.0) = Some(sem.clone());
        Gate(sem)
    }

    async fn pass(&self) {
        let sem = lock(&self.0).clone();
        if let Some(sem) = sem {
            // A closed semaphore also lets the call through.
            let _ = sem.acquire().await;
        }
    }
}

/// A [`TokenReviewer`] that records every spec: queued failures first
/// ([`FakeTokenReviewer::fail_next`]), then the answer set for the token, else
/// "not authenticated" without an error.
#[derive(Debug, Default)]
pub struct FakeTokenReviewer {
    answers: Mutex<HashMap<String, Result<TokenReviewStatus, ReviewError>>>,
    failures: Mutex<VecDeque<ReviewError>>,
    requests: Mutex<Vec<TokenReviewSpec>>,
    held: Held,
}

impl FakeTokenReviewer {
    /// The answer for `token`.
    pub fn answer(&self, token: &str, result: Result<TokenReviewStatus, ReviewError>) {
        lock(&self.answers).insert(token.to_string(), result);
    }

    /// The next call fails with `err` (queued).
    pub fn fail_next(&self, err: ReviewError) {
        lock(&self.failures).push_back(err);
    }

    /// The specs received so far.
    pub fn requests(&self) -> Vec<TokenReviewSpec> {
        lock(&self.requests).clone()
    }

    /// Calls wait (after being recorded) until the gate is released.
    pub fn hold(&self) -> Gate {
        self.held.hold()
    }
}

impl TokenReviewer for FakeTokenReviewer {
    fn create_token_review<'a>(
        &'a self,
        spec: &'a TokenReviewSpec,
    ) -> ReviewFuture<'a, TokenReviewStatus> {
        lock(&self.requests).push(spec.clone());
        Box::pin(async move {
            self.held.pass().await;
            if let Some(err) = lock(&self.failures).pop_front() {
                return Err(err);
            }
            let token = spec.token.clone().unwrap_or_default();
            lock(&self.answers).get(&token).cloned().unwrap_or_else(|| {
                Ok(TokenReviewStatus {
                    authenticated: Some(false),
                    ..TokenReviewStatus::default()
                })
            })
        })
    }
}

type SarRule = Box<dyn Fn(&SubjectAccessReviewSpec) -> SubjectAccessReviewStatus + Send + Sync>;

/// A [`SubjectAccessReviewer`] that records every spec: queued failures first
/// ([`FakeSubjectAccessReviewer::fail_next`]), then the rule's status (default: not allowed).
pub struct FakeSubjectAccessReviewer {
    rule: Mutex<SarRule>,
    failures: Mutex<VecDeque<ReviewError>>,
    requests: Mutex<Vec<SubjectAccessReviewSpec>>,
}

impl Default for FakeSubjectAccessReviewer {
    fn default() -> Self {
        FakeSubjectAccessReviewer {
            rule: Mutex::new(Box::new(|_| SubjectAccessReviewStatus::default())),
            failures: Mutex::default(),
            requests: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for FakeSubjectAccessReviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSubjectAccessReviewer")
            .field("requests", &lock(&self.requests).len())
            .finish()
    }
}

impl FakeSubjectAccessReviewer {
    /// Answers every later review with `rule(spec)`.
    pub fn set_rule(
        &self,
        rule: impl Fn(&SubjectAccessReviewSpec) -> SubjectAccessReviewStatus + Send + Sync + 'static,
    ) {
        *lock(&self.rule) = Box::new(rule);
    }

    /// Answers every later review with `allowed`.
    pub fn allow_all(&self, allowed: bool) {
        self.set_rule(move |_| SubjectAccessReviewStatus {
            allowed,
            ..SubjectAccessReviewStatus::default()
        });
    }

    /// The next call fails with `err` (queued).
    pub fn fail_next(&self, err: ReviewError) {
        lock(&self.failures).push_back(err);
    }

    /// The specs received so far.
    pub fn requests(&self) -> Vec<SubjectAccessReviewSpec> {
        lock(&self.requests).clone()
    }
}

impl SubjectAccessReviewer for FakeSubjectAccessReviewer {
    fn create_subject_access_review<'a>(
        &'a self,
        spec: &'a SubjectAccessReviewSpec,
    ) -> ReviewFuture<'a, SubjectAccessReviewStatus> {
        lock(&self.requests).push(spec.clone());
        let result = match lock(&self.failures).pop_front() {
            Some(err) => Err(err),
            None => Ok((lock(&self.rule))(spec)),
        };
        Box::pin(async move { result })
    }
}
