//! Authentication on the secure port (`cmd/kubelet/app/auth.go` `BuildAuthn` → apiserver
//! `authenticatorfactory.DelegatingAuthenticatorConfig.New`): the union of x509 client
//! certificates, bearer tokens and WebSocket bearer-token protocols, then anonymous.
//!
//! * x509 (`authentication/request/x509`, `CommonNameUserConversion`): the TLS layer has
//!   already verified the chain against `clientCAFile`; the user is the leaf's subject CN
//!   and the groups its O values. An empty CN is no identity.
//! * bearer token (`authentication/request/bearertoken`): `Authorization: Bearer <token>`
//!   handed to a [`TokenAuthenticator`] (the kubelet's: the cached TokenReview webhook of
//!   `kubelet-auth`), only when `authentication.webhook.enabled`; on success the header is
//!   removed. A token that is not accepted is an error (`invalid bearer token`), not "no
//!   identity".
//! * WebSocket (`authentication/request/websocket`): the token in a
//!   `base64url.bearer.authorization.k8s.io.<token>` subprotocol of a WebSocket upgrade.
//! * union (`request/union`): the first identity wins; errors are collected and returned
//!   when nobody authenticated. `group.AuthenticatedGroupAdder` adds `system:authenticated`.
//! * anonymous (`unionauth.NewFailOnError`): only when no authenticator failed:
//!   `system:anonymous` in `system:unauthenticated`.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine as _;
use rustls_pki_types::CertificateDer;

/// `user.Anonymous`.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// `user.AllUnauthenticated`.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// `user.AllAuthenticated`, added to every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// `bearertoken`'s and `websocket`'s error for a token nobody accepted.
pub const INVALID_TOKEN: &str = "invalid bearer token";
/// `websocket.bearerProtocolPrefix`.
pub const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// Who made a request (`user.Info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The UID (from a TokenReview; empty for x509 and anonymous users).
    pub uid: String,
    /// The groups.
    pub groups: Vec<String>,
    /// Extra attributes (from a TokenReview).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        }
    }

    /// A user with a name and groups only.
    pub fn new(name: impl Into<String>, groups: Vec<String>) -> Self {
        UserInfo {
            name: name.into(),
            groups,
            ..UserInfo::default()
        }
    }
}

/// `group.AuthenticatedGroupAdder`: `system:authenticated` unless the user is anonymous or
/// already in `system:authenticated` / `system:unauthenticated`.
fn add_authenticated_group(mut user: UserInfo) -> UserInfo {
    let has = user
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
    if user.name != ANONYMOUS_USER && !has {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    user
}

/// The identity a TLS connection proved, computed once per connection after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerIdentity {
    /// No client certificate was presented (or no client CA is configured).
    None,
    /// A verified client certificate named this user (CN, O; no groups added yet).
    Cert(UserInfo),
    /// The chain the client presented, not verified yet: the TLS layer requests a client
    /// certificate without checking it (Go's `tls.RequestClientCert`); the x509
    /// authenticator checks it against `clientCAFile` per request, so a certificate from
    /// another CA is a 401, not a failed handshake, as upstream.
    Chain(Vec<CertificateDer<'static>>),
}

impl PeerIdentity {
    /// From the chain rustls reports (`peer_certificates()`).
    pub fn from_chain(chain: Option<&[CertificateDer<'_>]>) -> Self {
        match chain {
            Some(c) if !c.is_empty() => {
                PeerIdentity::Chain(c.iter().map(|d| d.clone().into_owned()).collect())
            }
            _ => PeerIdentity::None,
        }
    }
}

/// The x509 authenticator (`x509.New(verifyOptions, CommonNameUserConversion)`): the chain
/// must verify against the client CA, for client authentication, now; then CN → user and
/// O → groups (`None`: no CN, no identity).
pub fn verify_chain(
    verifier: &dyn rustls::server::danger::ClientCertVerifier,
    chain: &[CertificateDer<'static>],
) -> Result<Option<UserInfo>, String> {
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return Ok(None);
    };
    verifier
        .verify_client_cert(end_entity, intermediates, rustls_pki_types::UnixTime::now())
        .map_err(|e| format!("verifying certificate {}: {e}", describe(end_entity)))?;
    Ok(user_from_cert(end_entity))
}

/// `SN=…, CN=…` as upstream's x509 errors name a certificate.
fn describe(der: &CertificateDer<'_>) -> String {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, c)) => format!("SN={}, {}", c.raw_serial_as_string(), c.subject()),
        Err(_) => "(unparsable)".into(),
    }
}

/// CN → user, O → groups; `None` for an unparsable certificate or an empty CN.
pub fn user_from_cert(der: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    // Go's pkix.Name keeps the last CN.
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo::new(name, groups))
}

