//! `tlsCipherSuites` and `tlsMinVersion` (component-base `cli/flag/ciphersuites_flag.go`,
//! `TLSCipherSuites` and `TLSVersion`), mapped onto what rustls with *ring* implements.
//!
//! Go accepts every suite `crypto/tls` knows, secure or not. rustls implements only the
//! ECDHE AEAD suites of TLS 1.2 (and the fixed TLS 1.3 set), so:
//! * a name Go does not know is an error naming the flag, as upstream;
//! * a name Go knows but rustls does not implement (CBC, RSA key exchange, 3DES, RC4) is
//!   dropped with a warning: the server only ever offers a subset of what was configured;
//! * the insecure ones (Go's `InsecureCipherSuites`) also get upstream's warning.

use rustls::SupportedCipherSuite;
use rustls::crypto::ring::cipher_suite as cs;

/// TLS protocol versions the kubelet can require (`--tls-min-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 (also what `VersionTLS10`/`VersionTLS11` become: rustls has nothing older).
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// Errors in the TLS flags; each names the flag.
#[derive(Debug, thiserror::Error)]
pub enum TlsFlagError {
    /// A `--tls-cipher-suites` entry Go does not know either.
    #[error(
        "invalid --tls-cipher-suites (tlsCipherSuites): Cipher suite {0} not supported or doesn't exist"
    )]
    UnknownCipher(String),
    /// A `--tls-min-version` value that is not one of `VersionTLS1[0-3]`.
    #[error("invalid --tls-min-version (tlsMinVersion): unknown tls version {0:?}")]
    UnknownVersion(String),
}

/// Parses `tlsMinVersion`: empty means the default (TLS 1.2, as Go's server default).
pub fn parse_min_version(name: &str) -> Result<TlsVersion, TlsFlagError> {
    match name {
        "" | "VersionTLS12" => Ok(TlsVersion::Tls12),
        "VersionTLS10" | "VersionTLS11" => {
            tracing::warn!(
                version = name,
                "TLS 1.0 and 1.1 are not implemented; the minimum TLS version is 1.2"
            );
            Ok(TlsVersion::Tls12)
        }
        "VersionTLS13" => Ok(TlsVersion::Tls13),
        other => Err(TlsFlagError::UnknownVersion(other.to_string())),
    }
}

/// How Go's name maps onto rustls.
enum Known {
    /// Implemented by rustls (TLS 1.2 ECDHE AEAD).
    Tls12(SupportedCipherSuite),
    /// A TLS 1.3 suite: always enabled, not configurable (Go ignores it too).
    Tls13,
    /// Known to Go but not implemented by rustls; `insecure` per Go's `InsecureCipherSuites`.
    Unavailable { insecure: bool },
}

fn lookup(name: &str) -> Option<Known> {
    use Known::*;
    Some(match name {
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => {
            Tls12(cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
        }
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => {
            Tls12(cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => Tls12(cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => Tls12(cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
            Tls12(cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
        }
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
            Tls12(cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256)
        }
        "TLS_AES_128_GCM_SHA256" | "TLS_AES_256_GCM_SHA384" | "TLS_CHACHA20_POLY1305_SHA256" => {
            Tls13
        }
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"
        | "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"
        | "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
        | "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA" => Unavailable { insecure: false },
        "TLS_RSA_WITH_RC4_128_SHA"
        | "TLS_RSA_WITH_3DES_EDE_CBC_SHA"
        | "TLS_RSA_WITH_AES_128_CBC_SHA"
        | "TLS_RSA_WITH_AES_256_CBC_SHA"
        | "TLS_RSA_WITH_AES_128_CBC_SHA256"
        | "TLS_RSA_WITH_AES_128_GCM_SHA256"
        | "TLS_RSA_WITH_AES_256_GCM_SHA384"
        | "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA"
        | "TLS_ECDHE_RSA_WITH_RC4_128_SHA"
        | "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"
        | "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"
        | "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256" => Unavailable { insecure: true },
        _ => return None,
    })
}

/// The TLS 1.2 suites to offer for `tlsCipherSuites`, or `None` for rustls's defaults
/// (the list is empty). An empty `Some` means no configured suite is usable with TLS 1.2.
pub fn parse_cipher_suites(
    names: &[String],
) -> Result<Option<Vec<SupportedCipherSuite>>, TlsFlagError> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut out: Vec<SupportedCipherSuite> = Vec::new();
    for name in names {
        match lookup(name).ok_or_else(|| TlsFlagError::UnknownCipher(name.clone()))? {
            Known::Tls12(suite) => {
                if !out.iter().any(|s| s.suite() == suite.suite()) {
                    out.push(suite);
                }
            }
            Known::Tls13 => {}
            Known::Unavailable { insecure } => {
                if insecure {
                    tracing::info!(cipher = %name, "Use of insecure cipher detected.");
                }
                tracing::warn!(
                    cipher = %name,
                    "cipher suite is not implemented (only ECDHE AEAD suites are); not offered"
                );
            }
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions() {
        assert_eq!(parse_min_version("").unwrap(), TlsVersion::Tls12);
        assert_eq!(
            parse_min_version("VersionTLS10").unwrap(),
            TlsVersion::Tls12
        );
        assert_eq!(
            parse_min_version("VersionTLS13").unwrap(),
            TlsVersion::Tls13
        );
        let err = parse_min_version("TLS13").unwrap_err().to_string();
        assert!(
            err.contains("--tls-min-version") && err.contains("TLS13"),
            "{err}"
        );
    }

    #[test]
    fn empty_list_means_defaults() {
        assert!(parse_cipher_suites(&[]).unwrap().is_none());
    }

    #[test]
    fn maps_go_names_and_legacy_aliases() {
        let got = parse_cipher_suites(&names(&[
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            "TLS_AES_128_GCM_SHA256",
        ]))
        .unwrap()
        .unwrap();
        let suites: Vec<_> = got.iter().map(|s| s.suite()).collect();
        assert_eq!(
            suites,
            vec![
                cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.suite(),
                cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256.suite(),
            ]
        );
    }

    #[test]
    fn go_only_suites_are_dropped_not_fatal() {
        let got = parse_cipher_suites(&names(&[
            "TLS_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        ]))
        .unwrap()
        .unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn unknown_suite_names_the_flag() {
        let err = parse_cipher_suites(&names(&["TLS_FOO"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--tls-cipher-suites"), "{err}");
        assert!(
            err.contains("TLS_FOO not supported or doesn't exist"),
            "{err}"
        );
    }
}
