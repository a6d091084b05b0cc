//! Certificate signing requests: the PKCS#10 request (`certutil.MakeCSR`,
//! `MakeCSRFromTemplate`), the kubelet's request templates and usages
//! (`pkg/kubelet/certificate/kubelet.go`, client-go `certificate_manager.go`), the name of
//! the bootstrap request (`digestedName` in `pkg/kubelet/certificate/bootstrap`), and the
//! request/wait protocol of client-go `util/certificate/csr/csr.go`
//! (`RequestCertificateWithContext`, `WaitForCertificate`, `ensureCompatible`) over the
//! [`CsrApi`](crate::api::CsrApi).

use std::net::IpAddr;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rcgen::{CertificateParams, DistinguishedName, DnType, PublicKeyData, SanType};
use sha2::Digest;

use crate::CertificateError;
use crate::api::{CsrApi, CsrApiError};
use crate::keys::PrivateKey;

/// `certificatesv1.KubeAPIServerClientKubeletSignerName`.
pub const KUBE_APISERVER_CLIENT_KUBELET_SIGNER: &str =
    "kubernetes.io/kube-apiserver-client-kubelet";
/// `certificatesv1.KubeletServingSignerName`.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

/// `certificatesv1.UsageDigitalSignature`.
pub const USAGE_DIGITAL_SIGNATURE: &str = "digital signature";
/// `certificatesv1.UsageClientAuth`.
pub const USAGE_CLIENT_AUTH: &str = "client auth";
/// `certificatesv1.UsageServerAuth`.
pub const USAGE_SERVER_AUTH: &str = "server auth";

/// `DefaultKubeletClientGetUsages` for an ECDSA key (no key encipherment).
pub const KUBELET_CLIENT_USAGES: &[&str] = &[USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH];
/// `DefaultKubeletServingGetUsages` for an ECDSA key.
pub const KUBELET_SERVING_USAGES: &[&str] = &[USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH];

/// The part of an `x509.CertificateRequest` template the kubelet fills.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestTemplate {
    /// `Subject.CommonName`.
    pub common_name: String,
    /// `Subject.Organization`.
    pub organizations: Vec<String>,
    /// `DNSNames`.
    pub dns_names: Vec<String>,
    /// `IPAddresses`.
    pub ip_addresses: Vec<IpAddr>,
}

impl RequestTemplate {
    /// `CN=system:node:<node>, O=system:nodes`, no SANs: the client certificate's subject.
    pub fn node(node_name: &str) -> Self {
        Self {
            common_name: format!("system:node:{node_name}"),
            organizations: vec!["system:nodes".into()],
            ..Self::default()
        }
    }
}

/// `certutil.MakeCSRFromTemplate`: a PEM `CERTIFICATE REQUEST` for `template` signed by
/// `key` (subject in Go's order: O before CN).
pub fn make_csr(key: &PrivateKey, template: &RequestTemplate) -> Result<String, CertificateError> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    for o in &template.organizations {
        dn.push(DnType::OrganizationName, o.as_str());
    }
    dn.push(DnType::CommonName, template.common_name.as_str());
    params.distinguished_name = dn;
    let bad = |e: rcgen::Error| {
        CertificateError::Csr(format!("unable to generate certificate request: {e}"))
    };
    for d in &template.dns_names {
        params
            .subject_alt_names
            .push(SanType::DnsName(d.clone().try_into().map_err(bad)?));
    }
    for ip in &template.ip_addresses {
        params.subject_alt_names.push(SanType::IpAddress(*ip));
    }
    params
        .serialize_request(&key.key_pair)
        .and_then(|csr| csr.pem())
        .map_err(bad)
}

/// `digestedName`: `node-csr-` + base64url(SHA-512/256 of the public key, subject and
/// usages), so a restarted bootstrap finds its own pending request.
pub fn digested_name(key: &PrivateKey, template: &RequestTemplate, usages: &[&str]) -> String {
    use base64::Engine;
    let encode = |d: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d);
    let mut hash = sha2::Sha512_256::new();
    let mut write = |d: &[u8]| {
        hash.update(encode(d).as_bytes());
        hash.update(b"|");
    };
    write(&key.key_pair.subject_public_key_info());
    write(template.common_name.as_bytes());
    for o in &template.organizations {
        write(o.as_bytes());
    }
    for u in usages {
        write(u.as_bytes());
    }
    format!("node-csr-{}", encode(&hash.finalize()))
}

