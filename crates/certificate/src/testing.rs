//! A throw-away CA for tests: issues client certificates and signs CSRs (the fake's
//! signer, as the controller-manager's csrsigning would).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DnType, IsCa, Issuer,
    KeyPair,
};

/// A CA with its key.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM.
    #[allow(dead_code)]
    pub cert_pem: String,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

fn validity(params: &mut CertificateParams, not_before: SystemTime, lifetime: Duration) {
    // A random serial: rcgen derives it from the key otherwise, and a renewal may reuse one.
    use ring::rand::SecureRandom;
    let mut serial = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut serial).unwrap();
    serial[0] &= 0x7f;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let nb = time::OffsetDateTime::from(not_before);
    params.not_before = nb;
    params.not_after = nb + lifetime;
}

impl TestCa {
    /// A new self-signed CA.
    pub fn new() -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "test-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A client certificate for `cn` valid from now for `lifetime`: (cert PEM, SEC1 key PEM).
    pub fn issue_client(&self, cn: &str, lifetime: Duration) -> (String, String) {
        self.issue_client_at(cn, SystemTime::now(), lifetime)
    }

    /// [`TestCa::issue_client`] valid from `not_before`.
    pub fn issue_client_at(
        &self,
        cn: &str,
        not_before: SystemTime,
        lifetime: Duration,
    ) -> (String, String) {
        let key = crate::keys::generate_key().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:nodes");
        params.distinguished_name.push(DnType::CommonName, cn);
        validity(&mut params, not_before, lifetime);
        let cert = params.signed_by(&key.key_pair, &self.issuer).unwrap();
        (cert.pem(), key.pem)
    }

    /// Sign the PEM request `csr_pem`, valid from now for `lifetime`.
    pub fn sign_csr(&self, csr_pem: &str, lifetime: Duration) -> String {
        let mut req = CertificateSigningRequestParams::from_pem(csr_pem).unwrap();
        validity(&mut req.params, SystemTime::now(), lifetime);
        req.signed_by(&self.issuer).unwrap().pem()
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// A fake CSR API that approves and signs every request with `ca`, valid for `lifetime`.
pub fn signing_api(
    ca: &std::sync::Arc<TestCa>,
    lifetime: Duration,
) -> std::sync::Arc<crate::api::FakeCsrApi> {
    let api = crate::api::FakeCsrApi::new();
    let ca = ca.clone();
    api.set_signer(std::sync::Arc::new(move |csr| {
        Some(
            ca.sign_csr(&String::from_utf8_lossy(&csr.spec.request.0), lifetime)
                .into_bytes(),
        )
    }));
    api
}
