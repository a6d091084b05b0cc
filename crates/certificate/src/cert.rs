//! A certificate with its key, as Go's `tls.Certificate` with `Leaf` set: the chain, the
//! key PEM, the parsed leaf (validity, subject, SANs) and the rustls [`CertifiedKey`] the
//! TLS stacks present.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::CertificateError;

/// What the kubelet reads from a leaf certificate (`x509.Certificate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// `NotBefore`.
    pub not_before: SystemTime,
    /// `NotAfter`.
    pub not_after: SystemTime,
    /// `Subject.CommonName`.
    pub common_name: String,
    /// `Subject.Organization`.
    pub organizations: Vec<String>,
    /// `DNSNames`.
    pub dns_names: Vec<String>,
    /// `IPAddresses`.
    pub ip_addresses: Vec<IpAddr>,
    /// The serial number, hex (to tell two certificates apart in logs and tests).
    pub serial: String,
}

/// A certificate chain and its private key.
#[derive(Clone)]
pub struct Certificate {
    /// DER certificates, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The parsed leaf.
    pub leaf: Leaf,
    /// The key, PEM as stored.
    pub key_pem: String,
    /// What rustls presents.
    pub certified_key: Arc<CertifiedKey>,
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("leaf", &self.leaf)
            .field("chain_len", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl Certificate {
    /// `tls.X509KeyPair` + parsing the leaf: `cert_pem` holds the chain (other blocks are
    /// skipped), `key_pem` the key (it may be the same combined file).
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, CertificateError> {
        let chain = parse_certs_pem(cert_pem)?;
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
            CertificateError::Pem(format!("failed to find any PEM data in key input: {e}"))
        })?;
        let signing = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| CertificateError::Pem(format!("invalid private key: {e}")))?;
        let certified_key = CertifiedKey::new(chain.clone(), signing);
        certified_key
            .keys_match()
            .map_err(|_| CertificateError::Pem("private key does not match public key".into()))?;
        let leaf = parse_leaf(&chain[0])?;
        Ok(Self {
            chain,
            leaf,
            key_pem: crate::keys::private_key_block(key_pem).unwrap_or_default(),
            certified_key: Arc::new(certified_key),
        })
    }

    /// The chain as PEM.
    pub fn chain_pem(&self) -> String {
        self.chain
            .iter()
            .map(|c| crate::keys::pem_encode("CERTIFICATE", c.as_ref()))
            .collect()
    }
}

/// `certutil.ParseCertsPEM`: every `CERTIFICATE` block; at least one.
pub fn parse_certs_pem(data: &[u8]) -> Result<Vec<CertificateDer<'static>>, CertificateError> {
    let certs = CertificateDer::pem_slice_iter(data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            CertificateError::Pem(format!("data does not contain a valid certificate: {e}"))
        })?;
    if certs.is_empty() {
        return Err(CertificateError::Pem(
            "data does not contain any valid RSA or ECDSA certificates".into(),
        ));
    }
    for c in &certs {
        parse_leaf(c)?;
    }
    Ok(certs)
}

/// The fields of `der` the kubelet uses.
pub fn parse_leaf(der: &CertificateDer<'_>) -> Result<Leaf, CertificateError> {
    use x509_parser::extensions::GeneralName;
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|e| CertificateError::Pem(format!("unable to parse certificate data: {e}")))?;
    let time = |t: x509_parser::time::ASN1Time| {
        let secs = t.timestamp();
        if secs >= 0 {
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
        } else {
            SystemTime::UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
        }
    };
    let subject = cert.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok().map(str::to_string))
        .collect();
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns_names.push((*d).to_string()),
                GeneralName::IPAddress(b) => match b.len() {
                    4 => {
                        let a: [u8; 4] = [b[0], b[1], b[2], b[3]];
                        ip_addresses.push(IpAddr::from(a));
                    }
                    16 => {
                        let mut a = [0u8; 16];
                        a.copy_from_slice(b);
                        ip_addresses.push(IpAddr::from(a));
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Ok(Leaf {
        not_before: time(cert.validity().not_before),
        not_after: time(cert.validity().not_after),
        common_name,
        organizations,
        dns_names,
        ip_addresses,
        serial: cert.raw_serial_as_string(),
    })
}
