//! client-go's certificate file store (`util/certificate/certificate_store.go`,
//! `NewFileStore`): `<dir>/<prefix>-current.pem` is a symlink to
//! `<dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem`, which holds the certificate chain and the key
//! (mode 0600). An update writes the new dated file, points `<prefix>-updated.pem` at it and
//! renames that over `-current.pem`; a start finding only `-updated.pem` finishes the
//! interrupted swap (`recover`).
//!
//! The filesystem is the real one: the store's contract is its on-disk layout, and the
//! tests check it in a temporary directory.

use std::path::{Path, PathBuf};

use crate::CertificateError;
use crate::cert::{Certificate, parse_certs_pem};

const CURRENT: &str = "current";
const UPDATED: &str = "updated";

/// `fileStore`.
#[derive(Debug, Clone)]
pub struct FileStore {
    pair_name_prefix: String,
    cert_directory: PathBuf,
    key_directory: PathBuf,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
}

/// `NoCertKeyError`: nothing to load.
pub fn is_no_cert_key(e: &CertificateError) -> bool {
    matches!(e, CertificateError::NoCertKey(_))
}

impl FileStore {
    /// `NewFileStore(prefix, certDirectory, keyDirectory, certFile, keyFile)`; runs the
    /// recovery of an interrupted update.
    pub fn new(
        pair_name_prefix: &str,
        cert_directory: &Path,
        key_directory: &Path,
        cert_file: Option<&Path>,
        key_file: Option<&Path>,
    ) -> Result<Self, CertificateError> {
        let s = Self {
            pair_name_prefix: pair_name_prefix.to_string(),
            cert_directory: cert_directory.to_path_buf(),
            key_directory: key_directory.to_path_buf(),
            cert_file: cert_file
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf),
            key_file: key_file
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf),
        };
        s.recover()?;
        Ok(s)
    }

    fn filename(&self, qualifier: &str) -> String {
        format!("{}-{qualifier}.pem", self.pair_name_prefix)
    }

    /// `CurrentPath`: `<certDirectory>/<prefix>-current.pem`.
    pub fn current_path(&self) -> PathBuf {
        self.cert_directory.join(self.filename(CURRENT))
    }

    fn recover(&self) -> Result<(), CertificateError> {
        let current = self.current_path();
        if file_exists(&current)? {
            return Ok(());
        }
        let updated = self.cert_directory.join(self.filename(UPDATED));
        match std::fs::symlink_metadata(&updated) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(CertificateError::io(&updated, e)),
            Ok(m) if !m.file_type().is_symlink() => {
                return Err(CertificateError::Store(format!(
                    "expected {updated:?} to be a symlink but it is a file"
                )));
            }
            Ok(_) => {}
        }
        std::fs::rename(&updated, &current).map_err(|e| {
            CertificateError::Store(format!("unable to rename {updated:?} to {current:?}: {e}"))
        })
    }

    /// `Current`: the combined `-current.pem`, else `certFile`/`keyFile`, else
    /// `<prefix>.crt`/`<prefix>.key`; [`CertificateError::NoCertKey`] when none exists.
    pub fn current(&self) -> Result<Certificate, CertificateError> {
        let pair = self.current_path();
        if file_exists(&pair)? {
            tracing::info!(filePath = %pair.display(), "Loading cert/key pair from a file");
            return load_file(&pair);
        }
        if let (Some(c), Some(k)) = (&self.cert_file, &self.key_file)
            && file_exists(c)?
            && file_exists(k)?
        {
            tracing::info!(certFile = %c.display(), keyFile = %k.display(), "Loading cert/key pair");
            return load_pair(c, k);
        }
        let c = self
            .cert_directory
            .join(format!("{}.crt", self.pair_name_prefix));
        let k = self
            .key_directory
            .join(format!("{}.key", self.pair_name_prefix));
        if file_exists(&c)? && file_exists(&k)? {
            tracing::info!(certFile = %c.display(), keyFile = %k.display(), "Loading cert/key pair");
            return load_pair(&c, &k);
        }
        let show = |p: &Option<PathBuf>| {
            p.as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        Err(CertificateError::NoCertKey(format!(
            "no cert/key files read at {:?}, ({:?}, {:?}) or ({:?}, {:?})",
            pair.display().to_string(),
            show(&self.cert_file),
            show(&self.key_file),
            self.cert_directory.display().to_string(),
            self.key_directory.display().to_string()
        )))
    }

    /// `Update`: write `<prefix>-<now>.pem` (the certificates of `cert_pem`, then the first
    /// PEM block of `key_pem`), check it loads, and make it current. `now` is the local
    /// time stamp `2006-01-02-15-04-05`.
    pub fn update_at(
        &self,
        cert_pem: &[u8],
        key_pem: &[u8],
        stamp: &str,
    ) -> Result<Certificate, CertificateError> {
        std::fs::create_dir_all(&self.cert_directory).map_err(|e| {
            CertificateError::Store(format!(
                "could not create directory {:?} to store certificates: {e}",
                self.cert_directory
            ))
        })?;
        let cert_path = self.cert_directory.join(self.filename(stamp));
        let certs = parse_certs_pem(cert_pem)
            .map_err(|e| CertificateError::Store(format!("invalid certificate data: {e}")))?;
        let mut data = String::new();
        for c in &certs {
            data.push_str(&crate::keys::pem_encode("CERTIFICATE", c.as_ref()));
        }
        data.push_str(
            &crate::keys::private_key_block(key_pem)
                .ok_or_else(|| CertificateError::Store("invalid key data".into()))?,
        );
        crate::keys::write_private(&cert_path, data.as_bytes())?;
        let cert = load_file(&cert_path)?;
        self.update_symlink(&cert_path)?;
        Ok(cert)
    }

    /// [`FileStore::update_at`] with the current local time.
    pub fn update(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<Certificate, CertificateError> {
        self.update_at(cert_pem, key_pem, &crate::util::file_stamp_now())
    }

    fn update_symlink(&self, filename: &Path) -> Result<(), CertificateError> {
        let current = self.current_path();
        let current_exists = match std::fs::symlink_metadata(&current) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(CertificateError::io(&current, e)),
            Ok(m) if !m.file_type().is_symlink() => {
                return Err(CertificateError::Store(format!(
                    "expected {current:?} to be a symlink but it is a file"
                )));
            }
            Ok(_) => true,
        };
        let updated = self.cert_directory.join(self.filename(UPDATED));
        match std::fs::symlink_metadata(&updated) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CertificateError::io(&updated, e)),
            Ok(m) if !m.file_type().is_symlink() => {
                return Err(CertificateError::Store(format!(
                    "expected {updated:?} to be a symlink but it is a file"
                )));
            }
            Ok(_) => std::fs::remove_file(&updated).map_err(|e| {
                CertificateError::Store(format!("unable to remove {updated:?}: {e}"))
            })?,
        }
        if !file_exists(filename)? {
            return Err(CertificateError::Store(format!(
                "file {filename:?} does not exist so it can not be used as the currently selected cert/key"
            )));
        }
        let target =
            std::path::absolute(filename).map_err(|e| CertificateError::io(filename, e))?;
        std::os::unix::fs::symlink(&target, &updated).map_err(|e| {
            CertificateError::Store(format!(
                "unable to create a symlink from {updated:?} to {target:?}: {e}"
            ))
        })?;
        if current_exists {
            std::fs::remove_file(&current).map_err(|e| {
                CertificateError::Store(format!("unable to remove {current:?}: {e}"))
            })?;
        }
        std::fs::rename(&updated, &current).map_err(|e| {
            CertificateError::Store(format!("unable to rename {updated:?} to {current:?}: {e}"))
        })
    }
}

