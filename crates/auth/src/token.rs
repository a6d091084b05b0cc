//! Bearer tokens by TokenReview (`plugin/pkg/authenticator/token/webhook/webhook.go`) and
//! the cache in front of it (`pkg/authentication/token/cache/cached_token_authenticator.go`,
//! built by `DelegatingAuthenticatorConfig.New` as `cache.New(tokenAuth, false, cacheTTL,
//! cacheTTL)`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenReviewSpec;
use kubelet_server::{TokenAuthenticator, TokenError, TokenFuture, UserInfo};
use ring::hmac;
use ring::rand::SystemRandom;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::backoff::{RetryBackoff, with_exponential_backoff};
use crate::review::TokenReviewer;

/// `WebhookTokenAuthenticator`: asks the API server who a token belongs to.
#[derive(Clone)]
pub struct WebhookTokenAuthenticator {
    reviewer: Arc<dyn TokenReviewer>,
    backoff: RetryBackoff,
}

impl WebhookTokenAuthenticator {
    /// With the kubelet's retry back-off ([`RetryBackoff::DEFAULT`]).
    pub fn new(reviewer: Arc<dyn TokenReviewer>) -> Self {
        Self::with_backoff(reviewer, RetryBackoff::DEFAULT)
    }

    /// With another back-off.
    pub fn with_backoff(reviewer: Arc<dyn TokenReviewer>, backoff: RetryBackoff) -> Self {
        WebhookTokenAuthenticator { reviewer, backoff }
    }

    async fn review(&self, token: &str) -> Result<Option<UserInfo>, TokenError> {
        // The kubelet's requests carry no audiences (`authenticator.AudiencesFrom` is empty).
        let spec = TokenReviewSpec {
            token: Some(token.to_string()),
            audiences: None,
        };
        let status =
            with_exponential_backoff(self.backoff, || self.reviewer.create_token_review(&spec))
                .await
                .map_err(|e| {
                    tracing::error!(err = %e, "Failed to make webhook authenticator request");
                    TokenError(e.message)
                })?;
        if !status.authenticated.unwrap_or(false) {
            return match status.error.filter(|e| !e.is_empty()) {
                Some(e) => Err(TokenError(e)),
                None => Ok(None),
            };
        }
        let user = status.user.unwrap_or_default();
        Ok(Some(UserInfo {
            name: user.username.unwrap_or_default(),
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default().into_iter().collect(),
        }))
    }
}

impl TokenAuthenticator for WebhookTokenAuthenticator {
    fn authenticate_token<'a>(&'a self, token: &'a str) -> TokenFuture<'a> {
        Box::pin(self.review(token))
    }
}

/// `sharedLookupTimeout`: one lookup shared by concurrent requests ends after this.
pub const SHARED_LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

type Record = Result<Option<UserInfo>, TokenError>;
type Key = hmac::Tag;

/// `cachedTokenAuthenticator` with `cacheErrs = false`: accepted tokens are remembered for
/// `success_ttl`, rejected ones (no error) for `failure_ttl`, errors not at all; a TTL of 0
/// disables that half. Concurrent lookups of one token share one call (`singleflight`).
/// Tokens are keyed by an HMAC-SHA256 under a random per-process key, never stored.
pub struct CachedTokenAuthenticator {
    inner: Arc<dyn TokenAuthenticator>,
    success_ttl: Duration,
    failure_ttl: Duration,
    key: hmac::Key,
    cache: Mutex<HashMap<Vec<u8>, (Record, Instant)>>,
    inflight: Mutex<HashMap<Vec<u8>, Arc<OnceCell<Record>>>>,
}

/// Expired entries are dropped when an insert finds at least this many entries.
const PRUNE_AT: usize = 1024;

impl CachedTokenAuthenticator {
    /// `cache.New(inner, false, success_ttl, failure_ttl)`.
    pub fn new(
        inner: Arc<dyn TokenAuthenticator>,
        success_ttl: Duration,
        failure_ttl: Duration,
    ) -> Result<Self, TokenError> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new())
            .map_err(|_| TokenError("no randomness for the token cache key".into()))?;
        Ok(CachedTokenAuthenticator {
            inner,
            success_ttl,
            failure_ttl,
            key,
            cache: Mutex::default(),
            inflight: Mutex::default(),
        })
    }

    fn key_of(&self, token: &str) -> Vec<u8> {
        // keyFunc: length-prefixed token, then the (empty) audience list.
        let mut ctx = hmac::Context::with_key(&self.key);
        let len = u32::try_from(token.len()).unwrap_or(u32::MAX);
        ctx.update(&len.to_be_bytes());
        ctx.update(token.as_bytes());
        ctx.update(&0u32.to_be_bytes());
        let tag: Key = ctx.sign();
        tag.as_ref().to_vec()
    }

    fn cached(&self, key: &[u8]) -> Option<Record> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        match cache.get(key) {
            Some((record, expires)) if *expires > Instant::now() => Some(record.clone()),
            Some(_) => {
                cache.remove(key);
                None
            }
            None => None,
        }
    }

    fn store(&self, key: Vec<u8>, record: &Record) {
        let ttl = match record {
            Err(_) => return,
            Ok(Some(_)) => self.success_ttl,
            Ok(None) => self.failure_ttl,
        };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= PRUNE_AT {
            cache.retain(|_, (_, expires)| *expires > now);
        }
        cache.insert(key, (record.clone(), now + ttl));
    }

    async fn lookup(&self, token: &str) -> Record {
        let key = self.key_of(token);
        if let Some(record) = self.cached(&key) {
            return record;
        }
        let cell = self
            .inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone();
        let record = cell
            .get_or_init(|| async {
                if let Some(record) = self.cached(&key) {
                    return record;
                }
                let record = tokio::time::timeout(
                    SHARED_LOOKUP_TIMEOUT,
                    self.inner.authenticate_token(token),
                )
                .await
                .unwrap_or_else(|_| Err(TokenError("context deadline exceeded".into())));
                self.store(key.clone(), &record);
                record
            })
            .await
            .clone();
        let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        if inflight.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            inflight.remove(&key);
        }
        record
    }
}