/// A token authenticator failed (`authenticator.Token` returned an error): the request is
/// not authenticated (401), and anonymous is not tried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenError(pub String);

/// The future [`TokenAuthenticator::authenticate_token`] returns: `Ok(None)` is "not
/// authenticated" without an error (Go's `ok == false, err == nil`).
pub type TokenFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<UserInfo>, TokenError>> + Send + 'a>>;

/// `authenticator.Token`.
pub trait TokenAuthenticator: Send + Sync {
    /// Who `token` belongs to.
    fn authenticate_token<'a>(&'a self, token: &'a str) -> TokenFuture<'a>;
}

/// Authentication failed with errors (`utilerrors.Aggregate`): 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", aggregate(.0))]
pub struct AuthnError(pub Vec<String>);

/// `utilerrors.aggregate.Error()`: one message as is, several as `[a, b]`.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `bearertoken.Authenticator`: the token of `Authorization: Bearer <token>`, if any.
fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = auth.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token.to_string())
}

/// `wsstream.IsWebSocketRequest`: `Upgrade: websocket` and `Connection` naming `upgrade`.
fn is_websocket_request(headers: &HeaderMap) -> bool {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    upgrade
        && headers.get_all(header::CONNECTION).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
        })
}

/// The WebSocket bearer token and the other subprotocols (`websocket.ProtocolAuthenticator`).
fn websocket_token(headers: &HeaderMap) -> Result<Option<(String, Vec<String>)>, String> {
    if !is_websocket_request(headers) {
        return Ok(None);
    }
    let mut token = String::new();
    let mut saw_token = false;
    let mut others = Vec::new();
    for value in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        let Ok(value) = value.to_str() else { continue };
        for protocol in value.split(',').map(str::trim) {
            let Some(encoded) = protocol.strip_prefix(BEARER_PROTOCOL_PREFIX) else {
                others.push(protocol.to_string());
                continue;
            };
            if saw_token {
                return Err("multiple base64.bearer.authorization tokens specified".into());
            }
            saw_token = true;
            let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded)
                .map_err(|_| "invalid base64.bearer.authorization token encoding".to_string())?;
            token = String::from_utf8(decoded)
                .map_err(|_| "invalid base64.bearer.authorization token".to_string())?;
        }
    }
    if !token.is_empty() && others.is_empty() {
        return Err("missing additional subprotocol".into());
    }
    Ok((!token.is_empty()).then_some((token, others)))
}

/// The request authenticator (`DelegatingAuthenticatorConfig.New`'s union).
#[derive(Clone, Default)]
pub struct Authenticator {
    /// `authentication.anonymous.enabled`.
    pub anonymous: bool,
    /// The cached TokenReview webhook (`authentication.webhook.enabled`), else `None`.
    pub token: Option<Arc<dyn TokenAuthenticator>>,
    /// The client CA's verifier (`authentication.x509.clientCAFile`), else `None`.
    pub x509: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("anonymous", &self.anonymous)
            .field("token", &self.token.is_some())
            .field("x509", &self.x509.is_some())
            .finish()
    }
}