fn load_file(path: &Path) -> Result<Certificate, CertificateError> {
    let data = std::fs::read(path).map_err(|e| CertificateError::io(path, e))?;
    Certificate::from_pem(&data, &data).map_err(|e| {
        CertificateError::Store(format!(
            "could not convert data from {path:?} into cert/key pair: {e}"
        ))
    })
}

fn load_pair(cert: &Path, key: &Path) -> Result<Certificate, CertificateError> {
    let c = std::fs::read(cert).map_err(|e| CertificateError::io(cert, e))?;
    let k = std::fs::read(key).map_err(|e| CertificateError::io(key, e))?;
    Certificate::from_pem(&c, &k)
}

/// `fileExists` (follows symlinks: a dangling `-current.pem` does not exist).
fn file_exists(path: &Path) -> Result<bool, CertificateError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CertificateError::io(path, e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::TestCa;

    #[test]
    fn layout_is_client_gos() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new("kubelet-client", dir.path(), dir.path(), None, None).unwrap();
        assert!(is_no_cert_key(&store.current().unwrap_err()));
        let ca = TestCa::new();
        let (cert1, key1) = ca.issue_client("system:node:n1", std::time::Duration::from_secs(3600));
        let c1 = store
            .update_at(cert1.as_bytes(), key1.as_bytes(), "2026-11-30-17-00-00")
            .unwrap();
        assert_eq!(c1.leaf.common_name, "system:node:n1");
        let current = dir.path().join("kubelet-client-current.pem");
        let dated = dir.path().join("kubelet-client-2026-11-30-17-00-00.pem");
        assert_eq!(std::fs::read_link(&current).unwrap(), dated);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&dated).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Certificate then key in the one file.
        let text = std::fs::read_to_string(&dated).unwrap();
        let c = text.find("BEGIN CERTIFICATE").unwrap();
        let k = text.find("BEGIN EC PRIVATE KEY").unwrap();
        assert!(c < k, "{text}");
        assert_eq!(store.current().unwrap().leaf.serial, c1.leaf.serial);

        // A second update moves the link; the old file stays.
        let (cert2, key2) = ca.issue_client("system:node:n1", std::time::Duration::from_secs(3600));
        let c2 = store
            .update_at(cert2.as_bytes(), key2.as_bytes(), "2026-11-30-18-00-00")
            .unwrap();
        assert_eq!(
            std::fs::read_link(&current).unwrap(),
            dir.path().join("kubelet-client-2026-11-30-18-00-00.pem")
        );
        assert!(dated.exists());
        assert_eq!(store.current().unwrap().leaf.serial, c2.leaf.serial);
        assert_ne!(c1.leaf.serial, c2.leaf.serial);
        assert!(!dir.path().join("kubelet-client-updated.pem").exists());
        assert_eq!(store.current_path(), current);
    }

    #[test]
    fn recovers_an_interrupted_update_and_refuses_a_plain_current_file() {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let (cert, key) = ca.issue_client("system:node:n1", std::time::Duration::from_secs(3600));
        let dated = dir.path().join("kubelet-server-2026-01-01-00-00-00.pem");
        std::fs::write(&dated, format!("{cert}{key}")).unwrap();
        std::os::unix::fs::symlink(&dated, dir.path().join("kubelet-server-updated.pem")).unwrap();
        let store = FileStore::new("kubelet-server", dir.path(), dir.path(), None, None).unwrap();
        assert_eq!(
            std::fs::read_link(dir.path().join("kubelet-server-current.pem")).unwrap(),
            dated
        );
        assert!(store.current().is_ok());

        let other = tempfile::tempdir().unwrap();
        std::fs::write(
            other.path().join("kubelet-client-current.pem"),
            format!("{cert}{key}"),
        )
        .unwrap();
        let store =
            FileStore::new("kubelet-client", other.path(), other.path(), None, None).unwrap();
        let err = store.update(cert.as_bytes(), key.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("to be a symlink but it is a file"),
            "{err}"
        );
    }

    #[test]
    fn falls_back_to_the_configured_pair_then_prefix_files() {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let (cert, key) = ca.issue_client("a", std::time::Duration::from_secs(3600));
        std::fs::write(dir.path().join("kubelet-server.crt"), &cert).unwrap();
        std::fs::write(dir.path().join("kubelet-server.key"), &key).unwrap();
        let store = FileStore::new("kubelet-server", dir.path(), dir.path(), None, None).unwrap();
        assert_eq!(store.current().unwrap().leaf.common_name, "a");
        let (cert, key) = ca.issue_client("b", std::time::Duration::from_secs(3600));
        let (c, k) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&c, &cert).unwrap();
        std::fs::write(&k, &key).unwrap();
        let store =
            FileStore::new("kubelet-server", dir.path(), dir.path(), Some(&c), Some(&k)).unwrap();
        assert_eq!(store.current().unwrap().leaf.common_name, "b");
    }
}
