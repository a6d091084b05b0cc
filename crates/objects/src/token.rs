//! Service account tokens for pods (upstream `pkg/kubelet/token/token_manager.go`):
//! TokenRequests cached per (service account, namespace, audiences, expirationSeconds,
//! boundObjectRef, uid) and requested again once older than 80 % of their lifetime or
//! 24 h (minus up to 10 s of jitter); a failed renewal keeps serving the old token until it
//! expires. `DeleteServiceAccountToken` forgets a pod's tokens; expired ones are dropped
//! every minute.
//!
//! Not done: upstream's discovery check that turns a `404` into "the API server does not
//! have TokenRequest endpoints enabled" (every supported API server has the endpoint).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest};
use kubelet_container::clock::Clock;
use kubelet_volume::ObjectError;
use tokio_util::sync::CancellationToken;

use crate::api::TokenClient;

/// Upstream `maxTTL`: a token older than this is renewed whatever its lifetime.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// Upstream `gcPeriod`.
pub const GC_PERIOD: Duration = Duration::from_secs(60);
/// Upstream `maxJitter`.
pub const MAX_JITTER: Duration = Duration::from_secs(10);

/// A random jitter in whole seconds below [`MAX_JITTER`] (upstream
/// `time.Duration(rand.Float64()*maxJitter.Seconds()) * time.Second`).
pub fn random_jitter() -> Duration {
    let extra = kubelet_podworkers::work_queue::jitter(MAX_JITTER, 1.0).saturating_sub(MAX_JITTER);
    Duration::from_secs(extra.as_secs().min(MAX_JITTER.as_secs() - 1))
}

/// Upstream `token.Manager`.
pub struct TokenManager {
    client: Arc<dyn TokenClient>,
    clock: Arc<dyn Clock>,
    jitter: Box<dyn Fn() -> Duration + Send + Sync>,
    cache: Mutex<HashMap<String, TokenRequest>>,
}

fn expiration(tr: &TokenRequest) -> Option<Timestamp> {
    tr.status.as_ref().map(|s| s.expiration_timestamp.0)
}

fn go_quote(s: &str) -> String {
    format!("{s:?}")
}

/// Upstream `keyFunc` (nonconfidential, logged): Go's
/// `fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, audiences, exp, ref, uid)`.
pub fn key_func(name: &str, namespace: &str, tr: &TokenRequest) -> String {
    let audiences = if tr.spec.audiences.is_empty() {
        "[]string(nil)".to_string()
    } else {
        let quoted: Vec<String> = tr.spec.audiences.iter().map(|a| go_quote(a)).collect();
        format!("[]string{{{}}}", quoted.join(", "))
    };
    let exp = tr.spec.expiration_seconds.unwrap_or(0);
    let r = tr
        .spec
        .bound_object_ref
        .clone()
        .unwrap_or(BoundObjectReference {
            api_version: None,
            kind: None,
            name: None,
            uid: None,
        });
    let opt = |s: &Option<String>| go_quote(s.as_deref().unwrap_or_default());
    let bound = format!(
        "v1.BoundObjectReference{{Kind:{}, APIVersion:{}, Name:{}, UID:{}}}",
        opt(&r.kind),
        opt(&r.api_version),
        opt(&r.name),
        opt(&r.uid)
    );
    let uid = tr.metadata.uid.as_deref().unwrap_or_default();
    format!(
        "{}/{}/{audiences}/{exp}/{bound}/{}",
        go_quote(name),
        go_quote(namespace),
        go_quote(uid)
    )
}

impl TokenManager {
    /// A manager requesting tokens through `client`, with upstream's random jitter.
    pub fn new(client: Arc<dyn TokenClient>, clock: Arc<dyn Clock>) -> Self {
        Self::with_jitter(client, clock, Box::new(random_jitter))
    }

    /// A manager with a chosen jitter source (tests use none).
    pub fn with_jitter(
        client: Arc<dyn TokenClient>,
        clock: Arc<dyn Clock>,
        jitter: Box<dyn Fn() -> Duration + Send + Sync>,
    ) -> Self {
        Self {
            client,
            clock,
            jitter,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, TokenRequest>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn expired(&self, tr: &TokenRequest) -> bool {
        expiration(tr).is_none_or(|exp| self.clock.now() > exp)
    }

    /// Upstream `requiresRefresh`: older than 24 h, or within 20 % of its lifetime (plus
    /// the jitter) of expiring. A token without `expirationSeconds` is never renewed.
    pub fn requires_refresh(&self, tr: &TokenRequest) -> bool {
        let Some(exp_secs) = tr.spec.expiration_seconds else {
            tracing::error!(namespace = ?tr.metadata.namespace, name = ?tr.metadata.name, "Expiration seconds was nil for token request");
            return false;
        };
        let Some(exp) = expiration(tr) else {
            return true;
        };
        let now = self.clock.now();
        let jitter = SignedDuration::try_from((self.jitter)()).unwrap_or(SignedDuration::ZERO);
        let secs = |s: i64| SignedDuration::from_secs(s);
        let iat = exp.saturating_sub(secs(exp_secs)).unwrap_or(exp);
        let max_ttl = SignedDuration::try_from(MAX_TTL).unwrap_or(SignedDuration::MAX);
        if now > iat.saturating_add(max_ttl - jitter).unwrap_or(iat) {
            return true;
        }
        // Go's integer arithmetic: (expirationSeconds*20)/100 whole seconds.
        let refresh_at = exp
            .saturating_sub(secs(exp_secs.saturating_mul(20) / 100) + jitter)
            .unwrap_or(exp);
        now > refresh_at
    }

    /// Upstream `GetServiceAccountToken`.
    ///
    /// # Errors
    /// No cached token and the request failed, or the cached one expired and the renewal
    /// failed.
    pub async fn get_service_account_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, ObjectError> {
        let key = key_func(name, namespace, request);
        let cached = self.lock().get(&key).cloned();
        if let Some(ctr) = &cached
            && !self.requires_refresh(ctr)
        {
            return Ok(ctr.clone());
        }
        match self.client.create_token(namespace, name, request).await {
            Ok(tr) => {
                self.lock().insert(key, tr.clone());
                Ok(tr)
            }
            Err(e) => match cached {
                None => Err(ObjectError::Other(format!("failed to fetch token: {e}"))),
                Some(ctr) if self.expired(&ctr) => Err(ObjectError::Other(format!(
                    "token {key} expired and refresh failed: {e}"
                ))),
                Some(ctr) => {
                    tracing::error!(err = %e, cache_key = %key, "Couldn't update token");
                    Ok(ctr)
                }
            },
        }
    }

    /// Upstream `DeleteServiceAccountToken`: forgets the tokens bound to pod `pod_uid`.
    pub fn delete_service_account_token(&self, pod_uid: &str) {
        self.lock().retain(|_, tr| {
            tr.spec
                .bound_object_ref
                .as_ref()
                .and_then(|r| r.uid.as_deref())
                != Some(pod_uid)
        });
    }

    /// Upstream `cleanup`: drops expired tokens.
    pub fn cleanup(&self) {
        let mut cache = self.lock();
        cache.retain(|_, tr| !self.expired(tr));
    }

    /// How many tokens are cached.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// No token is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`TokenManager::cleanup`] every [`GC_PERIOD`] until `cancel` (upstream
    /// `wait.Forever(m.cleanup, gcPeriod)`).
    pub async fn run_cleanup(&self, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(GC_PERIOD);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => self.cleanup(),
            }
        }
    }
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