impl Authenticator {
    /// `AuthenticateRequest`: `Ok(None)` and `Err` both mean 401 Unauthorized. On a
    /// successful token the credential is removed from `headers`, as upstream does.
    pub async fn authenticate(
        &self,
        peer: &PeerIdentity,
        headers: &mut HeaderMap,
    ) -> Result<Option<UserInfo>, AuthnError> {
        // x509 first; a certificate that does not verify is an error (the union then tries
        // tokens; anonymous is not tried after an error: `union.NewFailOnError`).
        let mut errs = Vec::new();
        match (peer, &self.x509) {
            (PeerIdentity::Cert(user), _) => {
                return Ok(Some(add_authenticated_group(user.clone())));
            }
            (PeerIdentity::Chain(chain), Some(verifier)) => {
                match verify_chain(verifier.as_ref(), chain) {
                    Ok(Some(user)) => return Ok(Some(add_authenticated_group(user))),
                    Ok(None) => {}
                    Err(e) => errs.push(e),
                }
            }
            _ => {}
        }
        if let Some(tokens) = &self.token {
            if let Some(token) = bearer_token(headers) {
                match tokens.authenticate_token(&token).await {
                    Ok(Some(user)) => {
                        headers.remove(header::AUTHORIZATION);
                        return Ok(Some(add_authenticated_group(user)));
                    }
                    Ok(None) => errs.push(INVALID_TOKEN.to_string()),
                    Err(e) => errs.push(e.0),
                }
            }
            match websocket_token(headers) {
                Ok(None) => {}
                Err(e) => errs.push(e),
                Ok(Some((token, others))) => match tokens.authenticate_token(&token).await {
                    Ok(Some(user)) => {
                        if let Ok(v) = HeaderValue::from_str(&others.join(",")) {
                            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
                        }
                        return Ok(Some(add_authenticated_group(user)));
                    }
                    Ok(None) => errs.push(INVALID_TOKEN.to_string()),
                    Err(e) => errs.push(e.0),
                },
            }
        }
        if !errs.is_empty() {
            return Err(AuthnError(errs));
        }
        Ok(self.anonymous.then(UserInfo::anonymous))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};
    use std::sync::Mutex;

