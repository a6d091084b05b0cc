//! The checks of `BuildAuth` (mirrors `cmd/kubelet/app/auth.go`) that decide whether the
//! kubelet can start with its authentication and authorization settings.
//!
//! The secure server (10250) with x509/webhook authentication is a later step; what is
//! enforced here is upstream's start-up contract: webhook authn/authz needs an API client,
//! and the authorization mode must be known.

use kubelet_config::KubeletConfiguration;

/// Errors of the auth step.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// Webhook authentication or authorization without an API client (standalone mode).
    #[error("no client provided, cannot use webhook {0}")]
    NoClient(&'static str),
    /// `authorization.mode` is empty.
    #[error("No authorization mode specified")]
    NoMode,
    /// `authorization.mode` is not one the kubelet knows.
    #[error("Unknown authorization mode {0}")]
    UnknownMode(String),
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
    /// The authorizer.
    pub authorizer: AuthorizerMode,
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
        authorizer,
    })
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
}
