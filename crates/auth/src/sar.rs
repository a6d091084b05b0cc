//! The SubjectAccessReview authorizer (`plugin/pkg/authorizer/webhook/webhook.go`
//! `WebhookAuthorizer`, built by `DelegatingAuthorizerConfig.New` with decision-on-error
//! `NoOpinion`, which the kubelet's auth filter turns into a 500 because an error comes
//! with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kubelet_server::{Attributes, AuthorizeFuture, Authorizer, AuthorizerError, Decision};
use tokio::time::Instant;

use crate::backoff::{RetryBackoff, with_exponential_backoff};
use crate::review::SubjectAccessReviewer;

/// `cache.NewLRUExpireCache(8192)`.
pub const MAX_CACHE_ENTRIES: usize = 8192;
/// `maxControlledAttrCacheSize`: answers for larger attribute sets are not cached.
const MAX_CONTROLLED_ATTR_CACHE_SIZE: usize = 10000;

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The review of one attribute set (`Authorize`: user, uid, groups, extra, then resource or
/// non-resource attributes). Empty strings and lists are left out, as Go's `omitempty`.
pub fn subject_access_review_spec(attrs: &Attributes) -> SubjectAccessReviewSpec {
    let user = &attrs.user;
    let mut spec = SubjectAccessReviewSpec {
        user: non_empty(&user.name),
        uid: non_empty(&user.uid),
        groups: (!user.groups.is_empty()).then(|| user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
        ..SubjectAccessReviewSpec::default()
    };
    if attrs.resource_request {
        spec.resource_attributes = Some(ResourceAttributes {
            namespace: non_empty(&attrs.namespace),
            verb: non_empty(&attrs.verb),
            group: non_empty(&attrs.api_group),
            version: non_empty(&attrs.api_version),
            resource: non_empty(&attrs.resource),
            subresource: non_empty(&attrs.subresource),
            name: non_empty(&attrs.name),
            ..ResourceAttributes::default()
        });
    } else {
        spec.non_resource_attributes = Some(NonResourceAttributes {
            path: non_empty(&attrs.path),
            verb: non_empty(&attrs.verb),
        });
    }
    spec
}

/// `shouldCache`.
fn should_cache(a: &Attributes) -> bool {
    let size = a.namespace.len()
        + a.verb.len()
        + a.api_group.len()
        + a.api_version.len()
        + a.resource.len()
        + a.subresource.len()
        + a.name.len()
        + a.path.len();
    size < MAX_CONTROLLED_ATTR_CACHE_SIZE
}

/// `LRUExpireCache`: at most `cap` entries, the least recently used dropped first,
/// expired entries never returned.
#[derive(Debug, Default)]
struct LruExpireCache {
    entries: HashMap<String, (SubjectAccessReviewStatus, Instant, u64)>,
    tick: u64,
}

impl LruExpireCache {
    fn get(&mut self, key: &str) -> Option<SubjectAccessReviewStatus> {
        self.tick += 1;
        let tick = self.tick;
        let now = Instant::now();
        match self.entries.get_mut(key) {
            Some((status, expires, used)) if *expires > now => {
                *used = tick;
                Some(status.clone())
            }
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn add(&mut self, key: String, status: SubjectAccessReviewStatus, ttl: Duration, cap: usize) {
        self.tick += 1;
        self.entries
            .insert(key, (status, Instant::now() + ttl, self.tick));
        if self.entries.len() > cap {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
            }
        }
    }
}

/// `authorization.mode: Webhook`.
pub struct WebhookAuthorizer {
    reviewer: Arc<dyn SubjectAccessReviewer>,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    backoff: RetryBackoff,
    cache: Mutex<LruExpireCache>,
}

impl WebhookAuthorizer {
    /// `authorization.webhook.cacheAuthorizedTTL` / `cacheUnauthorizedTTL`, with the
    /// kubelet's retry back-off.
    pub fn new(
        reviewer: Arc<dyn SubjectAccessReviewer>,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> Self {
        WebhookAuthorizer {
            reviewer,
            authorized_ttl,
            unauthorized_ttl,
            backoff: RetryBackoff::DEFAULT,
            cache: Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LruExpireCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn decide(&self, attrs: &Attributes) -> Result<Decision, AuthorizerError> {
        let spec = subject_access_review_spec(attrs);
        let key = serde_json::to_string(&spec).map_err(|e| AuthorizerError(e.to_string()))?;
        let cached = self.cache().get(&key);
        let status = match cached {
            Some(status) => status,
            None => {
                let status = with_exponential_backoff(self.backoff, || {
                    self.reviewer.create_subject_access_review(&spec)
                })
                .await
                .map_err(|e| {
                    tracing::error!(err = %e, "Failed to make webhook authorizer request");
                    AuthorizerError(e.message)
                })?;
                if should_cache(attrs) {
                    let ttl = if status.allowed {
                        self.authorized_ttl
                    } else {
                        self.unauthorized_ttl
                    };
                    self.cache()
                        .add(key, status.clone(), ttl, MAX_CACHE_ENTRIES);
                }
                status
            }
        };
        match (status.allowed, status.denied.unwrap_or(false)) {
            (true, true) => Err(AuthorizerError(
                "webhook subject access review returned both allow and deny response".into(),
            )),
            (_, true) => Ok(Decision::Deny),
            (true, false) => Ok(Decision::Allow),
            (false, false) => Ok(Decision::NoOpinion),
        }
    }
}

impl Authorizer for WebhookAuthorizer {
    fn authorize<'a>(&'a self, attrs: &'a Attributes) -> AuthorizeFuture<'a> {
        Box::pin(self.decide(attrs))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fake::FakeSubjectAccessReviewer;
    use crate::review::ReviewError;
    use kubelet_server::UserInfo;
    use kubelet_server::authz::request_attributes;

    fn user() -> UserInfo {
        UserInfo {
            name: "system:serviceaccount:ns:sa".into(),
            uid: "uid-1".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ],
            extra: [("k".to_string(), vec!["v".to_string()])].into(),
        }
    }

    fn attrs(path: &str) -> Vec<Attributes> {
        request_attributes("node1", &user(), "GET", path, true)
    }

    fn authorizer(fake: &Arc<FakeSubjectAccessReviewer>) -> WebhookAuthorizer {
        WebhookAuthorizer::new(
            fake.clone(),
            Duration::from_secs(300),
            Duration::from_secs(30),
        )
    }

    #[tokio::test]
    async fn spec_carries_user_and_resource_attributes() {
        let fake = Arc::new(FakeSubjectAccessReviewer::default());
        fake.allow_all(true);
        let a = &attrs("/pods")[0];
        assert_eq!(authorizer(&fake).authorize(a).await, Ok(Decision::Allow));
        let spec = &fake.requests()[0];
        assert_eq!(spec.user.as_deref(), Some("system:serviceaccount:ns:sa"));
        assert_eq!(spec.uid.as_deref(), Some("uid-1"));
        assert_eq!(spec.groups.as_ref().unwrap().len(), 2);
        assert_eq!(spec.extra.as_ref().unwrap()["k"], ["v"]);
        let r = spec.resource_attributes.as_ref().unwrap();
        assert_eq!(r.verb.as_deref(), Some("get"));
        assert_eq!(r.version.as_deref(), Some("v1"));
        assert_eq!(r.resource.as_deref(), Some("nodes"));
        assert_eq!(r.subresource.as_deref(), Some("pods"));
        assert_eq!(r.name.as_deref(), Some("node1"));
        assert_eq!((r.namespace.as_deref(), r.group.as_deref()), (None, None));
        assert!(spec.non_resource_attributes.is_none());

        let mut nr = a.clone();
        nr.resource_request = false;
        let spec = subject_access_review_spec(&nr);
        let n = spec.non_resource_attributes.unwrap();
        assert_eq!(
            (n.path.as_deref(), n.verb.as_deref()),
            (Some("/pods"), Some("get"))
        );
        assert!(spec.resource_attributes.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn allowed_is_cached_for_cache_authorized_ttl() {
        let fake = Arc::new(FakeSubjectAccessReviewer::default());
        fake.allow_all(true);
        let authz = authorizer(&fake);
        let a = &attrs("/healthz")[0];
        for _ in 0..3 {
            assert_eq!(authz.authorize(a).await, Ok(Decision::Allow));
        }
        assert_eq!(fake.requests().len(), 1);
        fake.allow_all(false);
        tokio::time::advance(Duration::from_secs(299)).await;
        assert_eq!(authz.authorize(a).await, Ok(Decision::Allow));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(authz.authorize(a).await, Ok(Decision::NoOpinion));
        assert_eq!(fake.requests().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn denied_is_cached_for_cache_unauthorized_ttl() {
        let fake = Arc::new(FakeSubjectAccessReviewer::default());
        let authz = authorizer(&fake);
        let a = &attrs("/healthz")[0];
        assert_eq!(authz.authorize(a).await, Ok(Decision::NoOpinion));
        fake.allow_all(true);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(authz.authorize(a).await, Ok(Decision::NoOpinion));
        assert_eq!(fake.requests().len(), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(authz.authorize(a).await, Ok(Decision::Allow));
        assert_eq!(fake.requests().len(), 2);
        // Another subresource is another review.
        assert_eq!(
            authz.authorize(&attrs("/healthz")[1]).await,
            Ok(Decision::Allow)
        );
        assert_eq!(fake.requests().len(), 3);
    }

    #[tokio::test]
    async fn denied_and_both_and_errors() {
        let fake = Arc::new(FakeSubjectAccessReviewer::default());
        let authz = authorizer(&fake);
        fake.set_rule(|_| SubjectAccessReviewStatus {
            denied: Some(true),
            ..SubjectAccessReviewStatus::default()
        });
        let a = &attrs("/pods");
        assert_eq!(authz.authorize(&a[0]).await, Ok(Decision::Deny));
        fake.set_rule(|_| SubjectAccessReviewStatus {
            allowed: true,
            denied: Some(true),
            ..SubjectAccessReviewStatus::default()
        });
        assert!(authz.authorize(&a[1]).await.is_err());
        fake.fail_next(ReviewError::fatal("subjectaccessreviews is forbidden"));
        let b = &attrs("/configz")[0];
        assert_eq!(
            authz.authorize(b).await,
            Err(AuthorizerError("subjectaccessreviews is forbidden".into()))
        );
        fake.allow_all(true);
        assert_eq!(
            authz.authorize(b).await,
            Ok(Decision::Allow),
            "errors are not cached"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn huge_attributes_are_not_cached_and_the_lru_is_bounded() {
        let fake = Arc::new(FakeSubjectAccessReviewer::default());
        fake.allow_all(true);
        let authz = authorizer(&fake);
        let long = format!("/{}", "x".repeat(MAX_CONTROLLED_ATTR_CACHE_SIZE));
        let a = &attrs(&long)[0];
        authz.authorize(a).await.unwrap();
        authz.authorize(a).await.unwrap();
        assert_eq!(fake.requests().len(), 2);

        let mut cache = LruExpireCache::default();
        let ttl = Duration::from_secs(60);
        let ok = SubjectAccessReviewStatus::default();
        cache.add("a".into(), ok.clone(), ttl, 2);
        cache.add("b".into(), ok.clone(), ttl, 2);
        assert!(cache.get("a").is_some());
        cache.add("c".into(), ok, ttl, 2);
        assert!(cache.get("b").is_none(), "least recently used dropped");
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
    }
}
