//! Private keys as client-go makes and stores them (`k8s.io/client-go/util/keyutil`,
//! `certificate_manager.go` `generateCSR`): ECDSA P-256, written as an SEC1
//! `EC PRIVATE KEY` PEM block (`x509.MarshalECPrivateKey`). PKCS#8 `PRIVATE KEY` blocks
//! are read too (`keyutil.ParsePrivateKeyPEM` accepts both).
//!
//! *ring* (through rcgen) makes and reads PKCS#8 only, so the two P-256 encodings are
//! converted here; both have a fixed layout for that curve.

use std::path::Path;

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};

use crate::CertificateError;

/// `keyutil.ECPrivateKeyBlockType`.
pub const EC_PRIVATE_KEY_BLOCK_TYPE: &str = "EC PRIVATE KEY";
/// `keyutil.PrivateKeyBlockType` (PKCS#8).
pub const PRIVATE_KEY_BLOCK_TYPE: &str = "PRIVATE KEY";

/// id-ecPublicKey, prime256v1 (the PKCS#8 algorithm identifier of a P-256 key).
const P256_ALGORITHM: &[u8] = &[
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
    0xce, 0x3d, 0x03, 0x01, 0x07,
];
/// `[0] { prime256v1 }`, the SEC1 parameters Go writes.
const P256_PARAMETERS: &[u8] = &[
    0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
];

/// A private key: the signing key and its PEM as stored on disk.
#[derive(Debug)]
pub struct PrivateKey {
    /// The key, for signing certificate requests.
    pub key_pair: KeyPair,
    /// The PEM block kept in the store (SEC1 for keys made here).
    pub pem: String,
}

/// A new ECDSA P-256 key, PEM-encoded as `x509.MarshalECPrivateKey` does.
pub fn generate_key() -> Result<PrivateKey, CertificateError> {
    let key_pair = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
        .map_err(|e| CertificateError::Key(format!("unable to generate a new private key: {e}")))?;
    let sec1 = pkcs8_to_sec1(&key_pair.serialize_der(), key_pair.public_key_raw())?;
    let pem = pem_encode(EC_PRIVATE_KEY_BLOCK_TYPE, &sec1);
    Ok(PrivateKey { key_pair, pem })
}

/// `keyutil.ParsePrivateKeyPEM` for the keys the kubelet makes: the first `EC PRIVATE KEY`
/// or `PRIVATE KEY` block (P-256).
pub fn parse_private_key_pem(pem: &str) -> Result<PrivateKey, CertificateError> {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::PemObject;
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| CertificateError::Key(format!("data does not contain a valid key: {e}")))?;
    let pkcs8 = match &der {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der().to_vec(),
        PrivateKeyDer::Sec1(k) => sec1_to_pkcs8(k.secret_sec1_der()),
        PrivateKeyDer::Pkcs1(_) => {
            return Err(CertificateError::Key(
                "RSA keys are not supported by kubelet-rs (it makes ECDSA P-256 keys)".into(),
            ));
        }
        _ => return Err(CertificateError::Key("unknown private key type".into())),
    };
    let key_pair =
        KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8.as_slice().into(), &PKCS_ECDSA_P256_SHA256)
            .map_err(|e| CertificateError::Key(format!("invalid private key: {e}")))?;
    Ok(PrivateKey {
        key_pair,
        pem: pem.to_string(),
    })
}

/// `keyutil.LoadOrGenerateKeyFile`: the key at `path` if it parses, otherwise a new one
/// written there (mode 0600, directory created).
pub fn load_or_generate_key_file(path: &Path) -> Result<PrivateKey, CertificateError> {
    match std::fs::read_to_string(path) {
        Ok(pem) => {
            if let Ok(key) = parse_private_key_pem(&pem) {
                return Ok(key);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(CertificateError::io(path, e)),
    }
    let key = generate_key()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CertificateError::io(dir, e))?;
    }
    write_private(path, key.pem.as_bytes())?;
    Ok(key)
}

/// Write `data` to `path` with mode 0600.
pub(crate) fn write_private(path: &Path, data: &[u8]) -> Result<(), CertificateError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| CertificateError::io(path, e))?;
    f.write_all(data)
        .and_then(|()| f.sync_all())
        .map_err(|e| CertificateError::io(path, e))
}

/// PEM with 64-column lines, as Go's `pem.Encode`.
pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first `... PRIVATE KEY` PEM block of `data` (a combined file holds the
/// certificates first).
pub fn private_key_block(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    let mut rest = &text[..];
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        let label_start = "-----BEGIN ".len();
        let label_end = block[label_start..].find("-----")? + label_start;
        let label = &block[label_start..label_end];
        let end_marker = format!("-----END {label}-----");
        let end = block.find(&end_marker)? + end_marker.len();
        if label.ends_with("PRIVATE KEY") {
            return Some(format!("{}\n", &block[..end]));
        }
        rest = &block[end..];
    }
    None
}