    fn cert(cn: Option<&str>, orgs: &[&str]) -> CertificateDer<'static> {
        let mut p = CertificateParams::default();
        p.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(DnType::CommonName, cn);
        }
        for o in orgs {
            p.distinguished_name.push(DnType::OrganizationName, *o);
        }
        p.self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .clone()
    }

    /// Accepts `good`, errors on `broken`, rejects the rest; records what it saw.
    #[derive(Default)]
    struct Tokens {
        seen: Mutex<Vec<String>>,
    }

    impl TokenAuthenticator for Tokens {
        fn authenticate_token<'a>(&'a self, token: &'a str) -> TokenFuture<'a> {
            self.seen.lock().unwrap().push(token.to_string());
            Box::pin(async move {
                match token {
                    "good" => Ok(Some(UserInfo::new("sa", vec!["g".into()]))),
                    "broken" => Err(TokenError("webhook down".into())),
                    _ => Ok(None),
                }
            })
        }
    }

    fn with_tokens(anonymous: bool) -> (Authenticator, Arc<Tokens>) {
        let tokens = Arc::new(Tokens::default());
        let authn = Authenticator {
            anonymous,
            token: Some(tokens.clone()),
            x509: None,
        };
        (authn, tokens)
    }

    fn bearer(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[tokio::test]
    async fn cn_is_user_and_o_are_groups() {
        let c = cert(Some("system:kube-apiserver"), &["system:masters"]);
        let peer = PeerIdentity::Cert(user_from_cert(&c).unwrap());
        assert_eq!(
            peer,
            PeerIdentity::Cert(UserInfo::new(
                "system:kube-apiserver",
                vec!["system:masters".into()]
            ))
        );
        let authn = Authenticator::default();
        let user = authn
            .authenticate(&peer, &mut HeaderMap::new())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(user.groups, ["system:masters", AUTHENTICATED_GROUP]);
    }

    #[test]
    fn empty_cn_is_no_identity() {
        let c = cert(None, &["org"]);
        assert_eq!(user_from_cert(&c), None);
        assert_eq!(PeerIdentity::from_chain(Some(&[])), PeerIdentity::None);
    }

    #[tokio::test]
    async fn anonymous_only_when_enabled() {
        let on = Authenticator {
            anonymous: true,
            token: None,
            x509: None,
        };
        let mut h = bearer("Bearer whatever");
        assert_eq!(
            on.authenticate(&PeerIdentity::None, &mut h).await,
            Ok(Some(UserInfo::anonymous())),
            "without the webhook a token is ignored"
        );
        let off = Authenticator::default();
        assert_eq!(
            off.authenticate(&PeerIdentity::None, &mut HeaderMap::new())
                .await,
            Ok(None)
        );
    }

    #[tokio::test]
    async fn bearer_token_authenticates_and_is_removed() {
        let (authn, tokens) = with_tokens(false);
        let mut h = bearer("  bearer good  ");
        let user = authn
            .authenticate(&PeerIdentity::None, &mut h)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "sa");
        assert_eq!(user.groups, ["g", AUTHENTICATED_GROUP]);
        assert!(h.get(header::AUTHORIZATION).is_none());
        assert_eq!(*tokens.seen.lock().unwrap(), ["good"]);
    }

    #[tokio::test]
    async fn rejected_or_failed_token_is_an_error_even_with_anonymous() {
        let (authn, _) = with_tokens(true);
        let mut h = bearer("Bearer bad");
        assert_eq!(
            authn.authenticate(&PeerIdentity::None, &mut h).await,
            Err(AuthnError(vec![INVALID_TOKEN.into()]))
        );
        assert!(h.get(header::AUTHORIZATION).is_some());
        let mut h = bearer("Bearer broken");
        let err = authn
            .authenticate(&PeerIdentity::None, &mut h)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "webhook down");
    }

    #[tokio::test]
    async fn not_a_bearer_token_falls_through_to_anonymous() {
        let (authn, tokens) = with_tokens(true);
        for value in ["Basic abc", "Bearer", "Bearer  spaced", ""] {
            let mut h = bearer(value);
            assert_eq!(
                authn.authenticate(&PeerIdentity::None, &mut h).await,
                Ok(Some(UserInfo::anonymous())),
                "{value:?}"
            );
        }
        assert!(tokens.seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn x509_wins_over_token() {
        let (authn, tokens) = with_tokens(false);
        let peer = PeerIdentity::Cert(UserInfo::new("system:kube-apiserver", vec![]));
        let mut h = bearer("Bearer bad");
        let user = authn.authenticate(&peer, &mut h).await.unwrap().unwrap();
        assert_eq!(user.name, "system:kube-apiserver");
        assert!(tokens.seen.lock().unwrap().is_empty());
    }

    fn websocket(protocols: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_str(protocols).unwrap(),
        );
        h
    }

    #[tokio::test]
    async fn websocket_protocol_token() {
        let (authn, _) = with_tokens(false);
        let enc = |t: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
        let mut h = websocket(&format!(
            "v5.channel.k8s.io, {BEARER_PROTOCOL_PREFIX}{}",
            enc("good")
        ));
        let user = authn
            .authenticate(&PeerIdentity::None, &mut h)
            .await
            .unwrap();
        assert_eq!(user.unwrap().name, "sa");
        assert_eq!(h[header::SEC_WEBSOCKET_PROTOCOL], "v5.channel.k8s.io");

        let mut h = websocket(&format!("{BEARER_PROTOCOL_PREFIX}{}", enc("good")));
        assert_eq!(
            authn.authenticate(&PeerIdentity::None, &mut h).await,
            Err(AuthnError(vec!["missing additional subprotocol".into()]))
        );
        let mut h = websocket(&format!("v5.channel.k8s.io, {BEARER_PROTOCOL_PREFIX}!!"));
        assert_eq!(
            authn.authenticate(&PeerIdentity::None, &mut h).await,
            Err(AuthnError(vec![
                "invalid base64.bearer.authorization token encoding".into()
            ]))
        );
    }

    #[test]
    fn aggregate_messages() {
        assert_eq!(AuthnError(vec!["a".into()]).to_string(), "a");
        assert_eq!(
            AuthnError(vec!["a".into(), "b".into()]).to_string(),
            "[a, b]"
        );
    }
}