impl TokenAuthenticator for CachedTokenAuthenticator {
    fn authenticate_token<'a>(&'a self, token: &'a str) -> TokenFuture<'a> {
        Box::pin(self.lookup(token))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fake::FakeTokenReviewer;
    use crate::review::ReviewError;
    use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo as ApiUser};

    fn authenticated(name: &str) -> TokenReviewStatus {
        TokenReviewStatus {
            authenticated: Some(true),
            user: Some(ApiUser {
                username: Some(name.into()),
                uid: Some("uid-1".into()),
                groups: Some(vec!["system:serviceaccounts".into()]),
                extra: Some([("k".to_string(), vec!["v".to_string()])].into()),
            }),
            ..TokenReviewStatus::default()
        }
    }

    fn cached(fake: &Arc<FakeTokenReviewer>, ttl: Duration) -> CachedTokenAuthenticator {
        let webhook = WebhookTokenAuthenticator::new(fake.clone());
        CachedTokenAuthenticator::new(Arc::new(webhook), ttl, ttl).unwrap()
    }

    #[tokio::test]
    async fn review_spec_and_user() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer("tok", Ok(authenticated("system:serviceaccount:ns:sa")));
        let authn = WebhookTokenAuthenticator::new(fake.clone());
        let user = authn.authenticate_token("tok").await.unwrap().unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(user.uid, "uid-1");
        assert_eq!(user.groups, ["system:serviceaccounts"]);
        assert_eq!(user.extra["k"], ["v"]);
        let spec = &fake.requests()[0];
        assert_eq!(spec.token.as_deref(), Some("tok"));
        assert_eq!(spec.audiences, None);
    }

    #[tokio::test]
    async fn unauthenticated_with_and_without_error() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer(
            "expired",
            Ok(TokenReviewStatus {
                authenticated: Some(false),
                error: Some("token has expired".into()),
                ..TokenReviewStatus::default()
            }),
        );
        let authn = WebhookTokenAuthenticator::new(fake.clone());
        assert_eq!(
            authn.authenticate_token("expired").await,
            Err(TokenError("token has expired".into()))
        );
        assert_eq!(authn.authenticate_token("unknown").await, Ok(None));
    }

    #[tokio::test(start_paused = true)]
    async fn token_is_cached_within_the_ttl() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer("tok", Ok(authenticated("u")));
        let authn = cached(&fake, Duration::from_secs(120));
        for _ in 0..3 {
            assert_eq!(
                authn.authenticate_token("tok").await.unwrap().unwrap().name,
                "u"
            );
        }
        assert_eq!(fake.requests().len(), 1);
        tokio::time::advance(Duration::from_secs(119)).await;
        authn.authenticate_token("tok").await.unwrap();
        assert_eq!(fake.requests().len(), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        authn.authenticate_token("tok").await.unwrap();
        assert_eq!(fake.requests().len(), 2, "reviewed again after cacheTTL");
    }

    #[tokio::test(start_paused = true)]
    async fn rejected_token_is_cached_for_the_same_ttl_but_errors_are_not() {
        let fake = Arc::new(FakeTokenReviewer::default());
        let authn = cached(&fake, Duration::from_secs(120));
        assert_eq!(authn.authenticate_token("bad").await, Ok(None));
        assert_eq!(authn.authenticate_token("bad").await, Ok(None));
        assert_eq!(fake.requests().len(), 1);
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(authn.authenticate_token("bad").await, Ok(None));
        assert_eq!(fake.requests().len(), 2);

        fake.fail_next(ReviewError::fatal("forbidden"));
        assert_eq!(
            authn.authenticate_token("tok").await,
            Err(TokenError("forbidden".into()))
        );
        fake.answer("tok", Ok(authenticated("u")));
        assert!(authn.authenticate_token("tok").await.unwrap().is_some());
        assert_eq!(fake.requests().len(), 4, "the error was not cached");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_ttl_caches_nothing() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer("tok", Ok(authenticated("u")));
        let authn = cached(&fake, Duration::ZERO);
        authn.authenticate_token("tok").await.unwrap();
        authn.authenticate_token("tok").await.unwrap();
        assert_eq!(fake.requests().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn retryable_errors_are_retried() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer("tok", Ok(authenticated("u")));
        fake.fail_next(ReviewError::retryable("connection reset by peer"));
        fake.fail_next(ReviewError::retryable("Internal error"));
        let authn = WebhookTokenAuthenticator::new(fake.clone());
        assert!(authn.authenticate_token("tok").await.unwrap().is_some());
        assert_eq!(fake.requests().len(), 3);
    }

    #[tokio::test]
    async fn concurrent_lookups_share_one_review() {
        let fake = Arc::new(FakeTokenReviewer::default());
        fake.answer("tok", Ok(authenticated("u")));
        let gate = fake.hold();
        let authn = Arc::new(cached(&fake, Duration::from_secs(120)));
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let a = authn.clone();
                tokio::spawn(async move { a.authenticate_token("tok").await })
            })
            .collect();
        tokio::task::yield_now().await;
        gate.release();
        for t in tasks {
            assert!(t.await.unwrap().unwrap().is_some());
        }
        assert_eq!(fake.requests().len(), 1);
    }
}