/// `csr.DurationToExpirationSeconds`.
pub fn duration_to_expiration_seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

/// The object `RequestCertificateWithContext` creates: `name` or `generateName: csr-`.
pub fn new_csr_object(
    csr_pem: &str,
    name: Option<&str>,
    signer_name: &str,
    requested_duration: Option<Duration>,
    usages: &[&str],
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: name.map(str::to_string),
            generate_name: name.is_none().then(|| "csr-".to_string()),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: signer_name.to_string(),
            usages: Some(usages.iter().map(|u| u.to_string()).collect()),
            expiration_seconds: requested_duration.map(duration_to_expiration_seconds),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

/// `RequestCertificateWithContext`: create the request; when `name` is given and it
/// exists already (a bootstrap that restarted), reuse it if it is compatible. Returns the
/// request's name and UID.
pub async fn request_certificate(
    api: &dyn CsrApi,
    csr_pem: &str,
    name: Option<&str>,
    signer_name: &str,
    requested_duration: Option<Duration>,
    usages: &[&str],
    key: &PrivateKey,
) -> Result<(String, String), CertificateError> {
    let csr = new_csr_object(csr_pem, name, signer_name, requested_duration, usages);
    match api.create(csr.clone()).await {
        Ok(created) => Ok(created),
        Err(CsrApiError::AlreadyExists(_)) if name.is_some() => {
            let name = name.unwrap_or_default();
            tracing::info!("csr for this node already exists, reusing");
            let existing = api.get(name).await.map_err(|e| {
                CertificateError::Api(format!("cannot retrieve certificate signing request: {e}"))
            })?;
            ensure_compatible(&existing, &csr, key).map_err(|e| {
                CertificateError::Csr(format!("retrieved csr is not compatible: {e}"))
            })?;
            tracing::info!("csr for this node is still valid");
            let uid = existing.metadata.uid.clone().unwrap_or_default();
            Ok((name.to_string(), uid))
        }
        Err(e) => Err(CertificateError::ApiStatus(e)),
    }
}

/// `ensureCompatible`: same subject and signer, the request is for `key`, and an issued
/// certificate (if any) has not expired.
fn ensure_compatible(
    new: &CertificateSigningRequest,
    orig: &CertificateSigningRequest,
    key: &PrivateKey,
) -> Result<(), String> {
    let parse = |csr: &CertificateSigningRequest| {
        let pem = String::from_utf8_lossy(&csr.spec.request.0).into_owned();
        rcgen::CertificateSigningRequestParams::from_pem(&pem).map_err(|e| e.to_string())
    };
    let new_csr = parse(new).map_err(|e| format!("unable to parse new csr: {e}"))?;
    let orig_csr = parse(orig).map_err(|e| format!("unable to parse original csr: {e}"))?;
    let subject = |p: &rcgen::CertificateSigningRequestParams| {
        p.params
            .distinguished_name
            .iter()
            .map(|(t, v)| format!("{t:?}={v:?}"))
            .collect::<Vec<_>>()
    };
    if subject(&new_csr) != subject(&orig_csr) {
        return Err(format!(
            "csr subjects differ: new: {:?}, orig: {:?}",
            subject(&new_csr),
            subject(&orig_csr)
        ));
    }
    if !new.spec.signer_name.is_empty()
        && !orig.spec.signer_name.is_empty()
        && new.spec.signer_name != orig.spec.signer_name
    {
        return Err(format!(
            "csr signerNames differ: new {:?}, orig: {:?}",
            new.spec.signer_name, orig.spec.signer_name
        ));
    }
    // rcgen checked the request's self-signature when parsing; the key must be ours.
    if new_csr.public_key.der_bytes() != key.key_pair.public_key_raw() {
        return Err("error validating signature new CSR against old key".into());
    }
    if let Some(cert) = new.status.as_ref().and_then(|s| s.certificate.as_ref()) {
        let certs = crate::cert::parse_certs_pem(&cert.0)
            .map_err(|e| format!("error parsing signed certificate for CSR: {e}"))?;
        let now = std::time::SystemTime::now();
        for c in &certs {
            let leaf = crate::cert::parse_leaf(c).map_err(|e| e.to_string())?;
            if now > leaf.not_after {
                return Err(format!(
                    "one of the certificates for the CSR has expired: {}",
                    crate::util::format_time(leaf.not_after)
                ));
            }
        }
    }
    Ok(())
}

/// How a request being waited for stands (one step of `WaitForCertificate`'s condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsrState {
    /// Not approved yet, or approved and not issued yet.
    Pending,
    /// Approved and issued: the PEM certificate.
    Issued(Vec<u8>),
}

