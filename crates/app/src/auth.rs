//! `BuildAuth` (mirrors `cmd/kubelet/app/auth.go`): the checks that decide whether the
//! kubelet can start with its authentication and authorization settings ([`build_auth`],
//! run by `check_startable`), and the secure port's authenticator and authorizer built from
//! them ([`build_auth_components`]).
//!
//! * webhook authentication or authorization needs an API client (refused in standalone
//!   mode with upstream's message), and the authorization mode must be known;
//! * `authentication.webhook.enabled`: bearer tokens are reviewed by TokenReview through
//!   the main client, cached for `authentication.webhook.cacheTTL` (accepted and rejected);
//! * `authorization.mode: Webhook`: SubjectAccessReview through the main client, cached
//!   for `authorization.webhook.cacheAuthorizedTTL` / `cacheUnauthorizedTTL`.
//!
//! With no client CA, no webhook and anonymous disabled upstream still starts (its x509
//! authenticator is always installed), and every request is 401: so does kubelet-rs.

use std::sync::Arc;
use std::time::Duration;

use kubelet_auth::{
    CachedTokenAuthenticator, SubjectAccessReviewer, TokenReviewer, WebhookAuthorizer,
    WebhookTokenAuthenticator,
};
use kubelet_config::KubeletConfiguration;
use kubelet_server::{AlwaysAllow, Authorizer, TokenAuthenticator};

/// Errors of the auth step.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// Webhook authentication or authorization without an API client (standalone mode).
    #[error("no client provided, cannot use webhook {0}")]
    NoClient(&'static str),
    /// `authorization.mode` is empty.
    #[error("no authorization mode specified")]
    NoMode,
    /// `authorization.mode` is not one the kubelet knows.
    #[error("unknown authorization mode {0}")]
    UnknownMode(String),
    /// The token cache could not be set up.
    #[error("token authentication: {0}")]
    Token(String),
}

/// The authorizer the kubelet will use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizerMode {
    /// Every request is allowed.
    AlwaysAllow,
    /// SubjectAccessReview against the API server.
    Webhook,
}

/// The outcome of `BuildAuth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// Anonymous requests are allowed through authentication.
    pub anonymous: bool,
    /// TokenReview webhook authentication is on.
    pub webhook_authn: bool,
    /// `authentication.webhook.cacheTTL` (accepted and rejected tokens).
    pub token_cache_ttl: Duration,
    /// The authorizer.
    pub authorizer: AuthorizerMode,
    /// `authorization.webhook.cacheAuthorizedTTL`.
    pub cache_authorized_ttl: Duration,
    /// `authorization.webhook.cacheUnauthorizedTTL`.
    pub cache_unauthorized_ttl: Duration,
}

/// A configuration duration (validation refused negative ones; a negative one disables
/// the cache, as Go's `ttl > 0` checks do).
fn ttl(d: kubelet_apimachinery::Duration) -> Duration {
    d.as_std().unwrap_or(Duration::ZERO)
}

/// Upstream `BuildAuth`'s checks: `has_client` is false in standalone mode.
pub fn build_auth(cfg: &KubeletConfiguration, has_client: bool) -> Result<AuthSettings, AuthError> {
    let webhook_authn = cfg.authentication.webhook.enabled.unwrap_or(false);
    if webhook_authn && !has_client {
        return Err(AuthError::NoClient("authentication"));
    }
    let authorizer = match cfg.authorization.mode.as_str() {
        "" => return Err(AuthError::NoMode),
        "AlwaysAllow" => AuthorizerMode::AlwaysAllow,
        "Webhook" => {
            if !has_client {
                return Err(AuthError::NoClient("authorization"));
            }
            AuthorizerMode::Webhook
        }
        other => return Err(AuthError::UnknownMode(other.to_string())),
    };
    Ok(AuthSettings {
        anonymous: cfg.authentication.anonymous.enabled.unwrap_or(false),
        webhook_authn,
        token_cache_ttl: ttl(cfg.authentication.webhook.cache_ttl),
        authorizer,
        cache_authorized_ttl: ttl(cfg.authorization.webhook.cache_authorized_ttl),
        cache_unauthorized_ttl: ttl(cfg.authorization.webhook.cache_unauthorized_ttl),
    })
}

/// The API calls of the webhooks: on the kubelet's main client in API server mode
/// ([`Reviewers::kube`]), fakes in tests.
#[derive(Clone)]
pub struct Reviewers {
    /// Creates TokenReviews.
    pub token: Arc<dyn TokenReviewer>,
    /// Creates SubjectAccessReviews.
    pub sar: Arc<dyn SubjectAccessReviewer>,
}

impl Reviewers {
    /// Both on `client` (upstream `client.AuthenticationV1()` / `AuthorizationV1()`).
    pub fn kube(client: kube::Client) -> Self {
        let both = Arc::new(kubelet_auth::KubeReviewers::new(client));
        Reviewers {
            token: both.clone(),
            sar: both,
        }
    }
}

/// The secure port's token authenticator and authorizer (`BuildAuthn`, `BuildAuthz`).
#[derive(Clone)]
pub struct AuthComponents {
    /// The cached TokenReview webhook when `authentication.webhook.enabled`.
    pub token: Option<Arc<dyn TokenAuthenticator>>,
    /// `AlwaysAllow` or the SubjectAccessReview webhook.
    pub authorizer: Arc<dyn Authorizer>,
}

