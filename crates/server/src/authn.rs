//! Authentication on the secure port (`cmd/kubelet/app/auth.go` `BuildAuth` →
//! apiserver `DelegatingAuthenticatorConfig`): x509 client certificates, then anonymous.
//!
//! * x509 (`authentication/request/x509`, `CommonNameUserConversion`): the TLS layer has
//!   already verified the chain against `clientCAFile`; the user is the leaf's subject CN
//!   and the groups its O values, plus `system:authenticated`. An empty CN is no identity.
//! * anonymous, when enabled: `system:anonymous` in `system:unauthenticated`.
//! * bearer tokens (TokenReview webhook) need an API client and are not handled here.

use rustls_pki_types::CertificateDer;

/// `user.Anonymous`.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// `user.AllUnauthenticated`.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// `user.AllAuthenticated`, added to every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Who made a request (`user.Info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The anonymous user.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
        }
    }
}

/// The identity a TLS connection proved, computed once per connection after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerIdentity {
    /// No client certificate was presented (or no client CA is configured).
    None,
    /// A verified client certificate named this user.
    Cert(UserInfo),
}

impl PeerIdentity {
    /// From the verified chain rustls reports (`peer_certificates()`).
    pub fn from_chain(chain: Option<&[CertificateDer<'_>]>) -> Self {
        match chain.and_then(|c| c.first()).and_then(user_from_cert) {
            Some(user) => PeerIdentity::Cert(user),
            None => PeerIdentity::None,
        }
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
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    groups.push(AUTHENTICATED_GROUP.into());
    Some(UserInfo { name, groups })
}

/// The request authenticator: x509 identity first, then anonymous when enabled.
#[derive(Debug, Clone, Copy)]
pub struct Authenticator {
    /// `authentication.anonymous.enabled`.
    pub anonymous: bool,
}

impl Authenticator {
    /// `AuthenticateRequest`: `None` means 401 Unauthorized.
    pub fn authenticate(&self, peer: &PeerIdentity) -> Option<UserInfo> {
        match peer {
            PeerIdentity::Cert(user) => Some(user.clone()),
            PeerIdentity::None if self.anonymous => Some(UserInfo::anonymous()),
            PeerIdentity::None => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

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

    #[test]
    fn cn_is_user_and_o_are_groups() {
        let c = cert(Some("system:kube-apiserver"), &["system:masters"]);
        let peer = PeerIdentity::from_chain(Some(std::slice::from_ref(&c)));
        let user = UserInfo {
            name: "system:kube-apiserver".into(),
            groups: vec!["system:masters".into(), AUTHENTICATED_GROUP.into()],
        };
        assert_eq!(peer, PeerIdentity::Cert(user.clone()));
        let authn = Authenticator { anonymous: false };
        assert_eq!(authn.authenticate(&peer), Some(user));
    }

    #[test]
    fn empty_cn_is_no_identity() {
        let c = cert(None, &["org"]);
        assert_eq!(
            PeerIdentity::from_chain(Some(std::slice::from_ref(&c))),
            PeerIdentity::None
        );
    }

    #[test]
    fn anonymous_only_when_enabled() {
        let on = Authenticator { anonymous: true };
        assert_eq!(
            on.authenticate(&PeerIdentity::None),
            Some(UserInfo::anonymous())
        );
        let off = Authenticator { anonymous: false };
        assert_eq!(off.authenticate(&PeerIdentity::None), None);
    }
}