/// One DER TLV at the start of `input`: (tag, value, rest).
fn der_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&len0, rest) = rest.split_first()?;
    let (len, rest) = if len0 < 0x80 {
        (usize::from(len0), rest)
    } else {
        let n = usize::from(len0 & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The private scalar of a PKCS#8 P-256 key (ring's layout: the inner ECPrivateKey's
/// OCTET STRING).
fn pkcs8_private_scalar(pkcs8: &[u8]) -> Option<Vec<u8>> {
    let (_, seq, _) = der_tlv(pkcs8)?; // PrivateKeyInfo
    let (_, _, rest) = der_tlv(seq)?; // version
    let (_, _, rest) = der_tlv(rest)?; // algorithm
    let (0x04, inner, _) = der_tlv(rest)? else {
        return None;
    };
    let (_, ec, _) = der_tlv(inner)?; // ECPrivateKey
    let (_, _, rest) = der_tlv(ec)?; // version 1
    let (0x04, scalar, _) = der_tlv(rest)? else {
        return None;
    };
    Some(scalar.to_vec())
}

/// `x509.MarshalECPrivateKey` of a P-256 key: version 1, the scalar, `[0]` the curve,
/// `[1]` the uncompressed public point.
fn pkcs8_to_sec1(pkcs8: &[u8], public: &[u8]) -> Result<Vec<u8>, CertificateError> {
    let scalar = pkcs8_private_scalar(pkcs8)
        .filter(|s| s.len() == 32)
        .ok_or_else(|| CertificateError::Key("unable to marshal the new key to DER".into()))?;
    if public.len() != 65 {
        return Err(CertificateError::Key("unexpected P-256 public key".into()));
    }
    let mut body = vec![0x02, 0x01, 0x01, 0x04, 0x20];
    body.extend_from_slice(&scalar);
    body.extend_from_slice(P256_PARAMETERS);
    body.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00]);
    body.extend_from_slice(public);
    let mut out = vec![0x30, body.len() as u8];
    out.extend_from_slice(&body);
    Ok(out)
}

/// Wrap an SEC1 key into PKCS#8 (what rustls does for *ring*).
fn sec1_to_pkcs8(sec1: &[u8]) -> Vec<u8> {
    let mut inner = vec![0x02, 0x01, 0x00];
    inner.extend_from_slice(P256_ALGORITHM);
    inner.push(0x04);
    push_len(&mut inner, sec1.len());
    inner.extend_from_slice(sec1);
    let mut out = vec![0x30];
    push_len(&mut out, inner.len());
    out.extend_from_slice(&inner);
    out
}

fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend_from_slice(&[0x81, len as u8]);
    } else {
        out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_sec1_and_read_back() {
        let key = generate_key().unwrap();
        assert!(
            key.pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"),
            "{}",
            key.pem
        );
        let back = parse_private_key_pem(&key.pem).unwrap();
        assert_eq!(
            back.key_pair.public_key_raw(),
            key.key_pair.public_key_raw()
        );
        // The PKCS#8 form reads too.
        let pkcs8 = key.key_pair.serialize_pem();
        let back = parse_private_key_pem(&pkcs8).unwrap();
        assert_eq!(
            back.key_pair.public_key_raw(),
            key.key_pair.public_key_raw()
        );
        // rustls can sign with the SEC1 form (it is what the TLS stacks load).
        use rustls_pki_types::PrivateKeyDer;
        use rustls_pki_types::pem::PemObject;
        let der = PrivateKeyDer::from_pem_slice(key.pem.as_bytes()).unwrap();
        assert!(matches!(der, PrivateKeyDer::Sec1(_)));
        rustls::crypto::ring::sign::any_supported_type(&der).unwrap();
    }

    #[test]
    fn load_or_generate_reuses_the_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pki/kubelet-client.key.tmp");
        let first = load_or_generate_key_file(&path).unwrap();
        let second = load_or_generate_key_file(&path).unwrap();
        assert_eq!(
            first.key_pair.public_key_raw(),
            second.key_pair.public_key_raw()
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Garbage is replaced.
        std::fs::write(&path, "junk").unwrap();
        let third = load_or_generate_key_file(&path).unwrap();
        assert_ne!(
            third.key_pair.public_key_raw(),
            first.key_pair.public_key_raw()
        );
    }
}
