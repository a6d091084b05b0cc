//! `mergeKubeletConfigurations` (`cmd/kubelet/app/server.go`): `*.conf` files under
//! `--config-dir`, in `filepath.WalkDir` order, applied as RFC 7386 JSON merge patches.

use std::path::Path;

use kubelet_features::FeatureGate;

use crate::decode::{from_json, gvk, yaml_to_json};
use crate::fs::{ConfigFs, absolute};
use crate::set_defaults;
use crate::types::{API_VERSION, KIND, KubeletConfiguration};

/// Merges the drop-ins onto `kc`; returns the skipped (non-`.conf`) files.
pub(crate) fn merge_kubelet_configurations(
    fs: &dyn ConfigFs,
    kc: &mut KubeletConfiguration,
    dir: &str,
    gate: &FeatureGate,
) -> Result<Vec<String>, String> {
    let mut skipped = Vec::new();
    let mut base =
        serde_json::to_value(&*kc).map_err(|e| format!("failed to marshal base config: {e}"))?;
    let files = fs
        .walk_files(Path::new(dir))
        .map_err(|e| format!("failed to walk through kubelet dropin directory {dir:?}: {e}"))?;
    for path in files {
        let shown = path.display().to_string();
        if path.extension().and_then(|e| e.to_str()) != Some("conf") {
            skipped.push(shown);
            continue;
        }
        let load_err = |e: String| {
            format!(
                "failed to walk through kubelet dropin directory {dir:?}: failed to load kubelet dropin file, path: {shown}, error: {e}"
            )
        };
        let file = absolute(fs, &shown).map_err(|e| load_err(e.to_string()))?;
        let data = fs.read_file(&file).map_err(|e| {
            load_err(format!(
                "failed to read drop-in kubelet config file {shown:?}, error: {e}"
            ))
        })?;
        if data.is_empty() {
            return Err(load_err(format!("kubelet config file {shown:?} was empty")));
        }
        let (patch, _) = yaml_to_json(&data).map_err(load_err)?;
        match gvk(&patch) {
            (Some(API_VERSION), Some(KIND)) => {}
            (None | Some(""), _) | (_, None | Some("")) => {
                return Err(format!(
                    "failed to walk through kubelet dropin directory {dir:?}: failed to load kubelet dropin file, path: {shown}, no apiVersion/kind"
                ));
            }
            (Some(v), Some(k)) => {
                let (group, version) = v.rsplit_once('/').unwrap_or(("", v));
                return Err(format!(
                    "failed to walk through kubelet dropin directory {dir:?}: failed to load kubelet dropin file, path: {shown}, unknown apiVersion/kind: {group}/{version}, Kind={k}"
                ));
            }
        }
        json_patch::merge(&mut base, &patch);
    }
    let (mut merged, _unknown) = from_json(base)
        .map_err(|e| format!("failed to unmarshal merged JSON into kubelet configuration: {e}"))?;
    set_defaults(&mut merged, gate).map_err(|e| {
        format!("failed to merge global and in-flight KubeletConfiguration while setting defaults, error: {e}")
    })?;
    *kc = merged;
    Ok(skipped)
}
