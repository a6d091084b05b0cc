//! How the runtime manager resolves `spec.runtimeClassName` to a CRI runtime handler
//! (upstream `kuberuntime_manager.go`'s `runtimeClassManager *runtimeclass.Manager`, used by
//! `kuberuntime_sandbox.go` `createPodSandbox`).
//!
//! The API-backed implementation (the RuntimeClass informer and its lister,
//! `pkg/kubelet/runtimeclass/runtimeclass_manager.go`) lives in `kubelet-objects`; this crate
//! owns the trait. Without an API client upstream has no manager (`kubeDeps.KubeClient ==
//! nil`) and `createPodSandbox` passes the empty handler whatever the pod names:
//! [`NoRuntimeClassManager`] does the same.

use thiserror::Error;

/// A failed RuntimeClass lookup (upstream `LookupRuntimeHandler`'s errors).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RuntimeClassError {
    /// The lister has no such RuntimeClass (upstream `errors.NewNotFound(
    /// nodev1.Resource("runtimeclass"), name)`).
    #[error("runtimeclass.node.k8s.io {name:?} not found")]
    NotFound {
        /// The RuntimeClass name.
        name: String,
    },
    /// Any other lister error.
    #[error("failed to lookup RuntimeClass {name}: {message}")]
    Lookup {
        /// The RuntimeClass name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

/// Resolves a pod's `spec.runtimeClassName` (upstream `runtimeclass.Manager`).
pub trait RuntimeHandlerResolver: Send + Sync {
    /// `LookupRuntimeHandler`: the handler of the named RuntimeClass; `None` or `""` is the
    /// default RuntimeClass, which always resolves to the empty handler.
    ///
    /// # Errors
    /// [`RuntimeClassError::NotFound`] when no such RuntimeClass exists.
    fn lookup_runtime_handler(
        &self,
        runtime_class_name: Option<&str>,
    ) -> Result<String, RuntimeClassError>;
}

/// No RuntimeClass manager (standalone mode: upstream's `runtimeClassManager == nil`, so
/// every pod runs with the runtime's default handler).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRuntimeClassManager;

impl RuntimeHandlerResolver for NoRuntimeClassManager {
    fn lookup_runtime_handler(&self, _: Option<&str>) -> Result<String, RuntimeClassError> {
        Ok(String::new())
    }
}

/// The default RuntimeClass (`None` or `""`), which needs no lookup.
pub fn is_default_runtime_class(runtime_class_name: Option<&str>) -> bool {
    runtime_class_name.is_none_or(str::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_as_upstream_lister_error() {
        let e = RuntimeClassError::NotFound { name: "x".into() };
        assert_eq!(e.to_string(), r#"runtimeclass.node.k8s.io "x" not found"#);
    }

    #[test]
    fn no_manager_always_gives_the_default_handler() {
        assert_eq!(
            NoRuntimeClassManager.lookup_runtime_handler(Some("gvisor")),
            Ok(String::new())
        );
        assert!(is_default_runtime_class(Some("")));
        assert!(!is_default_runtime_class(Some("kata")));
    }
}
