//! configz (`k8s.io/component-base/configz`): the registered `kubeletconfig` object.
//!
//! `--print-config` prints [`Configz::kubeletconfig`] with `kind`/`apiVersion` added; the
//! `/configz` endpoint of the secure server serves [`Configz::payload`], which is exactly
//! upstream's object (see [`kubelet_config_object`]).

use std::path::Path;

use kubelet_config::{KubeletConfiguration, KubeletFlags};
use serde_json::Value;

/// The registered configuration.
#[derive(Debug, Clone)]
pub struct Configz {
    kubeletconfig: Value,
}

impl Configz {
    /// Registers the configuration object under the name `kubeletconfig`.
    pub fn new(kubeletconfig: Value) -> Self {
        Configz { kubeletconfig }
    }

    /// The registered object.
    pub fn kubeletconfig(&self) -> &Value {
        &self.kubeletconfig
    }

    /// What `/configz` answers: `{"kubeletconfig": {...}}`.
    pub fn payload(&self) -> Value {
        serde_json::json!({ "kubeletconfig": self.kubeletconfig })
    }
}

/// The configuration as upstream registers it: after `InitializeTLS`, which sets
/// `tlsCertFile`/`tlsPrivateKeyFile` to `<cert-dir>/kubelet.crt|key` when neither is set and
/// `serverTLSBootstrap` is off (whether or not the pair exists yet).
pub fn effective_config(
    config: &KubeletConfiguration,
    flags: &KubeletFlags,
) -> KubeletConfiguration {
    let mut c = config.clone();
    if !c.server_tls_bootstrap && c.tls_cert_file.is_empty() && c.tls_private_key_file.is_empty() {
        let dir = Path::new(&flags.cert_directory);
        let file = |name: &str| {
            kubelet_config::fs::clean(&dir.join(name))
                .to_string_lossy()
                .into_owned()
        };
        c.tls_cert_file = file("kubelet.crt");
        c.tls_private_key_file = file("kubelet.key");
    }
    c
}

/// The object `/configz` serves under `kubeletconfig` (no `kind`/`apiVersion`, as upstream).
pub fn kubelet_config_object(config: &KubeletConfiguration, flags: &KubeletFlags) -> Value {
    effective_config(config, flags).to_configz_json()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn configz_object_is_upstreams() {
        let flags = KubeletFlags {
            cert_directory: "/var/lib/kubelet/pki/".into(),
            ..KubeletFlags::default()
        };
        let obj = kubelet_config_object(&KubeletConfiguration::default(), &flags);
        assert!(obj.get("kind").is_none() && obj.get("apiVersion").is_none());
        assert_eq!(obj["enableSystemLogQuery"], false);
        assert_eq!(obj["tlsCertFile"], "/var/lib/kubelet/pki/kubelet.crt");
        assert_eq!(obj["tlsPrivateKeyFile"], "/var/lib/kubelet/pki/kubelet.key");

        let given = KubeletConfiguration {
            tls_cert_file: "/etc/k.crt".into(),
            ..KubeletConfiguration::default()
        };
        let obj = kubelet_config_object(&given, &flags);
        assert_eq!(obj["tlsCertFile"], "/etc/k.crt");
        assert!(obj.get("tlsPrivateKeyFile").is_none());

        let bootstrap = KubeletConfiguration {
            server_tls_bootstrap: true,
            ..KubeletConfiguration::default()
        };
        let obj = kubelet_config_object(&bootstrap, &flags);
        assert!(obj.get("tlsCertFile").is_none());
    }
}