/// Builds what `settings` asks for; `reviewers` is `None` in standalone mode, where
/// [`build_auth`] has already refused the webhooks.
pub fn build_auth_components(
    settings: &AuthSettings,
    reviewers: Option<&Reviewers>,
) -> Result<AuthComponents, AuthError> {
    let token: Option<Arc<dyn TokenAuthenticator>> = match (settings.webhook_authn, reviewers) {
        (false, _) => None,
        (true, None) => return Err(AuthError::NoClient("authentication")),
        (true, Some(r)) => {
            let webhook = Arc::new(WebhookTokenAuthenticator::new(r.token.clone()));
            let ttl = settings.token_cache_ttl;
            let cached = CachedTokenAuthenticator::new(webhook, ttl, ttl)
                .map_err(|e| AuthError::Token(e.0))?;
            Some(Arc::new(cached))
        }
    };
    let authorizer: Arc<dyn Authorizer> = match (settings.authorizer, reviewers) {
        (AuthorizerMode::AlwaysAllow, _) => Arc::new(AlwaysAllow),
        (AuthorizerMode::Webhook, None) => return Err(AuthError::NoClient("authorization")),
        (AuthorizerMode::Webhook, Some(r)) => Arc::new(WebhookAuthorizer::new(
            r.sar.clone(),
            settings.cache_authorized_ttl,
            settings.cache_unauthorized_ttl,
        )),
    };
    Ok(AuthComponents { token, authorizer })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cfg(webhook: bool, mode: &str) -> KubeletConfiguration {
        let mut c = KubeletConfiguration::default();
        c.authentication.webhook.enabled = Some(webhook);
        c.authorization.mode = mode.to_string();
        c
    }

    #[test]
    fn standalone_with_webhooks_is_refused() {
        assert_eq!(
            build_auth(&cfg(true, "AlwaysAllow"), false),
            Err(AuthError::NoClient("authentication"))
        );
        assert_eq!(
            build_auth(&cfg(false, "Webhook"), false),
            Err(AuthError::NoClient("authorization"))
        );
        assert_eq!(
            build_auth(&cfg(true, "Webhook"), false)
                .unwrap_err()
                .to_string(),
            "no client provided, cannot use webhook authentication"
        );
    }

    #[test]
    fn modes() {
        assert_eq!(build_auth(&cfg(false, ""), false), Err(AuthError::NoMode));
        assert_eq!(
            build_auth(&cfg(false, "RBAC"), true),
            Err(AuthError::UnknownMode("RBAC".into()))
        );
        let ok = build_auth(&cfg(true, "Webhook"), true).unwrap();
        assert_eq!(ok.authorizer, AuthorizerMode::Webhook);
        assert!(ok.webhook_authn);
        let ok = build_auth(&cfg(false, "AlwaysAllow"), false).unwrap();
        assert_eq!(ok.authorizer, AuthorizerMode::AlwaysAllow);
    }

    #[test]
    fn ttls_from_the_defaulted_configuration() {
        let mut c = kubelet_config::new_kubelet_configuration();
        c.authorization.mode = "Webhook".into();
        let s = build_auth(&c, true).unwrap();
        assert_eq!(s.token_cache_ttl, Duration::from_secs(120));
        assert_eq!(s.cache_authorized_ttl, Duration::from_secs(300));
        assert_eq!(s.cache_unauthorized_ttl, Duration::from_secs(30));
    }

    fn fakes() -> (
        Reviewers,
        Arc<kubelet_auth::FakeTokenReviewer>,
        Arc<kubelet_auth::FakeSubjectAccessReviewer>,
    ) {
        let token = Arc::new(kubelet_auth::FakeTokenReviewer::default());
        let sar = Arc::new(kubelet_auth::FakeSubjectAccessReviewer::default());
        let r = Reviewers {
            token: token.clone(),
            sar: sar.clone(),
        };
        (r, token, sar)
    }

    #[tokio::test]
    async fn webhook_components_call_the_reviewers() {
        use k8s_openapi::api::authentication::v1::TokenReviewStatus;
        let mut c = cfg(true, "Webhook");
        c.authentication.webhook.cache_ttl =
            kubelet_apimachinery::Duration::from_std(Duration::from_secs(120));
        let settings = build_auth(&c, true).unwrap();
        let (r, token, sar) = fakes();
        token.answer(
            "t",
            Ok(TokenReviewStatus {
                authenticated: Some(true),
                user: Some(k8s_openapi::api::authentication::v1::UserInfo {
                    username: Some("u".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        );
        sar.allow_all(true);
        let comp = build_auth_components(&settings, Some(&r)).unwrap();
        let tokens = comp.token.unwrap();
        let user = tokens.authenticate_token("t").await.unwrap().unwrap();
        tokens.authenticate_token("t").await.unwrap();
        assert_eq!(token.requests().len(), 1, "cached");
        let attrs = kubelet_server::authz::request_attributes("n", &user, "GET", "/pods", true);
        assert_eq!(
            comp.authorizer.authorize(&attrs[0]).await,
            Ok(kubelet_server::Decision::Allow)
        );
        assert_eq!(sar.requests().len(), 1);
    }

    #[tokio::test]
    async fn always_allow_and_no_webhook_need_no_reviewers() {
        let settings = build_auth(&cfg(false, "AlwaysAllow"), false).unwrap();
        let comp = build_auth_components(&settings, None).unwrap();
        assert!(comp.token.is_none());
        let attrs = kubelet_server::authz::request_attributes(
            "n",
            &kubelet_server::UserInfo::anonymous(),
            "GET",
            "/pods",
            true,
        );
        assert_eq!(
            comp.authorizer.authorize(&attrs[0]).await,
            Ok(kubelet_server::Decision::Allow)
        );
        let webhook = build_auth(&cfg(true, "Webhook"), true).unwrap();
        assert!(matches!(
            build_auth_components(&webhook, None),
            Err(AuthError::NoClient("authentication"))
        ));
    }
}
