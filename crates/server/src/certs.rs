//! The serving certificate of the secure port (`cmd/kubelet/app/server.go` `InitializeTLS`
//! with client-go `cert.CanReadCertAndKey`, `cert.GenerateSelfSignedCertKey`, `WriteCert`
//! and `keyutil.WriteKey`).
//!
//! Without `tlsCertFile`/`tlsPrivateKeyFile` the kubelet uses `<cert-dir>/kubelet.crt` and
//! `<cert-dir>/kubelet.key`; when neither can be read it generates them: a throwaway CA
//! `CN=<host>-ca@<unix-time>` signing a leaf `CN=<host>@<unix-time>` for the hostname
//! (plus the given IPs), valid one year and backdated one hour. The certificate file holds
//! the leaf then the CA; the key file (mode 0600) holds the leaf's key.
//!
//! Deviation: upstream's keys are RSA-2048; *ring* cannot generate RSA keys, so ours are
//! ECDSA P-256 (PKCS#8 PEM). Certificates supplied by the operator may be RSA or ECDSA.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use time::{Duration, OffsetDateTime};

use crate::tls::TlsError;

/// Where the serving certificate and key live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertKeyPaths {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// The configured pair, or `<cert_dir>/kubelet.{crt,key}` when neither is set.
pub fn cert_key_paths(
    cert_file: Option<&Path>,
    key_file: Option<&Path>,
    cert_dir: &Path,
) -> Result<(CertKeyPaths, bool), TlsError> {
    match (cert_file, key_file) {
        (Some(c), Some(k)) => Ok((
            CertKeyPaths {
                cert: c.to_path_buf(),
                key: k.to_path_buf(),
            },
            false,
        )),
        (None, None) => Ok((
            CertKeyPaths {
                cert: cert_dir.join("kubelet.crt"),
                key: cert_dir.join("kubelet.key"),
            },
            true,
        )),
        (Some(c), None) => Err(TlsError::Unpaired(c.to_path_buf())),
        (None, Some(k)) => Err(TlsError::Unpaired(k.to_path_buf())),
    }
}

fn can_read(path: &Path) -> bool {
    File::open(path).is_ok()
}

/// `CanReadCertAndKey`: both readable → `true`; neither → `false`; one only → error.
pub fn can_read_cert_and_key(paths: &CertKeyPaths) -> Result<bool, TlsError> {
    match (can_read(&paths.cert), can_read(&paths.key)) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (false, true) => Err(TlsError::Unpaired(paths.cert.clone())),
        (true, false) => Err(TlsError::Unpaired(paths.key.clone())),
    }
}

/// [`can_read_cert_and_key`] under a shared `flock` of the certificate's directory (when it
/// exists), so that a pair another kubelet is writing ([`write_self_signed`]) is seen either
/// whole or not at all.
pub fn can_read_cert_and_key_consistently(paths: &CertKeyPaths) -> Result<bool, TlsError> {
    let dir = cert_dir_of(paths);
    let Ok(lock) = File::open(dir) else {
        return can_read_cert_and_key(paths);
    };
    lock.lock_shared().map_err(|source| TlsError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    can_read_cert_and_key(paths)
}

/// The directory whose `flock` guards the self-signed pair: the certificate's.
fn cert_dir_of(paths: &CertKeyPaths) -> &Path {
    paths
        .cert
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A generated certificate chain and key, PEM-encoded.
pub struct SelfSigned {
    /// Leaf then CA.
    pub cert_pem: String,
    /// The leaf's private key (PKCS#8).
    pub key_pem: String,
}

/// `GenerateSelfSignedCertKey(host, ips, nil)`.
pub fn generate_self_signed(host: &str, ips: &[IpAddr]) -> Result<SelfSigned, rcgen::Error> {
    let now = OffsetDateTime::now_utc();
    let stamp = now.unix_timestamp();
    let not_before = now - Duration::hours(1);
    let not_after = now + Duration::days(365);

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::CommonName, format!("{host}-ca@{stamp}"));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let leaf_key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec![host.to_string()])?;
    for ip in ips {
        let san = SanType::IpAddress(*ip);
        if !leaf.subject_alt_names.contains(&san) {
            leaf.subject_alt_names.push(san);
        }
    }
    leaf.distinguished_name = DistinguishedName::new();
    leaf.distinguished_name
        .push(DnType::CommonName, format!("{host}@{stamp}"));
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.not_before = not_before;
    leaf.not_after = not_after;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;

    Ok(SelfSigned {
        cert_pem: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        key_pem: leaf_key.serialize_pem(),
    })
}

