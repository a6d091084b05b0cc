//! configz (`k8s.io/component-base/configz`): the registered `kubeletconfig` object.
//!
//! `--print-config` prints [`Configz::kubeletconfig`]; the `/configz` endpoint of the
//! secure server serves [`Configz::payload`].

/// The registered configuration.
#[derive(Debug, Clone)]
pub struct Configz {
    kubeletconfig: serde_json::Value,
}

impl Configz {
    /// Registers the versioned configuration under the name `kubeletconfig`.
    pub fn new(kubeletconfig: serde_json::Value) -> Self {
        Configz { kubeletconfig }
    }

    /// The registered object.
    pub fn kubeletconfig(&self) -> &serde_json::Value {
        &self.kubeletconfig
    }

    /// What `/configz` answers: `{"kubeletconfig": {...}}`.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({ "kubeletconfig": self.kubeletconfig })
    }
}
