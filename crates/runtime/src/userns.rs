//! User namespaces for pods (upstream `pkg/kubelet/userns/userns_manager.go`
//! `GetOrCreateUserNamespaceMappings`, `kubelet_getters.go` `HandlerSupportsUserNamespaces`),
//! with the `UserNamespacesSupport` gate at its 1.35 default (on).
//!
//! A pod without `hostUsers`, or with `hostUsers: true`, runs in the node's user namespace
//! (CRI `UserNamespace{mode: NODE}`). `hostUsers: false` needs the runtime handler to
//! report `user_namespaces` in the CRI `Status` response's `runtime_handlers`; a runtime
//! that reports no handlers (containerd before 2.0) or a handler without the feature gets
//! upstream's error, so the sandbox is never created and the pod stays Pending with a
//! `FailedCreatePodSandBox` warning, as upstream.
//!
//! Not done: the per-pod ID range allocation and its persistence (upstream's
//! `UsernsManager` allocator and `userns` file in the pod directory). When the runtime
//! *does* support user namespaces the pod fails with [`UsernsError::NoAllocator`], which
//! says so, instead of running in the node's user namespace.

use k8s_openapi::api::core::v1::Pod;
use kubelet_cri::v1::{NamespaceMode, RuntimeHandler, UserNamespace};
use thiserror::Error;

/// Why a pod cannot get its user namespace.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UsernsError {
    /// Upstream's refusal when the handler lacks the feature (with the lookup error, when
    /// the runtime does not know the handler at all).
    #[error("{}{}", unsupported_message(handler), cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default())]
    Unsupported {
        /// The runtime handler (empty: the runtime's default).
        handler: String,
        /// `the handler "x" is not known`.
        cause: Option<String>,
    },
    /// The runtime could run it, but kubelet-rs has no ID range allocator yet.
    #[error(
        "can't set `spec.hostUsers: false`: kubelet-rs does not allocate user namespace ID \
         mappings (upstream pkg/kubelet/userns allocates 65536 IDs per pod)"
    )]
    NoAllocator,
}

fn unsupported_message(handler: &str) -> String {
    if handler.is_empty() {
        "can't set `spec.hostUsers: false`, runtime does not support user namespaces".into()
    } else {
        format!(
            "can't set `spec.hostUsers: false`, RuntimeClass handler {handler:?} does not support user namespaces"
        )
    }
}

/// `HandlerSupportsUserNamespaces` over the handlers of the runtime's `Status` response.
///
/// # Errors
/// `the handler "x" is not known` when the runtime lists handlers but not this one.
pub fn handler_supports_user_namespaces(
    handlers: &[RuntimeHandler],
    handler: &str,
) -> Result<bool, String> {
    if handlers.is_empty() {
        // "The slice is empty if the runtime is old and doesn't support this message."
        return Ok(false);
    }
    handlers
        .iter()
        .find(|h| h.name == handler)
        .map(|h| h.features.is_some_and(|f| f.user_namespaces))
        .ok_or_else(|| format!("the handler {handler:?} is not known"))
}

/// The pod asks for its own user namespace (`hostUsers: false`).
pub fn wants_pod_user_namespace(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.host_users) == Some(false)
}

/// The node's user namespace (pods without `hostUsers: false`).
pub fn node_user_namespace() -> UserNamespace {
    UserNamespace {
        mode: NamespaceMode::Node as i32,
        ..UserNamespace::default()
    }
}

/// `GetOrCreateUserNamespaceMappings` for `pod` under `runtime_handler`, given the
/// runtime's handlers (only read for `hostUsers: false`).
///
/// # Errors
/// See [`UsernsError`].
pub fn user_namespace_for_pod(
    pod: &Pod,
    runtime_handler: &str,
    handlers: &[RuntimeHandler],
) -> Result<UserNamespace, UsernsError> {
    if !wants_pod_user_namespace(pod) {
        return Ok(node_user_namespace());
    }
    match handler_supports_user_namespaces(handlers, runtime_handler) {
        Ok(true) => Err(UsernsError::NoAllocator),
        Ok(false) => Err(UsernsError::Unsupported {
            handler: runtime_handler.into(),
            cause: None,
        }),
        Err(cause) => Err(UsernsError::Unsupported {
            handler: runtime_handler.into(),
            cause: Some(cause),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kubelet_cri::v1::RuntimeHandlerFeatures;
    use serde_json::json;

    fn pod(host_users: Option<bool>) -> Pod {
        serde_json::from_value(json!({"spec": {"hostUsers": host_users, "containers": []}}))
            .unwrap()
    }

    fn handler(name: &str, userns: bool) -> RuntimeHandler {
        RuntimeHandler {
            name: name.into(),
            features: Some(RuntimeHandlerFeatures {
                recursive_read_only_mounts: false,
                user_namespaces: userns,
            }),
        }
    }

    #[test]
    fn host_users_unset_or_true_is_the_node_namespace() {
        for p in [pod(None), pod(Some(true))] {
            assert_eq!(
                user_namespace_for_pod(&p, "", &[]),
                Ok(node_user_namespace())
            );
        }
    }

    #[test]
    fn runtime_without_handler_features_refuses_with_upstream_message() {
        let e = user_namespace_for_pod(&pod(Some(false)), "", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
        );
        let e =
            user_namespace_for_pod(&pod(Some(false)), "kata", &[handler("", true)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"can't set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces: the handler "kata" is not known"#
        );
        let e = user_namespace_for_pod(&pod(Some(false)), "runc", &[handler("runc", false)])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"can't set `spec.hostUsers: false`, RuntimeClass handler "runc" does not support user namespaces"#
        );
    }

    #[test]
    fn supporting_runtime_is_refused_for_want_of_an_allocator() {
        assert_eq!(
            user_namespace_for_pod(&pod(Some(false)), "", &[handler("", true)]),
            Err(UsernsError::NoAllocator)
        );
    }
}