/// Writes `data` to `path` with `mode` through a temporary file renamed over it, so a reader
/// never sees half a file.
fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<(), TlsError> {
    let io = |source| TlsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        // `mode` only applies on creation (and through the umask); set it as it is.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.map_err(io)
}

/// Generates the self-signed pair for `hostname` (plus `ips`) and writes it to `paths`,
/// unless another process wrote a readable pair there first.
///
/// Beyond upstream (which generates and writes without any lock): the check and the writes
/// happen under an exclusive `flock` of the certificate's directory and each file is
/// replaced at once, so kubelets started together on one `--cert-dir` (as tests do) never
/// load one's certificate with the other's key.
pub fn write_self_signed(
    paths: &CertKeyPaths,
    hostname: &str,
    ips: &[IpAddr],
) -> Result<(), TlsError> {
    let dir = cert_dir_of(paths);
    let io = |source| TlsError::Write {
        path: dir.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(io)?;
    if let Some(key_dir) = paths.key.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(key_dir).map_err(|source| TlsError::Write {
            path: key_dir.to_path_buf(),
            source,
        })?;
    }
    let lock = File::open(dir).map_err(io)?;
    lock.lock().map_err(io)?;
    if can_read_cert_and_key(paths)? {
        tracing::info!(
            cert = %paths.cert.display(),
            key = %paths.key.display(),
            "Using self-signed cert written by another process"
        );
        return Ok(());
    }
    let generated = generate_self_signed(hostname, ips).map_err(|e| TlsError::Generate {
        host: hostname.to_string(),
        reason: e.to_string(),
    })?;
    write_file(&paths.key, generated.key_pem.as_bytes(), 0o600)?;
    write_file(&paths.cert, generated.cert_pem.as_bytes(), 0o644)?;
    tracing::info!(
        cert = %paths.cert.display(),
        key = %paths.key.display(),
        "Using self-signed cert"
    );
    // The lock goes with `lock`.
    Ok(())
}

/// Reads a PEM certificate chain.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |reason: String| TlsError::Load {
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate found".into()));
    }
    Ok(certs)
}

/// Reads a PEM private key (PKCS#1, PKCS#8 or SEC1).
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Load {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_paths_and_unpaired_files() {
        let dir = Path::new("/var/lib/kubelet/pki");
        let (p, defaulted) = cert_key_paths(None, None, dir).unwrap();
        assert!(defaulted);
        assert_eq!(p.cert, dir.join("kubelet.crt"));
        assert_eq!(p.key, dir.join("kubelet.key"));
        let err = cert_key_paths(Some(Path::new("/x.crt")), None, dir).unwrap_err();
        assert!(err.to_string().contains("/x.crt"), "{err}");
    }

    #[test]
    fn one_readable_file_is_an_error_naming_the_other() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = CertKeyPaths {
            cert: tmp.path().join("kubelet.crt"),
            key: tmp.path().join("kubelet.key"),
        };
        assert!(!can_read_cert_and_key(&paths).unwrap());
        fs::write(&paths.cert, "x").unwrap();
        let err = can_read_cert_and_key(&paths).unwrap_err().to_string();
        assert!(err.contains("kubelet.key"), "{err}");
    }

    #[test]
    fn generated_pair_has_leaf_then_ca_and_private_key() {
        let ips = ["10.0.0.5".parse().unwrap()];
        let g = generate_self_signed("node1", &ips).unwrap();
        let certs: Vec<_> = CertificateDer::pem_slice_iter(g.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(certs.len(), 2);
        let (_, leaf) = x509_parser::parse_x509_certificate(&certs[0]).unwrap();
        let cns: Vec<_> = leaf.subject().iter_common_name().collect();
        assert_eq!(cns.len(), 1);
        assert!(cns[0].as_str().unwrap().starts_with("node1@"));
        let (_, ca) = x509_parser::parse_x509_certificate(&certs[1]).unwrap();
        assert!(ca.is_ca());
        assert_eq!(leaf.issuer(), ca.subject());
        let san = leaf.subject_alternative_name().unwrap().unwrap();
        use x509_parser::extensions::GeneralName;
        assert_eq!(
            san.value.general_names,
            vec![
                GeneralName::DNSName("node1"),
                GeneralName::IPAddress(&[10, 0, 0, 5])
            ]
        );
        PrivateKeyDer::from_pem_slice(g.key_pem.as_bytes()).unwrap();
    }

    #[test]
    fn key_file_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let (p, defaulted) = cert_key_paths(None, None, &dir).unwrap();
        assert!(defaulted);
        write_self_signed(&p, "node1", &[]).unwrap();
        let mode = fs::metadata(&p.key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        load_certs(&p.cert).unwrap();
        load_key(&p.key).unwrap();
    }
}
