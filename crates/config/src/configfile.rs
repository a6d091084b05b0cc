//! `loadConfigFile` (`cmd/kubelet/app/server.go`) and the fs loader
//! (`pkg/kubelet/kubeletconfig/configfiles/configfiles.go`).

use std::path::Path;

use kubelet_features::FeatureGate;

use crate::decode::decode_kubelet_configuration;
use crate::fs::{ConfigFs, absolute, clean};
use crate::types::KubeletConfiguration;
use crate::{default_eviction_hard, set_defaults};

/// `KubeletConfigurationPathRefs` resolved against `root` (`resolveRelativePaths`).
pub(crate) fn resolve_relative_paths(kc: &mut KubeletConfiguration, root: &Path) {
    let resolve = |p: &mut String| {
        if !p.is_empty() && !p.starts_with('/') {
            *p = clean(&root.join(&*p)).to_string_lossy().into_owned();
        }
    };
    resolve(&mut kc.static_pod_path);
    resolve(&mut kc.authentication.x509.client_ca_file);
    resolve(&mut kc.tls_cert_file);
    resolve(&mut kc.tls_private_key_file);
    if let Some(r) = kc.resolver_config.as_mut() {
        resolve(r);
    }
    resolve(&mut kc.volume_plugin_dir);
    resolve(&mut kc.pod_logs_dir);
}

/// Loads, decodes (strict, then lenient), defaults and path-resolves the `--config` file,
/// then fills `evictionHard`. Returns the config and the warnings to log.
pub(crate) fn load_config_file(
    fs: &dyn ConfigFs,
    name: &str,
    gate: &FeatureGate,
) -> Result<(KubeletConfiguration, Vec<String>), String> {
    let wrap = |e: String| format!("failed to load Kubelet config file {name}, error {e}");
    let file = absolute(fs, name).map_err(|e| wrap(e.to_string()))?;
    let data = fs.read_file(&file).map_err(|e| {
        wrap(format!(
            "failed to read kubelet config file {:?}, error: {e}",
            file.display().to_string()
        ))
    })?;
    if data.is_empty() {
        return Err(wrap(format!(
            "kubelet config file {:?} was empty",
            file.display().to_string()
        )));
    }
    let decoded = decode_kubelet_configuration(&data).map_err(wrap)?;
    let mut warnings = Vec::new();
    if !decoded.strict_errors.is_empty() {
        warnings.push(format!(
            "Using lenient decoding as strict decoding failed: strict decoding error: {}",
            decoded.strict_errors.join(", ")
        ));
    }
    let mut kc = decoded.config;
    set_defaults(&mut kc, gate).map_err(|e| {
        wrap(format!("failed to merge global and in-flight KubeletConfiguration while setting defaults, error: {e}"))
    })?;
    if let Some(dir) = file.parent() {
        resolve_relative_paths(&mut kc, dir);
    }
    match kc.eviction_hard.as_mut() {
        None => kc.eviction_hard = Some(default_eviction_hard()),
        Some(hard) if kc.merge_default_eviction_settings == Some(true) => {
            for (k, v) in default_eviction_hard() {
                hard.entry(k).or_insert(v);
            }
        }
        Some(_) => {}
    }
    Ok((kc, warnings))
}