/// `WaitForCertificate`'s condition on one observed object.
pub fn csr_state(csr: &CertificateSigningRequest, uid: &str) -> Result<CsrState, CertificateError> {
    let name = csr.metadata.name.clone().unwrap_or_default();
    if csr.metadata.uid.as_deref().unwrap_or_default() != uid {
        return Err(CertificateError::Csr(format!("csr {name:?} changed UIDs")));
    }
    let Some(status) = &csr.status else {
        return Ok(CsrState::Pending);
    };
    let mut approved = false;
    for c in status.conditions.iter().flatten() {
        let reason = c.reason.clone().unwrap_or_default();
        let message = c.message.clone().unwrap_or_default();
        match c.type_.as_str() {
            "Denied" => {
                return Err(CertificateError::Csr(format!(
                    "certificate signing request is denied, reason: {reason}, message: {message}"
                )));
            }
            "Failed" => {
                return Err(CertificateError::Csr(format!(
                    "certificate signing request failed, reason: {reason}, message: {message}"
                )));
            }
            "Approved" => approved = true,
            _ => {}
        }
    }
    if approved {
        if let Some(cert) = status.certificate.as_ref().filter(|c| !c.0.is_empty()) {
            tracing::debug!(csr = %name, "Certificate signing request is issued");
            return Ok(CsrState::Issued(cert.0.clone()));
        }
        tracing::debug!(csr = %name, "Certificate signing request is approved, waiting to be issued");
    }
    Ok(CsrState::Pending)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::keys::generate_key;

    #[test]
    fn csr_carries_the_template() {
        let key = generate_key().unwrap();
        let mut t = RequestTemplate::node("n1");
        t.dns_names = vec!["n1.example".into()];
        t.ip_addresses = vec!["198.18.255.7".parse().unwrap()];
        let pem = make_csr(&key, &t).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"));
        let parsed = rcgen::CertificateSigningRequestParams::from_pem(&pem).unwrap();
        let dn: Vec<_> = parsed
            .params
            .distinguished_name
            .iter()
            .map(|(t, _)| t.clone())
            .collect();
        assert_eq!(dn, vec![DnType::OrganizationName, DnType::CommonName]);
        assert_eq!(
            parsed.params.distinguished_name.get(&DnType::CommonName),
            Some(&rcgen::DnValue::Utf8String("system:node:n1".into()))
        );
        assert_eq!(parsed.params.subject_alt_names.len(), 2);
        assert_eq!(parsed.public_key.der_bytes(), key.key_pair.public_key_raw());
    }

    #[test]
    fn digested_name_depends_on_key_subject_and_usages() {
        let key = generate_key().unwrap();
        let t = RequestTemplate::node("n1");
        let a = digested_name(&key, &t, KUBELET_CLIENT_USAGES);
        assert!(a.starts_with("node-csr-"), "{a}");
        // SHA-512/256 is 32 bytes: 43 base64url characters.
        assert_eq!(a.len(), "node-csr-".len() + 43);
        assert_eq!(a, digested_name(&key, &t, KUBELET_CLIENT_USAGES));
        assert_ne!(
            a,
            digested_name(&key, &RequestTemplate::node("n2"), KUBELET_CLIENT_USAGES)
        );
        assert_ne!(a, digested_name(&key, &t, KUBELET_SERVING_USAGES));
        assert_ne!(
            a,
            digested_name(&generate_key().unwrap(), &t, KUBELET_CLIENT_USAGES)
        );
    }
}
